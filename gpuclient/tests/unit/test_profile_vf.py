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

"""rules.profiles.vf: the vGPU types of vgpu-vf cards' VFs, with plain data
(pools as ``pools.scan`` reads them back, providers as
``nova_config.trees_from_snapshot`` gives them), and the script it writes
run against a fake sysfs."""

import json
import os
import subprocess

import fixtures

from gpuclient.rules.nova_conf import parse
from gpuclient.rules.nova_conf import render as nova_config
from gpuclient.rules.profiles import vf as profile_vf
from gpuclient.tests.unit import base
from gpuclient.tests.unit import test_vgpu_vf

HOST = 'gpu-vf-1'
PFS = ('0000:a1:00.0', '0000:c1:00.0')


def vf_pool(name, vgpu_type):
    """A live-migratable L40S pool of VGPU_TYPE (alias: its name)."""
    return test_vgpu_vf.vf_pool(name, vgpu_type=vgpu_type,
                                alias=vgpu_type.lower())


def pf(address, resources, uuid=None):
    name = '%s_%s' % (HOST, address.upper())
    return {'uuid': uuid or 'rp-' + address, 'name': name,
            'root_name': HOST, 'address': nova_config.pci_address(name, HOST),
            'resources': dict(resources), 'traits': set()}


def setting():
    """Two L40S pools (24Q and 12Q), two cards both 24Q x2 now."""
    big, small = vf_pool('big', 'L40S-24Q'), vf_pool('small', 'L40S-12Q')
    types = profile_vf.pool_types([big, small])
    devices = [pf(a, {big['resource_class']: 2}) for a in PFS]
    return big, small, types, devices


class TestTypes(base.TestCase):
    def test_catalogue_and_other_series(self):
        self.assertEqual(('H100XM-20C', 20, 4, 'H100-SXM5-80GB'),
                         tuple(profile_vf.vgpu('h100xm-20c')))
        # the Q-series type of a C type's size: same board and count
        self.assertEqual(('L40S-24Q', 24, 2, 'L40S'),
                         tuple(profile_vf.vgpu('L40S-24Q')))
        for unknown in ('L40S-2Q', 'L40S-24', 'nvidia-35', ''):
            self.assertIsNone(profile_vf.vgpu(unknown), unknown)

    def test_pool_types_refusals(self):
        self.assertRaises(profile_vf.CannotPlan, profile_vf.pool_types,
                          [vf_pool('odd', 'L40S-2Q')])
        e = self.assertRaises(profile_vf.CannotPlan, profile_vf.pool_types,
                              [vf_pool('a', 'L40S-24Q'),
                               vf_pool('b', 'l40s-24q')])
        self.assertIn('both serve L40S-24Q', str(e))

    def test_demand_from_flavors_and_names(self):
        big, small, types, _devices = setting()
        found = {'big': big, 'small': small}
        flavor = {'name': 'desk-2', 'extra_specs': {
            'pci_passthrough:alias': 'l40s-12q:2'}}
        self.assertEqual({'L40S-12Q': 5, 'L40S-24Q': 1},
                         profile_vf.wanted(
                             {'desk-2': 2, 'l40s-12q': 1, 'L40S-24Q': 1},
                             [flavor], found, types))
        for bad in ('L40S-8Q', 'H100XM-20C', 'nope'):
            self.assertRaises(profile_vf.CannotPlan, profile_vf.wanted,
                              {bad: 1}, [], found, types)


