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

"""gpuclient.rules.scheduler.resource_request: the translation, table-driven,
on plain dicts.

The expected queries are the ones Nova 34 sends (checked by
test_resource_request_nova against Nova's own code where Nova is
importable).
"""

from osc_lib import exceptions

from gpuclient.rules import pools as pools_mod
from gpuclient.rules import specs
from gpuclient.rules.scheduler import conf as nova_conf
from gpuclient.rules.scheduler import resource_request as request
from gpuclient.tests.unit import base

ROOT = ('root_required', 'OWNER_NOVA,!COMPUTE_STATUS_DISABLED')
LIMIT = ('limit', '1000')
SIZE = 'DISK_GB:20,MEMORY_MB:8192,VCPU:4'
PCI = 'CUSTOM_PCI_10DE_2331'


def flavor(vcpus=4, ram=8192, disk=20, ephemeral=0, swap=0, **extra):
    return {'vcpus': vcpus, 'ram': ram, 'disk': disk,
            'OS-FLV-EXT-DATA:ephemeral': ephemeral, 'swap': swap,
            'extra_specs': extra}


def pool(name, mode, isolate=False, projects=(), **kwargs):
    spec = pools_mod.build_spec(name, mode, isolate=isolate,
                                projects=projects, **kwargs)
    aggregate = {'name': name, 'id': 7, 'uuid': 'uuid-' + name,
                 'hosts': ['host-' + name], 'availability_zone': None,
                 'metadata': pools_mod.metadata_for(spec)}
    return pools_mod.pool_from_aggregate(aggregate), aggregate


PT, PT_AGG = pool('solver', 'passthrough', isolate=True, alias='h100',
                  pci_id='10de:2331')
VG, VG_AGG = pool('render', 'vgpu', vgpu_type='nvidia-35',
                  projects=['p1'])
MIG, MIG_AGG = pool('slices', 'mig', isolate=True, mig_profile='3g.40gb')
BM, BM_AGG = pool('metal', 'baremetal', resource_class='baremetal.gpu-h100')
POOLS = {p['name']: p for p in (PT, VG, MIG, BM)}
AGGS = [PT_AGG, VG_AGG, MIG_AGG, BM_AGG]
SEED_H100 = flavor(**{'pci_passthrough:alias': 'h100:1',
                      'aggregate_instance_extra_specs:gpu': 'true',
                      'hw:pci_numa_affinity_policy': 'preferred'})
SEED_VGPU = flavor(**{'resources:VGPU': '1',
                      'aggregate_instance_extra_specs:gpu': 'true'})


def derived(the_pool, gpus=1, **sizes):
    return flavor(**sizes, **specs.derive(the_pool, gpus=gpus)[
        'extra_specs'])


def pci(n, alias='h100'):
    suffix = 'pci-%s-%d' % (alias, n)
    return [('required' + suffix, 'OWNER_NOVA'),
            ('resources' + suffix, PCI + ':1')]


