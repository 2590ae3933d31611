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

"""Pool operations: all-or-nothing, host by host, and only our traits.

Placement is answered by requests-mock with provider traits kept in the
FakeCloud (generations included); the SDK compute proxy is a spec'd mock
whose aggregate calls keep their state in plain objects.
"""

import re
from unittest import mock

from openstack.compute.v2 import _proxy as compute_proxy
from osc_lib import exceptions

from gpuclient import pool_ops
from gpuclient import pools
from gpuclient.tests.unit import base
from gpuclient.tests.unit import fakes

URL = fakes.PLACEMENT_URL


class FakeCompute:
    """State behind a mock(spec=compute Proxy) for aggregate calls."""

    def __init__(self, cloud, proxy):
        self.cloud = cloud
        self.calls = []
        self.fail_add_host = set()
        proxy.aggregates.side_effect = lambda: list(cloud.aggregates)
        proxy.create_aggregate.side_effect = self.create
        proxy.set_aggregate_metadata.side_effect = self.set_metadata
        proxy.add_host_to_aggregate.side_effect = self.add_host
        proxy.remove_host_from_aggregate.side_effect = self.remove_host
        proxy.delete_aggregate.side_effect = self.delete
        proxy.get_aggregate.side_effect = lambda agg: agg
        proxy.services.side_effect = self.services
        proxy.servers.side_effect = lambda **kw: iter(
            [object()] if kw.get('compute_host') in cloud.busy else [])
        proxy.find_project = None

    def services(self, **query):
        return [
            mock.Mock(host=hv['service']['host'], availability_zone='nova',
                      status='enabled', state='up', id=hv['service']['id'])
            for hv in self.cloud.hypervisors
        ]

    def create(self, name, availability_zone=None):
        self.calls.append(('create', name))
        agg = fakes.Aggregate(name, zone=availability_zone)
        self.cloud.aggregates.append(agg)
        return agg

    def set_metadata(self, agg, metadata):
        self.calls.append(('metadata', agg.name, dict(metadata)))
        for key, value in metadata.items():
            if value is None:
                agg.metadata.pop(key, None)
            else:
                agg.metadata[key] = value
        return agg

    def add_host(self, agg, host):
        self.calls.append(('add', agg.name, host))
        if host in self.fail_add_host:
            from openstack import exceptions as sdk_exc
            raise sdk_exc.HttpException(
                message='boom', details='Compute service is down',
                http_status=500)
        if host in agg.hosts:
            from openstack import exceptions as sdk_exc
            raise sdk_exc.ConflictException(
                message='conflict', details='already in aggregate',
                http_status=409)
        agg.hosts.append(host)
        return agg

    def remove_host(self, agg, host):
        self.calls.append(('remove', agg.name, host))
        agg.hosts.remove(host)
        return agg

    def delete(self, agg, ignore_missing=True):
        self.calls.append(('delete', agg.name))
        self.cloud.aggregates.remove(agg)


