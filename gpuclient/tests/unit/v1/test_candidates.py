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

"""``openstack gpu candidate list`` (and ``gpu candidates``, its deprecated
first name): parser, output, request counts."""

import argparse
import csv
import importlib
import io
import json
from unittest import mock
import urllib.parse

import fixtures
from osc_lib import exceptions
import yaml

from gpuclient.rules.host_facts import join as facts_join
from gpuclient.rules.scheduler import explain
from gpuclient.tests.unit import base
from gpuclient.tests.unit import fakes
from gpuclient.tests.unit.scheduler import test_explain as recorded
from gpuclient.v1 import candidates

PCI = 'CUSTOM_PCI_10DE_2331'
PROM = 'http://prom.test:9090'
FLAVOR = {'id': 'f1', 'name': 'g1.h100.1', 'vcpus': 1, 'ram': 512,
          'disk': 1, 'OS-FLV-EXT-DATA:ephemeral': 0, 'swap': '',
          'extra_specs': {'pci_passthrough:alias': 'h100:1',
                          'aggregate_instance_extra_specs:gpu': 'true',
                          'hw:pci_numa_affinity_policy': 'preferred'}}


class Service:
    def __init__(self, host, status='enabled'):
        self.host = host
        self.availability_zone = 'nova'
        self.status = status
        self.state = 'up'
        self.id = fakes.uid(host)


class CandidatesTestCase(base.CommandTestCase):
    def setUp(self):
        super().setUp()
        self.cloud = fakes.FakeCloud()
        self.cloud.hypervisors = recorded.HYPERVISORS
        self.cloud.aggregates = [
            fakes.Aggregate('gpu', {'gpu': 'true'}, hosts=['gpu-pt-1'])]
        self.answers = {}
        self.placement = self.useFixture(fakes.PlacementFixture(self.cloud))
        self.placement.mock.get(fakes.PLACEMENT_URL
                                + '/allocation_candidates',
                                json=self._candidates)
        self.placement.mock.get(
            fakes.PLACEMENT_URL + '/resource_providers',
            json={'resource_providers': []})
        for i in range(4):
            self.placement.mock.get(
                '%s/resource_providers/pci-%d/allocations'
                % (fakes.PLACEMENT_URL, i),
                json={'allocations': {recorded.SERVERS[i]: {
                    'resources': {PCI: 1}}}})
        self.cm = self.useFixture(fakes.ClientManagerFixture(self.cloud))
        self.cm.compute.get.side_effect = self._compute_get
        self.cm.compute.services.side_effect = lambda **kw: [
            Service('gpu-pt-1'), Service('gpu-vgpu-1'),
            Service('plain-1')]
        self.cm.gpu._session.get_project_id = lambda: 'p1'

    def _compute_get(self, url, microversion=None, params=None, **kwargs):
        # the SDK's Flavor joins its path without the leading slash
        url = fakes.nova_path(url)
        if url == '/flavors/g1.h100.1':
            return fakes.make_response(200, {'flavor': FLAVOR})
        if url == '/flavors/g1.numa':
            return fakes.make_response(200, {'flavor': dict(
                FLAVOR, id='f2', name='g1.numa', extra_specs=dict(
                    FLAVOR['extra_specs'], **{'hw:numa_nodes': '1'}))})
        if url == '/flavors/g1.numa.alias':
            # no hw:pci_numa_affinity_policy: the alias's policy is Nova's
            extra = dict(FLAVOR['extra_specs'], **{'hw:numa_nodes': '1'})
            del extra['hw:pci_numa_affinity_policy']
            return fakes.make_response(200, {'flavor': dict(
                FLAVOR, id='f3', name='g1.numa.alias', extra_specs=extra)})
        return self.cm._compute_get(url, microversion, params, **kwargs)

    def _candidates(self, req, context):
        query = urllib.parse.parse_qs(req.query, keep_blank_values=True)
        gpu = any(k.startswith('resourcespci') for k in query)
        if gpu:
            return self.answers.get('main', recorded.MAIN)
        return recorded.WITHOUT_GPU

    def run_cmd(self, args):
        cmd = candidates.ListCandidate(
            self.make_app(self.cm.client_manager), None)
        cmd.app.stderr = io.StringIO()
        parsed = self.check_parser(cmd, args)
        return cmd, parsed, cmd.take_action(parsed)

    def run_output(self, args, cls=candidates.ListCandidate):
        """(stdout, stderr) of the whole command, formatter included."""
        cmd = cls(self.make_app(self.cm.client_manager), None)
        cmd.app.stdout, cmd.app.stderr = io.StringIO(), io.StringIO()
        cmd.run(self.check_parser(cmd, args))
        return cmd.app.stdout.getvalue(), cmd.app.stderr.getvalue()

    def one_candidate(self):
        """Placement offers gpu-pt-1 (3 of its 4 H100s used)."""
        self.answers['main'] = {'allocation_requests': [
            {'allocations': {'root-pt': {'resources': {'VCPU': 1}},
                             'pci-3': {'resources': {PCI: 1}}},
             'mappings': {'': ['root-pt'], 'pci-h100-0': ['pci-3']}}],
            'provider_summaries': recorded.pt_tree(used=3)}


