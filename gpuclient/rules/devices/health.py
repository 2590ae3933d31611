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

"""Pure: the health of GPU devices, from the NVIDIA DCGM exporter's
metrics in Prometheus.

No I/O here. The ops layer runs the PromQL of ``queries`` (one query per
metric, whatever the number of devices) and gives this module the parsed
answers and the rows of ``rules.devices.listing``; the series are joined
to the devices as ``rules.utilisation`` joins them to servers (guest-side
by the ``instance_id`` label, host-side by host and PCI address).

Metric and label names are dcgm-exporter's (``etc/default-counters.csv``):
``DCGM_FI_DEV_XID_ERRORS`` (gauge, the value of the last XID, held until
the GPU is reset or the exporter restarts: dcgm-exporter#500, DCGM#277),
``DCGM_FI_DEV_ROW_REMAP_FAILURE`` (gauge, whether remapping rows failed),
``DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS`` (counter),
``DCGM_EXP_GPU_HEALTH_STATUS`` (commented out by default: one series per
health watch, ``health_watch`` label, value DCGM's health result: 0 pass,
10 warn, 20 fail), ``DCGM_FI_DEV_GPU_UTIL`` (percent), the driver version
as the label ``DCGM_FI_DRIVER_VERSION`` and the model as ``modelName`` on
every series.

What a device has no series for is ``unknown``: never guessed healthy.

What the verdicts rest on:

* **host side first.** A device whose card has a host-side series (the
  exporter on the compute host: ``Hostname`` and ``pci_bus_id``) is judged
  by it alone. Only where there is none (a passthrough GPU bound to
  vfio-pci, which the host's DCGM cannot see) do the figures come from the
  guest-side series of the server holding it (``instance_id``), marked
  ``health_source`` ``guest``: the tenant controls those labels and
  values, so they describe that guest's device and never make a device
  ``unhealthy`` (the host-level verdict ``gpu device list --unhealthy``
  and gpu check's cordons rest on). ``guest_reports`` lists what guests
  report, for gpu check to pass on as the guests' word.
* **XID classes** (``xid_class``, from NVIDIA's resolution buckets in
  XID_ACTIONS): ``host`` (reset the GPU, reboot, contact support) makes a
  device unhealthy and stays so while the gauge holds the XID (until the
  GPU is reset); ``application`` (restart the application: 13, 31, 94,
  ...) is the holding project's, never the host's, and counts only while
  its change is within the window; ``informational`` counts for nothing;
  ``unlisted`` (a workflow bucket such as 45, 48, 74, or an XID gpuclient's
  table does not have) is a warning to look it up.
* **dating.** The gauge holds the last XID, so an XID is dated by the
  change of its series, ``since_queries``: the first time Prometheus'
  samples show the value it holds now.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Collection
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
import time
import typing

from gpuclient.i18n import _
from gpuclient.rules import utilisation

UNKNOWN = utilisation.UNKNOWN

# dcgm-exporter metric names (setting: prometheus_metrics)
METRICS = {
    'xid': 'DCGM_FI_DEV_XID_ERRORS',
    'row_remap_failure': 'DCGM_FI_DEV_ROW_REMAP_FAILURE',
    'uncorrectable_remapped_rows': 'DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS',
    'health': 'DCGM_EXP_GPU_HEALTH_STATUS',
    'util': utilisation.METRICS['util'],
    # field 526, served by an exporter in a vGPU guest: 0 not licensed
    'licence': 'DCGM_FI_DEV_VGPU_LICENSE_STATUS',
    # field 532 on the host, one series per vGPU instance: 0 not licensed
    'instance_licence': 'DCGM_FI_DEV_VGPU_INSTANCE_LICENSE_STATUS',
}

# labels every series carries (setting: prometheus_labels)
LABELS: dict[str, tuple[str, ...]] = {
    'driver': ('DCGM_FI_DRIVER_VERSION',),
    'model': ('modelName',),
    # field 520 on the host-side licence series: the VM of the vGPU
    # instance (libvirt's domain UUID, which is the Nova server's)
    'vm_id': ('DCGM_FI_DEV_VGPU_VM_ID',),
}

# DCGM's health results (dcgmHealthWatchResult_t)
HEALTH = {0: 'pass', 10: 'warn', 20: 'fail'}
HEALTH_FAIL = 'fail'

# row-remap states
REMAP_FAILED = 'failed'
REMAP_OK = 'ok'

# NVIDIA's resolution buckets, as the XID catalogue names them
RESTART_APP = 'RESTART_APP'
RESET_GPU = 'RESET_GPU'
RESTART_BM = 'RESTART_BM'
CONTACT_SUPPORT = 'CONTACT_SUPPORT'
IGNORE = 'IGNORE'

ACTION_TEXT = {
    RESTART_APP: _('restart the application'),
    RESET_GPU: _('reset the GPU (drain the server first)'),
    RESTART_BM: _('reboot the host'),
    CONTACT_SUPPORT: _('contact NVIDIA support'),
    IGNORE: _('none (informational)'),
}
CATALOGUE = 'https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html'
SEE_CATALOGUE = _('see NVIDIA\'s XID catalogue')

# The immediate action ("Resolution Bucket (Immediate Action)") of NVIDIA's
# XID catalogue for Ampere and newer GPUs (CATALOGUE), for the XIDs whose
# bucket is one plain action, checked against that page and against
# NVIDIA's machine-readable copy of it in NVSentinel
# (distros/kubernetes/nvsentinel/charts/gpu-health-monitor/
# xiderrorsmapping.csv, where CONTACT_SUPPORT is spelled
# UNEXPECTED_ERR_REPORT_ISSUE). An XID whose bucket is a workflow (45, 48,
# 74: WORKFLOW_XID_48, ...) or that is not listed here is answered
# SEE_CATALOGUE: never guessed.
XID_ACTIONS = {
    8: RESTART_APP,       # ROBUST_CHANNEL_FIFO_ERROR_IDLE_TIMEOUT
    13: RESTART_APP,      # ROBUST_CHANNEL_GR_EXCEPTION
    31: RESTART_APP,      # ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT
    43: IGNORE,           # ROBUST_CHANNEL_RESETCHANNEL_VERIF_ERROR
    46: RESET_GPU,        # ROBUST_CHANNEL_GPU_TIMEOUT_ERROR
    61: CONTACT_SUPPORT,  # PMU_BREAKPOINT
    62: RESET_GPU,        # PMU_HALT_ERROR
    63: IGNORE,           # INFOROM_DRAM_RETIREMENT_EVENT (row remap pending)
    64: RESET_GPU,        # INFOROM_DRAM_RETIREMENT_FAILURE
    79: RESTART_BM,       # ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS
    92: IGNORE,           # EXCESSIVE_SBE_INTERRUPTS
    94: RESTART_APP,      # ROBUST_CHANNEL_CONTAINED_ERROR
    95: RESET_GPU,        # ROBUST_CHANNEL_UNCONTAINED_ERROR
    109: RESET_GPU,       # ROBUST_CHANNEL_CTXSW_TIMEOUT_ERROR
    119: RESET_GPU,       # GSP_RPC_TIMEOUT
    120: RESET_GPU,       # GSP_ERROR
}

# What an XID asks of whom, by its bucket: a GPU reset, a reboot or a call
# to NVIDIA support is the host's (the device is unhealthy until the GPU is
# reset); restarting the application is the project's that ran it;
# informational asks nothing. A workflow bucket or an XID not in
# XID_ACTIONS is XID_UNLISTED: looked up, never guessed either way.
XID_HOST = 'host'
XID_APPLICATION = 'application'
XID_INFORMATIONAL = 'informational'
XID_UNLISTED = 'unlisted'
XID_CLASSES = {
    RESET_GPU: XID_HOST,
    RESTART_BM: XID_HOST,
    CONTACT_SUPPORT: XID_HOST,
    RESTART_APP: XID_APPLICATION,
    IGNORE: XID_INFORMATIONAL,
}

# where a device's figures come from (health_source)
HOST_SIDE = 'host'
GUEST_SIDE = 'guest'

DEFAULT_WINDOW = '1h'
# the queries (of ``queries``) that read what the exporters serve now,
# not over the window: the GPUs there are now (utilisation.join_answers
# tells a card replaced within the window from two exporters by them)
CURRENT_QUERIES = ('xid', 'health')
# How far back the change of an XID gauge is looked for (since_queries):
# an XID held longer is "before" the start of it. Prometheus keeps 15 days
# by default.
XID_LOOKBACK = 14 * 86400
# the day before the window, dated to the minute
XID_DAY = 86400
# the points of since_queries' subqueries (the precision of the date): the
# window in FINE_POINTS, the day in DAY_POINTS, the lookback in
# COARSE_POINTS
FINE_POINTS = 240
DAY_POINTS = 1440
COARSE_POINTS = 500

FIELDS = ('model', 'driver_version', 'health', 'last_xid', 'xid_action',
          'row_remap', 'util', 'unhealthy', 'xid_class', 'xid_since',
          'health_source')


def names(
        metrics: Mapping[str, object] | None = None,
        labels: Mapping[str, str | Sequence[str]] | None = None
) -> tuple[dict[str, str], dict[str, tuple[str, ...]]]:
    """(metrics, labels) with the cloud's overrides (the clouds.yaml
    dicts ``prometheus_metrics`` and ``prometheus_labels``): METRICS and
    LABELS, plus utilisation's labels that join the series."""
    merged = dict(METRICS)
    merged.update({k: str(v) for k, v in (metrics or {}).items()
                   if k in METRICS and v})
    _ignored, joined = utilisation.names(None, labels)
    found = dict(LABELS)
    for key, value in (labels or {}).items():
        if key in LABELS and value:
            found[key] = ((value,) if isinstance(value, str)
                          else tuple(str(v) for v in value))
    found.update(joined)
    return merged, found


