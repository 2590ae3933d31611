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

"""Flavors that depend on pool properties, and safe step orders (issue 21).

* (``dependents`` itself: test_dependents);
* ``pool_plan.update_metadata`` refusing or carrying a change of a key
  flavors steer on;
* the order of every multi-step pool plan as a property: for each prefix
  of the plan (where the journal can stop, or an undo leave it), every
  (flavor, image) can boot on every host where it could both before and
  after, and on none where it could neither (``Simulation``).
"""

import copy

from gpuclient.rules import dependents
from gpuclient.rules import pool_plan
from gpuclient.rules.scheduler import request_filter
from gpuclient.tests.unit import test_pool_plan as tpp

SCOPED = 'aggregate_instance_extra_specs:'
GP = 'group_policy'


def gp_world(gp='isolate', hosts=('cmp1',)):
    world = tpp.World()
    world.aggregate('v35', tpp.vgpu_metadata(group_policy=gp), hosts)
    for host in hosts:
        world.host(host, [], [('VGPU', [tpp.NVIDIA_35]),
                              ('VGPU', [tpp.NVIDIA_35])])
    world.flavor('multi', {
        SCOPED + 'gpu_pool': 'v35', GP: 'isolate',
        'resources1:VGPU': '1', 'trait1:' + tpp.NVIDIA_35: 'required',
        'resources2:VGPU': '1', 'trait2:' + tpp.NVIDIA_35: 'required'})
    world.flavor('one', {SCOPED + 'gpu_pool': 'v35',
                         'resources:VGPU': '1',
                         'trait:' + tpp.NVIDIA_35: 'required'})
    return world


class TestPropertyDependents(tpp.PlanTestCase):

    def test_unset_refused_with_the_flavors(self):
        for kwargs in ({'remove_properties': [GP]},
                       {'properties': {GP: 'none'}}):
            message = self.refused(pool_plan.update_metadata,
                                   gp_world().observed(), 'v35', **kwargs)
            self.assertIn('Changing group_policy on pool v35 would keep '
                          'flavors multi off its hosts', message)
            self.assertIn('multi: group_policy=isolate', message)
            self.assertIn('--update-dependents', message)
            self.assertNotIn('one', message.replace('none', ''))

    def test_set_with_update_dependents_bridges_old_and_new(self):
        result = pool_plan.update_metadata(
            gp_world().observed(), 'v35', properties={GP: 'none'},
            update_dependents=True)
        self.assertEqual(['aggregate.metadata', 'flavor.specs',
                          'aggregate.metadata'], tpp.ops(result))
        self.assertEqual({'name': 'v35', 'metadata': {GP: 'isolate,none'},
                          'expect': None}, result.steps[0].args)
        self.assertEqual({'flavor_id': 'id-multi', 'name': 'multi',
                          'specs_set': {GP: 'none'}, 'unset': [],
                          'expect': None},
                         result.steps[1].args)
        self.assertEqual({'name': 'v35', 'metadata': {GP: 'none'},
                          'expect': None}, result.steps[2].args)
        # undoing the last step puts the bridge back, not the old value
        self.assertEqual({GP: 'isolate,none'},
                         result.steps[2].inverse.args['metadata'])

    def test_unset_group_policy_cannot_be_followed(self):
        message = self.refused(pool_plan.update_metadata,
                               gp_world().observed(), 'v35',
                               remove_properties=[GP],
                               update_dependents=True)
        self.assertIn('--update-dependents cannot keep flavors of pool v35 '
                      'matching group_policy: multi (without group_policy, '
                      'Nova refuses to boot', message)

    def test_a_value_nova_refuses_for_the_flavor(self):
        message = self.refused(pool_plan.update_metadata,
                               gp_world().observed(), 'v35',
                               properties={GP: 'spread'},
                               update_dependents=True)
        self.assertIn('multi (Invalid extra spec group_policy=spread',
                      message)

    def test_a_list_is_the_operator_s_choice(self):
        world = gp_world()
        world.aggregates[0]['metadata']['gpu'] = 'a100'
        world.flavor('hand', {SCOPED + 'gpu': 'a100'})
        message = self.refused(pool_plan.update_metadata, world.observed(),
                               'v35', properties={'gpu': 'h100,l40'},
                               update_dependents=True)
        self.assertIn('hand (no single value of gpu=h100,l40', message)

    def test_hand_made_steering_key_removed(self):
        world = gp_world()
        world.aggregates[0]['metadata']['gpu'] = 'true'
        world.flavor('hand', {SCOPED + 'gpu': 'true', 'resources:VGPU': '1'})
        message = self.refused(pool_plan.update_metadata, world.observed(),
                               'v35', remove_properties=['gpu'])
        self.assertIn('hand: aggregate_instance_extra_specs:gpu=true',
                      message)
        result = pool_plan.update_metadata(
            world.observed(), 'v35', remove_properties=['gpu'],
            update_dependents=True)
        self.assertEqual(['flavor.specs', 'aggregate.metadata'],
                         tpp.ops(result))
        self.assertEqual({'flavor_id': 'id-hand', 'name': 'hand',
                          'specs_set': {}, 'unset': [SCOPED + 'gpu'],
                          'expect': None}, result.steps[0].args)

    def test_unrelated_property_changes_alone(self):
        result = pool_plan.update_metadata(
            gp_world().observed(), 'v35', properties={'color': 'red'})
        self.assertEqual(['aggregate.metadata'], tpp.ops(result))


