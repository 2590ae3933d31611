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

"""``openstack gpu device list``, ``show`` and ``release`` against the fake
Placement and Nova (gpuclient.tests.unit.fakes)."""

import io
import json
from unittest import mock

import fixtures
from osc_lib import exceptions

from gpuclient.ops import journal
from gpuclient.tests.unit import base
from gpuclient.tests.unit import fakes
from gpuclient.tests.unit import test_utilisation_commands as tuc
from gpuclient.v1 import device

RC = fakes.OTU_CLASS


class DeviceTestCase(base.CommandTestCase):
    def setUp(self):
        super().setUp()
        self.cloud = fakes.FakeCloud()
        self.cloud.pci_host('gpu-pt-1', used=1, nodename='gpu-pt-1.gpu.test')
        self.cloud.otu_host('gpu-otu-1', count=3)
        self.gpus = [p for p in self.cloud.providers
                     if RC in p.inventory]
        # the first was held by a deleted server: Nova reserved it; the
        # second is held now
        self.cloud.reserve(self.gpus[0])
        self.vm = self.cloud.add_server('vm1', 'gpu-otu-1', gpus={RC: 1})
        self.held = [p for p in self.gpus if p.used.get(RC)][0]
        self.cloud.reserve(self.held)
        self.placement = self.useFixture(fakes.PlacementFixture(self.cloud))
        self.cm = self.useFixture(fakes.ClientManagerFixture(self.cloud))

    def run_cmd(self, cls, args):
        cmd = cls(self.make_app(self.cm.client_manager), None)
        parsed = self.check_parser(cmd, list(args))
        columns, data = cmd.take_action(parsed)
        if cls is device.ShowDevice:
            return dict(zip(columns, data, strict=True))
        return columns, [
            tuple(v.human_readable() if hasattr(v, 'human_readable') else v
                  for v in row) for row in data]

    def release(self, *args):
        """(rows printed with -f json, the CommandError the whole command
        ends with or None): the command as the shell runs it."""
        app = self.make_app(self.cm.client_manager)
        app.stdout = io.StringIO()
        cmd = device.ReleaseDevice(app, None)
        parsed = self.check_parser(cmd, ['-f', 'json', *args])
        try:
            cmd.run(parsed)
            error = None
        except exceptions.CommandError as exc:
            error = exc
        text = app.stdout.getvalue()
        return json.loads(text) if text else None, error

    def inventory_puts(self):
        return [r for r in self.placement.requests()
                if r.method == 'PUT' and '/inventories/' in r.path]


class TestDeviceList(DeviceTestCase):
    def test_rows(self):
        columns, rows = self.run_cmd(device.ListDevice, [])
        self.assertEqual(device.COLUMNS, columns)
        otu = [r for r in rows if r[0] == 'gpu-otu-1']
        self.assertEqual(
            [('0000:41:00.0', 'awaiting-release', '', ''),
             ('0000:42:00.0', 'in-use', 'vm1', 'p1'),
             ('0000:43:00.0', 'free', '', '')],
            [(r[3], r[4], r[5], r[6]) for r in otu])
        self.assertEqual(['free', 'free', 'free', 'in-use'], sorted(
            r[4] for r in rows if r[0] == 'gpu-pt-1'))

    def test_filters(self):
        _c, rows = self.run_cmd(device.ListDevice, ['--awaiting-release'])
        self.assertEqual([('gpu-otu-1', '0000:41:00.0')],
                         [(r[0], r[3]) for r in rows])
        _c, rows = self.run_cmd(device.ListDevice, ['--server', 'vm1'])
        self.assertEqual(['0000:42:00.0'], [r[3] for r in rows])
        _c, rows = self.run_cmd(device.ListDevice,
                                ['--host', 'gpu-pt-1', '--long'])
        self.assertEqual({'gpu-pt-1'}, {r[0] for r in rows})
        self.assertEqual(len(device.COLUMNS + device.LONG_COLUMNS),
                         len(rows[0]))

    def test_unknown_server(self):
        exc = self.assertRaises(exceptions.CommandError, self.run_cmd,
                                device.ListDevice, ['--server', 'nope'])
        self.assertIn('No server with name or ID nope', str(exc))

    def test_requests_do_not_grow_with_idle_devices(self):
        # the snapshot, the servers and one allocation read per device in
        # use: more idle one-time-use hosts cost no request more
        counts = []
        for _round in range(2):
            # the version and class list are read once per process
            self.run_cmd(device.ListDevice, [])
            sent = len(self.placement.requests())
            self.run_cmd(device.ListDevice, [])
            counts.append(len(self.placement.requests()) - sent)
            for i in range(20):
                self.cloud.otu_host('more-%d-%d' % (_round, i), count=4)
        # providers, VCPU candidates, the allocations of the 2 used GPUs
        self.assertEqual([4, 4], counts)


