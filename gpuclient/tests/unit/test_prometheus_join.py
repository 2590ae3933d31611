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

"""gpu device list and gpu check over one Prometheus that holds two
regions' DCGM series (issue 51 defect 4), and over a Prometheus that
answers a wrong shape (defect 11): the fake cloud of test_device, the fake
Prometheus of test_utilisation_commands (label matchers applied as
Prometheus applies them)."""

import io
import json

import fixtures
from osc_lib import exceptions
import testtools

from gpuclient.ops import check_ops
from gpuclient.ops import device_ops
from gpuclient.ops import utilisation_ops
from gpuclient.rules.checks import gpus as gpu_checks
from gpuclient.rules.devices import health as device_health
from gpuclient.rules.scheduler import host_manager
from gpuclient.tests.unit import test_utilisation_commands as prom
from gpuclient.tests.unit.v1 import test_device
from gpuclient.v1 import check as check_cmd
from gpuclient.v1 import device

PROM = prom.PROM
PCI = '00000000:81:00.0'
XID, DRIVER = 'DCGM_FI_DEV_XID_ERRORS', 'DCGM_FI_DRIVER_VERSION'


def dcgm(host, uuid, region, xid, driver, pci=PCI):
    """One GPU's series: XID, health (pass), row remap (ok) and
    utilisation, labelled as dcgm-exporter labels them."""
    return ({'Hostname': host, 'pci_bus_id': pci, 'UUID': uuid,
             'gpu': '0', DRIVER: driver, 'region': region,
             'instance': '%s:9400' % host},
            {XID: [xid], 'DCGM_EXP_GPU_HEALTH_STATUS': [0],
             'DCGM_FI_DEV_ROW_REMAP_FAILURE': [0],
             'DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS': [0],
             'DCGM_FI_DEV_GPU_UTIL': [50]})


# this cloud's gpu-pt-1 (hypervisor gpu-pt-1.gpu.test), XID 0, driver A;
# region B's gpu-pt-1, XID 79 (fallen off the bus), driver B
OURS = dcgm('gpu-pt-1.gpu.test', 'GPU-a', 'A', 0, '550.A')
THEIRS = dcgm('gpu-pt-1.region-b.example', 'GPU-b', 'B', 79, '999.B')


class JoinCase(test_device.DeviceTestCase):
    def setUp(self):
        super().setUp()
        self.prometheus = prom.FakePrometheus(self.placement.mock)
        self.useFixture(fixtures.EnvironmentVariable(
            'GPUCLIENT_PROMETHEUS_URL'))
        self.useFixture(fixtures.EnvironmentVariable(
            'GPUCLIENT_PROMETHEUS_SELECTOR'))
        self.cm.gpu.cloud_config = {'prometheus_endpoint': PROM}

    def devices(self, *args):
        """{PCI address: row} of gpu-pt-1's devices."""
        columns, rows = self.run_cmd(device.ListDevice,
                                     ['--host', 'gpu-pt-1', *args])
        return {r['PCI Address']: r for r in (
            dict(zip(columns, row, strict=True)) for row in rows)}

    def check(self, *args):
        self.cloud.mirror()
        app = self.make_app(self.cm.client_manager)
        app.stdout = io.StringIO()
        cmd = check_cmd.Check(app, None)
        status = cmd.run(self.check_parser(cmd, ['-f', 'json', *args]))
        return status, json.loads(app.stdout.getvalue() or '[]')


