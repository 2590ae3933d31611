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

"""The host around the GPUs: its name, kernel command line, IOMMU, tools
and the versions of what must move together.

Versions are read from the files a package leaves, never by running a
program (nothing but ``nvidia-smi`` is run, and only on the host itself):

``kernel``
   ``/proc/sys/kernel/osrelease``.
``nvidia_driver``
   ``/sys/module/nvidia/version``, else ``/proc/driver/nvidia/version``;
   no version and nothing unreadable when the module is not loaded (a
   passthrough host).
``libvirt``
   dpkg's status file (``libvirt-daemon``, ``libvirt-daemon-system``,
   ``libvirt0``), else the library's file name
   (``/usr/lib*/libvirt.so.0.<N>.<M>``, which RPM hosts have too), else
   libvirt's QEMU capabilities cache (``<selfvers>``).
``qemu``
   dpkg's status file (``qemu-system-x86``, ``qemu-system-arm``,
   ``qemu-kvm``, ``qemu-system-common``), else libvirt's QEMU
   capabilities cache (``/var/cache/libvirt/qemu/capabilities/*.xml``,
   ``<version>``: what libvirt, and so Nova, found; root only).
``nova_compute``
   dpkg's status file (``nova-compute``, ``python3-nova``), else the
   Python distribution's metadata directory (``nova-<version>.dist-info``
   or ``.egg-info``) in the system's site-packages and dist-packages,
   DevStack's venv and OpenStack-Ansible's venvs.

The first source that names the component wins; one that names two
versions (two venvs, a stale library) makes it unreadable rather than a
guess, and so does none (a containerised nova-compute, Kolla's, is not
seen from the host).
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Iterable
import os
import socket

from gpuclient.hostfacts import files
from gpuclient.rules.host_facts import contents
from gpuclient.rules.host_facts import shapes

HOSTNAME = 'proc/sys/kernel/hostname'
CMDLINE = 'proc/cmdline'
OSRELEASE = 'proc/sys/kernel/osrelease'
CLASS_IOMMU = 'sys/class/iommu'
NVIDIA_MODULE = 'sys/module/nvidia'
NVIDIA_PROC = 'proc/driver/nvidia/version'
DPKG_STATUS = 'var/lib/dpkg/status'
# where a command is looked for (the PATH a systemd service has, and /bin)
TOOL_DIRS = ('usr/local/sbin', 'usr/local/bin', 'usr/sbin', 'usr/bin',
             'sbin', 'bin')
DPKG_PACKAGES = {
    shapes.LIBVIRT: ('libvirt-daemon', 'libvirt-daemon-system', 'libvirt0'),
    shapes.QEMU: ('qemu-system-x86', 'qemu-system-arm', 'qemu-kvm',
                  'qemu-system-common'),
    shapes.NOVA_COMPUTE: ('nova-compute', 'python3-nova'),
}
LIBVIRT_LIBRARIES = ('usr/lib64/libvirt.so.0.*', 'usr/lib/libvirt.so.0.*',
                     'usr/lib/*-linux-gnu/libvirt.so.0.*')
LIBVIRT_CACHE = 'var/cache/libvirt/qemu/capabilities/*.xml'
PYTHON_SITES = ('usr/lib/python3*/site-packages',
                'usr/lib64/python3*/site-packages',
                'usr/lib/python3/dist-packages',
                'usr/local/lib/python3*/dist-packages',
                'usr/local/lib/python3*/site-packages',
                'opt/stack/data/venv/lib/python3*/site-packages',
                'openstack/venvs/nova-*/lib/python3*/site-packages')
_ERRORS = (OSError, ValueError)


def hostname(tree: files.Tree, facts: shapes.HostFacts) -> str:
    """The host's name as the DCGM exporter takes it (Go's
    ``os.Hostname()``: /proc/sys/kernel/hostname), else the system's (on
    the host itself); '' and the fact unreadable otherwise."""
    try:
        text = tree.read(HOSTNAME).strip()
        if not text or any(c.isspace() for c in text) or len(text) > 253:
            raise ValueError('not a host name')
        return text
    except _ERRORS:
        if tree.is_host and socket.gethostname():
            return socket.gethostname()
    facts.note('hostname')
    return ''


def read_kernel(tree: files.Tree, facts: shapes.HostFacts) -> None:
    """The IOMMU options of the command line and whether an IOMMU is
    active."""
    try:
        facts.iommu_cmdline = contents.iommu_options(tree.read(CMDLINE))
    except _ERRORS:
        facts.note('kernel_cmdline')
    try:
        names = tree.listdir(CLASS_IOMMU)
        facts.iommu_active = bool(names)
    except _ERRORS:
        facts.note('iommu')


def find_tool(tree: files.Tree, name: str) -> str | None:
    """The path (in the tree) of command NAME, None when not installed."""
    for folder in TOOL_DIRS:
        path = os.path.join(folder, name)
        if tree.executable(path):
            return path
    return None


class _Dpkg:
    """dpkg's status file, read once (None: no dpkg on this host)."""

    def __init__(self, tree):
        self.tree = tree
        self._text = None
        self._read = False

    def installed(self, packages):
        if not self._read:
            self._read = True
            if self.tree.exists(DPKG_STATUS):
                self._text = self.tree.read(DPKG_STATUS,
                                            files.MAX_STATUS_BYTES)
        if self._text is None:
            return []
        found = contents.dpkg_installed(self._text, packages)
        for package in packages:
            if package in found:
                version = found[package]
                return [shapes.Version(contents.upstream_version(version),
                                       version, 'dpkg')]
        return []


