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

"""``gpu host drain``'s apply half: the steps (pure), the rows of what an
earlier drain left unconfirmed, the notices, ``--host-fact``, and the
journal's server moves (waiting, what counts as done, what stops a move,
the forward-only error) against a scripted Nova."""

import os
from unittest import mock

import fixtures
from osc_lib import exceptions

from gpuclient.cloud import errors
from gpuclient.ops import journal
from gpuclient.rules import maintenance as m
from gpuclient.rules import plan as plan_mod
from gpuclient.tests.unit import base

PCI = 'CUSTOM_PCI_10DE_2331'
HOST = 'OS-EXT-SRV-ATTR:host'
TASK = 'OS-EXT-STS:task_state'


def row(name, method, source='a', destination='b', **more):
    out = {'server': 'id-' + name, 'name': name, 'project': 'p1',
           'flavor': 'gpu.1', 'source': source, 'kind': 'passthrough',
           'resource_class': PCI, 'gpus': 1, 'devices': [],
           'method': method, 'destination': destination,
           'downtime': m.DOWNTIME[method], 'reason': None, 'notes': []}
    out.update(more)
    return out


TREES = {'a': ['rp-a', 'rp-a-gpu'], 'b': ['rp-b', 'rp-b-gpu']}


class TestSteps(base.TestCase):

    def test_cordon_first_then_one_move_per_row_in_order(self):
        cordon = [plan_mod.disable_service('a', 'svc-a', 'gpuclient: fw',
                                           undone=False)]
        rows = [row('x', m.COLD), row('y', m.LIVE), row('z', m.SHELVE,
                                                        destination=None),
                row('w', m.STAYS, destination=None)]
        steps = m.steps(rows, cordon, TREES, timeout=30)
        self.assertEqual(['service.disable', 'server.migrate',
                          'server.live_migrate', 'server.shelve'],
                         [s.op for s in steps])
        # forward only: nothing is undone, the cordon included
        self.assertEqual([None] * 4, [s.inverse for s in steps])
        cold = steps[1].args
        self.assertEqual(('id-x', 'a', 'b', [PCI], 30, True, 1),
                         (cold['server_id'], cold['source'], cold['host'],
                          cold['classes'], cold['timeout'], cold['confirm'],
                          cold['gpus']))
        self.assertEqual({'source': ['rp-a', 'rp-a-gpu'],
                          'destination': ['rp-b', 'rp-b-gpu']},
                         cold['providers'])

    def test_no_confirm_and_rows_left_to_confirm(self):
        rows = [row('x', m.COLD), row('y', m.COLD, confirm_only=True)]
        steps = m.steps(rows, [], TREES, confirm=False)
        self.assertEqual(['server.migrate'], [s.op for s in steps])
        self.assertFalse(steps[0].args['confirm'])
        steps = m.steps(rows, [], TREES)
        self.assertEqual(['server.migrate', 'server.confirm'],
                         [s.op for s in steps])


class TestUnconfirmed(base.TestCase):

    def server(self, sid, status, host='b'):
        return {'id': sid, 'name': sid, 'status': status, HOST: host,
                'tenant_id': 'p1', 'flavor': {'original_name': 'f',
                                              'extra_specs': {}}}

    def test_only_finished_migrations_off_the_drained_hosts(self):
        migrations = [
            {'instance_uuid': 's1', 'source_compute': 'a',
             'dest_compute': 'b', 'status': 'finished'},
            {'instance_uuid': 's2', 'source_compute': 'c',
             'dest_compute': 'b', 'status': 'finished'},
            {'instance_uuid': 's3', 'source_compute': 'a',
             'dest_compute': 'b', 'status': 'confirmed'},
        ]
        servers = [self.server('s1', 'VERIFY_RESIZE'),
                   self.server('s2', 'VERIFY_RESIZE'),
                   self.server('s3', 'VERIFY_RESIZE'),
                   self.server('s4', 'ACTIVE')]
        rows = m.unconfirmed_rows(servers, migrations, ['a'])
        self.assertEqual([('s1', 'a', 'b', m.COLD, True)],
                         [(r['server'], r['source'], r['destination'],
                           r['method'], r['confirm_only']) for r in rows])


class TestNotices(base.TestCase):

    def test_one_notice_per_project_says_what_happens(self):
        rows = [row('x', m.COLD), row('y', m.STAYS, destination=None,
                                      reason='no room', project='p2'),
                row('z', m.LIVE)]
        texts = m.notices(rows, ['a'], reason='firmware')
        self.assertEqual(['p1', 'p2'], sorted(texts))
        self.assertIn('firmware', texts['p1'])
        self.assertIn('cold-migrated to b', texts['p1'])
        self.assertIn('live-migrated to b', texts['p1'])
        self.assertIn('no room', texts['p2'])
        self.assertNotIn('x (', texts['p2'])

    def test_file_names_are_plain(self):
        self.assertEqual('drain-notice-p_1.txt', m.notice_name('p/1'))
        self.assertEqual('drain-notice-x.txt', m.notice_name('..x'))


