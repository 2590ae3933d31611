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

"""GPU flavor and image writes: observe, plan, apply.

``create`` (planned by ``gpuclient.rules.flavor_plan.create``: from the
pool, the options and the flavor of that name if one exists, the steps
that create the flavor, or finish one whose create was interrupted),
``update`` (``gpu flavor set/unset``, planned by
``gpuclient.rules.flavor_plan``), ``delete`` and ``set_image`` observe,
plan, and apply with ``gpuclient.ops.journal`` (or return the plan for
``--dry-run``).
"""

from __future__ import annotations

import collections.abc
import logging
import typing

from osc_lib import exceptions

from gpuclient.cloud import versions
from gpuclient.i18n import _
from gpuclient.ops import journal
from gpuclient.ops import snapshot
from gpuclient.rules import flavor_plan
from gpuclient.rules import images as images_mod
from gpuclient.rules import nova_rules
from gpuclient.rules import plan as plan_mod
from gpuclient.rules import pools as pools_mod
from gpuclient.rules import specs

if typing.TYPE_CHECKING:
    from gpuclient.cloud.client import GpuClient
    from gpuclient.rules import model

LOG = logging.getLogger(__name__)


def read_pools(
    client: GpuClient, required: bool = True,
) -> tuple[dict[str, dict[str, typing.Any]],
           dict[int | None, dict[str, typing.Any]]]:
    """{name: pool} with the aggregate of each; {} if not allowed
    (``_read``)."""
    cloud = _read(client, required)
    return cloud.pools, {a['id']: a for a in cloud.aggregates}


def _read(client: GpuClient, required: bool = True) -> model.Cloud:
    """The host aggregates as a ``model.Cloud``; none if not allowed.

    Listing aggregates needs admin; reading flavors does not, so a list or
    show by a non-admin goes on without pools (``required=False``).
    Malformed or duplicate pool aggregates are warned about and skipped.
    The first read of every gpu flavor command: a --os-compute-api-version
    lower than the flavor calls' 2.61 is refused here, before any request.
    """
    client.compute.require(versions.COMPUTE_FLAVOR_SPECS_VERSION)
    cloud = snapshot.read_aggregates(client, warn=False,
                                    forbidden=not required)
    snapshot.warn_problems(cloud.problems)
    return cloud


def create(
    client: GpuClient,
    name: str,
    pool: str,
    vcpus: int,
    ram: int,
    disk: int,
    ephemeral: int = 0,
    swap: int = 0,
    gpus: int = 1,
    numa_policy: str | None = None,
    public: bool = True,
    projects: collections.abc.Iterable[str] = (),
    description: str | None = None,
    properties: dict[str, str] | None = None,
    dry_run: bool = False,
    on_step: journal.OnStep | None = None,
    project_domain: str | None = None,
    maxphysaddr_mode: str | None = None,
    maxphysaddr_bits: int | None = None,
) -> tuple[dict[str, typing.Any] | None, list[str], list[str],
           plan_mod.Plan]:
    """``gpu flavor create``: returns (flavor or None, projects, warnings,
    plan)."""
    specs.check_sizes(vcpus, ram, disk, ephemeral, swap)
    specs.check_gpus(gpus)
    nova_rules.check_name(name, _('flavor name'))
    nova_rules.check_description(description)
    if projects and public:
        raise exceptions.CommandError(
            _('--project is only allowed with --private.'))
    cloud = _read(client)
    pools = cloud.pools
    pool = pools_mod.pool_name(pools, pool)
    the_pool = pools[pool]
    derived = specs.derive(the_pool, gpus=gpus, numa_policy=numa_policy,
                           properties=properties,
                           maxphysaddr_mode=maxphysaddr_mode,
                           maxphysaddr_bits=maxphysaddr_bits, ram=ram)
    agg_changes = specs.aggregate_changes(the_pool,
                                          derived['aggregate_metadata'])
    project_ids = snapshot.project_ids(client, projects or (),
                                       project_domain)
    wanted = {
        'vcpus': vcpus, 'ram': ram, 'disk': disk, 'ephemeral': ephemeral,
        'swap': swap, 'is_public': public, 'description': description,
        'extra_specs': derived['extra_specs'], 'projects': project_ids,
    }
    # a new name is a name: never looked up as an ID (Nova's GET
    # /flavors/<x> would find the flavor whose ID is x)
    existing = [f for f in snapshot.read_flavors(client, cloud)
                if f.get('name') == name]
    if len(existing) > 1:
        raise exceptions.CommandError(
            _('%(n)d flavors are named %(name)s: delete the extra ones '
              '(openstack flavor delete <ID>) or choose another name.')
            % {'n': len(existing), 'name': name})
    have = flavor_id = None
    if existing:
        flavor_id = existing[0]['id']
        have = flavor_plan.as_request(existing[0],
                                      flavor_projects(client, existing[0]))
    plan = flavor_plan.create(name, the_pool, wanted, agg_changes, have,
                              flavor_id)
    nova_rules.check_plan(plan)
    warnings = list(derived['warnings']) + plan.warnings
    if dry_run:
        return None, project_ids, warnings, plan
    executor = journal.run(client, plan, on_step=on_step)
    if executor is None:
        warnings.append(_('Flavor %s already exists with these settings: '
                          'nothing to do.') % name)
    else:
        warnings += executor.warnings
        flavor_id = flavor_id or executor.created_flavor(name)
    # the flavor existed, or the plan created it
    flavor = snapshot.flavor_by_id(client, flavor_id)  # type: ignore[arg-type]
    return flavor, project_ids, warnings, plan


