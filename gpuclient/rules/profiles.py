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

"""Pure: the GPU partition catalogue and the plan of ``gpu profile plan``.

The catalogue: NVIDIA's MIG profiles (compute and memory slices, valid
placements) and time-sliced vGPU types per GPU model, the types keyed by
the board they are named for, each model and board with its source
(NVIDIA's MIG user guide, mig-parted's config-default.yaml, NVIDIA's vGPU
type tables). The plan: ``plan(cards, demand)`` gives every card
a layout that meets as much of the demand as possible, then re-cuts the
fewest cards, then disturbs the fewest running servers, solved exactly
by HiGHS (imported only when a plan is solved) and proven optimal by an
LP bound (``_dive``) or by HiGHS's branch and bound.

Where the numbers come from, why the plan is exact and how the fewest
moves are proven: doc/source/contributor/profiles.rst (the contributor
guide's "The profile plan").
"""

import collections
import functools
import math
import re

from gpuclient.i18n import _

MIG = 'mig'
VGPU = 'vgpu'

Profile = collections.namedtuple(
    'Profile', 'name compute memory_slices memory_gb max_count starts media')
# board: the key of the Board the type is named for (vGPU type names differ
# between the boards of one GPU: H100-80C on the PCIe card, H100XM-80C on
# the SXM5 module)
VgpuType = collections.namedtuple('VgpuType', 'name memory_gb max_count board')
# a physical product carrying the model's GPU: its key (``H100-SXM5-80GB``),
# NVIDIA's name of it, physical GPUs on it, and the table its vGPU types are
# transcribed from
Board = collections.namedtuple('Board', 'name title gpus source')
# source: where the MIG profiles (names, counts, start slots) come from
Model = collections.namedtuple(
    'Model', 'name compute_slices memory_slices profiles vgpu_types boards '
    'source')


class UnknownName(ValueError):
    """A model, profile or vGPU type that the catalogue does not know."""


class BoardMismatch(ValueError):
    """vGPU types asked of cards of another board (``check_boards``)."""


# -- the catalogue ------------------------------------------------------------
#
# Only facts found in a source are here; each model and board names its
# source (doc/source/user/catalogue.rst lists them). The sources:

MIG_GUIDE = (
    'NVIDIA Multi-Instance GPU User Guide (R580), "Supported MIG Profiles"; '
    'start slots as "nvidia-smi mig -lgipp" lists them')
MIG_PARTED = (
    'NVIDIA mig-parted, deployments/systemd/config-default.yaml (commit '
    'bd7160f4, 2026-08-21): profile names and the instances of each per GPU '
    '(its all-<profile> configurations)')
SLOTS_8 = ('start slots: those of every 8-slice GPU in the MIG User Guide '
           '(no -lgipp listing of this GPU found)')
SLOTS_4 = ('start slots: those of the 4-slice A30 in the MIG User Guide '
           '(no -lgipp listing of this GPU found)')
VGPU_GUIDE_DOC = (
    'NVIDIA AI Enterprise, "NVIDIA AI Enterprise and NVIDIA vGPU '
    '(C-Series)", Virtual GPU Types for Supported GPUs')
VGPU_HOPPER_DOC = (
    'NVIDIA vGPU Types Reference (AI Enterprise release 7), "Hopper '
    'Architecture vGPU Types"')
VGPU_GUIDE = VGPU_GUIDE_DOC + ', Table %d'
VGPU_HOPPER = VGPU_HOPPER_DOC + ', Table %d'

# (compute slices, memory slices, starts, max count, media) of each shape of
# the 8-memory-slice GPUs, in the user guide's table order.
_SHAPES_8 = (
    ('1g', 1, 1, (0, 1, 2, 3, 4, 5, 6), 7, False),
    ('1g+me', 1, 1, (0, 1, 2, 3, 4, 5, 6), 1, True),
    ('1g2', 1, 2, (0, 2, 4, 6), 4, False),
    ('2g', 2, 2, (0, 2, 4), 3, False),
    ('3g', 3, 4, (0, 4), 2, False),
    ('4g', 4, 4, (0,), 1, False),
    ('7g', 7, 8, (0,), 1, False),
)
_SHAPES_4 = (
    ('1g', 1, 1, (0, 1, 2, 3), 4, False),
    ('1g+me', 1, 1, (0, 1, 2, 3), 1, True),
    ('2g', 2, 2, (0, 2), 2, False),
    ('2g+me', 2, 2, (0, 2), 1, True),
    ('4g', 4, 4, (0,), 1, False),
)
# RTX PRO 6000 Blackwell (4 slices): mig-parted's profiles and counts.
# ``+gfx``: with graphics; ``-me``: without media engines; ``+me.all``: every
# media engine of the GPU (one per GPU).
_SHAPES_RTX_PRO = (
    ('1g', 1, 1, (0, 1, 2, 3), 4, False),
    ('1g+gfx', 1, 1, (0, 1, 2, 3), 4, False),
    ('1g-me', 1, 1, (0, 1, 2, 3), 4, False),
    ('1g+me.all', 1, 1, (0, 1, 2, 3), 1, True),
    ('2g', 2, 2, (0, 2), 2, False),
    ('2g+gfx', 2, 2, (0, 2), 2, False),
    ('2g-me', 2, 2, (0, 2), 2, False),
    ('2g+me.all', 2, 2, (0, 2), 1, True),
    ('4g', 4, 4, (0,), 1, False),
    ('4g+gfx', 4, 4, (0,), 1, False),
)
# a +me.all instance takes every media engine: the others on its GPU must
# be -me (no media engine)
ALL_MEDIA = '+me.all'
NO_MEDIA = '-me'


def _mig_backed(doc, *tables):
    """MIG_GUIDE, and the MIG-backed vGPU TABLES of DOC that give the same
    instances per GPU."""
    return '%s; instances per GPU also in %s, MIG-backed Table%s %s' % (
        MIG_GUIDE, doc, 's' if len(tables) > 1 else '',
        ' and '.join(str(n) for n in tables))


def _board(name, title, source, types, gpus=1):
    """(Board, its VgpuTypes) from TYPES ((name, GB, per GPU), ...)."""
    board = Board(name, title, gpus, source)
    return board, tuple(VgpuType(t, gb, count, name)
                        for t, gb, count in types)


def _model(name, shapes, names, boards=(), source=MIG_GUIDE):
    profiles = []
    for (_shape, c, m, starts, count, media), pname in zip(
            shapes, names, strict=True):
        gb = int(re.match(r'\d+g\.(\d+)gb', pname).group(1))
        profiles.append(Profile(pname, c, m, gb, count, starts, media))
    compute = max((p.compute for p in profiles), default=0)
    memory = max((p.memory_slices for p in profiles), default=0)
    vgpus = tuple(t for _board, types in boards for t in types)
    return Model(name, compute, memory, tuple(profiles), vgpus,
                 tuple(b for b, _types in boards), source)


def _time_sliced(name, board):
    """A GPU with time-sliced vGPU types only (no MIG)."""
    return _model(name, (), (), (board,), source=None)


