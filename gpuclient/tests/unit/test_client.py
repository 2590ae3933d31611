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

"""The client layer: negotiation, microversions, error translation."""

import importlib.metadata
from unittest import mock

import fixtures
from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import fixture as ks_fixture
from openstack import config as os_config
from openstack import connection
from openstack import exceptions as sdk_exc
from openstack.compute.v2 import limits
from osc_lib import exceptions
import requests
from requests_mock.contrib import fixture as rm_fixture
import yaml

from gpuclient.cloud import client
from gpuclient.cloud import compute as compute_mod
from gpuclient.cloud import errors
from gpuclient.cloud import http
from gpuclient.cloud import identity as identity_mod
from gpuclient.cloud import placement as placement_mod
from gpuclient.cloud import versions
from gpuclient.tests.unit import base
from gpuclient.tests.unit import fakes

# openstacksdk's Trait sends its name filter to Placement from 4.21 on
_SDK_FILTERS_TRAITS = tuple(
    int(part) for part in
    importlib.metadata.version('openstacksdk').split('.')[:2]) >= (4, 21)

URL = fakes.PLACEMENT_URL
OVERRIDE_URL = 'http://placement-override.example:8780/placement'


def version_document(max_version):
    """Placement's root document (what keystoneauth discovers)."""
    return {'versions': [{
        'id': 'v1.0', 'min_version': '1.0', 'max_version': max_version,
        'status': 'CURRENT', 'links': [{'rel': 'self', 'href': ''}]}]}


class TestPlacement(base.TestCase):
    def setUp(self):
        super().setUp()
        self.cloud = fakes.FakeCloud()
        self.cloud.pci_host('gpu-pt-1')
        self.placement = self.useFixture(fakes.PlacementFixture(self.cloud))
        self.cm = self.useFixture(fakes.ClientManagerFixture(self.cloud))

    def test_version_negotiated_once_per_process(self):
        p = self.cm.gpu.placement
        self.assertEqual((1, 39), p.max_version())
        p.resource_providers()
        p.resource_classes()
        # a second client in the same process does not ask again
        other = placement_mod.Placement(p._adapter)
        other.resource_providers()
        self.assertEqual(1, len(self.placement.requests('/')))

    def test_each_call_sends_the_version_it_needs(self):
        p = self.cm.gpu.placement
        p.resource_providers()
        p.allocation_candidates({'VCPU': 1})
        sent = {
            r.path: r.headers['OpenStack-API-Version']
            for r in self.placement.requests()
            if r.path != '/'
        }
        self.assertEqual(
            {
                '/resource_providers': 'placement 1.14',
                '/allocation_candidates': 'placement 1.29',
            },
            sent,
        )

    def test_old_server_refused_before_the_call(self):
        self.placement.mock.get(URL + '/', json=version_document('1.20'))
        placement_mod.Placement._max_versions.clear()
        p = self.cm.gpu.placement
        exc = self.assertRaises(
            exceptions.CommandError,
            p.allocation_candidates, {'VCPU': 1},
        )
        self.assertIn('needs Placement API microversion 1.29', str(exc))
        self.assertIn('supports only up to 1.20', str(exc))
        self.assertEqual([], self.placement.requests('/allocation_candidates'))

    def test_forbidden_says_admin(self):
        self.placement.mock.get(
            URL + '/resource_providers',
            status_code=403,
            json={'errors': [{'status': 403, 'title': 'Forbidden',
                              'detail': 'Policy does not allow '
                                        'placement:resource_providers:list'
                                        ' to be performed.'}]},
        )
        exc = self.assertRaises(
            exceptions.CommandError, self.cm.gpu.placement.resource_providers
        )
        self.assertIn('requires admin', str(exc))
        self.assertIn('placement:resource_providers:list', str(exc))

    def test_not_found(self):
        self.placement.mock.get(
            URL + '/resource_providers/x/inventories',
            status_code=404,
            json={'errors': [{'detail': 'No resource provider with uuid x '
                                        'found'}]},
        )
        exc = self.assertRaises(
            errors.NotFound, self.cm.gpu.placement.provider_detail, 'x'
        )
        self.assertIn('No resource provider with uuid x found', str(exc))
        self.assertEqual(404, exc.status)

    def test_conflict_is_its_own_class(self):
        self.placement.mock.get(
            URL + '/resource_classes', status_code=409,
            json={'errors': [{'detail': 'generation conflict'}]},
        )
        exc = self.assertRaises(
            errors.Conflict, self.cm.gpu.placement.resource_classes
        )
        self.assertIn('generation conflict', str(exc))

    def test_server_error_with_html_body(self):
        self.placement.mock.get(
            URL + '/resource_classes', status_code=502,
            text='<html><body><h1>502 Bad Gateway</h1></body></html>',
        )
        exc = self.assertRaises(
            exceptions.CommandError, self.cm.gpu.placement.resource_classes
        )
        self.assertIn('HTTP 502: 502 Bad Gateway', str(exc))
        self.assertIn('service logs', str(exc))

    def test_connection_refused_names_the_endpoint(self):
        self.placement.mock.get(
            URL + '/resource_classes',
            exc=requests.exceptions.ConnectionError('Connection refused'),
        )
        exc = self.assertRaises(
            exceptions.CommandError, self.cm.gpu.placement.resource_classes
        )
        self.assertIn('cannot connect to Placement at %s' % URL, str(exc))

    def test_provider_details_bounded_and_complete(self):
        tree = [p.uuid for p in self.cloud.providers]
        details = self.cm.gpu.placement.provider_details(tree, True)
        self.assertEqual(set(tree), set(details))
        self.assertEqual(
            ['COMPUTE_MANAGED_PCI_DEVICE', 'OWNER_NOVA'],
            details[self.cloud.providers[1].uuid]['traits'],
        )
        # inventories + usages + traits per provider, nothing else
        self.assertEqual(
            3 * len(tree),
            len([r for r in self.placement.requests() if r.path != '/']),
        )


