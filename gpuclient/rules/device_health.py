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
answers and the rows of ``rules.devices``; the series are joined to the
devices as ``rules.utilisation`` joins them to servers (guest-side by the
``instance_id`` label, host-side by host and PCI address).

Metric and label names are dcgm-exporter's (``etc/default-counters.csv``):
``DCGM_FI_DEV_XID_ERRORS`` (gauge, the value of the last XID),
``DCGM_FI_DEV_ROW_REMAP_FAILURE`` (gauge, whether remapping rows failed),
``DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS`` (counter),
``DCGM_EXP_GPU_HEALTH_STATUS`` (commented out by default: one series per
health watch, ``health_watch`` label, value DCGM's health result: 0 pass,
10 warn, 20 fail), ``DCGM_FI_DEV_GPU_UTIL`` (percent), the driver version
as the label ``DCGM_FI_DRIVER_VERSION`` and the model as ``modelName`` on
every series.

What a device has no series for is ``unknown``: never guessed healthy.
"""

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
LABELS = {
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

DEFAULT_WINDOW = '1h'

FIELDS = ('model', 'driver_version', 'health', 'last_xid', 'xid_action',
          'row_remap', 'util', 'unhealthy')


def names(metrics=None, labels=None):
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


def queries(window, metrics=None):
    """{name: PromQL}: one query per metric, whatever the number of
    devices. The last XID and the row-remap figures are the last value
    in the WINDOW (seconds; an XID reported in it is recent), the health
    the current one, utilisation the mean over the window."""
    metrics = metrics or METRICS
    span = '[%ds]' % window
    return {
        'xid': 'last_over_time(%s%s)' % (metrics['xid'], span),
        'row_remap_failure': 'last_over_time(%s%s)' % (
            metrics['row_remap_failure'], span),
        'uncorrectable_remapped_rows': 'last_over_time(%s%s)' % (
            metrics['uncorrectable_remapped_rows'], span),
        'health': metrics['health'],
        'util': 'avg_over_time(%s%s)' % (metrics['util'], span),
    }


def check_queries(window, metrics=None):
    """``queries`` and what ``gpu check`` needs besides, still one query
    per metric: the GPUs DCGM sees now (``present``: the XID gauge every
    GPU has, without a range, so a GPU no longer served is gone at the
    next scrape) and the licence state of the vGPU guests and of the
    host-side vGPU instances (the last value in the WINDOW)."""
    metrics = metrics or METRICS
    found = queries(window, metrics)
    span = '[%ds]' % window
    found.update({
        'present': metrics['xid'],
        'licence': 'last_over_time(%s%s)' % (metrics['licence'], span),
        'instance_licence': 'last_over_time(%s%s)' % (
            metrics['instance_licence'], span),
    })
    return found


def xid_action(xid):
    """NVIDIA's recommended action for XID (None: no XID)."""
    if not xid:
        return None
    bucket = XID_ACTIONS.get(int(xid))
    return ACTION_TEXT[bucket] if bucket else SEE_CATALOGUE


def _first_label(labels, names_):
    for name in names_:
        if labels.get(name) not in (None, ''):
            return str(labels[name])
    return None


def series(answers, label_names=None):
    """One dict per device series (a GPU, a MIG GPU instance) from the
    parsed answers of ``queries`` ({name: [(labels, value)]}): its
    ``utilisation.series_key`` with mig, model, driver and the figures
    (health: the worst over its health watches)."""
    label_names = label_names or names()[1]
    found = {}
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


def summary(found):
    """The FIELDS of one device from its series FOUND (several for a MIG
    card or a guest with several GPUs: the worst of them)."""
    def figure(name):
        return _worst(s['figures'].get(name) for s in found)

    xid = figure('xid')
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
    return {
        'model': ', '.join(models) or UNKNOWN,
        'driver_version': ', '.join(drivers) or UNKNOWN,
        'health': state,
        'last_xid': UNKNOWN if xid is None else int(xid),
        'xid_action': xid_action(xid) if xid is not None else UNKNOWN,
        'row_remap': remap,
        'util': None if util is None else round(util, 1),
        'unhealthy': bool(xid) or state == HEALTH_FAIL or bool(failure),
    }


def annotate(rows, found, hosts_of):
    """ROWS (``rules.devices.rows``) with the FIELDS, from the ``series``
    FOUND. HOSTS_OF: {provider uuid: ``utilisation.host_keys`` of its
    Nova host and hypervisor hostname}.

    A device is joined to the guest-side series of the server holding it
    when that server holds no other device (a guest's GPU addresses are
    not the host's), else to the host-side series of its card (a MIG
    slice: its card's instances); no series: every field ``unknown``."""
    index = utilisation.index_series(found)
    devices_of = {}
    for row in rows:
        for server in row['server_ids']:
            devices_of.setdefault(server, set()).add(row['uuid'])
    annotated = []
    for row in rows:
        held = [s for s in row['server_ids'] if len(devices_of[s]) == 1]
        mine = [d for s in held for d in index.guest.get(s, ())]
        if not mine:
            mine = index.card_of(hosts_of.get(row['uuid'], set()),
                                 row['pci_address'], True)[1]
        annotated.append(dict(row, **summary(mine)))
    return annotated


def unhealthy(rows):
    """The annotated ROWS with a recent XID, a failed health watch or a
    row-remap failure."""
    return [r for r in rows if r.get('unhealthy')]


# -- what gpu check asks of them ---------------------------------------------

def unjudged(rows, field):
    """The annotated ROWS with no figure for FIELD (``unknown``)."""
    return [r for r in rows if r.get(field, UNKNOWN) == UNKNOWN]


def host_series(found, hosts):
    """{Nova host: its host-side series (not a guest's, not a vGPU
    instance's licence)} of FOUND; HOSTS: {Nova host:
    ``utilisation.host_keys`` of its service host and hypervisor
    hostname}."""
    by_key = {}
    for host, keys in hosts.items():
        for key in keys:
            by_key.setdefault(key, set()).add(host)
    by_host = {}
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


def cards_seen(series):
    """The cards (domain:bus) DCGM serves now among a host's SERIES
    (``present``: gone at the next scrape once DCGM stops seeing it)."""
    return sorted({_card(s['pci']) for s in series
                   if s['pci'] and 'present' in s['figures']})


def cards_offered(rows):
    """{card (domain:bus): PCI addresses} of the GPU devices Placement
    offers in ROWS (one host's; bare-metal nodes have no address)."""
    found = {}
    for row in rows:
        if row['pci_address'] and row['total']:
            found.setdefault(_card(row['pci_address']), []).append(
                row['pci_address'])
    return found


def drivers_of(series):
    """The driver versions a host's SERIES carry."""
    return sorted({s['driver'] for s in series if s['driver']})


def licences(found):
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
