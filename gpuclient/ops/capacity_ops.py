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

"""``gpu capacity list``: one snapshot, then the pure fit per flavor.

Requests: the snapshot with flavors (a fixed number whatever the number
of hosts and flavors) and, with a project named, its lookup.
"""

from __future__ import annotations

import collections.abc
import logging
import typing

from osc_lib import exceptions

from gpuclient.i18n import _
from gpuclient.ops import host_facts_ops
from gpuclient.ops import snapshot
from gpuclient.ops import utilisation_ops
from gpuclient.rules import capacity
from gpuclient.rules import maintenance
from gpuclient.rules import pools as pools_mod
from gpuclient.rules.host_facts import scheduling
from gpuclient.rules.scheduler.filters import numa_topology_filter as numa_mod

if typing.TYPE_CHECKING:
    from gpuclient.cloud.client import GpuClient

LOG = logging.getLogger(__name__)


def collect(
    client: GpuClient,
    settings: dict[str, typing.Any],
    project: str | None = None,
    project_domain: str | None = None,
    pool: str | None = None,
    flavors: collections.abc.Iterable[str] | None = None,
    per_host: bool = False,
    facts: dict[str | None, dict[str, typing.Any]] | None = None,
    prometheus: str | None = None,
) -> list[dict[str, typing.Any]]:
    """Rows of ``gpu capacity list`` (``capacity.rows``); warnings are
    logged. FACTS: ``--host-fact`` ({host or None: facts}); with a flavor
    that asks a NUMA topology, the NUMA nodes node_exporter shows in the
    cloud's Prometheus (PROMETHEUS, else the configured one) and, with
    one that asks PCI devices too, the cell of each GPU that
    gpuclient-host-facts collected (``host_facts_ops.add_collected``),
    under the operator's FACTS."""
    project_id = (snapshot.project_id(client, project, project_domain)
                  if project else snapshot.current_project_id(client))
    cloud = snapshot.read(client, with_flavors=True, mapped_only=True)
    snapshot.warn_problems(cloud.problems)
    # --host-fact HOST: resolved as --host is, refused when unknown
    facts, notes = cloud.resolve_fact_hosts(facts or {})
    for note in notes:
        LOG.warning(note)
    if pool:
        pool = pools_mod.pool_name(cloud.pools, pool)
    wanted = None
    if flavors:
        # read with the flavors
        wanted = capacity.resolve_flavors(cloud.flavors, flavors)  # type: ignore[arg-type]
    host_facts = maintenance.host_facts(facts, cloud.host_roots())
    numa = [flavor for flavor in cloud.flavors or ()
            if (wanted is None or flavor['id'] in wanted)
            and numa_mod.constraints(flavor)]
    if capacity.numa_enabled(settings) and numa:
        host_facts = utilisation_ops.add_numa_nodes(
            client, host_facts, cloud.hypervisors, prometheus)
        if any(_asks_devices(flavor) for flavor in numa):
            # which cell holds each GPU of the hosts' passthrough pools
            host_facts = host_facts_ops.add_collected(
                client, cloud, host_facts, scheduling.NUMA_KEYS, prometheus)
    left_out: list[str] = []
    rows = capacity.rows(cloud, settings, project_id,
                         wanted_flavors=wanted, pool=pool,
                         per_host=per_host, notes=left_out, facts=host_facts)
    assert cloud.placement is not None  # noqa: S101 - read with Placement
    for note in left_out + list(cloud.placement.notes()):
        LOG.warning(note)
    unjudged = sorted({row['flavor'] for row in rows
                       if row['fits'] is None and row.get('numa')})
    if unjudged:
        LOG.warning(_(
            'No number for %s where the NUMA fit is not judged: the NUMA '
            'column says why and which --host-fact would judge it.'),
            ', '.join(unjudged))
    return rows


def _asks_devices(flavor: dict[str, typing.Any]) -> bool:
    """Whether FLAVOR asks PCI devices (a malformed alias spec: no, its
    row says why)."""
    try:
        return bool(numa_mod.pci_devices(flavor.get('extra_specs')))
    except exceptions.CommandError:
        return False
