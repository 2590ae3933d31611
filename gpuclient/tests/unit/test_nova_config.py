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

"""gpuclient.rules.nova_conf.render (pure) per mode, its renderers, and
nova_conf.diff.

Nova's own reading of the rendered files is test_nova_config_nova (it
shares these cases).
"""

import json

from gpuclient.rules import model
from gpuclient.rules.nova_conf import diff as conf_diff
from gpuclient.rules.nova_conf import parse
from gpuclient.rules.nova_conf import render as nc
from gpuclient.tests.unit import base
from gpuclient.tests.unit.test_nova_config_nova import cases
from gpuclient.tests.unit.test_nova_config_nova import device
from gpuclient.tests.unit.test_nova_config_nova import pool

PT = nc.host_target('gpu-pt-1')
VG = nc.host_target('gpu-vgpu-1')
MIG = nc.host_target('gpu-mig-1')
BM = nc.host_target('bm-compute-1')

# what gpu config show writes on hosts live-migrating VFIO devices
POST_COPY_OFF = {'live_migration_permit_post_copy': 'false'}


def build(case, **kwargs):
    pools, trees, mig_types = cases()[case]
    return nc.build(pools, trees, kwargs.pop('mig_types', mig_types),
                    **kwargs)


class TestAddresses(base.TestCase):
    def test_provider_names(self):
        table = [
            ('gpu-1_pci_0000_84_00_0', 'gpu-1', '0000:84:00.0'),
            ('gpu-mig-1_pci_0000_41_00_5', 'gpu-mig-1', '0000:41:00.5'),
            # PCI in Placement: upper-case address after the node name
            ('gpu-pt-1.gpu.test_0000:C1:00.0', 'gpu-pt-1.gpu.test',
             '0000:c1:00.0'),
            # a node name that itself looks like an address part
            ('n_pci_0000_01_00_0_pci_0000_af_00_7', 'n_pci_0000_01_00_0',
             '0000:af:00.7'),
            ('gpu-1_mtty_mtty', 'gpu-1', None),
            ('gpu-1_pci_0000_84_00_9', 'gpu-1', None),  # function 0-7
            (None, None, None),
        ]
        for name, root, want in table:
            self.assertEqual(want, nc.pci_address(name, root), name)

    def test_trees_from_snapshot(self):
        snap = model.Placement.listed([
            {'uuid': 'r', 'name': 'gpu-1', 'parent_provider_uuid': None,
             'root_provider_uuid': 'r'},
            {'uuid': 'c', 'name': 'gpu-1_pci_0000_84_00_0',
             'parent_provider_uuid': 'r', 'root_provider_uuid': 'r'},
            {'uuid': 'o', 'name': 'other_pci_0000_85_00_0',
             'parent_provider_uuid': 'x', 'root_provider_uuid': 'x'},
        ])
        snap.add_details({'c': {'resources': {'VGPU': {'capacity': 4,
                                                       'used': 1}},
                                'traits': ['CUSTOM_NVIDIA_35']}})
        trees = nc.trees_from_snapshot(snap, {'gpu-1': ['r']})
        self.assertEqual(['gpu-1'], list(trees))
        [dev] = trees['gpu-1']
        self.assertEqual(('c', '0000:84:00.0', {'VGPU': 4},
                          {'CUSTOM_NVIDIA_35'}),
                         (dev['uuid'], dev['address'], dev['resources'],
                          dev['traits']))


