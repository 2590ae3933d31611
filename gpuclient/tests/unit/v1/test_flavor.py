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

"""``openstack gpu flavor create/list/show/delete`` against the strict fake
Nova of fakes.FakeCompute."""

import copy
import io
from unittest import mock

from openstack.compute.v2 import flavor as sdk_flavor_mod
from openstackclient.compute.v2 import flavor as osc_flavor
from osc_lib import exceptions
from requests_mock.contrib import fixture as rm_fixture

from gpuclient.rules import pools
from gpuclient.tests.unit import base
from gpuclient.tests.unit import fakes
from gpuclient.v1 import flavor as flavor_cmd

STEER = 'aggregate_instance_extra_specs:gpu_pool'


def pool_aggregate(name, mode, **kwargs):
    return fakes.Aggregate(name, pools.metadata_for(
        pools.build_spec(name, mode, **kwargs)), hosts=['h1'])


class FlavorTestCase(base.CommandTestCase):
    def setUp(self):
        super().setUp()
        # no Placement: a request to it fails the test
        self.useFixture(rm_fixture.Fixture())
        self.cloud = fakes.FakeCloud()
        self.cloud.compute_host('h1')
        self.cloud.aggregates = [
            pool_aggregate('solver', 'passthrough', alias='h100',
                           pci_id='10de:2331'),
            pool_aggregate('ws', 'vgpu', vgpu_type='nvidia-35',
                           isolate=True),
            pool_aggregate('mig', 'mig', mig_profile='3g.40gb'),
            pool_aggregate('training', 'baremetal',
                           resource_class='baremetal.gpu-h100'),
            fakes.Aggregate('ssd', {'ssd': 'true'}, hosts=['h1']),
        ]
        self.cm = self.useFixture(fakes.ClientManagerFixture(self.cloud))
        self.nova = self.cm.nova
        self.gpu = self.cm.gpu
        self.projects = {'alpha': 'a' * 32, 'beta': 'b' * 32}

        def find_project(name_or_id, ignore_missing=True):
            if name_or_id in self.projects:
                return mock.Mock(id=self.projects[name_or_id])
            if name_or_id in self.projects.values():
                return mock.Mock(id=name_or_id)
            return None

        self.gpu._conn.identity.find_project.side_effect = find_project

    def run_cmd(self, cls, args):
        app = self.make_app(self.cm.client_manager)
        self.stdout = app.stdout = io.StringIO()
        cmd = cls(app, None)
        parsed = self.check_parser(cmd, list(args))
        return cmd.take_action(parsed)

    def state(self):
        return (copy.deepcopy(self.cloud.flavors),
                copy.deepcopy(self.cloud.flavor_access),
                {a.name: dict(a.metadata) for a in self.cloud.aggregates})

    def aggregate(self, name):
        return next(a for a in self.cloud.aggregates if a.name == name)


def as_dict(columns, values):
    return {
        c: (v.human_readable() if hasattr(v, 'human_readable') else v)
        for c, v in zip(columns, values, strict=True)
    }


