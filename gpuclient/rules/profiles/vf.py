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

"""``gpu profile plan --pool`` for vgpu-vf pools: vGPU types on the VFs.

On SR-IOV vGPU cards (NVIDIA's current host drivers) each VF gets a vGPU
type written into ``/sys/bus/pci/devices/<VF>/nvidia/current_vgpu_type``
after ``sriov-manage -e`` made the VFs, and Nova passes the VF through
(``[pci] device_spec`` per VF with the pool's ``resource_class``).

The plan is in NVIDIA's equal-size mode: one vGPU type per card, on as many
VFs as the type's maximum per GPU (the catalogue's ``max_count``). NVIDIA's
mixed-size (heterogeneous) mode puts types of different frame buffer sizes
on one GPU, but Nova cannot place them: a vgpu-vf pool's VFs report in
Placement with the pool's resource class, and Nova refuses VFs of one PF
with different resource classes
(``PlacementPciMixedResourceClassException``), so each card serves one
pool.

Plain data in and out: a card is ``{'id', 'host', 'address' (the PF),
'board', 'current': {vGPU type: VFs}, 'in_use': VFs in use}``; the demand
is ``{vGPU type: count}`` (catalogue names).
"""

from __future__ import annotations

import collections
from collections.abc import Iterable
from collections.abc import Mapping
import re
import typing

from gpuclient.i18n import _
from gpuclient.rules import catalogue
from gpuclient.rules import pools as pools_mod
from gpuclient.rules import specs as specs_mod
from gpuclient.rules.nova_conf import render as nova_config

SRIOV_MANAGE = '/usr/lib/nvidia/sriov-manage'
SYSFS = '/sys/bus/pci/devices'


class CannotPlan(ValueError):
    """A demand or a pool the VF plan cannot take."""


def pool_types(
        pools: Iterable[dict[str, typing.Any]]
) -> dict[str, dict[str, typing.Any]]:
    """{vGPU type (catalogue name): pool} of vgpu-vf POOLS; a type the
    catalogue does not know, or served by two pools, is refused."""
    found: dict[str, dict[str, typing.Any]] = {}
    for pool in pools:
        entry = vgpu(pool.get('vgpu_type') or '')
        if entry is None:
            raise CannotPlan(_(
                'Pool %(pool)s serves vGPU type %(type)s, which the '
                'catalogue does not know: see "openstack gpu profile list '
                '--long" for the types of each board.')
                % {'pool': pool['name'], 'type': pool.get('vgpu_type')})
        name = entry.name
        if name in found:
            raise CannotPlan(_(
                'Pools %(one)s and %(two)s both serve %(type)s: plan one '
                'of them.') % {'one': found[name]['name'],
                               'two': pool['name'], 'type': name})
        found[name] = pool
    return found


def wanted(entries: Mapping[str, int],
           flavors: Iterable[Mapping[str, typing.Any]] | None,
           pools: Mapping[str, dict[str, typing.Any]],
           types: Mapping[str, Mapping[str, typing.Any]]) -> dict[str, int]:
    """{vGPU type: count} from ``--demand`` ENTRIES ({flavor or vGPU type:
    count}): a flavor of a vgpu-vf pool asks for its pool's type times its
    devices (the pool it is steered to, else the one whose alias it asks
    for); TYPES ({type: pool}) are the types the chosen pools serve."""
    by_name = {f.get('name'): f for f in flavors or ()}
    pool_type = {p['name']: t for t, p in types.items()}
    of_alias = {p['alias']: t for t, p in types.items() if p.get('alias')}
    found: dict[str, int] = {}
    for text, count in entries.items():
        flavor = by_name.get(text)
        if flavor is not None:
            reading = specs_mod.read(flavor.get('extra_specs') or {}, pools)
            name = pool_type.get(reading['pool'] or '')
            if name is None:
                # a flavor not steered to a pool asks by the pool's alias
                named = [of_alias[a] for a in reading['aliases']
                         if a in of_alias]
                name = named[0] if len(named) == 1 else None
            if name is None:
                raise CannotPlan(_(
                    'Flavor %(flavor)s asks for none of the planned '
                    'vgpu-vf pools (%(pools)s): give a flavor of one of '
                    'them or a vGPU type (e.g. --demand %(example)s=4).')
                    % {'flavor': text, 'pools': ', '.join(sorted(pool_type)),
                       'example': sorted(types)[0]})
            count = count * (reading['gpus'] or 1)
        else:
            entry = vgpu(text)
            if entry is None or entry.name not in types:
                raise CannotPlan(_(
                    '%(name)r is no flavor and no vGPU type of the planned '
                    'pools: give one of %(types)s or a flavor of those '
                    'pools.') % {'name': text,
                                 'types': ', '.join(sorted(types))})
            name = entry.name
        found[name] = found.get(name, 0) + count
    return found


