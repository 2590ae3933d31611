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

"""Pure: the plan of every pool write, from what the cloud holds now.

Each planner takes a ``model.Cloud`` (what ``pool_ops`` read: aggregates,
so pools, the hypervisors and provider trees with traits of the hosts it
plans for, existing traits, and when a change can affect them, flavors,
their access lists, images and servers) and returns a ``plan.Plan``. It
changes nothing of the model it is given. Nothing here talks to a cloud.

Order rules. The journal stops at any step and undoes newest first, so
every prefix of a plan is a state the cloud can be left in. Each is
between the state before and the state asked for: a pool's flavors and
images can boot on every host where they could both before and after
(none loses its hosts for the time of the change, or because an undo
failed), and nothing gets onto a host where it could neither before nor
after (isolation never leaks). Nova's rules that decide it:

* ``request_filter.isolate_aggregates``: a host in an aggregate with
  ``trait:T=required`` metadata is forbidden (Placement
  ``member_of=!in:``) to a request whose flavor and image do not require
  T; Placement then gives a host only if its tree has every required
  trait;
* AggregateInstanceExtraSpecsFilter (``dependents``): a flavor's
  unscoped and ``aggregate_instance_extra_specs:`` keys must match the
  metadata of the host's aggregates.

Hence:

* joining: ownership record, then traits on the providers, then the host
  into the aggregate (an isolated aggregate never holds a host that pool
  flavors cannot use because its trait is missing);
* leaving: the reverse (the host leaves the aggregate last: a host out of
  the aggregate still carrying the pool trait would take in flavors meant
  for the pool only while it still has the trait);
* isolation on: trait, providers, flavors (they now require a trait every
  host has), then the aggregate requirement (which keeps out only what
  does not require it);
* isolation off: the aggregate requirement first (its flavors and images
  still require the trait, which every host still has), then flavors and
  images, then the providers and the trait (no flavor ever requires a
  trait that is gone). Removing the flavors' requirement first would
  leave them forbidden from their own isolated aggregate until the next
  step, and for good if that step failed and its undo did too;
* a metadata key that flavors steer on (``update_metadata`` with
  ``--update-dependents``): a changed key first gets old and new values
  both (comma list: the filter takes any), then the flavors follow, then
  the new value alone; a removed key leaves the flavors first, then the
  aggregate.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Collection
from collections.abc import Container
from collections.abc import Iterable
from collections.abc import Mapping
import typing

from osc_lib import exceptions

from gpuclient.i18n import _
from gpuclient.rules import argv
from gpuclient.rules import baremetal
from gpuclient.rules import dependents as dependents_mod
from gpuclient.rules import nova_rules
from gpuclient.rules import plan as plan_mod
from gpuclient.rules import pools as pools_mod
from gpuclient.rules import specs

if typing.TYPE_CHECKING:
    from gpuclient.rules import model

TRAIT_SPEC_PREFIX = 'trait'


def find_pool(cloud: model.Cloud, name: str) -> dict[str, typing.Any]:
    """The pool NAME (name or aggregate ID/UUID) of CLOUD
    (``pools.lookup``: a pool it skipped says why)."""
    return pools_mod.lookup(cloud.pools, cloud.problems, name)


def provider_traits(cloud: model.Cloud, uuid: str) -> set[str]:
    """The traits of provider UUID in CLOUD's Placement (none when
    Placement was not read)."""
    if cloud.placement is None:
        return set()
    return pools_mod.traits_of(cloud.placement, uuid)


def provider_label(cloud: model.Cloud, uuid: str) -> str:
    """How provider UUID is said: its name in CLOUD's Placement, else
    its uuid."""
    if cloud.placement is None:
        return uuid
    return cloud.placement.providers.get(uuid, {}).get('name', uuid)


def roots_of(cloud: model.Cloud, host: str) -> list[str]:
    """Root provider uuids of compute host HOST (several for Ironic),
    sorted, from CLOUD's hypervisors (none when not read)."""
    return sorted(cloud.host_roots().get(host, ()))


def _existing_traits(cloud: model.Cloud) -> set[str]:
    """Of the custom traits asked about, those Placement has (none when
    not asked)."""
    return cloud.existing_traits or set()


def _members(cloud: model.Cloud, name: str) -> list[str]:
    """The hosts of aggregate NAME (none when CLOUD does not have it: a
    plan that creates it)."""
    return (cloud.aggregate(name) or {}).get('hosts') or []


def _aggregate(cloud: model.Cloud, name: str) -> dict[str, typing.Any]:
    """The aggregate NAME of CLOUD, which is there (a pool's)."""
    found = cloud.aggregate(name)
    if found is None:
        raise KeyError(name)
    return found


def _error(message: str, **kwargs: object) -> exceptions.CommandError:
    return exceptions.CommandError(message % kwargs if kwargs else message)


def _known_type_traits(cloud: model.Cloud) -> set[str]:
    """Type traits the pools use or recorded putting on providers."""
    known = {p.get('type_trait') for p in cloud.pools.values()}
    for agg in cloud.aggregates:
        known.update(pools_mod.owned_traits(agg.get('metadata') or {})
                     .values())
    known.discard(None)
    return known  # type: ignore[return-value]  # None discarded


