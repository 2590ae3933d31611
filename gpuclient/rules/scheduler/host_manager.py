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

"""Pure: a compute node as Nova's scheduler sees it, from the compute API.

Nova's filters read a scheduler ``HostState`` (``nova/scheduler/
host_manager.py``) built from the ComputeNode record
(``HostState._update_from_compute_node``), not the API's dict.
``HOST_STATE_FIELDS`` maps each HostState attribute to the API field(s) it
is made from (``GET /os-hypervisors/detail`` at microversions 2.28-2.87:
hypervisor_type, hypervisor_version, hypervisor_hostname, host_ip,
cpu_info as a dict, vcpus, memory and disk figures, running_vms; 2.88
drops most of them); ``UNSEEN_ATTRIBUTES`` are HostState attributes the
API does not show (the node's ``stats``, NUMA topology, PCI pools,
metrics, ...). A filter judges one node: PASS, FAIL or UNKNOWN (what the
API does not show is never a pass or a failure); a host passes if one of
its nodes does.
"""

from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Mapping
import dataclasses
import typing

from gpuclient.i18n import _
from gpuclient.rules import host_names
from gpuclient.rules.host_facts import shapes as facts_shapes
from gpuclient.rules.scheduler import hardware

# HostState attribute -> how the compute API (2.53) shows it
HOST_STATE_FIELDS = {
    'host': 'service.host',
    'nodename': 'hypervisor_hostname',
    'hypervisor_hostname': 'hypervisor_hostname',
    'uuid': 'id',
    'hypervisor_type': 'hypervisor_type',
    'hypervisor_version': 'hypervisor_version',
    'host_ip': 'host_ip',
    'cpu_info': 'cpu_info',
    'free_ram_mb': 'free_ram_mb',
    'total_usable_ram_mb': 'memory_mb',
    'total_usable_disk_gb': 'local_gb',
    'disk_mb_used': 'local_gb_used * 1024',
    'free_disk_mb': 'min(free_disk_gb, disk_available_least) * 1024',
    'vcpus_total': 'vcpus',
    'vcpus_used': 'vcpus_used',
    'num_instances': 'running_vms',
}
# HostState attributes the compute API does not show
UNSEEN_ATTRIBUTES = (
    'stats', 'numa_topology', 'pci_stats', 'metrics', 'limits',
    'aggregates', 'instances', 'num_io_ops', 'failed_builds',
    'cpu_allocation_ratio', 'ram_allocation_ratio', 'disk_allocation_ratio',
    'cell_uuid', 'updated', 'supported_instances', 'allocation_candidates')


PASS, FAIL, UNKNOWN = 'pass', 'fail', 'unknown'


def host_state(hypervisor: Mapping[str, typing.Any]) -> dict[str, typing.Any]:
    """{HostState attribute: value} as far as the API shows (2.28-2.87).

    ``cpu_info`` stays a dict (HostState holds the JSON text).
    """
    hv = hypervisor
    state: dict[str, typing.Any] = {}
    for attribute, field in HOST_STATE_FIELDS.items():
        if field in hv:
            state[attribute] = hv[field]
    state['host'] = host_names.nova_host(hv)
    if 'local_gb_used' in hv and hv['local_gb_used'] is not None:
        state['disk_mb_used'] = hv['local_gb_used'] * 1024
    free_gb, least = hv.get('free_disk_gb'), hv.get('disk_available_least')
    if free_gb is not None:
        state['free_disk_mb'] = (min(free_gb, least) if least is not None
                                 else free_gb) * 1024
    return state


@dataclasses.dataclass(frozen=True)
class HostState:
    """A compute host as the post-Placement filters judge it (Nova's
    ``HostState``, one per host here: its NODES are the hypervisors the
    API shows for it). Built once per command from the cloud's reads
    (``filters.host_states``); a filter takes it with the request
    (``host_reasons(state, spec)``)."""

    host: str
    # its nova-compute service (os-services), None when not listed
    service: Mapping[str, typing.Any] | None = None
    # its hypervisors (compute API 2.53 details), None when none listed
    nodes: list[Mapping[str, typing.Any]] | None = None
    # {key: set of values} of its aggregates' metadata (Nova's
    # aggregate_metadata_get_by_host)
    metadata: dict[str, set[str]] = dataclasses.field(default_factory=dict)
    # its host facts (--host-fact, the NUMA nodes Prometheus shows)
    facts: Mapping[str, typing.Any] | None = None
    # why Blazar holds it ([] or None: not held)
    held: list[str] | None = None
    # the pools holding it that are limited to projects, sorted names
    limited_pools: tuple[str, ...] = ()


