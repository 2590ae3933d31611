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

"""Pure host/capacity logic, on provider trees shaped like the seeds'."""

from gpuclient.rules import host_names
from gpuclient.rules import hosts
from gpuclient.rules import model
from gpuclient.rules.scheduler import host_manager
from gpuclient.tests.unit import base
from gpuclient.tests.unit import fakes


def snapshot_of(cloud, queries=('VCPU',), slow=()):
    """Build a model.Placement the way the client layer does, from a
    FakeCloud."""
    snap = model.Placement.listed(
        cloud.providers_body()['resource_providers'])
    for rc in queries:
        snap.add_candidates(rc, cloud.candidates_body(rc))
    details = {}
    for root in slow:
        for p in cloud.tree(root):
            details[p.uuid] = hosts.summary_from_inventory(
                p.inventory, p.used
            )
    snap.add_details(details)
    return snap


class TestGpuClasses(base.TestCase):
    def test_defaults_match_gpu_classes_only(self):
        existing = [
            'VCPU', 'MEMORY_MB', 'VGPU', 'PGPU', 'CUSTOM_PCI_10DE_2331',
            'CUSTOM_PCI_1002_74A1', 'CUSTOM_PCI_8086_1572',
            'CUSTOM_BAREMETAL_GPU_H100', 'CUSTOM_BAREMETAL_LARGE',
            'SRIOV_NET_VF',
        ]
        self.assertEqual(
            {
                'VGPU', 'PGPU', 'CUSTOM_PCI_10DE_2331',
                'CUSTOM_PCI_1002_74A1', 'CUSTOM_BAREMETAL_GPU_H100',
            },
            hosts.gpu_classes(existing),
        )

    def test_pool_and_extra_classes_are_added(self):
        found = hosts.gpu_classes(
            ['VCPU'], ['CUSTOM_BAREMETAL_LARGE', None],
            ['CUSTOM_PCI_8086_56C0'],
        )
        self.assertEqual(
            {'CUSTOM_BAREMETAL_LARGE', 'CUSTOM_PCI_8086_56C0'}, found
        )


class TestCapacity(base.TestCase):
    def test_capacity_formula(self):
        # Placement: int((total - reserved) * allocation_ratio)
        self.assertEqual(4, hosts.capacity(4, 0, 1.0))
        self.assertEqual(3, hosts.capacity(4, 1, 1.0))
        self.assertEqual(120, hosts.capacity(32, 2, 4.0))
        self.assertEqual(1, hosts.capacity(3, 0, 0.5))

    def test_summary_from_inventory(self):
        summary = hosts.summary_from_inventory(
            {'VGPU': fakes.inv(4, reserved=1), 'VCPU': fakes.inv(8, ratio=2)},
            {'VGPU': 2},
        )
        # the allocation limits stay: exact fit counts need them
        self.assertEqual(
            {'VGPU': {'capacity': 3, 'used': 2, 'min_unit': 1,
                      'max_unit': 4, 'step_size': 1},
             'VCPU': {'capacity': 16, 'used': 0, 'min_unit': 1,
                      'max_unit': 8, 'step_size': 1}},
            summary['resources'],
        )


class TestDeviceFigures(base.TestCase):
    def test_figures(self):
        cases = [
            ({'capacity': 4, 'used': 1}, (4, 1, 3)),
            ({'capacity': 1, 'used': 1}, (1, 1, 0)),
            # Ironic: node in use is reserved, capacity 0, still allocated
            ({'capacity': 0, 'used': 1}, (1, 1, 0)),
            # over-committed after an allocation ratio change
            ({'capacity': 2, 'used': 3}, (3, 3, 0)),
        ]
        for item, expected in cases:
            self.assertEqual(expected, hosts.device_figures(item), item)


