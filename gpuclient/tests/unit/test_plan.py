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

"""Steps and their inverses, and how a plan reads (gpuclient.rules.plan)."""

import testtools

from gpuclient.rules import operations
from gpuclient.rules import plan

UUID = '11111111-2222-3333-4444-555555555555'


class TestStepConstructors(testtools.TestCase):
    """Each constructor: (step, op, args, inverse op, inverse args)."""

    CASES = [
        ('create_aggregate',
         lambda: plan.create_aggregate('gpu-a100', 'az1'),
         'aggregate.create',
         {'name': 'gpu-a100', 'zone': 'az1', 'metadata': {}},
         'aggregate.delete', {'name': 'gpu-a100'}),
        ('create_aggregate without zone',
         lambda: plan.create_aggregate('gpu-a100'),
         'aggregate.create',
         {'name': 'gpu-a100', 'zone': None, 'metadata': {}},
         'aggregate.delete', {'name': 'gpu-a100'}),
        ('delete_aggregate',
         lambda: plan.delete_aggregate('gpu-a100', 'az1',
                                       {'gpu_pool': 'a100'}),
         'aggregate.delete', {'name': 'gpu-a100'},
         'aggregate.create',
         {'name': 'gpu-a100', 'zone': 'az1',
          'metadata': {'gpu_pool': 'a100'}}),
        ('add_host',
         lambda: plan.add_host('gpu-a100', 'cmp1', ['rp2', 'rp1']),
         'aggregate.add_host',
         {'name': 'gpu-a100', 'host': 'cmp1', 'providers': ['rp1', 'rp2']},
         'aggregate.remove_host',
         {'name': 'gpu-a100', 'host': 'cmp1', 'providers': ['rp1', 'rp2']}),
        ('remove_host',
         lambda: plan.remove_host('gpu-a100', 'cmp1'),
         'aggregate.remove_host',
         {'name': 'gpu-a100', 'host': 'cmp1', 'providers': []},
         'aggregate.add_host',
         {'name': 'gpu-a100', 'host': 'cmp1', 'providers': []}),
        ('create_trait',
         lambda: plan.create_trait('CUSTOM_GPU_POOL_A100'),
         'trait.create', {'trait': 'CUSTOM_GPU_POOL_A100'},
         'trait.delete', {'trait': 'CUSTOM_GPU_POOL_A100'}),
        ('delete_trait',
         lambda: plan.delete_trait('CUSTOM_GPU_POOL_A100'),
         'trait.delete', {'trait': 'CUSTOM_GPU_POOL_A100'},
         'trait.create', {'trait': 'CUSTOM_GPU_POOL_A100'}),
        ('add_traits (sorted)',
         lambda: plan.add_traits(UUID, ['CUSTOM_B', 'CUSTOM_A'], 'cmp1'),
         'provider.add_traits',
         {'uuid': UUID, 'traits': ['CUSTOM_A', 'CUSTOM_B'],
          'label': 'cmp1'},
         'provider.remove_traits',
         {'uuid': UUID, 'traits': ['CUSTOM_A', 'CUSTOM_B'],
          'label': 'cmp1'}),
        ('add_traits without label uses the uuid',
         lambda: plan.add_traits(UUID, {'CUSTOM_A'}),
         'provider.add_traits',
         {'uuid': UUID, 'traits': ['CUSTOM_A'], 'label': UUID},
         'provider.remove_traits',
         {'uuid': UUID, 'traits': ['CUSTOM_A'], 'label': UUID}),
        ('remove_traits',
         lambda: plan.remove_traits(UUID, ['CUSTOM_A'], 'cmp1'),
         'provider.remove_traits',
         {'uuid': UUID, 'traits': ['CUSTOM_A'], 'label': 'cmp1'},
         'provider.add_traits',
         {'uuid': UUID, 'traits': ['CUSTOM_A'], 'label': 'cmp1'}),
        ('create_flavor',
         lambda: plan.create_flavor('g1', {'vcpus': 4, 'ram': 1024}),
         'flavor.create',
         {'name': 'g1', 'fields': {'vcpus': 4, 'ram': 1024}},
         # flavor_id None: the ID the create returns, and only that one
         'flavor.delete', {'flavor_id': None, 'name': 'g1'}),
        ('add_access',
         lambda: plan.add_access('g1', 'proj1', flavor_id='f-1'),
         'flavor.add_access', {'flavor_id': 'f-1', 'name': 'g1',
                               'project': 'proj1'},
         'flavor.remove_access', {'flavor_id': 'f-1', 'name': 'g1',
                                  'project': 'proj1'}),
        ('remove_access',
         lambda: plan.remove_access('g1', 'proj1', flavor_id='f-1'),
         'flavor.remove_access', {'flavor_id': 'f-1', 'name': 'g1',
                                  'project': 'proj1'},
         'flavor.add_access', {'flavor_id': 'f-1', 'name': 'g1',
                               'project': 'proj1'}),
    ]

    def test_constructors(self):
        for label, make, op, args, inv_op, inv_args in self.CASES:
            step = make()
            self.assertEqual(op, step.op, label)
            self.assertEqual(args, step.args, label)
            self.assertIsNotNone(step.inverse, label)
            self.assertEqual(inv_op, step.inverse.op, label)
            self.assertEqual(inv_args, step.inverse.args, label)
            self.assertIn(step.op, plan.OPERATIONS, label)
            self.assertIn(step.inverse.op, plan.OPERATIONS, label)
            # an inverse is a plain undo: it has no inverse of its own
            self.assertIsNone(step.inverse.inverse, label)

    def test_add_and_remove_traits_are_each_others_inverse(self):
        add = plan.add_traits(UUID, ['CUSTOM_A'], 'cmp1')
        remove = plan.remove_traits(UUID, ['CUSTOM_A'], 'cmp1')
        self.assertEqual(remove, add.inverse)
        self.assertEqual(add, remove.inverse)

    def test_create_and_delete_trait_are_each_others_inverse(self):
        self.assertEqual(plan.delete_trait('CUSTOM_A'),
                         plan.create_trait('CUSTOM_A').inverse)
        self.assertEqual(plan.create_trait('CUSTOM_A'),
                         plan.delete_trait('CUSTOM_A').inverse)

    def test_host_steps_are_each_others_inverse(self):
        self.assertEqual(plan.remove_host('agg', 'h'),
                         plan.add_host('agg', 'h').inverse)
        self.assertEqual(plan.add_host('agg', 'h'),
                         plan.remove_host('agg', 'h').inverse)

    def test_access_steps_are_each_others_inverse(self):
        self.assertEqual(plan.remove_access('f', 'p', flavor_id='1'),
                         plan.add_access('f', 'p', flavor_id='1').inverse)
        self.assertEqual(plan.add_access('f', 'p', flavor_id='1'),
                         plan.remove_access('f', 'p', flavor_id='1').inverse)

    def test_texts(self):
        self.assertEqual('create host aggregate gpu-a100 in zone az1',
                         plan.create_aggregate('gpu-a100', 'az1').what)
        self.assertEqual('create host aggregate gpu-a100',
                         plan.create_aggregate('gpu-a100').what)
        self.assertEqual(
            'add trait CUSTOM_A, CUSTOM_B to resource provider cmp1',
            plan.add_traits(UUID, ['CUSTOM_B', 'CUSTOM_A'], 'cmp1').what)
        self.assertEqual(
            'remove trait CUSTOM_A, CUSTOM_B from resource provider cmp1',
            plan.add_traits(UUID, ['CUSTOM_B', 'CUSTOM_A'],
                            'cmp1').inverse.what)

    def test_unknown_operation_is_refused(self):
        # only an instance of a declaration is an operation
        error = self.assertRaises(ValueError, plan.Step, 'aggregate.rename',
                                  'rename it')
        self.assertEqual("unknown operation 'aggregate.rename'", str(error))
        self.assertRaises(ValueError, plan.Step, operations.TraitCreate,
                          'the class, not an operation')

    def test_equality_is_op_and_args(self):
        def step(declaration, what, trait):
            return plan.Step(declaration(trait=trait), what)
        create, delete = operations.TraitCreate, operations.TraitDelete
        self.assertEqual(step(create, 'one text', 'T'),
                         step(create, 'other text', 'T'))
        # the same arguments, another operation
        self.assertNotEqual(step(create, 'x', 'T'), step(delete, 'x', 'T'))
        self.assertNotEqual(step(create, 'x', 'T'), step(create, 'x', 'U'))
        self.assertNotEqual(step(create, 'x', 'T'),
                            ('trait.create', {'trait': 'T'}))

    def test_as_dict(self):
        self.assertEqual(
            {'op': 'trait.create', 'what': 'create trait CUSTOM_A',
             'args': {'trait': 'CUSTOM_A'}, 'undo': 'delete trait CUSTOM_A'},
            plan.create_trait('CUSTOM_A').as_dict())
        self.assertIsNone(plan.delete_flavor('f1', 'g1').as_dict()['undo'])


