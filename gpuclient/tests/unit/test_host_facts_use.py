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

"""The facts gpuclient-host-facts collected, used where they were missing
(issue 54 item 4), through the commands on the strict fake clouds and a
fake Prometheus holding what the collector writes of the fake host trees
(tools/cloud/host_trees.py: a passthrough host's 4 H100s on vfio-pci, 2 on
each NUMA node, as the test cloud's fake driver reports them; libvirt
10.0.0, QEMU 8.2.2 and nova-compute 29.0.0, Nova 2024.1) and node_exporter's
NUMA nodes: ``gpu capacity list`` and ``gpu candidate list`` judge the
NUMA fit of flavors asking PCI devices where it was "not judged", and
``gpu host drain`` plans the live migrations Nova allows; ``--host-fact``
wins and says so; two collectors for a host, a GPU on another driver and
a failing Prometheus leave the rows as they were; the requests and queries
do not grow with the hosts."""

import io
import urllib.parse

import fixtures

from gpuclient.rules import numa_metrics
from gpuclient.rules import pools
from gpuclient.rules import specs
from gpuclient.rules.host_facts import join as facts_join
from gpuclient.tests.unit import base
from gpuclient.tests.unit import fakes
from gpuclient.tests.unit import test_host_facts_command as thfc
from gpuclient.tests.unit import test_usage as tu
from gpuclient.tests.unit.scheduler import test_explain as recorded
from gpuclient.tests.unit.v1 import test_candidates as tc
from gpuclient.v1 import capacity as capacity_cmd
from gpuclient.v1 import host as host_cmd

PROM = thfc.PROM
GIB = 1024
COLLECTOR = 'gpuclient-host-facts'
FROM_COLLECTOR = 'judged (prometheus and host facts (%s))' % COLLECTOR
NOT_JUDGED_DEVICES = ('not judged: which cell holds its PCI devices is not '
                      'known')
NUMA_QUERIES = tuple(numa_metrics.queries().values())
FACT_QUERIES = tuple(facts_join.queries().values())


class Prometheus(thfc.FakePrometheus):
    """The fake Prometheus of gpu host facts' tests, holding also
    node_exporter's NUMA nodes of the hosts in ``numa`` ({host: [GiB of
    each node]}, no huge pages), as rules.numa_metrics asks them."""

    def __init__(self, mock):
        self.numa = {}
        super().__init__(mock)

    def answer(self, request, context):
        form = dict(urllib.parse.parse_qsl(request.text))
        if form['query'] not in NUMA_QUERIES:
            return super().answer(request, context)
        self.queries.append(form['query'])
        self.times.append(form.get('time'))
        if self.status:
            context.status_code = self.status
            return {'status': 'error', 'errorType': 'internal',
                    'error': 'storage is down'}
        huge = form['query'] == NUMA_QUERIES[1]
        return {'status': 'success', 'data': {
            'resultType': 'vector', 'result': [
                {'metric': {'__name__': form['query'], 'node': str(node),
                            'instance': '%s:9100' % host, 'job': 'node'},
                 'value': [1.0, str(0 if huge else gib << 30)]}
                for host, nodes in sorted(self.numa.items())
                for node, gib in enumerate(nodes)]}}

    @classmethod
    def instead_of(cls, case):
        """CASE's fake Prometheus, holding the series it published, made
        one of these."""
        found = cls(case.placement.mock)
        found.series = case.prometheus.series
        return found


def numa_host(hypervisor):
    """HYPERVISOR as the test cloud's passthrough host shows it: 64 CPUs
    and 512 GiB on 2 NUMA cells (cpu_info), no server."""
    hypervisor.update(
        vcpus=64, memory_mb=512 * GIB, memory_mb_used=512, running_vms=0,
        hypervisor_type='QEMU', cpu_info={'topology': {
            'cells': 2, 'sockets': 2, 'cores': 32, 'threads': 1}})


