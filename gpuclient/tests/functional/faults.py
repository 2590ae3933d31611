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

"""Fault injection for functional tests: fail the k-th write, in-process.

A test builds a ``GpuClient`` on the real cloud (``make_client``), installs
a ``FaultInjector`` on it and arms it: the k-th write (POST, PUT, PATCH or
DELETE) that the client sends to Nova, Placement, Glance or Keystone's
limits API then fails in one of four ways (``KINDS``), while every other
request goes through untouched. Keystone's token requests are never counted.

The injector is a ``requests`` transport adapter mounted on the
keystoneauth session's ``requests.Session``, so it sits below keystoneauth
and the SDK: what the client layer sees is what it would see from a real
failing service or a real dropped connection.

``cloud_state`` and ``diff_states`` say whether a failed command left the
cloud as it was (or as far as it got): a snapshot of everything gpuclient
writes (host aggregates, custom provider traits, pool traits, flavors) and
a readable difference of two snapshots.

Typical use::

    client = faults.make_client()
    injector = self.useFixture(faults.FaultInjector(client))
    injector.reset()
    run(client)                       # learn N = len(injector.writes)
    for k in range(1, N + 1):
        before = faults.cloud_state(client, names=[prefix])
        injector.arm(k, 'drop')
        ...
"""

import http.client
import http.server
import io
import json
import logging
import os
import re
import signal
import socket
import threading
import time
import urllib.parse
import uuid

import fixtures
import openstack
import requests
from requests import adapters as req_adapters
from urllib3 import exceptions as urllib3_exc
from urllib3 import response as urllib3_response

from gpuclient.cloud import client as gpu_client
from gpuclient.cloud import errors
from gpuclient.cloud import versions
from gpuclient.ops import journal
from gpuclient.rules import pools as pool_mod

LOG = logging.getLogger(__name__)

KINDS = ('500', '409', 'drop', 'nonjson')
# a hung service (see HungServer): the write never reaches it ('hang'), or
# it happened and its answer never comes ('hang-after'); both end in a real
# read timeout of the request. 'sigint2': as 'hang-after', and the
# process gets SIGINT twice while it waits (the operator's second Ctrl-C)
HANG_KINDS = ('hang', 'hang-after', 'sigint2')
# the read timeout (seconds) of a hung request: the session's own, capped
# at this (GPUCLIENT_FT_HANG_TIMEOUT), so that a hung write costs little
# while every other request keeps gpuclient's timeouts (the real services
# of a loaded test cloud take seconds at times)
HANG_TIMEOUT = float(os.environ.get('GPUCLIENT_FT_HANG_TIMEOUT', '1'))
# the second SIGINT of 'sigint2' is sent only once the journal's handler
# has run for the first (SignalHandshake: the warning it logs), because
# Linux keeps one pending SIGINT per thread and Python runs the handler
# between two bytecodes of the main thread: a second SIGINT sent before
# that is lost, and the step waits out SIGINT2_TIMEOUT (seen in CI with a
# fixed gap of 0.2 s, and feared at 1 s on a loaded machine). This bounds
# the wait for that handler run: a handshake that does not come is
# recorded (FaultInjector.handshakes) and the test asserts on it once.
HANDSHAKE_TIMEOUT = 30.0
# the read timeout of a 'sigint2' request: the second SIGINT ends its wait,
# so the timeout only bounds a test gone wrong; it must not fire first on a
# loaded machine (then the step fails by timeout, not by abandonment)
SIGINT2_TIMEOUT = 60.0
WRITE_METHODS = frozenset(('POST', 'PUT', 'PATCH', 'DELETE'))
# path fragments of Keystone requests (token requests above all), which
# are never counted whatever the catalog says
IDENTITY_MARKERS = ('/identity', '/v3/auth')
# Keystone writes that are counted: limits and registered limits
LIMITS_PATH = re.compile(r'/v3/(registered_)?limits(/|$)')
SERVICES = ('compute', 'placement', 'image', 'identity')
NONJSON_BODY = b'<html><body>Bad Gateway from proxy</body></html>'
POOL_TRAIT_PREFIX = 'CUSTOM_GPU_POOL_'
TRAITS_VERSION = versions.PLACEMENT_TRAITS_VERSION