class TestDeviceShow(DeviceTestCase):
    def test_by_host_and_address(self):
        shown = self.run_cmd(device.ShowDevice, ['gpu-otu-1:0000:42:00.0'])
        self.assertEqual('in-use', shown['state'])
        self.assertEqual(self.held.uuid, shown['provider_uuid'])
        self.assertEqual(['vm1'], list(shown['servers'].machine_readable()))
        self.assertTrue(shown['one_time_use'])

    def test_by_uuid(self):
        shown = self.run_cmd(device.ShowDevice, [self.gpus[0].uuid])
        self.assertEqual('awaiting-release', shown['state'])


class TestDeviceRelease(DeviceTestCase):
    def test_release_lowers_reserved_with_the_generation(self):
        generation = self.gpus[0].generation
        _c, rows = self.run_cmd(device.ReleaseDevice,
                                ['gpu-otu-1:0000:41:00.0'])
        self.assertEqual([('0000:41:00.0', 'released')],
                         [(r[2], r[4]) for r in rows])
        self.assertEqual(0, self.gpus[0].inventory[RC]['reserved'])
        puts = self.inventory_puts()
        self.assertEqual(1, len(puts))
        self.assertEqual(generation,
                         puts[0].json()['resource_provider_generation'])
        # every other field kept
        self.assertEqual(dict(fakes.inv(1), reserved=0),
                         self.gpus[0].inventory[RC])
        # a re-run converges: nothing written
        _c, rows = self.run_cmd(device.ReleaseDevice,
                                ['gpu-otu-1:0000:41:00.0'])
        self.assertEqual(['already released'], [r[4] for r in rows])
        self.assertEqual(1, len(self.inventory_puts()))

    def test_dry_run_writes_nothing(self):
        _c, rows = self.run_cmd(device.ReleaseDevice,
                                [self.gpus[0].uuid, '--dry-run'])
        self.assertEqual(['release'], [r[4] for r in rows])
        self.assertEqual([], self.inventory_puts())
        self.assertEqual(1, self.gpus[0].inventory[RC]['reserved'])

    def test_in_use_and_not_one_time_use_fail_n_of_m(self):
        pt = [p for p in self.cloud.providers
              if 'CUSTOM_PCI_10DE_2331' in p.inventory][0]
        rows, exc = self.release(
            'gpu-otu-1:0000:42:00.0', pt.name, 'gpu-otu-1:0000:41:00.0')
        self.assertEqual('2 of 3 devices failed to release.', str(exc))
        # issue 51 defect 13: what was released is printed first
        self.assertEqual([('0000:41:00.0', 'released')],
                         [(r['PCI Address'], r['Action']) for r in rows])
        self.assertIn('is in use (vm1)', self.logger.output)
        self.assertIn('is not a one-time-use device', self.logger.output)
        # the one that could be released was
        self.assertEqual(0, self.gpus[0].inventory[RC]['reserved'])
        self.assertEqual(1, self.held.inventory[RC]['reserved'])
        self.assertEqual(1, len(self.inventory_puts()))

    def test_unknown_device_changes_nothing(self):
        exc = self.assertRaises(
            exceptions.CommandError, self.run_cmd, device.ReleaseDevice,
            ['gpu-otu-1:0000:41:00.0', 'gpu-otu-1:0000:99:00.0'])
        self.assertIn('No GPU device gpu-otu-1:0000:99:00.0', str(exc))
        self.assertEqual([], self.inventory_puts())
        self.assertEqual(1, self.gpus[0].inventory[RC]['reserved'])

    def test_generation_conflict_reads_again(self):
        # Nova (or a claim) writes the provider between gpuclient's read
        # and its write: the 409 is retried from a new read
        real = self.cloud.provider

        def racing(uuid):
            found = real(uuid)
            if found is self.gpus[0] and not racing.done:
                racing.done = True
                found.generation += 1
            return found
        racing.done = False
        self.cloud.provider = racing
        self.run_cmd(device.ReleaseDevice, ['gpu-otu-1:0000:41:00.0'])
        self.assertEqual(0, self.gpus[0].inventory[RC]['reserved'])

    def test_allocation_at_apply_time_is_refused(self):
        # a server took the device between the plan and the write: the
        # client reads the usage and refuses, nothing written
        real = self.cloud.provider

        def taken(uuid):
            found = real(uuid)
            if found is self.gpus[0]:
                found.used[RC] = 1
            return found
        self.cloud.provider = taken
        self.cloud.summary_provider = None
        rows, exc = self.release('gpu-otu-1:0000:41:00.0')
        self.assertEqual('1 of 1 devices failed to release.', str(exc))
        self.assertEqual([], rows)
        self.assertIn('a device in use is not released', self.logger.output)
        self.assertEqual([], self.inventory_puts())

    def test_any_failure_is_one_of_n_and_the_rest_goes_on(self):
        # issue 51 defect 13: a failure that is not a CommandError (a
        # wrongly shaped answer, a bug) costs its own device only: the
        # next one is released, its row printed, the failure logged
        self.cloud.otu_host('gpu-otu-2', count=1)
        other = [p for p in self.cloud.providers
                 if p.name.startswith('gpu-otu-2_')][0]
        self.cloud.reserve(other)
        real = journal.finish
        calls = []

        def finish(client, plan, dry_run=False):
            calls.append(plan.steps[0].operation.name)
            if len(calls) == 1:
                raise KeyError('resource_provider_generation')
            return real(client, plan, dry_run=dry_run)
        with mock.patch.object(journal, 'finish', side_effect=finish):
            rows, exc = self.release('gpu-otu-1:0000:41:00.0',
                                     'gpu-otu-2:0000:41:00.0')
        self.assertEqual(['gpu-otu-1_0000:41:00.0',
                          'gpu-otu-2_0000:41:00.0'], calls)
        self.assertEqual('1 of 2 devices failed to release.', str(exc))
        self.assertEqual([('gpu-otu-2', 'released')],
                         [(r['Host'], r['Action']) for r in rows])
        self.assertIn('Failed to release gpu-otu-1_0000:41:00.0: '
                      "'resource_provider_generation'", self.logger.output)
        self.assertEqual(1, self.gpus[0].inventory[RC]['reserved'])
        self.assertEqual(0, other.inventory[RC]['reserved'])
        self.assertEqual(1, len(self.inventory_puts()))

    def test_an_interruption_stops_the_rest(self):
        # Ctrl-C during the first release: the journal undid it, and the
        # second device is not released (counted, named), unlike a failure
        import signal

        self.cloud.otu_host('gpu-otu-2', count=1)
        other = [p for p in self.cloud.providers
                 if p.name.startswith('gpu-otu-2_')][0]
        self.cloud.reserve(other)

        def finish(client, plan, dry_run=False):
            raise journal.ApplyError('gpu device release was interrupted '
                                     'by SIGINT', interrupted=signal.SIGINT)
        with mock.patch.object(journal, 'finish', side_effect=finish):
            rows, exc = self.release('gpu-otu-1:0000:41:00.0',
                                     'gpu-otu-2:0000:41:00.0')
        self.assertEqual('2 of 2 devices failed to release.', str(exc))
        self.assertEqual([], rows)
        self.assertIn('Not tried, as the command was interrupted: '
                      'gpu-otu-2_0000:41:00.0', self.logger.output)
        self.assertEqual(1, other.inventory[RC]['reserved'])
        self.assertEqual([], self.inventory_puts())


