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

"""Pure: what Placement's answer means per host, and why hosts are out.

The filters Nova runs after Placement are in
gpuclient.rules.scheduler.filters (``filters.run``); this module reads
Placement's answers:

* ``candidate_rows``: one row per host from a ``GET /allocation_candidates``
  answer (microversion >= 1.34: ``mappings``; provider summaries of whole
  trees).
* ``requirements``: the parts of a request that can be dropped one at a
  time (bounded), each with its relaxed request; ``why_not``: which
  requirement eliminated which host, in operator terms, from the answers
  to those relaxed queries and the provider summaries they carry.
"""

from collections.abc import Collection
from collections.abc import Container
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
import typing

from gpuclient.i18n import _
from gpuclient.rules import baremetal
from gpuclient.rules import host_names
from gpuclient.rules.scheduler import filters
from gpuclient.rules.scheduler import request_filter
from gpuclient.rules.scheduler import resource_request as request_mod

MAX_RELAXED = 8  # relaxed queries at most
MAX_DETAIL_HOSTS = 4  # hosts whose trees may be read provider by provider
MAX_ALLOCATION_READS = 16  # providers whose allocations may be read
MAX_SERVERS_SHOWN = 8


# -- hosts and trees ----------------------------------------------------------

class Trees:
    """Provider summaries gathered from every answer (and slow reads)."""

    def __init__(self) -> None:
        # uuid -> summary + name, parent, root
        self.providers: dict[str, dict[str, typing.Any]] = {}
        # roots of Ironic nodes (baremetal.node_roots of the hypervisors)
        self.node_roots: set[str] = set()
        # {node uuid: baremetal.node_dict} when Ironic was read, else None
        self.ironic_nodes: dict[str, dict[str, typing.Any]] | None = None

    def add_answer(self, answer: Mapping[str, typing.Any] | None) -> None:
        for uuid, summary in ((answer or {}).get('provider_summaries')
                              or {}).items():
            self.add(uuid, summary)

    def add(self, uuid: str, summary: Mapping[str, typing.Any],
            name: str | None = None) -> None:
        entry = self.providers.setdefault(uuid, {'name': name or uuid})
        if name:
            entry['name'] = name
        entry['resources'] = dict(summary.get('resources') or {})
        entry['traits'] = set(summary.get('traits') or ())
        entry['parent'] = summary.get('parent_provider_uuid')
        entry['root'] = summary.get('root_provider_uuid') or uuid

    def name_providers(
            self, providers: Iterable[Mapping[str, typing.Any]]) -> None:
        for rp in providers:
            if rp['uuid'] in self.providers:
                self.providers[rp['uuid']]['name'] = rp.get('name') or (
                    rp['uuid'])

    def known_roots(self) -> set[str]:
        return {p['root'] for p in self.providers.values()}

    def tree(self, root: str) -> dict[str, dict[str, typing.Any]]:
        return {u: p for u, p in self.providers.items() if p['root'] == root}

    def name(self, uuid: str) -> str:
        return self.providers.get(uuid, {}).get('name', uuid)

    def free(self, uuid: str, rc: str) -> int:
        item = self.providers.get(uuid, {}).get('resources', {}).get(rc)
        if not item:
            return 0
        return item['capacity'] - item['used']

    def is_node(self, uuid: str, rc: str) -> bool:
        """Is class RC of provider UUID a bare-metal node?"""
        provider = self.providers.get(uuid) or {}
        item = (provider.get('resources') or {}).get(rc)
        return bool(item) and baremetal.is_node_item(
            rc, item, provider.get('root', uuid) in self.node_roots)

    def node(self, uuid: str) -> dict[str, typing.Any] | None:
        """Ironic's view of a node (dict), when Ironic was read."""
        return (self.ironic_nodes or {}).get(uuid)


def _gpu_traits(group: Mapping[str, typing.Any],
                root_traits: Container[str]) -> set[str]:
    """Traits a GPU provider itself must have for ``group``."""
    return {t for t in group['required']
            if t not in root_traits and t != request_filter.OWNER_NOVA}