MODELS = collections.OrderedDict((m.name, m) for m in (
    _model('A100-40GB', _SHAPES_8,
           ('1g.5gb', '1g.5gb+me', '1g.10gb', '2g.10gb', '3g.20gb',
            '4g.20gb', '7g.40gb'),
           (_board('A100-PCIE-40GB', 'NVIDIA A100 PCIe 40GB',
                   VGPU_GUIDE % 72,
                   (('A100-40C', 40, 1), ('A100-20C', 20, 2),
                    ('A100-10C', 10, 4), ('A100-8C', 8, 5),
                    ('A100-5C', 5, 8), ('A100-4C', 4, 10))),
            _board('A100-HGX-40GB', 'NVIDIA A100 HGX 40GB (SXM4)',
                   VGPU_GUIDE % 74,
                   (('A100X-40C', 40, 1), ('A100X-20C', 20, 2),
                    ('A100X-10C', 10, 4), ('A100X-8C', 8, 5),
                    ('A100X-5C', 5, 8), ('A100X-4C', 4, 10)))),
           source=_mig_backed(VGPU_GUIDE_DOC, 71, 73)),
    _model('A100-80GB', _SHAPES_8,
           ('1g.10gb', '1g.10gb+me', '1g.20gb', '2g.20gb', '3g.40gb',
            '4g.40gb', '7g.80gb'),
           (_board('A100-PCIE-80GB', 'NVIDIA A100 PCIe 80GB (also the '
                   'liquid-cooled PCIe 80GB and the A100X: same types)',
                   VGPU_GUIDE % 64,
                   (('A100D-80C', 80, 1), ('A100D-40C', 40, 2),
                    ('A100D-20C', 20, 4), ('A100D-16C', 16, 5),
                    ('A100D-10C', 10, 8), ('A100D-8C', 8, 10),
                    ('A100D-4C', 4, 20))),
            _board('A100-HGX-80GB', 'NVIDIA A100 HGX 80GB (SXM4)',
                   VGPU_GUIDE % 70,
                   (('A100DX-80C', 80, 1), ('A100DX-40C', 40, 2),
                    ('A100DX-20C', 20, 4), ('A100DX-16C', 16, 5),
                    ('A100DX-10C', 10, 8), ('A100DX-8C', 8, 10),
                    ('A100DX-4C', 4, 20)))),
           source=_mig_backed(VGPU_GUIDE_DOC, 63, 69)),
    _model('A30-24GB', _SHAPES_4,
           ('1g.6gb', '1g.6gb+me', '2g.12gb', '2g.12gb+me', '4g.24gb'),
           (_board('A30', 'NVIDIA A30', VGPU_GUIDE % 76,
                   (('A30-24C', 24, 1), ('A30-12C', 12, 2),
                    ('A30-8C', 8, 3), ('A30-6C', 6, 4),
                    ('A30-4C', 4, 6))),),
           source=_mig_backed(VGPU_GUIDE_DOC, 75)),
    _model('H100-80GB', _SHAPES_8,
           ('1g.10gb', '1g.10gb+me', '1g.20gb', '2g.20gb', '3g.40gb',
            '4g.40gb', '7g.80gb'),
           (_board('H100-PCIE-80GB', 'NVIDIA H100 PCIe 80GB',
                   VGPU_HOPPER % 179,
                   (('H100-80C', 81, 1), ('H100-40C', 40, 2),
                    ('H100-20C', 20, 4), ('H100-16C', 16, 6),
                    ('H100-10C', 10, 8), ('H100-8C', 8, 10),
                    ('H100-5C', 5, 16), ('H100-4C', 4, 20))),
            _board('H100-SXM5-80GB', 'NVIDIA H100 SXM5 80GB',
                   VGPU_HOPPER % 181,
                   (('H100XM-80C', 81, 1), ('H100XM-40C', 40, 2),
                    ('H100XM-20C', 20, 4), ('H100XM-16C', 16, 6),
                    ('H100XM-10C', 10, 8), ('H100XM-8C', 8, 10),
                    ('H100XM-5C', 5, 16), ('H100XM-4C', 4, 20)))),
           source=_mig_backed(VGPU_HOPPER_DOC, 178, 180)),
    _model('H100-94GB', _SHAPES_8,
           ('1g.12gb', '1g.12gb+me', '1g.24gb', '2g.24gb', '3g.47gb',
            '4g.47gb', '7g.94gb'),
           (_board('H100-NVL', 'NVIDIA H100 PCIe 94GB (H100 NVL)',
                   VGPU_HOPPER % 175,
                   (('H100L-94C', 96, 1), ('H100L-47C', 48, 2),
                    ('H100L-23C', 23, 4), ('H100L-15C', 15, 6),
                    ('H100L-11C', 11, 8), ('H100L-6C', 6, 15),
                    ('H100L-4C', 4, 23))),
            _board('H100-SXM5-94GB', 'NVIDIA H100 SXM5 94GB',
                   VGPU_HOPPER % 177,
                   (('H100XL-94C', 96, 1), ('H100XL-47C', 48, 2),
                    ('H100XL-23C', 23, 4), ('H100XL-15C', 15, 6),
                    ('H100XL-11C', 11, 8), ('H100XL-6C', 6, 15),
                    ('H100XL-4C', 4, 23)))),
           source=_mig_backed(VGPU_HOPPER_DOC, 174, 176)),
    _model('H200-141GB', _SHAPES_8,
           ('1g.18gb', '1g.18gb+me', '1g.35gb', '2g.35gb', '3g.71gb',
            '4g.71gb', '7g.141gb'),
           (_board('H200-NVL', 'NVIDIA H200 PCIe 141GB (H200 NVL)',
                   VGPU_HOPPER % 171,
                   (('H200-141C', 144, 1), ('H200-70C', 71, 2),
                    ('H200-35C', 35, 4), ('H200-28C', 28, 5),
                    ('H200-17C', 17, 8), ('H200-14C', 14, 10),
                    ('H200-8C', 8, 16), ('H200-7C', 7, 20),
                    ('H200-4C', 4, 32))),
            _board('H200-SXM5', 'NVIDIA H200 SXM5 141GB',
                   VGPU_HOPPER % 173,
                   (('H200X-141C', 144, 1), ('H200X-70C', 71, 2),
                    ('H200X-35C', 35, 4), ('H200X-28C', 28, 5),
                    ('H200X-17C', 17, 8), ('H200X-14C', 14, 10),
                    ('H200X-8C', 8, 16), ('H200X-7C', 7, 20),
                    ('H200X-4C', 4, 32)))),
           source=_mig_backed(VGPU_HOPPER_DOC, 170, 172)),
    _model('GH200-96GB', _SHAPES_8,
           ('1g.12gb', '1g.12gb+me', '1g.24gb', '2g.24gb', '3g.48gb',
            '4g.48gb', '7g.96gb'),
           source=MIG_PARTED + '; ' + SLOTS_8),
    _model('GH200-144GB', _SHAPES_8,
           ('1g.18gb', '1g.18gb+me', '1g.36gb', '2g.36gb', '3g.72gb',
            '4g.72gb', '7g.144gb'),
           source=MIG_PARTED + '; ' + SLOTS_8),
    _model('B200-180GB', _SHAPES_8,
           ('1g.23gb', '1g.23gb+me', '1g.45gb', '2g.45gb', '3g.90gb',
            '4g.90gb', '7g.180gb'),
           source=MIG_GUIDE + '; names and instances per GPU also in '
           + MIG_PARTED),
    _model('GB200-186GB', _SHAPES_8,
           ('1g.23gb', '1g.23gb+me', '1g.47gb', '2g.47gb', '3g.93gb',
            '4g.93gb', '7g.186gb'),
           source=MIG_PARTED + '; ' + SLOTS_8),
    _model('B300-288GB', _SHAPES_8,
           ('1g.34gb', '1g.34gb+me', '1g.67gb', '2g.67gb', '3g.135gb',
            '4g.135gb', '7g.269gb'),
           source=MIG_PARTED + '; ' + SLOTS_8),
    _model('GB300-288GB', _SHAPES_8,
           ('1g.35gb', '1g.35gb+me', '1g.70gb', '2g.70gb', '3g.139gb',
            '4g.139gb', '7g.278gb'),
           source=MIG_PARTED + '; ' + SLOTS_8),
    _model('RTX-PRO-6000-96GB', _SHAPES_RTX_PRO,
           ('1g.24gb', '1g.24gb+gfx', '1g.24gb-me', '1g.24gb+me.all',
            '2g.48gb', '2g.48gb+gfx', '2g.48gb-me', '2g.48gb+me.all',
            '4g.96gb', '4g.96gb+gfx'),
           source=MIG_PARTED + '; ' + SLOTS_4),
    _time_sliced('L40S-48GB', _board(
        'L40S', 'NVIDIA L40S', VGPU_GUIDE % 39,
        (('L40S-48C', 48, 1), ('L40S-24C', 24, 2), ('L40S-16C', 16, 3),
         ('L40S-12C', 12, 4), ('L40S-8C', 8, 6), ('L40S-6C', 6, 8),
         ('L40S-4C', 4, 12)))),
    _time_sliced('L40-48GB', _board(
        'L40', 'NVIDIA L40', VGPU_GUIDE % 38,
        (('L40-48C', 48, 1), ('L40-24C', 24, 2), ('L40-16C', 16, 3),
         ('L40-12C', 12, 4), ('L40-8C', 8, 6), ('L40-6C', 6, 8),
         ('L40-4C', 4, 12)))),
    _time_sliced('L4-24GB', _board(
        'L4', 'NVIDIA L4', VGPU_GUIDE % 42,
        (('L4-24C', 24, 1), ('L4-12C', 12, 2), ('L4-8C', 8, 3),
         ('L4-6C', 6, 4), ('L4-4C', 4, 6)))),
    _time_sliced('A40-48GB', _board(
        'A40', 'NVIDIA A40', VGPU_GUIDE % 47,
        (('A40-48C', 48, 1), ('A40-24C', 24, 2), ('A40-16C', 16, 3),
         ('A40-12C', 12, 4), ('A40-8C', 8, 6), ('A40-6C', 6, 8),
         ('A40-4C', 4, 12)))),
    _time_sliced('A16-16GB', _board(
        'A16', 'NVIDIA A16 (4 GPUs of 16GB on the board)', VGPU_GUIDE % 48,
        (('A16-16C', 16, 1), ('A16-8C', 8, 2), ('A16-4C', 4, 4)), gpus=4)),
))