def owned(cloud):
    """CLOUD's compute nodes marked as Nova 34 marks them (its request's
    root_required=OWNER_NOVA)."""
    for provider in cloud.providers:
        if provider.parent is None and 'OWNER_NOVA' not in provider.traits:
            provider.traits.append('OWNER_NOVA')


class TestCapacity(thfc.FactsTestCase):
    """gpu capacity list: gpu-pt-1 (pool solver, 4 H100s, the test cloud's
    passthrough host) and one-cell flavors asking 2 and 3 GPUs under the
    required policy: Placement fits 2 and 1, Nova's NUMA fit 2 and 0."""

    def setUp(self):
        super().setUp()
        self.prometheus = Prometheus.instead_of(self)
        self.prometheus.numa = {'gpu-pt-1': [256, 256]}
        for hypervisor in self.cloud.hypervisors:
            if hypervisor['service']['host'] == 'gpu-pt-1':
                numa_host(hypervisor)
        owned(self.cloud)
        for gpus in (2, 3):
            self.flavor('g1.h100.%d' % gpus, gpus)

    def flavor(self, name, gpus):
        derived = specs.derive(tu.pool_of(tu.PT_SPEC), gpus=gpus)
        for aggregate in self.cloud.aggregates:
            if aggregate.name == 'solver':
                aggregate.metadata.update(derived['aggregate_metadata'])
        self.cloud.add_flavor(name, extra_specs=dict(
            derived['extra_specs'], **{
                'hw:numa_nodes': '1',
                'hw:pci_numa_affinity_policy': 'required'}))

    def capacity(self, *args):
        """{flavor: (Fits, NUMA)} of gpu-pt-1."""
        rows = self.run_cmd(capacity_cmd.ListCapacity, '--per-host', *args)
        return {row['Flavor']: (row['Fits'], row['NUMA']) for row in rows
                if row['Host'] == 'gpu-pt-1'}

    def test_not_judged_without_the_collector_judged_with_it(self):
        # a cloud without the collector on gpu-pt-1: which cell holds each
        # GPU is not known, and no number is given
        self.prometheus.drop('gpu-pt-1.gpu.test')
        found = self.capacity()
        for flavor in ('g1.h100.2', 'g1.h100.3'):
            self.assertIsNone(found[flavor][0])
            self.assertTrue(found[flavor][1].startswith(NOT_JUDGED_DEVICES),
                            found[flavor][1])
        self.assertNotIn('overrides', self.logger.output)
        # with it: the fit of the fake driver's topology, 2 GPUs a cell
        self.publish('passthrough', 'gpu-pt-1.gpu.test', '10.0.0.1:9100')
        self.assertEqual({'g1.h100.2': (2, FROM_COLLECTOR),
                          'g1.h100.3': (0, FROM_COLLECTOR)},
                         self.capacity())

    def test_an_operators_fact_wins_and_says_so(self):
        found = self.capacity('--host-fact', 'gpu-pt-1:numa_gpus=4,0')
        self.assertEqual((1, 'judged (prometheus and host facts)'),
                         found['g1.h100.3'])
        self.assertIn('--host-fact numa_gpus=4,0 overrides what %s collected '
                      'on gpu-pt-1 (numa_gpus=2,2).' % COLLECTOR,
                      self.logger.output)
        # the same as collected: nothing to say
        self.logger = self.useFixture(fixtures.FakeLogger())
        found = self.capacity('--host-fact', 'gpu-pt-1:numa_gpus=2,2')
        self.assertEqual((0, 'judged (prometheus and host facts)'),
                         found['g1.h100.3'])
        self.assertNotIn('overrides', self.logger.output)

    def test_two_collectors_leave_it_not_judged(self):
        self.publish('passthrough', 'gpu-pt-1', '10.0.0.9:9100')
        found = self.capacity()
        self.assertIsNone(found['g1.h100.3'][0])
        self.assertTrue(found['g1.h100.3'][1].startswith(NOT_JUDGED_DEVICES))
        self.assertIn('The facts %s collected on gpu-pt-1 are not used: '
                      'the series of 2 collectors' % COLLECTOR,
                      self.logger.output)

    def test_a_gpu_on_another_driver_leaves_it_not_judged(self):
        # whether Nova counts it depends on its device_spec, not shown
        self.prometheus.drop('gpu-pt-1.gpu.test')
        self.publish('passthrough', 'gpu-pt-1.gpu.test', '10.0.0.1:9100',
                     faults=('gpu-on-nvidia',))
        found = self.capacity()
        self.assertTrue(found['g1.h100.3'][1].startswith(NOT_JUDGED_DEVICES))

    def test_a_failing_prometheus_is_a_warning(self):
        self.prometheus.status = 500
        found = self.capacity()
        self.assertIsNone(found['g1.h100.3'][0])
        self.assertIn('Host facts not read from Prometheus',
                      self.logger.output)

    def test_no_flavor_asking_devices_and_a_cell_asks_no_fact(self):
        self.cloud.flavors = []
        self.flavor('g1.h100.1', 1)
        self.cloud.flavors[0]['extra_specs'].pop('hw:numa_nodes')
        self.capacity()
        self.assertEqual([], self.prometheus.queries)

    def test_requests_and_queries_do_not_grow_with_hosts(self):
        def measured():
            self.capacity()
            sent, asked = self.openstack_requests(), len(
                self.prometheus.queries)
            self.capacity()
            return (self.openstack_requests() - sent,
                    len(self.prometheus.queries) - asked)
        few = measured()
        self.assertEqual(len(NUMA_QUERIES) + len(FACT_QUERIES), few[1])
        solver = [a for a in self.cloud.aggregates if a.name == 'solver'][0]
        for n in range(2, 12):
            name = 'gpu-pt-%d' % n
            self.cloud.pci_host(name)
            owned(self.cloud)
            numa_host(self.cloud.hypervisors[-1])
            solver.hosts.append(name)
            self.prometheus.numa[name] = [256, 256]
            self.publish('passthrough', name, '10.0.1.%d:9100' % n)
        self.assertEqual(few, measured())


