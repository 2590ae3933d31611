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

"""``-f openmetrics``: read back with Prometheus' own parsers.

The rows are made from a small cloud model (pools, hosts, flavors); every
value and label the parser reads back is checked against that model, not
against text written in the test.
"""

from importlib import metadata as importlib_metadata
import io
import json
import os
import shutil
import subprocess
import sys
from unittest import mock

from cliff import lister
from osc_lib import exceptions
from osc_lib.cli import format_columns
from osc_lib.command import command
from prometheus_client import parser as classic_parser
from prometheus_client.openmetrics import parser as om_parser

from gpuclient import formatters
from gpuclient.rules import capacity
from gpuclient.tests.unit import base
from gpuclient.tests.unit import test_descriptions
from gpuclient.tests.unit.v1 import test_host
from gpuclient.v1 import candidates
from gpuclient.v1 import capacity as capacity_cmd
from gpuclient.v1 import common
from gpuclient.v1 import host

COLUMNS = ('Flavor', 'Pool', 'Resource Class', 'Fits', 'GPUs Total',
           'GPUs Used', 'GPUs Free', 'GPUs Awaiting Release',
           'Allocated (%)', 'Stranded', 'Stranded Reason')
HOST_COLUMNS = COLUMNS[:2] + ('Host',) + COLUMNS[2:]
LONG = formatters.LONG_CAPACITY_COLUMNS

# pool -> (resource class, {host: (total, used, stranded, reason, text)})
POOLS = {
    'solver': ('CUSTOM_PCI_10DE_2331', {
        'gpu-pt-1': (4, 1, 0, None, ''),
        'gpu-pt-2': (4, 3, 1, capacity.HOST_OUT_OF['MEMORY_MB'],
                     'gpu-pt-2 has 2048 MEMORY_MB free and g1.h100.1 '
                     'needs 131072'),
    }),
    'workstation': ('VGPU', {
        'gpu-vgpu-1': (8, 7, 1, capacity.NO_FLAVOR,
                       'no GPU flavor asks for what it offers (1 free '
                       'VGPU, CUSTOM_NVIDIA_35)'),
        'gpu-vgpu-2': (0, 0, 0, None, ''),  # no GPU left in inventory
    }),
}
# one-time-use devices awaiting release (in the total, neither used nor
# free), by host
AWAITING = {'gpu-pt-1': 1}
# flavor -> (pool, {host: fits})
FLAVORS = {
    'g1.h100.1': ('solver', {'gpu-pt-1': 3, 'gpu-pt-2': 0}),
    'g1.h100.2': ('solver', {'gpu-pt-1': 1, 'gpu-pt-2': 0}),
    'g1.vgpu.2': ('workstation', {'gpu-vgpu-1': 0, 'gpu-vgpu-2': 0}),
}

# Every metric gpu capacity list -f openmetrics writes, with its labels
# (with --per-host, "host" after "pool") and unit. Dashboards and alerts
# are written against these: a change here is an upgrade note.
PINNED = {
    'gpuclient_flavor_fits': (('flavor', 'pool'), ''),
    'gpuclient_gpus_capacity': (('pool', 'resource_class'), ''),
    'gpuclient_gpus_allocated': (('pool', 'resource_class'), ''),
    'gpuclient_gpus_free': (('pool', 'resource_class'), ''),
    'gpuclient_gpus_awaiting_release': (('pool', 'resource_class'), ''),
    'gpuclient_gpus_allocated_ratio': (('pool', 'resource_class'),
                                       'ratio'),
    'gpuclient_gpus_stranded': (('pool', 'resource_class'), ''),
    'gpuclient_gpus_stranded_by_reason': (
        ('pool', 'resource_class', 'reason'), ''),
    # --long only
    'gpuclient_flavor_hosts': (('flavor', 'pool'), ''),
    'gpuclient_flavor_hosts_fitting': (('flavor', 'pool'), ''),
    # deprecated: one more release (releasenotes), then gone
    'gpuclient_gpus': (('pool', 'resource_class', 'state'), ''),
    'gpuclient_gpu_utilisation_ratio': (('pool', 'resource_class'),
                                        'ratio'),
}
LONG_ONLY = {'gpuclient_flavor_hosts', 'gpuclient_flavor_hosts_fitting'}
# the reason label's values, the whole set
REASONS = ('no_flavor', 'host_filtered', 'host_out_of_vcpu',
           'host_out_of_pcpu', 'host_out_of_memory', 'host_out_of_disk',
           'request_does_not_fit')


def allocated(total, used):
    return None if not total else round(100.0 * used / total, 1)


def reason_cell(hosts):
    """The Stranded Reason cell of HOSTS' figures, as the command has it."""
    texts = [h[4] for h in hosts if h[4]]
    counts = {}
    for h in hosts:
        if h[3]:
            counts[h[3]] = counts.get(h[3], 0) + h[2]
    return capacity_cmd.StrandedReasonColumn(texts, counts)


