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

"""The journal's read-back and signal handling, for EVERY declared
operation, against the strict fakes (fakes.py: Nova, Placement, Glance,
Keystone's limits).

One case per declaration of ``gpuclient.rules.operations`` (CASES): how
to set the cloud up and the step to run. For each one:

* applied: the executor carries the step out, and its read-back says it
  holds;
* dropped: the service acknowledges the write but it never lands (the
  fake's state is put back as it was before the request), and the
  read-back says it does not hold;
* one SIGINT while the step runs: the step finishes, nothing after it
  starts, and it is undone when it has an inverse (its read-back then
  says it does not hold) or left in effect when it has none;
* a second SIGINT while it runs: the step is abandoned and the error
  names it as the one whose outcome is unknown.

A declaration without a case fails ``test_every_declaration_has_a_case``.
"""

import copy
import os
import signal
from unittest import mock

import fixtures

from gpuclient.cloud import identity as identity_mod
from gpuclient.ops import journal
from gpuclient.rules import operations
from gpuclient.rules import plan
from gpuclient.tests.unit import base
from gpuclient.tests.unit import fakes

PCI = 'CUSTOM_PCI_10DE_2331'
TRAIT = 'CUSTOM_READ_BACK'
SENTINEL = 'CUSTOM_NEVER_STARTED'
PROJECT = 'p-read-back'
IMAGE = {'id': 'img-rb', 'name': 'rb', 'status': 'active',
         'os_distro': 'ubuntu', 'visibility': 'public'}


# -- the cases: (set the cloud up, return the step) -------------------------

def _aggregate(case, name='rb', hosts=(), metadata=None, zone=None):
    agg = fakes.Aggregate(name, metadata, hosts, zone)
    case.cloud.aggregates.append(agg)
    case.cloud.mirror()
    return agg


def _root(case, host='gpu-pt-1'):
    return case.cloud.host_root(host).uuid


def _flavor(case, public=True, **more):
    return case.cloud.add_flavor('rb.flavor', public=public, **more)


def _server(case, status='ACTIVE'):
    server = case.cloud.add_server('rb-vm', 'gpu-pt-1', gpus={PCI: 1},
                                   status=status)
    return server


def _trees(case):
    return {'source': [p.uuid for p in case.cloud.tree(
                case.cloud.host_root('gpu-pt-1'))],
            'destination': [p.uuid for p in case.cloud.tree(
                case.cloud.host_root('gpu-pt-2'))]}


def _service(host='gpu-pt-1'):
    return fakes.uid('svc-' + host)


def case_aggregate_create(case):
    step = plan.create_aggregate('rb', 'nova')
    # the metadata the create sets right after (what the read-back checks)
    return plan.Step(operations.AggregateCreate(
        name='rb', zone='nova', metadata={'gpu': 'true'}), step.what,
        step.inverse)


def case_aggregate_delete(case):
    _aggregate(case)
    return plan.delete_aggregate('rb')


def case_aggregate_metadata(case):
    _aggregate(case, metadata={'a': '1'})
    return plan.set_metadata('rb', {'a': '1'}, {'a': '2', 'b': '3'})


def case_aggregate_add_zone(case):
    _aggregate(case)
    return plan.set_zone('rb', None, 'az-rb')


def case_aggregate_add_host(case):
    _aggregate(case)
    return plan.add_host('rb', 'gpu-pt-1', [_root(case)])


def case_aggregate_remove_host(case):
    _aggregate(case, hosts=['gpu-pt-1'])
    return plan.remove_host('rb', 'gpu-pt-1', [_root(case)])


def case_trait_create(case):
    return plan.create_trait(TRAIT)


def case_trait_delete(case):
    case.placement.traits.add(TRAIT)
    return plan.delete_trait(TRAIT)


def case_provider_add_traits(case):
    case.placement.traits.add(TRAIT)
    return plan.add_traits(_root(case), [TRAIT], 'gpu-pt-1')


def case_provider_remove_traits(case):
    case.placement.traits.add(TRAIT)
    case.cloud.host_root('gpu-pt-1').traits.append(TRAIT)
    return plan.remove_traits(_root(case), [TRAIT], 'gpu-pt-1')


