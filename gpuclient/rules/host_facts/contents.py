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

"""Pure: what a GPU host's files, and ``nvidia-smi``, say.

Each function takes the text (or a file name) the collector read and
gives the value, or raises ValueError for anything it does not
recognise: the collector then reports the fact unreadable rather than
guess. No I/O here.

* sysfs: ``vendor``/``device`` (``0x10de``), ``class`` (``0x030200``),
  numbers (``numa_node``, ``sriov_numvfs``, ``available_instances``,
  ``nvidia/current_vgpu_type``), a PCI function's name
  (``0000:41:00.0``), ``nvidia/creatable_vgpu_types`` ("<id> : NVIDIA
  <name>" lines under an "ID : vGPU Name" header, as NVIDIA's vGPU
  guide shows them and ``profiles/vf.py``'s script reads them).
* ``/proc/cmdline``: the IOMMU options, the last of each name winning as
  the kernel's parser lets it.
* versions: the NVIDIA kernel module's (``/sys/module/nvidia/version``,
  else the ``NVRM version:`` line of ``/proc/driver/nvidia/version``);
  dpkg's status file (``Package``, ``Status``, ``Version`` of each
  stanza; only "installed" counts) and the upstream release in a Debian
  version (epoch and revision off: ``1:8.2.2+ds-0ubuntu1`` is ``8.2.2``);
  libvirt's library file name (``libvirt.so.0.10000.0``: libtool's
  ``major * 1000 + minor`` then micro, so 10.0.0); a Python distribution's
  metadata directory (``nova-29.0.0.dist-info``,
  ``nova-27.1.0-py3.9.egg-info``); libvirt's QEMU capabilities cache
  (``<selfvers>`` libvirt's and ``<version>`` QEMU's version numbers,
  ``major * 1000000 + minor * 1000 + micro``).
* ``nvidia-smi --query-gpu=index,pci.bus_id,mig.mode.current,
  mig.mode.pending --format=csv,noheader`` and ``nvidia-smi mig -lgi``
  (columns GPU, Name "MIG 1g.10gb", Profile ID, Instance ID, Placement
  Start:Size, as ``profiles/scripts.py`` reads them); "No GPU instances
  found" and "No MIG-enabled devices found" are an empty layout.
"""

from __future__ import annotations

from collections.abc import Iterable
import re

from gpuclient.rules.host_facts import shapes

_HEX_ID = re.compile(r'^0x([0-9a-fA-F]{4})$')
_CLASS = re.compile(r'^0x([0-9a-fA-F]{6})$')
_INT = re.compile(r'^-?[0-9]+$')
_ADDRESS = re.compile(
    r'^([0-9a-fA-F]{4,8}):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-7])$')
_BUS_ID = re.compile(
    r'^([0-9a-fA-F]{1,8}):([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2})'
    r'\.([0-7])$')
# the IOMMU options of the kernel command line
IOMMU_OPTIONS = ('intel_iommu', 'amd_iommu', 'iommu')
_RELEASE = re.compile(r'^[0-9]+(?:\.[0-9]+)*')
_NVRM = re.compile(r'NVRM version:.*?Kernel Module(?: for \S+)?\s+'
                   r'([0-9]+(?:\.[0-9]+)+)\s')
_DRIVER_VERSION = re.compile(r'^[0-9]+(?:\.[0-9]+)+$')
_LIBVIRT_LIBRARY = re.compile(r'^libvirt\.so\.0\.([0-9]+)\.([0-9]+)$')
_LIBVIRT_SELFVERS = re.compile(r'<selfvers>\s*([0-9]+)\s*</selfvers>')
_QEMU_VERSION = re.compile(r'<version>\s*([0-9]+)\s*</version>')
_MIG_MODES = {'enabled': True, 'disabled': False, '[n/a]': None,
              'n/a': None, '[not supported]': None}
_GI_ROW = re.compile(r'^\|\s*([0-9]+)\s+MIG\s+(\S+)\s+([0-9]+)\s+([0-9]+)'
                     r'\s+([0-9]+):([0-9]+)\s*\|$')
_NO_INSTANCES = re.compile(r'No (?:GPU instances|MIG-enabled devices) '
                           r'found', re.IGNORECASE)
_TYPE_LINE = re.compile(r'^([0-9]+)\s*:\s*(\S.*?)\s*$')
_TYPE_HEADER = re.compile(r'^ID\s*:', re.IGNORECASE)


def _one_line(text: str) -> str:
    line = str(text).strip()
    if not line or '\n' in line:
        raise ValueError('not one value: %r' % text[:40])
    return line


# -- sysfs --------------------------------------------------------------------

def hex_id(text: str) -> str:
    """A sysfs ``vendor`` or ``device`` file ('0x10DE\\n') as Nova writes
    the id: '10de'."""
    match = _HEX_ID.match(_one_line(text))
    if not match:
        raise ValueError('not a PCI id: %r' % text[:40])
    return match.group(1).lower()


