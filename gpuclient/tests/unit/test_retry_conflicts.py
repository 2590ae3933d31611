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

"""Every retry loop of the client layer driven by a real conflict: the
strict fakes let another writer write just before gpuclient's write
(``PlacementFixture.conflicts``: the provider's generation moves, as it
does under Nova's resource tracker; ``FakeCompute.remove_conflicts``:
Nova loses its Placement race and answers 409), and the retry reads
again, keeps what the other writer wrote, and gives up after its last
attempt with nothing half done. (Trait writes: test_client's
TestProviderTraitRaces; Nova's remove host: test_pool_ops.)"""

import fixtures

from gpuclient.cloud import errors
from gpuclient.cloud import placement as placement_mod
from gpuclient.tests.unit import base
from gpuclient.tests.unit import fakes

AGG = fakes.uid('agg-solver')


class RaceCase(base.TestCase):

    def setUp(self):
        super().setUp()
        self.cloud = fakes.FakeCloud()
        root = self.cloud.otu_host('gpu-otu-1', count=1)
        self.device = self.cloud.tree(root)[1]
        self.root = root
        self.cloud.reserve(self.device)
        self.placement = self.useFixture(fakes.PlacementFixture(self.cloud))
        self.cm = self.useFixture(fakes.ClientManagerFixture(self.cloud))
        self.client = self.cm.gpu.placement
        # no real waits between attempts
        self.sleeps = self.useFixture(fixtures.MockPatch('time.sleep')).mock

    def puts(self, what):
        return [r for r in self.placement.requests()
                if r.method == 'PUT' and what in r.path]


class TestReleaseReservedRaces(RaceCase):

    def test_a_lost_race_is_read_again_and_retried(self):
        self.placement.conflicts[self.device.uuid] = 2
        self.assertTrue(self.client.release_reserved(
            self.device.uuid, fakes.OTU_CLASS))
        self.assertEqual(0, self.device.inventory[fakes.OTU_CLASS]
                         ['reserved'])
        puts = self.puts('/inventories/')
        self.assertEqual(3, len(puts))
        # each attempt with the generation it read anew
        self.assertEqual([2, 3, 4], [p.json()['resource_provider_generation']
                                     for p in puts])
        # the other writer's change stays
        self.assertIn(fakes.CONCURRENT_TRAIT, self.device.traits)
        self.assertEqual(2, len(self.sleeps.call_args_list))

    def test_the_last_lost_race_is_the_error_nothing_written(self):
        retries = placement_mod.PROVIDER_RETRIES
        self.placement.conflicts[self.device.uuid] = retries
        self.assertRaises(errors.Conflict, self.client.release_reserved,
                          self.device.uuid, fakes.OTU_CLASS)
        self.assertEqual(retries, len(self.puts('/inventories/')))
        self.assertEqual(1, self.device.inventory[fakes.OTU_CLASS]
                         ['reserved'])


class TestAggregateRaces(RaceCase):

    def test_a_lost_race_keeps_the_other_writers_change(self):
        self.root.aggregates.append(fakes.uid('agg-other'))
        self.placement.conflicts[self.root.uuid] = 1
        added, removed = self.client.update_aggregates(self.root.uuid,
                                                       add=[AGG])
        self.assertEqual(({AGG}, set()), (added, removed))
        self.assertEqual(sorted([fakes.uid('agg-other'), AGG]),
                         sorted(self.root.aggregates))
        self.assertIn(fakes.CONCURRENT_TRAIT, self.root.traits)
        puts = self.puts('/aggregates')
        self.assertEqual(2, len(puts))
        self.assertEqual(sorted([fakes.uid('agg-other'), AGG]),
                         puts[1].json()['aggregates'])

    def test_the_last_lost_race_is_the_error(self):
        retries = placement_mod.PROVIDER_RETRIES
        self.placement.conflicts[self.root.uuid] = retries
        self.assertRaises(errors.Conflict, self.client.update_aggregates,
                          self.root.uuid, add=[AGG])
        self.assertEqual(retries, len(self.puts('/aggregates')))
        self.assertNotIn(AGG, self.root.aggregates)
