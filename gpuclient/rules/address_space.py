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

"""Pure: the guest physical address space of a GPU flavor (issue 40 rule 3).

A guest maps its RAM and every passthrough GPU's BAR1 window (the frame
buffer aperture, ``catalogue.BAR1``) into its physical address space. With a
host-model CPU and no ``<maxphysaddr>`` in the domain, that space has 40
bits (1 TiB), and a guest whose RAM, the 32-bit PCI hole below 4 GiB and
the BAR1 windows do not fit sees only some of its GPUs (the guest kernel
logs "BAR 1: no space"): 4 x H100 NVL (128 GiB each) with 512 GiB of RAM is
such a flavor.

Nova's settings (Nova 28.0.0 / 2023.2 and later; as Nova 34 reads them):

* ``hw:maxphysaddr_mode`` (or the image's ``hw_maxphysaddr_mode``):
  ``passthrough`` (the guest gets the host's bits) or ``emulate`` (the
  guest gets ``hw:maxphysaddr_bits``); ``nova/objects/fields.py``
  MaxPhyAddrMode, refused otherwise by ``nova/virt/hardware.py``
  get_maxphysaddr_mode. The libvirt driver writes them as
  ``<cpu><maxphysaddr mode= bits=/>`` (``_get_guest_cpu_config_maxphysaddr``).
* The request: ``ResourceRequest._translate_maxphysaddr_request``
  (``nova/scheduler/utils.py``) requires COMPUTE_ADDRESS_SPACE_PASSTHROUGH
  or COMPUTE_ADDRESS_SPACE_EMULATED, which the libvirt driver reports from
  libvirt 8.7.0 (MIN_LIBVIRT_MAXPHYSADDR) with QEMU.
* ``hw:maxphysaddr_bits``: ComputeCapabilitiesFilter asks the host's
  ``cpu_info`` maxphysaddr bits to be at least as many.
* Nova 34's flavor extra-spec validator (``nova/api/validation/
  extra_specs/hw.py``) does not register either key: at compute API 2.86
  and later, ``openstack flavor set --property hw:maxphysaddr_mode=...``
  gets 400 "does not appear to be a valid extra spec" (checked against
  the installed Nova 34 and on the test cloud; OSC's default 2.1 is
  accepted). gpuclient writes flavor extra specs raw at 2.61
  (``cloud.compute.set_flavor_extra_specs``), whatever
  ``--os-compute-api-version`` says, where Nova does not validate them.
"""

from __future__ import annotations

from collections.abc import Mapping
import typing

from osc_lib import exceptions

from gpuclient.i18n import _

if typing.TYPE_CHECKING:
    from gpuclient.rules import catalogue

MODE_SPEC = 'hw:maxphysaddr_mode'
BITS_SPEC = 'hw:maxphysaddr_bits'
PASSTHROUGH = 'passthrough'
EMULATE = 'emulate'
# nova/objects/fields.py MaxPhyAddrMode.ALL (Nova 34)
MODES = (PASSTHROUGH, EMULATE)
# the traits _translate_maxphysaddr_request requires (Nova 34)
TRAITS = {PASSTHROUGH: 'COMPUTE_ADDRESS_SPACE_PASSTHROUGH',
          EMULATE: 'COMPUTE_ADDRESS_SPACE_EMULATED'}
# a guest's physical address bits with a host-model CPU and no maxphysaddr
DEFAULT_BITS = 40
# x86-64 physical addresses: at most 52 bits; fewer than 32 is no 64-bit
# guest at all
MIN_BITS, MAX_BITS = 32, 52
GIB = 1 << 30
MIB = 1 << 20
# the 32-bit PCI hole: RAM past it is mapped above 4 GiB
LOW_HOLE = 4 * GIB


def _error(message: str, **kwargs: object) -> exceptions.CommandError:
    return exceptions.CommandError(message % kwargs if kwargs else message)


