"""The test cloud's compute hosts (standard library only).

Shared by tools/testcloud (configuration, readiness) and the fake virt
drivers (cloud.fakevirt), so both agree on names and UUIDs.
"""

import collections
import uuid

# SPARE: a second host of its kind, whose compute service tools/testcloud
# disables (SPARE_REASON) once it is up, so that nothing lands there by
# chance: a test that needs it (gpu host drain's destinations) enables it
# and disables it again
Host = collections.namedtuple(
    'Host', 'name kind driver nodename gpu_class children extra_conf spare',
    defaults=(False,))
SPARE_REASON = 'testcloud: spare host, enable it to use it'

PT_DOMAIN = 'gpu.test'
BM_RESOURCE_CLASS = 'CUSTOM_BAREMETAL_GPU_H100'
# the driver of a host served by Nova's ironic driver (started by
# cloud.ironic, not cloud.compute)
IRONIC = 'ironic.IronicDriver'
PCI_RESOURCE_CLASS = 'CUSTOM_PCI_10DE_2331'

# every fake host's CPUs and memory (cloud.fakevirt), and the NUMA cells
# the passthrough hosts' driver reports (others report no NUMA topology)
HOST_VCPUS = 64
HOST_MEMORY_MB = 512 * 1024
PT_NUMA_CELLS = 2


def numa_cells(host):
    """The NUMA cells HOST's fake driver reports (0: no NUMA topology)."""
    return PT_NUMA_CELLS if host.kind == 'passthrough' else 0


def node_uuid(nodename):
    """Deterministic node UUID, stable across nova-compute restarts."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL,
                          'gpuclient-testcloud:' + nodename))


def baremetal_node(host):
    """The bare-metal node's UUID (Ironic names nodes by UUID)."""
    return node_uuid('baremetal-node:' + host)


PT_CONF = ('[pci]\n'
           'device_spec = {"vendor_id": "10de", "product_id": "2331"}\n'
           'report_in_placement = true\n')
# the fake driver reports the pGPUs [mdev_nvidia-35] lists
VGPU_CONF = ('[devices]\n'
             'enabled_mdev_types = nvidia-35\n'
             '[mdev_nvidia-35]\n'
             'device_addresses = 0000:84:00.0,0000:85:00.0\n')


def _passthrough(name, spare=False):
    return Host(name, 'passthrough', 'PassthroughDriver',
                name + '.' + PT_DOMAIN, PCI_RESOURCE_CLASS, 4, PT_CONF,
                spare)


# gpu-otu-1: one whole GPU 10de:2335 marked one-time-use (Nova 2025.2,
# "one_time_use" needs report_in_placement): Nova reserves its provider's
# inventory while a server holds it and leaves it reserved after the
# delete, until the operator releases it (gpu device release); its own
# class and alias (OTU_ALIAS in nova.conf), so no other test's flavor asks
# for it
OTU_RESOURCE_CLASS = 'CUSTOM_PCI_10DE_2335'
OTU_ALIAS = 'h200-otu'
OTU_CONF = ('[pci]\n'
            'device_spec = {"vendor_id": "10de", "product_id": "2335", '
            '"one_time_use": true}\n'
            'report_in_placement = true\n')


# gpu-vf-1: VF-backed vGPU (Nova 2025.1+, NVIDIA's SR-IOV vGPU on
# Ada/Hopper/Blackwell): one L40S card (PF VF_PF, 10de:26b9) with 8 VFs
# (same vendor:product as the PF, as NVIDIA's are); the operator wrote
# L40S-24Q into the first VF_TYPED of them (two fit a 48 GB card), and
# [pci] device_spec lists exactly those, by address (a vendor:product spec
# would match the PF too), unmanaged (the VFIO variant driver holds them),
# live-migratable, in class VF_RESOURCE_CLASS; Nova groups them under one
# provider per PF.  The alias VF_ALIAS (type-VF, by resource class) is in
# the shared nova.conf.
VF_VENDOR_ID = '10de'
VF_PRODUCT_ID = '26b9'
VF_PF = '0000:a1:00.0'
VFS = tuple('0000:a1:%02x.%d' % divmod(fn, 8) for fn in range(4, 12))
VF_TYPED = VFS[:2]
VF_VGPU_TYPE = 'L40S-24Q'
VF_RESOURCE_CLASS = 'CUSTOM_VGPU_L40S_24Q'
VF_ALIAS = 'l40s-24q'
VF_CONF = ('[pci]\n'
           + ''.join('device_spec = {"vendor_id": "%s", "product_id": "%s", '
                     '"address": "%s", "managed": "no", '
                     '"live_migratable": "yes", "resource_class": "%s"}\n'
                     % (VF_VENDOR_ID, VF_PRODUCT_ID, vf, VF_RESOURCE_CLASS)
                     for vf in VF_TYPED)
           + 'report_in_placement = true\n'
           '[libvirt]\n'
           'live_migration_permit_post_copy = false\n')


def _vgpu(name, spare=False):
    return Host(name, 'vgpu', 'VgpuDriver', name, 'VGPU', 2, VGPU_CONF,
                spare)


# the re-cut host of gpu profile plan's proof: one A100 80GB card (PF
# 0000:61:00.0) with 7 VFs 0000:61:00.4 .. 0000:61:01.2, cut as 4 1g.10gb
# + 1 3g.40gb, each profile's VFs in its own class (per-type
# [mdev_<type>] mdev_class, so a host may carry two MIG pools); the test
# re-cuts it with tools/testcloud restart-compute --nova-conf and puts
# this back at cleanup
RECUT_VFS = tuple('0000:61:%02x.%d' % divmod(fn, 8) for fn in range(4, 11))
RECUT_CLASSES = {'1g.10gb': 'CUSTOM_RECUT_1G10GB',
                 '3g.40gb': 'CUSTOM_RECUT_3G40GB'}
