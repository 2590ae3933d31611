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

"""The hosts' own facts, as gpuclient-host-facts published them into the
cloud's Prometheus: ``read`` (the reader every consumer calls: ``gpu host
facts``, ``gpu check``'s host findings, ``add_collected``), ``gpu host
facts`` itself (``collect``), and ``add_collected``: the facts ``gpu
candidate list``, ``gpu capacity list`` and ``gpu host drain`` judge by,
the collected ones under the operator's ``--host-fact``.

``read`` asks one instant query per series family
(``rules.host_facts.join.queries``: 21, whatever the number of hosts),
through the Prometheus of ``utilisation_ops`` (its endpoint, credentials,
TLS and this cloud's ``prometheus_selector`` on every query), and joins
the series to the cloud's compute hosts (``rules.host_facts.join``).
Besides them it reads the compute services and hypervisors unless the
cloud was read with them: a constant number of requests.
"""

from __future__ import annotations

import collections.abc
import logging
import time
import typing

from osc_lib import exceptions

from gpuclient.cloud import versions
from gpuclient.i18n import _
from gpuclient.ops import snapshot
from gpuclient.ops import utilisation_ops
from gpuclient.rules import maintenance
from gpuclient.rules import pools as pools_mod
from gpuclient.rules import utilisation
from gpuclient.rules.checks import hosts as host_checks
from gpuclient.rules.devices import health as device_health
from gpuclient.rules.host_facts import join as facts_join
from gpuclient.rules.host_facts import listing
from gpuclient.rules.host_facts import scheduling
from gpuclient.rules.host_facts import series
from gpuclient.rules.scheduler import pci

if typing.TYPE_CHECKING:
    from gpuclient.cloud.client import GpuClient
    from gpuclient.rules import model

LOG = logging.getLogger(__name__)
FIELD = 'host_facts'


def not_configured() -> str:
    """Why the host facts are not read where no Prometheus is
    configured."""
    return _('no Prometheus is configured: give --prometheus <url>, '
             'prometheus_endpoint in the cloud\'s clouds.yaml entry, or '
             '$%s') % utilisation_ops.URL_ENV


def _label_names(client: GpuClient
                 ) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(host name labels, guest labels) of the cloud's series: the
    collector's (``series.HOSTNAME_LABELS``) after the cloud's own
    (``prometheus_labels``), and every label a guest's series carries."""
    _metrics, labels = device_health.names(
        None, client.cloud_config.get('prometheus_labels'))
    hostname = tuple(dict.fromkeys(labels['hostname']
                                   + series.HOSTNAME_LABELS))
    guests = tuple(dict.fromkeys(labels['instance_id'] + labels['vm_id']
                                 + facts_join.GUEST_LABELS))
    return hostname, guests


def read(client: GpuClient, cloud: model.Cloud, url: str | None = None,
         now: float | None = None) -> dict[str, str]:
    """Fill ``cloud.host_facts`` ({compute host: HostFacts}) from the
    cloud's Prometheus (URL, else as ``utilisation_ops.endpoint`` finds
    it), the queries evaluated at NOW (epoch seconds; None: the clock).
    Returns {compute host: why its series are not judged} (two
    collectors: the host is in ``host_facts``, ``conflicting``, without
    facts; a host name that could be several hosts: it is not).

    Never raises for Prometheus: none configured leaves ``host_facts``
    None and says so in ``cloud.unconfigured['host_facts']``; one that
    fails, or answers any query with a wrong shape (then no host is
    judged on a part of its facts), in ``cloud.unread['host_facts']``.
    CLOUD's services and hypervisors are read unless they were."""
    url = utilisation_ops.endpoint(client, url)
    if not url:
        cloud.unconfigured[FIELD] = not_configured()
        return {}
    snapshot.read_services(client, cloud)
    snapshot.read_hypervisors(client, cloud)
    hosts = utilisation_ops.cloud_hosts(cloud)
    try:
        prometheus, _metrics, _labels = utilisation_ops.connect(
            client, url, option='gpu host facts')
        answers, unread = utilisation_ops.ask(
            prometheus, facts_join.queries(), utilisation.parse_vector,
            time=time.time() if now is None else now)
    except exceptions.CommandError as exc:
        cloud.unread[FIELD] = str(exc)
        return {}
    if unread:
        cloud.unread[FIELD] = '; '.join(unread[name]
                                        for name in sorted(unread))
        return {}
    hostname, guests = _label_names(client)
    joined = facts_join.join(answers, hosts, hostname, guests)
    if joined.guests:
        LOG.warning(_('%(count)d host fact series with a guest\'s label '
                      '(%(labels)s) left out: a guest does not speak for a '
                      'host.'), {'count': joined.guests,
                                 'labels': ', '.join(guests)})
    cloud.host_facts = joined.facts
    return joined.problems


