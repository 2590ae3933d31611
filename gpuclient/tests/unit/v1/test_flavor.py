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

"""``openstack gpu flavor create/list/show/delete`` against a fake Nova."""

import copy
import io
from unittest import mock

from openstack import exceptions as sdk_exc
from openstack.compute.v2 import _proxy as compute_proxy
from osc_lib import exceptions

from gpuclient import client
from gpuclient import pools
from gpuclient.tests.unit import base
from gpuclient.tests.unit import fakes
from gpuclient.v1 import flavor as flavor_cmd

STEER = 'aggregate_instance_extra_specs:gpu_pool'


def pool_aggregate(name, mode, **kwargs):
    return fakes.Aggregate(name, pools.metadata_for(
        pools.build_spec(name, mode, **kwargs)), hosts=['h1'])


class FakeNova:
    """Flavors behind raw compute proxy calls, aggregates behind the SDK."""

    def __init__(self):
        self.flavors = {}
        self.access = {}
        self.aggregates = []
        self.fail = {}  # (method, url suffix) -> HTTP status
        self.calls = []

    def add_flavor(self, name, extra_specs=None, public=True, **sizes):
        flavor = {
            'id': fakes.uid('flavor-' + name), 'name': name,
            'vcpus': sizes.get('vcpus', 1), 'ram': sizes.get('ram', 512),
            'disk': sizes.get('disk', 1), 'swap': 0,
            'OS-FLV-EXT-DATA:ephemeral': 0,
            'os-flavor-access:is_public': public, 'description': None,
            'extra_specs': dict(extra_specs or {}),
        }
        self.flavors[flavor['id']] = flavor
        return flavor

    def _answer(self, method, url, status, body):
        for (fail_method, suffix), fail_status in self.fail.items():
            if fail_method == method and url.endswith(suffix):
                return fakes.make_response(
                    fail_status, {'forbidden': {'message': 'Policy says '
                                                'no'}})
        return fakes.make_response(status, body)

    def get(self, url, microversion=None, params=None, **kwargs):
        self.calls.append(('get', url, microversion))
        parts = url.strip('/').split('/')
        if url == '/flavors/detail':
            return self._answer('get', url, 200, {
                'flavors': list(self.flavors.values())})
        if len(parts) == 2 and parts[1] in self.flavors:
            return self._answer('get', url, 200,
                                {'flavor': self.flavors[parts[1]]})
        if len(parts) == 3 and parts[2] == 'os-flavor-access':
            return self._answer('get', url, 200, {'flavor_access': [
                {'flavor_id': parts[1], 'tenant_id': t}
                for t in self.access.get(parts[1], [])]})
        return fakes.make_response(404, {'itemNotFound': {
            'message': 'Flavor %s could not be found.' % parts[-1]}})

    def post(self, url, microversion=None, json=None, **kwargs):
        self.calls.append(('post', url, microversion))
        parts = url.strip('/').split('/')
        if url == '/flavors':
            body = json['flavor']
            flavor = self.add_flavor(
                body['name'], public=body['os-flavor-access:is_public'],
                vcpus=body['vcpus'], ram=body['ram'], disk=body['disk'])
            flavor['description'] = body.get('description')
            return self._answer('post', url, 200, {'flavor': flavor})
        flavor_id = parts[1]
        if parts[2] == 'os-extra_specs':
            answer = self._answer('post', url, 200, json)
            if answer.status_code == 200:
                self.flavors[flavor_id]['extra_specs'].update(
                    json['extra_specs'])
            return answer
        if parts[2] == 'action':
            answer = self._answer('post', url, 200, {})
            if answer.status_code == 200:
                self.access.setdefault(flavor_id, []).append(
                    json['addTenantAccess']['tenant'])
            return answer
        raise AssertionError(url)

    def delete(self, url, microversion=None, **kwargs):
        self.calls.append(('delete', url, microversion))
        flavor_id = url.strip('/').split('/')[1]
        answer = self._answer('delete', url, 202, None)
        if answer.status_code < 400:
            self.flavors.pop(flavor_id, None)
        return answer

    def set_aggregate_metadata(self, aggregate, metadata):
        self.calls.append(('aggregate', aggregate.name, dict(metadata)))
        if self.fail.get(('aggregate', aggregate.name)):
            raise sdk_exc.ForbiddenException('Policy says no')
        for key, value in metadata.items():
            if value is None:
                aggregate.metadata.pop(key, None)
            else:
                aggregate.metadata[key] = value
        return aggregate

    def writes(self):
        return [c for c in self.calls if c[0] != 'get']


