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

"""Pool operations: observe, plan, apply; all or nothing over all hosts,
re-runs finish what was interrupted, and only our traits are removed.

Placement is answered by the strict fakes.PlacementFixture: provider
traits with generations, unknown traits refused with a 400 as Placement
does, a 409 that comes from a concurrent writer adding its own trait;
Nova by fakes.FakeCompute behind a spec'd mock of the SDK compute proxy,
as strict as Nova (aggregates, and the raw flavor writes a pool change
makes to its dependents).
"""

from unittest import mock

import fixtures
from openstack import exceptions as sdk_exc
from openstack.compute.v2 import _proxy as compute_proxy
from osc_lib import exceptions

from gpuclient.ops import pool_ops
from gpuclient.ops import snapshot
from gpuclient.rules import model
from gpuclient.rules import pools
from gpuclient.tests.unit import base
from gpuclient.tests.unit import fakes


class PoolOpsTestCase(base.TestCase):
    def setUp(self):
        super().setUp()
        self.cloud = fakes.FakeCloud()
        self.pt = self.cloud.pci_host('gpu-pt-1', nodename='gpu-pt-1.test')
        self.vgpu = self.cloud.vgpu_host('gpu-vgpu-1')
        self.bm = self.cloud.baremetal_node('bm-1', fakes.uid('node'))
        self.cloud.compute_host('plain-1')
        self.second = self.cloud.vgpu_host('gpu-vgpu-2')
        self.placement = self.useFixture(fakes.PlacementFixture(self.cloud))
        cm = self.useFixture(fakes.ClientManagerFixture(self.cloud))
        self.compute = cm.nova
        self.client = cm.gpu
        self.client._conn.identity.find_project.side_effect = (
            lambda name, ignore_missing: mock.Mock(
                id=name if name.startswith('id-') else 'id-' + name))

    def pgpus(self):
        return [p for p in self.cloud.tree(self.vgpu) if p.parent]

    def spec(self, name='solver', mode='passthrough', **kwargs):
        if mode == 'passthrough':
            kwargs.setdefault('alias', 'h100')
            kwargs.setdefault('pci_id', '10de:2331')
        if mode == 'vgpu':
            kwargs.setdefault('vgpu_type', 'nvidia-35')
        return pools.build_spec(name, mode, **kwargs)