class TestPlan(base.TestCase):
    def cards(self, used=None):
        _big, _small, types, devices = setting()
        return types, profile_vf.host_cards(HOST, devices, types, used)

    def test_cards_from_placement(self):
        types, cards = self.cards({'rp-' + PFS[1]: {
            'CUSTOM_VGPU_L40S_24Q': 1, 'VCPU': 4}})
        self.assertEqual(
            [(HOST + '/' + a, a, 'L40S', {'L40S-24Q': 2}, n)
             for a, n in zip(PFS, (0, 1), strict=True)],
            [(c['id'], c['address'], c['board'], c['current'], c['in_use'])
             for c in cards])
        # a provider of no planned class is no card
        other = pf('0000:e1:00.0', {'CUSTOM_PCI_10DE_2331': 1})
        self.assertEqual([], profile_vf.host_cards(HOST, [other], types))

    def test_the_idle_card_changes_type(self):
        _types, cards = self.cards({'rp-' + PFS[1]: {
            'CUSTOM_VGPU_L40S_24Q': 1}})
        rows, summary = profile_vf.plan(cards, {'L40S-12Q': 4})
        # the card in use keeps its type though nobody asks for it
        self.assertEqual([{'L40S-12Q': 4}, {'L40S-24Q': 2}],
                         [r['proposed'] for r in rows])
        self.assertEqual([True, False], [r['recut'] for r in rows])
        self.assertEqual([{'L40S-12Q': 4}, {}], [r['serves'] for r in rows])
        self.assertEqual({'L40S-12Q': (4, 4, 4)}, summary['demand'])
        self.assertEqual((4, 4, 1), (summary['wanted'], summary['met'],
                                     summary['recut']))

    def test_a_card_keeps_a_wanted_type(self):
        _types, cards = self.cards()
        rows, summary = profile_vf.plan(
            cards, {'L40S-24Q': 1, 'L40S-12Q': 8})
        # the first card keeps 24Q (wanted); the second takes 12Q, and
        # one card cannot hold all 8
        self.assertEqual([{'L40S-24Q': 2}, {'L40S-12Q': 4}],
                         [r['proposed'] for r in rows])
        self.assertEqual({'L40S-24Q': (1, 2, 1), 'L40S-12Q': (8, 4, 4)},
                         summary['demand'])
        self.assertEqual((9, 5, 1), (summary['wanted'], summary['met'],
                                     summary['recut']))

    def test_no_demand_no_change(self):
        _types, cards = self.cards()
        rows, summary = profile_vf.plan(cards, {})
        self.assertEqual([False, False], [r['recut'] for r in rows])
        self.assertEqual(0, summary['recut'])

    def test_a_type_of_another_board_is_not_put_on_the_card(self):
        _types, cards = self.cards()
        rows, summary = profile_vf.plan(cards, {'H100XM-20C': 4})
        self.assertEqual([{'L40S-24Q': 2}] * 2,
                         [r['proposed'] for r in rows])
        self.assertEqual({'H100XM-20C': (4, 0, 0)}, summary['demand'])