class TestCandidates(tc.CandidatesTestCase):
    """gpu candidate list: a one-cell flavor asking one H100 under the
    required policy, on gpu-pt-1 (Placement offers it)."""

    ARGS = ['--flavor', 'g1.numa.required', '--alias-map', 'h100=10de:2331']

    def setUp(self):
        super().setUp()
        for variable in ('GPUCLIENT_PROMETHEUS_URL',
                         'GPUCLIENT_PROMETHEUS_SELECTOR'):
            self.useFixture(fixtures.EnvironmentVariable(variable))
        self.cm.gpu.cloud_config = {'prometheus_endpoint': PROM}
        self.cloud.hypervisors = [dict(hv) for hv in recorded.HYPERVISORS]
        for hypervisor in self.cloud.hypervisors:
            numa_host(hypervisor)
        self.prometheus = Prometheus(self.placement.mock)
        self.prometheus.numa = {'gpu-pt-1': [256, 256]}
        self.trees = self.useFixture(fixtures.TempDir()).path
        self.prometheus.add(thfc.facts_of(self.trees, 'passthrough',
                                          'gpu-pt-1'), '10.0.0.1:9100')
        self.one_candidate()

    def _compute_get(self, url, microversion=None, params=None, **kwargs):
        path = fakes.nova_path(url)
        for gpus in (1, 3):
            name = 'g1.numa.required' + ('' if gpus == 1 else str(gpus))
            if path == '/flavors/' + name:
                return fakes.make_response(200, {'flavor': dict(
                    tc.FLAVOR, id='f-%d' % gpus, name=name,
                    extra_specs=dict(tc.FLAVOR['extra_specs'], **{
                        'pci_passthrough:alias': 'h100:%d' % gpus,
                        'hw:numa_nodes': '1',
                        'hw:pci_numa_affinity_policy': 'required'}))})
        return super()._compute_get(url, microversion, params, **kwargs)

    def row(self, *args):
        _cmd, _parsed, (columns, rows) = self.run_cmd(self.ARGS + list(args))
        return dict(zip(columns, rows[0], strict=True))

    def test_judged_with_the_collectors_facts(self):
        self.assertEqual(FROM_COLLECTOR, self.row()['NUMA'])
        self.assertEqual(list(NUMA_QUERIES + FACT_QUERIES),
                         self.prometheus.queries)
        # without them, as before
        self.prometheus.drop('gpu-pt-1')
        self.assertTrue(self.row()['NUMA'].startswith(NOT_JUDGED_DEVICES))

    def test_the_explanation_names_the_collector(self):
        # 3 GPUs on one cell, where the cells hold 2 each
        row = self.row('--flavor', 'g1.numa.required3', '--explain')
        self.assertFalse(row['Candidate'])
        self.assertEqual(
            ['the NUMA cells holding the guest have 2 of the 3 PCI devices '
             'it asks (policy required) (NUMATopologyFilter, from '
             'prometheus and host facts (%s)).' % COLLECTOR],
            row['Reason'].machine_readable())


