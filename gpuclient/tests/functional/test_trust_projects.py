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

"""A Keystone that truncates its project list (issue 21, defect 9).

Keystone answers ``GET /v3/projects`` with the first ``list_limit``
projects and ``"truncated": true``, and offers no next page. The test
cloud sets ``[resource] list_limit = 2`` (tools/cloud/etc/keystone.conf);
on a cloud that does not truncate these tests are skipped, saying so.

A project that the truncated list leaves out is live: ``gpu check`` must
not call it deleted nor suggest removing it from the pool, and ``gpu quota
list`` must still name it.
"""

import json

import openstack

from gpuclient.tests.functional import base


class TestTruncatedProjectList(base.FunctionalTestCase):
    def setUp(self):
        super().setUp()
        self.conn = openstack.connect(cloud=base.ADMIN_CLOUD)
        self.addCleanup(self.conn.close)
        self.project = self.unlisted_project()

    def listed(self):
        """IDs in Keystone's own answer to the project list, asserting
        that the answer is truncated."""
        body = self.conn.identity.get('/projects').json()
        if not body.get('truncated'):
            self.skipTest('Keystone does not truncate its project list '
                          '(set [resource] list_limit, as the test cloud '
                          'does)')
        return {p['id'] for p in body['projects']}

    def unlisted_project(self):
        """A new project that the truncated list leaves out."""
        for _attempt in range(4):
            name = self.unique_name('trunc')
            made = self.openstack('project', 'create', name)
            self.addCleanup(self.openstack_raw, 'project', 'delete',
                            made['id'])
            if made['id'] not in self.listed():
                return made
        self.fail('every new project was in the truncated list')

    def mig_pool(self, *args):
        name = self.unique_name('trunc-pool')
        self.openstack('gpu', 'pool', 'create', '--mode', 'mig',
                       '--mig-profile', '1g.10gb', *args, name, parse=False)
        self.addCleanup(self.openstack_raw, 'gpu', 'pool', 'delete',
                        '--force', name)
        return name

    def test_check_does_not_call_a_live_project_gone(self):
        name = self.mig_pool('--project', self.project['id'])
        # what Nova holds: the pool is limited to the project
        agg = self.aggregate(name)
        self.assertEqual(self.project['id'], agg['properties'][
            'filter_tenant_id_' + self.project['id']])
        self.assertNotIn(self.project['id'], self.listed())

        _rc, out, err = self.openstack_raw(
            'gpu', 'check', '--check', 'pool-projects', '-f', 'json')
        rows = [r for r in json.loads(out) if name in r['Object']]
        self.assertEqual([], rows, err)

        # a project really deleted is still reported, with its fix
        self.openstack('project', 'delete', self.project['id'],
                       parse=False)
        _rc, out, err = self.openstack_raw(
            'gpu', 'check', '--check', 'pool-projects', '-f', 'json')
        rows = [r for r in json.loads(out) if name in r['Object']]
        self.assertEqual(['pool-projects'], [r['Check'] for r in rows], err)
        self.assertIn(self.project['id'], rows[0]['Symptom'] +
                      rows[0]['Object'])

    def test_quota_list_names_the_project(self):
        pool = self.mig_pool()
        self.openstack('gpu', 'quota', 'set', '--project',
                       self.project['id'], '--pool', pool, '--gpus', '2',
                       parse=False)
        self.addCleanup(self.openstack_raw, 'gpu', 'quota', 'delete',
                        '--project', self.project['id'], '--pool', pool)
        # what Keystone holds: the project's own limit
        limits = list(self.conn.identity.limits(
            project_id=self.project['id']))
        self.assertEqual([2], [lim.resource_limit for lim in limits])
        self.assertNotIn(self.project['id'], self.listed())
        rows = self.openstack('gpu', 'quota', 'list')
        mine = [r for r in rows if r['Project ID'] == self.project['id']]
        self.assertEqual([self.project['name']],
                         [r['Project'] for r in mine])
