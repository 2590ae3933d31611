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

"""``openstack gpu flavor set/unset`` against the strict fake Nova of
fakes.FakeCompute."""

from osc_lib import exceptions

from gpuclient.tests.unit import base
from gpuclient.tests.unit.v1 import test_flavor
from gpuclient.v1 import flavor as flavor_cmd

SIZES = test_flavor.SIZES
A, B = 'a' * 32, 'b' * 32


class ChangeTestCase(test_flavor.FlavorTestCase):
    def setUp(self):
        super().setUp()
        self.run_cmd(flavor_cmd.CreateFlavor,
                     ['g1', '--pool', 'ws', '--private', '--project',
                      'alpha'] + SIZES)
        self.run_cmd(flavor_cmd.CreateFlavor,
                     ['gpub', '--pool', 'solver'] + SIZES)
        self.cloud.add_flavor('m1.small')
        self.nova.calls[:] = []
        self.g1 = self.flavor('g1')

    def flavor(self, name):
        return next(f for f in self.cloud.flavors if f['name'] == name)

    def access(self, name):
        return sorted(self.cloud.flavor_access.get(self.flavor(name)['id'],
                                                   []))


class TestSetParser(ChangeTestCase):
    def test_parser(self):
        cmd = flavor_cmd.SetFlavor(self.make_app(None), None)
        parsed = self.check_parser(
            cmd, ['g1', '--description', 'd', '--property', 'hw:pmu=true',
                  '--property', 'os:secure_boot=required', '--project', 'a',
                  '--project', 'b', '--project-domain', 'dom', '--dry-run'],
            [('flavor', 'g1'), ('description', 'd'),
             ('properties', {'hw:pmu': 'true',
                             'os:secure_boot': 'required'}),
             ('projects', ['a', 'b']), ('project_domain', 'dom'),
             ('dry_run', True)])
        self.assertIsNotNone(parsed)
        self.check_parser(cmd, ['g1'], [('description', None),
                                        ('properties', {}),
                                        ('projects', []),
                                        ('dry_run', False)])
        self.assertRaises(base.ParserError, self.check_parser, cmd, [])

    def test_unset_parser(self):
        cmd = flavor_cmd.UnsetFlavor(self.make_app(None), None)
        self.check_parser(
            cmd, ['g1', '--property', 'hw:pmu', '--property', 'x:y',
                  '--project', 'a', '--dry-run'],
            [('flavor', 'g1'), ('properties', ['hw:pmu', 'x:y']),
             ('projects', ['a']), ('dry_run', True)])
        self.assertRaises(base.ParserError, self.check_parser, cmd,
                          ['g1', '--description', 'd'])