class TestPlacementTransport(base.TestCase):
    """Placement goes through the SDK connection's placement proxy, so
    what a clouds.yaml says about Placement applies."""

    AUTH_URL = 'http://keystone.example/identity/v3'
    CATALOG = {  # (interface, region) -> Placement URL in the catalog
        ('public', 'RegionOne'): 'http://public-one.example/placement',
        ('internal', 'RegionOne'): 'http://internal-one.example/placement',
        ('public', 'RegionTwo'): 'http://public-two.example/placement',
    }

    def setUp(self):
        super().setUp()
        self.mock = self.useFixture(rm_fixture.Fixture())
        token = ks_fixture.V3Token()
        service = token.add_service('placement')
        for (interface, region), url in self.CATALOG.items():
            service.add_endpoint(interface, url, region=region)
        self.mock.post(self.AUTH_URL + '/auth/tokens', json=token,
                       headers={'X-Subject-Token': 'subject-token'})
        for number, url in enumerate(
                sorted(self.CATALOG.values()) + [OVERRIDE_URL]):
            # a different maximum at every endpoint: 1.30, 1.31, ...
            for root in (url, url + '/'):
                self.mock.get(root,
                              json=version_document('1.%d' % (30 + number)))
            self.mock.get(url + '/resource_providers',
                          json={'resource_providers': []})
        placement_mod.Placement._max_versions.clear()
        self.addCleanup(placement_mod.Placement._max_versions.clear)

    def gpu_client(self, api_timeout=None, **settings):
        """A GpuClient over a Connection made from a clouds.yaml."""
        config = self.cloud_config(**settings)
        conn = connection.Connection(config=config.get_one('gpu-test'))
        return client.GpuClient(conn.session, conn, api_timeout=api_timeout)

    def cloud_config(self, **settings):
        """An OpenStackConfig of one cloud, gpu-test, with SETTINGS."""
        cloud = {'auth_type': 'v3token',
                 'auth': {'auth_url': self.AUTH_URL, 'token': 'secret',
                          'project_id': 'p1'},
                 'region_name': 'RegionOne', 'interface': 'public'}
        cloud.update(settings)
        path = self.useFixture(fixtures.TempDir()).join('clouds.yaml')
        with open(path, 'w') as out:
            yaml.safe_dump({'clouds': {'gpu-test': cloud}}, out)
        return os_config.OpenStackConfig(
            config_files=[path], vendor_files=[], secure_files=[],
            load_envvars=False)

    def placement_requests(self, since=0):
        return [r for r in self.mock.request_history[since:]
                if r.method == 'GET' and 'keystone' not in r.netloc]

    def test_endpoint_interface_and_region_from_clouds_yaml(self):
        cases = [
            ({}, self.CATALOG['public', 'RegionOne']),
            ({'region_name': 'RegionTwo'}, self.CATALOG['public',
                                                        'RegionTwo']),
            ({'placement_interface': 'internal'},
             self.CATALOG['internal', 'RegionOne']),
            ({'interface': 'internal'}, self.CATALOG['internal',
                                                     'RegionOne']),
            ({'placement_endpoint_override': OVERRIDE_URL}, OVERRIDE_URL),
        ]
        for settings, expected in cases:
            before = len(self.mock.request_history)
            placement_mod.Placement._max_versions.clear()
            placement = self.gpu_client(**settings).placement
            self.assertEqual([], placement.resource_providers())
            self.assertEqual(expected, placement.endpoint.rstrip('/'),
                             settings)
            used = {'%s://%s' % (r.scheme, r.netloc)
                    for r in self.placement_requests(before)}
            self.assertEqual({errors._endpoint_of(expected)}, used,
                             settings)
            # the maximum is the one that endpoint's document publishes
            number = (sorted(self.CATALOG.values()) + [OVERRIDE_URL]).index(
                expected)
            self.assertEqual((1, 30 + number), placement.max_version(),
                             settings)

    def sent_timeouts(self, placement):
        before = len(self.mock.request_history)
        placement.resource_providers()
        return {r.timeout for r in self.mock.request_history[before:]}

    def test_every_request_has_connect_and_read_timeouts(self):
        gpu = self.gpu_client()
        self.assertEqual((http.CONNECT_TIMEOUT, http.READ_TIMEOUT),
                         gpu._session.timeout)
        # the token request and Placement's alike
        self.assertEqual({(10.0, 120.0)}, self.sent_timeouts(gpu.placement))

    def test_api_timeout_of_clouds_yaml_is_honoured(self):
        # through openstacksdk (the session has it) ...
        config = self.cloud_config(api_timeout=7)
        conn = connection.Connection(config=config.get_one('gpu-test'))
        self.assertEqual({7.0}, self.sent_timeouts(
            client.GpuClient(conn.session, conn).placement))
        # ... and under OSC, which sets its session's api_timeout to None:
        # the plugin reads the cloud's own value again
        from gpuclient import plugin
        region = config.get_one('gpu-test')
        region.config['api_timeout'] = None
        region._openstack_config = config
        instance = type('CM', (), {
            '_cli_options': region, 'session': region.get_session(),
            'region_name': 'RegionOne', 'interface': 'public'})()
        self.assertIsNone(instance.session.timeout)
        instance.sdk_connection = connection.Connection(config=region)
        self.assertEqual(7, plugin._api_timeout(instance))
        gpu = plugin.make_client(instance)
        self.assertEqual({7.0}, self.sent_timeouts(gpu.placement))

    def test_a_timed_out_request_is_a_clear_error(self):
        for exc in (requests.exceptions.ReadTimeout('read timed out'),
                    requests.exceptions.ConnectTimeout('connect timed out')):
            self.mock.get(OVERRIDE_URL + '/resource_providers', exc=exc)
            placement = self.gpu_client(
                placement_endpoint_override=OVERRIDE_URL).placement
            error = self.assertRaises(errors.TimedOut,
                                      placement.resource_providers)
            self.assertIn('Listing resource providers: Placement did not '
                          'answer in time (Request to %s/resource_providers '
                          'timed out)' % OVERRIDE_URL, str(error))
            self.assertIn('a write may or may not have taken effect',
                          str(error))
            self.assertIn('api_timeout', str(error))

    def test_configured_default_microversion_is_never_sent(self):
        placement = self.gpu_client(
            placement_endpoint_override=OVERRIDE_URL,
            placement_api_version='1.2').placement
        placement.resource_providers()
        sent = [(r.path, r.headers.get('OpenStack-API-Version'))
                for r in self.placement_requests()]
        self.assertIn(('/placement/resource_providers', 'placement 1.14'),
                      sent)
        self.assertNotIn('placement 1.2', [v for _p, v in sent])

    def test_unreachable_override_is_named(self):
        for root in (OVERRIDE_URL, OVERRIDE_URL + '/'):
            self.mock.get(root, exc=requests.exceptions.ConnectionError(
                'Connection refused'))
        placement = self.gpu_client(
            placement_endpoint_override=OVERRIDE_URL).placement
        exc = self.assertRaises(exceptions.CommandError,
                                placement.resource_providers)
        self.assertIn('cannot connect to Placement at %s' % OVERRIDE_URL,
                      str(exc))

    def test_document_without_microversions(self):
        for root in (OVERRIDE_URL, OVERRIDE_URL + '/'):
            self.mock.get(root, json={'versions': [{
                'id': 'v1.0', 'status': 'CURRENT',
                'links': [{'rel': 'self', 'href': ''}]}]})
        placement = self.gpu_client(
            placement_endpoint_override=OVERRIDE_URL).placement
        exc = self.assertRaises(exceptions.CommandError,
                                placement.resource_providers)
        self.assertIn('publishes no microversion range', str(exc))
        self.assertIn(OVERRIDE_URL, str(exc))
        self.assertEqual([], [r for r in self.placement_requests()
                              if r.path.endswith('/resource_providers')])


