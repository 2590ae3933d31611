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

"""Pure: the checks of the GPU hosts themselves, from their facts.

What gpuclient-host-facts publishes of each host (``cloud.host_facts``,
{compute host: HostFacts} as the cloud's Prometheus holds them) judged
against the pools the host serves, what Placement offers there and the
pool's layout: the IOMMU, the drivers of the GPUs and of the other
members of their IOMMU groups, the VFs, vGPU types and MIG GPU instances
a reboot loses, a MIG or VF layout other than the one Nova offers, a MIG
mode change pending a reset, mdevctl, and facts older than the
collector's timer. The versions of the NVIDIA driver, kernel, libvirt and
QEMU across a pool's hosts are gpu-driver-drift's (``gpus``), which reads
them here too.

Trust: a fact that is None or that the collector could not read
(``HostFacts.unreadable``) is never judged as a value: the check says
"not judged" of that host or device, naming the fact. A host without
facts (its collector is not running, or its textfile is not scraped),
one whose series several collectors publish, and one whose facts are
older than STALE_AFTER are judged by no check but host-facts-stale (the
old ones): each check names them in one "not judged" warning.
``cloud.host_facts`` None: nothing is judged, with Prometheus' reason
when it could not be read (none configured: the checks could not run,
``checks.not_run`` says so).

Which cards a pool has on a host: the card of each device provider
Placement shows serving the pool (a VF's card from the facts, else from
its address), and, for the checks that must see what Placement no longer
offers, the cards the pool's own fields name (a passthrough or vgpu-vf
pool's PCI id, NVIDIA's VFs having their card's id; every MIG GPU of a
mig pool's host).
"""

from __future__ import annotations

import collections
from collections.abc import Iterable
from collections.abc import Mapping
import typing

from gpuclient.i18n import _
from gpuclient.rules import catalogue
from gpuclient.rules import host_prep
from gpuclient.rules import pools as pools_mod
from gpuclient.rules import utilisation as utilisation_mod
from gpuclient.rules.checks import utils
from gpuclient.rules.host_facts import shapes
from gpuclient.rules.nova_conf import render as nova_config
from gpuclient.rules.profiles import vf as profile_vf

if typing.TYPE_CHECKING:
    from gpuclient.rules import model

# the field of the model the checks read (cloud.unread, cloud.unconfigured
# name it when it could not be read)
SOURCE = 'host_facts'

# The collector's timer (etc/systemd/gpuclient-host-facts.timer) runs it
# every five minutes; facts older than three of its periods are stale: a
# run may come late or fail once, three in a row is a collector that
# stopped. The shipped alert GPUClientHostFactsStale uses the same.
TIMER_SECONDS = 300
STALE_PERIODS = 3
STALE_AFTER = TIMER_SECONDS * STALE_PERIODS

# the pools whose compute hosts are prepared (not Ironic's nodes)
HOST_MODES = (pools_mod.PASSTHROUGH, pools_mod.VGPU, pools_mod.MIG,
              pools_mod.VGPU_VF)
# IOMMU on is a must: VFIO passthrough, and SR-IOV VFs (vgpu-vf, and the
# VFs that carry MIG-backed vGPUs); time-sliced vGPU on mediated devices
# works without it, as the recipe asks it anyway
IOMMU_MODES = (pools_mod.PASSTHROUGH, pools_mod.MIG, pools_mod.VGPU_VF)
# the modes whose cards NVIDIA's vGPU host driver must own
NVIDIA_MODES = (pools_mod.VGPU, pools_mod.MIG, pools_mod.VGPU_VF)
# the modes whose vGPUs are mediated devices (mdevctl persists them)
MDEV_MODES = (pools_mod.VGPU, pools_mod.MIG)
# the modes whose cards are cut into a layout (MIG instances, typed VFs)
LAYOUT_MODES = (pools_mod.MIG, pools_mod.VGPU_VF)

VFIO_PCI = 'vfio-pci'
NVIDIA = 'nvidia'
# the drivers a member of a passed-through GPU's IOMMU group may have for
# the group to be viable for VFIO: vfio-pci (or a VFIO variant driver,
# whose name says vfio), pci-stub, or none at all; a PCI bridge (class
# 06) is left out
VIABLE_DRIVERS = ('', VFIO_PCI, 'pci-stub')
BRIDGE_CLASS = '06'

# what lets the host checks judge a host Prometheus has no current facts
# of
HOST_FACTS_FIX = _(
    'run gpuclient-host-facts on every GPU host (systemctl enable --now '
    'gpuclient-host-facts.timer) and scrape node_exporter\'s textfile '
    'directory into the cloud\'s Prometheus: see "openstack gpu host '
    'facts" and the user guide\'s "Preparing and checking GPU hosts"')
# ... a fact the collector could not read on one host
UNREADABLE_FIX = _(
    'on %(host)s: journalctl -u gpuclient-host-facts.service says why the '
    'collector could not read it; openstack gpu host facts %(host)s shows '
    'what it read')

NO_FACTS = _('no gpuclient-host-facts series: the collector is not '
             'running there, or node_exporter\'s textfile is not scraped')


# -- the facts, and which of them can be judged -------------------------------

class Judged(typing.NamedTuple):
    """The facts the checks may judge of some hosts: FACTS ({host:
    HostFacts}) of those whose facts are there and current, UNUSABLE
    ({host: why not}) the others."""

    facts: dict[str, shapes.HostFacts]
    unusable: dict[str, str]


def age(cloud: model.Cloud, facts: shapes.HostFacts) -> float | None:
    """How old FACTS were when they were read (seconds), or None when
    either time is not known."""
    if cloud.host_facts_read_at is None or facts.collected_at is None:
        return None
    return cloud.host_facts_read_at - facts.collected_at


def _duration(seconds):
    return utilisation_mod.duration_text(max(int(seconds), 0))


def _unusable(cloud, facts, stale):
    """Why FACTS cannot be judged, or None. STALE: old facts are judged
    (host-facts-stale judges their age)."""
    if facts is None:
        return NO_FACTS
    if facts.conflicting:
        return _('the series of %(n)d collectors, %(exporters)s, say they '
                 'are this host: which one it is is not known') % {
                     'n': len(facts.exporters),
                     'exporters': _(' and ').join(sorted(facts.exporters))}
    old = age(cloud, facts)
    if not stale and old is not None and old > STALE_AFTER:
        return _('its facts were collected %(age)s before they were read, '
                 'its collector running every %(period)s: see '
                 'host-facts-stale') % {
                     'age': _duration(old),
                     'period': _duration(TIMER_SECONDS)}
    return None