class TestParser(CandidatesTestCase):
    def test_flavor_or_resource_required(self):
        cmd = candidates.ListCandidate(self.make_app(None), None)
        self.assertRaises(base.ParserError, self.check_parser, cmd, [])
        self.assertRaises(base.ParserError, self.check_parser, cmd,
                          ['--flavor', 'f', '--resource', 'VGPU=1'])

    def test_options(self):
        cmd = candidates.ListCandidate(self.make_app(None), None)
        self.check_parser(cmd, [
            '--resource', 'VGPU=2', '--resource', 'VCPU=1', '--required',
            'CUSTOM_X', '--forbidden', 'CUSTOM_Y', '--image', 'i', '--pool',
            'p', '--project', 'q', '--zone', 'az', '--boot-from-volume',
            '--limit', '5', '--long', '--explain', '--alias-map',
            'h100=10de:2331', '--nova-conf', '/x', '--setting',
            'pci_in_placement=false'], [
            ('resources', {'VGPU': '2', 'VCPU': '1'}),
            ('required', ['CUSTOM_X']),
            ('forbidden', ['CUSTOM_Y']), ('image', 'i'), ('pool', 'p'),
            ('project', 'q'), ('zone', 'az'), ('availability_zone', None),
            ('boot_from_volume', True), ('limit', 5), ('long', True),
            ('explain', True), ('alias_maps', {'h100': '10de:2331'}),
            ('nova_conf', ['/x']),
            ('settings', {'pci_in_placement': 'false'})])
        self.assertRaises(base.ParserError, self.check_parser, cmd,
                          ['--resource', 'VGPU=1', '--limit', 'many'])

    def test_availability_zone_is_a_hidden_deprecated_alias(self):
        cmd = candidates.ListCandidate(self.make_app(None), None)
        parser = cmd.get_parser('gpu candidate list')
        self.assertIn('--zone <zone>', parser.format_help())
        self.assertNotIn('--availability-zone', parser.format_help())
        parsed = self.check_parser(
            cmd, ['--resource', 'VGPU=1', '--availability-zone', 'az1'])
        self.assertEqual('az1', cmd._zone(parsed))
        self.assertIn('--availability-zone is deprecated, use --zone',
                      self.logger.output)
        parsed = self.check_parser(
            cmd, ['--resource', 'VGPU=1', '--zone', 'az1',
                  '--availability-zone', 'az2'])
        exc = self.assertRaises(exceptions.CommandError, cmd._zone, parsed)
        self.assertIn('give --zone alone', str(exc))

    def test_candidates_is_the_deprecated_name_of_candidate_list(self):
        # "gpu candidate list" (OSC's <noun> <verb>); "gpu candidates"
        # kept for scripts: the same parser, and its help says it is
        # deprecated in favour of the new name, as OSC's renamed commands
        alias = candidates.Candidates(self.make_app(None), None)
        main = candidates.ListCandidate(self.make_app(None), None)
        self.assertEqual(
            main.get_parser('gpu').format_usage().replace('gpu', ''),
            alias.get_parser('gpu').format_usage().replace('gpu', ''))
        self.assertTrue(alias.deprecated)
        self.assertFalse(main.deprecated)
        self.assertEqual('DEPRECATED: Use "gpu candidate list" instead.',
                         alias.get_description().split('\n')[0])

    def test_old_name_warns_and_gives_the_same_rows(self):
        self.one_candidate()
        args = ['--flavor', 'g1.h100.1', '--alias-map', 'h100=10de:2331',
                '--explain', '-f', 'json']
        new_out, new_err = self.run_output(args)
        self.assertNotIn('deprecated', self.logger.output)
        old_out, old_err = self.run_output(args, cls=candidates.Candidates)
        self.assertEqual(json.loads(new_out), json.loads(old_out))
        self.assertEqual(new_err, old_err)
        self.assertIn('The "gpu candidates" command is deprecated: use '
                      '"gpu candidate list"', self.logger.output)

    def test_old_name_is_left_out_of_openstack_help(self):
        # cliff's "openstack help" (HelpAction) over this tree's commands
        from cliff import commandmanager
        from cliff import help as cliff_help

        class App:
            stdout = io.StringIO()
            command_manager = commandmanager.CommandManager(None)

        for name, target in base.declared_entry_points()[
                'openstack.gpu.v1'].items():
            module, _colon, attr = target.partition(':')
            App.command_manager.add_command(
                name.replace('_', ' '),
                getattr(importlib.import_module(module), attr))
        action = cliff_help.HelpAction(['-h'], 'help', default=App())
        self.assertRaises(cliff_help.HelpExit, action,
                          argparse.ArgumentParser(), argparse.Namespace(),
                          None)
        listed = [line.split('  ')[1].strip()
                  for line in App.stdout.getvalue().splitlines()
                  if line.startswith('  gpu ')]
        self.assertIn('gpu candidate list', listed)
        self.assertIn('gpu capacity list', listed)
        self.assertNotIn('gpu candidates', listed)

    def test_description_starts_with_one_short_line(self):
        text = candidates.ListCandidate(self.make_app(None),
                                        None).get_description()
        first, blank, details = text.split('\n', 2)
        self.assertLess(len(first), 80)
        self.assertEqual('', blank)
        self.assertIn('--explain', details)