class TestTraits(base.TestCase):
    """Trait writes against a Placement as strict as the real one."""

    def setUp(self):
        super().setUp()
        self.cloud = fakes.FakeCloud()
        root = self.cloud.pci_host('gpu-pt-1', count=1)
        self.device = self.cloud.tree(root)[1]
        self.placement = self.useFixture(fakes.PlacementFixture(self.cloud))
        self.cm = self.useFixture(fakes.ClientManagerFixture(self.cloud))
        self.client = self.cm.gpu.placement
        self.sleeps = self.useFixture(fixtures.MockPatch('time.sleep')).mock

    def test_retry_keeps_what_a_concurrent_writer_added(self):
        self.client.ensure_traits({'CUSTOM_GPU_POOL_SOLVER'})
        self.placement.conflicts[self.device.uuid] = 1
        added, removed = self.client.update_traits(
            self.device.uuid, add=['CUSTOM_GPU_POOL_SOLVER'],
            remove=['OWNER_NOVA'])
        # the racer's COMPUTE_STATUS_DISABLED survives the retry
        self.assertEqual(
            ['COMPUTE_MANAGED_PCI_DEVICE', 'COMPUTE_STATUS_DISABLED',
             'CUSTOM_GPU_POOL_SOLVER'],
            sorted(self.device.traits))
        self.assertEqual(({'CUSTOM_GPU_POOL_SOLVER'}, {'OWNER_NOVA'}),
                         (added, removed))
        self.assertEqual([self.device.uuid], self.placement.concurrent_writes)
        puts = self.placement.puts()
        self.assertEqual(2, len(puts))
        self.assertEqual(
            {'traits': ['COMPUTE_MANAGED_PCI_DEVICE',
                        'COMPUTE_STATUS_DISABLED', 'CUSTOM_GPU_POOL_SOLVER'],
             'resource_provider_generation': 2},
            puts[1].json())

    def test_database_deadlock_is_retried(self):
        """Placement's MariaDB deadlocks under concurrent trait writes."""
        self.client.ensure_traits({'CUSTOM_GPU_POOL_SOLVER'})
        self.placement.deadlocks[self.device.uuid] = 2
        added, _removed = self.client.update_traits(
            self.device.uuid, add=['CUSTOM_GPU_POOL_SOLVER'])
        self.assertEqual({'CUSTOM_GPU_POOL_SOLVER'}, added)
        self.assertIn('CUSTOM_GPU_POOL_SOLVER', self.device.traits)
        self.assertEqual(3, len(self.placement.puts()))

    def test_other_server_errors_are_not_retried(self):
        self.client.ensure_traits({'CUSTOM_GPU_POOL_SOLVER'})
        self.placement.failures[self.device.uuid] = 500
        exc = self.assertRaises(
            errors.APIError, self.client.update_traits, self.device.uuid,
            add=['CUSTOM_GPU_POOL_SOLVER'])
        self.assertIn('Placement failed with HTTP 500: injected failure',
                      str(exc))
        self.assertEqual(1, len(self.placement.puts()))

    def test_lost_races_wait_longer_each_time(self):
        """Writers that lost together must not retry together."""
        self.client.ensure_traits({'CUSTOM_GPU_POOL_SOLVER'})
        self.placement.conflicts[self.device.uuid] = 2
        self.placement.deadlocks[self.device.uuid] = 2
        added, _removed = self.client.update_traits(
            self.device.uuid, add=['CUSTOM_GPU_POOL_SOLVER'])
        self.assertEqual({'CUSTOM_GPU_POOL_SOLVER'}, added)
        self.assertEqual(5, len(self.placement.puts()))
        waits = [c.args[0] for c in self.sleeps.call_args_list]
        self.assertEqual(4, len(waits), waits)
        # a random wait, its range growing with each lost race
        for attempt, wait in enumerate(waits):
            self.assertGreaterEqual(wait, 0.05 * (attempt + 1))
            self.assertLessEqual(wait, 0.2 * (attempt + 1))

    def test_ten_conflicts_give_up_and_say_run_again(self):
        self.client.ensure_traits({'CUSTOM_GPU_POOL_SOLVER'})
        self.placement.conflicts[self.device.uuid] = 10
        exc = self.assertRaises(
            errors.Conflict, self.client.update_traits, self.device.uuid,
            add=['CUSTOM_GPU_POOL_SOLVER'])
        self.assertEqual(
            "Setting traits of resource provider %s: conflict: Resource "
            "provider's generation already changed. Please update the "
            "generation and try again. Something else changed it at the "
            "same time: run the command again." % self.device.uuid,
            str(exc))
        self.assertEqual(409, exc.status)
        self.assertEqual(10, len(self.placement.puts()))
        self.assertNotIn('CUSTOM_GPU_POOL_SOLVER', self.device.traits)

    def test_unknown_trait_refused(self):
        # Placement: a trait must exist before a provider can have it
        exc = self.assertRaises(
            errors.APIError, self.client.update_traits, self.device.uuid,
            add=['CUSTOM_NEVER_CREATED'])
        self.assertEqual(400, exc.status)
        self.assertIn('No such trait(s): CUSTOM_NEVER_CREATED.', str(exc))
        self.assertEqual(['COMPUTE_MANAGED_PCI_DEVICE', 'OWNER_NOVA'],
                         self.device.traits)

    def test_sdk_calls_send_the_pinned_version_and_query(self):
        """The calls on the SDK's proxy send what the raw ones sent."""
        self.client.ensure_traits({'CUSTOM_A'})
        self.client.delete_trait('CUSTOM_A')
        self.client.providers_with_trait('OWNER_NOVA')
        self.client.members_of(fakes.uid('agg'))
        self.client.resource_classes()
        sent = [(r.method, r.path, r.query,
                 r.headers.get('OpenStack-API-Version'))
                for r in self.placement.requests() if r.path != '/']
        # openstacksdk sends traits(name=) from 4.21 on; before, it lists
        # every trait (test_existing_traits_are_the_asked_ones)
        trait_query = 'name=in%3acustom_a' if _SDK_FILTERS_TRAITS else ''
        self.assertEqual([
            ('GET', '/traits', trait_query, 'placement 1.6'),
            ('PUT', '/traits/custom_a', '', 'placement 1.6'),
            ('DELETE', '/traits/custom_a', '', 'placement 1.6'),
            ('GET', '/resource_providers', 'required=owner_nova',
             'placement 1.18'),
            ('GET', '/resource_providers',
             'member_of=%s' % fakes.uid('agg'), 'placement 1.14'),
            ('GET', '/resource_classes', '', 'placement 1.2'),
        ], sent)
        # each counted as one request, as the raw calls were
        self.assertEqual(6, self.client.request_count)

    def test_existing_traits_are_the_asked_ones(self):
        """openstacksdk before 4.21 drops traits(name=)'s filter and lists
        every trait: existing_traits still answers for the names asked."""
        adapter = self.client._adapter
        every = adapter.traits
        self.useFixture(fixtures.MockPatchObject(
            adapter, 'traits',
            side_effect=lambda name=None, **query: every(**query)))
        self.client.ensure_traits({'CUSTOM_A'})
        self.assertEqual({'CUSTOM_A'}, self.client.existing_traits(
            {'CUSTOM_A', 'CUSTOM_B'}))
        self.assertEqual(set(), self.client.existing_traits({'CUSTOM_B'}))

    def test_placement_message_survives_the_sdk(self):
        """Placement's {"errors": [{"detail"}]} reaches the user through
        an SDK call (the SDK's own ``details`` is only "Conflict")."""
        self.client.ensure_traits({'CUSTOM_A'})
        self.placement.mock.delete(
            URL + '/traits/CUSTOM_A', status_code=400,
            json={'errors': [{'status': 400, 'title': 'Bad Request',
                              'detail': 'The trait CUSTOM_A is odd.'}]})
        exc = self.assertRaises(errors.APIError, self.client.delete_trait,
                                'CUSTOM_A')
        self.assertIn('Deleting trait CUSTOM_A: Placement answered HTTP '
                      '400: The trait CUSTOM_A is odd.', str(exc))

    def test_create_and_delete_custom_traits(self):
        self.assertEqual({'CUSTOM_A'},
                         self.client.ensure_traits({'CUSTOM_A', 'OWNER_NOVA'}))
        self.assertEqual(set(), self.client.ensure_traits({'CUSTOM_A'}))
        self.client.update_traits(self.device.uuid, add=['CUSTOM_A'])
        self.assertFalse(self.client.delete_trait('CUSTOM_A'))  # in use
        self.client.update_traits(self.device.uuid, remove=['CUSTOM_A'])
        self.assertTrue(self.client.delete_trait('CUSTOM_A'))
        self.assertEqual(set(), self.client.existing_traits({'CUSTOM_A'}))