class TestHostFacts(base.TestCase):

    def test_every_host_and_one_host(self):
        given = m.parse_facts(['nova=2025.1', 'b:live_migratable=true',
                               'mdev_types=nvidia-35,nvidia-36'])
        facts = m.host_facts(given, ['a', 'b'])
        self.assertEqual('2025.1', facts['a']['nova'])
        self.assertNotIn('live_migratable', facts['a'])
        self.assertIs(True, facts['b']['live_migratable'])
        self.assertEqual({'nvidia-35', 'nvidia-36'}, facts['b']['mdev_types'])

    def test_bad_items(self):
        for item in ('nova', 'color=red', 'qemu=new', 'live_migratable=may',
                     'nova='):
            self.assertRaises(ValueError, m.parse_facts, [item])


class ScriptedNova:
    """Nova's answers to GET /servers/{id}: each read takes the next state
    of STATES (the last one stays); actions are recorded."""

    def __init__(self, states, allocations=None, fail=None):
        self.states = list(states)
        self.actions = []
        self.services = []
        self.allocations = allocations or {}
        # the failures of the next actions, in order (None: it goes through)
        self.fail = list(fail) if isinstance(fail, list) else [fail]

    def get_server(self, server_id):
        state = self.states[0] if len(self.states) == 1 else (
            self.states.pop(0))
        return dict(state, id=server_id)

    def set_service_status(self, service_id, enabled, reason=None):
        self.services.append((service_id, enabled, reason))

    def server_action(self, server_id, action, body=None):
        self.actions.append((action, body))
        exc = self.fail.pop(0) if self.fail else None
        if exc is not None:
            raise exc


def executor(nova):
    client = mock.Mock()
    client.compute = nova
    client.placement.consumer_allocations.side_effect = (
        lambda consumer: nova.allocations)
    ex = journal.Executor(client)
    ex.sleep = lambda _s: None
    return ex


def state(host, status='ACTIVE', task=None):
    return {HOST: host, 'status': status, TASK: task}


PROVIDERS = {'source': ['rp-a-gpu'], 'destination': ['rp-b-gpu']}
ON_B = {'rp-b-gpu': {PCI: 1}}


def cold(confirm=True):
    return plan_mod.cold_migrate('s1', 'vm', 'a', 'b', [PCI], PROVIDERS, 60,
                                 confirm=confirm, gpus=1)


