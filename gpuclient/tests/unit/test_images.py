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

from gpuclient.rules import images
from gpuclient.tests.unit import base

BARE = {'id': 'img-1', 'name': 'ubuntu-24.04-gpu'}
READY = dict(BARE, hw_machine_type='q35', hw_firmware_type='uefi')


SECURE = dict(READY, os_secure_boot='required')


class TestPlan(base.TestCase):
    def test_no_option_changes_nothing(self):
        for image in (BARE, READY, SECURE,
                      dict(BARE, hw_hide_hypervisor_id='true')):
            self.assertEqual({}, images.plan(image), image)

    def test_plans(self):
        cases = [
            # (image, options, changes)
            (BARE, {'q35': True, 'uefi': True},
             {'hw_machine_type': 'q35', 'hw_firmware_type': 'uefi'}),
            (READY, {'q35': True, 'uefi': True}, {}),
            (BARE, {'q35': True}, {'hw_machine_type': 'q35'}),
            (BARE, {'uefi': True}, {'hw_firmware_type': 'uefi'}),
            # a versioned q35 machine counts as q35
            (dict(BARE, hw_machine_type='pc-q35-8.2'), {'q35': True}, {}),
            (dict(BARE, hw_machine_type='pc', hw_firmware_type='bios'),
             {'q35': True, 'uefi': True},
             {'hw_machine_type': 'q35', 'hw_firmware_type': 'uefi'}),
            # --no-q35 removes any q35 machine, keeps other machines
            (READY, {'q35': False}, {'hw_machine_type': None}),
            (dict(READY, hw_machine_type='pc-q35-8.2'), {'q35': False},
             {'hw_machine_type': None}),
            (dict(READY, hw_machine_type='pc'), {'q35': False}, {}),
            (BARE, {'q35': False}, {}),
            # the other --no- forms write Nova's explicit "off" value
            (READY, {'uefi': False}, {'hw_firmware_type': 'bios'}),
            (BARE, {'uefi': False}, {'hw_firmware_type': 'bios'}),
            (dict(BARE, hw_firmware_type='bios'), {'uefi': False}, {}),
            (SECURE, {'secure_boot': False}, {'os_secure_boot': 'disabled'}),
            (READY, {'secure_boot': False}, {'os_secure_boot': 'disabled'}),
            (SECURE, {'q35': False, 'uefi': False, 'secure_boot': False},
             {'hw_machine_type': None, 'hw_firmware_type': 'bios',
              'os_secure_boot': 'disabled'}),
            (BARE, {'q35': True, 'uefi': True, 'secure_boot': True},
             {'hw_machine_type': 'q35', 'hw_firmware_type': 'uefi',
              'os_secure_boot': 'required'}),
            # q35 and UEFI already there: --secure-boot alone is enough
            (READY, {'secure_boot': True}, {'os_secure_boot': 'required'}),
            (SECURE, {'secure_boot': True}, {}),
            (READY, {'hide_hypervisor_id': True},
             {'img_hide_hypervisor_id': 'true'}),
            (dict(READY, hw_hide_hypervisor_id='true'),
             {'hide_hypervisor_id': True},
             {'img_hide_hypervisor_id': 'true',
              'hw_hide_hypervisor_id': None}),
            (dict(READY, img_hide_hypervisor_id='True'),
             {'hide_hypervisor_id': True}, {}),
            (dict(READY, img_hide_hypervisor_id='True'),
             {'hide_hypervisor_id': False},
             {'img_hide_hypervisor_id': 'false'}),
            (dict(READY, img_hide_hypervisor_id='no'),
             {'hide_hypervisor_id': False}, {}),
            (dict(READY, hw_hide_hypervisor_id='true'),
             {'hide_hypervisor_id': False},
             {'img_hide_hypervisor_id': 'false',
              'hw_hide_hypervisor_id': None}),
        ]
        for image, options, changes in cases:
            self.assertEqual(changes, images.plan(image, **options),
                             (image, options))

    def test_refused(self):
        for image, options, message in [
            (BARE, {'secure_boot': True}, 'Add --q35 and --uefi'),
            (BARE, {'secure_boot': True, 'q35': True},
             'Add --q35 and --uefi'),
            (READY, {'secure_boot': True, 'uefi': False},
             'Add --q35 and --uefi'),
            (READY, {'secure_boot': True, 'q35': False},
             'Add --q35 and --uefi'),
            (SECURE, {'uefi': False}, 'Add --no-secure-boot'),
            (dict(READY, os_secure_boot='optional'), {'q35': False},
             'Add --no-secure-boot'),
        ]:
            exc = self.assertRaises(exceptions.CommandError, images.plan,
                                    image, **options)
            self.assertIn(message, str(exc))
            self.assertIn('os_secure_boot', str(exc))

    def test_broken_image_left_alone_is_not_refused(self):
        # secure boot without UEFI already: a change elsewhere goes on
        broken = dict(BARE, os_secure_boot='required')
        self.assertEqual({'img_hide_hypervisor_id': 'true'},
                         images.plan(broken, hide_hypervisor_id=True))


