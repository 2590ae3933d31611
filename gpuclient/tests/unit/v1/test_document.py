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

"""gpu export and gpu diff: parsers, take_action over the fake cloud, the
same rows in every formatter, and diff's three exit statuses."""

import io
import json
import os

import fixtures
from osc_lib import exceptions
import yaml

from gpuclient.rules import document
from gpuclient.rules import pools
from gpuclient.tests.unit import base
from gpuclient.tests.unit import fakes
from gpuclient.v1 import document as document_cmd

PT_SPEC = pools.build_spec('solver', 'passthrough', alias='h100',
                           pci_id='10de:2331')


class DocumentCommandTestCase(base.CommandTestCase):
    def setUp(self):
        super().setUp()
        self.cloud = fakes.FakeCloud()
        self.cloud.pci_host('gpu-pt-1')
        # as an earlier gpu apply leaves them: marked as its own
        self.cloud.aggregates.append(fakes.Aggregate(
            'solver', dict(pools.metadata_for(PT_SPEC), gpu_managed_by=(
                'gpu-apply')), ['gpu-pt-1']))
        self.cloud.add_flavor('g1.h100.1', vcpus=16, extra_specs={
            'aggregate_instance_extra_specs:gpu_pool': 'solver',
            'pci_passthrough:alias': 'h100:1',
            'hw:pci_numa_affinity_policy': 'preferred',
            'gpuclient:managed_by': 'gpu-apply'})
        self.useFixture(fakes.PlacementFixture(self.cloud))
        cm = self.useFixture(fakes.ClientManagerFixture(self.cloud))
        identity = cm.gpu._conn.identity
        fakes.FakeKeystoneLimits().install(identity)
        cm.gpu.limits._scope = ('nova-service', 'RegionOne')
        self.app = self.make_app(cm.client_manager)
        self.app.stdout = io.StringIO()
        self.dir = self.useFixture(fixtures.TempDir()).path

    def export(self, *args):
        cmd = document_cmd.ExportDocument(self.app, None)
        return cmd.take_action(self.check_parser(cmd, list(args)))


class TestExport(DocumentCommandTestCase):
    def test_parser(self):
        cmd = document_cmd.ExportDocument(self.app, None)
        self.check_parser(cmd, [], [('pool', []), ('output', None),
                                    ('overwrite', False)])
        self.check_parser(cmd, ['--pool', 'a', '--pool', 'b', '--output',
                                'f.yaml', '--overwrite'],
                          [('pool', ['a', 'b']), ('output', 'f.yaml'),
                           ('overwrite', True)])
        self.assertRaises(base.ParserError, self.check_parser, cmd, ['x'])

    def test_stdout(self):
        self.assertEqual(0, self.export())
        text = self.app.stdout.getvalue()
        self.assertTrue(text.startswith('# The GPU layer'))
        data = yaml.safe_load(text)
        self.assertEqual(['solver'], [p['name'] for p in data['pools']])
        self.assertEqual([{'name': 'g1.h100.1', 'pool': 'solver',
                           'vcpus': 16, 'ram': 512, 'disk': 1}],
                         data['flavors'])

    def test_output_file_never_overwritten_by_default(self):
        path = os.path.join(self.dir, 'gpu.yaml')
        self.export('--output', path)
        self.assertEqual('', self.app.stdout.getvalue())
        with open(path) as written:
            first = written.read()
        self.assertIn('name: solver', first)
        error = self.assertRaises(exceptions.CommandError, self.export,
                                  '--output', path)
        self.assertIn('already exists: give --overwrite', str(error))
        self.export('--output', path, '--overwrite')
        with open(path) as written:
            self.assertEqual(first, written.read())
        error = self.assertRaises(exceptions.CommandError, self.export,
                                  '--overwrite')
        self.assertIn('--overwrite goes with --output', str(error))


