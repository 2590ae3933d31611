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

"""gpu export and gpu diff over the strict fakes: a cloud built with
gpuclient's own commands exports a document that diffs in sync against
it; a hand edit in the cloud is drift; a document naming what the cloud
does not have is refused with the line and the field."""

import os
from unittest import mock

import fixtures
from osc_lib import exceptions

from gpuclient.cloud import errors
from gpuclient.ops import document_ops
from gpuclient.ops import flavor_ops
from gpuclient.ops import pool_ops
from gpuclient.rules import document
from gpuclient.rules import document_plan
from gpuclient.rules import pools
from gpuclient.tests.unit import base
from gpuclient.tests.unit import fakes

PT_CLASS = 'CUSTOM_PCI_10DE_2331'


class DocumentOpsTestCase(base.TestCase):
    def setUp(self):
        super().setUp()
        self.cloud = fakes.FakeCloud()
        self.cloud.pci_host('gpu-pt-1', nodename='gpu-pt-1.test')
        self.cloud.vgpu_host('gpu-vgpu-1')
        self.cloud.compute_host('plain-1')
        self.placement = self.useFixture(fakes.PlacementFixture(self.cloud))
        cm = self.useFixture(fakes.ClientManagerFixture(self.cloud))
        self.compute = cm.nova
        self.glance = cm.glance
        self.client = cm.gpu
        identity = self.client._conn.identity
        identity.find_project.side_effect = (
            lambda name, ignore_missing, **query: mock.Mock(
                id=name if name.startswith('id-') else 'id-' + name))
        self.keystone = fakes.FakeKeystoneLimits()
        self.keystone.install(identity)
        self.client.limits._scope = ('nova-service', 'RegionOne')
        self.dir = self.useFixture(fixtures.TempDir()).path

    def build(self):
        """The seeds' layer, made with gpuclient's own operations."""
        pool_ops.create(self.client, pools.build_spec(
            'solver', 'passthrough', alias='h100', pci_id='10de:2331',
            isolate=True, projects=['id-research'],
            properties={'team': 'hpc'}), ['gpu-pt-1'])
        pool_ops.create(self.client, pools.build_spec(
            'ws', 'vgpu', vgpu_type='nvidia-35'), ['gpu-vgpu-1'])
        flavor_ops.create(self.client, 'g1.h100.1', 'solver', 16, 131072,
                          200, public=False, projects=['research'],
                          properties={'hw:cpu_policy': 'dedicated'})
        flavor_ops.create(self.client, 'g1.vgpu.2', 'ws', 8, 32768, 100,
                          gpus=2, description='two vGPUs')
        self.cloud.add_flavor('m1.small')
        self.cloud.images += [
            {'id': fakes.uid('img-u'), 'name': 'ubuntu',
             'hw_machine_type': 'q35', 'hw_firmware_type': 'uefi'},
            {'id': fakes.uid('img-c'), 'name': 'cirros'}]
        self.client.limits.create_registered('class:VGPU', -1)
        self.client.limits.create_registered('class:%s' % PT_CLASS, 0)
        self.client.limits.create_limit('id-research', 'class:%s' % PT_CLASS,
                                        4)
        self.client.limits.create_registered('class:VCPU', 100)

    def mark_all(self):
        """Mark every object of the GPU layer as an earlier gpu apply
        that named them all leaves them."""
        for agg in self.cloud.aggregates:
            if 'gpu_pool' in agg.metadata:
                self.compute.set_aggregate_metadata(
                    agg, {document.POOL_MARK: document.MANAGED_BY})
        for flavor in self.cloud.flavors:
            if flavor['extra_specs']:
                flavor['extra_specs'][document.FLAVOR_MARK] = (
                    document.MANAGED_BY)
        for image in self.cloud.images:
            if 'hw_machine_type' in image:
                image[document.IMAGE_MARK] = document.MANAGED_BY
        for item in self.keystone.registered + self.keystone.project_limits:
            item.description = document.QUOTA_MARK

    def path(self, text, name='gpu.yaml'):
        path = os.path.join(self.dir, name)
        with open(path, 'w') as out:
            out.write(text)
        return path

    def hand_edit(self):
        """As "openstack aggregate set --property team=ml solver" does."""
        agg = next(a for a in self.cloud.aggregates if a.name == 'solver')
        self.compute.set_aggregate_metadata(agg, {'team': 'ml'})
        return agg

    def rows(self, text, prune=False):
        return [(r['object'], r['change'], r['from'], r['to'])
                for r in document_ops.diff(self.client, self.path(text),
                                           prune=prune)]


