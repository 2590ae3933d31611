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

"""Pure: the nova.conf settings the GPU pools need, and how to lay them out.

Input: the pools (``gpuclient.rules.pools.scan``), the provider trees of their
hosts (``trees_from_snapshot``) and, for MIG pools, the mdev type of each
profile when the operator gives it. Output (``build``): a ``Config``, that
is ``{target: {section: {key: value}}}`` where a target is ``ALL`` (every
Nova service), ``API``, ``SCHEDULER``, ``CONDUCTOR``, ``('host', <compute
host>)`` or ``PLACEMENT`` (placement.conf, where trees are wide:
``wide_trees``), and
a value is a string, or a list of strings for Nova's multi-valued options
(``[pci] alias`` and ``device_spec``); plus notes per target for what the
cloud cannot tell. Renderers: ``render_ini``, ``render_kolla`` (the
Kolla-Ansible override tree) and ``files`` (either layout, for writing);
what an existing configuration lacks or contradicts is
``gpuclient.rules.nova_conf.diff``.

Only keys gpuclient owns are produced:

========================  ===================================================
every service             ``[pci] alias`` of each passthrough pool;
                          ``[filter_scheduler] pci_in_placement`` (Nova
                          reads it in nova-api, nova-scheduler and every
                          nova-conductor)
nova-scheduler            ``[filter_scheduler] enabled_filters``;
                          ``[scheduler]
                          enable_isolated_aggregate_filtering``
passthrough host          ``[pci] device_spec``, ``report_in_placement``
vgpu / mig host           ``[devices] enabled_mdev_types``, ``[mdev_<type>]
                          device_addresses`` (and ``mdev_class``;
                          ``max_instances`` for a time-sliced type on
                          SR-IOV VFs, Nova 29+)
baremetal host            nothing (said so)
placement-api             ``[workarounds] optimize_for_wide_provider_trees``,
                          ``[placement]
                          allocation_candidates_generation_strategy`` and
                          ``max_allocation_candidates`` where a pool's trees
                          are wide (``wide_trees``; placement.conf)
========================  ===================================================

Where providers come from (Nova 34): the libvirt driver names a pGPU (or
SR-IOV VF) provider ``<nodename>_pci_0000_84_00_0`` (its libvirt node
device name), PCI in Placement names a device provider
``<nodename>_0000:41:00.0`` (the address in upper case).
"""

from __future__ import annotations

import collections
from collections.abc import Collection
from collections.abc import Iterable
from collections.abc import Mapping
import json
import re
import typing

from osc_lib import exceptions

from gpuclient.i18n import _
from gpuclient.rules import catalogue
from gpuclient.rules import pools as pools_mod
from gpuclient.rules import specs as specs_mod

if typing.TYPE_CHECKING:
    from gpuclient.rules import model

ALL = 'all'
API = 'nova-api'
SCHEDULER = 'nova-scheduler'
CONDUCTOR = 'nova-conductor'
# placement.conf of every placement-api (not a Nova service: wide_trees)
PLACEMENT = 'placement-api'
# the controller services that read [pci] alias and pci_in_placement
CONTROLLERS = (API, SCHEDULER, CONDUCTOR)
HOST = 'host'
# a target: ALL, API, SCHEDULER, CONDUCTOR, PLACEMENT or (HOST, compute host)
Target = str | tuple[str, str]
# what one target reads: {section: {key: value}}, a value a string or, for
# Nova's multi-valued options (MULTI_KEYS), a list of strings
Sections = dict[str, dict[str, str | list[str]]]

# Nova 34's default [filter_scheduler] enabled_filters, in its order
NOVA_DEFAULT_FILTERS = (
    'ComputeFilter', 'ComputeCapabilitiesFilter', 'ImagePropertiesFilter',
    'ServerGroupAntiAffinityFilter', 'ServerGroupAffinityFilter',
)
PCI_FILTER = 'PciPassthroughFilter'
AGGREGATE_FILTER = 'AggregateInstanceExtraSpecsFilter'
TENANT_FILTER = 'AggregateMultiTenancyIsolation'
NUMA_FILTER = 'NUMATopologyFilter'
GPU_FILTERS = (PCI_FILTER, AGGREGATE_FILTER, TENANT_FILTER, NUMA_FILTER)
# the alias policy of the seed and of `gpu flavor create`'s default
DEFAULT_NUMA_POLICY = 'preferred'
TRUE = 'true'
FALSE = 'false'
# NVIDIA GPUs' SR-IOV capability: the first VF is 4 functions after the
# PF, the next ones 1 apart (0000:a1:00.0 -> 0000:a1:00.4, 00.5, ...)
NVIDIA_VF_OFFSET = 4
NVIDIA_VF_STRIDE = 1

# options whose values are lists (oslo ListOpt): compared as sets
LIST_KEYS = {('filter_scheduler', 'enabled_filters'),
             ('devices', 'enabled_mdev_types')}
# options Nova reads several times (oslo MultiStrOpt): JSON values
MULTI_KEYS = {('pci', 'alias'), ('pci', 'device_spec')}
# sections only the controller services read: a compute host's file is
# not compared on them even though it reads the ALL target
CONTROLLER_SECTIONS = ('filter_scheduler', 'scheduler')
BOOL_KEYS = {('pci', 'report_in_placement'),
             ('libvirt', 'live_migration_permit_post_copy'),
             ('filter_scheduler', 'pci_in_placement'),
             ('scheduler', 'enable_isolated_aggregate_filtering')}

_LIBVIRT_PCI_RE = re.compile(
    r'pci_([0-9a-fA-F]{4})_([0-9a-fA-F]{2})_([0-9a-fA-F]{2})_([0-7])$')
_PLACEMENT_PCI_RE = re.compile(
    r'([0-9a-fA-F]{4}):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-7])$')


