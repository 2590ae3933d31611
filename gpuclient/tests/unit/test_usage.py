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

"""gpuclient.rules.usage (pure) and the gpu server list / gpu usage list
commands over a fake cloud, with their request counts."""

import datetime
import re
import urllib.parse

import fixtures
from osc_lib import exceptions

from gpuclient.rules import pools
from gpuclient.rules import specs
from gpuclient.rules import usage
from gpuclient.tests.unit import base
from gpuclient.tests.unit import fakes
from gpuclient.v1 import server as server_cmd
from gpuclient.v1 import usage as usage_cmd

T0 = datetime.datetime(2026, 11, 1, 0, 0, 0)
ADMIN = 'a' * 32
MEMBER = 'b' * 32
PT_SPEC = pools.build_spec('solver', 'passthrough', alias='h100',
                           pci_id='10de:2331')
VGPU_SPEC = pools.build_spec('ws', 'vgpu', vgpu_type='nvidia-35')
MIG_SPEC = pools.build_spec('slices', 'mig', mig_profile='1g.10gb')
BM_SPEC = pools.build_spec('metal', 'baremetal',
                           resource_class='CUSTOM_BAREMETAL_GPU_H100')


def at(minutes):
    return T0 + datetime.timedelta(minutes=minutes)


def nova(when):
    return when.strftime('%Y-%m-%dT%H:%M:%S.%f') if when else None


def pool_of(spec):
    return pools.pool_from_aggregate(
        fakes.Aggregate(spec['name'], pools.metadata_for(spec)))


def embedded(spec, gpus=1, name=None):
    """A flavor as Nova embeds it in a server at 2.47."""
    derived = specs.derive(pool_of(spec), gpus=gpus)
    return {'original_name': name or '%s.%d' % (spec['name'], gpus),
            'vcpus': 1, 'ram': 512, 'disk': 1, 'ephemeral': 0, 'swap': 0,
            'extra_specs': derived['extra_specs']}


def server(sid, flavor, project=ADMIN, host=None, launched=None,
           status='ACTIVE'):
    body = {'id': sid, 'name': 'vm-%s' % sid, 'tenant_id': project,
            'status': status, 'flavor': flavor,
            'created': '2026-11-01T00:00:00Z',
            'OS-SRV-USG:launched_at': nova(launched or T0)}
    if host:
        body['OS-EXT-SRV-ATTR:host'] = host
    return body


def server_usage(sid, began, ended=None, project=ADMIN, flavor='f',
                 start=T0, end=None):
    end = end or at(600)
    opened, closed = max(began, start), min(ended or end, end)
    return {'instance_id': sid, 'name': 'vm-%s' % sid, 'tenant_id': project,
            'flavor': flavor, 'started_at': nova(began),
            'ended_at': nova(ended),
            'hours': max((closed - opened).total_seconds(), 0) / 3600.0}


class TestParsing(base.TestCase):
    def test_times(self):
        for text, expected in (
                ('2026-11-01', T0),
                ('2026-11-01T00:30:00', at(30)),
                ('2026-11-01T00:30:00Z', at(30)),
                ('2026-11-01T02:30:00+02:00', at(30)),
                ('2026-11-01T00:30:00.500000', at(30) + datetime.timedelta(
                    microseconds=500000))):
            self.assertEqual(expected, usage.parse_time(text), text)

    def test_bad_times_and_periods(self):
        for text in ('yesterday', '2026-13-01', ''):
            error = self.assertRaises(exceptions.CommandError,
                                      usage.parse_time, text)
            self.assertIn('%r is not a time' % text, str(error))
        for end in (at(10), at(5)):
            error = self.assertRaises(exceptions.CommandError,
                                      usage.check_period, at(10), end)
            self.assertIn('The period is empty', str(error))
        usage.check_period(at(5), at(10))

    def test_default_period(self):
        now = datetime.datetime(2026, 12, 2, 15, 0, 0,
                                tzinfo=datetime.timezone.utc)
        four_weeks = datetime.timedelta(weeks=4)
        naive_now = now.replace(tzinfo=None)
        for start, end, expected in (
                # as openstack usage list: the last four weeks
                (None, None, (naive_now - four_weeks, naive_now)),
                ('2026-11-01', None,
                 (datetime.datetime(2026, 11, 1), naive_now)),
                # four weeks before an explicit end
                (None, '2026-11-29T00:00:00Z',
                 (datetime.datetime(2026, 11, 1),
                  datetime.datetime(2026, 11, 29))),
                ('2026-11-01', '2026-11-02',
                 (datetime.datetime(2026, 11, 1),
                  datetime.datetime(2026, 11, 2)))):
            self.assertEqual(expected, usage.period(start, end, now=now),
                             (start, end))
        # a naive now is UTC
        self.assertEqual((naive_now - four_weeks, naive_now),
                         usage.period(now=naive_now))
        error = self.assertRaises(exceptions.CommandError, usage.period,
                                  '2026-12-03', None, now)
        self.assertIn('The period is empty', str(error))

    def test_rates(self):
        # the prices are numbers already (--rate checks them as it
        # parses); the classes are normalised
        self.assertEqual({'VGPU': 0.4, 'CUSTOM_PCI_10DE_2331': 2.0},
                         usage.parse_rates({'vgpu': 0.4,
                                            'CUSTOM_PCI_10DE_2331': 2}))
        self.assertIsNone(usage.parse_rates(None) or None)


