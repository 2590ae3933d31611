"""Base class for functional tests: the real ``openstack`` CLI, real cloud.

The cloud is the one named by ``OS_CLOUD`` (tools/run-functional brings up
the project's test cloud and exports it; a devstack gate sets its own).
Host names come from GPUCLIENT_PT_HOST, GPUCLIENT_VGPU_HOST,
GPUCLIENT_MIG_HOST, GPUCLIENT_BM_HOST and GPUCLIENT_PLAIN_HOST when set,
else are the test cloud's on the test cloud, else are discovered from
Placement (``hosts.py``); a test that needs a kind the cloud lacks skips
with a reason (``needs``). GPUCLIENT_PT_HOST2 and GPUCLIENT_VGPU_HOST2 name
the second hosts drain moves servers to.
"""

import contextlib
import functools
import io
import json
import logging
import os
import subprocess
import sys
import time
import uuid
import warnings

import testtools
from testtools import content

from gpuclient.tests.functional import hosts as _hosts
from gpuclient.tests.functional import waits

ADMIN_CLOUD = os.environ.get('OS_CLOUD', 'gpuclient-admin')
MEMBER_CLOUD = os.environ.get('GPUCLIENT_MEMBER_CLOUD', 'gpuclient-member')
# GPUCLIENT_<KIND>_HOST, else the test cloud's names, else discovered from
# Placement (gpuclient/tests/functional/hosts.py); None: the cloud has no
# such host and the tests that need one skip (FunctionalTestCase.need_host)
HOSTS = _hosts.resolve(ADMIN_CLOUD)
PT_HOST = HOSTS['passthrough']
VGPU_HOST = HOSTS['vgpu']
MIG_HOST = HOSTS['mig']
BM_HOST = HOSTS['baremetal']
PLAIN_HOST = HOSTS['plain']
# second hosts of each kind: where gpu host drain moves servers to
PT_HOST2 = os.environ.get('GPUCLIENT_PT_HOST2', 'gpu-pt-2')
VGPU_HOST2 = os.environ.get('GPUCLIENT_VGPU_HOST2', 'gpu-vgpu-2')
# the VF-backed vGPU host (a spare on the test cloud: tools/cloud/hosts.py
# gpu-vf-1) and what its nova.conf says: the VFs' vGPU type and id, and
# the type-VF alias of the shared nova.conf (GPUCLIENT_VF_* on another
# cloud)
VF_HOST = os.environ.get('GPUCLIENT_VF_HOST', 'gpu-vf-1')
VF_TYPE = os.environ.get('GPUCLIENT_VF_TYPE', 'L40S-24Q')
VF_ALIAS = os.environ.get('GPUCLIENT_VF_ALIAS', 'l40s-24q')
VF_PCI_ID = os.environ.get('GPUCLIENT_VF_PCI_ID', '10de:26b9')
# The fault matrices' hosts (test_faults, test_hung). The test cloud has
# hosts for them alone (tools/cloud/hosts.py: spares, kept disabled, which
# the matrices never boot on), so tools/run-functional runs those tests in
# a second stream next to the others; on another cloud they default to the
# hosts above (GPUCLIENT_FAULT_*_HOST name others) and everything runs in
# one stream.
_FAULT_HOSTS = _hosts.on_testcloud()
FAULT_VGPU_HOST = os.environ.get(
    'GPUCLIENT_FAULT_VGPU_HOST', 'fault-vgpu-1' if _FAULT_HOSTS
    else VGPU_HOST)
FAULT_MIG_HOST = os.environ.get(
    'GPUCLIENT_FAULT_MIG_HOST', 'fault-mig-1' if _FAULT_HOSTS
    else MIG_HOST)
# Lanes (issue 52): the hosts a test class runs on (FunctionalTestCase.lane;
# a test reads them as self.pt_host, self.pt_host2, self.vgpu_host,
# self.vgpu_host2, self.plain_host). Lane 'a' is the hosts above. Lane 'b'
# is their twins on the test cloud (tools/cloud/hosts.py, spares), for the
# tests tools/run-functional runs in its second stream beside the fault
# matrices: a lane-B test leases every lane-B host (read clean before and
# after: host_lease) and enables the first three for its run only. On
# another cloud lane 'b' is lane 'a' (one stream runs everything).
LANE_KINDS = ('passthrough', 'passthrough2', 'vgpu', 'vgpu2', 'plain')
LANES = {'a': dict(zip(LANE_KINDS, (PT_HOST, PT_HOST2, VGPU_HOST,
                                    VGPU_HOST2, PLAIN_HOST), strict=True))}
LANES['b'] = (dict(zip(LANE_KINDS, ('gpu-pt-3', 'gpu-pt-4', 'gpu-vgpu-3',
                                    'gpu-vgpu-4', 'plain-2'), strict=True))
              if _FAULT_HOSTS else dict(LANES['a']))
