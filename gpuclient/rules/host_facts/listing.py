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

"""Pure: the rows of ``gpu host facts``.

One row per host and GPU: each NVIDIA GPU function that is not a VF (its
VFs and the other members of its IOMMU group are in its row), and each
PCI function whose ids the collector could not read (it may be one). A
host with no GPU in its facts, with no facts, or whose facts are not
judged (``join.Joined.problems``) gets one row without a device, its
``status`` saying so.

A fact the collector could not read is ``UNREADABLE`` in its cell, never
a value, even where a value came too; a fact that does not apply (no MIG
mode on a card that has none, no VF counts on a card without SR-IOV) is
None. The host-wide facts (IOMMU, the kernel's IOMMU options, versions,
mdevctl) are in every row of the host; ``unreadable`` names the facts
of the row's host and device (its VFs and group members included) that
could not be read.
"""

from __future__ import annotations

import collections
from collections.abc import Iterable
from collections.abc import Mapping
import typing

from gpuclient.i18n import _
from gpuclient.rules import pools as pools_mod
from gpuclient.rules.host_facts import shapes

UNREADABLE = 'unreadable'
# a driver or IOMMU group the kernel says there is none of
NONE = 'none'
OK = 'ok'

# the fields of a row, in column order (``FIELDS`` always, ``LONG_FIELDS``
# with --long)
FIELDS = ('host', 'device', 'driver', 'iommu_group', 'group_drivers',
          'numa_node', 'vfs', 'vgpu_types', 'mig', 'mig_layout', 'age',
          'status')
LONG_FIELDS = ('iommu_active', 'iommu_args') + shapes.COMPONENTS + (
    'mdevctl', 'unreadable')


def no_facts() -> str:
    """The status of a host Prometheus holds no facts of."""
    return _('no facts: is gpuclient-host-facts running there?')


def age(facts: shapes.HostFacts, now: float) -> int | None:
    """Whole seconds since FACTS were collected, at NOW (None: not
    said)."""
    if facts.collected_at is None:
        return None
    return max(0, round(now - facts.collected_at))


def _cell(facts: shapes.HostFacts, fact: str, address: str,
          value: typing.Any) -> typing.Any:
    """VALUE, or UNREADABLE when FACT (of the function at ADDRESS) could
    not be read."""
    return UNREADABLE if facts.is_unreadable(fact, address) else value


def _named(value: str | None) -> str | None:
    return NONE if value == '' else value


def devices(facts: shapes.HostFacts) -> list[str]:
    """The addresses a host's rows are about: its NVIDIA GPUs (class 03,
    or a class not read) that are not VFs, and every function whose ids
    could not be read and that is not a VF or in a GPU's group."""
    gpus = [f for f in facts.nvidia_functions()
            if f.physfn is None and (f.is_gpu or f.pci_class is None)]
    groups = {f.iommu_group for f in gpus if f.iommu_group}
    found = {f.address for f in gpus}
    unknown = {item.address for item in facts.unreadable
               if item.fact == 'pci_ids' and item.address}
    for address in unknown - found:
        function = facts.functions.get(address)
        if function is not None and (function.physfn is not None or (
                function.iommu_group and function.iommu_group in groups)):
            continue
        found.add(address)
    return sorted(found)


def _vfs(facts: shapes.HostFacts, address: str) -> list[shapes.Function]:
    return [f for _a, f in sorted(facts.functions.items())
            if f.physfn == address]


def _members(facts: shapes.HostFacts, gpu: shapes.Function
             ) -> list[shapes.Function]:
    """The other functions in GPU's IOMMU group."""
    if not gpu.iommu_group:
        return []
    return [f for _a, f in sorted(facts.functions.items())
            if f.iommu_group == gpu.iommu_group and f.address != gpu.address]


def group_drivers(facts: shapes.HostFacts, gpu: shapes.Function
                  ) -> dict[str, str | None] | str:
    """{address: driver} of the other members of GPU's IOMMU group ({}:
    none, or no group), or UNREADABLE."""
    for fact in ('iommu_group', 'iommu_group_members'):
        if facts.is_unreadable(fact, gpu.address):
            return UNREADABLE
    return {m.address: _cell(facts, 'driver', m.address, _named(m.driver))
            for m in _members(facts, gpu)}