class TestExport(DocumentOpsTestCase):
    def test_a_built_cloud_round_trips(self):
        self.build()
        text = document_ops.export(self.client)
        data, _lines = document.load(text)
        self.assertEqual(['solver', 'ws'], [p['name']
                                            for p in data['pools']])
        self.assertEqual({
            'name': 'solver', 'mode': 'passthrough', 'alias': 'h100',
            'pci_id': '10de:2331', 'hosts': ['gpu-pt-1'], 'isolate': True,
            'projects': ['id-research'], 'properties': {'team': 'hpc'}},
            data['pools'][0])
        self.assertEqual([
            {'name': 'g1.h100.1', 'pool': 'solver', 'vcpus': 16,
             'ram': 131072, 'disk': 200, 'public': False,
             'projects': ['id-research'],
             'properties': {'hw:cpu_policy': 'dedicated'}},
            {'name': 'g1.vgpu.2', 'pool': 'ws', 'gpus': 2, 'vcpus': 8,
             'ram': 32768, 'disk': 100, 'description': 'two vGPUs'}],
            data['flavors'])
        self.assertEqual([{'name': 'ubuntu', 'properties': {
            'hw_firmware_type': 'uefi', 'hw_machine_type': 'q35'}}],
            data['images'])
        self.assertEqual([
            {'default': True, 'pool': 'solver', 'gpus': 0},
            {'default': True, 'pool': 'ws', 'gpus': 'unlimited'},
            {'project': 'id-research', 'pool': 'solver', 'gpus': 4}],
            data['quotas'])
        # the same cloud, the same text; and in sync with it
        self.assertEqual(text, document_ops.export(self.client))
        self.assertEqual([], self.rows(text))
        self.assertEqual([], self.rows(text, prune=True))

    def test_a_flavor_deleted_while_it_is_read_is_gone(self):
        # another writer deletes the private flavor between the flavor
        # list and the read of its access list (Nova: 404)
        self.build()
        compute = self.client.compute
        read_access = compute.flavor_access
        private = next(f['id'] for f in self.cloud.flavors
                       if f['name'] == 'g1.h100.1')

        def access(flavor_id):
            if flavor_id == private:
                raise errors.NotFound('Flavor %s could not be found.'
                                      % flavor_id, 404)
            return read_access(flavor_id)
        self.useFixture(fixtures.MockPatchObject(compute, 'flavor_access',
                                                 access))
        data, _lines = document.load(document_ops.export(self.client))
        self.assertEqual(['g1.vgpu.2'], [f['name'] for f in data['flavors']])

    def test_selected_pool(self):
        self.build()
        data, _lines = document.load(document_ops.export(self.client,
                                                         ['ws']))
        self.assertEqual(['ws'], [p['name'] for p in data['pools']])
        self.assertEqual(['g1.vgpu.2'], [f['name'] for f in data['flavors']])
        self.assertNotIn('images', data)
        self.assertEqual(1, len(data['quotas']))

    def test_unknown_pool_refused_before_the_rest_is_read(self):
        self.build()
        calls = len(self.compute.calls)
        error = self.assertRaises(exceptions.CommandError,
                                  document_ops.export, self.client, ['nope'])
        self.assertIn('No GPU pool named nope. Known pools: solver, ws',
                      str(error))
        # only the aggregates were listed
        self.assertEqual(calls, len(self.compute.calls))

    def test_flavor_not_derived_left_out_with_a_warning(self):
        self.build()
        self.cloud.add_flavor('hand', extra_specs={
            'aggregate_instance_extra_specs:gpu_pool': 'ws',
            'resources:VGPU': '1', 'hw:bogus': 'x'})
        data, _lines = document.load(document_ops.export(self.client))
        self.assertNotIn('hand', [f['name'] for f in data['flavors']])
        self.assertIn('Flavor hand steers to pool ws but is not a flavor '
                      'gpuclient derives from it', self.logger.output)

    def test_write(self):
        path = os.path.join(self.dir, 'out.yaml')
        document_ops.write(path, 'one\n')
        error = self.assertRaises(exceptions.CommandError,
                                  document_ops.write, path, 'two\n')
        self.assertIn('already exists: give --overwrite', str(error))
        document_ops.write(path, 'two\n', overwrite=True)
        with open(path) as written:
            self.assertEqual('two\n', written.read())
        self.assertEqual(['out.yaml'], os.listdir(self.dir))
        error = self.assertRaises(
            exceptions.CommandError, document_ops.write,
            os.path.join(self.dir, 'no', 'such.yaml'), 'x')
        self.assertIn('Cannot write', str(error))


class TestDiff(DocumentOpsTestCase):
    def setUp(self):
        super().setUp()
        self.build()
        self.text = document_ops.export(self.client)

    def test_hand_edit_is_drift(self):
        self.hand_edit()
        rows = self.rows(self.text)
        self.assertEqual([('pool solver', 'update',
                           {'properties': {'team': 'ml'}},
                           {'properties': {'team': 'hpc'}})], rows)

    def test_document_changes(self):
        text = self.text.replace('vcpus: 8', 'vcpus: 4').replace(
            '  - gpu-pt-1\n', '  - gpu-pt-1.test\n')
        # the hypervisor hostname names the same host: no change
        self.assertEqual([('flavor g1.vgpu.2', 'recreate', {'vcpus': 8},
                           {'vcpus': 4})], self.rows(text))
        self.assertIn('is the hypervisor hostname of compute host '
                      'gpu-pt-1', self.logger.output)

    def test_untracked_and_pruned(self):
        self.mark_all()
        data, _lines = document.load(self.text)
        data['pools'] = data['pools'][:1]
        data['flavors'] = data['flavors'][:1]
        data['quotas'] = [q for q in data['quotas'] if q.get('pool') !=
                          'ws']
        text = document.dump(document.check(data))
        self.assertEqual([('pool ws', 'untracked'),
                          ('flavor g1.vgpu.2', 'untracked'),
                          ('quota class:VGPU (default)', 'untracked')],
                         [r[:2] for r in self.rows(text)])
        self.assertEqual(['delete'] * 3,
                         [r[1] for r in self.rows(text, prune=True)])

    def test_names_the_cloud_lacks_refused_with_line_and_field(self):
        text = self.text.replace('  - gpu-pt-1\n', '  - gpu-pt-9\n').replace(
            'name: ubuntu', 'name: nope')
        error = self.assertRaises(document.DocumentError, self.rows, text)
        lines = text.splitlines()
        host = lines.index('  - gpu-pt-9') + 1
        image = lines.index('- name: nope') + 1
        self.assertEqual(2, len(error.problems), error.problems)
        self.assertIn('line %d: pools[0].hosts[0]: ' % host,
                      error.problems[0])
        self.assertIn('gpu-pt-9', error.problems[0])
        self.assertEqual('line %d: images[0].name: no image with name or ID '
                         'nope (see "openstack image list")' % image,
                         error.problems[1])

    def test_invalid_document_refused_before_the_cloud_is_read(self):
        calls = len(self.compute.calls)
        error = self.assertRaises(document.DocumentError, self.rows,
                                  'version: 1\npools:\n- name: a\n'
                                  '  mode: vgu\n')
        self.assertIn("line 4: pools[0].mode: 'vgu' is not one of",
                      str(error))
        self.assertEqual(calls, len(self.compute.calls))
        error = self.assertRaises(exceptions.CommandError, document_ops.diff,
                                  self.client, os.path.join(self.dir, 'x'))
        self.assertIn('Cannot read', str(error))


