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

"""Applying a plan: all or nothing, undo newest first, signals deferred.

The client layer is an in-memory fake (below) that behaves like Nova,
Placement and Glance where it matters here (Nova refuses a duplicate host
and deleting an aggregate with hosts, takes a flavor's ID from the create
request when given and looks ``/flavors/<x>`` up by ID only, so a flavor
named like another's ID is found as the other; Placement refuses unknown
traits and deleting a trait in use) and can fail its k-th write: before
doing it ('error', 'value', 'refused': a 400) or after (an answer 'lost').
"""

import copy
import itertools
import logging
import os
import signal
from unittest import mock

import fixtures
import testtools

from gpuclient.cloud import errors
from gpuclient.ops import journal
from gpuclient.rules import flavor_plan
from gpuclient.rules import plan as plan_mod

ROOT1 = 'aaaaaaaa-0000-0000-0000-000000000001'
ROOT2 = 'aaaaaaaa-0000-0000-0000-000000000002'
POOL_TRAIT = 'CUSTOM_GPU_POOL_A100'


# -- the fake client ---------------------------------------------------------

class FakeAggregate:
    """What the SDK returns for an aggregate (a copy, never live state)."""

    def __init__(self, agg_id, name, zone=None, hosts=(), metadata=None):
        self.id = agg_id
        self.name = name
        self.availability_zone = zone
        self.hosts = list(hosts)
        self.metadata = dict(metadata or {})

    def copy(self):
        return FakeAggregate(self.id, self.name, self.availability_zone,
                             self.hosts, self.metadata)


class FakeCloud:
    """State of Nova, Placement and Glance, and the fault schedule."""

    def __init__(self):
        self.aggregates = {}  # id -> FakeAggregate
        self.flavors = {}  # id -> flavor dict
        self.access = {}  # flavor id -> [project ids]
        self.traits = {'HW_CPU_X86_AVX2'}
        self.providers = {ROOT1: set(), ROOT2: set()}
        self.generations = {ROOT1: 0, ROOT2: 0}
        self.images = {}
        self.ids = itertools.count(1)
        self.writes = 0
        self.write_log = []
        self.faults = {}  # write number -> 'error' | 'lost' | 'value'

    def fail(self, number, kind='error'):
        self.faults[number] = kind

    def write(self, what, action):
        """Do one write, or fail it as scheduled."""
        self.writes += 1
        self.write_log.append(what)
        kind = self.faults.pop(self.writes, None)
        if kind == 'error':
            raise errors.APIError(
                '%s: 500 Internal Server Error' % what, 500)
        if kind == 'value':
            raise ValueError('Expecting value: line 1 column 1 (char 0)')
        if kind == 'refused':
            raise errors.APIError('%s: 400 Bad Request' % what, 400)
        result = action()
        if kind == 'lost':
            raise errors.APIError(
                '%s: Connection aborted (RemoteDisconnected)' % what)
        return result

    def state(self):
        return {
            'aggregates': {
                a.name: (a.availability_zone, sorted(a.hosts),
                         dict(a.metadata))
                for a in self.aggregates.values()},
            'traits': sorted(self.traits),
            'providers': {u: sorted(t) for u, t in self.providers.items()},
            'flavors': {
                f['name']: (f['vcpus'], f['ram'], dict(f['extra_specs']),
                            sorted(self.access.get(f['id'], [])))
                for f in self.flavors.values()},
            'flavor_ids': {f['id']: f['name'] for f in self.flavors.values()},
            'images': copy.deepcopy(self.images),
        }


class FakeCompute:
    def __init__(self, cloud):
        self.cloud = cloud

    def _agg(self, aggregate):
        try:
            return self.cloud.aggregates[aggregate.id]
        except KeyError:
            raise errors.NotFound(
                'Aggregate %s could not be found.' % aggregate.id, 404
            ) from None

    def aggregates(self):
        return [a.copy() for a in self.cloud.aggregates.values()]

    def create_aggregate(self, name, zone=None):
        def action():
            if any(a.name == name for a in self.cloud.aggregates.values()):
                raise errors.Conflict(
                    'Aggregate %s already exists.' % name, 409)
            agg = FakeAggregate(next(self.cloud.ids), name, zone)
            self.cloud.aggregates[agg.id] = agg
            return agg.copy()
        return self.cloud.write('create aggregate %s' % name, action)

    def set_aggregate_metadata(self, aggregate, metadata):
        def action():
            agg = self._agg(aggregate)
            for key, value in metadata.items():
                if value is None:
                    agg.metadata.pop(key, None)
                else:
                    agg.metadata[key] = value
            return agg.copy()
        return self.cloud.write('set metadata of %s' % aggregate.name,
                                action)

    def add_host(self, aggregate, host):
        def action():
            agg = self._agg(aggregate)
            if host in agg.hosts:
                raise errors.Conflict(
                    'Cannot add host %s in aggregate %s: host exists'
                    % (host, agg.id), 409)
            agg.hosts.append(host)
            return agg.copy()
        return self.cloud.write('add %s to %s' % (host, aggregate.name),
                                action)

    def remove_host(self, aggregate, host):
        def action():
            agg = self._agg(aggregate)
            if host not in agg.hosts:
                raise errors.NotFound(
                    'Cannot remove host %s in aggregate %s: not found'
                    % (host, agg.id), 404)
            agg.hosts.remove(host)
            return agg.copy()
        return self.cloud.write('remove %s from %s'
                                % (host, aggregate.name), action)

    def delete_aggregate(self, aggregate):
        def action():
            agg = self.cloud.aggregates.get(aggregate.id)
            if agg is None:
                return
            if agg.hosts:
                raise errors.APIError(
                    'Cannot remove aggregate %s: it still has hosts.'
                    % agg.id, 400)
            del self.cloud.aggregates[agg.id]
        return self.cloud.write('delete aggregate %s' % aggregate.name,
                                action)

    # flavors

    def _flavor(self, flavor_id):
        try:
            return self.cloud.flavors[flavor_id]
        except KeyError:
            raise errors.NotFound(
                'Flavor %s could not be found.' % flavor_id, 404) from None

    def flavors(self):
        return [copy.deepcopy(f) for f in self.cloud.flavors.values()]

    def get_flavor(self, flavor_id):
        """By ID only, as Nova's GET /flavors/<id>."""
        if flavor_id in self.cloud.flavors:
            return copy.deepcopy(self.cloud.flavors[flavor_id])
        return None

    def find_flavor(self, name_or_id, ignore_missing=False):
        # the ID first, as the real client layer (and OSC) do
        if name_or_id in self.cloud.flavors:
            return copy.deepcopy(self.cloud.flavors[name_or_id])
        found = [f for f in self.cloud.flavors.values()
                 if f['name'] == name_or_id]
        if found:
            return copy.deepcopy(found[0])
        if ignore_missing:
            return None
        raise errors.NotFound('No flavor %s' % name_or_id, 404)

    def create_flavor(self, **fields):
        def action():
            if any(f['name'] == fields['name']
                   for f in self.cloud.flavors.values()):
                raise errors.Conflict(
                    'Flavor with name %s already exists.' % fields['name'],
                    409)
            flavor_id = fields.get('id') or 'flavor-%d' % next(
                self.cloud.ids)
            if flavor_id in self.cloud.flavors:
                raise errors.Conflict(
                    'Flavor with ID %s already exists.' % flavor_id, 409)
            flavor = dict(fields, id=flavor_id, extra_specs={})
            flavor.setdefault('vcpus', None)
            flavor.setdefault('ram', None)
            self.cloud.flavors[flavor['id']] = flavor
            return copy.deepcopy(flavor)
        return self.cloud.write('create flavor %s' % fields['name'],
                                action)

    def set_flavor_extra_specs(self, flavor_id, extra_specs):
        def action():
            flavor = self._flavor(flavor_id)
            flavor['extra_specs'].update(extra_specs)
            return dict(flavor['extra_specs'])
        return self.cloud.write('set specs of %s' % flavor_id, action)

    def update_flavor_description(self, flavor_id, description):
        def action():
            self._flavor(flavor_id)['description'] = description
            return description
        return self.cloud.write('describe %s' % flavor_id, action)

    def delete_flavor_extra_spec(self, flavor_id, key):
        def action():
            self._flavor(flavor_id)['extra_specs'].pop(key, None)
        return self.cloud.write('unset %s of %s' % (key, flavor_id), action)

    def add_flavor_access(self, flavor_id, project_id):
        def action():
            self._flavor(flavor_id)
            access = self.cloud.access.setdefault(flavor_id, [])
            if project_id in access:
                raise errors.Conflict(
                    'Flavor access already exists for flavor %s and '
                    'project %s combination' % (flavor_id, project_id), 409)
            access.append(project_id)
        return self.cloud.write('give %s %s' % (project_id, flavor_id),
                                action)

    def remove_flavor_access(self, flavor_id, project_id):
        def action():
            self._flavor(flavor_id)
            access = self.cloud.access.setdefault(flavor_id, [])
            if project_id not in access:
                raise errors.NotFound(
                    'Flavor access not found for %s / %s combination.'
                    % (flavor_id, project_id), 404)
            access.remove(project_id)
        return self.cloud.write('take %s from %s' % (flavor_id, project_id),
                                action)

    def flavor_access(self, flavor_id):
        self._flavor(flavor_id)
        return sorted(self.cloud.access.get(flavor_id, []))

    def delete_flavor(self, flavor_id):
        def action():
            self._flavor(flavor_id)
            del self.cloud.flavors[flavor_id]
            self.cloud.access.pop(flavor_id, None)
        return self.cloud.write('delete flavor %s' % flavor_id, action)


