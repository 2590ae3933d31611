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

"""gpuclient.rules.utilisation (pure), with plain dicts."""

import datetime

from osc_lib import exceptions

from gpuclient.rules import utilisation as util
from gpuclient.tests.unit import base

U, M, FB = ('DCGM_FI_DEV_GPU_UTIL', 'DCGM_FI_PROF_GR_ENGINE_ACTIVE',
            'DCGM_FI_DEV_FB_USED')


def host_series(host, pci, gi=None, profile=None, label='Hostname'):
    labels = {label: host, 'pci_bus_id': pci, 'UUID': 'GPU-%s' % pci,
              'gpu': '0', 'job': 'dcgm'}
    if gi is not None:
        labels.update(GPU_I_ID=str(gi), GPU_I_PROFILE=profile or '1g.10gb')
    return labels


def guest_series(server, pci='00000000:01:00.0'):
    return {'Hostname': 'vm', 'pci_bus_id': pci, 'UUID': 'GPU-g' + pci,
            'instance_id': server}


def answers(*devices):
    """{query name: vector} for devices given as (labels, mean, peak, fb,
    mig) with mean/peak in percent."""
    found = {name: [] for name in util.server_queries(3600)}
    for labels, mean, peak, fb, mig in devices:
        if mean is not None:
            if mig:
                found['mig_mean'].append((labels, mean / 100.0))
                found['mig_peak'].append((labels, peak / 100.0))
                # GPU_UTIL reads 0 on MIG instances
                found['util_mean'].append((labels, 0.0))
                found['util_peak'].append((labels, 0.0))
            else:
                found['util_mean'].append((labels, mean))
                found['util_peak'].append((labels, peak))
        if fb is not None:
            found['fb_used'].append((labels, fb))
    return found


def row(sid, mode, providers, host):
    return {'id': sid, 'name': 'vm-' + sid, 'mode': mode, 'host': host,
            'providers': list(providers), 'devices': []}


def provider(name, root, host, mode, consumers):
    return {'name': name, 'root_name': root, 'host': host, 'mode': mode,
            'consumers': consumers}


class TestSettings(base.TestCase):
    def test_windows(self):
        for text, seconds in (('1h', 3600), ('30m', 1800), ('7d', 604800),
                              ('1h30m', 5400), ('45s', 45), (' 2W ', 1209600),
                              ('366d', 366 * 86400)):
            self.assertEqual(seconds, util.window_seconds(text), text)
        for text in ('', 'h', '1', '1.5h', '-1h', '1x', '0m', '1h 30m',
                     '367d', 'soon', None):
            error = self.assertRaises(exceptions.CommandError,
                                      util.window_seconds, text)
            self.assertIn('--window', str(error))

    def test_duration_text_reads_back(self):
        for seconds, text in ((3600, '1h'), (5400, '1h30m'), (45, '45s'),
                              (604800, '1w'), (90061, '1d1h1m1s'),
                              (366 * 86400, '52w2d')):
            self.assertEqual(text, util.duration_text(seconds))
            self.assertEqual(seconds, util.window_seconds(text))

    def test_idle_threshold(self):
        self.assertEqual(5.0, util.idle_threshold('5'))
        self.assertEqual(0.5, util.idle_threshold(0.5))
        for value in ('-1', '101', 'nan', 'lots', None):
            self.assertRaises(exceptions.CommandError, util.idle_threshold,
                              value)

    def test_names_from_the_cloud(self):
        metrics, labels = util.names(
            {'util': 'MY_UTIL', 'nope': 'x'},
            {'hostname': 'node', 'instance_id': ['vm_id', 'server'],
             'nope': 'x'})
        self.assertEqual('MY_UTIL', metrics['util'])
        self.assertEqual(FB, metrics['fb_used'])
        self.assertEqual(('node',), labels['hostname'])
        self.assertEqual(('vm_id', 'server'), labels['instance_id'])
        self.assertNotIn('nope', metrics)
        self.assertEqual(util.LABELS['pci_bus_id'], labels['pci_bus_id'])