def gpu_devices(trees: Trees, root: str, rc: str,
                traits: Iterable[str] = ()) -> list[tuple[str, int, int]]:
    """[(uuid, capacity, used)] of providers in a tree offering ``rc``.

    A bare-metal node counts capacity 1 whatever the ironic driver
    reserved (``baremetal.node_figures``): capacity - used is never < 0.
    """
    found = []
    for uuid, provider in sorted(trees.tree(root).items()):
        item = provider['resources'].get(rc)
        if item and set(traits) <= provider['traits']:
            if trees.is_node(uuid, rc):
                _total, used, free = baremetal.node_figures(item)
                # an unavailable node has no capacity (and nothing used)
                found.append((uuid, used + free, used))
                continue
            found.append((uuid, item['capacity'], item['used']))
    return found


def node_reasons(host: str, roots: Iterable[str], trees: Trees,
                 allocations: Mapping[str, Iterable[str]],
                 classes: Iterable[str]) -> list[str]:
    """Why each bare-metal node of ROOTS (of CLASSES) takes no server."""
    texts = []
    for root in sorted(roots):
        for uuid, provider in sorted(trees.tree(root).items()):
            for rc in sorted(classes):
                if rc not in provider['resources'] or not trees.is_node(
                        uuid, rc):
                    continue
                text = baremetal.node_reason(
                    host, uuid, provider['resources'][rc], trees.node(uuid),
                    _servers(allocations, [uuid])[:MAX_SERVERS_SHOWN])
                if text:
                    texts.append(text)
    return texts


def crowded_hosts(rows: Iterable[Mapping[str, typing.Any]], count: int,
                  limit: int | None) -> list[tuple[str, int]]:
    """When an allocation-candidates answer of COUNT candidates may have
    hidden hosts behind the query's LIMIT: [(host, candidates)] of the
    hosts (ROWS: ``candidate_rows``) that gave more than one of
    them, most first; [] when COUNT is under LIMIT (nothing was cut).

    Placement makes every candidate (each combination of a host's child
    providers: many on a wide tree) and then keeps LIMIT of them, in no
    order it promises (Placement 16.0.0's ``limit_results``; a random
    sample with ``randomize_allocation_candidates``); with
    ``max_allocation_candidates`` and depth-first generation it even stops
    after the first hosts. Hosts with several candidates may have crowded
    others out."""
    if not limit or count < limit:
        return []
    return sorted(((row['host'], row['candidates']) for row in rows
                   if row['candidates'] > 1),
                  key=lambda item: (-item[1], item[0]))