def capacity_rows(pools=POOLS, flavors=FLAVORS, per_host=False,
                  long=False):
    """The rows ``gpu capacity list`` gives for the model."""
    rows = []
    for flavor, (pool, fits) in flavors.items():
        rc, hosts = pools[pool]
        places = ([[h] for h in hosts] if per_host else [list(hosts)])
        for names in places:
            figures = [hosts[h] for h in names]
            total = sum(f[0] for f in figures)
            used = sum(f[1] for f in figures)
            awaiting = sum(AWAITING.get(h, 0) for h in names)
            row = (flavor, pool) + ((names[0],) if per_host else ()) + (
                rc, sum(fits[h] for h in names), total, used,
                total - used - awaiting, awaiting, allocated(total, used),
                sum(f[2] for f in figures), reason_cell(figures))
            if long:
                row += ('id-' + flavor, len(names),
                        sum(1 for h in names if fits[h]))
            rows.append(row)
    return rows


def columns_of(per_host=False, long=False):
    return (HOST_COLUMNS if per_host else COLUMNS) + (LONG if long else ())


def parse(text):
    """{family: (type, unit, [(labels, value)])}, by the OpenMetrics parser.

    It refuses what is not OpenMetrics 1.0.0 (no # EOF, a line after it,
    metadata after samples, a unit that does not end the name...).
    """
    return {
        family.name: (family.type, family.unit,
                      [(s.labels, s.value) for s in family.samples])
        for family in om_parser.text_string_to_metric_families(text)
    }


def series(parsed, name):
    return {tuple(sorted(labels.items())): value
            for labels, value in parsed[name][2]}


def key(**labels):
    return tuple(sorted(labels.items()))


def every_output():
    """(what, text) of every shape -f openmetrics writes: per pool and per
    host, with and without --long, column subsets, no rows, and label
    values that need escaping."""
    out = []
    for per_host in (False, True):
        for long in (False, True):
            out.append(('per_host=%s long=%s' % (per_host, long),
                        formatters.render(
                            columns_of(per_host, long),
                            capacity_rows(per_host=per_host,
                                          long=long))[0]))
        out.append(('no rows per_host=%s' % per_host, formatters.render(
            columns_of(per_host, True), [])[0]))
    rows = capacity_rows(per_host=True)
    for subset in (('Flavor', 'Pool', 'Host', 'Fits'),
                   ('Pool', 'Host', 'Resource Class', 'GPUs Free',
                    'Stranded', 'Stranded Reason')):
        at = [HOST_COLUMNS.index(c) for c in subset]
        out.append(('-c %s' % ', '.join(subset), formatters.render(
            subset, [[row[i] for i in at] for row in rows])[0]))
    out.append(('escaping', formatters.render(HOST_COLUMNS, awkward_rows(
        AWKWARD))[0]))
    return out


AWKWARD = {
    'pool': 'quote " back\\slash\nnew line',
    'flavor': 'g1."x"\\\\2',
    'host': 'h\\n-not-a-newline',
    'reason': 'line one\nline "two" \\ end, ünïcode',
}


def awkward_rows(awkward):
    pools = {awkward['pool']: ('VGPU', {awkward['host']: (
        2, 1, 1, capacity.NO_FLAVOR, awkward['reason'])})}
    flavors = {awkward['flavor']: (awkward['pool'], {awkward['host']: 0})}
    return capacity_rows(pools, flavors, per_host=True)