def make_client(cloud=None):
    """A GpuClient for CLOUD (default: $OS_CLOUD), wired as OSC wires it."""
    conn = openstack.connect(cloud=cloud or os.environ.get('OS_CLOUD'))
    return gpu_client.GpuClient(
        session=conn.session,
        sdk_connection=conn,
        region_name=conn.config.get_region_name(),
        interface=conn.config.get_interface(),
    )


def _base_url(url):
    """An endpoint without its trailing version and project segments."""
    parts = urllib.parse.urlsplit(url or '')
    segments = [s for s in parts.path.split('/') if s]
    while segments and (
        re.fullmatch(r'v\d+(\.\d+)?', segments[-1])
        or re.fullmatch(r'[0-9a-f]{32}', segments[-1])
        or '%(' in segments[-1]
        or segments[-1].startswith('$(')
    ):
        segments.pop()
    path = ('/' + '/'.join(segments)) if segments else ''
    return '%s://%s%s' % (parts.scheme, parts.netloc, path)


def _under(url, base):
    return url == base or url.startswith((base + '/', base + '?'))


def _error_body(service, status, request_id):
    """The JSON body a real service would send for an injected error."""
    if status == 409:
        if service in ('compute', 'image'):
            return {'conflictingRequest': {
                'code': 409, 'message': 'injected conflict'}}
        return {'errors': [{
            'status': 409, 'title': 'Conflict',
            'detail': 'injected conflict',
            'code': 'placement.concurrent_update'}]}
    if service in ('compute', 'image'):
        return {'computeFault': {
            'code': 500,
            'message': 'Unexpected API Error (injected fault). Please '
                       'report this at http://bugs.launchpad.net/nova/ and '
                       'attach the Nova API log if possible.'}}
    return {'errors': [{
        'status': 500, 'title': 'Internal Server Error',
        'detail': 'injected server error', 'request_id': request_id}]}


class HungServer:
    """A TCP server on 127.0.0.1 that accepts, reads, and never answers.

    What a hung Placement or Nova looks like from the client: the
    connection is made, the request is sent, no byte comes back, so only
    the client's own read timeout ends the wait. ``arrived`` is set when a
    request has come in. Connections are held until ``close()``; the
    server stops by itself after ``hold`` idle seconds (``closed``).
    """

    def __init__(self, hold=120.0):
        self._hold = hold
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(('127.0.0.1', 0))
        self._sock.listen(16)
        self._sock.settimeout(0.2)
        self.port = self._sock.getsockname()[1]
        self.url = 'http://127.0.0.1:%d' % self.port
        self.arrived = threading.Event()
        self._held = []
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    @property
    def closed(self):
        return self._closed.is_set()

    def _serve(self):
        deadline = time.time() + self._hold
        while not self._closed.is_set() and time.time() < deadline:
            try:
                conn, _addr = self._sock.accept()
            except OSError:
                continue  # the accept timeout: look at the clock again
            deadline = time.time() + self._hold
            conn.settimeout(2.0)
            self._held.append(conn)
            try:
                if conn.recv(65536):
                    self.arrived.set()
            except OSError:
                pass
        self.close()

    def close(self):
        self._closed.set()
        for conn in self._held + [self._sock]:
            try:
                conn.close()
            except OSError:
                pass


class HangingProxy(http.server.ThreadingHTTPServer):
    """An HTTP proxy on 127.0.0.1 to one real service that hangs writes.

    GETs are forwarded to UPSTREAM (the real Placement, say) and answered
    as it answers; a POST, PUT, PATCH or DELETE is read and never answered
    (the service hung on the write): ``hung`` is set. For real processes
    pointed at it through ``<service>_endpoint_override`` in a clouds.yaml.
    """

    daemon_threads = True

    def __init__(self, upstream, hold=60.0):
        self.upstream = urllib.parse.urlsplit(upstream)
        self.hold = hold
        self.hung = threading.Event()
        self.release = threading.Event()
        super().__init__(('127.0.0.1', 0), _ProxyHandler)
        self.url = 'http://127.0.0.1:%d%s' % (self.server_address[1],
                                              self.upstream.path)
        self._thread = threading.Thread(target=self.serve_forever,
                                        kwargs={'poll_interval': 0.2},
                                        daemon=True)
        self._thread.start()

    def close(self):
        self.release.set()
        self.shutdown()
        self.server_close()