class DrainTestCase(base.CommandTestCase):
    """gpu host drain over the strict fake cloud of test_drain: two vGPU
    hosts of pool ws and two passthrough hosts of pool solver, each
    publishing the facts of its kind's fake tree."""

    HOSTS = {'gpu-vgpu-1': 'vgpu', 'gpu-vgpu-2': 'vgpu',
             'gpu-pt-1': 'passthrough', 'gpu-pt-2': 'passthrough'}

    def setUp(self):
        super().setUp()
        self.cloud = fakes.FakeCloud()
        for name, kind in self.HOSTS.items():
            if kind == 'vgpu':
                self.cloud.vgpu_host(name, traits=['CUSTOM_NVIDIA_35'])
            else:
                self.cloud.pci_host(name)
        owned(self.cloud)
        self.specs = {}
        for spec in (tu.PT_SPEC, tu.VGPU_SPEC):
            hosts = [h for h, kind in self.HOSTS.items()
                     if kind == spec['mode']]
            pool = fakes.Aggregate(spec['name'], pools.metadata_for(spec),
                                   hosts)
            self.cloud.aggregates.append(pool)
            derived = specs.derive(tu.pool_of(spec), gpus=1)
            pool.metadata.update(derived['aggregate_metadata'])
            self.specs[spec['mode']] = derived['extra_specs']
        placement = self.useFixture(fakes.PlacementFixture(self.cloud))
        self.cm = self.useFixture(fakes.ClientManagerFixture(self.cloud))
        for variable in ('GPUCLIENT_PROMETHEUS_URL',
                         'GPUCLIENT_PROMETHEUS_SELECTOR'):
            self.useFixture(fixtures.EnvironmentVariable(variable))
        self.cm.gpu.cloud_config = {'prometheus_endpoint': PROM}
        self.prometheus = Prometheus(placement.mock)
        trees = self.useFixture(fixtures.TempDir()).path
        for name, kind in self.HOSTS.items():
            self.prometheus.add(thfc.facts_of(trees, kind, name),
                                '%s:9100' % name)
        self.logger = self.useFixture(fixtures.FakeLogger())

    def drain(self, host, *args):
        """The rows of gpu host drain HOST --dry-run ARGS, by server."""
        cmd = host_cmd.DrainHost(self.make_app(self.cm.client_manager), None)
        cmd.app.stderr = io.StringIO()
        parsed = self.check_parser(cmd, [host, '--dry-run', *args])
        columns, rows = cmd.take_action(parsed)
        return {row[0]: dict(zip(columns, row, strict=True))
                for row in rows}


