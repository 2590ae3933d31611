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

"""``gpu export``, ``gpu diff`` and ``gpu apply`` against the real cloud:
the export of a pool gpuclient built is in sync with the cloud, a hand
edit made with plain ``openstack aggregate set`` is drift (exit 2) that
names the pool, a broken document is refused (exit 1) with its line and
field; apply builds and converges, and ``--prune --pool`` removes that
pool and nothing else (the only real prune a shared cloud allows)."""

import json
import os
import re

import fixtures
import yaml

from gpuclient.tests.functional import base


def export(test, pool):
    """(path, parsed document) of ``gpu export --pool POOL`` into a
    temporary directory of TEST."""
    where = test.useFixture(fixtures.TempDir()).path
    path = os.path.join(where, 'gpu.yaml')
    test.openstack('gpu', 'export', '--pool', pool, '--output', path,
                   parse=False)
    with open(path) as text:
        return path, yaml.safe_load(text)


class TestExportDiff(base.FunctionalTestCase):

    def make_pool(self, *extra):
        name = self.unique_name('vgpu')
        self.addCleanup(self.delete_pool, name)
        self.openstack('gpu', 'pool', 'create', name, '--mode', 'vgpu',
                       '--vgpu-type', 'nvidia-35', '--host', base.VGPU_HOST,
                       *extra, parse=False)
        return name

    @base.needs('vgpu')
    def test_export_is_in_sync_and_a_hand_edit_is_drift(self):
        pool = self.make_pool('--property', 'team=solvers')
        flavor = self.make_flavor(pool)
        path, document = export(self, pool)
        self.assertEqual([pool], [p['name'] for p in document['pools']])
        self.assertEqual([base.VGPU_HOST], document['pools'][0]['hosts'])
        self.assertEqual({'team': 'solvers'},
                         document['pools'][0]['properties'])
        self.assertIn(flavor, [f['name'] for f in document['flavors']])

        rc, out, err = self.openstack_raw('gpu', 'diff', path, '-f', 'json')
        self.assertEqual(0, rc, out + err)

        # another operator's edit, with plain OSC
        self.openstack('aggregate', 'set', '--property', 'team=graphics',
                       pool, parse=False)
        rc, out, err = self.openstack_raw('gpu', 'diff', path, '-f', 'json')
        self.assertEqual(1, rc, out + err)
        self.assertIn(pool, out)
        self.assertIn('graphics', out)

    def test_a_broken_document_names_its_line_and_field(self):
        where = self.useFixture(fixtures.TempDir()).path
        path = os.path.join(where, 'gpu.yaml')
        with open(path, 'w') as out:
            out.write('version: 1\npools:\n- name: broken\n  mode: vgu\n')
        rc, out, err = self.openstack_raw('gpu', 'diff', path)
        self.assertEqual(2, rc, out + err)
        self.assertIn('line 4', err)
        self.assertIn('pools[0].mode', err)


