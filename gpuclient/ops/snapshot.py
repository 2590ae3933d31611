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

"""The one reader of the cloud: it fills ``gpuclient.rules.model.Cloud``.

``read`` takes a fixed number of requests whatever the number of hosts or
flavors (all I/O goes through the client layer):
host aggregates, hypervisors, compute services, flavors (when asked),
resource classes, and the Placement snapshot of ``placement_snapshot``
(the provider list, one allocation-candidates answer whose provider
summaries cover every tree with a free VCPU, one per GPU class for the
trees left, and a per-provider read only for trees no summary covers).

``gpu host list`` and ``gpu capacity list`` ask their questions of it;
``gpu candidate list`` takes its Nova side from it
(``with_placement=False``) and asks Placement the flavor's own query.

What a command needs besides is read into the same model, each once:
``read_access`` (the access lists of private GPU flavors, one request
each), ``read_limits`` (Keystone's limits, two requests) and
``read_servers`` (every project's servers, paged). The model is plain data
with pure questions: which roots a host has, the aggregates a root is in,
a provider tree in the shape ``gpuclient.rules.scheduler.fit`` counts in.

Every read of ``ops`` is here (the journal's read-backs of its own writes
aside): each ``read_<what>(client, cloud, ...)`` fills one field of the
model and returns it; a lookup (``project_id``, ``flavor``, ``image``,
``provider_allocations``, ...) returns what it resolves, and the drain's
read-backs (``servers_on``, ``migrations_of``, ``compute_services``)
what is there now (``test_layers.TestOneWayToRead``).
"""

from __future__ import annotations

import collections.abc
import concurrent.futures
import logging
import typing

from osc_lib import exceptions

from gpuclient.cloud import errors
from gpuclient.cloud import versions
from gpuclient.rules import baremetal
from gpuclient.rules import host_names
from gpuclient.rules import hosts
from gpuclient.rules import model
from gpuclient.rules import pool_plan
from gpuclient.rules import pools as pools_mod
from gpuclient.rules import reservations
from gpuclient.rules import specs

if typing.TYPE_CHECKING:
    import datetime

    from openstack.compute.v2 import aggregate as sdk_aggregate

    from gpuclient.cloud import placement as placement_mod
    from gpuclient.cloud.client import GpuClient

LOG = logging.getLogger(__name__)


def warn_problems(
        problems: collections.abc.Iterable[tuple[str, str, str]]) -> None:
    """The one way a damaged pool is reported: one warning per aggregate
    that ``pools.scan`` skipped (``problems``), naming it and its fix."""
    for _agg, _pool, message in problems:
        LOG.warning(message)


def named_pools(
    client: GpuClient, pool_names: collections.abc.Iterable[str],
    with_flavors: bool = True,
) -> tuple[list[sdk_aggregate.Aggregate], dict[str, dict[str, typing.Any]],
           list[str]]:
    """(aggregates, pools, names) of a command about the pools POOL_NAMES
    (names or aggregate IDs; NAMES: their pool names) and
    their hosts' trees (``gpu config show``, ``gpu profile plan
    --pool``, ``gpu host list --pool``): refused before the first request
    below the compute API versions such a read needs (hypervisor uuids,
    and flavor extra specs WITH_FLAVORS, as ``read`` asks), and a name
    that is no pool is refused before anything else is read.
    """
    client.compute.require(
        versions.COMPUTE_HYPERVISOR_UUID_VERSION,
        *([versions.COMPUTE_FLAVOR_SPECS_VERSION] if with_flavors else []))
    aggregates = client.compute.aggregates()
    pools, _problems = pools_mod.scan(
        [pools_mod.aggregate_dict(a) for a in aggregates])
    return aggregates, pools, pools_mod.pool_names(pools, pool_names)


