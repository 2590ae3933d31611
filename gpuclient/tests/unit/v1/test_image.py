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

"""``openstack gpu image set/unset/show`` against a fake Glance."""

import copy
import io
from unittest import mock

from openstack.image.v2 import _proxy as image_proxy
from osc_lib import exceptions

from gpuclient.cloud import client
from gpuclient.tests.unit import base
from gpuclient.tests.unit import fakes
from gpuclient.v1 import image as image_cmd

IMAGE_ID = fakes.uid('image-1')


class FakeGlance:
    def __init__(self):
        self.images = {IMAGE_ID: {'id': IMAGE_ID, 'name': 'ubuntu-gpu',
                                  'status': 'active'}}
        self.patches = []

    def get(self, url, params=None, **kwargs):
        if url == '/images':
            return fakes.make_response(200, {'images': [
                i for i in self.images.values()
                if i['name'] == params['name']]})
        image_id = url.rsplit('/', 1)[1]
        if image_id in self.images:
            return fakes.make_response(200, self.images[image_id])
        return fakes.make_response(404, '<html>404 Not Found</html>')

    def patch(self, url, json=None, headers=None, **kwargs):
        self.patches.append((url, json, headers))
        image = self.images[url.rsplit('/', 1)[1]]
        for op in json:
            key = op['path'].lstrip('/')
            if op['op'] == 'remove':
                del image[key]
            else:
                image[key] = op['value']
        return fakes.make_response(200, image)


class ImageTestCase(base.CommandTestCase):
    def setUp(self):
        super().setUp()
        self.glance = FakeGlance()
        proxy = mock.Mock(spec=image_proxy.Proxy)
        proxy.get.side_effect = self.glance.get
        proxy.patch.side_effect = self.glance.patch
        conn = mock.Mock()
        conn.image = proxy
        self.cm = mock.Mock()
        self.cm.gpu = client.GpuClient(None, conn)

    def run_cmd(self, cls, args):
        app = self.make_app(self.cm)
        self.stdout = app.stdout = io.StringIO()
        cmd = cls(app, None)
        return cmd.take_action(self.check_parser(cmd, list(args)))

    @property
    def image(self):
        return self.glance.images[IMAGE_ID]


