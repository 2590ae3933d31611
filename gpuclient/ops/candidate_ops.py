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

"""``gpu candidate list``: the Placement query Nova's scheduler would send
for a flavor, the hosts it offers, the filters after it and, when asked
or when no host remains, why not.
"""

from __future__ import annotations

import collections.abc
import logging
import re
import typing

from osc_lib import exceptions

from gpuclient.cloud import errors
from gpuclient.cloud import versions
from gpuclient.i18n import _
from gpuclient.ops import host_facts_ops
from gpuclient.ops import snapshot
from gpuclient.ops import utilisation_ops
from gpuclient.rules import baremetal
from gpuclient.rules import candidates
from gpuclient.rules import maintenance
from gpuclient.rules import pools as pools_mod
from gpuclient.rules import quota
from gpuclient.rules.host_facts import scheduling
from gpuclient.rules.scheduler import explain
from gpuclient.rules.scheduler import manager
from gpuclient.rules.scheduler import resource_request as request
from gpuclient.rules.scheduler.filters import numa_topology_filter as numa_mod

if typing.TYPE_CHECKING:
    from gpuclient.cloud.client import GpuClient
    from gpuclient.rules import model

LOG = logging.getLogger(__name__)


def collect(
    client: GpuClient,
    flavor: str | None = None,
    resources: collections.abc.Iterable[tuple[str, int]] = (),
    required: collections.abc.Iterable[str] = (),
    image: str | None = None,
    pool: str | None = None,
    project: str | None = None,
    zone: str | None = None,
    boot_from_volume: bool = False,
    limit: int | None = None,
    explain_all: bool = False,
    settings: dict[str, typing.Any] | None = None,
    project_domain: str | None = None,
    facts: dict[str | None, dict[str, typing.Any]] | None = None,
    prometheus: str | None = None,
) -> dict[str, typing.Any]:
    """Everything ``gpu candidate list`` shows, as one dict.

    Requests: aggregates, flavor (1-2), image (0-2), hypervisors, compute
    services, providers and one allocation-candidates query; with an
    explanation, at most MAX_RELAXED relaxed queries, the trees of at most
    MAX_DETAIL_HOSTS hosts and the allocations of at most
    MAX_ALLOCATION_READS providers. FACTS: ``--host-fact`` ({host or None:
    facts}, maintenance.parse_facts). For a flavor that asks a NUMA
    topology, the NUMA nodes node_exporter shows in the cloud's Prometheus
    (PROMETHEUS, else the configured one; two queries) and, when it asks
    PCI devices too, the cell of each GPU that gpuclient-host-facts
    collected (``host_facts_ops.add_collected``: one query per series
    family), under the operator's FACTS.
    """
    read = _read(client, flavor, resources, required, image, pool, project,
                 zone, boot_from_volume, limit, settings, project_domain,
                 facts, prometheus)
    found = candidates.table(read)
    result = found.result
    if explain_all or not result['hosts']:
        notes, not_checked = result['notes'], result['not_checked']
        _read_ironic(client, found.trees, found.hosts_roots, found.members,
                     notes)
        result['eliminated'] = _explain(
            client, read.req, read.answer, found.trees,
            read.providers, found.hosts_roots, found.removed,
            read.project_id, found.members)
        result['quota'] = _quota(client, read.cloud, read.project_id,
                                 read.flavor, read.req,
                                 read.settings.get('quota'))
        if result['quota']['gpu_excess']:
            notes.insert(0, quota.excess_text(
                read.project_id, result['quota']['gpu_excess']))
        if result['quota']['excess']:
            notes.insert(0, quota.quota_text(
                read.project_id, result['quota']['excess']))
        for name, why in result['quota']['not_checked'].items():
            not_checked[name] = why
    result['placement_requests'] = client.placement.request_count
    return result