RECUT_TYPES = {'1g.10gb': 'nvidia-901', '3g.40gb': 'nvidia-903'}
RECUT_CONF = ('[devices]\n'
              'enabled_mdev_types = nvidia-901,nvidia-903\n'
              '[mdev_nvidia-901]\n'
              'device_addresses = %s\n'
              'mdev_class = CUSTOM_RECUT_1G10GB\n'
              '[mdev_nvidia-903]\n'
              'device_addresses = %s\n'
              'mdev_class = CUSTOM_RECUT_3G40GB\n'
              % (','.join(RECUT_VFS[:4]), RECUT_VFS[4]))


def _mig(name, spare=False):
    return Host(name, 'mig', 'MigDriver', name, 'VGPU', 7, '', spare)


# the fault matrices' MIG hosts: 2 of the card's VFs, not 7. Pool traits
# go on every GPU provider, so each VF is one more write of a kind the
# matrix already fails at its first and last position (with the other
# VFs before and after it to undo): the five middle ones cost 5 writes
# (25 fault points) in every matrix over these hosts, and test nothing new
FAULT_MIG_VFS = ('0000:41:00.4', '0000:41:00.5')
FAULT_MIG_CONF = ('[devices]\n'
                  'enabled_mdev_types = nvidia-903\n'
                  '[mdev_nvidia-903]\n'
                  'device_addresses = %s\n' % ','.join(FAULT_MIG_VFS))


def _fault_mig(name):
    return Host(name, 'mig', 'MigDriver', name, 'VGPU', len(FAULT_MIG_VFS),
                FAULT_MIG_CONF, True)


HOSTS = (
    _passthrough('gpu-pt-1'),
    _vgpu('gpu-vgpu-1'),
    _mig('gpu-mig-1'),
    # Nova's real ironic driver in front of real Ironic (cloud.ironic,
    # fake-hardware nodes); the nodename is its first node's UUID.
    Host('bm-compute-1', 'baremetal', IRONIC,
         baremetal_node('bm-compute-1'), BM_RESOURCE_CLASS, 0, ''),
    Host('plain-1', 'plain', 'PlainDriver', 'plain-1', 'VCPU', 0, ''),
    # where gpu host drain moves the servers of the first ones (spares:
    # disabled until a test enables them)
    _passthrough('gpu-pt-2', spare=True),
    _vgpu('gpu-vgpu-2', spare=True),
    # the fault matrices' own hosts (tools/run-functional runs them in a
    # second stream, next to the other tests, which never use these:
    # spares, so nothing boots there by chance while an isolated pool of a
    # matrix is on them)
    _vgpu('fault-vgpu-1', spare=True),
    _fault_mig('fault-mig-1'),
    # and a second pair: a matrix in the other stream leases these
    _vgpu('fault-vgpu-2', spare=True),
    _fault_mig('fault-mig-2'),
    # gpu profile plan's re-cut proof (a spare: nothing lands there by
    # chance); its readiness: the 4 VFs of class CUSTOM_RECUT_1G10GB
    Host('recut-mig-1', 'mig', 'MigDriver', 'recut-mig-1',
         'CUSTOM_RECUT_1G10GB', 4, RECUT_CONF, True),
    # one-time-use devices (a spare: a test enables it, boots with the
    # h200-otu alias, releases the device and disables it again)
    Host('gpu-otu-1', 'passthrough', 'OneTimeUseDriver',
         'gpu-otu-1.' + PT_DOMAIN, OTU_RESOURCE_CLASS, 1, OTU_CONF, True),
    # VF-backed vGPU (a spare: the vgpu-vf tests enable it and disable it
    # again); its readiness: the PF's provider with VF_RESOURCE_CLASS
    Host('gpu-vf-1', 'vgpu-vf', 'VfDriver', 'gpu-vf-1', VF_RESOURCE_CLASS,
         1, VF_CONF, True),
    # lane B (gpuclient/tests/functional/base.py LANES): the hosts of the
    # tests that run in the second stream beside the fault matrices, each
    # kind the first ones' twin; spares: a lane-B test leases them and
    # enables the first three for its own run only
    _passthrough('gpu-pt-3', spare=True),
    _passthrough('gpu-pt-4', spare=True),
    _vgpu('gpu-vgpu-3', spare=True),
    _vgpu('gpu-vgpu-4', spare=True),
    Host('plain-2', 'plain', 'PlainDriver', 'plain-2', 'VCPU', 0, '', True),
)

# hosts that run Debian's node_exporter (meminfo_numa only, on a fake
# sysfs tree of their NUMA topology: cloud.node_exporter) -> its port;
# Prometheus scrapes it as instance <nodename>:<port>
NODE_EXPORTER_PORTS = {'gpu-pt-1': 9100, 'plain-1': 9101}
# of those, the hosts whose exporter runs meminfo_numa
NUMA_METRICS_HOSTS = ('gpu-pt-1', 'plain-1')
# the fake GPU hosts that run gpuclient-host-facts (cloud.host_facts: a fake
# tree of their kind, their facts served by their node_exporter's textfile
# collector): every fake GPU host but the fault matrices' (whose pools the
# matrices make and break at every write); their node_exporters' ports,
# from 9110 on, join NODE_EXPORTER_PORTS
HOST_FACTS_HOSTS = tuple(
    h.name for h in HOSTS
    if h.kind in ('passthrough', 'vgpu', 'vgpu-vf', 'mig')
    and not h.name.startswith('fault-'))
NODE_EXPORTER_PORTS.update(
    (name, 9110 + i) for i, name in enumerate(
        n for n in HOST_FACTS_HOSTS if n not in NODE_EXPORTER_PORTS))