def _ceil(seconds, points):
    return -(-int(seconds) // points)


def since_tiers(window: int) -> list[tuple[int, int]]:
    """[(span, step)] in seconds of since_queries' subqueries: the WINDOW,
    the day and the lookback (each at least the window, each step at
    least the one before)."""
    fine = max(1, _ceil(window, FINE_POINTS))
    day = max(int(window), XID_DAY)
    day_step = max(fine, _ceil(day, DAY_POINTS))
    lookback = max(int(window), XID_LOOKBACK)
    return [(int(window), fine), (day, day_step),
            (lookback, max(day_step, _ceil(lookback, COARSE_POINTS)))]


def _changed(xid, span, step):
    # at each step where the series is absent or holds another value
    # than at T, time() + step: the first step that may hold T's value
    return ('max_over_time(((((%(x)s @ end()) > 0) unless (%(x)s == '
            '(%(x)s @ end()))) * 0 + time() + %(step)d)[%(span)ds:'
            '%(step)ds])' % {'x': xid, 'step': step, 'span': span})


def since_queries(xid: str, window: int) -> dict[str, str]:
    """{name: PromQL}: for each series of the XID gauge (metric name XID)
    that holds a non-zero value at the query's time T (``@ end()``), when
    it took that value (epoch seconds).

    A subquery steps through a span: the latest step at which the series
    is absent or holds another value than at T, plus one step, is the
    change, to within one step (the first step at which the sample read
    is T's value). ``xid_since`` steps through the WINDOW: a series in its
    answer changed within the window (an application's XID is recent).
    ``xid_since_before``, for the series that held their value through
    the window: the day before it to the minute, else the lookback
    (XID_LOOKBACK) more coarsely, capped at the window's start. A series
    in neither answer held its value since before T - lookback. Two
    queries whatever the number of devices; Prometheus 2.33 or later (the
    ``@`` modifier)."""
    (span, step), day, lookback = since_tiers(window)
    return {
        'xid_since': _changed(xid, span, step),
        'xid_since_before': 'clamp_max(%s or %s, time() - %d)' % (
            _changed(xid, *day), _changed(xid, *lookback), window),
    }


def queries(window: int,
            metrics: Mapping[str, str] | None = None) -> dict[str, str]:
    """{name: PromQL}: one query per metric, whatever the number of
    devices. The XID is the gauge's value now (DCGM holds the last XID
    until the GPU is reset) and when it took it (since_queries: within
    the window, or before); the row-remap figures are the last value in
    the WINDOW (seconds), the health the current one, utilisation the
    mean over the window."""
    metrics = metrics or METRICS
    span = '[%ds]' % window
    found = {
        'xid': metrics['xid'],
        'row_remap_failure': 'last_over_time(%s%s)' % (
            metrics['row_remap_failure'], span),
        'uncorrectable_remapped_rows': 'last_over_time(%s%s)' % (
            metrics['uncorrectable_remapped_rows'], span),
        'health': metrics['health'],
        'util': 'avg_over_time(%s%s)' % (metrics['util'], span),
    }
    found.update(since_queries(metrics['xid'], window))
    return found


def check_queries(window: int,
                  metrics: Mapping[str, str] | None = None) -> dict[str, str]:
    """``queries`` and what ``gpu check`` needs besides, still one query
    per metric: the licence state of the vGPU guests and of the host-side
    vGPU instances (the last value in the WINDOW). The GPUs DCGM sees now
    are those with an ``xid`` figure (the XID gauge every GPU has, without
    a range, so a GPU no longer served is gone at the next scrape)."""
    metrics = metrics or METRICS
    found = queries(window, metrics)
    span = '[%ds]' % window
    found.update({
        'licence': 'last_over_time(%s%s)' % (metrics['licence'], span),
        'instance_licence': 'last_over_time(%s%s)' % (
            metrics['instance_licence'], span),
    })
    return found


def xid_action(xid: float | None) -> str | None:
    """NVIDIA's recommended action for XID (None: no XID)."""
    if not xid:
        return None
    bucket = XID_ACTIONS.get(int(xid))
    return ACTION_TEXT[bucket] if bucket else SEE_CATALOGUE


def xid_class(xid: float | None) -> str | None:
    """Whose an XID is (XID_CLASSES; XID_UNLISTED for a workflow bucket or
    an XID not in XID_ACTIONS); None: no XID."""
    if not xid:
        return None
    # not in XID_ACTIONS: get(None), XID_UNLISTED
    return XID_CLASSES.get(
        XID_ACTIONS.get(int(xid)), XID_UNLISTED)  # type: ignore[arg-type]


def duration_text(seconds: float) -> str:
    """'14d ago' of SECONDS (when the time of the reading is not known)."""
    return _('%s ago') % utilisation.duration_text(seconds)


def when_text(epoch: float) -> str:
    """EPOCH seconds as ISO 8601 UTC, to the second."""
    return time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(int(epoch)))


