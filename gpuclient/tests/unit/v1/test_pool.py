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

import copy
import io
from unittest import mock

from osc_lib import exceptions

from gpuclient.rules import pools
from gpuclient.tests.unit import base
from gpuclient.tests.unit import fakes
from gpuclient.tests.unit import test_pool_ops
from gpuclient.v1 import pool as pool_cmd

STEER = 'aggregate_instance_extra_specs:gpu_pool'
SOLVER_TRAIT = 'CUSTOM_GPU_POOL_SOLVER'


class PoolCommandTestCase(test_pool_ops.PoolOpsTestCase,
                          base.CommandTestCase):
    def run_cmd(self, cls, args):
        cm = mock.Mock()
        cm.gpu = self.client
        app = self.make_app(cm)
        self.stdout = app.stdout = io.StringIO()
        cmd = cls(app, None)
        parsed = self.check_parser(cmd, args)
        return cmd.take_action(parsed)

    def state(self):
        """Everything a pool write can change in the fake cloud."""
        return {
            'aggregates': {a.name: (a.availability_zone, sorted(a.hosts),
                                    dict(a.metadata))
                           for a in self.cloud.aggregates},
            'provider traits': {p.uuid: sorted(p.traits)
                                for p in self.cloud.providers},
            'traits': sorted(self.placement.traits),
            'flavors': copy.deepcopy(self.cloud.flavors),
            'access': copy.deepcopy(self.cloud.flavor_access),
        }

    def writes(self):
        """Writes sent so far: Nova calls and Placement non-GETs."""
        return (list(self.compute.calls),
                ['%s %s' % (r.method, r.path)
                 for r in self.placement.mock.request_history
                 if r.method != 'GET'])

    def show_data(self, pool):
        """pool show as -f json/yaml get it: {field: machine value}."""
        with mock.patch.object(self.client.compute, 'flavors',
                               return_value=[]):
            columns, values = self.run_cmd(pool_cmd.ShowPool, [pool])
        return {c: v.machine_readable() if hasattr(v, 'machine_readable')
                else v for c, v in zip(columns, values, strict=True)}

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

    def test_set_zone_option(self):
        cmd = pool_cmd.SetPool(self.make_app(None), None)
        self.check_parser(cmd, ['p'], [('zone', None)])
        self.check_parser(cmd, ['p', '--zone', 'az1'], [('zone', 'az1')])
        # Nova takes no zone off an aggregate: no unset --zone
        cmd = pool_cmd.UnsetPool(self.make_app(None), None)
        self.assertRaises(base.ParserError, self.check_parser, cmd,
                          ['p', '--zone', 'az1'])

    def test_dry_run_option(self):
        for cls, args in (
                (pool_cmd.CreatePool, ['p', '--mode', 'vgpu']),
                (pool_cmd.SetPool, ['p']),
                (pool_cmd.UnsetPool, ['p']),
                (pool_cmd.AddHostPool, ['p', 'h']),
                (pool_cmd.RemoveHostPool, ['p', 'h']),
                (pool_cmd.DeletePool, ['p'])):
            cmd = cls(self.make_app(None), None)
            self.assertFalse(self.check_parser(cmd, args).dry_run,
                             cls.__name__)
            self.assertTrue(
                self.check_parser(cmd, args + ['--dry-run']).dry_run,
                cls.__name__)

    def test_update_dependents_and_open_to_all(self):
        cmd = pool_cmd.SetPool(self.make_app(None), None)
        self.check_parser(cmd, ['p'], [('update_dependents', False),
                                       ('dry_run', False)])
        self.check_parser(cmd, ['p', '--no-isolate', '--update-dependents'],
                          [('isolate', False), ('update_dependents', True)])
        # opening a pool is an unset
        self.assertRaises(base.ParserError, self.check_parser, cmd,
                          ['p', '--open-to-all'])
        cmd = pool_cmd.UnsetPool(self.make_app(None), None)
        self.check_parser(cmd, ['p'], [
            ('projects', []), ('properties', []), ('open_to_all', False),
            ('update_dependents', False)])
        self.check_parser(cmd, ['p', '--project', 'x', '--open-to-all',
                                '--update-dependents'], [
            ('projects', ['x']), ('open_to_all', True),
            ('update_dependents', True)])
        for cls, args in ((pool_cmd.CreatePool, ['p', '--mode', 'vgpu']),
                          (pool_cmd.DeletePool, ['p'])):
            cmd = cls(self.make_app(None), None)
            self.assertRaises(base.ParserError, self.check_parser, cmd,
                              args + ['--update-dependents'])

    def test_allow_servers(self):
        cmd = pool_cmd.RemoveHostPool(self.make_app(None), None)
        self.check_parser(cmd, ['p', 'h'], [('allow_servers', False)])
        self.check_parser(cmd, ['p', 'h', '--allow-servers'],
                          [('allow_servers', True)])
        cmd = pool_cmd.AddHostPool(self.make_app(None), None)
        self.assertRaises(base.ParserError, self.check_parser, cmd,
                          ['p', 'h', '--allow-servers'])
        cmd = pool_cmd.DeletePool(self.make_app(None), None)
        self.check_parser(cmd, ['p', '--force', '--allow-servers'],
                          [('force', True), ('allow_servers', True)])

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
        self.assertEqual('gpu-pt-1: total 4, used 0, free 4', shown['gpus'])
        self.assertEqual('', shown['drift'])
        self.assertNotIn('notes', shown)
        # the limits of isolation go to stderr, not into the data
        self.assertIn('Glance property protections', self.logger.output)

    def test_named_by_aggregate_id_or_uuid(self):
        # every pool command takes the aggregate's ID or UUID as well
        self.create('--host', 'gpu-pt-1')
        (agg,) = self.cloud.aggregates
        for given in (str(agg.id), agg.uuid.upper()):
            self.assertEqual('solver', self.show_data(given)['name'])
        self.assertIsNone(self.run_cmd(pool_cmd.SetPool, [
            agg.uuid, '--property', 'owner=x']))
        self.assertEqual('x', agg.metadata['owner'])
        self.assertIsNone(self.run_cmd(pool_cmd.UnsetPool, [
            str(agg.id), '--property', 'owner']))
        self.assertNotIn('owner', agg.metadata)
        shown = self.as_dict(self.run_cmd(pool_cmd.RemoveHostPool, [
            agg.uuid, 'gpu-pt-1']))
        self.assertEqual(('solver', ''), (shown['name'], shown['hosts']))
        shown = self.as_dict(self.run_cmd(pool_cmd.AddHostPool, [
            str(agg.id), 'gpu-pt-1']))
        self.assertEqual(('solver', 'gpu-pt-1'),
                         (shown['name'], shown['hosts']))
        self.assertIsNone(self.run_cmd(pool_cmd.DeletePool, [
            agg.uuid, '--force']))
        self.assertEqual([], self.cloud.aggregates)

    def test_show_fields_are_data(self):
        self.create('--host', 'gpu-pt-1', '--isolate')
        shown = self.show_data('solver')
        self.assertEqual(
            ('solver', 'passthrough', 'CUSTOM_PCI_10DE_2331', 'h100',
             '10de:2331', None, None, ['gpu-pt-1'], True, SOLVER_TRAIT),
            (shown['name'], shown['mode'], shown['resource_class'],
             shown['alias'], shown['pci_id'], shown['vgpu_type'],
             shown['mig_profile'], shown['hosts'], shown['isolated'],
             shown['isolation_trait']))
        self.assertEqual({'gpu-pt-1': {'total': 4, 'used': 0, 'free': 4}},
                         shown['gpus'])
        self.assertEqual(['total', 'used', 'free'],
                         list(shown['gpus']['gpu-pt-1']))
        self.assertEqual([], shown['flavors'])
        self.assertEqual([], shown['drift'])
        # drift is data too: take the trait off the member's provider
        self.pt.traits.remove(SOLVER_TRAIT)
        shown = self.show_data('solver')
        self.assertEqual([{
            'host': 'gpu-pt-1', 'problem': 'missing_isolation_trait',
            'provider': 'gpu-pt-1.test', 'trait': SOLVER_TRAIT,
            'fix': 'openstack gpu pool set solver --isolate'}],
            shown['drift'])
        columns, values = self.run_cmd(pool_cmd.ShowPool, ['solver'])
        table = dict(zip(columns, values, strict=True))
        self.assertEqual(
            'gpu-pt-1: root provider gpu-pt-1.test lacks %s, so isolated '
            'flavors cannot land there (run "openstack gpu pool set solver '
            '--isolate" to put it back).' % SOLVER_TRAIT,
            table['drift'].human_readable())

    def test_show_and_list_long_read_one_snapshot(self):
        """Each Nova list is read once, whatever the number of hosts."""
        self.create('--host', 'gpu-pt-1', '--isolate')
        compute = self.client.compute
        for cls, args in ((pool_cmd.ShowPool, ['solver']),
                          (pool_cmd.ListPool, ['--long'])):
            with mock.patch.object(compute, 'aggregates',
                                   wraps=compute.aggregates) as aggs, \
                    mock.patch.object(compute, 'hypervisors',
                                      wraps=compute.hypervisors) as hvs, \
                    mock.patch.object(compute, 'flavors',
                                      return_value=[]) as flavors:
                self.run_cmd(cls, args)
            self.assertEqual((1, 1), (aggs.call_count, hvs.call_count),
                             cls)
            self.assertEqual(cls is pool_cmd.ShowPool,
                             flavors.call_count == 1)

    def test_show_vgpu_pool(self):
        self.run_cmd(pool_cmd.CreatePool, [
            'ws', '--mode', 'vgpu', '--vgpu-type', 'nvidia-35', '--host',
            'gpu-vgpu-1'])
        shown = self.show_data('ws')
        self.assertEqual(('nvidia-35', None, None),
                         (shown['vgpu_type'], shown['alias'],
                          shown['pci_id']))
        figures = shown['gpus']['gpu-vgpu-1']
        self.assertEqual(figures['total'],
                         figures['used'] + figures['free'])
        self.assertEqual(8, figures['total'])

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
        # set and unset print nothing, as openstack aggregate set does
        self.assertIsNone(self.run_cmd(pool_cmd.SetPool, [
            'solver', '--isolate', '--property', 'owner=x']))
        self.assertEqual('', self.stdout.getvalue())
        shown = self.show_data('solver')
        self.assertTrue(shown['isolated'])
        self.assertEqual({'owner': 'x'}, shown['properties'])
        self.assertIsNone(self.run_cmd(pool_cmd.UnsetPool, [
            'solver', '--property', 'owner']))
        self.assertEqual('', self.stdout.getvalue())
        self.assertEqual({}, self.show_data('solver')['properties'])
        shown = self.as_dict(self.run_cmd(pool_cmd.RemoveHostPool, [
            'solver', 'gpu-pt-1']))
        self.assertEqual('', shown['hosts'])

    def test_remove_host_with_servers(self):
        self.create('--host', 'gpu-pt-1')
        self.cloud.servers.append({
            'id': 'srv-1', 'name': 'vm', 'OS-EXT-SRV-ATTR:host': 'gpu-pt-1',
            'flavor': {'original_name': 'g1', 'extra_specs': {
                'aggregate_instance_extra_specs:gpu_pool': 'solver',
                'pci_passthrough:alias': 'h100:1'}}})
        before = self.writes()
        exc = self.assertRaises(exceptions.CommandError, self.run_cmd,
                                pool_cmd.RemoveHostPool,
                                ['solver', 'gpu-pt-1'])
        self.assertIn('gpu-pt-1 runs 1 server(s) of flavor g1 (srv-1)',
                      str(exc))
        self.assertIn('--allow-servers', str(exc))
        self.assertEqual(before, self.writes())
        shown = self.as_dict(self.run_cmd(pool_cmd.RemoveHostPool, [
            'solver', 'gpu-pt-1', '--allow-servers']))
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

    def test_delete_n_of_m_any_error(self):
        # OSC's deletes go on after any error of one item, not only a
        # CommandError (a dropped connection, an SDK exception)
        from gpuclient.ops import pool_ops

        self.create()
        real = pool_ops.delete

        def delete(client, name, **kwargs):
            if name == 'other':
                raise ConnectionError('connection reset by peer')
            return real(client, name, **kwargs)

        with mock.patch.object(pool_ops, 'delete', side_effect=delete):
            exc = self.assertRaises(exceptions.CommandError, self.run_cmd,
                                    pool_cmd.DeletePool, ['other', 'solver'])
        self.assertEqual('1 of 2 pools failed to delete.', str(exc))
        self.assertIn('Failed to delete pool other: connection reset by peer',
                      self.logger.output)
        self.assertEqual([], self.cloud.aggregates)

    def test_delete_stops_at_an_interruption(self):
        # Ctrl-C during one pool's delete: the operator asked to stop, so
        # the next pool is not deleted (it is counted, and named)
        import signal

        from gpuclient.ops import journal
        from gpuclient.ops import pool_ops

        self.create()
        names = []

        def delete(client, name, **kwargs):
            names.append(name)
            raise journal.ApplyError('Deleting pool %s was interrupted by '
                                     'SIGINT' % name,
                                     interrupted=signal.SIGINT)

        with mock.patch.object(pool_ops, 'delete', side_effect=delete):
            exc = self.assertRaises(exceptions.CommandError, self.run_cmd,
                                    pool_cmd.DeletePool, ['other', 'solver'])
        self.assertEqual(['other'], names)
        self.assertEqual('2 of 2 pools failed to delete.', str(exc))
        self.assertIn('Not tried, as the command was interrupted: solver',
                      self.logger.output)
        self.assertEqual(['solver'], [a.name for a in self.cloud.aggregates])


