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

"""gpuclient.rules.maintenance on plain data: one case per method rule,
destinations chosen in sequence, the plan rows and summary."""

import copy

from gpuclient.rules import maintenance as m
from gpuclient.rules import model
from gpuclient.rules import pools as pools_mod
from gpuclient.rules import reservations
from gpuclient.rules import specs
from gpuclient.rules.scheduler import conf as nova_conf
from gpuclient.tests.unit import base
from gpuclient.tests.unit import fakes

PCI = 'CUSTOM_PCI_10DE_2331'
PT_SPEC = pools_mod.build_spec('solver', 'passthrough', alias='h100',
                               pci_id='10de:2331')
VGPU_SPEC = pools_mod.build_spec('ws', 'vgpu', vgpu_type='nvidia-35')

NEW = {'libvirt': '10.0.0', 'qemu': '8.2.2', 'nova': '2025.1',
       'mdev_types': {'nvidia-35'}, 'live_migratable': True,
       'post_copy': False}
OLD = {'libvirt': '8.0.0', 'qemu': '6.2.0', 'nova': '2023.2',
       'mdev_types': {'nvidia-35'}, 'live_migratable': False}


def server(name, extra_specs=None, host='src', project='p1', **more):
    found = {'id': fakes.uid('server-' + name), 'name': name,
             'OS-EXT-SRV-ATTR:host': host, 'tenant_id': project,
             'image': {'id': 'img'},
             'flavor': {'original_name': 'f-' + name, 'vcpus': 2,
                        'ram': 1024, 'disk': 10, 'ephemeral': 0,
                        'swap': 0, 'extra_specs': dict(extra_specs or {})}}
    found.update(more)
    return found


def item(free, max_unit=None):
    """One class of a provider as Placement's summary gives it, with the
    unit limits Nova's drivers report."""
    found = {'capacity': free, 'used': 0, 'min_unit': 1,
             'max_unit': max(free, 1), 'step_size': 1}
    if max_unit is not None:
        found['max_unit'] = max_unit
    return found


def add_host(providers, summaries, host, pci=0, pgpus=(), vgpu_trait=None):
    """One compute host into PROVIDERS and SUMMARIES (as Placement shows
    them): a root with VCPU/RAM/disk, PCI devices (one provider each,
    one unit) and pGPUs (free vGPUs each). Returns its root's uuid."""
    root = fakes.uid('rp-' + host)

    def provider(uuid, name, parent, resources, traits):
        providers.append({'uuid': uuid, 'name': name,
                          'parent_provider_uuid': parent,
                          'root_provider_uuid': root})
        summaries[uuid] = {'resources': resources, 'traits': traits}

    provider(root, host, None, {'VCPU': item(64), 'MEMORY_MB': item(262144),
                                'DISK_GB': item(2000)}, ['OWNER_NOVA'])
    for index in range(pci):
        provider(fakes.uid('rp-%s-pci-%d' % (host, index)),
                 '%s_pci_%d' % (host, index), root, {PCI: item(1)},
                 ['OWNER_NOVA'])
    for index, free in enumerate(pgpus):
        provider(fakes.uid('rp-%s-pgpu-%d' % (host, index)),
                 '%s_pgpu_%d' % (host, index), root,
                 {'VGPU': item(free, max_unit=4)},
                 [vgpu_trait] if vgpu_trait else [])
    return root


def make_cloud(pt_hosts=(), vgpu_hosts=(), plain_hosts=(), pt_spec=PT_SPEC,
               others=(), aggregates=(), blazar=False):
    """The model.Cloud of a small cloud: the passthrough pool solver of
    PT_HOSTS ({host: free devices}), the vGPU pool ws of VGPU_HOSTS
    ({host: (free vGPUs of each pGPU)}), hosts in no pool (PLAIN_HOSTS,
    without devices; OTHERS: {host: add_host's keywords}), AGGREGATES
    besides the pools' and whether Blazar runs."""
    found = [fakes.Aggregate('solver', pools_mod.metadata_for(pt_spec),
                             sorted(pt_hosts)),
             fakes.Aggregate('ws', pools_mod.metadata_for(VGPU_SPEC),
                             sorted(vgpu_hosts))] + list(aggregates)
    hosts = [(host, {'pci': free}) for host, free in dict(pt_hosts).items()]
    hosts += [(host, {'pgpus': free, 'vgpu_trait': 'CUSTOM_NVIDIA_35'})
              for host, free in dict(vgpu_hosts).items()]
    hosts += [(host, {}) for host in plain_hosts]
    hosts += list(dict(others).items())
    providers, summaries, hypervisors, services = [], {}, [], []
    for host, kwargs in hosts:
        root = add_host(providers, summaries, host, **kwargs)
        hypervisors.append({'id': root, 'hypervisor_hostname': host,
                            'service': {'host': host}})
        services.append({'host': host, 'status': 'enabled',
                         'state': 'up', 'binary': 'nova-compute'})
    snap = model.Placement.listed(providers)
    snap.add_details(summaries)
    cloud = model.Cloud(found, hypervisors, services, snap, blazar=blazar)
    assert not cloud.problems, cloud.problems
    return cloud