class TestDiff(DocumentCommandTestCase):
    def setUp(self):
        super().setUp()
        self.export()
        self.text = self.app.stdout.getvalue()
        self.app.stdout = io.StringIO()
        self.cmd = document_cmd.DiffDocument(self.app, None)

    def path(self, text):
        path = os.path.join(self.dir, 'gpu.yaml')
        with open(path, 'w') as out:
            out.write(text)
        return path

    def run_cmd(self, text, *args):
        parsed = self.check_parser(self.cmd, list(args) + [self.path(text)])
        status = self.cmd.run(parsed)
        return status, self.app.stdout.getvalue()

    def test_parser(self):
        self.check_parser(self.cmd, ['gpu.yaml'], [('file', 'gpu.yaml'),
                                                   ('prune', False),
                                                   ('pool', [])])
        self.check_parser(self.cmd, ['gpu.yaml', '--prune', '--pool', 'a',
                                     '--pool', 'b'],
                          [('prune', True), ('pool', ['a', 'b'])])
        self.assertRaises(base.ParserError, self.check_parser, self.cmd, [])

    def test_pool_scope(self):
        # a pool the cloud does not have yet, and a change to solver: each
        # scope sees its own
        data = yaml.safe_load(self.text)
        data['pools'].append({'name': 'other', 'mode': 'vgpu',
                              'vgpu_type': 'nvidia-35', 'hosts': []})
        data['pools'][0]['isolate'] = True
        text = yaml.safe_dump(data)
        status, out = self.run_cmd(text, '--pool', 'other', '-f', 'value')
        self.assertEqual(1, status)
        self.assertEqual('pool other create', ' '.join(out.split()[:3]))
        self.assertNotIn('solver', out)
        self.app.stdout = io.StringIO()
        status, out = self.run_cmd(text, '--pool', 'solver', '-f', 'value')
        self.assertEqual(1, status)
        self.assertIn('pool solver update', out)
        self.assertNotIn('other', out)
        self.app.stdout = io.StringIO()
        status, out = self.run_cmd(text, '--pool', 'nope', '-f', 'value')
        self.assertEqual(2, status)
        self.assertIn('--pool nope: no such pool in the document nor in the '
                      'cloud', self.logger.output)

    def test_statuses(self):
        # diff(1)'s: 0 in sync, 1 drift, 2 trouble (argparse's usage error)
        self.assertEqual(
            (0, 1, 2),
            (document.EXIT_IN_SYNC, document.EXIT_DRIFT, document.EXIT_ERROR))
        text = ' '.join(self.cmd.get_parser('openstack gpu diff')
                        .format_help().split())
        self.assertIn('Exit status: 0 when the cloud is in sync', text)
        self.assertIn('1 when it is not', text)
        self.assertIn('2 when it could not compare', text)
        self.assertIn('drift was 2 and an error 1 before', text)

    def test_in_sync(self):
        status, out = self.run_cmd(self.text, '-f', 'json')
        self.assertEqual((0, []), (status, json.loads(out)))

    def test_drift_rows_in_every_formatter(self):
        text = self.text.replace('vcpus: 16', 'vcpus: 8', 1).replace(
            'isolate: false', 'isolate: true', 1)
        status, out = self.run_cmd(text, '-f', 'json')
        self.assertEqual(1, status)
        self.assertEqual([
            {'Object': 'pool solver', 'Change': 'update',
             'From': {'isolate': False}, 'To': {'isolate': True},
             'Conflicts': []},
            {'Object': 'flavor g1.h100.1', 'Change': 'recreate',
             'From': {'vcpus': 16}, 'To': {'vcpus': 8}, 'Conflicts': []}],
            json.loads(out))
        for formatter, expected in (
                # cliff's csv and value write a column's machine-readable
                # value, its table the human-readable one
                ('csv', '"pool solver","update","{\'isolate\': False}",'
                        '"{\'isolate\': True}","[]"'),
                ('value', "flavor g1.h100.1 recreate {'vcpus': 16} "
                          "{'vcpus': 8} []"),
                ('table', '| flavor g1.h100.1 | recreate | vcpus=16      | '
                          'vcpus=8      |           |'),
                ('yaml', "- Change: update\n  Conflicts: []\n  From:\n"
                         "    isolate: false\n")):
            self.app.stdout = io.StringIO()
            status, out = self.run_cmd(text, '-f', formatter)
            self.assertEqual(1, status)
            self.assertIn(expected, out)

    def test_untracked_is_not_drift_unless_pruned(self):
        text = self.text.split('flavors:')[0]
        status, out = self.run_cmd(text, '-f', 'value')
        self.assertEqual(0, status)
        self.assertIn('flavor g1.h100.1 untracked', out)
        self.app.stdout = io.StringIO()
        status, out = self.run_cmd(text, '--prune', '-f', 'value')
        self.assertEqual(1, status)
        self.assertIn('flavor g1.h100.1 delete', out)

    def test_anchors_and_aliases_refused_with_exit_2(self):
        text = self.text.replace('- name: solver', '- &s\n  name: solver')
        status, out = self.run_cmd(text, '-f', 'json')
        self.assertEqual(2, status)
        self.assertEqual('', out)
        self.assertIn('YAML anchors and aliases', self.logger.output)

    def test_error_exits_2_with_the_reason(self):
        status, out = self.run_cmd('version: 2\n', '-f', 'json')
        self.assertEqual(2, status)
        self.assertEqual('', out)
        self.assertIn('line 1: version: 1 was expected', self.logger.output)

    def test_conflicts_column(self):
        conflict = {'field': 'properties.team', 'recorded': 'hpc',
                    'now': 'ml-ops', 'wanted': 'hpc'}
        _columns, rows = document_cmd.table([
            {'object': 'pool a', 'change': 'update', 'from': {},
             'to': {}, 'conflicts': [conflict]},
            {'object': 'pool b', 'change': 'update', 'from': {}, 'to': {},
             'conflicts': None}])
        self.assertEqual('properties.team (recorded hpc, now ml-ops, '
                         'wanted hpc)', rows[0][4].human_readable())
        self.assertEqual([conflict], rows[0][4].machine_readable())
        # no record of the object: nothing known
        self.assertEqual('', rows[1][4].human_readable())
        self.assertIsNone(rows[1][4].machine_readable())

    def test_table_columns(self):
        columns, rows = document_cmd.table([{
            'object': 'pool a', 'change': 'create', 'from': None,
            'to': {'hosts': ['h1', 'h2'], 'properties': {'k': 'v'}}}])
        self.assertEqual(('Object', 'Change', 'From', 'To', 'Conflicts'),
                         columns)
        self.assertEqual('', rows[0][2].human_readable())
        self.assertEqual('hosts=h1,h2; properties=k=v',
                         rows[0][3].human_readable())
        self.assertEqual({'hosts': ['h1', 'h2'], 'properties': {'k': 'v'}},
                         rows[0][3].machine_readable())