class TestCreateParser(FlavorTestCase):
    def test_defaults(self):
        cmd = flavor_cmd.CreateFlavor(self.make_app(None), None)
        self.check_parser(
            cmd, ['f1', '--pool', 'ws', '--vcpus', '2', '--ram', '1024',
                  '--disk', '10'],
            [('name', 'f1'), ('pool', 'ws'), ('gpus', 1), ('vcpus', 2),
             ('ram', 1024), ('disk', 10), ('ephemeral', 0), ('swap', 0),
             ('numa_policy', None), ('public', True), ('projects', []),
             ('description', None), ('properties', None),
             ('dry_run', False)])
        self.check_parser(
            cmd, ['f1', '--pool', 'ws', '--vcpus', '2', '--ram', '1024',
                  '--disk', '10', '--dry-run'], [('dry_run', True)])

    def test_all_options(self):
        cmd = flavor_cmd.CreateFlavor(self.make_app(None), None)
        self.check_parser(
            cmd, ['f1', '--pool', 'solver', '--gpus', '2', '--vcpus', '2',
                  '--ram', '1024', '--disk', '10', '--ephemeral', '5',
                  '--swap', '512', '--numa-policy', 'required', '--private',
                  '--project', 'alpha', '--project', 'beta',
                  '--description', 'd', '--property', 'hw:numa_nodes=1',
                  '--property', 'hw:cpu_policy=dedicated'],
            [('gpus', 2), ('ephemeral', 5), ('swap', 512),
             ('numa_policy', 'required'), ('public', False),
             ('projects', ['alpha', 'beta']), ('description', 'd'),
             ('properties', {'hw:numa_nodes': '1',
                             'hw:cpu_policy': 'dedicated'})])

    def test_maxphysaddr(self):
        cmd = flavor_cmd.CreateFlavor(self.make_app(None), None)
        base_args = ['f1', '--pool', 'solver', '--vcpus', '2', '--ram',
                     '1024', '--disk', '10']
        self.check_parser(cmd, base_args, [('maxphysaddr_mode', None),
                                           ('maxphysaddr_bits', None)])
        self.check_parser(
            cmd, base_args + ['--maxphysaddr-mode', 'emulate',
                              '--maxphysaddr-bits', '44'],
            [('maxphysaddr_mode', 'emulate'), ('maxphysaddr_bits', 44)])
        for bad in (['--maxphysaddr-mode', 'host'],
                    ['--maxphysaddr-bits', 'many']):
            self.assertRaises(base.ParserError, self.check_parser, cmd,
                              base_args + bad)

    def test_required_and_choices(self):
        cmd = flavor_cmd.CreateFlavor(self.make_app(None), None)
        for args in (['f1', '--vcpus', '1', '--ram', '1', '--disk', '1'],
                     ['f1', '--pool', 'ws', '--ram', '1', '--disk', '1'],
                     ['f1', '--pool', 'ws', '--vcpus', '1', '--ram', '1',
                      '--disk', '1', '--numa-policy', 'strict'],
                     ['f1', '--pool', 'ws', '--vcpus', '1', '--ram', '1',
                      '--disk', '1', '--public', '--private']):
            self.assertRaises(base.ParserError, self.check_parser, cmd,
                              args)


SIZES = ['--vcpus', '4', '--ram', '2048', '--disk', '10']


