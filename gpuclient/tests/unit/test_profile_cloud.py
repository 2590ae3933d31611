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

"""rules.profiles.cloud: the cards of a cloud and the nova.conf of a plan,
on plain data."""

import testtools

from gpuclient.rules import catalogue
from gpuclient.rules.nova_conf import render as nova_config
from gpuclient.rules.profiles import cloud as pc
from gpuclient.rules.profiles import layouts
from gpuclient.rules.profiles import solver

HOST = 'gpu-a'
VFS = ['0000:61:00.%d' % n for n in range(4, 8)] + [
    '0000:61:01.%d' % n for n in range(3)]

# what gpu config show writes on hosts live-migrating VFIO devices
POST_COPY_OFF = {'live_migration_permit_post_copy': 'false'}


def mig_pool(name, profile, rc='VGPU', hosts=(HOST,), metadata=None):
    return {'name': name, 'mode': 'mig', 'mig_profile': profile,
            'resource_class': rc, 'hosts': list(hosts),
            'type_trait': 'CUSTOM_MIG_%s' % profile.upper().replace(
                '.', '_'),
            'metadata': metadata or {}, 'isolate': False, 'projects': [],
            'vgpu_type': None, 'properties': {}}


def vf(address, rc, traits=(), host=HOST):
    name = '%s_pci_%s' % (host, address.replace(':', '_').replace('.', '_'))
    return {'uuid': 'u-' + address, 'name': name, 'root_name': host,
            'address': address, 'resources': {rc: 1},
            'traits': set(traits)}


SMALL = mig_pool('small', '1g.10gb', 'CUSTOM_1G')
LARGE = mig_pool('large', '3g.40gb', 'CUSTOM_3G')
POOLS = {'small': SMALL, 'large': LARGE}
# 4 x 1g.10gb + 1 x 3g.40gb on one card, two VFs free
DEVICES = ([vf(a, 'CUSTOM_1G') for a in VFS[:4]]
           + [vf(VFS[4], 'CUSTOM_3G')]
           + [vf(a, 'VGPU') for a in VFS[5:]])


class AddressTest(testtools.TestCase):
    def test_card_address(self):
        for given, card in (('0000:41:01.2', '0000:41:00.0'),
                            ('0000:41:00.4', '0000:41:00.0'),
                            ('0000:C1:00.0', '0000:c1:00.0'),
                            ('nonsense', None), (None, None)):
            self.assertEqual(card, pc.card_address(given), given)


class ModelTest(testtools.TestCase):
    def test_profile_names_that_one_model_has(self):
        self.assertEqual('A30-24GB', pc.infer_model(['1g.6gb']))
        self.assertEqual('H100-94GB', pc.infer_model(['3g.47gb']))
        self.assertEqual('A100-40GB', pc.infer_model(['3g.20gb']))

    def test_a100_and_h100_80gb_need_a_hint(self):
        self.assertIsNone(pc.infer_model(['3g.40gb']))
        self.assertIsNone(pc.infer_model(['3g.40gb'], ['CUSTOM_MIG_3G']))
        self.assertEqual('H100-80GB', pc.infer_model(
            ['3g.40gb'], ['CUSTOM_H100_80GB_3G']))
        # a vGPU type name of the model tells it too
        self.assertEqual('A100-80GB', pc.infer_model(
            ['1g.10gb'], ['CUSTOM_A100D_10C']))
        # both named: cannot tell
        self.assertIsNone(pc.infer_model(
            ['1g.10gb'], ['a100-80gb', 'h100-80gb']))

    def test_no_model_has_them(self):
        self.assertIsNone(pc.infer_model(['1g.6gb', '3g.40gb']))