class TestFiles(base.TestCase):
    def planned(self):
        _big, _small, types, devices = setting()
        cards = profile_vf.host_cards(HOST, devices, types)
        rows, _summary = profile_vf.plan(cards, {'L40S-24Q': 2,
                                                 'L40S-12Q': 4})
        return types, rows

    def test_device_spec_per_vf_as_config_show_renders_it(self):
        types, rows = self.planned()
        self.assertEqual(
            [('0000:a1:00.4', 'L40S-24Q'), ('0000:a1:00.5', 'L40S-24Q')],
            profile_vf.vf_types(rows[0]))
        self.assertEqual(['0000:c1:00.%d' % n for n in (4, 5, 6, 7)],
                         [a for a, _t in profile_vf.vf_types(rows[1])])
        target = nova_config.host_target(HOST)
        host = parse.parse_ini(nova_config.render_target(
            profile_vf.host_config(HOST, rows, types), target))
        # gpu config show, with the cloud as it is after the plan (each
        # card's provider offering its new type's VFs), renders the same
        after = [pf(r['address'], {types[t]['resource_class']: n
                                   for t, n in r['proposed'].items()})
                 for r in rows]
        shown = parse.parse_ini(nova_config.render_target(
            nova_config.build({p['name']: p for p in types.values()},
                              {HOST: after}), target))
        self.assertEqual(shown['pci'], host['pci'])
        self.assertEqual(shown['libvirt'], host['libvirt'])
        specs = [json.loads(s) for s in host['pci']['device_spec']]
        self.assertEqual(6, len(specs))
        self.assertEqual({'managed': 'no', 'live_migratable': 'yes',
                          'resource_class': 'CUSTOM_VGPU_L40S_12Q',
                          'address': '0000:c1:00.4', 'vendor_id': '10de',
                          'product_id': '26b9'}, specs[2])
        self.assertEqual(['false'],
                         host['libvirt']['live_migration_permit_post_copy'])

    def test_unit_runs_before_nova_compute(self):
        text = profile_vf.unit(HOST, '/usr/local/sbin/x.sh')
        for line in ('Before=nova-compute.service', 'Type=oneshot',
                     'ExecStart=/usr/local/sbin/x.sh',
                     'After=nvidia-vgpu-mgr.service'):
            self.assertIn(line + '\n', text)

    def sysfs(self, root, vfs, creatable):
        for vf in vfs:
            path = os.path.join(root, vf, 'nvidia')
            os.makedirs(path)
            with open(os.path.join(path, 'creatable_vgpu_types'), 'w') as f:
                f.write(creatable)
            with open(os.path.join(path, 'current_vgpu_type'), 'w') as f:
                f.write('0\n')

    def run_script(self, rows, creatable, typed=()):
        """The host's script against a fake sysfs and sriov-manage:
        (exit status, stderr, {VF: current_vgpu_type}, sriov-manage
        calls)."""
        root = self.useFixture(fixtures.TempDir()).path
        sysfs = os.path.join(root, 'sys')
        vfs = [a for r in rows for a, _t in profile_vf.vf_types(r)]
        self.sysfs(sysfs, vfs, creatable)
        for vf, type_id in typed:
            with open(os.path.join(sysfs, vf, 'nvidia',
                                   'current_vgpu_type'), 'w') as f:
                f.write(type_id + '\n')
        log = os.path.join(root, 'calls')
        manage = os.path.join(root, 'sriov-manage')
        with open(manage, 'w') as f:
            f.write('#!/bin/sh\necho "$@" >> %s\n' % log)
        os.chmod(manage, 0o755)
        text = profile_vf.script(HOST, rows).replace(
            profile_vf.SYSFS, sysfs).replace(profile_vf.SRIOV_MANAGE, manage)
        done = subprocess.run(['bash', '-c', text], capture_output=True,
                              text=True, check=False)
        current = {}
        for vf in vfs:
            with open(os.path.join(sysfs, vf, 'nvidia',
                                   'current_vgpu_type')) as f:
                current[vf] = f.read().strip()
        calls = open(log).read().split('\n') if os.path.exists(log) else []
        return done.returncode, done.stderr, current, [c for c in calls if c]

    def test_script_writes_the_ids_it_reads_by_name(self):
        _types, rows = self.planned()
        creatable = ('ID    : vGPU Name\n1155  : NVIDIA L40S-24Q\n'
                     '1157  : NVIDIA L40S-12Q\n')
        status, err, current, calls = self.run_script(rows, creatable)
        self.assertEqual(0, status, err)
        self.assertEqual(['-e ' + a for a in PFS], calls)
        self.assertEqual(['1155'] * 2 + ['1157'] * 4,
                         [current[a] for r in rows
                          for a, _t in profile_vf.vf_types(r)])

    def test_script_leaves_the_typed_vfs_of_a_kept_card(self):
        _types, rows = self.planned()
        self.assertEqual([False, True], [r['recut'] for r in rows])
        # the kept card's VFs have their type (one in use): left alone;
        # the re-typed card's VFs had the old type: cleared and set
        typed = [('0000:a1:00.4', '1155'), ('0000:a1:00.5', '1155'),
                 ('0000:c1:00.4', '1155')]
        status, err, current, _calls = self.run_script(
            rows, 'ID    : vGPU Name\n1157  : NVIDIA L40S-12Q\n', typed)
        self.assertEqual(0, status, err)
        self.assertEqual(['1155', '1155', '1157', '1157', '1157', '1157'],
                         [current[a] for r in rows
                          for a, _t in profile_vf.vf_types(r)])

    def test_script_stops_on_a_type_the_driver_does_not_offer(self):
        _types, rows = self.planned()
        status, err, current, _calls = self.run_script(
            rows, 'ID    : vGPU Name\n1155  : NVIDIA L40S-24Q\n')
        self.assertNotEqual(0, status)
        self.assertIn('L40S-12Q is not among its creatable_vgpu_types', err)
        self.assertEqual('0', current['0000:c1:00.4'])
