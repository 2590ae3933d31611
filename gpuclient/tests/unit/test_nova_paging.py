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

"""Nova's server list pages (fakes.FakeCompute as Nova pages it: a page
of at most [api]max_limit servers, a ``servers_links`` next link with the
last server's id as marker on a full page): gpuclient follows every
page, the host filter on each, and stops after the last."""

from gpuclient.tests.unit import base
from gpuclient.tests.unit import fakes


class TestServerPages(base.TestCase):

    def cloud(self, servers, max_limit=2):
        cloud = fakes.FakeCloud()
        cloud.pci_host('gpu-pt-1')
        cloud.pci_host('gpu-pt-2')
        made = [cloud.add_server('vm-%d' % i, 'gpu-pt-%d' % (1 + i % 2))
                for i in range(servers)]
        self.useFixture(fakes.PlacementFixture(cloud))
        cm = self.useFixture(fakes.ClientManagerFixture(cloud,
                                                        max_limit=max_limit))
        return cm, made

    def markers(self, cm):
        return [p.get('marker') for p in cm.nova.server_lists]

    def test_every_page_is_followed(self):
        cm, made = self.cloud(5)
        found = cm.gpu.compute.servers_detail(all_projects=True)
        self.assertEqual([s['id'] for s in made], [s['id'] for s in found])
        # three pages: two full ones (each with its next link), the last
        self.assertEqual([None, made[1]['id'], made[3]['id']],
                         self.markers(cm))

    def test_a_full_last_page_is_followed_by_an_empty_one(self):
        cm, made = self.cloud(4)
        found = cm.gpu.compute.servers_detail(all_projects=True)
        self.assertEqual(4, len(found))
        self.assertEqual([None, made[1]['id'], made[3]['id']],
                         self.markers(cm))

    def test_the_host_filter_is_on_every_page(self):
        cm, made = self.cloud(7)
        found = cm.gpu.compute.servers_detail(all_projects=True,
                                              host='gpu-pt-2')
        # vm-1, vm-3, vm-5 are on gpu-pt-2: a full page, then the last
        self.assertEqual([s['id'] for s in made[1::2]],
                         [s['id'] for s in found])
        self.assertEqual({'gpu-pt-2'}, {p['host']
                                        for p in cm.nova.server_lists})
        self.assertEqual([None, made[3]['id']], self.markers(cm))

    def test_one_page_under_the_limit(self):
        cm, made = self.cloud(3, max_limit=1000)
        self.assertEqual(3, len(cm.gpu.compute.servers_detail(
            all_projects=True)))
        self.assertEqual([None], self.markers(cm))