class AssignLayoutTest(testtools.TestCase):
    def test_first_valid_layout_with_those_counts(self):
        layout = pc.assign_layout('A100-80GB', {'1g.10gb': 4, '3g.40gb': 1})
        self.assertEqual(
            (('1g.10gb', 0), ('1g.10gb', 1), ('1g.10gb', 2), ('1g.10gb', 3),
             ('3g.40gb', 4)), layout)
        self.assertIsNone(layouts.check_layout('A100-80GB', layout))

    def test_impossible_counts(self):
        self.assertIsNone(pc.assign_layout('A100-80GB', {'3g.40gb': 3}))
        self.assertEqual((), pc.assign_layout('A100-80GB', {}))


class CardsTest(testtools.TestCase):
    def test_layout_and_servers_from_vfs(self):
        allocations = {'u-' + VFS[1]: {'srv-1': {'CUSTOM_1G': 1}},
                       'u-' + VFS[4]: {'srv-2': {'CUSTOM_3G': 1}}}
        cards, notes = pc.cards(HOST, DEVICES, [LARGE, SMALL], allocations,
                                model='a100-80gb')
        self.assertEqual(1, len(cards))
        card = cards[0]
        self.assertEqual('0000:61:00.0', card['address'])
        self.assertEqual('A100-80GB', card['model'])
        self.assertEqual(pc.assign_layout(
            'A100-80GB', {'1g.10gb': 4, '3g.40gb': 1}), card['current'])
        self.assertEqual((('1g.10gb', 1), ('3g.40gb', 4)), card['in_use'])
        self.assertEqual({('1g.10gb', 1): ['srv-1'],
                          ('3g.40gb', 4): ['srv-2']}, card['servers'])
        self.assertEqual(VFS, card['vfs'])
        # the VFs no pool serves are said
        self.assertEqual(1, len(notes))
        self.assertIn(VFS[5], notes[0])

    def test_type_trait_pools(self):
        small = mig_pool('small', '1g.10gb')
        devices = [vf(a, 'VGPU', [small['type_trait']]) for a in VFS[:3]]
        cards, _notes = pc.cards(HOST, devices, [small], model='A100-80GB')
        self.assertEqual((('1g.10gb', 0), ('1g.10gb', 1), ('1g.10gb', 2)),
                         cards[0]['current'])

    def test_cards_by_bus(self):
        devices = DEVICES + [vf('0000:62:00.4', 'CUSTOM_3G')]
        cards, _notes = pc.cards(HOST, devices, [LARGE, SMALL],
                                 model='A100-80GB')
        self.assertEqual(['0000:61:00.0', '0000:62:00.0'],
                         [c['address'] for c in cards])
        self.assertEqual((('3g.40gb', 0),), cards[1]['current'])

    def test_model_unknown_is_refused_with_the_option(self):
        e = self.assertRaises(pc.CannotTell, pc.cards, HOST, DEVICES,
                              [LARGE, SMALL])
        self.assertIn('--model', str(e))

    def test_model_told_by_the_pools_class(self):
        small = mig_pool('small', '1g.10gb', 'CUSTOM_H100_80GB_1G')
        devices = [vf(VFS[0], 'CUSTOM_H100_80GB_1G')]
        cards, _notes = pc.cards(HOST, devices, [small])
        self.assertEqual('H100-80GB', cards[0]['model'])

    def test_too_many_instances_for_a_card(self):
        devices = [vf(a, 'CUSTOM_3G') for a in VFS[:3]]
        self.assertRaises(ValueError, pc.cards, HOST, devices, [LARGE],
                          model='A100-80GB')


class DemandTest(testtools.TestCase):
    def test_flavors_and_profiles(self):
        flavors = [{'name': 'big', 'extra_specs': {
            'aggregate_instance_extra_specs:gpu_pool': 'large',
            'resources:CUSTOM_3G': '1'}}]
        wanted, of_flavor = pc.profiles_wanted(
            {'big': 3, '3G.40GB': 1, '1g.10gb': 2}, flavors, POOLS)
        self.assertEqual({'3g.40gb': 4, '1g.10gb': 2}, wanted)
        self.assertEqual({'big': '3g.40gb'}, of_flavor)

    def test_a_flavor_of_no_mig_pool(self):
        flavors = [{'name': 'plain', 'extra_specs': {}}]
        self.assertRaises(pc.CannotTell, pc.profiles_wanted, {'plain': 1},
                          flavors, POOLS)
        self.assertRaises(catalogue.UnknownName, pc.profiles_wanted,
                          {'nope': 1}, [], POOLS)


