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

"""Pure flavor extra specs: derivation per mode and trap, and reading."""

from osc_lib import exceptions

from gpuclient.rules import pools
from gpuclient.rules import specs
from gpuclient.tests.unit import base

STEER = 'aggregate_instance_extra_specs:gpu_pool'

# The seed's hand-made flavors (seeds/004), exactly as the recipe sets them.
SEED_H100 = {
    'pci_passthrough:alias': 'h100:1',
    'aggregate_instance_extra_specs:gpu': 'true',
    'hw:pci_numa_affinity_policy': 'preferred',
}
SEED_VGPU = {
    'resources:VGPU': '1',
    'aggregate_instance_extra_specs:gpu': 'true',
}


def make_pool(name, mode, **kwargs):
    """A pool dict as the client reads it back from its aggregate."""
    spec = pools.build_spec(name, mode, **kwargs)
    aggregate = {'name': name, 'id': 1, 'uuid': 'u-' + name,
                 'metadata': pools.metadata_for(spec), 'hosts': ['h1']}
    return pools.pool_from_aggregate(aggregate)


PT = make_pool('solver', 'passthrough', alias='h100', pci_id='10de:2331')
VG = make_pool('ws', 'vgpu', vgpu_type='nvidia-35')
VG_ISO = make_pool('ws-iso', 'vgpu', vgpu_type='nvidia-35', isolate=True)
VG_CLASS = make_pool('ws-class', 'vgpu', vgpu_type='nvidia-36',
                     resource_class='CUSTOM_VGPU_NVIDIA_36')
MIG = make_pool('mig', 'mig', mig_profile='3g.40gb')
BM = make_pool('training', 'baremetal', resource_class='baremetal.gpu-h100')
POOLS = {p['name']: p for p in (PT, VG, VG_ISO, VG_CLASS, MIG, BM)}