class TestSetMetadata(testtools.TestCase):

    def test_changes_and_restore(self):
        old = {'gpu_pool': 'a100', 'color': 'red', 'gone': 'x'}
        step = plan.set_metadata(
            'agg', old, {'color': 'blue', 'new': 'yes', 'gone': None,
                         'gpu_pool': 'a100'})
        self.assertEqual('aggregate.metadata', step.op)
        # unchanged keys are left out
        self.assertEqual(
            {'name': 'agg',
             'metadata': {'color': 'blue', 'new': 'yes', 'gone': None},
             'expect': None},
            step.args)
        # the inverse restores old values, and deletes (None) what was new
        self.assertEqual('aggregate.metadata', step.inverse.op)
        # ... while they still hold what the step set (expect)
        self.assertEqual(
            {'name': 'agg',
             'metadata': {'color': 'red', 'new': None, 'gone': 'x'},
             'expect': {'color': 'blue', 'new': 'yes', 'gone': None}},
            step.inverse.args)
        self.assertEqual(
            'set metadata of aggregate agg: color=blue, gone (removed), '
            'new=yes', step.what)
        self.assertEqual(
            'restore metadata of aggregate agg: color=red, gone=x, '
            'new (removed)', step.inverse.what)

    def test_nothing_changes(self):
        for label, old, changes in [
                ('empty', {'a': '1'}, {}),
                ('same value', {'a': '1'}, {'a': '1'}),
                ('delete an absent key', {'a': '1'}, {'b': None}),
        ]:
            self.assertIsNone(plan.set_metadata('agg', old, changes), label)

    def test_does_not_change_its_arguments(self):
        old = {'a': '1'}
        changes = {'a': '1', 'b': '2'}
        plan.set_metadata('agg', old, changes)
        self.assertEqual({'a': '1'}, old)
        self.assertEqual({'a': '1', 'b': '2'}, changes)


