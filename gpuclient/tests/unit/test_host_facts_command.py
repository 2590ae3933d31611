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

"""``openstack gpu host facts`` and ``host_facts_ops.read`` on the strict
fake cloud of test_usage (pools solver on gpu-pt-1, ws on gpu-vgpu-1,
slices on gpu-mig-1, metal on bm-1) and a fake Prometheus (its HTTP API,
through requests_mock) holding what gpuclient-host-facts writes of the
fake host trees of tools/cloud/host_trees.py, read by the collector
itself: gpu-pt-1 a passthrough host naming itself by its FQDN (its
hypervisor hostname), gpu-vgpu-1 a vGPU host, gpu-mig-1 a MIG host
naming itself by a FQDN Nova does not know (its short name joins)."""

import importlib.util
import os
import re
import urllib.parse

import fixtures
from osc_lib import exceptions
import testtools

from gpuclient.hostfacts import collector
from gpuclient.ops import host_facts_ops
from gpuclient.ops import snapshot
from gpuclient.rules.host_facts import join as facts_join
from gpuclient.rules.host_facts import series
from gpuclient.tests import bench_host_facts
from gpuclient.tests.unit import base
from gpuclient.tests.unit import test_usage as tu
from gpuclient.tests.unit import test_utilisation_commands as tuc
from gpuclient.v1 import host as host_cmd

SCRIPT = os.path.join(base.ROOT, 'tools', 'cloud', 'host_trees.py')
_spec = importlib.util.spec_from_file_location('host_trees', SCRIPT)
host_trees = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(host_trees)

PROM = tuc.PROM
QUERY = re.compile(r'^(gpuclient_host_[a-z_]+)(?:\{(.*)\})?$')
PT_GPUS = host_trees.GPUS['passthrough']
VGPU_GPUS = host_trees.GPUS['vgpu']
MIG_GPU = host_trees.GPUS['mig'][0]
HOSTS = ('gpu-mig-1', 'gpu-pt-1', 'gpu-vgpu-1')


class FakePrometheus:
    """/api/v1/query of a Prometheus holding host fact series ([(name,
    labels, value)]): a query is one family's name, with equality
    matchers (the cloud's selector) applied as Prometheus applies them;
    any other query is refused (400), as gpuclient must not send it. The
    collection time of a host is its AGES (seconds before the query's
    time; default 120), so that an age is exact."""

    def __init__(self, mock):
        self.series = []
        self.ages = {}
        self.queries = []
        self.times = []
        self.status = None
        self.bad = {}  # {family: the data to answer for it}
        mock.post(PROM + '/api/v1/query', json=self.answer)

    def add(self, facts, instance, **labels):
        """FACTS' series, as scraped from INSTANCE with LABELS added."""
        for item in series.samples(facts):
            self.series.append((item.name, dict(
                item.labels, instance=instance, job='node', **labels),
                item.value))

    def drop(self, hostname):
        self.series = [s for s in self.series
                       if s[1].get('Hostname') != hostname]

    def answer(self, request, context):
        form = dict(urllib.parse.parse_qsl(request.text))
        self.queries.append(form['query'])
        self.times.append(form.get('time'))
        if self.status:
            context.status_code = self.status
            return {'status': 'error', 'errorType': 'internal',
                    'error': 'storage is down'}
        match = QUERY.match(form['query'])
        if not match or match.group(1) not in series.BY_NAME:
            context.status_code = 400
            return {'status': 'error', 'errorType': 'bad_data',
                    'error': 'unexpected query %s' % form['query']}
        name, matchers = match.groups()
        if name in self.bad:
            return {'status': 'success', 'data': self.bad[name]}
        when = float(form['time'])
        result = []
        for family, labels, value in self.series:
            if family != name or not tuc.selected(labels, matchers):
                continue
            if family == series.COLLECTED.name:
                value = when - self.ages.get(labels.get('Hostname'), 120)
            result.append({'metric': dict(labels, __name__=family),
                           'value': [when, repr(float(value))]})
        return {'status': 'success',
                'data': {'resultType': 'vector', 'result': result}}


