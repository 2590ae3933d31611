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

"""One-time-use devices on real Nova and Placement (issue 38, item 2).

The test cloud's ``gpu-otu-1`` (a spare, tools/cloud/hosts.py) has one
whole GPU 10de:2335 whose ``[pci] device_spec`` says ``"one_time_use":
true``: Nova reserves its provider's inventory once a server holds it and
leaves it reserved after the delete. The proof is what Placement holds and
what Nova does: after the delete Nova refuses a boot that gpuclient said
does not fit, ``gpu device release`` lowers Placement's ``reserved``, and
the next boot takes that very device. While the first server holds it,
``gpu device show`` gives what Placement holds for the device's provider
and the server Nova placed, and ``gpu device release`` is refused with
Placement's inventory and the server's allocation unchanged (no boot of
their own: the first server serves them).
"""

import json
import os

from gpuclient.tests.functional import base

OTU_HOST = os.environ.get('GPUCLIENT_OTU_HOST', 'gpu-otu-1')
OTU_ALIAS = os.environ.get('GPUCLIENT_OTU_ALIAS', 'h200-otu')
OTU_PCI_ID = os.environ.get('GPUCLIENT_OTU_PCI_ID', '10de:2335')
OTU_CLASS = 'CUSTOM_PCI_%s' % OTU_PCI_ID.replace(':', '_').upper()
# how long Nova may take to reserve a device a server holds
RESERVE_TIMEOUT = 60


