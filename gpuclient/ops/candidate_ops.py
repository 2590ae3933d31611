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

import logging
import re

from osc_lib import exceptions

from gpuclient.cloud import errors
from gpuclient.cloud import versions
from gpuclient.i18n import _
from gpuclient.ops import snapshot
from gpuclient.ops import utilisation_ops
from gpuclient.rules import baremetal
from gpuclient.rules import host_names
from gpuclient.rules import maintenance
from gpuclient.rules import pools as pools_mod
from gpuclient.rules import quota
from gpuclient.rules.scheduler import conf as nova_conf
from gpuclient.rules.scheduler import explain
from gpuclient.rules.scheduler import filters
from gpuclient.rules.scheduler import manager
from gpuclient.rules.scheduler import pci
from gpuclient.rules.scheduler import resource_request as request
from gpuclient.rules.scheduler.filters import numa_topology_filter as numa_mod

LOG = logging.getLogger(__name__)


def collect(client, flavor=None, resources=(), required=(), image=None,
            pool=None, project=None, zone=None, boot_from_volume=False,
            limit=None, explain_all=False, settings=None,
            project_domain=None, facts=None, prometheus=None):
    """Everything ``gpu candidate list`` shows, as one dict.

    Requests: aggregates, flavor (1-2), image (0-2), hypervisors, compute
    services, providers and one allocation-candidates query; with an
    explanation, at most MAX_RELAXED relaxed queries, the trees of at most
    MAX_DETAIL_HOSTS hosts and the allocations of at most
    MAX_ALLOCATION_READS providers. FACTS: ``--host-fact`` ({host or None:
    facts}, maintenance.parse_facts). For a flavor that asks a NUMA
    topology, the NUMA nodes node_exporter shows in the cloud's Prometheus
    (PROMETHEUS, else the configured one; two queries).
    """
    # Nova's side from the snapshot other read commands use; Placement is
    # asked this flavor's own question below
    cloud = snapshot.read(client, with_placement=False)
    # --host-fact HOST: resolved as --host is, refused when unknown
    facts, fact_notes = cloud.resolve_fact_hosts(facts or {})
    aggregates, pools = cloud.aggregates, cloud.pools
    # BlazarFilter keeps ordinary flavors off the hosts Blazar holds
    settings = manager.decide_settings(settings, cloud.blazar)
    snapshot.warn_problems(cloud.problems)
    if pool:
        pool = pools_mod.pool_name(pools, pool)
    project_id = (client.project_id(project, project_domain) if project
                  else client.current_project_id())
    the_flavor = client.compute.find_flavor(flavor) if flavor else None
    the_image = client.image.find_image(image) if image else {}
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
    params = request.query_params(req)
    placement = client.placement
    try:
        answer = placement.candidates_query(params)
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
    hypervisors, services = cloud.hypervisors, cloud.services
    providers = placement.resource_providers()
    trees = explain.Trees()
    trees.node_roots = baremetal.node_roots(hypervisors)
    trees.add_answer(answer)
    trees.name_providers(providers)
    by_host = pools_mod.pools_by_host(pools)
    rows = explain.candidate_rows(answer, req, hypervisors, trees, by_host)
    hosts_roots = {}
    for root, host in host_names.root_hosts(hypervisors).items():
        hosts_roots.setdefault(host, set()).add(root)
    extra_specs = (the_flavor or {}).get('extra_specs') or {}
    # [filter_scheduler] image_properties_default_architecture (unset
    # unless the settings give it)
    default_arch = settings.get('image_properties_default_architecture')
    host_facts = maintenance.host_facts(facts, sorted(hosts_roots))
    if numa_mod.constraints(the_flavor, the_image):
        host_facts = utilisation_ops.add_numa_nodes(
            client, host_facts, hypervisors, prometheus)
    # the request and every host's state, once: the filters and the NUMA
    # verdicts judge the same
    ctx = filters.context(
        extra_specs, project_id, pools, services, hypervisors, the_image,
        default_arch, the_flavor, host_facts, cloud.held_hosts(),
        settings['aliases'], aggregates)
    post = filters.run(sorted(hosts_roots), ctx, settings['enabled_filters'])
    members = set(pools[pool]['hosts']) if pool else None
    kept = [row for row in rows if row['host'] not in post
            and (members is None or row['host'] in members)]
    numa = filters.numa([row['host'] for row in kept], ctx,
                        settings['enabled_filters'])
    for row in kept:
        row['numa'] = numa_mod.row_text(numa.get(row['host']))
    count = len(answer.get('allocation_requests') or [])
    notes = fact_notes + list(req['notes'])
    if req.get('limit') and count >= req['limit']:
        notes.append(_(
            'Placement returned %(count)d allocation candidates, the limit '
            'of this query (%(limit)d, Nova\'s [scheduler] '
            'max_placement_results): hosts beyond it are not shown, as Nova '
            'would not see them either. Raise --limit to see more.')
            % {'count': count, 'limit': req['limit']})
    crowded = explain.crowded_hosts(rows, count, req.get('limit'))
    if crowded:
        notes.append(_(
            'Hosts with several of them (%(hosts)s) may have crowded others '
            'out: a host with many child providers of a class (a wide '
            'provider tree) gives one candidate per combination, and '
            'Placement keeps the limit\'s share of all candidates in no '
            'order it promises. Where placement.conf also sets '
            'max_allocation_candidates, Placement stops generating at it: '
            'with [placement] allocation_candidates_generation_strategy = '
            'breadth-first (Placement 13.0.0, 2025.1) it takes one '
            'candidate of each host in turn instead of every candidate of '
            'the first hosts (gpu check: placement-wide-trees).')
            % {'hosts': ', '.join('%s: %d' % item for item in crowded)})
    unjudged = numa_mod.unjudged_note(numa)
    if unjudged:
        notes.append(unjudged)
    enabled = settings['enabled_filters']
    not_checked = {name: why for name, why in filters.NOT_CHECKED.items()
                   if name in enabled}
    # ImagePropertiesFilter and ComputeCapabilitiesFilter are judged; only
    # what the compute API does not show stays "not checked"
    for name in (filters.IMAGE_FILTER, filters.CAPABILITIES_FILTER):
        not_checked.pop(name, None)
    not_checked.update(filters.unchecked(
        sorted(hosts_roots), hypervisors, extra_specs, the_image, enabled,
        default_arch))
    result = {
        'flavor': (the_flavor or {}).get('name'),
        'image': (the_image or {}).get('name'),
        'project_id': project_id,
        'microversion': versions.version_str(request.MICROVERSION),
        'query': request.querystring(req),
        'groups': request.describe(req),
        'candidates': count,
        'hosts': kept,
        'filtered': {host: [filters.post_filter_text(host, r, project_id)
                            for r in reasons]
                     for host, reasons in post.items()
                     if host in {row['host'] for row in rows}},
        'notes': notes,
        'not_covered': req['not_covered'],
        'not_checked': not_checked,
        'settings': {key: (list(value) if isinstance(value, tuple)
                           else value)
                     for key, value in settings.items()
                     if key in nova_conf.DEFAULT_SETTINGS},
        'settings_sources': settings['sources'],
        'settings_file': settings.get('file'),
        'aliases': {name: {'resource_class': alias['resource_class'],
                           'traits': sorted(alias.get('traits') or ()),
                           'source': alias.get('source')}
                    for name, alias in sorted(
                        dict(pci.pool_aliases(pools),
                             **settings['aliases']).items())},
        'placement_requests': 0,
        'eliminated': {},
        'pools_by_host': by_host,
        'quota': None,
        'maybe_truncated': bool(req.get('limit') and count >= req['limit']),
    }
    if explain_all or not kept:
        _read_ironic(client, trees, hosts_roots, members, notes)
        result['eliminated'] = _explain(
            placement, req, answer, trees, providers, hosts_roots, post,
            project_id, members)
        result['quota'] = _quota(client, project_id, the_flavor, req,
                                 settings.get('quota'))
        if result['quota']['gpu_excess']:
            notes.insert(0, quota.excess_text(
                project_id, result['quota']['gpu_excess']))
        if result['quota']['excess']:
            notes.insert(0, quota.quota_text(
                project_id, result['quota']['excess']))
        for name, why in result['quota']['not_checked'].items():
            not_checked[name] = why
    result['placement_requests'] = placement.request_count
    return result


