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


"""What every service module of the client layer shares on the wire: the
JSON body of an answer, session timeouts, the cap on an answer's size,
and the pause between tries of a write that lost a race."""

import os
import random
import threading
import time
import urllib.parse

from osc_lib import exceptions
import requests
from requests import adapters as req_adapters

# How often a write that lost a race is tried again.
RETRIES = 5

# HTTP timeouts (seconds) when the cloud's clouds.yaml sets no api_timeout:
# a service that accepts and never answers fails the call instead of
# hanging the command (connect, then each read of the answer).
CONNECT_TIMEOUT = 10.0
READ_TIMEOUT = 120.0
# The most one call may take, from sending it to the last byte of its
# answer, when clouds.yaml sets no api_timeout (with one, api_timeout):
# a server that trickles its answer a byte at a time never ends a read
# timeout, and is cut off by this (DeadlineAdapter).
TOTAL_TIMEOUT = 120.0
# How much of an answer is read at a time against the deadline; of a
# compressed one, less: urllib3 before 2.6 decodes all it reads at once,
# and deflate inflates at most 1032-fold (1 KiB to about 1 MiB), so one
# read holds about a MiB beside the cap.
_CHUNK = 64 * 1024
_ENCODED_CHUNK = 1024
# deflate's largest ratio (zlib's technical details: 1032:1)
MAX_INFLATE = 1032
# The bound (seconds) when clouds.yaml sets no api_timeout: this variable
# when set, as api_timeout would be (connect, read and whole call), else
# the figures above.
TIMEOUT_ENV = 'GPUCLIENT_API_TIMEOUT'
# The most an answer may hold once decoded (a gzip answer inflates: a
# fifth of a megabyte on the wire can be hundreds in memory), MiB:
# clouds.yaml's gpuclient_max_answer_mib, else $GPUCLIENT_MAX_ANSWER_MIB,
# else MAX_ANSWER_MIB.
MAX_ANSWER_KEY = 'gpuclient_max_answer_mib'
MAX_ANSWER_ENV = 'GPUCLIENT_MAX_ANSWER_MIB'
MAX_ANSWER_MIB = 64
_MIB = 1024 * 1024


class SettingError(exceptions.CommandError):
    """A transport setting that is not a positive number."""


def _positive(value, name):
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = None
    if number is None or not number > 0 or number == float('inf'):
        raise SettingError(
            '%s=%s: give a number greater than 0' % (name, value))
    return number


def api_timeout(value=None):
    """The bound on one call (seconds) that a cloud gives: VALUE (its
    clouds.yaml api_timeout) when set, else $GPUCLIENT_API_TIMEOUT when
    set, else None (CONNECT_TIMEOUT, READ_TIMEOUT and TOTAL_TIMEOUT)."""
    if value not in (None, ''):
        return value
    if os.environ.get(TIMEOUT_ENV, '').strip():
        return _positive(os.environ[TIMEOUT_ENV], '$' + TIMEOUT_ENV)
    return None


def max_answer_bytes(config=None):
    """The most bytes an answer may hold once decoded: CONFIG's (a
    cloud's clouds.yaml entry) gpuclient_max_answer_mib, else
    $GPUCLIENT_MAX_ANSWER_MIB, else MAX_ANSWER_MIB."""
    value = (config or {}).get(MAX_ANSWER_KEY)
    name = MAX_ANSWER_KEY
    if value in (None, ''):
        value = os.environ.get(MAX_ANSWER_ENV, '').strip() or None
        name = '$' + MAX_ANSWER_ENV
    if value is None:
        return MAX_ANSWER_MIB * _MIB
    return int(_positive(value, name) * _MIB)


def mib(size):
    """SIZE bytes as a figure of MiB for a message (64, 0.5)."""
    return '%g' % round(size / _MIB, 3)


class AnswerTooLarge(Exception):
    """An answer held more than the cap once decoded; nothing of it is
    kept. Not a requests exception: keystoneauth and the SDK let it
    through as it is (errors.translate_errors names the service)."""

    def __init__(self, url, limit):
        self.url = url
        self.limit = limit
        parts = urllib.parse.urlsplit(str(url or ''))
        self.where = '%s://%s%s' % (parts.scheme, parts.netloc.rpartition(
            '@')[2], parts.path) if parts.scheme else '?'
        super().__init__(
            'the answer of %s exceeds %s MiB once decoded (%s in clouds.yaml'
            ' or $%s raises the cap)' % (self.where, mib(limit),
                                        MAX_ANSWER_KEY, MAX_ANSWER_ENV))