class FakePlacement:
    def __init__(self, cloud):
        self.cloud = cloud

    def traits(self, uuid):
        if uuid not in self.cloud.providers:
            raise errors.NotFound('No resource provider %s' % uuid, 404)
        return (sorted(self.cloud.providers[uuid]),
                self.cloud.generations[uuid])

    def update_traits(self, uuid, add=(), remove=()):
        def action():
            unknown = sorted(set(add) - self.cloud.traits)
            if unknown:
                raise errors.APIError(
                    'No such trait(s): %s.' % ', '.join(unknown), 400)
            current = self.cloud.providers[uuid]
            wanted = (current | set(add)) - set(remove)
            self.cloud.providers[uuid] = wanted
            self.cloud.generations[uuid] += 1
            return wanted - current, current - wanted
        return self.cloud.write('traits of %s' % uuid, action)

    def existing_traits(self, names):
        return set(names) & self.cloud.traits

    def create_trait(self, name):
        def action():
            self.cloud.traits.add(name)
        return self.cloud.write('create trait %s' % name, action)

    def delete_trait(self, name):
        def action():
            if any(name in t for t in self.cloud.providers.values()):
                return False  # Placement: 409, the client says False
            self.cloud.traits.discard(name)
            return True
        return self.cloud.write('delete trait %s' % name, action)


class FakeImage:
    def __init__(self, cloud):
        self.cloud = cloud

    def find_image(self, name_or_id, by_name=True):
        if name_or_id in self.cloud.images:
            return copy.deepcopy(self.cloud.images[name_or_id])
        named = [i for i in self.cloud.images.values()
                 if i.get('name') == name_or_id]
        if by_name and len(named) == 1:
            return copy.deepcopy(named[0])
        raise errors.NotFound('No image %s' % name_or_id, 404)

    def update_properties(self, image, changes):
        def action():
            stored = self.cloud.images[image['id']]
            for key, value in changes.items():
                if value is None:
                    stored.pop(key, None)
                else:
                    stored[key] = value
            return copy.deepcopy(stored)
        return self.cloud.write('update image %s' % image['id'], action)


class FakeClient:
    def __init__(self):
        self.cloud = FakeCloud()
        self.compute = FakeCompute(self.cloud)
        self.placement = FakePlacement(self.cloud)
        self.image = FakeImage(self.cloud)


# -- plans ------------------------------------------------------------------

def pool_plan_steps():
    """The five steps of creating an isolated pool with one host."""
    return plan_mod.Plan('Creating pool a100', [
        plan_mod.create_aggregate('a100'),
        plan_mod.set_metadata('a100', {}, {
            'gpu_pool': 'a100', 'gpu_pool_mode': 'passthrough',
            'trait:' + POOL_TRAIT: 'required'}),
        plan_mod.create_trait(POOL_TRAIT),
        plan_mod.add_traits(ROOT1, [POOL_TRAIT], 'cmp1'),
        plan_mod.add_host('a100', 'cmp1'),
    ], rerun='"openstack gpu pool create a100 ..."')


def rerun(client, plan):
    """Apply PLAN again as a re-run of its command would.

    A re-run plans from what is: no step for what an earlier run already
    did (the planners diff; ``pool_plan.create`` adopts the empty aggregate
    an interrupted create left). The journal itself never adopts an
    aggregate, host or access that appeared after the plan looked.
    """
    executor = journal.Executor(client)
    steps = [s for s in plan.steps if not executor.holds(s)]
    return journal.apply(client, plan_mod.Plan(plan.title, steps))


