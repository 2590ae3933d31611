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

"""Pure: the plan of ``gpu host drain``: how each server leaves, where to.

Three questions, plain data in and out, no I/O:

``kind(server, pools)``
    What Nova has to move: ``vgpu``, ``mig`` (MIG-backed vGPU),
    ``passthrough``, ``baremetal``, ``cyborg`` (``accel:device_profile``),
    ``mem_encryption`` (``hw:mem_encryption``) or ``plain``.

``method(kind, requested, allow_downtime, source, destination)``
    live / cold / shelve / stays, the downtime it brings and why, from
    what Nova allows for the device and both hosts' facts (``facts``
    below). ``requested`` is ``--method`` (auto, live, cold, shelve).
    Only a live migration is without downtime, so cold migration and
    shelve-offload both need ``allow_downtime``; ``auto`` takes the first
    of live, cold (a destination fits), shelve (none does) that is allowed.

``plan(cloud, draining, ...)``
    One row per server of the DRAINING hosts (``ROW_FIELDS``) and a
    summary of what cannot move, over the one model of the cloud as read
    (``model.Cloud``: its servers, hosts, trees, services, aggregates,
    pools). Destinations are chosen server by server (sorted by source
    host, name, id) against the free capacity of every other host, and
    each choice is subtracted (``fit.one_allocation`` / ``fit.consume``)
    before the next server is placed, so two servers never count on the
    same last GPU.
    The request of a server is the one ``gpu candidate list`` and ``gpu
    capacity list`` build (``request.build`` of its embedded flavor and
    project: pool steering, isolation and project aggregates, traits,
    root requirements), judged by ``fit.fit_counts``, and hosts that
    Nova's filters after Placement remove (``manager.select``: disabled
    or down services, aggregate extra specs, tenant isolation, host
    capabilities) are no destination. Hosts drained or cordoned are
    never destinations. A cold migration keeps its source allocation (the
    migration record's) until it is confirmed, and a live migration until
    it ends; that never frees room for another server here, since every
    source is a host being drained. Shelve-offload frees the GPU and needs
    no destination (the owner's unshelve is scheduled afresh).
    Among the hosts where a server fits, the destination is the one with
    most free units of the server's GPU classes, then the first by name
    (spread, deterministic). With ``auto`` or ``live``, the first such host
    where a live migration is possible wins over a better cold one.

Host facts (``facts``): ``{host: {'libvirt': '8.6.0', 'qemu': '8.1.0',
'nova': '2024.1', 'mdev_types': {'nvidia-35'} | None, 'live_migratable':
bool | {alias: bool} | None, 'assumed': set of the keys above that are
documented defaults rather than read (True: all)}}``. What the API does
not show (versions, ``device_spec`` flags) comes from ``--host-fact``,
from what each host's gpuclient-host-facts collected (``nova``,
``libvirt``, ``qemu``, ``mdev_types``: ``rules.host_facts.scheduling``,
under the operator's), from nova.conf or from defaults; a note names
every fact a decision rested on that was assumed. A missing or None fact
is unknown, and a live migration that depends on it is not planned.

Nova's documentation behind the rules:

* vGPU live migration: Nova 2024.1 (Caracal), libvirt >= 8.6.0 and QEMU
  >= 8.1.0 on both computes, the same mdev type enabled on the target
  (docs.openstack.org/nova/latest/admin/virtual-gpu.html, "Caveats").
  The NVIDIA driver must support migration too; that is not checked.
* PCI passthrough live migration: Nova 2025.1 (Epoxy), the device_spec and
  the alias marked ``live_migratable`` (admin/pci-passthrough.html). The
  same for VF-backed vGPU (a VF passed through), which also needs
  ``[libvirt] live_migration_permit_post_copy = False`` (Nova refuses
  post-copy with VFIO devices) and an NVIDIA driver that migrates it (not
  checked). A pool made ``--live-migratable`` says so for its hosts
  (``pool_facts``: assumed, noted), unless ``--host-fact`` says otherwise.
* Ironic instances cannot be migrated (the ironic driver has no migrate).
* Cyborg accelerators: resize, cold and live migration are not supported
  (admin/accelerators.html). Nova supports shelve/unshelve of them since
  Wallaby as far as we know, but the issue asks for "stays, notify" and
  this module keeps that until proven on a cloud.
* AMD SEV (``hw:mem_encryption``): no live migration
  (admin/sev.html, "Limitations"); cold migration is planned as for any
  server (we believe it is supported; not yet proven on a cloud).
"""

from __future__ import annotations

from collections.abc import Collection
from collections.abc import Container
from collections.abc import Hashable
from collections.abc import Iterable
from collections.abc import Mapping
import typing

from gpuclient.i18n import _
from gpuclient.rules import plan as plan_mod
from gpuclient.rules import pools as pools_mod
from gpuclient.rules import specs as specs_mod
from gpuclient.rules import usage
from gpuclient.rules.scheduler import filters
from gpuclient.rules.scheduler import fit as fit_mod
from gpuclient.rules.scheduler import host_manager
from gpuclient.rules.scheduler import manager
from gpuclient.rules.scheduler import request_spec
from gpuclient.rules.scheduler import resource_request as request_mod

if typing.TYPE_CHECKING:
    from gpuclient.rules import model

# --method
AUTO, LIVE, COLD, SHELVE = 'auto', 'live', 'cold', 'shelve'
METHODS = (AUTO, LIVE, COLD, SHELVE)
STAYS = 'stays'
# downtime
NO_DOWNTIME = 'none'
STOP_START = 'stop-start'
UNTIL_UNSHELVED = 'until unshelved'
WITH_THE_HOST = 'with the host'
DOWNTIME = {LIVE: NO_DOWNTIME, COLD: STOP_START, SHELVE: UNTIL_UNSHELVED,
            STAYS: WITH_THE_HOST}

# server statuses Nova's API moves a server from (compute/api.py's
# check_instance_state of live_migrate, resize/migrate and shelve)
ACTIVE, PAUSED, SHUTOFF, SUSPENDED = 'ACTIVE', 'PAUSED', 'SHUTOFF', 'SUSPENDED'
LIVE_STATES = (ACTIVE, PAUSED)
COLD_STATES = (ACTIVE, SHUTOFF)
SHELVE_STATES = (ACTIVE, PAUSED, SHUTOFF, SUSPENDED)

