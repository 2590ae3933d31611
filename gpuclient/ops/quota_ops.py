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

"""``gpu quota set/delete/show/list``: read Keystone's limits, plan with
``gpuclient.rules.quota``, apply with the journal.
"""

from __future__ import annotations

import collections.abc
import logging
import typing

from osc_lib import exceptions

from gpuclient.ops import snapshot
from gpuclient.rules import quota

if typing.TYPE_CHECKING:
    from gpuclient.cloud.client import GpuClient
    from gpuclient.rules import model
    from gpuclient.rules import plan as plan_mod

LOG = logging.getLogger(__name__)


def read_pools(client: GpuClient) -> model.Cloud:
    """The host aggregates as a ``model.Cloud`` (one request), its
    damaged pools warned about."""
    cloud = snapshot.read_aggregates(client, warn=False)
    snapshot.warn_problems(cloud.problems)
    return cloud


def target(
    client: GpuClient, pool: str | None, resource_class: str | None,
    project: str | None = None, project_domain: str | None = None,
    current: bool = False,
) -> tuple[dict[str, dict[str, typing.Any]], str, str | None]:
    """(pools, resource class, project id or None) of set, checked before
    any write."""
    pools, classes, project_id = targets(
        client, [pool] if pool is not None else (),
        [resource_class] if resource_class is not None else (),
        project, project_domain, current=current)
    return pools, classes[0], project_id


def targets(
    client: GpuClient,
    pool_names: collections.abc.Iterable[str],
    resource_classes: collections.abc.Iterable[str],
    project: str | None = None,
    project_domain: str | None = None,
    current: bool = False,
) -> tuple[dict[str, dict[str, typing.Any]], list[str], str | None]:
    """(pools, [resource class], project id or None) of set/delete: the
    classes of POOL_NAMES then RESOURCE_CLASSES, each once, all checked
    before any write. The project: PROJECT, else with CURRENT the current
    one, else None (the registered limit)."""
    cloud = read_pools(client)
    pools = cloud.pools
    classes = quota.target_classes(pools, pool_names, resource_classes)
    project_id = None
    if project:
        project_id = snapshot.project_id(client, project,
                                         project_domain)
    elif current:
        project_id = snapshot.current_project_id(client)
    for rc in classes:
        note = quota.shared_note(rc, pools)
        if note:
            LOG.warning(note)
    for note in pci_notes(client, cloud, classes):
        LOG.warning(note)
    return pools, classes, project_id


def pci_notes(
    client: GpuClient, cloud: model.Cloud,
    classes: collections.abc.Collection[str],
) -> list[str]:
    """The warnings for CLASSES whose limits the cloud's Nova does not
    enforce (asked through a PCI alias before Nova 2026.2), from CLOUD's
    pools; Nova's version is read only when a class is asked through an
    alias."""
    pools = cloud.pools
    if not any(rc in quota.pci_classes(pools) for rc in classes):
        return []
    try:
        version = snapshot.read_compute_max_version(client, cloud)
    except exceptions.CommandError as exc:
        LOG.debug('compute API version not readable: %s', exc)
        return []
    return [note for note in (quota.pci_not_enforced_note(rc, pools, version)
                              for rc in classes) if note]


def plan_and_apply(
    client: GpuClient,
    planner: collections.abc.Callable[..., plan_mod.Plan],
    *args: object,
    dry_run: bool = False,
    conf: dict[str, typing.Any] | None = None,
) -> plan_mod.Plan:
    """Read Keystone's limits, plan with quota.plan_set/plan_delete
    (PLANNER) from them and nova-api's [quota] settings CONF (None: Nova's
    defaults, assumed), apply the plan with the journal unless DRY_RUN;
    return the plan. ARGS: the planner's, up to the project id."""
    from gpuclient.ops import journal

    project_id = args[-1]
    # ARGS end with the project id (or None)
    registered, limits = snapshot.keystone_limits(
        client, project_id)  # type: ignore[arg-type]
    plan = planner(*args, registered, limits, conf=conf)
    for warning in plan.warnings:
        LOG.warning(warning)
    journal.run(client, plan, dry_run=dry_run)
    return plan


def show(
    client: GpuClient, project: str | None = None,
    project_domain: str | None = None,
    conf: dict[str, typing.Any] | None = None, defaults: bool = False,
) -> tuple[list[dict[str, typing.Any]], list[str]]:
    """(rows, notes) of ``gpu quota show``: the project's limit per GPU
    class (``quota.show_rows``) and the notes on enforcement, strategy
    and sharing. CONF: nova-api's [quota] settings, or None. DEFAULTS
    (``--default``): the registered limits, what a project without its
    own gets; no project nor usage is read."""
    if defaults:
        cloud = read_pools(client)
        pools = cloud.pools
        registered = {n: r['limit'] for n, r in
                      snapshot.read_registered(client, cloud).items()}
        rows = quota.show_rows(pools, {}, registered, {}, conf,
                               defaults=True)
        return rows, notes(conf, None, {}, registered,
                           [r['resource_class'] for r in rows], pools)
    if project:
        project_id = snapshot.project_id(client, project, project_domain)
    else:
        project_id = snapshot.current_project_id(client)
    cloud = read_pools(client)
    pools = cloud.pools
    registered = {n: r['limit'] for n, r in
                  snapshot.read_registered(client, cloud).items()}
    own = {item['resource_name']: item['resource_limit']
           for item in snapshot.read_project_limits(client, cloud,
                                                    project_id)
           if item['project_id'] == project_id}
    usages = snapshot.read_project_usages(client, cloud, project_id)
    absolute = None
    if conf is None:
        try:
            absolute = snapshot.read_compute_limits(client, cloud,
                                                    project_id)
        except exceptions.CommandError as exc:
            LOG.debug('compute limits not readable: %s', exc)
    rows = quota.show_rows(pools, own, registered, usages, conf)
    classes = [r['resource_class'] for r in rows]
    return rows, (notes(conf, absolute, own, registered, classes, pools)
                  + pci_notes(client, cloud, classes))


def notes(
    conf: dict[str, typing.Any] | None,
    absolute: dict[str, typing.Any] | None,
    own: dict[str, int],
    registered: dict[str, int],
    classes: collections.abc.Collection[str],
    pools: dict[str, dict[str, typing.Any]],
) -> list[str]:
    """stderr notes of ``gpu quota show``: enforcement, strategy, sharing."""
    found = []
    state, why = quota.enforcement(conf, absolute, own, registered)
    if state == quota.LEGACY:
        found.append(quota.legacy_text(why))
    elif state == quota.UNKNOWN:
        LOG.debug('quota driver: %s', why)
    problems = quota.strategy_problems(
        [rc for rc in classes if quota.resource_name(rc) not in own],
        registered, conf or quota.conf_settings(None))
    if problems:
        found.append(quota.strategy_text(
            problems, conf or quota.conf_settings(None)))
    for rc in classes:
        note = quota.shared_note(rc, pools)
        if note:
            found.append(note)
    return found


def list_limits(client: GpuClient) -> tuple[list[dict[str, typing.Any]],
                                            dict[str, str | None]]:
    """(rows, {project id: name}) of ``gpu quota list``."""
    cloud = read_pools(client)
    rows = quota.list_rows(cloud.pools,
                           snapshot.read_project_limits(client, cloud))
    names = (snapshot.project_names(
        client, {r['project_id'] for r in rows}) if rows else None) or {}
    for note in pci_notes(client, cloud, sorted({r['resource_class']
                                                 for r in rows})):
        LOG.warning(note)
    return rows, names