def judged_facts(
        cloud: model.Cloud, check: str, hosts: Iterable[str],
        stale: bool = False
) -> tuple[Judged | None, list[utils.Finding]]:
    """(the facts of HOSTS CHECK may judge, findings), or (None, findings)
    when ``cloud.host_facts`` is None: a "not judged" warning when
    Prometheus could not be read (``cloud.unread``), none when it is not
    configured or was not asked (``checks.not_run`` says why). STALE:
    facts older than STALE_AFTER are judged too."""
    if cloud.host_facts is None:
        error = cloud.unread.get(SOURCE)
        if error is None:
            return None, []
        return None, [utils.not_judged(
            check, 'Prometheus',
            _('the hosts\' facts (gpuclient-host-facts) could not be read '
              '(%s)') % error, utils.PROMETHEUS_FIX)]
    found: dict[str, shapes.HostFacts] = {}
    unusable: dict[str, str] = {}
    for host in sorted(set(hosts)):
        facts = cloud.host_facts.get(host)
        why = _unusable(cloud, facts, stale)
        if why is None and facts is not None:
            found[host] = facts
        else:
            unusable[host] = why or NO_FACTS
    return Judged(found, unusable), []


def unusable_row(check: str, judged: Judged,
                 pools_of: Mapping[str, Iterable[str]]
                 ) -> list[utils.Finding]:
    """One "not judged" warning of CHECK naming the hosts JUDGED has no
    usable facts of, and why (POOLS_OF: {host: its pools}); none when
    there are none."""
    items = sorted(judged.unusable.items())
    if not items:
        return []
    named = '; '.join('%s (%s)' % item for item in items[:utils.EXAMPLES])
    if len(items) > utils.EXAMPLES:
        named += '; ...'
    return [utils.not_judged(
        check, _('%d host(s)') % len(items),
        _('Prometheus has no current facts of %s, so what those hosts '
          'are is not known') % named, HOST_FACTS_FIX,
        sorted({p for host, _why in items for p in pools_of.get(host, ())}))]


# what stands in the facts named by unreadable_row for a tool that is not
# installed (a fact not read because nothing could read it)
NO_NVIDIA_SMI = ('nvidia_smi', '')


def _fact_text(fact, address=''):
    if (fact, address) == NO_NVIDIA_SMI:
        return _('nvidia-smi is not installed')
    text = shapes.HOST_FACTS.get(fact) or shapes.FUNCTION_FACTS.get(
        fact) or fact
    if address:
        text = _('%(address)s: %(what)s') % {'what': text,
                                             'address': address}
    return _('%s could not be read') % text


def unreadable_row(check: str, host: str, obj: str,
                   missing: Iterable[tuple[str, str]], question: str,
                   pools: Iterable[str] = ()) -> utils.Finding:
    """A "not judged" warning of CHECK about OBJ on HOST: the facts MISSING
    ((fact, PCI address or ''), or NO_NVIDIA_SMI) could not be read (the
    collector said so, or Prometheus has no series of them), so QUESTION
    is not known."""
    seen = list(dict.fromkeys(missing))
    return utils.not_judged(
        check, obj,
        _('on %(host)s, %(what)s, so %(question)s is not known') % {
            'host': host, 'question': question,
            'what': '; '.join(_fact_text(f, a) for f, a in seen)},
        UNREADABLE_FIX % {'host': host}, pools)


def unknown(facts: shapes.HostFacts, wanted: Iterable[tuple[str, str]]
            ) -> list[tuple[str, str]]:
    """Those of WANTED ((fact, PCI address or '')) the collector could not
    read on the host of FACTS."""
    return [(fact, address) for fact, address in wanted
            if facts.is_unreadable(fact, address)]


def _pools_of(cloud, modes):
    """{host: [its pools of MODES]}, by name."""
    found = {}
    for name, pool in sorted(cloud.pools.items()):
        if pool['mode'] in modes:
            for host in pool['hosts']:
                found.setdefault(host, []).append(name)
    return found


def _some(names):
    names = sorted(names)
    return ', '.join(names[:utils.EXAMPLES]) + (
        ', ...' if len(names) > utils.EXAMPLES else '')


def _device_label(host, address):
    return 'device %s %s' % (host, address)


def _cordon_fix(host, then):
    return _('openstack gpu host cordon %(host)s; openstack gpu host drain '
             '%(host)s; then %(then)s; openstack gpu host uncordon '
             '%(host)s') % {'host': host, 'then': then}


def _render(pools):
    """'openstack gpu host render --pool P --output-dir <dir>' of the
    first of POOLS."""
    return ('openstack gpu host render --pool %s --output-dir <dir>'
            % sorted(pools)[0])


# -- what Placement offers of a pool on a host --------------------------------

class Offer(typing.NamedTuple):
    """What Placement offers of POOL on the card at CARD (its PF
    address): the DEVICES (providers: a VF each, or the pGPU) and the
    UNITS (a VF each; a pGPU's vGPUs)."""

    pool: str
    card: str
    devices: list[str]
    units: int


def _serves(pool, device):
    """Does the device provider DEVICE (``trees_from_snapshot``) offer
    POOL's devices: its class, and for the class VGPU its type trait?"""
    rc = pool['resource_class']
    if rc not in device['resources']:
        return False
    if rc != 'VGPU':
        return True
    trait = pool.get('type_trait')
    owned = pools_mod.owned_traits(pool.get('metadata') or {})
    return bool(trait) and (trait in device['traits']
                            or owned.get(device['uuid']) == trait)


def card_of(facts: shapes.HostFacts, address: str) -> str | None:
    """The PF address of the card the function at ADDRESS belongs to: a
    VF's ``physfn`` where the facts hold it, else the card its address
    names (a GPU's VFs sit on its bus)."""
    function = facts.functions.get(address)
    if function is not None and function.physfn:
        return function.physfn
    return nova_config.card_address(address)


def offers(cloud: model.Cloud, host: str, facts: shapes.HostFacts,
           roots: Iterable[str]) -> list[Offer] | None:
    """What Placement offers of each pool of HOST (whose root providers
    are ROOTS) card by card, or None when Placement has no tree of it
    (pool-drift says so)."""
    roots = sorted(roots)
    if not roots or cloud.placement is None:
        return None
    devices = nova_config.trees_from_snapshot(
        cloud.placement, {host: roots})[host]
    found: dict[tuple[str, str], Offer] = {}
    for name, pool in sorted(cloud.pools.items()):
        if host not in pool['hosts'] or pool['mode'] not in HOST_MODES:
            continue
        for device in devices:
            card = card_of(facts, device['address'] or '')
            if card is None or not _serves(pool, device):
                continue
            units = 1
            if pool['mode'] == pools_mod.VGPU:
                units = int(device['resources'].get(pool['resource_class'])
                            or 0)
            key = (card, name)
            before = found.get(key) or Offer(name, card, [], 0)
            found[key] = before._replace(
                devices=before.devices + [device['address']],
                units=before.units + units)
    return [found[key] for key in sorted(found)]