class TestApply(base.FunctionalTestCase):
    """``gpu apply``: what plain ``openstack`` then reads from the cloud."""

    def document(self, pools, flavors=(), quotas=()):
        where = self.useFixture(fixtures.TempDir()).path
        path = os.path.join(where, 'gpu.yaml')
        with open(path, 'w') as out:
            yaml.safe_dump({'version': 1, 'pools': list(pools),
                            'flavors': list(flavors),
                            'quotas': list(quotas)}, out)
        return path

    def cleanup_objects(self, pools, flavors):
        # cleanups run last first: the flavors go before their pools
        for pool in pools:
            self.addCleanup(self.delete_pool, pool)
        for flavor in flavors:
            self.addCleanup(self.openstack_raw, 'flavor', 'delete', flavor)

    @base.needs('vgpu')
    def test_apply_builds_converges_and_puts_a_hand_edit_back(self):
        pool, flavor = self.unique_name('ws'), self.unique_name('g1')
        self.cleanup_objects([pool], [flavor])
        path = self.document(
            [{'name': pool, 'mode': 'vgpu', 'vgpu_type': 'nvidia-35',
              'hosts': [base.VGPU_HOST], 'isolate': True,
              'properties': {'team': 'solvers'}}],
            [{'name': flavor, 'pool': pool, 'gpus': 1, 'vcpus': 1,
              'ram': 512, 'disk': 1}])
        self.openstack('gpu', 'apply', path, parse=False)
        # what Nova and Placement hold now, read with plain OSC
        agg = self.openstack('aggregate', 'show', pool)
        self.assertEqual([base.VGPU_HOST], agg['hosts'])
        self.assertEqual('solvers', agg['properties']['team'])
        trait = 'CUSTOM_GPU_POOL_' + pool.upper().replace('-', '_')
        self.assertIn(trait, self.traits(self.root_provider(base.VGPU_HOST)))
        specs = self.openstack('flavor', 'show', flavor)['properties']
        self.assertEqual('1', specs['resources:VGPU'])
        self.assertEqual('required', specs['trait:%s' % trait])
        # a second apply plans nothing; diff is in sync
        rc, out, err = self.openstack_raw('gpu', 'apply', path,
                                          '--dry-run')
        self.assertEqual(0, rc, err)
        self.assertIn('nothing to do', out)
        self.assertEqual(0, self.openstack_raw('gpu', 'diff', path)[0])
        # another operator's edit is drift, and apply puts it back
        self.openstack('aggregate', 'set', '--property', 'team=graphics',
                       pool, parse=False)
        self.assertEqual(1, self.openstack_raw('gpu', 'diff', path)[0])
        self.openstack('gpu', 'apply', path, parse=False)
        self.assertEqual('solvers', self.openstack(
            'aggregate', 'show', pool)['properties']['team'])

    @base.needs('vgpu')
    def test_a_flavor_that_fits_no_host_is_refused_before_any_write(self):
        pool, flavor = self.unique_name('ws'), self.unique_name('huge')
        self.cleanup_objects([pool], [flavor])
        path = self.document(
            [{'name': pool, 'mode': 'vgpu', 'vgpu_type': 'nvidia-35',
              'hosts': [base.VGPU_HOST]}],
            [{'name': flavor, 'pool': pool, 'gpus': 1, 'vcpus': 4096,
              'ram': 512, 'disk': 1}])
        rc, _out, err = self.openstack_raw('gpu', 'apply', path)
        self.assertEqual(1, rc, err)
        self.assertIn(flavor, err)
        self.assertIn('VCPU', err)
        # nothing was written: no aggregate, no flavor
        names = [a['Name'] for a in self.openstack('aggregate', 'list')]
        self.assertNotIn(pool, names)
        self.assertNotIn(flavor, [f['Name'] for f in self.openstack(
            'flavor', 'list', '--all')])

    @base.needs('vgpu', 'mig')
    def test_prune_of_a_pool_removes_it_and_nothing_else(self):
        # --pool keeps --prune to this test's own pool: without it, prune
        # acts on every pool gpuclient owns that the document does not
        # name, other tests' pools on this shared cloud included
        keep, drop = self.unique_name('keep'), self.unique_name('drop')
        self.cleanup_objects([keep, drop], [])
        ordinary = self.unique_name('agg')
        self.openstack('aggregate', 'create', ordinary, parse=False)
        self.addCleanup(self.openstack_raw, 'aggregate', 'delete', ordinary)
        # the apply makes the pool to drop and its flavor: both are the
        # apply's (marked), which --prune removes
        dropped_flavor = self.unique_name('flavor')
        self.cleanup_objects([], [dropped_flavor])
        self.openstack('gpu', 'apply', self.document([
            {'name': keep, 'mode': 'vgpu', 'vgpu_type': 'nvidia-35',
             'hosts': [base.VGPU_HOST], 'isolate': True},
            {'name': drop, 'mode': 'mig', 'mig_profile': '3g.40gb',
             'hosts': [base.MIG_HOST], 'isolate': True}], [
            {'name': dropped_flavor, 'pool': drop, 'vcpus': 1, 'ram': 512,
             'disk': 1}]), parse=False)
        kept_flavor = self.make_flavor(keep)
        # the export of one pool round-trips: in sync, nothing to apply
        where = self.useFixture(fixtures.TempDir()).path
        exported = os.path.join(where, 'drop.yaml')
        self.openstack('gpu', 'export', '--pool', drop, '--output',
                       exported, parse=False)
        rc, out, err = self.openstack_raw('gpu', 'diff', exported, '--pool',
                                          drop, '--prune')
        self.assertEqual(0, rc, out + err)
        rc, out, err = self.openstack_raw('gpu', 'apply', exported,
                                          '--pool', drop, '--prune',
                                          '--dry-run')
        self.assertEqual(0, rc, err)
        # nothing to do but marks: the export names the registered limit
        # of the pool's class (class:VGPU, shared by the whole cloud),
        # which another test may have made with "gpu quota set" (unmarked):
        # applying the export takes it over, and marks are not drift
        steps = [line for line in out.splitlines()
                 if re.match(r'\d+\. ', line)]
        self.assertTrue(steps or 'nothing to do' in out, out)
        for line in steps:
            self.assertIn('managed_by', line.split('(undo:')[0], out)
        before = self.aggregate(keep)
        keep_trait = 'CUSTOM_GPU_POOL_' + keep.upper().replace('-', '_')
        drop_trait = 'CUSTOM_GPU_POOL_' + drop.upper().replace('-', '_')
        self.assertIn(drop_trait,
                      self.traits(self.root_provider(base.MIG_HOST)))
        # the document drops the pool (and names nothing else): a real
        # prune of that pool
        self.openstack('gpu', 'apply', self.document([]), '--pool', drop,
                       '--prune', parse=False)
        names = {a['Name'] for a in self.openstack('aggregate', 'list')}
        self.assertNotIn(drop, names)
        self.assertLessEqual({keep, ordinary}, names)
        after = self.aggregate(keep)
        for field in ('hosts', 'properties', 'availability_zone'):
            self.assertEqual(before[field], after[field], field)
        self.assertNotIn(drop_trait,
                         self.traits(self.root_provider(base.MIG_HOST)))
        self.assertIn(keep_trait,
                      self.traits(self.root_provider(base.VGPU_HOST)))
        flavors = {f['Name'] for f in self.openstack('flavor', 'list',
                                                     '--all')}
        self.assertNotIn(dropped_flavor, flavors)
        self.assertIn(kept_flavor, flavors)

    @base.needs('vgpu')
    def test_prune_removes_only_what_apply_made(self):
        # issue 36, defects 4 and 5: after the export, another operator
        # makes a flavor with gpu flavor create and a Windows UEFI image
        # with plain openstack image create; --prune with the export (a
        # flavor dropped from it) removes the apply's flavor only
        pool = self.unique_name('ws')
        made, dropped = self.unique_name('g1'), self.unique_name('g2')
        self.cleanup_objects([pool], [made, dropped])
        flavor = {'pool': pool, 'vcpus': 1, 'ram': 512, 'disk': 1}
        self.openstack('gpu', 'apply', self.document(
            [{'name': pool, 'mode': 'vgpu', 'vgpu_type': 'nvidia-35',
              'hosts': [base.VGPU_HOST]}],
            [dict(flavor, name=made), dict(flavor, name=dropped)]),
            parse=False)
        # the marks, on the objects, read with plain openstack
        self.assertEqual('gpu-apply', self.aggregate(pool)['properties'][
            'gpu_managed_by'])
        self.assertEqual('gpu-apply', self.openstack(
            'flavor', 'show', dropped)['properties']['gpuclient:managed_by'])
        where = self.useFixture(fixtures.TempDir()).path
        exported = os.path.join(where, 'gpu.yaml')
        self.openstack('gpu', 'export', '--pool', pool, '--output',
                       exported, parse=False)
        # since the export: another operator's flavor and UEFI image
        theirs = self.make_flavor(pool)
        image = self.openstack(
            'image', 'create', '--disk-format', 'raw', '--container-format',
            'bare', '--property', 'hw_firmware_type=uefi', '--property',
            'hw_machine_type=q35', '--property', 'os_secure_boot=required',
            self.unique_name('windows'))
        self.addCleanup(self.openstack, 'image', 'delete', image['id'],
                        parse=False)
        with open(exported) as text:
            document = yaml.safe_load(text)
        document['flavors'] = [f for f in document['flavors']
                               if f['name'] != dropped]
        path = os.path.join(where, 'pruned.yaml')
        with open(path, 'w') as out:
            yaml.safe_dump(document, out)
        # the whole layer compared (read only: a whole --prune on a
        # shared cloud would act on other tests' objects): the image and
        # their flavor are not the document's, the dropped flavor is
        rc, out, err = self.openstack_raw('gpu', 'diff', path, '--prune',
                                          '-f', 'json')
        self.assertEqual(1, rc, err)
        rows = {row['Object']: row['Change'] for row in json.loads(out)}
        self.assertEqual('untracked', rows['image %s' % image['name']])
        self.assertEqual('untracked', rows['flavor %s' % theirs])
        self.assertEqual('delete', rows['flavor %s' % dropped])
        rc, out, err = self.openstack_raw('gpu', 'apply', path, '--pool',
                                          pool, '--prune')
        self.assertEqual(0, rc, err)
        self.assertIn('Not pruned, though the document does not name them: '
                      'flavor %s' % theirs, err)
        self.assertIn('Prunes flavor %s' % dropped, err)
        flavors = {f['Name'] for f in self.openstack('flavor', 'list',
                                                     '--all')}
        self.assertNotIn(dropped, flavors)
        self.assertIn(made, flavors)
        self.assertNotIn('gpuclient:managed_by', self.openstack(
            'flavor', 'show', theirs)['properties'])
        props = self.openstack('image', 'show', image['id'])['properties']
        self.assertEqual(('uefi', 'q35', 'required'), (
            props.get('hw_firmware_type'), props.get('hw_machine_type'),
            props.get('os_secure_boot')))


