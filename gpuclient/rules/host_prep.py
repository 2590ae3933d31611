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

"""Pure: what each host of a pool needs before Nova can hand out its GPUs,
as files for the tools that apply them (``gpu host render``).

gpuclient never applies them: it has no root and no SSH on any host. Per
pool mode (the seeds' host recipe):

* every mode but baremetal: the IOMMU on the kernel command line
  (``intel_iommu=on`` or ``amd_iommu=on``, and ``iommu=pt``) and nouveau
  blacklisted;
* passthrough: the GPUs bound to vfio-pci at boot (``options vfio-pci
  ids=``, the ids of every passthrough pool holding the host and those
  given with ``--extra-pci-id``: the other functions of the GPU's IOMMU
  group), ``softdep`` lines that load vfio-pci before nvidia and nouveau,
  and vfio-pci in modules-load.d;
* mig: the MIG layout of each card as Placement shows it now (what the
  cloud runs, so that a reboot keeps it: GPU instances never survive one,
  and from Hopper on MIG mode itself does not either), as an
  nvidia-mig-parted configuration, with the script and systemd unit that
  apply it at boot before nova-compute (after the card's SR-IOV VFs,
  which carry its MIG-backed vGPUs, are enabled);
* vgpu-vf: the VF script and unit of ``gpu profile plan`` for vgpu-vf
  pools (``rules.profiles.vf``), with each card's current types;
* vgpu (mdev): nothing more: Nova creates the mediated devices itself.

The CPU vendor of a host is not in any API gpuclient reads. The systemd
format writes both kernel command lines into one GRUB drop-in, which picks
the one of the host's vendor when ``update-grub`` runs there; the Ansible
format gives both (``gpuclient_kernel_args``, keyed by the vendor string
Ansible's ``ansible_processor`` facts show).

nvidia-mig-parted names GPUs by nvidia-smi's index, not by PCI address:
the configuration gives each card the index of its address among the
host's GPUs that the NVIDIA driver holds as Placement shows them (GPUs
bound to vfio-pci are invisible to nvidia-smi), and the script checks
each index against the card's address before applying anything (NVIDIA
does not promise the order).

Two formats: ``systemd`` (files under ``<host>/`` laid out as on the
host: ``<host>/etc/modprobe.d/...``) and ``ansible`` (``host_vars/<host>.yml``
with the variables of the stackhpc.linux roles ``iommu``,
``gpu_passthrough`` and ``vgpu``, and ``gpuclient_*`` variables for what
those roles do not do).
"""

from __future__ import annotations

import collections
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
import typing

from osc_lib import exceptions

from gpuclient.i18n import _
from gpuclient.rules import catalogue
from gpuclient.rules import pools as pools_mod
from gpuclient.rules.nova_conf import render as nova_config
from gpuclient.rules.profiles import cloud as profile_cloud
from gpuclient.rules.profiles import vf as profile_vf

SYSTEMD = 'systemd'
ANSIBLE = 'ansible'
FORMATS = (SYSTEMD, ANSIBLE)
# the modes whose compute hosts are prepared here
MODES = (pools_mod.PASSTHROUGH, pools_mod.VGPU, pools_mod.MIG,
         pools_mod.VGPU_VF)
# the modes whose files need the hosts' provider trees (Placement)
TREE_MODES = (pools_mod.MIG, pools_mod.VGPU_VF)

# the CPU vendor strings of /proc/cpuinfo (and Ansible's processor facts)
INTEL = 'GenuineIntel'
AMD = 'AuthenticAMD'
KERNEL_ARGS = {
    INTEL: ('intel_iommu=on', 'iommu=pt'),
    AMD: ('amd_iommu=on', 'iommu=pt'),
}