# (name, flavor, image, build kwargs, expected params without limit/root)
CASES = [
    ('seed g1.h100.1', SEED_H100, {}, {},
     pci(0) + [('resources', SIZE)]),
    ('seed g1.vgpu.1', SEED_VGPU, {}, {},
     [('resources', SIZE + ',VGPU:1')]),
    ('seed h100 next to isolated pools', SEED_H100, {},
     {'aggregates': AGGS},
     [('member_of', '!in:uuid-slices,uuid-solver')] + pci(0)
     + [('resources', SIZE)]),
    ('passthrough pool', derived(PT), {}, {'aggregates': AGGS},
     [('member_of', '!in:uuid-slices'), ('required', 'CUSTOM_GPU_POOL_SOLVER')]
     + pci(0) + [('resources', SIZE)]),
    ('passthrough pool, 2 GPUs: group_policy none', derived(PT, gpus=2), {},
     {'aggregates': AGGS},
     [('group_policy', 'none'), ('member_of', '!in:uuid-slices'),
      ('required', 'CUSTOM_GPU_POOL_SOLVER')] + pci(0) + pci(1)
     + [('resources', SIZE)]),
    ('vgpu pool', derived(VG), {}, {'aggregates': AGGS},
     [('member_of', '!in:uuid-slices,uuid-solver'),
      ('required', 'CUSTOM_NVIDIA_35'), ('resources', SIZE + ',VGPU:1')]),
    ('vgpu pool, 2 vGPUs: granular', derived(VG, gpus=2), {},
     {'aggregates': AGGS},
     [('group_policy', 'isolate'),
      ('member_of', '!in:uuid-slices,uuid-solver'),
      ('required1', 'CUSTOM_NVIDIA_35'), ('required2', 'CUSTOM_NVIDIA_35'),
      ('resources', SIZE), ('resources1', 'VGPU:1'),
      ('resources2', 'VGPU:1')]),
    ('mig pool', derived(MIG), {}, {'aggregates': AGGS},
     [('member_of', '!in:uuid-solver'),
      ('required', 'CUSTOM_GPU_POOL_SLICES,CUSTOM_MIG_3G_40GB'),
      ('resources', SIZE + ',VGPU:1')]),
    ('baremetal pool: sizes zeroed', derived(BM, vcpus=8), {},
     {'aggregates': AGGS},
     [('member_of', '!in:uuid-slices,uuid-solver'),
      ('resources', 'CUSTOM_BAREMETAL_GPU_H100:1')]),
    ('PCPU', flavor(**{'hw:cpu_policy': 'dedicated'}), {}, {},
     [('resources', 'DISK_GB:20,MEMORY_MB:8192,PCPU:4')]),
    ('boot from volume: no root disk', flavor(ephemeral=5, swap=1025), {},
     {'boot_from_volume': True},
     [('resources', 'DISK_GB:7,MEMORY_MB:8192,VCPU:4')]),
    ('swap rounded up to GB', flavor(ephemeral=5, swap=1025), {}, {},
     [('resources', 'DISK_GB:27,MEMORY_MB:8192,VCPU:4')]),
    ('image traits let a flavor into an isolated pool', SEED_VGPU,
     {'trait:CUSTOM_GPU_POOL_SOLVER': 'required', 'hw_disk_bus': 'scsi'},
     {'aggregates': AGGS},
     [('member_of', '!in:uuid-slices'),
      ('required', 'CUSTOM_GPU_POOL_SOLVER'),
      ('resources', SIZE + ',VGPU:1')]),
    ('secure boot from the image', flavor(),
     {'os_secure_boot': 'required', 'hw_firmware_type': 'uefi'}, {},
     [('required', 'COMPUTE_SECURITY_UEFI_SECURE_BOOT'),
      ('resources', SIZE)]),
    ('socket NUMA policy', flavor(**{
        'pci_passthrough:alias': 'h100:1',
        'hw:pci_numa_affinity_policy': 'socket'}), {}, {},
     pci(0) + [('required', 'COMPUTE_SOCKET_PCI_NUMA_AFFINITY'),
               ('resources', SIZE)]),
    ('availability zone', SEED_VGPU, {},
     {'aggregates': [{'name': 'z', 'uuid': 'uuid-z', 'hosts': [],
                      'metadata': {'availability_zone': 'az1'}}],
      'zone': 'az1'},
     [('member_of', 'in:uuid-z'), ('resources', SIZE + ',VGPU:1')]),
]


