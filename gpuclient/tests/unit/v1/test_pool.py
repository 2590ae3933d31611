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

"""``openstack gpu pool ...`` commands: parsers and take_action."""

from unittest import mock

from osc_lib import exceptions

from gpuclient.tests.unit import base
from gpuclient.tests.unit import test_pool_ops
from gpuclient.v1 import pool as pool_cmd


class PoolCommandTestCase(test_pool_ops.PoolOpsTestCase,
                          base.CommandTestCase):
    def run_cmd(self, cls, args):
        cm = mock.Mock()
        cm.gpu = self.client
        cmd = cls(self.make_app(cm), None)
        parsed = self.check_parser(cmd, args)
        return cmd.take_action(parsed)

    def as_dict(self, result):
        columns, values = result
        return {
            c: v.human_readable() if hasattr(v, 'human_readable') else v
            for c, v in zip(columns, values, strict=True)
        }


class TestParsers(base.CommandTestCase):
    def test_create(self):
        cmd = pool_cmd.CreatePool(self.make_app(None), None)
        parsed = self.check_parser(cmd, [
            'solver', '--mode', 'passthrough', '--alias', 'h100',
            '--pci-id', '10de:2331', '--host', 'a', '--host', 'b',
            '--isolate', '--project', 'p1', '--property', 'k=v',
            '--zone', 'az1'])
        self.assertEqual(['a', 'b'], parsed.hosts)
        self.assertEqual({'k': 'v'}, parsed.properties)
        self.assertEqual(['p1'], parsed.projects)
        self.assertTrue(parsed.isolate)
        self.assertRaises(base.ParserError, self.check_parser, cmd,
                          ['x', '--mode', 'gpu'])
        self.assertRaises(base.ParserError, self.check_parser, cmd, ['x'])

    def test_set_isolation_flags_exclusive(self):
        cmd = pool_cmd.SetPool(self.make_app(None), None)
        self.assertIsNone(self.check_parser(cmd, ['p']).isolate)
        self.assertFalse(self.check_parser(cmd, ['p', '--no-isolate'])
                         .isolate)
        self.assertRaises(base.ParserError, self.check_parser, cmd,
                          ['p', '--isolate', '--no-isolate'])

    def test_hosts_required(self):
        for cls in (pool_cmd.AddHostPool, pool_cmd.RemoveHostPool):
            cmd = cls(self.make_app(None), None)
            self.assertRaises(base.ParserError, self.check_parser, cmd,
                              ['p'])
            self.assertEqual(['a', 'b'],
                             self.check_parser(cmd, ['p', 'a', 'b']).hosts)


class TestCommands(PoolCommandTestCase):
    def create(self, *extra):
        return self.as_dict(self.run_cmd(pool_cmd.CreatePool, [
            'solver', '--mode', 'passthrough', '--alias', 'h100',
            '--pci-id', '10de:2331', *extra]))

    def test_create_and_show(self):
        shown = self.create('--host', 'gpu-pt-1', '--isolate',
                            '--project', 'research')
        self.assertEqual('gpu-pt-1', shown['hosts'])
        self.assertEqual('CUSTOM_GPU_POOL_SOLVER', shown['isolation_trait'])
        self.assertEqual('id-research', shown['projects'])
        with mock.patch.object(self.client.compute, 'flavors',
                               return_value=[
                                   {'name': 'g1', 'extra_specs': {
                                       'aggregate_instance_extra_specs:'
                                       'gpu_pool': 'solver'}},
                                   {'name': 'm1', 'extra_specs': {}}]):
            shown = self.as_dict(self.run_cmd(pool_cmd.ShowPool,
                                              ['solver']))
        self.assertEqual('g1', shown['flavors'])
        self.assertEqual("gpu-pt-1='0 used / 4 total'", shown['gpus'])
        self.assertIn('Glance property protections', shown['notes'])

    def test_identical_create_warns(self):
        self.create()
        self.create()
        self.assertIn('nothing changed', self.logger.output)

    def test_list(self):
        self.create('--host', 'gpu-pt-1')
        self.run_cmd(pool_cmd.CreatePool, [
            'ws', '--mode', 'vgpu', '--vgpu-type', 'nvidia-35', '--host',
            'gpu-vgpu-1'])
        columns, rows = self.run_cmd(pool_cmd.ListPool, ['--long'])
        self.assertEqual(('Name', 'Mode', 'Device', 'Hosts', 'Isolated',
                          'Zone', 'GPUs Total', 'GPUs Used', 'GPUs Free',
                          'Projects'), columns)
        self.assertEqual(['solver', 'ws'], [r[0] for r in rows])
        self.assertEqual([4, 8], [r[6] for r in rows])
        _, rows = self.run_cmd(pool_cmd.ListPool, ['--mode', 'vgpu'])
        self.assertEqual(['ws'], [r[0] for r in rows])

    def test_set_unset_add_remove(self):
        self.create()
        shown = self.as_dict(self.run_cmd(pool_cmd.AddHostPool, [
            'solver', 'gpu-pt-1']))
        self.assertEqual('gpu-pt-1', shown['hosts'])
        shown = self.as_dict(self.run_cmd(pool_cmd.SetPool, [
            'solver', '--isolate', '--property', 'owner=x']))
        self.assertTrue(shown['isolated'])
        self.assertEqual("owner='x'", shown['properties'])
        shown = self.as_dict(self.run_cmd(pool_cmd.UnsetPool, [
            'solver', '--property', 'owner']))
        self.assertEqual('', shown['properties'])
        shown = self.as_dict(self.run_cmd(pool_cmd.RemoveHostPool, [
            'solver', 'gpu-pt-1']))
        self.assertEqual('', shown['hosts'])

    def test_delete_n_of_m(self):
        self.create('--host', 'gpu-pt-1')
        exc = self.assertRaises(exceptions.CommandError, self.run_cmd,
                                pool_cmd.DeletePool, ['solver', 'nope'])
        self.assertEqual('2 of 2 pools failed to delete.', str(exc))
        self.assertIn('still has hosts', self.logger.output)
        self.assertIn('No GPU pool named nope', self.logger.output)
        exc = self.assertRaises(exceptions.CommandError, self.run_cmd,
                                pool_cmd.DeletePool,
                                ['solver', 'nope', '--force'])
        self.assertEqual('1 of 2 pools failed to delete.', str(exc))
        self.assertEqual([], self.cloud.aggregates)