class TestMoves(base.TestCase):

    def test_cold_migration_waits_then_confirms(self):
        nova = ScriptedNova([state('a'), state('a', task='resize_prep'),
                             state('b', 'VERIFY_RESIZE'),
                             state('b', 'VERIFY_RESIZE'), state('b')],
                            allocations=ON_B)
        ex = executor(nova)
        ex.run(cold())
        self.assertEqual([('migrate', {'host': 'b'}), ('confirmResize', None)],
                         nova.actions)
        self.assertTrue(ex.holds(cold()))
        self.assertEqual([], ex.warnings)

    def test_a_move_already_done_sends_nothing(self):
        nova = ScriptedNova([state('b')], allocations=ON_B)
        executor(nova).run(cold())
        self.assertEqual([], nova.actions)

    def test_no_confirm_stops_at_verify_resize(self):
        nova = ScriptedNova([state('a'), state('b', 'VERIFY_RESIZE')],
                            allocations=ON_B)
        ex = executor(nova)
        ex.run(cold(confirm=False))
        self.assertEqual(['migrate'], [a for a, _b in nova.actions])
        self.assertTrue(ex.holds(cold(confirm=False)))
        self.assertFalse(ex.holds(cold()))

    def test_nova_rolling_back_fails_the_step(self):
        nova = ScriptedNova([state('a'), state('a', task='resize_prep'),
                             state('a')])
        exc = self.assertRaises(errors.APIError, executor(nova).run, cold())
        self.assertIn('left server vm (s1) on a', str(exc))

    def test_error_state_fails_the_step(self):
        nova = ScriptedNova([state('a'), dict(state('a', 'ERROR'),
                                              fault={'message': 'boom'})])
        exc = self.assertRaises(errors.APIError, executor(nova).run, cold())
        self.assertIn('ERROR (boom)', str(exc))

    def test_a_lost_answer_is_judged_by_the_server(self):
        # the request got through (the server moves): done
        lost = errors.APIError('connection dropped')
        nova = ScriptedNova([state('a'), state('a', task='migrating'),
                             state('b')], allocations=ON_B, fail=lost)
        live = plan_mod.live_migrate('s1', 'vm', 'a', 'b', [PCI], PROVIDERS,
                                     60)
        executor(nova).run(live)
        # it did not (nothing moves): its own error, not a guess
        nova = ScriptedNova([state('a')], fail=errors.APIError('dropped'))
        exc = self.assertRaises(errors.APIError, executor(nova).run, live)
        self.assertEqual('dropped', str(exc))

    def test_a_lost_confirmation_is_sent_again_and_waited_for(self):
        # the first confirmation got through (its answer lost): Nova
        # refuses the second, and the server ends on its destination
        nova = ScriptedNova(
            [state('b', 'VERIFY_RESIZE'), state('b', 'VERIFY_RESIZE'),
             state('b')], allocations=ON_B,
            fail=[errors.APIError('dropped'), errors.Conflict('no', 409)])
        confirm = plan_mod.confirm_migration('s1', 'vm', 'a', 'b', [PCI],
                                             PROVIDERS, 60)
        executor(nova).run(confirm)
        self.assertEqual(['confirmResize', 'confirmResize'],
                         [a for a, _b in nova.actions])

    def test_a_refusal_is_raised_at_once(self):
        nova = ScriptedNova([state('a')], fail=errors.Conflict('busy', 409))
        self.assertRaises(errors.Conflict, executor(nova).run, cold())

    def test_timeout(self):
        nova = ScriptedNova([state('a'), state('a', task='resize_prep')])
        ex = executor(nova)
        ticks = iter(range(0, 1000, 30))
        ex.clock = lambda: next(ticks)
        exc = self.assertRaises(errors.TimedOut, ex.run, cold())
        self.assertIn('after 60 s', str(exc))

    def test_allocation_left_on_the_source_fails(self):
        nova = ScriptedNova([state('b')], allocations={'rp-a-gpu': {PCI: 1}})
        exc = self.assertRaises(errors.APIError, executor(nova).run, cold())
        self.assertIn('allocation show s1', str(exc))

    def test_more_units_on_the_destination_is_a_warning(self):
        nova = ScriptedNova([state('b')], allocations={
            'rp-b-gpu': {PCI: 1}, 'rp-b-gpu2': {PCI: 1}})
        providers = dict(PROVIDERS, destination=['rp-b-gpu', 'rp-b-gpu2'])
        ex = executor(nova)
        ex.run(plan_mod.cold_migrate('s1', 'vm', 'a', 'b', [PCI], providers,
                                     60, gpus=1))
        self.assertEqual(1, len(ex.warnings))
        self.assertIn('2 x %s' % PCI, ex.warnings[0])

    def test_shelve_offloads_and_frees_the_gpu(self):
        nova = ScriptedNova([state('a'), state(None, 'SHELVED'),
                             state(None, 'SHELVED_OFFLOADED')])
        shelve = plan_mod.shelve('s1', 'vm', 'a', [PCI], PROVIDERS, 60)
        ex = executor(nova)
        ex.run(shelve)
        self.assertEqual(['shelve', 'shelveOffload'],
                         [a for a, _b in nova.actions])
        self.assertTrue(ex.holds(shelve))


class TestForwardPlan(base.TestCase):

    def test_a_failure_keeps_what_was_done_and_says_rerun(self):
        steps = [plan_mod.disable_service('a', 'svc', 'gpuclient: fw',
                                          undone=False), cold()]
        plan = plan_mod.Plan('gpu host drain', steps, forward=True,
                             rerun='openstack gpu host drain a')
        client = mock.Mock()
        client.compute = ScriptedNova([state('a')],
                                      fail=errors.APIError('No valid host',
                                                           400))
        exc = self.assertRaises(journal.ApplyError, journal.apply, client,
                                plan)
        text = str(exc)
        self.assertIn('Done, and kept', text)
        self.assertIn('disable compute service of a', text)
        self.assertIn('Not done: cold-migrate server vm (s1)', text)
        self.assertIn('openstack gpu host drain a', text)
        # the cordon was not undone
        self.assertEqual([('svc', False, 'gpuclient: fw')],
                         client.compute.services)
        self.assertEqual([('migrate', {'host': 'b'})], client.compute.actions)