class TestBuild(base.TestCase):
    def setUp(self):
        super().setUp()
        self.settings = nova_conf.load_settings()

    def test_cases(self):
        for name, the_flavor, image, kwargs, expected in CASES:
            query = request.build(the_flavor, image, self.settings,
                                  pools=POOLS, **kwargs)
            want = sorted(expected + [LIMIT, ROOT])
            self.assertEqual(want, request.query_params(query), name)

    def test_querystring_is_urlencoded_and_sorted(self):
        query = request.build(SEED_VGPU, {}, self.settings)
        self.assertEqual(
            'limit=1000&resources=DISK_GB%3A20%2CMEMORY_MB%3A8192%2CVCPU%3A4'
            '%2CVGPU%3A1&root_required=OWNER_NOVA%2C%21COMPUTE_STATUS_'
            'DISABLED', request.querystring(query))

    def test_isolated_aggregates_named(self):
        query = request.build(SEED_VGPU, {}, self.settings, aggregates=AGGS)
        self.assertEqual(
            [('slices', ['CUSTOM_GPU_POOL_SLICES']),
             ('solver', ['CUSTOM_GPU_POOL_SOLVER'])],
            sorted((a['aggregate'], a['traits'])
                   for a in query['isolated']))

    def test_isolation_off(self):
        settings = nova_conf.load_settings(
            overrides={'enable_isolated_aggregate_filtering': 'false'})
        query = request.build(SEED_VGPU, {}, settings, aggregates=AGGS)
        self.assertNotIn('member_of', dict(request.query_params(query)))

    def test_unknown_alias_says_what_to_do(self):
        exc = self.assertRaises(
            exceptions.CommandError, request.build,
            flavor(**{'pci_passthrough:alias': 'a100:1'}), {}, self.settings)
        self.assertIn('--alias-map a100=VENDOR:PRODUCT', str(exc))

    def test_alias_map_option_beats_pool(self):
        settings = nova_conf.load_settings(alias_maps=['h100=CUSTOM_H100'])
        query = request.build(SEED_H100, {}, settings, pools=POOLS)
        self.assertEqual({'CUSTOM_H100': 1},
                         query['groups']['pci-h100-0']['resources'])

    def test_pci_not_in_placement(self):
        settings = nova_conf.load_settings(
            overrides={'pci_in_placement': 'no'})
        query = request.build(SEED_H100, {}, settings)
        self.assertEqual([''], list(query['groups']))
        self.assertIn('pci_in_placement', query['not_covered'][0])

    def test_config_file(self):
        conf = ('[scheduler]\nmax_placement_results = 5\n'
                'enable_isolated_aggregate_filtering = False\n'
                '[filter_scheduler]\nenabled_filters = ComputeFilter\n'
                '[pci]\nalias = {"name": "a", "vendor_id": "10de", '
                '"product_id": "20b5"}\n'
                'alias = {"name": "b", "resource_class": "gpu_b", '
                '"traits": "fast,CUSTOM_X"}\n')
        settings = nova_conf.load_settings(conf)
        self.assertEqual(5, settings['max_placement_results'])
        self.assertFalse(settings['enable_isolated_aggregate_filtering'])
        self.assertEqual(('ComputeFilter',), settings['enabled_filters'])
        self.assertEqual('CUSTOM_PCI_10DE_20B5',
                         settings['aliases']['a']['resource_class'])
        self.assertEqual({'resource_class': 'CUSTOM_GPU_B',
                          'traits': {'CUSTOM_FAST', 'CUSTOM_X'},
                          'source': 'config', 'numa_policy': 'legacy'},
                         settings['aliases']['b'])
        # the file sets three settings and not pci_in_placement
        self.assertEqual(
            {'max_placement_results': 'config',
             'enable_isolated_aggregate_filtering': 'config',
             'enabled_filters': 'config', 'pci_in_placement': 'default'},
            {key: settings['sources'][key] for key in (
                'max_placement_results',
                'enable_isolated_aggregate_filtering', 'enabled_filters',
                'pci_in_placement')})

    def test_bad_settings(self):
        error = self.assertRaises(exceptions.CommandError,
                                  nova_conf.load_settings,
                                  overrides={'nope': '1'})
        self.assertIn('Unknown setting nope', str(error))
        error = self.assertRaises(exceptions.CommandError,
                                  nova_conf.load_settings,
                                  overrides={'max_placement_results': '0'})
        self.assertIn('max_placement_results=0: give a positive integer',
                      str(error))
        error = self.assertRaises(exceptions.CommandError,
                                  nova_conf.load_settings, alias_maps=['h100'])
        self.assertIn("--alias-map 'h100': give ALIAS=VENDOR:PRODUCT",
                      str(error))
        # as --alias-map parses it: {alias: target}
        error = self.assertRaises(exceptions.CommandError,
                                  nova_conf.load_settings,
                                  alias_maps={'h100': ' '})
        self.assertIn("--alias-map 'h100=': give ALIAS=VENDOR:PRODUCT",
                      str(error))

    def test_alias_map_option_as_parsed(self):
        settings = nova_conf.load_settings(
            alias_maps={'h100': '10de:2331', 'a100': 'custom_a100'})
        self.assertEqual(
            {'h100': 'CUSTOM_PCI_10DE_2331', 'a100': 'CUSTOM_A100'},
            {name: alias['resource_class']
             for name, alias in settings['aliases'].items()})

    def test_tenant_aggregates_required(self):
        settings = nova_conf.load_settings(overrides={
            'limit_tenants_to_placement_aggregate': 'true',
            'placement_aggregate_required_for_tenants': 'true'})
        query = request.build(SEED_VGPU, {}, settings, aggregates=AGGS,
                              project_id='p1')
        self.assertIn(('member_of', 'in:uuid-render'),
                      request.query_params(query))
        error = self.assertRaises(exceptions.CommandError, request.build,
                                  SEED_VGPU, {}, settings, aggregates=AGGS,
                                  project_id='p2')
        self.assertIn('Project p2 is in no aggregate', str(error))
        self.assertIn('No hosts available for tenant', str(error))

    def test_flavor_image_conflict(self):
        error = self.assertRaises(
            exceptions.CommandError, request.build,
            flavor(**{'os:secure_boot': 'required'}),
            {'os_secure_boot': 'disabled'}, self.settings)
        self.assertIn('os:secure_boot=required and the image '
                      'os_secure_boot=disabled', str(error))

    def test_mem_encryption_without_image_says_what_it_needs(self):
        query = request.build(flavor(**{
            'hw:mem_encryption': 'true',
            'hw:mem_encryption_model': 'intel-tdx'}), {}, self.settings)
        self.assertEqual(1, query['groups']['']['resources'][
            'MEM_ENCRYPTION_CONTEXT'])
        self.assertIn('HW_CPU_X86_INTEL_TDX', query['groups']['']['required'])
        note = [n for n in query['notes'] if 'intel-tdx' in n]
        self.assertEqual(1, len(note), query['notes'])
        for fix in ('hw_firmware_type=uefi', 'hw_firmware_stateless=true',
                    'hw_video_model=none'):
            self.assertIn(fix, note[0])

    def test_mem_encryption_image_nova_refuses(self):
        error = self.assertRaises(
            exceptions.CommandError, request.build,
            flavor(**{'hw:mem_encryption': 'true',
                      'hw:mem_encryption_model': 'amd-sev-snp'}),
            {'hw_firmware_type': 'uefi', 'hw_machine_type': 'pc'},
            self.settings)
        self.assertIn('hw_machine_type=q35', str(error))
        self.assertIn('hw_firmware_stateless=true', str(error))

    def test_mem_encryption_unknown_model(self):
        error = self.assertRaises(
            exceptions.CommandError, request.build,
            flavor(**{'hw:mem_encryption': 'true',
                      'hw:mem_encryption_model': 'arm-cca'}), {},
            self.settings)
        self.assertIn('amd-sev, amd-sev-es, amd-sev-snp, intel-tdx',
                      str(error))

    def test_notes_for_what_nova_ignores(self):
        query = request.build(flavor(**{
            'resources:NOT_A_CLASS': '1', 'resources:VGPU': '-1',
            'trait:X': 'preferred', 'group_policy': 'sometimes'}), {},
            self.settings)
        self.assertEqual(4, len(query['notes']))


