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

"""Pool writes that must not break their dependents (issue 21: 2, 5, 6).

* pool properties that flavors steer on (AggregateInstanceExtraSpecsFilter)
  are refused with the flavors named, or followed with
  ``--update-dependents`` (read back with ``openstack aggregate show`` and
  ``openstack flavor show``);
* Nova's and Placement's own input rules refuse bad input before the first
  write (nothing is created: read back with plain ``openstack``);
* ``--no-isolate`` keeps the pool's flavors schedulable after every step:
  the apply is stopped after its first step (the journal's ``on_step``
  hook, in process) and Placement itself is asked for allocation
  candidates the way Nova asks (``isolate_aggregates``: ``member_of=!in:``
  the aggregates requiring a trait the flavor does not require).
"""

import json

import openstack
from osc_lib import exceptions

from gpuclient.ops import pool_ops
from gpuclient.tests.functional import base
from gpuclient.tests.functional import faults
from gpuclient.tests.functional import test_pool
from gpuclient.tests.functional import test_safety

GP = 'group_policy'
STEER = 'aggregate_instance_extra_specs:'


class TrustTestCase(test_safety.SafetyTestCase):
    """Setup and cleanup in this process (the OSC shell with the plugin,
    as base.openstack_matrix runs a matrix's later cases); the behaviour
    under test runs as the real executable where the test says so."""

    def setUp(self):
        super().setUp()
        self.client = faults.make_client()

    def gpu(self, *args):
        """``openstack gpu ARGS [-f json]`` in this process, parsed."""
        fmt = () if args[1] in ('set', 'unset') else ('-f', 'json')
        rc, out, err = self.openstack_matrix(1, 'gpu', *args, *fmt)
        if rc:
            raise base.CommandFailed(['openstack', 'gpu', *args], rc, out,
                                     err)
        return json.loads(out) if out.strip() else None

    def make_pool(self, *args):
        name = self.unique_name('pool')
        self.addCleanup(self.drop_pool, name)
        self.gpu('pool', 'create', name, *args)
        return name

    def drop_pool(self, name):
        try:
            pool_ops.delete(self.client, name, force=True)
        except exceptions.CommandError as exc:
            if 'No GPU pool named' not in str(exc):
                raise

    def make_flavor(self, pool, *extra):
        name = self.unique_name('flavor')
        self.addCleanup(self.openstack_raw, 'flavor', 'delete', name)
        self.gpu('flavor', 'create', name, '--pool', pool, '--vcpus', '1',
                 '--ram', '512', '--disk', '1', *extra)
        return name

    def properties(self, pool):
        return self.aggregate(pool)['properties']


