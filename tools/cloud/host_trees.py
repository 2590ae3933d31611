#!/usr/bin/env python3
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

"""Fake GPU host trees for gpuclient-host-facts (stdlib only).

A real GPU host holds what the collector reads in sysfs, procfs, dpkg's
status file and ``nvidia-smi``; the fake hosts of the test cloud have
none of it. ``write_tree(root, kind)`` writes, under ROOT, the small tree
the kernel and the packages would show for one host of KIND, prepared as
the seeds' recipe prepares it, and ``faults`` breaks it the ways the
issue lists (``FAULTS``). The collector runs on it with ``--root ROOT``.

Kinds (the PCI addresses are the test cloud's fake drivers'):

``passthrough``
   ``GPUS[kind]`` H100 PCIe cards (10de:2331) with an HD audio function
   (10de:22ba) each, both in the card's IOMMU group and bound to
   vfio-pci; intel_iommu=on iommu=pt; no NVIDIA driver, no nvidia-smi.
``vgpu``
   Time-sliced vGPU on mediated devices: cards bound to nvidia offering
   ``nvidia-35``, one mediated device made on the first card; mdevctl and
   nvidia-smi installed (no MIG).
``vgpu-vf``
   NVIDIA's SR-IOV vGPU: one L40S (10de:26b9) with 8 VFs, the first two
   typed L40S-24Q in ``nvidia/current_vgpu_type`` (type ids listed in
   each VF's ``nvidia/creatable_vgpu_types``).
``mig``
   MIG-backed vGPU: one A100 80GB (10de:20b5), MIG on, seven 1g.10gb GPU
   instances, 7 VFs each offering ``nvidia-901``, one mediated device
   made on the first VF; mdevctl installed.

Every tree also has a network card (8086:1592 on ``ice``) the collector
must leave out, the host's name and kernel, dpkg's status file with
libvirt, QEMU and nova-compute (``VERSIONS``), and for the kinds with
nvidia-smi the files that stand for its output
(``run/gpuclient/nvidia-smi/query-gpu.txt`` and ``mig-lgi.txt``, the
collector's test seam). Links are relative, as the kernel's are, so the
tree can be moved.

    python3 tools/cloud/host_trees.py ROOT KIND [--fault F ...]
        [--hostname NAME]
"""

import argparse
import os
import sys
import uuid

KINDS = ('passthrough', 'vgpu', 'vgpu-vf', 'mig')

# the PCI addresses of each kind's cards (tools/cloud/fakevirt.py's)
GPUS = {
    'passthrough': ('0000:41:00.0', '0000:42:00.0', '0000:c1:00.0',
                    '0000:c2:00.0'),
    'vgpu': ('0000:84:00.0', '0000:85:00.0'),
    'vgpu-vf': ('0000:a1:00.0',),
    'mig': ('0000:41:00.0',),
}
DEVICE_IDS = {'passthrough': '2331', 'vgpu': '1eb8', 'vgpu-vf': '26b9',
              'mig': '20b5'}
AUDIO_ID = '22ba'
NIC = '0000:01:00.0'
# VFs per card, from function 4 on (as hosts.VFS and hosts.RECUT_VFS)
VF_COUNT = {'vgpu-vf': 8, 'mig': 7}

DRIVER = '550.90.05'
OLD_DRIVER = '550.54.16'
KERNEL = '6.8.0-45-generic'
VERSIONS = {
    'libvirt-daemon': '10.0.0-2ubuntu8',
    'libvirt0': '10.0.0-2ubuntu8',
    'qemu-system-x86': '1:8.2.2+ds-0ubuntu1',
    'nova-compute': '3:29.0.0-0ubuntu1',
    'python3-nova': '3:29.0.0-0ubuntu1',
}

# vgpu: the type the cards offer, and how many of it fit one card
MDEV_TYPE = ('nvidia-35', 'GRID T4-2Q', 8)
# mig: the type each VF offers (one instance: the VF's GPU instance)
MIG_MDEV_TYPE = ('nvidia-901', 'NVIDIA A100D-1-10C', 1)
MIG_PROFILE = ('1g.10gb', 19)
# vgpu-vf: the creatable types of an L40S and the one written into VFS_TYPED
VGPU_TYPES = ((1155, 'L40S-1Q'), (1158, 'L40S-4Q'), (1160, 'L40S-12Q'),
              (1161, 'L40S-24Q'), (1162, 'L40S-48Q'))
VGPU_TYPE_ID = 1161
VFS_TYPED = 2

