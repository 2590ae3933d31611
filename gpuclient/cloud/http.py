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
JSON body of an answer, session timeouts, and the pause between tries of
a write that lost a race."""

import random
import threading
import time

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
# How much of an answer is read at a time against the deadline.
_CHUNK = 64 * 1024


def total_timeout(api_timeout=None):
    """The bound on one call's whole time: API_TIMEOUT (clouds.yaml's)
    when set, else TOTAL_TIMEOUT."""
    if api_timeout not in (None, ''):
        return float(api_timeout)
    return TOTAL_TIMEOUT


_LAST = threading.local()


def last_answer():
    """The last answer a DeadlineAdapter read in this thread (None if
    none): what an error about an SDK call that could not read its answer
    names (its status, path and Content-Type)."""
    return getattr(_LAST, 'response', None)


class DeadlineAdapter(req_adapters.HTTPAdapter):
    """A requests transport adapter that bounds each call's total time.

    Read timeouts bound each wait for a byte, not the call: a server (or
    a proxy) that sends its headers and then a byte a second holds the
    command for ever. This adapter sends through INNER (the adapter
    mounted before it: keystoneauth's keep-alive one, or requests'
    default), caps the connect and read timeouts at TOTAL seconds, reads
    the whole answer itself against the deadline (each wait for data no
    longer than what is left), and raises ``requests.exceptions.
    ReadTimeout`` once TOTAL seconds have passed, which keystoneauth
    turns into its timeout error (token requests included) and
    ``prometheus`` into its own. Until the headers have come, the capped
    timeouts bound each wait only (the inner adapter reads them).
    """

    def __init__(self, total, inner=None):
        super().__init__()
        self.total = float(total)
        self.inner = inner

    def send(self, request, stream=False, timeout=None, **kwargs):
        deadline = time.monotonic() + self.total
        timeout = _capped(timeout, self.total)
        sender = self.inner if self.inner is not None else super()
        response = sender.send(request, stream=True, timeout=timeout,
                               **kwargs)
        if stream:
            return response
        raw = response.raw
        if not hasattr(raw, 'read1'):
            response.content  # noqa: B018 - a test's or a fake's answer
            return response
        chunks = []
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise requests.exceptions.ReadTimeout(
                        'the answer did not end within %g s' % self.total,
                        request=request, response=response)
                _wait_at_most(raw, left)
                chunk = raw.read1(_CHUNK, decode_content=True)
                if not chunk:
                    break
                chunks.append(chunk)
        except requests.exceptions.RequestException:
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


def bound_total_time(requests_session, total):
    """Mount a DeadlineAdapter of TOTAL seconds on a requests session for
    http and https, around the adapters it has (once: a second call sets
    the bound)."""
    if requests_session is None or not hasattr(requests_session, 'mount'):
        return
    for prefix in ('http://', 'https://'):
        current = requests_session.adapters.get(prefix)
        if isinstance(current, DeadlineAdapter):
            current.total = float(total)
            continue
        requests_session.mount(prefix, DeadlineAdapter(total, current))


def set_timeouts(session, api_timeout=None):
    """Give a keystoneauth session connect and read timeouts.

    A timeout the session already has (a library caller's, or
    ``openstack.connect(api_timeout=...)``) is kept. Otherwise
    ``api_timeout`` (clouds.yaml's, which OSC's ClientManager does not
    pass on) is used for both, as openstacksdk does; without it,
    (CONNECT_TIMEOUT, READ_TIMEOUT). keystoneauth hands the value to
    ``requests`` for every request of the session, token requests
    included. Every call's whole time, its answer read to the end, is
    bounded too: ``api_timeout``, else TOTAL_TIMEOUT (DeadlineAdapter on
    the session's requests session).
    """
    if not hasattr(session, 'timeout'):
        return  # not a keystoneauth session (a test's)
    # the whole time of every call, token requests included
    bound_total_time(getattr(session, 'session', None),
                     total_timeout(api_timeout))
    if session.timeout is not None:
        return  # set already
    if api_timeout not in (None, ''):
        session.timeout = float(api_timeout)
    else:
        # requests takes a (connect, read) pair; keystoneauth passes the
        # session's value through unchanged
        session.timeout = (CONNECT_TIMEOUT, READ_TIMEOUT)


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
