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

"""VF-backed vGPU pools (``--mode vgpu-vf``) against a real cloud.

The test cloud's ``gpu-vf-1`` (tools/cloud/hosts.py) reports one L40S card
as libvirt does with NVIDIA's current vGPU driver: the PF and its VFs as
PCI devices; its ``[pci] device_spec`` lists the VFs that carry L40S-24Q
(``"managed": "no"``, ``"live_migratable": "yes"``, class
``CUSTOM_VGPU_L40S_24Q``) and the shared nova.conf has the ``type-VF``
alias ``l40s-24q``. Real Nova builds the Placement inventory from that,
schedules, claims and frees the VFs: the tests prove gpuclient's pool,
flavor, candidates, capacity, server list and nova.conf against what Nova
and Placement hold and do. ``gpu-vf-1`` is a spare: the boot test enables
it and disables it again.
"""

import json
import os
import shutil
import tempfile

from gpuclient.rules.nova_conf import parse
from gpuclient.tests.functional import base
from gpuclient.tests.functional import test_candidates
from gpuclient.tests.functional import test_config

VF_CLASS = 'CUSTOM_VGPU_%s' % base.VF_TYPE.upper().replace('-', '_')


class VgpuVfTestCase(test_candidates.CandidatesTestCase):
    def setUp(self):
        super().setUp()
        # the VF host for this test alone (base.host_lease)
        self.host_lease('vgpu-vf')

    def vf_pool(self, *options):
        return self.create_pool(
            '--mode', 'vgpu-vf', '--vgpu-type', base.VF_TYPE, '--alias',
            base.VF_ALIAS, '--pci-id', base.VF_PCI_ID, '--live-migratable',
            '--host', base.VF_HOST, *options)

    def vf_provider(self):
        """(uuid, total) of the VF host's provider of VF_CLASS (one card:
        PCI in Placement groups a PF's VFs under one provider)."""
        root = self.root_provider(base.VF_HOST)
        for rp in self.openstack('resource', 'provider', 'list',
                                 '--in-tree', root):
            inventory = {row['resource_class']: row for row in self.openstack(
                'resource', 'provider', 'inventory', 'list', rp['uuid'])}
            if VF_CLASS in inventory:
                return rp, inventory[VF_CLASS]['total']
        self.fail('%s offers no %s in Placement' % (base.VF_HOST, VF_CLASS))

    def running_conf(self):
        """The nova.conf the VF host's nova-compute runs with (ini as
        ``parse.parse_ini`` reads it); skips where the test cloud's
        files cannot be read."""
        etc = test_config.testcloud_etc()
        if etc is None:
            self.skipTest('not the local test cloud: its nova.conf files '
                          'cannot be read, so only Placement was compared')
        return test_config.read_ini(
            os.path.join(etc, 'nova.conf'),
            os.path.join(etc, 'nova-compute-%s.conf' % base.VF_HOST))

    # a boot the scheduler places (CandidatesTestCase.boot names a host)
    boot_anywhere = base.FunctionalTestCase.boot

    def capacity(self, flavor):
        """The one ``gpu capacity list --flavor FLAVOR`` row. On the test
        cloud with its nova.conf: the cloud is shared, and hand-made
        flavors of other tests may ask for aliases no pool describes."""
        etc = test_config.testcloud_etc()
        conf = ('--nova-conf', os.path.join(etc, 'nova.conf')) if etc else ()
        rows = self.openstack('gpu', 'capacity', 'list', '--flavor', flavor,
                              *conf)
        self.assertEqual(1, len(rows), rows)
        return rows[0]


