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

"""``openstack gpu pool ...`` against a real cloud.

What the commands did is read back with plain OSC commands (``aggregate
show``, ``resource provider trait list``, ``resource provider aggregate
list``), and isolation and project limits are proven by Nova itself:
``server create --host H`` (compute API 2.74) still runs Placement and every
scheduler filter for H.
"""

import json

from gpuclient.rules import pools
from gpuclient.tests.functional import base

PCI_CLASS = 'CUSTOM_PCI_10DE_2331'
TRAITS_API = base.PLACEMENT_TRAITS
AGG_API = ('--os-placement-api-version', '1.19')


class PoolTestCase(base.FunctionalTestCase):
    def children(self, host):
        root = self.root_provider(host)
        return [rp['uuid'] for rp in self.openstack(
            'resource', 'provider', 'list', '--in-tree', root)
            if rp['uuid'] != root]

    def pci_capacity(self, host, resource_class=PCI_CLASS):
        """Placement's capacity of RESOURCE_CLASS in HOST's tree."""
        total = 0
        for rp in self.children(host):
            for inv in self.openstack('resource', 'provider', 'inventory',
                                      'list', rp):
                if inv['resource_class'] == resource_class:
                    total += int((inv['total'] - inv['reserved'])
                                 * inv['allocation_ratio'])
        return total

    def create_pool(self, *args):
        name = self.unique_name('pool')
        pool = self.openstack('gpu', 'pool', 'create', name, *args)
        self.addCleanup(self.delete_pool, name)
        return pool