class TestBuildPerMode(base.TestCase):
    def test_passthrough(self):
        config = build('passthrough')
        [alias] = config.targets[nc.ALL]['pci']['alias']
        self.assertEqual({'name': 'h100', 'vendor_id': '10de',
                          'product_id': '2331', 'device_type': 'type-PCI',
                          'numa_policy': 'preferred'}, json.loads(alias))
        self.assertEqual({'pci': {
            'device_spec': ['{"vendor_id": "10de", "product_id": "2331"}'],
            'report_in_placement': 'true'}}, config.targets[PT])
        sched = config.targets[nc.SCHEDULER]
        filters = sched['filter_scheduler']['enabled_filters'].split(',')
        for name in ('PciPassthroughFilter',
                     'AggregateInstanceExtraSpecsFilter',
                     'NUMATopologyFilter') + nc.NOVA_DEFAULT_FILTERS:
            self.assertIn(name, filters)
        self.assertNotIn('AggregateMultiTenancyIsolation', filters)
        self.assertNotIn('scheduler', sched)  # no isolated pool
        # Nova 34 reads pci_in_placement in nova-api, nova-scheduler and
        # every nova-conductor: it goes where all of them read it
        self.assertEqual('true', config.targets[nc.ALL]['filter_scheduler'][
            'pci_in_placement'])
        self.assertNotIn('pci_in_placement', sched['filter_scheduler'])
        for target in nc.CONTROLLERS + (PT,):
            self.assertEqual('true', config.effective(target)[
                'filter_scheduler']['pci_in_placement'], target)
            self.assertIn('alias', config.effective(target)['pci'])

    def test_post_copy_off_where_vfio_devices_live_migrate(self):
        # issue 40, rule 4: a live-migratable passthrough pool's hosts get
        # [libvirt] live_migration_permit_post_copy = False (QEMU refuses
        # post-copy with VFIO devices); a pool that is not, nothing
        moving = pool('solver', 'passthrough', ['h1'], alias='h100',
                      pci_id='10de:2331', live_migratable=True)
        staying = pool('fixed', 'passthrough', ['h2'], alias='a100',
                       pci_id='10de:20b5')
        config = nc.build({'solver': moving, 'fixed': staying},
                          {'h1': [], 'h2': []})
        self.assertEqual(POST_COPY_OFF, config.targets[nc.host_target(
            'h1')]['libvirt'])
        self.assertNotIn('libvirt', config.targets[nc.host_target('h2')])
        self.assertTrue(nc.post_copy_needed(moving))
        self.assertFalse(nc.post_copy_needed(staying))
        for mode, kwargs in (('vgpu', {'vgpu_type': 'nvidia-35'}),
                             ('mig', {'mig_profile': '1g.10gb'})):
            self.assertTrue(nc.post_copy_needed(pool('p', mode, [],
                                                     **kwargs)), mode)

    def test_passthrough_other_class_and_policy(self):
        solver = pool('solver', 'passthrough', ['h1'], alias='a100',
                      pci_id='10de:20b5', resource_class='CUSTOM_A100')
        config = nc.build({'solver': solver}, {'h1': []},
                          numa_policy='required')
        alias = json.loads(config.targets[nc.ALL]['pci']['alias'][0])
        self.assertEqual(('CUSTOM_A100', 'required'),
                         (alias['resource_class'], alias['numa_policy']))
        spec = json.loads(config.targets[nc.host_target('h1')]['pci'][
            'device_spec'][0])
        self.assertEqual('CUSTOM_A100', spec['resource_class'])
        # no device provider of the class yet: said so
        self.assertIn('no CUSTOM_A100 provider', ' '.join(
            config.notes[nc.host_target('h1')]))

    def test_vgpu_several_types_on_one_host(self):
        config = build('vgpu')
        self.assertEqual({
            'libvirt': POST_COPY_OFF,
            'devices': {'enabled_mdev_types': 'nvidia-35,nvidia-36'},
            'mdev_nvidia-35': {
                'device_addresses': '0000:84:00.0,0000:86:00.0'},
            'mdev_nvidia-36': {'device_addresses': '0000:85:00.0'},
        }, config.targets[VG])
        sched = config.targets[nc.SCHEDULER]
        filters = sched['filter_scheduler']['enabled_filters'].split(',')
        # ws36 is project-limited, ws35 isolated
        self.assertIn('AggregateMultiTenancyIsolation', filters)
        self.assertNotIn('PciPassthroughFilter', filters)
        self.assertEqual('true', sched['scheduler'][
            'enable_isolated_aggregate_filtering'])
        self.assertNotIn('pci', config.targets.get(nc.ALL, {}))

    def test_vgpu_on_sriov_vfs_max_instances(self):
        # Nova 29+: each VF reports one mdev; the type's vGPUs per GPU
        # (A40-12C: 4, NVIDIA's C-Series Table 47) times the GPUs
        config = build('vgpu-vfs')
        section = config.targets[nc.host_target('gpu-vf-3')][
            'mdev_nvidia-558']
        self.assertEqual('8', section['max_instances'])
        self.assertEqual(6, len(section['device_addresses'].split(',')))
        self.assertEqual([], config.notes.get(nc.host_target('gpu-vf-3'),
                                              []))

    def test_vgpu_on_sriov_vfs_crowded_gpu_said(self):
        pools, trees, _mig = cases()['vgpu-vfs']
        trees['gpu-vf-3'] += [
            device('gpu-vf-3', '0000:81:01.%d' % fn, {'VGPU': 1},
                   ['CUSTOM_NVIDIA_558']) for fn in (0, 1)]
        config = nc.build(pools, trees)
        target = nc.host_target('gpu-vf-3')
        self.assertEqual('8', config.targets[target]['mdev_nvidia-558'][
            'max_instances'])
        self.assertIn('0000:81:00.0', ' '.join(config.notes[target]))

    def test_vgpu_on_sriov_vfs_type_unknown_said(self):
        pools, trees, _mig = cases()['vgpu-vfs']
        pools['desk']['properties'] = {}
        config = nc.build(pools, trees)
        target = nc.host_target('gpu-vf-3')
        self.assertNotIn('max_instances',
                         config.targets[target]['mdev_nvidia-558'])
        self.assertIn('vgpu_profile', ' '.join(config.notes[target]))

    def test_vgpu_on_pgpus_needs_no_max_instances(self):
        config = build('vgpu')
        for section, values in config.targets[VG].items():
            self.assertNotIn('max_instances', values, section)

    def test_vgpu_per_type_class(self):
        config = build('vgpu-class')
        self.assertEqual({
            'libvirt': POST_COPY_OFF,
            'devices': {'enabled_mdev_types': 'nvidia-37'},
            'mdev_nvidia-37': {'device_addresses': '0000:3b:00.0',
                               'mdev_class': 'CUSTOM_VGPU_NVIDIA_37'},
        }, config.targets[nc.host_target('gpu-vgpu-2')])

    def test_vgpu_untagged_pgpu_is_said_not_guessed(self):
        vg = pool('ws', 'vgpu', ['h'], vgpu_type='nvidia-35')
        tree = [device('h', '0000:84:00.0', {'VGPU': 4},
                       ['CUSTOM_NVIDIA_35']),
                device('h', '0000:85:00.0', {'VGPU': 4})]
        config = nc.build({'ws': vg}, {'h': tree})
        target = nc.host_target('h')
        self.assertEqual('0000:84:00.0', config.targets[target][
            'mdev_nvidia-35']['device_addresses'])
        self.assertIn('0000:85:00.0', ' '.join(config.notes[target]))

    def test_vgpu_provider_recorded_by_pool_counts(self):
        """A pGPU the pool tagged (gpu_tagged:) whose trait Nova wiped."""
        rp = device('h', '0000:84:00.0', {'VGPU': 4})
        vg = pool('ws', 'vgpu', ['h'], vgpu_type='nvidia-35',
                  tagged={'gpu_tagged:' + rp['uuid']: 'CUSTOM_NVIDIA_35'})
        config = nc.build({'ws': vg}, {'h': [rp]})
        self.assertEqual('0000:84:00.0', config.targets[
            nc.host_target('h')]['mdev_nvidia-35']['device_addresses'])

    def test_type_without_pgpus_left_out_beside_other_types(self):
        """Nova makes a type without device_addresses the type of every
        unlisted pGPU: only kept when it is the host's only type."""
        vg35 = pool('ws35', 'vgpu', ['h'], vgpu_type='nvidia-35')
        vg36 = pool('ws36', 'vgpu', ['h'], vgpu_type='nvidia-36')
        tree = [device('h', '0000:84:00.0', {'VGPU': 4},
                       ['CUSTOM_NVIDIA_35'])]
        config = nc.build({'ws35': vg35, 'ws36': vg36}, {'h': tree})
        target = nc.host_target('h')
        self.assertEqual({
            'libvirt': POST_COPY_OFF,
            'devices': {'enabled_mdev_types': 'nvidia-35'},
            'mdev_nvidia-35': {'device_addresses': '0000:84:00.0'},
        }, config.targets[target])
        notes = ' '.join(config.notes[target])
        self.assertIn('nvidia-36 (pool ws36)', notes)
        self.assertIn('left out of enabled_mdev_types', notes)

    def test_only_type_left_out_beside_untagged_pgpus(self):
        vg = pool('ws', 'vgpu', ['h'], vgpu_type='nvidia-35')
        tree = [device('h', '0000:84:00.0', {'VGPU': 4})]  # no trait
        config = nc.build({'ws': vg}, {'h': tree})
        target = nc.host_target('h')
        self.assertNotIn(target, config.targets)
        notes = ' '.join(config.notes[target])
        self.assertIn('left out of enabled_mdev_types', notes)
        self.assertIn('0000:84:00.0', notes)

    def test_vgpu_host_without_providers(self):
        vg = pool('ws', 'vgpu', ['h'], vgpu_type='nvidia-35')
        config = nc.build({'ws': vg}, {})
        target = nc.host_target('h')
        self.assertEqual({'libvirt': POST_COPY_OFF,
                          'devices': {'enabled_mdev_types': 'nvidia-35'}},
                         config.targets[target])
        notes = ' '.join(config.notes[target])
        self.assertIn('No compute node of h in Placement', notes)
        self.assertIn('device_addresses is not written', notes)
        # the only type, no other pGPU: kept, and said what Nova does
        self.assertIn('Nova uses nvidia-35 for every pGPU', notes)

    def test_mig(self):
        config = build('mig')
        self.assertEqual({
            'libvirt': POST_COPY_OFF,
            'devices': {'enabled_mdev_types': 'nvidia-700'},
            'mdev_nvidia-700': {'device_addresses':
                                '0000:41:00.4,0000:41:00.5,0000:41:00.6'},
        }, config.targets[MIG])

    def test_mig_without_type_is_a_comment(self):
        config = build('mig-unknown-type')
        self.assertNotIn(MIG, config.targets)
        notes = ' '.join(config.notes[MIG])
        self.assertIn('--mig-mdev-type 3g.40gb=<type>', notes)
        self.assertIn('0000:41:00.6', notes)

    def test_baremetal_nothing_said_so(self):
        config = build('baremetal')
        self.assertNotIn(BM, config.targets)
        self.assertIn('nothing in nova.conf', config.notes[BM][0])
        sched = config.targets[nc.SCHEDULER]['filter_scheduler']
        self.assertEqual(['AggregateInstanceExtraSpecsFilter'],
                         sched['enabled_filters'].split(',')[
                             len(nc.NOVA_DEFAULT_FILTERS):])
        self.assertNotIn(nc.ALL, config.targets)

    def test_no_pools(self):
        config = nc.build({}, {})
        self.assertEqual({}, config.targets)
        self.assertIn('No GPU pool', config.notes[nc.ALL][0])


