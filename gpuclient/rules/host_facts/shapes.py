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

"""Pure: the facts of one GPU host, as declared shapes.

``HostFacts`` is what one run of the collector read on one host (or what
Prometheus holds of it): host-wide facts, then one ``Function`` per PCI
function it looked at (every NVIDIA function, VFs included, and every
other member of their IOMMU groups), by address in sysfs' form
(``0000:41:00.0``).

A field is None when it was not read: either it does not apply (no MIG
mode on a card that has none, no VF fields on a PF) or it could not be
read, and then ``HostFacts.unreadable`` names it (``Unreadable``: one of
``FACTS``, with the function's address for a function's fact). A reader
judges a fact only when it is there and not unreadable: a fact the
collector could not read is never a value.
"""

from __future__ import annotations

import dataclasses

NVIDIA_VENDOR_ID = '10de'
# the collector's name (its console script), as a verdict names its facts
COLLECTOR = 'gpuclient-host-facts'

# the software whose versions the collector reads (gpuclient_host_version_
# info's component label)
KERNEL = 'kernel'
NVIDIA_DRIVER = 'nvidia_driver'
LIBVIRT = 'libvirt'
QEMU = 'qemu'
NOVA_COMPUTE = 'nova_compute'
COMPONENTS = (KERNEL, NVIDIA_DRIVER, LIBVIRT, QEMU, NOVA_COMPUTE)

# what could not be read, the fact label of gpuclient_host_fact_unreadable;
# the host's own facts, then a PCI function's (with its pci_bus_id)
HOST_FACTS = {
    'hostname': 'the host name (/proc/sys/kernel/hostname): give '
                '--hostname',
    'kernel_cmdline': 'the kernel command line (/proc/cmdline)',
    'iommu': 'whether an IOMMU is active (/sys/class/iommu)',
    'pci_devices': 'the PCI functions (/sys/bus/pci/devices)',
    'mdev_devices': 'the mediated devices created (/sys/bus/mdev/devices)',
    'mig_mode': "the MIG modes (nvidia-smi's query failed or said what "
                'is not understood)',
    'mig_layout': "the GPU instances (nvidia-smi mig -lgi failed or said "
                  'what is not understood)',
    'kernel_version': "the kernel's release (/proc/sys/kernel/osrelease)",
    'nvidia_driver_version': "the NVIDIA driver's version "
                             '(/sys/module/nvidia/version, '
                             '/proc/driver/nvidia/version)',
    'libvirt_version': "libvirt's version (no package, library or "
                       'capabilities cache names one)',
    'qemu_version': "QEMU's version (no package or libvirt capabilities "
                    'cache names one)',
    'nova_compute_version': "nova-compute's version (no package or "
                            'Python distribution names one)',
}
FUNCTION_FACTS = {
    'pci_ids': 'its vendor, device or class',
    'driver': 'the driver bound to it',
    'iommu_group': 'its IOMMU group',
    'iommu_group_members': 'a member of its IOMMU group',
    'numa_node': 'its NUMA node',
    'sriov': 'its SR-IOV VF counts (sriov_numvfs, sriov_totalvfs)',
    'vfs': 'one of its VFs (a virtfn link)',
    'vgpu_type': "a VF's vGPU type (nvidia/current_vgpu_type)",
    'vgpu_type_name': "the name of a VF's vGPU type (no "
                      'creatable_vgpu_types of its card lists it)',
    'mdev_types': 'the mdev types it offers (mdev_supported_types)',
    'mig_mode': "its MIG mode (bound to nvidia, but nvidia-smi's query "
                'does not list it)',
    'mig_layout': 'its GPU instances (MIG is on, but nvidia-smi mig -lgi '
                  'could not be read)',
}
FACTS = tuple(HOST_FACTS) + tuple(f for f in FUNCTION_FACTS
                                  if f not in HOST_FACTS)


def version_fact(component: str) -> str:
    """The fact naming COMPONENT's version: 'libvirt' -> 'libvirt_version'."""
    return component + '_version'


@dataclasses.dataclass(frozen=True, order=True)
class Unreadable:
    """A fact the collector could not read: one of FACTS, and the PCI
    function's address for a function's fact ('' for the host's)."""

    fact: str
    address: str = ''


@dataclasses.dataclass(frozen=True)
class Version:
    """One component's version: ``version`` the upstream release
    (``8.2.2``), ``package_version`` as the package database writes it
    (``1:8.2.2+ds-0ubuntu1``; '' when no package said it), ``source``
    where it was read (``dpkg``, ``library``, ``libvirt-cache``,
    ``python``, ``module``, ``procfs``)."""

    version: str
    package_version: str = ''
    source: str = ''