def read_aggregates(client: GpuClient, warn: bool = True,
                    forbidden: bool = False) -> model.Cloud:
    """A ``model.Cloud`` of the host aggregates alone (one request; its
    hypervisors and services not read, None), what a pool write reads
    first (then what it needs: ``read_services``, ``read_hypervisors``,
    ``read_for_hosts``), and a command that needs the pools and none of
    the hosts' trees. Unless not WARN, each damaged pool is warned of
    (``warn_problems``).

    FORBIDDEN: Nova's 403 (it lists aggregates to admins only) gives a
    Cloud without aggregates, why in ``unread['aggregates']``, for a
    command a member may run without pools; any other error is raised.
    """
    try:
        aggregates = client.compute.aggregates()
    except errors.APIError as exc:
        if not forbidden or exc.status != 403:
            raise
        return refused(str(exc))
    cloud = model.Cloud(aggregates, None, None)
    if warn:
        warn_problems(cloud.problems)
    return cloud


def refused(why: str) -> model.Cloud:
    """The ``model.Cloud`` of a member, whom Nova refused the aggregates
    (WHY, in ``unread['aggregates']``): no aggregates, hence no pools;
    what a member may read (its own project's servers and usage) is read
    into it."""
    cloud = model.Cloud([], None, None)
    cloud.unread['aggregates'] = why
    return cloud


def read(
    client: GpuClient,
    extra_classes: collections.abc.Iterable[str] = (),
    with_flavors: bool = False,
    wanted_hosts: collections.abc.Container[str] | None = None,
    mapped_only: bool = False,
    with_traits: bool = True,
    aggregates: list[sdk_aggregate.Aggregate] | None = None,
    with_placement: bool = True,
    with_images: bool = False,
    with_pool_members: bool = False,
    with_projects: bool = False,
) -> model.Cloud:
    """A ``model.Cloud``, read in a fixed number of requests (see above).

    WANTED_HOSTS (compute host names) or MAPPED_ONLY (every tree a Nova
    hypervisor maps to) limit the per-provider reads of trees that no
    summary covers; WITH_TRAITS reads those providers' traits too.
    AGGREGATES: the host aggregates, when the caller already read them.
    Without WITH_PLACEMENT only Nova (and Glance, WITH_IMAGES) is read
    (``placement`` is None): for a command that asks Placement its own
    question, or none.
    WITH_IMAGES reads every image the caller sees (paged);
    WITH_POOL_MEMBERS reads each pool's Placement aggregate members (one
    request per pool, none per host).
    WITH_PROJECTS reads Keystone's project list (one request), only when
    some pool is limited to projects. Whether Blazar runs (``blazar``)
    comes from the token's catalog, without a request; where it does, its
    host list is read (one request, ``read_blazar``).
    """
    # a lower --os-compute-api-version: refused before the first request
    client.compute.require(
        versions.COMPUTE_HYPERVISOR_UUID_VERSION,
        *([versions.COMPUTE_FLAVOR_SPECS_VERSION] if with_flavors else []))
    if aggregates is None:
        aggregates = client.compute.aggregates()
    pools, _problems = pools_mod.scan(
        [pools_mod.aggregate_dict(a) for a in aggregates])
    hypervisors = client.compute.hypervisors()
    services = client.compute.compute_services()
    flavors = client.compute.flavors() if with_flavors else None
    if not with_placement:
        # the classes and pool members are read with Placement: None
        cloud = model.Cloud(aggregates, hypervisors, services, None,
                      flavors=flavors)
        read_blazar(client, cloud)
        if with_images:
            cloud.images = client.image.images()
        return cloud
    known = client.placement.resource_classes()
    classes = hosts.gpu_classes(
        known, [p['resource_class'] for p in pools.values()], extra_classes)
    wanted = None
    if wanted_hosts is not None or mapped_only:
        wanted = {hv['id'] for hv in hypervisors
                  if wanted_hosts is None
                  or host_names.nova_host(hv) in wanted_hosts}
    placement = placement_snapshot(
        client.placement, classes, wanted_roots=wanted,
        with_traits=with_traits)
    cloud = model.Cloud(aggregates, hypervisors, services, placement,
                  flavors=flavors, gpu_classes=classes,
                  known_classes=set(known))
    read_blazar(client, cloud)
    if with_images:
        cloud.images = client.image.images()
    if with_pool_members:
        cloud.pool_members = {name: members_of(client, pool)
                              for name, pool in sorted(pools.items())}
    if with_projects and any(p['projects'] for p in pools.values()):
        cloud.projects = _projects(client, pools)
    return cloud


