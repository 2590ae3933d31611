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

"""Pure: which hosts offer GPUs, and how many are free.

No I/O here: the client layer feeds in what Placement and Nova answered
(provider lists, allocation-candidate provider summaries, inventories and
usages) and this module turns it into one row per host and GPU class.
"""

from collections.abc import Collection
from collections.abc import Iterable
from collections.abc import Mapping
import fnmatch
import typing

from gpuclient.rules import baremetal
from gpuclient.rules import host_names
from gpuclient.rules import one_time_use

if typing.TYPE_CHECKING:
    class _Placement(typing.Protocol):
        """A ``model.Placement``, named by what is asked of it (model
        imports this module)."""

        @property
        def providers(self) -> Mapping[str, Mapping[str, typing.Any]]: ...

        @property
        def summaries(self) -> Mapping[str, Mapping[str, typing.Any]]: ...

# GPU resource classes shown by default (CLI.md, "Hosts"): vGPUs, whole
# physical GPUs, NVIDIA and AMD PCI devices reported by Nova's PCI in
# Placement, and custom classes naming a GPU (Ironic node classes such as
# CUSTOM_BAREMETAL_GPU_H100, per-type mdev classes). Intel GPUs share the
# vendor id 8086 with NICs: name them with --resource-class or pool them.
DEFAULT_GPU_CLASS_PATTERNS = (
    'VGPU',
    'PGPU',
    'CUSTOM_PCI_10DE_*',
    'CUSTOM_PCI_1002_*',
    'CUSTOM_*GPU*',
)


def gpu_classes(existing: Iterable[str],
                pool_classes: Iterable[str | None] = (),
                extra: Iterable[str] = ()) -> set[str]:
    """The GPU classes to report.

    ``existing`` are the classes Placement knows; defaults match against
    them. Pool classes and ``extra`` (--resource-class) are always
    included.
    """
    found = set(pool_classes) | set(extra)
    for name in existing:
        for pattern in DEFAULT_GPU_CLASS_PATTERNS:
            if fnmatch.fnmatchcase(name, pattern):
                found.add(name)
    found.discard(None)
    return found  # type: ignore[return-value]  # None discarded above


def capacity(total: int, reserved: int, allocation_ratio: float) -> int:
    """Placement's capacity: ``(total - reserved) * allocation_ratio``."""
    return int((total - reserved) * allocation_ratio)


def summary_from_inventory(inventories: Mapping[str, Mapping[str, typing.Any]],
                           usages: Mapping[str, int | None]
                           ) -> dict[str, typing.Any]:
    """A provider summary (as in allocation candidates) from the slow path.

    ``inventories`` is the body of GET .../inventories ``inventories``
    member, ``usages`` the ``usages`` member of GET .../usages.
    """
    resources: dict[str, dict[str, int]] = {}
    for rc, inv in inventories.items():
        resources[rc] = {
            'capacity': capacity(
                inv.get('total', 0),
                inv.get('reserved', 0),
                inv.get('allocation_ratio', 1.0),
            ),
            'used': int(usages.get(rc, 0) or 0),
        }
        # what summaries lack and exact fit counts use
        for key in ('min_unit', 'max_unit', 'step_size'):
            if key in inv:
                resources[rc][key] = inv[key]
    return {'resources': resources, 'traits': None}


def device_figures(item: Mapping[str, typing.Any], node: bool = False,
                   traits: Collection[str] | None = None
                   ) -> tuple[int, int, int]:
    """(total, used, free) of one provider's class, from its summary.

    Total is Placement's capacity, except that it never falls below what is
    allocated: Nova's Ironic driver reserves a node's whole inventory while
    the node is in use, so capacity drops to 0 while the instance still
    holds its unit; that node counts as total 1, used 1, free 0.
    NODE (a bare-metal node, ``baremetal.is_node_item``): total is 1
    whatever the driver reserved (``baremetal.node_figures``).
    TRAITS (the provider's, None: not read): a one-time-use device Nova
    reserves likewise, and after its server went it is awaiting release
    (``one_time_use.awaiting_release``): total 1, used 0, free 0.
    """
    if node:
        return baremetal.node_figures(item)
    if one_time_use.awaiting_release(item, traits):
        return 1, 0, 0
    capacity, used = item['capacity'], item['used']
    return max(capacity, used), used, max(capacity - used, 0)


