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

"""Pure: the cards of a cloud for ``gpu profile plan --pool``, and the
nova.conf of a plan.

What the cloud tells (one snapshot): the MIG pools of the planned hosts
(``gpu_mig_profile``, their resource class and type trait), each host's
device providers (``rules.nova_config.trees_from_snapshot``: the SR-IOV VF
providers of MIG-backed vGPU, named after their PCI address) and the
allocations of the used ones.

* A card is the physical GPU its VFs belong to: a GPU's VFs sit on its own
  PCI bus (NVIDIA's ``sriov-manage`` enables them behind the PF
  ``<domain>:<bus>:00.0``), so VFs are grouped by domain and bus, and the
  card is named by the PF address (``card_address``).
* The profile of a VF is that of the MIG pool serving it: the pool's
  per-type resource class in the VF's inventory (``[mdev_<type>]
  mdev_class``), else the pool's type trait on the VF (``VGPU`` pools). A
  VF no pool serves is not counted (a note says so).
* Placement does not say at which memory slot a GPU instance starts: the
  card's layout now is taken as the first valid layout with the same
  instances of each profile (``assign_layout``), the VFs given its
  placements in address order. The ``nvidia-smi`` script checks the GPU
  holds that layout before changing anything.
* The model: ``--model``, else the catalogue models whose MIG profile
  names hold every profile of the card's pools, narrowed by model names
  and vGPU type names found in the pools' resource classes, type traits,
  vGPU types and properties and in the providers' names
  (``infer_model``). A100 80GB and H100 80GB share profile names: such a
  card needs a hint or ``--model``.

Time-sliced vGPU pools (mode ``vgpu``) name their type by mdev type id
(``nvidia-35``); which NVIDIA vGPU type that is (``A100D-10C``) depends on
the driver and is not in the API. It is given with ``--vgpu-mdev-type
<vGPU type>=<mdev type>`` or recorded on the pool as its property
``vgpu_profile`` (``vgpu_profiles``). Each pGPU provider a vgpu pool serves
(per-type class, else type trait) is one card (``vgpu_cards``): its layout
now is the pool's vGPU type as many times as NVIDIA's table allows per GPU
(a Placement total that differs is said), its placements in use as many as
the vGPUs its allocations hold. The model is the one the vGPU type belongs
to. A time-sliced card is re-cut by changing its vGPU type, and is planned
with the time-sliced demand only (``plan``): a MIG card never gets a
time-sliced layout here, nor a time-sliced card a MIG one.

The nova.conf after a plan (``proposed_config``) is rendered by
``rules.nova_config.build`` itself, fed with the provider trees as they
would be after the re-cut: each VF keeps its placement when the plan keeps
it, the new placements take the card's other VFs in address order.
"""

from __future__ import annotations

import collections
from collections.abc import Collection
from collections.abc import Container
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
import copy
import re
import typing

from gpuclient.i18n import _
from gpuclient.rules import catalogue
from gpuclient.rules import maintenance
from gpuclient.rules import pools as pools_mod
from gpuclient.rules import specs as specs_mod
from gpuclient.rules.nova_conf import render as nova_config
from gpuclient.rules.profiles import layouts
from gpuclient.rules.profiles import solver

PROFILE_PROPERTY = pools_mod.VGPU_PROFILE_PROPERTY
# {provider uuid: {consumer: {class: amount}}} of the used providers
Allocations = Mapping[str, Mapping[str, Mapping[str, int]]]


class CannotTell(ValueError):
    """The cloud does not say something the plan needs (the message says
    which option gives it)."""


_ADDRESS_RE = nova_config.ADDRESS_RE
card_address = nova_config.card_address


def _vf_order(address):
    found = _ADDRESS_RE.match(address)
    return (int(found.group(3), 16), int(found.group(4))) if found else (
        0, 0)


def _token(text):
    return re.sub(r'[^A-Z0-9]+', '_', str(text).upper())


def infer_model(mig_profiles: Iterable[str],
                hints: Iterable[str | None] = ()) -> str | None:
    """The catalogue model of a card that serves MIG_PROFILES (names),
    from HINTS (strings the cloud holds: classes, traits, vGPU types,
    provider names, pool properties), or None when no model or more than
    one fits."""
    fits = [m for m in catalogue.MODELS.values()
            if set(mig_profiles) <= {p.name for p in m.profiles}]
    if len(fits) <= 1:
        return fits[0].name if fits else None
    text = '_' + '_'.join(_token(h) for h in hints if h) + '_'
    named = []
    for m in fits:
        tokens = [_token(m.name)] + [_token(t.name) for t in m.vgpu_types]
        if any('_%s_' % t in text for t in tokens):
            named.append(m.name)
    return named[0] if len(named) == 1 else None


