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

"""The client layer against answers a cloud should not give, seen by the
real ``openstack gpu`` process (issue 36, defects 2, 7 and 15).

* defect 7: a Prometheus URL with a password (with or without a scheme)
  is named by its host and port only, on stderr and in ``gpu check``'s
  findings;
* defect 2: Nova's endpoint (a ``compute_endpoint_override`` in a copy of
  the test cloud's clouds.yaml) is a portal answering 200 ``text/html``:
  ``gpu server list`` and ``gpu host drain --dry-run`` exit 1 naming Nova
  and the path, and the real Nova's services are as they were;
* defect 15: Prometheus sends its headers, then a byte a second: with
  ``api_timeout: 2`` the command ends in a few seconds, one line naming
  the host.
"""

import http.server
import json
import os
import socket
import subprocess
import threading
import time
import urllib.parse

import fixtures
import yaml

from gpuclient.tests.functional import base
from gpuclient.tests.functional import faults
from gpuclient.tests.functional import test_transport
from gpuclient.tests.unit import test_deadline

TEMP_CLOUD = 'gpuclient-trust-cloud'
SECRET = 'S3cret'


def closed_port():
    """A port on 127.0.0.1 that nothing listens on."""
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


class Portal(http.server.ThreadingHTTPServer):
    """Answers every request 200 text/html: an expired-session portal."""

    daemon_threads = True

    def __init__(self):
        class Handler(http.server.BaseHTTPRequestHandler):
            def answer(self):
                length = int(self.headers.get('Content-Length') or 0)
                if length:
                    self.rfile.read(length)
                body = (b'<html><body><h1>Your session has expired</h1>'
                        b'<a href="/login">Log in again</a></body></html>')
                self.send_response(200)
                self.send_header('Content-Type', 'text/html; charset=utf-8')
                self.send_header('Content-Length', str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = answer  # noqa

            def log_message(self, *args):
                pass

        super().__init__(('127.0.0.1', 0), Handler)
        self.url = 'http://127.0.0.1:%d' % self.server_address[1]
        self.thread = threading.Thread(target=self.serve_forever,
                                       daemon=True)
        self.thread.start()

    def close(self):
        self.shutdown()
        self.server_close()


class _PortalOnServerList(faults._ProxyHandler):
    """faults.HangingProxy's handler, but Nova's server list is a portal's
    page (200 text/html): every other read reaches the real Nova, every
    write hangs (it never reaches Nova)."""

    def do_GET(self):  # noqa: N802 - http.server's name
        if '/servers/detail' not in self.path:
            return super().do_GET()
        body = b'<html><body>Your session has expired</body></html>'
        self.send_response(200)
        self.send_header('Content-Type', 'text/html')
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class TestCloudAnswers(test_transport.TestPlacementEndpointOverride):
    """Its setUp reads the test cloud's clouds.yaml (self.clouds)."""

    test_override_is_used = None  # test_transport's own test runs there

    def temp_cloud(self, **settings):
        entry = dict(self.clouds[self.cloud], **settings)
        tmp = self.useFixture(fixtures.TempDir()).join('clouds.yaml')
        with open(tmp, 'w') as out:
            yaml.safe_dump({'clouds': {TEMP_CLOUD: entry}}, out)
        return dict(os.environ, OS_CLIENT_CONFIG_FILE=tmp,
                    PYTHONWARNINGS='ignore')

    def run_cli(self, *args, env=None, cloud=None, limit=120):
        """(exit status, stdout, stderr, seconds) of the real executable."""
        began = time.monotonic()
        proc = subprocess.run(
            [base.OPENSTACK, '--os-cloud', cloud or self.cloud, *args],
            env=env or dict(os.environ, PYTHONWARNINGS='ignore'),
            capture_output=True, text=True, timeout=limit)
        return (proc.returncode, proc.stdout, proc.stderr,
                time.monotonic() - began)

    # -- defect 7 ------------------------------------------------------------

    def test_a_prometheus_password_is_never_printed(self):
        host = '127.0.0.1:%d' % closed_port()
        for url in ('admin:%s@%s' % (SECRET, host),
                    'http://admin:%s@%s/p?token=%s' % (SECRET, host,
                                                       SECRET)):
            rc, out, err, _took = self.run_cli(
                'gpu', 'server', 'list', '--utilisation', '--prometheus',
                url)
            self.assertEqual(1, rc, out + err)
            self.assertNotIn(SECRET, out + err)
            self.assertNotIn('Traceback', err)
            self.assertIn(host, err)
        rc, out, err, _took = self.run_cli(
            'gpu', 'check', '--check', 'gpu-idle', '-f', 'json',
            '--prometheus', 'admin:%s@%s' % (SECRET, host))
        self.assertNotIn(SECRET, out + err)
        findings = json.loads(out)
        self.assertEqual(['Prometheus'], [f['Object'] for f in findings])
        self.assertIn('%s is not a Prometheus URL' % host,
                      findings[0]['Symptom'])

    # -- defect 2 ------------------------------------------------------------

    def services(self):
        """This stream's compute services (the other stream enables and
        disables its own hosts meanwhile: base.SECOND_STREAM_HOSTS)."""
        return sorted(
            (s['Host'], s['Status'], s.get('Disabled Reason'))
            for s in self.openstack('compute', 'service', 'list', '--long',
                                    '--service', 'nova-compute')
            if s['Host'] not in base.SECOND_STREAM_HOSTS)

    def test_an_html_portal_as_nova_is_an_error_naming_the_path(self):
        portal = Portal()
        self.addCleanup(portal.close)
        env = self.temp_cloud(
            compute_endpoint_override=portal.url + '/v2.1')
        before = self.services()
        host = before[0][0]
        for args in (('gpu', 'server', 'list'),
                     ('gpu', 'host', 'drain', host, '--dry-run')):
            rc, out, err, _took = self.run_cli(*args, env=env,
                                               cloud=TEMP_CLOUD)
            self.assertEqual(1, rc, out + err)
            self.assertNotIn('Traceback', err)
            self.assertIn('Nova answered HTTP 200 at /v2.1/', err)
            self.assertIn('(text/html)', err)
            self.assertNotIn('<html', err)
            # (openstacksdk warns first that it found no version document)
            self.assertIn('Nova answered HTTP 200 at /v2.1/',
                          err.strip().splitlines()[-1])
        # the real Nova, read with plain openstack: nothing cordoned
        self.assertEqual(before, self.services())

    @base.needs('passthrough')
    def test_a_portal_on_the_server_list_stops_a_drain_before_any_write(self):
        proxy = faults.HangingProxy(self.catalog_url('compute'), hold=5)
        proxy.RequestHandlerClass = _PortalOnServerList
        self.addCleanup(proxy.close)
        env = self.temp_cloud(compute_endpoint_override=proxy.url,
                              api_timeout=10)
        before = self.services()
        rc, out, err, _took = self.run_cli(
            'gpu', 'host', 'drain', base.PT_HOST, env=env, cloud=TEMP_CLOUD)
        self.assertEqual(1, rc, out + err)
        self.assertNotIn('Traceback', err)
        self.assertIn('Nova answered HTTP 200 at %s/servers/detail without'
                      % urllib.parse.urlsplit(proxy.url).path.rstrip('/'),
                      err)
        # no write was sent (the proxy holds writes), none reached Nova
        self.assertFalse(proxy.hung.is_set(), err)
        self.assertEqual(before, self.services())

    # -- defect 15 -----------------------------------------------------------

    def test_a_trickling_prometheus_is_cut_off_by_api_timeout(self):
        # headers, then a byte a second
        trickle = test_deadline.TrickleServer(body=b' ' * 100000, pause=1)
        self.addCleanup(trickle.close)
        host = trickle.url.split('//')[1]
        env = self.temp_cloud(api_timeout=2)
        rc, out, err, took = self.run_cli(
            'gpu', 'server', 'list', '--utilisation', '--prometheus',
            trickle.url, env=env, cloud=TEMP_CLOUD, limit=60)
        self.assertEqual(1, rc, out + err)
        self.assertNotIn('Traceback', err)
        self.assertEqual(1, len(err.strip().splitlines()), err)
        self.assertIn('Querying Prometheus at http://%s: no answer in time'
                      % host, err)
        # the interpreter's start, the cloud's reads, then 2 s
        self.assertLess(took, 30, err)
