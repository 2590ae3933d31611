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

"""The fault-injection harness (faults.py) against a real cloud.

Proves that each fault kind does what the fault tests rely on: '500' and
'409' stop the write before it reaches the service, 'drop' and 'nonjson'
let it happen and spoil only the answer, and only the armed write fails.
Everything is created under unique names and removed through a second,
uninstrumented client.
"""

import json
import uuid

from osc_lib import exceptions

from gpuclient.cloud import errors
from gpuclient.tests.functional import base
from gpuclient.tests.functional import faults


def named_diff(before, after):
    """diff_states limited to the name-filtered parts (aggregates, flavors,
    images, the mirror of named aggregates): provider and pool traits are
    cloud-wide, and other tests change them."""
    return [line for line in faults.diff_states(before, after)
            if line[2:].startswith(('aggregates', 'flavors', 'images',
                                    'mirror'))]


class FaultHarnessTest(base.FunctionalTestCase):

    def setUp(self):
        super().setUp()
        self.client = faults.make_client(self.cloud)
        self.injector = self.useFixture(faults.FaultInjector(self.client))
        # cleanups go through a client the injector is not installed on
        self.admin = faults.make_client(self.cloud)

    # -- helpers -----------------------------------------------------------

    def aggregate_names(self):
        return {agg.name for agg in self.admin.compute.aggregates()}

    def delete_aggregate_named(self, name):
        for agg in self.admin.compute.aggregates():
            if agg.name == name:
                for host in agg.hosts or []:
                    self.admin.compute.remove_host(agg, host)
                self.admin.compute.delete_aggregate(agg)

    def delete_flavor_named(self, name):
        flavor = self.admin.compute.find_flavor(name, ignore_missing=True)
        if flavor is not None:
            self.admin.compute.delete_flavor(flavor['id'])

    def trait_exists(self, name):
        return name in self.admin.placement.existing_traits({name})

    def unique_trait(self):
        return 'CUSTOM_GPUCLIENT_FT_%s' % uuid.uuid4().hex[:12].upper()

    def assert_fired(self, method, service):
        self.assertIsNotNone(self.injector.fired)
        self.assertEqual(method, self.injector.fired[0])
        self.assertEqual(service,
                         self.injector.service_of(self.injector.fired[1]))

    # -- the fault kinds -----------------------------------------------------

    def test_500_write_is_not_made(self):
        name = self.unique_name('fault500')
        self.addCleanup(self.delete_aggregate_named, name)
        # a fresh token is fetched inside the armed window: not counted
        self.client._session.invalidate()
        self.injector.arm(1, '500')
        exc = self.assertRaises(exceptions.CommandError,
                                self.client.compute.create_aggregate, name)
        self.assertIn('500', str(exc))
        self.assert_fired('POST', 'compute')
        self.assertIn('/os-aggregates', self.injector.fired[1])
        self.assertTrue(any(
            method == 'POST' and '/v3/auth/tokens' in url
            for method, url in self.injector.requests),
            self.injector.requests)
        self.assertEqual([self.injector.fired], self.injector.writes)
        self.assertNotIn(name, self.aggregate_names())
        # only the armed write fails: the same write now goes through
        self.client.compute.create_aggregate(name)
        self.assertEqual(2, len(self.injector.writes))
        self.assertIn(name, self.aggregate_names())

    def test_drop_write_is_made(self):
        name = self.unique_name('faultdrop')
        self.addCleanup(self.delete_aggregate_named, name)
        self.injector.arm(1, 'drop')
        exc = self.assertRaises(exceptions.CommandError,
                                self.client.compute.create_aggregate, name)
        self.assertIn('cannot connect', str(exc))
        self.assert_fired('POST', 'compute')
        self.assertIn(name, self.aggregate_names())

    def test_nonjson_trait_write_is_made(self):
        trait = self.unique_trait()
        self.addCleanup(self.admin.placement.delete_trait, trait)
        self.injector.arm(1, 'nonjson')
        try:
            self.client.placement.ensure_traits({trait})
        except exceptions.CommandError:
            pass  # either answer is fine: the HTML is what is tested
        self.assert_fired('PUT', 'placement')
        self.assertTrue(self.injector.fired[1].endswith('/traits/' + trait))
        self.assertTrue(self.trait_exists(trait))

    def test_409_placement_write_is_conflict(self):
        trait = self.unique_trait()
        self.addCleanup(self.admin.placement.delete_trait, trait)
        self.injector.arm(1, '409')
        exc = self.assertRaises(errors.Conflict,
                                self.client.placement.ensure_traits, {trait})
        self.assertIn('injected conflict', str(exc))
        self.assert_fired('PUT', 'placement')
        self.assertFalse(self.trait_exists(trait))

    def test_500_image_write_is_not_made(self):
        image = self.admin.image.find_image(base.IMAGE)
        key = 'gpuclient_ft_%s' % uuid.uuid4().hex[:8]
        self.addCleanup(self.remove_image_property, image['id'], key)
        self.injector.arm(1, '500')
        self.assertRaises(exceptions.CommandError,
                          self.client.image.update_properties, image,
                          {key: 'injected'})
        self.assert_fired('PATCH', 'image')
        self.assertNotIn(key, self.admin.image.find_image(image['id']))

    def remove_image_property(self, image_id, key):
        image = self.admin.image.find_image(image_id)
        if key in image:
            self.admin.image.update_properties(image, {key: None})

    def test_bad_arm(self):
        self.assertRaises(ValueError, self.injector.arm, 1, 'timeout')
        self.assertRaises(ValueError, self.injector.arm, 0, '500')

    def test_uninstalls(self):
        other = faults.make_client(self.cloud)
        req_session = other._session.session
        before = dict(req_session.adapters)
        with faults.FaultInjector(other):
            self.assertIsNot(before['http://'], req_session.adapters['http://'])
        self.assertIs(before['http://'], req_session.adapters['http://'])
        self.assertIs(before['https://'], req_session.adapters['https://'])

    # -- counting writes and the cloud state ---------------------------------

    def test_counts_writes_only(self):
        name = self.unique_name('faultcount')
        self.addCleanup(self.delete_aggregate_named, name)
        self.injector.reset()
        self.client.compute.aggregates()
        self.assertEqual([], self.injector.writes)
        agg = self.client.compute.create_aggregate(name)
        self.client.compute.delete_aggregate(agg)
        self.assertEqual(['POST', 'DELETE'],
                         [method for method, _url in self.injector.writes])
        self.assertIsNone(self.injector.fired)

    def test_cloud_state_unchanged(self):
        # the cloud is shared (the fault matrices, in the other stream,
        # write to it all the time): two snapshots of this test's own
        # objects, taken back to back, agree; the whole cloud's has the
        # same shape
        name = self.unique_name('faultsame')
        self.addCleanup(self.delete_aggregate_named, name)
        agg = self.client.compute.create_aggregate(name)
        self.client.compute.set_aggregate_metadata(agg, {'team': 'a'})
        first = faults.cloud_state(self.client, names=[name])
        second = faults.cloud_state(self.client, names=[name])
        self.assertEqual([], faults.diff_states(first, second))
        self.assertEqual([name], list(first['aggregates']))
        self.assertEqual(first, json.loads(json.dumps(first)))
        first = faults.cloud_state(self.client)
        self.assertEqual({'aggregates', 'provider_traits', 'pool_traits',
                          'flavors', 'mirror', 'images'}, set(first))
        for traits in first['provider_traits'].values():
            self.assertTrue(all(t.startswith('CUSTOM_') for t in traits))

    @base.needs('plain')
    def test_cloud_state_sees_a_change(self):
        prefix = self.unique_name('faultstate')
        name = prefix + '-a'
        self.addCleanup(self.delete_aggregate_named, name)
        before = faults.cloud_state(self.client, names=[prefix])
        self.assertEqual({}, before['aggregates'])
        self.assertEqual({}, before['flavors'])
        agg = self.client.compute.create_aggregate(name)
        self.client.compute.set_aggregate_metadata(agg, {'gpu_pool': 'x'})
        after = faults.cloud_state(self.client, names=[prefix])
        self.assertEqual({'hosts': [], 'metadata': {'gpu_pool': 'x'},
                          'availability_zone': None},
                         after['aggregates'][name])
        diff = named_diff(before, after)
        self.assertEqual(1, len(diff), diff)
        self.assertTrue(diff[0].startswith('+ aggregates[%s]' % name), diff)
        self.assertEqual([], faults.diff_states(after, after))

        # a private flavor: specs and access list are in the snapshot
        flavor_name = prefix + '-f'
        self.addCleanup(self.delete_flavor_named, flavor_name)
        flavor = self.client.compute.create_flavor(
            name=flavor_name, vcpus=1, ram=64, disk=0,
            **{'os-flavor-access:is_public': False})
        self.client.compute.set_flavor_extra_specs(
            flavor['id'], {'resources:VGPU': '1'})
        project = self.client.current_project_id()
        self.client.compute.add_flavor_access(flavor['id'], project)
        last = faults.cloud_state(self.client, names=[prefix])
        self.assertEqual({'vcpus': 1, 'ram': 64, 'disk': 0,
                          'is_public': False,
                          'extra_specs': {'resources:VGPU': '1'},
                          'access': [project]},
                         last['flavors'][flavor_name])
        self.assertEqual(['+ flavors[%s]' % flavor_name],
                         [line.split(':')[0] for line in
                          named_diff(after, last)])

        # the Placement mirror of a host's membership, and image properties
        root = self.root_provider(base.PLAIN_HOST)
        image_name = prefix + '-img'
        image = self.openstack('image', 'create', '--disk-format', 'raw',
                               '--container-format', 'bare', '--property',
                               'trait:CUSTOM_X=required', image_name)
        self.addCleanup(self.openstack, 'image', 'delete', image['id'],
                        parse=False)
        self.addCleanup(self.admin.compute.remove_host, agg, base.PLAIN_HOST)
        self.client.compute.add_host(agg, base.PLAIN_HOST)
        final = faults.cloud_state(self.client, names=[prefix],
                                   providers=[root])
        self.assertEqual({root: [name]}, final['mirror'])
        self.assertEqual('required',
                         final['images'][image_name]['trait:CUSTOM_X'])
        self.assertNotIn('id', final['images'][image_name])
