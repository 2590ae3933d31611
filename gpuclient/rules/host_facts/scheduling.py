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

"""Pure: a host's collected facts as the facts the scheduler and the
drain take, the ones ``--host-fact`` gives (``maintenance.parse_facts``).

``collected`` turns one host's ``HostFacts`` into {key: value} of these
keys:

``numa_gpus``
    The GPUs on each NUMA node, a list of counts by node (``[2, 2]``), as
    ``host_manager.numa_topology`` takes it: the devices a flavor's PCI
    alias gets from Nova. Counted are the whole GPUs of the PCI IDs asked
    (``pci.counted_ids``: the flavor's aliases', else the host's
    passthrough pool's): the functions of those IDs, none of them a VF
    (Nova passes a passthrough pool's cards whole), each bound to
    vfio-pci (or a VFIO variant driver) and with its NUMA node read. Not
    given at all, never a guess, where a count could be wrong: no PCI ID
    is known, or one is not NVIDIA's (the collector reads NVIDIA's
    functions only); the functions could not be listed, or one's IDs,
    driver or NUMA node could not be read; a node is -1 (the kernel
    knows none: Nova's legacy policy lets such a device through, the
    others do not); a function of those IDs is bound to another driver
    (whether Nova counts it depends on the host's ``[pci] device_spec``,
    which the host's files do not show) or is a VF (the ID is then not a
    whole GPU's).
``nova``, ``libvirt``, ``qemu``
    The upstream versions the collector read, as ``maintenance.version``
    parses them; nova-compute's as the release it is (``29.0.0`` is
    ``2024.1``: ``nova_release``), since the drain's rules name releases.
``mdev_types``
    The mdev types the host's functions offer (``mdev_supported_types``:
    ``{'nvidia-35'}``), empty when none; not given when one function's
    could not be read.

Nothing is given of a host whose series come from two collectors, nor of
facts older than STALE_AFTER (``checks.hosts``'s, given by the caller)
when they were read: a collector that stopped does not show an upgrade
since (``unusable``). A fact the collector could not read, or did not
find, is never given.

``maintenance.with_collected`` puts them under the operator's facts.
"""

from __future__ import annotations

from collections.abc import Iterable
import re
import typing

from gpuclient.i18n import _
from gpuclient.rules.host_facts import shapes

NUMA_KEYS = ('numa_gpus',)
DRAIN_KEYS = ('nova', 'libvirt', 'qemu', 'mdev_types')
KEYS = NUMA_KEYS + DRAIN_KEYS
VERSION_KEYS = {'nova': shapes.NOVA_COMPUTE, 'libvirt': shapes.LIBVIRT,
                'qemu': shapes.QEMU}
COLLECTOR = shapes.COLLECTOR

# Nova 27.0.0 was 2023.1 (Antelope), and each release since (and before,
# back to 17.0.0, Queens, 2018.1) is the next major version, two a year
_FIRST_NUMBERED = (27, 2023)
_VERSION = re.compile(r'^\s*(\d+)(?:\.(\d+))?')


def nova_release(text: str | None) -> str | None:
    """nova-compute's version as its release: '29.0.0' -> '2024.1',
    '32.1.0.dev12' -> '2025.2'; a year form is kept ('2025.1'); None when
    it is no version of Nova's numbering (before 17, Queens)."""
    match = _VERSION.match(str(text or ''))
    if not match:
        return None
    major = int(match.group(1))
    if major >= 2000:
        return '%d.%d' % (major, int(match.group(2) or 0))
    if major < 17:
        return None
    base, year = _FIRST_NUMBERED
    return '%d.%d' % (year + (major - base) // 2, (major - base) % 2 + 1)


def unusable(facts: shapes.HostFacts | None, now: float | None = None,
             stale_after: float | None = None) -> str | None:
    """Why none of FACTS is used (None: they may be): none, two
    collectors, or read at NOW (epoch seconds) more than STALE_AFTER
    seconds after they were collected (either None: the age is not
    judged)."""
    if facts is None:
        return _('no %s series') % COLLECTOR
    if facts.conflicting:
        return _('the series of %(n)d collectors (%(which)s) say they are '
                 'this host') % {'n': len(facts.exporters),
                                 'which': ', '.join(sorted(facts.exporters))}
    if (now is not None and stale_after is not None
            and facts.collected_at is not None
            and now - facts.collected_at > stale_after):
        return _('they were collected %(age)d s before they were read, '
                 'more than %(most)d s: is its collector still '
                 'running?') % {'age': now - facts.collected_at,
                                'most': stale_after}
    return None


def _pci_id(function: shapes.Function) -> str:
    return '%s:%s' % (function.vendor_id, function.device_id)


def _vfio(driver: str | None) -> bool:
    return bool(driver) and (driver == 'vfio-pci' or 'vfio' in str(driver))


def numa_gpus(facts: shapes.HostFacts,
              pci_ids: Iterable[str] | None) -> list[int] | None:
    """The GPUs of PCI_IDS on each NUMA node of the host, or None when
    not known (see the module's docstring)."""
    if pci_ids is None or facts.is_unreadable('pci_devices'):
        return None
    wanted = {str(i).lower() for i in pci_ids}
    # the collector looks at NVIDIA's functions (and their IOMMU groups'
    # members) only: another vendor's GPUs it never counted
    if any(not i.startswith(shapes.NVIDIA_VENDOR_ID + ':') for i in wanted):
        return None
    counts: list[int] = []
    for address, function in sorted(facts.functions.items()):
        if facts.is_unreadable('pci_ids', address):
            return None
        if _pci_id(function) not in wanted:
            continue
        node = function.numa_node
        if (function.physfn is not None
                or facts.is_unreadable('driver', address)
                or not _vfio(function.driver)
                or facts.is_unreadable('numa_node', address)
                or node is None or node < 0):
            return None
        counts += [0] * (node + 1 - len(counts))
        counts[node] += 1
    return counts


def mdev_types(facts: shapes.HostFacts) -> set[str] | None:
    """The mdev types the host's functions offer, or None when one
    function's (or the functions) could not be read."""
    if facts.is_unreadable('pci_devices'):
        return None
    found: set[str] = set()
    for address, function in facts.functions.items():
        if facts.is_unreadable('mdev_types', address):
            return None
        found |= set(function.mdev_types)
    return found


def _version(facts: shapes.HostFacts, key: str) -> str | None:
    component = VERSION_KEYS[key]
    if facts.is_unreadable(shapes.version_fact(component)):
        return None
    found = facts.versions.get(component)
    text = found.version if found is not None else ''
    if not _VERSION.match(text):
        return None
    return nova_release(text) if key == 'nova' else text.strip()


def collected(facts: shapes.HostFacts | None,
              pci_ids: Iterable[str] | None = None,
              now: float | None = None, stale_after: float | None = None,
              keys: Iterable[str] = KEYS) -> dict[str, typing.Any]:
    """{key: value} of KEYS that FACTS (one host's) give, read at NOW,
    none when they are older than STALE_AFTER (``unusable``): see the
    module's docstring. PCI_IDS: the PCI IDs whose GPUs ``numa_gpus``
    counts (``pci.counted_ids``; None: not known)."""
    if facts is None or unusable(facts, now, stale_after) is not None:
        return {}
    found: dict[str, typing.Any] = {}
    for key in keys:
        if key == 'numa_gpus':
            value: typing.Any = numa_gpus(facts, pci_ids)
        elif key == 'mdev_types':
            value = mdev_types(facts)
        else:
            value = _version(facts, key)
        if value is not None:
            found[key] = value
    return found
