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

"""NUMATopologyFilter on plain data and against Nova's own fitting.

The differential part gives each flavor to Nova's ``numa_get_constraints``
and ``numa_fit_instance_to_host`` (with PCI devices in Nova's
``PciDeviceStats``) on hosts built as Nova's NUMA objects, and the same
host as the compute API and host facts show it to gpuclient: a judged
answer must be Nova's. It skips where Nova cannot be imported; CI runs it
with the test cloud's interpreter (tools/run-functional). Standard library
unittest only.
"""

import json
import unittest
import warnings

from osc_lib import exceptions

from gpuclient.rules import numa_metrics
from gpuclient.rules.scheduler import conf as nova_conf
from gpuclient.rules.scheduler import filters
from gpuclient.rules.scheduler import hardware
from gpuclient.rules.scheduler import host_manager as hm
from gpuclient.rules.scheduler.filters import numa_topology_filter as ntf

try:
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        from nova import objects
        import nova.conf
        from nova.pci import request as pci_request
        from nova.pci import stats as pci_stats
        from nova.pci import whitelist
        from nova.virt import hardware as nova_hardware
    objects.register_all()
    HAVE_NOVA = True
except Exception:  # ImportError and anything nova's import may raise
    HAVE_NOVA = False

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


class TestConstraints(unittest.TestCase):

    def test_what_asks_a_topology(self):
        self.assertIsNone(hardware.numa_constraints(flavor()))
        self.assertIsNone(hardware.numa_constraints(
            flavor(pci_numa_affinity_policy='required')))
        found = hardware.numa_constraints(flavor(numa_nodes=2))
        self.assertEqual([{'cpus': 4, 'memory_mb': 32 * GIB}] * 2,
                         found['cells'])
        self.assertEqual(1, len(hardware.numa_constraints(
            flavor(mem_page_size='large'))['cells']))
        self.assertEqual(1, len(hardware.numa_constraints(
            flavor(cpu_policy='dedicated'))['cells']))

    def test_manual_cells_and_page_sizes(self):
        found = hardware.numa_constraints(flavor(**{
            'numa_nodes': 2, 'numa_cpus.0': '0-5', 'numa_mem.0': 1024,
            'numa_cpus.1': '6,7', 'numa_mem.1': 64 * GIB - 1024}))
        self.assertEqual([6, 2], [c['cpus'] for c in found['cells']])
        self.assertEqual(2048, hardware.page_size('2MB'))
        self.assertEqual(1048576, hardware.page_size('1GiB'))
        self.assertEqual('large', hardware.page_size('LARGE'))
        self.assertIsNone(hardware.page_size('huge'))

    def test_refused_requests(self):
        for bad in (flavor(vcpus=3, numa_nodes=2),
                    flavor(mem_page_size='huge')):
            self.assertRaises(exceptions.CommandError,
                              hardware.numa_constraints, bad)
        self.assertRaises(exceptions.CommandError, hardware.numa_constraints,
                          flavor(), {'hw_mem_page_size': 'large'})


