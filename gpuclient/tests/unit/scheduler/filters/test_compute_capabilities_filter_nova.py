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

"""gpuclient.rules.scheduler.filters.compute_capabilities_filter against
Nova's ComputeCapabilitiesFilter: every case on every node (cases.py), the
same answer.
"""

import unittest

from gpuclient.rules.scheduler import host_manager as hm
from gpuclient.rules.scheduler.filters import (
    compute_capabilities_filter as ccf,
)
from gpuclient.tests.unit import nova_harness
from gpuclient.tests.unit.scheduler.filters import cases

if nova_harness.HAVE_NOVA:
    with nova_harness.quiet():
        from nova.scheduler.filters import compute_capabilities_filter


@nova_harness.requires_nova
class TestAgainstNova(unittest.TestCase):
    """Each case to Nova's filters and to gpuclient: the same answer."""

    def test_compute_capabilities_filter(self):
        nova_filter = compute_capabilities_filter.ComputeCapabilitiesFilter()
        compared = 0
        for specs, _expected in cases.CAPABILITY_CASES:
            for name in cases.NODES:
                ours, _detail = ccf.judge_capabilities(
                    cases.api_view(name), specs)
                if ours == hm.UNKNOWN:
                    continue
                theirs = nova_filter.host_passes(
                    cases.nova_host_state(name),
                    cases.nova_request_spec(extra_specs=specs))
                compared += 1
                self.assertEqual(ours == hm.PASS, theirs, (specs, name))
        self.assertGreater(compared, 80)