# where each file goes on the host (the systemd format's paths under
# <host>/, the Ansible format's under files/<host>/)
GRUB_FILE = 'etc/default/grub.d/gpuclient-iommu.cfg'
BLACKLIST_FILE = 'etc/modprobe.d/gpuclient-blacklist-nouveau.conf'
VFIO_FILE = 'etc/modprobe.d/gpuclient-vfio.conf'
MODULES_FILE = 'etc/modules-load.d/gpuclient-vfio-pci.conf'
MIG_CONFIG_FILE = 'etc/nvidia-mig-manager/gpuclient.yaml'
MIG_SCRIPT_FILE = 'usr/local/sbin/gpuclient-mig-layout.sh'
MIG_UNIT_FILE = 'etc/systemd/system/gpuclient-mig-layout.service'
SCRIPT_DIR = 'usr/local/sbin'
UNIT_DIR = 'etc/systemd/system'
HOST_VARS = 'host_vars/%s.yml'
FILES_DIR = 'files'
# the mig-parted configuration's name (nvidia-mig-parted apply -c)
MIG_CONFIG_NAME = 'gpuclient'
# what the MIG unit runs after (NVIDIA's host driver services)
NVIDIA_SERVICES = ('nvidia-persistenced.service', 'nvidia-vgpud.service',
                   'nvidia-vgpu-mgr.service')
# the most VFs an NVIDIA PF numbers (a VF's index is found among them)
MAX_VFS = 256
SCRIPT_MODE = 0o755
FILE_MODE = 0o644


class HostFile(typing.NamedTuple):
    """One file to write: for HOST, at PATH (relative to the output
    directory, '/'-separated), its TEXT and MODE, and WHAT it does (a
    short phrase for the table)."""

    host: str
    path: str
    text: str
    mode: int
    what: str


class Options(typing.NamedTuple):
    """What the operator gave besides the pool: the FILE_FORMAT (FORMATS),
    EXTRA_PCI_IDS (vendor:product of the other functions of a passthrough
    GPU's IOMMU group), the MODEL of a mig pool's cards when the cloud
    cannot tell it, and MIG_TYPES ({MIG profile: mdev type}) for the
    Ansible vgpu role's virtual functions."""

    file_format: str = SYSTEMD
    extra_pci_ids: tuple[str, ...] = ()
    model: str | None = None
    mig_types: Mapping[str, str] | None = None


def check_request(pool: Mapping[str, typing.Any], options: Options) -> None:
    """Refuse (CommandError) what cannot be rendered for POOL, before the
    hosts' trees are read: a bare-metal pool, a pool with no host, an
    unknown format, options of another mode."""
    mode = pool['mode']
    if mode == pools_mod.BAREMETAL:
        raise exceptions.CommandError(_(
            'Pool %s is a bare-metal pool: its nodes are Ironic\'s and are '
            'not prepared with files on a compute host (deploy images, '
            'cleaning steps and BIOS settings are Ironic\'s). gpu host '
            'render prepares the hosts of passthrough, vgpu, vgpu-vf and '
            'mig pools.') % pool['name'])
    if mode not in MODES:
        raise exceptions.CommandError(_(
            'Pool %(pool)s has mode %(mode)s, which gpu host render does '
            'not know.') % {'pool': pool['name'], 'mode': mode})
    if options.file_format not in FORMATS:
        raise exceptions.CommandError(_(
            '--format %(given)s: give one of %(formats)s.')
            % {'given': options.file_format, 'formats': ', '.join(FORMATS)})
    if not pool['hosts']:
        raise exceptions.CommandError(_(
            'Pool %s holds no host: add hosts first ("openstack gpu pool '
            'add host").') % pool['name'])
    if options.extra_pci_ids and mode != pools_mod.PASSTHROUGH:
        raise exceptions.CommandError(_(
            '--extra-pci-id binds functions to vfio-pci: it goes with '
            'passthrough pools, and %(pool)s is a %(mode)s pool.')
            % {'pool': pool['name'], 'mode': mode})
    if options.model and mode != pools_mod.MIG:
        raise exceptions.CommandError(_(
            '--model tells the model of a mig pool\'s cards, and '
            '%(pool)s is a %(mode)s pool.')
            % {'pool': pool['name'], 'mode': mode})
    if options.mig_types and (mode != pools_mod.MIG
                              or options.file_format != ANSIBLE):
        raise exceptions.CommandError(_(
            '--mig-mdev-type fills the Ansible vgpu role\'s virtual '
            'functions: it goes with --format ansible and a mig pool (the '
            'systemd format needs no mdev type: Nova creates the mdevs).'))


def mig_type_map(entries: Mapping[str, str] | None) -> dict[str, str]:
    """{MIG profile (catalogue name): mdev type} of ``--mig-mdev-type``
    ENTRIES; a time-sliced vGPU type is refused (ValueError), a name the
    catalogue does not know too (``catalogue.UnknownName``)."""
    profile_cloud.check_mig_type_names(entries)
    return {catalogue.profile_name(name): str(mdev).strip()
            for name, mdev in (entries or {}).items()}