class DrainTestCase(base.TestCase):
    """``maintenance_ops.drain`` end to end against the strict fakes:
    Nova's server routes, os-migrations and services, Placement's
    allocations. Two passthrough hosts of one pool, and a vGPU host."""

    def setUp(self):
        super().setUp()
        import fixtures

        from gpuclient.rules import pools as pools_mod
        from gpuclient.rules import specs
        from gpuclient.tests.unit import fakes

        self.fakes = fakes
        self.cloud = fakes.FakeCloud()
        self.cloud.pci_host('gpu-pt-1')
        self.cloud.pci_host('gpu-pt-2')
        self.cloud.vgpu_host('gpu-vgpu-1')
        spec = pools_mod.build_spec('solver', 'passthrough', alias='h100',
                                    pci_id='10de:2331')
        pool = fakes.Aggregate('solver', pools_mod.metadata_for(spec),
                               ['gpu-pt-1', 'gpu-pt-2'])
        self.cloud.aggregates.append(pool)
        for provider in self.cloud.providers:
            if provider.parent is None:
                provider.traits.append('OWNER_NOVA')
        scanned, _problems = pools_mod.scan([pools_mod.aggregate_dict(pool)])
        derived = specs.derive(scanned['solver'], gpus=1)
        pool.metadata.update(derived['aggregate_metadata'])
        self.specs = derived['extra_specs']
        self.useFixture(fakes.PlacementFixture(self.cloud))
        self.cm = self.useFixture(fakes.ClientManagerFixture(self.cloud))
        self.client = self.cm.gpu
        self.useFixture(fixtures.MockPatchObject(journal, 'POLL_INTERVAL',
                                                 0))
        from gpuclient.ops import maintenance_ops
        self.ops = maintenance_ops
        self.useFixture(fixtures.MockPatch(
            'time.sleep', side_effect=lambda _s: self.cloud.finish_moves()))

    def gpu_server(self, name, host='gpu-pt-1', **more):
        return self.cloud.add_server(name, host, self.specs,
                                     gpus={PCI: 1}, **more)

    def drain(self, *hosts, **kwargs):
        kwargs.setdefault('requested', 'cold')
        kwargs.setdefault('allow_downtime', True)
        return self.ops.drain(self.client, list(hosts or ['gpu-pt-1']),
                              **kwargs)

    def where(self, server):
        return (server['OS-EXT-SRV-ATTR:host'], server['status'])

    def tree(self, host):
        root = self.cloud.host_root(host)
        return {p.uuid for p in self.cloud.providers if p.root is root}

    def assert_gpu_on(self, server, host):
        held = self.cloud.allocations[server['id']]
        on = {rp for rp, res in held.items() if res.get(PCI)}
        self.assertTrue(on)
        self.assertTrue(on <= self.tree(host), held)

    def reason(self, host='gpu-pt-1'):
        return self.cloud.disabled_reasons.get(host)

    def actions(self, server, name=None):
        return [c for c in self.cm.nova.calls
                if c[0] == 'action' and c[1] == server['id']
                and (name is None or c[2] == name)]