@dataclasses.dataclass(frozen=True)
class MdevType:
    """An mdev type of one PCI function: its ``name`` (``GRID T4-2Q``), how
    many more it can create (``available_instances``) and how many exist
    (``created``); None for what was not read."""

    name: str = ''
    available_instances: int | None = None
    created: int | None = None


@dataclasses.dataclass(frozen=True, order=True)
class GpuInstance:
    """A MIG GPU instance, as ``nvidia-smi mig -lgi`` lists it: its ID
    (DCGM's ``GPU_I_ID``), profile name (``1g.10gb``, DCGM's
    ``GPU_I_PROFILE``), profile ID, and placement (first slice, slices)."""

    instance_id: int
    profile: str
    profile_id: int
    start: int
    size: int


@dataclasses.dataclass
class Function:
    """One PCI function, by ``address`` (``0000:41:00.0``).

    ``vendor_id``/``device_id`` as Nova writes them (``10de``, ``2331``),
    ``pci_class`` six hex digits (``030200``); ``driver`` '' when none is
    bound; ``iommu_group`` '' when it is in none (IOMMU off); ``numa_node``
    -1 when the kernel knows none. SR-IOV: a PF's ``sriov_numvfs`` and
    ``sriov_totalvfs``; a VF's ``physfn`` (its PF's address) and, on
    NVIDIA's SR-IOV vGPU, ``vgpu_type_id`` (0: none written) with its
    ``vgpu_type`` name (``L40S-24Q``). ``mdev_types``: {type: MdevType}
    it offers or holds. MIG (a GPU bound to ``nvidia``): ``mig_current``
    and ``mig_pending`` (True enabled), ``gpu_instances`` when MIG is on.
    """

    address: str
    vendor_id: str | None = None
    device_id: str | None = None
    pci_class: str | None = None
    driver: str | None = None
    iommu_group: str | None = None
    numa_node: int | None = None
    physfn: str | None = None
    sriov_numvfs: int | None = None
    sriov_totalvfs: int | None = None
    vgpu_type_id: int | None = None
    vgpu_type: str | None = None
    mdev_types: dict[str, MdevType] = dataclasses.field(
        default_factory=dict)
    mig_current: bool | None = None
    mig_pending: bool | None = None
    gpu_instances: list[GpuInstance] | None = None

    @property
    def is_nvidia(self) -> bool:
        return self.vendor_id == NVIDIA_VENDOR_ID

    @property
    def is_gpu(self) -> bool:
        """A display controller (class 03xxxx): a GPU, not its audio or
        USB function."""
        return bool(self.pci_class) and str(self.pci_class).startswith('03')


@dataclasses.dataclass
class HostFacts:
    """What one host's collector read (see the module's docstring).

    ``iommu_cmdline``: the IOMMU options of the kernel command line
    ({'intel_iommu': 'on', 'iommu': 'pt'}; {} none). ``iommu_active``:
    an IOMMU is on (``/sys/class/iommu`` lists one). ``mdevctl`` and
    ``nvidia_smi``: the tools are installed. ``versions``: {component:
    Version} of COMPONENTS that were found. ``exporters``: read back from
    Prometheus, the ``instance`` labels of its series: more than one
    means two collectors say they are this host, and nothing of it can be
    judged (``conflicting``)."""

    hostname: str
    collected_at: float | None = None
    iommu_cmdline: dict[str, str] | None = None
    iommu_active: bool | None = None
    mdevctl: bool | None = None
    nvidia_smi: bool | None = None
    versions: dict[str, Version] = dataclasses.field(default_factory=dict)
    functions: dict[str, Function] = dataclasses.field(default_factory=dict)
    unreadable: set[Unreadable] = dataclasses.field(default_factory=set)
    exporters: set[str] = dataclasses.field(default_factory=set)

    def function(self, address: str) -> Function:
        """The Function at ADDRESS, added when it is new."""
        found = self.functions.get(address)
        if found is None:
            found = self.functions[address] = Function(address)
        return found

    def note(self, fact: str, address: str = '') -> None:
        """Say that FACT (of the function at ADDRESS) could not be read."""
        if fact not in HOST_FACTS and fact not in FUNCTION_FACTS:
            raise ValueError('unknown host fact %r' % fact)
        self.unreadable.add(Unreadable(fact, address))

    def is_unreadable(self, fact: str, address: str = '') -> bool:
        """FACT of the host (or of the function at ADDRESS) could not be
        read; a function's fact is unreadable too when the host's fact of
        the same name is."""
        return (Unreadable(fact, address) in self.unreadable
                or Unreadable(fact) in self.unreadable)

    @property
    def conflicting(self) -> bool:
        return len(self.exporters) > 1

    def nvidia_functions(self) -> list[Function]:
        """The NVIDIA functions, by address."""
        return [f for _, f in sorted(self.functions.items()) if f.is_nvidia]