class TestVgpuVfPool(VgpuVfTestCase):
    def test_pool_flavor_candidates_capacity_and_boots(self):
        self.use_spare(base.VF_HOST)
        pool = self.vf_pool()
        # the aggregate records the pool (read back with plain OSC)
        metadata = self.aggregate(pool['name'])['properties']
        self.assertEqual(
            {'gpu_pool_mode': 'vgpu-vf', 'gpu_vgpu_type': base.VF_TYPE,
             'gpu_alias': base.VF_ALIAS, 'gpu_pci_id': base.VF_PCI_ID,
             'gpu_resource_class': VF_CLASS,
             'gpu_live_migratable': 'true'},
            {k: metadata.get(k) for k in (
                'gpu_pool_mode', 'gpu_vgpu_type', 'gpu_alias', 'gpu_pci_id',
                'gpu_resource_class', 'gpu_live_migratable')})
        flavor = self.gpu_flavor(pool['name'])
        specs = self.openstack('flavor', 'show', flavor)['properties']
        self.assertEqual('%s:1' % base.VF_ALIAS,
                         specs['pci_passthrough:alias'])

        # gpu candidate list names the hosts Nova boots the flavor on
        hosts = (*test_candidates.ALL_HOSTS, base.VF_HOST)
        listed = self.hosts('--flavor', flavor)
        booted = {h for h in hosts if self.boots_on(flavor, h)}
        self.assertEqual({base.VF_HOST}, booted)
        self.assertEqual(booted, listed)

        # capacity predicts the boots: as many as the card has VFs of
        # the type, then Nova refuses one more
        provider, total = self.vf_provider()
        row = self.capacity(flavor)
        self.assertEqual((total, total, 0, total),
                         (row['Fits'], row['GPUs Total'], row['GPUs Used'],
                          row['GPUs Free']))
        servers = [self.boot_anywhere(flavor) for _ in range(total)]
        for server in servers:
            # one VF of the pool's class, from the card's provider
            self.assertEqual({VF_CLASS: 1}, {
                rc: n for rc, n in self.allocations(server['id']).items()
                if rc == VF_CLASS})
            self.assertEqual(base.VF_HOST,
                             server['OS-EXT-SRV-ATTR:host'])
        usages = {row['resource_class']: row['usage'] for row in
                  self.openstack('resource', 'provider', 'usage', 'show',
                                 provider['uuid'])}
        self.assertEqual(total, usages[VF_CLASS])
        row = self.capacity(flavor)
        self.assertEqual((0, total), (row['Fits'], row['GPUs Used']))
        refused = self.boot_anywhere(flavor, expect_status='ERROR')
        self.assertIn('No valid host', str(refused.get('fault')))

        # gpu server list: which card's VF each server holds
        rows = {r['ID']: r for r in self.openstack(
            'gpu', 'server', 'list', '--pool', pool['name'], '--long')}
        self.assertEqual({s['id'] for s in servers}, set(rows))
        card = provider['name'].rpartition('_')[2].lower()
        for row in rows.values():
            self.assertEqual(['VF of %s' % card], row['Devices'])
            self.assertEqual((base.VF_HOST, VF_CLASS, 'vgpu-vf'),
                             (row['Host'], row['Resource Class'],
                              row['Mode']))


class TestVgpuVfConfig(VgpuVfTestCase):
    def vf_findings(self, pool, nova_conf_path):
        """[(severity, object)] of gpu check's pool-vf-alias."""
        rc, out, err = self.openstack_raw(
            'gpu', 'check', '--check', 'pool-vf-alias', '--pool', pool,
            '--nova-conf', nova_conf_path, '-f', 'json')
        self.assertIn(rc, (0, 1), err)
        return [(f['Severity'], f['Object']) for f in json.loads(out)]

    def test_config_show_is_what_nova_runs_with(self):
        pool = self.vf_pool()
        rc, out, err = self.openstack_raw('gpu', 'config', 'show', '--pool',
                                          pool['name'])
        self.assertEqual(0, rc, err)
        shown = _sections(out)
        compute = shown['nova-compute on %s' % base.VF_HOST]
        every = shown['every Nova service']
        specs = compute['pci']['device_spec']
        # one device_spec per VF carrying the type, unmanaged,
        # live-migratable, in the pool's class; as many as Placement has
        _provider, total = self.vf_provider()
        self.assertEqual(total, len(specs))
        for spec in map(json.loads, specs):
            self.assertEqual(
                ('no', 'yes', VF_CLASS),
                (spec['managed'], spec['live_migratable'],
                 spec['resource_class']))
        self.assertEqual(['false'], compute['libvirt'][
            'live_migration_permit_post_copy'])
        alias = json.loads(every['pci']['alias'][0])
        self.assertEqual(('type-VF', VF_CLASS, 'yes'), (
            alias['device_type'], alias['resource_class'],
            alias['live_migratable']))

        # gpu check judges a nova.conf by the pool: the controller part
        # of config show passes, one without the alias is an error
        conf = tempfile.NamedTemporaryFile('w', suffix='.conf',
                                           delete=False)
        self.addCleanup(os.unlink, conf.name)
        with conf:
            conf.write(out.split('# gpuclient: nova-scheduler')[0])
        self.assertEqual([], self.vf_findings(pool['name'], conf.name))
        with open(conf.name, 'w') as bare:
            bare.write('[filter_scheduler]\npci_in_placement = true\n')
        self.assertEqual([('error', 'alias %s' % base.VF_ALIAS)],
                         self.vf_findings(pool['name'], conf.name))

        # the lines are those the VF host's nova-compute runs with (its
        # inventory above is Nova's reading of them)
        running = self.running_conf()
        self.assertEqual(_canonical(specs),
                         _canonical(running['pci']['device_spec']))
        aliases = {json.loads(a)['name']: json.loads(a)
                   for a in running['pci']['alias']}
        # (numa_policy: gpuclient writes the flavors' policy on the alias)
        alias.pop('numa_policy', None)
        self.assertEqual(alias, aliases[base.VF_ALIAS])
        # (Nova's own option parsing of these lines: the differential
        # gpuclient.tests.unit.test_nova_config_nova, vgpu-vf cases)