def flavor(name, alias, policy=None):
    extra = {'pci_passthrough:alias': '%s:1' % alias}
    if policy:
        extra['hw:pci_numa_affinity_policy'] = policy
    return {'id': 'id-' + name, 'name': name, 'extra_specs': extra}


class TestAliases(base.TestCase):
    def aliases(self, config):
        return [json.loads(a) for a in config.targets[nc.ALL]['pci'][
            'alias']]

    def test_same_device_in_two_pools_is_one_alias(self):
        a = pool('a', 'passthrough', ['h1'], alias='gpu', pci_id='10de:2331')
        b = pool('b', 'passthrough', ['h2'], alias='gpu', pci_id='10de:2331')
        config = nc.build({'a': a, 'b': b}, {'h1': [], 'h2': []})
        self.assertEqual(1, len(self.aliases(config)))
        self.assertEqual([], nc.alias_conflicts([a, b]))

    def test_shared_alias_one_class_names_the_class(self):
        a = pool('a', 'passthrough', ['h1'], alias='gpu', pci_id='10de:2331',
                 resource_class='CUSTOM_GPU')
        b = pool('b', 'passthrough', ['h2'], alias='gpu', pci_id='10de:20b5',
                 resource_class='CUSTOM_GPU')
        config = nc.build({'a': a, 'b': b}, {'h1': [], 'h2': []})
        [alias] = self.aliases(config)
        self.assertEqual({'name': 'gpu', 'device_type': 'type-PCI',
                          'resource_class': 'CUSTOM_GPU',
                          'numa_policy': 'preferred'}, alias)
        self.assertIn('common resource class', ' '.join(config.notes[nc.ALL]))
        self.assertEqual([('gpu', ['a', 'b'], 'CUSTOM_GPU')], [
            (n, [p['name'] for p in g], c)
            for n, g, c in nc.alias_conflicts([a, b])])

    def test_shared_alias_two_classes_writes_one_and_says_why(self):
        a = pool('a', 'passthrough', ['h1'], alias='gpu', pci_id='10de:2331')
        b = pool('b', 'passthrough', ['h2'], alias='gpu', pci_id='10de:20b5')
        config = nc.build({'a': a, 'b': b}, {'h1': [], 'h2': []})
        [alias] = self.aliases(config)
        self.assertEqual('2331', alias['product_id'])
        notes = ' '.join(config.notes[nc.ALL])
        self.assertIn('PciInvalidAlias', notes)
        self.assertIn('one alias per PCI id', notes)
        self.assertIn('one --resource-class for both pools', notes)
        [(_name, _group, shared)] = nc.alias_conflicts([a, b])
        self.assertIsNone(shared)

    def test_numa_policy_from_the_flavors(self):
        a = pool('a', 'passthrough', ['h1'], alias='gpu', pci_id='10de:2331')
        table = [
            # flavors, policy written, assumed?
            ([flavor('f1', 'gpu', 'required'),
              flavor('f2', 'gpu', 'required'), flavor('f3', 'gpu'),
              flavor('other', 'x', 'socket')], 'required', False),
            ([flavor('f1', 'gpu', 'required'),
              flavor('f2', 'gpu', 'socket')], 'legacy', True),
            ([flavor('f1', 'gpu')], 'legacy', True),
            ([], 'legacy', True),
            (None, 'legacy', True),
        ]
        for flavors, want, assumed in table:
            config = nc.build({'a': a}, {'h1': []}, numa_policy='legacy',
                              flavors=flavors)
            [alias] = self.aliases(config)
            self.assertEqual(want, alias['numa_policy'], flavors)
            notes = ' '.join(config.notes.get(nc.ALL, ()))
            self.assertEqual(assumed, 'is assumed' in notes, flavors)
        config = nc.build({'a': a}, {'h1': []}, flavors=[
            flavor('f1', 'gpu', 'required'), flavor('f2', 'gpu', 'socket')])
        self.assertIn('required: f1; socket: f2',
                      ' '.join(config.notes[nc.ALL]))