class TestPoolModes(PoolTestCase):
    @base.needs('passthrough')
    def test_passthrough_isolated(self):
        pool = self.create_pool('--mode', 'passthrough', '--alias', 'h100',
                                '--pci-id', '10de:2331', '--host',
                                base.PT_HOST, '--isolate')
        trait = pool['isolation_trait']
        self.assertEqual('CUSTOM_GPU_POOL_' + pool['name'].upper().replace(
            '-', '_'), trait)
        agg = self.aggregate(pool['name'])
        self.assertEqual([base.PT_HOST], agg['hosts'])
        self.assertEqual({
            'gpu_pool': pool['name'], 'gpu_pool_mode': 'passthrough',
            'gpu_resource_class': PCI_CLASS, 'gpu_alias': 'h100',
            'gpu_pci_id': '10de:2331', 'trait:%s' % trait: 'required',
        }, agg['properties'])
        root = self.root_provider(base.PT_HOST)
        self.assertIn(trait, self.traits(root))
        # Nova mirrored the membership into Placement
        aggs = self.openstack(*AGG_API, 'resource', 'provider', 'aggregate',
                              'list', root)
        self.assertIn(agg['uuid'], [a['uuid'] for a in aggs])
        # the PCI device providers keep Nova's traits only
        for child in self.children(base.PT_HOST):
            self.assertNotIn(trait, self.traits(child))

        rc, out, err = self.openstack_raw('gpu', 'pool', 'show',
                                          pool['name'], '-f', 'json')
        self.assertEqual(0, rc, err)
        shown = json.loads(out)
        self.assertEqual([], shown['drift'])
        # the limits of isolation are said on stderr, not in the data
        self.assertNotIn('notes', shown)
        self.assertIn('Glance property protections', err)
        # per-host GPU figures are numbers, as Placement counts them
        figures = shown['gpus'][base.PT_HOST]
        self.assertEqual(['total', 'used', 'free'], list(figures))
        self.assertEqual(figures['total'], figures['used'] + figures['free'])
        self.assertEqual(self.pci_capacity(base.PT_HOST), figures['total'])

        # isolation off and on again, read back from Placement; set prints
        # nothing, as openstack aggregate set does
        self.assertEqual('', self.openstack(
            'gpu', 'pool', 'set', pool['name'], '--no-isolate',
            parse=False))
        self.assertNotIn(trait, self.traits(root))
        self.assertNotIn('trait:%s' % trait,
                         self.aggregate(pool['name'])['properties'])
        self.assertEqual('', self.openstack(
            'gpu', 'pool', 'set', pool['name'], '--isolate', parse=False))
        self.assertIn(trait, self.traits(root))

        # drift: take the trait off by hand, pool show notices
        keep = sorted(self.traits(root) - {trait})
        args = []
        for t in keep:
            args += ['--trait', t]
        self.openstack(*TRAITS_API, 'resource', 'provider', 'trait', 'set',
                       *args, root)
        shown = self.openstack('gpu', 'pool', 'show', pool['name'])
        self.assertEqual([{
            'host': base.PT_HOST, 'problem': 'missing_isolation_trait',
            'provider': self.openstack('resource', 'provider', 'show',
                                       root)['name'],
            'trait': trait,
            'fix': 'openstack gpu pool set %s --isolate' % pool['name']}],
            shown['drift'])

        # delete --force leaves no trait and no aggregate behind
        self.openstack('gpu', 'pool', 'set', pool['name'], '--isolate',
                       parse=False)
        self.openstack('gpu', 'pool', 'delete', '--force', pool['name'],
                       parse=False)
        self.assertNotIn(trait, self.traits(root))
        rc, _out, _err = self.openstack_raw('aggregate', 'show',
                                            pool['name'])
        self.assertEqual(1, rc)
        self.assertNotIn(trait, [t['name'] for t in self.openstack(
            'trait', 'list')])

    @base.needs('vgpu')
    def test_vgpu_add_remove_host(self):
        pool = self.create_pool('--mode', 'vgpu', '--vgpu-type',
                                'nvidia-35')
        self.assertEqual('CUSTOM_NVIDIA_35', pool['type_trait'])
        self.openstack('gpu', 'pool', 'add', 'host', pool['name'],
                       base.VGPU_HOST)
        pgpus = self.children(base.VGPU_HOST)
        self.assertEqual(2, len(pgpus))
        for rp in pgpus:
            self.assertIn('CUSTOM_NVIDIA_35', self.traits(rp))
        # re-adding is safe; another type on the same pGPUs is refused
        self.openstack('gpu', 'pool', 'add', 'host', pool['name'],
                       base.VGPU_HOST)
        rc, _out, err = self.openstack_raw(
            'gpu', 'pool', 'create', self.unique_name('other'), '--mode',
            'vgpu', '--vgpu-type', 'nvidia-36', '--host', base.VGPU_HOST)
        self.assertEqual(1, rc)
        self.assertIn('one vGPU type per physical GPU', err)
        self.openstack('gpu', 'pool', 'remove', 'host', pool['name'],
                       base.VGPU_HOST)
        self.assertEqual([], self.aggregate(pool['name'])['hosts'])
        for rp in pgpus:
            self.assertNotIn('CUSTOM_NVIDIA_35', self.traits(rp))

    @base.needs('vgpu')
    def test_remove_a_host_with_servers_of_the_pool_refused(self):
        # a pool of one host, a flavor steered to it only, a server there:
        # taking the host out would strand it
        pool = self.create_pool('--mode', 'vgpu', '--vgpu-type',
                                'nvidia-35', '--host', base.VGPU_HOST)
        flavor = self.make_flavor(pool['name'])
        server = self.boot(flavor)
        rc, _out, err = self.openstack_raw('gpu', 'pool', 'remove', 'host',
                                           pool['name'], base.VGPU_HOST)
        self.assertEqual(1, rc, err)
        self.assertIn(server['id'], err)
        self.assertIn('of flavor %s' % flavor, err)
        self.assertIn('openstack gpu host drain %s' % base.VGPU_HOST, err)
        self.assertIn('--allow-servers', err)
        # what Nova holds: the host is still in the pool's aggregate
        self.assertEqual([base.VGPU_HOST],
                         self.aggregate(pool['name'])['hosts'])

    @base.needs('mig', 'baremetal')
    def test_mig_and_baremetal(self):
        mig = self.create_pool('--mode', 'mig', '--mig-profile', '3g.40gb',
                               '--host', base.MIG_HOST)
        for rp in self.children(base.MIG_HOST):
            self.assertIn('CUSTOM_MIG_3G_40GB', self.traits(rp))
        bm = self.create_pool('--mode', 'baremetal', '--resource-class',
                              'baremetal.gpu-h100', '--host', base.BM_HOST)
        self.assertEqual('CUSTOM_BAREMETAL_GPU_H100', bm['resource_class'])
        self.assertIsNone(bm['isolation_trait'])
        listed = {p['Name']: p for p in self.openstack(
            'gpu', 'pool', 'list', '--long')}
        self.assertEqual(7, listed[mig['name']]['GPUs Total'])
        # the bare-metal host serves 2 Ironic nodes: one GPU server each
        self.assertEqual(2, listed[bm['name']]['GPUs Total'])
        only = self.openstack('gpu', 'pool', 'list', '--mode', 'mig')
        self.assertIn(mig['name'], [p['Name'] for p in only])
        self.assertNotIn(bm['name'], [p['Name'] for p in only])
        # ordinary aggregates are not pools
        plain = self.unique_name('agg')
        self.openstack('aggregate', 'create', plain)
        self.addCleanup(self.openstack, 'aggregate', 'delete', plain,
                        parse=False)
        self.assertNotIn(plain, [p['Name'] for p in self.openstack(
            'gpu', 'pool', 'list')])

    @base.needs('mig')
    def test_create_is_idempotent(self):
        args = ('--mode', 'mig', '--mig-profile', '1g.10gb', '--host',
                base.MIG_HOST)
        pool = self.create_pool(*args)
        before = self.aggregate(pool['name'])
        rc, out, err = self.openstack_raw('gpu', 'pool', 'create',
                                          pool['name'], *args, '-f', 'json')
        self.assertEqual(0, rc, err)
        self.assertIn('nothing changed', err)
        self.assertEqual(pool['name'], json.loads(out)['name'])
        self.assertEqual(before, self.aggregate(pool['name']))


