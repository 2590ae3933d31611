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

"""Pure: NUMATopologyFilter (``nova/scheduler/filters/
numa_topology_filter.py``) and the fitting it asks of
``nova/virt/hardware.py`` (``numa_fit_instance_to_host``,
``_numa_fit_instance_cell``, the PCI NUMA affinity policies).

A flavor or image that asks a guest NUMA topology
(``hardware.numa_constraints``) passes a node when some permutation of
the node's cells holds the guest's cells: a cell's CPUs, its memory in
the page size asked (the smallest pages without one) and, for PCI
devices under the required or legacy policy, the devices on the cells
chosen. A node without a NUMA topology fails. What the host's topology
is comes from ``host_manager.numa_topology`` (host facts, the cell of
each GPU as gpuclient-host-facts collected it, node_exporter's NUMA nodes
in Prometheus, ``cpu_info``); where it is not known, or the
answer depends on what no source shows (how the servers already there
use each cell, huge pages, which cell holds which device), the node is
UNKNOWN, never a pass or a failure.

Assumed, as Nova's defaults: every CPU of a cell is in its shared set
(no ``[compute] cpu_dedicated_set``), allocation ratios of at least 1.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
import itertools
import typing

from osc_lib import exceptions

from gpuclient.i18n import _
from gpuclient.rules.scheduler import hardware
from gpuclient.rules.scheduler import host_manager
from gpuclient.rules.scheduler import pci as pci_mod

if typing.TYPE_CHECKING:
    from gpuclient.rules.scheduler import request_spec

NAME = 'NUMATopologyFilter'
PASS, FAIL = host_manager.PASS, host_manager.FAIL
UNKNOWN = host_manager.UNKNOWN
_ORDER = (FAIL, UNKNOWN, PASS)
GIB_MB = 1024


def _bounded(need: int, capacity: int, used: int | None) -> str:
    """NEED into CAPACITY when USED (None: nothing used, else at most
    that much) is already taken."""
    if need > capacity:
        return FAIL
    if not used or need + used <= capacity:
        return PASS
    return UNKNOWN


def _worst(statuses: Sequence[str]) -> str:
    return min(statuses, key=_ORDER.index) if statuses else PASS


def _small_kb(cell: Mapping[str, typing.Any]) -> int:
    """KiB of the cell's smallest (4k) pages: what huge pages leave."""
    huge = sum(size * (count or 0) for size, count in cell['pages'].items()
               if size != host_manager.SMALL_PAGE_KB)
    return cell['memory_mb'] * 1024 - huge


def _page_kb(cell: Mapping[str, typing.Any], size: int) -> int:
    if size == host_manager.SMALL_PAGE_KB:
        return _small_kb(cell)
    return size * (cell['pages'].get(size) or 0)


def _pages(cell: Mapping[str, typing.Any],
           guest_cell: Mapping[str, typing.Any], pagesize: str | int,
           topology: Mapping[str, typing.Any],
           used_kb: int | None) -> tuple[str, dict[str, typing.Any] | None]:
    """_numa_cell_supports_pagesize_request: the guest's memory in pages
    of the size asked, free ones."""
    sizes = sorted(cell['pages'])
    if pagesize == hardware.PAGES_SMALL:
        sizes = sizes[:1]
    elif pagesize == hardware.PAGES_LARGE:
        sizes = sizes[1:]
    elif pagesize != hardware.PAGES_ANY:
        sizes = [pagesize] if pagesize in cell['pages'] else []
    need = guest_cell['memory_mb'] * 1024
    if not topology['pages_known']:
        # which sizes, and how many of each: only host facts say
        if need > cell['memory_mb'] * 1024:
            return FAIL, {'why': 'memory', 'need': guest_cell['memory_mb'],
                          'have': cell['memory_mb'], 'cell': cell['id']}
        return UNKNOWN, {'why': 'pages', 'pagesize': pagesize}
    found = [_bounded(need, _page_kb(cell, size), used_kb) for size in sizes]
    if PASS in found:
        return PASS, None
    if UNKNOWN in found:
        return UNKNOWN, {'why': 'usage'}
    return FAIL, {'why': 'pages', 'pagesize': pagesize,
                  'cell': cell['id']}


