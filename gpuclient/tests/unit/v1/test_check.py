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

"""gpu check over a fake cloud: snapshot to rows, and the exit status."""

import contextlib
import io
import json
import os
from unittest import mock

import fixtures
from osc_lib import exceptions

from gpuclient.ops import check_ops
from gpuclient.rules import checks
from gpuclient.rules import pools
from gpuclient.tests.unit import base
from gpuclient.tests.unit import fakes
from gpuclient.v1 import check as check_cmd

PT_SPEC = pools.build_spec('solver', 'passthrough', alias='h100',
                           pci_id='10de:2331')
# what gpu check says without --nova-conf about a pool and no flavor
NOT_JUDGED = ('warning', 'quota-gpu-limits', 'nova.conf [quota]')


def judged(rows):
    """The rows but the "not judged" warnings of a run without nova.conf."""
    return [r for r in rows if not r['Symptom'].startswith('not judged')]


class CheckTestCase(base.CommandTestCase):
    def setUp(self):
        super().setUp()
        self.cloud = fakes.FakeCloud()
        self.cloud.pci_host('gpu-pt-1')
        self.cloud.compute_host('plain-1')
        self.cloud.aggregates.append(fakes.Aggregate(
            'solver', pools.metadata_for(PT_SPEC), ['gpu-pt-1']))
        self.useFixture(fakes.PlacementFixture(self.cloud))
        cm = self.useFixture(fakes.ClientManagerFixture(self.cloud))
        self.app = self.make_app(cm.client_manager)
        self.app.stdout = io.StringIO()
        self.cmd = check_cmd.Check(self.app, None)

    def rows(self, *args):
        self.cloud.mirror()
        parsed = self.check_parser(self.cmd, list(args))
        columns, data = self.cmd.take_action(parsed)
        return [dict(zip(columns, row, strict=True)) for row in data]

    def run_cmd(self, *args):
        self.cloud.mirror()
        parsed = self.check_parser(self.cmd, ['-f', 'json'] + list(args))
        status = self.cmd.run(parsed)
        return status, json.loads(self.app.stdout.getvalue())


class TestCheck(CheckTestCase):
    def test_parser(self):
        self.check_parser(self.cmd, [
            '--nova-conf', 'a.conf', '--check', 'pool-drift', '--check',
            'pool-aggregates', '--pool', 'solver', '--strict'], [
            ('nova_conf', ['a.conf']),
            ('checks', ['pool-drift', 'pool-aggregates']),
            ('pool', 'solver'), ('strict', True)])

    def test_clean_cloud_exits_0(self):
        status, rows = self.run_cmd()
        self.assertEqual(0, status)
        # without --nova-conf the quota check says it could not judge
        self.assertEqual([NOT_JUDGED], [
            (r['Severity'], r['Check'], r['Object']) for r in rows])
        self.assertIn('--nova-conf', rows[0]['Fix'])
        self.app.stdout = io.StringIO()
        self.assertEqual(1, self.run_cmd('--strict')[0])

    def test_registered_limits_not_read_is_said(self):
        path = self.useFixture(fixtures.TempDir()).join('nova.conf')
        with open(path, 'w') as conf:
            conf.write('[quota]\ndriver = nova.quota.UnifiedLimitsDriver\n')
        # Keystone refuses the registered limits (a token without admin)
        self.app.client_manager.gpu.limits._scope = ('nova-id', None)
        self.app.client_manager.gpu._conn.identity.registered_limits.\
            side_effect = fakes.sdk_error(403, 'Forbidden')
        status, rows = self.run_cmd('--nova-conf', path, '--check',
                                    'quota-gpu-limits')
        # the only check asked for lacks what it rests on: it could not
        # run (issue 51 defect 7)
        self.assertEqual(2, status)
        self.assertIn('No check asked for could run: quota-gpu-limits ('
                      'Listing the registered limits', self.logger.output)
        self.assertEqual([('warning', 'registered limits')], [
            (r['Severity'], r['Object']) for r in rows])
        self.assertIn('not judged: Keystone\'s registered limits were not '
                      'read', rows[0]['Symptom'])

    def test_error_rows_print_and_exit_1(self):
        self.cloud.aggregates[0].hosts.append('plain-1')
        status, rows = self.run_cmd()
        self.assertEqual(1, status)
        self.assertEqual(
            [('error', 'pool-no-devices', 'pool solver / host plain-1'),
             NOT_JUDGED],
            [(r['Severity'], r['Check'], r['Object']) for r in rows])
        self.assertEqual(list(check_cmd.COLUMNS), list(rows[0]))

    def test_warnings_exit_1_only_with_strict(self):
        self.cloud.vgpu_host('gpu-vgpu-1')  # a GPU host in no pool
        status, rows = self.run_cmd()
        self.assertEqual((0, ['pool-unpooled-hosts']),
                         (status, [r['Check'] for r in judged(rows)]))
        self.app.stdout = io.StringIO()
        status, _rows = self.run_cmd('--strict')
        self.assertEqual(1, status)

    def test_check_and_pool_options(self):
        self.cloud.vgpu_host('gpu-vgpu-1')
        self.cloud.aggregates[0].hosts.append('plain-1')
        self.assertEqual(['pool-unpooled-hosts'], [
            r['Check'] for r in self.rows('--check', 'pool-unpooled-hosts')])
        self.assertEqual(['pool-no-devices'], [
            r['Check'] for r in judged(self.rows('--pool', 'solver'))])

    def test_unknown_check_and_pool_are_refused(self):
        error = self.assertRaises(exceptions.CommandError, self.rows,
                                  '--check', 'nope')
        self.assertIn('pool-drift', str(error))
        error = self.assertRaises(exceptions.CommandError, self.rows,
                                  '--pool', 'nope')
        self.assertIn('No GPU pool named nope', str(error))