class TestQueries(base.TestCase):
    def test_server_queries_constant(self):
        self.assertEqual({
            'util_mean': 'avg_over_time(%s[3600s])' % U,
            'util_peak': 'max_over_time(%s[3600s])' % U,
            'mig_mean': 'avg_over_time(%s[3600s])' % M,
            'mig_peak': 'max_over_time(%s[3600s])' % M,
            'fb_used': 'last_over_time(%s[3600s])' % FB,
        }, util.server_queries(3600))
        metrics, _labels = util.names({'util': 'X'})
        self.assertEqual('max_over_time(X[60s])',
                         util.server_queries(60, metrics)['util_peak'])

    def test_usage_queries_and_step(self):
        for period, step in ((3600, 60), (28 * 86400, 1210),
                             (120000, 60), (120001, 61)):
            self.assertEqual(step, util.bucket_step(period), period)
            self.assertLessEqual(period / step, util.MAX_BUCKETS)
        self.assertEqual({
            'util_peak': 'max_over_time(%s[600s])[86400s:600s]' % U,
            'mig_peak': 'max_over_time(%s[600s])[86400s:600s]' % M,
        }, util.usage_queries(86400, 600))


class TestParsing(base.TestCase):
    def test_vector(self):
        data = {'resultType': 'vector', 'result': [
            {'metric': {'a': '1'}, 'value': [1700000000.5, '12.5']},
            {'metric': {'a': '2'}, 'value': [1700000000.5, 'NaN']},
            {'metric': {'a': '3'}, 'value': [1700000000.5, '+Inf']},
            {'value': [1, '3']},
            # a label that is no ASCII text is a label like any other
            {'metric': {'node': '\u00b2', 'Hostname': '\u00e9t\u00e9'},
             'value': [1, '4']},
        ]}
        self.assertEqual([({'a': '1'}, 12.5), ({}, 3.0),
                          ({'node': '\u00b2', 'Hostname': '\u00e9t\u00e9'},
                           4.0)],
                         util.parse_vector(data))

    def test_matrix(self):
        data = {'resultType': 'matrix', 'result': [
            {'metric': {'a': '1'}, 'values': [[120, '3'], [60, '1'],
                                              [180, 'NaN']]}]}
        self.assertEqual([({'a': '1'}, [(60.0, 1.0), (120.0, 3.0)])],
                         util.parse_matrix(data))

    def test_wrong_shapes(self):
        for data, parse in (({'resultType': 'matrix', 'result': []},
                             util.parse_vector),
                            ({'resultType': 'vector', 'result': []},
                             util.parse_matrix),
                            ({'resultType': 'vector'}, util.parse_vector),
                            ('<html>', util.parse_vector),
                            (None, util.parse_vector)):
            error = self.assertRaises(exceptions.CommandError, parse, data)
            self.assertIn('Prometheus answered', str(error))

    def test_pci_both_ways(self):
        for text, address in (('00000000:84:00.0', '0000:84:00.0'),
                              ('0000:84:00.0', '0000:84:00.0'),
                              ('84:00.0', '0000:84:00.0'),
                              ('00000001:3B:00.1', '0001:3b:00.1'),
                              ('', None), ('GPU-0', None),
                              ('0000:84:00.9', None)):
            self.assertEqual(address, util.pci_label(text), text)

    def test_host_keys(self):
        # exact names only: a short name joins in join_answers, where
        # every host of the cloud is known
        self.assertEqual({'gpu-1.example.org'},
                         util.host_keys('GPU-1.example.org.'))
        self.assertEqual({'gpu-1'}, util.host_keys('gpu-1', None, ''))

    def test_device_series(self):
        found = util.device_series(answers(
            (host_series('gpu-vgpu-1', '00000000:84:00.0'), 20, 80, 4096,
             False),
            (host_series('gpu-mig-1', '00000000:85:00.0', gi=3), 2, 4, 1000,
             True),
            (host_series('gpu-mig-1', '00000000:85:00.0', gi=5), None, None,
             10, True),
            (guest_series('srv'), 50, 90, None, False),
        ), util.LABELS)
        self.assertEqual([
            ('gpu-mig-1', '0000:85:00.0', '3', None, True, 2.0, 4.0, 1000),
            ('gpu-mig-1', '0000:85:00.0', '5', None, True, None, None, 10),
            ('gpu-vgpu-1', '0000:84:00.0', None, None, False, 20, 80, 4096),
            ('vm', '0000:01:00.0', None, 'srv', False, 50, 90, None),
        ], [(d['host'], d['pci'], d['gpu_instance'], d['instance_id'],
             d['mig'], d['mean'], d['peak'], d['fb_used']) for d in found])

    def test_newer_exporters_lowercase_hostname(self):
        found = util.device_series(answers(
            (host_series('h', '00000000:84:00.0', label='hostname'), 1, 1,
             None, False)))
        self.assertEqual('h', found[0]['host'])

    def test_classify(self):
        for peak, below, state in ((None, 5, util.UNKNOWN),
                                   (0.0, 5, util.IDLE), (4.9, 5, util.IDLE),
                                   (5.0, 5, util.BUSY), (0.0, 0, util.BUSY),
                                   (99, 100, util.IDLE)):
            self.assertEqual(state, util.classify(peak, below),
                             (peak, below))


