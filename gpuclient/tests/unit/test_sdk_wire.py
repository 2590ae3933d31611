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

"""Issue 57 item 3: the calls that moved from raw requests to the SDK's
resources send what they sent before, and fail as they failed before.

A real openstacksdk connection (a clouds.yaml cloud, a token from a fake
Keystone) over requests_mock: what is recorded is the HTTP request as it
leaves keystoneauth (method, path, query, microversion header, body), and
what the client layer makes of each answer (the dict, None for a 404
where the read says so, and the error of a refusal, a timeout or an
answer over the cap), in the words the raw calls gave.
"""

import datetime
import json
import urllib.parse

import fixtures
from keystoneauth1 import fixture as ks_fixture
from openstack import config as os_config
from openstack import connection
import requests
from requests_mock.contrib import fixture as rm_fixture
import yaml

from gpuclient.cloud import client
from gpuclient.cloud import errors
from gpuclient.cloud import http
from gpuclient.cloud import placement as placement_mod
from gpuclient.tests.unit import base

AUTH_URL = 'http://keystone.example/identity/v3'
NOVA = 'http://nova.example/v2.1'
PLACEMENT = 'http://placement.example/placement'

FLAVOR = {
    'id': 'a/b c', 'name': 'g1', 'ram': 512, 'disk': 0, 'swap': 0,
    'vcpus': 1, 'OS-FLV-EXT-DATA:ephemeral': 0,
    'OS-FLV-DISABLED:disabled': False, 'os-flavor-access:is_public': False,
    'rxtx_factor': 1.0, 'description': 'for GPUs',
    'extra_specs': {'resources:VGPU': '1'},
    'links': [{'rel': 'self', 'href': NOVA + '/flavors/a%2Fb%20c'}]}
WITHOUT_LINKS = {k: v for k, v in FLAVOR.items() if k != 'links'}
SERVER = {
    'id': 's1', 'name': 'vm', 'status': 'ACTIVE',
    'OS-EXT-SRV-ATTR:host': 'gpu-pt-1', 'OS-EXT-STS:task_state': None,
    'tenant_id': 'p1',
    'flavor': {'original_name': 'g1', 'vcpus': 1, 'ram': 512, 'disk': 0,
               'ephemeral': 0, 'swap': 0,
               'extra_specs': {'resources:VGPU': '1'}}}
PROVIDERS = [
    {'uuid': 'r1', 'name': 'gpu-pt-1', 'generation': 4,
     'parent_provider_uuid': None, 'root_provider_uuid': 'r1',
     'links': [{'rel': 'self', 'href': '/resource_providers/r1'}]},
    {'uuid': 'c1', 'name': 'gpu-pt-1_pci_0000_81_00_0', 'generation': 2,
     'parent_provider_uuid': 'r1', 'root_provider_uuid': 'r1',
     'links': [{'rel': 'self', 'href': '/resource_providers/c1'}]}]
JSON = {'Content-Type': 'application/json'}
START = datetime.datetime(2026, 11, 1)
END = datetime.datetime(2026, 12, 1)
TIMES = {'start': '2026-11-01T00:00:00.000000',
         'end': '2026-12-01T00:00:00.000000'}


def usage(server, project):
    return {'instance_id': server, 'tenant_id': project, 'name': server,
            'flavor': 'g1', 'hours': 2.5, 'state': 'active'}