BOARDS = collections.OrderedDict(
    (b.name, (b, m.name)) for m in MODELS.values() for b in m.boards)

# -- BAR1 windows ------------------------------------------------------------
#
# The BAR1 window of a board (its frame buffer aperture, mapped into the
# guest's physical address space under passthrough: rules/address_space),
# keyed by board, with the PCI device IDs that name the board in a pool
# (``--pci-id``) and the source of each. Every board the catalogue has a
# PCI device ID of is here; ``gib`` is None where no source gave its BAR1
# size, and ``gpu check`` (flavor-address-space) then says "not judged"
# (doc/source/user/catalogue.rst, "BAR1 windows").
Bar1 = collections.namedtuple('Bar1', 'board gib pci_ids source')

# the names NVIDIA's driver gives the device IDs: open-gpu-kernel-modules,
# src/nvidia/generated/g_nv_name_released.h (sChipsReleased, the version at
# commit 0447c5d7)
DRIVER_NAMES = ('NVIDIA open-gpu-kernel-modules, '
                'src/nvidia/generated/g_nv_name_released.h: device ID '
                '0x%s is "%s"')
# H200: not in that version; NVIDIA gpu-admin-tools (v2025.10.20),
# gpu/devid_names.py (0x2335, 0x233B: H200) and gpu/devid_properties.py
# (0x2335 is_sxm, 0x233B is_pcie)
ADMIN_TOOLS = ('NVIDIA gpu-admin-tools v2025.10.20, gpu/devid_names.py and '
               'devid_properties.py: device ID 0x%s is an H200, %s')
NO_BAR1 = ('BAR1 size: no NVIDIA product brief, nvidia-smi -q or lspci of it '
           'was found, so it is not known')
# "nvidia-smi -q" outputs kept in the gls GPU list tool (its simulator
# data): github.com/thamada/gls at commit e20f22d0, gls/<machine>_smi.py,
# the -q of each machine ("BAR1 Memory Usage", Total, in MiB)
GLS = ('BAR1 size: "nvidia-smi -q" in github.com/thamada/gls (commit '
       'e20f22d0), %s: %s (Device Id 0x%s10DE, board part %s, driver %s), '
       'BAR1 Memory Usage, Total %d MiB')


def _unknown_bar1(board, device, name, source=DRIVER_NAMES):
    return Bar1(board, None, ('10de:%s' % device.lower(),),
                '%s; %s' % (source % (device, name), NO_BAR1))


def _bar1(board, device, name, bar1, source=DRIVER_NAMES):
    """A board whose BAR1 size a source gave: ``bar1`` is the source's
    text and the size it gives in MiB."""
    text, mib = bar1
    return Bar1(board, mib // 1024, ('10de:%s' % device.lower(),),
                '%s; %s' % (source % (device, name), text))


def _gls(path, what, device, part, driver, mib):
    return GLS % (path, what, device, part, driver, mib), mib


BAR1 = collections.OrderedDict((b.board, b) for b in (
    _bar1('A100-PCIE-40GB', '20F1', 'NVIDIA A100-PCIE-40GB', (
        'BAR1 size: github.com/kata-containers/kata-containers pull '
        'request 4358 (comment of 2022-06-21): the guest dmesg of a '
        'passed-through 10de:20f1 (the host\'s lspci: "GA100 [A100 PCIe '
        '40GB]"), "reg 0x14: [mem 0x00000000-0xfffffffff 64bit pref]" and '
        '"BAR 1: assigned [mem 0x4000000000-0x4fffffffff 64bit pref]", '
        '65536 MiB', 65536)),
    _bar1('A100-HGX-40GB', '20B0', 'NVIDIA A100-SXM4-40GB', (
        'BAR1 size: github.com/cloud-hypervisor/cloud-hypervisor issue '
        '4375: the guest dmesg of a passed-through "[10de:20b0]", "reg '
        '0x14: [mem 0x7e000000000-0x7efffffffff 64bit]", and the VMM\'s '
        'BAR of it "size: 0x1000000000 (64 GB)", 65536 MiB', 65536)),
    _unknown_bar1('A100-PCIE-80GB', '20B5', 'NVIDIA A100 80GB PCIe'),
    _bar1('A100-HGX-80GB', '20B2', 'NVIDIA A100-SXM4-80GB', _gls(
        'gls/A100SXMx4_smi.py', 'four NVIDIA A100-SXM4-80GB', '20B2',
        '692-2G506-0212-005', '555.42.02', 131072)),
    _bar1('A30', '20B7', 'NVIDIA A30', (
        'BAR1 size: github.com/harvester/harvester issue 5619: "lspci -v" '
        'of "GA100GL [A30 PCIe] [10de:20b7]", its second region (BAR1, '
        'after the 16M BAR0) "Memory at 38a800000000 (64-bit, '
        'prefetchable) [size=32G]", 32768 MiB', 32768)),
    _unknown_bar1('H100-PCIE-80GB', '2331', 'NVIDIA H100 PCIe'),
    _bar1('H100-SXM5-80GB', '2330', 'NVIDIA H100 80GB HBM3', _gls(
        'gls/H100SXMx8_smi.py', 'eight NVIDIA H100 80GB HBM3', '2330',
        '692-2G520-0200-000', '565.57.01', 131072)),
    _bar1('H100-NVL', '2321', 'NVIDIA H100 NVL', _gls(
        'gls/H100NVLx2_smi.py', 'two NVIDIA H100 NVL', '2321',
        '900-21010-0020-000', '550.54.14', 131072)),
    _unknown_bar1('H200-NVL', '233B', 'PCIe (is_pcie)', ADMIN_TOOLS),
    # the -q of a guest (Virtualization Mode: Pass-Through)
    _bar1('H200-SXM5', '2335', 'SXM (is_sxm)', _gls(
        'gls/H200_smi.py', 'one NVIDIA H200 in a guest (Virtualization '
        'Mode Pass-Through)', '2335', '695-2G520-0280-000', '550.90.12',
        262144), ADMIN_TOOLS),
    _bar1('L40S', '26B9', 'NVIDIA L40S', _gls(
        'gls/L40S_smi.py', 'one NVIDIA L40S', '26B9', '900-2G133-0080-000',
        '550.127.05', 65536)),
    _unknown_bar1('L40', '26B5', 'NVIDIA L40'),
    _bar1('L4', '27B8', 'NVIDIA L4', _gls(
        'gls/L4_smi.py', 'one NVIDIA L4', '27B8', '900-2G193-0000-000',
        '550.90.07', 32768)),
    _bar1('A40', '2235', 'NVIDIA A40', _gls(
        'gls/A40x10_smi.py', 'ten NVIDIA A40', '2235', '900-2G133-0000-000',
        '550.127.05', 65536)),
    # A16: device ID 0x25B6 is also the A2's (the subsystem ID tells them
    # apart, which a pool's --pci-id does not give); H100 SXM5 94GB: its
    # device ID is not in the sources above
))


def bar1_for_pci_id(pci_id):
    """The Bar1 of the board with PCI ID ``vendor:product`` (its ``gib``
    None where the size is not known), or None (no catalogue board has
    that ID)."""
    key = str(pci_id or '').strip().lower()
    for bar1 in BAR1.values():
        if key in bar1.pci_ids:
            return bar1
    return None


def _key(text):
    return re.sub(r'[\s_]+', '-', str(text).strip()).upper()


def model_name(text):
    """The catalogue's name of a GPU model: case-insensitive, ``_`` or a
    space for ``-`` (``h100_80gb`` is ``H100-80GB``); a board's name gives
    its model (``H100-NVL`` is ``H100-94GB``)."""
    key = _key(text)
    if key in MODELS:
        return key
    if key in BOARDS:
        return BOARDS[key][1]
    raise UnknownName(
        _('Unknown GPU model %(model)r: give one of %(models)s (or a board: '
          'see "openstack gpu profile list --long").')
        % {'model': text, 'models': ', '.join(MODELS)})