def host_target(host: str) -> tuple[str, str]:
    return (HOST, host)


def target_label(target: Target) -> str:
    if target == ALL:
        return _('every Nova service')
    if isinstance(target, tuple):
        return _('nova-compute on %s') % target[1]
    return target


def target_order(target: Target) -> tuple[int, str]:
    if target == ALL:
        return (0, '')
    if target == API:
        return (1, '')
    if target == SCHEDULER:
        return (2, '')
    if target == CONDUCTOR:
        return (3, '')
    if target == PLACEMENT:
        return (4, '')
    return (5, target[1])


class Config:
    """{target: {section: {key: value}}} plus notes per target."""

    def __init__(self) -> None:
        self.targets: dict[Target, Sections] = {}
        self.notes: dict[Target, list[str]] = {}

    def set(self, target: Target, section: str, key: str, value: str) -> None:
        self.targets.setdefault(target, {}).setdefault(section, {})[key] = (
            value)

    def add(self, target: Target, section: str, key: str, value: str) -> None:
        """Append to a multi-valued option, once per value."""
        values = self.targets.setdefault(target, {}).setdefault(
            section, {}).setdefault(key, [])
        if value not in values:
            # a multi-valued option's value is a list (only add sets it)
            values.append(value)  # type: ignore[union-attr]

    def note(self, target: Target, text: str) -> None:
        notes = self.notes.setdefault(target, [])
        if text not in notes:
            notes.append(text)

    def ordered(self) -> list[Target]:
        """Targets with settings or notes, in rendering order."""
        return sorted(set(self.targets) | set(self.notes), key=target_order)

    def effective(self, target: Target) -> Sections:
        """What one service reads: ALL, then its own settings."""
        merged: Sections = {}
        for part in (ALL, target) if target != ALL else (ALL,):
            for section, keys in self.targets.get(part, {}).items():
                into = merged.setdefault(section, {})
                for key, value in keys.items():
                    if isinstance(value, list):
                        into.setdefault(key, [])
                        # a list: set only by add, in every part
                        into[key] = into[key] + [  # type: ignore[operator]
                            v for v in value if v not in into[key]]
                    else:
                        into[key] = value
        return merged


# -- provider trees ------------------------------------------------------

def pci_address(name: str | None, root_name: str | None = None) -> str | None:
    """The PCI address a device provider's name carries, or None.

    ``gpu-1_pci_0000_84_00_0`` (libvirt pGPU / VF) and
    ``gpu-1.example_0000:41:00.0`` (PCI in Placement) both give
    ``0000:84:00.0`` / ``0000:41:00.0`` (lower case, as sysfs writes it).
    """
    if not name:
        return None
    tail = name
    if root_name and name.startswith(root_name + '_'):
        tail = name[len(root_name) + 1:]
    for regex in (_LIBVIRT_PCI_RE, _PLACEMENT_PCI_RE):
        found = regex.search(tail)
        if found:
            return '%s:%s:%s.%s' % tuple(g.lower() for g in found.groups())
    return None


ADDRESS_RE = re.compile(
    r'^([0-9a-f]{4}):([0-9a-f]{2}):([0-9a-f]{2})\.([0-7])$')


def card_address(address: str | None) -> str | None:
    """The PF address of the card a VF (or PF) address belongs to:
    ``0000:41:01.2`` -> ``0000:41:00.0`` (a GPU's VFs sit on its own bus);
    None for no address."""
    found = ADDRESS_RE.match(str(address or '').lower())
    if not found:
        return None
    return '%s:%s:00.0' % found.group(1, 2)


def trees_from_snapshot(
        snapshot: model.Placement, host_roots: Mapping[str, Iterable[str]]
) -> dict[str, list[dict[str, typing.Any]]]:
    """{host: [device provider]} from a model.Placement.

    A device provider is a non-root provider in the host's trees, as a dict:
    uuid, name, root_name, address (or None), resources ({class: devices})
    and traits (a set). ``host_roots`` maps each host to its root provider
    uuids. The devices of a class are its inventory total where the
    snapshot read it (``Placement.add_totals``): a device an operator or
    Nova reserved is still there (a VF reserved in Placement still needs
    its device_spec), else Placement's capacity.
    """
    trees = {}
    for host, roots in host_roots.items():
        devices = []
        for uuid in snapshot.providers_in_trees(roots):
            rp = snapshot.providers[uuid]
            if not rp['parent']:
                continue
            root_name = snapshot.providers.get(rp['root'], {}).get('name')
            summary = snapshot.summaries.get(uuid) or {}
            resources = {rc: item.get('capacity', 0) for rc, item in
                         (summary.get('resources') or {}).items()}
            resources.update(snapshot.totals.get(uuid) or {})
            devices.append({
                'uuid': uuid,
                'name': rp['name'],
                'root_name': root_name,
                'address': pci_address(rp['name'], root_name),
                'resources': resources,
                'traits': set(summary.get('traits') or ()),
            })
        trees[host] = sorted(devices, key=lambda d: d['name'])
    return trees


