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

"""Hosts leased per test (issue 52).

``FunctionalTestCase.host_lease(kind)`` hands a test one host of a kind
for itself: an exclusive lock per host (``fcntl.flock`` on a file in
LOCK_DIR, so two test processes never hold one host at once), taken only
once the host reads clean, and given back only once it reads clean again.
Clean is what the services say, read back (bounded, then asserted once):

* no server in Nova's server list of the host (all projects);
* no allocation on any provider of its tree (Placement's usages);
* no aggregate that is a gpuclient pool holds it, and it is in no
  aggregate it was not in when leased;
* no pool trait (``CUSTOM_GPU_POOL_*``) on its providers, and their other
  ``CUSTOM_*`` traits as when leased;
* its compute service enabled or disabled as when leased (a spare stays
  disabled, with its reason);
* no device of the host in the DCGM stand-in's file
  (``GPUCLIENT_DCGM_DEVICES``).

A lease that finds the host unclean when given back fails the test that
held it (a leak is the leaker's failure) and records it in the lock file,
so the next test to lease the host names that test in its own failure.

:func:`findings` is pure (two readings in, what differs out) and is
unit-tested in gpuclient/tests/unit/test_functional_leases.py.
"""

import errno
import fcntl
import json
import os
import tempfile
import time

import fixtures


def _lock_dir(environ):
    """Where the locks and their records live: beside the test cloud's
    clouds.yaml (its state, wiped when the cloud is brought up again, so
    no record outlives the cloud it describes), else a folder of the
    cloud's name in the temporary directory."""
    if environ.get('GPUCLIENT_FT_LEASE_DIR'):
        return environ['GPUCLIENT_FT_LEASE_DIR']
    config = environ.get('OS_CLIENT_CONFIG_FILE') or ''
    if 'gpuclient-testcloud' in config:
        return os.path.join(os.path.dirname(config), 'leases')
    return os.path.join(tempfile.gettempdir(), 'gpuclient-ft-leases-%s'
                        % environ.get('OS_CLOUD', 'default'))


LOCK_DIR = _lock_dir(os.environ)
# how long a test waits for another process to give a host back
ACQUIRE_TIMEOUT = float(os.environ.get('GPUCLIENT_FT_LEASE_TIMEOUT', 900))
POOL_TRAIT_PREFIX = 'CUSTOM_GPU_POOL_'
# Placement microversions of the reads (in_tree: 1.14)
TREE_VERSION = '1.14'
TRAITS_VERSION = '1.6'


def findings(host, leased, now, shared=False):
    """What is not clean on HOST in reading NOW, against reading LEASED
    (None: the reading the lease is about to be taken on, which must be
    clean in itself). A reading (:func:`read`) is a dict of ``servers``
    (ids), ``usages`` {provider name: {class: used}}, ``pool_aggregates``
    (names), ``aggregates`` (names), ``traits`` {provider: [CUSTOM_*]},
    ``service``
    (enabled/disabled, reason) and ``devices`` (DCGM entries of the host).
    SHARED (a cloud that is not the project's test cloud, where others'
    servers and pools may be on the host): servers, allocations, pools and
    pool traits count only where they differ from LEASED. Returns a sorted
    list of sentences."""
    def new(field):
        if shared and leased is not None:
            return sorted(set(now[field]) - set(leased[field]))
        return [] if shared else sorted(now[field])

    found = []
    servers = new('servers')
    if servers:
        found.append('servers on %s in Nova: %s' % (host, ', '.join(servers)))
    used = {rp: {rc: n for rc, n in usages.items() if n}
            for rp, usages in now['usages'].items()}
    used = {rp: usages for rp, usages in used.items() if usages}
    if shared:
        changed = leased is not None and now['usages'] != leased['usages']
        used = used if changed else {}
    if used:
        found.append('allocations on %s in Placement: %s' % (
            host, json.dumps(used, sort_keys=True)))
    pools_ = new('pool_aggregates')
    if pools_:
        found.append('%s in gpuclient pools: %s' % (host, ', '.join(pools_)))
    pool_traits = {rp: [t for t in traits if t.startswith(POOL_TRAIT_PREFIX)]
                   for rp, traits in now['traits'].items()}
    pool_traits = {rp: t for rp, t in pool_traits.items() if t}
    if pool_traits and not shared:
        found.append('pool traits on %s: %s' % (
            host, json.dumps(pool_traits, sort_keys=True)))
    if now['devices']:
        found.append('DCGM stand-in devices of %s left by: %s' % (
            host, ', '.join(sorted({str(d.get('owner'))
                                    for d in now['devices']}))))
    if leased is not None:
        new = sorted(set(now['aggregates']) - set(leased['aggregates']))
        if new:
            found.append('%s left in aggregates: %s' % (host, ', '.join(new)))
        for field, what in (('traits', 'CUSTOM traits'),):
            if now[field] != leased[field]:
                found.append('%s of %s changed: %s, leased with %s' % (
                    what, host, json.dumps(now[field], sort_keys=True),
                    json.dumps(leased[field], sort_keys=True)))
        if now['service'] != leased['service']:
            found.append('compute service of %s is %s, leased %s' % (
                host, '/'.join(filter(None, now['service'])),
                '/'.join(filter(None, leased['service']))))
    return sorted(found)


