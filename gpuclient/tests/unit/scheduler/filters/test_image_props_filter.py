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

"""gpuclient.rules.scheduler.filters.image_props_filter on plain data
(test_image_props_filter_nova: the same cases to Nova's filter)."""

import unittest

from gpuclient.rules.scheduler import host_manager as hm
from gpuclient.rules.scheduler.filters import image_props_filter as ipf
from gpuclient.tests.unit.scheduler.filters import cases


class TestNames(unittest.TestCase):

    def test_canonical(self):
        self.assertEqual('x86_64', ipf.canonical_arch('AMD64'))
        self.assertEqual('i686', ipf.canonical_arch('i386'))
        self.assertEqual('xen', ipf.canonical_hv_type('XAPI'))
        self.assertEqual('hvm', ipf.canonical_vm_mode('baremetal'))
        self.assertEqual('xen', ipf.canonical_vm_mode('pv'))
        self.assertIsNone(ipf.canonical_arch(None))
        self.assertRaises(ValueError, ipf.canonical_arch, 'pdp11')

    def test_versions(self):
        self.assertEqual('8.2.0', ipf.version_str(8002000))
        self.assertEqual('1.0', ipf.version_str(1000))
        self.assertTrue(ipf.version_satisfies('8.2.0', '>=8.2'))
        self.assertTrue(ipf.version_satisfies('8.2.0', '==8.2'))
        self.assertFalse(ipf.version_satisfies('8.2.0', '>=6, <8'))
        self.assertRaises(ValueError, ipf.version_satisfies, '8.2', 'new')

    def test_legacy_names_lose_to_current(self):
        wanted = ipf.image_requirements({'architecture': 'x86_64',
                                        'hw_architecture': 'aarch64',
                                        'hypervisor_type': 'QEMU',
                                        'vm_mode': 'hv'})
        self.assertEqual(('aarch64', 'qemu', 'hvm'), (
            wanted['architecture'], wanted['hv_type'], wanted['vm_mode']))

    def test_default_architecture(self):
        wanted = ipf.image_requirements({}, default_arch='aarch64')
        self.assertEqual('aarch64', wanted['architecture'])
        status, _d = ipf.judge_image(cases.api_view('fake'), wanted)
        self.assertEqual(hm.FAIL, status)

    def test_invalid_value_fails(self):
        wanted = ipf.image_requirements({'architecture': 'pdp11'})
        status, detail = ipf.judge_image(cases.api_view('kvm'), wanted)
        self.assertEqual(hm.FAIL, status)
        self.assertIn('hw_architecture', ipf.image_text('h', detail, wanted))


class TestJudges(unittest.TestCase):

    def test_image_cases(self):
        for props, expected in cases.IMAGE_CASES:
            wanted = ipf.image_requirements(props)
            for name, status in expected.items():
                found, _detail = ipf.judge_image(cases.api_view(name), wanted)
                self.assertEqual(status, found, (props, name))


