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

"""Contract tests: every public member of the client layer, real services.

One short test per public method or property of each client class of
gpuclient/cloud/ (``CONTRACTS`` maps a class to its test case; the
unit test gpuclient/tests/unit/test_contract_coverage.py fails when a
member has no ``test_<member>`` here). Each test calls the member against
the real cloud and checks the answer (or the write) against what plain
openstacksdk reads, never through gpuclient's own client. In process, no
server boots; lists that other tests change meanwhile are compared with
the SDK's reads before and after.

Paging (issue 21, defect 9) is exercised with a page size of one where
the member takes one: Ironic's and Glance's ``next`` links are followed.
"""

import datetime
import uuid as uuid_mod

import openstack

from gpuclient.cloud import baremetal as baremetal_mod
from gpuclient.cloud import client as gpu_client
from gpuclient.cloud import compute as compute_mod
from gpuclient.cloud import errors
from gpuclient.cloud import identity as identity_mod
from gpuclient.cloud import image as image_mod
from gpuclient.cloud import placement as placement_mod
from gpuclient.cloud import reservation as reservation_mod
from gpuclient.ops import snapshot
from gpuclient.tests.functional import base
from gpuclient.tests.functional import faults

PREFIX = 'gpuclient-ft-contract'
TREE = '1.14'
TRAITS = '1.6'


def _hex():
    return uuid_mod.uuid4().hex[:10].upper()


class ContractTestCase(base.FunctionalTestCase):
    """A GpuClient and a plain openstacksdk connection to the same cloud."""

    # one GpuClient and one SDK connection for the whole module: a test
    # reads and writes through them, it never changes their set-up, and
    # authenticating twice per test was most of the suite's time
    _shared = {}

    def setUp(self):
        super().setUp()
        if self.cloud not in self._shared:
            self._shared[self.cloud] = (faults.make_client(self.cloud),
                                        openstack.connect(cloud=self.cloud))
        self.gpu, self.sdk = self._shared[self.cloud]

    # plain reads -----------------------------------------------------------

    def rest(self, service, path, version=None, **params):
        """JSON of a GET through the SDK's own proxy of SERVICE."""
        proxy = getattr(self.sdk, service)
        response = proxy.get(path, microversion=version, params=params)
        self.assertLess(response.status_code, 400, response.text)
        return response.json() if response.content else None

    def root(self, host=base.PLAIN_HOST):
        """The root provider uuid of HOST (Nova's hypervisor id)."""
        for hv in self.sdk.compute.hypervisors(details=True):
            if hv.service_details and hv.service_details.get(
                    'host') == host:
                return hv.id
        self.fail('no hypervisor of host %s' % host)

    def sdk_traits(self, uuid):
        return set(self.rest('placement', '/resource_providers/%s/traits'
                             % uuid, TRAITS)['traits'])

    def sdk_trait_exists(self, name):
        response = self.sdk.placement.get('/traits/%s' % name,
                                          microversion=TRAITS)
        return response.status_code == 204

    def new_trait(self):
        """A custom trait made with the SDK; deleted at cleanup."""
        name = 'CUSTOM_FT_CONTRACT_%s' % _hex()
        self.sdk.placement.put('/traits/%s' % name, microversion=TRAITS)
        self.addCleanup(self.sdk.placement.delete, '/traits/%s' % name,
                        microversion=TRAITS)
        return name

    def unique(self, what):
        return '%s-%s-%s' % (PREFIX, what, uuid_mod.uuid4().hex[:8])

    def between(self, before, got, after, what):
        """GOT, read between the SDK's BEFORE and AFTER, is consistent."""
        before, after, got = set(before), set(after), set(got)
        self.assertLessEqual(before & after, got, what)
        self.assertLessEqual(got, before | after, what)


