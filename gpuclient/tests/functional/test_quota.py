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

"""openstack gpu quota: Keystone unified limits that Nova enforces.

Proofs are what Keystone holds (``openstack limit list``) and what Nova
does (boots accepted or refused as over quota, in a project of the
test's own); the cloud's Nova runs ``[quota] driver =
nova.quota.UnifiedLimitsDriver`` (tools/cloud/etc/nova.conf).
"""

import json
import uuid

from gpuclient.tests.functional import base

PT_CLASS = 'CUSTOM_PCI_10DE_2331'


class TestQuota(base.KeepsLaneBOut, base.FunctionalTestCase):

    def make_project(self):
        """A project of this test, where the admin user is admin."""
        name = self.unique_name('quota')
        project = self.openstack('project', 'create', name)
        self.addCleanup(self.openstack, 'project', 'delete', project['id'],
                        parse=False)
        self.openstack('role', 'add', '--project', project['id'], '--user',
                       'admin', 'admin', parse=False)
        return project

    def make_pool(self, mode, host):
        name = self.unique_name(mode)
        extra = {'passthrough': ('--alias', 'h100', '--pci-id', '10de:2331'),
                 'vgpu': ('--vgpu-type', 'ft-%s' % uuid.uuid4().hex[:6])}
        rc, _out, err = self.openstack_raw(
            'gpu', 'pool', 'create', name, '--mode', mode, *extra[mode],
            '--host', host)
        self.addCleanup(self.delete_pool, name)
        self.assertEqual(0, rc, err)
        return name

    def make_flavor(self, pool):
        name = self.unique_name('flavor')
        rc, _out, err = self.openstack_raw(
            'gpu', 'flavor', 'create', name, '--pool', pool, '--gpus', '1',
            '--vcpus', '1', '--ram', '512', '--disk', '1')
        self.addCleanup(self.openstack_raw, 'flavor', 'delete', name)
        self.assertEqual(0, rc, err)
        return name

    def boot_in(self, project, flavor):
        """(rc, server or None, stderr) of one boot in PROJECT."""
        name = self.unique_name('server')
        scope = ('--os-project-name', project['name'])
        rc, out, err = self.openstack_raw(
            *scope, '--os-compute-api-version', base.COMPUTE_API, 'server',
            'create', '--flavor', flavor, '--image', base.IMAGE, '--nic',
            'none', '--wait', name, '-f', 'json')
        server = json.loads(out) if rc == 0 and out.strip() else None
        if server is not None:
            self.addCleanup(self.openstack, *scope, 'server', 'delete',
                            '--wait', server['id'], parse=False)
        return rc, server, err

    def servers_of(self, project):
        return self.openstack('server', 'list', '--project', project['id'])

    def keystone_limits(self, project):
        """{resource name: limit} Keystone holds for PROJECT."""
        return {row['Resource Name']: row['Resource Limit']
                for row in self.openstack('limit', 'list', '--project',
                                          project['id'])}

    def registered(self):
        return {row['Resource Name']: row['Default Limit']
                for row in self.openstack('registered', 'limit', 'list')}

    def forget_registered(self, resource_class):
        """Delete at cleanup the registered limit of RESOURCE_CLASS if
        this test's "gpu quota set" created it."""
        if 'class:' + resource_class in self.registered():
            return
        self.addCleanup(self.openstack_raw, 'gpu', 'quota', 'delete',
                        '--default', '--resource-class', resource_class)

    def quota_row(self, project, resource_class):
        rows = self.openstack('gpu', 'quota', 'show', '--project',
                              project['id'])
        found = [r for r in rows if r['Resource Class'] == resource_class]
        self.assertEqual(1, len(found), rows)
        return found[0]

    def set_quota(self, project, gpus, *target):
        self.openstack('gpu', 'quota', 'set', '--project', project['id'],
                       *target, '--gpus', str(gpus), parse=False)

    def assert_refused(self, project, flavor, resource_class, count):
        rc, server, err = self.boot_in(project, flavor)
        self.assertNotEqual(0, rc, server)
        self.assertIn('class:%s' % resource_class, err)
        self.assertIn('limit', err.lower())
        # refused by the API: no server was made
        self.assertEqual(count, len(self.servers_of(project)))

    @base.needs('passthrough')
    def test_passthrough_limit(self):
        project = self.make_project()
        pool = self.make_pool('passthrough', base.PT_HOST)
        flavor = self.make_flavor(pool)
        self.forget_registered(PT_CLASS)
        self.set_quota(project, 2, '--pool', pool)
        self.addCleanup(self.openstack_raw, 'gpu', 'quota', 'delete',
                        '--project', project['id'], '--pool', pool)
        self.assertEqual(2, self.keystone_limits(project)['class:' +
                                                           PT_CLASS])
        # issue 40, rule 1: Nova 2026.2 (compute API 2.104) counts GPUs
        # asked through a PCI alias, so no "not enforced" warning; the
        # refused third boot below is Nova enforcing it
        rc, _out, err = self.openstack_raw(
            'gpu', 'quota', 'show', '--project', project['id'])
        self.assertEqual(0, rc, err)
        self.assertNotIn('is not enforced', err)
        for _ in range(2):
            rc, server, err = self.boot_in(project, flavor)
            self.assertEqual(0, rc, err)
            self.assertEqual(1, self.allocations(server['id'])[PT_CLASS])
        self.assert_refused(project, flavor, PT_CLASS, 2)
        row = self.quota_row(project, PT_CLASS)
        self.assertEqual((2, 2, 0, 'project'), (
            row['Limit'], row['In Use'], row['Free'], row['Source']))
        self.assertIn(pool, row['Pools'])
        # candidates --explain names the quota as the reason
        rc, _out, err = self.openstack_raw(
            'gpu', 'candidate', 'list', '--flavor', flavor, '--project',
            project['id'], '--explain')
        self.assertIn('over its GPU quota', err)
        self.assertIn('class:%s: 2 used + 1 asked > 2' % PT_CLASS, err)
        # raising the limit lets the third boot
        self.set_quota(project, 3, '--pool', pool)
        self.assertEqual(3, self.keystone_limits(project)['class:' +
                                                           PT_CLASS])
        rc, server, err = self.boot_in(project, flavor)
        self.assertEqual(0, rc, err)
        self.assertEqual('ACTIVE', server['status'])

    @base.needs('vgpu')
    def test_vgpu_limit(self):
        project = self.make_project()
        pool = self.make_pool('vgpu', base.VGPU_HOST)
        flavor = self.make_flavor(pool)
        self.forget_registered('VGPU')
        self.set_quota(project, 1, '--pool', pool)
        self.addCleanup(self.openstack_raw, 'gpu', 'quota', 'delete',
                        '--project', project['id'], '--pool', pool)
        self.assertEqual(1, self.keystone_limits(project)['class:VGPU'])
        rc, server, err = self.boot_in(project, flavor)
        self.assertEqual(0, rc, err)
        self.assertEqual(1, self.allocations(server['id'])['VGPU'])
        self.assert_refused(project, flavor, 'VGPU', 1)
        row = self.quota_row(project, 'VGPU')
        self.assertEqual((1, 1, 0), (row['Limit'], row['In Use'],
                                     row['Free']))

    def test_positional_project_and_delete_several(self):
        """<project> as OSC's quota commands take it; one delete run for
        two classes (classes of this test's own: no other test sees their
        registered limits), all or nothing."""
        project = self.make_project()
        classes = ['CUSTOM_GPU_FT%s' % uuid.uuid4().hex[:10].upper()
                   for _ in range(2)]
        for rc in classes:
            self.addCleanup(self.openstack_raw, 'gpu', 'quota', 'delete',
                            '--default', '--resource-class', rc)
            self.addCleanup(self.openstack_raw, 'gpu', 'quota', 'delete',
                            project['id'], '--resource-class', rc)
            self.openstack('gpu', 'quota', 'set', project['id'],
                           '--resource-class', rc, '--gpus', '3',
                           parse=False)
        held = self.keystone_limits(project)
        self.assertEqual([3, 3], [held['class:' + rc] for rc in classes])
        rows = {r['Resource Class']: r for r in self.openstack(
            'gpu', 'quota', 'show', project['id'])}
        self.assertEqual([(3, 'project')] * 2,
                         [(rows[rc]['Limit'], rows[rc]['Source'])
                          for rc in classes])
        targets = [a for rc in classes for a in ('--resource-class', rc)]
        # one class without a limit of its own: nothing is deleted
        rc, _out, err = self.openstack_raw(
            'gpu', 'quota', 'delete', project['id'], *targets,
            '--resource-class', 'VGPU')
        self.assertEqual(1, rc, err)
        self.assertIn('cannot be deleted, so none is', err)
        self.assertEqual(held, self.keystone_limits(project))
        self.openstack('gpu', 'quota', 'delete', project['id'], *targets,
                       parse=False)
        held = self.keystone_limits(project)
        self.assertEqual([], [rc for rc in classes if 'class:' + rc in held])

    def test_bad_input_changes_nothing(self):
        """A member setting limits is refused and --dry-run writes nothing
        (CLI); the other bad inputs run through the command layer in this
        process."""
        project = self.make_project()
        before = (self.keystone_limits(project), self.registered())
        member_project = self.openstack(
            'token', 'issue', cloud=self.member_cloud)['project_id']
        rc, _out, err = self.openstack_raw(
            'gpu', 'quota', 'set', '--project', member_project,
            '--resource-class', 'VGPU', '--gpus', '100',
            cloud=self.member_cloud)
        self.assertNotEqual(0, rc)
        self.assertIn('forbidden', err)
        cases = [
            (['--pool', 'gpuclient-ft-no-such-pool', '--gpus', '1'],
             'No GPU pool named'),
            (['--resource-class', 'VGPU', '--gpus', '-1'], '--gpus -1'),
            (['--resource-class', 'VGPU', '--gpus', 'two'], '--gpus two'),
            (['--resource-class', 'VGPU', '--gpus', '2147483648'],
             '--gpus 2147483648'),
            (['--resource-class', 'VCPU', '--gpus', '1'], 'VCPU'),
        ]
        # --dry-run prints the plan and changes nothing
        rc, out, err = self.openstack_raw(
            'gpu', 'quota', 'set', '--project', project['id'],
            '--resource-class', 'VGPU', '--gpus', '5', '--dry-run')
        self.assertEqual(0, rc, err)
        self.assertIn('set the limit class:VGPU of project %s to 5'
                      % project['id'], out)
        for args, message in cases:
            rc, _out, err = base._run_shell(
                ['--os-cloud', self.cloud, 'gpu', 'quota', 'set',
                 '--project', project['id'], *args])
            self.assertNotEqual(0, rc, args)
            self.assertIn(message, err, args)
        self.assertEqual(before, (self.keystone_limits(project),
                                  self.registered()))
        self.assertEqual(before[1], self.registered())