def hypervisor_page(ids, more):
    body = {'hypervisors': [{'id': i, 'hypervisor_hostname': i,
                             'service': {'host': i}} for i in ids]}
    if more:
        body['hypervisors_links'] = [
            {'rel': 'next', 'href': 'http://nova.example/v2.1/'
             'os-hypervisors/detail?marker=%s' % (ids[-1] if ids else 'x')}]
    return fakes.make_response(200, body)


class TestComputeLists(base.TestCase):
    """Hypervisor and flavor lists: microversions and pages."""

    def setUp(self):
        super().setUp()
        self.cloud = fakes.FakeCloud()

    def compute(self, max_limit=fakes.NOVA_MAX_LIMIT):
        self.cm = self.useFixture(
            fakes.ClientManagerFixture(self.cloud, max_limit=max_limit))
        return self.cm.gpu.compute

    def sent(self, url):
        return [(version, params) for sent_url, version, params
                in self.cm.nova.gets if sent_url == url]

    def hosts(self, n):
        return [self.cloud.compute_host('h%d' % i).uuid for i in range(n)]

    def test_hypervisor_ids_are_provider_uuids_at_2_53(self):
        uuids = self.hosts(2)
        compute = self.compute()
        self.assertEqual(uuids, [hv['id'] for hv in compute.hypervisors()])
        self.assertEqual([('2.53', {})], self.sent('/os-hypervisors/detail'))
        # what a client that sent less would have got
        old = self.cm.nova.get('/os-hypervisors/detail', '2.52').json()
        self.assertEqual([1, 2], [hv['id'] for hv in old['hypervisors']])

    def test_hypervisor_pages_followed_with_the_last_marker(self):
        uuids = self.hosts(5)
        found = self.compute(max_limit=2).hypervisors()
        self.assertEqual(uuids, [hv['id'] for hv in found])
        self.assertEqual(
            [('2.53', {}), ('2.53', {'marker': uuids[1]}),
             ('2.53', {'marker': uuids[3]})],
            self.sent('/os-hypervisors/detail'))

    def test_exactly_full_last_hypervisor_page(self):
        # Nova links a full page; the page after it is empty, unlinked
        uuids = self.hosts(4)
        found = self.compute(max_limit=2).hypervisors()
        self.assertEqual(uuids, [hv['id'] for hv in found])
        self.assertEqual(
            [{}, {'marker': uuids[1]}, {'marker': uuids[3]}],
            [params for _v, params in self.sent('/os-hypervisors/detail')])

    def test_empty_hypervisor_page_with_a_next_link_ends_the_list(self):
        compute = self.compute()
        # a third call would raise StopIteration: no endless loop
        self.cm.compute.get.side_effect = [
            hypervisor_page(['a', 'b'], more=True),
            hypervisor_page([], more=True),
        ]
        self.assertEqual(['a', 'b'],
                         [hv['id'] for hv in compute.hypervisors()])
        # the SDK's list sends the next link's query as parsed (marker=b)
        self.assertEqual(
            [{}, {'marker': ['b']}],
            [c.kwargs['params'] for c in self.cm.compute.get.call_args_list])

    def test_sdk_lists_give_the_answers_as_nova_wrote_them(self):
        # hypervisors and migrations come through the SDK's lists: the
        # dicts are Nova's, key for key (none the SDK merely declares,
        # none retyped)
        self.hosts(3)
        compute = self.compute(max_limit=2)
        self.cloud.migrations.append({
            'id': 1, 'uuid': fakes.uid('migration-1'), 'instance_uuid': 's1',
            'source_compute': 'h0', 'dest_compute': 'h1',
            'source_node': 'h0', 'dest_node': 'h1', 'dest_host': None,
            'migration_type': 'migration', 'status': 'finished'})
        answered = []  # every page, as the fake Nova answers it
        for url, key in (('/os-hypervisors/detail', 'hypervisors'),
                         ('/os-migrations', 'migrations')):
            params = {}
            while True:
                body = self.cm.nova.get(url, compute._version(
                    '2.53' if key == 'hypervisors' else '2.59'),
                    params).json()
                answered.append(body[key])
                if not body.get(key + '_links'):
                    break
                params = {'marker': body[key][-1].get('uuid')
                          or body[key][-1]['id']}
        self.assertEqual(answered[0] + answered[1], compute.hypervisors())
        self.assertEqual(answered[-1], compute.migrations())
        self.assertNotIn('uptime', compute.hypervisors()[0])

    def flavors(self):
        for name, public in (('g1', True), ('g2', False), ('g3', True),
                             ('g4', False), ('g5', True)):
            self.cloud.add_flavor(
                name, public=public,
                extra_specs={'resources:VGPU': '1'} if name == 'g1' else {})
        return sorted(fakes.uid('flavor-g%d' % i) for i in range(1, 6))

    def test_flavor_pages_public_and_private(self):
        ids = self.flavors()
        found = self.compute(max_limit=2).flavors()
        self.assertEqual(ids, [f['id'] for f in found])
        self.assertEqual({'resources:VGPU': '1'}, next(
            f['extra_specs'] for f in found if f['name'] == 'g1'))
        self.assertEqual(
            [('2.61', {'is_public': 'None'}),
             ('2.61', {'is_public': 'None', 'marker': ids[1]}),
             ('2.61', {'is_public': 'None', 'marker': ids[3]})],
            self.sent('/flavors/detail'))

    def test_fake_nova_lists_public_flavors_unless_asked(self):
        self.flavors()
        self.compute()

        def names(**params):
            body = self.cm.nova.get('/flavors/detail', '2.61', params).json()
            return sorted(f['name'] for f in body['flavors'])

        self.assertEqual(['g1', 'g3', 'g5'], names())
        self.assertEqual(['g1', 'g2', 'g3', 'g4', 'g5'],
                         names(is_public='None'))
        self.assertEqual(['g2', 'g4'], names(is_public='false'))

    def test_empty_flavor_page_with_a_next_link_ends_the_list(self):
        compute = self.compute()
        link = [{'rel': 'next', 'href': 'http://nova.example/v2.1/flavors/'
                 'detail?marker=f1'}]
        self.cm.compute.get.side_effect = [
            fakes.make_response(200, {'flavors': [{'id': 'f1'}],
                                      'flavors_links': link}),
            fakes.make_response(200, {'flavors': [], 'flavors_links': link}),
        ]
        self.assertEqual([{'id': 'f1'}], compute.flavors())
        self.assertEqual(2, self.cm.compute.get.call_count)


