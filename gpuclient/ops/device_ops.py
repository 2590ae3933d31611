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

"""``gpu device list``, ``show`` and ``release``: GPU devices as Placement
and Nova know them, from one snapshot.

The read: the snapshot (``snapshot.read``, a fixed number of requests,
provider traits included), every project's servers (one paged read) and
the allocations of the GPU providers in use
(``snapshot.read_allocations``: one request per used GPU provider,
concurrently; never one per server). The rows are
``rules.devices.listing.rows``.

With the cloud's Prometheus configured (``utilisation_ops.endpoint``),
each row gets the device's health from the DCGM exporter
(``rules.devices.health``): one PromQL query per metric, whatever the
number of devices.

``release`` observes (that read), plans (``rules.devices.release``:
refused for a device that is not one-time-use or is in use, nothing to do
for a free one) and applies each device's step through the journal.
"""

from __future__ import annotations

import collections.abc
import logging
import time
import typing

from osc_lib import exceptions

from gpuclient.cloud import errors
from gpuclient.cloud import versions
from gpuclient.i18n import _
from gpuclient.ops import journal
from gpuclient.ops import snapshot
from gpuclient.ops import utilisation_ops
from gpuclient.rules import plan as plan_mod
from gpuclient.rules import pools as pools_mod
from gpuclient.rules import utilisation
from gpuclient.rules.devices import health as device_health
from gpuclient.rules.devices import listing
from gpuclient.rules.devices import metrics as device_metrics
from gpuclient.rules.devices import release as release_mod

if typing.TYPE_CHECKING:
    from gpuclient.cloud.client import GpuClient
    from gpuclient.rules import model

LOG = logging.getLogger(__name__)


def read(client: GpuClient) -> tuple[
        list[dict[str, typing.Any]], model.Cloud,
        list[dict[str, typing.Any]], list[str]]:
    """(rows of every GPU device, cloud, servers, notes)."""
    # a lower --os-compute-api-version: refused before the first request
    client.compute.require(versions.COMPUTE_EMBEDDED_FLAVOR_VERSION,
                           versions.COMPUTE_HYPERVISOR_UUID_VERSION)
    cloud = snapshot.read(client, mapped_only=True, with_traits=True)
    servers = snapshot.read_servers(client, cloud)
    allocations = snapshot.read_allocations(client, cloud)
    rows = listing.rows(cloud, allocations, servers,
                        pools_mod.pools_by_host(cloud.pools))
    assert cloud.placement is not None  # noqa: S101 - read with Placement
    # the labels that join DCGM's series (gpu device list -f openmetrics)
    rows = device_metrics.join_fields(rows, cloud.placement.providers,
                                      servers)
    notes = [message for _agg, _pool, message in cloud.problems]
    notes += cloud.placement.notes()
    return rows, cloud, servers, notes


def _server_ids(servers: collections.abc.Iterable[dict[str, typing.Any]],
                name: str) -> list[str]:
    """IDs of the server named NAME (name or ID); CommandError for none."""
    found = [s['id'] for s in servers if s['id'] == name]
    found = found or [s['id'] for s in servers if s.get('name') == name]
    if not found:
        raise exceptions.CommandError(
            _('No server with name or ID %s in any project. See "openstack '
              'server list --all-projects".') % name)
    return found


def health_read(client: GpuClient, url: str | None = None,
                unhealthy: bool = False, wanted: bool = True) -> bool:
    """Does ``gpu device list`` read the devices' health (a Prometheus
    given or configured, or --unhealthy)? Never when not WANTED
    (--no-health): no query is sent."""
    return wanted and bool(unhealthy
                           or utilisation_ops.endpoint(client, url))


# the answers --unhealthy decides by (device_health.summary's unhealthy:
# a host XID, dated, a failed health watch, a row-remap failure)
UNHEALTHY_QUERIES = ('xid', 'xid_since', 'xid_since_before', 'health',
                     'row_remap_failure')


