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

"""gpuclient.rules.scheduler.explain on recorded Placement answers (plain
dicts)."""

from gpuclient.rules import host_names
from gpuclient.rules import model
from gpuclient.rules import pools as pools_mod
from gpuclient.rules.scheduler import conf as nova_conf
from gpuclient.rules.scheduler import explain
from gpuclient.rules.scheduler import filters
from gpuclient.rules.scheduler import manager
from gpuclient.rules.scheduler import resource_request as request
from gpuclient.rules.scheduler.filters import aggregate_instance_extra_specs
from gpuclient.tests.unit import base

PCI = 'CUSTOM_PCI_10DE_2331'
PT_ROOT, VG_ROOT, PLAIN_ROOT = 'root-pt', 'root-vg', 'root-plain'
HYPERVISORS = [
    {'id': PT_ROOT, 'service': {'host': 'gpu-pt-1'}},
    {'id': VG_ROOT, 'service': {'host': 'gpu-vgpu-1'}},
    {'id': PLAIN_ROOT, 'service': {'host': 'plain-1'}},
]
SERVERS = ['a', 'b', 'c', 'd']


def summary(root, resources, traits=(), parent=None):
    return {'resources': {rc: {'capacity': cap, 'used': used}
                          for rc, (cap, used) in resources.items()},
            'traits': list(traits), 'parent_provider_uuid': parent,
            'root_provider_uuid': root}


def compute(root, traits=('OWNER_NOVA', 'COMPUTE_NODE')):
    return summary(root, {'VCPU': (256, 0), 'MEMORY_MB': (523776, 0),
                          'DISK_GB': (3500, 0)}, traits)


def pt_tree(used=4):
    tree = {PT_ROOT: compute(PT_ROOT)}
    for i in range(4):
        tree['pci-%d' % i] = summary(PT_ROOT, {PCI: (1, 1 if i < used
                                                     else 0)},
                                     ['OWNER_NOVA'], PT_ROOT)
    return tree


# recorded: the flavor asks for one h100; every device of gpu-pt-1 is used
MAIN = {'allocation_requests': [], 'provider_summaries': {}}
WITHOUT_GPU = {
    'allocation_requests': [
        {'allocations': {root: {'resources': {'VCPU': 1}}},
         'mappings': {'': [root]}}
        for root in (PT_ROOT, VG_ROOT, PLAIN_ROOT)],
    'provider_summaries': dict(
        pt_tree(), **{VG_ROOT: compute(VG_ROOT),
                      'pgpu-0': summary(VG_ROOT, {'VGPU': (4, 1)}, [],
                                        VG_ROOT),
                      PLAIN_ROOT: compute(PLAIN_ROOT)}),
}


def seed_request(**kwargs):
    settings = nova_conf.load_settings(alias_maps=['h100=10de:2331'])
    flavor = {'vcpus': 1, 'ram': 512, 'disk': 1, 'extra_specs': {
        'pci_passthrough:alias': 'h100:1',
        'aggregate_instance_extra_specs:gpu_pool': 'solver'}}
    return request.build(flavor, {}, settings, **kwargs)