class TestRender(base.TestCase):
    def test_ini_reads_back(self):
        """What render_ini writes, parse_ini reads as the Config."""
        config = build('all')
        text = nc.render_ini(config)
        for target in config.ordered():
            block = nc.render_target(config, target)
            self.assertIn(block, text)
            parsed = parse.parse_ini(block)
            want = {s: {k: v if isinstance(v, list) else [v]
                        for k, v in keys.items()}
                    for s, keys in config.targets.get(target, {}).items()}
            self.assertEqual(want, parsed, target)

    def test_kolla_paths(self):
        config = build('all')
        paths = [p for p, _text in nc.files(config, 'kolla')]
        self.assertEqual([
            'nova.conf', 'nova/nova-scheduler.conf',
            'nova/bm-compute-1/nova.conf', 'nova/gpu-mig-1/nova.conf',
            'nova/gpu-pt-1/nova.conf', 'nova/gpu-vgpu-1/nova.conf'], paths)
        self.assertEqual(
            ['global.conf', 'nova.conf', 'nova/nova-compute.conf',
             'nova/gpu-pt-1/nova.conf'], nc.kolla_reads(PT))
        self.assertEqual(
            ['global.conf', 'nova.conf', 'nova/nova-conductor.conf'],
            nc.kolla_reads(nc.CONDUCTOR))
        text = nc.render_kolla(config)
        self.assertIn('# ==> nova/gpu-vgpu-1/nova.conf <==\n', text)

    def test_effective(self):
        config = build('all')
        effective = config.effective(PT)
        self.assertEqual(['alias', 'device_spec', 'report_in_placement'],
                         sorted(effective['pci']))


