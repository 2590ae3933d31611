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

"""rules.numa_metrics on plain data: node_exporter's NUMA nodes per host."""

import testtools

from gpuclient.rules import numa_metrics
from gpuclient.rules import utilisation

GIB = 1 << 30
HOSTS = {'gpu-pt-1': ['gpu-pt-1.gpu.test'], 'plain-1': ['plain-1']}


def series(instance, node, **labels):
    return dict({'instance': instance, 'job': 'node', 'node': str(node)},
                **labels)


def answers(memory, huge=()):
    return {'numa_memory': list(memory), 'numa_huge_pages': list(huge)}


class TestQueries(testtools.TestCase):

    def test_one_query_per_metric_and_overrides(self):
        self.assertEqual({'numa_memory': 'node_memory_numa_MemTotal',
                          'numa_huge_pages':
                              'node_memory_numa_HugePages_Total'},
                         numa_metrics.queries())
        self.assertEqual('my_MemTotal', numa_metrics.queries(
            {'numa_memory': 'my_MemTotal', 'util': 'x'})['numa_memory'])


class TestSeriesHost(testtools.TestCase):

    def test_hostname_label_else_instance(self):
        self.assertEqual('gpu-1', numa_metrics.series_host(
            {'instance': '10.0.0.5:9100', 'hostname': 'gpu-1'}))
        self.assertEqual('gpu-1.example.org', numa_metrics.series_host(
            {'instance': 'gpu-1.example.org:9100'}))
        self.assertEqual('fd00::5', numa_metrics.series_host(
            {'instance': '[fd00::5]:9100'}))
        self.assertEqual('gpu-1', numa_metrics.series_host(
            {'instance': 'gpu-1'}))
        self.assertIsNone(numa_metrics.series_host({}))
        names = dict(utilisation.LABELS, hostname=('host',))
        self.assertEqual('gpu-2', numa_metrics.series_host(
            {'instance': 'gpu-1:9100', 'host': 'gpu-2'}, names))


class TestHostNodes(testtools.TestCase):

    def test_nodes_of_each_host(self):
        found = numa_metrics.host_nodes(answers(
            [(series('gpu-pt-1.gpu.test:9100', 1), 128 * GIB),
             (series('gpu-pt-1.gpu.test:9100', 0), 256 * GIB),
             (series('plain-1:9101', 0), 512 * GIB),
             (series('other-9:9100', 0), GIB)],
            [(series('gpu-pt-1.gpu.test:9100', 0), 0),
             (series('gpu-pt-1.gpu.test:9100', 1), 512)]), HOSTS)
        self.assertEqual({
            'gpu-pt-1': [
                {'node': 0, 'memory_mb': 256 * 1024, 'huge_pages': 0},
                {'node': 1, 'memory_mb': 128 * 1024, 'huge_pages': 512}],
            'plain-1': [
                {'node': 0, 'memory_mb': 512 * 1024, 'huge_pages': None}],
        }, found)

    def test_short_name_or_fqdn_either_side(self):
        # a host Nova knows without a domain: its FQDN joins it
        found = numa_metrics.host_nodes(answers(
            [(series('PLAIN-1.dc1.example.org:9100', 0), GIB)]), HOSTS)
        self.assertEqual(['plain-1'], list(found))
        # the same first label in another domain than the host's own
        # FQDN (gpu-pt-1.gpu.test) is another machine
        self.assertEqual({}, numa_metrics.host_nodes(answers(
            [(series('GPU-PT-1.dc1.example.org:9100', 0), GIB)]), HOSTS))
        # the FQDN Nova knows, in capitals with a final dot
        self.assertEqual(['gpu-pt-1'], list(numa_metrics.host_nodes(answers(
            [(series('GPU-PT-1.GPU.TEST.:9100', 0), GIB)]), HOSTS)))

    def test_a_node_label_that_is_no_number(self):
        # '²' is a digit to str.isdigit, and int() refuses it
        for node in ('\u00b2', '\u0663', '-1', ''):
            self.assertEqual({}, numa_metrics.host_nodes(answers(
                [(series('plain-1:9101', node), GIB)]), HOSTS), node)

    def test_ambiguous_or_half_known_is_left_out(self):
        # two exporters claim one host; a node without MemTotal; a first
        # label two hosts share
        self.assertEqual({}, numa_metrics.host_nodes(answers(
            [(series('gpu-pt-1:9100', 0), GIB),
             (series('gpu-pt-1.gpu.test:9200', 1), GIB)]), HOSTS))
        self.assertEqual({}, numa_metrics.host_nodes(answers(
            [(series('plain-1:9101', 0), GIB)],
            [(series('plain-1:9101', 1), 0)]), HOSTS))
        self.assertEqual({}, numa_metrics.host_nodes(answers(
            [(series('gpu:9100', 0), GIB)]),
            {'gpu-a': ['gpu.a.example'], 'gpu-b': ['gpu.b.example']}))
        self.assertEqual({}, numa_metrics.host_nodes(answers(
            [(series('plain-1:9101', 'x'), GIB)]), HOSTS))