class TestCreate(FlavorTestCase):
    def test_vgpu_isolated_two_gpus(self):
        columns, values = self.run_cmd(
            flavor_cmd.CreateFlavor,
            ['g1.ws.2', '--pool', 'ws', '--gpus', '2'] + SIZES)
        shown = as_dict(columns, values)
        (flavor,) = self.cloud.flavors
        self.assertEqual({
            STEER: 'ws',
            'trait:CUSTOM_GPU_POOL_WS': 'required',
            'resources1:VGPU': '1', 'trait1:CUSTOM_NVIDIA_35': 'required',
            'resources2:VGPU': '1', 'trait2:CUSTOM_NVIDIA_35': 'required',
            'group_policy': 'isolate',
        }, flavor['extra_specs'])
        self.assertEqual('isolate',
                         self.aggregate('ws').metadata['group_policy'])
        self.assertEqual(('ws', 'vgpu', 2),
                         (shown['pool'], shown['mode'], shown['gpus']))
        # every call sent at compute API 2.61
        self.assertEqual({'2.61'}, {c[2] for c in self.nova.sent
                                    if c[0] in ('get', 'post')})
        self.assertIn('SR-IOV', self.logger.output)
        self.assertIn('group_policy=isolate on the aggregate',
                      self.logger.output)

    def test_maxphysaddr_options(self):
        # issue 40 rule 3: Nova's settings as extra specs
        self.run_cmd(flavor_cmd.CreateFlavor,
                     ['g4.h100', '--pool', 'solver', '--gpus', '4',
                      '--maxphysaddr-mode', 'emulate',
                      '--maxphysaddr-bits', '44'] + SIZES)
        (flavor,) = self.cloud.flavors
        self.assertEqual(
            ('emulate', '44'),
            (flavor['extra_specs']['hw:maxphysaddr_mode'],
             flavor['extra_specs']['hw:maxphysaddr_bits']))
        # bits without emulate: nothing written
        before = self.state()
        exc = self.assertRaises(
            exceptions.CommandError, self.run_cmd,
            flavor_cmd.CreateFlavor,
            ['g4.b', '--pool', 'solver', '--maxphysaddr-bits', '44']
            + SIZES)
        self.assertIn('needs --maxphysaddr-mode emulate', str(exc))
        self.assertEqual(before, self.state())

    def test_large_bar_flavor_warns(self):
        self.cloud.aggregates.append(pool_aggregate(
            'llm', 'passthrough', alias='h100nvl', pci_id='10de:2321'))
        self.run_cmd(flavor_cmd.CreateFlavor,
                     ['g4.nvl', '--pool', 'llm', '--gpus', '4', '--vcpus',
                      '64', '--ram', str(512 * 1024), '--disk', '10'])
        self.assertIn('--maxphysaddr-mode passthrough', self.logger.output)
        (flavor,) = self.cloud.flavors
        self.assertNotIn('hw:maxphysaddr_mode', flavor['extra_specs'])

    def test_pool_named_by_aggregate_uuid(self):
        agg = self.aggregate('ws')
        columns, values = self.run_cmd(
            flavor_cmd.CreateFlavor,
            ['g1.ws.1', '--pool', agg.uuid, '--gpus', '1'] + SIZES)
        self.assertEqual('ws', as_dict(columns, values)['pool'])
        (flavor,) = self.cloud.flavors
        self.assertEqual('ws', flavor['extra_specs'][STEER])
        listed = self.run_cmd(flavor_cmd.ListFlavor, ['--pool', str(agg.id)])
        self.assertEqual(['g1.ws.1'], [row[1] for row in listed[1]])

    def test_private_with_projects(self):
        self.run_cmd(flavor_cmd.CreateFlavor,
                     ['g1.h100.1', '--pool', 'solver', '--private',
                      '--project', 'alpha', '--project', 'b' * 32]
                     + SIZES)
        (flavor,) = self.cloud.flavors
        self.assertFalse(flavor['os-flavor-access:is_public'])
        self.assertEqual(['a' * 32, 'b' * 32],
                         self.cloud.flavor_access[flavor['id']])
        self.assertEqual('h100:1',
                         flavor['extra_specs']['pci_passthrough:alias'])

    def test_identical_is_noop(self):
        args = ['g1', '--pool', 'mig'] + SIZES
        self.run_cmd(flavor_cmd.CreateFlavor, args)
        writes = len(self.nova.calls)
        columns, values = self.run_cmd(flavor_cmd.CreateFlavor, args)
        self.assertEqual(writes, len(self.nova.calls))
        self.assertEqual(1, len(self.cloud.flavors))
        self.assertIn('already exists with these settings',
                      self.logger.output)
        self.assertEqual('mig', as_dict(columns, values)['mode'])

    def test_different_same_name(self):
        self.run_cmd(flavor_cmd.CreateFlavor, ['g1', '--pool', 'mig']
                     + SIZES)
        writes = len(self.nova.calls)
        exc = self.assertRaises(
            exceptions.CommandError, self.run_cmd, flavor_cmd.CreateFlavor,
            ['g1', '--pool', 'mig', '--vcpus', '8', '--ram', '2048',
             '--disk', '10'])
        self.assertIn('vcpus: 8 (existing 4)', str(exc))
        self.assertEqual(writes, len(self.nova.calls))

    def test_refused_before_any_write(self):
        cases = [
            (['--pool', 'nope'], 'Known pools: mig, solver, training, ws'),
            (['--pool', 'ws', '--numa-policy', 'required'],
             'passthrough pools'),
            (['--pool', 'mig', '--gpus', '2'], 'MIG slice'),
            (['--pool', 'ws', '--property', 'resources:VGPU=2'],
             'contradicts'),
            (['--pool', 'ws', '--property', 'resources:PGPU=1'],
             'asks for GPUs besides'),
            (['--pool', 'ws', '--property', 'hw:foo=1'], 'does not know'),
            (['--pool', 'ws', '--project', 'alpha'], '--private'),
            (['--pool', 'ws', '--private', '--project', 'nobody'],
             'No project'),
        ]
        for extra, message in cases:
            exc = self.assertRaises(
                exceptions.CommandError, self.run_cmd,
                flavor_cmd.CreateFlavor, ['g1'] + extra + SIZES)
            self.assertIn(message, str(exc), extra)
        exc = self.assertRaises(
            exceptions.CommandError, self.run_cmd, flavor_cmd.CreateFlavor,
            ['g1', '--pool', 'ws', '--vcpus', '1', '--ram', '-1',
             '--disk', '1'])
        self.assertIn('--ram -1', str(exc))
        self.assertEqual([], self.nova.calls)
        self.assertEqual([], self.cloud.flavors)

    def test_conflicting_aggregate_policy(self):
        self.aggregate('ws').metadata['group_policy'] = 'none'
        exc = self.assertRaises(
            exceptions.CommandError, self.run_cmd, flavor_cmd.CreateFlavor,
            ['g1', '--pool', 'ws', '--gpus', '2'] + SIZES)
        self.assertIn('group_policy=none', str(exc))
        self.assertEqual([], self.nova.calls)

    def test_dry_run(self):
        before = self.state()
        columns, values = self.run_cmd(
            flavor_cmd.CreateFlavor,
            ['g1', '--pool', 'ws', '--gpus', '2', '--private', '--project',
             'alpha', '--dry-run'] + SIZES)
        shown = as_dict(columns, values)
        self.assertEqual(('dry_run', 'plan', 'warnings'), columns)
        self.assertIs(True, shown['dry_run'])
        specs = ('aggregate_instance_extra_specs:gpu_pool=ws, '
                 'group_policy=isolate, resources1:VGPU=1, '
                 'resources2:VGPU=1, trait1:CUSTOM_NVIDIA_35=required, '
                 'trait2:CUSTOM_NVIDIA_35=required, '
                 'trait:CUSTOM_GPU_POOL_WS=required')
        self.assertEqual([
            '1. create flavor g1 (undo: delete flavor g1)',
            '2. set extra specs of flavor g1: %s (undo: restore extra specs '
            'of flavor g1: %s)' % (specs, ', '.join(
                '%s (removed)' % kv.split('=')[0]
                for kv in specs.split(', '))),
            '3. give project %s access to flavor g1 (undo: take access to '
            'flavor g1 from project %s)' % ('a' * 32, 'a' * 32),
            '4. set metadata of aggregate ws: group_policy=isolate (undo: '
            'restore metadata of aggregate ws: group_policy (removed))'],
            shown['plan'].split('\n'))
        self.assertIn('Sets group_policy=isolate on the aggregate of pool '
                      'ws', shown['warnings'])
        self.assertEqual([], self.nova.calls)
        self.assertEqual(before, self.state())
        # an existing flavor with these settings: nothing to do
        self.run_cmd(flavor_cmd.CreateFlavor, ['g1', '--pool', 'mig']
                     + SIZES)
        writes = len(self.nova.calls)
        columns, values = self.run_cmd(
            flavor_cmd.CreateFlavor,
            ['g1', '--pool', 'mig', '--dry-run'] + SIZES)
        self.assertEqual('Creating flavor g1: nothing to do, the cloud '
                         'already matches.',
                         as_dict(columns, values)['plan'])
        self.assertEqual(writes, len(self.nova.calls))

    def test_extra_specs_denied_deletes_flavor(self):
        self.nova.fail[('post', '/os-extra_specs')] = 403
        exc = self.assertRaises(
            exceptions.CommandError, self.run_cmd, flavor_cmd.CreateFlavor,
            ['g1', '--pool', 'ws'] + SIZES)
        self.assertIn('Creating flavor g1 failed at step 2 of 2 (set extra '
                      'specs of flavor g1: ', str(exc))
        self.assertIn('forbidden: Policy says no', str(exc))
        self.assertIn('Everything it had done was undone (1 step(s)): the '
                      'cloud is as it was. Fix the cause and run the same '
                      '"openstack gpu flavor create" command again.',
                      str(exc))
        self.assertEqual([], self.cloud.flavors)

    def test_access_failure_deletes_flavor(self):
        self.nova.fail[('post', '/action')] = 409
        exc = self.assertRaises(
            exceptions.CommandError, self.run_cmd, flavor_cmd.CreateFlavor,
            ['g1', '--pool', 'ws', '--private', '--project', 'alpha']
            + SIZES)
        self.assertIn('Creating flavor g1 failed at step 3 of 3 (give '
                      'project %s access to flavor g1): ' % ('a' * 32),
                      str(exc))
        self.assertIn('Everything it had done was undone (2 step(s)): the '
                      'cloud is as it was.', str(exc))
        self.assertEqual([], self.cloud.flavors)

    def test_aggregate_failure_deletes_flavor(self):
        self.nova.fail[('metadata', 'ws')] = 403
        exc = self.assertRaises(
            exceptions.CommandError, self.run_cmd, flavor_cmd.CreateFlavor,
            ['g1', '--pool', 'ws', '--gpus', '2'] + SIZES)
        self.assertIn('Creating flavor g1 failed at step 3 of 3 (set '
                      'metadata of aggregate ws: group_policy=isolate): ',
                      str(exc))
        self.assertIn('Everything it had done was undone (2 step(s)): the '
                      'cloud is as it was.', str(exc))
        self.assertEqual([], self.cloud.flavors)
        self.assertNotIn('group_policy', self.aggregate('ws').metadata)

    def test_named_like_another_flavors_id(self):
        # Nova's GET /flavors/42 is the flavor whose ID is 42, whatever
        # flavor is named 42: the create acts on the ID it made
        self.cloud.add_flavor('plain', extra_specs={'hw:a': '1'},
                              flavor_id='42')
        before = self.state()
        self.nova.fail[('post', '/os-extra_specs')] = 400
        exc = self.assertRaises(
            exceptions.CommandError, self.run_cmd, flavor_cmd.CreateFlavor,
            ['42', '--pool', 'ws'] + SIZES)
        self.assertIn('the cloud is as it was', str(exc))
        self.assertEqual(before, self.state())
        self.nova.fail.clear()
        columns, values = self.run_cmd(flavor_cmd.CreateFlavor,
                                       ['42', '--pool', 'ws'] + SIZES)
        shown = as_dict(columns, values)
        (new,) = [f for f in self.cloud.flavors if f['name'] == '42']
        self.assertNotEqual('42', new['id'])
        self.assertEqual((new['id'], '42'), (shown['id'], shown['name']))
        self.assertEqual('ws', new['extra_specs'][STEER])
        self.assertEqual(before[0][0], self.cloud.flavors[0])

    def test_undo_failure_is_reported(self):
        self.nova.fail[('post', '/os-extra_specs')] = 403
        self.nova.fail[('delete', '')] = 500
        exc = self.assertRaises(
            exceptions.CommandError, self.run_cmd, flavor_cmd.CreateFlavor,
            ['g1', '--pool', 'ws'] + SIZES)
        self.assertIn('Creating flavor g1 failed at step 2 of 2', str(exc))
        self.assertIn('Undoing failed too (could not undo "create flavor '
                      'g1": ', str(exc))
        self.assertIn('), so this is left: create flavor g1. Run the same '
                      '"openstack gpu flavor create" command again to '
                      'finish it from where it stopped.', str(exc))
        self.assertNotIn('the cloud is as it was', str(exc))
        # the flavor is left, without its extra specs ...
        (flavor,) = self.cloud.flavors
        self.assertEqual({}, flavor['extra_specs'])
        # ... and the same command, once Nova lets it, finishes the create
        self.nova.fail.clear()
        self.run_cmd(flavor_cmd.CreateFlavor, ['g1', '--pool', 'ws']
                     + SIZES)
        (again,) = self.cloud.flavors
        self.assertEqual(flavor['id'], again['id'])
        self.assertEqual({
            STEER: 'ws', 'resources:VGPU': '1',
            'trait:CUSTOM_GPU_POOL_WS': 'required',
            'trait:CUSTOM_NVIDIA_35': 'required'}, again['extra_specs'])