class TestServerJoin(base.TestCase):
    """One cloud: a vGPU host (a card with one holder, a card with two),
    a MIG host (a card with one instance, a card with two), a
    passthrough host (guest-side exporter), a bare-metal node."""

    def setUp(self):
        super().setUp()
        self.providers = {
            'p-v84': provider('gpu-vgpu-1_pci_0000_84_00_0',
                              'gpu-vgpu-1.gpu.test', 'gpu-vgpu-1', 'vgpu',
                              ['v1']),
            'p-v85': provider('gpu-vgpu-1_pci_0000_85_00_0',
                              'gpu-vgpu-1.gpu.test', 'gpu-vgpu-1', 'vgpu',
                              ['v2', 'v3']),
            # MIG slices (VFs) of card 0000:41:00.0 and one of 0000:42
            'p-m41a': provider('gpu-mig-1_pci_0000_41_00_4', 'gpu-mig-1',
                               'gpu-mig-1', 'mig', ['m1']),
            'p-m41b': provider('gpu-mig-1_pci_0000_41_00_5', 'gpu-mig-1',
                               'gpu-mig-1', 'mig', ['m2']),
            'p-m42': provider('gpu-mig-1_pci_0000_42_00_4', 'gpu-mig-1',
                              'gpu-mig-1', 'mig', ['m3']),
            'p-pt': provider('gpu-pt-1_0000:81:00.0', 'gpu-pt-1', 'gpu-pt-1',
                             'passthrough', ['pt']),
            'p-pt2': provider('gpu-pt-1_0000:82:00.0', 'gpu-pt-1',
                              'gpu-pt-1', 'passthrough', ['pt']),
            'node-1': provider('node-1', 'node-1', 'bm-1', 'baremetal',
                               ['bm']),
        }
        self.rows = [
            row('v1', 'vgpu', ['p-v84'], 'gpu-vgpu-1'),
            row('v2', 'vgpu', ['p-v85'], 'gpu-vgpu-1'),
            row('m1', 'mig', ['p-m41a'], 'gpu-mig-1'),
            row('m3', 'mig', ['p-m42'], 'gpu-mig-1'),
            row('pt', 'passthrough', ['p-pt', 'p-pt2'], 'gpu-pt-1'),
            row('bm', 'baremetal', ['node-1'], 'bm-1'),
        ]

    def join(self, *devices, below=5):
        # as utilisation_ops: the series joined to the cloud's hosts
        hosts = {}
        for p in self.providers.values():
            hosts.setdefault(p['host'], set()).add(p['root_name'])
        joined, _problems = util.join_answers(answers(*devices), hosts)
        found = util.server_utilisation(
            self.rows, self.providers, util.device_series(joined), below)
        return [(r['id'], r['device'], r['source'], r['state'], r['mean'],
                 r['peak'], r['fb_used'], r['shared_by']) for r in found]

    def test_no_metric_is_unknown_never_idle(self):
        self.assertEqual([
            ('v1', 'pGPU 0000:84:00.0', None, 'unknown', None, None, None,
             1),
            ('v2', 'pGPU 0000:85:00.0', None, 'unknown', None, None, None,
             2),
            # no series: which card a VF is on cannot be told
            ('m1', 'MIG 0000:41:00.4', None, 'unknown', None, None, None,
             1),
            ('m3', 'MIG 0000:42:00.4', None, 'unknown', None, None, None,
             1),
            ('pt', '0000:81:00.0', None, 'unknown', None, None, None, 1),
            ('pt', '0000:82:00.0', None, 'unknown', None, None, None, 1),
            ('bm', 'node node-1', None, 'unknown', None, None, None, 1),
        ], self.join())

    def test_host_side_vgpu_by_hostname_and_pci(self):
        # the exporter's Hostname is the FQDN here; Nova's host is short
        found = self.join(
            (host_series('gpu-vgpu-1.gpu.test', '00000000:84:00.0'), 1, 3,
             512, False),
            (host_series('gpu-vgpu-1', '00000000:85:00.0'), 1, 2, 100,
             False),
            # another host's card at the same address: not ours
            (host_series('gpu-vgpu-2', '00000000:84:00.0'), 90, 99, 1,
             False))
        self.assertEqual(
            [('v1', 'pGPU 0000:84:00.0', 'host', 'idle', 1, 3, 512, 1),
             # two servers on the card: its figures, shared
             ('v2', 'pGPU 0000:85:00.0', 'host', 'shared', 1, 2, 100, 2)],
            found[:2])
        busy = self.join((host_series('gpu-vgpu-1', '00000000:84:00.0'), 30,
                          70, 9, False))
        self.assertEqual('busy', busy[0][3])
        self.assertEqual('idle', self.join(
            (host_series('gpu-vgpu-1', '00000000:84:00.0'), 30, 70, 9,
             False), below=71)[0][3])

    def test_exporter_hostname_in_another_case_or_as_a_fqdn(self):
        # Nova knows gpu-vgpu-1 (and gpu-vgpu-1.gpu.test); the exporter
        # says GPU-VGPU-1.GPU.TEST. and GPU-MIG-1.dc2.example.org (Nova
        # knows gpu-mig-1 without a domain): the same hosts
        found = self.join(
            (host_series('GPU-VGPU-1.GPU.TEST.', '00000000:84:00.0'),
             1, 3, 512, False),
            (host_series('GPU-MIG-1.dc2.example.org', '00000000:42:00.0',
                         gi=1), 60, 80, 9, True))
        self.assertEqual(
            [('v1', 'pGPU 0000:84:00.0', 'host', 'idle', 1, 3, 512, 1),
             ('m3', 'MIG 0000:42:00.4', 'host', 'busy', 60, 80, 9, 1)],
            [r for r in found if r[0] in ('v1', 'm3')])

    def test_another_regions_host_of_the_same_name_is_not_joined(self):
        # issue 51 defect 4: one Prometheus over two regions; region B's
        # gpu-vgpu-1 is gpu-vgpu-1.region-b.example, ours gpu.test
        found = self.join(
            (host_series('gpu-vgpu-1.region-b.example', '00000000:84:00.0'),
             1, 3, 512, False))
        self.assertEqual(('v1', 'pGPU 0000:84:00.0', None, 'unknown'),
                         found[0][:4])

    def test_a_server_younger_than_the_window_is_unknown_host_side(self):
        # the card's readings in the window predate the server: another
        # holder's, or nobody's; guest-side readings are its own
        start = util.epoch(datetime.datetime(2026, 12, 3, 8, 0, 0))
        self.rows[0]['since'] = '2026-12-03T08:05:00.000000'
        self.rows[1]['since'] = '2026-12-03T07:55:00.000000'
        found = util.server_utilisation(
            self.rows, self.providers, util.device_series(answers(
                (host_series('gpu-vgpu-1', '00000000:84:00.0'), 1, 3, 512,
                 False),
                (host_series('gpu-vgpu-1', '00000000:85:00.0'), 80, 90, 9,
                 False))), 5, window_start=start)
        self.assertEqual([('v1', 'unknown', None), ('v2', 'shared', 90)],
                         [(r['id'], r['state'], r['peak'])
                          for r in found[:2]])

    def test_mig(self):
        cases = [
            # card 41 has two instances, two holders: idle only when both
            # instances are; card 42 has one instance, one holder: its own
            ([(3, 1, 2), (5, 0, 1)], (20, 30), ('idle', 'busy')),
            ([(3, 1, 2), (5, 40, 90)], (20, 30), ('shared', 'busy')),
            ([(3, 1, 2), (5, None, None)], (20, 30), ('unknown', 'busy')),
            ([(3, 1, 2), (5, 0, 1)], (2, 3), ('idle', 'idle')),
        ]
        for card41, card42, states in cases:
            devices = [(host_series('gpu-mig-1', '00000000:41:00.0', gi=gi),
                        mean, peak, 10, True) for gi, mean, peak in card41]
            devices.append((host_series('gpu-mig-1', '00000000:42:00.0',
                                        gi=1), card42[0], card42[1], 10,
                            True))
            found = {r[0]: r for r in self.join(*devices)}
            self.assertEqual(states, (found['m1'][3], found['m3'][3]),
                             (card41, card42))
        # the figures of a card told apart are the instance's (percent)
        self.assertEqual((2.0, 3.0), found['m3'][4:6])
        # those of a card not told apart: the highest instance's
        self.assertEqual((1.0, 2.0), found['m1'][4:6])

    def test_mig_vf_needs_one_card_on_its_bus(self):
        # two cards on bus 41: a VF at 41:00.4 cannot be tied to one
        found = {r[0]: r for r in self.join(
            (host_series('gpu-mig-1', '00000000:41:00.0', gi=1), 0, 0, 1,
             True),
            (host_series('gpu-mig-1', '00000000:41:01.0', gi=1), 0, 0, 1,
             True))}
        self.assertEqual('unknown', found['m1'][3])

    def test_guest_side_passthrough_and_baremetal(self):
        found = self.join(
            (guest_series('pt', '00000000:07:00.0'), 0.5, 2, 100, False),
            (guest_series('bm', '00000000:01:00.0'), 10, 100, 8000, False),
            (guest_series('bm', '00000000:02:00.0'), 0, 0, 0, False))
        self.assertEqual([
            # the guest reports one GPU of two: the other is unknown
            ('pt', 'guest 0000:07:00.0', 'guest', 'idle', 0.5, 2, 100, 1),
            ('pt', None, None, 'unknown', None, None, None, 1),
            # a node: one row per GPU the guest reports
            ('bm', 'guest 0000:01:00.0', 'guest', 'busy', 10, 100, 8000, 1),
            ('bm', 'guest 0000:02:00.0', 'guest', 'idle', 0, 0, 0, 1),
        ], found[-4:])

    def test_guest_side_wins_over_a_shared_card(self):
        # a vGPU guest with its own exporter: its figure, not the card's
        found = self.join(
            (host_series('gpu-vgpu-1', '00000000:85:00.0'), 50, 90, 1,
             False),
            (guest_series('v2', '00000000:00:05.0'), 0, 1, 1, False))
        self.assertEqual(('v2', 'guest 0000:00:05.0', 'guest', 'idle'),
                         found[1][:4])

    def test_member_view_without_providers(self):
        rows = [row('x', 'vgpu', [], None)]
        found = util.server_utilisation(rows, {}, util.device_series(
            answers((guest_series('y'), 1, 1, 1, False))))
        self.assertEqual([(None, 'unknown')],
                         [(r['device'], r['state']) for r in found])