def _is_type_trait(trait: str, known: Container[str] = ()) -> bool:
    """A vGPU/MIG type trait, not a pool trait nor an operator's label."""
    if trait.startswith('CUSTOM_' + pools_mod.POOL_TRAIT_PREFIX):
        return False
    return pools_mod.is_type_trait(trait, known)


def _root_traits_step(cloud: model.Cloud, root: str,
                      traits: list[str]) -> plan_mod.Step:
    """Step adding TRAITS to a root provider; refused on an Ironic node,
    whose provider traits Nova's ironic driver replaces."""
    summary = (cloud.placement.summaries.get(root)
               if cloud.placement is not None else None)
    if baremetal.summary_is_node(summary):
        raise baremetal.refuse_provider_traits(provider_label(cloud, root),
                                               traits)
    return plan_mod.add_traits(root, traits, provider_label(cloud, root))


# -- hosts --------------------------------------------------------------------

def join_steps(cloud: model.Cloud, pool: Mapping[str, typing.Any], host: str,
               metadata: dict[str, typing.Any]
               ) -> tuple[list[plan_mod.Step | None], list[str]]:
    """Steps that make ``host`` a full member of ``pool``.

    ``metadata`` is the aggregate metadata as it will be when these steps
    run (ownership records are added to it). Returns (steps, notes).
    Raises when the host has no pGPU free to serve the pool's type.
    """
    agg = pool['aggregate']
    roots = roots_of(cloud, host)
    steps, notes, records = [], [], {}
    trait_steps = []
    if pool['isolate']:
        for root in roots:
            if pool['pool_trait'] not in provider_traits(cloud, root):
                trait_steps.append(_root_traits_step(
                    cloud, root, [pool['pool_trait']]))
    mine = pool.get('type_trait')
    if mine:
        owned = pools_mod.owned_traits(metadata)
        known = _known_type_traits(cloud)
        serving, other = 0, []
        # the hosts' trees are read (a Cloud read for the hosts)
        for uuid in pools_mod.vgpu_children(
                cloud.placement, roots):  # type: ignore[arg-type]
            traits = provider_traits(cloud, uuid)
            if mine in traits:
                serving += 1
                continue
            others = sorted(t for t in traits if _is_type_trait(t, known))
            if others:
                other.append('%s (%s)' % (provider_label(cloud, uuid),
                                          ', '.join(others)))
                continue
            serving += 1
            if owned.get(uuid) != mine:
                records[pools_mod.owned_key(uuid)] = mine
            trait_steps.append(plan_mod.add_traits(
                uuid, [mine], provider_label(cloud, uuid)))
        if other:
            notes.append(
                _('%(host)s: %(n)d pGPU provider(s) already serve another '
                  'type and were left alone: %(rps)s.')
                % {'host': host, 'n': len(other), 'rps': ', '.join(other)})
        if not serving:
            raise _error(
                _('%(host)s has no pGPU provider that can serve %(trait)s: '
                  'every one already carries another type trait (%(rps)s). '
                  'One vGPU type per physical GPU: free a pGPU first '
                  '("openstack resource provider trait delete").'),
                host=host, trait=mine, rps=', '.join(other) or _('none'))
    if records:
        steps.append(plan_mod.set_metadata(agg, metadata, records))
        metadata.update(records)
    steps += trait_steps
    if host not in _members(cloud, agg):
        steps.append(plan_mod.add_host(agg, host, roots))
    return steps, notes


def leave_steps(cloud: model.Cloud, pool: Mapping[str, typing.Any], host: str,
                metadata: dict[str, typing.Any]
                ) -> tuple[list[plan_mod.Step | None], list[str]]:
    """Steps that take ``host`` out of ``pool``, and only this pool's marks.

    Type traits go only where this pool recorded putting them, and stay
    (their record moving to that pool) where another pool holding the host
    serves the same type. Returns (steps, notes).
    """
    agg = pool['aggregate']
    roots = roots_of(cloud, host)
    drop: dict[str, str | None]
    steps, notes, drop = [], [], {}
    mine = pool.get('type_trait')
    in_tree = set(cloud.placement.providers_in_trees(roots)) if (
        cloud.placement is not None) else set()
    owned = {u: t for u, t in pools_mod.owned_traits(metadata).items()
             if u in in_tree}
    heir = next((p for p in cloud.pools.values()
                 if p['name'] != pool['name'] and host in p['hosts']
                 and mine and p.get('type_trait') == mine), None)
    for uuid, trait in sorted(owned.items()):
        drop[pools_mod.owned_key(uuid)] = None
        if heir is not None and trait == heir.get('type_trait'):
            heir_meta = _aggregate(cloud, heir['aggregate'])['metadata']
            steps.append(plan_mod.set_metadata(
                heir['aggregate'], heir_meta,
                {pools_mod.owned_key(uuid): trait}))
            continue
        if trait in provider_traits(cloud, uuid):
            steps.append(plan_mod.remove_traits(uuid, [trait],
                                                provider_label(cloud, uuid)))
    if mine and heir is None:
        # the hosts' trees are read (a Cloud read for the hosts)
        kept = [provider_label(cloud, u) for u in pools_mod.vgpu_children(
            cloud.placement,  # type: ignore[arg-type]
            roots) if mine in provider_traits(cloud, u) and u not in owned]
        if kept:
            notes.append(
                _('%(host)s: %(trait)s stays on %(rps)s: this pool did not '
                  'put it there (set by hand or before gpuclient recorded '
                  'its traits). Remove it with "openstack resource provider '
                  'trait delete" if nothing needs it.')
                % {'host': host, 'trait': mine, 'rps': ', '.join(kept)})
    if pool['isolate']:
        for root in roots:
            if pool['pool_trait'] in provider_traits(cloud, root):
                steps.append(plan_mod.remove_traits(
                    root, [pool['pool_trait']], provider_label(cloud, root)))
    if host in _members(cloud, agg):
        steps.append(plan_mod.remove_host(agg, host, roots))
    step = plan_mod.set_metadata(agg, metadata, drop)
    if step is not None:
        steps.append(step)
        for key in drop:
            metadata.pop(key, None)
    return steps, notes