def _read(client, flavor, resources, required, image, pool, project, zone,
          boot_from_volume, limit, settings, project_domain, facts,
          prometheus):
    """What ``collect`` reads, once (a ``candidates.Read``)."""
    # Nova's side from the snapshot other read commands use; Placement is
    # asked this flavor's own question below
    cloud = snapshot.read(client, with_placement=False)
    # --host-fact HOST: resolved as --host is, refused when unknown
    facts, fact_notes = cloud.resolve_fact_hosts(facts or {})
    aggregates, pools = cloud.aggregates, cloud.pools
    # BlazarFilter keeps ordinary flavors off the hosts Blazar holds
    assert cloud.blazar is not None  # noqa: S101 - snapshot.read reads it
    settings = manager.decide_settings(settings, cloud.blazar)
    snapshot.warn_problems(cloud.problems)
    if pool:
        pool = pools_mod.pool_name(pools, pool)
    project_id = (snapshot.project_id(client, project, project_domain)
                  if project else snapshot.current_project_id(client))
    the_flavor = snapshot.flavor(client, flavor) if flavor else None
    the_image = snapshot.image(client, image) if image else {}
    if the_flavor is not None:
        req = request.build(the_flavor, the_image, settings, pools=pools,
                            aggregates=aggregates, project_id=project_id,
                            zone=zone, boot_from_volume=boot_from_volume)
    else:
        req = request.from_resources(
            resources, required, settings, pools=pools,
            aggregates=aggregates, project_id=project_id, zone=zone)
    if limit:
        req['limit'] = limit
    answer = _ask(client, req)
    providers = snapshot.read_providers(client, cloud)
    host_facts = maintenance.host_facts(
        facts, sorted(cloud.host_roots()))
    if numa_mod.constraints(the_flavor, the_image):
        host_facts = utilisation_ops.add_numa_nodes(
            client, host_facts, cloud.hypervisors, prometheus)
        # only a flavor asks a NUMA topology: THE_FLAVOR is one
        extra = the_flavor.get('extra_specs') or {}
        if numa_mod.pci_devices(extra):
            # which cell holds each GPU its PCI aliases get
            host_facts = host_facts_ops.add_collected(
                client, cloud, host_facts, scheduling.NUMA_KEYS, prometheus,
                extra_specs=extra, settings=settings)
    return candidates.Read(
        cloud=cloud, settings=settings, req=req, answer=answer,
        providers=providers, project_id=project_id,
        microversion=versions.version_str(request.MICROVERSION),
        flavor=the_flavor, image=the_image, pool=pool, zone=zone,
        host_facts=host_facts, fact_notes=fact_notes)


def _ask(client: GpuClient,
         req: dict[str, typing.Any]) -> dict[str, typing.Any]:
    """Placement's allocation candidates for REQ; a trait Placement does
    not know refused in operator terms."""
    try:
        return snapshot.allocation_candidates(client,
                                              request.query_params(req))
    except errors.APIError as exc:
        unknown = re.search(r'No such trait\(s\):\s*([A-Z0-9_, ]+)',
                            str(exc))
        if exc.status != 400 or not unknown:
            raise
        traits = unknown.group(1).strip(' ,')
        raise exceptions.CommandError(
            _('The request requires trait(s) %(traits)s, which Placement '
              'does not know: no host has them, so Nova answers "No valid '
              'host" for it (and for resize, migrate and evacuate of its '
              'servers). Remove the requirement ("openstack flavor unset '
              '--property trait:<TRAIT> <flavor>", or the image property), '
              'or put the trait back on the hosts that should take it.')
            % {'traits': traits}) from exc


def _quota(
    client: GpuClient, cloud: model.Cloud, project_id: str,
    flavor: dict[str, typing.Any] | None,
    req: dict[str, typing.Any], conf: dict[str, typing.Any] | None = None,
) -> dict[str, typing.Any]:
    """The project's instances, cores and RAM quota against one boot, and
    its unified GPU limits (CONF: nova.conf [quota], when read), read
    into CLOUD."""
    own = req['groups'].get('', {}).get('resources', {})
    if flavor is not None:
        cores, ram = flavor.get('vcpus') or 0, flavor.get('ram') or 0
    else:
        cores = own.get('VCPU', 0) + own.get('PCPU', 0)
        ram = own.get('MEMORY_MB', 0)
    found: dict[str, typing.Any] = {
        'excess': [], 'gpu_excess': [], 'not_checked': {}}
    try:
        absolute = snapshot.read_compute_limits(client, cloud, project_id)
    except errors.APIError as exc:
        found['not_checked']['Quota'] = _(
            'the compute limits of project %(project)s could not be read: '
            '%(error)s') % {'project': project_id, 'error': exc}
        absolute = {}
    found['excess'] = quota.quota_excess(
        absolute, instances=1, cores=cores, ram=ram)
    if request.gpu_classes(req):
        _gpu_quota(client, cloud, project_id, req, conf, absolute, found)
    return found