class ApplyTestCase(DocumentOpsTestCase):
    """gpu apply over the strict fakes."""

    def setUp(self):
        super().setUp()
        # as Nova 34's computes report them: OWNER_NOVA on every root
        # (owner_nova_filter requires it), and the passthrough host has
        # dedicated CPUs for g1.h100.1's hw:cpu_policy=dedicated
        for provider in self.cloud.providers:
            if provider.parent is None:
                provider.traits.append('OWNER_NOVA')
        pt = next(p for p in self.cloud.providers
                  if p.name == 'gpu-pt-1.test')
        pt.inventory['PCPU'] = fakes.inv(32)

    def state(self):
        """What the fakes hold of the GPU layer (and the rest)."""
        aggregates = {a.name: (sorted(a.hosts), dict(a.metadata),
                               getattr(a, 'availability_zone', None))
                      for a in self.cloud.aggregates}
        flavors = {}
        for flavor in self.cloud.flavors:
            access = (None if flavor['os-flavor-access:is_public'] else
                      sorted(self.client.compute.flavor_access(
                          flavor['id'])))
            flavors[flavor['name']] = (
                {k: v for k, v in flavor.items() if k != 'id'}, access)
        traits = {p.uuid: sorted(p.traits) for p in self.cloud.providers}
        images = {i['id']: dict(i) for i in self.cloud.images}
        limits = sorted((None, r.resource_name, r.default_limit)
                        for r in self.keystone.registered)
        limits += sorted((r.project_id, r.resource_name, r.resource_limit)
                         for r in self.keystone.project_limits)
        return {'aggregates': aggregates, 'flavors': flavors,
                'traits': traits, 'images': images, 'limits': limits,
                'placement_traits': sorted(self.placement.traits)}

    def apply(self, text, **kwargs):
        return document_ops.apply(self.client, self.path(text), **kwargs)

    def adopt(self):
        """Apply the export of the cloud: every object of the GPU layer
        is then gpu apply's (marked), as after an earlier apply."""
        self.apply(document_ops.export(self.client))

    def wipe(self):
        """Take the GPU layer off the fakes (as a wipe by hand does)."""
        gpu = {f['id'] for f in self.cloud.flavors if f['extra_specs']}
        self.cloud.flavors[:] = [f for f in self.cloud.flavors
                                 if f['id'] not in gpu]
        self.cloud.aggregates[:] = []
        for provider in self.cloud.providers:
            provider.traits = [t for t in provider.traits
                               if not t.startswith('CUSTOM_')]
        for image in self.cloud.images:
            for key in ('hw_machine_type', 'hw_firmware_type'):
                image.pop(key, None)
        self.keystone.registered[:] = [
            r for r in self.keystone.registered
            if r.resource_name == 'class:VCPU']
        self.keystone.project_limits[:] = []


class TestApply(ApplyTestCase):
    def test_export_onto_an_empty_cloud_recreates_it(self):
        self.build()
        self.adopt()
        text = document_ops.export(self.client)
        built = self.state()
        self.wipe()
        # the wipe took the image's GPU properties off since the export
        # (the image stays): putting them back is a conflict; pools,
        # flavors and quotas made again overwrite nothing
        error = self.assertRaises(document_plan.Refused, self.apply, text)
        self.assertEqual(['image ubuntu'],
                         [p.split(':')[0] for p in error.problems])
        plan = self.apply(text, force_conflicts=True)
        self.assertTrue(plan)
        after = self.state()
        self.assertEqual(built['aggregates'], after['aggregates'])
        self.assertEqual(built['traits'], after['traits'])
        self.assertEqual(built['images'], after['images'])
        self.assertEqual(built['limits'], after['limits'])
        # flavors: the same, but for their IDs
        self.assertEqual(built['flavors'], after['flavors'])
        self.assertEqual(text, document_ops.export(self.client))
        # a second apply plans nothing
        again = self.apply(text)
        self.assertEqual([], list(again))

    def test_apply_marks_what_the_document_names_once(self):
        # a layer made by the single commands: the first apply of its
        # export takes every object over (marks it), writing nothing else
        self.build()
        text = document_ops.export(self.client)
        plan = self.apply(text)
        self.assertEqual(
            ['aggregate.metadata', 'aggregate.metadata', 'flavor.specs',
             'flavor.specs', 'image.update', 'limit.describe',
             'limit.describe', 'limit.describe'], [s.op for s in plan])
        for step in plan:
            self.assertIn('managed_by', step.what)
        aggs = {a.name: a.metadata for a in self.cloud.aggregates}
        self.assertEqual('gpu-apply', aggs['ws']['gpu_managed_by'])
        self.assertEqual('gpu-apply',
                         self.cloud.images[0]['gpuclient_managed_by'])
        self.assertEqual({'gpuclient:managed_by=gpu-apply'},
                         {r.description for r in self.keystone.registered
                          if r.resource_name != 'class:VCPU'})
        self.assertIsNone(next(r for r in self.keystone.registered
                               if r.resource_name == 'class:VCPU'
                               ).description)
        # the marks are no part of the document: the export is the same
        self.assertEqual(text, document_ops.export(self.client))
        self.assertEqual([], list(self.apply(text)))