class TestSetImage(ImageTestCase):
    def test_parser(self):
        cmd = image_cmd.SetImage(self.make_app(None), None)
        self.check_parser(cmd, ['img'], [
            ('image', 'img'), ('q35', None), ('uefi', None),
            ('secure_boot', None), ('hide_hypervisor_id', None),
            ('dry_run', False)])
        self.check_parser(cmd, ['img', '--dry-run'], [('dry_run', True)])
        self.check_parser(cmd, ['img', '--q35', '--uefi', '--secure-boot',
                                '--hide-hypervisor-id'], [
            ('q35', True), ('uefi', True), ('secure_boot', True),
            ('hide_hypervisor_id', True)])
        self.check_parser(cmd, ['img', '--no-q35', '--no-uefi',
                                '--no-secure-boot',
                                '--no-hide-hypervisor-id'], [
            ('q35', False), ('uefi', False), ('secure_boot', False),
            ('hide_hypervisor_id', False)])
        self.assertRaises(base.ParserError, self.check_parser, cmd, [])
        for option in ('q35', 'uefi', 'secure-boot', 'hide-hypervisor-id'):
            self.assertRaises(base.ParserError, self.check_parser, cmd,
                              ['img', '--' + option, '--no-' + option])

    def test_no_option_changes_nothing(self):
        self.image['hw_firmware_type'] = 'bios'
        before = copy.deepcopy(self.glance.images)
        self.assertIsNone(self.run_cmd(image_cmd.SetImage, ['ubuntu-gpu']))
        self.assertEqual(before, self.glance.images)
        self.assertEqual([], self.glance.patches)
        self.assertIn('nothing to change', self.logger.output)

    def test_q35_uefi_by_name(self):
        self.run_cmd(image_cmd.SetImage, ['ubuntu-gpu', '--q35', '--uefi'])
        self.assertEqual('q35', self.image['hw_machine_type'])
        self.assertEqual('uefi', self.image['hw_firmware_type'])
        ((url, patch, headers),) = self.glance.patches
        self.assertEqual('/images/%s' % IMAGE_ID, url)
        self.assertEqual(
            'application/openstack-images-v2.1-json-patch',
            headers['Content-Type'])
        self.assertEqual({'add'}, {op['op'] for op in patch})
        # again: nothing to do, no request
        self.run_cmd(image_cmd.SetImage, [IMAGE_ID, '--q35', '--uefi'])
        self.assertEqual(1, len(self.glance.patches))

    def test_secure_boot_and_hidden_id(self):
        self.image['hw_hide_hypervisor_id'] = 'true'
        self.image['hw_firmware_type'] = 'bios'
        self.run_cmd(image_cmd.SetImage, [IMAGE_ID, '--q35', '--uefi',
                                          '--secure-boot',
                                          '--hide-hypervisor-id'])
        self.assertEqual('required', self.image['os_secure_boot'])
        self.assertEqual('true', self.image['img_hide_hypervisor_id'])
        self.assertEqual('uefi', self.image['hw_firmware_type'])
        self.assertNotIn('hw_hide_hypervisor_id', self.image)
        ops = {op['path']: op['op'] for op in self.glance.patches[0][1]}
        self.assertEqual('replace', ops['/hw_firmware_type'])
        self.assertEqual('remove', ops['/hw_hide_hypervisor_id'])

    def test_no_forms(self):
        self.image.update(hw_machine_type='q35', hw_firmware_type='uefi',
                          os_secure_boot='required',
                          img_hide_hypervisor_id='true')
        self.run_cmd(image_cmd.SetImage, [
            IMAGE_ID, '--no-q35', '--no-uefi', '--no-secure-boot',
            '--no-hide-hypervisor-id'])
        self.assertNotIn('hw_machine_type', self.image)
        self.assertEqual(('bios', 'disabled', 'false'), (
            self.image['hw_firmware_type'], self.image['os_secure_boot'],
            self.image['img_hide_hypervisor_id']))
        self.assertEqual(1, len(self.glance.patches))

    def test_dry_run(self):
        self.image['hw_hide_hypervisor_id'] = 'true'
        before = copy.deepcopy(self.glance.images)
        self.assertIsNone(self.run_cmd(image_cmd.SetImage, [
            'ubuntu-gpu', '--q35', '--uefi', '--secure-boot',
            '--hide-hypervisor-id', '--dry-run']))
        self.assertEqual([
            '1. set properties of image ubuntu-gpu: hw_firmware_type=uefi, '
            'hw_hide_hypervisor_id (removed), hw_machine_type=q35, '
            'img_hide_hypervisor_id=true, os_secure_boot=required (undo: '
            'restore properties of image ubuntu-gpu: hw_firmware_type '
            '(removed), hw_hide_hypervisor_id=true, hw_machine_type '
            '(removed), img_hide_hypervisor_id (removed), os_secure_boot '
            '(removed))'], self.stdout.getvalue().splitlines())
        self.assertEqual([], self.glance.patches)
        self.assertEqual(before, self.glance.images)
        # once set, a dry run says there is nothing to do
        self.run_cmd(image_cmd.SetImage, [IMAGE_ID, '--q35'])
        self.run_cmd(image_cmd.SetImage, [IMAGE_ID, '--q35', '--dry-run'])
        self.assertEqual(['Updating image ubuntu-gpu: nothing to do, the '
                          'cloud already matches.'],
                         self.stdout.getvalue().splitlines())
        self.assertEqual(1, len(self.glance.patches))

    def test_refused(self):
        exc = self.assertRaises(exceptions.CommandError, self.run_cmd,
                                image_cmd.SetImage,
                                [IMAGE_ID, '--secure-boot', '--q35'])
        self.assertIn('Add --q35 and --uefi', str(exc))
        exc = self.assertRaises(exceptions.CommandError, self.run_cmd,
                                image_cmd.SetImage, ['nope', '--q35'])
        self.assertIn('No image with name or ID nope', str(exc))
        self.assertEqual([], self.glance.patches)


