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

"""The facts gpuclient-host-facts collected, as the NUMA fit and the drain
take them, on plain data: rules.host_facts.scheduling (one host's facts to
numa_gpus, versions and mdev types; nothing where a value could be
wrong), rules.scheduler.pci.counted_ids (which GPUs a flavor's devices
are), maintenance.with_collected (the operator's facts over them) and the
NUMA topology's source."""

import importlib.util
import os

import fixtures

from gpuclient.hostfacts import collector
from gpuclient.rules import maintenance
from gpuclient.rules import pools
from gpuclient.rules.host_facts import scheduling
from gpuclient.rules.host_facts import shapes
from gpuclient.rules.scheduler import host_manager as hm
from gpuclient.rules.scheduler import pci
from gpuclient.tests.unit import base
from gpuclient.tests.unit.scheduler import numa_hosts

SCRIPT = os.path.join(base.ROOT, 'tools', 'cloud', 'host_trees.py')
_spec = importlib.util.spec_from_file_location('host_trees', SCRIPT)
host_trees = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(host_trees)

H100 = '10de:2331'
COLLECTED = 1700000000.0
STALE = 900


def gpu(address, node, driver='vfio-pci', device='2331',
        pci_class='030200', **more):
    return shapes.Function(address, vendor_id='10de', device_id=device,
                           pci_class=pci_class, driver=driver,
                           numa_node=node, **more)


def host(*functions, versions=None, **more):
    """A host's facts: FUNCTIONS, the VERSIONS {component: version}."""
    facts = shapes.HostFacts(
        'gpu-1', collected_at=COLLECTED, exporters={'10.0.0.1:9100'},
        **more)
    for function in functions:
        facts.functions[function.address] = function
    for component, version in (versions or {}).items():
        facts.versions[component] = shapes.Version(version)
    return facts


def four_gpus(**changes):
    """4 H100s, 2 on each node, as the test cloud's passthrough host."""
    found = [gpu('0000:41:00.0', 0), gpu('0000:42:00.0', 0),
             gpu('0000:c1:00.0', 1), gpu('0000:c2:00.0', 1),
             # the cards' audio functions, of another ID
             gpu('0000:41:00.1', 0, device='22ba', pci_class='040300')]
    for function in found:
        for name, value in changes.get(function.address, {}).items():
            setattr(function, name, value)
    return found


class TestNumaGpus(base.TestCase):

    def numa_gpus(self, facts, ids=(H100,)):
        return scheduling.collected(facts, ids, keys=['numa_gpus']).get(
            'numa_gpus')

    def test_the_whole_gpus_of_the_ids_by_node(self):
        self.assertEqual([2, 2], self.numa_gpus(host(*four_gpus())))
        # a card only on node 1: node 0 holds none
        self.assertEqual([0, 1], self.numa_gpus(host(gpu('0000:c1:00.0', 1))))
        # no GPU of the ID: none on any node
        self.assertEqual([], self.numa_gpus(host(*four_gpus()),
                                            ids=('10de:26b9',)))

    def test_the_test_clouds_tree_as_collected(self):
        root = self.useFixture(fixtures.TempDir()).path
        tree = host_trees.write_tree(os.path.join(root, 'pt'),
                                     'passthrough', hostname='gpu-pt-1')
        facts = collector.collect(tree, now=COLLECTED)
        self.assertEqual(
            {'numa_gpus': [2, 2], 'nova': '2024.1', 'libvirt': '10.0.0',
             'qemu': '8.2.2', 'mdev_types': set()},
            scheduling.collected(facts, {H100}, COLLECTED, STALE))
        for fault in ('gpu-on-nvidia', 'missing-numa-node',
                      'dangling-driver'):
            tree = host_trees.write_tree(
                os.path.join(root, fault), 'passthrough',
                hostname='gpu-pt-1', faults=(fault,))
            self.assertIsNone(self.numa_gpus(
                collector.collect(tree, now=COLLECTED)), fault)

    def test_never_a_guess(self):
        cases = {
            'no ID known': (host(*four_gpus()), None),
            'another vendor\'s ID': (host(*four_gpus()), ('1002:74a1',)),
            'a GPU on nvidia': (host(*four_gpus(**{
                '0000:42:00.0': {'driver': 'nvidia'}})), (H100,)),
            'a GPU on no driver': (host(*four_gpus(**{
                '0000:42:00.0': {'driver': ''}})), (H100,)),
            'a node -1': (host(*four_gpus(**{
                '0000:42:00.0': {'numa_node': -1}})), (H100,)),
            'a node not read': (host(*four_gpus(**{
                '0000:42:00.0': {'numa_node': None}})), (H100,)),
            'a VF of the ID': (host(*four_gpus(), gpu(
                '0000:41:00.4', 0, physfn='0000:41:00.0')), (H100,)),
        }
        for what, (facts, ids) in cases.items():
            self.assertIsNone(self.numa_gpus(facts, ids), what)
        unreadable = {
            'numa_node': '0000:42:00.0', 'driver': '0000:42:00.0',
            'pci_ids': '0000:41:00.1', 'pci_devices': ''}
        for fact, address in unreadable.items():
            facts = host(*four_gpus())
            facts.note(fact, address)
            self.assertIsNone(self.numa_gpus(facts), fact)

    def test_a_vfio_variant_driver_is_vfio(self):
        facts = host(*four_gpus(**{
            '0000:42:00.0': {'driver': 'nvgrace-gpu-vfio-pci'}}))
        self.assertEqual([2, 2], self.numa_gpus(facts))