def host_cards(
        host: str, devices: Iterable[Mapping[str, typing.Any]],
        types: Mapping[str, Mapping[str, typing.Any]],
        used: Mapping[str, Mapping[str, int]] | None = None
) -> list[dict[str, typing.Any]]:
    """The cards of HOST whose VFs serve a planned pool: DEVICES are its
    providers (``nova_config.trees_from_snapshot``), TYPES {vGPU type:
    pool}, USED {provider uuid: {class: VFs in use}}. A card whose VFs
    carry no vGPU type yet has no provider (Nova reports only the VFs a
    device_spec matches), so it is not found here."""
    used = used or {}
    of_class = {p['resource_class']: t for t, p in types.items()}
    found = []
    for device in devices:
        current = {of_class[rc]: int(n)
                   for rc, n in device['resources'].items()
                   if rc in of_class}
        if not current or not device.get('address'):
            continue
        # TYPES: the catalogue's (pool_types)
        boards = {vgpu(t).board  # type: ignore[union-attr]
                  for t in current}
        found.append({
            'id': '%s/%s' % (host, device['address']), 'host': host,
            'address': device['address'], 'board': sorted(boards)[0],
            'current': current,
            'in_use': sum(int(n) for rc, n in
                          (used.get(device['uuid']) or {}).items()
                          if rc in of_class)})
    return found


_SERIES = re.compile(r'^(.+-\d+)([A-Z])$')


def vgpu(name: str) -> catalogue.VgpuType | None:
    """The catalogue's VgpuType of NAME (case-insensitive), or None. The
    catalogue transcribes the C-series (compute) tables; a type of another
    series with the frame buffer of a C type of the same board (L40S-24Q,
    L40S-24C) has that type's board and count per GPU in equal-size mode
    (the GPU's frame buffer over the type's), so it is read as that."""
    entry = catalogue.vgpu_type(name)
    if entry is not None:
        return entry[1]
    found = _SERIES.match(str(name).strip().upper())
    if not found or found.group(2) == 'C':
        return None
    entry = catalogue.vgpu_type(found.group(1) + 'C')
    if entry is None:
        return None
    return entry[1]._replace(name=found.group(0))


def _proposal(name):
    found = vgpu(name)
    return {found.name: found.max_count}