def runs_blazar(client: GpuClient) -> bool:
    """Whether the cloud runs Blazar: its service type in the token's
    catalog (no request)."""
    return bool(client.in_catalog(reservations.SERVICE_TYPE))


def read_blazar(client: GpuClient, cloud: model.Cloud) -> None:
    """CLOUD's Blazar: whether the catalog lists it (no request) and, when
    it does, the hosts enrolled in it (one request); where Blazar cannot
    say (a 403 without admin, a 404, Blazar down), why in
    ``cloud.unread['blazar_hosts']``, and the held hosts are found by
    Blazar's default freepool name (``model.Cloud.held_hosts``)."""
    cloud.blazar = runs_blazar(client)
    if not cloud.blazar:
        return
    try:
        cloud.blazar_hosts = client.reservation.hosts()
    except exceptions.CommandError as exc:
        LOG.debug('Blazar\'s host list not read: %s', exc)
        cloud.unread['blazar_hosts'] = str(exc)


def read_services(client: GpuClient,
                  cloud: model.Cloud) -> list[model.Service]:
    """CLOUD's compute services, read (one request) unless they were."""
    if cloud.services is None:
        cloud.services = client.compute.compute_services()
    return cloud.services


def read_hypervisors(client: GpuClient,
                     cloud: model.Cloud) -> list[model.Hypervisor]:
    """CLOUD's hypervisors, read (paged) unless they were."""
    if cloud.hypervisors is None:
        cloud.hypervisors = client.compute.hypervisors()
    return cloud.hypervisors


def resolve_hosts(
    client: GpuClient, cloud: model.Cloud,
    names: collections.abc.Iterable[str],
    members: collections.abc.Iterable[str] | None = None,
) -> tuple[list[str], list[str]]:
    """(compute hosts meant by NAMES, notes): ``model.resolve_hosts`` over
    CLOUD's services and hypervisors (read unless they were), with
    Placement's providers, read only when those do not explain a name."""
    return model.resolve_hosts(
        names, read_services(client, cloud), read_hypervisors(client, cloud),
        client.placement.resource_providers, members)


def host_has_servers(client: GpuClient, host: str) -> bool:
    """Whether compute host HOST has instances, of any project (one
    request)."""
    return client.compute.host_has_servers(host)


def roots_of(client: GpuClient, cloud: model.Cloud, host: str) -> list[str]:
    """Root provider uuids of a Nova host (several for Ironic), from
    CLOUD's hypervisors (read unless they were)."""
    return sorted(hv['id'] for hv in read_hypervisors(client, cloud)
                  if host_names.nova_host(hv) == host)


def read_for_hosts(
    client: GpuClient,
    cloud: model.Cloud,
    hosts: collections.abc.Collection[str],
    resource_class: str | None = None,
    traits: collections.abc.Collection[str] = (),
    flavors: bool = False,
    images: bool = False,
    access_for: dict[str, typing.Any] | None = None,
    servers: bool = False,
) -> dict[str, list[str]]:
    """What a pool write on HOSTS reads besides its aggregates (read
    first, into CLOUD; services and hypervisors when it needs them:
    ``read_services``, ``read_hypervisors``), into CLOUD, each read
    unless it was (what an earlier read filled is kept; what was not
    asked for is left as it is): with SERVERS every project's servers;
    with RESOURCE_CLASS the Placement snapshot of the hosts' trees with
    their traits (``_read_trees``); which of TRAITS Placement has; with
    FLAVORS the flavors, and with ACCESS_FOR (a pool) the access lists of
    the private ones steering to it; with IMAGES the images. Returns
    {host: [root provider uuids]} of HOSTS."""
    if servers and cloud.servers is None:
        read_servers(client, cloud)
    if hosts and resource_class:
        roots = set()
        for host in hosts:
            roots.update(roots_of(client, cloud, host))
        _read_trees(client, cloud, roots, resource_class)
    read_existing_traits(client, cloud, traits)
    if flavors and cloud.flavors is None:
        cloud.flavors = client.compute.flavors()
    if access_for is not None:
        if cloud.access is None:
            cloud.access = {}
        for flavor in (pool_plan.flavors_of(cloud, access_for)
                       if cloud.flavors else ()):
            if (not flavor.get('os-flavor-access:is_public', True)
                    and flavor['id'] not in cloud.access):
                cloud.access[flavor['id']] = client.compute.flavor_access(
                    flavor['id'])
    found = {host: roots_of(client, cloud, host) for host in hosts}
    if images and cloud.images is None:
        cloud.images = client.image.images()
    return found