def nodes_by_host(hypervisors: Iterable[Mapping[str, typing.Any]] | None
                  ) -> dict[str, list[Mapping[str, typing.Any]]]:
    """{Nova host: [hypervisor dicts]} (compute API >= 2.53)."""
    found: dict[str, list[Mapping[str, typing.Any]]] = {}
    for hv in hypervisors or ():
        host = host_names.nova_host(hv)
        if host:
            found.setdefault(host, []).append(hv)
    return found


def judge_host(
        nodes: Iterable[Mapping[str, typing.Any]],
        judge: Callable[[Mapping[str, typing.Any]],
                        tuple[str, dict[str, typing.Any]]]
) -> tuple[str, dict[str, typing.Any]]:
    """A host passes if one of its nodes does (HostState is per node)."""
    results = [judge(node) for node in nodes]
    for status in (PASS, UNKNOWN):
        for found, detail in results:
            if found == status:
                return found, detail
    if results:
        return results[0]
    return UNKNOWN, {'why': _('no hypervisor record')}


# --host-fact keys that describe a host's NUMA topology (HostState's
# numa_topology and the NUMA nodes of its PCI pools, which the compute API
# does not show)
NUMA_FACT_KEYS = ('numa_cells', 'numa_pages', 'numa_gpus')
# the host's NUMA nodes as node_exporter shows them in the cloud's
# Prometheus (rules.numa_metrics.host_nodes), put with the facts by the ops
# layer (no --host-fact key)
METRICS_FACT = 'numa_meminfo'
PROMETHEUS = 'prometheus'
SMALL_PAGE_KB = 4
# the facts the host's own collector gave (rules.host_facts.scheduling),
# put under the operator's (maintenance.with_collected): this key names
# which of a host's facts came from gpuclient-host-facts, not --host-fact
COLLECTED_FACTS = 'collected'
COLLECTOR = facts_shapes.COLLECTOR


def parse_numa_fact(
        key: str, value: object) -> int | list[int] | dict[int, int | None]:
    """A NUMA fact's value: numa_cells=N (0: no NUMA topology),
    numa_pages=4k[,2M:<pages per cell>,1G:<pages per cell>] (every page
    size of each cell), numa_gpus=<devices on cell 0>,<on cell 1>,...
    (the flavor's PCI devices on each cell). ValueError when bad."""
    text = str(value).strip()
    if key == 'numa_cells':
        if not text.isdigit():
            raise ValueError(value)
        return int(text)
    if key == 'numa_gpus':
        counts = [part.strip() for part in text.split(',')]
        if not all(part.isdigit() for part in counts):
            raise ValueError(value)
        return [int(part) for part in counts]
    pages: dict[int, int | None] = {}
    for part in text.split(','):
        size, colon, count = part.strip().partition(':')
        size_kb = hardware.page_size(size)
        if not isinstance(size_kb, int) or (colon and not count.isdigit()):
            raise ValueError(value)
        pages[size_kb] = int(count) if colon else None
    if pages.get(SMALL_PAGE_KB) is not None:
        raise ValueError(value)  # 4k pages are the rest of the memory
    return pages