class TestFromResources(base.TestCase):
    def test_per_device_classes_expand(self):
        query = request.from_resources(
            [(PCI, 2), ('VCPU', 1), ('CUSTOM_BAREMETAL_GPU_H100', 1)],
            required=['CUSTOM_X', '!CUSTOM_Y'])
        params = request.query_params(query)
        self.assertIn(('group_policy', 'none'), params)
        self.assertIn(('resources', 'CUSTOM_BAREMETAL_GPU_H100:1,VCPU:1'),
                      params)
        self.assertIn(('required', 'CUSTOM_X,!CUSTOM_Y'), params)
        numbered = [v for k, v in params
                    if k.startswith('resourcesdev-')]
        self.assertEqual([PCI + ':1', PCI + ':1'], numbered)
        self.assertEqual([PCI, 'CUSTOM_BAREMETAL_GPU_H100'],
                         request.gpu_classes(query))

    def test_vgpu_one_device(self):
        query = request.from_resources([('VGPU', 1)])
        self.assertEqual(
            [LIMIT, ('resourcesdev-vgpu-0', 'VGPU:1'), ROOT],
            request.query_params(query))

    def test_device_classes_alone_beside_an_isolated_pool_refused(self):
        # Placement answers 400 to an unsuffixed group without resources;
        # the isolated-aggregate prefilter puts member_of=!in: there
        exc = self.assertRaises(
            exceptions.CommandError, request.from_resources, [('VGPU', 1)],
            settings=nova_conf.load_settings(), aggregates=AGGS)
        self.assertIn('--resource VCPU=1', str(exc))
        query = request.from_resources([('VGPU', 1), ('VCPU', 1)],
                                       settings=nova_conf.load_settings(),
                                       aggregates=AGGS)
        params = dict(request.query_params(query))
        self.assertEqual('VCPU:1', params['resources'])
        self.assertTrue(params['member_of'].startswith('!in:'))

    def test_pool_class_is_per_device(self):
        pools = {'p': {'name': 'p', 'mode': 'vgpu',
                       'resource_class': 'CUSTOM_NVIDIA_35'}}
        self.assertTrue(request.is_per_device('CUSTOM_NVIDIA_35', pools))
        self.assertFalse(request.is_per_device('CUSTOM_BAREMETAL_X', pools))