def _read_trees(client: GpuClient, cloud: model.Cloud,
                roots: collections.abc.Collection[str],
                resource_class: str) -> None:
    """The Placement snapshot of the trees of ROOTS, with their traits,
    into CLOUD's ``placement`` (``placement_snapshot`` for
    RESOURCE_CLASS, which joins CLOUD's ``gpu_classes``): read unless it
    was; where an earlier read left some of those trees out (or read
    them without traits), those are read and added to it
    (``model.Placement.add_trees``), every other tree kept as read."""
    if cloud.placement is None:
        cloud.placement = placement_snapshot(
            client.placement, {resource_class}, wanted_roots=roots,
            with_traits=True)
    else:
        missing = cloud.placement.unread_roots(roots)
        if missing:
            cloud.placement.add_trees(placement_snapshot(
                client.placement, {resource_class}, wanted_roots=missing,
                with_traits=True), missing)
    cloud.gpu_classes = (cloud.gpu_classes or set()) | {resource_class}


def read_access(
    client: GpuClient, cloud: model.Cloud,
    pool_names: collections.abc.Container[str],
) -> dict[str, list[str]]:
    """The access lists of CLOUD's private flavors that steer to a pool
    of POOL_NAMES into its ``access`` ({flavor id: [project ids]}; one
    request per such flavor). A flavor deleted since the flavor list is
    dropped from CLOUD's flavors: the cloud no longer has it."""
    access, gone = {}, set()
    assert cloud.flavors is not None  # noqa: S101 - read with flavors
    for flavor in cloud.flavors:
        if (not flavor.get('os-flavor-access:is_public', True)
                and specs.read(flavor.get('extra_specs'),
                               cloud.pools)['pool'] in pool_names):
            try:
                access[flavor['id']] = client.compute.flavor_access(
                    flavor['id'])
            except errors.NotFound:
                gone.add(flavor['id'])
    if gone:
        cloud.flavors = [f for f in cloud.flavors if f['id'] not in gone]
    cloud.access = access
    return access


def read_existing_traits(
    client: GpuClient, cloud: model.Cloud,
    traits: collections.abc.Collection[str],
) -> set[str]:
    """Which of TRAITS Placement has, added to CLOUD's ``existing_traits``
    (what an earlier read found is kept; one request, none when TRAITS is
    empty); returns them."""
    found = (client.placement.existing_traits(set(traits))
             if traits else set())
    cloud.existing_traits = (cloud.existing_traits or set()) | found
    return found


def read_limits(client: GpuClient, cloud: model.Cloud) -> None:
    """Keystone's registered and project limits of the compute service
    (two requests) into CLOUD's ``registered`` and ``limits``."""
    cloud.registered = client.limits.registered()
    cloud.limits = client.limits.limits()


def keystone_limits(
    client: GpuClient, project_id: str | None = None,
) -> tuple[dict[str, dict[str, typing.Any]], list[dict[str, typing.Any]]]:
    """(registered limits, project limits of PROJECT_ID or of every
    project): Keystone's two lists of the compute service (two
    requests), for a quota write, which plans from them alone (no
    aggregate read, hence no ``model.Cloud``)."""
    return client.limits.registered(), client.limits.limits(project_id)


def read_registered(
    client: GpuClient, cloud: model.Cloud,
) -> dict[str, dict[str, typing.Any]]:
    """Keystone's registered limits of the compute service (one request)
    into CLOUD's ``registered``; returns them."""
    cloud.registered = client.limits.registered()
    return cloud.registered


