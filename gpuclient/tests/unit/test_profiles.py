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

"""rules.profiles: the catalogue against NVIDIA's tables, the layouts
against an independent enumeration, the plan against brute force."""

import collections
import itertools
import math
import os
import random
import subprocess
import sys

import fixtures
import testtools

from gpuclient.rules import catalogue
from gpuclient.rules.profiles import layouts
from gpuclient.rules.profiles import scripts
from gpuclient.rules.profiles import solver

# NVIDIA MIG user guide, "Supported MIG Profiles" (A100 80GB names) and
# ``nvidia-smi mig -lgipp``: name, compute slices, memory slices, instances
# per GPU, start slots. Written out here, not derived from the module.
A100_80GB = (
    ('1g.10gb', 1, 1, 7, (0, 1, 2, 3, 4, 5, 6)),
    ('1g.10gb+me', 1, 1, 1, (0, 1, 2, 3, 4, 5, 6)),
    ('1g.20gb', 1, 2, 4, (0, 2, 4, 6)),
    ('2g.20gb', 2, 2, 3, (0, 2, 4)),
    ('3g.40gb', 3, 4, 2, (0, 4)),
    ('4g.40gb', 4, 4, 1, (0,)),
    ('7g.80gb', 7, 8, 1, (0,)),
)
A30_24GB = (
    ('1g.6gb', 1, 1, 4, (0, 1, 2, 3)),
    ('1g.6gb+me', 1, 1, 1, (0, 1, 2, 3)),
    ('2g.12gb', 2, 2, 2, (0, 2)),
    ('2g.12gb+me', 2, 2, 1, (0, 2)),
    ('4g.24gb', 4, 4, 1, (0,)),
)
# NVIDIA mig-parted, deployments/systemd/config-default.yaml (commit
# bd7160f4): the profiles of each GPU its comments and device filters name,
# with the instances per GPU of its all-<profile> configurations.
MIG_PARTED = {
    'H100-94GB': (('1g.12gb', 7), ('1g.12gb+me', 1), ('1g.24gb', 4),
                  ('2g.24gb', 3), ('3g.47gb', 2), ('4g.47gb', 1),
                  ('7g.94gb', 1)),
    'H200-141GB': (('1g.18gb', 7), ('1g.18gb+me', 1), ('1g.35gb', 4),
                   ('2g.35gb', 3), ('3g.71gb', 2), ('4g.71gb', 1),
                   ('7g.141gb', 1)),
    'GH200-96GB': (('1g.12gb', 7), ('1g.12gb+me', 1), ('1g.24gb', 4),
                   ('2g.24gb', 3), ('3g.48gb', 2), ('4g.48gb', 1),
                   ('7g.96gb', 1)),
    'GH200-144GB': (('1g.18gb', 7), ('1g.18gb+me', 1), ('1g.36gb', 4),
                    ('2g.36gb', 3), ('3g.72gb', 2), ('4g.72gb', 1),
                    ('7g.144gb', 1)),
    'B200-180GB': (('1g.23gb', 7), ('1g.23gb+me', 1), ('1g.45gb', 4),
                   ('2g.45gb', 3), ('3g.90gb', 2), ('4g.90gb', 1),
                   ('7g.180gb', 1)),
    'GB200-186GB': (('1g.23gb', 7), ('1g.23gb+me', 1), ('1g.47gb', 4),
                    ('2g.47gb', 3), ('3g.93gb', 2), ('4g.93gb', 1),
                    ('7g.186gb', 1)),
    'B300-288GB': (('1g.34gb', 7), ('1g.34gb+me', 1), ('1g.67gb', 4),
                   ('2g.67gb', 3), ('3g.135gb', 2), ('4g.135gb', 1),
                   ('7g.269gb', 1)),
    'GB300-288GB': (('1g.35gb', 7), ('1g.35gb+me', 1), ('1g.70gb', 4),
                    ('2g.70gb', 3), ('3g.139gb', 2), ('4g.139gb', 1),
                    ('7g.278gb', 1)),
    'RTX-PRO-6000-96GB': (('1g.24gb', 4), ('1g.24gb+gfx', 4),
                          ('1g.24gb-me', 4), ('1g.24gb+me.all', 1),
                          ('2g.48gb', 2), ('2g.48gb+gfx', 2),
                          ('2g.48gb-me', 2), ('2g.48gb+me.all', 1),
                          ('4g.96gb', 1), ('4g.96gb+gfx', 1)),
}
# mig-parted's all-balanced configuration of each GPU: a layout each must
# hold at once.
BALANCED = {
    'A30-24GB': {'1g.6gb': 2, '2g.12gb': 1},
    'A100-40GB': {'1g.5gb': 2, '2g.10gb': 1, '3g.20gb': 1},
    'A100-80GB': {'1g.10gb': 2, '2g.20gb': 1, '3g.40gb': 1},
    'H100-80GB': {'1g.10gb': 2, '2g.20gb': 1, '3g.40gb': 1},
    'H100-94GB': {'1g.12gb': 2, '2g.24gb': 1, '3g.47gb': 1},
    'GH200-96GB': {'1g.12gb': 2, '2g.24gb': 1, '3g.48gb': 1},
    'H200-141GB': {'1g.18gb': 2, '2g.35gb': 1, '3g.71gb': 1},
    'GH200-144GB': {'1g.18gb': 2, '2g.36gb': 1, '3g.72gb': 1},
    'B200-180GB': {'1g.23gb': 2, '2g.45gb': 1, '3g.90gb': 1},
    'GB200-186GB': {'1g.23gb': 2, '2g.47gb': 1, '3g.93gb': 1},
    'B300-288GB': {'1g.34gb': 2, '2g.67gb': 1, '3g.135gb': 1},
    'GB300-288GB': {'1g.35gb': 2, '2g.70gb': 1, '3g.139gb': 1},
    'RTX-PRO-6000-96GB': {'1g.24gb': 2, '2g.48gb': 1},
}
# The start slots of the 4-slice RTX PRO 6000 profiles: the A30's pattern.
RTX_PRO_SLOTS = {'1g': (0, 1, 2, 3), '2g': (0, 2), '4g': (0,)}

# MIG-backed vGPU tables: (profile, compute slices, vGPUs per GPU), from
# NVIDIA AI Enterprise "NVIDIA vGPU (C-Series)" (A100, A30) and NVIDIA vGPU
# Types Reference release 7, "Hopper Architecture vGPU Types" (H100, H200).
MIG_BACKED = {
    # C-Series Tables 71 (PCIe) and 73 (HGX)
    'A100-40GB': (('7g.40gb', 7, 1), ('4g.20gb', 4, 1), ('3g.20gb', 3, 2),
                  ('2g.10gb', 2, 3), ('1g.10gb', 1, 4), ('1g.5gb', 1, 7),
                  ('1g.5gb+me', 1, 1)),
    # Tables 63 and 69
    'A100-80GB': (('7g.80gb', 7, 1), ('4g.40gb', 4, 1), ('3g.40gb', 3, 2),
                  ('2g.20gb', 2, 3), ('1g.20gb', 1, 4), ('1g.10gb', 1, 7),
                  ('1g.10gb+me', 1, 1)),
    # Table 75
    'A30-24GB': (('4g.24gb', 4, 1), ('2g.12gb', 2, 2), ('2g.12gb+me', 2, 1),
                 ('1g.6gb', 1, 4), ('1g.6gb+me', 1, 1)),
    # Hopper Tables 178 (PCIe) and 180 (SXM5)
    'H100-80GB': (('7g.80gb', 7, 1), ('4g.40gb', 4, 1), ('3g.40gb', 3, 2),
                  ('2g.20gb', 2, 3), ('1g.20gb', 1, 4), ('1g.10gb', 1, 7),
                  ('1g.10gb+me', 1, 1)),
    # Tables 174 (NVL) and 176 (SXM5 94GB)
    'H100-94GB': (('7g.94gb', 7, 1), ('4g.47gb', 4, 1), ('3g.47gb', 3, 2),
                  ('2g.24gb', 2, 3), ('1g.24gb', 1, 4), ('1g.12gb', 1, 7),
                  ('1g.12gb+me', 1, 1)),
    # Tables 170 (NVL) and 172 (SXM5)
    'H200-141GB': (('7g.141gb', 7, 1), ('4g.71gb', 4, 1), ('3g.71gb', 3, 2),
                   ('2g.35gb', 2, 3), ('1g.35gb', 1, 4), ('1g.18gb', 1, 7),
                   ('1g.18gb+me', 1, 1)),
}