def _pci_id(function):
    if function.vendor_id is None or function.device_id is None:
        return None
    return '%s:%s' % (function.vendor_id, function.device_id)


def _cards(facts):
    """The NVIDIA GPUs of FACTS that are PFs (not VFs), by address."""
    return [f for f in facts.nvidia_functions()
            if f.is_gpu and f.physfn is None]


def _vfs(facts, card):
    """The VFs of CARD the facts hold, by address."""
    return [f for _a, f in sorted(facts.functions.items())
            if f.physfn == card]


def _has_id(facts, card, pci_id):
    """Is CARD (a Function) or one of its VFs a device of PCI_ID?"""
    pci_id = str(pci_id or '').lower()
    return bool(pci_id) and (_pci_id(card) == pci_id or any(
        _pci_id(vf) == pci_id for vf in _vfs(facts, card.address)))


# -- host-facts-stale ---------------------------------------------------------

def host_facts_stale(
        cloud: model.Cloud,
        settings: dict[str, typing.Any] | None) -> list[utils.Finding]:
    """A host of a pool whose facts were collected more than STALE_AFTER
    (three runs of the collector's timer) before they were read: its
    collector stopped, and the other host checks judge it no more."""
    pools_of = _pools_of(cloud, HOST_MODES)
    judged, found = judged_facts(cloud, 'host-facts-stale', pools_of,
                                 stale=True)
    if judged is None:
        return found
    if judged.facts and cloud.host_facts_read_at is None:
        found.append(utils.not_judged(
            'host-facts-stale', _('host facts'),
            _('when the facts of %s were read is not known, so how old '
              'they are is not known') % _some(judged.facts),
            utils.PROMETHEUS_FIX, sorted({p for h in judged.facts
                                          for p in pools_of[h]})))
        return found + unusable_row('host-facts-stale', judged, pools_of)
    for host, facts in sorted(judged.facts.items()):
        old = age(cloud, facts)
        pools = pools_of.get(host, ())
        if old is None:
            found.append(utils.not_judged(
                'host-facts-stale', 'host %s' % host,
                _('Prometheus has no collection time of %s (no '
                  'gpuclient_host_facts_collected_timestamp_seconds '
                  'series), so how old its facts are is not known')
                % host, UNREADABLE_FIX % {'host': host}, pools))
        elif old < -TIMER_SECONDS:
            found.append(utils.not_judged(
                'host-facts-stale', 'host %s' % host,
                _('the facts of %(host)s say they were collected %(ahead)s '
                  'after they were read: the host\'s clock and this one '
                  'disagree, so how old they are is not known') % {
                      'host': host, 'ahead': _duration(-old)},
                _('on %s: timedatectl (is the clock synchronised?)')
                % host, pools))
        elif old > STALE_AFTER:
            found.append(utils.finding(
                utils.WARNING, 'host-facts-stale', 'host %s' % host,
                _('the facts of %(host)s were collected %(age)s before they '
                  'were read, and its collector runs every %(period)s: it '
                  'stopped, so what the host is now is not known (the '
                  'other host checks say "not judged" of it).') % {
                      'host': host, 'age': _duration(old),
                      'period': _duration(TIMER_SECONDS)},
                _('on %(host)s: systemctl status gpuclient-host-facts.timer '
                  'gpuclient-host-facts.service; journalctl -u '
                  'gpuclient-host-facts.service; systemctl enable --now '
                  'gpuclient-host-facts.timer') % {'host': host}, pools))
    return found + unusable_row('host-facts-stale', judged, pools_of)


# -- host-iommu-off -----------------------------------------------------------

def _kernel_args(pools):
    return _('intel_iommu=on iommu=pt (AMD: amd_iommu=on iommu=pt) on the '
             'kernel command line (%s writes the GRUB drop-in)') % (
                 _render(pools))


def _cmdline_text(cmdline):
    if cmdline is None:
        return ''
    if not cmdline:
        return _(' (no IOMMU option on the kernel command line)')
    return _(' (the kernel command line has %s)') % ' '.join(
        '%s=%s' % item for item in sorted(cmdline.items()))


def host_iommu_off(
        cloud: model.Cloud,
        settings: dict[str, typing.Any] | None) -> list[utils.Finding]:
    """A host of a pool without an active IOMMU (/sys/class/iommu lists
    none): VFIO cannot pass a GPU or a VF through (an error for
    passthrough, vgpu-vf and mig pools; a warning for vgpu pools, whose
    mediated devices work without). An IOMMU active with no IOMMU option
    on the kernel command line (the kernel's default, which another
    kernel may not share): a warning."""
    pools_of = _pools_of(cloud, HOST_MODES)
    judged, found = judged_facts(cloud, 'host-iommu-off', pools_of)
    if judged is None:
        return found
    for host, facts in sorted(judged.facts.items()):
        pools = pools_of[host]
        strict = any(cloud.pools[p]['mode'] in IOMMU_MODES for p in pools)
        missing = unknown(facts, [('iommu', ''), ('kernel_cmdline', '')])
        if facts.iommu_active is None:
            found.append(unreadable_row(
                'host-iommu-off', host, 'host %s' % host,
                missing or [('iommu', '')],
                _('whether its IOMMU is on'), pools))
        elif not facts.iommu_active:
            values = {'host': host, 'pools': ', '.join(pools),
                      'cmdline': _cmdline_text(facts.iommu_cmdline)}
            found.append(utils.finding(
                utils.ERROR if strict else utils.WARNING, 'host-iommu-off',
                'host %s' % host,
                (_('%(host)s has no active IOMMU (/sys/class/iommu lists '
                   'none)%(cmdline)s: VFIO cannot pass the GPUs or VFs of '
                   'pool(s) %(pools)s through, and servers booted there '
                   'fail.') if strict else _(
                    '%(host)s has no active IOMMU (/sys/class/iommu lists '
                    'none)%(cmdline)s: the mediated devices of pool(s) '
                    '%(pools)s work without one, but the recipe turns it '
                    'on for every GPU host, and its cards cannot serve a '
                    'passthrough, vgpu-vf or mig pool without it.'))
                % values,
                _cordon_fix(host, _(
                    'turn VT-d (Intel) or AMD-Vi/IOMMU (AMD) on in the '
                    'firmware, put %(args)s, reboot') % {
                        'args': _kernel_args(pools)}), pools))
        elif facts.iommu_cmdline is None:
            found.append(unreadable_row(
                'host-iommu-off', host, 'host %s' % host,
                missing or [('kernel_cmdline', '')],
                _('whether its kernel command line turns the IOMMU on'),
                pools))
        elif not facts.iommu_cmdline:
            found.append(utils.finding(
                utils.WARNING, 'host-iommu-off', 'host %s' % host,
                _('%s has an active IOMMU but no IOMMU option on its kernel '
                  'command line: it is on by the kernel\'s default, which a '
                  'kernel update or another distribution may not share, and '
                  'without iommu=pt the host\'s own devices are translated '
                  'too.') % host,
                _('put %s, for the next reboot') % _kernel_args(pools),
                pools))
    return found + unusable_row('host-iommu-off', judged, pools_of)