def from_cloud(
        cloud: model.Cloud, pool_names: Collection[str] = (),
        hosts: Collection[str] = (),
        mig_types: Mapping[str, str] | None = None,
        numa_policy: str | None = DEFAULT_NUMA_POLICY
) -> tuple[Config, list[str]]:
    """(Config, notes) from one ``model.Cloud`` (read with flavors).

    POOL_NAMES limit the pools (default: all), HOSTS (any name
    ``host_names`` resolves) the compute hosts shown; the controller part
    is always there. Notes are for the operator: what the snapshot says
    about itself and which host a name resolved to.
    """
    notes = [message for _agg, _pool, message in cloud.problems]
    # read with its Placement snapshot (ops.config_ops)
    notes += cloud.placement.notes()  # type: ignore[union-attr]
    chosen = dict(cloud.pools)
    if pool_names:
        for name in pool_names:
            if name not in cloud.pools:
                raise pools_mod.unknown_pool(name, cloud.pools)
        chosen = {n: cloud.pools[n] for n in pool_names}
    members = sorted({h for p in chosen.values() for h in p['hosts']})
    if hosts:
        hosts, resolved = cloud.resolve_hosts(hosts, members)
        notes += resolved
        for host in hosts:
            if host not in members:
                raise exceptions.CommandError(
                    _('Host %(host)s is in none of the pools shown (%(pools)s)'
                      ': see "openstack gpu host list" for its pools.')
                    % {'host': host,
                       'pools': ', '.join(sorted(chosen)) or _('none')})
    host_roots = cloud.host_roots()
    trees = trees_from_snapshot(
        cloud.placement,  # type: ignore[arg-type]
        {h: sorted(host_roots[h]) for h in members if host_roots.get(h)})
    config = build(chosen, trees, mig_types=mig_types,
                   numa_policy=numa_policy, flavors=cloud.flavors)
    if hosts:
        keep = {host_target(h) for h in hosts}
        for part in (config.targets, config.notes):
            for target in list(part):
                if isinstance(target, tuple) and target not in keep:
                    del part[target]
    return config, notes


# -- building --------------------------------------------------------------

def _json(data):
    return json.dumps(data, separators=(', ', ': '))


def default_pci_class(pci_id: str) -> str:
    vendor, _sep, product = pci_id.partition(':')
    return 'CUSTOM_PCI_%s_%s' % (vendor.upper(), product.upper())


def alias_json(pool: Mapping[str, typing.Any],
               numa_policy: str | None = DEFAULT_NUMA_POLICY) -> str:
    """The ``[pci] alias`` value of a passthrough or vgpu-vf pool."""
    if pool['mode'] == pools_mod.VGPU_VF:
        # Nova's kernel variant driver recipe: the VF's class picks the
        # vGPU type; type-VF, so a whole PF never matches
        data = {'name': pool['alias'], 'device_type': 'type-VF',
                'resource_class': pool['resource_class']}
        if pool.get('live_migratable'):
            data['live_migratable'] = 'yes'
        if numa_policy:
            data['numa_policy'] = numa_policy
        return _json(data)
    vendor, _sep, product = pool['pci_id'].partition(':')
    data = {'name': pool['alias'], 'vendor_id': vendor,
            'product_id': product, 'device_type': 'type-PCI'}
    if pool['resource_class'] != default_pci_class(pool['pci_id']):
        # Nova: an alias with resource_class asks Placement for that class
        data['resource_class'] = pool['resource_class']
    if pool.get('live_migratable'):
        data['live_migratable'] = 'yes'
    if numa_policy:
        data['numa_policy'] = numa_policy
    return _json(data)


def shared_alias_json(name: str, resource_class: str,
                      numa_policy: str | None) -> str:
    """One ``[pci] alias`` for pools of one class but several PCI ids:
    the class alone (Nova 34 accepts an alias without vendor_id and
    product_id when it names a resource_class)."""
    data = {'name': name, 'device_type': 'type-PCI',
            'resource_class': resource_class}
    if numa_policy:
        data['numa_policy'] = numa_policy
    return _json(data)


def alias_groups(
        pools: Iterable[dict[str, typing.Any]]
) -> dict[str, list[dict[str, typing.Any]]]:
    """{alias name: [passthrough pool]} of every alias, pools by name."""
    groups: dict[str, list[dict[str, typing.Any]]] = {}
    for pool in sorted(pools, key=lambda p: p['name']):
        if pool['mode'] in pools_mod.PCI_MODES and pool.get('alias'):
            groups.setdefault(pool['alias'], []).append(pool)
    return groups


def alias_conflicts(
        pools: Iterable[dict[str, typing.Any]]
) -> list[tuple[str, list[dict[str, typing.Any]], str | None]]:
    """[(alias, [pools], shared class or None)] for aliases that pools of
    different PCI ids or classes share.

    Nova keeps one spec per alias name when ``pci_in_placement`` is on
    (two ``alias`` lines with one name: PciInvalidAlias). Pools of one
    class can share the alias through that class alone (shared class
    given); pools of different classes cannot (None).
    """
    found = []
    for name, group in sorted(alias_groups(pools).items()):
        kinds = {(p['pci_id'], p['resource_class']) for p in group}
        if len(kinds) < 2:
            continue
        classes = {p['resource_class'] for p in group}
        found.append((name, group,
                      classes.pop() if len(classes) == 1 else None))
    return found


def alias_policy(
        alias: str, flavors: Iterable[Mapping[str, typing.Any]] | None,
        default: str | None = DEFAULT_NUMA_POLICY
) -> tuple[str | None, str | None]:
    """(numa_policy of an alias, note or None) from the flavors asking
    for it: their ``hw:pci_numa_affinity_policy`` when they agree, else
    DEFAULT, with a note that it is assumed. ``flavors``: dicts with
    ``extra_specs``, or None when not read."""
    if flavors is None:
        return default, _(
            'Alias %(alias)s: numa_policy %(policy)s is assumed '
            '(--numa-policy); the flavors were not read.') % {
                'alias': alias, 'policy': default}
    seen: dict[str, list[str]] = {}
    for flavor in flavors:
        extra = flavor.get('extra_specs') or {}
        if alias not in specs_mod.parse_aliases(
                extra.get(specs_mod.ALIAS_SPEC)):
            continue
        policy = extra.get(specs_mod.NUMA_SPEC)
        if policy:
            # a flavor has an id
            seen.setdefault(policy, []).append(
                flavor.get('name')
                or flavor.get('id'))  # type: ignore[arg-type]
    if len(seen) == 1:
        return next(iter(seen)), None
    if not seen:
        return default, _(
            'Alias %(alias)s: numa_policy %(policy)s is assumed '
            '(--numa-policy): no flavor asking for it sets '
            'hw:pci_numa_affinity_policy.') % {
                'alias': alias, 'policy': default}
    return default, _(
        'Alias %(alias)s: its flavors set different '
        'hw:pci_numa_affinity_policy (%(seen)s), so numa_policy '
        '%(policy)s is assumed (--numa-policy); each flavor\'s own policy '
        'overrides it.') % {
            'alias': alias, 'policy': default,
            'seen': '; '.join('%s: %s' % (p, ', '.join(sorted(f)))
                              for p, f in sorted(seen.items()))}


