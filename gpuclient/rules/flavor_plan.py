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

"""Pure: the plan of ``gpu flavor create``, ``set`` and ``unset``.

From the flavor as Nova holds it (a dict with ``extra_specs``), its
access list and the pools, the steps that make its description, its other
extra specs and its projects what is asked. Only GPU flavors; the extra
specs gpuclient derives from the pool (``specs.owned_reason``) are
refused, set or unset: they change with the pool (``gpu pool set``) or by
re-creating the flavor. Nothing asked that the flavor already holds is a
step, so a re-run plans nothing.
"""

from collections.abc import Collection
from collections.abc import Iterable
from collections.abc import Mapping
import typing

from osc_lib import exceptions

from gpuclient.i18n import _
from gpuclient.rules import nova_rules
from gpuclient.rules import plan as plan_mod
from gpuclient.rules import specs


def _error(message: str, **kwargs: object) -> exceptions.CommandError:
    return exceptions.CommandError(message % kwargs if kwargs else message)


def label(flavor: Mapping[str, typing.Any]) -> str:
    return flavor.get('name') or flavor['id']


def check_gpu_flavor(flavor: Mapping[str, typing.Any],
                     pools: Mapping[str, Mapping[str, typing.Any]],
                     command: str) -> None:
    """Refuse a flavor that asks for no GPU: COMMAND (set, unset) is
    OSC's own for it."""
    if not specs.read(flavor.get('extra_specs'), pools)['is_gpu']:
        raise _error(
            _('Flavor %(flavor)s is not a GPU flavor: its extra specs ask '
              'for no GPU and steer to no GPU pool. Use "openstack flavor '
              '%(command)s".'), flavor=label(flavor), command=command)


def _check_keys(flavor: Mapping[str, typing.Any], keys: Iterable[str],
                pools: Mapping[str, Mapping[str, typing.Any]],
                flag: str) -> None:
    for key in keys:
        reason = specs.owned_reason(key, pools)
        if reason:
            raise _error(
                _('%(flag)s %(key)s: gpuclient derives this extra spec of '
                  'flavor %(flavor)s from its pool (%(reason)s), so it is '
                  'not set or unset by hand. Change the pool ("openstack '
                  'gpu pool set") or re-create the flavor ("openstack gpu '
                  'flavor delete", then "openstack gpu flavor create").'),
                flag=flag, key=key, flavor=label(flavor), reason=reason)


def _check_values(properties: Mapping[str, str]) -> None:
    for key, value in sorted(properties.items()):
        if ':' not in key:
            raise _error(
                _('--property %(key)s=%(value)s: an extra spec without a '
                  'namespace is matched by AggregateInstanceExtraSpecsFilter '
                  'against host aggregate metadata, so the flavor would not '
                  'schedule unless its pool aggregate carried %(key)s too. '
                  'Use a namespaced key.'), key=key, value=value)
        specs.validate_spec(key, value)
        nova_rules.check_pair(key, value, '--property')


def _check_private(flavor: Mapping[str, typing.Any], flag: str) -> None:
    if flavor.get('os-flavor-access:is_public', True):
        raise _error(
            _('%(flag)s: flavor %(flavor)s is public, so every project can '
              'use it already, and Nova gives access only to private '
              'flavors (nor can it make a public flavor private: re-create '
              'it with "openstack gpu flavor create --private --project").'),
            flag=flag, flavor=label(flavor))


def update(flavor: Mapping[str, typing.Any], projects: Collection[str],
           pools: Mapping[str, Mapping[str, typing.Any]],
           description: str | None = None,
           properties: Mapping[str, typing.Any] | None = None,
           unset: Iterable[str] = (), add_projects: Iterable[str] = (),
           remove_projects: Iterable[str] = (),
           command: str = 'set') -> plan_mod.Plan:
    """The plan of ``gpu flavor set`` (COMMAND 'set') or ``unset``.

    FLAVOR: as Nova shows it at 2.61; PROJECTS: its access list (project
    IDs; [] for a public flavor). DESCRIPTION: the new one (None: left
    as it is; '': none). PROPERTIES ({key: value}) to set, UNSET (keys)
    to remove, ADD_PROJECTS and REMOVE_PROJECTS (IDs). Raises
    CommandError for anything Nova or gpuclient would refuse, before any
    step.
    """
    check_gpu_flavor(flavor, pools, command)
    properties = {k: str(v) for k, v in (properties or {}).items()}
    unset = list(dict.fromkeys(unset))
    _check_keys(flavor, properties, pools, '--property')
    _check_keys(flavor, unset, pools, '--property')
    _check_values(properties)
    nova_rules.check_description(description)
    if add_projects or remove_projects:
        _check_private(flavor, '--project')
    name, flavor_id = label(flavor), flavor['id']
    result = plan_mod.Plan(
        _('Changing flavor %s') % name,
        rerun=_('the same "openstack gpu flavor %s" command') % command)
    if description is not None:
        result.add(plan_mod.set_description(
            name, flavor.get('description'), description,
            flavor_id=flavor_id))
    result.add(plan_mod.flavor_specs(
        name, flavor.get('extra_specs') or {}, properties, unset,
        flavor_id=flavor_id))
    for project in dict.fromkeys(add_projects):
        if project not in projects:
            result.add(plan_mod.add_access(name, project,
                                           flavor_id=flavor_id))
    for project in dict.fromkeys(remove_projects):
        if project in projects:
            result.add(plan_mod.remove_access(name, project,
                                              flavor_id=flavor_id))
    after = dict(flavor.get('extra_specs') or {}, **properties)
    for key in unset:
        after.pop(key, None)
    reading = specs.read(after, pools)
    result.warnings += [
        note for note in specs.problems(after, reading, pools)
        if note not in specs.problems(flavor.get('extra_specs'),
                                      specs.read(flavor.get('extra_specs'),
                                                 pools), pools)]
    return result