def two_host_plan(client):
    """Add two hosts to an existing isolated pool, trait by trait."""
    client.cloud.traits.add(POOL_TRAIT)
    agg = client.compute.create_aggregate('a100')
    client.compute.set_aggregate_metadata(
        agg, {'gpu_pool': 'a100', 'trait:' + POOL_TRAIT: 'required'})
    client.cloud.writes = 0
    client.cloud.write_log = []
    return plan_mod.Plan('Adding cmp1, cmp2 to pool a100', [
        plan_mod.add_traits(ROOT1, [POOL_TRAIT], 'cmp1'),
        plan_mod.add_host('a100', 'cmp1'),
        plan_mod.add_traits(ROOT2, [POOL_TRAIT], 'cmp2'),
        plan_mod.add_host('a100', 'cmp2'),
    ])


class JournalTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.logger = self.useFixture(
            fixtures.FakeLogger(level=logging.DEBUG))
        self.client = FakeClient()
        self.cloud = self.client.cloud

    def success_state(self, plan):
        other = FakeClient()
        other.cloud.traits = set(self.cloud.traits)
        other.cloud.providers = copy.deepcopy(self.cloud.providers)
        other.cloud.generations = dict(self.cloud.generations)
        other.cloud.aggregates = copy.deepcopy(self.cloud.aggregates)
        other.cloud.flavors = copy.deepcopy(self.cloud.flavors)
        other.cloud.access = copy.deepcopy(self.cloud.access)
        other.cloud.images = copy.deepcopy(self.cloud.images)
        other.cloud.ids = itertools.count(1000)
        rerun(other, plan)
        return other.cloud.state()


class TestApply(JournalTestCase):

    def test_runs_every_step_in_order(self):
        plan = pool_plan_steps()
        executor = journal.apply(self.client, plan)
        self.assertEqual(
            ['create aggregate a100', 'set metadata of a100',
             'create trait %s' % POOL_TRAIT, 'traits of %s' % ROOT1,
             'add cmp1 to a100'], self.cloud.write_log)
        self.assertEqual(
            {'a100': (None, ['cmp1'], {
                'gpu_pool': 'a100', 'gpu_pool_mode': 'passthrough',
                'trait:' + POOL_TRAIT: 'required'})},
            self.cloud.state()['aggregates'])
        self.assertEqual([POOL_TRAIT], self.cloud.state()['providers'][ROOT1])
        self.assertEqual([], executor.warnings)

    def test_on_step_sees_every_step_before_it_runs(self):
        plan = pool_plan_steps()
        seen = []

        def on_step(index, step):
            seen.append((index, step.op, self.cloud.writes))

        journal.apply(self.client, plan, on_step=on_step)
        self.assertEqual(
            [(0, 'aggregate.create', 0), (1, 'aggregate.metadata', 1),
             (2, 'trait.create', 2), (3, 'provider.add_traits', 3),
             (4, 'aggregate.add_host', 4)], seen)

    def test_empty_plan_writes_nothing(self):
        journal.apply(self.client, plan_mod.Plan('Nothing'))
        self.assertEqual(0, self.cloud.writes)

    def test_applying_twice_converges(self):
        plan = pool_plan_steps()
        journal.apply(self.client, plan)
        done = self.cloud.state()
        rerun(self.client, plan)
        self.assertEqual(done, self.cloud.state())

    def test_failure_at_every_step_undoes_everything(self):
        before = self.cloud.state()
        texts = [s.what for s in pool_plan_steps()]
        for k in range(1, 6):
            client = FakeClient()
            client.cloud.fail(k, 'error')
            error = self.assertRaises(journal.ApplyError, journal.apply,
                                      client, pool_plan_steps())
            message = str(error)
            self.assertEqual(before, client.cloud.state(), k)
            self.assertIn('Creating pool a100 failed at step %d of 5 (%s): '
                          % (k, texts[k - 1]), message)
            self.assertIn('500 Internal Server Error', message)
            if k == 1:
                self.assertIn('Nothing had been changed.', message)
            else:
                self.assertIn(
                    'Everything it had done was undone (%d step(s)): the '
                    'cloud is as it was.' % (k - 1), message)
            self.assertIn('Fix the cause and run "openstack gpu pool '
                          'create a100 ..." again.', message)
            self.assertNotIn('Undoing failed', message)
            self.assertEqual([], error.left)
            self.assertEqual([], error.undo_failures)
            self.assertEqual(pool_plan_steps().steps[k - 1], error.failed)

    def test_undo_runs_newest_first(self):
        self.cloud.fail(5, 'error')
        self.assertRaises(journal.ApplyError, journal.apply, self.client,
                          pool_plan_steps())
        self.assertEqual(
            ['traits of %s' % ROOT1, 'delete trait %s' % POOL_TRAIT,
             'set metadata of a100', 'delete aggregate a100'],
            self.cloud.write_log[5:])

    def test_lost_answer_at_every_step_completes(self):
        success = self.success_state(pool_plan_steps())
        for k in range(1, 6):
            client = FakeClient()
            client.cloud.fail(k, 'lost')
            journal.apply(client, pool_plan_steps())
            self.assertEqual(success, client.cloud.state(), k)
            # the read-back saw the effect: nothing was written twice
            self.assertEqual(5, client.cloud.writes, k)

    def test_non_json_answer_is_a_failure_like_any_other(self):
        before = self.cloud.state()
        self.cloud.fail(3, 'value')
        error = self.assertRaises(journal.ApplyError, journal.apply,
                                  self.client, pool_plan_steps())
        self.assertEqual(before, self.cloud.state())
        self.assertIn('failed at step 3 of 5 (create trait %s): Expecting '
                      'value: line 1 column 1 (char 0).' % POOL_TRAIT,
                      str(error))
        self.assertIn('Everything it had done was undone (2 step(s))',
                      str(error))

    def test_type_error_from_a_step_is_a_failure_like_any_other(self):
        before = self.cloud.state()

        def broken(*args, **kwargs):
            raise TypeError("'NoneType' object is not subscriptable")

        self.client.compute.add_host = broken
        error = self.assertRaises(journal.ApplyError, journal.apply,
                                  self.client, pool_plan_steps())
        self.assertEqual(before, self.cloud.state())
        self.assertIn("failed at step 5 of 5 (add host cmp1 to aggregate "
                      "a100): 'NoneType' object is not subscriptable.",
                      str(error))

    def test_rollback_after_the_first_host(self):
        plan = two_host_plan(self.client)
        before = self.cloud.state()
        self.assertEqual((None, [], {
            'gpu_pool': 'a100', 'trait:' + POOL_TRAIT: 'required'}),
            before['aggregates']['a100'])
        self.cloud.fail(3, 'error')  # the trait write of cmp2
        error = self.assertRaises(journal.ApplyError, journal.apply,
                                  self.client, plan)
        self.assertEqual(before, self.cloud.state())
        self.assertEqual([], self.cloud.state()['providers'][ROOT1])
        self.assertEqual([], self.cloud.state()['aggregates']['a100'][1])
        self.assertIn('failed at step 3 of 4 (add trait %s to resource '
                      'provider cmp2)' % POOL_TRAIT, str(error))
        self.assertIn('Everything it had done was undone (2 step(s))',
                      str(error))

    def test_undo_that_fails_says_what_is_left(self):
        # Undoing stops at the first undo that fails: what is left is the
        # prefix of the plan up to that step, which a re-run completes.
        texts = [s.what for s in pool_plan_steps()]
        success = self.success_state(pool_plan_steps())
        for k in range(2, 6):
            client = FakeClient()
            client.cloud.fail(k, 'error')
            client.cloud.fail(k + 1, 'error')  # undoing step k - 1
            plan = pool_plan_steps()
            prefix = self.success_state(plan_mod.Plan('prefix',
                                                      plan.steps[:k - 1]))
            error = self.assertRaises(journal.ApplyError, journal.apply,
                                      client, plan)
            message = str(error)
            self.assertEqual(list(reversed(plan.steps[:k - 1])), error.left,
                             k)
            self.assertEqual([plan.steps[k - 2]],
                             [s for s, _exc in error.undo_failures], k)
            self.assertEqual(plan.steps[k - 1], error.failed, k)
            # no undo was tried after the one that failed
            self.assertEqual(k + 1, client.cloud.writes, k)
            self.assertEqual(prefix, client.cloud.state(), k)
            self.assertIn('Creating pool a100 failed at step %d of 5 (%s): '
                          % (k, texts[k - 1]), message)
            self.assertIn('Undoing failed too (could not undo "%s": '
                          % texts[k - 2], message)
            self.assertIn('500 Internal Server Error), so this is left: '
                          '%s.' % '; '.join(texts[:k - 1]), message)
            self.assertIn('Run "openstack gpu pool create a100 ..." again '
                          'to finish it from where it stopped.', message)
            self.assertNotIn('Everything it had done was undone', message)
            self.assertNotIn('Not undone (cannot be)', message)
            self.assertIn('Could not undo "%s"' % texts[k - 2],
                          self.logger.output)
            # Every step is idempotent: the same plan, applied again on
            # what was left, reaches the state a clean run reaches.
            rerun(client, plan)
            self.assertEqual(success, client.cloud.state(), k)

    def test_undoing_stops_at_the_first_undo_that_fails(self):
        self.cloud.fail(5, 'error')  # add host
        self.cloud.fail(6, 'error')  # undoing "add trait" (step 4)
        plan = pool_plan_steps()
        prefix = self.success_state(plan_mod.Plan('prefix', plan.steps[:4]))
        error = self.assertRaises(journal.ApplyError, journal.apply,
                                  self.client, plan)
        # the older undos were not tried: the cloud holds steps 1-4
        self.assertEqual(6, self.cloud.writes)
        self.assertEqual(prefix, self.cloud.state())
        self.assertEqual(list(reversed(plan.steps[:4])), error.left)
        self.assertEqual([plan.steps[3]],
                         [s for s, _exc in error.undo_failures])
        texts = [s.what for s in plan.steps[:4]]
        self.assertIn('Undoing failed too (could not undo "%s": traits of '
                      '%s: 500 Internal Server Error), so this is left: '
                      '%s. Run "openstack gpu pool create a100 ..." again '
                      'to finish it from where it stopped.'
                      % (texts[3], ROOT1, '; '.join(texts)), str(error))
        rerun(self.client, plan)
        self.assertEqual(self.success_state(plan), self.cloud.state())

    def test_undo_whose_answer_is_lost_counts_as_undone(self):
        before = self.cloud.state()
        self.cloud.fail(5, 'error')
        self.cloud.fail(6, 'lost')
        error = self.assertRaises(journal.ApplyError, journal.apply,
                                  self.client, pool_plan_steps())
        self.assertEqual(before, self.cloud.state())
        self.assertEqual([], error.left)
        self.assertIn('Everything it had done was undone (4 step(s))',
                      str(error))

    def test_unreadable_outcome_is_undone_too(self):
        # The add_host answer is lost and the read-back fails as well: the
        # step is undone (inverses are idempotent) with the others.
        before = self.cloud.state()
        self.cloud.fail(5, 'lost')
        real = self.client.compute.aggregates
        failed = []

        def aggregates():
            if self.cloud.writes == 5 and not failed:  # the read-back
                failed.append(True)
                raise errors.APIError('Nova is down', 503)
            return real()

        self.client.compute.aggregates = aggregates
        error = self.assertRaises(journal.ApplyError, journal.apply,
                                  self.client, pool_plan_steps())
        self.assertEqual(before, self.cloud.state())
        self.assertIn('failed at step 5 of 5', str(error))
        self.assertEqual('remove cmp1 from a100', self.cloud.write_log[5])