def flavor_projects(client: GpuClient,
                    flavor: dict[str, typing.Any]) -> list[str]:
    if flavor.get('os-flavor-access:is_public', True):
        return []
    return snapshot.flavor_access(client, flavor['id'])


def set_image(client: GpuClient, image_name: str, dry_run: bool = False,
              **options: bool | None) -> plan_mod.Plan:
    """``gpu image set``: returns the plan (empty: nothing to do)."""
    image = snapshot.image(client, image_name)
    changes = images_mod.plan(image, **options)
    result = plan_mod.Plan(
        _('Updating image %s') % (image.get('name') or image['id']))
    result.add(plan_mod.update_image(image, changes or {}))
    journal.run(client, result, dry_run=dry_run)
    return result


def unset_image(client: GpuClient, image_name: str, dry_run: bool = False,
                **options: bool) -> plan_mod.Plan:
    """``gpu image unset``: returns the plan; its warnings name what is
    left because gpuclient did not set it."""
    image = snapshot.image(client, image_name)
    changes, notes = images_mod.plan_unset(image, **options)
    result = plan_mod.Plan(
        _('Updating image %s') % (image.get('name') or image['id']),
        warnings=notes)
    result.add(plan_mod.update_image(image, changes))
    journal.run(client, result, dry_run=dry_run)
    return result


def find_gpu_flavor(
    client: GpuClient, name_or_id: str,
    pools: dict[str, dict[str, typing.Any]], unambiguous: bool = False,
) -> tuple[dict[str, typing.Any], dict[str, typing.Any]]:
    flavor = snapshot.flavor(client, name_or_id, unambiguous=unambiguous)
    reading = specs.read(flavor.get('extra_specs'), pools)
    return flavor, reading


def list_flavors(
    client: GpuClient, pool: str | None = None, long: bool = False,
) -> list[tuple[dict[str, typing.Any], dict[str, typing.Any], list[str],
                list[str] | None]]:
    """[(flavor, specs reading, pools, projects or None)] of ``gpu flavor
    list``: the GPU flavors (of POOL), sorted by name; with LONG the
    projects of each private flavor (one request per private flavor)."""
    cloud = _read(client, required=bool(pool))
    pools = cloud.pools
    if pool:
        pool = pools_mod.pool_name(pools, pool)
    found = []
    for flavor in sorted(snapshot.read_flavors(client, cloud),
                         key=lambda f: (f.get('name') or '', f['id'])):
        reading = specs.read(flavor.get('extra_specs'), pools)
        if not reading['is_gpu']:
            continue
        in_pools = ([reading['pool']] if reading['pool']
                    else specs.matching_pools(reading, pools))
        if pool and pool not in in_pools:
            continue
        projects = flavor_projects(client, flavor) if long else None
        found.append((flavor, reading, in_pools, projects))
    return found


def delete(client: GpuClient, name: str,
           pools: dict[str, dict[str, typing.Any]],
           dry_run: bool = False) -> plan_mod.Plan:
    """Plan (and unless DRY_RUN apply) the deletion of one GPU flavor
    (name or ID); a flavor that is not a GPU flavor is refused. Returns
    the plan."""
    flavor, reading = find_gpu_flavor(client, name, pools, unambiguous=True)
    if not reading['is_gpu']:
        raise exceptions.CommandError(
            _('it is not a GPU flavor (use "openstack flavor delete")'))
    plan = flavor_plan.delete([flavor])
    journal.run(client, plan, dry_run=dry_run)
    return plan


def update(
    client: GpuClient,
    name: str,
    command: str = 'set',
    description: str | None = None,
    properties: dict[str, str] | None = None,
    unset: collections.abc.Iterable[str] = (),
    add_projects: collections.abc.Iterable[str] = (),
    remove_projects: collections.abc.Iterable[str] = (),
    project_domain: str | None = None,
    dry_run: bool = False,
    on_step: journal.OnStep | None = None,
) -> plan_mod.Plan:
    """``gpu flavor set`` (COMMAND 'set') and ``gpu flavor unset``: the
    description, other extra specs and projects of one GPU flavor (name
    or ID; projects by name or ID in PROJECT_DOMAIN). Returns the plan
    (empty: nothing to do); its warnings and the journal's are logged."""
    pools, _aggregates = read_pools(client, required=False)
    flavor = snapshot.flavor(client, name, unambiguous=True)
    flavor_plan.check_gpu_flavor(flavor, pools, command)
    access = flavor_projects(client, flavor)
    add = snapshot.project_ids(client, add_projects, project_domain)
    remove = []
    for project in remove_projects:
        pid = project if project in access else snapshot.project_id(
            client, project, project_domain)
        if pid not in remove:
            remove.append(pid)
    plan = flavor_plan.update(
        flavor, access, pools, description=description,
        properties=properties, unset=unset, add_projects=add,
        remove_projects=remove, command=command)
    journal.finish(client, plan, dry_run=dry_run, on_step=on_step)
    if not plan and not dry_run:
        LOG.warning(_('Flavor %s already has these settings: nothing to '
                      'do.'), flavor_plan.label(flavor))
    return plan
