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

import ast
import dataclasses
import glob
import inspect
import os
import textwrap
from unittest import mock

import fixtures
from osc_lib import exceptions
import testtools

from gpuclient.ops import journal
from gpuclient.rules import operations
from gpuclient.rules import plan
from gpuclient.tests.unit import test_layers

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


# the decisions each declaration makes for its users (the module's
# docstring says each one's default), besides op, inverses, effect and
# read_back
SWITCHES = ('check_input', 'several_writes', 'keys_written')
ROOT = test_layers.ROOT


def _is_op(node):
    """NODE is ``<something>.op``: an operation's name."""
    return isinstance(node, ast.Attribute) and node.attr == 'op'


def name_switches(source):
    """Where SOURCE (Python) decides by an operation's name or class
    rather than asking its declaration, as messages:

    * ``x.op`` compared (``==``, ``!=``, ``in``, ...) with anything;
    * a method called on ``x.op`` (``x.op.startswith('flavor.')``);
    * a lookup by ``x.op`` (``TABLE[x.op]``, ``TABLE.get(x.op)``);
    * ``isinstance(x, operations.X)`` (``operations`` as imported).
    """
    tree = ast.parse(source)
    aliases = {'operations'} | {
        a.asname or a.name for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        and node.module == 'gpuclient.rules'
        for a in node.names if a.name == 'operations'}
    problems = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and any(
                _is_op(o) for o in [node.left] + node.comparators):
            problems.append('%d: compares an operation name' % node.lineno)
        elif isinstance(node, ast.Subscript) and _is_op(node.slice):
            problems.append('%d: looks up an operation name' % node.lineno)
        elif not isinstance(node, ast.Call):
            continue
        elif isinstance(node.func, ast.Attribute) and _is_op(node.func.value):
            problems.append('%d: %s() of an operation name'
                            % (node.lineno, node.func.attr))
        elif (isinstance(node.func, ast.Attribute)
              and node.func.attr == 'get' and node.args
              and _is_op(node.args[0])):
            problems.append('%d: looks up an operation name' % node.lineno)
        elif (isinstance(node.func, ast.Name)
              and node.func.id == 'isinstance' and len(node.args) == 2
              and any(isinstance(n, ast.Attribute)
                      and isinstance(n.value, ast.Name)
                      and n.value.id in aliases
                      for n in ast.walk(node.args[1]))):
            problems.append('%d: isinstance() of a declaration'
                            % node.lineno)
    return problems