def total_timeout(timeout=None):
    """The bound on one call's whole time: TIMEOUT (clouds.yaml's
    api_timeout) when set, else $GPUCLIENT_API_TIMEOUT, else
    TOTAL_TIMEOUT."""
    timeout = api_timeout(timeout)
    if timeout is not None:
        return float(timeout)
    return TOTAL_TIMEOUT


def request_timeout(timeout=None):
    """requests' timeout of each request: TIMEOUT (clouds.yaml's
    api_timeout) when set, else $GPUCLIENT_API_TIMEOUT, for both the
    connect and the read, else (CONNECT_TIMEOUT, READ_TIMEOUT)."""
    timeout = api_timeout(timeout)
    if timeout is not None:
        return float(timeout)
    return (CONNECT_TIMEOUT, READ_TIMEOUT)


_LAST = threading.local()


def last_answer():
    """The last answer a DeadlineAdapter read in this thread (None if
    none): what an error about an SDK call that could not read its answer
    names (its status, path and Content-Type)."""
    return getattr(_LAST, 'response', None)


def last_timeout():
    """(count, what) of the requests that timed out (or were not sent to
    a service that had) in the DeadlineAdapters of this thread: how many,
    and the last one's method and URL without its query; (0, None) before
    any. What an error names when keystoneauth's version discovery
    swallowed the timeout and the SDK then says only that it found no
    version."""
    return getattr(_LAST, 'timeout', (0, None))


def _timed_out(request, origin):
    count, _what = last_timeout()
    _LAST.timeout = (count + 1, '%s %s%s' % (
        request.method, origin, urllib.parse.urlsplit(request.url).path))


class DeadlineAdapter(req_adapters.HTTPAdapter):
    """A requests transport adapter that bounds each call: its whole time,
    the size of its answer, and the calls to a service that hung.

    Read timeouts bound each wait for a byte, not the call: a server (or
    a proxy) that sends its headers and then a byte a second holds the
    command for ever. This adapter sends through INNER (the adapter
    mounted before it: keystoneauth's keep-alive one, or requests'
    default), caps the connect and read timeouts at TOTAL seconds (a
    request sent with none, as OSC's session sends its first ones, gets
    TOTAL for both), reads the whole answer itself against the deadline
    (each wait for data no longer than what is left), and raises
    ``requests.exceptions.ReadTimeout`` once TOTAL seconds have passed,
    which keystoneauth turns into its timeout error (token requests
    included) and ``prometheus`` into its own. Until the headers have
    come, the capped timeouts bound each wait only (the inner adapter
    reads them).

    The answer is decoded as it is read (gzip), and once it holds more
    than MAX_BYTES the call ends in ``AnswerTooLarge``: memory never holds
    more than the cap and one chunk of the answer (1 KiB of a compressed
    one, decoded). An answer asked for with ``stream=True`` is returned
    unread, as requests returns it (gpuclient asks for none).

    A service (scheme, host and port) that did not answer one call in
    time is not asked again through this adapter (in OSC, for the rest of
    the command): its next calls end at once in the same timeout, so a
    hung service costs one bound, not one per request (keystoneauth's
    version discovery tries two or three URLs of a service before the
    call itself).
    """

    def __init__(self, total, inner=None, max_bytes=None):
        super().__init__()
        self.total = float(total)
        self.inner = inner
        self.max_bytes = int(max_bytes or max_answer_bytes())
        self.hung = {}  # scheme://host:port -> what timed out there

    def send(self, request, stream=False, timeout=None, **kwargs):
        origin = _origin(request.url)
        if origin in self.hung:
            _timed_out(request, origin)
            raise requests.exceptions.ReadTimeout(
                '%s did not answer in time before (%s): not asked again'
                % (origin, self.hung[origin]), request=request)
        try:
            return self._send(request, stream, timeout, **kwargs)
        except requests.exceptions.Timeout:
            self.hung[origin] = '%s %s' % (
                request.method, urllib.parse.urlsplit(request.url).path)
            _timed_out(request, origin)
            raise

    def _send(self, request, stream, timeout, **kwargs):
        deadline = time.monotonic() + self.total
        timeout = _capped(timeout, self.total)
        sender = self.inner if self.inner is not None else super()
        response = sender.send(request, stream=True, timeout=timeout,
                               **kwargs)
        if stream:
            return response
        raw = response.raw
        if not hasattr(raw, 'read1'):
            # a test's or a fake's answer
            if len(response.content) > self.max_bytes:
                raise AnswerTooLarge(request.url, self.max_bytes)
            return response
        chunks = []
        size = 0
        amount = _ENCODED_CHUNK if response.headers.get(
            'Content-Encoding', 'identity').strip().lower() not in (
                '', 'identity') else _CHUNK
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise requests.exceptions.ReadTimeout(
                        'the answer did not end within %g s' % self.total,
                        request=request, response=response)
                _wait_at_most(raw, left)
                chunk = raw.read1(amount, decode_content=True)
                if not chunk:
                    break
                size += len(chunk)
                if size > self.max_bytes:
                    chunks = None
                    raise AnswerTooLarge(request.url, self.max_bytes)
                chunks.append(chunk)
        except (requests.exceptions.RequestException, AnswerTooLarge):
            response.close()
            raise
        except Exception as exc:  # urllib3's: the socket timed out, ...
            response.close()
            if 'timed out' in str(exc).lower():
                raise requests.exceptions.ReadTimeout(
                    'the answer did not end within %g s' % self.total,
                    request=request, response=response) from None
            raise requests.exceptions.ConnectionError(
                exc, request=request, response=response) from None
        response._content = b''.join(chunks)
        response._content_consumed = True
        raw.release_conn()
        _LAST.response = response
        return response

    def close(self):
        if self.inner is not None:
            self.inner.close()
        super().close()


