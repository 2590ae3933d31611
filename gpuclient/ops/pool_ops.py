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

"""Pool writes: observe, plan, apply.

Each operation reads what it depends on once, into one ``model.Cloud``
(``snapshot.read_aggregates`` first, then what the write needs: services,
hypervisors, the affected provider trees with their traits, and the
flavors and images a change can affect), asks ``gpuclient.rules.pool_plan``
for the steps, and either returns the plan (``dry_run``) or applies it
with ``gpuclient.ops.journal``. Because the plan is computed from what the
cloud holds, Placement included, re-running an interrupted or failed
command finishes it.
"""

from __future__ import annotations

import collections.abc
import logging
import typing

from osc_lib import exceptions

from gpuclient.i18n import _
from gpuclient.ops import host_ops
from gpuclient.ops import journal
from gpuclient.ops import snapshot
from gpuclient.rules import model
from gpuclient.rules import plan as plan_mod
from gpuclient.rules import pool_plan
from gpuclient.rules import pools
from gpuclient.rules import specs

if typing.TYPE_CHECKING:
    from gpuclient.cloud.client import GpuClient

LOG = logging.getLogger(__name__)

# an ApplyError a signal caused: v1/pool.py's N-of-M delete stops there
interrupted = journal.interrupted


def check_zone(
    client: GpuClient, cloud: model.Cloud, zone: str | None,
    hosts: collections.abc.Iterable[str], own_aggregate: str | None = None,
) -> None:
    """Nova's zone rules (``model.zone_check``) for HOSTS put in ZONE,
    over CLOUD (a ``model.Cloud``; its services read unless they were); a
    host that would move zone is asked whether it has instances (one
    request per such host)."""
    snapshot.read_services(client, cloud)
    for host in hosts:
        current = model.zone_check(cloud, zone, host, own_aggregate)
        if current and snapshot.host_has_servers(client, host):
            raise model.zone_move_refused(host, current, zone)


def _resolve_hosts(
    client: GpuClient, cloud: model.Cloud,
    names: collections.abc.Iterable[str],
    members: collections.abc.Iterable[str] | None = None,
) -> list[str]:
    """The compute hosts NAMES mean (``snapshot.resolve_hosts``); the
    notes go to stderr."""
    hosts, notes = snapshot.resolve_hosts(client, cloud, names, members)
    for note in notes:
        LOG.warning(note)
    return hosts


def _traits_of(pool: dict[str, typing.Any]) -> set[str]:
    return {t for t in (pool['pool_trait'], pool.get('type_trait')) if t}


def _finish(client: GpuClient, plan: plan_mod.Plan, dry_run: bool,
            on_step: journal.OnStep | None = None) -> plan_mod.Plan:
    """Apply (or, for a dry run, only return) a plan, once Nova's and
    Placement's input rules pass on every step (nothing written else)."""
    return journal.finish(client, plan, dry_run=dry_run, on_step=on_step)


def _read_back(client: GpuClient, name: str) -> dict[str, typing.Any]:
    return pool_plan.find_pool(snapshot.read_aggregates(client, warn=False),
                               name)


def create(
    client: GpuClient,
    spec: dict[str, typing.Any],
    hosts: collections.abc.Iterable[str],
    dry_run: bool = False,
    on_step: journal.OnStep | None = None,
    projects: collections.abc.Iterable[str] | None = None,
    project_domain: str | None = None,
) -> tuple[dict[str, typing.Any] | None, plan_mod.Plan]:
    """Create a pool, or finish one. Returns (pool or None, plan).

    PROJECTS (names or IDs, in PROJECT_DOMAIN), when given, are resolved
    first and limit the pool to them (the spec's ``projects``).
    """
    if projects is not None:
        spec = dict(spec, projects=snapshot.project_ids(client, projects,
                                                        project_domain))
    cloud = snapshot.read_aggregates(client)
    hosts = _resolve_hosts(client, cloud, hosts)
    existing = cloud.aggregate(spec['name'])
    check_zone(client, cloud, spec['zone'], hosts,
               own_aggregate=existing['name'] if existing else None)
    traits = {pools.pool_trait(spec['name'])} if spec['isolate'] else set()
    if pools.type_trait_of(spec):
        # not None: checked on the line above
        traits.add(pools.type_trait_of(spec))  # type: ignore[arg-type]
    snapshot.read_for_hosts(client, cloud, hosts, spec['resource_class'],
                            traits)
    plan = pool_plan.create(cloud, spec, hosts)
    _finish(client, plan, dry_run, on_step)
    return (None if dry_run else _read_back(client, spec['name'])), plan


