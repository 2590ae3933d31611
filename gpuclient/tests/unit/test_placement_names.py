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

from osc_lib import exceptions

from gpuclient.rules import placement_names as names
from gpuclient.tests.unit import base


class TestResourceClass(base.TestCase):
    def test_normalisation(self):
        cases = [
            ('VGPU', 'VGPU'),
            ('vgpu', 'VGPU'),
            ('pgpu', 'PGPU'),
            ('CUSTOM_PCI_10DE_2331', 'CUSTOM_PCI_10DE_2331'),
            ('custom_pci_10de_2331', 'CUSTOM_PCI_10DE_2331'),
            # Ironic node resource class, normalised as Nova does
            ('baremetal.gpu-h100', 'CUSTOM_BAREMETAL_GPU_H100'),
            ('CUSTOM_baremetal.gpu', 'CUSTOM_BAREMETAL_GPU'),
            ('mig 3g.40gb', 'CUSTOM_MIG_3G_40GB'),
            # a trailing separator stays an '_', as Nova's normalize_rc_name
            # and os_resource_classes.normalize_name keep it
            ('baremetal.gpu-h100.', 'CUSTOM_BAREMETAL_GPU_H100_'),
            ('gpu_', 'CUSTOM_GPU_'),
        ]
        for given, expected in cases:
            self.assertEqual(
                expected, names.normalize_resource_class(given), given
            )

    def test_invalid(self):
        for bad in ('', '   ', '...', None, 'x' * 300):
            error = self.assertRaises(
                exceptions.CommandError, names.normalize_resource_class, bad
            )
            self.assertIn('Invalid resource class %r' % bad, str(error))


class TestTrait(base.TestCase):
    def test_normalisation(self):
        self.assertEqual(
            'CUSTOM_NVIDIA_35', names.normalize_trait('nvidia-35')
        )
        self.assertEqual(
            'CUSTOM_GPU_POOL_SOLVER', names.normalize_trait('GPU_POOL_solver')
        )
        self.assertEqual(
            'CUSTOM_NVIDIA_35', names.normalize_trait('CUSTOM_nvidia-35')
        )

    def test_invalid(self):
        error = self.assertRaises(exceptions.CommandError,
                                  names.normalize_trait, '-')
        self.assertIn("Invalid trait name '-'", str(error))


class TestBounds(base.TestCase):
    def test_constants(self):
        self.assertEqual(64, names.MAX_GPUS)
        self.assertEqual(2147483647, names.MAX_AMOUNT)

    def test_standard_classes_of_os_resource_classes_1_1(self):
        # os-resource-classes 1.1.0 STANDARDS (Placement 16 uses it)
        self.assertEqual(21, len(names.STANDARD_RESOURCE_CLASSES))
        self.assertIn('IPV4_ADDRESS', names.STANDARD_RESOURCE_CLASSES)
        self.assertEqual('IPV4_ADDRESS',
                         names.normalize_resource_class('ipv4_address'))