class TestPlanUnset(base.TestCase):
    ALL = {'q35': True, 'uefi': True, 'secure_boot': True,
           'hide_hypervisor_id': True}

    def test_removes_what_set_writes(self):
        every = dict(SECURE, img_hide_hypervisor_id='true')
        for image, options, changes in [
            (every, self.ALL,
             {'hw_machine_type': None, 'hw_firmware_type': None,
              'os_secure_boot': None, 'img_hide_hypervisor_id': None}),
            (every, {'hide_hypervisor_id': True},
             {'img_hide_hypervisor_id': None}),
            (READY, {'uefi': True}, {'hw_firmware_type': None}),
            (READY, {}, {}),
            (BARE, self.ALL, {}),
            (dict(READY, img_hide_hypervisor_id='True'),
             {'hide_hypervisor_id': True}, {'img_hide_hypervisor_id': None}),
        ]:
            self.assertEqual((changes, []),
                             images.plan_unset(image, **options),
                             (image, options))
        # what set writes, unset removes: back to where it started
        added = images.plan(BARE, q35=True, uefi=True, secure_boot=True,
                            hide_hypervisor_id=True)
        changed = dict(BARE, **added)
        removed, notes = images.plan_unset(changed, **self.ALL)
        self.assertEqual([], notes)
        self.assertEqual(BARE, {k: v for k, v in
                                dict(changed, **removed).items()
                                if v is not None})

    def test_removes_what_set_no_writes(self):
        # set --no-uefi --no-secure-boot --no-hide-hypervisor-id writes
        # explicit "off" values: unset removes them as its own
        options = {'uefi': False, 'secure_boot': False,
                   'hide_hypervisor_id': False}
        added = images.plan(BARE, **options)
        self.assertEqual({'hw_firmware_type': 'bios',
                          'os_secure_boot': 'disabled',
                          'img_hide_hypervisor_id': 'false'}, added)
        changed = dict(BARE, **added)
        removed, notes = images.plan_unset(changed, **self.ALL)
        self.assertEqual([], notes)
        self.assertEqual({key: None for key in added}, removed)
        self.assertEqual(BARE, {k: v for k, v in
                                dict(changed, **removed).items()
                                if v is not None})
        # one at a time, too
        for option, key in images.OPTIONS:
            if key not in added:
                continue
            self.assertEqual(({key: None}, []),
                             images.plan_unset(changed, **{option: True}))

    def test_other_values_are_left_and_said(self):
        image = dict(BARE, hw_machine_type='pc-q35-8.2',
                     hw_firmware_type='efi', os_secure_boot='optional',
                     img_hide_hypervisor_id='yes')
        changes, notes = images.plan_unset(image, **self.ALL)
        self.assertEqual({}, changes)
        self.assertEqual(4, len(notes))
        for key, note in zip(images.PROPERTIES, notes, strict=True):
            self.assertIn('%s=%s is not a value gpuclient sets'
                          % (key, image[key]), note)
            self.assertIn('openstack image unset --property %s %s'
                          % (key, BARE['name']), note)
        # the note names both values gpuclient writes
        self.assertIn('(uefi or bios)', notes[1])
        self.assertIn('(required or disabled)', notes[2])
        self.assertIn('(true or false)', notes[3])
        # a hand-set value stays next to one of gpuclient's, which goes
        mixed = dict(image, os_secure_boot='disabled')
        changes, notes = images.plan_unset(mixed, uefi=True,
                                           secure_boot=True)
        self.assertEqual({'os_secure_boot': None}, changes)
        self.assertEqual(1, len(notes))
        self.assertIn('hw_firmware_type=efi', notes[0])

    def test_keeps_secure_boot_bootable(self):
        exc = self.assertRaises(exceptions.CommandError, images.plan_unset,
                                SECURE, uefi=True)
        self.assertIn('Add --secure-boot', str(exc))
        # removed together, fine
        changes, _notes = images.plan_unset(SECURE, uefi=True,
                                            secure_boot=True)
        self.assertEqual({'hw_firmware_type': None, 'os_secure_boot': None},
                         changes)


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
