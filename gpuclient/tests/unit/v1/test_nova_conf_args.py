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

"""The nova.conf options, one set for every command that reads nova.conf.

``gpu candidate list``, ``gpu capacity list``, ``gpu check`` and ``gpu quota
show`` take --nova-conf and --nova-conf-dir with the same help (and the
environment variables $GPUCLIENT_NOVA_CONF and $GPUCLIENT_NOVA_CONF_DIR);
candidates and capacity, which build Nova's request from the settings,
also --setting and --alias-map.
"""

import os
from unittest import mock

import fixtures

from gpuclient.cloud import identity as identity_mod
from gpuclient.ops import nova_settings
from gpuclient.rules import capacity as capacity_rules
from gpuclient.rules import checks as checks_rules
from gpuclient.tests.unit import base
from gpuclient.tests.unit import test_quota
from gpuclient.tests.unit.v1 import test_capacity
from gpuclient.tests.unit.v1 import test_check
from gpuclient.v1 import candidates as candidates_cmd
from gpuclient.v1 import capacity as capacity_cmd
from gpuclient.v1 import check as check_cmd
from gpuclient.v1 import common
from gpuclient.v1 import quota as quota_cmd

COMMANDS = {
    'candidates': candidates_cmd.ListCandidate,
    'capacity': capacity_cmd.ListCapacity,
    'check': check_cmd.Check,
    'quota show': quota_cmd.ShowQuota,
}
CONF_OPTIONS = ('--nova-conf', '--nova-conf-dir')
OVERRIDE_OPTIONS = ('--setting', '--alias-map')
UNIFIED = '[quota]\ndriver = nova.quota.UnifiedLimitsDriver\n'


def options(cls):
    """{option string: help} of a command's parser."""
    parser = cls(mock.Mock(), None).get_parser('openstack')
    return {opt: action.help for action in parser._actions
            for opt in action.option_strings}


class ConfDirMixin:
    """A temporary conf directory, and no nova.conf in the environment."""

    def clean_environment(self):
        for name in (nova_settings.CONF_ENV, nova_settings.CONF_DIR_ENV):
            self.useFixture(fixtures.EnvironmentVariable(name))

    def conf_dir(self, text, name='50-gpu.conf'):
        folder = self.useFixture(fixtures.TempDir()).path
        with open(os.path.join(folder, name), 'w') as out:
            out.write(text)
        return folder


class TestOptions(base.TestCase):
    def test_same_options_and_help(self):
        found = {name: options(cls) for name, cls in COMMANDS.items()}
        for option in CONF_OPTIONS:
            helps = {name: opts.get(option) for name, opts in found.items()}
            self.assertNotIn(None, helps.values(), option)
            self.assertEqual(1, len(set(helps.values())), (option, helps))
        for option in OVERRIDE_OPTIONS:
            self.assertEqual(
                {'candidates', 'capacity'},
                {name for name, opts in found.items() if option in opts},
                option)
            self.assertEqual(found['candidates'][option],
                             found['capacity'][option])
        # the help names the environment variables
        self.assertIn('$GPUCLIENT_NOVA_CONF,',
                      found['check']['--nova-conf'])
        self.assertIn('$GPUCLIENT_NOVA_CONF_DIR',
                      found['check']['--nova-conf-dir'])


class TestNovaConfGiven(ConfDirMixin, base.TestCase):
    def setUp(self):
        super().setUp()
        self.clean_environment()

    def parsed(self, nova_conf=None, nova_conf_dir=None):
        return mock.Mock(nova_conf=nova_conf, nova_conf_dir=nova_conf_dir)

    def test_options_and_environment(self):
        self.assertFalse(common.nova_conf_given(self.parsed()))
        self.assertTrue(common.nova_conf_given(
            self.parsed(nova_conf=['a.conf'])))
        self.assertTrue(common.nova_conf_given(
            self.parsed(nova_conf_dir=['d'])))
        self.useFixture(fixtures.EnvironmentVariable(
            nova_settings.CONF_DIR_ENV, '/etc/nova/nova.conf.d'))
        self.assertTrue(common.nova_conf_given(self.parsed()))
        self.useFixture(fixtures.EnvironmentVariable(
            nova_settings.CONF_DIR_ENV))
        self.useFixture(fixtures.EnvironmentVariable(
            nova_settings.CONF_ENV, '/etc/nova/nova.conf'))
        self.assertTrue(common.nova_conf_given(self.parsed()))