def case_flavor_create(case):
    return plan.create_flavor('rb.flavor', {'vcpus': 2, 'ram': 1024,
                                            'disk': 10})


def case_flavor_delete(case):
    flavor = _flavor(case)
    return plan.delete_flavor(flavor['id'], 'rb.flavor')


def case_flavor_description(case):
    flavor = _flavor(case)
    return plan.set_description('rb.flavor', None, 'for GPUs',
                                flavor_id=flavor['id'])


def case_flavor_specs(case):
    flavor = _flavor(case, extra_specs={'a': '1', 'c': '3'})
    return plan.flavor_specs('rb.flavor', {'a': '1', 'c': '3'},
                             {'a': '2', 'b': '3'}, ['c'],
                             flavor_id=flavor['id'])


def case_flavor_add_access(case):
    flavor = _flavor(case, public=False)
    return plan.add_access('rb.flavor', PROJECT, flavor_id=flavor['id'])


def case_flavor_remove_access(case):
    flavor = _flavor(case, public=False)
    case.cloud.flavor_access[flavor['id']] = [PROJECT]
    return plan.remove_access('rb.flavor', PROJECT, flavor_id=flavor['id'])


def case_image_update(case):
    case.cloud.images.append(dict(IMAGE))
    return plan.update_image(dict(IMAGE), {'os_distro': None,
                                           'hw_machine_type': 'q35'})


def case_limit_set(case):
    return plan.set_limit(PROJECT, 'class:VGPU', 2)


def case_limit_delete(case):
    case.gpu.limits.create_limit(PROJECT, 'class:VGPU', 1)
    return plan.delete_limit(PROJECT, 'class:VGPU', 1)


def case_limit_describe(case):
    case.gpu.limits.create_limit(PROJECT, 'class:VGPU', 1)
    return plan.describe_limit(PROJECT, 'class:VGPU', None, 'gpu apply')


def case_service_disable(case):
    return plan.disable_service('gpu-pt-1', _service(),
                                'gpuclient: maintenance')


def case_service_enable(case):
    case.cloud.disabled.add('gpu-pt-1')
    case.cloud.disabled_reasons['gpu-pt-1'] = 'gpuclient: maintenance'
    return plan.enable_service('gpu-pt-1', _service(),
                               'gpuclient: maintenance')


def case_device_release(case):
    root = case.cloud.otu_host('gpu-otu-1')
    device = [p for p in case.cloud.tree(root) if p is not root][0]
    fakes.FakeCloud.reserve(device)
    return plan.release_device(device.uuid, device.name, fakes.OTU_CLASS)


def case_server_live_migrate(case):
    server = _server(case)
    return plan.live_migrate(server['id'], 'rb-vm', 'gpu-pt-1', 'gpu-pt-2',
                             [PCI], _trees(case), 60)


def case_server_migrate(case):
    server = _server(case)
    return plan.cold_migrate(server['id'], 'rb-vm', 'gpu-pt-1', 'gpu-pt-2',
                             [PCI], _trees(case), 60)


def case_server_confirm(case):
    server = _server(case)
    case.cloud.move_server(server, 'gpu-pt-2', 'migration')
    return plan.confirm_migration(server['id'], 'rb-vm', 'gpu-pt-1',
                                  'gpu-pt-2', [PCI], _trees(case), 60)


def case_server_shelve(case):
    server = _server(case)
    return plan.shelve(server['id'], 'rb-vm', 'gpu-pt-1', [PCI],
                       _trees(case), 60)