def candidate_rows(
        answer: Mapping[str, typing.Any] | None,
        request: Mapping[str, typing.Any],
        hypervisors: Iterable[Mapping[str, typing.Any]] | None, trees: Trees,
        pools_by_host: Mapping[str, list[str]] | None = None
) -> list[dict[str, typing.Any]]:
    """One row per host that Placement offered.

    A row: host, pools, roots (node names), candidates (allocation
    requests), gpu_providers ({group: [provider names]}), gpus_free,
    gpus_total, free ({VCPU, MEMORY_MB, DISK_GB, PCPU}: free units on the
    roots).
    """
    pools_by_host = pools_by_host or {}
    hosts = host_names.root_hosts(hypervisors)
    gpu_classes = set(request_mod.gpu_classes(request))
    suffix_label = {s: s or _('(unnumbered)') for s in request['groups']}
    rows: dict[str, dict[str, typing.Any]] = {}
    for candidate in (answer or {}).get('allocation_requests') or []:
        allocations = candidate.get('allocations') or {}
        roots = {trees.providers.get(u, {}).get('root', u)
                 for u in allocations}
        for root in roots:
            host = hosts.get(root) or trees.name(root)
            row = rows.setdefault(host, {
                'host': host, 'mapped': root in hosts,
                'pools': pools_by_host.get(host, []), 'roots': set(),
                'candidates': 0, 'gpu_providers': {}})
            row['roots'].add(root)
            row['candidates'] += 1
        by_rp: dict[str, list[str]] = {}
        for suffix, uuids in (candidate.get('mappings') or {}).items():
            for uuid in uuids:
                by_rp.setdefault(uuid, []).append(suffix)
        for uuid, alloc in allocations.items():
            if not gpu_classes & set(alloc.get('resources') or {}):
                continue
            root = trees.providers.get(uuid, {}).get('root', uuid)
            host = hosts.get(root) or trees.name(root)
            for suffix in by_rp.get(uuid, ['']):
                label = suffix_label.get(suffix, suffix)
                names = rows[host]['gpu_providers'].setdefault(label, [])
                if trees.name(uuid) not in names:
                    names.append(trees.name(uuid))
    for row in rows.values():
        root_traits = set()
        for root in row['roots']:
            root_traits |= trees.providers.get(root, {}).get('traits', set())
        free = total = 0
        seen = set()
        for group in request['groups'].values():
            if not group['gpu']:
                continue
            for rc in group['resources']:
                if rc not in gpu_classes:
                    continue
                for root in row['roots']:
                    for uuid, cap, used in gpu_devices(
                            trees, root, rc, _gpu_traits(group, root_traits)):
                        if (uuid, rc) not in seen:
                            seen.add((uuid, rc))
                            free += cap - used
                            total += cap
        row['gpus_free'], row['gpus_total'] = free, total
        row['free'] = {}
        for rc in ('VCPU', 'PCPU', 'MEMORY_MB', 'DISK_GB'):
            amount = sum(trees.free(root, rc) for root in row['roots'])
            has = any(rc in trees.providers.get(root, {}).get(
                'resources', {}) for root in row['roots'])
            if has or rc != 'PCPU':
                row['free'][rc] = amount
        row['roots'] = sorted(trees.name(r) for r in row['roots'])
        for names in row['gpu_providers'].values():
            names.sort()
    return [rows[h] for h in sorted(rows)]


# -- relaxed queries ----------------------------------------------------------

def _has_resources(req: Mapping[str, typing.Any]) -> bool:
    """Placement can be asked: some resources, and no resourceless
    unsuffixed group (a 400 without same_subtree)."""
    own = req['groups'].get('')
    if own is not None and not own['resources'] and (
            own['required'] or own['forbidden'] or own['member_of']
            or own['forbidden_aggregates']):
        return False
    return any(g['resources'] for g in req['groups'].values())