def assign_layout(model: str,
                  counts: Mapping[str, int]) -> layouts.Layout | None:
    """A valid MIG layout of MODEL with COUNTS ({profile: instances}), the
    first in the catalogue's order (fewest placements, lowest starts), or
    None when the card cannot hold them."""
    wanted = collections.Counter({p: n for p, n in counts.items() if n})
    if not wanted:
        return ()
    size = sum(wanted.values())
    for layout in layouts.layouts(model):
        if len(layout) == size and collections.Counter(
                name for name, _start in layout) == wanted:
            return layout
    return None


def mig_pools_of(pools: Mapping[str, dict[str, typing.Any]],
                 host: str) -> list[dict[str, typing.Any]]:
    """The MIG pools holding HOST, by name."""
    return [pools[n] for n in sorted(pools)
            if pools[n]['mode'] == pools_mod.MIG
            and host in pools[n]['hosts']]


def _serving_pool(device, mig_pools):
    """The pool of MIG_POOLS (MIG or vgpu pools) a VF or pGPU provider
    serves (per-type class first, then type trait or the pool's record of
    its trait), or None."""
    for pool in mig_pools:
        rc = pool['resource_class']
        if rc != 'VGPU' and rc in device['resources']:
            return pool
    for pool in mig_pools:
        if pool['resource_class'] != 'VGPU' or 'VGPU' not in device[
                'resources']:
            continue
        owned = pools_mod.owned_traits(pool.get('metadata') or {})
        if pool.get('type_trait') in device['traits'] or owned.get(
                device['uuid']) == pool.get('type_trait'):
            return pool
    return None


def _is_gpu_device(device, mig_pools):
    return 'VGPU' in device['resources'] or any(
        p['resource_class'] in device['resources'] for p in mig_pools)


def cards(
        host: str, devices: Iterable[dict[str, typing.Any]],
        mig_pools: Sequence[dict[str, typing.Any]],
        allocations: Allocations | None = None, model: str | None = None
) -> tuple[list[dict[str, typing.Any]], list[str]]:
    """(cards, notes) of one host for ``solver.plan``.

    DEVICES: the host's device providers (``trees_from_snapshot``);
    MIG_POOLS: the MIG pools holding the host; ALLOCATIONS: {provider
    uuid: {consumer: {class: amount}}} of the used ones; MODEL: the
    catalogue name given with ``--model`` (else ``infer_model``).

    A card: ``id`` (``<host> <PF address>``), ``host``, ``address``,
    ``model``, ``current``, ``in_use`` (as ``solver.plan`` takes them),
    ``vfs`` (every VF address of the card, in order), ``placed``
    ({placement: VF address}), ``servers`` ({placement: [consumer]}) and
    ``uuids`` ({VF address: provider uuid}). Raises CannotTell when the
    model cannot be told, ValueError when the VFs of a card make no valid
    layout.
    """
    allocations = allocations or {}
    by_card: collections.OrderedDict[str, list[dict[str, typing.Any]]] = (
        collections.OrderedDict())
    notes = []
    for device in sorted(devices, key=lambda d: (
            card_address(d['address']) or '', _vf_order(d['address'] or ''))):
        if not _is_gpu_device(device, mig_pools):
            continue
        address = card_address(device['address'])
        if address is None:
            notes.append(_('%(host)s: provider %(rp)s carries no PCI address '
                           'in its name: left out of the plan.')
                         % {'host': host, 'rp': device['name']})
            continue
        by_card.setdefault(address, []).append(device)
    found = []
    for address, vfs in by_card.items():
        served, hints, unknown = [], [], []
        for device in vfs:
            pool = _serving_pool(device, mig_pools)
            hints.append(device['name'])
            if pool is None:
                unknown.append(device['address'])
                continue
            served.append((device, pool))
        for pool in {p['name']: p for _d, p in served}.values():
            hints += [pool['resource_class'], pool.get('type_trait'),
                      pool.get('vgpu_type'), pool['name']]
            hints += list((pool.get('properties') or {}).values())
        if unknown:
            notes.append(_('%(host)s %(card)s: VFs %(vfs)s serve no MIG pool '
                           'of this plan: counted as free (add the host to '
                           'the pool of their profile to count them).')
                         % {'host': host, 'card': address,
                            'vfs': ', '.join(unknown)})
        used_profiles = sorted({p['mig_profile'] for _d, p in served})
        name = model or infer_model(
            [catalogue.profile_name(p) for p in used_profiles
             if _known_profile(p)], hints)
        if name is None:
            raise CannotTell(_(
                'Cannot tell the GPU model of %(host)s %(card)s from the '
                'cloud (MIG profiles: %(profiles)s): give it with --model '
                '(see "openstack gpu profile list").')
                % {'host': host, 'card': address,
                   'profiles': ', '.join(used_profiles) or _('none')})
        name = catalogue.model_name(name)
        model_profiles = {p.name for p in catalogue.MODELS[name].profiles}
        counts: collections.Counter[str] = collections.Counter()
        for _device, pool in served:
            profile = pool['mig_profile']
            if not _known_profile(profile) or catalogue.profile_name(
                    profile) not in model_profiles:
                raise CannotTell(_(
                    'Pool %(pool)s serves MIG profile %(profile)s, which '
                    '%(model)s does not have: check the pool or give '
                    '--model.') % {'pool': pool['name'],
                                   'profile': profile, 'model': name})
            counts[catalogue.profile_name(profile)] += 1
        layout = assign_layout(name, counts)
        if layout is None:
            raise ValueError(_(
                '%(host)s %(card)s: its VFs serve %(counts)s, which no '
                'valid %(model)s layout holds: check the pools of its VFs.')
                % {'host': host, 'card': address, 'model': name,
                   'counts': ', '.join('%s x%d' % kv
                                       for kv in sorted(counts.items()))})
        # placements to VFs: each profile's VFs in address order take its
        # placements in start order
        starts = collections.defaultdict(list)
        for placement in layout:
            starts[placement[0]].append(placement)
        placed, servers, in_use = {}, {}, []
        for device, pool in served:
            placement = starts[catalogue.profile_name(
                pool['mig_profile'])].pop(0)
            placed[placement] = device['address']
            consumers = sorted(allocations.get(device['uuid']) or ())
            if consumers:
                servers[placement] = consumers
                in_use.append(placement)
        found.append({
            'id': '%s %s' % (host, address), 'host': host,
            'address': address, 'model': name, 'current': layout,
            'in_use': layouts.normal(in_use),
            'vfs': [d['address'] for d in vfs], 'placed': placed,
            'servers': servers,
            'uuids': {d['address']: d['uuid'] for d in vfs}})
    return found, notes