class TestDerive(base.TestCase):
    def test_per_mode(self):
        cases = [
            # (pool, options, extra specs, aggregate metadata)
            (PT, {}, {
                STEER: 'solver',
                'pci_passthrough:alias': 'h100:1',
                'hw:pci_numa_affinity_policy': 'preferred',
            }, {}),
            (PT, {'gpus': 4, 'numa_policy': 'required'}, {
                STEER: 'solver',
                'pci_passthrough:alias': 'h100:4',
                'hw:pci_numa_affinity_policy': 'required',
            }, {}),
            (VG, {}, {
                STEER: 'ws',
                'resources:VGPU': '1',
                'trait:CUSTOM_NVIDIA_35': 'required',
            }, {}),
            (VG_ISO, {}, {
                STEER: 'ws-iso',
                'trait:CUSTOM_GPU_POOL_WS_ISO': 'required',
                'resources:VGPU': '1',
                'trait:CUSTOM_NVIDIA_35': 'required',
            }, {}),
            (VG, {'gpus': 3}, {
                STEER: 'ws',
                'resources1:VGPU': '1',
                'trait1:CUSTOM_NVIDIA_35': 'required',
                'resources2:VGPU': '1',
                'trait2:CUSTOM_NVIDIA_35': 'required',
                'resources3:VGPU': '1',
                'trait3:CUSTOM_NVIDIA_35': 'required',
                'group_policy': 'isolate',
            }, {'group_policy': 'isolate'}),
            (VG_CLASS, {}, {
                STEER: 'ws-class',
                'resources:CUSTOM_VGPU_NVIDIA_36': '1',
            }, {}),
            (VG_CLASS, {'gpus': 2}, {
                STEER: 'ws-class',
                'resources1:CUSTOM_VGPU_NVIDIA_36': '1',
                'resources2:CUSTOM_VGPU_NVIDIA_36': '1',
                'group_policy': 'isolate',
            }, {'group_policy': 'isolate'}),
            (MIG, {}, {
                STEER: 'mig',
                'resources:VGPU': '1',
                'trait:CUSTOM_MIG_3G_40GB': 'required',
            }, {}),
            (BM, {}, {
                STEER: 'training',
                'resources:CUSTOM_BAREMETAL_GPU_H100': '1',
                'resources:VCPU': '0',
                'resources:MEMORY_MB': '0',
                'resources:DISK_GB': '0',
            }, {}),
        ]
        for pool, options, expected, aggregate in cases:
            result = specs.derive(pool, **options)
            self.assertEqual(expected, result['extra_specs'],
                             (pool['name'], options))
            self.assertEqual(aggregate, result['aggregate_metadata'])

    def test_seed_flavors_but_for_the_steering_key(self):
        """The seeds' recipes, with gpu=true replaced by gpu_pool."""
        h100 = specs.derive(PT)['extra_specs']
        expected = dict(SEED_H100)
        del expected['aggregate_instance_extra_specs:gpu']
        expected[STEER] = 'solver'
        self.assertEqual(expected, h100)
        vgpu_pool = make_pool('vg', 'vgpu', vgpu_type='nvidia-35',
                              resource_class='VGPU')
        vgpu = specs.derive(vgpu_pool)['extra_specs']
        self.assertEqual('1', vgpu['resources:VGPU'])
        self.assertEqual('vg', vgpu[STEER])

    def test_sriov_warning_for_several_vgpus(self):
        self.assertEqual([], specs.derive(VG)['warnings'])
        warnings = specs.derive(VG, gpus=2)['warnings']
        self.assertEqual(1, len(warnings))
        self.assertIn('SR-IOV', warnings[0])

    def test_numa_warning_without_topology(self):
        # no warning for the default policy, nor with a NUMA topology
        self.assertEqual([], specs.derive(PT)['warnings'])
        warnings = specs.derive(PT, numa_policy='required')['warnings']
        self.assertEqual(1, len(warnings))
        self.assertIn('NUMA topology', warnings[0])
        self.assertIn('NUMATopologyFilter', warnings[0])
        for prop in ({'hw:numa_nodes': '1'}, {'hw:cpu_policy': 'dedicated'},
                     {'hw:mem_page_size': 'large'}):
            result = specs.derive(PT, numa_policy='required',
                                  properties=prop)
            self.assertEqual([], result['warnings'], prop)

    def test_refused_options(self):
        cases = [
            (MIG, {'gpus': 2}, 'MIG slice'),
            (VG, {'numa_policy': 'required'}, 'passthrough pools'),
            (MIG, {'numa_policy': 'preferred'}, 'passthrough pools'),
            (BM, {'numa_policy': 'socket'}, 'passthrough pools'),
            (BM, {'gpus': 2}, 'one whole node'),
            (PT, {'gpus': 0}, 'at least 1'),
            (PT, {'numa_policy': 'strict'}, 'Unknown --numa-policy'),
        ]
        for pool, options, message in cases:
            exc = self.assertRaises(exceptions.CommandError, specs.derive,
                                    pool, **options)
            self.assertIn(message, str(exc), (pool['name'], options))

    def test_broken_pool_metadata(self):
        pool = dict(PT, alias=None)
        exc = self.assertRaises(exceptions.CommandError, specs.derive, pool)
        self.assertIn('gpu_alias', str(exc))

    def test_properties_merged(self):
        result = specs.derive(VG, properties={
            'hw:cpu_policy': 'dedicated', 'resources:PCPU': '4',
            'aggregate_instance_extra_specs:ssd': 'true',
            'trait:CUSTOM_NVIDIA_35': 'required',  # same as derived: fine
            'capabilities:cpu_info:arch': 'x86_64',  # not checked
            'custom_ns:anything': 'x',
        })
        extra = result['extra_specs']
        self.assertEqual('dedicated', extra['hw:cpu_policy'])
        self.assertEqual('4', extra['resources:PCPU'])
        self.assertEqual('true', extra['aggregate_instance_extra_specs:ssd'])
        self.assertEqual('ws', extra[STEER])

    def test_contradicting_properties(self):
        cases = [
            (PT, {'pci_passthrough:alias': 'a100:1'}, 'contradicts'),
            (PT, {'pci_passthrough:alias': 'h100:1,nic:1'}, 'contradicts'),
            (VG, {'pci_passthrough:alias': 'h100:1'}, 'PCI alias'),
            (VG, {'resources:VGPU': '2'}, 'contradicts'),
            (VG, {'trait:CUSTOM_NVIDIA_35': 'forbidden'}, 'contradicts'),
            (VG, {'resources2:VGPU': '1'}, 'besides the ones'),
            (PT, {'resources:VGPU': '1'}, 'besides the ones'),
            (PT, {'resources:CUSTOM_PCI_10DE_2331': '1'}, 'besides the ones'),
            (VG, {'resources:PGPU': '1'}, 'besides the ones'),
            (PT, {STEER: 'other'}, 'contradicts'),
            (PT, {'hw:pci_numa_affinity_policy': 'required'},
             'Use --numa-policy'),
            (BM, {'resources:VCPU': '8'}, 'contradicts'),
            (BM, {'resources:CUSTOM_BAREMETAL_GPU_H100': '2'},
             'contradicts'),
            (VG_ISO, {'trait:CUSTOM_GPU_POOL_WS_ISO': 'forbidden'},
             'contradicts'),
            (VG, {'trait:CUSTOM_GPU_POOL_OTHER': 'required'},
             'isolation trait'),
            (VG, {'group_policy': 'none'}, 'without a namespace'),
            (VG, {'hide_hypervisor_id': 'true'}, 'without a namespace'),
        ]
        for pool, props, message in cases:
            exc = self.assertRaises(exceptions.CommandError, specs.derive,
                                    pool, properties=props)
            self.assertIn(message, str(exc), props)

    def test_group_suffix_in_use(self):
        for props in ({'resources1:SRIOV_NET_VF': '1'},
                      {'trait2:HW_NIC_SRIOV': 'required'}):
            exc = self.assertRaises(exceptions.CommandError, specs.derive,
                                    VG, gpus=2, properties=props)
            self.assertIn('request group', str(exc))
        # another suffix is the operator's to use
        extra = specs.derive(VG, gpus=2, properties={
            'resources3:SRIOV_NET_VF': '1'})['extra_specs']
        self.assertEqual('1', extra['resources3:SRIOV_NET_VF'])
        # multi-vGPU: group_policy isolate given again is fine, none is not
        specs.derive(VG, gpus=2, properties={'group_policy': 'isolate'})
        error = self.assertRaises(exceptions.CommandError, specs.derive, VG,
                                  gpus=2, properties={'group_policy': 'none'})
        self.assertIn('--property group_policy=none contradicts',
                      str(error))


