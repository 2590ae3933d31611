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

"""``-f openmetrics``: the rows of ``gpu capacity list`` as metrics.

The formatter is an entry point of gpuclient's own namespace,
:data:`LIST_NAMESPACE` (with cliff's standard list formatters), which only
gpuclient's list commands (``gpuclient.v1.common.Lister``) load: other
``openstack`` commands neither offer nor load it. cliff loads it for every
gpuclient list command, ``--help`` included, so this module imports only
the standard library and cliff's formatter base (already loaded by then);
the rest is imported when the formatter is used.

:func:`render` is pure (rows in, text out) and knows the capacity columns;
rows with any other column are refused rather than turned into metrics
that mean nothing. The text is OpenMetrics 1.0.0 (``# HELP``, ``# TYPE``,
``# UNIT``, ``# EOF``) and uses only gauges, no timestamps and no
OpenMetrics-only types, so the classic Prometheus text parser (the one
node-exporter's textfile collector uses) reads it too.
"""

import logging
import math

from cliff.formatters import base

LOG = logging.getLogger(__name__)

# The formatters of gpuclient's list commands (entry points in setup.cfg):
# cliff's cliff.formatter.list ones and openmetrics.
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
UTILISATION = 'Utilisation (%)'
STRANDED = 'Stranded'
STRANDED_REASON = 'Stranded Reason'
FLAVOR_ID = 'Flavor ID'
HOSTS = 'Hosts'
HOSTS_FITTING = 'Hosts Fitting'

LONG_CAPACITY_COLUMNS = (FLAVOR_ID, HOSTS, HOSTS_FITTING)
CAPACITY_COLUMNS = (FLAVOR, POOL, HOST, RESOURCE_CLASS, FITS, GPUS_TOTAL,
                    GPUS_USED, GPUS_FREE, GPUS_AWAITING, UTILISATION,
                    STRANDED,
                    STRANDED_REASON) + LONG_CAPACITY_COLUMNS

CONTENT_TYPE = 'application/openmetrics-text; version=1.0.0; charset=utf-8'

_GPU_KEYS = (('pool', POOL), ('resource_class', RESOURCE_CLASS))


class Family:
    """One metric family and the columns it is made of.

    ``keys``: (label, column) pairs naming a series; ``host`` is added
    after ``pool`` when the rows have a ``Host`` column. ``samples``:
    (fixed labels, value column) pairs; ``payload``: a (label, column)
    pair whose text is a label but not part of the series' identity.
    ``optional``: made from columns only --long gives; rows without them
    leave the family out without a word.
    """

    def __init__(self, name, help_text, keys, samples, unit='', scale=None,
                 payload=None, optional=False):
        self.name = name
        self.help = help_text
        self.keys = keys
        self.samples = samples
        self.unit = unit
        self.scale = scale
        self.payload = payload
        self.optional = optional

    def needs(self):
        needed = [column for _label, column in self.keys]
        if self.payload:
            needed.append(self.payload[1])
        return needed