class TestSources(unittest.TestCase):

    def test_cpu_info_cells(self):
        hypervisor, _facts = api_view('two-cells')
        topology = hm.numa_topology(hypervisor)
        self.assertEqual('cpu_info', topology['source'])
        self.assertEqual([32, 32], [c['cpus'] for c in topology['cells']])
        self.assertFalse(topology['pages_known'])

    def test_one_cell_or_none_is_not_known(self):
        hypervisor, _facts = api_view('one-cell')
        self.assertFalse(hm.numa_topology(hypervisor)['known'])
        hypervisor.pop('cpu_info')
        self.assertIn('no cpu_info',
                      hm.numa_topology(hypervisor)['why'])

    def test_facts_win_and_ironic_has_none(self):
        hypervisor, facts = api_view('no-topology')
        self.assertIsNone(hm.numa_topology(hypervisor, facts)['cells'])
        ironic = dict(hypervisor, hypervisor_type='ironic', cpu_info={})
        self.assertIsNone(hm.numa_topology(ironic)['cells'])

    def test_prometheus_between_facts_and_cpu_info(self):
        hypervisor, facts = api_view('two-cells', prometheus=True)
        topology = hm.numa_topology(hypervisor, facts)
        self.assertEqual('prometheus', topology['source'])
        self.assertEqual([(32, 256 * GIB, {4: None})] * 2,
                         [(c['cpus'], c['memory_mb'], c['pages'])
                          for c in topology['cells']])
        self.assertTrue(topology['pages_known'])
        # its own memory per cell, not the hypervisor's split
        facts[hm.METRICS_FACT][1]['memory_mb'] = 128 * GIB
        self.assertEqual([256 * GIB, 128 * GIB], [
            c['memory_mb'] for c in hm.numa_topology(
                hypervisor, facts)['cells']])
        # huge pages of a size node_exporter does not say: sizes unknown
        hypervisor, facts = api_view('two-cells-huge', prometheus=True)
        self.assertFalse(hm.numa_topology(hypervisor, facts)['pages_known'])
        told = dict(facts, numa_pages={4: None, 2048: 4096})
        topology = hm.numa_topology(hypervisor, told)
        self.assertEqual('prometheus and host facts', topology['source'])
        self.assertTrue(topology['pages_known'])
        # facts' numa_cells win; one node is what a host without NUMA
        # topology shows too
        self.assertIsNone(hm.numa_topology(hypervisor, dict(
            facts, numa_cells=0))['cells'])
        hypervisor, facts = api_view('no-topology', prometheus=True)
        self.assertIn('node_exporter shows 1 NUMA node',
                      hm.numa_topology(hypervisor, facts)['why'])

    def test_parse_facts(self):
        self.assertEqual({4: None, 2048: 512},
                         hm.parse_numa_fact('numa_pages', '4k,2M:512'))
        self.assertEqual([2, 2], hm.parse_numa_fact('numa_gpus', '2,2'))
        for key, value in (('numa_cells', 'two'), ('numa_gpus', '2,x'),
                           ('numa_pages', '4k:100'),
                           ('numa_pages', '3q')):
            self.assertRaises(ValueError, hm.parse_numa_fact, key, value)