class TestSet(ChangeTestCase):
    def test_set_everything_by_name(self):
        self.assertIsNone(self.run_cmd(
            flavor_cmd.SetFlavor,
            ['g1', '--description', 'for CAD', '--property', 'hw:pmu=false',
             '--project', 'beta']))
        g1 = self.flavor('g1')
        self.assertEqual('for CAD', g1['description'])
        self.assertEqual('false', g1['extra_specs']['hw:pmu'])
        self.assertEqual([A, B], self.access('g1'))
        self.assertEqual('', self.stdout.getvalue())
        self.assertEqual([('describe', 'g1', 'for CAD'),
                          ('specs', 'g1', {'hw:pmu': 'false'}),
                          ('share', 'g1', B)], self.nova.calls)
        # the description goes through the SDK's update_flavor
        self.cm.compute.update_flavor.assert_called_once_with(
            g1['id'], description='for CAD')

    def test_by_id_and_rerun_is_nothing_to_do(self):
        args = [self.g1['id'], '--property', 'hw:pmu=false', '--project',
                'alpha', '--description', 'x']
        self.run_cmd(flavor_cmd.SetFlavor, args)
        self.nova.calls[:] = []
        self.run_cmd(flavor_cmd.SetFlavor, args)
        self.assertEqual([], self.nova.calls)
        self.assertIn('Flavor g1 already has these settings: nothing to do.',
                      self.logger.output)
        self.run_cmd(flavor_cmd.SetFlavor, args + ['--dry-run'])
        self.assertEqual(['Changing flavor g1: nothing to do, the cloud '
                          'already matches.'],
                         self.stdout.getvalue().splitlines())

    def test_dry_run_prints_plan_and_writes_nothing(self):
        before = self.state()
        self.run_cmd(flavor_cmd.SetFlavor,
                     ['g1', '--description', 'd', '--property',
                      'hw:pmu=true', '--project', 'beta', '--dry-run'])
        self.assertEqual([
            "1. set the description of flavor g1 to 'd' (undo: restore the "
            "description of flavor g1: none)",
            '2. set extra specs of flavor g1: hw:pmu=true (undo: restore '
            'extra specs of flavor g1: hw:pmu (removed))',
            '3. give project %s access to flavor g1 (undo: take access to '
            'flavor g1 from project %s)' % (B, B),
        ], self.stdout.getvalue().splitlines())
        self.assertEqual([], self.nova.calls)
        self.assertEqual(before, self.state())

    def test_failure_mid_plan_rolls_back(self):
        self.flavor('g1')['description'] = 'old'
        self.flavor('g1')['extra_specs']['hw:pmu'] = 'true'
        before = self.state()
        self.nova.fail[('post', '/action')] = 403
        exc = self.assertRaises(
            exceptions.CommandError, self.run_cmd, flavor_cmd.SetFlavor,
            ['g1', '--description', 'new', '--property', 'hw:pmu=false',
             '--property', 'os:secure_boot=required', '--project', 'beta'])
        self.assertIn('Changing flavor g1 failed at step 3 of 3 (give '
                      'project %s access to flavor g1): ' % B, str(exc))
        self.assertIn('Everything it had done was undone (2 step(s)): the '
                      'cloud is as it was.', str(exc))
        self.assertEqual(before, self.state())
        # undone newest first: the specs, then the description
        self.assertEqual([('specs', 'g1', {'hw:pmu': 'true'}),
                          ('unset', 'g1', 'os:secure_boot'),
                          ('describe', 'g1', 'old')], self.nova.calls[3:])

    def test_not_a_gpu_flavor(self):
        exc = self.assertRaises(exceptions.CommandError, self.run_cmd,
                                flavor_cmd.SetFlavor,
                                ['m1.small', '--description', 'x'])
        self.assertIn('Flavor m1.small is not a GPU flavor', str(exc))
        self.assertIn('Use "openstack flavor set".', str(exc))
        exc = self.assertRaises(exceptions.CommandError, self.run_cmd,
                                flavor_cmd.UnsetFlavor,
                                ['m1.small', '--property', 'hw:pmu'])
        self.assertIn('Use "openstack flavor unset".', str(exc))
        self.assertEqual([], self.nova.calls)

    def test_derived_specs_refused(self):
        for key in ('aggregate_instance_extra_specs:gpu_pool=solver',
                    'resources:VGPU=2', 'trait:CUSTOM_NVIDIA_35=required',
                    'trait:CUSTOM_GPU_POOL_WS=forbidden',
                    'resources1:VGPU=1', 'group_policy=none',
                    'pci_passthrough:alias=h100:1',
                    'hw:pci_numa_affinity_policy=required'):
            exc = self.assertRaises(exceptions.CommandError, self.run_cmd,
                                    flavor_cmd.SetFlavor,
                                    ['g1', '--property', key])
            self.assertIn('gpuclient derives this extra spec of flavor g1 '
                          'from its pool', str(exc), key)
            exc = self.assertRaises(
                exceptions.CommandError, self.run_cmd,
                flavor_cmd.UnsetFlavor,
                ['g1', '--property', key.split('=')[0]])
            self.assertIn('gpuclient derives this extra spec', str(exc), key)
        self.assertEqual([], self.nova.calls)

    def test_nova_rules_checked_first(self):
        for prop, message in (
                ('hw:pmu=maybe', 'Nova wants a boolean'),
                ('hw:nonsense=1', 'Nova does not know the extra spec'),
                ('plain=1', 'an extra spec without a namespace')):
            exc = self.assertRaises(exceptions.CommandError, self.run_cmd,
                                    flavor_cmd.SetFlavor,
                                    ['g1', '--property', prop])
            self.assertIn(message, str(exc), prop)
        self.assertEqual([], self.nova.calls)

    def test_public_flavor_refuses_projects(self):
        for cls in (flavor_cmd.SetFlavor, flavor_cmd.UnsetFlavor):
            exc = self.assertRaises(exceptions.CommandError, self.run_cmd,
                                    cls, ['gpub', '--project', 'alpha'])
            self.assertIn('--project: flavor gpub is public', str(exc))
        self.assertEqual([], self.nova.calls)

    def test_other_traits_and_resources_are_the_operators(self):
        self.run_cmd(flavor_cmd.SetFlavor,
                     ['gpub', '--property', 'trait:HW_CPU_X86_AVX2=required',
                      '--property', 'hw:cpu_policy=dedicated'])
        specs = self.flavor('gpub')['extra_specs']
        self.assertEqual('required', specs['trait:HW_CPU_X86_AVX2'])
        self.assertEqual('dedicated', specs['hw:cpu_policy'])