class WireTestCase(base.TestCase):
    """A GpuClient over a real SDK connection; every request recorded."""

    def setUp(self):
        super().setUp()
        self.mock = self.useFixture(rm_fixture.Fixture())
        token = ks_fixture.V3Token()
        for service, url in (('compute', NOVA), ('placement', PLACEMENT)):
            token.add_service(service).add_endpoint('public', url,
                                                    region='RegionOne')
        self.mock.post(AUTH_URL + '/auth/tokens', json=token,
                       headers={'X-Subject-Token': 'subject-token'})
        nova = {'id': 'v2.1', 'status': 'CURRENT', 'version': '2.100',
                'min_version': '2.1',
                'links': [{'rel': 'self', 'href': NOVA + '/'}]}
        for root in (NOVA, NOVA + '/'):
            self.mock.get(root, json={'version': nova})
        self.mock.get('http://nova.example/', json={'versions': [nova]})
        for root in (PLACEMENT, PLACEMENT + '/'):
            self.mock.get(root, json={'versions': [{
                'id': 'v1.0', 'min_version': '1.0', 'max_version': '1.39',
                'status': 'CURRENT', 'links': [{'rel': 'self',
                                                'href': ''}]}]})
        placement_mod.Placement._max_versions.clear()
        self.addCleanup(placement_mod.Placement._max_versions.clear)
        cloud = {'auth_type': 'v3token',
                 'auth': {'auth_url': AUTH_URL, 'token': 'secret',
                          'project_id': 'p1'},
                 'region_name': 'RegionOne', 'interface': 'public'}
        path = self.useFixture(fixtures.TempDir()).join('clouds.yaml')
        with open(path, 'w') as out:
            yaml.safe_dump({'clouds': {'c': cloud}}, out)
        config = os_config.OpenStackConfig(
            config_files=[path], vendor_files=[], secure_files=[],
            load_envvars=False)
        conn = connection.Connection(config=config.get_one('c'))
        self.addCleanup(conn.close)
        # what the DeadlineAdapter of a real session records of each
        # answer (requests_mock stands where it would be mounted)
        conn.session.session.hooks['response'].append(self.record)
        self.addCleanup(setattr, http._LAST, 'response', None)
        self.gpu = client.GpuClient(conn.session, conn)
        # discovery and the token first: what follows is the call's own
        self.gpu.compute.require('2.1')
        self.gpu.compute._proxy.get_endpoint_data()
        self.gpu.placement.max_version()

    @staticmethod
    def record(response, *args, **kwargs):
        http._LAST.response = response

    def sent(self, call):
        """CALL's requests: (method, path, query, microversion, body)."""
        before = len(self.mock.request_history)
        try:
            result = call()
        finally:
            # requests_mock's path and query are lowercased: the URL's
            self.requests = [
                (r.method, urllib.parse.urlsplit(r.url).path,
                 urllib.parse.parse_qs(urllib.parse.urlsplit(r.url).query),
                 r.headers.get('OpenStack-API-Version'),
                 json.loads(r.body) if r.body else None)
                for r in self.mock.request_history[before:]]
        return result

    def answer(self, method, url, *answers):
        """Answer METHOD URL (exactly, query aside) with ANSWERS."""
        self.mock.register_uri(method, url, answers)


class TestComputeWire(WireTestCase):

    def test_get_flavor(self):
        url = NOVA + '/flavors/a%2Fb%20c'
        self.answer('GET', url, {'json': {'flavor': FLAVOR}})
        got = self.sent(lambda: self.gpu.compute.get_flavor('a/b c'))
        self.assertEqual(
            [('GET', '/v2.1/flavors/a%2Fb%20c', {}, 'compute 2.61', None)],
            self.requests)
        # Nova's flavor, every field the SDK's Flavor declares (as the
        # flavor list reads it): not its links, which nothing reads
        self.assertEqual(WITHOUT_LINKS, got)
        # by ID only: a 404 is None
        self.answer('GET', url, {'status_code': 404, 'json': {
            'itemNotFound': {'code': 404, 'message': 'Flavor a/b c could '
                             'not be found.'}}})
        self.assertIsNone(self.gpu.compute.get_flavor('a/b c'))
        # what the operator typed is one path segment: never a query
        self.answer('GET', NOVA + '/flavors/x%3Fy', {'status_code': 404})
        self.assertIsNone(self.sent(
            lambda: self.gpu.compute.get_flavor('x?y')))
        self.assertEqual('/v2.1/flavors/x%3Fy', self.requests[0][1])

    def test_create_flavor(self):
        fields = {'name': 'g1', 'vcpus': 1, 'ram': 512, 'disk': 0,
                  'swap': 0, 'description': 'for GPUs',
                  'OS-FLV-EXT-DATA:ephemeral': 0,
                  'os-flavor-access:is_public': False}
        self.answer('POST', NOVA + '/flavors',
                    {'json': {'flavor': dict(FLAVOR, id='f1')}})
        got = self.sent(lambda: self.gpu.compute.create_flavor(
            rxtx_factor=None, **fields))
        self.assertEqual(
            [('POST', '/v2.1/flavors', {}, 'compute 2.61',
              {'flavor': fields})], self.requests)
        self.assertEqual(dict(WITHOUT_LINKS, id='f1'), got)

    def test_get_server(self):
        url = NOVA + '/servers/s1'
        self.answer('GET', url, {'json': {'server': SERVER}})
        got = self.sent(lambda: self.gpu.compute.get_server('s1'))
        self.assertEqual(
            [('GET', '/v2.1/servers/s1', {}, 'compute 2.47', None)],
            self.requests)
        self.assertEqual(SERVER, got)
        self.answer('GET', url, {'status_code': 404, 'json': {
            'itemNotFound': {'code': 404, 'message': 'Instance s1 could '
                             'not be found.'}}})
        self.assertIsNone(self.gpu.compute.get_server('s1'))

    def test_every_project_s_server_usages(self):
        # one page per server (Nova's max_limit 1): p1's servers span
        # two pages, each page links the next with the marker Nova gives
        link = NOVA + '/os-simple-tenant-usage?%s'
        pages = [
            {'tenant_usages': [{'tenant_id': 'p1', 'server_usages': [
                usage('s1', 'p1')]}],
             'tenant_usages_links': [{'rel': 'next', 'href': link % (
                 urllib.parse.urlencode(dict(TIMES, detailed=1,
                                             marker='s1')))}]},
            {'tenant_usages': [{'tenant_id': 'p1', 'server_usages': [
                usage('s2', 'p1')]}],
             'tenant_usages_links': [{'rel': 'next', 'href': link % (
                 urllib.parse.urlencode(dict(TIMES, detailed=1,
                                             marker='s2')))}]},
            {'tenant_usages': []}]
        self.answer('GET', NOVA + '/os-simple-tenant-usage',
                    *[{'json': page} for page in pages])
        got = self.sent(lambda: self.gpu.compute.server_usages(START, END))
        query = {k: [v] for k, v in dict(TIMES, detailed='1').items()}
        self.assertEqual(
            [('GET', '/v2.1/os-simple-tenant-usage', query, 'compute 2.40',
              None),
             ('GET', '/v2.1/os-simple-tenant-usage',
              dict(query, marker=['s1']), 'compute 2.40', None),
             ('GET', '/v2.1/os-simple-tenant-usage',
              dict(query, marker=['s2']), 'compute 2.40', None)],
            self.requests)
        self.assertEqual([usage('s1', 'p1'), usage('s2', 'p1')], got)