class TestRender(base.TestCase):
    def test_metric_and_label_names_are_pinned(self):
        self.assertEqual(
            PINNED, {f.name: (tuple(label for label, _c in f.keys)
                              + tuple(label for fixed, _c in f.samples[:1]
                                      for label, _v in fixed)
                              + ((f.by[0],) if f.by else ()), f.unit)
                     for f in formatters.FAMILIES})
        self.assertEqual(set(REASONS), set(capacity.STRANDED_REASONS))
        for per_host in (False, True):
            parsed = parse(formatters.render(
                columns_of(per_host, long=True),
                capacity_rows(per_host=per_host, long=True))[0])
            self.assertEqual(set(PINNED), set(parsed))
            for name, (labels, unit) in PINNED.items():
                self.assertEqual('gauge', parsed[name][0], name)
                self.assertEqual(unit or None, parsed[name][1] or None, name)
                wanted = set(labels) | ({'host'} if per_host else set())
                for found, _value in parsed[name][2]:
                    self.assertEqual(wanted, set(found), name)
        # without --long, the two host-count metrics are left out
        self.assertEqual(set(PINNED) - LONG_ONLY, set(parse(
            formatters.render(COLUMNS, capacity_rows())[0])))

    def test_cloud_and_region_on_every_series(self):
        # issue 51 defect 4: every family, every sample
        for per_host in (False, True):
            text = formatters.render(
                columns_of(per_host, long=True),
                capacity_rows(per_host=per_host, long=True),
                (('region', 'RegionOne'), ('cloud', 'prod')))[0]
            parsed = parse(text)
            self.assertEqual(set(PINNED), set(parsed))
            for name, (_type, _unit, samples) in parsed.items():
                self.assertTrue(samples, name)
                for found, _value in samples:
                    self.assertEqual(('prod', 'RegionOne'), (
                        found['cloud'], found['region']), name)
        promtool = shutil.which('promtool')
        if promtool:
            proc = subprocess.run([promtool, 'check', 'metrics'], input=text,
                                  capture_output=True, text=True)
            self.assertEqual((0, ''), (proc.returncode,
                                       proc.stdout + proc.stderr))

    def test_promtool_check_metrics(self):
        # Prometheus' own linter (naming practice: units, _total only on
        # counters, help texts...) on every output shape; Debian's
        # prometheus package has it
        promtool = shutil.which('promtool')
        if not promtool:
            self.skipTest('promtool not found (apt-get install prometheus)')
        for what, text in every_output():
            proc = subprocess.run([promtool, 'check', 'metrics'],
                                  input=text, capture_output=True,
                                  text=True)
            self.assertEqual((0, ''), (proc.returncode,
                                       proc.stdout + proc.stderr),
                             (what, text))

    def test_per_host_rows_read_back(self):
        text, left_out = formatters.render(HOST_COLUMNS,
                                           capacity_rows(per_host=True))
        self.assertEqual([], left_out)
        parsed = parse(text)
        self.assertEqual({'gauge'}, {t for t, _u, _s in parsed.values()})

        fits = {key(flavor=f, pool=p, host=h): n
                for f, (p, per_host) in FLAVORS.items()
                for h, n in per_host.items()}
        self.assertEqual(fits, series(parsed, 'gpuclient_flavor_fits'))

        figures = {'capacity': {}, 'allocated': {}, 'free': {},
                   'awaiting_release': {}}
        ratio, stranded, by_reason, old = {}, {}, {}, {}
        for pool, (rc, hosts) in POOLS.items():
            for name, (total, used, strand, reason, _t) in hosts.items():
                labels = dict(pool=pool, host=name, resource_class=rc)
                awaiting = AWAITING.get(name, 0)
                for metric, state, value in (
                        ('capacity', 'total', total),
                        ('allocated', 'used', used),
                        ('free', 'free', total - used - awaiting),
                        ('awaiting_release', None, awaiting)):
                    figures[metric][key(**labels)] = value
                    if state:
                        old[key(state=state, **labels)] = value
                if total:
                    ratio[key(**labels)] = used / total
                stranded[key(**labels)] = strand
                if reason:
                    by_reason[key(reason=reason, **labels)] = strand
        for metric, expected in figures.items():
            self.assertEqual(expected,
                             series(parsed, 'gpuclient_gpus_' + metric))
        for name in ('gpuclient_gpus_allocated_ratio',
                     'gpuclient_gpu_utilisation_ratio'):
            found = series(parsed, name)
            self.assertEqual(set(ratio), set(found))
            for labels, value in ratio.items():
                self.assertAlmostEqual(value, found[labels], places=3)
        self.assertEqual(old, series(parsed, 'gpuclient_gpus'))
        self.assertEqual(stranded, series(parsed, 'gpuclient_gpus_stranded'))
        self.assertEqual(by_reason,
                         series(parsed, 'gpuclient_gpus_stranded_by_reason'))

    def test_sum_counts_each_gpu_once(self):
        # the split: sum over a pool's series gives its figure, once
        parsed = parse(formatters.render(HOST_COLUMNS,
                                         capacity_rows(per_host=True))[0])
        for pool, (_rc, hosts) in POOLS.items():
            for metric, at in (('capacity', 0), ('allocated', 1)):
                self.assertEqual(
                    sum(h[at] for h in hosts.values()),
                    sum(v for labels, v in parsed['gpuclient_gpus_'
                                                  + metric][2]
                        if labels['pool'] == pool))
            self.assertEqual(
                sum(h[2] for h in hosts.values()),
                sum(v for labels, v
                    in parsed['gpuclient_gpus_stranded_by_reason'][2]
                    if labels['pool'] == pool))

    def test_reason_label_is_a_fixed_value_not_the_sentence(self):
        # the sentence (translated, with counts) stays in the table: the
        # series do not change with the locale or a count
        rows = capacity_rows(per_host=True)
        text = formatters.render(HOST_COLUMNS, rows)[0]
        for _pool, (_rc, hosts) in POOLS.items():
            for figures in hosts.values():
                if figures[4]:
                    self.assertNotIn(figures[4], text)
        reasons = {labels['reason'] for labels, _v in parse(text)[
            'gpuclient_gpus_stranded_by_reason'][2]}
        self.assertEqual({'host_out_of_memory', 'no_flavor'}, reasons)
        self.assertLessEqual(reasons, set(REASONS))
        other = POOLS['solver'][1]['gpu-pt-2']
        pools = dict(POOLS, solver=(POOLS['solver'][0], dict(
            POOLS['solver'][1], **{'gpu-pt-2': other[:4] + (
                'gpu-pt-2 hat 1024 MEMORY_MB frei',)})))
        self.assertEqual(text, formatters.render(
            HOST_COLUMNS, capacity_rows(pools, per_host=True))[0])
        # and the table still says it
        cell = rows[1][-1]
        self.assertEqual(other[4], cell.human_readable())
        self.assertEqual([other[4]], cell.machine_readable())

    def test_rows_of_the_capacity_command(self):
        # the command's own table(): its columns, its reasons cell
        for per_host in (False, True):
            dicts = []
            for pool, (rc, hosts) in POOLS.items():
                for name, (total, used, strand, reason, text) in (
                        hosts.items()):
                    dicts.append({
                        'flavor': 'f-' + pool, 'flavor_id': 'id', 'pool':
                        pool, 'host': name, 'resource_class': rc,
                        'fits': 0, 'hosts': 1, 'hosts_fitting': 0,
                        'total': total, 'used': used, 'free': total - used,
                        'awaiting_release': 0,
                        'allocated': allocated(total, used),
                        'stranded': strand,
                        'stranded_reasons': [text] if text else [],
                        'stranded_by_reason': ({reason: strand}
                                               if reason else {}),
                        'numa': None})
            if not per_host:
                dicts = [dict(d, host=None) for d in dicts
                         if d['host'] in ('gpu-pt-2', 'gpu-vgpu-1')]
            columns, rows = capacity_cmd.table(dicts, per_host=per_host)
            # and the NUMA column, which no metric family reads
            self.assertEqual(list(columns_of(per_host)) + ['NUMA'],
                             list(columns))
            parsed = parse(formatters.render(columns, rows)[0])
            self.assertEqual(
                {(d['pool'], r, n) for d in dicts
                 for r, n in d['stranded_by_reason'].items()},
                {(labels['pool'], labels['reason'], v) for labels, v
                 in parsed['gpuclient_gpus_stranded_by_reason'][2]})

    def test_long_columns_add_host_counts(self):
        # --long adds Flavor ID, Hosts and Hosts Fitting: two more
        # families, per pool or per host; the rows without them (no
        # --long) leave those families out without a warning
        for per_host in (False, True):
            rows = capacity_rows(per_host=per_host, long=True)
            text, left_out = formatters.render(columns_of(per_host, True),
                                               rows)
            self.assertEqual([], left_out)
            parsed = parse(text)
            for name, at in (('gpuclient_flavor_hosts', -2),
                             ('gpuclient_flavor_hosts_fitting', -1)):
                expected = {}
                for row in rows:
                    labels = dict(flavor=row[0], pool=row[1])
                    if per_host:
                        labels['host'] = row[2]
                    expected[key(**labels)] = row[at]
                self.assertEqual(expected, series(parsed, name))
            # the flavor ID is no label: series keep their identity
            self.assertNotIn('id-g1.h100.1', text)
            text, left_out = formatters.render(
                columns_of(per_host), capacity_rows(per_host=per_host))
            self.assertEqual([], left_out)
            self.assertNotIn('gpuclient_flavor_hosts', text)

    def test_no_duplicate_series(self):
        # the GPU figures of a pool repeat on the row of each of its
        # flavors: every series is written once
        for per_host in (False, True):
            rows = capacity_rows(per_host=per_host)
            parsed = parse(formatters.render(columns_of(per_host),
                                             rows)[0])
            for name, (_type, _unit, samples) in parsed.items():
                labelsets = [tuple(sorted(labels.items()))
                             for labels, _value in samples]
                self.assertEqual(len(set(labelsets)), len(labelsets), name)
            hosts = sum(len(h) for _rc, h in POOLS.values())
            places = hosts if per_host else len(POOLS)
            for name in ('gpuclient_gpus_capacity',
                         'gpuclient_gpus_stranded'):
                self.assertEqual(places, len(parsed[name][2]), name)
            self.assertEqual(3 * places, len(parsed['gpuclient_gpus'][2]))
            self.assertEqual(len(rows),
                             len(parsed['gpuclient_flavor_fits'][2]))

    def test_rows_without_host_have_no_host_label(self):
        text, _left_out = formatters.render(COLUMNS, capacity_rows())
        parsed = parse(text)
        fits = {key(flavor=f, pool=p): sum(per_host.values())
                for f, (p, per_host) in FLAVORS.items()}
        self.assertEqual(fits, series(parsed, 'gpuclient_flavor_fits'))
        for name, (_type, _unit, samples) in parsed.items():
            for labels, _value in samples:
                self.assertNotIn('host', labels, name)
        solver = key(pool='solver', resource_class='CUSTOM_PCI_10DE_2331')
        self.assertEqual(
            8, series(parsed, 'gpuclient_gpus_capacity')[solver])
        self.assertAlmostEqual(
            0.5, series(parsed, 'gpuclient_gpus_allocated_ratio')[solver])

    def test_exposition_ends_with_eof(self):
        text, _left_out = formatters.render(COLUMNS, capacity_rows())
        self.assertEqual('# EOF', text.splitlines()[-1])
        self.assertTrue(text.endswith('\n'))
        # the parser refuses anything after # EOF and a missing # EOF
        self.assertRaises(ValueError, parse, text + 'x 1\n')
        self.assertRaises(ValueError, parse, text[:-len('# EOF\n')])

    def test_no_rows(self):
        text, _left_out = formatters.render(HOST_COLUMNS, [])
        parsed = parse(text)
        self.assertEqual(set(PINNED) - LONG_ONLY, set(parsed))
        text, _left_out = formatters.render(columns_of(True, True), [])
        self.assertEqual(set(PINNED), set(parse(text)))
        self.assertEqual([], [s for _t, _u, s in parsed.values() if s])

    def test_classic_text_parser_reads_it_too(self):
        # node-exporter's textfile collector reads the classic format
        text, _left_out = formatters.render(HOST_COLUMNS,
                                            capacity_rows(per_host=True))
        classic = {f.name: {tuple(sorted(s.labels.items())): s.value
                            for s in f.samples}
                   for f in classic_parser.text_string_to_metric_families(
                       text)}
        parsed = parse(text)
        self.assertEqual({name: series(parsed, name) for name in parsed},
                         classic)
        for line in text.splitlines():
            if line.startswith('# TYPE '):
                self.assertEqual('gauge', line.split()[-1])
            if not line.startswith('#'):
                # no timestamp: the textfile collector refuses them
                self.assertEqual(2, len(line.rsplit('} ', 1)), line)
                self.assertNotIn(' ', line.rsplit('} ', 1)[1])

    def test_label_escaping(self):
        text, _left_out = formatters.render(HOST_COLUMNS,
                                            awkward_rows(AWKWARD))
        # one sample per line: the newlines are escaped
        samples = [line for line in text.splitlines()
                   if not line.startswith('#')]
        # fits; capacity, allocated, free, awaiting; the ratio; stranded;
        # by reason; the deprecated three states and ratio
        self.assertEqual(1 + 4 + 1 + 1 + 1 + 3 + 1, len(samples))
        parsed = parse(text)
        self.assertEqual(
            [{'flavor': AWKWARD['flavor'], 'pool': AWKWARD['pool'],
              'host': AWKWARD['host']}],
            [labels for labels, _v in parsed['gpuclient_flavor_fits'][2]])
        self.assertEqual(
            [{'pool': AWKWARD['pool'], 'host': AWKWARD['host'],
              'resource_class': 'VGPU', 'reason': 'no_flavor'}],
            [labels for labels, _v
             in parsed['gpuclient_gpus_stranded_by_reason'][2]])

    def test_formattable_columns_and_empty_cells(self):
        rows = [('g1.vgpu.2', 'workstation', 'VGPU', 0, 0, 0, 0, 0, None, 2,
                 capacity_cmd.StrandedReasonColumn(
                     ['a', 'b'], {'no_flavor': 1, 'host_filtered': 1}))]
        text, _left_out = formatters.render(COLUMNS, rows)
        parsed = parse(text)
        # no ratio for a pool without GPUs rather than a made-up 0
        self.assertEqual([], parsed['gpuclient_gpus_allocated_ratio'][2])
        self.assertEqual(
            {'host_filtered': 1, 'no_flavor': 1},
            {labels['reason']: v for labels, v
             in parsed['gpuclient_gpus_stranded_by_reason'][2]})
        # an empty cell: no reason; text without reasons: refused
        for cell in ('', None, format_columns.ListColumn([])):
            rows = [rows[0][:-1] + (cell,)]
            self.assertEqual([], parse(formatters.render(COLUMNS, rows)[0])[
                'gpuclient_gpus_stranded_by_reason'][2])
        rows = [rows[0][:-1] + (format_columns.ListColumn(['a']),)]
        exc = self.assertRaises(formatters.OpenMetricsError,
                                formatters.render, COLUMNS, rows)
        self.assertIn('text without the reasons behind it', str(exc))

    def test_numbers_as_text_and_floats(self):
        rows = [('f', 'p', 'VGPU', '3', 4, 1, 3, 0, '33.3', 0.0, '')]
        parsed = parse(formatters.render(COLUMNS, rows)[0])
        self.assertEqual([({'flavor': 'f', 'pool': 'p'}, 3)],
                         parsed['gpuclient_flavor_fits'][2])
        self.assertAlmostEqual(
            0.333, parsed['gpuclient_gpus_allocated_ratio'][2][0][1])
        self.assertIn('gpuclient_gpus_allocated_ratio{pool="p",'
                      'resource_class="VGPU"} 0.333\n',
                      formatters.render(COLUMNS, rows)[0])

    def test_not_a_number_is_refused(self):
        for bad in ('many', True, ['1']):
            rows = [('f', 'p', 'VGPU', bad, 4, 1, 3, 0, 25.0, 0, '')]
            exc = self.assertRaises(formatters.OpenMetricsError,
                                    formatters.render, COLUMNS, rows)
            self.assertIn('Column "Fits" holds', str(exc))

    def test_conflicting_rows_are_refused(self):
        rows = capacity_rows()
        # the second solver flavor sees another GPU total for the pool
        rows[1] = rows[1][:4] + (rows[1][4] + 1,) + rows[1][5:]
        exc = self.assertRaises(formatters.OpenMetricsError,
                                formatters.render, COLUMNS, rows)
        self.assertIn('gpuclient_gpus_capacity{pool="solver",resource_class='
                      '"CUSTOM_PCI_10DE_2331"} two values (8 and 9)',
                      str(exc))

    def test_foreign_columns_are_refused(self):
        for columns in (test_host.COLUMNS, candidates.COLUMNS,
                        ('Name', 'Pool', 'Fits')):
            exc = self.assertRaises(formatters.OpenMetricsError,
                                    formatters.render, columns, [])
            unknown = [c for c in columns
                       if c not in formatters.CAPACITY_COLUMNS]
            self.assertIn('columns it does not know: %s.'
                          % ', '.join(unknown), str(exc))
            self.assertIn('openstack gpu capacity list', str(exc))

    def test_subsets(self):
        rows = capacity_rows(per_host=True)

        def pick(*columns):
            at = [HOST_COLUMNS.index(c) for c in columns]
            return columns, [[row[i] for i in at] for row in rows]

        text, left_out = formatters.render(*pick('Flavor', 'Pool', 'Host',
                                                 'Fits'))
        self.assertEqual(['gpuclient_flavor_fits'], list(parse(text)))
        self.assertEqual(len(rows),
                         len(parse(text)['gpuclient_flavor_fits'][2]))
        self.assertEqual(set(PINNED) - LONG_ONLY - {'gpuclient_flavor_fits'},
                         {name for name, _missing in left_out})
        self.assertIn(('gpuclient_gpus_capacity',
                       ['Resource Class', 'GPUs Total']), left_out)
        self.assertIn(('gpuclient_gpus_stranded_by_reason',
                       ['Resource Class', 'Stranded Reason']), left_out)

        text, left_out = formatters.render(*pick(
            'Pool', 'Host', 'Resource Class', 'GPUs Free', 'Stranded'))
        parsed = parse(text)
        self.assertEqual({'gpuclient_gpus_free', 'gpuclient_gpus',
                          'gpuclient_gpus_stranded'}, set(parsed))
        self.assertEqual({'free'}, {labels['state'] for labels, _v
                                    in parsed['gpuclient_gpus'][2]})
        self.assertIn(('gpuclient_gpus{state="total"}', ['GPUs Total']),
                      left_out)
        self.assertIn(('gpuclient_gpus_stranded_by_reason',
                       ['Stranded Reason']), left_out)
        self.assertIn(('gpuclient_flavor_fits', ['Flavor', 'Fits']),
                      left_out)
        # without Host, the per-host figures of a pool would collide
        exc = self.assertRaises(formatters.OpenMetricsError,
                                formatters.render, *pick(
                                    'Pool', 'Resource Class', 'GPUs Total'))
        self.assertIn('two values', str(exc))

    def test_nothing_to_make_is_refused(self):
        exc = self.assertRaises(formatters.OpenMetricsError,
                                formatters.render, ('Pool', 'Fits'), [])
        self.assertIn('can make no metric from the columns Pool, Fits: '
                      'gpuclient_flavor_fits needs Flavor', str(exc))