class TestDryRun(PoolCommandTestCase):
    """--dry-run shows the plan, numbered, each step with its undo, and
    writes nothing."""

    def create(self, *extra):
        return self.as_dict(self.run_cmd(pool_cmd.CreatePool, [
            'solver', '--mode', 'passthrough', '--alias', 'h100',
            '--pci-id', '10de:2331', *extra]))

    def dry_run(self, cls, args):
        before, writes = self.state(), self.writes()
        result = self.run_cmd(cls, args + ['--dry-run'])
        self.assertEqual(before, self.state())
        self.assertEqual(writes, self.writes())
        if result is None:
            # a command that prints nothing on success prints its plan
            return self.stdout.getvalue().splitlines(), None
        shown = self.as_dict(result)
        self.assertIs(True, shown['dry_run'])
        return shown['plan'].split('\n'), shown['warnings']

    def pgpu_labels(self, root):
        return sorted(p.name for p in self.cloud.tree(root) if p.parent)

    def test_create(self):
        lines, warnings = self.dry_run(pool_cmd.CreatePool, [
            'solver', '--mode', 'passthrough', '--alias', 'h100',
            '--pci-id', '10de:2331', '--host', 'gpu-pt-1', '--isolate'])
        self.assertEqual([
            '1. create host aggregate solver (undo: delete host aggregate '
            'solver)',
            '2. set metadata of aggregate solver: gpu_alias=h100, '
            'gpu_pci_id=10de:2331, gpu_pool=solver, '
            'gpu_pool_mode=passthrough, '
            'gpu_resource_class=CUSTOM_PCI_10DE_2331, '
            'trait:CUSTOM_GPU_POOL_SOLVER=required (undo: restore metadata '
            'of aggregate solver: gpu_alias (removed), gpu_pci_id '
            '(removed), gpu_pool (removed), gpu_pool_mode (removed), '
            'gpu_resource_class (removed), trait:CUSTOM_GPU_POOL_SOLVER '
            '(removed))',
            '3. create trait CUSTOM_GPU_POOL_SOLVER (undo: delete trait '
            'CUSTOM_GPU_POOL_SOLVER)',
            '4. add trait CUSTOM_GPU_POOL_SOLVER to resource provider '
            'gpu-pt-1.test (undo: remove trait CUSTOM_GPU_POOL_SOLVER from '
            'resource provider gpu-pt-1.test)',
            '5. add host gpu-pt-1 to aggregate solver (undo: remove host '
            'gpu-pt-1 from aggregate solver)'], lines)
        self.assertEqual('', warnings)
        self.assertEqual([], self.cloud.aggregates)
        self.assertEqual(([], []), self.writes())
        # the pool exists and is complete: the plan is empty
        self.create('--host', 'gpu-pt-1', '--isolate')
        lines, _warnings = self.dry_run(pool_cmd.CreatePool, [
            'solver', '--mode', 'passthrough', '--alias', 'h100',
            '--pci-id', '10de:2331', '--host', 'gpu-pt-1', '--isolate'])
        self.assertEqual(['Creating pool solver: nothing to do, the cloud '
                          'already matches.'], lines)

    def test_set(self):
        self.create('--host', 'gpu-pt-1')
        lines, _warnings = self.dry_run(pool_cmd.SetPool, [
            'solver', '--isolate', '--property', 'owner=x', '--project',
            'research'])
        self.assertEqual([
            '1. create trait CUSTOM_GPU_POOL_SOLVER (undo: delete trait '
            'CUSTOM_GPU_POOL_SOLVER)',
            '2. add trait CUSTOM_GPU_POOL_SOLVER to resource provider '
            'gpu-pt-1.test (undo: remove trait CUSTOM_GPU_POOL_SOLVER from '
            'resource provider gpu-pt-1.test)',
            '3. set metadata of aggregate solver: '
            'trait:CUSTOM_GPU_POOL_SOLVER=required (undo: restore metadata '
            'of aggregate solver: trait:CUSTOM_GPU_POOL_SOLVER (removed))',
            '4. set metadata of aggregate solver: '
            'filter_tenant_id_id-research=id-research, owner=x (undo: '
            'restore metadata of aggregate solver: '
            'filter_tenant_id_id-research (removed), owner (removed))'],
            lines)
        self.assertNotIn(SOLVER_TRAIT, self.pt.traits)
        # applied, the same change does what the plan said
        self.run_cmd(pool_cmd.SetPool, [
            'solver', '--isolate', '--property', 'owner=x', '--project',
            'research'])
        self.assertEqual('', self.stdout.getvalue())
        self.assertEqual({'owner': 'x', 'trait:' + SOLVER_TRAIT: 'required',
                          'filter_tenant_id_id-research': 'id-research'},
                         {k: v for k, v in
                          self.cloud.aggregates[0].metadata.items()
                          if not k.startswith('gpu_')})
        self.assertIn(SOLVER_TRAIT, self.pt.traits)

    def test_unset(self):
        self.create('--project', 'research', '--property', 'owner=x')
        lines, _warnings = self.dry_run(pool_cmd.UnsetPool, [
            'solver', '--property', 'owner', '--project', 'research',
            '--open-to-all'])
        self.assertEqual([
            '1. set metadata of aggregate solver: '
            'filter_tenant_id_id-research (removed), owner (removed) (undo: '
            'restore metadata of aggregate solver: '
            'filter_tenant_id_id-research=id-research, owner=x)'], lines)
        self.assertEqual('x', self.cloud.aggregates[0].metadata['owner'])

    def test_add_and_remove_host(self):
        self.run_cmd(pool_cmd.CreatePool, [
            'ws', '--mode', 'vgpu', '--vgpu-type', 'nvidia-35'])
        pgpus = self.pgpu_labels(self.vgpu)
        keys = sorted('gpu_tagged:%s' % p.uuid for p in self.pgpus())
        lines, _warnings = self.dry_run(pool_cmd.AddHostPool,
                                        ['ws', 'gpu-vgpu-1'])
        self.assertEqual(4, len(lines))
        self.assertEqual(
            '1. set metadata of aggregate ws: %s (undo: restore metadata of '
            'aggregate ws: %s)' % (
                ', '.join('%s=CUSTOM_NVIDIA_35' % k for k in keys),
                ', '.join('%s (removed)' % k for k in keys)), lines[0])
        self.assertEqual(
            ['add trait CUSTOM_NVIDIA_35 to resource provider %s (undo: '
             'remove trait CUSTOM_NVIDIA_35 from resource provider %s)'
             % (name, name) for name in pgpus],
            sorted(line.split('. ', 1)[1] for line in lines[1:3]))
        self.assertEqual('4. add host gpu-vgpu-1 to aggregate ws (undo: '
                         'remove host gpu-vgpu-1 from aggregate ws)',
                         lines[3])
        self.assertEqual([], self.cloud.aggregates[0].hosts)
        self.run_cmd(pool_cmd.AddHostPool, ['ws', 'gpu-vgpu-1'])
        lines, _warnings = self.dry_run(pool_cmd.RemoveHostPool,
                                        ['ws', 'gpu-vgpu-1'])
        self.assertEqual(4, len(lines))
        self.assertEqual(
            ['remove trait CUSTOM_NVIDIA_35 from resource provider %s '
             '(undo: add trait CUSTOM_NVIDIA_35 to resource provider %s '
             'again)' % (name, name) for name in pgpus],
            sorted(line.split('. ', 1)[1] for line in lines[:2]))
        self.assertEqual('3. remove host gpu-vgpu-1 from aggregate ws (undo: '
                         'add host gpu-vgpu-1 to aggregate ws again)',
                         lines[2])
        self.assertEqual(
            '4. set metadata of aggregate ws: %s (undo: restore metadata of '
            'aggregate ws: %s)' % (
                ', '.join('%s (removed)' % k for k in keys),
                ', '.join('%s=CUSTOM_NVIDIA_35' % k for k in keys)),
            lines[3])
        self.assertEqual(['gpu-vgpu-1'], self.cloud.aggregates[0].hosts)
        for p in self.pgpus():
            self.assertEqual(['CUSTOM_NVIDIA_35'], p.traits)

    def test_delete(self):
        self.create('--host', 'gpu-pt-1', '--isolate')
        before, writes = self.state(), self.writes()
        self.assertIsNone(self.run_cmd(pool_cmd.DeletePool,
                                       ['solver', '--force', '--dry-run']))
        self.assertEqual([
            '1. remove trait CUSTOM_GPU_POOL_SOLVER from resource provider '
            'gpu-pt-1.test (undo: add trait CUSTOM_GPU_POOL_SOLVER to '
            'resource provider gpu-pt-1.test again)',
            '2. remove host gpu-pt-1 from aggregate solver (undo: add host '
            'gpu-pt-1 to aggregate solver again)',
            '3. delete trait CUSTOM_GPU_POOL_SOLVER (undo: create trait '
            'CUSTOM_GPU_POOL_SOLVER again)',
            '4. delete host aggregate solver (undo: create host aggregate '
            'solver again)'], self.stdout.getvalue().splitlines())
        self.assertEqual(before, self.state())
        self.assertEqual(writes, self.writes())
        # a dry run is refused like the delete itself
        exc = self.assertRaises(exceptions.CommandError, self.run_cmd,
                                pool_cmd.DeletePool, ['solver', '--dry-run'])
        self.assertEqual('1 of 1 pools failed to delete.', str(exc))
        self.assertIn('still has hosts', self.logger.output)
        self.assertEqual('', self.stdout.getvalue())
        self.assertEqual(before, self.state())