def plan(
        cards: Iterable[Mapping[str, typing.Any]], demand: Mapping[str, int]
) -> tuple[list[dict[str, typing.Any]], dict[str, typing.Any]]:
    """(rows, summary): the vGPU type of each card's VFs (equal-size).

    A card keeps its type while that type is still wanted or its VFs are
    in use (a VF in use cannot change type); the other cards take, one at
    a time, the type of their board with the most demand left (fewest
    cards re-cut). A card no demand needs keeps what it has. Rows: id,
    host, address, board, current, proposed, serves ({type: VFs counted
    against the demand}), recut. Summary: demand {type: (wanted, offered,
    met)}, wanted, met, recut."""
    left = dict(demand)
    rows = []
    free = []
    for card in cards:
        row: dict[str, typing.Any] = {
            k: card.get(k) for k in ('id', 'host', 'address', 'board')}
        row['current'] = dict(card.get('current') or {})
        current = [t for t, n in row['current'].items() if n]
        keep = (len(current) == 1
                and (card.get('in_use') or left.get(current[0], 0) > 0))
        if keep:
            row['proposed'] = _proposal(current[0])
            _serve(row, left)
        else:
            free.append(row)
        rows.append(row)
    # DEMAND: the catalogue's types (wanted)
    for row in free:
        mine = [t for t, n in left.items()
                if n > 0
                and vgpu(t).board == row['board']]  # type: ignore[union-attr]
        if mine:
            best = max(mine, key=lambda t: (
                left[t], -vgpu(t).memory_gb))  # type: ignore[union-attr]
            row['proposed'] = _proposal(best)
        else:
            row['proposed'] = dict(row['current'])
        _serve(row, left)
    offered: collections.Counter[str] = collections.Counter()
    met: collections.Counter[str] = collections.Counter()
    for row in rows:
        row['recut'] = ({t: n for t, n in row['proposed'].items() if n}
                        != {t: n for t, n in row['current'].items() if n})
        offered.update(row['proposed'])
        met.update(row['serves'])
    summary = {
        'demand': {t: (n, offered[t], met[t]) for t, n in demand.items()},
        'wanted': sum(demand.values()), 'met': sum(met.values()),
        'recut': sum(1 for r in rows if r['recut'])}
    return rows, summary


def _serve(row, left):
    row['serves'] = {}
    for name, count in row['proposed'].items():
        used = min(count, max(left.get(name, 0), 0))
        if used:
            row['serves'][name] = used
            left[name] -= used


def vf_types(row: Mapping[str, typing.Any]) -> list[tuple[str, str]]:
    """[(VF address, vGPU type)] of a planned card: its first VFs (as
    ``nova_config.vf_addresses`` counts them from the PF) in order."""
    names = [t for t, n in sorted(row['proposed'].items())
             for _i in range(n)]
    return list(zip(nova_config.vf_addresses(row['address'], len(names)),
                    names, strict=True))


def device_specs(
        rows: Iterable[Mapping[str, typing.Any]],
        types: Mapping[str, Mapping[str, typing.Any]]) -> dict[str, list[str]]:
    """{host: [device_spec JSON]} of the planned cards, one per VF, each
    as ``gpu config show`` renders it for the pool of the VF's type
    (``nova_config.device_spec_json``)."""
    found: dict[str, list[str]] = {}
    for row in rows:
        for address, name in vf_types(row):
            found.setdefault(row['host'], []).append(
                nova_config.device_spec_json(types[name], address))
    return found


def host_config(
        host: str, rows: Iterable[Mapping[str, typing.Any]],
        types: Mapping[str, Mapping[str, typing.Any]]) -> nova_config.Config:
    """A ``nova_config.Config`` of HOST's ``[pci]`` after the plan: the
    device_spec of each VF and report_in_placement, and post-copy off when
    a pool is live-migratable (what ``gpu config show`` writes for vgpu-vf
    pools)."""
    config = nova_config.Config()
    target = nova_config.host_target(host)
    for spec in device_specs([r for r in rows if r['host'] == host],
                             types).get(host, []):
        config.add(target, 'pci', 'device_spec', spec)
    config.set(target, 'pci', 'report_in_placement', nova_config.TRUE)
    if any(p.get('live_migratable') for p in types.values()
           if p['mode'] == pools_mod.VGPU_VF and host in p['hosts']):
        config.set(target, 'libvirt', 'live_migration_permit_post_copy',
                   nova_config.FALSE)
    return config


