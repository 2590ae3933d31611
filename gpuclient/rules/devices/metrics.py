# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.

"""Pure: what ``gpu device list -f openmetrics`` needs beyond a device
row to join the DCGM exporter's series in Prometheus.

No I/O here. ``join_fields`` adds to each row of ``listing.rows``:

* ``hypervisor_hostname``: the name of the device's root provider, the
  hypervisor hostname the compute host reports, which is what the DCGM
  exporter on that host puts in its ``hostname`` label (``Hostname``
  before dcgm-exporter 4.8: ``os.Hostname()``, or ``NODE_NAME`` when set).
* ``holders``: one (server name, server ID, project ID, flavor name)
  tuple per server holding the device, in the row's ``server_ids`` order:
  the server's UUID is the ``instance_id`` label Prometheus'
  ``openstack_sd_configs`` relabelling gives an exporter inside it.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping
import typing

# the FIELDS this module adds to a device row
FIELDS = ('hypervisor_hostname', 'holders')


def _flavor(server: Mapping[str, typing.Any] | None) -> str:
    """The flavor name a server was booted with (compute API >= 2.47
    embeds it as ``original_name``), or ''."""
    flavor = (server or {}).get('flavor') or {}
    return flavor.get('original_name') or flavor.get('name') or ''


def holders(
        row: Mapping[str, typing.Any],
        servers_by_id: Mapping[str, Mapping[str, typing.Any]]
) -> list[tuple[str, str, str, str]]:
    """(name, id, project, flavor) of each server holding ROW's device;
    a consumer Nova does not list (a migration record) keeps its ID."""
    found = []
    for name, consumer in zip(row['servers'], row['server_ids'],
                              strict=True):
        server = servers_by_id.get(consumer) or {}
        project = server.get('tenant_id') or server.get('project_id') or ''
        found.append((name, consumer, project, _flavor(server)))
    return found


def join_fields(
        rows: Iterable[Mapping[str, typing.Any]],
        providers: Mapping[str, Mapping[str, typing.Any]],
        servers: Iterable[Mapping[str, typing.Any]] | None
) -> list[dict[str, typing.Any]]:
    """ROWS with FIELDS. PROVIDERS: Placement's {uuid: provider dict with
    ``root`` and ``name``}; SERVERS: Nova's servers (dicts)."""
    by_id = {s['id']: s for s in servers or ()}
    found = []
    for row in rows:
        provider = providers.get(row['uuid']) or {}
        # a provider not read has no root, and finds none
        root = providers.get(
            provider.get('root')) or provider  # type: ignore[arg-type]
        found.append(dict(row, hypervisor_hostname=root.get('name') or '',
                          holders=holders(row, by_id)))
    return found
