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

"""Pure pool encoding: options -> spec -> aggregate metadata -> pool."""

from osc_lib import exceptions

from gpuclient.rules import pools
from gpuclient.tests.unit import base
from gpuclient.tests.unit import fakes


class TestBuildSpec(base.TestCase):
    def test_seed_pools_round_trip(self):
        """The seeds' three pools plus MIG: spec -> metadata -> pool."""
        cases = [
            (dict(name='solver', mode='passthrough', alias='h100',
                  pci_id='10DE:2331'),
             {'gpu_pool': 'solver', 'gpu_pool_mode': 'passthrough',
              'gpu_resource_class': 'CUSTOM_PCI_10DE_2331',
              'gpu_alias': 'h100', 'gpu_pci_id': '10de:2331'},
             None),
            (dict(name='workstation', mode='vgpu', vgpu_type='nvidia-35',
                  isolate=True),
             {'gpu_pool': 'workstation', 'gpu_pool_mode': 'vgpu',
              'gpu_resource_class': 'VGPU', 'gpu_vgpu_type': 'nvidia-35',
              'trait:CUSTOM_GPU_POOL_WORKSTATION': 'required'},
             'CUSTOM_NVIDIA_35'),
            (dict(name='mig', mode='mig', mig_profile='3g.40gb'),
             {'gpu_pool': 'mig', 'gpu_pool_mode': 'mig',
              'gpu_resource_class': 'VGPU', 'gpu_mig_profile': '3g.40gb'},
             'CUSTOM_MIG_3G_40GB'),
            (dict(name='training', mode='baremetal',
                  resource_class='baremetal.gpu-h100',
                  projects=['p1', 'p2']),
             {'gpu_pool': 'training', 'gpu_pool_mode': 'baremetal',
              'gpu_resource_class': 'CUSTOM_BAREMETAL_GPU_H100',
              'filter_tenant_id_p1': 'p1', 'filter_tenant_id_p2': 'p2'},
             None),
            (dict(name='vg-class', mode='vgpu', vgpu_type='nvidia-36',
                  resource_class='CUSTOM_VGPU_NVIDIA_36'),
             {'gpu_pool': 'vg-class', 'gpu_pool_mode': 'vgpu',
              'gpu_resource_class': 'CUSTOM_VGPU_NVIDIA_36',
              'gpu_vgpu_type': 'nvidia-36'},
             None),
            # VF-backed vGPU: class CUSTOM_VGPU_<TYPE> by default, no type
            # trait (the class tells types apart), live migration recorded
            (dict(name='desktops', mode='vgpu-vf', vgpu_type='L40S-24Q',
                  alias='l40s-24q', pci_id='10DE:26B9',
                  live_migratable=True),
             {'gpu_pool': 'desktops', 'gpu_pool_mode': 'vgpu-vf',
              'gpu_resource_class': 'CUSTOM_VGPU_L40S_24Q',
              'gpu_vgpu_type': 'L40S-24Q', 'gpu_alias': 'l40s-24q',
              'gpu_pci_id': '10de:26b9', 'gpu_live_migratable': 'true'},
             None),
            (dict(name='h100vf', mode='vgpu-vf', vgpu_type='H100XM-20C',
                  alias='h100-20c', pci_id='10de:2330',
                  resource_class='CUSTOM_H100_20C'),
             {'gpu_pool': 'h100vf', 'gpu_pool_mode': 'vgpu-vf',
              'gpu_resource_class': 'CUSTOM_H100_20C',
              'gpu_vgpu_type': 'H100XM-20C', 'gpu_alias': 'h100-20c',
              'gpu_pci_id': '10de:2330'},
             None),
        ]
        for kwargs, metadata, type_trait in cases:
            spec = pools.build_spec(**kwargs)
            self.assertEqual(metadata, pools.metadata_for(spec))
            pool = pools.pool_from_aggregate(
                fakes.Aggregate(kwargs['name'], pools.metadata_for(spec),
                                ['h1']))
            self.assertEqual(type_trait, pool['type_trait'], kwargs)
            self.assertEqual([], pools.differences(spec, pool, ['h1']))
            self.assertEqual(spec['isolate'], pool['isolate'])

    def test_bad_input(self):
        cases = [
            (dict(name='a,b', mode='vgpu', vgpu_type='t'), 'comma'),
            (dict(name='s==x', mode='vgpu', vgpu_type='t'), 'operator'),
            (dict(name='<in>x', mode='vgpu', vgpu_type='t'), 'operator'),
            (dict(name=' x', mode='vgpu', vgpu_type='t'), 'spaces'),
            (dict(name='---', mode='vgpu', vgpu_type='t'), 'no letter'),
            (dict(name='', mode='vgpu', vgpu_type='t'), 'empty'),
            (dict(name='x', mode='gpu'), 'Unknown mode'),
            (dict(name='x', mode='passthrough', alias='h100'), '--pci-id'),
            (dict(name='x', mode='passthrough', alias='h100',
                  pci_id='10de-2331'), 'Invalid PCI id'),
            (dict(name='x', mode='passthrough', alias='h100',
                  pci_id='10de:23311'), 'Invalid PCI id'),
            (dict(name='x', mode='passthrough', alias='h1:00',
                  pci_id='10de:2331'), 'Invalid PCI alias'),
            (dict(name='x', mode='vgpu'), '--vgpu-type'),
            (dict(name='x', mode='vgpu', vgpu_type='t', alias='a'),
             '--alias is for passthrough and vgpu-vf pools'),
            (dict(name='x', mode='vgpu-vf', vgpu_type='L40S-24Q',
                  alias='l40s'), '--pci-id VENDOR:PRODUCT of the VFs'),
            (dict(name='x', mode='vgpu-vf', alias='l40s',
                  pci_id='10de:26b9'), '--vgpu-type'),
            (dict(name='x', mode='vgpu-vf', vgpu_type='L40S-24Q',
                  alias='l40s', pci_id='10de:26b9', mig_profile='1g'),
             '--mig-profile is for mig pools'),
            (dict(name='x', mode='vgpu', vgpu_type='t',
                  live_migratable=True),
             '--live-migratable is for passthrough and vgpu-vf pools'),
            (dict(name='x', mode='mig'), '--mig-profile'),
            (dict(name='x', mode='mig', mig_profile='1g', vgpu_type='t'),
             '--vgpu-type is for vgpu and vgpu-vf pools'),
            (dict(name='x', mode='baremetal'), '--resource-class'),
            (dict(name='x', mode='baremetal', resource_class='b.g',
                  isolate=True), 'Ironic driver'),
            (dict(name='x', mode='vgpu', vgpu_type='t',
                  properties={'gpu_pool': 'y'}), 'managed by gpuclient'),
            (dict(name='x', mode='vgpu', vgpu_type='t',
                  properties={'filter_tenant_id': 'p'}),
             'managed by gpuclient'),
            (dict(name='x', mode='vgpu', vgpu_type='t',
                  resource_class='...'), 'Invalid resource class'),
        ]
        for kwargs, message in cases:
            exc = self.assertRaises(
                exceptions.CommandError, pools.build_spec, **kwargs)
            self.assertIn(message, str(exc), kwargs)