class TestDiff(base.TestCase):
    def existing(self, config, target):
        """The effective config of TARGET as parse_ini would read it."""
        return parse.parse_ini(nc.render_target(config, nc.ALL)
                                 + nc.render_target(config, target))

    def test_own_output_has_no_differences(self):
        config = build('all')
        for target in config.ordered():
            self.assertEqual([], conf_diff.diff(config, {
                target: self.existing(config, target)}), target)
        self.assertIn('no differences', conf_diff.render_diff([]))

    def test_missing_and_contradicting(self):
        config = build('all')
        text = (
            '[pci]\n'
            'alias = {"name": "h100", "vendor_id": "10de", '
            '"product_id": "2330"}\n'
            'alias = {"name": "other", "vendor_id": "1002"}\n'
            '[filter_scheduler]\n'
            'enabled_filters = ComputeFilter,PciPassthroughFilter\n'
            'pci_in_placement = False\n'
            '[scheduler]\n'
            'enable_isolated_aggregate_filtering = 1\n')
        found = conf_diff.diff(config, {nc.SCHEDULER: parse.parse_ini(text)})
        by_key = {(f['section'], f['key']): f for f in found}
        self.assertEqual({('pci', 'alias'),
                          ('filter_scheduler', 'enabled_filters'),
                          ('filter_scheduler', 'pci_in_placement')},
                         set(by_key))
        self.assertEqual(conf_diff.DIFFERS, by_key[('pci', 'alias')]['kind'])
        self.assertIn('2330', by_key[('pci', 'alias')]['have'])
        out = conf_diff.render_diff(found, {nc.SCHEDULER: ['x.conf']})
        self.assertIn('nova-scheduler (x.conf)', out)
        self.assertIn('- [filter_scheduler] pci_in_placement = False', out)
        self.assertIn('+ [filter_scheduler] pci_in_placement = true', out)

    def test_superset_filters_and_extra_aliases_are_fine(self):
        config = build('passthrough')
        text = nc.render_target(config, nc.ALL).replace(
            '[pci]\n', '[pci]\nalias = {"name": "x", "vendor_id": "8086", '
            '"product_id": "1234"}\n') + nc.render_target(
                config, nc.SCHEDULER).replace(
                    'ComputeFilter,', 'ComputeFilter,SameHostFilter,')
        self.assertEqual([], conf_diff.diff(config, {
            nc.SCHEDULER: parse.parse_ini(text)}))

    def test_host_addresses_compared_as_sets(self):
        config = build('vgpu')
        good = self.existing(config, VG)
        good['mdev_nvidia-35']['device_addresses'] = [
            '0000:86:00.0, 0000:84:00.0']
        self.assertEqual([], conf_diff.diff(config, {VG: good}))
        good['mdev_nvidia-35']['device_addresses'] = ['0000:84:00.0']
        del good['mdev_nvidia-36']
        found = conf_diff.diff(config, {VG: good})
        self.assertEqual([(conf_diff.DIFFERS, 'mdev_nvidia-35'),
                          (conf_diff.MISSING, 'mdev_nvidia-36')],
                         [(f['kind'], f['section']) for f in found])


