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

"""Issue 51, defects 8 and 9: every call bounded, every answer capped.

Real sockets on 127.0.0.1, driven through the real client layer (OSC's
session as ``plugin.bound_session`` has OSC build it, the SDK connection's
proxies under ``GpuClient``, ``prometheus.Prometheus``):

* a silent server: a listening socket that never answers (the kernel
  completes each connection; nothing is ever sent back);
* a stalled server: the status line and headers of an answer, then
  nothing;
* a gzip bomb: a JSON answer of 400 MiB in 0.4 MB on the wire.

The timeouts are set tiny through the settings ($GPUCLIENT_API_TIMEOUT);
no assertion is on the clock. Each silent server gives up after HOLD
seconds (it closes what it holds), so a call that is not bounded fails
its test instead of hanging it.
"""

import gzip
import socket
import threading
import tracemalloc

import fixtures
from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import fixture as ks_fixture
from openstack import connection
from openstackclient.compute.v2 import server as osc_server
from osc_lib import exceptions
import requests
from requests_mock.contrib import fixture as rm_fixture
import yaml

from gpuclient import plugin
from gpuclient.cloud import client
from gpuclient.cloud import errors
from gpuclient.cloud import http
from gpuclient.cloud import placement as placement_mod
from gpuclient.cloud import prometheus
from gpuclient.tests.unit import base
from gpuclient.tests.unit import test_deadline
from gpuclient.v1 import common

MIB = 1024 * 1024
HOLD = 20.0  # seconds a silent server waits before it gives up
TINY = '0.2'  # $GPUCLIENT_API_TIMEOUT of the tests, seconds
AUTH_URL = 'http://keystone.example/identity/v3'


class SilentServer:
    """Listens on 127.0.0.1 and never answers: connections complete (the
    kernel's backlog) and wait. ``connections()`` counts those made so
    far. After HOLD seconds it closes everything (a client still waiting
    then gets a reset, not an answer)."""

    def __init__(self, hold=HOLD):
        self.sock = socket.socket()
        self.sock.bind(('127.0.0.1', 0))
        self.sock.listen(16)
        self.url = 'http://127.0.0.1:%d' % self.sock.getsockname()[1]
        self.held = []
        self.lock = threading.Lock()
        self.timer = threading.Timer(hold, self.close)
        self.timer.daemon = True
        self.timer.start()

    def connections(self):
        with self.lock:
            self.sock.setblocking(False)
            while True:
                try:
                    self.held.append(self.sock.accept()[0])
                except OSError:
                    break
            return len(self.held)

    def close(self):
        self.timer.cancel()
        with self.lock:
            for sock in self.held + [self.sock]:
                sock.close()


class AnswerServer(test_deadline.LocalServer):
    """Answers every request on 127.0.0.1 with HEAD (status line and
    headers) and BODY; with STALL, sends HEAD and then nothing until
    closed."""

    backlog = 16

    def __init__(self, head, body=b'', stall=False):
        self.head, self.body, self.stall = head, body, stall
        self.answered = 0
        super().__init__()

    def answer(self, conn):
        try:
            conn.settimeout(HOLD)
            while conn.recv(65536):
                self.answered += 1
                conn.sendall(self.head + b'\r\n')
                if self.stall:
                    self.stop.wait(HOLD)
                    break
                conn.sendall(self.body)
        except OSError:
            pass
        finally:
            conn.close()


def gzip_bomb(decoded_mib=400):
    """(wire bytes, decoded size) of a gzip JSON answer: gzip members
    one after the other (RFC 1952), each 1 MiB of blanks, inside
    ``{"resource_providers": [...]}``."""
    member = gzip.compress(b' ' * MIB, 9)
    head = b'{"resource_providers": ['
    body = (gzip.compress(head, 9) + member * decoded_mib
            + gzip.compress(b']}', 9))
    return body, len(head) + decoded_mib * MIB + 2


def bomb_server(test, decoded_mib=400):
    body, decoded = gzip_bomb(decoded_mib)
    server = AnswerServer(
        b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n'
        b'Content-Encoding: gzip\r\nContent-Length: %d\r\n' % len(body),
        body)
    test.addCleanup(server.close)
    return server, len(body), decoded


def stalled_server(test):
    server = AnswerServer(
        b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n'
        b'Content-Length: 1000\r\n', stall=True)
    test.addCleanup(server.close)
    return server