class TestDevices(base.TestCase):
    def test_labels_per_mode(self):
        for name, root, mode, expected in (
                ('gpu-pt-1.gpu.test_0000:41:00.0', 'gpu-pt-1.gpu.test',
                 'passthrough', '0000:41:00.0'),
                ('gpu-vgpu-1_pci_0000_84_00_0', 'gpu-vgpu-1', 'vgpu',
                 'pGPU 0000:84:00.0'),
                ('gpu-mig-1_pci_0000_41_00_4', 'gpu-mig-1', 'mig',
                 'MIG 0000:41:00.4'),
                ('9f2c', '9f2c', 'baremetal', 'node 9f2c'),
                ('host_other', 'host', 'passthrough', 'other')):
            self.assertEqual(expected,
                             usage.device_label(name, root, mode), name)

    def test_gpu_request_from_embedded_flavor(self):
        pool_map = {'solver': pool_of(PT_SPEC), 'ws': pool_of(VGPU_SPEC)}
        for spec, gpus, mode, rc in (
                (PT_SPEC, 2, 'passthrough', 'CUSTOM_PCI_10DE_2331'),
                (VGPU_SPEC, 1, 'vgpu', 'VGPU'),
                (VGPU_SPEC, 2, 'vgpu', 'VGPU'),
                (MIG_SPEC, 1, 'mig', 'VGPU'),
                (BM_SPEC, 1, 'baremetal', 'CUSTOM_BAREMETAL_GPU_H100')):
            found = usage.gpu_request(
                {'flavor': embedded(spec, gpus, name='x')}, pool_map)
            self.assertEqual(
                {'gpus': gpus, 'mode': mode, 'resource_class': rc,
                 'pool': spec['name'], 'flavor': 'x'}, found)
        # a member cannot read pools: the alias's class is not known
        found = usage.gpu_request({'flavor': embedded(PT_SPEC, 2)})
        self.assertEqual((2, None, 'solver'), (
            found['gpus'], found['resource_class'], found['pool']))
        self.assertEqual(0, usage.gpu_request(
            {'flavor': {'original_name': 'm1', 'extra_specs': {}}})['gpus'])


class TestPeak(base.TestCase):
    def test_overlaps(self):
        for intervals, expected in (
                ([], 0),
                ([(at(0), at(10))], 1),
                ([(at(0), at(10)), (at(5), at(15))], 2),
                # one ends as the other starts: never two at once
                ([(at(0), at(10)), (at(10), at(20))], 1),
                ([(at(0), at(30)), (at(1), at(2)), (at(3), at(4)),
                  (at(3), at(5))], 3),
                ([(at(5), at(5))], 0)):
            self.assertEqual(expected, usage.peak(intervals), intervals)

    def test_against_brute_force(self):
        import random
        rng = random.Random(7)
        for _ in range(200):
            intervals = []
            for _ in range(rng.randint(0, 8)):
                a, b = sorted(rng.randint(0, 20) for _ in range(2))
                intervals.append((at(a), at(b)))
            brute = max([sum(1 for a, b in intervals if a <= at(t) < b)
                         for t in range(21)] + [0])
            self.assertEqual(brute, usage.peak(intervals), intervals)