def read_project_limits(
    client: GpuClient, cloud: model.Cloud, project_id: str | None = None,
) -> list[dict[str, typing.Any]]:
    """Keystone's project limits of the compute service (one request), of
    PROJECT_ID or of every project the caller sees, into CLOUD's
    ``limits``; returns them."""
    cloud.limits = client.limits.limits(project_id)
    return cloud.limits


def read_project_usages(client: GpuClient, cloud: model.Cloud,
                        project_id: str) -> dict[str, int]:
    """What PROJECT_ID holds in Placement (its usages, one request) into
    CLOUD's ``project_usages``; returns them."""
    cloud.project_usages = client.placement.project_usages(project_id)
    return cloud.project_usages


def read_compute_limits(client: GpuClient, cloud: model.Cloud,
                        project_id: str) -> dict[str, typing.Any]:
    """Nova's absolute limits and usage of PROJECT_ID (one request) into
    CLOUD's ``compute_limits``; returns them."""
    cloud.compute_limits = client.compute.project_limits(project_id)
    return cloud.compute_limits


def read_compute_max_version(
    client: GpuClient, cloud: model.Cloud,
) -> tuple[int, int] | None:
    """Nova's maximum compute microversion (from the version discovery
    of its endpoint, which the session caches) into CLOUD's
    ``compute_max_version``; returns it."""
    cloud.compute_max_version = client.compute.max_version()
    return cloud.compute_max_version


def read_servers(client: GpuClient,
                 cloud: model.Cloud) -> list[dict[str, typing.Any]]:
    """Every project's servers (one paged read, at the compute API
    version that embeds their flavor and names their host) into CLOUD's
    ``servers``, for a plan that moves servers or takes hosts out of
    pools; returns them."""
    client.compute.require(versions.COMPUTE_EMBEDDED_FLAVOR_VERSION)
    cloud.servers = client.compute.servers_detail(all_projects=True)
    return cloud.servers


def read_project_servers(
    client: GpuClient, cloud: model.Cloud, all_projects: bool = False,
    project_id: str | None = None,
) -> list[dict[str, typing.Any]]:
    """The servers Nova lists (one paged read, with their embedded flavor
    and host: the caller requires that compute API version): of the
    caller's own project, of PROJECT_ID with ALL_PROJECTS (admin), or of
    every project with ALL_PROJECTS alone; into CLOUD's ``servers``;
    returns them."""
    cloud.servers = client.compute.servers_detail(
        all_projects=all_projects, project_id=project_id)
    return cloud.servers


def read_changed_servers(
    client: GpuClient, cloud: model.Cloud, since: str,
    all_projects: bool = False, project_id: str | None = None,
) -> list[dict[str, typing.Any]]:
    """The servers changed since SINCE (ISO time, Nova's changes-since:
    deleted ones included; one paged read), of the projects
    ``read_project_servers`` reads, into CLOUD's ``changed_servers``;
    returns them."""
    cloud.changed_servers = client.compute.servers_detail(
        all_projects=all_projects, project_id=project_id,
        changes_since=since)
    return cloud.changed_servers


def read_server_usages(
    client: GpuClient, cloud: model.Cloud, start: datetime.datetime,
    end: datetime.datetime, project_id: str | None,
) -> list[dict[str, typing.Any]]:
    """Nova's usage of each server from START to END (paged), of
    PROJECT_ID or of every project (None), into CLOUD's
    ``server_usages``; returns them."""
    cloud.server_usages = client.compute.server_usages(start, end,
                                                       project_id)
    return cloud.server_usages


def read_flavors(client: GpuClient,
                 cloud: model.Cloud) -> list[dict[str, typing.Any]]:
    """Every flavor with its extra specs (one paged read) into CLOUD's
    ``flavors``; returns them."""
    cloud.flavors = client.compute.flavors()
    return cloud.flavors