# Time-sliced C-series types per board: (type, frame buffer GB, vGPUs per
# GPU in equal-size mode), transcribed from NVIDIA AI Enterprise "NVIDIA
# vGPU (C-Series)", Virtual GPU Types for Supported GPUs (frame buffer in
# MB there, / 1024 here), and NVIDIA vGPU Types Reference release 7,
# "Hopper Architecture vGPU Types" (frame buffer in GB).
VGPU_TABLES = {
    # C-Series Table 72
    'A100-PCIE-40GB': (('A100-40C', 40, 1), ('A100-20C', 20, 2),
                       ('A100-10C', 10, 4), ('A100-8C', 8, 5),
                       ('A100-5C', 5, 8), ('A100-4C', 4, 10)),
    # Table 74
    'A100-HGX-40GB': (('A100X-40C', 40, 1), ('A100X-20C', 20, 2),
                      ('A100X-10C', 10, 4), ('A100X-8C', 8, 5),
                      ('A100X-5C', 5, 8), ('A100X-4C', 4, 10)),
    # Table 64
    'A100-PCIE-80GB': (('A100D-80C', 80, 1), ('A100D-40C', 40, 2),
                       ('A100D-20C', 20, 4), ('A100D-16C', 16, 5),
                       ('A100D-10C', 10, 8), ('A100D-8C', 8, 10),
                       ('A100D-4C', 4, 20)),
    # Table 70
    'A100-HGX-80GB': (('A100DX-80C', 80, 1), ('A100DX-40C', 40, 2),
                      ('A100DX-20C', 20, 4), ('A100DX-16C', 16, 5),
                      ('A100DX-10C', 10, 8), ('A100DX-8C', 8, 10),
                      ('A100DX-4C', 4, 20)),
    # Table 76
    'A30': (('A30-24C', 24, 1), ('A30-12C', 12, 2), ('A30-8C', 8, 3),
            ('A30-6C', 6, 4), ('A30-4C', 4, 6)),
    # Hopper Table 179 (printed "H100-80" there; H100-80C in the C-Series
    # guide's peer-to-peer table)
    'H100-PCIE-80GB': (('H100-80C', 81, 1), ('H100-40C', 40, 2),
                       ('H100-20C', 20, 4), ('H100-16C', 16, 6),
                       ('H100-10C', 10, 8), ('H100-8C', 8, 10),
                       ('H100-5C', 5, 16), ('H100-4C', 4, 20)),
    # Hopper Table 181
    'H100-SXM5-80GB': (('H100XM-80C', 81, 1), ('H100XM-40C', 40, 2),
                       ('H100XM-20C', 20, 4), ('H100XM-16C', 16, 6),
                       ('H100XM-10C', 10, 8), ('H100XM-8C', 8, 10),
                       ('H100XM-5C', 5, 16), ('H100XM-4C', 4, 20)),
    # Hopper Table 175
    'H100-NVL': (('H100L-94C', 96, 1), ('H100L-47C', 48, 2),
                 ('H100L-23C', 23, 4), ('H100L-15C', 15, 6),
                 ('H100L-11C', 11, 8), ('H100L-6C', 6, 15),
                 ('H100L-4C', 4, 23)),
    # Hopper Table 177
    'H100-SXM5-94GB': (('H100XL-94C', 96, 1), ('H100XL-47C', 48, 2),
                       ('H100XL-23C', 23, 4), ('H100XL-15C', 15, 6),
                       ('H100XL-11C', 11, 8), ('H100XL-6C', 6, 15),
                       ('H100XL-4C', 4, 23)),
    # Hopper Table 171
    'H200-NVL': (('H200-141C', 144, 1), ('H200-70C', 71, 2),
                 ('H200-35C', 35, 4), ('H200-28C', 28, 5),
                 ('H200-17C', 17, 8), ('H200-14C', 14, 10),
                 ('H200-8C', 8, 16), ('H200-7C', 7, 20), ('H200-4C', 4, 32)),
    # Hopper Table 173
    'H200-SXM5': (('H200X-141C', 144, 1), ('H200X-70C', 71, 2),
                  ('H200X-35C', 35, 4), ('H200X-28C', 28, 5),
                  ('H200X-17C', 17, 8), ('H200X-14C', 14, 10),
                  ('H200X-8C', 8, 16), ('H200X-7C', 7, 20),
                  ('H200X-4C', 4, 32)),
    # C-Series Table 39
    'L40S': (('L40S-48C', 48, 1), ('L40S-24C', 24, 2), ('L40S-16C', 16, 3),
             ('L40S-12C', 12, 4), ('L40S-8C', 8, 6), ('L40S-6C', 6, 8),
             ('L40S-4C', 4, 12)),
    # Table 38
    'L40': (('L40-48C', 48, 1), ('L40-24C', 24, 2), ('L40-16C', 16, 3),
            ('L40-12C', 12, 4), ('L40-8C', 8, 6), ('L40-6C', 6, 8),
            ('L40-4C', 4, 12)),
    # Table 42
    'L4': (('L4-24C', 24, 1), ('L4-12C', 12, 2), ('L4-8C', 8, 3),
           ('L4-6C', 6, 4), ('L4-4C', 4, 6)),
    # Table 47
    'A40': (('A40-48C', 48, 1), ('A40-24C', 24, 2), ('A40-16C', 16, 3),
            ('A40-12C', 12, 4), ('A40-8C', 8, 6), ('A40-6C', 6, 8),
            ('A40-4C', 4, 12)),
    # Table 48 (4 physical GPUs per board; per GPU here)
    'A16': (('A16-16C', 16, 1), ('A16-8C', 8, 2), ('A16-4C', 4, 4)),
}
NAMES = {
    'A100-40GB': ['1g.5gb', '1g.5gb+me', '1g.10gb', '2g.10gb', '3g.20gb',
                  '4g.20gb', '7g.40gb'],
    'H100-94GB': ['1g.12gb', '1g.12gb+me', '1g.24gb', '2g.24gb', '3g.47gb',
                  '4g.47gb', '7g.94gb'],
    'H200-141GB': ['1g.18gb', '1g.18gb+me', '1g.35gb', '2g.35gb',
                   '3g.71gb', '4g.71gb', '7g.141gb'],
    'B200-180GB': ['1g.23gb', '1g.23gb+me', '1g.45gb', '2g.45gb',
                   '3g.90gb', '4g.90gb', '7g.180gb'],
}


def rows_of(model):
    return [(r['profile'], r['compute_slices'], r['memory_slices'],
             r['max_count'], tuple(r['placements']))
            for r in catalogue.rows(model) if r['mode'] == 'mig']


def brute_layouts(table, slices, compute_total):
    """Every valid MIG layout from TABLE, by include/exclude over every
    placement, with slices as bit masks (independent of the module)."""
    places = [(name, start, c, m, count, name.endswith('+me'))
              for name, c, m, count, starts in table for start in starts]
    found = []

    def walk(i, mask, chosen):
        if i == len(places):
            counts = collections.Counter(p[0] for p in chosen)
            limit = {t[0]: t[3] for t in table}
            if all(counts[n] <= limit[n] for n in counts) and sum(
                    p[5] for p in chosen) <= 1 and sum(
                    p[2] for p in chosen) <= compute_total:
                found.append(frozenset((p[0], p[1]) for p in chosen))
            return
        walk(i + 1, mask, chosen)
        name, start, c, m, count, me = places[i]
        bits = ((1 << m) - 1) << start
        if start + m <= slices and not mask & bits:
            walk(i + 1, mask | bits, chosen + [places[i]])

    walk(0, 0, [])
    return found