class TestDrainEndToEnd(DrainTestCase):

    def test_every_server_moves_and_the_host_reads_back_empty(self):
        servers = [self.gpu_server('a'), self.gpu_server('b')]
        with self.assertLogs('gpuclient.ops.maintenance_ops',
                             'INFO') as logs:
            rows, _plan, _notices = self.drain(reason='fw')
        self.assertEqual(['a', 'b'], [r['name'] for r in rows])
        for server in servers:
            self.assertEqual(('gpu-pt-2', 'ACTIVE'), self.where(server))
            self.assert_gpu_on(server, 'gpu-pt-2')
        # the drain's cordon became the ordinary one once empty
        self.assertEqual('gpuclient: fw', self.reason())
        self.assertIn('Drained (read back with no server and no move '
                      'coming): gpu-pt-1', '\n'.join(logs.output))
        # the read-back: one server list of the host (its filter), one
        # migration list: a constant number of requests
        self.assertIn({'all_tenants': 1, 'host': 'gpu-pt-1'},
                      self.cm.nova.server_lists)
        self.assertIn({'host': 'gpu-pt-1'}, self.cm.nova.migration_lists)

    def test_a_fact_for_no_host_is_refused_before_any_write(self):
        """Issue 51 defect 10: a --host-fact for a host the cloud does not
        have stops the drain before its cordon; nothing is written."""
        server = self.gpu_server('a')
        error = self.assertRaises(
            exceptions.CommandError, self.drain,
            facts={'gpu-pt-3': {'live_migratable': True}})
        self.assertIn('--host-fact gpu-pt-3:...: Unknown compute host(s)',
                      str(error))
        self.assertIsNone(self.reason())
        self.assertEqual([], self.actions(server))
        self.assertEqual(('gpu-pt-1', 'ACTIVE'), self.where(server))

    def test_a_host_blazar_holds_is_no_destination(self):
        # issue 40, rule 6: gpu-pt-2 enrolled in Blazar (the freepool)
        server = self.gpu_server('a')
        self.cloud.aggregates.append(
            self.fakes.Aggregate('freepool', {}, hosts=['gpu-pt-2']))

        def planned():
            rows, _summary = self.ops.drain_plan(
                self.client, ['gpu-pt-1'], requested='cold',
                allow_downtime=True)
            mine, = [r for r in rows if r['server'] == server['id']]
            return mine
        # no Blazar in the catalog: the freepool is just an aggregate
        self.assertEqual((m.COLD, 'gpu-pt-2'),
                         (planned()['method'], planned()['destination']))
        access = mock.Mock()
        access.service_catalog.catalog = [{'type': 'reservation'}]
        self.client._session.auth.get_access = lambda _session: access
        row = planned()
        self.assertEqual((m.STAYS, None), (row['method'], row['destination']))
        # Blazar's host list says so (issue 51 defect 14)
        self.assertIn('gpu-pt-2 is held by Blazar (enrolled and not '
                      'leased, as Blazar\'s host list says)', row['reason'])
        self.assertEqual(['/os-hosts'], self.cm.blazar.calls)

    def test_a_server_arriving_after_the_plan_is_moved_too(self):
        # defect 1: it lands between the plan and the cordon
        first = self.gpu_server('a')
        late = []

        def on_step(index, step):
            if step.op == 'service.disable' and not late:
                late.append(self.gpu_server('late'))
        rows, _plan, _notices = self.drain(on_step=on_step)
        self.assertEqual(['a', 'late'], [r['name'] for r in rows])
        for server in [first] + late:
            self.assertEqual(('gpu-pt-2', 'ACTIVE'), self.where(server))
        self.assertEqual('gpuclient: maintenance', self.reason())

    def test_a_server_that_arrives_and_cannot_leave_is_named(self):
        self.gpu_server('a')
        late = []

        def on_step(index, step):
            if step.op == 'service.disable' and not late:
                late.append(self.gpu_server('late', status='SUSPENDED'))
        exc = self.assertRaises(exceptions.CommandError, self.drain,
                                on_step=on_step)
        self.assertIn('did not empty gpu-pt-1', str(exc))
        self.assertIn('late (%s)' % late[0]['id'], str(exc))
        # still held by the drain
        self.assertEqual('gpuclient: draining: maintenance', self.reason())

    def test_a_move_coming_to_the_host_is_waited_for_then_moved(self):
        # a server migrating towards the drained host (its host is still
        # the source until it ends) lands, and the next round moves it
        self.gpu_server('a')
        coming = self.gpu_server('coming', host='gpu-pt-2')
        self.cloud.move_outcome[coming['id']] = 'stuck'
        self.cloud.move_server(coming, 'gpu-pt-1', 'live-migration')
        self.assertEqual('gpu-pt-2', coming['OS-EXT-SRV-ATTR:host'])
        rows, _plan, _notices = self.drain()
        self.assertEqual(('gpu-pt-2', 'ACTIVE'), self.where(coming))
        self.assertIn('coming', [r['name'] for r in rows])

    def test_a_move_coming_that_never_ends_is_named(self):
        coming = self.gpu_server('coming', host='gpu-pt-2')
        self.cloud.move_outcome[coming['id']] = 'stuck'
        self.cloud.move_server(coming, 'gpu-pt-1', 'migration')
        self.useFixture(fixtures.MockPatch('time.sleep'))
        ticks = iter(range(0, 10000, 100))
        self.useFixture(fixtures.MockPatch('time.monotonic',
                                           side_effect=lambda: next(ticks)))
        exc = self.assertRaises(exceptions.CommandError, self.drain,
                                timeout=300)
        self.assertIn('%s arriving on gpu-pt-1 from gpu-pt-2'
                      % coming['id'], str(exc))

    def test_a_server_without_gpus_moves_and_is_done(self):
        # defect 9: checked by the host and what it holds, not "nowhere"
        plain = self.cloud.add_server('plain', 'gpu-pt-1')
        rows, _plan, _notices = self.drain(requested='auto')
        self.assertEqual([None], [r['resource_class'] for r in rows])
        host, status = self.where(plain)
        self.assertNotEqual('gpu-pt-1', host)
        self.assertEqual('ACTIVE', status)
        self.assertTrue(set(self.cloud.allocations[plain['id']])
                        <= self.tree(host))

    def test_a_failed_move_leaves_the_host_cordoned(self):
        server = self.gpu_server('a')
        self.cloud.move_outcome[server['id']] = 'fail'
        exc = self.assertRaises(journal.ApplyError, self.drain, reason='fw')
        self.assertIn('Not done', str(exc))
        self.assertEqual(('gpu-pt-1', 'ACTIVE'), self.where(server))
        self.assertIn('gpu-pt-1', self.cloud.disabled)
        self.assertEqual('gpuclient: draining: fw', self.reason())
        # the re-run finishes it
        self.drain(reason='fw')
        self.assertEqual(('gpu-pt-2', 'ACTIVE'), self.where(server))
        self.assertEqual('gpuclient: fw', self.reason())

    def test_timeout_is_given_to_every_move(self):
        self.gpu_server('a')
        seen = []
        self.drain(timeout=42,
                   on_step=lambda _i, step: seen.append(step))
        moves = [s for s in seen if s.op.startswith('server.')]
        self.assertEqual([42], [s.args['timeout'] for s in moves])

    def test_a_stuck_move_times_out_after_the_timeout_given(self):
        server = self.gpu_server('a')
        self.cloud.move_outcome[server['id']] = 'stuck'
        self.useFixture(fixtures.MockPatch('time.sleep'))
        ticks = iter(range(0, 100000, 10))
        self.useFixture(fixtures.MockPatch('time.monotonic',
                                           side_effect=lambda: next(ticks)))
        exc = self.assertRaises(journal.ApplyError, self.drain, timeout=42)
        self.assertIn('after 42 s', str(exc))
        self.assertIn('under way or unknown', str(exc))

    def test_skip_unmovable_and_several_hosts(self):
        a = self.cloud.add_server('a', 'gpu-pt-1')
        stuck = self.gpu_server('stuck', status='ERROR')
        b = self.cloud.add_server('b', 'gpu-pt-2')
        exc = self.assertRaises(exceptions.CommandError, self.drain,
                                'gpu-pt-1', 'gpu-pt-2')
        self.assertIn('Nothing was changed', str(exc))
        self.assertEqual(set(), self.cloud.disabled)
        rows, _plan, _n = self.drain('gpu-pt-1', 'gpu-pt-2',
                                     skip_unmovable=True, requested='auto')
        self.assertEqual({'gpu-pt-1', 'gpu-pt-2'}, self.cloud.disabled)
        self.assertEqual(('gpu-pt-1', 'ERROR'), self.where(stuck))
        for server in (a, b):
            self.assertEqual('gpu-vgpu-1', self.where(server)[0])
        # two hosts: the migration list unfiltered, once per read-back
        self.assertIn({}, self.cm.nova.migration_lists)


