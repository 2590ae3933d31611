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

"""Reading nova.conf as oslo.config does: the parser, several files and a
nova.conf.d directory, and a differential test against oslo.config itself
(skipped where oslo_config cannot be imported)."""

import json
import os

import fixtures
from osc_lib import exceptions
import testtools

from gpuclient.ops import nova_settings
from gpuclient.rules.nova_conf import parse
from gpuclient.rules.scheduler import conf as nova_conf
from gpuclient.tests.unit import base

try:
    from oslo_config import cfg as oslo_cfg
    from oslo_config import iniparser as oslo_iniparser
except ImportError:  # the differential tests skip
    oslo_cfg = oslo_iniparser = None

H100 = {'name': 'h100', 'vendor_id': '10de', 'product_id': '2331'}
A100 = {'name': 'a100', 'resource_class': 'CUSTOM_A100'}

# texts oslo.config reads (or refuses), for the parser and the
# differential test
TEXTS = {
    'plain': '[scheduler]\nmax_placement_results = 5\n',
    'continuation': ('[filter_scheduler]\nenabled_filters = ComputeFilter,\n'
                     '  PciPassthroughFilter,\n\tImagePropertiesFilter\n'
                     'pci_in_placement = true\n'),
    'blank line ends a value': ('[filter_scheduler]\nenabled_filters = A,\n'
                                '  B\n\n[scheduler]\nx = 1\n'),
    'comments': ('# a comment\n; another\n[pci]\n# alias = {"name": "x"}\n'
                 'alias = {"name": "h100", "vendor_id": "10de",\n'
                 '         "product_id": "2331"}\n'),
    'indented hash continues': '[scheduler]\nx = 1\n  # not a comment\n',
    'colon and quotes': ('[scheduler]\nmax_placement_results: "7"\n'
                         "a = 'q'\nb = \"mixed'\nc = x # kept\n"
                         'd = k=v\ne : f = g\n'),
    'repeated key': '[pci]\nalias = 1\nalias = 2\n[PCI]\nalias = 3\n',
    'section case': '[Scheduler]\nx = 1\n[DEFAULT]\ny = 2\n[default]\nz=3\n',
    'empty value': '[scheduler]\nx =\ny = ""\n',
    'crlf': '[scheduler]\r\nx = 1\r\n  2\r\n',
    'setting before section': 'x = 1\n[scheduler]\n',
    'continuation of nothing': '[scheduler]\n  x = 1\n',
    'no sign': '[scheduler]\njust words\n',
    'open section': '[scheduler\nx = 1\n',
    'empty section': '[]\nx = 1\n',
    'empty key': '[scheduler]\n= 1\n',
}
REFUSED = {'setting before section', 'continuation of nothing', 'no sign',
           'open section', 'empty section', 'empty key'}