class TestUnset(ChangeTestCase):
    def test_unset_property_and_project(self):
        self.run_cmd(flavor_cmd.SetFlavor,
                     ['g1', '--property', 'hw:pmu=true', '--project',
                      'beta'])
        self.nova.calls[:] = []
        self.assertIsNone(self.run_cmd(
            flavor_cmd.UnsetFlavor,
            ['g1', '--property', 'hw:pmu', '--project', 'beta']))
        self.assertNotIn('hw:pmu', self.flavor('g1')['extra_specs'])
        self.assertEqual([A], self.access('g1'))
        self.assertEqual([('unset', 'g1', 'hw:pmu'),
                          ('unshare', 'g1', B)], self.nova.calls)
        # again: nothing to do (a key or project already gone)
        self.nova.calls[:] = []
        self.run_cmd(flavor_cmd.UnsetFlavor,
                     ['g1', '--property', 'hw:pmu', '--project', B])
        self.assertEqual([], self.nova.calls)

    def test_failure_puts_the_spec_back(self):
        self.run_cmd(flavor_cmd.SetFlavor,
                     ['g1', '--property', 'hw:pmu=true'])
        before = self.state()
        self.nova.fail[('post', '/action')] = 403
        self.nova.calls[:] = []
        exc = self.assertRaises(
            exceptions.CommandError, self.run_cmd, flavor_cmd.UnsetFlavor,
            ['g1', '--property', 'hw:pmu', '--project', 'alpha'])
        self.assertIn('Changing flavor g1 failed at step 2 of 2 (take '
                      'access to flavor g1 from project %s)' % A, str(exc))
        self.assertIn('Everything it had done was undone (1 step(s))',
                      str(exc))
        self.assertEqual(before, self.state())
        self.assertEqual([('unset', 'g1', 'hw:pmu'), ('unshare', 'g1', A),
                          ('specs', 'g1', {'hw:pmu': 'true'})],
                         self.nova.calls)

    def test_dry_run(self):
        before = self.state()
        self.run_cmd(flavor_cmd.UnsetFlavor,
                     ['g1', '--project', 'alpha', '--dry-run'])
        self.assertEqual(
            ['1. take access to flavor g1 from project %s (undo: give '
             'project %s access to flavor g1 again)' % (A, A)],
            self.stdout.getvalue().splitlines())
        self.assertEqual(before, self.state())