def pool_specs(cloud, pool, gpus=1):
    """The extra specs of a flavor of POOL, with what gpu flavor create
    adds to the pool's aggregate (group_policy=isolate)."""
    derived = specs.derive(cloud.pools[pool], gpus=gpus)
    cloud.aggregate(pool)['metadata'].update(derived['aggregate_metadata'])
    return derived['extra_specs']


def plan(cloud, servers, draining=('src',), **kwargs):
    """The drain plan of CLOUD with SERVERS (Nova's default settings
    unless given)."""
    cloud.servers = list(servers)
    kwargs.setdefault('settings', nova_conf.load_settings())
    return m.plan(cloud, draining, **kwargs)


class TestVersion(base.TestCase):
    def test_versions(self):
        self.assertEqual((8, 6, 0), m.version('8.6.0'))
        self.assertEqual((2024, 1), m.version('2024.1'))
        self.assertEqual((8, 1, 0), m.version('8.1.0-rc1'))
        self.assertEqual((10,), m.version('10'))
        self.assertIsNone(m.version(None))
        self.assertIsNone(m.version('caracal'))


class TestKind(base.TestCase):
    def setUp(self):
        super().setUp()
        self.cloud = make_cloud(pt_hosts={'src': 0}, vgpu_hosts={'src': ()})

    def kind(self, extra_specs):
        return m.kind(server('s', extra_specs), self.cloud.pools)

    def test_kinds(self):
        cases = [
            (pool_specs(self.cloud, 'solver'), m.PASSTHROUGH),
            (pool_specs(self.cloud, 'ws'), m.VGPU),
            ({'resources:VGPU': '1', 'trait:CUSTOM_MIG_3G_40GB': 'required'},
             m.MIG),
            ({'resources:CUSTOM_BAREMETAL_GPU': '1', 'resources:VCPU': '0',
              'resources:MEMORY_MB': '0', 'resources:DISK_GB': '0'},
             m.BAREMETAL),
            ({'accel:device_profile': 'fpga'}, m.CYBORG),
            ({'hw:mem_encryption': 'True'}, m.MEM_ENCRYPTION),
            ({'hw:mem_encryption': 'false'}, m.PLAIN),
            ({}, m.PLAIN),
        ]
        for extra_specs, expected in cases:
            self.assertEqual(expected, self.kind(extra_specs), extra_specs)

    def test_gpu_wins_over_mem_encryption(self):
        extra = dict(pool_specs(self.cloud, 'ws'), **{
            'hw:mem_encryption': 'true'})
        self.assertEqual(m.VGPU, self.kind(extra))


SRC, DST = 'src', 'dst'


def method(kind, requested='auto', allow=False, src=NEW, dst=NEW,
           destination=True, mdev='nvidia-35', aliases=(), status=None):
    return m.method(kind, requested, allow, (SRC, src),
                    (DST, dst) if destination else None, mdev, aliases,
                    status)