T0 = datetime.datetime(2026, 11, 1)


def at(minutes):
    return T0 + datetime.timedelta(minutes=minutes)


def buckets(labels, peaks, step=600, mig=False):
    """A usage_queries answer: one bucket per STEP ending at T0 + (i+1)
    steps; None leaves a bucket out."""
    start = util.epoch(T0)
    points = [(start + (i + 1) * step, p / 100.0 if mig else p)
              for i, p in enumerate(peaks) if p is not None]
    return labels, points


def item(sid, begin, end, gpus=1, mode='vgpu'):
    return {'id': sid, 'interval': (at(begin), at(end)), 'gpus': gpus,
            'mode': mode, 'gpu_hours': gpus * (end - begin) / 60.0,
            'project': 'p', 'pool': mode, 'flavor': 'f',
            'resource_class': 'VGPU'}


class TestUsageSplit(base.TestCase):
    def split(self, items, providers, util_series=(), mig_series=()):
        devices = util.bucket_series({'util_peak': list(util_series),
                                      'mig_peak': list(mig_series)})
        return util.usage_split(items, providers, devices, 600)

    def test_guest_side(self):
        # 6 buckets of 10 minutes: busy, idle, idle, none, idle, busy
        series = [buckets(guest_series('a'), [50, 1, 0, None, 2, 60])]
        split = self.split([item('a', 0, 60), item('b', 0, 60)], {}, series)
        self.assertEqual({'a': (3 / 6, 2 / 6)}, split)
        # part of a bucket counts in proportion
        split = self.split([item('a', 5, 25)], {}, series)
        self.assertEqual((15 / 20, 5 / 20), split['a'])

    def test_guest_reports_fewer_gpus_than_held(self):
        series = [buckets(guest_series('a'), [0] * 6)]
        split = self.split([item('a', 0, 60, gpus=2, mode='passthrough')],
                           {}, series)
        self.assertEqual((0.5, 0.0), split['a'])
        # a node: its GPUs are the guest's, whatever the flavor's count
        series.append(buckets(guest_series('a', '00000000:02:00.0'),
                              [90] * 6))
        split = self.split([item('a', 0, 60, mode='baremetal')], {}, series)
        self.assertEqual((0.5, 0.5), split['a'])

    def test_host_side(self):
        providers = {
            'p1': provider('h_pci_0000_84_00_0', 'h', 'h', 'vgpu', ['a']),
            'p2': provider('h_pci_0000_85_00_0', 'h', 'h', 'vgpu',
                           ['b', 'c']),
            'p3': provider('h_pci_0000_41_00_4', 'h', 'h', 'mig', ['d']),
            'p4': provider('h_pci_0000_41_00_5', 'h', 'h', 'mig', ['e']),
        }
        series = [buckets(host_series('h', '00000000:84:00.0'),
                          [0, 0, 10, 10, 0, 0]),
                  buckets(host_series('h', '00000000:85:00.0'), [0] * 6)]
        mig = [buckets(host_series('h', '00000000:41:00.0', gi=1),
                       [0, 0, 0, 50, 50, 50], mig=True),
               buckets(host_series('h', '00000000:41:00.0', gi=2),
                       [0, 0, 0, 0, 0, 0], mig=True)]
        split = self.split([item(s, 0, 60) for s in 'abcdef'], providers,
                           series, mig)
        self.assertEqual({
            'a': (4 / 6, 2 / 6),
            # a card shared by two servers: never one server's figure
            'b': (0.0, 0.0), 'c': (0.0, 0.0),
            # MIG slices not told apart: idle while every instance is
            'd': (0.5, 0.0), 'e': (0.5, 0.0),
        }, split)

    def test_split_rows(self):
        items = [item('a', 0, 60), item('b', 0, 120)]
        rows = [{'keys': {'project': 'p'}, 'gpu_hours': 3.0}]
        found = util.split_rows(rows, items, {'a': (0.5, 0.25)},
                                ('project',))
        self.assertEqual([{'keys': {'project': 'p'}, 'gpu_hours': 3.0,
                           'idle_gpu_hours': 0.5, 'used_gpu_hours': 0.25,
                           'unknown_gpu_hours': 2.25}], found)

    def test_epoch(self):
        self.assertEqual(1793491200.0, util.epoch(T0))
        self.assertIsNone(util.epoch(None))