def _known_profile(name):
    try:
        catalogue.profile_name(name)
    except catalogue.UnknownName:
        return False
    return True


# -- time-sliced vGPU pools ---------------------------------------------------

def vgpu_model(name: str) -> str | None:
    """The catalogue model a time-sliced vGPU type (catalogue name)
    belongs to, or None for a MIG profile."""
    found = catalogue.vgpu_type(name)
    return found[0] if found else None


def check_mig_type_names(entries: Mapping[str, str] | None) -> None:
    """Refuse (ValueError) a time-sliced vGPU type among ``--mig-mdev-type``
    entries ({name: mdev type}): it goes with ``--vgpu-mdev-type``. Names
    the catalogue does not know are left to the plan."""
    for text in entries or {}:
        try:
            name = catalogue.profile_name(text)
        except catalogue.UnknownName:
            continue
        if vgpu_model(name):
            raise ValueError(_(
                '%(name)s is a time-sliced vGPU type: give it with '
                '--vgpu-mdev-type %(name)s=<mdev type>.') % {'name': text})


def vgpu_type_map(entries: Mapping[str, str] | None) -> dict[str, str]:
    """{vGPU type: mdev type} from ``--vgpu-mdev-type`` entries ({name:
    mdev type}), names as the catalogue spells them. Raises
    ``catalogue.UnknownName`` for a name the catalogue does not know and
    ValueError for a MIG profile or an mdev type given twice."""
    found: dict[str, str]
    owner: dict[str, str]
    found, owner = {}, {}
    for text, mdev_type in (entries or {}).items():
        name = catalogue.profile_name(text)
        if vgpu_model(name) is None:
            raise ValueError(_(
                '%(name)s is a MIG profile, not a time-sliced vGPU type: '
                'give it with --mig-mdev-type %(name)s=%(type)s.')
                % {'name': name, 'type': mdev_type})
        mdev_type = str(mdev_type).strip()
        if owner.get(mdev_type, name) != name:
            raise ValueError(_(
                'mdev type %(type)s is given for both %(a)s and %(b)s: one '
                'mdev type is one vGPU type (see mdev_supported_types/'
                '%(type)s/name on the host).')
                % {'type': mdev_type, 'a': owner[mdev_type], 'b': name})
        owner[mdev_type] = name
        found[name] = mdev_type
    return found


def unknown_vgpu_type(pool: Mapping[str, typing.Any]) -> str:
    """The message for a vgpu pool whose NVIDIA vGPU type is not known."""
    return _(
        'Pool %(pool)s serves mdev type %(type)s, and the cloud does not '
        'record which NVIDIA vGPU type that is: give it with '
        '--vgpu-mdev-type <vGPU type>=%(type)s (e.g. A100D-10C=%(type)s; '
        'the host\'s mdev_supported_types/%(type)s/name says it), or record '
        'it on the pool: "openstack gpu pool set %(pool)s --property '
        '%(key)s=<vGPU type>".') % {'pool': pool['name'],
                                    'type': pool.get('vgpu_type'),
                                    'key': PROFILE_PROPERTY}