class TestVersionsAndTypes(base.TestCase):

    def test_versions_as_the_drain_reads_them(self):
        facts = host(versions={shapes.LIBVIRT: '10.0.0',
                               shapes.QEMU: '8.2.2',
                               shapes.NOVA_COMPUTE: '31.0.0'})
        self.assertEqual(
            {'nova': '2025.1', 'libvirt': '10.0.0', 'qemu': '8.2.2'},
            scheduling.collected(facts, keys=('nova', 'libvirt', 'qemu')))

    def test_nova_releases(self):
        for version, release in (
                ('29.0.0', '2024.1'), ('30.2.1', '2024.2'),
                ('31.0.0', '2025.1'), ('32.1.0.dev12', '2025.2'),
                ('27.0.0', '2023.1'), ('26.1.0', '2022.2'),
                ('17.0.0', '2018.1'), ('2025.1', '2025.1'),
                ('16.1.0', None), ('', None), (None, None),
                ('unknown', None)):
            self.assertEqual(release, scheduling.nova_release(version),
                             version)

    def test_a_version_unread_or_not_found_is_not_given(self):
        facts = host(versions={shapes.LIBVIRT: '10.0.0',
                               shapes.QEMU: 'garbage'})
        facts.note('libvirt_version')
        self.assertEqual({}, scheduling.collected(
            facts, keys=('nova', 'libvirt', 'qemu')))

    def test_mdev_types(self):
        offers = shapes.Function(
            '0000:84:00.0', vendor_id='10de', device_id='1eb8',
            driver='nvidia', mdev_types={'nvidia-35': shapes.MdevType(
                'GRID T4-2Q', 7, 1), 'nvidia-36': shapes.MdevType()})
        other = shapes.Function('0000:85:00.0', vendor_id='10de',
                                device_id='1eb8', driver='nvidia')
        facts = host(offers, other)
        self.assertEqual({'mdev_types': {'nvidia-35', 'nvidia-36'}},
                         scheduling.collected(facts, keys=['mdev_types']))
        self.assertEqual({'mdev_types': set()}, scheduling.collected(
            host(other), keys=['mdev_types']))
        facts.note('mdev_types', '0000:85:00.0')
        self.assertEqual({}, scheduling.collected(facts,
                                                  keys=['mdev_types']))


class TestUnusable(base.TestCase):

    def test_two_collectors_and_stale_facts_give_nothing(self):
        facts = host(*four_gpus(), versions={shapes.LIBVIRT: '10.0.0'})
        self.assertTrue(scheduling.collected(facts, {H100}, COLLECTED + 60,
                                             STALE))
        old = COLLECTED + STALE + 1
        self.assertEqual({}, scheduling.collected(facts, {H100}, old, STALE))
        self.assertIn('more than 900 s',
                      scheduling.unusable(facts, old, STALE))
        # no threshold, or no reading time: the age is not judged
        self.assertTrue(scheduling.collected(facts, {H100}, old))
        facts.exporters.add('10.0.0.9:9100')
        self.assertEqual({}, scheduling.collected(facts, {H100}))
        self.assertIn('2 collectors', scheduling.unusable(facts))
        self.assertEqual({}, scheduling.collected(None, {H100}))


class TestCountedIds(base.TestCase):

    POOLS = {
        'solver': dict(pools.build_spec('solver', 'passthrough',
                                        alias='h100', pci_id=H100),
                       hosts=['gpu-1', 'gpu-2']),
        'other': dict(pools.build_spec('other', 'passthrough',
                                       alias='l4', pci_id='10de:27b8'),
                      hosts=['gpu-2']),
        'vf': dict(pools.build_spec('vf', 'vgpu-vf', vgpu_type='L40S-24Q',
                                    alias='l40s-24q', pci_id='10de:26b9'),
                   hosts=['gpu-3']),
    }

    def ids(self, host='gpu-1', aliases=None, **extra):
        specs = ({pci.ALIAS_SPEC: extra['alias']} if 'alias' in extra
                 else None)
        return pci.counted_ids(host, self.POOLS, specs, aliases)

    def test_the_hosts_passthrough_pool(self):
        self.assertEqual({H100}, self.ids())
        # two pools of two IDs, a vgpu-vf pool, none: not known
        self.assertIsNone(self.ids('gpu-2'))
        self.assertIsNone(self.ids('gpu-3'))
        self.assertIsNone(self.ids('gpu-9'))

    def test_the_flavors_aliases(self):
        self.assertEqual({H100}, self.ids('gpu-2', alias='h100:2'))
        self.assertEqual({H100, '10de:27b8'},
                         self.ids('gpu-2', alias='h100:1,l4:1'))
        # nova.conf's alias, or --alias-map's, by the class it names
        aliases = {'a100': {'resource_class': 'CUSTOM_PCI_10DE_20B5'}}
        self.assertEqual({'10de:20b5'},
                         self.ids(alias='a100:1', aliases=aliases))
        for alias, given in (
                # an alias of VFs, one of a vgpu-vf pool, one of no pool
                ('vfs:1', {'vfs': {'resource_class': 'CUSTOM_PCI_10DE_26B9',
                                   'device_type': 'type-VF'}}),
                ('l40s-24q:1', None), ('nope:1', None),
                # no device asked, a malformed spec
                ('h100:0', None), ('h100', None)):
            self.assertIsNone(self.ids(alias=alias, aliases=given), alias)