class TestJoinAnswers(base.TestCase):
    """issue 51 defect 4: series joined to this cloud's hosts."""

    HOSTS = {'gpu-vgpu-1': {'gpu-vgpu-1.gpu.test'}, 'gpu-mig-1': set()}

    def joined(self, *series, label_names=None):
        found, problems = util.join_answers(
            {'util_peak': [(labels, 1.0) for labels in series]},
            self.HOSTS, label_names)
        return found['util_peak'], problems

    def test_the_host_label_becomes_the_nova_host(self):
        found, problems = self.joined(
            host_series('GPU-VGPU-1.gpu.test', '00000000:84:00.0'),
            dict(host_series('gpu-mig-1.dc1', '00000000:41:00.0'),
                 hostname='gpu-mig-1.dc1'),
            host_series('gpu-vgpu-1.region-b.example', '00000000:85:00.0'),
            guest_series('srv'))
        self.assertEqual([], problems)
        self.assertEqual(
            [('gpu-vgpu-1', '00000000:84:00.0'),
             ('gpu-mig-1', '00000000:41:00.0'), ('vm', '00000000:01:00.0')],
            [(labels['Hostname'], labels['pci_bus_id'])
             for labels, _value in found])
        # one hostname label left: the Nova host
        self.assertNotIn('hostname', found[1][0])

    def test_two_exporters_at_one_host_and_address_are_unknown(self):
        ours = dict(host_series('gpu-vgpu-1', '00000000:84:00.0'),
                    instance='10.0.0.1:9400')
        theirs = dict(ours, UUID='GPU-other', instance='10.9.0.1:9400')
        # a MIG card's instances, one exporter: one GPU
        mig = [dict(host_series('gpu-mig-1', '00000000:41:00.0', gi=gi),
                    instance='10.0.0.2:9400') for gi in (1, 2)]
        found, problems = self.joined(ours, theirs, *mig)
        self.assertEqual(['gpu-mig-1'], sorted(
            {labels['Hostname'] for labels, _v in found}))
        self.assertEqual([('gpu-vgpu-1', '0000:84:00.0')],
                         [p[:2] for p in problems])
        why = problems[0][2]
        for text in ('two exporters report host gpu-vgpu-1 and address '
                     '0000:84:00.0', 'GPU-00000000:84:00.0', 'GPU-other',
                     '10.9.0.1:9400', 'prometheus_selector'):
            self.assertIn(text, why)
        # the same GPU (one UUID) scraped by two targets (an exporter pod
        # restarted in the window): one GPU, kept
        again = dict(ours, instance='10.0.0.7:9400')
        self.assertEqual(([], 2), (self.joined(ours, again)[1],
                                   len(self.joined(ours, again)[0])))
        # without a UUID label the exporter tells them apart
        bare = {k: v for k, v in ours.items() if k != 'UUID'}
        problems = self.joined(bare, dict(bare, instance='10.9.0.1:9400'))[1]
        self.assertEqual([('gpu-vgpu-1', '0000:84:00.0')],
                         [p[:2] for p in problems])

    def test_a_card_replaced_within_the_window_is_the_one_served_now(self):
        old = dict(host_series('gpu-vgpu-1', '00000000:84:00.0'),
                   UUID='GPU-old', instance='10.0.0.1:9400')
        new = dict(old, UUID='GPU-new')
        guest = guest_series('srv')

        def joined(xid, remap, sources=None):
            return util.join_answers(
                {'xid': [(labels, 0.0) for labels in xid],
                 'row_remap_failure': [(labels, 0.0) for labels in remap]},
                self.HOSTS, current=('xid',) if sources is None else sources)

        # the old card's history in the window, the new one served now
        # by the same exporter: the new one alone, no problem
        found, problems = joined([new, guest], [old, new, guest])
        self.assertEqual([], problems)
        self.assertEqual({'xid': ['GPU-new', 'GPU-g00000000:01:00.0'],
                          'row_remap_failure': ['GPU-new',
                                                'GPU-g00000000:01:00.0']},
                         {name: [labels['UUID'] for labels, _v in results]
                          for name, results in found.items()})
        # both served now: two exporters, not judged
        self.assertEqual([('gpu-vgpu-1', '0000:84:00.0')], [
            p[:2] for p in joined([old, new], [old, new])[1]])
        # the other UUID came from another exporter (a second cloud's,
        # silent now): not taken for a replaced card
        theirs = dict(old, instance='10.9.0.1:9400')
        self.assertEqual([('gpu-vgpu-1', '0000:84:00.0')], [
            p[:2] for p in joined([new], [theirs, new])[1]])
        # none served now, or no instant answer named: not judged
        self.assertEqual(1, len(joined([], [old, new])[1]))
        self.assertEqual(1, len(joined([new], [old, new], ())[1]))

    def test_ambiguous_short_names_say_why(self):
        found, problems = self.joined(
            host_series('gpu-mig-1.dc1.example', '00000000:41:00.0'),
            host_series('gpu-mig-1.dc2.example', '00000000:41:00.0'))
        self.assertEqual([], found)
        self.assertEqual([('gpu-mig-1', None)], [p[:2] for p in problems])
        self.assertIn('gpu-mig-1.dc1.example, gpu-mig-1.dc2.example',
                      problems[0][2])