# -- the files every mode writes ----------------------------------------------

def _header(pool: Mapping[str, typing.Any], what: str) -> str:
    return ('# gpuclient "host render" of pool %s (%s):\n# %s\n'
            % (pool['name'], pool['mode'], what))


def kernel_args() -> dict[str, list[str]]:
    """{CPU vendor: [kernel argument]}: the IOMMU on, in pass-through
    mode (the seeds' recipe)."""
    return {vendor: list(args) for vendor, args in KERNEL_ARGS.items()}


def grub_dropin(pool: Mapping[str, typing.Any]) -> str:
    """The GRUB drop-in (``/etc/default/grub.d/*.cfg``, which
    ``update-grub`` sources on Debian and Ubuntu) that adds the kernel
    arguments of the host's CPU vendor, read from /proc/cpuinfo when it
    runs there; where grub.d is not read, the comment gives the grubby
    line of each vendor."""
    lines = [_header(pool, 'the IOMMU on the kernel command line.'),
             '# The CPU vendor is not known to gpuclient: the line is '
             'chosen on the host,\n',
             '# when update-grub sources this file. Where '
             '/etc/default/grub.d is not read,\n',
             '# give the same arguments to grubby, e.g.\n']
    for vendor, args in KERNEL_ARGS.items():
        lines.append('#   %s: grubby --update-kernel=ALL --args="%s"\n'
                     % (vendor, ' '.join(args)))
    lines.append('# Takes effect at the next boot.\n')
    lines.append(
        'case "$(sed -n \'s/^vendor_id[[:space:]]*:[[:space:]]*//p\' '
        '/proc/cpuinfo | head -n 1)" in\n')
    for vendor, args in KERNEL_ARGS.items():
        lines.append('    %s) GRUB_CMDLINE_LINUX="${GRUB_CMDLINE_LINUX:-} '
                     '%s" ;;\n' % (vendor, ' '.join(args)))
    lines.append('esac\n')
    return ''.join(lines)


def nouveau_blacklist(pool: Mapping[str, typing.Any]) -> str:
    """modprobe.d lines keeping nouveau off the GPUs (vfio-pci or NVIDIA's
    vGPU manager must own them)."""
    return (_header(pool, 'nouveau never takes the GPUs.')
            + '# Read from the initramfs: rebuild it (update-initramfs -u, '
              'dracut -f).\n'
            'blacklist nouveau\n'
            'options nouveau modeset=0\n')


# -- passthrough --------------------------------------------------------------

def vfio_pci_ids(pools: Mapping[str, Mapping[str, typing.Any]], host: str,
                 extra: Iterable[str] = ()) -> list[str]:
    """The vendor:product ids vfio-pci must claim on HOST: those of every
    passthrough pool holding it (one ``ids=`` list per host: a second
    ``options`` line would replace the first), then EXTRA."""
    found = sorted({str(p['pci_id']).lower() for p in pools.values()
                    if p['mode'] == pools_mod.PASSTHROUGH
                    and host in p['hosts'] and p.get('pci_id')})
    for pci_id in extra:
        pci_id = pools_mod.normalize_pci_id(pci_id)
        if pci_id not in found:
            found.append(pci_id)
    return found


def vfio_conf(pool: Mapping[str, typing.Any], ids: Sequence[str],
              extra: bool = False) -> str:
    """modprobe.d lines binding IDS to vfio-pci, loaded before nvidia and
    nouveau (and before snd_hda_intel with EXTRA functions: a card's
    audio function is one)."""
    lines = [_header(pool, 'the GPUs bound to vfio-pci at boot.'),
             '# Read from the initramfs: rebuild it (update-initramfs -u, '
             'dracut -f).\n',
             'options vfio-pci ids=%s\n' % ','.join(ids),
             'softdep nvidia pre: vfio-pci\n',
             'softdep nouveau pre: vfio-pci\n']
    if extra:
        lines += ['# the other functions of the GPUs\' IOMMU groups '
                  '(--extra-pci-id): an audio\n',
                  '# function would be taken by snd_hda_intel first\n',
                  'softdep snd_hda_intel pre: vfio-pci\n']
    return ''.join(lines)


