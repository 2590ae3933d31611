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

"""Pure: GPU quotas as Nova's unified limits enforce them.

Nova counts GPUs against a quota only with ``[quota] driver =
nova.quota.UnifiedLimitsDriver``: Keystone holds a *registered limit*
(the default of every project) and *project limits* of the compute
service on resources named ``class:<resource class>``; Nova compares them
with the project's Placement usage (``GET /usages?project_id=``) plus what
the flavor asks, at server create and resize (``nova.limit.placement``).

The rules here are Nova 34's (``nova.limit.utils.should_enforce``):

* the limit is the project limit, else the registered limit;
* a negative limit is unlimited;
* a limit of 0 (or none at all) is enforced when a registered limit of
  that resource exists; otherwise ``[quota]
  unified_limits_resource_strategy`` decides: ``require`` (default)
  enforces 0 for the resources in ``unified_limits_resource_list``
  (default ``servers``) and leaves the others unlimited; ``ignore``
  leaves the listed ones unlimited and enforces 0 for every other.

Nova counts by class, not by pool: two pools of one class share one
quota. ``quota_excess`` judges the other quota Nova's API checks before it
schedules: the project's instances, cores and RAM of ``GET
/limits?tenant_id=``. No function here does I/O.
"""

from collections.abc import Collection
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
import fnmatch
import typing

from osc_lib import exceptions

from gpuclient.i18n import _
from gpuclient.rules import hosts
from gpuclient.rules import placement_names as names
from gpuclient.rules import plan as plan_mod
from gpuclient.rules import pools as pools_mod

PREFIX = 'class:'
UNIFIED_DRIVER = 'nova.quota.UnifiedLimitsDriver'
LEGACY_DRIVER = 'nova.quota.DbQuotaDriver'
REQUIRE, IGNORE = 'require', 'ignore'
DEFAULT_STRATEGY = REQUIRE
DEFAULT_RESOURCE_LIST = ('servers',)
# Keystone's largest limit (a signed 32-bit integer)
MAX_LIMIT = 2147483647
# where a limit comes from
PROJECT, DEFAULT, NONE = 'project', 'default', 'none'
# what Nova's enforcement is
UNIFIED, LEGACY, UNKNOWN = 'unified', 'legacy', 'unknown'
# legacy name in GET /limits -> unified limit resource name
LEGACY_NAMES = (
    ('maxTotalInstances', 'servers'),
    ('maxTotalCores', 'class:VCPU'),
    ('maxTotalRAMSize', 'class:MEMORY_MB'),
)
FIX_DRIVER = '[quota] driver = %s' % UNIFIED_DRIVER


# Nova's release from its maximum compute microversion: _MAX_API_VERSION
# of nova/api/openstack/api_version_request.py at each release tag
# (openstack/nova: 29.0.0 and 30.0.0 '2.96', 31.0.0 and 32.0.0 '2.100',
# 33.0.0 '2.103', 34.0.0 '2.104'). (maximum, release), oldest first; a
# maximum between two rows is the later one's development.
NOVA_RELEASES = (
    ((2, 96), '2024.1 or 2024.2'),
    ((2, 100), '2025.1 or 2025.2'),
    ((2, 103), '2026.1'),
    ((2, 104), '2026.2'),
)
# Nova 2026.2 (34.0.0) counts what a flavor asks through
# pci_passthrough:alias against unified limits (nova commit 2de9de080c,
# release note fix-unified-limits-pci, bug 2140631); 2025.1 to 2026.1
# never count it. 34.0.0 is the first release with compute API 2.104.
PCI_COUNTED_FROM = (2, 104)


def nova_release(max_version: Sequence[int] | None) -> str | None:
    """Nova's release named from its maximum compute microversion
    ((2, N)), or None when not known."""
    if not max_version:
        return None
    for top, release in NOVA_RELEASES:
        if tuple(max_version) <= top:
            return release
    return _('after 2026.2')