class TestReadBack(JournalTestCase):

    def test_recreated_aggregate_holds_only_with_its_metadata(self):
        # The undo of "delete host aggregate" creates it again with its
        # metadata (two writes). An aggregate that came back without the
        # metadata is not what the undo promised.
        self.client.compute.create_aggregate('old')
        step = plan_mod.delete_aggregate('old', None, {'gpu_pool': 'old'})
        executor = journal.Executor(self.client)
        self.assertFalse(executor.holds(step.inverse))

    def test_undo_of_delete_whose_metadata_fails_is_not_called_done(self):
        agg = self.client.compute.create_aggregate('old')
        self.client.compute.set_aggregate_metadata(agg, {'gpu_pool': 'old'})
        self.cloud.writes = 0
        before = self.cloud.state()
        plan = plan_mod.Plan('Deleting pool old', [
            plan_mod.delete_aggregate('old', None, {'gpu_pool': 'old'}),
            plan_mod.create_trait(POOL_TRAIT),
        ])
        self.cloud.fail(2, 'error')  # create trait
        self.cloud.fail(4, 'error')  # undo: the metadata after the create
        error = self.assertRaises(journal.ApplyError, journal.apply,
                                  self.client, plan)
        # the aggregate came back without its metadata: not as it was
        self.assertNotEqual(before, self.cloud.state())
        self.assertEqual({}, self.cloud.state()['aggregates']['old'][2])
        self.assertNotIn('the cloud is as it was', str(error))
        self.assertEqual([plan.steps[0]], error.left)
        self.assertIn('Undoing failed too (could not undo "delete host '
                      'aggregate old": set metadata of old: 500 Internal '
                      'Server Error), so this is left: delete host '
                      'aggregate old.', str(error))