def options_specs(mode: str | None = None,
                  bits: int | None = None) -> dict[str, str]:
    """The extra specs of ``gpu flavor create --maxphysaddr-mode/-bits``.

    Refuses what Nova would refuse or ignore: a mode it does not know,
    bits without ``emulate`` (Nova's libvirt driver writes no
    ``<maxphysaddr>`` without a mode; with ``passthrough`` the guest has the
    host's bits), ``emulate`` without bits (libvirt needs them) and bits
    outside 32 to 52.
    """
    if mode is None and bits is None:
        return {}
    if mode is not None and mode not in MODES:
        raise _error(_('--maxphysaddr-mode %(mode)s: Nova knows %(modes)s.'),
                     mode=mode, modes=', '.join(MODES))
    if bits is not None and mode != EMULATE:
        raise _error(
            _('--maxphysaddr-bits %(bits)s needs --maxphysaddr-mode '
              'emulate: without a mode Nova gives the guest no '
              'maxphysaddr, and with passthrough the guest has the '
              'host\'s bits.'), bits=bits)
    if mode == EMULATE and bits is None:
        raise _error(_('--maxphysaddr-mode emulate needs --maxphysaddr-bits '
                       '(the guest\'s physical address bits, %(low)d to '
                       '%(high)d).'), low=MIN_BITS, high=MAX_BITS)
    # MODE is given here: bits without it were refused above
    specs: dict[str, str] = {MODE_SPEC: mode}  # type: ignore[dict-item]
    if bits is not None:
        if not MIN_BITS <= bits <= MAX_BITS:
            raise _error(
                _('--maxphysaddr-bits %(bits)s: give %(low)d to %(high)d '
                  '(x86-64 physical address bits), at most the hosts\' '
                  'own (ComputeCapabilitiesFilter compares them).'),
                bits=bits, low=MIN_BITS, high=MAX_BITS)
        specs[BITS_SPEC] = str(bits)
    return specs


def guest_bits(extra_specs: Mapping[str, typing.Any] | None) -> int | None:
    """The guest's physical address bits under these extra specs: the
    emulated bits, None with ``passthrough`` (the host's: not known here),
    DEFAULT_BITS without a mode."""
    extra_specs = extra_specs or {}
    mode = extra_specs.get(MODE_SPEC)
    if mode == PASSTHROUGH:
        return None
    if mode == EMULATE:
        try:
            return int(str(extra_specs.get(BITS_SPEC)).strip())
        except ValueError:
            return None
    return DEFAULT_BITS


def need_bytes(ram_mb: int | None, gpus: int, bar1_gib: int) -> int:
    """The top of the guest's physical address space it needs: RAM, the
    32-bit hole and every GPU's BAR1 window."""
    return int(ram_mb or 0) * MIB + LOW_HOLE + gpus * bar1_gib * GIB


def suggested_bits(need: int) -> int:
    """Bits that hold twice NEED (room for the alignment of the windows,
    each aligned to its size), at least one more than the default."""
    return min(MAX_BITS, max(DEFAULT_BITS + 1, (need - 1).bit_length() + 1))