class TestProjectLimits(base.TestCase):
    """compute.Compute.project_limits asks for the named project."""

    def test_tenant_id_and_wire_names(self):
        proxy = mock.Mock()
        proxy.get_limits.return_value = limits.Limits(
            absolute=limits.AbsoluteLimits(
                instances=10, instances_used=2, total_cores=20,
                total_cores_used=4, total_ram=51200, total_ram_used=1024))
        found = compute_mod.Compute(proxy).project_limits('p1')
        # tenant_id: the SDK's project_id alias sends ?project_id=, which
        # Nova ignores (the caller's own limits)
        proxy.get_limits.assert_called_once_with(tenant_id='p1')
        self.assertEqual({'maxTotalInstances': 10, 'totalInstancesUsed': 2,
                          'maxTotalCores': 20, 'totalCoresUsed': 4,
                          'maxTotalRAMSize': 51200, 'totalRAMUsed': 1024},
                         found)


class TestFakeNovaAggregates(base.TestCase):
    def test_aggregate_with_hosts_cannot_be_deleted(self):
        cloud = fakes.FakeCloud()
        cloud.compute_host('h1')
        cm = self.useFixture(fakes.ClientManagerFixture(cloud))
        compute = cm.gpu.compute
        agg = compute.create_aggregate('pool')
        compute.add_host(agg, 'h1')
        exc = self.assertRaises(errors.APIError, compute.delete_aggregate,
                                agg)
        self.assertEqual(400, exc.status)
        self.assertIn('Host aggregate is not empty', str(exc))
        self.assertEqual([agg], cloud.aggregates)
        compute.remove_host(agg, 'h1')
        compute.delete_aggregate(agg)
        self.assertEqual([], cloud.aggregates)