def vf_counts(facts: shapes.HostFacts, gpu: shapes.Function) -> str | None:
    """'<enabled>/<total>' of GPU's VFs (None: no SR-IOV), or
    UNREADABLE."""
    if facts.is_unreadable('sriov', gpu.address):
        return UNREADABLE
    if gpu.sriov_totalvfs is None:
        return None
    return '%s/%d' % ('?' if gpu.sriov_numvfs is None else gpu.sriov_numvfs,
                      gpu.sriov_totalvfs)


def _vf_type(facts: shapes.HostFacts, vf: shapes.Function) -> str | None:
    if facts.is_unreadable('vgpu_type', vf.address):
        return UNREADABLE
    if vf.vgpu_type_id is None:
        return None
    if not vf.vgpu_type_id:
        return NONE
    if vf.vgpu_type:
        return vf.vgpu_type
    return _('type %(id)d (its name %(unreadable)s)') % {
        'id': vf.vgpu_type_id, 'unreadable': UNREADABLE}


def _mdev_types(facts: shapes.HostFacts,
                functions: Iterable[shapes.Function]) -> list[str]:
    """'<type> (<name>): <made> made, <available> available' of each mdev
    type the FUNCTIONS offer, summed over them."""
    made: dict[str, int | None] = {}
    available: dict[str, int | None] = {}
    names: dict[str, str] = {}
    found = []
    for function in functions:
        if facts.is_unreadable('mdev_types', function.address):
            found.append(_('mdev types of %(address)s: %(unreadable)s') % {
                'address': function.address, 'unreadable': UNREADABLE})
        for name, mdev in function.mdev_types.items():
            names[name] = names.get(name) or mdev.name
            for totals, value in ((made, mdev.created),
                                  (available, mdev.available_instances)):
                before = totals.get(name, 0)
                totals[name] = (None if value is None or before is None
                                else before + value)
    for name in sorted(names):
        found.append(_('%(type)s (%(name)s): %(made)s made, %(available)s '
                       'available') % {
            'type': name, 'name': names[name] or '?',
            'made': '?' if made[name] is None else made[name],
            'available': ('?' if available[name] is None
                          else available[name])})
    return found


def vgpu_types(facts: shapes.HostFacts, gpu: shapes.Function) -> list[str]:
    """GPU's vGPU types: the types written in its VFs ('L40S-24Q x2',
    'none x6': NVIDIA's SR-IOV vGPU) and the mdev types it and its VFs
    offer, with how many are made and still available."""
    vfs = _vfs(facts, gpu.address)
    counted = collections.Counter(
        kind for kind in (_vf_type(facts, vf) for vf in vfs) if kind)
    found = ['%s x%d' % item for item in sorted(counted.items())]
    return found + _mdev_types(facts, [gpu] + vfs)


def mig(facts: shapes.HostFacts, gpu: shapes.Function) -> str | None:
    """GPU's MIG mode ('enabled', 'disabled', 'disabled, enabled after a
    reset'), None without MIG, or UNREADABLE."""
    if facts.is_unreadable('mig_mode', gpu.address):
        return UNREADABLE
    if gpu.mig_current is None:
        return None
    words = {True: _('enabled'), False: _('disabled')}
    current = words[gpu.mig_current]
    if gpu.mig_pending is None or gpu.mig_pending == gpu.mig_current:
        return current
    return _('%(current)s, %(pending)s after a reset') % {
        'current': current, 'pending': words[gpu.mig_pending]}


def mig_layout(facts: shapes.HostFacts, gpu: shapes.Function
               ) -> list[str] | str | None:
    """The profiles of GPU's GPU instances, in placement order (None: MIG
    is not on), or UNREADABLE."""
    if facts.is_unreadable('mig_layout', gpu.address):
        return UNREADABLE
    if gpu.gpu_instances is None:
        return None
    return [gi.profile for gi in sorted(gpu.gpu_instances,
                                        key=lambda gi: (gi.start, gi))]


def host_fields(facts: shapes.HostFacts) -> dict[str, typing.Any]:
    """The host-wide fields of its rows (``LONG_FIELDS`` but
    ``unreadable``)."""
    found: dict[str, typing.Any] = {
        'iommu_active': _cell(facts, 'iommu', '', facts.iommu_active),
        'iommu_args': _cell(facts, 'kernel_cmdline', '',
                            facts.iommu_cmdline),
        'mdevctl': facts.mdevctl,
    }
    for component in shapes.COMPONENTS:
        version = facts.versions.get(component)
        found[component] = _cell(facts, shapes.version_fact(component), '',
                                 version.version if version else None)
    return found


