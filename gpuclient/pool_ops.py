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

"""Multi-step pool operations: complete, or undone.

Each operation reads what it needs once, checks everything it can before
the first write (pure checks in ``gpuclient.pools``), then writes through
the client layer in steps. A step knows how to undo exactly what it did; a
failure undoes the steps done so far (for a whole create) or for the host
being changed (add/remove host), and the error says what was done.
"""

import logging

from osc_lib import exceptions

from gpuclient import client as client_mod
from gpuclient import pools
from gpuclient.i18n import _

LOG = logging.getLogger(__name__)

DEFAULT_ZONE = 'nova'


class View:
    """What the cloud says about pools and hosts, read once."""

    def __init__(self, client):
        self.client = client
        self.aggregates = client.compute.aggregates()
        self.pools = pools.pools_from_aggregates(self.aggregates)
        self._services = None
        self._hypervisors = None

    @property
    def services(self):
        if self._services is None:
            self._services = self.client.compute.compute_services()
        return self._services

    @property
    def hypervisors(self):
        if self._hypervisors is None:
            self._hypervisors = self.client.compute.hypervisors()
        return self._hypervisors

    def aggregate(self, name):
        for agg in self.aggregates:
            if agg.name == name:
                return agg
        return None

    def pool(self, name):
        if name not in self.pools:
            raise exceptions.CommandError(
                _('No GPU pool named %(name)s. Known pools: %(known)s (see '
                  '"openstack gpu pool list").')
                % {'name': name,
                   'known': ', '.join(sorted(self.pools)) or _('none')})
        return self.pools[name]

    def roots(self, host):
        """Root provider uuids of a Nova host (several for Ironic)."""
        return sorted(
            hv['id'] for hv in self.hypervisors
            if (hv.get('service') or {}).get('host') == host
        )

    def check_hosts_exist(self, hosts):
        known = {svc['host'] for svc in self.services}
        unknown = [h for h in hosts if h not in known]
        if unknown:
            raise exceptions.CommandError(
                _('Unknown compute host(s): %(unknown)s. Compute hosts: '
                  '%(known)s (names as in "openstack compute service '
                  'list").')
                % {'unknown': ', '.join(unknown),
                   'known': ', '.join(sorted(known)) or _('none')})

    def check_zone(self, zone, hosts, own_aggregate=None):
        """Nova's rules: one zone per host; no move with instances."""
        services = {svc['host']: svc for svc in self.services}
        for host in hosts:
            for agg in self.aggregates:
                if agg.name == own_aggregate or host not in (agg.hosts or []):
                    continue
                other = agg.availability_zone
                if zone and other and other != zone:
                    raise exceptions.CommandError(
                        _('Host %(host)s is in availability zone %(other)s '
                          '(aggregate %(agg)s) and a host can be in one zone '
                          'only: use --zone %(other)s or take it out of '
                          '%(agg)s first.')
                        % {'host': host, 'other': other, 'agg': agg.name})
            current = (services.get(host) or {}).get('zone') or DEFAULT_ZONE
            if zone and current != zone and (
                    self.client.compute.host_has_servers(host)):
                raise exceptions.CommandError(
                    _('Host %(host)s has instances and is in zone '
                      '%(current)s: Nova refuses to move a host with '
                      'instances to zone %(zone)s. Move or delete them '
                      'first, or use --zone %(current)s.')
                    % {'host': host, 'current': current, 'zone': zone})

    def snapshot(self, hosts, resource_class):
        roots = set()
        for host in hosts:
            roots.update(self.roots(host))
        return self.client.placement.gpu_snapshot(
            {resource_class}, wanted_roots=roots, with_traits=True
        )

    def check_can_join(self, pool, hosts, snapshot):
        problems = []
        for host in hosts:
            problems += pools.host_problems(
                pool, host, self.roots(host), snapshot, self.pools)
        if problems:
            raise exceptions.CommandError(' '.join(problems))


class Step:
    """One write and how to undo it."""

    def __init__(self, what, do, undo=None):
        self.what = what
        self._do = do
        self._undo = undo
        self.result = None

    def do(self):
        self.result = self._do()

    def undo(self):
        if self._undo is not None:
            self._undo(self.result)