class TestTwoRegions(JoinCase):

    def test_another_regions_gpu_is_not_joined(self):
        self.prometheus.series = [OURS, THEIRS]
        row = self.devices()['0000:81:00.0']
        self.assertEqual((0, '550.A', 'pass'), (
            row['Last XID'], row['Driver Version'], row['Health']))
        # and gpu check reports neither XID 79 nor a driver drift
        status, rows = self.check('--check', 'gpu-unhealthy', '--check',
                                  'gpu-driver-drift')
        self.assertEqual([], [r for r in rows if '79' in r['Symptom']
                              or '999.B' in r['Symptom']])
        # region B's FQDN is not this host, even when it is all there is
        self.prometheus.series = [THEIRS]
        row = self.devices()['0000:81:00.0']
        self.assertEqual(('unknown', 'unknown'), (row['Last XID'],
                                                  row['Driver Version']))

    def test_two_exporters_at_one_host_and_address_are_unknown(self):
        # region B's exporter names its host gpu-pt-1 too (NODE_NAME
        # unset): both series are exactly this cloud's host
        self.prometheus.series = [
            dcgm('gpu-pt-1', 'GPU-a', 'A', 0, '550.A'),
            dcgm('gpu-pt-1', 'GPU-b', 'B', 79, '999.B')]
        rows = self.devices()
        self.assertEqual(('unknown', 'unknown', 'unknown'), (
            rows['0000:81:00.0']['Last XID'],
            rows['0000:81:00.0']['Driver Version'],
            rows['0000:81:00.0']['Health']))
        self.assertIn('GPU health not judged: two exporters report host '
                      'gpu-pt-1 and address 0000:81:00.0: GPU-a',
                      self.logger.output)
        self.assertIn('GPU-b (host name gpu-pt-1, instance gpu-pt-1:9400)',
                      self.logger.output)
        # gpu check says so, and no cordon for XID 79
        status, rows = self.check('--check', 'gpu-unhealthy')
        self.assertEqual(['not judged: two exporters report host gpu-pt-1'],
                         [r['Symptom'][:46] for r in rows if r['Object']
                          == 'device gpu-pt-1 0000:81:00.0'])
        self.assertEqual([], [r for r in rows if 'XID 79' in r['Symptom']])

    def test_a_card_two_exporters_report_is_not_missing(self):
        # this cloud's exporter serves each GPU of gpu-pt-1; region B's
        # names its host gpu-pt-1 too, with a GPU at 81: which GPU at 81
        # is ours is not known, so neither seen nor missing
        self.prometheus.series = [
            dcgm('gpu-pt-1', 'GPU-a%d' % i, 'A', 0, '550.A',
                 pci='00000000:%02X:00.0' % (0x81 + i)) for i in range(4)
        ] + [dcgm('gpu-pt-1', 'GPU-b', 'B', 79, '999.B')]
        status, rows = self.check('--check', 'gpu-missing', '--check',
                                  'gpu-unhealthy')
        # (gpu-otu-1, which no series describes, is not judged either)
        rows = [r for r in rows if 'gpu-pt-1' in r['Object'] + r['Symptom']]
        self.assertEqual([('gpu-missing', 'device gpu-pt-1 0000:81:00.0'),
                          ('gpu-unhealthy', 'device gpu-pt-1 0000:81:00.0')],
                         sorted((r['Check'], r['Object']) for r in rows))
        self.assertTrue(all(r['Symptom'].startswith(
            'not judged: two exporters') for r in rows), rows)

    def test_the_selector_picks_the_region_on_every_query(self):
        self.prometheus.series = [
            dcgm('gpu-pt-1', 'GPU-a', 'A', 0, '550.A'),
            dcgm('gpu-pt-1', 'GPU-b', 'B', 79, '999.B')]
        for region, xid, driver in (('B', 79, '999.B'), ('A', 0, '550.A')):
            self.prometheus.queries.clear()
            row = self.devices('--prometheus-selector',
                               'region=%s' % region)['0000:81:00.0']
            self.assertEqual((xid, driver), (row['Last XID'],
                                             row['Driver Version']))
            self.assertEqual(len(device_health.queries(3600)),
                             len(self.prometheus.queries))
            for query in self.prometheus.queries:
                self.assertIn('{region="%s"}' % region, query)
        # gpu check: its eight queries too
        self.prometheus.queries.clear()
        self.check('--check', 'gpu-unhealthy', '--prometheus-selector',
                   'region=A')
        self.assertEqual(len(device_health.check_queries(3600)),
                         len(self.prometheus.queries))
        self.assertTrue(all('{region="A"}' in q
                            for q in self.prometheus.queries))

    def test_a_bad_selector_is_refused_before_any_request(self):
        sent = len(self.placement.requests())
        for args, config, message in (
                (['--prometheus-selector', 'region'], {},
                 "--prometheus-selector 'region'"),
                (['--prometheus-selector', 'a b=c'], {},
                 "'a b=c'"),
                ([], {'prometheus_selector': 'region='},
                 "prometheus_selector (clouds.yaml) 'region='")):
            self.cm.gpu.cloud_config = dict(
                {'prometheus_endpoint': PROM}, **config)
            error = self.assertRaises(exceptions.CommandError,
                                      self.devices, *args)
            self.assertIn(message, str(error))
        self.assertEqual(sent, len(self.placement.requests()))
        self.assertEqual([], self.prometheus.queries)
        # gpu check: exit status 2, nothing read
        self.cm.gpu.cloud_config = {'prometheus_endpoint': PROM}
        status, rows = self.check('--prometheus-selector', '=x')
        self.assertEqual((2, []), (status, rows))
        self.assertEqual(sent, len(self.placement.requests()))

    def test_selector_from_the_environment_and_numa_queries(self):
        self.useFixture(fixtures.EnvironmentVariable(
            'GPUCLIENT_PROMETHEUS_SELECTOR', 'region="A"'))
        # node_exporter's names in capitals: the fake's metric names
        self.prometheus.series = [
            ({'instance': 'gpu-pt-1:9100', 'node': node, 'region': 'A'},
             {'NODE_MEMORY_NUMA_MEMTOTAL': [1 << 30]})
            for node in ('\u00b2', '0')]
        self.cm.gpu.cloud_config['prometheus_metrics'] = {
            'numa_memory': 'NODE_MEMORY_NUMA_MEMTOTAL',
            'numa_huge_pages': 'NODE_MEMORY_NUMA_HUGEPAGES_TOTAL'}
        facts = utilisation_ops.add_numa_nodes(
            self.cm.gpu, {'gpu-pt-1': {}}, self.cloud.hypervisors)
        self.assertEqual([
            'NODE_MEMORY_NUMA_MEMTOTAL{region="A"}',
            'NODE_MEMORY_NUMA_HUGEPAGES_TOTAL{region="A"}'],
            self.prometheus.queries)
        # the node labelled '\u00b2' is no node number: left out, no error
        self.assertEqual([0], [n['node'] for n in facts['gpu-pt-1'][
            host_manager.METRICS_FACT]])