class _ProxyHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def log_message(self, fmt, *args):
        LOG.debug('hanging proxy: %s', fmt % args)

    def do_GET(self):  # noqa: N802 - http.server's name
        up = self.server.upstream
        conn = http.client.HTTPConnection(up.hostname, up.port, timeout=30)
        headers = {k: v for k, v in self.headers.items()
                   if k.lower() not in ('host', 'connection')}
        try:
            conn.request('GET', self.path, headers=headers)
            answer = conn.getresponse()
            body = answer.read()
        finally:
            conn.close()
        self.send_response(answer.status, answer.reason)
        for key, value in answer.getheaders():
            if key.lower() not in ('connection', 'transfer-encoding',
                                   'content-length'):
                self.send_header(key, value)
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _hang(self):
        length = int(self.headers.get('Content-Length') or 0)
        if length:
            self.rfile.read(length)
        self.server.hung.set()
        self.server.release.wait(self.server.hold)
        self.close_connection = True

    do_POST = do_PUT = do_PATCH = do_DELETE = _hang  # noqa: N815


def _capped(timeout, most):
    """A requests timeout (None, seconds or (connect, read)) whose read
    part is at most MOST."""
    if isinstance(timeout, tuple):
        return (timeout[0], min(timeout[1] or most, most))
    return (timeout, min(timeout or most, most))


class _HandlerRuns(logging.Handler):
    """Counts the journal's warnings that name SIGNAME (SignalHandshake)."""

    def __init__(self, signame):
        super().__init__(logging.WARNING)
        self.signame = signame
        self.seen = 0
        self.changed = threading.Condition()

    def emit(self, record):
        if (record.name == journal.LOG.name
                and record.levelno == logging.WARNING
                and record.args == (self.signame,)):
            with self.changed:
                self.seen += 1
                self.changed.notify_all()


class SignalHandshake(fixtures.Fixture):
    """Counts the runs of the journal's deferred-signal handler.

    The handler (``gpuclient.ops.journal.deferred_signals``) logs a
    warning naming the signal each time it runs (``Received SIGINT: ...``,
    in the main thread, from within the handler): a log handler on the
    journal's logger, while the fixture is set up, counts those records
    (by logger and argument, not by text, which is translated) so that a
    thread that sent a signal can wait until it has been handled before it
    sends the next. No hook in the product: the warning is what an
    operator sees too.
    """

    def __init__(self, signame='SIGINT'):
        super().__init__()
        self._runs = _HandlerRuns(signame)

    def _setUp(self):
        logger = logging.getLogger(journal.LOG.name)
        logger.addHandler(self._runs)
        self.addCleanup(logger.removeHandler, self._runs)
        if logger.getEffectiveLevel() > logging.WARNING:
            # a quieter logger would not even make the record
            self.addCleanup(logger.setLevel, logger.level)
            logger.setLevel(logging.WARNING)

    def count(self):
        """How many handler runs have been seen so far."""
        with self._runs.changed:
            return self._runs.seen

    def wait_beyond(self, seen, timeout):
        """Whether a handler run beyond the first SEEN came within
        TIMEOUT seconds (waits no longer than that)."""
        runs = self._runs
        with runs.changed:
            return runs.changed.wait_for(lambda: runs.seen > seen, timeout)