class TestLiveRules(base.TestCase):
    """Nova's requirements for a live migration, one at a time."""

    def test_vgpu_live_when_both_hosts_meet_them(self):
        found = method(m.VGPU)
        self.assertEqual((m.LIVE, m.NO_DOWNTIME, []),
                         (found['method'], found['downtime'],
                          found['reasons']))

    def test_vgpu_each_requirement_blocks(self):
        for host, key, value, text in [
                ('src', 'libvirt', '8.5.9', 'src has libvirt 8.5.9'),
                ('dst', 'libvirt', '7.0.0', 'dst has libvirt 7.0.0'),
                ('src', 'qemu', '8.0.0', 'src has QEMU 8.0.0'),
                ('dst', 'qemu', '8.0.5', 'dst has QEMU 8.0.5'),
                ('src', 'nova', '2023.2', 'src has Nova 2023.2'),
                ('dst', 'nova', None, 'Nova version of dst is not known'),
                ('dst', 'libvirt', None,
                 'libvirt version of dst is not known'),
                ('dst', 'mdev_types', {'nvidia-36'},
                 'dst does not offer mdev type nvidia-35')]:
            facts = {'src': dict(NEW), 'dst': dict(NEW)}
            facts[host][key] = value
            found = method(m.VGPU, src=facts['src'], dst=facts['dst'])
            self.assertEqual(m.STAYS, found['method'], (host, key))
            self.assertIn(text, found['reasons'][0])
            self.assertIn('--allow-downtime', found['reasons'][-1])

    def test_post_copy_blocks_vfio_live_migration(self):
        # issue 40, rule 4: [libvirt] live_migration_permit_post_copy =
        # True on either host: no live migration of VFIO devices
        for kind in (m.VGPU, m.MIG, m.PASSTHROUGH, m.VGPU_VF):
            for host in ('src', 'dst'):
                facts = {'src': dict(NEW), 'dst': dict(NEW)}
                facts[host]['post_copy'] = True
                found = method(kind, src=facts['src'], dst=facts['dst'],
                               aliases=('h100',))
                self.assertNotEqual(m.LIVE, found['method'], (kind, host))
                self.assertIn('%s permits post-copy' % host,
                              found['reasons'][0])
        # not told: Nova's default, said
        unknown = dict(NEW)
        del unknown['post_copy']
        found = method(m.PASSTHROUGH, src=unknown, aliases=('h100',))
        self.assertEqual(m.LIVE, found['method'])
        self.assertIn('live_migration_permit_post_copy is False (Nova\'s '
                      'default) on src', ' '.join(found['notes']))

    def test_post_copy_from_facts_and_nova_conf(self):
        self.assertEqual({'h': {'post_copy': True}},
                         m.parse_facts(['h:post_copy=true']))
        settings = nova_conf.load_settings(
            '[libvirt]\nlive_migration_permit_post_copy = true\n')
        facts = m.host_facts({'b': {'post_copy': False}}, ['a', 'b'],
                             settings=settings)
        self.assertEqual((True, False), (facts['a']['post_copy'],
                                         facts['b']['post_copy']))
        self.assertNotIn('post_copy', m.host_facts(
            {}, ['a'], settings=nova_conf.load_settings())['a'])

    def test_vgpu_limits_are_inclusive(self):
        edge = dict(NEW, libvirt='8.6.0', qemu='8.1.0', nova='2024.1')
        self.assertEqual(m.LIVE, method(m.VGPU, src=edge,
                                        dst=edge)['method'])

    def test_vgpu_unknown_mdev_type_of_the_server(self):
        found = method(m.VGPU, mdev=None, allow=True)
        self.assertEqual(m.COLD, found['method'])
        self.assertIn('mdev type of the server is not known',
                      found['reasons'][0])

    def test_vgpu_unknown_destination_types_assume_the_pool(self):
        found = method(m.VGPU, dst=dict(NEW, mdev_types=None))
        self.assertEqual(m.LIVE, found['method'])
        self.assertIn('assumed: dst offers mdev type nvidia-35',
                      found['notes'][0])

    def test_mig_backed_vgpu_follows_vgpu_rules_with_a_note(self):
        found = method(m.MIG)
        self.assertEqual(m.LIVE, found['method'])
        self.assertIn('MIG-backed', found['notes'][-1])
        self.assertEqual(m.STAYS, method(m.MIG, src=OLD)['method'])

    def test_passthrough_live_only_when_live_migratable(self):
        self.assertEqual(m.LIVE, method(m.PASSTHROUGH)['method'])
        for src, dst, text in [
                (dict(NEW, live_migratable=False), NEW,
                 'its PCI device is not live_migratable on src'),
                (NEW, dict(NEW, live_migratable=None),
                 'whether its PCI device is live_migratable on dst is not'),
                (dict(NEW, nova='2024.2'), NEW,
                 'src has Nova 2024.2, and Nova needs 2025.1')]:
            found = method(m.PASSTHROUGH, src=src, dst=dst, allow=True)
            self.assertEqual(m.COLD, found['method'])
            self.assertEqual(m.STOP_START, found['downtime'])
            self.assertIn(text, found['reasons'][0])

    def test_passthrough_per_alias(self):
        dst = dict(NEW, live_migratable={'h100': True, 'a100': False})
        self.assertEqual(m.LIVE, method(
            m.PASSTHROUGH, dst=dst, aliases=['h100'])['method'])
        found = method(m.PASSTHROUGH, dst=dst, aliases=['h100', 'a100'])
        self.assertEqual(m.STAYS, found['method'])
        self.assertIn('a100 is not live_migratable on dst',
                      found['reasons'][0])

    def test_vgpu_ignores_live_migratable_and_passthrough_the_libvirt(self):
        self.assertEqual(m.LIVE, method(
            m.VGPU, dst=dict(NEW, live_migratable=False))['method'])
        self.assertEqual(m.LIVE, method(
            m.PASSTHROUGH, dst=dict(NEW, libvirt='7.0.0'))['method'])

    def test_mem_encryption_never_live(self):
        found = method(m.MEM_ENCRYPTION, allow=True)
        self.assertEqual(m.COLD, found['method'])
        self.assertIn('encrypted memory', found['reasons'][0])

    def test_plain_server_moves_live(self):
        self.assertEqual(m.LIVE, method(m.PLAIN, src={}, dst={})['method'])

    def test_assumed_facts_are_named(self):
        src = dict(NEW, assumed={'libvirt'})
        dst = dict(NEW, assumed=True)
        notes = method(m.VGPU, src=src, dst=dst)['notes']
        self.assertIn('assumed: src has libvirt 10.0.0', notes)
        self.assertNotIn('assumed: src has QEMU 8.2.2', notes)
        self.assertIn('assumed: dst has QEMU 8.2.2', notes)
        self.assertIn('assumed: dst offers mdev type nvidia-35', notes)
        notes = method(m.PASSTHROUGH, dst=dst)['notes']
        self.assertIn('assumed: its PCI device is live_migratable on dst',
                      notes)