class TestFlavorPlans(JournalTestCase):

    WANTED = {
        'vcpus': 8, 'ram': 65536, 'disk': 40, 'ephemeral': 0, 'swap': 0,
        'is_public': False, 'description': None,
        'extra_specs': {'aggregate_instance_extra_specs:gpu_pool': 'a100',
                        'pci_passthrough:alias': 'a100:1'},
        'projects': ['p1', 'p2'],
    }

    def test_create_failing_at_the_second_access_is_undone(self):
        plan = flavor_plan.create('g1', {'name': 'a100'}, self.WANTED,
                                      {})
        before = self.cloud.state()
        self.cloud.fail(4, 'error')
        error = self.assertRaises(journal.ApplyError, journal.apply,
                                  self.client, plan)
        self.assertEqual(before, self.cloud.state())
        self.assertIn('failed at step 4 of 4 (give project p2 access to '
                      'flavor g1)', str(error))

    def test_create_completes(self):
        plan = flavor_plan.create('g1', {'name': 'a100'}, self.WANTED,
                                      {})
        journal.apply(self.client, plan)
        self.assertEqual(
            {'g1': (8, 65536, self.WANTED['extra_specs'], ['p1', 'p2'])},
            self.cloud.state()['flavors'])

    def test_specs_undo_restores_and_unsets(self):
        flavor = self.client.compute.create_flavor(name='g1', vcpus=1,
                                                   ram=512)
        self.client.compute.set_flavor_extra_specs(
            flavor['id'], {'a': '1', 'gone': 'x'})
        self.client.compute.add_flavor_access(flavor['id'], 'p1')
        self.cloud.writes = 0
        before = self.cloud.state()
        plan = plan_mod.Plan('Changing flavor g1', [
            plan_mod.flavor_specs('g1', {'a': '1', 'gone': 'x'},
                                  {'a': '2', 'new': 'y'}, unset=['gone'],
                                  flavor_id=flavor['id']),
            plan_mod.remove_access('g1', 'p1', flavor_id=flavor['id']),
            plan_mod.add_access('g1', 'p2', flavor_id=flavor['id']),
        ])
        self.cloud.fail(4, 'error')  # specs are 2 writes, then 1 each
        self.assertRaises(journal.ApplyError, journal.apply, self.client,
                          plan)
        self.assertEqual(before, self.cloud.state())

    def test_step_of_several_writes_failing_halfway_is_undone(self):
        # flavor.specs is one POST for the keys it sets and one DELETE per
        # key it unsets. Ending isolation unsets every key that requires
        # the pool trait (trait:X and trait1:X here); when the second
        # DELETE fails the first key is gone and must be put back.
        flavor = self.client.compute.create_flavor(name='g1', vcpus=1,
                                                   ram=512)
        old = {'trait:' + POOL_TRAIT: 'required',
               'trait1:' + POOL_TRAIT: 'required'}
        self.client.compute.set_flavor_extra_specs(flavor['id'], old)
        self.cloud.writes = 0
        before = self.cloud.state()
        plan = plan_mod.Plan('Ending isolation of pool a100', [
            plan_mod.flavor_specs('g1', old, unset=sorted(old),
                                  flavor_id=flavor['id']),
        ])
        self.cloud.fail(2, 'error')  # the second DELETE
        error = self.assertRaises(journal.ApplyError, journal.apply,
                                  self.client, plan)
        self.assertIn('failed at step 1 of 1', str(error))
        self.assertEqual(before, self.cloud.state())

    def test_irreversible_delete_is_reported_as_left(self):
        for name in ('g1', 'g2'):
            self.client.compute.create_flavor(name=name, vcpus=1, ram=512)
        flavors = sorted(self.cloud.flavors.values(),
                         key=lambda f: f['name'])
        plan = flavor_plan.delete(flavors)
        self.cloud.writes = 0
        self.cloud.fail(2, 'error')
        error = self.assertRaises(journal.ApplyError, journal.apply,
                                  self.client, plan)
        self.assertEqual(['g2'], sorted(self.cloud.state()['flavors']))
        self.assertEqual([plan.steps[0]], error.left)
        self.assertIn('Deleting flavors failed at step 2 of 2 (%s): '
                      % plan.steps[1].what, str(error))
        self.assertIn('Not undone (cannot be): %s. Run the same command '
                      'again to finish it from where it stopped.'
                      % plan.steps[0].what, str(error))
        # no undo of "delete flavor g1" was tried (the plan says "not
        # undone on failure"), so the error must not say undoing failed
        self.assertEqual([], error.undo_failures)
        self.assertNotIn('Undoing failed too', str(error))


class TestImagePlans(JournalTestCase):

    def test_image_update_undone(self):
        self.cloud.images['img-1'] = {'id': 'img-1', 'name': 'ubuntu',
                                      'trait:' + POOL_TRAIT: 'required'}
        self.cloud.traits.add(POOL_TRAIT)
        self.cloud.providers[ROOT1] = {POOL_TRAIT}
        before = self.cloud.state()
        plan = plan_mod.Plan('Ending isolation', [
            plan_mod.update_image(self.cloud.images['img-1'],
                                  {'trait:' + POOL_TRAIT: None,
                                   'hw_machine_type': 'q35'}),
            plan_mod.remove_traits(ROOT1, [POOL_TRAIT], 'cmp1'),
        ])
        self.cloud.fail(2, 'error')
        self.assertRaises(journal.ApplyError, journal.apply, self.client,
                          plan)
        self.assertEqual(before, self.cloud.state())