class TestSteeringDependents(TrustTestCase):

    def test_refused_with_the_flavors_or_followed(self):
        pool = self.make_pool('--mode', 'vgpu', '--vgpu-type', 'nvidia-35',
                              '--property', 'tier=gold')
        # a gpuclient flavor of several vGPUs (unscoped group_policy) and
        # a hand-made one steering on a pool property
        multi = self.make_flavor(pool, '--gpus', '2')
        hand = self.create_flavor({STEER + 'gpu_pool': pool,
                                   STEER + 'tier': 'gold',
                                   'resources:VGPU': '1'})['name']
        before = self.properties(pool)
        self.assertEqual(('isolate', 'gold'), (before[GP], before['tier']))
        # refused, the flavor named; Nova's aggregate unchanged (the first
        # case as a process)
        for index, (args, flavor, spec) in enumerate((
                (('unset', pool, '--property', GP), multi,
                 'group_policy=isolate'),
                (('set', pool, '--property', GP + '=none'), multi,
                 'group_policy=isolate'),
                (('unset', pool, '--property', 'tier'), hand,
                 STEER + 'tier=gold'))):
            rc, _out, err = self.openstack_matrix(index, 'gpu', 'pool',
                                                  *args)
            self.assertEqual(1, rc, err)
            self.assertIn('would keep flavors %s off its hosts' % flavor,
                          err)
            self.assertIn('%s: %s' % (flavor, spec), err)
            self.assertIn('--update-dependents', err)
            self.assertEqual(before, self.properties(pool))
        # followed: the flavors' specs and the aggregate agree
        self.gpu('pool', 'set', pool, '--property', GP + '=none',
                 '--property', 'tier=platinum', '--update-dependents')
        after = self.properties(pool)
        self.assertEqual(('none', 'platinum'), (after[GP], after['tier']))
        self.assertEqual('none', self.specs(multi)[GP])
        self.assertEqual('platinum', self.specs(hand)[STEER + 'tier'])
        # removing group_policy cannot be followed (Nova refuses several
        # numbered groups without it): refused, nothing changed
        rc, _out, err = self.openstack_matrix(
            1, 'gpu', 'pool', 'unset', pool, '--property', GP,
            '--update-dependents')
        self.assertEqual(1, rc, err)
        self.assertIn('%s (without group_policy, Nova refuses' % multi, err)
        self.assertEqual(after, self.properties(pool))
        self.assertEqual('none', self.specs(multi)[GP])
        # a removed key leaves the flavor's spec too
        self.gpu('pool', 'unset', pool, '--property', 'tier',
                 '--update-dependents')
        self.assertNotIn('tier', self.properties(pool))
        self.assertNotIn(STEER + 'tier', self.specs(hand))
        self.assertEqual(pool, self.specs(hand)[STEER + 'gpu_pool'])


class TestNovaInputRules(TrustTestCase):
    """One case per kind of bad input; the first as a process, the rest
    in process (base.openstack_matrix)."""

    def absent(self, kind, name):
        rc, _out, _err = self.openstack_raw(kind, 'show', name)
        self.assertEqual(1, rc, '%s %s exists' % (kind, name))

    @base.needs('vgpu')
    def test_refused_before_the_first_write(self):
        pool = self.make_pool('--mode', 'vgpu', '--vgpu-type', 'nvidia-35')
        before = self.properties(pool)
        long_pool = 'p' * 234
        new_pool = self.unique_name('pool')
        flavor = self.unique_name('flavor')
        self.addCleanup(self.drop_pool, new_pool)
        self.addCleanup(self.openstack_raw, 'flavor', 'delete', flavor)
        vgpu = ('--mode', 'vgpu', '--vgpu-type', 'nvidia-35')
        sizes = ('--vcpus', '1', '--ram', '512', '--disk', '1')
        cases = [
            # a derived key: trait:CUSTOM_GPU_POOL_<234 p> is 256 long
            (('gpu', 'pool', 'create', long_pool, *vgpu, '--isolate',
              '--host', base.VGPU_HOST),
             'Pool name is 234 characters long', ('aggregate', long_pool)),
            (('gpu', 'pool', 'create', new_pool, *vgpu, '--property',
              'gpu/model=x'), "Invalid --property 'gpu/model'",
             ('aggregate', new_pool)),
            (('gpu', 'pool', 'create', new_pool, '--mode', 'vgpu',
              '--vgpu-type', 'n' * 243), '--vgpu-type is too long',
             ('aggregate', new_pool)),
            (('gpu', 'pool', 'set', pool, '--property', 'a:b/c=x'),
             "Invalid --property 'a:b/c'", None),
            (('gpu', 'pool', 'set', pool, '--property', 'k=' + 'v' * 256),
             'its value is 256 characters long', None),
            (('gpu', 'flavor', 'create', flavor, '--pool', pool, *sizes,
              '--property', 'x:a/b=1'), "Invalid --property 'x:a/b'",
             ('flavor', flavor)),
            (('gpu', 'flavor', 'create', 'tab\tname', '--pool', pool,
              *sizes), 'Invalid flavor name', ('flavor', 'tab\tname')),
        ]
        for index, (args, text, created) in enumerate(cases):
            rc, out, err = self.openstack_matrix(index, *args)
            self.assertEqual(1, rc, out + err)
            self.assertIn(text, err)
            self.assertNotIn('failed at step', err)   # not Nova's refusal
            self.assertEqual(1, len(err.strip().splitlines()), err)
            if created:
                self.absent(*created)
        self.assertEqual(before, self.properties(pool))