class TestExitStatus(CheckTestCase):
    """0 clean, 1 findings, 2 could not run: three distinct statuses."""

    def test_statuses_are_distinct_and_documented(self):
        self.assertEqual((0, 1, 2), (checks.EXIT_CLEAN, checks.EXIT_FINDINGS,
                                     checks.EXIT_NOT_RUN))
        text = ' '.join(self.cmd.get_parser(
            'openstack gpu check').format_help().split())
        self.assertIn('Exit status: 0 when the checks ran and found no '
                      'error', text)
        self.assertIn('1 when they found one', text)
        self.assertIn('2 when the checks could not run', text)

    def run_status(self, *args):
        self.cloud.mirror()
        parsed = self.check_parser(self.cmd, ['-f', 'json'] + list(args))
        return self.cmd.run(parsed)

    def test_unknown_check_could_not_run(self):
        self.assertEqual(checks.EXIT_NOT_RUN, self.run_status(
            '--check', 'nope'))
        self.assertEqual('', self.app.stdout.getvalue())
        self.assertIn('Unknown check(s) nope', self.logger.output)

    def test_unknown_pool_could_not_run(self):
        # even with an error finding elsewhere: no rows, status 2
        self.cloud.aggregates[0].hosts.append('plain-1')
        self.assertEqual(checks.EXIT_NOT_RUN, self.run_status(
            '--pool', 'nope'))
        self.assertIn('No GPU pool named nope', self.logger.output)

    def test_cloud_errors_could_not_run(self):
        for error in (exceptions.CommandError('Placement said 403'),
                      ConnectionError('no route to host')):
            with mock.patch.object(check_ops, 'run', side_effect=error):
                self.assertEqual(checks.EXIT_NOT_RUN, self.run_status())
            self.assertIn(str(error), self.logger.output)
        self.assertEqual('', self.app.stdout.getvalue())

    def test_broken_pipe_is_left_to_cliff(self):
        with mock.patch.object(check_ops, 'run',
                               side_effect=BrokenPipeError()):
            self.assertRaises(BrokenPipeError, self.run_status)

    def test_bad_usage_exits_2(self):
        # argparse's own status for bad options, the same as "not run"
        parser = self.cmd.get_parser('openstack gpu check')
        with contextlib.redirect_stderr(io.StringIO()):
            exc = self.assertRaises(SystemExit, parser.parse_args,
                                    ['--no-such-option'])
        self.assertEqual(checks.EXIT_NOT_RUN, exc.code)