def pci_quota_enforced(max_version: Sequence[int] | None) -> bool | None:
    """Does the Nova whose maximum compute microversion is MAX_VERSION
    count GPUs asked through a PCI alias against unified limits? None
    when the version is not known."""
    if not max_version:
        return None
    return tuple(max_version) >= PCI_COUNTED_FROM


def pci_classes(pools: Mapping[str, Mapping[str, typing.Any]] | None
                ) -> dict[str, list[str]]:
    """{class: [pool names]} of the pools whose servers ask for their GPUs
    through a PCI alias (passthrough, vgpu-vf)."""
    found: dict[str, list[str]] = {}
    for name, pool in sorted((pools or {}).items()):
        if pool['mode'] in pools_mod.PCI_MODES and pool.get('resource_class'):
            found.setdefault(pool['resource_class'], []).append(name)
    return found


def pci_not_enforced_note(
        resource_class: str,
        pools: Mapping[str, Mapping[str, typing.Any]] | None,
        max_version: Sequence[int] | None) -> str | None:
    """The warning for a limit on RESOURCE_CLASS when the Nova of
    MAX_VERSION does not count it (its pools ask through a PCI alias), or
    None."""
    owners = pci_classes(pools).get(resource_class)
    if not owners or pci_quota_enforced(max_version) is not False:
        return None
    return _(
        'Nova %(release)s (compute API up to %(version)s) does not count '
        'GPUs asked through a PCI alias against unified limits (from Nova '
        '2026.2 it does): the limit on %(name)s is not enforced for pools '
        '%(pools)s. Keep their GPUs to the projects meant to have them '
        'instead: private flavors ("openstack gpu flavor create --private '
        '--project <project>") and project-limited pools ("openstack gpu '
        'pool set <pool> --project <project>").') % {
            'release': nova_release(max_version),
            # MAX_VERSION is known: pci_quota_enforced said False
            'version': '%d.%d' % tuple(
                max_version),  # type: ignore[arg-type]
            'name': resource_name(resource_class),
            'pools': ', '.join(owners)}


def resource_name(resource_class: str) -> str:
    """``VGPU`` -> ``class:VGPU`` (the unified limit's resource name)."""
    return PREFIX + resource_class


def class_of(name: object) -> str | None:
    """``class:VGPU`` -> ``VGPU``; None for other resource names."""
    if isinstance(name, str) and name.startswith(PREFIX):
        return name[len(PREFIX):] or None
    return None


def is_gpu_class(resource_class: str,
                 pools: Mapping[str, Mapping[str, typing.Any]] | None = None
                 ) -> bool:
    """A class gpuclient reports: a pool's, VGPU/PGPU or a GPU-like
    custom class (the patterns of ``gpu host list``)."""
    if resource_class in {p.get('resource_class')
                          for p in (pools or {}).values()}:
        return True
    return any(fnmatch.fnmatchcase(resource_class, pattern)
               for pattern in hosts.DEFAULT_GPU_CLASS_PATTERNS)


def pools_by_class(pools: Mapping[str, Mapping[str, typing.Any]]
                   ) -> dict[str, list[str]]:
    """{resource class: [pool names]} (a class shared is one quota)."""
    found: dict[str, list[str]] = {}
    for name, pool in sorted(pools.items()):
        if pool.get('resource_class'):
            found.setdefault(pool['resource_class'], []).append(name)
    return found


def target_class(pools: Mapping[str, dict[str, typing.Any]],
                 pool: str | None = None,
                 resource_class: str | None = None) -> str:
    """The resource class --pool or --resource-class names, or CommandError.

    A pool maps to its ``gpu_resource_class``; a class is normalised as
    Placement spells it and must be a GPU class (not VCPU, MEMORY_MB...:
    ``openstack limit`` sets those).
    """
    if pool is not None:
        pool = pools_mod.pool_name(pools, pool)
        return pools[pool]['resource_class']
    return names.check_gpu_class(resource_class)


