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

Issue 51, defect 9 (TestInflatingAnswer): a server that answers every
request with a gzip bomb (0.4 MB on the wire, 400 MiB decoded), as
Placement (the override) and as Prometheus (``--prometheus``): the real
``openstack gpu`` process exits 1 with one line naming the service and the
cap (the default, 64 MiB: no setting), and its peak memory stays far below
the bomb's size (the figure is in the test's details).
"""

import os
import subprocess
import tempfile
import threading
import urllib.parse

import fixtures
import openstack
from testtools import content
import yaml

from gpuclient.tests.functional import base
from gpuclient.tests.unit import test_bounds

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


class TestInflatingAnswer(TestPlacementEndpointOverride):
    """Issue 51, defect 9: every answer capped once decoded."""

    test_override_is_used = None

    # far below the bomb (400 MiB decoded, held twice by the old reading),
    # far above what a gpu command needs (about 100 MB)
    MOST_RSS_MB = 300

    def bomb_cloud(self, **settings):
        """The environment of a copy of the test cloud's entry with
        SETTINGS, and no setting of the cap (its default applies)."""
        entry = dict(self.clouds[self.cloud], **settings)
        entry.pop('gpuclient_max_answer_mib', None)
        tmp = self.useFixture(fixtures.TempDir()).join('clouds.yaml')
        with open(tmp, 'w') as out:
            yaml.safe_dump({'clouds': {TEMP_CLOUD: entry}}, out)
        env = dict(os.environ, OS_CLIENT_CONFIG_FILE=tmp,
                   PYTHONWARNINGS='ignore')
        env.pop('GPUCLIENT_MAX_ANSWER_MIB', None)
        return env

    def run_child(self, env, *args):
        """(exit status, stdout, stderr, peak RSS in MB) of the real
        executable: its own resources, from wait4 (not the maximum over
        every child this process has waited for)."""
        with tempfile.TemporaryFile() as out, \
                tempfile.TemporaryFile() as err:
            proc = subprocess.Popen(
                [base.OPENSTACK, '--os-cloud', TEMP_CLOUD, *args],
                env=env, stdout=out, stderr=err)
            watchdog = threading.Timer(120, proc.kill)
            watchdog.start()
            try:
                _pid, status, usage = os.wait4(proc.pid, 0)
            finally:
                watchdog.cancel()
            proc.returncode = os.waitstatus_to_exitcode(status)
            out.seek(0)
            err.seek(0)
            # ru_maxrss: KiB on Linux
            return (proc.returncode, out.read().decode(),
                    err.read().decode(), usage.ru_maxrss / 1024)

    def test_a_gzip_bomb_as_placement_and_as_prometheus(self):
        bomb, wire, decoded = test_bounds.bomb_server(self)
        self.assertLess(wire, 0.5 * test_bounds.MIB)
        self.assertGreater(decoded, 400 * test_bounds.MIB)
        runs = {
            'Placement': (dict(placement_endpoint_override=bomb.url
                               + '/placement'), ['gpu', 'host', 'list'],
                          "Placement's answer at /placement exceeds 64 MiB "
                          "once decoded; nothing of it was read."),
            'Prometheus': ({}, ['gpu', 'server', 'list', '--utilisation',
                                '--prometheus', bomb.url],
                           "Querying Prometheus at %s: Prometheus's answer "
                           "at /api/v1/query exceeds 64 MiB once decoded"
                           % bomb.url),
        }
        report = []
        for service, (settings, args, expected) in runs.items():
            env = self.bomb_cloud(**settings)
            rc, out, err, rss = self.run_child(env, *args)
            report.append('%s: exited %d, peak RSS %.0f MB: %s' % (
                service, rc, rss, err.strip()))
            self.assertEqual(1, rc, report[-1])
            self.assertNotIn('Traceback', err)
            self.assertEqual(1, len(err.strip().splitlines()), err)
            self.assertIn(expected, err)
            self.assertLess(rss, self.MOST_RSS_MB, report[-1])
        self.addDetail('gzip bomb', content.text_content(
            'the bomb: %d bytes on the wire, %d decoded\n%s' % (
                wire, decoded, '\n'.join(report))))