class TestFakeNovaFlavors(base.TestCase):
    """The fake Nova refuses the flavor writes Nova refuses."""

    def setUp(self):
        super().setUp()
        self.cloud = fakes.FakeCloud()
        cm = self.useFixture(fakes.ClientManagerFixture(self.cloud))
        self.nova = cm.nova
        self.compute = cm.gpu.compute

    def test_create(self):
        flavor = self.compute.create_flavor(name='f', vcpus=1, ram=512,
                                            disk=0)
        self.assertEqual([flavor], self.compute.flavors())
        for fields, status in (
                (dict(name='f', vcpus=1, ram=512, disk=0), 409),
                (dict(name='g', vcpus=0, ram=512, disk=0), 400),
                (dict(name='g', vcpus=1, disk=0), 400)):
            exc = self.assertRaises(errors.APIError,
                                    self.compute.create_flavor, **fields)
            self.assertEqual(status, exc.status, fields)
        self.assertEqual(1, len(self.cloud.flavors))
        # a field Nova's flavor body does not have: Nova refuses it ...
        body = {'flavor': dict(name='g', vcpus=1, ram=512, disk=0, foo=1)}
        self.assertEqual(400, self.nova.post(
            '/flavors', microversion='2.61', json=body).status_code)
        # ... and the SDK's Flavor would drop it: refused before sending
        sent = len(self.nova.sent)
        exc = self.assertRaises(errors.APIError, self.compute.create_flavor,
                                **body['flavor'])
        self.assertEqual('Creating flavor g: foo not a field of a Nova '
                         'flavor; nothing was sent.', str(exc))
        self.assertEqual(sent, len(self.nova.sent))
        self.assertEqual(1, len(self.cloud.flavors))

    def test_access(self):
        public = self.cloud.add_flavor('public')
        private = self.cloud.add_flavor('private', public=False)
        exc = self.assertRaises(errors.APIError,
                                self.compute.add_flavor_access,
                                public['id'], 'p1')
        self.assertEqual(409, exc.status)
        self.assertRaises(errors.NotFound, self.compute.flavor_access,
                          public['id'])
        self.compute.add_flavor_access(private['id'], 'p1')
        self.assertRaises(errors.Conflict, self.compute.add_flavor_access,
                          private['id'], 'p1')
        self.assertEqual(['p1'], self.compute.flavor_access(private['id']))
        self.compute.remove_flavor_access(private['id'], 'p1')
        self.assertRaises(errors.NotFound,
                          self.compute.remove_flavor_access,
                          private['id'], 'p1')
        self.assertEqual([], self.compute.flavor_access(private['id']))

    def test_extra_specs_and_delete(self):
        flavor = self.cloud.add_flavor('f', extra_specs={'a': '1'})
        self.compute.set_flavor_extra_specs(flavor['id'], {'b': '2'})
        self.assertEqual({'a': '1', 'b': '2'}, flavor['extra_specs'])
        self.assertRaises(errors.APIError,
                          self.compute.set_flavor_extra_specs,
                          flavor['id'], {'bad/key': '1'})
        self.compute.delete_flavor_extra_spec(flavor['id'], 'a')
        # a key the flavor lacks is a 404 (which the client takes as done)
        self.assertEqual(404, self.nova.delete(
            '/flavors/%s/os-extra_specs/a' % flavor['id']).status_code)
        self.compute.delete_flavor_extra_spec(flavor['id'], 'a')
        self.assertEqual({'b': '2'}, flavor['extra_specs'])
        self.compute.delete_flavor(flavor['id'])
        self.assertEqual([], self.cloud.flavors)
        self.assertRaises(errors.NotFound, self.compute.delete_flavor,
                          flavor['id'])
        self.assertEqual(
            [('specs', 'f', {'b': '2'}), ('specs', 'f', {'bad/key': '1'}),
             ('unset', 'f', 'a'), ('unset', 'f', 'a'),
             ('unset', 'f', 'a'), ('delete_flavor', 'f'),
             ('delete_flavor', flavor['id'])], self.nova.calls)


