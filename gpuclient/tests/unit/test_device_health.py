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

"""rules.devices.health with plain data."""

import testtools

from gpuclient.rules.devices import health as dh

HOST = {'Hostname': 'gpu-1', 'pci_bus_id': '00000000:41:00.0',
        'DCGM_FI_DRIVER_VERSION': '570.86.15', 'modelName': 'NVIDIA H100'}
# the labels of a guest's own exporter (the tenant's: all but instance_id)
GUEST = {'instance_id': 's1', 'pci_bus_id': '00000000:05:00.0',
         'Hostname': 'vm-1'}
# when the queries were evaluated (2023-11-14T22:13:20Z), and the window
NOW = 1700000000
WINDOW = 3600
DAY = 86400


def row(uuid, pci, servers=()):
    return {'uuid': uuid, 'name': 'gpu-1_%s' % pci, 'host': 'gpu-1',
            'pci_address': pci, 'server_ids': list(servers)}


def annotate(answers, rows=None):
    rows = rows or [row('a', '0000:41:00.0', ['s1'])]
    return dh.annotate(rows, dh.series(answers),
                       {r['uuid']: {'gpu-1'} for r in rows}, NOW, WINDOW)


def xid(labels, value, since=None):
    """The answers of one series' XID gauge: its value now and when it
    took it (SINCE, epoch seconds: in the window's answer or the one
    before it; None: before the lookback)."""
    found = {'xid': [(labels, float(value))], 'xid_since': [],
             'xid_since_before': []}
    if since:
        found['xid_since' if since > NOW - WINDOW
              else 'xid_since_before'].append((labels, float(since)))
    return found


def merged(*answers):
    found = {}
    for item in answers:
        for name, results in item.items():
            found.setdefault(name, []).extend(results)
    return found


