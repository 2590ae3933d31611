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

"""Pure: how many more copies of one server's request fit into a tree.

``fit_count(tree, request)`` is the largest k such that k servers, each
asking Placement for ``request`` (as ``resource_request.build`` makes it),
can hold allocations in one resource-provider tree at the same time.
``fit_counts(trees, request)`` sums it over the trees of one host. No I/O.

A tree is ``{uuid: {'parent': uuid | None, 'traits': set,
'aggregates': set, 'inventory': {rc: {'free', 'min_unit', 'max_unit',
'step_size'}}}}`` with exactly one root; ``free`` is capacity minus used,
capacity being ``(total - reserved) * allocation_ratio`` as Placement
computes it.

The rules, as Placement applies them at microversion 1.36 (the one Nova 34
sends; ``placement/lib.py``, ``handlers/allocation_candidate.py``,
``objects/allocation_candidate.py``, ``objects/research_context.py``,
``objects/allocation.py``):

1. Amounts of zero ask nothing (Nova strips them). A group left without
   resources but with traits, aggregates or ``in_tree`` is refused at 1.36
   unless named in ``same_subtree`` (``_check_resourceless_suffix``); a
   request with no resources at all, or two or more numbered groups
   without ``group_policy`` are refused too. A refused query fits nothing:
   0. (A group that both requires and forbids one trait is refused as well,
   ``_check_forbidden``; rules 4 and 5 find no provider for it anyway.)
2. The root must have every ``root_required`` trait and no
   ``root_forbidden`` one (the anchor filter, ``_get_roots_with_traits``).
3. Each single amount asked of a provider needs an inventory of that class
   with ``min_unit <= amount <= max_unit``, ``amount % step_size == 0`` and
   ``amount <= free`` (``_capacity_check_clause``).
4. A numbered group (``use_same_provider``) takes all its resources from
   ONE provider that has all its required traits, none of its forbidden
   ones, is itself in one aggregate of each ``member_of`` set and itself in
   no forbidden aggregate (``get_provider_ids_matching``).
5. The unsuffixed group takes each of its resource classes from one
   provider of the tree (classes may come from different providers,
   ``get_trees_matching_all``): a provider may give a class if it has none
   of the group's forbidden traits, if it or the root is in one aggregate
   of each ``member_of`` set (the same one of the two for every set,
   ``filter_by_rp_or_tree``), and if neither it nor the root is in a
   forbidden aggregate (``filter_by_rp_nor_tree``). Its required traits
   are judged on the providers chosen together: their traits joined must
   include every one (``_check_traits_for_alloc_request``); traits of
   providers that give nothing to the group do not count.
6. ``in_tree`` limits a group to the tree of the provider it names: a
   provider of this tree changes nothing, any other fits nothing here.
7. ``group_policy=isolate``: the numbered groups of one copy use distinct
   providers; the unsuffixed group does not count (``_satisfies_group_
   policy``). Different copies may share providers.
8. Within one copy, amounts of the same class from the same provider add
   up, and the sum must still be at most ``max_unit``
   (``exceeds_capacity``; sums of allowed amounts keep ``min_unit`` and
   ``step_size``).
9. All copies together must not exceed any provider's ``free``.

Not modelled: sharing providers (one tree is all there is), ``same_subtree``
and any field ``request.build`` does not produce (refused with
ValueError), and Placement's candidate limits (``limit``,
``max_allocation_candidates``), which cap the answers, not what fits.

How: ``_fast`` answers the usual shapes exactly with a counting argument;
anything else goes to ``_general``, an exact search. The fast path groups
numbered groups into types (same resources, same eligible providers). When
every provider serves at most one resource vector of numbered groups and
the unsuffixed group's classes use other (provider, class) pairs, k copies
fit iff for every set S of types (Hall's condition, one provider with
``c`` copies of the vector free taking at most ``u`` groups per copy:
``u`` = 1 with isolate, ``max_unit // amount`` otherwise)::

    sum of min(c_p, k * u_p) over providers p eligible for S
        >= k * (number of groups in S)

(a transportation problem; its integral solution splits into k copies by
König's edge-colouring theorem), and the unsuffixed classes fit k times.
Each left side is concave in k, so the largest k per S is found by
bisection. ``_general`` lists every distinct usage one copy can make
(identical groups taken in provider order), drops usages that use at least
as much as another, and finds the most copies by branch and bound; its
cost grows with the number of such usages (tens of milliseconds when an
unsuffixed class and four numbered groups share eight pGPUs), which the
usual flavors never reach.
"""

from collections.abc import Collection
from collections.abc import Iterable
from collections.abc import Mapping
import sys
import typing

