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
import subprocess
import sys

from cliff import lister
from osc_lib import exceptions
from osc_lib.cli import format_columns
from osc_lib.command import command
from prometheus_client import parser as classic_parser
from prometheus_client.openmetrics import parser as om_parser

from gpuclient import formatters
from gpuclient.tests.unit import base
from gpuclient.tests.unit import test_descriptions
from gpuclient.tests.unit.v1 import test_candidates
from gpuclient.tests.unit.v1 import test_host
from gpuclient.v1 import candidates
from gpuclient.v1 import capacity as capacity_cmd
from gpuclient.v1 import common
from gpuclient.v1 import host

COLUMNS = ('Flavor', 'Pool', 'Resource Class', 'Fits', 'GPUs Total',
           'GPUs Used', 'GPUs Free', 'GPUs Awaiting Release',
           'Utilisation (%)', 'Stranded', 'Stranded Reason')
HOST_COLUMNS = COLUMNS[:2] + ('Host',) + COLUMNS[2:]

# pool -> (resource class, {host: (total, used, stranded, reason)})
POOLS = {
    'solver': ('CUSTOM_PCI_10DE_2331', {
        'gpu-pt-1': (4, 1, 0, ''),
        'gpu-pt-2': (4, 3, 1, 'no RAM left on the host for any flavor'),
    }),
    'workstation': ('VGPU', {
        'gpu-vgpu-1': (8, 7, 1, 'every flavor asks for 2 VGPU'),
        'gpu-vgpu-2': (0, 0, 0, ''),  # no GPU left in inventory
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


def utilisation(total, used):
    return None if not total else round(100.0 * used / total, 1)


def capacity_rows(pools=POOLS, flavors=FLAVORS, per_host=False):
    """The rows ``gpu capacity list`` gives for the model."""
    rows = []
    for flavor, (pool, fits) in flavors.items():
        rc, hosts = pools[pool]
        if per_host:
            for name, (total, used, stranded, reason) in hosts.items():
                awaiting = AWAITING.get(name, 0)
                rows.append((flavor, pool, name, rc, fits[name], total,
                             used, total - used - awaiting, awaiting,
                             utilisation(total, used), stranded, reason))
            continue
        total = sum(h[0] for h in hosts.values())
        used = sum(h[1] for h in hosts.values())
        stranded = sum(h[2] for h in hosts.values())
        reason = '; '.join(h[3] for h in hosts.values() if h[3])
        awaiting = sum(AWAITING.get(h, 0) for h in hosts)
        rows.append((flavor, pool, rc, sum(fits.values()), total, used,
                     total - used - awaiting, awaiting,
                     utilisation(total, used), stranded, reason))
    return rows


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


class TestRender(base.TestCase):
    def test_per_host_rows_read_back(self):
        text, left_out = formatters.render(HOST_COLUMNS,
                                           capacity_rows(per_host=True))
        self.assertEqual([], left_out)
        parsed = parse(text)
        self.assertEqual({'gauge'}, {t for t, _u, _s in parsed.values()})
        self.assertEqual('ratio',
                         parsed['gpuclient_gpu_utilisation_ratio'][1])

        fits = {key(flavor=f, pool=p, host=h): n
                for f, (p, per_host) in FLAVORS.items()
                for h, n in per_host.items()}
        self.assertEqual(fits, series(parsed, 'gpuclient_flavor_fits'))

        gpus, ratio, stranded, reasons = {}, {}, {}, {}
        for pool, (rc, hosts) in POOLS.items():
            for name, (total, used, strand, reason) in hosts.items():
                labels = dict(pool=pool, host=name, resource_class=rc)
                awaiting = AWAITING.get(name, 0)
                for state, value in (('total', total), ('used', used),
                                     ('free', total - used - awaiting),
                                     ('awaiting_release', awaiting)):
                    gpus[key(state=state, **labels)] = value
                if total:
                    ratio[key(**labels)] = used / total
                stranded[key(**labels)] = strand
                if reason:
                    reasons[key(reason=reason, **labels)] = strand
        self.assertEqual(gpus, series(parsed, 'gpuclient_gpus'))
        found = series(parsed, 'gpuclient_gpu_utilisation_ratio')
        self.assertEqual(set(ratio), set(found))
        for labels, value in ratio.items():
            self.assertAlmostEqual(value, found[labels], places=3)
        self.assertEqual(stranded, series(parsed, 'gpuclient_gpus_stranded'))
        self.assertEqual(reasons,
                         series(parsed, 'gpuclient_gpus_stranded_reason'))

    def test_rows_of_the_capacity_command(self):
        # the command's own table(): same columns, its reasons column
        names = dict(zip(HOST_COLUMNS, (
            'flavor', 'pool', 'host', 'resource_class', 'fits', 'total',
            'used', 'free', 'awaiting_release', 'utilisation', 'stranded',
            'stranded_reasons'),
            strict=True))
        for per_host in (False, True):
            dicts = []
            for row in capacity_rows(per_host=per_host):
                item = dict(zip((names[c] for c in (
                    HOST_COLUMNS if per_host else COLUMNS)), row,
                    strict=True))
                item['stranded_reasons'] = [
                    r for r in [item['stranded_reasons']] if r]
                dicts.append(item)
            columns, rows = capacity_cmd.table(dicts, per_host=per_host)
            self.assertEqual(list(HOST_COLUMNS if per_host else COLUMNS),
                             list(columns))
            parsed = parse(formatters.render(columns, rows)[0])
            reasons = series(parsed, 'gpuclient_gpus_stranded_reason')
            self.assertEqual(
                {d['stranded_reasons'][0] for d in dicts
                 if d['stranded_reasons']},
                {dict(labels)['reason'] for labels in reasons})
            self.assertEqual(len(dicts),
                             len(parsed['gpuclient_flavor_fits'][2]))

    def test_long_columns_add_host_counts(self):
        # --long adds Flavor ID, Hosts and Hosts Fitting: two more
        # families, per pool or per host; the rows without them (no
        # --long) leave those families out without a warning
        for per_host in (False, True):
            dicts = []
            for flavor, (pool, fits) in FLAVORS.items():
                rc, hosts = POOLS[pool]
                places = ([[h] for h in hosts] if per_host
                          else [list(hosts)])
                for names in places:
                    dicts.append({
                        'flavor': flavor, 'flavor_id': 'id-' + flavor,
                        'pool': pool, 'host': names[0] if per_host else None,
                        'resource_class': rc,
                        'fits': sum(fits[h] for h in names),
                        'hosts': len(names),
                        'hosts_fitting': sum(1 for h in names if fits[h]),
                        'total': 0, 'used': 0, 'free': 0,
                        'awaiting_release': 0, 'utilisation': None,
                        'stranded': 0, 'stranded_reasons': []})
            columns, rows = capacity_cmd.table(dicts, per_host=per_host,
                                               long=True)
            self.assertEqual(('Flavor ID', 'Hosts', 'Hosts Fitting'),
                             tuple(columns[-3:]))
            text, left_out = formatters.render(columns, rows)
            self.assertEqual([], left_out)
            parsed = parse(text)
            for name, field in (('gpuclient_flavor_hosts', 'hosts'),
                                ('gpuclient_flavor_hosts_fitting',
                                 'hosts_fitting')):
                expected = {}
                for d in dicts:
                    labels = dict(flavor=d['flavor'], pool=d['pool'])
                    if per_host:
                        labels['host'] = d['host']
                    expected[key(**labels)] = d[field]
                self.assertEqual(expected, series(parsed, name))
            # the flavor ID is no label: series keep their identity
            self.assertNotIn('id-g1.h100.1', text)
            columns, rows = capacity_cmd.table(dicts, per_host=per_host)
            text, left_out = formatters.render(columns, rows)
            self.assertEqual([], left_out)
            self.assertNotIn('gpuclient_flavor_hosts', text)

    def test_no_duplicate_series(self):
        # the GPU figures of a pool repeat on the row of each of its
        # flavors: every series is written once
        for per_host, columns in ((False, COLUMNS), (True, HOST_COLUMNS)):
            rows = capacity_rows(per_host=per_host)
            text, _left_out = formatters.render(columns, rows)
            parsed = parse(text)
            for name, (_type, _unit, samples) in parsed.items():
                labelsets = [tuple(sorted(labels.items()))
                             for labels, _value in samples]
                self.assertEqual(len(set(labelsets)), len(labelsets), name)
            hosts = sum(len(h) for _rc, h in POOLS.values())
            places = hosts if per_host else len(POOLS)
            # total, used, free and awaiting release
            self.assertEqual(4 * places, len(parsed['gpuclient_gpus'][2]))
            self.assertEqual(places,
                             len(parsed['gpuclient_gpus_stranded'][2]))
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
            8, series(parsed, 'gpuclient_gpus')[solver + (('state',
                                                          'total'),)])
        self.assertAlmostEqual(
            0.5, series(parsed, 'gpuclient_gpu_utilisation_ratio')[solver])

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
        self.assertEqual({f.name for f in formatters.FAMILIES
                          if not f.optional}, set(parsed))
        text, _left_out = formatters.render(
            HOST_COLUMNS + formatters.LONG_CAPACITY_COLUMNS, [])
        self.assertEqual({f.name for f in formatters.FAMILIES},
                         set(parse(text)))
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
        awkward = {
            'pool': 'quote " back\\slash\nnew line',
            'flavor': 'g1."x"\\\\2',
            'host': 'h\\n-not-a-newline',
            'reason': 'line one\nline "two" \\ end, ünïcode',
        }
        pools = {awkward['pool']: ('VGPU', {awkward['host']: (
            2, 1, 1, awkward['reason'])})}
        flavors = {awkward['flavor']: (awkward['pool'],
                                       {awkward['host']: 0})}
        text, _left_out = formatters.render(
            HOST_COLUMNS, capacity_rows(pools, flavors, per_host=True))
        # one sample per line: the newlines are escaped
        samples = [line for line in text.splitlines()
                   if not line.startswith('#')]
        self.assertEqual(1 + 4 + 1 + 1 + 1, len(samples))
        parsed = parse(text)
        self.assertEqual(
            [{'flavor': awkward['flavor'], 'pool': awkward['pool'],
              'host': awkward['host']}],
            [labels for labels, _v in parsed['gpuclient_flavor_fits'][2]])
        self.assertEqual(
            [{'pool': awkward['pool'], 'host': awkward['host'],
              'resource_class': 'VGPU', 'reason': awkward['reason']}],
            [labels for labels, _v
             in parsed['gpuclient_gpus_stranded_reason'][2]])

    def test_formattable_columns_and_empty_cells(self):
        rows = [('g1.vgpu.2', 'workstation', 'VGPU', 0, 0, 0, 0, 0, None, 2,
                 format_columns.ListColumn(['a', 'b']))]
        text, _left_out = formatters.render(COLUMNS, rows)
        parsed = parse(text)
        # no utilisation for a pool without GPUs rather than a made-up 0
        self.assertEqual([], parsed['gpuclient_gpu_utilisation_ratio'][2])
        self.assertEqual(
            [({'pool': 'workstation', 'resource_class': 'VGPU',
               'reason': 'a; b'}, 2)],
            parsed['gpuclient_gpus_stranded_reason'][2])

    def test_numbers_as_text_and_floats(self):
        rows = [('f', 'p', 'VGPU', '3', 4, 1, 3, '0', '33.3', 0.0, '')]
        parsed = parse(formatters.render(COLUMNS, rows)[0])
        self.assertEqual([({'flavor': 'f', 'pool': 'p'}, 3)],
                         parsed['gpuclient_flavor_fits'][2])
        self.assertAlmostEqual(
            0.333, parsed['gpuclient_gpu_utilisation_ratio'][2][0][1])
        self.assertIn('gpuclient_gpu_utilisation_ratio{pool="p",'
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
        self.assertIn('gpuclient_gpus{pool="solver",resource_class='
                      '"CUSTOM_PCI_10DE_2331",state="total"} two values '
                      '(8 and 9)', str(exc))

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
        self.assertEqual(
            {'gpuclient_gpus', 'gpuclient_gpu_utilisation_ratio',
             'gpuclient_gpus_stranded', 'gpuclient_gpus_stranded_reason'},
            {name for name, _missing in left_out})
        self.assertIn(('gpuclient_gpus', ['Resource Class', 'GPUs Total or '
                                          'GPUs Used or GPUs Free or GPUs '
                                          'Awaiting Release']),
                      left_out)
        self.assertIn(('gpuclient_gpus_stranded_reason',
                       ['Resource Class', 'Stranded Reason', 'Stranded']),
                      left_out)

        text, left_out = formatters.render(*pick(
            'Pool', 'Host', 'Resource Class', 'GPUs Free', 'Stranded'))
        parsed = parse(text)
        self.assertEqual({'gpuclient_gpus', 'gpuclient_gpus_stranded'},
                         set(parsed))
        self.assertEqual({'free'}, {labels['state'] for labels, _v
                                    in parsed['gpuclient_gpus'][2]})
        self.assertIn(('gpuclient_gpus{state="total"}', ['GPUs Total']),
                      left_out)
        self.assertIn(('gpuclient_gpus_stranded_reason',
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
        self.assertIn('Select those columns with -c', str(exc))


class FakeCapacity(common.Lister):
    """A Lister with the capacity columns, as cliff runs it."""

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
        text = self.capacity(capacity_rows(per_host=True), '-c', 'Flavor',
                             '-c', 'pool', '-c', 'host', '-c', 'fits',
                             '--sort-column', 'Fits')
        self.assertEqual(['gpuclient_flavor_fits'], list(parse(text)))
        values = [v for _l, v in parse(text)['gpuclient_flavor_fits'][2]]
        self.assertEqual(sorted(values), values)
        self.assertIn('-f openmetrics: gpuclient_gpus left out: it needs '
                      'the column(s) Resource Class, GPUs Total or GPUs '
                      'Used or GPUs Free or GPUs Awaiting Release.\n',
                      self.logger.output)

    def test_refusal_is_a_command_error(self):
        exc = self.assertRaises(exceptions.CommandError, self.capacity,
                                capacity_rows(per_host=True), '-c', 'Pool')
        self.assertIn('can make no metric', str(exc))


class TestHostListRefused(test_host.HostListTestCase):
    """``openstack gpu host list -f openmetrics``: an error, no output."""

    def test_host_list(self):
        self.seed_cloud()
        self.placement = self.useFixture(
            test_host.fakes.PlacementFixture(self.cloud))
        self.cm = self.useFixture(
            test_host.fakes.ClientManagerFixture(self.cloud))
        cmd = host.ListHost(self.make_app(self.cm.client_manager), None)
        cmd.app.stdout = io.StringIO()
        parsed = self.check_parser(cmd, ['-f', 'openmetrics'])
        exc = self.assertRaises(exceptions.CommandError, cmd.run, parsed)
        self.assertIn('columns it does not know: Pools, Devices, Total, '
                      'Used, Free, Awaiting Release.', str(exc))
        self.assertEqual('', cmd.app.stdout.getvalue())


class TestCandidatesRefused(test_candidates.CandidatesTestCase):
    def test_candidates(self):
        self.one_candidate()
        cmd = candidates.Candidates(
            self.make_app(self.cm.client_manager), None)
        cmd.app.stdout, cmd.app.stderr = io.StringIO(), io.StringIO()
        parsed = self.check_parser(cmd, ['--flavor', 'g1.h100.1',
                                         '--alias-map', 'h100=10de:2331',
                                         '-f', 'openmetrics'])
        exc = self.assertRaises(exceptions.CommandError, cmd.run, parsed)
        self.assertIn('GPU Providers', str(exc))
        self.assertEqual('', cmd.app.stdout.getvalue())


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

    def test_every_list_command_uses_the_namespace(self):
        listers = []
        for name, target in test_descriptions.entry_points().items():
            cls = test_descriptions.load(target)
            if issubclass(cls, lister.Lister):
                listers.append(name)
                self.assertTrue(issubclass(cls, common.Lister), name)
                self.assertEqual(formatters.LIST_NAMESPACE,
                                 cls(self.make_app(None),
                                     None).formatter_namespace, name)
        self.assertIn('gpu capacity list', listers)
        self.assertIn('gpu host list', listers)
        self.assertGreaterEqual(len(listers), 10)

    def test_choices(self):
        # base.TestCase loads the formatters as setup.cfg declares them
        for cmd in (FakeCapacity(self.make_app(None), None),
                    host.ListHost(self.make_app(None), None)):
            self.assertEqual(sorted(STANDARD + ('openmetrics',)),
                             format_choices(cmd))
        plain = format_choices(PlainLister(self.make_app(None), None))
        self.assertLessEqual(set(STANDARD), set(plain))
        self.assertNotIn('openmetrics', plain)

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
            [sys.executable, '-c', code, 'server list', 'gpu capacity list'],
            check=True, capture_output=True, text=True, env=env).stdout
        server, capacity, rest = out.split(HELP_END + '\n')
        self.assertEqual('', rest)
        self.assertIn(' server list [-h]', server)
        self.assertIn(' gpu capacity list [-h]', capacity)
        self.assertIn('-f {csv,json,table,value,yaml}', server)
        self.assertNotIn('openmetrics', server)
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
