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

"""The functional tests' host leases (gpuclient/tests/functional/leases.py):
what counts as a leak, from two plain readings, and the lock that keeps a
host to one test at a time (two open files of one lock conflict as two
processes' do)."""

import copy
import fcntl
import json
import os
import threading
import time

import fixtures
import testtools

from gpuclient.tests.functional import leases

HOST = 'fault-vgpu-1'
ROOT, CHILD = 'rp-root', 'rp-child'


def clean():
    return {
        'servers': [],
        'usages': {ROOT: {'VCPU': 0}, CHILD: {'VGPU': 0}},
        'pool_aggregates': [],
        'aggregates': ['freepool'],
        'traits': {ROOT: ['CUSTOM_OPERATOR'], CHILD: []},
        'service': ['disabled', 'testcloud: spare host'],
        'devices': [],
    }


def changed(**fields):
    reading = copy.deepcopy(clean())
    reading.update(fields)
    return reading


class TestFindings(testtools.TestCase):

    def test_clean_is_clean(self):
        self.assertEqual([], leases.findings(HOST, None, clean()))
        self.assertEqual([], leases.findings(HOST, clean(), clean()))

    def test_each_leak_is_named(self):
        cases = [
            (changed(servers=['s-1']), 'servers on fault-vgpu-1 in Nova: '
             's-1'),
            (changed(usages={ROOT: {'VCPU': 1}, CHILD: {'VGPU': 0}}),
             'allocations on fault-vgpu-1 in Placement: {"rp-root": '
             '{"VCPU": 1}}'),
            (changed(pool_aggregates=['gpuclient-ft-x'],
                     aggregates=['freepool', 'gpuclient-ft-x']),
             'fault-vgpu-1 in gpuclient pools: gpuclient-ft-x'),
            (changed(traits={ROOT: ['CUSTOM_GPU_POOL_X', 'CUSTOM_OPERATOR'],
                             CHILD: []}),
             'pool traits on fault-vgpu-1: {"rp-root": '
             '["CUSTOM_GPU_POOL_X"]}'),
            (changed(devices=[{'hostname': HOST, 'owner': 't39dev-1'}]),
             'DCGM stand-in devices of fault-vgpu-1 left by: t39dev-1'),
        ]
        for reading, sentence in cases:
            # a leak on its own, and when the lease is taken
            self.assertIn(sentence, leases.findings(HOST, clean(), reading))
            self.assertIn(sentence, leases.findings(HOST, None, reading))

    def test_changes_since_the_lease_are_leaks(self):
        cases = [
            (changed(aggregates=['freepool', 'by-hand']),
             'fault-vgpu-1 left in aggregates: by-hand'),
            (changed(traits={ROOT: [], CHILD: []}),
             'CUSTOM traits of fault-vgpu-1 changed'),
            (changed(service=['enabled', None]),
             'compute service of fault-vgpu-1 is enabled, leased '
             'disabled/testcloud: spare host'),
        ]
        for reading, sentence in cases:
            found = leases.findings(HOST, clean(), reading)
            self.assertEqual(1, len(found), found)
            self.assertTrue(found[0].startswith(sentence), found)
            # taking a lease judges the reading itself, not a change
            self.assertEqual([], leases.findings(HOST, None, reading))

    def test_a_shared_cloud_counts_only_what_the_test_added(self):
        theirs = changed(servers=['theirs'],
                         usages={ROOT: {'VCPU': 2}, CHILD: {'VGPU': 1}},
                         pool_aggregates=['their-pool'],
                         traits={ROOT: ['CUSTOM_GPU_POOL_THEIRS'],
                                 CHILD: []})
        self.assertEqual([], leases.findings(HOST, None, theirs,
                                             shared=True))
        self.assertEqual([], leases.findings(HOST, theirs, theirs,
                                             shared=True))
        mine = copy.deepcopy(theirs)
        mine['servers'].append('mine')
        mine['usages'][CHILD]['VGPU'] = 2
        found = leases.findings(HOST, theirs, mine, shared=True)
        self.assertEqual(2, len(found), found)
        self.assertIn('servers on fault-vgpu-1 in Nova: mine', found)


class _Test:
    """What HostLease asks of a test case: its id and a bounded wait."""

    def __init__(self):
        self.waits = []

    def id(self):
        return 'test_x'

    def wait_for(self, what, read, until, timeout=None):
        # one reading per wait: the readings given are the authority's
        # last word
        self.waits.append(what)
        return read()