# -- host-gpu-driver ----------------------------------------------------------

def _is_vfio(driver):
    return driver == VFIO_PCI or 'vfio' in driver


def _passthrough_gpus(cloud, facts, pool, offered):
    """The GPUs of passthrough POOL on the host of FACTS: its NVIDIA GPU
    PFs of the pool's PCI id, but a card Placement offers to a pool of
    another mode there (OFFERED: [Offer])."""
    others = {o.card for o in offered
              if cloud.pools[o.pool]['mode'] != pools_mod.PASSTHROUGH}
    return [f for f in _cards(facts)
            if _pci_id(f) == str(pool.get('pci_id') or '').lower()
            and f.address not in others]


def _nvidia_cards(cloud, facts, pools, offered):
    """{card address: [pools]} of the cards NVIDIA's host driver must own
    for POOLS (of NVIDIA_MODES) on the host of FACTS: those Placement
    offers to them (OFFERED), and a vgpu-vf pool's cards by PCI id."""
    found = {}
    for offer in offered:
        if offer.pool in pools:
            found.setdefault(offer.card, set()).add(offer.pool)
    for name in pools:
        pool = cloud.pools[name]
        if pool['mode'] != pools_mod.VGPU_VF:
            continue
        for card in _cards(facts):
            if _has_id(facts, card, pool.get('pci_id')):
                found.setdefault(card.address, set()).add(name)
    return {card: sorted(names) for card, names in sorted(found.items())}


def _wrong_driver(host, function, pool):
    """The finding of passthrough POOL's GPU FUNCTION not on vfio-pci."""
    address, driver = function.address, function.driver
    fix = _('driverctl set-override %(address)s vfio-pci  (on %(host)s: '
            'binds it now and at every boot; no server holds a GPU the '
            'host drives); and so that the whole host boots so, %(render)s '
            '(vfio-pci ids=%(id)s, softdeps, nouveau blacklisted), '
            'update-initramfs -u, reboot after openstack gpu host drain '
            '%(host)s') % {'address': address, 'host': host,
                           'render': _render([pool['name']]),
                           'id': pool['pci_id']}
    if driver == '':
        return utils.finding(
            utils.WARNING, 'host-gpu-driver', _device_label(host, address),
            _('the GPU at %(address)s on %(host)s (pool %(pool)s) has no '
              'driver bound: libvirt binds it to vfio-pci when a server '
              'starts, but nothing keeps nvidia or nouveau from taking it '
              'first at the next boot.') % {
                  'address': address, 'host': host, 'pool': pool['name']},
            fix, [pool['name']])
    return utils.finding(
        utils.ERROR, 'host-gpu-driver', _device_label(host, address),
        _('the GPU at %(address)s on %(host)s, a device of passthrough '
          'pool %(pool)s, is bound to %(driver)s, not vfio-pci: a server '
          'Placement sends to it fails to start (libvirt cannot take it '
          'from %(driver)s while the host uses it).') % {
              'address': address, 'host': host, 'pool': pool['name'],
              'driver': driver},
        fix, [pool['name']])


def _passthrough_drivers(cloud, host, facts, pools, offered):
    found = []
    for name in pools:
        pool = cloud.pools[name]
        if pool['mode'] != pools_mod.PASSTHROUGH:
            continue
        for function in _passthrough_gpus(cloud, facts, pool, offered):
            if function.driver is None:
                found.append(unreadable_row(
                    'host-gpu-driver', host,
                    _device_label(host, function.address),
                    unknown(facts, [('driver', function.address)])
                    or [('driver', function.address)],
                    _('the driver of the GPU'), [name]))
            elif not _is_vfio(function.driver):
                found.append(_wrong_driver(host, function, pool))
    return found


def _vgpu_drivers(cloud, host, facts, pools, offered):
    found = []
    wanted = [p for p in pools if cloud.pools[p]['mode'] in NVIDIA_MODES]
    for card, names in _nvidia_cards(cloud, facts, wanted, offered).items():
        function = facts.functions.get(card)
        driver = function.driver if function is not None else None
        if driver is None:
            found.append(unreadable_row(
                'host-gpu-driver', host, _device_label(host, card),
                unknown(facts, [('driver', card), ('pci_devices', '')])
                or [('pci_ids', card)],
                _('which driver holds the card Placement offers'), names))
        elif driver != NVIDIA:
            found.append(utils.finding(
                utils.ERROR, 'host-gpu-driver', _device_label(host, card),
                _('the card at %(card)s on %(host)s serves %(pools)s '
                  '(%(modes)s) and is bound to %(driver)s, not to NVIDIA\'s '
                  'vGPU host driver (nvidia): it offers no vGPU, and the '
                  'servers Placement sends to it fail.') % {
                      'card': card, 'host': host,
                      'pools': ', '.join(names),
                      'modes': ', '.join(sorted({cloud.pools[p]['mode']
                                                 for p in names})),
                      'driver': driver or _('no driver')},
                _('driverctl unset-override %(card)s, and take its id out '
                  'of any vfio-pci ids= line in /etc/modprobe.d (then '
                  'update-initramfs -u), so that nvidia takes it at the '
                  'next boot; reboot after openstack gpu host drain '
                  '%(host)s') % {'card': card, 'host': host}, names))
    return found


def host_gpu_driver(
        cloud: model.Cloud,
        settings: dict[str, typing.Any] | None) -> list[utils.Finding]:
    """A passthrough pool's GPU (an NVIDIA GPU of the pool's PCI id) bound
    to a driver other than vfio-pci (nvidia, nouveau: an error; none: a
    warning); a card a vgpu, mig or vgpu-vf pool is offered on bound to a
    driver other than nvidia (an error)."""
    pools_of = _pools_of(cloud, HOST_MODES)
    judged, found = judged_facts(cloud, 'host-gpu-driver', pools_of)
    if judged is None:
        return found
    host_roots = cloud.host_roots()
    for host, facts in sorted(judged.facts.items()):
        pools = pools_of[host]
        if facts.is_unreadable('pci_devices'):
            found.append(unreadable_row(
                'host-gpu-driver', host, 'host %s' % host,
                [('pci_devices', '')], _('which GPUs it has'), pools))
            continue
        offered = offers(cloud, host, facts,
                         host_roots.get(host) or ()) or []
        found += _passthrough_drivers(cloud, host, facts, pools, offered)
        found += _vgpu_drivers(cloud, host, facts, pools, offered)
        ids = sorted(u.address for u in facts.unreadable
                     if u.fact == 'pci_ids')
        if ids:
            found.append(unreadable_row(
                'host-gpu-driver', host, 'host %s' % host,
                [('pci_ids', a) for a in ids],
                _('whether those functions are GPUs of its pools'), pools))
    return found + unusable_row('host-gpu-driver', judged, pools_of)