class TestCreate(PoolOpsTestCase):
    def test_isolated_passthrough(self):
        pool, plan = pool_ops.create(
            self.client, self.spec(isolate=True), ['gpu-pt-1'])
        self.assertEqual(
            ['aggregate.create', 'aggregate.metadata', 'trait.create',
             'provider.add_traits', 'aggregate.add_host'],
            [step.op for step in plan])
        agg = self.cloud.aggregates[0]
        self.assertEqual(['gpu-pt-1'], agg.hosts)
        self.assertEqual('required',
                         agg.metadata['trait:CUSTOM_GPU_POOL_SOLVER'])
        self.assertIn('CUSTOM_GPU_POOL_SOLVER', self.pt.traits)
        self.assertIn('COMPUTE_NODE', self.pt.traits)  # kept
        self.assertIn('CUSTOM_GPU_POOL_SOLVER', self.placement.traits)
        self.assertEqual(['gpu-pt-1'], pool['hosts'])
        self.assertTrue(pool['isolate'])

    def test_host_of_another_zone_refused_before_any_write(self):
        # Nova keeps a host in one zone: the fake refuses the add with 409
        # as Nova does (so a missing plan check fails mid-plan here), and
        # the plan refuses it before the first write
        east = self.compute.create_aggregate('east', availability_zone='east')
        self.compute.add_host_to_aggregate(east, 'gpu-pt-1')
        calls = list(self.compute.calls)
        exc = self.assertRaises(
            exceptions.CommandError, pool_ops.create, self.client,
            self.spec(zone='west'), ['gpu-pt-1'])
        self.assertIn('Host gpu-pt-1 is in availability zone east (aggregate '
                      'east) and a host can be in one zone only', str(exc))
        self.assertEqual(calls, self.compute.calls)
        self.assertEqual(['east'], [a.name for a in self.cloud.aggregates])
        # the same zone, or a pool without one, is fine
        pool_ops.create(self.client, self.spec(zone='east'), ['gpu-pt-1'])
        pool_ops.create(self.client, self.spec('open'), ['gpu-pt-1'])

    def test_fake_refuses_a_host_in_two_zones(self):
        east = self.compute.create_aggregate('east', availability_zone='east')
        west = self.compute.create_aggregate('west', availability_zone='west')
        self.compute.add_host_to_aggregate(east, 'gpu-pt-1')
        exc = self.assertRaises(sdk_exc.ConflictException,
                                self.compute.add_host_to_aggregate,
                                west, 'gpu-pt-1')
        self.assertEqual(409, exc.status_code)

    def test_vgpu_type_trait_on_pgpus_only(self):
        pool_ops.create(self.client, self.spec('ws', 'vgpu'),
                        ['gpu-vgpu-1'])
        for p in self.pgpus():
            self.assertEqual(['CUSTOM_NVIDIA_35'], p.traits)
        self.assertNotIn('CUSTOM_NVIDIA_35', self.vgpu.traits)

    def test_identical_create_is_a_no_op(self):
        pool_ops.create(self.client, self.spec(isolate=True), ['gpu-pt-1'])
        before = len(self.compute.calls), len(self.placement.puts())
        pool, plan = pool_ops.create(
            self.client, self.spec(isolate=True), ['gpu-pt-1'])
        self.assertEqual([], plan.steps)
        self.assertEqual(before, (len(self.compute.calls),
                                  len(self.placement.puts())))
        self.assertEqual(['gpu-pt-1'], pool['hosts'])
        self.assertTrue(pool['isolate'])

    def test_conflicting_create_shows_the_difference(self):
        pool_ops.create(self.client, self.spec(), ['gpu-pt-1'])
        calls = list(self.compute.calls)
        exc = self.assertRaises(
            exceptions.CommandError, pool_ops.create, self.client,
            self.spec(isolate=True), ['gpu-pt-1'])
        self.assertIn('Pool solver already exists with other settings: '
                      'isolate: False (requested True). Use "openstack gpu '
                      'pool set" or "add host", or delete it first.',
                      str(exc))
        # the same settings with fewer hosts: a create does not remove
        exc = self.assertRaises(
            exceptions.CommandError, pool_ops.create, self.client,
            self.spec(), [])
        self.assertIn('Pool solver already exists with more hosts '
                      '(gpu-pt-1) than asked for: use "openstack gpu pool '
                      'remove host".', str(exc))
        self.assertEqual(calls, self.compute.calls)
        self.assertEqual(['gpu-pt-1'], self.cloud.aggregates[0].hosts)

    def test_ordinary_aggregate_is_not_touched(self):
        for metadata, hosts in (({'ssd': 'true'}, []), ({}, ['plain-1'])):
            aggregate = fakes.Aggregate('solver', metadata, hosts)
            self.cloud.aggregates = [aggregate]
            exc = self.assertRaises(
                exceptions.CommandError, pool_ops.create, self.client,
                self.spec(), [])
            self.assertIn('A host aggregate named solver already exists '
                          'and is not a GPU pool', str(exc))
            self.assertEqual([], self.compute.calls)
            self.assertEqual((metadata, hosts),
                             (aggregate.metadata, aggregate.hosts))

    def test_empty_aggregate_left_by_a_create_is_adopted(self):
        empty = fakes.Aggregate('solver')
        self.cloud.aggregates.append(empty)
        pool, plan = pool_ops.create(self.client, self.spec(isolate=True),
                                     ['gpu-pt-1'])
        self.assertEqual(
            ['aggregate.metadata', 'trait.create', 'provider.add_traits',
             'aggregate.add_host'], [step.op for step in plan])
        self.assertNotIn('create', [c[0] for c in self.compute.calls])
        self.assertEqual([empty], self.cloud.aggregates)
        self.assertEqual('solver', empty.metadata['gpu_pool'])
        self.assertEqual(['gpu-pt-1'], empty.hosts)
        self.assertTrue(pool['isolate'])
        self.assertIn('Host aggregate solver exists, empty and without '
                      'metadata (left by an interrupted create): it becomes '
                      'the pool.', self.logger.output)

    def test_checks_before_the_first_write(self):
        cases = [
            (self.spec(), ['nope'], 'Unknown compute host(s): nope'),
            (self.spec(), ['plain-1'], 'offers no CUSTOM_PCI_10DE_2331'),
            (self.spec('bm', 'baremetal',
                       resource_class='baremetal.gpu-a100'),
             ['bm-1'], 'offers no CUSTOM_BAREMETAL_GPU_A100'),
        ]
        for spec, hosts, message in cases:
            exc = self.assertRaises(exceptions.CommandError,
                                    pool_ops.create, self.client, spec,
                                    hosts)
            self.assertIn(message, str(exc))
        self.assertEqual([], self.compute.calls)
        self.assertEqual([], self.placement.puts())

    def test_zone_rules(self):
        self.cloud.aggregates.append(
            fakes.Aggregate('rack1', zone='az1', hosts=['gpu-pt-1']))
        exc = self.assertRaises(
            exceptions.CommandError, pool_ops.create, self.client,
            self.spec(zone='az2'), ['gpu-pt-1'])
        self.assertIn('a host can be in one zone only', str(exc))
        self.cloud.aggregates.pop()
        self.cloud.busy.add('gpu-pt-1')
        exc = self.assertRaises(
            exceptions.CommandError, pool_ops.create, self.client,
            self.spec(zone='az2'), ['gpu-pt-1'])
        self.assertIn('has instances', str(exc))
        self.assertEqual([], self.compute.calls)

    def test_failure_after_the_aggregate_exists_removes_everything(self):
        traits = list(self.pt.traits)
        self.placement.failures[self.pt.uuid] = 500
        exc = self.assertRaises(
            exceptions.CommandError, pool_ops.create, self.client,
            self.spec(isolate=True), ['gpu-pt-1'])
        self.assertIn('Creating pool solver failed at step 4 of 5 (add '
                      'trait CUSTOM_GPU_POOL_SOLVER to resource provider '
                      'gpu-pt-1.test): ', str(exc))
        self.assertIn('injected failure', str(exc))
        # the exact command, not "...": rebuilt from the request when
        # called as a library, the operator's own argv from the CLI
        self.assertIn('Everything it had done was undone (3 step(s)): the '
                      'cloud is as it was. Fix the cause and run "openstack '
                      'gpu pool create --mode passthrough --alias h100 '
                      '--pci-id 10de:2331 --isolate --host gpu-pt-1 solver" '
                      'again.', str(exc))
        self.assertNotIn('...', str(exc))
        self.assertEqual([], self.cloud.aggregates)
        self.assertNotIn('CUSTOM_GPU_POOL_SOLVER', self.placement.traits)
        self.assertEqual(traits, self.pt.traits)
        # the host never joined: its trait comes first
        self.assertEqual(
            ['create', 'metadata', 'metadata', 'delete'],
            [c[0] for c in self.compute.calls])

    def test_rerun_finishes_an_interrupted_create(self):
        class Killed(Exception):
            pass

        def kill_at(at):
            def on_step(index, step):
                if index == at:
                    raise Killed()
            return on_step

        # killed before the metadata: an empty aggregate is left
        self.assertRaises(Killed, pool_ops.create, self.client,
                          self.spec(isolate=True), ['gpu-pt-1'],
                          on_step=kill_at(1))
        self.assertEqual([('create', 'solver')], self.compute.calls)
        # killed again before the host's trait
        self.assertRaises(Killed, pool_ops.create, self.client,
                          self.spec(isolate=True), ['gpu-pt-1'],
                          on_step=kill_at(2))
        self.assertEqual('solver', self.cloud.aggregates[0].metadata[
            'gpu_pool'])
        self.assertIn('CUSTOM_GPU_POOL_SOLVER', self.placement.traits)
        self.assertNotIn('CUSTOM_GPU_POOL_SOLVER', self.pt.traits)
        pool, plan = pool_ops.create(self.client, self.spec(isolate=True),
                                     ['gpu-pt-1'])
        # only what was missing
        self.assertEqual(['provider.add_traits', 'aggregate.add_host'],
                         [step.op for step in plan])
        self.assertEqual(1, len(self.cloud.aggregates))
        self.assertEqual(['gpu-pt-1'], self.cloud.aggregates[0].hosts)
        self.assertIn('CUSTOM_GPU_POOL_SOLVER', self.pt.traits)
        self.assertTrue(pool['isolate'])
        self.assertEqual(['gpu-pt-1'], pool['hosts'])
        # and once complete, the same create is a no-op
        pool, plan = pool_ops.create(self.client, self.spec(isolate=True),
                                     ['gpu-pt-1'])
        self.assertEqual([], plan.steps)

    def test_dry_run_writes_nothing(self):
        traits = set(self.placement.traits)
        pool, plan = pool_ops.create(self.client, self.spec(isolate=True),
                                     ['gpu-pt-1'], dry_run=True)
        self.assertIsNone(pool)
        self.assertEqual(5, len(plan))
        self.assertEqual([], self.compute.calls)
        self.assertEqual([], self.placement.puts())
        self.assertEqual(traits, self.placement.traits)
        self.assertEqual([], self.cloud.aggregates)

    def test_generation_conflict_is_retried(self):
        self.placement.conflicts[self.pt.uuid] = 2
        pool_ops.create(self.client, self.spec(isolate=True), ['gpu-pt-1'])
        self.assertIn('CUSTOM_GPU_POOL_SOLVER', self.pt.traits)