def _per_host(result: plan_mod.Plan,
              steps_for: Callable[
                  [model.Cloud, Mapping[str, typing.Any], str,
                   dict[str, typing.Any]],
                  tuple[list[plan_mod.Step | None], list[str]]],
              cloud: model.Cloud, pool: Mapping[str, typing.Any],
              hosts: Iterable[str], metadata: dict[str, typing.Any]
              ) -> None:
    """Add join_steps or leave_steps of each host (and their notes)."""
    for host in hosts:
        steps, notes = steps_for(cloud, pool, host, metadata)
        result.extend(steps)
        result.warnings += notes


def _trait_steps(cloud: model.Cloud,
                 pool: Mapping[str, typing.Any]) -> list[plan_mod.Step]:
    needed = set()
    if pool['isolate']:
        needed.add(pool['pool_trait'])
    if pool.get('type_trait'):
        needed.add(pool['type_trait'])
    return [plan_mod.create_trait(t)
            for t in sorted(needed - _existing_traits(cloud))]


def _check_members(cloud: model.Cloud, pool: Mapping[str, typing.Any],
                   hosts: Iterable[str]) -> None:
    problems = []
    for host in hosts:
        # the hosts' trees are read (a Cloud read for the hosts)
        problems += pools_mod.host_problems(
            pool, host, roots_of(cloud, host),
            cloud.placement, cloud.pools)  # type: ignore[arg-type]
    if problems:
        raise exceptions.CommandError(' '.join(problems))


# -- create / add / remove ----------------------------------------------------

def create(cloud: model.Cloud, spec: Mapping[str, typing.Any],
           hosts: Iterable[str]) -> plan_mod.Plan:
    """Plan ``pool create``: from nothing, or finishing an earlier one."""
    name = spec['name']
    title = _('Creating pool %s') % name
    hosts = list(dict.fromkeys(hosts))
    existing = cloud.aggregate(name)
    result = plan_mod.Plan(title, rerun=create_command(spec, hosts))
    if existing is not None and pools_mod.POOL_KEY in existing['metadata']:
        pool = find_pool(cloud, name)
        diffs = [d for d in pools_mod.differences(spec, pool)
                 if d[0] != 'hosts']
        if diffs:
            raise _error(
                _('Pool %(name)s already exists with other settings: '
                  '%(diff)s. Use "openstack gpu pool set" or "add host", or '
                  'delete it first.'),
                name=name, diff=_describe(diffs))
        extra = sorted(set(pool['hosts']) - set(hosts))
        if extra:
            raise _error(
                _('Pool %(name)s already exists with more hosts (%(extra)s) '
                  'than asked for: use "openstack gpu pool remove host".'),
                name=name, extra=', '.join(extra))
        metadata = dict(existing['metadata'])
    else:
        if existing is not None:
            if existing['metadata'] or existing['hosts']:
                raise _error(
                    _('A host aggregate named %(name)s already exists and '
                      'is not a GPU pool: gpuclient does not touch ordinary '
                      'aggregates. Choose another pool name.'), name=name)
            result.warnings.append(
                _('Host aggregate %s exists, empty and without metadata '
                  '(left by an interrupted create): it becomes the '
                  'pool.') % name)
        else:
            result.add(plan_mod.create_aggregate(name, spec['zone']))
        pools_mod.check_trait_collision(name, cloud.pools)
        pool = _pool_of(spec, name)
        metadata = {}
        result.add(plan_mod.set_metadata(name, {},
                                         pools_mod.metadata_for(spec)))
        metadata.update(pools_mod.metadata_for(spec))
    _check_members(cloud, pool, hosts)
    result.extend(_trait_steps(cloud, pool))
    _per_host(result, join_steps, cloud, pool, hosts, metadata)
    return result


def create_command(spec: Mapping[str, typing.Any],
                   hosts: Iterable[str]) -> str | None:
    """The ``pool create`` command that asks for SPEC and HOSTS, quoted."""
    args = ['gpu', 'pool', 'create', '--mode', spec['mode']]
    for key, flag in sorted(pools_mod.OPTION_FLAGS.items()):
        if key == 'resource_class':
            continue
        if spec.get(key) is True:
            args.append(flag)
        elif spec.get(key):
            args += [flag, spec[key]]
    if spec.get('resource_class') and (
            spec['resource_class'] != pools_mod.default_class(spec)):
        args += ['--resource-class', spec['resource_class']]
    if spec.get('isolate'):
        args.append('--isolate')
    if spec.get('zone'):
        args += ['--zone', spec['zone']]
    for project in spec.get('projects') or ():
        args += ['--project', project]
    for key, value in sorted((spec.get('properties') or {}).items()):
        args += ['--property', '%s=%s' % (key, value)]
    for host in hosts:
        args += ['--host', host]
    args.append(spec['name'])
    return argv.command_line(args)