class TestParse(base.TestCase):
    def test_continuation_lines(self):
        ini = parse.parse_ini(TEXTS['continuation'])
        self.assertEqual(
            ['ComputeFilter,\nPciPassthroughFilter,\nImagePropertiesFilter'],
            ini['filter_scheduler']['enabled_filters'])
        settings = nova_conf.load_settings(TEXTS['continuation'])
        self.assertEqual(('ComputeFilter', 'PciPassthroughFilter',
                          'ImagePropertiesFilter'),
                         settings['enabled_filters'])

    def test_blank_line_ends_a_value(self):
        ini = parse.parse_ini(TEXTS['blank line ends a value'])
        self.assertEqual(['A,\nB'], ini['filter_scheduler']['enabled_filters'])
        self.assertEqual({'x': ['1']}, ini['scheduler'])

    def test_comments_and_multi_line_alias(self):
        settings = nova_conf.load_settings(TEXTS['comments'])
        self.assertEqual(['h100'], sorted(settings['aliases']))
        self.assertEqual('CUSTOM_PCI_10DE_2331',
                         settings['aliases']['h100']['resource_class'])

    def test_only_first_column_starts_a_comment(self):
        ini = parse.parse_ini(TEXTS['indented hash continues'])
        self.assertEqual(['1\n# not a comment'], ini['scheduler']['x'])

    def test_separators_and_quotes(self):
        ini = parse.parse_ini(TEXTS['colon and quotes'])['scheduler']
        self.assertEqual(
            {'max_placement_results': ['7'], 'a': ['q'], 'b': ['"mixed\''],
             'c': ['x # kept'], 'd': ['k=v'], 'e': ['f = g']}, ini)
        self.assertEqual(7, nova_conf.load_settings(
            TEXTS['colon and quotes'])['max_placement_results'])

    def test_sections_compare_in_lower_case_but_default(self):
        ini = parse.parse_ini(TEXTS['section case'])
        self.assertEqual({'scheduler': {'x': ['1']}, 'DEFAULT': {'y': ['2']},
                          'default': {'z': ['3']}}, ini)
        ini = parse.parse_ini(TEXTS['repeated key'])
        self.assertEqual({'pci': {'alias': ['1', '2', '3']}}, ini)

    def test_refused_lines_name_file_and_line(self):
        cases = {
            'setting before section': 1, 'continuation of nothing': 2,
            'no sign': 2, 'open section': 1, 'empty section': 1,
            'empty key': 2,
        }
        self.assertEqual(REFUSED, set(cases))
        for name, lineno in cases.items():
            exc = self.assertRaises(exceptions.CommandError,
                                    parse.parse_ini, TEXTS[name],
                                    '/etc/nova/nova.conf')
            self.assertIn('/etc/nova/nova.conf line %d:' % lineno, str(exc),
                          name)
            self.assertIn('--setting', str(exc))

    def test_a_refused_line_is_never_quoted(self):
        # defect 7: a database connection line carries its password
        for text, lineno in (
                ('[database]\npassword S3cret mysql\n', 2),
                ('[database]\nconnection mysql S3cret@db\n', 2),
                ('[database]\n  pass=S3cret\n', 2),
                ('[database\nconnection=x://u:S3cret@db\n', 1),
                ('connection = mysql://nova:S3cret@db\n', 1)):
            exc = self.assertRaises(exceptions.CommandError,
                                    parse.parse_ini, text,
                                    '/etc/nova/nova.conf')
            self.assertIn('/etc/nova/nova.conf line %d:' % lineno, str(exc))
            self.assertNotIn('S3cret', str(exc))
            self.assertNotIn('mysql', str(exc))

    def test_later_files_win_and_aliases_add_up(self):
        first = ('[scheduler]\nmax_placement_results = 5\n'
                 '[filter_scheduler]\npci_in_placement = false\n'
                 '[pci]\nalias = %s\n' % json.dumps(H100))
        second = ('[scheduler]\nmax_placement_results = 9\n'
                  '[pci]\nalias = %s\n' % json.dumps(A100))
        settings = nova_conf.load_settings([('a', first), ('b', second)])
        self.assertEqual(9, settings['max_placement_results'])
        self.assertFalse(settings['pci_in_placement'])
        self.assertEqual(['a100', 'h100'], sorted(settings['aliases']))
        settings = nova_conf.load_settings([('b', second), ('a', first)])
        self.assertEqual(5, settings['max_placement_results'])

    def test_merge_keeps_file_order(self):
        merged = parse.merge_ini([
            {'pci': {'alias': ['1', '2']}, 'x': {'k': ['a']}},
            {'pci': {'alias': ['3']}},
        ])
        self.assertEqual({'pci': {'alias': ['1', '2', '3']},
                          'x': {'k': ['a']}}, merged)

    def test_conf_dir_files(self):
        self.assertEqual(
            ['10-b.conf', '2-a.conf', 'z.conf'],
            parse.conf_dir_files(['z.conf', '2-a.conf', 'README',
                                    '.hidden.conf', '10-b.conf',
                                    'x.conf.orig']))