class TestHosts(PoolOpsTestCase):
    def test_add_hosts_is_all_or_nothing(self):
        pool_ops.create(self.client, self.spec('ws', 'vgpu'), [])
        metadata = dict(self.cloud.aggregates[0].metadata)
        self.compute.fail_add_host.add('gpu-vgpu-2')
        exc = self.assertRaises(
            exceptions.CommandError, pool_ops.add_hosts, self.client, 'ws',
            ['gpu-vgpu-1', 'gpu-vgpu-2'])
        self.assertIn('Adding gpu-vgpu-1, gpu-vgpu-2 to pool ws failed at '
                      'step 8 of 8 (add host gpu-vgpu-2 to aggregate ws): ',
                      str(exc))
        self.assertIn('Compute service is down', str(exc))
        self.assertIn('Everything it had done was undone (7 step(s)): the '
                      'cloud is as it was. Fix the cause and run "openstack '
                      'gpu pool add host ws gpu-vgpu-1 gpu-vgpu-2" again.',
                      str(exc))
        # gpu-vgpu-1 had joined: it left again, with its traits and records
        self.assertEqual([], self.cloud.aggregates[0].hosts)
        self.assertEqual(metadata, self.cloud.aggregates[0].metadata)
        for root in (self.vgpu, self.second):
            for p in self.cloud.tree(root):
                self.assertNotIn('CUSTOM_NVIDIA_35', p.traits)
        # fixed: the same command adds both
        self.compute.fail_add_host.clear()
        pool, plan = pool_ops.add_hosts(self.client, 'ws',
                                        ['gpu-vgpu-1', 'gpu-vgpu-2'])
        self.assertEqual(['gpu-vgpu-1', 'gpu-vgpu-2'], pool['hosts'])
        for root in (self.vgpu, self.second):
            for p in self.cloud.tree(root):
                if p.parent:
                    self.assertEqual(['CUSTOM_NVIDIA_35'], p.traits)
                    self.assertEqual('CUSTOM_NVIDIA_35',
                                     self.cloud.aggregates[0].metadata[
                                         'gpu_tagged:' + p.uuid])

    def test_remove_hosts_is_all_or_nothing(self):
        pool_ops.create(self.client, self.spec('ws', 'vgpu', isolate=True),
                        ['gpu-vgpu-1', 'gpu-vgpu-2'])
        agg = self.cloud.aggregates[0]
        before = (sorted(agg.hosts), dict(agg.metadata),
                  {p.uuid: sorted(p.traits) for p in self.cloud.providers})
        pgpu = next(p for p in self.cloud.tree(self.second) if p.parent)
        self.placement.failures[pgpu.uuid] = 500
        exc = self.assertRaises(
            exceptions.CommandError, pool_ops.remove_hosts, self.client,
            'ws', ['gpu-vgpu-1', 'gpu-vgpu-2'])
        self.assertIn('Removing gpu-vgpu-1, gpu-vgpu-2 from pool ws failed '
                      'at step', str(exc))
        self.assertIn('Everything it had done was undone', str(exc))
        self.assertEqual(before, (
            sorted(agg.hosts), dict(agg.metadata),
            {p.uuid: sorted(p.traits) for p in self.cloud.providers}))
        del self.placement.failures[pgpu.uuid]
        pool, plan = pool_ops.remove_hosts(self.client, 'ws',
                                           ['gpu-vgpu-1', 'gpu-vgpu-2'])
        self.assertEqual([], pool['hosts'])
        self.assertEqual([], agg.hosts)
        self.assertEqual([], [k for k in agg.metadata
                              if k.startswith('gpu_tagged:')])
        for root in (self.vgpu, self.second):
            for p in self.cloud.tree(root):
                self.assertNotIn('CUSTOM_NVIDIA_35', p.traits)
                self.assertNotIn('CUSTOM_GPU_POOL_WS', p.traits)

    def test_placement_mirror_is_finished_and_removal_races_retried(self):
        pool_ops.create(self.client, self.spec(), [])
        agg = self.cloud.aggregates[0]
        # Nova lost the race mirroring the host into Placement (it only
        # logs that): the host must still end up in the Placement aggregate
        self.compute.unmirrored.add('gpu-pt-1')
        pool_ops.add_hosts(self.client, 'solver', ['gpu-pt-1'])
        self.assertEqual(['gpu-pt-1'], agg.hosts)
        self.assertEqual([agg.uuid], self.pt.aggregates)
        # Nova answers 409 twice (its Placement write lost a race, nothing
        # changed): the removal is tried again and goes through
        self.compute.remove_conflicts['gpu-pt-1'] = 2
        pool_ops.remove_hosts(self.client, 'solver', ['gpu-pt-1'])
        self.assertEqual([], agg.hosts)
        self.assertEqual([], self.pt.aggregates)
        self.assertEqual(3, self.compute.calls.count(
            ('remove', 'solver', 'gpu-pt-1')))

    def test_removal_losing_every_race_is_undone(self):
        pool_ops.create(self.client, self.spec(isolate=True), ['gpu-pt-1'])
        agg = self.cloud.aggregates[0]
        self.compute.remove_conflicts['gpu-pt-1'] = 100
        exc = self.assertRaises(exceptions.CommandError,
                                pool_ops.remove_hosts, self.client, 'solver',
                                ['gpu-pt-1'])
        self.assertIn('Something else changed it at the same time',
                      str(exc))
        self.assertIn('Everything it had done was undone', str(exc))
        self.assertEqual(['gpu-pt-1'], agg.hosts)
        self.assertEqual([agg.uuid], self.pt.aggregates)
        self.assertIn('CUSTOM_GPU_POOL_SOLVER', self.pt.traits)

    def test_one_type_per_pgpu(self):
        pool_ops.create(self.client, self.spec('ws', 'vgpu'),
                        ['gpu-vgpu-1'])
        exc = self.assertRaises(
            exceptions.CommandError, pool_ops.create, self.client,
            self.spec('ws2', 'vgpu', vgpu_type='nvidia-36'),
            ['gpu-vgpu-1'])
        self.assertIn('2 pGPU provider(s) already serve CUSTOM_NVIDIA_35 for '
                      'pool ws',
                      str(exc))

    def test_remove_takes_off_only_this_pools_traits(self):
        pool_ops.create(self.client, self.spec('ws', 'vgpu', isolate=True),
                        ['gpu-vgpu-1'])
        pool_ops.create(self.client, self.spec('ws-b', 'vgpu'),
                        ['gpu-vgpu-1'])
        for p in self.pgpus():
            p.traits.append('CUSTOM_OPERATOR_TAG')
        pool_ops.remove_hosts(self.client, 'ws', ['gpu-vgpu-1'])
        # ws-b serves the same type on this host: the type trait stays
        for p in self.pgpus():
            self.assertEqual(['CUSTOM_NVIDIA_35', 'CUSTOM_OPERATOR_TAG'],
                             sorted(p.traits))
        self.assertNotIn('CUSTOM_GPU_POOL_WS', self.vgpu.traits)
        pool_ops.remove_hosts(self.client, 'ws-b', ['gpu-vgpu-1'])
        for p in self.pgpus():
            self.assertEqual(['CUSTOM_OPERATOR_TAG'], p.traits)

    def test_remove_a_host_with_servers_of_the_pool_refused(self):
        from gpuclient.ops import flavor_ops

        pool_ops.create(self.client, self.spec('ws', 'vgpu'),
                        ['gpu-vgpu-1', 'gpu-vgpu-2'])
        flavor_ops.create(self.client, 'g1.ws', 'ws', 4, 8192, 20)
        flavor = next(f for f in self.cloud.flavors if f['name'] == 'g1.ws')
        # a server of that flavor on gpu-vgpu-1, as Nova lists it at 2.47
        self.cloud.servers.append({
            'id': 'srv-1', 'name': 'vm', 'status': 'ACTIVE',
            'OS-EXT-SRV-ATTR:host': 'gpu-vgpu-1',
            'flavor': {'original_name': 'g1.ws', 'vcpus': 4, 'ram': 8192,
                       'disk': 20,
                       'extra_specs': dict(flavor['extra_specs'])}})
        agg = self.cloud.aggregates[0]
        calls = len(self.compute.calls)
        traits = {p.uuid: sorted(p.traits) for p in self.cloud.providers}
        exc = self.assertRaises(exceptions.CommandError,
                                pool_ops.remove_hosts, self.client, 'ws',
                                ['gpu-vgpu-1'])
        self.assertIn('gpu-vgpu-1 runs 1 server(s) of flavor g1.ws '
                      '(srv-1)', str(exc))
        self.assertIn('openstack gpu host drain gpu-vgpu-1', str(exc))
        # nothing written; the servers read once, every project's
        self.assertEqual(calls, len(self.compute.calls))
        self.assertEqual(['gpu-vgpu-1', 'gpu-vgpu-2'], sorted(agg.hosts))
        self.assertEqual(traits, {p.uuid: sorted(p.traits)
                                  for p in self.cloud.providers})
        reads = [g for g in self.compute.gets if g[0] == '/servers/detail']
        self.assertEqual(1, len(reads))
        self.assertEqual('2.47', reads[0][1])
        self.assertEqual('1', str(reads[0][2].get('all_tenants')))
        # the other host runs none of them
        pool_ops.remove_hosts(self.client, 'ws', ['gpu-vgpu-2'])
        self.assertEqual(['gpu-vgpu-1'], agg.hosts)
        # --allow-servers: removed anyway (the servers are not read)
        reads = len(self.compute.gets)
        pool, _plan = pool_ops.remove_hosts(self.client, 'ws',
                                            ['gpu-vgpu-1'],
                                            allow_servers=True)
        self.assertEqual([], pool['hosts'])
        self.assertNotIn('/servers/detail',
                         [g[0] for g in self.compute.gets[reads:]])

    def test_delete_force_with_servers_of_the_pool_refused(self):
        pool_ops.create(self.client, self.spec('ws', 'vgpu'),
                        ['gpu-vgpu-1'])
        # the flavor is gone (else the pool has a dependent); its servers
        # keep their embedded copy, which steers to the pool
        self.cloud.servers.append({
            'id': 'srv-1', 'name': 'vm', 'OS-EXT-SRV-ATTR:host': 'gpu-vgpu-1',
            'flavor': {'original_name': 'old', 'extra_specs': {
                'aggregate_instance_extra_specs:gpu_pool': 'ws',
                'resources:VGPU': '1',
                'trait:CUSTOM_NVIDIA_35': 'required'}}})
        calls = len(self.compute.calls)
        exc = self.assertRaises(exceptions.CommandError, pool_ops.delete,
                                self.client, 'ws', force=True)
        self.assertIn('gpu-vgpu-1 runs 1 server(s) of flavor old (srv-1)',
                      str(exc))
        self.assertIn('--allow-servers', str(exc))
        self.assertEqual(calls, len(self.compute.calls))
        self.assertEqual(['ws'], [a.name for a in self.cloud.aggregates])
        pool_ops.delete(self.client, 'ws', force=True, allow_servers=True)
        self.assertEqual([], self.cloud.aggregates)

    def test_remove_a_stranger(self):
        pool_ops.create(self.client, self.spec(), [])
        exc = self.assertRaises(exceptions.CommandError,
                                pool_ops.remove_hosts, self.client,
                                'solver', ['gpu-pt-1'])
        self.assertIn('Not in pool solver: gpu-pt-1', str(exc))