def _memory(cell: Mapping[str, typing.Any],
            guest_cell: Mapping[str, typing.Any],
            guest: Mapping[str, typing.Any],
            topology: Mapping[str, typing.Any]
            ) -> tuple[str, dict[str, typing.Any] | None]:
    used_mb = (topology['usage'] or {}).get('memory_mb')
    if guest['pagesize']:
        return _pages(cell, guest_cell, guest['pagesize'], topology,
                      used_mb and used_mb * 1024)
    # the smallest pages hold it (all of them, in use or not, for shared
    # CPUs), then the cell's memory with what is used
    need = guest_cell['memory_mb']
    if need * 1024 > _small_kb(cell):
        return FAIL, {'why': 'memory', 'need': need,
                      'have': cell['memory_mb'], 'cell': cell['id']}
    if not topology['pages_known']:
        # huge pages leave less in small pages: only host facts say
        return UNKNOWN, {'why': 'pages', 'pagesize': hardware.PAGES_SMALL}
    if _bounded(need, cell['memory_mb'], used_mb) == UNKNOWN:
        return UNKNOWN, {'why': 'usage'}
    return PASS, None


def _cell(cell: Mapping[str, typing.Any],
          guest_cell: Mapping[str, typing.Any],
          guest: Mapping[str, typing.Any],
          topology: Mapping[str, typing.Any]
          ) -> tuple[str, dict[str, typing.Any] | None]:
    """_numa_fit_instance_cell: (status, detail)."""
    found = [_memory(cell, guest_cell, guest, topology)]
    status = _bounded(guest_cell['cpus'], cell['cpus'],
                      (topology['usage'] or {}).get('cpus'))
    if status == FAIL:
        found.append((FAIL, {'why': 'cpus', 'need': guest_cell['cpus'],
                             'have': cell['cpus'], 'cell': cell['id']}))
    elif guest['cpu_policy'] in ('dedicated', 'mixed'):
        # the cell's pCPUs are [compute] cpu_dedicated_set's: not shown
        found.append((UNKNOWN, {'why': 'pinned'}))
    elif status == UNKNOWN:
        found.append((UNKNOWN, {'why': 'usage'}))
    worst = _worst([s for s, _d in found])
    return next(item for item in found if item[0] == worst)


def _devices(cells: Sequence[Mapping[str, typing.Any]], devices: int,
             policy: str | None, topology: Mapping[str, typing.Any]
             ) -> tuple[str, dict[str, typing.Any] | None]:
    """The PCI devices on the chosen CELLS (required and legacy policy:
    Nova's devices carry their NUMA node)."""
    if not devices or policy == 'preferred':
        return PASS, None
    if policy == 'socket':
        return UNKNOWN, {'why': 'socket'}
    counts = [cell['gpus'] for cell in cells]
    if None in counts:
        return UNKNOWN, {'why': 'devices'}
    if sum(counts) < devices:
        return FAIL, {'why': 'devices', 'need': devices,
                      'have': sum(counts), 'policy': policy,
                      'cells': [cell['id'] for cell in cells]}
    # which of them the servers there use is not shown
    return (UNKNOWN, {'why': 'usage'}) if topology['usage'] else (PASS,
                                                                   None)


def _permutation(cells: Sequence[Mapping[str, typing.Any]],
                 guest: Mapping[str, typing.Any], devices: int,
                 topology: Mapping[str, typing.Any], policy: str | None
                 ) -> tuple[str, dict[str, typing.Any] | None]:
    found = [_cell(cell, g, guest, topology)
             for cell, g in zip(cells, guest['cells'], strict=True)]
    status = _worst([s for s, _d in found])
    if status == FAIL:
        return next(item for item in found if item[0] == FAIL)
    pci_status, detail = _devices(cells, devices, policy, topology)
    if pci_status != PASS:
        return pci_status, detail
    return status, next((d for s, d in found if s == UNKNOWN), None)


def fit(topology: Mapping[str, typing.Any], guest: Mapping[str, typing.Any],
        devices: int = 0) -> tuple[str, dict[str, typing.Any] | None]:
    """numa_fit_instance_to_host over a known TOPOLOGY: (status, detail).

    DEVICES: how many PCI devices the flavor asks (pci_passthrough:alias).
    The guest's policy None is the [pci] alias's (legacy unless it says):
    judged only when required and preferred agree.
    """
    cells = topology['cells']
    if cells is None:
        return FAIL, {'why': 'none'}
    if len(cells) < len(guest['cells']):
        return FAIL, {'why': 'cells', 'need': len(guest['cells']),
                      'have': len(cells)}
    policy = guest['pci_policy']
    policies = [policy] if policy or not devices else ['required',
                                                       'preferred']
    answers = []
    for each in policies:
        found = [_permutation(perm, guest, devices, topology, each)
                 for perm in itertools.permutations(cells,
                                                    len(guest['cells']))]
        status = max((s for s, _d in found), key=_ORDER.index)
        answers.append(next(item for item in found if item[0] == status))
    if len({status for status, _d in answers}) > 1:
        return UNKNOWN, {'why': 'alias_policy'}
    return answers[0]