def maximal(found):
    return [lay for lay in found
            if not any(lay < other for other in found)]


class TestCatalogue(testtools.TestCase):

    def test_a100_80gb_matches_nvidia(self):
        self.assertEqual(list(A100_80GB), rows_of('A100-80GB'))

    def test_a30_matches_nvidia(self):
        self.assertEqual(list(A30_24GB), rows_of('a30-24gb'))

    def test_h100_80gb_shares_the_a100_80gb_names(self):
        self.assertEqual(rows_of('A100-80GB'), rows_of('H100-80GB'))

    def test_names_of_other_models(self):
        for model, names in NAMES.items():
            self.assertEqual(names, [r[0] for r in rows_of(model)], model)
            # same geometry as every 8-slice GPU
            self.assertEqual([r[1:] for r in A100_80GB],
                             [r[1:] for r in rows_of(model)], model)

    def test_max_count_is_what_the_starts_allow(self):
        # the table's count is the number of (disjoint) start slots, but
        # one for a +me profile
        for model in catalogue.MODELS.values():
            for p in model.profiles:
                expect = 1 if p.media else len(p.starts)
                self.assertEqual(expect, p.max_count, (model.name, p.name))

    def test_time_sliced_types(self):
        vgpu = {r['profile']: r['max_count']
                for r in catalogue.rows('A100-80GB',
                                            board='a100-pcie-80gb')
                if r['mode'] == 'vgpu'}
        self.assertEqual({'A100D-80C': 1, 'A100D-40C': 2, 'A100D-20C': 4,
                          'A100D-16C': 5, 'A100D-10C': 8, 'A100D-8C': 10,
                          'A100D-4C': 20}, vgpu)
        self.assertEqual([], [r for r in catalogue.rows('B200-180GB')
                              if r['mode'] == 'vgpu'])

    def test_mig_parted_profiles_and_counts(self):
        for model, table in MIG_PARTED.items():
            self.assertEqual(
                list(table), [(r['profile'], r['max_count'])
                              for r in catalogue.rows(model)
                              if r['mode'] == 'mig'], model)

    def test_mig_backed_vgpu_tables(self):
        for model, table in MIG_BACKED.items():
            rows = {r['profile']: (r['compute_slices'], r['max_count'])
                    for r in catalogue.rows(model) if r['mode'] == 'mig'}
            self.assertEqual(sorted(rows), sorted(t[0] for t in table), model)
            for name, compute, count in table:
                self.assertEqual((compute, count), rows[name],
                                 (model, name))

    def test_mig_parted_balanced_layouts_fit(self):
        for model, counts in BALANCED.items():
            wanted = collections.Counter(counts)
            self.assertTrue(any(
                collections.Counter(n for n, _s in lay) == wanted
                for lay in layouts.layouts(model)), model)

    def test_rtx_pro_6000_four_slices(self):
        rows = [r for r in catalogue.rows('rtx pro 6000 96gb')
                if r['mode'] == 'mig']
        for r in rows:
            shape = r['profile'].split('.')[0]
            self.assertEqual(RTX_PRO_SLOTS[shape], tuple(r['placements']),
                             r['profile'])
            self.assertEqual(int(shape[0]), r['memory_slices'])
            self.assertEqual(int(shape[0]), r['compute_slices'])
        model = catalogue.MODELS['RTX-PRO-6000-96GB']
        self.assertEqual((4, 4), (model.compute_slices, model.memory_slices))

    def test_me_all_takes_every_media_engine(self):
        m = 'RTX-PRO-6000-96GB'
        self.assertIsNone(layouts.check_layout(
            m, [('2g.48gb+me.all', 0), ('1g.24gb-me', 2),
                ('1g.24gb-me', 3)]))
        for layout in ([('2g.48gb+me.all', 0), ('2g.48gb', 2)],
                       [('1g.24gb+me.all', 0), ('1g.24gb+gfx', 1)],
                       [('1g.24gb+me.all', 0), ('1g.24gb+me.all', 1)],
                       [('2g.48gb', 1)]):
            self.assertIsNotNone(layouts.check_layout(m, layout), layout)
        self.assertIsNone(layouts.check_layout(
            m, [('1g.24gb+gfx', s) for s in range(4)]))

    def test_vgpu_types_per_board_match_nvidia(self):
        found = collections.defaultdict(list)
        for r in catalogue.rows():
            if r['mode'] == 'vgpu':
                found[r['board']].append(
                    (r['profile'], r['memory_gb'], r['max_count']))
        self.assertEqual({b: list(t) for b, t in VGPU_TABLES.items()},
                         dict(found))

    def test_every_model_and_board_has_a_source(self):
        for m in catalogue.MODELS.values():
            self.assertEqual(bool(m.profiles), bool(m.source), m.name)
            self.assertTrue(m.profiles or m.vgpu_types, m.name)
            for b in m.boards:
                self.assertIn('Table', b.source, b.name)
        for r in catalogue.rows():
            self.assertTrue(r['source'], r)

    def test_board_filter(self):
        rows = catalogue.rows(board='h100_sxm5_80gb')
        self.assertEqual({'H100-80GB'}, {r['model'] for r in rows})
        self.assertEqual({'H100-SXM5-80GB'}, {r['board'] for r in rows
                                              if r['mode'] == 'vgpu'})
        self.assertIn('H100XM-80C', [r['profile'] for r in rows])
        self.assertNotIn('H100-80C', [r['profile'] for r in rows])
        self.assertIn('3g.40gb', [r['profile'] for r in rows])
        self.assertEqual(
            rows, catalogue.rows('H100-80GB', board='H100-SXM5-80GB'))
        self.assertRaises(catalogue.UnknownName, catalogue.rows,
                          'A100-80GB', 'H100-SXM5-80GB')
        self.assertRaises(catalogue.UnknownName, catalogue.rows,
                          board='H100-SXM6')
        # a board names its model
        self.assertEqual('H100-94GB', catalogue.model_name('h100 nvl'))
        self.assertEqual('H200-141GB', catalogue.model_name('H200-NVL'))
        self.assertEqual(('H100-80GB', 'H100-SXM5-80GB'),
                         (lambda f: (f[0], f[1].board))(
                             catalogue.vgpu_type('h100xm-20c')))
        self.assertIsNone(catalogue.vgpu_type('H100XM-3C'))

    def test_cards_by_board_take_their_board_types(self):
        check = catalogue.check_boards
        self.assertIsNone(check(['H100-SXM5-80GB'], {'H100XM-20C': 4,
                                                     '3g.40gb': 1}))
        self.assertIsNone(check(['h100-80gb'], {'H100XM-20C': 4}))
        why = check(['H100-PCIE-80GB'], {'H100XM-20C': 4})
        self.assertIn('H100XM-20C', why)
        why = check(['H100-80GB'], {'H100XM-20C': 4, 'H100-20C': 2})
        self.assertIn('--cards <board>=<count>', why)
        # types of another model do not matter
        self.assertIsNone(check(['H100-PCIE-80GB', 'A100-HGX-80GB'],
                                {'H100-20C': 1, 'A100DX-20C': 1}))

    def test_time_sliced_only_cards(self):
        self.assertEqual(
            [((('L4-4C', None),) * 6)],
            [lay for lay in layouts.layouts('L4-24GB', True)
             if lay and lay[0][0] == 'L4-4C'])
        self.assertNotIn((), layouts.layouts('L40S-48GB', True))
        self.assertEqual(7, len(layouts.layouts('L40S-48GB', True)))
        rows, _summary = solver.plan(
            [{'id': 'g0', 'model': 'L40S-48GB'}], {'L40S-8C': 5})
        self.assertEqual((('L40S-8C', None),) * 6, rows[0]['proposed'])
        text = scripts.script('L40S-48GB', (), rows[0]['proposed'],
                               [('g0', ())])
        self.assertNotIn('-mig', text)

    def test_names_normalised(self):
        self.assertEqual('H100-80GB', catalogue.model_name(' h100_80gb '))
        self.assertEqual('A30-24GB', catalogue.model_name('a30 24gb'))
        self.assertEqual('3g.40gb', catalogue.profile_name('MIG 3G.40GB'))
        self.assertEqual('1g.10gb+me',
                         catalogue.profile_name('nvidia.com/mig-1g.10gb+me'))
        self.assertEqual('A100D-10C', catalogue.profile_name('a100d-10c'))
        self.assertRaises(catalogue.UnknownName, catalogue.model_name, 'V100')
        self.assertRaises(catalogue.UnknownName, catalogue.profile_name,
                          '5g.50gb')


