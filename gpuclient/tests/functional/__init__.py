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

import os


def load_tests(loader, standard_tests, pattern):
    """The package's tests; with GPUCLIENT_FT_SEED set, in an order drawn
    from it (shuffle.py says why stestr cannot do this)."""
    here = os.path.dirname(os.path.abspath(__file__))
    standard_tests.addTests(loader.discover(start_dir=here,
                                            pattern=pattern or 'test*.py'))
    from gpuclient.tests.functional import shuffle

    seed = os.environ.get(shuffle.SEED_VARIABLE)
    if seed:
        return shuffle.shuffled(standard_tests, seed)
    return standard_tests
