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

"""gpu capacity list over a fake cloud: the whole path, snapshot to rows."""

import urllib.parse

import fixtures
from osc_lib import exceptions

from gpuclient.rules import pools
from gpuclient.rules import specs
from gpuclient.rules.host_facts import join as facts_join
from gpuclient.tests.unit import base
from gpuclient.tests.unit import fakes
from gpuclient.v1 import capacity as capacity_cmd

PROM = 'http://prom.test:9090'
PT_SPEC = pools.build_spec('solver', 'passthrough', alias='h100',
                           pci_id='10de:2331')
VGPU_SPEC = pools.build_spec('ws', 'vgpu', vgpu_type='nvidia-35')


def derive(spec, gpus=1):
    pool = pools.pool_from_aggregate(
        fakes.Aggregate(spec['name'], pools.metadata_for(spec)))
    return specs.derive(pool, gpus=gpus)


class CapacityTestCase(base.CommandTestCase):
    def setUp(self):
        super().setUp()
        self.cloud = fakes.FakeCloud()
        # 4 H100s, 1 used; 32 VCPU (x4), 256 GiB
        self.pt = self.cloud.pci_host('gpu-pt-1', used=1)
        # 2 pGPUs of 4 vGPUs; the first has 3 used, so 1 + 4 free
        self.vgpu = self.cloud.vgpu_host('gpu-vgpu-1', used=(3, 0),
                                         traits=['CUSTOM_NVIDIA_35'])
        self.cloud.compute_host('plain-1')
        for root in self.cloud.providers:
            if root.parent is None:
                # Nova 34 marks its compute nodes (root_required=OWNER_NOVA)
                root.traits.append('OWNER_NOVA')
        self.cloud.aggregates += [
            fakes.Aggregate('solver', pools.metadata_for(PT_SPEC),
                            ['gpu-pt-1']),
            fakes.Aggregate('ws', pools.metadata_for(VGPU_SPEC),
                            ['gpu-vgpu-1']),
        ]

    def flavor(self, name, spec, gpus=1, **sizes):
        derived = derive(spec, gpus)
        # what gpu flavor create adds to the pool (group_policy=isolate)
        for agg in self.cloud.aggregates:
            if agg.name == spec['name']:
                agg.metadata.update(derived['aggregate_metadata'])
        return self.cloud.add_flavor(
            name, extra_specs=derived['extra_specs'], **sizes)

    def run_cmd(self, *args):
        placement = self.useFixture(fakes.PlacementFixture(self.cloud))
        if getattr(self, 'numa_nodes', None):
            placement.mock.post(PROM + '/api/v1/query', json=self._prom)
        cm = self.useFixture(fakes.ClientManagerFixture(self.cloud))
        cmd = capacity_cmd.ListCapacity(self.make_app(cm.client_manager),
                                        None)
        parsed = self.check_parser(cmd, list(args))
        columns, data = cmd.take_action(parsed)
        # the reasons -f openmetrics writes (a fixed set), by row
        self.reasons = [row[columns.index('Stranded Reason')].counts
                        for row in data]
        return [dict(zip(columns, (
            v.machine_readable() if hasattr(v, 'machine_readable') else v
            for v in row), strict=True)) for row in data]