def _devices(path, host, nodename):
    try:
        with open(path) as src:
            document = json.load(src)
    except (OSError, ValueError):
        return []
    return [d for d in document.get('devices') or ()
            if d.get('hostname') in (host, nodename)]


def read(conn, hosts, dcgm_path=None):
    """One reading of each of HOSTS (service hosts) from Nova and
    Placement through openstacksdk connection CONN, and of the DCGM
    stand-in's file: {host: reading}. Nova's lists are read once for all
    of them; Placement's usages and traits once per provider of their
    trees."""
    from gpuclient.rules import pools

    compute, placement = conn.compute, conn.placement
    nodes = {}
    for hypervisor in compute.hypervisors(details=True):
        host = (hypervisor.service_details or {}).get('host')
        if host in hosts:
            nodes.setdefault(host, []).append(hypervisor)
    aggregates = list(compute.aggregates())
    services = {s.host: s for s in compute.services(binary='nova-compute')}
    servers = {}
    for server in compute.servers(all_projects=True, details=True):
        servers.setdefault(server.compute_host, []).append(server.id)
    readings = {}
    for host in hosts:
        if len(nodes.get(host, ())) != 1:
            raise AssertionError('Nova has %d hypervisors of host %s'
                                 % (len(nodes.get(host, ())), host))
        root, nodename = nodes[host][0].id, nodes[host][0].name
        tree = placement.get('/resource_providers',
                             params={'in_tree': root},
                             microversion=TREE_VERSION).json()
        # by provider name: a compute restarted with another
        # configuration (test_profile's re-cut) makes new providers of
        # the same devices
        usages, traits = {}, {}
        for rp in tree['resource_providers']:
            usages[rp['name']] = placement.get(
                '/resource_providers/%s/usages' % rp['uuid'],
                microversion=TREE_VERSION).json()['usages']
            traits[rp['name']] = sorted(t for t in placement.get(
                '/resource_providers/%s/traits' % rp['uuid'],
                microversion=TRAITS_VERSION).json()['traits']
                if t.startswith('CUSTOM_'))
        held = [a for a in aggregates if host in (a.hosts or ())]
        service = services.get(host)
        readings[host] = {
            'servers': sorted(servers.get(host, ())),
            'usages': usages,
            'pool_aggregates': sorted(a.name for a in held
                                      if pools.is_pool(a)),
            'aggregates': sorted(a.name for a in held),
            'traits': traits,
            'service': ([service.status, service.disabled_reason]
                        if service else []),
            'devices': (_devices(dcgm_path, host, nodename) if dcgm_path
                        else []),
        }
    return readings


def _lock_path(host):
    return os.path.join(LOCK_DIR, '%s.lease' % host)


class NamedLock(fixtures.Fixture):
    """The lock NAME in LOCK_DIR, SHARED or exclusive, for a fixture's
    life; waits at most TIMEOUT seconds for it (then fails naming the
    wait). An exclusive taker is not starved by shared takers that follow
    one another: it first holds the lock's gate, which every shared taker
    passes through, so those that come after it wait until it has had its
    turn. ``waited``: the seconds it took to get the lock."""

    def __init__(self, name, shared=False, timeout=ACQUIRE_TIMEOUT):
        super().__init__()
        self.name, self.shared, self.timeout = name, shared, timeout
        self.waited = 0.0

    def _open(self, suffix):
        os.makedirs(LOCK_DIR, exist_ok=True)
        handle = open(os.path.join(LOCK_DIR, self.name + suffix), 'a+')
        self.addCleanup(handle.close)
        return handle

    def _take(self, handle, mode, deadline):
        while True:
            try:
                fcntl.flock(handle, mode | fcntl.LOCK_NB)
                return
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES):
                    raise
            if time.monotonic() > deadline:
                raise AssertionError('lock %s not free in %.0f s'
                                     % (self.name, self.timeout))
            time.sleep(0.1)

    def _setUp(self):
        started = time.monotonic()
        deadline = started + self.timeout
        gate, lock = self._open('.gate'), self._open('.lock')
        self._take(gate, fcntl.LOCK_EX, deadline)
        try:
            self._take(lock, fcntl.LOCK_SH if self.shared else fcntl.LOCK_EX,
                       deadline)
        finally:
            fcntl.flock(gate, fcntl.LOCK_UN)
        self.waited = time.monotonic() - started


