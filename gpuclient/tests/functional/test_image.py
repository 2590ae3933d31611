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

"""``openstack gpu image set/unset/show`` against a real Glance.

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
        # no option: nothing changes
        self.openstack('gpu', 'image', 'set', image['name'], parse=False)
        self.assertEqual({}, self.gpu_properties(image))
        self.openstack('gpu', 'image', 'set', image['name'], '--q35',
                       '--uefi', parse=False)
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
        self.assertEqual({'hw_firmware_type': 'bios',
                          'img_hide_hypervisor_id': 'true'},
                         self.gpu_properties(image))

    def test_no_forms(self):
        image = self.make_image('hw_machine_type=q35',
                                'hw_firmware_type=uefi',
                                'os_secure_boot=required')
        self.openstack('gpu', 'image', 'set', image['id'], '--no-q35',
                       '--no-uefi', '--no-secure-boot',
                       '--no-hide-hypervisor-id', parse=False)
        self.assertEqual({'hw_firmware_type': 'bios',
                          'os_secure_boot': 'disabled',
                          'img_hide_hypervisor_id': 'false'},
                         self.gpu_properties(image))
        # the --no- values are gpuclient's too: unset removes them
        self.openstack('gpu', 'image', 'unset', image['id'], '--uefi',
                       '--secure-boot', '--hide-hypervisor-id', parse=False)
        self.assertEqual({}, self.gpu_properties(image))

    def test_unset_removes_what_set_added(self):
        image = self.make_image('hw_machine_type=pc-q35-8.2')
        self.openstack('gpu', 'image', 'set', image['id'], '--uefi',
                       '--secure-boot', '--hide-hypervisor-id', parse=False)
        rc, out, err = self.openstack_raw(
            'gpu', 'image', 'unset', image['name'], '--q35', '--uefi',
            '--secure-boot', '--hide-hypervisor-id')
        self.assertEqual(0, rc, err)
        self.assertEqual('', out)
        # q35 came from elsewhere (a versioned machine): kept, and said so
        self.assertIn('hw_machine_type=pc-q35-8.2 is not a value '
                      'gpuclient sets', err)
        self.assertEqual({'hw_machine_type': 'pc-q35-8.2'},
                         self.gpu_properties(image))

    def test_bad_input(self):
        plain = self.make_image()
        secure = self.make_image('hw_machine_type=q35',
                                 'hw_firmware_type=uefi',
                                 'os_secure_boot=required')
        before = {i['id']: self.gpu_properties(i) for i in (plain, secure)}
        cases = [
            ('set', [plain['id'], '--secure-boot', '--q35'], None,
             'Add --q35 and --uefi'),
            ('set', [plain['id'], '--secure-boot', '--no-uefi'], None,
             'Add --q35 and --uefi'),
            ('set', [secure['id'], '--no-uefi'], None,
             'Add --no-secure-boot'),
            ('unset', [secure['id'], '--q35'], None, 'Add --secure-boot'),
            ('set', ['gpuclient-ft-no-such-image', '--q35'], None,
             'No image with name'),
            ('set', [plain['id'], '--q35'], self.member_cloud, 'No image'),
        ]
        for index, (verb, args, cloud, message) in enumerate(cases):
            rc, _out, err = self.openstack_matrix(index, 'gpu', 'image', verb,
                                                  *args, cloud=cloud)
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