def unreadable(facts: shapes.HostFacts,
               addresses: Iterable[str] = ()) -> list[str]:
    """The facts of the host and of the functions at ADDRESSES that could
    not be read: 'fact' or 'fact (address)'."""
    wanted = {''} | set(addresses)
    return ['%s (%s)' % (item.fact, item.address) if item.address
            else item.fact for item in sorted(facts.unreadable)
            if item.address in wanted]


def _blank(host: str, status: str) -> dict[str, typing.Any]:
    row: dict[str, typing.Any] = dict.fromkeys(FIELDS + LONG_FIELDS)
    row.update(host=host, status=status, unreadable=[])
    return row


def device_row(facts: shapes.HostFacts, address: str
               ) -> dict[str, typing.Any]:
    """The fields of the row of the function at ADDRESS (no host-wide
    ones)."""
    gpu = facts.functions.get(address) or shapes.Function(address)
    related = [address] + [f.address for f in _vfs(facts, address)]
    members = group_drivers(facts, gpu)
    if isinstance(members, dict):
        related += list(members)
    return {
        'device': address,
        'driver': _cell(facts, 'driver', address, _named(gpu.driver)),
        'iommu_group': _cell(facts, 'iommu_group', address,
                             _named(gpu.iommu_group)),
        'group_drivers': members,
        'numa_node': _cell(facts, 'numa_node', address, gpu.numa_node),
        'vfs': vf_counts(facts, gpu),
        'vgpu_types': vgpu_types(facts, gpu),
        'mig': mig(facts, gpu),
        'mig_layout': mig_layout(facts, gpu),
        'unreadable': unreadable(facts, related),
        'status': (_('its PCI ids (vendor, device, class) %s: it may '
                     'be an NVIDIA GPU') % UNREADABLE
                   if facts.is_unreadable('pci_ids', address) else OK),
    }


def host_rows(host: str, facts: shapes.HostFacts | None, now: float,
              problem: str | None = None) -> list[dict[str, typing.Any]]:
    """The rows of HOST: one per device (``devices``), or one saying why
    there is none (no FACTS, PROBLEM: not judged, no GPU found). FACTS
    from two collectors (``conflicting``) are not judged, PROBLEM or not.
    """
    if problem is None and facts is not None and facts.conflicting:
        problem = _('two collectors say they are this host (%s)') % (
            ', '.join(sorted(facts.exporters)))
    if problem is not None:
        return [_blank(host, _('not judged: %s') % problem)]
    if facts is None:
        return [_blank(host, no_facts())]
    common = dict(host_fields(facts), host=host, age=age(facts, now))
    found = devices(facts)
    if not found:
        status = (_('its PCI functions %s') % UNREADABLE
                  if facts.is_unreadable('pci_devices')
                  else _('no NVIDIA GPU in its facts'))
        return [dict(_blank(host, status), **common,
                     unreadable=unreadable(facts))]
    return [dict(_blank(host, OK), **common, **device_row(facts, address))
            for address in found]


def default_hosts(pools: Mapping[str, Mapping[str, typing.Any]],
                  facts: Iterable[str], problems: Iterable[str]
                  ) -> list[str]:
    """The hosts ``gpu host facts`` lists when none is named: the hosts
    of every pool (POOLS, ``model.Cloud.pools``) but bare-metal ones
    (Ironic's nodes run no collector), and every host with FACTS or
    PROBLEMS (the series name it)."""
    found = set(facts) | set(problems)
    for pool in pools.values():
        if pool['mode'] != pools_mod.BAREMETAL:
            found.update(pool['hosts'])
    return sorted(found)


def rows(hosts: Iterable[str], facts: Mapping[str, shapes.HostFacts],
         problems: Mapping[str, str], now: float
         ) -> list[dict[str, typing.Any]]:
    """The rows of HOSTS (in order), from FACTS ({compute host:
    HostFacts}, ``model.Cloud.host_facts``) and PROBLEMS ({compute host:
    why its series are not judged}) at NOW (epoch seconds)."""
    found = []
    for host in hosts:
        found += host_rows(host, facts.get(host), now, problems.get(host))
    return found