class TestNuma(CandidatesTestCase):
    """A flavor asking a NUMA topology: judged by what a source shows."""

    ARGS = ['--flavor', 'g1.numa', '--alias-map', 'h100=10de:2331']

    def setUp(self):
        super().setUp()
        # as 2.53 shows them, cpu_info without topology.cells
        self.cloud.hypervisors = [
            dict(hv, vcpus=64, memory_mb=524288, running_vms=0,
                 hypervisor_type='QEMU', cpu_info={'topology': {
                     'sockets': 4, 'cores': 1, 'threads': 1}})
            for hv in recorded.HYPERVISORS]

    def test_not_judged_is_on_the_row_and_in_the_summary(self):
        self.one_candidate()
        _cmd, _parsed, (columns, rows) = self.run_cmd(self.ARGS)
        row = dict(zip(columns, rows[0], strict=True))
        self.assertTrue(row['NUMA'].startswith('not judged: '), row['NUMA'])
        stdout, stderr = self.run_output(self.ARGS + ['-f', 'json'])
        self.assertIn('not judged', json.loads(stdout)[0]['NUMA'])
        self.assertIn('NUMA fit not judged', stderr)
        self.assertIn('numa_cells=<N>', stderr)

    def test_judged_with_host_facts(self):
        self.one_candidate()
        _cmd, _parsed, (columns, rows) = self.run_cmd(self.ARGS + [
            '--host-fact', 'gpu-pt-1:numa_cells=2',
            '--host-fact', 'numa_pages=4k'])
        row = dict(zip(columns, rows[0], strict=True))
        self.assertEqual('judged (host facts)', row['NUMA'])

    def test_a_fact_for_a_hypervisor_hostname_is_used(self):
        """Issue 51 defect 10: the host part of --host-fact is resolved
        as --host is (an FQDN hypervisor hostname names its host)."""
        self.one_candidate()
        self.cloud.hypervisors[0]['hypervisor_hostname'] = (
            'gpu-pt-1.gpu.test')
        stdout, stderr = self.run_output(self.ARGS + [
            '--host-fact', 'gpu-pt-1.gpu.test:numa_cells=2',
            '--host-fact', 'numa_pages=4k', '-f', 'json'])
        self.assertEqual('judged (host facts)',
                         json.loads(stdout)[0]['NUMA'])
        self.assertIn('"gpu-pt-1.gpu.test" is the hypervisor hostname of '
                      'compute host gpu-pt-1', stderr)

    def test_a_fact_for_no_host_is_refused_first(self):
        """A host part that names no host: an error naming it and the
        hosts, before Placement is asked anything."""
        self.cloud.hypervisors[0]['hypervisor_hostname'] = (
            'gpu-pt-1.gpu.test')
        error = self.assertRaises(
            exceptions.CommandError, self.run_cmd, self.ARGS + [
                '--host-fact', 'gpu-pt-l:numa_cells=2'])
        self.assertIn('--host-fact gpu-pt-l:...: Unknown compute host(s): '
                      'gpu-pt-l', str(error))
        self.assertIn('gpu-pt-1 (hypervisor gpu-pt-1.gpu.test)', str(error))
        self.assertEqual([], self.placement.requests())

    def test_the_alias_policy_of_the_nova_conf_decides(self):
        """Issue 51 defect 15: a flavor without
        hw:pci_numa_affinity_policy, and a nova.conf whose alias says
        numa_policy preferred: judged, as Nova gives the devices the
        alias's policy. Without the nova.conf, not judged and why."""
        self.one_candidate()
        args = ['--flavor', 'g1.numa.alias', '--host-fact',
                'gpu-pt-1:numa_cells=2', '--host-fact', 'numa_pages=4k']
        conf = self.useFixture(fixtures.TempDir()).join('nova.conf')

        def numa(fields=None):
            """The row's NUMA cell: FIELDS of the alias line in the
            nova.conf given (None: no nova.conf, --alias-map)."""
            if fields is None:
                more = ['--alias-map', 'h100=10de:2331']
            else:
                with open(conf, 'w') as out:
                    out.write('[pci]\nalias = %s\n' % json.dumps(dict(
                        name='h100', vendor_id='10de', product_id='2331',
                        **fields)))
                more = ['--nova-conf', conf]
            _cmd, _parsed, (columns, rows) = self.run_cmd(args + more)
            return dict(zip(columns, rows[0], strict=True))['NUMA']

        found = numa()
        self.assertIn('depends on the [pci] alias numa_policy', found)
        self.assertIn('--nova-conf', found)
        self.assertEqual('judged (host facts)',
                         numa({'numa_policy': 'preferred'}))
        # an alias line without numa_policy is legacy, as in Nova: the
        # devices' cells are not given, so that is not judged
        self.assertIn('which cell holds its PCI devices', numa({}))

    def prometheus(self, status=200):
        """node_exporter's NUMA nodes of gpu-pt-1 (2 of 256 GiB, no huge
        pages) at PROM, and no host fact series (gpuclient-host-facts runs
        nowhere); the queries it gets."""
        queries = []

        def answer(request, context):
            query = dict(urllib.parse.parse_qsl(request.text))['query']
            queries.append(query)
            context.status_code = status
            if query.startswith('gpuclient_host_'):
                return {'status': 'success', 'data': {
                    'resultType': 'vector', 'result': []}}
            value = {'node_memory_numa_MemTotal': 256 << 30,
                     'node_memory_numa_HugePages_Total': 0}[query]
            return {'status': 'success', 'data': {
                'resultType': 'vector', 'result': [
                    {'metric': {'__name__': query, 'node': str(node),
                                'instance': 'gpu-pt-1:9100', 'job': 'node'},
                     'value': [1.0, str(value)]} for node in (0, 1)]}}
        self.placement.mock.post(PROM + '/api/v1/query', json=answer)
        return queries

    def test_judged_from_prometheus(self):
        self.one_candidate()
        queries = self.prometheus()
        _cmd, _parsed, (columns, rows) = self.run_cmd(self.ARGS + [
            '--prometheus', PROM])
        row = dict(zip(columns, rows[0], strict=True))
        self.assertEqual('judged (prometheus)', row['NUMA'])
        # the flavor asks a PCI device: the cells of the hosts' GPUs are
        # asked too (none published)
        self.assertEqual(['node_memory_numa_MemTotal',
                          'node_memory_numa_HugePages_Total']
                         + list(facts_join.queries().values()), queries)
        # the operator's facts win
        _cmd, _parsed, (columns, rows) = self.run_cmd(self.ARGS + [
            '--prometheus', PROM, '--host-fact', 'numa_cells=2',
            '--host-fact', 'numa_pages=4k'])
        row = dict(zip(columns, rows[0], strict=True))
        self.assertEqual('judged (host facts)', row['NUMA'])

    def test_without_numa_flavor_or_prometheus_no_query(self):
        self.one_candidate()
        queries = self.prometheus()
        self.run_cmd(['--flavor', 'g1.h100.1', '--alias-map',
                      'h100=10de:2331', '--prometheus', PROM])
        self.run_cmd(self.ARGS)
        self.assertEqual([], queries)

    def test_prometheus_failing_is_a_warning(self):
        self.one_candidate()
        self.prometheus(status=503)
        with self.assertLogs('gpuclient.ops.utilisation_ops') as logs:
            _cmd, _parsed, (columns, rows) = self.run_cmd(self.ARGS + [
                '--prometheus', PROM])
        row = dict(zip(columns, rows[0], strict=True))
        self.assertTrue(row['NUMA'].startswith('not judged: '), row['NUMA'])
        self.assertIn('NUMA nodes not read from Prometheus', logs.output[0])

    def test_a_host_without_topology_is_ruled_out(self):
        self.one_candidate()
        _cmd, _parsed, (columns, rows) = self.run_cmd(self.ARGS + [
            '--host-fact', 'gpu-pt-1:numa_cells=0', '--explain'])
        row = dict(zip(columns, rows[0], strict=True))
        self.assertFalse(row['Candidate'])
        self.assertIn('reports no NUMA topology',
                      row['Reason'].machine_readable()[0])

    def test_bad_fact(self):
        self.assertRaisesRegex(
            exceptions.CommandError, 'numa_cells, numa_pages, numa_gpus',
            self.run_cmd, self.ARGS + ['--host-fact', 'numa_cells=two'])


