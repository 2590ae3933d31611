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

"""Bare-metal (Ironic) nodes: accounting from Placement, Ironic's detail,
node traits, and the commands that show them."""

import io
import logging

import fixtures
from osc_lib import exceptions

from gpuclient.rules import baremetal
from gpuclient.rules import capacity
from gpuclient.rules import checks
from gpuclient.rules import hosts
from gpuclient.rules import model
from gpuclient.rules import pool_plan
from gpuclient.rules import pools as pools_mod
from gpuclient.rules.scheduler import conf as nova_conf
from gpuclient.rules.scheduler import explain
from gpuclient.rules.scheduler import resource_request as request
from gpuclient.tests.unit import base
from gpuclient.tests.unit import fakes
from gpuclient.v1 import candidates
from gpuclient.v1 import host as host_cmd

RC = 'CUSTOM_BAREMETAL_GPU_H100'
BM = 'bm-compute-1'


def seed_nodes(cloud):
    """The four states a node provider can be in; returns their roots."""
    return {
        'free': cloud.ironic_node(BM, 'node-free'),
        'busy': cloud.ironic_node(BM, 'node-busy', used=True),
        'maint': cloud.ironic_node(BM, 'node-maint', maintenance=True),
        'clean': cloud.ironic_node(BM, 'node-clean',
                                   provision_state='clean wait'),
    }


def placement_snapshot(cloud):
    """As the client layer reads it: candidates, then slow-path reads."""
    snap = model.Placement.listed(
        cloud.providers_body()['resource_providers'])
    for rc in ('VCPU', RC):
        snap.add_candidates(rc, cloud.candidates_body(rc))
    details = {}
    for root in snap.missing_roots():
        for p in cloud.tree(cloud.provider(root)):
            details[p.uuid] = hosts.summary_from_inventory(
                p.inventory, p.used)
            details[p.uuid]['traits'] = list(p.traits)
    snap.add_details(details)
    return snap


class TestNodeState(base.TestCase):
    def test_every_summary_shape(self):
        # (capacity, used) as Placement sums it up -> state, figures
        cases = [
            ((1, 0), baremetal.AVAILABLE, (1, 0, 1)),
            # in use before the driver's next cycle reserves it
            ((1, 1), baremetal.IN_USE, (1, 1, 0)),
            # in use and reserved: total 1, reserved 1, used 1
            ((0, 1), baremetal.IN_USE, (1, 1, 0)),
            # reserved, nothing allocated: maintenance, cleaning, ...
            ((0, 0), baremetal.UNAVAILABLE, (1, 0, 0)),
        ]
        for (cap, used), state, figures in cases:
            item = {'capacity': cap, 'used': used}
            self.assertEqual(state, baremetal.node_state(item), item)
            self.assertEqual(figures, baremetal.node_figures(item), item)
            self.assertEqual(figures, hosts.device_figures(item, node=True))
            total, used_, free = figures
            self.assertGreaterEqual(free, 0)
            self.assertLessEqual(used_, total)

    def test_what_is_a_node(self):
        one = {'capacity': 0, 'used': 0}
        self.assertTrue(baremetal.is_node_item(RC, one))
        # a class of an Ironic hypervisor's provider, whatever its name
        self.assertFalse(baremetal.is_node_item('CUSTOM_GPU_NODE', one))
        self.assertTrue(baremetal.is_node_item('CUSTOM_GPU_NODE', one,
                                               ironic=True))
        # never a compute class, never more than one unit
        self.assertFalse(baremetal.is_node_item('VCPU', one, ironic=True))
        self.assertFalse(baremetal.is_node_item(
            RC, {'capacity': 4, 'used': 0, 'max_unit': 4}))

    def test_node_roots_from_hypervisor_type(self):
        cloud = fakes.FakeCloud()
        node = cloud.ironic_node(BM, 'n1')
        cloud.compute_host('plain-1')
        self.assertEqual({node.uuid},
                         baremetal.node_roots(cloud.hypervisors))