class TestWhyNot(base.TestCase):
    def explain(self, req, answers, allocations=None, post=None):
        trees = explain.Trees()
        trees.add_answer(MAIN)
        relaxed = []
        for requirement in explain.requirements(req):
            answer = answers.get(requirement['id'],
                                 {'allocation_requests': []})
            trees.add_answer(answer)
            relaxed.append((requirement, explain.candidate_roots(answer)))
        hosts = {}
        for root, host in host_names.root_hosts(HYPERVISORS).items():
            hosts.setdefault(host, set()).add(root)
        return explain.why_not(hosts, set(), relaxed, req, trees,
                               allocations or {}, post or {}, 'p1')

    def test_full_devices_named_with_servers(self):
        allocations = {'pci-%d' % i: [SERVERS[i]] for i in range(4)}
        out = self.explain(seed_request(), {'gpu': WITHOUT_GPU},
                           allocations)
        self.assertEqual(
            ['gpu-pt-1: all 4 CUSTOM_PCI_10DE_2331 devices are allocated '
             '(servers a, b, c, d)'], out['gpu-pt-1'])
        self.assertEqual(['plain-1: no CUSTOM_PCI_10DE_2331 inventory'],
                         out['plain-1'])
        self.assertEqual(['gpu-vgpu-1: no CUSTOM_PCI_10DE_2331 inventory'],
                         out['gpu-vgpu-1'])

    def test_isolated_pool(self):
        req = seed_request(aggregates=[{
            'name': 'solver', 'uuid': 'agg-solver', 'hosts': ['gpu-pt-1'],
            'metadata': {'trait:CUSTOM_GPU_POOL_SOLVER': 'required'}}])
        answer = {'allocation_requests': [
            {'allocations': {PT_ROOT: {'resources': {'VCPU': 1}},
                             'pci-3': {'resources': {PCI: 1}}}}],
            'provider_summaries': pt_tree(used=3)}
        out = self.explain(req, {'isolated:agg-solver': answer})
        self.assertEqual(
            ["gpu-pt-1: isolated pool 'solver' requires trait "
             "CUSTOM_GPU_POOL_SOLVER, the flavor (and image) do not ask for "
             "it"], out['gpu-pt-1'])

    def test_several_causes_judged_on_known_trees(self):
        # no single relaxation brings gpu-pt-1 back: the tree is known from
        # the size relaxation's summaries and fails two requirements
        req = seed_request(aggregates=[{
            'name': 'solver', 'uuid': 'agg-solver', 'hosts': ['gpu-pt-1'],
            'metadata': {'trait:CUSTOM_GPU_POOL_SOLVER': 'required'}}])
        known = {'allocation_requests': [],
                 'provider_summaries': pt_tree(used=4)}
        out = self.explain(req, {'root:OWNER_NOVA': known})
        text = ' '.join(out['gpu-pt-1'])
        self.assertIn('devices are allocated', text)
        self.assertIn("isolated pool 'solver'", text)

    def test_post_filter_reasons(self):
        # pool solver, limited to project p2
        solver = pools_mod.metadata_for(pools_mod.build_spec(
            'solver', 'passthrough', alias='h100', pci_id='10de:2331',
            projects=['p2']))
        cloud = model.Cloud(
            [{'name': 'solver', 'hosts': ['gpu-pt-1'], 'metadata': solver},
             {'name': 'other', 'hosts': ['gpu-vgpu-1'],
              'metadata': {'gpu_pool': 'other'}}], [],
            [{'host': 'plain-1', 'status': 'disabled', 'state': 'up'}],
            blazar=False)
        spec = filters.spec(
            nova_conf.load_settings(),
            {'extra_specs': {'aggregate_instance_extra_specs:gpu_pool':
                             'solver', 'hw:cpu_policy': 'shared'}}, 'p1')
        post = manager.removed(manager.select(
            cloud, spec, ['gpu-pt-1', 'plain-1', 'gpu-vgpu-1']))
        texts = {host: [filters.post_filter_text(host, r, 'p1')
                        for r in reasons] for host, reasons in post.items()}
        self.assertEqual(
            ['gpu-pt-1: pool solver is limited to project(s) p2, not p1 '
             '(AggregateMultiTenancyIsolation).'], texts['gpu-pt-1'])
        self.assertIn('disabled', texts['plain-1'][0])
        self.assertIn('plain-1: not in pool solver', texts['plain-1'][1])
        self.assertEqual(
            ['gpu-vgpu-1: not in pool solver (aggregate_instance_extra_specs'
             ':gpu_pool=solver; AggregateInstanceExtraSpecsFilter)'],
            texts['gpu-vgpu-1'])

    def test_unscoped_key_needs_aggregate_metadata(self):
        reasons = aggregate_instance_extra_specs.extra_specs_reasons(
            {'group_policy': 'isolate', 'hw:x': '1'}, {'gpu_pool': {'a'}})
        self.assertEqual([('group_policy', None)],
                         [(r['key'], r['have']) for r in reasons])

    def test_operators(self):
        match = aggregate_instance_extra_specs.extra_specs_match
        for value, req, want in [
                ('solver', 'solver', True), ('solver', 's== solver', True),
                ('a', 's!= a', False), ('4', '>= 2', True),
                ('4', '= 8', False), ('x', '<or> y <or> x', True),
                ('x', '<or> y <or> z', False), ('abc', '<in> b', True),
                ('abc', '<all-in> a c', True), ('n', '>= 2', False),
                ('true', 'True', False)]:
            self.assertEqual(want, match(value, req), (value, req))

    def test_requirements_are_bounded(self):
        flavor = {'vcpus': 1, 'ram': 1, 'disk': 1, 'extra_specs': {
            'trait:CUSTOM_%d' % i: 'required' for i in range(20)}}
        req = request.build(flavor, {}, nova_conf.load_settings())
        self.assertEqual(explain.MAX_RELAXED,
                         len(explain.requirements(req)))