class TestJudge(unittest.TestCase):

    def judge(self, host, flavor_name, with_facts=True, busy=False):
        hypervisor, facts = api_view(host, with_facts)
        if busy:
            hypervisor.update(running_vms=1, vcpus_used=4,
                              memory_mb_used=100 * GIB)
        the_flavor = FLAVORS[flavor_name]
        guest = hardware.numa_constraints(the_flavor)
        return ntf.judge_numa(hypervisor, guest, facts, ntf.pci_devices(
            the_flavor['extra_specs']))

    def test_without_facts(self):
        # cpu_info: cells, CPUs and memory, not the page sizes
        status, detail = self.judge('two-cells', 'numa1', False)
        self.assertEqual((hm.UNKNOWN, 'pages'), (status, detail['why']))
        self.assertIn('numa_pages', ntf.unknown_text(detail))
        self.assertEqual(hm.FAIL, self.judge('two-cells', 'cpus-too-many',
                                             False)[0])
        self.assertEqual(hm.FAIL, self.judge('two-cells', 'numa3',
                                             False)[0])
        self.assertEqual(hm.FAIL, self.judge('two-cells', 'cell-too-small',
                                             False)[0])
        self.assertEqual(hm.UNKNOWN, self.judge('two-cells', 'large',
                                                False)[0])
        self.assertEqual(hm.UNKNOWN, self.judge('one-cell', 'numa1',
                                                False)[0])
        status, detail = self.judge('two-cells', 'gpu1-required', False)
        self.assertEqual((hm.UNKNOWN, 'devices'), (status, detail['why']))
        self.assertIn('numa_gpus', ntf.unknown_text(detail))
        self.assertEqual(hm.PASS, self.judge('two-cells', 'gpu3-preferred',
                                             True)[0])
        self.assertEqual(hm.FAIL, self.judge('two-cells', 'gpu3-required',
                                             True)[0])

    def test_usage_not_shown_per_cell(self):
        self.assertEqual(hm.UNKNOWN, self.judge('two-cells', 'cell-fits',
                                                busy=True)[0])
        self.assertEqual(hm.FAIL, self.judge('two-cells', 'cell-too-small',
                                             busy=True)[0])
        self.assertEqual(hm.PASS, self.judge('two-cells', 'numa1',
                                             busy=True)[0])

    def test_alias_policy_unknown_when_it_matters(self):
        the_flavor = flavor(gpus=3, numa_nodes=1)
        hypervisor, facts = api_view('two-cells')
        guest = hardware.numa_constraints(the_flavor)
        status, detail = ntf.judge_numa(hypervisor, guest, facts, 3)
        self.assertEqual((hm.UNKNOWN, 'alias_policy'),
                         (status, detail['why']))
        status, _d = ntf.judge_numa(hypervisor, guest, facts, 1)
        self.assertEqual(hm.PASS, status)

    def test_the_alias_policy_of_the_nova_conf_given_decides(self):
        """Issue 51 defect 15: no hw:pci_numa_affinity_policy, and the
        nova.conf given defines the alias: its numa_policy is the
        devices' (legacy where it says none), as Nova builds the request;
        the flavor's (or image's) policy wins over it."""
        hypervisor, facts = api_view('two-cells')
        the_flavor = flavor(gpus=3, numa_nodes=1)
        expected = {None: hm.FAIL, 'legacy': hm.FAIL, 'required': hm.FAIL,
                    'preferred': hm.PASS}
        for policy, status in expected.items():
            aliases = nova_conf.load_settings(
                '[pci]\nalias = %s\n' % alias_conf(policy))['aliases']
            guest = ntf.constraints(the_flavor, aliases=aliases)
            self.assertEqual(policy or 'legacy', guest['pci_policy'])
            found, _detail = ntf.judge_numa(hypervisor, guest, facts, 3)
            self.assertEqual(status, found, policy)
        # the flavor's own policy wins over the alias's
        aliases = nova_conf.load_settings(
            '[pci]\nalias = %s\n' % alias_conf('preferred'))['aliases']
        guest = ntf.constraints(flavor(
            gpus=3, numa_nodes=1, pci_numa_affinity_policy='required'),
            aliases=aliases)
        self.assertEqual('required', guest['pci_policy'])

    def test_the_alias_policy_unknown_without_its_nova_conf_line(self):
        the_flavor = flavor(gpus=3, numa_nodes=1)
        # --alias-map or a pool: the alias's class, not its numa_policy
        mapped = nova_conf.load_settings(
            alias_maps=['%s=%s:%s' % (ALIAS, VENDOR, PRODUCT)])['aliases']
        for aliases in (None, {}, mapped):
            self.assertIsNone(ntf.constraints(
                the_flavor, aliases=aliases)['pci_policy'])
        # two aliases of different policies: each request has its own
        two = dict(flavor(numa_nodes=1), extra_specs={
            'hw:numa_nodes': '1', 'pci_passthrough:alias': 'a:1,b:1'})
        aliases = nova_conf.load_settings(
            '[pci]\nalias = {"name": "a", "vendor_id": "10de", '
            '"product_id": "1", "numa_policy": "required"}\nalias = '
            '{"name": "b", "vendor_id": "10de", "product_id": "2"}\n'
        )['aliases']
        self.assertIsNone(ntf.constraints(two, aliases=aliases)[
            'pci_policy'])
        aliases['b']['numa_policy'] = 'required'
        self.assertEqual('required', ntf.constraints(
            two, aliases=aliases)['pci_policy'])

    def test_count_without_device_cells(self):
        # preferred: the devices may be anywhere; Placement counts them
        hypervisor, facts = api_view('two-cells')
        facts.pop('numa_gpus')
        guest = hardware.numa_constraints(flavor(
            ram_gib=100, gpus=1, numa_nodes=1,
            pci_numa_affinity_policy='preferred'))
        topology = hm.numa_topology(hypervisor, facts)
        self.assertEqual(4, ntf.fit_count(topology, guest, 1))
        guest['pci_policy'] = 'required'
        self.assertIsNone(ntf.fit_count(topology, guest, 1))
        hypervisor['running_vms'] = 1
        guest['pci_policy'] = 'preferred'
        self.assertIsNone(ntf.fit_count(hm.numa_topology(hypervisor, facts),
                                        guest, 1))

    def test_a_request_nova_refuses_passes_no_host(self):
        hypervisors = [dict(api_view(name, False)[0],
                            hypervisor_hostname=name,
                            service={'host': name}) for name in HOSTS]
        bad = flavor(vcpus=3, numa_nodes=2)
        post = filters.post_filters(
            sorted(HOSTS), bad['extra_specs'], [], [], 'p',
            ['NUMATopologyFilter'], hypervisors=hypervisors, flavor=bad)
        self.assertEqual(sorted(HOSTS), sorted(post))
        self.assertIn('divide evenly', ntf.text(
            'h', post['one-cell'][0], 'p'))

    def test_texts(self):
        status, detail = self.judge('two-cells', 'cell-too-small')
        self.assertEqual(
            'h: no NUMA cell holds a guest cell of 307200 MiB (cell 0 has '
            '262144 MiB) (NUMATopologyFilter, from host facts).',
            ntf.text('h', detail, 'p'))
        self.assertIn('no NUMA topology', ntf.text(
            'h', self.judge('no-topology', 'numa1')[1], 'p'))

    def test_device_text_names_the_policy_asked(self):
        """Issue 52: 3 GPUs on one cell of 2: the reason names the
        policy the flavor asks (legacy fails as required does, on devices
        that all carry their NUMA node), not always "required"."""
        hypervisor, facts = api_view('two-cells')
        for policy in ('required', 'legacy'):
            guest = hardware.numa_constraints(flavor(
                gpus=3, numa_nodes=1, pci_numa_affinity_policy=policy))
            status, detail = ntf.judge_numa(hypervisor, guest, facts, 3)
            self.assertEqual(hm.FAIL, status, policy)
            self.assertEqual(
                'h: the NUMA cells holding the guest have 2 of the 3 PCI '
                'devices it asks (policy %s) (NUMATopologyFilter, from host '
                'facts).' % policy, ntf.text('h', detail, 'p'))

    def test_numa_and_post_filters(self):
        hypervisors = [dict(api_view(name, False)[0],
                            hypervisor_hostname=name,
                            service={'host': name}) for name in HOSTS]
        the_flavor = FLAVORS['cell-too-small']
        enabled = ['NUMATopologyFilter']
        ctx = filters.context(the_flavor['extra_specs'], 'p',
                              hypervisors=hypervisors, flavor=the_flavor)
        found = filters.numa(sorted(HOSTS), ctx, enabled)
        self.assertEqual(hm.FAIL, found['two-cells'][0])
        self.assertEqual(hm.UNKNOWN, found['one-cell'][0])
        post = filters.post_filters(
            sorted(HOSTS), the_flavor['extra_specs'], [], [], 'p', enabled,
            hypervisors=hypervisors, flavor=the_flavor)
        self.assertEqual(['two-cells', 'two-cells-huge'], sorted(post))
        self.assertEqual({}, filters.numa(sorted(HOSTS), filters.context(
            {}, 'p', hypervisors=hypervisors, flavor=flavor()), enabled))


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


