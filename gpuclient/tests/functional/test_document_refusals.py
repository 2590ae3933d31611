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

"""``gpu apply``'s semantic refusals on the real cloud: what Placement
lacks (a PCI id no provider offers) and what the doctor would find after
the apply (a flavor requiring a trait no provider has), each before any
write: Nova then holds neither the pool nor the flavor."""

import os

import fixtures
import yaml

from gpuclient.tests.functional import base


class TestApplyRefusals(base.FunctionalTestCase):

    def write(self, document):
        where = self.useFixture(fixtures.TempDir()).path
        path = os.path.join(where, 'gpu.yaml')
        with open(path, 'w') as out:
            yaml.safe_dump(dict(document, version=1), out)
        return path

    def assert_nothing_made(self, pools, flavors):
        aggregates = {a['Name'] for a in self.openstack('aggregate', 'list')}
        self.assertFalse(aggregates & set(pools))
        made = {f['Name'] for f in self.openstack('flavor', 'list', '--all')}
        self.assertFalse(made & set(flavors))

    @base.needs('passthrough', 'vgpu')
    def test_unknown_pci_id_and_trait_typo_are_refused_before_any_write(
            self):
        pool, other = self.unique_name('a40'), self.unique_name('ws')
        flavor = self.unique_name('typo')
        for name in (pool, other):
            self.addCleanup(self.delete_pool, name)
        self.addCleanup(self.openstack_raw, 'flavor', 'delete', flavor)
        # a PCI id this cloud's hosts do not have: the document's line
        path = self.write({'pools': [
            {'name': other, 'mode': 'vgpu', 'vgpu_type': 'nvidia-35',
             'hosts': [base.VGPU_HOST]},
            {'name': pool, 'mode': 'passthrough', 'alias': 'a40x',
             'pci_id': '10de:2235', 'hosts': [base.PT_HOST]}]})
        rc, out, err = self.openstack_raw('gpu', 'apply', path)
        self.assertEqual(1, rc, out + err)
        self.assertIn('pools[1].pci_id: no resource provider of this cloud '
                      'offers CUSTOM_PCI_10DE_2235', err)
        self.assertIn('line ', err)
        self.assert_nothing_made([pool, other], [])
        # a flavor requiring a type trait with a typo: every boot would
        # fail; gpu check would say so after the apply, apply says before
        path = self.write({
            'pools': [{'name': other, 'mode': 'vgpu',
                       'vgpu_type': 'nvidia-35', 'hosts': [base.VGPU_HOST]}],
            'flavors': [{'name': flavor, 'pool': other, 'vcpus': 1,
                         'ram': 512, 'disk': 1, 'properties': {
                             'trait:CUSTOM_NVIDIA_53': 'required'}}]})
        rc, out, err = self.openstack_raw('gpu', 'apply', path)
        self.assertEqual(1, rc, out + err)
        self.assertIn('flavor-unknown-trait', err)
        self.assertIn('CUSTOM_NVIDIA_53', err)
        self.assert_nothing_made([other], [flavor])