def facts_of(root, kind, hostname, faults=()):
    """What the collector reads of a fresh fake tree of KIND."""
    tree = host_trees.write_tree(os.path.join(root, hostname), kind,
                                 faults=faults, hostname=hostname)
    return collector.collect(tree, now=1.0)


class FactsTestCase(tu.CommandTestCase):

    def setUp(self):
        super().setUp()
        self.prometheus = FakePrometheus(self.placement.mock)
        self.useFixture(fixtures.EnvironmentVariable(
            'GPUCLIENT_PROMETHEUS_URL'))
        self.useFixture(fixtures.EnvironmentVariable(
            'GPUCLIENT_PROMETHEUS_SELECTOR'))
        self.cm.gpu.cloud_config = {'prometheus_endpoint': PROM}
        self.trees = self.useFixture(fixtures.TempDir()).path
        self.publish('passthrough', 'gpu-pt-1.gpu.test', '10.0.0.1:9100')
        self.publish('vgpu', 'gpu-vgpu-1', '10.0.0.2:9100')
        self.publish('mig', 'gpu-mig-1.example.org', '10.0.0.3:9100')

    def publish(self, kind, hostname, instance, faults=(), **labels):
        """A host of KIND, with FAULTS, as its collector and node_exporter
        publish it."""
        root = os.path.join(self.trees, '%d' % len(self.prometheus.series))
        self.prometheus.add(facts_of(root, kind, hostname, faults),
                            instance, **labels)

    def facts(self, *args):
        return self.run_cmd(host_cmd.FactsHost, *args)

    def by_device(self, rows, host):
        return {r['Device']: r for r in rows if r['Host'] == host}

    def openstack_requests(self):
        """Requests to Nova and Placement (the Prometheus queries, which
        the same requests_mock answers, apart)."""
        return self.requests() - len(self.prometheus.queries)


class TestFactsParser(base.CommandTestCase):

    def parser(self):
        return host_cmd.FactsHost(self.make_app(None), None)

    def test_options(self):
        self.check_parser(self.parser(), [], [
            ('hosts', []), ('pool', None), ('long', False),
            ('prometheus', None), ('prometheus_selector', None)])
        self.check_parser(
            self.parser(),
            ['gpu-1', 'gpu-2', '--pool', 'p', '--long', '--prometheus',
             'http://p:9090', '--prometheus-selector', 'region=One'],
            [('hosts', ['gpu-1', 'gpu-2']), ('pool', 'p'), ('long', True),
             ('prometheus', 'http://p:9090'),
             ('prometheus_selector', ['region=One'])])