class TestValidateSpec(base.TestCase):
    def test_accepted(self):
        for key, value in [
            ('hw:cpu_policy', 'dedicated'), ('hw:numa_nodes', '2'),
            ('hw:numa_cpus.0', '0-3'), ('hw:numa_mem.1', '2048'),
            ('hw:mem_page_size', '2MB'), ('hw:hide_hypervisor_id', 'True'),
            ('hw:pci_numa_affinity_policy', 'socket'),
            ('hw_rng:allowed', 'yes'), ('hw_video:ram_max_mb', '64'),
            ('os:secure_boot', 'required'), ('quota:disk_read_iops_sec', '5'),
            ('quota:cpu_quota', '-1'),
            ('pci_passthrough:alias', 'a:1, b:2'),
            ('accel:device_profile', 'gpu-dp'),
            ('resources:VGPU', '1'), ('resources_a-b:CUSTOM_X', '0'),
            ('trait:HW_CPU_X86_AVX2', 'forbidden'),
            ('trait1:CUSTOM_FOO', 'required'),
            ('aggregate_instance_extra_specs:ssd', '<in> true'),
            ('group_policy', 'none'), ('capabilities:foo', 'bar'),
            ('vmware:whatever', 'x'), ('custom:thing', 'x'),
        ]:
            specs.validate_spec(key, value)

    def test_rejected(self):
        for key, value, message in [
            ('hw:hide_hypervisor', 'true', 'does not know'),
            ('hw:machine_type', 'q35', 'belong on the image'),
            ('hw:cpu_policy', 'pinned', 'one of dedicated'),
            ('hw:numa_nodes', '0', 'at least 1'),
            ('hw:numa_nodes', 'two', 'at least 1'),
            ('hw:redirected_usb_ports', '16', 'from 0 to 15'),
            ('hw:boot_menu', 'maybe', 'boolean'),
            ('hw:mem_page_size', 'huge', 'of the form'),
            ('hw:numa_cpus.0', 'a-b', 'of the form'),
            ('hw:pci_numa_affinity_policy', 'strict', 'one of'),
            ('os:secure_boot', 'optional', 'one of'),
            ('os:whatever', 'x', 'does not know'),
            ('pci_passthrough:alias', 'h100', 'of the form'),
            ('pci_passthrough:aliases', 'h100:1', 'does not know'),
            ('resources:VGPU', 'one', 'integer'),
            ('resources:VGPU', '-1', 'at least 0'),
            ('resources:vgpu', '1', 'not a resource class'),
            ('resources:FOO', '1', 'not a resource class'),
            ('resources1:CUSTOM_foo', '1', 'not a resource class'),
            ('resources 1:VGPU', '1', 'group suffix'),
            ('trait:CUSTOM_X', 'yes', 'required or forbidden'),
            ('trait:custom-x', 'required', 'not a trait name'),
            ('group_policy', 'strict', 'isolate, none'),
            ('aggregate_instance_extra_specs:', 'x', 'no metadata key'),
            ('accel:profile', 'x', 'does not know'),
        ]:
            exc = self.assertRaises(exceptions.CommandError,
                                    specs.validate_spec, key, value)
            self.assertIn(message, str(exc), (key, value))


