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

"""gpuclient.rules.scheduler.request_filter (Nova's prefilters), one table
each, on plain dicts.

test_request_filter_nova checks the names and order against Nova's own
request_filter.ALL_REQUEST_FILTERS where Nova is importable.
"""

from osc_lib import exceptions

from gpuclient.rules.scheduler import conf as nova_conf
from gpuclient.rules.scheduler import request_filter
from gpuclient.rules.scheduler import resource_request as request
from gpuclient.tests.unit import base

PROJECT = 'p1'
TENANT_AGG = {'name': 'tenant', 'uuid': 'u-tenant', 'hosts': ['h2', 'h1'],
              'metadata': {'filter_tenant_id': PROJECT}}
TENANT_AGG2 = {'name': 'tenant2', 'uuid': 'u-tenant2', 'hosts': [],
               'metadata': {'filter_tenant_id_2': PROJECT}}
OTHER_TENANT = {'name': 'other', 'uuid': 'u-other', 'hosts': [],
                'metadata': {'filter_tenant_id': 'p2'}}
NOT_TENANT_KEY = {'name': 'named', 'uuid': 'u-named', 'hosts': [],
                  'metadata': {'owner': PROJECT}}
AZ_META = {'name': 'az-meta', 'uuid': 'u-az-meta', 'hosts': [],
           'metadata': {'availability_zone': 'az1'}}
AZ_FIELD = {'name': 'az-field', 'uuid': 'u-az-field', 'hosts': [],
            'availability_zone': 'az1', 'metadata': {}}
AZ_OTHER = {'name': 'az2', 'uuid': 'u-az2', 'hosts': [],
            'metadata': {'availability_zone': 'az2'}}
ISO_X = {'name': 'iso-x', 'uuid': 'u-iso-x', 'hosts': ['h3'],
         'metadata': {'trait:CUSTOM_X': 'required'}}
ISO_XY = {'name': 'iso-xy', 'uuid': 'u-iso-xy', 'hosts': [],
          'metadata': {'trait:CUSTOM_X': 'required',
                       'trait:CUSTOM_Y': 'required'}}
NOT_ISO = {'name': 'soft', 'uuid': 'u-soft', 'hosts': [],
           'metadata': {'trait:CUSTOM_X': 'preferred'}}

TENANT_ON = {'limit_tenants_to_placement_aggregate': True}
TENANT_STRICT = dict(TENANT_ON, placement_aggregate_required_for_tenants=True)
ISOLATION_ON = {'enable_isolated_aggregate_filtering': True}
IMAGE_TYPE_ON = {'query_placement_for_image_type_support': True}
METADATA_ON = {'image_metadata_prefilter': True}
OWNER_ON = {'owner_nova': True}
TENANT_ERROR = ('Project p1 is in no aggregate and [scheduler] '
                'placement_aggregate_required_for_tenants is on: Nova '
                'answers "No hosts available for tenant".')


def flavor(**specs):
    return {'vcpus': 1, 'ram': 512, 'disk': 1, 'extra_specs': specs}


def make_spec(groups=None):
    """A request being built, with GROUPS ({suffix: {'required',
    'pci_alias'}}) already there."""
    spec = request._Builder({})
    for suffix, wanted in (groups or {}).items():
        group = spec.group(suffix)
        group['required'] |= set(wanted.get('required', ()))
        if wanted.get('pci_alias'):
            group['pci_alias'] = wanted['pci_alias']
    return spec


