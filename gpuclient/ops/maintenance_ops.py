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

"""Host maintenance: ``gpu host cordon``, ``uncordon`` and ``drain``.

Observe (compute services and hypervisors: two requests, whatever the
number of hosts), plan (``rules.cordon``), apply through the journal: a
failed cordon of several hosts enables again the services it disabled.

A drain observes one snapshot and the servers of every project, plans
(``rules.maintenance``) and applies forward only: its cordon and the moves
it made stay when a move fails, the error says what moved and what is
under way, and the re-run plans from where the servers are then.
"""

import logging
import os

from gpuclient.cloud import versions
from gpuclient.ops import journal
from gpuclient.ops import snapshot
from gpuclient.rules import cordon as cordon_rules
from gpuclient.rules import plan as plan_mod

LOG = logging.getLogger(__name__)


def _services_of(client, names):
    """The nova-compute services (dicts) of the hosts NAMES mean, in the
    order given; the notes of the resolution go to the log (stderr)."""
    compute = client.compute
    compute.require(versions.COMPUTE_HYPERVISOR_UUID_VERSION)
    services = compute.compute_services()
    hosts, notes = snapshot.resolve_hosts(
        names, services, compute.hypervisors(),
        client.placement.resource_providers)
    for note in notes:
        LOG.warning(note)
    by_host = {svc['host']: svc for svc in services}
    return [by_host[host] for host in hosts if host in by_host]


def cordon(client, hosts, reason=None, dry_run=False):
    """Disable the compute services of HOSTS with gpuclient's reason.

    Returns (rows, plan): one row per host (``rules.cordon.ROW_FIELDS``)
    as it is after the command (planned, for DRY_RUN).
    """
    rows, steps = cordon_rules.cordon(_services_of(client, hosts), reason)
    plan = plan_mod.Plan('gpu host cordon', steps)
    journal.run(client, plan, dry_run=dry_run)
    return cordon_rules.apply_rows(rows, dry_run), plan


def uncordon(client, hosts, dry_run=False):
    """Enable the compute services of HOSTS that gpuclient disabled.

    Returns (rows, plan, note): NOTE names the services disabled by
    someone else, left alone (None when there are none).
    """
    rows, steps, others = cordon_rules.uncordon(_services_of(client, hosts))
    plan = plan_mod.Plan('gpu host uncordon', steps)
    journal.run(client, plan, dry_run=dry_run)
    note = cordon_rules.others_text(others) if others else None
    return cordon_rules.apply_rows(rows, dry_run), plan, note


# -- drain: the plan ----------------------------------------------------------

def _trees(cloud):
    """{host: [provider trees]} of every host of the snapshot."""
    return {host: [cloud.tree(root, cloud.root_aggregates(host))
                   for root in sorted(roots)]
            for host, roots in cloud.host_roots().items()}


def drain_plan(client, hosts, requested='auto', allow_downtime=False,
               settings=None, facts=None):
    """(rows, summary) of ``gpu host drain --dry-run`` (``observe``)."""
    observed = observe(client, hosts, requested, allow_downtime, settings,
                       facts)
    return observed['rows'], observed['summary']


def observe(client, hosts, requested='auto', allow_downtime=False,
            settings=None, facts=None):
    """(rows, summary) of ``gpu host drain --dry-run``:
    ``rules.maintenance.plan`` over one snapshot (aggregates,
    hypervisors, services, provider trees) and the servers of every
    project (paged), whatever the number of hosts.

    FACTS: ``rules.maintenance.parse_facts`` ({host or None: facts});
    none given, every fact is unknown and no live migration is planned.
    """
    from gpuclient.rules import maintenance
    from gpuclient.rules import request as request_mod

    client.compute.require(versions.COMPUTE_EMBEDDED_FLAVOR_VERSION,
                           versions.COMPUTE_HYPERVISOR_UUID_VERSION)
    cloud = snapshot.read(client, mapped_only=True)
    snapshot.warn_problems(cloud.problems)
    draining, notes = cloud.resolve_hosts(hosts)
    for note in notes:
        LOG.warning(note)
    all_servers = client.compute.servers_detail(all_projects=True)
    servers = [s for s in all_servers
               if s.get('OS-EXT-SRV-ATTR:host') in draining]
    cordoned = [svc['host'] for svc in cloud.services
                if cordon_rules.is_disabled(svc)
                and svc['host'] not in draining]
    trees = _trees(cloud)
    result = maintenance.plan(
        servers, trees, draining, cordoned,
        facts=maintenance.host_facts(facts or {}, trees),
        gpu_rows=_held(client, cloud, servers, draining),
        requested=requested, allow_downtime=allow_downtime,
        settings=settings or request_mod.load_settings(), pools=cloud.pools,
        aggregates=cloud.aggregates, services=cloud.services,
        hypervisors=cloud.hypervisors)
    rows = result['rows']
    # moves an earlier drain left unconfirmed: read the migrations only
    # when a server waits for a confirmation (one paged request)
    waiting = [s for s in all_servers
               if (s.get('status') or '').upper() == maintenance.VERIFY_RESIZE
               and s.get('OS-EXT-SRV-ATTR:host') not in draining]
    if waiting:
        rows = rows + maintenance.unconfirmed_rows(
            waiting, client.compute.migrations(
                status=maintenance.FINISHED, migration_type='migration'),
            draining, cloud.pools)
    return {'rows': rows, 'summary': result['summary'], 'cloud': cloud,
            'draining': draining}