def target_classes(pools: Mapping[str, dict[str, typing.Any]],
                   pool_names: Iterable[str] = (),
                   resource_classes: Iterable[str] = ()) -> list[str]:
    """The resource classes that POOL_NAMES and RESOURCE_CLASSES name
    (``target_class`` each), in order, each once: two pools of one class
    are one quota."""
    found = [target_class(pools, pool=name) for name in pool_names]
    found += [target_class(pools, resource_class=rc)
              for rc in resource_classes]
    return list(dict.fromkeys(found))


def check_gpus(value: object) -> int:
    """A GPU count for a limit: 0 ... MAX_LIMIT, or CommandError."""
    try:
        number = int(str(value).strip())
    except (TypeError, ValueError):
        number = None
    if number is None or number < 0 or number > MAX_LIMIT:
        raise exceptions.CommandError(
            _('--gpus %(value)s: give a whole number of GPUs from 0 (no GPU '
              'of this class) to %(max)d; to lift a project\'s limit, '
              '"openstack gpu quota delete" it (the default applies again).')
            % {'value': value, 'max': MAX_LIMIT})
    return number


def shared_note(resource_class: str,
                pools: Mapping[str, Mapping[str, typing.Any]]) -> str | None:
    """A note when several pools share RESOURCE_CLASS, else None."""
    sharing = pools_by_class(pools).get(resource_class) or []
    if len(sharing) < 2:
        return None
    return _('Pools %(pools)s share resource class %(rc)s: Nova counts by '
             'class, so they share one quota.') % {
                 'pools': ', '.join(sharing), 'rc': resource_class}


# -- writes: plans for "gpu quota set" and "gpu quota delete" ---------------

def _referencing(limits: Iterable[Mapping[str, typing.Any]],
                 name: str) -> list[str]:
    return sorted({item['project_id'] for item in limits
                   if item['resource_name'] == name})


def _own(limits: Iterable[Mapping[str, typing.Any]], project_id: str | None,
         name: str) -> int | None:
    """The value of PROJECT_ID's own limit NAME in LIMITS, or None."""
    for item in limits:
        if (item['project_id'] == project_id
                and item['resource_name'] == name):
            return item['resource_limit']
    return None


def _title(verb: str, resource_class: str, project_id: str | None) -> str:
    values = {'verb': verb, 'rc': resource_class, 'project': project_id}
    if project_id is None:
        return _('%(verb)s the default GPU quota on %(rc)s') % values
    return _('%(verb)s the GPU quota on %(rc)s of project %(project)s') % (
        values)


def _gpus_text(enforced: int | None) -> str:
    """What a project gets: None (unlimited) or a number of GPUs."""
    if enforced is None:
        return _('unlimited')
    return _('%d GPUs') % enforced


def _strategy_said(conf: Mapping[str, typing.Any] | None) -> str:
    """How the plan names Nova's [quota] strategy: read from nova.conf
    (CONF given) or assumed (Nova's defaults)."""
    shown = conf or conf_settings(None)
    values = {'strategy': shown['strategy'],
              'list': ','.join(shown['resource_list']) or '(empty)'}
    if conf is None:
        return _('assumed Nova\'s defaults: [quota] '
                 'unified_limits_resource_strategy = %(strategy)s, '
                 'unified_limits_resource_list = %(list)s; no --nova-conf '
                 'given') % values
    return _('[quota] unified_limits_resource_strategy = %(strategy)s, '
             'unified_limits_resource_list = %(list)s, read from the '
             'nova.conf given') % values


def others_now(name: str,
               registered: Mapping[str, Mapping[str, typing.Any]] | None,
               conf: Mapping[str, typing.Any] | None = None) -> int | None:
    """What Nova gives NAME in a project without its own limit: the
    registered limit's value as enforced (None: unlimited), else what the
    strategy makes of none."""
    # NAME is a class's (class:<class>)
    return effective(class_of(name),  # type: ignore[arg-type]
                     {}, {n: r['limit'] for n, r in
                          (registered or {}).items()},
                     conf)['enforced']