def run_steps(steps):
    """Run steps in order; on failure undo the done ones, then re-raise."""
    done = []
    try:
        for step in steps:
            step.do()
            done.append(step)
    except Exception:
        unwind(done)
        raise
    return done


def unwind(done):
    for step in reversed(done):
        try:
            step.undo()
        except Exception as exc:  # keep undoing the rest
            LOG.error(_('Could not undo "%(what)s": %(error)s'),
                      {'what': step.what, 'error': exc})


def _trait_step(placement, uuid, trait, add=True):
    def do():
        if add:
            return placement.update_traits(uuid, add=[trait])[0]
        return placement.update_traits(uuid, remove=[trait])[1]

    def undo(changed):
        if not changed:
            return
        if add:
            placement.update_traits(uuid, remove=changed)
        else:
            placement.update_traits(uuid, add=changed)

    verb = _('add') if add else _('remove')
    return Step('%s %s on %s' % (verb, trait, uuid), do, undo)


def join_steps(view, aggregate, pool, host, snapshot):
    """Steps that make ``host`` a member of ``pool``."""
    compute, placement = view.client.compute, view.client.placement
    roots = view.roots(host)
    steps = []
    if host not in (aggregate.hosts or []):
        steps.append(Step(
            _('add %s to the aggregate') % host,
            lambda: compute.add_host(aggregate, host),
            lambda _r: compute.remove_host(aggregate, host)))
    if pool['isolate']:
        for root in roots:
            steps.append(_trait_step(placement, root, pool['pool_trait']))
    if pool.get('type_trait'):
        for uuid in pools.vgpu_children(snapshot, roots):
            steps.append(_trait_step(placement, uuid, pool['type_trait']))
    return steps


def leave_steps(view, aggregate, pool, host, snapshot):
    """Steps that take ``host`` out of ``pool``, and only this pool's marks.

    The isolation trait is the pool's own. A type trait stays where another
    pool holding the host serves the same type.
    """
    compute, placement = view.client.compute, view.client.placement
    roots = view.roots(host)
    steps = []
    if pool.get('type_trait'):
        shared = any(
            other['name'] != pool['name'] and host in other['hosts']
            and other.get('type_trait') == pool['type_trait']
            for other in view.pools.values())
        if not shared:
            for uuid in pools.vgpu_children(snapshot, roots):
                steps.append(_trait_step(placement, uuid,
                                         pool['type_trait'], add=False))
    if pool['isolate']:
        for root in roots:
            steps.append(_trait_step(placement, root, pool['pool_trait'],
                                     add=False))
    steps.append(Step(
        _('remove %s from the aggregate') % host,
        lambda: compute.remove_host(aggregate, host),
        lambda _r: compute.add_host(aggregate, host)))
    return steps


def _needed_traits(pool):
    needed = set()
    if pool['isolate']:
        needed.add(pool['pool_trait'])
    if pool.get('type_trait'):
        needed.add(pool['type_trait'])
    return needed


def _pool_of(spec, aggregate_name, hosts):
    pool = dict(spec)
    pool['aggregate'] = aggregate_name
    pool['pool_trait'] = pools.pool_trait(spec['name'])
    pool['type_trait'] = pools.type_trait_of(spec)
    pool['hosts'] = list(hosts)
    return pool


def _describe(differences):
    return '; '.join(
        '%s: %s (requested %s)' % (field, have, want)
        for field, want, have in differences)