class TestServerMessage(base.TestCase):
    def test_bodies(self):
        cases = [
            ('{"errors": [{"detail": "a"}, {"title": "b"}]}', 'a b'),
            ('{"itemNotFound": {"message": "Aggregate 7 not found", '
             '"code": 404}}', 'Aggregate 7 not found'),
            ('{"message": "m"}', 'm'),
            ('<html><h1>Oops</h1>\n<p>it  broke</p></html>', 'Oops it broke'),
            ('', ''),
            (None, ''),
            (b'plain bytes', 'plain bytes'),
        ]
        for body, expected in cases:
            self.assertEqual(expected, errors.server_message(body), body)

    def test_long_bodies_are_cut(self):
        self.assertEqual(400, len(errors.server_message('x' * 1000)))


class TestTranslateErrors(base.TestCase):
    def _raise(self, exc):
        with errors.translate_errors('Nova', 'Listing aggregates'):
            raise exc

    def test_sdk_http_errors(self):
        response = fakes.make_response(
            403, {'forbidden': {'message': 'Policy doesn\'t allow '
                                           'os_compute_api:os-aggregates'}})
        exc = self.assertRaises(
            exceptions.CommandError, self._raise,
            sdk_exc.ForbiddenException(
                message='Forbidden', response=response,
                details='Policy doesn\'t allow os_compute_api:os-aggregates',
                http_status=403),
        )
        self.assertIn('Listing aggregates: forbidden', str(exc))
        self.assertIn('requires admin', str(exc))

    def test_sdk_not_found(self):
        exc = self.assertRaises(
            errors.NotFound, self._raise,
            sdk_exc.NotFoundException(
                message='x', details='Aggregate a not found',
                http_status=404),
        )
        self.assertIn('Aggregate a not found', str(exc))

    def test_catalog_without_endpoint(self):
        exc = self.assertRaises(
            exceptions.CommandError, self._raise,
            ks_exc.EndpointNotFound('no compute'),
        )
        self.assertIn('no Nova endpoint', str(exc))

    def test_connection_failure(self):
        exc = self.assertRaises(
            exceptions.CommandError, self._raise,
            ks_exc.ConnectFailure('Unable to establish connection to '
                                  'http://127.0.0.1:8774/v2.1'),
        )
        self.assertIn('cannot connect to Nova', str(exc))
        self.assertIn('http://127.0.0.1:8774/v2.1', str(exc))

    def test_command_errors_pass_through(self):
        err = exceptions.CommandError('mine')
        self.assertIs(
            err, self.assertRaises(
                exceptions.CommandError, self._raise, err)
        )


