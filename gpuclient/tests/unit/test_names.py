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

from gpuclient import names
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
        ]
        for given, expected in cases:
            self.assertEqual(
                expected, names.normalize_resource_class(given), given
            )

    def test_invalid(self):
        for bad in ('', '   ', '...', None, 'x' * 300):
            self.assertRaises(
                exceptions.CommandError, names.normalize_resource_class, bad
            )


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
        self.assertRaises(exceptions.CommandError, names.normalize_trait, '-')