def _plan(demand, allocations=None):
    cards, _notes = pc.cards(HOST, DEVICES, [LARGE, SMALL], allocations,
                             model='A100-80GB')
    rows, _summary = solver.plan(
        [{k: c[k] for k in ('id', 'model', 'current', 'in_use')}
         for c in cards], demand)
    return cards, rows


class ProposedTest(testtools.TestCase):
    TYPES = {'1g.10gb': 'nvidia-1', '3g.40gb': 'nvidia-3'}

    def test_recut_keeps_the_vf_of_a_kept_slice(self):
        cards, rows = _plan({'3g.40gb': 2})
        self.assertEqual((('3g.40gb', 0), ('3g.40gb', 4)),
                         rows[0]['proposed'])
        self.assertEqual({('3g.40gb', 4): VFS[4], ('3g.40gb', 0): VFS[0]},
                         pc.proposed_placement(cards[0],
                                               rows[0]['proposed']))

    def test_nova_conf_after_the_recut(self):
        cards, rows = _plan({'3g.40gb': 2})
        config, notes, unserved = pc.proposed_config(
            POOLS, {HOST: DEVICES}, cards, rows, self.TYPES)
        target = nova_config.host_target(HOST)
        self.assertEqual(
            {'libvirt': POST_COPY_OFF,
             'devices': {'enabled_mdev_types': 'nvidia-3'},
             'mdev_nvidia-3': {
                 'device_addresses': '%s,%s' % (VFS[0], VFS[4]),
                 'mdev_class': 'CUSTOM_3G'}},
            config.targets[target])
        self.assertEqual({}, unserved)
        # the small pool leaves the host: said
        self.assertTrue(any('small' in n for n in notes[HOST]), notes)
        (name, text), = pc.host_files(config, [HOST])
        self.assertEqual('nova-compute-%s.conf' % HOST, name)
        self.assertIn('mdev_class = CUSTOM_3G', text)

    def test_two_profiles_after(self):
        cards, rows = _plan({'3g.40gb': 1, '1g.10gb': 4})
        self.assertFalse(rows[0]['recut'])
        cards, rows = _plan({'2g.20gb': 3, '1g.10gb': 1})
        config, notes, unserved = pc.proposed_config(
            POOLS, {HOST: DEVICES}, cards, rows, self.TYPES)
        # no pool serves 2g.20gb: said, not rendered
        self.assertEqual({cards[0]['id']: ['2g.20gb']}, unserved)
        keys = config.targets[nova_config.host_target(HOST)]
        self.assertEqual('nvidia-1', keys['devices']['enabled_mdev_types'])

    def test_without_the_mdev_type_it_is_said(self):
        cards, rows = _plan({'3g.40gb': 2})
        config, _notes, _unserved = pc.proposed_config(
            POOLS, {HOST: DEVICES}, cards, rows)
        target = nova_config.host_target(HOST)
        self.assertNotIn('devices', config.targets.get(target, {}))
        self.assertTrue(any('--mig-mdev-type' in n
                            for n in config.notes[target]))

    def test_a_pool_not_holding_the_host_yet(self):
        large = mig_pool('large', '3g.40gb', 'CUSTOM_3G', hosts=())
        devices = [vf(a, 'CUSTOM_1G') for a in VFS[:7]]
        cards, _n = pc.cards(HOST, devices, [SMALL], model='A100-80GB')
        rows, _s = solver.plan(
            [{k: c[k] for k in ('id', 'model', 'current', 'in_use')}
             for c in cards], {'3g.40gb': 2})
        config, notes, _u = pc.proposed_config(
            {'small': SMALL, 'large': large}, {HOST: devices}, cards, rows,
            self.TYPES)
        self.assertTrue(any('pool add host large' in n
                            for n in notes[HOST]), notes)
        self.assertEqual('CUSTOM_3G', config.targets[
            nova_config.host_target(HOST)]['mdev_nvidia-3']['mdev_class'])

    def test_too_few_vfs(self):
        card = {'id': 'c', 'vfs': ['a'], 'placed': {}}
        self.assertRaises(ValueError, pc.proposed_placement, card,
                          (('1g.10gb', 0), ('1g.10gb', 1)))


