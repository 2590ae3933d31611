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

"""``gpu usage list``: Nova's server usage for a period, joined with the
servers' embedded flavors and the pools, in a fixed number of requests.
"""

from __future__ import annotations

import collections.abc
import logging
import typing

from gpuclient.cloud import versions
from gpuclient.i18n import _
from gpuclient.ops import server_ops
from gpuclient.ops import snapshot
from gpuclient.ops import utilisation_ops
from gpuclient.rules import pools as pools_mod
from gpuclient.rules import usage
from gpuclient.rules import utilisation as utilisation_rules

if typing.TYPE_CHECKING:
    import datetime

    from gpuclient.cloud.client import GpuClient
    from gpuclient.rules import model
    from gpuclient.rules.profiles import demand as profile_demand

LOG = logging.getLogger(__name__)


def _nova_iso(when):
    return when.strftime('%Y-%m-%dT%H:%M:%SZ')


def collect(
    client: GpuClient, start: str | None = None, end: str | None = None,
    project: str | None = None, project_domain: str | None = None,
    pool: str | None = None,
    by: collections.abc.Iterable[str] | None = None,
    rates: collections.abc.Mapping[str, float] | None = None,
    now: datetime.datetime | None = None,
    utilisation: dict[str, typing.Any] | None = None,
) -> tuple[list[str], list[dict[str, typing.Any]], list[str]]:
    """(by, rows, notes): GPU-hours over the period, grouped.

    START and END are option texts; END defaults to now and START to
    four weeks before END (``usage.period``), as ``openstack usage
    list``.

    Requests, whatever the number of servers: host aggregates (pools;
    refused to a member, who then sees their own project), Nova's server
    usage for the period (paged), the servers with their embedded
    flavors (paged), the servers changed since the start (deleted ones,
    paged) only when the usage names servers the first list lacks, and
    the flavor list only when Nova no longer lists some server at all.

    UTILISATION (a dict: url, idle_below): each row also gets its
    GPU-hours split into used, idle and unknown (rules.utilisation
    .split_rows), from two Prometheus queries; an admin's read adds the
    cloud snapshot and the allocations of the used GPU providers, for
    the host-side figures of the servers that still hold their devices.
    """
    since, until = usage.period(start, end, now)
    # a lower --os-compute-api-version: refused before the first request
    client.compute.require(versions.COMPUTE_USAGE_LINKS_VERSION,
                           versions.COMPUTE_EMBEDDED_FLAVOR_VERSION)
    LOG.info(_('Usage from %(start)s to %(end)s (UTC).'),
             {'start': since.isoformat(),
              'end': until.isoformat()})
    rates = usage.parse_rates(rates) if rates else None
    keys = []
    for key in by or usage.DEFAULT_BY:
        if key not in keys:
            keys.append(key)
    by = keys
    project_id, own_id = server_ops.target_project(
        client, project, project_domain)
    notes = []
    cloud = snapshot.read_aggregates(client, warn=False, forbidden=True)
    admin = 'aggregates' not in cloud.unread
    if not admin:
        # a member: their own project, pools named by the flavors only
        if project_id not in (None, own_id):
            raise server_ops.not_yours(project, own_id)
        project_id = own_id
        usages = snapshot.read_server_usages(client, cloud, since, until,
                                             own_id)
        all_projects = False
    else:
        notes += [message for _agg, _pool, message in cloud.problems]
        if pool:
            pool = pools_mod.pool_name(cloud.pools, pool)
        usages = snapshot.read_server_usages(client, cloud, since, until,
                                             project_id)
        all_projects = project_id != own_id
    wanted = {u.get('instance_id') for u in usages}
    listed = _listed(client, cloud, wanted, all_projects, project_id, since)
    items, more = _usage_items(client, cloud, usages, wanted, listed, since,
                               until)
    notes += more
    rows, more = usage.usage_rows(items, by, rates, pool)
    notes += more
    if utilisation:
        rows = _split_rows(client, rows, items, by, since, until, admin,
                           **utilisation)
    return by, rows, notes