class TestPoolZone(PoolTestCase):
    """``gpu pool set --zone``, proven by ``openstack aggregate show``."""

    def zone(self, name):
        return self.aggregate(name)['availability_zone']

    def test_set_then_change_zone(self):
        pool = self.create_pool('--mode', 'mig', '--mig-profile', '1g.10gb')
        rc, out, err = self.openstack_raw('gpu', 'pool', 'set',
                                          pool['name'], '--zone', 'ft-az1')
        self.assertEqual((0, ''), (rc, out), err)
        self.assertEqual('ft-az1', self.zone(pool['name']))
        rc, _out, err = self.openstack_raw('gpu', 'pool', 'set',
                                           pool['name'], '--zone', 'ft-az2')
        self.assertEqual(0, rc, err)
        self.assertEqual('ft-az2', self.zone(pool['name']))
        self.assertEqual('ft-az2', self.openstack(
            'gpu', 'pool', 'show', pool['name'])['zone'])

    def test_same_zone_is_nothing_to_do(self):
        pool = self.create_pool('--mode', 'mig', '--mig-profile', '1g.10gb',
                                '--zone', 'ft-az1')
        before = self.aggregate(pool['name'])
        rc, out, err = self.openstack_raw('gpu', 'pool', 'set',
                                          pool['name'], '--zone', 'ft-az1',
                                          '--dry-run')
        self.assertEqual(0, rc, err)
        self.assertIn('nothing to do', out)
        self.assertEqual(before, self.aggregate(pool['name']))

    def test_dry_run_changes_nothing(self):
        pool = self.create_pool('--mode', 'mig', '--mig-profile', '1g.10gb')
        before = self.aggregate(pool['name'])
        rc, out, err = self.openstack_raw('gpu', 'pool', 'set',
                                          pool['name'], '--zone', 'ft-az1',
                                          '--dry-run')
        self.assertEqual(0, rc, err)
        self.assertIn('1. put host aggregate %s in availability zone ft-az1 '
                      '(not undone on failure)' % pool['name'], out)
        self.assertEqual(before, self.aggregate(pool['name']))

    @base.needs('passthrough')
    def test_host_in_another_zone_refused_before_any_write(self):
        # puts PT_HOST in zone ft-zone-a for the test (as TestPoolBadInput)
        pool = self.create_pool('--mode', 'passthrough', '--alias', 'h100',
                                '--pci-id', '10de:2331', '--host',
                                base.PT_HOST)
        ordinary = self.unique_name('agg')
        self.openstack('aggregate', 'create', '--zone', 'ft-zone-a',
                       ordinary)
        self.addCleanup(self.openstack, 'aggregate', 'delete', ordinary,
                        parse=False)
        self.openstack('aggregate', 'add', 'host', ordinary, base.PT_HOST)
        self.addCleanup(self.openstack, 'aggregate', 'remove', 'host',
                        ordinary, base.PT_HOST)
        before = self.aggregate(pool['name'])
        rc, _out, err = self.openstack_raw('gpu', 'pool', 'set',
                                           pool['name'], '--zone',
                                           'ft-zone-b')
        self.assertEqual(1, rc, err)
        self.assertIn('Host %s is in availability zone ft-zone-a (aggregate '
                      '%s)' % (base.PT_HOST, ordinary), err)
        self.assertEqual(before, self.aggregate(pool['name']))