class FiguresTest(testtools.TestCase):
    def test_free_per_flavor_now_and_after(self):
        allocations = {'u-' + VFS[4]: {'srv-2': {'CUSTOM_3G': 1}},
                       'u-' + VFS[0]: {'srv-1': {'CUSTOM_1G': 1}}}
        cards, rows = _plan({'3g.40gb': 2}, allocations)
        self.assertEqual({'f3': (0, 1), 'f1': (3, 0)}, pc.flavor_figures(
            cards, rows, {'f3': '3g.40gb', 'f1': '1g.10gb'}))
        # the 1g.10gb server must leave; the 3g.40gb one keeps its slice
        self.assertEqual(['srv-1'], pc.servers_to_move(cards[0], rows[0]))

    def test_no_recut_moves_nobody(self):
        allocations = {'u-' + VFS[0]: {'srv-1': {'CUSTOM_1G': 1}}}
        cards, rows = _plan({'1g.10gb': 1}, allocations)
        self.assertEqual([], pc.servers_to_move(cards[0], rows[0]))


class TestMoveText(testtools.TestCase):
    def test_each_way_out(self):
        self.assertIsNone(pc.move_text(None))
        self.assertEqual(
            'cold to gpu-mig-2 (downtime: stop-start)',
            pc.move_text({
                'method': 'cold', 'destination': 'gpu-mig-2',
                'downtime': 'stop-start', 'reason': None}))
        self.assertEqual(
            'shelve (downtime: until unshelved)',
            pc.move_text({
                'method': 'shelve', 'destination': None,
                'downtime': 'until unshelved',
                'reason': 'no other host may take it (...)'}))
        self.assertEqual(
            'stays: a bare-metal server moves with its node',
            pc.move_text({
                'method': 'stays', 'destination': None,
                'downtime': 'with the host',
                'reason': 'a bare-metal server moves with its node'}))


# -- time-sliced vGPU pools ---------------------------------------------------

VHOST = 'gpu-v'
PGPUS = ['0000:84:00.0', '0000:85:00.0']


def vgpu_pool(name, mdev_type, rc='VGPU', hosts=(VHOST,), properties=None):
    return {'name': name, 'mode': 'vgpu', 'vgpu_type': mdev_type,
            'mig_profile': None, 'resource_class': rc, 'hosts': list(hosts),
            'type_trait': ('CUSTOM_%s' % mdev_type.upper().replace('-', '_')
                           if rc == 'VGPU' else None),
            'metadata': {}, 'isolate': False, 'projects': [],
            'properties': dict(properties or {})}


def pgpu(address, total=4, rc='VGPU', traits=(), host=VHOST):
    device = vf(address, rc, traits, host=host)
    device['resources'] = {rc: total}
    return device


WS = vgpu_pool('ws', 'nvidia-35')
WS_DEVICES = [pgpu(a, traits=[WS['type_trait']]) for a in PGPUS]