class TraitPlacementFixture(fakes.PlacementFixture):
    """Adds stateful trait and aggregate-membership answers."""

    def _setUp(self):
        super()._setUp()
        self.traits = {'COMPUTE_NODE', 'OWNER_NOVA',
                       'COMPUTE_MANAGED_PCI_DEVICE'}
        self.generations = {p.uuid: 1 for p in self.cloud.providers}
        self.conflicts = {}  # uuid -> number of 409s to answer first
        self.failures = {}   # uuid -> status to answer on PUT traits
        for p in self.cloud.providers:
            path = '%s/resource_providers/%s/traits' % (URL, p.uuid)
            self.mock.get(path, json=self._get_traits(p))
            self.mock.put(path, json=self._put_traits(p))
        self.mock.get(URL + '/traits', json=self._list_traits)
        trait_url = re.compile(re.escape(URL) + '/traits/[A-Z0-9_]+$')
        self.mock.put(trait_url, status_code=201, json=self._create_trait)
        self.mock.delete(trait_url, status_code=204,
                         json=self._delete_trait)

    def _get_traits(self, p):
        def answer(request, context):
            return {'traits': list(p.traits),
                    'resource_provider_generation':
                    self.generations[p.uuid]}
        return answer

    def _put_traits(self, p):
        def answer(request, context):
            if self.failures.get(p.uuid):
                context.status_code = self.failures[p.uuid]
                return {'errors': [{'detail': 'injected failure'}]}
            body = request.json()
            if self.conflicts.get(p.uuid):
                self.conflicts[p.uuid] -= 1
                self.generations[p.uuid] += 1
                context.status_code = 409
                return {'errors': [{'detail': 'generation conflict'}]}
            if body['resource_provider_generation'] != (
                    self.generations[p.uuid]):
                context.status_code = 409
                return {'errors': [{'detail': 'generation conflict'}]}
            p.traits = list(body['traits'])
            self.generations[p.uuid] += 1
            return {'traits': p.traits, 'resource_provider_generation':
                    self.generations[p.uuid]}
        return answer

    def _list_traits(self, request, context):
        wanted = request.qs['name'][0].split(':', 1)[1].upper().split(',')
        return {'traits': sorted(t for t in self.traits if t in wanted)}

    def _create_trait(self, request, context):
        self.traits.add(request.path.rsplit('/', 1)[1].upper())
        return None

    def _delete_trait(self, request, context):
        name = request.path.rsplit('/', 1)[1].upper()
        if any(name in p.traits for p in self.cloud.providers):
            context.status_code = 409
            return {'errors': [{'detail': 'trait in use'}]}
        self.traits.discard(name)
        return None

    def puts(self):
        return [r for r in self.mock.request_history
                if r.method == 'PUT' and r.path.endswith('/traits')]


class PoolOpsTestCase(base.TestCase):
    def setUp(self):
        super().setUp()
        self.cloud = fakes.FakeCloud()
        self.cloud.busy = set()
        self.pt = self.cloud.pci_host('gpu-pt-1', nodename='gpu-pt-1.test')
        self.vgpu = self.cloud.vgpu_host('gpu-vgpu-1')
        self.bm = self.cloud.baremetal_node('bm-1', fakes.uid('node'))
        self.cloud.compute_host('plain-1')
        self.second = self.cloud.vgpu_host('gpu-vgpu-2')
        self.placement = self.useFixture(TraitPlacementFixture(self.cloud))
        cm = self.useFixture(fakes.ClientManagerFixture(self.cloud))
        self.compute = FakeCompute(self.cloud, cm.compute)
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
        pool, created = pool_ops.create(
            self.client, self.spec(isolate=True), ['gpu-pt-1'])
        self.assertTrue(created)
        agg = self.cloud.aggregates[0]
        self.assertEqual(['gpu-pt-1'], agg.hosts)
        self.assertEqual('required',
                         agg.metadata['trait:CUSTOM_GPU_POOL_SOLVER'])
        self.assertIn('CUSTOM_GPU_POOL_SOLVER', self.pt.traits)
        self.assertIn('COMPUTE_NODE', self.pt.traits)  # kept
        self.assertIn('CUSTOM_GPU_POOL_SOLVER', self.placement.traits)
        self.assertEqual(['gpu-pt-1'], pool['hosts'])
        self.assertTrue(pool['isolate'])

    def test_vgpu_type_trait_on_pgpus_only(self):
        pool_ops.create(self.client, self.spec('ws', 'vgpu'),
                        ['gpu-vgpu-1'])
        for p in self.pgpus():
            self.assertEqual(['CUSTOM_NVIDIA_35'], p.traits)
        self.assertNotIn('CUSTOM_NVIDIA_35', self.vgpu.traits)

    def test_identical_create_is_a_no_op(self):
        pool_ops.create(self.client, self.spec(isolate=True), ['gpu-pt-1'])
        before = len(self.compute.calls), len(self.placement.puts())
        pool, created = pool_ops.create(
            self.client, self.spec(isolate=True), ['gpu-pt-1'])
        self.assertFalse(created)
        self.assertEqual(before, (len(self.compute.calls),
                                  len(self.placement.puts())))

    def test_conflicting_create_shows_the_difference(self):
        pool_ops.create(self.client, self.spec(), ['gpu-pt-1'])
        exc = self.assertRaises(
            exceptions.CommandError, pool_ops.create, self.client,
            self.spec(isolate=True), [])
        self.assertIn('isolate: False (requested True)', str(exc))
        self.assertIn("hosts: ['gpu-pt-1'] (requested [])", str(exc))

    def test_ordinary_aggregate_is_not_touched(self):
        self.cloud.aggregates.append(fakes.Aggregate('solver'))
        exc = self.assertRaises(
            exceptions.CommandError, pool_ops.create, self.client,
            self.spec(), [])
        self.assertIn('not a GPU pool', str(exc))
        self.assertEqual([], self.compute.calls)

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
        self.placement.failures[self.pt.uuid] = 500
        exc = self.assertRaises(
            exceptions.CommandError, pool_ops.create, self.client,
            self.spec(isolate=True), ['gpu-pt-1'])
        self.assertIn('what it had made was removed', str(exc))
        self.assertIn('injected failure', str(exc))
        self.assertEqual([], self.cloud.aggregates)
        self.assertNotIn('CUSTOM_GPU_POOL_SOLVER', self.placement.traits)
        self.assertEqual(
            ['create', 'metadata', 'add', 'remove', 'delete'],
            [c[0] for c in self.compute.calls])

    def test_generation_conflict_is_retried(self):
        self.placement.conflicts[self.pt.uuid] = 2
        pool_ops.create(self.client, self.spec(isolate=True), ['gpu-pt-1'])
        self.assertIn('CUSTOM_GPU_POOL_SOLVER', self.pt.traits)