class TestPlacement(ContractTestCase):

    def setUp(self):
        super().setUp()
        self.p = self.gpu.placement

    @base.needs('plain')
    def test_endpoint(self):
        self.assertEqual(self.sdk.placement.get_endpoint().rstrip('/'),
                         self.p.endpoint)

    @base.needs('plain')
    def test_max_version(self):
        data = self.sdk.placement.get_endpoint_data()
        self.assertEqual(tuple(int(v) for v in data.max_microversion[:2]),
                         self.p.max_version())

    @base.needs('plain')
    def test_require(self):
        self.assertIsNone(self.p.require((1, 0), 'x'))
        major, minor = self.p.max_version()
        self.assertRaises(errors.APIError, self.p.require,
                          (major, minor + 1), 'x')

    @base.needs('plain')
    def test_get(self):
        self.assertEqual(self.rest('placement', '/traits', TRAITS,
                                   name='startswith:HW_CPU'),
                         self.p.get('/traits', (1, 6), 'x',
                                    params={'name': 'startswith:HW_CPU'}))

    @base.needs('plain')
    def test_resource_providers(self):
        sdk = {rp['uuid']: rp['root_provider_uuid'] for rp in self.rest(
            'placement', '/resource_providers', TREE)['resource_providers']}
        found = self.p.resource_providers()
        got = {rp['uuid']: rp['root_provider_uuid'] for rp in found}
        self.assertEqual(sdk, got)
        # Placement's own keys (pager.wire), not the SDK's attributes
        self.assertEqual({'uuid', 'name', 'generation', 'links',
                          'parent_provider_uuid', 'root_provider_uuid'},
                         set(found[0]))

    @base.needs('plain')
    def test_resource_classes(self):
        sdk = {rc['name'] for rc in self.rest(
            'placement', '/resource_classes', '1.2')['resource_classes']}
        self.assertEqual(sdk, set(self.p.resource_classes()))

    @base.needs('plain')
    def test_allocation_candidates(self):
        root = self.root()
        got = self.p.allocation_candidates(
            {'VCPU': 1}, version=(1, 31), in_tree=root)
        sdk = self.rest('placement', '/allocation_candidates', '1.31',
                        resources='VCPU:1', in_tree=root)
        self.assertEqual(set(sdk['provider_summaries']),
                         set(got['provider_summaries']))
        self.assertTrue(got['allocation_requests'])

    @base.needs('plain')
    def test_candidates_query(self):
        root = self.root()
        got = self.p.candidates_query([('resources', 'VCPU:1'),
                                       ('in_tree', root)])
        sdk = self.rest('placement', '/allocation_candidates', '1.36',
                        resources='VCPU:1', in_tree=root)
        self.assertEqual(len(sdk['allocation_requests']),
                         len(got['allocation_requests']))

    @base.needs('plain')
    def test_project_usages(self):
        project = self.sdk.current_project_id
        sdk = self.rest('placement', '/usages', '1.9', project_id=project)
        self.assertEqual(sdk['usages'], self.p.project_usages(project))

    @base.needs('plain')
    def test_provider_allocations(self):
        root = self.root()
        sdk = self.rest('placement', '/resource_providers/%s/allocations'
                        % root, '1.0')['allocations']
        self.assertEqual({c: a['resources'] for c, a in sdk.items()},
                         self.p.provider_allocations(root))

    @base.needs('plain')
    def test_consumer_allocations(self):
        server = self.boot(self.create_flavor({})['name'])
        sdk = self.rest('placement', '/allocations/%s' % server['id'],
                        '1.0')['allocations']
        got = self.p.consumer_allocations(server['id'])
        self.assertEqual({rp: a['resources'] for rp, a in sdk.items()},
                         got)
        self.assertTrue(got)

    @base.needs('plain')
    def test_providers_allocations(self):
        root = self.root()
        sdk = self.rest('placement', '/resource_providers/%s/allocations'
                        % root, '1.0')['allocations']
        self.assertEqual({root: {c: a['resources'] for c, a in sdk.items()}},
                         self.p.providers_allocations([root, root]))

    @base.needs('plain')
    def test_provider_detail(self):
        root = self.root()
        detail = self.p.provider_detail(root, with_traits=True)
        inv = self.rest('placement', '/resource_providers/%s/inventories'
                        % root, '1.0')['inventories']
        self.assertEqual(inv, detail['inventories'])
        self.assertIn('VCPU', detail['usages'])
        self.assertEqual(self.sdk_traits(root), set(detail['traits']))
        vcpu = inv['VCPU']
        summary = snapshot.provider_summary(detail)
        self.assertEqual(int((vcpu['total'] - vcpu['reserved'])
                             * vcpu['allocation_ratio']),
                         summary['resources']['VCPU']['capacity'])

    @base.needs('plain')
    def test_provider_details(self):
        root = self.root()
        details = self.p.provider_details([root])
        inv = self.rest('placement', '/resource_providers/%s/inventories'
                        % root, '1.0')['inventories']
        self.assertEqual({root}, set(details))
        self.assertEqual(inv, details[root]['inventories'])
        self.assertNotIn('traits', details[root])

    @base.needs('plain')
    def test_providers_inventories(self):
        root = self.root()
        inv = self.rest('placement', '/resource_providers/%s/inventories'
                        % root, '1.0')['inventories']
        self.assertEqual({root: inv}, self.p.providers_inventories([root]))
        self.assertEqual({}, self.p.providers_inventories([]))

    @base.needs('plain')
    def test_send(self):
        trait = 'CUSTOM_FT_CONTRACT_%s' % _hex()
        self.addCleanup(self.sdk.placement.delete, '/traits/%s' % trait,
                        microversion=TRAITS)
        self.assertIsNone(self.p.send('PUT', '/traits/%s' % trait, (1, 6),
                                      'x'))
        self.assertTrue(self.sdk_trait_exists(trait))

    @base.needs('plain')
    def test_inventories(self):
        root = self.root()
        sdk = self.rest('placement', '/resource_providers/%s/inventories'
                        % root, '1.0')['inventories']
        self.assertEqual(sdk, self.p.inventories(root))

    def test_release_reserved(self):
        # a provider of the test's own (no Nova behind it) whose one unit
        # is reserved, as Nova leaves a one-time-use device
        rc = 'CUSTOM_FT_CONTRACT_%s' % _hex()
        self.sdk.placement.put('/resource_classes/%s' % rc,
                               microversion='1.7')
        self.addCleanup(self.sdk.placement.delete,
                        '/resource_classes/%s' % rc, microversion='1.7')
        made = self.sdk.placement.post(
            '/resource_providers', json={'name': self.unique('otu')},
            microversion='1.20').json()
        uuid = made['uuid']
        self.addCleanup(self.sdk.placement.delete,
                        '/resource_providers/%s' % uuid, microversion='1.0')
        response = self.sdk.placement.put(
            '/resource_providers/%s/inventories' % uuid,
            json={'inventories': {rc: {'total': 1, 'reserved': 1}},
                  'resource_provider_generation': made['generation']},
            microversion='1.26')  # reserved may equal total from 1.26
        self.assertEqual(200, response.status_code, response.text)
        self.assertTrue(self.p.release_reserved(uuid, rc))
        inventory = self.rest('placement', '/resource_providers/%s/'
                              'inventories' % uuid, '1.0')['inventories']
        self.assertEqual(0, inventory[rc]['reserved'])
        self.assertEqual(1, inventory[rc]['total'])
        # nothing reserved any more: nothing written
        self.assertFalse(self.p.release_reserved(uuid, rc))

    @base.needs('plain')
    def test_traits(self):
        root = self.root()
        traits, generation = self.p.traits(root)
        self.assertEqual(self.sdk_traits(root), set(traits))
        self.assertIsInstance(generation, int)

    @base.needs('plain')
    def test_update_traits(self):
        root, trait = self.root(), self.new_trait()
        self.addCleanup(self.p.update_traits, root, remove=[trait])
        self.assertEqual(({trait}, set()),
                         self.p.update_traits(root, add=[trait]))
        self.assertIn(trait, self.sdk_traits(root))
        self.assertEqual((set(), {trait}),
                         self.p.update_traits(root, remove=[trait]))
        self.assertNotIn(trait, self.sdk_traits(root))

    def sdk_aggregates(self, uuid):
        return set(self.rest('placement', '/resource_providers/%s/aggregates'
                             % uuid, '1.19')['aggregates'])

    @base.needs('plain')
    def test_aggregates(self):
        root = self.root()
        aggregates, generation = self.p.aggregates(root)
        self.assertEqual(self.sdk_aggregates(root), set(aggregates))
        self.assertIsInstance(generation, int)

    @base.needs('plain')
    def test_update_aggregates(self):
        root, agg = self.root(), str(uuid_mod.uuid4())
        self.addCleanup(self.p.update_aggregates, root, remove=[agg])
        self.assertEqual(({agg}, set()),
                         self.p.update_aggregates(root, add=[agg]))
        self.assertIn(agg, self.sdk_aggregates(root))
        self.p.update_aggregates(root, remove=[agg])
        self.assertNotIn(agg, self.sdk_aggregates(root))

    @base.needs('plain')
    def test_existing_traits(self):
        trait = self.new_trait()
        missing = 'CUSTOM_FT_CONTRACT_%s' % _hex()
        self.assertEqual({trait, 'HW_CPU_X86_AVX'}, self.p.existing_traits(
            {trait, missing, 'HW_CPU_X86_AVX'}))

    @base.needs('plain')
    def test_ensure_traits(self):
        have = self.new_trait()
        new = 'CUSTOM_FT_CONTRACT_%s' % _hex()
        self.addCleanup(self.sdk.placement.delete, '/traits/%s' % new,
                        microversion=TRAITS)
        self.assertEqual({new}, self.p.ensure_traits({have, new}))
        self.assertTrue(self.sdk_trait_exists(new))

    @base.needs('plain')
    def test_create_trait(self):
        trait = 'CUSTOM_FT_CONTRACT_%s' % _hex()
        self.addCleanup(self.sdk.placement.delete, '/traits/%s' % trait,
                        microversion=TRAITS)
        self.p.create_trait(trait)
        self.p.create_trait(trait)  # again: PUT is idempotent
        self.assertTrue(self.sdk_trait_exists(trait))

    @base.needs('plain')
    def test_delete_trait(self):
        root, trait = self.root(), self.new_trait()
        self.p.update_traits(root, add=[trait])
        self.addCleanup(self.p.update_traits, root, remove=[trait])
        self.assertFalse(self.p.delete_trait(trait))  # a provider has it
        self.assertTrue(self.sdk_trait_exists(trait))
        self.p.update_traits(root, remove=[trait])
        self.assertTrue(self.p.delete_trait(trait))
        self.assertFalse(self.sdk_trait_exists(trait))
        self.assertTrue(self.p.delete_trait(trait))  # gone already

    @base.needs('plain')
    def test_providers_with_trait(self):
        root = self.root()
        trait = sorted(self.sdk_traits(root))[0]
        sdk = {rp['uuid'] for rp in self.rest(
            'placement', '/resource_providers', '1.18',
            required=trait)['resource_providers']}
        self.assertIn(root, sdk)
        self.assertEqual(sdk, self.p.providers_with_trait(trait))

    @base.needs('plain')
    def test_members_of(self):
        root, agg = self.root(), str(uuid_mod.uuid4())
        self.assertEqual(set(), self.p.members_of(agg))
        self.p.update_aggregates(root, add=[agg])
        self.addCleanup(self.p.update_aggregates, root, remove=[agg])
        sdk = {rp['uuid'] for rp in self.rest(
            'placement', '/resource_providers', TREE,
            member_of=agg)['resource_providers']}
        self.assertEqual({root}, sdk)
        self.assertEqual(sdk, self.p.members_of(agg))