# kinds
VGPU, MIG, PASSTHROUGH = pools_mod.VGPU, pools_mod.MIG, pools_mod.PASSTHROUGH
VGPU_VF = pools_mod.VGPU_VF
BAREMETAL, CYBORG = pools_mod.BAREMETAL, specs_mod.CYBORG
MEM_ENCRYPTION = 'mem_encryption'
PLAIN = 'plain'
UNMOVABLE = (BAREMETAL, CYBORG)

# what Nova needs for a live migration of the device (see the docstring)
VGPU_LIBVIRT = (8, 6, 0)
VGPU_QEMU = (8, 1, 0)
VGPU_NOVA = (2024, 1)
PCI_NOVA = (2025, 1)

ROW_FIELDS = ('server', 'name', 'project', 'flavor', 'source', 'kind',
              'resource_class', 'gpus', 'devices', 'method', 'destination',
              'downtime', 'reason', 'notes')


def version(text: object) -> tuple[int, ...] | None:
    """'8.6.0' -> (8, 6, 0); '2024.1' -> (2024, 1); None when unknown."""
    if text is None:
        return None
    parts = []
    for part in str(text).strip().split('.'):
        digits = ''
        for char in part:
            if not char.isdigit():
                break
            digits += char
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts) or None


FACT_KEYS = ('nova', 'libvirt', 'qemu', 'live_migratable', 'mdev_types',
             'post_copy')
# facts that are true or false
_BOOL_FACTS = ('live_migratable', 'post_copy')


def parse_facts(items: Iterable[str] | None, keys: Container[str] = FACT_KEYS
                ) -> dict[str | None, dict[str, typing.Any]]:
    """{host or None (every host): facts} from ``--host-fact`` values
    ``[<host>:]<key>=<value>`` with a key of KEYS: versions as given,
    ``live_migratable`` and ``post_copy`` (the host's ``[libvirt]
    live_migration_permit_post_copy``) true/false, ``mdev_types``
    comma-separated, the NUMA facts (host_manager.NUMA_FACT_KEYS) as
    parse_numa_fact reads them. A ValueError names a bad item."""
    out: dict[str | None, dict[str, typing.Any]] = {}
    # the text given, then the fact it says
    value: str | bool | int | list[int] | dict[int, int | None] | set[str]
    for item in items or ():
        target, equals, value = str(item).partition('=')
        host, colon, key = target.rpartition(':')
        key = key.strip().lower()
        if not equals or key not in keys or not value.strip():
            raise ValueError(item)
        value = value.strip()
        if key in host_manager.NUMA_FACT_KEYS:
            try:
                value = host_manager.parse_numa_fact(key, value)
            except ValueError:
                raise ValueError(item) from None
        elif key in _BOOL_FACTS:
            if value.lower() not in ('true', 'false', 'yes', 'no'):
                raise ValueError(item)
            value = value.lower() in ('true', 'yes')
        elif key == 'mdev_types':
            value = {v.strip() for v in value.split(',') if v.strip()}
        elif version(value) is None:
            raise ValueError(item)
        out.setdefault(host.strip() if colon else None, {})[key] = value
    return out


def host_facts(given: Mapping[str | None, Mapping[str, typing.Any]],
               hosts: Iterable[str],
               pools: Mapping[str, Mapping[str, typing.Any]] | None = None,
               settings: Mapping[str, typing.Any] | None = None
               ) -> dict[str, dict[str, typing.Any]]:
    """{host: facts} for HOSTS from ``parse_facts``: a host's own facts
    over the ones given for every host, over what POOLS say
    (``pool_facts``). A ``--nova-conf`` (SETTINGS) that sets ``[libvirt]
    live_migration_permit_post_copy`` gives ``post_copy`` for every host
    not told otherwise."""
    common = dict(given.get(None) or {})
    written = ((settings or {}).get('libvirt') or {}).get(
        'live_migration_permit_post_copy')
    if written is not None:
        common.setdefault('post_copy', written)
    said = pool_facts(pools)
    found = {}
    for host in hosts:
        told = dict(common, **(given.get(host) or {}))
        facts = dict(said.get(host) or {})
        if 'live_migratable' in told:
            facts.pop('assumed', None)  # told, not assumed
        facts.update(told)
        found[host] = facts
    return found


def shown_fact(value: object) -> str:
    """A fact's value as ``--host-fact`` writes it."""
    if isinstance(value, (set, frozenset)):
        return ','.join(sorted(str(v) for v in value))
    if isinstance(value, (list, tuple)):
        return ','.join(str(v) for v in value)
    return str(value)


def _trimmed(numbers: Iterable[int]) -> tuple[int, ...]:
    found = list(numbers)
    while found and found[-1] == 0:
        found.pop()
    return tuple(found)


def same_fact(key: str, told: typing.Any, found: typing.Any) -> bool:
    """Whether the operator's value TOLD of KEY says what FOUND (the
    collected one) says: versions by their numbers (8.6 is 8.6.0), the
    GPUs per cell without the empty cells after the last GPU."""
    if key in ('nova', 'libvirt', 'qemu'):
        return _trimmed(version(told) or ()) == _trimmed(version(found)
                                                        or ())
    if key == 'numa_gpus':
        return _trimmed(told) == _trimmed(found)
    if key == 'mdev_types':
        return set(told) == set(found)
    return bool(told == found)


def with_collected(
        told: Mapping[str, Mapping[str, typing.Any]],
        found: Mapping[str, Mapping[str, typing.Any]]
) -> tuple[dict[str, dict[str, typing.Any]], list[str]]:
    """({host: facts}, notes): TOLD ({host: facts}, ``host_facts``: the
    operator's, the pools', nova.conf's) with FOUND ({host: what its
    gpuclient-host-facts collected}, ``rules.host_facts.scheduling.
    collected``) under them. A fact told wins, and each that differs from
    the one collected is a note naming the host, the key and both values.
    The keys taken from FOUND are named in ``host_manager.
    COLLECTED_FACTS``, so that a verdict says where its facts came
    from."""
    merged: dict[str, dict[str, typing.Any]] = {}
    notes = []
    for host, facts in told.items():
        mine = dict(facts)
        used = set()
        for key, value in sorted((found.get(host) or {}).items()):
            if key not in facts:
                mine[key] = value
                used.add(key)
            elif not same_fact(key, facts[key], value):
                notes.append(_(
                    '--host-fact %(key)s=%(told)s overrides what '
                    '%(collector)s collected on %(host)s (%(key)s='
                    '%(found)s).') % {
                        'key': key, 'told': shown_fact(facts[key]),
                        'host': host, 'collector': host_manager.COLLECTOR,
                        'found': shown_fact(value)})
        if used:
            mine[host_manager.COLLECTED_FACTS] = frozenset(used)
        merged[host] = mine
    return merged, notes


