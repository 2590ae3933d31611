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

"""The vgpu-vf pool mode across the pure rules: flavors, nova.conf,
usage, drain and checks, with plain data (the pool as ``pools.scan``
reads it back from its aggregate)."""

import json
import types

from gpuclient.rules import document
from gpuclient.rules import maintenance
from gpuclient.rules import pools
from gpuclient.rules import specs
from gpuclient.rules import usage
from gpuclient.rules.checks import pools as pool_checks
from gpuclient.rules.nova_conf import parse
from gpuclient.rules.nova_conf import render as nova_config
from gpuclient.rules.scheduler import conf as nova_conf
from gpuclient.tests.unit import base

CLASS = 'CUSTOM_VGPU_L40S_24Q'
HOST = 'gpu-vf-1'
PF = '0000:a1:00.0'


def vf_pool(name='desktops', hosts=(HOST,), **kwargs):
    options = dict(vgpu_type='L40S-24Q', alias='l40s-24q',
                   pci_id='10de:26b9', live_migratable=True)
    options.update(kwargs)
    spec = pools.build_spec(name, pools.VGPU_VF, **options)
    return pools.pool_from_aggregate({
        'name': name, 'metadata': pools.metadata_for(spec),
        'hosts': list(hosts), 'id': 1, 'uuid': 'agg-' + name})


def pf_provider(total=2, address=PF):
    name = '%s_%s' % (HOST, address.upper())
    return {'uuid': 'rp-pf', 'name': name, 'root_name': HOST,
            'address': nova_config.pci_address(name, HOST),
            'resources': {CLASS: total}, 'traits': set()}


class TestFlavors(base.TestCase):
    def test_derived_specs_ask_for_the_alias(self):
        derived = specs.derive(vf_pool())
        self.assertEqual('l40s-24q:1',
                         derived['extra_specs']['pci_passthrough:alias'])
        self.assertEqual('preferred', derived['extra_specs'][
            'hw:pci_numa_affinity_policy'])
        self.assertNotIn('resources:%s' % CLASS, derived['extra_specs'])
        self.assertEqual([], derived['warnings'])
        two = specs.derive(vf_pool(), gpus=2)
        self.assertEqual('l40s-24q:2',
                         two['extra_specs']['pci_passthrough:alias'])
        self.assertIn('one physical GPU', two['warnings'][0])

    def test_a_hand_made_flavor_is_read_by_its_alias(self):
        pool = vf_pool()
        extra = {'pci_passthrough:alias': 'l40s-24q:1'}
        self.assertEqual(pools.VGPU_VF,
                         specs.read(extra, {'desktops': pool})['mode'])
        # without the pool it is a PCI device as any other
        self.assertEqual(pools.PASSTHROUGH, specs.read(extra, {})['mode'])


class TestNovaConf(base.TestCase):
    def test_vf_addresses_follow_nvidias_offset(self):
        self.assertEqual(['0000:a1:00.4', '0000:a1:00.5', '0000:a1:00.6',
                          '0000:a1:00.7', '0000:a1:01.0'],
                         nova_config.vf_addresses(PF, 5))
        self.assertEqual(['0000:3b:01.3'],
                         nova_config.vf_addresses('0000:3b:00.7', 1))
        self.assertEqual([], nova_config.vf_addresses('bad', 2))

    def lines(self, tree, **kwargs):
        pool = vf_pool(**kwargs)
        config = nova_config.build({'desktops': pool}, {HOST: tree})
        every = parse.parse_ini(nova_config.render_target(
            config, nova_config.ALL))
        host = parse.parse_ini(nova_config.render_target(
            config, nova_config.host_target(HOST)))
        return every, host

    def test_one_device_spec_per_typed_vf(self):
        every, host = self.lines([pf_provider(total=2)])
        self.assertEqual(
            [{'vendor_id': '10de', 'product_id': '26b9',
              'address': address, 'managed': 'no',
              'live_migratable': 'yes', 'resource_class': CLASS}
             for address in ('0000:a1:00.4', '0000:a1:00.5')],
            [json.loads(v) for v in host['pci']['device_spec']])
        self.assertEqual(['true'], host['pci']['report_in_placement'])
        self.assertEqual(['false'], host['libvirt'][
            'live_migration_permit_post_copy'])
        self.assertEqual(
            [{'name': 'l40s-24q', 'device_type': 'type-VF',
              'resource_class': CLASS, 'live_migratable': 'yes',
              'numa_policy': 'preferred'}],
            [json.loads(v) for v in every['pci']['alias']])
        self.assertEqual(['true'],
                         every['filter_scheduler']['pci_in_placement'])

    def test_not_live_migratable_and_no_provider_yet(self):
        every, host = self.lines([], live_migratable=False)
        self.assertEqual({'pci': {'report_in_placement': ['true']}}, host)
        self.assertNotIn('live_migratable',
                         json.loads(every['pci']['alias'][0]))
        config = nova_config.build({'desktops': vf_pool()}, {HOST: []})
        notes = ' '.join(config.notes[nova_config.host_target(HOST)])
        self.assertIn('no %s provider' % CLASS, notes)