class TestDependents(PoolCommandTestCase):
    """--update-dependents changes the flavors a pool change would break,
    in the same plan; without it the change is refused and names them;
    --open-to-all is needed to remove a limited pool's last project."""

    def setUp(self):
        super().setUp()
        self.run_cmd(pool_cmd.CreatePool, [
            'solver', '--mode', 'passthrough', '--alias', 'h100',
            '--pci-id', '10de:2331', '--host', 'gpu-pt-1'])

    def test_no_isolate(self):
        self.run_cmd(pool_cmd.SetPool, ['solver', '--isolate'])
        flavor = self.cloud.add_flavor('g1.solver', extra_specs={
            STEER: 'solver', 'pci_passthrough:alias': 'h100:1',
            'trait:' + SOLVER_TRAIT: 'required'})
        before = self.state()
        exc = self.assertRaises(exceptions.CommandError, self.run_cmd,
                                pool_cmd.SetPool, ['solver', '--no-isolate'])
        self.assertIn('Flavors g1.solver and images none require '
                      'CUSTOM_GPU_POOL_SOLVER, which ending isolation '
                      'deletes', str(exc))
        self.assertIn('Run again with --update-dependents', str(exc))
        self.assertEqual(before, self.state())
        self.run_cmd(pool_cmd.SetPool, [
            'solver', '--no-isolate', '--update-dependents', '--dry-run'])
        lines = self.stdout.getvalue().splitlines()
        # the aggregate's requirement first (the flavor still requires a
        # trait the hosts still have), then the flavor, before the trait
        # goes: no flavor is ever kept out of its pool or requires a
        # deleted trait
        self.assertEqual(
            '1. set metadata of aggregate solver: '
            'trait:CUSTOM_GPU_POOL_SOLVER (removed) (undo: restore metadata '
            'of aggregate solver: trait:CUSTOM_GPU_POOL_SOLVER=required)',
            lines[0])
        self.assertEqual(
            '2. set extra specs of flavor g1.solver: '
            'trait:CUSTOM_GPU_POOL_SOLVER (removed) (undo: restore extra '
            'specs of flavor g1.solver: '
            'trait:CUSTOM_GPU_POOL_SOLVER=required)', lines[1])
        self.assertEqual('4. delete trait CUSTOM_GPU_POOL_SOLVER (undo: '
                         'create trait CUSTOM_GPU_POOL_SOLVER again)',
                         lines[-1])
        self.assertEqual(before, self.state())
        self.run_cmd(pool_cmd.SetPool, [
            'solver', '--no-isolate', '--update-dependents'])
        self.assertFalse(self.show_data('solver')['isolated'])
        self.assertEqual({STEER: 'solver', 'pci_passthrough:alias': 'h100:1'},
                         flavor['extra_specs'])
        self.assertNotIn(SOLVER_TRAIT, self.pt.traits)
        self.assertNotIn(SOLVER_TRAIT, self.placement.traits)
        self.assertEqual(('unset', 'g1.solver', 'trait:' + SOLVER_TRAIT),
                         next(c for c in self.compute.calls
                              if c[0] == 'unset'))

    def test_isolate(self):
        flavor = self.cloud.add_flavor('g1.solver', extra_specs={
            STEER: 'solver', 'pci_passthrough:alias': 'h100:1'})
        before = self.state()
        exc = self.assertRaises(exceptions.CommandError, self.run_cmd,
                                pool_cmd.SetPool, ['solver', '--isolate'])
        self.assertIn('Isolating pool solver would keep its flavors '
                      'g1.solver off its hosts: they do not require '
                      'CUSTOM_GPU_POOL_SOLVER. Run again with '
                      '--update-dependents', str(exc))
        self.assertEqual(before, self.state())
        self.run_cmd(pool_cmd.SetPool, [
            'solver', '--isolate', '--update-dependents'])
        self.assertTrue(self.show_data('solver')['isolated'])
        self.assertEqual('required',
                         flavor['extra_specs']['trait:' + SOLVER_TRAIT])
        self.assertIn(SOLVER_TRAIT, self.pt.traits)
        # the flavor got the trait before the aggregate required it
        ops = [c[0] for c in self.compute.calls]
        self.assertLess(ops.index('specs'), len(ops) - 1)
        self.assertEqual(('metadata', 'solver',
                          {'trait:' + SOLVER_TRAIT: 'required'}),
                         self.compute.calls[-1])

    def test_unset_last_project(self):
        self.run_cmd(pool_cmd.SetPool, ['solver', '--project', 'research'])
        flavor = self.cloud.add_flavor('g1.private', public=False,
                                       extra_specs={STEER: 'solver'})
        self.cloud.flavor_access[flavor['id']] = ['id-other', 'id-research']
        before = self.state()
        exc = self.assertRaises(exceptions.CommandError, self.run_cmd,
                                pool_cmd.UnsetPool,
                                ['solver', '--project', 'research'])
        self.assertIn('Removing id-research would leave pool solver with no '
                      'project, which opens it to every project. Add '
                      '--open-to-all', str(exc))
        exc = self.assertRaises(exceptions.CommandError, self.run_cmd,
                                pool_cmd.UnsetPool,
                                ['solver', '--project', 'research',
                                 '--open-to-all'])
        self.assertIn('Private flavors of pool solver are given to projects '
                      'you are removing (g1.private: id-research)', str(exc))
        self.assertIn('Run again with --update-dependents', str(exc))
        self.assertEqual(before, self.state())
        self.run_cmd(pool_cmd.UnsetPool, [
            'solver', '--project', 'research', '--open-to-all',
            '--update-dependents', '--dry-run'])
        self.assertEqual([
            '1. take access to flavor g1.private from project id-research '
            '(undo: give project id-research access to flavor g1.private '
            'again)',
            '2. set metadata of aggregate solver: '
            'filter_tenant_id_id-research (removed) (undo: restore metadata '
            'of aggregate solver: filter_tenant_id_id-research=id-research)'],
            self.stdout.getvalue().splitlines())
        self.assertEqual(before, self.state())
        self.run_cmd(pool_cmd.UnsetPool, [
            'solver', '--project', 'research', '--open-to-all',
            '--update-dependents'])
        self.assertEqual([], self.show_data('solver')['projects'])
        self.assertEqual([], [k for k in self.cloud.aggregates[0].metadata
                              if k.startswith('filter_tenant_id')])
        self.assertEqual(['id-other'], self.cloud.flavor_access[flavor['id']])