def services_of(
    client: GpuClient, names: collections.abc.Iterable[str],
) -> tuple[list[model.Service], list[str]]:
    """(the nova-compute services of the hosts NAMES mean, in the order
    given; the notes of the resolution): the services and hypervisors
    (two requests) and, only when they do not explain a name, the
    resource providers (``model.resolve_hosts``)."""
    compute = client.compute
    compute.require(versions.COMPUTE_HYPERVISOR_UUID_VERSION)
    services = compute.compute_services()
    hosts, notes = model.resolve_hosts(
        names, services, compute.hypervisors(),
        client.placement.resource_providers)
    by_host = {svc['host']: svc for svc in services}
    return [by_host[host] for host in hosts if host in by_host], notes


def compute_services(client: GpuClient) -> list[model.Service]:
    """The nova-compute services as Nova has them now (one request), for
    a write that reads its hosts back before its last step."""
    return client.compute.compute_services()


def read_migrations(
    client: GpuClient, cloud: model.Cloud,
    hosts: collections.abc.Sequence[str] | None = None,
    status: str | None = None, migration_type: str | None = None,
) -> list[dict[str, typing.Any]]:
    """Nova's migrations into CLOUD's ``migrations`` (one paged read): of
    HOSTS (``migrations_of``), else those of STATUS and MIGRATION_TYPE;
    returns them."""
    if hosts is not None:
        cloud.migrations = migrations_of(client, hosts)
    else:
        cloud.migrations = client.compute.migrations(
            status=status, migration_type=migration_type)
    return cloud.migrations


def migrations_of(
    client: GpuClient, hosts: collections.abc.Sequence[str],
) -> list[dict[str, typing.Any]]:
    """Nova's migrations of HOSTS (one paged read: by the host filter for
    one host, which matches source or destination; every migration for
    several, as the filter takes one value)."""
    return client.compute.migrations(
        host=hosts[0] if len(hosts) == 1 else None)


def servers_on(
    client: GpuClient, hosts: collections.abc.Iterable[str],
) -> list[dict[str, typing.Any]]:
    """Every project's servers on HOSTS: one server list per host (Nova's
    ``host`` filter), whatever the number of servers; for a write that
    reads its hosts back."""
    servers = []
    for host in hosts:
        servers += client.compute.servers_detail(all_projects=True,
                                                 host=host)
    return servers


def read_providers(client: GpuClient,
                   cloud: model.Cloud) -> list[dict[str, typing.Any]]:
    """Every resource provider as Placement lists it (one request) into
    CLOUD's ``resource_providers``, for a command that asks Placement its
    own question and reads no ``placement_snapshot``; returns them."""
    cloud.resource_providers = client.placement.resource_providers()
    return cloud.resource_providers


def allocation_candidates(
    client: GpuClient, params: collections.abc.Iterable[tuple[str, str]],
    what: str | None = None,
) -> dict[str, typing.Any]:
    """Placement's answer to one allocation-candidates query (PARAMS:
    (key, value) pairs, sent in that order, as Nova's scheduler builds
    them; WHAT: what the error says was asked)."""
    return client.placement.candidates_query(params, what=what)


def provider_allocations(client: GpuClient,
                         uuid: str) -> dict[str, dict[str, int]]:
    """{consumer: {class: amount}} allocated from the provider UUID (one
    request)."""
    return client.placement.provider_allocations(uuid)


def provider_summaries_of(
    client: GpuClient, uuids: collections.abc.Iterable[str],
    with_traits: bool = False,
) -> dict[str, dict[str, typing.Any]]:
    """``provider_summaries`` of the providers UUIDS, read with CLIENT's
    Placement (one request each, concurrently and bounded)."""
    return provider_summaries(client.placement, uuids,
                              with_traits=with_traits)


def read_allocations(
    client: GpuClient, cloud: model.Cloud,
    roots: collections.abc.Container[str] | None = None,
) -> dict[str, dict[str, dict[str, int]]]:
    """{provider uuid: {consumer: {class: amount}}} of CLOUD's GPU
    providers with usage (in the trees of ROOTS, when given) into its
    ``allocations``: one request per used GPU provider, concurrently;
    never one per server. Returns them."""
    cloud.allocations = client.placement.providers_allocations(
        _used_gpu_providers(cloud, roots))
    return cloud.allocations