class TestLock(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.useFixture(fixtures.MonkeyPatch(
            'gpuclient.tests.functional.leases.LOCK_DIR', self.dir))

    def lease(self, readings, timeout=5):
        test = _Test()
        readings = iter(readings)
        self.useFixture(fixtures.MonkeyPatch(
            'gpuclient.tests.functional.leases.read',
            lambda conn, hosts, path: {HOST: next(readings)}))
        return test, leases.HostLease(test, HOST, conn=None,
                                      timeout=timeout)

    def test_held_then_given_back_clean(self):
        test, lease = self.lease([clean(), clean()])
        lease.setUp()
        self.assertFalse(leases.free(HOST))
        lease.cleanUp()
        self.assertTrue(leases.free(HOST))
        with open(os.path.join(self.dir, HOST + '.lease')) as note:
            record = json.load(note)
        self.assertEqual({'note': 'given back by test_x',
                          'reading': clean()}, record)
        # the next lease starts from that reading: one reading, at the
        # give-back, which finds what it changed
        _test, lease = self.lease([changed(servers=['s-2'])])
        lease.setUp()
        error = self.assertRaises(AssertionError, lease.cleanUp)
        self.assertIn('servers on fault-vgpu-1 in Nova: s-2', str(error))

    def test_a_leak_fails_the_leaker_and_is_on_record(self):
        _test, lease = self.lease([clean(), changed(servers=['s-9'])])
        lease.setUp()
        error = self.assertRaises(AssertionError, lease.cleanUp)
        self.assertIn('test_x leaked on fault-vgpu-1: servers on '
                      'fault-vgpu-1 in Nova: s-9', str(error))
        # the lock is free again, and the next lease names the leaker
        self.assertTrue(leases.free(HOST))
        _test, lease = self.lease([changed(servers=['s-9'])])
        error = self.assertRaises(testtools.MultipleExceptions, lease.setUp)
        self.assertIn('left unclean by test_x', str(error))

    def test_waits_bounded_for_another_holder(self):
        with open(os.path.join(self.dir, HOST + '.lease'), 'a+') as other:
            fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
            other.write('held by test_other')
            other.flush()
            self.assertFalse(leases.free(HOST))
            _test, lease = self.lease([clean()], timeout=0)
            error = self.assertRaises(testtools.MultipleExceptions,
                                      lease.setUp)
            self.assertIn('not given back in 0 s (held by test_other)',
                          str(error))


class TestNamedLock(testtools.TestCase):
    """The 'unsteered' lock: shared holders one after another do not
    starve an exclusive taker."""

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.MonkeyPatch(
            'gpuclient.tests.functional.leases.LOCK_DIR',
            self.useFixture(fixtures.TempDir()).path))

    def test_an_exclusive_taker_goes_before_later_shared_ones(self):
        first = leases.NamedLock('l', shared=True)
        first.setUp()
        taken = threading.Event()
        writer = leases.NamedLock('l', timeout=10)

        def take():
            writer.setUp()
            taken.set()

        thread = threading.Thread(target=take)
        thread.start()
        # the writer holds the gate, waiting for the first reader: a later
        # reader waits behind it
        deadline = time.monotonic() + 5
        while not os.path.exists(os.path.join(leases.LOCK_DIR, 'l.gate')):
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.01)
        time.sleep(0.3)
        self.assertFalse(taken.is_set())
        later = leases.NamedLock('l', shared=True, timeout=0.3)
        error = self.assertRaises(testtools.MultipleExceptions, later.setUp)
        self.assertIn('lock l not free', str(error))
        first.cleanUp()
        thread.join(5)
        self.assertTrue(taken.is_set())
        self.assertGreater(writer.waited, 0.2)
        writer.cleanUp()
        # and once it is done, readers share the lock again
        with leases.NamedLock('l', shared=True, timeout=1):
            with leases.NamedLock('l', shared=True, timeout=1) as other:
                self.assertLess(other.waited, 1)


class TestLockDir(testtools.TestCase):

    def test_beside_the_test_clouds_state_else_per_cloud(self):
        state = '/var/tmp/gpuclient-testcloud/state'
        self.assertEqual(state + '/leases', leases._lock_dir(
            {'OS_CLIENT_CONFIG_FILE': state + '/clouds.yaml'}))
        self.assertTrue(leases._lock_dir({'OS_CLOUD': 'devstack'}).endswith(
            'gpuclient-ft-leases-devstack'))
        self.assertEqual('/x', leases._lock_dir(
            {'GPUCLIENT_FT_LEASE_DIR': '/x', 'OS_CLIENT_CONFIG_FILE':
             state + '/clouds.yaml'}))