class TestDeviceHealthColumns(DeviceTestCase):
    """device list --long and show with the cloud's Prometheus: whose the
    XID is, since when, and whose series say so (issue 51)."""

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.EnvironmentVariable(
            'GPUCLIENT_PROMETHEUS_URL'))
        self.prometheus = tuc.FakePrometheus(self.placement.mock)
        self.url = tuc.PROM
        _columns, rows = self.run_cmd(device.ListDevice, [])
        self.pt = sorted(r[3] for r in rows if r[0] == 'gpu-pt-1')
        # the host's exporter: XID 79 on the first passthrough GPU, none
        # on the second; the exporter inside vm1 (its one-time-use GPU
        # has no host-side series) says 79 too: its word
        self.prometheus.series = [
            (tuc.host_labels('gpu-pt-1', '0000' + self.pt[0].upper()),
             {'DCGM_FI_DEV_XID_ERRORS': [79]}),
            (tuc.host_labels('gpu-pt-1', '0000' + self.pt[1].upper()),
             {'DCGM_FI_DEV_XID_ERRORS': [0]}),
            ({'instance_id': self.vm['id'], 'pci_bus_id': '00000000:05:00.0',
              'gpu': '0'}, {'DCGM_FI_DEV_XID_ERRORS': [79]}),
        ]

    def test_long_columns_and_show_fields(self):
        columns, rows = self.run_cmd(device.ListDevice, [
            '--long', '--prometheus', self.url])
        self.assertEqual(device.COLUMNS + device.LONG_COLUMNS
                         + device.HEALTH_COLUMNS
                         + device.LONG_HEALTH_COLUMNS, columns)
        got = {(r[0], r[3]): dict(zip(columns, r, strict=True))
               for r in rows}

        def fields(host, pci):
            row = got[(host, pci)]
            return tuple(row[c] for c in ('Last XID', 'XID Class',
                                          'Health Source'))

        self.assertEqual((79, 'host', 'host'),
                         fields('gpu-pt-1', self.pt[0]))
        # the fake's samples have no times: held since before the lookback
        self.assertTrue(got[('gpu-pt-1', self.pt[0])]['XID Since']
                        .startswith('before '))
        self.assertEqual((0, None, 'host'), fields('gpu-pt-1', self.pt[1]))
        self.assertEqual((79, 'host', 'guest'),
                         fields('gpu-otu-1', '0000:42:00.0'))
        # only the host's series make a device unhealthy
        _columns, rows = self.run_cmd(device.ListDevice, [
            '--unhealthy', '--prometheus', self.url])
        self.assertEqual([('gpu-pt-1', self.pt[0])],
                         [(r[0], r[3]) for r in rows])
        shown = self.run_cmd(device.ShowDevice, [
            'gpu-otu-1:0000:42:00.0', '--prometheus', self.url])
        self.assertEqual((79, 'host', 'guest'), (
            shown['last_xid'], shown['xid_class'], shown['health_source']))
        self.assertIn('xid_since', shown)