def modules_load(pool: Mapping[str, typing.Any]) -> str:
    """modules-load.d: vfio-pci loaded at boot."""
    return _header(pool, 'vfio-pci loaded at boot.') + 'vfio-pci\n'


def shared_host_notes(pool: Mapping[str, typing.Any],
                      pools: Mapping[str, Mapping[str, typing.Any]],
                      host: str) -> list[str]:
    """What a passthrough POOL's HOST shares with other pools: other
    passthrough pools (their ids are in the same list), pools whose
    cards the NVIDIA driver must keep (an ids list binds every function
    with those ids)."""
    notes = []
    for name in sorted(pools):
        other = pools[name]
        if name == pool['name'] or host not in other['hosts']:
            continue
        if other['mode'] == pools_mod.PASSTHROUGH:
            notes.append(_(
                '%(host)s is also in passthrough pool %(other)s: its id '
                '%(id)s is in the same vfio-pci ids list.')
                % {'host': host, 'other': name, 'id': other.get('pci_id')})
        elif other['mode'] in TREE_MODES + (pools_mod.VGPU,):
            notes.append(_(
                '%(host)s is also in %(mode)s pool %(other)s: vfio-pci '
                'ids= binds every function with those ids, its cards too '
                'if they have the same; bind the passthrough GPUs by '
                'address instead (e.g. driverctl set-override <address> '
                'vfio-pci) and leave %(file)s out.')
                % {'host': host, 'mode': other['mode'], 'other': name,
                   'file': VFIO_FILE})
    return notes


# -- mig ----------------------------------------------------------------------

def nvidia_gpus(devices: Iterable[Mapping[str, typing.Any]],
                pools: Mapping[str, Mapping[str, typing.Any]]) -> list[str]:
    """The PF addresses of a host's GPUs that the NVIDIA driver holds, as
    its device providers (DEVICES: ``nova_config.trees_from_snapshot``)
    show them, in PCI order: those offering VGPU or the class of a vgpu,
    mig or vgpu-vf pool (a passthrough GPU is on vfio-pci, which
    nvidia-smi does not see)."""
    classes = {'VGPU'} | {p['resource_class'] for p in pools.values()
                          if p['mode'] in TREE_MODES + (pools_mod.VGPU,)}
    found = set()
    for device in devices:
        address = nova_config.card_address(device.get('address'))
        if address and classes & set(device['resources']):
            found.add(address)
    return sorted(found)


def mig_cards(host: str, devices: Sequence[dict[str, typing.Any]],
              pools: Mapping[str, dict[str, typing.Any]],
              model: str | None = None
              ) -> tuple[list[dict[str, typing.Any]], list[str]]:
    """(cards, notes) of HOST's MIG cards as Placement shows them now,
    read as ``gpu profile plan --pool`` reads them: the pGPUs of the
    host's vgpu pools set apart, ``profile_cloud.cards`` over every MIG
    pool holding the host (a card may serve several; the boot unit redoes
    every card). Each card gains ``index`` (its place in ``nvidia_gpus``)
    and ``counts`` ({profile: GPU instances}); a card none of whose VFs
    serves a MIG pool is left out (its layout is not known). Raises
    ``profile_cloud.CannotTell`` when a card's model cannot be told (give
    MODEL)."""
    time_sliced = {d['uuid'] for d, _pool in profile_cloud.vgpu_devices(
        devices, profile_cloud.vgpu_pools_of(pools, host))}
    found, notes = profile_cloud.cards(
        host, [d for d in devices if d['uuid'] not in time_sliced],
        profile_cloud.mig_pools_of(pools, host), model=model)
    order = nvidia_gpus(devices, pools)
    cards = []
    for card in found:
        if not card['current']:
            notes.append(_(
                '%s: no VF of it serves a MIG pool of the host: no layout '
                'rendered for it.') % card['id'])
            continue
        counts = collections.Counter(name for name, _start in card['current'])
        cards.append(dict(card, index=order.index(card['address']),
                          counts=dict(sorted(counts.items()))))
    return cards, notes


def _counts_text(counts: Mapping[str, int]) -> str:
    return ', '.join('%s x%d' % item for item in counts.items()) or '-'