class TestUsageAndServers(base.TestCase):
    def test_vf_vgpus_need_licence_seats(self):
        self.assertIn(pools.VGPU_VF, usage.SEAT_MODES)

    def test_device_label_names_the_card(self):
        self.assertEqual('VF of %s' % PF, usage.device_label(
            '%s_%s' % (HOST, PF.upper()), HOST, pools.VGPU_VF))


class TestDrain(base.TestCase):
    def server(self):
        return {'flavor': {'extra_specs': {
            'pci_passthrough:alias': 'l40s-24q:1',
            'aggregate_instance_extra_specs:gpu_pool': 'desktops'}}}

    def test_kind_and_pool_facts(self):
        found = {'desktops': vf_pool(hosts=(HOST, 'gpu-vf-2'))}
        self.assertEqual(pools.VGPU_VF,
                         maintenance.kind(self.server(), found))
        facts = maintenance.host_facts({}, [HOST, 'other'], found)
        self.assertEqual({'l40s-24q': True},
                         facts[HOST]['live_migratable'])
        self.assertEqual({'live_migratable'}, facts[HOST]['assumed'])
        self.assertEqual({}, facts['other'])
        # what the operator says wins, and is not assumed
        told = maintenance.host_facts(
            {HOST: {'live_migratable': False}}, [HOST], found)
        self.assertEqual({'live_migratable': False}, told[HOST])
        # a pool not made --live-migratable says nothing
        self.assertEqual({}, maintenance.pool_facts(
            {'d': vf_pool(live_migratable=False)}))

    def test_live_only_where_both_ends_qualify(self):
        good = {'nova': '2025.1', 'live_migratable': {'l40s-24q': True}}
        reasons, notes = maintenance.live_blockers(
            pools.VGPU_VF, (HOST, good), ('gpu-vf-2', good),
            aliases=['l40s-24q'])
        self.assertEqual([], reasons)
        self.assertIn('live_migration_permit_post_copy', notes[0])
        for bad in ({'nova': '2024.2', 'live_migratable': True},
                    {'nova': '2025.1', 'live_migratable': False},
                    {'nova': '2025.1'}):
            reasons, _notes = maintenance.live_blockers(
                pools.VGPU_VF, (HOST, good), ('gpu-vf-2', bad),
                aliases=['l40s-24q'])
            self.assertEqual(1, len(reasons), bad)


class TestCheck(base.TestCase):
    def findings(self, alias_line, pci_in_placement=True, **kwargs):
        cloud = types.SimpleNamespace(pools={'desktops': vf_pool(**kwargs)})
        conf = '[filter_scheduler]\npci_in_placement = %s\n' % (
            pci_in_placement)
        if alias_line:
            conf += '[pci]\nalias = %s\n' % alias_line
        return [(f.severity, f.object) for f in pool_checks.pool_vf_alias(
            cloud, nova_conf.load_settings(conf))]

    def test_the_alias_nova_needs(self):
        right = nova_config.alias_json(vf_pool())
        self.assertEqual([], self.findings(right))
        self.assertEqual([], pool_checks.pool_vf_alias(
            types.SimpleNamespace(pools={'d': vf_pool()}), None))
        self.assertEqual([('error', 'alias l40s-24q')], self.findings(None))
        self.assertEqual([('error', 'pci_in_placement')],
                         self.findings(right, pci_in_placement=False))
        for wrong in (
                '{"name": "l40s-24q", "device_type": "type-PCI", '
                '"resource_class": "%s"}' % CLASS,
                '{"name": "l40s-24q", "device_type": "type-VF", '
                '"resource_class": "CUSTOM_VGPU_L40S_12Q"}'):
            self.assertEqual([('error', 'alias l40s-24q')],
                             self.findings(wrong))
        not_live = ('{"name": "l40s-24q", "device_type": "type-VF", '
                    '"resource_class": "%s"}' % CLASS)
        self.assertEqual([('warning', 'alias l40s-24q')],
                         self.findings(not_live))
        self.assertEqual([], self.findings(not_live, live_migratable=False))


class TestDocument(base.TestCase):
    def test_export_check_and_written_form(self):
        pool = vf_pool()
        doc, _notes = document.from_cloud({'desktops': pool}, [], {}, [],
                                          {}, [])
        exported = doc['pools'][0]
        self.assertEqual(
            ('vgpu-vf', 'L40S-24Q', 'l40s-24q', '10de:26b9', CLASS, True),
            tuple(exported[k] for k in (
                'mode', 'vgpu_type', 'alias', 'pci_id', 'resource_class',
                'live_migratable')))
        written = document.written(doc)['pools'][0]
        # the class is the mode's own (CUSTOM_VGPU_<TYPE>): left out
        self.assertNotIn('resource_class', written)
        self.assertTrue(written['live_migratable'])
        checked = document.check({'version': 1, 'pools': [written]})
        self.assertEqual(exported, checked['pools'][0])
        # live_migratable cannot change in place: the pool is recreated
        self.assertIn('live_migratable',
                      document.RECREATE_FIELDS[document.POOL])