def add_hosts(
    client: GpuClient, name: str, hosts: collections.abc.Iterable[str],
    dry_run: bool = False, on_step: journal.OnStep | None = None,
) -> tuple[dict[str, typing.Any] | None, plan_mod.Plan]:
    cloud = snapshot.read_aggregates(client)
    pool = pool_plan.find_pool(cloud, name)
    name = pool['name']
    hosts = _resolve_hosts(client, cloud, hosts)
    check_zone(client, cloud, pool['zone'], hosts,
               own_aggregate=pool['aggregate'])
    snapshot.read_for_hosts(client, cloud, hosts, pool['resource_class'],
                            _traits_of(pool))
    plan = pool_plan.add_hosts(cloud, name, hosts)
    _finish(client, plan, dry_run, on_step)
    return (None if dry_run else _read_back(client, name)), plan


def remove_hosts(
    client: GpuClient, name: str, hosts: collections.abc.Iterable[str],
    dry_run: bool = False, on_step: journal.OnStep | None = None,
    allow_servers: bool = False,
) -> tuple[dict[str, typing.Any] | None, plan_mod.Plan]:
    """Take HOSTS out of pool NAME; refused while a host runs servers
    whose flavor steers to this pool only, unless ALLOW_SERVERS (every
    project's servers read once, paged: ``pool_plan.check_servers``)."""
    cloud = snapshot.read_aggregates(client)
    pool = pool_plan.find_pool(cloud, name)
    name = pool['name']
    hosts = _resolve_hosts(client, cloud, hosts, members=pool['hosts'])
    snapshot.read_for_hosts(client, cloud, hosts, pool['resource_class'],
                            servers=not allow_servers)
    plan = pool_plan.remove_hosts(cloud, name, hosts,
                                  allow_servers=allow_servers)
    _finish(client, plan, dry_run, on_step)
    return (None if dry_run else _read_back(client, name)), plan


def set_isolation(
    client: GpuClient, name: str, isolate: bool,
    update_dependents: bool = False, dry_run: bool = False,
    on_step: journal.OnStep | None = None,
) -> tuple[dict[str, typing.Any] | None, plan_mod.Plan]:
    """Turn isolation on (or repair it) or off."""
    cloud = snapshot.read_aggregates(client)
    pool = pool_plan.find_pool(cloud, name)
    name = pool['name']
    snapshot.read_for_hosts(client, cloud, pool['hosts'],
                            pool['resource_class'], {pool['pool_trait']},
                            flavors=True, images=not isolate)
    plan = pool_plan.set_isolation(cloud, name, isolate,
                                   update_dependents=update_dependents)
    _finish(client, plan, dry_run, on_step)
    return (None if dry_run else _read_back(client, name)), plan


def update_metadata(
    client: GpuClient,
    name: str,
    projects_add: collections.abc.Iterable[str] = (),
    projects_remove: collections.abc.Iterable[str] = (),
    properties: dict[str, str] | None = None,
    remove_properties: collections.abc.Iterable[str] = (),
    open_to_all: bool = False,
    update_dependents: bool = False,
    dry_run: bool = False,
    on_step: journal.OnStep | None = None,
    project_domain: str | None = None,
    allow_public_flavors: bool = False,
) -> tuple[dict[str, typing.Any] | None, plan_mod.Plan]:
    """Projects and free properties of a pool, in one metadata write.

    Projects are one metadata key each, so concurrent changes never lose
    one; the result is read back and checked. Two concurrent removals of
    the last two projects would open the pool: the read-back sees a pool
    with no project that this command did not open, and puts back the
    project(s) it removed.
    """
    cloud = snapshot.read_aggregates(client)
    pool = pool_plan.find_pool(cloud, name)
    name = pool['name']
    add = snapshot.project_ids(client, projects_add, project_domain)
    remove = []
    for project in projects_remove:
        pid = project if project in pool['projects'] else (
            snapshot.project_id(client, project, project_domain))
        if pid not in remove:
            remove.append(pid)
    limiting = bool(add) and not pool['projects']
    # flavors may steer on any key that changes (pool_plan.steering_steps)
    snapshot.read_for_hosts(client, cloud, (),
                            flavors=bool(remove or properties
                                         or remove_properties) or limiting,
                            access_for=pool if remove else None)
    plan = pool_plan.update_metadata(
        cloud, name, projects_add=add, projects_remove=remove,
        properties=properties, remove_properties=remove_properties,
        open_to_all=open_to_all, update_dependents=update_dependents,
        allow_public_flavors=allow_public_flavors)
    _finish(client, plan, dry_run, on_step)
    if dry_run:
        return None, plan
    after = _read_back(client, name)
    if remove and not after['projects'] and not open_to_all:
        _restore_projects(client, after, remove)
    return _check_projects(after, add, remove), plan