class TestApply(DocumentCommandTestCase):
    def setUp(self):
        super().setUp()
        for provider in self.cloud.providers:
            if provider.parent is None:
                provider.traits.append('OWNER_NOVA')
        self.export()
        self.text = self.app.stdout.getvalue()
        self.app.stdout = io.StringIO()
        self.cmd = document_cmd.ApplyDocument(self.app, None)
        self.path = os.path.join(self.dir, 'gpu.yaml')

    def run_cmd(self, text, *args):
        with open(self.path, 'w') as out:
            out.write(text)
        parsed = self.check_parser(self.cmd, list(args) + [self.path])
        return self.cmd.take_action(parsed), self.app.stdout.getvalue()

    def test_parser(self):
        self.check_parser(self.cmd, ['gpu.yaml'], [
            ('file', 'gpu.yaml'), ('prune', False),
            ('recreate_flavors', False), ('dry_run', False), ('pool', []),
            ('force_conflicts', False)])
        self.check_parser(self.cmd, ['gpu.yaml', '--prune',
                                     '--recreate-flavors', '--dry-run',
                                     '--pool', 'solver',
                                     '--force-conflicts'], [
            ('prune', True), ('recreate_flavors', True), ('dry_run', True),
            ('pool', ['solver']), ('force_conflicts', True)])
        self.assertRaises(base.ParserError, self.check_parser, self.cmd, [])

    def test_anchors_and_aliases_refused_before_the_cloud_is_read(self):
        text = 'version: 1\npools: &p []\nflavors: *p\n'
        error = self.assertRaises(exceptions.CommandError, self.run_cmd,
                                  text)
        self.assertIn('line 2: YAML anchors and aliases', str(error))

    def test_pool_scope_prunes_only_that_pool(self):
        # the document names no pool: --pool solver prunes solver and its
        # flavor; the ordinary flavor and aggregate stay
        self.cloud.add_flavor('m1.small')
        status, out = self.run_cmd('version: 1\n', '--prune', '--pool',
                                   'solver', '--dry-run')
        self.assertEqual(0, status)
        self.assertIn('delete flavor g1.h100.1', out)
        self.assertIn('delete host aggregate solver', out)
        self.assertNotIn('m1.small', out)
        self.assertEqual(['solver'], [a.name for a in self.cloud.aggregates])
        self.app.stdout = io.StringIO()
        self.assertEqual((0, ''), self.run_cmd('version: 1\n', '--prune',
                                               '--pool', 'solver'))
        self.assertEqual([], self.cloud.aggregates)
        self.assertEqual(['m1.small'],
                         [f['name'] for f in self.cloud.flavors])

    def test_dry_run_prints_the_plan_and_writes_nothing(self):
        text = self.text.replace('isolate: false', 'isolate: true', 1)
        status, out = self.run_cmd(text, '--dry-run')
        self.assertEqual(0, status)
        self.assertEqual([
            '1. create trait CUSTOM_GPU_POOL_SOLVER (undo: delete trait '
            'CUSTOM_GPU_POOL_SOLVER)'], out.splitlines()[:1])
        self.assertIn('set extra specs of flavor g1.h100.1: '
                      'trait:CUSTOM_GPU_POOL_SOLVER=required', out)
        self.assertNotIn('trait:CUSTOM_GPU_POOL_SOLVER',
                         self.cloud.aggregates[0].metadata)

    def test_in_sync_prints_nothing(self):
        self.assertEqual((0, ''), self.run_cmd(self.text))
        status, out = self.run_cmd(self.text, '--dry-run')
        self.assertEqual('Applying gpu.yaml: nothing to do, the cloud '
                         'already matches.\n', out)

    def test_apply(self):
        text = self.text.replace('isolate: false', 'isolate: true', 1)
        self.assertEqual((0, ''), self.run_cmd(text))
        self.assertEqual('required', self.cloud.aggregates[0].metadata[
            'trait:CUSTOM_GPU_POOL_SOLVER'])
        self.assertEqual('required', self.cloud.flavors[0]['extra_specs'][
            'trait:CUSTOM_GPU_POOL_SOLVER'])

    def test_a_stale_document_refused_unless_force_conflicts(self):
        # another operator's edit since the export, with plain openstack
        self.cloud.aggregates[0].metadata['team'] = 'ml-ops'
        text = self.text
        error = self.assertRaises(exceptions.CommandError, self.run_cmd,
                                  text)
        self.assertIn('pool solver: changed in the cloud since the document '
                      'was exported, and the document would overwrite it: '
                      'properties.team (recorded (not set), now ml-ops, '
                      'wanted (not set))', str(error))
        self.assertIn('--force-conflicts', str(error))
        self.assertEqual('ml-ops', self.cloud.aggregates[0].metadata['team'])
        status, out = self.run_cmd(text, '--force-conflicts', '--dry-run')
        self.assertEqual(0, status)
        self.assertIn('set metadata of aggregate solver: team (removed)',
                      out)
        self.assertIn('Overwrites what was changed in the cloud since the '
                      'document was exported (--force-conflicts): pool '
                      'solver: properties.team', self.logger.output)
        self.assertEqual('ml-ops', self.cloud.aggregates[0].metadata['team'])
        self.app.stdout = io.StringIO()
        self.assertEqual((0, ''), self.run_cmd(text, '--force-conflicts'))
        self.assertNotIn('team', self.cloud.aggregates[0].metadata)

    def test_refusal_is_an_error(self):
        error = self.assertRaises(exceptions.CommandError, self.run_cmd,
                                  self.text.replace('vcpus: 16',
                                                    'vcpus: 8', 1))
        self.assertIn('flavor g1.h100.1: vcpus cannot change in place',
                      str(error))