def outcome(spec):
    """What a prefilter left in SPEC, as plain data (empty parts left
    out)."""
    found = {}
    for key in ('root_required', 'root_forbidden'):
        if getattr(spec, key):
            found[key] = sorted(getattr(spec, key))
    groups = {}
    for suffix, group in spec.groups.items():
        shown = {}
        if group['member_of']:
            shown['member_of'] = group['member_of']
        if group['forbidden_aggregates']:
            shown['forbidden_aggregates'] = sorted(
                group['forbidden_aggregates'])
        if group['required']:
            shown['required'] = sorted(group['required'])
        groups[suffix] = shown
    if any(groups.values()):
        found['groups'] = groups
    for key in ('isolated', 'tenant', 'zoned'):
        if getattr(spec, key):
            found[key] = getattr(spec, key)
    if spec.not_covered:
        found['not_covered'] = spec.not_covered
    if spec.failures:
        found['failures'] = [str(e) for e in spec.failures]
    return found


def info(aggregate):
    return {'aggregate': aggregate['name'], 'uuid': aggregate['uuid'],
            'hosts': sorted(aggregate['hosts'])}


# {prefilter: [(case, prefilter_context kwargs, groups before, ran,
#               outcome)]}
TABLES = {
    request_filter.require_tenant_aggregate: [
        ('off', {'aggregates': [TENANT_AGG], 'project_id': PROJECT},
         None, False, {}),
        ('on, no project', {'settings': TENANT_ON,
                            'aggregates': [TENANT_AGG]}, None, False, {}),
        ('on: the project\'s aggregates, any filter_tenant_id* key',
         {'settings': TENANT_ON, 'project_id': PROJECT,
          'aggregates': [TENANT_AGG2, OTHER_TENANT, NOT_TENANT_KEY,
                         TENANT_AGG]}, None, True,
         {'groups': {'': {'member_of': [['u-tenant', 'u-tenant2']]}},
          'tenant': [info(TENANT_AGG2), info(TENANT_AGG)]}),
        ('on, the project in none', {'settings': TENANT_ON,
                                     'project_id': PROJECT,
                                     'aggregates': [OTHER_TENANT]},
         None, True, {}),
        ('required, the project in none: a failure, held',
         {'settings': TENANT_STRICT, 'project_id': PROJECT,
          'aggregates': [OTHER_TENANT, NOT_TENANT_KEY]}, None, True,
         {'failures': [TENANT_ERROR]}),
        ('required, the project in one', {'settings': TENANT_STRICT,
                                          'project_id': PROJECT,
                                          'aggregates': [TENANT_AGG]},
         None, True,
         {'groups': {'': {'member_of': [['u-tenant']]}},
          'tenant': [info(TENANT_AGG)]}),
    ],
    request_filter.map_az_to_placement_aggregate: [
        ('no zone', {'aggregates': [AZ_META]}, None, False, {}),
        ('zone: metadata or field', {'zone': 'az1', 'aggregates': [
            AZ_OTHER, AZ_FIELD, AZ_META]}, None, True,
         {'groups': {'': {'member_of': [['u-az-field', 'u-az-meta']]}},
          'zoned': [info(AZ_FIELD), info(AZ_META)]}),
        ('zone without aggregate', {'zone': 'nova',
                                    'aggregates': [AZ_META]},
         None, True, {}),
        ('a second member_of, after one already there',
         {'zone': 'az1', 'aggregates': [AZ_META]}, {'': {}}, True,
         {'groups': {'': {'member_of': [['u-az-meta']]}},
          'zoned': [info(AZ_META)]}),
    ],
    request_filter.require_image_type_support: [
        ('off', {'image': {'disk_format': 'qcow2'}}, None, False, {}),
        ('on', {'settings': IMAGE_TYPE_ON,
                'image': {'disk_format': 'qcow2'}}, None, True,
         {'root_required': ['COMPUTE_IMAGE_TYPE_QCOW2']}),
        ('on, boot from volume', {'settings': IMAGE_TYPE_ON,
                                  'image': {'disk_format': 'qcow2'},
                                  'boot_from_volume': True},
         None, False, {}),
        ('on, no image', {'settings': IMAGE_TYPE_ON}, None, False, {}),
    ],
    request_filter.compute_status_filter: [
        ('always', {}, None, True,
         {'root_forbidden': ['COMPUTE_STATUS_DISABLED']}),
    ],
    request_filter.isolate_aggregates: [
        ('off', {'aggregates': [ISO_X]}, None, False, {}),
        ('on: aggregates requiring a trait not asked for',
         {'settings': ISOLATION_ON, 'aggregates': [NOT_ISO, ISO_XY, ISO_X]},
         None, True,
         {'groups': {'': {'forbidden_aggregates': ['u-iso-x',
                                                   'u-iso-xy']}},
          'isolated': [
              dict(info(ISO_XY), traits=['CUSTOM_X', 'CUSTOM_Y']),
              dict(info(ISO_X), traits=['CUSTOM_X'])]}),
        ('on: a trait of any group lets the request in',
         {'settings': ISOLATION_ON, 'aggregates': [ISO_XY, ISO_X]},
         {'1': {'required': ['CUSTOM_X']}}, True,
         {'groups': {'1': {'required': ['CUSTOM_X']},
                     '': {'forbidden_aggregates': ['u-iso-xy']}},
          'isolated': [dict(info(ISO_XY), traits=['CUSTOM_Y'])]}),
        ('on: every trait asked for', {'settings': ISOLATION_ON,
                                       'aggregates': [ISO_XY]},
         {'': {'required': ['CUSTOM_X', 'CUSTOM_Y']}}, True,
         {'groups': {'': {'required': ['CUSTOM_X', 'CUSTOM_Y']}}}),
    ],
    request_filter.transform_image_metadata: [
        ('off', {'image': {'hw_disk_bus': 'virtio'}}, None, False, {}),
        ('on: every mapped property', {'settings': METADATA_ON, 'image': {
            'hw_cdrom_bus': 'sata', 'hw_disk_bus': 'virtio',
            'hw_video_model': 'virtio', 'hw_vif_model': 'e1000e',
            'hw_architecture': 'x86_64',
            'hw_emulation_architecture': 'aarch64',
            'hw_viommu_model': 'intel', 'hw_machine_type': 'q35'}},
         None, True,
         {'root_required': [
             'COMPUTE_ARCH_AARCH64', 'COMPUTE_GRAPHICS_MODEL_VIRTIO',
             'COMPUTE_NET_VIF_MODEL_E1000E', 'COMPUTE_STORAGE_BUS_SATA',
             'COMPUTE_STORAGE_BUS_VIRTIO', 'COMPUTE_VIOMMU_INTEL',
             'HW_ARCH_X86_64']}),
        ('on, dashes as underscores', {'settings': METADATA_ON, 'image': {
            'hw_vif_model': 'virtio-net'}}, None, True,
         {'root_required': ['COMPUTE_NET_VIF_MODEL_VIRTIO_NET']}),
        ('on, nothing mapped', {'settings': METADATA_ON}, None, True, {}),
    ],
    request_filter.accelerators_filter: [
        ('no device profile', {'flavor': flavor()}, None, True, {}),
        ('device profile', {'flavor': flavor(**{
            'accel:device_profile': 'fpga1'})}, None, True,
         {'root_required': ['COMPUTE_ACCELERATORS'],
          'not_covered': ['accel:device_profile=fpga1: the request groups '
                          'of a Cyborg device profile are not '
                          'translated.']}),
    ],
    request_filter.packed_virtqueue_filter: [
        ('neither', {}, None, True, {}),
        ('flavor', {'flavor': flavor(**{'hw:virtio_packed_ring': 'true'})},
         None, True, {'root_required': ['COMPUTE_NET_VIRTIO_PACKED']}),
        ('image', {'image': {'hw_virtio_packed_ring': 'yes'}}, None, True,
         {'root_required': ['COMPUTE_NET_VIRTIO_PACKED']}),
        ('the flavor\'s false beats the image\'s true',
         {'flavor': flavor(**{'hw:virtio_packed_ring': 'false'}),
          'image': {'hw_virtio_packed_ring': 'true'}}, None, True, {}),
    ],
    request_filter.ephemeral_encryption_filter: [
        ('not asked for', {'image': {
            'hw_ephemeral_encryption_format': 'luks'}}, None, False, {}),
        ('flavor, no format', {'flavor': flavor(**{
            'hw:ephemeral_encryption': 'true'})}, None, True,
         {'root_required': ['COMPUTE_EPHEMERAL_ENCRYPTION']}),
        ('image, format from the flavor', {
            'image': {'hw_ephemeral_encryption': 'yes'},
            'flavor': flavor(**{'hw:ephemeral_encryption_format': 'luks'})},
         None, True,
         {'root_required': ['COMPUTE_EPHEMERAL_ENCRYPTION',
                            'COMPUTE_EPHEMERAL_ENCRYPTION_LUKS']}),
        ('the flavor says false', {'flavor': flavor(**{
            'hw:ephemeral_encryption': 'false'})}, None, False, {}),
    ],
    request_filter.virtio_sound_filter: [
        ('no sound', {}, None, False, {}),
        ('another model', {'image': {'hw_sound_model': 'ich6'}}, None,
         False, {}),
        ('virtio, flavor', {'flavor': flavor(**{
            'hw:sound_model': 'virtio'})}, None, True,
         {'root_required': ['COMPUTE_SOUND_MODEL_VIRTIO']}),
        ('virtio, both agree', {
            'flavor': flavor(**{'hw:sound_model': 'virtio'}),
            'image': {'hw_sound_model': 'virtio'}}, None, True,
         {'root_required': ['COMPUTE_SOUND_MODEL_VIRTIO']}),
    ],
    request_filter.tpm_secret_security_filter: [
        ('no vTPM', {'flavor': flavor(**{
            'hw:tpm_secret_security': 'host'})}, None, False, {}),
        ('vTPM from the image: user', {'image': {
            'hw_tpm_version': '2.0'}}, None, True,
         {'root_required': ['COMPUTE_SECURITY_TPM_SECRET_SECURITY_USER']}),
        ('vTPM, deployment', {'flavor': flavor(**{
            'hw:tpm_version': '2.0',
            'hw:tpm_secret_security': 'deployment'})}, None, True,
         {'root_required': [
             'COMPUTE_SECURITY_TPM_SECRET_SECURITY_DEPLOYMENT']}),
    ],
    request_filter.owner_nova_filter: [
        ('old computes', {}, {'pci-a-0': {'pci_alias': 'a'}}, False, {}),
        ('root and PCI alias groups only', {'settings': OWNER_ON},
         {'': {}, 'pci-a-0': {'pci_alias': 'a'}, '1': {}}, True,
         {'root_required': ['OWNER_NOVA'],
          'groups': {'': {}, '1': {},
                     'pci-a-0': {'required': ['OWNER_NOVA']}}}),
    ],
}