def vgpu_profiles(
        pools: Mapping[str, Mapping[str, typing.Any]],
        vgpu_types: Mapping[str, str] | None = None
) -> tuple[dict[str, str], list[str]]:
    """({pool name: vGPU type}, notes) of the vgpu pools whose time-sliced
    vGPU type is known: the one VGPU_TYPES ({vGPU type: mdev type}, from
    ``vgpu_type_map``) gives the pool's mdev type, else the pool's
    property ``vgpu_profile``. A property naming no time-sliced type, or
    one the mapping contradicts, is said and not used."""
    by_mdev = {mdev: name for name, mdev in (vgpu_types or {}).items()}
    found, notes = {}, []
    for pool_name in sorted(pools):
        pool = pools[pool_name]
        if pool['mode'] != pools_mod.VGPU:
            continue
        # a pool without an mdev type finds none
        given = by_mdev.get(
            pool.get('vgpu_type'))  # type: ignore[arg-type]
        recorded = (pool.get('properties') or {}).get(PROFILE_PROPERTY)
        if recorded:
            try:
                recorded_name = catalogue.profile_name(recorded)
            except catalogue.UnknownName:
                recorded_name = None
            if recorded_name is None or vgpu_model(recorded_name) is None:
                notes.append(_(
                    'Pool %(pool)s: its property %(key)s=%(value)s names '
                    'no time-sliced vGPU type of "openstack gpu profile '
                    'list": not used.') % {'pool': pool_name,
                                           'key': PROFILE_PROPERTY,
                                           'value': recorded})
                recorded_name = None
            if given and recorded_name and given != recorded_name:
                notes.append(_(
                    'Pool %(pool)s: --vgpu-mdev-type says %(type)s is '
                    '%(given)s, its property %(key)s says %(recorded)s: '
                    'planned as %(given)s.')
                    % {'pool': pool_name, 'type': pool.get('vgpu_type'),
                       'given': given, 'key': PROFILE_PROPERTY,
                       'recorded': recorded_name})
            given = given or recorded_name
        if given:
            found[pool_name] = given
    return found, notes


def vgpu_pools_of(pools: Mapping[str, dict[str, typing.Any]],
                  host: str) -> list[dict[str, typing.Any]]:
    """The vgpu (time-sliced) pools holding HOST, by name."""
    return [pools[n] for n in sorted(pools)
            if pools[n]['mode'] == pools_mod.VGPU
            and host in pools[n]['hosts']]


def vgpu_devices(
        devices: Iterable[dict[str, typing.Any]],
        vgpu_pools: Sequence[dict[str, typing.Any]]
) -> list[tuple[dict[str, typing.Any], dict[str, typing.Any]]]:
    """[(device, pool)]: the device providers (pGPUs) a vgpu pool of the
    host serves (its per-type class, else its type trait or the pool's
    record of it), in address order."""
    found = []
    for device in sorted(devices, key=lambda d: (d['address'] or '',
                                                 d['name'])):
        pool = _serving_pool(device, vgpu_pools)
        if pool is not None:
            found.append((device, pool))
    return found


def vgpu_cards(
        host: str, devices: Iterable[dict[str, typing.Any]],
        vgpu_pools: Sequence[dict[str, typing.Any]],
        pool_profiles: Mapping[str, str],
        allocations: Allocations | None = None, model: str | None = None
) -> tuple[list[dict[str, typing.Any]], list[str]]:
    """(cards, notes) of the pGPUs of one host that its vgpu pools serve,
    for ``solver.plan``: one card per pGPU provider.

    POOL_PROFILES: {pool name: vGPU type} (``vgpu_profiles``);
    ALLOCATIONS: {provider uuid: {consumer: {class: amount}}}; MODEL: the
    ``--model`` given (it must have the pool's type). The layout now is
    the pool's type as many times as NVIDIA's table allows on one GPU (a
    Placement total that differs is said); in use, as many as the vGPUs
    the provider's allocations hold. A card has the fields of ``cards``
    (``vfs``: its own address, ``placed``: empty) plus ``mode`` (vgpu)
    and ``pool``. Raises CannotTell when a pool's type is not known or
    not of MODEL, ValueError when more vGPUs are in use than the type
    allows.
    """
    allocations = allocations or {}
    found, notes = [], []
    for device, pool in vgpu_devices(devices, vgpu_pools):
        address = device['address']
        if address is None:
            notes.append(_('%(host)s: provider %(rp)s carries no PCI address '
                           'in its name: left out of the plan.')
                         % {'host': host, 'rp': device['name']})
            continue
        name = pool_profiles.get(pool['name'])
        if name is None:
            raise CannotTell(unknown_vgpu_type(pool))
        owner = vgpu_model(name)
        if model is not None and catalogue.model_name(model) != owner:
            raise CannotTell(_(
                'Pool %(pool)s serves %(type)s, a vGPU type of %(owner)s, '
                'not of %(model)s: check --model and --vgpu-mdev-type.')
                % {'pool': pool['name'], 'type': name, 'owner': owner,
                   'model': catalogue.model_name(model)})
        most = {t.name: t.max_count
                for t in catalogue.MODELS[owner].vgpu_types}[name]
        rc = pool['resource_class']
        total = device['resources'].get(rc, 0)
        if total != most:
            notes.append(_(
                '%(host)s %(card)s: Placement offers %(total)d vGPUs of '
                'pool %(pool)s, NVIDIA\'s table %(most)d %(type)s per GPU: '
                'planned with %(most)d (check --vgpu-mdev-type).')
                % {'host': host, 'card': address, 'total': total,
                   'pool': pool['name'], 'most': most, 'type': name})
        holding = allocations.get(device['uuid']) or {}
        used = sum(amounts.get(rc, 0) for amounts in holding.values())
        if used > most:
            raise ValueError(_(
                '%(host)s %(card)s: %(used)d vGPUs in use, and a GPU holds '
                'at most %(most)d %(type)s: check --vgpu-mdev-type.')
                % {'host': host, 'card': address, 'used': used,
                   'most': most, 'type': name})
        placement = (name, None)
        consumers = sorted(c for c, amounts in holding.items()
                           if amounts.get(rc))
        found.append({
            'id': '%s %s' % (host, address), 'host': host,
            'address': address, 'model': owner, 'mode': pools_mod.VGPU,
            'pool': pool['name'], 'current': (placement,) * most,
            'in_use': (placement,) * used, 'vfs': [address], 'placed': {},
            'servers': {placement: consumers} if consumers else {},
            'uuids': {address: device['uuid']}})
    return found, notes