def _held(client, cloud, servers, draining):
    """{server id: ``usage.server_rows`` row} of SERVERS: the GPU devices
    each holds, from the allocations of the used GPU providers of the
    DRAINING hosts only (one request per such provider)."""
    from gpuclient.ops import server_ops
    from gpuclient.rules import usage

    host_roots = cloud.host_roots()
    roots = set()
    for host in draining:
        roots |= set(host_roots.get(host) or ())
    allocations = server_ops.gpu_allocations(client, cloud, roots)
    return {row['id']: row
            for row in usage.server_rows(servers, cloud, allocations)}


def _tree_uuids(cloud, hosts):
    """{host: uuids of every provider of its trees} for HOSTS."""
    roots = cloud.host_roots()
    return {host: list(cloud.placement.providers_in_trees(
        sorted(roots.get(host) or ()))) for host in hosts if host}


def _write_notices(notice_dir, texts):
    """Write one notice per project into NOTICE_DIR; an existing file is
    refused before anything is written. Returns the paths."""
    from osc_lib import exceptions

    from gpuclient.i18n import _
    from gpuclient.rules import maintenance

    paths = {project: os.path.join(notice_dir,
                                   maintenance.notice_name(project))
             for project in texts}
    there = sorted(p for p in paths.values() if os.path.exists(p))
    if there:
        raise exceptions.CommandError(_(
            'Notice file(s) already there, not overwritten: %s. Move them '
            'away or give another --notice-dir.') % ', '.join(there))
    os.makedirs(notice_dir, exist_ok=True)
    for project, text in texts.items():
        with open(paths[project], 'x', encoding='utf-8') as out:
            out.write(text)
    return sorted(paths.values())


def drain(client, hosts, requested='auto', allow_downtime=False,
          dry_run=False, reason=None, confirm=True, timeout=None,
          skip_unmovable=False, notice_dir=None, settings=None, facts=None,
          on_step=None):
    """``gpu host drain``: cordon HOSTS, then move every server off them
    as planned, forward only (the journal: a failure stops and says what
    moved; the re-run plans from where the servers are).

    Returns (rows, plan, notices): the plan's rows, the Plan, and the
    notice files written. Refuses, before any write, a plan where a
    server would stay unless SKIP_UNMOVABLE.
    """
    from osc_lib import exceptions

    from gpuclient.i18n import _
    from gpuclient.rules import maintenance

    if not dry_run:
        client.compute.require(versions.COMPUTE_MIGRATE_HOST_VERSION,
                               versions.COMPUTE_MIGRATIONS_VERSION)
    observed = observe(client, hosts, requested, allow_downtime, settings,
                       facts)
    rows, cloud, draining = (observed['rows'], observed['cloud'],
                             observed['draining'])
    staying = maintenance.blockers(rows)
    if staying and not skip_unmovable and not dry_run:
        raise exceptions.CommandError(_(
            'Nothing was changed: %(n)d server(s) cannot leave %(hosts)s: '
            '%(which)s. Make room (or allow downtime, or another --method) '
            'and run it again, or add --skip-unmovable to cordon the hosts '
            'and move the others.') % {
                'n': len(staying), 'hosts': ', '.join(draining),
                'which': maintenance.blockers_text(staying)})
    cordon_rows, cordon_steps = cordon_rules.cordon(
        [svc for svc in cloud.services if svc['host'] in draining], reason,
        undone=False)
    involved = set(draining) | {r['destination'] for r in rows} | {
        r['source'] for r in rows}
    steps = maintenance.steps(rows, cordon_steps,
                              _tree_uuids(cloud, involved), confirm=confirm,
                              timeout=timeout)
    plan = plan_mod.Plan('gpu host drain', steps, forward=True)
    written = []
    if notice_dir:
        written = _write_notices(
            notice_dir, maintenance.notices(rows, draining, reason))
    executor = journal.run(client, plan, dry_run=dry_run, on_step=on_step)
    for warning in executor.warnings if executor else ():
        LOG.warning(warning)
    return rows, plan, written