def _first_label(labels, names_):
    for name in names_:
        if labels.get(name) not in (None, ''):
            return str(labels[name])
    return None


def series(
        answers: Mapping[str, Iterable[tuple[utilisation.Labels, float]]],
        label_names: Mapping[str, Sequence[str]] | None = None
) -> list[dict[str, typing.Any]]:
    """One dict per device series (a GPU, a MIG GPU instance) from the
    parsed answers of ``queries`` ({name: [(labels, value)]}): its
    ``utilisation.series_key`` with mig, model, driver and the figures
    (health: the worst over its health watches)."""
    label_names = label_names or names()[1]
    found: dict[tuple[str, ...], dict[str, typing.Any]] = {}
    for name, results in sorted(answers.items()):
        for labels, value in results:
            key = utilisation.series_key(labels, label_names)
            vm_id = _first_label(labels, label_names['vm_id'])
            ident = tuple(key[k] or '' for k in (
                'host', 'pci', 'uuid', 'gpu_instance', 'instance_id')) + (
                    vm_id or '',)
            item = found.setdefault(ident, dict(
                key, mig=key['gpu_instance'] is not None, figures={},
                model=None, driver=None, vm_id=vm_id))
            item['model'] = item['model'] or _first_label(
                labels, label_names['model'])
            item['driver'] = item['driver'] or _first_label(
                labels, label_names['driver'])
            if name == 'health':
                value = max(value, item['figures'].get(name, value))
            item['figures'][name] = value
    return [found[k] for k in sorted(found)]