def mig_config(pool: Mapping[str, typing.Any], host: str,
               cards: Sequence[Mapping[str, typing.Any]]) -> str:
    """The nvidia-mig-parted configuration (version v1) of HOST's CARDS:
    one configuration, ``MIG_CONFIG_NAME``, with each card's GPU
    instances by profile."""
    lines = [
        _header(pool, 'the MIG layout of the GPUs of %s as Placement' % host),
        '# showed it, for nvidia-mig-parted (apply -c %s).\n'
        % MIG_CONFIG_NAME,
        '# GPUs are named by nvidia-smi\'s index (mig-parted takes no PCI '
        'address);\n',
        '# /%s checks each index before applying.\n' % MIG_SCRIPT_FILE,
        '# To change the layout: openstack gpu profile plan --pool ... '
        '--output-dir.\n',
        'version: v1\n', 'mig-configs:\n', '  %s:\n' % MIG_CONFIG_NAME]
    for card in cards:
        lines += ['    # %s (%s): %s\n' % (card['address'], card['model'],
                                          _counts_text(card['counts'])),
                  '    - devices: [%d]\n' % card['index'],
                  '      mig-enabled: true\n',
                  '      mig-devices:\n']
        lines += ['        "%s": %d\n' % item
                  for item in card['counts'].items()]
    return ''.join(lines)


_MIG_SCRIPT_HEAD = '''\
#!/bin/bash
%(header)s# Run as root at boot by %(unit)s, before nova-compute:
# GPU instances do not survive a reboot, nor, from Hopper on, MIG mode.
set -euo pipefail

CONFIG=/%(config)s
SYSFS=%(sysfs)s

if ! command -v %(parted)s >/dev/null; then
    echo "%(parted)s not found: install NVIDIA's mig-parted" \\
        "(nvidia-mig-manager package)" >&2
    exit 1
fi

# GPU $1 (PCI address) must be nvidia-smi's GPU $2, the index CONFIG
# names it by
check_index() {
    local found
    found=$(nvidia-smi -i "$1" --query-gpu=index --format=csv,noheader)
    if [ "$found" != "$2" ]; then
        echo "$1 is GPU $found, not $2: write devices: [$found] for it" \\
            "in $CONFIG" >&2
        exit 1
    fi
}

# the card's SR-IOV VFs, which carry its MIG-backed vGPUs: enabled before
# the layout is applied (enabling them clears it)
enable_vfs() {
    if [ "$(cat "$SYSFS/$1/sriov_numvfs")" = 0 ]; then
        %(sriov)s -e "$1"
    fi
}

'''


def mig_script(pool: Mapping[str, typing.Any], host: str,
               cards: Sequence[Mapping[str, typing.Any]]) -> str:
    """The bash script the MIG unit runs: each card's index checked, its
    VFs enabled, then ``nvidia-mig-parted apply`` of ``mig_config``."""
    lines = [_MIG_SCRIPT_HEAD % {
        'header': _header(pool, 'the MIG layout of the GPUs of %s.' % host),
        'unit': MIG_UNIT_FILE.rsplit('/', 1)[-1], 'config': MIG_CONFIG_FILE,
        'sysfs': profile_vf.SYSFS, 'parted': 'nvidia-mig-parted',
        'sriov': profile_vf.SRIOV_MANAGE}]
    for card in cards:
        lines.append('check_index %s %d\n' % (card['address'],
                                              card['index']))
    for card in cards:
        lines.append('enable_vfs %s\n' % card['address'])
    lines.append('nvidia-mig-parted apply -f "$CONFIG" -c %s\n'
                 % MIG_CONFIG_NAME)
    return ''.join(lines)


def mig_unit(host: str, script_path: str) -> str:
    """The systemd unit that runs SCRIPT_PATH at boot, after NVIDIA's
    host driver services and before nova-compute."""
    return profile_vf.boot_unit(
        'gpuclient: MIG layout of the GPUs of %s' % host, NVIDIA_SERVICES,
        script_path)


def vf_index(pf_address: str, vf_address: str) -> int | None:
    """The index of VF_ADDRESS among the VFs of PF_ADDRESS (``virtfn<N>``
    in sysfs), by NVIDIA's offset and stride, or None."""
    addresses = nova_config.vf_addresses(pf_address, MAX_VFS)
    return addresses.index(vf_address) if vf_address in addresses else None