class TestDrainUnderWay(DrainTestCase):
    """Defect 10: a move Nova accepted whose read-back failed."""

    def fail_reads_after(self, server, action):
        nova = self.cm.nova
        real = nova.server_action

        def then_fail(server_id, body, version):
            answer = real(server_id, body, version)
            if action in (body or {}):
                nova.fail[('get', '/servers/%s' % server['id'])] = 500
            return answer
        nova.server_action = then_fail
        return real

    def test_accepted_then_unreadable_is_under_way_and_waited_for(self):
        server = self.gpu_server('a')
        self.cloud.move_outcome[server['id']] = 'stuck'
        real = self.fail_reads_after(server, 'migrate')
        exc = self.assertRaises(journal.ApplyError, self.drain)
        text = str(exc)
        self.assertIn('Still under way or unknown: cold-migrate server a',
                      text)
        self.assertNotIn('Not done', text)
        # the re-run finds the migration in progress and waits for it
        self.cm.nova.fail.clear()
        self.cm.nova.server_action = real
        rows, plan, _n = self.drain()
        self.assertTrue(rows[0].get('under_way'))
        self.assertIn('wait for the cold migration',
                      ' '.join(s.what for s in plan.steps))
        self.assertEqual(('gpu-pt-2', 'ACTIVE'), self.where(server))
        self.assertEqual(1, len(self.actions(server, 'migrate')))
        self.assert_gpu_on(server, 'gpu-pt-2')

    def test_live_migration_accepted_then_unreadable(self):
        server = self.cloud.add_server('plain', 'gpu-pt-1')
        self.fail_reads_after(server, 'os-migrateLive')
        exc = self.assertRaises(journal.ApplyError, self.drain,
                                requested='live')
        self.assertIn('Still under way or unknown: live-migrate server '
                      'plain', str(exc))


class TestDrainReason(DrainTestCase):
    """Defect 12: a --reason Nova would refuse, refused in the plan."""

    def test_too_long_refused_before_any_write_or_notice(self):
        self.gpu_server('a')
        where = self.useFixture(fixtures.TempDir()).path
        longest = 255 - len('gpuclient: draining: ')
        for length in (250, longest + 1):
            exc = self.assertRaises(exceptions.CommandError, self.drain,
                                    reason='x' * length, notice_dir=where)
            self.assertIn('at most %d characters' % longest, str(exc))
        self.assertEqual([], os.listdir(where))
        self.assertEqual([], [c for c in self.cm.nova.calls
                              if c[0] in ('service', 'action')])
        # the longest that fits goes through Nova's 255
        self.drain(reason='x' * longest)
        self.assertEqual(255 - len('draining: '), len(self.reason()))

    def test_cordon_too(self):
        exc = self.assertRaises(exceptions.CommandError, self.ops.cordon,
                                self.client, ['gpu-pt-1'], reason='x' * 245)
        self.assertIn('at most 244 characters', str(exc))
        self.assertEqual(set(), self.cloud.disabled)

    def test_the_fake_refuses_what_nova_refuses(self):
        service = [s for s in self.cm.nova.services()
                   if s.host == 'gpu-pt-1'][0]
        self.assertRaises(errors.APIError,
                          self.client.compute.set_service_status,
                          service.id, False, 'x' * 256)