class TestPoolScheduling(PoolTestCase):
    """Nova, not metadata, proves isolation and project limits."""

    def boot_on(self, flavor, host, cloud=None, expect='ACTIVE'):
        name = self.unique_name('server')
        args = ['--os-compute-api-version', '2.74', 'server', 'create',
                '--flavor', flavor, '--image', base.IMAGE, '--nic', 'none',
                '--wait']
        if host:
            args += ['--host', host]
        args.append(name)
        rc, out, err = self.openstack_raw(*args, cloud=cloud)
        self.addCleanup(self.openstack_raw, 'server', 'delete', '--wait',
                        name, cloud=cloud)
        server = self.openstack('server', 'show', name, cloud=cloud)
        self.assertEqual(expect, server['status'], '%s %s' % (
            server.get('fault'), err))
        return server

    @base.needs('passthrough')
    def test_isolated_pool_keeps_ordinary_flavors_out(self):
        pool = self.create_pool('--mode', 'passthrough', '--alias', 'h100',
                                '--pci-id', '10de:2331', '--host',
                                base.PT_HOST, '--isolate')
        ordinary = self.create_flavor({})
        server = self.boot_on(ordinary['id'], base.PT_HOST, expect='ERROR')
        self.assertIn('No valid host', str(server.get('fault')))
        allowed = self.create_flavor({
            'trait:%s' % pool['isolation_trait']: 'required'})
        server = self.boot_on(allowed['id'], base.PT_HOST)
        self.assertEqual(base.PT_HOST, server['OS-EXT-SRV-ATTR:host'])

    @base.needs('passthrough')
    def test_project_limited_pool(self):
        pool = self.create_pool('--mode', 'passthrough', '--alias', 'h100',
                                '--pci-id', '10de:2331', '--host',
                                base.PT_HOST, '--project', 'gpuclient-demo')
        flavor = self.create_flavor({'pci_passthrough:alias': 'h100:1'})
        # the admin project is not listed: refused on the pool's host
        # (asked for by --host: Nova's scheduler still judges it, and the
        # boot waits for no other stream's passthrough host)
        server = self.boot_on(flavor['id'], base.PT_HOST, expect='ERROR')
        self.assertIn('No valid host', str(server.get('fault')))
        # the listed project gets in (a member may not ask for a host: the
        # flavor names the pool's aggregate, as a pool flavor does)
        member = self.create_flavor({
            'pci_passthrough:alias': 'h100:1',
            'aggregate_instance_extra_specs:gpu_pool': pool['name']})
        server = self.boot_on(member['id'], None, cloud=self.member_cloud)
        self.assertEqual(base.PT_HOST, self.openstack(
            'server', 'show', server['id'])['OS-EXT-SRV-ATTR:host'])
        self.assertEqual('ACTIVE', server['status'])