def constraints(
        flavor: Mapping[str, typing.Any] | None,
        image: Mapping[str, typing.Any] | None = None,
        aliases: Mapping[str, Mapping[str, typing.Any]] | None = None
) -> dict[str, typing.Any] | None:
    """hardware.numa_constraints of FLAVOR (None without one); a request
    Nova refuses is {'refused': why}, which no host passes. Where the
    flavor and the image set no PCI NUMA affinity policy, the guest's
    ``pci_policy`` is its aliases' ``numa_policy`` as nova.conf defines
    them (ALIASES: ``settings['aliases']``; ``pci.alias_policy``), as
    Nova's own request is built; None when that is not known."""
    if not flavor:
        return None
    try:
        guest = hardware.numa_constraints(flavor, image)
        if guest and not guest['pci_policy']:
            guest['pci_policy'] = pci_mod.alias_policy(
                flavor.get('extra_specs'), aliases)
        return guest
    except exceptions.CommandError as exc:
        return {'refused': str(exc)}


def pci_devices(extra_specs: Mapping[str, str] | None) -> int:
    """How many PCI devices the flavor asks (every alias)."""
    return sum(count for _alias, count in pci_mod.parse_alias_requests(
        (extra_specs or {}).get(pci_mod.ALIAS_SPEC)))


def judge_numa(node: Mapping[str, typing.Any],
               guest: Mapping[str, typing.Any],
               facts: Mapping[str, typing.Any] | None = None,
               devices: int = 0) -> tuple[str, dict[str, typing.Any]]:
    """One node: (status, detail), detail with the source it judged by."""
    topology = host_manager.numa_topology(node, facts)
    if not topology['known']:
        return UNKNOWN, {'why': 'topology', 'unknown': topology['why']}
    status, detail = fit(topology, guest, devices)
    return status, dict(detail or {}, source=topology['source'])


def judge(state: host_manager.HostState, spec: request_spec.RequestSpec
          ) -> tuple[str, dict[str, typing.Any] | None]:
    """(status, detail) of the host (STATE) for SPEC's guest NUMA
    topology; (PASS, None) when the flavor asks none."""
    guest = spec.guest
    if not guest:
        return PASS, None
    if 'refused' in guest:
        return FAIL, {'why': 'refused', 'text': guest['refused'],
                      'source': _('the flavor')}
    nodes = state.nodes
    if not nodes:
        return UNKNOWN, {'why': 'topology',
                         'unknown': _('no hypervisor record')}
    facts = state.facts
    return host_manager.judge_host(nodes, lambda node: judge_numa(
        node, guest, facts, spec.devices or 0))


def host_reasons(state: host_manager.HostState,
                 spec: request_spec.RequestSpec
                 ) -> list[dict[str, typing.Any]]:
    status, detail = judge(state, spec)
    if status == FAIL:
        # a failure always has its detail (None only with PASS)
        return [dict(detail, filter=NAME)]  # type: ignore[arg-type]
    return []


def text(host: str, reason: Mapping[str, typing.Any],
         project_id: str | None) -> str:
    why = reason['why']
    if why == 'none':
        what = _('reports no NUMA topology and the flavor asks one')
    elif why == 'cells':
        what = _('has %(have)d NUMA cells and the flavor asks '
                 '%(need)d') % reason
    elif why == 'memory':
        what = _('no NUMA cell holds a guest cell of %(need)d MiB (cell '
                 '%(cell)d has %(have)d MiB)') % reason
    elif why == 'cpus':
        what = _('no NUMA cell holds a guest cell of %(need)d CPUs (cell '
                 '%(cell)d has %(have)d)') % reason
    elif why == 'refused':
        what = reason['text']
    elif why == 'pages':
        what = _('no NUMA cell has pages of size %s for the guest\'s '
                 'memory') % reason['pagesize']
    else:
        what = _('the NUMA cells holding the guest have %(have)d of the '
                 '%(need)d PCI devices it asks (policy %(policy)s)') % reason
    return _('%(host)s: %(what)s (NUMATopologyFilter, from '
             '%(source)s).') % {'host': host, 'what': what,
                                'source': reason.get('source')}