class TestPlacementSnapshot(ContractTestCase):
    """ops.snapshot's reads of Placement (not a client class: not in
    CONTRACTS)."""

    @base.needs('plain')
    def test_placement_snapshot(self):
        root = self.root()
        snap = snapshot.placement_snapshot(self.gpu.placement, set(),
                                           wanted_roots={root})
        sdk = {rp['uuid'] for rp in self.rest(
            'placement', '/resource_providers', TREE)['resource_providers']}
        self.assertEqual(sdk, set(snap.providers))
        self.assertEqual(set(), snap.missing_roots({root}))
        self.assertIn('VCPU', snap.summaries[root]['resources'])


class TestCompute(ContractTestCase):

    def setUp(self):
        super().setUp()
        self.c = self.gpu.compute

    def sdk_aggregate(self, name=None):
        """An aggregate made with the SDK (deleted at cleanup)."""
        agg = self.sdk.compute.create_aggregate(
            name=name or self.unique('agg'))
        self.addCleanup(self._delete_aggregate, agg.id)
        return agg

    def _delete_aggregate(self, agg_id):
        agg = self.sdk.compute.get_aggregate(agg_id) if any(
            a.id == agg_id for a in self.sdk.compute.aggregates()) else None
        if agg is None:
            return
        for host in agg.hosts or []:
            self.sdk.compute.remove_host_from_aggregate(agg, host)
        self.sdk.compute.delete_aggregate(agg, ignore_missing=True)

    def sdk_flavor(self, public=True):
        flavor = self.sdk.compute.create_flavor(
            name=self.unique('flavor'), ram=64, vcpus=1, disk=0,
            is_public=public)
        self.addCleanup(self.sdk.compute.delete_flavor, flavor.id,
                        ignore_missing=True)
        return flavor

    def sdk_specs(self, flavor_id):
        return dict(self.sdk.compute.fetch_flavor_extra_specs(
            flavor_id).extra_specs or {})

    def sdk_access(self, flavor_id):
        return sorted(a['tenant_id']
                      for a in self.sdk.compute.get_flavor_access(flavor_id))

    @base.needs('plain')
    def test_require(self):
        # not given: every pinned version goes
        self.assertIsNone(self.c.require('2.40', '2.47', '2.53', '2.61'))
        # given lower: refused, and the call it guards is never sent
        lower = compute_mod.Compute(self.c._proxy, '2.1')
        self.assertRaises(errors.APIError, lower.require, '2.53')
        self.assertRaises(errors.APIError, lower.hypervisors)
        # given higher: the pinned version is sent, the answer the same
        higher = compute_mod.Compute(self.c._proxy, '2.90')
        self.assertIsNone(higher.require('2.53'))
        self.assertEqual(sorted(hv['id'] for hv in self.c.hypervisors()),
                         sorted(hv['id'] for hv in higher.hypervisors()))

    @base.needs('plain')
    def test_max_version(self):
        data = self.sdk.compute.get_endpoint_data()
        self.assertEqual(tuple(int(v) for v in data.max_microversion[:2]),
                         self.c.max_version())

    @base.needs('plain')
    def test_hypervisors(self):
        sdk = {hv.id: hv.service_details['host']
               for hv in self.sdk.compute.hypervisors(details=True)}
        got = {hv['id']: hv['service']['host'] for hv in self.c.hypervisors()}
        self.assertEqual(sdk, got)

    @base.needs('plain')
    def test_aggregates(self):
        agg = self.sdk_aggregate()
        self.sdk.compute.set_aggregate_metadata(agg, {'gpuclient_ft': 'x'})
        mine = [a for a in self.c.aggregates() if a.id == agg.id]
        self.assertEqual([agg.name], [a.name for a in mine])
        self.assertEqual('x', mine[0].metadata['gpuclient_ft'])

    @base.needs('plain')
    def test_compute_services(self):
        sdk = {(s.host, s.availability_zone, s.status) for s in
               self.sdk.compute.services(binary='nova-compute')}
        got = {(s['host'], s['zone'], s['status'])
               for s in self.c.compute_services()}
        self.assertEqual(sdk, got)

    def _sdk_service(self, host):
        return [s for s in self.sdk.compute.services(binary='nova-compute')
                if s.host == host][0]

    @base.needs('plain')
    def test_set_service_status(self):
        service = self._sdk_service(base.PLAIN_HOST)
        if service.status != 'enabled':
            self.skipTest('%s is disabled: not ours to touch'
                          % base.PLAIN_HOST)
        self.addCleanup(self.sdk.compute.enable_service, service)
        reason = 'gpuclient: %s' % self.unique('contract')
        got = self.c.set_service_status(service.id, False, reason)
        self.assertEqual(('disabled', reason),
                         (got['status'], got['disabled_reason']))
        sdk = self._sdk_service(base.PLAIN_HOST)
        self.assertEqual(('disabled', reason),
                         (sdk.status, sdk.disabled_reason))
        self.c.set_service_status(service.id, True)
        sdk = self._sdk_service(base.PLAIN_HOST)
        self.assertEqual(('enabled', None),
                         (sdk.status, sdk.disabled_reason))

    @base.needs('vgpu', 'plain')
    def test_host_has_servers(self):
        for host in (base.PLAIN_HOST, base.VGPU_HOST):
            before = any(True for _s in self.sdk.compute.servers(
                all_projects=True, compute_host=host))
            got = self.c.host_has_servers(host)
            after = any(True for _s in self.sdk.compute.servers(
                all_projects=True, compute_host=host))
            if before == after:
                self.assertEqual(before, got, host)
        self.assertFalse(self.c.host_has_servers('gpuclient-no-such-host'))

    @base.needs('plain')
    def test_create_aggregate(self):
        name = self.unique('agg')
        made = self.c.create_aggregate(name)
        self.addCleanup(self._delete_aggregate, made.id)
        sdk = self.sdk.compute.get_aggregate(made.id)
        self.assertEqual((name, None), (sdk.name, sdk.availability_zone))

    @base.needs('plain')
    def test_set_aggregate_metadata(self):
        agg = self.sdk_aggregate()
        self.c.set_aggregate_metadata(agg, {'gpuclient_ft': 'a',
                                            'gone': 'b'})
        self.c.set_aggregate_metadata(agg, {'gone': None})
        self.assertEqual({'gpuclient_ft': 'a'},
                         self.sdk.compute.get_aggregate(agg.id).metadata)

    @base.needs('plain')
    def test_add_host(self):
        agg = self.sdk_aggregate()
        self.c.add_host(agg, base.PLAIN_HOST)
        self.assertEqual([base.PLAIN_HOST],
                         self.sdk.compute.get_aggregate(agg.id).hosts)
        self.assertRaises(errors.Conflict, self.c.add_host, agg,
                          base.PLAIN_HOST)

    @base.needs('plain')
    def test_remove_host(self):
        agg = self.sdk_aggregate()
        self.sdk.compute.add_host_to_aggregate(agg, base.PLAIN_HOST)
        self.c.remove_host(agg, base.PLAIN_HOST)
        self.assertEqual([], self.sdk.compute.get_aggregate(agg.id).hosts)
        self.assertRaises(errors.NotFound, self.c.remove_host, agg,
                          base.PLAIN_HOST)

    @base.needs('plain')
    def test_delete_aggregate(self):
        agg = self.sdk_aggregate()
        self.c.delete_aggregate(agg)
        self.assertIsNone(self.sdk.compute.find_aggregate(agg.id))
        self.c.delete_aggregate(agg)  # gone already: no error

    @base.needs('plain')
    def test_get_aggregate(self):
        agg = self.sdk_aggregate()
        self.sdk.compute.add_host_to_aggregate(agg, base.PLAIN_HOST)
        got = self.c.get_aggregate(agg)
        self.assertEqual((agg.id, [base.PLAIN_HOST]), (got.id, got.hosts))

    @base.needs('plain')
    def test_flavors(self):
        public, private = self.sdk_flavor(), self.sdk_flavor(public=False)
        self.sdk.compute.create_flavor_extra_specs(public, {'a:b': '1'})
        got = {f['id']: f for f in self.c.flavors()}
        self.assertEqual({'a:b': '1'}, got[public.id]['extra_specs'])
        self.assertFalse(got[private.id]['os-flavor-access:is_public'])
        sdk = {f.id for f in self.sdk.compute.flavors(is_public=None)}
        self.assertLessEqual({public.id, private.id}, sdk)

    @base.needs('plain')
    def test_find_flavor(self):
        flavor = self.sdk_flavor()
        self.assertEqual(flavor.id, self.c.find_flavor(flavor.id)['id'])
        self.assertEqual(flavor.id, self.c.find_flavor(flavor.name)['id'])
        self.assertIsNone(self.c.find_flavor(self.unique('none'),
                                             ignore_missing=True))
        self.assertRaises(errors.NotFound, self.c.find_flavor,
                          self.unique('none'))

    @base.needs('plain')
    def test_get_flavor(self):
        flavor = self.sdk_flavor()
        self.sdk.compute.create_flavor_extra_specs(flavor, {'a:b': '1'})
        got = self.c.get_flavor(flavor.id)
        self.assertEqual((flavor.id, flavor.name, {'a:b': '1'}),
                         (got['id'], got['name'], got['extra_specs']))
        # by ID only: the name of an existing flavor is no ID
        self.assertIsNone(self.c.get_flavor(flavor.name))

    @base.needs('plain')
    def test_create_flavor(self):
        name = self.unique('flavor')
        made = self.c.create_flavor(name=name, ram=64, vcpus=1, disk=0,
                                    description='contract')
        self.addCleanup(self.sdk.compute.delete_flavor, made['id'],
                        ignore_missing=True)
        sdk = self.sdk.compute.get_flavor(made['id'])
        self.assertEqual((name, 64, 1, 0, 'contract'),
                         (sdk.name, sdk.ram, sdk.vcpus, sdk.disk,
                          sdk.description))

    @base.needs('plain')
    def test_update_flavor_description(self):
        flavor = self.sdk_flavor()
        self.assertEqual('for GPUs', self.c.update_flavor_description(
            flavor.id, 'for GPUs'))
        self.assertEqual('for GPUs',
                         self.sdk.compute.get_flavor(flavor.id).description)
        # None: no description (Nova's null)
        self.assertIsNone(self.c.update_flavor_description(flavor.id, None))
        self.assertIsNone(self.sdk.compute.get_flavor(flavor.id).description)

    @base.needs('plain')
    def test_set_flavor_extra_specs(self):
        flavor = self.sdk_flavor()
        self.assertEqual({'x:y': 'z'}, self.c.set_flavor_extra_specs(
            flavor.id, {'x:y': 'z'}))
        self.assertEqual({'x:y': 'z'}, self.sdk_specs(flavor.id))

    @base.needs('plain')
    def test_add_flavor_access(self):
        flavor = self.sdk_flavor(public=False)
        project = self.sdk.current_project_id
        self.c.add_flavor_access(flavor.id, project)
        self.assertEqual([project], self.sdk_access(flavor.id))

    @base.needs('plain')
    def test_remove_flavor_access(self):
        flavor = self.sdk_flavor(public=False)
        project = self.sdk.current_project_id
        self.sdk.compute.flavor_add_tenant_access(flavor, project)
        self.c.remove_flavor_access(flavor.id, project)
        self.assertEqual([], self.sdk_access(flavor.id))

    @base.needs('plain')
    def test_delete_flavor_extra_spec(self):
        flavor = self.sdk_flavor()
        self.sdk.compute.create_flavor_extra_specs(
            flavor, {'a:b': '1', 'c': '2'})
        self.c.delete_flavor_extra_spec(flavor.id, 'a:b')
        self.c.delete_flavor_extra_spec(flavor.id, 'a:b')  # gone: no error
        self.assertEqual({'c': '2'}, self.sdk_specs(flavor.id))

    @base.needs('plain')
    def test_flavor_access(self):
        flavor = self.sdk_flavor(public=False)
        project = self.sdk.current_project_id
        self.sdk.compute.flavor_add_tenant_access(flavor, project)
        self.assertEqual(self.sdk_access(flavor.id),
                         self.c.flavor_access(flavor.id))
        self.assertEqual([project], self.c.flavor_access(flavor.id))

    @base.needs('plain')
    def test_delete_flavor(self):
        flavor = self.sdk_flavor()
        self.c.delete_flavor(flavor.id)
        self.assertIsNone(self.sdk.compute.find_flavor(flavor.id))

    def sdk_server_ids(self):
        return {s.id for s in self.sdk.compute.servers(all_projects=True)}

    @base.needs('plain')
    def test_servers_detail(self):
        before = self.sdk_server_ids()
        got = self.c.servers_detail(all_projects=True)
        after = self.sdk_server_ids()
        self.between(before, [s['id'] for s in got], after, 'servers')
        for server in got:
            self.assertIn('extra_specs', server['flavor'])

    def plain_server(self):
        """A server of a plain flavor (booted with plain OSC, deleted at
        cleanup)."""
        return self.boot(self.create_flavor({})['name'])

    @base.needs('plain')
    def test_get_server(self):
        server = self.plain_server()
        sdk = self.rest('compute', '/servers/%s' % server['id'],
                        '2.47')['server']
        got = self.c.get_server(server['id'])
        self.assertEqual(
            (sdk['OS-EXT-SRV-ATTR:host'], sdk['status'], sdk['flavor']),
            (got['OS-EXT-SRV-ATTR:host'], got['status'], got['flavor']))
        self.assertIsNone(self.c.get_server(str(uuid_mod.uuid4())))

    @base.needs('plain')
    def test_server_action(self):
        server = self.plain_server()
        self.c.server_action(server['id'], 'shelve')
        shelved = self.sdk.compute.wait_for_server(
            self.sdk.compute.get_server(server['id']),
            status='SHELVED_OFFLOADED', wait=120, interval=0.5)
        self.assertEqual('SHELVED_OFFLOADED', shelved.status)
        # Nova's own refusal comes back as gpuclient's error
        self.assertRaises(errors.APIError, self.c.server_action,
                          server['id'], 'confirmResize')

    @base.needs('plain')
    def test_migrations(self):
        def sdk():
            return {m['uuid'] for m in self.rest(
                'compute', '/os-migrations', '2.59',
                migration_type='migration')['migrations']}

        before = sdk()
        got = self.c.migrations(migration_type='migration')
        self.between(before, [m['uuid'] for m in got], sdk(), 'migrations')

    @base.needs('plain')
    def test_server_usages(self):
        end = datetime.datetime.utcnow() + datetime.timedelta(minutes=1)
        start = end - datetime.timedelta(days=1)
        fmt = '%Y-%m-%dT%H:%M:%S.%f'
        project = self.sdk.current_project_id

        def sdk():
            usage = self.rest('compute', '/os-simple-tenant-usage/%s'
                              % project, '2.40', start=start.strftime(fmt),
                              end=end.strftime(fmt))['tenant_usage']
            return {u['instance_id'] for u in usage.get('server_usages')
                    or []}

        before = sdk()
        got = self.c.server_usages(start, end, project_id=project)
        self.between(before, [u['instance_id'] for u in got], sdk(),
                     'usages')

        # every project's (the SDK's Usage list, paged by Nova's links)
        def every():
            return {u['instance_id'] for tenant in self.rest(
                'compute', '/os-simple-tenant-usage', '2.40',
                start=start.strftime(fmt), end=end.strftime(fmt),
                detailed=1)['tenant_usages']
                for u in tenant.get('server_usages') or []}

        before = every()
        got = self.c.server_usages(start, end)
        self.between(before, [u['instance_id'] for u in got], every(),
                     'every project\'s usages')

    @base.needs('plain')
    def test_project_limits(self):
        project = self.sdk.current_project_id
        absolute = self.sdk.compute.get_limits(project_id=project).absolute
        got = self.c.project_limits(project)
        self.assertEqual((absolute.instances, absolute.total_cores,
                          absolute.total_ram),
                         (got['maxTotalInstances'], got['maxTotalCores'],
                          got['maxTotalRAMSize']))