def board_name(text):
    """The catalogue's name of a board (``h100-sxm5-80gb`` is
    ``H100-SXM5-80GB``)."""
    key = _key(text)
    if key not in BOARDS:
        raise UnknownName(
            _('Unknown board %(board)r: give one of %(boards)s.')
            % {'board': text, 'boards': ', '.join(BOARDS)})
    return key


def _profile_key(text):
    key = str(text).strip().lower()
    for prefix in ('mig ', 'mig-', 'nvidia.com/mig-'):
        if key.startswith(prefix):
            key = key[len(prefix):]
    return key


def profile_names(model=None):
    """Every MIG profile and vGPU type name (of MODEL, or of every model)."""
    names = []
    for m in ([MODELS[model]] if model else MODELS.values()):
        for name in [p.name for p in m.profiles] + [
                t.name for t in m.vgpu_types]:
            if name not in names:
                names.append(name)
    return names


def profile_name(text):
    """The catalogue's name of a MIG profile (``3g.40gb``, case-insensitive,
    ``MIG `` or ``nvidia.com/mig-`` prefix allowed) or time-sliced vGPU
    type (``A100D-10C``)."""
    key = _profile_key(text)
    for name in profile_names():
        if name.lower() == key:
            return name
    raise UnknownName(
        _('Unknown MIG profile or vGPU type %(name)r: see "openstack gpu '
          'profile list" for the names (e.g. 3g.40gb, 1g.10gb+me, '
          'A100D-10C).') % {'name': text})


def catalogue(model=None, board=None):
    """Rows of ``gpu profile list``: one per model and profile (MIG
    profiles, then time-sliced vGPU types with their board), each with the
    source it is transcribed from. BOARD: only its model's MIG profiles and
    the vGPU types of that board."""
    rows = []
    models = [MODELS[model_name(model)]] if model else list(MODELS.values())
    if board:
        board = board_name(board)
        owner = BOARDS[board][1]
        if model and models[0].name != owner:
            raise UnknownName(
                _('Board %(board)s carries a %(owner)s, not a %(model)s.')
                % {'board': board, 'owner': owner, 'model': models[0].name})
        models = [MODELS[owner]]
    for m in models:
        for p in m.profiles:
            rows.append({'model': m.name, 'profile': p.name, 'mode': MIG,
                         'board': None,
                         'compute_slices': p.compute,
                         'memory_slices': p.memory_slices,
                         'memory_gb': p.memory_gb, 'max_count': p.max_count,
                         'placements': list(p.starts), 'source': m.source})
        sources = {b.name: b.source for b in m.boards}
        for t in m.vgpu_types:
            if board and t.board != board:
                continue
            rows.append({'model': m.name, 'profile': t.name, 'mode': VGPU,
                         'board': t.board,
                         'compute_slices': None, 'memory_slices': None,
                         'memory_gb': t.memory_gb, 'max_count': t.max_count,
                         'placements': [], 'source': sources[t.board]})
    return rows


def vgpu_type(name):
    """(model name, VgpuType) of a time-sliced vGPU type (catalogue name,
    case-insensitive), or None."""
    key = str(name).strip().upper()
    for m in MODELS.values():
        for t in m.vgpu_types:
            if t.name.upper() == key:
                return m.name, t
    return None


def check_boards(card_names, demand):
    """Why DEMAND ({profile: count}, catalogue names) cannot be planned on
    the cards CARD_NAMES (models or boards, as ``--cards`` gives them), or
    None. A vGPU type is named for one board: a card given by its board
    serves that board's types only, and cards given by their model cannot
    tell which board's types they serve when the demand names types of
    two boards of that model."""
    wanted = {}
    for name in demand:
        found = vgpu_type(name)
        if found:
            wanted.setdefault(found[0], {})[name] = found[1].board
    for text in card_names:
        key = _key(text)
        model = model_name(text)
        types = wanted.get(model, {})
        if key in BOARDS:
            other = sorted(t for t, b in types.items() if b != key)
            if other:
                return _('%(types)s: vGPU types of another board than '
                         '%(board)s (see "openstack gpu profile list '
                         '--board %(board)s" for its types).') % {
                    'types': ', '.join(other), 'board': key}
        elif len(set(types.values())) > 1:
            return _('%(types)s are vGPU types of boards %(boards)s of the '
                     '%(model)s: give the cards by board (--cards '
                     '<board>=<count>, e.g. %(board)s) so that each is '
                     'planned with its own board\'s types.') % {
                'types': ', '.join(sorted(types)),
                'boards': ', '.join(sorted(set(types.values()))),
                'model': model, 'board': sorted(set(types.values()))[0]}
    return None


# -- layouts ------------------------------------------------------------------

def _profiles_by_name(model):
    return {p.name: p for p in model.profiles}


def _slices(profile, start):
    return set(range(start, start + profile.memory_slices))


def check_layout(model, layout):
    """Why LAYOUT (placements ``(profile, start)``) is not a valid layout of
    MODEL, or None when it is: valid starts only, no shared memory slice,
    counts within the table's, at most one ``+me``, compute slices within
    the card's; or one time-sliced type with start None, at most its
    maximum."""
    model = MODELS[model] if isinstance(model, str) else model
    layout = list(layout)
    if not layout:
        return None
    vgpus = {t.name: t for t in model.vgpu_types}
    if any(start is None for _name, start in layout):
        names = {name for name, _start in layout}
        if len(names) != 1 or any(s is not None for _n, s in layout):
            return _('a time-sliced card serves one vGPU type, alone')
        name = names.pop()
        if name not in vgpus:
            return _('%s is no time-sliced vGPU type of this model') % name
        if len(layout) > vgpus[name].max_count:
            return _('more than %(n)d %(type)s on one GPU') % {
                'n': vgpus[name].max_count, 'type': name}
        return None
    profiles = _profiles_by_name(model)
    used, counts, compute, media = set(), collections.Counter(), 0, 0
    for name, start in layout:
        profile = profiles.get(name)
        if profile is None:
            return _('%s is no MIG profile of this model') % name
        if start not in profile.starts:
            return _('%(p)s cannot start at slice %(s)s') % {
                'p': name, 's': start}
        slices = _slices(profile, start)
        if used & slices:
            return _('%(p)s at %(s)s overlaps another instance') % {
                'p': name, 's': start}
        used |= slices
        counts[name] += 1
        compute += profile.compute
        media += profile.media
        if counts[name] > profile.max_count:
            return _('more than %(n)d %(p)s on one GPU') % {
                'n': profile.max_count, 'p': name}
    if media > 1:
        return _('more than one +me instance on one GPU')
    if len(layout) > 1 and any(n.endswith(ALL_MEDIA) for n, _s in layout) \
            and not all(n.endswith((ALL_MEDIA, NO_MEDIA))
                        for n, _s in layout):
        return _('a +me.all instance takes every media engine: the others '
                 'on its GPU must be -me profiles')
    if compute > model.compute_slices:
        return _('more than %d compute slices') % model.compute_slices
    return None


def _placements(model):
    return [(p.name, s) for p in model.profiles for s in p.starts]


_LAYOUTS = {}


def layouts(model, maximal=False):
    """Every valid layout of MODEL (sorted tuples of placements, the empty
    one included): MIG layouts, then time-sliced ones; with MAXIMAL only
    those no placement (or vGPU) can be added to."""
    key = (model_name(model), maximal)
    if key in _LAYOUTS:
        return _LAYOUTS[key]
    m = MODELS[key[0]]
    places = _placements(m)
    found = []

    def grow(index, chosen):
        found.append(tuple(chosen))
        for i in range(index, len(places)):
            candidate = chosen + [places[i]]
            if check_layout(m, candidate) is None:
                grow(i + 1, candidate)

    grow(0, [])
    mig = [tuple(sorted(lay, key=_order)) for lay in found]
    if maximal:
        mig = [lay for lay in mig if not any(
            check_layout(m, lay + (p,)) is None for p in places
            if p not in lay)]
    vgpu = [((t.name, None),) * k for t in m.vgpu_types
            for k in ((t.max_count,) if maximal
                      else range(1, t.max_count + 1))]
    if maximal and not places:
        # no MIG: the empty layout is not a way to cut the card
        mig = [lay for lay in mig if lay]
    result = tuple(sorted(set(mig), key=_layout_order)) + tuple(vgpu)
    _LAYOUTS[key] = result
    return result


def _order(placement):
    name, start = placement
    return (-1 if start is None else start, name)


def _layout_order(layout):
    return (len(layout), [_order(p) for p in layout])


def normal(layout):
    """LAYOUT as the plan compares it: a sorted tuple of placements."""
    return tuple(sorted((tuple(p) for p in (layout or ())), key=_order))