def unknown_text(detail: Mapping[str, typing.Any]) -> str:
    """Why a host's NUMA fit is not judged, and what would judge it."""
    why = detail['why']
    if why == 'topology':
        return _('its NUMA topology is not known: %s; give --host-fact '
                 '<host>:numa_cells=<N> (0: none), or a Prometheus '
                 '(--prometheus) where node_exporter publishes its NUMA '
                 'nodes') % detail['unknown']
    return {
        'pages': _('its page sizes are not known: give --host-fact '
                   '<host>:numa_pages=4k[,2M:<pages per cell>], or a '
                   'Prometheus (--prometheus) where node_exporter '
                   'publishes its NUMA nodes'),
        'devices': _('which cell holds its PCI devices is not known: give '
                     '--host-fact <host>:numa_gpus=<on cell 0>,<on cell '
                     '1>, or run gpuclient-host-facts on the host (the '
                     'user guide\'s "Preparing and checking GPU hosts" '
                     'says when its facts give them)'),
        'usage': _('how its servers use each NUMA cell is not shown'),
        'pinned': _('its dedicated CPUs per cell ([compute] '
                    'cpu_dedicated_set) are not shown'),
        'socket': _('its sockets are not shown (policy socket)'),
        'alias_policy': _('the fit depends on the [pci] alias numa_policy: '
                          'give the nova.conf that defines the alias '
                          '(--nova-conf), or set '
                          'hw:pci_numa_affinity_policy on the flavor'),
    }.get(why, why)


def row_text(judged: tuple[str, str | None] | None) -> str | None:
    """A row's NUMA cell from ``filters.numa``'s (status, text) of its
    host: None when the flavor asks no NUMA topology."""
    if judged is None:
        return None
    status, what = judged
    if status == UNKNOWN:
        return _('not judged: %s') % what
    return _('judged (%s)') % what


def unjudged_note(
        judged: Mapping[str, tuple[str, str | None]] | None) -> str | None:
    """The summary of hosts ``filters.numa`` could not judge, and what
    would let gpuclient judge them; None when it judged every host."""
    whys: dict[str | None, list[str]] = {}
    for host, (status, what) in sorted((judged or {}).items()):
        if status == UNKNOWN:
            whys.setdefault(what, []).append(host)
    if not whys:
        return None
    return _('NUMA fit not judged (Nova\'s NUMATopologyFilter may refuse '
             'them): %s.') % '; '.join(
        _('%(hosts)s: %(why)s') % {'hosts': ', '.join(hosts), 'why': why}
        for why, hosts in sorted(whys.items()))


def _nova_order(cells: Sequence[dict[str, typing.Any]],
                guest: Mapping[str, typing.Any],
                devices: int) -> list[dict[str, typing.Any]]:
    """The order numa_fit_instance_to_host tries the host cells in (spread:
    most memory free first, then the least used CPUs; with PCI devices on
    the host, the cells with most free devices first when asked)."""
    if len(cells) <= len(guest['cells']):
        return list(cells)
    ordered = sorted(cells, reverse=True,
                     key=lambda c: c['memory_mb'] - c['used_mb'])
    ordered = sorted(ordered, key=lambda c: c['used_cpus'])
    if any(c['gpus'] for c in cells):
        # a cell whose devices are not given orders as one without
        ordered = sorted(ordered, reverse=bool(devices),
                         key=lambda c: (c['gpus'] or 0) - c['used_gpus'])
    return ordered