def plan(
        cards_: Sequence[Mapping[str, typing.Any]], wanted: Mapping[str, int]
) -> tuple[list[dict[str, typing.Any]], dict[str, typing.Any]]:
    """``solver.plan`` of CARDS (``cards`` and ``vgpu_cards``) for
    WANTED ({profile or vGPU type: count}): the MIG cards for the MIG
    profiles, the time-sliced cards for the vGPU types, each a plan of
    its own (the two share no card and no demand, so together they are
    the lexicographic optimum of the whole, a time-sliced card staying
    time-sliced). (rows in the order of CARDS, summary as
    ``solver.plan``'s, with the figures of both added up)."""
    # {kind: (its cards, its demand)}
    kinds: dict[str, tuple[list[dict[str, typing.Any]], dict[str, int]]] = {
        pools_mod.MIG: ([], {}), pools_mod.VGPU: ([], {})}
    for card in cards_:
        kind = pools_mod.VGPU if card.get('mode') == pools_mod.VGPU else (
            pools_mod.MIG)
        kinds[kind][0].append({k: card[k] for k in (
            'id', 'model', 'current', 'in_use')})
    for name, count in wanted.items():
        kind = pools_mod.VGPU if vgpu_model(name) else pools_mod.MIG
        kinds[kind][1][name] = count
    by_id: dict[str, dict[str, typing.Any]]
    summary: dict[str, typing.Any] | None
    by_id, summary = {}, None
    for kind in (pools_mod.MIG, pools_mod.VGPU):
        some_cards, some_demand = kinds[kind]
        if not some_cards and not some_demand and summary is not None:
            continue
        rows, part = solver.plan(some_cards, some_demand)
        by_id.update((row['id'], row) for row in rows)
        summary = part if summary is None else _added(summary, part)
    # the MIG kind's plan always runs: SUMMARY is set
    return ([by_id[card['id']] for card in cards_],
            summary)  # type: ignore[return-value]


def _added(one, other):
    """Two plans' summaries as one."""
    total = dict(one)
    total['demand'] = dict(one['demand'], **other['demand'])
    for key in ('wanted', 'met', 'recut', 'moves', 'stranded_slices',
                'classes'):
        total[key] = one[key] + other[key]
    statuses = [s for s in (one['status'], other['status']) if s]
    total['status'] = ', '.join(sorted(set(statuses))) or None
    return total


def profiles_wanted(
        entries: Mapping[str, int],
        flavors: Iterable[Mapping[str, typing.Any]] | None,
        pools: Mapping[str, dict[str, typing.Any]],
        vgpu_profiles: Mapping[str, str] | None = None
) -> tuple[dict[str, int], dict[str, str]]:
    """({profile: count}, {flavor name: profile}) from ``--demand``
    entries ({flavor or profile: count}): a GPU flavor of a MIG pool asks
    for its pool's profile times its GPUs, one of a vgpu pool for the
    pool's vGPU type (VGPU_PROFILES, {pool name: vGPU type}) times its
    GPUs; any other name must be a profile or vGPU type of the
    catalogue."""
    vgpu_profiles = vgpu_profiles or {}
    by_name = {f.get('name'): f for f in flavors or ()}
    wanted: dict[str, int]
    of_flavor: dict[str, str]
    wanted, of_flavor = {}, {}
    for text, count in entries.items():
        flavor = by_name.get(text)
        if flavor is not None:
            reading = specs_mod.read(flavor.get('extra_specs') or {}, pools)
            pool = pools.get(reading['pool'] or '')
            if pool is not None and pool['mode'] == pools_mod.VGPU:
                name = vgpu_profiles.get(pool['name'])
                if name is None:
                    raise CannotTell(unknown_vgpu_type(pool))
            elif pool is None or pool['mode'] != pools_mod.MIG:
                raise CannotTell(_(
                    'Flavor %(flavor)s asks for no MIG or vGPU pool\'s '
                    'profile: give a GPU flavor of a MIG or vgpu pool, a '
                    'MIG profile or a vGPU type (e.g. --demand 3g.40gb=4).')
                    % {'flavor': text})
            else:
                name = catalogue.profile_name(pool['mig_profile'])
            count = count * (reading['gpus'] or 1)
            of_flavor[text] = name
        else:
            name = catalogue.profile_name(text)
        wanted[name] = wanted.get(name, 0) + count
    return wanted, of_flavor