# the columns of gpu device list --long that are Prometheus's
HEALTH = device.HEALTH_COLUMNS + device.LONG_HEALTH_COLUMNS

# answers that are not what gpuclient expects (issue 51 defect 11), each
# given for the XID metric only, and what gpuclient says came
BAD = (
    (['x'], "a list (['x']) where an object with a vector was expected"),
    ({'resultType': 'vector', 'result': 'none'},
     "a vector whose result is a text ('none'), not a list"),
    ({'resultType': 'matrix', 'result': []}, 'a matrix where a vector'),
    ({'resultType': 'vector', 'result': [7]}, 'a result item that is not'),
    ({'resultType': 'vector', 'result': [
        {'metric': ['Hostname', 'gpu-pt-1.gpu.test'], 'value': [1, '79']}]},
     'a metric that is not an object: a list'),
    ({'resultType': 'vector', 'result': [
        {'metric': {'Hostname': 1}, 'value': [1, '79']}]},
     'a label Hostname whose value is not a text'),
    ({'resultType': 'vector', 'result': [
        {'metric': {}, 'value': [1, 79]}]},
     'a value that is not a [time, "number"] pair: a list ([1, 79])'),
    ({'resultType': 'vector', 'result': [
        {'metric': {}, 'value': {'v': '79'}}]},
     'a value that is not a [time, "number"] pair: an object'),
)


class TestEveryDcgmCheckNamesItsAnswers(testtools.TestCase):
    """A DCGM check whose answer came in a wrong shape could not run: each
    declares the answers (device_health.check_queries) it rests on."""

    def test_declared(self):
        queries = set(device_health.check_queries(3600))
        self.assertEqual(set(check_ops.DEVICE_CHECKS),
                         set(gpu_checks.CHECK_QUERIES))
        for name, needs in gpu_checks.CHECK_QUERIES.items():
            self.assertTrue(needs, name)
            self.assertLessEqual(set(needs), queries, name)
        self.assertLessEqual(set(device_ops.UNHEALTHY_QUERIES), queries)