class TestAggregateChanges(base.TestCase):
    def test_changes(self):
        self.assertEqual({'group_policy': 'isolate'},
                         specs.aggregate_changes(VG, {'group_policy':
                                                      'isolate'}))
        pool = dict(VG, metadata=dict(VG['metadata'],
                                      group_policy='none,isolate'))
        self.assertEqual({}, specs.aggregate_changes(
            pool, {'group_policy': 'isolate'}))
        pool = dict(VG, metadata=dict(VG['metadata'], group_policy='none'))
        exc = self.assertRaises(exceptions.CommandError,
                                specs.aggregate_changes, pool,
                                {'group_policy': 'isolate'})
        self.assertIn('group_policy=none', str(exc))


def reading(**fields):
    result = {
        'pool': None, 'steering': {}, 'mode': None, 'gpus': 0,
        'resources': {}, 'traits': {}, 'aliases': {}, 'gpu_classes': {},
        'device_profile': None, 'numa_policy': None, 'group_policy': None,
        'patterns': [], 'is_gpu': True,
    }
    result.update(fields)
    return result


class TestRead(base.TestCase):
    def test_seed_h100(self):
        self.assertEqual(reading(
            steering={'gpu': 'true'}, mode='passthrough', gpus=1,
            aliases={'h100': 1}, numa_policy='preferred',
            patterns=['pci-alias'],
        ), specs.read(SEED_H100))

    def test_seed_vgpu(self):
        self.assertEqual(reading(
            steering={'gpu': 'true'}, mode='vgpu', gpus=1,
            resources={'': {'VGPU': 1}}, gpu_classes={'VGPU': 1},
            patterns=['vgpu'],
        ), specs.read(SEED_VGPU))

    def test_patterns(self):
        cases = [
            # (extra specs, pools?, expected subset)
            ({'pci_passthrough:alias': 'a100:1,h100:2'}, None,
             dict(mode='passthrough', gpus=3, aliases={'a100': 1, 'h100': 2},
                  patterns=['pci-alias'])),
            ({'resources1:VGPU': '1', 'resources2:VGPU': '1',
              'group_policy': 'isolate'}, None,
             dict(mode='vgpu', gpus=2, patterns=['vgpu-groups'],
                  group_policy='isolate')),
            ({'resources:VGPU': '1', 'trait:CUSTOM_MIG_1G_10GB': 'required'},
             None, dict(mode='mig', gpus=1, patterns=['vgpu'])),
            ({'resources:PGPU': '2'}, None,
             dict(mode='passthrough', gpus=2, patterns=['gpu-class'])),
            ({'resources:CUSTOM_PCI_10DE_2331': '1'}, None,
             dict(mode='passthrough', gpus=1, patterns=['gpu-class'])),
            ({'resources:CUSTOM_VGPU_NVIDIA_36': '1'}, None,
             dict(mode=None, gpus=1, patterns=['gpu-class'])),
            ({'resources:CUSTOM_VGPU_NVIDIA_36': '1'}, POOLS,
             dict(mode='vgpu', gpus=1, patterns=['gpu-class'])),
            ({'resources:CUSTOM_BAREMETAL_GPU_H100': '1',
              'resources:VCPU': '0', 'resources:MEMORY_MB': '0',
              'resources:DISK_GB': '0'}, None,
             dict(mode='baremetal', gpus=1, patterns=['baremetal'])),
            # a bare-metal class without GPU in its name: a pool's class
            ({'resources:CUSTOM_BM_LARGE': '1', 'resources:VCPU': '0',
              STEER: 'bm2'},
             {'bm2': dict(BM, name='bm2',
                          resource_class='CUSTOM_BM_LARGE')},
             dict(mode='baremetal', gpus=1, patterns=['baremetal'],
                  pool='bm2')),
            ({'accel:device_profile': 'gpu-dp'}, None,
             dict(mode='cyborg', gpus=None, patterns=['device-profile'],
                  device_profile='gpu-dp')),
            ({STEER: 'ws', 'resources:VGPU': '1'}, POOLS,
             dict(mode='vgpu', pool='ws', gpus=1)),
            ({STEER: 's== mig', 'resources:VGPU': '1'}, POOLS,
             dict(mode='mig', pool='mig')),
        ]
        for extra, pools_, expected in cases:
            got = specs.read(extra, pools_)
            self.assertTrue(got['is_gpu'], extra)
            for field, value in expected.items():
                self.assertEqual(value, got[field], (extra, field))

    def test_not_gpu(self):
        for extra in ({}, {'hw:cpu_policy': 'dedicated'},
                      {'resources:VCPU': '0', 'resources:CUSTOM_BM': '1'},
                      {'aggregate_instance_extra_specs:ssd': 'true'},
                      {'resources:SRIOV_NET_VF': '1'}):
            self.assertFalse(specs.read(extra)['is_gpu'], extra)

    def test_round_trip(self):
        """What derive writes, read gives back."""
        for pool, gpus in ((PT, 2), (VG, 1), (VG_ISO, 3), (VG_CLASS, 2),
                           (MIG, 1), (BM, 1)):
            extra = specs.derive(pool, gpus=gpus)['extra_specs']
            got = specs.read(extra, POOLS)
            self.assertEqual(
                (pool['name'], pool['mode'], gpus),
                (got['pool'], got['mode'], got['gpus']))
            got = specs.read(extra)  # without knowing the pools
            self.assertEqual(pool['name'], got['pool'])
            self.assertEqual(gpus, got['gpus'], pool['name'])

    def test_request_text(self):
        extra = specs.derive(VG_ISO, gpus=2)['extra_specs']
        self.assertEqual({
            '(unnumbered)': 'CUSTOM_GPU_POOL_WS_ISO',
            '1': 'VGPU=1, CUSTOM_NVIDIA_35',
            '2': 'VGPU=1, CUSTOM_NVIDIA_35',
        }, specs.request_text(specs.read(extra)))
        self.assertEqual(
            {'pci_passthrough:alias': 'h100:1'},
            specs.request_text(specs.read(SEED_H100)))

    def test_matching_pools(self):
        pool = dict(VG, metadata=dict(VG['metadata'], gpu='true'))
        pools_ = {'ws': pool, 'solver': PT}
        self.assertEqual(['ws'], specs.matching_pools(
            specs.read(SEED_VGPU), pools_))
        self.assertEqual(['solver'], specs.matching_pools(
            specs.read(specs.derive(PT)['extra_specs']), pools_))

    def test_problems(self):
        # group_policy on the flavor, not on the aggregate: never schedules
        extra = specs.derive(VG, gpus=2)['extra_specs']
        found = specs.problems(extra, specs.read(extra, POOLS), POOLS)
        self.assertEqual(1, len(found))
        self.assertIn('lacks it', found[0])
        fixed = dict(POOLS, ws=dict(VG, metadata=dict(
            VG['metadata'], group_policy='isolate')))
        self.assertEqual([], specs.problems(
            extra, specs.read(extra, fixed), fixed))
        # unknown pool, numbered groups without a policy, NUMA
        extra = {STEER: 'gone', 'resources1:VGPU': '1',
                 'resources2:VGPU': '1'}
        found = specs.problems(extra, specs.read(extra, POOLS), POOLS)
        self.assertEqual(2, len(found))
        found = specs.problems(SEED_H100, specs.read(SEED_H100), {})
        self.assertIn('NUMA topology', found[0])