class BoundsTestCase(base.TestCase):

    def setUp(self):
        super().setUp()
        for name in (http.TIMEOUT_ENV, http.MAX_ANSWER_ENV):
            self.useFixture(fixtures.EnvironmentVariable(name))

    def silent(self):
        server = SilentServer()
        self.addCleanup(server.close)
        return server

    def tiny_timeout(self):
        self.useFixture(fixtures.EnvironmentVariable(http.TIMEOUT_ENV,
                                                     TINY))

    def cloud_config(self, **cloud):
        """openstacksdk's configuration of one cloud, c, as OSC's shell
        loads it (an OSC_Config)."""
        from osc_lib.cli import client_config

        path = self.useFixture(fixtures.TempDir()).join('clouds.yaml')
        with open(path, 'w') as out:
            yaml.safe_dump({'clouds': {'c': cloud}}, out)
        return client_config.OSC_Config(
            config_files=[path], vendor_files=[], secure_files=[],
            load_envvars=False)

    def osc_app(self, **cloud):
        """What plugin.bound_session is given: OSC's shell, with its
        cloud configuration and the client manager whose _cli_options is
        the CloudRegion of the command (prepare_to_run_command's)."""
        config = self.cloud_config(**cloud)
        manager = type('ClientManager', (), {})()
        app = type('Shell', (), {'cloud_config': config,
                                 'client_manager': manager})()
        return app

    def osc_session(self, app):
        """The session OSC's ClientManager.setup_auth builds."""
        region = app.cloud_config.get_one('c')
        app.client_manager._cli_options = region
        return region.get_session()


def password_cloud(auth_url, **settings):
    cloud = {'auth_type': 'password',
             'auth': {'auth_url': auth_url, 'username': 'u',
                      'password': 'p', 'project_name': 'p',
                      'user_domain_name': 'Default',
                      'project_domain_name': 'Default'},
             'region_name': 'RegionOne'}
    cloud.update(settings)
    return cloud


class TestOscSession(BoundsTestCase):
    """The session OSC builds, before gpuclient's client exists."""

    def test_without_any_setting_the_session_is_bounded(self):
        app = self.osc_app(**password_cloud('http://keystone.example/v3'))
        # what OSC builds by itself: no timeout at all
        self.assertIsNone(self.osc_session(app).timeout)
        plugin.bound_session(app)
        session = self.osc_session(app)
        self.assertEqual((http.CONNECT_TIMEOUT, http.READ_TIMEOUT),
                         session.timeout)
        self.assertEqual((10.0, 120.0), session.timeout)
        for prefix in ('http://', 'https://'):
            adapter = session.session.adapters[prefix]
            self.assertIsInstance(adapter, http.DeadlineAdapter)
            self.assertEqual(120.0, adapter.total)
            self.assertEqual(64 * MIB, adapter.max_bytes)
        # once: a second command object changes nothing
        constructor = app.cloud_config._session_constructor
        plugin.bound_session(app)
        self.assertIs(constructor, app.cloud_config._session_constructor)

    def test_settings(self):
        cases = [
            # (clouds.yaml, environment, session timeout, total, cap MiB)
            ({}, {http.TIMEOUT_ENV: '3'}, 3.0, 3.0, 64),
            ({'api_timeout': 7}, {http.TIMEOUT_ENV: '3'}, 7, 7.0, 64),
            ({'gpuclient_max_answer_mib': 2}, {}, (10.0, 120.0), 120.0, 2),
            ({}, {http.MAX_ANSWER_ENV: '0.5'}, (10.0, 120.0), 120.0, 0.5),
            ({'gpuclient_max_answer_mib': '8'}, {http.MAX_ANSWER_ENV: '1'},
             (10.0, 120.0), 120.0, 8),
        ]
        for settings, env, timeout, total, cap in cases:
            with fixtures.EnvironmentVariable(
                    http.TIMEOUT_ENV, env.get(http.TIMEOUT_ENV)), \
                    fixtures.EnvironmentVariable(
                        http.MAX_ANSWER_ENV, env.get(http.MAX_ANSWER_ENV)):
                app = self.osc_app(**password_cloud(AUTH_URL, **settings))
                plugin.bound_session(app)
                session = self.osc_session(app)
                adapter = session.session.adapters['https://']
                self.assertEqual(timeout, session.timeout, settings)
                self.assertEqual(total, adapter.total, settings)
                self.assertEqual(int(cap * MIB), adapter.max_bytes, settings)

    def test_a_setting_that_is_not_a_positive_number_is_refused(self):
        for name in (http.TIMEOUT_ENV, http.MAX_ANSWER_ENV):
            for value in ('abc', '0', '-1', 'inf'):
                with fixtures.EnvironmentVariable(name, value):
                    error = self.assertRaises(
                        exceptions.CommandError, http.set_timeouts,
                        self.osc_session(self.osc_app(
                            **password_cloud(AUTH_URL))))
                self.assertEqual('$%s=%s: give a number greater than 0'
                                 % (name, value), str(error))
        error = self.assertRaises(
            exceptions.CommandError, http.max_answer_bytes,
            {'gpuclient_max_answer_mib': 'lots'})
        self.assertIn('gpuclient_max_answer_mib=lots', str(error))

    def test_every_gpu_command_and_no_other_bounds_the_session(self):
        commands = base.declared_entry_points()['openstack.gpu.v1']
        self.assertGreater(len(commands), 30)
        for name, target in sorted(commands.items()):
            module, _sep, attr = target.partition(':')
            cls = getattr(__import__(module, fromlist=[attr]), attr)
            self.assertTrue(issubclass(cls, common._Bounded), name)
            app = self.osc_app(**password_cloud(AUTH_URL))
            cls(app, None)
            self.assertTrue(app.cloud_config._session_constructor
                            .gpuclient_bounded, name)
        # OSC's own commands leave OSC's session as OSC builds it
        app = self.osc_app(**password_cloud(AUTH_URL))
        osc_server.ListServer(app, None)
        self.assertIsNone(app.cloud_config._session_constructor)
        self.assertIsNone(self.osc_session(app).timeout)