def _restore_projects(client: GpuClient, pool: dict[str, typing.Any],
                      removed: list[str]) -> typing.NoReturn:
    """The pool lost its last project to a concurrent change while this
    command removed some: put those back (the pool stays limited) and
    say so."""
    agg = snapshot.read_aggregates(client, warn=False).aggregate(
        pool['aggregate'])
    if agg is None:
        # the other change deleted the pool: nothing is left to limit
        raise exceptions.CommandError(
            _('Pool %(pool)s had no project left after removing '
              '%(removed)s, and its aggregate %(agg)s is gone now: another '
              'change deleted the pool at the same time. Nothing was put '
              'back; check with "openstack gpu pool list".')
            % {'pool': pool['name'], 'removed': ', '.join(removed),
               'agg': pool['aggregate']})
    # a plan of its own, applied like every write (journal, undo)
    restore = plan_mod.Plan(_('Putting back projects of pool %s')
                            % pool['name'])
    restore.add(plan_mod.set_metadata(
        pool['aggregate'], agg['metadata'],
        {pools.project_key(p): p for p in removed}))
    journal.run(client, restore)
    raise exceptions.CommandError(
        _('Pool %(pool)s had no project left after removing %(removed)s: '
          'another change removed its other projects at the same time, '
          'which opens the pool to every project. %(removed)s was put back, '
          'so the pool stays limited to it. Check its projects ("openstack '
          'gpu pool show %(pool)s"), add the project that should keep the '
          'pool, then remove %(removed)s again (or use --open-to-all if the '
          'pool should open).')
        % {'pool': pool['name'], 'removed': ', '.join(removed)})


def _check_projects(
    pool: dict[str, typing.Any], add: collections.abc.Iterable[str],
    remove: collections.abc.Iterable[str],
) -> dict[str, typing.Any]:
    """The read-back pool, after checking the project change is there."""
    lost = [p for p in add if p not in pool['projects']]
    kept = [p for p in remove if p in pool['projects']]
    if lost or kept:
        raise exceptions.CommandError(
            _('Pool %(pool)s does not show the project change after '
              'writing it (missing: %(lost)s; still there: %(kept)s): '
              'something changed it at the same time. Run the command '
              'again.')
            % {'pool': pool['name'], 'lost': ', '.join(lost) or _('none'),
               'kept': ', '.join(kept) or _('none')})
    return pool


def set_pool(
    client: GpuClient,
    name: str,
    isolate: bool | None = None,
    projects_add: collections.abc.Iterable[str] = (),
    properties: dict[str, str] | None = None,
    update_dependents: bool = False,
    dry_run: bool = False,
    on_step: journal.OnStep | None = None,
    project_domain: str | None = None,
    allow_public_flavors: bool = False,
    zone: str | None = None,
) -> tuple[dict[str, typing.Any] | None, plan_mod.Plan]:
    """``gpu pool set``: isolation, projects, properties and the zone in
    one plan (the zone last: a first zone is not undone)."""
    if zone is None and isolate is None:
        return update_metadata(
            client, name, projects_add=projects_add, properties=properties,
            update_dependents=update_dependents, dry_run=dry_run,
            on_step=on_step, project_domain=project_domain,
            allow_public_flavors=allow_public_flavors)
    if zone is None and not projects_add and not properties:
        assert isolate is not None  # noqa: S101 - zone or isolate given
        return set_isolation(client, name, isolate, update_dependents,
                             dry_run=dry_run, on_step=on_step)
    cloud = snapshot.read_aggregates(client)
    pool = pool_plan.find_pool(cloud, name)
    name = pool['name']
    add = snapshot.project_ids(client, projects_add, project_domain)
    if zone is not None:
        # Nova's rules (one zone per host, no move with instances), before
        # anything is written
        check_zone(client, cloud, zone, pool['hosts'],
                   own_aggregate=pool['aggregate'])
    snapshot.read_for_hosts(client, cloud, pool['hosts'],
                            pool['resource_class'], {pool['pool_trait']},
                            flavors=True, images=isolate is False)
    parts = []
    if isolate is not None:
        parts.append(pool_plan.set_isolation(
            cloud, name, isolate, update_dependents=update_dependents))
    if add or properties:
        parts.append(pool_plan.update_metadata(
            cloud, name, projects_add=add, properties=properties,
            update_dependents=update_dependents,
            allow_public_flavors=allow_public_flavors))
    if zone is not None:
        parts.append(pool_plan.set_zone(cloud, name, zone))
    plan = plan_mod.Plan(_('Changing pool %s') % name,
                         [s for part in parts for s in part.steps],
                         [w for part in parts for w in part.warnings],
                         rerun=_('the same "openstack gpu pool set %s" '
                                 'command') % name)
    _finish(client, plan, dry_run, on_step)
    if dry_run:
        return None, plan
    return _check_projects(_read_back(client, name), add, ()), plan