class TestMethodChoice(base.TestCase):
    """--method and --allow-downtime."""

    def test_auto_falls_back_to_cold_only_with_downtime(self):
        found = method(m.PASSTHROUGH, src=OLD, allow=True)
        self.assertEqual((m.COLD, m.STOP_START),
                         (found['method'], found['downtime']))
        found = method(m.PASSTHROUGH, src=OLD)
        self.assertEqual((m.STAYS, m.WITH_THE_HOST),
                         (found['method'], found['downtime']))
        self.assertIn('cold migration and shelve-offload stop the server: '
                      'give --allow-downtime', found['reasons'][-1])

    def test_auto_shelves_when_no_host_fits(self):
        found = method(m.VGPU, destination=False, allow=True)
        self.assertEqual((m.SHELVE, m.UNTIL_UNSHELVED),
                         (found['method'], found['downtime']))
        self.assertIn('fits on no other host', found['reasons'][0])
        found = method(m.VGPU, destination=False)
        self.assertEqual(m.STAYS, found['method'])

    def test_live_asked_never_degrades(self):
        found = method(m.PASSTHROUGH, 'live', allow=True, src=OLD)
        self.assertEqual(m.STAYS, found['method'])
        self.assertIn('--method live was asked', found['reasons'][-1])
        self.assertEqual(m.LIVE, method(m.PASSTHROUGH, 'live')['method'])
        self.assertEqual(m.STAYS, method(m.VGPU, 'live',
                                         destination=False)['method'])

    def test_cold_asked(self):
        self.assertEqual(m.COLD, method(m.VGPU, 'cold', allow=True)['method'])
        found = method(m.VGPU, 'cold')
        self.assertEqual(m.STAYS, found['method'])
        self.assertIn('a cold migration stops the server',
                      found['reasons'][0])
        found = method(m.VGPU, 'cold', allow=True, destination=False)
        self.assertEqual(m.STAYS, found['method'])
        self.assertIn('no cold migration', found['reasons'][0])

    def test_shelve_asked(self):
        self.assertEqual(m.SHELVE, method(m.VGPU, 'shelve',
                                          allow=True)['method'])
        found = method(m.VGPU, 'shelve')
        self.assertEqual(m.STAYS, found['method'])
        self.assertIn('shelve-offload stops the server', found['reasons'][0])

    def test_unmovable_stay_whatever_is_asked(self):
        for kind, text in [(m.BAREMETAL, 'bare-metal'),
                           (m.CYBORG, 'Cyborg')]:
            for requested in m.METHODS:
                found = method(kind, requested, allow=True)
                self.assertEqual((m.STAYS, m.WITH_THE_HOST),
                                 (found['method'], found['downtime']))
                self.assertIn(text, found['reasons'][0])
                self.assertIn('tell its project', found['reasons'][0])

    def test_unknown_method_refused(self):
        self.assertRaises(ValueError, method, m.VGPU, 'evacuate')


