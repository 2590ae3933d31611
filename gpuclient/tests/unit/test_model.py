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

"""rules.model with plain data: the cloud as read, Nova's zone rule, and
the model after a plan's steps (document_plan.state_of, simulate)."""

import dataclasses

from osc_lib import exceptions
import testtools

from gpuclient.rules import document_plan
from gpuclient.rules import model
from gpuclient.rules import plan as plan_mod
from gpuclient.rules import pool_plan
from gpuclient.rules import pools


def agg(name, hosts_=(), zone=None, metadata=None):
    return {'name': name, 'id': 1, 'uuid': 'u-' + name,
            'hosts': list(hosts_), 'metadata': dict(metadata or {}),
            'availability_zone': zone}


POOL_META = pools.metadata_for(pools.build_spec('ws', 'vgpu',
                                                vgpu_type='nvidia-35'))
SERVICES = [{'host': 'h1', 'zone': 'nova'}, {'host': 'h2', 'zone': 'az1'}]


class TestZoneCheck(testtools.TestCase):
    def check(self, zone, host, aggregates, own=None):
        return model.zone_check(model.Cloud(aggregates, [], SERVICES), zone,
                                host, own)

    def test_another_aggregates_zone_refused(self):
        error = self.assertRaises(
            exceptions.CommandError, self.check, 'az2', 'h2',
            [agg('other', ['h2'], 'az1')])
        self.assertIn('Host h2 is in availability zone az1 (aggregate '
                      'other) and a host can be in one zone only', str(error))

    def test_own_aggregate_and_same_zone_are_no_conflict(self):
        aggregates = [agg('ws', ['h2'], 'az1'), agg('other', ['h2'], 'az1')]
        self.assertIsNone(self.check('az1', 'h2', aggregates))
        self.assertEqual('az1', self.check('az2', 'h2', aggregates[:1],
                                           own='ws'))

    def test_the_zone_a_host_moves_from(self):
        # a host without a zone is in Nova's default zone
        self.assertEqual('nova', self.check('az1', 'h1', []))
        self.assertEqual(model.DEFAULT_ZONE, self.check('az1', 'h9', []))
        self.assertIsNone(self.check('nova', 'h1', []))
        self.assertIsNone(self.check(None, 'h1', []))

    def test_refusal_names_the_zones(self):
        self.assertIn('Host h1 has instances and is in zone nova',
                      str(model.zone_move_refused('h1', 'nova', 'az1')))


class TestCloud(testtools.TestCase):
    def cloud(self, **kwargs):
        hypervisors = [{'id': 'r1', 'service': {'host': 'h1'}}]
        return model.Cloud([agg('ws', ['h1'], metadata=POOL_META)],
                           hypervisors, SERVICES, **kwargs)

    def test_pools_derived_from_the_aggregates(self):
        cloud = self.cloud()
        self.assertEqual(['ws'], list(cloud.pools))
        self.assertEqual([], cloud.problems)
        self.assertEqual({'h1': {'r1'}}, cloud.host_roots())
        self.assertEqual({'u-ws'}, cloud.root_aggregates('h1'))
        self.assertEqual('ws', cloud.aggregate('ws')['name'])
        self.assertIsNone(cloud.aggregate('nope'))

    def test_what_was_not_read_is_none(self):
        cloud = self.cloud()
        for name in ('placement', 'flavors', 'images', 'projects', 'access',
                     'registered', 'limits', 'existing_traits', 'servers'):
            self.assertIsNone(getattr(cloud, name), name)

    def test_every_field_read_defaults_to_none(self):
        # the model's rule: a field a command did not read is None, never
        # empty; the aggregates are always given, unread and unconfigured
        # say why a field is None, the rest is derived
        not_read = {'aggregates', 'unread', 'unconfigured', 'pools',
                    'problems', '_node_roots'}
        fields = {f.name: f for f in dataclasses.fields(model.Cloud)}
        self.assertEqual(set(), not_read - set(fields))
        read = sorted(set(fields) - not_read)
        self.assertIn('gpu_classes', read)
        self.assertIn('blazar', read)
        for name in read:
            self.assertIs(None, fields[name].default, name)
            self.assertIs(dataclasses.MISSING,
                          fields[name].default_factory, name)
        cloud = model.Cloud([])
        self.assertEqual({}, {name: getattr(cloud, name) for name in read
                              if getattr(cloud, name) is not None})

    def test_pool_planners_ask_the_model(self):
        cloud = self.cloud(flavors=[{'id': 'f', 'name': 'g1'}],
                           access={'f': ['p']}, existing_traits={'T'})
        self.assertEqual('ws', pool_plan.find_pool(cloud, 'ws')['name'])
        self.assertEqual(['r1'], pool_plan.roots_of(cloud, 'h1'))
        self.assertEqual([], pool_plan.roots_of(cloud, 'h2'))
        self.assertEqual(set(), pool_plan.provider_traits(cloud, 'r1'))
        self.assertEqual('r1', pool_plan.provider_label(cloud, 'r1'))