class TestPlacementWire(WireTestCase):

    def test_resource_providers(self):
        self.answer('GET', PLACEMENT + '/resource_providers',
                    {'json': {'resource_providers': PROVIDERS}})
        count = self.gpu.placement.request_count
        got = self.sent(self.gpu.placement.resource_providers)
        self.assertEqual(
            [('GET', '/placement/resource_providers', {}, 'placement 1.14',
              None)], self.requests)
        self.assertEqual(PROVIDERS, got)
        self.assertEqual(count + 1, self.gpu.placement.request_count)


class TestErrorsAsBefore(WireTestCase):
    """Each moved call's refusals, timeouts and capped answers, in the
    words the raw call gave (its message, its class, its status)."""

    def calls(self):
        """(what, method, URL, call) of each moved call."""
        compute, placement = self.gpu.compute, self.gpu.placement
        return [
            ('Reading flavor f1', 'GET', NOVA + '/flavors/f1',
             lambda: compute.get_flavor('f1')),
            ('Creating flavor g1', 'POST', NOVA + '/flavors',
             lambda: compute.create_flavor(name='g1', vcpus=1, ram=512,
                                           disk=0)),
            ('Reading server s1', 'GET', NOVA + '/servers/s1',
             lambda: compute.get_server('s1')),
            ('Reading the server usage of every project', 'GET',
             NOVA + '/os-simple-tenant-usage',
             lambda: compute.server_usages(START, END)),
            ('Listing resource providers', 'GET',
             PLACEMENT + '/resource_providers',
             placement.resource_providers),
        ]

    def test_refusals(self):
        for what, method, url, call in self.calls():
            service = 'Placement' if 'placement' in url else 'Nova'
            with self.subTest(what=what):
                self.answer(method, url, {'status_code': 403, 'json': {
                    'forbidden': {'code': 403, 'message': 'Policy says no'}}
                    if service == 'Nova' else {'errors': [
                        {'status': 403, 'detail': 'Policy says no'}]}})
                error = self.assertRaises(errors.APIError, call)
                self.assertEqual(
                    '%s: forbidden: Policy says no. This requires admin: '
                    'use an account with the admin role (for example '
                    '--os-cloud with an admin user).' % what, str(error))
                self.assertEqual(403, error.status)
                self.answer(method, url, {'status_code': 500,
                                          'text': '<html>Oops</html>'})
                error = self.assertRaises(errors.APIError, call)
                self.assertEqual(
                    '%(what)s: %(service)s failed with HTTP 500: Oops. '
                    'Check the %(service)s service logs.'
                    % {'what': what, 'service': service}, str(error))

    def test_not_found_where_it_is_no_none(self):
        for what, method, url, call in self.calls():
            if what.startswith(('Reading flavor', 'Reading server')):
                continue  # None: test_get_flavor, test_get_server
            with self.subTest(what=what):
                self.answer(method, url, {'status_code': 404,
                                          'text': 'Not here'})
                error = self.assertRaises(errors.NotFound, call)
                self.assertEqual(404, error.status)
                self.assertIn('%s: no such resource in' % what, str(error))

    def test_timeouts(self):
        for exc in (requests.exceptions.ReadTimeout('read timed out'),
                    requests.exceptions.ConnectTimeout('connect timed out')):
            for what, method, url, call in self.calls():
                service = 'Placement' if 'placement' in url else 'Nova'
                with self.subTest(what=what, exc=exc):
                    self.answer(method, url, {'exc': exc})
                    error = self.assertRaises(errors.TimedOut, call)
                    self.assertIn(
                        '%s: %s did not answer in time (Request to %s timed '
                        'out)' % (what, service, url), str(error))
                    self.assertIn('a write may or may not have taken '
                                  'effect', str(error))

    def test_answers_over_the_cap(self):
        for what, method, url, call in self.calls():
            service = 'Placement' if 'placement' in url else 'Nova'
            with self.subTest(what=what):
                self.answer(method, url, {'exc': http.AnswerTooLarge(
                    url + '?token=s3cret', 1024 * 1024)})
                error = self.assertRaises(errors.APIError, call)
                self.assertEqual(
                    "%(what)s: %(service)s's answer at %(path)s exceeds 1 "
                    "MiB once decoded; nothing of it was read. A compressed "
                    "answer that inflates so far is a fault of %(service)s "
                    "or of a proxy in front of it; if the answer is "
                    "genuine, raise gpuclient_max_answer_mib in the cloud's "
                    "clouds.yaml entry (or $GPUCLIENT_MAX_ANSWER_MIB)."
                    % {'what': what, 'service': service,
                       'path': urllib.parse.urlsplit(url).path},
                    str(error))

    def test_answers_without_the_json_they_must_hold(self):
        key = {'Reading flavor f1': 'flavor', 'Creating flavor g1': 'flavor',
               'Reading server s1': 'server',
               'Reading the server usage of every project': 'tenant_usages',
               'Listing resource providers': 'resource_providers'}
        for what, method, url, call in self.calls():
            service = 'Placement' if 'placement' in url else 'Nova'
            for answer, kind in (
                    ({'text': ''}, 'no Content-Type'),
                    ({'json': {'error': 'portal'}, 'headers': JSON},
                     'application/json'),
                    ({'json': ['a'], 'headers': JSON}, 'application/json'),
                    ({'text': '<html>Log in</html>',
                      'headers': {'Content-Type': 'text/html'}},
                     'text/html')):
                with self.subTest(what=what, answer=answer):
                    self.answer(method, url, answer)
                    error = self.assertRaises(errors.APIError, call)
                    self.assertEqual(
                        '%(what)s: %(service)s answered HTTP 200 at %(path)s '
                        'without a JSON object with "%(key)s" (%(kind)s): '
                        'is a proxy or a login page in front of it? Check '
                        'the %(service)s endpoint (the service catalog, or '
                        'its endpoint override in clouds.yaml); nothing was '
                        'read from this answer.'
                        % {'what': what, 'service': service, 'key': key[what],
                           'path': urllib.parse.urlsplit(url).path,
                           'kind': kind}, str(error))