def keeping_default(name: str,
                    conf: Mapping[str, typing.Any] | None = None) -> int:
    """The registered limit that keeps what Nova gives NAME now when it
    has none: 0 where the strategy enforces a missing one as 0, else -1
    (unlimited). Nova enforces a registered 0 as 0 and a negative as
    unlimited (``nova.limit.utils.should_enforce``), whatever the
    strategy."""
    return 0 if missing_enforced(name, conf) else -1


def _others_note(name: str,
                 registered: Mapping[str, Mapping[str, typing.Any]] | None,
                 limit: int | None,
                 conf: Mapping[str, typing.Any] | None) -> str:
    """What a registered limit NAME of LIMIT (None: deleted) changes for
    the projects without their own limit, for the plan's step."""
    before = others_now(name, registered, conf)
    if limit is None:  # the registered limit deleted: the strategy decides
        after = 0 if missing_enforced(name, conf) else None
    else:
        after = None if limit < 0 else limit
    values = {'before': _gpus_text(before), 'after': _gpus_text(after)}
    if before == after:
        text = _('every project without its own limit keeps what Nova '
                 'gives it now: %(before)s') % values
    else:
        text = _('every project without its own limit: %(before)s now, '
                 '%(after)s after') % values
    if name not in (registered or {}) or limit is None:
        text += '; ' + _strategy_said(conf)
    return text


def plan_set(resource_class: str, gpus: int, project_id: str | None,
             registered: Mapping[str, Mapping[str, typing.Any]],
             limits: Collection[Mapping[str, typing.Any]],
             conf: Mapping[str, typing.Any] | None = None) -> plan_mod.Plan:
    """The plan of "gpu quota set": from Keystone's limits as they are.

    ``registered``: {resource name: {'id', 'limit'}}; ``limits``: project
    limits ({'project_id', 'resource_name', 'resource_limit'}), all of
    them for the default (PROJECT_ID None), else those of the project.
    CONF: nova-api's [quota] settings (``conf_settings``), None when not
    known (Nova's defaults are assumed, and the plan says so).
    Keystone's own refusals are raised here, before any write.

    Keystone keeps a project limit only under a registered limit of the
    same resource (it answers 403 "no corresponding registered limit"
    otherwise), and a registered limit is the default of every other
    project. When there is none, the plan creates the one that keeps
    what Nova gives the other projects now (``keeping_default``: 0 under
    a strategy that enforces a missing limit as 0, -1 otherwise) and
    its step says so; ``--default`` sets another value explicitly.
    """
    name = resource_name(resource_class)
    result = plan_mod.Plan(_title(_('Setting'), resource_class, project_id))
    existing = registered.get(name)
    if project_id is None:
        users = _referencing(limits, name)
        if existing and existing['limit'] != gpus and users:
            raise exceptions.CommandError(
                _('Keystone does not change the registered limit '
                  '%(name)s while projects have their own limit on it '
                  '(%(projects)s). Set those projects with --project, '
                  'or delete their limits ("openstack gpu quota delete '
                  '--project <project> --resource-class %(rc)s") '
                  'first.')
                % {'name': name, 'projects': ', '.join(users),
                   'rc': resource_class})
        result.add(plan_mod.set_limit(
            None, name, gpus, existing['limit'] if existing else None,
            note=_others_note(name, registered, gpus, conf)))
        return result
    if existing is None:
        keep = keeping_default(name, conf)
        result.add(plan_mod.set_limit(
            None, name, keep,
            note=_others_note(name, registered, keep, conf)))
        result.warnings.append(
            _('%(name)s has no registered limit, and Keystone keeps a '
              'project limit only under one: the plan creates it at '
              '%(keep)d, so that every other project keeps what Nova '
              'gives it now (%(now)s; %(strategy)s). To give them '
              'something else, run "openstack gpu quota set --default '
              '--resource-class %(rc)s --gpus <n>" first.')
            % {'name': name, 'keep': keep, 'rc': resource_class,
               'now': _gpus_text(others_now(name, registered, conf)),
               'strategy': _strategy_said(conf)})
    result.add(plan_mod.set_limit(project_id, name, gpus,
                                  _own(limits, project_id, name)))
    return result