def vgpu_definitions(
        cards: Sequence[Mapping[str, typing.Any]],
        mig_types: Mapping[str, str] | None = None
) -> tuple[list[dict[str, typing.Any]], list[str]]:
    """(the stackhpc.linux vgpu role's ``vgpu_definitions``, notes) of
    MIG CARDS: per card its PCI address and ``mig_devices``, and, where
    MIG_TYPES ({profile: mdev type}) names the mdev type of every profile
    of the card, ``virtual_functions`` (each VF Placement shows serving a
    profile, by its index, with that profile's mdev type): without them
    the role enables no VF on the card."""
    found, notes = [], []
    for card in cards:
        entry: dict[str, typing.Any] = {'pci_address': card['address'],
                                        'mig_devices': dict(card['counts'])}
        missing = sorted({name for name, _start in card['placed']
                          if name not in (mig_types or {})})
        functions = []
        for (name, _start), vf in card['placed'].items():
            index = vf_index(card['address'], vf)
            if index is None:
                missing.append(vf)
                continue
            functions.append({'index': index,
                              'mdev_type': (mig_types or {}).get(name)})
        if mig_types and not missing:
            entry['virtual_functions'] = sorted(
                functions, key=lambda f: f['index'])
        elif mig_types:
            notes.append(_(
                '%(card)s: no virtual_functions (no mdev type or VF index '
                'for %(what)s): the vgpu role enables no VF on it.')
                % {'card': card['id'], 'what': ', '.join(missing)})
        found.append(entry)
    if cards and not mig_types:
        notes.append(_(
            'vgpu_definitions carry mig_devices only: the vgpu role '
            'enables a card\'s VFs only with virtual_functions, which need '
            'the mdev type of each profile (--mig-mdev-type '
            '<profile>=<mdev type>, e.g. 1g.10gb=nvidia-699).'))
    return found, notes


# -- vgpu-vf ------------------------------------------------------------------

def vf_rows(host: str, devices: Iterable[Mapping[str, typing.Any]],
            pools: Mapping[str, dict[str, typing.Any]]
            ) -> list[dict[str, typing.Any]]:
    """HOST's vgpu-vf cards as ``profile_vf.script`` takes its plan's
    rows: every card that offers a vgpu-vf pool's class (all the pools
    holding the host: the boot script redoes every card), its types now
    kept (``proposed`` is ``current``, nothing re-typed). Raises
    ``profile_vf.CannotPlan`` for a pool type the catalogue does not
    know."""
    types = profile_vf.pool_types(
        [pools[n] for n in sorted(pools)
         if pools[n]['mode'] == pools_mod.VGPU_VF
         and host in pools[n]['hosts']])
    return [dict(card, proposed=dict(card['current']), recut=False)
            for card in profile_vf.host_cards(host, devices, types)]


# -- per host -----------------------------------------------------------------

class Layouts(typing.NamedTuple):
    """What Placement shows of one host's cards: its MIG CARDS
    (``mig_cards``) and vgpu-vf ROWS (``vf_rows``)."""

    cards: list[dict[str, typing.Any]]
    rows: list[dict[str, typing.Any]]


def _mig_files(pool, host, cards):
    """[(path on the host, text, mode, what)] of the MIG layout of HOST's
    CARDS; none without a card."""
    if not cards:
        return []
    return [
        (MIG_CONFIG_FILE, mig_config(pool, host, cards), FILE_MODE,
         _('MIG layout (nvidia-mig-parted): %s') % '; '.join(
             '%s %s' % (c['address'], _counts_text(c['counts']))
             for c in cards)),
        (MIG_SCRIPT_FILE, mig_script(pool, host, cards), SCRIPT_MODE,
         _('enables the VFs, applies the MIG layout')),
        (MIG_UNIT_FILE, mig_unit(host, '/' + MIG_SCRIPT_FILE), FILE_MODE,
         _('runs it at boot, before nova-compute'))]