def requirements(
        request: Mapping[str, typing.Any],
        pools: Mapping[str, Mapping[str, typing.Any]] | None = None
) -> list[dict[str, typing.Any]]:
    """[{'id', 'kind', 'label', 'request'}]: one relaxed request each.

    Bounded by MAX_RELAXED: GPU groups (dropped together), the instance's
    own resources, isolated aggregates (each), required aggregates, root
    traits (each), other traits (each); extra ones are dropped together.
    """
    found = []

    def add(rid: str, kind: str, label: str, relaxed: dict[str, typing.Any],
            **extra: typing.Any) -> None:
        if _has_resources(relaxed):
            found.append(dict(extra, id=rid, kind=kind, label=label,
                              request=relaxed))

    gpu = request_mod.gpu_classes(request)
    if gpu:
        relaxed = request_mod.copy(request)
        for suffix, group in list(relaxed['groups'].items()):
            for rc in gpu:
                group['resources'].pop(rc, None)
            if suffix and group['gpu'] and not group['resources']:
                del relaxed['groups'][suffix]
        _fix_policy(relaxed)
        add('gpu', 'gpu', _('the GPU request (%s)') % ', '.join(gpu),
            relaxed)
    own = request['groups'].get('', {}).get('resources', {})
    sizes = sorted(rc for rc in own if rc not in gpu)
    if sizes:
        relaxed = request_mod.copy(request)
        relaxed['groups']['']['resources'] = {
            k: v for k, v in own.items() if k in gpu}
        add('size', 'size', _('the instance size (%s)') % ', '.join(
            '%s=%d' % (rc, own[rc]) for rc in sizes), relaxed)
    for isolated in request.get('isolated') or ():
        relaxed = request_mod.copy(request)
        relaxed['groups']['']['forbidden_aggregates'].discard(
            isolated['uuid'])
        add('isolated:' + isolated['uuid'], 'isolated',
            _('isolated aggregate %s') % isolated['aggregate'], relaxed,
            aggregate=isolated)
    if request['groups'].get('', {}).get('member_of'):
        relaxed = request_mod.copy(request)
        relaxed['groups']['']['member_of'] = []
        add('member_of', 'member_of', _('availability zone / project '
                                        'aggregates'), relaxed)
    for trait in sorted(request['root_required']) + [
            '!' + t for t in sorted(request['root_forbidden'])]:
        relaxed = request_mod.copy(request)
        if trait.startswith('!'):
            relaxed['root_forbidden'].discard(trait[1:])
        else:
            relaxed['root_required'].discard(trait)
        add('root:' + trait, 'root_trait', _('root provider trait %s')
            % trait, relaxed, trait=trait)
    traits = set()
    for group in request['groups'].values():
        traits |= group['required'] | {'!' + t for t in group['forbidden']}
    traits.discard(request_filter.OWNER_NOVA)
    for trait in sorted(traits):
        relaxed = request_mod.copy(request)
        for group in relaxed['groups'].values():
            group['required'].discard(trait)
            group['forbidden'].discard(trait.lstrip('!'))
        add('trait:' + trait, 'trait', _('trait %s') % trait, relaxed,
            trait=trait)
    if len(found) > MAX_RELAXED:
        found = found[:MAX_RELAXED]
    return found


def _fix_policy(req: dict[str, typing.Any]) -> None:
    if len([s for s in req['groups'] if s]) < 2 and req.get('group_policy'):
        req['group_policy'] = None


def candidate_roots(answer: Mapping[str, typing.Any] | None) -> set[str]:
    roots = set()
    summaries = (answer or {}).get('provider_summaries') or {}
    for candidate in (answer or {}).get('allocation_requests') or []:
        for uuid in candidate.get('allocations') or {}:
            roots.add((summaries.get(uuid) or {}).get(
                'root_provider_uuid') or uuid)
    return roots


# -- why not ------------------------------------------------------------------

def _servers(allocations: Mapping[str, Iterable[str]],
             uuids: Iterable[str]) -> list[str]:
    found: list[str] = []
    for uuid in uuids:
        for consumer in sorted(allocations.get(uuid) or ()):
            if consumer not in found:
                found.append(consumer)
    return found