def _worst(values):
    values = [v for v in values if v is not None]
    return max(values) if values else None


# which of several XIDs (a MIG card's instances, a guest's GPUs) a device
# row shows: the one that asks most of the operator
_XID_RANK = {XID_HOST: 4, XID_UNLISTED: 3, XID_INFORMATIONAL: 1}


def _xid_reading(item, now, window):
    """(rank, xid, class, since text, recent) of one series' XID gauge:
    SINCE is when it took its value (``xid_since`` within the WINDOW
    (seconds) before NOW (epoch seconds): RECENT; ``xid_since_before``;
    in neither: before the lookback)."""
    xid = int(item['figures']['xid'])
    if not xid:
        return 0, 0, None, None, False
    cls = xid_class(xid)
    since = item['figures'].get('xid_since')
    before = item['figures'].get('xid_since_before')
    recent = since is not None
    if recent:
        text = when_text(since)
    elif before is not None:
        text = when_text(before)
    elif now is not None:
        text = 'before %s' % when_text(now - since_tiers(window)[-1][0])
    else:
        text = 'before %s' % duration_text(since_tiers(window)[-1][0])
    if cls == XID_APPLICATION:
        rank = 2 if recent else 1
    else:
        rank = _XID_RANK.get(cls, 0)
    return rank, xid, cls, text, recent


