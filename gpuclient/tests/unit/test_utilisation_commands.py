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

"""--utilisation of gpu server list and gpu usage list over the fake
cloud of test_usage and a fake Prometheus (its HTTP API, evaluating the
few PromQL shapes gpuclient sends and refusing any other)."""

import bisect
import io
import json
import re
import urllib.parse

import fixtures
from osc_lib import exceptions
import requests

from gpuclient.cloud import prometheus as prometheus_mod
from gpuclient.ops import utilisation_ops
from gpuclient.rules.host_facts import join as host_facts_join
from gpuclient.tests.unit import base
from gpuclient.tests.unit import test_usage
from gpuclient.v1 import check as check_cmd
from gpuclient.v1 import server as server_cmd
from gpuclient.v1 import usage as usage_cmd

PROM = 'http://prom.test:9090'
# a metric and its label matchers (the cloud's label selector)
_SELECTOR = r'([A-Z_]+)(?:\{((?:[a-z_]+="[^"]*",?)*)\})?'
# a query of a host fact family (rules.host_facts.join.queries)
HOST_FACTS = re.compile(r'^gpuclient_host_\w+(\{[^}]*\})?$')
INSTANT = re.compile(r'^(avg|max|last)_over_time\(%s\[(\d+)s\]\)$'
                     % _SELECTOR)
# a metric without a range: its value now (the last sample)
NOW = re.compile(r'^%s$' % _SELECTOR)
BUCKETS = re.compile(
    r'^max_over_time\(%s\[(\d+)s\]\)\[(\d+)s:(\d+)s\]$' % _SELECTOR)
FUNCTIONS = {'avg': lambda v: sum(v) / len(v), 'max': max,
             'last': lambda v: v[-1]}
# when an XID gauge took its value (device_health.since_queries): a
# subquery of the gauge at T (@ end()); untimed samples hold no change
# (every XID held since before the lookback), timed ones are evaluated
SINCE = re.compile(r'^(?:clamp_max\()?max_over_time\(\(\(\(\(([A-Z_]+'
                   r'(?:\{[^}]*\})?) @ end\(\)\) > 0\) unless '
                   r'\(\1 == \(\1 @ end\(\)\)\)\)')
# one subquery of since_queries: (selector, step, span, step)
CHANGED = re.compile(
    r'max_over_time\(\(\(\(\(%s @ end\(\)\) > 0\) unless '
    r'\([^()]*\([^()]*\(\)\)\)\) \* 0 \+ time\(\) \+ (\d+)\)'
    r'\[(\d+)s:(\d+)s\]\)' % _SELECTOR)
CLAMP = re.compile(r'^clamp_max\((.*), time\(\) - (\d+)\)$')
# Prometheus' lookback delta (an instant selector reads the last sample
# at most this old)
LOOKBACK = 300


def timed(samples):
    """Are SAMPLES [(epoch seconds, value)] (scrapes at known times), not
    plain values (untimed: in every window)?"""
    return bool(samples) and isinstance(samples[0], tuple)