def _add_aliases(config, pools, flavors, numa_policy):
    conflicts = {name: shared for name, _group, shared
                 in alias_conflicts(pools)}
    for name, group in sorted(alias_groups(pools).items()):
        policy, note = alias_policy(name, flavors, numa_policy)
        if note:
            config.note(ALL, note)
        if name not in conflicts:
            config.add(ALL, 'pci', 'alias', alias_json(group[0], policy))
            continue
        labels = ', '.join('%s (%s, %s)' % (
            p['name'], p['pci_id'], p['resource_class']) for p in group)
        shared = conflicts[name]
        if shared:
            # Nova refuses two alias lines of one name when
            # pci_in_placement is on: the shared class alone selects both
            config.add(ALL, 'pci', 'alias',
                       shared_alias_json(name, shared, policy))
            config.note(ALL, _(
                'Alias %(alias)s is shared by pools %(pools)s: Nova takes '
                'one spec per alias with pci_in_placement, so the alias '
                'names their common resource class only.') % {
                    'alias': name, 'pools': labels})
            continue
        # different classes: no one alias Nova accepts selects both, so
        # the first pool's only; the others' flavors find no host
        config.add(ALL, 'pci', 'alias', alias_json(group[0], policy))
        config.note(ALL, _(
            'Alias %(alias)s is shared by pools %(pools)s of different '
            'resource classes: Nova takes one spec per alias with '
            'pci_in_placement (two would be refused: PciInvalidAlias), so '
            'only %(first)s\'s is written and the flavors of %(others)s get '
            '"No valid host". Fix: one alias per PCI id (recreate a pool '
            'with its own --alias), or one --resource-class for both '
            'pools.') % {
                'alias': name, 'pools': labels, 'first': group[0]['name'],
                'others': ', '.join(p['name'] for p in group[1:])})


def device_spec_json(pool: Mapping[str, typing.Any],
                     address: str | None = None) -> str:
    """The ``[pci] device_spec`` value of a passthrough pool, or of one VF
    (at ADDRESS) of a vgpu-vf pool."""
    vendor, _sep, product = pool['pci_id'].partition(':')
    data = {'vendor_id': vendor, 'product_id': product}
    if address:
        # NVIDIA's VFs share the PF's vendor:product: the address keeps
        # the PF (and VFs without a vGPU type) out
        data['address'] = address
    if pool['mode'] == pools_mod.VGPU_VF:
        # the VFIO variant driver holds the VF: libvirt must not detach it
        data['managed'] = 'no'
    if pool.get('live_migratable'):
        data['live_migratable'] = 'yes'
    if pool['resource_class'] != default_pci_class(pool['pci_id']):
        data['resource_class'] = pool['resource_class']
    return _json(data)