class TestCatalogueFiles(testtools.TestCase):
    """models.yaml and bar1.yaml: read when first asked for, into the
    types the code compares with."""

    def test_read_when_first_asked_for(self):
        code = ('from gpuclient.rules import catalogue\n'
                'from gpuclient.rules.profiles import cloud, demand, '
                'layouts, scripts, solver, vf\n'
                'print(catalogue.tables.cache_info().currsize)\n'
                'catalogue.BAR1\n'
                'print(catalogue.tables.cache_info().currsize)\n')
        result = subprocess.run(
            [sys.executable, '-c', code], capture_output=True, text=True,
            check=True, cwd=os.path.join(os.path.dirname(__file__), '..',
                                         '..', '..'))
        self.assertEqual(['0', '1'], result.stdout.split())

    def test_types(self):
        for m in catalogue.MODELS.values():
            self.assertEqual((str, int, int, tuple, tuple, tuple),
                             tuple(type(v) for v in m[:-1]), m.name)
            self.assertIn(type(m.source), (str, type(None)))
            for p in m.profiles:
                self.assertEqual((str, int, int, int, int, tuple, bool),
                                 tuple(type(v) for v in p), p)
                self.assertEqual({int}, {type(s) for s in p.starts}, p)
            for t in m.vgpu_types:
                self.assertEqual((str, int, int, str),
                                 tuple(type(v) for v in t), t)
            for b in m.boards:
                self.assertEqual((str, str, int, str),
                                 tuple(type(v) for v in b), b)
        for b in catalogue.BAR1.values():
            self.assertEqual((str, tuple, str),
                             (type(b.board), type(b.pci_ids), type(b.source)))
            self.assertIn(type(b.gib), (int, type(None)))
        for table in (catalogue.MODELS, catalogue.BOARDS, catalogue.BAR1):
            self.assertIs(collections.OrderedDict, type(table))


class TestLayouts(testtools.TestCase):

    def mig(self, model, is_maximal=False):
        return {frozenset(lay) for lay in layouts.layouts(model, is_maximal)
                if not lay or lay[0][1] is not None}

    def test_a100_80gb_every_layout_counted(self):
        found = brute_layouts(A100_80GB, 8, 7)
        self.assertEqual(2319, len(found))
        self.assertEqual(set(found), self.mig('A100-80GB'))
        top = maximal(found)
        self.assertEqual(239, len(top))
        self.assertEqual(set(top), self.mig('A100-80GB', True))

    def test_a100_40gb_five_classic_profiles(self):
        # 1g.5gb, 2g.10gb, 3g.20gb, 4g.20gb, 7g.40gb: the user guide's
        # combination diagram; 4g+3g (allowed from driver R510) is one.
        table = [r for r in rows_of('A100-40GB')
                 if r[0] not in ('1g.5gb+me', '1g.10gb')]
        top = maximal(brute_layouts(table, 8, 7))
        self.assertEqual(19, len(top))
        self.assertIn(frozenset({('4g.20gb', 0), ('3g.20gb', 4)}), top)

    def test_a30(self):
        found = brute_layouts(A30_24GB, 4, 4)
        self.assertEqual(set(found), self.mig('A30-24GB'))
        self.assertEqual(set(maximal(found)), self.mig('A30-24GB', True))

    def test_rtx_pro_6000_every_layout_counted(self):
        model = 'RTX-PRO-6000-96GB'
        table = [(name, int(name[0]), int(name[0]), count,
                  RTX_PRO_SLOTS[name.split('.')[0]])
                 for name, count in MIG_PARTED[model]]
        found = [lay for lay in brute_layouts(table, 4, 4)
                 if independent_valid(model, sorted(lay))]
        self.assertEqual(set(found), self.mig(model))
        self.assertEqual(set(maximal(found)), self.mig(model, True))

    def test_time_sliced_layouts(self):
        lays = [lay for lay in layouts.layouts('A30-24GB')
                if lay and lay[0][1] is None]
        self.assertEqual(1 + 2 + 3 + 4 + 6, len(lays))
        top = [lay for lay in layouts.layouts('A30-24GB', True)
               if lay and lay[0][1] is None]
        self.assertEqual([1, 2, 3, 4, 6], sorted(len(lay) for lay in top))

    def test_invalid_layouts_said_why(self):
        m = 'A100-80GB'
        self.assertIsNone(layouts.check_layout(m, [('3g.40gb', 4)]))
        for layout in ([('3g.40gb', 2)], [('3g.40gb', 0), ('2g.20gb', 2)],
                       [('1g.10gb+me', 0), ('1g.10gb+me', 1)],
                       [('A100D-10C', None), ('A100D-20C', None)],
                       [('A100D-10C', None)] * 9, [('1g.5gb', 0)]):
            self.assertIsNotNone(layouts.check_layout(m, layout), layout)


def independent_valid(model, layout):
    """Physical validity, re-derived: starts from the tables above, slices
    as bit masks, one +me, one time-sliced type within its maximum."""
    if not layout:
        return True
    if layout[0][1] is None:
        types = {t.name: t.max_count for t in
                 catalogue.MODELS[model].vgpu_types}
        return (len({n for n, _s in layout}) == 1 and layout[0][0] in types
                and len(layout) <= types[layout[0][0]]
                and all(s is None for _n, s in layout))
    if model == 'RTX-PRO-6000-96GB':
        shape = {name: (name, int(name[0]), int(name[0]), count,
                        RTX_PRO_SLOTS[name.split('.')[0]])
                 for name, count in MIG_PARTED[model]}
        if any(n.endswith('+me.all') for n, _s in layout) and not all(
                n.endswith(('+me.all', '-me')) for n, _s in layout):
            return False
    else:
        table = A30_24GB if model == 'A30-24GB' else A100_80GB
        names = [r[0] for r in rows_of(model)]
        shape = {name: row for name, row in zip(names, table, strict=True)}
    mask, me = 0, 0
    counts = collections.Counter()
    for name, start in layout:
        _n, c, m, count, starts = shape[name]
        bits = ((1 << m) - 1) << start
        if start not in starts or mask & bits:
            return False
        mask |= bits
        counts[name] += 1
        me += name.endswith(('+me', '+me.all'))
        if counts[name] > count:
            return False
    return me <= 1


def random_cards(rng, models, n):
    cards = []
    for i in range(n):
        model = rng.choice(models)
        current, in_use = (), ()
        if rng.random() < 0.7:
            current = rng.choice(layouts.layouts(model))
            in_use = tuple(p for p in current if rng.random() < 0.5)
        cards.append({'id': 'gpu%d' % i, 'model': model,
                      'current': current, 'in_use': in_use})
    return cards


def random_demand(rng, models):
    names = sorted({n for m in models for n in catalogue.profile_names(m)})
    return {p: rng.randint(0, 6) for p in rng.sample(names, rng.randint(1, 3))}