def create(client, spec, hosts):
    """Create a pool. Returns (pool, created): created False = no-op."""
    view = View(client)
    hosts = list(dict.fromkeys(hosts))
    existing = view.aggregate(spec['name'])
    if existing is not None:
        if not pools.is_pool(existing):
            raise exceptions.CommandError(
                _('A host aggregate named %s already exists and is not a '
                  'GPU pool: gpuclient does not touch ordinary aggregates. '
                  'Choose another pool name.') % spec['name'])
        pool = pools.pool_from_aggregate(existing)
        diffs = pools.differences(spec, pool, hosts)
        if diffs:
            raise exceptions.CommandError(
                _('Pool %(name)s already exists with other settings: '
                  '%(diff)s. Use "openstack gpu pool set" or "add host", or '
                  'delete it first.')
                % {'name': spec['name'], 'diff': _describe(diffs)})
        return pool, False
    pools.check_trait_collision(spec['name'], view.pools)
    view.check_hosts_exist(hosts)
    view.check_zone(spec['zone'], hosts)
    pool = _pool_of(spec, spec['name'], hosts)
    snapshot = view.snapshot(hosts, pool['resource_class'])
    view.check_can_join(pool, hosts, snapshot)

    done = []
    try:
        aggregate = client.compute.create_aggregate(spec['name'],
                                                    spec['zone'])
        done.append(Step(_('create the aggregate'), lambda: None,
                         lambda _r: client.compute.delete_aggregate(
                             aggregate)))
        aggregate = client.compute.set_aggregate_metadata(
            aggregate, pools.metadata_for(spec))
        made = client.placement.ensure_traits(_needed_traits(pool))
        done.append(Step(_('create traits'), lambda: None, lambda _r: [
            client.placement.delete_trait(t) for t in sorted(made)]))
        for host in hosts:
            done += run_steps(join_steps(view, aggregate, pool, host,
                                         snapshot))
    except exceptions.CommandError as exc:
        unwind(done)
        raise exceptions.CommandError(
            _('Creating pool %(name)s failed, and what it had made was '
              'removed: %(error)s') % {'name': spec['name'], 'error': exc}
        ) from exc
    aggregate = client.compute.get_aggregate(aggregate)
    return pools.pool_from_aggregate(aggregate), True


def add_hosts(client, name, hosts):
    """Add hosts one by one; a failed host is left as it was."""
    view = View(client)
    pool = view.pool(name)
    aggregate = view.aggregate(pool['aggregate'])
    hosts = list(dict.fromkeys(hosts))
    view.check_hosts_exist(hosts)
    view.check_zone(pool['zone'], hosts, own_aggregate=pool['aggregate'])
    snapshot = view.snapshot(hosts, pool['resource_class'])
    view.check_can_join(pool, hosts, snapshot)
    _per_host(view, hosts, lambda host: join_steps(
        view, aggregate, pool, host, snapshot), _('Adding'), name)
    if pool['isolate'] or pool.get('type_trait'):
        client.placement.ensure_traits(_needed_traits(pool))
    return pools.pool_from_aggregate(client.compute.get_aggregate(aggregate))


def remove_hosts(client, name, hosts):
    view = View(client)
    pool = view.pool(name)
    aggregate = view.aggregate(pool['aggregate'])
    hosts = list(dict.fromkeys(hosts))
    strangers = [h for h in hosts if h not in pool['hosts']]
    if strangers:
        raise exceptions.CommandError(
            _('Not in pool %(pool)s: %(hosts)s. Its hosts: %(members)s.')
            % {'pool': name, 'hosts': ', '.join(strangers),
               'members': ', '.join(pool['hosts']) or _('none')})
    snapshot = view.snapshot(hosts, pool['resource_class'])
    _per_host(view, hosts, lambda host: leave_steps(
        view, aggregate, pool, host, snapshot), _('Removing'), name)
    return pools.pool_from_aggregate(client.compute.get_aggregate(aggregate))


def _per_host(view, hosts, steps_for, verb, name):
    done = []
    for index, host in enumerate(hosts):
        try:
            run_steps(steps_for(host))
        except exceptions.CommandError as exc:
            raise exceptions.CommandError(
                _('%(verb)s host %(host)s (pool %(pool)s) failed and was '
                  'undone for that host: %(error)s Done: %(done)s. Not '
                  'attempted: %(left)s.')
                % {'verb': verb, 'host': host, 'pool': name, 'error': exc,
                   'done': ', '.join(done) or _('none'),
                   'left': ', '.join(hosts[index + 1:]) or _('none')}
            ) from exc
        done.append(host)
    return done


