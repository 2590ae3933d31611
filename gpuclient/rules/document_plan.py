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

"""Pure: the plan of ``gpu apply``, from the cloud to a document.

One ``plan.Plan`` for the whole document, made of the steps the single
commands' planners give (``pool_plan``, ``flavor_plan``, ``images``,
``quota``), each asked about the cloud as the steps before it leave it:
the plan's state, a copy of the ``model.Cloud`` read (``state_of``),
holds what was read, and every step taken into the plan is simulated in
it (``simulate``), so the next planner observes the pool that an earlier
step created, the flavor specs an isolation change already set, the
registered limit a project limit needs. The same state is, at the end,
the cloud as it would be after the apply, which ``fit_problems`` asks
the questions of ``gpu capacity list``.

Order (``document.diff``'s rows drive it): pools (their traits, the
aggregate, the hosts) before flavors, flavors before images and quotas;
then, with prune, the removals in the reverse order: quotas (project
limits before registered ones), images' GPU properties, flavors, pools.

Every refusal of a single command is a refusal here, with the object's
label in front; all of them are collected and said at once
(``Refused``), before anything is written.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Container
from collections.abc import Iterable
from collections.abc import Mapping
import copy
import dataclasses
import typing

from osc_lib import exceptions

from gpuclient.i18n import _
from gpuclient.rules import capacity
from gpuclient.rules import checks
from gpuclient.rules import document
from gpuclient.rules import flavor_plan
from gpuclient.rules import images as images_mod
from gpuclient.rules import operations
from gpuclient.rules import plan as plan_mod
from gpuclient.rules import pool_plan
from gpuclient.rules import pools as pools_mod
from gpuclient.rules import quota as quota_mod
from gpuclient.rules import specs

if typing.TYPE_CHECKING:
    from gpuclient.rules import model

# the ID (flavor, limit) or uuid (aggregate) of what the plan creates,
# in the plan's state: Nova and Keystone give the real one when the step
# runs
NEW = operations.NEW


class Refused(exceptions.CommandError):
    """The document cannot be applied: every reason, each with its
    object, in one message."""

    def __init__(self, problems: Iterable[str]) -> None:
        self.problems = list(problems)
        super().__init__(
            _('The document cannot be applied (%(n)d problem(s)); nothing '
              'was changed: %(list)s')
            % {'n': len(self.problems), 'list': ' | '.join(self.problems)})


def state_of(cloud: model.Cloud) -> model.Cloud:
    """The plan's state at its start: the GPU layer of CLOUD (the one
    model of the cloud as read, with Placement, flavors, images, the
    private flavors' access, Keystone's limits, the existing traits and,
    when needed, the servers), as a copy of CLOUD whose aggregates,
    Placement (its provider traits), existing traits, flavors with their
    extra specs, access lists, images and Keystone's limits are its own:
    the plan's steps change them (``simulate``), and at the end it is
    the cloud as the plan leaves it. What no step changes (hypervisors,
    services, the resource classes, the servers) is CLOUD's; what was not
    read is empty."""
    return dataclasses.replace(
        cloud, placement=copy.deepcopy(cloud.placement),
        existing_traits=set(cloud.existing_traits or ()),
        flavors=[dict(f, extra_specs=dict(f.get('extra_specs') or {}))
                 for f in cloud.flavors or ()],
        access={k: list(v) for k, v in (cloud.access or {}).items()},
        images=[dict(i) for i in cloud.images or ()],
        registered={k: dict(v) for k, v in (cloud.registered or {}).items()},
        limits=[dict(i) for i in cloud.limits or ()])


def simulate(world: model.Cloud, step: plan_mod.Step) -> None:
    """Make WORLD (a plan's state: ``state_of``) what the cloud is once
    STEP has run: the effect its operation declares (``operations``)."""
    step.operation.effect(world)


def _observed(world: model.Cloud) -> model.Cloud:
    """WORLD as a pool planner is given it: its flavors, access lists and
    images copied (and its aggregates: ``model.Cloud`` copies them), so
    that no step holds what the simulation changes."""
    return dataclasses.replace(
        world, flavors=copy.deepcopy(world.flavors),
        images=copy.deepcopy(world.images),
        access=copy.deepcopy(world.access))


def flavor_named(world: model.Cloud,
                 name: str) -> dict[str, typing.Any] | None:
    """The one flavor of WORLD named NAME (by name among names), or
    None."""
    found = [f for f in world.flavors or () if f.get('name') == name]
    if len(found) > 1:
        raise exceptions.CommandError(
            _('%(n)d flavors are named %(name)s: delete the extra ones '
              '(openstack flavor delete <ID>) first.')
            % {'n': len(found), 'name': name})
    return found[0] if found else None


def image_named(world: model.Cloud, key: str) -> dict[str, typing.Any]:
    """The image of WORLD a document names KEY (its ID, else its name)."""
    images = world.images or ()
    for image in images:
        if image['id'] == key:
            return image
    named = [i for i in images if i.get('name') == key]
    if len(named) != 1:
        raise exceptions.CommandError(
            _('no single image with name or ID %s') % key)
    return named[0]


def _stranded_escape(pool: str, hosts: Iterable[str]) -> str:
    """What a refusal of ``pool_plan.check_servers`` offers in an apply
    (which has no --allow-servers: a document cannot say "and strand
    them"): the single command, by hand, before the apply."""
    return _('if they are to stay where they are, take the host out by '
             'hand first ("openstack gpu pool remove host --allow-servers '
             '%(pool)s %(hosts)s") and apply again') % {
                 'pool': pool, 'hosts': ' '.join(hosts)}


class _Builder:
    """One plan, grown from the single planners' plans over a plan's
    state (``world``: ``state_of``)."""

    def __init__(self, world, wanted, title):
        self.world = world
        self.wanted = {kind: {document.key_of(kind, i): i
                              for i in wanted.get(plural) or ()}
                       for plural, kind in document.KINDS}
        self.plan = plan_mod.Plan(title, rerun=_('the same "openstack gpu '
                                                 'apply" command'))

    def take(self, part):
        """Add the steps (and warnings) of PART, a Plan or a list of
        steps, and simulate them in the world."""
        steps = part.steps if isinstance(part, plan_mod.Plan) else part
        for step in steps:
            if step is None:
                continue
            self.plan.add(step)
            simulate(self.world, step)
        for warning in getattr(part, 'warnings', ()):
            if warning not in self.plan.warnings:
                self.plan.warnings.append(warning)

    # -- pools ----------------------------------------------------------------

    def covered(self, pool, trait=None):
        """Whether every flavor that depends on POOL (steers to it, or
        requires TRAIT) is a flavor of that pool in the document (so the
        document says what becomes of it) and no image requires TRAIT:
        then a pool change may take its dependents along, as the single
        commands' --update-dependents does; else it is refused as they
        refuse it."""
        obs = _observed(self.world)
        found = pool_plan.flavors_of(obs, pool)
        if trait:
            found += pool_plan.flavors_requiring(obs, trait)
            if pool_plan.images_requiring(obs, trait):
                return False
        wanted = self.wanted[document.FLAVOR]
        return all(f.get('name') in wanted
                   and wanted[f['name']]['pool'] == pool['name']
                   for f in found)

    def public_allowed(self, pool):
        """Public flavors of POOL that the document makes private: a pool
        limited to projects may keep them meanwhile."""
        wanted = self.wanted[document.FLAVOR]
        return all(not wanted.get(f.get('name'), {}).get('public', True)
                   for f in pool_plan.flavors_of(_observed(self.world), pool)
                   if f.get('os-flavor-access:is_public', True))

    def create_pool(self, item):
        spec = pools_mod.build_spec(
            item['name'], item['mode'], alias=item['alias'],
            pci_id=item['pci_id'], vgpu_type=item['vgpu_type'],
            mig_profile=item['mig_profile'],
            resource_class=item['resource_class'], isolate=item['isolate'],
            zone=item['zone'], projects=item['projects'],
            properties=item['properties'],
            live_migratable=item.get('live_migratable', False))
        self.take(pool_plan.create(_observed(self.world), spec,
                                   item['hosts']))

    def update_pool(self, old, new):
        name = new['name']
        fixed = [f for f in document.RECREATE_FIELDS[document.POOL]
                 if old[f] != new[f]]
        if fixed:
            raise exceptions.CommandError(
                _('%(fields)s cannot change in place: a pool hands out one '
                  'kind of GPU and its flavors are derived from it. Give '
                  'the other kind of GPU a pool of its own (and move the '
                  'hosts), or delete this pool first') % {
                      'fields': ', '.join(fixed)})
        if new['zone'] != old['zone'] and new['zone'] is None:
            raise exceptions.CommandError(
                _('zone: Nova takes no availability zone off an aggregate '
                  '(it is %s): keep it in the document') % old['zone'])
        pool = self.world.pools[name]
        if new['isolate'] != old['isolate']:
            self.take(pool_plan.set_isolation(
                _observed(self.world), name, new['isolate'],
                update_dependents=self.covered(pool, pool['pool_trait'])))
        added = [h for h in new['hosts'] if h not in old['hosts']]
        removed = [h for h in old['hosts'] if h not in new['hosts']]
        if added:
            self.take(pool_plan.add_hosts(_observed(self.world), name,
                                          added))
        if removed:
            self.take(pool_plan.remove_hosts(
                _observed(self.world), name, removed,
                escape=_stranded_escape(name, removed)))
        properties = {k: v for k, v in new['properties'].items()
                      if old['properties'].get(k) != v}
        gone = [k for k in old['properties'] if k not in new['properties']]
        add = [p for p in new['projects'] if p not in old['projects']]
        drop = [p for p in old['projects'] if p not in new['projects']]
        if properties or gone or add or drop:
            pool = self.world.pools[name]
            self.take(pool_plan.update_metadata(
                _observed(self.world), name, projects_add=add,
                projects_remove=drop, properties=properties,
                remove_properties=gone,
                update_dependents=self.covered(pool),
                allow_public_flavors=self.public_allowed(pool)))
        if new['zone'] != old['zone']:
            self.take(pool_plan.set_zone(_observed(self.world), name,
                                         new['zone']))

    def delete_pool(self, old):
        self.take(pool_plan.delete(
            _observed(self.world), old['name'], force=True,
            escape=_stranded_escape(old['name'], old['hosts'])))

    # -- flavors --------------------------------------------------------------

    def _pool_of(self, item):
        pools = self.world.pools
        if item['pool'] not in pools:
            raise pools_mod.unknown_pool(item['pool'], pools)
        return pools, pools[item['pool']]

    def create_flavor(self, item):
        _pools, pool = self._pool_of(item)
        derived = specs.derive(pool, gpus=item['gpus'],
                               numa_policy=item['numa_policy'],
                               properties=item['properties'])
        wanted = {
            'vcpus': item['vcpus'], 'ram': item['ram'], 'disk': item['disk'],
            'ephemeral': item['ephemeral'], 'swap': item['swap'],
            'is_public': item['public'], 'description': item['description'],
            # made by gpu apply: marked in the same write as its specs
            'extra_specs': dict(derived['extra_specs'], **{
                document.FLAVOR_MARK: document.MANAGED_BY}),
            'projects': list(item['projects']),
        }
        have = flavor_named(self.world, item['name'])
        existing = (flavor_plan.as_request(
            have, self.world.access.get(have['id']) or [])
            if have is not None else None)
        part = flavor_plan.create(
            item['name'], pool, wanted,
            specs.aggregate_changes(pool, derived['aggregate_metadata']),
            existing, have['id'] if have is not None else None)
        part.warnings[:0] = derived['warnings']
        self.take(part)

    def update_flavor(self, old, new):
        pools, pool = self._pool_of(new)
        flavor = flavor_named(self.world, new['name'])
        derived = specs.derive(pool, gpus=new['gpus'],
                               numa_policy=new['numa_policy'],
                               properties=new['properties'])
        access = self.world.access.get(flavor['id']) or []
        have = flavor['extra_specs']
        self.take(flavor_plan.update(
            flavor, access, pools, description=new['description'] or '',
            properties={k: v for k, v in new['properties'].items()
                        if have.get(k) != v},
            unset=[k for k in old['properties']
                   if k not in new['properties']],
            add_projects=[p for p in new['projects'] if p not in access],
            remove_projects=[p for p in access
                             if p not in new['projects']]))
        # what the pool derives: set what differs, unset what it no
        # longer derives (another pool, another number of GPUs)
        have = flavor_named(self.world, new['name'])['extra_specs']
        want = derived['extra_specs']
        self.take([plan_mod.flavor_specs(
            new['name'], have,
            {k: v for k, v in want.items() if have.get(k) != v},
            [k for k in have if k not in want
             and specs.owned_reason(k, pools)],
            flavor_id=flavor['id'])])
        changes = specs.aggregate_changes(pool,
                                          derived['aggregate_metadata'])
        if changes:
            self.take([plan_mod.set_metadata(pool['aggregate'],
                                             pool['metadata'], changes)])

    def recreate_flavor(self, old, new, allowed):
        fields = [f for f in document.RECREATE_FIELDS[document.FLAVOR]
                  if old[f] != new[f]]
        if not allowed:
            raise exceptions.CommandError(
                _('%(fields)s cannot change in place: Nova does not edit a '
                  'flavor\'s sizes nor make a public flavor private or '
                  'back. The flavor has to be deleted and created again '
                  '(a new ID; running servers keep their embedded copy of '
                  'the old one). Run again with --recreate-flavors to do '
                  'that') % {'fields': ', '.join(fields)})
        self.delete_flavor(old)
        self.create_flavor(new)
        self.plan.warnings.append(
            _('Flavor %(name)s is deleted and created again (%(fields)s): '
              'it gets a new ID, with the access list and extra properties '
              'the document gives it; running servers keep their embedded '
              'copy of the old flavor until they are resized.')
            % {'name': new['name'], 'fields': ', '.join(fields)})

    def delete_flavor(self, old):
        flavor = flavor_named(self.world, old['name'])
        self.take([plan_mod.delete_flavor(flavor['id'], flavor['name'])])

    # -- images and quotas ----------------------------------------------------

    def image_properties(self, old, new):
        image = image_named(self.world, (new or old)['name'])
        want = (new or {}).get('properties') or {}
        have = (old or {}).get('properties') or {}
        changes = {k: v for k, v in want.items() if have.get(k) != v}
        changes.update({k: None for k in have if k not in want})
        # in the same write: the document's image is apply's, a pruned
        # one no longer is
        changes[document.IMAGE_MARK] = (document.MANAGED_BY if new
                                        else None)
        images_mod.check_secure_boot(image, changes, _(
            'Give it hw_machine_type q35 and hw_firmware_type uefi, or '
            'leave os_secure_boot out.'))
        self.take([plan_mod.update_image(image, changes)])

    def mark(self, kind, item):
        """Mark the object of the document ITEM (of KIND) as managed by
        gpu apply, on the object (``document.MARK_PLACES``), unless it is
        already: what a later --prune may remove."""
        value = document.MANAGED_BY
        if kind == document.POOL:
            pool = self.world.pools.get(item['name'])
            if pool is not None:
                self.take([plan_mod.set_metadata(
                    pool['aggregate'], pool['metadata'],
                    {document.POOL_MARK: value})])
        elif kind == document.FLAVOR:
            flavor = flavor_named(self.world, item['name'])
            if flavor is not None:
                self.take([plan_mod.flavor_specs(
                    flavor['name'], flavor['extra_specs'],
                    {document.FLAVOR_MARK: value},
                    flavor_id=(None if flavor['id'].startswith(NEW)
                               else flavor['id']))])
        elif kind == document.IMAGE:
            image = image_named(self.world, item['name'])
            self.take([plan_mod.update_image(
                image, {document.IMAGE_MARK: value})])
        else:
            name = quota_mod.resource_name(item['resource_class'])
            have = self.world.limit(item['project'], name)
            old = (have or {}).get('description')
            if have is not None and not document.quota_marked(old):
                self.take([plan_mod.describe_limit(
                    item['project'], name, old,
                    ' '.join(filter(None, (old, document.QUOTA_MARK))))])

    def set_quota(self, item):
        self.take(quota_mod.plan_set(
            item['resource_class'], item['gpus'], item['project'],
            self.world.registered, self.world.limits))

    def delete_quota(self, old):
        self.take(quota_mod.plan_delete(
            old['resource_class'], old['project'], self.world.registered,
            self.world.limits))


def conflict_problems(rows: Iterable[Mapping[str, typing.Any]],
                      plan_: plan_mod.Plan, force: bool = False
                      ) -> list[str]:
    """The refusals of the ``document.diff`` ROWS that would overwrite a
    change the cloud made since the document's record (their
    ``conflicts``), one per object; with FORCE none, and PLAN_ says in its
    notes what it overwrites. PLAN_ notes the objects that could not be
    checked (no record of them)."""
    problems = []
    for row in rows:
        if not row['conflicts']:
            continue
        fields = '; '.join(document.conflict_text(c)
                           for c in row['conflicts'])
        if force:
            plan_.warnings.append(
                _('Overwrites what was changed in the cloud since the '
                  'document was exported (--force-conflicts): %(object)s: '
                  '%(fields)s.') % {'object': row['object'],
                                    'fields': fields})
        else:
            problems.append(
                _('%(object)s: changed in the cloud since the document was '
                  'exported, and the document would overwrite it: '
                  '%(fields)s. Export again and make the edit there, or '
                  'give --force-conflicts to overwrite') % {
                      'object': row['object'], 'fields': fields})
    note = document.unchecked(rows)
    if note:
        plan_.warnings.append(note)
    return problems


def plan(world: model.Cloud, current: Mapping[str, typing.Any],
         wanted: Mapping[str, typing.Any], prune: bool = False,
         recreate_flavors: bool = False, title: str | None = None,
         keep: Container[tuple[str, str | tuple[str, str]]] = (),
         recorded: Mapping[str, typing.Any] | None = None,
         force_conflicts: bool = False) -> plan_mod.Plan:
    """The plan from CURRENT (``document.from_cloud``) to WANTED (checked
    and resolved: ``document.substitute``) over WORLD (the plan's state:
    ``state_of`` the cloud as read), which it leaves as the cloud will be
    after the plan.

    A field the plan would change that the cloud changed since RECORDED
    (the document's record: ``document.recorded``; None: none) is refused
    (``conflict_problems``), unless FORCE_CONFLICTS.

    A flavor whose sizes (or public/private) change is deleted and
    created again only with RECREATE_FLAVORS; PRUNE removes what
    gpuclient owns and WANTED does not name, but for KEEP (``document.diff``).
    Raises ``Refused`` with every refusal, before any step is applied.
    A host the plan takes out of a pool (its removal, or its pool's) while
    it runs servers whose flavor steers to that pool only is refused, as
    ``gpu pool remove host`` refuses it (WORLD's servers).
    """
    builder = _Builder(world, wanted, title or _('Applying the document'))
    rows = document.diff(current, wanted, prune, keep, recorded)
    have = {kind: {document.key_of(kind, i): i
                   for i in current.get(plural) or ()}
            for plural, kind in document.KINDS}
    want = builder.wanted
    problems = conflict_problems(rows, builder.plan, force_conflicts)
    refused_pools = set()

    def attempt(row: Mapping[str, typing.Any], action: Callable[..., None],
                *args: typing.Any) -> None:
        try:
            action(*args)
        except exceptions.CommandError as exc:
            problems.append('%s: %s' % (row['object'],
                                        str(exc).rstrip('.')))
            if row['kind'] == document.POOL:
                refused_pools.add(row['key'])

    forward = [r for r in rows if r['change'] in (
        document.CREATE, document.UPDATE, document.RECREATE)]
    action: Callable[..., None]
    args: tuple[typing.Any, ...]
    for row in forward:
        kind, key, change = row['kind'], row['key'], row['change']
        old, new = have[kind].get(key), want[kind].get(key)
        if kind == document.POOL:
            action = (builder.create_pool if change == document.CREATE
                      else builder.update_pool)
            args = (new,) if change == document.CREATE else (old, new)
        elif kind == document.FLAVOR:
            if new['pool'] in refused_pools:
                continue  # its pool's refusal is said
            if change == document.CREATE:
                action, args = builder.create_flavor, (new,)
            elif change == document.UPDATE:
                action, args = builder.update_flavor, (old, new)
            else:
                action, args = builder.recreate_flavor, (
                    old, new, recreate_flavors)
        elif kind == document.IMAGE:
            action, args = builder.image_properties, (old, new)
        else:
            action, args = builder.set_quota, (new,)
        attempt(row, action, *args)
    if not problems:
        # kubectl's rule: every object the document names is apply's from
        # now on, marked on the object; --prune removes only those
        for plural, kind in document.KINDS:
            for item in wanted.get(plural) or ():
                key = document.key_of(kind, item)
                attempt({'kind': kind, 'key': key,
                         'object': document.label(kind, key)},
                        builder.mark, kind, item)
    removals = {document.POOL: builder.delete_pool,
                document.FLAVOR: builder.delete_flavor,
                document.IMAGE: lambda old: builder.image_properties(old,
                                                                     None),
                document.QUOTA: builder.delete_quota}
    for row in reversed([r for r in rows
                         if r['change'] == document.DELETE]):
        attempt(row, removals[row['kind']], have[row['kind']][row['key']])
        builder.plan.warnings.append(
            _('Prunes %(object)s: gpu apply made or took it over (it '
              'carries %(mark)s) and the document does not name it.')
            % {'object': row['object'],
               'mark': document.MARK_PLACES[row['kind']]})
    if prune:
        left = [r['object'] for r in rows if r['change'] == document.UNTRACKED
                and (r['kind'], r['key']) not in keep]
        if left:
            builder.plan.warnings.append(
                _('Not pruned, though the document does not name them: '
                  '%s. gpu apply did not make them nor take them over (they '
                  'carry no gpu apply mark: made by a single command, by '
                  'hand, or by a gpu apply older than the mark); name them '
                  'in the document to make them its own, or delete them '
                  'with the single commands.') % ', '.join(left))
    if problems:
        raise Refused(problems)
    return builder.plan


# gpu apply's mark, by the kind of operation that writes it
_MARKS = {operations.AGGREGATE: document.POOL_MARK,
          operations.FLAVOR: document.FLAVOR_MARK}


def _marks_only(step: plan_mod.Step) -> bool:
    """Whether STEP writes gpu apply's mark and nothing else."""
    operation = step.operation
    mark = _MARKS.get(operation.kind)
    return mark is not None and operation.keys_written() == {mark}


def touched_flavors(current: Mapping[str, typing.Any],
                    wanted: Mapping[str, typing.Any],
                    plan_: Iterable[plan_mod.Step]) -> set[str]:
    """Names of the document's flavors that the plan creates or changes,
    or whose pool it changes: those the apply answers for."""
    names = set()
    pools = set()
    for step in plan_:
        if _marks_only(step):
            continue  # gpu apply's mark changes nothing Nova reads
        # the operations on a flavor or an aggregate name it
        if step.operation.kind == operations.FLAVOR:
            names.add(step.operation.name)  # type: ignore[attr-defined]
        elif step.operation.kind == operations.AGGREGATE:
            pools.add(step.operation.name)  # type: ignore[attr-defined]
    return {f['name'] for f in wanted['flavors']
            if f['name'] in names or f['pool'] in pools}


def fit_problems(cloud: model.Cloud, settings: dict[str, typing.Any] | None,
                 wanted: Mapping[str, typing.Any],
                 names: Container[str]) -> list[str]:
    """Reasons each flavor of WANTED named in NAMES fits no member host of
    its pool in CLOUD (the cloud as it will be after the apply: pools,
    aggregates, provider traits and flavors; the capacity and usage
    Placement has now), asked as ``gpu capacity list`` asks (the
    Placement request Nova sends, the filters Nova applies after
    Placement, the fit into each host's free inventory), for a project
    the flavor and its pool are given to (none: any)."""
    flavors = {f.get('name'): f for f in cloud.flavors or ()}
    counters = {}
    problems = []
    for item in wanted['flavors']:
        if item['name'] not in names:
            continue
        pool = cloud.pools.get(item['pool'])
        hosts = sorted((pool or {}).get('hosts') or ())
        if not hosts:
            problems.append(
                _('flavor %(flavor)s: pool %(pool)s has no host, so the '
                  'flavor fits nowhere; give the pool hosts') % {
                      'flavor': item['name'], 'pool': item['pool']})
            continue
        # POOL is there: it has hosts
        projects = [p for p in item['projects']
                    if not pool['projects']  # type: ignore[index]
                    or p in pool['projects']]  # type: ignore[index]
        project = (projects or pool['projects']  # type: ignore[index]
                   or [None])[0]
        if project not in counters:
            counters[project] = capacity.Fits(cloud, settings, project)
        fits = counters[project]
        flavor = flavors[item['name']]
        counts = fits.add(flavor)
        if any(counts.get(host) for host in hosts):
            continue
        why = [capacity.blocker(fits, flavor, host,
                                sorted(fits.host_roots.get(host, ())))
               for host in hosts]
        problems.append(
            _('flavor %(flavor)s fits no host of pool %(pool)s: %(why)s')
            % {'flavor': item['name'], 'pool': item['pool'],
               'why': '; '.join(why)})
    return problems


def check_problems(before: model.Cloud, after: model.Cloud,
                   settings: dict[str, typing.Any] | None) -> list[str]:
    """The errors ``gpu check`` would find in AFTER (the cloud as it will
    be after the apply) that it does not find in BEFORE (the cloud now),
    as messages: what the apply would break, said as the doctor says it.

    A finding is the same when its check and object are (its symptom may
    count other things). Errors the cloud has already are not the
    apply's doing: they are left to ``gpu check``.
    """
    def errors(cloud: model.Cloud) -> dict[tuple[str, str], typing.Any]:
        return {(f.check, f.object): f for f in checks.run(cloud, settings)
                if f.severity == checks.ERROR}

    now = errors(before)
    return [_('%(object)s: %(symptom)s (gpu check %(check)s would report '
              'it after this apply; %(fix)s)')
            % {'object': f.object, 'symptom': f.symptom.rstrip('.'),
               'check': f.check, 'fix': f.fix}
            for key, f in sorted(errors(after).items()) if key not in now]


def offered_classes(snapshot: model.Placement) -> set[str]:
    """The resource classes some provider of SNAPSHOT (a model.Placement
    of every tree) has inventory of."""
    return {rc for summary in snapshot.summaries.values()
            for rc in (summary.get('resources') or {})}


def class_problems(wanted: Mapping[str, typing.Any],
                   lines: Mapping[tuple[str | int, ...], int] | None,
                   offered: Container[str],
                   scope: document.Scope | None = None) -> list[str]:
    """A pool of WANTED (checked, in the document's order: before
    ``document.substitute`` sorts it) whose GPUs no provider of the cloud
    offers (its class is in none of OFFERED): a PCI id, resource class or
    vGPU mode the cloud does not have. Messages with the line and the
    field of the document (``document.where``, LINES from
    ``document.load``) that decides the class: ``resource_class`` when
    the document gives it, else ``pci_id`` (passthrough) or ``mode``
    (VGPU). With SCOPE (``document.Scope``), its pools only."""
    problems = []
    for index, pool in enumerate(wanted['pools']):
        rc = pool['resource_class']
        if rc in offered or (scope is not None
                             and not scope.holds(document.POOL, pool)):
            continue
        field = 'mode'
        if ('pools', index, 'resource_class') in (lines or {}):
            field = 'resource_class'
        elif pool.get('pci_id'):
            field = 'pci_id'
        problems.append(
            _('%(where)s: no resource provider of this cloud offers '
              '%(rc)s, the class of pool %(pool)s: check the value (see '
              '"openstack gpu host list --long") and the nova.conf of the '
              'hosts that should offer it') % {
                  'where': document.where(('pools', index, field), lines),
                  'rc': rc, 'pool': pool['name']})
    return problems
