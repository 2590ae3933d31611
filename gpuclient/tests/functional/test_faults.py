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

"""Fault injection at every write of every multi-step command (issue 9).

One process, through the same operations the commands call
(``pool_ops``, ``flavor_ops``), against the real cloud. For each command
the number N of writes it makes is learnt from a clean run; then for every
k in 1..N and each fault kind (a 500 or a 409 that Nova/Placement never
saw, a dropped connection or a proxy's HTML page after the write happened)
the k-th write fails (TestHungService: the k-th write hangs until the
real read timeout, or is abandoned by a second SIGINT). After each run
either

* the command succeeded and the cloud is in the success state, or
* the cloud is as it was before, or
* the error names what is left ("Undoing failed too, ... this is left")
  and re-running the command reaches the success state.

A second pass fails the k-th write *and* the first undo write after it.
Each matrix adds a detail "fault-matrix: LABEL" holding one line
"fault points: LABEL: N ..." (also printed); tools/test_summary.py sums
those lines of a run into one total.
"""

import concurrent.futures
import os
import signal
import threading
import time
import uuid as uuid_mod

import fixtures
from osc_lib import exceptions
from testtools import content
import yaml

from gpuclient.ops import document_ops
from gpuclient.ops import flavor_ops
from gpuclient.ops import pool_ops
from gpuclient.ops import quota_ops
from gpuclient.ops import snapshot
from gpuclient.rules import pools
from gpuclient.rules import quota
from gpuclient.tests.functional import base
from gpuclient.tests.functional import faults

# the matrices whose writes are all of kinds another matrix already fails
# in every way (faults.KINDS: gpu apply's, pool add host's and remove
# host's, whose aggregate and provider-trait writes pool create and pool
# delete --force fail four ways each): one fault before the write, one
# after it
BEFORE_AND_AFTER = ('500', 'drop')


def _spec(name, isolate=True):
    return pools.build_spec(name, 'vgpu', vgpu_type='nvidia-35',
                            isolate=isolate)