def brute_best(cards, demand):
    """The best (met, -recut, -moves) over every layout of every card."""
    per_card = []
    for card in cards:
        current = layouts.normal(card['current'])
        in_use = collections.Counter(card['in_use'])
        options = []
        for lay in layouts.layouts(card['model']):
            lay = layouts.normal(lay)
            recut = lay != current
            moves = sum((in_use - collections.Counter(lay)).values()) \
                if recut else 0
            supply = collections.Counter(n for n, _s in lay)
            options.append((supply, recut, moves))
        per_card.append(options)
    best = None
    for combo in itertools.product(*per_card):
        supply = collections.Counter()
        for s, _r, _m in combo:
            supply.update(s)
        key = (sum(min(n, supply[p]) for p, n in demand.items()),
               -sum(r for _s, r, _m in combo),
               -sum(m for _s, _r, m in combo))
        if best is None or key > best:
            best = key
    return best[0], -best[1], -best[2]


class TestPlan(testtools.TestCase):

    def check(self, cards, demand):
        rows, summary = solver.plan(cards, demand)
        for row in rows:
            self.assertTrue(independent_valid(row['model'], row['proposed']),
                            row)
            self.assertIsNone(layouts.check_layout(row['model'],
                                                    row['proposed']))
        return rows, summary

    def test_against_brute_force(self):
        rng = random.Random(27)
        sizes = [1] * 10 + [2] * 20 + [3] * 2
        for case, n in enumerate(sizes):
            cards = random_cards(rng, ['A30-24GB'], n)
            demand = random_demand(rng, ['A30-24GB'])
            rows, summary = self.check(cards, demand)
            got = solver.objective(rows, demand)
            self.assertEqual(brute_best(cards, demand), got,
                             (case, cards, demand))
            self.assertEqual((summary['met'], summary['recut'],
                              summary['moves']), got)

    def test_against_brute_force_with_an_a100(self):
        rng = random.Random(2027)
        for case in range(4):
            cards = random_cards(rng, ['A100-80GB'], 1) + random_cards(
                rng, ['A30-24GB'], 1)
            demand = random_demand(rng, ['A100-80GB', 'A30-24GB'])
            rows, _summary = self.check(cards, demand)
            self.assertEqual(brute_best(cards, demand),
                             solver.objective(rows, demand),
                             (case, cards, demand))

    def test_every_proposed_layout_is_valid(self):
        rng = random.Random(7)
        models = list(catalogue.MODELS)
        for _case in range(10):
            cards = random_cards(rng, models, 24)
            demand = random_demand(rng, models)
            self.check(cards, demand)

    def test_keeps_a_layout_that_serves(self):
        cards = [{'id': 'g0', 'model': 'A100-80GB',
                  'current': [('3g.40gb', 0), ('3g.40gb', 4)],
                  'in_use': [('3g.40gb', 0)]},
                 {'id': 'g1', 'model': 'A100-80GB'}]
        rows, summary = solver.plan(cards, {'3g.40gb': 2, '2g.20gb': 3})
        self.assertFalse(rows[0]['recut'])
        self.assertEqual('2g.20gb@0, 2g.20gb@2, 2g.20gb@4',
                         layouts.layout_text(
                             tuple(p for p in rows[1]['proposed']
                                   if p[0] == '2g.20gb')))
        self.assertEqual(5, summary['met'])
        self.assertEqual(1, summary['recut'])
        self.assertEqual(0, summary['moves'])

    def test_no_demand_cuts_nothing(self):
        rows, summary = solver.plan(
            [{'id': 'g0', 'model': 'H100-80GB'}], {})
        self.assertEqual((), rows[0]['proposed'])
        self.assertEqual(0, summary['recut'])

    def test_bad_current_layout_refused(self):
        self.assertRaises(ValueError, solver.plan, [
            {'id': 'g0', 'model': 'A30-24GB', 'current': [('4g.24gb', 2)]}],
            {'1g.6gb': 1})
        self.assertRaises(ValueError, solver.plan, [
            {'id': 'g0', 'model': 'A30-24GB', 'current': [],
             'in_use': [('1g.6gb', 0)]}], {'1g.6gb': 1})


def all_integer_optimum(options, caps):
    """The lexicographic optimum (met, recut, moves) of the integer program
    with one integer column per card and option, solved by HiGHS one
    objective at a time: the formulation before the coarse classes and
    the transport form, written out here apart from the module."""
    import highspy

    h = highspy.Highs()
    h.setOptionValue('output_flag', False)
    # as the module does: HiGHS's scheduler is one per process, set up by
    # the first run; another thread count later is an error ("Not Set")
    h.setOptionValue('threads', 1)
    h.setOptionValue('mip_rel_gap', 0.0)
    h.setOptionValue('mip_abs_gap', 0.5)
    inf = highspy.kHighsInf
    n_card, n_wanted = len(options), len(caps)
    for _card in options:
        h.addRow(1.0, 1.0, 0, [], [])
    for _cap in caps:
        h.addRow(-inf, 0.0, 0, [], [])
    recut, moves = [], []
    for c, mine in enumerate(options):
        for supply, cut, moved in mine:
            rows = [c] + [n_card + k for k, v in enumerate(supply) if v]
            vals = [1.0] + [-float(v) for v in supply if v]
            h.addCol(0.0, 0.0, 1.0, len(rows), rows, vals)
            recut.append(float(cut))
            moves.append(float(moved))
    for k, cap in enumerate(caps):
        h.addCol(0.0, 0.0, float(cap), 1, [n_card + k], [1.0])
    n_x, n_col = len(recut), len(recut) + n_wanted
    h.changeColsIntegrality(n_col, list(range(n_col)),
                            [highspy.HighsVarType.kInteger] * n_col)
    values = []
    for costs in ([0.0] * n_x + [-1.0] * n_wanted, recut + [0.0] * n_wanted,
                  moves + [0.0] * n_wanted):
        h.changeColsCost(n_col, list(range(n_col)), costs)
        h.run()
        assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal
        x = h.getSolution().col_value
        value = round(sum(a * b for a, b in zip(costs, x, strict=True)))
        values.append(value)
        used = [i for i, cost in enumerate(costs) if cost]
        h.addRow(-inf, value + 0.5, len(used), used,
                 [costs[i] for i in used])
    return -values[0], values[1], values[2]


def slow_best(cards, demand):
    """(met, recut, moves) of the plan built the slow way: one class per
    card, every maximal layout an option (no supply cap, no pruning), every
    option an integer column (all_integer_optimum)."""
    wanted = sorted(p for p, n in demand.items() if n > 0)
    options = []
    for card in cards:
        current = layouts.normal(card['current'])
        in_use = layouts.normal(card['in_use'])
        mine = [(tuple(sum(1 for n, _s in current if n == p)
                       for p in wanted), 0, 0)]
        for lay in layouts.layouts(card['model'], maximal=True):
            if lay != current:
                mine.append((tuple(sum(1 for n, _s in lay if n == p)
                                   for p in wanted), 1,
                             solver._moves(current, in_use, lay)))
        options.append(mine)
    return all_integer_optimum(options, [demand[p] for p in wanted])


def running_fleet(rng, n):
    """N cards cut already (a maximal layout each, about half of it in
    use), half A100 80GB and half H100 80GB, as tools/bench_profiles.py
    draws them."""
    cards = []
    for i in range(n):
        model = ('A100-80GB', 'H100-80GB')[i % 2]
        current = rng.choice(layouts.layouts(model, maximal=True))
        cards.append({'id': 'gpu%d' % i, 'model': model,
                      'current': current,
                      'in_use': tuple(p for p in current
                                      if rng.random() < 0.5)})
    return cards