class TestGpuClass(base.TestCase):
    def test_allowed(self):
        cases = [
            ('VGPU', 'VGPU'),
            ('pgpu', 'PGPU'),
            ('CUSTOM_PCI_10DE_2331', 'CUSTOM_PCI_10DE_2331'),
            ('baremetal.gpu-h100', 'CUSTOM_BAREMETAL_GPU_H100'),
            ('CUSTOM_VCPU', 'CUSTOM_VCPU'),
            ('CUSTOM_NVIDIA_35', 'CUSTOM_NVIDIA_35'),
        ]
        for given, expected in cases:
            self.assertEqual(expected, names.check_gpu_class(given), given)

    def test_refused_standard_classes(self):
        refused = ['VCPU', 'PCPU', 'MEMORY_MB', 'DISK_GB', 'SRIOV_NET_VF',
                   'NUMA_SOCKET', 'NUMA_CORE', 'NUMA_THREAD',
                   'NUMA_MEMORY_MB', 'IPV4_ADDRESS',
                   'NET_BW_EGR_KILOBIT_PER_SEC', 'NET_BW_IGR_KILOBIT_PER_SEC',
                   'NET_PACKET_RATE_KILOPACKET_PER_SEC',
                   'NET_PACKET_RATE_EGR_KILOPACKET_PER_SEC',
                   'NET_PACKET_RATE_IGR_KILOPACKET_PER_SEC',
                   'MEM_ENCRYPTION_CONTEXT', 'PCI_DEVICE', 'FPGA',
                   'VGPU_DISPLAY_HEAD']
        self.assertEqual(
            sorted(refused), sorted(names.NON_GPU_RESOURCE_CLASSES))
        for rc in refused:
            exc = self.assertRaises(exceptions.CommandError,
                                    names.check_gpu_class, rc)
            message = str(exc)
            self.assertIn("%s cannot be a pool's GPU resource class" % rc,
                          message)
            self.assertIn('VGPU, PGPU, or a custom class', message)

    def test_lower_case_is_normalised_then_refused(self):
        exc = self.assertRaises(exceptions.CommandError,
                                names.check_gpu_class, 'vcpu')
        self.assertIn('VCPU cannot be', str(exc))
        # the way out for an Ironic class really named vcpu
        self.assertIn('Ironic class named vcpu as CUSTOM_VCPU', str(exc))

    def test_invalid_name(self):
        self.assertRaisesRegex(exceptions.CommandError,
                               'Invalid resource class',
                               names.check_gpu_class, '...')


class TestTraitNames(base.TestCase):
    def test_check_custom_trait(self):
        for good in ('CUSTOM_X', 'CUSTOM_GPU_POOL_SOLVER', 'CUSTOM_1_2',
                     'CUSTOM_' + 'A' * 248):
            self.assertEqual(good, names.check_custom_trait(good))

    def test_check_custom_trait_refused(self):
        for bad in ('CUSTOM_', 'CUSTOM', 'custom_x', 'CUSTOM_x',
                    'CUSTOM_A-B', 'HW_CPU_X86_AVX2', '', None):
            self.assertRaisesRegex(
                exceptions.CommandError,
                'Placement wants CUSTOM_ followed by upper-case letters',
                names.check_custom_trait, bad)
        exc = self.assertRaises(exceptions.CommandError,
                                names.check_custom_trait,
                                'CUSTOM_' + 'A' * 249)
        self.assertIn('256 characters, Placement allows at most 255',
                      str(exc))

    def test_normalize_trait_never_returns_a_bad_name(self):
        # 'CUSTOM' alone is a name of its own
        self.assertEqual('CUSTOM_CUSTOM', names.normalize_trait('CUSTOM'))
        for bad in ('CUSTOM_', 'custom_-'):
            self.assertRaisesRegex(
                exceptions.CommandError, 'nothing is left after CUSTOM_',
                names.normalize_trait, bad)
        self.assertRaisesRegex(
            exceptions.CommandError, 'longer than 255 characters',
            names.normalize_trait, 'x' * 300)

    def test_is_trait_name(self):
        for good in ('HW_CPU_X86_AVX2', 'COMPUTE_STATUS_DISABLED',
                     'CUSTOM_X', 'CUSTOM', 'A' * 255):
            self.assertTrue(names.is_trait_name(good), good)
        for bad in ('CUSTOM_', 'hw_cpu', 'HW-CPU', '', None, 'A' * 256,
                    'CUSTOM_a'):
            self.assertFalse(names.is_trait_name(bad), bad)

    def test_same_list_as_os_resource_classes(self):
        try:
            import os_resource_classes
        except ImportError:
            self.skipTest('os-resource-classes is not installed here (the '
                          'test cloud venv has it)')
        self.assertEqual(set(os_resource_classes.STANDARDS),
                         set(names.STANDARD_RESOURCE_CLASSES))