def plan_delete(resource_class: str, project_id: str | None,
                registered: Mapping[str, Mapping[str, typing.Any]],
                limits: Collection[Mapping[str, typing.Any]],
                conf: Mapping[str, typing.Any] | None = None
                ) -> plan_mod.Plan:
    """The plan of "gpu quota delete" (arguments as for plan_set)."""
    name = resource_name(resource_class)
    result = plan_mod.Plan(_title(_('Deleting'), resource_class, project_id))
    if project_id is None:
        existing = registered.get(name)
        if existing is None:
            raise exceptions.CommandError(
                _('There is no registered limit %s: nothing to delete '
                  '(see "openstack gpu quota show").') % name)
        users = _referencing(limits, name)
        if users:
            raise exceptions.CommandError(
                _('Keystone does not delete the registered limit %(name)s '
                  'while projects have their own limit on it '
                  '(%(projects)s): delete those first.')
                % {'name': name, 'projects': ', '.join(users)})
        result.add(plan_mod.delete_limit(
            None, name, existing['limit'],
            note=_others_note(name, registered, None, conf)))
        return result
    own = _own(limits, project_id, name)
    if own is None:
        raise exceptions.CommandError(
            _('Project %(project)s has no limit of its own on %(name)s: '
              'nothing to delete (see "openstack gpu quota list").')
            % {'project': project_id, 'name': name})
    result.add(plan_mod.delete_limit(project_id, name, own))
    return result


def plan_delete_many(resource_classes: Sequence[str], project_id: str | None,
                     registered: Mapping[str, Mapping[str, typing.Any]],
                     limits: Collection[Mapping[str, typing.Any]],
                     conf: Mapping[str, typing.Any] | None = None
                     ) -> plan_mod.Plan:
    """The plan of "gpu quota delete" with one or more classes: one
    ``plan_delete`` each, in one plan (all or nothing). When any of them
    is refused, nothing is planned and every refusal is said."""
    if len(resource_classes) == 1:
        return plan_delete(resource_classes[0], project_id, registered,
                           limits, conf)
    result = plan_mod.Plan(_title(_('Deleting'), ', '.join(resource_classes),
                                  project_id))
    refused = []
    for rc in resource_classes:
        try:
            one = plan_delete(rc, project_id, registered, limits, conf)
        except exceptions.CommandError as exc:
            refused.append(str(exc))
            continue
        result.extend(one.steps)
        result.warnings.extend(one.warnings)
    if refused:
        raise exceptions.CommandError(
            _('%(refused)d of %(asked)d GPU quotas cannot be deleted, so '
              'none is: %(why)s')
            % {'refused': len(refused), 'asked': len(resource_classes),
               'why': ' '.join(refused)})
    return result


# -- nova.conf ---------------------------------------------------------------

def conf_settings(ini: Mapping[str, Mapping[str, list[str]]] | None
                  ) -> dict[str, typing.Any]:
    """The [quota] settings of a parsed nova.conf
    (``nova_conf.parse.parse_ini`` / ``merge_ini`` output): driver,
    strategy, resource list and, for each, where it came from ('config'
    or 'default')."""
    section = (ini or {}).get('quota') or {}

    def last(key: str) -> str | None:
        values = section.get(key) or []
        return values[-1].strip() if values else None

    driver = last('driver')
    strategy = last('unified_limits_resource_strategy')
    listed = last('unified_limits_resource_list')
    return {
        'driver': driver or LEGACY_DRIVER,
        'strategy': (strategy or DEFAULT_STRATEGY).lower(),
        'resource_list': (tuple(item.strip() for item in listed.split(',')
                                if item.strip())
                          if listed is not None else DEFAULT_RESOURCE_LIST),
        'sources': {'driver': 'config' if driver else 'default',
                    'strategy': 'config' if strategy else 'default',
                    'resource_list': ('config' if listed is not None
                                      else 'default')},
    }