class TestHostRows(base.TestCase):
    def setUp(self):
        super().setUp()
        self.cloud = fakes.FakeCloud()
        self.nodes = seed_nodes(self.cloud)
        self.cloud.pci_host('gpu-pt-1', used=1)
        self.snap = placement_snapshot(self.cloud)

    def test_nodes_counted_by_state(self):
        rows, _unmapped = hosts.host_rows(
            self.snap, self.cloud.hypervisors,
            hosts.gpu_classes(self.cloud.resource_classes()))
        bm = [r for r in rows if r['host'] == BM]
        self.assertEqual(1, len(bm))
        row = bm[0]
        self.assertEqual((4, 4, 1, 1, 2),
                         (row['devices'], row['total'], row['used'],
                          row['free'], row['unavailable']))
        self.assertEqual(row['total'],
                         row['used'] + row['free'] + row['unavailable'])
        self.assertEqual({n.uuid for n in self.nodes.values()},
                         set(row['nodes']))
        # other classes keep Placement's figures and have no nodes
        pt = [r for r in rows if r['host'] == 'gpu-pt-1'][0]
        self.assertEqual((4, 1, 3, 0, {}),
                         (pt['total'], pt['used'], pt['free'],
                          pt['unavailable'], pt['nodes']))

    def test_capacity_figures_never_negative(self):
        cloud = model.Cloud([], self.cloud.hypervisors, [], self.snap,
                            gpu_classes={RC})
        found = []
        for root in cloud.host_roots()[BM]:
            found += cloud.gpu_providers(root, RC)
        self.assertEqual(4, sum(t for _u, _n, t, _x, _f, _a in found))
        self.assertEqual(1, sum(u for _u, _n, _t, u, _f, _a in found))
        self.assertEqual(1, sum(f for _u, _n, _t, _x, f, _a in found))
        # a node the ironic driver reserved is not awaiting release
        self.assertEqual(0, sum(a for _u, _n, _t, _x, _f, a in found))
        # what capacity list sums per host
        self.assertEqual((4, 1, 1, 0), capacity._figures(
            cloud, cloud.host_roots()[BM], RC))


class TestExplain(base.TestCase):
    def setUp(self):
        super().setUp()
        self.cloud = fakes.FakeCloud()
        self.nodes = seed_nodes(self.cloud)
        self.trees = explain.Trees()
        self.trees.node_roots = baremetal.node_roots(self.cloud.hypervisors)
        for p in self.cloud.providers:
            self.trees.add(p.uuid, self.cloud.summary(p), p.name)
        self.req = request.from_resources(
            [(RC, 1)], [], nova_conf.load_settings(), pools={})
        self.hosts_roots = {BM: {n.uuid for n in self.nodes.values()}}

    def why(self, offered, ironic=None):
        self.trees.ironic_nodes = ironic
        return explain.why_not(self.hosts_roots, offered, [], self.req,
                               self.trees, {self.nodes['busy'].uuid: ['s1']},
                               {}, 'p1')

    def test_offered_host_names_its_ruled_out_nodes(self):
        out = self.why({self.nodes['free'].uuid})[BM]
        self.assertEqual(3, len(out))
        self.assertIn('%s: node %s is in use (server s1)'
                      % (BM, self.nodes['busy'].uuid), out)
        for key in ('maint', 'clean'):
            self.assertIn('%s: node %s: %s' % (
                BM, self.nodes[key].uuid, baremetal.RESERVED_REASON), out)
        self.assertFalse([t for t in out if self.nodes['free'].uuid in t])

    def test_host_without_free_node_names_every_node(self):
        self.cloud.providers.remove(self.nodes['free'])
        self.trees.providers.pop(self.nodes['free'].uuid)
        self.hosts_roots[BM].discard(self.nodes['free'].uuid)
        out = self.why(set())[BM]
        self.assertEqual(3, len(out), out)
        self.assertFalse([t for t in out if 'allocated' in t])

    def test_ironic_detail_names_the_state(self):
        ironic = {n['uuid']: baremetal.node_dict(n)
                  for n in self.cloud.ironic_nodes}
        out = self.why({self.nodes['free'].uuid}, ironic)[BM]
        maint = [t for t in out if self.nodes['maint'].uuid in t][0]
        self.assertIn('node-maint (%s)' % self.nodes['maint'].uuid, maint)
        self.assertIn('in Ironic: maintenance (testing)', maint)
        clean = [t for t in out if self.nodes['clean'].uuid in t][0]
        self.assertIn('in Ironic: provision state clean wait', clean)

    def test_free_counts_never_negative(self):
        # one node in use (capacity 0, used 1), one free: 1 free, not 0
        devices = []
        for key in ('busy', 'free'):
            devices += explain.gpu_devices(self.trees,
                                           self.nodes[key].uuid, RC)
        self.assertEqual(1, sum(c - u for _x, c, u in devices))