def profile_pools(
        pools: Mapping[str, dict[str, typing.Any]],
        profile_names: Container[str],
        vgpu_profiles: Mapping[str, str] | None = None
) -> dict[str, list[dict[str, typing.Any]]]:
    """{profile: [pool]} of the MIG pools that serve each MIG profile and
    the vgpu pools that serve each vGPU type (VGPU_PROFILES: {pool name:
    vGPU type})."""
    vgpu_profiles = vgpu_profiles or {}
    found: dict[str, list[dict[str, typing.Any]]] = {}
    for name in sorted(pools):
        pool = pools[name]
        if pool['mode'] == pools_mod.VGPU:
            profile = vgpu_profiles.get(name)
        elif pool['mode'] == pools_mod.MIG and _known_profile(
                pool['mig_profile']):
            profile = catalogue.profile_name(pool['mig_profile'])
        else:
            continue
        if profile in profile_names:
            # a name (None, a vGPU type unknown, is in no PROFILE_NAMES)
            found.setdefault(
                profile, []).append(pool)  # type: ignore[arg-type]
    return found


def proposed_placement(
        card: Mapping[str, typing.Any],
        proposed: Iterable[Sequence[typing.Any]] | None
) -> dict[layouts.Placement, str]:
    """{placement: VF address} of a card after the plan: a kept placement
    stays on its VF, a new one takes the first VF left (address order);
    raises ValueError when the card has too few VFs."""
    proposed = layouts.normal(proposed)
    placed = {p: vf for p, vf in card['placed'].items() if p in proposed}
    free = [vf for vf in card['vfs'] if vf not in placed.values()]
    for placement in proposed:
        if placement in placed:
            continue
        if not free:
            raise ValueError(_(
                '%(card)s: the layout %(layout)s needs %(n)d VFs, the card '
                'has %(vfs)d: enable more VFs (sriov-manage) first.')
                % {'card': card['id'], 'layout': layouts.layout_text(
                    proposed), 'n': len(proposed), 'vfs': len(card['vfs'])})
        placed[placement] = free.pop(0)
    return placed


