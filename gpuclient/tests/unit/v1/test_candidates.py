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

"""``openstack gpu candidates``: parser, output, request counts."""

import io
import json
import urllib.parse

from osc_lib import exceptions

from gpuclient.tests.unit import base
from gpuclient.tests.unit import fakes
from gpuclient.tests.unit import test_explain as recorded
from gpuclient.v1 import candidates

PCI = 'CUSTOM_PCI_10DE_2331'
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
        if url == '/flavors/g1.h100.1':
            return fakes.make_response(200, {'flavor': FLAVOR})
        return self.cm._compute_get(url, microversion, params, **kwargs)

    def _candidates(self, req, context):
        query = urllib.parse.parse_qs(req.query, keep_blank_values=True)
        gpu = any(k.startswith('resourcespci') for k in query)
        if gpu:
            return self.answers.get('main', recorded.MAIN)
        return recorded.WITHOUT_GPU

    def run_cmd(self, args):
        cmd = candidates.Candidates(self.make_app(self.cm.client_manager),
                                    None)
        parsed = self.check_parser(cmd, args)
        return cmd, parsed, cmd.take_action(parsed)


class TestParser(CandidatesTestCase):
    def test_flavor_or_resource_required(self):
        cmd = candidates.Candidates(self.make_app(None), None)
        self.assertRaises(base.ParserError, self.check_parser, cmd, [])
        self.assertRaises(base.ParserError, self.check_parser, cmd,
                          ['--flavor', 'f', '--resource', 'VGPU=1'])

    def test_options(self):
        cmd = candidates.Candidates(self.make_app(None), None)
        self.check_parser(cmd, [
            '--resource', 'VGPU=2', '--resource', 'VCPU=1', '--required',
            'CUSTOM_X', '--image', 'i', '--pool', 'p', '--project', 'q',
            '--availability-zone', 'az', '--boot-from-volume', '--limit',
            '5', '--explain', '--alias-map', 'h100=10de:2331',
            '--nova-conf', '/x', '--setting', 'pci_in_placement=false'], [
            ('resources', ['VGPU=2', 'VCPU=1']), ('required', ['CUSTOM_X']),
            ('image', 'i'), ('pool', 'p'), ('project', 'q'), ('zone', 'az'),
            ('boot_from_volume', True), ('limit', 5), ('explain', True),
            ('alias_maps', ['h100=10de:2331']), ('nova_conf', '/x'),
            ('settings', {'pci_in_placement': 'false'})])
        self.assertRaises(base.ParserError, self.check_parser, cmd,
                          ['--resource', 'VGPU=1', '--limit', 'many'])