class TestTakeAction(CandidatesTestCase):
    def test_candidates_and_request_count(self):
        self.one_candidate()
        cmd, _parsed, (columns, rows) = self.run_cmd(
            ['--flavor', 'g1.h100.1', '--alias-map', 'h100=10de:2331'])
        self.assertEqual(
            ('Host', 'Pool', 'GPU Providers', 'GPUs Total', 'GPUs Used',
             'GPUs Free', 'Free VCPU', 'Free PCPU', 'Free RAM (MiB)',
             'Free Disk (GiB)', 'NUMA'), columns)
        self.assertEqual(1, len(rows))
        row = dict(zip(columns, rows[0], strict=True))
        row['GPU Providers'] = row['GPU Providers'].machine_readable()
        # pt_tree(used=3): 4 devices, 3 allocated; the root's inventory
        self.assertEqual(
            {'Host': 'gpu-pt-1', 'Pool': None, 'GPU Providers': ['pci-3'],
             'GPUs Total': 4, 'GPUs Used': 3, 'GPUs Free': 1,
             'Free VCPU': 256, 'Free PCPU': None, 'Free RAM (MiB)': 523776,
             'Free Disk (GiB)': 3500, 'NUMA': None}, row)
        # a host with candidates and no note: nothing for stderr
        self.assertEqual('', cmd.app.stderr.getvalue())
        sent = self.placement.requests('/allocation_candidates')
        self.assertEqual(1, len(sent))
        self.assertEqual('1.36', sent[0].headers['OpenStack-API-Version']
                         .split()[-1])
        self.assertIn('resourcespci-h100-0=CUSTOM_PCI_10DE_2331%3A1',
                      sent[0].url)
        # one candidates query, one provider list, the version: no request
        # per candidate or per host
        self.assertEqual(3, len(self.placement.requests()))

    def test_a_full_limit_names_the_hosts_that_filled_it(self):
        # issue 40 rule 5: gpu-pt-1 gives both candidates of --limit 2
        self.answers['main'] = {'allocation_requests': [
            {'allocations': {'root-pt': {'resources': {'VCPU': 1}},
                             'pci-%d' % i: {'resources': {PCI: 1}}},
             'mappings': {'': ['root-pt'], 'pci-h100-0': ['pci-%d' % i]}}
            for i in (2, 3)],
            'provider_summaries': recorded.pt_tree(used=2)}
        args = ['--flavor', 'g1.h100.1', '--alias-map', 'h100=10de:2331',
                '--explain']
        _out, err = self.run_output(args + ['--limit', '2'])
        self.assertIn('Placement returned 2 allocation candidates, the '
                      'limit of this query (2', err)
        self.assertIn('Hosts with several of them (gpu-pt-1: 2) may have '
                      'crowded others out', err)
        self.assertIn('allocation_candidates_generation_strategy = '
                      'breadth-first', err)
        # under the limit: nothing was cut
        _out, err = self.run_output(args + ['--limit', '3'])
        self.assertNotIn('crowded', err)
        self.assertNotIn('Placement returned', err)

    def test_pcpu_has_its_own_column(self):
        tree = recorded.pt_tree(used=3)
        tree['root-pt'] = recorded.summary(
            'root-pt', {'PCPU': (64, 4), 'MEMORY_MB': (1024, 0),
                        'DISK_GB': (10, 0)}, ['OWNER_NOVA'])
        self.answers['main'] = {'allocation_requests': [
            {'allocations': {'root-pt': {'resources': {'PCPU': 1}},
                             'pci-3': {'resources': {PCI: 1}}},
             'mappings': {}}], 'provider_summaries': tree}
        _cmd, _parsed, (columns, rows) = self.run_cmd(
            ['--flavor', 'g1.h100.1', '--alias-map', 'h100=10de:2331'])
        row = dict(zip(columns, rows[0], strict=True))
        self.assertEqual(60, row['Free PCPU'])
        self.assertNotEqual(60, row['Free VCPU'])

    def test_long_adds_nodes_and_candidate_count(self):
        self.one_candidate()
        _cmd, _parsed, (columns, rows) = self.run_cmd(
            ['--flavor', 'g1.h100.1', '--alias-map', 'h100=10de:2331',
             '--long'])
        self.assertEqual(candidates.COLUMNS + ('Nodes',
                                               'Allocation Candidates'),
                         columns)
        self.assertEqual(['root-pt'], rows[0][-2].machine_readable())
        self.assertEqual(1, rows[0][-1])

    def test_no_host_explains_on_stderr_with_bounded_requests(self):
        stdout, stderr = self.run_output(
            ['--flavor', 'g1.h100.1', '--alias-map', 'h100=10de:2331',
             '-f', 'json'])
        self.assertEqual([], json.loads(stdout))
        lines = stderr.splitlines()
        self.assertEqual('Why not:', lines[0])
        self.assertIn('  gpu-pt-1: all 4 CUSTOM_PCI_10DE_2331 devices are '
                      'allocated (servers a, b, c, d)', lines)
        self.assertIn('  plain-1: no CUSTOM_PCI_10DE_2331 inventory', lines)
        # the flavor's aggregate_instance_extra_specs:gpu=true, and the
        # only aggregate with gpu=true holds gpu-pt-1 alone
        self.assertIn('  plain-1: no aggregate of the host has gpu '
                      '(aggregate_instance_extra_specs:gpu=true; '
                      'AggregateInstanceExtraSpecsFilter)', lines)
        # the query and settings only with --explain
        self.assertNotIn('Placement query', stderr)
        sent = self.placement.requests('/allocation_candidates')
        self.assertLessEqual(len(sent), 1 + explain.MAX_RELAXED)
        allocations = [r for r in self.placement.requests()
                       if r.path.endswith('/allocations')]
        self.assertEqual(4, len(allocations))

    def test_a_host_blazar_holds_is_no_candidate(self):
        # issue 40, rule 6: gpu-pt-1 enrolled in Blazar (the freepool)
        self.one_candidate()
        self.cloud.aggregates.append(
            fakes.Aggregate('freepool', {}, hosts=['gpu-pt-1']))
        args = ['--flavor', 'g1.h100.1', '--alias-map', 'h100=10de:2331',
                '-f', 'json']
        stdout, _stderr = self.run_output(args)
        # no Blazar in the catalog: the freepool is just an aggregate
        self.assertEqual(['gpu-pt-1'],
                         [r['Host'] for r in json.loads(stdout)])
        access = mock.Mock()
        access.service_catalog.catalog = [{'type': 'reservation'}]
        self.cm.gpu._session.auth.get_access = lambda _session: access
        stdout, stderr = self.run_output(args)
        self.assertEqual([], json.loads(stdout))
        self.assertIn('  gpu-pt-1 is held by Blazar (enrolled and not '
                      'leased, as Blazar\'s host list says): BlazarFilter '
                      'passes only reserved requests there.',
                      stderr.splitlines())
        # one request to Blazar, none without it in the catalog
        self.assertEqual(['/os-hosts'], self.cm.blazar.calls)

    def test_explain_lists_ruled_out_hosts_with_reasons(self):
        self.one_candidate()
        cmd, _parsed, (columns, rows) = self.run_cmd(
            ['--flavor', 'g1.h100.1', '--alias-map', 'h100=10de:2331',
             '--explain'])
        self.assertEqual(candidates.COLUMNS + ('Candidate', 'Reason'),
                         columns)
        by_host = {row[0]: dict(zip(columns, row, strict=True))
                   for row in rows}
        self.assertEqual({'gpu-pt-1', 'gpu-vgpu-1', 'plain-1'},
                         set(by_host))
        self.assertEqual('gpu-pt-1', rows[0][0])  # candidates first
        self.assertIs(True, by_host['gpu-pt-1']['Candidate'])
        self.assertEqual([], by_host['gpu-pt-1']['Reason'].machine_readable())
        self.assertEqual(1, by_host['gpu-pt-1']['GPUs Free'])
        for host in ('gpu-vgpu-1', 'plain-1'):
            row = by_host[host]
            self.assertIs(False, row['Candidate'])
            # not a candidate: its pools (none here), but no free amounts
            self.assertEqual([None] * (len(candidates.COLUMNS) - 1),
                             [row[c] for c in candidates.COLUMNS[1:]])
        # a ruled-out host in pools names them
        columns, rows = candidates.table(
            {'hosts': [], 'eliminated': {'gpu-vgpu-1': ['gpu-vgpu-1: x']},
             'pools_by_host': {'gpu-vgpu-1': ['ws', 'ws2']}}, explain=True)
        row = dict(zip(columns, rows[0], strict=True))
        self.assertEqual(('gpu-vgpu-1', 'ws, ws2', False, ['x']),
                         (row['Host'], row['Pool'], row['Candidate'],
                          row['Reason'].machine_readable()))
        reasons = by_host['plain-1']['Reason'].machine_readable()
        # the reasons of _explain, without the host name the row carries
        self.assertIn('no CUSTOM_PCI_10DE_2331 inventory', reasons)
        self.assertIn('no aggregate of the host has gpu '
                      '(aggregate_instance_extra_specs:gpu=true; '
                      'AggregateInstanceExtraSpecsFilter)', reasons)
        self.assertEqual('; '.join(reasons),
                         by_host['plain-1']['Reason'].human_readable())
        self.assertTrue(by_host['gpu-vgpu-1']['Reason'].machine_readable())
        stderr = cmd.app.stderr.getvalue()
        self.assertIn('Placement query (microversion 1.36): '
                      'GET /allocation_candidates?limit=1000&', stderr)
        self.assertIn('pci_in_placement = True (default)', stderr)
        self.assertIn('PCI alias h100 -> CUSTOM_PCI_10DE_2331 (option)',
                      stderr)
        # judged where a source shows it: on the rows, not "not checked"
        self.assertNotIn('Not checked: NUMATopologyFilter', stderr)
        # the reasons are rows, not repeated on stderr
        self.assertNotIn('Why not', stderr)

    def test_truncation_note(self):
        main = {'allocation_requests': [
            {'allocations': {'root-pt': {'resources': {'VCPU': 1}},
                             'pci-3': {'resources': {PCI: 1}}},
             'mappings': {}}],
            'provider_summaries': recorded.pt_tree(used=3)}
        self.answers['main'] = main
        stdout, stderr = self.run_output(
            ['--flavor', 'g1.h100.1', '--alias-map', 'h100=10de:2331',
             '--limit', '1', '-f', 'value', '-c', 'Host'])
        self.assertEqual('gpu-pt-1\n', stdout)
        self.assertIn('Note: Placement returned 1 allocation candidates',
                      stderr)
        self.assertIn('Raise --limit', stderr)

    def test_forbidden_traits_are_sent_forbidden(self):
        self.run_cmd(['--resource', 'VCPU=1', '--required', 'CUSTOM_A',
                      '--forbidden', 'CUSTOM_B', '--required', '!CUSTOM_C'])
        sent = self.placement.requests('/allocation_candidates')[0]
        query = urllib.parse.parse_qs(sent.query.upper())
        self.assertEqual(['!CUSTOM_B,!CUSTOM_C,CUSTOM_A'],
                         [','.join(sorted(query['REQUIRED'][0].split(',')))])

    def test_unknown_pool_and_bad_resource(self):
        error = self.assertRaises(exceptions.CommandError, self.run_cmd,
                                  ['--resource', 'VGPU=1', '--pool', 'nope'])
        self.assertIn('No GPU pool named nope', str(error))
        error = self.assertRaises(base.ParserError, self.run_cmd,
                                  ['--resource', 'VGPU'])
        self.assertIn("argument --resource: 'VGPU': give <class>=<amount>, "
                      "e.g. CUSTOM_PCI_10DE_2331=2", str(error))
        for text in ('VGPU=two', 'VGPU=-1', 'VGPU=1.5'):
            error = self.assertRaises(exceptions.CommandError, self.run_cmd,
                                      ['--resource', text])
            self.assertIn('--resource %s: give CLASS=N with N a whole '
                          'number, e.g. CUSTOM_PCI_10DE_2331=1 or VCPU=4.'
                          % text, str(error))
            self.assertEqual([], self.placement.requests())
        error = self.assertRaises(exceptions.CommandError, self.run_cmd,
                                  ['--flavor', 'g1.h100.1', '--required',
                                   'X'])
        self.assertIn('go with --resource', str(error))
        exc = self.assertRaises(exceptions.CommandError, self.run_cmd,
                                ['--flavor', 'g1.h100.1', '--forbidden',
                                 'CUSTOM_X'])
        self.assertIn('go with --resource', str(exc))
        error = self.assertRaises(exceptions.CommandError, self.run_cmd,
                                  ['--resource', 'VGPU=1', '--nova-conf',
                                   '/no/such/file'])
        self.assertIn('Cannot read the Nova settings file /no/such/file',
                      str(error))

    def test_unresolved_alias_says_what_to_do(self):
        exc = self.assertRaises(exceptions.CommandError, self.run_cmd,
                                ['--flavor', 'g1.h100.1'])
        self.assertIn('--alias-map h100=VENDOR:PRODUCT', str(exc))