# -- every prefix of a plan is between before and after ---------------------

class Simulation:
    """A cloud as plain data, and where a (flavor, image) can boot.

    ``lands`` follows Nova: isolate_aggregates
    (request_filter.isolated_aggregates over the flavor's and image's
    required traits), Placement's required traits on the host's provider
    tree, and AggregateInstanceExtraSpecsFilter (dependents) on the host's
    aggregates.
    """

    def __init__(self, world):
        self.aggregates = copy.deepcopy(world.aggregates)
        self.traits = {uuid: set(s.get('traits') or ())
                       for uuid, s in world.summaries.items()}
        self.trees = {}
        for provider in world.providers:
            self.trees.setdefault(provider['root_provider_uuid'],
                                  []).append(provider['uuid'])
        self.roots = dict(world.roots)
        self.flavors = {f['name']: copy.deepcopy(f['extra_specs'])
                        for f in world.flavors}
        self.images = {i['id']: dict(i) for i in world.images}

    def apply(self, step):
        args = step.args
        if step.op == 'aggregate.metadata':
            agg = self._aggregate(args['name'])
            agg['metadata'] = dependents.changed(agg['metadata'],
                                                       args['metadata'])
        elif step.op == 'aggregate.add_host':
            self._aggregate(args['name'])['hosts'].append(args['host'])
        elif step.op == 'aggregate.remove_host':
            self._aggregate(args['name'])['hosts'].remove(args['host'])
        elif step.op == 'provider.add_traits':
            self.traits[args['uuid']].update(args['traits'])
        elif step.op == 'provider.remove_traits':
            self.traits[args['uuid']].difference_update(args['traits'])
        elif step.op == 'flavor.specs':
            specs = self.flavors[args['name']]
            specs.update(args['specs_set'])
            for key in args['unset']:
                specs.pop(key, None)
        elif step.op == 'image.update':
            image = self.images[args['image_id']]
            for key, value in args['changes'].items():
                if value is None:
                    image.pop(key, None)
                else:
                    image[key] = value
        elif step.op not in ('trait.create', 'trait.delete'):
            raise AssertionError('not simulated: %s' % step.op)

    def _aggregate(self, name):
        return next(a for a in self.aggregates if a['name'] == name)

    def lands(self, flavor, image, host):
        specs = self.flavors[flavor]
        required = {key.split(':', 1)[1] for key, value in specs.items()
                    if key.startswith('trait') and value == 'required'}
        if image is not None:
            required |= {key.split(':', 1)[1] for key, value
                         in self.images[image].items()
                         if key.startswith('trait:') and value == 'required'}
        forbidden = request_filter.isolated_aggregates(self.aggregates,
                                                       required)
        if any(host in agg['hosts'] for agg in forbidden):
            return False
        tree = set()
        for root in self.roots.get(host) or ():
            for uuid in self.trees.get(root, ()):
                tree |= self.traits.get(uuid, set())
        if not required <= tree:
            return False
        merged = dependents.union(
            a['metadata'] for a in self.aggregates if host in a['hosts'])
        return dependents.passes(specs, merged)

    def landings(self):
        pairs = [(f, None) for f in sorted(self.flavors)]
        pairs += [(f, i) for f in sorted(self.flavors)
                  for i in sorted(self.images)]
        return {(f, i, h) for f, i in pairs for h in sorted(self.roots)
                if self.lands(f, i, h)}