class TestReadSettings(base.TestCase):
    """nova_settings.read_settings: --nova-conf (repeatable), --nova-conf-dir
    and their environment variables."""

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        for name in (nova_settings.CONF_ENV, nova_settings.CONF_DIR_ENV):
            self.useFixture(fixtures.EnvironmentVariable(name))

    def write(self, name, text):
        path = os.path.join(self.tmp, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'w') as out:
            out.write(text)
        return path

    def test_files_then_directory_sorted(self):
        main = self.write('nova.conf', '[scheduler]\n'
                          'max_placement_results = 5\n')
        extra = self.write('extra.conf', '[scheduler]\n'
                           'max_placement_results = 6\n')
        folder = os.path.join(self.tmp, 'nova.conf.d')
        self.write('nova.conf.d/20-late.conf',
                   '[scheduler]\nmax_placement_results = 8\n')
        self.write('nova.conf.d/10-early.conf',
                   '[scheduler]\nmax_placement_results = 7\n'
                   '[pci]\nalias = %s\n' % json.dumps(H100))
        self.write('nova.conf.d/99-ignored.txt',
                   '[scheduler]\nmax_placement_results = 99\n')
        settings = nova_settings.read_settings([main, extra])
        self.assertEqual(6, settings['max_placement_results'])
        self.assertEqual('%s, %s' % (main, extra), settings['file'])
        settings = nova_settings.read_settings([main], conf_dir=[folder])
        self.assertEqual(8, settings['max_placement_results'])
        self.assertEqual(['h100'], sorted(settings['aliases']))
        self.assertNotIn('99-ignored', settings['file'])

    def test_environment(self):
        main = self.write('nova.conf', '[scheduler]\n'
                          'max_placement_results = 5\n')
        folder = os.path.join(self.tmp, 'd')
        self.write('d/a.conf', '[filter_scheduler]\n'
                   'pci_in_placement = false\n')
        self.useFixture(fixtures.EnvironmentVariable(nova_settings.CONF_ENV,
                                                     main))
        self.useFixture(fixtures.EnvironmentVariable(
            nova_settings.CONF_DIR_ENV, folder))
        settings = nova_settings.read_settings()
        self.assertEqual(5, settings['max_placement_results'])
        self.assertFalse(settings['pci_in_placement'])
        # options replace the environment
        other = self.write('other.conf', '[scheduler]\n'
                           'max_placement_results = 3\n')
        self.assertEqual(3, nova_settings.read_settings(
            [other])['max_placement_results'])

    def test_no_files_is_defaults(self):
        settings = nova_settings.read_settings()
        self.assertIsNone(settings['file'])
        self.assertEqual(nova_conf.DEFAULT_SETTINGS['max_placement_results'],
                         settings['max_placement_results'])

    def test_unreadable(self):
        exc = self.assertRaises(exceptions.CommandError,
                                nova_settings.read_settings,
                                [os.path.join(self.tmp, 'missing.conf')])
        self.assertIn('missing.conf', str(exc))
        exc = self.assertRaises(exceptions.CommandError,
                                nova_settings.read_settings,
                                conf_dir=[os.path.join(self.tmp, 'nodir')])
        self.assertIn('nodir', str(exc))
        self.assertIn('--nova-conf-dir', str(exc))