class TestDestinations(base.TestCase):
    """Where each server goes, in sequence against one snapshot."""

    def pt_cloud(self, others=(), aggregates=(), blazar=False, **hosts):
        return make_cloud(pt_hosts=dict({'src': 0}, **hosts), others=others,
                          aggregates=aggregates, blazar=blazar)

    def pt_server(self, cloud, name, **more):
        return server(name, pool_specs(cloud, 'solver'), **more)

    def facts(self, cloud, live=True):
        return {h: dict(NEW, live_migratable=live)
                for h in cloud.host_roots()}

    def test_two_servers_one_last_gpu(self):
        cloud = self.pt_cloud(b=1)
        servers = [self.pt_server(cloud, 'vm-2'),
                   self.pt_server(cloud, 'vm-1')]
        found = plan(cloud, servers, facts=self.facts(cloud))
        first, second = found['rows']
        self.assertEqual(('vm-1', m.LIVE, 'b'),
                         (first['name'], first['method'],
                          first['destination']))
        self.assertEqual(('vm-2', m.STAYS, None),
                         (second['name'], second['method'],
                          second['destination']))
        self.assertIn('the room left on b is taken by servers planned '
                      'before vm-2 (vm-1)', second['reason'])
        self.assertEqual([(second['server'], 'vm-2', second['reason'])],
                         found['summary']['cannot_move'])
        self.assertEqual({m.LIVE: 1, m.STAYS: 1}, found['summary']['moves'])

    def test_cold_moves_consume_too_and_shelve_does_not(self):
        cloud = self.pt_cloud(b=1)
        servers = [self.pt_server(cloud, 'vm-%d' % i) for i in (1, 2, 3)]
        rows = plan(cloud, servers, facts=self.facts(cloud, live=False),
                    allow_downtime=True)['rows']
        self.assertEqual([(m.COLD, 'b'), (m.SHELVE, None), (m.SHELVE, None)],
                         [(r['method'], r['destination']) for r in rows])
        self.assertIn('taken by servers planned before vm-2 (vm-1)',
                      rows[1]['reason'])

    def test_shelve_asked_leaves_room_for_the_next(self):
        cloud = self.pt_cloud(b=1, others={'src2': {'pci': 0}})
        servers = [self.pt_server(cloud, 'vm-1'),
                   self.pt_server(cloud, 'vm-2', **{
                       'OS-EXT-SRV-ATTR:host': 'src2'})]
        rows = plan(cloud, servers, draining=('src', 'src2'),
                    requested=m.SHELVE, allow_downtime=True)['rows']
        self.assertEqual([m.SHELVE, m.SHELVE], [r['method'] for r in rows])
        self.assertEqual([None, None], [r['destination'] for r in rows])

    def test_never_a_drained_or_cordoned_host(self):
        cloud = self.pt_cloud(src=4, other=4, fenced=4, b=1)
        servers = [self.pt_server(cloud, 'vm-%d' % i) for i in (1, 2)]
        cloud.aggregates[0]['hosts'] += ['other', 'fenced']
        found = plan(cloud, servers, draining=('src', 'other'),
                     cordoned=('fenced',), facts=self.facts(cloud))
        rows = found['rows']
        self.assertEqual(['b', None], [r['destination'] for r in rows])
        # b is full once vm-1 is planned there
        self.assertIn('taken by servers planned before vm-2',
                      rows[1]['reason'])

    def test_nothing_anywhere_names_the_hosts(self):
        cloud = self.pt_cloud(src=2, fenced=4)
        found = plan(cloud, [self.pt_server(cloud, 'vm-1')],
                     cordoned=('fenced',), facts=self.facts(cloud))
        row = found['rows'][0]
        self.assertEqual(m.STAYS, row['method'])
        self.assertIn('no other host may take it (fenced: cordoned; src: '
                      'being drained)', row['reason'])

    def test_most_free_gpus_first_then_name(self):
        cloud = self.pt_cloud(a=1, b=3, c=3)
        rows = plan(cloud, [self.pt_server(cloud, 'vm-%d' % i)
                            for i in (1, 2, 3, 4)],
                    facts=self.facts(cloud))['rows']
        # b and c tie at 3 (b by name), then c has 3 to b's 2, then both
        # have 2: b; a (1 free) last
        self.assertEqual(['b', 'c', 'b', 'c'],
                         [r['destination'] for r in rows])

    def test_auto_prefers_a_host_it_can_live_migrate_to(self):
        cloud = self.pt_cloud(big=4, small=1)
        facts = self.facts(cloud)
        facts['big']['live_migratable'] = False
        row = plan(cloud, [self.pt_server(cloud, 'vm-1')], facts=facts,
                   allow_downtime=True)['rows'][0]
        self.assertEqual((m.LIVE, 'small'),
                         (row['method'], row['destination']))
        row = plan(cloud, [self.pt_server(cloud, 'vm-1')], facts=facts,
                   requested=m.COLD, allow_downtime=True)['rows'][0]
        self.assertEqual((m.COLD, 'big'),
                         (row['method'], row['destination']))

    def test_pool_steering_keeps_it_in_its_pool(self):
        # the same device on a host outside the pool
        cloud = self.pt_cloud(b=1, others={'stray': {'pci': 4}})
        rows = plan(cloud, [self.pt_server(cloud, 'vm-%d' % i)
                            for i in (1, 2)],
                    facts=self.facts(cloud))['rows']
        self.assertEqual(['b', None], [r['destination'] for r in rows])

    def test_project_limits(self):
        spec = pools_mod.build_spec('solver', 'passthrough', alias='h100',
                                    pci_id='10de:2331', projects=['p1'])
        cloud = make_cloud(pt_hosts={'src': 0, 'b': 2}, pt_spec=spec)
        rows = plan(
            cloud, [self.pt_server(cloud, 'mine', project='p1'),
                    self.pt_server(cloud, 'theirs', project='p2')],
            facts=self.facts(cloud))['rows']
        self.assertEqual([('mine', 'b'), ('theirs', None)],
                         [(r['name'], r['destination']) for r in rows])
        self.assertIn('b: ', rows[1]['reason'])
        self.assertIn('p2', rows[1]['reason'])

    def test_disabled_elsewhere_is_no_destination(self):
        cloud = self.pt_cloud(b=2, c=1)
        cloud.services[1]['status'] = 'disabled'  # b
        row = plan(cloud, [self.pt_server(cloud, 'vm-1')],
                   facts=self.facts(cloud))['rows'][0]
        self.assertEqual('c', row['destination'])

    def test_a_host_blazar_holds_is_no_destination(self):
        # where Blazar runs, BlazarFilter refuses a held host to every
        # flavor but a reservation's (blazar-nova's filter): the move goes
        # to the free host, or nowhere with the hold named
        # Blazar's freepool aggregate holds host held
        freepool = [fakes.Aggregate('freepool', {}, ['held'])]
        cloud = self.pt_cloud(held=4, b=1, aggregates=freepool, blazar=True)
        settings = reservations.with_filter(nova_conf.load_settings())
        servers = [self.pt_server(cloud, 'vm-%d' % i) for i in (1, 2)]
        rows = plan(cloud, servers, facts=self.facts(cloud),
                    settings=settings)['rows']
        self.assertEqual(['b', None], [r['destination'] for r in rows])
        # the held host the only other one of the pool: the hold is named
        alone = self.pt_cloud(held=4, aggregates=freepool, blazar=True)
        row = plan(alone, [self.pt_server(alone, 'vm-1')],
                   facts=self.facts(alone), settings=settings)['rows'][0]
        self.assertEqual((m.STAYS, None), (row['method'], row['destination']))
        self.assertIn('held is held by Blazar (in the freepool aggregate '
                      'freepool', row['reason'])
        # without BlazarFilter among the filters the hold is not judged
        rows = plan(cloud, servers, facts=self.facts(cloud))['rows']
        self.assertEqual(['held', 'held'], [r['destination'] for r in rows])
        # a reservation's own flavor passes the filter (and lands in the
        # lease's aggregate, by AggregateInstanceExtraSpecsFilter)
        cloud.aggregates.append(pools_mod.aggregate_dict(fakes.Aggregate(
            'r-1', {reservations.RESERVATION_KEY: 'r-1'}, ['held'])))
        reserved = dict(pool_specs(cloud, 'solver'), **{
            reservations.FLAVOR_EXTRA_SPEC: 'r-1'})
        row = plan(cloud, [server('mine', reserved)], facts=self.facts(cloud),
                   settings=settings)['rows'][0]
        self.assertEqual('held', row['destination'])

    def test_vgpu_server_goes_where_its_type_is(self):
        cloud = make_cloud(
            vgpu_hosts={'src': (0,), 'v2': (4, 4)},
            others={'other-type': {'pgpus': (4, 4),
                                   'vgpu_trait': 'CUSTOM_NVIDIA_36'}})
        facts = {h: dict(NEW) for h in cloud.host_roots()}
        row = plan(cloud, [server('vg', pool_specs(cloud, 'ws'))],
                   facts=facts)['rows'][0]
        self.assertEqual((m.VGPU, m.LIVE, 'v2', 'VGPU', 1),
                         (row['kind'], row['method'], row['destination'],
                          row['resource_class'], row['gpus']))

    def test_vgpu_pairs_count_pgpus_as_consumed(self):
        cloud = make_cloud(vgpu_hosts={'src': (0,), 'v2': (1, 1, 1)})
        facts = {h: dict(NEW) for h in cloud.host_roots()}
        pair = pool_specs(cloud, 'ws', gpus=2)
        rows = plan(cloud, [server('a', pair), server('b', pair)],
                    facts=facts)['rows']
        self.assertEqual(['v2', None], [r['destination'] for r in rows])

    def test_plain_servers_and_non_gpu_hosts(self):
        cloud = make_cloud(pt_hosts={'src': 0}, plain_hosts=['cpu-1'])
        row = plan(cloud, [server('web')], facts={})['rows'][0]
        self.assertEqual((m.PLAIN, m.LIVE, 'cpu-1'),
                         (row['kind'], row['method'], row['destination']))

    def test_the_snapshot_is_not_changed(self):
        cloud = self.pt_cloud(b=2)
        before = copy.deepcopy(m.trees(cloud))
        summaries = copy.deepcopy(cloud.placement.summaries)
        plan(cloud, [self.pt_server(cloud, 'vm-1')], facts=self.facts(cloud))
        self.assertEqual(before, m.trees(cloud))
        self.assertEqual(summaries, cloud.placement.summaries)