class TestSignals(JournalTestCase):

    def setUp(self):
        super().setUp()
        self.caught = []
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            # A handler of our own: if the journal failed to defer a
            # signal, it lands here instead of ending the test run.
            old = signal.signal(signum, self._record)
            self.addCleanup(signal.signal, signum, old)

    def _record(self, signum, _frame):
        self.caught.append(signum)

    def _kill_at(self, at, signum):
        def on_step(index, step):
            if index == at:
                os.kill(os.getpid(), signum)
        return on_step

    def test_signal_before_step_two_undoes(self):
        for signum, name in ((signal.SIGINT, 'SIGINT'),
                             (signal.SIGTERM, 'SIGTERM')):
            client = FakeClient()
            before = client.cloud.state()
            plan = pool_plan_steps()
            error = self.assertRaises(
                journal.ApplyError, journal.apply, client, plan,
                on_step=self._kill_at(1, signum))
            self.assertEqual(before, client.cloud.state(), name)
            # the step under way when the signal came is finished, then
            # undone with the others; nothing after it starts
            self.assertIn('Creating pool a100 was interrupted by %s after '
                          'step 2 of 5. Everything it had done was undone '
                          '(2 step(s)): the cloud is as it was.' % name,
                          str(error))
            self.assertNotIn('failed at step', str(error))
            self.assertEqual(plan.steps[2], error.failed, name)
            self.assertEqual([], error.left, name)
            self.assertEqual(
                ['create aggregate a100', 'set metadata of a100',
                 'set metadata of a100', 'delete aggregate a100'],
                client.cloud.write_log, name)
            self.assertEqual(self._record, signal.getsignal(signum), name)
            self.assertEqual([], self.caught, name)

    def test_signal_handlers_restored_after_success(self):
        journal.apply(self.client, pool_plan_steps())
        self.assertEqual(self._record, signal.getsignal(signal.SIGINT))
        self.assertEqual(self._record, signal.getsignal(signal.SIGTERM))

    def test_default_sigint_handler_restored(self):
        signal.signal(signal.SIGINT, signal.default_int_handler)
        self.assertRaises(
            journal.ApplyError, journal.apply, self.client,
            pool_plan_steps(), on_step=self._kill_at(1, signal.SIGINT))
        self.assertIs(signal.default_int_handler,
                      signal.getsignal(signal.SIGINT))

    def test_signal_during_the_last_step_completes(self):
        success = self.success_state(pool_plan_steps())
        for signum in (signal.SIGINT, signal.SIGTERM):
            client = FakeClient()
            journal.apply(client, pool_plan_steps(),
                          on_step=self._kill_at(4, signum))
            self.assertEqual(success, client.cloud.state())
            self.assertEqual(self._record, signal.getsignal(signum))
        self.assertEqual([], self.caught)
        self.assertIn('the command completed', self.logger.output)

    def test_signal_during_undo_does_not_stop_it(self):
        before = self.cloud.state()
        self.cloud.fail(5, 'error')
        real = self.client.placement.update_traits

        def update_traits(uuid, add=(), remove=()):
            if remove:  # the first undo
                os.kill(os.getpid(), signal.SIGTERM)
            return real(uuid, add=add, remove=remove)

        self.client.placement.update_traits = update_traits
        self.assertRaises(journal.ApplyError, journal.apply, self.client,
                          pool_plan_steps())
        self.assertEqual(before, self.cloud.state())
        self.assertEqual([], self.caught)

    def _hang_in_trait_create(self, second):
        """Step 3 (trait create) gets SECOND while its request is under
        way (a hung service: the write happened, no answer yet)."""
        real = FakePlacement(self.cloud).create_trait

        def create_trait(name):
            real(name)
            os.kill(os.getpid(), second)
            if second != signal.SIGHUP:
                self.fail('a second signal did not abandon the step')

        self.client.placement.create_trait = create_trait

    def test_second_sigint_abandons_the_running_step(self):
        for second in (signal.SIGINT, signal.SIGTERM):
            client = self.client = FakeClient()
            self.cloud = client.cloud
            self._hang_in_trait_create(second)
            plan = pool_plan_steps()
            error = self.assertRaises(
                journal.ApplyError, journal.apply, client, plan,
                on_step=self._kill_at(2, signal.SIGINT))
            steps = [s.what for s in plan.steps]
            self.assertEqual(
                'Creating pool a100 was abandoned by a second %s during '
                'step 3 of 5 (%s). Nothing more was undone. Its outcome is '
                'unknown, this may or may not have happened: %s. This is '
                'in effect: %s; %s. Run "openstack gpu pool create a100 '
                '..." again to finish it from where it stopped.' % (
                    signal.Signals(second).name, steps[2], steps[2],
                    steps[1], steps[0]), str(error))
            # nothing was undone: the cloud holds steps 1-3
            self.assertEqual(['create aggregate a100', 'set metadata of '
                              'a100', 'create trait ' + POOL_TRAIT],
                             self.cloud.write_log)
            self.assertIs(plan.steps[2], error.failed)
            self.assertEqual([plan.steps[1], plan.steps[0], plan.steps[2]],
                             error.left)
            # the signal is the error's: an N-of-M loop stops there
            self.assertEqual(second, error.interrupted)
            self.assertTrue(journal.interrupted(error))
            self.assertEqual(self._record, signal.getsignal(signal.SIGINT))
            self.assertEqual(self._record, signal.getsignal(signal.SIGTERM))
            self.assertEqual([], self.caught)
        # the re-run finishes the plan
        success = self.success_state(pool_plan_steps())
        del self.client.placement.create_trait
        rerun(self.client, pool_plan_steps())
        self.assertEqual(success, self.cloud.state())

    def test_sighup_is_deferred_and_never_abandons(self):
        before = self.cloud.state()
        self._hang_in_trait_create(signal.SIGHUP)
        error = self.assertRaises(
            journal.ApplyError, journal.apply, self.client,
            pool_plan_steps(), on_step=self._kill_at(2, signal.SIGHUP))
        # two hang-ups: the step finished, then everything was undone
        self.assertIn('was interrupted by SIGHUP after step 3 of 5. '
                      'Everything it had done was undone (3 step(s))',
                      str(error))
        self.assertEqual(signal.SIGHUP, error.interrupted)
        self.assertEqual(before, self.cloud.state())
        self.assertEqual(self._record, signal.getsignal(signal.SIGHUP))
        self.assertEqual([], self.caught)

    def test_second_sigint_during_undo_names_what_is_left(self):
        self.cloud.fail(5, 'error')
        real = self.client.placement.update_traits

        def update_traits(uuid, add=(), remove=()):
            if remove:  # undoing step 4: Ctrl-C twice
                os.kill(os.getpid(), signal.SIGINT)
                os.kill(os.getpid(), signal.SIGINT)
            return real(uuid, add=add, remove=remove)

        self.client.placement.update_traits = update_traits
        plan = pool_plan_steps()
        error = self.assertRaises(journal.ApplyError, journal.apply,
                                  self.client, plan)
        steps = [s.what for s in plan.steps]
        self.assertIn(
            'and was abandoned while undoing, by a second SIGINT. Nothing '
            'more was undone. Its outcome is unknown, this may or may not '
            'have happened: %s. This is in effect: %s; %s; %s. Run' % (
                steps[3], steps[2], steps[1], steps[0]), str(error))
        self.assertTrue(str(error).startswith('Creating pool a100 failed ('))
        # the trait is still on the provider: the undo never ran
        self.assertIn(POOL_TRAIT, self.cloud.providers[ROOT1])
        self.assertEqual(plan.steps[2::-1] + [plan.steps[3]], error.left)
        self.assertEqual([], self.caught)

    def test_a_second_signal_during_the_first_line(self):
        # the operator's quick second Ctrl-C lands while the first
        # handler writes its line: the nested handler does not write into
        # the stream under way (a buffered stderr raises "reentrant call"
        # there, and logging prints a traceback); its line follows the
        # first, and the step is abandoned
        lines = []

        class Stream(logging.Handler):
            def emit(self, record):
                if lines == ['busy']:
                    self.fail = record.getMessage()
                lines.append('busy')
                try:
                    if len(lines) == 1:
                        # the second SIGINT, while this line is written
                        os.kill(os.getpid(), signal.SIGINT)
                finally:
                    lines[-1] = record.getMessage()

        handler = Stream()
        handler.fail = None
        journal.LOG.addHandler(handler)
        self.addCleanup(journal.LOG.removeHandler, handler)
        with journal.deferred_signals() as received:
            error = self.assertRaises(journal.Abandoned, os.kill,
                                      os.getpid(), signal.SIGINT)
        self.assertEqual(signal.SIGINT, error.signum)
        self.assertEqual([signal.SIGINT, signal.SIGINT], received)
        self.assertIsNone(handler.fail)
        self.assertEqual(2, len(lines))
        self.assertTrue(lines[0].startswith('Received SIGINT: finishing'))
        self.assertEqual('Received SIGINT again: abandoning the running '
                         'step.', lines[1])
        self.assertEqual([], self.caught)

    def test_a_failure_is_no_interruption(self):
        # a step that failed: the N-of-M loops go on to the next item
        self.client.placement.create_trait = mock.Mock(
            side_effect=RuntimeError('boom'))
        error = self.assertRaises(journal.ApplyError, journal.apply,
                                  self.client, pool_plan_steps())
        self.assertIsNone(error.interrupted)
        self.assertFalse(journal.interrupted(error))
        self.assertFalse(journal.interrupted(RuntimeError('boom')))

    def test_interrupted_message(self):
        self.assertEqual('interrupted by SIGINT',
                         str(journal.Interrupted(signal.SIGINT)))
        self.assertEqual('interrupted by 250', str(journal.Interrupted(250)))