_SCRIPT_HEAD = '''\
#!/bin/bash
# gpuclient "profile plan": the vGPU types of the VFs of %(host)s
# (NVIDIA equal-size mode: one type per card). Run as root with no server
# on these cards, before nova-compute starts (%(unit)s runs it at boot:
# VFs and their types do not survive a reboot).
set -euo pipefail

# the id of vGPU type $2 on VF $1, read from creatable_vgpu_types
# ("<id> : NVIDIA <name>" lines): the ids differ between driver releases
type_id() {
    local id label
    while IFS=: read -r id label; do
        id=${id//[[:space:]]/}
        label=$(echo $label)
        if [ "$label" = "NVIDIA $2" ] || [ "$label" = "$2" ]; then
            echo "$id"
            return 0
        fi
    done < "%(sysfs)s/$1/nvidia/creatable_vgpu_types"
    return 1
}

set_type() {
    local vf=$1 name=$2 id now
    now=$(cat "%(sysfs)s/$vf/nvidia/current_vgpu_type")
    if [ "$now" != 0 ]; then
        # fails while a server holds the VF: move it first
        echo 0 > "%(sysfs)s/$vf/nvidia/current_vgpu_type"
    fi
    if ! id=$(type_id "$vf" "$name"); then
        echo "$vf: $name is not among its creatable_vgpu_types" >&2
        exit 1
    fi
    echo "$id" > "%(sysfs)s/$vf/nvidia/current_vgpu_type"
    echo "$vf: $name (type id $id)"
}

# a card the plan keeps: a VF that has a type keeps it (it may be in
# use); at boot none has one
keep_type() {
    if [ "$(cat "%(sysfs)s/$1/nvidia/current_vgpu_type")" != 0 ]; then
        echo "$1: keeps its type"
        return 0
    fi
    set_type "$1" "$2"
}
'''


def script_name(host: str) -> str:
    """The file name of HOST's VF script."""
    return 'gpuclient-vgpu-vfs-%s.sh' % host


def unit_name(host: str) -> str:
    """The file name of HOST's systemd unit."""
    return 'gpuclient-vgpu-vfs-%s.service' % host


def script(host: str, rows: Iterable[Mapping[str, typing.Any]]) -> str:
    """The bash script that makes the VFs of HOST's cards (``sriov-manage
    -e``) and writes each VF's vGPU type: on the re-typed cards now, on
    the others where a VF has none (at boot). One script per host: the
    boot unit redoes every card."""
    mine = [r for r in rows if r['host'] == host]
    lines = [_SCRIPT_HEAD % {'host': host, 'unit': unit_name(host),
                             'sysfs': SYSFS}]
    for row in mine:
        lines.append('\n# card %s (%s): %s\n' % (
            row['address'], row['board'], layout_text(row['proposed'])))
        lines.append('%s -e %s\n' % (SRIOV_MANAGE, row['address']))
        verb = 'set_type' if row['recut'] else 'keep_type'
        for address, name in vf_types(row):
            lines.append('%s %s %s\n' % (verb, address, name))
    return ''.join(lines)


def unit(host: str, script_path: str) -> str:
    """The systemd unit that runs SCRIPT_PATH at boot, after the NVIDIA
    vGPU manager and before nova-compute."""
    return boot_unit('gpuclient: vGPU types of the VFs of %s' % host,
                     ('nvidia-vgpu-mgr.service',), script_path)


def boot_unit(description: str, after: Iterable[str],
              script_path: str) -> str:
    """A oneshot systemd unit (DESCRIPTION) that runs SCRIPT_PATH at boot,
    after the units AFTER (wanting NVIDIA's vGPU manager) and before
    nova-compute: what gpu profile plan and gpu host render write for a
    host's VFs and MIG layout, which do not survive a reboot."""
    return '\n'.join((
        '[Unit]',
        'Description=%s' % description,
        'After=%s' % ' '.join(after),
        'Wants=nvidia-vgpu-mgr.service',
        'Before=nova-compute.service',
        '',
        '[Service]',
        'Type=oneshot',
        'RemainAfterExit=yes',
        'ExecStart=%s' % script_path,
        '',
        '[Install]',
        'WantedBy=multi-user.target nova-compute.service',
        ''))


def layout_text(layout: Mapping[str, int]) -> str:
    """'L40S-24C x2' (a card's VFs by type), '-' for none."""
    return ', '.join('%s x%d' % (t, n) for t, n in sorted(layout.items())
                     if n) or '-'