class _AtVersion:
    """A compute proxy that sends every call at VERSION (the cloud's
    maximum) instead of the one gpuclient pins: the raw ones, and the
    SDK's lists that gpuclient gives a microversion."""

    def __init__(self, proxy, version):
        self._proxy = proxy
        self._version = version

    @property
    def __class__(self):
        # the SDK's resources take a session that is a Proxy (isinstance,
        # which reads __class__): the usage list goes through Usage.list
        return type(self._proxy)

    def get(self, url, microversion=None, **kwargs):
        return self._proxy.get(url, microversion=self._version, **kwargs)

    def __getattr__(self, name):
        found = getattr(self._proxy, name)
        if not callable(found):
            return found

        def at_version(*args, **kwargs):
            if 'microversion' in kwargs:
                kwargs['microversion'] = self._version
            return found(*args, **kwargs)
        return at_version


class TestComputeQueriesAtMaximum(ContractTestCase):
    """Issue 40, rule 7: from compute API 2.102 (Nova 2026.1) Nova
    answers 400 to a query parameter its schema does not name, on every
    API. Every query the client layer sends (with each of its filters)
    goes to the test cloud at its maximum microversion; an unknown
    parameter would be a 400, which the client turns into an error.
    Nova's schemas, version by version: gpuclient/tests/unit/
    test_query_nova.py. Not a client class: not in CONTRACTS."""

    def setUp(self):
        super().setUp()
        data = self.sdk.compute.get_endpoint_data()
        self.maximum = '%d.%d' % tuple(data.max_microversion[:2])
        if tuple(data.max_microversion[:2]) < (2, 102):
            self.skipTest('compute API %s: before 2.102 Nova drops unknown '
                          'query parameters' % self.maximum)
        self.c = compute_mod.Compute(_AtVersion(self.sdk.compute,
                                                self.maximum))

    @base.needs('plain')
    def test_unknown_parameter_is_refused(self):
        """The cloud enforces 2.102: what the other test relies on."""
        response = self.sdk.compute.get(
            '/servers/detail', microversion=self.maximum,
            params={'gpuclient_no_such_filter': 1}, raise_exc=False)
        self.assertEqual(400, response.status_code, response.text)

    @base.needs('plain')
    def test_queries(self):
        end = datetime.datetime.utcnow() + datetime.timedelta(minutes=1)
        start = end - datetime.timedelta(days=1)
        project = self.sdk.current_project_id
        self.c.hypervisors()
        self.c.flavors()
        self.c.servers_detail(all_projects=True, project_id=project,
                              changes_since=start.isoformat() + 'Z',
                              host=base.PLAIN_HOST)
        self.c.migrations(status='finished', migration_type='migration',
                          host=base.PLAIN_HOST)
        self.c.server_usages(start, end)
        self.c.server_usages(start, end, project_id=project)
        # the SDK's own queries for the client layer (it negotiates up to
        # the cloud's maximum itself)
        self.gpu.compute.compute_services()
        self.gpu.compute.host_has_servers(base.PLAIN_HOST)
        self.gpu.compute.project_limits(project)