def _pool_of(spec: Mapping[str, typing.Any],
             aggregate_name: str) -> dict[str, typing.Any]:
    pool = dict(spec)
    pool['aggregate'] = aggregate_name
    pool['pool_trait'] = pools_mod.pool_trait(spec['name'])
    pool['type_trait'] = pools_mod.type_trait_of(spec)
    pool['hosts'] = []
    return pool


def _describe(differences: Iterable[tuple[str, typing.Any, typing.Any]]
              ) -> str:
    return '; '.join('%s: %s (requested %s)' % (field, have, want)
                     for field, want, have in differences)


def add_hosts(cloud: model.Cloud, name: str,
              hosts: Iterable[str]) -> plan_mod.Plan:
    pool = find_pool(cloud, name)
    hosts = list(dict.fromkeys(hosts))
    result = plan_mod.Plan(
        _('Adding %(hosts)s to pool %(pool)s')
        % {'hosts': ', '.join(hosts), 'pool': name},
        rerun='"openstack gpu pool add host %s %s"' % (name, ' '.join(hosts)))
    _check_members(cloud, pool, hosts)
    result.extend(_trait_steps(cloud, pool))
    metadata = dict(_aggregate(cloud, pool['aggregate'])['metadata'])
    _per_host(result, join_steps, cloud, pool, hosts, metadata)
    return result


def remove_hosts(cloud: model.Cloud, name: str, hosts: Iterable[str],
                 allow_servers: bool = False,
                 escape: str | None = None) -> plan_mod.Plan:
    """Plan ``pool remove host``. Refused while a host runs servers
    whose flavor steers to this pool only (``check_servers``), unless
    ALLOW_SERVERS; ESCAPE is what the refusal offers instead."""
    pool = find_pool(cloud, name)
    hosts = list(dict.fromkeys(hosts))
    strangers = [h for h in hosts if h not in pool['hosts']]
    if strangers:
        raise _error(
            _('Not in pool %(pool)s: %(hosts)s. Its hosts: %(members)s.'),
            pool=name, hosts=', '.join(strangers),
            members=', '.join(pool['hosts']) or _('none'))
    if not allow_servers:
        check_servers(cloud, pool, hosts, escape)
    result = plan_mod.Plan(
        _('Removing %(hosts)s from pool %(pool)s')
        % {'hosts': ', '.join(hosts), 'pool': name},
        rerun='"openstack gpu pool remove host %s %s"'
        % (name, ' '.join(hosts)))
    metadata = dict(_aggregate(cloud, pool['aggregate'])['metadata'])
    _per_host(result, leave_steps, cloud, pool, hosts, metadata)
    return result


# -- servers on a host leaving a pool -----------------------------------------

# the option of gpu pool remove host that removes a host with servers anyway
ALLOW_SERVERS = '--allow-servers'
# at most this many server IDs are named per host and flavor
SERVERS_NAMED = 3


def steered_pools(extra_specs: Mapping[str, typing.Any] | None,
                  pools: Mapping[str, Mapping[str, typing.Any]]
                  ) -> list[str]:
    """Names of the pools a flavor with EXTRA_SPECS steers to: the one its
    ``gpu_pool`` names, else those its hand-made aggregate keys match
    (``specs.matching_pools``)."""
    reading = specs.read(extra_specs, pools)
    if reading['pool']:
        return [reading['pool']]
    return specs.matching_pools(reading, pools)


def servers_left_behind(cloud: model.Cloud, pool: Mapping[str, typing.Any],
                        hosts: Container[str]
                        ) -> list[tuple[str, str, list[str]]]:
    """[(host, flavor name, [server ids])] of the servers on HOSTS whose
    flavor (the copy Nova embeds in the server: what its moves are
    scheduled with) steers to POOL and to no other pool that holds the
    host. Taking the host out of POOL leaves them on a host their flavor
    no longer matches. Empty when the servers were not read. A server
    whose delete has run on its host (vm_state ``deleted``: Nova lists it
    until its allocations are gone) stays nowhere and is not counted."""
    found: dict[tuple[str, str], list[str]] = {}
    for server in cloud.servers or ():
        host = server.get('OS-EXT-SRV-ATTR:host')
        if host not in hosts:
            continue
        if server.get('OS-EXT-STS:vm_state') == 'deleted':
            continue
        flavor = server.get('flavor') or {}
        steers = steered_pools(flavor.get('extra_specs'), cloud.pools)
        if pool['name'] not in steers:
            continue
        if any(other != pool['name'] and other in cloud.pools
               and host in cloud.pools[other]['hosts'] for other in steers):
            continue
        name = (flavor.get('original_name') or flavor.get('name')
                or _('(unnamed)'))
        found.setdefault((host, name),  # type: ignore[arg-type]  # in HOSTS
                         []).append(server['id'])
    return [(host, flavor, sorted(ids))
            for (host, flavor), ids in sorted(found.items())]