# -- host-iommu-group ---------------------------------------------------------

def _viable(function):
    """Does FUNCTION, a member of a GPU's IOMMU group, leave the group
    viable for VFIO? None: its driver is not known."""
    if function.pci_class and function.pci_class.startswith(BRIDGE_CLASS):
        return True
    if function.driver is None:
        return None
    return function.driver in VIABLE_DRIVERS or _is_vfio(function.driver)


def _same_card(gpu, member):
    """Is MEMBER a function of GPU's own card (same bus and slot)?"""
    return gpu.address.rsplit('.', 1)[0] == member.address.rsplit('.', 1)[0]


def _group_fix(host, pool, gpu, bad):
    own = [m for m in bad if _same_card(gpu, m)]
    other = [m for m in bad if not _same_card(gpu, m)]
    parts = []
    if own:
        ids = sorted({_pci_id(m) for m in own if _pci_id(m)})
        parts.append(_(
            '%(override)s  (on %(host)s: binds the card\'s own functions '
            'with it, now and at every boot); so that the whole host boots '
            'so, openstack gpu host render --pool %(pool)s %(extra)s'
            '--output-dir <dir> (their ids in vfio-pci ids=, and softdep '
            'snd_hda_intel pre: vfio-pci)') % {
                'override': '; '.join('driverctl set-override %s vfio-pci'
                                      % m.address for m in own),
                'host': host, 'pool': pool,
                'extra': ''.join('--extra-pci-id %s ' % i for i in ids)})
    if other:
        parts.append(_(
            'the group also holds %(others)s, another device: the GPU '
            'cannot be passed through without it; move the card to a slot '
            'with its own group (or turn ACS on in the firmware), or take '
            'the GPU out of the pool (openstack gpu pool remove host '
            '%(pool)s %(host)s)') % {
                'others': ', '.join(m.address for m in other),
                'pool': pool, 'host': host})
    return '; '.join(parts)


def _group_findings(host, facts, name, gpu):
    """The findings of passthrough pool NAME's GPU on HOST: its IOMMU
    group's members that are not viable, or why they are not judged."""
    missing = unknown(facts, [('iommu_group', gpu.address),
                              ('iommu_group_members', gpu.address)])
    if gpu.iommu_group is None or missing:
        return [unreadable_row(
            'host-iommu-group', host, _device_label(host, gpu.address),
            missing or [('iommu_group', gpu.address)],
            _('whether its IOMMU group can be passed through'), [name])]
    if not gpu.iommu_group:
        return []  # in no group: the IOMMU is off (host-iommu-off)
    members = [f for a, f in sorted(facts.functions.items())
               if a != gpu.address and f.iommu_group == gpu.iommu_group]
    bad = [m for m in members if _viable(m) is False]
    unsure = [m for m in members if _viable(m) is None]
    found = []
    if bad:
        found.append(utils.finding(
            utils.ERROR, 'host-iommu-group', _device_label(host, gpu.address),
            _('IOMMU group %(group)s of the GPU at %(address)s on %(host)s '
              '(pool %(pool)s) holds %(members)s: VFIO passes a group '
              'through whole or not at all, so a server Placement sends to '
              'this GPU fails to start.') % {
                  'group': gpu.iommu_group, 'address': gpu.address,
                  'host': host, 'pool': name,
                  'members': ', '.join(
                      _('%(address)s on %(driver)s') % {
                          'address': m.address, 'driver': m.driver}
                      for m in bad)},
            _group_fix(host, name, gpu, bad), [name]))
    if unsure:
        found.append(unreadable_row(
            'host-iommu-group', host, _device_label(host, gpu.address),
            [('driver', m.address) for m in unsure],
            _('whether its IOMMU group can be passed through'), [name]))
    return found


def host_iommu_group(
        cloud: model.Cloud,
        settings: dict[str, typing.Any] | None) -> list[utils.Finding]:
    """A passthrough pool's GPU whose IOMMU group holds another member
    (the card's audio or USB-C function, or another device) bound to a
    driver other than vfio-pci (or a VFIO variant), pci-stub or none: the
    group is not viable and the GPU cannot be passed through."""
    pools_of = _pools_of(cloud, (pools_mod.PASSTHROUGH,))
    judged, found = judged_facts(cloud, 'host-iommu-group', pools_of)
    if judged is None:
        return found
    host_roots = cloud.host_roots()
    for host, facts in sorted(judged.facts.items()):
        if facts.is_unreadable('pci_devices'):
            found.append(unreadable_row(
                'host-iommu-group', host, 'host %s' % host,
                [('pci_devices', '')], _('which GPUs it has'),
                pools_of[host]))
            continue
        offered = offers(cloud, host, facts,
                         host_roots.get(host) or ()) or []
        for name in pools_of[host]:
            for gpu in _passthrough_gpus(cloud, facts, cloud.pools[name],
                                         offered):
                found += _group_findings(host, facts, name, gpu)
    return found + unusable_row('host-iommu-group', judged, pools_of)


# -- what each card holds, against what it should -----------------------------

class Layout(typing.NamedTuple):
    """One card of a host: what it should hold (WANTED, {type or
    profile: count}, as Placement offers it or, where Placement offers
    nothing, as the pool's plan lays it out: SOURCE) and what it holds
    (PRESENT; None: not known, MISSING naming the facts that could not
    be read), LOST the reason it holds none (its VFs or MIG mode gone),
    WHAT the kind of device counted, POOLS the pools concerned."""

    card: str
    what: str
    wanted: collections.Counter[str]
    present: collections.Counter[str] | None
    lost: str | None
    missing: list[tuple[str, str]]
    source: str
    pools: list[str]

    def short(self) -> collections.Counter[str]:
        """What the card lacks of WANTED."""
        return self.wanted - (self.present or collections.Counter())

    def extra(self) -> collections.Counter[str]:
        """What the card holds beyond WANTED."""
        return (self.present or collections.Counter()) - self.wanted


PLACEMENT = 'Placement'
PLAN = 'plan'


def _type_key(name):
    """An mdev type (nvidia-35), as sysfs names it."""
    return str(name or '').strip()


def _profile_key(name):
    """A MIG profile as the catalogue names it (nvidia-smi's and a pool's
    spelling alike), else as given, lower-cased."""
    try:
        return catalogue.profile_name(str(name))
    except catalogue.UnknownName:
        return str(name or '').strip().lower()


def _counted(offered, cloud, key):
    """{KEY(the pool's type or profile): devices} of the offers OFFERED."""
    wanted = collections.Counter()
    for offer in offered:
        wanted[key(cloud.pools[offer.pool])] += len(offer.devices)
    return wanted