class TestAnswerShapes(base.TestCase):
    """issue 51 defect 11: an answer of a wrong shape is a BadAnswer that
    says what came, never another exception."""

    def test_each_bad_shape(self):
        good = {'metric': {'Hostname': 'h'}, 'value': [1700000000, '1']}
        for data, what in (
                (['x'], 'a list'),
                ({'resultType': 'vector', 'result': {}},
                 'a vector whose result is an object ({}), not a list'),
                ({'result': []}, 'a resultType of null (None) where a vector'),
                ({'resultType': 'scalar', 'result': [1, '2']},
                 'a scalar where a vector'),
                ({'resultType': 'vector', 'result': [5]},
                 'a result item that is not an object: a number (5)'),
                ({'resultType': 'vector', 'result': [dict(
                    good, metric=['Hostname', 'h'])]},
                 'a metric that is not an object: a list'),
                ({'resultType': 'vector', 'result': [dict(
                    good, metric='Hostname=h')]},
                 'a metric that is not an object: a text'),
                ({'resultType': 'vector', 'result': [dict(
                    good, metric={'Hostname': 5})]},
                 'a label Hostname whose value is not a text: a number'),
                ({'resultType': 'vector', 'result': [dict(
                    good, metric={'gpu': None})]},
                 'a label gpu whose value is not a text: null'),
                ({'resultType': 'vector', 'result': [dict(good, value=[1])]},
                 'not a [time, "number"] pair: a list ([1])'),
                ({'resultType': 'vector', 'result': [dict(
                    good, value=[1, 79])]}, 'pair: a list ([1, 79])'),
                ({'resultType': 'vector', 'result': [dict(
                    good, value=[1, 'seventy'])]}, 'pair'),
                ({'resultType': 'vector', 'result': [dict(
                    good, value=['1', '2'])]}, 'pair'),
                ({'resultType': 'vector', 'result': [dict(
                    good, value=[True, '2'])]}, 'pair'),
                ({'resultType': 'vector', 'result': [
                    {k: v for k, v in good.items() if k != 'value'}]},
                 'pair: null')):
            error = self.assertRaises(util.BadAnswer, util.parse_vector,
                                      data)
            self.assertIn(what, error.what, data)
            self.assertIn('Prometheus answered', str(error))
        for data, what in (
                ({'resultType': 'matrix', 'result': [
                    {'metric': {}, 'values': 'x'}]}, 'values that are not'),
                ({'resultType': 'matrix', 'result': [
                    {'metric': [], 'values': []}]}, 'a metric that is not'),
                ({'resultType': 'matrix', 'result': [
                    {'metric': {}, 'values': [[1, 'x']]}]}, 'pair')):
            error = self.assertRaises(util.BadAnswer, util.parse_matrix,
                                      data)
            self.assertIn(what, error.what, data)
