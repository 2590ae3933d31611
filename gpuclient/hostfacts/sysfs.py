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

"""The PCI functions of a host, from sysfs (any user may read them).

Every function of ``/sys/bus/pci/devices`` whose ``vendor`` is NVIDIA's,
VFs included, and every other member of their IOMMU groups
(``/sys/kernel/iommu_groups/<N>/devices``): its ids and class, the driver
bound (the ``driver`` link's name), its IOMMU group (the ``iommu_group``
link's), ``numa_node``; a PF's ``sriov_numvfs``/``sriov_totalvfs`` and
its VFs (``virtfn<N>`` links); a VF's ``physfn`` and, on NVIDIA's SR-IOV
vGPU, ``nvidia/current_vgpu_type`` (named from the card's
``nvidia/creatable_vgpu_types``); the mdev types a function offers
(``mdev_supported_types/<type>/name``, ``available_instances``); the
mediated devices created (``/sys/bus/mdev/devices``: each one's parent is
the function holding it, its ``mdev_type`` link its type).

A missing ``driver`` or ``iommu_group`` link is a fact (no driver, no
group); a missing attribute every PCI function has (``vendor``,
``numa_node``), a link that dangles, or a value that is not what the
kernel writes, is an unreadable fact.
"""

from __future__ import annotations

import os
import re

from gpuclient.hostfacts import files
from gpuclient.rules.host_facts import contents
from gpuclient.rules.host_facts import shapes

PCI_DEVICES = 'sys/bus/pci/devices'
IOMMU_GROUPS = 'sys/kernel/iommu_groups'
MDEV_DEVICES = 'sys/bus/mdev/devices'
_VIRTFN = re.compile(r'^virtfn([0-9]+)$')
_GROUP = re.compile(r'^[0-9]+$')
_ERRORS = (OSError, ValueError)


def _base(address):
    return os.path.join(PCI_DEVICES, address)


def nvidia_addresses(tree: files.Tree, facts: shapes.HostFacts) -> list[str]:
    """The addresses of the NVIDIA functions of /sys/bus/pci/devices."""
    try:
        names = tree.listdir(PCI_DEVICES)
        if names is None:
            raise OSError('no %s' % PCI_DEVICES)
    except _ERRORS:
        facts.note('pci_devices')
        return []
    found = []
    for name in names:
        try:
            address = contents.address(name)
        except ValueError:
            continue  # not a PCI function's name: nothing sysfs holds
        try:
            vendor = contents.hex_id(tree.read(
                os.path.join(PCI_DEVICES, name, 'vendor')))
        except _ERRORS:
            facts.note('pci_ids', address)
            continue
        if vendor == shapes.NVIDIA_VENDOR_ID:
            found.append(address)
    return found


def _read_ids(tree, facts, function):
    base = _base(function.address)
    try:
        function.vendor_id = contents.hex_id(
            tree.read(os.path.join(base, 'vendor')))
        function.device_id = contents.hex_id(
            tree.read(os.path.join(base, 'device')))
        function.pci_class = contents.pci_class(
            tree.read(os.path.join(base, 'class')))
    except _ERRORS:
        facts.note('pci_ids', function.address)


def _read_links(tree, facts, function):
    base = _base(function.address)
    try:
        function.driver = tree.link(os.path.join(base, 'driver')) or ''
    except _ERRORS:
        facts.note('driver', function.address)
    try:
        group = tree.link(os.path.join(base, 'iommu_group')) or ''
        if group and not _GROUP.match(group):
            raise ValueError('not an IOMMU group: %r' % group)
        function.iommu_group = group
    except _ERRORS:
        facts.note('iommu_group', function.address)
    try:
        physfn = tree.link(os.path.join(base, 'physfn'))
        if physfn is not None:
            function.physfn = contents.address(physfn)
    except _ERRORS:
        facts.note('vfs', function.address)


def read_function(tree: files.Tree, facts: shapes.HostFacts,
                  address: str) -> shapes.Function:
    """What every PCI function has: ids and class, driver, IOMMU group,
    NUMA node, and its PF when it is a VF."""
    function = facts.function(address)
    _read_ids(tree, facts, function)
    _read_links(tree, facts, function)
    try:
        function.numa_node = contents.integer(
            tree.read(os.path.join(_base(address), 'numa_node')), -1)
    except _ERRORS:
        facts.note('numa_node', address)
    return function


def read_vfs(tree: files.Tree, facts: shapes.HostFacts,
             pf: shapes.Function) -> list[str]:
    """PF's SR-IOV counts, and its VFs' addresses (``virtfn<N>``)."""
    base = _base(pf.address)
    if not tree.exists(os.path.join(base, 'sriov_totalvfs')):
        return []
    try:
        pf.sriov_numvfs = contents.integer(
            tree.read(os.path.join(base, 'sriov_numvfs')), 0)
        pf.sriov_totalvfs = contents.integer(
            tree.read(os.path.join(base, 'sriov_totalvfs')), 0)
    except _ERRORS:
        facts.note('sriov', pf.address)
    vfs = []
    try:
        names = tree.listdir(base) or []
    except _ERRORS:
        facts.note('vfs', pf.address)
        return []
    for name in names:
        match = _VIRTFN.match(name)
        if not match:
            continue
        try:
            vfs.append((int(match.group(1)), contents.address(
                tree.link(os.path.join(base, name)) or '')))
        except _ERRORS:
            facts.note('vfs', pf.address)
    return [vf for _, vf in sorted(vfs)]