def _vf_files(host, rows):
    """[(path on the host, text, mode, what)]: the VF script and unit of
    ``gpu profile plan`` (vgpu-vf) for HOST's ROWS; none without a
    card."""
    if not rows:
        return []
    script_path = SCRIPT_DIR + '/' + profile_vf.script_name(host)
    return [
        (script_path, profile_vf.script(host, rows), SCRIPT_MODE,
         _('VFs and their vGPU types: %s') % '; '.join(
             '%s %s' % (r['address'], profile_vf.layout_text(r['proposed']))
             for r in rows)),
        (UNIT_DIR + '/' + profile_vf.unit_name(host),
         profile_vf.unit(host, '/' + script_path), FILE_MODE,
         _('runs it at boot, before nova-compute'))]


def _systemd_files(pool, pools, host, found, options):
    """The files of one host in the systemd format (see ``host_files``)."""
    files = [
        (GRUB_FILE, grub_dropin(pool), FILE_MODE,
         _('kernel arguments: %s (by CPU vendor), GRUB drop-in')
         % ' or '.join(' '.join(a) for a in KERNEL_ARGS.values())),
        (BLACKLIST_FILE, nouveau_blacklist(pool), FILE_MODE,
         _('nouveau blacklisted'))]
    if pool['mode'] == pools_mod.PASSTHROUGH:
        ids = vfio_pci_ids(pools, host, options.extra_pci_ids)
        files += [
            (VFIO_FILE, vfio_conf(pool, ids, bool(options.extra_pci_ids)),
             FILE_MODE, _('vfio-pci ids=%s, softdeps') % ','.join(ids)),
            (MODULES_FILE, modules_load(pool), FILE_MODE,
             _('vfio-pci loaded at boot'))]
    files += _mig_files(pool, host, found.cards)
    files += _vf_files(host, found.rows)
    return [HostFile(host, '%s/%s' % (host, path), text, mode, what)
            for path, text, mode, what in files]


ROLES = {
    pools_mod.PASSTHROUGH: ('gpu_passthrough',),
    pools_mod.VGPU: ('gpu_passthrough',),
    pools_mod.MIG: ('gpu_passthrough', 'vgpu'),
    pools_mod.VGPU_VF: ('gpu_passthrough',),
}


def host_vars(pool: Mapping[str, typing.Any], host: str,
              data: Mapping[str, typing.Any]) -> str:
    """``host_vars/<host>.yml``: DATA (the roles' and gpuclient_*
    variables) as YAML, after a comment naming the roles to run."""
    import yaml

    head = [_header(pool, 'the variables of %s for the roles' % host)]
    head += ['#   stackhpc.linux.%s\n' % role for role in ROLES[pool['mode']]]
    head.append(
        '# (gpu_passthrough blacklists nouveau and runs\n'
        '# stackhpc.linux.iommu: intel_iommu=on on Intel CPUs, iommu=pt).\n'
        '# gpuclient_*: what those roles do not do (gpuclient\'s user\n'
        '# guide, "Rendering host preparation").\n')
    return ''.join(head) + yaml.safe_dump(dict(data), default_flow_style=False,
                                          sort_keys=False)


def _ansible_files(
        pool: Mapping[str, typing.Any],
        pools: Mapping[str, dict[str, typing.Any]], host: str,
        found: Layouts, options: Options
) -> tuple[list[HostFile], list[str]]:
    """(files, notes) of one host in the Ansible format (see
    ``host_files``)."""
    mode = pool['mode']
    data: dict[str, typing.Any] = {'iommu_pt': True,
                                   'gpuclient_kernel_args': kernel_args()}
    notes: list[str] = []
    if mode == pools_mod.PASSTHROUGH:
        data['gpuclient_vfio_pci_ids'] = vfio_pci_ids(
            pools, host, options.extra_pci_ids)
    if found.cards:
        data['vgpu_definitions'], notes = vgpu_definitions(
            found.cards, options.mig_types)
    targets = _vf_files(host, found.rows)
    files = [HostFile(host, '%s/%s/%s' % (FILES_DIR, host, path), text,
                      mode, what) for path, text, mode, what in targets]
    if targets:
        data['gpuclient_files'] = [
            {'src': '%s/%s/%s' % (FILES_DIR, host, path), 'dest': '/' + path,
             'mode': '%04o' % mode} for path, _text, mode, _what in targets]
    what = _('variables of stackhpc.linux %s, gpuclient_*') % ', '.join(
        ('iommu',) + ROLES[mode])
    return [HostFile(host, HOST_VARS % host, host_vars(pool, host, data),
                     FILE_MODE, what)] + files, notes