class TestFits(CapacityTestCase):
    def test_passthrough_and_vgpu_counts(self):
        self.flavor('g1.h100.1', PT_SPEC)
        self.flavor('g1.h100.2', PT_SPEC, gpus=2)
        self.flavor('v1.small', VGPU_SPEC)
        self.flavor('v1.pair', VGPU_SPEC, gpus=2)
        rows = {r['Flavor']: r for r in self.run_cmd()}
        # 3 free H100s: three 1-GPU servers, one 2-GPU server
        self.assertEqual(3, rows['g1.h100.1']['Fits'])
        self.assertEqual(1, rows['g1.h100.2']['Fits'])
        self.assertEqual((4, 1, 3), (rows['g1.h100.1']['GPUs Total'],
                                     rows['g1.h100.1']['GPUs Used'],
                                     rows['g1.h100.1']['GPUs Free']))
        self.assertEqual(25.0, rows['g1.h100.1']['Allocated (%)'])
        self.assertEqual('solver', rows['g1.h100.1']['Pool'])
        # 1 + 4 free vGPUs: five single ones; pairs need two pGPUs each
        # (group_policy=isolate), and the first pGPU has one left: one pair
        self.assertEqual(5, rows['v1.small']['Fits'])
        self.assertEqual(1, rows['v1.pair']['Fits'])
        self.assertEqual('VGPU', rows['v1.pair']['Resource Class'])
        for row in rows.values():
            self.assertEqual(0, row['Stranded'])

    def test_host_ram_limits_fits_and_strands_the_rest(self):
        # 256 GiB - 512 MiB reserved: 100 GiB per server leaves room for 2
        self.flavor('g1.big', PT_SPEC, ram=102400)
        rows = self.run_cmd('--per-host', '--pool', 'solver')
        self.assertEqual(1, len(rows))
        row = rows[0]
        self.assertEqual('gpu-pt-1', row['Host'])
        self.assertEqual(2, row['Fits'])
        # every free H100 is usable while the flavor fits somewhere
        self.assertEqual(0, row['Stranded'])
        self.pt.used['MEMORY_MB'] = 262144 - 512 - 1024
        row = self.run_cmd('--per-host', '--pool', 'solver')[0]
        self.assertEqual(0, row['Fits'])
        self.assertEqual(3, row['Stranded'])
        self.assertEqual(3, len(row['Stranded Reason']))
        self.assertIn('has 1024 MEMORY_MB free and g1.big needs 102400',
                      row['Stranded Reason'][0])
        self.assertEqual([{'host_out_of_memory': 3}], self.reasons)

    def test_memory_encryption_slots_limit_fits(self):
        # hw:mem_encryption adds MEM_ENCRYPTION_CONTEXT=1 and the model's
        # trait to the root (Nova's _translate_mem_encryption_request):
        # with 2 SEV guest slots, 2 of the 3 free H100s can be used
        derived = derive(PT_SPEC)
        self.cloud.add_flavor('g1.sev', extra_specs=dict(
            derived['extra_specs'], **{'hw:mem_encryption': 'true'}))
        row = self.run_cmd('--per-host', '--pool', 'solver')[0]
        self.assertEqual(0, row['Fits'])
        self.assertIn('has 0 MEM_ENCRYPTION_CONTEXT free and g1.sev needs '
                      '1', row['Stranded Reason'][0])
        self.pt.inventory['MEM_ENCRYPTION_CONTEXT'] = fakes.inv(2)
        self.pt.traits.append('HW_CPU_X86_AMD_SEV')
        row = self.run_cmd('--per-host', '--pool', 'solver')[0]
        self.assertEqual(2, row['Fits'])
        self.pt.traits.remove('HW_CPU_X86_AMD_SEV')
        row = self.run_cmd('--per-host', '--pool', 'solver')[0]
        self.assertEqual(0, row['Fits'])

    def test_vgpu_left_over_for_pairs_only_is_stranded(self):
        # only pairs exist: 1 vGPU left on a pGPU with no partner free
        self.vgpu_flavor = self.flavor('v1.pair', VGPU_SPEC, gpus=2)
        second = [p for p in self.cloud.tree(self.vgpu) if p.parent][1]
        second.used['VGPU'] = 4
        rows = self.run_cmd('--per-host')
        row = [r for r in rows if r['Flavor'] == 'v1.pair'][0]
        self.assertEqual(0, row['Fits'])
        self.assertEqual(1, row['Stranded'])
        self.assertIn('v1.pair does not fit on gpu-vgpu-1',
                      row['Stranded Reason'][0])
        self.assertEqual({'request_does_not_fit': 1},
                         self.reasons[rows.index(row)])

    def test_vgpu_of_a_type_no_flavor_asks_for_is_stranded(self):
        self.flavor('v1.small', VGPU_SPEC)
        second = [p for p in self.cloud.tree(self.vgpu) if p.parent][1]
        second.traits = ['CUSTOM_NVIDIA_36']
        row = self.run_cmd('--pool', 'ws')[0]
        self.assertEqual((1, 4), (row['Fits'], row['Stranded']))
        self.assertIn('no GPU flavor asks for what it offers (4 free VGPU, '
                      'CUSTOM_NVIDIA_36)', row['Stranded Reason'][0])
        self.assertEqual([{'no_flavor': 4}], self.reasons)

    def test_disabled_host_fits_nothing(self):
        self.flavor('g1.h100.1', PT_SPEC)
        self.cloud.disabled.add('gpu-pt-1')
        row = self.run_cmd()[0]
        self.assertEqual(0, row['Fits'])
        self.assertEqual(3, row['Stranded'])
        self.assertIn('nova-compute service is disabled',
                      row['Stranded Reason'][0])
        self.assertEqual([{'host_filtered': 3}], self.reasons)

    def test_isolated_pool_keeps_unsteered_flavors_out(self):
        spec = pools.build_spec('solver', 'passthrough', alias='h100',
                                pci_id='10de:2331', isolate=True)
        self.cloud.aggregates[0].metadata = pools.metadata_for(spec)
        self.pt.traits.append(pools.pool_trait('solver'))
        self.flavor('g1.h100.1', spec)
        # a hand-made flavor asking for the same device without the trait
        self.cloud.add_flavor('raw', extra_specs={
            'resources:CUSTOM_PCI_10DE_2331': '1'})
        rows = {r['Flavor']: r for r in self.run_cmd()}
        self.assertEqual(3, rows['g1.h100.1']['Fits'])
        # the pool offers its class, but isolation keeps the flavor out
        self.assertEqual(('solver', 0), (rows['raw']['Pool'],
                                         rows['raw']['Fits']))

    def test_long_adds_columns_only(self):
        self.flavor('g1.h100.1', PT_SPEC)
        self.flavor('v1.small', VGPU_SPEC)
        short = self.run_cmd()
        rows = self.run_cmd('--long')
        # the same rows, the same values, three more columns
        self.assertEqual(len(short), len(rows))
        for plain, long in zip(short, rows, strict=True):
            self.assertEqual(plain, {k: v for k, v in long.items()
                                     if k in plain})
            self.assertEqual(['Flavor ID', 'Hosts', 'Hosts Fitting'],
                             [k for k in long if k not in plain])
            self.assertNotIn('Host', long)
        found = {r['Flavor']: r for r in rows}
        flavor_ids = {f['name']: f['id'] for f in self.cloud.flavors}
        self.assertEqual((flavor_ids['g1.h100.1'], 1, 1), (
            found['g1.h100.1']['Flavor ID'], found['g1.h100.1']['Hosts'],
            found['g1.h100.1']['Hosts Fitting']))
        self.pt.used['MEMORY_MB'] = 262144 - 512
        row = {r['Flavor']: r for r in self.run_cmd('--long')}['g1.h100.1']
        self.assertEqual((0, 1, 0), (row['Fits'], row['Hosts'],
                                     row['Hosts Fitting']))

    def test_per_host_rows(self):
        self.flavor('g1.h100.1', PT_SPEC)
        rows = self.run_cmd('--per-host', '--long')
        self.assertEqual([('g1.h100.1', 'solver', 'gpu-pt-1', 3, 1, 1)], [
            (r['Flavor'], r['Pool'], r['Host'], r['Fits'], r['Hosts'],
             r['Hosts Fitting']) for r in rows])
        rows = self.run_cmd('--per-host')
        self.assertEqual(['Flavor', 'Pool', 'Host', 'Resource Class'],
                         list(rows[0])[:4])
        self.assertNotIn('Hosts', rows[0])

    def test_numa_flavor_counted_where_judged(self):
        # 2 cells of 16 CPUs and 128 GiB (cpu_info), no server: one 80 GiB
        # guest cell per host cell, where Placement alone fits 3
        self.cloud.hypervisors[0].update(
            vcpus=32, memory_mb=262144, memory_mb_used=512, running_vms=0,
            cpu_info={'topology': {'cells': 2, 'sockets': 2, 'cores': 16,
                                   'threads': 1}})
        flavor = self.flavor('g1.numa', PT_SPEC, ram=81920)
        flavor['extra_specs']['hw:numa_nodes'] = '1'
        self.flavor('g1.h100.1', PT_SPEC)
        rows = {r['Flavor']: r for r in self.run_cmd('--per-host', '--long')}
        # the page sizes are not in cpu_info: no number, and why
        self.assertEqual((None, None), (rows['g1.numa']['Fits'],
                                        rows['g1.numa']['Hosts Fitting']))
        self.assertIn('numa_pages', rows['g1.numa']['NUMA'])
        self.assertIn('No number for g1.numa where the NUMA fit is not '
                      'judged', self.logger.output)
        self.assertEqual((3, None), (rows['g1.h100.1']['Fits'],
                                     rows['g1.h100.1']['NUMA']))
        rows = {r['Flavor']: r for r in self.run_cmd(
            '--host-fact', 'gpu-pt-1:numa_pages=4k')}
        self.assertEqual(2, rows['g1.numa']['Fits'])
        self.assertEqual('judged (cpu_info and host facts)',
                         rows['g1.numa']['NUMA'])
        # a host with no topology fits none, judged
        rows = {r['Flavor']: r for r in self.run_cmd(
            '--host-fact', 'gpu-pt-1:numa_cells=0')}
        self.assertEqual((0, 'judged (host facts)'),
                         (rows['g1.numa']['Fits'], rows['g1.numa']['NUMA']))
        # a fact for no host is refused, not dropped (issue 51 defect 10)
        error = self.assertRaises(
            exceptions.CommandError, self.run_cmd,
            '--host-fact', 'gpu-pt-1.nowhere:numa_cells=0')
        self.assertIn('--host-fact gpu-pt-1.nowhere:...: Unknown compute '
                      'host(s)', str(error))

    def _prom(self, request, context):
        """node_exporter's NUMA nodes of gpu-pt-1 (self.numa_nodes: GiB
        of each), no huge pages."""
        query = dict(urllib.parse.parse_qsl(request.text))['query']
        self.prom_queries.append(query)
        if query.startswith('gpuclient_host_'):
            # gpuclient-host-facts runs nowhere
            return {'status': 'success', 'data': {
                'resultType': 'vector', 'result': []}}
        values = {'node_memory_numa_MemTotal': [
            gib << 30 for gib in self.numa_nodes],
            'node_memory_numa_HugePages_Total': [0] * len(self.numa_nodes)}
        return {'status': 'success', 'data': {
            'resultType': 'vector', 'result': [
                {'metric': {'__name__': query, 'node': str(node),
                            'instance': 'gpu-pt-1:9100'},
                 'value': [1.0, str(value)]}
                for node, value in enumerate(values[query])]}}

    def test_numa_flavor_counted_from_prometheus(self):
        # cpu_info says 2 cells (128 GiB each, split evenly); Prometheus
        # says 2 nodes of 60 GiB: no 80 GiB guest cell fits
        self.cloud.hypervisors[0].update(
            vcpus=32, memory_mb=262144, memory_mb_used=512, running_vms=0,
            cpu_info={'topology': {'cells': 2}})
        flavor = self.flavor('g1.numa', PT_SPEC, ram=81920)
        flavor['extra_specs']['hw:numa_nodes'] = '1'
        self.numa_nodes, self.prom_queries = [60, 60], []
        rows = self.run_cmd('--per-host', '--prometheus', PROM)
        self.assertEqual([(0, 'judged (prometheus)')],
                         [(r['Fits'], r['NUMA']) for r in rows])
        # the NUMA nodes, and the cells of the hosts' GPUs (the flavor asks
        # a PCI device; none published)
        self.assertEqual(2 + len(facts_join.queries()),
                         len(self.prom_queries))
        self.numa_nodes = [128, 128]
        rows = self.run_cmd('--per-host', '--prometheus', PROM)
        self.assertEqual([(2, 'judged (prometheus)')],
                         [(r['Fits'], r['NUMA']) for r in rows])

    def test_flavor_with_an_alias_no_pool_describes_is_left_out(self):
        # a hand-made flavor asking for an alias neither a pool nor
        # nova.conf describes: the others' rows stay, a warning names it
        self.flavor('g1.h100.1', PT_SPEC)
        self.cloud.add_flavor('handmade', extra_specs={
            'pci_passthrough:alias': 'mystery:1'})
        logger = self.useFixture(fixtures.FakeLogger())
        rows = {r['Flavor']: r for r in self.run_cmd()}
        self.assertEqual(['g1.h100.1'], sorted(rows))
        self.assertEqual(3, rows['g1.h100.1']['Fits'])
        self.assertIn('handmade is left out: The flavor asks for PCI alias '
                      'mystery', logger.output)
        # asked for by name, it is the error it always was
        exc = self.assertRaises(exceptions.CommandError, self.run_cmd,
                                '--flavor', 'handmade')
        self.assertIn('PCI alias mystery, which no GPU pool describes',
                      str(exc))

    def test_unknown_flavor_and_pool(self):
        exc = self.assertRaises(exceptions.CommandError, self.run_cmd,
                                '--flavor', 'nope')
        self.assertIn('No flavor with name or ID nope', str(exc))
        exc = self.assertRaises(exceptions.CommandError, self.run_cmd,
                                '--pool', 'nope')
        self.assertIn('No GPU pool named nope', str(exc))