class TestList(FlavorTestCase):
    def setUp(self):
        super().setUp()
        self.cloud.add_flavor('m1.small', extra_specs={
            'hw:cpu_policy': 'dedicated'})
        self.cloud.add_flavor('g1.h100.1', extra_specs={
            'pci_passthrough:alias': 'h100:1',
            'aggregate_instance_extra_specs:gpu': 'true',
            'hw:pci_numa_affinity_policy': 'preferred'}, vcpus=16)
        self.cloud.add_flavor('g1.vgpu.1', extra_specs={
            'resources:VGPU': '1',
            'aggregate_instance_extra_specs:gpu': 'true'}, vcpus=8)
        self.ws = self.cloud.add_flavor('ws.2', extra_specs={
            STEER: 'ws', 'resources1:VGPU': '1', 'resources2:VGPU': '1',
            'group_policy': 'isolate'}, public=False)
        self.cloud.flavor_access[self.ws['id']] = ['a' * 32]
        self.cloud.add_flavor('cyborg', extra_specs={
            'accel:device_profile': 'dp'})

    def test_parser(self):
        cmd = flavor_cmd.ListFlavor(self.make_app(None), None)
        self.check_parser(cmd, [], [('pool', None), ('long', False)])
        self.check_parser(cmd, ['--pool', 'ws', '--long'],
                          [('pool', 'ws'), ('long', True)])

    def test_list(self):
        columns, rows = self.run_cmd(flavor_cmd.ListFlavor, [])
        self.assertEqual(('ID', 'Name', 'Pool', 'Mode', 'GPUs', 'VCPUs',
                          'RAM', 'Disk'), columns)
        rows = {r[1]: r[2:] for r in rows}
        self.assertEqual({
            'cyborg': (None, 'cyborg', None, 1, 512, 1),
            'g1.h100.1': (None, 'passthrough', 1, 16, 512, 1),
            'g1.vgpu.1': (None, 'vgpu', 1, 8, 512, 1),
            'ws.2': ('ws', 'vgpu', 2, 1, 512, 1),
        }, rows)

    def test_long_and_pool(self):
        self.aggregate('solver').metadata['gpu'] = 'true'
        columns, rows = self.run_cmd(flavor_cmd.ListFlavor,
                                     ['--long', '--pool', 'solver'])
        self.assertEqual(('Request', 'Is Public', 'Projects'), columns[-3:])
        self.assertEqual(['g1.h100.1'], [r[1] for r in rows])
        columns, rows = self.run_cmd(flavor_cmd.ListFlavor,
                                     ['--long', '--pool', 'ws'])
        (row,) = rows
        shown = as_dict(columns, row)
        self.assertEqual("1='VGPU=1', 2='VGPU=1'", shown['Request'])
        self.assertEqual(['a' * 32], shown['Projects'].split(', '))
        self.assertFalse(shown['Is Public'])

    def test_unknown_pool(self):
        exc = self.assertRaises(exceptions.CommandError, self.run_cmd,
                                flavor_cmd.ListFlavor, ['--pool', 'x'])
        self.assertIn('Known pools', str(exc))