def _vf_key(name):
    """A vGPU type as the catalogue names it (L40S-24Q), else as given."""
    entry = profile_vf.vgpu(str(name or '').strip())
    return entry.name if entry is not None else str(name or '').strip()


def _vf_type(pool):
    return _vf_key(pool.get('vgpu_type'))


def _mig_profile(pool):
    return _profile_key(pool.get('mig_profile'))


def _planned_vfs(cloud, pools):
    """{type: VFs} one card of a vgpu-vf pool of POOLS gets in the plan
    (NVIDIA's equal-size mode: the type's most per GPU), when one pool
    and the catalogue say it."""
    entries = [profile_vf.vgpu(cloud.pools[p].get('vgpu_type') or '')
               for p in pools]
    if len(entries) != 1 or entries[0] is None:
        return collections.Counter()
    return collections.Counter({_vf_type(cloud.pools[pools[0]]):
                                entries[0].max_count})


def _not_nvidia(card):
    """Why CARD (a Function) holds no vGPU: it is bound to another driver
    than nvidia; None when it is on nvidia or its driver is not known."""
    if card.driver is None or card.driver == NVIDIA:
        return None
    return _('it is bound to %s, not nvidia') % (card.driver
                                                 or _('no driver'))


def _vf_layout(cloud, facts, card, offered, pools):
    """The Layout of vgpu-vf CARD (a Function): its typed VFs."""
    wanted = _counted(offered, cloud, _vf_type)
    source = PLACEMENT
    if not offered:
        wanted, source = _planned_vfs(cloud, pools), PLAN
    names = sorted({o.pool for o in offered} or pools)
    what = _('typed VFs')
    missing = unknown(facts, [('sriov', card.address),
                              ('vfs', card.address)])
    lost = _not_nvidia(card)
    if lost is None and card.sriov_numvfs == 0:
        lost = _('sriov_numvfs is 0 (of %s): no VF is enabled') % (
            card.sriov_totalvfs if card.sriov_totalvfs is not None else '?')
    if lost:
        return Layout(card.address, what, wanted, collections.Counter(),
                      lost, [], source, names)
    vfs = _vfs(facts, card.address)
    missing += unknown(facts, [(f, vf.address) for vf in vfs
                               for f in ('vgpu_type', 'vgpu_type_name')])
    untyped = [vf.address for vf in vfs if vf.vgpu_type_id is None or (
        vf.vgpu_type_id and not vf.vgpu_type)]
    if card.sriov_numvfs is None or len(vfs) != card.sriov_numvfs:
        # no VF counts (no series of them: not an SR-IOV card, or not
        # scraped), or fewer VFs than the card says it has
        missing = missing or [('sriov', card.address), ('vfs', card.address)]
    if missing or untyped:
        return Layout(card.address, what, wanted, None, None, missing or [
            ('vgpu_type', a) for a in untyped], source, names)
    present = collections.Counter(_vf_key(vf.vgpu_type) for vf in vfs
                                  if vf.vgpu_type_id)
    if not present:
        lost = _('no VF has a vGPU type (nvidia/current_vgpu_type 0)')
    return Layout(card.address, what, wanted, present, lost, [], source,
                  names)


def _mig_layout(cloud, facts, card, offered, pools):
    """The Layout of the MIG card CARD (a Function): its GPU
    instances."""
    wanted = _counted(offered, cloud, _mig_profile)
    names = sorted({o.pool for o in offered} or pools)
    what = _('GPU instances')
    lost = _not_nvidia(card)
    if lost is None and card.mig_current is False:
        lost = _('its MIG mode is disabled%s') % (
            _(' (enabled after its next reset)') if card.mig_pending
            else '')
    if lost:
        return Layout(card.address, what, wanted, collections.Counter(),
                      lost, [], PLACEMENT, names)
    missing = unknown(facts, [('mig_mode', card.address),
                              ('mig_layout', card.address)])
    if card.mig_current is None or card.gpu_instances is None:
        if not missing and facts.nvidia_smi is False:
            missing = [NO_NVIDIA_SMI]
        return Layout(card.address, what, wanted, None, None,
                      missing or [('mig_layout', card.address)], PLACEMENT,
                      names)
    present = collections.Counter(_profile_key(gi.profile)
                                  for gi in card.gpu_instances)
    if card.sriov_numvfs == 0 and card.sriov_totalvfs:
        lost = _('sriov_numvfs is 0 (of %d): the VFs that carry its '
                 'MIG-backed vGPUs are gone') % card.sriov_totalvfs
    elif not present:
        lost = _('its MIG mode is enabled and it holds no GPU instance')
    return Layout(card.address, what, wanted, present, lost, [], PLACEMENT,
                  names)


def _mdev_layout(cloud, facts, card, offered):
    """The Layout of time-sliced vGPU CARD (an address): the vGPUs of
    each pool's mdev type it can hold (available and made)."""
    function = facts.functions.get(card)
    wanted = collections.Counter()
    for offer in offered:
        wanted[_type_key(cloud.pools[offer.pool].get('vgpu_type'))] += (
            offer.units)
    names = sorted({o.pool for o in offered})
    missing = unknown(facts, [('mdev_types', card), ('mdev_devices', '')])
    if function is None or missing:
        return Layout(card, _('vGPUs'), wanted, None, None,
                      missing or [('pci_ids', card)], PLACEMENT, names)
    present = collections.Counter()
    for name, mdev in function.mdev_types.items():
        if _type_key(name) in wanted and mdev.available_instances is not None:
            present[_type_key(name)] = mdev.available_instances + (
                mdev.created or 0)
    lost = None
    if not function.mdev_types:
        lost = _not_nvidia(function) or _(
            'it offers no mdev type: NVIDIA\'s vGPU manager does not hold '
            'it')
    return Layout(card, _('vGPUs'), wanted, present, lost, [], PLACEMENT,
                  names)


def _unlisted(facts, by_mode):
    """The Layouts (not known) of the cards Placement offers vgpu-vf or
    mig pools on that the facts do not hold."""
    known = {c.address for c in _cards(facts)}
    found = []
    for mode in (pools_mod.VGPU_VF, pools_mod.MIG):
        for address, got in sorted(by_mode.get(mode, {}).items()):
            if address not in known:
                found.append(Layout(
                    address, _('devices'), collections.Counter(), None,
                    None, unknown(facts, [('pci_devices', '')])
                    or [('pci_ids', address)], PLACEMENT,
                    sorted({o.pool for o in got})))
    return found