class FaultMatrixTestCase(base.FunctionalTestCase):
    """Runs one command under every fault point."""

    # the state reads the traits of the pool hosts' root providers only
    # (where pools put theirs), not of every provider: cheaper per point
    roots_only = False
    # the hosts the matrices write to, leased for the test alone (read
    # clean before and after: base.host_lease)
    leased = ('fault-mig', 'fault-vgpu')

    def setUp(self):
        super().setUp()
        # the test cloud has two of each: a matrix in either stream gets
        # one no other test holds
        self.fault_vgpu_host = self.fault_mig_host = None
        for kind in self.leased:
            setattr(self, kind.replace('-', '_') + '_host',
                    self.host_lease(kind))
        self.admin = faults.make_client()
        self.client = faults.make_client()
        self.injector = self.useFixture(faults.FaultInjector(self.client))
        self.name = self.unique_name('fault')
        self.addCleanup(self.cleanup)
        self.points = []
        self._roots = None

    def state(self):
        if self._roots is None:
            # the pool hosts' root providers: their Placement aggregates
            # (Nova's mirror of membership) are part of the state
            cloud = snapshot.read_aggregates(self.admin, warn=False)
            self._roots = [r for host in (self.fault_vgpu_host,
                                          self.fault_mig_host)
                           for r in snapshot.roots_of(self.admin, cloud,
                                                      host)]
        return faults.cloud_state(
            self.admin, names=[self.name], providers=self._roots,
            traits_of=self._roots if self.roots_only else None)

    def cleanup(self):
        """Remove every pool/flavor/aggregate of this test, fault-free."""
        for flavor in self.admin.compute.flavors():
            if (flavor.get('name') or '').startswith(self.name):
                self.admin.compute.delete_flavor(flavor['id'])
        cloud = snapshot.read_aggregates(self.admin, warn=False)
        for pool in list(cloud.pools.values()):
            if pool['name'].startswith(self.name):
                pool_ops.delete(self.admin, pool['name'], force=True)
        for agg in self.admin.compute.aggregates():
            if agg.name.startswith(self.name):
                for host in agg.hosts or []:
                    self.admin.compute.remove_host(agg, host)
                self.admin.compute.delete_aggregate(agg)
        for trait in self.admin.placement.existing_traits(
                {pools.pool_trait(self.name + suffix)
                 for suffix in ('', '-0', '-1', '-2', '-3')}):
            self.admin.placement.delete_trait(trait)

    def run_matrix(self, label, command, revert, kinds=faults.KINDS,
                   undo_faults=False):
        """command(client): the write; revert(): success state -> before."""
        started = time.time()
        # a first clean run may make writes that later runs do not (a
        # type trait the cloud did not have yet, which the revert keeps):
        # N is counted on the second clean run, the state every fault
        # point starts from
        command(self.client)
        revert()
        before = self.state()
        self.injector.reset()
        command(self.client)
        writes = len(self.injector.writes)
        success = self.state()
        self.assertNotEqual(before, success)
        revert()
        self.assertEqual([], faults.diff_states(before, self.state()))
        self.assertGreater(writes, 1, '%s is not multi-step' % label)
        plans = [(kind, None) for kind in kinds]
        if undo_faults:
            plans.append(('500', '500'))
        for kind, undo_kind in plans:
            for k in range(1, writes + 1):
                more = {k + 1: undo_kind} if undo_kind else None
                self.injector.arm(k, kind, more=more)
                error = None
                try:
                    command(self.client)
                except exceptions.CommandError as exc:
                    error = str(exc)
                self.injector.disarm()
                after = self.state()
                where = '%s, write %d of %d, %s%s: %s' % (
                    label, k, writes, kind,
                    ' + failing undo' if undo_kind else '', error)
                if kind == 'hang' and error is not None:
                    # the real read timeout fired, and was a failed step
                    self.assertIn('did not answer in time', error, where)
                if kind == 'sigint2':
                    # the second SIGINT came after the handler had run for
                    # the first (faults.SignalHandshake), not lost in it
                    self.assertEqual([True], self.injector.handshakes,
                                     where)
                    outcome = self._abandoned(command, error, before,
                                              success, where)
                elif error is None:
                    self.assertEqual(
                        [], faults.diff_states(success, after), where)
                    outcome = 'completed'
                elif not faults.diff_states(before, after):
                    self.assertIn('failed at step', error, where)
                    outcome = 'rolled back'
                else:
                    where += '; left: %s' % faults.diff_states(before, after)
                    self.assertIn('this is left', error, where)
                    self.assertIn('again to finish it', error, where)
                    command(self.client)  # the re-run, no fault
                    self.assertEqual(
                        [], faults.diff_states(success, self.state()), where)
                    outcome = 'left, re-run converged'
                self.points.append((label, k, kind, undo_kind, outcome))
                if outcome not in ('rolled back', 'abandoned, nothing left'):
                    revert()
                    self.assertEqual(
                        [], faults.diff_states(before, self.state()), where)
        points = [p for p in self.points if p[0] == label]
        self.assertEqual(len(plans) * writes, len(points), label)
        summary = {}
        for point in points:
            summary[point[-1]] = summary.get(point[-1], 0) + 1
        report = 'fault points: %s: %d (%d writes; %s) in %.0f s' % (
            label, len(points), writes,
            ', '.join('%s %d' % kv for kv in sorted(summary.items())),
            time.time() - started)
        # one detail per matrix: a test running two keeps both
        self.addDetail('fault-matrix: %s' % label,
                       content.text_content(report))
        print(report)  # noqa: T201 - stestr shows it with the test output

    def _abandoned(self, command, error, before, success, where):
        """The outcome of a second Ctrl-C during the hung write: the
        error names the running step as unknown; whatever is left, a
        re-run (no fault) reaches the success state."""
        self.assertIsNotNone(error, where)
        self.assertIn('was abandoned by a second SIGINT during step', error,
                      where)
        self.assertIn('Nothing more was undone', error, where)
        self.assertIn('may or may not have happened', error, where)
        if not faults.diff_states(before, self.state()):
            return 'abandoned, nothing left'
        self.assertIn('again to finish it', error, where)
        command(self.client)  # the re-run, no fault
        self.assertEqual([], faults.diff_states(success, self.state()),
                         where)
        return 'abandoned, re-run converged'