def pool_facts(pools: Mapping[str, Mapping[str, typing.Any]] | None
               ) -> dict[str, dict[str, typing.Any]]:
    """{host: facts} the pools record: ``live_migratable`` {alias: True}
    for the members of a pool made ``--live-migratable`` (passthrough,
    vgpu-vf), marked assumed (the pool says what nova.conf should say)."""
    found: dict[str, dict[str, typing.Any]] = {}
    for pool in (pools or {}).values():
        if not (pool.get('live_migratable') and pool.get('alias')
                and pool.get('mode') in pools_mod.PCI_MODES):
            continue
        for host in pool.get('hosts') or ():
            facts = found.setdefault(host, {'live_migratable': {},
                                            'assumed': {'live_migratable'}})
            facts['live_migratable'][pool['alias']] = True
    return found


def _shown(numbers: Iterable[int]) -> str:
    return '.'.join(str(n) for n in numbers)


def kind(server: Mapping[str, typing.Any] | None,
         pools: Mapping[str, Mapping[str, typing.Any]] | None = None) -> str:
    """What Nova has to move for SERVER (its embedded flavor): see the
    module docstring. A bare-metal node's flavor wins over anything else
    it asks, then Cyborg, then the GPU mode, then memory encryption."""
    flavor = (server or {}).get('flavor') or {}
    extra = flavor.get('extra_specs') or {}
    reading = specs_mod.read(extra, pools)
    mode = reading['mode']
    if mode == BAREMETAL:
        return BAREMETAL
    if reading['device_profile']:
        return CYBORG
    if mode in (VGPU, MIG, PASSTHROUGH, VGPU_VF):
        return mode
    if str(extra.get('hw:mem_encryption', '')).lower() in ('true', '1',
                                                          'yes'):
        return MEM_ENCRYPTION
    return PLAIN


def _assumed(facts: Mapping[str, typing.Any] | None, key: str) -> bool:
    assumed = (facts or {}).get('assumed') or ()
    return assumed is True or key in assumed


def _at_least(host: str, facts: Mapping[str, typing.Any] | None,
              key: str, wanted: tuple[int, ...], label: str,
              reasons: list[str], notes: list[str]) -> None:
    """Is FACTS[KEY] >= WANTED? A reason when not (or unknown)."""
    have = version((facts or {}).get(key))
    if have is None:
        reasons.append(_('the %(what)s version of %(host)s is not known '
                         '(give it with --host-fact, or run '
                         'gpuclient-host-facts there)')
                       % {'what': label, 'host': host})
        return
    if have < wanted:
        reasons.append(_('%(host)s has %(what)s %(have)s, and Nova needs '
                         '%(want)s or newer')
                       % {'host': host, 'what': label,
                          'have': _shown(have), 'want': _shown(wanted)})
        return
    if _assumed(facts, key):
        notes.append(_('assumed: %(host)s has %(what)s %(have)s')
                     % {'host': host, 'what': label, 'have': _shown(have)})


def _live_migratable(facts: Mapping[str, typing.Any] | None,
                     alias: str | None) -> bool | None:
    flag = (facts or {}).get('live_migratable')
    if isinstance(flag, dict):
        return flag.get(alias)
    return flag


def live_blockers(
        kind_: str,
        source: tuple[str, Mapping[str, typing.Any] | None],
        destination: tuple[str, Mapping[str, typing.Any] | None],
        mdev_type: str | None = None,
        aliases: Iterable[str] = ()) -> tuple[list[str], list[str]]:
    """(reasons a live migration is not possible, notes of what was
    assumed) between two hosts; no reasons: possible.

    SOURCE and DESTINATION are (host, facts). MDEV_TYPE: the vGPU's
    type; ALIASES: the PCI aliases of the flavor.
    """
    reasons: list[str]
    notes: list[str]
    reasons, notes = [], []
    (src, src_facts), (dst, dst_facts) = source, destination
    if kind_ in UNMOVABLE:
        reasons.append(_('Nova cannot migrate %s servers') % kind_)
        return reasons, notes
    if kind_ == MEM_ENCRYPTION:
        reasons.append(_('Nova does not live-migrate servers with '
                         'encrypted memory (hw:mem_encryption)'))
        return reasons, notes
    if kind_ in (VGPU, MIG, PASSTHROUGH, VGPU_VF):
        _post_copy(src, src_facts, dst, dst_facts, reasons, notes)
    if kind_ in (VGPU, MIG):
        for host, facts in ((src, src_facts), (dst, dst_facts)):
            _at_least(host, facts, 'nova', VGPU_NOVA, 'Nova', reasons,
                      notes)
            _at_least(host, facts, 'libvirt', VGPU_LIBVIRT, 'libvirt',
                      reasons, notes)
            _at_least(host, facts, 'qemu', VGPU_QEMU, 'QEMU', reasons,
                      notes)
        offered = (dst_facts or {}).get('mdev_types')
        if not mdev_type:
            reasons.append(_('the mdev type of the server is not known'))
        elif offered is None:
            # the destination is in the server's pool (its request steers
            # there), and a pool has one mdev type
            notes.append(_('assumed: %(host)s offers mdev type %(type)s '
                           '(its pool\'s)') % {'host': dst,
                                               'type': mdev_type})
        elif mdev_type not in offered:
            reasons.append(_('%(host)s does not offer mdev type %(type)s')
                           % {'host': dst, 'type': mdev_type})
        elif _assumed(dst_facts, 'mdev_types'):
            notes.append(_('assumed: %(host)s offers mdev type %(type)s')
                         % {'host': dst, 'type': mdev_type})
        if kind_ == MIG:
            notes.append(_('MIG-backed vGPU: the NVIDIA driver must support '
                           'migrating it (not checked)'))
    elif kind_ in (PASSTHROUGH, VGPU_VF):
        if kind_ == VGPU_VF:
            notes.append(_('VF-backed vGPU: the NVIDIA driver must support '
                           'migrating it (not checked)'))
        for host, facts in ((src, src_facts), (dst, dst_facts)):
            _at_least(host, facts, 'nova', PCI_NOVA, 'Nova', reasons, notes)
            # None: the device of no alias
            for alias in sorted(aliases) or [None]:  # type: ignore[list-item]
                flag = _live_migratable(facts, alias)
                label = alias or _('its PCI device')
                if flag is None:
                    reasons.append(_('whether %(alias)s is live_migratable '
                                     'on %(host)s is not known')
                                   % {'alias': label, 'host': host})
                elif not flag:
                    reasons.append(_('%(alias)s is not live_migratable on '
                                     '%(host)s (device_spec and alias)')
                                   % {'alias': label, 'host': host})
                elif _assumed(facts, 'live_migratable'):
                    notes.append(_('assumed: %(alias)s is live_migratable '
                                   'on %(host)s')
                                 % {'alias': label, 'host': host})
    return reasons, notes