class TestVersions(base.TestCase):
    def test_parse(self):
        self.assertEqual((1, 36), versions.parse_version('1.36'))
        self.assertEqual((2, 1), versions.parse_version('v2.1'))
        self.assertIsNone(versions.parse_version('latest'))
        self.assertIsNone(versions.parse_version(None))


class TestStrictPlacementFake(base.TestCase):
    """The fake Placement answers as the real one (placement/handlers):
    the client's queries are judged, not merely recorded."""

    def setUp(self):
        super().setUp()
        self.cloud = fakes.FakeCloud()
        self.cloud.pci_host('gpu-pt-1')
        self.cloud.vgpu_host('gpu-vgpu-1')
        self.agg = fakes.Aggregate('solver', hosts=['gpu-pt-1'])
        self.cloud.aggregates.append(self.agg)
        self.cloud.mirror()
        self.placement = self.useFixture(fakes.PlacementFixture(self.cloud))
        self.cm = self.useFixture(fakes.ClientManagerFixture(self.cloud))
        self.p = self.cm.gpu.placement
        self.pt_root = self.cloud.hypervisors[0]['id']

    def raw(self, path, version, params=None):
        return self.p._adapter.get(
            path, params=params, raise_exc=False,
            headers={'OpenStack-API-Version': 'placement %s' % version})

    def test_client_reads_answered_by_what_they_ask(self):
        self.assertEqual({self.pt_root}, self.p.members_of(self.agg.uuid))
        self.assertEqual(set(), self.p.members_of(fakes.uid('other')))
        self.assertEqual({self.pt_root},
                         self.p.providers_with_trait('COMPUTE_NODE') & {
                             self.pt_root})
        aggregates, generation = self.p.aggregates(self.pt_root)
        self.assertEqual(([self.agg.uuid], 1), (aggregates, generation))

    def test_query_parameters_by_microversion(self):
        for path, version, params, status in (
                ('/resource_providers', '1.14', {'member_of': 'x'}, 200),
                ('/resource_providers', '1.2', {'member_of': 'x'}, 400),
                ('/resource_providers', '1.13', {'in_tree': 'x'}, 400),
                ('/resource_providers', '1.17', {'required': 'X'}, 400),
                ('/resource_providers', '1.18', {'required': 'CUSTOM_NO'},
                 400),
                ('/resource_providers', '1.18', {'members_of': 'x'}, 400),
                ('/resource_providers', '1.40', {}, 406),
                ('/resource_providers/%s/aggregates', '1.0', {}, 404),
                ('/traits', '1.5', {}, 404),
                ('/allocation_candidates', '1.9', {'resources': 'VCPU:1'},
                 404),
                ('/allocation_candidates', '1.29', {'resources': 'VCPU'},
                 400),
                ('/allocation_candidates', '1.29', {
                    'resources': 'VCPU:1', 'required': 'CUSTOM_NOPE'}, 400),
                ('/allocation_candidates', '1.29', {'resources': 'VCPU:1'},
                 200)):
            response = self.raw(path.replace('%s', self.pt_root), version,
                                params)
            self.assertEqual(status, response.status_code,
                             '%s %s %s' % (path, version, params))

    def test_fields_by_microversion(self):
        old = self.raw('/resource_providers', '1.13').json()
        self.assertNotIn('root_provider_uuid', old['resource_providers'][0])
        tree = self.raw('/resource_providers', '1.14', {
            'in_tree': self.pt_root}).json()['resource_providers']
        self.assertEqual({self.pt_root}, {
            rp['root_provider_uuid'] for rp in tree})
        self.assertEqual(5, len(tree))  # the root and its four GPUs
        path = '/resource_providers/%s/aggregates' % self.pt_root
        self.assertEqual({'aggregates': [self.agg.uuid]},
                         self.raw(path, '1.1').json())
        self.assertIn('resource_provider_generation',
                      self.raw(path, '1.19').json())
        # a PUT at 1.1 takes a plain list; the 1.19 body is a 400 there
        put = self.p._adapter.put(
            path, json={'aggregates': [], 'resource_provider_generation': 0},
            raise_exc=False,
            headers={'OpenStack-API-Version': 'placement 1.1'})
        self.assertEqual(400, put.status_code)


class TestStrictKeystoneLimits(base.TestCase):
    """identity.Limits against Keystone's field names and its 409."""

    def setUp(self):
        super().setUp()
        self.keystone = fakes.FakeKeystoneLimits()
        proxy = mock.Mock()
        self.keystone.install(proxy)
        self.limits = identity_mod.Limits(proxy, mock.Mock(), 'RegionOne')
        self.limits._scope = ('nova-service', 'RegionOne')

    def test_created_limits_read_back_and_duplicates_refused(self):
        self.limits.create_registered('class:VGPU', 4)
        self.limits.create_limit('p1', 'class:VGPU', 2)
        self.assertEqual({'class:VGPU': 4}, {
            n: r['limit'] for n, r in self.limits.registered().items()})
        self.assertEqual([('p1', 'class:VGPU', 2)], [
            (r['project_id'], r['resource_name'], r['resource_limit'])
            for r in self.limits.limits('p1')])
        for create in (lambda: self.limits.create_registered('class:VGPU',
                                                             8),
                       lambda: self.limits.create_limit('p1', 'class:VGPU',
                                                        3)):
            error = self.assertRaises(exceptions.CommandError, create)
            self.assertIn('Duplicate entry', str(error))