class TestUsageRows(base.TestCase):
    def setUp(self):
        super().setUp()
        self.pools = {'ws': pool_of(VGPU_SPEC), 'solver': pool_of(PT_SPEC)}
        self.servers = {
            'pt': server('pt', embedded(PT_SPEC, 2)),
            'v1': server('v1', embedded(VGPU_SPEC)),
            'v2': server('v2', embedded(VGPU_SPEC), project=MEMBER),
            'v3': server('v3', embedded(VGPU_SPEC), project=MEMBER),
            'cpu': server('cpu', {'original_name': 'm1',
                                  'extra_specs': {}}),
        }
        self.usages = [
            server_usage('pt', at(-60)),               # 600 min in period
            server_usage('v1', at(0), at(120)),        # deleted partway
            server_usage('v2', at(60), project=MEMBER),  # 540 min
            server_usage('v3', at(300), project=MEMBER),  # after v1
            server_usage('cpu', at(0)),
        ]

    def rows(self, by=usage.DEFAULT_BY, rates=None, pool=None):
        items, notes = usage.usage_items(self.usages, self.servers, T0,
                                         at(600), self.pools)
        self.assertEqual([], notes)
        return usage.usage_rows(items, by, rates, pool)

    def test_gpu_hours_and_seats_per_project_and_pool(self):
        rows, _notes = self.rows()
        found = {(r['keys']['project'], r['keys']['pool']):
                 (r['servers'], round(r['gpu_hours'], 6), r['seats'])
                 for r in rows}
        self.assertEqual({
            (ADMIN, 'solver'): (1, 20.0, 0),
            (ADMIN, 'ws'): (1, 2.0, 1),
            (MEMBER, 'ws'): (2, 9.0 + 5.0, 2),
        }, found)

    def test_seats_by_pool_count_overlap_across_projects(self):
        rows, _notes = self.rows(by=('pool',))
        seats = {r['keys']['pool']: r['seats'] for r in rows}
        # v1 [0,120) and v2 [60,600) overlap; v3 starts at 300: v2+v3
        self.assertEqual({'solver': 0, 'ws': 2}, seats)

    def test_by_class_and_flavor_and_rates(self):
        rows, notes = self.rows(by=('class', 'flavor'),
                                rates={'VGPU': 0.5})
        found = {(r['keys']['class'], r['keys']['flavor']):
                 (round(r['gpu_hours'], 6), r['cost']) for r in rows}
        self.assertEqual({
            ('CUSTOM_PCI_10DE_2331', 'solver.2'): (20.0, 0.0),
            ('VGPU', 'ws.1'): (16.0, 8.0),
        }, found)
        self.assertEqual(1, len(notes))
        self.assertIn('CUSTOM_PCI_10DE_2331', notes[0])

    def test_pool_filter(self):
        rows, _notes = self.rows(by=('project',), pool='solver')
        self.assertEqual([(ADMIN, 20.0)], [
            (r['keys']['project'], r['gpu_hours']) for r in rows])

    def test_flavor_edits_do_not_rewrite_history(self):
        # the current flavor of that name now asks for 4: not used while
        # the server's embedded flavor is known
        current = {'solver.2': dict(embedded(PT_SPEC, 4),
                                    name='solver.2')}
        items, _notes = usage.usage_items(self.usages, self.servers, T0,
                                          at(600), self.pools, current)
        self.assertEqual(2, [i for i in items if i['id'] == 'pt'][0]['gpus'])
        # a server Nova no longer lists: the current flavor, with a note
        del self.servers['pt']
        self.usages[0]['flavor'] = 'solver.2'
        items, notes = usage.usage_items(self.usages, self.servers, T0,
                                         at(600), self.pools, current)
        self.assertEqual(4, [i for i in items if i['id'] == 'pt'][0]['gpus'])
        self.assertIn('current flavor', notes[0])
        items, notes = usage.usage_items(self.usages, self.servers, T0,
                                         at(600), self.pools, {})
        self.assertNotIn('pt', [i['id'] for i in items])
        self.assertIn('left out', notes[0])

    def test_never_launched_is_not_billed(self):
        self.usages.append(dict(server_usage('v9', at(0)), started_at=None,
                                hours=0))
        self.servers['v9'] = server('v9', embedded(VGPU_SPEC))
        items, _notes = usage.usage_items(self.usages, self.servers, T0,
                                          at(600), self.pools)
        self.assertNotIn('v9', [i['id'] for i in items])