class VgpuTypeMapTest(testtools.TestCase):
    def test_names_as_the_catalogue_spells_them(self):
        self.assertEqual({'A100D-20C': 'nvidia-35', 'A100D-40C': 'nvidia-36'},
                         pc.vgpu_type_map({'a100d-20c': 'nvidia-35',
                                           'A100D-40C': ' nvidia-36'}))
        self.assertEqual({}, pc.vgpu_type_map(None))

    def test_refusals(self):
        e = self.assertRaises(ValueError, pc.vgpu_type_map,
                              {'3g.40gb': 'nvidia-700'})
        self.assertIn('--mig-mdev-type 3g.40gb=nvidia-700', str(e))
        e = self.assertRaises(ValueError, pc.vgpu_type_map,
                              {'A100D-20C': 'nvidia-35',
                               'A100D-40C': 'nvidia-35'})
        self.assertIn('both A100D-20C and A100D-40C', str(e))
        self.assertRaises(catalogue.UnknownName, pc.vgpu_type_map,
                          {'V100-8Q': 'nvidia-1'})

    def test_a_vgpu_type_is_no_mig_mdev_type(self):
        e = self.assertRaises(ValueError, pc.check_mig_type_names,
                              {'3g.40gb': 'nvidia-700',
                               'A100D-20C': 'nvidia-35'})
        self.assertIn('--vgpu-mdev-type A100D-20C=<mdev type>', str(e))
        # MIG profiles, and names left to the plan, pass
        pc.check_mig_type_names({'3g.40gb': 'nvidia-700', 'x': 'y'})
        pc.check_mig_type_names(None)

    def test_model_of_a_type(self):
        self.assertEqual('A100-80GB', pc.vgpu_model('A100D-10C'))
        self.assertEqual('A100-40GB', pc.vgpu_model('A100-10C'))
        self.assertIsNone(pc.vgpu_model('1g.10gb'))


class VgpuProfilesTest(testtools.TestCase):
    def test_mapping_then_property(self):
        pools = {'ws': WS,
                 'big': vgpu_pool('big', 'nvidia-36', properties={
                     'vgpu_profile': 'a100d-40c'}),
                 'other': vgpu_pool('other', 'nvidia-37'),
                 'small': SMALL}
        found, notes = pc.vgpu_profiles(pools, {'A100D-20C': 'nvidia-35'})
        self.assertEqual({'ws': 'A100D-20C', 'big': 'A100D-40C'}, found)
        self.assertEqual([], notes)

    def test_bad_or_contradicted_property_is_said(self):
        pools = {'ws': vgpu_pool('ws', 'nvidia-35', properties={
                     'vgpu_profile': 'A100D-40C'}),
                 'odd': vgpu_pool('odd', 'nvidia-36', properties={
                     'vgpu_profile': '3g.40gb'})}
        found, notes = pc.vgpu_profiles(pools, {'A100D-20C': 'nvidia-35'})
        # the option wins over the property
        self.assertEqual({'ws': 'A100D-20C'}, found)
        self.assertEqual(2, len(notes), notes)
        self.assertIn('odd', notes[0])
        self.assertIn('planned as A100D-20C', notes[1])