def proposed_config(
        pools: Mapping[str, dict[str, typing.Any]],
        trees: Mapping[str, list[dict[str, typing.Any]]],
        cards_: Collection[Mapping[str, typing.Any]],
        rows: Collection[Mapping[str, typing.Any]],
        mig_types: Mapping[str, str] | None = None,
        vgpu_profiles: Mapping[str, str] | None = None
) -> tuple[nova_config.Config, dict[str, list[str]], dict[str, list[str]]]:
    """(Config of the planned hosts after the re-cut, {host: [note]},
    {card id: [profile no pool serves]}).

    The pools as they would be (a pool whose profile the plan puts on a
    host it does not hold yet gets the host, with a note to add it; one
    whose profile leaves a host is dropped from it, with a note) and the
    host's device providers as they would be (each VF or time-sliced pGPU
    with the class or type trait of the pool of its new profile or vGPU
    type; VGPU_PROFILES: {vgpu pool name: vGPU type}) go through
    ``nova_config.build``: the same code as ``gpu config show``.
    """
    vgpu_profiles = vgpu_profiles or {}
    by_id = {c['id']: c for c in cards_}
    hosts = sorted({c['host'] for c in cards_})
    wanted = {name for row in rows for name, _start in row['proposed']}
    serving = profile_pools(pools, wanted, vgpu_profiles)
    after = copy.deepcopy(pools)
    new_trees = {h: [dict(d) for d in trees.get(h, [])] for h in hosts}
    notes: dict[str, list[str]]
    unserved: dict[str, list[str]]
    notes, unserved = {}, {}
    for host in hosts:
        host_notes = notes.setdefault(host, [])
        index = {d['address']: d for d in new_trees[host] if d['address']}
        profiles_here, recut_vgpu = set(), False
        for row in rows:
            card = by_id.get(row['id'])
            if card is None or card['host'] != host:
                continue
            if card.get('mode') == pools_mod.VGPU:
                placed = {p: card['address'] for p in row['proposed'][:1]}
                count = {card['address']: len(row['proposed'])}
                recut_vgpu = recut_vgpu or row['recut']
            else:
                placed = proposed_placement(card, row['proposed'])
                count = {}
            for vf in card['vfs']:
                device = index.get(vf)
                if device is not None:
                    # the VF serves nothing until a profile is set below
                    device['resources'] = {}
                    device['traits'] = {
                        t for t in device['traits']
                        if not pools_mod.is_type_trait(t)}
                    for pool in after.values():
                        # nor by a pool's record of the trait it put there
                        (pool.get('metadata') or {}).pop(
                            pools_mod.owned_key(device['uuid']), None)
            for (name, _start), vf in sorted(placed.items()):
                choices = serving.get(name)
                if not choices:
                    unserved.setdefault(card['id'], [])
                    if name not in unserved[card['id']]:
                        unserved[card['id']].append(name)
                    continue
                pool = _choose(choices, host)
                profiles_here.add(name)
                device = index.get(vf)
                if device is None:
                    device = {'uuid': card['uuids'].get(vf) or vf,
                              'name': '%s_pci_%s' % (host, re.sub(
                                  r'[:.]', '_', vf)),
                              'root_name': host, 'address': vf,
                              'resources': {}, 'traits': set()}
                    new_trees[host].append(device)
                    index[vf] = device
                device['resources'] = {pool['resource_class']: count.get(
                    vf, 1)}
                if pool['resource_class'] == 'VGPU' and pool.get(
                        'type_trait'):
                    device['traits'] = set(device['traits']) | {
                        pool['type_trait']}
        for name in sorted(profiles_here):
            pool = _choose(serving[name], host)
            if host not in pool['hosts']:
                after[pool['name']]['hosts'] = sorted(
                    set(pool['hosts']) | {host})
                host_notes.append(_(
                    'Pool %(pool)s does not hold %(host)s yet: after the '
                    're-cut run "openstack gpu pool add host %(pool)s '
                    '%(host)s".') % {'pool': pool['name'], 'host': host})
        for pool in mig_pools_of(pools, host) + vgpu_pools_of(pools, host):
            if pool['mode'] == pools_mod.VGPU:
                profile = vgpu_profiles.get(pool['name'])
                shown = '%s, %s' % (pool.get('vgpu_type'),
                                    profile or _('vGPU type unknown'))
            else:
                profile = pool['mig_profile']
                shown = profile
                if _known_profile(profile):
                    profile = catalogue.profile_name(profile)
            if profile in profiles_here:
                continue
            after[pool['name']]['hosts'] = [
                h for h in after[pool['name']]['hosts'] if h != host]
            host_notes.append(_(
                'Pool %(pool)s (%(profile)s): no card of %(host)s serves it '
                'after the re-cut, so nova.conf leaves it out; its flavors '
                'no longer fit there.') % {
                    'pool': pool['name'], 'profile': shown, 'host': host})
        if any(p['resource_class'] == 'VGPU' for p in mig_pools_of(
                after, host)):
            host_notes.append(_(
                'MIG pools without a per-type class (--resource-class) tell '
                'their VFs apart by type traits: after the re-cut set each '
                'VF\'s trait to its new profile\'s ("openstack resource '
                'provider trait set"), or use per-type classes, which Nova '
                'keeps by itself.'))
        if recut_vgpu and any(p['resource_class'] == 'VGPU'
                              for p in vgpu_pools_of(after, host)):
            host_notes.append(_(
                'vgpu pools without a per-type class (--resource-class) '
                'tell their pGPUs apart by type traits: after the re-cut '
                'set each re-cut pGPU\'s trait to its new type\'s pool\'s '
                '("openstack resource provider trait set"), or use '
                'per-type classes, which Nova keeps by itself.'))
    chosen = {n: p for n, p in after.items()
              if set(p['hosts']) & set(hosts)}
    config = nova_config.build(chosen, new_trees, mig_types=mig_types)
    for target in list(config.targets) + list(config.notes):
        if isinstance(target, tuple) and target[1] not in hosts:
            config.targets.pop(target, None)
            config.notes.pop(target, None)
    return config, notes, unserved


def _choose(choices, host):
    """The pool serving a profile on HOST: one holding it, else the
    first by name."""
    holding = [p for p in choices if host in p['hosts']]
    return (holding or choices)[0]


def host_files(config: nova_config.Config,
               hosts: Iterable[str]) -> list[tuple[str, str]]:
    """[(file name, text)]: the ``nova-compute-<host>.conf`` of each
    planned host (``nova_config.ini_path``), as ``gpu config show
    --layout ini`` writes them."""
    return [(nova_config.ini_path(nova_config.host_target(h)),
             nova_config.render_target(config, nova_config.host_target(h)))
            for h in hosts]