def _post_copy(src: str, src_facts: Mapping[str, typing.Any] | None,
               dst: str, dst_facts: Mapping[str, typing.Any] | None,
               reasons: list[str], notes: list[str]) -> None:
    """VFIO devices (PCI passthrough, VFs, mediated devices) do not
    live-migrate with post-copy (QEMU commit bf7ef7a2da3e, "vfio/migration:
    Block VFIO migration with postcopy migration"): a host whose
    ``[libvirt] live_migration_permit_post_copy`` is True (``post_copy``
    fact, or the --nova-conf given) is no source or destination of a live
    migration. Not told: Nova 34's default (False), noted."""
    unknown = []
    for host, facts in ((src, src_facts), (dst, dst_facts)):
        flag = (facts or {}).get('post_copy')
        if flag:
            reasons.append(_('%s permits post-copy live migration ([libvirt]'
                             ' live_migration_permit_post_copy = True), '
                             'which QEMU refuses with VFIO devices') % host)
        elif flag is None:
            unknown.append(host)
    if unknown:
        notes.append(_('assumed: [libvirt] live_migration_permit_post_copy '
                       'is False (Nova\'s default) on %s')
                     % ', '.join(unknown))


def _result(method_: str, reasons: Iterable[str] = (),
            notes: Iterable[str] = ()) -> dict[str, typing.Any]:
    return {'method': method_, 'downtime': DOWNTIME[method_],
            'reasons': list(reasons), 'notes': list(notes)}


def method(kind_: str, requested: str, allow_downtime: bool,
           source: tuple[str, Mapping[str, typing.Any] | None],
           destination: tuple[str,
                              Mapping[str, typing.Any] | None] | None = None,
           mdev_type: str | None = None, aliases: Iterable[str] = (),
           status: str | None = None) -> dict[str, typing.Any]:
    """{'method', 'downtime', 'reasons', 'notes'} for one server.

    SOURCE: (host, facts); DESTINATION: (host, facts) of the host chosen
    for it, or None when its request fits on no other host. REQUESTED:
    one of METHODS. STATUS: the server's (None: ACTIVE); Nova's API takes
    a live migration from ACTIVE or PAUSED, a cold one from ACTIVE or
    SHUTOFF (a stopped server stays stopped, so it moves without
    downtime and without --allow-downtime), shelve from those and
    SUSPENDED, and nothing from any other status. ``reasons`` say why a
    better method (or any) was not taken; ``notes`` what was assumed.
    """
    if requested not in METHODS:
        raise ValueError('method: %r is none of %s.'
                         % (requested, ', '.join(METHODS)))
    if kind_ in UNMOVABLE:
        why = {BAREMETAL: _('a bare-metal instance cannot move to another '
                            'node: it stays, tell its project'),
               CYBORG: _('Nova cannot migrate a server with Cyborg '
                         'accelerators (accel:device_profile): it stays, '
                         'tell its project')}[kind_]
        return _result(STAYS, [why])
    status = (status or ACTIVE).upper()
    if status not in SHELVE_STATES:
        return _result(STAYS, [_(
            'Nova moves no server in status %s: settle it first (confirm '
            'or revert a resize, reset an error), then drain again')
            % status])
    reasons: list[str]
    notes: list[str]
    reasons, notes = [], []
    no_room = _('its flavor fits on no other host')
    if requested in (AUTO, LIVE):
        if status not in LIVE_STATES:
            reasons.append(_('no live migration: the server is %s') % status)
        elif destination is None:
            reasons.append(_('no live migration: %s') % no_room)
        else:
            blockers, assumed = live_blockers(kind_, source, destination,
                                              mdev_type, aliases)
            if not blockers:
                return _result(LIVE, notes=assumed)
            reasons.append(_('no live migration: %s') % '; '.join(blockers))
        if requested == LIVE:
            return _result(STAYS, reasons + [_('--method live was asked')])
    downtime = _('give --allow-downtime to stop it')
    if requested in (AUTO, COLD):
        if status not in COLD_STATES:
            reasons.append(_('no cold migration: the server is %s') % status)
        elif destination is None:
            reasons.append(_('no cold migration: %s') % no_room)
        elif status == SHUTOFF:
            found = _result(COLD, reasons, notes + [
                _('the server is stopped: it moves, and stays stopped')])
            found['downtime'] = NO_DOWNTIME
            return found
        elif allow_downtime:
            return _result(COLD, reasons, notes)
        elif requested == COLD:
            return _result(STAYS, reasons + [
                _('a cold migration stops the server: %s') % downtime])
        if requested == COLD:
            return _result(STAYS, reasons)
    if allow_downtime:
        return _result(SHELVE, reasons, notes)
    if requested == SHELVE:
        return _result(STAYS, [_('shelve-offload stops the server: %s')
                               % downtime])
    return _result(STAYS, reasons + [
        _('cold migration and shelve-offload stop the server: %s')
        % downtime])


# -- destinations ------------------------------------------------------------

def server_request(
        cloud: model.Cloud, server: Mapping[str, typing.Any],
        settings: Mapping[str, typing.Any] | None
) -> dict[str, typing.Any]:
    """The Placement request Nova sends to move SERVER (``request.build``
    of its embedded flavor, its project, its pinned zone, with CLOUD's
    pools and aggregates; a server without an image boots from
    volume)."""
    flavor = dict(server.get('flavor') or {})
    flavor.setdefault('extra_specs', {})
    return request_mod.build(
        flavor, None, settings, pools=cloud.pools,
        aggregates=cloud.aggregates,
        project_id=server.get('tenant_id') or server.get('project_id'),
        zone=server.get('pinned_availability_zone'),
        boot_from_volume=not server.get('image'))