def judge(ram_mb: int | None, gpus: int, bar1_gib: int | None,
          extra_specs: Mapping[str, typing.Any] | None
          ) -> dict[str, int] | None:
    """None when the flavor's guest holds its GPUs' BAR1 windows (or it is
    not known: no BAR1 size, passthrough bits); else a dict: ``need_gib``,
    ``bits`` (what the guest has), ``suggested_bits``."""
    if not bar1_gib or not gpus:
        return None
    bits = guest_bits(extra_specs)
    if bits is None:
        return None
    need = need_bytes(ram_mb, gpus, bar1_gib)
    if need <= 1 << bits:
        return None
    return {'need_gib': -(-need // GIB), 'bits': bits,
            'suggested_bits': suggested_bits(need)}


def symptom(result: Mapping[str, int], gpus: int, bar1_gib: int,
            board: str) -> str:
    return _(
        'a guest of it needs %(need)d GiB of physical address space (RAM, '
        'the 4 GiB below 4 GiB, %(gpus)d BAR1 windows of %(bar)d GiB of '
        '%(board)s) but has %(bits)d bits (%(space)d GiB): it sees only some '
        'of its GPUs ("BAR 1: no space" in the guest).') % {
            'need': result['need_gib'], 'gpus': gpus, 'bar': bar1_gib,
            'board': board, 'bits': result['bits'],
            'space': (1 << result['bits']) // GIB}


def fix(flavor_label: str, result: Mapping[str, int]) -> str:
    """The command giving the flavor's guests the host's address bits
    (or, second, emulated bits)."""
    return _(
        'openstack gpu flavor set --property %(mode)s=%(pt)s %(flavor)s  '
        '(hosts need libvirt 8.7.0 or later: %(trait)s; or --property '
        '%(mode)s=%(em)s --property %(bits)s=%(n)d)') % {
            'mode': MODE_SPEC, 'pt': PASSTHROUGH, 'flavor': flavor_label,
            'trait': TRAITS[PASSTHROUGH], 'em': EMULATE, 'bits': BITS_SPEC,
            'n': result['suggested_bits']}


def pool_bar1(pool: Mapping[str, typing.Any]) -> catalogue.Bar1 | None:
    """The catalogue.Bar1 of a passthrough pool's board (by its PCI ID;
    its ``gib`` None where the catalogue has no BAR1 size of it), or None
    (another mode: a vGPU's BAR1 is the type's, smaller; a PCI ID no
    catalogue board has)."""
    if (pool or {}).get('mode') != 'passthrough':
        return None
    from gpuclient.rules import catalogue
    return catalogue.bar1_for_pci_id(pool.get('pci_id'))


def room_per_gpu(ram_mb: int | None, gpus: int, bits: int) -> int:
    """The largest BAR1 window (GiB, rounded down) each of GPUS can have
    for a guest of RAM_MB and BITS address bits to map them all (RAM, the
    32-bit hole and the windows within 2**BITS); 0 when none fits."""
    room = (1 << bits) - int(ram_mb or 0) * MIB - LOW_HOLE
    return max(room, 0) // max(gpus, 1) // GIB


def unknown_bar1(pool: Mapping[str, typing.Any]) -> str | None:
    """What ``gpu check`` names when a passthrough POOL's BAR1 size is not
    known: its board (with the PCI ID), or the PCI ID no catalogue board
    has; None when the size is known or POOL is of another mode."""
    if (pool or {}).get('mode') != 'passthrough':
        return None
    bar1 = pool_bar1(pool)
    if bar1 is None:
        return _('the GPU with PCI ID %s (no board of the catalogue)') % (
            pool.get('pci_id') or _('unknown'))
    if bar1.gib:
        return None
    return '%s (%s)' % (bar1.board, ', '.join(bar1.pci_ids))


def unknown_fix(flavor_label: str) -> str:
    """How to judge (or not need) the BAR1 windows of a flavor whose
    board's BAR1 size is not known."""
    return _(
        'nvidia-smi -q -d MEMORY on a host of the pool ("BAR1 Memory '
        'Usage", Total: the guest needs RAM + 4 GiB + that per GPU within '
        '%(space)d GiB); or openstack gpu flavor set --property '
        '%(mode)s=%(pt)s %(flavor)s  (hosts need libvirt 8.7.0 or later: '
        '%(trait)s)') % {
            'space': (1 << DEFAULT_BITS) // GIB, 'mode': MODE_SPEC,
            'pt': PASSTHROUGH, 'flavor': flavor_label,
            'trait': TRAITS[PASSTHROUGH]}


def flavor_warning(pool: Mapping[str, typing.Any], gpus: int,
                   ram_mb: int | None,
                   extra_specs: Mapping[str, typing.Any] | None
                   ) -> str | None:
    """What ``gpu flavor create`` says when the flavor's guests would not
    hold their GPUs' BAR1 windows, with the options that fix it; or None."""
    bar1 = pool_bar1(pool)
    result = bar1 and judge(ram_mb, gpus, bar1.gib, extra_specs)
    if not result:
        return None
    return _('Flavor of pool %(pool)s: %(symptom)s Give --maxphysaddr-mode '
             'passthrough (hosts with %(trait)s) or --maxphysaddr-mode '
             'emulate --maxphysaddr-bits %(bits)d.') % {
                 'pool': pool['name'],
                 # BAR1 is given: RESULT is judge's
                 'symptom': symptom(
                     result, gpus,
                     bar1.gib, bar1.board),  # type: ignore[arg-type,union-attr]
                 'trait': TRAITS[PASSTHROUGH],
                 'bits': result['suggested_bits']}