class TestDecode(base.TestCase):
    def test_only_gpu_pool_aggregates_are_pools(self):
        found, _problems = pools.scan([
            fakes.Aggregate('ssd', {'ssd': 'true'}),
            fakes.Aggregate('solver', {
                'gpu_pool': 'solver', 'gpu_pool_mode': 'passthrough',
                'gpu_resource_class': 'CUSTOM_PCI_10DE_2331',
                'gpu_alias': 'h100', 'gpu_pci_id': '10de:2331'}, ['a']),
        ])
        self.assertEqual(['solver'], list(found))
        self.assertEqual({'a': ['solver']}, pools.pools_by_host(found))

    def test_unreadable_pool_aggregates_are_reported_and_skipped(self):
        solver = {'gpu_pool': 'solver', 'gpu_pool_mode': 'passthrough',
                  'gpu_resource_class': 'CUSTOM_PCI_10DE_2331',
                  'gpu_alias': 'h100', 'gpu_pci_id': '10de:2331'}
        found, problems = pools.scan([
            fakes.Aggregate('solver', solver, ['a']),
            # a passthrough pool needs its alias and PCI id
            fakes.Aggregate('half', {
                'gpu_pool': 'half', 'gpu_pool_mode': 'passthrough',
                'gpu_resource_class': 'CUSTOM_PCI_10DE_2331'}),
            fakes.Aggregate('no-class', {'gpu_pool': 'no-class',
                                         'gpu_pool_mode': 'vgpu',
                                         'gpu_vgpu_type': 'nvidia-35'}),
            fakes.Aggregate('long', dict(solver, gpu_pool='x' * 250)),
            # one pool name (one isolation trait) claimed twice
            fakes.Aggregate('twin-1', dict(solver, gpu_pool='twin')),
            fakes.Aggregate('twin-2', dict(solver, gpu_pool='TWIN')),
        ])
        self.assertEqual(['solver'], list(found))
        messages = {agg: msg for agg, _pool, msg in problems}
        self.assertEqual(['half', 'long', 'no-class', 'twin-1', 'twin-2'],
                         sorted(messages))
        self.assertIn('aggregate half is marked as GPU pool but cannot be '
                      'read as one: a passthrough pool without alias, '
                      'pci_id.', messages['half'])
        self.assertIn('no gpu_resource_class', messages['no-class'])
        self.assertIn('aggregate long is marked as GPU pool but cannot be '
                      'read as one: Invalid trait name', messages['long'])
        self.assertIn('longer than 255 characters', messages['long'])
        self.assertIn('claimed by several aggregates (twin-1, twin-2, '
                      'sharing trait CUSTOM_GPU_POOL_TWIN)',
                      messages['twin-1'])

    def test_hand_made_projects_and_properties(self):
        pool = pools.pool_from_aggregate(fakes.Aggregate('p', {
            'gpu_pool': 'p', 'gpu_pool_mode': 'vgpu',
            'gpu_resource_class': 'VGPU', 'gpu_vgpu_type': 'nvidia-35',
            'filter_tenant_id': 'a,b', 'filter_tenant_id2': 'c',
            'group_policy': 'isolate', 'owner': 'team-x',
        }))
        self.assertEqual(['a', 'b', 'c'], pool['projects'])
        self.assertEqual({'group_policy': 'isolate', 'owner': 'team-x'},
                         pool['properties'])
        self.assertFalse(pool['isolate'])