class FakeServers:
    """/servers/detail and /os-simple-tenant-usage of a fake Nova."""

    def __init__(self, cm, page=1000):
        self.cm = cm
        self.nova = cm.nova
        self.page = page
        self.servers = []  # (server, deleted)
        self.usages = []
        self.forbidden = set()  # 'aggregates', 'list', 'all_tenants'
        self.gets = []
        self.usage_queries = []  # os-simple-tenant-usage queries sent
        cm.compute.get.side_effect = self.get
        aggregates = cm.compute.aggregates.side_effect

        def list_aggregates(**kw):
            if 'aggregates' in self.forbidden:
                raise fakes.sdk_error(403, 'Policy says no')
            self.gets.append(('/os-aggregates', {}))
            return aggregates(**kw)
        cm.compute.aggregates.side_effect = list_aggregates

    def get(self, url, microversion=None, params=None, **kwargs):
        params = fakes.wire_params(params)
        path = urllib.parse.urlsplit(fakes.nova_path(url)).path
        if path == '/servers/detail':
            self.gets.append((path, params))
            assert microversion == '2.47', microversion
            if params.get('all_tenants') and 'all_tenants' in self.forbidden:
                return fakes.nova_error(403, 'Policy says no')
            # as Nova: without all_tenants, the caller's project only,
            # whatever project_id says
            project = (params.get('project_id') if params.get('all_tenants')
                       else self.cm.gpu.current_project()[0])
            found = [s for s, deleted in self.servers
                     if (not deleted or 'changes-since' in params)
                     and (not project or s['tenant_id'] == project)]
            # Nova links the next page of servers/detail under that path
            page, links = fakes._page(found, params, 'servers/detail',
                                      self.page)
            return fakes.make_response(200, dict(
                servers=page, **({'servers_links': links} if links else {})))
        if path.startswith('/os-simple-tenant-usage'):
            self.gets.append((path, params))
            assert microversion == '2.40', microversion
            project = path.rpartition('/')[2]
            if 'list' in self.forbidden and project != MEMBER:
                return fakes.nova_error(403, 'Policy says no')
            return fakes.simple_tenant_usage(self.usages, path, params,
                                             self.page, self.usage_queries)
        return self.nova.get(url, microversion, params, **kwargs)


class CommandTestCase(base.CommandTestCase):
    """A cloud with a passthrough, a vGPU, a MIG and a bare-metal pool."""

    def setUp(self):
        super().setUp()
        self.cloud = fakes.FakeCloud()
        self.cloud.pci_host('gpu-pt-1', nodename='gpu-pt-1.gpu.test')
        self.cloud.vgpu_host('gpu-vgpu-1', traits=['CUSTOM_NVIDIA_35'])
        self.cloud.vgpu_host('gpu-mig-1', pgpus=3, per_pgpu=1,
                             traits=['CUSTOM_MIG_1G_10GB'])
        self.cloud.baremetal_node('bm-1', 'node-1')
        self.cloud.aggregates += [
            fakes.Aggregate('solver', pools.metadata_for(PT_SPEC),
                            ['gpu-pt-1']),
            fakes.Aggregate('ws', pools.metadata_for(VGPU_SPEC),
                            ['gpu-vgpu-1']),
            fakes.Aggregate('slices', pools.metadata_for(MIG_SPEC),
                            ['gpu-mig-1']),
            fakes.Aggregate('metal', pools.metadata_for(BM_SPEC), ['bm-1']),
        ]
        self.placement = self.useFixture(fakes.PlacementFixture(self.cloud))
        self.allocations = {}  # provider uuid -> {consumer: {rc: n}}
        self.placement.mock.get(
            re.compile(re.escape(fakes.PLACEMENT_URL)
                       + r'/resource_providers/([^/?]+)/allocations$'),
            json=self._allocations)
        self.cm = self.useFixture(fakes.ClientManagerFixture(self.cloud))
        self.cm.gpu.current_project = lambda: (ADMIN, 'admin')
        self.nova = FakeServers(self.cm)

    def _allocations(self, request, context):
        uuid = urllib.parse.urlsplit(request.url).path.split('/')[-2]
        return {'allocations': {
            consumer: {'resources': resources} for consumer, resources in
            self.allocations.get(uuid, {}).items()}}

    def provider(self, name):
        return [p for p in self.cloud.providers if p.name == name][0]

    def hold(self, sid, provider_name, rc, amount=1):
        provider = self.provider(provider_name)
        self.allocations.setdefault(provider.uuid, {})[sid] = {rc: amount}
        provider.used[rc] = provider.used.get(rc, 0) + amount

    def add_server(self, sid, spec, gpus=1, project=ADMIN, host=None,
                   deleted=False, devices=()):
        body = server(sid, embedded(spec, gpus), project=project, host=host)
        self.nova.servers.append((body, deleted))
        rc = {'passthrough': 'CUSTOM_PCI_10DE_2331',
              'baremetal': 'CUSTOM_BAREMETAL_GPU_H100'}.get(spec['mode'],
                                                            'VGPU')
        for name in devices:
            self.hold(sid, name, rc)
        return body

    def run_cmd(self, cls, *args):
        cmd = cls(self.make_app(self.cm.client_manager), None)
        parsed = self.check_parser(cmd, list(args))
        columns, data = cmd.take_action(parsed)
        return [dict(zip(columns, (
            v.machine_readable() if hasattr(v, 'machine_readable') else v
            for v in row), strict=True)) for row in data]

    def count(self, cls, *args):
        """(rows, requests) of one run, after a first run that found
        the Placement version and resource classes (kept per process)."""
        self.run_cmd(cls, *args)
        sent = self.requests()
        rows = self.run_cmd(cls, *args)
        return rows, self.requests() - sent

    def requests(self):
        """HTTP requests sent: Placement's and the raw Nova reads."""
        return (len(self.placement.mock.request_history)
                + len(self.nova.gets) + len(self.cm.nova.gets))