CASES = {
    operations.AggregateCreate: case_aggregate_create,
    operations.AggregateDelete: case_aggregate_delete,
    operations.AggregateMetadata: case_aggregate_metadata,
    operations.AggregateAddZone: case_aggregate_add_zone,
    operations.AggregateAddHost: case_aggregate_add_host,
    operations.AggregateRemoveHost: case_aggregate_remove_host,
    operations.TraitCreate: case_trait_create,
    operations.TraitDelete: case_trait_delete,
    operations.ProviderAddTraits: case_provider_add_traits,
    operations.ProviderRemoveTraits: case_provider_remove_traits,
    operations.FlavorCreate: case_flavor_create,
    operations.FlavorDelete: case_flavor_delete,
    operations.FlavorDescription: case_flavor_description,
    operations.FlavorSpecs: case_flavor_specs,
    operations.FlavorAddAccess: case_flavor_add_access,
    operations.FlavorRemoveAccess: case_flavor_remove_access,
    operations.ImageUpdate: case_image_update,
    operations.LimitSet: case_limit_set,
    operations.LimitDelete: case_limit_delete,
    operations.LimitDescribe: case_limit_describe,
    operations.ServiceDisable: case_service_disable,
    operations.ServiceEnable: case_service_enable,
    operations.DeviceRelease: case_device_release,
    operations.ServerLiveMigrate: case_server_live_migrate,
    operations.ServerMigrate: case_server_migrate,
    operations.ServerConfirm: case_server_confirm,
    operations.ServerShelve: case_server_shelve,
}

# read back through the executor that ran them: the create's answer (the
# flavor's ID) is what tells the flavor it made from one made meanwhile
NEEDS_ITS_ANSWER = {operations.FlavorCreate}


class World:
    """One fresh fake cloud with the real client layer over it."""

    def __init__(self, test):
        self.cloud = fakes.FakeCloud()
        self.cloud.pci_host('gpu-pt-1')
        self.cloud.pci_host('gpu-pt-2')
        self.placement = test.useFixture(fakes.PlacementFixture(self.cloud))
        self.cm = test.useFixture(fakes.ClientManagerFixture(self.cloud))
        self.gpu = self.cm.gpu
        self.keystone = fakes.FakeKeystoneLimits()
        proxy = mock.Mock()
        self.keystone.install(proxy)
        limits = identity_mod.Limits(proxy, mock.Mock(), 'RegionOne')
        limits._scope = ('nova-service', 'RegionOne')
        self.gpu._limits = limits

    def state(self):
        """Everything the fakes hold (to put back: a dropped write)."""
        return copy.deepcopy((self.cloud.__dict__,
                              self.placement.traits,
                              self.keystone.__dict__))

    def put_back(self, state):
        cloud, traits, keystone = copy.deepcopy(state)
        self.cloud.__dict__.clear()
        self.cloud.__dict__.update(cloud)
        self.placement.traits.clear()
        self.placement.traits.update(traits)
        self.keystone.__dict__.clear()
        self.keystone.__dict__.update(keystone)

    def executor(self):
        executor = journal.Executor(self.gpu)
        executor.poll_interval = 0
        # a move Nova leaves under way ends when the journal waits
        executor.sleep = lambda _s: self.cloud.finish_moves()
        return executor


class ReadBackTestCase(base.TestCase):

    def world(self, declaration):
        world = World(self)
        step = CASES[declaration](world)
        self.assertIs(declaration, type(step.operation))
        return world, step


class TestEveryOperation(ReadBackTestCase):

    def test_every_declaration_has_a_case(self):
        """A new operation without a read-back case fails here."""
        self.assertEqual(sorted(d.op for d in operations.DECLARED),
                         sorted(d.op for d in CASES))

    def test_applied_reads_back_as_done(self):
        for declaration in operations.DECLARED:
            world, step = self.world(declaration)
            executor = world.executor()
            self.assertFalse(executor.holds(step),
                             '%s holds before it ran' % step.op)
            executor.run(step)
            self.assertTrue(executor.holds(step),
                            '%s applied, read back as not done' % step.op)
            if declaration not in NEEDS_ITS_ANSWER:
                # a new executor: nothing cached from the write
                self.assertTrue(world.executor().holds(step), step.op)

    def test_dropped_reads_back_as_not_done(self):
        for declaration in operations.DECLARED:
            world, step = self.world(declaration)
            before = world.state()
            executor = world.executor()
            executor.run(step)
            # the service acknowledged the write, which never landed
            world.put_back(before)
            self.assertFalse(executor.holds(step),
                             '%s dropped, read back as done' % step.op)

    def test_inverse_reads_back(self):
        """Each inverse a builder pairs with the step: run after the step,
        its read-back holds and the step's no longer does."""
        for declaration in operations.DECLARED:
            world, step = self.world(declaration)
            if step.inverse is None:
                continue
            executor = world.executor()
            executor.run(step)
            executor.run(step.inverse)
            self.assertTrue(executor.holds(step.inverse), step.op)
            self.assertFalse(executor.holds(step), step.op)