class TestDrainNotices(DrainTestCase):
    """Defect 11: notices written when the plan is final; a re-run keeps
    identical ones."""

    def test_the_rerun_keeps_identical_notices(self):
        server = self.gpu_server('a')
        where = self.useFixture(fixtures.TempDir()).path
        self.cloud.move_outcome[server['id']] = 'fail'
        self.assertRaises(journal.ApplyError, self.drain, notice_dir=where)
        self.assertEqual(['drain-notice-p1.txt'], os.listdir(where))
        with open(os.path.join(where, 'drain-notice-p1.txt')) as notice:
            first = notice.read()
        _rows, _plan, written = self.drain(notice_dir=where)
        self.assertEqual([os.path.join(where, 'drain-notice-p1.txt')],
                         written)
        with open(os.path.join(where, 'drain-notice-p1.txt')) as notice:
            self.assertEqual(first, notice.read())
        self.assertEqual(('gpu-pt-2', 'ACTIVE'), self.where(server))

    def test_another_text_is_refused_before_any_write(self):
        self.gpu_server('a')
        where = self.useFixture(fixtures.TempDir()).path
        with open(os.path.join(where, 'drain-notice-p1.txt'), 'w') as out:
            out.write('mine')
        exc = self.assertRaises(exceptions.CommandError, self.drain,
                                notice_dir=where)
        self.assertIn('another text', str(exc))
        self.assertEqual(set(), self.cloud.disabled)

    def test_a_refused_plan_writes_no_notice(self):
        self.gpu_server('a', status='SUSPENDED')
        where = self.useFixture(fixtures.TempDir()).path
        self.assertRaises(exceptions.CommandError, self.drain,
                          notice_dir=where)
        self.assertEqual([], os.listdir(where))


class TestUncordonHeldByDrain(DrainTestCase):
    """Defect 13: uncordon of a service a drain still holds."""

    def test_refused_naming_the_drain_unless_forced(self):
        server = self.gpu_server('a')
        self.cloud.move_outcome[server['id']] = 'fail'
        self.assertRaises(journal.ApplyError, self.drain, reason='fw by bob')
        exc = self.assertRaises(exceptions.CommandError, self.ops.uncordon,
                                self.client, ['gpu-pt-1'])
        self.assertIn('gpu-pt-1 ("gpuclient: draining: fw by bob")',
                      str(exc))
        self.assertIn('--force', str(exc))
        self.assertIn('gpu-pt-1', self.cloud.disabled)
        rows, _plan, _note = self.ops.uncordon(self.client, ['gpu-pt-1'],
                                               force=True)
        self.assertEqual('uncordon', rows[0]['action'])
        self.assertNotIn('gpu-pt-1', self.cloud.disabled)

    def test_a_finished_drain_is_uncordoned(self):
        self.gpu_server('a')
        self.drain()
        self.ops.uncordon(self.client, ['gpu-pt-1'])
        self.assertNotIn('gpu-pt-1', self.cloud.disabled)

    def test_a_drain_of_a_cordoned_host_marks_it_while_it_runs(self):
        self.ops.cordon(self.client, ['gpu-pt-1'], reason='psu')
        server = self.gpu_server('a')
        self.cloud.move_outcome[server['id']] = 'fail'
        self.assertRaises(journal.ApplyError, self.drain, reason='psu')
        self.assertEqual('gpuclient: draining: psu', self.reason())
        self.assertRaises(exceptions.CommandError, self.ops.uncordon,
                          self.client, ['gpu-pt-1'])


class TestDrainUnconfirmed(DrainTestCase):

    def test_the_rerun_confirms_what_was_left_unconfirmed(self):
        server = self.gpu_server('a')
        self.drain(confirm=False)
        self.assertEqual(('gpu-pt-2', 'VERIFY_RESIZE'), self.where(server))
        rows, _plan, _n = self.drain()
        self.assertEqual([(server['id'], True)],
                         [(r['server'], r.get('confirm_only'))
                          for r in rows])
        self.assertEqual(('gpu-pt-2', 'ACTIVE'), self.where(server))
        self.assertEqual(1, len(self.actions(server, 'confirmResize')))


class TestFakeServerRoutes(DrainTestCase):
    """The fake answers the server routes as Nova does."""

    def test_unknown_server_and_wrong_state(self):
        compute = self.client.compute
        self.assertIsNone(compute.get_server('nope'))
        self.assertRaises(errors.NotFound, compute.server_action, 'nope',
                          'migrate', {'host': 'gpu-pt-2'})
        server = self.gpu_server('a', status='SUSPENDED')
        exc = self.assertRaises(errors.APIError, compute.server_action,
                                server['id'], 'migrate',
                                {'host': 'gpu-pt-2'})
        self.assertEqual(409, exc.status)
        exc = self.assertRaises(errors.APIError, compute.server_action,
                                server['id'], 'confirmResize')
        self.assertEqual(409, exc.status)

    def test_migrations_query_by_microversion(self):
        answer = self.cm.nova.get('/os-migrations', microversion='2.59',
                                  params={'user_id': 'u'})
        self.assertEqual(400, answer.status_code)
        answer = self.cm.nova.get('/os-migrations', microversion='2.80',
                                  params={'user_id': 'u'})
        self.assertEqual(200, answer.status_code)


