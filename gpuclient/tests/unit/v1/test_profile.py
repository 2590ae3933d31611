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

"""``openstack gpu profile list`` and ``plan``: parsers and take_action,
no cloud (the client manager is never touched)."""

import os
import subprocess
import sys
from unittest import mock

import fixtures
from osc_lib import exceptions

from gpuclient.tests.unit import base
from gpuclient.v1 import profile


class ProfileTestCase(base.CommandTestCase):

    def run_cmd(self, cls, args):
        cmd = cls(self.make_app(None), None)
        parsed = self.check_parser(cmd, list(args))
        return cmd.take_action(parsed)


class TestListProfile(ProfileTestCase):

    def test_parser(self):
        cmd = profile.ListProfile(self.make_app(None), None)
        self.check_parser(cmd, ['--model', 'a30-24gb'],
                          [('model', 'a30-24gb')])

    def test_one_model(self):
        columns, rows = self.run_cmd(profile.ListProfile,
                                     ['--model', 'a100-80gb'])
        self.assertEqual(('Model', 'Profile', 'Compute Slices',
                          'Memory Slices', 'Memory (GB)', 'Max Count',
                          'Placements', 'Board'), columns)
        rows = list(rows)
        self.assertEqual(('A100-80GB', '3g.40gb', 3, 4, 40, 2),
                         rows[4][:6])
        self.assertEqual([0, 4], rows[4][6].machine_readable())
        self.assertEqual('0, 4', rows[4][6].human_readable())
        self.assertEqual({'A100-80GB'}, {r[0] for r in rows})
        self.assertIn('A100D-10C', [r[1] for r in rows])

    def test_every_model(self):
        _columns, rows = self.run_cmd(profile.ListProfile, [])
        self.assertEqual(18, len({r[0] for r in rows}))

    def test_board(self):
        cmd = profile.ListProfile(self.make_app(None), None)
        self.check_parser(cmd, ['--board', 'h200-sxm5', '--long'],
                          [('board', 'h200-sxm5'), ('long', True)])
        columns, rows = self.run_cmd(profile.ListProfile,
                                     ['--board', 'h200-sxm5', '--long'])
        self.assertEqual(('Board', 'Source'), columns[-2:])
        vgpu = [r for r in rows if r[7]]
        self.assertEqual({'H200-SXM5'}, {r[7] for r in vgpu})
        self.assertEqual('H200X-141C', vgpu[0][1])
        self.assertIn('Table 173', vgpu[0][8])
        self.assertIn('3g.71gb', [r[1] for r in rows if not r[7]])
        e = self.assertRaises(exceptions.CommandError, self.run_cmd,
                              profile.ListProfile, ['--board', 'H300'])
        self.assertIn('H100-SXM5-80GB', str(e))
        e = self.assertRaises(
            exceptions.CommandError, self.run_cmd, profile.ListProfile,
            ['--model', 'A30-24GB', '--board', 'L40S'])
        self.assertIn('L40S-48GB', str(e))

    def test_unknown_model(self):
        e = self.assertRaises(exceptions.CommandError, self.run_cmd,
                              profile.ListProfile, ['--model', 'V100'])
        self.assertIn('A100-80GB', str(e))