class TestWideTrees(base.TestCase):
    """issue 40, rule 5: Placement's [workarounds]
    optimize_for_wide_provider_trees "when to enable" (>= 8 children of
    one class in a tree, a flavor asking > 4), placement.conf rendered."""

    RC = 'CUSTOM_PCI_10DE_2331'

    def _case(self, children, asked, steer='wide'):
        wide = pool('wide', 'passthrough', ['h1'], alias='h100',
                    pci_id='10de:2331')
        tree = [device('h1', '0000:%02x:00.0' % (0x41 + i), {self.RC: 1},
                       libvirt=False) for i in range(children)]
        specs = {'pci_passthrough:alias': 'h100:%d' % asked}
        if steer:
            specs['aggregate_instance_extra_specs:gpu_pool'] = steer
        flavors = [{'id': 'f1', 'name': 'big', 'extra_specs': specs}]
        return {'wide': wide}, {'h1': tree}, flavors

    def test_thresholds(self):
        for children, asked, steer, expected in (
                (8, 5, 'wide', True),     # Placement's own example
                (7, 5, 'wide', False),    # fewer than 8 children
                (8, 4, 'wide', False),    # not more than 4 asked
                (8, 5, None, True),       # unsteered flavor can land
                (8, 5, 'other', False)):  # steered elsewhere
            pools, trees, flavors = self._case(children, asked, steer)
            found = nc.wide_trees(pools, trees, flavors)
            self.assertEqual(expected, bool(found),
                             (children, asked, steer))
            if expected:
                self.assertEqual([{'pool': 'wide', 'host': 'h1',
                                   'children': children, 'flavor': 'big',
                                   'asked': asked}], found)

    def test_placement_conf_rendered_only_where_wide(self):
        pools, trees, flavors = self._case(8, 8)
        config = nc.build(pools, trees, flavors=flavors)
        self.assertEqual({
            'workarounds': {'optimize_for_wide_provider_trees': 'true'},
            'placement': {
                'allocation_candidates_generation_strategy':
                    'breadth-first',
                'max_allocation_candidates': '1000'},
        }, config.targets[nc.PLACEMENT])
        self.assertEqual('placement.conf', nc.kolla_path(nc.PLACEMENT))
        self.assertEqual('placement.conf', nc.ini_path(nc.PLACEMENT))
        self.assertIn('bug 2126751', ' '.join(config.notes[nc.PLACEMENT]))
        # a Nova service's file is never compared on placement.conf keys
        self.assertEqual(nc.PLACEMENT, config.ordered()[-2])
        pools, trees, flavors = self._case(8, 4)
        config = nc.build(pools, trees, flavors=flavors)
        self.assertNotIn(nc.PLACEMENT, config.targets)