class TestDifferences(base.TestCase):
    def test_differences(self):
        wanted = {'vcpus': 8, 'ram': 1024, 'disk': 10, 'ephemeral': 0,
                  'swap': 0, 'is_public': False, 'description': None,
                  'extra_specs': {'resources:VGPU': '1'},
                  'projects': ['p1']}
        self.assertEqual([], specs.flavor_differences(wanted, dict(
            wanted, description='')))
        existing = dict(wanted, vcpus=4, extra_specs={'resources:VGPU': '2',
                                                      'x:y': 'z'},
                        projects=[])
        found = specs.flavor_differences(wanted, existing)
        self.assertEqual([
            ('vcpus', 8, 4), ('resources:VGPU', '1', '2'), ('x:y', None, 'z'),
            ('projects', 'p1', ''),
        ], found)
        self.assertEqual(
            'vcpus: 8 (existing 4); resources:VGPU: 1 (existing 2); '
            'x:y: - (existing z); projects: p1 (existing )',
            specs.describe_differences(found))

    def test_sizes(self):
        specs.check_sizes(1, 1, 0, 0, 0)
        for args, flag in (((0, 1, 0), '--vcpus'), ((1, -5, 0), '--ram'),
                           ((1, 1, -1), '--disk'),
                           ((1, 1, 0, -1), '--ephemeral'),
                           ((1, 1, 0, 0, -2), '--swap')):
            exc = self.assertRaises(exceptions.CommandError,
                                    specs.check_sizes, *args)
            self.assertIn(flag, str(exc))


