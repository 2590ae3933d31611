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

"""One exit-status scheme, diff(1)'s, for every command a pipeline gates
on: 0 same, 1 different or findings, 2 trouble, authentication included."""

import io
import os
from unittest import mock

from keystoneauth1 import exceptions as ks_exceptions

from gpuclient import exit_status
from gpuclient.rules import checks
from gpuclient.rules import document
from gpuclient.tests.unit import base
from gpuclient.tests.unit.v1 import test_check
from gpuclient.tests.unit.v1 import test_config
from gpuclient.v1 import check as check_cmd
from gpuclient.v1 import common
from gpuclient.v1 import config as config_cmd
from gpuclient.v1 import document as document_cmd

GATED = (check_cmd.Check, document_cmd.DiffDocument, config_cmd.ShowConfig)


def help_text(cls):
    cmd = cls(mock.Mock(), None)
    return ' '.join(cmd.get_parser('openstack gpu x').format_help().split())


class TestScheme(base.TestCase):
    def test_diff_1_scheme(self):
        self.assertEqual((0, 1, 2), (exit_status.SAME, exit_status.DIFFERENT,
                                     exit_status.TROUBLE))
        # the rules' names are the same numbers
        self.assertEqual((0, 1, 2), (checks.EXIT_CLEAN, checks.EXIT_FINDINGS,
                                     checks.EXIT_NOT_RUN))
        self.assertEqual((0, 1, 2), (document.EXIT_IN_SYNC,
                                     document.EXIT_DRIFT,
                                     document.EXIT_ERROR))

    def test_every_gated_command_says_it_in_its_help(self):
        for cls in GATED:
            self.assertTrue(issubclass(cls, common.Gated), cls)
            self.assertFalse(cls.auth_required, cls)
            text = help_text(cls)
            self.assertIn('Exit status', text, cls)
            self.assertIn("diff(1)'s scheme", text, cls)
            self.assertNotIn('%(', text, cls)

    def test_no_other_command_defers_authentication(self):
        # the shell authenticates every other command as OSC's own
        import importlib

        from gpuclient.tests.unit import test_startup

        found = []
        for target in test_startup.startup_targets():
            module, _sep, name = target.partition(':')
            if not name:
                continue
            cls = getattr(importlib.import_module(module), name)
            if getattr(cls, 'auth_deferred', False):
                found.append(cls)
        self.assertEqual(set(GATED), set(found))


class TestCheckAuthentication(test_check.CheckTestCase):
    def test_authentication_failure_is_trouble(self):
        self.app.prepare_to_run_command.side_effect = (
            ks_exceptions.Unauthorized('The request you have made requires '
                                       'authentication. (HTTP 401)'))
        parsed = self.check_parser(self.cmd, ['-f', 'json'])
        self.assertEqual(exit_status.TROUBLE, self.cmd.run(parsed))
        self.assertIn('HTTP 401', self.logger.output)
        self.assertEqual('', self.app.stdout.getvalue())

    def test_authenticates_through_the_shell_before_reading(self):
        calls = []
        self.app.prepare_to_run_command.side_effect = (
            lambda cmd: calls.append(cmd.auth_required))
        self.cloud.mirror()
        parsed = self.check_parser(self.cmd, ['-f', 'json'])
        self.assertEqual(exit_status.SAME, self.cmd.run(parsed))
        self.assertEqual([True], calls)


class TestConfigShowDiff(test_config.ConfigTestCase):
    def run_status(self, *args, auth_error=None):
        cm = mock.Mock()
        cm.gpu = self.client
        app = self.make_app(cm)
        if auth_error:
            app.prepare_to_run_command.side_effect = auth_error
        self.stdout = app.stdout = io.StringIO()
        cmd = config_cmd.ShowConfig(app, None)
        cmd.app_args = mock.Mock(debug=False)
        parsed = self.check_parser(cmd, list(args))
        return cmd.run(parsed)

    def test_same_different_trouble(self):
        self.assertEqual(exit_status.SAME, self.run_status(
            '--layout', 'kolla', '--output-dir', self.out))
        self.assertEqual(exit_status.SAME, self.run_status(
            '--diff', self.out))
        os.unlink(os.path.join(self.out, 'nova/gpu-vgpu-1/nova.conf'))
        self.assertEqual(exit_status.DIFFERENT, self.run_status(
            '--diff', self.out))
        self.assertIn('+ [mdev_nvidia-35]', self.stdout.getvalue())
        missing = os.path.join(self.out, 'nope.conf')
        self.assertEqual(exit_status.TROUBLE, self.run_status(
            '--diff', missing))
        self.assertIn('Cannot read %s' % missing, self.logger.output)
        self.assertEqual(exit_status.TROUBLE, self.run_status(
            '--diff', self.out, auth_error=ks_exceptions.ConnectFailure(
                'Unable to establish connection')))

    def test_without_diff_an_error_is_cliffs(self):
        # no gate: the error goes to cliff, which exits 1 as for any command
        self.assertRaises(ks_exceptions.ConnectFailure, self.run_status,
                          auth_error=ks_exceptions.ConnectFailure('down'))
        self.assertEqual(0, self.run_status())