class TestWrongShapes(JoinCase):

    def setUp(self):
        super().setUp()
        self.prometheus.series = [OURS]

    def test_device_list_says_not_judged_and_lists_the_rest(self):
        without_prometheus = {
            pci: {k: v for k, v in row.items()
                  if k not in HEALTH}
            for pci, row in self.devices('--long').items()}
        self.cm.gpu.cloud_config = {}
        plain = self.devices('--long')
        for data, what in BAD:
            self.prometheus.bad = {XID: data}
            rows = self.devices('--long', '--prometheus', PROM)
            # Nova's and Placement's columns as without Prometheus
            self.assertEqual(plain, {
                pci: {k: v for k, v in row.items()
                      if k not in HEALTH}
                for pci, row in rows.items()}, what)
            row = rows['0000:81:00.0']
            # the XID not judged; the other answers are
            self.assertEqual(('unknown', 'pass', '550.A'), (
                row['Last XID'], row['Health'], row['Driver Version']), what)
            self.assertIn('GPU health not judged from xid: Prometheus '
                          'answered %s' % what, self.logger.output)
            self.assertIn('for %s.' % XID, self.logger.output)
        self.assertEqual(without_prometheus, plain)

    def test_unhealthy_cannot_judge_and_says_why(self):
        self.prometheus.bad = {XID: BAD[4][0]}
        error = self.assertRaises(exceptions.CommandError, self.devices,
                                  '--unhealthy')
        self.assertIn('--unhealthy cannot judge the devices: Prometheus '
                      'answered a metric that is not an object', str(error))

    def test_odd_label_text_is_no_error(self):
        self.prometheus.series = [
            ({'Hostname': '\u00b2', 'pci_bus_id': '\u00b2', 'UUID': 'x',
              'GPU_I_ID': '\u00b2'}, {XID: [79]}),
            ({'Hostname': 'gpu-pt-1', 'pci_bus_id': '0000:\u0663\u0661:00.0',
              'UUID': 'y'}, {XID: [79]}),
            OURS]
        rows = self.devices()
        self.assertEqual(0, rows['0000:81:00.0']['Last XID'])
        self.assertEqual({'unknown'}, {
            r['Last XID'] for pci, r in rows.items() if pci != '0000:81:00.0'})

    def test_gpu_check_could_not_run_exits_2(self):
        # issue 51 defect 7's status: every check asked for rests on an
        # answer of a wrong shape
        self.prometheus.bad = {XID: BAD[4][0]}
        status, rows = self.check('--check', 'gpu-unhealthy', '--check',
                                  'gpu-missing')
        self.assertEqual(2, status)
        self.assertEqual({'Prometheus'}, {r['Object'] for r in rows})
        # one that ran: its status, and the others named on stderr
        status, rows = self.check('--check', 'gpu-unhealthy', '--check',
                                  'gpu-row-remap')
        self.assertEqual(0, status)
        self.assertIn('does not cover: gpu-unhealthy (Prometheus answered '
                      'a metric that is not an object', self.logger.output)

    def test_gpu_check_judges_what_it_can(self):
        for data, what in BAD:
            self.prometheus.bad = {XID: data}
            status, rows = self.check(
                '--check', 'gpu-unhealthy', '--check', 'gpu-row-remap',
                '--check', 'gpu-missing', '--check', 'pool-drift')
            found = {(r['Check'], r['Object']): r['Symptom'] for r in rows}
            # the XID answers (the window's and now's) are not judged ...
            for check in ('gpu-unhealthy', 'gpu-missing'):
                self.assertIn('Prometheus answered %s' % what,
                              found[(check, 'Prometheus')], what)
                self.assertIn('for %s' % XID, found[(check, 'Prometheus')])
            # ... the row-remap answers are, and found nothing wrong
            self.assertEqual([], [k for k in found if k[0] == 'gpu-row-remap'
                                  and k[1] == 'Prometheus'], what)