class TestFlavorsById(JournalTestCase):
    """A flavor named like another flavor's ID (issue 21, defect 1)."""

    def setUp(self):
        super().setUp()
        # a plain flavor whose ID is 42, and a plan for a flavor named 42
        self.plain = self.client.compute.create_flavor(
            name='plain', vcpus=1, ram=512, id='42')
        self.client.compute.set_flavor_extra_specs('42', {'hw:a': '1'})
        self.cloud.writes = 0
        self.before = self.cloud.state()
        self.plan = flavor_plan.create('42', {'name': 'a100'},
                                           TestFlavorPlans.WANTED, {})

    def new_flavors(self):
        return [f for f in self.cloud.flavors.values() if f['name'] == '42']

    def test_undo_deletes_the_created_id_not_the_named_one(self):
        self.cloud.fail(2, 'refused')  # Nova refuses the extra specs
        error = self.assertRaises(journal.ApplyError, journal.apply,
                                  self.client, self.plan)
        self.assertEqual(self.before, self.cloud.state())
        self.assertEqual([], self.new_flavors())
        self.assertIn('the cloud is as it was', str(error))

    def test_refused_create_is_not_read_back_as_done(self):
        self.cloud.fail(1, 'refused')
        error = self.assertRaises(journal.ApplyError, journal.apply,
                                  self.client, self.plan)
        self.assertIn('failed at step 1 of 4 (create flavor 42)', str(error))
        self.assertIn('Nothing had been changed.', str(error))
        self.assertEqual(self.before, self.cloud.state())
        self.assertEqual(1, self.cloud.writes)

    def test_lost_create_is_found_by_name_among_names(self):
        self.cloud.fail(1, 'lost')
        executor = journal.apply(self.client, self.plan)
        (new,) = self.new_flavors()
        self.assertEqual(new['id'], executor.created_flavor('42'))
        self.assertEqual(TestFlavorPlans.WANTED['extra_specs'],
                         new['extra_specs'])
        self.assertEqual(['p1', 'p2'], self.cloud.access[new['id']])
        self.assertEqual({'hw:a': '1'}, self.cloud.flavors['42'][
            'extra_specs'])
        self.assertNotIn('42', self.cloud.access)

    def test_lost_create_then_failure_deletes_the_one_it_made(self):
        self.cloud.fail(1, 'lost')
        self.cloud.fail(3, 'error')
        self.assertRaises(journal.ApplyError, journal.apply, self.client,
                          self.plan)
        self.assertEqual(self.before, self.cloud.state())

    def test_steps_on_an_existing_flavor_use_its_id(self):
        new = self.client.compute.create_flavor(name='42', vcpus=1, ram=512)
        before = self.cloud.state()
        plan = plan_mod.Plan('Isolating pool a100', [
            plan_mod.flavor_specs('42', {}, {'trait:X': 'required'},
                                  flavor_id=new['id']),
            plan_mod.add_access('42', 'p1', flavor_id=new['id']),
        ])
        self.cloud.fail(self.cloud.writes + 2, 'error')
        self.assertRaises(journal.ApplyError, journal.apply, self.client,
                          plan)
        self.assertEqual(before, self.cloud.state())
        journal.apply(self.client, plan)
        self.assertEqual({'trait:X': 'required'},
                         self.cloud.flavors[new['id']]['extra_specs'])
        self.assertEqual({'hw:a': '1'},
                         self.cloud.flavors['42']['extra_specs'])

    def test_a_step_for_a_flavor_it_did_not_create_fails(self):
        plan = plan_mod.Plan('Changing flavor 42', [
            plan_mod.flavor_specs('42', {}, {'k': 'v'}, flavor_id=None)])
        error = self.assertRaises(journal.ApplyError, journal.apply,
                                  self.client, plan)
        self.assertIn('Flavor 42 was not created by this command', str(error))
        self.assertEqual(self.before, self.cloud.state())

    def test_delete_by_id_read_back_by_id(self):
        # a flavor whose name is the plain flavor's ID: deleting it by its
        # own ID leaves the plain one, and the read-back is by ID
        new = self.client.compute.create_flavor(name='42', vcpus=1, ram=512)
        self.cloud.writes = 0
        self.cloud.fail(1, 'lost')
        plan = flavor_plan.delete([new])
        journal.apply(self.client, plan)
        self.assertEqual({'42': 'plain'}, self.cloud.state()['flavor_ids'])