class HostRowsFixture:
    """The seed's hosts, and host_rows over them."""

    def setUp(self):
        super().setUp()
        cloud = fakes.FakeCloud()
        # The seed's passthrough host; its node name differs from the
        # service host, as libvirt's FQDN does.
        cloud.pci_host('gpu-pt-1', used=1, nodename='gpu-pt-1.gpu.test')
        cloud.vgpu_host('gpu-vgpu-1', used=(3, 0), traits=['CUSTOM_NV_35'])
        self.bm = cloud.baremetal_node('bm-compute-1', fakes.uid('node-1'))
        cloud.compute_host('plain-1')
        self.cloud = cloud
        self.classes = hosts.gpu_classes(cloud.resource_classes())

    def rows(self, **kwargs):
        snap = snapshot_of(
            self.cloud, queries=('VCPU', 'CUSTOM_BAREMETAL_GPU_H100')
        )
        return hosts.host_rows(
            snap, self.cloud.hypervisors, self.classes, **kwargs
        )


class TestHostRows(HostRowsFixture, base.TestCase):

    def test_one_row_per_host_and_class(self):
        rows, unmapped = self.rows(
            pools_by_host={'gpu-pt-1': ['solver']}
        )
        self.assertEqual(set(), unmapped)
        got = [
            (r['host'], r['pools'], r['resource_class'], r['devices'],
             r['total'], r['used'], r['free'])
            for r in rows
        ]
        self.assertEqual(
            [
                ('bm-compute-1', [], 'CUSTOM_BAREMETAL_GPU_H100', 1, 1, 0, 1),
                ('gpu-pt-1', ['solver'], 'CUSTOM_PCI_10DE_2331', 4, 4, 1, 3),
                ('gpu-vgpu-1', [], 'VGPU', 2, 8, 3, 5),
            ],
            got,
        )

    def test_host_is_the_service_host_not_the_provider_name(self):
        rows, _ = self.rows()
        pt = [r for r in rows if r['resource_class'].startswith('CUSTOM_PCI')]
        self.assertEqual('gpu-pt-1', pt[0]['host'])
        self.assertEqual(
            ['gpu-pt-1.gpu.test_0000:%02x:00.0' % n
             for n in (0x81, 0x82, 0x83, 0x84)],
            pt[0]['providers'],
        )

    def test_traits_per_device_provider(self):
        rows, _ = self.rows()
        vgpu = [r for r in rows if r['resource_class'] == 'VGPU'][0]
        self.assertEqual(
            {'gpu-vgpu-1_pci_0000_84_00_0': ['CUSTOM_NV_35'],
             'gpu-vgpu-1_pci_0000_85_00_0': ['CUSTOM_NV_35']},
            vgpu['traits'],
        )

    def test_unmapped_trees_hidden_unless_asked(self):
        orphan = self.cloud.vgpu_host('gone-1')
        self.cloud.hypervisors = [
            h for h in self.cloud.hypervisors if h['id'] != orphan.uuid
        ]
        rows, unmapped = self.rows()
        self.assertEqual({orphan.uuid}, unmapped)
        self.assertNotIn('gone-1', [r['host'] for r in rows])
        rows, _ = self.rows(unmapped=True)
        gone = [r for r in rows if r['host'] == 'gone-1']
        self.assertEqual(1, len(gone))
        self.assertFalse(gone[0]['mapped'])


