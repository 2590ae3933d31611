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

"""The NUMA hosts and flavors the scheduler's NUMA tests judge: each host
as the compute API, host facts and node_exporter show it to gpuclient,
and as Nova's NUMA objects (``NUMATopology``, ``PciDeviceStats``) with
Nova's fit of a flavor on it, for the _nova tests. Standard library only
(the test cloud's interpreter imports it).
"""

import json

from gpuclient.rules import numa_metrics
from gpuclient.rules.scheduler import conf as nova_conf
from gpuclient.rules.scheduler import host_manager as hm
from gpuclient.rules.scheduler.filters import numa_topology_filter as ntf
from gpuclient.tests.unit import nova_harness

if nova_harness.HAVE_NOVA:
    with nova_harness.quiet():
        from nova import objects
        from nova.pci import request as pci_request
        from nova.pci import stats as pci_stats
        from nova.pci import whitelist
        from nova.virt import hardware as nova_hardware

GIB = 1024
VENDOR, PRODUCT = '10de', '2331'
ALIAS = 'a100'

# name -> (cells, memory MiB per cell, 2M pages per cell, GPUs per cell);
# 64 CPUs over the cells
HOSTS = {
    'two-cells': (2, 256 * GIB, 0, (2, 2)),
    'two-cells-huge': (2, 256 * GIB, 4096, (2, 2)),
    'one-cell': (1, 512 * GIB, 0, (4,)),
    'no-topology': (0, 0, 0, ()),
}


def flavor(vcpus=8, ram_gib=64, gpus=0, **specs):
    extra = {'hw:' + key: str(value) for key, value in specs.items()}
    if gpus:
        extra['pci_passthrough:alias'] = '%s:%d' % (ALIAS, gpus)
    return {'vcpus': vcpus, 'ram': ram_gib * GIB, 'extra_specs': extra}


FLAVORS = {
    'numa1': flavor(numa_nodes=1),
    'numa2': flavor(numa_nodes=2),
    'numa3': flavor(vcpus=6, ram_gib=60, numa_nodes=3),
    'cell-too-small': flavor(ram_gib=300, numa_nodes=1),
    'cell-fits': flavor(ram_gib=250, numa_nodes=1),
    'split-fits': flavor(ram_gib=400, numa_nodes=2),
    'cpus-too-many': flavor(vcpus=40, numa_nodes=1),
    'large': flavor(mem_page_size='large'),
    'small': flavor(mem_page_size='small'),
    'any': flavor(mem_page_size='any'),
    '2MB': flavor(mem_page_size='2MB'),
    '2MB-too-much': flavor(ram_gib=10, mem_page_size='2MB'),
    '1GB': flavor(mem_page_size='1GB'),
    'gpu1-required': flavor(gpus=1, numa_nodes=1,
                            pci_numa_affinity_policy='required'),
    'gpu3-required': flavor(gpus=3, numa_nodes=1,
                            pci_numa_affinity_policy='required'),
    'gpu3-preferred': flavor(gpus=3, numa_nodes=1,
                             pci_numa_affinity_policy='preferred'),
    'gpu3-legacy': flavor(gpus=3, numa_nodes=1,
                          pci_numa_affinity_policy='legacy'),
    'gpu3-two-cells': flavor(gpus=3, numa_nodes=2,
                             pci_numa_affinity_policy='required'),
    'gpu4-two-cells': flavor(gpus=4, numa_nodes=2,
                             pci_numa_affinity_policy='required'),
}


# nova.conf [pci] alias lines of the alias the flavors ask, by the
# numa_policy they give it (None: the key left out, legacy for Nova)
def alias_conf(policy):
    alias = {'name': ALIAS, 'vendor_id': VENDOR, 'product_id': PRODUCT}
    if policy:
        alias['numa_policy'] = policy
    return json.dumps(alias)


ALIAS_POLICIES = (None, 'legacy', 'required', 'preferred')


def aliases(policy):
    """gpuclient's aliases of a nova.conf with alias_conf(POLICY)."""
    return nova_conf.load_settings(
        '[pci]\nalias = %s\n' % alias_conf(policy))['aliases']


# Nova's fields.PCINUMAAffinityPolicy.ALL
POLICIES = ('required', 'legacy', 'preferred', 'socket')


def prometheus_view(name):
    """NAME's NUMA nodes as node_exporter's meminfo_numa shows them in
    Prometheus (MemTotal in bytes, huge pages of the default size; one
    node without a NUMA topology), through rules.numa_metrics."""
    cells, memory, huge, _gpus = HOSTS[name]
    nodes = max(cells, 1)
    memory = memory or 512 * GIB
    labels = [{'instance': '%s.example.org:9100' % name, 'job': 'node',
               'node': str(node)} for node in range(nodes)]
    answers = {
        'numa_memory': [(each, memory * numa_metrics.MIB)
                        for each in labels],
        'numa_huge_pages': [(each, huge) for each in labels]}
    return numa_metrics.host_nodes(answers, {name: [name]})[name]