class TestPrefilters(base.TestCase):
    def test_tables(self):
        for prefilter, cases in TABLES.items():
            for case, kwargs, groups, ran, expected in cases:
                name = '%s: %s' % (prefilter.__name__, case)
                spec = make_spec(groups)
                ctx = request_filter.prefilter_context(**kwargs)
                self.assertEqual(ran, prefilter(ctx, spec), name)
                self.assertEqual(expected, outcome(spec), name)

    def test_every_prefilter_has_a_table(self):
        self.assertEqual(list(request_filter.REQUEST_FILTERS), list(TABLES))

    def test_names_are_novas_in_order(self):
        """REQUEST_FILTERS and NOT_MODELLED make up Nova 34's
        ALL_REQUEST_FILTERS (by name, in order); test_request_filter_nova
        checks NOVA_REQUEST_FILTERS against Nova itself."""
        nova = list(request_filter.NOVA_REQUEST_FILTERS)
        modelled = [f.__name__ for f in request_filter.REQUEST_FILTERS]
        left_out = [name for name, _why in request_filter.NOT_MODELLED]
        self.assertEqual(sorted(nova), sorted(modelled + left_out))
        self.assertEqual([n for n in nova if n in modelled], modelled)
        self.assertEqual([n for n in nova if n in left_out], left_out)
        for name, why in request_filter.NOT_MODELLED:
            self.assertTrue(why.strip(), name)

    def test_context_defaults(self):
        self.assertEqual(
            {'flavor': {}, 'specs': {}, 'image': {}, 'settings': {},
             'aggregates': [], 'project_id': None, 'zone': None,
             'boot_from_volume': False}, request_filter.prefilter_context())

    def test_process_request_in_order(self):
        ctx = request_filter.prefilter_context(
            flavor(**{'hw:sound_model': 'virtio'}),
            {'disk_format': 'raw'},
            dict(IMAGE_TYPE_ON, **TENANT_ON, **ISOLATION_ON, **OWNER_ON),
            [TENANT_AGG, AZ_META, ISO_X], PROJECT, 'az1')
        spec = make_spec({'': {}, 'pci-a-0': {'pci_alias': 'a'}})
        request_filter.process_request(ctx, spec)
        self.assertEqual(
            {'root_required': ['COMPUTE_IMAGE_TYPE_RAW',
                               'COMPUTE_SOUND_MODEL_VIRTIO', 'OWNER_NOVA'],
             'root_forbidden': ['COMPUTE_STATUS_DISABLED'],
             # isolate_aggregates ran before owner_nova_filter added
             # OWNER_NOVA to the PCI group
             'groups': {'': {'member_of': [['u-tenant'], ['u-az-meta']],
                             'forbidden_aggregates': ['u-iso-x']},
                        'pci-a-0': {'required': ['OWNER_NOVA']}},
             'tenant': [info(TENANT_AGG)], 'zoned': [info(AZ_META)],
             'isolated': [dict(info(ISO_X), traits=['CUSTOM_X'])]},
            outcome(spec))

    def test_tenant_failure_raised_after_every_prefilter(self):
        ctx = request_filter.prefilter_context(
            settings=dict(TENANT_STRICT, **OWNER_ON), project_id=PROJECT)
        spec = make_spec()
        exc = self.assertRaises(exceptions.CommandError,
                                request_filter.process_request, ctx, spec)
        self.assertEqual(TENANT_ERROR, str(exc))
        # the later prefilters ran
        self.assertEqual(['OWNER_NOVA'], sorted(spec.root_required))

    def test_conflict_refused_before_the_tenant_failure(self):
        """A flavor/image conflict (refused by Nova's API, before the
        scheduler) comes first."""
        ctx = request_filter.prefilter_context(
            flavor(**{'hw:sound_model': 'virtio'}),
            {'hw_sound_model': 'ich6'}, TENANT_STRICT, project_id=PROJECT)
        exc = self.assertRaises(exceptions.CommandError,
                                request_filter.process_request, ctx,
                                make_spec())
        self.assertIn('hw:sound_model=virtio and the image '
                      'hw_sound_model=ich6', str(exc))

    def test_build_runs_them(self):
        settings = nova_conf.load_settings(overrides={
            'limit_tenants_to_placement_aggregate': 'true',
            'placement_aggregate_required_for_tenants': 'true'})
        exc = self.assertRaises(
            exceptions.CommandError, request.build,
            flavor(**{'hw:ephemeral_encryption': 'true',
                      'hw:ephemeral_encryption_format': 'luks'}),
            {'hw_ephemeral_encryption_format': 'plain'}, settings,
            project_id=PROJECT)
        self.assertIn('hw:ephemeral_encryption_format=luks', str(exc))
        exc = self.assertRaises(
            exceptions.CommandError, request.build, flavor(), {}, settings,
            project_id=PROJECT)
        self.assertEqual(TENANT_ERROR, str(exc))