def pci_class(text: str) -> str:
    """A sysfs ``class`` file ('0x030200\\n') as '030200'."""
    match = _CLASS.match(_one_line(text))
    if not match:
        raise ValueError('not a PCI class: %r' % text[:40])
    return match.group(1).lower()


def integer(text: str, minimum: int | None = None) -> int:
    """A sysfs number ('8\\n', '-1\\n'), at least MINIMUM when given."""
    line = _one_line(text)
    if not _INT.match(line) or len(line) > 12:
        raise ValueError('not a number: %r' % text[:40])
    value = int(line)
    if minimum is not None and value < minimum:
        raise ValueError('%d is below %d' % (value, minimum))
    return value


def address(name: str) -> str:
    """A PCI function's sysfs name ('0000:41:00.0') checked and
    lower-cased; ValueError for anything else."""
    match = _ADDRESS.match(str(name))
    if not match:
        raise ValueError('not a PCI address: %r' % str(name)[:40])
    return str(name).lower()


def bus_id_address(bus_id: str) -> str:
    """An address as nvidia-smi and DCGM write it ('00000000:3B:00.0') or
    as sysfs does, in sysfs' form: '0000:3b:00.0'."""
    match = _BUS_ID.match(str(bus_id).strip())
    if not match:
        raise ValueError('not a PCI bus id: %r' % str(bus_id)[:40])
    domain, bus, device, function = match.groups()
    return '%04x:%02x:%02x.%s' % (int(domain, 16), int(bus, 16),
                                  int(device, 16), function)


def vgpu_type_names(text: str) -> dict[int, str]:
    """{type id: name} of an ``nvidia/creatable_vgpu_types`` file, the
    name without NVIDIA's "NVIDIA " ('L40S-24Q', as a pool names its
    type); the "ID : vGPU Name" header is skipped."""
    found: dict[int, str] = {}
    for line in str(text).splitlines():
        line = line.strip()
        if not line or _TYPE_HEADER.match(line):
            continue
        match = _TYPE_LINE.match(line)
        if not match:
            raise ValueError('not a vGPU type line: %r' % line[:40])
        name = match.group(2)
        if name.startswith('NVIDIA '):
            name = name[len('NVIDIA '):].strip()
        found[int(match.group(1))] = name
    return found


# -- the kernel ---------------------------------------------------------------

def iommu_options(cmdline: str) -> dict[str, str]:
    """{option: value} of the IOMMU options on a kernel command line
    (``intel_iommu=on iommu=pt`` -> {'intel_iommu': 'on', 'iommu':
    'pt'}); the last of a name wins. A line with a NUL byte is refused
    (/proc/cmdline is text)."""
    if '\0' in cmdline:
        raise ValueError('a NUL byte on the command line')
    found = {}
    for word in cmdline.split():
        name, equals, value = word.partition('=')
        if name in IOMMU_OPTIONS and equals:
            found[name] = value
    return found


def kernel_release(text: str) -> str:
    """/proc/sys/kernel/osrelease ('6.8.0-45-generic\\n')."""
    line = _one_line(text)
    if ' ' in line or not _RELEASE.match(line):
        raise ValueError('not a kernel release: %r' % text[:40])
    return line


def nvidia_module_version(text: str) -> str:
    """/sys/module/nvidia/version ('550.90.05\\n')."""
    line = _one_line(text)
    if not _DRIVER_VERSION.match(line):
        raise ValueError('not a driver version: %r' % text[:40])
    return line


def nvidia_proc_version(text: str) -> str:
    """The version in /proc/driver/nvidia/version's first line ("NVRM
    version: NVIDIA UNIX x86_64 Kernel Module  550.90.05  Wed ...", or
    "... Open Kernel Module for x86_64  550.90.05  Release Build ...")."""
    match = _NVRM.search(str(text) + ' ')
    if not match:
        raise ValueError('no NVRM version line')
    return match.group(1)


# -- packages -----------------------------------------------------------------

def dpkg_installed(text: str, packages: Iterable[str]) -> dict[str, str]:
    """{package: version} of the PACKAGES dpkg's status file (TEXT) says
    are installed (Status "... installed"); the first stanza of a name
    wins (one architecture's)."""
    wanted = set(packages)
    found: dict[str, str] = {}
    fields: dict[str, str] = {}

    def end():
        name = fields.get('Package')
        status = fields.get('Status', '').split()
        if (name in wanted and name not in found and status
                and status[-1] == 'installed' and fields.get('Version')):
            found[name] = fields['Version']
        fields.clear()

    for line in str(text).splitlines():
        if not line.strip():
            end()
        elif not line[0].isspace():
            key, colon, value = line.partition(':')
            if colon and key in ('Package', 'Status', 'Version'):
                fields[key] = value.strip()
    end()
    return found