class TestImage(ContractTestCase):

    def setUp(self):
        super().setUp()
        self.i = self.gpu.image

    def sdk_image(self):
        image = self.sdk.image.create_image(
            name=self.unique('image'), disk_format='raw',
            container_format='bare', allow_duplicates=True)
        self.addCleanup(self.sdk.image.delete_image, image.id,
                        ignore_missing=True)
        return image

    def sdk_properties(self, image_id):
        return self.rest('image', '/images/%s' % image_id)

    @base.needs('plain')
    def test_images(self):
        mine = self.sdk_image()
        before = {i.id for i in self.sdk.image.images()}
        got = self.i.images(page_size=1)  # one image a page: next links
        after = {i.id for i in self.sdk.image.images()}
        self.between(before, [i['id'] for i in got], after, 'images')
        self.assertIn(mine.id, {i['id'] for i in got})
        self.assertEqual(len(got), len({i['id'] for i in got}))

    @base.needs('plain')
    def test_find_image(self):
        image = self.sdk_image()
        self.assertEqual(image.id, self.i.find_image(image.id)['id'])
        self.assertEqual(image.id, self.i.find_image(image.name)['id'])
        self.assertRaises(errors.NotFound, self.i.find_image,
                          self.unique('none'))
        # by ID only: an ID Glance does not have is not looked up by name
        self.assertEqual(image.id, self.i.find_image(image.id,
                                                     by_name=False)['id'])
        self.assertRaises(errors.NotFound, self.i.find_image,
                          str(uuid_mod.uuid4()), by_name=False)

    @base.needs('plain')
    def test_update_properties(self):
        image = self.sdk_image()
        got = self.i.update_properties(self.i.find_image(image.id),
                                       {'gpuclient_ft': 'a'})
        self.assertEqual('a', got['gpuclient_ft'])
        self.assertEqual('a', self.sdk_properties(image.id)['gpuclient_ft'])
        self.i.update_properties(self.i.find_image(image.id),
                                 {'gpuclient_ft': None})
        self.assertNotIn('gpuclient_ft', self.sdk_properties(image.id))


