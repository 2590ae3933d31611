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

"""gpuclient.rules.scheduler.filters.compute_capabilities_filter on plain
data (test_compute_capabilities_filter_nova: the same cases to Nova's
filter)."""

import unittest

from gpuclient.rules.scheduler import host_manager as hm
from gpuclient.rules.scheduler.filters import (
    compute_capabilities_filter as ccf,
)
from gpuclient.tests.unit.scheduler.filters import cases


class TestJudges(unittest.TestCase):

    def test_capability_cases(self):
        for specs, expected in cases.CAPABILITY_CASES:
            for name, status in expected.items():
                found, _detail = ccf.judge_capabilities(
                    cases.api_view(name), specs)
                self.assertEqual(status, found, (specs, name))

    def test_host_passes_when_one_node_does(self):
        nodes = [cases.api_view('tcg'), cases.api_view('kvm')]
        specs = {'capabilities:cpu_info:features': '<in> avx2'}
        status, _d = hm.judge_host(
            nodes, lambda n: ccf.judge_capabilities(n, specs))
        self.assertEqual(hm.PASS, status)
        status, detail = hm.judge_host(
            nodes[:1], lambda n: ccf.judge_capabilities(n, specs))
        self.assertEqual(hm.FAIL, status)
        self.assertEqual(
            'tcg: capabilities:cpu_info:features=<in> avx2, the host has '
            "['pge'] (ComputeCapabilitiesFilter)",
            ccf.capabilities_text('tcg', detail))


