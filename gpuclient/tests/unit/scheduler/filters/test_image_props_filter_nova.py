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

"""gpuclient.rules.scheduler.filters.image_props_filter against Nova's
ImagePropertiesFilter: every case on every node (cases.py), the same
answer.
"""

import unittest

from gpuclient.rules.scheduler import host_manager as hm
from gpuclient.rules.scheduler.filters import image_props_filter as ipf
from gpuclient.tests.unit import nova_harness
from gpuclient.tests.unit.scheduler.filters import cases

if nova_harness.HAVE_NOVA:
    with nova_harness.quiet():
        from nova.scheduler.filters import image_props_filter


@nova_harness.requires_nova
class TestAgainstNova(unittest.TestCase):
    """Each case to Nova's filters and to gpuclient: the same answer."""

    def test_image_properties_filter(self):
        nova_filter = image_props_filter.ImagePropertiesFilter()
        compared = 0
        for props, _expected in cases.IMAGE_CASES:
            wanted = ipf.image_requirements(props)
            for name in cases.NODES:
                ours, detail = ipf.judge_image(cases.api_view(name), wanted)
                state = cases.nova_host_state(name)
                spec = cases.nova_request_spec(properties=props)
                if detail.get('nova_error'):
                    self.assertRaises(AttributeError,
                                      nova_filter.host_passes, state, spec)
                    compared += 1
                    continue
                if ours == hm.UNKNOWN:
                    continue
                theirs = nova_filter.host_passes(state, spec)
                compared += 1
                self.assertEqual(ours == hm.PASS, theirs, (props, name))
        self.assertGreater(compared, 40)

    def test_unknown_image_cases_really_depend_on_the_host(self):
        # an answer gpuclient leaves open differs between libvirt hosts
        nova_filter = image_props_filter.ImagePropertiesFilter()
        for props in ({'architecture': 'aarch64'}, {'img_hv_type': 'kvm'}):
            spec = cases.nova_request_spec(properties=props)
            answers = {nova_filter.host_passes(cases.nova_host_state(n), spec)
                       for n in ('kvm', 'tcg')}
            self.assertEqual({True, False}, answers, props)

