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


"""gpuclient.rules.scheduler.resource_request against Nova's scheduler code.

The same flavors, images, aggregates and settings go to
``gpuclient.rules.scheduler.resource_request.build`` and to Nova's path
(``RequestSpec.from_components`` with PCI requests from the flavor,
``request_filter.process_reqspec``,
``utils.resources_from_request_spec``, ``ResourceRequest.to_querystring``).
Only Nova's database is faked (aggregate lookups by metadata, the minimum
compute service version), with the semantics of its SQL queries.
"""

import json
import re
import unittest
from unittest import mock
import urllib.parse
import uuid

from gpuclient.rules import pools as pools_mod
from gpuclient.rules import specs
from gpuclient.rules.scheduler import conf as nova_conf
from gpuclient.rules.scheduler import resource_request as request
from gpuclient.tests.unit import nova_harness

if nova_harness.HAVE_NOVA:
    with nova_harness.quiet():
        from nova import context as nova_context
        from nova import objects
        from nova.scheduler import request_filter as nova_request_filter

H100_ALIAS = {'name': 'h100', 'vendor_id': '10de', 'product_id': '2331',
              'device_type': 'type-PCI', 'numa_policy': 'preferred'}
A100_ALIAS = {'name': 'a100', 'vendor_id': '10de', 'product_id': '20b5',
              'device_type': 'type-PCI', 'resource_class': 'CUSTOM_A100',
              'traits': 'CUSTOM_HBM2E,nvlink'}
PROJECT = 'c0ffee00c0ffee00c0ffee00c0ffee00'


def _flavor(vcpus=4, ram=8192, disk=20, ephemeral=0, swap=0, **specs_):
    return {'vcpus': vcpus, 'ram': ram, 'disk': disk,
            'OS-FLV-EXT-DATA:ephemeral': ephemeral, 'swap': swap,
            'extra_specs': dict(specs_)}


def _pool(name, mode, isolate=False, **kwargs):
    spec = pools_mod.build_spec(name, mode, isolate=isolate,
                                       **kwargs)
    aggregate = {'name': name, 'id': 1, 'uuid': str(uuid.uuid5(
        uuid.NAMESPACE_URL, name)), 'hosts': ['h-' + name],
        'metadata': pools_mod.metadata_for(spec), 'availability_zone': None}
    return pools_mod.pool_from_aggregate(aggregate), aggregate


def _derived(pool, gpus=1, **sizes):
    return _flavor(**sizes, **specs.derive(pool, gpus=gpus)['extra_specs'])