def scraped(changes, start, end, every=15):
    """The samples a scrape every EVERY seconds from START to END takes of
    a gauge that changes at CHANGES [(epoch seconds, value)] (before the
    first change it does not exist)."""
    points, changes = [], sorted(changes)
    first = -(-start // every) * every
    for t in range(first, end + 1, every):
        held = [v for c, v in changes if c <= t]
        if held:
            points.append((t, held[-1]))
    return points


def _at(samples, t):
    """An instant selector at T over timed SAMPLES (in time order): the
    last sample in [T - lookback, T], None when there is none (Prometheus
    2.x)."""
    last = bisect.bisect_right(samples, t, key=lambda p: p[0])
    if last and samples[last - 1][0] >= t - LOOKBACK:
        return samples[last - 1][1]
    return None


def _in_range(samples, t, span):
    """A range selector [SPAN s] at T: the samples in [T - SPAN, T]
    (Prometheus 2.x closes both ends; the test cloud runs 2.42)."""
    first = bisect.bisect_left(samples, t - span, key=lambda p: p[0])
    last = bisect.bisect_right(samples, t, key=lambda p: p[0])
    return [v for _t, v in samples[first:last]]


def _steps(end, span, step):
    """A subquery's evaluation times: the multiples of STEP in
    [END - SPAN, END], as Prometheus 2.x aligns them."""
    first = -(-(end - span) // step) * step
    return range(int(first), int(end) + 1, step)


def _changed(samples, end, span, step):
    """One since_queries subquery over timed SAMPLES at END: the latest
    step at which the gauge is absent or holds another value than at END,
    plus STEP; None when the gauge is 0 or absent at END or held its value
    at every step."""
    value = _at(samples, end)
    if value is None or value <= 0:
        return None
    found = [t + step for t in _steps(end, span, step)
             if _at(samples, t) != value]
    return max(found) if found else None


def selected(labels, matchers):
    """Do LABELS pass the equality MATCHERS text (a="x",b="y")?"""
    return all(labels.get(name, '') == value for name, value in re.findall(
        r'([a-z_]+)="([^"]*)"', matchers or ''))


class FakePrometheus:
    """/api/v1/query of a Prometheus holding SERIES: [(labels, {metric:
    [samples over any window]})], equality label matchers applied as
    Prometheus applies them; BAD: {metric: what to answer as the data of
    a query of it}."""

    def __init__(self, mock):
        self.series = []
        self.queries = []
        self.times = []  # the time field of each query (None: now)
        self.bad = {}
        self.status = None  # an HTTP status to fail with
        mock.post(PROM + '/api/v1/query', json=self.answer)

    def answer(self, request, context):
        form = dict(urllib.parse.parse_qsl(request.text))
        self.queries.append(form['query'])
        self.times.append(form.get('time'))
        if self.status:
            context.status_code = self.status
            return {'status': 'error', 'errorType': 'internal',
                    'error': 'storage is down'}
        for metric, data in self.bad.items():
            if metric in form['query']:
                return {'status': 'success', 'data': data}
        if HOST_FACTS.match(form['query']):
            # gpuclient-host-facts' series (gpu check's host checks): this
            # Prometheus holds none
            return self._ok('vector', [])
        end = float(form.get('time', 0))
        match = INSTANT.match(form['query'])
        now = NOW.match(form['query'])
        if match or now:
            func, metric, matchers = match.groups()[:3] if match else (
                ('last',) + now.groups())
            span = int(match.group(4)) if match else None
            result = []
            for labels, samples in self.series:
                values = samples.get(metric)
                if not values or not selected(labels, matchers):
                    continue
                if timed(values):
                    values = (_in_range(values, end, span) if match
                              else [v for v in [_at(values, end)]
                                    if v is not None])
                    if not values:
                        continue
                result.append({'metric': dict(labels, __name__=metric),
                               'value': [end, str(FUNCTIONS[func](values))]})
            return self._ok('vector', result)
        if SINCE.match(form['query']):
            return self._ok('vector', self._since(form['query'], end))
        match = BUCKETS.match(form['query'])
        if match:
            metric, matchers, step, period, _step = match.groups()
            end, step = float(form['time']), int(step)
            first = (end - int(period)) // step * step + step
            result = []
            for labels, samples in self.series:
                if samples.get(metric) and selected(labels, matchers):
                    peak = max(samples[metric])
                    result.append({'metric': labels, 'values': [
                        [first + i * step, str(peak)]
                        for i in range(int((end - first) // step) + 1)]})
            return self._ok('matrix', result)
        context.status_code = 400
        return {'status': 'error', 'errorType': 'bad_data',
                'error': 'unexpected query %s' % form['query']}

    def _since(self, query, end):
        """since_queries' answer over the timed samples: a subquery, or
        clamp_max(a or b, time() - window)."""
        clamp = CLAMP.match(query)
        terms = CHANGED.findall(clamp.group(1) if clamp else query)
        result = []
        for labels, samples in self.series:
            for metric, matchers, _plus, span, step in terms:
                values = samples.get(metric)
                if not (timed(values) and selected(labels, matchers)):
                    continue
                # "a or b": the first term that answers
                found = _changed(values, end, int(span), int(step))
                if found is None:
                    continue
                if clamp:
                    found = min(found, end - int(clamp.group(2)))
                result.append({'metric': dict(labels), 'value': [
                    end, str(float(found))]})
                break
        return result

    @staticmethod
    def _ok(kind, result):
        return {'status': 'success',
                'data': {'resultType': kind, 'result': result}}


# the five queries of gpu server list --utilisation (and gpu check's
# gpu-idle) over a 30m window, written out as Prometheus receives them
SERVER_QUERIES_30M = [
    'avg_over_time(DCGM_FI_DEV_GPU_UTIL[1800s])',
    'max_over_time(DCGM_FI_DEV_GPU_UTIL[1800s])',
    'avg_over_time(DCGM_FI_PROF_GR_ENGINE_ACTIVE[1800s])',
    'max_over_time(DCGM_FI_PROF_GR_ENGINE_ACTIVE[1800s])',
    'last_over_time(DCGM_FI_DEV_FB_USED[1800s])',
]


def host_labels(host, pci, **more):
    return dict({'Hostname': host, 'pci_bus_id': pci, 'gpu': '0',
                 'UUID': 'GPU-' + pci}, **more)


class UtilisationCase(test_usage.CommandTestCase):
    def setUp(self):
        super().setUp()
        self.prometheus = FakePrometheus(self.placement.mock)
        self.useFixture(fixtures.EnvironmentVariable(
            'GPUCLIENT_PROMETHEUS_URL'))
        self.cm.gpu.cloud_config = {'prometheus_endpoint': PROM}

    def assert_refused(self, cls, cases):
        """Each (args, message) of CASES refused before any request."""
        for args, message in cases:
            error = self.assertRaises(exceptions.CommandError, self.run_cmd,
                                      cls, *args)
            self.assertIn(message, str(error))
        self.assertEqual([], self.prometheus.queries)
        self.assertEqual([], self.nova.gets)


class TestServerListUtilisation(UtilisationCase):
    def setUp(self):
        super().setUp()
        self.add_server('pt', test_usage.PT_SPEC, gpus=2, host='gpu-pt-1',
                        devices=('gpu-pt-1.gpu.test_0000:81:00.0',
                                 'gpu-pt-1.gpu.test_0000:82:00.0'))
        self.add_server('v1', test_usage.VGPU_SPEC, host='gpu-vgpu-1',
                        devices=('gpu-vgpu-1_pci_0000_84_00_0',))
        self.add_server('v2', test_usage.VGPU_SPEC, host='gpu-vgpu-1',
                        devices=('gpu-vgpu-1_pci_0000_85_00_0',))
        self.add_server('v3', test_usage.VGPU_SPEC, host='gpu-vgpu-1',
                        devices=('gpu-vgpu-1_pci_0000_85_00_0',))
        self.add_server('m1', test_usage.MIG_SPEC, host='gpu-mig-1',
                        devices=('gpu-mig-1_pci_0000_85_00_0',))
        self.prometheus.series = [
            (host_labels('gpu-vgpu-1', '00000000:84:00.0'), {
                'DCGM_FI_DEV_GPU_UTIL': [0, 1, 2],
                'DCGM_FI_DEV_FB_USED': [100, 200]}),
            (host_labels('gpu-vgpu-1', '00000000:85:00.0'), {
                'DCGM_FI_DEV_GPU_UTIL': [0, 0]}),
            (host_labels('gpu-mig-1', '00000000:85:00.0', GPU_I_ID='1',
                         GPU_I_PROFILE='1g.10gb'), {
                'DCGM_FI_DEV_GPU_UTIL': [0, 0],
                'DCGM_FI_PROF_GR_ENGINE_ACTIVE': [0.5, 0.7]}),
            ({'Hostname': 'vm-pt', 'pci_bus_id': '00000000:01:00.0',
              'instance_id': 'pt'}, {'DCGM_FI_DEV_GPU_UTIL': [3, 4]}),
            ({'Hostname': 'vm-pt', 'pci_bus_id': '00000000:02:00.0',
              'instance_id': 'pt'}, {'DCGM_FI_DEV_GPU_UTIL': [90, 10]}),
        ]

    def test_rows_per_server_and_device(self):
        rows = self.run_cmd(server_cmd.ListServer, '--utilisation',
                            '--window', '30m')
        self.assertEqual(server_cmd.COLUMNS + server_cmd.UTILISATION_COLUMNS,
                         tuple(rows[0]))
        found = [(r['ID'], r['Devices'], r['Source'], r['Mean Util %'],
                  r['Peak Util %'], r['FB Used MiB'], r['State'],
                  r['Shared By']) for r in rows]
        self.assertEqual([
            ('m1', ['MIG 0000:85:00.0'], 'host', 60.0, 70.0, None, 'busy',
             1),
            ('pt', ['guest 0000:01:00.0'], 'guest', 3.5, 4.0, None, 'idle',
             1),
            ('pt', ['guest 0000:02:00.0'], 'guest', 50.0, 90.0, None,
             'busy', 1),
            ('v1', ['pGPU 0000:84:00.0'], 'host', 1.0, 2.0, 200.0, 'idle',
             1),
            ('v2', ['pGPU 0000:85:00.0'], 'host', 0.0, 0.0, None, 'shared',
             2),
            ('v3', ['pGPU 0000:85:00.0'], 'host', 0.0, 0.0, None, 'shared',
             2),
        ], found)
        self.assertEqual(SERVER_QUERIES_30M, self.prometheus.queries)

    def test_idle_only_and_threshold(self):
        rows = self.run_cmd(server_cmd.ListServer, '--idle')
        self.assertEqual([('pt', 'idle'), ('v1', 'idle')],
                         [(r['ID'], r['State']) for r in rows])
        rows = self.run_cmd(server_cmd.ListServer, '--idle',
                            '--idle-below', '2')
        self.assertEqual([], rows)

    def test_queries_do_not_grow_with_servers(self):
        self.run_cmd(server_cmd.ListServer, '--utilisation')
        before = len(self.prometheus.queries)
        for i in range(5):
            self.add_server('more%d' % i, test_usage.VGPU_SPEC,
                            host='gpu-vgpu-1',
                            devices=('gpu-vgpu-1_pci_0000_84_00_0',))
        self.prometheus.queries.clear()
        rows = self.run_cmd(server_cmd.ListServer, '--utilisation')
        self.assertEqual(before, len(self.prometheus.queries))
        self.assertEqual(5, before)
        self.assertEqual({'shared'}, {r['State'] for r in rows
                                      if r['ID'].startswith('more')})

    def test_prometheus_from_option_config_or_environment(self):
        other = 'http://other.test:9090'
        self.placement.mock.post(other + '/api/v1/query', status_code=500,
                                 text='down')
        error = self.assertRaises(
            exceptions.CommandError, self.run_cmd, server_cmd.ListServer,
            '--utilisation', '--prometheus', other)
        self.assertEqual(
            'Querying Prometheus at http://other.test:9090: Prometheus '
            'failed with HTTP 500: down. Check the Prometheus service logs.',
            str(error))
        self.cm.gpu.cloud_config = {}
        error = self.assertRaises(exceptions.CommandError, self.run_cmd,
                                  server_cmd.ListServer, '--utilisation')
        self.assertIn('none is configured', str(error))
        self.useFixture(fixtures.EnvironmentVariable(
            'GPUCLIENT_PROMETHEUS_URL', PROM))
        self.assertEqual(6, len(self.run_cmd(server_cmd.ListServer,
                                             '--utilisation')))

    def test_credentials_from_the_cloud_config(self):
        self.cm.gpu.cloud_config = {
            'prometheus_endpoint': PROM, 'prometheus_token': 's3cret',
            'prometheus_cacert': '/etc/prom-ca.pem'}
        self.run_cmd(server_cmd.ListServer, '--utilisation')
        sent = self.placement.mock.request_history[-1]
        self.assertEqual('Bearer s3cret', sent.headers['Authorization'])
        self.assertEqual('/etc/prom-ca.pem', sent.verify)

    def test_api_timeout_of_the_cloud_bounds_prometheus(self):
        self.run_cmd(server_cmd.ListServer, '--utilisation')
        default = self.placement.mock.request_history[-1].timeout
        self.assertEqual((prometheus_mod.http.CONNECT_TIMEOUT,
                          prometheus_mod.http.READ_TIMEOUT), default)
        self.cm.gpu.cloud_config = {'prometheus_endpoint': PROM,
                                    'api_timeout': '7'}
        self.run_cmd(server_cmd.ListServer, '--utilisation')
        self.assertEqual(7.0, self.placement.mock.request_history[-1].timeout)
        prom, _metrics, _labels = utilisation_ops.connect(self.cm.gpu)
        self.assertEqual(7.0, prom.session.adapters['https://'].total)

    def test_tls_as_the_clouds_unless_told(self):
        self.useFixture(fixtures.EnvironmentVariable(
            'GPUCLIENT_PROMETHEUS_INSECURE'))
        self.useFixture(fixtures.EnvironmentVariable(
            'GPUCLIENT_PROMETHEUS_CACERT'))
        for config, verify in (
                ({}, True),
                ({'verify': True, 'cacert': '/cloud-ca'}, '/cloud-ca'),
                ({'verify': False}, False),
                ({'insecure': True}, False),
                ({'verify': False, 'prometheus_cacert': '/p'}, '/p'),
                ({'verify': False, 'prometheus_insecure': 'false'}, True),
                ({'cacert': '/c', 'prometheus_insecure': 'true'}, False)):
            self.assertEqual(verify, utilisation_ops.tls_verify(config),
                             config)
        self.useFixture(fixtures.EnvironmentVariable(
            'GPUCLIENT_PROMETHEUS_CACERT', '/env-ca'))
        self.assertEqual('/env-ca', utilisation_ops.tls_verify(
            {'cacert': '/c'}))

    def test_prometheus_error_is_one_line(self):
        self.prometheus.status = 500
        error = self.assertRaises(exceptions.CommandError, self.run_cmd,
                                  server_cmd.ListServer, '--utilisation')
        self.assertEqual(
            'Querying Prometheus at http://prom.test:9090: Prometheus '
            'refused the query avg_over_time(DCGM_FI_DEV_GPU_UTIL[3600s]) '
            '(HTTP 500, internal): storage is down', str(error))

    def test_bad_options_refused_before_any_request(self):
        self.assert_refused(server_cmd.ListServer, (
                (['--utilisation', '--window', '1x'],
                 "--window '1x' is not a duration"),
                (['--utilisation', '--idle-below', '200'],
                 '--idle-below 200: give a GPU utilisation percentage'),
                (['--window', '1h'], '--window needs --utilisation'),
                (['--prometheus', PROM], '--prometheus needs --utilisation'),
                (['--idle-below', '3'], '--idle-below needs --utilisation'),
                (['--at', '2026-11-30T10:00:00Z'], '--at needs --utilisation'),
                (['--utilisation', '--at', 'yesterday'],
                 "--at 'yesterday' is not a time")))

    def test_at_an_explicit_time(self):
        """--at: every query is evaluated at that time (Prometheus' time
        field), an offset read as such; without it, at Prometheus' now."""
        self.run_cmd(server_cmd.ListServer, '--utilisation')
        self.assertEqual([None] * 5, self.prometheus.times)
        self.prometheus.times = []
        rows = self.run_cmd(server_cmd.ListServer, '--utilisation',
                            '--window', '30m', '--at',
                            '2026-11-30T11:00:00+01:00')
        # 2026-11-30T10:00:00Z
        self.assertEqual(['1796032800.000'] * 5, self.prometheus.times)
        self.assertEqual(SERVER_QUERIES_30M, self.prometheus.queries[-5:])
        self.assertEqual('idle', [r['State'] for r in rows
                                  if r['ID'] == 'v1'][0])

    def test_parser(self):
        cmd = server_cmd.ListServer(self.make_app(None), None)
        self.check_parser(cmd, [], [('utilisation', False), ('idle', False),
                                    ('window', None), ('idle_below', None),
                                    ('prometheus', None), ('at', None)])
        self.check_parser(cmd, ['--utilisation', '--window', '7d',
                                '--idle-below', '2.5', '--idle',
                                '--prometheus', PROM, '--at',
                                '2026-11-30T10:00:00Z'],
                          [('utilisation', True), ('idle', True),
                           ('window', '7d'), ('idle_below', '2.5'),
                           ('prometheus', PROM),
                           ('at', '2026-11-30T10:00:00Z')])

    def test_without_utilisation_nothing_changes(self):
        rows = self.run_cmd(server_cmd.ListServer)
        self.assertEqual(server_cmd.COLUMNS, tuple(rows[0]))
        self.assertEqual([], self.prometheus.queries)

    def test_the_label_selector_is_on_every_query(self):
        # issue 51 defect 4: region B's series of the same hosts and
        # addresses, busy; this cloud's (region A) idle
        self.prometheus.series += [
            (dict(labels, region='B', UUID='GPU-b' + labels['pci_bus_id']),
             {m: [99] for m in samples})
            for labels, samples in self.prometheus.series]
        self.prometheus.series = [
            (dict(labels, region=labels.get('region', 'A')), samples)
            for labels, samples in self.prometheus.series]
        rows = self.run_cmd(server_cmd.ListServer, '--utilisation',
                            '--window', '30m', '--prometheus-selector',
                            'region=A')
        self.assertEqual(
            [q.replace('[', '{region="A"}[') for q in SERVER_QUERIES_30M],
            self.prometheus.queries)
        self.assertEqual(2.0, [r for r in rows if r['ID'] == 'v1'][0][
            'Peak Util %'])
        # from clouds.yaml; the option wins over it
        self.cm.gpu.cloud_config = dict(self.cm.gpu.cloud_config,
                                        prometheus_selector={'region': 'B'})
        self.prometheus.queries.clear()
        rows = self.run_cmd(server_cmd.ListServer, '--utilisation')
        self.assertTrue(all('{region="B"}' in q
                            for q in self.prometheus.queries))
        self.assertEqual(99.0, [r for r in rows if r['ID'] == 'v1'][0][
            'Peak Util %'])
        self.prometheus.queries.clear()
        self.run_cmd(server_cmd.ListServer, '--utilisation',
                     '--prometheus-selector', 'region=A')
        self.assertTrue(all('{region="A"}' in q
                            for q in self.prometheus.queries))

    def test_a_bad_selector_is_refused_before_any_request(self):
        self.assert_refused(server_cmd.ListServer, (
            (['--utilisation', '--prometheus-selector', 'region'],
             "--prometheus-selector 'region': no <label><op><value>"),
            (['--prometheus-selector', 'region=A'],
             '--prometheus-selector needs --utilisation')))
        self.cm.gpu.cloud_config = dict(self.cm.gpu.cloud_config,
                                        prometheus_selector='1x=y')
        self.assert_refused(server_cmd.ListServer, (
            (['--utilisation'], "prometheus_selector (clouds.yaml) '1x=y'"),
        ))
        # a bad selector of a cloud is no matter without --utilisation
        self.run_cmd(server_cmd.ListServer)

    def test_a_wrong_shape_is_not_judged_and_the_rest_goes_on(self):
        # issue 51 defect 11: the answer for GPU_UTIL has a metric that
        # is a list; the MIG figures and framebuffer answers are fine
        self.prometheus.bad['DCGM_FI_DEV_GPU_UTIL'] = {
            'resultType': 'vector', 'result': [
                {'metric': ['Hostname', 'gpu-vgpu-1'], 'value': [1, '5']}]}
        rows = self.run_cmd(server_cmd.ListServer, '--utilisation')
        by_id = {r['ID']: r for r in rows}
        self.assertEqual(('unknown', None),
                         (by_id['v1']['State'], by_id['v1']['Peak Util %']))
        # MIG: its own metric was answered
        self.assertEqual(('busy', 70.0),
                         (by_id['m1']['State'], by_id['m1']['Peak Util %']))
        self.assertIn('Not judged: Prometheus answered a metric that is '
                      'not an object: a list', self.logger.output)
        self.assertIn('for DCGM_FI_DEV_GPU_UTIL', self.logger.output)


class TestUsageListUtilisation(UtilisationCase):
    def setUp(self):
        super().setUp()
        self.add_server('pt', test_usage.PT_SPEC, gpus=2, host='gpu-pt-1')
        self.add_server('v1', test_usage.VGPU_SPEC, host='gpu-vgpu-1',
                        devices=('gpu-vgpu-1_pci_0000_84_00_0',))
        self.nova.usages = [
            test_usage.server_usage('pt', test_usage.at(0),
                                    flavor='solver.2'),
            test_usage.server_usage('v1', test_usage.at(0)),
        ]
        self.prometheus.series = [
            ({'instance_id': 'pt', 'pci_bus_id': '00000000:01:00.0'},
             {'DCGM_FI_DEV_GPU_UTIL': [0, 1]}),
            (host_labels('gpu-vgpu-1', '00000000:84:00.0'),
             {'DCGM_FI_DEV_GPU_UTIL': [50]}),
        ]

    def period(self, *args):
        return ['--start', '2026-11-01T00:00:00Z', '--end',
                '2026-11-01T10:00:00Z', '--by', 'pool', *args]

    def test_used_idle_unknown(self):
        rows = self.run_cmd(usage_cmd.ListUsage,
                            *self.period('--utilisation'))
        self.assertEqual([
            # two GPUs, the guest reports one: idle; the other unknown
            {'Pool': 'solver', 'Servers': 1, 'GPU Hours': 20.0,
             'Peak Seats': 0, 'Used GPU Hours': 0.0,
             'Idle GPU Hours': 10.0, 'Unknown GPU Hours': 10.0},
            # host-side, the server still holds the card alone: busy
            {'Pool': 'ws', 'Servers': 1, 'GPU Hours': 10.0,
             'Peak Seats': 1, 'Used GPU Hours': 10.0,
             'Idle GPU Hours': 0.0, 'Unknown GPU Hours': 0.0},
        ], rows)
        self.assertEqual([
            'max_over_time(DCGM_FI_DEV_GPU_UTIL[60s])[36000s:60s]',
            'max_over_time(DCGM_FI_PROF_GR_ENGINE_ACTIVE[60s])'
            '[36000s:60s]'], self.prometheus.queries)

    def test_the_label_selector_is_on_every_query(self):
        self.run_cmd(usage_cmd.ListUsage, *self.period(
            '--utilisation', '--prometheus-selector', 'region=A'))
        self.assertEqual([
            'max_over_time(DCGM_FI_DEV_GPU_UTIL{region="A"}[60s])'
            '[36000s:60s]',
            'max_over_time(DCGM_FI_PROF_GR_ENGINE_ACTIVE{region="A"}[60s])'
            '[36000s:60s]'], self.prometheus.queries)

    def test_a_wrong_shape_is_not_judged(self):
        self.prometheus.bad['DCGM_FI_DEV_GPU_UTIL'] = {
            'resultType': 'matrix', 'result': [
                {'metric': {'instance_id': 'pt'}, 'values': [[1, 'x']]}]}
        rows = self.run_cmd(usage_cmd.ListUsage,
                            *self.period('--utilisation'))
        self.assertEqual([(20.0, 0.0, 0.0), (10.0, 0.0, 0.0)], [
            (r['Unknown GPU Hours'], r['Idle GPU Hours'],
             r['Used GPU Hours']) for r in rows])
        self.assertIn('a value that is not a [time, "number"] pair',
                      self.logger.output)

    def test_parser_and_refusals(self):
        cmd = usage_cmd.ListUsage(self.make_app(None), None)
        self.check_parser(cmd, ['--utilisation', '--prometheus', PROM],
                          [('utilisation', True), ('prometheus', PROM)])
        self.assertRaises(base.ParserError, self.check_parser, cmd,
                          ['--utilisation', '--idle'])
        error = self.assertRaises(exceptions.CommandError, self.run_cmd,
                                  usage_cmd.ListUsage,
                                  *self.period('--prometheus', PROM))
        self.assertIn('--prometheus needs --utilisation', str(error))
        rows = self.run_cmd(usage_cmd.ListUsage, *self.period())
        self.assertNotIn('Idle GPU Hours', rows[0])
        self.assertEqual([], self.prometheus.queries)


class TestCheckIdle(UtilisationCase):
    """gpu check's gpu-idle over the rows of gpu server list
    --all-projects --utilisation."""

    def setUp(self):
        super().setUp()
        self.add_server('v1', test_usage.VGPU_SPEC, host='gpu-vgpu-1',
                        project='p-team-a',
                        devices=('gpu-vgpu-1_pci_0000_84_00_0',))
        self.add_server('m1', test_usage.MIG_SPEC, host='gpu-mig-1',
                        devices=('gpu-mig-1_pci_0000_85_00_0',))
        self.prometheus.series = [
            (host_labels('gpu-vgpu-1', '00000000:84:00.0'), {
                'DCGM_FI_DEV_GPU_UTIL': [0, 1, 2]}),
            (host_labels('gpu-mig-1', '00000000:85:00.0', GPU_I_ID='1'), {
                'DCGM_FI_PROF_GR_ENGINE_ACTIVE': [0.5, 0.7]}),
        ]

    def status(self, *args):
        """(exit status, rows) of the whole command, as a pipeline sees
        (each pool's hosts in its Placement aggregate: no pool-drift)."""
        self.cloud.mirror()
        app = self.make_app(self.cm.client_manager)
        app.stdout = io.StringIO()
        cmd = check_cmd.Check(app, None)
        status = cmd.run(self.check_parser(cmd, ['-f', 'json'] + list(args)))
        return status, json.loads(app.stdout.getvalue() or '[]')

    def test_idle_servers_of_every_project(self):
        rows = self.run_cmd(check_cmd.Check, '--check', 'gpu-idle',
                            '--window', '30m')
        self.assertEqual([('warning', 'gpu-idle', 'server vm-v1 (v1)')],
                         [(r['Severity'], r['Check'], r['Object'])
                          for r in rows])
        self.assertIn('project p-team-a holds pGPU 0000:84:00.0 (VGPU, pool '
                      'ws) and its peak GPU utilisation over the last 30m '
                      'was 2.0 %', rows[0]['Symptom'])
        self.assertEqual(SERVER_QUERIES_30M, self.prometheus.queries)
        # every project's servers: one paged list, all_tenants
        self.assertEqual([{'all_tenants': 1}], [
            p for path, p in self.nova.gets if path == '/servers/detail'])
        # the threshold moves the line
        self.prometheus.queries.clear()
        self.assertEqual([], self.run_cmd(
            check_cmd.Check, '--check', 'gpu-idle', '--idle-below', '2'))
        self.assertEqual(5, len(self.prometheus.queries))

    def test_queries_do_not_grow_with_servers(self):
        for i in range(5):
            self.add_server('more%d' % i, test_usage.VGPU_SPEC,
                            host='gpu-vgpu-1',
                            devices=('gpu-vgpu-1_pci_0000_85_00_0',))
        status, rows = self.status('--prometheus', PROM)
        # gpu-idle's five, the nine of the DCGM checks and one per host
        # fact family of the host checks
        self.assertEqual(5 + 9 + len(host_facts_join.queries()),
                         len(self.prometheus.queries))
        self.assertEqual([], [r for r in rows if 'could not be read' in
                              r['Symptom']])
        self.assertEqual(['server vm-v1 (v1)'], [
            r['Object'] for r in rows if r['Check'] == 'gpu-idle'
            and r['Severity'] == 'warning'
            and not r['Symptom'].startswith('not judged')])
        # the five servers on a card with no series: said, not guessed
        self.assertIn(('gpu-idle', '5 server device(s)'), [
            (r['Check'], r['Object']) for r in rows
            if r['Symptom'].startswith('not judged')])
        self.assertEqual(0, status)
        self.assertEqual(1, self.status('--strict')[0])

    def test_prometheus_failing_is_said_and_the_rest_runs(self):
        self.prometheus.status = 500
        status, rows = self.status()
        # issue 51 defect 7: the others ran, and their status is the one;
        # stderr names every check it does not cover
        self.assertEqual(0, status)
        self.assertIn('Could not run, so the exit status does not cover: '
                      'gpu-idle (Querying Prometheus', self.logger.output)
        self.assertIn('gpu-unhealthy, gpu-application-xid, gpu-row-remap, '
                      'gpu-vgpu-licence, gpu-missing (', self.logger.output)
        # gpu-driver-drift reads both the DCGM series and the host facts
        self.assertIn('gpu-driver-drift (Querying Prometheus',
                      self.logger.output)
        self.assertIn('host-facts-stale, host-iommu-off, host-gpu-driver, '
                      'host-iommu-group, host-state-lost, host-layout-drift, '
                      'host-mig-pending, host-mdevctl-missing (Querying '
                      'Prometheus', self.logger.output)
        idle = [r for r in rows if r['Check'] == 'gpu-idle']
        self.assertEqual([('warning', 'Prometheus')],
                         [(r['Severity'], r['Object']) for r in idle])
        self.assertEqual(
            'not judged: the GPU utilisation of the servers could not be '
            'read (Querying Prometheus at http://prom.test:9090: Prometheus '
            'refused the query avg_over_time(DCGM_FI_DEV_GPU_UTIL[3600s]) '
            '(HTTP 500, internal): storage is down).', idle[0]['Symptom'])
        # the other checks ran: the cloud's own findings are there
        self.assertIn('quota-gpu-limits', [r['Check'] for r in rows])
        self.assertNotIn('Traceback', self.logger.output)
        # gpu-idle alone, Prometheus answering 500: it could not run, and
        # neither did every check asked for: trouble, not "no finding"
        status, rows = self.status('--check', 'gpu-idle')
        self.assertEqual((2, ['Prometheus']), (status, [
            r['Object'] for r in rows]))
        self.assertIn('No check asked for could run: gpu-idle (Querying '
                      'Prometheus at http://prom.test:9090: Prometheus '
                      'refused the query', self.logger.output)
        # down altogether: the same, one line
        self.placement.mock.post(PROM + '/api/v1/query',
                                 exc=requests.exceptions.ConnectionError('refused'))
        status, rows = self.status('--check', 'gpu-idle')
        self.assertEqual((2, ['Prometheus']), (status, [
            r['Object'] for r in rows]))
        self.assertIn('cannot connect', rows[0]['Symptom'])
        # with a check that ran: its status (0), gpu-idle named on stderr
        status, rows = self.status('--check', 'gpu-idle', '--check',
                                   'pool-drift')
        self.assertEqual((0, ['Prometheus']), (status, [
            r['Object'] for r in rows]))
        self.assertIn('does not cover: gpu-idle (', self.logger.output)
        self.assertNotIn('pool-drift (', self.logger.output)
        # --strict: gpu-idle's not-judged row is a warning, it counts
        self.assertEqual(1, self.status('--check', 'gpu-idle', '--check',
                                        'pool-drift', '--strict')[0])

    def test_a_wrong_shape_is_not_judged_and_the_rest_runs(self):
        # issue 51 defect 11: before, a metric that is not an object
        # raised a TypeError out of every check
        self.prometheus.bad['DCGM_FI_DEV_GPU_UTIL'] = {
            'resultType': 'vector', 'result': [
                {'metric': 'Hostname=gpu-vgpu-1', 'value': [1, '5']}]}
        status, rows = self.status('--check', 'gpu-idle', '--check',
                                   'pool-drift')
        self.assertEqual([('gpu-idle', 'Prometheus')],
                         [(r['Check'], r['Object']) for r in rows])
        self.assertIn('not judged: the GPU utilisation of the servers could '
                      'not be read (Prometheus answered a metric that is '
                      'not an object: a text', rows[0]['Symptom'])
        self.assertIn('for DCGM_FI_DEV_GPU_UTIL', rows[0]['Symptom'])

    def test_a_password_in_the_url_is_never_printed(self):
        # defect 7: --prometheus user:password@host:port (no scheme)
        status, rows = self.status('--check', 'gpu-idle', '--prometheus',
                                   'admin:S3cret@prom.test:9090')
        text = json.dumps(rows) + self.logger.output
        self.assertEqual(['Prometheus'], [r['Object'] for r in rows])
        self.assertIn('prom.test:9090 is not a Prometheus URL', text)
        self.assertNotIn('S3cret', text)
        self.assertNotIn('admin', text)
        error = self.assertRaises(
            exceptions.CommandError, self.run_cmd, server_cmd.ListServer,
            '--utilisation', '--prometheus', 'admin:S3cret@prom.test:9090')
        self.assertNotIn('S3cret', str(error))
        self.assertIn('prom.test:9090', str(error))

    def test_without_prometheus_the_check_does_not_run(self):
        self.cm.gpu.cloud_config = {}
        status, rows = self.status()
        self.assertEqual(0, status)
        self.assertNotIn('gpu-idle', [r['Check'] for r in rows])
        self.assertEqual([], self.prometheus.queries)
        self.assertEqual([], [p for path, p in self.nova.gets
                              if path == '/servers/detail'])
        # one line for every check without its Prometheus
        self.assertIn('Could not run, so the exit status does not cover: '
                      'gpu-idle, gpu-unhealthy, gpu-application-xid, '
                      'gpu-row-remap, gpu-vgpu-licence, gpu-driver-drift, '
                      'gpu-missing, host-facts-stale, host-iommu-off, '
                      'host-gpu-driver, host-iommu-group, host-state-lost, '
                      'host-layout-drift, host-mig-pending, '
                      'host-mdevctl-missing (no '
                      'Prometheus is configured: give --prometheus <url>',
                      self.logger.output)
        # issue 51 defect 7: asked alone, it is trouble (2), no row
        self.assertEqual((2, []), self.status('--check', 'gpu-idle'))
        self.assertIn('No check asked for could run: gpu-idle (no '
                      'Prometheus is configured', self.logger.output)
        # other checks only: not a word about Prometheus
        said = self.logger.output.count('Prometheus')
        self.status('--check', 'pool-drift')
        self.assertEqual(said, self.logger.output.count('Prometheus'))

    def test_parser_and_refusals(self):
        cmd = check_cmd.Check(self.make_app(None), None)
        self.check_parser(cmd, ['--prometheus', PROM, '--window', '7d',
                                '--idle-below', '2.5'],
                          [('prometheus', PROM), ('window', '7d'),
                           ('idle_below', '2.5')])
        self.assert_refused(check_cmd.Check, (
                (['--window', '1x'], "--window '1x' is not a duration"),
                (['--idle-below', '-1'], '--idle-below -1: give')))