def gpu_reason(host: str, roots: Collection[str],
               request: Mapping[str, typing.Any], trees: Trees,
               allocations: Mapping[str, Iterable[str]]) -> list[str]:
    """Operator terms for 'the GPU request does not fit on this host'."""
    texts = []
    wanted: dict[tuple[str, frozenset[str]], int] = {}
    for group in request['groups'].values():
        if not group['gpu']:
            continue
        for rc, amount in group['resources'].items():
            if rc in request_mod.COMPUTE_CLASSES:
                continue
            key = (rc, frozenset(group['required']))
            wanted[key] = wanted.get(key, 0) + amount
    for (rc, required), amount in sorted(wanted.items(),
                                         key=lambda i: i[0][0]):
        root_traits = set()
        for root in roots:
            root_traits |= trees.providers.get(root, {}).get('traits', set())
        need = {t for t in required if t not in root_traits
                and t != request_filter.OWNER_NOVA}
        devices, typed = [], []
        for root in roots:
            devices += gpu_devices(trees, root, rc)
            typed += gpu_devices(trees, root, rc, need)
        if not devices:
            texts.append(_('%(host)s: no %(rc)s inventory') % {
                'host': host, 'rc': rc})
            continue
        if not typed:
            texts.append(_('%(host)s: its %(n)d %(rc)s provider(s) lack '
                           'trait(s) %(traits)s') % {
                               'host': host, 'n': len(devices), 'rc': rc,
                               'traits': ', '.join(sorted(need))})
            continue
        if all(trees.is_node(u, rc) for u, _c, _x in typed):
            nodes = node_reasons(host, roots, trees, allocations, {rc})
            if len(nodes) == len(typed):
                # every node of the class is out: name each one
                texts += nodes
                continue
        free = sum(max(cap - used, 0) for _u, cap, used in typed)
        total = sum(cap for _u, cap, _used in typed)
        used_by = _servers(allocations, [u for u, _c, used in typed if used])
        shown = ', '.join(used_by[:MAX_SERVERS_SHOWN]) + (
            ', ...' if len(used_by) > MAX_SERVERS_SHOWN else '')
        servers = (_(' (servers %s)') % shown) if used_by else ''
        if free <= 0:
            if len(typed) == total:
                text = _('%(host)s: all %(n)d %(rc)s devices are allocated'
                         '%(servers)s')
            else:
                text = _('%(host)s: all %(total)d %(rc)s units on %(n)d '
                         'device(s) are allocated%(servers)s')
        else:
            text = _('%(host)s: %(free)d of %(total)d %(rc)s free, the '
                     'request needs %(amount)d%(servers)s')
        texts.append(text % {'host': host, 'n': len(typed), 'rc': rc,
                             'total': total, 'free': free, 'amount': amount,
                             'servers': servers})
    return texts or [_('%s: the GPU request does not fit') % host]


def size_reason(host: str, roots: Collection[str],
                request: Mapping[str, typing.Any], trees: Trees) -> list[str]:
    own = request['groups'].get('', {}).get('resources', {})
    texts = []
    for rc, amount in sorted(own.items()):
        if rc not in request_mod.COMPUTE_CLASSES:
            continue
        have = [trees.providers.get(r, {}).get('resources', {}).get(rc)
                for r in roots]
        if not any(have):
            texts.append(_('%(host)s: no %(rc)s inventory (the flavor asks '
                           'for %(rc)s=%(amount)d)') % {
                               'host': host, 'rc': rc, 'amount': amount})
            continue
        free = max(trees.free(r, rc) for r in roots)
        if free < amount:
            texts.append(_('%(host)s: %(free)d %(rc)s free, the flavor asks '
                           'for %(amount)d') % {'host': host, 'free': free,
                                                'rc': rc, 'amount': amount})
    return texts or [_('%s: the instance size does not fit') % host]


def requirement_text(host: str, roots: Collection[str],
                     req: Mapping[str, typing.Any],
                     request: Mapping[str, typing.Any], trees: Trees,
                     allocations: Mapping[str, Iterable[str]]) -> list[str]:
    kind = req['kind']
    if kind == 'gpu':
        return gpu_reason(host, roots, request, trees, allocations)
    if kind == 'size':
        return size_reason(host, roots, request, trees)
    if kind == 'isolated':
        agg = req['aggregate']
        return [_('%(host)s: isolated pool \'%(agg)s\' requires trait '
                  '%(traits)s, the flavor (and image) do not ask for it') % {
                      'host': host, 'agg': agg['aggregate'],
                      'traits': ', '.join(agg['traits'])}]
    if kind == 'member_of':
        return [_('%s: not in the aggregates of the requested availability '
                  'zone or project') % host]
    if kind == 'root_trait':
        trait = req['trait']
        if trait == '!' + request_filter.STATUS_DISABLED:
            return [_('%s: its compute node provider has '
                      'COMPUTE_STATUS_DISABLED (the service is disabled)')
                    % host]
        if trait.startswith('!'):
            return [_('%(host)s: its compute node provider has %(trait)s')
                    % {'host': host, 'trait': trait[1:]}]
        return [_('%(host)s: its compute node provider lacks %(trait)s') % {
            'host': host, 'trait': trait}]
    trait = req['trait']
    if trait.startswith('!'):
        return [_('%(host)s: the flavor forbids trait %(trait)s, which the '
                  'host has') % {'host': host, 'trait': trait[1:]}]
    return [_('%(host)s: no provider has trait %(trait)s, which the flavor '
              '(or image) requires') % {'host': host, 'trait': trait}]


