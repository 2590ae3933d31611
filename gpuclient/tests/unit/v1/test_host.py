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

"""``openstack gpu host list``: parser, output and request counts."""

from osc_lib import exceptions

from gpuclient.tests.unit import base
from gpuclient.tests.unit import fakes
from gpuclient.v1 import host

COLUMNS = (
    'Host', 'Pools', 'Resource Class', 'Devices', 'Total', 'Used', 'Free',
    'Awaiting Release',
)


class HostListTestCase(base.CommandTestCase):
    def setUp(self):
        super().setUp()
        self.cloud = fakes.FakeCloud()

    def run_cmd(self, args=(), limit=None):
        self.placement = self.useFixture(
            fakes.PlacementFixture(self.cloud, limit=limit)
        )
        self.cm = self.useFixture(fakes.ClientManagerFixture(self.cloud))
        cmd = host.ListHost(self.make_app(self.cm.client_manager), None)
        parsed = self.check_parser(cmd, list(args))
        columns, data = cmd.take_action(parsed)
        return columns, [
            tuple(
                v.human_readable() if hasattr(v, 'human_readable') else v
                for v in row
            )
            for row in data
        ]

    def seed_cloud(self):
        self.cloud.pci_host('gpu-pt-1', used=1, nodename='gpu-pt-1.gpu.test')
        self.cloud.vgpu_host('gpu-vgpu-1', used=(4, 1))
        self.cloud.baremetal_node('bm-compute-1', fakes.uid('node-1'))
        self.cloud.baremetal_node('bm-compute-1', fakes.uid('node-2'),
                                  used=True)
        self.cloud.compute_host('plain-1')
        # a full passthrough host: no free VCPU, every GPU in use
        self.cloud.pci_host('gpu-pt-2', used=4, vcpus=2, used_vcpus=8)


class TestHostListParser(HostListTestCase):
    def test_defaults(self):
        cmd = host.ListHost(self.make_app(None), None)
        self.check_parser(cmd, [], [
            ('pool', None), ('resource_classes', []), ('long', False),
            ('unmapped', False),
        ])

    def test_repeated_resource_class(self):
        cmd = host.ListHost(self.make_app(None), None)
        self.check_parser(
            cmd,
            ['--resource-class', 'CUSTOM_A', '--resource-class', 'b.c',
             '--pool', 'solver', '--long'],
            [('resource_classes', ['CUSTOM_A', 'b.c']), ('pool', 'solver'),
             ('long', True)],
        )

    def test_unknown_option(self):
        cmd = host.ListHost(self.make_app(None), None)
        self.assertRaises(
            base.ParserError, self.check_parser, cmd, ['--bogus'], []
        )