class TestSetAndDelete(PoolOpsTestCase):
    def test_isolation_on_and_off(self):
        pool_ops.create(self.client, self.spec(), ['gpu-pt-1'])
        pool, plan = pool_ops.set_isolation(self.client, 'solver', True)
        self.assertEqual(
            ['trait.create', 'provider.add_traits', 'aggregate.metadata'],
            [step.op for step in plan])
        self.assertTrue(pool['isolate'])
        self.assertIn('CUSTOM_GPU_POOL_SOLVER', self.pt.traits)
        pool, plan = pool_ops.set_isolation(self.client, 'solver', False)
        self.assertFalse(pool['isolate'])
        self.assertNotIn('CUSTOM_GPU_POOL_SOLVER', self.pt.traits)
        self.assertNotIn('CUSTOM_GPU_POOL_SOLVER', self.placement.traits)

    def test_isolation_refused_for_baremetal(self):
        pool_ops.create(self.client, self.spec(
            'bm', 'baremetal', resource_class='baremetal.gpu-h100'),
            ['bm-1'])
        exc = self.assertRaises(exceptions.CommandError,
                                pool_ops.set_isolation, self.client, 'bm',
                                True)
        self.assertIn('Ironic driver', str(exc))

    def test_projects_and_properties(self):
        pool_ops.create(self.client, self.spec(projects=['id-a']), [])
        pool, _ = pool_ops.update_metadata(
            self.client, 'solver', projects_add=['b', 'id-a'],
            properties={'owner': 'x'})
        self.assertEqual(['id-a', 'id-b'], pool['projects'])
        agg = self.cloud.aggregates[0]
        # one key per project
        self.assertEqual(
            {'filter_tenant_id_id-a': 'id-a', 'filter_tenant_id_id-b': 'id-b'},
            {k: v for k, v in agg.metadata.items()
             if k.startswith('filter')})
        self.assertEqual('x', agg.metadata['owner'])
        pool, _ = pool_ops.update_metadata(
            self.client, 'solver', projects_remove=['id-a'],
            remove_properties=['owner'])
        self.assertEqual(['id-b'], pool['projects'])
        self.assertEqual({'filter_tenant_id_id-b': 'id-b'}, {
            k: v for k, v in agg.metadata.items() if k.startswith('filter')})
        self.assertNotIn('owner', agg.metadata)
        exc = self.assertRaises(
            exceptions.CommandError, pool_ops.update_metadata, self.client,
            'solver', projects_remove=['id-zzz'])
        self.assertIn('is not a project of pool solver', str(exc))

    def test_delete(self):
        pool_ops.create(self.client, self.spec(isolate=True), ['gpu-pt-1'])
        exc = self.assertRaises(exceptions.CommandError, pool_ops.delete,
                                self.client, 'solver')
        self.assertIn('still has hosts', str(exc))
        pool_ops.delete(self.client, 'solver', force=True)
        self.assertEqual([], self.cloud.aggregates)
        self.assertNotIn('CUSTOM_GPU_POOL_SOLVER', self.pt.traits)
        self.assertNotIn('CUSTOM_GPU_POOL_SOLVER', self.placement.traits)