def request_key(
        server: Mapping[str, typing.Any]
) -> tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...],
           str | None, str | None, bool]:
    """Equal for servers whose move Nova asks Placement the same for."""
    flavor = server.get('flavor') or {}
    return (tuple(sorted((k, str(v)) for k, v in flavor.items()
                         if k not in ('extra_specs', 'original_name',
                                      'name', 'id'))),
            tuple(sorted((k, str(v)) for k, v in (
                flavor.get('extra_specs') or {}).items())),
            server.get('tenant_id') or server.get('project_id'),
            server.get('pinned_availability_zone'),
            not server.get('image'))


def trees(cloud: model.Cloud
          ) -> dict[str, list[dict[str, dict[str, typing.Any]]]]:
    """{host: [provider trees]} of every host of CLOUD, as
    ``gpuclient.rules.scheduler.fit`` takes them (``model.Cloud.tree``,
    each root with its host's aggregates)."""
    return {host: [cloud.tree(root, cloud.root_aggregates(host))
                   for root in sorted(roots)]
            for host, roots in cloud.host_roots().items()}


def _free_gpus(trees: Iterable[Mapping[str, Mapping[str, typing.Any]]],
               classes: Iterable[str]) -> int:
    return sum(rp['inventory'].get(rc, {}).get('free', 0)
               for tree in trees for rp in tree.values() for rc in classes)


class Room:
    """Free capacity of the destination hosts, consumed as servers are
    placed: the provider trees of every host of CLOUD (``trees``), which
    CLOUD keeps as read. Whether a request fits a tree is asked once per
    request and tree shape (``fit.signature``), as ``gpu capacity list``
    counts."""

    def __init__(self, cloud: model.Cloud):
        # {host: [trees]} as read, never changed
        self.original = trees(cloud)
        self.trees = {host: list(found)
                      for host, found in self.original.items()}
        # host -> [server names placed there]
        self.placed: dict[str, list[str]] = {}
        # (original?, host, index) -> signature
        self._shapes: dict[tuple[bool, str, int],
                           tuple[tuple[typing.Any, ...], ...]] = {}
        # (request key, signature) -> bool
        self._fits: dict[tuple[Hashable, tuple[tuple[typing.Any, ...],
                                               ...]], bool] = {}
        # (original?, host, index, classes) -> free units
        self._free: dict[tuple[bool, str, int, tuple[str, ...]], int] = {}
        # request key -> {host: fits now}
        self._hosts: dict[Hashable, dict[str, bool]] = {}

    def free(self, host: str, classes: tuple[str, ...],
             original: bool = False) -> int:
        """Free units of CLASSES (a tuple) on HOST."""
        total = 0
        trees = (self.original if original else self.trees).get(host, ())
        for index, tree in enumerate(trees):
            where = (original, host, index, classes)
            if where not in self._free:
                self._free[where] = _free_gpus([tree], classes)
            total += self._free[where]
        return total

    def _fits_tree(self, where: tuple[bool, str, int],
                   tree: Mapping[str, Mapping[str, typing.Any]],
                   req: Mapping[str, typing.Any], key: Hashable) -> bool:
        shape = self._shapes.get(where)
        if shape is None:
            shape = self._shapes[where] = fit_mod.signature(tree)
        found = self._fits.get((key, shape))
        if found is None:
            found = self._fits[(key, shape)] = fit_mod.fit_count(
                tree, req, limit=1) > 0
        return found

    def fits(self, host: str, req: Mapping[str, typing.Any],
             original: bool = False, key: Hashable | None = None) -> bool:
        """Does one copy of REQ fit on HOST (as planned so far, or in the
        snapshot)? KEY: what identifies REQ, for the cache (None: none)."""
        trees = (self.original if original else self.trees).get(host, ())
        if key is None:
            return fit_mod.fit_counts(trees, req, limit=1) > 0
        classes = tuple(request_mod.gpu_classes(req))
        # a host without a free unit of the GPU classes fits nothing (as
        # capacity.Fits skips such trees)
        if classes and not self.free(host, classes, original):
            return False
        return any(
            self._fits_tree((original, host, index), tree, req, key)
            for index, tree in enumerate(trees))

    def take(self, host: str, req: Mapping[str, typing.Any],
             label: str) -> bool:
        """Consume one copy of REQ on HOST; False when it does not fit."""
        for index, tree in enumerate(self.trees.get(host, ())):
            allocation = fit_mod.one_allocation(tree, req)
            if allocation is not None:
                self.trees[host][index] = fit_mod.consume(tree, allocation)
                self._shapes.pop((False, host, index), None)
                for where in [w for w in self._free
                              if w[:3] == (False, host, index)]:
                    del self._free[where]
                for known in self._hosts.values():
                    known.pop(host, None)
                self.placed.setdefault(host, []).append(label)
                return True
        return False

    def ranked(self, hosts: Iterable[str], req: Mapping[str, typing.Any],
               key: Hashable | None = None) -> list[str]:
        """HOSTS where REQ fits now, most free GPUs of its classes first,
        then by name."""
        classes = tuple(request_mod.gpu_classes(req))
        if key is None:
            found = [h for h in hosts if self.fits(h, req)]
        else:
            # asked once per request and host, again only where a server
            # was placed since
            known = self._hosts.setdefault(key, {})
            for host in hosts:
                if host not in known:
                    known[host] = self.fits(host, req, key=key)
            found = [h for h in hosts if known[h]]
        return sorted(found, key=lambda h: (-self.free(h, classes), h))


def server_spec(cloud: model.Cloud, server: Mapping[str, typing.Any],
                settings: Mapping[str, typing.Any]
                ) -> request_spec.RequestSpec:
    """The request of a move of SERVER (a ``RequestSpec``,
    ``filters.spec``): its embedded flavor, its project, its pinned zone,
    the Placement request Nova sends (``server_request``) and SETTINGS.
    No image, and no guest NUMA topology asked of the filters: the
    image's requirements and NUMATopologyFilter do not judge a move."""
    return filters.spec(
        settings, server.get('flavor') or {},
        project_id=server.get('tenant_id') or server.get('project_id'),
        zone=server.get('pinned_availability_zone'),
        resource_request=server_request(cloud, server, settings),
        with_numa=False)


