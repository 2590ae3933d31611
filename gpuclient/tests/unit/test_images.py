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

"""Pure image properties for GPU guests: plan and report."""

from osc_lib import exceptions

from gpuclient import images
from gpuclient.tests.unit import base

BARE = {'id': 'img-1', 'name': 'ubuntu-24.04-gpu'}
READY = dict(BARE, hw_machine_type='q35', hw_firmware_type='uefi')


class TestPlan(base.TestCase):
    def test_plans(self):
        cases = [
            # (image, options, changes)
            (BARE, {}, {'hw_machine_type': 'q35',
                        'hw_firmware_type': 'uefi'}),
            (READY, {}, {}),
            (dict(BARE, hw_machine_type='pc-q35-8.2'), {},
             {'hw_firmware_type': 'uefi'}),
            (dict(BARE, hw_machine_type='pc', hw_firmware_type='bios'), {},
             {'hw_machine_type': 'q35', 'hw_firmware_type': 'uefi'}),
            (BARE, {'q35': False}, {'hw_firmware_type': 'uefi'}),
            (BARE, {'uefi': False}, {'hw_machine_type': 'q35'}),
            (READY, {'q35': False, 'uefi': False},
             {'hw_machine_type': None, 'hw_firmware_type': None}),
            (dict(BARE, hw_machine_type='pc'), {'q35': False, 'uefi': False},
             {}),
            (BARE, {'secure_boot': True},
             {'hw_machine_type': 'q35', 'hw_firmware_type': 'uefi',
              'os_secure_boot': 'required'}),
            (dict(READY, os_secure_boot='required'), {'secure_boot': True},
             {}),
            (READY, {'hide_hypervisor_id': True},
             {'img_hide_hypervisor_id': 'true'}),
            (dict(READY, hw_hide_hypervisor_id='true'),
             {'hide_hypervisor_id': True},
             {'img_hide_hypervisor_id': 'true',
              'hw_hide_hypervisor_id': None}),
            (dict(READY, img_hide_hypervisor_id='True'),
             {'hide_hypervisor_id': True}, {}),
        ]
        for image, options, changes in cases:
            self.assertEqual(changes, images.plan(image, **options),
                             (image, options))

    def test_refused(self):
        for image, options, message in [
            (BARE, {'secure_boot': True, 'uefi': False}, '--secure-boot'),
            (BARE, {'secure_boot': True, 'q35': False}, '--secure-boot'),
            (dict(READY, os_secure_boot='required'), {'uefi': False},
             'image unset --property os_secure_boot'),
            (dict(READY, os_secure_boot='optional'), {'q35': False},
             'needs a q35'),
        ]:
            exc = self.assertRaises(exceptions.CommandError, images.plan,
                                    image, **options)
            self.assertIn(message, str(exc))


class TestReport(base.TestCase):
    def test_ready(self):
        props, ready, warnings = images.report(
            dict(READY, os_secure_boot='required',
                 img_hide_hypervisor_id='true'))
        self.assertTrue(ready)
        self.assertEqual([], warnings)
        self.assertEqual({'hw_machine_type': 'q35',
                          'hw_firmware_type': 'uefi',
                          'os_secure_boot': 'required',
                          'img_hide_hypervisor_id': 'true'}, props)

    def test_warnings(self):
        cases = [
            (BARE, ['hw_machine_type is not set',
                    'hw_firmware_type is not set']),
            (dict(READY, hw_machine_type='pc'), ['not a q35 machine']),
            (dict(READY, hw_firmware_type='bios'), ['BIOS firmware']),
            (dict(READY, hw_firmware_type='efi'), ['not a firmware']),
            (dict(READY, hw_firmware_type='bios', os_secure_boot='required'),
             ['BIOS firmware', 'without hw_firmware_type=uefi']),
            (dict(READY, hw_machine_type='pc', os_secure_boot='required'),
             ['not a q35 machine', 'needs a q35 machine type']),
            (dict(READY, os_secure_boot='yes'), ['is not one of']),
            (dict(READY, hw_hide_hypervisor_id='true'),
             ['hw_hide_hypervisor_id is not an image property']),
            (dict(READY, img_hide_hypervisor_id='sure'), ['not a boolean']),
        ]
        for image, expected in cases:
            _props, ready, warnings = images.report(image)
            self.assertFalse(ready, image)
            self.assertEqual(len(expected), len(warnings), warnings)
            for text, warning in zip(expected, warnings, strict=True):
                self.assertIn(text, warning)
