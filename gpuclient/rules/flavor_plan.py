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

"""Pure: the plan of ``gpu flavor set`` and ``gpu flavor unset``.

From the flavor as Nova holds it (a dict with ``extra_specs``), its
access list and the pools, the steps that make its description, its other
extra specs and its projects what is asked. Only GPU flavors; the extra
specs gpuclient derives from the pool (``specs.owned_reason``) are
refused, set or unset: they change with the pool (``gpu pool set``) or by
re-creating the flavor. Nothing asked that the flavor already holds is a
step, so a re-run plans nothing.
"""

from osc_lib import exceptions

from gpuclient.i18n import _
from gpuclient.rules import nova_rules
from gpuclient.rules import plan as plan_mod
from gpuclient.rules import specs


def _error(message, **kwargs):
    return exceptions.CommandError(message % kwargs if kwargs else message)


def label(flavor):
    return flavor.get('name') or flavor['id']


def check_gpu_flavor(flavor, pools, command):
    """Refuse a flavor that asks for no GPU: COMMAND (set, unset) is
    OSC's own for it."""
    if not specs.read(flavor.get('extra_specs'), pools)['is_gpu']:
        raise _error(
            _('Flavor %(flavor)s is not a GPU flavor: its extra specs ask '
              'for no GPU and steer to no GPU pool. Use "openstack flavor '
              '%(command)s".'), flavor=label(flavor), command=command)


def _check_keys(flavor, keys, pools, flag):
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


def _check_values(properties):
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


def _check_private(flavor, flag):
    if flavor.get('os-flavor-access:is_public', True):
        raise _error(
            _('%(flag)s: flavor %(flavor)s is public, so every project can '
              'use it already, and Nova gives access only to private '
              'flavors (nor can it make a public flavor private: re-create '
              'it with "openstack gpu flavor create --private --project").'),
            flag=flag, flavor=label(flavor))


def update(flavor, projects, pools, description=None, properties=None,
           unset=(), add_projects=(), remove_projects=(), command='set'):
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