def api_view(name, with_facts=True, prometheus=False):
    """(hypervisor as the compute API shows it, host facts; with
    PROMETHEUS node_exporter's NUMA nodes instead of the facts)."""
    cells, memory, huge, gpus = HOSTS[name]
    hypervisor = {
        'hypervisor_hostname': name, 'service': {'host': name},
        'hypervisor_type': 'QEMU', 'vcpus': 64, 'vcpus_used': 0,
        'memory_mb': memory * max(cells, 1), 'memory_mb_used': 512,
        'running_vms': 0,
        'cpu_info': {'arch': 'x86_64', 'topology': {
            'cells': max(cells, 1), 'sockets': 1, 'cores': 64,
            'threads': 1}}}
    facts = {}
    if with_facts:
        facts = {'numa_cells': cells, 'numa_gpus': list(gpus),
                 'numa_pages': {4: None, 2048: huge} if huge else {4: None}}
    if prometheus:
        facts = {hm.METRICS_FACT: prometheus_view(name)}
    return hypervisor, facts


def nova_host(name):
    """(Nova's NUMATopology or None, PciDeviceStats or None) of NAME."""
    cells, memory, huge, gpus = HOSTS[name]
    if not cells:
        return None, None
    per = 64 // cells
    numa_cells = []
    for cell in range(cells):
        cpus = set(range(cell * per, (cell + 1) * per))
        pages = [objects.NUMAPagesTopology(
            size_kb=4, total=(memory - huge * 2) * 256, used=0,
            reserved=0)]
        if huge:
            pages.append(objects.NUMAPagesTopology(
                size_kb=2048, total=huge, used=0, reserved=0))
        numa_cells.append(objects.NUMACell(
            id=cell, socket=0, cpuset=cpus, pcpuset=set(), memory=memory,
            cpu_usage=0, memory_usage=0, pinned_cpus=set(),
            siblings=[{c} for c in sorted(cpus)], mempages=pages,
            network_metadata=objects.NetworkMetadata(physnets=set(),
                                                     tunneled=False)))
    topology = objects.NUMATopology(cells=numa_cells)
    stats = pci_stats.PciDeviceStats(topology, dev_filter=whitelist.Whitelist(
        [json.dumps({'vendor_id': VENDOR, 'product_id': PRODUCT})]))
    index = 0
    for cell, count in enumerate(gpus):
        for _n in range(count):
            index += 1
            stats.add_device(objects.PciDevice(
                compute_node_id=1, address='0000:%02x:00.0' % index,
                vendor_id=VENDOR, product_id=PRODUCT, dev_type='type-PCI',
                status='available', numa_node=cell, parent_addr=None,
                request_id=None, dev_id='pci_0000_%02x_00_0' % index,
                label='label', instance_uuid=None, extra_info={}))
    return topology, stats


def nova_pci_requests(the_flavor, policy):
    """Nova's PCI request of the flavor's devices of ALIAS (None: it asks
    none), with POLICY."""
    count = ntf.pci_devices(the_flavor['extra_specs'])
    if not count:
        return None
    return [objects.InstancePCIRequest(
        count=count, spec=[{'vendor_id': VENDOR, 'product_id': PRODUCT}],
        alias_name=ALIAS, numa_policy=policy,
        request_id='00000000-0000-0000-0000-000000000001')]


def nova_alias_requests(test, the_flavor, alias_policy, policy):
    """The PCI requests Nova's own ``get_pci_requests_from_flavor`` makes
    of the flavor, with ALIAS_POLICY's ``[pci] alias`` line (alias_conf)
    in its CONF until TEST's end and POLICY the flavor's or image's."""
    nova_harness.pci_aliases(test, [alias_conf(alias_policy)])
    return pci_request.get_pci_requests_from_flavor(
        nova_harness.flavor(the_flavor), affinity_policy=policy).requests


def nova_guest(the_flavor, image_meta=None):
    """Nova's ``numa_get_constraints``: the guest's NUMA topology, or
    None."""
    if image_meta is None:
        image_meta = nova_harness.image({})
    with nova_harness.quiet():
        return nova_hardware.numa_get_constraints(
            nova_harness.flavor(the_flavor), image_meta)


def nova_fit(topology, instance, requests, stats):
    """Nova's ``numa_fit_instance_to_host``: the guest's cells on the
    host, or None."""
    limits = objects.NUMATopologyLimits(cpu_allocation_ratio=1.0,
                                        ram_allocation_ratio=1.0)
    return nova_hardware.numa_fit_instance_to_host(
        topology, instance, provider_mapping=None, limits=limits,
        pci_requests=requests, pci_stats=stats)


def nova_fits(host, the_flavor, requests, image_meta=None):
    """Whether Nova's NUMATopologyFilter passes HOST for the flavor with
    its PCI REQUESTS: a guest without a topology fits anywhere, a host
    without one holds none."""
    topology, stats = nova_host(host)
    instance = nova_guest(the_flavor, image_meta)
    if instance is None:
        return True
    if topology is None:
        return False
    return nova_fit(topology, instance, requests, stats) is not None