def _cases():
    pt, pt_agg = _pool('solver', 'passthrough', isolate=True, alias='h100',
                       pci_id='10de:2331')
    vg, vg_agg = _pool('render', 'vgpu', vgpu_type='nvidia-35')
    mig, mig_agg = _pool('slices', 'mig', isolate=True,
                         mig_profile='3g.40gb')
    bm, bm_agg = _pool('metal', 'baremetal',
                       resource_class='baremetal.gpu-h100')
    pools = {p['name']: p for p in (pt, vg, mig, bm)}
    aggs = [pt_agg, vg_agg, mig_agg, bm_agg]
    tenant_agg = {'name': 'tenant', 'uuid': str(uuid.uuid4()),
                  'hosts': ['h-t'], 'availability_zone': None,
                  'metadata': {'filter_tenant_id': PROJECT}}
    az_agg = {'name': 'az1', 'uuid': str(uuid.uuid4()), 'hosts': ['h-z'],
              'availability_zone': 'az1',
              'metadata': {'availability_zone': 'az1'}}
    seed_h100 = _flavor(**{
        'pci_passthrough:alias': 'h100:1',
        'aggregate_instance_extra_specs:gpu': 'true',
        'hw:pci_numa_affinity_policy': 'preferred'})
    seed_vgpu = _flavor(**{'resources:VGPU': '1',
                           'aggregate_instance_extra_specs:gpu': 'true'})
    uefi = {'hw_machine_type': 'q35', 'hw_firmware_type': 'uefi'}
    return [
        # (name, flavor, image, kwargs for both)
        ('seed g1.h100.1', seed_h100, {}, {}),
        ('seed g1.vgpu.1', seed_vgpu, {}, {}),
        ('seed h100 isolated pools around', seed_h100, {},
         {'aggregates': aggs}),
        ('plain flavor, isolated pools', _flavor(), {},
         {'aggregates': aggs}),
        ('passthrough pool flavor', _derived(pt), {},
         {'aggregates': aggs, 'pools': pools}),
        ('passthrough pool, 4 GPUs', _derived(pt, gpus=4), {},
         {'aggregates': aggs, 'pools': pools}),
        ('vgpu pool flavor', _derived(vg), {},
         {'aggregates': aggs, 'pools': pools}),
        ('vgpu pool, 2 vGPUs (granular, isolate)', _derived(vg, gpus=2), {},
         {'aggregates': aggs, 'pools': pools}),
        ('mig pool flavor', _derived(mig), {},
         {'aggregates': aggs, 'pools': pools}),
        ('baremetal pool flavor', _derived(bm, vcpus=8, disk=100), {},
         {'aggregates': aggs, 'pools': pools}),
        ('multi-GPU PCI, two aliases',
         _flavor(**{'pci_passthrough:alias': 'h100:2, a100:1'}), {}, {}),
        ('PCPU', _flavor(**{'hw:cpu_policy': 'dedicated'}), {}, {}),
        ('PCPU, emulator threads, thread policy',
         _flavor(**{'hw:cpu_policy': 'dedicated',
                    'hw:emulator_threads_policy': 'isolate',
                    'hw:cpu_thread_policy': 'isolate'}), {}, {}),
        ('mixed CPUs', _flavor(vcpus=6, **{
            'hw:cpu_policy': 'mixed', 'hw:cpu_dedicated_mask': '^0-1'}),
         {}, {}),
        ('image cpu policy', _flavor(), {'hw_cpu_policy': 'dedicated',
                                         'hw_cpu_thread_policy': 'require'},
         {}),
        ('boot from volume', _flavor(ephemeral=10, swap=1500), {},
         {'boot_from_volume': True}),
        ('disk, ephemeral and swap', _flavor(ephemeral=10, swap=1500), {},
         {}),
        ('image traits', seed_vgpu,
         {'trait:CUSTOM_GPU_POOL_SOLVER': 'required',
          'trait:HW_CPU_X86_AVX2': 'required',
          'trait:CUSTOM_IGNORED': 'forbidden'}, {'aggregates': aggs}),
        ('granular groups with traits', _flavor(**{
            'resources1:VGPU': '1', 'trait1:CUSTOM_NVIDIA_35': 'required',
            'resources2:VGPU': '1', 'trait2:CUSTOM_NVIDIA_35': 'required',
            'trait2:CUSTOM_SLOW': 'forbidden', 'group_policy': 'isolate',
            'resources:VCPU': '2'}), {}, {}),
        ('overridden sizes', _flavor(**{
            'resources:VCPU': '0', 'resources:MEMORY_MB': '0',
            'resources:DISK_GB': '0',
            'resources:CUSTOM_BAREMETAL_GPU_H100': '1'}), {}, {}),
        ('secure boot and vTPM from the image', _flavor(),
         dict(uefi, os_secure_boot='required', hw_tpm_version='2.0',
              hw_tpm_model='tpm-crb'), {}),
        ('vTPM from the flavor, host secret', _flavor(**{
            'hw:tpm_version': '1.2', 'hw:tpm_secret_security': 'host'}),
         {}, {}),
        ('socket NUMA policy, packed ring, sound', _flavor(**{
            'pci_passthrough:alias': 'h100:1',
            'hw:pci_numa_affinity_policy': 'socket',
            'hw:virtio_packed_ring': 'true'}),
         {'hw_sound_model': 'virtio'}, {}),
        ('maxphysaddr and stateless firmware', _flavor(**{
            'hw:maxphysaddr_mode': 'emulate', 'hw:maxphysaddr_bits': '42'}),
         dict(uefi, hw_firmware_stateless='true'), {}),
        ('memory encryption', _flavor(**{'hw:mem_encryption': 'true'}),
         dict(uefi, hw_mem_encryption_model='amd-sev-es'), {}),
        ('persistent memory', _flavor(**{'hw:pmem': '4GB,4GB,small'}), {},
         {}),
        ('ephemeral encryption', _flavor(**{
            'hw:ephemeral_encryption': 'true',
            'hw:ephemeral_encryption_format': 'luks'}), {}, {}),
        ('availability zone', seed_vgpu, {},
         {'aggregates': aggs + [az_agg], 'zone': 'az1'}),
        ('zone without aggregate', seed_vgpu, {},
         {'aggregates': aggs, 'zone': 'nova'}),
        ('tenant aggregates', seed_vgpu, {},
         {'aggregates': aggs + [tenant_agg], 'project_id': PROJECT,
          'settings': {'limit_tenants_to_placement_aggregate': 'true'}}),
        ('image type and metadata prefilters', _flavor(),
         {'disk_format': 'qcow2', 'hw_disk_bus': 'virtio',
          'hw_video_model': 'virtio', 'hw_architecture': 'x86_64'},
         {'settings': {'query_placement_for_image_type_support': 'true',
                       'image_metadata_prefilter': 'true'}}),
        ('no isolation, no PCI in Placement, small limit', seed_h100, {},
         {'aggregates': aggs,
          'settings': {'enable_isolated_aggregate_filtering': 'false',
                       'pci_in_placement': 'false',
                       'max_placement_results': '7'}}),
        ('old computes: no OWNER_NOVA', seed_h100, {},
         {'settings': {'owner_nova': 'false'}}),
    ]