class TestTakeAction(CandidatesTestCase):
    def test_candidates_and_request_count(self):
        main = {'allocation_requests': [
            {'allocations': {'root-pt': {'resources': {'VCPU': 1}},
                             'pci-3': {'resources': {PCI: 1}}},
             'mappings': {'': ['root-pt'], 'pci-h100-0': ['pci-3']}}],
            'provider_summaries': recorded.pt_tree(used=3)}
        self.answers['main'] = main
        _cmd, _parsed, (columns, rows) = self.run_cmd(
            ['--flavor', 'g1.h100.1', '--alias-map', 'h100=10de:2331'])
        self.assertEqual(candidates.COLUMNS, columns)
        self.assertEqual(1, len(rows))
        row = rows[0]
        self.assertEqual(('gpu-pt-1', None, ['pci-3'], 1, 4, 256),
                         (row[0], row[1], row[2].machine_readable(),
                          row[3], row[4], row[5]))
        sent = self.placement.requests('/allocation_candidates')
        self.assertEqual(1, len(sent))
        self.assertEqual('1.36', sent[0].headers['OpenStack-API-Version']
                         .split()[-1])
        self.assertIn('resourcespci-h100-0=CUSTOM_PCI_10DE_2331%3A1',
                      sent[0].url)
        # one candidates query, one provider list, the version: no request
        # per candidate or per host
        self.assertEqual(3, len(self.placement.requests()))

    def test_no_host_explains_with_bounded_requests(self):
        cmd, _parsed, (_columns, rows) = self.run_cmd(
            ['--flavor', 'g1.h100.1', '--alias-map', 'h100=10de:2331'])
        self.assertEqual([], rows)
        result = cmd._result
        self.assertEqual(
            ['gpu-pt-1: all 4 CUSTOM_PCI_10DE_2331 devices are allocated '
             '(servers a, b, c, d)'], result['eliminated']['gpu-pt-1'])
        self.assertIn('plain-1: no CUSTOM_PCI_10DE_2331 inventory',
                      result['eliminated']['plain-1'])
        # the flavor's aggregate_instance_extra_specs:gpu=true, and the
        # only aggregate with gpu=true holds gpu-pt-1 alone
        self.assertIn('plain-1: no aggregate of the host has gpu '
                      '(aggregate_instance_extra_specs:gpu=true; '
                      'AggregateInstanceExtraSpecsFilter)',
                      result['eliminated']['plain-1'])
        sent = self.placement.requests('/allocation_candidates')
        self.assertLessEqual(len(sent), 1 + candidates.explain.MAX_RELAXED)
        allocations = [r for r in self.placement.requests()
                       if r.path.endswith('/allocations')]
        self.assertEqual(4, len(allocations))
        # what table output prints after the (empty) table
        lines = candidates.explanation_lines(result)
        self.assertEqual('Why not:', lines[0])
        self.assertIn('  gpu-pt-1: all 4 CUSTOM_PCI_10DE_2331 devices are '
                      'allocated (servers a, b, c, d)', lines)

    def test_json_has_the_whole_structure(self):
        cmd, parsed, (columns, rows) = self.run_cmd(
            ['--flavor', 'g1.h100.1', '--alias-map', 'h100=10de:2331',
             '--explain', '-f', 'json'])
        cmd.app.stdout = io.StringIO()
        cmd.produce_output(parsed, columns, rows)
        data = json.loads(cmd.app.stdout.getvalue())
        self.assertTrue(data['query'].startswith('limit=1000&'))
        self.assertEqual('1.36', data['microversion'])
        self.assertEqual(True, data['settings']['pci_in_placement'])
        self.assertEqual('option', data['aliases']['h100']['source'])
        self.assertIn('NUMATopologyFilter', data['not_checked'])
        self.assertIn('gpu-pt-1', data['eliminated'])

    def test_truncation_note(self):
        main = {'allocation_requests': [
            {'allocations': {'root-pt': {'resources': {'VCPU': 1}},
                             'pci-3': {'resources': {PCI: 1}}},
             'mappings': {}}],
            'provider_summaries': recorded.pt_tree(used=3)}
        self.answers['main'] = main
        cmd, _parsed, _out = self.run_cmd(
            ['--flavor', 'g1.h100.1', '--alias-map', 'h100=10de:2331',
             '--limit', '1'])
        self.assertTrue(cmd._result['maybe_truncated'])
        self.assertIn('Raise --limit', cmd._result['notes'][-1])

    def test_unknown_pool_and_bad_resource(self):
        self.assertRaises(exceptions.CommandError, self.run_cmd,
                          ['--resource', 'VGPU=1', '--pool', 'nope'])
        self.assertRaises(exceptions.CommandError, self.run_cmd,
                          ['--resource', 'VGPU'])
        self.assertRaises(exceptions.CommandError, self.run_cmd,
                          ['--flavor', 'g1.h100.1', '--required', 'X'])
        self.assertRaises(exceptions.CommandError, self.run_cmd,
                          ['--resource', 'VGPU=1', '--nova-conf',
                           '/no/such/file'])

    def test_unresolved_alias_says_what_to_do(self):
        exc = self.assertRaises(exceptions.CommandError, self.run_cmd,
                                ['--flavor', 'g1.h100.1'])
        self.assertIn('--alias-map h100=VENDOR:PRODUCT', str(exc))


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
                '--required %s: give a trait name as Placement spells it'
                % trait)

    def test_parse_resources_at_the_bound(self):
        self.assertEqual(
            [('VGPU', 64), ('MEMORY_MB', 2147483647)],
            candidates._parse_resources(['VGPU=64',
                                         'MEMORY_MB=2147483647']))