def _used_gpu_providers(
    cloud: model.Cloud, roots: collections.abc.Container[str] | None = None,
) -> list[str]:
    """GPU providers with usage (in the trees of ROOTS, when given)."""
    assert cloud.placement is not None  # noqa: S101 - read with Placement
    assert cloud.gpu_classes is not None  # noqa: S101 - read with it
    snap = cloud.placement
    found = []
    for uuid, summary in snap.summaries.items():
        if roots is not None and snap.providers[uuid]['root'] not in roots:
            continue
        for rc, item in (summary.get('resources') or {}).items():
            if rc in cloud.gpu_classes and item.get('used'):
                found.append(uuid)
                break
    return sorted(found)


def current_project(client: GpuClient) -> tuple[str, str]:
    """(id, name) of the project the command runs in (its token's
    scope)."""
    return client.current_project()


def project_id(client: GpuClient, name_or_id: str,
               domain: str | None = None) -> str:
    """The Keystone id of the project NAME_OR_ID (a name in DOMAIN, or
    an id)."""
    return client.project_id(name_or_id, domain)


def current_project_id(client: GpuClient) -> str:
    """The id of the project the command runs in (its token's scope)."""
    return client.current_project_id()


def project_ids(client: GpuClient,
                names_or_ids: collections.abc.Iterable[str],
                domain: str | None = None) -> list[str]:
    """The Keystone ids of the projects NAMES_OR_IDS (names in DOMAIN, or
    ids), in order, once each."""
    return client.project_ids(names_or_ids, domain)


def flavor(client: GpuClient, name_or_id: str,
           unambiguous: bool = False) -> dict[str, typing.Any]:
    """The flavor NAME_OR_ID (by ID first, then by exact name) with its
    extra specs; UNAMBIGUOUS (what a write acts on): an ID that is
    another flavor's name is refused (one request more)."""
    return client.compute.find_flavor(name_or_id, unambiguous=unambiguous)


def flavor_by_id(client: GpuClient,
                 flavor_id: str) -> dict[str, typing.Any] | None:
    """The flavor whose ID is FLAVOR_ID with its extra specs, or None
    when Nova has none (one request)."""
    return client.compute.get_flavor(flavor_id)


def flavor_access(client: GpuClient, flavor_id: str) -> list[str]:
    """The project ids a private flavor is shared with (one request)."""
    return client.compute.flavor_access(flavor_id)


def image(client: GpuClient, name_or_id: str) -> dict[str, typing.Any]:
    """The Glance image NAME_OR_ID (by ID, then by exact name), its
    properties at the top level."""
    return client.image.find_image(name_or_id)


def _projects(
    client: GpuClient, pools: dict[str, dict[str, typing.Any]],
) -> dict[str, str | None] | None:
    """{project id: name} of Keystone's projects and of every pool's
    project values, or None (see project_names)."""
    return project_names(client, {
        value for pool in pools.values()
        for _key, value in pools_mod.project_entries(pool['metadata'])})


def project_names(
    client: GpuClient, values: collections.abc.Iterable[str],
) -> dict[str, str | None] | None:
    """{project id: name} of Keystone's projects, or None when Keystone
    does not let the caller list them.

    A value of VALUES missing from the list is looked up by ID (and name)
    before anyone may call it gone: Keystone truncates lists at its
    ``list_limit`` and does not page. A value that cannot be looked up is
    kept with name None (not known to be gone).
    """
    known = client.limits.project_names()
    if not known:
        return None
    missing = set(values) - set(known)
    if missing:
        known.update(client.limits.find_projects(missing))
    return known


def members_of(client: GpuClient,
               pool: dict[str, typing.Any]) -> set[str] | None:
    """Providers in a pool's Placement aggregate, or None when unknown
    (no aggregate uuid, or Placement cannot be read)."""
    if not pool.get('aggregate_uuid'):
        return None
    try:
        return client.placement.members_of(pool['aggregate_uuid'])
    except errors.APIError as exc:
        LOG.debug('cannot read placement aggregate: %s', exc)
        return None


def provider_summary(detail: dict[str, typing.Any]) -> dict[str, typing.Any]:
    """One provider's summary (``hosts.summary_from_inventory``, with
    ``traits`` when read) from ``Placement.provider_detail``'s answer."""
    summary = hosts.summary_from_inventory(detail['inventories'],
                                           detail['usages'])
    if 'traits' in detail:
        summary['traits'] = detail['traits']
    return summary