class TestFlavorSpecs(testtools.TestCase):

    def test_set_and_unset(self):
        old = {'resources:VGPU': '1', 'trait:CUSTOM_X': 'required',
               'hw:cpu_policy': 'dedicated'}
        step = plan.flavor_specs(
            'g1', old, {'resources:VGPU': '2', 'group_policy': 'isolate',
                        'hw:cpu_policy': 'dedicated'},
            unset=['trait:CUSTOM_X', 'absent:key'], flavor_id='f-1')
        self.assertEqual('flavor.specs', step.op)
        self.assertEqual(
            {'flavor_id': 'f-1', 'name': 'g1',
             'specs_set': {'resources:VGPU': '2', 'group_policy': 'isolate'},
             'unset': ['trait:CUSTOM_X'], 'expect': None},
            step.args)
        # undo: changed and unset keys get their old value, new keys go,
        # each only while it holds what the step wrote (expect)
        self.assertEqual('flavor.specs', step.inverse.op)
        self.assertEqual(
            {'flavor_id': 'f-1', 'name': 'g1',
             'specs_set': {'resources:VGPU': '1',
                           'trait:CUSTOM_X': 'required'},
             'unset': ['group_policy'],
             'expect': {'resources:VGPU': '2', 'group_policy': 'isolate',
                        'trait:CUSTOM_X': None}},
            step.inverse.args)
        self.assertEqual(
            'set extra specs of flavor g1: group_policy=isolate, '
            'resources:VGPU=2, trait:CUSTOM_X (removed)', step.what)
        self.assertEqual(
            'restore extra specs of flavor g1: resources:VGPU=1, '
            'trait:CUSTOM_X=required, group_policy (removed)',
            step.inverse.what)

    def test_set_wins_over_unset_of_the_same_key(self):
        step = plan.flavor_specs('g1', {'k': 'old'}, {'k': 'new'},
                                 unset=['k'], flavor_id=None)
        self.assertEqual({'flavor_id': None, 'name': 'g1',
                          'specs_set': {'k': 'new'}, 'unset': [],
                          'expect': None}, step.args)
        self.assertEqual({'flavor_id': None, 'name': 'g1',
                          'specs_set': {'k': 'old'}, 'unset': [],
                          'expect': {'k': 'new'}},
                         step.inverse.args)

    def test_nothing_changes(self):
        for label, old, set_specs, unset in [
                ('nothing asked', {'a': '1'}, None, ()),
                ('same values', {'a': '1'}, {'a': '1'}, ()),
                ('unset absent keys', {'a': '1'}, {}, ['b']),
        ]:
            self.assertIsNone(
                plan.flavor_specs('g1', old, set_specs, unset,
                                  flavor_id='f-1'), label)