class TestWithCollected(base.TestCase):

    def test_the_operators_facts_win_and_say_so(self):
        told = {'gpu-1': {'libvirt': '8.6', 'numa_gpus': [2, 2],
                          'post_copy': False},
                'gpu-2': {'libvirt': '9.0.0', 'numa_gpus': [4]}}
        found = {'gpu-1': {'libvirt': '8.6.0', 'numa_gpus': [2, 2, 0],
                           'qemu': '8.2.2'},
                 'gpu-2': {'libvirt': '10.0.0', 'numa_gpus': [2, 2]}}
        merged, notes = maintenance.with_collected(told, found)
        self.assertEqual(
            {'libvirt': '8.6', 'numa_gpus': [2, 2], 'post_copy': False,
             'qemu': '8.2.2', hm.COLLECTED_FACTS: frozenset({'qemu'})},
            merged['gpu-1'])
        self.assertEqual({'libvirt': '9.0.0', 'numa_gpus': [4]},
                         merged['gpu-2'])
        # the same said twice is no note; each that differs is one
        self.assertEqual(
            ['--host-fact libvirt=9.0.0 overrides what gpuclient-host-facts '
             'collected on gpu-2 (libvirt=10.0.0).',
             '--host-fact numa_gpus=4 overrides what gpuclient-host-facts '
             'collected on gpu-2 (numa_gpus=2,2).'], notes)

    def test_types_compared_as_sets(self):
        told = {'gpu-1': {'mdev_types': {'nvidia-35'}}}
        _merged, notes = maintenance.with_collected(
            told, {'gpu-1': {'mdev_types': {'nvidia-35'}}})
        self.assertEqual([], notes)
        _merged, notes = maintenance.with_collected(
            told, {'gpu-1': {'mdev_types': {'nvidia-35', 'nvidia-36'}}})
        self.assertIn('(mdev_types=nvidia-35,nvidia-36)', notes[0])


class TestNumaSource(base.TestCase):

    def topology(self, **facts):
        hypervisor, given = numa_hosts.api_view('two-cells', prometheus=True)
        given.update(facts)
        return hm.numa_topology(hypervisor, given)

    def test_the_verdict_names_the_collector(self):
        found = self.topology(numa_gpus=[2, 2], **{
            hm.COLLECTED_FACTS: frozenset({'numa_gpus'})})
        self.assertEqual('prometheus and host facts (gpuclient-host-facts)',
                         found['source'])
        self.assertEqual([2, 2], [c['gpus'] for c in found['cells']])
        found = self.topology(numa_gpus=[2, 2], numa_pages={4: None}, **{
            hm.COLLECTED_FACTS: frozenset({'numa_gpus'})})
        self.assertEqual('prometheus and host facts (--host-fact, '
                         'gpuclient-host-facts)', found['source'])
        self.assertEqual('prometheus and host facts',
                         self.topology(numa_gpus=[2, 2])['source'])
        found = self.topology(numa_cells=2, numa_gpus=[1], **{
            hm.COLLECTED_FACTS: frozenset({'numa_gpus'})})
        self.assertEqual('host facts (--host-fact, gpuclient-host-facts)',
                         found['source'])

    def test_collected_cells_past_the_list_hold_none(self):
        collected = {hm.COLLECTED_FACTS: frozenset({'numa_gpus'})}
        found = self.topology(numa_gpus=[2], **collected)
        self.assertEqual([2, 0], [c['gpus'] for c in found['cells']])
        found = self.topology(numa_gpus=[], **collected)
        self.assertEqual([0, 0], [c['gpus'] for c in found['cells']])
        # the operator's list says nothing of the cells it leaves out
        self.assertEqual([2, None], [c['gpus'] for c in self.topology(
            numa_gpus=[2])['cells']])

    def test_a_gpu_on_a_cell_the_topology_lacks_is_not_judged(self):
        found = self.topology(numa_gpus=[1, 1, 1], **{
            hm.COLLECTED_FACTS: frozenset({'numa_gpus'})})
        self.assertFalse(found['known'])
        self.assertIn('GPU on NUMA node 2', found['why'])