class TestNoHealth(DeviceTestCase):
    """device list --no-health where a Prometheus is configured: the
    columns of a cloud without one, and no request to Prometheus (issue
    57 item 4)."""

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.EnvironmentVariable(
            'GPUCLIENT_PROMETHEUS_URL', tuc.PROM))
        self.prometheus = tuc.FakePrometheus(self.placement.mock)

    def prometheus_requests(self):
        return [r for r in self.placement.mock.request_history
                if r.url.startswith(tuc.PROM)]

    def test_configured_prometheus_is_read_by_default(self):
        columns, _rows = self.run_cmd(device.ListDevice, [])
        self.assertEqual(device.COLUMNS + device.HEALTH_COLUMNS, columns)
        self.assertTrue(self.prometheus_requests())

    def test_no_health_sends_no_query(self):
        for args in ([], ['--long'], ['-f', 'openmetrics']):
            columns, rows = self.run_cmd(device.ListDevice,
                                         ['--no-health', *args])
            long = bool(args)
            self.assertEqual(device.COLUMNS + (
                device.LONG_COLUMNS if long else ()), columns)
            self.assertEqual(7, len(rows))
        self.assertEqual([], self.prometheus_requests())
        self.assertEqual([], self.prometheus.queries)

    def test_no_health_with_an_option_asking_prometheus(self):
        sent = len(self.placement.mock.request_history)
        for option in (['--unhealthy'], ['--prometheus', tuc.PROM],
                       ['--prometheus-selector', 'region=r1'],
                       ['--window', '2h']):
            exc = self.assertRaises(
                exceptions.CommandError, self.run_cmd, device.ListDevice,
                ['--no-health', *option])
            self.assertIn('--no-health reads nothing from Prometheus, and '
                          '%s asks it' % option[0], str(exc))
        self.assertEqual(sent, len(self.placement.mock.request_history))

    def test_help_says_what_it_leaves_out(self):
        text = device.ListDevice(self.make_app(None), None).get_parser(
            'gpu device list').format_help()
        self.assertIn('--no-health', text)
        self.assertIn('send no query to Prometheus', ' '.join(text.split()))