class TestApplyChanges(ApplyTestCase):
    def setUp(self):
        super().setUp()
        self.build()
        self.adopt()
        self.text = document_ops.export(self.client)

    def test_hand_edit_is_put_back_with_force_conflicts(self):
        agg = self.hand_edit()
        plan = self.apply(self.text, force_conflicts=True)
        self.assertEqual(['aggregate.metadata'], [s.op for s in plan])
        self.assertIn('Overwrites what was changed in the cloud since the '
                      'document was exported (--force-conflicts): pool '
                      'solver: properties.team (recorded hpc, now ml, '
                      'wanted hpc).', plan.warnings)
        self.assertEqual('hpc', agg.metadata['team'])
        self.assertEqual([], self.rows(self.text))
        self.assertEqual([], list(self.apply(self.text)))

    def test_prune_removes_a_dropped_pool_and_nothing_else(self):
        other = self.compute.create_aggregate('ordinary')
        self.compute.set_aggregate_metadata(other, {'ssd': 'true'})
        data, _lines = document.load(self.text)
        data['pools'] = [p for p in data['pools'] if p['name'] != 'ws']
        data['flavors'] = [f for f in data['flavors'] if f['pool'] != 'ws']
        data['quotas'] = [q for q in data['quotas'] if q.get('pool') != 'ws']
        text = document.dump(document.check(data))
        before = self.state()
        # without --prune: untracked, left alone
        self.assertEqual([], list(self.apply(text)))
        self.assertEqual(before, self.state())
        plan = self.apply(text, prune=True)
        ops = [s.op for s in plan]
        # removals in reverse order: quota, flavor, then the pool
        self.assertEqual('limit.delete', ops[0])
        self.assertLess(ops.index('flavor.delete'),
                        ops.index('aggregate.delete'))
        after = self.state()
        self.assertNotIn('ws', after['aggregates'])
        self.assertNotIn('g1.vgpu.2', after['flavors'])
        self.assertNotIn((None, 'class:VGPU', -1), after['limits'])
        # what gpuclient does not own is as it was
        for name in ('ordinary', 'solver'):
            self.assertEqual(before['aggregates'][name],
                             after['aggregates'][name])
        for name in ('m1.small', 'g1.h100.1'):
            self.assertEqual(before['flavors'][name],
                             after['flavors'][name])
        self.assertIn((None, 'class:VCPU', 100), after['limits'])
        for provider in self.cloud.tree(next(
                p for p in self.cloud.providers if p.name == 'gpu-vgpu-1')):
            self.assertNotIn('CUSTOM_NVIDIA_35', provider.traits)
        self.assertEqual([], list(self.apply(text, prune=True)))

    def test_prune_leaves_what_apply_did_not_make(self):
        # issue 36, defects 4 and 5: the export is older than a Windows
        # UEFI image (firmware properties set by hand), a flavor made with
        # gpu flavor create, a pool made with gpu pool create and a
        # project's quota made with gpu quota set; --prune with that
        # export leaves all of them, and names them
        self.cloud.vgpu_host('gpu-vgpu-2')
        self.cloud.images.append({
            'id': fakes.uid('img-w'), 'name': 'windows',
            'hw_firmware_type': 'uefi', 'hw_machine_type': 'q35',
            'os_secure_boot': 'required'})
        flavor_ops.create(self.client, 'g1.vgpu.1', 'ws', 4, 16384, 50)
        pool_ops.create(self.client, pools.build_spec(
            'ws2', 'vgpu', vgpu_type='nvidia-36'), ['gpu-vgpu-2'])
        self.client.limits.create_limit('id-other', 'class:VGPU', 2)
        before = self.state()
        plan = self.apply(self.text, prune=True)
        self.assertEqual([], list(plan))
        self.assertEqual(before, self.state())
        self.assertIn('Not pruned, though the document does not name them: '
                      'pool ws2, flavor g1.vgpu.1, image windows, quota '
                      'class:VGPU (project id-other). gpu apply did not make '
                      'them nor take them over', self.logger.output)
        # gpu diff --prune lists them as untracked: not drift
        self.assertEqual(
            ['untracked'] * 4,
            [r[1] for r in self.rows(self.text, prune=True)])

    def test_prune_removes_what_apply_made_and_says_why(self):
        # a flavor an earlier apply made, then dropped from the document
        data, _lines = document.load(self.text)
        data['flavors'].append({'name': 'g1.vgpu.1', 'pool': 'ws',
                                'vcpus': 4, 'ram': 16384, 'disk': 50})
        plan = self.apply(document.dump(document.check(data)))
        self.assertEqual(['flavor.create', 'flavor.specs'],
                         [s.op for s in plan])
        made = next(f for f in self.cloud.flavors
                    if f['name'] == 'g1.vgpu.1')
        self.assertEqual('gpu-apply',
                         made['extra_specs']['gpuclient:managed_by'])
        plan = self.apply(self.text, prune=True, dry_run=True)
        self.assertEqual(['flavor.delete'], [s.op for s in plan])
        self.assertIn('Prunes flavor g1.vgpu.1: gpu apply made or took it '
                      'over (it carries extra spec gpuclient:managed_by='
                      'gpu-apply) and the document does not name it.',
                      plan.warnings)
        self.apply(self.text, prune=True)
        self.assertNotIn('g1.vgpu.1', self.state()['flavors'])

    def test_image_step_acts_by_the_planned_id(self):
        # issue 36, defect 13: the planned image is deleted and another
        # image is named like its ID before the step: the step fails
        # naming the ID, and the other image is left alone
        ubuntu = self.cloud.images[0]
        text = self.text.replace('hw_firmware_type: uefi',
                                 'hw_firmware_type: bios', 1)
        impostor = {'id': fakes.uid('img-x'), 'name': ubuntu['id'],
                    'hw_firmware_type': 'uefi'}

        def swap(_index, step):
            if step.op == 'image.update' and ubuntu in self.cloud.images:
                self.cloud.images.remove(ubuntu)
                self.cloud.images.append(impostor)

        error = self.assertRaises(
            exceptions.CommandError, document_ops.apply, self.client,
            self.path(text), on_step=swap)
        self.assertIn('No image with ID %s' % ubuntu['id'], str(error))
        self.assertEqual('uefi', impostor['hw_firmware_type'])
        self.assertNotIn('gpuclient_managed_by', impostor)

    def test_flavor_size_change_needs_recreate_flavors(self):
        text = self.text.replace('vcpus: 8', 'vcpus: 4', 1)
        before = self.state()
        calls = len(self.compute.calls)
        error = self.assertRaises(document_plan.Refused, self.apply, text)
        self.assertIn('flavor g1.vgpu.2: vcpus cannot change in place: '
                      'Nova does not edit a flavor\'s sizes', str(error))
        self.assertIn('running servers keep their embedded copy',
                      str(error))
        self.assertIn('--recreate-flavors', str(error))
        self.assertEqual(calls, len(self.compute.calls))
        self.assertEqual(before, self.state())
        old_id = next(f['id'] for f in self.cloud.flavors
                      if f['name'] == 'g1.vgpu.2')
        plan = self.apply(text, recreate_flavors=True)
        self.assertEqual(['flavor.delete', 'flavor.create', 'flavor.specs'],
                         [s.op for s in plan])
        self.assertIn('running servers keep their embedded copy',
                      ' '.join(plan.warnings))
        flavor = next(f for f in self.cloud.flavors
                      if f['name'] == 'g1.vgpu.2')
        self.assertNotEqual(old_id, flavor['id'])
        self.assertEqual(4, flavor['vcpus'])
        self.assertEqual('two vGPUs', flavor['description'])
        self.assertEqual(before['flavors']['g1.vgpu.2'][0]['extra_specs'],
                         flavor['extra_specs'])
        self.assertEqual([], self.rows(text))

    def test_recreated_private_flavor_keeps_its_access(self):
        text = self.text.replace('ram: 131072', 'ram: 65536', 1)
        self.apply(text, recreate_flavors=True)
        flavor = next(f for f in self.cloud.flavors
                      if f['name'] == 'g1.h100.1')
        self.assertEqual(['id-research'],
                         self.client.compute.flavor_access(flavor['id']))
        self.assertEqual('dedicated',
                         flavor['extra_specs']['hw:cpu_policy'])

    def test_flavor_that_fits_no_host_refused_before_any_write(self):
        data, _lines = document.load(self.text)
        data['flavors'].append({'name': 'g1.huge', 'pool': 'ws',
                                'vcpus': 512, 'ram': 1024, 'disk': 10})
        text = document.dump(document.check(data))
        before = self.state()
        calls = len(self.compute.calls)
        error = self.assertRaises(document_plan.Refused, self.apply, text)
        self.assertIn('flavor g1.huge fits no host of pool ws: gpu-vgpu-1 '
                      'has 128 VCPU free and g1.huge needs 512', str(error))
        self.assertEqual(calls, len(self.compute.calls))
        self.assertEqual(before, self.state())

    def test_an_error_the_doctor_would_find_after_is_refused(self):
        # a typo in a required trait: every boot would fail, and gpu
        # check would say so after the apply; the apply says it before
        data, _lines = document.load(self.text)
        data['flavors'].append({
            'name': 'g1.typo', 'pool': 'ws', 'vcpus': 2, 'ram': 1024,
            'disk': 10,
            'properties': {'trait:CUSTOM_NVIDIA_53': 'required'}})
        text = document.dump(document.check(data))
        before = self.state()
        calls = len(self.compute.calls)
        error = self.assertRaises(document_plan.Refused, self.apply, text)
        self.assertIn('flavor g1.typo: requires trait CUSTOM_NVIDIA_53, '
                      'which no resource provider of a compute host has: '
                      'every boot fails with "No valid host" (gpu check '
                      'flavor-unknown-trait would report it after this '
                      'apply', str(error))
        self.assertEqual(calls, len(self.compute.calls))
        self.assertEqual(before, self.state())

    def test_errors_the_cloud_has_already_are_not_the_applys(self):
        # a hand-made flavor of pool ws with the same typo exists: gpu
        # check reports it today; an apply that does not touch it goes on
        data, _lines = document.load(self.text)
        self.cloud.add_flavor('hand.typo', vcpus=2, ram=1024, disk=10,
                              extra_specs={
                                  'resources:VGPU': '1',
                                  'aggregate_instance_extra_specs:gpu_pool':
                                  'ws',
                                  'trait:CUSTOM_NVIDIA_53': 'required'})
        for pool in data['pools']:
            if pool['name'] == 'ws':
                pool['properties'] = {'team': 'solvers'}
        self.apply(document.dump(document.check(data)))
        agg = next(a for a in self.cloud.aggregates if a.name == 'ws')
        self.assertEqual('solvers', agg.metadata['team'])

    def test_a_pci_id_no_provider_offers_is_refused_with_its_line(self):
        text = ('version: 1\n'
                'pools:\n'
                '- name: zz\n'
                '  mode: vgpu\n'
                '  vgpu_type: nvidia-35\n'
                '- name: aa\n'
                '  mode: passthrough\n'
                '  alias: a40\n'
                '  pci_id: 10de:2235\n'
                '- name: mm\n'
                '  mode: passthrough\n'
                '  resource_class: CUSTOM_NOPE\n'
                '  alias: nope\n'
                '  pci_id: 10de:2236\n')
        before = self.state()
        calls = len(self.compute.calls)
        error = self.assertRaises(document.DocumentError, self.apply, text)
        self.assertEqual(
            ['line 9: pools[1].pci_id: no resource provider of this cloud '
             'offers CUSTOM_PCI_10DE_2235, the class of pool aa',
             'line 12: pools[2].resource_class: no resource provider of '
             'this cloud offers CUSTOM_NOPE, the class of pool mm'],
            [p.split(':  check')[0].split(': check')[0]
             for p in error.problems])
        self.assertEqual(calls, len(self.compute.calls))
        self.assertEqual(before, self.state())

    def test_flavor_of_a_pool_without_hosts_refused(self):
        text = self.text.replace('  - gpu-vgpu-1\n', '', 1)
        data, _lines = document.load(text)
        for pool in data['pools']:
            if pool['name'] == 'ws':
                pool['hosts'] = []
        text = document.dump(document.check(data))
        error = self.assertRaises(document_plan.Refused, self.apply, text)
        self.assertIn('flavor g1.vgpu.2: pool ws has no host', str(error))

    def test_single_command_refusal_refuses_the_apply(self):
        # the last project of a limited pool: gpu pool unset refuses it
        data, _lines = document.load(self.text)
        for pool in data['pools']:
            pool.pop('projects', None)
        for flavor in data['flavors']:
            flavor.pop('projects', None)
            flavor.pop('public', None)
        text = document.dump(document.check(data))
        calls = len(self.compute.calls)
        error = self.assertRaises(document_plan.Refused, self.apply, text,
                                  recreate_flavors=True)
        self.assertIn('pool solver: Removing id-research would leave pool '
                      'solver with no project', str(error))
        self.assertEqual(calls, len(self.compute.calls))

    def test_failure_mid_apply_leaves_the_cloud_as_it_was(self):
        data, _lines = document.load(self.text)
        for pool in data['pools']:
            if pool['name'] == 'ws':
                pool['isolate'] = True
                pool['properties'] = {'team': 'design'}
        for flavor in data['flavors']:
            if flavor['name'] == 'g1.vgpu.2':
                flavor['description'] = 'two of them'
        for image in data['images']:
            image['properties']['hw_firmware_type'] = 'bios'
        text = document.dump(document.check(data))
        before = self.state()
        image = self.cloud.images[0]['id']
        self.glance.fail[image] = 500
        error = self.assertRaises(exceptions.CommandError, self.apply, text)
        self.assertIn('failed at step', str(error))
        self.assertEqual(before, self.state())
        # the fault gone, the same apply converges
        del self.glance.fail[image]
        self.assertTrue(self.apply(text))
        self.assertEqual([], self.rows(text))