class TestUnsetImage(ImageTestCase):
    def test_parser(self):
        cmd = image_cmd.UnsetImage(self.make_app(None), None)
        self.check_parser(cmd, ['img'], [
            ('image', 'img'), ('q35', False), ('uefi', False),
            ('secure_boot', False), ('hide_hypervisor_id', False),
            ('dry_run', False)])
        self.check_parser(cmd, ['img', '--q35', '--uefi', '--secure-boot',
                                '--hide-hypervisor-id', '--dry-run'], [
            ('q35', True), ('uefi', True), ('secure_boot', True),
            ('hide_hypervisor_id', True), ('dry_run', True)])
        self.assertRaises(base.ParserError, self.check_parser, cmd,
                          ['img', '--no-q35'])

    def test_removes_what_set_added(self):
        before = copy.deepcopy(self.image)
        self.run_cmd(image_cmd.SetImage, [IMAGE_ID, '--q35', '--uefi',
                                          '--secure-boot',
                                          '--hide-hypervisor-id'])
        self.run_cmd(image_cmd.UnsetImage, [
            'ubuntu-gpu', '--q35', '--uefi', '--secure-boot',
            '--hide-hypervisor-id'])
        self.assertEqual(before, self.image)
        self.assertEqual({'remove'},
                         {op['op'] for op in self.glance.patches[1][1]})
        self.assertEqual('', self.stdout.getvalue())

    def test_removes_what_set_no_added(self):
        before = copy.deepcopy(self.image)
        self.run_cmd(image_cmd.SetImage, [IMAGE_ID, '--no-uefi',
                                          '--no-secure-boot',
                                          '--no-hide-hypervisor-id'])
        self.assertEqual(('bios', 'disabled', 'false'), (
            self.image['hw_firmware_type'], self.image['os_secure_boot'],
            self.image['img_hide_hypervisor_id']))
        self.run_cmd(image_cmd.UnsetImage, [
            IMAGE_ID, '--uefi', '--secure-boot', '--hide-hypervisor-id'])
        self.assertEqual(before, self.image)
        self.assertNotIn('not a value gpuclient sets', self.logger.output)

    def test_other_values_left_and_said(self):
        self.image.update(hw_machine_type='pc-q35-8.2',
                          hw_firmware_type='uefi',
                          img_hide_hypervisor_id='yes')
        self.run_cmd(image_cmd.UnsetImage, [IMAGE_ID, '--q35', '--uefi',
                                            '--hide-hypervisor-id'])
        self.assertEqual('pc-q35-8.2', self.image['hw_machine_type'])
        self.assertEqual('yes', self.image['img_hide_hypervisor_id'])
        self.assertNotIn('hw_firmware_type', self.image)
        self.assertIn('hw_machine_type=pc-q35-8.2 is not a value '
                      'gpuclient sets (q35)', self.logger.output)
        self.assertIn('img_hide_hypervisor_id=yes is not a value '
                      'gpuclient sets (true or false)', self.logger.output)

    def test_no_option_and_dry_run(self):
        self.image.update(hw_machine_type='q35', hw_firmware_type='uefi')
        before = copy.deepcopy(self.glance.images)
        self.assertIsNone(self.run_cmd(image_cmd.UnsetImage, [IMAGE_ID]))
        self.run_cmd(image_cmd.UnsetImage, [IMAGE_ID, '--uefi',
                                            '--dry-run'])
        self.assertEqual([
            '1. set properties of image ubuntu-gpu: hw_firmware_type '
            '(removed) (undo: restore properties of image ubuntu-gpu: '
            'hw_firmware_type=uefi)'], self.stdout.getvalue().splitlines())
        self.assertEqual(before, self.glance.images)
        self.assertEqual([], self.glance.patches)

    def test_refused_while_secure_boot_needs_it(self):
        self.image.update(hw_machine_type='q35', hw_firmware_type='uefi',
                          os_secure_boot='required')
        exc = self.assertRaises(exceptions.CommandError, self.run_cmd,
                                image_cmd.UnsetImage, [IMAGE_ID, '--uefi'])
        self.assertIn('Add --secure-boot', str(exc))
        self.assertEqual([], self.glance.patches)


class TestShowImage(ImageTestCase):
    def test_parser(self):
        cmd = image_cmd.ShowImage(self.make_app(None), None)
        self.check_parser(cmd, ['img'], [('image', 'img')])

    def test_show(self):
        self.image.update(hw_machine_type='q35', hw_firmware_type='bios',
                          hw_hide_hypervisor_id='true')
        columns, values = self.run_cmd(image_cmd.ShowImage, ['ubuntu-gpu'])
        shown = dict(zip(columns, values, strict=True))
        self.assertEqual('q35', shown['hw_machine_type'])
        self.assertEqual('true', shown['hw_hide_hypervisor_id'])
        self.assertFalse(shown['gpu_ready'])
        warnings = list(shown['warnings']._value)
        self.assertEqual(2, len(warnings))
        self.assertIn('BIOS firmware', warnings[0])
        self.assertIn('img_hide_hypervisor_id', warnings[1])