def _from_names(paths: Iterable[str], parse: Callable[[str], str],
                source: str) -> list[shapes.Version]:
    found = []
    for path in paths:
        try:
            found.append(shapes.Version(parse(os.path.basename(path)),
                                        '', source))
        except ValueError:
            continue
    return found


def _cache(tree, which):
    found = []
    for path in tree.glob(LIBVIRT_CACHE):
        try:
            version = contents.libvirt_cache_versions(tree.read(path))[which]
        except _ERRORS:
            continue
        if version:
            found.append(shapes.Version(version, '', 'libvirt-cache'))
    return found


def _nova_dists(tree):
    paths = []
    for site in PYTHON_SITES:
        for kind in ('dist-info', 'egg-info'):
            paths += tree.glob(os.path.join(site, 'nova-*.' + kind))
    return _from_names(
        paths, lambda name: contents.python_dist_version(name, 'nova'),
        'python')


def _sources(tree, dpkg, component):
    """The ways to find COMPONENT's version, in order: each gives the
    Versions it finds."""
    packages = DPKG_PACKAGES[component]
    ways = [lambda: dpkg.installed(packages)]
    if component == shapes.LIBVIRT:
        ways.append(lambda: _from_names(
            [p for pattern in LIBVIRT_LIBRARIES for p in tree.glob(pattern)],
            contents.libvirt_library_version, 'library'))
        ways.append(lambda: _cache(tree, 0))
    elif component == shapes.QEMU:
        ways.append(lambda: _cache(tree, 1))
    else:
        ways.append(lambda: _nova_dists(tree))
    return ways


def _nvidia(tree):
    if tree.exists(os.path.join(NVIDIA_MODULE, 'version')):
        try:
            return shapes.Version(contents.nvidia_module_version(
                tree.read(os.path.join(NVIDIA_MODULE, 'version'))), '',
                'module')
        except _ERRORS:
            pass
    if tree.exists(NVIDIA_PROC):
        return shapes.Version(contents.nvidia_proc_version(
            tree.read(NVIDIA_PROC)), '', 'procfs')
    if tree.exists(NVIDIA_MODULE):
        raise ValueError('the nvidia module says no version')
    return None


def read_versions(tree: files.Tree, facts: shapes.HostFacts) -> None:
    """The versions of shapes.COMPONENTS into FACTS.versions."""
    try:
        facts.versions[shapes.KERNEL] = shapes.Version(
            contents.kernel_release(tree.read(OSRELEASE)), '', 'procfs')
    except _ERRORS:
        facts.note(shapes.version_fact(shapes.KERNEL))
    try:
        version = _nvidia(tree)
        if version is not None:
            facts.versions[shapes.NVIDIA_DRIVER] = version
    except _ERRORS:
        facts.note(shapes.version_fact(shapes.NVIDIA_DRIVER))
    dpkg = _Dpkg(tree)
    for component in (shapes.LIBVIRT, shapes.QEMU, shapes.NOVA_COMPUTE):
        found = None
        for way in _sources(tree, dpkg, component):
            try:
                versions = way()
            except _ERRORS:
                continue
            releases = {v.version for v in versions}
            if releases:
                # two releases: which one runs is not known
                found = versions[0] if len(releases) == 1 else None
                break
        if found is None:
            facts.note(shapes.version_fact(component))
        else:
            facts.versions[component] = found


def read_tools(tree: files.Tree, facts: shapes.HostFacts) -> None:
    """Whether mdevctl and nvidia-smi are installed."""
    facts.mdevctl = find_tool(tree, 'mdevctl') is not None
    facts.nvidia_smi = find_tool(tree, 'nvidia-smi') is not None