class TestFacts(FactsTestCase):

    def test_every_gpu_host(self):
        rows = self.facts()
        self.assertEqual(list(host_cmd.FACTS_COLUMNS), list(rows[0]))
        # the hosts of every pool but the bare-metal one, by name
        self.assertEqual(sorted(HOSTS), sorted({r['Host'] for r in rows}))
        pt = self.by_device(rows, 'gpu-pt-1')
        self.assertEqual(sorted(PT_GPUS), sorted(pt))
        first = pt[PT_GPUS[0]]
        self.assertEqual(
            {'Driver': 'vfio-pci', 'Group Drivers': {
                PT_GPUS[0][:-1] + '1': 'vfio-pci'},
             'NUMA Node': 0, 'VFs': None, 'vGPU Types': [], 'MIG': None,
             'MIG Layout': None, 'Age': 120, 'Status': 'ok'},
            {k: first[k] for k in ('Driver', 'Group Drivers', 'NUMA Node',
                                   'VFs', 'vGPU Types', 'MIG', 'MIG Layout',
                                   'Age', 'Status')})
        self.assertEqual(1, pt[PT_GPUS[2]]['NUMA Node'])
        vgpu = self.by_device(rows, 'gpu-vgpu-1')
        self.assertEqual(sorted(VGPU_GPUS), sorted(vgpu))
        self.assertEqual(
            ['nvidia-35 (GRID T4-2Q): 1 made, 7 available'],
            vgpu[VGPU_GPUS[0]]['vGPU Types'])
        self.assertEqual('nvidia', vgpu[VGPU_GPUS[0]]['Driver'])
        mig = self.by_device(rows, 'gpu-mig-1')[MIG_GPU]
        self.assertEqual(
            ('7/7', 'enabled', ['1g.10gb'] * 7,
             ['nvidia-901 (NVIDIA A100D-1-10C): 1 made, 6 available']),
            (mig['VFs'], mig['MIG'], mig['MIG Layout'], mig['vGPU Types']))
        # one query per family, at one time, whatever the hosts
        self.assertEqual(list(facts_join.queries().values()),
                         self.prometheus.queries)
        self.assertEqual(1, len(set(self.prometheus.times)))

    def test_long(self):
        rows = self.facts('--long', 'gpu-vgpu-1')
        self.assertEqual(list(host_cmd.FACTS_COLUMNS
                              + host_cmd.LONG_FACTS_COLUMNS), list(rows[0]))
        self.assertEqual(
            {'IOMMU Active': True,
             'Kernel IOMMU Args': {'intel_iommu': 'on', 'iommu': 'pt'},
             'Kernel': host_trees.KERNEL,
             'NVIDIA Driver': host_trees.DRIVER, 'libvirt': '10.0.0',
             'QEMU': '8.2.2', 'nova-compute': '29.0.0', 'mdevctl': True,
             'Unreadable': []},
            {k: rows[0][k] for k in host_cmd.LONG_FACTS_COLUMNS})

    def test_table_output(self):
        cmd = host_cmd.FactsHost(self.make_app(self.cm.client_manager), None)
        parsed = self.check_parser(cmd, ['gpu-mig-1'])
        _columns, data = cmd.take_action(parsed)
        cells = dict(zip(host_cmd.FACTS_COLUMNS, data[0], strict=True))
        self.assertEqual('2m 0s', cells['Age'].human_readable())
        self.assertEqual(120, cells['Age'].machine_readable())
        self.assertEqual(', '.join(['1g.10gb'] * 7),
                         cells['MIG Layout'].human_readable())

    def test_any_name_of_a_host(self):
        for name in ('gpu-pt-1', 'gpu-pt-1.gpu.test'):
            rows = self.facts(name)
            self.assertEqual({'gpu-pt-1'}, {r['Host'] for r in rows}, name)
        self.assertIn('gpu-pt-1.gpu.test', self.logger.output)

    def test_pool(self):
        rows = self.facts('--pool', 'ws')
        self.assertEqual({'gpu-vgpu-1'}, {r['Host'] for r in rows})
        rows = self.facts('--pool', 'ws', 'gpu-vgpu-1')
        self.assertEqual({'gpu-vgpu-1'}, {r['Host'] for r in rows})

    def test_bad_input_refused_before_prometheus(self):
        for args, message in (
                (['gpu-nope'], 'gpu-nope'),
                (['--pool', 'nope'], 'nope'),
                (['--pool', 'ws', 'gpu-pt-1'],
                 'Host gpu-pt-1 is not in pool ws (its hosts: gpu-vgpu-1): '
                 'drop --pool, or name a host of the pool.'),
                (['--pool', 'metal'], 'is a bare-metal pool'),
                (['--prometheus-selector', 'region'], 'region')):
            error = self.assertRaises(exceptions.CommandError, self.facts,
                                      *args)
            self.assertIn(message, str(error))
        self.assertEqual([], self.prometheus.queries)

    def test_no_prometheus(self):
        self.cm.gpu.cloud_config = {}
        sent = self.requests()
        error = self.assertRaises(exceptions.CommandError, self.facts)
        self.assertIn('--prometheus', str(error))
        self.assertIn('prometheus_endpoint', str(error))
        self.assertEqual(sent, self.requests())
        # the option is enough
        rows = self.facts('--prometheus', PROM, 'gpu-vgpu-1')
        self.assertEqual({'gpu-vgpu-1'}, {r['Host'] for r in rows})

    def test_prometheus_failing_is_one_error(self):
        self.prometheus.status = 500
        error = self.assertRaises(exceptions.CommandError, self.facts)
        self.assertIn('The host facts could not be read: Querying '
                      'Prometheus at http://prom.test:9090', str(error))
        self.assertEqual(1, len(self.prometheus.queries))

    def test_an_answer_of_a_wrong_shape_judges_no_host(self):
        self.prometheus.bad[series.DRIVER.name] = {
            'resultType': 'vector', 'result': [{'metric': ['x']}]}
        error = self.assertRaises(exceptions.CommandError, self.facts)
        self.assertIn(series.DRIVER.name, str(error))

    def test_a_host_without_series(self):
        self.prometheus.drop('gpu-vgpu-1')
        rows = self.facts()
        self.assertEqual(
            [(None, 'no facts: is gpuclient-host-facts running there?')],
            [(r['Device'], r['Status']) for r in rows
             if r['Host'] == 'gpu-vgpu-1'])
        self.prometheus.series = []
        rows = self.facts()
        self.assertEqual(sorted(HOSTS), sorted(r['Host'] for r in rows))
        self.assertIn('Prometheus holds no gpuclient_host_* series',
                      self.logger.output)

    def test_a_host_out_of_every_pool_is_listed(self):
        self.cloud.compute_host('gpu-vf-1')
        self.publish('vgpu-vf', 'gpu-vf-1', '10.0.0.4:9100')
        rows = self.facts()
        vf = self.by_device(rows, 'gpu-vf-1')
        self.assertEqual(['0000:a1:00.0'], list(vf))
        self.assertEqual(('8/8', ['L40S-24Q x2', 'none x6']),
                         (vf['0000:a1:00.0']['VFs'],
                          vf['0000:a1:00.0']['vGPU Types']))

    def test_two_collectors_for_one_host(self):
        self.publish('passthrough', 'gpu-pt-1', '10.0.0.9:9100',
                     faults=('gpu-on-nvidia',))
        rows = self.facts('gpu-pt-1')
        self.assertEqual(1, len(rows))
        self.assertIsNone(rows[0]['Device'])
        self.assertIn('not judged: two collectors say they are host '
                      'gpu-pt-1 (10.0.0.1:9100 as gpu-pt-1.gpu.test, '
                      '10.0.0.9:9100 as gpu-pt-1)', rows[0]['Status'])

    def test_a_guest_does_not_speak_for_a_host(self):
        # a tenant's VM, found by Prometheus' OpenStack discovery,
        # publishing series in gpu-vgpu-1's name
        self.publish('passthrough', 'gpu-vgpu-1', '192.168.7.7:9100',
                     faults=('iommu-off',), instance_id='a-server')
        rows = self.facts('gpu-vgpu-1')
        self.assertEqual(sorted(VGPU_GPUS), sorted(r['Device'] for r in rows))
        self.assertEqual({'ok'}, {r['Status'] for r in rows})
        self.assertIn('left out: a guest does not speak for a host',
                      self.logger.output)

    def test_faults_and_unreadable_facts(self):
        self.prometheus.drop('gpu-pt-1.gpu.test')
        self.publish('passthrough', 'gpu-pt-1', '10.0.0.1:9100', faults=(
            'gpu-on-nvidia', 'audio-on-snd-hda-intel', 'missing-numa-node',
            'unreadable-cmdline'))
        rows = self.facts('--long', 'gpu-pt-1')
        first = self.by_device(rows, 'gpu-pt-1')[PT_GPUS[0]]
        self.assertEqual(
            ('nvidia', {PT_GPUS[0][:-1] + '1': 'snd_hda_intel'},
             'unreadable', 'unreadable'),
            (first['Driver'], first['Group Drivers'], first['NUMA Node'],
             first['Kernel IOMMU Args']))
        self.assertEqual(['kernel_cmdline', 'numa_node (%s)' % PT_GPUS[0]],
                         first['Unreadable'])
        second = self.by_device(rows, 'gpu-pt-1')[PT_GPUS[1]]
        self.assertEqual(('vfio-pci', 0), (second['Driver'],
                                           second['NUMA Node']))

    def test_selector(self):
        self.cm.gpu.cloud_config['prometheus_selector'] = 'region=One'
        self.prometheus.series = [
            (name, dict(labels, region='One'), value)
            for name, labels, value in self.prometheus.series]
        # the same host name in another region's series: left out
        self.publish('passthrough', 'gpu-vgpu-1', '10.1.0.2:9100',
                     region='Two')
        rows = self.facts('gpu-vgpu-1')
        self.assertEqual(sorted(VGPU_GPUS), sorted(r['Device'] for r in rows))
        self.assertTrue(all(q.endswith('{region="One"}')
                            for q in self.prometheus.queries))