def eligible(cloud: model.Cloud, spec: request_spec.RequestSpec,
             hosts: Collection[str], excluded: Mapping[str, str],
             states: filters.HostStates | None = None
             ) -> tuple[list[str], dict[str, str]]:
    """(HOSTS of CLOUD that may take the move SPEC asks (``server_spec``),
    {host: reason}) by the filters Nova applies after Placement
    (``manager.select``), HOSTS in EXCLUDED ({host: reason}) left out
    first. STATES: the hosts' states (``filters.HostStates`` of CLOUD,
    built once per plan; else built here), the hosts Blazar holds among
    them, which BlazarFilter judges where the settings enable it."""
    refused = {h: excluded[h] for h in hosts if h in excluded}
    rest = [h for h in hosts if h not in excluded]
    selected = manager.select(cloud, spec, rest, states)
    for host, reasons in manager.removed(selected).items():
        refused[host] = filters.post_filter_text(host, reasons[0],
                                                 spec.project_id)
    return [h for h in rest if selected[h].passes], refused


def _no_room_reason(room: Room, req: Mapping[str, typing.Any],
                    key: Hashable, allowed: Collection[str],
                    refused: Mapping[str, str], label: str) -> str:
    """Why a server fits on none of ALLOWED now, in one sentence."""
    taken = [h for h in allowed
             if room.fits(h, req, original=True, key=key)]
    if taken:
        return _('the room left on %(hosts)s is taken by servers planned '
                 'before %(server)s (%(others)s)') % {
                     'hosts': ', '.join(taken), 'server': label,
                     'others': ', '.join(sorted({
                         s for h in taken for s in room.placed.get(h, ())}))}
    if not allowed:
        return _('no other host may take it (%s)') % '; '.join(
            '%s: %s' % (h, why) for h, why in sorted(refused.items()))
    return _('its flavor fits on none of %d other eligible host(s)') % len(
        allowed)


def plan(cloud: model.Cloud, draining: Iterable[str],
         cordoned: Iterable[str] = (),
         facts: Mapping[str, Mapping[str, typing.Any]] | None = None,
         requested: str = AUTO, allow_downtime: bool = False,
         settings: dict[str, typing.Any] | None = None,
         gpu_rows: Mapping[str, Mapping[str, typing.Any]] | None = None,
         under_way: Container[str] = ()) -> dict[str, typing.Any]:
    """The drain plan: {'rows': [row dicts with ROW_FIELDS], 'summary':
    {'moves': {method: count}, 'cannot_move': [(server, name, reason)],
    'notify': {project: [ids of its servers with downtime]}}}.

    CLOUD: the ``model.Cloud`` as read, with its servers (Nova's server
    dicts: ``OS-EXT-SRV-ATTR:host``, ``tenant_id``, embedded ``flavor``
    with ``extra_specs``, ``image``, optional ``mdev_type``): those on the
    DRAINING hosts are planned, but the ones UNDER_WAY names (ids of the
    servers whose move Nova runs now, waited for instead). Every host of
    CLOUD is a destination (its trees: ``trees``), with its service,
    hypervisors, aggregates and pools as the filters judge them, and the
    hosts Blazar holds (``model.Cloud.held_hosts``): with BlazarFilter in
    the settings' filters they take no server whose flavor is not a
    reservation's, as Nova's scheduler would refuse the move. CORDONED:
    other hosts that take nothing. FACTS: {host: facts} (module
    docstring). SETTINGS: the scheduler settings, decided once
    (``manager.decide_settings``). GPU_ROWS: {server id:
    ``usage.server_rows`` row} for the GPUs it holds (class, count,
    devices); without one the embedded flavor says class and count.
    """
    settings = manager.decide_settings(settings)
    pools = cloud.pools
    facts = facts or {}
    gpu_rows = gpu_rows or {}
    draining = list(draining)
    servers = [s for s in cloud.servers or ()
               if s.get('OS-EXT-SRV-ATTR:host') in draining
               and s['id'] not in under_way]
    excluded = {h: _('being drained') for h in draining}
    for host in cordoned:
        excluded.setdefault(host, _('cordoned'))
    room = Room(cloud)
    hosts = sorted(room.original)
    rows: list[dict[str, typing.Any]]
    moves: dict[str, int]
    cannot: list[tuple[str, str | None, str | None]]
    rows, moves, cannot = [], {}, []
    specs = {}  # request_key -> server_spec()
    judged = {}  # (extra specs, project) -> eligible()
    # every host's state, once for the whole plan
    states = filters.HostStates(cloud)
    # project -> ids of its servers that go down
    notify: dict[str | None, list[str]] = {}

    def order(server: Mapping[str, typing.Any]) -> tuple[str, str, str]:
        return (server.get('OS-EXT-SRV-ATTR:host') or '',
                server.get('name') or '', server['id'])

    for server in sorted(servers, key=order):
        # a server drained is on a host (a draining one)
        source: str = server.get(  # type: ignore[assignment]
            'OS-EXT-SRV-ATTR:host')
        label = server.get('name') or server['id']
        kind_ = kind(server, pools)
        asked = usage.gpu_request(server, pools)
        holds = gpu_rows.get(server['id']) or {}
        reading = specs_mod.read(
            (server.get('flavor') or {}).get('extra_specs'), pools)
        mdev_type = server.get('mdev_type') or (
            pools.get(asked['pool']) or {}).get('vgpu_type')
        destination, extra = None, []
        if kind_ not in UNMOVABLE and requested != SHELVE:
            key = request_key(server)
            if key not in specs:
                specs[key] = server_spec(cloud, server, settings)
            req = specs[key].resource_request
            flavor_key = (key[1], key[2])  # extra specs, project
            if flavor_key not in judged:
                judged[flavor_key] = eligible(
                    cloud, specs[key], hosts, excluded, states)
            allowed, refused = judged[flavor_key]
            ranked = room.ranked(allowed, req, key)
            if not ranked:
                extra.append(_no_room_reason(room, req, key, allowed, refused,
                                             label))
            else:
                destination = ranked[0]
                if requested in (AUTO, LIVE) and (
                        server.get('status') or ACTIVE).upper() in (
                            LIVE_STATES):
                    for host in ranked:
                        blockers, _n = live_blockers(
                            kind_, (source, facts.get(source)),
                            (host, facts.get(host)), mdev_type,
                            reading['aliases'])
                        if not blockers:
                            destination = host
                            break
        decided = method(
            kind_, requested, allow_downtime, (source, facts.get(source)),
            (destination, facts.get(destination)) if destination else None,
            mdev_type, reading['aliases'], server.get('status'))
        if decided['method'] in (LIVE, COLD):
            # a move has its DESTINATION (method), which mypy does not
            # follow
            room.take(destination, req, label)  # type: ignore[arg-type]
        else:
            destination = None
        reasons = extra + decided['reasons']
        row = {
            'server': server['id'], 'name': server.get('name'),
            'project': server.get('tenant_id') or server.get('project_id'),
            'flavor': asked['flavor'], 'source': source, 'kind': kind_,
            'resource_class': holds.get('resource_class')
            or asked['resource_class'],
            'gpus': holds.get('gpus', asked['gpus']),
            'devices': list(holds.get('devices') or ()),
            'method': decided['method'], 'destination': destination,
            'downtime': decided['downtime'],
            'reason': '; '.join(reasons) or None,
            'notes': decided['notes'],
        }
        rows.append(row)
        moves[row['method']] = moves.get(row['method'], 0) + 1
        if row['method'] == STAYS:
            cannot.append((row['server'], row['name'], row['reason']))
        if row['downtime'] != NO_DOWNTIME:
            notify.setdefault(row['project'], []).append(row['server'])
    return {'rows': rows, 'summary': {'moves': moves, 'cannot_move': cannot,
                                      'notify': notify}}