def host_rows(
    snapshot: '_Placement',
    hypervisors: Collection[Mapping[str, typing.Any]] | None,
    classes: Iterable[str],
    pools_by_host: Mapping[str, list[str]] | None = None,
    unmapped: bool = False,
) -> tuple[list[dict[str, typing.Any]], set[str]]:
    """One row per (host, GPU class).

    ``hypervisors`` are os-hypervisors entries at compute API >= 2.53 (the
    id is the root provider uuid; ``service.host`` is the Nova host). Trees
    that no hypervisor maps to are left out unless ``unmapped``, where the
    root provider's name stands in for the host.

    Returns (rows, unmapped_gpu_trees) where rows are dicts with host,
    pools, resource_class, devices, total, used, free, providers (names)
    and traits ({provider name: traits} where known); awaiting_release
    counts the one-time-use devices Nova reserved after their server went
    (in total, neither used nor free: ``devices``). Bare-metal node
    classes (``baremetal.is_node_item``) count one device per node: used
    the nodes in use, free the available ones, and ``unavailable`` the
    nodes the ironic driver reserved (total = used + free + unavailable);
    ``nodes`` is then {node provider uuid: its class entry}.
    """
    pools_by_host = pools_by_host or {}
    ironic_roots = baremetal.node_roots(hypervisors)
    root_host = host_names.root_hosts(hypervisors)
    classes = set(classes)
    rows: dict[tuple[str, str], dict[str, typing.Any]] = {}
    unmapped_trees = set()
    for uuid in sorted(snapshot.summaries):
        provider = snapshot.providers[uuid]
        root = provider['root']
        resources = snapshot.summaries[uuid].get('resources') or {}
        gpu = [rc for rc in resources if rc in classes]
        if not gpu:
            continue
        host = root_host.get(root)
        mapped = host is not None
        if not mapped:
            unmapped_trees.add(root)
            if not unmapped:
                continue
            host = snapshot.providers[root]['name']
        # HOST is set now (a mapped one, else the root's name), which
        # mypy does not follow
        for rc in gpu:
            item = resources[rc]
            row = rows.setdefault(
                (host, rc),  # type: ignore[arg-type]
                {
                    'host': host,
                    'mapped': mapped,
                    'pools': pools_by_host.get(
                        host, []),  # type: ignore[arg-type]
                    'resource_class': rc,
                    'devices': 0,
                    'total': 0,
                    'used': 0,
                    'free': 0,
                    'providers': [],
                    'traits': {},
                    'unavailable': 0,
                    'awaiting_release': 0,
                    'nodes': {},
                },
            )
            node = baremetal.is_node_item(rc, item, root in ironic_roots)
            traits = snapshot.summaries[uuid].get('traits')
            total, used, free = device_figures(item, node=node,
                                               traits=traits)
            if not node and one_time_use.awaiting_release(item, traits):
                row['awaiting_release'] += 1
            if node:
                row['nodes'][uuid] = item
                if baremetal.node_state(item) == baremetal.UNAVAILABLE:
                    row['unavailable'] += 1
            row['devices'] += 1
            row['total'] += total
            row['used'] += used
            row['free'] += free
            row['providers'].append(provider['name'])
            if traits is not None:
                row['traits'][provider['name']] = sorted(traits)
    ordered = [rows[key] for key in sorted(rows)]
    for row in ordered:
        row['providers'].sort()
    return ordered, unmapped_trees