class LineWatch:
    """Reads a process's text stream (its stderr) line by line in a
    thread, so that a test can wait for a line it prints: the handshake
    of a real ``openstack`` process whose journal handler logs
    ``Received SIGINT: ...`` on stderr when it has run (test_hung).

    ``wait_for(text, timeout)``: whether a line containing TEXT came
    (waits at most TIMEOUT seconds); ``text()``: everything read, once the
    stream is at its end (``close`` waits for that, bounded).
    """

    def __init__(self, stream):
        self._stream = stream
        self._lines = []
        self._changed = threading.Condition()
        self._done = False
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self):
        try:
            for line in iter(self._stream.readline, ''):
                with self._changed:
                    self._lines.append(line)
                    self._changed.notify_all()
        finally:
            with self._changed:
                self._done = True
                self._changed.notify_all()

    def wait_for(self, text, timeout):
        def found():
            return any(text in line for line in self._lines)

        with self._changed:
            return self._changed.wait_for(
                lambda: found() or self._done, timeout) and found()

    def close(self, timeout=30):
        """Wait (at most TIMEOUT seconds) for the end of the stream."""
        self._thread.join(timeout)

    def text(self):
        with self._changed:
            return ''.join(self._lines)


class _FaultAdapter(req_adapters.HTTPAdapter):
    """Transport adapter that asks its injector what to do per request.

    Requests it does not fail are forwarded through the adapter that was
    mounted before it (keystoneauth's keep-alive adapter), so connection
    pooling and socket options stay as they were.
    """

    def __init__(self, injector, inner):
        super().__init__()
        self._injector = injector
        self._inner = inner

    def _forward(self, request, **kwargs):
        if self._inner is not None:
            return self._inner.send(request, **kwargs)
        return super().send(request, **kwargs)

    def _fake(self, request, status, reason, body, content_type,
              request_id=None):
        headers = {
            'Content-Type': content_type,
            'Content-Length': str(len(body)),
            'x-openstack-request-id': request_id or 'req-%s' % uuid.uuid4(),
        }
        raw = urllib3_response.HTTPResponse(
            body=io.BytesIO(body), headers=headers, status=status,
            reason=reason, preload_content=False, decode_content=False,
            request_method=request.method, request_url=request.url)
        return self.build_response(request, raw)

    def send(self, request, **kwargs):
        kind, service = self._injector._on_request(request.method,
                                                    request.url)
        if kind is None:
            return self._forward(request, **kwargs)
        LOG.info('injecting %s fault into %s %s', kind, request.method,
                 request.url)
        if kind in HANG_KINDS:
            return self._hang(request, kind, **kwargs)
        if kind in ('500', '409'):
            status = int(kind)
            reason = http.client.responses[status]
            rid = 'req-%s' % uuid.uuid4()
            body = json.dumps(_error_body(service, status, rid)).encode()
            return self._fake(request, status, reason, body,
                              'application/json', rid)
        # 'drop' and 'nonjson': the write reaches the service and happens
        response = self._forward(request, **kwargs)
        try:
            response.content  # noqa: B018 - read it all, free the socket
        finally:
            response.close()
        if kind == 'drop':
            raise requests.exceptions.ConnectionError(
                urllib3_exc.ProtocolError(
                    'Connection aborted.',
                    http.client.RemoteDisconnected(
                        'Remote end closed connection without response '
                        '(injected drop)')),
                request=request)
        return self._fake(request, 200, 'OK', NONJSON_BODY,
                          'text/html; charset=UTF-8')

    def _hang(self, request, kind, **kwargs):
        """Send REQUEST to a HungServer: the read timeout that keystoneauth
        passes (the session's, capped at HANG_TIMEOUT) ends the wait, in
        urllib3, as it would for a hung service."""
        if kind != 'hang':
            # the write reaches the service and happens
            response = self._forward(request, **kwargs)
            try:
                response.content  # noqa: B018 - read it all
            finally:
                response.close()
        server = self._injector.hung_server()
        parts = urllib.parse.urlsplit(request.url)
        hung = request.copy()
        hung.url = urllib.parse.urlunsplit(
            ('http', '127.0.0.1:%d' % server.port, parts.path, parts.query,
             ''))
        server.arrived.clear()
        if kind == 'sigint2':
            threading.Thread(target=self._ctrl_c_twice, args=(server,),
                             daemon=True).start()
        kwargs['timeout'] = _capped(
            kwargs.get('timeout'),
            SIGINT2_TIMEOUT if kind == 'sigint2' else HANG_TIMEOUT)
        try:
            return super().send(hung, **kwargs)
        finally:
            server.arrived.clear()

    def _ctrl_c_twice(self, server):
        """SIGINT to this process twice while it waits for SERVER: the
        second once the journal's handler has run for the first (its
        warning, seen by the injector's SignalHandshake), at most
        HANDSHAKE_TIMEOUT later; the outcome goes to the injector's
        ``handshakes``."""
        if not server.arrived.wait(10):
            return  # the request is over: no stray signal
        handshake = self._injector.handshake
        seen = handshake.count()
        # to the main thread, which waits in the request: a signal sent to
        # the process may go to this thread instead and wake nothing until
        # the wait ends
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
        ran = handshake.wait_beyond(seen, HANDSHAKE_TIMEOUT)
        self._injector.handshakes.append(ran)
        if server.arrived.is_set():  # else the request is over meanwhile
            signal.pthread_kill(threading.main_thread().ident,
                                signal.SIGINT)
            # the warning is logged from within the handler: a second
            # SIGINT that lands before the handler has returned is only
            # flagged, and the main thread, back in its blocking read,
            # would run the handler when the read times out. The hung
            # server hangs up: the read returns, and the flagged handler
            # runs at the next bytecode, before the answer is looked at
            server.close()

    def release(self):
        """Close this adapter's own pools only (not the inner adapter's)."""
        super().close()

    def close(self):
        # the session closes the adapters it has mounted: this one stands
        # for the inner one while installed
        super().close()
        if self._inner is not None:
            self._inner.close()