class TestFollowups(PoolOpsTestCase):
    def test_limiting_an_open_pool_with_public_flavors(self):
        pool_ops.create(self.client, self.spec(), ['gpu-pt-1'])
        self.cloud.add_flavor('pub', extra_specs={
            'aggregate_instance_extra_specs:gpu_pool': 'solver',
            'pci_passthrough:alias': 'h100:1'})
        agg = self.cloud.aggregates[0]
        metadata = dict(agg.metadata)
        exc = self.assertRaises(
            exceptions.CommandError, pool_ops.set_pool, self.client,
            'solver', projects_add=['id-a'])
        self.assertIn('Limiting pool solver to id-a would make its public '
                      'flavors pub unusable by every other project',
                      str(exc))
        self.assertIn('"openstack gpu flavor delete pub", then "openstack '
                      'gpu flavor create --pool solver --vcpus', str(exc))
        self.assertIn('--private --project id-a pub"', str(exc))
        self.assertIn('--allow-public-flavors', str(exc))
        self.assertEqual(metadata, agg.metadata)
        pool, _plan = pool_ops.set_pool(self.client, 'solver',
                                        projects_add=['id-a'],
                                        allow_public_flavors=True)
        self.assertEqual(['id-a'], pool['projects'])
        self.assertIn('keeps public flavors (pub)', self.logger.output)
        # a pool already limited: adding a project changes nothing for
        # other projects, no refusal
        pool, _plan = pool_ops.set_pool(self.client, 'solver',
                                        projects_add=['id-b'])
        self.assertEqual(['id-a', 'id-b'], pool['projects'])

    def test_concurrent_removal_of_the_last_projects_is_put_back(self):
        pool_ops.create(self.client, self.spec(projects=['id-a', 'id-b']),
                        [])
        agg = self.cloud.aggregates[0]

        def racer(index, step):
            # the other "unset --project id-b" lands just before ours
            agg.metadata.pop('filter_tenant_id_id-b', None)

        exc = self.assertRaises(
            exceptions.CommandError, pool_ops.update_metadata, self.client,
            'solver', projects_remove=['id-a'], on_step=racer)
        self.assertIn('Pool solver had no project left after removing '
                      'id-a', str(exc))
        self.assertIn('id-a was put back', str(exc))
        self.assertEqual({'filter_tenant_id_id-a': 'id-a'},
                         {k: v for k, v in agg.metadata.items()
                          if k.startswith('filter')})
        # asked for: --open-to-all opens it
        pool, _plan = pool_ops.update_metadata(
            self.client, 'solver', projects_remove=['id-a'],
            open_to_all=True)
        self.assertEqual([], pool['projects'])

    def test_a_pool_deleted_during_the_removal_is_said_not_crashed_on(self):
        # the other change takes the last other project, then deletes the
        # pool after this command's read-back and before it reads the pool
        # again to put its project back: nothing to put back, and a
        # message that says so
        pool_ops.create(self.client, self.spec(projects=['id-a', 'id-b']),
                        [])
        agg = self.cloud.aggregates[0]
        first = snapshot.read_aggregates
        raced = []

        def read_aggregates(client, **kwargs):
            if raced:
                raced.append('read')
                if len(raced) > 2:  # the read-back's read went before
                    return model.Cloud([], None, None)
            return first(client, **kwargs)

        def racer(index, step):
            agg.metadata.pop('filter_tenant_id_id-b', None)
            raced.append(index)

        self.useFixture(fixtures.MockPatchObject(
            snapshot, 'read_aggregates', read_aggregates))
        exc = self.assertRaises(
            exceptions.CommandError, pool_ops.update_metadata, self.client,
            'solver', projects_remove=['id-a'], on_step=racer)
        self.assertIn('Pool solver had no project left after removing '
                      'id-a, and its aggregate', str(exc))
        self.assertIn('Nothing was put back', str(exc))
        self.assertEqual([0, 'read', 'read'], raced)

    def test_delete_of_an_ordinary_empty_aggregate_needs_force(self):
        plain = fakes.Aggregate('solver')
        self.cloud.aggregates.append(plain)
        exc = self.assertRaises(exceptions.CommandError, pool_ops.delete,
                                self.client, 'solver')
        self.assertIn('Host aggregate solver is empty and has no gpu_* '
                      'metadata: it is not a GPU pool', str(exc))
        self.assertIn('run again with --force', str(exc))
        self.assertEqual([plain], self.cloud.aggregates)
        pool_ops.delete(self.client, 'solver', force=True)
        self.assertEqual([], self.cloud.aggregates)


