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

"""Defect 15: every call's total time is bounded (http.DeadlineAdapter),
against a real socket on 127.0.0.1 that trickles its answer."""

import socket
import threading
import time

from keystoneauth1 import session as ks_session
import requests

from gpuclient.cloud import client as client_mod
from gpuclient.cloud import errors
from gpuclient.cloud import http
from gpuclient.cloud import prometheus
from gpuclient.tests.unit import base


class LocalServer:
    """A server on 127.0.0.1 (a free port) that answers each connection
    in a thread of its own with ``answer(conn)``; ``close`` stops it."""

    backlog = 8

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(('127.0.0.1', 0))
        self.sock.listen(self.backlog)
        self.sock.settimeout(0.2)
        self.url = 'http://127.0.0.1:%d' % self.sock.getsockname()[1]
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        while not self.stop.is_set():
            try:
                conn, _addr = self.sock.accept()
            except OSError:
                continue
            threading.Thread(target=self.answer, args=(conn,),
                             daemon=True).start()

    def answer(self, conn):
        raise NotImplementedError

    def close(self):
        self.stop.set()
        self.sock.close()
        self.thread.join(2)


class TrickleServer(LocalServer):
    """Answers each connection with headers, then BODY a byte every
    PAUSE seconds (a proxy or a server that never stops sending)."""

    def __init__(self, body=b'{"servers": []}' * 1000, pause=0.05,
                 chunked=False):
        self.body, self.pause, self.chunked = body, pause, chunked
        super().__init__()

    def answer(self, conn):
        try:
            # keep-alive: a whole answer leaves the connection open for
            # the next request, as a real server does (closing it races
            # with the client reusing it from its pool)
            while conn.recv(65536) and self.respond(conn):
                pass
        except OSError:
            pass
        finally:
            conn.close()

    def respond(self, conn):
        """Answer one request; True when the connection stays usable."""
        if self.chunked:
            head = b'Transfer-Encoding: chunked\r\n'
        else:
            head = b'Content-Length: %d\r\n' % len(self.body)
        conn.sendall(b'HTTP/1.1 200 OK\r\nContent-Type: '
                     b'application/json\r\n' + head + b'\r\n')
        if not self.pause:
            if self.chunked:
                conn.sendall(b'%x\r\n%s\r\n0\r\n\r\n'
                             % (len(self.body), self.body))
            else:
                conn.sendall(self.body)
            return True
        for i in range(len(self.body)):
            if self.stop.is_set():
                break
            byte = self.body[i:i + 1]
            if self.chunked:
                byte = b'1\r\n' + byte + b'\r\n'
            conn.sendall(byte)
            time.sleep(self.pause)
        if self.chunked:
            conn.sendall(b'0\r\n\r\n')
        return False


class TestDeadlineAdapter(base.TestCase):
    def server(self, **kwargs):
        server = TrickleServer(**kwargs)
        self.addCleanup(server.close)
        return server

    def test_a_trickling_answer_is_cut_off_at_the_bound(self):
        for chunked in (False, True):
            server = self.server(chunked=chunked)
            session = requests.Session()
            http.bound_total_time(session, 0.5)
            began = time.monotonic()
            error = self.assertRaises(requests.exceptions.ReadTimeout,
                                      session.get, server.url + '/x',
                                      timeout=(5, 5))
            took = time.monotonic() - began
            self.assertLess(took, 1.5)
            self.assertGreaterEqual(took, 0.45)
            self.assertIn('did not end within 0.5 s', str(error))

    def test_whole_answers_are_read_as_they_are(self):
        body = b'{"servers": [%s]}' % b','.join(
            b'{"id": "%d"}' % i for i in range(5000))
        for chunked in (False, True):
            server = self.server(body=body, pause=0, chunked=chunked)
            session = requests.Session()
            http.bound_total_time(session, 5)
            response = session.get(server.url + '/x')
            self.assertEqual(body, response.content)
            self.assertEqual(5000, len(response.json()['servers']))
            # the connection went back to the pool, still usable
            self.assertEqual(body, session.get(server.url + '/y').content)

    def test_a_silent_server_is_cut_off_at_the_bound_too(self):
        server = self.server(pause=10)  # one byte, then nothing for 10 s
        session = requests.Session()
        http.bound_total_time(session, 0.5)
        began = time.monotonic()
        self.assertRaises(requests.exceptions.ReadTimeout, session.get,
                          server.url, timeout=(5, 30))
        self.assertLess(time.monotonic() - began, 1.5)

    def test_keystoneauth_sessions_get_the_bound(self):
        # the default bound, or clouds.yaml's api_timeout; around the
        # adapter keystoneauth mounted (keep-alive), once
        for api_timeout, total in ((None, http.TOTAL_TIMEOUT), (2, 2.0),
                                   ('7.5', 7.5)):
            session = ks_session.Session()
            keepalive = session.session.adapters['https://']
            client_mod.GpuClient(session, None, api_timeout=api_timeout)
            for prefix in ('http://', 'https://'):
                adapter = session.session.adapters[prefix]
                self.assertIsInstance(adapter, http.DeadlineAdapter)
                self.assertEqual(total, adapter.total)
            self.assertIs(keepalive, session.session.adapters[
                'https://'].inner)
            http.set_timeouts(session, 3)
            self.assertEqual(3.0, session.session.adapters['http://'].total)
            self.assertIs(keepalive, session.session.adapters[
                'https://'].inner)
        self.assertEqual(120.0, http.TOTAL_TIMEOUT)

    def test_a_keystoneauth_call_ends_in_a_timeout_error(self):
        server = self.server()
        session = ks_session.Session()
        http.set_timeouts(session, 0.5)
        began = time.monotonic()
        error = self.assertRaises(errors.TimedOut, self._nova_get, session,
                                  server.url + '/servers?token=s3cret')
        self.assertLess(time.monotonic() - began, 1.5)
        self.assertIn('Listing servers: Nova did not answer in time',
                      str(error))
        self.assertIn(server.url + '/servers', str(error))
        self.assertNotIn('s3cret', str(error))

    @staticmethod
    def _nova_get(session, url):
        with errors.translate_errors('Nova', 'Listing servers'):
            session.get(url, authenticated=False)

    def test_prometheus_is_bounded_by_api_timeout_or_the_default(self):
        server = self.server(body=b'{"status": "success"}' * 100)
        client = prometheus.Prometheus(server.url, timeout=0.5)
        self.assertEqual(0.5, client.session.adapters['http://'].total)
        began = time.monotonic()
        error = self.assertRaises(errors.TimedOut, client.query, 'up')
        self.assertLess(time.monotonic() - began, 1.5)
        self.assertEqual(1, len(str(error).splitlines()))
        self.assertIn('Querying Prometheus at %s: no answer in time'
                      % server.url, str(error))
        self.assertEqual(http.TOTAL_TIMEOUT, prometheus.Prometheus(
            server.url).session.adapters['https://'].total)