def layout_text(layout):
    """``3g.40gb@0, 1g.10gb@4`` (MIG) or ``A100D-10C x8`` (time-sliced)."""
    layout = normal(layout)
    if not layout:
        return '-'
    if layout[0][1] is None:
        return '%s x%d' % (layout[0][0], len(layout))
    return ', '.join('%s@%d' % p for p in layout)


def free_slices(model, layout):
    """Memory slices of a MIG layout that no instance covers (0 for a
    time-sliced or empty layout)."""
    m = MODELS[model_name(model)]
    layout = normal(layout)
    if not layout or layout[0][1] is None:
        return 0
    profiles = _profiles_by_name(m)
    used = set()
    for name, start in layout:
        used |= _slices(profiles[name], start)
    return m.memory_slices - len(used)


# -- the plan -----------------------------------------------------------------

def _moves(current, in_use, layout):
    """Servers disturbed when a card goes from CURRENT to LAYOUT."""
    if layout == current:
        return 0
    kept = collections.Counter(layout)
    lost = collections.Counter(in_use) - kept
    return sum(lost.values())


def _supply(layout, wanted, caps):
    """Instances of each wanted profile LAYOUT offers, each capped at its
    demand (a card never serves more than the whole demand of a profile)."""
    counts = collections.Counter(name for name, _start in layout)
    return tuple(min(counts[p], cap)
                 for p, cap in zip(wanted, caps, strict=True))


class _Table:
    """The re-cut options of one model for one demand: the maximal layouts
    grouped by supply vector, as bit masks, with the dominance relation
    between supply vectors worked out once."""

    def __init__(self, model, wanted, caps):
        m = MODELS[model]
        bits = {p: 1 << i for i, p in enumerate(_placements(m))}
        for i, t in enumerate(m.vgpu_types):
            # a time-sliced type is one bit: its vGPUs are interchangeable
            bits[(t.name, None)] = 1 << (len(bits) + i)
        self.bits = bits
        groups = collections.OrderedDict()
        for layout in layouts(model, maximal=True):
            mask = 0
            for p in layout:
                mask |= bits[p]
            groups.setdefault(_supply(layout, wanted, caps), []).append(
                (mask, layout))
        self.supplies = list(groups)
        self.groups = list(groups.values())
        n = len(self.supplies)
        # dominated_by[i]: supply vectors >= supplies[i], other than it
        self.dominated_by = [0] * n
        for i, low in enumerate(self.supplies):
            for j, high in enumerate(self.supplies):
                if i != j and all(a >= b for a, b in zip(high, low,
                                                         strict=True)):
                    self.dominated_by[i] |= 1 << j
        self._of_use = {}
        self._below = {}

    def mask(self, in_use):
        """IN_USE as (bit mask, servers per bit): a MIG placement holds one
        server, a time-sliced type as many as its vGPUs in use."""
        mask = 0
        for p in in_use:
            mask |= self.bits[p]
        return mask, (len(in_use) if in_use and in_use[0][1] is None
                      else 1)

    def of_use(self, in_use):
        """For cards with IN_USE in use: {supply index: (moves, layout)}
        of the re-cut options no other re-cut option dominates. Memoised:
        it depends on the placements in use only."""
        found = self._of_use.get(in_use)
        if found is not None:
            return found
        used, weight = self.mask(in_use)
        best = []
        for group in self.groups:
            # the first layout of the group that disturbs fewest servers
            moves, layout = (used & ~group[0][0]).bit_count(), group[0][1]
            for mask, other in group[1:] if moves else ():
                lost = (used & ~mask).bit_count()
                if lost < moves:
                    moves, layout = lost, other
                    if not lost:
                        break
            best.append((moves * weight, layout))
        # at_most[k]: supply vectors reachable with k moves or fewer
        top = max(m for m, _layout in best)
        at_most = [0] * (top + 1)
        for i, (moves, _layout) in enumerate(best):
            at_most[moves] |= 1 << i
        for k in range(1, top + 1):
            at_most[k] |= at_most[k - 1]
        found = {i: option for i, option in enumerate(best)
                 if not self.dominated_by[i] & at_most[option[0]]}
        self._of_use[in_use] = found
        return found

    def below(self, supply):
        """Bit mask of the supply vectors <= SUPPLY (memoised)."""
        found = self._below.get(supply)
        if found is None:
            found = 0
            for i, other in enumerate(self.supplies):
                if all(a <= b for a, b in zip(other, supply, strict=True)):
                    found |= 1 << i
            self._below[supply] = found
        return found


def _check_card(index, card):
    model = model_name(card['model'])
    current = normal(card.get('current'))
    in_use = normal(card.get('in_use'))
    why = check_layout(model, current)
    if why:
        raise ValueError(_('Card %(card)s: its current layout is not '
                           'valid: %(why)s.')
                         % {'card': card.get('id', index), 'why': why})
    if collections.Counter(in_use) - collections.Counter(current):
        raise ValueError(_('Card %s: a placement in use is not in its '
                           'current layout.') % card.get('id', index))
    return model, current, in_use


def _classes(cards, wanted, caps):
    """Cards grouped into classes of interchangeable cards: {key: [card
    index]}, key (model, keep supply, ((supply, moves), ...)); and per
    card its re-cut options {supply index: (moves, layout)} and table."""
    tables, classes, per_card = {}, collections.OrderedDict(), []
    for index, card in enumerate(cards):
        model, current, in_use = _check_card(index, card)
        table = tables.get(model)
        if table is None:
            table = tables[model] = _Table(model, wanted, caps)
        keep = _supply(current, wanted, caps)
        below = table.below(keep)
        options = {i: option for i, option in table.of_use(in_use).items()
                   if not below >> i & 1}
        key = (model, keep, tuple((table.supplies[i], moves)
                                  for i, (moves, _lay) in options.items()))
        classes.setdefault(key, []).append(index)
        per_card.append((current, in_use, options))
    return classes, per_card


def _highs(highspy):
    h = highspy.Highs()
    h.setOptionValue('output_flag', False)
    h.setOptionValue('threads', 1)
    # every objective is an integer: a gap below 1 proves the optimum
    h.setOptionValue('mip_rel_gap', 0.0)
    h.setOptionValue('mip_abs_gap', 0.99)
    return h


def _run(h, highspy, costs, infeasible=False):
    """Solve H for COSTS to a proven optimum: (value, solution, HiGHS's
    model status); None when H has no solution and INFEASIBLE is true.
    No first incumbent is given: measured, a start made HiGHS slower on
    the moves, and with a start HiGHS 1.16 once returned the start
    instead of the better optimum it reported (a unit test caught it);
    the value of the solution returned is checked against HiGHS's
    objective."""
    n_col = len(costs)
    cols = list(range(n_col))
    h.changeColsCost(n_col, cols, costs)
    h.run()
    status = h.getModelStatus()
    if infeasible and status == highspy.HighsModelStatus.kInfeasible:
        return None
    if status != highspy.HighsModelStatus.kOptimal:
        raise RuntimeError(_('The solver did not prove an optimum: %s')
                           % h.modelStatusToString(status))
    solution = list(h.getSolution().col_value)
    value = sum(c * x for c, x in zip(costs, solution, strict=True) if c)
    if abs(value - h.getInfo().objective_function_value) > 0.5:
        raise RuntimeError(_('The solver returned a solution of value %(x)s '
                             'for an optimum of %(y)s.') % {
            'x': value, 'y': h.getInfo().objective_function_value})
    return round(value), solution, h.modelStatusToString(status)


def _maxima(vectors):
    """The vectors of VECTORS no other one is >= (each once, sorted)."""
    return _maxima_of(frozenset(vectors))


@functools.lru_cache(maxsize=4096)
def _maxima_of(vectors):
    # memoised: classes of a fleet share their sets of vectors
    vectors = sorted(vectors)
    return tuple(v for v in vectors if not any(
        w != v and all(a >= b for a, b in zip(w, v, strict=True))
        for w in vectors))


def _coarse(options):
    """Per class, the options that matter to the first two objectives:
    the keep vectors no other keep vector is above, and the re-cut
    vectors no other re-cut vector and no keep vector is above."""
    keeps = _maxima(s for s, cut, _m in options if not cut)
    recuts = tuple(v for v in _maxima(s for s, cut, _m in options if cut)
                   if not any(all(a >= b for a, b in zip(k, v, strict=True))
                              for k in keeps))
    return keeps, recuts