class TestUpdateImage(testtools.TestCase):

    IMAGE = {'id': 'img-1', 'name': 'ubuntu', 'trait:CUSTOM_X': 'required',
             'hw_machine_type': 'q35'}

    def test_changes_and_restore(self):
        step = plan.update_image(self.IMAGE, {
            'trait:CUSTOM_X': None, 'img_hide_hypervisor_id': 'true',
            'hw_machine_type': 'q35'})
        self.assertEqual('image.update', step.op)
        self.assertEqual(
            {'image_id': 'img-1', 'name': 'ubuntu',
             'changes': {'trait:CUSTOM_X': None,
                         'img_hide_hypervisor_id': 'true'},
             'expect': None},
            step.args)
        self.assertEqual('image.update', step.inverse.op)
        self.assertEqual(
            {'image_id': 'img-1', 'name': 'ubuntu',
             'changes': {'trait:CUSTOM_X': 'required',
                         'img_hide_hypervisor_id': None},
             'expect': {'trait:CUSTOM_X': None,
                        'img_hide_hypervisor_id': 'true'}},
            step.inverse.args)
        self.assertEqual(
            'set properties of image ubuntu: img_hide_hypervisor_id=true, '
            'trait:CUSTOM_X (removed)', step.what)

    def test_image_without_name_is_labelled_by_id(self):
        step = plan.update_image({'id': 'img-2'}, {'a': 'b'})
        self.assertEqual('img-2', step.args['name'])
        self.assertEqual('set properties of image img-2: a=b', step.what)

    def test_nothing_changes(self):
        for label, changes in [
                ('nothing asked', {}),
                ('same value', {'hw_machine_type': 'q35'}),
                ('remove absent property', {'absent': None}),
        ]:
            self.assertIsNone(plan.update_image(self.IMAGE, changes), label)


