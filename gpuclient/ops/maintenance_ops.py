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

"""Host maintenance: ``gpu host cordon`` and ``uncordon``.

Observe (compute services and hypervisors: two requests, whatever the
number of hosts), plan (``rules.cordon``), apply through the journal: a
failed cordon of several hosts enables again the services it disabled.
"""

import logging

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
    """(rows, summary) of ``gpu host drain --dry-run``:
    ``rules.maintenance.plan`` over one snapshot (aggregates,
    hypervisors, services, provider trees) and the servers of every
    project (paged), whatever the number of hosts.

    FACTS: {host: facts} (``rules.maintenance``); none given, every fact
    is unknown and no live migration is planned.
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
    servers = [s for s in client.compute.servers_detail(all_projects=True)
               if s.get('OS-EXT-SRV-ATTR:host') in draining]
    cordoned = [svc['host'] for svc in cloud.services
                if cordon_rules.is_disabled(svc)
                and svc['host'] not in draining]
    result = maintenance.plan(
        servers, _trees(cloud), draining, cordoned, facts=facts,
        requested=requested, allow_downtime=allow_downtime,
        settings=settings or request_mod.load_settings(), pools=cloud.pools,
        aggregates=cloud.aggregates, services=cloud.services,
        hypervisors=cloud.hypervisors)
    return result['rows'], result['summary']