class FakeCapacity(common.Lister):
    """A Lister with the capacity columns, as cliff runs it."""

    formatter_namespace = formatters.LIST_NAMESPACE

    rows = ()
    columns = HOST_COLUMNS

    def take_action(self, parsed_args):
        return self.columns, list(self.rows)


class TestThroughCliff(base.CommandTestCase):
    """-f openmetrics as cliff runs it, with the formatters of gpuclient's
    namespace (as setup.cfg declares them: base.TreeFormatters)."""

    def run_lister(self, cmd, args):
        cmd.app.stdout = io.StringIO()
        cmd.run(self.check_parser(cmd, args))
        return cmd.app.stdout.getvalue()

    def capacity(self, rows, *args):
        cmd = FakeCapacity(self.make_app(None), None)
        cmd.rows = rows
        return self.run_lister(cmd, ['-f', 'openmetrics', *args])

    def test_same_figures_as_json(self):
        rows = capacity_rows(per_host=True)
        cmd = FakeCapacity(self.make_app(None), None)
        cmd.rows = rows
        data = json.loads(self.run_lister(cmd, ['-f', 'json']))
        parsed = parse(self.capacity(rows))
        fits = series(parsed, 'gpuclient_flavor_fits')
        self.assertEqual(len(data), len(fits))
        for item in data:
            self.assertEqual(item['Fits'], fits[key(
                flavor=item['Flavor'], pool=item['Pool'],
                host=item['Host'])])
        self.assertEqual('', self.logger.output)

    def test_column_subset_says_what_is_left_out(self):
        # the columns as named (cliff matches -c whatever its case from
        # 4.16 on only)
        text = self.capacity(capacity_rows(per_host=True), '-c', 'Flavor',
                             '-c', 'Pool', '-c', 'Host', '-c', 'Fits',
                             '--sort-column', 'Fits')
        self.assertEqual(['gpuclient_flavor_fits'], list(parse(text)))
        values = [v for _l, v in parse(text)['gpuclient_flavor_fits'][2]]
        self.assertEqual(sorted(values), values)
        self.assertIn('-f openmetrics: gpuclient_gpus left out: it needs '
                      'the column(s) Resource Class, GPUs Total or GPUs '
                      'Used or GPUs Free.\n', self.logger.output)

    def test_allocated_column_selected_by_its_name(self):
        # issue 57 item 4: the column says allocation ("Utilisation (%)"
        # before); -c picks it in every format, openmetrics included
        rows = capacity_rows(per_host=True)
        cmd = FakeCapacity(self.make_app(None), None)
        cmd.rows = rows
        data = json.loads(self.run_lister(cmd, [
            '-f', 'json', '-c', 'Pool', '-c', 'Host', '-c',
            'Resource Class', '-c', 'Allocated (%)']))
        self.assertEqual(['Pool', 'Host', 'Resource Class', 'Allocated (%)'],
                         list(data[0]))
        text = self.capacity(rows, '-c', 'Pool', '-c', 'Host', '-c',
                             'Resource Class', '-c', 'Allocated (%)')
        ratios = series(parse(text), 'gpuclient_gpus_allocated_ratio')
        self.assertTrue(ratios)
        self.assertEqual(
            {key(pool=item['Pool'], host=item['Host'],
                 resource_class=item['Resource Class']):
             item['Allocated (%)'] * 0.01 for item in data
             if item['Allocated (%)'] is not None}, ratios)

    def test_refusal_is_a_command_error(self):
        exc = self.assertRaises(exceptions.CommandError, self.capacity,
                                capacity_rows(per_host=True), '-c', 'Pool')
        self.assertIn('can make no metric', str(exc))

    def test_without_prometheus_client_says_how_to_install_it(self):
        # prometheus-client is the extra gpuclient[metrics]: without it
        # -f openmetrics is one line saying how to install it, before the
        # command reads anything (take_action not run); other formats work
        patcher = mock.patch.dict(sys.modules, {'prometheus_client': None})
        patcher.start()
        self.addCleanup(patcher.stop)
        cmd = FakeCapacity(self.make_app(None), None)
        cmd.rows = capacity_rows(per_host=True)
        read = mock.patch.object(cmd, 'take_action',
                                 wraps=cmd.take_action).start()
        self.addCleanup(mock.patch.stopall)
        exc = self.assertRaises(exceptions.CommandError, self.run_lister,
                                cmd, ['-f', 'openmetrics'])
        self.assertIn('-f openmetrics needs the Python package '
                      'prometheus-client', str(exc))
        self.assertIn('pip install "gpuclient[metrics]"', str(exc))
        self.assertNotIn('\n', str(exc))
        read.assert_not_called()
        self.assertEqual(len(cmd.rows), len(json.loads(
            self.run_lister(cmd, ['-f', 'json']))))
        # render itself says the same (a caller outside a command)
        exc = self.assertRaises(exceptions.CommandError, formatters.render,
                                HOST_COLUMNS, cmd.rows)
        self.assertIn('gpuclient[metrics]', str(exc))