class TestRows(base.TestCase):
    def test_row_fields_and_held_gpus(self):
        cloud = make_cloud(pt_hosts={'src': 0, 'b': 2})
        vm = server('vm-1', pool_specs(cloud, 'solver', gpus=2))
        held = {vm['id']: {'resource_class': PCI, 'gpus': 2,
                           'devices': ['0000:81:00.0', '0000:82:00.0']}}
        found = plan(cloud, [vm], facts={}, gpu_rows=held,
                     allow_downtime=True)
        row = found['rows'][0]
        self.assertEqual(set(m.ROW_FIELDS), set(row))
        self.assertEqual({
            'server': vm['id'], 'name': 'vm-1', 'project': 'p1',
            'flavor': 'f-vm-1', 'source': 'src', 'kind': m.PASSTHROUGH,
            'resource_class': PCI, 'gpus': 2,
            'devices': ['0000:81:00.0', '0000:82:00.0'],
            'method': m.COLD, 'destination': 'b',
            'downtime': m.STOP_START}, {
                k: v for k, v in row.items() if k not in ('reason',
                                                          'notes')})
        # the facts were not given: live is refused for what is unknown
        self.assertIn('Nova version of src is not known', row['reason'])

    def test_unmovable_rows(self):
        cloud = make_cloud(pt_hosts={'src': 0, 'b': 4})
        metal = server('metal', {'resources:CUSTOM_BAREMETAL_GPU': '1',
                                 'resources:VCPU': '0',
                                 'resources:MEMORY_MB': '0',
                                 'resources:DISK_GB': '0'})
        fpga = server('fpga', {'accel:device_profile': 'fpga'})
        found = plan(cloud, [metal, fpga], facts={}, allow_downtime=True)
        self.assertEqual([('fpga', m.CYBORG, m.STAYS, None),
                          ('metal', m.BAREMETAL, m.STAYS, None)],
                         [(r['name'], r['kind'], r['method'],
                           r['destination']) for r in found['rows']])
        self.assertEqual(['fpga', 'metal'],
                         [n for _i, n, _r in found['summary']['cannot_move']])
        self.assertEqual({m.STAYS: 2}, found['summary']['moves'])

    def test_servers_sorted_by_source_then_name(self):
        cloud = make_cloud(pt_hosts={'src': 0, 'a-src': 0, 'b': 4})
        servers = [server('z', pool_specs(cloud, 'solver')),
                   server('y', pool_specs(cloud, 'solver'), host='a-src'),
                   server('a', pool_specs(cloud, 'solver'))]
        rows = plan(cloud, servers, draining=('src', 'a-src'),
                    facts={})['rows']
        self.assertEqual(['y', 'a', 'z'], [r['name'] for r in rows])