class TestDeviceHealth(testtools.TestCase):

    def test_one_query_per_metric(self):
        queries = dh.queries(3600)
        # the licence metrics are gpu check's (check_queries); the XID
        # has three: its value now and when the gauge took it, within the
        # window or before
        self.assertEqual(len(dh.METRICS), len(queries))
        # the value now, not the last one in a window: DCGM holds the
        # last XID until the GPU is reset
        self.assertEqual('DCGM_FI_DEV_XID_ERRORS', queries['xid'])
        self.assertEqual(dh.since_queries('DCGM_FI_DEV_XID_ERRORS', 3600),
                         {k: queries[k] for k in ('xid_since',
                                                  'xid_since_before')})
        self.assertEqual('DCGM_EXP_GPU_HEALTH_STATUS', queries['health'])
        # what tells the GPUs served now (a card replaced within the
        # window) are instant queries: no range, no subquery
        for name in dh.CURRENT_QUERIES:
            self.assertIn(queries[name], dh.METRICS.values())

    def test_since_queries_date_the_change(self):
        # the window in 240 steps (15 s); before it the day to the minute,
        # else the 14 days in 500 steps (2420 s), capped at the window's
        # start
        changed = ('max_over_time(((((X @ end()) > 0) unless (X == (X @ '
                   'end()))) * 0 + time() + %(s)d)[%(r)ds:%(s)ds])')
        self.assertEqual({
            'xid_since': changed % {'s': 15, 'r': 3600},
            'xid_since_before': 'clamp_max(%s or %s, time() - 3600)' % (
                changed % {'s': 60, 'r': DAY},
                changed % {'s': 2420, 'r': 14 * DAY})},
            dh.since_queries('X', 3600))
        self.assertEqual([(30, 1), (DAY, 60), (14 * DAY, 2420)],
                         dh.since_tiers(30))
        # a window longer than the day or the lookback is theirs
        self.assertEqual([(30 * DAY, 10800), (30 * DAY, 10800),
                          (30 * DAY, 10800)], dh.since_tiers(30 * DAY))

    def test_xid_actions(self):
        self.assertEqual('reboot the host', dh.xid_action(79))
        self.assertEqual(dh.SEE_CATALOGUE, dh.xid_action(999))
        self.assertIsNone(dh.xid_action(0))
        # as NVIDIA's catalogue buckets them (immediate action)
        self.assertEqual('reset the GPU (drain the server first)',
                         dh.xid_action(95))
        self.assertEqual('restart the application', dh.xid_action(94))
        self.assertEqual('contact NVIDIA support', dh.xid_action(61))
        self.assertEqual('none (informational)', dh.xid_action(63))
        # a workflow bucket is not one action: the catalogue says
        for number in (45, 48, 74):
            self.assertEqual(dh.SEE_CATALOGUE, dh.xid_action(number))

    def test_xid_classes(self):
        # whose an XID is, by NVIDIA's bucket: reset, reboot, support are
        # the host's; restart the application the project's
        for number, cls in (
                (46, dh.XID_HOST), (62, dh.XID_HOST), (64, dh.XID_HOST),
                (79, dh.XID_HOST), (95, dh.XID_HOST), (61, dh.XID_HOST),
                (119, dh.XID_HOST), (120, dh.XID_HOST),
                (8, dh.XID_APPLICATION), (13, dh.XID_APPLICATION),
                (31, dh.XID_APPLICATION), (94, dh.XID_APPLICATION),
                (43, dh.XID_INFORMATIONAL), (63, dh.XID_INFORMATIONAL),
                (92, dh.XID_INFORMATIONAL),
                (45, dh.XID_UNLISTED), (48, dh.XID_UNLISTED),
                (74, dh.XID_UNLISTED), (999, dh.XID_UNLISTED),
                (0, None)):
            self.assertEqual(cls, dh.xid_class(number), number)

    def test_xid_class_dating_and_precedence(self):
        """(case, answers, (last_xid, xid_class, xid_since, recent,
        unhealthy, health_source)): one device held by server s1."""
        ten_min = NOW - 600
        two_days = NOW - 2 * DAY
        before = 'before 2023-10-31T22:13:20Z'
        cases = [
            # a host XID stays until the GPU is reset, however old
            ('host xid, two days old', xid(HOST, 79, two_days),
             (79, dh.XID_HOST, '2023-11-12T22:13:20Z', False, True,
              dh.HOST_SIDE)),
            ('host xid, older than the lookback', xid(HOST, 95),
             (95, dh.XID_HOST, before, False, True, dh.HOST_SIDE)),
            # a reset: the gauge back at 0
            ('host xid reset', xid(HOST, 0),
             (0, None, None, False, False, dh.HOST_SIDE)),
            # an application's XID: the project's, never unhealthy
            ('application xid, recent', xid(HOST, 13, ten_min),
             (13, dh.XID_APPLICATION, '2023-11-14T22:03:20Z', True, False,
              dh.HOST_SIDE)),
            ('application xid, aged out', xid(HOST, 31, two_days),
             (31, dh.XID_APPLICATION, '2023-11-12T22:13:20Z', False,
              False, dh.HOST_SIDE)),
            ('informational xid', xid(HOST, 43, ten_min),
             (43, dh.XID_INFORMATIONAL, '2023-11-14T22:03:20Z', True,
              False, dh.HOST_SIDE)),
            ('unlisted xid', xid(HOST, 48, ten_min),
             (48, dh.XID_UNLISTED, '2023-11-14T22:03:20Z', True, False,
              dh.HOST_SIDE)),
            # the guest's word: shown, marked, never unhealthy
            ('guest only, xid 79', xid(GUEST, 79, ten_min),
             (79, dh.XID_HOST, '2023-11-14T22:03:20Z', True, False,
              dh.GUEST_SIDE)),
            # a host-side series alone decides: the guest does not
            # override it
            ('host healthy, guest 79',
             merged(xid(HOST, 0), xid(GUEST, 79, ten_min)),
             (0, None, None, False, False, dh.HOST_SIDE)),
            ('host 79, guest healthy',
             merged(xid(HOST, 79, ten_min), xid(GUEST, 0)),
             (79, dh.XID_HOST, '2023-11-14T22:03:20Z', True, True,
              dh.HOST_SIDE)),
            ('no series', {},
             (dh.UNKNOWN,) * 3 + (False, False, dh.UNKNOWN)),
        ]
        for case, answers, expected in cases:
            got = annotate(answers)[0]
            self.assertEqual(expected, tuple(got[f] for f in (
                'last_xid', 'xid_class', 'xid_since', 'xid_recent',
                'unhealthy', 'health_source')), case)

    def test_health_and_row_remap_precedence(self):
        """(case, answers, (health, row_remap, unhealthy, source))."""
        watch = dict(HOST, health_watch='MEM')
        guest_watch = dict(GUEST, health_watch='MEM')
        cases = [
            ('host fails', {'health': [(watch, 20.0)]},
             ('fail', dh.UNKNOWN, True, dh.HOST_SIDE)),
            ('host remap failed', {'row_remap_failure': [(HOST, 1.0)]},
             (dh.UNKNOWN, dh.REMAP_FAILED, True, dh.HOST_SIDE)),
            ('guest fails alone', {'health': [(guest_watch, 20.0)],
                                   'row_remap_failure': [(GUEST, 1.0)]},
             ('fail', dh.REMAP_FAILED, False, dh.GUEST_SIDE)),
            ('host passes, guest fails',
             {'health': [(watch, 0.0), (guest_watch, 20.0)],
              'row_remap_failure': [(GUEST, 1.0)]},
             ('pass', dh.UNKNOWN, False, dh.HOST_SIDE)),
        ]
        for case, answers, expected in cases:
            got = annotate(answers)[0]
            self.assertEqual(expected, tuple(got[f] for f in (
                'health', 'row_remap', 'unhealthy', 'health_source')), case)

    def test_a_mig_card_shows_the_xid_that_asks_most(self):
        # a host XID on one instance outranks a recent application XID on
        # another; a recent application XID an informational one
        one = dict(HOST, GPU_I_ID='1')
        two = dict(HOST, GPU_I_ID='2')
        got = annotate(merged(xid(one, 13, NOW - 60),
                              xid(two, 79, NOW - 2 * DAY)))[0]
        self.assertEqual((79, True), (got['last_xid'], got['unhealthy']))
        got = annotate(merged(xid(one, 43, NOW - 60),
                              xid(two, 13, NOW - 60)))[0]
        self.assertEqual((13, False), (got['last_xid'], got['unhealthy']))

    def test_fields_and_unknown_is_not_guessed(self):
        answers = merged(xid(HOST, 79, NOW - 60), {
            'health': [(dict(HOST, health_watch='MEM'), 20.0),
                       (dict(HOST, health_watch='PCIE'), 0.0)],
            'row_remap_failure': [(HOST, 0.0)],
            'uncorrectable_remapped_rows': [(HOST, 0.0)],
            'util': [(HOST, 12.0)]})
        rows = [row('a', '0000:41:00.0', ['s1']), row('b', '0000:42:00.0')]
        a, b = annotate(answers, rows)
        self.assertEqual(
            ('NVIDIA H100', '570.86.15', 'fail', 79, 'reboot the host', 'ok',
             12.0, True, dh.XID_HOST, '2023-11-14T22:12:20Z', dh.HOST_SIDE),
            tuple(a[f] for f in dh.FIELDS))
        self.assertEqual((dh.UNKNOWN,) * 6 + (None, False) + (dh.UNKNOWN,) * 3,
                         tuple(b[f] for f in dh.FIELDS))
        self.assertEqual(['a'], [r['uuid'] for r in dh.unhealthy([a, b])])

    def test_guest_reports_are_the_guests(self):
        rows = annotate(merged(xid(HOST, 0), xid(GUEST, 79, NOW - 60)))
        reports = dh.guest_reports(rows, dh.series(merged(
            xid(HOST, 0), xid(GUEST, 79, NOW - 60))), NOW, WINDOW)
        self.assertEqual([('a', 's1', 79, dh.GUEST_SIDE, False)],
                         [(r['uuid'], s, got['last_xid'],
                           got['health_source'], got['unhealthy'])
                          for r, s, got in reports])


