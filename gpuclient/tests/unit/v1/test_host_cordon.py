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

"""``openstack gpu host cordon`` and ``uncordon`` against the unit fake:
parsers, rows, what Nova holds afterwards, and the undo of a failure."""

import os

import fixtures
from osc_lib import exceptions

from gpuclient.tests.unit import base
from gpuclient.tests.unit import fakes
from gpuclient.v1 import host

COLUMNS = ('Host', 'Status', 'Reason', 'Action')


class CordonTestCase(base.CommandTestCase):

    def setUp(self):
        super().setUp()
        self.cloud = fakes.FakeCloud()
        self.cloud.pci_host('gpu-pt-1', nodename='gpu-pt-1.gpu.test')
        self.cloud.pci_host('gpu-pt-2')
        self.cloud.vgpu_host('gpu-vgpu-1')
        self.useFixture(fakes.PlacementFixture(self.cloud))
        self.cm = self.useFixture(fakes.ClientManagerFixture(self.cloud))

    def run_cmd(self, cls, args):
        cmd = cls(self.make_app(self.cm.client_manager), None)
        parsed = self.check_parser(cmd, list(args))
        return cmd.take_action(parsed)

    def service_id(self, name):
        return [s.id for s in self.cm.nova.services() if s.host == name][0]

    def writes(self):
        return [c for c in self.cm.nova.calls if c[0] == 'service']


class TestParsers(CordonTestCase):

    def test_cordon(self):
        cmd = host.CordonHost(self.make_app(None), None)
        parsed = self.check_parser(
            cmd, ['h1', 'h2', '--reason', 'PSU', '--dry-run'])
        self.assertEqual(['h1', 'h2'], parsed.hosts)
        self.assertEqual('PSU', parsed.reason)
        self.assertTrue(parsed.dry_run)

    def test_uncordon(self):
        cmd = host.UncordonHost(self.make_app(None), None)
        parsed = self.check_parser(cmd, ['h1'])
        self.assertEqual(['h1'], parsed.hosts)
        self.assertFalse(parsed.dry_run)
        self.assertFalse(parsed.force)
        self.assertTrue(self.check_parser(cmd, ['h1', '--force']).force)

    def test_a_host_is_required(self):
        for cls in (host.CordonHost, host.UncordonHost):
            cmd = cls(self.make_app(None), None)
            self.assertRaises(base.ParserError, self.check_parser,
                              cmd, [])