def flavor_figures(cards_: Iterable[Mapping[str, typing.Any]],
                   rows: Iterable[Mapping[str, typing.Any]],
                   of_flavor: Mapping[str, str]) -> dict[str, tuple[int, int]]:
    """{flavor: (free now, free after)}: instances of each flavor's
    profile not in use on the planned cards, now and after the plan (what
    ``gpu capacity list`` should then say, other limits aside)."""
    now: collections.Counter[str]
    after: collections.Counter[str]
    now, after = collections.Counter(), collections.Counter()
    by_id = {c['id']: c for c in cards_}
    for row in rows:
        card = by_id.get(row['id'])
        in_use = collections.Counter(card['in_use'] if card else ())
        for name, _start in row['current']:
            now[name] += 1
        for name, _start in row['proposed']:
            after[name] += 1
        kept = in_use if not row['recut'] else in_use & collections.Counter(
            row['proposed'])
        for name, _start in in_use.elements():
            now[name] -= 1
        for name, _start in kept.elements():
            after[name] -= 1
    return {flavor: (now[profile], after[profile])
            for flavor, profile in of_flavor.items()}


def servers_to_move(card: Mapping[str, typing.Any],
                    row: Mapping[str, typing.Any]) -> list[str]:
    """Consumers (server ids) on placements of CARD that ROW's layout
    does not keep."""
    if not row['recut']:
        return []
    keep = set(row['proposed'])
    return sorted(s for placement, consumers in card['servers'].items()
                  if placement not in keep for s in consumers)


def move_text(row: Mapping[str, typing.Any] | None) -> str | None:
    """How a server of a re-cut card would leave it, from its row of
    ``gpu host drain --dry-run`` (``rules.maintenance.plan``, with
    downtime allowed): 'cold to gpu-mig-2 (downtime: stop-start)',
    'shelve (downtime: until unshelved)' or 'stays: <reason>'; None
    without a row."""
    if not row:
        return None
    if row.get('destination'):
        return _('%(method)s to %(destination)s (downtime: %(downtime)s)') % {
            'method': row['method'], 'destination': row['destination'],
            'downtime': row['downtime']}
    if row.get('method') != maintenance.STAYS:
        # shelve: it leaves for no host (the drain plan says why)
        return _('%(method)s (downtime: %(downtime)s)') % {
            'method': row['method'], 'downtime': row['downtime']}
    return _('%(method)s: %(reason)s') % {
        'method': row['method'], 'reason': row.get('reason') or '-'}


def host_cards(
        host: str, devices: Sequence[dict[str, typing.Any]],
        pools: Mapping[str, dict[str, typing.Any]],
        vgpu_profiles: Mapping[str, str], allocations: Allocations | None,
        model: str | None = None
) -> tuple[list[dict[str, typing.Any]], list[str]]:
    """(cards, notes) of one host: the pGPUs its vgpu pools serve
    (``vgpu_cards``), then its MIG cards made of the other devices
    (``cards``); without a MIG pool, devices that offer VGPU and serve
    no pool of the host are named in a note. DEVICES: the host's tree
    (``nova_config.trees_from_snapshot``); POOLS: every pool."""
    vgpu_pools = vgpu_pools_of(pools, host)
    found, notes = vgpu_cards(host, devices, vgpu_pools, vgpu_profiles,
                              allocations, model)
    # the pGPUs of a vgpu pool are its cards; the rest are VFs
    time_sliced = {d['uuid'] for d, _pool in vgpu_devices(devices,
                                                          vgpu_pools)}
    rest = [d for d in devices if d['uuid'] not in time_sliced]
    mig_pools = mig_pools_of(pools, host)
    if mig_pools:
        more, more_notes = cards(host, rest, mig_pools, allocations, model)
        return found + more, notes + more_notes
    loose = sorted(d['address'] or d['name'] for d in rest
                   if 'VGPU' in d['resources'])
    if loose:
        notes.append(_(
            '%(host)s: pGPUs %(rps)s offer VGPU but serve no pool of the '
            'host: left out of the plan (add the host to the pool of their '
            'type).') % {'host': host, 'rps': ', '.join(loose)})
    return found, notes


def unserved_notes(card: str, names: Iterable[str]) -> list[str]:
    """What to do about the profiles NAMES the plan proposes on CARD (an
    id) that no pool serves, which its nova.conf leaves out."""
    notes = []
    for name in names:
        if vgpu_model(name):
            notes.append(_(
                '%(card)s: the plan proposes %(profile)s, which no vgpu '
                'pool serves (or its mdev type is not known): its '
                'nova.conf leaves it out. Create a pool for it '
                '("openstack gpu pool create --mode vgpu --vgpu-type '
                '<mdev type> --property %(key)s=%(profile)s") or give '
                '--vgpu-mdev-type %(profile)s=<mdev type> of an '
                'existing one, and plan again.')
                % {'card': card, 'profile': name, 'key': PROFILE_PROPERTY})
        else:
            notes.append(_(
                '%(card)s: the plan proposes %(profile)s, which no MIG pool '
                'serves: its nova.conf leaves it out. Create a pool for it '
                '("openstack gpu pool create --mode mig --mig-profile '
                '%(profile)s") and plan again.')
                % {'card': card, 'profile': name})
    return notes
