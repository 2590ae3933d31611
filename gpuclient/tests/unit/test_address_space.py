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

"""gpuclient.rules.address_space with plain data (issue 40 rule 3)."""

from osc_lib import exceptions

from gpuclient.rules import address_space as aspace
from gpuclient.rules import catalogue
from gpuclient.rules import pools
from gpuclient.rules import specs
from gpuclient.tests.unit import base

GIB_MB = 1024
NVL = pools.build_spec('llm', 'passthrough', alias='h100nvl',
                       pci_id='10de:2321')
PCIE = pools.build_spec('solver', 'passthrough', alias='h100',
                        pci_id='10de:2331')


def pool(spec):
    return dict(spec, mode=spec['mode'], pci_id=spec.get('pci_id'))


class TestOptions(base.TestCase):
    def test_specs(self):
        for mode, bits, expected in (
                (None, None, {}),
                ('passthrough', None, {aspace.MODE_SPEC: 'passthrough'}),
                ('emulate', 44, {aspace.MODE_SPEC: 'emulate',
                                 aspace.BITS_SPEC: '44'}),
                ('emulate', 32, {aspace.MODE_SPEC: 'emulate',
                                 aspace.BITS_SPEC: '32'}),
                ('emulate', 52, {aspace.MODE_SPEC: 'emulate',
                                 aspace.BITS_SPEC: '52'})):
            with self.subTest(mode=mode, bits=bits):
                self.assertEqual(expected, aspace.options_specs(mode, bits))

    def test_refused(self):
        for mode, bits, says in (
                ('host', None, 'Nova knows passthrough, emulate'),
                (None, 44, 'needs --maxphysaddr-mode emulate'),
                ('passthrough', 44, 'needs --maxphysaddr-mode emulate'),
                ('emulate', None, 'needs --maxphysaddr-bits'),
                ('emulate', 31, 'give 32 to 52'),
                ('emulate', 53, 'give 32 to 52')):
            with self.subTest(mode=mode, bits=bits):
                exc = self.assertRaises(exceptions.CommandError,
                                        aspace.options_specs, mode, bits)
                self.assertIn(says, str(exc))


class TestJudge(base.TestCase):
    def test_table(self):
        # (RAM MB, GPUs, BAR1 GiB, extra specs) -> None or (need GiB, bits,
        # suggested bits)
        for ram, gpus, bar, extra, expected in (
                # the flavor: 512 + 4 + 4 x 128 GiB > 1 TiB
                (512 * GIB_MB, 4, 128, {}, (1028, 40, 42)),
                (1024 * GIB_MB, 8, 128, {}, (2052, 40, 43)),
                # fits: 2 GPUs, or less RAM
                (512 * GIB_MB, 2, 128, {}, None),
                (500 * GIB_MB, 4, 128, {}, None),
                # the guest's bits set
                (512 * GIB_MB, 4, 128, {aspace.MODE_SPEC: 'passthrough'},
                 None),
                (512 * GIB_MB, 4, 128, {aspace.MODE_SPEC: 'emulate',
                                        aspace.BITS_SPEC: '41'}, None),
                (512 * GIB_MB, 4, 128, {aspace.MODE_SPEC: 'emulate',
                                        aspace.BITS_SPEC: '40'},
                 (1028, 40, 42)),
                # bits without a mode: Nova gives the guest no maxphysaddr
                (512 * GIB_MB, 4, 128, {aspace.BITS_SPEC: '46'},
                 (1028, 40, 42)),
                # no BAR1 size known, no GPU
                (512 * GIB_MB, 4, None, {}, None),
                (512 * GIB_MB, 0, 128, {}, None)):
            with self.subTest(ram=ram, gpus=gpus, extra=extra):
                result = aspace.judge(ram, gpus, bar, extra)
                self.assertEqual(expected, result and (
                    result['need_gib'], result['bits'],
                    result['suggested_bits']))

    def test_suggested_bits_hold_the_need(self):
        for need_gib in (1, 1023, 1024, 1025, 4096, 5000):
            need = need_gib * aspace.GIB
            bits = aspace.suggested_bits(need)
            self.assertGreaterEqual(1 << bits, 2 * need)
            self.assertGreater(bits, aspace.DEFAULT_BITS)