def _origin(url):
    """scheme://host:port of URL (no credentials): one service."""
    parts = urllib.parse.urlsplit(str(url or ''))
    host = parts.netloc.rpartition('@')[2]
    return '%s://%s' % (parts.scheme, host)


def _capped(timeout, most):
    """A requests TIMEOUT (None, seconds or (connect, read)) with each
    part at most MOST."""
    if isinstance(timeout, tuple):
        connect, read = timeout
    else:
        connect = read = timeout
    return (min(connect or most, most), min(read or most, most))


def _wait_at_most(raw, seconds):
    """Let the next read of RAW's socket wait at most SECONDS."""
    sock = getattr(getattr(raw, 'connection', None), 'sock', None)
    if sock is not None:
        current = sock.gettimeout()
        if current is None or current > seconds:
            sock.settimeout(max(seconds, 0.001))


def bound_total_time(requests_session, total, max_bytes=None):
    """Mount a DeadlineAdapter of TOTAL seconds and answers of at most
    MAX_BYTES (None: max_answer_bytes()) on a requests session for http
    and https, around the adapters it has (once: a second call sets the
    bounds)."""
    if requests_session is None or not hasattr(requests_session, 'mount'):
        return
    max_bytes = int(max_bytes or max_answer_bytes())
    for prefix in ('http://', 'https://'):
        current = requests_session.adapters.get(prefix)
        if isinstance(current, DeadlineAdapter):
            current.total = float(total)
            current.max_bytes = max_bytes
            continue
        requests_session.mount(prefix, DeadlineAdapter(total, current,
                                                       max_bytes))


def set_timeouts(session, api_timeout=None, max_bytes=None):
    """Give a keystoneauth session connect and read timeouts, and a cap
    on its answers.

    A timeout the session already has (a library caller's, or
    ``openstack.connect(api_timeout=...)``) is kept. Otherwise
    ``api_timeout`` (clouds.yaml's, which OSC's ClientManager does not
    pass on; else $GPUCLIENT_API_TIMEOUT) is used for both, as
    openstacksdk does; without it, (CONNECT_TIMEOUT, READ_TIMEOUT).
    keystoneauth hands the value to ``requests`` for every request of the
    session, token requests included. Every call's whole time, its answer
    read to the end, is bounded too: ``api_timeout``, else TOTAL_TIMEOUT;
    and its answer's size once decoded: MAX_BYTES, else
    max_answer_bytes() (DeadlineAdapter on the session's requests
    session).
    """
    if not hasattr(session, 'timeout'):
        return  # not a keystoneauth session (a test's)
    # the whole time of every call, token requests included
    bound_total_time(getattr(session, 'session', None),
                     total_timeout(api_timeout), max_bytes)
    if session.timeout is not None:
        return  # set already
    # requests takes a (connect, read) pair; keystoneauth passes the
    # session's value through unchanged
    session.timeout = request_timeout(api_timeout)


def backoff(attempt):
    """Sleep a little longer after each lost race (with jitter)."""
    time.sleep(random.uniform(0.05, 0.2) * (attempt + 1))


def json_body(response):
    """The JSON of an answer; None when it has none (204, empty, not
    JSON)."""
    if response.status_code == 204 or not response.content:
        return None
    try:
        return response.json()
    except ValueError:
        return None