def summary(found: Collection[Mapping[str, typing.Any]], source: str,
            now: float | None, window: int) -> dict[str, typing.Any]:
    """The FIELDS of one device from its series FOUND (several for a MIG
    card or a guest with several GPUs: the worst of them), read from
    SOURCE (HOST_SIDE or GUEST_SIDE) at NOW (epoch seconds) over WINDOW
    (seconds). Only a host-side reading makes it ``unhealthy``: a host
    XID, a failed health watch or a row-remap failure."""
    def figure(name):
        return _worst(s['figures'].get(name) for s in found)

    readings = [_xid_reading(s, now, window) for s in found
                if s['figures'].get('xid') is not None]
    xid = max(readings, key=lambda r: r[:2]) if readings else None
    health = figure('health')
    failure = figure('row_remap_failure')
    rows = figure('uncorrectable_remapped_rows')
    util = figure('util')
    models = sorted({s['model'] for s in found if s['model']})
    drivers = sorted({s['driver'] for s in found if s['driver']})
    if failure is None:
        remap = UNKNOWN
    elif failure:
        remap = REMAP_FAILED
    elif rows:
        remap = _('%d rows remapped') % rows
    else:
        remap = REMAP_OK
    state = UNKNOWN if health is None else HEALTH.get(
        int(health), HEALTH_FAIL if health > 10 else 'warn')
    host_fault = xid is not None and xid[2] == XID_HOST
    return {
        'model': ', '.join(models) or UNKNOWN,
        'driver_version': ', '.join(drivers) or UNKNOWN,
        'health': state,
        'last_xid': UNKNOWN if xid is None else xid[1],
        'xid_action': UNKNOWN if xid is None else xid_action(xid[1]),
        'row_remap': remap,
        'util': None if util is None else round(util, 1),
        'unhealthy': source == HOST_SIDE and (
            host_fault or state == HEALTH_FAIL or bool(failure)),
        'xid_class': UNKNOWN if xid is None else xid[2],
        'xid_since': UNKNOWN if xid is None else xid[3],
        'xid_recent': xid is not None and xid[4],
        'health_source': source if found else UNKNOWN,
    }