# -- apply: the forward-only steps, resuming, notices -------------------------

VERIFY_RESIZE = 'VERIFY_RESIZE'
# Nova's status of a cold migration that waits for its confirmation
FINISHED = 'finished'


def unconfirmed_rows(
        servers: Iterable[Mapping[str, typing.Any]],
        migrations: Iterable[Mapping[str, typing.Any]],
        draining: Container[str],
        pools: Mapping[str, Mapping[str, typing.Any]] | None = None
) -> list[dict[str, typing.Any]]:
    """Rows (ROW_FIELDS, plus ``confirm_only``) of the servers that a
    drain of DRAINING moved cold and left in VERIFY_RESIZE (``--no-confirm``,
    or a drain stopped between the move and its confirmation): a re-run
    confirms them. MIGRATIONS: Nova's migration dicts (``instance_uuid``,
    ``source_compute``, ``dest_compute``, ``status``)."""
    waiting = {m['instance_uuid']: m for m in migrations
               if m.get('status') == FINISHED
               and m.get('source_compute') in draining}
    rows = []
    for server in servers:
        migration = waiting.get(server['id'])
        if migration is None or (server.get('status') or '').upper() != (
                VERIFY_RESIZE):
            continue
        asked = usage.gpu_request(server, pools or {})
        rows.append({
            'server': server['id'], 'name': server.get('name'),
            'project': server.get('tenant_id') or server.get('project_id'),
            'flavor': asked['flavor'],
            'source': migration['source_compute'],
            'kind': kind(server, pools), 'resource_class':
            asked['resource_class'], 'gpus': asked['gpus'], 'devices': [],
            'method': COLD,
            'destination': server.get('OS-EXT-SRV-ATTR:host'),
            'downtime': DOWNTIME[COLD],
            'reason': _('moved by an earlier drain; its migration waits '
                        'for confirmation'),
            'notes': [], 'confirm_only': True})
    return sorted(rows, key=lambda r: (r['source'], r['name'] or '',
                                       r['server']))


# Nova's migration statuses of a move that has ended, or that waits for
# its confirmation with the server on its destination (``finished``):
# any other status is a move Nova still runs (queued, accepted,
# preparing, pre-migrating, migrating, running, post-migrating,
# confirming, reverting...)
ENDED = ('confirmed', 'reverted', 'error', 'failed', 'completed',
         'cancelled', 'done', FINISHED)
LIVE_MIGRATION = 'live-migration'


def in_progress(migration: Mapping[str, typing.Any]) -> bool:
    """Whether Nova still runs MIGRATION (a migration dict)."""
    return (migration.get('status') or '').lower() not in ENDED


def incoming(migrations: Iterable[Mapping[str, typing.Any]],
             draining: Container[str]) -> list[Mapping[str, typing.Any]]:
    """The migrations Nova runs now towards a DRAINING host from another
    host: their servers land there when they end (until then the
    server's host is the source)."""
    return sorted((m for m in migrations
                   if in_progress(m) and m.get('dest_compute') in draining
                   and m.get('source_compute') not in draining),
                  key=lambda m: (m.get('dest_compute'),
                                 m.get('instance_uuid') or ''))


def outgoing(servers: Iterable[Mapping[str, typing.Any]],
             migrations: Iterable[Mapping[str, typing.Any]],
             draining: Container[str]) -> dict[str, Mapping[str, typing.Any]]:
    """{server id: migration} of the SERVERS on a DRAINING host whose
    move off it Nova runs now (an earlier drain's, or anyone's) towards
    a host not drained: the drain waits for it rather than starts
    another."""
    on = {s['id']: s.get('OS-EXT-SRV-ATTR:host') for s in servers}
    out: dict[str, Mapping[str, typing.Any]] = {}
    for migration in migrations:
        server = migration.get('instance_uuid')
        if (server in on and in_progress(migration)
                and migration.get('source_compute') == on[server]
                and on[server] in draining
                and migration.get('dest_compute')
                and migration.get('dest_compute') not in draining):
            # SERVER is an id of ON (the test above), not None
            out[server] = migration  # type: ignore[index]
    return out