class FaultInjector(fixtures.Fixture):
    """Fails the k-th write a GpuClient sends, once.

    ``target`` is a GpuClient (its keystoneauth session and its SDK
    connection's session are both covered) or a keystoneauth Session.

    Counted: POST, PUT, PATCH and DELETE requests to any service but
    Keystone (Nova, Placement and Glance for gpuclient). ``writes`` lists
    them, as (method, url), since the last ``arm`` or ``reset``
    (``requests`` lists every request, counted or not); ``fired`` is the
    (method, url) that was failed, None until then. Use it with
    ``useFixture`` or as a context manager: it uninstalls itself.
    """

    def __init__(self, target):
        super().__init__()
        self._target = target
        self._lock = threading.Lock()
        self._k = None
        self._kind = None
        self._more = {}
        self.fired_more = []
        self._endpoints = {}  # service type -> base URL
        self.writes = []
        self.requests = []  # every request, counted or not
        self.fired = None
        self._hung = None
        self._read = None  # (path regex, k, kind) armed by arm_read
        self.reads = []
        # 'sigint2': the journal's handler runs that the second SIGINT
        # waits for, and per point whether it came (HANDSHAKE_TIMEOUT)
        self.handshake = SignalHandshake()
        self.handshakes = []

    def hung_server(self):
        """The HungServer that the hang kinds send to (one, lazily)."""
        with self._lock:
            if self._hung is None or self._hung.closed:
                self._hung = HungServer()
                self.addCleanup(self._hung.close)
            return self._hung

    # -- installing ------------------------------------------------------

    def _ks_sessions(self):
        target = self._target
        if isinstance(target, gpu_client.GpuClient):
            found = [target._session]
            conn = getattr(target, '_conn', None)
            if conn is not None:
                found.append(conn.session)
        else:
            found = [target]
        unique = []
        for sess in found:
            if all(sess is not other for other in unique):
                unique.append(sess)
        return unique

    def _resolve_endpoints(self, ks_session):
        """Base URLs of the services, from the catalog and the auth URL."""
        interface = region = None
        if isinstance(self._target, gpu_client.GpuClient):
            interface = self._target._interface
            region = self._target._region_name
        auth_url = getattr(getattr(ks_session, 'auth', None), 'auth_url',
                           None)
        if auth_url:
            self._endpoints['identity'] = _base_url(auth_url)
        for service in SERVICES:
            try:
                url = ks_session.get_endpoint(
                    service_type=service, interface=interface or 'public',
                    region_name=region)
            except Exception as exc:  # noqa: BLE001 - best effort only
                LOG.debug('no %s endpoint: %s', service, exc)
                continue
            if url:
                self._endpoints[service] = _base_url(url)
        identity = self._endpoints.get('identity')
        if identity and not urllib.parse.urlsplit(identity).path:
            # Keystone at the root of an origin: only when that origin is
            # its alone (its own port), or it would swallow every service
            if any(_under(base, identity) for name, base in
                   self._endpoints.items() if name != 'identity'):
                del self._endpoints['identity']

    def _setUp(self):
        self.useFixture(self.handshake)
        sessions = self._ks_sessions()
        for ks_session in sessions:
            self._resolve_endpoints(ks_session)
        for ks_session in sessions:
            req_session = ks_session.session
            for prefix in ('http://', 'https://'):
                inner = req_session.adapters.get(prefix)
                adapter = _FaultAdapter(self, inner)
                req_session.mount(prefix, adapter)
                self.addCleanup(self._unmount, req_session, prefix, inner,
                                adapter)
        self.addCleanup(self.disarm)

    @staticmethod
    def _unmount(req_session, prefix, inner, adapter):
        if inner is not None:
            req_session.mount(prefix, inner)
        else:
            req_session.adapters.pop(prefix, None)
        adapter.release()

    # -- what is counted -------------------------------------------------

    def service_of(self, url):
        """'compute', 'placement', 'image', 'identity' or None for URL."""
        best = None
        for name, base in self._endpoints.items():
            if _under(url, base) and (best is None
                                      or len(base) > len(best[1])):
                best = (name, base)
        return best[0] if best else None

    def counts(self, method, url):
        """Whether a request is a write this injector counts."""
        if method.upper() not in WRITE_METHODS:
            return False
        path = urllib.parse.urlsplit(url).path
        if LIMITS_PATH.search(path):
            return True  # Keystone's unified limits: gpu quota writes
        if any(marker in path for marker in IDENTITY_MARKERS):
            return False
        return self.service_of(url) != 'identity'

    def _on_request(self, method, url):
        """Record a request; (fault kind or None, service) for it."""
        with self._lock:
            self.requests.append((method.upper(), url))
            read = self._read_fault(method, url)
        if read is not None:
            return read, self.service_of(url)
        if not self.counts(method, url):
            return None, None
        with self._lock:
            self.writes.append((method.upper(), url))
            count = len(self.writes)
            if count in self._more:
                kind = self._more.pop(count)
                self.fired_more.append((method.upper(), url))
                return kind, self.service_of(url)
            if self._k is None or count != self._k:
                return None, None
            kind = self._kind
            self._k = self._kind = None
            self.fired = (method.upper(), url)
        return kind, self.service_of(url)

    def _read_fault(self, method, url):
        """With ``arm_read``: the kind for the K-th matching GET, once
        (called under the lock)."""
        if self._read is None or method.upper() != 'GET':
            return None
        pattern, k, kind = self._read
        if not pattern.search(urllib.parse.urlsplit(url).path):
            return None
        self.reads.append(url)
        if len(self.reads) != k:
            return None
        self._read = None
        self.fired = ('GET', url)
        return kind

    # -- the test's controls ---------------------------------------------

    def arm_read(self, pattern, k, kind):
        """Fail the K-th (1-based) GET from now whose URL path matches
        the regex PATTERN, in way KIND ('500', '409' or 'nonjson': a 200
        HTML page); ``reads`` lists the matching GETs since. Writes are
        counted and armed as before, independently. K None: only count
        them."""
        if kind not in ('500', '409', 'nonjson'):
            raise ValueError('read fault kind %r' % (kind,))
        with self._lock:
            self.reads = []
            self.fired = None
            self._read = (re.compile(pattern), k, kind)

    def arm(self, k, kind, more=None):
        """Fail the K-th (1-based) counted write from now, in way KIND.

        ``more`` ({index: kind}) fails further writes too (an undo that
        fails as well); ``fired_more`` lists them once they fired.
        """
        if kind not in KINDS + HANG_KINDS:
            raise ValueError('fault kind %r is not one of %s'
                             % (kind, ', '.join(KINDS + HANG_KINDS)))
        if int(k) < 1:
            raise ValueError('k is 1-based, not %r' % (k,))
        with self._lock:
            self.writes = []
            self.requests = []
            self.fired = None
            self._k = int(k)
            self._kind = kind
            self._more = dict(more or {})
            self.fired_more = []
            self.handshakes = []

    def disarm(self):
        """No fault from now on (writes stay recorded)."""
        with self._lock:
            self._k = self._kind = None
            self._more = {}
            self._read = None

    def reset(self):
        """Disarm and start counting writes afresh."""
        with self._lock:
            self._k = self._kind = None
            self.writes = []
            self.requests = []
            self.fired = None
            self._read = None
            self.reads = []

    @property
    def armed(self):
        return self._k is not None