def enforcement(conf: Mapping[str, typing.Any] | None = None,
                absolute: Mapping[str, typing.Any] | None = None,
                project_limits: Mapping[str, int] | None = None,
                registered: Mapping[str, int] | None = None
                ) -> tuple[str, str]:
    """(UNIFIED | LEGACY | UNKNOWN, why) for Nova's quota driver.

    CONF (``conf_settings``) decides when given. Otherwise Nova's own
    answer tells a legacy driver apart: under unified limits ``GET
    /limits?tenant_id=`` (ABSOLUTE) reports Keystone's servers, class:VCPU
    and class:MEMORY_MB limits of the project (project limit, else
    registered, else 0); any difference means Nova reads its own quota
    tables. Equal figures cannot prove unified limits (an operator may
    have copied the legacy defaults): UNKNOWN.
    """
    if conf is not None:
        if conf['driver'] == UNIFIED_DRIVER:
            return UNIFIED, _('nova.conf [quota] driver = %s') % (
                UNIFIED_DRIVER)
        return LEGACY, _('nova.conf [quota] driver = %s') % conf['driver']
    if not absolute:
        return UNKNOWN, _('Nova\'s quota driver could not be read')
    project_limits = project_limits or {}
    registered = registered or {}
    differs = []
    for wire, name in LEGACY_NAMES:
        reported = absolute.get(wire)
        if not isinstance(reported, int):
            continue
        expected = project_limits.get(name, registered.get(name, 0))
        if reported != expected:
            differs.append('%s %d (Keystone: %d)' % (wire, reported,
                                                      expected))
    if differs:
        return LEGACY, _('Nova reports %s: not Keystone\'s limits, so it '
                         'does not use unified limits') % ', '.join(differs)
    return UNKNOWN, _('Nova\'s limits match Keystone\'s; give --nova-conf '
                      'to be sure of [quota] driver')


def legacy_text(why: str) -> str:
    return _('Nova does not enforce GPU quotas (%(why)s): its legacy quota '
             'driver counts instances, cores and RAM only. Set %(fix)s and '
             'an [oslo_limit] section for Nova\'s Keystone user '
             '(endpoint_service_type = compute, endpoint_region_name) in '
             'the nova.conf of nova-api and nova-conductor, create the '
             'registered limits "nova-manage limits '
             'migrate_to_unified_limits" copies, then restart them.') % {
                 'why': why, 'fix': FIX_DRIVER}


# -- limits as Nova applies them ---------------------------------------------

def missing_enforced(name: str,
                     conf: Mapping[str, typing.Any] | None = None) -> bool:
    """Does Nova enforce 0 for NAME when no limit is registered for it?"""
    conf = conf or conf_settings(None)
    listed = name in conf['resource_list']
    if conf['strategy'] == IGNORE:
        return not listed
    return listed


def effective(resource_class: str,
              project_limits: Mapping[str, int],
              registered: Mapping[str, int],
              conf: Mapping[str, typing.Any] | None = None
              ) -> dict[str, typing.Any]:
    """{'limit', 'source', 'enforced'} of one class for one project.

    ``limit`` is the number Keystone holds (project, else registered,
    else None); ``enforced`` what Nova applies: an int, or None for
    unlimited (negative, or 0/missing that the strategy does not enforce).
    CONF defaults to Nova's defaults (require, [servers]).
    """
    name = resource_name(resource_class)
    if name in (project_limits or {}):
        limit, source = project_limits[name], PROJECT
    elif name in (registered or {}):
        limit, source = registered[name], DEFAULT
    else:
        limit, source = None, NONE
    if limit is not None and limit > 0:
        enforced = limit
    elif limit is not None and limit < 0:
        enforced = None
    elif name in (registered or {}) or missing_enforced(name, conf):
        enforced = 0
    else:
        enforced = None
    return {'limit': limit, 'source': source, 'enforced': enforced}


