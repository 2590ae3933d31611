"""The functional tests' host discovery (gpuclient/tests/functional/hosts.py)
on plain Placement and Nova data, shaped as the test cloud's fake drivers
(tools/cloud/fakevirt.py) and a stock devstack report them."""

import testtools

from gpuclient.tests.functional import hosts


def _cloud(*trees):
    """(providers, inventories, traits, hypervisors) of trees given as
    (service host, node, {provider: (inventory, traits)}), root first."""
    providers, inventories, traits, hypervisors = [], {}, {}, []
    for host, node, members in trees:
        root = None
        for name, (inv, trs) in members.items():
            uuid = 'uuid-' + name
            root = root or uuid
            providers.append({'uuid': uuid, 'name': name,
                              'root_provider_uuid': root})
            inventories[uuid] = {rc: {'total': n} for rc, n in inv.items()}
            traits[uuid] = list(trs)
        if host:
            hypervisors.append({'hypervisor_hostname': node,
                                'service': {'host': host}})
    return providers, inventories, traits, hypervisors


COMPUTE = {'VCPU': 64, 'MEMORY_MB': 4096, 'DISK_GB': 100}


def _root(node, extra=None):
    return {node: (dict(COMPUTE, **(extra or {})), ['COMPUTE_NODE'])}


def pt(host='gpu-pt-1'):
    node = host + '.gpu.test'   # libvirt's FQDN node name
    members = _root(node)
    for i in range(4):
        members['%s_0000:4%d:00.0' % (node, i)] = (
            {'CUSTOM_PCI_10DE_2331': 1}, [])
    return host, node, members


def vgpu(host='gpu-vgpu-1', per_gpu=4, gpus=2, trait=None):
    members = _root(host)
    for i in range(gpus):
        members['%s_pci_0000_8%d_00_0' % (host, i)] = (
            {'VGPU': per_gpu}, [trait] if trait else [])
    return host, host, members


def mig(host='gpu-mig-1'):
    return vgpu(host, per_gpu=1, gpus=7)


def bm(host='bm-compute-1', node='6f1c0000-node'):
    return host, node, {node: ({'CUSTOM_BAREMETAL_GPU_H100': 1}, [])}


def plain(host='plain-1'):
    return host, host, _root(host)


class TestClassify(testtools.TestCase):

    def test_the_test_clouds_hosts(self):
        self.assertEqual(
            {'passthrough': 'gpu-pt-1', 'vgpu': 'gpu-vgpu-1',
             'mig': 'gpu-mig-1', 'baremetal': 'bm-compute-1',
             'plain': 'plain-1'},
            hosts.classify(*_cloud(pt(), vgpu(), mig(), bm(), plain())))

    def test_stock_devstack_has_only_a_plain_host(self):
        found = hosts.classify(*_cloud(plain('devstack')))
        self.assertEqual({'passthrough': None, 'vgpu': None, 'mig': None,
                          'baremetal': None, 'plain': 'devstack'}, found)

    def test_mig_by_trait_even_with_several_vgpus_per_provider(self):
        found = hosts.classify(*_cloud(
            vgpu('a', per_gpu=3, trait='CUSTOM_NVIDIA_MIG_1G_10GB')))
        self.assertEqual(('a', None), (found['mig'], found['vgpu']))

    def test_one_pgpu_with_one_vgpu_is_vgpu_not_mig(self):
        found = hosts.classify(*_cloud(vgpu('a', per_gpu=1, gpus=1)))
        self.assertEqual(('a', None), (found['vgpu'], found['mig']))

    def test_gpu_host_is_not_plain(self):
        found = hosts.classify(*_cloud(pt('p'), vgpu('v')))
        self.assertIsNone(found['plain'])

    def test_vf_backed_vgpu_host_is_not_plain(self):
        # PCI in Placement: one provider per card with its VFs' class
        members = _root('gpu-vf-1')
        members['gpu-vf-1_0000:A1:00.0'] = ({'CUSTOM_VGPU_L40S_24Q': 2},
                                            [])
        found = hosts.classify(*_cloud(('gpu-vf-1', 'gpu-vf-1', members),
                                       plain()))
        self.assertEqual('plain-1', found['plain'])

    def test_first_by_name_of_several(self):
        found = hosts.classify(*_cloud(plain('z'), plain('b'), pt('y'),
                                       pt('c')))
        self.assertEqual(('b', 'c'), (found['plain'], found['passthrough']))

    def test_tree_without_a_hypervisor_is_ignored(self):
        # a seeded tree (tools/testcloud seed-hosts) or a sharing provider
        found = hosts.classify(*_cloud((None, 'seed-1', pt('seed-1')[2])))
        self.assertIsNone(found['passthrough'])

    def test_passthrough_maps_the_fqdn_node_to_the_service_host(self):
        found = hosts.classify(*_cloud(pt('gpu-pt-7')))
        self.assertEqual('gpu-pt-7', found['passthrough'])


class TestResolve(testtools.TestCase):

    def test_environment_wins(self):
        env = {v: 'h-' + k for k, v in hosts.ENV.items()}
        self.assertEqual({k: 'h-' + k for k in hosts.KINDS},
                         hosts.resolve('x', env))

    def test_test_cloud_keeps_its_names_and_reads_nothing(self):
        env = {'OS_CLOUD': 'gpuclient-admin',
               'OS_CLIENT_CONFIG_FILE': '/var/tmp/gpuclient-testcloud/c.yaml',
               'GPUCLIENT_PT_HOST': 'other'}
        self.assertEqual(dict(hosts.TESTCLOUD, passthrough='other'),
                         hosts.resolve('gpuclient-admin', env))

    def test_reason_names_the_kind_and_the_variable(self):
        reason = hosts.missing_reason('vgpu')
        self.assertIn('no vGPU host: Placement offers VGPU', reason)
        self.assertIn('GPUCLIENT_VGPU_HOST', reason)