class TestPinnedVersions(WireTestCase):
    """A compute_api_version of clouds.yaml (the proxy's default
    microversion, which the SDK's resources send when given none) is never
    sent instead of the version each call pins."""

    def test_a_default_microversion_is_not_sent(self):
        self.gpu.compute._proxy.default_microversion = '2.90'
        self.answer('GET', NOVA + '/flavors/f1',
                    {'json': {'flavor': dict(FLAVOR, id='f1')}})
        self.answer('POST', NOVA + '/flavors',
                    {'json': {'flavor': dict(FLAVOR, id='f1')}})
        self.answer('GET', NOVA + '/servers/s1', {'json': {'server': SERVER}})
        self.answer('GET', NOVA + '/os-simple-tenant-usage',
                    {'json': {'tenant_usages': []}})
        compute = self.gpu.compute
        for call, version in (
                (lambda: compute.get_flavor('f1'), 'compute 2.61'),
                (lambda: compute.create_flavor(name='g1', vcpus=1, ram=512,
                                               disk=0), 'compute 2.61'),
                (lambda: compute.get_server('s1'), 'compute 2.47'),
                (lambda: compute.server_usages(START, END), 'compute 2.40')):
            self.sent(call)
            self.assertEqual([version], [r[3] for r in self.requests])