def under_way_rows(
        servers: Iterable[Mapping[str, typing.Any]],
        moving: Mapping[str, Mapping[str, typing.Any]],
        pools: Mapping[str, Mapping[str, typing.Any]] | None = None
) -> list[dict[str, typing.Any]]:
    """Rows (ROW_FIELDS, plus ``under_way``) of SERVERS whose move Nova
    runs now (MOVING: ``outgoing``): the drain waits for each and checks
    where it ended, instead of asking for another move."""
    rows = []
    for server in servers:
        migration = moving.get(server['id'])
        if migration is None:
            continue
        method_ = LIVE if (migration.get('migration_type')
                           == LIVE_MIGRATION) else COLD
        asked = usage.gpu_request(server, pools or {})
        rows.append({
            'server': server['id'], 'name': server.get('name'),
            'project': server.get('tenant_id') or server.get('project_id'),
            'flavor': asked['flavor'],
            'source': migration.get('source_compute'),
            'kind': kind(server, pools), 'resource_class':
            asked['resource_class'], 'gpus': asked['gpus'], 'devices': [],
            'method': method_, 'destination': migration.get('dest_compute'),
            'downtime': DOWNTIME[method_],
            'reason': _('a move Nova runs already (migration status '
                        '%s): waited for') % migration.get('status'),
            'notes': [], 'under_way': True})
    return sorted(rows, key=lambda r: (r['source'], r['name'] or '',
                                       r['server']))


def left_text(servers: Iterable[Mapping[str, typing.Any]],
              arriving: Iterable[Mapping[str, typing.Any]]) -> str:
    """What a read-back found on the drained hosts, in one line: the
    SERVERS still there and the migrations ARRIVING (``incoming``)."""
    parts = ['%s (%s) on %s, %s' % (
        s.get('name') or s['id'], s['id'], s.get('OS-EXT-SRV-ATTR:host'),
        s.get('status')) for s in servers]
    parts += [_('%(server)s arriving on %(host)s from %(source)s '
                '(migration status %(status)s)') % {
                    'server': m.get('instance_uuid'),
                    'host': m.get('dest_compute'),
                    'source': m.get('source_compute'),
                    'status': m.get('status')} for m in arriving]
    return '; '.join(parts)


def blockers(
        rows: Iterable[dict[str, typing.Any]]) -> list[dict[str, typing.Any]]:
    """The rows of servers that would stay on a drained host."""
    return [row for row in rows if row['method'] == STAYS]


def blockers_text(rows: Iterable[Mapping[str, typing.Any]]) -> str:
    return '; '.join('%s (%s): %s' % (row['name'] or row['server'],
                                      row['server'], row['reason']
                                      or _('no reason'))
                     for row in rows)


def steps(rows: Iterable[Mapping[str, typing.Any]],
          cordon_steps: Iterable[plan_mod.Step],
          tree_uuids: Mapping[str, Iterable[str]], confirm: bool = True,
          timeout: int | None = None) -> list[plan_mod.Step]:
    """The drain's steps, in order: the cordon first (CORDON_STEPS, not
    undone), then one move per row of ROWS as planned (their order: by
    source host, name, id), forward only. TREE_UUIDS: {host: [provider
    uuids of its trees]}, where each move checks the GPU allocation
    went. Servers that stay get no step."""
    out = list(cordon_steps)
    for row in rows:
        method_ = row['method']
        if method_ == STAYS:
            continue
        classes = [row['resource_class']] if row.get('resource_class') \
            else []
        providers = {
            'source': sorted(tree_uuids.get(row['source']) or ()),
            'destination': sorted(tree_uuids.get(row['destination'])
                                  or ()),
        }
        args = (row['server'], row['name'], row['source'])
        gpus = row.get('gpus') or None
        if row.get('confirm_only'):
            if confirm:
                out.append(plan_mod.confirm_migration(
                    *args, row['destination'], classes, providers,
                    timeout, gpus=gpus))
        elif method_ == LIVE:
            out.append(plan_mod.live_migrate(
                *args, row['destination'], classes, providers, timeout,
                gpus=gpus, under_way=bool(row.get('under_way'))))
        elif method_ == COLD:
            out.append(plan_mod.cold_migrate(
                *args, row['destination'], classes, providers, timeout,
                confirm=confirm, gpus=gpus,
                under_way=bool(row.get('under_way'))))
        elif method_ == SHELVE:
            out.append(plan_mod.shelve(*args, classes, providers, timeout))
    return out


_WHAT_HAPPENS = {
    LIVE: _('live-migrated to %(destination)s: it keeps running (no '
            'downtime expected)'),
    COLD: _('cold-migrated to %(destination)s: stopped, moved and '
            'started again (expect a few minutes of downtime)'),
    SHELVE: _('shelved and offloaded: its GPUs are freed and it stays '
              'down until you unshelve it ("openstack server unshelve '
              '%(server)s")'),
    STAYS: _('stays on the host: %(reason)s; it goes down with the host '
             'during the maintenance'),
}


def notices(rows: Iterable[Mapping[str, typing.Any]], hosts: Iterable[str],
            reason: str | None = None) -> dict[str, str]:
    """{project: plain text}: one notice per project with servers on the
    drained HOSTS, saying for each server what happens to it, the
    downtime to expect and why, for the operator to send."""
    by_project: dict[str, list[Mapping[str, typing.Any]]] = {}
    for row in rows:
        by_project.setdefault(row['project'] or _('(no project)'),
                              []).append(row)
    out = {}
    for project, mine in sorted(by_project.items()):
        lines = [
            _('Maintenance of compute host(s) %(hosts)s') % {
                'hosts': ', '.join(sorted(hosts))},
            _('Reason: %s') % ((reason or '').strip() or _('maintenance')),
            _('Project: %s') % project,
            '',
            _('Your servers on these hosts:'),
        ]
        for row in mine:
            gpus = ('%s x %s' % (row['gpus'], row['resource_class'])
                    if row.get('resource_class') else _('no GPU'))
            lines.append('')
            lines.append(_('- %(name)s (%(server)s), flavor %(flavor)s, '
                           '%(gpus)s') % {
                'name': row['name'] or row['server'], 'server':
                row['server'], 'flavor': row['flavor'] or '-',
                'gpus': gpus})
            lines.append('  ' + _WHAT_HAPPENS[row['method']] % {
                'destination': row['destination'] or '-',
                'server': row['server'],
                'reason': row['reason'] or _('it cannot be moved')})
            lines.append('  ' + _('Downtime: %s') % row['downtime'])
        out[project] = '\n'.join(lines) + '\n'
    return out


def notice_name(project: object) -> str:
    """The file name of PROJECT's notice (no path separators)."""
    safe = ''.join(c if c.isalnum() or c in '-_.' else '_'
                   for c in str(project))
    return 'drain-notice-%s.txt' % safe.lstrip('.')