def host_files(pool: Mapping[str, typing.Any],
               pools: Mapping[str, dict[str, typing.Any]], host: str,
               devices: Sequence[dict[str, typing.Any]] | None,
               options: Options | None = None
               ) -> tuple[list[HostFile], list[str]]:
    """(files, notes) of one HOST of POOL: POOLS are every pool (what the
    host also serves), DEVICES the host's device providers
    (``nova_config.trees_from_snapshot``; None: the mode needs none, or
    the host has no compute node in Placement). A mig or vgpu-vf host
    whose cards Placement does not show gets the kernel arguments and the
    blacklist, and a note. OPTIONS: ``Options()`` when None."""
    options = options or Options()
    mode = pool['mode']
    notes: list[str] = []
    found = Layouts([], [])
    if mode in TREE_MODES and devices is None:
        notes.append(_('%s has no compute node in Placement: its cards '
                       'are not rendered.') % host)
    elif mode == pools_mod.MIG:
        cards, notes = mig_cards(host, devices or [], pools, options.model)
        found = Layouts(cards, [])
    elif mode == pools_mod.VGPU_VF:
        found = Layouts([], vf_rows(host, devices or [], pools))
    if mode in TREE_MODES and devices is not None and not (
            found.cards or found.rows):
        notes.append(_(
            '%(host)s: Placement shows no card serving a %(mode)s pool '
            'there: no layout rendered for it (see "openstack gpu host '
            'list --long --pool %(pool)s").')
            % {'host': host, 'mode': mode, 'pool': pool['name']})
    if mode == pools_mod.PASSTHROUGH:
        notes += shared_host_notes(pool, pools, host)
    if options.file_format == ANSIBLE:
        files, more = _ansible_files(pool, pools, host, found, options)
        return files, notes + more
    return _systemd_files(pool, pools, host, found, options), notes


def after_notes(pool: Mapping[str, typing.Any], file_format: str) -> list[str]:
    """What the operator does with the files (gpuclient applies none of
    them), and what the mode leaves to Nova."""
    mode = pool['mode']
    if file_format == ANSIBLE:
        notes = [_(
            'Nothing was applied: put host_vars/ (and files/) into the '
            'inventory and run the roles named at the top of each file; '
            'then reboot each host once its servers are moved (gpu host '
            'drain).')]
    else:
        notes = [_(
            'Nothing was applied: copy each host\'s directory onto it '
            '(rsync -a <dir>/<host>/ root@<host>:/), then run update-grub '
            '(or grubby) and update-initramfs -u (or dracut -f), '
            'systemctl daemon-reload and systemctl enable the units, and '
            'reboot the host once its servers are moved (gpu host '
            'drain).')]
    if mode == pools_mod.VGPU:
        notes.append(_(
            'Pool %s is time-sliced vGPU (mdev): Nova creates the mediated '
            'devices itself ([devices] enabled_mdev_types, see "gpu config '
            'show"), so only the IOMMU and the blacklist are rendered; the '
            'NVIDIA vGPU manager must own the cards (no vfio-pci).')
            % pool['name'])
    elif mode in TREE_MODES:
        notes.append(_(
            'The layouts rendered are those Placement shows now, so that '
            'a reboot keeps them; to change them, "openstack gpu profile '
            'plan --pool %s --output-dir <dir>", then render again.')
            % pool['name'])
    return notes


def pool_files(pool: Mapping[str, typing.Any],
               pools: Mapping[str, dict[str, typing.Any]],
               trees: Mapping[str, Sequence[dict[str, typing.Any]]] | None,
               options: Options | None = None
               ) -> tuple[list[HostFile], list[str]]:
    """(files, notes) of every host of POOL, hosts in name order: TREES
    ({host: device providers}) for the modes that need them
    (``TREE_MODES``), else None. Refuses (``check_request``) what cannot
    be rendered. OPTIONS: ``Options()`` when None."""
    options = options or Options()
    check_request(pool, options)
    files: list[HostFile] = []
    notes: list[str] = []
    for host in sorted(pool['hosts']):
        devices = (trees or {}).get(host) if pool['mode'] in TREE_MODES \
            else None
        more, said = host_files(pool, pools, host, devices, options)
        files += more
        notes += said
    return files, notes + after_notes(pool, options.file_format)