def quota_classes(pools: Mapping[str, Mapping[str, typing.Any]],
                  project_limits: Iterable[str] = (),
                  registered: Iterable[str] = (),
                  usages: Iterable[str] | None = ()) -> list[str]:
    """Sorted GPU classes to show: every pool's, and GPU classes with a
    limit or a usage."""
    found = set(pools_by_class(pools))
    for name in list(project_limits) + list(registered):
        rc = class_of(name)
        if rc and is_gpu_class(rc, pools):
            found.add(rc)
    for rc in usages or ():
        if is_gpu_class(rc, pools):
            found.add(rc)
    return sorted(found)


def show_rows(pools: Mapping[str, Mapping[str, typing.Any]],
              project_limits: Mapping[str, int],
              registered: Mapping[str, int],
              usages: Mapping[str, int] | None,
              conf: Mapping[str, typing.Any] | None = None,
              defaults: bool = False) -> list[dict[str, typing.Any]]:
    """One dict per GPU class: resource, resource_class, pools, limit
    (as enforced; None = unlimited), source, in_use, free (None when
    unlimited). With DEFAULTS (``gpu quota show --default``): what a
    project without its own limit gets, and no project's use (in_use and
    free None)."""
    by_class = pools_by_class(pools)
    rows = []
    for rc in quota_classes(pools, project_limits, registered, usages):
        found = effective(rc, {} if defaults else project_limits,
                          registered, conf)
        used = int((usages or {}).get(rc, 0))
        limit = found['enforced']
        rows.append({
            'resource': resource_name(rc), 'resource_class': rc,
            'pools': by_class.get(rc, []), 'limit': limit,
            'source': found['source'], 'in_use': None if defaults else used,
            'free': None if limit is None or defaults else max(
                limit - used, 0),
        })
    return rows


def list_rows(pools: Mapping[str, Mapping[str, typing.Any]],
              limits: Iterable[Mapping[str, typing.Any]]
              ) -> list[dict[str, typing.Any]]:
    """Project limits on GPU classes: [{project_id, resource_class, pools,
    limit}] sorted by project and class. LIMITS: dicts with project_id,
    resource_name, resource_limit."""
    by_class = pools_by_class(pools)
    rows = []
    for item in limits:
        rc = class_of(item.get('resource_name'))
        if not rc or not item.get('project_id') or not is_gpu_class(
                rc, pools):
            continue
        rows.append({'project_id': item['project_id'],
                     'resource_class': rc, 'pools': by_class.get(rc, []),
                     'limit': (None if (item.get('resource_limit') or 0) < 0
                               else item.get('resource_limit'))})
    rows.sort(key=lambda r: (r['project_id'], r['resource_class']))
    return rows


def excess(asked: Mapping[str, int] | None,
           project_limits: Mapping[str, int],
           registered: Mapping[str, int],
           usages: Mapping[str, int] | None,
           conf: Mapping[str, typing.Any] | None = None
           ) -> list[dict[str, typing.Any]]:
    """[{'resource', 'limit', 'used', 'asked', 'source'}] of the GPU classes
    ASKED ({class: amount}) that Nova's unified limits would refuse:
    used + asked > the enforced limit."""
    found = []
    for rc, amount in sorted((asked or {}).items()):
        if not amount:
            continue
        limit = effective(rc, project_limits, registered, conf)
        if limit['enforced'] is None:
            continue
        used = int((usages or {}).get(rc, 0))
        if used + amount > limit['enforced']:
            found.append({'resource': resource_name(rc),
                          'limit': limit['enforced'], 'used': used,
                          'asked': amount, 'source': limit['source']})
    return found


def excess_text(project_id: str,
                found: Iterable[Mapping[str, typing.Any]]) -> str:
    parts = ['%s: %d used + %d asked > %d (%s)' % (
        e['resource'], e['used'], e['asked'], e['limit'],
        _('project limit') if e['source'] == PROJECT else
        _('registered default') if e['source'] == DEFAULT else
        _('no registered limit: 0 by [quota] unified_limits_resource_'
          'strategy')) for e in found]
    return _('Project %(project)s is over its GPU quota (%(parts)s): Nova '
             'refuses the boot before scheduling. Free some, or raise it '
             'with "openstack gpu quota set --project %(project)s".') % {
                 'project': project_id, 'parts': '; '.join(parts)}


