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

"""The journal's table of operations (journal.OPERATIONS) against the
declarations of gpuclient.rules.operations and the step builders of
gpuclient.rules.plan."""

import dataclasses
import inspect
from unittest import mock

import fixtures
import testtools

from gpuclient.ops import journal
from gpuclient.rules import operations
from gpuclient.rules import plan

UUID = '11111111-2222-3333-4444-555555555555'
IMAGE = {'id': 'img-1', 'name': 'ubuntu', 'os_distro': 'ubuntu'}

MOVE_PROVIDERS = {'source': ['rp-1'], 'destination': ['rp-2']}


def sample_steps():
    """(builder name, step) for every step builder of plan, each way it
    can pair a step with its inverse, from plain arguments."""
    return [
        ('create_aggregate', plan.create_aggregate('agg', 'nova')),
        ('delete_aggregate', plan.delete_aggregate('agg', 'nova',
                                                   {'gpu': 'true'})),
        ('set_metadata', plan.set_metadata('agg', {'a': '1'},
                                           {'a': '2', 'b': '3'})),
        ('set_zone', plan.set_zone('agg', None, 'az1')),
        ('set_zone', plan.set_zone('agg', 'az1', 'az2')),
        ('add_host', plan.add_host('agg', 'host1', [UUID])),
        ('remove_host', plan.remove_host('agg', 'host1', [UUID])),
        ('create_trait', plan.create_trait('CUSTOM_GPU')),
        ('delete_trait', plan.delete_trait('CUSTOM_GPU')),
        ('add_traits', plan.add_traits(UUID, ['CUSTOM_GPU'], 'host1')),
        ('remove_traits', plan.remove_traits(UUID, ['CUSTOM_GPU'],
                                             'host1')),
        ('create_flavor', plan.create_flavor('gpu.small', {'vcpus': 4})),
        ('delete_flavor', plan.delete_flavor('f-1', 'gpu.small')),
        ('set_description', plan.set_description(
            'gpu.small', None, 'for GPUs', flavor_id='f-1')),
        ('flavor_specs', plan.flavor_specs(
            'gpu.small', {'a': '1', 'c': '3'}, {'a': '2', 'b': '3'}, ['c'],
            flavor_id='f-1')),
        ('flavor_specs', plan.flavor_specs('gpu.new', {}, {'a': '1'},
                                           flavor_id=None)),
        ('add_access', plan.add_access('gpu.small', 'p1', flavor_id='f-1')),
        ('remove_access', plan.remove_access('gpu.small', 'p1',
                                             flavor_id='f-1')),
        ('update_image', plan.update_image(IMAGE, {'os_distro': None,
                                                   'hw': 'q35'})),
        ('set_limit', plan.set_limit('p1', 'class:VGPU', 2)),
        ('set_limit', plan.set_limit('p1', 'class:VGPU', 2, old=1)),
        ('set_limit', plan.set_limit(None, 'class:VGPU', 0, old=4)),
        ('delete_limit', plan.delete_limit('p1', 'class:VGPU', 1)),
        ('describe_limit', plan.describe_limit('p1', 'class:VGPU', None,
                                               'gpu apply')),
        ('describe_limit', plan.describe_limit(None, 'class:VGPU', 'a',
                                               'a gpu apply')),
        ('disable_service', plan.disable_service('host1', 'svc-1',
                                                 'gpuclient: maintenance')),
        ('enable_service', plan.enable_service('host1', 'svc-1',
                                               'gpuclient: maintenance')),
        ('disable_service', plan.disable_service(
            'host1', 'svc-1', 'gpuclient: maintenance', undone=False)),
        ('release_device', plan.release_device(
            UUID, 'host1_0000:41:00.0', 'CUSTOM_PCI_10DE_2335')),
        ('live_migrate', plan.live_migrate(
            UUID, 'vm', 'host1', 'host2', ['VGPU'], MOVE_PROVIDERS, 60)),
        ('cold_migrate', plan.cold_migrate(
            UUID, 'vm', 'host1', 'host2', ['VGPU'], MOVE_PROVIDERS, 60)),
        ('confirm_migration', plan.confirm_migration(
            UUID, 'vm', 'host1', 'host2', ['VGPU'], MOVE_PROVIDERS, 60)),
        ('shelve', plan.shelve(UUID, 'vm', 'host1', ['VGPU'],
                               MOVE_PROVIDERS, 60)),
    ]