def provider_summaries(
    placement: placement_mod.Placement,
    uuids: collections.abc.Iterable[str], with_traits: bool = False,
) -> dict[str, dict[str, typing.Any]]:
    """{provider uuid: provider_summary} of many providers, read
    concurrently and bounded (``Placement.provider_details``)."""
    details = placement.provider_details(uuids, with_traits=with_traits)
    return {uuid: provider_summary(detail)
            for uuid, detail in details.items()}


def read_totals(client: GpuClient, cloud: model.Cloud,
                roots: collections.abc.Iterable[str]) -> None:
    """Read the inventory totals of the device (non-root) providers in
    the trees of ROOTS into CLOUD's Placement snapshot
    (``model.Placement.add_totals``): one ``GET .../inventories`` each,
    concurrently and bounded. Provider summaries carry Placement's
    capacity, which leaves out what is reserved; what a host has (a VF
    an operator reserved is still a VF) is the total."""
    snap = cloud.placement
    assert snap is not None  # noqa: S101 - read with Placement
    uuids = [uuid for uuid in snap.providers_in_trees(roots)
             if snap.providers[uuid]['parent']]
    snap.add_totals(client.placement.providers_inventories(uuids))


def placement_snapshot(
    placement: placement_mod.Placement,
    gpu_classes: collections.abc.Iterable[str],
    wanted_roots: collections.abc.Collection[str] | None = None,
    with_traits: bool = False,
) -> model.Placement:
    """Capacity and usage of every provider in the GPU-relevant trees.

    One ``GET /resource_providers`` and one allocation-candidates query
    for ``VCPU:1`` (sent at the same time, with the resource class
    list) cover every tree with a free VCPU (their
    ``provider_summaries`` hold the whole tree from 1.29). Trees left
    over (bare-metal nodes, which have no VCPU) get one query per GPU
    class; what is still left (full hosts, used nodes) is read provider
    by provider, concurrently and bounded. ``wanted_roots`` (a set of
    root provider uuids, or None for all) limits that last step.

    PLACEMENT is the client layer's Placement. Returns a
    ``model.Placement``.
    """
    placement.max_version()  # negotiate once, before the threads start
    # the two large answers (every provider; every tree with a free
    # VCPU) and the class list are independent: read them at once
    with concurrent.futures.ThreadPoolExecutor(3) as pool:
        listed = pool.submit(placement.resource_providers)
        classes = pool.submit(placement.resource_classes)
        first = (pool.submit(placement.allocation_candidates, {'VCPU': 1})
                 if wanted_roots is None or wanted_roots else None)
        providers = listed.result()
        known = set(classes.result())
        answers = {('VCPU', 1): first.result()} if first else {}
    snap = model.Placement.listed(providers)
    # a class Placement does not know would be a 400: nobody offers it
    queries = [('VCPU', 1)] + [
        (rc, 1) for rc in sorted(gpu_classes) if rc in known
    ]
    for rc, amount in queries:
        missing = snap.missing_roots(wanted_roots)
        if not missing:
            break
        answer = answers.pop((rc, amount), None)
        if answer is None:
            answer = placement.allocation_candidates({rc: amount})
        snap.add_candidates(rc, answer)
    missing = snap.missing_roots(wanted_roots)
    if missing:
        uuids = snap.providers_in_trees(missing)
        snap.add_details(provider_summaries(placement, uuids,
                                            with_traits=with_traits))
    return snap


def ironic_nodes(
        client: GpuClient) -> dict[str, dict[str, typing.Any]] | None:
    """{node uuid: baremetal.node_dict}, {} or None: Ironic's view of the
    nodes, as ``Baremetal.nodes`` reads it (None: no Ironic endpoint, or
    Ironic failed; {}: Ironic lists none to the caller)."""
    nodes = client.baremetal.nodes()
    if nodes is None:
        return None
    found = {}
    for node in nodes.values():
        item = baremetal.node_dict(node)
        found[item['uuid']] = item
    return found
