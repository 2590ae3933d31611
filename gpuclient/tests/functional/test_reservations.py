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

"""Blazar (issue 40, rule 6) on a cloud that runs it (the test cloud:
tools/cloud/blazar.py): a real host lease on a spare passthrough host, held
as Blazar's and Nova's own state show (the lease ACTIVE, the host in the
lease's aggregate, a boot refused by BlazarFilter), and gpu capacity list,
pool show and gpu check saying so; and gpu host drain planning no move to
a host enrolled in Blazar.

Blazar has no call in openstacksdk and its OSC plugin is not installed
here: the test reads and writes Blazar's v1 API on the SDK connection's
session (service type ``reservation``).
"""

import datetime
import json
import os

from gpuclient.ops import snapshot
from gpuclient.tests.functional import base
from gpuclient.tests.functional import faults

LEASE_WAIT = 90  # seconds: Blazar's manager starts a "now" lease by events
# the host test_held_hosts_are_blazars_host_list enrols: a spare no other
# module's test boots on (test_device's one-time-use host)
ENROL_HOST = os.environ.get('GPUCLIENT_OTU_HOST', 'gpu-otu-1')


class TestBlazarLease(base.FunctionalTestCase):

    def setUp(self):
        super().setUp()
        self.conn = base._connection(self.cloud)
        kinds = {s.type for s in self.conn.identity.services()}
        if 'reservation' not in kinds:
            reason = 'this cloud runs no Blazar (no reservation service)'
            if os.environ.get('GPUCLIENT_FT_NO_SKIP') == '1':
                self.fail(reason + ' (GPUCLIENT_FT_NO_SKIP=1)')
            self.skipTest(reason)

    def blazar(self, method, path, body=None, ok=(200, 201, 202, 204)):
        response = self.conn.session.request(
            path, method, json=body, raise_exc=False,
            endpoint_filter={'service_type': 'reservation',
                             'interface': 'public'})
        self.assertIn(response.status_code, ok, response.text)
        return response.json() if response.content else None

    def freepool(self):
        """The freepool aggregate Blazar enrols hosts into (made here, and
        deleted after, when the cloud has none)."""
        names = {a['Name'] for a in self.openstack('aggregate', 'list')}
        if 'freepool' not in names:
            self.openstack('aggregate', 'create', 'freepool', parse=False)
            self.addCleanup(self.openstack_raw, 'aggregate', 'delete',
                            'freepool')

    def enrol(self, host):
        """HOST enrolled in Blazar (it moves to the freepool); taken out
        again at cleanup."""
        self.freepool()
        enrolled = self.blazar('POST', '/os-hosts', {'name': host})['host']
        self.addCleanup(self.blazar, 'DELETE',
                        '/os-hosts/%s' % enrolled['id'], ok=(204, 404))
        self.assertIn(host, self.aggregate('freepool')['hosts'])

    def lease(self, host):
        """A host lease of HOST from now: (lease, reservation id), ACTIVE;
        deleted at cleanup (the host goes back to the freepool)."""
        end = (datetime.datetime.now(datetime.timezone.utc)
               + datetime.timedelta(hours=1)).strftime('%Y-%m-%d %H:%M')
        hypervisor = self.hypervisor(host)['hypervisor_hostname']
        lease = self.blazar('POST', '/leases', {
            'name': self.unique_name('t40blazar-lease'),
            'start_date': 'now', 'end_date': end, 'events': [],
            'reservations': [{
                'resource_type': 'physical:host', 'min': 1, 'max': 1,
                'hypervisor_properties':
                    '["=", "$hypervisor_hostname", "%s"]' % hypervisor,
                'resource_properties': ''}]})['lease']
        self.addCleanup(self.blazar, 'DELETE', '/leases/%s' % lease['id'],
                        ok=(204, 404))
        lease = self.wait_for(
            'lease %s active' % lease['id'],
            lambda: self.blazar('GET', '/leases/%s' % lease['id'])['lease'],
            lambda found: found['status'] == 'ACTIVE', timeout=LEASE_WAIT,
            interval=base.POLL * 2)
        self.assertEqual('ACTIVE', lease['status'], lease)
        return lease, lease['reservations'][0]['id']

    def test_host_lease(self):
        host = base.PT_HOST2
        pool = self.unique_name('t40blazar-pt')
        self.addCleanup(self.delete_pool, pool)
        self.openstack('gpu', 'pool', 'create', pool, '--mode',
                       'passthrough', '--alias', 'h100', '--pci-id',
                       '10de:2331', '--host', host, parse=False)
        flavor = self.make_flavor(pool)
        self.use_spare(host)

        def per_host():
            rows = self.openstack('gpu', 'capacity', 'list', '--flavor',
                                  flavor, '--pool', pool, '--per-host')
            self.assertEqual([host], [r['Host'] for r in rows])
            return rows[0]

        self.assertGreater(per_host()['Fits'], 0)
        self.enrol(host)
        lease, reservation = self.lease(host)

        # the hold, from Blazar's and Nova's own state: the reservation is
        # active and the host sits in its aggregate, zone blazar_<id>
        self.assertEqual(['active'],
                         [r['status'] for r in lease['reservations']])
        held = self.aggregate(reservation)
        self.assertEqual([host], held['hosts'])
        self.assertEqual('blazar_' + reservation,
                         held['availability_zone'])
        self.assertNotIn(host, self.aggregate('freepool')['hosts'])

        # the same host, pool and flavor: nothing fits now (the reason
        # names the first flavor that would use each GPU, which may be
        # another test's: the unit tests prove the sentence)
        self.assertEqual(0, per_host()['Fits'])
        # and Nova agrees: BlazarFilter refuses the pool's only host
        server = self.boot(flavor, expect_status='ERROR')
        self.assertIn('No valid host', str(server.get('fault')))
        shown = self.openstack('gpu', 'pool', 'show', pool)
        self.assertIn('in lease aggregate %s' % reservation,
                      ' '.join(shown['gpus'][host]['held_by_blazar']))
        _rc, stdout, stderr = self.openstack_raw(
            'gpu', 'check', '--pool', pool, '--check',
            'blazar-flavor-reservation', '-f', 'json')
        found = json.loads(stdout)
        self.assertEqual([('warning', 'flavor %s' % flavor)],
                         [(f['Severity'], f['Object']) for f in found],
                         stderr)
        self.assertIn('pci_passthrough:alias', found[0]['Symptom'])

    def server_host(self, server):
        shown = self.openstack('--os-compute-api-version', '2.47', 'server',
                               'show', server['id'])
        return shown['OS-EXT-SRV-ATTR:host'], shown['status']

    def test_drain_leaves_a_held_host_out(self):
        # a pool of both passthrough hosts, its server on the first (the
        # second, a spare, is disabled while it boots)
        pool = self.unique_name('t40blazar-drain')
        self.addCleanup(self.delete_pool, pool)
        self.openstack('gpu', 'pool', 'create', pool, '--mode',
                       'passthrough', '--alias', 'h100', '--pci-id',
                       '10de:2331', '--host', base.PT_HOST, '--host',
                       base.PT_HOST2, parse=False)
        server = self.boot(self.make_flavor(pool))
        self.assertEqual((base.PT_HOST, 'ACTIVE'), self.server_host(server))
        self.use_spare(base.PT_HOST2)
        drain = ('gpu', 'host', 'drain', base.PT_HOST, '--method', 'cold',
                 '--allow-downtime')

        def planned():
            rows = self.openstack(*drain, '--dry-run')
            mine, = [r for r in rows if r['Server'] == server['id']]
            return mine

        row = planned()
        self.assertEqual(('cold', base.PT_HOST2),
                         (row['Method'], row['Destination']))
        # enrolled in Blazar, the second host takes no ordinary flavor
        # (BlazarFilter; test_host_lease shows Nova refusing a boot): the
        # server has nowhere to go, and the drain refuses before any write
        self.enrol(base.PT_HOST2)
        row = planned()
        self.assertEqual(('stays', None), (row['Method'], row['Destination']))
        self.assertIn('%s is held by Blazar' % base.PT_HOST2, row['Reason'])
        rc, _out, err = self.openstack_raw(*drain)
        self.assertNotEqual(0, rc)
        self.assertIn(server['id'], err)
        self.assertEqual((base.PT_HOST, 'ACTIVE'), self.server_host(server))
        service, = self.openstack(
            'compute', 'service', 'list', '--service', 'nova-compute',
            '--host', base.PT_HOST)
        self.assertEqual('enabled', service['Status'])

    def test_held_hosts_are_blazars_host_list(self):
        """Issue 51, defect 14: the hosts gpuclient counts as held are
        those Blazar's own host list (GET /v1/os-hosts) names, and it says
        so; where Blazar's freepool aggregate has another name
        ([nova] aggregate_freepool_name), the unit tests show the same
        (test_capacity.TestBlazar.test_freepool_of_another_name)."""
        host = ENROL_HOST
        pool = self.unique_name('t51blazar')
        self.addCleanup(self.delete_pool, pool)
        self.openstack('gpu', 'pool', 'create', pool, '--mode',
                       'passthrough', '--alias', 'h200-otu', '--pci-id',
                       '10de:2335', '--host', host, parse=False)
        self.enrol(host)
        listed = self.blazar('GET', '/os-hosts')['hosts']
        theirs = sorted({h['service_name'] for h in listed})
        self.assertIn(host, theirs)

        # gpuclient's held hosts, in this process: Blazar's list, each
        # reason saying where it comes from
        cloud = snapshot.read(faults.make_client(), with_placement=False)
        held = cloud.held_hosts()
        self.assertEqual(theirs, sorted(held))
        self.assertEqual(['enrolled and not leased, as Blazar\'s host list '
                          'says'], held[host])
        # and as an operator reads it: gpu pool show
        shown = self.openstack('gpu', 'pool', 'show', pool)
        self.assertEqual(held[host], shown['gpus'][host]['held_by_blazar'])