def check_servers(cloud: model.Cloud, pool: Mapping[str, typing.Any],
                  hosts: Container[str], escape: str | None = None) -> None:
    """Refuse taking HOSTS out of POOL while servers run there whose
    flavor steers to POOL only (``servers_left_behind``): they would keep
    running on a host their flavor no longer matches. The message names
    them (their count and a few IDs per host and flavor) and what to do;
    ESCAPE is the last way out it offers (default: run again with
    --allow-servers)."""
    left = servers_left_behind(cloud, pool, hosts)
    if not left:
        return
    if escape is None:
        escape = _('run again with %s to remove it anyway') % ALLOW_SERVERS
    what = []
    for host, flavor, ids in left:
        shown = ', '.join(ids[:SERVERS_NAMED])
        if len(ids) > SERVERS_NAMED:
            shown += _(' and %d more') % (len(ids) - SERVERS_NAMED)
        what.append(_('%(host)s runs %(n)d server(s) of flavor %(flavor)s '
                      '(%(ids)s)') % {'host': host, 'n': len(ids),
                                      'flavor': flavor, 'ids': shown})
    busy = sorted({host for host, _flavor, _ids in left})
    raise _error(
        _('Taking %(hosts)s out of pool %(pool)s would strand servers: '
          '%(what)s, and their flavor steers to pool %(pool)s only. They '
          'would keep running on a host their flavor no longer matches '
          '(Nova refuses a rebuild with another image or a resize on that '
          'host, and the pool no longer counts the GPUs they hold). Move '
          'them first ("openstack gpu host drain %(busy)s"), or add the '
          'host to another pool their flavor steers to, or %(escape)s.'),
        hosts=', '.join(busy), pool=pool['name'], what='; '.join(what),
        busy=' '.join(busy), escape=escape)


# -- dependents ---------------------------------------------------------------

def flavors_of(cloud: model.Cloud, pool: Mapping[str, typing.Any]
               ) -> list[dict[str, typing.Any]]:
    """Flavors that steer to the pool or would land on it (dicts)."""
    found = []
    for flavor in cloud.flavors or []:
        reading = specs.read(flavor.get('extra_specs'), cloud.pools)
        pools_in = ([reading['pool']] if reading['pool']
                    else specs.matching_pools(reading, cloud.pools))
        if pool['name'] in pools_in:
            found.append(flavor)
    return found


def trait_keys(extra_specs: Mapping[str, typing.Any] | None,
               trait: str) -> list[str]:
    """Keys of extra specs (or image properties) requiring ``trait``."""
    found = []
    for key, value in (extra_specs or {}).items():
        parsed = specs.parse_group_key(key)
        if parsed and parsed[0] == TRAIT_SPEC_PREFIX and (
                parsed[2] == trait) and str(value) == specs.REQUIRED:
            found.append(key)
    return sorted(found)


def flavors_requiring(cloud: model.Cloud,
                      trait: str) -> list[dict[str, typing.Any]]:
    return [f for f in cloud.flavors or []
            if trait_keys(f.get('extra_specs'), trait)]


def images_requiring(cloud: model.Cloud,
                     trait: str) -> list[dict[str, typing.Any]]:
    return [i for i in cloud.images or []
            if i.get('trait:%s' % trait) == specs.REQUIRED]


def _names(items: Iterable[Mapping[str, typing.Any]]) -> str:
    return ', '.join(sorted(i.get('name') or i['id'] for i in items))


# -- set / unset --------------------------------------------------------------

def set_zone(cloud: model.Cloud, name: str, zone: str) -> plan_mod.Plan:
    """Plan putting pool NAME's aggregate in availability zone ZONE.

    Only the zone's own rules: whether the pool's hosts can follow
    (another aggregate's zone, instances) is ``model.zone_check``'s
    question, asked before this plan is applied. A pool without a zone
    gets one for good: Nova takes no zone off an aggregate.
    """
    pool = find_pool(cloud, name)
    nova_rules.check_name(zone, '--zone', colon=False)
    result = plan_mod.Plan(
        _('Changing pool %s') % name,
        rerun=_('the same "openstack gpu pool set %s" command') % name)
    result.add(plan_mod.set_zone(pool['aggregate'], pool['zone'], zone))
    return result


