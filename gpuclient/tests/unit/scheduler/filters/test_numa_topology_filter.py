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

"""gpuclient.rules.scheduler.filters.numa_topology_filter on plain data:
the hosts of numa_hosts as the compute API and host facts show them
(test_numa_topology_filter_nova: a judged answer is Nova's).
"""

import unittest

from gpuclient.rules import model
from gpuclient.rules.scheduler import conf as nova_conf
from gpuclient.rules.scheduler import filters
from gpuclient.rules.scheduler import hardware
from gpuclient.rules.scheduler import host_manager as hm
from gpuclient.rules.scheduler.filters import numa_topology_filter as ntf
from gpuclient.tests.unit.scheduler import numa_hosts


def numa_cloud():
    """A model.Cloud of the NUMA hosts, each its own compute host."""
    return model.Cloud([], [dict(numa_hosts.api_view(name, False)[0],
                                 hypervisor_hostname=name,
                                 service={'host': name})
                            for name in numa_hosts.HOSTS], [],
                       blazar=False)


class TestJudge(unittest.TestCase):

    def judge(self, host, flavor_name, with_facts=True, busy=False):
        hypervisor, facts = numa_hosts.api_view(host, with_facts)
        if busy:
            hypervisor.update(running_vms=1, vcpus_used=4,
                              memory_mb_used=100 * numa_hosts.GIB)
        the_flavor = numa_hosts.FLAVORS[flavor_name]
        guest = hardware.numa_constraints(the_flavor)
        return ntf.judge_numa(hypervisor, guest, facts, ntf.pci_devices(
            the_flavor['extra_specs']))

    def test_without_facts(self):
        # cpu_info: cells, CPUs and memory, not the page sizes
        status, detail = self.judge('two-cells', 'numa1', False)
        self.assertEqual((hm.UNKNOWN, 'pages'), (status, detail['why']))
        self.assertIn('numa_pages', ntf.unknown_text(detail))
        self.assertEqual(hm.FAIL, self.judge('two-cells', 'cpus-too-many',
                                             False)[0])
        self.assertEqual(hm.FAIL, self.judge('two-cells', 'numa3',
                                             False)[0])
        self.assertEqual(hm.FAIL, self.judge('two-cells', 'cell-too-small',
                                             False)[0])
        self.assertEqual(hm.UNKNOWN, self.judge('two-cells', 'large',
                                                False)[0])
        self.assertEqual(hm.UNKNOWN, self.judge('one-cell', 'numa1',
                                                False)[0])
        status, detail = self.judge('two-cells', 'gpu1-required', False)
        self.assertEqual((hm.UNKNOWN, 'devices'), (status, detail['why']))
        self.assertIn('numa_gpus', ntf.unknown_text(detail))
        self.assertEqual(hm.PASS, self.judge('two-cells', 'gpu3-preferred',
                                             True)[0])
        self.assertEqual(hm.FAIL, self.judge('two-cells', 'gpu3-required',
                                             True)[0])

    def test_usage_not_shown_per_cell(self):
        self.assertEqual(hm.UNKNOWN, self.judge('two-cells', 'cell-fits',
                                                busy=True)[0])
        self.assertEqual(hm.FAIL, self.judge('two-cells', 'cell-too-small',
                                             busy=True)[0])
        self.assertEqual(hm.PASS, self.judge('two-cells', 'numa1',
                                             busy=True)[0])

    def test_alias_policy_unknown_when_it_matters(self):
        the_flavor = numa_hosts.flavor(gpus=3, numa_nodes=1)
        hypervisor, facts = numa_hosts.api_view('two-cells')
        guest = hardware.numa_constraints(the_flavor)
        status, detail = ntf.judge_numa(hypervisor, guest, facts, 3)
        self.assertEqual((hm.UNKNOWN, 'alias_policy'),
                         (status, detail['why']))
        status, _d = ntf.judge_numa(hypervisor, guest, facts, 1)
        self.assertEqual(hm.PASS, status)

    def test_the_alias_policy_of_the_nova_conf_given_decides(self):
        """Issue 51 defect 15: no hw:pci_numa_affinity_policy, and the
        nova.conf given defines the alias: its numa_policy is the
        devices' (legacy where it says none), as Nova builds the request;
        the flavor's (or image's) policy wins over it."""
        hypervisor, facts = numa_hosts.api_view('two-cells')
        the_flavor = numa_hosts.flavor(gpus=3, numa_nodes=1)
        expected = {None: hm.FAIL, 'legacy': hm.FAIL, 'required': hm.FAIL,
                    'preferred': hm.PASS}
        for policy, status in expected.items():
            aliases = numa_hosts.aliases(policy)
            guest = ntf.constraints(the_flavor, aliases=aliases)
            self.assertEqual(policy or 'legacy', guest['pci_policy'])
            found, _detail = ntf.judge_numa(hypervisor, guest, facts, 3)
            self.assertEqual(status, found, policy)
        # the flavor's own policy wins over the alias's
        aliases = numa_hosts.aliases('preferred')
        guest = ntf.constraints(numa_hosts.flavor(
            gpus=3, numa_nodes=1, pci_numa_affinity_policy='required'),
            aliases=aliases)
        self.assertEqual('required', guest['pci_policy'])

    def test_the_alias_policy_unknown_without_its_nova_conf_line(self):
        the_flavor = numa_hosts.flavor(gpus=3, numa_nodes=1)
        # --alias-map or a pool: the alias's class, not its numa_policy
        mapped = nova_conf.load_settings(
            alias_maps=['%s=%s:%s' % (numa_hosts.ALIAS, numa_hosts.VENDOR,
                                      numa_hosts.PRODUCT)])['aliases']
        for aliases in (None, {}, mapped):
            self.assertIsNone(ntf.constraints(
                the_flavor, aliases=aliases)['pci_policy'])
        # two aliases of different policies: each request has its own
        two = dict(numa_hosts.flavor(numa_nodes=1), extra_specs={
            'hw:numa_nodes': '1', 'pci_passthrough:alias': 'a:1,b:1'})
        aliases = nova_conf.load_settings(
            '[pci]\nalias = {"name": "a", "vendor_id": "10de", '
            '"product_id": "1", "numa_policy": "required"}\nalias = '
            '{"name": "b", "vendor_id": "10de", "product_id": "2"}\n'
        )['aliases']
        self.assertIsNone(ntf.constraints(two, aliases=aliases)[
            'pci_policy'])
        aliases['b']['numa_policy'] = 'required'
        self.assertEqual('required', ntf.constraints(
            two, aliases=aliases)['pci_policy'])

    def test_count_without_device_cells(self):
        # preferred: the devices may be anywhere; Placement counts them
        hypervisor, facts = numa_hosts.api_view('two-cells')
        facts.pop('numa_gpus')
        guest = hardware.numa_constraints(numa_hosts.flavor(
            ram_gib=100, gpus=1, numa_nodes=1,
            pci_numa_affinity_policy='preferred'))
        topology = hm.numa_topology(hypervisor, facts)
        self.assertEqual(4, ntf.fit_count(topology, guest, 1))
        guest['pci_policy'] = 'required'
        self.assertIsNone(ntf.fit_count(topology, guest, 1))
        hypervisor['running_vms'] = 1
        guest['pci_policy'] = 'preferred'
        self.assertIsNone(ntf.fit_count(hm.numa_topology(hypervisor, facts),
                                        guest, 1))

    def test_count_with_the_devices_of_some_cells_not_given(self):
        # --host-fact numa_gpus=4 on a host of two cells: a TypeError
        # before; required: the next server's devices may be on cell 1,
        # not judged; preferred: counted as with no cell given
        hypervisor, facts = numa_hosts.api_view('two-cells')
        facts['numa_gpus'] = [4]
        topology = hm.numa_topology(hypervisor, facts)
        guest = hardware.numa_constraints(numa_hosts.flavor(
            ram_gib=100, gpus=3, numa_nodes=1,
            pci_numa_affinity_policy='required'))
        self.assertIsNone(ntf.fit_count(topology, guest, 3))
        self.assertEqual((None, ntf.unknown_text({'why': 'devices'})),
                         ntf.host_count([hypervisor], guest, facts, 3))
        guest['pci_policy'] = 'preferred'
        facts.pop('numa_gpus')
        unknown = ntf.fit_count(hm.numa_topology(hypervisor, facts), guest,
                                3)
        facts['numa_gpus'] = [4]
        self.assertEqual(unknown, ntf.fit_count(topology, guest, 3))

    def test_a_request_nova_refuses_passes_no_host(self):
        bad = numa_hosts.flavor(vcpus=3, numa_nodes=2)
        post = filters.run(sorted(numa_hosts.HOSTS), filters.context(
            numa_cloud(), filters.spec({}, bad, 'p')),
            ['NUMATopologyFilter'])
        self.assertEqual(sorted(numa_hosts.HOSTS), sorted(post))
        self.assertIn('divide evenly', ntf.text(
            'h', post['one-cell'][0], 'p'))

    def test_texts(self):
        status, detail = self.judge('two-cells', 'cell-too-small')
        self.assertEqual(
            'h: no NUMA cell holds a guest cell of 307200 MiB (cell 0 has '
            '262144 MiB) (NUMATopologyFilter, from host facts).',
            ntf.text('h', detail, 'p'))
        self.assertIn('no NUMA topology', ntf.text(
            'h', self.judge('no-topology', 'numa1')[1], 'p'))

    def test_device_text_names_the_policy_asked(self):
        """Issue 52: 3 GPUs on one cell of 2: the reason names the
        policy the flavor asks (legacy fails as required does, on devices
        that all carry their NUMA node), not always "required"."""
        hypervisor, facts = numa_hosts.api_view('two-cells')
        for policy in ('required', 'legacy'):
            guest = hardware.numa_constraints(numa_hosts.flavor(
                gpus=3, numa_nodes=1, pci_numa_affinity_policy=policy))
            status, detail = ntf.judge_numa(hypervisor, guest, facts, 3)
            self.assertEqual(hm.FAIL, status, policy)
            self.assertEqual(
                'h: the NUMA cells holding the guest have 2 of the 3 PCI '
                'devices it asks (policy %s) (NUMATopologyFilter, from host '
                'facts).' % policy, ntf.text('h', detail, 'p'))

    def test_numa_and_the_filters(self):
        cloud = numa_cloud()
        the_flavor = numa_hosts.FLAVORS['cell-too-small']
        enabled = ['NUMATopologyFilter']
        ctx = filters.context(cloud, filters.spec({}, the_flavor, 'p'))
        found = filters.numa(sorted(numa_hosts.HOSTS), ctx, enabled)
        self.assertEqual(hm.FAIL, found['two-cells'][0])
        self.assertEqual(hm.UNKNOWN, found['one-cell'][0])
        post = filters.run(sorted(numa_hosts.HOSTS), ctx, enabled)
        self.assertEqual(['two-cells', 'two-cells-huge'], sorted(post))
        self.assertEqual({}, filters.numa(
            sorted(numa_hosts.HOSTS), filters.context(cloud, filters.spec(
                {}, numa_hosts.flavor(), 'p')), enabled))