def _split(total: int | None, cells: int) -> list[int] | None:
    return [total // cells] * cells if total is not None else None


def _facts_source(source: str, facts: Mapping[str, typing.Any],
                  collected: bool) -> str:
    """SOURCE of a node's cells, with the facts that complete it: 'host
    facts' (--host-fact), 'host facts (gpuclient-host-facts)' (the
    host's collector), or both."""
    told = bool(facts.get('numa_pages')) or (
        'numa_gpus' in facts and not collected)
    if source == _('host facts'):
        told = True
    if told and collected:
        what = _('host facts (--host-fact, %s)') % COLLECTOR
    elif collected:
        what = _('host facts (%s)') % COLLECTOR
    elif told:
        what = _('host facts')
    else:
        return source
    if source in ('cpu_info', PROMETHEUS):
        return _('%(source)s and %(facts)s') % {'source': source,
                                                 'facts': what}
    return what


def numa_topology(hypervisor: Mapping[str, typing.Any] | None,
                  facts: Mapping[str, typing.Any] | None = None
                  ) -> dict[str, typing.Any]:
    """A node's NUMA topology as far as a client can know it.

    The sources, best first: the operator's host facts (numa_cells,
    numa_pages, numa_gpus), then the facts the host's collector gave
    (numa_gpus, named in COLLECTED_FACTS: the collector saw every GPU of
    the host, so a cell past its list holds none, and a GPU on a cell
    the topology lacks leaves it unknown); Nova's ironic driver, which
    reports none;
    node_exporter's NUMA nodes in the cloud's Prometheus (METRICS_FACT: 2
    or more nodes is a NUMA topology of those cells, with each one's
    memory, and 4k pages only when none has huge pages; 1 node is also
    what a host without NUMA topology shows); the driver's ``cpu_info``
    (``topology.cells``, as libvirt writes it: 2 or more cells is a NUMA
    topology of that many cells, 1 is also what libvirt says of a host it
    shows no topology for). CPUs, and memory where Prometheus does not
    give it, are the hypervisor's, split evenly over the cells.

    {'known': False, 'why'} or {'known': True, 'source', 'cells': None (no
    topology) or [{'id', 'cpus', 'memory_mb', 'pages': {KiB: pages per
    cell, None for the rest of the memory}, 'gpus'}], 'pages_known',
    'usage': None (no server on the node) or the node's used
    {'cpus', 'memory_mb'}, at most what any one cell uses}.
    """
    hv, facts = hypervisor or {}, facts or {}
    topology = (hv.get('cpu_info') or {}) if isinstance(
        hv.get('cpu_info'), dict) else {}
    topology = topology.get('topology') or {}
    count, source = facts.get('numa_cells'), _('host facts')
    if count is None and hv.get('hypervisor_type') == 'ironic':
        count, source = 0, _('hypervisor type ironic')
    nodes = facts.get(METRICS_FACT) or ()
    if count is None and len(nodes) >= 2:
        count, source = len(nodes), PROMETHEUS
    if count is None and (topology.get('cells') or 0) >= 2:
        count, source = topology['cells'], 'cpu_info'
    if count is None:
        if len(nodes) == 1:
            why = _('node_exporter shows 1 NUMA node in Prometheus, which a '
                    'host without NUMA topology also shows')
        elif 'cells' in topology:
            why = _('cpu_info shows %d cell, which libvirt also says of a '
                    'host without NUMA topology') % topology['cells']
        elif 'cpu_info' in hv:
            why = _('cpu_info shows no topology.cells')
        else:
            why = _('the compute API shows no cpu_info')
        return {'known': False, 'why': why}
    if not count:
        return {'known': True, 'source': source, 'cells': None}
    cpus = _split(hv.get('vcpus'), count)
    memory = _split(hv.get('memory_mb'), count)
    pages = facts.get('numa_pages')
    if source == PROMETHEUS:
        memory = [node['memory_mb'] for node in nodes]
        if not pages and all(node['huge_pages'] == 0 for node in nodes):
            pages = {SMALL_PAGE_KB: None}
    if cpus is None or memory is None:
        return {'known': False,
                'why': _('the compute API shows no vcpus or memory_mb')}
    gpus = list(facts.get('numa_gpus') or ())
    collected = 'numa_gpus' in (facts.get(COLLECTED_FACTS) or ())
    if collected and len(gpus) > count:
        return {'known': False, 'why': _(
            '%(collector)s shows a GPU on NUMA node %(node)d, and the '
            'topology (%(source)s) has %(count)d cells') % {
                'collector': COLLECTOR, 'node': len(gpus) - 1,
                'source': source, 'count': count}}
    source = _facts_source(source, facts, collected)
    cells: list[dict[str, typing.Any]] = [
        {'id': n, 'cpus': cpus[n], 'memory_mb': memory[n],
         'pages': dict(pages or {SMALL_PAGE_KB: None}),
         'gpus': gpus[n] if n < len(gpus) else (0 if collected else None)}
        for n in range(count)]
    if pages:
        for cell in cells:
            cell['pages'].setdefault(SMALL_PAGE_KB, None)
    usage = None
    if hv.get('running_vms'):
        usage = {'cpus': hv.get('vcpus_used') or 0,
                 'memory_mb': hv.get('memory_mb_used') or 0}
    return {'known': True, 'source': source, 'cells': cells,
            'pages_known': bool(pages), 'usage': usage}