def _quota(client, project_id, flavor, req, conf=None):
    """The project's instances, cores and RAM quota against one boot, and
    its unified GPU limits (CONF: nova.conf [quota], when read)."""
    own = req['groups'].get('', {}).get('resources', {})
    if flavor is not None:
        cores, ram = flavor.get('vcpus') or 0, flavor.get('ram') or 0
    else:
        cores = own.get('VCPU', 0) + own.get('PCPU', 0)
        ram = own.get('MEMORY_MB', 0)
    found = {'excess': [], 'gpu_excess': [], 'not_checked': {}}
    try:
        absolute = client.compute.project_limits(project_id)
    except errors.APIError as exc:
        found['not_checked']['Quota'] = _(
            'the compute limits of project %(project)s could not be read: '
            '%(error)s') % {'project': project_id, 'error': exc}
        absolute = {}
    found['excess'] = quota.quota_excess(
        absolute, instances=1, cores=cores, ram=ram)
    if request.gpu_classes(req):
        _gpu_quota(client, project_id, req, conf, absolute, found)
    return found


def _gpu_quota(client, project_id, req, conf, absolute, found):
    """Unified GPU limits against one boot, into FOUND."""
    classes = request.gpu_classes(req)
    asked = {}
    for group in req['groups'].values():
        for rc, amount in group.get('resources', {}).items():
            if rc in classes:
                asked[rc] = asked.get(rc, 0) + amount
    try:
        registered = {n: r['limit']
                      for n, r in client.limits.registered().items()}
        own = {item['resource_name']: item['resource_limit']
               for item in client.limits.limits(project_id)
               if item['project_id'] == project_id}
        state, why = quota.enforcement(conf, absolute, own, registered)
        if state == quota.LEGACY:
            found['not_checked']['Quota (GPUs)'] = _(
                'Nova does not count GPUs against a quota (%s)') % why
            return
        usages = client.placement.project_usages(project_id)
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


def _explain(placement, req, answer, trees, providers, hosts_roots, post,
             project_id, members):
    offered = explain.candidate_roots(answer)
    relaxed = []
    for requirement in explain.requirements(req):
        try:
            relaxed_answer = placement.candidates_query(
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
        details = snapshot.provider_summaries(
            placement,
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
        allocations[uuid] = sorted(placement.provider_allocations(uuid))
    return explain.why_not(wanted, offered, relaxed, req, trees,
                           allocations, post, project_id, unread)