def delete(
    client: GpuClient, name: str, force: bool = False, dry_run: bool = False,
    on_step: journal.OnStep | None = None, allow_servers: bool = False,
) -> plan_mod.Plan:
    """Delete pool NAME; with FORCE, its hosts are taken out first,
    refused while one runs servers whose flavor steers to this pool only,
    unless ALLOW_SERVERS (every project's servers read once:
    ``pool_plan.check_servers``)."""
    cloud = snapshot.read_aggregates(client)
    if name not in cloud.pools and cloud.aggregate(name) is None:
        # an aggregate ID or UUID
        name = pool_plan.find_pool(cloud, name)['name']
    if name not in cloud.pools and cloud.aggregate(name) is not None:
        snapshot.read_for_hosts(client, cloud, (),
                                traits={pools.pool_trait(name)})
    else:
        pool = pool_plan.find_pool(cloud, name)
        snapshot.read_for_hosts(
            client, cloud, pool['hosts'], pool['resource_class'],
            {pool['pool_trait']}, flavors=True, images=True,
            servers=(force and bool(pool['hosts']) and not allow_servers))
    plan = pool_plan.delete(cloud, name, force=force,
                            allow_servers=allow_servers)
    _finish(client, plan, dry_run, on_step)
    return plan


def list_pools(
    client: GpuClient, mode: str | None = None, long: bool = False,
) -> tuple[list[dict[str, typing.Any]], list[dict[str, typing.Any]] | None]:
    """(pools of MODE, sorted by name; host rows or None) of ``gpu pool
    list``: the aggregates alone, or with LONG one snapshot (the pools
    and their hosts' GPU figures)."""
    cloud = None
    if long:
        cloud = snapshot.read(client, mapped_only=True, with_traits=False)
        found, problems = cloud.pools, cloud.problems
    else:
        listed = snapshot.read_aggregates(client, warn=False)
        found, problems = listed.pools, listed.problems
    snapshot.warn_problems(problems)
    selected = [found[name] for name in sorted(found)
                if not mode or found[name]['mode'] == mode]
    rows = None
    if long:
        assert cloud is not None  # noqa: S101 - read above with LONG
        rows, notes = host_ops.rows_of(client, cloud)
        for note in notes:
            LOG.debug(note)
    return selected, rows


def show(client: GpuClient, name: str) -> dict[str, typing.Any]:
    """What ``gpu pool show`` shows: {pool, gpus, flavors, drift}; where
    the cloud runs Blazar, the hosts it holds say so in ``gpus``.

    One snapshot of the cloud, its Placement part limited to the pool's
    hosts (so the pool is found before Placement is read).
    """
    listed = snapshot.read_aggregates(client)
    pool = pool_plan.find_pool(listed, name)
    cloud = snapshot.read(client, wanted_hosts=set(pool['hosts']),
                          with_traits=True, with_flavors=True,
                          aggregates=listed.aggregates)
    rows, _notes = host_ops.rows_of(client, cloud, pool=pool['name'])
    host_roots = {host: sorted(roots) for host, roots in
                  cloud.host_roots().items() if host in pool['hosts']}
    # read with Placement
    drift = pools.drift(pool, host_roots, cloud.placement,  # type: ignore[arg-type]
                        snapshot.members_of(client, pool))
    assert cloud.flavors is not None  # noqa: S101 - read with flavors
    flavors = sorted(
        flavor['name'] for flavor in cloud.flavors
        if pool['name'] in specs.matching_pools(
            specs.read(flavor.get('extra_specs'), cloud.pools),
            cloud.pools))
    return {'pool': pool,
            'gpus': pools.gpu_figures(rows, pool, cloud.held_hosts()),
            'flavors': flavors, 'drift': drift}
