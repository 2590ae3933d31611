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

"""The plans of gpu flavor create and delete (gpuclient.ops.flavor_ops)."""

from osc_lib import exceptions
import testtools

from gpuclient.rules import flavor_plan

POOL = {
    'name': 'a100', 'aggregate': 'gpu-a100',
    'metadata': {'gpu_pool': 'a100', 'gpu_pool_mode': 'vgpu',
                 'gpu_resource_class': 'VGPU', 'gpu_vgpu_type': 'nvidia-35'},
}
SPECS = {
    'aggregate_instance_extra_specs:gpu_pool': 'a100',
    'resources1:VGPU': '1',
    'resources2:VGPU': '1',
    'trait1:CUSTOM_NVIDIA_35': 'required',
    'trait2:CUSTOM_NVIDIA_35': 'required',
    'group_policy': 'isolate',
}
AGG_CHANGES = {'group_policy': 'isolate'}


def wanted(**changes):
    request = {
        'vcpus': 8, 'ram': 65536, 'disk': 40, 'ephemeral': 0, 'swap': 0,
        'is_public': False, 'description': 'two A100 vGPUs',
        'extra_specs': dict(SPECS), 'projects': ['p1', 'p2'],
    }
    request.update(changes)
    return request


def ops(plan):
    return [step.op for step in plan]


class TestPlanCreate(testtools.TestCase):

    def refused(self, existing, want=None):
        error = self.assertRaises(
            exceptions.CommandError, flavor_plan.create, 'g1', POOL,
            want or wanted(), AGG_CHANGES, existing)
        message = str(error)
        self.assertIn('Flavor g1 already exists with other settings: ',
                      message)
        self.assertIn('Delete it first (openstack gpu flavor delete g1) or '
                      'choose another name.', message)
        return message

    def test_from_nothing(self):
        plan = flavor_plan.create('g1', POOL, wanted(), AGG_CHANGES)
        self.assertEqual(
            ['flavor.create', 'flavor.specs', 'flavor.add_access',
             'flavor.add_access', 'aggregate.metadata'], ops(plan))
        self.assertEqual(
            {'name': 'g1', 'fields': {
                'vcpus': 8, 'ram': 65536, 'disk': 40, 'swap': 0,
                'description': 'two A100 vGPUs',
                'OS-FLV-EXT-DATA:ephemeral': 0,
                'os-flavor-access:is_public': False}},
            plan.steps[0].args)
        # id None: the flavor this plan creates (the journal takes its ID
        # from the create's answer, never looks the name up as an ID)
        self.assertEqual({'flavor_id': None, 'name': 'g1',
                          'specs_set': SPECS, 'unset': [], 'expect': None},
                         plan.steps[1].args)
        self.assertEqual(
            [{'flavor_id': None, 'name': 'g1', 'project': 'p1'},
             {'flavor_id': None, 'name': 'g1', 'project': 'p2'}],
            [plan.steps[2].args, plan.steps[3].args])
        self.assertEqual(
            {'name': 'gpu-a100', 'metadata': {'group_policy': 'isolate'},
             'expect': None},
            plan.steps[4].args)
        self.assertEqual(1, len(plan.warnings))
        self.assertIn('Sets group_policy=isolate on the aggregate of pool '
                      'a100', plan.warnings[0])
        self.assertEqual('the same "openstack gpu flavor create" command',
                         plan.rerun)

    def test_from_nothing_public_without_description(self):
        plan = flavor_plan.create(
            'g1', POOL, wanted(is_public=True, projects=[],
                               description=None), {})
        self.assertEqual(['flavor.create', 'flavor.specs'], ops(plan))
        self.assertNotIn('description', plan.steps[0].args['fields'])
        self.assertTrue(
            plan.steps[0].args['fields']['os-flavor-access:is_public'])
        self.assertEqual([], plan.warnings)

    def test_finishing_an_interrupted_create(self):
        for label, have_specs, have_projects, expected_ops, missing in [
                ('nothing after the create', {}, [],
                 ['flavor.specs', 'flavor.add_access', 'flavor.add_access'],
                 SPECS),
                ('some specs', {'resources1:VGPU': '1',
                                'group_policy': 'isolate'}, [],
                 ['flavor.specs', 'flavor.add_access', 'flavor.add_access'],
                 {k: v for k, v in SPECS.items()
                  if k not in ('resources1:VGPU', 'group_policy')}),
                ('specs done, one project given', dict(SPECS), ['p1'],
                 ['flavor.add_access'], None),
        ]:
            existing = wanted(extra_specs=have_specs,
                              projects=have_projects)
            plan = flavor_plan.create('g1', POOL, wanted(), {},
                                          existing, 'f-1')
            self.assertEqual(expected_ops, ops(plan), label)
            self.assertNotIn('flavor.create', ops(plan), label)
            if missing is not None:
                self.assertEqual(missing, plan.steps[0].args['specs_set'],
                                 label)
                self.assertEqual([], plan.steps[0].args['unset'], label)
            # an existing flavor is acted on by the ID the planner found
            self.assertEqual({'flavor_id': 'f-1', 'name': 'g1',
                              'project': 'p2'}, plan.steps[-1].args, label)

    def test_finishing_sets_the_aggregate_metadata_too(self):
        plan = flavor_plan.create('g1', POOL, wanted(), AGG_CHANGES,
                                      wanted())
        self.assertEqual(['aggregate.metadata'], ops(plan))

    def test_nothing_to_do_when_equal(self):
        plan = flavor_plan.create('g1', POOL, wanted(), {}, wanted())
        self.assertEqual([], plan.steps)
        self.assertFalse(plan)
        self.assertEqual(
            ['Creating flavor g1: nothing to do, the cloud already '
             'matches.'], plan.lines())

    def test_other_sizes_are_refused(self):
        message = self.refused(wanted(vcpus=4, ram=32768))
        self.assertIn('vcpus: 8 (existing 4)', message)
        self.assertIn('ram: 65536 (existing 32768)', message)

    def test_other_visibility_is_refused(self):
        message = self.refused(wanted(is_public=True, projects=[]))
        self.assertIn('is_public: False (existing True)', message)

    def test_other_description_is_refused(self):
        message = self.refused(wanted(description='something else'))
        self.assertIn('description: two A100 vGPUs (existing something '
                      'else)', message)

    def test_extra_spec_not_wanted_is_refused(self):
        message = self.refused(wanted(extra_specs=dict(
            SPECS, **{'hw:cpu_policy': 'dedicated'})))
        self.assertIn('hw:cpu_policy: - (existing dedicated)', message)

    def test_extra_project_is_refused(self):
        message = self.refused(wanted(projects=['p1', 'p3']))
        self.assertIn('projects: p1,p2 (existing p1,p3)', message)

    def test_spec_with_another_value_is_refused(self):
        # Not an interrupted create of this request (Nova sets the specs
        # in one call): the existing flavor asks for 2 vGPUs in group 1.
        message = self.refused(wanted(extra_specs=dict(
            SPECS, **{'resources1:VGPU': '2'})))
        self.assertIn('resources1:VGPU: 1 (existing 2)', message)