def _gpu_quota(
    client: GpuClient, cloud: model.Cloud, project_id: str,
    req: dict[str, typing.Any],
    conf: dict[str, typing.Any] | None, absolute: dict[str, typing.Any],
    found: dict[str, typing.Any],
) -> None:
    """Unified GPU limits against one boot, into FOUND."""
    classes = request.gpu_classes(req)
    asked: dict[str, int] = {}
    for group in req['groups'].values():
        for rc, amount in group.get('resources', {}).items():
            if rc in classes:
                asked[rc] = asked.get(rc, 0) + amount
    try:
        registered = {n: r['limit'] for n, r in
                      snapshot.read_registered(client, cloud).items()}
        own = {item['resource_name']: item['resource_limit']
               for item in snapshot.read_project_limits(client, cloud,
                                                        project_id)
               if item['project_id'] == project_id}
        state, why = quota.enforcement(conf, absolute, own, registered)
        if state == quota.LEGACY:
            found['not_checked']['Quota (GPUs)'] = _(
                'Nova does not count GPUs against a quota (%s)') % why
            return
        usages = snapshot.read_project_usages(client, cloud, project_id)
    except errors.APIError as exc:
        found['not_checked']['Quota (GPUs)'] = _(
            'the unified limits of project %(project)s on %(classes)s '
            'could not be read: %(error)s') % {
                'project': project_id, 'classes': ', '.join(classes),
                'error': exc}
        return
    found['gpu_excess'] = quota.excess(asked, own, registered, usages, conf)


def _read_ironic(client, trees, hosts_roots, members, notes):
    """Ironic's view of the nodes, when some host explained has nodes.

    Optional detail: without an Ironic endpoint nothing is said; when
    Ironic lists none of the nodes (its policy hides them from
    project-scoped tokens) a note says so and Placement's answer stands.
    """
    roots = set()
    for host, host_roots in hosts_roots.items():
        if members is None or host in members:
            roots |= host_roots
    nodes = roots & trees.node_roots
    if not nodes:
        return
    trees.ironic_nodes = snapshot.ironic_nodes(client)
    note = baremetal.hidden_note(nodes, trees.ironic_nodes)
    if note:
        notes.append(note)


def _explain(client, req, answer, trees, providers, hosts_roots, post,
             project_id, members):
    offered = explain.candidate_roots(answer)
    relaxed = []
    for requirement in explain.requirements(req):
        try:
            relaxed_answer = snapshot.allocation_candidates(
                client,
                [p for p in request.query_params(requirement['request'])
                 if p != ('resources', '')],
                what=_('Asking Placement for allocation candidates '
                       'without %s') % requirement['label'])
        except errors.APIError as exc:
            if exc.status != 400:
                raise
            LOG.debug('relaxed query refused: %s', exc)
            continue
        trees.add_answer(relaxed_answer)
        relaxed.append((requirement,
                        explain.candidate_roots(relaxed_answer) - offered))
    wanted = {h: r for h, r in hosts_roots.items()
              if members is None or h in members}
    known = trees.known_roots()

    def unknown(roots):
        if roots & offered:
            # an offered Ironic host: its nodes that were not offered
            return (roots & trees.node_roots) - known
        return set() if roots & known else roots

    missing = sorted(h for h, roots in wanted.items() if unknown(roots))
    read, unread = missing[:explain.MAX_DETAIL_HOSTS], set(
        missing[explain.MAX_DETAIL_HOSTS:])
    if read:
        roots = set().union(*(unknown(wanted[h]) for h in read))
        in_trees = [rp for rp in providers
                    if (rp.get('root_provider_uuid') or rp['uuid']) in roots]
        details = snapshot.provider_summaries_of(
            client,
            [rp['uuid'] for rp in in_trees], with_traits=True)
        for rp in in_trees:
            summary = dict(details[rp['uuid']],
                           parent_provider_uuid=rp.get(
                               'parent_provider_uuid'),
                           root_provider_uuid=rp.get('root_provider_uuid'))
            trees.add(rp['uuid'], summary, rp.get('name'))
    gpu = set(request.gpu_classes(req))
    used_gpus = []
    for roots in wanted.values():
        if roots & offered:
            roots = (roots & trees.node_roots) - offered
        for root in sorted(roots):
            for uuid, provider in sorted(trees.tree(root).items()):
                if any(provider['resources'].get(rc, {}).get('used')
                       for rc in gpu):
                    used_gpus.append(uuid)
    allocations = {}
    for uuid in used_gpus[:explain.MAX_ALLOCATION_READS]:
        allocations[uuid] = sorted(snapshot.provider_allocations(client,
                                                                 uuid))
    return explain.why_not(wanted, offered, relaxed, req, trees,
                           allocations, post, project_id, unread)