class TestStatus(base.TestCase):
    """What Nova's API moves a server from."""

    def test_paused_moves_live_only(self):
        self.assertEqual(m.LIVE, method(m.PASSTHROUGH,
                                        status='PAUSED')['method'])
        found = method(m.PASSTHROUGH, src=OLD, allow=True, status='PAUSED')
        self.assertEqual(m.SHELVE, found['method'])
        self.assertIn('no cold migration: the server is PAUSED',
                      found['reasons'][1])

    def test_stopped_moves_cold_without_downtime(self):
        found = method(m.VGPU, status='SHUTOFF')
        self.assertEqual((m.COLD, m.NO_DOWNTIME),
                         (found['method'], found['downtime']))
        self.assertIn('no live migration: the server is SHUTOFF',
                      found['reasons'][0])
        self.assertIn('stays stopped', found['notes'][-1])
        self.assertEqual(m.STAYS, method(m.VGPU, 'live',
                                         status='SHUTOFF')['method'])

    def test_suspended_only_shelves(self):
        self.assertEqual(m.SHELVE, method(m.VGPU, allow=True,
                                          status='SUSPENDED')['method'])
        self.assertEqual(m.STAYS, method(m.VGPU, 'cold', allow=True,
                                         status='SUSPENDED')['method'])

    def test_other_statuses_stay(self):
        for status in ('ERROR', 'VERIFY_RESIZE', 'MIGRATING', 'BUILD'):
            found = method(m.PLAIN, allow=True, status=status)
            self.assertEqual(m.STAYS, found['method'])
            self.assertIn('in status %s' % status, found['reasons'][0])

    def test_stopped_server_in_a_plan(self):
        cloud = make_cloud(pt_hosts={'src': 0, 'b': 1})
        vm = server('vm', pool_specs(cloud, 'solver'), status='SHUTOFF')
        found = plan(cloud, [vm], facts={})
        row = found['rows'][0]
        self.assertEqual((m.COLD, 'b', m.NO_DOWNTIME),
                         (row['method'], row['destination'],
                          row['downtime']))
        self.assertEqual({}, found['summary']['notify'])