class TestServerList(CommandTestCase):
    def setUp(self):
        super().setUp()
        self.add_server('pt', PT_SPEC, gpus=2, host='gpu-pt-1', devices=(
            'gpu-pt-1.gpu.test_0000:81:00.0',
            'gpu-pt-1.gpu.test_0000:82:00.0'))
        self.add_server('v1', VGPU_SPEC, host='gpu-vgpu-1',
                        devices=('gpu-vgpu-1_pci_0000_84_00_0',))
        self.add_server('m1', MIG_SPEC, project=MEMBER, host='gpu-mig-1',
                        devices=('gpu-mig-1_pci_0000_85_00_0',))
        self.add_server('bm', BM_SPEC, host='bm-1', devices=('node-1',))
        self.nova.servers.append((server('cpu', {
            'original_name': 'm1', 'extra_specs': {}}), False))

    def test_every_mode(self):
        rows = {r['ID']: r for r in self.run_cmd(
            server_cmd.ListServer, '--long', '--all-projects')}
        self.assertEqual({'pt', 'v1', 'm1', 'bm'}, set(rows))
        found = {sid: (r['Host'], r['Pool'], r['Mode'], r['Resource Class'],
                       r['GPUs'], r['Devices'], r['Project'])
                 for sid, r in rows.items()}
        self.assertEqual({
            'pt': ('gpu-pt-1', 'solver', 'passthrough',
                   'CUSTOM_PCI_10DE_2331', 2,
                   ['0000:81:00.0', '0000:82:00.0'], ADMIN),
            'v1': ('gpu-vgpu-1', 'ws', 'vgpu', 'VGPU', 1,
                   ['pGPU 0000:84:00.0'], ADMIN),
            'm1': ('gpu-mig-1', 'slices', 'mig', 'VGPU', 1,
                   ['MIG 0000:85:00.0'], MEMBER),
            'bm': ('bm-1', 'metal', 'baremetal',
                   'CUSTOM_BAREMETAL_GPU_H100', 1, ['node node-1'], ADMIN),
        }, found)
        self.assertEqual(
            sorted([self.provider('gpu-pt-1.gpu.test_0000:81:00.0').uuid,
                    self.provider('gpu-pt-1.gpu.test_0000:82:00.0').uuid]),
            rows['pt']['Device Providers'])
        # every project, with embedded flavors
        self.assertIn(('/servers/detail', {'all_tenants': 1}),
                      self.nova.gets)

    def test_filters(self):
        self.assertEqual(['v1'], [r['ID'] for r in self.run_cmd(
            server_cmd.ListServer, '--pool', 'ws')])
        self.assertEqual(['pt'], [r['ID'] for r in self.run_cmd(
            server_cmd.ListServer, '--host', 'gpu-pt-1.gpu.test')])
        error = self.assertRaises(exceptions.CommandError, self.run_cmd,
                                  server_cmd.ListServer, '--pool', 'nope')
        self.assertIn('No GPU pool named nope', str(error))
        error = self.assertRaises(exceptions.CommandError, self.run_cmd,
                                  server_cmd.ListServer, '--host', 'nope')
        self.assertIn('Unknown compute host(s): nope', str(error))

    def test_host_by_hypervisor_or_provider_name(self):
        _rows, by_host = self.count(server_cmd.ListServer, '--host',
                                    'gpu-mig-1', '--all-projects')
        self.assertNotIn('using gpu-mig-1', self.logger.output)
        for name, via in [
                ('gpu-mig-1_pci_0000_85_00_0', 'resource provider name'),
                (self.provider('gpu-mig-1_pci_0000_85_00_0').uuid,
                 'resource provider uuid'),
                ('gpu-mig-1', None)]:
            rows, sent = self.count(server_cmd.ListServer, '--host', name,
                                    '--all-projects')
            self.assertEqual(['m1'], [r['ID'] for r in rows], name)
            self.assertEqual(['gpu-mig-1'], [r['Host'] for r in rows])
            # the provider list is in the snapshot: no request more
            self.assertEqual(by_host, sent, name)
            if via:
                self.assertIn('"%s" is the %s of compute host gpu-mig-1: '
                              'using gpu-mig-1.' % (name, via),
                              self.logger.output)
        rows = self.run_cmd(server_cmd.ListServer, '--host',
                            'gpu-pt-1.gpu.test')
        self.assertEqual(['pt'], [r['ID'] for r in rows])
        self.assertIn('"gpu-pt-1.gpu.test" is the hypervisor hostname of '
                      'compute host gpu-pt-1: using gpu-pt-1.',
                      self.logger.output)
        exc = self.assertRaises(exceptions.CommandError, self.run_cmd,
                                server_cmd.ListServer, '--host',
                                'gpu-mig-1_pci_0000_99_00_0')
        self.assertIn('Unknown compute host(s): gpu-mig-1_pci_0000_99_00_0',
                      str(exc))

    def test_requests_do_not_grow_with_servers(self):
        _rows, before = self.count(server_cmd.ListServer)
        # 3 more servers on the pGPUs that already have usage
        for i in range(3):
            self.add_server('more%d' % i, VGPU_SPEC, host='gpu-vgpu-1',
                            devices=('gpu-vgpu-1_pci_0000_84_00_0',))
        rows, after = self.count(server_cmd.ListServer)
        # the admin's own project: pt, v1, bm and the 3 more
        self.assertEqual(6, len(rows))
        self.assertEqual(before, after)
        # allocations: one read per used GPU provider, none per server
        sent = len(self.placement.mock.request_history)
        self.run_cmd(server_cmd.ListServer)
        reads = [r for r in self.placement.mock.request_history[sent:]
                 if r.path.endswith('/allocations')]
        self.assertEqual(5, len(reads))

    def test_own_project_by_default(self):
        # as openstack server list: the current project, no all_tenants
        rows = self.run_cmd(server_cmd.ListServer)
        self.assertEqual(['bm', 'pt', 'v1'], sorted(r['ID'] for r in rows))
        self.assertEqual({ADMIN}, {r['Project'] for r in rows})
        queries = [q for path, q in self.nova.gets
                   if path == '/servers/detail']
        self.assertEqual([{}], queries)

    def test_all_projects(self):
        rows = self.run_cmd(server_cmd.ListServer, '--all-projects')
        self.assertEqual(['bm', 'm1', 'pt', 'v1'],
                         sorted(r['ID'] for r in rows))
        self.assertIn(('/servers/detail', {'all_tenants': 1}),
                      self.nova.gets)

    def test_all_projects_from_environment(self):
        self.useFixture(fixtures.EnvironmentVariable('ALL_PROJECTS', 'true'))
        cmd = server_cmd.ListServer(self.make_app(None), None)
        self.check_parser(cmd, [], [('all_projects', True)])
        self.useFixture(fixtures.EnvironmentVariable('ALL_PROJECTS'))
        cmd = server_cmd.ListServer(self.make_app(None), None)
        self.check_parser(cmd, [], [('all_projects', False),
                                    ('project', None)])

    def test_another_project(self):
        self.cm.gpu.project_id = lambda name, domain=None: MEMBER
        rows = self.run_cmd(server_cmd.ListServer, '--project', 'demo')
        self.assertEqual(['m1'], [r['ID'] for r in rows])
        self.assertIn(('/servers/detail', {'all_tenants': 1,
                                           'project_id': MEMBER}),
                      self.nova.gets)
        # the own project by name: no all_tenants
        self.nova.gets.clear()
        rows = self.run_cmd(server_cmd.ListServer, '--project', 'admin')
        self.assertEqual(['bm', 'pt', 'v1'], sorted(r['ID'] for r in rows))
        self.assertEqual([{}], [q for path, q in self.nova.gets
                                if path == '/servers/detail'])

    def test_member_all_projects_needs_admin(self):
        self.nova.forbidden |= {'aggregates', 'all_tenants'}
        self.cm.gpu.current_project = lambda: (MEMBER, 'demo')
        error = self.assertRaises(exceptions.CommandError, self.run_cmd,
                                  server_cmd.ListServer, '--all-projects')
        self.assertIn('--all-projects needs admin', str(error))

    def test_member_sees_own_project_from_flavors(self):
        self.nova.forbidden |= {'aggregates', 'all_tenants'}
        self.cm.gpu.current_project = lambda: (MEMBER, 'demo')
        # Nova shows a member their own servers, without hosts
        self.nova.servers = [
            ({k: v for k, v in s.items() if k != 'OS-EXT-SRV-ATTR:host'}, d)
            for s, d in self.nova.servers if s['tenant_id'] == MEMBER]
        rows = self.run_cmd(server_cmd.ListServer)
        self.assertEqual([('m1', 'slices', 'mig', 1, [], None)], [
            (r['ID'], r['Pool'], r['Mode'], r['GPUs'], r['Devices'],
             r['Host']) for r in rows])
        self.assertEqual([], [r for r in self.placement.mock.request_history
                              if '/allocations' in r.path])
        self.assertIn('need admin', self.logger.output)
        error = self.assertRaises(exceptions.CommandError, self.run_cmd,
                                  server_cmd.ListServer, '--host',
                                  'gpu-mig-1')
        self.assertIn('--host needs admin', str(error))

    def test_member_asking_for_another_project(self):
        self.nova.forbidden |= {'aggregates', 'all_tenants'}
        self.cm.gpu.current_project = lambda: (MEMBER, 'demo')
        error = self.assertRaises(exceptions.CommandError, self.run_cmd,
                                  server_cmd.ListServer, '--project', ADMIN)
        self.assertIn('your own project', str(error))