class TestCatalogue(base.TestCase):
    def test_bar1_by_pci_id(self):
        bar1 = catalogue.bar1_for_pci_id('10DE:2321')
        self.assertEqual(('H100-NVL', 128), (bar1.board, bar1.gib))
        # a catalogue board whose BAR1 size no source gave: known, unknown
        bar1 = catalogue.bar1_for_pci_id('10de:2331')
        self.assertEqual(('H100-PCIE-80GB', None), (bar1.board, bar1.gib))
        self.assertIn('"NVIDIA H100 PCIe"', bar1.source)
        self.assertIsNone(catalogue.bar1_for_pci_id('10de:ffff'))
        self.assertIsNone(catalogue.bar1_for_pci_id(None))

    def test_bar1_sizes(self):
        # issue 51 defect 16: the sizes the sources gave (GiB); the rest
        # not known
        self.assertEqual(
            {'A100-PCIE-40GB': 64, 'A100-HGX-40GB': 64,
             'A100-PCIE-80GB': None, 'A100-HGX-80GB': 128, 'A30': 32,
             'H100-PCIE-80GB': None, 'H100-SXM5-80GB': 128, 'H100-NVL': 128,
             'H200-NVL': None, 'H200-SXM5': 256, 'L40S': 64, 'L40': None,
             'L4': 32, 'A40': 64},
            {name: bar1.gib for name, bar1 in catalogue.BAR1.items()})
        a30 = pools.build_spec('a30', 'passthrough', alias='a30',
                               pci_id='10DE:20B7')
        self.assertEqual(('A30', 32), (aspace.pool_bar1(a30).board,
                                       aspace.pool_bar1(a30).gib))
        self.assertIsNone(aspace.unknown_bar1(a30))

    def test_every_size_has_a_source_of_that_board(self):
        """A BAR1 size is written down only with a source that names the
        board's device ID and gives that size (in MiB, as nvidia-smi,
        lspci or dmesg show it), in the BAR1 part of its source (the part
        before names the device ID for every entry)."""
        for name, bar1 in catalogue.BAR1.items():
            said = bar1.source.split('BAR1 size: ', 1)[1]
            if bar1.gib is None:
                self.assertIn('not known', said, name)
                continue
            device = bar1.pci_ids[0].split(':')[1]
            self.assertIn(device, said.lower(), name)
            self.assertTrue(said.endswith(' %d MiB' % (bar1.gib * 1024)),
                            name)

    def test_every_entry_is_a_catalogue_board_with_a_source(self):
        for name, bar1 in catalogue.BAR1.items():
            self.assertIn(name, catalogue.BOARDS)
            self.assertTrue(bar1.source)
            self.assertTrue(bar1.pci_ids)
            self.assertIn('BAR1 size: ', bar1.source)
        # issue 51: every board with a PCI device ID in the sources is
        # there, with its BAR1 size or none; one PCI ID names one board
        self.assertEqual({'A16', 'H100-SXM5-94GB'},
                         set(catalogue.BOARDS) - set(catalogue.BAR1))
        ids = [i for b in catalogue.BAR1.values() for i in b.pci_ids]
        self.assertEqual(len(ids), len(set(ids)))

    def test_pool_bar1(self):
        self.assertEqual('H100-NVL', aspace.pool_bar1(NVL).board)
        self.assertEqual(('H100-PCIE-80GB', None),
                         (aspace.pool_bar1(PCIE).board,
                          aspace.pool_bar1(PCIE).gib))
        vgpu = pools.build_spec('ws', 'vgpu', vgpu_type='nvidia-35')
        self.assertIsNone(aspace.pool_bar1(vgpu))

    def test_what_is_unknown_is_named(self):
        self.assertIsNone(aspace.unknown_bar1(NVL))
        self.assertEqual('H100-PCIE-80GB (10de:2331)',
                         aspace.unknown_bar1(PCIE))
        other = pools.build_spec('x', 'passthrough', alias='x',
                                 pci_id='10de:ffff')
        self.assertEqual('the GPU with PCI ID 10de:ffff (no board of the '
                         'catalogue)', aspace.unknown_bar1(other))
        vgpu = pools.build_spec('ws', 'vgpu', vgpu_type='nvidia-35')
        self.assertIsNone(aspace.unknown_bar1(vgpu))

    def test_room_per_gpu(self):
        # 4 GPUs and 512 GiB in 40 bits: 127 GiB each, less than an
        # H100 NVL's 128 (whose judge says 1028 GiB needed)
        self.assertEqual(127, aspace.room_per_gpu(512 * GIB_MB, 4, 40))
        self.assertEqual(1019, aspace.room_per_gpu(512, 1, 40))
        self.assertEqual(0, aspace.room_per_gpu(2048 * GIB_MB, 1, 40))


class TestDerive(base.TestCase):
    def derive(self, spec, **kwargs):
        agg = pools.metadata_for(spec)
        the_pool = pools.pool_from_aggregate(
            {'name': spec['name'], 'metadata': agg, 'hosts': []})
        return specs.derive(the_pool, **kwargs)

    def test_options_become_extra_specs(self):
        derived = self.derive(NVL, gpus=4, maxphysaddr_mode='emulate',
                              maxphysaddr_bits=44, ram=512 * GIB_MB)
        self.assertEqual('emulate',
                         derived['extra_specs'][aspace.MODE_SPEC])
        self.assertEqual('44', derived['extra_specs'][aspace.BITS_SPEC])
        self.assertEqual([], derived['warnings'])

    def test_warns_where_the_guest_overflows(self):
        derived = self.derive(NVL, gpus=4, ram=512 * GIB_MB)
        self.assertNotIn(aspace.MODE_SPEC, derived['extra_specs'])
        (warning,) = derived['warnings']
        self.assertIn('1028 GiB', warning)
        self.assertIn('H100-NVL', warning)
        self.assertIn('--maxphysaddr-mode passthrough', warning)
        self.assertIn('--maxphysaddr-bits 42', warning)
        # the same as a --property: no warning
        derived = self.derive(NVL, gpus=4, ram=512 * GIB_MB, properties={
            aspace.MODE_SPEC: 'passthrough'})
        self.assertEqual([], derived['warnings'])
        # a board without a known BAR1 size, two GPUs: nothing to say
        self.assertEqual([], self.derive(PCIE, gpus=4,
                                         ram=512 * GIB_MB)['warnings'])
        self.assertEqual([], self.derive(NVL, gpus=2,
                                         ram=512 * GIB_MB)['warnings'])

    def test_property_contradicting_the_option_refused(self):
        self.assertRaises(
            exceptions.CommandError, self.derive, NVL, gpus=4,
            maxphysaddr_mode='passthrough',
            properties={aspace.MODE_SPEC: 'emulate'})

    def test_validate_spec_takes_novas_values(self):
        specs.validate_spec(aspace.MODE_SPEC, 'passthrough')
        specs.validate_spec(aspace.BITS_SPEC, '46')
        for key, value in ((aspace.MODE_SPEC, 'host'),
                           (aspace.BITS_SPEC, '64')):
            self.assertRaises(exceptions.CommandError, specs.validate_spec,
                              key, value)