def as_request(flavor: Mapping[str, typing.Any],
               projects: list[str]) -> dict[str, typing.Any]:
    """A Nova flavor (dict) in the shape of a create request."""
    return {
        'vcpus': flavor.get('vcpus'),
        'ram': flavor.get('ram'),
        'disk': flavor.get('disk'),
        'ephemeral': flavor.get('OS-FLV-EXT-DATA:ephemeral', 0),
        'swap': flavor.get('swap') or 0,
        'is_public': flavor.get('os-flavor-access:is_public', True),
        'description': flavor.get('description'),
        'extra_specs': flavor.get('extra_specs') or {},
        'projects': projects,
    }


def _format_meta(metadata: Mapping[str, object]) -> str:
    return ', '.join('%s=%s' % item for item in sorted(metadata.items()))


def create(name: str, pool: Mapping[str, typing.Any],
           wanted: Mapping[str, typing.Any],
           agg_changes: Mapping[str, str] | None,
           existing: Mapping[str, typing.Any] | None = None,
           existing_id: str | None = None) -> plan_mod.Plan:
    """Pure: the plan of ``gpu flavor create``.

    ``wanted`` is the request (as ``as_request`` shapes it), ``existing``
    the flavor of that name (found by exact name among names, never as an
    ID) as a request and ``existing_id`` its ID, or None. An existing
    flavor that is an interrupted create of the same request (same sizes,
    its specs and projects a subset of those wanted) is finished; any
    other is refused.
    """
    result = plan_mod.Plan(_('Creating flavor %s') % name,
                           rerun=_('the same "openstack gpu flavor create" '
                                   'command'))
    want_specs = wanted['extra_specs']
    if existing is not None:
        have_specs = existing['extra_specs']
        partial = dict(existing, extra_specs={
            k: v for k, v in have_specs.items() if k in want_specs})
        partial['projects'] = [p for p in wanted['projects']
                               if p in existing['projects']]
        extra_specs = {k for k in have_specs if k not in want_specs}
        extra_projects = [p for p in existing['projects']
                          if p not in wanted['projects']]
        differences = specs.flavor_differences(
            dict(wanted, extra_specs={k: want_specs[k]
                                      for k in partial['extra_specs']},
                 projects=partial['projects']), partial)
        differences += [(k, None, have_specs[k]) for k in sorted(extra_specs)]
        if extra_projects:
            differences.append(('projects', ','.join(wanted['projects']),
                                ','.join(existing['projects'])))
        if differences:
            raise exceptions.CommandError(
                _('Flavor %(name)s already exists with other settings: '
                  '%(diff)s. Delete it first (openstack gpu flavor delete '
                  '%(name)s) or choose another name.')
                % {'name': name,
                   'diff': specs.describe_differences(differences)})
        old_specs = have_specs
        old_projects = existing['projects']
    else:
        fields = {
            'vcpus': wanted['vcpus'], 'ram': wanted['ram'],
            'disk': wanted['disk'], 'swap': wanted['swap'],
            'description': wanted['description'],
            'OS-FLV-EXT-DATA:ephemeral': wanted['ephemeral'],
            'os-flavor-access:is_public': wanted['is_public'],
        }
        result.add(plan_mod.create_flavor(
            name, {k: v for k, v in fields.items() if v is not None}))
        old_specs, old_projects = {}, []
    # None: the flavor this plan creates (the journal knows its ID)
    flavor_id = existing_id if existing is not None else None
    result.add(plan_mod.flavor_specs(name, old_specs, want_specs,
                                     flavor_id=flavor_id))
    for project in wanted['projects']:
        if project not in old_projects:
            result.add(plan_mod.add_access(name, project,
                                           flavor_id=flavor_id))
    if agg_changes:
        result.add(plan_mod.set_metadata(
            pool['aggregate'], pool['metadata'], agg_changes))
        result.warnings.append(
            _('Sets %(meta)s on the aggregate of pool %(pool)s: '
              'AggregateInstanceExtraSpecsFilter matches the flavor\'s '
              'unscoped keys against it.')
            % {'meta': _format_meta(agg_changes), 'pool': pool['name']})
    return result


def delete(flavors: Iterable[Mapping[str, typing.Any]]) -> plan_mod.Plan:
    """Pure: the plan deleting these flavors (dicts); not undone (IDs
    would change)."""
    result = plan_mod.Plan(_('Deleting flavors'))
    for flavor in flavors:
        # Nova's flavors have a name
        result.add(plan_mod.delete_flavor(
            flavor['id'], flavor.get('name')))  # type: ignore[arg-type]
    return result