class TestBaremetal(ContractTestCase):

    @base.needs('plain')
    def test_nodes(self):
        from gpuclient.tests.functional import test_baremetal

        baremetal = self.gpu.baremetal
        sdk = {n.id: n.provision_state for n in self.sdk.baremetal.nodes(
            fields=['uuid', 'provision_state'])}
        if not sdk:
            # Ironic's default policy hides nodes from a project-scoped
            # token: ask as the system-scoped admin, as test_baremetal does
            ironic = test_baremetal.SystemIronic(self.cloud)
            if ironic.endpoint() is None:
                self.skipTest('this cloud has no Ironic')
            conn = openstack.connection.Connection(session=ironic.session)
            self.addCleanup(conn.close)
            sdk = {n.id: n.provision_state for n in conn.baremetal.nodes(
                fields=['uuid', 'provision_state'])}
            baremetal = baremetal_mod.Baremetal(conn)
        if not sdk:
            self.skipTest('Ironic lists no node, even to a system admin')
        # Ironic's own page size (the test cloud's [api]max_limit is 1):
        # every page is followed by its next link
        got = baremetal.nodes()
        self.assertEqual(sdk, {u: n['provision_state']
                               for u, n in got.items()})


class TestLimits(ContractTestCase):

    def setUp(self):
        super().setUp()
        self.lim = self.gpu.limits
        self.project = self.sdk.current_project_id
        self.service = next(iter(self.sdk.identity.services(
            type='compute'))).id

    def resource(self):
        return 'class:CUSTOM_FT_CONTRACT_%s' % _hex()

    def sdk_registered(self, name):
        return {r.resource_name: r for r in
                self.sdk.identity.registered_limits(
                    service_id=self.service, resource_name=name)}.get(name)

    def sdk_limit(self, name):
        return {r.resource_name: r for r in self.sdk.identity.limits(
            service_id=self.service, project_id=self.project,
            resource_name=name)}.get(name)

    def make_registered(self, name, value=5):
        made = self.sdk.identity.create_registered_limit(
            service_id=self.service, region_id=self.lim.scope()[1],
            resource_name=name, default_limit=value)
        self.addCleanup(self.sdk.identity.delete_registered_limit, made.id,
                        ignore_missing=True)
        return made

    def make_limit(self, name, value=3):
        self.make_registered(name)
        made = self.sdk.identity.create_limit(
            service_id=self.service, region_id=self.lim.scope()[1],
            project_id=self.project, resource_name=name,
            resource_limit=value)
        self.addCleanup(self.sdk.identity.delete_limit, made.id,
                        ignore_missing=True)
        return made

    @base.needs('plain')
    def test_scope(self):
        service_id, region = self.lim.scope()
        self.assertEqual(self.service, service_id)
        endpoints = {e.region_id for e in self.sdk.identity.endpoints(
            service_id=self.service)}
        self.assertIn(region, endpoints)

    @base.needs('plain')
    def test_registered(self):
        name = self.resource()
        made = self.make_registered(name, 7)
        self.assertEqual({'id': made.id, 'limit': 7, 'description': None},
                         self.lim.registered()[name])

    @base.needs('plain')
    def test_limits(self):
        name = self.resource()
        made = self.make_limit(name, 4)
        mine = [item for item in self.lim.limits(self.project)
                if item['resource_name'] == name]
        self.assertEqual([{'id': made.id, 'project_id': self.project,
                           'resource_name': name, 'resource_limit': 4,
                           'description': None}], mine)

    @base.needs('plain')
    def test_create_registered(self):
        name = self.resource()
        self.lim.create_registered(name, 9)
        made = self.sdk_registered(name)
        self.addCleanup(self.sdk.identity.delete_registered_limit, made.id)
        self.assertEqual(9, made.default_limit)

    @base.needs('plain')
    def test_update_registered(self):
        name = self.resource()
        made = self.make_registered(name, 1)
        self.lim.update_registered(made.id, 2)
        self.assertEqual(2, self.sdk_registered(name).default_limit)
        # the description alone, then the limit alone (it stays)
        self.lim.update_registered(made.id, description='d')
        self.lim.update_registered(made.id, 3)
        self.assertEqual((3, 'd'), (self.sdk_registered(name).default_limit,
                                    self.sdk_registered(name).description))

    @base.needs('plain')
    def test_delete_registered(self):
        name = self.resource()
        made = self.make_registered(name)
        self.lim.delete_registered(made.id)
        self.assertIsNone(self.sdk_registered(name))

    @base.needs('plain')
    def test_create_limit(self):
        name = self.resource()
        self.make_registered(name)
        self.lim.create_limit(self.project, name, 6)
        made = self.sdk_limit(name)
        self.addCleanup(self.sdk.identity.delete_limit, made.id)
        self.assertEqual(6, made.resource_limit)

    @base.needs('plain')
    def test_update_limit(self):
        name = self.resource()
        made = self.make_limit(name, 1)
        self.lim.update_limit(made.id, 8)
        self.assertEqual(8, self.sdk_limit(name).resource_limit)
        self.lim.update_limit(made.id, description='d')
        self.lim.update_limit(made.id, 9)
        self.assertEqual((9, 'd'), (self.sdk_limit(name).resource_limit,
                                    self.sdk_limit(name).description))

    @base.needs('plain')
    def test_delete_limit(self):
        name = self.resource()
        made = self.make_limit(name)
        self.lim.delete_limit(made.id)
        self.assertIsNone(self.sdk_limit(name))

    @base.needs('plain')
    def test_project_names(self):
        sdk = {p.id: p.name for p in self.sdk.identity.projects()}
        self.assertEqual(sdk, self.lim.project_names())

    @base.needs('plain')
    def test_find_projects(self):
        project = self.sdk.identity.get_project(self.project)
        gone = uuid_mod.uuid4().hex
        self.assertEqual({project.id: project.name},
                         self.lim.find_projects([project.id, project.name,
                                                 gone]))


