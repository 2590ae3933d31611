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

"""Pool host writes take the names operators copy from ``hypervisor list``
and ``resource provider list``, and write the compute host to Nova."""

from osc_lib import exceptions

from gpuclient.ops import pool_ops
from gpuclient.tests.unit import test_pool_ops


def provider_reads(placement):
    return [r for r in placement.mock.request_history
            if r.method == 'GET' and r.path.endswith('/resource_providers')]


class TestHostNames(test_pool_ops.PoolOpsTestCase):
    def test_create_with_hypervisor_hostname(self):
        pool_ops.create(self.client, self.spec('other'), ['gpu-pt-1'])
        baseline = len(provider_reads(self.placement))
        self.assertNotIn('using gpu-pt-1', self.logger.output)
        pool, _plan = pool_ops.create(self.client, self.spec(),
                                      ['gpu-pt-1.test'])
        self.assertEqual(['gpu-pt-1'], self.cloud.aggregates[1].hosts)
        self.assertEqual(['gpu-pt-1'], pool['hosts'])
        self.assertIn('"gpu-pt-1.test" is the hypervisor hostname of '
                      'compute host gpu-pt-1: using gpu-pt-1.',
                      self.logger.output)
        # services and hypervisors explained it: no extra provider read
        self.assertEqual(2 * baseline, len(provider_reads(self.placement)))

    def test_add_with_root_provider_uuid_and_child_provider_name(self):
        pool_ops.create(self.client, self.spec('ws', 'vgpu'), [])
        pool_ops.add_hosts(self.client, 'ws', ['gpu-vgpu-1'])
        pool_ops.remove_hosts(self.client, 'ws', ['gpu-vgpu-1'])
        before = len(provider_reads(self.placement))
        pool_ops.add_hosts(self.client, 'ws', ['gpu-vgpu-1'])
        baseline = len(provider_reads(self.placement)) - before
        pool_ops.remove_hosts(self.client, 'ws', ['gpu-vgpu-1'])
        child = next(p for p in self.cloud.tree(self.second) if p.parent)
        before = len(provider_reads(self.placement))
        pool, plan = pool_ops.add_hosts(
            self.client, 'ws', [self.vgpu.uuid, child.name])
        self.assertEqual(['gpu-vgpu-1', 'gpu-vgpu-2'],
                         sorted(self.cloud.aggregates[0].hosts))
        # a child provider's name needs the provider list: one more read
        self.assertEqual(baseline + 1,
                         len(provider_reads(self.placement)) - before)
        # the plan names compute hosts
        lines = '\n'.join(plan.lines())
        self.assertIn('add host gpu-vgpu-1 to aggregate ws', lines)
        self.assertIn('add host gpu-vgpu-2 to aggregate ws', lines)

    def test_ironic_node_resolves_to_its_compute_host(self):
        pool, _plan = pool_ops.create(
            self.client,
            self.spec('bm', 'baremetal',
                      resource_class='baremetal.gpu-h100'),
            [self.bm.uuid])
        self.assertEqual(['bm-1'], self.cloud.aggregates[0].hosts)

    def test_unknown_name_changes_nothing(self):
        exc = self.assertRaises(exceptions.CommandError, pool_ops.create,
                                self.client, self.spec(),
                                ['gpu-pt-1.test', 'gpu-pt-9'])
        self.assertIn('Unknown compute host(s): gpu-pt-9.', str(exc))
        self.assertIn('gpu-pt-1 (hypervisor gpu-pt-1.test)', str(exc))
        self.assertEqual([], self.compute.calls)

    def test_remove_with_hypervisor_hostname(self):
        pool_ops.create(self.client, self.spec(), ['gpu-pt-1'])
        pool, _plan = pool_ops.remove_hosts(self.client, 'solver',
                                            ['gpu-pt-1.test'])
        self.assertEqual([], self.cloud.aggregates[0].hosts)
        self.assertEqual([], pool['hosts'])

    def test_remove_unknown_name_says_not_in_pool(self):
        pool_ops.create(self.client, self.spec(), ['gpu-pt-1'])
        exc = self.assertRaises(exceptions.CommandError,
                                pool_ops.remove_hosts, self.client,
                                'solver', ['gpu-pt-9'])
        self.assertIn('Not in pool solver: gpu-pt-9.', str(exc))
        self.assertEqual(['gpu-pt-1'], self.cloud.aggregates[0].hosts)