class Interrupting(journal.Executor):
    """Delivers SIGNUMS to this process as the step AT starts running
    (inside the step: the journal's handler runs before its request)."""

    def __init__(self, client, at, signums):
        super().__init__(client)
        self.at = at
        self.signums = signums

    def run(self, step):
        if step is self.at:
            for signum in self.signums:
                os.kill(os.getpid(), signum)
        super().run(step)


class TestSignalsForEveryOperation(ReadBackTestCase):

    def setUp(self):
        super().setUp()
        self.caught = []
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            # if the journal failed to defer a signal, it lands here
            # instead of ending the test run
            old = signal.signal(signum, self._record)
            self.addCleanup(signal.signal, signum, old)
        self.useFixture(fixtures.MockPatchObject(journal, 'POLL_INTERVAL',
                                                 0))

    def _record(self, signum, _frame):
        self.caught.append(signum)

    def apply(self, world, step, signums):
        after = plan.create_trait(SENTINEL)
        the_plan = plan.Plan('Testing %s' % step.op, [step, after],
                             forward=step.inverse is None)
        executor = Interrupting(world.gpu, step, signums)
        executor.poll_interval = 0
        executor.sleep = lambda _s: world.cloud.finish_moves()
        error = self.assertRaises(journal.ApplyError, journal.apply,
                                  world.gpu, the_plan, executor=executor)
        # nothing after the interrupted step started
        self.assertFalse(executor.holds(after), step.op)
        self.assertEqual([], self.caught, step.op)
        self.assertEqual(self._record, signal.getsignal(signal.SIGINT))
        return error, executor

    def test_one_sigint_finishes_the_step_then_undoes_or_stops(self):
        for declaration in operations.DECLARED:
            world, step = self.world(declaration)
            error, executor = self.apply(world, step, [signal.SIGINT])
            self.assertEqual(signal.SIGINT, error.interrupted, step.op)
            # the step after it is the one the signal stopped
            self.assertEqual(SENTINEL, error.failed.args['trait'], step.op)
            if step.inverse is None:
                # forward only: finished, left in effect and said so
                self.assertTrue(executor.holds(step), step.op)
                self.assertIn(step, error.left, step.op)
            else:
                # finished, then undone: the cloud is as it was
                self.assertFalse(executor.holds(step), step.op)
                self.assertTrue(executor.holds(step.inverse), step.op)
                self.assertEqual([], error.left, step.op)

    def test_second_sigint_abandons_the_running_step(self):
        for declaration in operations.DECLARED:
            world, step = self.world(declaration)
            error, executor = self.apply(world, step,
                                         [signal.SIGINT, signal.SIGINT])
            self.assertEqual(signal.SIGINT, error.interrupted, step.op)
            self.assertIs(step, error.failed, step.op)
            self.assertIn('abandoned by a second SIGINT during step 1 of '
                          '2', str(error), step.op)
            self.assertIn('Its outcome is unknown, this may or may not '
                          'have happened: %s.' % step.what, str(error),
                          step.op)
            # abandoned before its request: nothing was written
            self.assertFalse(executor.holds(step), step.op)

    def test_sighup_never_abandons(self):
        """A SIGHUP, alone or after a SIGINT, defers like the first signal:
        the step finishes, and is undone when it can be."""
        for first in (signal.SIGHUP, signal.SIGINT):
            for declaration in operations.DECLARED:
                world, step = self.world(declaration)
                error, executor = self.apply(
                    world, step, [first, signal.SIGHUP])
                label = '%s after %s' % (step.op, first)
                self.assertEqual(first, error.interrupted, label)
                self.assertNotIn('abandoned', str(error), label)
                self.assertEqual(step.inverse is None, executor.holds(step),
                                 label)