class TestHelpers(base.TestCase):
    def test_differences(self):
        spec = pools.build_spec('p', 'vgpu', vgpu_type='nvidia-35',
                                isolate=True)
        pool = pools.pool_from_aggregate(fakes.Aggregate('p', {
            'gpu_pool': 'p', 'gpu_pool_mode': 'vgpu',
            'gpu_resource_class': 'VGPU', 'gpu_vgpu_type': 'nvidia-36',
        }, ['h1']))
        self.assertEqual(
            [('vgpu_type', 'nvidia-35', 'nvidia-36'),
             ('isolate', True, False),
             ('hosts', [], ['h1'])],
            pools.differences(spec, pool, []),
        )

    def test_trait_collision(self):
        existing, _problems = pools.scan([
            fakes.Aggregate('gpu-a', {'gpu_pool': 'gpu-a',
                                      'gpu_pool_mode': 'vgpu',
                                      'gpu_resource_class': 'VGPU',
                                      'gpu_vgpu_type': 'nvidia-35'})
        ])
        self.assertEqual(['gpu-a'], list(existing))
        exc = self.assertRaises(
            exceptions.CommandError, pools.check_trait_collision, 'GPU_A',
            existing)
        self.assertIn('CUSTOM_GPU_POOL_GPU_A', str(exc))
        self.assertEqual('CUSTOM_GPU_POOL_GPU_B',
                         pools.check_trait_collision('gpu-b', existing))

    def test_device(self):
        spec = pools.build_spec('s', 'passthrough', alias='h100',
                                pci_id='10de:2331')
        self.assertEqual('h100 (10de:2331)', pools.device(spec))


class TestFind(base.TestCase):
    """One resolver for every command that names a pool: a pool name,
    else its aggregate's ID or UUID (as ``openstack aggregate show``)."""

    def setUp(self):
        super().setUp()
        solver = {'gpu_pool': 'solver', 'gpu_pool_mode': 'passthrough',
                  'gpu_resource_class': 'CUSTOM_PCI_10DE_2331',
                  'gpu_alias': 'h100', 'gpu_pci_id': '10de:2331'}
        self.found, self.problems = pools.scan([
            dict(name='solver-agg', id=7, uuid='AB12-uuid', hosts=[],
                 metadata=solver),
            # a pool whose name is another aggregate's ID: the name wins
            dict(name='seven', id=8, uuid='cd34', hosts=[],
                 metadata=dict(solver, gpu_pool='7')),
            dict(name='broken', id=9, uuid='ef56', hosts=[],
                 metadata={'gpu_pool': 'broken'}),
        ])

    def test_cases(self):
        for given, expected in [
                ('solver', 'solver'), ('7', '7'), ('8', '7'),
                ('ab12-uuid', 'solver'), ('AB12-UUID', 'solver'),
                (' 8 ', '7')]:
            self.assertEqual(expected, pools.pool_name(self.found, given),
                             given)
            self.assertEqual(expected,
                             pools.lookup(self.found, self.problems,
                                          given)['name'], given)

    def test_refused(self):
        for given in ('nope', '9', 'ef56', '', 'None'):
            exc = self.assertRaises(exceptions.CommandError,
                                    pools.pool_name, self.found, given)
            self.assertIn('No GPU pool named %s' % given, str(exc))
        exc = self.assertRaises(exceptions.CommandError, pools.lookup,
                                self.found, self.problems, 'broken')
        self.assertIn('aggregate broken is marked as GPU pool', str(exc))

    def test_names(self):
        self.assertEqual(['solver', '7'],
                         pools.pool_names(self.found, ['ab12-uuid', '8']))
        self.assertRaises(exceptions.CommandError, pools.pool_names,
                          self.found, ['solver', 'new'])
        # a document's pool the cloud does not have yet is kept as given
        self.assertEqual(['solver', 'new', '7'],
                         pools.pool_names(self.found,
                                          ['ab12-uuid', 'new', 'cd34'],
                                          strict=False))