class TestStaleDocument(base.FunctionalTestCase):
    """Issue 51, defect 12: a stale export does not undo what another
    operator changed since, unless --force-conflicts."""

    @base.needs('vgpu')
    def test_a_stale_export_is_refused_and_forced(self):
        # a pool without hosts: no host of another test is touched
        pool = self.unique_name('stale')
        self.addCleanup(self.delete_pool, pool)
        self.openstack('gpu', 'pool', 'create', pool, '--mode', 'vgpu',
                       '--vgpu-type', 'nvidia-35', '--property', 'team=hpc',
                       parse=False)
        path, document = export(self, pool)
        # this test's pool only: the quotas on its class (VGPU) are every
        # vGPU pool's, which other tests may change meanwhile
        for part in (document, document.get('observed') or {}):
            part.pop('quotas', None)
        with open(path, 'w') as out:
            yaml.safe_dump(document, out)
        # since the export: another operator's edit, with plain OSC
        self.openstack('aggregate', 'set', '--property', 'team=ml-ops',
                       pool, parse=False)

        rc, out, err = self.openstack_raw('gpu', 'apply', path, '--pool',
                                          pool)
        self.assertEqual(1, rc, out + err)
        self.assertIn('pool %s: changed in the cloud since the document was '
                      'exported' % pool, err)
        self.assertIn('properties.team (recorded hpc, now ml-ops, wanted '
                      'hpc)', err)
        self.assertIn('--force-conflicts', err)
        # what Nova holds: the other operator's value, and nothing written
        # (not even gpu apply's mark)
        properties = self.aggregate(pool)['properties']
        self.assertEqual('ml-ops', properties['team'])
        self.assertNotIn('gpu_managed_by', properties)
        # gpu diff shows the conflict on the pool's row
        rc, out, err = self.openstack_raw('gpu', 'diff', path, '--pool',
                                          pool, '-f', 'json')
        self.assertEqual(1, rc, out + err)
        row = next(r for r in json.loads(out)
                   if r['Object'] == 'pool %s' % pool)
        self.assertEqual([{'field': 'properties.team', 'recorded': 'hpc',
                           'now': 'ml-ops', 'wanted': 'hpc'}],
                         row['Conflicts'])

        rc, out, err = self.openstack_raw('gpu', 'apply', path, '--pool',
                                          pool, '--force-conflicts')
        self.assertEqual(0, rc, out + err)
        self.assertEqual('hpc', self.aggregate(pool)['properties']['team'])
