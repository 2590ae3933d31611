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


"""gpuclient.rules.scheduler.request_filter against Nova's: its
prefilters (REQUEST_FILTERS, NOT_MODELLED) are Nova's
ALL_REQUEST_FILTERS, by name and in order (test_request_filter: each
prefilter on plain data).
"""

import unittest

from gpuclient.rules.scheduler import request_filter
from gpuclient.tests.unit import nova_harness

if nova_harness.HAVE_NOVA:
    with nova_harness.quiet():
        from nova.scheduler import request_filter as nova_request_filter


@nova_harness.requires_nova
class TestPrefilterNames(unittest.TestCase):
    """request_filter.REQUEST_FILTERS and NOT_MODELLED are Nova's
    request_filter.ALL_REQUEST_FILTERS, by name and in order."""

    def setUp(self):
        self.nova = [f.__name__
                     for f in nova_request_filter.ALL_REQUEST_FILTERS]

    def test_modelled_and_not_modelled_are_novas_in_order(self):
        modelled = [f.__name__ for f in request_filter.REQUEST_FILTERS]
        left_out = [name for name, _why in request_filter.NOT_MODELLED]
        names = modelled + left_out
        self.assertEqual(len(names), len(set(names)), names)
        self.assertEqual(sorted(self.nova), sorted(names))
        self.assertEqual(self.nova, sorted(names, key=self.nova.index))
        self.assertEqual([n for n in self.nova if n in modelled], modelled)
        self.assertEqual([n for n in self.nova if n in left_out], left_out)

    def test_nova_request_filters(self):
        self.assertEqual(self.nova, list(request_filter.NOVA_REQUEST_FILTERS))
