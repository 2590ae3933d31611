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

"""Placement transport: clouds.yaml's ``placement_endpoint_override``.

gpuclient reaches Placement through the SDK connection OSC builds from
clouds.yaml, so a per-service endpoint override applies to it. The test
copies the test cloud's entry into a temporary clouds.yaml, adds the
override, and runs the real ``openstack gpu host list`` with it: a wrong
URL makes the command fail naming that URL (the catalog's endpoint would
have worked), the right one (spelt differently from the catalog when it
can be) works and is what the requests went to.
"""

import os
import urllib.parse

import fixtures
import openstack
import yaml

from gpuclient.tests.functional import base

# nothing listens on the discard port
WRONG_URL = 'http://127.0.0.1:9/gpuclient-no-placement-here'
TEMP_CLOUD = 'gpuclient-transport'


def inventory(rows):
    return sorted((r['Host'], r['Resource Class'], r['Devices'], r['Total'])
                  for r in rows)


class TestPlacementEndpointOverride(base.FunctionalTestCase):

    def setUp(self):
        super().setUp()
        path = os.environ.get('OS_CLIENT_CONFIG_FILE')
        if not path:
            self.skipTest('needs OS_CLIENT_CONFIG_FILE (the test cloud\'s '
                          'clouds.yaml) to copy a cloud from')
        with open(path) as conf:
            self.clouds = yaml.safe_load(conf)['clouds']
        self.assertIn(self.cloud, self.clouds)

    def with_override(self, url):
        """Point OS_CLIENT_CONFIG_FILE at a copy that overrides Placement."""
        entry = dict(self.clouds[self.cloud], placement_endpoint_override=url)
        tmp = self.useFixture(fixtures.TempDir()).join('clouds.yaml')
        with open(tmp, 'w') as out:
            yaml.safe_dump({'clouds': {TEMP_CLOUD: entry}}, out)
        self.useFixture(fixtures.EnvironmentVariable(
            'OS_CLIENT_CONFIG_FILE', tmp))

    def catalog_url(self, service_type='placement'):
        """The service's URL in the catalog (region and interface of the
        cloud), read in-process: cheaper than one more CLI run."""
        conn = openstack.connect(cloud=self.cloud)
        self.addCleanup(conn.close)
        url = conn.session.get_endpoint(
            service_type=service_type,
            interface=conn.config.get_interface(service_type),
            region_name=conn.config.get_region_name(service_type))
        self.assertTrue(url)
        return url

    def test_override_is_used(self):
        expected = self.openstack('gpu', 'host', 'list')
        self.assertTrue(expected, 'the test cloud has GPU hosts')
        url = self.catalog_url()

        # a wrong override: the command fails and names it, although the
        # catalog's endpoint works
        self.with_override(WRONG_URL)
        rc, out, err = self.openstack_raw('gpu', 'host', 'list',
                                          cloud=TEMP_CLOUD)
        self.assertNotEqual(0, rc, out)
        self.assertIn('cannot connect to Placement at %s' % WRONG_URL, err)

        # the real Placement, spelt another way where the catalog uses
        # the loopback address, so the requests show which one was used
        parts = urllib.parse.urlsplit(url)
        if parts.hostname == '127.0.0.1':
            url = parts._replace(netloc=parts.netloc.replace(
                '127.0.0.1', 'localhost', 1)).geturl()
        self.with_override(url)
        rc, out, err = self.openstack_raw('--debug', 'gpu', 'host', 'list',
                                          '-f', 'json', cloud=TEMP_CLOUD)
        self.assertEqual(0, rc, err[-2000:])
        # the same inventory as through the catalog: the same Placement
        # (pools and usage may change meanwhile: other tests share the
        # cloud)
        self.assertEqual(inventory(expected), inventory(yaml.safe_load(out)))
        sent = url.rstrip('/') + '/resource_providers'
        self.assertIn(sent, err)
