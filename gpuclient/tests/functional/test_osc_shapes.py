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

"""Shapes OSC users expect (issue 41 item 8), one CLI-level test each: a
pool named by its aggregate's ID or UUID, ``gpu candidate list`` (and
``gpu candidates``, its deprecated first name), ``gpu quota set`` without
a project and ``gpu quota show --default``, and
``--os-placement-api-version`` said to be ignored. Proofs are read back
with plain OSC commands."""

import json
import uuid

from gpuclient.tests.functional import base
from gpuclient.tests.functional import test_quota

PT_CLASS = 'CUSTOM_PCI_10DE_2331'


class TestPoolById(base.FunctionalTestCase):
    def test_pool_named_by_aggregate_id_and_uuid(self):
        name = self.unique_name('byid')
        self.openstack('gpu', 'pool', 'create', name, '--mode', 'vgpu',
                       '--vgpu-type', 'ft-%s' % uuid.uuid4().hex[:6])
        self.addCleanup(self.delete_pool, name)
        agg = self.openstack('aggregate', 'show', name)
        self.assertEqual(name, self.openstack(
            'gpu', 'pool', 'show', str(agg['id']))['name'])
        self.openstack('gpu', 'pool', 'set', agg['uuid'], '--property',
                       'owner=ft', parse=False)
        self.assertEqual('ft', self.openstack(
            'aggregate', 'show', name)['properties']['owner'])
        self.openstack('gpu', 'pool', 'delete', str(agg['id']), parse=False)
        rc, _out, _err = self.openstack_raw('aggregate', 'show', name)
        self.assertNotEqual(0, rc)


class TestCandidateList(base.FunctionalTestCase):
    def test_candidate_list_and_its_deprecated_first_name(self):
        # issue 57 item 2: "gpu candidates" gives the rows "gpu candidate
        # list" gives, warns on stderr naming the new name, and "openstack
        # help" lists only the new name (cliff leaves deprecated ones out)
        args = ('--resource', 'VCPU=1', '--limit', '50')
        rc, out, err = self.openstack_raw('gpu', 'candidate', 'list', *args,
                                          '-f', 'json')
        self.assertEqual(0, rc, err)
        self.assertNotIn('deprecated', err)
        listed = json.loads(out)
        rc, out, err = self.openstack_raw('gpu', 'candidates', *args,
                                          '-f', 'json')
        self.assertEqual(0, rc, err)
        self.assertIn('The "gpu candidates" command is deprecated: use '
                      '"gpu candidate list"', err)
        alias = json.loads(out)

        def steady(rows):
            # this stream's hosts: the other stream enables and disables
            # its own (base.LANES) meanwhile
            return sorted(r['Host'] for r in rows
                          if r['Host'] in base.LANES['a'].values())

        self.assertTrue(steady(listed))
        self.assertEqual(steady(listed), steady(alias))
        self.assertEqual(list(listed[0]), list(alias[0]))
        commands = [line.split()[:3] for line in self.openstack(
            'help', parse=False).splitlines()]
        self.assertIn(['gpu', 'candidate', 'list'], commands)
        self.assertNotIn(['gpu', 'candidates'],
                         [c[:2] for c in commands])


class TestQuotaShapes(base.KeepsLaneBOut, base.FunctionalTestCase):
    # test_quota's helpers (a project of the test's own, Keystone's
    # limits read back), not its tests
    make_project = test_quota.TestQuota.make_project
    forget_registered = test_quota.TestQuota.forget_registered
    registered = test_quota.TestQuota.registered
    keystone_limits = test_quota.TestQuota.keystone_limits

    def test_set_without_project_and_show_default(self):
        project = self.make_project()
        self.forget_registered(PT_CLASS)
        self.addCleanup(self.openstack_raw, 'gpu', 'quota', 'delete',
                        '--project', project['id'], '--resource-class',
                        PT_CLASS)
        # no <project>, --project nor --default: the current project
        scope = ('--os-project-name', project['name'])
        self.openstack(*scope, 'gpu', 'quota', 'set', '--resource-class',
                       PT_CLASS, '--gpus', '3', parse=False)
        self.assertEqual({'class:' + PT_CLASS: 3},
                         self.keystone_limits(project))
        # --default: the registered limits, no project's use
        rows = {r['Resource Class']: r for r in self.openstack(
            *scope, 'gpu', 'quota', 'show', '--default')}
        row = rows[PT_CLASS]
        default = self.registered()['class:' + PT_CLASS]
        self.assertEqual(
            ('default', None if default < 0 else default, None, None),
            (row['Source'], row['Limit'], row['In Use'], row['Free']))


class TestPlacementApiVersion(base.FunctionalTestCase):
    def test_given_version_is_said_to_be_ignored(self):
        rc, out, err = self.openstack_raw(
            '--os-placement-api-version', '1.10', 'gpu', 'pool', 'list',
            '-f', 'json')
        self.assertEqual(0, rc, err)
        self.assertIn('--os-placement-api-version 1.10 is ignored by '
                      'openstack gpu', err)
        rc, _out, err = self.openstack_raw('gpu', 'pool', 'list')
        self.assertEqual(0, rc, err)
        self.assertNotIn('os-placement-api-version', err)
