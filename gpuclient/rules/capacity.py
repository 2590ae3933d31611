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

"""Pure: how many more of each GPU flavor fit, and which GPUs are stranded.

Everything is asked of one ``gpuclient.rules.model.Cloud``:

* each flavor becomes the Placement request Nova's scheduler sends
  (``gpuclient.rules.scheduler.resource_request.build``: device groups,
  ``group_policy``, traits, isolation and project aggregates, root
  requirements);
* hosts that the filters Nova applies after Placement would remove
  (``gpuclient.rules.scheduler.manager.select``: disabled or down
  services, aggregate extra specs, project-limited aggregates, host
  capabilities, and where the cloud runs Blazar the hosts it holds:
  ``gpuclient.rules.reservations``) fit nothing;
* on every other host the count is
  ``gpuclient.rules.scheduler.fit.fit_count`` over each of its provider
  trees: how many copies of the request fit at once into
  the free inventory (capacity, ``max_unit``, ``step_size``,
  ``group_policy=isolate``). Identical trees are counted once per flavor.

A one-time-use device that Nova reserved after its server went is
**awaiting release** (``gpuclient.rules.one_time_use``): counted in
the total, neither used, free nor stranded, until the operator releases
it.

A GPU is **stranded** when it is free and no GPU flavor can use it now:
no flavor asks for what its provider offers (class, amount, traits), or
the flavors that would use it fit nowhere on its host (no RAM or VCPU
left, host out of scheduling, ...). The reason says which.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Collection
from collections.abc import Container
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
import typing

from osc_lib import exceptions

from gpuclient.i18n import _
from gpuclient.rules import specs
from gpuclient.rules.scheduler import filters
from gpuclient.rules.scheduler import fit as fit_mod
from gpuclient.rules.scheduler import host_manager
from gpuclient.rules.scheduler import manager
from gpuclient.rules.scheduler import resource_request as request_mod
from gpuclient.rules.scheduler.filters import numa_topology_filter as numa_mod

if typing.TYPE_CHECKING:
    from gpuclient.rules import model

# no more counted per host and flavor (a bound, not a figure anyone meets)
FIT_LIMIT = fit_mod.FIT_LIMIT

# Why free GPUs are stranded, as a fixed set of values (the ``reason``
# label of -f openmetrics: series must not change with the locale or with
# a count; the sentence that names the device and the figures is the
# table's): no GPU flavor asks for what the device offers; a filter Nova
# applies after Placement removes the host for the flavors that would use
# it; the host lacks a compute class those flavors need; their request
# does not fit as a whole.
NO_FLAVOR = 'no_flavor'
HOST_FILTERED = 'host_filtered'
HOST_OUT_OF = {request_mod.VCPU: 'host_out_of_vcpu',
               request_mod.PCPU: 'host_out_of_pcpu',
               request_mod.MEMORY_MB: 'host_out_of_memory',
               request_mod.DISK_GB: 'host_out_of_disk'}
REQUEST_DOES_NOT_FIT = 'request_does_not_fit'
STRANDED_REASONS = ((NO_FLAVOR, HOST_FILTERED)
                    + tuple(HOST_OUT_OF[rc]
                            for rc in request_mod.COMPUTE_CLASSES)
                    + (REQUEST_DOES_NOT_FIT,))


def gpu_flavors(
        flavors: Iterable[Mapping[str, typing.Any]],
        pools: Mapping[str, Mapping[str, typing.Any]],
        wanted: Container[str] | None = None
) -> list[tuple[Mapping[str, typing.Any], dict[str, typing.Any]]]:
    """[(flavor, reading)] of the GPU flavors, or those named in WANTED.

    WANTED: flavor names or IDs; one that is not a GPU flavor still
    counts (the operator asked for it).
    """
    found = []
    for flavor in sorted(flavors, key=lambda f: (f.get('name') or '',
                                                 f['id'])):
        reading = specs.read(flavor.get('extra_specs'), pools)
        if wanted is not None:
            if flavor['id'] not in wanted and flavor.get('name') not in (
                    wanted):
                continue
        elif not reading['is_gpu']:
            continue
        found.append((flavor, reading))
    return found


def resolve_flavors(flavors: Collection[Mapping[str, typing.Any]],
                    names: Iterable[str]) -> set[str]:
    """IDs of the flavors named (name or ID); CommandError for unknown."""
    found = set()
    for name in names:
        matches = [f['id'] for f in flavors
                   if f['id'] == name or f.get('name') == name]
        if len(matches) != 1:
            raise exceptions.CommandError(
                (_('No flavor with name or ID %s. See "openstack flavor '
                   'list --all".') if not matches else
                 _('Several flavors are named %s: give its ID.')) % name)
        found.add(matches[0])
    return found


def flavor_pools(reading: Mapping[str, typing.Any],
                 pools: Mapping[str, Mapping[str, typing.Any]]) -> list[str]:
    """Pools a flavor steers to (empty: it does not steer)."""
    if reading['pool']:
        return [reading['pool']] if reading['pool'] in pools else []
    return specs.matching_pools(reading, pools)


class Fits:
    """Fit counts of flavors on hosts, over one Cloud."""

    def __init__(self, cloud: model.Cloud,
                 settings: dict[str, typing.Any] | None,
                 project_id: str | None,
                 fit_count: Callable[..., int] = fit_mod.fit_count,
                 facts: Mapping[str, Mapping[str, typing.Any]] | None = None,
                 numa: bool = False):
        self.cloud = cloud
        # {host: host facts} (the NUMA ones: numa_topology_filter); with
        # NUMA, a count NUMATopologyFilter cannot judge is None
        self.facts = facts or {}
        self.with_numa = numa
        # flavor id -> {host: (status, what)}
        self.numa: dict[str, dict[str, tuple[str, str | None]]] = {}
        # read (snapshot.read reads it always)
        assert cloud.blazar is not None  # noqa: S101 - read
        self.settings = manager.decide_settings(settings, cloud.blazar)
        self.project_id = project_id
        self.fit_count = fit_count
        self.host_roots = cloud.host_roots()
        self.nodes = host_manager.nodes_by_host(cloud.hypervisors)
        # every host's state, once for every flavor counted (where Blazar
        # runs, BlazarFilter keeps ordinary flavors off the hosts it
        # holds: rules.reservations)
        self.states = filters.HostStates(cloud, self.facts)
        # (host, root) -> (tree, fit.signature of it)
        self._trees: dict[tuple[str, str],
                          tuple[dict[str, dict[str, typing.Any]],
                                tuple[tuple[typing.Any, ...], ...]]] = {}
        # (flavor id, tree signature) -> count
        self._cache: dict[tuple[str, tuple[tuple[typing.Any, ...], ...]],
                          int] = {}
        # flavor id -> its request (resource_request.build)
        self.requests: dict[str, dict[str, typing.Any]] = {}
        # flavor id -> {host: [reason dicts]} of the hosts filters remove
        self.post: dict[str, dict[str, list[dict[str, typing.Any]]]] = {}
        # flavor id -> {host: count}
        self.fits: dict[str, dict[str, int | None]] = {}

    def tree(self, host: str, root: str
             ) -> tuple[dict[str, dict[str, typing.Any]],
                        tuple[tuple[typing.Any, ...], ...]]:
        key = (host, root)
        if key not in self._trees:
            tree = self.cloud.tree(root, self.cloud.root_aggregates(host))
            self._trees[key] = (tree, fit_mod.signature(tree))
        return self._trees[key]

    def add(self, flavor: Mapping[str, typing.Any]) -> dict[str, int | None]:
        """Count FLAVOR on every host; {host: count}."""
        fid = flavor['id']
        if fid in self.fits:
            return self.fits[fid]
        cloud = self.cloud
        req = request_mod.build(
            flavor, None, self.settings, pools=cloud.pools,
            aggregates=cloud.aggregates, project_id=self.project_id)
        self.requests[fid] = req
        spec = filters.spec(self.settings, flavor, self.project_id,
                            resource_request=req)
        guest = None
        if numa_enabled(self.settings) and self.with_numa:
            guest = numa_mod.constraints(
                flavor, aliases=self.settings.get('aliases'))
        classes = set(request_mod.gpu_classes(req))

        def count(host: str) -> tuple[int | None,
                                      tuple[str, str | None] | None]:
            total = 0
            for root in sorted(self.host_roots[host]):
                tree, shape = self.tree(host, root)
                if classes and not any(
                        rp['inventory'].get(rc, {}).get('free')
                        for rp in tree.values() for rc in classes):
                    continue
                key = (fid, shape)
                if key not in self._cache:
                    self._cache[key] = self.fit_count(tree, req,
                                                      limit=FIT_LIMIT)
                total += self._cache[key]
            if guest:
                return self._numa(host, guest, flavor, total)
            return total, None

        selected = manager.select(cloud, spec, sorted(self.host_roots),
                                  self.states, count)
        self.post[fid] = manager.removed(selected)
        self.numa[fid] = {host: s.numa for host, s in selected.items()
                          if guest and s.numa}
        counts = {host: s.count for host, s in selected.items()}
        self.fits[fid] = counts
        return counts

    def _numa(self, host: str, guest: Mapping[str, typing.Any],
              flavor: Mapping[str, typing.Any], placed: int
              ) -> tuple[int | None, tuple[str, str | None] | None]:
        """(PLACED (Placement's count on HOST) bounded by the NUMA fit of
        GUEST, or None when not judged; the verdict, (status, what))."""
        if not placed:
            # Placement offers none: nothing for NUMA to judge
            return 0, None
        nodes = self.nodes.get(host) or ()
        count, what = numa_mod.host_count(
            nodes, guest, self.facts.get(host),
            numa_mod.pci_devices(flavor.get('extra_specs')),
            {node.get('id'): _ratios(self.cloud, node) for node in nodes})
        verdict = (host_manager.UNKNOWN if count is None
                   else host_manager.PASS, what)
        return (None if count is None else min(placed, count)), verdict


def numa_enabled(settings: Mapping[str, typing.Any]) -> bool:
    return filters.NUMA_FILTER in settings['enabled_filters']


def _ratios(cloud: model.Cloud,
            node: Mapping[str, typing.Any]) -> tuple[float, float]:
    """(cpu, ram) allocation ratios of an idle NODE: Placement's
    capacity over what the hypervisor counts (its memory less what the
    host reserves, all of memory_mb_used with no server there)."""
    # Fits counts on Placement's trees: CLOUD's placement was read
    resources = (cloud.placement.summaries.get(  # type: ignore[union-attr]
        node.get('id')  # type: ignore[arg-type]  # None: no summary
    ) or {}).get('resources') or {}
    vcpus = node.get('vcpus') or 0
    memory = (node.get('memory_mb') or 0) - (node.get('memory_mb_used')
                                             or 0)
    cpu = resources.get('VCPU', {}).get('capacity')
    ram = resources.get('MEMORY_MB', {}).get('capacity')
    return (cpu / vcpus if cpu and vcpus else 1.0,
            ram / memory if ram and memory > 0 else 1.0)


def _serves(rp: Mapping[str, typing.Any], root: Mapping[str, typing.Any],
            req: Mapping[str, typing.Any]) -> bool:
    """Could one group of REQ take units from provider RP (a tree entry)?"""
    for suffix, group in req['groups'].items():
        for rc, amount in group['resources'].items():
            inv = rp['inventory'].get(rc)
            if not amount or not inv or inv['free'] < amount:
                continue
            if (amount < inv['min_unit'] or amount > inv['max_unit']
                    or amount % max(inv['step_size'], 1)):
                continue
            traits = set(rp['traits'])
            if not suffix:
                # the unnumbered group's traits may sit on the root
                traits |= set(root['traits'])
            if not group['required'] <= traits:
                continue
            if group['forbidden'] & set(rp['traits']):
                continue
            return True
    return False


def shortage(fits: Fits, flavor: Mapping[str, typing.Any], host: str,
             roots: Iterable[str]) -> tuple[str, int, int] | None:
    """(class, free, need) of the first root class (VCPU, PCPU,
    MEMORY_MB, DISK_GB, MEM_ENCRYPTION_CONTEXT) FLAVOR asks for more of
    than any root of HOST has free, or None: what the host ran out of,
    whatever the filters."""
    req = fits.requests[flavor['id']]
    own = req['groups'].get('', {}).get('resources', {})
    for rc in request_mod.ROOT_CLASSES:
        need = own.get(rc)
        if not need:
            continue
        free = max((fits.tree(host, r)[0][r]['inventory'].get(rc, {}).get(
            'free', 0) for r in roots), default=0)
        if free < need:
            return rc, free, need
    return None


def blocker(fits: Fits, flavor: Mapping[str, typing.Any], host: str,
            roots: Iterable[str]) -> str:
    """Why FLAVOR fits nowhere on HOST (one sentence)."""
    return blocked(fits, flavor, host, roots)[1]


def blocked(fits: Fits, flavor: Mapping[str, typing.Any], host: str,
            roots: Iterable[str]) -> tuple[str, str]:
    """(reason, sentence): why FLAVOR fits nowhere on HOST, the reason one
    of STRANDED_REASONS but NO_FLAVOR."""
    post = fits.post[flavor['id']].get(host)
    if post:
        return HOST_FILTERED, filters.post_filter_text(host, post[0],
                                                       fits.project_id)
    short = shortage(fits, flavor, host, roots)
    if short:
        rc, free, need = short
        # MEM_ENCRYPTION_CONTEXT has no label of its own: the request as
        # a whole does not fit (the sentence names the class)
        return HOST_OUT_OF.get(rc, REQUEST_DOES_NOT_FIT), _(
            '%(host)s has %(free)d %(rc)s free and %(flavor)s needs '
            '%(need)d') % {'host': host, 'free': free, 'rc': rc,
                           'flavor': flavor.get('name'), 'need': need}
    return REQUEST_DOES_NOT_FIT, _(
        '%(flavor)s does not fit on %(host)s (its request as a whole: see '
        '"openstack gpu candidate list --flavor %(flavor)s --explain")') % {
            'flavor': flavor.get('name'), 'host': host}


def stranded_providers(
        fits: Fits, all_gpu_flavors: Sequence[Mapping[str, typing.Any]],
        host: str, resource_class: str
) -> list[tuple[dict[str, typing.Any], int,
                list[Mapping[str, typing.Any]]]]:
    """[(provider, free units, users)] of HOST's providers whose free
    RESOURCE_CLASS units no GPU flavor can use now: USERS are the GPU
    flavors that ask for what the provider offers (each fitting nowhere
    on HOST; none: no flavor asks for it). Every flavor of
    ALL_GPU_FLAVORS must have been added to FITS."""
    found = []
    for root in sorted(fits.host_roots.get(host, ())):
        tree = fits.tree(host, root)[0]
        for _uuid, rp in sorted(tree.items()):
            free = rp['inventory'].get(resource_class, {}).get('free', 0)
            if not free:
                continue
            users = [f for f in all_gpu_flavors
                     if _serves(rp, tree[root], fits.requests[f['id']])]
            # a count not judged (None) is no proof that nothing fits
            if any(fits.fits[f['id']].get(host, 0) != 0 for f in users):
                continue
            found.append((rp, free, users))
    return found


def stranded(fits: Fits, all_gpu_flavors: Sequence[Mapping[str, typing.Any]],
             host: str,
             resource_class: str) -> tuple[int, list[str], dict[str, int]]:
    """(free units no GPU flavor can use now, [sentences], {reason: units})
    on one host; each reason one of STRANDED_REASONS."""
    reasons: list[str]
    by_reason: dict[str, int]
    count, reasons, by_reason = 0, [], {}
    roots = sorted(fits.host_roots.get(host, ()))
    for rp, free, users in stranded_providers(fits, all_gpu_flavors, host,
                                              resource_class):
        count += free
        if not users:
            by_reason[NO_FLAVOR] = by_reason.get(NO_FLAVOR, 0) + free
            traits = sorted(t for t in rp['traits']
                            if t.startswith('CUSTOM_'))
            reasons.append(
                _('%(rp)s: no GPU flavor asks for what it offers '
                  '(%(free)d free %(rc)s%(traits)s)') % {
                      'rp': rp['name'], 'free': free,
                      'rc': resource_class,
                      'traits': (', ' + ', '.join(traits)
                                 if traits else '')})
        else:
            reason, why = blocked(fits, users[0], host, roots)
            by_reason[reason] = by_reason.get(reason, 0) + free
            reasons.append(_('%(rp)s: %(why)s') % {'rp': rp['name'],
                                                   'why': why})
    return count, reasons, by_reason


def _figures(cloud: model.Cloud, roots: Iterable[str],
             resource_class: str) -> tuple[int, int, int, int]:
    """(total, used, free, awaiting release) of a class in ROOTS' trees."""
    total = used = free = awaiting = 0
    for root in roots:
        for _u, _n, t, u, f, a in cloud.gpu_providers(root, resource_class):
            total, used, free = total + t, used + u, free + f
            awaiting += a
    return total, used, free, awaiting


def _flavor_class(req: Mapping[str, typing.Any],
                  pools: Mapping[str, Mapping[str, typing.Any]],
                  pool: str | None) -> str | None:
    if pool and pools.get(pool, {}).get('resource_class'):
        return pools[pool]['resource_class']
    classes = request_mod.gpu_classes(req)
    return classes[0] if classes else None


def rows(cloud: model.Cloud, settings: dict[str, typing.Any] | None,
         project_id: str | None,
         wanted_flavors: Container[str] | None = None,
         pool: str | None = None, per_host: bool = False,
         fit_count: Callable[..., int] = fit_mod.fit_count,
         notes: list[str] | None = None,
         facts: Mapping[str, Mapping[str, typing.Any]] | None = None
         ) -> list[dict[str, typing.Any]]:
    """Rows of ``gpu capacity list`` as dicts (see module docstring).

    One row per flavor and pool (and host with PER_HOST): flavor,
    flavor_id, pool, host (None without PER_HOST), resource_class, fits,
    hosts (hosts counted), hosts_fitting (those where at least one more
    fits), total, used, free, awaiting_release, allocated (used over
    total in percent, None without GPUs), stranded, stranded_reasons
    (sentences), stranded_by_reason ({reason of STRANDED_REASONS: units}),
    numa (for a flavor asking a NUMA topology, whether NUMATopologyFilter
    was judged; where it was not, fits and hosts_fitting are None).
    FACTS: {host: host facts}.

    A GPU flavor whose request cannot be built (a PCI alias no pool and
    no nova.conf describes) gets no row and a sentence in NOTES (a list)
    instead of failing every other flavor's row; a flavor named in
    WANTED_FLAVORS still fails with the error.
    """
    pools = cloud.pools
    fits = Fits(cloud, settings, project_id, fit_count=fit_count,
                facts=facts, numa=True)
    every_gpu = []
    for flavor, reading in gpu_flavors(cloud.flavors or [], pools):
        try:
            fits.add(flavor)
        except exceptions.CommandError as error:
            if wanted_flavors is not None and flavor['id'] in (
                    wanted_flavors):
                raise
            if notes is not None:
                notes.append(_('%(flavor)s is left out: %(why)s') % {
                    'flavor': flavor.get('name') or flavor['id'],
                    'why': error})
            continue
        every_gpu.append((flavor, reading))
    chosen = (gpu_flavors(cloud.flavors or [], pools, wanted_flavors)
              if wanted_flavors is not None else every_gpu)
    all_flavors = [f for f, _r in every_gpu]
    found = []
    strand_cache = {}
    for flavor, reading in chosen:
        counts = fits.add(flavor)
        req = fits.requests[flavor['id']]
        targets = flavor_pools(reading, pools)
        groups: list[tuple[str | None, list[str]]] = []
        if targets:
            groups = [(p, sorted(pools[p]['hosts'])) for p in targets]
        else:
            by_pool: dict[str | None, list[str]] = {}
            for host in sorted(fits.host_roots):
                in_pools: list[str | None] = [
                    p for p, d in pools.items()
                    if host in d['hosts']] or [None]
                rc = _flavor_class(req, pools, None)
                if not counts.get(host) and not (
                        rc and _figures(cloud, fits.host_roots[host],
                                        rc)[0]):
                    continue
                for p in in_pools:
                    by_pool.setdefault(p, []).append(host)
            groups = sorted(by_pool.items(), key=lambda i: i[0] or '')
        for pool_name, members in groups:
            if pool and pool_name != pool:
                continue
            rc = _flavor_class(req, pools, pool_name)
            hosts: list[dict[str, typing.Any]] = []
            for host in members:
                total, used, free, awaiting = (
                    _figures(cloud, fits.host_roots.get(host, ()), rc)
                    if rc else (0, 0, 0, 0))
                key = (host, rc)
                if key not in strand_cache:
                    strand_cache[key] = (stranded(fits, all_flavors, host,
                                                  rc) if rc else (0, [], {}))
                count, reasons, by_reason = strand_cache[key]
                fits_here = counts.get(host, 0)
                hosts.append({
                    'host': host, 'fits': fits_here, 'hosts': 1,
                    'hosts_fitting': (None if fits_here is None
                                      else 1 if fits_here else 0),
                    'total': total, 'used': used, 'free': free,
                    'awaiting_release': awaiting,
                    'stranded': count, 'stranded_reasons': reasons,
                    'stranded_by_reason': by_reason,
                    'numa': numa_mod.row_text(
                        fits.numa[flavor['id']].get(host))})
            base = {'flavor': flavor.get('name') or flavor['id'],
                    'flavor_id': flavor['id'], 'pool': pool_name,
                    'resource_class': rc}
            if per_host:
                for item in hosts:
                    found.append(dict(base, **item, allocated=_percent(
                        item['used'], item['total'])))
                continue
            summed = {k: _sum(item[k] for item in hosts)
                      for k in ('fits', 'hosts', 'hosts_fitting', 'total',
                                'used', 'free', 'awaiting_release',
                                'stranded')}
            # used and total are never None (fits and hosts_fitting may be)
            found.append(dict(
                base, host=None, allocated=_percent(
                    summed['used'],  # type: ignore[arg-type]
                    summed['total']),  # type: ignore[arg-type]
                numa=_numa_summary({item['host']: fits.numa[
                    flavor['id']].get(item['host']) for item in hosts}),
                stranded_reasons=[r for item in hosts
                                  for r in item['stranded_reasons']],
                stranded_by_reason=_summed(item['stranded_by_reason']
                                           for item in hosts),
                **summed))
    return found


def _summed(counts: Iterable[Mapping[str, int]]) -> dict[str, int]:
    """{key: sum} of the {key: number} COUNTS."""
    found: dict[str, int] = {}
    for item in counts:
        for key, number in item.items():
            found[key] = found.get(key, 0) + number
    return found


def _sum(values: Iterable[int | None]) -> int | None:
    """The sum, None when one is not known."""
    values = list(values)
    # none is None past the test, which mypy does not follow
    return None if None in values else sum(values)  # type: ignore[arg-type]


def _numa_summary(
        judged: Mapping[str, tuple[str, str | None] | None]) -> str | None:
    """The NUMA cell of a pool's row from its hosts' (status, what): the
    hosts not judged and why, else the sources judged by."""
    # JUDGED holds no None from here, which mypy does not follow; the
    # text of every verdict here is set
    judged = {host: item for host, item in judged.items() if item}
    unjudged = sorted(
        (host, what)  # type: ignore[misc]
        for host, (status, what) in judged.items()
        if status == host_manager.UNKNOWN)
    if unjudged:
        return '; '.join('%s: %s' % (host, numa_mod.row_text(
            (host_manager.UNKNOWN, what))) for host, what in unjudged)
    if judged:
        return numa_mod.row_text((host_manager.PASS, ', '.join(sorted(
            {what  # type: ignore[misc]
             for _status, what in judged.values()}))))
    return None


def _percent(used: int, total: int) -> float | None:
    if not total:
        return None
    return round(100.0 * used / total, 1)