class TestRerunCommand(base.TestCase):
    def test_command_line(self):
        from gpuclient.ops import invocation
        from gpuclient.rules import argv
        self.assertEqual(
            '"openstack --os-cloud c gpu pool set --project \'a b\' p"',
            invocation.invoked_command(
                ['/usr/bin/openstack', '--os-cloud', 'c',
                 '--os-password', 's3cret', '--os-token=t', 'gpu', 'pool',
                 'set', '--project', 'a b', 'p']))
        self.assertIsNone(invocation.invoked_command(['python', '-m', 'x']))
        self.assertEqual('"openstack gpu image set i"',
                         argv.command_line(['gpu', 'image', 'set',
                                            '--dry-run', 'i']))

    def test_delete_names_force_whatever_the_command_line(self):
        """A delete whose undo fails leaves an aggregate without its
        metadata, which only "pool delete --force" deletes: the hint says
        so even when the operator typed no --force."""
        from gpuclient.ops import journal
        from gpuclient.rules import plan as plan_mod
        fixed = plan_mod.Plan('Deleting pool p', rerun='"openstack gpu '
                              'pool delete --force p"', rerun_fixed=True)
        free = plan_mod.Plan('Setting pool p', rerun='"x"')
        argv = ['/usr/bin/openstack', 'gpu', 'pool', 'delete', 'p']
        failure = (0, plan_mod.delete_trait('CUSTOM_GPU_POOL_P'),
                   RuntimeError('boom'), True)
        with mock.patch('sys.argv', argv):
            text = str(journal._failure_error(fixed, failure, [], [], [],
                                              None))
            self.assertIn('run "openstack gpu pool delete --force p" '
                          'again', text)
            text = str(journal._failure_error(free, failure, [], [], [],
                                              None))
            self.assertIn('run "openstack gpu pool delete p" again', text)