class TestSwitchesOnTheDeclarations(testtools.TestCase):
    """What differs from one operation to another is said by its
    declaration: nothing in rules/ or ops/ switches on an operation's
    name or class."""

    def test_every_declaration_states_each_switch_or_the_default(self):
        for name in SWITCHES:
            # the default is Operation's, and the docstring says it
            self.assertIn(name, vars(operations.Operation))
            section = operations.__doc__.split('``%s()``' % name)[1]
            self.assertIn('Default:', section.split('\n* ')[0], name)
        for declaration in operations.DECLARED:
            for name in SWITCHES:
                owner = next(c for c in declaration.__mro__
                             if name in vars(c))
                # its own, one of a shared base's here, or the default
                self.assertEqual(operations.__name__, owner.__module__,
                                 '%s %s' % (declaration.op, name))
            # the kind is stated with the name
            self.assertIn('kind', vars(declaration), declaration.op)
            self.assertEqual(declaration.kind + '.',
                             declaration.op[:len(declaration.kind) + 1])

    def test_the_defaults(self):
        operation = operations.AggregateDelete(name='agg')
        self.assertIsNone(operation.check_input())
        self.assertFalse(operation.several_writes())
        self.assertIsNone(operation.keys_written())

    def test_kinds_asked_about(self):
        kinds = {d.kind: d for d in operations.DECLARED}
        self.assertIn(operations.AGGREGATE, kinds)
        self.assertIn(operations.FLAVOR, kinds)
        self.assertEqual(operations.FLAVOR, operations.FlavorSpecs.kind)
        self.assertEqual(operations.AGGREGATE,
                         operations.AggregateAddHost.kind)

    def test_several_writes(self):
        for expected, operation in [
                (True, operations.AggregateCreate(name='a',
                                                  metadata={'k': 'v'})),
                (False, operations.AggregateCreate(name='a')),
                (True, operations.FlavorSpecs(name='f', specs_set={'a': 1},
                                              unset=['b'])),
                (True, operations.FlavorSpecs(name='f', unset=['a', 'b'])),
                (False, operations.FlavorSpecs(name='f', specs_set={
                    'a': 1, 'b': 2})),
                (False, operations.FlavorSpecs(name='f', unset=['b'])),
                (False, operations.AggregateMetadata(name='a', metadata={
                    'a': 1, 'b': None}))]:
            self.assertIs(expected, operation.several_writes(), operation)

    def test_keys_written(self):
        for expected, operation in [
                ({'a', 'b'}, operations.AggregateMetadata(
                    name='a', metadata={'a': 1, 'b': None})),
                ({'a'}, operations.FlavorSpecs(name='f', specs_set={'a': 1})),
                # nothing to set or unset: no key written (not a TypeError)
                (set(), operations.FlavorSpecs(name='f')),
                (None, operations.FlavorSpecs(name='f', specs_set={'a': 1},
                                              unset=['b'])),
                (None, operations.AggregateCreate(name='a',
                                                  metadata={'a': 1}))]:
            self.assertEqual(expected, operation.keys_written(), operation)

    def test_check_input_refuses_what_nova_or_placement_refuses(self):
        long = 'x' * 256
        refused = [
            operations.AggregateCreate(name=' agg'),
            operations.AggregateCreate(name='agg', zone='a:b'),
            operations.AggregateCreate(name='agg', metadata={'k!': 'v'}),
            operations.AggregateMetadata(name='agg', metadata={'k': long}),
            operations.AggregateAddZone(name='agg', zone='a:b'),
            operations.TraitCreate(trait='lower'),
            operations.TraitDelete(trait='lower'),
            operations.ProviderAddTraits(uuid=UUID, traits=['lower']),
            operations.ProviderRemoveTraits(uuid=UUID, traits=['lower']),
            operations.FlavorCreate(name=long, fields={}),
            operations.FlavorCreate(name='f', fields={'description': long}),
            operations.FlavorDescription(name='f', description=long),
            operations.FlavorSpecs(name='f', specs_set={'k!': 'v'}),
            operations.FlavorSpecs(name='f', unset=['k!']),
        ]
        for operation in refused:
            self.assertRaises(exceptions.CommandError,
                              operation.check_input)
        # every sample step, and its undo, is one Nova would take
        for _builder, step in sample_steps():
            step.operation.check_input()
            if step.inverse is not None:
                step.inverse.operation.check_input()

    def test_nothing_outside_the_declarations_switches_on_them(self):
        paths = sorted(
            path for folder in ('gpuclient/rules', 'gpuclient/ops')
            for path in glob.glob(os.path.join(ROOT, folder, '**', '*.py'),
                                  recursive=True)
            if not path.endswith(os.path.join('rules', 'operations.py')))
        # the scan reads the real modules
        self.assertIn(os.path.join(ROOT, 'gpuclient/ops/journal.py'), paths)
        self.assertIn(os.path.join(ROOT, 'gpuclient/rules/nova_rules.py'),
                      paths)
        self.assertEqual([], test_layers.scan(paths, name_switches))

    def test_the_scan_finds_each_switch(self):
        source = textwrap.dedent('''\
            from gpuclient.rules import operations as ops

            def switch(step, table):
                if step.op == 'aggregate.create' or step.op in table:
                    return step.operation.op.startswith('flavor.')
                if isinstance(step.operation, (ops.FlavorSpecs, str)):
                    return table[step.op], table.get(step.operation.op)
                return step.operation.kind == ops.FLAVOR, table[step]
            ''')
        self.assertEqual(
            ['4: compares an operation name',
             '4: compares an operation name',
             '5: startswith() of an operation name',
             '6: isinstance() of a declaration',
             '7: looks up an operation name',
             '7: looks up an operation name'],
            sorted(name_switches(source)))


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