class TestSilentServices(BoundsTestCase):
    """A service that accepts and never answers, or answers its headers
    and then nothing: the call ends in a timeout error naming the service,
    and the service is waited for once per command, not once per request
    (version discovery, then the call)."""

    def setUp(self):
        super().setUp()
        self.tiny_timeout()
        placement_mod.Placement._max_versions.clear()
        self.addCleanup(placement_mod.Placement._max_versions.clear)

    def gpu_client(self, catalog=None, **settings):
        """A GpuClient over an SDK connection whose token comes from a
        fake Keystone (requests_mock) with CATALOG ({service type: URL});
        every other request goes to the real sockets of the test."""
        mock = self.useFixture(rm_fixture.Fixture(real_http=True))
        token = ks_fixture.V3Token()
        catalog = dict({'placement': 'http://placement.example',
                        'compute': 'http://nova.example/v2.1'},
                       **(catalog or {}))
        for service, url in catalog.items():
            token.add_service(service).add_endpoint('public', url,
                                                    region='RegionOne')
        mock.post(AUTH_URL + '/auth/tokens', json=token,
                  headers={'X-Subject-Token': 'subject-token'})
        cloud = {'auth_type': 'v3token',
                 'auth': {'auth_url': AUTH_URL, 'token': 'secret',
                          'project_id': 'p1'},
                 'region_name': 'RegionOne', 'interface': 'public'}
        cloud.update(settings)
        config = self.cloud_config(**cloud)
        conn = connection.Connection(config=config.get_one('c'))
        self.addCleanup(conn.close)
        return client.GpuClient(conn.session, conn, cloud_config=cloud,
                                max_bytes=http.max_answer_bytes(cloud))

    def test_keystone_version_discovery(self):
        # the first request OSC sends for a gpu command, before
        # gpuclient's client exists: discovery, then the token
        keystone = self.silent()
        app = self.osc_app(**password_cloud(keystone.url + '/v3'))
        plugin.bound_session(app)
        session = self.osc_session(app)
        error = self.assertRaises(ks_exc.ConnectTimeout, session.get_token)
        self.assertIn('timed out', str(error))
        # discovery waited; the token request was not sent to it
        self.assertEqual(1, keystone.connections())

    def test_placement(self):
        placement = self.silent()
        gpu = self.gpu_client(
            placement_endpoint_override=placement.url + '/placement')
        error = self.assertRaises(
            errors.TimedOut, lambda: gpu.placement.resource_providers())
        self.assertIn('Placement did not answer in time', str(error))
        self.assertIn(placement.url + '/placement', str(error))
        self.assertEqual(1, len(str(error).splitlines()))
        # version discovery (twice), the version, the list: one wait
        self.assertEqual(1, placement.connections())
        # and the next call is not sent either
        self.assertRaises(errors.TimedOut,
                          lambda: gpu.placement.resource_classes())
        self.assertEqual(1, placement.connections())

    def test_nova(self):
        nova = self.silent()
        gpu = self.gpu_client(compute_endpoint_override=nova.url + '/v2.1')
        error = self.assertRaises(errors.TimedOut,
                                  lambda: gpu.compute.hypervisors())
        self.assertIn('Nova did not answer in time', str(error))
        self.assertIn(nova.url + '/v2.1', str(error))
        self.assertEqual(1, nova.connections())

    def test_a_silent_catalog_endpoint_is_said_to_be_a_timeout(self):
        # the catalog's endpoint (no override): keystoneauth's discovery
        # swallows the timeout and the SDK says only that it found no
        # version; the error says what happened
        placement = self.silent()
        gpu = self.gpu_client({'placement': placement.url + '/placement'})
        error = self.assertRaises(errors.TimedOut, lambda: gpu.placement)
        self.assertIn('Connecting to Placement: Placement did not answer '
                      'in time (GET %s/placement timed out)' % placement.url,
                      str(error))

    def test_prometheus(self):
        server = self.silent()
        error = self.assertRaises(errors.TimedOut, prometheus.Prometheus(
            server.url).query, 'up')
        self.assertIn('Querying Prometheus at %s: no answer in time'
                      % server.url, str(error))
        self.assertEqual(1, len(str(error).splitlines()))

    def test_headers_then_nothing(self):
        server = stalled_server(self)
        gpu = self.gpu_client(
            placement_endpoint_override=server.url + '/placement')
        error = self.assertRaises(
            errors.TimedOut, lambda: gpu.placement.resource_providers())
        self.assertIn('Placement did not answer in time', str(error))
        self.assertEqual(1, server.answered)
        other = stalled_server(self)
        error = self.assertRaises(errors.TimedOut, prometheus.Prometheus(
            other.url).query, 'up')
        self.assertIn('no answer in time', str(error))