def _add_supply(index, value, supply, first):
    for k, v in enumerate(supply):
        if v:
            index.append(first + k)
            value.append(-float(v))


def _met_recut(highspy, sizes, options, caps):
    """Stages 1 and 2 (demand met, fewest re-cuts) on the coarse classes
    (module docstring): the two optimal values."""
    inf = highspy.kHighsInf
    coarse = collections.OrderedDict()
    for c, class_options in enumerate(options):
        coarse.setdefault(_coarse(class_options), []).append(c)
    h = _highs(highspy)
    n_class, n_wanted = len(coarse), len(caps)
    counts = [float(sum(sizes[c] for c in members))
              for members in coarse.values()]
    h.addRows(n_class + n_wanted, counts + [-inf] * n_wanted,
              counts + [0.0] * n_wanted, 0, [], [], [])
    columns, starts, index, value, recut = [], [], [], [], []
    for c, (keeps, recuts) in enumerate(coarse):
        for supply, cut in [(k, 0) for k in keeps] + [(r, 1) for r in recuts]:
            columns.append((c, supply, cut))
            starts.append(len(index))
            index.append(c)
            value.append(1.0)
            _add_supply(index, value, supply, n_class)
            recut.append(float(cut))
    n_x = len(columns)
    for k in range(n_wanted):
        starts.append(len(index))
        index.append(n_class + k)
        value.append(1.0)
    n_col = n_x + n_wanted
    h.addCols(n_col, [0.0] * n_col, [0.0] * n_col,
              [inf] * n_x + [float(cap) for cap in caps],
              len(index), starts, index, value)
    h.changeColsIntegrality(n_col, list(range(n_col)),
                            [highspy.HighsVarType.kInteger] * n_col)
    met, _solution, _status = _run(h, highspy,
                                   [0.0] * n_x + [-1.0] * n_wanted)
    wanted = list(range(n_x, n_col))
    h.addRow(-inf, met + 0.5, n_wanted, wanted, [-1.0] * n_wanted)
    cut, _solution, _status = _run(h, highspy, recut + [0.0] * n_wanted)
    return -met, cut


def import_highspy():
    """The HiGHS solver module (``highspy``), an optional dependency:
    ``pip install "gpuclient[profiles]"``; CommandError saying so when it
    is not installed (it pulls numpy, for ``gpu profile plan`` only)."""
    try:
        import highspy
    except ImportError as exc:
        from gpuclient import extras

        raise extras.missing(
            extras.PROFILES, 'highspy', _(
                'Planning partitions (the HiGHS solver, which brings '
                'numpy)'), exc) from None
    return highspy


def _solve(sizes, options, caps, groups=None):
    """The lexicographic optimum of the integer program of the module
    docstring. SIZES: cards per class; OPTIONS: per class, its options
    (supply, recut, moves); CAPS: demand per wanted profile. Returns the
    count of each (class, option), the three optimal values (met, recut,
    moves), HiGHS's model status of the last model solved, how the fewest
    moves were proven (``PROOF_BOUND`` or ``PROOF_SOLVER``, module
    docstring) and the LP bound on moves (None when not computed). HiGHS
    is imported here only (``import_highspy``)."""
    highspy = import_highspy()
    met, cut = _met_recut(highspy, sizes, options, caps)
    model = _Transport(sizes, options, caps, groups, met, cut)
    found = lower = None
    relaxed = model.highs(highspy, integer=False)
    relaxed.run()
    if relaxed.getModelStatus() == highspy.HighsModelStatus.kOptimal:
        found, lower = _by_bound(highspy, model, relaxed)
    if found is not None:
        proof = PROOF_BOUND
    else:
        found = _transport_run(highspy, model, None)
        if found is None:
            raise RuntimeError(_('The solver did not prove an optimum: %s')
                               % 'Infeasible')
        proof = PROOF_SOLVER
    counts, moved, status = found
    # the plan checked apart from the solver: every card once, the first
    # two optima kept, the moves as found
    if model.check(counts) != (met, cut, moved):
        raise RuntimeError(_('The solver returned a plan of values %(x)s '
                             'for the optima %(y)s.') % {
            'x': model.check(counts), 'y': (met, cut, moved)})
    return counts, (met, cut, moved), status, proof, lower


# how the fewest moves were proven (summary ``proof``)
PROOF_BOUND = 'lp-bound'
PROOF_SOLVER = 'solver'
# objective values are integers: a float within this of one is that one
_TOLERANCE = 1e-6
# LPs the dive (_dive) solves at most before it gives up
_DIVE_NODES = 150


def _by_bound(highspy, model, relaxed):
    """The fewest moves proven by the LP bound (module docstring): from
    RELAXED, MODEL's LP solved, the bound and the arcs of small reduced
    cost; then a plan of exactly the bound rounded up, searched on those
    arcs by _dive, else by HiGHS. Returns ((counts, moves, status) or
    None, the bound)."""
    # any multipliers give a valid bound: HiGHS's duals a good one
    lower, reduced = model.bound(relaxed.getSolution().row_dual)
    target = math.ceil(lower - _TOLERANCE)
    slack = target - lower + _TOLERANCE
    keep = [j for j, (key, _cost, _up, _rows) in enumerate(model.columns)
            if key[0] != 'x' or reduced[j] <= slack]
    found, complete = _dive(highspy, model, keep, target)
    if found is None and not complete:
        found = _transport_run(highspy, model, keep)
    if found is None:
        return None, lower
    values = model.check(found[0])
    if values is None or values[:2] != (model.met, model.cut):
        return None, lower
    if values[2] < target:
        raise RuntimeError(_('The plan found %(x)s moves under the '
                             'bound %(y)s.') % {'x': values[2], 'y': lower})
    return (found if values[2] == target else None), lower


def _dive(highspy, model, keep, target, limit=_DIVE_NODES):
    """A plan of at most TARGET moves on the columns KEEP of MODEL by a
    depth-first branch and bound of our own on the counts, each node an
    LP (HiGHS's dual simplex from the parent's basis), cut off when the
    LP is above TARGET: the first fractional count (keep ends first) is
    branched on, its nearer side first. Returns ((counts, moves,
    status) or None, whether the search was complete): complete and none
    means no plan of these columns has TARGET moves. At most LIMIT
    LPs."""
    h = model.highs(highspy, keep, integer=False)
    costs = [model.columns[j][1] for j in keep]
    counted = [i for i, j in enumerate(keep) if model.columns[j][0][0] != 'x']
    lower = [0.0] * len(keep)
    upper = [model.columns[j][2] for j in keep]
    solved, unsure = [0], [False]

    def node():
        if solved[0] >= limit:
            return None
        solved[0] += 1
        h.run()
        status = h.getModelStatus()
        if status != highspy.HighsModelStatus.kOptimal:
            # an LP neither solved nor infeasible: the search is not
            # complete (HiGHS on the arcs takes over)
            unsure[0] |= status != highspy.HighsModelStatus.kInfeasible
            return None
        if h.getInfo().objective_function_value > target + _TOLERANCE:
            return None
        solution = h.getSolution().col_value
        i = next((i for i in counted
                  if abs(solution[i] - round(solution[i])) > _TOLERANCE),
                 None)
        if i is None:
            return _leaf(h, model, keep, costs, counted)
        v = solution[i]
        below = (lower[i], float(math.floor(v)))
        above = (float(math.ceil(v)), upper[i])
        for low, up in ((below, above) if v - math.floor(v) < 0.5
                        else (above, below)):
            old = lower[i], upper[i]
            lower[i], upper[i] = low, up
            h.changeColBounds(i, low, up)
            found = node()
            lower[i], upper[i] = old
            h.changeColBounds(i, *old)
            if found is not None or solved[0] >= limit:
                return found
        return None

    found = node()
    return found, found is not None or (solved[0] < limit and not unsure[0])


def _leaf(h, model, keep, costs, counted):
    """The plan of an LP solution of H whose counts are integers: its
    arcs rounded; if they are not integers (a solution off a vertex), the
    counts fixed and the LP solved again (the transport part is
    integral). (counts, moves, status)."""
    solution = list(h.getSolution().col_value)
    arcs = [i for i in range(len(keep)) if model.columns[keep[i]][0][0] == 'x']
    if any(abs(solution[i] - round(solution[i])) > _TOLERANCE for i in arcs):
        fixed = [float(round(solution[i])) for i in counted]
        h.changeColsBounds(len(counted), counted, fixed, fixed)
        h.run()
        solution = list(h.getSolution().col_value)
    counts = {model.columns[keep[i]][0][1]: int(round(solution[i]))
              for i in arcs}
    moved = sum(round(costs[i]) * counts[model.columns[keep[i]][0][1]]
                for i in arcs)
    return counts, moved, h.modelStatusToString(h.getModelStatus())


