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

"""``openstack gpu image set/show`` against a real Glance.

Each test works on its own empty image; properties are read back with
plain ``openstack image show``.
"""

from gpuclient.tests.functional import base

GPU_KEYS = ('hw_machine_type', 'hw_firmware_type', 'os_secure_boot',
            'img_hide_hypervisor_id', 'hw_hide_hypervisor_id')


class TestGpuImage(base.FunctionalTestCase):
    def make_image(self, *properties):
        name = self.unique_name('image')
        args = []
        for prop in properties:
            args += ['--property', prop]
        image = self.openstack('image', 'create', '--disk-format', 'raw',
                               '--container-format', 'bare', *args, name)
        self.addCleanup(self.openstack, 'image', 'delete', image['id'],
                        parse=False)
        return image

    def gpu_properties(self, image):
        props = self.openstack('image', 'show', image['id'])['properties']
        return {k: props[k] for k in GPU_KEYS if k in props}

    def test_set_and_show(self):
        image = self.make_image()
        shown = self.openstack('gpu', 'image', 'show', image['name'])
        self.assertFalse(shown['gpu_ready'])
        self.assertEqual(2, len(shown['warnings']))
        self.openstack('gpu', 'image', 'set', image['name'], parse=False)
        self.assertEqual({'hw_machine_type': 'q35',
                          'hw_firmware_type': 'uefi'},
                         self.gpu_properties(image))
        self.openstack('gpu', 'image', 'set', image['id'], '--secure-boot',
                       '--hide-hypervisor-id', parse=False)
        self.assertEqual({'hw_machine_type': 'q35',
                          'hw_firmware_type': 'uefi',
                          'os_secure_boot': 'required',
                          'img_hide_hypervisor_id': 'true'},
                         self.gpu_properties(image))
        shown = self.openstack('gpu', 'image', 'show', image['id'])
        self.assertTrue(shown['gpu_ready'])
        self.assertEqual([], shown['warnings'])

    def test_wrong_hide_property(self):
        image = self.make_image('hw_hide_hypervisor_id=true',
                                'hw_firmware_type=bios')
        shown = self.openstack('gpu', 'image', 'show', image['id'])
        text = ' '.join(shown['warnings'])
        self.assertIn('hw_hide_hypervisor_id is not an image property', text)
        self.assertIn('BIOS firmware', text)
        self.openstack('gpu', 'image', 'set', image['id'],
                       '--hide-hypervisor-id', parse=False)
        self.assertEqual({'hw_machine_type': 'q35',
                          'hw_firmware_type': 'uefi',
                          'img_hide_hypervisor_id': 'true'},
                         self.gpu_properties(image))

    def test_no_q35_no_uefi_undo(self):
        image = self.make_image('hw_machine_type=q35',
                                'hw_firmware_type=uefi')
        self.openstack('gpu', 'image', 'set', image['id'], '--no-q35',
                       '--no-uefi', parse=False)
        self.assertEqual({}, self.gpu_properties(image))

    def test_bad_input(self):
        plain = self.make_image()
        secure = self.make_image('hw_machine_type=q35',
                                 'hw_firmware_type=uefi',
                                 'os_secure_boot=required')
        before = {i['id']: self.gpu_properties(i) for i in (plain, secure)}
        cases = [
            ([plain['id'], '--secure-boot', '--no-uefi'], None,
             '--secure-boot needs'),
            ([plain['id'], '--secure-boot', '--no-q35'], None,
             '--secure-boot needs'),
            ([secure['id'], '--no-uefi'], None,
             'image unset --property os_secure_boot'),
            (['gpuclient-ft-no-such-image'], None, 'No image with name'),
            ([plain['id']], self.member_cloud, 'No image'),
        ]
        for args, cloud, message in cases:
            rc, _out, err = self.openstack_raw('gpu', 'image', 'set', *args,
                                               cloud=cloud)
            lines = [line for line in err.splitlines() if line.strip()]
            self.assertEqual(1, rc, (args, err))
            self.assertEqual(1, len(lines), (args, err))
            self.assertIn(message, lines[0], args)
        rc, _out, err = self.openstack_raw('gpu', 'image', 'show',
                                           'gpuclient-ft-no-such-image')
        self.assertEqual(1, rc)
        self.assertIn('No image with name', err)
        self.assertEqual(before, {i['id']: self.gpu_properties(i)
                                  for i in (plain, secure)})