class TestBlazar(CapacityTestCase):
    """Issue 40, rule 6: where the cloud runs Blazar (its service type in
    the token's catalog), the hosts it holds fit no ordinary flavor; the
    same requests are sent with it or without."""

    def run_with(self, catalog, *args, blazar=None):
        """(rows, (Placement's requests, Nova's)); BLAZAR: a function
        that sets up the FakeBlazar (its calls land in self.blazar)."""
        placement = self.useFixture(fakes.PlacementFixture(self.cloud))
        cm = self.useFixture(fakes.ClientManagerFixture(
            self.cloud, catalog=catalog))
        self.blazar = cm.blazar
        if blazar is not None:
            blazar(cm.blazar)
        cmd = capacity_cmd.ListCapacity(self.make_app(cm.client_manager),
                                        None)
        columns, data = cmd.take_action(self.check_parser(cmd, list(args)))
        rows = [dict(zip(columns, (
            v.machine_readable() if hasattr(v, 'machine_readable') else v
            for v in row), strict=True)) for row in data]
        # the snapshot reads from a thread pool: which requests were sent
        # is the question, not in which order the threads sent them
        sent = (sorted(((r.method, r.path, r.query)
                        for r in placement.requests()), key=repr),
                sorted(cm.nova.sent, key=repr))
        return rows, sent

    def test_held_host_fits_nothing(self):
        self.flavor('g1.h100.1', PT_SPEC)
        # Blazar enrolled gpu-pt-1: it sits in the freepool aggregate
        self.cloud.aggregates.append(
            fakes.Aggregate('freepool', {}, ['gpu-pt-1']))
        plain, sent_plain = self.run_with(None, '--per-host')
        # no Blazar in the catalog: the freepool is just an aggregate
        self.assertEqual(3, plain[0]['Fits'])
        other, sent_other = self.run_with(['compute', 'placement'],
                                          '--per-host')
        self.assertEqual(plain, other)
        self.assertEqual([], self.blazar.calls)
        held, sent_held = self.run_with(['compute', 'reservation'],
                                        '--per-host')
        row = held[0]
        self.assertEqual((0, 3), (row['Fits'], row['Stranded']))
        self.assertIn('held by Blazar (enrolled and not leased, as Blazar\'s '
                      'host list says)', row['Stranded Reason'][0])
        self.assertIn('BlazarFilter', row['Stranded Reason'][0])
        # the catalog came with the token: not one request more to Nova
        # or Placement, and one to Blazar, its host list
        self.assertEqual(sent_plain, sent_held)
        self.assertEqual(sent_plain, sent_other)
        self.assertEqual(['/os-hosts'], self.blazar.calls)

    def test_freepool_of_another_name(self):
        # issue 51 defect 14: Blazar's [nova] aggregate_freepool_name is
        # "reservable" here; its host list names gpu-pt-1, which sits in
        # that aggregate, and an aggregate named "freepool" is someone
        # else's
        self.flavor('g1.h100.1', PT_SPEC)
        reservable = fakes.Aggregate('reservable', {}, ['gpu-pt-1'])
        self.cloud.aggregates.append(reservable)

        def renamed(blazar):
            blazar.freepool = 'reservable'
        rows, _sent = self.run_with(['reservation'], '--per-host',
                                    blazar=renamed)
        self.assertEqual(0, rows[0]['Fits'])
        self.assertIn('gpu-pt-1 is held by Blazar (enrolled and not leased',
                      rows[0]['Stranded Reason'][0])
        self.assertEqual(['/os-hosts'], self.blazar.calls)
        # not enrolled, in an aggregate that is only named freepool:
        # Blazar does not hold it, and all 3 free GPUs fit
        reservable.hosts.remove('gpu-pt-1')
        self.cloud.aggregates.append(
            fakes.Aggregate('freepool', {}, ['gpu-pt-1']))
        rows, _sent = self.run_with(['reservation'], '--per-host',
                                    blazar=renamed)
        self.assertEqual((3, 0), (rows[0]['Fits'], rows[0]['Stranded']))

    def test_blazar_cannot_say_the_name_decides(self):
        # Blazar refuses its host list (403: not admin), fails (500) or is
        # down: the freepool by its default name, and the reason says so
        self.flavor('g1.h100.1', PT_SPEC)
        self.cloud.aggregates.append(
            fakes.Aggregate('freepool', {}, ['gpu-pt-1']))

        def forbidden(blazar):
            blazar.admin = False

        def failing(blazar):
            blazar.status = 500

        def down(blazar):
            blazar.down = True
        for setup, said in ((forbidden, 'forbidden: Policy doesn\'t allow '
                                        'blazar:oshosts:get'),
                            (failing, 'HTTP 500'),
                            (down, 'cannot connect to Blazar')):
            rows, _sent = self.run_with(['reservation'], '--per-host',
                                        blazar=setup)
            reason = rows[0]['Stranded Reason'][0]
            self.assertEqual(0, rows[0]['Fits'], reason)
            self.assertIn('held by Blazar (in the freepool aggregate freepool '
                          '(enrolled, not leased), found by its name: '
                          'Blazar\'s host list could not be read (Listing '
                          'the hosts enrolled in Blazar', reason)
            self.assertIn(said, reason)
            self.assertEqual(['/os-hosts'], self.blazar.calls)

    def test_reservation_flavor_passes(self):
        # Blazar's own reservation flavor (its copy) lands on held hosts
        derived = derive(PT_SPEC)
        self.cloud.aggregates += [
            fakes.Aggregate('freepool', {}, ['gpu-pt-1']),
            # the instance reservation's aggregate, which its flavor's
            # aggregate_instance_extra_specs:reservation asks for
            fakes.Aggregate('r1', {'reservation': 'r1'}, ['gpu-pt-1'])]
        self.cloud.add_flavor('reservation:r1', extra_specs=dict(
            derived['extra_specs'],
            **{'aggregate_instance_extra_specs:reservation': 'r1'}))
        rows, _sent = self.run_with(['reservation'], '--per-host')
        self.assertEqual(3, rows[0]['Fits'])

    def test_nova_conf_without_blazar_filter(self):
        # enabled_filters read from nova.conf without BlazarFilter: the
        # freepool keeps no server off
        self.flavor('g1.h100.1', PT_SPEC)
        self.cloud.aggregates.append(
            fakes.Aggregate('freepool', {}, ['gpu-pt-1']))
        conf = self.useFixture(fixtures.TempDir()).join('nova.conf')
        with open(conf, 'w') as f:
            f.write('[filter_scheduler]\nenabled_filters = ComputeFilter\n')
        rows, _sent = self.run_with(['reservation'], '--per-host',
                                    '--nova-conf', conf)
        self.assertEqual(3, rows[0]['Fits'])