class _Transport:
    """The moves model (stage 3, module docstring) in transport form,
    with the first two optima as rows: rows per class (its cards), per end
    (cards ending there, as a balance), per wanted profile (met <= offered),
    then demand met >= MET and re-cuts <= CUT. Columns: ``('x', (class,
    option))`` continuous arcs, ``('end', e)`` integer counts, ``('met',
    k)`` integer; each with its cost, upper bound and entries [(row,
    value)]. The upper bounds of arcs and counts are implied by the rows
    (an arc carries at most its class's cards, an end at most the cards
    of the classes that reach it): written out, the bound below is
    finite."""

    def __init__(self, sizes, options, caps, groups, met, cut):
        inf = float('inf')
        groups = groups or [None] * len(options)
        ends = collections.OrderedDict()
        for kept in (True, False):
            for group, class_options in zip(groups, options, strict=True):
                for supply, flag, _moves in class_options:
                    if kept != bool(flag):
                        ends.setdefault((group, bool(flag), supply),
                                        len(ends))
        n_class, n_end, n_wanted = len(options), len(ends), len(caps)
        self.sizes, self.options, self.caps = sizes, options, caps
        self.met, self.cut = met, cut
        first_end, first_supply = n_class, n_class + n_end
        row_met, row_cut = first_supply + n_wanted, first_supply + n_wanted + 1
        self.row_lo = ([float(n) for n in sizes] + [0.0] * n_end
                       + [-inf] * n_wanted + [float(met), -inf])
        self.row_up = ([float(n) for n in sizes] + [0.0] * (n_end + n_wanted)
                       + [inf, float(cut)])
        self.columns = columns = []
        reach = [0] * n_end
        for c, class_options in enumerate(options):
            for e in {ends[(groups[c], bool(flag), supply)]
                      for supply, flag, _moves in class_options}:
                reach[e] += sizes[c]
            for o, (supply, flag, moved) in enumerate(class_options):
                e = ends[(groups[c], bool(flag), supply)]
                columns.append((('x', (c, o)), float(moved), float(sizes[c]),
                                ((c, 1.0), (first_end + e, 1.0))))
        for (_group, flag, supply), e in ends.items():
            entries = [(first_end + e, -1.0)] + [
                (first_supply + k, -float(v))
                for k, v in enumerate(supply) if v]
            if flag:
                entries.append((row_cut, 1.0))
            columns.append((('end', e), 0.0, float(reach[e]),
                            tuple(entries)))
        for k, cap in enumerate(caps):
            columns.append((('met', k), 0.0, float(cap),
                            ((first_supply + k, 1.0), (row_met, 1.0))))

    def check(self, counts):
        """(met, recut, moves) of COUNTS, cards per (class, option),
        worked out from the options alone; None unless every card of
        every class is counted once."""
        per_class = [0] * len(self.sizes)
        offered = [0] * len(self.caps)
        recut = moves = 0
        for (c, o), n in counts.items():
            if not isinstance(n, int) or n < 0:
                return None
            supply, flag, moved = self.options[c][o]
            per_class[c] += n
            recut += n * bool(flag)
            moves += n * moved
            for k, v in enumerate(supply):
                offered[k] += n * v
        if per_class != list(self.sizes):
            return None
        return (sum(min(a, b) for a, b in zip(offered, self.caps,
                                              strict=True)), recut, moves)

    def highs(self, highspy, keep=None, integer=True):
        """A HiGHS model of the columns KEEP (indexes; None: all), the
        counts integer with INTEGER."""
        keep = range(len(self.columns)) if keep is None else keep
        h = _highs(highspy)
        h.addRows(len(self.row_lo), self.row_lo, self.row_up, 0, [], [], [])
        starts, index, value, cost, upper, counted = [], [], [], [], [], []
        for j in keep:
            key, moved, up, entries = self.columns[j]
            if key[0] != 'x':
                counted.append(len(cost))
            starts.append(len(index))
            for row, v in entries:
                index.append(row)
                value.append(v)
            cost.append(moved)
            upper.append(up)
        h.addCols(len(cost), cost, [0.0] * len(cost), upper, len(index),
                  starts, index, value)
        if integer:
            h.changeColsIntegrality(
                len(counted), counted,
                [highspy.HighsVarType.kInteger] * len(counted))
        return h

    def bound(self, duals):
        """A lower bound on the fewest moves from any row multipliers
        DUALS (Lagrange): the least of sum_j d_j x_j + sum_i y_i r_i over
        the columns' and rows' bounds, d_j = cost_j - sum_i y_i a_ij the
        reduced costs (returned too). A multiplier of the wrong sign for
        a row with one side open is taken as 0 (the least would be minus
        infinity)."""
        y = []
        for v, lo, up in zip(duals, self.row_lo, self.row_up, strict=True):
            if (v > 0 and lo == float('-inf')) or (
                    v < 0 and up == float('inf')):
                v = 0.0
            y.append(v)
        terms = [v * (lo if v > 0 else up)
                 for v, lo, up in zip(y, self.row_lo, self.row_up,
                                      strict=True) if v]
        reduced = []
        for _key, moved, up, entries in self.columns:
            d = moved - sum(y[row] * v for row, v in entries)
            reduced.append(d)
            if d < 0:
                terms.append(d * up)
        return math.fsum(terms), reduced


def _transport_run(highspy, model, keep):
    """The fewest moves over the columns KEEP of MODEL (None: all), to a
    proven optimum of that model: (counts of (class, option), moves,
    HiGHS's status), or None when those columns have no solution."""
    keep = list(range(len(model.columns)) if keep is None else keep)
    h = model.highs(highspy, keep)
    costs = [model.columns[j][1] for j in keep]
    found = _run(h, highspy, costs, infeasible=True)
    if found is None:
        return None
    moved, solution, status = found
    arcs = [i for i, j in enumerate(keep) if model.columns[j][0][0] == 'x']
    if any(abs(solution[i] - round(solution[i])) > _TOLERANCE
           for i in arcs):
        # not a vertex: the same optimum with the counts integer, the
        # totals fixed (the transport part is integral: no branching)
        is_arc = set(arcs)
        counted = [i for i in range(len(keep)) if i not in is_arc]
        fixed = [float(round(solution[i])) for i in counted]
        h.changeColsBounds(len(counted), counted, fixed, fixed)
        h.changeColsIntegrality(len(arcs), arcs,
                                [highspy.HighsVarType.kInteger] * len(arcs))
        moved, solution, status = _run(h, highspy, costs)
    counts = {model.columns[keep[i]][0][1]: int(round(solution[i]))
              for i in arcs}
    return counts, moved, status