def _listed(
    client: GpuClient, cloud: model.Cloud, wanted: set[str | None],
    all_projects: bool, project_id: str | None, since: datetime.datetime,
) -> dict[str, dict[str, typing.Any]]:
    """{id: server} of the servers the usage names (WANTED): the servers
    of now (paged), and those changed since SINCE (deleted ones, paged)
    only when the first list lacks some."""
    listed: dict[str, dict[str, typing.Any]] = {}
    if wanted:
        scope = project_id if all_projects else None
        for server in snapshot.read_project_servers(
                client, cloud, all_projects, scope):
            listed[server['id']] = server
        if wanted - set(listed):
            for server in snapshot.read_changed_servers(
                    client, cloud, _nova_iso(since), all_projects, scope):
                listed.setdefault(server['id'], server)
    return listed


def _usage_items(client, cloud, usages, wanted, listed, start, end):
    """``usage.usage_items`` of USAGES with the servers LISTED ({id:
    server}) and CLOUD's pools; the flavor list is read only when some
    server of WANTED (the ids the usage names) is not listed at all."""
    flavors = None
    if wanted - set(listed):
        flavors = {f.get('name'): f
                   for f in snapshot.read_flavors(client, cloud)}
    return usage.usage_items(usages, listed, start, end, cloud.pools,
                             flavors)


def _split_rows(client, rows, items, by, start, end, admin, url=None,
                idle_below=utilisation_rules.DEFAULT_IDLE_BELOW):
    cloud = allocations = None
    if admin and items:
        client.compute.require(versions.COMPUTE_HYPERVISOR_UUID_VERSION)
        cloud = snapshot.read(client, mapped_only=True, with_traits=False)
        allocations = snapshot.read_allocations(client, cloud)
    split = utilisation_ops.usage_split(
        client, items, start, end, cloud, allocations, idle_below, url)
    return utilisation_rules.split_rows(rows, items, split, by)


def demand(
    client: GpuClient, start: str | None = None, end: str | None = None,
    now: datetime.datetime | None = None,
) -> tuple[tuple[datetime.datetime, datetime.datetime],
           list[profile_demand.Demand], list[str]]:
    """(period, [rules.profiles.demand.Demand], notes): the demand per GPU
    flavor over a period, for ``gpu profile plan --from-usage``.

    START and END as for ``collect``. Requests, whatever the number of
    servers: host aggregates (pools), Nova's server usage of every project
    for the period (paged), the servers of every project changed since
    START (paged: deleted ones and refused boots included, with their
    fault and embedded flavor), and the servers of now (paged) only when
    the usage names servers the second list lacks, and the flavor list
    only when Nova no longer lists some server at all.
    """
    from gpuclient.rules.profiles import demand as profile_demand

    since, until = usage.period(start, end, now)
    client.compute.require(versions.COMPUTE_USAGE_LINKS_VERSION,
                           versions.COMPUTE_EMBEDDED_FLAVOR_VERSION)
    cloud = snapshot.read_aggregates(client, warn=False)
    notes = [message for _agg, _pool, message in cloud.problems]
    usages = snapshot.read_server_usages(client, cloud, since, until, None)
    changed = {server['id']: server for server in snapshot
               .read_changed_servers(client, cloud, _nova_iso(since),
                                     all_projects=True)}
    wanted = {u.get('instance_id') for u in usages}
    if wanted - set(changed):
        # a server that ran in the period and has not changed since
        for server in snapshot.read_project_servers(client, cloud,
                                                    all_projects=True):
            changed.setdefault(server['id'], server)
    items, more = _usage_items(client, cloud, usages, wanted, changed, since,
                               until)
    notes += more
    return ((since, until),
            profile_demand.from_usage(items, changed.values(), since, until,
                                      cloud.pools),
            notes)