# request fields that say nothing Placement is asked (the aggregates behind
# them are already in member_of / forbidden_aggregates)
_INFO_FIELDS = frozenset((
    'groups', 'group_policy', 'root_required', 'root_forbidden', 'limit',
    'isolated', 'tenant_aggregates', 'zone_aggregates', 'zone', 'project_id',
    'notes', 'not_covered'))
_GROUP_FIELDS = frozenset((
    'resources', 'required', 'forbidden', 'member_of', 'forbidden_aggregates',
    'in_tree', 'origin', 'gpu', 'pci_alias'))
# beyond this many kinds of numbered groups sharing providers, _general
_MAX_HALL_TYPES = 12
_UNBOUNDED = sys.maxsize


# the most copies of one request counted on one tree (gpu capacity list)
FIT_LIMIT = 10000


def signature(tree: Mapping[str, Mapping[str, typing.Any]]
              ) -> tuple[tuple[typing.Any, ...], ...]:
    """Equal for trees that any request fits into equally often: the key
    under which a count is kept for trees of the same shape."""
    depth: dict[str, int] = {}

    def level(uuid: str) -> int:
        if uuid not in depth:
            parent = tree[uuid]['parent']
            depth[uuid] = 0 if parent is None else level(parent) + 1
        return depth[uuid]

    entries = []
    for uuid, rp in tree.items():
        entries.append((
            level(uuid), tuple(sorted(rp['traits'])),
            tuple(sorted(rp['aggregates'])),
            tuple(sorted((rc, tuple(sorted(inv.items())))
                         for rc, inv in rp['inventory'].items()))))
    return tuple(sorted(entries))


def fit_count(tree: Mapping[str, Mapping[str, typing.Any]],
              request: Mapping[str, typing.Any],
              limit: int | None = None) -> int:
    """How many more copies of one server's request fit into one provider
    tree, exactly.

    ``tree`` and the rules: see the module docstring. ``request`` as
    ``resource_request.build`` returns it. ``limit``: stop counting at this
    many. Raises ValueError for a malformed tree or a request field
    this module does not understand (naming it).
    """
    cap = _UNBOUNDED if limit is None else int(limit)
    problem = _prepare(tree, request)
    if problem is None or cap <= 0:
        return 0
    found = _fast(problem, cap)
    if found is None:
        found = _general(problem, cap)
    return min(found, cap)


def fit_counts(trees: Iterable[Mapping[str, Mapping[str, typing.Any]]],
               request: Mapping[str, typing.Any],
               limit: int | None = None) -> int:
    """fit_count summed over several trees (one host's), up to ``limit``."""
    total = 0
    for tree in trees:
        left = None if limit is None else limit - total
        if left is not None and left <= 0:
            break
        total += fit_count(tree, request, left)
    return total


# -- preparing ---------------------------------------------------------------

class _Problem:
    """The request against one tree, in indices.

    ``numbered``: [(resources, eligible providers)]; ``unsuffixed``:
    {rc: (amount, eligible providers)}; ``required``: the unsuffixed
    group's required traits (judged across its providers).
    """

    def __init__(self, tree: Mapping[str, Mapping[str, typing.Any]],
                 uuids: list[str], isolate: bool) -> None:
        self.tree = tree
        self.uuids = uuids
        self.isolate = isolate
        self.numbered: list[tuple[dict[str, int], tuple[int, ...]]] = []
        self.unsuffixed: dict[str, tuple[int, tuple[int, ...]]] = {}
        self.required: frozenset[str] = frozenset()

    def inv(self, p: int, rc: str) -> dict[str, int]:
        return self.tree[self.uuids[p]]['inventory'][rc]

    def traits(self, p: int) -> Collection[str]:
        return self.tree[self.uuids[p]].get('traits') or ()


def _check_fields(request):
    if request.get('same_subtree'):
        raise ValueError('fit_count: the request has same_subtree, which '
                         'gpuclient.rules.scheduler.fit does not model.')
    unknown = sorted(set(request) - _INFO_FIELDS - {'same_subtree'})
    if unknown:
        raise ValueError('fit_count: unknown request field(s) %s.'
                         % ', '.join(unknown))
    for suffix, group in request['groups'].items():
        unknown = sorted(set(group) - _GROUP_FIELDS)
        if unknown:
            raise ValueError('fit_count: unknown field(s) %s in request '
                             'group %r.' % (', '.join(unknown), suffix))