# the hosts the second stream writes to while a lane-A test runs (none
# where one stream runs everything): a lane-A test's cloud-wide read
# leaves them out
SECOND_STREAM_HOSTS = frozenset(
    set(LANES['b'].values()) | {FAULT_VGPU_HOST, FAULT_MIG_HOST,
                                'fault-vgpu-2', 'fault-mig-2'}
    if _FAULT_HOSTS else ())
# the lane-B hosts a lane-B test enables (the second ones stay spares until
# a drain's destination is enabled, as in lane A)
LANE_ENABLED = ('passthrough', 'vgpu', 'plain')
# Nova may place a server the suite does not steer (a flavor that is not a
# pool's, no --host) on any enabled host, a lane-B host
# included: such a boot, and a lane-A drain (whose moves Nova places),
# hold this lock exclusively; a lane-B test holds it shared while its
# hosts are enabled, and may not make such a boot
UNSTEERED_LOCK = 'unsteered'
# what lane B's hosts offer (tools/cloud/hosts.py): a flavor that asks for
# another class (bare metal, the one-time-use or VF host's) or another PCI
# alias than h100 lands on no lane-B host, steered or not
LANE_B_CLASSES = frozenset({'VCPU', 'MEMORY_MB', 'DISK_GB', 'VGPU',
                            'CUSTOM_PCI_10DE_2331'})
LANE_B_ALIASES = frozenset({'h100'})
# the hosts a test leases by kind (host_lease): on the test cloud each is
# a spare that no other test uses (tools/cloud/hosts.py); elsewhere the
# GPUCLIENT_* hosts above
LEASE_KINDS = {
    'fault-vgpu': [FAULT_VGPU_HOST] + (['fault-vgpu-2'] if _FAULT_HOSTS
                                       else []),
    'fault-mig': [FAULT_MIG_HOST] + (['fault-mig-2'] if _FAULT_HOSTS
                                     else []),
    'vgpu-vf': [VF_HOST],
    'passthrough-otu': [os.environ.get('GPUCLIENT_OTU_HOST', 'gpu-otu-1')],
    'mig-recut': [os.environ.get('GPUCLIENT_RECUT_HOST', 'recut-mig-1')],
}
IMAGE = os.environ.get('GPUCLIENT_IMAGE', 'gpuclient-tiny')
# servers are created with this compute API version (--nic none: 2.37+)
COMPUTE_API = '2.74'
# provider traits need Placement 1.6
PLACEMENT_TRAITS = ('--os-placement-api-version', '1.6')
OPENSTACK = os.environ.get('GPUCLIENT_OPENSTACK', 'openstack')
# ``openstack gpu ...`` always runs as the real executable. The other
# commands (the proofs: what Nova, Placement, Glance and Keystone hold, and
# the setup) run the same OSC shell in this process, which saves the
# interpreter start of every call; GPUCLIENT_FT_SUBPROCESS=1 runs them as
# processes too.
ALL_SUBPROCESS = os.environ.get('GPUCLIENT_FT_SUBPROCESS') == '1'
# a file to append one JSON line per "openstack" call to (see openstack_raw)
CALL_LOG = os.environ.get('GPUCLIENT_FT_CALL_LOG')
# how often a --wait of a server create/delete asks Nova (OSC waits 5 s)
POLL = 0.5
# the trait Nova keeps on the root provider of a disabled compute service
# (its scheduler asks Placement for hosts without it)
DISABLED_TRAIT = 'COMPUTE_STATUS_DISABLED'
# how long a cleanup waits for Nova's and Placement's asynchronous
# effects (a server gone from its host's list and its allocations, a pool's
# aggregate and trait gone from every provider) before it fails the test
SETTLE_TIMEOUT = 120


# global options that take a value (to find the command word)
_VALUED_GLOBALS = ('--os-cloud', '--os-compute-api-version',
                   '--os-placement-api-version', '--os-image-api-version',
                   '--os-identity-api-version', '--os-project-name',
                   '--os-project-domain-name')


def _command_word(argv):
    """The first word of the command in ``argv`` (after global options)."""
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg in _VALUED_GLOBALS:
            skip = True
        elif not arg.startswith('-'):
            return arg
    return None


