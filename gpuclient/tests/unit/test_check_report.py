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

"""gpuclient.rules.check_report over plain findings: the table by
severity, "not judged" folded per missing source, the summary line."""

from gpuclient.rules import check_report
from gpuclient.rules import checks
from gpuclient.tests.unit import base

ERROR = checks.finding(checks.ERROR, 'pool-drift', 'pool a / host h1',
                       'h1 lacks CUSTOM_GPU_POOL_A.', 'fix-drift', ['a'])
WARNING_1 = checks.finding(checks.WARNING, 'pool-unpooled-hosts', 'host h2',
                           'h2 offers VGPU but is in no GPU pool.', 'fix-1')
WARNING_2 = checks.finding(checks.WARNING, 'image-firmware', 'image i',
                           'hw_machine_type=-', 'fix-2')
NOVA_1 = checks.not_judged('scheduler-settings', 'nova.conf', 'why 1',
                           checks.NOVA_CONF_FIX, ['a'])
NOVA_2 = checks.not_judged('quota-gpu-limits', 'nova.conf [quota]', 'why 2',
                           checks.NOVA_CONF_FIX, ['a'])
DCGM_1 = checks.not_judged('gpu-idle', '2 server device(s)', 'why 3',
                           checks.IDLE_DCGM_FIX)
DCGM_2 = checks.not_judged('gpu-unhealthy', '4 GPU device(s)', 'why 4',
                           checks.DCGM_FIX)
DCGM_3 = checks.not_judged('gpu-missing', '2 host(s)', 'why 5',
                           checks.DCGM_FIX)
# "not judged" for another cause than a missing source: a row of its own
TRAITS = checks.not_judged('flavor-unknown-trait', 'flavor f', 'why 6',
                           'run gpu check again')

# checks.run's order: errors, then warnings (the "not judged" among them),
# each in the checks' order
FINDINGS = [ERROR, WARNING_1, NOVA_1, TRAITS, NOVA_2, DCGM_1, DCGM_2,
            WARNING_2, DCGM_3]


def row(item, severity=None):
    return (severity or item.severity, item.check, item.object,
            item.symptom, item.fix)


class TestNotJudged(base.TestCase):
    def test_is_not_judged(self):
        self.assertEqual(
            [False, False, True, True, True, True],
            [checks.is_not_judged(f) for f in (
                ERROR, WARNING_1, NOVA_1, DCGM_1, TRAITS,
                # a "not judged" symptom is a warning's
                checks.finding(checks.WARNING, 'c', 'o', 'not judged: x.',
                               'f'))])
        self.assertFalse(checks.is_not_judged(checks.finding(
            checks.ERROR, 'c', 'o', 'not judged: x.', 'f')))

    def test_source_of(self):
        self.assertEqual(
            [None, None, 'no nova.conf', 'no DCGM exporter series',
             'no DCGM exporter series', None],
            [getattr(check_report.source_of(f), 'missing', None)
             for f in (ERROR, WARNING_1, NOVA_2, DCGM_1, DCGM_3, TRAITS)])

    def test_host_facts_fold(self):
        # the host checks' rows naming the hosts without current facts:
        # one row in the table, one source in the summary
        found = [checks.not_judged(name, '2 host(s)', 'why',
                                   checks.HOST_FACTS_FIX)
                 for name in ('host-iommu-off', 'host-state-lost')]
        self.assertEqual(
            [('not judged', 'host-iommu-off, host-state-lost', '2 host(s)',
              'not judged (no current host facts): 2 check(s) could not '
              'judge 1 object(s); -f json lists each, with why.',
              checks.HOST_FACTS_FIX)], check_report.table_rows(found))
        self.assertEqual(['no current host facts'],
                         check_report.summary(found).missing)

    def test_a_fix_belongs_to_one_source(self):
        fixes = [fix for s in check_report.SOURCES for fix in s.fixes]
        self.assertEqual(len(fixes), len(set(fixes)))


class TestTableRows(base.TestCase):
    def test_by_severity_and_folded_per_source(self):
        rows = check_report.table_rows(FINDINGS)
        self.assertEqual(
            [row(ERROR), row(WARNING_1), row(WARNING_2),
             # where the first of each was, in checks.run's order
             ('not judged', 'scheduler-settings, quota-gpu-limits',
              'nova.conf, nova.conf [quota]',
              'not judged (no nova.conf): 2 check(s) could not judge 2 '
              'object(s); -f json lists each, with why.',
              checks.NOVA_CONF_FIX),
             row(TRAITS, 'not judged'),
             ('not judged', 'gpu-idle, gpu-unhealthy, gpu-missing',
              '2 server device(s), 4 GPU device(s), 2 host(s)',
              'not judged (no DCGM exporter series): 3 check(s) could not '
              'judge 3 object(s); -f json lists each, with why.',
              checks.DCGM_FIX)],
            rows)

    def test_one_check_named_once_objects_cut(self):
        found = [checks.not_judged('flavor-pci-alias', 'flavor f%d' % i,
                                   'why', checks.NOVA_CONF_FIX)
                 for i in range(5)]
        self.assertEqual(
            [('not judged', 'flavor-pci-alias', 'flavor f0, flavor f1, '
              'flavor f2, ...', 'not judged (no nova.conf): 1 check(s) '
              'could not judge 5 object(s); -f json lists each, with why.',
              checks.NOVA_CONF_FIX)],
            check_report.table_rows(found))

    def test_nothing_to_fold(self):
        self.assertEqual([row(ERROR), row(WARNING_1)],
                         check_report.table_rows([ERROR, WARNING_1]))
        self.assertEqual([], check_report.table_rows([]))


class TestSummary(base.TestCase):
    def test_counts(self):
        self.assertEqual(
            check_report.Summary(
                errors=1, warnings=2, not_judged=6,
                missing=['no nova.conf', 'no DCGM exporter series'],
                not_run=0),
            check_report.summary(FINDINGS))

    def test_text(self):
        self.assertEqual(
            'gpu check: 1 error, 2 warnings, 6 checks not judged (no '
            'nova.conf, no DCGM exporter series).',
            check_report.summary_text(FINDINGS))
        self.assertEqual(
            'gpu check: 0 errors, 0 warnings, 1 check not judged '
            '(Prometheus not read); 2 checks could not run.',
            check_report.summary_text(
                [checks.not_judged('gpu-idle', 'Prometheus', 'down',
                                   checks.PROMETHEUS_FIX)],
                {'gpu-idle': 'down', 'gpu-missing': 'down'}))
        self.assertEqual(
            'gpu check: 0 errors, 1 warning, 1 check not judged; 1 check '
            'could not run.',
            check_report.summary_text([WARNING_1, TRAITS],
                                      {'gpu-idle': 'no Prometheus'}))
        self.assertEqual(
            'gpu check: 0 errors, 0 warnings, 0 checks not judged.',
            check_report.summary_text([]))