class TestPoolFaults(FaultMatrixTestCase):
    @base.needs('vgpu', 'mig')
    def test_create_isolated_two_host_pool(self):
        hosts = [self.fault_vgpu_host, self.fault_mig_host]

        def command(client):
            pool_ops.create(client, _spec(self.name), hosts)

        def revert():
            pool_ops.delete(self.admin, self.name, force=True)

        self.run_matrix('pool create', command, revert, undo_faults=True)

    @base.needs('vgpu', 'mig')
    def test_add_and_remove_host(self):
        pool_ops.create(self.admin, _spec(self.name), [self.fault_vgpu_host])

        def add(client):
            pool_ops.add_hosts(client, self.name, [self.fault_mig_host])

        def remove(client):
            pool_ops.remove_hosts(client, self.name, [self.fault_mig_host])

        self.run_matrix('pool add host', add,
                        lambda: remove(self.admin), kinds=BEFORE_AND_AFTER)
        add(self.admin)
        self.run_matrix('pool remove host', remove,
                        lambda: add(self.admin), kinds=BEFORE_AND_AFTER)

    @base.needs('vgpu', 'mig')
    def test_isolation_off_and_on_with_dependents(self):
        pool_ops.create(self.admin, _spec(self.name),
                        [self.fault_vgpu_host, self.fault_mig_host])
        flavor_ops.create(self.admin, self.name + '-f', self.name, 1, 512, 1)
        # an image that requires the pool trait: ending isolation removes
        # the requirement (an image.update under fault too)
        prop = 'trait:%s' % pools.pool_trait(self.name)
        image = self.openstack('image', 'create', '--disk-format', 'raw',
                               '--container-format', 'bare', '--property',
                               '%s=required' % prop, self.name + '-img')
        self.addCleanup(self.openstack, 'image', 'delete', image['id'],
                        parse=False)

        def off(client):
            pool_ops.set_isolation(client, self.name, False,
                                   update_dependents=True)

        def on(client):
            pool_ops.set_isolation(client, self.name, True,
                                   update_dependents=True)

        def revert_off():
            on(self.admin)
            self.admin.image.update_properties(
                self.admin.image.find_image(image['id']),
                {prop: 'required'})

        self.run_matrix('pool set --no-isolate', off, revert_off)
        off(self.admin)
        self.run_matrix('pool set --isolate', on, lambda: off(self.admin))

    @base.needs('vgpu', 'mig')
    def test_delete_force(self):
        hosts = [self.fault_vgpu_host, self.fault_mig_host]

        def delete(client):
            pool_ops.delete(client, self.name, force=True)

        pool_ops.create(self.admin, _spec(self.name), hosts)
        self.run_matrix(
            'pool delete --force', delete,
            lambda: pool_ops.create(self.admin, _spec(self.name), hosts))


class TestProjectFaults(FaultMatrixTestCase):
    @base.needs('vgpu', 'mig')
    def test_unset_project_with_dependents(self):
        """Removing a project from a limited pool takes it off the pool's
        private flavors in the same plan (one write per flavor, then the
        metadata)."""
        keep = self.admin.current_project_id()
        gone = faults.make_client(self.member_cloud).current_project_id()
        self.assertNotEqual(keep, gone)
        pool_ops.create(self.admin, pools.build_spec(
            self.name, 'vgpu', vgpu_type='nvidia-35',
            projects=[keep, gone]), [])
        flavors = [self.name + '-f%d' % i for i in range(2)]
        for flavor in flavors:
            flavor_ops.create(self.admin, flavor, self.name, 1, 512, 1,
                              public=False, projects=[keep, gone])

        def command(client):
            pool_ops.update_metadata(client, self.name,
                                     projects_remove=[gone],
                                     update_dependents=True)

        def revert():
            pool_ops.update_metadata(self.admin, self.name,
                                     projects_add=[gone])
            for flavor in flavors:
                self.admin.compute.add_flavor_access(
                    self.admin.compute.find_flavor(flavor)['id'], gone)

        self.run_matrix('pool unset --project --update-dependents', command,
                        revert)


class TestFlavorFaults(FaultMatrixTestCase):
    @base.needs('vgpu', 'mig')
    def test_private_multi_vgpu_flavor_create(self):
        pool_ops.create(self.admin, _spec(self.name, isolate=False),
                        [self.fault_vgpu_host])
        project = self.admin.current_project_id()
        name = self.name + '-f'

        def command(client):
            flavor_ops.create(client, name, self.name, 1, 512, 1, gpus=2,
                              public=False, projects=[project])

        def revert():
            flavor = self.admin.compute.find_flavor(name)
            self.admin.compute.delete_flavor(flavor['id'])
            agg = next(a for a in self.admin.compute.aggregates()
                       if a.name == self.name)
            self.admin.compute.set_aggregate_metadata(
                agg, {'group_policy': None})

        self.run_matrix('flavor create', command, revert)