class TestConflicts(ApplyTestCase):
    """A stale document does not win silently (issue 51, defect 12): the
    export records what each field held, and gpu apply refuses, before
    any write, to change a field the cloud changed since, unless
    --force-conflicts."""

    def setUp(self):
        super().setUp()
        self.build()
        self.adopt()
        self.text = document_ops.export(self.client)

    def refused(self, text, **kwargs):
        """The problems of the refused apply of TEXT; nothing written."""
        before, calls = self.state(), len(self.compute.calls)
        error = self.assertRaises(document_plan.Refused, self.apply, text,
                                  **kwargs)
        self.assertEqual(calls, len(self.compute.calls))
        self.assertEqual(before, self.state())
        return error.problems

    def test_a_stale_document_is_refused_naming_the_field(self):
        agg = self.hand_edit()  # team=ml, by another operator
        expected = [
            'pool solver: changed in the cloud since the document was '
            'exported, and the document would overwrite it: '
            'properties.team (recorded hpc, now ml, wanted hpc). Export '
            'again and make the edit there, or give --force-conflicts to '
            'overwrite']
        self.assertEqual(expected, self.refused(self.text))
        # a dry run says the same, and writes nothing either
        self.assertEqual(expected, self.refused(self.text, dry_run=True))
        # gpu diff shows the conflict on the row
        rows = document_ops.diff(self.client, self.path(self.text))
        self.assertEqual([[{'field': 'properties.team', 'recorded': 'hpc',
                            'now': 'ml', 'wanted': 'hpc'}]],
                         [r['conflicts'] for r in rows])
        # the author's own edit of that field conflicts too
        edited = self.text.replace('team: hpc', 'team: ai', 1)
        self.assertIn('properties.team (recorded hpc, now ml, wanted ai)',
                      self.refused(edited)[0])
        self.assertEqual('ml', agg.metadata['team'])
        # --force-conflicts: the document wins, and the plan says over what
        plan = self.apply(edited, force_conflicts=True, dry_run=True)
        self.assertEqual('ml', agg.metadata['team'])
        self.assertIn('pool solver: properties.team (recorded hpc, now ml, '
                      'wanted ai)', ' '.join(plan.warnings))
        self.apply(edited, force_conflicts=True)
        self.assertEqual('ai', agg.metadata['team'])

    def test_the_authors_edits_go_through(self):
        # the cloud as the export recorded it: every edit is the author's
        self.cloud.vgpu_host('gpu-vgpu-2')
        text = self.text.replace('team: hpc', 'team: ai', 1).replace(
            '  - gpu-vgpu-1\n', '  - gpu-vgpu-1\n  - gpu-vgpu-2\n', 1)
        plan = self.apply(text)
        self.assertEqual([], [w for w in plan.warnings if 'export' in w])
        aggs = {a.name: a for a in self.cloud.aggregates}
        self.assertEqual('ai', aggs['solver'].metadata['team'])
        self.assertEqual(['gpu-vgpu-1', 'gpu-vgpu-2'],
                         sorted(aggs['ws'].hosts))

    def test_every_object_changed_since_at_once(self):
        # another operator, with plain openstack: a host added to a pool,
        # a flavor's extra spec, a project's GPU quota
        self.cloud.vgpu_host('gpu-vgpu-2')
        pool_ops.add_hosts(self.client, 'ws', ['gpu-vgpu-2'])
        flavor = next(f for f in self.cloud.flavors
                      if f['name'] == 'g1.h100.1')
        self.client.compute.set_flavor_extra_specs(
            flavor['id'], {'hw:cpu_policy': 'shared'})
        limit = next(r for r in self.keystone.project_limits
                     if r.project_id == 'id-research')
        limit.resource_limit = 8
        # the author adds a host of their own: not in question
        self.cloud.vgpu_host('gpu-vgpu-3')
        text = self.text.replace('  - gpu-vgpu-1\n',
                                 '  - gpu-vgpu-1\n  - gpu-vgpu-3\n', 1)
        problems = self.refused(text)
        self.assertEqual(
            ['pool ws', 'flavor g1.h100.1',
             'quota class:%s (project id-research)' % PT_CLASS],
            [p.split(': changed')[0] for p in problems])
        self.assertIn('hosts (recorded [gpu-vgpu-1], now [gpu-vgpu-1, '
                      'gpu-vgpu-2], wanted [gpu-vgpu-1, gpu-vgpu-3])',
                      problems[0])
        self.assertIn('properties.hw:cpu_policy (recorded dedicated, now '
                      'shared, wanted dedicated)', problems[1])
        self.assertIn('gpus (recorded 4, now 8, wanted 4)', problems[2])

    def test_a_document_without_record_is_applied_with_a_warning(self):
        # written by hand or by an older gpuclient: as before, said
        agg = self.hand_edit()
        text = self.text.split(document.OBSERVED_HEADER)[0]
        self.assertNotIn('observed', text)
        plan = self.apply(text)
        self.assertEqual('hpc', agg.metadata['team'])
        self.assertIn('Not checked for changes made in the cloud since the '
                      'export, as the document records no earlier value of '
                      'them (written by hand, by a gpuclient older than the '
                      'record, or added after the export): pool solver.',
                      plan.warnings[0])
        self.assertEqual(1, len(plan.warnings), plan.warnings)