class TestCheckReadsConfDir(ConfDirMixin, test_check.CheckTestCase):
    def setUp(self):
        super().setUp()
        self.clean_environment()

    def settings_seen(self, *args):
        with mock.patch.object(checks_rules, 'run',
                               return_value=[]) as run:
            self.rows(*args)
        return run.call_args[0][1]

    def test_dir_option_and_environment(self):
        folder = self.conf_dir('[scheduler]\nmax_placement_results = 7\n')
        self.assertIsNone(self.settings_seen())
        settings = self.settings_seen('--nova-conf-dir', folder)
        self.assertEqual(7, settings['max_placement_results'])
        self.assertIn('50-gpu.conf', settings['file'])
        # $GPUCLIENT_NOVA_CONF_DIR alone is a nova.conf too
        self.useFixture(fixtures.EnvironmentVariable(
            nova_settings.CONF_DIR_ENV, folder))
        settings = self.settings_seen()
        self.assertEqual(7, settings['max_placement_results'])


class TestQuotaShowReadsConfDir(ConfDirMixin, base.CommandTestCase):
    def setUp(self):
        super().setUp()
        self.clean_environment()
        self.gpu = mock.Mock()
        self.gpu.compute.aggregates.return_value = [
            test_quota.aggregate('h100', test_quota.PT)]
        self.gpu.project_id.side_effect = lambda name, domain=None: (
            'p-' + name)
        self.limits = self.gpu.limits = mock.Mock(spec=identity_mod.Limits)
        self.limits.limits.return_value = []
        self.limits.registered.return_value = {
            'class:%s' % test_quota.PT: {'id': 'r', 'limit': 4}}
        self.gpu.placement.project_usages.return_value = {}
        self.gpu.compute.max_version.return_value = (2, 104)
        # Nova's legacy figures, which Keystone does not hold
        self.gpu.compute.project_limits.return_value = {
            'maxTotalInstances': 10, 'maxTotalCores': 20,
            'maxTotalRAMSize': 51200}

    def run_cmd(self, cls, args):
        cmd = cls(self.make_app(mock.Mock(gpu=self.gpu)), None)
        return cmd.take_action(self.check_parser(cmd, args))

    def test_without_conf_nova_answer_decides(self):
        self.run_cmd(quota_cmd.ShowQuota, ['--project', 'team'])
        self.gpu.compute.project_limits.assert_called_once_with('p-team')
        self.assertIn('Nova does not enforce GPU quotas', self.logger.output)

    def test_dir_environment_alone_is_read(self):
        self.useFixture(fixtures.EnvironmentVariable(
            nova_settings.CONF_DIR_ENV, self.conf_dir(UNIFIED)))
        self.run_cmd(quota_cmd.ShowQuota, ['--project', 'team'])
        # nova.conf says unified limits: Nova's answer is not needed
        self.gpu.compute.project_limits.assert_not_called()
        self.assertNotIn('Nova does not enforce', self.logger.output)

    def test_dir_option(self):
        self.run_cmd(quota_cmd.ShowQuota, [
            '--project', 'team', '--nova-conf-dir',
            self.conf_dir('[quota]\ndriver = nova.quota.NoopQuotaDriver\n')])
        self.gpu.compute.project_limits.assert_not_called()
        self.assertIn('nova.conf [quota] driver = '
                      'nova.quota.NoopQuotaDriver', self.logger.output)


class TestCapacityReadsConfDir(ConfDirMixin, test_capacity.CapacityTestCase):
    def setUp(self):
        super().setUp()
        self.clean_environment()

    def settings_seen(self, *args):
        with mock.patch.object(capacity_rules, 'rows',
                               return_value=[]) as rows:
            self.run_cmd(*args)
        return rows.call_args[0][1]

    def test_dir_setting_and_alias_map(self):
        folder = self.conf_dir('[scheduler]\nmax_placement_results = 7\n'
                               '[filter_scheduler]\n'
                               'pci_in_placement = false\n')
        settings = self.settings_seen(
            '--nova-conf-dir', folder, '--setting',
            'max_placement_results=9', '--alias-map', 'a100=CUSTOM_A100')
        self.assertFalse(settings['pci_in_placement'])
        # --setting wins over the files
        self.assertEqual(9, settings['max_placement_results'])
        self.assertEqual('CUSTOM_A100',
                         settings['aliases']['a100']['resource_class'])
        self.useFixture(fixtures.EnvironmentVariable(
            nova_settings.CONF_DIR_ENV, folder))
        self.assertEqual(7, self.settings_seen()['max_placement_results'])