class TestSnapshot(base.TestCase):
    def test_vcpu_query_covers_every_tree_with_free_vcpu(self):
        cloud = fakes.FakeCloud()
        a = cloud.pci_host('a')
        full = cloud.pci_host('full', vcpus=2, used_vcpus=8)
        node = cloud.baremetal_node('bm', 'node-1')
        snap = snapshot_of(cloud)
        self.assertEqual({full.uuid, node.uuid}, snap.missing_roots())
        self.assertEqual({full.uuid}, snap.missing_roots({a.uuid, full.uuid}))
        self.assertEqual(5, len(snap.providers_in_trees([full.uuid])))

    def test_full_host_is_found_by_its_gpu_class(self):
        cloud = fakes.FakeCloud()
        full = cloud.pci_host('full', vcpus=2, used_vcpus=8)
        snap = snapshot_of(cloud, queries=('VCPU', 'CUSTOM_PCI_10DE_2331'))
        self.assertEqual(set(), snap.missing_roots())
        self.assertEqual(0, snap.free(full.uuid, 'VCPU'))

    def test_truncation_detected_from_slow_path(self):
        cloud = fakes.FakeCloud()
        first = cloud.pci_host('a')
        second = cloud.pci_host('b')
        snap = model.Placement.listed(
            cloud.providers_body()['resource_providers'])
        # max_allocation_candidates=1: only host a answered
        snap.add_candidates('VCPU', cloud.candidates_body('VCPU', limit=1))
        self.assertEqual({second.uuid}, snap.missing_roots())
        self.assertIn(first.uuid, snap.covered)
        details = {
            p.uuid: hosts.summary_from_inventory(p.inventory, p.used)
            for p in cloud.tree(second)
        }
        snap.add_details(details)
        self.assertEqual([('VCPU', 1, 1)], snap.truncation_suspects())
        self.assertEqual(1, len(snap.notes()))
        self.assertIn('max_allocation_candidates', snap.notes()[0])

    def test_no_truncation_note_for_a_full_host(self):
        cloud = fakes.FakeCloud()
        cloud.pci_host('a')
        full = cloud.pci_host('full', vcpus=2, used_vcpus=8, used=4)
        snap = snapshot_of(
            cloud, queries=('VCPU', 'CUSTOM_PCI_10DE_2331'), slow=[full]
        )
        self.assertEqual([], snap.truncation_suspects())
        self.assertEqual([], snap.notes())


class TestOneHostMap(HostRowsFixture, base.TestCase):
    """Every consumer maps hypervisors to Nova hosts alike
    (``host_names.nova_host``): by the compute service host, never by a
    hypervisor hostname, and a hypervisor without a service host is no
    host for any of them (its tree is unmapped)."""

    def setUp(self):
        super().setUp()
        for hv in self.cloud.hypervisors:
            if hv['service']['host'] == 'gpu-vgpu-1':
                hv['service'] = None
                self.orphan = hv

    def test_hypervisor_without_service_host_is_no_host_anywhere(self):
        hypervisors = self.cloud.hypervisors
        orphan_name = self.orphan['hypervisor_hostname']
        rows, unmapped = self.rows()
        self.assertNotIn(orphan_name, {r['host'] for r in rows})
        self.assertNotIn('gpu-vgpu-1', {r['host'] for r in rows})
        self.assertIn(self.orphan['id'], unmapped)
        self.assertNotIn(self.orphan['id'],
                         host_names.root_hosts(hypervisors))
        cloud = model.Cloud([], hypervisors, [], None)
        self.assertEqual(host_names.host_roots(hypervisors),
                         cloud.host_roots())
        self.assertNotIn(orphan_name, cloud.host_roots())
        self.assertNotIn(orphan_name, host_manager.nodes_by_host(hypervisors))
        self.assertNotIn(None, host_manager.nodes_by_host(hypervisors))
        self.assertNotIn(orphan_name, host_names.index([], hypervisors))
        self.assertIsNone(host_manager.host_state(self.orphan)['host'])

    def test_service_host_unlike_its_hypervisor_name(self):
        hypervisors = self.cloud.hypervisors
        (pt,) = [hv for hv in hypervisors
                 if hv['hypervisor_hostname'] == 'gpu-pt-1.gpu.test']
        self.assertEqual('gpu-pt-1', host_names.root_hosts(hypervisors)[
            pt['id']])
        self.assertEqual({pt['id']}, host_names.host_roots(hypervisors)[
            'gpu-pt-1'])
        rows, _unmapped = self.rows()
        self.assertIn('gpu-pt-1', {r['host'] for r in rows})
        self.assertNotIn('gpu-pt-1.gpu.test', {r['host'] for r in rows})
        self.assertEqual([pt], host_manager.nodes_by_host(hypervisors)[
            'gpu-pt-1'])
        self.assertEqual('gpu-pt-1', host_manager.host_state(pt)['host'])
        self.assertEqual({'gpu-pt-1': host_names.HYPERVISOR_HOSTNAME},
                         host_names.index([], hypervisors)[
                             'gpu-pt-1.gpu.test'])
