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

"""``gpu host list``: one snapshot of the cloud, shaped into host rows.
"""

from __future__ import annotations

import collections.abc
import typing

from gpuclient.i18n import _
from gpuclient.ops import snapshot
from gpuclient.rules import baremetal
from gpuclient.rules import host_names
from gpuclient.rules import hosts
from gpuclient.rules import placement_names as names
from gpuclient.rules import pools as pools_mod

if typing.TYPE_CHECKING:
    from gpuclient.cloud.client import GpuClient
    from gpuclient.rules import model


def collect(
    client: GpuClient, pool: str | None = None,
    resource_classes: collections.abc.Iterable[str] = (),
    unmapped: bool = False, long: bool = False,
) -> tuple[list[dict[str, typing.Any]], list[str]]:
    """Read what ``gpu host list`` shows: (rows, notes for the operator).

    One snapshot of the cloud (``gpuclient.ops.snapshot.read``): a fixed
    number of requests whatever the number of hosts.
    """
    extra = [names.normalize_resource_class(rc) for rc in resource_classes]
    members = None
    # a lower --os-compute-api-version: refused before the first request,
    # the pool before Placement is read
    aggregates, pools, named = snapshot.named_pools(
        client, [pool] if pool else (), with_flavors=False)
    if pool:
        pool = named[0]
        members = set(pools[pool]['hosts'])
        unmapped = False
    cloud = snapshot.read(client, extra_classes=extra, wanted_hosts=members,
                          mapped_only=not unmapped, with_traits=True,
                          aggregates=aggregates)
    return rows_of(client, cloud, pool=pool, extra=extra, unmapped=unmapped,
                   long=long)


def rows_of(
    client: GpuClient, cloud: model.Cloud, pool: str | None = None,
    extra: collections.abc.Iterable[str] = (), unmapped: bool = False,
    long: bool = False,
) -> tuple[list[dict[str, typing.Any]], list[str]]:
    """(rows, notes) of ``gpu host list`` from a snapshot (``cloud``).

    Only with LONG, and only when some host has Ironic nodes, is the
    client asked anything more: Ironic's own state of the nodes.
    """
    hypervisors = cloud.hypervisors
    if pool:
        members = set(cloud.pools[pool]['hosts'])
        hypervisors = [
            hv
            # read with the hypervisors
            for hv in hypervisors  # type: ignore[union-attr]
            if host_names.nova_host(hv) in members
        ]
    # read with Placement (snapshot.read), as the rows below are
    assert cloud.known_classes is not None  # noqa: S101 - read
    assert cloud.gpu_classes is not None  # noqa: S101 - read
    notes = [message for _agg, _pool, message in cloud.problems]
    notes += [
        _('Placement has no resource class %s: no host offers it.') % rc
        for rc in extra
        if rc not in cloud.known_classes
    ]
    rows, unmapped_trees = hosts.host_rows(
        # read with Placement
        cloud.placement,  # type: ignore[arg-type]
        hypervisors,
        cloud.gpu_classes,
        pools_mod.pools_by_host(cloud.pools),
        unmapped=unmapped,
    )
    assert cloud.placement is not None  # noqa: S101 - read with Placement
    notes += cloud.placement.notes()
    node_items = {uuid: item for row in rows
                  for uuid, item in row['nodes'].items()}
    ironic = None
    if long and node_items:
        # optional detail: Ironic's own state of each node
        ironic = snapshot.ironic_nodes(client)
        note = baremetal.hidden_note(node_items, ironic)
        if note:
            notes.append(note)
    for row in rows:
        row['node_states'] = [
            baremetal.state_text(uuid, item, (ironic or {}).get(uuid))
            for uuid, item in sorted(row['nodes'].items())]
    if unmapped_trees and not unmapped and not pool:
        notes.append(
            _(
                '%d GPU provider tree(s) have no Nova hypervisor and are '
                'not shown; use --unmapped to list them.'
            )
            % len(unmapped_trees)
        )
    return rows, notes