def plan(cards, demand):
    """The per-card layouts that serve DEMAND best (see module docstring).

    CARDS: dicts with ``id``, ``model`` and optionally ``current`` (its
    layout now, placements ``(profile, start)``; none: not cut) and
    ``in_use`` (the placements of ``current`` that hold servers). DEMAND:
    {profile or vGPU type: instances wanted}, profile names as
    ``profile_name`` gives them; a name counts on every model that has it.

    Returns ``(rows, summary)``: one row per card (``id``, ``model``,
    ``current``, ``in_use``, ``proposed``, ``recut``, ``moves``,
    ``serves``: {profile: instances of the demand it serves}) in the order
    given, and the summary (``demand``: {profile: (wanted, offered, met)},
    ``met``, ``wanted``, ``recut``, ``moves``, ``stranded_slices``,
    ``classes``: classes of interchangeable cards, ``status``: HiGHS's
    model status of the last model solved, None when nothing was solved;
    ``proof``: how the fewest moves were proven optimal, ``'lp-bound'``
    (they equal the LP bound ``moves_bound`` rounded up) or ``'solver'``
    (HiGHS's branch and bound on the whole moves model), None when
    nothing was solved).
    """
    wanted = sorted(p for p, n in demand.items() if n > 0)
    caps = tuple(demand[p] for p in wanted)
    classes, per_card = _classes(cards, wanted, caps)
    proposed = [current for current, _in_use, _options in per_card]
    status = proof = lower = None
    if wanted and classes:
        keys = list(classes)
        options = []
        for key in keys:
            _model, keep, recuts = key
            options.append([(keep, 0, 0)] + [
                (supply, 1, moves) for supply, moves in recuts])
        counts, _values, status, proof, lower = _solve(
            [len(classes[key]) for key in keys], options, caps,
            [key[0] for key in keys])
        for c, key in enumerate(keys):
            members = iter(classes[key])
            first = next(iter(classes[key]))
            recut_index = list(per_card[first][2])
            for o in range(len(options[c])):
                for _n in range(counts.get((c, o), 0)):
                    card = next(members)
                    if o:
                        # the card's own layout of that supply and moves
                        proposed[card] = per_card[card][2][
                            recut_index[o - 1]][1]
    left = dict((p, demand[p]) for p in wanted)
    rows, moves, recut, stranded = [], 0, 0, 0
    for index, card in enumerate(cards):
        current, in_use, _options = per_card[index]
        layout = proposed[index]
        model = model_name(card['model'])
        cut = layout != current
        moved = _moves(current, in_use, layout)
        serves = collections.OrderedDict()
        for name, _start in layout:
            if left.get(name, 0) > 0:
                left[name] -= 1
                serves[name] = serves.get(name, 0) + 1
        if layout:
            stranded += free_slices(model, layout)
        moves += moved
        recut += cut
        rows.append({'id': card.get('id', str(index)), 'model': model,
                     'current': current, 'in_use': in_use,
                     'proposed': layout, 'recut': cut,
                     'moves': moved, 'serves': dict(serves)})
    offered = collections.Counter(
        name for row in rows for name, _start in row['proposed'])
    table = {p: (demand[p], offered[p], min(demand[p], offered[p]))
             for p in wanted}
    summary = {'demand': table,
               'wanted': sum(demand[p] for p in wanted),
               'met': sum(v[2] for v in table.values()),
               'recut': recut, 'moves': moves,
               'stranded_slices': stranded,
               'classes': len(classes), 'status': status,
               'proof': proof, 'moves_bound': lower}
    return rows, summary


def objective(rows, demand):
    """(met, recut, moves) of ROWS for DEMAND: what ``plan`` optimises,
    computed from the rows alone (the tests' referee)."""
    offered = collections.Counter(
        name for row in rows for name, _start in row['proposed'])
    met = sum(min(n, offered[p]) for p, n in demand.items() if n > 0)
    return (met, sum(1 for r in rows if r['recut']),
            sum(r['moves'] for r in rows))


# -- nvidia-smi scripts -------------------------------------------------------
#
# Syntax. ``-cgi`` takes a list of profile tuples, "a profile name or ID
# and an optional placement specifier, which consists of a colon and a
# placement start index" (``-cgi 3g.40gb:4``): the wording of nvidia-smi's
# ``mig --help``, as quoted by tools that wrap it; NVML's
# nvmlDeviceCreateGpuInstanceWithPlacement is the call behind it. ``-C``
# adds each GPU instance's default compute instance. ``-dci -gi <id>``
# destroys the compute instances of GPU instance <id>, ``-dgi -gi <id>``
# the GPU instance, as NVIDIA's MIG user guide does ("Destroying GPU
# Instances"). ``-lgi`` lists GPU instances with the columns GPU, Name
# ("MIG 3g.40gb"), Profile ID, Instance ID and Placement Start:Size (as
# the driver prints it in NVIDIA/DCGM issue 138). Not yet run against a
# real GPU. Names are used, not profile IDs: the names are the
# catalogue's, the IDs differ between models.

def _is_mig(layout):
    return bool(layout) and layout[0][1] is not None


def recut_steps(current, proposed):
    """(kept, destroyed, created) placements when a card goes from CURRENT
    to PROPOSED: a GPU instance at the same profile and start slot is kept
    (a MIG placement occurs once in a layout); every other one of CURRENT
    is destroyed, every other one of PROPOSED created. A time-sliced
    layout keeps nothing of a MIG one, nor the other way round."""
    current, proposed = normal(current), normal(proposed)
    if not (_is_mig(current) and _is_mig(proposed)):
        return (), tuple(p for p in current if p[1] is not None), tuple(
            p for p in proposed if p[1] is not None)
    kept = tuple(p for p in current if p in proposed)
    return (kept, tuple(p for p in current if p not in kept),
            tuple(p for p in proposed if p not in kept))


def groups(rows):
    """Re-cut cards grouped for one script each: [(model, current,
    proposed, [(card id, in-use placements)])], cards that keep their
    layout left out."""
    found = collections.OrderedDict()
    for row in rows:
        if not row['recut']:
            continue
        key = (row['model'], normal(row.get('current')), row['proposed'])
        found.setdefault(key, []).append(
            (row['id'], normal(row.get('in_use'))))
    return [key + (cards,) for key, cards in found.items()]


_GI_AT = '''\
gi_at() {  # ID of the GPU instance of profile $1 starting at slice $2
    nvidia-smi mig -i "$GPU" -lgi | awk -v name="$1" -v start="$2" \\
        '$3 == "MIG" && $4 == name && $7 ~ ("^" start ":") { print $6 }'
}
present() {
    if [ -z "$(gi_at "$1" "$2")" ]; then
        echo "gpuclient: GPU $GPU has no $1 at slice $2: it is not in the" \\
             "layout this script was planned for; nothing changed" >&2
        exit 1
    fi
}
destroy() {  # its compute instances, then the GPU instance
    gi="$(gi_at "$1" "$2")"
    nvidia-smi mig -i "$GPU" -dci -gi "$gi" || true  # none to destroy
    nvidia-smi mig -i "$GPU" -dgi -gi "$gi"
}'''


def script(model, current, proposed, cards):
    """A POSIX shell script that re-cuts one GPU (``GPU=<index>`` in the
    environment, default 0) from CURRENT to PROPOSED, for CARDS ([(card
    id, in-use placements)]): it first checks that the GPU holds every
    instance of CURRENT (else it stops, changing nothing), then destroys
    only the GPU instances PROPOSED does not keep (compute instances
    first), then creates the new ones each at its planned start slot
    (largest first) with its default compute instance. The kept ones are
    never touched. For a time-sliced PROPOSED, MIG goes off (Nova creates
    the vGPUs through mdev)."""
    m = MODELS[model_name(model)]
    current, proposed = normal(current), normal(proposed)
    kept, destroyed, created = recut_steps(current, proposed)
    in_use = collections.defaultdict(list)
    for card, used in cards:
        for p in used:
            in_use[p].append(card)
    lines = ['#!/bin/sh',
             '# gpuclient: %s from %s to %s' % (
                 m.name, layout_text(current), layout_text(proposed)),
             '# cards: %s' % ', '.join(
                 card + (' (in use: %s)' % layout_text(used) if used else '')
                 for card, used in cards),
             '# run on the host of each card: GPU=<index> sh <this file>',
             'set -e',
             'GPU="${GPU:-0}"']
    if _is_mig(current):
        lines.append(_GI_AT)
        lines.append('# the GPU holds the layout planned from')
        lines += ['present %s %d' % p for p in current]
    if kept:
        lines.append('# kept, untouched: %s' % layout_text(kept))
    for name, start in destroyed:
        servers = in_use.get((name, start))
        if servers:
            lines.append('# %s@%d is in use on %s: move its server first'
                         % (name, start, ', '.join(servers)))
        lines.append('destroy %s %d' % (name, start))
    if proposed and not _is_mig(proposed):
        if m.profiles and (not current or _is_mig(current)):
            lines.append('nvidia-smi -i "$GPU" -mig 0')
        lines.append('# time-sliced: Nova creates the %d %s mdevs '
                     '([devices] enabled_mdev_types)'
                     % (len(proposed), proposed[0][0]))
        return '\n'.join(lines) + '\n'
    if current and not _is_mig(current):
        lines.append('# its %d %s vGPUs (mdevs) are removed first'
                     % (len(current), current[0][0]))
    if not _is_mig(current):
        lines.append('nvidia-smi -i "$GPU" -mig 1')
    profiles = _profiles_by_name(m)
    for name, start in sorted(created, key=lambda p: (
            -profiles[p[0]].memory_slices, p[1])):
        lines.append('nvidia-smi mig -i "$GPU" -cgi %s:%d -C' % (name, start))
    lines.append('nvidia-smi mig -i "$GPU" -lgi')
    return '\n'.join(lines) + '\n'


def script_name(model, proposed, current=()):
    """File name of the script of one group: model, proposed layout and,
    for a card cut already, the layout it comes from; safe characters."""
    text = '%s_%s' % (model, layout_text(proposed))
    if current:
        text += '_from_%s' % layout_text(current)
    return re.sub(r'[^A-Za-z0-9.+-]+', '_', text).strip('_') + '.sh'