class TestReadable(CheckTestCase):
    """The table for a person (sorted, "not judged" folded per source,
    fitted), json with every row, and the summary line on stderr."""

    # checks.run's order: the error, then the warnings, "not judged" among
    # them (no nova.conf given)
    EVERY_ROW = [
        ('error', 'pool-no-devices', 'pool solver / host plain-1'),
        ('warning', 'flavor-address-space', 'flavor g1'),
        ('warning', 'flavor-pci-alias', 'nova.conf [pci] alias'),
        ('warning', 'image-firmware', 'image bios'),
        ('warning', 'scheduler-settings', 'nova.conf'),
        ('warning', 'quota-gpu-limits', 'nova.conf [quota]')]
    SUMMARY = ('gpu check: 1 error, 1 warning, 4 checks not judged (no '
               'nova.conf); 15 checks could not run.')

    def setUp(self):
        super().setUp()
        self.cloud.aggregates[0].hosts.append('plain-1')
        self.cloud.add_flavor(
            'g1', extra_specs={'pci_passthrough:alias': 'h100:1'})
        self.cloud.images.append(
            {'id': 'img-bios', 'name': 'bios', 'status': 'active'})

    def run_table(self, *args):
        self.cloud.mirror()
        parsed = self.check_parser(self.cmd, ['-f', 'table'] + list(args))
        status = self.cmd.run(parsed)
        return status, self.app.stdout.getvalue().splitlines()

    def test_json_keeps_every_row(self):
        status, rows = self.run_cmd()
        self.assertEqual(1, status)
        self.assertEqual(self.EVERY_ROW, [
            (r['Severity'], r['Check'], r['Object']) for r in rows])
        self.assertEqual(4, len([r for r in rows if r['Symptom'].startswith(
            'not judged: ')]))

    def test_table_sorted_and_folded(self):
        rows = self.rows()
        self.assertEqual(
            [('error', 'pool-no-devices', 'pool solver / host plain-1'),
             ('warning', 'image-firmware', 'image bios'),
             # not judged for another cause: its own row
             ('not judged', 'flavor-address-space', 'flavor g1'),
             ('not judged',
              'flavor-pci-alias, scheduler-settings, quota-gpu-limits',
              'nova.conf [pci] alias, nova.conf, nova.conf [quota]')],
            [(r['Severity'], r['Check'], r['Object']) for r in rows])
        self.assertEqual(checks.NOVA_CONF_FIX, rows[-1]['Fix'])
        self.assertTrue(rows[-1]['Symptom'].startswith(
            'not judged (no nova.conf): 3 check(s) could not judge 3 '
            'object(s)'), rows[-1]['Symptom'])

    def test_summary_on_stderr_in_every_format(self):
        for formatter in ('json', 'table', 'value'):
            self.app.stdout = io.StringIO()
            self.logger = self.useFixture(fixtures.FakeLogger())
            self.cloud.mirror()
            status = self.cmd.run(self.check_parser(
                self.cmd, ['-f', formatter]))
            self.assertEqual(1, status, formatter)
            self.assertEqual(self.SUMMARY,
                             self.logger.output.splitlines()[0], formatter)
            self.assertNotIn('gpu check:', self.app.stdout.getvalue())

    def test_table_fits_the_width_given(self):
        status, lines = self.run_table('--max-width', '72')
        self.assertEqual(1, status)
        self.assertEqual([], [line for line in lines if len(line) > 72])
        # the Severity column: one cell a row, wrapped in no other
        self.assertEqual(
            ['error', 'warning', 'not judged', 'not judged'],
            [cell for cell in (line.split('|')[1].strip()
                               for line in lines[3:-1]) if cell])
        # unfitted (not a terminal, no width given) the rows run long
        self.app.stdout = io.StringIO()
        _status, lines = self.run_table()
        self.assertGreater(max(len(line) for line in lines), 200)

    def fitted(self, terminal):
        """The widest line of the table when TERMINAL (a stream of the
        app) is at an 80-column terminal and stdout is not."""
        self.app.stdout = io.StringIO()
        for fd, stream in enumerate(('stdin', 'stdout', 'stderr')):
            if stream != 'stdout':
                setattr(self.app, stream, mock.Mock(**{
                    'fileno.return_value': fd}))
        at = ('stdin', 'stdout', 'stderr').index(terminal)

        def size(fd):
            if fd == at:
                return os.terminal_size((80, 24))
            raise OSError('not a terminal')

        with mock.patch.object(check_cmd.os, 'get_terminal_size',
                               side_effect=size):
            _status, lines = self.run_table()
        return max(len(line) for line in lines)

    def test_fitted_by_default_to_a_terminal_of_the_process(self):
        # stdout piped (gpu check | less) with stderr at a terminal, or
        # both captured by a script run at one (stdin)
        for terminal in ('stderr', 'stdin'):
            widest = self.fitted(terminal)
            self.assertLessEqual(widest, 80, terminal)
            self.assertGreater(widest, 72, terminal)
        # CLIFF_FIT_WIDTH=0 says not to
        self.useFixture(fixtures.EnvironmentVariable('CLIFF_FIT_WIDTH', '0'))
        self.assertGreater(self.fitted('stderr'), 200)