def _chosen(client: GpuClient, cloud: model.Cloud,
            names: collections.abc.Sequence[str], pool: str | None
            ) -> tuple[list[str] | None, list[str]]:
    """(the hosts NAMES and POOL mean, None: every GPU host; notes),
    refused before Prometheus is asked."""
    members = None
    if pool:
        name = pools_mod.pool_name(cloud.pools, pool)
        if cloud.pools[name]['mode'] == pools_mod.BAREMETAL:
            raise exceptions.CommandError(_(
                'Pool %s is a bare-metal pool: its nodes are Ironic\'s, and '
                'gpuclient-host-facts runs on hypervisors. Give a pool of '
                'another mode.') % name)
        members = sorted(cloud.pools[name]['hosts'])
    if not names:
        return members, []
    hosts, notes = snapshot.resolve_hosts(client, cloud, names)
    for host in hosts:
        if members is not None and host not in members:
            raise exceptions.CommandError(_(
                'Host %(host)s is not in pool %(pool)s (its hosts: '
                '%(hosts)s): drop --pool, or name a host of the pool.') % {
                    'host': host, 'pool': pool,
                    'hosts': ', '.join(members) or _('none')})
    return hosts, notes


def collect(
    client: GpuClient, names: collections.abc.Sequence[str] = (),
    pool: str | None = None, url: str | None = None,
    now: float | None = None,
) -> tuple[list[dict[str, typing.Any]], list[str]]:
    """(rows, notes) of ``gpu host facts`` (``listing.rows``): the host
    aggregates, compute services and hypervisors (and the providers, only
    for a name they do not explain), then ``read``. NAMES (any name
    ``model.resolve_hosts`` takes) and POOL choose the hosts, checked
    before Prometheus is asked; none: ``listing.default_hosts``. No Prometheus
    configured, or one that fails, is a CommandError."""
    if not utilisation_ops.endpoint(client, url):
        raise exceptions.CommandError(_(
            'gpu host facts reads the cloud\'s Prometheus, and %s.')
            % not_configured())
    # a lower --os-compute-api-version: refused before the first request
    client.compute.require(versions.COMPUTE_HYPERVISOR_UUID_VERSION)
    cloud = snapshot.read_aggregates(client)
    hosts, notes = _chosen(client, cloud, names, pool)
    now = time.time() if now is None else now
    problems = read(client, cloud, url, now)
    if FIELD in cloud.unread:
        raise exceptions.CommandError(_(
            'The host facts could not be read: %s') % cloud.unread[FIELD])
    assert cloud.host_facts is not None  # noqa: S101 - read above
    if not cloud.host_facts and not problems:
        notes.append(_(
            'Prometheus holds no gpuclient_host_* series of this cloud\'s '
            'hosts: is gpuclient-host-facts installed on the GPU hosts, '
            'and node_exporter\'s textfile collector scraped? (Or does '
            'prometheus_selector leave them out?)'))
    if hosts is None:
        hosts = listing.default_hosts(cloud.pools, cloud.host_facts,
                                      problems)
    return listing.rows(hosts, cloud.host_facts, problems, now), notes


def add_collected(
    client: GpuClient, cloud: model.Cloud,
    facts: dict[str, dict[str, typing.Any]],
    keys: collections.abc.Iterable[str], url: str | None = None,
    extra_specs: collections.abc.Mapping[str, str] | None = None,
    settings: collections.abc.Mapping[str, typing.Any] | None = None,
) -> dict[str, dict[str, typing.Any]]:
    """FACTS ({compute host: the operator's facts}, as
    ``maintenance.host_facts`` gives them) with what each host's
    gpuclient-host-facts collected of KEYS under them
    (``rules.host_facts.scheduling.collected``, then
    ``maintenance.with_collected``), when a Prometheus is configured
    (URL, else as ``utilisation_ops.endpoint`` finds it): ``read``, a
    constant number of queries. EXTRA_SPECS: the one flavor asked, whose
    PCI aliases (with SETTINGS' aliases) say which GPUs ``numa_gpus``
    counts; None: each host's passthrough pool says. A Prometheus that
    fails is a warning, and the hosts are judged by the other sources;
    so is a host whose facts are not used (two collectors, stale facts),
    and an operator's fact that overrides a different collected one."""
    if not utilisation_ops.endpoint(client, url):
        return facts
    keys = tuple(keys)
    now = time.time()
    read(client, cloud, url, now)
    if FIELD in cloud.unread:
        LOG.warning(_('Host facts not read from Prometheus: %s'),
                    cloud.unread[FIELD])
        return facts
    assert cloud.host_facts is not None  # noqa: S101 - read above
    aliases = (settings or {}).get('aliases')
    found = {}
    for host in sorted(facts):
        held = cloud.host_facts.get(host)
        why = scheduling.unusable(held, now, host_checks.STALE_AFTER)
        if held is not None and why:
            LOG.warning(_('The facts %(collector)s collected on %(host)s '
                          'are not used: %(why)s.'), {
                              'collector': scheduling.COLLECTOR,
                              'host': host, 'why': why})
        ids = (pci.counted_ids(host, cloud.pools, extra_specs, aliases)
               if 'numa_gpus' in keys else None)
        found[host] = scheduling.collected(held, ids, now,
                                           host_checks.STALE_AFTER, keys)
    merged, notes = maintenance.with_collected(facts, found)
    for note in notes:
        LOG.warning(note)
    return merged