class TestScope(ApplyTestCase):
    """gpu diff/apply --pool: only those pools, their flavors and the
    quotas of their classes; prune never leaves the scope."""

    def setUp(self):
        super().setUp()
        self.build()
        self.adopt()

    def server_reads(self):
        return [g for g in self.compute.gets if g[0] == '/servers/detail']

    def test_export_of_a_pool_round_trips(self):
        text = document_ops.export(self.client, ['ws'])
        before = self.state()
        self.assertEqual([], list(self.apply(text, pool_names=['ws'])))
        self.assertEqual([], list(self.apply(text, prune=True,
                                             pool_names=['ws'])))
        self.assertEqual([], document_ops.diff(
            self.client, self.path(text), prune=True, pool_names=['ws']))
        self.assertEqual(before, self.state())
        # no host leaves a pool: the servers are not read
        self.assertEqual([], self.server_reads())

    def test_prune_removes_the_dropped_pool_and_nothing_outside(self):
        other = self.compute.create_aggregate('ordinary')
        self.compute.set_aggregate_metadata(other, {'ssd': 'true'})
        before = self.state()
        text = self.path('version: 1\n', 'empty.yaml')
        rows = document_ops.diff(self.client, text, prune=True,
                                 pool_names=['ws'])
        self.assertEqual([('pool ws', 'delete'),
                          ('flavor g1.vgpu.2', 'delete'),
                          ('quota class:VGPU (default)', 'delete')],
                         [(r['object'], r['change']) for r in rows])
        document_ops.apply(self.client, text, prune=True,
                           pool_names=['ws'])
        after = self.state()
        self.assertNotIn('ws', after['aggregates'])
        self.assertNotIn('g1.vgpu.2', after['flavors'])
        self.assertNotIn((None, 'class:VGPU', -1), after['limits'])
        for name in ('ordinary', 'solver'):
            self.assertEqual(before['aggregates'][name],
                             after['aggregates'][name])
        for name in ('m1.small', 'g1.h100.1'):
            self.assertEqual(before['flavors'][name], after['flavors'][name])
        self.assertEqual(before['images'], after['images'])
        self.assertEqual([lim for lim in before['limits']
                          if lim[1] != 'class:VGPU'], after['limits'])
        pt = next(p for p in self.cloud.providers
                  if p.name == 'gpu-pt-1.test')
        self.assertEqual(before['traits'][pt.uuid], after['traits'][pt.uuid])

    def test_prune_keeps_quotas_of_a_class_shared_outside(self):
        # ws2 shares VGPU with ws: --pool ws --prune takes ws and its
        # flavor, never the VGPU quotas (they limit ws2's GPUs too)
        self.cloud.vgpu_host('gpu-vgpu-2')
        pool_ops.create(self.client, pools.build_spec(
            'ws2', 'vgpu', vgpu_type='nvidia-36'), ['gpu-vgpu-2'])
        self.client.limits.create_limit('id-research', 'class:VGPU', 3)
        self.adopt()
        before = self.state()
        empty = self.path('version: 1\n', 'empty.yaml')
        plan = document_ops.apply(self.client, empty, prune=True,
                                  pool_names=['ws'])
        self.assertNotIn('limit.delete', [s.op for s in plan])
        after = self.state()
        self.assertNotIn('ws', after['aggregates'])
        self.assertIn('ws2', after['aggregates'])
        self.assertEqual(
            [lim for lim in before['limits'] if 'VGPU' in lim[1]],
            [lim for lim in after['limits'] if 'VGPU' in lim[1]])

    def test_the_rest_of_the_document_is_left_out(self):
        data, _lines = document.load(document_ops.export(self.client))
        for pool in data['pools']:
            pool['properties'] = {'team': 'changed'}
        data['images'] = []
        text = document.dump(document.check(data))
        plan = self.apply(text, prune=True, pool_names=['ws'])
        self.assertEqual(['aggregate.metadata'], [s.op for s in plan])
        self.assertEqual('ws', plan.steps[0].args['name'])
        agg = {a.name: a for a in self.cloud.aggregates}
        self.assertEqual('hpc', agg['solver'].metadata['team'])
        self.assertEqual('changed', agg['ws'].metadata['team'])
        # the image the document dropped keeps its GPU properties
        self.assertEqual('q35', self.cloud.images[0]['hw_machine_type'])
        self.assertIn('Left out by --pool ws: pool solver, flavor '
                      'g1.h100.1', self.logger.output)

    def test_a_pool_of_the_document_only_is_created(self):
        text = self.path(
            'version: 1\npools:\n- name: ws2\n  mode: vgpu\n'
            '  vgpu_type: nvidia-35\n  hosts: [gpu-vgpu-1]\n')
        plan = document_ops.apply(self.client, text, prune=True,
                                  pool_names=['ws2'])
        self.assertIn('aggregate.create', [s.op for s in plan])
        self.assertEqual({'solver', 'ws', 'ws2'},
                         {a.name for a in self.cloud.aggregates})

    def test_unknown_pool_refused_nothing_written(self):
        calls = len(self.compute.calls)
        text = document_ops.export(self.client, ['ws'])
        error = self.assertRaises(exceptions.CommandError, self.apply, text,
                                  prune=True, pool_names=['ws', 'nope'])
        self.assertIn('--pool nope: no such pool in the document nor in the '
                      'cloud', str(error))
        self.assertIn('describe the pool in the document', str(error))
        self.assertEqual(calls, len(self.compute.calls))