class TestEveryPrefix(tpp.PlanTestCase):

    def check_prefixes(self, world, result):
        """Each prefix lands what before and after both land, and nothing
        that neither lands."""
        self.assertTrue(result.steps)
        sim = Simulation(world)
        before = sim.landings()
        states = []
        for step in result:
            sim.apply(step)
            states.append(sim.landings())
        after = states[-1]
        for index, state in enumerate(states[:-1], 1):
            lost = (before & after) - state
            leaked = state - (before | after)
            self.assertEqual((set(), set()), (lost, leaked),
                             'after step %d of\n%s' % (
                                 index, '\n'.join(result.lines())))
        return before, after

    def isolated_world(self):
        world = tpp.a100_world(hosts=('cmp1', 'cmp2'))
        tpp.pci_host(world, 'cmp9')        # a host outside the pool
        world.flavor('g1', {tpp.POOL_SPEC: 'a100',
                            'pci_passthrough:alias': 'a100:1',
                            'trait:' + tpp.A100_TRAIT: 'required'})
        world.flavor('plain', {})
        world.images.append({'id': 'img', 'name': 'img',
                             'trait:' + tpp.A100_TRAIT: 'required'})
        return world

    def test_no_isolate(self):
        world = self.isolated_world()
        result = pool_plan.set_isolation(world.observed(), 'a100', False,
                                         update_dependents=True)
        before, after = self.check_prefixes(world, result)
        self.assertIn(('g1', None, 'cmp1'), before & after)

    def test_no_isolate_old_order_loses_the_pool_flavors(self):
        # the order before issue 21 (flavors and images first): the
        # property above catches it
        world = self.isolated_world()
        result = pool_plan.set_isolation(world.observed(), 'a100', False,
                                         update_dependents=True)
        result.steps.insert(2, result.steps.pop(0))
        self.assertRaises(AssertionError, self.check_prefixes, world,
                          result)

    def test_isolate(self):
        world = tpp.a100_world(isolate=False, hosts=('cmp1', 'cmp2'))
        tpp.pci_host(world, 'cmp9')
        world.flavor('g1', {tpp.POOL_SPEC: 'a100',
                            'pci_passthrough:alias': 'a100:1'})
        world.flavor('plain', {})
        result = pool_plan.set_isolation(world.observed(), 'a100', True,
                                         update_dependents=True)
        self.check_prefixes(world, result)

    def test_property_set_and_unset(self):
        world = gp_world(hosts=('cmp1', 'cmp2'))
        world.aggregates[0]['metadata']['gpu'] = 'true'
        world.flavor('hand', {SCOPED + 'gpu': 'true'})
        for kwargs in ({'properties': {GP: 'none', 'gpu': 'yes'}},
                       {'remove_properties': ['gpu']}):
            result = pool_plan.update_metadata(
                world.observed(), 'v35', update_dependents=True, **kwargs)
            self.check_prefixes(world, result)

    def test_hosts_join_and_leave_an_isolated_pool(self):
        world = self.isolated_world()
        result = pool_plan.remove_hosts(world.observed(), 'a100', ['cmp2'])
        self.check_prefixes(world, result)
        world = self.isolated_world()
        world.aggregates[0]['hosts'].remove('cmp2')
        world.summaries[tpp.root('cmp2')]['traits'] = []
        result = pool_plan.add_hosts(world.observed(), 'a100', ['cmp2'])
        self.check_prefixes(world, result)

    def test_vgpu_host_joins(self):
        world = gp_world(hosts=('cmp1',))
        world.host('cmp2', [], [('VGPU', []), ('VGPU', [])])
        world.existing.add(tpp.NVIDIA_35)
        result = pool_plan.add_hosts(world.observed(), 'v35', ['cmp2'])
        self.check_prefixes(world, result)