# the figures of a device's own health (not a vGPU licence): a host-side
# series with one of them is the device's reading
_DEVICE_FIGURES = ('xid', 'health', 'row_remap_failure',
                   'uncorrectable_remapped_rows', 'util')


def _readings(found):
    return [d for d in found
            if any(name in d['figures'] for name in _DEVICE_FIGURES)]


def annotate(rows: Sequence[Mapping[str, typing.Any]],
             found: Iterable[Mapping[str, typing.Any]],
             hosts_of: Mapping[str, set[str]], now: float | None,
             window: int) -> list[dict[str, typing.Any]]:
    """ROWS (``listing.rows``) with the FIELDS, from the ``series``
    FOUND, read at NOW (epoch seconds) over WINDOW (seconds). HOSTS_OF:
    {provider uuid: ``utilisation.host_keys`` of its Nova host and
    hypervisor hostname}.

    A device is read from the host-side series of its card (a MIG slice:
    its card's instances) where there is one: then that alone decides.
    Else from the guest-side series of the server holding it, when that
    server holds no other device (a guest's GPU addresses are not the
    host's): the guest's report (``health_source`` guest), never
    ``unhealthy``. No series: every field ``unknown``."""
    index = utilisation.index_series(found)
    devices_of: dict[str, set[str]] = {}
    for row in rows:
        for server in row['server_ids']:
            devices_of.setdefault(server, set()).add(row['uuid'])
    annotated = []
    for row in rows:
        mine = _readings(index.card_of(hosts_of.get(row['uuid'], set()),
                                       row['pci_address'], True)[1])
        source = HOST_SIDE
        if not mine:
            held = [s for s in row['server_ids']
                    if len(devices_of[s]) == 1]
            mine = [d for s in held for d in index.guest.get(s, ())]
            source = GUEST_SIDE
        annotated.append(dict(row, **summary(mine, source, now, window)))
    return annotated


def unhealthy(
        rows: Iterable[dict[str, typing.Any]]) -> list[dict[str, typing.Any]]:
    """The annotated ROWS a host-side reading finds unhealthy: a host XID
    (reset, reboot, support) not yet cleared by a reset, a failed health
    watch or a row-remap failure."""
    return [r for r in rows if r.get('unhealthy')]


def guest_reports(
        rows: Iterable[dict[str, typing.Any]],
        found: Iterable[Mapping[str, typing.Any]], now: float | None,
        window: int
) -> list[tuple[dict[str, typing.Any], str, dict[str, typing.Any]]]:
    """What the guests of the servers holding ROWS' devices report of
    their own GPUs: [(row, server id, ``summary`` of the server's
    guest-side series)], each server once (with the first of its rows),
    for a server with guest-side series. The guest's word (the tenant
    controls its exporter): never a host-level verdict."""
    index = utilisation.index_series(found)
    reports, done = [], set()
    for row in rows:
        for server in row['server_ids']:
            mine = _readings(index.guest.get(server, ()))
            if server in done or not mine:
                continue
            done.add(server)
            reports.append((row, server, summary(mine, GUEST_SIDE, now,
                                                 window)))
    return reports


# -- what gpu check asks of them ---------------------------------------------

def unjudged(rows: Iterable[dict[str, typing.Any]],
             field: str) -> list[dict[str, typing.Any]]:
    """The annotated ROWS with no figure for FIELD (``unknown``)."""
    return [r for r in rows if r.get(field, UNKNOWN) == UNKNOWN]


def host_series(
        found: Iterable[dict[str, typing.Any]],
        hosts: Mapping[str, Iterable[str]]
) -> dict[str, list[dict[str, typing.Any]]]:
    """{Nova host: its host-side series (not a guest's, not a vGPU
    instance's licence)} of FOUND; HOSTS: {Nova host:
    ``utilisation.host_keys`` of its service host and hypervisor
    hostname}."""
    by_key: dict[str, set[str]] = {}
    for host, keys in hosts.items():
        for key in keys:
            by_key.setdefault(key, set()).add(host)
    by_host: dict[str, list[dict[str, typing.Any]]] = {}
    for item in found:
        if item['instance_id'] or item.get('vm_id') or not item['host']:
            continue
        for key in utilisation.host_keys(item['host']):
            for host in by_key.get(key, ()):
                by_host.setdefault(host, []).append(item)
    return by_host