def set_isolation(cloud: model.Cloud, name: str, isolate: bool,
                  update_dependents: bool = False) -> plan_mod.Plan:
    pool = find_pool(cloud, name)
    trait = pool['pool_trait']
    key = pools_mod.TRAIT_PREFIX + trait
    agg = pool['aggregate']
    metadata = _aggregate(cloud, agg)['metadata']
    roots = [r for host in pool['hosts'] for r in roots_of(cloud, host)]
    flag = '--update-dependents'
    if isolate:
        if pool['mode'] == pools_mod.BAREMETAL:
            pools_mod.build_spec(pool['name'], pool['mode'],
                                 resource_class=pool['resource_class'],
                                 isolate=True)
        result = plan_mod.Plan(_('Isolating pool %s') % name,
                               rerun='"openstack gpu pool set %s --isolate"'
                               % name)
        if trait not in _existing_traits(cloud):
            result.add(plan_mod.create_trait(trait))
        for root in roots:
            if trait not in provider_traits(cloud, root):
                result.add(_root_traits_step(cloud, root, [trait]))
        stale = [f for f in flavors_of(cloud, pool)
                 if not trait_keys(f.get('extra_specs'), trait)]
        if stale and not update_dependents:
            raise _error(
                _('Isolating pool %(pool)s would keep its flavors %(flavors)s '
                  'off its hosts: they do not require %(trait)s. Run again '
                  'with %(flag)s to add trait:%(trait)s=required to them, or '
                  'set it yourself ("openstack flavor set --property '
                  'trait:%(trait)s=required <flavor>").'),
                pool=name, flavors=_names(stale), trait=trait, flag=flag)
        for flavor in stale:
            result.add(plan_mod.flavor_specs(
                flavor['name'], flavor.get('extra_specs') or {},
                {'trait:%s' % trait: specs.REQUIRED},
                flavor_id=flavor['id']))
        result.add(plan_mod.set_metadata(agg, metadata,
                                         {key: pools_mod.REQUIRED}))
        return result
    result = plan_mod.Plan(_('Ending isolation of pool %s') % name,
                           rerun='"openstack gpu pool set %s --no-isolate"'
                           % name)
    flavors = flavors_requiring(cloud, trait)
    images = images_requiring(cloud, trait)
    if (flavors or images) and not update_dependents:
        raise _error(
            _('Flavors %(flavors)s and images %(images)s require %(trait)s, '
              'which ending isolation deletes: they would get "No valid '
              'host" (and so would resize, migrate and evacuate of their '
              'servers). Run again with %(flag)s to remove the requirement '
              'from them in the same change, or remove it yourself '
              '("openstack flavor unset --property trait:%(trait)s", '
              '"openstack image unset --property trait:%(trait)s").'),
            flavors=_names(flavors) or _('none'),
            images=_names(images) or _('none'), trait=trait, flag=flag)
    # the aggregate's requirement goes first: the flavors and images still
    # require the trait, which the hosts still have (see the module doc)
    result.add(plan_mod.set_metadata(agg, metadata, {key: None}))
    for flavor in flavors:
        result.add(plan_mod.flavor_specs(
            flavor['name'], flavor.get('extra_specs') or {},
            unset=trait_keys(flavor.get('extra_specs'), trait),
            flavor_id=flavor['id']))
    for image in images:
        result.add(plan_mod.update_image(image, {'trait:%s' % trait: None}))
    for root in roots:
        if trait in provider_traits(cloud, root):
            result.add(plan_mod.remove_traits(root, [trait],
                                              provider_label(cloud, root)))
    if trait in _existing_traits(cloud):
        result.add(plan_mod.delete_trait(trait))
    return result


def _recreate_command(cloud: model.Cloud, pool: Mapping[str, typing.Any],
                      flavor: Mapping[str, typing.Any],
                      projects: Iterable[str]) -> str | None:
    """The ``gpu flavor create`` that makes FLAVOR again, private."""
    reading = specs.read(flavor.get('extra_specs'), cloud.pools)
    args = ['gpu', 'flavor', 'create', '--pool', pool['name'],
            '--vcpus', str(flavor.get('vcpus')), '--ram',
            str(flavor.get('ram')), '--disk', str(flavor.get('disk'))]
    if reading.get('gpus') and reading['gpus'] != 1:
        args += ['--gpus', str(reading['gpus'])]
    args.append('--private')
    for project in projects:
        args += ['--project', project]
    args.append(flavor['name'])
    return argv.command_line(args)


def update_metadata(cloud: model.Cloud, name: str,
                    projects_add: Iterable[str] = (),
                    projects_remove: Collection[str] = (),
                    properties: Mapping[str, str] | None = None,
                    remove_properties: Iterable[str] = (),
                    open_to_all: bool = False,
                    update_dependents: bool = False,
                    allow_public_flavors: bool = False) -> plan_mod.Plan:
    """Plan projects and properties changes (project ids given).

    Limiting an open pool (its first project) is refused while the pool
    has public flavors, unless ``allow_public_flavors``: every other
    project still sees them and gets "No valid host" with them, and Nova
    cannot make a public flavor private (it has to be re-created).
    A change of a key that flavors steer on (``group_policy``, an
    ``aggregate_instance_extra_specs:`` key) is refused unless
    ``update_dependents`` (``steering_steps``).
    """
    pool = find_pool(cloud, name)
    agg = pool['aggregate']
    metadata = _aggregate(cloud, agg)['metadata']
    pools_mod.validate_properties(properties)
    for key in remove_properties:
        pools_mod.validate_properties({key: None})
    current = pool['projects']
    for project in projects_remove:
        if project not in current:
            raise _error(
                _('Project %(project)s is not a project of pool %(pool)s '
                  '(its projects: %(projects)s).'),
                project=project, pool=name,
                projects=', '.join(current) or _('none: open to all'))
    remaining = [p for p in current if p not in projects_remove]
    remaining += [p for p in projects_add if p not in remaining]
    if current and not remaining and not open_to_all:
        raise _error(
            _('Removing %(projects)s would leave pool %(pool)s with no '
              'project, which opens it to every project. Add --open-to-all '
              'if that is what you want, or add the project that should '
              'keep it first.'),
            projects=', '.join(projects_remove), pool=name)
    result = plan_mod.Plan(
        _('Changing pool %s') % name,
        rerun=_('the same "openstack gpu pool set/unset %s" command') % name)
    if not current and remaining:
        public = [f for f in flavors_of(cloud, pool)
                  if f.get('os-flavor-access:is_public', True)]
        if public and not allow_public_flavors:
            raise _error(
                _('Limiting pool %(pool)s to %(projects)s would make its '
                  'public flavors %(flavors)s unusable by every other '
                  'project (they still see them, and get "No valid host"). '
                  'Nova cannot make a public flavor private: delete and '
                  're-create each one private for the pool\'s projects '
                  '(%(fixes)s), or run again with --allow-public-flavors to '
                  'limit the pool anyway.'),
                pool=name, projects=', '.join(remaining),
                flavors=_names(public), fixes='; '.join(
                    '"openstack gpu flavor delete %s", then %s'
                    % (f['name'], _recreate_command(cloud, pool, f, remaining))
                    for f in sorted(public, key=lambda f: f['name'])))
        if public:
            result.warnings.append(
                _('Pool %(pool)s is limited to %(projects)s but keeps public '
                  'flavors (%(flavors)s): other projects get "No valid '
                  'host" with them.')
                % {'pool': name, 'projects': ', '.join(remaining),
                   'flavors': _names(public)})
    if projects_remove:
        losing = []
        for flavor in flavors_of(cloud, pool):
            access = (cloud.access or {}).get(flavor['id']) or []
            for project in projects_remove:
                if project in access:
                    losing.append((flavor, project))
        if losing and not update_dependents:
            raise _error(
                _('Private flavors of pool %(pool)s are given to projects '
                  'you are removing (%(pairs)s): those projects could no '
                  'longer use them. Run again with --update-dependents to '
                  'take that access away in the same change, or use '
                  '"openstack flavor unset --project".'),
                pool=name, pairs=', '.join(
                    '%s: %s' % (f['name'], p) for f, p in losing))
        for flavor, project in losing:
            result.add(plan_mod.remove_access(flavor['name'], project,
                                              flavor_id=flavor['id']))
    changes = pools_mod.project_changes(
        metadata, add=[p for p in projects_add if p not in current],
        remove=projects_remove)
    changes.update(properties or {})
    for key in remove_properties:
        if key in metadata:
            changes[key] = None
    bridge, steps, notes = steering_steps(cloud, pool, changes,
                                          update_dependents)
    result.add(plan_mod.set_metadata(agg, metadata, bridge))
    result.extend(steps)
    result.warnings += notes
    result.add(plan_mod.set_metadata(
        agg, dependents_mod.changed(metadata, bridge), changes))
    return result


