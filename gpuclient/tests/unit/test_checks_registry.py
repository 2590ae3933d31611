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

"""checks.CHECKS, the one registry of ``gpu check``, built from its
families (``checks.FAMILIES``) as the host filters' is from theirs."""

import importlib
import inspect
import pkgutil

from gpuclient.rules import checks
from gpuclient.rules.checks import gpus
from gpuclient.rules.checks import hosts
from gpuclient.rules.checks import pools
from gpuclient.rules.checks import services
from gpuclient.tests.unit import base

# the order gpu check runs the checks in and reports their findings (by
# severity, then this order): each family's checks in turn
ORDER = (
    # pools
    'pool-drift', 'pool-unpooled-hosts', 'pool-no-devices',
    'pool-aggregates', 'pool-shared-alias', 'pool-projects',
    'flavor-unknown-trait', 'flavor-too-many-devices',
    'flavor-unscoped-keys', 'flavor-public-limited-pool',
    'flavor-mem-encryption', 'flavor-address-space', 'flavor-pci-alias',
    'pool-vf-alias', 'pci-one-time-use', 'libvirt-post-copy',
    'placement-wide-trees', 'image-firmware', 'image-pool-trait',
    # services
    'scheduler-settings', 'quota-gpu-limits', 'quota-pci-not-enforced',
    'blazar-flavor-reservation', 'placement-unmapped-trees',
    'placement-disabled-service', 'baremetal-node-traits',
    # gpus
    'gpu-stranded', 'gpu-idle', 'gpu-unhealthy', 'gpu-application-xid',
    'gpu-row-remap', 'gpu-vgpu-licence', 'gpu-driver-drift', 'gpu-missing',
    # hosts
    'host-facts-stale', 'host-iommu-off', 'host-gpu-driver',
    'host-iommu-group', 'host-state-lost', 'host-layout-drift',
    'host-mig-pending', 'host-mdevctl-missing',
)


class TestRegistry(base.TestCase):

    def test_the_families_in_the_order_they_run(self):
        self.assertEqual((pools, services, gpus, hosts), checks.FAMILIES)

    def test_every_family_module_is_registered(self):
        found = []
        for info in pkgutil.iter_modules(checks.__path__):
            module = importlib.import_module(
                '%s.%s' % (checks.__name__, info.name))
            if hasattr(module, 'CHECKS'):
                found.append(module)
        self.assertEqual(sorted(m.__name__ for m in found),
                         sorted(f.__name__ for f in checks.FAMILIES))

    def test_every_check_once_in_the_order_they_run(self):
        listed = [name for family in checks.FAMILIES
                  for name, _func in family.CHECKS]
        self.assertEqual(len(set(listed)), len(listed))
        self.assertEqual(list(ORDER), listed)
        self.assertEqual(list(ORDER), list(checks.CHECKS))
        for family in checks.FAMILIES:
            for name, func in family.CHECKS:
                self.assertIs(func, checks.CHECKS[name], name)
                self.assertEqual(family.__name__, func.__module__, name)

    def test_a_check_finds_under_its_registered_name(self):
        # run() orders the findings by the name they carry: a check
        # registered under another name would not be found in the order
        for name, func in checks.CHECKS.items():
            self.assertIn("'%s'" % name, inspect.getsource(func), name)