def nova_fits(host, the_flavor):
    topology, stats = nova_host(host)
    nova_flavor = objects.Flavor(
        vcpus=the_flavor['vcpus'], memory_mb=the_flavor['ram'],
        extra_specs=the_flavor['extra_specs'])
    image = objects.ImageMeta.from_dict({'properties': {}})
    instance = nova_hardware.numa_get_constraints(nova_flavor, image)
    if instance is None:
        return True
    if topology is None:
        return False  # NUMATopologyFilter: no host topology
    requests = None
    count = ntf.pci_devices(the_flavor['extra_specs'])
    if count:
        policy = the_flavor['extra_specs'].get(
            'hw:pci_numa_affinity_policy', 'legacy')
        requests = [objects.InstancePCIRequest(
            count=count, spec=[{'vendor_id': VENDOR,
                                'product_id': PRODUCT}],
            alias_name=ALIAS, numa_policy=policy,
            request_id='00000000-0000-0000-0000-000000000001')]
    limits = objects.NUMATopologyLimits(cpu_allocation_ratio=1.0,
                                        ram_allocation_ratio=1.0)
    return nova_hardware.numa_fit_instance_to_host(
        topology, instance, provider_mapping=None, limits=limits,
        pci_requests=requests, pci_stats=stats) is not None