class TestGpuClient(ContractTestCase):

    @base.needs('plain')
    def test_placement(self):
        self.assertIsInstance(self.gpu.placement, placement_mod.Placement)
        self.assertEqual(self.sdk.placement.get_endpoint().rstrip('/'),
                         self.gpu.placement.endpoint)

    @base.needs('plain')
    def test_compute(self):
        self.assertIsInstance(self.gpu.compute, compute_mod.Compute)
        self.assertEqual(self.sdk.compute.get_endpoint(),
                         self.gpu.compute._proxy.get_endpoint())

    @base.needs('plain')
    def test_image(self):
        self.assertIsInstance(self.gpu.image, image_mod.Image)
        self.assertEqual(self.sdk.image.get_endpoint(),
                         self.gpu.image._proxy.get_endpoint())

    @base.needs('plain')
    def test_baremetal(self):
        self.assertIsInstance(self.gpu.baremetal, baremetal_mod.Baremetal)

    @base.needs('plain')
    def test_limits(self):
        self.assertIsInstance(self.gpu.limits, identity_mod.Limits)

    @base.needs('plain')
    def test_reservation(self):
        self.assertIsInstance(self.gpu.reservation,
                              reservation_mod.Reservation)
        if not self.gpu.in_catalog('reservation'):
            self.skipTest('this cloud runs no Blazar')
        # the catalog's endpoint of the cloud's region and interface
        self.assertEqual(
            self.sdk.session.get_endpoint(
                service_type='reservation',
                interface=self.sdk.config.get_interface(),
                region_name=self.sdk.config.get_region_name()),
            self.gpu.reservation._adapter.get_endpoint())

    @base.needs('plain')
    def test_current_project_id(self):
        self.assertEqual(self.sdk.current_project_id,
                         self.gpu.current_project_id())

    @base.needs('plain')
    def test_current_project(self):
        project = self.sdk.identity.get_project(self.sdk.current_project_id)
        self.assertEqual((project.id, project.name),
                         self.gpu.current_project())

    @base.needs('plain')
    def test_in_catalog(self):
        # the catalog as Keystone lists it (one request here, none in
        # in_catalog: it reads the token's)
        kinds = {s.type for s in self.sdk.identity.services()}
        self.assertIn('compute', kinds)
        for kind in ('compute', 'placement', 'reservation'):
            self.assertEqual(kind in kinds, self.gpu.in_catalog(kind), kind)
        self.assertFalse(self.gpu.in_catalog(self.unique('none')))

    @base.needs('plain')
    def test_project_ids(self):
        project = self.sdk.identity.get_project(self.sdk.current_project_id)
        self.assertEqual([project.id], self.gpu.project_ids(
            [project.name, project.id]))
        self.assertRaises(errors.NotFound, self.gpu.project_ids,
                          [self.unique('none')])

    @base.needs('plain')
    def test_project_id(self):
        project = self.sdk.identity.get_project(self.sdk.current_project_id)
        domain = self.sdk.identity.get_domain(project.domain_id)
        self.assertEqual(project.id, self.gpu.project_id(
            project.name, domain=domain.name))

    @base.needs('plain')
    def test_domain_id(self):
        domain = self.sdk.identity.find_domain('Default')
        self.assertEqual(domain.id, self.gpu.domain_id('Default'))
        self.assertEqual(domain.id, self.gpu.domain_id(domain.id))
        self.assertRaises(errors.NotFound, self.gpu.domain_id,
                          self.unique('none'))


