"""The test cloud's compute hosts (standard library only).

Shared by tools/testcloud (configuration, readiness) and the fake virt
drivers (cloud.fakevirt), so both agree on names and UUIDs.
"""

import collections
import uuid

Host = collections.namedtuple(
    'Host', 'name kind driver nodename gpu_class children extra_conf')

PT_DOMAIN = 'gpu.test'
BM_RESOURCE_CLASS = 'CUSTOM_BAREMETAL_GPU_H100'
# the driver of a host served by Nova's ironic driver (started by
# cloud.ironic, not cloud.compute)
IRONIC = 'ironic.IronicDriver'
PCI_RESOURCE_CLASS = 'CUSTOM_PCI_10DE_2331'


def node_uuid(nodename):
    """Deterministic node UUID, stable across nova-compute restarts."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL,
                          'gpuclient-testcloud:' + nodename))


def baremetal_node(host):
    """The bare-metal node's UUID (Ironic names nodes by UUID)."""
    return node_uuid('baremetal-node:' + host)


HOSTS = (
    Host('gpu-pt-1', 'passthrough', 'PassthroughDriver',
         'gpu-pt-1.' + PT_DOMAIN, PCI_RESOURCE_CLASS, 4,
         '[pci]\n'
         'device_spec = {"vendor_id": "10de", "product_id": "2331"}\n'
         'report_in_placement = true\n'),
    # the fake driver reports the pGPUs [mdev_nvidia-35] lists
    Host('gpu-vgpu-1', 'vgpu', 'VgpuDriver', 'gpu-vgpu-1', 'VGPU', 2,
         '[devices]\n'
         'enabled_mdev_types = nvidia-35\n'
         '[mdev_nvidia-35]\n'
         'device_addresses = 0000:84:00.0,0000:85:00.0\n'),
    Host('gpu-mig-1', 'mig', 'MigDriver', 'gpu-mig-1', 'VGPU', 7, ''),
    # Nova's real ironic driver in front of real Ironic (cloud.ironic,
    # fake-hardware nodes); the nodename is its first node's UUID.
    Host('bm-compute-1', 'baremetal', IRONIC,
         baremetal_node('bm-compute-1'), BM_RESOURCE_CLASS, 0, ''),
    Host('plain-1', 'plain', 'PlainDriver', 'plain-1', 'VCPU', 0, ''),
)