def upstream_version(package_version: str) -> str:
    """The upstream release in a Debian (or RPM) version: the epoch
    ('1:') and the revision ('-0ubuntu1') off, then the leading numbers:
    '1:8.2.2+ds-0ubuntu1' -> '8.2.2', '3:29.0.0-0ubuntu1' -> '29.0.0'."""
    text = str(package_version).strip()
    epoch, colon, rest = text.partition(':')
    if colon and epoch.isdigit():
        text = rest
    if '-' in text:
        text = text.rpartition('-')[0]
    match = _RELEASE.match(text)
    if not match:
        raise ValueError('no release in %r' % package_version[:40])
    return match.group(0)


def libvirt_library_version(filename: str) -> str:
    """libvirt's version from its library's file name:
    'libvirt.so.0.10000.0' -> '10.0.0', 'libvirt.so.0.9007.0' -> '9.7.0'."""
    match = _LIBVIRT_LIBRARY.match(str(filename))
    if not match:
        raise ValueError('not a libvirt library: %r' % filename[:60])
    number, micro = int(match.group(1)), int(match.group(2))
    return '%d.%d.%d' % (number // 1000, number % 1000, micro)


def python_dist_version(dirname: str, project: str) -> str:
    """PROJECT's version from its metadata directory's name:
    'nova-29.0.0.dist-info', 'nova-27.1.0-py3.9.egg-info' -> '29.0.0',
    '27.1.0'."""
    match = re.match(r'^%s-([0-9][0-9A-Za-z.+]*?)(?:-py[0-9.]+)?'
                     r'\.(?:dist|egg)-info$' % re.escape(project),
                     str(dirname))
    if not match:
        raise ValueError('not %s metadata: %r' % (project, dirname[:60]))
    return match.group(1)


def _dotted(number: int) -> str:
    return '%d.%d.%d' % (number // 1000000, number // 1000 % 1000,
                         number % 1000)


def libvirt_cache_versions(text: str) -> tuple[str | None, str | None]:
    """(libvirt's, QEMU's) versions in one file of libvirt's QEMU
    capabilities cache (``<selfvers>10000000</selfvers>``,
    ``<version>8002002</version>``); None for one it does not hold."""
    text = str(text)
    if '<qemuCaps>' not in text:
        raise ValueError('not a QEMU capabilities cache file')
    selfvers = _LIBVIRT_SELFVERS.search(text)
    version = _QEMU_VERSION.search(text)
    return (_dotted(int(selfvers.group(1))) if selfvers else None,
            _dotted(int(version.group(1))) if version else None)


# -- nvidia-smi ---------------------------------------------------------------

MIG_QUERY: tuple[str, ...] = ('--query-gpu=index,pci.bus_id,mig.mode.current,'
             'mig.mode.pending', '--format=csv,noheader')
MIG_LIST: tuple[str, ...] = ('mig', '-lgi')


def mig_modes(text: str) -> dict[int, tuple[str, bool | None, bool | None]]:
    """{GPU index: (address, MIG mode now, MIG mode after a reset)} of
    ``nvidia-smi`` MIG_QUERY's answer ("0, 00000000:41:00.0, Enabled,
    Disabled"); a GPU without MIG says "[N/A]" (None). Any line it does
    not read refuses the whole answer."""
    found = {}
    for line in str(text).splitlines():
        if not line.strip():
            continue
        cells = [c.strip() for c in line.split(',')]
        if len(cells) != 4 or not cells[0].isdigit():
            raise ValueError('not a MIG query line: %r' % line[:60])
        try:
            current = _MIG_MODES[cells[2].lower()]
            pending = _MIG_MODES[cells[3].lower()]
        except KeyError:
            raise ValueError('not a MIG mode: %r' % line[:60]) from None
        found[int(cells[0])] = (bus_id_address(cells[1]), current, pending)
    if not found:
        raise ValueError('no GPU in the MIG query')
    return found


def gpu_instances(text: str) -> dict[int, list[shapes.GpuInstance]]:
    """{GPU index: its GPU instances} of ``nvidia-smi mig -lgi``'s table
    ({} when it says there are none); anything else, an error message
    ("Insufficient Permissions") or a row it does not read, is refused."""
    text = str(text)
    if _NO_INSTANCES.search(text) and '|' not in text:
        return {}
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not any('GPU instances:' in line for line in lines):
        raise ValueError('not a GPU instance table')
    found: dict[int, list[shapes.GpuInstance]] = {}
    body = False
    for line in lines:
        if line.startswith('|=') and line.endswith('=|'):
            body = True
            continue
        if not body or line.startswith('+'):
            continue
        match = _GI_ROW.match(line)
        if not match:
            raise ValueError('not a GPU instance row: %r' % line[:60])
        gpu, profile, profile_id, gi, start, size = match.groups()
        found.setdefault(int(gpu), []).append(shapes.GpuInstance(
            int(gi), profile, int(profile_id), int(start), int(size)))
    if not body:
        raise ValueError('a GPU instance table without rows')
    return {gpu: sorted(rows) for gpu, rows in found.items()}
