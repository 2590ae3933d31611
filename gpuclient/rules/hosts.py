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

from gpuclient.i18n import _
from gpuclient.rules import baremetal
from gpuclient.rules import host_names
from gpuclient.rules import one_time_use

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


class Snapshot:
    """The Placement part of the cloud as read (``model.Cloud``'s
    ``placement``): the providers of the GPU-relevant trees and the
    capacity and usage known for them, filled by
    ``ops.snapshot.placement_snapshot`` from allocation-candidate answers
    (``add_candidates``) and per-provider reads (``add_details``)."""

    providers: typing.Annotated[dict, '{uuid: model.Provider}']
    summaries: typing.Annotated[dict, '{uuid: model.Summary}']
    covered: typing.Annotated[set, 'roots whose whole tree some answer gave']
    queried: typing.Annotated[
        list, '[(resource class, number of candidates)]']
    slow_roots: typing.Annotated[set, 'roots read provider by provider']
    totals: typing.Annotated[
        dict, '{uuid: {class: inventory total}} where read (add_totals)']

    def __init__(self, providers: Iterable[Mapping[str, typing.Any]]):
        self.providers = {}
        self._by_root: dict[str, list[str]] | None = None
        for rp in providers:
            self._add_provider(
                rp['uuid'],
                rp.get('name'),
                rp.get('parent_provider_uuid'),
                rp.get('root_provider_uuid'),
            )
        self.summaries = {}
        self.covered = set()
        self.queried = []  # [(resource class, number of candidates)]
        self.slow_roots = set()
        self.totals = {}

    def _add_provider(self, uuid: str, name: str | None, parent: str | None,
                      root: str | None) -> None:
        self._by_root = None
        self.providers[uuid] = {
            'uuid': uuid,
            'name': name or uuid,
            'parent': parent,
            'root': root or uuid,
        }

    def roots(self) -> set[str]:
        return {rp['root'] for rp in self.providers.values()}

    def missing_roots(self, wanted: Iterable[str] | None = None) -> set[str]:
        """Roots (of those wanted) whose trees nothing has covered yet."""
        roots = self.roots()
        if wanted is not None:
            roots &= set(wanted)
        return roots - self.covered

    def providers_in_trees(self, roots: Iterable[str]) -> list[str]:
        if self._by_root is None:
            # indexed once: asked per host, a scan would be quadratic
            self._by_root = {}
            for uuid, rp in self.providers.items():
                self._by_root.setdefault(rp['root'], []).append(uuid)
        found: list[str] = []
        for root in set(roots):
            found.extend(self._by_root.get(root, ()))
        return sorted(found)

    def add_candidates(self, resource_class: str,
                       answer: Mapping[str, typing.Any] | None) -> None:
        """Take in a GET /allocation_candidates answer (>= 1.29)."""
        answer = answer or {}
        self.queried.append(
            (resource_class, len(answer.get('allocation_requests') or []))
        )
        for uuid, summary in (answer.get('provider_summaries') or {}).items():
            if uuid not in self.providers:
                # Created after we listed providers: keep what we know.
                self._add_provider(
                    uuid,
                    None,
                    summary.get('parent_provider_uuid'),
                    summary.get('root_provider_uuid'),
                )
            self.summaries[uuid] = {
                'resources': dict(summary.get('resources') or {}),
                'traits': summary.get('traits'),
            }
            self.covered.add(self.providers[uuid]['root'])

    def add_details(self, details: Mapping[str, dict[str, typing.Any]]
                    ) -> None:
        """Take in per-provider summaries read on the slow path."""
        for uuid, summary in details.items():
            self.summaries[uuid] = summary
            root = self.providers[uuid]['root']
            self.covered.add(root)
            self.slow_roots.add(root)

    def add_totals(
            self,
            inventories: Mapping[str, Mapping[str, Mapping[str, typing.Any]]
                                 | None]) -> None:
        """Take in inventories ({uuid: {class: inventory}}, as GET
        .../inventories answers them): the total of each class, which
        summaries lack (their capacity is Placement's, total less what is
        reserved, times the allocation ratio)."""
        for uuid, found in inventories.items():
            self.totals[uuid] = {rc: int(inv.get('total') or 0)
                                 for rc, inv in (found or {}).items()}

    def free(self, uuid: str, resource_class: str) -> int:
        res = self.summaries.get(uuid, {}).get('resources', {})
        item = res.get(resource_class)
        if not item:
            return 0
        return item['capacity'] - item['used']

    def truncation_suspects(self) -> list[tuple[str, int, int]]:
        """Queried classes whose answer left out a tree that could serve it.

        A tree read on the slow path that has a free unit of a class we
        asked allocation candidates for should have been in that answer:
        Placement's ``max_allocation_candidates`` cut it short.
        """
        suspects = []
        for rc, count in self.queried:
            trees = set()
            for root in self.slow_roots:
                for uuid in self.providers_in_trees([root]):
                    if self.free(uuid, rc) >= 1:
                        trees.add(root)
            if trees:
                suspects.append((rc, count, len(trees)))
        return suspects

    def notes(self) -> list[str]:
        """Warnings for the operator about how complete the data is."""
        notes = []
        for rc, count, trees in self.truncation_suspects():
            notes.append(
                _(
                    'Placement answered resources=%(rc)s:1 with %(count)d '
                    'allocation candidates but left out %(trees)d provider '
                    'tree(s) with a free %(rc)s: its '
                    '[placement]max_allocation_candidates setting probably '
                    'truncated the answer. Those trees were read provider '
                    'by provider, so the figures are complete.'
                )
                % {'rc': rc, 'count': count, 'trees': trees}
            )
        return notes


def host_rows(
    snapshot: Snapshot,
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