class TestDrainReadBackFails(DrainTestCase):
    """A read-back read that fails after the cordon: the drain cannot
    know the hosts are empty, so it never says drained; it says the
    hosts stay cordoned by the drain and to run it again, and the re-run
    finishes it."""

    def fail_after_cordon(self, method, nth):
        real = getattr(self.client.compute, method)
        calls = []
        cordoned = []

        def failing(*args, **kwargs):
            if cordoned:
                calls.append(1)
                if len(calls) == nth:
                    raise errors.APIError('Nova answered HTTP 500 at '
                                          '/v2.1/servers/detail', 500)
            return real(*args, **kwargs)

        def on_step(index, step):
            if step.op == 'service.disable':
                cordoned.append(step)
        self.useFixture(fixtures.MockPatchObject(self.client.compute,
                                                 method, failing))
        return on_step, calls

    def check(self, method, nth):
        server = self.gpu_server('a')
        on_step, calls = self.fail_after_cordon(method, nth)
        logs = self.useFixture(fixtures.FakeLogger(
            name='gpuclient.ops.maintenance_ops', level='INFO'))
        exc = self.assertRaises(exceptions.CommandError, self.drain,
                                reason='fw', on_step=on_step)
        self.assertNotIn('Drained', logs.output)
        self.assertGreaterEqual(len(calls), nth)
        text = str(exc)
        self.assertIn('could not read gpu-pt-1 back', text)
        self.assertIn('HTTP 500', text)
        self.assertIn('run the drain again', text)
        # held by the drain, not given the ordinary (drained) reason
        self.assertEqual('gpuclient: draining: fw', self.reason())
        # the re-run finishes it
        self.useFixture(fixtures.MockPatchObject(
            self.client.compute, method,
            getattr(type(self.client.compute), method).__get__(
                self.client.compute)))
        self.drain(reason='fw')
        self.assertEqual(('gpu-pt-2', 'ACTIVE'), self.where(server))
        self.assertEqual('gpuclient: fw', self.reason())

    def test_the_first_server_read_back_fails(self):
        self.check('servers_detail', 1)

    def test_the_last_server_read_back_fails(self):
        self.check('servers_detail', 2)

    def test_the_migration_read_back_fails(self):
        self.check('migrations', 1)

    def test_the_services_read_before_the_last_write_fails(self):
        self.check('compute_services', 1)

    def test_the_read_of_a_second_round_fails(self):
        # a server lands after the plan; reading the cloud again for the
        # round that would move it fails
        self.gpu_server('a')
        real = self.ops.observe
        late = []

        def on_step(index, step):
            if step.op == 'service.disable' and not late:
                late.append(self.gpu_server('late'))
                self.useFixture(fixtures.MockPatchObject(
                    self.ops, 'observe', side_effect=errors.APIError(
                        'Nova answered HTTP 500 at /v2.1/os-hypervisors',
                        500)))
        exc = self.assertRaises(exceptions.CommandError, self.drain,
                                reason='fw', on_step=on_step)
        self.assertIn('could not read gpu-pt-1 back', str(exc))
        self.assertIn('run the drain again', str(exc))
        self.assertEqual('gpuclient: draining: fw', self.reason())
        self.useFixture(fixtures.MockPatchObject(self.ops, 'observe', real))
        self.drain(reason='fw')
        self.assertEqual(('gpu-pt-2', 'ACTIVE'), self.where(late[0]))
        self.assertEqual('gpuclient: fw', self.reason())


class TestDrainLastWrite(DrainTestCase):

    def test_the_ordinary_reason_failing_says_the_hosts_are_empty(self):
        server = self.gpu_server('a')
        service = [s for s in self.cm.nova.services()
                   if s.host == 'gpu-pt-1'][0]

        def on_step(_index, step):
            if step.op == 'service.disable' and not (
                    step.args['reason'].startswith('gpuclient: draining')):
                self.cm.nova.fail[('put', '/os-services/%s'
                                   % service.id)] = 500
        exc = self.assertRaises(journal.ApplyError, self.drain,
                                on_step=on_step)
        self.assertIn('read gpu-pt-1 back empty', str(exc))
        self.assertIn('Run the drain again', str(exc))
        self.assertEqual('gpuclient: draining: maintenance', self.reason())
        self.cm.nova.fail.clear()
        self.drain()
        self.assertEqual(('gpu-pt-2', 'ACTIVE'), self.where(server))
        self.assertEqual('gpuclient: maintenance', self.reason())