def _spec_text(flavor: Mapping[str, typing.Any], keys: Iterable[str]) -> str:
    specs_of = flavor.get('extra_specs') or {}
    return ', '.join(
        '%s=%s' % (spec, specs_of[spec]) for key in keys
        for spec, _req in dependents_mod.spec_keys(specs_of)[key])


def _bridge(old: object, new: object) -> str | None:
    """An aggregate value holding the values of OLD and NEW (None when
    Nova could not take it)."""
    parts = [p.strip() for p in str(old).split(',')]
    parts += [p.strip() for p in str(new).split(',') if p.strip() not in
              parts]
    value = ','.join(parts)
    return value if len(value) <= nova_rules.MAX_LENGTH else None


def _follow(flavor: Mapping[str, typing.Any], keys: Iterable[str],
            changes: Mapping[str, str | None]
            ) -> tuple[dict[str, str], list[str]] | str:
    """(set, unset) of the flavor's specs to follow CHANGES, or the
    reason they cannot (a string)."""
    extra_specs = flavor.get('extra_specs') or {}
    set_specs: dict[str, str]
    unset: list[str]
    set_specs, unset = {}, []
    for key in keys:
        follow = dependents_mod.follow(extra_specs, key, changes[key])
        if follow is None:
            return _('no single value of %(key)s=%(value)s for it to want; '
                     'set the one it should want yourself') % {
                'key': key, 'value': changes[key]}
        set_specs.update(follow[0])
        unset += follow[1]
    for spec, value in set_specs.items():
        try:
            specs.validate_spec(spec, value)
        except exceptions.CommandError as exc:
            return str(exc).rstrip('.')
    after = dependents_mod.changed(extra_specs, dict(
        set_specs, **{spec: None for spec in unset}))
    reading = specs.read(after)
    if len([g for g in reading['resources'] if g]) > 1 and (
            not reading['group_policy']):
        return _('without group_policy, Nova refuses to boot a flavor with '
                 'several numbered request groups')
    return set_specs, unset