# The help texts are English on purpose: they are part of the exposition
# that dashboards and alerts are written against, not user messages.
FAMILIES = (
    Family('gpuclient_flavor_fits',
           'Servers of the flavor that still fit now in the pool '
           '(per host with a host label).',
           (('flavor', FLAVOR), ('pool', POOL)), (((), FITS),)),
    Family('gpuclient_gpus',
           'GPUs of the pool\'s resource class by state: total, used, '
           'free, and awaiting release (one-time-use devices Nova '
           'reserved after their server went).',
           _GPU_KEYS,
           (((('state', 'total'),), GPUS_TOTAL),
            ((('state', 'used'),), GPUS_USED),
            ((('state', 'free'),), GPUS_FREE),
            ((('state', 'awaiting_release'),), GPUS_AWAITING))),
    Family('gpuclient_gpu_utilisation_ratio',
           'Used GPUs over total GPUs of the pool\'s resource class, '
           'from 0 to 1.',
           _GPU_KEYS, (((), UTILISATION),), unit='ratio', scale=0.01),
    Family('gpuclient_gpus_stranded',
           'Free GPUs that no GPU flavor can use now.',
           _GPU_KEYS, (((), STRANDED),)),
    Family('gpuclient_gpus_stranded_reason',
           'Free GPUs that no GPU flavor can use now, with the reason '
           'as a label.',
           _GPU_KEYS, (((), STRANDED),),
           payload=('reason', STRANDED_REASON)),
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


def escape_label_value(text):
    """A label value as the text formats write it (\\\\, \\", \\n)."""
    return (text.replace('\\', '\\\\').replace('"', '\\"')
            .replace('\n', '\\n'))


def _escape_help(text):
    return text.replace('\\', '\\\\').replace('\n', '\\n')


def format_value(value):
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return 'NaN'
    if math.isinf(value):
        return '+Inf' if value > 0 else '-Inf'
    return repr(float(value))


def _series(labels):
    if not labels:
        return ''
    return '{%s}' % ','.join('%s="%s"' % (name, escape_label_value(value))
                             for name, value in labels)


def _missing(family, columns):
    """(whether FAMILY is out, [(what is left out, columns it needs)])."""
    missing = [c for c in family.needs() if c not in columns]
    absent = [(fixed, column) for fixed, column in family.samples
              if column not in columns]
    if len(absent) == len(family.samples):
        missing.append(' or '.join(column for _fixed, column in absent))
    if missing:
        return True, [(family.name, missing)]
    return False, [('%s{%s}' % (family.name, ','.join('%s="%s"' % pair
                                               for pair in fixed)),
             [column]) for fixed, column in absent]


def render(column_names, rows):
    """OpenMetrics text for the rows of ``gpu capacity list``.

    Returns ``(text, left_out)``: ``left_out`` lists, for metrics the
    columns cannot make (``-c`` picked a subset), ``(metric, [missing
    columns])``. Rows with a column this module does not know, or columns
    from which no metric at all can be made, raise OpenMetricsError.

    The GPU figures repeat on every flavor's row of a pool (and host): each
    series is written once; two rows that give one series different values
    raise OpenMetricsError rather than pick one.
    """
    columns = list(column_names)
    unknown = [c for c in columns if c not in CAPACITY_COLUMNS]
    if unknown:
        raise OpenMetricsError(
            _('-f openmetrics knows only the rows of "openstack gpu '
              'capacity list"; these rows have columns it does not know: '
              '%(unknown)s. Use -f json, yaml, csv, value or table for '
              'this command.')
            % {'unknown': ', '.join(unknown)})
    index = {column: i for i, column in enumerate(columns)}
    families = []
    left_out = []
    for family in FAMILIES:
        if family.optional and not any(
                column in index for _fixed, column in family.samples):
            continue
        out, missing = _missing(family, index)
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

    # family name -> {identity: (labels, value)}, insertion ordered
    found = {family.name: {} for family in families}
    for row in rows:
        row = list(row)
        for family in families:
            keys = [(label, _label_text(row[index[column]]))
                    for label, column in family.keys]
            if HOST in index:
                keys.insert(
                    [label for label, _c in keys].index('pool') + 1,
                    ('host', _label_text(row[index[HOST]])))
            keys = [(label, text) for label, text in keys if text != '']
            extra = []
            if family.payload:
                text = _label_text(row[index[family.payload[1]]])
                if text == '':
                    continue
                extra = [(family.payload[0], text)]
            for fixed, column in family.samples:
                if column not in index:
                    continue
                value = _number(column, row[index[column]])
                if value is None:
                    continue
                if family.scale is not None:
                    value = round(value * family.scale, 12)
                identity = tuple(keys) + tuple(fixed)
                labels = tuple(keys) + tuple(fixed) + tuple(extra)
                seen = found[family.name].get(identity)
                if seen is None:
                    found[family.name][identity] = (labels, value)
                elif seen != (labels, value):
                    raise OpenMetricsError(
                        _('The rows give %(series)s two values (%(one)s '
                          'and %(other)s): they cannot be one exposition. '
                          'If -c left out Host from --per-host rows, add '
                          '-c Host; otherwise report this as a gpuclient '
                          'bug.')
                        % {'series': family.name + _series(identity),
                           'one': format_value(seen[1])
                           + _series(seen[0][len(identity):]),
                           'other': format_value(value)
                           + _series(extra)})

    lines = []
    for family in families:
        lines.append('# HELP %s %s' % (family.name,
                                       _escape_help(family.help)))
        lines.append('# TYPE %s gauge' % family.name)
        if family.unit:
            lines.append('# UNIT %s %s' % (family.name, family.unit))
        for labels, value in found[family.name].values():
            lines.append('%s%s %s' % (family.name, _series(labels),
                                      format_value(value)))
    lines.append('# EOF')
    return '\n'.join(lines) + '\n', left_out


class OpenMetricsFormatter(base.ListFormatter):
    """``-f openmetrics`` for ``openstack gpu capacity list``."""

    def add_argument_group(self, parser):
        # loaded for every gpuclient list command: no options of its own
        pass

    def emit_list(self, column_names, data, stdout, parsed_args):
        try:
            text, left_out = render(column_names, data)
        except OpenMetricsError as exc:
            from osc_lib import exceptions
            raise exceptions.CommandError(str(exc)) from None
        for name, missing in left_out:
            LOG.warning(_('-f openmetrics: %(metric)s left out: it needs '
                          'the column(s) %(columns)s.'),
                        {'metric': name, 'columns': ', '.join(missing)})
        stdout.write(text)