FAULTS = {
    'gpu-on-nvidia': (('passthrough',), 'the first GPU is bound to nvidia '
                      '(the module loaded), not vfio-pci'),
    'audio-on-snd-hda-intel': (('passthrough',), "the first card's audio "
                               'function, in its IOMMU group, is bound to '
                               'snd_hda_intel'),
    'vfs-lost': (('vgpu-vf', 'mig'), 'sriov_numvfs is 0 (a reboot): no '
                 'VFs, so no vGPU types or mediated devices on them'),
    'mig-pending': (('mig',), 'MIG enabled but pending a GPU reset '
                    '(current Disabled, pending Enabled): no GPU '
                    'instances'),
    'driver-drift': (('vgpu', 'vgpu-vf', 'mig'), 'the NVIDIA driver is '
                     'OLD_DRIVER, not DRIVER'),
    'iommu-off': (KINDS, 'no IOMMU option on the command line, '
                  '/sys/class/iommu empty, no IOMMU groups'),
    'mdevctl-missing': (('vgpu', 'mig'), 'mdevctl is not installed'),
    # bad input: what the collector must report unreadable
    'garbage-vgpu-type': (('vgpu-vf',), "bytes that are no number in the "
                          "first VF's nvidia/current_vgpu_type"),
    'missing-numa-node': (KINDS, 'the first GPU has no numa_node'),
    'dangling-driver': (KINDS, "the first GPU's driver link points to no "
                        'driver'),
    'unreadable-cmdline': (KINDS, '/proc/cmdline is a directory'),
}


def vfs(pf, count):
    """COUNT VF addresses of PF, from function 4 on (0000:a1:00.4 ...)."""
    domain, bus, _rest = pf.split(':')
    return tuple('%s:%s:%02x.%d' % ((domain, bus) + divmod(fn, 8))
                 for fn in range(4, 4 + count))


def numa_node(address):
    """Cards on buses below 0x80 on node 0, the others on node 1."""
    return 0 if int(address.split(':')[1], 16) < 0x80 else 1