class TestHostList(HostListTestCase):
    def test_seed_shaped_cloud(self):
        self.seed_cloud()
        columns, rows = self.run_cmd()
        self.assertEqual(COLUMNS, columns)
        self.assertEqual(
            [
                ('bm-compute-1', '', 'CUSTOM_BAREMETAL_GPU_H100', 2, 2, 1, 1,
                 0),
                ('gpu-pt-1', '', 'CUSTOM_PCI_10DE_2331', 4, 4, 1, 3, 0),
                ('gpu-pt-2', '', 'CUSTOM_PCI_10DE_2331', 4, 4, 4, 0, 0),
                ('gpu-vgpu-1', '', 'VGPU', 2, 8, 5, 3, 0),
            ],
            rows,
        )

    def test_requests_do_not_grow_with_hosts(self):
        """10 and 200 hosts cost the same number of Placement requests."""
        counts = []
        for n in (10, 200):
            self.cloud = fakes.FakeCloud()
            for i in range(n):
                self.cloud.pci_host('pt-%d' % i, used=i % 5)
                self.cloud.vgpu_host('vg-%d' % i)
            self.cloud.baremetal_node('bm', 'node-%d' % n)
            self.run_cmd()
            counts.append(len(self.placement.requests()))
            self.assertEqual(
                2, len(self.placement.requests('/allocation_candidates'))
            )
        self.assertEqual(counts[0], counts[1])
        # /, resource_providers, resource_classes, VCPU and one GPU class
        self.assertEqual(5, counts[0])

    def test_classes_are_only_queried_while_trees_are_missing(self):
        self.cloud.pci_host('gpu-pt-1')
        self.run_cmd()
        sent = self.placement.requests('/allocation_candidates')
        self.assertEqual(['vcpu:1'], [r.qs['resources'][0] for r in sent])

    def test_full_trees_fall_back_to_per_provider_calls(self):
        self.seed_cloud()
        self.run_cmd()
        # the full host's 5 providers and the used bare-metal node: nothing
        # free there, so no allocation-candidates answer covers them
        full = [p for p in self.cloud.providers
                if p.root.name in ('gpu-pt-2', fakes.uid('node-2'))]
        self.assertEqual(6, len(full))
        slow = [
            r for r in self.placement.requests()
            if r.path.startswith('/resource_providers/')
        ]
        # inventories, usages and traits (one-time-use devices) of each
        # of them, and nothing else
        self.assertEqual(3 * len(full), len(slow))
        self.assertEqual(
            {p.uuid for p in full},
            {r.path.split('/')[2] for r in slow},
        )

    def test_long_adds_providers_and_traits(self):
        self.cloud.vgpu_host('gpu-vgpu-1', traits=['CUSTOM_NVIDIA_35'])
        columns, rows = self.run_cmd(['--long'])
        self.assertEqual(COLUMNS + ('Device Providers', 'Traits',
                                    'Unavailable', 'Node States'), columns)
        self.assertEqual(
            "gpu-vgpu-1_pci_0000_84_00_0, gpu-vgpu-1_pci_0000_85_00_0",
            rows[0][8],
        )
        self.assertIn('CUSTOM_NVIDIA_35', rows[0][9])

    def test_truncated_answer_is_reported(self):
        for i in range(3):
            self.cloud.pci_host('pt-%d' % i)
        columns, rows = self.run_cmd(limit=2)
        # the host left out of the truncated answer is still counted
        self.assertEqual(3, len(rows))
        self.assertIn('max_allocation_candidates', self.logger.output)

    def test_resource_class_option_adds_a_class(self):
        self.cloud.compute_host('intel-1')
        self.cloud.add(fakes.Provider(
            'intel-1_gpu', parent=self.cloud.providers[-1],
            inventory={'CUSTOM_PCI_8086_56C0': fakes.inv(1)}))
        _, rows = self.run_cmd()
        self.assertEqual([], rows)
        _, rows = self.run_cmd(['--resource-class', 'custom_pci_8086_56c0'])
        self.assertEqual(
            [('intel-1', '', 'CUSTOM_PCI_8086_56C0', 1, 1, 0, 1, 0)], rows
        )

    def test_pool_filter_and_column(self):
        self.seed_cloud()
        self.cloud.aggregates = [
            fakes.Aggregate(
                'solver',
                {'gpu_pool': 'solver', 'gpu_pool_mode': 'passthrough',
                 'gpu_resource_class': 'CUSTOM_PCI_10DE_2331',
                 'gpu_alias': 'h100', 'gpu_pci_id': '10de:2331'},
                hosts=['gpu-pt-1', 'gpu-pt-2']),
            fakes.Aggregate('ordinary', {'ssd': 'true'},
                            hosts=['gpu-vgpu-1']),
        ]
        _, rows = self.run_cmd(['--pool', 'solver'])
        self.assertEqual(['gpu-pt-1', 'gpu-pt-2'], [r[0] for r in rows])
        self.assertEqual(['solver', 'solver'], [r[1] for r in rows])

    def test_unreadable_pool_is_reported_and_skipped(self):
        self.seed_cloud()
        self.cloud.aggregates = [
            fakes.Aggregate(
                'solver',
                {'gpu_pool': 'solver', 'gpu_pool_mode': 'passthrough',
                 'gpu_resource_class': 'CUSTOM_PCI_10DE_2331',
                 'gpu_alias': 'h100', 'gpu_pci_id': '10de:2331'},
                hosts=['gpu-pt-1']),
            fakes.Aggregate(
                'broken', {'gpu_pool': 'broken', 'gpu_pool_mode': 'sriov',
                           'gpu_resource_class': 'VGPU'},
                hosts=['gpu-vgpu-1']),
        ]
        _, rows = self.run_cmd()
        pools = {r[0]: r[1] for r in rows}
        self.assertEqual('solver', pools['gpu-pt-1'])
        self.assertEqual('', pools['gpu-vgpu-1'])
        self.assertIn("aggregate broken is marked as GPU pool but cannot be "
                      "read as one: unknown mode 'sriov'",
                      self.logger.output)

    def test_unknown_pool(self):
        self.seed_cloud()
        exc = self.assertRaises(
            exceptions.CommandError, self.run_cmd, ['--pool', 'nope']
        )
        self.assertIn('No GPU pool named nope', str(exc))

    def test_invalid_resource_class(self):
        exc = self.assertRaises(
            exceptions.CommandError, self.run_cmd,
            ['--resource-class', '...'],
        )
        self.assertIn('Invalid resource class', str(exc))