def _apply_meta(data, changes):
    data = dict(data)
    for key, value in changes.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    return data


def _apply_specs(data, step):
    data = dict(data)
    data.update(step.args['specs_set'])
    for key in step.args['unset']:
        data.pop(key, None)
    return data


class TestRoundTrips(testtools.TestCase):
    """Doing a step and then its inverse gives back what was there."""

    OLD = {'a': '1', 'b': '2', 'c': '3'}
    CHANGES = [
        {'a': '9'},
        {'d': '4'},
        {'b': None},
        {'a': '9', 'b': None, 'd': '4', 'c': '3'},
    ]

    def test_set_metadata(self):
        for changes in self.CHANGES:
            step = plan.set_metadata('agg', self.OLD, changes)
            new = _apply_meta(self.OLD, step.args['metadata'])
            self.assertEqual(_apply_meta(self.OLD, changes), new, changes)
            self.assertEqual(
                self.OLD, _apply_meta(new, step.inverse.args['metadata']),
                changes)

    def test_update_image(self):
        image = dict(self.OLD, id='img-1', name='ubuntu')
        for changes in self.CHANGES:
            step = plan.update_image(image, changes)
            new = _apply_meta(image, step.args['changes'])
            self.assertEqual(
                image, _apply_meta(new, step.inverse.args['changes']),
                changes)

    def test_flavor_specs(self):
        for set_specs, unset in [({'a': '9'}, ()), ({'d': '4'}, ()),
                                 ({}, ['b']),
                                 ({'a': '9', 'd': '4'}, ['b', 'c', 'x'])]:
            step = plan.flavor_specs('g1', self.OLD, set_specs, unset,
                                     flavor_id='f-1')
            new = _apply_specs(self.OLD, step)
            self.assertEqual(
                self.OLD, _apply_specs(new, step.inverse), set_specs)


class TestDeleteFlavor(testtools.TestCase):

    def test_irreversible(self):
        step = plan.delete_flavor('f-id', 'g1')
        self.assertEqual('flavor.delete', step.op)
        self.assertEqual({'flavor_id': 'f-id', 'name': 'g1'}, step.args)
        self.assertIsNone(step.inverse)
        self.assertEqual('delete flavor g1 (f-id)', step.what)


class TestPlan(testtools.TestCase):

    def test_lines_are_numbered_with_their_undo(self):
        result = plan.Plan('Creating pool a100')
        result.add(plan.create_aggregate('a100'))
        result.add(None)  # a constructor that found nothing to do
        result.extend([plan.create_trait('CUSTOM_GPU_POOL_A100'), None,
                       plan.delete_flavor('f-id', 'g1')])
        self.assertEqual(3, len(result))
        self.assertTrue(result)
        self.assertEqual(
            ['1. create host aggregate a100 (undo: delete host aggregate '
             'a100)',
             '2. create trait CUSTOM_GPU_POOL_A100 (undo: delete trait '
             'CUSTOM_GPU_POOL_A100)',
             '3. delete flavor g1 (f-id) (not undone on failure)'],
            result.lines())
        self.assertEqual(['aggregate.create', 'trait.create',
                          'flavor.delete'], [s.op for s in result])

    def test_empty_plan(self):
        result = plan.Plan('Creating pool a100')
        self.assertFalse(result)
        self.assertEqual(0, len(result))
        self.assertEqual(
            ['Creating pool a100: nothing to do, the cloud already '
             'matches.'], result.lines())

    def test_add_returns_the_step(self):
        result = plan.Plan('t')
        step = plan.create_trait('CUSTOM_A')
        self.assertIs(step, result.add(step))
        self.assertIsNone(result.add(None))
        self.assertEqual([step], result.steps)

    def test_warnings_and_rerun(self):
        result = plan.Plan('t', warnings=('w1',), rerun='"openstack x"')
        self.assertEqual(['w1'], result.warnings)
        self.assertEqual('"openstack x"', result.rerun)