class TestPoolBadInput(PoolTestCase):
    """Each bad call: exit 1, one line, nothing changed in the cloud."""

    def state(self, names):
        aggregates = {
            a['Name']: a for a in self.openstack('aggregate', 'list',
                                                 '--long')}
        # what this test could change: its pools' traits, its hosts' rows
        # (the fault matrices write other pools on other hosts meanwhile)
        mine = {pools.pool_trait(n) for n in names}
        traits = sorted(t['name'] for t in self.openstack('trait', 'list')
                        if t['name'] in mine)
        hosts = [h for h in self.openstack('gpu', 'host', 'list', '--long')
                 if h['Host'] in (base.PT_HOST, base.VGPU_HOST)]
        root_traits = {h: sorted(self.traits(self.root_provider(h)))
                       for h in (base.PT_HOST, base.VGPU_HOST)}
        return {
            'aggregates': {n: aggregates.get(n) for n in names},
            'pool_traits': traits,
            'hosts': sorted(json.dumps(h, sort_keys=True) for h in hosts),
            'root_traits': root_traits,
        }

    @base.needs('passthrough', 'vgpu')
    def test_bad_input_changes_nothing(self):
        pool = self.create_pool('--mode', 'vgpu', '--vgpu-type',
                                'nvidia-35', '--host', base.VGPU_HOST)
        with_host = pool['name']
        ordinary = self.unique_name('agg')
        self.openstack('aggregate', 'create', '--zone', 'zone-a', ordinary)
        self.addCleanup(self.openstack, 'aggregate', 'delete', ordinary,
                        parse=False)
        self.openstack('aggregate', 'add', 'host', ordinary, base.PT_HOST)
        self.addCleanup(self.openstack, 'aggregate', 'remove', 'host',
                        ordinary, base.PT_HOST)
        new = self.unique_name('bad')
        pt = ['--mode', 'passthrough', '--alias', 'h100', '--pci-id',
              '10de:2331']
        cases = [
            (['create', new, '--mode', 'passthrough', '--alias', 'h100'],
             '--pci-id'),
            (['create', new, '--mode', 'passthrough', '--alias', 'h100',
              '--pci-id', '10de-2331'], 'Invalid PCI id'),
            (['create', new, *pt, '--host', 'no-such-host'],
             'Unknown compute host'),
            (['create', ordinary, *pt], 'not a GPU pool'),
            (['create', new + ',x', *pt], 'comma'),
            (['create', 's==' + new, *pt], 'operator'),
            (['create', new, '--mode', 'baremetal', '--resource-class',
              'baremetal.gpu-h100', '--isolate'], 'Ironic driver'),
            (['create', new, *pt, '--zone', 'zone-b', '--host',
              base.PT_HOST], 'one zone only'),
            (['create', new, '--mode', 'passthrough', '--alias', 'h100',
              '--pci-id', '10de:9999', '--host', base.PT_HOST],
             'offers no CUSTOM_PCI_10DE_9999'),
            (['create', new, '--mode', 'vgpu', '--vgpu-type', 'nvidia-36',
              '--host', base.VGPU_HOST], 'one vGPU type per physical GPU'),
            (['create', new, *pt, '--vgpu-type', 'nvidia-35'],
             '--vgpu-type is for vgpu and vgpu-vf pools'),
            (['create', new, '--mode', 'vgpu'], '--vgpu-type'),
            (['create', new, '--mode', 'baremetal'], '--resource-class'),
            (['create', new, *pt, '--property', 'gpu_pool=x'],
             'managed by gpuclient'),
            (['create', new, *pt, '--project', 'no-such-project'],
             'No project'),
            (['create', with_host.upper(), *pt], 'already uses'),
            (['remove', 'host', with_host, base.PT_HOST], 'Not in pool'),
            (['delete', with_host], '1 of 1 pools failed to delete'),
            (['set', new, '--isolate'], 'No GPU pool named'),
            (['add', 'host', with_host, 'no-such-host'],
             'Unknown compute host'),
        ]
        names = [new, ordinary, with_host, new + ',x', 's==' + new,
                 with_host.upper()]
        # registered first: a create that wrongly succeeds is removed
        for name in (new, with_host.upper()):
            self.addCleanup(self.delete_pool, name)
        before = self.state(names)
        for index, (args, message) in enumerate(cases):
            rc, out, err = self.openstack_matrix(index, 'gpu', 'pool', *args)
            self.assertEqual(1, rc, args)
            self.assertIn(message, err, args)
            lines = [line for line in err.splitlines() if line.strip()]
            # delete logs the pool's own error, then the N-of-M line
            self.assertLessEqual(len(lines), 2 if args[0] == 'delete'
                                 else 1, err)
        self.assertEqual(before, self.state(names))

    @base.needs('passthrough', 'vgpu')
    def test_non_admin(self):
        rc, _out, err = self.openstack_raw(
            'gpu', 'pool', 'create', self.unique_name('pool'), '--mode',
            'vgpu', '--vgpu-type', 'nvidia-35', cloud=self.member_cloud)
        self.assertEqual(1, rc)
        self.assertIn('requires admin', err)
