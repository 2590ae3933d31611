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
import time

# How often a write that lost a race is tried again.
RETRIES = 5

# HTTP timeouts (seconds) when the cloud's clouds.yaml sets no api_timeout:
# a service that accepts and never answers fails the call instead of
# hanging the command (connect, then each read of the answer).
CONNECT_TIMEOUT = 10.0
READ_TIMEOUT = 120.0


def set_timeouts(session, api_timeout=None):
    """Give a keystoneauth session connect and read timeouts.

    A timeout the session already has (a library caller's, or
    ``openstack.connect(api_timeout=...)``) is kept. Otherwise
    ``api_timeout`` (clouds.yaml's, which OSC's ClientManager does not
    pass on) is used for both, as openstacksdk does; without it,
    (CONNECT_TIMEOUT, READ_TIMEOUT). keystoneauth hands the value to
    ``requests`` for every request of the session, token requests
    included.
    """
    if not hasattr(session, 'timeout') or session.timeout is not None:
        return  # not a keystoneauth session (a test's), or set already
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