class FlavorTestCase(base.CommandTestCase):
    def setUp(self):
        super().setUp()
        self.nova = FakeNova()
        self.nova.aggregates = [
            pool_aggregate('solver', 'passthrough', alias='h100',
                           pci_id='10de:2331'),
            pool_aggregate('ws', 'vgpu', vgpu_type='nvidia-35',
                           isolate=True),
            pool_aggregate('mig', 'mig', mig_profile='3g.40gb'),
            pool_aggregate('training', 'baremetal',
                           resource_class='baremetal.gpu-h100'),
            fakes.Aggregate('ssd', {'ssd': 'true'}, hosts=['h1']),
        ]
        proxy = mock.Mock(spec=compute_proxy.Proxy)
        proxy.get.side_effect = self.nova.get
        proxy.post.side_effect = self.nova.post
        proxy.delete.side_effect = self.nova.delete
        proxy.aggregates.side_effect = lambda: list(self.nova.aggregates)
        proxy.set_aggregate_metadata.side_effect = (
            self.nova.set_aggregate_metadata)
        conn = mock.Mock()
        conn.compute = proxy
        self.projects = {'alpha': 'a' * 32, 'beta': 'b' * 32}

        def find_project(name_or_id, ignore_missing=True):
            if name_or_id in self.projects:
                return mock.Mock(id=self.projects[name_or_id])
            if name_or_id in self.projects.values():
                return mock.Mock(id=name_or_id)
            return None

        conn.identity.find_project.side_effect = find_project
        self.gpu = client.GpuClient(None, conn, 'RegionOne', 'public')
        self.cm = mock.Mock()
        self.cm.gpu = self.gpu

    def run_cmd(self, cls, args):
        app = self.make_app(self.cm)
        self.stdout = app.stdout = io.StringIO()
        cmd = cls(app, None)
        parsed = self.check_parser(cmd, list(args))
        return cmd.take_action(parsed)

    def state(self):
        return (copy.deepcopy(self.nova.flavors),
                copy.deepcopy(self.nova.access),
                {a.name: dict(a.metadata) for a in self.nova.aggregates})

    def aggregate(self, name):
        return next(a for a in self.nova.aggregates if a.name == name)


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
        (flavor,) = self.nova.flavors.values()
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
        self.assertEqual({'2.61'}, {c[2] for c in self.nova.calls
                                    if c[0] in ('get', 'post')})
        self.assertIn('SR-IOV', self.logger.output)
        self.assertIn('group_policy=isolate on the aggregate',
                      self.logger.output)

    def test_private_with_projects(self):
        self.run_cmd(flavor_cmd.CreateFlavor,
                     ['g1.h100.1', '--pool', 'solver', '--private',
                      '--project', 'alpha', '--project', 'b' * 32]
                     + SIZES)
        (flavor,) = self.nova.flavors.values()
        self.assertFalse(flavor['os-flavor-access:is_public'])
        self.assertEqual(['a' * 32, 'b' * 32],
                         self.nova.access[flavor['id']])
        self.assertEqual('h100:1',
                         flavor['extra_specs']['pci_passthrough:alias'])

    def test_identical_is_noop(self):
        args = ['g1', '--pool', 'mig'] + SIZES
        self.run_cmd(flavor_cmd.CreateFlavor, args)
        writes = len(self.nova.writes())
        columns, values = self.run_cmd(flavor_cmd.CreateFlavor, args)
        self.assertEqual(writes, len(self.nova.writes()))
        self.assertEqual(1, len(self.nova.flavors))
        self.assertIn('already exists with these settings',
                      self.logger.output)
        self.assertEqual('mig', as_dict(columns, values)['mode'])

    def test_different_same_name(self):
        self.run_cmd(flavor_cmd.CreateFlavor, ['g1', '--pool', 'mig']
                     + SIZES)
        writes = len(self.nova.writes())
        exc = self.assertRaises(
            exceptions.CommandError, self.run_cmd, flavor_cmd.CreateFlavor,
            ['g1', '--pool', 'mig', '--vcpus', '8', '--ram', '2048',
             '--disk', '10'])
        self.assertIn('vcpus: 8 (existing 4)', str(exc))
        self.assertEqual(writes, len(self.nova.writes()))

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
        self.assertEqual([], self.nova.writes())
        self.assertEqual({}, self.nova.flavors)

    def test_conflicting_aggregate_policy(self):
        self.aggregate('ws').metadata['group_policy'] = 'none'
        exc = self.assertRaises(
            exceptions.CommandError, self.run_cmd, flavor_cmd.CreateFlavor,
            ['g1', '--pool', 'ws', '--gpus', '2'] + SIZES)
        self.assertIn('group_policy=none', str(exc))
        self.assertEqual([], self.nova.writes())

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
        self.assertEqual([], self.nova.writes())
        self.assertEqual(before, self.state())
        # an existing flavor with these settings: nothing to do
        self.run_cmd(flavor_cmd.CreateFlavor, ['g1', '--pool', 'mig']
                     + SIZES)
        writes = len(self.nova.writes())
        columns, values = self.run_cmd(
            flavor_cmd.CreateFlavor,
            ['g1', '--pool', 'mig', '--dry-run'] + SIZES)
        self.assertEqual('Creating flavor g1: nothing to do, the cloud '
                         'already matches.',
                         as_dict(columns, values)['plan'])
        self.assertEqual(writes, len(self.nova.writes()))

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
        self.assertEqual({}, self.nova.flavors)

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
        self.assertEqual({}, self.nova.flavors)

    def test_aggregate_failure_deletes_flavor(self):
        self.nova.fail[('aggregate', 'ws')] = 403
        exc = self.assertRaises(
            exceptions.CommandError, self.run_cmd, flavor_cmd.CreateFlavor,
            ['g1', '--pool', 'ws', '--gpus', '2'] + SIZES)
        self.assertIn('Creating flavor g1 failed at step 3 of 3 (set '
                      'metadata of aggregate ws: group_policy=isolate): ',
                      str(exc))
        self.assertIn('Everything it had done was undone (2 step(s)): the '
                      'cloud is as it was.', str(exc))
        self.assertEqual({}, self.nova.flavors)
        self.assertNotIn('group_policy', self.aggregate('ws').metadata)

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
        (flavor,) = self.nova.flavors.values()
        self.assertEqual({}, flavor['extra_specs'])
        # ... and the same command, once Nova lets it, finishes the create
        self.nova.fail.clear()
        self.run_cmd(flavor_cmd.CreateFlavor, ['g1', '--pool', 'ws']
                     + SIZES)
        (again,) = self.nova.flavors.values()
        self.assertEqual(flavor['id'], again['id'])
        self.assertEqual({
            STEER: 'ws', 'resources:VGPU': '1',
            'trait:CUSTOM_GPU_POOL_WS': 'required',
            'trait:CUSTOM_NVIDIA_35': 'required'}, again['extra_specs'])


