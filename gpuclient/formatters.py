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

"""``-f openmetrics``: the rows of ``gpu capacity list`` and ``gpu device
list`` as metrics.

The formatter is an entry point of gpuclient's own namespace,
:data:`LIST_NAMESPACE` (with cliff's standard list formatters), which only
the commands whose rows make metrics load (``formatter_namespace`` of the
command class: ``gpu capacity list`` and ``gpu device list``); every other
command, gpuclient's included, neither offers nor loads it. cliff loads it
for such a command, ``--help`` included, so this module imports only the
standard library and cliff's formatter base (already loaded by then);
``prometheus_client``, which writes the text, is imported when the
formatter is used. It is the extra ``gpuclient[metrics]``
(:func:`import_prometheus_client`): without it ``-f openmetrics`` says how
to install it, before the command reads the cloud (``v1.common.Lister``).

:func:`render` is pure (rows in, text out) and knows the columns of both
commands (:data:`EXPOSITIONS`); rows with any other column are refused
rather than turned into metrics that mean nothing. The names follow
Prometheus' naming practice (checked with ``promtool check metrics``): one
metric per quantity (no ``state`` label that ``sum`` would add up), names
that say what is measured, label values from fixed sets. The text is
OpenMetrics 1.0.0 as ``prometheus_client`` writes it, only gauges and no
timestamps, so the classic Prometheus text parser (node-exporter's textfile
collector) reads it too.
"""

import logging

from cliff.formatters import base

LOG = logging.getLogger(__name__)

# The formatters of the list commands whose rows make metrics (entry
# points in setup.cfg): cliff's cliff.formatter.list ones and openmetrics.
LIST_NAMESPACE = 'gpuclient.formatter.list'

# The columns of ``openstack gpu capacity list`` (``Host`` with
# --per-host; the LONG_CAPACITY_COLUMNS with --long).
FLAVOR = 'Flavor'
POOL = 'Pool'
HOST = 'Host'
RESOURCE_CLASS = 'Resource Class'
FITS = 'Fits'
GPUS_TOTAL = 'GPUs Total'
GPUS_USED = 'GPUs Used'
GPUS_FREE = 'GPUs Free'
# one-time-use devices Nova reserved after their server went
GPUS_AWAITING = 'GPUs Awaiting Release'
# allocated over capacity (Placement's usage), not how busy the GPUs are
ALLOCATED = 'Allocated (%)'
STRANDED = 'Stranded'
STRANDED_REASON = 'Stranded Reason'
# whether NUMATopologyFilter was judged (a flavor asking a NUMA topology)
NUMA = 'NUMA'
FLAVOR_ID = 'Flavor ID'
HOSTS = 'Hosts'
HOSTS_FITTING = 'Hosts Fitting'

LONG_CAPACITY_COLUMNS = (FLAVOR_ID, HOSTS, HOSTS_FITTING)
CAPACITY_COLUMNS = (FLAVOR, POOL, HOST, RESOURCE_CLASS, FITS, GPUS_TOTAL,
                    GPUS_USED, GPUS_FREE, GPUS_AWAITING, ALLOCATED,
                    STRANDED,
                    STRANDED_REASON, NUMA) + LONG_CAPACITY_COLUMNS

# The columns of ``openstack gpu device list`` (the LONG_DEVICE_COLUMNS
# with --long, which -f openmetrics implies; then the health columns
# with the cloud's Prometheus). HOST and RESOURCE_CLASS are shared.
POOLS = 'Pools'
PCI_ADDRESS = 'PCI Address'
STATE = 'State'
SERVER = 'Server'
PROJECT = 'Project'
PROVIDER = 'Provider'
HYPERVISOR = 'Hypervisor Hostname'
DEVICE_COLUMNS = (HOST, POOLS, RESOURCE_CLASS, PCI_ADDRESS, STATE, SERVER,
                  PROJECT)
LONG_DEVICE_COLUMNS = (PROVIDER, 'Provider UUID', 'Total', 'Used',
                       'One Time Use', 'Traits', HYPERVISOR)
HEALTH_DEVICE_COLUMNS = ('Model', 'Driver Version', 'Health', 'Last XID',
                         'XID Action', 'Row Remap', 'Util %')