class Stop(Exception):
    pass


class TestNoIsolateWindow(TrustTestCase):

    def setUp(self):
        super().setUp()
        self.conn = openstack.connect(cloud=self.cloud)

    def candidates(self, flavor):
        """Root providers Placement offers FLAVOR (1 vCPU, 512 MB, 1 GB and
        its PCI device) on, asked as Nova asks: the flavor's required
        traits, and member_of=!in: the aggregates isolate_aggregates
        forbids it (trait:T=required metadata, T not required by the
        flavor). Read with openstacksdk, which keeps its token."""
        specs = self.conn.compute.find_flavor(
            flavor, ignore_missing=False, get_extra_specs=True).extra_specs
        required = sorted(k.split(':', 1)[1] for k, v in specs.items()
                          if k.startswith('trait') and v == 'required')
        forbidden = sorted(
            agg.uuid for agg in self.conn.compute.aggregates()
            if any(k.startswith('trait:') and v == 'required'
                   and k.split(':', 1)[1] not in required
                   for k, v in (agg.metadata or {}).items()))
        params = {'resources': 'VCPU:1,MEMORY_MB:512,DISK_GB:1,%s:1'
                  % test_pool.PCI_CLASS}
        if required:
            params['required'] = ','.join(required)
        if forbidden:
            params['member_of'] = '!in:' + ','.join(forbidden)
        response = self.conn.placement.get(
            '/allocation_candidates', params=params,
            microversion='1.36')
        self.assertEqual(200, response.status_code, response.text)
        summaries = response.json()['provider_summaries']
        return {s['root_provider_uuid'] for s in summaries.values()}

    @base.needs('passthrough')
    def test_every_step_keeps_the_flavor_schedulable(self):
        name = self.make_pool('--mode', 'passthrough', '--alias', 'h100',
                              '--pci-id', '10de:2331', '--host',
                              base.PT_HOST, '--isolate')
        trait = self.gpu('pool', 'show', name)['isolation_trait']
        flavor = self.make_flavor(name)
        root = next(hv.id for hv in self.conn.compute.hypervisors(
            details=True) if hv.service_details['host'] == base.PT_HOST)
        self.assertIn(root, self.candidates(flavor))
        client = self.client
        plan = []

        def stop_after_first(index, step):
            plan.append(step.what)
            if index == 1:
                raise Stop()

        self.assertRaises(Stop, pool_ops.set_isolation, client, name,
                          False, update_dependents=True,
                          on_step=stop_after_first)
        # the state after step 1: Placement offers the host; read with
        # plain openstack, the aggregate's requirement is gone, the flavor
        # still requires the trait and the host still has it
        self.assertIn(root, self.candidates(flavor))
        self.assertIn('aggregate %s' % name, plan[0])
        self.assertNotIn('trait:' + trait, self.aggregate(name)['properties'])
        specs = self.openstack('flavor', 'show', flavor)['properties']
        self.assertEqual('required', specs['trait:' + trait])
        self.assertIn(trait, self.traits(root))
        self.assertIn(root, self.candidates(flavor))

        # a re-run finishes it; before every further step the host is
        # still offered
        seen = []

        def check(index, step):
            seen.append(root in self.candidates(flavor))

        pool_ops.set_isolation(client, name, False, update_dependents=True,
                               on_step=check)
        self.assertTrue(seen)
        self.assertEqual([True] * len(seen), seen)
        self.assertNotIn('trait:' + trait, self.openstack(
            'flavor', 'show', flavor)['properties'])
        self.assertNotIn(trait, self.traits(root))
        self.assertIn(root, self.candidates(flavor))