class TestServersLeftBehind(ApplyTestCase):
    """A host the document takes out of a pool while it runs servers whose
    flavor steers to that pool only is refused, as gpu pool remove host
    refuses it."""

    def setUp(self):
        super().setUp()
        self.build()
        self.cloud.vgpu_host('gpu-vgpu-2')
        pool_ops.add_hosts(self.client, 'ws', ['gpu-vgpu-2'])
        flavor = next(f for f in self.cloud.flavors
                      if f['name'] == 'g1.vgpu.2')
        self.cloud.servers.append({
            'id': 'srv-1', 'name': 'vm', 'status': 'ACTIVE',
            'OS-EXT-SRV-ATTR:host': 'gpu-vgpu-1',
            'flavor': {'original_name': 'g1.vgpu.2', 'vcpus': 8,
                       'ram': 32768, 'disk': 100,
                       'extra_specs': dict(flavor['extra_specs'])}})
        self.adopt()
        self.text = document_ops.export(self.client)

    def test_dropping_the_host_refused_before_any_write(self):
        before = self.state()
        calls = len(self.compute.calls)
        text = self.text.replace('  - gpu-vgpu-1\n', '', 1)
        error = self.assertRaises(document_plan.Refused, self.apply, text)
        self.assertIn('pool ws: Taking gpu-vgpu-1 out of pool ws would '
                      'strand servers: gpu-vgpu-1 runs 1 server(s) of '
                      'flavor g1.vgpu.2 (srv-1)', str(error))
        self.assertIn('openstack gpu host drain gpu-vgpu-1', str(error))
        self.assertIn('"openstack gpu pool remove host --allow-servers ws '
                      'gpu-vgpu-1"', str(error))
        self.assertEqual(calls, len(self.compute.calls))
        self.assertEqual(before, self.state())
        # the other host runs none: dropping it goes through
        plan = self.apply(self.text.replace('  - gpu-vgpu-2\n', '', 1))
        self.assertIn('aggregate.remove_host', [s.op for s in plan])

    def test_pruning_the_pool_refused(self):
        data, _lines = document.load(self.text)
        data['pools'] = [p for p in data['pools'] if p['name'] != 'ws']
        data['flavors'] = [f for f in data['flavors'] if f['pool'] != 'ws']
        data['quotas'] = [q for q in data['quotas'] if q.get('pool') != 'ws']
        text = document.dump(document.check(data))
        before = self.state()
        error = self.assertRaises(document_plan.Refused, self.apply, text,
                                  prune=True)
        self.assertIn('pool ws: Taking gpu-vgpu-1 out of pool ws would '
                      'strand servers', str(error))
        self.assertEqual(before, self.state())
        # and so with --pool
        error = self.assertRaises(document_plan.Refused, self.apply, text,
                                  prune=True, pool_names=['ws'])
        self.assertIn('would strand servers', str(error))