class TestShow(FlavorTestCase):
    def test_parser(self):
        cmd = flavor_cmd.ShowFlavor(self.make_app(None), None)
        self.check_parser(cmd, ['g1'], [('flavor', 'g1')])
        self.assertRaises(base.ParserError, self.check_parser, cmd, [])

    def test_show_seed_by_name_and_id(self):
        flavor = self.cloud.add_flavor('g1.h100.1', extra_specs={
            'pci_passthrough:alias': 'h100:1',
            'aggregate_instance_extra_specs:gpu': 'true',
            'hw:pci_numa_affinity_policy': 'preferred'})
        for ref in ('g1.h100.1', flavor['id']):
            columns, values = self.run_cmd(flavor_cmd.ShowFlavor, [ref])
            shown = as_dict(columns, values)
            self.assertEqual(('passthrough', 1, 'preferred', 'pci-alias'),
                             (shown['mode'], shown['gpus'],
                              shown['numa_policy'], shown['patterns']))
            self.assertIn('NUMA topology', shown['notes'])

    def test_field_names_are_openstack_flavor_show_names(self):
        # the fields both show carry OSC's names, read from OSC itself
        sdk_flavor = sdk_flavor_mod.Flavor(id='x', name='n').to_dict()
        sdk_flavor['access_project_ids'] = None
        osc_names, _attrs = osc_flavor._get_flavor_columns(sdk_flavor)
        self.cloud.add_flavor('g1.h100.1', public=False, extra_specs={
            'pci_passthrough:alias': 'h100:1',
            'aggregate_instance_extra_specs:gpu': 'true'})
        self.cloud.flavor_access[self.cloud.flavors[0]['id']] = ['a' * 32]
        columns, values = self.run_cmd(flavor_cmd.ShowFlavor, ['g1.h100.1'])
        shared = {'id', 'name', 'description', 'vcpus', 'ram', 'disk',
                  'OS-FLV-EXT-DATA:ephemeral', 'swap',
                  'os-flavor-access:is_public', 'access_project_ids',
                  'properties'}
        self.assertEqual(set(), shared - set(osc_names))
        self.assertEqual(set(), shared - set(columns))
        # no SDK or home-made name for a field OSC shows under its own
        self.assertEqual(set(), {'is_public', 'ephemeral', 'projects',
                                 'extra_specs'} & set(columns))
        shown = dict(zip(columns, values, strict=True))
        self.assertFalse(shown['os-flavor-access:is_public'])
        self.assertEqual(['a' * 32],
                         shown['access_project_ids'].machine_readable())
        self.assertEqual(0, shown['OS-FLV-EXT-DATA:ephemeral'])

    def test_public_has_no_access_projects(self):
        # as openstack flavor show: null for a public flavor
        self.cloud.add_flavor('g1.h100.1', extra_specs={
            'pci_passthrough:alias': 'h100:1',
            'aggregate_instance_extra_specs:gpu': 'true'})
        columns, values = self.run_cmd(flavor_cmd.ShowFlavor, ['g1.h100.1'])
        shown = dict(zip(columns, values, strict=True))
        self.assertTrue(shown['os-flavor-access:is_public'])
        self.assertIsNone(shown['access_project_ids'])

    def test_show_problems(self):
        self.cloud.add_flavor('ws.2', extra_specs={
            STEER: 'ws', 'resources1:VGPU': '1', 'resources2:VGPU': '1',
            'group_policy': 'isolate'})
        columns, values = self.run_cmd(flavor_cmd.ShowFlavor, ['ws.2'])
        self.assertIn('lacks it', as_dict(columns, values)['notes'])

    def test_not_gpu_and_missing(self):
        self.cloud.add_flavor('m1.small')
        exc = self.assertRaises(exceptions.CommandError, self.run_cmd,
                                flavor_cmd.ShowFlavor, ['m1.small'])
        self.assertIn('not a GPU flavor', str(exc))
        exc = self.assertRaises(exceptions.CommandError, self.run_cmd,
                                flavor_cmd.ShowFlavor, ['nope'])
        self.assertIn('No flavor with name or ID nope', str(exc))


