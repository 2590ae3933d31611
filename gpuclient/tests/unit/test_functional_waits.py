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

"""The functional tests' bounded wait (gpuclient/tests/functional/waits.py
``poll``, under ``FunctionalTestCase.wait_for``), on a fake clock: it
reads until the authority agrees or the time is up, never past it, and
hands back the last value for one assertion."""

import testtools

from gpuclient.tests.functional import waits


class _Clock:
    def __init__(self):
        self.now = 100.0
        self.slept = []

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.slept.append(seconds)
        self.now += seconds


class TestPoll(testtools.TestCase):
    def poll(self, answers, until, timeout=10, interval=2):
        clock = _Clock()
        answers = iter(answers)
        found = waits.poll(lambda: next(answers), until, timeout, interval,
                          clock=clock, sleep=clock.sleep)
        return found, clock.slept

    def test_returns_the_first_agreeing_value(self):
        found, slept = self.poll([['srv'], ['srv'], []], lambda v: v == [])
        self.assertEqual(([], True, 3), found)
        self.assertEqual([2, 2], slept)

    def test_agreeing_at_once_does_not_sleep(self):
        self.assertEqual((({}, True, 1), []),
                         self.poll([{}], lambda v: not v))

    def test_bounded_and_the_last_value_for_the_assertion(self):
        """Never agrees: the last value read at the deadline, no sleep
        beyond it (10 s, by 3 s: 3, 3, 3, then 1)."""
        found, slept = self.poll(iter(range(100)), lambda v: False,
                                 timeout=10, interval=3)
        self.assertEqual((4, False, 5), found)
        self.assertEqual([3, 3, 3, 1], slept)

    def test_a_zero_timeout_reads_once(self):
        self.assertEqual(((['a'], False, 1), []),
                         self.poll([['a']], lambda v: not v, timeout=0))
