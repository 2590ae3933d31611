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

"""Nova's and Placement's input rules (gpuclient.rules.nova_rules), and the
commands' planners refusing what Nova would refuse part-way (issue 21)."""

from osc_lib import exceptions
import testtools

from gpuclient.rules import nova_rules
from gpuclient.rules import plan as plan_mod
from gpuclient.rules import pools
from gpuclient.rules import specs
from gpuclient.tests.unit import test_pool_plan as tpp

# (key, Nova takes it): parameter_types.metadata's key pattern
KEYS = [
    ('gpu_pool', True), ('a-b_c:d.e f', True), ('A' * 255, True),
    ('', False), ('A' * 256, False), ('gpu/model', False),
    ('x:a/b', False), ('a;b', False), ('a@b', False), ('a=b', False),
    ('a\n', False), ('é', False), ('a,b', False),
]
# (name, Nova takes it as an aggregate or flavor name)
NAMES = [
    ('pool-1', True), ('a b', True), ('é', True), ('x' * 255, True),
    ('', False), (' lead', False), ('trail ', False), ('x' * 256, False),
    ('tab\there', False), ('nul\x00', False),
]


class TestRules(testtools.TestCase):

    def test_keys(self):
        for key, ok in KEYS:
            self.assertEqual(ok, nova_rules.is_key(key), repr(key))
            if ok:
                nova_rules.check_key(key, 'x')
            else:
                error = self.assertRaises(exceptions.CommandError,
                                          nova_rules.check_key, key,
                                          '--property')
                self.assertIn('Invalid --property', str(error))
                self.assertNotIn('\n', str(error).rstrip('\n'))

    def test_values(self):
        nova_rules.check_value('k', 'v' * 255, 'x')
        nova_rules.check_value('k', None, 'x')
        error = self.assertRaises(exceptions.CommandError,
                                  nova_rules.check_value, 'k', 'v' * 256,
                                  '--property')
        self.assertIn('256 characters long and Nova takes at most 255',
                      str(error))

    def test_names(self):
        for name, ok in NAMES:
            if ok:
                nova_rules.check_name(name, 'flavor name')
            else:
                self.assertRaises(exceptions.CommandError,
                                  nova_rules.check_name, name, 'flavor name')
        nova_rules.check_name('zone-1', 'zone', colon=False)
        self.assertRaises(exceptions.CommandError, nova_rules.check_name,
                          'zone:1', 'zone', colon=False)

    def test_description(self):
        nova_rules.check_description(None)
        nova_rules.check_description('d' * 255)
        for bad in ('d' * 256, 'a\x07'):
            self.assertRaises(exceptions.CommandError,
                              nova_rules.check_description, bad)

    def test_plan_derived_keys(self):
        long_trait = 'CUSTOM_' + 'X' * 243           # 250: a valid trait
        good = plan_mod.Plan('t', [
            plan_mod.create_trait(long_trait),
            plan_mod.set_metadata('agg', {}, {'trait:' + long_trait[:-2]:
                                              'required'}),
        ])
        nova_rules.check_plan(good)
        for step, text in (
                (plan_mod.set_metadata('agg', {}, {'trait:' + long_trait:
                                                   'required'}),
                 'aggregate metadata key'),
                (plan_mod.flavor_specs('f', {}, {'trait64:' + long_trait:
                                                 'required'},
                                       flavor_id='f-id'),
                 'flavor extra spec'),
                (plan_mod.flavor_specs('f', {}, {'x:a/b': '1'},
                                       flavor_id='f-id'),
                 'flavor extra spec'),
                (plan_mod.create_trait('CUSTOM_' + 'X' * 249), 'trait'),
                (plan_mod.add_traits('rp', ['custom_lower']), 'trait'),
                (plan_mod.create_aggregate('a' * 256), 'aggregate name'),
                (plan_mod.create_aggregate('a', zone='z:1'),
                 'availability zone'),
                (plan_mod.create_flavor(' f', {}), 'flavor name')):
            error = self.assertRaises(exceptions.CommandError,
                                      nova_rules.check_plan,
                                      plan_mod.Plan('t', [step]))
            self.assertIn(text, str(error))


class TestPoolInput(testtools.TestCase):

    def refused(self, *args, **kwargs):
        return str(self.assertRaises(exceptions.CommandError,
                                     pools.build_spec, *args, **kwargs))

    def test_pool_name_whose_isolation_key_is_too_long(self):
        # 233 characters: trait:CUSTOM_GPU_POOL_<NAME> is 255
        pools.build_spec('p' * 233, 'vgpu', vgpu_type='nvidia-35')
        message = self.refused('p' * 234, 'vgpu', vgpu_type='nvidia-35')
        self.assertIn('Pool name is 234 characters long: its isolation key '
                      'trait:CUSTOM_GPU_POOL_<NAME>', message)
        self.assertIn('would be 256 characters', message)
        self.assertIn('at most 233 characters', message)

    def test_type_trait_too_long_for_a_flavor_key(self):
        message = self.refused('p', 'vgpu', vgpu_type='n' * 243)
        self.assertIn('--vgpu-type is too long', message)
        message = self.refused('p', 'mig', mig_profile='m' * 239)
        self.assertIn('--mig-profile is too long', message)
        # a per-type class needs no trait
        pools.build_spec('p', 'vgpu', vgpu_type='n' * 243,
                         resource_class='CUSTOM_VGPU_N')
        # resources:<class> is 255 with a 245-character class
        pools.build_spec('p', 'baremetal', resource_class='C' * 238)
        message = self.refused('p', 'baremetal', resource_class='C' * 239)
        self.assertIn('--resource-class is too long', message)

    def test_bad_property_keys_and_values(self):
        for properties, text in (({'gpu/model': 'x'}, "'gpu/model'"),
                                 ({'ok': 'v' * 256}, 'ok: its value')):
            message = self.refused('p', 'vgpu', vgpu_type='nvidia-35',
                                   properties=properties)
            self.assertIn('Invalid --property', message)
            self.assertIn(text, message)

    def test_bad_pool_name_and_zone(self):
        self.assertIn('Invalid pool name', self.refused(
            'tab\tname', 'vgpu', vgpu_type='nvidia-35'))
        self.assertIn('Invalid --zone', self.refused(
            'p', 'vgpu', vgpu_type='nvidia-35', zone='a:b'))

    def test_set_and_unset_properties(self):
        world = tpp.World()
        world.aggregate('a100', tpp.a100_metadata(False))
        from gpuclient.rules import pool_plan
        for kwargs in ({'properties': {'gpu/model': 'x'}},
                       {'remove_properties': ['gpu/model']}):
            error = self.assertRaises(exceptions.CommandError,
                                      pool_plan.update_metadata,
                                      world.observed(), 'a100', **kwargs)
            self.assertIn("Invalid --property 'gpu/model'", str(error))


class TestFlavorInput(testtools.TestCase):

    def test_property_keys(self):
        pool = pools.pool_from_aggregate(
            {'name': 'a100', 'metadata': tpp.a100_metadata(False)})
        for properties, text in (({'x:a/b': '1'}, "'x:a/b'"),
                                 ({'vendor:note': 'd' * 256}, 'value')):
            error = self.assertRaises(exceptions.CommandError, specs.derive,
                                      pool, properties=properties)
            self.assertIn('Invalid --property', str(error))
            self.assertIn(text, str(error))