class TestFastPlan(testtools.TestCase):
    """The plan's classes and pruning against the slow construction."""

    def test_running_fleet_equals_slow_construction(self):
        rng = random.Random(2726)
        for case in range(3):
            cards = running_fleet(rng, 40)
            demand = {'1g.10gb': rng.randint(20, 60),
                      '2g.20gb': rng.randint(5, 20),
                      '3g.40gb': rng.randint(10, 30),
                      '4g.40gb': rng.randint(0, 4),
                      '7g.80gb': rng.randint(0, 4)}
            rows, summary = solver.plan(cards, demand)
            got = solver.objective(rows, demand)
            self.assertEqual(slow_best(cards, demand), got, case)
            self.assertEqual((summary['met'], summary['recut'],
                              summary['moves']), got)
            self.assertEqual('Optimal', summary['status'])
            for row in rows:
                self.assertIsNone(layouts.check_layout(row['model'],
                                                        row['proposed']))
                if not row['recut']:
                    self.assertEqual(row['current'], row['proposed'])

    def test_cards_with_the_same_options_share_a_class(self):
        # two different current layouts and a card not cut, the same
        # supply of the demanded profile and nothing in use: one class
        cards = [{'id': 'g0', 'model': 'A100-80GB',
                  'current': [('3g.40gb', 0), ('3g.40gb', 4)]},
                 {'id': 'g1', 'model': 'A100-80GB',
                  'current': [('3g.40gb', 0), ('2g.20gb', 4),
                              ('1g.10gb', 6)]},
                 {'id': 'g2', 'model': 'A100-80GB'}]
        _rows, summary = solver.plan(cards, {'7g.80gb': 1})
        self.assertEqual(1, summary['classes'])
        self.assertEqual((1, 1, 0), (summary['met'], summary['recut'],
                                     summary['moves']))

    def test_solver_against_all_integer_program(self):
        # _solve (coarse classes for met and re-cuts, transport form for
        # moves) against every option an integer column, on random
        # classes whose options need not come from layouts
        rng = random.Random(4242)
        proofs = collections.Counter()
        for case in range(30):
            sizes, options, caps, groups, flat = random_classes(rng)
            n_wanted = len(caps)
            counts, values, status, proof, bound = solver._solve(
                sizes, options, caps, groups)
            proofs[proof] += 1
            self.assertEqual('Optimal', status)
            self.assertEqual(all_integer_optimum(flat, caps), values,
                             (case, sizes, options, caps))
            self.assertLessEqual(bound, values[2] + 1e-6)
            if proof == solver.PROOF_BOUND:
                self.assertEqual(math.ceil(bound - 1e-6), values[2])
            # the counts are a plan: every card once, with those values
            for c, size in enumerate(sizes):
                self.assertEqual(size, sum(n for (k, _o), n in
                                           counts.items() if k == c))
            offered = [sum(n * options[c][o][0][k]
                           for (c, o), n in counts.items())
                       for k in range(n_wanted)]
            self.assertEqual(values, (
                sum(min(a, b) for a, b in zip(offered, caps, strict=True)),
                sum(n * options[c][o][1] for (c, o), n in counts.items()),
                sum(n * options[c][o][2] for (c, o), n in counts.items())))
        # most optima are proven by the bound (the rest: the tests below)
        self.assertGreater(proofs[solver.PROOF_BOUND], 20, proofs)

    def test_coarse_options(self):
        # re-cut (2, 0) is below re-cut (2, 1); re-cut (1, 1) below the
        # keep vector (1, 1): only the keep and (2, 1), (0, 3) matter to
        # demand met and re-cuts
        keeps, recuts = solver._coarse([
            ((1, 1), 0, 0), ((2, 0), 1, 0), ((2, 1), 1, 3),
            ((1, 1), 1, 0), ((0, 3), 1, 1)])
        self.assertEqual(((1, 1),), keeps)
        self.assertEqual(((0, 3), (2, 1)), recuts)

    def test_a_running_fleet_has_fewer_classes_than_cards(self):
        cards = running_fleet(random.Random(27), 400)
        _rows, summary = solver.plan(
            cards, {'1g.10gb': 300, '3g.40gb': 200, '7g.80gb': 20})
        self.assertLess(summary['classes'], 400)


def random_classes(rng, n_class=6):
    """Random classes for _solve: (sizes, options, caps, groups, flat),
    FLAT the options once per card (for all_integer_optimum)."""
    caps = [rng.randint(1, 12) for _k in range(rng.randint(1, 3))]
    sizes, options, groups, flat = [], [], [], []
    for _c in range(rng.randint(1, n_class)):
        size = rng.randint(1, 3)
        mine = [(tuple(rng.randint(0, 3) for _k in caps), 0, 0)]
        for _o in range(rng.randint(0, 5)):
            mine.append((tuple(rng.randint(0, 4) for _k in caps),
                         1, rng.randint(0, 3)))
        sizes.append(size)
        options.append(mine)
        groups.append(rng.choice('ab'))
        flat += [mine] * size
    return sizes, options, caps, groups, flat


