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

"""ops.snapshot: a second read into one model.Cloud keeps what the first
read filled (read_for_hosts after snapshot.read)."""

from gpuclient.ops import snapshot
from gpuclient.rules import pools
from gpuclient.tests.unit import base
from gpuclient.tests.unit import fakes


class TestReadForHosts(base.TestCase):
    def setUp(self):
        super().setUp()
        self.cloud = fakes.FakeCloud()
        self.pt = self.cloud.pci_host('gpu-pt-1')
        self.vgpu = self.cloud.vgpu_host('gpu-vgpu-1')
        # no free VCPU: only a read of its own tree covers it
        self.full = self.cloud.pci_host('gpu-pt-2', vcpus=2, used_vcpus=8)
        self.cloud.add_flavor('plain')
        self.placement = self.useFixture(fakes.PlacementFixture(self.cloud))
        cm = self.useFixture(fakes.ClientManagerFixture(self.cloud))
        self.nova, self.glance = cm.nova, cm.glance
        self.client = cm.gpu
        self.trait = pools.pool_trait('solver')

    def sent(self):
        """(Placement, Nova, Glance) requests sent so far."""
        return (len(self.placement.mock.request_history),
                len(self.nova.gets), len(self.glance.gets))

    def provider_reads(self):
        return [r for r in self.placement.mock.request_history
                if r.method == 'GET'
                and r.path.endswith('/resource_providers')]

    def test_an_earlier_read_survives(self):
        model = snapshot.read(self.client, with_flavors=True,
                              with_images=True)
        snapshot.read_servers(self.client, model)
        self.placement.traits.add('CUSTOM_OLD')
        snapshot.read_existing_traits(self.client, model, {'CUSTOM_OLD'})
        kept = {name: getattr(model, name) for name in (
            'placement', 'flavors', 'images', 'servers', 'hypervisors',
            'services', 'known_classes', 'blazar')}
        providers = dict(model.placement.providers)
        summaries = dict(model.placement.summaries)
        classes = set(model.gpu_classes)
        self.placement.traits.add(self.trait)
        before = self.sent()
        found = snapshot.read_for_hosts(
            self.client, model, ['gpu-pt-1'], 'CUSTOM_PCI_10DE_2331',
            {self.trait}, flavors=True, images=True, servers=True)
        self.assertEqual({'gpu-pt-1': [self.pt.uuid]}, found)
        for name, value in kept.items():
            self.assertIs(value, getattr(model, name), name)
        self.assertEqual(providers, model.placement.providers)
        self.assertEqual(summaries, model.placement.summaries)
        # the traits asked now join those an earlier read found
        self.assertEqual({'CUSTOM_OLD', self.trait}, model.existing_traits)
        self.assertEqual(classes | {'CUSTOM_PCI_10DE_2331'},
                         model.gpu_classes)
        # only the traits were asked: the rest was read
        placement, nova, glance = self.sent()
        self.assertEqual((1, 0, 0), (placement - before[0],
                                     nova - before[1], glance - before[2]))

    def test_a_tree_an_earlier_read_left_out_is_added(self):
        model = snapshot.read(self.client, wanted_hosts={'gpu-pt-1'})
        self.assertEqual({self.full.uuid}, model.placement.unread_roots(
            [self.pt.uuid, self.vgpu.uuid, self.full.uuid]))
        kept = dict(model.placement.summaries)
        before = len(self.provider_reads())
        snapshot.read_for_hosts(self.client, model, ['gpu-pt-2'],
                                'CUSTOM_PCI_10DE_2331')
        # one snapshot more, of the tree left out
        self.assertEqual(before + 1, len(self.provider_reads()))
        self.assertEqual(set(), model.placement.unread_roots(
            [self.pt.uuid, self.vgpu.uuid, self.full.uuid]))
        for uuid, summary in kept.items():
            self.assertIs(summary, model.placement.summaries[uuid])
        tree = model.placement.providers_in_trees([self.full.uuid])
        self.assertEqual(5, len(tree))
        self.assertEqual({'CUSTOM_PCI_10DE_2331'}, {
            rc for uuid in tree if uuid != self.full.uuid
            for rc in model.placement.summaries[uuid]['resources']})

    def test_what_was_not_asked_for_is_left_as_it_is(self):
        model = snapshot.read(self.client, with_flavors=True)
        flavors = model.flavors
        before = self.sent()
        snapshot.read_for_hosts(self.client, model, [])
        self.assertIs(flavors, model.flavors)
        self.assertIsNotNone(model.placement)
        self.assertIsNone(model.images)
        self.assertIsNone(model.servers)
        self.assertIsNone(model.access)
        self.assertEqual(set(), model.existing_traits)
        self.assertEqual(before, self.sent())