class TestUsageList(CommandTestCase):
    def setUp(self):
        super().setUp()
        self.add_server('pt', PT_SPEC, gpus=2, host='gpu-pt-1')
        self.add_server('v1', VGPU_SPEC, host='gpu-vgpu-1', deleted=True)
        self.add_server('v2', VGPU_SPEC, project=MEMBER, host='gpu-vgpu-1')
        self.nova.usages = [
            server_usage('pt', at(0), flavor='solver.2'),
            server_usage('v1', at(0), at(90)),
            server_usage('v2', at(30), project=MEMBER),
        ]

    def period(self, *args):
        return ['--start', '2026-11-01T00:00:00Z', '--end',
                '2026-11-01T10:00:00Z', *args]

    def test_rows_and_csv_columns(self):
        rows = self.run_cmd(usage_cmd.ListUsage, *self.period(
            '--by', 'pool', '--rate', 'VGPU=2'))
        self.assertEqual([
            {'Pool': 'solver', 'Servers': 1, 'GPU Hours': 20.0,
             'Peak Seats': 0, 'Cost': 0.0},
            {'Pool': 'ws', 'Servers': 2, 'GPU Hours': 11.0,
             'Peak Seats': 2, 'Cost': 22.0},
        ], rows)
        # the deleted server came from the changes-since list
        self.assertIn(('/servers/detail', {
            'all_tenants': 1, 'changes-since': '2026-11-01T00:00:00Z'}),
            self.nova.gets)

    def test_requests_do_not_grow_with_servers(self):
        _rows, before = self.count(usage_cmd.ListUsage, *self.period(
            '--by', 'project'))
        for i in range(20):
            sid = 'extra%d' % i
            self.add_server(sid, VGPU_SPEC, project=MEMBER,
                            deleted=bool(i % 2))
            self.nova.usages.append(server_usage(
                sid, at(i), at(100 + i) if i % 2 else None,
                project=MEMBER))
        rows, after = self.count(usage_cmd.ListUsage, *self.period(
            '--by', 'project'))
        self.assertEqual(2, len(rows))
        self.assertEqual(before, after)
        # aggregates, usage, servers, deleted servers; no Placement
        self.assertEqual(4, after)
        self.assertEqual(0, len(self.placement.mock.request_history))

    def test_usage_pages_followed_by_instance_marker(self):
        # Nova pages os-simple-tenant-usage by server (marker: the last
        # instance_id); a page of 2 gives the figures of one page
        for i in range(5):
            self.nova.usages.append(server_usage(
                'more%d' % i, at(i), at(60 + i), project=MEMBER))
        whole = self.run_cmd(usage_cmd.ListUsage, *self.period(
            '--by', 'project'))
        self.nova.page = 2
        self.nova.usage_queries.clear()
        self.assertEqual(whole, self.run_cmd(
            usage_cmd.ListUsage, *self.period('--by', 'project')))
        markers = [dict(q[1]).get('marker')
                   for q, _next in self.nova.usage_queries]
        ids = [u['instance_id'] for u in self.nova.usages]
        self.assertEqual([None] + ids[1::2], markers)
        # one project's usage too (tenant_usage_links)
        self.nova.forbidden |= {'aggregates', 'list', 'all_tenants'}
        self.cm.gpu.current_project = lambda: (MEMBER, 'demo')
        self.nova.usage_queries.clear()
        rows = self.run_cmd(usage_cmd.ListUsage, *self.period(
            '--by', 'project'))
        self.assertEqual([r for r in whole if r['Project'] == MEMBER], rows)
        self.assertEqual(4, len(self.nova.usage_queries))

    def test_member_view(self):
        self.nova.forbidden |= {'aggregates', 'list', 'all_tenants'}
        self.cm.gpu.current_project = lambda: (MEMBER, 'demo')
        rows = self.run_cmd(usage_cmd.ListUsage, *self.period(
            '--by', 'project', '--by', 'pool'))
        self.assertEqual([{'Project': MEMBER, 'Pool': 'ws', 'Servers': 1,
                           'GPU Hours': 9.5, 'Peak Seats': 1}], rows)
        self.assertIn(('/os-simple-tenant-usage/' + MEMBER, {
            'start': '2026-11-01T00:00:00.000000',
            'end': '2026-11-01T10:00:00.000000'}), self.nova.gets)
        error = self.assertRaises(
            exceptions.CommandError, self.run_cmd, usage_cmd.ListUsage,
            *self.period('--project', ADMIN))
        self.assertIn('your own project', str(error))

    def test_last_four_weeks_by_default(self):
        before = datetime.datetime.now(datetime.timezone.utc).replace(
            tzinfo=None)
        self.run_cmd(usage_cmd.ListUsage, '--by', 'project')
        after = datetime.datetime.now(datetime.timezone.utc).replace(
            tzinfo=None)
        queries = [q for path, q in self.nova.gets
                   if path.startswith('/os-simple-tenant-usage')]
        self.assertEqual(1, len(queries))
        start = datetime.datetime.fromisoformat(queries[0]['start'])
        end = datetime.datetime.fromisoformat(queries[0]['end'])
        self.assertEqual(datetime.timedelta(weeks=4), end - start)
        self.assertTrue(before - datetime.timedelta(seconds=1) <= end
                        <= after, (before, end, after))
        cmd = usage_cmd.ListUsage(self.make_app(None), None)
        self.check_parser(cmd, [], [('start', None), ('end', None)])

    def test_bad_input(self):
        for args, message in (
                (['--start', 'soon'], "--start 'soon' is not a time"),
                (self.period('--rate', 'VGPU=cheap'),
                 '--rate VGPU=cheap: give <resource class>=<price per '
                 'GPU-hour>, e.g. --rate VGPU=0.40'),
                (self.period('--rate', 'VGPU=-1'), '--rate VGPU=-1: give'),
                (['--start', '2026-11-02', '--end', '2026-11-01'],
                 'The period is empty'),
                (self.period('--pool', 'nope'), 'No GPU pool named nope')):
            error = self.assertRaises(exceptions.CommandError, self.run_cmd,
                                      usage_cmd.ListUsage, *args)
            self.assertIn(message, str(error))
        self.assertRaises(base.ParserError, self.run_cmd,
                          usage_cmd.ListUsage, *self.period('--by', 'host'))
        for text in ('VGPU', 'VGPU=', '=1'):
            error = self.assertRaises(
                base.ParserError, self.run_cmd, usage_cmd.ListUsage,
                *self.period('--rate', text))
            self.assertIn("argument --rate: %r: give <class>=<price>, e.g. "
                          "VGPU=0.40" % text, str(error))
        # refused before any request
        self.assertEqual([], [g for g in self.nova.gets
                              if 'simple-tenant-usage' in g[0]])

    def test_rate_given_twice_keeps_the_last(self):
        rows = self.run_cmd(usage_cmd.ListUsage, *self.period(
            '--by', 'pool', '--rate', 'VGPU=5', '--rate', ' VGPU = 2 '))
        self.assertEqual([0.0, 22.0], [row['Cost'] for row in rows])