class TestAdoption(JournalTestCase):
    """Another writer's objects are never taken over (defect 8)."""

    def other_writer(self, step_index, action):
        def on_step(index, step):
            if index == step_index:
                action()
        return on_step

    def test_aggregate_made_meanwhile_is_not_adopted(self):
        plan = pool_plan_steps()

        def make():
            agg = FakeAggregate(next(self.cloud.ids), 'a100',
                                metadata={'theirs': '1'})
            self.cloud.aggregates[agg.id] = agg

        error = self.assertRaises(
            journal.ApplyError, journal.apply, self.client, plan,
            on_step=self.other_writer(0, make))
        self.assertIn('Host aggregate a100 was made by another writer after '
                      'this command looked at the cloud', str(error))
        self.assertEqual({'a100': (None, [], {'theirs': '1'})},
                         self.cloud.state()['aggregates'])
        self.assertEqual([], self.cloud.write_log)

    def test_novas_409_on_create_is_not_adopted(self):
        # the other writer wins the race after the journal's own check
        plan = plan_mod.Plan('Creating pool a100', [
            plan_mod.create_aggregate('a100'),
            plan_mod.set_metadata('a100', {}, {'gpu_pool': 'a100'})])
        create = self.client.compute.create_aggregate

        def racing(name, zone=None):
            agg = FakeAggregate(next(self.cloud.ids), name)
            self.cloud.aggregates[agg.id] = agg
            return create(name, zone)

        self.client.compute.create_aggregate = racing
        error = self.assertRaises(journal.ApplyError, journal.apply,
                                  self.client, plan)
        self.assertIn('was made by another writer', str(error))
        self.assertEqual({'a100': (None, [], {})},
                         self.cloud.state()['aggregates'])

    def test_host_added_meanwhile_is_not_adopted(self):
        plan = two_host_plan(self.client)

        def add():
            agg = next(iter(self.cloud.aggregates.values()))
            agg.hosts.append('cmp1')

        error = self.assertRaises(
            journal.ApplyError, journal.apply, self.client, plan,
            on_step=self.other_writer(1, add))
        self.assertIn('Host cmp1 in aggregate a100 was made by another '
                      'writer', str(error))
        self.assertIn('the cloud is as it was', str(error))
        # the other writer's host stays; the journal's own trait is undone
        self.assertEqual(['cmp1'],
                         self.cloud.state()['aggregates']['a100'][1])
        self.assertEqual([], self.cloud.state()['providers'][ROOT1])

    def test_access_given_meanwhile_is_not_adopted(self):
        flavor = self.client.compute.create_flavor(name='g1', vcpus=1,
                                                   ram=512)
        plan = plan_mod.Plan('Creating flavor g1', [
            plan_mod.flavor_specs('g1', {}, {'a': '1'},
                                  flavor_id=flavor['id']),
            plan_mod.add_access('g1', 'p1', flavor_id=flavor['id'])])
        error = self.assertRaises(
            journal.ApplyError, journal.apply, self.client, plan,
            on_step=self.other_writer(1, lambda: self.cloud.access.setdefault(
                flavor['id'], []).append('p1')))
        self.assertIn('Access of project p1 to flavor g1 was made by '
                      'another writer', str(error))
        self.assertEqual(['p1'], self.cloud.access[flavor['id']])
        self.assertEqual({}, self.cloud.flavors[flavor['id']]['extra_specs'])


class TestUndoComparesFirst(JournalTestCase):
    """An undo restores a key only while it holds what the plan wrote."""

    def failing_after(self, plan, change):
        """Apply PLAN + a failing step; CHANGE runs before the last."""
        plan.add(plan_mod.create_trait('CUSTOM_LAST'))
        last = len(plan) - 1

        def on_step(index, step):
            if index == last:
                change()
                self.cloud.fail(self.cloud.writes + 1, 'error')

        return self.assertRaises(journal.ApplyError, journal.apply,
                                 self.client, plan, on_step=on_step)

    def test_aggregate_metadata(self):
        agg = self.client.compute.create_aggregate('a100')
        self.client.compute.set_aggregate_metadata(agg, {'k': 'old',
                                                         'j': 'old'})
        plan = plan_mod.Plan('Changing pool a100', [plan_mod.set_metadata(
            'a100', {'k': 'old', 'j': 'old'}, {'k': 'ours', 'j': 'ours'})])

        def theirs():
            self.cloud.aggregates[agg.id].metadata['k'] = 'theirs'

        error = self.failing_after(plan, theirs)
        self.assertEqual({'k': 'theirs', 'j': 'old'},
                         self.cloud.state()['aggregates']['a100'][2])
        self.assertIn('Left as another writer changed them after this '
                      'command had: k of host aggregate a100 (now theirs, '
                      'set by another writer).', str(error))
        self.assertNotIn('the cloud is as it was', str(error))

    def test_flavor_specs(self):
        flavor = self.client.compute.create_flavor(name='g1', vcpus=1,
                                                   ram=512)
        self.client.compute.set_flavor_extra_specs(flavor['id'],
                                                   {'k': 'old', 'u': 'old'})
        plan = plan_mod.Plan('Changing flavor g1', [plan_mod.flavor_specs(
            'g1', {'k': 'old', 'u': 'old'}, {'k': 'ours', 'n': 'ours'},
            unset=['u'], flavor_id=flavor['id'])])

        def theirs():
            specs = self.cloud.flavors[flavor['id']]['extra_specs']
            specs.update(k='theirs', n='theirs', u='theirs')

        error = self.failing_after(plan, theirs)
        self.assertEqual({'k': 'theirs', 'n': 'theirs', 'u': 'theirs'},
                         self.cloud.flavors[flavor['id']]['extra_specs'])
        for key in ('k', 'n', 'u'):
            self.assertIn('%s of flavor g1 (now theirs' % key, str(error))

    def test_flavor_description(self):
        flavor = self.client.compute.create_flavor(
            name='g1', vcpus=1, ram=512, description='old')

        def plan():
            return plan_mod.Plan('Changing flavor g1', [
                plan_mod.set_description('g1', 'old', 'ours',
                                         flavor_id=flavor['id'])])

        error = self.failing_after(plan(), lambda: None)
        self.assertEqual('old', self.cloud.flavors[flavor['id']]
                         ['description'])
        self.assertIn('the cloud is as it was', str(error))

        def theirs():
            self.cloud.flavors[flavor['id']]['description'] = 'theirs'

        error = self.failing_after(plan(), theirs)
        self.assertEqual('theirs', self.cloud.flavors[flavor['id']]
                         ['description'])
        self.assertIn('description of flavor g1 (now theirs', str(error))

    def test_image_properties(self):
        self.cloud.images['img-1'] = {'id': 'img-1', 'name': 'ubuntu',
                                      'a': 'old', 'b': 'old'}
        plan = plan_mod.Plan('Changing image', [plan_mod.update_image(
            self.cloud.images['img-1'], {'a': 'ours', 'b': None})])

        def theirs():
            self.cloud.images['img-1']['a'] = 'theirs'

        error = self.failing_after(plan, theirs)
        self.assertEqual({'id': 'img-1', 'name': 'ubuntu', 'a': 'theirs',
                          'b': 'old'}, self.cloud.images['img-1'])
        self.assertIn('a of image ubuntu (now theirs', str(error))

    def test_unchanged_keys_are_restored(self):
        agg = self.client.compute.create_aggregate('a100')
        self.client.compute.set_aggregate_metadata(agg, {'k': 'old'})
        before = self.cloud.state()
        plan = plan_mod.Plan('Changing pool a100', [plan_mod.set_metadata(
            'a100', {'k': 'old'}, {'k': 'ours'})])
        error = self.failing_after(plan, lambda: None)
        self.assertEqual(before['aggregates'],
                         self.cloud.state()['aggregates'])
        self.assertIn('the cloud is as it was', str(error))