class TestNotOffered(base.CommandTestCase):
    """``-f openmetrics`` on a command whose rows make no metrics: not a
    choice (argparse refuses it, exit 2), so nothing runs."""

    def test_host_list_and_candidates(self):
        for cls in (host.ListHost, candidates.ListCandidate,
                    candidates.Candidates):
            cmd = cls(self.make_app(None), None)
            exc = self.assertRaises(base.ParserError, self.check_parser,
                                    cmd, ['-f', 'openmetrics'])
            self.assertIn("invalid choice: 'openmetrics'", str(exc))


ROOT = base.ROOT
STANDARD = ('csv', 'json', 'table', 'value', 'yaml')  # cliff's list formats
OPENMETRICS = 'gpuclient.formatters:OpenMetricsFormatter'


HELP_END = '--- end of help ---'


def osc_help(commands):
    """``openstack COMMAND --help`` for each of COMMANDS, each followed by
    a HELP_END line, with the formatters of base.TreeFormatters (the child
    process of TestWiring.test_openstack_help); the worst exit status."""
    from cliff import display
    from openstackclient import shell

    display.DisplayCommandBase._load_formatter_plugins = base.tree_loader
    worst = 0
    for command_name in commands:
        worst = max(worst, shell.main(command_name.split() + ['--help']))
        sys.stdout.write(HELP_END + '\n')
        sys.stdout.flush()
    return worst


