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

"""The health window of gpu device list --long, at its edges, against a
fake Prometheus that evaluates the queries over timestamped samples (a
gauge scraped every 15 s; range selectors and subqueries as Prometheus
2.42, the test cloud's, evaluates them): an XID that changed exactly at
the window's start, just after it, just before its end, exactly at the
query's time, after it, and one held since before the lookback.

Also the fake itself: a range selector reads only the samples in its
window, an instant one only the last within the lookback.
"""

from unittest import mock

import fixtures
import requests

from gpuclient.ops import device_ops
from gpuclient.rules.devices import health as dh
from gpuclient.tests.unit import test_utilisation_commands as tuc
from gpuclient.tests.unit.v1 import test_device
from gpuclient.v1 import device

# the query's time (a multiple of every subquery step of a 1 h window:
# 15 s, 60 s, 2420 s), and the window
NOW = 1700000000 - 1700000000 % 36300
WINDOW = 3600
XID = 'DCGM_FI_DEV_XID_ERRORS'


class WindowCase(test_device.DeviceTestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.EnvironmentVariable(
            'GPUCLIENT_PROMETHEUS_URL'))
        self.useFixture(fixtures.MockPatchObject(
            device_ops.time, 'time', return_value=NOW))
        self.prometheus = tuc.FakePrometheus(self.placement.mock)
        _columns, rows = self.run_cmd(device.ListDevice, [])
        self.pt = sorted(r[3] for r in rows if r[0] == 'gpu-pt-1')

    def reading(self, changes, start=NOW - 15 * 86400):
        """Last XID, since when, and its class for the device whose
        gauge changes at CHANGES [(epoch seconds, value)]."""
        self.prometheus.series = [(
            tuc.host_labels('gpu-pt-1', '0000' + self.pt[0].upper()),
            {XID: tuc.scraped(changes, start, NOW + 600)})]
        annotated = []

        def spy(*args, **kwargs):
            annotated.extend(real(*args, **kwargs))
            return annotated

        real = dh.annotate
        with mock.patch.object(device_ops.device_health, 'annotate',
                               side_effect=spy):
            columns, rows = self.run_cmd(device.ListDevice, [
                '--long', '--prometheus', tuc.PROM, '--window', '1h'])
        row = [dict(zip(columns, r, strict=True)) for r in rows
               if (r[0], r[3]) == ('gpu-pt-1', self.pt[0])][0]
        # in the window or not (gpu check's gpu-application-xid)
        recent = [r['xid_recent'] for r in annotated
                  if r['pci_address'] == self.pt[0]
                  and r['host'] == 'gpu-pt-1']
        return (row['Last XID'], row['XID Since'], row['XID Class'],
                recent == [True])


class TestHealthWindow(WindowCase):

    def test_edges(self):
        start = NOW - WINDOW
        cases = [
            # (when the gauge went from 0 to 79, the XID since shown, in
            # the window)
            # exactly at the window's start: held through the window,
            # dated at its start (clamped), not in it
            (start, dh.when_text(start), False),
            # one scrape later: in the window, to within a step (15 s)
            (start + 15, dh.when_text(start + 15), True),
            (start + 1, dh.when_text(start + 15), True),
            # just before the end, and exactly at the query's time
            (NOW - 15, dh.when_text(NOW - 15), True),
            (NOW, dh.when_text(NOW), True),
            # the day before the window: to the minute, not in it
            (start - 3600, dh.when_text(start - 3600), False),
            (start - 61, dh.when_text(start - 60), False),
        ]
        for changed, since, recent in cases:
            self.assertEqual(
                (79, since, dh.XID_HOST, recent),
                self.reading([(NOW - 2 * 86400, 0), (changed, 79)]),
                changed - NOW)

    def test_a_query_time_between_steps(self):
        """The query's time is no multiple of the steps: a change between
        the window's start and its first step is not seen in the window
        (to within one step), and the day's coarser answer, which rounds
        it up into the window, is clamped to the window's start."""
        self.useFixture(fixtures.MockPatchObject(
            device_ops.time, 'time', return_value=NOW + 7))
        start = NOW + 7 - WINDOW
        self.assertEqual(
            (79, dh.when_text(start), dh.XID_HOST, False),
            self.reading([(NOW - 2 * 86400, 0), (start + 3, 79)]))
        # after the first step (start + 8): in the window, dated at the
        # next step
        self.assertEqual(
            (79, dh.when_text(start + 23), dh.XID_HOST, True),
            self.reading([(NOW - 2 * 86400, 0), (start + 9, 79)]))

    def test_after_the_query_time_is_not_seen(self):
        self.assertEqual((0, None, None, False), self.reading(
            [(NOW - 86400, 0), (NOW + 15, 79)]))

    def test_held_since_before_the_lookback(self):
        # the gauge's samples start 16 days back, with its value
        last, since, cls, recent = self.reading(
            [(NOW - 16 * 86400, 79)], start=NOW - 16 * 86400)
        self.assertEqual((79, dh.XID_HOST, False), (last, cls, recent))
        self.assertTrue(since.startswith('before '), since)

    def test_reset_in_the_window_shows_no_xid(self):
        # 79 before, reset to 0 in the window: no XID now
        self.assertEqual((0, None, None, False), self.reading(
            [(NOW - 2 * 86400, 79), (NOW - 600, 0)]))


class TestFakePrometheusWindow(WindowCase):
    """The fake honours the query's window and time."""

    def query(self, text):
        return requests.post(tuc.PROM + '/api/v1/query', data={
            'query': text, 'time': '%.3f' % NOW}).json()['data']['result']

    def test_range_and_instant_selectors(self):
        samples = [(NOW - 1800, 90.0), (NOW - 600, 10.0), (NOW - 60, 20.0)]
        self.prometheus.series = [({'Hostname': 'h'},
                                   {'DCGM_FI_DEV_GPU_UTIL': samples})]
        # [600s]: [NOW - 600, NOW], both ends in
        self.assertEqual(['15.0'], [r['value'][1] for r in self.query(
            'avg_over_time(DCGM_FI_DEV_GPU_UTIL[600s])')])
        self.assertEqual(['90.0'], [r['value'][1] for r in self.query(
            'max_over_time(DCGM_FI_DEV_GPU_UTIL[1800s])')])
        self.assertEqual([], self.query(
            'max_over_time(DCGM_FI_DEV_GPU_UTIL[30s])'))
        # the last sample, at most 5 minutes old
        self.assertEqual(['20.0'], [r['value'][1] for r in self.query(
            'DCGM_FI_DEV_GPU_UTIL')])
        samples.pop()
        self.assertEqual([], self.query('DCGM_FI_DEV_GPU_UTIL'))