class TestOperations(testtools.TestCase):
    """The one table: every declaration of rules.operations has the
    executor's do and read-back, and the builders pair steps as the
    declarations say."""

    def test_table_is_every_declaration(self):
        self.assertEqual(list(operations.DECLARED),
                         list(journal.OPERATIONS))
        for declaration, operation in journal.OPERATIONS.items():
            self.assertIsInstance(operation, journal.Operation)
            self.assertTrue(callable(operation.do), declaration.op)
            self.assertTrue(callable(operation.holds), declaration.op)
        self.assertEqual(tuple(d.op for d in operations.DECLARED),
                         plan.OPERATIONS)
        self.assertEqual(len(plan.OPERATIONS), len(set(plan.OPERATIONS)))

    def test_do_and_holds_take_the_declared_arguments(self):
        # the executor is called with the step's arguments by keyword:
        # its methods take exactly the declaration's fields
        for declaration, operation in journal.OPERATIONS.items():
            fields = [f.name for f in dataclasses.fields(declaration)]
            for method in operation:
                params = list(inspect.signature(method).parameters)[1:]
                self.assertEqual(sorted(fields), sorted(params),
                                 '%s %s' % (declaration.op,
                                            method.__name__))

    def test_every_inverse_is_a_declaration(self):
        for declaration in operations.DECLARED:
            for inverse in declaration.inverses:
                self.assertIn(inverse, operations.DECLARED, declaration.op)

    def test_every_declaration_has_its_own_effect_and_read_back(self):
        for declaration in operations.DECLARED:
            self.assertIn('effect', vars(declaration), declaration.op)
            self.assertTrue(declaration.read_back, declaration.op)

    def test_builders_pair_as_declared(self):
        seen = set()
        for builder, step in sample_steps():
            self.assertIsNotNone(step, builder)
            declaration = type(step.operation)
            seen.add(declaration)
            if step.inverse is None:
                if declaration is not operations.ServiceDisable:
                    self.assertEqual((), declaration.inverses, builder)
                # else a drain's cordon, kept when a move fails
                continue
            self.assertIn(type(step.inverse.operation),
                          declaration.inverses, builder)
        # the samples cover every operation
        self.assertEqual(set(operations.DECLARED), seen | {
            type(s.inverse.operation) for _b, s in sample_steps()
            if s.inverse})

    def test_every_builder_is_sampled(self):
        builders = {
            name for name, func in inspect.getmembers(plan,
                                                      inspect.isfunction)
            if not name.startswith('_') and func.__module__ == plan.__name__
        }
        self.assertEqual(builders, {b for b, _s in sample_steps()})

    def test_every_declared_inverse_is_one_a_builder_makes(self):
        # an inverse is declared only where some builder makes it
        made = {}
        for _builder, step in sample_steps():
            if step.inverse is not None:
                made.setdefault(type(step.operation), set()).add(
                    type(step.inverse.operation))
        for declaration in operations.DECLARED:
            if declaration in made:
                self.assertEqual(made[declaration],
                                 set(declaration.inverses), declaration.op)

    def test_run_and_holds_dispatch_through_the_table(self):
        step = plan.create_trait('CUSTOM_GPU')
        do, holds = mock.Mock(), mock.Mock(return_value=True)
        fake = journal.Operation(do=do, holds=holds)
        executor = journal.Executor(mock.Mock())
        with mock.patch.dict(journal.OPERATIONS,
                             {operations.TraitCreate: fake}):
            executor.run(step)
            self.assertTrue(executor.holds(step))
        do.assert_called_once_with(executor, trait='CUSTOM_GPU')
        holds.assert_called_once_with(executor, trait='CUSTOM_GPU')

    def test_unknown_operation(self):
        self.assertRaises(ValueError, journal.operation, object())
        self.assertIs(journal.OPERATIONS[operations.TraitCreate],
                      journal.operation(operations.TraitCreate(trait='T')))

    def test_a_declaration_without_do_or_read_back_fails_the_import(self):
        for table in (journal._DOES, journal._READS_BACK):
            with mock.patch.dict(table):
                del table[operations.TraitCreate]
                error = self.assertRaises(ImportError, journal._table)
            self.assertIn("['trait.create']", str(error))

    def test_a_method_for_no_declaration_fails_the_import(self):
        @dataclasses.dataclass(frozen=True, kw_only=True)
        class Stray(operations.Operation):
            op = 'trait.rename'

        with mock.patch.dict(journal._DOES):
            journal.executes(Stray)(lambda executor: None)
            error = self.assertRaises(ImportError, journal._table)
        self.assertIn("['trait.rename']", str(error))

    def test_a_declaration_registered_twice_is_refused(self):
        self.assertRaises(TypeError, journal.executes(operations.TraitCreate),
                          lambda executor, trait: None)


class TestRun(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.apply = self.useFixture(fixtures.MockPatchObject(
            journal, 'apply')).mock
        self.client = mock.Mock()
        self.plan = plan.Plan('Creating trait', [
            plan.create_trait('CUSTOM_GPU')])

    def test_empty_plan_is_not_applied(self):
        self.assertIsNone(journal.run(self.client, plan.Plan('Nothing')))
        self.apply.assert_not_called()

    def test_dry_run_is_not_applied(self):
        self.assertIsNone(journal.run(self.client, self.plan, dry_run=True))
        self.apply.assert_not_called()

    def test_plan_is_applied(self):
        on_step = mock.Mock()
        executor = journal.run(self.client, self.plan, on_step=on_step)
        self.apply.assert_called_once_with(self.client, self.plan,
                                           on_step=on_step)
        self.assertIs(self.apply.return_value, executor)
