"""The test cloud is what the functional tests assume (issue 3).

Provider trees as Nova's resource tracker reports them for each kind of GPU
host, and one boot per kind with the real CLI: passthrough, vGPU, bare
metal.  Against another cloud (OS_CLOUD set by a gate) the host names come
from GPUCLIENT_*_HOST.
"""

import re

from gpuclient.tests.functional import base

PCI_CLASS = 'CUSTOM_PCI_10DE_2331'
BM_CLASS = 'CUSTOM_BAREMETAL_GPU_H100'
UUID_RE = re.compile(r'^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-'
                     r'[0-9a-f]{12}$')
PLACEMENT_TRAITS = base.PLACEMENT_TRAITS


class TestTestCloud(base.FunctionalTestCase):

    def tree(self, host):
        """(root provider, {child name: {class: inventory row}})."""
        root = self.root_provider(host)
        return root, self.children_of(root)

    def children_of(self, root):
        """{child name: {class: inventory row}} of ROOT's tree."""
        rps = self.openstack('resource', 'provider', 'list', '--in-tree',
                             root)
        children = {}
        for rp in rps:
            if rp['uuid'] == root:
                continue
            self.assertEqual(root, rp['parent_provider_uuid'])
            children[rp['name']] = self.inventory(rp['uuid'])
            children[rp['name']]['uuid'] = rp['uuid']
        return children

    def inventory(self, rp):
        return {row['resource_class']: row for row in self.openstack(
            'resource', 'provider', 'inventory', 'list', rp)}

    # ------------------------------------------------------ provider trees

    @base.needs('passthrough')
    def test_passthrough_tree(self):
        hv = self.hypervisor(base.PT_HOST)
        # libvirt-style FQDN node name: differs from the service host
        self.assertNotEqual(base.PT_HOST, hv['hypervisor_hostname'])
        root, children = self.tree(base.PT_HOST)
        self.assertEqual(4, len(children))
        for name, inv in children.items():
            self.assertIn(PCI_CLASS, inv, name)
            self.assertEqual(1, inv[PCI_CLASS]['total'])
        self.assertIn('VCPU', self.inventory(root))

    @base.needs('vgpu')
    def test_vgpu_tree(self):
        root, children = self.tree(base.VGPU_HOST)
        self.assertEqual(2, len(children))
        # (The driver sets no type trait there, tagging types is gpuclient's
        # job; not asserted: a pool on this shared cloud may have tagged
        # them.  test_driver_owned_traits shows such traits are kept.)
        for name, inv in children.items():
            self.assertEqual(4, inv['VGPU']['total'], name)
        self.assertIn('VCPU', self.inventory(root))

    @base.needs('mig')
    def test_mig_tree(self):
        _root, children = self.tree(base.MIG_HOST)
        self.assertEqual(7, len(children))
        for name, inv in children.items():
            self.assertEqual(1, inv['VGPU']['total'], name)

    def test_baremetal_tree(self):
        # Nova's ironic driver: one hypervisor and one root provider per
        # Ironic node, named by the node's UUID, all of one service host
        nodes = [hv for hv in self.openstack(
            '--os-compute-api-version', '2.53', 'hypervisor', 'list',
            '--long') if hv['Hypervisor Type'] == 'ironic']
        self.assertEqual(2, len(nodes), nodes)
        for node in nodes:
            self.assertRegex(node['Hypervisor Hostname'], UUID_RE)
            self.assertEqual({}, self.children_of(node['ID']))
            inv = self.inventory(node['ID'])
            self.assertEqual({BM_CLASS}, set(inv))
            self.assertEqual(1, inv[BM_CLASS]['total'])

    @base.needs('plain')
    def test_plain_tree(self):
        root, children = self.tree(base.PLAIN_HOST)
        self.assertEqual({}, children)
        self.assertEqual({'VCPU', 'MEMORY_MB', 'DISK_GB'},
                         set(self.inventory(root)))

    @base.needs('vgpu', 'baremetal')
    def test_driver_owned_traits(self):
        """Bare-metal node traits are the driver's; pGPU traits are not.

        A trait put by hand on the Ironic-like node disappears at a later
        periodic update; one put on a vGPU pGPU provider stays.
        """
        trait = 'CUSTOM_GPUCLIENT_FT_%s' % self.unique_name('t')[-8:].upper()
        self.openstack('trait', 'create', trait, parse=False)
        self.addCleanup(self.openstack, 'trait', 'delete', trait,
                        parse=False)
        bm_root, _ = self.tree(base.BM_HOST)
        _root, children = self.tree(base.VGPU_HOST)
        pgpu = sorted(children.values(), key=lambda c: c['uuid'])[0]['uuid']
        for rp in (bm_root, pgpu):
            args = []
            for t in sorted(self.traits(rp) | {trait}):
                args += ['--trait', t]
            self.openstack(*PLACEMENT_TRAITS, 'resource', 'provider',
                           'trait', 'set', *args, rp)
        self.addCleanup(self._remove_trait, pgpu, trait)
        # the driver's next resource update replaces the node's traits
        left = self.wait_for('trait %s off %s' % (trait, bm_root),
                             lambda: self.traits(bm_root),
                             lambda found: trait not in found, timeout=90,
                             interval=3)
        self.assertNotIn(trait, left, 'hand-made trait on the bare-metal '
                         'node provider was not replaced by the driver')
        self.assertIn(trait, self.traits(pgpu))
        self.assertIn('COMPUTE_NODE', self.traits(bm_root))

    def _remove_trait(self, rp, trait):
        args = []
        for t in sorted(self.traits(rp) - {trait}):
            args += ['--trait', t]
        if args:
            self.openstack(*PLACEMENT_TRAITS, 'resource', 'provider',
                           'trait', 'set', *args, rp)
        else:
            self.openstack(*PLACEMENT_TRAITS, 'resource', 'provider',
                           'trait', 'delete', rp, parse=False)

    # ------------------------------------------------------ boots

    @base.needs('passthrough')
    def test_boot_passthrough(self):
        flavor = self.create_flavor({'pci_passthrough:alias': 'h100:1'})
        # steered (Nova's scheduler still judges the host): unsteered, it
        # waited for the second stream's passthrough host to be disabled
        server = self.boot(flavor['id'], host=base.PT_HOST)
        self.assertEqual(base.PT_HOST, server['OS-EXT-SRV-ATTR:host'])
        self.assertEqual(1, self.allocations(server['id'])[PCI_CLASS])

    @base.needs('vgpu', 'mig')
    def test_boot_vgpu(self):
        flavor = self.create_flavor({'resources:VGPU': '1'})
        server = self.boot(flavor['id'], host=base.VGPU_HOST)
        self.assertEqual(base.VGPU_HOST, server['OS-EXT-SRV-ATTR:host'])
        self.assertEqual(1, self.allocations(server['id'])['VGPU'])

    @base.needs('baremetal')
    def test_boot_baremetal(self):
        flavor = self.create_flavor({
            'resources:%s' % BM_CLASS: '1', 'resources:VCPU': '0',
            'resources:MEMORY_MB': '0', 'resources:DISK_GB': '0'})
        server = self.boot(flavor['id'])
        self.assertEqual(base.BM_HOST, server['OS-EXT-SRV-ATTR:host'])
        self.assertEqual({BM_CLASS: 1}, self.allocations(server['id']))