class VgpuCardsTest(testtools.TestCase):
    def test_one_card_per_pgpu(self):
        allocations = {'u-' + PGPUS[1]: {'srv-1': {'VGPU': 1},
                                         'srv-2': {'VGPU': 1}}}
        cards, notes = pc.vgpu_cards(VHOST, WS_DEVICES, [WS],
                                     {'ws': 'A100D-20C'}, allocations)
        self.assertEqual([], notes)
        self.assertEqual(PGPUS, [c['address'] for c in cards])
        self.assertEqual(['%s %s' % (VHOST, a) for a in PGPUS],
                         [c['id'] for c in cards])
        for card in cards:
            self.assertEqual('A100-80GB', card['model'])
            self.assertEqual((('A100D-20C', None),) * 4, card['current'])
            self.assertIsNone(layouts.check_layout('A100-80GB',
                                                    card['current']))
        self.assertEqual((), cards[0]['in_use'])
        self.assertEqual((('A100D-20C', None),) * 2, cards[1]['in_use'])
        self.assertEqual({('A100D-20C', None): ['srv-1', 'srv-2']},
                         cards[1]['servers'])

    def test_total_not_the_tables_is_said(self):
        devices = [pgpu(PGPUS[0], total=8, traits=[WS['type_trait']])]
        cards, notes = pc.vgpu_cards(VHOST, devices, [WS],
                                     {'ws': 'A100D-20C'})
        # the catalogue's count is planned
        self.assertEqual(4, len(cards[0]['current']))
        self.assertEqual(1, len(notes))
        self.assertIn('Placement offers 8 vGPUs', notes[0])

    def test_per_type_class_pools(self):
        ws = vgpu_pool('ws', 'nvidia-35', rc='CUSTOM_A100D_20C')
        devices = [pgpu(PGPUS[0], rc='CUSTOM_A100D_20C'),
                   pgpu(PGPUS[1], rc='CUSTOM_OTHER')]
        cards, _notes = pc.vgpu_cards(VHOST, devices, [ws],
                                      {'ws': 'A100D-20C'})
        self.assertEqual([PGPUS[0]], [c['address'] for c in cards])

    def test_refusals(self):
        # the type is not known: the option and the property are named
        e = self.assertRaises(pc.CannotTell, pc.vgpu_cards, VHOST,
                              WS_DEVICES, [WS], {})
        self.assertIn('--vgpu-mdev-type <vGPU type>=nvidia-35', str(e))
        self.assertIn('--property vgpu_profile=', str(e))
        # --model of another GPU
        e = self.assertRaises(pc.CannotTell, pc.vgpu_cards, VHOST,
                              WS_DEVICES, [WS], {'ws': 'A100D-20C'},
                              model='H100-80GB')
        self.assertIn('not of H100-80GB', str(e))
        # more vGPUs in use than the type allows
        allocations = {'u-' + PGPUS[0]: {'s%d' % n: {'VGPU': 1}
                                         for n in range(3)}}
        self.assertRaises(ValueError, pc.vgpu_cards, VHOST, WS_DEVICES,
                          [WS], {'ws': 'A100D-40C'}, allocations)


def _vgpu_plan(demand, allocations=None, pools_profiles=None):
    cards, _notes = pc.vgpu_cards(VHOST, WS_DEVICES, [WS],
                                  pools_profiles or {'ws': 'A100D-20C'},
                                  allocations)
    rows, summary = pc.plan(cards, demand)
    return cards, rows, summary