def _health(
    client: GpuClient, rows: list[dict[str, typing.Any]],
    cloud: model.Cloud, url: str | None, window: int | None,
    required: bool, check: bool = False,
) -> tuple[list[dict[str, typing.Any]], dict[str, typing.Any]]:
    """(ROWS annotated, what was read: {'series': the series found,
    'hosts': {Nova host: host keys}, 'notes', 'unread', 'problems', 'now'
    (when the queries were evaluated)}): the queries of
    ``device_health.queries`` (CHECK: ``device_health.check_queries``) over
    WINDOW seconds, one per metric.
    A Prometheus that fails is an error when REQUIRED or URL given, else
    a note and every field ``unknown``. An answer of a wrong shape leaves
    the fields of its query ``unknown`` and is in ``unread`` ({query:
    why}) and the notes; with --unhealthy (REQUIRED, not CHECK) it is an
    error when the unhealthy verdict needs it. The series join this
    cloud's hosts (``utilisation.join_answers``: exact names first; a
    host and address two exporters report now is ``unknown``:
    ``problems``, [(host, pci, why)], said in the notes; a card replaced
    within the window is judged by the one served now)."""
    prometheus, _metrics, _labels = utilisation_ops.connect(
        client, url, option='--unhealthy')
    config = client.cloud_config
    metrics, labels = device_health.names(
        config.get('prometheus_metrics'), config.get('prometheus_labels'))
    window = window or utilisation.window_seconds(
        device_health.DEFAULT_WINDOW)
    wanted = (device_health.check_queries if check
              else device_health.queries)(window, metrics)
    notes = []
    # every query at one time: an XID is dated against it
    now = time.time()
    try:
        answers, unread = utilisation_ops.ask(
            prometheus, wanted, utilisation.parse_vector, time=now)
    except errors.APIError as exc:
        if required or url:
            raise
        notes.append(_('GPU health not read from Prometheus: %s') % exc)
        answers, unread = {}, {}
    needed = sorted(set(unread) & set(UNHEALTHY_QUERIES))
    if required and not check and needed:
        raise exceptions.CommandError(_(
            '--unhealthy cannot judge the devices: %s.') % '; '.join(
                unread[name] for name in needed))
    notes += [_('GPU health not judged from %(query)s: %(why)s.') % {
        'query': name, 'why': unread[name]} for name in sorted(unread)]
    answers, problems = utilisation.join_answers(
        answers, utilisation_ops.cloud_hosts(cloud), labels,
        current=device_health.CURRENT_QUERIES)
    notes += [_('GPU health not judged: %s.') % why
              for _host, _pci, why in problems]
    assert cloud.placement is not None  # noqa: S101 - read with Placement
    snap = cloud.placement
    hosts_of = {}
    hosts: dict[str, set[str]] = {}
    for row in rows:
        root = snap.providers.get(snap.providers[row['uuid']]['root']) or {}
        hosts_of[row['uuid']] = utilisation.host_keys(row['host'],
                                                      root.get('name'))
        hosts.setdefault(row['host'], set()).update(hosts_of[row['uuid']])
    found = device_health.series(answers, labels)
    return device_health.annotate(rows, found, hosts_of, now, window), {
        'series': found, 'hosts': hosts, 'notes': notes, 'unread': unread,
        'problems': problems, 'now': now}


def add_health(
    client: GpuClient, rows: list[dict[str, typing.Any]],
    cloud: model.Cloud, url: str | None = None, window: int | None = None,
    required: bool = False, wanted: bool = True,
) -> tuple[list[dict[str, typing.Any]], list[str]]:
    """(ROWS with ``device_health.FIELDS``, notes), or (ROWS, notes)
    unchanged when not WANTED or when no Prometheus is configured and none
    is REQUIRED (URL given, or --unhealthy). One query per metric
    (``device_health.queries``) over WINDOW seconds. A Prometheus that
    fails is an error when REQUIRED, else a note and every field
    ``unknown``."""
    if not health_read(client, url, required, wanted):
        return rows, []
    rows, read = _health(client, rows, cloud, url, window, required)
    return rows, read['notes']


def health_for_check(client: GpuClient, cloud: model.Cloud, window: int,
                     url: str) -> dict[str, typing.Any]:
    """``gpu check``'s view of the GPUs over CLOUD (its snapshot, read
    with hypervisors): {'rows', 'series', 'hosts', 'window', 'now' (when
    the queries were evaluated)} for ``model.Cloud.device_health``. Every
    project's servers (paged), the allocations of the GPU providers in use
    and the queries of ``device_health.check_queries`` (a fixed number),
    whatever the number of devices. A Prometheus that fails raises;
    ``unread`` ({query: why its answer is not judged}), ``problems`` and
    ``notes`` as ``_health`` gives them."""
    servers = snapshot.read_servers(client, cloud)
    allocations = snapshot.read_allocations(client, cloud)
    rows = listing.rows(cloud, allocations, servers,
                        pools_mod.pools_by_host(cloud.pools))
    assert cloud.placement is not None  # noqa: S101 - read with Placement
    # each holder's project (an application XID is the project's)
    rows = device_metrics.join_fields(rows, cloud.placement.providers,
                                      servers)
    rows, read = _health(client, rows, cloud, url, window, True,
                         check=True)
    return dict(read, rows=rows, window=window)