def vf_addresses(pf_address: str | None, count: int) -> list[str]:
    """The first COUNT VF addresses of an NVIDIA PF (NVIDIA_VF_OFFSET,
    NVIDIA_VF_STRIDE), as sysfs names them; [] for a malformed address."""
    found = _PLACEMENT_PCI_RE.fullmatch(pf_address or '')
    if not found:
        return []
    domain, bus, slot, func = found.groups()
    base = int(bus, 16) * 256 + int(slot, 16) * 8 + int(func)
    addresses = []
    for index in range(count):
        number = base + NVIDIA_VF_OFFSET + index * NVIDIA_VF_STRIDE
        addresses.append('%s:%02x:%02x.%d' % (
            domain.lower(), number // 256, (number % 256) // 8, number % 8))
    return addresses


def _filters(pools):
    wanted = set()
    for pool in pools:
        wanted.add(AGGREGATE_FILTER)
        if pool['mode'] in pools_mod.PCI_MODES:
            # flavors carry hw:pci_numa_affinity_policy, and the alias a
            # numa_policy: NUMATopologyFilter makes them count
            wanted.update((PCI_FILTER, NUMA_FILTER))
        if pool.get('projects'):
            wanted.add(TENANT_FILTER)
    return list(NOVA_DEFAULT_FILTERS) + [
        f for f in GPU_FILTERS if f in wanted]


def _mdev_devices(pool, devices):
    """The device providers of a host that serve a vgpu/mig pool's type."""
    rc = pool['resource_class']
    if rc != 'VGPU':
        return [d for d in devices if rc in d['resources']]
    owned = set(pools_mod.owned_traits(pool.get('metadata') or {}))
    trait = pool.get('type_trait')
    return [d for d in devices if 'VGPU' in d['resources'] and (
        (trait and trait in d['traits']) or d['uuid'] in owned)]


def _pool_type(pool, mig_types):
    if pool['mode'] == pools_mod.VGPU:
        return pool['vgpu_type']
    return (mig_types or {}).get(pool['mig_profile'])


def build(
        pools: Mapping[str, dict[str, typing.Any]],
        trees: Mapping[str, list[dict[str, typing.Any]]],
        mig_types: Mapping[str, str] | None = None,
        numa_policy: str | None = DEFAULT_NUMA_POLICY,
        flavors: Collection[Mapping[str, typing.Any]] | None = None) -> Config:
    """The Config the pools need (see the module doc).

    ``pools``: {name: pool} as ``pools.scan`` returns them; ``trees``:
    {host: [device provider]} from ``trees_from_snapshot`` for the pools'
    hosts (a host missing there is said to have no provider in Placement);
    ``mig_types``: {MIG profile: mdev type}, which the cloud does not
    record; ``flavors`` (dicts with ``extra_specs``, or None when not
    read) give each alias its numa_policy (``alias_policy``), else
    ``numa_policy``.
    """
    config = Config()
    chosen = [pools[name] for name in sorted(pools)]
    if not chosen:
        config.note(ALL, _('No GPU pool: nothing to configure (see '
                           '"openstack gpu pool list").'))
        return config
    _add_aliases(config, chosen, flavors, numa_policy)
    wide = wide_trees(pools, trees, flavors)
    if wide:
        wide_trees_settings(config, wide)
    config.set(SCHEDULER, 'filter_scheduler', 'enabled_filters',
               ','.join(_filters(chosen)))
    config.note(SCHEDULER, _(
        'enabled_filters: Nova\'s default filters plus those the pools '
        'need; keep any other filter you enable.'))
    if any(p['mode'] in pools_mod.PCI_MODES for p in chosen):
        # Nova 34: read by nova-api, nova-scheduler and every
        # nova-conductor, so in the file every service reads
        config.set(ALL, 'filter_scheduler', 'pci_in_placement', TRUE)
    if any(p['isolate'] for p in chosen):
        config.set(SCHEDULER, 'scheduler',
                   'enable_isolated_aggregate_filtering', TRUE)
    hosts = sorted({h for p in chosen for h in p['hosts']})
    for host in hosts:
        _build_host(config, host, [p for p in chosen if host in p['hosts']],
                    trees, mig_types)
    return config


def post_copy_needed(pool: Mapping[str, typing.Any]) -> bool:
    """Does POOL's host live-migrate servers with VFIO devices?

    A live-migratable passthrough or vgpu-vf pool (Nova 2025.1: PCI
    devices marked ``live_migratable``), and every vgpu or mig pool
    (mediated devices, also VFIO; Nova live-migrates vGPU servers since
    2024.1). QEMU refuses post-copy with a VFIO device (QEMU commit
    bf7ef7a2da3e, "vfio/migration: Block VFIO migration with postcopy
    migration": the destination crashes on a page fault it cannot take),
    so Nova's ``[libvirt] live_migration_permit_post_copy`` must be False
    on these hosts. Nova 34's default is False (nova/conf/libvirt.py);
    gpuclient writes it anyway, since deployment tools often turn it on.
    """
    if pool['mode'] in (pools_mod.VGPU, pools_mod.MIG):
        return True
    return bool(pool['mode'] in (pools_mod.PASSTHROUGH, pools_mod.VGPU_VF)
                and pool.get('live_migratable'))


# Placement's "When to enable" of [workarounds]
# optimize_for_wide_provider_trees (placement/conf/workarounds.py, bug
# 2126751): "at least 8 child resource providers within a tree providing
# inventory of the same resource class" and "VMs with more than 4 such
# resources"
WIDE_TREE_CHILDREN = 8
WIDE_TREE_ASKED = 4
# Placement's advice beside it: max_allocation_candidates "not more than
# 1000" once the optimisation is needed, and breadth-first generation so
# the candidates kept spread over every host (bug 2070257)
PLACEMENT_MAX_CANDIDATES = '1000'
BREADTH_FIRST = 'breadth-first'
# Where the settings come from (openstack/placement's release notes
# bug-2126751-optimize_for_wide_provider_trees and
# bug-2070257-allocation-candidates-generation-limit-and-strategy, and the
# tags that hold them): optimize_for_wide_provider_trees from Placement
# 15.0.0 (2026.1), backported to stable/2025.2, stable/2025.1 and
# stable/2024.2; max_allocation_candidates and
# allocation_candidates_generation_strategy from Placement 13.0.0 (2025.1),
# backported to 11.0.1 (2024.1), stable/2024.2 and stable/2023.2. Nova 34
# has none of them (nova/conf): they are placement.conf's.
# placement.conf where trees are wide: (section, key, value)
WIDE_TREE_SETTINGS = (
    ('workarounds', 'optimize_for_wide_provider_trees', TRUE),
    ('placement', 'max_allocation_candidates', PLACEMENT_MAX_CANDIDATES),
    ('placement', 'allocation_candidates_generation_strategy',
     BREADTH_FIRST),
)


def wide_trees_unset(
        placement: Mapping[str, typing.Any]) -> list[tuple[str, str, str]]:
    """The WIDE_TREE_SETTINGS that PLACEMENT (``load_settings``'s
    ``placement``: what the given files say, Placement's defaults
    otherwise) does not have: optimize_for_wide_provider_trees off,
    max_allocation_candidates unlimited (-1) or above 1000, depth-first
    generation."""
    wrong = {
        'optimize_for_wide_provider_trees':
            not placement['optimize_for_wide_provider_trees'],
        'max_allocation_candidates': not (
            0 < placement['max_allocation_candidates']
            <= int(PLACEMENT_MAX_CANDIDATES)),
        'allocation_candidates_generation_strategy':
            placement['allocation_candidates_generation_strategy']
            != BREADTH_FIRST,
    }
    return [item for item in WIDE_TREE_SETTINGS if wrong[item[1]]]


def _flavor_asks(reading, name, pool):
    """How many of POOL's devices one server of a flavor asks (0: the
    flavor cannot land in POOL, named NAME, or asks none of them)."""
    steered = ([reading['pool']] if reading['pool']
               else specs_mod.matching_pools(reading, {name: pool}))
    if reading['steering'] and name not in steered:
        return 0
    by_alias = reading['aliases'].get(pool.get('alias'), 0) if pool.get(
        'alias') else 0
    return max(by_alias,
               reading['gpu_classes'].get(pool.get('resource_class'), 0))


def wide_trees(
        pools: Mapping[str, dict[str, typing.Any]],
        trees: Mapping[str, list[dict[str, typing.Any]]],
        flavors: Iterable[Mapping[str, typing.Any]] | None
) -> list[dict[str, typing.Any]]:
    """Pools whose hosts have wide provider trees that a flavor asks many
    devices of: [{pool, host, children, flavor, asked}], by pool name.

    A pool is there when one of its hosts has at least WIDE_TREE_CHILDREN
    child providers with inventory of the pool's class (PCI in Placement
    devices, VFs, pGPUs of vGPU and MIG) and a GPU flavor that can land in
    it asks more than WIDE_TREE_ASKED of them. Then Placement's candidate
    generation (every combination of the children, bug 2126751) takes too
    long and boots fail, unless placement.conf has WIDE_TREE_SETTINGS
    (``[workarounds] optimize_for_wide_provider_trees = True``, and
    ``[placement] max_allocation_candidates`` with breadth-first
    generation; releases above). They are Placement's options
    (placement/conf/workarounds.py and placement.py), not Nova's.
    FLAVORS: dicts with ``extra_specs`` (None: not read, nothing found).
    """
    found = []
    for name, pool in sorted(pools.items()):
        rc = pool.get('resource_class')
        widest = max(((sum(1 for d in trees.get(host) or ()
                           if d['resources'].get(rc, 0) > 0), host)
                      for host in pool['hosts']), default=(0, None))
        if widest[0] < WIDE_TREE_CHILDREN:
            continue
        asks = sorted(
            ((_flavor_asks(specs_mod.read(f.get('extra_specs'), pools),
                           name, pool), f.get('name') or f['id'])
             for f in flavors or ()), key=lambda item: (-item[0], item[1]))
        if not asks or asks[0][0] <= WIDE_TREE_ASKED:
            continue
        found.append({'pool': name, 'host': widest[1],
                      'children': widest[0], 'flavor': asks[0][1],
                      'asked': asks[0][0]})
    return found


def wide_trees_settings(config: Config,
                        wide: Iterable[Mapping[str, typing.Any]]) -> None:
    """placement.conf for the pools ``wide_trees`` found (WIDE)."""
    for section, key, value in WIDE_TREE_SETTINGS:
        config.set(PLACEMENT, section, key, value)
    for item in wide:
        config.note(PLACEMENT, wide_tree_text(item))
    config.note(PLACEMENT, wide_trees_releases())
    config.note(PLACEMENT, _(
        'Keep Nova\'s [scheduler] max_placement_results at or below '
        'max_allocation_candidates.'))


def wide_trees_releases() -> str:
    """Where the WIDE_TREE_SETTINGS are and which Placement has them."""
    return _(
        'placement.conf of every placement-api, not nova.conf. '
        'optimize_for_wide_provider_trees: Placement 15.0.0 (2026.1), '
        'backported to 2025.2, 2025.1 and 2024.2; max_allocation_candidates '
        'and allocation_candidates_generation_strategy: Placement 13.0.0 '
        '(2025.1), backported to 11.0.1 (2024.1), 2024.2 and 2023.2.')


def wide_tree_text(item: Mapping[str, typing.Any]) -> str:
    """Why one pool's trees are wide (an item of ``wide_trees``)."""
    return _(
        'Pool %(pool)s: host %(host)s has %(children)d child providers of '
        'its class and flavor %(flavor)s asks %(asked)d of them: '
        'Placement tries every combination of them (bug 2126751) and '
        'boots fail with "No valid host" once it takes too long.') % item


def post_copy_off(config: Config, target: Target) -> None:
    config.set(target, 'libvirt', 'live_migration_permit_post_copy', FALSE)


def _build_vf_pool(config, target, host, pool, devices):
    """A vgpu-vf pool on one host: a device_spec per VF that carries the
    pool's type (its PF's provider says how many), report_in_placement,
    and, for live migration, post-copy off (Nova refuses live migration
    of VFIO devices with it)."""
    rc = pool['resource_class']
    cards = [d for d in devices if rc in d['resources']]
    written = 0
    for card in cards:
        for address in vf_addresses(card['address'],
                                    int(card['resources'][rc])):
            config.add(target, 'pci', 'device_spec',
                       device_spec_json(pool, address))
            written += 1
    config.set(target, 'pci', 'report_in_placement', TRUE)
    if pool.get('live_migratable'):
        post_copy_off(config, target)
    if written:
        config.note(target, _(
            'Pool %(pool)s: VF addresses follow from each card\'s PF and '
            'the %(rc)s inventory total of its provider, reserved VFs '
            'included (NVIDIA: first VF at function '
            '+%(offset)d); check them against the VFs whose '
            'nvidia/current_vgpu_type is %(type)s.') % {
                'pool': pool['name'], 'rc': rc, 'offset': NVIDIA_VF_OFFSET,
                'type': pool.get('vgpu_type')})
        return
    config.note(target, _(
        'Pool %(pool)s: no %(rc)s provider on %(host)s in Placement yet: '
        'add one device_spec per VF carrying %(type)s, e.g. %(example)s, '
        'and restart nova-compute.') % {
            'pool': pool['name'], 'rc': rc, 'host': host,
            'type': pool.get('vgpu_type'),
            'example': device_spec_json(pool, '0000:a1:00.4')})


def _build_host(config, host, pools, trees, mig_types):
    target = host_target(host)
    devices = trees.get(host)
    if devices is None:
        config.note(target, _(
            'No compute node of %s in Placement: its provider tree could '
            'not be read, so only what the pools record is written.')
            % host)
        devices = []
    types = {}  # mdev type -> {'addresses': [...], 'class': rc}
    for pool in pools:
        mode = pool['mode']
        if mode == pools_mod.BAREMETAL:
            config.note(target, _(
                'Pool %(pool)s (baremetal): nothing in nova.conf; the '
                'Ironic nodes report %(rc)s from their resource_class.')
                % {'pool': pool['name'], 'rc': pool['resource_class']})
            continue
        if mode == pools_mod.PASSTHROUGH and post_copy_needed(pool):
            post_copy_off(config, target)
        if mode == pools_mod.PASSTHROUGH:
            config.add(target, 'pci', 'device_spec', device_spec_json(pool))
            config.set(target, 'pci', 'report_in_placement', TRUE)
            if not [d for d in devices
                    if pool['resource_class'] in d['resources']]:
                config.note(target, _(
                    'Pool %(pool)s: no %(rc)s provider on %(host)s in '
                    'Placement yet; nova-compute creates them once it runs '
                    'with this device_spec.')
                    % {'pool': pool['name'], 'rc': pool['resource_class'],
                       'host': host})
            continue
        if mode == pools_mod.VGPU_VF:
            _build_vf_pool(config, target, host, pool, devices)
            continue
        mdev_type = _pool_type(pool, mig_types)
        serving = _mdev_devices(pool, devices)
        addresses = sorted(d['address'] for d in serving if d['address'])
        unnamed = sorted(d['name'] for d in serving if not d['address'])
        if unnamed:
            config.note(target, _(
                'Pool %(pool)s: providers %(rps)s carry no PCI address in '
                'their name; add their addresses by hand.')
                % {'pool': pool['name'], 'rps': ', '.join(unnamed)})
        if not mdev_type:
            config.note(target, _(
                'Pool %(pool)s: the cloud does not record which mdev type '
                'serves MIG profile %(profile)s, so [devices] and [mdev_*] '
                'are not written for it (VFs: %(addr)s). Give it with '
                '--mig-mdev-type %(profile)s=<type> (see '
                'mdev_supported_types/*/name on the host).')
                % {'pool': pool['name'], 'profile': pool['mig_profile'],
                   'addr': ', '.join(addresses) or _('none found')})
            continue
        entry = types.setdefault(mdev_type, {'addresses': [], 'class': None,
                                             'vgpu': {}})
        entry['addresses'] += [a for a in addresses
                               if a not in entry['addresses']]
        if pool['resource_class'] != 'VGPU':
            entry['class'] = pool['resource_class']
        if mode == pools_mod.VGPU:
            entry['vgpu'][pool['name']] = (pool.get('properties') or {}).get(
                pools_mod.VGPU_PROFILE_PROPERTY)
    mine = {uuid for entry in [_mdev_devices(p, devices) for p in pools
                               if p['mode'] in (pools_mod.VGPU,
                                                pools_mod.MIG)]
            for uuid in (d['uuid'] for d in entry)}
    untagged = sorted(d['address'] or d['name'] for d in devices
                      if 'VGPU' in d['resources'] and d['uuid'] not in mine)
    if untagged and any(p['mode'] in (pools_mod.VGPU, pools_mod.MIG)
                        for p in pools):
        config.note(target, _(
            'pGPUs %(rps)s offer VGPU but carry no pool\'s type trait: the '
            'cloud cannot tell their mdev type, so they are left out. Tag '
            'them by adding the host to the pool that should use them.')
            % {'rps': ', '.join(untagged)})
    for mdev_type in sorted(types):
        if types[mdev_type]['addresses']:
            continue
        # Nova 34 (libvirt driver, _get_supported_vgpu_types): an enabled
        # type without [mdev_<type>] device_addresses becomes the type of
        # every pGPU no other type lists
        owners = ', '.join(sorted(p['name'] for p in pools if _pool_type(
            p, mig_types) == mdev_type))
        if len(types) > 1 or untagged:
            del types[mdev_type]
            config.note(target, _(
                'Type %(type)s (pool %(pool)s): no pGPU of %(host)s is '
                'known to serve it, so it is left out of enabled_mdev_types:'
                ' without [mdev_%(type)s] device_addresses Nova would make '
                'it the type of every pGPU not listed for another type. '
                'Run "openstack gpu pool add host %(pool)s %(host)s" once '
                'the host reports VGPU.')
                % {'pool': owners, 'host': host, 'type': mdev_type})
        else:
            config.note(target, _(
                'Type %(type)s (pool %(pool)s): no pGPU of %(host)s is '
                'known yet, so [mdev_%(type)s] device_addresses is not '
                'written and Nova uses %(type)s for every pGPU of the host. '
                'Run "openstack gpu pool add host %(pool)s %(host)s" once '
                'the host reports VGPU to list them.')
                % {'pool': owners, 'host': host, 'type': mdev_type})
    if types:
        # mediated devices are VFIO devices too: post_copy_needed
        post_copy_off(config, target)
        config.set(target, 'devices', 'enabled_mdev_types',
                   ','.join(sorted(types)))
        for mdev_type in sorted(types):
            section = 'mdev_%s' % mdev_type
            if types[mdev_type]['addresses']:
                config.set(target, section, 'device_addresses',
                           ','.join(types[mdev_type]['addresses']))
            if types[mdev_type]['class']:
                config.set(target, section, 'mdev_class',
                           types[mdev_type]['class'])
            limit = _max_instances(config, target, mdev_type,
                                   types[mdev_type])
            if limit:
                config.set(target, section, 'max_instances', str(limit))


def _max_instances(config, target, mdev_type, entry):
    """``[mdev_<type>] max_instances`` of a time-sliced type served by
    SR-IOV VFs, or None (noted when it cannot be told).

    Nova 29+ (libvirt driver, _get_gpu_inventories): on SR-IOV GPUs (Ampere
    and later) each VF reports one available mdev, so Nova cannot tell how
    many vGPUs of the type a GPU allows; ``max_instances`` caps the host's
    total of the type (Nova's virtual-gpu guide). That is the type's
    vGPUs per GPU (the catalogue, from the pool's ``vgpu_profile``
    property) times the GPUs whose VFs serve it."""
    vfs = [a for a in entry['addresses'] if a != card_address(a)]
    if not vfs or not entry.get('vgpu'):
        return None
    named = {catalogue.vgpu_type(v) if v else None
             for v in entry['vgpu'].values()}
    owners = ', '.join(sorted(entry['vgpu']))
    if None in named or len(named) != 1:
        config.note(target, _(
            'Type %(type)s (pool %(pool)s) is served by SR-IOV VFs: Nova '
            'needs [mdev_%(type)s] max_instances (vGPUs of the type per GPU '
            'times the GPUs), which is not written because the NVIDIA vGPU '
            'type is not known. Record it: "openstack gpu pool set %(pool)s '
            '--property %(key)s=<vGPU type>" (see "openstack gpu profile '
            'list").') % {'type': mdev_type, 'pool': owners,
                         'key': pools_mod.VGPU_PROFILE_PROPERTY})
        return None
    [(model, vgpu)] = named
    cards = collections.Counter(card_address(a) for a in vfs)
    crowded = sorted(c for c, n in cards.items() if n > vgpu.max_count)
    if crowded:
        config.note(target, _(
            'Type %(type)s (%(vgpu)s, %(n)d per GPU): Nova caps the host at '
            'max_instances, not each GPU; GPUs %(cards)s have more VFs in '
            'device_addresses, so a boot may land on a full GPU: list at '
            'most %(n)d VFs of each.')
            % {'type': mdev_type, 'vgpu': vgpu.name, 'n': vgpu.max_count,
               'cards': ', '.join(crowded)})
    return vgpu.max_count * len(cards)


# -- rendering ---------------------------------------------------------------

def comment_lines(text: str, width: int = 76) -> list[str]:
    lines, line = [], '#'
    for word in text.split():
        if len(line) + 1 + len(word) > width and line != '#':
            lines.append(line)
            line = '#'
        line += ' ' + word
    lines.append(line)
    return lines


def render_target(config: Config, target: Target, header: bool = True) -> str:
    """The nova.conf text of one target (sections in a stable order)."""
    lines = []
    if header:
        lines += comment_lines(_('gpuclient: %s') % target_label(target))
    for note in config.notes.get(target, ()):
        lines += comment_lines(note)
    for section in sorted(config.targets.get(target, {})):
        keys = config.targets[target][section]
        lines.append('[%s]' % section)
        for key in sorted(keys):
            values = keys[key] if isinstance(keys[key], list) else [keys[key]]
            lines += ['%s = %s' % (key, value) for value in values]
    return '\n'.join(lines) + '\n'


def render_ini(config: Config) -> str:
    """Every target's sections, one block per service or host."""
    return '\n'.join(render_target(config, t) for t in config.ordered())


KOLLA_ALL = 'nova.conf'
KOLLA_COMPUTE = 'nova/nova-compute.conf'
# what Kolla-Ansible merges into every placement service's placement.conf
KOLLA_PLACEMENT = 'placement.conf'


def file_part(name: object) -> str:
    """NAME (cloud data: a compute host, a pool) as one safe component of
    a file path: the same text where it is one already (host names and
    FQDNs are), else path separators and NUL made ``_`` and leading dots
    dropped, so that ``../../x`` cannot leave the output directory."""
    text = re.sub(r'[/\\\x00]', '_', str(name)).lstrip('.')
    return text or '_'


def kolla_path(target: Target) -> str:
    """Where Kolla-Ansible reads a target's overrides, relative to
    ``/etc/kolla/config`` (``node_custom_config``)."""
    if target == ALL:
        return KOLLA_ALL
    if target == PLACEMENT:
        return KOLLA_PLACEMENT
    if isinstance(target, tuple):
        return 'nova/%s/nova.conf' % file_part(target[1])
    return 'nova/%s.conf' % file_part(target)


def ini_path(target: Target) -> str:
    """File names for ``--layout ini --output-dir``."""
    if target == ALL:
        return 'nova.conf'
    if target == PLACEMENT:
        return KOLLA_PLACEMENT
    if isinstance(target, tuple):
        return 'nova-compute-%s.conf' % file_part(target[1])
    return '%s.conf' % file_part(target)


def files(config: Config, layout: str = 'kolla') -> list[tuple[str, str]]:
    """[(relative path, text)] for the layout ('kolla' or 'ini')."""
    path = kolla_path if layout == 'kolla' else ini_path
    return [(path(t), render_target(config, t)) for t in config.ordered()]


def render_kolla(config: Config) -> str:
    """The Kolla-Ansible tree as one text, each file under its path."""
    parts = []
    for path, text in files(config, 'kolla'):
        parts.append('# ==> %s <==\n%s' % (path, text))
    return '\n'.join(parts)


def kolla_reads(target: Target) -> list[str]:
    """The override files Kolla merges for a target, in its order."""
    if target == ALL:
        return ['global.conf', KOLLA_ALL]
    if isinstance(target, tuple):
        return ['global.conf', KOLLA_ALL, KOLLA_COMPUTE,
                kolla_path(target)]
    return ['global.conf', KOLLA_ALL, kolla_path(target)]