def strategy_problems(resource_classes: Iterable[str],
                      registered: Mapping[str, int] | None,
                      conf: Mapping[str, typing.Any]
                      ) -> list[tuple[str, str]]:
    """[(class, fix)] of GPU classes whose missing registered limit the
    strategy turns into 0 (every boot of a project without its own limit
    refused)."""
    found = []
    for rc in sorted(resource_classes):
        name = resource_name(rc)
        if name in (registered or {}) or not missing_enforced(name, conf):
            continue
        if conf['strategy'] == IGNORE:
            listed = list(conf['resource_list']) + [name]
            setting = '[quota] unified_limits_resource_list = %s' % ','.join(
                listed)
        else:
            listed = [r for r in conf['resource_list'] if r != name]
            setting = '[quota] unified_limits_resource_list = %s' % ','.join(
                listed)
        found.append((rc, _('openstack gpu quota set --default '
                            '--resource-class %(rc)s --gpus <n>, or '
                            '%(setting)s') % {'rc': rc, 'setting': setting}))
    return found


def strategy_text(problems: Collection[tuple[str, str]],
                  conf: Mapping[str, typing.Any]) -> str:
    return _('[quota] unified_limits_resource_strategy = %(strategy)s with '
             'unified_limits_resource_list = %(list)s and no registered '
             'limit for %(classes)s: Nova refuses every boot asking for '
             'them in projects without their own limit. Fix: %(fixes)s.') % {
                 'strategy': conf['strategy'],
                 'list': ','.join(conf['resource_list']) or '(empty)',
                 'classes': ', '.join(resource_name(rc)
                                      for rc, _fix in problems),
                 'fixes': '; '.join(fix for _rc, fix in problems)}


# -- the compute quota of GET /limits ----------------------------------------
#
# Not a scheduler filter: Nova's API checks the project's instances, cores
# and RAM quota (nova/compute/api.py, nova/quota.py) before it asks the
# scheduler, and refuses the boot there.

QUOTAS = (
    ('instances', 'maxTotalInstances', 'totalInstancesUsed'),
    ('cores', 'maxTotalCores', 'totalCoresUsed'),
    ('ram', 'maxTotalRAMSize', 'totalRAMUsed'),
)


def quota_excess(absolute: Mapping[str, typing.Any] | None,
                 instances: int = 1, cores: int = 0,
                 ram: int = 0) -> list[dict[str, typing.Any]]:
    """[{'resource', 'limit', 'used', 'asked'}] the project would exceed.

    ``absolute`` is ``limits.absolute`` of ``GET /limits?tenant_id=``;
    a negative limit is unlimited; Nova refuses when used + asked > limit.
    """
    asked = {'instances': instances, 'cores': cores, 'ram': ram}
    found = []
    for resource, limit_key, used_key in QUOTAS:
        limit = (absolute or {}).get(limit_key)
        if not isinstance(limit, int) or limit < 0:
            continue  # unlimited, or not reported
        used = (absolute or {}).get(used_key)
        used = used if isinstance(used, int) else 0
        if used + asked[resource] > limit:
            found.append({'resource': resource, 'limit': limit,
                          'used': used, 'asked': asked[resource]})
    return found


def quota_text(project_id: str,
               excess: Iterable[Mapping[str, typing.Any]]) -> str:
    labels = {'instances': _('instances'), 'cores': _('cores'),
              'ram': _('RAM (MiB)')}
    parts = ['%s: %d used + %d asked > %d' % (
        labels[e['resource']], e['used'], e['asked'], e['limit'])
        for e in excess]
    return _('Project %(project)s is over its quota (%(parts)s): Nova '
             'refuses the boot before scheduling. Free some, or raise it '
             'with "openstack quota set".') % {
                 'project': project_id, 'parts': '; '.join(parts)}
