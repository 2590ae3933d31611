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

"""gpuclient.cloud.reservation on a real keystoneauth session (requests
mocked at the transport): Blazar's host list is one GET to the catalog's
endpoint of the cloud's region and interface, v1, no version discovery;
each way Blazar cannot say is a CommandError with its status (issue 51,
defect 14)."""

from keystoneauth1 import fixture as ks_fixture
from openstack import connection
from osc_lib import exceptions
from requests_mock.contrib import fixture as rm_fixture

from gpuclient.cloud import client
from gpuclient.tests.unit import base
from gpuclient.tests.unit import test_client

AUTH_URL = 'http://keystone.example/identity/v3'
CATALOG = {  # (interface, region) -> Blazar URL in the catalog
    ('public', 'RegionOne'): 'http://blazar-one.example:1234/v1',
    ('internal', 'RegionOne'): 'http://blazar-internal.example:1234/v1',
    ('public', 'RegionTwo'): 'http://blazar-two.example:1234/v1',
}
# one record as blazar 18.0.0 answers GET /v1/os-hosts
RECORD = {'id': '1', 'service_name': 'gpu-pt-2',
          'hypervisor_hostname': 'gpu-pt-2', 'hypervisor_type': 'QEMU',
          'hypervisor_version': 9002000, 'vcpus': 64, 'memory_mb': 524288,
          'local_gb': 3500, 'cpu_info': '{}', 'status': None,
          'availability_zone': 'nova', 'reservable': True,
          'trust_id': 't1', 'created_at': '2026-12-01 08:00:00',
          'updated_at': None}


class TestBlazarHosts(base.TestCase):
    def setUp(self):
        super().setUp()
        self.mock = self.useFixture(rm_fixture.Fixture())
        token = ks_fixture.V3Token()
        service = token.add_service('reservation')
        for (interface, region), url in CATALOG.items():
            service.add_endpoint(interface, url, region=region)
            self.mock.get(url + '/os-hosts', json={'hosts': [RECORD]})
        self.mock.post(AUTH_URL + '/auth/tokens', json=token,
                       headers={'X-Subject-Token': 'subject-token'})

    AUTH_URL = AUTH_URL
    # an OpenStackConfig of one cloud, gpu-test, at AUTH_URL
    cloud_config = test_client.TestPlacementTransport.cloud_config

    def gpu_client(self, **settings):
        config = self.cloud_config(**settings).get_one('gpu-test')
        conn = connection.Connection(config=config)
        return client.GpuClient(conn.session, conn,
                                region_name=config.get_region_name(),
                                interface=config.get_interface())

    def blazar_requests(self, since=0):
        return [(r.method, '%s://%s%s' % (r.scheme, r.netloc, r.path))
                for r in self.mock.request_history[since:]
                if 'keystone' not in r.netloc]

    def test_one_get_to_the_catalog_endpoint(self):
        for settings, url in (
                ({}, CATALOG['public', 'RegionOne']),
                ({'region_name': 'RegionTwo'}, CATALOG['public',
                                                       'RegionTwo']),
                ({'interface': 'internal'}, CATALOG['internal',
                                                    'RegionOne'])):
            before = len(self.mock.request_history)
            self.assertEqual([RECORD],
                             self.gpu_client(**settings).reservation.hosts())
            self.assertEqual([('GET', url + '/os-hosts')],
                             self.blazar_requests(before), settings)

    def test_what_blazar_cannot_say_is_a_clear_error(self):
        url = CATALOG['public', 'RegionOne'] + '/os-hosts'
        for status, body, said in (
                (403, {'error_code': 403, 'error_name': 403,
                       'error_message': "Policy doesn't allow "
                                        'blazar:oshosts:get to be '
                                        'performed'},
                 "forbidden: Policy doesn't allow blazar:oshosts:get"),
                (404, {'error': 404, 'error_message': 'The requested URL '
                       'was not found on the server.'}, 'not found'),
                (500, {'error_code': 500, 'error_name': 500,
                       'error_message': 'Internal Server Error'},
                 'HTTP 500'),
                # the v2 API's shape, or a proxy's page: not read
                (200, [RECORD], 'without a JSON object with "hosts"'),
                (200, {'hosts': ['gpu-pt-2']},
                 'without a JSON object with "hosts"')):
            self.mock.get(url, status_code=status, json=body)
            exc = self.assertRaises(exceptions.CommandError,
                                    self.gpu_client().reservation.hosts)
            self.assertIn('Listing the hosts enrolled in Blazar (GET '
                          '/os-hosts)', str(exc))
            self.assertIn(said, str(exc), status)
