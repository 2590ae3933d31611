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

"""gpuclient.rules.scheduler.fit: one case per Placement rule, a brute-force
reference on random small trees, and realistic hosts with answers derived by
hand."""

import collections
import itertools
import random

from gpuclient.rules.scheduler import conf as nova_conf
from gpuclient.rules.scheduler import fit
from gpuclient.rules.scheduler import resource_request as request_mod
from gpuclient.tests.unit import base

PCI = 'CUSTOM_PCI_10DE_2331'


def inv(free, max_unit=None, min_unit=1, step=1):
    return {'free': free, 'min_unit': min_unit,
            'max_unit': free if max_unit is None else max_unit,
            'step_size': step}


def rp(parent=None, traits=(), aggs=(), **inventory):
    return {'parent': parent, 'traits': set(traits), 'aggregates': set(aggs),
            'inventory': inventory}


def group(resources, required=(), forbidden=(), member_of=(),
          forbidden_aggs=(), **extra):
    found = {'resources': dict(resources), 'required': set(required),
             'forbidden': set(forbidden),
             'member_of': [list(m) for m in member_of],
             'forbidden_aggregates': set(forbidden_aggs)}
    found.update(extra)
    return found


def req(groups, policy=None, root_required=(), root_forbidden=()):
    return {'groups': groups, 'group_policy': policy,
            'root_required': set(root_required),
            'root_forbidden': set(root_forbidden)}


# -- the brute-force reference -----------------------------------------------

def brute_force(tree, request, most=60):
    """Every assignment of groups to providers, for k = 0, 1, 2, ... copies.

    Written from the rules in gpuclient.rules.scheduler.fit's docstring,
    sharing no code with it.
    """
    root = [u for u, r in tree.items() if r['parent'] is None][0]
    if not request['root_required'] <= tree[root]['traits']:
        return 0
    if request['root_forbidden'] & tree[root]['traits']:
        return 0
    groups = {}
    for suffix, g in request['groups'].items():
        res = {rc: n for rc, n in g['resources'].items() if n}
        if not res:
            if (g['required'] or g['forbidden'] or g['member_of']
                    or g['forbidden_aggregates'] or g.get('in_tree')):
                return 0
            continue
        if g['required'] & g['forbidden']:
            return 0
        if g.get('in_tree') and g['in_tree'] not in tree:
            return 0
        groups[suffix] = dict(g, resources=res)
    numbered = sorted(s for s in groups if s)
    if not groups or (len(numbered) > 1 and request['group_policy']
                      not in ('none', 'isolate')):
        return 0
    # one slot per numbered group, one per class of the unsuffixed group
    slots = [(s, groups[s]['resources']) for s in numbered]
    if '' in groups:
        slots += [('', {rc: n}) for rc, n in
                  sorted(groups['']['resources'].items())]
    names = sorted(tree)

    def fits_unit(u, rc, n):
        i = tree[u]['inventory'].get(rc)
        return (i is not None and i['min_unit'] <= n <= i['max_unit']
                and n % i['step_size'] == 0 and n <= i['free'])

    def member(aggs, member_of):
        return all(aggs & set(m) for m in member_of)

    def slot_ok(suffix, res, u):
        g, node = groups[suffix], tree[u]
        if not all(fits_unit(u, rc, n) for rc, n in res.items()):
            return False
        if g['forbidden'] & node['traits']:
            return False
        if suffix:
            return (g['required'] <= node['traits']
                    and member(node['aggregates'], g['member_of'])
                    and not node['aggregates'] & g['forbidden_aggregates'])
        root_aggs = tree[root]['aggregates']
        return ((member(node['aggregates'], g['member_of'])
                 or member(root_aggs, g['member_of']))
                and not (node['aggregates'] | root_aggs)
                & g['forbidden_aggregates'])

    usages = set()
    eligible = [[u for u in names if slot_ok(s, res, u)] for s, res in slots]
    for choice in itertools.product(*eligible):
        chosen_numbered = [u for (s, _r), u in zip(slots, choice,
                                                    strict=True) if s]
        if request['group_policy'] == 'isolate' and len(
                set(chosen_numbered)) != len(chosen_numbered):
            continue
        if '' in groups:
            joined = set()
            for (s, _r), u in zip(slots, choice, strict=True):
                if not s:
                    joined |= tree[u]['traits']
            if not groups['']['required'] <= joined:
                continue
        usage = collections.Counter()
        for (_s, res), u in zip(slots, choice, strict=True):
            for rc, n in res.items():
                usage[(u, rc)] += n
        if any(n > tree[u]['inventory'][rc]['max_unit']
               or n > tree[u]['inventory'][rc]['free']
               for (u, rc), n in usage.items()):
            continue
        usages.add(frozenset(usage.items()))
    keys = sorted((u, rc) for u in names for rc in tree[u]['inventory'])
    usages = [tuple(dict(u).get(key, 0) for key in keys) for u in usages]
    free = tuple(tree[u]['inventory'][rc]['free'] for u, rc in keys)
    seen = {}

    def can(k, start, left):
        """Do k more copies fit, each one of usages[start:]?"""
        if k == 0:
            return True
        if (k, start, left) not in seen:
            seen[(k, start, left)] = any(
                can(k - 1, i, tuple(room - n for room, n in zip(
                    left, usages[i], strict=True)))
                for i in range(start, len(usages))
                if all(room >= n for room, n in zip(
                    left, usages[i], strict=True)))
        return seen[(k, start, left)]

    k = 0
    while k < most and can(k + 1, 0, free):
        k += 1
    return k


