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

"""rules.cordon: which services a cordon or uncordon changes, with plain
service dicts."""

import testtools

from gpuclient.rules import cordon


def service(host, status='enabled', reason=None):
    return {'host': host, 'id': 'svc-' + host, 'status': status,
            'disabled_reason': reason}


class TestReason(testtools.TestCase):

    def test_marker_and_default(self):
        self.assertEqual('gpuclient: maintenance', cordon.reason_text())
        self.assertEqual('gpuclient: maintenance', cordon.reason_text('  '))
        self.assertEqual('gpuclient: new PSU', cordon.reason_text('new PSU'))

    def test_ours(self):
        self.assertTrue(cordon.is_ours(cordon.reason_text('x')))
        for other in (None, '', 'firmware update', 'GPUCLIENT: x'):
            self.assertFalse(cordon.is_ours(other), other)


class TestCordon(testtools.TestCase):

    def test_enabled_service_is_disabled_with_our_reason(self):
        rows, steps = cordon.cordon([service('h1')], 'PSU')
        self.assertEqual([{'host': 'h1', 'status': 'enabled',
                           'reason': 'gpuclient: PSU',
                           'action': cordon.CORDON}], rows)
        self.assertEqual(1, len(steps))
        self.assertEqual('service.disable', steps[0].op)
        self.assertEqual({'host': 'h1', 'service_id': 'svc-h1',
                          'reason': 'gpuclient: PSU'}, steps[0].args)
        # undone by enabling the service again
        self.assertEqual('service.enable', steps[0].inverse.op)

    def test_disabled_services_are_left(self):
        rows, steps = cordon.cordon([
            service('ours', 'disabled', 'gpuclient: maintenance'),
            service('theirs', 'disabled', 'broken fan')])
        self.assertEqual([], steps)
        self.assertEqual([cordon.ALREADY_CORDONED, cordon.NOT_OURS],
                         [r['action'] for r in rows])
        self.assertEqual('broken fan', rows[1]['reason'])

    def test_apply_rows(self):
        rows, _steps = cordon.cordon([service('h1')])
        self.assertEqual('enabled', cordon.apply_rows(rows, True)[0][
            'status'])
        self.assertEqual('disabled', cordon.apply_rows(rows, False)[0][
            'status'])


class TestUncordon(testtools.TestCase):

    def test_ours_theirs_and_enabled(self):
        rows, steps, others = cordon.uncordon([
            service('ours', 'disabled', 'gpuclient: maintenance'),
            service('theirs', 'disabled', 'broken fan'),
            service('anon', 'disabled'),
            service('up')])
        self.assertEqual(
            [cordon.UNCORDON, cordon.NOT_OURS, cordon.NOT_OURS,
             cordon.ALREADY_ENABLED], [r['action'] for r in rows])
        self.assertEqual(['service.enable'], [s.op for s in steps])
        self.assertEqual({'host': 'ours', 'service_id': 'svc-ours'},
                         steps[0].args)
        # undone by disabling it again with the reason it had
        self.assertEqual('gpuclient: maintenance',
                         steps[0].inverse.args['reason'])
        self.assertEqual([('theirs', 'broken fan'), ('anon', None)], others)

    def test_others_are_named(self):
        text = cordon.others_text([('theirs', 'broken fan'), ('anon', None)])
        self.assertIn('theirs (broken fan)', text)
        self.assertIn('anon (no reason given)', text)
        self.assertIn('openstack compute service set --enable', text)

    def test_apply_rows_clears_the_reason(self):
        rows, _s, _o = cordon.uncordon([
            service('ours', 'disabled', 'gpuclient: maintenance')])
        self.assertEqual({'host': 'ours', 'status': 'enabled',
                          'reason': None, 'action': cordon.UNCORDON},
                         cordon.apply_rows(rows, False)[0])


class TestDraining(testtools.TestCase):

    def test_a_drains_cordon_is_marked_apart(self):
        rows, steps = cordon.cordon([
            service('up'), service('ours', 'disabled', 'gpuclient: psu'),
            service('theirs', 'disabled', 'broken fan')], 'fw',
            undone=False, draining=True)
        self.assertEqual(['gpuclient: draining: fw'] * 2,
                         [s.args['reason'] for s in steps])
        self.assertEqual([None, None], [s.inverse for s in steps])
        self.assertEqual(cordon.NOT_OURS, rows[2]['action'])
        self.assertTrue(cordon.is_draining('gpuclient: draining: fw'))
        self.assertTrue(cordon.is_ours('gpuclient: draining: fw'))
        self.assertFalse(cordon.is_draining('gpuclient: fw'))

    def test_drained_gives_the_ordinary_reason_back(self):
        steps = cordon.drained([
            service('d', 'disabled', 'gpuclient: draining: fw'),
            service('ours', 'disabled', 'gpuclient: fw'),
            service('theirs', 'disabled', 'broken fan'), service('up')],
            'fw')
        self.assertEqual([('d', 'gpuclient: fw')],
                         [(s.args['host'], s.args['reason']) for s in steps])

    def test_uncordon_of_a_drains_service_needs_force(self):
        held = service('d', 'disabled', 'gpuclient: draining: fw')
        rows, steps, _others = cordon.uncordon([held])
        self.assertEqual([cordon.HELD_BY_DRAIN], [r['action'] for r in rows])
        self.assertEqual([], steps)
        _rows, steps, _others = cordon.uncordon([held], force=True)
        self.assertEqual(['service.enable'], [s.op for s in steps])
        self.assertEqual([('d', 'gpuclient: draining: fw')],
                         cordon.held_by_drain([held, service('up')]))
        self.assertIn('--force', cordon.held_text([('d', 'x')]))

    def test_reason_length_counts_the_marker(self):
        self.assertIsNone(cordon.reason_problem('x' * 244))
        self.assertIn('at most 244', cordon.reason_problem('x' * 245))
        self.assertIsNone(cordon.reason_problem('x' * 234, draining=True))
        self.assertIn('at most 234',
                      cordon.reason_problem('x' * 235, draining=True))
        self.assertIsNone(cordon.reason_problem(None, draining=True))
