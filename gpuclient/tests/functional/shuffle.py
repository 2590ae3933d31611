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

"""The functional tests in a random order, to show that none depends on
another's leftovers (issue 52).

stestr cannot do it: a worker process is given its tests as a set
(``--load-list``) and runs them in discovery order, and ``stestr run
--random`` only shuffles partitions stestr computes itself, not those of
a worker file. So the package's ``load_tests`` (``__init__.py``) orders
the discovered tests: with ``GPUCLIENT_FT_SEED`` set, the test classes in
an order drawn from that seed, and each class's tests likewise (a class
stays together: its leases and fixtures are per class). Every worker
process draws the same order from the same seed, and keeps its own tests
of it. tools/run-functional sets the seed (GPUCLIENT_FT_RANDOM=1) and
prints it; the same seed gives the same order again.
"""

import random
import unittest

SEED_VARIABLE = 'GPUCLIENT_FT_SEED'


def _cases(suite):
    for item in suite:
        if isinstance(item, unittest.TestSuite):
            yield from _cases(item)
        else:
            yield item


def shuffled(suite, seed):
    """A suite of SUITE's tests, classes and each class's tests in an
    order drawn from SEED (an int or a string); the same seed, the same
    order."""
    classes = {}
    for case in _cases(suite):
        key = '%s.%s' % (type(case).__module__, type(case).__qualname__)
        classes.setdefault(key, []).append(case)
    draw = random.Random(str(seed))
    # drawn from the sorted names: discovery's order does not matter
    names = sorted(classes)
    draw.shuffle(names)
    out = unittest.TestSuite()
    for name in names:
        cases = sorted(classes[name], key=lambda case: case.id())
        draw.shuffle(cases)
        out.addTest(unittest.TestSuite(cases))
    return out