class TestIsolationAndCache(base.TestCase):
    def test_isolated_pool_takes_no_unsteered_server(self):
        spec = pools_mod.build_spec('solver', 'passthrough', alias='h100',
                                    pci_id='10de:2331', isolate=True)
        cloud = make_cloud(pt_hosts={'src': 0, 'iso': 4}, pt_spec=spec)
        row = plan(cloud, [server('web')], facts={})['rows'][0]
        self.assertEqual((m.STAYS, None), (row['method'],
                                           row['destination']))
        cloud = make_cloud(pt_hosts={'src': 0, 'iso': 4}, pt_spec=spec,
                           plain_hosts=['cpu-1'])
        row = plan(cloud, [server('web')], facts={})['rows'][0]
        self.assertEqual((m.LIVE, 'cpu-1'),
                         (row['method'], row['destination']))

    def test_servers_of_one_flavor_share_a_request(self):
        cloud = make_cloud(pt_hosts={'src': 0})
        extra = pool_specs(cloud, 'solver')
        one, two = server('a', extra), server('b', extra)
        self.assertEqual(m.request_key(one), m.request_key(two))
        self.assertNotEqual(m.request_key(one), m.request_key(
            server('c', extra, project='p2')))
        self.assertNotEqual(m.request_key(one), m.request_key(
            server('d', extra, image='')))

    def test_notify_lists_each_project_with_downtime(self):
        cloud = make_cloud(pt_hosts={'src': 0, 'b': 1})
        extra = pool_specs(cloud, 'solver')
        found = plan(cloud, [server('a', extra), server('b', extra,
                                                       project='p2')],
                     facts={}, allow_downtime=True)
        rows = found['rows']
        self.assertEqual([m.COLD, m.SHELVE], [r['method'] for r in rows])
        self.assertEqual({'p1': [rows[0]['server']],
                          'p2': [rows[1]['server']]},
                         found['summary']['notify'])