# and with --long: whose the XID is, when the gauge took it, and whether
# the figures are the host's or the guest's
LONG_HEALTH_DEVICE_COLUMNS = ('XID Class', 'XID Since', 'Health Source')
# the labels of one holder of a device (the Server cell's ``holders``)
HOLDER_LABELS = ('server', 'instance_id', 'project', 'flavor')

CONTENT_TYPE = 'application/openmetrics-text; version=1.0.0; charset=utf-8'

# the labels every series gpuclient writes starts with: which cloud and
# region it describes (plugin.series_labels), so that one Prometheus can
# hold several clouds' series apart; one not known is left out (Prometheus
# reads an empty label as no label)
SERIES_LABELS = ('cloud', 'region')

_GPU_KEYS = (('pool', POOL), ('resource_class', RESOURCE_CLASS))


class Family:
    """One metric family and the columns it is made of.

    ``keys``: (label, column) pairs naming a series; ``host`` is added
    after ``pool`` when the rows have a ``Host`` column. ``samples``:
    (fixed labels, value column) pairs. ``by``: a (label, column) pair
    whose cell holds ``counts``, {label value: number}, one sample each
    (the reasons of the Stranded Reason cell), instead of ``samples``.
    ``optional``: made from columns only --long gives; rows without them
    leave the family out without a word.

    An info family (kube-state-metrics' style: value 1, the labels say
    what is known) has ``info=True`` and no samples. ``each``: a (column,
    labels) pair whose cell holds ``holders``, one tuple of LABELS values
    each: one series per holder (an empty cell: one series with those
    labels empty). ``convert``: {label: function of the cell's text}.
    """

    def __init__(self, name, help_text, keys, samples=(), unit='',
                 scale=None, by=None, optional=False, info=False,
                 each=None, convert=None):
        self.name = name
        self.help = help_text
        self.keys = keys
        self.samples = samples if by is None else (((), by[1]),)
        self.unit = unit
        self.scale = scale
        self.by = by
        self.optional = optional
        self.info = info
        self.each = each
        self.convert = convert or {}

    def needs(self):
        return [column for _label, column in self.keys] + (
            [self.each[0]] if self.each else [])

    def labels(self):
        """The family's label names, in order (after the SERIES_LABELS
        render writes)."""
        return tuple(label for label, _c in self.keys) + (
            self.each[1] if self.each else ())


# The help texts are English on purpose: they are part of the exposition
# that dashboards and alerts are written against, not user messages.
# gpuclient/tests/unit/test_formatters.py pins every name and label.
FAMILIES = (
    Family('gpuclient_flavor_fits',
           'Servers of the flavor that still fit now in the pool '
           '(per host with a host label).',
           (('flavor', FLAVOR), ('pool', POOL)), (((), FITS),)),
    Family('gpuclient_gpus_capacity',
           'GPUs of the pool\'s resource class that Placement can '
           'allocate: (total - reserved) x allocation ratio.',
           _GPU_KEYS, (((), GPUS_TOTAL),)),
    Family('gpuclient_gpus_allocated',
           'GPUs of the pool\'s resource class allocated to servers '
           '(Placement usage).',
           _GPU_KEYS, (((), GPUS_USED),)),
    Family('gpuclient_gpus_free',
           'GPUs of the pool\'s resource class not allocated: capacity '
           'minus allocated.',
           _GPU_KEYS, (((), GPUS_FREE),)),
    Family('gpuclient_gpus_awaiting_release',
           'One-time-use GPUs of the pool\'s resource class that Nova '
           'keeps reserved after their server went, until released.',
           _GPU_KEYS, (((), GPUS_AWAITING),)),
    Family('gpuclient_gpus_allocated_ratio',
           'Allocated over capacity of the pool\'s resource class, from 0 '
           'to 1: how much is handed out, not how busy the GPUs are.',
           _GPU_KEYS, (((), ALLOCATED),), unit='ratio', scale=0.01),
    Family('gpuclient_gpus_stranded',
           'Free GPUs that no GPU flavor can use now.',
           _GPU_KEYS, (((), STRANDED),)),
    Family('gpuclient_gpus_stranded_by_reason',
           'Free GPUs that no GPU flavor can use now, by reason: '
           'no_flavor, host_filtered, host_out_of_vcpu, host_out_of_pcpu, '
           'host_out_of_memory, host_out_of_disk or request_does_not_fit '
           '(the table\'s Stranded Reason column says which device and '
           'why).',
           _GPU_KEYS, by=('reason', STRANDED_REASON)),
    Family('gpuclient_flavor_hosts',
           'Hosts counted for the flavor in the pool (1 per host with a '
           'host label).',
           (('flavor', FLAVOR), ('pool', POOL)), (((), HOSTS),),
           optional=True),
    Family('gpuclient_flavor_hosts_fitting',
           'Hosts of the pool where at least one more server of the '
           'flavor fits now.',
           (('flavor', FLAVOR), ('pool', POOL)), (((), HOSTS_FITTING),),
           optional=True),
    # deprecated: written for one more release, then removed
    Family('gpuclient_gpus',
           'Deprecated, removed in the next release: use '
           'gpuclient_gpus_capacity, gpuclient_gpus_allocated and '
           'gpuclient_gpus_free (sum over state counts every GPU twice).',
           _GPU_KEYS,
           (((('state', 'total'),), GPUS_TOTAL),
            ((('state', 'used'),), GPUS_USED),
            ((('state', 'free'),), GPUS_FREE))),
    Family('gpuclient_gpu_utilisation_ratio',
           'Deprecated, removed in the next release: use '
           'gpuclient_gpus_allocated_ratio, the same figure (it measures '
           'allocation, not utilisation).',
           _GPU_KEYS, (((), ALLOCATED),), unit='ratio', scale=0.01),
)
DEPRECATED = ('gpuclient_gpus', 'gpuclient_gpu_utilisation_ratio')