def local_failures(host: str, roots: Collection[str],
                   request: Mapping[str, typing.Any],
                   reqs: Iterable[Mapping[str, typing.Any]],
                   trees: Trees) -> list[Mapping[str, typing.Any]]:
    """Requirements a known tree fails, judged from its summaries."""
    failing = []
    root_traits = set()
    for root in roots:
        root_traits |= trees.providers.get(root, {}).get('traits', set())
    for req in reqs:
        kind = req['kind']
        if kind == 'root_trait':
            trait = req['trait']
            bad = (trait[1:] in root_traits if trait.startswith('!')
                   else trait not in root_traits)
        elif kind == 'isolated':
            bad = host in req['aggregate']['hosts']
        elif kind == 'size':
            own = request['groups'].get('', {}).get('resources', {})
            bad = any(max([trees.free(r, rc) for r in roots] or [0]) < n
                      for rc, n in own.items()
                      if rc in request_mod.COMPUTE_CLASSES)
        elif kind == 'gpu':
            bad = False
            for group in request['groups'].values():
                for rc, n in group['resources'].items():
                    if not group['gpu'] or rc in request_mod.COMPUTE_CLASSES:
                        continue
                    need = _gpu_traits(group, root_traits)
                    free = sum(max(c - u, 0) for root in roots
                               for _x, c, u in gpu_devices(trees, root, rc,
                                                           need))
                    bad = bad or free < n
        else:
            continue
        if bad:
            failing.append(req)
    return failing


def why_not(hosts_roots: Mapping[str, set[str]], offered_roots: set[str],
            relaxed: Sequence[tuple[Mapping[str, typing.Any], set[str]]],
            request: Mapping[str, typing.Any], trees: Trees,
            allocations: Mapping[str, Iterable[str]],
            post: Mapping[str, Iterable[Mapping[str, typing.Any]]],
            project_id: str | None,
            unread: Container[str] = ()) -> dict[str, list[str]]:
    """{host: [reason texts]} for every host not offered.

    ``hosts_roots`` {host: set of root uuids}; ``offered_roots`` the roots
    of the real answer; ``relaxed`` [(requirement, roots of its answer)];
    ``post`` the filters' {host: [reason dicts]} (``manager.removed``);
    ``unread`` hosts whose trees were not read (bounded).
    """
    out = {}
    for host, roots in sorted(hosts_roots.items()):
        texts = []
        if not roots & offered_roots:
            single = [req for req, found in relaxed if roots & found]
            if single:
                for req in single:
                    texts += requirement_text(host, roots, req, request,
                                              trees, allocations)
            elif roots & trees.known_roots():
                judged = [r for r, _f in relaxed]
                kinds = {r['kind'] for r in judged}
                judged += [{'kind': kind, 'id': kind} for kind in
                           ('size', 'gpu') if kind not in kinds]
                several = local_failures(host, roots, request, judged,
                                         trees)
                for req in several:
                    texts += requirement_text(host, roots, req, request,
                                              trees, allocations)
                if not texts:
                    texts.append(_('%s: Placement offers no candidate '
                                   '(several requirements fail together)')
                                 % host)
            elif host in unread:
                texts.append(_('%s: Placement offers no candidate; its '
                               'provider tree was not read (too many hosts '
                               'to explain)') % host)
            else:
                texts.append(_('%s: no provider tree in Placement matches '
                               'even one relaxed request (no inventory of '
                               'what the flavor asks for)') % host)
        else:
            # an Ironic host is offered while some of its nodes are not
            texts += node_reasons(
                host, (roots & trees.node_roots) - offered_roots, trees,
                allocations, request_mod.gpu_classes(request))
        for reason in post.get(host, ()):
            texts.append(filters.post_filter_text(host, reason, project_id))
        if texts:
            out[host] = texts
    return out