class _Tree:
    """What a tree holds, written by write()."""

    def __init__(self):
        self.files = {}       # path: text or bytes
        self.links = {}       # path: relative target
        self.dirs = set()
        self.executables = set()
        self.groups = 0

    def file(self, path, text):
        self.files[path] = text

    def link(self, path, target):
        self.links[path] = target

    def write(self, root):
        for path in sorted(self.dirs):
            os.makedirs(os.path.join(root, path), exist_ok=True)
        for path, text in sorted(self.files.items()):
            full = os.path.join(root, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, 'wb' if isinstance(text, bytes) else 'w') as f:
                f.write(text)
            if path in self.executables:
                os.chmod(full, 0o755)
        for path, target in sorted(self.links.items()):
            full = os.path.join(root, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            os.symlink(target, full)


def _device_dir(address):
    return 'sys/devices/pci0000:00/' + address


def _function(tree, address, ids, driver, iommu, group=None):
    """One PCI function: ids (vendor, device, class), its driver ('' for
    none) and, IOMMU on, its group (a new one unless GROUP)."""
    base = _device_dir(address)
    vendor, device, pci_class = ids
    tree.file(base + '/vendor', '0x%s\n' % vendor)
    tree.file(base + '/device', '0x%s\n' % device)
    tree.file(base + '/class', '0x%s\n' % pci_class)
    tree.file(base + '/numa_node', '%d\n' % numa_node(address))
    tree.link('sys/bus/pci/devices/' + address,
              '../../../devices/pci0000:00/' + address)
    if driver:
        tree.dirs.add('sys/bus/pci/drivers/' + driver)
        tree.link(base + '/driver', '../../../bus/pci/drivers/' + driver)
    if not iommu:
        return None
    if group is None:
        group = tree.groups
        tree.groups += 1
    folder = 'sys/kernel/iommu_groups/%d' % group
    tree.dirs.add(folder + '/devices')
    tree.link(base + '/iommu_group', '../../../kernel/iommu_groups/%d'
              % group)
    tree.link('%s/devices/%s' % (folder, address),
              '../../../../devices/pci0000:00/' + address)
    return group


def _mdev_types(tree, address, types, made=0):
    """The mdev types a function offers ((type, name, instances)), and
    MADE mediated devices of the first one on it."""
    base = _device_dir(address)
    for index, (name, label, instances) in enumerate(types):
        folder = '%s/mdev_supported_types/%s' % (base, name)
        tree.file(folder + '/name', label + '\n')
        tree.file(folder + '/device_api', 'vfio-pci\n')
        tree.file(folder + '/available_instances', '%d\n' % (
            instances - (made if index == 0 else 0)))
        tree.dirs.add(folder + '/devices')
    for number in range(made):
        mdev = str(uuid.uuid5(uuid.NAMESPACE_OID, '%s/%d' % (address,
                                                            number)))
        tree.link('%s/%s/mdev_type' % (base, mdev),
                  '../mdev_supported_types/' + types[0][0])
        tree.link('sys/bus/mdev/devices/' + mdev,
                  '../../../devices/pci0000:00/%s/%s' % (address, mdev))


def _sriov(tree, pf, ids, addresses, total, iommu, nvidia_dir):
    """PF's SR-IOV files and its VFs (ADDRESSES enabled of TOTAL)."""
    base = _device_dir(pf)
    tree.file(base + '/sriov_totalvfs', '%d\n' % total)
    tree.file(base + '/sriov_numvfs', '%d\n' % len(addresses))
    for index, vf in enumerate(addresses):
        tree.link('%s/virtfn%d' % (base, index), '../' + vf)
        _function(tree, vf, ids, 'nvidia', iommu)
        tree.link(_device_dir(vf) + '/physfn', '../' + pf)
        if nvidia_dir:
            creatable = ''.join('%-5d : NVIDIA %s\n' % t for t in VGPU_TYPES)
            tree.file(_device_dir(vf) + '/nvidia/creatable_vgpu_types',
                      'ID    : vGPU Name\n' + creatable)
            tree.file(_device_dir(vf) + '/nvidia/current_vgpu_type',
                      '%d\n' % (VGPU_TYPE_ID if index < VFS_TYPED else 0))


def _dpkg_status(versions):
    stanzas = ['Package: adduser\nStatus: install ok installed\n'
               'Architecture: all\nVersion: 3.137ubuntu1\n',
               # removed, its configuration left: not installed
               'Package: qemu-kvm\nStatus: deinstall ok config-files\n'
               'Architecture: amd64\nVersion: 1:6.2+dfsg-2ubuntu6\n']
    for package, version in sorted(versions.items()):
        stanzas.append('Package: %s\nStatus: install ok installed\n'
                       'Priority: optional\nArchitecture: amd64\n'
                       'Version: %s\nDescription: %s\n the package\n'
                       % (package, version, package))
    return '\n'.join(stanzas)


def _smi_query(kind, gpus, faults):
    rows = []
    for index, address in enumerate(gpus):
        bus = '0000%s' % address.upper()
        if kind != 'mig':
            modes = ('[N/A]', '[N/A]')
        elif 'mig-pending' in faults:
            modes = ('Disabled', 'Enabled')
        else:
            modes = ('Enabled', 'Enabled')
        rows.append('%d, %s, %s, %s\n' % ((index, bus) + modes))
    return ''.join(rows)


def _smi_instances(kind, gpus, faults):
    if kind != 'mig' or 'mig-pending' in faults:
        return 'No MIG-enabled devices found.\n'
    rule = '+' + '-' * 55 + '+\n'
    lines = [rule, '| GPU instances:%s|\n' % (' ' * 40),
             '| GPU   Name             Profile  Instance   Placement  |\n',
             '|                          ID       ID       Start:Size |\n',
             '|' + '=' * 55 + '|\n']
    profile, profile_id = MIG_PROFILE
    for index, _address in enumerate(gpus):
        for slot in range(7):
            lines.append('| %3d  MIG %-12s %5d %8d %10d:1     |\n'
                         % (index, profile, profile_id, 7 + slot, slot))
            lines.append(rule)
    return ''.join(lines)


def _check(kind, faults):
    if kind not in KINDS:
        raise ValueError('unknown kind %r: one of %s' % (kind,
                                                        ', '.join(KINDS)))
    for fault in faults:
        if fault not in FAULTS:
            raise ValueError('unknown fault %r: one of %s'
                             % (fault, ', '.join(sorted(FAULTS))))
        if kind not in FAULTS[fault][0]:
            raise ValueError('fault %r is not one of a %s host'
                             % (fault, kind))


def _host(tree, kind, hostname, faults, versions):
    iommu = 'iommu-off' not in faults
    cmdline = ('BOOT_IMAGE=/vmlinuz-%s root=/dev/mapper/vg-root ro quiet'
               % KERNEL)
    if iommu:
        cmdline += ' intel_iommu=on iommu=pt'
    if 'unreadable-cmdline' in faults:
        tree.dirs.add('proc/cmdline')
    else:
        tree.file('proc/cmdline', cmdline + '\n')
    tree.file('proc/sys/kernel/hostname', hostname + '\n')
    tree.file('proc/sys/kernel/osrelease', KERNEL + '\n')
    tree.dirs.add('sys/class/iommu')
    tree.dirs.add('sys/kernel/iommu_groups')
    if iommu:
        tree.dirs.add('sys/devices/virtual/iommu/dmar0')
        tree.link('sys/class/iommu/dmar0',
                  '../../devices/virtual/iommu/dmar0')
    tree.file('var/lib/dpkg/status', _dpkg_status(versions))
    _function(tree, NIC, ('8086', '1592', '020000'), 'ice', iommu)
    nvidia_loaded = kind != 'passthrough' or 'gpu-on-nvidia' in faults
    if nvidia_loaded:
        driver = OLD_DRIVER if 'driver-drift' in faults else DRIVER
        tree.file('sys/module/nvidia/version', driver + '\n')
        tree.file('proc/driver/nvidia/version',
                  'NVRM version: NVIDIA UNIX x86_64 Kernel Module  %s  '
                  'Tue Jun  4 22:13:10 UTC 2024\nGCC version:  gcc '
                  'version 13.2.0 (Ubuntu 13.2.0-23ubuntu4)\n' % driver)
    tools = []
    if kind != 'passthrough':
        tools.append('usr/bin/nvidia-smi')
    if kind in ('vgpu', 'mig') and 'mdevctl-missing' not in faults:
        tools.append('usr/sbin/mdevctl')
    for path in tools:
        tree.file(path, '#!/bin/false\n')
        tree.executables.add(path)
    return iommu


def _cards(tree, kind, gpus, faults, iommu):
    ids = ('10de', DEVICE_IDS[kind], '030200')
    for index, address in enumerate(gpus):
        first = index == 0
        driver = 'vfio-pci' if kind == 'passthrough' else 'nvidia'
        if first and 'gpu-on-nvidia' in faults:
            driver = 'nvidia'
        group = _function(tree, address, ids, driver, iommu)
        if kind == 'passthrough':
            audio = address[:-1] + '1'
            _function(tree, audio, ('10de', AUDIO_ID, '040300'),
                      'snd_hda_intel' if first and (
                          'audio-on-snd-hda-intel' in faults)
                      else 'vfio-pci', iommu, group)
        elif kind == 'vgpu':
            _mdev_types(tree, address, (MDEV_TYPE,), 1 if first else 0)
        else:
            addresses = () if 'vfs-lost' in faults else vfs(
                address, VF_COUNT[kind])
            _sriov(tree, address, ids, addresses, VF_COUNT[kind], iommu,
                   kind == 'vgpu-vf')
            for number, vf in enumerate(addresses):
                if kind == 'mig':
                    _mdev_types(tree, vf, (MIG_MDEV_TYPE,),
                                1 if first and number == 0 else 0)


def _break(tree, kind, gpus, faults):
    first = _device_dir(gpus[0])
    if 'missing-numa-node' in faults:
        del tree.files[first + '/numa_node']
    if 'dangling-driver' in faults:
        tree.link(first + '/driver', '../../../bus/pci/drivers/gone')
    if 'garbage-vgpu-type' in faults:
        vf = vfs(gpus[0], VF_COUNT[kind])[0]
        tree.file(_device_dir(vf) + '/nvidia/current_vgpu_type',
                  b'\xff\xfeL40S\x00\n')


def write_tree(root, kind, gpus=None, faults=(), hostname=None,
               versions=None):
    """Write the tree of one KIND of host under ROOT (absent or empty)
    with FAULTS; GPUS: its cards' addresses (default GPUS[kind]), HOSTNAME its
    name (default 'gpu-<kind>'), VERSIONS {dpkg package: version} to
    replace VERSIONS' (None: not installed). Returns ROOT."""
    faults = tuple(faults)
    _check(kind, faults)
    gpus = tuple(gpus or GPUS[kind])
    installed = dict(VERSIONS)
    installed.update(versions or {})
    installed = {k: v for k, v in installed.items() if v is not None}
    tree = _Tree()
    iommu = _host(tree, kind, hostname or 'gpu-' + kind, faults, installed)
    _cards(tree, kind, gpus, faults, iommu)
    if kind != 'passthrough':
        seam = 'run/gpuclient/nvidia-smi/'
        tree.file(seam + 'query-gpu.txt', _smi_query(kind, gpus, faults))
        tree.file(seam + 'mig-lgi.txt', _smi_instances(kind, gpus, faults))
    _break(tree, kind, gpus, faults)
    if os.path.lexists(root) and os.listdir(root):
        raise ValueError('%s is not empty' % root)
    os.makedirs(root, exist_ok=True)
    tree.write(root)
    return root


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('root', help='the directory to write (absent or '
                        'empty)')
    parser.add_argument('kind', choices=KINDS)
    parser.add_argument('--fault', action='append', default=[],
                        choices=sorted(FAULTS))
    parser.add_argument('--hostname')
    args = parser.parse_args(argv)
    try:
        write_tree(args.root, args.kind, faults=args.fault,
                   hostname=args.hostname)
    except (OSError, ValueError) as exc:
        print('host_trees: %s' % exc, file=sys.stderr)
        return 1
    print(args.root)
    return 0


if __name__ == '__main__':
    sys.exit(main())