class TestApplyReadsOnce(ApplyTestCase):
    """gpu apply reads the cloud once, from the file to its first write:
    no list and no provider is read twice."""

    def setUp(self):
        super().setUp()
        self.build()
        self.adopt()
        self.text = document_ops.export(self.client)

    def reads(self, text, **kwargs):
        """The reads one apply of TEXT sends, as (service, what) pairs,
        each as often as it is sent."""
        proxy = self.client._conn.compute
        identity = self.client._conn.identity
        listed = {(kind, name): getattr(mock_proxy, name).call_count
                  for kind, mock_proxy, names in (
                      ('compute', proxy, ('aggregates', 'services',
                                          'servers')),
                      ('identity', identity, ('registered_limits',
                                              'limits')))
                  for name in names}
        gets = len(self.compute.gets)
        placement = len(self.placement.requests())
        images = len(self.glance.gets)
        plan = self.apply(text, **kwargs)
        found = []
        for (kind, name), before in listed.items():
            mock_proxy = proxy if kind == 'compute' else identity
            found += [(kind, name, repr(call))
                      for call in getattr(mock_proxy, name).call_args_list[
                          before:]]
        found += [('compute', url, tuple(sorted(params.items())))
                  for url, _version, params in self.compute.gets[gets:]]
        found += [('placement', r.method, r.path, r.query)
                  for r in self.placement.requests()[placement:]
                  if r.method == 'GET']
        found += [('image', repr(get)) for get in self.glance.gets[images:]]
        return plan, found

    def assert_read_once(self, reads):
        twice = sorted({r for r in reads if reads.count(r) > 1})
        self.assertEqual([], twice)

    def test_an_unchanged_document_reads_each_thing_once(self):
        plan, reads = self.reads(self.text)
        self.assertEqual([], list(plan))
        self.assert_read_once(reads)
        # aggregates, services, hypervisors, flavors, one private flavor's
        # access, providers, candidates, traits, images, Keystone's two
        # limit lists: as many as before the one model, never more
        self.assertEqual(11, len(reads), reads)
        self.assertIn(('compute', 'aggregates', 'call()'), reads)
        self.assertIn(('compute', 'services', "call(binary='nova-compute')"),
                      reads)

    def test_a_host_joining_a_zoned_pool_reads_each_thing_once(self):
        self.cloud.vgpu_host('gpu-vgpu-2')
        data, _lines = document.load(self.text)
        data['pools'][1]['zone'] = 'gpu-az'
        data['pools'][1]['hosts'].append('gpu-vgpu-2')
        text = document.dump(document.check(data))
        _plan, reads = self.reads(text, dry_run=True)
        self.assert_read_once(reads)
        # the unchanged document's reads and, for the two hosts whose
        # zone changes, whether they have instances (15 when the zone
        # check listed aggregates and services again)
        self.assertEqual(13, len(reads), reads)
