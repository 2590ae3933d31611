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

"""Flavors addressed by ID, and objects other writers made (issue 21).

Defect 1: Nova's ``GET /flavors/<x>`` takes ``x`` as an ID, so a GPU
flavor named like a plain flavor's ID must never reach the plain one.
Defect 8: the journal adopts only what it made, and an undo leaves a value
another writer changed since.

Pools here have no hosts (no Placement or scheduling is involved). The
failures that must reach Nova are injected below the client
(``faults.FaultInjector``) or made by a concurrent writer in the
``on_step`` hook of ``journal.apply``; every proof is read back with plain
``openstack`` or openstacksdk.
"""

import random

import openstack

from gpuclient.ops import flavor_ops
from gpuclient.ops import journal
from gpuclient.ops import pool_ops
from gpuclient.rules import pools
from gpuclient.tests.functional import faults
from gpuclient.tests.functional import test_pool

SIZES = {'vcpus': 1, 'ram': 512, 'disk': 1}
PLAIN_SPECS = {'hw:cpu_policy': 'shared', 'owner': 'someone-else'}


class TrustTestCase(test_pool.PoolTestCase):

    def setUp(self):
        super().setUp()
        # set up in-process (the CLI is what the tests themselves run)
        self.conn = openstack.connect(cloud=self.cloud)
        self.pool = self.unique_name('pool')
        admin = faults.make_client()
        pool_ops.create(admin, pools.build_spec(
            self.pool, 'passthrough', alias='h100', pci_id='10de:2331'), [])
        self.addCleanup(pool_ops.delete, admin, self.pool, force=True)

    def plain_flavor(self):
        """A plain flavor whose ID looks like a name: digits, unique."""
        flavor_id = str(random.randint(10 ** 9, 10 ** 10))
        args = ['flavor', 'create', '--id', flavor_id, '--vcpus', '1',
                '--ram', '512', '--disk', '1']
        for key, value in PLAIN_SPECS.items():
            args += ['--property', '%s=%s' % (key, value)]
        flavor = self.openstack(*args, self.unique_name('plain'))
        self.addCleanup(self.openstack_raw, 'flavor', 'delete', flavor_id)
        self.assertEqual(flavor_id, flavor['id'])
        return flavor

    def assert_untouched(self, plain):
        """The plain flavor, read with plain OSC: same ID, name, specs."""
        now = self.openstack('flavor', 'show', plain['id'])
        self.assertEqual((plain['id'], plain['name'], PLAIN_SPECS),
                         (now['id'], now['name'], now['properties']))

    def named(self, name):
        """IDs of the flavors (public or private) named NAME (SDK)."""
        return [f.id for f in self.conn.compute.flavors(is_public=None)
                if f.name == name]

    def delete_named(self, name):
        for flavor_id in self.named(name):
            self.conn.compute.delete_flavor(flavor_id)


class TestFlavorNamedLikeAnID(TrustTestCase):

    def test_create_undo_and_isolate_act_on_the_new_flavor(self):
        plain = self.plain_flavor()
        self.addCleanup(self.delete_named, plain['id'])
        # in-process through the client layer: the extra-spec write fails
        # (then the create itself is refused), both reaching the real Nova
        client = faults.make_client()
        injector = self.useFixture(faults.FaultInjector(client))
        for k, kind, done in ((2, '500', 'Everything it had done was '
                                         'undone (1 step(s))'),
                              (1, '409', 'Nothing had been changed')):
            injector.arm(k, kind)
            error = self.assertRaises(
                journal.ApplyError, flavor_ops.create, client, plain['id'],
                self.pool, **SIZES)
            self.assertIn(done, str(error))
            self.assertEqual([], self.named(plain['id']), kind)
            self.assert_untouched(plain)
        injector.disarm()
        # the CLI: create shows the new flavor, and isolating the pool
        # puts its trait on it, not on the flavor whose ID is its name
        shown = self.openstack('gpu', 'flavor', 'create', plain['id'],
                               '--pool', self.pool, '--vcpus', '1', '--ram',
                               '512', '--disk', '1')
        (new_id,) = self.named(plain['id'])
        self.assertNotEqual(plain['id'], new_id)
        self.assertEqual((new_id, plain['id']), (shown['id'], shown['name']))
        self.openstack('gpu', 'pool', 'set', self.pool, '--isolate',
                       '--update-dependents', parse=False)
        trait = pools.pool_trait(self.pool)
        new = self.openstack('flavor', 'show', new_id)
        self.assertEqual('required', new['properties'].get('trait:' + trait))
        self.assert_untouched(plain)


class TestOtherWriters(TrustTestCase):

    def test_not_adopted_and_not_overwritten(self):
        conn = self.conn
        name = self.unique_name('pool')
        made = []

        def other_writer(index, step):
            if step.op == 'aggregate.create':
                agg = conn.compute.create_aggregate(name=name)
                made.append(agg)
                self.addCleanup(conn.compute.delete_aggregate, agg,
                                ignore_missing=True)
                conn.compute.set_aggregate_metadata(agg, {'owner': 'other'})

        spec = pools.build_spec(name, 'passthrough', alias='h100',
                                pci_id='10de:2331')
        error = self.assertRaises(
            journal.ApplyError, pool_ops.create, faults.make_client(), spec,
            [], on_step=other_writer)
        self.assertEqual(1, len(made))
        self.assertIn('Host aggregate %s was made by another writer' % name,
                      str(error))
        self.assertIn('Nothing had been changed', str(error))
        agg = self.aggregate(name)
        self.assertEqual((str(made[0].id), {'owner': 'other'}),
                         (str(agg['id']), agg['properties']))

        # pool set --isolate --update-dependents: the trait, the flavor's
        # spec, then the aggregate, which fails; meanwhile another writer
        # set the flavor's trait key to its own value: the undo keeps it
        client = faults.make_client()
        flavor, _projects, _warnings, _plan = flavor_ops.create(
            client, self.unique_name('flavor'), self.pool, **SIZES)
        self.addCleanup(self.delete_named, flavor['name'])
        key = 'trait:' + pools.pool_trait(self.pool)
        injector = self.useFixture(faults.FaultInjector(client))

        def spec_writer(index, step):
            if step.op == 'aggregate.metadata':
                conn.compute.create_flavor_extra_specs(
                    flavor['id'], {key: 'forbidden'})
                injector.arm(1, '500')

        error = self.assertRaises(
            journal.ApplyError, pool_ops.set_isolation, client, self.pool,
            True, update_dependents=True, on_step=spec_writer)
        self.assertIn('Left as another writer changed them after this '
                      'command had: %s of flavor %s (now forbidden, set by '
                      'another writer).' % (key, flavor['name']), str(error))
        self.assertEqual('forbidden', self.openstack(
            'flavor', 'show', flavor['id'])['properties'][key])
        # the rest was undone: no isolation on the aggregate
        self.assertNotIn(key, self.aggregate(self.pool)['properties'])