def set_isolation(client, name, isolate):
    """Turn isolation on (traits first, then metadata) or off."""
    view = View(client)
    pool = view.pool(name)
    if pool['isolate'] == isolate:
        return pool, False
    if isolate and pool['mode'] == pools.BAREMETAL:
        pools.build_spec(pool['name'], pool['mode'],
                         resource_class=pool['resource_class'], isolate=True)
    aggregate = view.aggregate(pool['aggregate'])
    trait = pool['pool_trait']
    key = pools.TRAIT_PREFIX + trait
    placement = client.placement
    roots = [r for host in pool['hosts'] for r in view.roots(host)]
    steps = []
    if isolate:
        made = placement.ensure_traits({trait})
        steps += [_trait_step(placement, r, trait) for r in roots]
        steps.append(Step(
            _('set %s on the aggregate') % key,
            lambda: client.compute.set_aggregate_metadata(
                aggregate, {key: pools.REQUIRED}),
            lambda _r: client.compute.set_aggregate_metadata(
                aggregate, {key: None})))
    else:
        made = set()
        steps.append(Step(
            _('remove %s from the aggregate') % key,
            lambda: client.compute.set_aggregate_metadata(
                aggregate, {key: None}),
            lambda _r: client.compute.set_aggregate_metadata(
                aggregate, {key: pools.REQUIRED})))
        steps += [_trait_step(placement, r, trait, add=False)
                  for r in roots]
    try:
        run_steps(steps)
    except exceptions.CommandError:
        for t in made:
            placement.delete_trait(t)
        raise
    if not isolate:
        placement.delete_trait(trait)
    return pools.pool_from_aggregate(
        client.compute.get_aggregate(aggregate)), True


def update_metadata(client, name, projects_add=(), projects_remove=(),
                    properties=None, remove_properties=()):
    """Projects and free properties of a pool, in one metadata write."""
    view = View(client)
    pool = view.pool(name)
    aggregate = view.aggregate(pool['aggregate'])
    pools.validate_properties(properties)
    for key in remove_properties:
        pools.validate_properties({key: None})
    projects = list(pool['projects'])
    for project in projects_add:
        pid = client.project_id(project)
        if pid not in projects:
            projects.append(pid)
    for project in projects_remove:
        pid = project if project in projects else client.project_id(project)
        if pid not in projects:
            raise exceptions.CommandError(
                _('Project %(project)s is not a project of pool %(pool)s.')
                % {'project': project, 'pool': name})
        projects.remove(pid)
    old = pool['metadata']
    new = {k: v for k, v in old.items()
           if not k.startswith(pools.TENANT_KEY)
           and k not in remove_properties}
    new.update(pools.project_metadata(projects))
    new.update(properties or {})
    changes = pools.metadata_changes(old, new)
    if changes:
        aggregate = client.compute.set_aggregate_metadata(aggregate, changes)
    return pools.pool_from_aggregate(aggregate), bool(changes)


def delete(client, name, force=False):
    view = View(client)
    pool = view.pool(name)
    aggregate = view.aggregate(pool['aggregate'])
    if pool['hosts']:
        if not force:
            raise exceptions.CommandError(
                _('Pool %(pool)s still has hosts (%(hosts)s): remove them '
                  'with "openstack gpu pool remove host", or use --force.')
                % {'pool': name, 'hosts': ', '.join(pool['hosts'])})
        remove_hosts(client, name, pool['hosts'])
        aggregate = client.compute.get_aggregate(aggregate)
    client.compute.delete_aggregate(aggregate)
    for trait in (pool['pool_trait'], pool.get('type_trait')):
        if trait and trait.startswith('CUSTOM_GPU_POOL_'):
            client.placement.delete_trait(trait)


def members_of(client, pool):
    """Placement aggregate members, or None when it cannot be read."""
    if not pool.get('aggregate_uuid'):
        return None
    try:
        return client.placement.members_of(pool['aggregate_uuid'])
    except client_mod.APIError as exc:
        LOG.debug('cannot read placement aggregate: %s', exc)
        return None