class TestFactHosts(testtools.TestCase):
    """--host-fact host parts resolved as --host is (issue 51 defect
    10)."""

    def cloud(self):
        hypervisors = [
            {'id': 'r1', 'hypervisor_hostname': 'h1.example.org',
             'service': {'host': 'h1'}},
            {'id': 'r2', 'hypervisor_hostname': 'h2.example.org',
             'service': {'host': 'h2'}}]
        return model.Cloud([], hypervisors, SERVICES)

    def test_names_of_a_host_resolve_to_it(self):
        facts, notes = self.cloud().resolve_fact_hosts({
            None: {'numa_pages': {4: None}},
            'h1.example.org': {'numa_cells': 2},
            'h2': {'numa_cells': 1}, 'r2': {'numa_gpus': [1]}})
        self.assertEqual({None: {'numa_pages': {4: None}},
                          'h1': {'numa_cells': 2},
                          'h2': {'numa_cells': 1, 'numa_gpus': [1]}},
                         facts)
        self.assertEqual(2, len(notes))
        self.assertIn('"h1.example.org" is the hypervisor hostname of '
                      'compute host h1', notes[0])

    def test_a_name_of_no_host_is_refused(self):
        for name in ('h3', 'h1.example', 'H1'):
            error = self.assertRaises(
                exceptions.CommandError, self.cloud().resolve_fact_hosts,
                {name: {'numa_cells': 2}})
            self.assertIn('--host-fact %s:...: Unknown compute host(s): %s.'
                          % (name, name), str(error))
            self.assertIn('h1 (hypervisor h1.example.org), h2 (hypervisor '
                          'h2.example.org)', str(error))

    def test_one_key_two_values_for_one_host_is_refused(self):
        error = self.assertRaises(
            exceptions.CommandError, self.cloud().resolve_fact_hosts,
            {'h1': {'numa_cells': 2}, 'h1.example.org': {'numa_cells': 1}})
        self.assertIn('numa_cells of host h1 twice', str(error))
        facts, _notes = self.cloud().resolve_fact_hosts(
            {'h1': {'numa_cells': 2}, 'h1.example.org': {'numa_cells': 2}})
        self.assertEqual({'h1': {'numa_cells': 2}}, facts)


class TestAfterThePlan(testtools.TestCase):
    """A plan's state: a copy of the model with the plan's steps applied;
    what no step changes is as read."""

    def setUp(self):
        super().setUp()
        placement = model.Placement.listed([{'uuid': 'r1', 'name': 'h1'}])
        self.read = model.Cloud(
            [agg('ws', ['h1'], metadata=POOL_META)],
            [{'id': 'r1', 'service': {'host': 'h1'}}], SERVICES, placement,
            flavors=[{'id': 'f1', 'name': 'g1', 'extra_specs': {}}],
            gpu_classes={'VGPU'}, known_classes={'VGPU', 'VCPU'}, images=[],
            access={}, registered={}, limits=[], existing_traits=set())
        self.world = document_plan.state_of(self.read)

    def test_unchanged_world_is_the_cloud_as_read(self):
        after = self.world
        self.assertEqual(self.read.aggregates, after.aggregates)
        self.assertEqual(self.read.flavors, after.flavors)
        self.assertEqual({'VGPU'}, after.gpu_classes)
        self.assertEqual({'VGPU', 'VCPU'}, after.known_classes)
        self.assertEqual(self.read.services, after.services)

    def test_steps_applied_show_in_the_model_not_in_the_read(self):
        document_plan.simulate(self.world,
                               plan_mod.create_aggregate('other'))
        document_plan.simulate(self.world, plan_mod.delete_flavor('f1', 'g1'))
        after = self.world
        self.assertEqual(['ws', 'other'],
                         [a['name'] for a in after.aggregates])
        self.assertEqual([], after.flavors)
        # the pools are derived again, from the aggregates after the plan
        self.assertEqual(['ws'], list(after.pools))
        self.assertEqual(['ws'], [a['name'] for a in self.read.aggregates])
        self.assertEqual(['g1'], [f['name'] for f in self.read.flavors])

    def test_pools_follow_the_aggregates_as_steps_change_them(self):
        meta = pools.metadata_for(pools.build_spec('ws2', 'vgpu',
                                                   vgpu_type='nvidia-36'))
        document_plan.simulate(self.world,
                               plan_mod.create_aggregate('ws2'))
        document_plan.simulate(self.world,
                               plan_mod.set_metadata('ws2', {}, meta))
        document_plan.simulate(self.world,
                               plan_mod.add_host('ws2', 'h1', ['r1']))
        self.assertEqual(['ws', 'ws2'], sorted(self.world.pools))
        self.assertEqual(['h1'], self.world.pools['ws2']['hosts'])
        document_plan.simulate(self.world, plan_mod.delete_aggregate('ws'))
        self.assertEqual(['ws2'], list(self.world.pools))
        self.assertEqual(['ws'], list(self.read.pools))
