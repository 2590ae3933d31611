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

"""``gpu export`` and ``gpu diff`` against the real cloud: the export of
a pool gpuclient built is in sync with the cloud, a hand edit made with
plain ``openstack aggregate set`` is drift (exit 2) that names the pool,
and a broken document is refused (exit 1) with its line and field."""

import os

import fixtures
import yaml

from gpuclient.tests.functional import base


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
        where = self.useFixture(fixtures.TempDir()).path
        path = os.path.join(where, 'gpu.yaml')
        self.openstack('gpu', 'export', '--pool', pool, '--output', path,
                       parse=False)
        with open(path) as text:
            document = yaml.safe_load(text)
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
        self.assertEqual(2, rc, out + err)
        self.assertIn(pool, out)
        self.assertIn('graphics', out)

    def test_a_broken_document_names_its_line_and_field(self):
        where = self.useFixture(fixtures.TempDir()).path
        path = os.path.join(where, 'gpu.yaml')
        with open(path, 'w') as out:
            out.write('version: 1\npools:\n- name: broken\n  mode: vgu\n')
        rc, out, err = self.openstack_raw('gpu', 'diff', path)
        self.assertEqual(1, rc, out + err)
        self.assertIn('line 4', err)
        self.assertIn('pools[0].mode', err)