class TestHosts(PoolOpsTestCase):
    def test_add_hosts_reports_what_was_done(self):
        pool_ops.create(self.client, self.spec('ws', 'vgpu'), [])
        second = self.second
        self.compute.fail_add_host.add('gpu-vgpu-2')
        exc = self.assertRaises(
            exceptions.CommandError, pool_ops.add_hosts, self.client, 'ws',
            ['gpu-vgpu-1', 'gpu-vgpu-2'])
        self.assertIn('Adding host gpu-vgpu-2 (pool ws) failed', str(exc))
        self.assertIn('Done: gpu-vgpu-1', str(exc))
        self.assertEqual(['gpu-vgpu-1'], self.cloud.aggregates[0].hosts)
        for p in self.cloud.tree(second):
            self.assertNotIn('CUSTOM_NVIDIA_35', p.traits)

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

    def test_remove_a_stranger(self):
        pool_ops.create(self.client, self.spec(), [])
        exc = self.assertRaises(exceptions.CommandError,
                                pool_ops.remove_hosts, self.client,
                                'solver', ['gpu-pt-1'])
        self.assertIn('Not in pool solver: gpu-pt-1', str(exc))


class TestSetAndDelete(PoolOpsTestCase):
    def test_isolation_on_and_off(self):
        pool_ops.create(self.client, self.spec(), ['gpu-pt-1'])
        pool, changed = pool_ops.set_isolation(self.client, 'solver', True)
        self.assertTrue(changed)
        self.assertTrue(pool['isolate'])
        self.assertIn('CUSTOM_GPU_POOL_SOLVER', self.pt.traits)
        pool, changed = pool_ops.set_isolation(self.client, 'solver', False)
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
        self.assertEqual('id-a', agg.metadata['filter_tenant_id'])
        self.assertEqual('id-b', agg.metadata['filter_tenant_id2'])
        pool, _ = pool_ops.update_metadata(
            self.client, 'solver', projects_remove=['id-a'],
            remove_properties=['owner'])
        self.assertEqual({'filter_tenant_id': 'id-b'}, {
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


class TestProxySpec(base.TestCase):
    def test_fake_uses_real_proxy_methods(self):
        # every method FakeCompute wires exists on the SDK proxy
        for name in ('aggregates', 'create_aggregate',
                     'set_aggregate_metadata', 'add_host_to_aggregate',
                     'remove_host_from_aggregate', 'delete_aggregate',
                     'get_aggregate', 'services', 'servers'):
            self.assertTrue(hasattr(compute_proxy.Proxy, name), name)