@unittest.skipUnless(HAVE_NOVA, 'nova is not importable here (run with the '
                     'test cloud\'s interpreter, see the module docstring)')
class TestAgainstNova(unittest.TestCase):
    """Every flavor on every host: a judged answer is Nova's; with host
    facts on an idle host, every answer is judged."""

    def test_matrix(self):
        judged = dict.fromkeys(('facts', 'prometheus', None), 0)
        for host in HOSTS:
            for name, the_flavor in FLAVORS.items():
                theirs = nova_fits(host, the_flavor)
                for source in ('facts', 'prometheus', None):
                    hypervisor, facts = api_view(
                        host, source == 'facts', source == 'prometheus')
                    status, detail = ntf.judge_numa(
                        hypervisor, hardware.numa_constraints(the_flavor),
                        facts, ntf.pci_devices(the_flavor['extra_specs']))
                    if source == 'facts' or (
                            source == 'prometheus' and host == 'two-cells'
                            and 'gpu' not in name):
                        self.assertNotEqual(hm.UNKNOWN, status,
                                            (host, name, source, detail))
                    if status != hm.UNKNOWN:
                        judged[source] += 1
                        self.assertEqual(theirs, status == hm.PASS,
                                         (host, name, source, detail))
        self.assertEqual(len(HOSTS) * len(FLAVORS), judged['facts'])
        self.assertGreater(judged['prometheus'], judged[None])


@unittest.skipUnless(HAVE_NOVA, 'nova is not importable here (run with the '
                     'test cloud\'s interpreter, see the module docstring)')
class TestAliasPolicyAgainstNova(unittest.TestCase):
    """A flavor without hw:pci_numa_affinity_policy: Nova's own request
    (``get_pci_requests_from_flavor`` over a [pci] alias in its CONF)
    and gpuclient's reading of the same nova.conf line give the devices
    the same policy, and every judged fit is Nova's (issue 51 defect
    15)."""

    def setUp(self):
        self.conf = nova.conf.CONF
        if not getattr(self.conf, '_args', None):
            self.conf([], project='nova')
        self.addCleanup(self.conf.clear_override, 'alias', 'pci')
        # Nova reads its aliases once per process (functools.cache)
        self.addCleanup(pci_request.get_alias_from_config.cache_clear)

    def nova_requests(self, the_flavor, policy):
        self.conf.set_override('alias', [alias_conf(policy)], 'pci')
        pci_request.get_alias_from_config.cache_clear()
        nova_flavor = objects.Flavor(
            vcpus=the_flavor['vcpus'], memory_mb=the_flavor['ram'],
            extra_specs=the_flavor['extra_specs'])
        return pci_request.get_pci_requests_from_flavor(
            nova_flavor, affinity_policy=the_flavor['extra_specs'].get(
                'hw:pci_numa_affinity_policy')).requests

    def nova_fits(self, host, the_flavor, requests):
        topology, stats = nova_host(host)
        instance = nova_hardware.numa_get_constraints(
            objects.Flavor(vcpus=the_flavor['vcpus'],
                           memory_mb=the_flavor['ram'],
                           extra_specs=the_flavor['extra_specs']),
            objects.ImageMeta.from_dict({'properties': {}}))
        if topology is None:
            return False
        limits = objects.NUMATopologyLimits(cpu_allocation_ratio=1.0,
                                            ram_allocation_ratio=1.0)
        return nova_hardware.numa_fit_instance_to_host(
            topology, instance, provider_mapping=None, limits=limits,
            pci_requests=requests, pci_stats=stats) is not None

    def test_matrix(self):
        cases = {name: the_flavor for name, the_flavor in FLAVORS.items()
                 if 'gpu' in name}
        cases.update({
            'gpu3-no-policy': flavor(gpus=3, numa_nodes=1),
            'gpu1-no-policy': flavor(gpus=1, numa_nodes=1),
            'gpu3-two-cells-no-policy': flavor(gpus=3, numa_nodes=2)})
        judged = 0
        for policy in ALIAS_POLICIES:
            aliases = nova_conf.load_settings(
                '[pci]\nalias = %s\n' % alias_conf(policy))['aliases']
            for name, the_flavor in cases.items():
                requests = self.nova_requests(the_flavor, policy)
                guest = ntf.constraints(the_flavor, aliases=aliases)
                self.assertEqual([requests[0].numa_policy],
                                 [guest['pci_policy']], (policy, name))
                for host in HOSTS:
                    hypervisor, facts = api_view(host)
                    status, detail = ntf.judge_numa(
                        hypervisor, guest, facts,
                        ntf.pci_devices(the_flavor['extra_specs']))
                    self.assertNotEqual(hm.UNKNOWN, status,
                                        (policy, name, host, detail))
                    judged += 1
                    self.assertEqual(
                        self.nova_fits(host, the_flavor, requests),
                        status == hm.PASS, (policy, name, host, detail))
        self.assertEqual(len(ALIAS_POLICIES) * len(cases) * len(HOSTS),
                         judged)


