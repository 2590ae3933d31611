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

"""``gpu server list``: the servers that hold GPUs, from one snapshot,
the server list and the allocations of the GPU providers in use; and
the target project of the read commands (admin or member).
"""

from __future__ import annotations

import typing

from osc_lib import exceptions

from gpuclient.cloud import errors
from gpuclient.cloud import versions
from gpuclient.i18n import _
from gpuclient.ops import snapshot
from gpuclient.ops import utilisation_ops
from gpuclient.rules import pools as pools_mod
from gpuclient.rules import usage
from gpuclient.rules import utilisation as utilisation_rules

if typing.TYPE_CHECKING:
    from gpuclient.cloud.client import GpuClient
    from gpuclient.rules import model


def target_project(
    client: GpuClient, project: str | None = None,
    project_domain: str | None = None,
) -> tuple[str | None, str]:
    """(project id or None, own project id): None is "every project"."""
    own_id, own_name = snapshot.current_project(client)
    wanted = project
    if not wanted:
        return None, own_id
    if wanted in (own_id, own_name) and not project_domain:
        return own_id, own_id
    try:
        return snapshot.project_id(client, wanted, project_domain), own_id
    except errors.APIError as exc:
        if exc.status == 403:
            raise not_yours(wanted, own_name) from exc
        raise


def not_yours(project: str | None,
              own_name: str) -> exceptions.CommandError:
    return exceptions.CommandError(
        _('You may only see your own project (%(own)s), not %(project)s: '
          'Nova lets only admins read other projects\' servers and usage. '
          'Drop --project, or use an account with the admin role.')
        % {'own': own_name, 'project': project})


def forbidden(exc: BaseException) -> bool:
    return isinstance(exc, errors.APIError) and exc.status == 403


def collect(
    client: GpuClient, project: str | None = None,
    project_domain: str | None = None, all_projects: bool = False,
    host: str | None = None, pool: str | None = None,
    utilisation: dict[str, typing.Any] | None = None,
) -> tuple[list[dict[str, typing.Any]], list[str]]:
    """(rows, notes): what ``gpu server list`` shows.

    The servers of the current project, as ``openstack server list``;
    of every project with ALL_PROJECTS, of PROJECT when given (admin).
    Admin: the cloud snapshot (a fixed number of requests), the servers
    with their embedded flavors (paged), and
    the allocations of the GPU providers that have usage (one request
    per used GPU provider, concurrently; never one per server). Member:
    the own project's servers only, GPUs from their embedded flavors.

    UTILISATION (a dict of ``utilisation_ops.server_rows`` arguments:
    window, idle_below, url, idle): one row per server and device with
    the figures of the cloud's Prometheus (a constant number of queries
    more); with idle true, the idle rows only.
    """
    # a lower --os-compute-api-version: refused before the first request
    client.compute.require(versions.COMPUTE_EMBEDDED_FLAVOR_VERSION,
                           versions.COMPUTE_HYPERVISOR_UUID_VERSION)
    project_id, own_id = target_project(client, project, project_domain)
    if project_id is None and not all_projects:
        project_id = own_id
    notes = []
    try:
        cloud = snapshot.read(client, mapped_only=True, with_traits=False)
    except exceptions.CommandError as exc:
        if not forbidden(exc):
            raise
        cloud, member = None, snapshot.refused(str(exc))
    if cloud is None:
        if project_id is None:
            raise exceptions.CommandError(_(
                '--all-projects needs admin: Nova lists other projects\' '
                'servers to admins only. Drop --all-projects (and unset '
                'ALL_PROJECTS), or use an account with the admin role.'))
        if project_id != own_id:
            raise not_yours(project, own_id)
        if host:
            raise exceptions.CommandError(_(
                '--host needs admin: Nova shows hosts to admins only. Drop '
                '--host, or use an account with the admin role.'))
        servers = snapshot.read_project_servers(client, member)
        notes.append(_(
            'Showing your project\'s servers only, with the GPUs their '
            'flavors ask for: hosts, pools and devices need admin (Nova '
            'hides hosts, Placement allocations are admin-only).'))
        rows = usage.server_rows(servers, None, host=None,
                                 pool=pool)
        return _with_utilisation(client, rows, None, {}, utilisation), notes
    for _agg, _pool, message in cloud.problems:
        notes.append(message)
    roots = None
    if pool:
        pool = pools_mod.pool_name(cloud.pools, pool)
    host_roots = cloud.host_roots()
    if host:
        found, resolved = cloud.resolve_hosts([host])
        host = found[0]
        notes += resolved
        roots = set(host_roots.get(host, ()))
    if pool:
        pool_roots = set()
        for member in cloud.pools[pool]['hosts']:
            pool_roots |= host_roots.get(member, set())
        roots = pool_roots if roots is None else roots & pool_roots
    servers = snapshot.read_project_servers(
        client, cloud, all_projects=project_id != own_id,
        project_id=project_id if project_id != own_id else None)
    allocations = snapshot.read_allocations(client, cloud, roots)
    rows = usage.server_rows(servers, cloud, allocations, host=host,
                             pool=pool)
    assert cloud.placement is not None  # noqa: S101 - read with Placement
    notes += cloud.placement.notes()
    rows = _with_utilisation(client, rows, cloud, allocations, utilisation)
    return rows, notes


def every_server_utilisation(
    client: GpuClient, cloud: model.Cloud, window: int, idle_below: float,
    url: str | None = None,
) -> list[dict[str, typing.Any]]:
    """``gpu server list --all-projects --utilisation`` over CLOUD (a
    snapshot already read): every project's servers (paged), the
    allocations of the GPU providers in use and the five PromQL queries
    of ``utilisation_ops.server_rows``."""
    servers = snapshot.read_servers(client, cloud)
    allocations = snapshot.read_allocations(client, cloud)
    rows = usage.server_rows(servers, cloud, allocations)
    return utilisation_ops.server_rows(client, rows, cloud, allocations,
                                       window, idle_below, url=url,
                                       strict=True)


def _with_utilisation(
    client: GpuClient, rows: list[dict[str, typing.Any]],
    cloud: model.Cloud | None,
    allocations: dict[str, dict[str, dict[str, int]]],
    wanted: dict[str, typing.Any] | None,
) -> list[dict[str, typing.Any]]:
    if not wanted:
        return rows
    wanted = dict(wanted)
    idle_only = wanted.pop('idle', False)
    rows = utilisation_ops.server_rows(client, rows, cloud, allocations,
                                       **wanted)
    if idle_only:
        rows = [r for r in rows if r['state'] == utilisation_rules.IDLE]
    return rows