def layouts(cloud: model.Cloud, host: str, facts: shapes.HostFacts,
            pools: Iterable[str], modes: Iterable[str],
            roots: Iterable[str]) -> list[Layout] | None:
    """The Layout of every card of HOST's POOLS of MODES (NVIDIA_MODES),
    by address: those Placement offers them on (ROOTS: the host's root
    providers), and those the pools name where Placement offers nothing
    there (a vgpu-vf pool's cards by PCI id; a mig pool's host's GPUs on
    nvidia whose MIG mode is on, or not read). None when Placement has no
    tree of the host."""
    modes = set(modes)
    offered = offers(cloud, host, facts, roots)
    if offered is None:
        return None
    by_mode: dict[str, dict[str, list[Offer]]] = {}
    for offer in offered:
        mode = cloud.pools[offer.pool]['mode']
        if mode in modes:
            by_mode.setdefault(mode, {}).setdefault(
                offer.card, []).append(offer)
    taken = {o.card for o in offered}
    mine = {m: [p for p in pools if cloud.pools[p]['mode'] == m]
            for m in modes}
    found = [_mdev_layout(cloud, facts, address, got) for address, got in
             sorted(by_mode.get(pools_mod.VGPU, {}).items())]
    for card in _cards(facts):
        got = by_mode.get(pools_mod.VGPU_VF, {}).get(card.address, [])
        named = [p for p in mine.get(pools_mod.VGPU_VF, ())
                 if _has_id(facts, card, cloud.pools[p].get('pci_id'))]
        if got or (named and card.address not in taken):
            found.append(_vf_layout(cloud, facts, card, got, named))
        got = by_mode.get(pools_mod.MIG, {}).get(card.address, [])
        if got or (mine.get(pools_mod.MIG) and card.address not in taken
                   and card.driver == NVIDIA and (
                       card.mig_current or facts.is_unreadable(
                           'mig_mode', card.address))):
            found.append(_mig_layout(cloud, facts, card, got,
                                     mine.get(pools_mod.MIG, [])))
    found += _unlisted(facts, by_mode)
    return sorted(found, key=lambda item: item.card)


def _counts_text(counts):
    return ', '.join('%s x%d' % item for item in sorted(counts.items())) \
        or _('none')


def _layout_fix(cloud, host, layout):
    """How to give CARD back what it lost: the boot files of gpu host
    render (MIG layout, VFs and types), or NVIDIA's vGPU manager."""
    modes = {cloud.pools[p]['mode'] for p in layout.pools}
    render = _render(layout.pools)
    if pools_mod.VGPU_VF in modes and layout.source == PLAN:
        then = _('openstack gpu profile plan --pool %(pool)s --demand '
                 '%(type)s=<count> --output-dir <dir> (Placement offers '
                 'nothing on the card now, so gpu host render has no layout '
                 'of it: the plan writes the script that enables its VFs '
                 'and writes their types), run the script on %(host)s, '
                 'then %(render)s for the unit that does it at every '
                 'boot') % {
                     'pool': layout.pools[0], 'host': host,
                     'type': cloud.pools[layout.pools[0]].get('vgpu_type'),
                     'render': render}
    elif pools_mod.VGPU_VF in modes:
        then = _('%(render)s, copy its %(host)s/ onto the host and run '
                 '/%(script)s there (it enables the VFs and writes their '
                 'types; its unit does it at every boot, before '
                 'nova-compute)') % {
                     'render': render, 'host': host,
                     'script': host_prep.SCRIPT_DIR + '/'
                     + profile_vf.script_name(host)}
    elif pools_mod.MIG in modes:
        then = _('%(render)s, copy its %(host)s/ onto the host and run '
                 '/%(script)s there (it enables the VFs and makes the GPU '
                 'instances; its unit does it at every boot, before '
                 'nova-compute)') % {'render': render, 'host': host,
                                     'script': host_prep.MIG_SCRIPT_FILE}
    else:
        then = _('on %(host)s, bind the card to nvidia and start NVIDIA\'s '
                 'vGPU manager (systemctl restart nvidia-vgpu-mgr; '
                 'ls /sys/bus/pci/devices/%(card)s/mdev_supported_types '
                 'lists the types)') % {'host': host, 'card': layout.card}
    return _('openstack gpu host cordon %(host)s; %(then)s; openstack gpu '
             'host uncordon %(host)s') % {'host': host, 'then': then}


# -- host-state-lost ----------------------------------------------------------

def _lost_finding(cloud, host, layout):
    why = layout.lost or _('it lacks %s') % _counts_text(layout.short())
    values = {'card': layout.card, 'host': host, 'why': why,
              'wanted': _counts_text(layout.wanted), 'what': layout.what,
              'pools': ', '.join(layout.pools),
              'present': _counts_text(layout.present or {})}
    if not layout.wanted:
        symptom = _('on %(host)s, a host of %(pools)s, the card at '
                    '%(card)s: %(why)s')
    elif layout.source == PLACEMENT:
        symptom = _('on %(host)s, the card at %(card)s: %(why)s; Placement '
                    'offers %(wanted)s %(what)s there for %(pools)s and it '
                    'holds %(present)s')
    else:
        symptom = _('on %(host)s, the card at %(card)s: %(why)s; the '
                    'pool\'s plan (gpu profile plan) puts %(wanted)s '
                    '%(what)s there for %(pools)s and it holds %(present)s')
    return utils.finding(
        utils.ERROR, 'host-state-lost', _device_label(host, layout.card),
        (symptom + _(' (state lost at a reboot: VFs, vGPU types and GPU '
                     'instances do not survive one); the servers Placement '
                     'sends to what is missing fail to start.')) % values,
        _layout_fix(cloud, host, layout), layout.pools)


def host_state_lost(
        cloud: model.Cloud,
        settings: dict[str, typing.Any] | None) -> list[utils.Finding]:
    """A card of a vgpu, mig or vgpu-vf pool that lost what Placement
    still offers on it, or what the pool's plan puts there where
    Placement offers nothing (a reboot's work): no VF enabled, no VF
    typed, its MIG mode off or no GPU instance, the card off nvidia, its
    mdev type gone, or fewer of them than offered, and nothing else in
    their place (a card holding something else: host-layout-drift)."""
    pools_of = _pools_of(cloud, NVIDIA_MODES)
    judged, found = judged_facts(cloud, 'host-state-lost', pools_of)
    if judged is None:
        return found
    host_roots = cloud.host_roots()
    for host, facts in sorted(judged.facts.items()):
        cards = layouts(cloud, host, facts, pools_of[host], NVIDIA_MODES,
                        host_roots.get(host) or ())
        for layout in cards or ():
            if layout.present is None:
                found.append(unreadable_row(
                    'host-state-lost', host, _device_label(host,
                                                           layout.card),
                    layout.missing, _('what the card holds'),
                    layout.pools))
            elif not layout.extra() and (layout.lost or layout.short()):
                found.append(_lost_finding(cloud, host, layout))
    return found + unusable_row('host-state-lost', judged, pools_of)


# -- host-layout-drift --------------------------------------------------------

