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

"""The functional tests' one bounded wait (no cloud needed to import it:
the unit tests drive it on a fake clock).

A test waits on the authority the next step reads (Nova's server list of
a host, a consumer's allocations in Placement, a provider's aggregates and
traits, Prometheus' samples), bounded, then asserts once on the last
value (``FunctionalTestCase.wait_for``); never a loop that retries a
command until its answer agrees.
"""

import time


def poll(read, until, timeout, interval=0.5, clock=time.monotonic,
         sleep=time.sleep):
    """READ() every INTERVAL seconds until UNTIL(value) or TIMEOUT seconds
    have passed: (last value, whether UNTIL held, number of reads). Reads
    at least once; never sleeps past the deadline."""
    deadline = clock() + timeout
    reads = 0
    while True:
        value = read()
        reads += 1
        if until(value):
            return value, True, reads
        left = deadline - clock()
        if left <= 0:
            return value, False, reads
        sleep(min(interval, left))
