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

"""The scheduler's entry point: the settings decided once, and one pass
of a request over the hosts."""

from gpuclient.rules import model
from gpuclient.rules import reservations
from gpuclient.rules.scheduler import conf
from gpuclient.rules.scheduler import filters
from gpuclient.rules.scheduler import host_manager as hm
from gpuclient.rules.scheduler import manager
from gpuclient.tests.unit import base
from gpuclient.tests.unit.scheduler import numa_hosts

NUMA = filters.NUMA_FILTER


class TestDecideSettings(base.TestCase):
    def test_none_or_empty_is_novas_defaults(self):
        self.assertEqual(conf.load_settings(), manager.decide_settings(None))
        self.assertEqual(conf.load_settings(), manager.decide_settings({}))

    def test_settings_read_are_kept(self):
        read = conf.load_settings('[filter_scheduler]\n'
                                  'enabled_filters = ComputeFilter\n')
        self.assertIs(read, manager.decide_settings(read))
        # filters read from a nova.conf are taken as they are, Blazar or not
        self.assertEqual(['ComputeFilter'], list(manager.decide_settings(
            read, blazar=True)['enabled_filters']))

    def test_blazar_adds_its_filter_to_the_defaults(self):
        decided = manager.decide_settings(None, blazar=True)
        self.assertIn(reservations.FILTER_NAME, decided['enabled_filters'])
        self.assertNotIn(reservations.FILTER_NAME,
                         manager.decide_settings(None)['enabled_filters'])
        # once: deciding again changes nothing
        self.assertEqual(decided,
                         manager.decide_settings(decided, blazar=True))


class TestSelect(base.TestCase):
    """One pass of a request over the hosts: what the filters remove,
    the NUMA verdict, the fit, each asked once."""

    def setUp(self):
        super().setUp()
        self.cloud = model.Cloud([], [
            dict(numa_hosts.api_view(name, False)[0], id='rp-' + name,
                 hypervisor_hostname=name, service={'host': name})
            for name in numa_hosts.HOSTS], [], blazar=False)
        self.hosts = sorted(numa_hosts.HOSTS)
        self.flavor = numa_hosts.FLAVORS['cell-too-small']

    def spec(self, enabled):
        """The request of the flavor, with ENABLED filters."""
        return filters.spec({'enabled_filters': enabled}, self.flavor, 'p')

    def test_the_filters_and_numa_verdicts_of_the_filters_module(self):
        spec = self.spec([NUMA])
        selected = manager.select(self.cloud, spec, self.hosts)
        self.assertEqual(self.hosts, list(selected))
        ctx = filters.context(self.cloud, spec)
        self.assertEqual(filters.run(self.hosts, ctx, [NUMA]),
                         manager.removed(selected))
        judged = filters.numa(self.hosts, ctx, [NUMA])
        for host, found in selected.items():
            self.assertIsNone(found.count)
            if found.passes:
                self.assertEqual(judged[host], found.numa)
            else:
                # removed by NUMATopologyFilter: FAIL, and by what source
                self.assertEqual(hm.FAIL, found.numa[0])
                self.assertEqual(found.reasons[0]['source'], found.numa[1])
        self.assertEqual({'two-cells', 'two-cells-huge'},
                         {h for h, s in selected.items() if not s.passes})

    def test_every_host_of_the_cloud_unless_told(self):
        spec = self.spec([NUMA])
        self.assertEqual(manager.select(self.cloud, spec, self.hosts),
                         manager.select(self.cloud, spec))
        self.assertEqual(['one-cell'], list(manager.select(
            self.cloud, spec, ['one-cell'])))

    def test_the_states_given_with_their_host_facts(self):
        spec = self.spec([NUMA])
        facts = {name: numa_hosts.api_view(name)[1]
                 for name in numa_hosts.HOSTS}
        self.assertEqual(hm.UNKNOWN, manager.select(
            self.cloud, spec, self.hosts)['one-cell'].numa[0])
        self.assertEqual(hm.PASS, manager.select(
            self.cloud, spec, self.hosts,
            filters.HostStates(self.cloud, facts))['one-cell'].numa[0])

    def test_a_disabled_filter_removes_nothing_and_judges_nothing(self):
        selected = manager.select(self.cloud, self.spec(['ComputeFilter']),
                                  self.hosts)
        self.assertTrue(all(s.passes and s.numa is None
                            for s in selected.values()))

    def test_count_asked_only_where_the_filters_pass(self):
        asked = []

        def count(host):
            asked.append(host)
            return 3, (hm.PASS, 'counted')

        selected = manager.select(self.cloud, self.spec([NUMA]), self.hosts,
                                  count=count)
        passing = [h for h in self.hosts
                   if h not in ('two-cells', 'two-cells-huge')]
        self.assertEqual(passing, asked)
        for host in passing:
            self.assertEqual((3, (hm.PASS, 'counted')),
                             (selected[host].count, selected[host].numa))
        self.assertEqual(0, selected['two-cells'].count)
        self.assertEqual(hm.FAIL, selected['two-cells'].numa[0])

    def test_numa_judged_only_for_the_hosts_asked(self):
        passing = [h for h in self.hosts
                   if h not in ('two-cells', 'two-cells-huge')]
        selected = manager.select(self.cloud, self.spec([NUMA]), self.hosts,
                                  numa_hosts=passing[:1] + ['unmapped'])
        self.assertIsNotNone(selected[passing[0]].numa)
        self.assertTrue(all(selected[h].numa is None for h in passing[1:]))
        # a host the filters did not see is judged as one they pass
        self.assertEqual(hm.UNKNOWN, selected['unmapped'].numa[0])
        self.assertNotIn('unmapped', manager.removed(selected))