def _run_shell(argv):
    """Run OSC's shell on ARGV in this process: (rc, stdout, stderr)."""
    from openstackclient import shell
    from openstackclient.common import clientmanager as osc_clientmanager
    from osc_lib import clientmanager

    # OSC caches each service's client on the ClientManager *class*: in one
    # process a second cloud would reuse the first cloud's clients
    for cls in osc_clientmanager.ClientManager.__mro__:
        for attr in vars(cls).values():
            if isinstance(attr, clientmanager.ClientCache):
                attr._handle = None
    out, err = io.StringIO(), io.StringIO()
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    levels = {name: logger.level
              for name, logger in logging.root.manager.loggerDict.items()
              if isinstance(logger, logging.Logger)}
    argv_before = sys.argv
    # what the command sees of its own command line (the re-run hint of
    # a failed write quotes it) is what a process would have
    sys.argv = ['openstack', *argv]
    try:
        with contextlib.redirect_stdout(out), \
                contextlib.redirect_stderr(err), \
                warnings.catch_warnings():
            warnings.simplefilter('ignore')
            try:
                rc = shell.main(list(argv))
            except SystemExit as exc:  # argparse errors, --help
                rc = exc.code if isinstance(exc.code, int) else 1
    finally:
        sys.argv = argv_before
        # the shell adds its own log handlers on every run: drop them
        root.handlers[:] = handlers
        root.setLevel(level)
        # only the loggers the run changed: each setLevel clears the
        # level cache of every logger (a thousand here), so resetting all
        # of them cost more than the command itself
        for name, logger in logging.root.manager.loggerDict.items():
            level = levels.get(name, logging.NOTSET)
            if isinstance(logger, logging.Logger) and logger.level != level:
                logger.setLevel(level)
    return rc or 0, out.getvalue(), err.getvalue()


def _globals_of(argv):
    """The global options of ARGV (everything before the command word)."""
    word = _command_word(argv)
    return list(argv[:argv.index(word)]) if word else list(argv)


_CONNECTIONS = {}  # cloud name -> openstacksdk connection (the waits)


def _connection(cloud):
    """One openstacksdk connection per cloud, for the waits: a poll is one
    GET on a token got once, not a whole OSC run with its own login."""
    if cloud not in _CONNECTIONS:
        import openstack
        _CONNECTIONS[cloud] = openstack.connect(cloud=cloud)
    return _CONNECTIONS[cloud]


def _server_status(conn, server_id):
    """The server's status, or None when Nova no longer has it."""
    from openstack import exceptions as sdk_exc
    try:
        return conn.compute.get_server(server_id).status
    except sdk_exc.NotFoundException:
        return None


def _run_in_process(argv):
    """Like running ``openstack ARGV``, in this process.

    ``server create/delete --wait`` are run without ``--wait`` and then
    waited for here, asking Nova every POLL seconds (instead of OSC's 5)
    through one SDK connection.
    """
    argv = list(argv)
    word = _command_word(argv)
    after = argv[argv.index(word):] if word else []
    if after[:2] not in (['server', 'create'], ['server', 'delete']) or (
            '--wait' not in after):
        return _run_shell(argv)
    argv.remove('--wait')
    glob = _globals_of(argv)
    conn = _connection(glob[glob.index('--os-cloud') + 1])
    if after[1] == 'delete':
        names = [a for a in after[2:] if not a.startswith('-')]
        ids = []
        for name in names:
            found = conn.compute.find_server(name, ignore_missing=True)
            if found is not None:
                ids.append(found.id)
        rc, out, err = _run_shell(argv)
        if rc:
            return rc, out, err
        deadline = time.monotonic() + 300
        while ids and time.monotonic() < deadline:
            ids = [i for i in ids if _server_status(conn, i) is not None]
            if ids:
                time.sleep(POLL)
        if ids:
            return 1, out, 'Error deleting server: %s\n' % ', '.join(ids)
        return rc, out, err
    # server create: its output, after the wait, is the server's details
    rc, out, err = _run_shell(argv + ['-f', 'json', '-c', 'id']
                              if '-f' not in argv else argv)
    if rc:
        return rc, out, err
    server_id = json.loads(out)['id']
    show = glob + ['server', 'show', server_id]
    fmt = argv[argv.index('-f'):argv.index('-f') + 2] if '-f' in argv else []
    deadline = time.monotonic() + 300
    while True:
        status = _server_status(conn, server_id)
        if status not in (None, 'BUILD') or time.monotonic() > deadline:
            break
        time.sleep(POLL)
    if status != 'ACTIVE':
        return 1, '', err + 'Error creating server %s: it is %s\n' % (
            server_id, status)
    rc, text, err2 = _run_shell(show + fmt)
    return rc, text, err + err2


# the "openstack gpu" commands this process has run as the executable
_RUN_AS_EXECUTABLE = set()


@functools.cache
def _gpu_commands():
    """Every "gpu ..." command name the installed plugin registers."""
    from importlib import metadata
    return {tuple(ep.name.split('_')) for ep in
            metadata.entry_points(group='openstack.gpu.v1')}