# -- what gpuclient writes, as comparable plain data -------------------------

def _wanted(name, names):
    if names is None:
        return True
    if isinstance(names, str):
        names = [names]
    return any((name or '').startswith(prefix) for prefix in names)


# Glance's own members of an image; every other member is a property
GLANCE_FIELDS = frozenset({
    'id', 'name', 'status', 'visibility', 'protected', 'os_hidden',
    'checksum', 'os_hash_algo', 'os_hash_value', 'owner', 'size',
    'virtual_size', 'min_ram', 'min_disk', 'disk_format',
    'container_format', 'created_at', 'updated_at', 'tags', 'self', 'file',
    'schema', 'direct_url', 'locations', 'stores'})


def cloud_state(client, names=None, providers=(), traits_of=None):
    """A JSON-serialisable snapshot of what gpuclient writes.

    ``aggregates``: name -> {hosts, metadata, availability_zone};
    ``provider_traits``: provider uuid -> sorted CUSTOM_* traits (Nova's
    own standard traits come and go with its resource tracker; with NAMES,
    the pool traits of pools named so only, and only the providers that
    carry one);
    ``pool_traits``: sorted existing CUSTOM_GPU_POOL_* traits (with NAMES,
    of pools named so);
    ``flavors``: name -> {vcpus, ram, disk, is_public, extra_specs, access}
    (access: sorted project ids, for private flavors only);
    ``mirror``: provider uuid -> sorted names of the kept aggregates whose
    uuid is among the provider's Placement aggregates (Nova's mirror of
    host membership, what isolation and project limits filter on), for
    each uuid of PROVIDERS (one request each);
    ``images``: name -> properties (members that are not Glance's own).
    NAMES, a prefix or list of prefixes, keeps only the aggregates,
    flavors and images whose name starts with one of them, and finds the
    providers that carry those pools' traits by trait (one request per
    existing trait, ``required=``), not provider by provider. TRAITS_OF
    (provider uuids) reads the traits of those providers only (one
    request each); without NAMES or TRAITS_OF, every provider's.
    """
    state = {'aggregates': {}, 'provider_traits': {}, 'pool_traits': [],
             'flavors': {}, 'mirror': {}, 'images': {}}
    # with NAMES, the traits are those of pools so named: what gpuclient
    # writes onto providers (other tests' pools come and go meanwhile)
    ours = 'CUSTOM_' if names is None else tuple(
        pool_mod.pool_trait(prefix)
        for prefix in ([names] if isinstance(names, str) else names))
    placement = client.placement
    # the mirror first: an aggregate made after this read is then known
    # by name below, not mistaken for one of ours
    mirrored = {rp: set(placement.aggregates(rp)[0]) for rp in providers}
    by_uuid = {}
    for agg in client.compute.aggregates():
        if not _wanted(agg.name, names):
            continue
        by_uuid[agg.uuid] = agg.name
        state['aggregates'][agg.name] = {
            'hosts': sorted(agg.hosts or []),
            'metadata': dict(agg.metadata or {}),
            'availability_zone': agg.availability_zone,
        }
    for rp, aggs in mirrored.items():
        state['mirror'][rp] = sorted(by_uuid[a] for a in aggs
                                       if a in by_uuid)
    data = placement.get('/traits', TRAITS_VERSION, 'Listing pool traits',
                         params={'name': 'startswith:' + POOL_TRAIT_PREFIX})
    state['pool_traits'] = sorted(t for t in data['traits']
                                  if names is None or t.startswith(ours))
    if traits_of is None and names is not None:
        # the providers that carry each of those pools' traits, one
        # request per trait that exists (a trait on a provider exists:
        # Placement refuses to delete one in use), wherever in the cloud
        # they are, instead of every provider's traits read one by one
        for trait in state['pool_traits']:
            listed = placement.get(
                '/resource_providers', versions.PLACEMENT_REQUIRED_VERSION,
                'Listing resource providers with trait %s' % trait,
                params={'required': trait})
            for rp in listed['resource_providers']:
                state['provider_traits'].setdefault(
                    rp['uuid'], []).append(trait)
        for rp_uuid in state['provider_traits']:
            state['provider_traits'][rp_uuid].sort()
    else:
        if traits_of is None:
            listed = placement.get('/resource_providers', TRAITS_VERSION,
                                   'Listing resource providers')
            traits_of = [rp['uuid'] for rp in listed['resource_providers']]
        for rp_uuid in traits_of:
            try:
                traits = placement.get(
                    '/resource_providers/%s/traits' % rp_uuid,
                    TRAITS_VERSION,
                    'Reading traits of resource provider %s' % rp_uuid)
            except errors.NotFound:
                continue  # deleted since the list
            mine = sorted(t for t in traits['traits']
                          if t.startswith(ours))
            if mine or names is None:
                # with NAMES, a provider that carries none of those
                # pools' traits is left out: other tests make providers
                # meanwhile (Ironic nodes, hosts), nothing of ours
                state['provider_traits'][rp_uuid] = mine

    for flavor in client.compute.flavors():
        if not _wanted(flavor.get('name'), names):
            continue
        is_public = flavor.get('os-flavor-access:is_public', True)
        access = None
        if not is_public:
            try:
                access = client.compute.flavor_access(flavor['id'])
            except errors.APIError:
                # deleted since the list (Nova answers 500, not 404, when
                # the flavor of an access list is gone)
                if client.compute.find_flavor(
                        flavor['id'], ignore_missing=True) is None:
                    continue
                raise
        state['flavors'][flavor['name']] = {
            'vcpus': flavor.get('vcpus'),
            'ram': flavor.get('ram'),
            'disk': flavor.get('disk'),
            'is_public': is_public,
            'extra_specs': dict(flavor.get('extra_specs') or {}),
            'access': access,
        }
    for image in client.image.images():
        if _wanted(image.get('name'), names):
            state['images'][image['name']] = {
                k: v for k, v in image.items() if k not in GLANCE_FIELDS}
    return state