class TestOneTimeUse(base.FunctionalTestCase):

    def setUp(self):
        super().setUp()
        # the one-time-use host for this test alone (base.host_lease)
        self.assertEqual(OTU_HOST, self.host_lease('passthrough-otu'))

    def device(self):
        """(provider uuid, PCI address) of OTU_HOST's one-time-use GPU."""
        root = self.root_provider(OTU_HOST)
        for rp in self.openstack('resource', 'provider', 'list',
                                 '--os-placement-api-version', '1.14',
                                 '--in-tree', root,
                                 '--resource', '%s=1' % OTU_CLASS):
            return rp['uuid'], rp['name'].rsplit('_', 1)[1].lower()
        # reserved: no free unit, so ask by tree and class inventory
        for rp in self.openstack('resource', 'provider', 'list',
                                 '--os-placement-api-version', '1.14',
                                 '--in-tree', root):
            if OTU_CLASS in self.inventory(rp['uuid']):
                return rp['uuid'], rp['name'].rsplit('_', 1)[1].lower()
        self.fail('%s has no %s provider' % (OTU_HOST, OTU_CLASS))

    def inventory(self, uuid):
        """{class: {total, reserved, used, ...}} of provider UUID."""
        return {row['resource_class']: row for row in self.openstack(
            'resource', 'provider', 'inventory', 'list', uuid)}

    def unreserve(self, uuid):
        """Put the device back as Nova first reported it (plain
        osc-placement: the cleanup does not trust the code under test)."""
        record = self.inventory(uuid).get(OTU_CLASS)
        if record and record['reserved'] and not record['used']:
            self.openstack('resource', 'provider', 'inventory', 'class',
                           'set', uuid, OTU_CLASS, '--total',
                           str(record['total']), '--max_unit',
                           str(record['max_unit']), '--reserved', '0')

    def wait_reserved(self, uuid):
        """Placement's inventory of the device, until Nova has reserved
        it (bounded), then one assertion."""
        reserved = self.wait_for(
            'one-time-use device %s reserved' % uuid,
            lambda: self.inventory(uuid)[OTU_CLASS]['reserved'],
            lambda found: found >= 1, timeout=RESERVE_TIMEOUT, interval=1)
        self.assertGreaterEqual(
            reserved, 1, 'Nova did not reserve one-time-use device %s '
            'within %ds' % (uuid, RESERVE_TIMEOUT))

    def assert_show_is_placement(self, uuid, address, server):
        """``gpu device show HOST:ADDRESS`` gives what Placement holds for
        provider UUID (plain osc-placement: its name, inventory, usage,
        traits and the consumers of its allocations) and, when SERVER (as
        Nova shows it) holds the device, that server: its allocation's
        consumer, its name and project, on the host Nova placed it."""
        shown = self.openstack('gpu', 'device', 'show',
                               '%s:%s' % (OTU_HOST, address))
        provider = self.openstack('resource', 'provider', 'show', uuid,
                                  '--allocations')
        inventory = self.inventory(uuid)[OTU_CLASS]
        usage = {row['resource_class']: row['usage'] for row in
                 self.openstack('resource', 'provider', 'usage', 'show',
                                uuid)}
        held = usage[OTU_CLASS]
        # a free device counts what Placement can still give (total less
        # reserved); one a server holds, its unit
        total = max(inventory['total'] - inventory['reserved'], held)
        expected = {
            'provider_uuid': uuid, 'provider': provider['name'],
            'host': OTU_HOST, 'resource_class': OTU_CLASS,
            'pci_address': address, 'total': total, 'used': held,
            'state': 'in-use' if server else 'free',
            'server_ids': sorted(provider['allocations']),
            'one_time_use': True, 'traits': sorted(self.traits(uuid))}
        self.assertEqual(expected, {key: shown[key] for key in expected})
        self.assertIn('HW_PCI_ONE_TIME_USE', expected['traits'])
        if server is None:
            self.assertEqual((0, [], [], []), (
                held, shown['server_ids'], shown['servers'],
                shown['projects']))
            return
        self.assertEqual(OTU_HOST, server['OS-EXT-SRV-ATTR:host'])
        self.assertEqual((1, [server['id']], [server['name']],
                          [server['project_id']]),
                         (held, shown['server_ids'], shown['servers'],
                          shown['projects']))

    def assert_release_refused_while_held(self, uuid, address, server):
        """``gpu device release`` of the device SERVER holds: exit 1
        naming the server; Placement's inventory of the device (total,
        reserved) and the server's allocation on it unchanged."""
        before = self.inventory(uuid)[OTU_CLASS]
        rc, out, err = self.openstack_raw(
            'gpu', 'device', 'release', '%s:%s' % (OTU_HOST, address),
            '-f', 'json')
        self.assertEqual(1, rc, err)
        self.assertEqual([], json.loads(out))
        self.assertIn('is in use (%s): Placement holds an allocation on '
                      'it' % server['name'], err)
        self.assertIn('1 of 1 devices failed to release.', err)
        after = self.inventory(uuid)[OTU_CLASS]
        self.assertEqual((1, 1, 1), (after['total'], after['reserved'],
                                     after['used']))
        self.assertEqual((before['total'], before['reserved']),
                         (after['total'], after['reserved']))
        held = {row['resource_provider']: row['resources']
                for row in self.openstack(
                    'resource', 'provider', 'allocation', 'show',
                    server['id'])}
        self.assertEqual({OTU_CLASS: 1}, held.get(uuid))

    @base.needs('passthrough')
    def test_deleted_server_leaves_device_awaiting_release(self):
        self.use_spare(OTU_HOST)
        uuid, address = self.device()
        # a run that failed half-way left it reserved: start clean, and
        # leave it clean (this cleanup runs after the servers' deletes)
        self.unreserve(uuid)
        self.addCleanup(self.unreserve, uuid)
        pool = self.unique_name('t38otu')
        self.addCleanup(self.delete_pool, pool)
        self.openstack('gpu', 'pool', 'create', pool, '--mode',
                       'passthrough', '--alias', OTU_ALIAS, '--pci-id',
                       OTU_PCI_ID, '--host', OTU_HOST, parse=False)
        flavor = self.make_flavor(pool)

        first = self.boot(flavor)
        self.assertEqual(OTU_HOST, first['OS-EXT-SRV-ATTR:host'])
        self.wait_reserved(uuid)
        # while the server holds it (issue 52 item 7): gpu device show is
        # what Placement and Nova hold, and a release is refused
        self.assert_show_is_placement(uuid, address, first)
        self.assert_release_refused_while_held(uuid, address, first)
        self._delete_server(first['name'])
        # Nova's doing: reserved stays, nothing allocated
        held = self.inventory(uuid)[OTU_CLASS]
        self.assertEqual((1, 0), (held['reserved'], held['used']))

        # gpuclient counts it neither free nor stranded, but apart
        hosts = [r for r in self.openstack('gpu', 'host', 'list')
                 if r['Host'] == OTU_HOST and r['Resource Class'] == OTU_CLASS]
        self.assertEqual([(1, 0, 0, 1)], [
            (r['Total'], r['Used'], r['Free'], r['Awaiting Release'])
            for r in hosts])
        capacity = self.openstack('gpu', 'capacity', 'list', '--flavor',
                                  flavor, '--pool', pool, '--per-host')
        self.assertEqual([(0, 0, 1, 0)], [
            (r['Fits'], r['GPUs Free'], r['GPUs Awaiting Release'],
             r['Stranded']) for r in capacity])
        # and Nova agrees: no host for the flavor
        self.boot(flavor, expect_status='ERROR')
        awaiting = self.openstack('gpu', 'device', 'list',
                                  '--awaiting-release', '--host', OTU_HOST)
        self.assertEqual([(OTU_HOST, address, 'awaiting-release')], [
            (r['Host'], r['PCI Address'], r['State']) for r in awaiting])

        # the operator cleaned it: the release gives it back in Placement
        self.openstack('gpu', 'device', 'release',
                       '%s:%s' % (OTU_HOST, address))
        self.assertEqual(0, self.inventory(uuid)[OTU_CLASS]['reserved'])
        self.assert_show_is_placement(uuid, address, None)
        # and the next boot lands on that very device
        second = self.boot(flavor)
        self.assertEqual(OTU_HOST, second['OS-EXT-SRV-ATTR:host'])
        held = {row['resource_provider']: row['resources']
                for row in self.openstack(
                    'resource', 'provider', 'allocation', 'show',
                    second['id'])}
        self.assertEqual({OTU_CLASS: 1}, held.get(uuid))

    @base.needs('passthrough')
    def test_partial_failure_prints_what_was_released(self):
        """Issue 51, defect 13: one device refused, one released: the
        released one's row is printed (-f json), then "1 of 2"; Placement
        holds the release and the refused device as it was."""
        uuid, address = self.device()
        self.unreserve(uuid)
        self.addCleanup(self.unreserve, uuid)
        # what Nova leaves after a one-time-use device's server went:
        # reserved = total, no allocation (set here with plain osc-placement,
        # as Nova sets it: no boot needed)
        record = self.inventory(uuid)[OTU_CLASS]
        self.openstack('resource', 'provider', 'inventory', 'class', 'set',
                       uuid, OTU_CLASS, '--total', str(record['total']),
                       '--max_unit', str(record['max_unit']), '--reserved',
                       str(record['total']))
        self.assertEqual((1, 0), (self.inventory(uuid)[OTU_CLASS]['reserved'],
                                  self.inventory(uuid)[OTU_CLASS]['used']))
        # a passthrough GPU that is not one-time-use: refused, first
        pt_class = 'CUSTOM_PCI_10DE_2331'
        refused = [rp['uuid'] for rp in self.openstack(
            'resource', 'provider', 'list', '--os-placement-api-version',
            '1.14', '--in-tree', self.root_provider(base.PT_HOST))
            if pt_class in self.inventory(rp['uuid'])][0]
        before = self.inventory(refused)[pt_class]

        rc, out, err = self.openstack_raw(
            'gpu', 'device', 'release', refused,
            '%s:%s' % (OTU_HOST, address), '-f', 'json')
        self.assertEqual(1, rc, err)
        self.assertEqual([(OTU_HOST, address, 'released')], [
            (r['Host'], r['PCI Address'], r['Action'])
            for r in json.loads(out)])
        self.assertIn('is not a one-time-use device', err)
        self.assertIn('1 of 2 devices failed to release.', err)
        # Placement: the one released, the refused one untouched
        self.assertEqual(0, self.inventory(uuid)[OTU_CLASS]['reserved'])
        after = self.inventory(refused)[pt_class]
        self.assertEqual((before['total'], before['reserved']),
                         (after['total'], after['reserved']))