class TestDelete(FlavorTestCase):
    def test_parser(self):
        cmd = flavor_cmd.DeleteFlavor(self.make_app(None), None)
        self.check_parser(cmd, ['a', 'b'], [('flavors', ['a', 'b']),
                                            ('dry_run', False)])
        self.check_parser(cmd, ['a', '--dry-run'], [('dry_run', True)])
        self.assertRaises(base.ParserError, self.check_parser, cmd, [])

    def test_dry_run(self):
        flavor = self.cloud.add_flavor('g1', extra_specs={
            'resources:VGPU': '1'})
        self.cloud.add_flavor('m1.small')
        before = self.state()
        self.assertIsNone(self.run_cmd(flavor_cmd.DeleteFlavor,
                                       ['g1', '--dry-run']))
        self.assertEqual(
            ['1. delete flavor g1 (%s) (not undone on failure)'
             % flavor['id']], self.stdout.getvalue().splitlines())
        self.assertEqual([], self.nova.calls)
        self.assertEqual(before, self.state())
        # refused like the delete itself, and nothing printed for it
        exc = self.assertRaises(exceptions.CommandError, self.run_cmd,
                                flavor_cmd.DeleteFlavor,
                                ['m1.small', '--dry-run'])
        self.assertEqual('1 of 1 flavors failed to delete.', str(exc))
        self.assertIn('not a GPU flavor', self.logger.output)
        self.assertEqual('', self.stdout.getvalue())
        self.assertEqual(before, self.state())

    def test_delete(self):
        self.cloud.add_flavor('g1', extra_specs={'resources:VGPU': '1'})
        self.assertIsNone(self.run_cmd(flavor_cmd.DeleteFlavor, ['g1']))
        self.assertEqual([], self.cloud.flavors)

    def test_an_id_that_is_another_flavors_name_is_refused(self):
        # flavor "x1" has ID "g2"; another GPU flavor is named "g2"
        first = self.cloud.add_flavor('x1', flavor_id='g2', extra_specs={
            'resources:VGPU': '1'})
        second = self.cloud.add_flavor('g2', extra_specs={
            'resources:VGPU': '1'})
        before = self.state()
        exc = self.assertRaises(exceptions.CommandError, self.run_cmd,
                                flavor_cmd.DeleteFlavor, ['g2'])
        self.assertEqual('1 of 1 flavors failed to delete.', str(exc))
        self.assertIn('g2 is the ID of flavor x1 and the name of flavor '
                      '%s' % second['id'], self.logger.output)
        self.assertEqual(before, self.state())
        # gpu flavor set refuses it the same way, before any write
        self.assertRaises(exceptions.CommandError, self.run_cmd,
                          flavor_cmd.SetFlavor,
                          ['g2', '--description', 'x'])
        self.assertEqual(before, self.state())
        # each named without ambiguity: the one whose ID it was, by name
        self.assertIsNone(self.run_cmd(flavor_cmd.DeleteFlavor, ['x1']))
        self.assertEqual([second['id']],
                         [f['id'] for f in self.cloud.flavors])
        self.assertNotIn(first, self.cloud.flavors)

    def test_n_of_m(self):
        keep = self.cloud.add_flavor('m1.small')
        self.cloud.add_flavor('g1', extra_specs={'resources:VGPU': '1'})
        exc = self.assertRaises(exceptions.CommandError, self.run_cmd,
                                flavor_cmd.DeleteFlavor,
                                ['m1.small', 'g1', 'nope'])
        self.assertEqual('2 of 3 flavors failed to delete.', str(exc))
        self.assertEqual([keep['id']], [f['id'] for f in self.cloud.flavors])
        self.assertIn('not a GPU flavor', self.logger.output)

    def test_n_of_m_any_error(self):
        # OSC's deletes go on after any error of one item, not only a
        # CommandError (a dropped connection, an SDK exception)
        from gpuclient.ops import flavor_ops

        self.cloud.add_flavor('g1', extra_specs={'resources:VGPU': '1'})
        self.cloud.add_flavor('g2', extra_specs={'resources:VGPU': '1'})
        real = flavor_ops.delete

        def delete(client, name, *args, **kwargs):
            if name == 'g1':
                raise ConnectionError('connection reset by peer')
            return real(client, name, *args, **kwargs)

        with mock.patch.object(flavor_ops, 'delete', side_effect=delete):
            exc = self.assertRaises(exceptions.CommandError, self.run_cmd,
                                    flavor_cmd.DeleteFlavor, ['g1', 'g2'])
        self.assertEqual('1 of 2 flavors failed to delete.', str(exc))
        self.assertIn('connection reset by peer', self.logger.output)
        self.assertEqual(['g1'], [f['name'] for f in self.cloud.flavors])