class TestQuotaFaults(FaultMatrixTestCase):
    """gpu quota set of a class without a registered limit: two writes
    to Keystone's limits API (the registered -1, then the project's)."""

    # no host: Keystone's limits only
    leased = ()

    def setUp(self):
        super().setUp()
        self.rc = 'CUSTOM_FT_%s' % uuid_mod.uuid4().hex[:8].upper()
        self.project = self.admin.current_project_id()
        self.addCleanup(self.remove_limits)

    def state(self):
        name = quota.resource_name(self.rc)
        registered = self.admin.limits.registered().get(name)
        own = [item['resource_limit']
               for item in self.admin.limits.limits(self.project)
               if item['resource_name'] == name]
        return {'registered': registered and registered['limit'],
                'project': own}

    def remove_limits(self):
        name = quota.resource_name(self.rc)
        for item in self.admin.limits.limits(self.project):
            if item['resource_name'] == name:
                self.admin.limits.delete_limit(item['id'])
        registered = self.admin.limits.registered().get(name)
        if registered:
            self.admin.limits.delete_registered(registered['id'])

    @base.needs('vgpu', 'mig')
    def test_set_project_limit_of_a_new_class(self):
        def command(client):
            quota_ops.plan_and_apply(client, quota.plan_set, self.rc, 3,
                                     self.project)

        self.run_matrix('quota set', command, self.remove_limits,
                        undo_faults=True)


class TestHungService(FaultMatrixTestCase):
    """A service that takes a write and never answers (faults.HungServer).

    'hang': the write never arrived; 'hang-after': it happened, its answer
    never came; both end in a real read timeout (faults.HANG_TIMEOUT, 1 s;
    GPUCLIENT_FT_HANG_TIMEOUT), a failed step read back like any other.
    'sigint2': as 'hang-after', and Ctrl-C twice while it waits: the step
    is abandoned at once and the error names what may be left.
    """

    roots_only = True

    @base.needs('vgpu', 'mig')
    def test_create_isolated_pool_under_a_hung_service(self):
        """A pool without hosts: Nova's aggregate and metadata writes and
        Placement's trait write (few writes: each point costs a timeout
        and command runs)."""
        def command(client):
            pool_ops.create(client, _spec(self.name), [])

        def revert():
            pool_ops.delete(self.admin, self.name, force=True)

        self.run_matrix('pool create, hung service', command, revert,
                        kinds=faults.HANG_KINDS)


class TestQuotaHungService(TestQuotaFaults):
    """TestQuotaFaults's quota set under a hung Keystone limits API."""

    @base.needs('vgpu', 'mig')
    def test_set_project_limit_of_a_new_class(self):
        def command(client):
            quota_ops.plan_and_apply(client, quota.plan_set, self.rc, 3,
                                     self.project)

        self.run_matrix('quota set, hung service', command,
                        self.remove_limits, kinds=faults.HANG_KINDS)


class TestInterrupts(FaultMatrixTestCase):
    @base.needs('vgpu', 'mig')
    def test_sigint_and_sigterm_at_every_step(self):
        """A signal before step k: undone, then the re-run converges."""
        hosts = [self.fault_vgpu_host, self.fault_mig_host]
        # a first clean run may make a write later runs do not (the vGPU
        # type trait, when no earlier test made it: pool delete keeps it),
        # as run_matrix knows: the plan is that of the runs after it (a
        # shuffled order ran this test first, and its SIGTERM at the
        # step before the last found a plan one step shorter)
        pool_ops.create(self.client, _spec(self.name), hosts)
        pool_ops.delete(self.admin, self.name, force=True)
        before = self.state()
        plan = pool_ops.create(self.client, _spec(self.name), hosts,
                               dry_run=True)[1]
        outcomes = []
        for signum in (signal.SIGINT, signal.SIGTERM):
            for k in range(1, len(plan) + 1):
                def on_step(index, _step, k=k, signum=signum):
                    if index == k - 1:
                        os.kill(os.getpid(), signum)
                error = None
                try:
                    pool_ops.create(self.client, _spec(self.name), hosts,
                                    on_step=on_step)
                except exceptions.CommandError as exc:
                    error = str(exc)
                where = 'signal %d during step %d' % (signum, k)
                if k == len(plan):
                    # the last step had started: the command completes
                    self.assertIsNone(error, where)
                    pool_ops.delete(self.admin, self.name, force=True)
                    # and the next run's plan is this one's
                    self.assertEqual(
                        plan.lines(), pool_ops.create(
                            self.client, _spec(self.name), hosts,
                            dry_run=True)[1].lines(), where)
                    continue
                self.assertIsNotNone(error, where)
                self.assertIn('interrupted by', error, where)
                self.assertEqual([], faults.diff_states(before, self.state()),
                                 where)
                outcomes.append(k)
        # after all that, a plain re-run makes the whole pool
        pool_ops.create(self.client, _spec(self.name), hosts)
        again = pool_ops.create(self.client, _spec(self.name), hosts,
                                dry_run=True)[1]
        self.assertEqual(0, len(again), again.lines())
        self.addDetail('interrupts', content.text_content(
            '%d interrupted runs, all undone' % len(outcomes)))