def random_case(rnd):
    """A small random tree and request using every rule."""
    classes = ['A', 'B', 'C']
    traits = ['T1', 'T2', 'T3']
    aggs = ['a1', 'a2']
    tree = {}
    for i in range(rnd.randint(1, 4)):
        inventory = {}
        for rc in classes:
            if rnd.random() < 0.85:
                inventory[rc] = inv(rnd.choice([0, 1, 2, 3, 4, 4, 5, 6]),
                                    max_unit=rnd.choice([1, 2, 3, 6, 6, 6]),
                                    min_unit=rnd.choice([1, 1, 1, 1, 1, 2]),
                                    step=rnd.choice([1, 1, 1, 1, 1, 2]))
        tree['rp%d' % i] = rp(
            None if i == 0 else 'rp%d' % rnd.randrange(i),
            rnd.sample(traits, rnd.randint(0, 2)),
            rnd.sample(aggs, rnd.randint(0, 2)), **inventory)

    def random_group(most):
        res = {rc: rnd.choice([0, 1, 1, 1, 1, 1, 1, 2, 2, 3])
               for rc in rnd.sample(classes, rnd.randint(1, most))}
        return group(
            res,
            required=rnd.sample(traits, rnd.choice([0, 0, 0, 0, 1])),
            forbidden=rnd.sample(traits, rnd.choice([0, 0, 0, 0, 0, 1])),
            member_of=[rnd.sample(aggs, rnd.randint(1, 2))
                       for _i in range(rnd.choice([0, 0, 0, 0, 0, 1, 2]))],
            forbidden_aggs=rnd.sample(aggs, rnd.choice([0, 0, 0, 0, 0, 1])))

    groups = {}
    if rnd.random() < 0.7:
        groups[''] = random_group(2)
    for i in range(rnd.choice([0, 1, 1, 2, 2, 3])):
        groups[str(i + 1)] = random_group(rnd.choice([1, 1, 2]))
    return tree, req(
        groups, rnd.choice(['isolate', 'none', 'isolate', 'none', None]),
        rnd.sample(traits, rnd.choice([0, 0, 0, 0, 1])),
        rnd.sample(traits, rnd.choice([0, 0, 0, 0, 1])))


