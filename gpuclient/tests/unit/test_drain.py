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

from unittest import mock

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
                         (cold['id'], cold['source'], cold['host'],
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