class TestIronicNotes(base.TestCase):
    def test_hidden_note(self):
        self.assertIsNone(baremetal.hidden_note({'a'}, None))
        self.assertIsNone(baremetal.hidden_note(set(), {}))
        self.assertIsNone(baremetal.hidden_note({'a'}, {'a': {}}))
        note = baremetal.hidden_note({'a', 'b'}, {})
        self.assertIn('2 bare-metal node(s)', note)
        self.assertIn('system-scoped', note)

    def test_ironic_state_words(self):
        self.assertEqual('maintenance', baremetal.ironic_state(
            {'maintenance': True}))
        self.assertEqual('no power state', baremetal.ironic_state(
            {'provision_state': 'available', 'power_state': None}))
        self.assertEqual('available', baremetal.ironic_state(
            {'provision_state': 'available', 'power_state': 'power off'}))


class TestTraits(base.TestCase):
    def setUp(self):
        super().setUp()
        self.cloud = fakes.FakeCloud()
        self.good = self.cloud.ironic_node(BM, 'n-good')
        self.bare = self.cloud.ironic_node(BM, 'n-bare', traits=())
        spec = pools_mod.build_spec('bm', 'baremetal', resource_class=RC)
        self.cloud.aggregates = [fakes.Aggregate(
            'bm-agg', pools_mod.metadata_for(spec), hosts=[BM])]

    def cloud_with(self, extra_specs):
        self.cloud.add_flavor('bm.h100', vcpus=0, ram=0, disk=0,
                              extra_specs=extra_specs)
        aggs = [pools_mod.aggregate_dict(a) for a in self.cloud.aggregates]
        cloud = model.Cloud(aggs, self.cloud.hypervisors, [],
                            placement_snapshot(self.cloud),
                            flavors=self.cloud.flavors,
                            gpu_classes={RC})
        self.assertIn('bm', cloud.pools, cloud.problems)
        return cloud

    def specs(self, **traits):
        found = {'resources:%s' % RC: '1', 'resources:VCPU': '0',
                 'resources:MEMORY_MB': '0', 'resources:DISK_GB': '0',
                 'aggregate_instance_extra_specs:gpu_pool': 'bm'}
        for trait, value in traits.items():
            found['trait:' + trait] = value
        return found

    def test_node_lacking_a_required_trait_is_reported_with_node_fix(self):
        cloud = self.cloud_with(self.specs(CUSTOM_GPU_H100='required'))
        found = checks.run(cloud, names=['baremetal-node-traits'])
        self.assertEqual(1, len(found), found)
        item = found[0]
        self.assertEqual(checks.WARNING, item.severity)  # n-good fits
        self.assertIn(self.bare.uuid, item.object)
        self.assertEqual('openstack baremetal node add trait %s '
                         'CUSTOM_GPU_H100' % self.bare.uuid, item.fix)
        self.assertEqual(('bm',), item.pools)

    def test_no_node_matches_is_an_error(self):
        cloud = self.cloud_with(self.specs(CUSTOM_GPU_A100='required'))
        found = checks.run(cloud, names=['baremetal-node-traits'])
        self.assertEqual(
            sorted([(checks.ERROR, 'pool bm / node %s' % n.uuid)
                    for n in (self.good, self.bare)]),
            sorted((f.severity, f.object) for f in found))
        self.assertIn('every boot of it fails', found[0].symptom)

    def test_forbidden_trait_removed_on_the_node(self):
        cloud = self.cloud_with(self.specs(CUSTOM_GPU_H100='forbidden'))
        found = checks.run(cloud, names=['baremetal-node-traits'])
        # n-bare still takes the flavor: a warning about n-good
        self.assertEqual([(checks.WARNING, 'pool bm / node %s'
                           % self.good.uuid)],
                         [(f.severity, f.object) for f in found])
        self.assertEqual('openstack baremetal node remove trait %s '
                         'CUSTOM_GPU_H100' % self.good.uuid, found[0].fix)

    def test_matching_nodes_are_silent(self):
        cloud = self.cloud_with(self.specs())
        self.assertEqual([], checks.run(cloud,
                                        names=['baremetal-node-traits']))

    def test_isolation_of_baremetal_pool_refused(self):
        self.assertRaisesRegex(
            exceptions.CommandError, 'refused for baremetal pools',
            pools_mod.build_spec, 'bm', 'baremetal', resource_class=RC,
            isolate=True)

    def test_trait_on_a_node_provider_refused(self):
        # an isolated passthrough pool asked to take the Ironic host
        snap = placement_snapshot(self.cloud)
        spec = pools_mod.build_spec('iso', 'passthrough', alias='h100',
                                    pci_id='10de:2331', isolate=True)
        obs = model.Cloud(
            [{'name': 'iso', 'hosts': [], 'zone': None, 'id': 1,
              'metadata': pools_mod.metadata_for(spec)}],
            [{'id': self.good.uuid, 'service': {'host': BM}}], None, snap)
        pool = pool_plan.find_pool(obs, 'iso')
        self.assertTrue(pool['isolate'], pool)
        err = self.assertRaises(exceptions.CommandError, pool_plan.join_steps,
                                obs, pool, BM, {})
        self.assertIn('openstack baremetal node add trait %s %s'
                      % (self.good.uuid, pool['pool_trait']), str(err))


