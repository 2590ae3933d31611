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

"""gpuclient.rules.promql (pure): the cloud's label selector and the
PromQL that carries it (issue 51 defect 4)."""

import re

from osc_lib import exceptions
import testtools

from gpuclient.rules import numa_metrics
from gpuclient.rules import promql
from gpuclient.rules import utilisation
from gpuclient.rules.devices import health as device_health

REGION = (('region', '=', '"B"'),)
TWO = (('region', '=', '"B"'), ('cloud', '=~', '"prod-.*"'))


def every_query(metrics=None):
    """{(builder, name): PromQL} of every query gpuclient builds."""
    found = {}
    for builder, queries in (
            ('server', utilisation.server_queries(3600, metrics)),
            ('usage', utilisation.usage_queries(86400, 600, metrics)),
            ('device', device_health.queries(3600, metrics)),
            ('check', device_health.check_queries(3600, metrics)),
            ('numa', numa_metrics.queries(metrics))):
        for name, text in queries.items():
            found[(builder, name)] = text
    return found


class TestParse(testtools.TestCase):

    def test_texts_lists_and_mappings(self):
        for given, matchers in (
                (None, ()), ('', ()), ([], ()), ({}, ()),
                ('region=B', REGION), ('region="B"', REGION),
                ('{region="B"}', REGION), (' region = B ', REGION),
                ('region=B,cloud=~"prod-.*"', TWO),
                (['region=B', 'cloud=~"prod-.*"'], TWO),
                ({'region': 'B'}, REGION),
                ('a!=x, b!~`y.*`', (('a', '!=', '"x"'), ('b', '!~', '`y.*`'))),
                ('a="x,y}"', (('a', '=', '"x,y}"'),)),
                ('a=""', (('a', '=', '""'),)),
                ({'a': 'say "hi"\\'}, (('a', '=', '"say \\"hi\\"\\\\"'),)),
                ({'n': 5}, (('n', '=', '"5"'),))):
            self.assertEqual(matchers, promql.parse(given), given)

    def test_refusals_say_what_to_type(self):
        for given, why in (
                ('region', 'no <label><op><value>'),
                ('1a=b', "'1a' is not a label name"),
                ('a-b=c', "'a-b' is not a label name"),
                ('__name__=x', 'the metric name'),
                ('a=', 'no value'),
                ('a="x', 'not a closed PromQL string'),
                ('a=b c=d', "'c=d' after a matcher"),
                ('a=b,', 'no matcher'),
                ('a==b', 'no value'),
                ({'a': ['x']}, 'the value of a is not a text'),
                ({'a': None}, 'the value of a is not a text')):
            error = self.assertRaises(exceptions.CommandError, promql.parse,
                                      given, '--prometheus-selector')
            self.assertIn(why, str(error), given)
            self.assertIn('--prometheus-selector', str(error))
            self.assertIn('region=RegionOne', str(error))


class TestWithMatchers(testtools.TestCase):

    def test_each_vector_selector_gets_them(self):
        for query, sent in (
                ('m', 'm{region="B"}'),
                ('avg_over_time(m[1h])', 'avg_over_time(m{region="B"}[1h])'),
                ('max_over_time(m[60s])[3600s:60s]',
                 'max_over_time(m{region="B"}[60s])[3600s:60s]'),
                ('m{job="x"}', 'm{job="x",region="B"}'),
                ('m{job="x",}', 'm{job="x",region="B"}'),
                ('m {a="}"}', 'm {a="}",region="B"}'),
                ('m{}', 'm{region="B"}'),
                ('{__name__=~"m.+"}', '{__name__=~"m.+",region="B"}'),
                ('sum by (a, b) (rate(m[5m])) / on (i) group_left (z) n',
                 'sum by (a, b) (rate(m{region="B"}[5m])) / on (i) '
                 'group_left (z) n{region="B"}'),
                ('label_replace(m, "dst", "$1", "src", "(.*)")',
                 'label_replace(m{region="B"}, "dst", "$1", "src", "(.*)")'),
                ('m offset 5m > bool 1', 'm{region="B"} offset 5m > bool 1'),
                ('count_values("v", m @ start())',
                 'count_values("v", m{region="B"} @ start())'),
                ('NaN + Inf + time()', 'NaN + Inf + time()'),
                ('ns:m:rate5m', 'ns:m:rate5m{region="B"}')):
            self.assertEqual(sent, promql.with_matchers(query, REGION), query)
        self.assertEqual('m', promql.with_matchers('m', ()))

    def test_metric_names(self):
        self.assertEqual(['m', 'n'], promql.metric_names(
            'sum by (x) (m{a="n"}) / on (y) m + n offset 1h'))
        self.assertEqual([], promql.metric_names('vector(1)'))

    def test_every_query_gpuclient_builds_carries_them(self):
        # the templates, and the same with a clouds.yaml metric name that
        # has matchers of its own (prometheus_metrics)
        own = {k: v + '{job="dcgm"}' for k, v in dict(
            utilisation.METRICS, **device_health.METRICS,
            **numa_metrics.METRICS).items()}
        for metrics in (None, own):
            queries = every_query(metrics)
            self.assertEqual(25, len(queries))
            for key, query in queries.items():
                sent = promql.with_matchers(query, TWO)
                names = promql.metric_names(query)
                self.assertTrue(names, key)
                self.assertEqual(names, promql.metric_names(sent), key)
                # every selector of the query sent, and none other
                selectors = re.findall(r'[A-Za-z_:][\w:]*\{[^}]*\}', sent)
                self.assertEqual(len(re.findall(
                    r'\b(?:%s)\b' % '|'.join(names), query)),
                    len(selectors), (key, sent))
                for selector in selectors:
                    self.assertTrue(selector.endswith(
                        'region="B",cloud=~"prod-.*"}'), (key, sent))
                    if metrics is not None:
                        self.assertIn('job="dcgm"', selector, key)