def _gpu_command(argv):
    """The command of ``openstack ARGV`` ("gpu pool add host"): the
    longest registered name its words start with (None when none)."""
    word = _command_word(argv)
    words = tuple(argv[argv.index(word):]) if word else ()
    known = _gpu_commands()
    for size in range(len(words), 0, -1):
        if words[:size] in known:
            return ' '.join(words[:size])
    return None


def _configured():
    if os.environ.get('OS_CLOUD'):
        return True
    return bool(os.environ.get('OS_CLIENT_CONFIG_FILE'))


def needs(*kinds):
    """Decorator: the test runs only where the cloud has each kind of host
    (FunctionalTestCase.need_host)."""
    def decorate(test):
        @functools.wraps(test)
        def wrapper(self, *args, **kwargs):
            self.need_host(*kinds)
            return test(self, *args, **kwargs)
        return wrapper
    return decorate


class CommandFailed(Exception):
    def __init__(self, argv, rc, stdout, stderr):
        super().__init__('%s exited %d:\n%s' % (' '.join(argv), rc,
                                                (stderr or stdout).strip()))
        self.rc = rc
        self.stdout = stdout
        self.stderr = stderr


@testtools.skipUnless(_configured(), 'no cloud configured: set OS_CLOUD '
                      '(or run tools/run-functional, which brings up the '
                      'test cloud)')
