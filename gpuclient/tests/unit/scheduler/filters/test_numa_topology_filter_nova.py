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

"""gpuclient.rules.scheduler.filters.numa_topology_filter against Nova's
own fitting: each flavor to Nova's ``numa_get_constraints`` and
``numa_fit_instance_to_host`` (with PCI devices in Nova's
``PciDeviceStats``) on the hosts of numa_hosts built as Nova's NUMA
objects, and the same host as the compute API and host facts show it to
gpuclient: a judged answer must be Nova's.
"""

import unittest

from gpuclient.rules.scheduler import hardware
from gpuclient.rules.scheduler import host_manager as hm
from gpuclient.rules.scheduler.filters import numa_topology_filter as ntf
from gpuclient.tests.unit import nova_harness
from gpuclient.tests.unit.scheduler import numa_hosts

if nova_harness.HAVE_NOVA:
    with nova_harness.quiet():
        from nova.virt import hardware as nova_hardware


def _requests(the_flavor):
    """Nova's PCI request of the flavor, with the flavor's policy (legacy
    where it sets none)."""
    return numa_hosts.nova_pci_requests(
        the_flavor, the_flavor['extra_specs'].get(
            'hw:pci_numa_affinity_policy', 'legacy'))


@nova_harness.requires_nova
class TestAgainstNova(unittest.TestCase):
    """Every flavor on every host: a judged answer is Nova's; with host
    facts on an idle host, every answer is judged."""

    def test_matrix(self):
        judged = dict.fromkeys(('facts', 'prometheus', None), 0)
        for host in numa_hosts.HOSTS:
            for name, the_flavor in numa_hosts.FLAVORS.items():
                theirs = numa_hosts.nova_fits(
                    host, the_flavor, _requests(the_flavor))
                for source in ('facts', 'prometheus', None):
                    hypervisor, facts = numa_hosts.api_view(
                        host, source == 'facts', source == 'prometheus')
                    status, detail = ntf.judge_numa(
                        hypervisor, hardware.numa_constraints(the_flavor),
                        facts, ntf.pci_devices(the_flavor['extra_specs']))
                    if source == 'facts' or (
                            source == 'prometheus' and host == 'two-cells'
                            and 'gpu' not in name):
                        self.assertNotEqual(hm.UNKNOWN, status,
                                            (host, name, source, detail))
                    if status != hm.UNKNOWN:
                        judged[source] += 1
                        self.assertEqual(theirs, status == hm.PASS,
                                         (host, name, source, detail))
        self.assertEqual(len(numa_hosts.HOSTS) * len(numa_hosts.FLAVORS),
                         judged['facts'])
        self.assertGreater(judged['prometheus'], judged[None])


@nova_harness.requires_nova
class TestAliasPolicyAgainstNova(unittest.TestCase):
    """A flavor without hw:pci_numa_affinity_policy: Nova's own request
    (``get_pci_requests_from_flavor`` over a [pci] alias in its CONF)
    and gpuclient's reading of the same nova.conf line give the devices
    the same policy, and every judged fit is Nova's (issue 51 defect
    15)."""

    def setUp(self):
        nova_harness.conf(self)

    def nova_requests(self, the_flavor, policy):
        return numa_hosts.nova_alias_requests(
            self, the_flavor, policy, the_flavor['extra_specs'].get(
                'hw:pci_numa_affinity_policy'))

    def test_matrix(self):
        cases = {name: the_flavor
                 for name, the_flavor in numa_hosts.FLAVORS.items()
                 if 'gpu' in name}
        cases.update({
            'gpu3-no-policy': numa_hosts.flavor(gpus=3, numa_nodes=1),
            'gpu1-no-policy': numa_hosts.flavor(gpus=1, numa_nodes=1),
            'gpu3-two-cells-no-policy': numa_hosts.flavor(gpus=3,
                                                          numa_nodes=2)})
        judged = 0
        for policy in numa_hosts.ALIAS_POLICIES:
            aliases = numa_hosts.aliases(policy)
            for name, the_flavor in cases.items():
                requests = self.nova_requests(the_flavor, policy)
                guest = ntf.constraints(the_flavor, aliases=aliases)
                self.assertEqual([requests[0].numa_policy],
                                 [guest['pci_policy']], (policy, name))
                for host in numa_hosts.HOSTS:
                    hypervisor, facts = numa_hosts.api_view(host)
                    status, detail = ntf.judge_numa(
                        hypervisor, guest, facts,
                        ntf.pci_devices(the_flavor['extra_specs']))
                    self.assertNotEqual(hm.UNKNOWN, status,
                                        (policy, name, host, detail))
                    judged += 1
                    self.assertEqual(
                        numa_hosts.nova_fits(host, the_flavor, requests),
                        status == hm.PASS, (policy, name, host, detail))
        self.assertEqual(len(numa_hosts.ALIAS_POLICIES) * len(cases)
                         * len(numa_hosts.HOSTS), judged)


def nova_count(host, the_flavor, limit=50):
    """Boots Nova fits one after another (the usage of each applied)."""
    topology, stats = numa_hosts.nova_host(host)
    instance = numa_hosts.nova_guest(the_flavor)
    if topology is None:
        return 0
    requests = _requests(the_flavor)
    boots = 0
    while boots < limit:
        fitted = numa_hosts.nova_fit(topology, instance, requests, stats)
        if fitted is None:
            break
        topology = nova_hardware.numa_usage_from_instance_numa(
            topology, fitted)
        if requests:
            stats.apply_requests(requests, None, fitted.cells)
        boots += 1
    return boots


@nova_harness.requires_nova
class TestCountAgainstNova(unittest.TestCase):
    """gpu capacity list's NUMA count: the boots Nova fits in a row."""

    def test_matrix(self):
        for host in numa_hosts.HOSTS:
            for name, the_flavor in numa_hosts.FLAVORS.items():
                hypervisor, facts = numa_hosts.api_view(host)
                found = ntf.fit_count(
                    hm.numa_topology(hypervisor, facts),
                    hardware.numa_constraints(the_flavor),
                    ntf.pci_devices(the_flavor['extra_specs']), limit=50)
                self.assertEqual(nova_count(host, the_flavor), found,
                                 (host, name))

    def test_prometheus(self):
        """From node_exporter's NUMA nodes alone: judged, Nova's count
        (with devices on cells not shown, bounded by the host's devices,
        as gpu capacity list bounds it by Placement's count)."""
        counted = 0
        for name, the_flavor in numa_hosts.FLAVORS.items():
            hypervisor, facts = numa_hosts.api_view('two-cells',
                                                    prometheus=True)
            devices = ntf.pci_devices(the_flavor['extra_specs'])
            found = ntf.fit_count(
                hm.numa_topology(hypervisor, facts),
                hardware.numa_constraints(the_flavor), devices, limit=50)
            if 'gpu' not in name:
                self.assertIsNotNone(found, name)
            if found is not None:
                counted += 1
                if devices:
                    found = min(found, sum(
                        numa_hosts.HOSTS['two-cells'][3]) // devices)
                self.assertEqual(nova_count('two-cells', the_flavor), found,
                                 name)
        self.assertGreater(counted, len(numa_hosts.FLAVORS) // 2)
