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

"""gpuclient.rules.scheduler.hardware (Nova's ``nova/virt/hardware.py``)
on plain data: CPU specs, the guest's NUMA constraints and the values
Nova takes (test_hardware_nova: the same values to Nova's functions).
"""

import unittest

from osc_lib import exceptions

from gpuclient.rules.scheduler import hardware
from gpuclient.rules.scheduler.filters import numa_topology_filter as ntf
from gpuclient.tests.unit import base
from gpuclient.tests.unit.scheduler import numa_hosts


class TestCpuSpec(base.TestCase):
    def test_parse(self):
        self.assertEqual({0, 1, 3}, hardware.parse_cpu_spec('0-3,^2'))
        self.assertEqual({2, 3}, hardware.parse_cpu_spec('0-3,^0-1'))


class TestConstraints(unittest.TestCase):

    def test_what_asks_a_topology(self):
        self.assertIsNone(hardware.numa_constraints(numa_hosts.flavor()))
        self.assertIsNone(hardware.numa_constraints(
            numa_hosts.flavor(pci_numa_affinity_policy='required')))
        found = hardware.numa_constraints(numa_hosts.flavor(numa_nodes=2))
        self.assertEqual([{'cpus': 4, 'memory_mb': 32 * numa_hosts.GIB}] * 2,
                         found['cells'])
        self.assertEqual(1, len(hardware.numa_constraints(
            numa_hosts.flavor(mem_page_size='large'))['cells']))
        self.assertEqual(1, len(hardware.numa_constraints(
            numa_hosts.flavor(cpu_policy='dedicated'))['cells']))

    def test_manual_cells_and_page_sizes(self):
        found = hardware.numa_constraints(numa_hosts.flavor(**{
            'numa_nodes': 2, 'numa_cpus.0': '0-5', 'numa_mem.0': 1024,
            'numa_cpus.1': '6,7', 'numa_mem.1': 64 * numa_hosts.GIB - 1024}))
        self.assertEqual([6, 2], [c['cpus'] for c in found['cells']])
        self.assertEqual(2048, hardware.page_size('2MB'))
        self.assertEqual(1048576, hardware.page_size('1GiB'))
        self.assertEqual('large', hardware.page_size('LARGE'))
        self.assertIsNone(hardware.page_size('huge'))

    def test_refused_requests(self):
        for bad in (numa_hosts.flavor(vcpus=3, numa_nodes=2),
                    numa_hosts.flavor(mem_page_size='huge')):
            self.assertRaises(exceptions.CommandError,
                              hardware.numa_constraints, bad)
        self.assertRaises(exceptions.CommandError, hardware.numa_constraints,
                          numa_hosts.flavor(), {'hw_mem_page_size': 'large'})


class TestRequestedValues(unittest.TestCase):
    """Without Nova (the py3 env too): Nova's answers, as
    test_hardware_nova checks them against Nova's functions, spelled
    out."""

    def test_page_sizes(self):
        expected = {
            'small': 'small', 'large': 'large', 'any': 'any', '4': 4,
            '2048': 2048, '1048576': 1048576, '2MB': 2048, '1GB': 1048576,
            '2MiB': 2048, '2048KB': 2048, '2.5MB': 2560, '2Mb': 256,
            '4Kb': 0.5, '0': 0, '-2048B': 'large',
            # what Nova refuses at boot
            '2M': None, '1G': None, '4k': None, 'LARGE': None,
            'Any': None, ' 2048': None, '2 MB': None, 'huge': None,
            '-1': None, '2mb': None}
        for value, wanted in expected.items():
            self.assertEqual(wanted, hardware.requested_page_size(value),
                             value)

    def test_a_fraction_asks_a_topology_without_a_page_size(self):
        guest = hardware.numa_constraints(
            numa_hosts.flavor(mem_page_size='4Kb'))
        self.assertEqual(0, guest['pagesize'])
        self.assertIsNone(hardware.numa_constraints(
            numa_hosts.flavor(mem_page_size='0')))

    def test_pci_policies(self):
        specs = 'hw:pci_numa_affinity_policy'
        image = 'hw_pci_numa_affinity_policy'
        for policy in numa_hosts.POLICIES:
            self.assertEqual(policy, hardware.pci_numa_policy(
                {specs: policy}, {}))
            self.assertEqual(policy, hardware.pci_numa_policy(
                {}, {image: policy}))
            self.assertEqual(policy, hardware.pci_numa_policy(
                {specs: policy}, {image: policy}))
        self.assertIsNone(hardware.pci_numa_policy({specs: ''}, {}))
        for flavor_specs, props in (({specs: 'strict'}, {}),
                                    ({specs: 'Required'}, {}),
                                    ({}, {image: ''}),
                                    ({}, {image: 'SOCKET'}),
                                    ({specs: 'required'},
                                     {image: 'preferred'})):
            self.assertRaises(exceptions.CommandError,
                              hardware.pci_numa_policy, flavor_specs, props)
            # refused whatever the topology: no host passes
            self.assertIn('refused', ntf.constraints(
                {'vcpus': 2, 'ram': 1024, 'extra_specs': flavor_specs},
                props))