class TestIronicReader(base.TestCase):
    def setUp(self):
        super().setUp()
        self.cloud = fakes.FakeCloud()
        seed_nodes(self.cloud)
        self.cm = self.useFixture(fakes.ClientManagerFixture(self.cloud))

    def test_no_endpoint_is_silent(self):
        self.assertIsNone(self.cm.gpu.baremetal.nodes())

    def test_nodes_with_explicit_microversion_and_paging(self):
        self.cloud.ironic_endpoint = True
        self.cloud.ironic_max_limit = 3
        nodes = self.cm.gpu.baremetal.nodes()
        self.assertEqual({n['uuid'] for n in self.cloud.ironic_nodes},
                         set(nodes))
        self.assertEqual(2, len(self.cm.ironic.calls))
        for url, version, params in self.cm.ironic.calls:
            self.assertEqual(('/nodes', '1.37'), (url, version))
            self.assertIn('traits', params['fields'].split(','))
        maint = [n for n in nodes.values() if n['name'] == 'node-maint'][0]
        self.assertEqual((True, 'testing', ['CUSTOM_GPU_H100']),
                         (maint['maintenance'], maint['maintenance_reason'],
                          maint['traits']))

    def test_pages_shorter_than_asked_for_are_followed(self):
        # Ironic's [api]max_limit below the page size asked for: every
        # page is short, and the next link says there is more
        self.cloud.ironic_endpoint = True
        self.cloud.ironic_max_limit = 2
        nodes = self.cm.gpu.baremetal.nodes()
        self.assertEqual({n['uuid'] for n in self.cloud.ironic_nodes},
                         set(nodes))
        pages = -(-len(self.cloud.ironic_nodes) // 2)
        self.assertLessEqual(pages, len(self.cm.ironic.calls))
        markers = [p.get('marker') for _u, _v, p in self.cm.ironic.calls]
        self.assertEqual(len(markers), len(set(markers)))

    def test_a_refusal_is_an_empty_answer_another_error_none(self):
        self.cloud.ironic_endpoint = True
        log = self.useFixture(fixtures.FakeLogger(level=logging.WARNING))
        for status, expected in ((403, {}), (401, {}), (500, None)):
            with self.subTest(status=status):
                self.cm.ironic.get = lambda *a, status=status, **kw: (
                    fakes.make_response(status, {'error_message': 'no'}))
                self.assertEqual(expected, self.cm.gpu.baremetal.nodes())
        # the refusals are not warned about, the failure is
        self.assertEqual(1, log.output.count('node states are not shown'))

    def test_hidden_nodes_are_an_empty_answer(self):
        self.cloud.ironic_endpoint = True
        self.cloud.ironic_hidden = True
        self.assertEqual({}, self.cm.gpu.baremetal.nodes())


class TestHostListCommand(base.CommandTestCase):
    def setUp(self):
        super().setUp()
        self.cloud = fakes.FakeCloud()
        self.nodes = seed_nodes(self.cloud)
        self.useFixture(fakes.PlacementFixture(self.cloud))
        self.cm = self.useFixture(fakes.ClientManagerFixture(self.cloud))
        self.log = self.useFixture(fixtures.FakeLogger(
            level=logging.WARNING))

    def run_cmd(self, args):
        cmd = host_cmd.ListHost(self.make_app(self.cm.client_manager), None)
        columns, data = cmd.take_action(self.check_parser(cmd, args))
        return [dict(zip(columns, [
            v.machine_readable() if hasattr(v, 'machine_readable') else v
            for v in row], strict=True)) for row in data]

    def test_figures_and_long_columns(self):
        self.cloud.ironic_endpoint = True
        rows = self.run_cmd(['--long'])
        self.assertEqual(1, len(rows))
        row = rows[0]
        self.assertEqual((4, 1, 1, 2), (row['Total'], row['Used'],
                                        row['Free'], row['Unavailable']))
        states = row['Node States']
        self.assertEqual(4, len(states))
        self.assertIn('node-maint (%s): maintenance (testing)'
                      % self.nodes['maint'].uuid, states)
        self.assertIn('node-busy (%s): active (deployed)'
                      % self.nodes['busy'].uuid, states)
        self.assertEqual([], self.log.output.splitlines())

    def test_hidden_nodes_note_and_placement_answer_stands(self):
        self.cloud.ironic_endpoint = True
        self.cloud.ironic_hidden = True
        row = self.run_cmd(['--long'])[0]
        self.assertEqual((1, 1, 2), (row['Used'], row['Free'],
                                     row['Unavailable']))
        self.assertIn('%s: reserved' % self.nodes['maint'].uuid,
                      row['Node States'])
        self.assertIn('hides nodes from project-scoped tokens',
                      self.log.output)

    def test_without_long_ironic_is_not_read(self):
        self.cloud.ironic_endpoint = True
        row = self.run_cmd([])[0]
        self.assertEqual((4, 1, 1), (row['Total'], row['Used'], row['Free']))
        self.assertEqual([], self.cm.ironic.calls)


class TestCandidatesExplain(base.CommandTestCase):
    def setUp(self):
        super().setUp()
        self.cloud = fakes.FakeCloud()
        self.nodes = seed_nodes(self.cloud)
        self.placement = self.useFixture(fakes.PlacementFixture(self.cloud))
        self.cm = self.useFixture(fakes.ClientManagerFixture(self.cloud))
        self.cm.gpu._session.get_project_id = lambda: 'p1'
        self.placement.mock.get(
            '%s/resource_providers/%s/allocations' % (
                fakes.PLACEMENT_URL, self.nodes['busy'].uuid),
            json={'allocations': {'s1': {'resources': {RC: 1}}}})

    def test_ruled_out_nodes_named_on_the_offered_host(self):
        self.cloud.ironic_endpoint = True
        self.cloud.ironic_hidden = True
        cmd = candidates.ListCandidate(
            self.make_app(self.cm.client_manager), None)
        cmd.app.stderr = io.StringIO()
        parsed = self.check_parser(cmd, ['--resource', RC + '=1',
                                         '--explain'])
        columns, rows = cmd.take_action(parsed)
        by_host = {row[0]: dict(zip(columns, row, strict=True))
                   for row in rows}
        self.assertIs(True, by_host[BM]['Candidate'])
        reasons = by_host[BM]['Reason'].machine_readable()
        self.assertEqual(3, len(reasons), reasons)
        self.assertIn('node %s: %s' % (self.nodes['maint'].uuid,
                                       baremetal.RESERVED_REASON), reasons)
        self.assertIn('hides nodes from project-scoped tokens',
                      cmd.app.stderr.getvalue())