def _root(tree):
    roots = [u for u, rp in tree.items() if rp.get('parent') is None]
    if len(roots) != 1:
        raise ValueError('fit_count: a tree has exactly one root provider '
                         '(parent None); this one has %d.' % len(roots))
    for uuid, rp in tree.items():
        if rp.get('parent') is not None and rp['parent'] not in tree:
            raise ValueError('fit_count: provider %s has parent %s, which is '
                             'not in the tree.' % (uuid, rp['parent']))
    return roots[0]


def _unit_ok(inv, amount):
    """Rule 3 for one amount asked of one inventory (None: no inventory)."""
    if inv is None:
        return False
    step = inv.get('step_size') or 1
    return (inv.get('min_unit', 1) <= amount <= inv.get('max_unit', amount)
            and amount % step == 0 and amount <= inv.get('free', 0))


def _in_aggregates(aggregates, member_of):
    return all(aggregates & set(any_of) for any_of in member_of)


def _prepare(tree, request):
    """A _Problem, or None when nothing can fit (rules 1, 2, 6)."""
    _check_fields(request)
    root = _root(tree)
    root_traits = tree[root].get('traits') or set()
    if not set(request.get('root_required') or ()) <= set(root_traits):
        return None
    if set(request.get('root_forbidden') or ()) & set(root_traits):
        return None
    groups = {}
    for suffix, group in request['groups'].items():
        resources = {rc: int(n) for rc, n in group['resources'].items() if n}
        required = set(group.get('required') or ())
        forbidden = set(group.get('forbidden') or ())
        member_of = [set(m) for m in group.get('member_of') or ()]
        forbidden_aggs = set(group.get('forbidden_aggregates') or ())
        in_tree = group.get('in_tree')
        if not resources:
            if required or forbidden or member_of or forbidden_aggs or (
                    in_tree):
                return None
            continue
        if in_tree and in_tree not in tree:
            return None
        groups[suffix] = (resources, required, forbidden, member_of,
                          forbidden_aggs)
    numbered = sorted(s for s in groups if s)
    policy = request.get('group_policy')
    if not groups or (len(numbered) >= 2
                      and policy not in ('none', 'isolate')):
        return None
    uuids = sorted(tree, key=lambda u: (u != root, u))
    problem = _Problem(tree, uuids, policy == 'isolate')
    root_aggs = set(tree[root].get('aggregates') or ())
    infos = [(tree[u].get('inventory') or {},
              set(tree[u].get('traits') or ()),
              set(tree[u].get('aggregates') or ())) for u in uuids]
    for suffix in numbered:
        resources, required, forbidden, member_of, forbidden_aggs = (
            groups[suffix])
        eligible = tuple(
            p for p, (inventory, traits, aggs) in enumerate(infos)
            if required <= traits and not forbidden & traits
            and _in_aggregates(aggs, member_of)
            and not aggs & forbidden_aggs
            and all(_unit_ok(inventory.get(rc), n)
                    for rc, n in resources.items()))
        if not eligible:
            return None
        problem.numbered.append((resources, eligible))
    if '' in groups:
        resources, required, forbidden, member_of, forbidden_aggs = (
            groups[''])
        root_in = _in_aggregates(root_aggs, member_of)
        for rc, n in resources.items():
            eligible = tuple(
                p for p, (inventory, traits, aggs) in enumerate(infos)
                if not forbidden & traits
                and (root_in or _in_aggregates(aggs, member_of))
                and not (aggs | root_aggs) & forbidden_aggs
                and _unit_ok(inventory.get(rc), n))
            if not eligible:
                return None
            problem.unsuffixed[rc] = (n, eligible)
        problem.required = frozenset(required)
        joined = set()
        for _n, eligible in problem.unsuffixed.values():
            for p in eligible:
                joined |= infos[p][1]
        if not required <= joined:
            return None
    return problem


# -- the fast path -----------------------------------------------------------

def _largest(hi, test):
    """The largest k in [0, hi] with test(k), test true up to it."""
    low = 0
    while low < hi:
        mid = (low + hi + 1) // 2
        if test(mid):
            low = mid
        else:
            hi = mid - 1
    return low