class TestReservation(ContractTestCase):

    def sdk_hosts(self):
        """The service hosts of Blazar's GET /v1/os-hosts, read on the
        SDK connection's session (openstacksdk has no Blazar calls)."""
        response = self.sdk.session.get(
            '/os-hosts', endpoint_filter={
                'service_type': 'reservation',
                'interface': self.sdk.config.get_interface(),
                'region_name': self.sdk.config.get_region_name()})
        return {h['service_name'] for h in response.json()['hosts']}

    @base.needs('plain')
    def test_hosts(self):
        if not self.gpu.in_catalog('reservation'):
            self.skipTest('this cloud runs no Blazar')
        before = self.sdk_hosts()
        got = self.gpu.reservation.hosts()
        self.between(before, {h['service_name'] for h in got},
                     self.sdk_hosts(), 'hosts enrolled in Blazar')
        for record in got:
            self.assertIn('hypervisor_hostname', record)


# the contract test case of each client class (test_contract_coverage)
CONTRACTS = {
    placement_mod.Placement: TestPlacement,
    compute_mod.Compute: TestCompute,
    image_mod.Image: TestImage,
    baremetal_mod.Baremetal: TestBaremetal,
    identity_mod.Limits: TestLimits,
    reservation_mod.Reservation: TestReservation,
    gpu_client.GpuClient: TestGpuClient,
}