def _card(pci):
    """A GPU's card: the domain and bus of its address (a MIG slice or an
    SR-IOV VF shares its card's)."""
    return pci[:7] if pci else None


def _own_address(pci):
    """Is PCI a GPU's own address (device 0, function 0: the one DCGM
    serves), not one of its VFs (a vGPU VF, a MIG slice)?"""
    return pci.endswith(':00.0')


def served(series: Iterable[Mapping[str, typing.Any]]) -> list[str]:
    """The PCI addresses DCGM serves now among a host's SERIES (an
    ``xid`` figure, read without a range: gone at the next scrape once
    DCGM stops seeing the GPU)."""
    return sorted({s['pci'] for s in series
                   if s['pci'] and 'xid' in s['figures']})


def not_served(
        rows: Iterable[dict[str, typing.Any]],
        series: Iterable[Mapping[str, typing.Any]],
        found: Iterable[Mapping[str, typing.Any]],
        held_through_pci: Callable[[dict[str, typing.Any]], bool]
) -> tuple[list[dict[str, typing.Any]], list[dict[str, typing.Any]],
           list[str]]:
    """Compare the addresses of the GPU devices Placement offers on one
    host (ROWS) with those its DCGM serves (SERIES, the host's): (missing,
    unsure, extra).

    A device is served when DCGM serves its address, or, for a VF (its
    address not the GPU's own), a GPU on its bus. A device a server holds
    through PCI passthrough (HELD_THROUGH_PCI(row): bound to vfio-pci,
    which the host's DCGM cannot see) is left out when the guest of a
    server holding it reports a GPU now (guest-side series in FOUND with
    an ``xid`` figure); with the guest silent too it is UNSURE, not
    missing. EXTRA: the addresses DCGM serves that Placement does not
    offer (nothing to do with what is missing: never netted against it).
    Bare-metal nodes (no address) are not compared."""
    seen = set(served(series))
    buses = {_card(p) for p in seen}
    guests = {d['instance_id'] for d in found
              if d['instance_id'] and 'xid' in d['figures']}
    missing, unsure, offered = [], [], set()
    for row in rows:
        pci = row['pci_address']
        if not pci or not row['total']:
            continue
        offered.add(pci if _own_address(pci) else _card(pci))
        if pci in seen or (not _own_address(pci) and _card(pci) in buses):
            continue
        if row['server_ids'] and held_through_pci(row):
            if not set(row['server_ids']) & guests:
                unsure.append(row)
            continue
        missing.append(row)
    extra = sorted(p for p in seen
                   if p not in offered and _card(p) not in offered)
    return missing, unsure, extra


def drivers_of(series: Iterable[Mapping[str, typing.Any]]) -> list[str]:
    """The driver versions a host's SERIES carry."""
    return sorted({s['driver'] for s in series if s['driver']})


def licences(
        found: Iterable[Mapping[str, typing.Any]]
) -> dict[str, tuple[str, bool]]:
    """{server id: (side, licensed)} from FOUND: a guest's
    DCGM_FI_DEV_VGPU_LICENSE_STATUS (joined by ``instance_id``) and a
    host-side vGPU instance's DCGM_FI_DEV_VGPU_INSTANCE_LICENSE_STATUS
    (joined by its VM id); an unlicensed reading on either side wins."""
    states = {}
    for item in found:
        for side, server, name in (('guest', item['instance_id'], 'licence'),
                                   ('host', item.get('vm_id'),
                                    'instance_licence')):
            value = item['figures'].get(name)
            if not server or value is None:
                continue
            licensed = bool(value)
            if server not in states or not licensed:
                states[server] = (side, licensed)
    return states