class VgpuPlanTest(testtools.TestCase):
    def test_a_recut_is_a_change_of_type_on_the_idle_card(self):
        # servers on the second pGPU: the first one changes type
        allocations = {'u-' + PGPUS[1]: {'srv-1': {'VGPU': 1}}}
        cards, rows, summary = _vgpu_plan(
            {'A100D-20C': 3, 'A100D-40C': 2}, allocations)
        self.assertEqual([True, False], [r['recut'] for r in rows])
        self.assertEqual((('A100D-40C', None),) * 2, rows[0]['proposed'])
        self.assertEqual(0, summary['moves'])
        self.assertEqual(5, summary['met'])
        self.assertEqual([], pc.servers_to_move(cards[1], rows[1]))

    def test_servers_of_a_recut_card_must_leave(self):
        allocations = {'u-' + PGPUS[0]: {'srv-1': {'VGPU': 1}},
                       'u-' + PGPUS[1]: {'srv-2': {'VGPU': 1},
                                         'srv-3': {'VGPU': 1}}}
        cards, rows, summary = _vgpu_plan({'A100D-40C': 2}, allocations)
        # the card with fewer servers is re-cut: one server moves
        self.assertEqual([True, False], [r['recut'] for r in rows])
        self.assertEqual(1, summary['moves'])
        self.assertEqual(['srv-1'], pc.servers_to_move(cards[0], rows[0]))

    def test_mig_and_time_sliced_cards_are_planned_apart(self):
        mig_cards, _n = pc.cards(HOST, DEVICES, [LARGE, SMALL],
                                 model='A100-80GB')
        vgpu_cards, _n = pc.vgpu_cards(VHOST, WS_DEVICES, [WS],
                                       {'ws': 'A100D-20C'})
        cards = mig_cards + vgpu_cards
        # demand only a time-sliced type: the MIG card stays MIG; only
        # MIG profiles: the time-sliced cards stay time-sliced
        rows, summary = pc.plan(cards, {'A100D-10C': 24, '3g.40gb': 4})
        self.assertEqual([c['id'] for c in cards], [r['id'] for r in rows])
        self.assertEqual(['3g.40gb'], sorted({
            name for name, _s in rows[0]['proposed']}))
        for row in rows[1:]:
            self.assertEqual((('A100D-10C', None),) * 8, row['proposed'])
        self.assertEqual({'A100D-10C': (24, 16, 16), '3g.40gb': (4, 2, 2)},
                         summary['demand'])
        self.assertEqual((18, 28, 3), (summary['met'], summary['wanted'],
                                       summary['recut']))
        self.assertEqual(solver.objective(rows, {'A100D-10C': 24,
                                                   '3g.40gb': 4}),
                         (summary['met'], summary['recut'],
                          summary['moves']))
        # the same plan as one: one card's demand does not change the
        # other's (lexicographic optimum of each is that of the whole)
        alone, _s = pc.plan(vgpu_cards, {'A100D-10C': 24})
        self.assertEqual([r['proposed'] for r in alone],
                         [r['proposed'] for r in rows[1:]])

    def test_flavor_figures(self):
        allocations = {'u-' + PGPUS[1]: {'srv-1': {'VGPU': 1}}}
        cards, rows, _summary = _vgpu_plan({'A100D-40C': 2}, allocations)
        self.assertEqual({'f20': (7, 3), 'f40': (0, 2)}, pc.flavor_figures(
            cards, rows, {'f20': 'A100D-20C', 'f40': 'A100D-40C'}))

    def test_demand_of_a_vgpu_flavor(self):
        flavors = [{'name': 'ws.2', 'extra_specs': {
            'aggregate_instance_extra_specs:gpu_pool': 'ws',
            'resources:VGPU': '2', 'trait:CUSTOM_NVIDIA_35': 'required'}}]
        wanted, of_flavor = pc.profiles_wanted(
            {'ws.2': 3, 'A100D-40C': 1}, flavors, {'ws': WS},
            {'ws': 'A100D-20C'})
        self.assertEqual({'A100D-20C': 6, 'A100D-40C': 1}, wanted)
        self.assertEqual({'ws.2': 'A100D-20C'}, of_flavor)
        e = self.assertRaises(pc.CannotTell, pc.profiles_wanted, {'ws.2': 1},
                              flavors, {'ws': WS})
        self.assertIn('--vgpu-mdev-type', str(e))


def _recut_and_kept(rows):
    """[(address of the one re-cut pGPU, address of the one kept)]."""
    recut = [r['id'].split()[1] for r in rows if r['recut']]
    kept = [r['id'].split()[1] for r in rows if not r['recut']]
    return [(recut[0], kept[0])] if len(recut) == len(kept) == 1 else []