class TestAnswerCap(BoundsTestCase):
    """A gzip answer that inflates: cut off at the cap once decoded, with
    one line naming the service; memory holds the cap and a chunk."""

    def test_the_bomb_is_what_it_says(self):
        body, decoded = gzip_bomb()
        self.assertLess(len(body), 0.5 * MIB)
        self.assertGreater(decoded, 400 * MIB)

    def test_memory_holds_the_cap_and_a_chunk(self):
        server, _wire, _decoded = bomb_server(self)
        session = requests.Session()
        http.bound_total_time(session, 60, max_bytes=MIB)
        tracemalloc.start()
        self.addCleanup(tracemalloc.stop)
        error = self.assertRaises(http.AnswerTooLarge, session.get,
                                  server.url + '/x')
        peak = tracemalloc.get_traced_memory()[1]
        # the cap, one compressed read inflated (with its copy), and what
        # requests and urllib3 hold themselves: whatever urllib3's version
        # (before 2.6 it inflates a whole read at once: the floors)
        one_read = http.MAX_INFLATE * http._ENCODED_CHUNK
        self.assertLess(peak, MIB + 2 * one_read + 2 * MIB)
        self.assertEqual('the answer of %s/x exceeds 1 MiB once decoded '
                         '(gpuclient_max_answer_mib in clouds.yaml or '
                         '$GPUCLIENT_MAX_ANSWER_MIB raises the cap)'
                         % server.url, str(error))
        tracemalloc.stop()
        # under the cap, such an answer is read whole
        server, _wire, decoded = bomb_server(self, decoded_mib=8)
        http.bound_total_time(session, 60, max_bytes=decoded)
        response = session.get(server.url + '/x')
        self.assertEqual(decoded, len(response.content))
        self.assertEqual({'resource_providers': []}, response.json())

    def test_placement(self):
        server, _wire, _decoded = bomb_server(self)
        gpu = TestSilentServices.gpu_client(
            self, placement_endpoint_override=server.url + '/placement',
            gpuclient_max_answer_mib=1)
        error = self.assertRaises(
            errors.APIError, lambda: gpu.placement.resource_providers())
        self.assertEqual(1, len(str(error).splitlines()))
        self.assertIn("Connecting to Placement: Placement's answer at "
                      "/placement exceeds 1 MiB once "
                      "decoded; nothing of it was read.", str(error))
        self.assertIn('raise gpuclient_max_answer_mib in the cloud\'s '
                      'clouds.yaml entry (or $GPUCLIENT_MAX_ANSWER_MIB)',
                      str(error))

    def test_prometheus(self):
        server, _wire, _decoded = bomb_server(self)
        self.useFixture(fixtures.EnvironmentVariable(http.MAX_ANSWER_ENV,
                                                     '2'))
        error = self.assertRaises(errors.APIError, prometheus.Prometheus(
            server.url).query, 'up')
        self.assertEqual(1, len(str(error).splitlines()))
        self.assertIn('Querying Prometheus at %s: Prometheus\'s answer at '
                      '/api/v1/query exceeds 2 MiB once decoded'
                      % server.url, str(error))

    def test_keystone(self):
        server, _wire, _decoded = bomb_server(self)
        app = self.osc_app(**password_cloud(
            server.url + '/v3', gpuclient_max_answer_mib=1))
        plugin.bound_session(app)
        error = self.assertRaises(http.AnswerTooLarge,
                                  self.osc_session(app).get_token)
        self.assertIn('the answer of %s/v3 exceeds 1 MiB' % server.url,
                      str(error))

    def test_the_default_cap(self):
        self.assertEqual(64 * MIB, http.max_answer_bytes())
        self.assertEqual(64 * MIB, http.max_answer_bytes({}))
        self.assertEqual(64 * MIB, prometheus.Prometheus(
            'http://prom:9090').session.adapters['http://'].max_bytes)