def dcgm_pci_bus_id(address):
    """A PCI address ('0000:84:00.0') as the DCGM exporter's
    ``pci_bus_id`` label writes it (NVML's bus id, upper-case hex:
    '00000000:84:00.0'); '' for none."""
    import re

    match = re.match(r'^([0-9a-fA-F]{1,8}):([0-9a-fA-F]{1,2}):'
                     r'([0-9a-fA-F]{1,2})\.([0-7])$', address or '')
    if not match:
        return ''
    domain, bus, device, function = (int(g, 16) for g in match.groups())
    return '%08X:%02X:%02X.%d' % (domain, bus, device, function)


# ``gpu device list -f openmetrics``: one series per device and server
# holding it, joinable to the DCGM exporter's series on (hostname,
# pci_bus_id), or on instance_id for an exporter inside the server.
DEVICE_FAMILIES = (
    Family('gpuclient_device_info',
           'One GPU device as Placement and Nova know it (value 1): '
           'hostname and pci_bus_id as the DCGM exporter labels the '
           'card, instance_id, server, project and flavor of a server '
           'holding it (one series per server; empty when free).',
           (('host', HOST), ('hostname', HYPERVISOR),
            ('pci_bus_id', PCI_ADDRESS), ('provider', PROVIDER),
            ('resource_class', RESOURCE_CLASS), ('pool', POOLS),
            ('state', STATE)),
           info=True, each=(SERVER, HOLDER_LABELS),
           convert={'pci_bus_id': dcgm_pci_bus_id}),
)


class Exposition:
    """The metrics one command's rows make: its COLUMNS (every column the
    command may give) and FAMILIES."""

    def __init__(self, command, columns, families):
        self.command = command
        self.columns = columns
        self.families = families


EXPOSITIONS = (
    Exposition('openstack gpu capacity list', CAPACITY_COLUMNS, FAMILIES),
    Exposition('openstack gpu device list',
               DEVICE_COLUMNS + LONG_DEVICE_COLUMNS + HEALTH_DEVICE_COLUMNS
               + LONG_HEALTH_DEVICE_COLUMNS,
               DEVICE_FAMILIES),
)


class OpenMetricsError(ValueError):
    """Rows that cannot be turned into metrics; the message says why."""


def _(text):
    from gpuclient.i18n import _ as translate
    return translate(text)


def _plain(value):
    if hasattr(value, 'machine_readable'):  # cliff FormattableColumn
        value = value.machine_readable()
    return value


def _label_text(value):
    value = _plain(value)
    if value is None:
        return ''
    if isinstance(value, (list, tuple)):
        return '; '.join(str(v) for v in value)
    return str(value)


