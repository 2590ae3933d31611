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

"""gpuclient.rules.profiles.demand (pure) and usage_ops.demand over the
fake Nova of test_usage, with its request count."""

import random

from osc_lib import exceptions

from gpuclient.ops import usage_ops
from gpuclient.rules import usage
from gpuclient.rules.profiles import demand as profile_demand
from gpuclient.tests.unit import base
from gpuclient.tests.unit import test_usage as tu

NVH = {'code': 500, 'message': 'No valid host was found. There are not '
       'enough hosts available.'}


def refused(sid, flavor, created, status='ERROR', fault=None):
    body = tu.server(sid, flavor, status=status)
    body['created'] = created.strftime('%Y-%m-%dT%H:%M:%SZ')
    body['OS-SRV-USG:launched_at'] = None
    body['fault'] = NVH if fault is None else fault
    return body


def item(flavor, began, ended):
    return {'flavor': flavor, 'interval': (tu.at(began), tu.at(ended))}


class TestDemand(base.TestCase):
    def setUp(self):
        super().setUp()
        self.pools = {p['name']: p for p in (
            tu.pool_of(tu.MIG_SPEC), tu.pool_of(tu.VGPU_SPEC))}
        self.mig = tu.embedded(tu.MIG_SPEC, name='g1.mig')

    def demand(self, items, servers=()):
        return profile_demand.from_usage(items, servers, tu.at(0), tu.at(600),
                                     self.pools)

    def test_peak_of_concurrent_servers_per_flavor(self):
        rows = self.demand([item('g1.mig', 0, 100), item('g1.mig', 50, 150),
                            item('g1.mig', 100, 200),  # ends meet: no overlap
                            item('g1.ws', 10, 20)])
        self.assertEqual([('g1.mig', 2, 0, 2), ('g1.ws', 1, 0, 1)],
                         [tuple(r)[:4] for r in rows])

    def test_refused_boots_in_the_period_are_demand_too(self):
        servers = [
            refused('r1', self.mig, tu.at(5)),
            refused('r2', self.mig, tu.at(6), status='DELETED'),
            # before the period, another fault, not refused, not a GPU
            refused('r3', self.mig, tu.at(-5)),
            refused('r4', self.mig, tu.at(7), fault={
                'code': 500, 'message': 'Build of instance aborted'}),
            tu.server('ok', self.mig),
            refused('r5', {'original_name': 'm1.small', 'extra_specs': {}},
                    tu.at(8)),
        ]
        rows = self.demand([item('g1.mig', 0, 100)], servers)
        self.assertEqual([('g1.mig', 1, 2, 3)], [tuple(r)[:4] for r in rows])

    def test_only_refusals(self):
        rows = self.demand([], [refused('r1', self.mig, tu.at(5))])
        self.assertEqual([('g1.mig', 0, 1, 1)], [tuple(r)[:4] for r in rows])

    def test_peak_against_brute_force(self):
        rng = random.Random(27)
        for _ in range(200):
            items = []
            for _n in range(rng.randint(0, 8)):
                a, b = sorted(rng.sample(range(0, 60), 2))
                items.append(item('f', a, b))
            rows = self.demand(items)
            # the most intervals open at a minute's midpoint
            best = max([sum(1 for i in items
                            if i['interval'][0] <= tu.at(m + 0.5)
                            < i['interval'][1]) for m in range(60)] or [0])
            self.assertEqual(best, rows[0].peak if rows else 0)


class TestDemandOps(tu.CommandTestCase):
    def test_usage_and_refusals_in_a_constant_number_of_requests(self):
        mig = tu.embedded(tu.MIG_SPEC, name='g1.mig')
        self.nova.servers.append((tu.server('s1', mig, host='gpu-mig-1'),
                                  False))
        self.nova.servers.append((tu.server('s2', mig, host='gpu-mig-1'),
                                  True))
        self.nova.servers.append((refused('r1', mig, tu.at(30)), True))
        self.nova.usages += [
            tu.server_usage('s1', tu.at(0), flavor='g1.mig'),
            tu.server_usage('s2', tu.at(10), tu.at(40), flavor='g1.mig')]
        before = self.requests()
        period, rows, notes = usage_ops.demand(
            self.cm.gpu, '2026-11-01T00:00:00', '2026-11-01T10:00:00')
        self.assertEqual((tu.at(0), tu.at(600)), period)
        self.assertEqual([('g1.mig', 2, 1, 3, 'slices', 1)],
                         [tuple(r) for r in rows])
        self.assertEqual([], notes)
        # aggregates, the usage, the servers changed since the start
        self.assertEqual(3, self.requests() - before)

    def test_period_is_checked_before_any_request(self):
        before = self.requests()
        error = self.assertRaises(
            exceptions.CommandError, usage_ops.demand, self.cm.gpu,
            '2026-11-02T00:00:00', '2026-11-01T00:00:00')
        self.assertIn('--start', str(error))
        self.assertEqual(before, self.requests())


class TestRefused(base.TestCase):
    def test_refused(self):
        self.assertTrue(profile_demand.refused(
            {'status': 'ERROR', 'fault': NVH}))
        self.assertFalse(profile_demand.refused(
            {'status': 'ACTIVE', 'fault': NVH}))
        self.assertFalse(profile_demand.refused({'status': 'ERROR'}))
        self.assertEqual(usage.nova_time('2026-11-01T00:00:30Z'),
                         tu.at(0.5))


class TestUsageEntries(base.TestCase):
    def test_flavors_by_name_profiles_when_gone_others_noted(self):
        pools = {p['name']: p for p in (tu.pool_of(tu.MIG_SPEC),
                                        tu.pool_of(tu.VGPU_SPEC))}
        rows = [profile_demand.Demand('g1.mig', 2, 1, 3, 'slices', 1),
                profile_demand.Demand('old.mig', 1, 0, 1, 'slices', 2),
                profile_demand.Demand('gone.mig', 0, 2, 2, 'slices', 1),
                profile_demand.Demand('g1.ws', 4, 0, 4, 'ws', 1),
                profile_demand.Demand('nopool', 1, 0, 1, None, 1)]
        entries, notes = profile_demand.entries(
            rows, [{'name': 'g1.mig'}], pools)
        # old.mig and gone.mig are no longer flavors: 1 x 2 + 2 x 1
        self.assertEqual({'g1.mig': 3, '1g.10gb': 4}, entries)
        self.assertEqual(2, len(notes))
        # a vgpu pool whose NVIDIA type is not known: said, left out
        self.assertIn('g1.ws (pool ws): the NVIDIA vGPU type of mdev type '
                      'nvidia-35 is not known (--vgpu-mdev-type)', notes[0])
        self.assertIn('nopool (pool -): not a MIG or vGPU pool', notes[1])
        # known: its flavor counts by name, or by the type when gone
        entries, notes = profile_demand.entries(
            rows + [profile_demand.Demand('gone.ws', 1, 1, 2, 'ws', 2)],
            [{'name': 'g1.mig'}, {'name': 'g1.ws'}], pools,
            {'ws': 'A100D-10C'})
        self.assertEqual({'g1.mig': 3, '1g.10gb': 4, 'g1.ws': 4,
                          'A100D-10C': 4}, entries)
        self.assertEqual(1, len(notes))