def random_host(rnd):
    """A compute node with device children, as real hosts look."""
    tree = {'cn': rp(traits=['OWNER_NOVA'], VCPU=inv(rnd.randint(0, 12)),
                     MEMORY_MB=inv(rnd.randint(0, 8)))}
    for i in range(rnd.randint(1, 4)):
        rc = rnd.choice(['G', 'G', 'H'])
        tree['dev%d' % i] = rp(
            'cn', rnd.sample(['OWNER_NOVA', 'X'], rnd.randint(0, 2)),
            **{rc: inv(rnd.randint(0, 4), max_unit=rnd.choice([1, 2, 4]))})
    groups = {'': group({'VCPU': rnd.randint(1, 4),
                         'MEMORY_MB': rnd.randint(0, 2)})}
    if rnd.random() < 0.3:
        groups['']['resources']['G'] = 1
        groups['']['required'] = set(rnd.sample(['X'], rnd.randint(0, 1)))
    for i in range(rnd.randint(0, 3)):
        groups['d%d' % i] = group(
            {rnd.choice(['G', 'H']): rnd.choice([1, 1, 2])},
            required=rnd.sample(['OWNER_NOVA', 'X'], rnd.randint(0, 1)))
    return tree, req(groups, rnd.choice(['isolate', 'none']),
                     root_required=['OWNER_NOVA'])


class _Case:
    """A failure message, formatted only when a test fails."""

    def __init__(self, *case):
        self.case = case

    def __str__(self):
        return 'case %d: tree %r, request %r' % self.case