def host_layout_drift(
        cloud: model.Cloud,
        settings: dict[str, typing.Any] | None) -> list[utils.Finding]:
    """A card of a mig or vgpu-vf pool whose MIG GPU instances or typed
    VFs differ from what Placement offers there (or, where it offers
    nothing, from the pool's plan): something Nova does not offer, an
    error when what it offers is missing too, else a warning (capacity
    Nova does not use)."""
    pools_of = _pools_of(cloud, LAYOUT_MODES)
    judged, found = judged_facts(cloud, 'host-layout-drift', pools_of)
    if judged is None:
        return found
    host_roots = cloud.host_roots()
    for host, facts in sorted(judged.facts.items()):
        cards = layouts(cloud, host, facts, pools_of[host], LAYOUT_MODES,
                        host_roots.get(host) or ())
        for layout in cards or ():
            if layout.present is None:
                found.append(unreadable_row(
                    'host-layout-drift', host, _device_label(
                        host, layout.card), layout.missing,
                    _('what the card holds'), layout.pools))
                continue
            extra = layout.extra()
            if not extra:
                continue
            short = layout.short()
            where = (_('Placement offers') if layout.source == PLACEMENT
                     else _('the pool\'s plan (gpu profile plan) puts'))
            found.append(utils.finding(
                utils.ERROR if short else utils.WARNING, 'host-layout-drift',
                _device_label(host, layout.card),
                _('the card at %(card)s on %(host)s holds %(present)s '
                  '%(what)s where %(where)s %(wanted)s for %(pools)s: '
                  '%(extra)s are not offered%(short)s.') % {
                      'card': layout.card, 'host': host,
                      'present': _counts_text(layout.present or {}),
                      'what': layout.what, 'where': where,
                      'wanted': _counts_text(layout.wanted),
                      'pools': ', '.join(layout.pools),
                      'extra': _counts_text(extra),
                      'short': _(', and %s are missing: the servers '
                                 'Placement sends to them fail to start')
                      % _counts_text(short) if short else _(
                          ' (capacity Nova does not hand out)')},
                _('either cut the card as Nova offers it (%(fix)s) or make '
                  'Nova offer what the card holds: openstack gpu profile '
                  'plan --pool %(pool)s --output-dir <dir>, then apply its '
                  'nova.conf to %(host)s') % {
                      'fix': _layout_fix(cloud, host, layout),
                      'pool': layout.pools[0] if layout.pools else '<pool>',
                      'host': host}, layout.pools))
    return found + unusable_row('host-layout-drift', judged, pools_of)


# -- host-mig-pending ---------------------------------------------------------

def _mode_text(enabled):
    return _('enabled') if enabled else _('disabled')


def host_mig_pending(
        cloud: model.Cloud,
        settings: dict[str, typing.Any] | None) -> list[utils.Finding]:
    """A GPU (on nvidia) whose MIG mode after its next reset differs from
    its mode now: a change someone started and no reset finished (a
    warning; what a mig pool lost by it is host-state-lost's)."""
    pools_of = _pools_of(cloud, HOST_MODES)
    judged, found = judged_facts(cloud, 'host-mig-pending', pools_of)
    if judged is None:
        return found
    mig_pools = _pools_of(cloud, (pools_mod.MIG,))
    for host, facts in sorted(judged.facts.items()):
        pools = pools_of[host]
        unsure = []
        for card in _cards(facts):
            if card.driver != NVIDIA:
                continue
            if card.mig_current is None or card.mig_pending is None:
                if facts.is_unreadable('mig_mode', card.address) or (
                        host in mig_pools and facts.nvidia_smi is False):
                    unsure.append(card.address)
                continue
            if card.mig_current == card.mig_pending:
                continue
            found.append(utils.finding(
                utils.WARNING, 'host-mig-pending',
                _device_label(host, card.address),
                _('the MIG mode of the GPU at %(card)s on %(host)s is '
                  '%(now)s and becomes %(then)s at its next reset: a change '
                  'no reset finished; until then its GPU instances are '
                  'those of the mode now, and a reboot changes them.') % {
                      'card': card.address, 'host': host,
                      'now': _mode_text(card.mig_current),
                      'then': _mode_text(card.mig_pending)},
                _cordon_fix(host, _(
                    'finish it: nvidia-smi -i %(card)s -r (or reboot) and '
                    'make the layout again (%(render)s writes the unit that '
                    'makes it at boot); or cancel it: nvidia-smi -i '
                    '%(card)s -mig %(now)d') % {
                        'card': card.address, 'render': _render(pools),
                        'now': int(card.mig_current)}), pools))
        if unsure:
            found.append(unreadable_row(
                'host-mig-pending', host, 'host %s' % host,
                unknown(facts, [('mig_mode', a) for a in unsure])
                or [NO_NVIDIA_SMI], _('the MIG modes of its GPUs'),
                pools))
    return found + unusable_row('host-mig-pending', judged, pools_of)


# -- host-mdevctl-missing -----------------------------------------------------

def host_mdevctl_missing(
        cloud: model.Cloud,
        settings: dict[str, typing.Any] | None) -> list[utils.Finding]:
    """A host of a vgpu or mig pool (whose vGPUs are mediated devices)
    without mdevctl: libvirt defines persistent mediated devices through
    it, so without it those made on the host do not survive a reboot."""
    pools_of = _pools_of(cloud, MDEV_MODES)
    judged, found = judged_facts(cloud, 'host-mdevctl-missing', pools_of)
    if judged is None:
        return found
    for host, facts in sorted(judged.facts.items()):
        pools = pools_of[host]
        if facts.mdevctl is None:
            found.append(utils.not_judged(
                'host-mdevctl-missing', 'host %s' % host,
                _('Prometheus has no gpuclient_host_mdevctl_present series '
                  'of %s, so whether mdevctl is installed is not known')
                % host, UNREADABLE_FIX % {'host': host}, pools))
        elif not facts.mdevctl:
            found.append(utils.finding(
                utils.WARNING, 'host-mdevctl-missing', 'host %s' % host,
                _('%(host)s serves mediated-device vGPUs (pool(s) '
                  '%(pools)s) and mdevctl is not installed: libvirt '
                  'defines persistent mediated devices through it, so '
                  'those made on the host are gone after a reboot and the '
                  'servers holding them fail to start.') % {
                      'host': host, 'pools': ', '.join(pools)},
                _('on %s: apt-get install mdevctl (dnf install mdevctl)')
                % host, pools))
    return found + unusable_row('host-mdevctl-missing', judged, pools_of)


# the checks of this family, in the order they run
CHECKS = (
    ('host-facts-stale', host_facts_stale),
    ('host-iommu-off', host_iommu_off),
    ('host-gpu-driver', host_gpu_driver),
    ('host-iommu-group', host_iommu_group),
    ('host-state-lost', host_state_lost),
    ('host-layout-drift', host_layout_drift),
    ('host-mig-pending', host_mig_pending),
    ('host-mdevctl-missing', host_mdevctl_missing),
)
