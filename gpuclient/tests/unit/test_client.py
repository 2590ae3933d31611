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

from keystoneauth1 import exceptions as ks_exc
from openstack import exceptions as sdk_exc
from osc_lib import exceptions
import requests

from gpuclient import client
from gpuclient.tests.unit import base
from gpuclient.tests.unit import fakes

URL = fakes.PLACEMENT_URL


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
        other = client.Placement(p._adapter.session)
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
        self.placement.mock.get(
            URL + '/',
            json={'versions': [{'id': 'v1.0', 'max_version': '1.20'}]},
        )
        client.Placement._max_versions.clear()
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
            client.NotFound, self.cm.gpu.placement.provider_detail, 'x'
        )
        self.assertIn('No resource provider with uuid x found', str(exc))
        self.assertEqual(404, exc.status)

    def test_conflict_is_its_own_class(self):
        self.placement.mock.get(
            URL + '/resource_classes', status_code=409,
            json={'errors': [{'detail': 'generation conflict'}]},
        )
        exc = self.assertRaises(
            client.Conflict, self.cm.gpu.placement.resource_classes
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
            self.assertEqual(expected, client.server_message(body), body)

    def test_long_bodies_are_cut(self):
        self.assertEqual(400, len(client.server_message('x' * 1000)))


class TestTranslateErrors(base.TestCase):
    def _raise(self, exc):
        with client.translate_errors('Nova', 'Listing aggregates'):
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
            client.NotFound, self._raise,
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
        self.assertEqual((1, 36), client.parse_version('1.36'))
        self.assertEqual((2, 1), client.parse_version('v2.1'))
        self.assertIsNone(client.parse_version('latest'))
        self.assertIsNone(client.parse_version(None))