class TestAgainstBruteForce(base.TestCase):

    def _compare(self, make, seed, cases):
        """fit_count, _general and _fast against brute_force on ``cases``
        random cases, three in four of them ones where something fits."""
        rnd = random.Random(seed)
        fast = positive = 0
        for number in range(cases):
            tree, request = make(rnd)
            expected = brute_force(tree, request)
            while expected == 0 and number % 4:
                tree, request = make(rnd)
                expected = brute_force(tree, request)
            positive += expected > 0
            where = _Case(number, tree, request)
            self.assertEqual(expected, fit.fit_count(tree, request), where)
            problem = fit._prepare(tree, request)
            if problem is None:
                continue
            # both ways of counting, each against the reference
            self.assertEqual(expected, fit._general(problem, 10 ** 6), where)
            found = fit._fast(problem, 10 ** 6)
            if found is not None:
                fast += 1
                self.assertEqual(expected, found, where)
            if expected > 1:
                self.assertEqual(expected - 1,
                                 fit.fit_count(tree, request, expected - 1))
        self.assertGreaterEqual(positive, cases * 3 // 4)
        return fast

    def test_random_small_trees(self):
        fast = self._compare(random_case, 20240611, 2000)
        self.assertGreater(fast, 800)

    def test_random_hosts(self):
        fast = self._compare(random_host, 7, 1000)
        self.assertGreater(fast, 600)


# -- one case per rule -------------------------------------------------------

def host(**children):
    """A root with VCPU 16 and the children given as {name: inventory}."""
    tree = {'cn': rp(traits=['ROOT'], VCPU=inv(16))}
    for name, inventory in children.items():
        tree[name] = rp('cn', **inventory)
    return tree


class TestRules(base.TestCase):

    def test_zero_amount_asks_nothing(self):
        tree = host()
        self.assertEqual(4, fit.fit_count(
            tree, req({'': group({'VCPU': 4, 'MISSING': 0})})))

    def test_resourceless_group_is_refused(self):
        tree = host(g=dict(G=inv(4)))
        tree['g']['traits'] = {'T'}
        request = req({'': group({'VCPU': 1}),
                       '1': group({'G': 0}, required=['T'])})
        self.assertEqual(0, fit.fit_count(tree, request))
        request['groups']['1']['required'] = set()
        self.assertEqual(16, fit.fit_count(tree, request))

    def test_no_resources_at_all_is_refused(self):
        self.assertEqual(0, fit.fit_count(host(), req({'': group({})})))

    def test_required_and_forbidden_trait_is_refused(self):
        tree = {'cn': rp(traits=['T'], VCPU=inv(4))}
        self.assertEqual(0, fit.fit_count(tree, req(
            {'': group({'VCPU': 1}, required=['T'], forbidden=['T'])})))

    def test_numbered_groups_need_a_group_policy(self):
        tree = host(a=dict(G=inv(1)), b=dict(G=inv(1)))
        groups = {'1': group({'G': 1}), '2': group({'G': 1})}
        self.assertEqual(0, fit.fit_count(tree, req(groups)))
        self.assertEqual(1, fit.fit_count(tree, req(groups, 'none')))
        self.assertEqual(2, fit.fit_count(tree, req({'1': group({'G': 1})})))

    def test_root_required_and_forbidden(self):
        tree = host(g=dict(G=inv(1)))
        tree['g']['traits'] = {'CHILD'}
        groups = {'': group({'VCPU': 1})}
        self.assertEqual(16, fit.fit_count(tree, req(groups, None, ['ROOT'])))
        self.assertEqual(0, fit.fit_count(tree, req(groups, None, ['CHILD'])))
        self.assertEqual(0, fit.fit_count(tree, req(groups, None, (),
                                                    ['ROOT'])))
        self.assertEqual(16, fit.fit_count(tree, req(groups, None, (),
                                                     ['CHILD'])))

    def test_min_unit(self):
        tree = {'cn': rp(VCPU=inv(8, min_unit=2))}
        self.assertEqual(0, fit.fit_count(tree, req({'': group({'VCPU': 1})})))
        self.assertEqual(4, fit.fit_count(tree, req({'': group({'VCPU': 2})})))

    def test_max_unit(self):
        tree = {'cn': rp(VCPU=inv(8, max_unit=2))}
        self.assertEqual(0, fit.fit_count(tree, req({'': group({'VCPU': 3})})))
        self.assertEqual(4, fit.fit_count(tree, req({'': group({'VCPU': 2})})))

    def test_step_size(self):
        tree = {'cn': rp(VCPU=inv(8, step=2))}
        self.assertEqual(0, fit.fit_count(tree, req({'': group({'VCPU': 3})})))
        self.assertEqual(2, fit.fit_count(tree, req({'': group({'VCPU': 4})})))

    def test_free_counts_across_copies(self):
        tree = {'cn': rp(VCPU=inv(7), MEMORY_MB=inv(100))}
        request = req({'': group({'VCPU': 2, 'MEMORY_MB': 30})})
        self.assertEqual(3, fit.fit_count(tree, request))
        tree['cn']['inventory']['MEMORY_MB'] = inv(50)
        self.assertEqual(1, fit.fit_count(tree, request))

    def test_numbered_group_takes_one_provider(self):
        tree = host(a=dict(G=inv(2)), b=dict(H=inv(2)))
        request = req({'1': group({'G': 1, 'H': 1})})
        self.assertEqual(0, fit.fit_count(tree, request))
        tree['c'] = rp('cn', G=inv(3), H=inv(2))
        self.assertEqual(2, fit.fit_count(tree, request))

    def test_numbered_group_traits_on_its_own_provider(self):
        tree = host(a=dict(G=inv(2)), b=dict(H=inv(2)))
        tree['b']['traits'] = {'T'}
        self.assertEqual(0, fit.fit_count(
            tree, req({'1': group({'G': 1}, required=['T'])})))
        tree['a']['traits'] = {'T', 'BAD'}
        self.assertEqual(2, fit.fit_count(
            tree, req({'1': group({'G': 1}, required=['T'])})))
        self.assertEqual(0, fit.fit_count(
            tree, req({'1': group({'G': 1}, forbidden=['BAD'])})))

    def test_numbered_group_aggregates_on_its_own_provider(self):
        tree = host(a=dict(G=inv(2)))
        tree['cn']['aggregates'] = {'agg'}
        groups = {'1': group({'G': 1}, member_of=[['agg']])}
        self.assertEqual(0, fit.fit_count(tree, req(groups)))
        tree['a']['aggregates'] = {'agg'}
        self.assertEqual(2, fit.fit_count(tree, req(groups)))
        groups = {'1': group({'G': 1}, forbidden_aggs=['bad'])}
        tree['cn']['aggregates'] = {'bad'}
        self.assertEqual(2, fit.fit_count(tree, req(groups)))
        tree['a']['aggregates'] = {'bad'}
        self.assertEqual(0, fit.fit_count(tree, req(groups)))

    def test_unsuffixed_group_spans_providers(self):
        tree = host(a=dict(G=inv(2)), b=dict(H=inv(3)))
        self.assertEqual(2, fit.fit_count(
            tree, req({'': group({'VCPU': 1, 'G': 1, 'H': 1})})))

    def test_unsuffixed_traits_on_the_providers_used(self):
        tree = host(a=dict(G=inv(2)), b=dict(H=inv(3)))
        tree['b']['traits'] = {'T'}
        # the trait is on b, which gives nothing to the group
        self.assertEqual(0, fit.fit_count(
            tree, req({'': group({'VCPU': 1, 'G': 1}, required=['T'])})))
        # ... and it counts once b gives something
        self.assertEqual(2, fit.fit_count(tree, req(
            {'': group({'VCPU': 1, 'G': 1, 'H': 1}, required=['T'])})))

    def test_unsuffixed_trait_picks_the_provider(self):
        tree = host(a=dict(G=inv(2)), b=dict(G=inv(3)))
        tree['b']['traits'] = {'T'}
        request = req({'': group({'VCPU': 1, 'G': 1})})
        self.assertEqual(5, fit.fit_count(tree, request))
        request['groups']['']['required'] = {'T'}
        self.assertEqual(3, fit.fit_count(tree, request))
        request['groups']['']['required'] = set()
        request['groups']['']['forbidden'] = {'T'}
        self.assertEqual(2, fit.fit_count(tree, request))

    def test_unsuffixed_member_of_root_or_provider(self):
        tree = host(a=dict(G=inv(2)))
        request = req({'': group({'VCPU': 1, 'G': 1}, member_of=[['x']])})
        self.assertEqual(0, fit.fit_count(tree, request))
        tree['cn']['aggregates'] = {'x'}
        self.assertEqual(2, fit.fit_count(tree, request))
        # every set judged on the same provider (it or the root)
        tree['cn']['aggregates'] = {'y'}
        tree['a']['aggregates'] = {'x'}
        request['groups']['']['member_of'] = [['x'], ['y']]
        self.assertEqual(0, fit.fit_count(tree, req(
            {'': group({'G': 1}, member_of=[['x'], ['y']])})))
        tree['a']['aggregates'] = {'x', 'y'}
        self.assertEqual(2, fit.fit_count(tree, req(
            {'': group({'G': 1}, member_of=[['x'], ['y']])})))

    def test_unsuffixed_forbidden_aggregate_on_root_spans_tree(self):
        tree = host(a=dict(G=inv(2)))
        request = req({'': group({'G': 1}, forbidden_aggs=['bad'])})
        self.assertEqual(2, fit.fit_count(tree, request))
        tree['cn']['aggregates'] = {'bad'}
        self.assertEqual(0, fit.fit_count(tree, request))

    def test_in_tree(self):
        tree = host(a=dict(G=inv(2)))
        request = req({'': group({'G': 1}, in_tree='cn')})
        self.assertEqual(2, fit.fit_count(tree, request))
        request['groups']['']['in_tree'] = 'elsewhere'
        self.assertEqual(0, fit.fit_count(tree, request))

    def test_isolate_within_one_copy_only(self):
        # one provider: isolate needs two
        tree = host(a=dict(G=inv(4)))
        groups = {'1': group({'G': 1}), '2': group({'G': 1})}
        self.assertEqual(0, fit.fit_count(tree, req(groups, 'isolate')))
        self.assertEqual(2, fit.fit_count(tree, req(groups, 'none')))
        # copies share providers: 2 copies of (a, b)
        tree = host(a=dict(G=inv(2)), b=dict(G=inv(2)))
        self.assertEqual(2, fit.fit_count(tree, req(groups, 'isolate')))
        # the unsuffixed group is not isolated from the numbered ones
        tree = host(a=dict(G=inv(2)), b=dict(G=inv(2)))
        groups[''] = group({'G': 1})
        self.assertEqual(1, fit.fit_count(tree, req(groups, 'isolate')))

    def test_max_unit_of_one_copy_adds_up(self):
        tree = host(a=dict(G=inv(4, max_unit=1)))
        groups = {'1': group({'G': 1}), '2': group({'G': 1})}
        self.assertEqual(0, fit.fit_count(tree, req(groups, 'none')))
        tree['a']['inventory']['G'] = inv(4, max_unit=2)
        self.assertEqual(2, fit.fit_count(tree, req(groups, 'none')))
        # unsuffixed and numbered amounts of one provider add up too
        tree = host(a=dict(G=inv(4, max_unit=1)))
        self.assertEqual(0, fit.fit_count(tree, req(
            {'': group({'G': 1}), '1': group({'G': 1})})))

    def test_limit(self):
        tree = {'cn': rp(VCPU=inv(100))}
        request = req({'': group({'VCPU': 1})})
        self.assertEqual(100, fit.fit_count(tree, request))
        self.assertEqual(7, fit.fit_count(tree, request, limit=7))
        self.assertEqual(0, fit.fit_count(tree, request, limit=0))

    def test_fit_counts_sums_trees(self):
        trees = [{'n1': rp(VCPU=inv(3))}, {'n2': rp(VCPU=inv(5))},
                 {'n3': rp(VCPU=inv(0))}]
        request = req({'': group({'VCPU': 1})})
        self.assertEqual(8, fit.fit_counts(trees, request))
        self.assertEqual(4, fit.fit_counts(trees, request, limit=4))
        self.assertEqual(0, fit.fit_counts([], request))

    def test_refuses_what_it_does_not_model(self):
        tree = {'cn': rp(VCPU=inv(3))}
        request = req({'': group({'VCPU': 1})})
        request['same_subtree'] = [{'1', '2'}]
        self.assertRaisesRegex(ValueError, 'same_subtree',
                               fit.fit_count, tree, request)
        request = req({'': group({'VCPU': 1}, required_any=[{'A'}])})
        self.assertRaisesRegex(ValueError, 'required_any',
                               fit.fit_count, tree, request)
        request = req({'': group({'VCPU': 1})})
        request['anchor'] = 'x'
        self.assertRaisesRegex(ValueError, 'anchor',
                               fit.fit_count, tree, request)

    def test_refuses_a_tree_without_one_root(self):
        request = req({'': group({'VCPU': 1})})
        self.assertRaisesRegex(
            ValueError, 'one root', fit.fit_count,
            {'a': rp(VCPU=inv(1)), 'b': rp(VCPU=inv(1))}, request)
        self.assertRaisesRegex(
            ValueError, 'not in the tree', fit.fit_count,
            {'a': rp(VCPU=inv(1)), 'b': rp('x', VCPU=inv(1))}, request)


# -- realistic hosts, answers by hand ----------------------------------------

SETTINGS = nova_conf.load_settings(alias_maps=['h100=10de:2331'])
ROOT_TRAITS = ['OWNER_NOVA', 'COMPUTE_NODE']


def flavor(vcpus, ram, disk, **extra_specs):
    return {'vcpus': vcpus, 'ram': ram, 'disk': disk,
            'extra_specs': extra_specs}


def build(flavor):
    return request_mod.build(flavor, settings=SETTINGS)


def passthrough_host():
    """64 VCPU, 256 GiB, 1000 GB; four H100s as PCI providers, one in use."""
    tree = {'cn': rp(traits=ROOT_TRAITS, VCPU=inv(64, max_unit=64),
                     MEMORY_MB=inv(262144), DISK_GB=inv(1000))}
    for i in range(4):
        tree['pci%d' % i] = rp('cn', ['OWNER_NOVA', 'COMPUTE_MANAGED_PCI'],
                               **{PCI: inv(0 if i == 0 else 1, max_unit=1)})
    return tree


def vgpu_host(free0, free1):
    """Two pGPUs of 4 vGPUs each (max_unit 4), free0/free1 free."""
    tree = {'cn': rp(traits=ROOT_TRAITS, VCPU=inv(128),
                     MEMORY_MB=inv(512000), DISK_GB=inv(4000))}
    tree['pgpu0'] = rp('cn', ['CUSTOM_NVIDIA_A40_8Q'],
                       VGPU=inv(free0, max_unit=4))
    tree['pgpu1'] = rp('cn', ['CUSTOM_NVIDIA_A40_8Q'],
                       VGPU=inv(free1, max_unit=4))
    return tree


def mig_host():
    """One A100 split in MIG VFs: three 1g.10gb, two 3g.40gb (one used);
    40 GiB of RAM left on the host."""
    tree = {'cn': rp(traits=ROOT_TRAITS, VCPU=inv(64),
                     MEMORY_MB=inv(40960), DISK_GB=inv(1000))}
    for i in range(3):
        tree['small%d' % i] = rp('cn', ['CUSTOM_MIG_1G_10GB'],
                                 VGPU=inv(1, max_unit=1))
    tree['big0'] = rp('cn', ['CUSTOM_MIG_3G_40GB'], VGPU=inv(1, max_unit=1))
    tree['big1'] = rp('cn', ['CUSTOM_MIG_3G_40GB'], VGPU=inv(0, max_unit=1))
    return tree


def ironic_node(free):
    return {'node': rp(traits=ROOT_TRAITS,
                       CUSTOM_BAREMETAL_GPU=inv(free, max_unit=1))}


class TestRealisticHosts(base.TestCase):

    def test_passthrough_one_gpu(self):
        # 3 free H100s; VCPU 64/8 = 8, RAM 262144/32768 = 8, DISK 1000/100
        # = 10: the GPUs decide, 3
        request = build(flavor(8, 32768, 100,
                               **{'pci_passthrough:alias': 'h100:1'}))
        self.assertEqual(3, fit.fit_count(passthrough_host(), request))

    def test_passthrough_two_gpus(self):
        # two groups of one H100 each, group_policy=none (Nova's default for
        # PCI groups) but max_unit 1 keeps them on different devices: 3 free
        # devices give 1 instance
        request = build(flavor(8, 32768, 100,
                               **{'pci_passthrough:alias': 'h100:2'}))
        self.assertEqual('none', request['group_policy'])
        self.assertEqual(1, fit.fit_count(passthrough_host(), request))
        # without OWNER_NOVA on the devices Nova cannot claim them: 0
        tree = passthrough_host()
        for i in range(4):
            tree['pci%d' % i]['traits'].discard('OWNER_NOVA')
        self.assertEqual(0, fit.fit_count(tree, request))

    def test_vgpu_two_with_isolate(self):
        # pGPU0 has 1 free vGPU, pGPU1 3: each instance takes one from each
        # pGPU (isolate), so 1; with group_policy=none two vGPUs may come
        # from one pGPU: (1 + 3) / 2 = 2
        specs = {'resources1:VGPU': '1', 'resources2:VGPU': '1',
                 'trait1:CUSTOM_NVIDIA_A40_8Q': 'required',
                 'trait2:CUSTOM_NVIDIA_A40_8Q': 'required'}
        tree = vgpu_host(1, 3)
        self.assertEqual(1, fit.fit_count(tree, build(flavor(
            8, 16384, 40, group_policy='isolate', **specs))))
        self.assertEqual(2, fit.fit_count(tree, build(flavor(
            8, 16384, 40, group_policy='none', **specs))))
        # one vGPU each (unsuffixed, the way older flavors ask): 1 + 3 = 4
        self.assertEqual(4, fit.fit_count(tree, build(flavor(
            8, 16384, 40, **{'resources:VGPU': '1'}))))

    def test_mig_profiles(self):
        # small profile: 3 VFs free, but RAM 40960/16384 = 2 instances
        small = build(flavor(4, 16384, 20, **{
            'resources:VGPU': '1', 'trait:CUSTOM_MIG_1G_10GB': 'required'}))
        self.assertEqual(2, fit.fit_count(mig_host(), small))
        # big profile: one of the two 3g VFs is used, 1
        big = build(flavor(4, 8192, 20, **{
            'resources:VGPU': '1', 'trait:CUSTOM_MIG_3G_40GB': 'required'}))
        self.assertEqual(1, fit.fit_count(mig_host(), big))
        # a profile the host does not have, 0
        none = build(flavor(4, 8192, 20, **{
            'resources:VGPU': '1', 'trait:CUSTOM_MIG_7G_80GB': 'required'}))
        self.assertEqual(0, fit.fit_count(mig_host(), none))

    def test_ironic_node(self):
        # the node is its own tree: one instance while it is free
        request = build(flavor(0, 0, 0, **{
            'resources:CUSTOM_BAREMETAL_GPU': '1', 'resources:VCPU': '0',
            'resources:MEMORY_MB': '0', 'resources:DISK_GB': '0'}))
        self.assertEqual(1, fit.fit_count(ironic_node(1), request))
        self.assertEqual(0, fit.fit_count(ironic_node(0), request))
        self.assertEqual(2, fit.fit_counts([ironic_node(1), ironic_node(0),
                                            ironic_node(1)], request))


class TestOneAllocation(base.TestCase):
    """one_allocation and consume: placing servers one by one (counted
    with fit_count, which TestAgainstBruteForce checks)."""

    def _check(self, make, seed, cases):
        rnd = random.Random(seed)
        placed = 0
        for number in range(cases):
            tree, request = make(rnd)
            expected = fit.fit_count(tree, request)
            while expected == 0 and number % 4:
                tree, request = make(rnd)
                expected = fit.fit_count(tree, request)
            where = _Case(number, tree, request)
            allocation = fit.one_allocation(tree, request)
            if not expected:
                self.assertIsNone(allocation, where)
                continue
            placed += 1
            self.assertIsNotNone(allocation, where)
            left = fit.consume(tree, allocation)
            # some optimal packing holds this copy: the rest still fit
            # (fit_count is checked against brute_force above)
            self.assertEqual(expected - 1, fit.fit_count(left, request),
                             where)
            # and only what was taken changed
            for uuid, provider in tree.items():
                for rc, item in provider['inventory'].items():
                    taken = allocation.get(uuid, {}).get(rc, 0)
                    self.assertEqual(item['free'] - taken,
                                     left[uuid]['inventory'][rc]['free'])
        self.assertGreaterEqual(placed, cases * 3 // 4)

    def test_random_small_trees(self):
        self._check(random_case, 42, 400)

    def test_random_hosts(self):
        self._check(random_host, 43, 400)

    def test_deterministic_and_keeps_the_most_room(self):
        tree = host(g0={'G': inv(1)}, g1={'G': inv(2)})
        request = req({'': group({'VCPU': 1}), '1': group({'G': 1})})
        allocation = fit.one_allocation(tree, request)
        self.assertEqual(allocation, fit.one_allocation(tree, request))
        self.assertEqual({'cn': {'VCPU': 1}, 'g0': {'G': 1}}, allocation)
        self.assertEqual(2, fit.fit_count(fit.consume(tree, allocation),
                                          request))

    def test_nothing_fits(self):
        tree = host(g0={'G': inv(0)})
        request = req({'1': group({'G': 1})})
        self.assertIsNone(fit.one_allocation(tree, request))

    def test_consume_refuses_what_is_not_there(self):
        tree = host(g0={'G': inv(1)})
        self.assertRaises(ValueError, fit.consume, tree, {'g0': {'G': 2}})
        self.assertRaises(ValueError, fit.consume, tree, {'g0': {'H': 1}})
        self.assertRaises(ValueError, fit.consume, tree, {'gx': {'G': 1}})
        self.assertEqual({'free': 1, 'min_unit': 1, 'max_unit': 1,
                          'step_size': 1}, tree['g0']['inventory']['G'])