class TestPlanProfile(ProfileTestCase):

    def test_parser(self):
        cmd = profile.PlanProfile(self.make_app(None), None)
        self.check_parser(
            cmd, ['--cards', 'A100-80GB=2', '--cards', 'a30-24gb = 1',
                  '--demand', '3g.40gb=3', '--output-dir', 'out'],
            [('cards', {'A100-80GB': '2', 'a30-24gb': '1'}),
             ('demand', {'3g.40gb': '3'}), ('output_dir', 'out'),
             ('pools', []), ('from_usage', False)])
        self.check_parser(
            cmd, ['--pool', 'a', '--pool', 'b', '--demand', 'f=2',
                  '--model', 'A100-80GB', '--mig-mdev-type',
                  '3g.40gb=nvidia-3'],
            [('pools', ['a', 'b']), ('model', 'A100-80GB'),
             ('mig_mdev_types', {'3g.40gb': 'nvidia-3'})])
        self.assertRaises(base.ParserError, self.check_parser, cmd,
                          ['--cards', 'A100-80GB'])

    def test_plan(self):
        columns, rows = self.run_cmd(profile.PlanProfile, [
            '--cards', 'A100-80GB=2', '--demand', '3g.40gb=3',
            '--demand', '1g.10gb=2'])
        self.assertEqual(('Card', 'Model', 'Layout Now', 'Layout Proposed',
                          'Serves'), columns)
        self.assertEqual(['A100-80GB#1', 'A100-80GB#2'],
                         [r[0] for r in rows])
        self.assertEqual(['-', '-'], [r[2] for r in rows])
        served = {}
        for row in rows:
            for name, n in row[4].machine_readable().items():
                served[name] = served.get(name, 0) + n
        self.assertEqual({'3g.40gb': 3, '1g.10gb': 2}, served)
        # a table shows the counts as numbers, not quoted strings
        texts = [row[4].human_readable() for row in rows]
        self.assertNotIn("'", ''.join(texts))
        self.assertIn('3g.40gb=', ''.join(texts))
        self.assertEqual(
            '1g.10gb=1, 3g.40gb=2',
            profile.ServesColumn({'3g.40gb': 2, '1g.10gb': 1})
            .human_readable())
        self.assertIn('Demand met: 5 of 5; cards re-cut: 2',
                      self.logger.output)

    def test_without_highspy_says_how_to_install_it(self):
        # highspy (and numpy) is the extra gpuclient[profiles]: without
        # it, the command says how to install it, no traceback
        patcher = mock.patch.dict(sys.modules, {'highspy': None})
        patcher.start()
        self.addCleanup(patcher.stop)
        exc = self.assertRaises(
            exceptions.CommandError, self.run_cmd, profile.PlanProfile,
            ['--cards', 'A100-80GB=2', '--demand', '3g.40gb=3',
             '--demand', '1g.10gb=2'])
        self.assertIn('pip install "gpuclient[profiles]"', str(exc))
        self.assertIn('highspy', str(exc))
        # the other profile command needs no solver
        self.run_cmd(profile.ListProfile, ['--model', 'A100-80GB'])

    def test_cards_by_board(self):
        e = self.assertRaises(
            exceptions.CommandError, self.run_cmd, profile.PlanProfile,
            ['--cards', 'H200-NVL=2', '--demand', 'H200X-35C=4'])
        self.assertIn('--board H200-NVL', str(e))
        _columns, rows = self.run_cmd(
            profile.PlanProfile,
            ['--cards', 'H200-NVL=1', '--demand', 'H200-35C=4'])
        self.assertEqual([('H200-141GB#1', 'H200-141GB', '-',
                           'H200-35C x4')], [r[:4] for r in rows])

    def test_output_dir(self):
        out = os.path.join(self.useFixture(fixtures.TempDir()).path, 'o')
        args = ['--cards', 'A30-24GB=2', '--demand', '2g.12gb=4',
                '--output-dir', out]
        columns, rows = self.run_cmd(profile.PlanProfile, args)
        self.assertEqual('Script', columns[-1])
        paths = {r[5] for r in rows}
        self.assertEqual(1, len(paths))
        path = paths.pop()
        with open(path) as f:
            text = f.read()
        # explicit start slots; a card not cut has nothing to destroy
        self.assertIn('-cgi 2g.12gb:0 -C', text)
        self.assertIn('-cgi 2g.12gb:2 -C', text)
        self.assertNotIn('-dgi', text)
        # never overwritten: the same plan again is refused
        e = self.assertRaises(exceptions.CommandError, self.run_cmd,
                              profile.PlanProfile, args)
        self.assertIn('exists already', str(e))

    def test_from_usage_refusals_before_any_request(self):
        # the client manager is None: a request would fail otherwise
        for args, text in (
                (['--cards', 'A100-80GB=1', '--from-usage'],
                 'give --pool'),
                (['--pool', 'p', '--from-usage', '--demand', '3g.40gb=1',
                  '--start', '2026-11-01'], 'not both'),
                (['--pool', 'p', '--from-usage'], '--start <time>'),
                (['--pool', 'p', '--demand', '3g.40gb=1', '--start',
                  '2026-11-01'], 'go with --from-usage'),
                (['--pool', 'p', '--from-usage', '--start', 'yesterday'],
                 '--start'),
                (['--pool', 'p', '--from-usage', '--start', '2026-11-02',
                  '--end', '2026-11-01'], 'before')):
            e = self.assertRaises(exceptions.CommandError, self.run_cmd,
                                  profile.PlanProfile, args)
            self.assertIn(text, str(e), args)

    def test_pool_refusals_before_any_request(self):
        for args, text in (
                (['--pool', 'p', '--cards', 'A100-80GB=1', '--demand',
                  '3g.40gb=1'], 'not both'),
                (['--pool', 'p'], '--demand'),
                (['--pool', 'p', '--demand', '3g.40gb=x'], '<count>'),
                (['--cards', 'A100-80GB=1', '--demand', '3g.40gb=1',
                  '--model', 'A100-80GB'], 'go with --pool')):
            e = self.assertRaises(exceptions.CommandError, self.run_cmd,
                                  profile.PlanProfile, args)
            self.assertIn(text, str(e), args)

    def test_refusals(self):
        for args, text in (
                (['--demand', '3g.40gb=1'], '--cards'),
                (['--cards', 'A100-80GB=1'], '--demand'),
                (['--cards', 'A100-80GB=x', '--demand', '3g.40gb=1'],
                 '<model>=<count>'),
                (['--cards', 'V100=1', '--demand', '3g.40gb=1'],
                 'Unknown GPU model'),
                (['--cards', 'A100-80GB=1', '--demand', '5g.1gb=1'],
                 'profile list')):
            e = self.assertRaises(exceptions.CommandError, self.run_cmd,
                                  profile.PlanProfile, args)
            self.assertIn(text, str(e), args)


class TestSolverOutput(base.TestCase):

    def test_nothing_but_the_rows_on_stdout(self):
        # HiGHS prints a banner on file descriptor 1 when a solver is
        # made: -f json would not parse, and it is noise on a terminal.
        # A process of its own, since the banner bypasses Python's
        # sys.stdout. Neither stdout nor stderr shows it.
        code = ('from gpuclient.ops import profile_ops\n'
                'profile_ops.plan_cards({"A100-80GB": 1}, {"3g.40gb": 1})\n'
                'print("after")\n')
        done = subprocess.run([sys.executable, '-c', code],
                              capture_output=True, text=True, check=True)
        self.assertEqual('after\n', done.stdout)
        self.assertNotIn('HiGHS', done.stderr)
        self.assertNotIn('Copyright', done.stderr)