class TestMovesProof(testtools.TestCase):
    """The fewest moves: the LP bound, the dive on the arcs of small
    reduced cost, HiGHS on those arcs when the dive gives up, and the
    fall back to HiGHS on the whole model."""

    # a class whose only re-cut offers 2 of a profile wanted once, at 3
    # moves: the LP takes half a card (1.5 moves), any plan takes 3
    HALF = ([1], [[((0,), 0, 0), ((2,), 1, 3)]], [1], ['a'])
    # found by a random search: the best plan on the arcs of small
    # reduced cost has 4 moves, the optimum 2 uses another arc
    WORSE = ([3, 1, 2],
             [[((1, 2, 0), 0, 0), ((0, 3, 2), 1, 0), ((3, 4, 1), 1, 1),
               ((2, 0, 2), 1, 1), ((2, 4, 4), 1, 1)],
              [((1, 1, 2), 0, 0)],
              [((1, 2, 0), 0, 0), ((3, 2, 4), 1, 3), ((1, 4, 1), 1, 2),
               ((2, 2, 3), 1, 0), ((4, 0, 0), 1, 0), ((0, 0, 3), 1, 0)]],
             [12, 1, 7], ['b', 'b', 'b'])

    def model(self, sizes, options, caps, groups):
        import highspy

        met, cut = solver._met_recut(highspy, sizes, options, caps)
        return solver._Transport(sizes, options, caps, groups, met, cut)

    def restricted(self, model):
        """The LP bound, its ceiling and the arcs of small reduced cost,
        as _by_bound takes them."""
        import highspy

        h = model.highs(highspy, integer=False)
        h.run()
        lower, reduced = model.bound(h.getSolution().row_dual)
        target = math.ceil(lower - 1e-6)
        keep = [j for j, column in enumerate(model.columns)
                if column[0][0] != 'x' or reduced[j] <= target - lower + 1e-6]
        return lower, target, keep

    def record(self):
        """Each _transport_run and _dive, in order: ('highs', restricted,
        moves or None) and ('dive', moves or None, complete)."""
        runs = []
        real_run, real_dive = solver._transport_run, solver._dive

        def run(highspy, model, keep):
            found = real_run(highspy, model, keep)
            runs.append(('highs', keep is not None, found and found[1]))
            return found

        def dive(highspy, model, keep, target, **kwargs):
            found, complete = real_dive(highspy, model, keep, target,
                                        **kwargs)
            runs.append(('dive', found and found[1], complete))
            return found, complete

        self.useFixture(fixtures.MonkeyPatch(
            'gpuclient.rules.profiles.solver._transport_run', run))
        self.useFixture(fixtures.MonkeyPatch(
            'gpuclient.rules.profiles.solver._dive', dive))
        return runs

    def dive_limit(self, limit):
        real = solver._dive

        def dive(highspy, model, keep, target):
            return real(highspy, model, keep, target, limit=limit)

        self.useFixture(fixtures.MonkeyPatch(
            'gpuclient.rules.profiles.solver._dive', dive))

    def optimum(self, sizes, options, caps):
        return all_integer_optimum(
            [o for n, o in zip(sizes, options, strict=True)
             for _n in range(n)], caps)

    def test_bound_below_the_optimum_for_any_multipliers(self):
        import highspy

        rng = random.Random(515)
        for case in range(15):
            sizes, options, caps, groups, flat = random_classes(rng)
            best = all_integer_optimum(flat, caps)[2]
            model = self.model(sizes, options, caps, groups)
            h = model.highs(highspy, integer=False)
            h.run()
            lower, reduced = model.bound(h.getSolution().row_dual)
            # HiGHS's duals: the bound is the LP's optimum
            self.assertAlmostEqual(h.getInfo().objective_function_value,
                                   lower, places=6)
            self.assertLessEqual(lower, best + 1e-9, case)
            self.assertEqual(len(model.columns), len(reduced))
            for _draw in range(5):
                duals = [rng.uniform(-3, 3) for _r in model.row_lo]
                self.assertLessEqual(model.bound(duals)[0], best + 1e-9,
                                     (case, duals))

    def test_dive_against_the_optimum(self):
        # a plan found has the target's moves; a complete search without
        # one means the optimum is above the rounded bound
        import highspy

        rng = random.Random(616)
        seen = collections.Counter()
        for case in range(40):
            sizes, options, caps, groups, flat = random_classes(rng)
            best = all_integer_optimum(flat, caps)
            model = self.model(sizes, options, caps, groups)
            _lower, target, keep = self.restricted(model)
            found, complete = solver._dive(highspy, model, keep, target)
            if found is not None:
                seen['found'] += 1
                self.assertEqual(best, model.check(found[0]), case)
                self.assertEqual(target, found[1])
            elif complete:
                seen['none'] += 1
                self.assertGreater(best[2], target, case)
        self.assertGreater(seen['found'], 30, seen)

    def test_proven_by_the_bound(self):
        runs = self.record()
        sizes, options, caps, groups = self.WORSE
        caps = [12, 1, 3]  # less of the third profile: the bound is met
        counts, values, status, proof, bound = solver._solve(
            sizes, options, caps, groups)
        self.assertEqual(self.optimum(sizes, options, caps), values)
        self.assertEqual(solver.PROOF_BOUND, proof)
        self.assertEqual(math.ceil(bound - 1e-6), values[2])
        self.assertEqual([('dive', values[2], True)], runs)
        self.assertEqual('Optimal', status)
        self.assertEqual(sum(sizes), sum(counts.values()))

    def test_falls_back_when_the_rounded_bound_is_not_reached(self):
        runs = self.record()
        counts, values, status, proof, bound = solver._solve(*self.HALF)
        self.assertEqual(self.optimum(*self.HALF[:3]), values)
        self.assertEqual((1, 1, 3), values)
        self.assertAlmostEqual(1.5, bound)
        self.assertEqual(solver.PROOF_SOLVER, proof)
        # the dive tries 2 moves and proves there is no such plan
        self.assertEqual([('dive', None, True), ('highs', False, 3)], runs)
        self.assertEqual({(0, 0): 0, (0, 1): 1}, counts)
        self.assertEqual('Optimal', status)

    def test_fall_back_beats_the_arcs_of_small_reduced_cost(self):
        import highspy

        sizes, options, caps, groups = self.WORSE
        model = self.model(sizes, options, caps, groups)
        lower, target, keep = self.restricted(model)
        # the best on those arcs is not the optimum
        on_keep = solver._transport_run(highspy, model, keep)[1]
        self.assertEqual((None, True),
                         solver._dive(highspy, model, keep, target))
        runs = self.record()
        counts, values, _status, proof, bound = solver._solve(
            sizes, options, caps, groups)
        self.assertEqual(self.optimum(sizes, options, caps), values)
        self.assertAlmostEqual(lower, bound)
        self.assertEqual(solver.PROOF_SOLVER, proof)
        self.assertEqual([('dive', None, True), ('highs', False, values[2])],
                         runs)
        self.assertLess(target, values[2])
        self.assertLess(values[2], on_keep)
        self.assertEqual(values, model.check(counts))

    def test_highs_on_the_arcs_when_the_dive_gives_up(self):
        # one LP only: the dive stops at the first fractional count, HiGHS
        # finds the plan of the bound on the same arcs
        self.dive_limit(1)
        runs = self.record()
        sizes, options, caps, groups = self.WORSE
        caps = [12, 1, 3]
        _counts, values, _status, proof, bound = solver._solve(
            sizes, options, caps, groups)
        self.assertEqual(self.optimum(sizes, options, caps), values)
        self.assertEqual(solver.PROOF_BOUND, proof)
        self.assertEqual(math.ceil(bound - 1e-6), values[2])
        self.assertEqual([('dive', None, False), ('highs', True, values[2])],
                         runs)

    def test_a_dive_lp_not_solved_leaves_the_search_incomplete(self):
        # an LP of the dive that HiGHS neither solves nor finds
        # infeasible: the dive does not claim a complete search, HiGHS on
        # the arcs looks for the plan of the bound
        import highspy

        real = solver._Transport.highs

        class Unsolved:
            def __init__(self, h):
                self.h = h

            def __getattr__(self, name):
                return getattr(self.h, name)

            def getModelStatus(self):  # noqa: N802 (HiGHS's name)
                return highspy.HighsModelStatus.kNotset

        def highs(model, hs, keep=None, integer=True):
            h = real(model, hs, keep, integer)
            return Unsolved(h) if keep is not None and not integer else h

        self.useFixture(fixtures.MonkeyPatch(
            'gpuclient.rules.profiles.solver._Transport.highs', highs))
        runs = self.record()
        sizes, options, caps, groups = self.WORSE
        caps = [12, 1, 3]
        _counts, values, _status, proof, _bound = solver._solve(
            sizes, options, caps, groups)
        self.assertEqual(self.optimum(sizes, options, caps), values)
        self.assertEqual(solver.PROOF_BOUND, proof)
        self.assertEqual([('dive', None, False), ('highs', True, values[2])],
                         runs)

    def test_falls_back_when_highs_on_the_arcs_finds_none(self):
        self.dive_limit(1)
        real = solver._transport_run

        def none_on_arcs(highspy, model, keep):
            return None if keep is not None else real(highspy, model, keep)

        self.useFixture(fixtures.MonkeyPatch(
            'gpuclient.rules.profiles.solver._transport_run', none_on_arcs))
        sizes, options, caps, groups = self.WORSE
        caps = [12, 1, 3]
        _counts, values, _status, proof, _bound = solver._solve(
            sizes, options, caps, groups)
        self.assertEqual(self.optimum(sizes, options, caps), values)
        self.assertEqual(solver.PROOF_SOLVER, proof)

    def test_a_plan_under_the_bound_is_refused(self):
        # a bound above a plan found is a bug: it raises rather than
        # claim a proof
        real = solver._Transport.bound

        def too_high(model, duals):
            lower, reduced = real(model, duals)
            return lower + 2, reduced

        self.useFixture(fixtures.MonkeyPatch(
            'gpuclient.rules.profiles.solver._Transport.bound', too_high))
        self.dive_limit(1)  # HiGHS on the arcs finds a plan under it
        sizes, options, caps, groups = self.WORSE
        self.assertRaises(RuntimeError, solver._solve, sizes, options,
                          [12, 1, 3], groups)

    def test_a_wrong_plan_is_refused(self):
        # the plan is checked apart from the solver: one card counted
        # twice is refused
        real = solver._leaf

        def twice(*args):
            counts, moved, status = real(*args)
            counts = dict(counts)
            key = next(k for k, n in counts.items() if n)
            counts[key] += 1
            return counts, moved, status

        self.useFixture(fixtures.MonkeyPatch(
            'gpuclient.rules.profiles.solver._leaf', twice))
        sizes, options, caps, groups = self.WORSE
        model = self.model(sizes, options, caps, groups)
        self.assertIsNone(model.check({(0, 0): 4, (1, 0): 1, (2, 0): 2}))
        # the dive's plan refused: HiGHS on the whole model instead
        _counts, values, _status, proof, _bound = solver._solve(
            sizes, options, [12, 1, 3], groups)
        self.assertEqual(solver.PROOF_SOLVER, proof)
        self.assertEqual(self.optimum(sizes, options, [12, 1, 3]), values)

    def test_plan_says_how_the_optimum_was_proven(self):
        cards = running_fleet(random.Random(27), 200)
        _rows, summary = solver.plan(
            cards, {'1g.10gb': 300, '3g.40gb': 100, '7g.80gb': 10})
        self.assertIn(summary['proof'],
                      (solver.PROOF_BOUND, solver.PROOF_SOLVER))
        self.assertLessEqual(summary['moves_bound'],
                             summary['moves'] + 1e-6)
        if summary['proof'] == solver.PROOF_BOUND:
            self.assertEqual(math.ceil(summary['moves_bound'] - 1e-6),
                             summary['moves'])
        _rows, summary = solver.plan(cards, {})
        self.assertIsNone(summary['proof'])
        self.assertIsNone(summary['moves_bound'])