class TestOutputShape(CandidatesTestCase):
    """Every formatter gives the same rows; stdout holds rows only."""

    ARGS = ['--flavor', 'g1.h100.1', '--alias-map', 'h100=10de:2331',
            '--explain']

    def setUp(self):
        super().setUp()
        self.one_candidate()

    def json_rows(self, *extra):
        stdout, stderr = self.run_output(self.ARGS + ['-f', 'json',
                                                      *extra])
        # the whole of stdout is the JSON document: nothing else on it
        return json.loads(stdout), stderr

    def test_rows_identical_across_formatters(self):
        data, _stderr = self.json_rows()
        self.assertEqual(3, len(data))
        columns = list(data[0])
        self.assertEqual(list(candidates.COLUMNS
                              + candidates.EXPLAIN_COLUMNS), columns)
        rows = [[item[c] for c in columns] for item in data]

        stdout, _stderr = self.run_output(self.ARGS + ['-f', 'yaml'])
        self.assertEqual(data, yaml.safe_load(stdout))

        stdout, _stderr = self.run_output(self.ARGS + ['-f', 'csv'])
        self.assertEqual(
            [columns] + [['' if v is None else str(v) for v in row]
                         for row in rows],
            list(csv.reader(io.StringIO(stdout))))

        stdout, _stderr = self.run_output(self.ARGS + ['-f', 'value'])
        self.assertEqual([' '.join(str(v) for v in row) for row in rows],
                         stdout.splitlines())

        stdout, _stderr = self.run_output(self.ARGS + ['-f', 'table'])
        lines = stdout.splitlines()
        self.assertTrue(all(line[:1] in '+|' for line in lines), stdout)
        cells = [[cell.strip() for cell in line.split('|')[1:-1]]
                 for line in lines if line.startswith('|')]

        def human(column, value):
            if isinstance(value, list):
                return ('; ' if column == 'Reason' else ', ').join(value)
            return str(value)  # None too: cliff's table shows 'None'
        self.assertEqual(
            [columns] + [[human(c, v)
                          for c, v in zip(columns, row, strict=True)]
                         for row in rows], cells)

    def test_stdout_holds_only_rows(self):
        data, stderr = self.json_rows()
        self.assertEqual({'gpu-pt-1': True, 'gpu-vgpu-1': False,
                          'plain-1': False},
                         {row['Host']: row['Candidate'] for row in data})
        for text in ('Placement query', 'Nova settings', 'PCI alias h100',
                     'Not checked:'):
            self.assertIn(text, stderr)
        stdout, stderr = self.run_output(self.ARGS + ['-f', 'table'])
        self.assertNotIn('Placement query', stdout)
        self.assertNotIn('Not checked', stdout)
        self.assertIn('Placement query', stderr)

    def test_columns_select_and_sort(self):
        data, _stderr = self.json_rows()
        picked, _stderr = self.json_rows('-c', 'Host', '-c', 'Reason')
        self.assertEqual([{'Host': row['Host'], 'Reason': row['Reason']}
                          for row in data], picked)
        stdout, _stderr = self.run_output(
            self.ARGS + ['-f', 'value', '-c', 'Host', '--sort-column',
                         'Host', '--sort-descending'])
        self.assertEqual(sorted((row['Host'] for row in data),
                                reverse=True), stdout.split())
        stdout, _stderr = self.run_output(
            self.ARGS + ['-f', 'csv', '-c', 'Host', '-c', 'GPUs Free',
                         '--sort-column', 'GPUs Free'])
        found = list(csv.reader(io.StringIO(stdout)))
        self.assertEqual(['Host', 'GPUs Free'], found[0])
        # None sorts last (cliff): the one candidate comes first
        self.assertEqual(['gpu-pt-1', '1'], found[1])


