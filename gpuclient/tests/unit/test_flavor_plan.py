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

"""rules.flavor_plan and specs.owned_reason with plain data."""

from osc_lib import exceptions

from gpuclient.rules import flavor_plan
from gpuclient.rules import pools
from gpuclient.rules import specs
from gpuclient.tests.unit import base

POOLS = {'ws': dict(pools.build_spec('ws', 'vgpu', vgpu_type='nvidia-35',
                                     isolate=True), aggregate='ws',
                    pool_trait='CUSTOM_GPU_POOL_WS',
                    type_trait='CUSTOM_NVIDIA_35')}


def flavor(public=False, **extra):
    return {'id': 'f-1', 'name': 'g1', 'description': None,
            'os-flavor-access:is_public': public,
            'extra_specs': dict({specs.POOL_SPEC: 'ws',
                                 'resources:VGPU': '1'}, **extra)}


class TestOwned(base.TestCase):
    def test_table(self):
        for key, owned in (
                (specs.POOL_SPEC, True),
                ('aggregate_instance_extra_specs:ssd', True),
                ('resources:VGPU', True), ('resources2:MEMORY_MB', True),
                ('resources:CUSTOM_PCI_10DE_2331', True),
                ('resources:VCPU', True),  # bare-metal zeroes it
                ('trait:CUSTOM_GPU_POOL_OTHER', True),
                ('trait:CUSTOM_NVIDIA_35', True),
                ('pci_passthrough:alias', True),
                ('accel:device_profile', True), ('group_policy', True),
                ('hw:pci_numa_affinity_policy', True),
                ('trait:HW_CPU_X86_AVX2', False), ('resources:PCPU', False),
                ('hw:pmu', False), ('os:secure_boot', False),
                ('quota:cpu_shares', False)):
            self.assertEqual(owned, bool(specs.owned_reason(key, POOLS)),
                             key)


class TestUpdate(base.TestCase):
    def test_steps_and_nothing_to_do(self):
        plan = flavor_plan.update(
            flavor(**{'hw:pmu': 'true'}), ['p1'], POOLS, description='d',
            properties={'hw:pmu': 'false'}, add_projects=['p1', 'p2'])
        self.assertEqual(['flavor.description', 'flavor.specs',
                          'flavor.add_access'], [s.op for s in plan])
        self.assertEqual('p2', plan.steps[2].args['project'])
        again = flavor_plan.update(
            dict(flavor(**{'hw:pmu': 'false'}), description='d'),
            ['p1', 'p2'], POOLS, description='d',
            properties={'hw:pmu': 'false'}, add_projects=['p1', 'p2'])
        self.assertFalse(again)
        # unset of what is not there, and of a project without access
        self.assertFalse(flavor_plan.update(
            flavor(), ['p1'], POOLS, unset=['hw:pmu'],
            remove_projects=['p2'], command='unset'))

    def test_refusals(self):
        for kwargs, message in (
                ({'properties': {'resources:VGPU': '2'}},
                 'gpuclient derives this extra spec'),
                ({'unset': [specs.POOL_SPEC]},
                 'gpuclient derives this extra spec'),
                ({'properties': {'hw:pmu': 'maybe'}}, 'Nova wants'),
                ({'description': 'x' * 70000}, 'Invalid flavor description'),
        ):
            exc = self.assertRaises(exceptions.CommandError,
                                    flavor_plan.update, flavor(), [], POOLS,
                                    **kwargs)
            self.assertIn(message, str(exc))
        exc = self.assertRaises(exceptions.CommandError, flavor_plan.update,
                                flavor(public=True), [], POOLS,
                                add_projects=['p1'])
        self.assertIn('is public', str(exc))
        plain = dict(flavor(), extra_specs={'hw:pmu': 'true'})
        exc = self.assertRaises(exceptions.CommandError, flavor_plan.update,
                                plain, [], POOLS, unset=['hw:pmu'],
                                command='unset')
        self.assertIn('Use "openstack flavor unset"', str(exc))

    def test_empty_description_clears(self):
        plan = flavor_plan.update(dict(flavor(), description='old'), [],
                                  POOLS, description='')
        (step,) = plan
        self.assertIsNone(step.args['description'])
        self.assertEqual('old', step.inverse.args['description'])
        self.assertEqual({'description': None}, step.inverse.args['expect'])