class TestList(FlavorTestCase):
    def setUp(self):
        super().setUp()
        self.nova.add_flavor('m1.small', {'hw:cpu_policy': 'dedicated'})
        self.nova.add_flavor('g1.h100.1', {
            'pci_passthrough:alias': 'h100:1',
            'aggregate_instance_extra_specs:gpu': 'true',
            'hw:pci_numa_affinity_policy': 'preferred'}, vcpus=16)
        self.nova.add_flavor('g1.vgpu.1', {
            'resources:VGPU': '1',
            'aggregate_instance_extra_specs:gpu': 'true'}, vcpus=8)
        self.ws = self.nova.add_flavor('ws.2', {
            STEER: 'ws', 'resources1:VGPU': '1', 'resources2:VGPU': '1',
            'group_policy': 'isolate'}, public=False)
        self.nova.access[self.ws['id']] = ['a' * 32]
        self.nova.add_flavor('cyborg', {'accel:device_profile': 'dp'})

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
        flavor = self.nova.add_flavor('g1.h100.1', {
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

    def test_show_problems(self):
        self.nova.add_flavor('ws.2', {
            STEER: 'ws', 'resources1:VGPU': '1', 'resources2:VGPU': '1',
            'group_policy': 'isolate'})
        columns, values = self.run_cmd(flavor_cmd.ShowFlavor, ['ws.2'])
        self.assertIn('lacks it', as_dict(columns, values)['notes'])

    def test_not_gpu_and_missing(self):
        self.nova.add_flavor('m1.small')
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
        flavor = self.nova.add_flavor('g1', {'resources:VGPU': '1'})
        self.nova.add_flavor('m1.small')
        before = self.state()
        self.assertIsNone(self.run_cmd(flavor_cmd.DeleteFlavor,
                                       ['g1', '--dry-run']))
        self.assertEqual(
            ['1. delete flavor g1 (%s) (not undone on failure)'
             % flavor['id']], self.stdout.getvalue().splitlines())
        self.assertEqual([], self.nova.writes())
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
        self.nova.add_flavor('g1', {'resources:VGPU': '1'})
        self.assertIsNone(self.run_cmd(flavor_cmd.DeleteFlavor, ['g1']))
        self.assertEqual({}, self.nova.flavors)

    def test_n_of_m(self):
        keep = self.nova.add_flavor('m1.small')
        self.nova.add_flavor('g1', {'resources:VGPU': '1'})
        exc = self.assertRaises(exceptions.CommandError, self.run_cmd,
                                flavor_cmd.DeleteFlavor,
                                ['m1.small', 'g1', 'nope'])
        self.assertEqual('2 of 3 flavors failed to delete.', str(exc))
        self.assertEqual([keep['id']], list(self.nova.flavors))
        self.assertIn('not a GPU flavor', self.logger.output)