def free(host):
    """Whether no test process holds HOST's lease now (a hint for the
    choice among hosts of a kind: HostLease takes the lock itself)."""
    os.makedirs(LOCK_DIR, exist_ok=True)
    with open(_lock_path(host), 'a+') as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES):
                raise
            return False
        fcntl.flock(handle, fcntl.LOCK_UN)
        return True


class HostLease(fixtures.Fixture):
    """HOSTS (a host or a list) for one test alone (the module
    docstring), locked in name order (two tests leasing overlapping sets
    never wait on each other in a circle) and read in one go: TEST is the
    test case (its id names the holder; its ``wait_for`` bounds the
    waits), CONN an openstacksdk connection to the cloud."""

    def __init__(self, test, hosts, conn, dcgm_path=None,
                 timeout=ACQUIRE_TIMEOUT, settle=None, shared=False):
        super().__init__()
        self.hosts = sorted({hosts} if isinstance(hosts, str)
                            else set(hosts))
        self.shared = shared
        self.test, self.conn = test, conn
        self.dcgm_path = dcgm_path
        self.timeout = timeout
        self.settle = settle
        self.leased = None
        self.handles = {}

    def _lock(self, host):
        os.makedirs(LOCK_DIR, exist_ok=True)
        handle = open(_lock_path(host), 'a+')
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return handle
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES):
                    raise
            if time.monotonic() > deadline:
                holder = self._record(handle)['note']
                handle.close()
                raise AssertionError('host %s not given back in %.0f s '
                                     '(%s)' % (host, self.timeout,
                                               holder or 'no holder on '
                                               'record'))
            time.sleep(0.5)

    def _note(self, host, text, reading=None):
        """Record TEXT (who holds the host, who gave it back and how) and
        the READING it was given back clean with in the host's lock
        file."""
        handle = self.handles[host]
        handle.seek(0)
        handle.truncate()
        json.dump({'note': text, 'reading': reading}, handle)
        handle.flush()

    @staticmethod
    def _record(handle):
        handle.seek(0)
        text = handle.read()
        try:
            record = json.loads(text)
        except ValueError:
            return {'note': text.strip(), 'reading': None}
        return record if isinstance(record, dict) else {
            'note': text.strip(), 'reading': None}

    def _findings(self, leased, now):
        return {host: findings(host, leased and leased[host], now[host],
                               self.shared)
                for host in self.hosts}

    def _clean(self, leased):
        """Read until clean (bounded by the test's wait), then the last
        reading and what is not clean in it, by host."""
        kwargs = {} if self.settle is None else {'timeout': self.settle}
        reading = self.test.wait_for(
            'hosts %s clean' % ', '.join(self.hosts),
            lambda: read(self.conn, self.hosts, self.dcgm_path),
            lambda now: not any(self._findings(leased, now).values()),
            **kwargs)
        return reading, self._findings(leased, reading)

    def _setUp(self):
        for host in self.hosts:
            self.handles[host] = self._lock(host)
            self.addCleanup(self.handles[host].close)
        records = {host: self._record(handle)
                   for host, handle in self.handles.items()}
        if all(r['note'].startswith('given back by') and r['reading']
               for r in records.values()):
            # each was read clean when it was given back (and no one
            # leases a host but through its lock): that reading is the
            # baseline, no second reading of the same state
            reading = {host: r['reading'] for host, r in records.items()}
        else:
            reading, left = self._clean(None)
            unclean = ['host %s is not clean to lease (%s): %s' % (
                host, records[host]['note'] or 'no holder on record',
                '; '.join(found)) for host, found in left.items() if found]
            if unclean:
                raise AssertionError('; '.join(unclean))
        self.leased = reading
        for host in self.hosts:
            self._note(host, 'held by %s' % self.test.id())
        self.addCleanup(self._give_back)

    def _give_back(self):
        reading, left = self._clean(self.leased)
        for host in self.hosts:
            if left[host]:
                self._note(host, 'left unclean by %s: %s' % (
                    self.test.id(), '; '.join(left[host])))
            else:
                self._note(host, 'given back by %s' % self.test.id(),
                           reading[host])
        leaks = ['%s: %s' % (host, '; '.join(found))
                 for host, found in left.items() if found]
        if leaks:
            raise AssertionError('%s leaked on %s' % (self.test.id(),
                                                      ' | '.join(leaks)))
