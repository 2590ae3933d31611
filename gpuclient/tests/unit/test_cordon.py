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
        self.assertEqual({'host': 'h1', 'id': 'svc-h1',
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
        self.assertEqual({'host': 'ours', 'id': 'svc-ours'}, steps[0].args)
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