class TestBounds(base.TestCase):
    """No option or extra spec builds an enormous request (issue 9)."""

    def test_gpus_bounds(self):
        self.assertEqual(1, specs.check_gpus(None))
        self.assertEqual(64, specs.check_gpus(64))
        for gpus in (0, -3):
            self.assertRaisesRegex(exceptions.CommandError,
                                   r'--gpus must be at least 1 \(got %d\)'
                                   % gpus, specs.check_gpus, gpus)
        for gpus in (65, 20000):
            self.assertRaisesRegex(
                exceptions.CommandError,
                '--gpus %d: at most 64 GPUs per instance .* Give --gpus '
                'from 1 to 64' % gpus, specs.check_gpus, gpus)

    def test_derive_at_the_bound(self):
        extra = specs.derive(PT, gpus=64)['extra_specs']
        self.assertEqual('h100:64', extra['pci_passthrough:alias'])
        extra = specs.derive(VG, gpus=64)['extra_specs']
        self.assertEqual('1', extra['resources64:VGPU'])
        self.assertEqual(64, len([k for k in extra
                                  if k.startswith('resources')]))

    def test_derive_refuses_too_many_gpus_for_every_mode(self):
        for pool in (PT, VG, VG_CLASS, MIG, BM):
            exc = self.assertRaises(exceptions.CommandError, specs.derive,
                                    pool, gpus=20000)
            self.assertIn('--gpus 20000: at most 64 GPUs per instance',
                          str(exc), pool['name'])
            self.assertIn('Give --gpus from 1 to 64', str(exc))

    def test_alias_count_summed(self):
        self.assertEqual(3, specs.alias_count('a:1, b:2'))
        self.assertEqual(64, specs.alias_count('a:32,a:32'))
        specs.validate_spec('pci_passthrough:alias', 'h100:64')
        specs.validate_spec('pci_passthrough:alias', 'a:32, b:32')
        for value, total in (('h100:1000000000', 1000000000),
                             ('h100:65', 65), ('a:40, b:40', 80),
                             ('a:33,a:32', 65)):
            exc = self.assertRaises(exceptions.CommandError,
                                    specs.validate_spec,
                                    'pci_passthrough:alias', value)
            message = str(exc)
            self.assertIn('asks for %d PCI devices' % total, message)
            self.assertIn('at most 64 GPUs per instance', message)
            self.assertIn('add up to 64 or less', message)

    def test_resource_amounts(self):
        specs.validate_spec('resources:VGPU', '64')
        specs.validate_spec('resources:MEMORY_MB', '2147483647')
        exc = self.assertRaises(exceptions.CommandError, specs.validate_spec,
                                'resources:MEMORY_MB', '2147483648')
        self.assertIn('Placement takes amounts up to 2147483647',
                      str(exc))
        for key in ('resources:VGPU', 'resources3:PGPU',
                    'resources:CUSTOM_PCI_10DE_2331',
                    'resources:CUSTOM_BAREMETAL_GPU_H100'):
            exc = self.assertRaises(exceptions.CommandError,
                                    specs.validate_spec, key, '200000')
            self.assertIn('%s=200000: at most 64 GPUs per instance' % key,
                          str(exc))
            self.assertIn('Give an amount from 1 to 64', str(exc))

    def test_name_lengths(self):
        long_class = 'CUSTOM_' + 'X' * 249
        exc = self.assertRaises(exceptions.CommandError, specs.validate_spec,
                                'resources:' + long_class, '1')
        self.assertIn('at most 255 characters', str(exc))
        specs.validate_spec('resources:' + long_class[:-1], '1')

    def test_trait_names_in_properties(self):
        for name in ('CUSTOM_', 'custom_x', 'CUSTOM_x', 'HW-CPU',
                     'CUSTOM_' + 'X' * 249, 'hw_cpu_x86_avx2'):
            exc = self.assertRaises(exceptions.CommandError, specs.derive,
                                    VG, properties={'trait:' + name:
                                                    'required'})
            self.assertIn('%s is not a trait name' % name, str(exc))
            self.assertIn('custom traits are CUSTOM_ followed by', str(exc))
        extra = specs.derive(VG, properties={
            'trait:HW_CPU_X86_AVX2': 'required',
            'trait9:CUSTOM_FAST_NIC': 'forbidden'})['extra_specs']
        self.assertEqual('required', extra['trait:HW_CPU_X86_AVX2'])
        self.assertEqual('forbidden', extra['trait9:CUSTOM_FAST_NIC'])

    def test_resource_amounts_in_properties(self):
        exc = self.assertRaises(exceptions.CommandError, specs.derive, PT,
                                properties={'resources:MEMORY_MB':
                                            str(10 ** 12)})
        self.assertIn('Placement takes amounts up to 2147483647', str(exc))

    def test_reading_a_huge_flavor_is_a_problem_not_an_error(self):
        # flavor list and show must still show hand-made flavors
        extra = {'pci_passthrough:alias': 'h100:1000000000'}
        result = specs.read(extra)
        self.assertEqual(1000000000, result['gpus'])
        found = specs.problems(extra, result, {})
        self.assertEqual(1, len(found))
        self.assertIn('asks for 1000000000 GPUs per instance, more than '
                      'the 64 gpuclient allows',
                      found[0])
        extra = {'pci_passthrough:alias': 'h100:64'}
        self.assertEqual([], specs.problems(extra, specs.read(extra), {}))