class TestBounds(base.TestCase):
    """No flavor or --resource builds an enormous request (issue 9)."""

    def setUp(self):
        super().setUp()
        self.settings = nova_conf.load_settings()

    def test_alias_count_at_the_bound(self):
        query = request.build(flavor(**{'pci_passthrough:alias': 'h100:64'}),
                              {}, self.settings, pools=POOLS)
        self.assertEqual(64, len([s for s in query['groups']
                                  if s.startswith('pci-')]))

    def test_alias_count_refused_before_any_group(self):
        for value, total in (('h100:1000000000', 1000000000),
                             ('h100:65', 65), ('h100:40, h100:40', 80)):
            exc = self.assertRaises(
                exceptions.CommandError, request.build,
                flavor(**{'pci_passthrough:alias': value}), {},
                self.settings, pools=POOLS)
            message = str(exc)
            self.assertIn('asks for %d PCI devices' % total, message)
            self.assertIn('at most 64 GPUs per instance', message)
            self.assertIn("Fix the flavor's pci_passthrough:alias", message)

    def test_alias_count_refused_without_pci_in_placement(self):
        settings = nova_conf.load_settings(
            overrides={'pci_in_placement': 'no'})
        self.assertRaisesRegex(
            exceptions.CommandError, 'asks for 1000 PCI devices',
            request.build, flavor(**{'pci_passthrough:alias': 'h100:1000'}),
            {}, settings)

    def test_per_device_groups_at_the_bound(self):
        query = request.from_resources([('VGPU', 32), (PCI, 32)])
        self.assertEqual(64, len([s for s in query['groups'] if s]))

    def test_resources_refused(self):
        cases = [
            ([('VGPU', 200000)], '--resource VGPU=200000: VGPU is a GPU '
             'class and an instance has at most 64 GPUs'),
            ([(PCI, 65)], 'at most 64 GPUs'),
            ([('CUSTOM_BAREMETAL_GPU_H100', 100)], 'at most 64 GPUs'),
            ([('VGPU', 40), (PCI, 40)],
             '--resource: 80 devices of per-device classes'),
            ([('VGPU', 40), ('VGPU', 40)],
             '--resource: 80 devices of per-device classes'),
            ([('MEMORY_MB', 2147483648)],
             '--resource MEMORY_MB=2147483648: Placement takes amounts up '
             'to 2147483647'),
        ]
        for resources, message in cases:
            exc = self.assertRaises(exceptions.CommandError,
                                    request.from_resources, resources)
            self.assertIn(message, str(exc), resources)
            self.assertRaisesRegex(exceptions.CommandError, 'at most|up to',
                                   request.check_resource_amounts,
                                   resources)

    def test_non_gpu_amounts_only_bounded_by_placement(self):
        query = request.from_resources([('MEMORY_MB', 2147483647),
                                        ('VCPU', 100000)])
        self.assertEqual({'MEMORY_MB': 2147483647, 'VCPU': 100000},
                         query['groups']['']['resources'])

    def test_pool_classes_counted_with_the_pools(self):
        pools = {'p': {'name': 'p', 'mode': 'vgpu',
                       'resource_class': 'CUSTOM_NVIDIA_35'}}
        # unknown to the name patterns: only the pools tell
        request.check_resource_amounts([('CUSTOM_NVIDIA_35', 100)])
        exc = self.assertRaises(exceptions.CommandError,
                                request.from_resources,
                                [('CUSTOM_NVIDIA_35', 100)], pools=pools)
        self.assertIn('CUSTOM_NVIDIA_35 is a GPU class', str(exc))
        exc = self.assertRaises(exceptions.CommandError,
                                request.from_resources,
                                [('CUSTOM_NVIDIA_35', 40), ('VGPU', 40)],
                                pools=pools)
        self.assertIn('80 devices of per-device classes', str(exc))

    def test_repeated_per_device_class_adds_devices(self):
        query = request.from_resources([('VGPU', 1), ('VGPU', 2)])
        self.assertEqual(['dev-vgpu-0', 'dev-vgpu-1', 'dev-vgpu-2'],
                         sorted(s for s in query['groups'] if s))