def _fast(problem, cap):
    """The exact count for the usual shapes, or None (see the docstring)."""
    bound = cap
    # the unsuffixed classes: a fixed provider, or free ones whose required
    # traits the fixed ones already carry (or one free class)
    unsuffixed = dict(problem.unsuffixed)
    fixed_traits = set()
    for _n, eligible in unsuffixed.values():
        if len(eligible) == 1:
            fixed_traits |= set(problem.traits(eligible[0]))
    missing = problem.required - fixed_traits
    if missing:
        free_classes = [rc for rc, (_n, e) in unsuffixed.items()
                        if len(e) > 1]
        if len(free_classes) != 1:
            return None
        rc = free_classes[0]
        n, eligible = unsuffixed[rc]
        eligible = tuple(p for p in eligible
                         if missing <= set(problem.traits(p)))
        if not eligible:
            return 0
        unsuffixed[rc] = (n, eligible)
    taken = set()
    for rc, (n, eligible) in unsuffixed.items():
        bound = min(bound, sum(problem.inv(p, rc)['free'] // n
                               for p in eligible))
        taken.update((p, rc) for p in eligible)
    # numbered groups: one resource vector per provider, apart from the
    # unsuffixed group's (provider, class) pairs
    types = {}
    vector_at = {}
    for resources, eligible in problem.numbered:
        vector = tuple(sorted(resources.items()))
        types[(vector, eligible)] = types.get((vector, eligible), 0) + 1
        for p in eligible:
            if vector_at.setdefault(p, vector) != vector:
                return None
            if any((p, rc) in taken for rc in resources):
                return None
    if not types or bound == 0:
        return bound
    copies, per_copy = {}, {}
    for p, vector in vector_at.items():
        copies[p] = min(problem.inv(p, rc)['free'] // n for rc, n in vector)
        per_copy[p] = 1 if problem.isolate else min(
            problem.inv(p, rc)['max_unit'] // n for rc, n in vector)
    type_list = [(set(eligible), count)
                 for (_vector, eligible), count in types.items()]
    for component in _components(type_list):
        if len(component) > _MAX_HALL_TYPES:
            return None
        for mask in range(1, 1 << len(component)):
            providers, groups = set(), 0
            for i, (eligible, count) in enumerate(component):
                if mask >> i & 1:
                    providers |= eligible
                    groups += count
            caps = [(copies[p], per_copy[p]) for p in providers]
            hi = min(bound, sum(c for c, _u in caps) // groups)
            bound = _largest(hi, lambda k, caps=caps, groups=groups: sum(
                min(c, k * u) for c, u in caps) >= k * groups)
            if bound == 0:
                return 0
    return bound


def _components(type_list):
    """Types split into sets that share no provider."""
    left = list(type_list)
    found = []
    while left:
        component = [left.pop()]
        providers = set(component[0][0])
        grew = True
        while grew:
            grew = False
            for item in list(left):
                if item[0] & providers:
                    left.remove(item)
                    component.append(item)
                    providers |= item[0]
                    grew = True
        found.append(component)
    return found


# -- the general path --------------------------------------------------------

def _copy_patterns(problem):
    """Every distinct usage of one copy: {(p, rc): amount} as sorted tuples.

    Identical numbered groups take providers in increasing order (they are
    interchangeable), which keeps the search small.
    """
    slots = []
    for resources, eligible in sorted(
            problem.numbered, key=lambda g: (sorted(g[0].items()), g[1])):
        slots.append(('n', resources, eligible))
    for rc, (n, eligible) in sorted(problem.unsuffixed.items()):
        slots.append(('u', {rc: n}, eligible))
    found = set()
    usage = {}
    used_by_numbered = set()
    chosen = [None] * len(slots)

    def limit_of(p, rc):
        inv = problem.inv(p, rc)
        return min(inv['free'], inv['max_unit'])

    def walk(i):
        if i == len(slots):
            if problem.required:
                joined = set()
                for (kind, _res, _e), p in zip(slots, chosen, strict=True):
                    if kind == 'u':
                        joined |= set(problem.traits(p))
                if not problem.required <= joined:
                    return
            found.add(tuple(sorted((k, v) for k, v in usage.items() if v)))
            return
        kind, resources, eligible = slots[i]
        same_as_last = i > 0 and slots[i - 1] == slots[i]
        for p in eligible:
            if same_as_last and (p < chosen[i - 1] or (
                    problem.isolate and p == chosen[i - 1])):
                continue
            if kind == 'n' and problem.isolate and p in used_by_numbered:
                continue
            if any(usage.get((p, rc), 0) + n > limit_of(p, rc)
                   for rc, n in resources.items()):
                continue
            for rc, n in resources.items():
                usage[(p, rc)] = usage.get((p, rc), 0) + n
            isolated = kind == 'n' and problem.isolate
            if isolated:
                used_by_numbered.add(p)
            chosen[i] = p
            walk(i + 1)
            if isolated:
                used_by_numbered.discard(p)
            for rc, n in resources.items():
                usage[(p, rc)] -= n
        chosen[i] = None

    walk(0)
    return found


def _general(problem, cap):
    """Exact: the most copies (each one of the patterns) within ``free``."""
    patterns = _copy_patterns(problem)
    if not patterns:
        return 0
    keys = sorted({key for pattern in patterns for key, _n in pattern})
    index = {key: i for i, key in enumerate(keys)}
    vectors = set()
    for pattern in patterns:
        vector = [0] * len(keys)
        for key, n in pattern:
            vector[index[key]] = n
        vectors.add(tuple(vector))
    # a pattern using at least as much as another of everything never helps
    vectors = sorted(vectors, key=sum)
    kept = []
    for vector in vectors:
        if not any(all(a <= b for a, b in zip(small, vector, strict=True))
                   for small in kept):
            kept.append(vector)
    free = tuple(problem.inv(p, rc)['free'] for p, rc in keys)
    # bounds: what every pattern uses at least, of one (provider, class)
    # and of one class over the tree
    bounds = []
    for i in range(len(keys)):
        least = min(v[i] for v in kept)
        if least:
            bounds.append(((i,), least))
    for rc in sorted({rc for _p, rc in keys}):
        where = tuple(i for i, (_p, other) in enumerate(keys) if other == rc)
        least = min(sum(v[i] for i in where) for v in kept)
        if least and len(where) > 1:
            bounds.append((where, least))
    memo = {}

    def upper(left):
        return min((sum(left[i] for i in where) // least
                    for where, least in bounds), default=cap)

    def most(left, j, want):
        """The most copies of kept[j:] that fit in ``left`` (up to want)."""
        if j == len(kept) or want <= 0:
            return 0
        known = memo.get((left, j))
        if known is not None:
            return min(known, want)
        vector = kept[j]
        result = 0
        pairs = tuple(zip(vector, left, strict=True))
        top = min([want] + [room // n for n, room in pairs if n])
        for count in range(top, -1, -1):
            rest = tuple(room - count * n for n, room in pairs)
            if count + min(upper(rest), want - count) <= result:
                continue
            result = max(result, count + most(rest, j + 1, want - count))
            if result >= want:
                break
        if result < want:
            memo[(left, j)] = result
        return result

    return most(free, 0, min(cap, upper(free)))


# -- one concrete allocation -------------------------------------------------

def one_allocation(tree: Mapping[str, Mapping[str, typing.Any]],
                   request: Mapping[str, typing.Any],
                   keep_limit: int = 64) -> dict[str, dict[str, int]] | None:
    """One allocation of ONE copy of ``request`` in ``tree``, or None.

    ``{provider uuid: {rc: amount}}``, chosen deterministically among
    every distinct usage one copy can make (the same rules as
    ``fit_count``): the one after which most further copies of the same
    request still fit (counted up to ``keep_limit``), then the first in
    provider-uuid order. A planner that places several servers in turn
    subtracts it from the tree (``consume``), so two servers never count
    on the same free unit. Which providers Placement itself would pick is
    not known ahead; this choice only keeps the count exact for the copy
    placed.
    """
    problem = _prepare(tree, request)
    if problem is None:
        return None
    patterns = _copy_patterns(problem)
    if not patterns:
        return None
    best, best_key = None, None
    for pattern in patterns:
        allocation: dict[str, dict[str, int]] = {}
        for (p, rc), amount in pattern:
            allocation.setdefault(problem.uuids[p], {})[rc] = amount
        left = fit_count(consume(tree, allocation), request,
                         limit=keep_limit)
        order = tuple(sorted((uuid, tuple(sorted(res.items())))
                             for uuid, res in allocation.items()))
        key = (-left, order)
        if best_key is None or key < best_key:
            best, best_key = allocation, key
    return best


def consume(tree: Mapping[str, Mapping[str, typing.Any]],
            allocation: Mapping[str, Mapping[str, int]]
            ) -> dict[str, dict[str, typing.Any]]:
    """A copy of ``tree`` with ``allocation`` ({uuid: {rc: amount}})
    taken from the providers' ``free``; ValueError when it does not fit."""
    new = {}
    for uuid, rp in tree.items():
        taken = allocation.get(uuid) or {}
        inventory = {}
        for rc, inv in (rp.get('inventory') or {}).items():
            amount = taken.get(rc, 0)
            if amount > inv.get('free', 0):
                raise ValueError('consume: %s has %d %s free, %d taken.'
                                 % (uuid, inv.get('free', 0), rc, amount))
            inventory[rc] = dict(inv, free=inv.get('free', 0) - amount)
        for rc in set(taken) - set(inventory):
            if taken[rc]:
                raise ValueError('consume: %s has no %s inventory.'
                                 % (uuid, rc))
        new[uuid] = dict(rp, inventory=inventory)
    for uuid in set(allocation) - set(tree):
        raise ValueError('consume: provider %s is not in the tree.' % uuid)
    return new
