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

"""The functional tests' shuffled order (GPUCLIENT_FT_SEED), as a worker
process of stestr runs it: discovery, the package's load_tests, then
stestr's filter by the worker's test ids."""

import os
import unittest

import fixtures
from stestr.subunit_runner import program
import testtools

from gpuclient.tests.functional import shuffle

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
FUNCTIONAL = os.path.join(TOP, 'gpuclient', 'tests', 'functional')


def _ids(suite):
    return [case.id() for case in shuffle._cases(suite)]


def _class(test_id):
    return test_id.rsplit('.', 1)[0]


class TestShuffle(testtools.TestCase):
    def discovered(self, seed):
        if seed is None:
            self.useFixture(fixtures.EnvironmentVariable(
                shuffle.SEED_VARIABLE))
        else:
            self.useFixture(fixtures.EnvironmentVariable(
                shuffle.SEED_VARIABLE, seed))
        return unittest.TestLoader().discover(FUNCTIONAL, top_level_dir=TOP)

    def test_a_seed_reorders_every_worker_alike(self):
        plain = _ids(self.discovered(None))
        first = self.discovered('7')
        again = self.discovered('7')
        other = self.discovered('8')
        self.assertEqual(sorted(plain), sorted(_ids(first)))
        self.assertNotEqual(plain, _ids(first))
        self.assertEqual(_ids(first), _ids(again))
        self.assertNotEqual(_ids(first), _ids(other))
        # a worker keeps its own tests in the drawn order (stestr filters
        # the loaded suite by its --load-list, a set)
        mine = set(plain[::2])
        kept = _ids(program.filter_by_ids(again, mine))
        self.assertEqual([i for i in _ids(first) if i in mine], kept)

    def test_a_class_stays_together(self):
        order = [_class(i) for i in _ids(self.discovered('7'))]
        runs = [c for n, c in enumerate(order) if n == 0 or order[n - 1] != c]
        self.assertEqual(len(set(order)), len(runs))
        # and the classes' order is not discovery's
        plain = [_class(i) for i in _ids(self.discovered(None))]
        self.assertNotEqual(list(dict.fromkeys(plain)), runs)