class TestProxySpec(base.TestCase):
    def test_fake_uses_real_proxy_methods(self):
        # every method fakes.FakeCompute wires exists on the SDK proxy
        for name in ('get', 'post', 'delete', 'aggregates',
                     'create_aggregate', 'set_aggregate_metadata',
                     'add_host_to_aggregate', 'remove_host_from_aggregate',
                     'delete_aggregate', 'get_aggregate', 'services',
                     'servers'):
            self.assertTrue(hasattr(compute_proxy.Proxy, name), name)


class TestSetZone(PoolOpsTestCase):
    def setUp(self):
        super().setUp()
        pool_ops.create(self.client, self.spec(), ['gpu-pt-1'])
        self.compute.calls[:] = []

    def agg(self, name='solver'):
        return next(a for a in self.cloud.aggregates if a.name == name)

    def test_first_zone_then_another(self):
        pool, plan = pool_ops.set_pool(self.client, 'solver', zone='az1')
        self.assertEqual(['aggregate.add_zone'], [s.op for s in plan])
        self.assertIsNone(plan.steps[0].inverse)  # Nova takes none off
        self.assertEqual('az1', pool['zone'])
        self.assertEqual([('metadata', 'solver',
                           {'availability_zone': 'az1'})],
                         self.compute.calls)
        # a zone replaced: undone by putting the old one back
        pool, plan = pool_ops.set_pool(self.client, 'solver', zone='az2')
        (step,) = plan
        self.assertEqual('aggregate.metadata', step.op)
        self.assertEqual({'availability_zone': 'az1'},
                         step.inverse.args['metadata'])
        self.assertEqual('az2', pool['zone'])
        self.assertEqual('az2', self.agg().availability_zone)

    def test_same_zone_is_nothing_to_do(self):
        pool_ops.set_pool(self.client, 'solver', zone='az1')
        self.compute.calls[:] = []
        _pool, plan = pool_ops.set_pool(self.client, 'solver', zone='az1')
        self.assertFalse(plan)
        self.assertEqual([], self.compute.calls)

    def test_dry_run_writes_nothing(self):
        _pool, plan = pool_ops.set_pool(self.client, 'solver', zone='az1',
                                        dry_run=True)
        self.assertEqual(
            ['1. put host aggregate solver in availability zone az1 (not '
             'undone on failure)'], plan.lines())
        self.assertEqual([], self.compute.calls)
        self.assertIsNone(self.agg().availability_zone)

    def test_host_in_another_zone_refused_before_any_write(self):
        # the fake refuses it as Nova does: without the check, the
        # metadata write would fail with a 400
        self.cloud.aggregates.append(
            fakes.Aggregate('rack1', zone='east', hosts=['gpu-pt-1']))
        exc = self.assertRaises(exceptions.CommandError, pool_ops.set_pool,
                                self.client, 'solver', zone='west')
        self.assertIn('Host gpu-pt-1 is in availability zone east (aggregate '
                      'rack1) and a host can be in one zone only', str(exc))
        self.assertEqual([], self.compute.calls)
        # the zone the host is in already is fine
        pool, _plan = pool_ops.set_pool(self.client, 'solver', zone='east')
        self.assertEqual('east', pool['zone'])

    def test_host_with_instances_refused(self):
        self.cloud.busy.add('gpu-pt-1')
        exc = self.assertRaises(exceptions.CommandError, pool_ops.set_pool,
                                self.client, 'solver', zone='az2')
        self.assertIn('Host gpu-pt-1 has instances', str(exc))
        self.assertEqual([], self.compute.calls)

    def test_zone_name_checked(self):
        exc = self.assertRaises(exceptions.CommandError, pool_ops.set_pool,
                                self.client, 'solver', zone='a:b')
        self.assertIn('--zone', str(exc))
        self.assertEqual([], self.compute.calls)

    def test_zone_comes_last_and_its_failure_undoes_the_rest(self):
        def refuse_the_zone(_index, step):
            # another writer puts the host in zone east meanwhile: Nova
            # refuses the zone with a 400
            if step.op == 'aggregate.add_zone':
                self.cloud.aggregates.append(fakes.Aggregate(
                    'rack1', zone='east', hosts=['gpu-pt-1']))

        exc = self.assertRaises(
            exceptions.CommandError, pool_ops.set_pool, self.client,
            'solver', zone='az1', isolate=True, properties={'owner': 'x'},
            on_step=refuse_the_zone)
        self.assertIn('Changing pool solver failed at step 5 of 5 (put host '
                      'aggregate solver in availability zone az1)', str(exc))
        self.assertIn('Everything it had done was undone (4 step(s))',
                      str(exc))
        self.assertNotIn('CUSTOM_GPU_POOL_SOLVER', self.pt.traits)
        self.assertIsNone(self.agg().availability_zone)
        self.assertNotIn('owner', self.agg().metadata)