def _type_names(tree: files.Tree, addresses: list[str]) -> dict[int, str]:
    """{type id: name} of the creatable_vgpu_types of ADDRESSES (the VFs
    of one card: the ids are the driver's, one card's names them all)."""
    names: dict[int, str] = {}
    for address in addresses:
        try:
            names.update(contents.vgpu_type_names(tree.read(os.path.join(
                _base(address), 'nvidia', 'creatable_vgpu_types'))))
        except _ERRORS:
            continue
    return names


def read_vgpu_types(tree: files.Tree, facts: shapes.HostFacts,
                    vfs: list[str]) -> None:
    """The vGPU type written in each VF of one card (those with an
    ``nvidia`` directory: NVIDIA's SR-IOV vGPU), named from the card's
    creatable types."""
    names = None
    for address in vfs:
        nvidia = os.path.join(_base(address), 'nvidia')
        if not tree.is_dir(nvidia):
            continue
        function = facts.function(address)
        try:
            function.vgpu_type_id = contents.integer(tree.read(
                os.path.join(nvidia, 'current_vgpu_type')), 0)
        except _ERRORS:
            facts.note('vgpu_type', address)
            continue
        if function.vgpu_type_id:
            if names is None:
                names = _type_names(tree, vfs)
            function.vgpu_type = names.get(function.vgpu_type_id)
            if function.vgpu_type is None:
                facts.note('vgpu_type_name', address)


def read_mdev_types(tree: files.Tree, facts: shapes.HostFacts,
                    function: shapes.Function) -> None:
    """The mdev types FUNCTION offers, with the instances still
    available (how many exist is read_mdev_devices')."""
    types = os.path.join(_base(function.address), 'mdev_supported_types')
    try:
        names = tree.listdir(types)
    except _ERRORS:
        facts.note('mdev_types', function.address)
        return
    for name in names or ():
        path = os.path.join(types, name)
        try:
            text = tree.read(os.path.join(path, 'name')).strip()
            if '\n' in text:
                raise ValueError('not one name')
            function.mdev_types[name] = shapes.MdevType(
                text, contents.integer(tree.read(os.path.join(
                    path, 'available_instances')), 0))
        except _ERRORS:
            facts.note('mdev_types', function.address)


def _count(types, name, created):
    before = types.get(name) or shapes.MdevType()
    types[name] = shapes.MdevType(before.name, before.available_instances,
                                  created)


def read_mdev_devices(tree: files.Tree, facts: shapes.HostFacts) -> None:
    """How many mediated devices of each type exist on each NVIDIA
    function (0 for a type offered and not used); none at all when the
    mdev bus is absent (no mdev module loaded)."""
    counts: dict[tuple[str, str], int] = {}
    try:
        uuids = tree.listdir(MDEV_DEVICES) or []
        for uuid in uuids:
            path = os.path.join(MDEV_DEVICES, uuid)
            parent = os.path.basename(os.path.dirname(tree.target(path)))
            mdev_type = tree.link(os.path.join(path, 'mdev_type'))
            if not mdev_type:
                raise OSError('%s has no mdev_type' % uuid)
            key = (parent.lower(), mdev_type)
            counts[key] = counts.get(key, 0) + 1
    except _ERRORS:
        facts.note('mdev_devices')
        return
    for function in facts.nvidia_functions():
        for name in list(function.mdev_types):
            _count(function.mdev_types, name,
                   counts.pop((function.address, name), 0))
    for (parent, name), number in sorted(counts.items()):
        holder = facts.functions.get(parent)
        if holder is not None and holder.is_nvidia:
            _count(holder.mdev_types, name, number)


def read_group(tree: files.Tree, facts: shapes.HostFacts,
               function: shapes.Function) -> list[str]:
    """The other members of FUNCTION's IOMMU group (their addresses)."""
    if not function.iommu_group:
        return []
    devices = os.path.join(IOMMU_GROUPS, function.iommu_group, 'devices')
    members = []
    try:
        names = tree.listdir(devices)
        if names is None:
            raise OSError('no %s' % devices)
        for name in names:
            tree.link(os.path.join(devices, name))
            members.append(contents.address(name))
    except _ERRORS:
        facts.note('iommu_group_members', function.address)
    return [m for m in members if m != function.address]


def read_functions(tree: files.Tree, facts: shapes.HostFacts) -> None:
    """Every NVIDIA function, its VFs and the members of their IOMMU
    groups, and the mediated devices on them, into FACTS."""
    todo = nvidia_addresses(tree, facts)
    seen: set[str] = set()
    while todo:
        address = todo.pop(0)
        if address in seen:
            continue
        seen.add(address)
        function = read_function(tree, facts, address)
        if not function.is_nvidia:
            continue
        if function.physfn is None:
            vfs = read_vfs(tree, facts, function)
            for vf in vfs:
                facts.function(vf).physfn = function.address
            read_vgpu_types(tree, facts, vfs)
            todo += vfs
        read_mdev_types(tree, facts, function)
        todo += read_group(tree, facts, function)
    read_mdev_devices(tree, facts)
