"""Fake virt drivers for the test cloud's GPU hosts (nova 34).

Each driver reports hardware the way one of Nova's real drivers does, so
that Nova's own resource tracker (not a script) builds the provider trees in
Placement:

* ``PassthroughDriver``: 4 whole GPUs 10de:2331 as ``type-PCI`` devices on
  2 NUMA nodes; with ``[pci] report_in_placement`` Nova turns them into
  ``CUSTOM_PCI_10DE_2331`` child providers.  The node name is the host's
  FQDN, as libvirt reports it, so it differs from the service host.
* ``VgpuDriver``: 2 pGPU child providers with ``VGPU`` inventory, as the
  libvirt driver makes them; no type trait (tagging is gpuclient's job) and,
  like libvirt, it leaves alone traits that an operator adds to them. The
  pGPUs are those ``[devices] enabled_mdev_types`` and their
  ``[mdev_<type>] device_addresses`` list (as libvirt reads them), so the
  host's nova.conf drives them; without them, ``DEVICES``. A type's
  ``[mdev_<type>] mdev_class`` is the class its pGPUs offer (``VGPU`` by
  default), and a pGPU no type lists any more is removed, as libvirt
  does: a re-cut card's nova.conf re-shapes the tree.
* ``MigDriver``: 7 VF child providers with ``VGPU`` total 1 each, which is
  what MIG-backed vGPU on SR-IOV cards looks like.
* ``OneTimeUseDriver``: as ``PassthroughDriver``, one GPU 10de:2335, which
  the host's ``device_spec`` marks ``one_time_use``: Nova itself reserves
  it in Placement once a server holds it.
* ``VfDriver``: one SR-IOV card as libvirt reports it with NVIDIA's
  current vGPU driver: the PF (``type-PF``) and its VFs (``type-VF``,
  ``parent_addr`` the PF), all 10de:26b9; the host's ``[pci] device_spec``
  picks the VFs carrying a vGPU type, and Nova's PCI-in-Placement
  translator makes one provider for the PF with one unit per such VF.
* ``PlainDriver``: no GPU.

The bare-metal host is not here: it runs Nova's real ironic driver in front
of real Ironic (``cloud.ironic``).

Nova 34 loads ``nova.virt.<compute_driver>`` only, so nova-compute must be
started through ``cloud.compute``, which makes this module importable as
``nova.virt.gpufake``.  These classes use Nova internals
(``nova.virt.fake``, ``nova.virt.node``, the PCI device dict format, the
NUMA objects): keep them pinned to the nova version in requirements.txt.
"""

from nova import objects
import nova.conf
from nova.virt import fake
import nova.virt.node
from oslo_serialization import jsonutils

from cloud import hosts
from cloud.hosts import node_uuid

CONF = nova.conf.CONF


class _Base(fake.FakeDriver):
    """A single-node fake driver with a stable node identity."""

    vcpus = hosts.HOST_VCPUS
    memory_mb = hosts.HOST_MEMORY_MB
    local_gb = 3500
    # host NUMA cells the driver reports (0: no NUMA topology, as a driver
    # that reports none; PassthroughDriver reports 2)
    NUMA_NODES = 0

    def __init__(self, virtapi, read_only=False):
        super().__init__(virtapi, read_only=read_only)
        # libvirt writes $state_path/compute_id on first start; the fake
        # driver does not, and a restart of nova-compute then refuses to
        # start ("No local node identity found").
        if nova.virt.node.read_local_node_uuid() is None:
            nova.virt.node.write_local_node_uuid(
                node_uuid(self.nodename(CONF.host)))

    @staticmethod
    def nodename(host):
        return host

    def init_host(self, host):
        self._host = host
        self._set_nodes([self.nodename(host)])

    def get_nodenames_by_uuid(self, refresh=False):
        return {node_uuid(n): n for n in self.get_available_nodes()}

    def get_available_resource(self, nodename):
        res = super().get_available_resource(nodename)
        if res:
            res['uuid'] = node_uuid(nodename)
            res['cpu_info'] = self._cpu_info(res['cpu_info'])
        return res

    def _cpu_info(self, text):
        """The fake driver's cpu_info with ``topology.cells`` as the
        libvirt driver writes it (``_get_cpu_info``): the number of host
        NUMA cells, 1 when libvirt shows no NUMA topology (the count
        libvirt reports even when Nova gets no topology)."""
        info = jsonutils.loads(text)
        info['topology']['cells'] = max(self.NUMA_NODES, 1)
        return jsonutils.dumps(info)

    def get_host_uptime(self):
        # libvirt answers with `uptime`; the fake driver raises
        # NotImplementedError (an ERROR trace per "hypervisor show").
        return ' 00:00:00 up 1 day,  0:00,  0 users,  load average: 0.00'


class PlainDriver(_Base):
    """A compute host without GPUs."""