# ``nvidia-smi mig -lgi`` as the driver prints it (columns GPU, Name,
# Profile ID, Instance ID, Placement Start:Size), for FAKE_SMI below.
LGI = """\
+---------------------------------------------------------+
| GPU instances:                                          |
| GPU   Name               Profile  Instance   Placement  |
|                            ID       ID       Start:Size |
|=========================================================|
|   0  MIG 3g.40gb            9        2          0:4     |
+---------------------------------------------------------+
|   0  MIG 2g.20gb           14        3          4:2     |
+---------------------------------------------------------+
|   0  MIG 1g.10gb           19        9          6:1     |
+---------------------------------------------------------+
"""
FAKE_SMI = """#!/bin/sh
echo "$*" >> "$SMI_LOG"
case "$*" in *-lgi*) cat "$SMI_LGI" ;; esac
"""


class TestScript(testtools.TestCase):

    current = (('3g.40gb', 0), ('2g.20gb', 4), ('1g.10gb', 6))
    proposed = (('3g.40gb', 0), ('1g.10gb', 4), ('1g.10gb', 5),
                ('1g.10gb', 6))

    def test_steps(self):
        kept, destroyed, created = scripts.recut_steps(self.current,
                                                        self.proposed)
        self.assertEqual((('3g.40gb', 0), ('1g.10gb', 6)), kept)
        self.assertEqual((('2g.20gb', 4),), destroyed)
        self.assertEqual(set(self.proposed) - set(kept), set(created))
        # MIG to time-sliced keeps nothing
        kept, destroyed, created = scripts.recut_steps(
            self.current, (('A100D-10C', None),) * 8)
        self.assertEqual(((), self.current, ()),
                         (kept, destroyed, created))

    def test_order_kept_untouched(self):
        text = scripts.script('A100-80GB', self.current, self.proposed,
                               [('g0', (('2g.20gb', 4),)), ('g1', ())])
        lines = text.splitlines()
        self.assertEqual('#!/bin/sh', lines[0])
        present = [i for i, line in enumerate(lines)
                   if line.startswith('present ')]
        destroy = [i for i, line in enumerate(lines)
                   if line.startswith('destroy ')]
        create = [i for i, line in enumerate(lines) if ' -cgi ' in line]
        self.assertEqual(3, len(present))
        self.assertEqual(['destroy 2g.20gb 4'],
                         [lines[i] for i in destroy])
        self.assertLess(max(present), min(destroy))
        self.assertLess(max(destroy), min(create))
        created = {tuple(lines[i].split(' -cgi ')[1].split()[0].split(':'))
                   for i in create}
        self.assertEqual({('1g.10gb', '4'), ('1g.10gb', '5')}, created)
        self.assertIn('2g.20gb@4 is in use on g0', text)
        # MIG is on already; nothing kept is destroyed or re-created
        self.assertNotIn('-mig', text)
        self.assertNotIn('3g.40gb:0', text)
        self.assertEqual(
            'A100-80GB_3g.40gb_0_1g.10gb_4_1g.10gb_5_1g.10gb_6_from_'
            '3g.40gb_0_2g.20gb_4_1g.10gb_6.sh',
            scripts.script_name('A100-80GB', self.proposed, self.current))

    def test_runs_against_the_listing(self):
        # the script under sh with a stand-in nvidia-smi that logs its
        # arguments and prints the listing above
        tmp = self.useFixture(fixtures.TempDir()).path
        smi = os.path.join(tmp, 'nvidia-smi')
        with open(smi, 'w') as f:
            f.write(FAKE_SMI)
        os.chmod(smi, 0o755)
        with open(os.path.join(tmp, 'lgi'), 'w') as f:
            f.write(LGI)
        log = os.path.join(tmp, 'log')
        env = dict(os.environ, PATH=tmp + os.pathsep + os.environ['PATH'],
                   SMI_LOG=log, SMI_LGI=os.path.join(tmp, 'lgi'), GPU='0')
        text = scripts.script('A100-80GB', self.current, self.proposed,
                               [('g0', ())])
        subprocess.run(['sh', '-c', text], env=env, check=True)
        with open(log) as f:
            calls = [line for line in f.read().splitlines()
                     if '-lgi' not in line]
        self.assertEqual(['mig -i 0 -dci -gi 3', 'mig -i 0 -dgi -gi 3',
                          'mig -i 0 -cgi 1g.10gb:4 -C',
                          'mig -i 0 -cgi 1g.10gb:5 -C'], calls)
        # a GPU that does not hold the planned-from layout: nothing done
        os.remove(log)
        other = (('3g.40gb', 4),) + self.current[1:]
        result = subprocess.run(
            ['sh', '-c', scripts.script('A100-80GB', other, self.proposed,
                                         [('g0', ())])],
            env=env, capture_output=True, text=True)
        self.assertEqual(1, result.returncode)
        self.assertIn('has no 3g.40gb at slice 4', result.stderr)
        with open(log) as f:
            self.assertEqual([], [line for line in f.read().splitlines()
                                  if '-lgi' not in line])

    def test_new_card(self):
        text = scripts.script('A100-80GB', (), (('3g.40gb', 0),
                                                 ('3g.40gb', 4)), [('g0', ())])
        self.assertNotIn('destroy', text)
        self.assertIn('-mig 1', text)
        self.assertIn('-cgi 3g.40gb:0 -C', text)
        self.assertEqual('A100-80GB_3g.40gb_0_3g.40gb_4.sh',
                         scripts.script_name('A100-80GB',
                                              (('3g.40gb', 0),
                                               ('3g.40gb', 4))))

    def test_time_sliced(self):
        text = scripts.script('A30-24GB', (), (('A30-6C', None),) * 4,
                               [('g0', ())])
        self.assertIn('-mig 0', text)
        self.assertNotIn('-cgi', text)


class TestCatalogueDoc(testtools.TestCase):
    """doc/source/user/catalogue.rst lists every model, board, profile and
    type of the catalogue, with the same figures."""

    def test_every_row_in_the_doc(self):
        path = os.path.join(os.path.dirname(__file__), '..', '..', '..',
                            'doc', 'source', 'user', 'catalogue.rst')
        with open(path) as f:
            text = f.read()
        for m in catalogue.MODELS.values():
            self.assertIn('\n%s\n%s\n' % (m.name, '~' * len(m.name)), text)
            for p in m.profiles:
                self.assertIn('   * - ``%s``\n     - %d\n     - %d\n'
                              '     - %d\n     - %d\n' % (
                                  p.name, p.compute, p.memory_slices,
                                  p.memory_gb, p.max_count), text)
            for t in m.vgpu_types:
                self.assertIn('``%s`` (%d GB, %d per GPU)' % (
                    t.name, t.memory_gb, t.max_count), text)
            for b in m.boards:
                self.assertIn('   * - ``%s``\n     - ``%s``\n' % (
                    b.name, m.name), text)