@testtools.skipIf(oslo_cfg is None, 'oslo_config is not importable')
class TestSameAsOsloConfig(base.TestCase):
    """The same texts and files through oslo.config's own code."""

    def oslo_parse(self, text):
        """oslo.config's normalized sections for TEXT, or 'refused'."""
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'nova.conf')
        with open(path, 'w', newline='') as out:
            out.write(text)
        sections, normalized = {}, {}
        parser = oslo_cfg.ConfigParser(path, sections)
        parser._add_normalized(normalized)
        try:
            parser.parse()
        except oslo_iniparser.ParseError:
            return 'refused'
        return normalized

    def ours(self, text):
        try:
            return parse.parse_ini(text)
        except exceptions.CommandError:
            return 'refused'

    def test_parser(self):
        for name, text in TEXTS.items():
            theirs = self.oslo_parse(text)
            self.assertEqual(theirs, self.ours(text), name)
            self.assertEqual(name in REFUSED, theirs == 'refused', name)

    def test_files_and_directory(self):
        """--config-file twice and --config-dir: the values Nova gets."""
        tmp = self.useFixture(fixtures.TempDir()).path
        texts = {
            'nova.conf': ('[scheduler]\nmax_placement_results = 5\n'
                          'enable_isolated_aggregate_filtering = false\n'
                          '[filter_scheduler]\nenabled_filters = A,\n  B\n'
                          '[pci]\nalias = %s\n' % json.dumps(H100)),
            'override.conf': ('[Scheduler]\nmax_placement_results = 6\n'
                              '[pci]\nalias = {"name": "a100",\n'
                              '  "resource_class": "CUSTOM_A100"}\n'),
            'd/20-b.conf': '[filter_scheduler]\npci_in_placement = no\n',
            'd/10-a.conf': '[scheduler]\nmax_placement_results = 7\n',
            'd/30-c.conf.bak': '[scheduler]\nmax_placement_results = 9\n',
        }
        for name, text in texts.items():
            path = os.path.join(tmp, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, 'w') as out:
                out.write(text)
        files = [os.path.join(tmp, 'nova.conf'),
                 os.path.join(tmp, 'override.conf')]
        folder = os.path.join(tmp, 'd')

        conf = oslo_cfg.ConfigOpts()
        conf.register_opts([
            oslo_cfg.IntOpt('max_placement_results'),
            oslo_cfg.BoolOpt('enable_isolated_aggregate_filtering'),
        ], group='scheduler')
        conf.register_opts([
            oslo_cfg.ListOpt('enabled_filters'),
            oslo_cfg.BoolOpt('pci_in_placement'),
        ], group='filter_scheduler')
        conf.register_opts([oslo_cfg.MultiStrOpt('alias', default=[])],
                           group='pci')
        args = []
        for path in files:
            args += ['--config-file', path]
        conf(args + ['--config-dir', folder], project='gpuclient-test',
             default_config_files=[], default_config_dirs=[])
        self.addCleanup(conf.reset)

        ours = nova_settings.read_settings(files, conf_dir=[folder])
        self.assertEqual(conf.scheduler.max_placement_results,
                         ours['max_placement_results'])
        self.assertEqual(7, ours['max_placement_results'])
        self.assertEqual(conf.scheduler.enable_isolated_aggregate_filtering,
                         ours['enable_isolated_aggregate_filtering'])
        self.assertEqual(tuple(conf.filter_scheduler.enabled_filters),
                         ours['enabled_filters'])
        self.assertEqual(conf.filter_scheduler.pci_in_placement,
                         ours['pci_in_placement'])
        self.assertEqual(sorted(json.loads(a)['name']
                                for a in conf.pci.alias),
                         sorted(ours['aliases']))


class TestPlacementConf(base.TestCase):
    """issue 40 rule 5: a placement.conf among the files (gpu check's
    placement-wide-trees); Placement's defaults where it says nothing
    (test_nova_config_nova compares them with Placement's own)."""

    def test_read_and_defaults(self):
        self.assertEqual(
            {'optimize_for_wide_provider_trees': False,
             'max_allocation_candidates': -1,
             'allocation_candidates_generation_strategy': 'depth-first'},
            nova_conf.load_settings('')['placement'])
        first = ('[workarounds]\noptimize_for_wide_provider_trees = yes\n'
                 '[placement]\nmax_allocation_candidates = 100\n')
        second = ('[placement]\nmax_allocation_candidates = many\n'
                  'allocation_candidates_generation_strategy = '
                  'breadth-first\n')
        self.assertEqual(
            {'optimize_for_wide_provider_trees': True,
             # a value Placement would refuse: no limit is known
             'max_allocation_candidates': -1,
             'allocation_candidates_generation_strategy': 'breadth-first'},
            nova_conf.load_settings([('nova.conf', first),
                                     ('placement.conf', second)])[
                'placement'])