class TestCandidateRows(base.TestCase):
    def test_one_row_per_host(self):
        req = seed_request()
        suffix = [s for s in req['groups'] if s][0]
        answer = {
            'allocation_requests': [
                {'allocations': {PT_ROOT: {'resources': {'VCPU': 1}},
                                 'pci-%d' % i: {'resources': {PCI: 1}}},
                 'mappings': {'': [PT_ROOT], suffix: ['pci-%d' % i]}}
                for i in (2, 3)],
            'provider_summaries': pt_tree(used=2)}
        trees = explain.Trees()
        trees.add_answer(answer)
        trees.name_providers([{'uuid': 'pci-2', 'name': 'dev-2'}])
        rows = explain.candidate_rows(answer, req, HYPERVISORS, trees,
                                      {'gpu-pt-1': ['solver']})
        self.assertEqual(1, len(rows))
        row = rows[0]
        self.assertEqual(('gpu-pt-1', ['solver'], 2, 2, 4),
                         (row['host'], row['pools'], row['candidates'],
                          row['gpus_free'], row['gpus_total']))
        self.assertEqual({suffix: ['dev-2', 'pci-3']}, row['gpu_providers'])
        self.assertEqual({'VCPU': 256, 'MEMORY_MB': 523776,
                          'DISK_GB': 3500}, row['free'])


class TestRelaxedQueriesPlacementAccepts(base.TestCase):
    def test_no_resourceless_unsuffixed_group(self):
        # isolated passthrough pool flavor: dropping the instance size
        # would leave required=CUSTOM_GPU_POOL_X without resources, which
        # Placement refuses (400): that relaxation is not sent
        settings = nova_conf.load_settings(alias_maps=['h100=10de:2331'])
        flavor = {'vcpus': 1, 'ram': 512, 'disk': 1, 'extra_specs': {
            'pci_passthrough:alias': 'h100:1',
            'trait:CUSTOM_GPU_POOL_X': 'required'}}
        req = request.build(flavor, {}, settings)
        ids = [r['id'] for r in explain.requirements(req)]
        self.assertNotIn('size', ids)
        self.assertIn('gpu', ids)
        for requirement in explain.requirements(req):
            own = requirement['request']['groups'].get('')
            self.assertTrue(own is None or own['resources'])

    def test_size_judged_locally_when_not_relaxed(self):
        settings = nova_conf.load_settings(alias_maps=['h100=10de:2331'])
        flavor = {'vcpus': 999, 'ram': 512, 'disk': 1, 'extra_specs': {
            'pci_passthrough:alias': 'h100:1',
            'trait:CUSTOM_GPU_POOL_X': 'required'}}
        req = request.build(flavor, {}, settings)
        trees = explain.Trees()
        for uuid, item in pt_tree(used=0).items():
            trees.add(uuid, item)
        out = explain.why_not({'gpu-pt-1': {PT_ROOT}}, set(), [], req,
                              trees, {}, {}, 'p1')
        self.assertIn('gpu-pt-1: 256 VCPU free, the flavor asks for 999',
                      out['gpu-pt-1'])


class TestCrowdedHosts(base.TestCase):
    """issue 40 rule 5: which hosts filled a full allocation-candidates
    answer (Placement keeps LIMIT of all candidates, in no promised
    order)."""

    def test_cases(self):
        rows = [{'host': 'a', 'candidates': 1},
                {'host': 'b', 'candidates': 6},
                {'host': 'c', 'candidates': 3}]
        for count, limit, expected in (
                (10, 10, [('b', 6), ('c', 3)]),   # full: b, c crowd
                (9, 10, []),                      # under the limit
                (10, None, []),                   # no limit sent
                (10, 0, [])):
            self.assertEqual(expected,
                             explain.crowded_hosts(rows, count, limit),
                             (count, limit))
        self.assertEqual([], explain.crowded_hosts(
            [{'host': 'a', 'candidates': 1}], 1, 1))