class TestCordon(CordonTestCase):

    def test_disables_with_our_reason(self):
        columns, rows = self.run_cmd(
            host.CordonHost, ['gpu-pt-1', 'gpu-vgpu-1', '--reason', 'PSU'])
        self.assertEqual(COLUMNS, columns)
        self.assertEqual([
            ('gpu-pt-1', 'disabled', 'gpuclient: PSU', 'cordon'),
            ('gpu-vgpu-1', 'disabled', 'gpuclient: PSU', 'cordon')], rows)
        self.assertEqual({'gpu-pt-1', 'gpu-vgpu-1'}, self.cloud.disabled)
        self.assertEqual('gpuclient: PSU',
                         self.cloud.disabled_reasons['gpu-pt-1'])
        # by uuid, at 2.53
        self.assertIn(('put', '/os-services/%s'
                       % self.service_id('gpu-pt-1'), '2.53'),
                      self.cm.nova.sent)

    def test_hypervisor_hostname_resolves(self):
        _columns, rows = self.run_cmd(host.CordonHost,
                                      ['gpu-pt-1.gpu.test'])
        self.assertEqual('gpu-pt-1', rows[0][0])
        self.assertEqual({'gpu-pt-1'}, self.cloud.disabled)

    def test_dry_run_changes_nothing(self):
        _columns, rows = self.run_cmd(host.CordonHost,
                                      ['gpu-pt-1', '--dry-run'])
        self.assertEqual([('gpu-pt-1', 'enabled', 'gpuclient: maintenance',
                           'cordon')], rows)
        self.assertEqual(set(), self.cloud.disabled)
        self.assertEqual([], self.writes())

    def test_disabled_service_left_as_it_is(self):
        self.cloud.disabled.add('gpu-pt-1')
        self.cloud.disabled_reasons['gpu-pt-1'] = 'broken fan'
        _columns, rows = self.run_cmd(host.CordonHost, ['gpu-pt-1'])
        self.assertEqual('disabled by someone else: left alone', rows[0][3])
        self.assertEqual('broken fan', self.cloud.disabled_reasons[
            'gpu-pt-1'])
        self.assertEqual([], self.writes())

    def test_rerun_is_a_no_op(self):
        self.run_cmd(host.CordonHost, ['gpu-pt-1'])
        _columns, rows = self.run_cmd(host.CordonHost, ['gpu-pt-1'])
        self.assertEqual('already cordoned', rows[0][3])
        self.assertEqual(1, len(self.writes()))

    def test_unknown_host(self):
        self.assertRaises(exceptions.CommandError, self.run_cmd,
                          host.CordonHost, ['no-such-host'])
        self.assertEqual([], self.writes())

    def test_failure_enables_again_what_it_disabled(self):
        self.cm.nova.fail[('put', self.service_id('gpu-pt-2'))] = 403
        exc = self.assertRaises(exceptions.CommandError, self.run_cmd,
                                host.CordonHost, ['gpu-pt-1', 'gpu-pt-2'])
        self.assertIn('gpu-pt-2', str(exc))
        # gpu-pt-1 was disabled, then enabled again by the undo
        pt1 = self.service_id('gpu-pt-1')
        self.assertEqual([('service', pt1, 'disabled'),
                          ('service', self.service_id('gpu-pt-2'),
                           'disabled'),
                          ('service', pt1, 'enabled')], self.writes())
        self.assertEqual(set(), self.cloud.disabled)

    def test_lower_compute_version_refused_before_any_request(self):
        self.cm = self.useFixture(fakes.ClientManagerFixture(
            self.cloud, compute_api_version='2.50'))
        exc = self.assertRaises(exceptions.CommandError, self.run_cmd,
                                host.CordonHost, ['gpu-pt-1'])
        self.assertIn('2.53', str(exc))
        self.assertEqual([], self.cm.nova.sent)


class TestUncordon(CordonTestCase):

    def test_enables_ours_and_names_theirs(self):
        self.run_cmd(host.CordonHost, ['gpu-pt-1'])
        self.cloud.disabled.add('gpu-pt-2')
        self.cloud.disabled_reasons['gpu-pt-2'] = 'broken fan'
        with self.assertLogs('gpuclient.v1.host', 'WARNING') as logs:
            columns, rows = self.run_cmd(
                host.UncordonHost, ['gpu-pt-1', 'gpu-pt-2', 'gpu-vgpu-1'])
        self.assertEqual(COLUMNS, columns)
        self.assertEqual([
            ('gpu-pt-1', 'enabled', None, 'uncordon'),
            ('gpu-pt-2', 'disabled', 'broken fan',
             'disabled by someone else: left alone'),
            ('gpu-vgpu-1', 'enabled', None, 'already enabled')], rows)
        self.assertEqual({'gpu-pt-2'}, self.cloud.disabled)
        self.assertIn('gpu-pt-2 (broken fan)', '\n'.join(logs.output))

    def test_dry_run_changes_nothing(self):
        self.run_cmd(host.CordonHost, ['gpu-pt-1'])
        self.run_cmd(host.UncordonHost, ['gpu-pt-1', '--dry-run'])
        self.assertEqual({'gpu-pt-1'}, self.cloud.disabled)

    def test_a_drains_host_needs_force(self):
        self.cloud.disabled.add('gpu-pt-1')
        self.cloud.disabled_reasons['gpu-pt-1'] = (
            'gpuclient: draining: bob fw')
        exc = self.assertRaises(exceptions.CommandError, self.run_cmd,
                                host.UncordonHost, ['gpu-pt-1'])
        self.assertIn('gpuclient: draining: bob fw', str(exc))
        self.assertEqual([], self.writes())
        _columns, rows = self.run_cmd(host.UncordonHost,
                                      ['gpu-pt-1', '--force'])
        self.assertEqual('uncordon', rows[0][3])
        self.assertEqual(set(), self.cloud.disabled)


