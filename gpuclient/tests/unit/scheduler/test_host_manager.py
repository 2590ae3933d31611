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

"""gpuclient.rules.scheduler.host_manager on plain data: where a host's
NUMA topology comes from (host facts, node_exporter, the compute API's
cpu_info).
"""

import unittest

from gpuclient.rules.scheduler import host_manager as hm
from gpuclient.tests.unit.scheduler import numa_hosts


class TestSources(unittest.TestCase):

    def test_cpu_info_cells(self):
        hypervisor, _facts = numa_hosts.api_view('two-cells')
        topology = hm.numa_topology(hypervisor)
        self.assertEqual('cpu_info', topology['source'])
        self.assertEqual([32, 32], [c['cpus'] for c in topology['cells']])
        self.assertFalse(topology['pages_known'])

    def test_one_cell_or_none_is_not_known(self):
        hypervisor, _facts = numa_hosts.api_view('one-cell')
        self.assertFalse(hm.numa_topology(hypervisor)['known'])
        hypervisor.pop('cpu_info')
        self.assertIn('no cpu_info',
                      hm.numa_topology(hypervisor)['why'])

    def test_facts_win_and_ironic_has_none(self):
        hypervisor, facts = numa_hosts.api_view('no-topology')
        self.assertIsNone(hm.numa_topology(hypervisor, facts)['cells'])
        ironic = dict(hypervisor, hypervisor_type='ironic', cpu_info={})
        self.assertIsNone(hm.numa_topology(ironic)['cells'])

    def test_prometheus_between_facts_and_cpu_info(self):
        hypervisor, facts = numa_hosts.api_view('two-cells', prometheus=True)
        topology = hm.numa_topology(hypervisor, facts)
        self.assertEqual('prometheus', topology['source'])
        self.assertEqual([(32, 256 * numa_hosts.GIB, {4: None})] * 2,
                         [(c['cpus'], c['memory_mb'], c['pages'])
                          for c in topology['cells']])
        self.assertTrue(topology['pages_known'])
        # its own memory per cell, not the hypervisor's split
        facts[hm.METRICS_FACT][1]['memory_mb'] = 128 * numa_hosts.GIB
        self.assertEqual([256 * numa_hosts.GIB, 128 * numa_hosts.GIB], [
            c['memory_mb'] for c in hm.numa_topology(
                hypervisor, facts)['cells']])
        # huge pages of a size node_exporter does not say: sizes unknown
        hypervisor, facts = numa_hosts.api_view('two-cells-huge',
                                                prometheus=True)
        self.assertFalse(hm.numa_topology(hypervisor, facts)['pages_known'])
        told = dict(facts, numa_pages={4: None, 2048: 4096})
        topology = hm.numa_topology(hypervisor, told)
        self.assertEqual('prometheus and host facts', topology['source'])
        self.assertTrue(topology['pages_known'])
        # facts' numa_cells win; one node is what a host without NUMA
        # topology shows too
        self.assertIsNone(hm.numa_topology(hypervisor, dict(
            facts, numa_cells=0))['cells'])
        hypervisor, facts = numa_hosts.api_view('no-topology', prometheus=True)
        self.assertIn('node_exporter shows 1 NUMA node',
                      hm.numa_topology(hypervisor, facts)['why'])

    def test_parse_facts(self):
        self.assertEqual({4: None, 2048: 512},
                         hm.parse_numa_fact('numa_pages', '4k,2M:512'))
        self.assertEqual([2, 2], hm.parse_numa_fact('numa_gpus', '2,2'))
        for key, value in (('numa_cells', 'two'), ('numa_gpus', '2,x'),
                           ('numa_pages', '4k:100'),
                           ('numa_pages', '3q')):
            self.assertRaises(ValueError, hm.parse_numa_fact, key, value)