def _takes(cell: Mapping[str, typing.Any],
           guest_cell: Mapping[str, typing.Any],
           guest: Mapping[str, typing.Any],
           ratios: tuple[float, float]) -> int | None:
    """The page size (KiB) CELL, with its usage, gives GUEST_CELL now, or
    None when it cannot (_numa_fit_instance_cell with exact usage)."""
    cpu_ratio, ram_ratio = ratios
    need = guest_cell['memory_mb'] * 1024
    if guest['pagesize']:
        sizes = sorted(cell['pages'], reverse=True)
        if guest['pagesize'] == hardware.PAGES_SMALL:
            sizes = sizes[-1:]
        elif guest['pagesize'] == hardware.PAGES_LARGE:
            sizes = sizes[:-1]
        elif guest['pagesize'] != hardware.PAGES_ANY:
            sizes = [guest['pagesize']] if guest['pagesize'] in sizes else []
        size = next((s for s in sizes if need <= _page_kb(cell, s) - s
                     * cell['used_pages'].get(s, 0)), None)
    else:
        size = host_manager.SMALL_PAGE_KB
        if need > _small_kb(cell):
            size = None
    if (size is None or guest_cell['cpus'] > cell['cpus']
            or cell['used_cpus'] + guest_cell['cpus']
            > cell['cpus'] * cpu_ratio
            or cell['used_mb'] + guest_cell['memory_mb']
            > cell['memory_mb'] * ram_ratio):
        return None
    return size


def fit_count(topology: Mapping[str, typing.Any],
              guest: Mapping[str, typing.Any], devices: int = 0,
              ratios: tuple[float, float] = (1.0, 1.0),
              limit: int = 1000) -> int | None:
    """How many of GUEST Nova boots one after another on a node whose
    topology is known and which runs no server (numa_fit_instance_to_host,
    then numa_usage_from_instance_numa); None when not judged: the node's
    usage per cell, its pages or its devices per cell are not known, or
    the CPUs are pinned. RATIOS: (cpu, ram) allocation ratios."""
    status, _detail = fit(topology, guest, devices)
    if status == FAIL:
        return 0
    policy = guest['pci_policy']
    if status == UNKNOWN or topology['usage'] or (devices and not policy):
        return None
    strict = devices and policy in ('required', 'legacy')
    if strict and any(c['gpus'] is None for c in topology['cells']):
        # the next server's devices may be on a cell whose are not given
        return None
    cells = [dict(cell, used_cpus=0, used_mb=0, used_pages={}, used_gpus=0)
             for cell in topology['cells']]
    # devices anywhere (preferred) are counted where the cells say
    counted = devices if all(c['gpus'] is not None for c in cells) else 0
    count = 0
    while count < limit:
        for perm in itertools.permutations(
                _nova_order(cells, guest, devices), len(guest['cells'])):
            sizes = [_takes(c, g, guest, ratios)
                     for c, g in zip(perm, guest['cells'], strict=True)]
            where = perm if strict else cells
            if None in sizes or (counted and sum(
                    c['gpus'] - c['used_gpus'] for c in where) < counted):
                continue
            for cell, g, size in zip(perm, guest['cells'], sizes,
                                          strict=True):
                cell['used_cpus'] += g['cpus']
                cell['used_mb'] += g['memory_mb']
                cell['used_pages'][size] = cell['used_pages'].get(
                    size, 0) + g['memory_mb'] * 1024 // size
            left = counted
            for cell in (list(perm) + cells) if counted else ():
                taken = min(left, cell['gpus'] - cell['used_gpus'])
                cell['used_gpus'] += taken
                left -= taken
            break
        else:
            return count
        count += 1
    return count


def host_count(
        nodes: Iterable[Mapping[str, typing.Any]] | None,
        guest: Mapping[str, typing.Any],
        facts: Mapping[str, typing.Any] | None = None, devices: int = 0,
        ratios: Mapping[str | None, tuple[float, float]] | None = None
) -> tuple[int | None, str]:
    """(count or None, why or source) over a host's nodes, for
    ``gpu capacity list``: RATIOS {node id: (cpu, ram)}."""
    total, sources = 0, set()
    for node in nodes or ():
        topology = host_manager.numa_topology(node, facts)
        if not topology['known']:
            return None, unknown_text({'why': 'topology',
                                       'unknown': topology['why']})
        count = fit_count(topology, guest, devices,
                          (ratios or {}).get(node.get('id'), (1.0, 1.0)))
        if count is None:
            status, detail = fit(topology, guest, devices)
            if status == UNKNOWN:
                # UNKNOWN always has its detail (None only with PASS)
                return None, unknown_text(detail)  # type: ignore[arg-type]
            if devices and not guest['pci_policy']:
                return None, unknown_text({'why': 'alias_policy'})
            if devices and any(c['gpus'] is None
                               for c in topology['cells']):
                return None, unknown_text({'why': 'devices'})
            return None, unknown_text({'why': 'usage'})
        total += count
        sources.add(topology['source'])
    if not nodes:
        return None, _('no hypervisor record')
    return total, ', '.join(sorted(sources))