def collect(
    client: GpuClient,
    host: str | None = None,
    pool: str | None = None,
    server: str | None = None,
    awaiting_release: bool = False,
    unhealthy: bool = False,
    url: str | None = None,
    window: int | None = None,
    health: bool = True,
) -> tuple[list[dict[str, typing.Any]], list[str]]:
    """(rows, notes) of ``gpu device list``; with HEALTH and a Prometheus
    (URL or configured) the rows carry ``device_health.FIELDS``, UNHEALTHY
    keeps the unhealthy ones (and needs a Prometheus)."""
    rows, cloud, servers, notes = read(client)
    if host:
        found, resolved = cloud.resolve_hosts([host])
        host = found[0]
        notes += resolved
    if pool:
        pool = pools_mod.pool_name(cloud.pools, pool)
    server_ids = _server_ids(servers, server) if server else None
    # every device annotated: a server's other devices decide the join
    rows, health_notes = add_health(client, rows, cloud, url=url,
                                    window=window, required=unhealthy,
                                    wanted=health)
    rows = listing.select(rows, host=host, pool=pool, server_ids=server_ids,
                          awaiting_only=awaiting_release)
    if unhealthy:
        rows = device_health.unhealthy(rows)
    return rows, notes + health_notes


def show(client: GpuClient, device: str, url: str | None = None,
         window: int | None = None) -> dict[str, typing.Any]:
    """The row of one device (a provider UUID or name, HOST:PCI_ADDRESS),
    with its health when a Prometheus is configured (URL, or as
    ``utilisation_ops.endpoint`` finds it)."""
    rows, cloud, _servers, _notes = read(client)
    listing.resolve(rows, [device])  # an unknown device: no query sent
    rows, notes = add_health(client, rows, cloud, url=url, window=window)
    for note in notes:
        LOG.warning(note)
    return listing.resolve(rows, [device])[0]


def release(
    client: GpuClient, names: collections.abc.Iterable[str],
    dry_run: bool = False,
) -> tuple[list[dict[str, typing.Any]], int]:
    """Release the one-time-use devices NAMES: (rows, failures).

    Every name is resolved before anything is written (an unknown one
    refuses them all). Then each device on its own: one that cannot be
    released (``release_mod.release_problem``) is a failure, logged; one
    awaiting release gets its step (``plan.release_device``), applied
    through the journal unless DRY_RUN; a free one needs nothing (a re-run
    converges). Whatever one device's release raises, it is that device's
    failure, logged with its message, and the next device is released
    (OSC's multi-object commands). ROWS: the devices done (or planned),
    each with its ``action``; FAILURES: how many failed.
    """
    rows, _cloud, _servers, notes = read(client)
    for note in notes:
        LOG.warning(note)
    chosen = listing.resolve(rows, names)
    done, failures = [], 0
    for index, row in enumerate(chosen):
        problem = release_mod.release_problem(row)
        if problem:
            LOG.error(problem)
            failures += 1
            continue
        action = release_mod.release_action(row)
        if action == release_mod.RELEASE:
            plan = plan_mod.Plan('gpu device release', [
                plan_mod.release_device(row['uuid'], row['name'],
                                        row['resource_class'])])
            try:
                journal.finish(client, plan, dry_run=dry_run)
            except Exception as exc:  # noqa: BLE001 - OSC's N-of-M
                LOG.error(_('Failed to release %(name)s: %(error)s'),
                          {'name': row['name'], 'error': exc})
                failures += 1
                if journal.interrupted(exc):
                    # the operator asked to stop: the rest is not tried
                    rest = chosen[index + 1:]
                    if rest:
                        LOG.error(_('Not tried, as the command was '
                                    'interrupted: %s'),
                                  ', '.join(r['name'] for r in rest))
                    failures += len(rest)
                    break
                continue
            if not dry_run:
                action = release_mod.RELEASED
        done.append(dict(row, action=action))
    return done, failures