def _canonical(querystring):
    """Query -> comparable form; numbered group suffixes are anonymous.

    Nova names a PCI group ``<uuid4>-<n>``; gpuclient names it after the
    alias. Groups are compared by content, as a sorted list.
    """
    params = urllib.parse.parse_qsl(querystring, keep_blank_values=True)
    top, groups = [], {}
    for key, value in params:
        match = re.match(r'^(resources|required|member_of|in_tree)(.*)$',
                         key)
        if match:
            groups.setdefault(match.group(2), []).append(
                (match.group(1), value))
        else:
            top.append((key, value))
    unsuffixed = sorted(groups.pop('', []))
    numbered = sorted(sorted(items) for items in groups.values())
    return {'top': sorted(top), 'unsuffixed': unsuffixed,
            'numbered': numbered}


class _FakeAggregate:
    def __init__(self, data):
        self.uuid = data['uuid']
        self.name = data['name']
        self.metadata = dict(data['metadata'])


@nova_harness.requires_nova
class TestAgainstNova(unittest.TestCase):
    maxDiff = None

    def setUp(self):
        nova_harness.conf(self)

    def _configure(self, settings):
        for key, section in nova_conf.CONF_SECTIONS.items():
            if section == 'gpuclient' or key == 'enabled_filters':
                continue
            nova_harness.override(self, key, settings[key], section)
        nova_harness.pci_aliases(self, [json.dumps(H100_ALIAS),
                                        json.dumps(A100_ALIAS)])

    def nova_query(self, flavor, image, settings, aggregates=(),
                   project_id=None, zone=None, boot_from_volume=False):
        self._configure(settings)
        aggs = [_FakeAggregate(a) for a in aggregates]

        def non_matching(ctxt, ignored_keys, key_prefix, value):
            # the SQL: aggregates with a key_prefix% key of that value
            # whose key is not one of ignored_keys
            return [a for a in aggs if any(
                k.startswith(key_prefix) and v == value
                and k not in ignored_keys for k, v in a.metadata.items())]

        def by_metadata(ctxt, key=None, value=None):
            return [a for a in aggs if any(
                (key is None or k == key) and (value is None or v == value)
                for k, v in a.metadata.items())]

        props = {k: v for k, v in image.items() if k != 'disk_format'}
        image_meta = nova_harness.image(
            props, disk_format=image.get('disk_format', 'raw'))
        spec = nova_harness.request_spec(
            nova_harness.flavor(flavor, name='f', flavorid='f'), image_meta,
            zone=zone, project_id=project_id or PROJECT,
            is_bfv=boot_from_volume)
        with mock.patch.object(
                nova_request_filter, '_should_filter_by_owner',
                return_value=settings['owner_nova']), \
                mock.patch.object(objects.AggregateList,
                                  'get_non_matching_by_metadata_keys',
                                  side_effect=non_matching), \
                mock.patch.object(objects.AggregateList, 'get_by_metadata',
                                  side_effect=by_metadata), \
                mock.patch.object(nova_request_filter, 'LOG'):
            nova_request_filter.process_reqspec(
                nova_context.get_admin_context(), spec)
            return nova_harness.querystring(spec)

    def test_same_query_as_nova(self):
        for name, flavor, image, kwargs in _cases():
            kwargs = dict(kwargs)
            settings = nova_conf.load_settings(
                overrides=kwargs.pop('settings', {}),
                alias_maps=['a100=CUSTOM_A100'])
            settings['aliases']['a100']['traits'] = {'CUSTOM_HBM2E',
                                                    'CUSTOM_NVLINK'}
            settings['aliases']['h100'] = {
                'resource_class': 'CUSTOM_PCI_10DE_2331', 'traits': set()}
            pools = kwargs.pop('pools', None)
            with self.subTest(case=name):
                ours = request.querystring(request.build(
                    flavor, image, settings, pools=pools, **kwargs))
                theirs = self.nova_query(flavor, image, settings, **kwargs)
                self.assertEqual(_canonical(theirs), _canonical(ours),
                                 '%s\nnova: %s\nours: %s' % (name, theirs,
                                                             ours))

    def test_alias_from_nova_conf(self):
        """[pci] alias JSON read by gpuclient = the class Nova uses."""
        settings = nova_conf.load_settings(conf_text='[pci]\nalias = %s\n'
                                         % json.dumps(A100_ALIAS))
        flavor = _flavor(**{'pci_passthrough:alias': 'a100:1'})
        ours = request.querystring(request.build(flavor, {}, settings))
        theirs = self.nova_query(flavor, {}, settings)
        self.assertEqual(_canonical(theirs), _canonical(ours))
