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

"""``gpu check``: one snapshot of the cloud, then the pure checks.

Requests: the snapshot with flavors, images, pool members and projects,
and Keystone's registered limits only when nova.conf's [quota] was read
and the cloud has pools (the quota-gpu-limits check judges them). When
the gpu-idle check runs and a Prometheus is configured: every project's
servers (paged), the allocations of the GPU providers in use and five
PromQL queries, whatever the number of servers. When a DCGM check runs
(gpu-unhealthy, gpu-application-xid, gpu-row-remap, gpu-vgpu-licence,
gpu-driver-drift, gpu-missing) and a Prometheus is configured: the same
servers and allocations once more and nine PromQL queries
(``device_health.check_queries``), whatever the number of devices. When a
check of the hosts' facts runs (the host-* checks, gpu-driver-drift) and a
Prometheus is configured: the constant PromQL queries of
``host_facts_ops.read``, whatever the number of hosts.
"""

from __future__ import annotations

import collections.abc
import logging
import time
import typing

from osc_lib import exceptions

from gpuclient.i18n import _
from gpuclient.ops import device_ops
from gpuclient.ops import host_facts_ops
from gpuclient.ops import server_ops
from gpuclient.ops import snapshot
from gpuclient.ops import utilisation_ops
from gpuclient.rules import checks
from gpuclient.rules import pools as pools_mod
from gpuclient.rules import quota as quota_rules
from gpuclient.rules import utilisation
from gpuclient.rules.devices import health as device_health

if typing.TYPE_CHECKING:
    from gpuclient.cloud.client import GpuClient
    from gpuclient.rules import model
    from gpuclient.rules.checks import utils as check_utils

LOG = logging.getLogger(__name__)


def run(
    client: GpuClient,
    settings: dict[str, typing.Any] | None = None,
    names: collections.abc.Collection[str] | None = None,
    pool: str | None = None,
    utilisation: dict[str, typing.Any] | None = None,
) -> tuple[list[check_utils.Finding], dict[str, str]]:
    """(findings of ``checks.run``, ``checks.not_run``: {check: why it
    could not run}) over one snapshot.

    UTILISATION: where and how gpu-idle judges (url, window in seconds,
    idle_below percent); its url defaults as ``gpu server list
    --utilisation``'s.
    """
    cloud = snapshot.read(client, with_flavors=True, mapped_only=True,
                          with_images=True, with_pool_members=True,
                          with_projects=True)
    if pool:
        pool = pools_mod.pool_name(cloud.pools, pool)
    assert cloud.placement is not None  # noqa: S101 - read with Placement
    for note in cloud.placement.notes():
        LOG.warning(note)
    if (settings or {}).get('quota') and cloud.pools:
        # the quota-gpu-limits check judges the registered limits
        try:
            snapshot.read_registered(client, cloud)
        except exceptions.CommandError as exc:
            # the quota-gpu-limits check says it could not judge
            cloud.unread['registered'] = str(exc)
    if quota_rules.pci_classes(cloud.pools):
        # quota-pci-not-enforced: Nova's release from its microversion
        try:
            snapshot.read_compute_max_version(client, cloud)
        except exceptions.CommandError as exc:
            cloud.unread['compute_max_version'] = str(exc)
    if not names or IDLE_CHECK in names:
        _read_utilisation(client, cloud, utilisation or {})
    wanted = [n for n in DEVICE_CHECKS if not names or n in names]
    if wanted:
        _read_device_health(client, cloud, utilisation or {}, wanted)
    if not names or any(n in HOST_FACT_CHECKS for n in names):
        _read_host_facts(client, cloud, utilisation or {})
    return (checks.run(cloud, settings, names=names, pool=pool),
            checks.not_run(cloud, names))


IDLE_CHECK = 'gpu-idle'
# the checks of the GPUs themselves, from the DCGM exporter's figures
DEVICE_CHECKS = ('gpu-unhealthy', 'gpu-application-xid', 'gpu-row-remap',
                 'gpu-vgpu-licence', 'gpu-driver-drift', 'gpu-missing')
# the checks that judge the hosts' facts (gpuclient-host-facts' series)
HOST_FACT_CHECKS = tuple(name for name, sources in checks.SOURCES.items()
                         if 'host_facts' in sources)


def _not_configured(cloud: model.Cloud, field: str) -> None:
    """CLOUD's FIELD was not read: no Prometheus is configured (the checks
    that rest on it could not run: ``checks.not_run``)."""
    cloud.unconfigured[field] = _(
        'no Prometheus is configured: give --prometheus <url>, '
        'prometheus_endpoint in the cloud\'s clouds.yaml entry, or '
        '$%s') % utilisation_ops.URL_ENV


def _read_device_health(
    client: GpuClient, cloud: model.Cloud, wanted: dict[str, typing.Any],
    checks_: collections.abc.Collection[str],
) -> None:
    """cloud.device_health for the DCGM checks CHECKS_, or why not in
    cloud.unread, or in cloud.unconfigured when no Prometheus is
    configured."""
    url = utilisation_ops.endpoint(client, wanted.get('url'))
    if not url:
        _not_configured(cloud, 'device_health')
        return
    window = wanted.get('window') or utilisation.window_seconds(
        device_health.DEFAULT_WINDOW)
    try:
        cloud.device_health = device_ops.health_for_check(
            client, cloud, window, url)
    except exceptions.CommandError as exc:
        # the DCGM checks say they could not judge; the others ran
        cloud.unread['device_health'] = str(exc)


def _read_host_facts(client: GpuClient, cloud: model.Cloud,
                     wanted: dict[str, typing.Any]) -> None:
    """cloud.host_facts (and when they were read) for the host checks, or
    why not in cloud.unread, or in cloud.unconfigured when no Prometheus
    is configured."""
    url = utilisation_ops.endpoint(client, wanted.get('url'))
    if not url:
        _not_configured(cloud, 'host_facts')
        return
    read_at = time.time()
    try:
        host_facts_ops.read(client, cloud, url)
    except exceptions.CommandError as exc:
        # the host checks say they could not judge; the others ran
        cloud.unread['host_facts'] = str(exc)
        return
    if cloud.host_facts is not None and cloud.host_facts_read_at is None:
        cloud.host_facts_read_at = read_at


def _read_utilisation(client: GpuClient, cloud: model.Cloud,
                      wanted: dict[str, typing.Any]) -> None:
    """cloud.utilisation for the gpu-idle check (rows, window,
    idle_below), or why not in cloud.unread, or in cloud.unconfigured when
    no Prometheus is configured."""
    url = utilisation_ops.endpoint(client, wanted.get('url'))
    if not url:
        _not_configured(cloud, 'utilisation')
        return
    window = wanted.get('window') or utilisation.window_seconds(
        utilisation.DEFAULT_WINDOW)
    idle_below = wanted.get('idle_below')
    if idle_below is None:
        idle_below = utilisation.DEFAULT_IDLE_BELOW
    try:
        rows = server_ops.every_server_utilisation(
            client, cloud, window, idle_below, url=url)
    except exceptions.CommandError as exc:
        # the gpu-idle check says it could not judge; the others ran
        cloud.unread['utilisation'] = str(exc)
        return
    cloud.utilisation = {'rows': rows, 'window': window,
                         'idle_below': idle_below}