def _diff(path, before, after, out):
    if isinstance(before, dict) and isinstance(after, dict):
        for key in sorted(set(before) | set(after), key=str):
            where = '%s[%s]' % (path, key) if path else str(key)
            if key not in after:
                out.append('- %s: %s' % (where, json.dumps(
                    before[key], sort_keys=True)))
            elif key not in before:
                out.append('+ %s: %s' % (where, json.dumps(
                    after[key], sort_keys=True)))
            else:
                _diff(where, before[key], after[key], out)
    elif isinstance(before, list) and isinstance(after, list):
        if before != after:
            gone = [x for x in before if x not in after]
            new = [x for x in after if x not in before]
            if gone or new:
                out.append('~ %s: %s%s' % (
                    path,
                    ('removed %s' % json.dumps(gone)) if gone else '',
                    ('%sadded %s' % ('; ' if gone else '', json.dumps(new)))
                    if new else ''))
            else:
                out.append('~ %s: %s -> %s' % (
                    path, json.dumps(before), json.dumps(after)))
    elif before != after:
        out.append('~ %s: %s -> %s' % (
            path, json.dumps(before), json.dumps(after)))


def diff_states(before, after):
    """Readable differences from BEFORE to AFTER ([] when equal)."""
    out = []
    _diff('', before, after, out)
    return out