class TestBounds(CandidatesTestCase):
    """--resource and --required are judged before any request."""

    def assert_refused_before_io(self, args, message):
        exc = self.assertRaises(exceptions.CommandError, self.run_cmd, args)
        self.assertIn(message, str(exc))
        self.assertEqual([], self.placement.requests())
        self.cm.compute.get.assert_not_called()

    def test_gpu_class_amounts(self):
        self.assert_refused_before_io(
            ['--resource', 'VGPU=200000'],
            '--resource VGPU=200000: VGPU is a GPU class and an instance '
            'has at most 64 GPUs. Give an amount from 1 to 64.')
        self.assert_refused_before_io(
            ['--resource', 'custom_pci_10de_2331=65'],
            '--resource CUSTOM_PCI_10DE_2331=65: CUSTOM_PCI_10DE_2331 is a '
            'GPU class')

    def test_per_device_groups_summed(self):
        self.assert_refused_before_io(
            ['--resource', 'VGPU=40', '--resource', 'PGPU=40'],
            '--resource: 80 devices of per-device classes')

    def test_placement_maximum(self):
        self.assert_refused_before_io(
            ['--resource', 'MEMORY_MB=99999999999'],
            '--resource MEMORY_MB=99999999999: Placement takes amounts up '
            'to 2147483647')

    def test_required_trait_names(self):
        for trait in ('custom_x', '!CUSTOM_', 'HW-CPU',
                      'CUSTOM_' + 'X' * 249):
            self.assert_refused_before_io(
                ['--resource', 'VGPU=1', '--required', trait],
                '--required %s: give a trait name as Placement '
                'spells it'
                % trait)

    def test_parse_resources_at_the_bound(self):
        self.assertEqual(
            [('VGPU', 64), ('MEMORY_MB', 2147483647)],
            candidates._parse_resources({'VGPU': '64',
                                         'MEMORY_MB': '2147483647'}))