class PassthroughDriver(_Base):
    """Whole GPUs for PCI passthrough, half on each of 2 NUMA nodes."""

    DOMAIN = hosts.PT_DOMAIN
    VENDOR_ID = '10de'
    PRODUCT_ID = '2331'
    # (PCI address, NUMA node)
    GPUS = (('0000:41:00.0', 0), ('0000:42:00.0', 0),
            ('0000:c1:00.0', 1), ('0000:c2:00.0', 1))
    NUMA_NODES = hosts.PT_NUMA_CELLS

    @classmethod
    def nodename(cls, host):
        # libvirt reports the FQDN: the root provider and the hypervisor
        # are named gpu-pt-1.gpu.test while the service host is gpu-pt-1.
        return '%s.%s' % (host, cls.DOMAIN)

    def _numa_topology(self):
        per_cpus = self.vcpus // self.NUMA_NODES
        per_mem = self.memory_mb // self.NUMA_NODES
        cells = []
        for cell in range(self.NUMA_NODES):
            cpus = set(range(cell * per_cpus, (cell + 1) * per_cpus))
            cells.append(objects.NUMACell(
                id=cell, socket=cell, cpuset=cpus, pcpuset=set(),
                memory=per_mem, cpu_usage=0, memory_usage=0,
                pinned_cpus=set(), siblings=[{c} for c in sorted(cpus)],
                mempages=[objects.NUMAPagesTopology(
                    size_kb=4, total=per_mem * 256, used=0, reserved=0)],
                network_metadata=objects.NetworkMetadata(
                    physnets=set(), tunneled=False)))
        return objects.NUMATopology(cells=cells)

    def get_available_resource(self, nodename):
        res = super().get_available_resource(nodename)
        if not res:
            return res
        res['numa_topology'] = self._numa_topology()._to_json()
        res['pci_passthrough_devices'] = jsonutils.dumps([
            {
                'address': address,
                'vendor_id': self.VENDOR_ID,
                'product_id': self.PRODUCT_ID,
                'dev_type': 'type-PCI',
                'parent_addr': None,
                'numa_node': numa_node,
                'label': 'label_%s_%s' % (self.VENDOR_ID, self.PRODUCT_ID),
            } for address, numa_node in self.GPUS])
        return res


class OneTimeUseDriver(PassthroughDriver):
    """One whole GPU (10de:2335) for one-time-use passthrough."""

    PRODUCT_ID = '2335'
    GPUS = (('0000:41:00.0', 0),)


class VfDriver(_Base):
    """VF-backed vGPU: a PF and its VFs, as PCI devices (type-PF/VF)."""

    def get_available_resource(self, nodename):
        res = super().get_available_resource(nodename)
        if not res:
            return res

        def dev(address, dev_type, parent):
            return {'address': address, 'vendor_id': hosts.VF_VENDOR_ID,
                    'product_id': hosts.VF_PRODUCT_ID, 'dev_type': dev_type,
                    'parent_addr': parent, 'numa_node': 0,
                    'label': 'label_%s_%s' % (hosts.VF_VENDOR_ID,
                                              hosts.VF_PRODUCT_ID)}
        res['pci_passthrough_devices'] = jsonutils.dumps(
            [dev(hosts.VF_PF, 'type-PF', None)]
            + [dev(vf, 'type-VF', hosts.VF_PF) for vf in hosts.VFS])
        return res


class VgpuDriver(_Base):
    """pGPUs offering mediated devices: one VGPU child provider each."""

    # PCI addresses of the devices offering vGPUs when nova.conf lists
    # none, vGPUs per device
    DEVICES = ('0000:84:00.0', '0000:85:00.0')
    VGPUS_PER_DEVICE = 4

    @classmethod
    def devices(cls, conf=CONF):
        """The pGPU addresses: every ``device_addresses`` of the enabled
        mdev types, in order, else DEVICES."""
        return tuple(cls.device_classes(conf)) or cls.DEVICES

    @classmethod
    def device_classes(cls, conf=CONF):
        """{pGPU address: resource class} of the enabled mdev types: each
        ``[mdev_<type>] device_addresses`` offers the type's
        ``mdev_class`` (``VGPU`` unless set), as libvirt reads them (the
        first type listing an address wins); {} when no type lists one."""
        types = list(conf.devices.enabled_mdev_types or ())
        if not types:
            return {}
        # the [mdev_<type>] groups, as the libvirt driver registers them
        nova.conf.devices.register_dynamic_opts(conf)
        found = {}
        for mdev_type in types:
            group = conf['mdev_%s' % mdev_type]
            for address in group.device_addresses:
                found.setdefault(address, group.mdev_class or 'VGPU')
        return found

    def update_provider_tree(self, provider_tree, nodename,
                             allocations=None):
        super().update_provider_tree(provider_tree, nodename,
                                     allocations=allocations)
        classes = self.device_classes()
        wanted = {}
        for address in self.devices():
            # the libvirt driver's naming: <nodename>_pci_0000_84_00_0
            name = '%s_pci_%s' % (
                nodename, address.replace(':', '_').replace('.', '_'))
            wanted[name] = classes.get(address, 'VGPU')
        # pGPUs nova.conf no longer lists go, as libvirt's do (a re-cut
        # card: the VFs left out of every [mdev_<type>])
        root = provider_tree.data(nodename)
        for child in list(provider_tree.get_provider_uuids(root.uuid)):
            data = provider_tree.data(child)
            if data.uuid != root.uuid and data.name not in wanted:
                provider_tree.remove(data.uuid)
        for name, rc in wanted.items():
            if not provider_tree.exists(name):
                provider_tree.new_child(name, nodename)
            total = self.VGPUS_PER_DEVICE
            # replaces the inventory: a VF whose type changed class
            # reports the new class only
            provider_tree.update_inventory(name, {rc: {
                'total': total, 'reserved': 0, 'min_unit': 1,
                'max_unit': total, 'step_size': 1,
                'allocation_ratio': 1.0}})
            # No update_traits(): like libvirt, traits on pGPU providers
            # belong to the operator (gpuclient tags the vGPU type there).


class MigDriver(VgpuDriver):
    """MIG-backed vGPU on an SR-IOV card: one vGPU per VF provider."""

    DEVICES = tuple('0000:41:%02x.%d' % divmod(fn, 8)
                    for fn in range(4, 11))
    VGPUS_PER_DEVICE = 1