def _number(column, value):
    """The number a cell holds, or None for an empty cell."""
    value = _plain(value)
    if value is None or value == '':
        return None
    if isinstance(value, bool):
        pass
    elif isinstance(value, (int, float)):
        return value
    elif isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            try:
                return float(value)
            except ValueError:
                pass
    raise OpenMetricsError(
        _('Column "%(column)s" holds %(value)r, which is not a number: '
          'these rows are not the ones -f openmetrics knows (openstack '
          'gpu capacity list). Use -f json or -f table.')
        % {'column': column, 'value': value})


def _carried(column, value, attribute, missing, command):
    """What the cell VALUE carries as ATTRIBUTE (None for an empty cell
    without it); a cell of text without it is refused: MISSING says what
    the text lacks, COMMAND whose rows -f openmetrics knows."""
    found = getattr(value, attribute, None)
    if found is None and _plain(value):
        raise OpenMetricsError(
            _('Column "%(column)s" holds %(value)r, %(missing)s: these '
              'rows are not the ones -f openmetrics knows (%(command)s). '
              'Use -f json or -f table.')
            % {'column': column, 'value': _plain(value),
               'missing': missing, 'command': command})
    return found


def _counts(column, value):
    """{label value: number} of a cell that holds ``counts`` (an empty
    cell: none)."""
    counts = _carried(column, value, 'counts',
                      _('text without the reasons behind it'),
                      'openstack gpu capacity list') or {}
    return {str(k): _number(column, n) for k, n in sorted(counts.items())}


def _holders(family, value):
    """[((label, value), ...)] per holder of the cell VALUE (a ``holders``
    attribute: one tuple of values each); one of empty values for none."""
    column, labels = family.each
    holders = _carried(column, value, 'holders',
                       _('names without the servers behind them'),
                       'openstack gpu device list')
    holders = list(holders or ()) or [('',) * len(labels)]
    return [tuple((label, _label_text(v)) for label, v in
                  zip(labels, holder, strict=True)) for holder in holders]


def _series(labels):
    if not labels:
        return ''
    return '{%s}' % ','.join('%s="%s"' % pair for pair in labels)


def _missing(family, columns):
    """(whether FAMILY is out, [(what is left out, columns it needs)])."""
    missing = [c for c in family.needs() if c not in columns]
    absent = [(fixed, column) for fixed, column in family.samples
              if column not in columns]
    if family.samples and len(absent) == len(family.samples):
        missing.append(' or '.join(column for _fixed, column in absent))
    if missing:
        return True, [(family.name, missing)]
    return False, [('%s{%s}' % (family.name, ','.join('%s="%s"' % pair
                                               for pair in fixed)),
             [column]) for fixed, column in absent]


def _exposition(columns):
    """The EXPOSITIONS entry whose command gives every one of COLUMNS."""
    for exposition in EXPOSITIONS:
        if all(c in exposition.columns for c in columns):
            return exposition
    unknown = [c for c in columns if c not in CAPACITY_COLUMNS]
    raise OpenMetricsError(
        _('-f openmetrics knows only the rows of %(commands)s; these '
          'rows have columns it does not know: %(unknown)s. Use -f json, '
          'yaml, csv, value or table for this command.')
        % {'commands': ' and '.join('"%s"' % e.command
                                    for e in EXPOSITIONS),
           'unknown': ', '.join(unknown)})


def _families(columns):
    """([families the columns make], [(left out, columns it needs)])."""
    exposition = _exposition(columns)
    families, left_out = [], []
    for family in exposition.families:
        if family.optional and not any(
                column in columns for _fixed, column in family.samples):
            continue
        out, missing = _missing(family, columns)
        left_out.extend(missing)
        if not out:
            families.append(family)
    if not families:
        raise OpenMetricsError(
            _('-f openmetrics can make no metric from the columns '
              '%(columns)s: %(needs)s. Select those columns with -c, or '
              'leave -c out.')
            % {'columns': ', '.join(columns) or '(none)',
               'needs': '; '.join(
                   '%s needs %s' % (name, ', '.join(missing))
                   for name, missing in left_out)})
    return families, left_out