class TestReader(FactsTestCase):
    """host_facts_ops.read, as gpu check calls it."""

    def test_fills_the_model(self):
        cloud = snapshot.read(self.cm.gpu)
        sent = self.openstack_requests()
        problems = host_facts_ops.read(self.cm.gpu, cloud)
        # the cloud was read with its services and hypervisors
        self.assertEqual(sent, self.openstack_requests())
        self.assertEqual({}, problems)
        self.assertEqual(sorted(HOSTS), sorted(cloud.host_facts))
        self.assertEqual('gpu-mig-1.example.org',
                         cloud.host_facts['gpu-mig-1'].hostname)
        self.assertEqual(len(facts_join.queries()),
                         len(self.prometheus.queries))

    def test_reads_hosts_it_lacks(self):
        cloud = snapshot.read_aggregates(self.cm.gpu)
        host_facts_ops.read(self.cm.gpu, cloud)
        self.assertEqual(sorted(HOSTS), sorted(cloud.host_facts))

    def test_not_configured_and_unread(self):
        cloud = snapshot.read(self.cm.gpu)
        self.cm.gpu.cloud_config = {}
        self.assertEqual({}, host_facts_ops.read(self.cm.gpu, cloud))
        self.assertIsNone(cloud.host_facts)
        self.assertIn('--prometheus', cloud.unconfigured['host_facts'])
        self.assertEqual([], self.prometheus.queries)
        self.prometheus.status = 503
        self.assertEqual({}, host_facts_ops.read(self.cm.gpu, cloud,
                                                 url=PROM))
        self.assertIsNone(cloud.host_facts)
        self.assertIn('HTTP 503', cloud.unread['host_facts'])

    def test_problems(self):
        self.publish('vgpu', 'gpu-vgpu-1', '10.0.0.8:9100')
        cloud = snapshot.read(self.cm.gpu)
        problems = host_facts_ops.read(self.cm.gpu, cloud)
        self.assertEqual(['gpu-vgpu-1'], list(problems))
        self.assertTrue(cloud.host_facts['gpu-vgpu-1'].conflicting)


class TestRequests(testtools.TestCase):
    """The gate of gpuclient.tests.bench_host_facts: gpu host facts, the
    reader alone and gpu check's host checks send as many requests and
    PromQL queries at ten times the hosts."""

    def test_requests_do_not_grow_with_hosts(self):
        small, large = (bench_host_facts.measure(n) for n in (10, 100))
        self.assertEqual([10, 100], [small[0].hosts, large[0].hosts])
        self.assertEqual([10, 100], [small[0].rows // 4, large[0].rows // 4])
        for few, many in zip(small, large, strict=True):
            self.assertEqual(few.what, many.what)
            self.assertEqual((few.openstack, few.queries),
                             (many.openstack, many.queries), few.what)
        # gpu host facts and the reader: one query per family; gpu check
        # with its host checks sends those and the DCGM checks' (for
        # gpu-driver-drift), as many at ten times the hosts (above)
        self.assertEqual([len(facts_join.queries())] * 2,
                         [m.queries for m in small[:2]])
        self.assertEqual('gpu check (hosts)', small[2].what)
        self.assertLess(len(facts_join.queries()), small[2].queries)
        # the reader of a cloud read with its hosts asks OpenStack nothing
        self.assertEqual(0, small[1].openstack)