class TestShowBlazar(base.CommandTestCase):
    """Issue 40, rule 6: pool show says which hosts Blazar holds, only
    where the cloud runs Blazar, with the same requests."""

    def show(self, cloud, catalog):
        placement = self.useFixture(fakes.PlacementFixture(cloud))
        cm = self.useFixture(fakes.ClientManagerFixture(cloud,
                                                        catalog=catalog))
        cmd = pool_cmd.ShowPool(self.make_app(cm.client_manager), None)
        columns, values = cmd.take_action(self.check_parser(cmd, ['solver']))
        shown = dict(zip(columns, values, strict=True))
        return shown['gpus'], (len(placement.requests()), len(cm.nova.sent))

    def test_held_host(self):
        cloud = fakes.FakeCloud()
        cloud.pci_host('gpu-pt-1')
        cloud.pci_host('gpu-pt-2')
        spec = pools.build_spec('solver', 'passthrough', alias='h100',
                                pci_id='10de:2331')
        cloud.aggregates += [
            fakes.Aggregate('solver', pools.metadata_for(spec),
                            ['gpu-pt-1', 'gpu-pt-2']),
            # a host reservation's lease aggregate
            fakes.Aggregate('r1', {'blazar:owner': 'p1'}, ['gpu-pt-2'],
                            zone='blazar_r1')]
        plain, sent_plain = self.show(cloud, None)
        self.assertEqual({'total': 4, 'used': 0, 'free': 4},
                         plain.machine_readable()['gpu-pt-2'])
        held, sent_held = self.show(cloud, ['reservation'])
        self.assertEqual(sent_plain, sent_held)
        figures = held.machine_readable()
        self.assertNotIn('held_by_blazar', figures['gpu-pt-1'])
        self.assertEqual(['in lease aggregate r1 (zone blazar_r1)'],
                         figures['gpu-pt-2']['held_by_blazar'])
        self.assertIn('gpu-pt-2: total 4, used 0, free 4, held by Blazar '
                      '(in lease aggregate r1 (zone blazar_r1)): not '
                      'available to ordinary flavors',
                      held.human_readable())