def format_choices(cmd):
    parser = cmd.get_parser('test')
    (action,) = [a for a in parser._actions if a.dest == 'formatter']
    return list(action.choices)


class PlainLister(command.Lister):
    """A list command of another OSC plugin."""

    def take_action(self, parsed_args):
        return (), []


class TestWiring(base.CommandTestCase):
    def test_nothing_in_cliff_namespaces(self):
        # cliff.formatter.list is read by every Lister of every openstack
        # command: gpuclient adds nothing to any namespace of cliff's
        groups = base.declared_entry_points()
        self.assertIn('openstack.gpu.v1', groups)
        self.assertEqual([], [g for g in groups if g.startswith('cliff.')])
        self.assertEqual(
            [], [(group, name) for group, entries in groups.items()
                 for name, target in entries.items()
                 if target == OPENMETRICS
                 and group != formatters.LIST_NAMESPACE])

    def test_namespace_is_cliffs_list_formatters_and_openmetrics(self):
        cliffs = {ep.name: ep.value for ep in
                  importlib_metadata.distribution('cliff').entry_points
                  if ep.group == 'cliff.formatter.list'}
        self.assertLessEqual(set(STANDARD), set(cliffs))
        self.assertEqual(
            dict(cliffs, openmetrics=OPENMETRICS),
            base.declared_entry_points()[formatters.LIST_NAMESPACE])
        module, _colon, name = OPENMETRICS.partition(':')
        self.assertEqual((formatters.__name__, 'OpenMetricsFormatter'),
                         (module, name))

    def test_only_the_commands_that_produce_it_offer_it(self):
        # the namespace is per command class: capacity list's rows make
        # metrics; every other list command has cliff's formats only
        offering, listers = [], []
        for name, target in test_descriptions.entry_points().items():
            cls = test_descriptions.load(target)
            if not issubclass(cls, lister.Lister):
                continue
            listers.append(name)
            self.assertTrue(issubclass(cls, common.Lister), name)
            cmd = cls(self.make_app(None), None)
            choices = format_choices(cmd)
            self.assertLessEqual(set(STANDARD), set(choices), name)
            if 'openmetrics' in choices:
                offering.append(name)
                self.assertEqual(formatters.LIST_NAMESPACE,
                                 cmd.formatter_namespace, name)
        self.assertEqual(['gpu capacity list', 'gpu device list'],
                         sorted(offering))
        self.assertIn('gpu host list', listers)
        self.assertGreaterEqual(len(listers), 10)

    def test_choices(self):
        # base.TestCase loads the formatters as setup.cfg declares them
        self.assertEqual(
            sorted(STANDARD + ('openmetrics',)),
            format_choices(capacity_cmd.ListCapacity(self.make_app(None),
                                                     None)))
        for cmd in (host.ListHost(self.make_app(None), None),
                    PlainLister(self.make_app(None), None)):
            choices = format_choices(cmd)
            self.assertLessEqual(set(STANDARD), set(choices))
            self.assertNotIn('openmetrics', choices)

    def test_openstack_help(self):
        # the real openstack shell, in a child process (it configures
        # logging), with this tree's code and formatters
        env = {k: v for k, v in os.environ.items()
               if not k.startswith('OS_')}
        env['PYTHONPATH'] = os.pathsep.join(
            [ROOT] + [p for p in env.get('PYTHONPATH', '').split(os.pathsep)
                      if p])
        code = ('import sys; from gpuclient.tests.unit import '
                'test_formatters as t; sys.exit(t.osc_help(sys.argv[1:]))')
        out = subprocess.run(
            [sys.executable, '-c', code, 'server list', 'gpu host list',
             'gpu capacity list'],
            check=True, capture_output=True, text=True, env=env).stdout
        server, hosts, capacity, rest = out.split(HELP_END + '\n')
        self.assertEqual('', rest)
        self.assertIn(' server list [-h]', server)
        self.assertIn(' gpu host list [-h]', hosts)
        self.assertIn(' gpu capacity list [-h]', capacity)
        for text in (server, hosts):
            self.assertIn('-f {csv,json,table,value,yaml}', text)
            self.assertNotIn('openmetrics', text)
        self.assertIn('-f {csv,json,openmetrics,table,value,yaml}',
                      capacity)

    def test_import_is_cheap(self):
        # cliff imports it for every Lister of every openstack command
        code = ('import sys, logging, math, cliff.formatters.base; '
                'before = set(sys.modules); import gpuclient.formatters; '
                'print(",".join(sorted(set(sys.modules) - before)))')
        out = subprocess.run([sys.executable, '-c', code], check=True,
                             capture_output=True, text=True).stdout
        self.assertEqual(['gpuclient', 'gpuclient.formatters'],
                         out.strip().split(','))