def steering_steps(cloud: model.Cloud, pool: Mapping[str, typing.Any],
                   changes: Mapping[str, str | None],
                   update_dependents: bool = False
                   ) -> tuple[dict[str, str], list[plan_mod.Step],
                              list[str]]:
    """(bridge, steps, notes) for the flavors that steer on the aggregate keys
    that CHANGES ({key: value, or None to remove}) change on the pool's
    aggregate (``dependents.broken_by``).

    Refused without ``update_dependents``. Else ``bridge`` ({key: old and
    new values}) is for the aggregate first, then ``steps`` make the
    flavors' specs follow, then the caller sets CHANGES (see the module
    doc for why). Refused too when a flavor cannot follow: a new value
    that is a comma list, one Nova's validators refuse for that spec
    (``group_policy=other``), or removing ``group_policy`` from a flavor
    with several numbered request groups.
    """
    broken = dependents_mod.broken_by(
        cloud.flavors, cloud.aggregates, pool['aggregate'],
        changes)
    if not broken:
        return {}, [], []
    flag = '--update-dependents'
    keys = sorted({k for _flavor, ks in broken for k in ks})
    if not update_dependents:
        raise _error(
            _('Changing %(keys)s on pool %(pool)s would keep flavors '
              '%(flavors)s off its hosts: AggregateInstanceExtraSpecsFilter '
              'matches their extra specs (%(specs)s) against the '
              'aggregate\'s metadata. Run again with %(flag)s to change '
              'those specs in the same change, or change them yourself '
              '("openstack flavor set --property" or "openstack flavor unset '
              '--property").'),
            keys=', '.join(keys), pool=pool['name'],
            flavors=_names([f for f, _ks in broken]), flag=flag,
            specs='; '.join('%s: %s' % (f.get('name') or f['id'],
                                        _spec_text(f, ks))
                            for f, ks in broken))
    metadata = _aggregate(cloud, pool['aggregate'])['metadata']
    steps, stuck = [], []
    for flavor, flavor_keys in broken:
        follow = _follow(flavor, flavor_keys, changes)
        if isinstance(follow, str):
            stuck.append('%s (%s)' % (flavor.get('name') or flavor['id'],
                                      follow))
            continue
        steps.append(plan_mod.flavor_specs(
            flavor['name'], flavor.get('extra_specs') or {}, *follow,
            flavor_id=flavor['id']))
    if stuck:
        raise _error(
            _('%(flag)s cannot keep flavors of pool %(pool)s matching '
              '%(keys)s: %(stuck)s. Change or delete those flavors first, '
              'or leave %(keys)s as it is.'),
            flag=flag, pool=pool['name'], keys=', '.join(keys),
            stuck='; '.join(stuck))
    bridge, notes = {}, []
    for key in keys:
        if changes[key] is None or metadata.get(key) is None:
            continue
        value = _bridge(metadata[key], changes[key])
        if value is not None:
            bridge[key] = value
        else:
            notes.append(
                _('%(key)s cannot hold its old and new values together '
                  '(longer than Nova takes): its flavors cannot schedule to '
                  'pool %(pool)s between two steps of this change.')
                % {'key': key, 'pool': pool['name']})
    return bridge, [s for s in steps if s is not None], notes


def delete(cloud: model.Cloud, name: str, force: bool = False,
           escape: str | None = None,
           allow_servers: bool = False) -> plan_mod.Plan:
    """Plan ``pool delete``. With the servers read (``cloud.servers``),
    refused while a member host runs servers whose flavor steers to this
    pool only (``check_servers``, ESCAPE the way out it offers), unless
    ALLOW_SERVERS."""
    leftover = cloud.aggregate(name)
    if (name not in cloud.pools and leftover is not None
            and not leftover['metadata'] and not leftover['hosts']):
        # what an interrupted delete (or create) left, or an ordinary
        # aggregate nobody filled yet: nothing tells them apart
        if not force:
            raise _error(
                _('Host aggregate %(name)s is empty and has no gpu_* '
                  'metadata: it is not a GPU pool, though an interrupted '
                  '"gpu pool create" or "gpu pool delete" leaves one like '
                  'it. If it is such a leftover, run again with --force to '
                  'delete it; otherwise use "openstack aggregate delete".'),
                name=name)
        result = plan_mod.Plan(_('Deleting pool %s') % name)
        result.warnings.append(
            _('Host aggregate %s is empty and has no metadata (left by an '
              'interrupted create or delete): deleting it.') % name)
        trait = pools_mod.pool_trait(name)
        if trait in _existing_traits(cloud):
            result.add(plan_mod.delete_trait(trait))
        result.add(plan_mod.delete_aggregate(name,
                                              leftover['availability_zone']))
        return result
    pool = find_pool(cloud, name)
    trait = pool['pool_trait']
    dependents = flavors_of(cloud, pool) + [
        f for f in flavors_requiring(cloud, trait)
        if f not in flavors_of(cloud, pool)]
    images = images_requiring(cloud, trait)
    if dependents or images:
        fixes = []
        if dependents:
            fixes.append('"openstack gpu flavor delete %s"'
                         % ' '.join(sorted(f['name'] for f in dependents)))
        if images:
            fixes.append('"openstack image unset --property trait:%s %s"'
                         % (trait, ' '.join(sorted(i['id'] for i in images))))
        raise _error(
            _('Pool %(pool)s still has dependents that would be left '
              'pointing at a pool that no longer exists: flavors '
              '%(flavors)s, images %(images)s. Delete or change them first '
              '(%(fixes)s).'),
            pool=name, flavors=_names(dependents) or _('none'),
            images=_names(images) or _('none'), fixes='; '.join(fixes))
    if pool['hosts'] and not force:
        raise _error(
            _('Pool %(pool)s still has hosts (%(hosts)s): remove them with '
              '"openstack gpu pool remove host", or use --force.'),
            pool=name, hosts=', '.join(pool['hosts']))
    if not allow_servers:
        check_servers(cloud, pool, pool['hosts'], escape)
    result = plan_mod.Plan(_('Deleting pool %s') % name,
                           rerun='"openstack gpu pool delete --force %s"'
                           % name, rerun_fixed=True)
    metadata = dict(_aggregate(cloud, pool['aggregate'])['metadata'])
    _per_host(result, leave_steps, cloud, pool, pool['hosts'], metadata)
    if trait in _existing_traits(cloud):
        result.add(plan_mod.delete_trait(trait))
    result.add(plan_mod.delete_aggregate(
        pool['aggregate'], pool['zone'],
        {k: v for k, v in metadata.items() if v is not None}))
    return result