def nova_count(host, the_flavor, limit=50):
    """Boots Nova fits one after another (the usage of each applied)."""
    topology, stats = nova_host(host)
    nova_flavor = objects.Flavor(
        vcpus=the_flavor['vcpus'], memory_mb=the_flavor['ram'],
        extra_specs=the_flavor['extra_specs'])
    instance = nova_hardware.numa_get_constraints(
        nova_flavor, objects.ImageMeta.from_dict({'properties': {}}))
    if topology is None:
        return 0
    count = ntf.pci_devices(the_flavor['extra_specs'])
    requests = None
    if count:
        requests = [objects.InstancePCIRequest(
            count=count, spec=[{'vendor_id': VENDOR,
                                'product_id': PRODUCT}],
            alias_name=ALIAS, numa_policy=the_flavor['extra_specs'].get(
                'hw:pci_numa_affinity_policy', 'legacy'),
            request_id='00000000-0000-0000-0000-000000000001')]
    limits = objects.NUMATopologyLimits(cpu_allocation_ratio=1.0,
                                        ram_allocation_ratio=1.0)
    boots = 0
    while boots < limit:
        fitted = nova_hardware.numa_fit_instance_to_host(
            topology, instance, provider_mapping=None, limits=limits,
            pci_requests=requests, pci_stats=stats)
        if fitted is None:
            break
        topology = nova_hardware.numa_usage_from_instance_numa(
            topology, fitted)
        if requests:
            stats.apply_requests(requests, None, fitted.cells)
        boots += 1
    return boots


@unittest.skipUnless(HAVE_NOVA, 'nova is not importable here (run with the '
                     'test cloud\'s interpreter, see the module docstring)')
class TestCountAgainstNova(unittest.TestCase):
    """gpu capacity list's NUMA count: the boots Nova fits in a row."""

    def test_matrix(self):
        for host in HOSTS:
            for name, the_flavor in FLAVORS.items():
                hypervisor, facts = api_view(host)
                found = ntf.fit_count(
                    hm.numa_topology(hypervisor, facts),
                    hardware.numa_constraints(the_flavor),
                    ntf.pci_devices(the_flavor['extra_specs']), limit=50)
                self.assertEqual(nova_count(host, the_flavor), found,
                                 (host, name))

    def test_prometheus(self):
        """From node_exporter's NUMA nodes alone: judged, Nova's count
        (with devices on cells not shown, bounded by the host's devices,
        as gpu capacity list bounds it by Placement's count)."""
        counted = 0
        for name, the_flavor in FLAVORS.items():
            hypervisor, facts = api_view('two-cells', prometheus=True)
            devices = ntf.pci_devices(the_flavor['extra_specs'])
            found = ntf.fit_count(
                hm.numa_topology(hypervisor, facts),
                hardware.numa_constraints(the_flavor), devices, limit=50)
            if 'gpu' not in name:
                self.assertIsNotNone(found, name)
            if found is not None:
                counted += 1
                if devices:
                    found = min(found, sum(HOSTS['two-cells'][3]) // devices)
                self.assertEqual(nova_count('two-cells', the_flavor), found,
                                 name)
        self.assertGreater(counted, len(FLAVORS) // 2)