class TestDrain(DrainTestCase):

    def test_a_vgpu_server_live_migrates_by_the_collected_versions(self):
        server = self.cloud.add_server('a', 'gpu-vgpu-1', self.specs['vgpu'],
                                       gpus={'VGPU': 1})
        row = self.drain('gpu-vgpu-1', '--allow-downtime')[server['id']]
        # Nova 2024.1, libvirt 10.0.0 and QEMU 8.2.2 on both hosts, which
        # offer nvidia-35: Nova live-migrates it
        self.assertEqual(('live', 'gpu-vgpu-2', 'none', None),
                         (row['Method'], row['Destination'],
                          row['Downtime'], row['Reason']))
        self.assertEqual(list(FACT_QUERIES), self.prometheus.queries)
        # without the collector's facts: not judged, so not planned
        for host in ('gpu-vgpu-1', 'gpu-vgpu-2'):
            self.prometheus.drop(host)
        row = self.drain('gpu-vgpu-1', '--allow-downtime')[server['id']]
        self.assertEqual('cold', row['Method'])
        self.assertIn('the Nova version of gpu-vgpu-1 is not known',
                      row['Reason'])

    def test_an_operators_version_wins_and_says_so(self):
        server = self.cloud.add_server('a', 'gpu-vgpu-1', self.specs['vgpu'],
                                       gpus={'VGPU': 1})
        row = self.drain('gpu-vgpu-1', '--allow-downtime', '--host-fact',
                         'gpu-vgpu-2:libvirt=8.0.0')[server['id']]
        self.assertEqual('cold', row['Method'])
        self.assertIn('gpu-vgpu-2 has libvirt 8.0.0, and Nova needs 8.6.0 '
                      'or newer', row['Reason'])
        self.assertIn('--host-fact libvirt=8.0.0 overrides what %s '
                      'collected on gpu-vgpu-2 (libvirt=10.0.0).'
                      % COLLECTOR, self.logger.output)

    def test_a_passthrough_server_judged_by_the_collected_release(self):
        server = self.cloud.add_server(
            'a', 'gpu-pt-1', self.specs['passthrough'],
            gpus={'CUSTOM_PCI_10DE_2331': 1})
        row = self.drain('gpu-pt-1', '--allow-downtime')[server['id']]
        self.assertEqual(('cold', 'gpu-pt-2'),
                         (row['Method'], row['Destination']))
        self.assertIn('gpu-pt-1 has Nova 2024.1, and Nova needs 2025.1 or '
                      'newer', row['Reason'])
        self.assertNotIn('version of gpu-pt-1 is not known', row['Reason'])

    def test_a_cold_drain_asks_prometheus_nothing(self):
        self.cloud.add_server('a', 'gpu-vgpu-1', self.specs['vgpu'],
                              gpus={'VGPU': 1})
        self.drain('gpu-vgpu-1', '--allow-downtime', '--method', 'cold')
        self.assertEqual([], self.prometheus.queries)

    def test_the_prometheus_option(self):
        self.cm.gpu.cloud_config = {}
        server = self.cloud.add_server('a', 'gpu-vgpu-1', self.specs['vgpu'],
                                       gpus={'VGPU': 1})
        row = self.drain('gpu-vgpu-1', '--allow-downtime')[server['id']]
        self.assertEqual('cold', row['Method'])
        self.assertEqual([], self.prometheus.queries)
        row = self.drain('gpu-vgpu-1', '--allow-downtime', '--prometheus',
                         PROM)[server['id']]
        self.assertEqual('live', row['Method'])


class TestDrainParser(base.CommandTestCase):

    def test_prometheus_options(self):
        cmd = host_cmd.DrainHost(self.make_app(None), None)
        self.check_parser(cmd, ['gpu-1', '--prometheus', 'http://p:9090',
                                '--prometheus-selector', 'region=One'], [
            ('prometheus', 'http://p:9090'),
            ('prometheus_selector', ['region=One'])])
        self.check_parser(cmd, ['gpu-1'], [('prometheus', None),
                                           ('prometheus_selector', None)])