def _row_samples(family, row, index, series=()):
    """[(labels, value)] that FAMILY takes from ROW (None cells: none),
    the labels after SERIES (SERIES_LABELS pairs)."""
    keys = list(series) + [(label, family.convert.get(label, str)(
        _label_text(row[index[column]]))) for label, column in family.keys]
    if family.info:
        return [(tuple(keys) + holder, 1) for holder in
                _holders(family, row[index[family.each[0]]])]
    if HOST in index:
        keys.insert([label for label, _c in keys].index('pool') + 1,
                    ('host', _label_text(row[index[HOST]])))
    keys = tuple(keys)
    if family.by is not None:
        label, column = family.by
        return [(keys + ((label, value),), number) for value, number in
                _counts(column, row[index[column]]).items()
                if number is not None]
    found = []
    for fixed, column in family.samples:
        if column not in index:
            continue
        value = _number(column, row[index[column]])
        if value is None:
            continue
        if family.scale is not None:
            value = round(value * family.scale, 12)
        found.append((keys + tuple(fixed), value))
    return found


def render(column_names, rows, series_labels=None):
    """OpenMetrics text for the rows of ``gpu capacity list``.

    SERIES_LABELS: the values of SERIES_LABELS, (('cloud', name),
    ('region', name)) as ``plugin.series_labels`` gives them, the first
    labels of every series; one that is '' or None is left out.

    Returns ``(text, left_out)``: ``left_out`` lists, for metrics the
    columns cannot make (``-c`` picked a subset), ``(metric, [missing
    columns])``. Rows with a column this module does not know, or columns
    from which no metric at all can be made, raise OpenMetricsError.

    The GPU figures repeat on every flavor's row of a pool (and host): each
    series is written once; two rows that give one series different values
    raise OpenMetricsError rather than pick one.
    """
    metrics_core, exposition = import_prometheus_client()
    series = dict(series_labels or ())
    series = tuple((label, str(series[label])) for label in SERIES_LABELS
                   if series.get(label))
    columns = list(column_names)
    families, left_out = _families(columns)
    index = {column: i for i, column in enumerate(columns)}

    # family name -> {labels: value}, insertion ordered
    found = {family.name: {} for family in families}
    for row in rows:
        row = list(row)
        for family in families:
            for labels, value in _row_samples(family, row, index, series):
                seen = found[family.name].setdefault(labels, value)
                if seen != value:
                    raise OpenMetricsError(
                        _('The rows give %(series)s two values (%(one)s '
                          'and %(other)s): they cannot be one exposition. '
                          'If -c left out Host from --per-host rows, add '
                          '-c Host; otherwise report this as a gpuclient '
                          'bug.')
                        % {'series': family.name + _series(labels),
                           'one': seen, 'other': value})

    metrics = []
    for family in families:
        samples = found[family.name]
        # one set of label names per family (the rows' columns fix it)
        names = [label for label, _v in next(iter(samples), ())]
        if family.info:
            names = [label for label, _v in series] + list(family.labels())
        metric = metrics_core.GaugeMetricFamily(
            family.name, family.help, labels=names, unit=family.unit)
        for labels, value in samples.items():
            metric.add_metric([text for _label, text in labels], value)
        metrics.append(metric)
    text = exposition.generate_latest(_Collected(metrics))
    return text.decode('utf-8'), left_out


def import_prometheus_client():
    """The two modules of ``prometheus_client`` that write the text, an
    optional dependency: ``pip install "gpuclient[metrics]"``;
    CommandError saying so when it is not installed."""
    try:
        from prometheus_client import metrics_core
        from prometheus_client.openmetrics import exposition
    except ImportError as exc:
        from gpuclient import extras

        raise extras.missing(extras.METRICS, 'prometheus-client',
                             '-f openmetrics', exc) from None
    return metrics_core, exposition


class _Collected:
    """What prometheus_client's writers take: an object with collect()."""

    def __init__(self, metrics):
        self.metrics = metrics

    def collect(self):
        return iter(self.metrics)


class OpenMetricsFormatter(base.ListFormatter):
    """``-f openmetrics`` for ``openstack gpu capacity list`` and ``gpu
    device list``."""

    def add_argument_group(self, parser):
        # loaded for every gpuclient list command: no options of its own
        pass

    def emit_list(self, column_names, data, stdout, parsed_args):
        try:
            text, left_out = render(column_names, data, getattr(
                parsed_args, 'series_labels', None))
        except OpenMetricsError as exc:
            from osc_lib import exceptions
            raise exceptions.CommandError(str(exc)) from None
        for name, missing in left_out:
            LOG.warning(_('-f openmetrics: %(metric)s left out: it needs '
                          'the column(s) %(columns)s.'),
                        {'metric': name, 'columns': ', '.join(missing)})
        stdout.write(text)