class TestConcurrency(FaultMatrixTestCase):
    # on lane B's passthrough host (base.LANES), in the second stream with
    # the other matrices: its isolated pools make the host refuse every
    # other flavor while they hold it, so never a lane-A host (on
    # gpu-pt-1 it took a lane-A boot's host away: clean-clone run 9)
    lane = 'b'
    leased = ()

    @base.needs('passthrough', 'vgpu', 'mig')
    def test_parallel_add_host_to_pools_sharing_a_provider(self):
        """Isolated pools joined in parallel: every trait lands on the root.

        Each add host writes its pool's trait on the same root provider
        (read-modify-write on the provider generation, while Nova's resource
        tracker writes there too): none may be lost.
        """
        count = 4
        names = ['%s-%d' % (self.name, i) for i in range(count)]
        for name in names:
            pool_ops.create(self.admin, pools.build_spec(
                name, 'passthrough', alias='h100', pci_id='10de:2331',
                isolate=True), [])
        clients = [faults.make_client() for _ in names]
        barrier = threading.Barrier(count)

        def add(index):
            barrier.wait()
            pool_ops.add_hosts(clients[index], names[index], [self.pt_host])

        with concurrent.futures.ThreadPoolExecutor(count) as runner:
            list(runner.map(add, range(count)))
        root = self.root_provider(self.pt_host)
        traits = set(self.admin.placement.traits(root)[0])
        # Nova mirrors each membership into a Placement aggregate (what
        # isolation and project limits filter on); a mirror that lost a
        # race is finished by gpuclient
        mirrored = set(self.admin.placement.aggregates(root)[0])
        uuids = []
        for name in names:
            self.assertIn(pools.pool_trait(name), traits)
            agg = snapshot.read_aggregates(self.admin,
                                           warn=False).aggregate(name)
            self.assertEqual([self.pt_host], agg['hosts'])
            self.assertIn(agg['uuid'], mirrored)
            uuids.append(agg['uuid'])
        # and the same in parallel the other way (Nova answers 409 when its
        # Placement write loses a race: that removal is tried again)
        with concurrent.futures.ThreadPoolExecutor(count) as runner:
            list(runner.map(lambda i: pool_ops.remove_hosts(
                clients[i], names[i], [self.pt_host]), range(count)))
        traits = set(self.admin.placement.traits(root)[0])
        mirrored = set(self.admin.placement.aggregates(root)[0])
        for name, uuid in zip(names, uuids, strict=True):
            self.assertNotIn(pools.pool_trait(name), traits)
            self.assertNotIn(uuid, mirrored)


class TestApplyFaults(FaultMatrixTestCase):
    """``gpu apply`` of a document of two pools (an isolated one with its
    pool trait; both with hosts and properties) under every fault point:
    the journal's all-or-nothing, as for the single commands."""

    def test_apply_of_two_pools(self):
        where = self.useFixture(fixtures.TempDir()).path
        path = os.path.join(where, 'gpu.yaml')
        names = [self.name + '-0', self.name + '-1']
        with open(path, 'w') as out:
            yaml.safe_dump({'version': 1, 'pools': [
                {'name': names[0], 'mode': 'vgpu', 'vgpu_type': 'nvidia-35',
                 'hosts': [self.fault_vgpu_host], 'isolate': True,
                 'properties': {'team': 'solvers'}},
                {'name': names[1], 'mode': 'vgpu', 'vgpu_type': 'nvidia-35',
                 'hosts': [self.fault_mig_host],
                 'properties': {'team': 'graphics'}},
            ]}, out)

        def apply(client):
            document_ops.apply(client, path)

        def revert():
            # the test's own pools only: --prune would also remove the
            # pools other tests (in the other stream) have now
            for name in names:
                pool_ops.delete(self.admin, name, force=True)

        # every write position of the composed plan under a fault before
        # the write (500: the service never saw it) and one after it
        # (drop: it happened, the answer is lost): what decides the
        # journal's all-or-nothing at that position. The other two kinds
        # (409, a proxy's page) differ from these in how the client layer
        # and the operation itself take the answer (an error raised, a
        # conflict retried), which does not depend on the command: they
        # run at every write of the same operations in the single-command
        # matrices (pool create, add and remove host, delete); here they
        # doubled the suite's longest test (84 points, 290 s)
        self.run_matrix('apply', apply, revert, kinds=BEFORE_AND_AFTER)