class TestAsRequest(testtools.TestCase):

    def test_nova_flavor(self):
        flavor = {'id': 'f1', 'name': 'g1', 'vcpus': 8, 'ram': 65536,
                  'disk': 40, 'OS-FLV-EXT-DATA:ephemeral': 10, 'swap': '',
                  'os-flavor-access:is_public': False,
                  'description': None, 'extra_specs': {'a': 'b'}}
        self.assertEqual(
            {'vcpus': 8, 'ram': 65536, 'disk': 40, 'ephemeral': 10,
             'swap': 0, 'is_public': False, 'description': None,
             'extra_specs': {'a': 'b'}, 'projects': ['p1']},
            flavor_plan.as_request(flavor, ['p1']))


class TestPlanDelete(testtools.TestCase):

    def test_irreversible_steps_by_id(self):
        plan = flavor_plan.delete([
            {'id': 'f1', 'name': 'g1'}, {'id': 'f2', 'name': 'g2'}])
        self.assertEqual(['flavor.delete', 'flavor.delete'], ops(plan))
        self.assertEqual([{'flavor_id': 'f1', 'name': 'g1'},
                          {'flavor_id': 'f2', 'name': 'g2'}],
                         [s.args for s in plan])
        self.assertEqual(
            ['1. delete flavor g1 (f1) (not undone on failure)',
             '2. delete flavor g2 (f2) (not undone on failure)'],
            plan.lines())

    def test_nothing(self):
        self.assertFalse(flavor_plan.delete([]))