class KeepsLaneBOut:
    """A mixin (before FunctionalTestCase) for a test class that creates
    or deletes a Keystone registered limit of a class lane B's servers
    ask for (``class:VGPU``, the passthrough class): it holds the
    UNSTEERED_LOCK exclusively for the class's tests, so no lane-B test
    runs meanwhile. Nova's unified limits read a boot's limits, then
    whether each class has a registered limit: a registered limit made or
    deleted between the two reads refuses the boot as over a limit of 0
    (clean-clone run 13: a lane-B passthrough boot refused while
    TestQuotaShapes made the passthrough class's registered limit)."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls._lane_b_out = None
        if LANES['b'] != LANES['a']:
            from gpuclient.tests.functional import leases

            lock = leases.NamedLock(UNSTEERED_LOCK)
            lock.setUp()
            cls._lane_b_out = lock

    @classmethod
    def tearDownClass(cls):
        if cls._lane_b_out is not None:
            cls._lane_b_out.cleanUp()
            cls._lane_b_out = None
        super().tearDownClass()

    def setUp(self):
        super().setUp()
        lock = type(self)._lane_b_out
        if lock is not None and lock.waited > 1:
            # once per class, on its first test
            self.addDetail('waited for lane B %s' % uuid.uuid4().hex[:6],
                           content.text_content(
                               'lane B wait: %.1f s before: %s (registered '
                               'limits)' % (lock.waited, type(self).__name__)))
            lock.waited = 0.0


class FunctionalTestCase(testtools.TestCase):
    """Runs the real ``openstack`` executable against a real cloud."""

    # the hosts the test runs on (LANES)
    lane = 'a'

    def setUp(self):
        super().setUp()
        hosts = LANES[self.lane]
        self.pt_host, self.pt_host2 = (hosts['passthrough'],
                                       hosts['passthrough2'])
        self.vgpu_host, self.vgpu_host2 = hosts['vgpu'], hosts['vgpu2']
        self.plain_host = hosts['plain']
        if self.lane == 'b' and LANES['b'] != LANES['a']:
            self._enter_lane_b()

    def _enter_lane_b(self):
        """Lease every lane-B host, enable the first ones for this test
        (disabled again at cleanup, before the leases read them back)."""
        from gpuclient.tests.functional import leases

        self.useFixture(leases.NamedLock(UNSTEERED_LOCK, shared=True))
        conn = _connection(self.cloud)
        dcgm = os.environ.get('GPUCLIENT_DCGM_DEVICES')
        self.useFixture(leases.HostLease(self, LANES['b'].values(), conn,
                                         dcgm))
        self._enable([LANES['b'][kind] for kind in LANE_ENABLED], conn)

    def _enable(self, hosts, conn):
        """Enable the nova-compute services of HOSTS that are disabled
        (one list, one PUT each: Nova's API at 2.53, by service id);
        disabled again at cleanup with the reason each had."""
        for service in conn.compute.services(binary='nova-compute'):
            if service.host not in hosts or service.status != 'disabled':
                continue
            path = '/os-services/%s' % service.id
            self.addCleanup(
                self._service_put, conn, path,
                {'status': 'disabled',
                 'disabled_reason': service.disabled_reason or 'spare'})
            self._service_put(conn, path, {'status': 'enabled'})
            self.wait_schedulable(service.host, conn)

    def wait_schedulable(self, host, conn=None):
        """After HOST's nova-compute service was enabled: wait (bounded)
        until Placement no longer has COMPUTE_STATUS_DISABLED on its root
        provider, then assert once. Nova's API asks the compute to remove
        that trait, and a failed or skipped call (a generation conflict
        with the compute's own update, a heartbeat late on a loaded
        machine) leaves it there, the API's answer 200 all the same, until
        the compute's next update_available_resource; meanwhile the
        scheduler's request to Placement leaves the host out: "No valid
        host" (the boots after test_dashboard in clean-clone run 5)."""
        conn = conn or _connection(self.cloud)
        roots = FunctionalTestCase._root_uuids.setdefault(self.cloud, {})
        if host not in roots:
            # one list (the SDK at its microversion: ids are the root
            # providers' uuids), not a CLI run per hypervisor
            roots.update({hv.service_details['host']: hv.id
                          for hv in conn.compute.hypervisors(details=True)
                          if hv.service_details})
        self.assertIn(host, roots)
        path = '/resource_providers/%s/traits' % roots[host]

        def traits():
            answer = conn.placement.get(path, microversion='1.6')
            answer.raise_for_status()
            return set(answer.json()['traits'])

        found = self.wait_for('%s schedulable in Placement' % host, traits,
                              lambda t: DISABLED_TRAIT not in t)
        self.assertNotIn(DISABLED_TRAIT, found, '%s enabled, and Placement '
                         'still has its root provider disabled' % host)

    @staticmethod
    def _service_put(conn, path, body):
        answer = conn.compute.put(path, json=body, microversion='2.53')
        if answer.status_code != 200:
            raise AssertionError('PUT %s %s: %s %s' % (
                path, body, answer.status_code, answer.text))

    def _unsteered(self, args):
        """'drain' or 'boot' when ``openstack ARGS`` lets Nova place a
        server on a host the suite did not choose (UNSTEERED_LOCK): a
        drain's moves, or a boot without --host of a flavor that is not a
        pool's; else None."""
        word = _command_word(args)
        words = list(args[args.index(word):]) if word else []
        if words[:3] == ['gpu', 'host', 'drain']:
            return None if '--dry-run' in words else 'drain'
        if words[:2] != ['server', 'create'] or '--host' in words:
            return None
        if '--flavor' not in words:
            return 'boot'
        flavor = words[words.index('--flavor') + 1]
        rc, out, _err = _run_shell(['--os-cloud', self.cloud, 'flavor',
                                    'show', flavor, '-f', 'json', '-c',
                                    'properties'])
        properties = json.loads(out)['properties'] if rc == 0 else {}
        properties = properties or {}
        # a pool's flavor: its aggregate's metadata (Nova's
        # AggregateInstanceExtraSpecsFilter) or its trait (isolation)
        steered = any(k == 'aggregate_instance_extra_specs:gpu_pool'
                      or (k.startswith('trait:CUSTOM_GPU_POOL_')
                          and v == 'required')
                      for k, v in properties.items())
        # or a flavor no lane-B host can hold
        # (resources:C, resourcesN:C, resources_G:C)
        classes = {k.split(':', 1)[1] for k, v in properties.items()
                   if k.startswith('resources') and ':' in k
                   and str(v) != '0'}
        aliases = {pair.split(':')[0] for pair in
                   properties.get('pci_passthrough:alias', '').split(',')
                   if pair}
        elsewhere = bool(classes - LANE_B_CLASSES
                         or aliases - LANE_B_ALIASES)
        return None if steered or elsewhere else 'boot'

    def need_host(self, *kinds):
        """Skip unless the cloud has a host of each kind (hosts.KINDS).

        With GPUCLIENT_FT_NO_SKIP=1 (tools/run-functional on the test
        cloud it started) a missing host fails the test instead.
        """
        for kind in kinds:
            if HOSTS[kind] is None:
                reason = _hosts.missing_reason(kind)
                if os.environ.get('GPUCLIENT_FT_NO_SKIP') == '1':
                    self.fail(reason + ' (GPUCLIENT_FT_NO_SKIP=1)')
                self.skipTest(reason)

    cloud = ADMIN_CLOUD
    member_cloud = MEMBER_CLOUD

    # False: every "openstack gpu" call of the test runs the executable
    real_executable_once = True

    def openstack_raw(self, *args, cloud=None, timeout=300):
        """Run ``openstack ARGS``; return (rc, stdout, stderr) (see
        _openstack_raw); with GPUCLIENT_FT_CALL_LOG set, each call's
        test, arguments, way and seconds are appended to that file as a
        JSON line, to see where a suite's time goes."""
        start = time.monotonic()
        way = []
        try:
            unsteered = (LANES['b'] != LANES['a']
                         and self._unsteered(args))
            # a lane-B test's drains move only servers it steered; a class
            # that keeps lane B out holds the lock already
            if getattr(type(self), '_lane_b_out', None) is not None:
                unsteered = None
            if unsteered and not (self.lane == 'b' and unsteered == 'drain'):
                from gpuclient.tests.functional import leases

                if self.lane == 'b':
                    self.fail('a lane-B test steers every server it boots '
                              '(a pool flavor or --host): %s'
                              % ' '.join(args))
                with leases.NamedLock(UNSTEERED_LOCK) as lock:
                    if lock.waited > 1:
                        self.addDetail(
                            'waited for lane B %s' % uuid.uuid4().hex[:6],
                            content.text_content(
                                'lane B wait: %.1f s before: %s' % (
                                    lock.waited, ' '.join(args))))
                    return self._openstack_raw(*args, cloud=cloud,
                                               timeout=timeout, way=way)
            return self._openstack_raw(*args, cloud=cloud, timeout=timeout,
                                       way=way)
        finally:
            if CALL_LOG:
                with open(CALL_LOG, 'a') as log:
                    log.write(json.dumps({
                        'test': self.id(), 'args': list(args),
                        'way': way[0] if way else None,
                        'seconds': round(time.monotonic() - start, 3),
                    }) + '\n')

    def _openstack_raw(self, *args, cloud=None, timeout=300, way=None):
        """Run ``openstack ARGS``; return (rc, stdout, stderr).

        ``openstack gpu <command>`` runs the real executable the first
        time this test process runs that command (so every command the
        suite uses is proven as a user runs it), then the same OSC shell,
        plugin included, in this process: an interpreter start and a login
        less per call. The rest runs in this process (the proofs and the
        set-up). GPUCLIENT_FT_SUBPROCESS=1 runs every call as a process.
        """
        way = [] if way is None else way
        gpu = _command_word(args) == 'gpu'
        if not ALL_SUBPROCESS and not gpu:
            way.append('in-process')
            return _run_in_process(['--os-cloud', cloud or self.cloud,
                                    *args])
        command = _gpu_command(args)
        if (not ALL_SUBPROCESS and self.real_executable_once
                and command in _RUN_AS_EXECUTABLE):
            way.append('in-process')
            return _run_shell(['--os-cloud', cloud or self.cloud, *args])
        _RUN_AS_EXECUTABLE.add(command)
        way.append('executable')
        argv = [OPENSTACK, '--os-cloud', cloud or self.cloud, *args]
        env = dict(os.environ, PYTHONWARNINGS='ignore')
        proc = subprocess.run(argv, capture_output=True, text=True,
                              env=env, timeout=timeout)
        return proc.returncode, proc.stdout, proc.stderr

    def openstack_matrix(self, index, *args, cloud=None):
        """``openstack_raw`` for case INDEX of a matrix of many cases.

        The first case runs the real executable; the others run the same
        OSC shell, with the plugin, in this process (a matrix costs one
        interpreter start, not one per case).
        """
        if index == 0 or ALL_SUBPROCESS:
            return self.openstack_raw(*args, cloud=cloud)
        return _run_shell(['--os-cloud', cloud or self.cloud, *args])

    def openstack(self, *args, cloud=None, parse=True, timeout=300):
        """Run ``openstack ARGS [-f json]``; fail on a non-zero exit.

        Returns the parsed JSON output when PARSE (None for no output),
        else the output text.
        """
        args = list(args) + (['-f', 'json'] if parse else [])
        rc, out, err = self.openstack_raw(*args, cloud=cloud,
                                          timeout=timeout)
        if rc:
            raise CommandFailed(['openstack', *args], rc, out, err)
        if not parse:
            return out
        return json.loads(out) if out.strip() else None

    # Nova hosts and their Placement providers, read with plain OSC

    _hypervisors = {}  # per cloud: {service host: hypervisor}
    _root_uuids = {}  # per cloud: {service host: root provider uuid}

    def hypervisor(self, host):
        """The hypervisor of Nova service host HOST (compute API 2.53).

        Its id is the host's root provider uuid; its name may differ from
        the service host (FQDN, Ironic node uuid), so never match names.
        """
        known = FunctionalTestCase._hypervisors.setdefault(self.cloud, {})
        if host not in known:
            for row in self.openstack('hypervisor', 'list'):
                hv = self.openstack('--os-compute-api-version', '2.53',
                                    'hypervisor', 'show', row['ID'])
                known[hv['service_host']] = hv
        self.assertIn(host, known)
        return known[host]

    def use_spare(self, host):
        """Enable HOST, a second host the test cloud keeps disabled so
        that nothing lands there by chance; disabled again at cleanup with
        its reason. A cloud without HOST skips (fails on the test
        cloud)."""
        rows = self.openstack('--os-compute-api-version', '2.53', 'compute',
                              'service', 'list', '--service', 'nova-compute',
                              '--host', host, '--long')
        if not rows:
            reason = ('this cloud has no host %s (a second host of its '
                      'kind: set GPUCLIENT_PT_HOST2 / GPUCLIENT_VGPU_HOST2)'
                      % host)
            if os.environ.get('GPUCLIENT_FT_NO_SKIP') == '1':
                self.fail(reason)
            self.skipTest(reason)
        if rows[0]['Status'] == 'disabled':
            self.addCleanup(self.openstack_raw, 'compute', 'service', 'set',
                            '--disable', '--disable-reason',
                            rows[0]['Disabled Reason'] or 'spare', host,
                            'nova-compute')
            self.openstack('compute', 'service', 'set', '--enable', host,
                           'nova-compute', parse=False)
            self.wait_schedulable(host)

    def host_lease(self, kind):
        """A host of KIND (LEASE_KINDS) for this test alone, read clean
        before it is handed out and again when the test gives it back
        (leases.HostLease: a leak fails this test). Of several hosts of
        the kind, the first not held by another test process. A kind the
        cloud lacks skips (fails with GPUCLIENT_FT_NO_SKIP=1)."""
        from gpuclient.tests.functional import leases

        hosts = [h for h in LEASE_KINDS.get(kind, ()) if h]
        if not hosts:
            reason = 'this cloud has no host to lease of kind %s' % kind
            if os.environ.get('GPUCLIENT_FT_NO_SKIP') == '1':
                self.fail(reason)
            self.skipTest(reason)
        conn = _connection(self.cloud)
        dcgm = os.environ.get('GPUCLIENT_DCGM_DEVICES')
        shared = not _hosts.on_testcloud()
        # a host no other process holds now, else the first (waiting)
        host = next((h for h in hosts if leases.free(h)), hosts[0])
        self.useFixture(leases.HostLease(self, host, conn, dcgm,
                                         shared=shared))
        return host

    def root_provider(self, host):
        """Placement root provider uuid of Nova service host HOST."""
        return self.hypervisor(host)['id']

    def traits(self, rp):
        """The traits of resource provider RP (a set)."""
        return {row['name'] for row in self.openstack(
            *PLACEMENT_TRAITS, 'resource', 'provider', 'trait', 'list', rp)}

    def delete_pool(self, name):
        """Delete pool NAME (--force), then wait until Placement no longer
        shows it on any provider: no provider member of its aggregate, none
        with its trait (read back, bounded; a leak fails this test)."""
        agg = _connection(self.cloud).compute.find_aggregate(
            name, ignore_missing=True)
        rc, _out, err = self.openstack_raw('gpu', 'pool', 'delete',
                                           '--force', name)
        if rc and 'No GPU pool named' not in err:
            self.fail('could not delete pool %s: %s' % (name, err))
        if agg is not None:
            self.assert_pool_gone(name, agg.uuid)

    def wait_for(self, what, read, until, timeout=SETTLE_TIMEOUT,
                 interval=POLL):
        """READ() until UNTIL(value), at most TIMEOUT seconds (``poll``);
        return the last value, for the caller's one assertion. A value
        that never satisfied UNTIL is kept as the test detail
        ``wait: WHAT`` (what the authority said last, and how often it was
        asked)."""
        value, held, reads = waits.poll(read, until, timeout, interval)
        if not held:
            self.addDetail('wait: %s' % what, content.text_content(
                '%r after %d reads in %s s' % (value, reads, timeout)))
        return value

    def assert_pool_gone(self, name, aggregate_uuid):
        """Placement's read-back of a deleted pool: no provider in its
        aggregate (Nova's mirror), none carrying its trait."""
        from gpuclient.rules import pools

        placement = _connection(self.cloud).placement
        trait = pools.pool_trait(name)

        def providers(**query):
            return sorted(rp['uuid'] for rp in placement.get(
                '/resource_providers', params=query,
                microversion='1.18').json()['resource_providers'])

        def read():
            traits = placement.get(
                '/traits', params={'name': 'in:' + trait},
                microversion='1.6').json()['traits']
            return {'member_of': providers(member_of=aggregate_uuid),
                    'required': providers(required=trait) if traits
                    else []}

        left = self.wait_for('pool %s gone from Placement' % name, read,
                             lambda found: not any(found.values()))
        self.assertEqual({'member_of': [], 'required': []}, left,
                         'pool %s still on providers' % name)

    def assert_server_gone(self, server_id, host):
        """After a server delete: not in Nova's server list of HOST (its
        last host; None: not scheduled) and no allocation of it in
        Placement (the consumer's allocations read back, bounded)."""
        conn = _connection(self.cloud)

        def read():
            on_host = host is not None and any(
                s.id == server_id for s in conn.compute.servers(
                    all_projects=True, compute_host=host))
            held = conn.placement.get(
                '/allocations/%s' % server_id).json()['allocations']
            return {'on_host': on_host, 'allocations': held}

        left = self.wait_for('server %s gone' % server_id, read,
                             lambda found: not (found['on_host']
                                                or found['allocations']))
        self.assertEqual({'on_host': False, 'allocations': {}}, left,
                         'server %s still on %s' % (server_id, host))

    def aggregate(self, name):
        return self.openstack('aggregate', 'show', name)

    def unique_name(self, prefix):
        return 'gpuclient-ft-%s-%s' % (prefix, uuid.uuid4().hex[:8])

    # helpers that clean up after themselves

    def create_flavor(self, properties, vcpus=1, ram=512, disk=1):
        name = self.unique_name('flavor')
        args = ['flavor', 'create', '--vcpus', str(vcpus), '--ram',
                str(ram), '--disk', str(disk)]
        for key, value in properties.items():
            args += ['--property', '%s=%s' % (key, value)]
        flavor = self.openstack(*args, name)
        self.addCleanup(self.openstack, 'flavor', 'delete', flavor['id'],
                        parse=False)
        return flavor

    def make_flavor(self, pool, gpus=1):
        """A small GPU flavor of POOL (gpu flavor create); deleted at
        cleanup."""
        name = self.unique_name('flavor')
        self.addCleanup(self.openstack_raw, 'flavor', 'delete', name)
        self.openstack('gpu', 'flavor', 'create', name, '--pool', pool,
                       '--gpus', str(gpus), '--vcpus', '1', '--ram', '512',
                       '--disk', '1', parse=False)
        return name

    def boot(self, flavor, image=IMAGE, expect_status='ACTIVE', host=None):
        """Boot a server (no network) and wait; delete it at cleanup.

        HOST: ``--host`` (compute API 2.74): Nova's scheduler still judges
        the host (its filters and Placement's claim), and the boot waits
        for no other stream (UNSTEERED_LOCK)."""
        name = self.unique_name('server')
        rc, out, err = self.openstack_raw(
            '--os-compute-api-version', COMPUTE_API, 'server', 'create',
            '--flavor', flavor, '--image', image, '--nic', 'none', '--wait',
            *(('--host', host) if host else ()), name, '-f', 'json')
        # cleanup even when the boot failed: the server may exist in ERROR
        self.addCleanup(self._delete_server, name)
        server = json.loads(out) if rc == 0 and out.strip() else None
        if server is None:
            server = self.openstack('--os-compute-api-version', COMPUTE_API,
                                    'server', 'show', name)
        if server['status'] != expect_status:
            self.fail('server %s is %s, not %s: %s %s' % (
                name, server['status'], expect_status,
                server.get('fault'), err.strip()))
        return server

    def _delete_server(self, name):
        """Delete server NAME (or ID) and wait until Nova's list of its
        host and Placement's allocations no longer hold it (a cleanup
        that ends on Nova's 404 alone leaves the next test a host that
        is not clean yet)."""
        conn = _connection(self.cloud)
        # its details (the host it is on), as the admin sees them
        found = conn.compute.find_server(name, ignore_missing=True,
                                         all_projects=True)
        rc, _out, err = self.openstack_raw('server', 'delete', '--wait',
                                           name)
        if rc and 'No Server found' not in err:
            raise CommandFailed(['server', 'delete', name], rc, '', err)
        if found is not None:
            self.assert_server_gone(found.id, found.compute_host)
            self.assert_node_back(found.hypervisor_hostname)

    def assert_node_back(self, node, timeout=SETTLE_TIMEOUT):
        """After a bare-metal server's delete, Ironic cleans its node and
        Nova's ironic driver keeps the node's inventory reserved in
        Placement until the node is available again (at its next resource
        update): wait, bounded, on that inventory, what the next test's
        capacity and boots read, then assert once. NODE (the server's
        hypervisor hostname) that is no provider uuid (a libvirt host's
        name): nothing to wait for."""
        placement = _connection(self.cloud).placement
        if not node or placement.get(
                '/resource_providers/%s' % node).status_code != 200:
            return

        def reserved():
            found = placement.get('/resource_providers/%s/inventories'
                                  % node).json()
            return {rc: inv['reserved'] for rc, inv in
                    found.get('inventories', {}).items()}

        left = self.wait_for('node %s unreserved in Placement' % node,
                             reserved, lambda found: found and not any(
                                 found.values()), timeout=timeout)
        self.assertTrue(left and not any(left.values()),
                        'node %s still reserved: %s' % (node, left))

    def allocations(self, consumer):
        """{resource class: amount} over all providers of CONSUMER."""
        totals = {}
        for row in self.openstack('resource', 'provider', 'allocation',
                                  'show', consumer):
            for rc, amount in row['resources'].items():
                totals[rc] = totals.get(rc, 0) + amount
        return totals