class VgpuProposedTest(testtools.TestCase):
    TARGET = nova_config.host_target(VHOST)

    def test_recut_pgpu_goes_to_the_pool_of_its_new_type(self):
        big = vgpu_pool('big', 'nvidia-36', hosts=())
        pools = {'ws': WS, 'big': big}
        profiles_of = {'ws': 'A100D-20C', 'big': 'A100D-40C'}
        cards, rows, _s = _vgpu_plan({'A100D-20C': 4, 'A100D-40C': 2},
                                     pools_profiles=profiles_of)
        # either idle card may change type: one does
        (recut, kept), = _recut_and_kept(rows)
        config, notes, unserved = pc.proposed_config(
            pools, {VHOST: WS_DEVICES}, cards, rows,
            vgpu_profiles=profiles_of)
        self.assertEqual({}, unserved)
        self.assertEqual(
            {'libvirt': POST_COPY_OFF,
             'devices': {'enabled_mdev_types': 'nvidia-35,nvidia-36'},
             'mdev_nvidia-35': {'device_addresses': kept},
             'mdev_nvidia-36': {'device_addresses': recut}},
            config.targets[self.TARGET])
        # big does not hold the host yet; the traits are moved by hand
        self.assertTrue(any('pool add host big' in n for n in notes[VHOST]),
                        notes)
        self.assertTrue(any('type traits' in n for n in notes[VHOST]),
                        notes)

    def test_a_type_no_pool_serves_is_left_out(self):
        cards, rows, _s = _vgpu_plan({'A100D-20C': 4, 'A100D-40C': 2})
        config, notes, unserved = pc.proposed_config(
            {'ws': WS}, {VHOST: WS_DEVICES}, cards, rows,
            vgpu_profiles={'ws': 'A100D-20C'})
        (recut, kept), = _recut_and_kept(rows)
        self.assertEqual({'%s %s' % (VHOST, recut): ['A100D-40C']},
                         unserved)
        self.assertEqual(
            {'libvirt': POST_COPY_OFF,
             'devices': {'enabled_mdev_types': 'nvidia-35'},
             'mdev_nvidia-35': {'device_addresses': kept}},
            config.targets[self.TARGET])

    def test_a_pool_record_of_its_trait_moves_too(self):
        # the pool tagged both pGPUs (gpu_tagged:<uuid>) and the traits
        # are gone: after the re-cut its record no longer counts the
        # re-cut pGPU
        ws = vgpu_pool('ws', 'nvidia-35')
        ws['metadata'] = {'gpu_tagged:u-%s' % a: ws['type_trait']
                          for a in PGPUS}
        big = vgpu_pool('big', 'nvidia-36')
        profiles_of = {'ws': 'A100D-20C', 'big': 'A100D-40C'}
        devices = [pgpu(a) for a in PGPUS]
        cards, _n = pc.vgpu_cards(VHOST, devices, [ws], profiles_of)
        rows, _s = pc.plan(cards, {'A100D-20C': 4, 'A100D-40C': 2})
        config, _notes, _u = pc.proposed_config(
            {'ws': ws, 'big': big}, {VHOST: devices}, cards, rows,
            vgpu_profiles=profiles_of)
        keys = config.targets[self.TARGET]
        (recut, kept), = _recut_and_kept(rows)
        self.assertEqual(kept, keys['mdev_nvidia-35']['device_addresses'])
        self.assertEqual(recut, keys['mdev_nvidia-36']['device_addresses'])
        # the caller's pools are not changed
        self.assertEqual(2, len(ws['metadata']))

    def test_per_type_classes(self):
        ws = vgpu_pool('ws', 'nvidia-35', rc='CUSTOM_A100D_20C')
        big = vgpu_pool('big', 'nvidia-36', rc='CUSTOM_A100D_40C')
        profiles_of = {'ws': 'A100D-20C', 'big': 'A100D-40C'}
        devices = [pgpu(a, rc='CUSTOM_A100D_20C') for a in PGPUS]
        cards, _n = pc.vgpu_cards(VHOST, devices, [ws], profiles_of)
        rows, _s = pc.plan(cards, {'A100D-40C': 4})
        config, notes, _u = pc.proposed_config(
            {'ws': ws, 'big': big}, {VHOST: devices}, cards, rows,
            vgpu_profiles=profiles_of)
        keys = config.targets[self.TARGET]
        self.assertEqual(
            {'libvirt': POST_COPY_OFF,
             'devices': {'enabled_mdev_types': 'nvidia-36'},
             'mdev_nvidia-36': {'device_addresses': ','.join(PGPUS),
                                'mdev_class': 'CUSTOM_A100D_40C'}}, keys)
        # ws leaves the host (said); no trait to move by hand
        self.assertTrue(any('Pool ws (nvidia-35, A100D-20C)' in n
                            for n in notes[VHOST]), notes)
        self.assertFalse(any('type traits' in n for n in notes[VHOST]))