class TestVgpuVfReserved(VgpuVfTestCase):
    def reserve(self, provider, count):
        """Reserve COUNT VFs of PROVIDER in Placement as an operator does
        (osc-placement, the other fields kept); put back at cleanup. Nova
        leaves an operator's reserved alone (pci_placement_translator:
        only a one-time-use device is reserved by Nova)."""
        before = {row['resource_class']: row for row in self.openstack(
            'resource', 'provider', 'inventory', 'list', provider)}[VF_CLASS]
        self.addCleanup(
            self.openstack, 'resource', 'provider', 'inventory', 'set',
            provider, '--amend', '--resource',
            '%s:reserved=%d' % (VF_CLASS, before['reserved']))
        self.openstack('resource', 'provider', 'inventory', 'set', provider,
                       '--amend', '--resource',
                       '%s:reserved=%d' % (VF_CLASS, count))

    def test_a_reserved_vf_keeps_its_device_spec(self):
        """Issue 51 defect 6: with one VF reserved in Placement, gpu config
        show still writes a device_spec per VF of the inventory's total
        (before: one less, and one less again after each redeploy)."""
        pool = self.vf_pool()
        provider, _total = self.vf_provider()
        self.reserve(provider['uuid'], 1)
        held = {row['resource_class']: row for row in self.openstack(
            'resource', 'provider', 'inventory', 'list', provider['uuid'])}
        total, reserved = held[VF_CLASS]['total'], held[VF_CLASS]['reserved']
        self.assertEqual(1, reserved)
        rc, out, err = self.openstack_raw('gpu', 'config', 'show', '--pool',
                                          pool['name'])
        self.assertEqual(0, rc, err)
        specs = _sections(out)['nova-compute on %s' % base.VF_HOST][
            'pci']['device_spec']
        self.assertEqual(total, len(specs), out)
        # the very lines the VF host's nova-compute runs with
        running = self.running_conf()
        self.assertEqual(_canonical(running['pci']['device_spec']),
                         _canonical(specs))


class TestVgpuVfProfilePlan(VgpuVfTestCase):
    def test_plan_writes_the_lines_nova_runs_with(self):
        pool = self.vf_pool()
        _provider, total = self.vf_provider()
        out_dir = os.path.join(tempfile.mkdtemp(), 'plan')
        self.addCleanup(shutil.rmtree, os.path.dirname(out_dir))
        rows = self.openstack(
            'gpu', 'profile', 'plan', '--pool', pool['name'], '--demand',
            '%s=%d' % (base.VF_TYPE, total), '--output-dir', out_dir)
        layout = '%s x%d' % (base.VF_TYPE, total)
        self.assertEqual([(base.VF_HOST, layout, layout)],
                         [(r['Host'], r['VFs Now'], r['VFs Proposed'])
                          for r in rows])
        # the card keeps its type: the script only makes sure of it (as
        # at boot, where its unit runs it before nova-compute)
        with open(rows[0]['Script']) as f:
            script = f.read()
        self.assertEqual(total, script.count('\nkeep_type '))
        self.assertNotIn('\nset_type ', script)
        with open(rows[0]['Unit']) as f:
            self.assertIn('Before=nova-compute.service', f.read())
        with open(rows[0]['Nova Conf']) as f:
            planned = parse.parse_ini(f.read(), 'plan')
        # one device_spec per VF Placement counts
        self.assertEqual(total, len(planned['pci']['device_spec']))
        running = self.running_conf()
        self.assertEqual(_canonical(running['pci']['device_spec']),
                         _canonical(planned['pci']['device_spec']))


def _canonical(values):
    return sorted(json.dumps(json.loads(v), sort_keys=True) for v in values)


def _sections(text):
    """{target: {section: {key: [values]}}} of ``gpu config show``'s ini
    (one "# gpuclient: <target>" heading per target)."""
    parts, name, lines = {}, None, []
    for line in text.splitlines() + ['# gpuclient: (end)']:
        if line.startswith('# gpuclient: '):
            if name:
                parts[name] = parse.parse_ini('\n'.join(lines), name)
            name, lines = line[len('# gpuclient: '):].strip(), []
        else:
            lines.append(line)
    return parts