class TestDrain(CordonTestCase):
    """``gpu host drain --dry-run``: the plan rows, nothing changed."""

    def setUp(self):
        super().setUp()
        from gpuclient.rules import pools as pools_mod
        from gpuclient.rules import specs

        spec = pools_mod.build_spec('solver', 'passthrough', alias='h100',
                                    pci_id='10de:2331')
        pool = fakes.Aggregate('solver', pools_mod.metadata_for(spec),
                               ['gpu-pt-1', 'gpu-pt-2'])
        self.cloud.aggregates.append(pool)
        # Nova marks its compute node providers OWNER_NOVA, and a
        # server's request requires it on the root
        for provider in self.cloud.providers:
            if provider.parent is None:
                provider.traits.append('OWNER_NOVA')
        scanned, _problems = pools_mod.scan([pools_mod.aggregate_dict(pool)])
        derived = specs.derive(scanned['solver'], gpus=1)
        pool.metadata.update(derived['aggregate_metadata'])
        self.cloud.servers.append({
            'id': fakes.uid('server-a'), 'name': 'a', 'status': 'ACTIVE',
            'OS-EXT-SRV-ATTR:host': 'gpu-pt-1', 'tenant_id': 'p1',
            'image': {'id': 'img'},
            'flavor': {'original_name': 'gpu.1', 'vcpus': 2, 'ram': 1024,
                       'disk': 10, 'ephemeral': 0, 'swap': 0,
                       'extra_specs': derived['extra_specs']}})

    def test_cold_to_the_other_pool_host_with_downtime_allowed(self):
        columns, rows = self.run_cmd(host.DrainHost, [
            'gpu-pt-1', '--dry-run', '--allow-downtime'])
        self.assertEqual('Destination', columns[9])
        self.assertEqual(1, len(rows))
        row = dict(zip(columns, rows[0], strict=True))
        self.assertEqual(('a', 'cold', 'gpu-pt-2', 'stop-start'),
                         (row['Name'], row['Method'], row['Destination'],
                          row['Downtime']))
        self.assertEqual([], self.writes())

    def test_stays_without_downtime(self):
        columns, rows = self.run_cmd(host.DrainHost,
                                     ['gpu-pt-1', '--dry-run'])
        row = dict(zip(columns, rows[0], strict=True))
        self.assertEqual('stays', row['Method'])
        self.assertIsNone(row['Destination'])
        self.assertTrue(row['Reason'])

    def test_a_server_that_cannot_leave_refuses_before_any_write(self):
        exc = self.assertRaises(exceptions.CommandError, self.run_cmd,
                                host.DrainHost, ['gpu-pt-1'])
        self.assertIn('Nothing was changed', str(exc))
        self.assertIn('a (%s)' % fakes.uid('server-a'), str(exc))
        self.assertIn('--skip-unmovable', str(exc))
        self.assertEqual([], self.writes())
        self.assertEqual(set(), self.cloud.disabled)

    def test_skip_unmovable_cordons_and_moves_nothing(self):
        columns, rows = self.run_cmd(host.DrainHost,
                                     ['gpu-pt-1', '--skip-unmovable'])
        row = dict(zip(columns, rows[0], strict=True))
        self.assertEqual('stays', row['Method'])
        self.assertEqual({'gpu-pt-1'}, self.cloud.disabled)
        # the drain's cordon, then the ordinary one once it is over
        self.assertEqual([('service', self.service_id('gpu-pt-1'),
                           'disabled')] * 2, self.writes())
        self.assertEqual('gpuclient: maintenance',
                         self.cloud.disabled_reasons['gpu-pt-1'])

    def test_notices_are_written_per_project(self):
        where = self.useFixture(fixtures.TempDir()).path
        self.run_cmd(host.DrainHost, ['gpu-pt-1', '--dry-run',
                                      '--allow-downtime', '--notice-dir',
                                      where, '--reason', 'firmware'])
        with open(os.path.join(where, 'drain-notice-p1.txt')) as notice:
            text = notice.read()
        self.assertIn('gpu-pt-1', text)
        self.assertIn('firmware', text)
        self.assertIn('cold-migrated to gpu-pt-2', text)
        self.assertEqual([], self.writes())
        # never overwritten
        exc = self.assertRaises(
            exceptions.CommandError, self.run_cmd, host.DrainHost,
            ['gpu-pt-1', '--dry-run', '--notice-dir', where])
        self.assertIn('drain-notice-p1.txt', str(exc))

    def test_timeout_must_be_positive(self):
        self.assertRaises(exceptions.CommandError, self.run_cmd,
                          host.DrainHost, ['gpu-pt-1', '--timeout', '0'])