class TestNotServed(testtools.TestCase):
    """gpu-missing's comparison: address by address, never by count."""

    def rows(self, *specs):
        found = []
        for pci, servers in specs:
            found.append(dict(row('rp-' + pci, pci, servers), total=1))
        return found

    def served(self, *addresses, guests=()):
        answers = {'xid': [(dict(HOST, pci_bus_id='0000' + a), 0.0)
                           for a in addresses]
                   + [({'instance_id': g, 'pci_bus_id': '00000000:05:00.0'},
                       0.0) for g in guests]}
        return dh.series(answers)

    def test_cases(self):
        """(case, offered (address, holders), served, guests reporting,
        (missing, unsure, extra))."""
        four = ['0000:41:00.0', '0000:42:00.0', '0000:c1:00.0',
                '0000:c2:00.0']
        cases = [
            ('all served', [(a, ()) for a in four], four, (),
             ([], [], [])),
            # as many served as offered, one of them not offered: the
            # one offered and gone is still missing
            ('gone, and one extra', [(a, ()) for a in four],
             four[:3] + ['0000:e1:00.0'], (),
             (['0000:c2:00.0'], [], ['0000:e1:00.0'])),
            # a VF (vGPU, MIG slice) is its GPU's: judged by its bus
            ('vfs of a served gpu', [('0000:41:00.4', ()),
                                     ('0000:41:01.0', ())],
             ['0000:41:00.0'], (), ([], [], [])),
            ('vfs of a gone gpu', [('0000:41:00.4', ()),
                                   ('0000:42:00.4', ())],
             ['0000:41:00.0'], (), (['0000:42:00.4'], [], [])),
            # passthrough: bound to vfio-pci, out of the host's sight
            ('held, guest reports', [(four[0], ('s1',)), (four[1], ())],
             [four[1]], ('s1',), ([], [], [])),
            ('held, guest silent', [(four[0], ('s1',)), (four[1], ())],
             [four[1]], (), ([], [four[0]], [])),
            ('held as a vgpu', [(four[0], ('s1',)), (four[1], ())],
             [four[1]], ('s1',), ([four[0]], [], [])),
        ]
        for case, offered, served, guests, expected in cases:
            rows = self.rows(*offered)
            found = self.served(*served, guests=guests)
            host = [s for s in found if not s['instance_id']]
            vgpu = case == 'held as a vgpu'
            missing, unsure, extra = dh.not_served(
                rows, host, found,
                lambda r, vgpu=vgpu: bool(r['server_ids']) and not vgpu)
            self.assertEqual(expected, (
                [r['pci_address'] for r in missing],
                [r['pci_address'] for r in unsure], extra), case)


class TestWithoutTheTime(testtools.TestCase):

    def test_an_undated_reading_says_how_far_back(self):
        # a caller that did not say when it asked: no clock guessed
        got = dh.annotate([row('a', '0000:41:00.0')],
                          dh.series(xid(HOST, 79)), {'a': {'gpu-1'}}, None,
                          WINDOW)[0]
        self.assertEqual(('before 2w ago', True),
                         (got['xid_since'], got['unhealthy']))
