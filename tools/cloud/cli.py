"""tools/testcloud: the gpuclient test cloud on this machine.

The verbs (up, down, status, env, seed-hosts, restart-compute, smoke): their
arguments and their output; what they do is in the modules they call
(cloud.stack, cloud.install, cloud.computes, ...; shared pieces in
cloud.base).  Standard library only: it runs with the system python3 before
the cloud's venv exists.  See doc/source/contributor/testcloud.rst.
"""

import argparse
import fcntl
import os
import shlex
import sys
import time

from cloud import api
from cloud import base
from cloud import blazar
from cloud import computes
from cloud import control_plane
from cloud import hosts as hostlib
from cloud import install
from cloud import ironic
from cloud import metrics
from cloud import stack


def cmd_up(args):
    # one "up" at a time: a second one (.ci/run starts the cloud in the
    # background while the unit tests run; tools/run-functional asks for
    # it again) waits for the first, then reuses what it brought up
    os.makedirs(base.HOME, exist_ok=True)
    with open(os.path.join(base.HOME, 'up.lock'), 'w') as lock:
        waited = time.monotonic()
        fcntl.flock(lock, fcntl.LOCK_EX)
        waited = time.monotonic() - waited
        return _up(args, waited)


def _up(args, waited):
    timeline = base.Timeline()
    if waited > 1:
        timeline('waited %.0f s for another "up" to finish' % waited)
    install.install(timeline)
    installed = timeline.elapsed()
    timeline('install check done (%.1fs)' % installed)
    if stack.healthy():
        timeline('the cloud is already up and healthy: reusing it')
        print(env_text())
        print('READY')
        return 0
    if base.recorded():
        timeline('stale or unhealthy cloud recorded: stopping it first')
        stack.stop(timeline)
    start_t = time.monotonic()
    try:
        stack.start(timeline)
    except Exception as exc:
        timeline('FAILED: %s' % exc)
        timeline('logs: %s (stopping what was started)' % base.LOGS)
        stack.stop(timeline)
        return 1
    timeline('install %.1fs, start-up %.1fs' % (
        installed, time.monotonic() - start_t))
    print(env_text())
    print('READY')
    return 0


def cmd_down(args):
    timeline = base.Timeline()
    stack.stop(timeline)
    left = base.cloud_processes()
    for pid, cmd in left:
        timeline('still running: %d %s' % (pid, cmd))
    timeline('down' if not left else 'down, but %d processes left' %
             len(left))
    return 1 if left else 0


def cmd_status(args):
    pids = base.recorded()
    ok = True
    print('%-26s %-6s %s' % ('process', 'state', 'pid'))
    for name in ['mariadb', 'rabbitmq', 'epmd'] + list(
            reversed(stack.OPENSTACK_SERVICES)):
        pid = pids.get(name)
        if name == 'epmd' and not pid:
            continue
        alive = base.alive(pid)
        ok &= alive
        print('%-26s %-6s %s' % (name, 'up' if alive else 'down',
                                 pid or '-'))
    if not pids:
        print('no cloud recorded in %s' % base.STATE)
        return 1
    try:
        session = api.Session(timeout=10)
        svcs = session.get('compute', '/os-services')['services']
        print('\n%-16s %-14s %-8s %s' % ('nova service', 'host', 'status',
                                         'state'))
        for s in svcs:
            print('%-16s %-14s %-8s %s' % (s['binary'], s['host'],
                                           s['status'], s['state']))
            ok &= s['state'] == 'up'
        hvs = session.get('compute', '/os-hypervisors/detail',
                          microversion='2.53')['hypervisors']
        print('\n%-38s %-14s %s' % ('hypervisor', 'service host', 'state'))
        for hv in hvs:
            print('%-38s %-14s %s' % (hv['hypervisor_hostname'],
                                      hv['service']['host'], hv['state']))
        bare_metal = ironic.status()
        if bare_metal:
            print('\n' + '\n'.join(bare_metal))
        reserving = blazar.status()
        if reserving:
            print('\n' + '\n'.join(reserving))
        rps = session.get('placement', '/resource_providers',
                          microversion='1.14')['resource_providers']
        print('\nmemory: %d processes, RSS %d MiB, PSS %d MiB' % base.memory())
        print('resource providers: %d (%d seed-gpu-*)' % (
            len(rps), sum(r['name'].startswith('seed-gpu-') for r in rps)))
    except Exception as exc:  # noqa: BLE001
        print('APIs not answering: %s' % exc)
        return 1
    return 0 if ok else 1


def env_text():
    # GPUCLIENT_HOST_TREE_HELPER: how a functional test breaks a host's
    # tree and collects its facts again (the host-facts verb)
    helper = '%s %s host-facts' % (
        sys.executable, os.path.join(base.TOOLS, 'testcloud'))
    return ('export OS_CLIENT_CONFIG_FILE=%s/clouds.yaml '
            'OS_CLOUD=gpuclient-admin GPUCLIENT_MEMBER_CLOUD=gpuclient-member'
            ' GPUCLIENT_DCGM_DEVICES=%s GPUCLIENT_HOST_TREE_HELPER=%s' % (
                base.STATE, metrics.DCGM_DEVICES, shlex.quote(helper)))


def cmd_env(args):
    print(env_text())
    print('# the cloud\'s own client: export PATH=%s:$PATH' % base.BIN)
    return 0


def cmd_seed_hosts(args):
    from cloud import seed
    if args.remove:
        return seed.remove()
    if args.count is None:
        print('seed-hosts: give N or --remove', file=sys.stderr)
        return 2
    return seed.add(args.count, workers=args.workers)


def cmd_restart_compute(args):
    """(Re)write a host's nova-compute-<host>.conf, restart (or start) its
    nova-compute, wait for its provider tree and discover it."""
    timeline = base.Timeline()
    host = next((h for h in hostlib.HOSTS if h.name == args.host), None)
    if host is None or host.driver == hostlib.IRONIC:
        raise base.CloudError('%s is no fake-driver compute host of %s' % (
            args.host, ', '.join(h.name for h in hostlib.HOSTS
                                 if h.driver != hostlib.IRONIC)))
    if not base.recorded():
        raise base.CloudError('no cloud recorded in %s: run tools/testcloud '
                              'up' % base.STATE)
    extra = host.extra_conf
    if args.nova_conf:
        with open(args.nova_conf) as f:
            extra = f.read()
    computes.restart(timeline, host, extra, args.disable_new_spare)
    return 0


def cmd_host_facts(args):
    """Write a fake GPU host's tree again (with --fault: broken that way)
    and collect its facts now, as its timer would next."""
    from cloud import host_facts
    if not base.recorded():
        raise base.CloudError('no cloud recorded in %s: run tools/testcloud '
                              'up' % base.STATE)
    # the collected timestamp of the new tree's facts: a test waits until
    # Prometheus holds this one or a later one
    print('collected %r' % host_facts.set_faults(args.host, args.fault))
    return 0


def cmd_smoke(args):
    from cloud import smoke
    return smoke.main(base.BIN, base.STATE, control_plane.IMAGE)


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog='tools/testcloud',
        description='The gpuclient test cloud: real Keystone, Placement, '
                    'Glance and Nova with fake GPU compute hosts, on '
                    '127.0.0.1.  State: %s' % base.STATE)
    sub = parser.add_subparsers(dest='command', required=True)
    sub.add_parser('up', help='install what is missing, (re)build and '
                   'start the cloud, wait until ready'
                   ).set_defaults(func=cmd_up)
    sub.add_parser('down', help='stop every process the cloud started'
                   ).set_defaults(func=cmd_down)
    sub.add_parser('status', help='processes, compute services, '
                   'hypervisors').set_defaults(func=cmd_status)
    sub.add_parser('env', help='print the client environment'
                   ).set_defaults(func=cmd_env)
    seed_p = sub.add_parser('seed-hosts', help='add N simulated GPU hosts '
                            'to Placement (or --remove them)')
    seed_p.add_argument('count', nargs='?', type=int, metavar='N')
    seed_p.add_argument('--remove', action='store_true',
                        help='delete every seed-gpu-* provider')
    seed_p.add_argument('--workers', type=int, default=8,
                        help='concurrent Placement requests (default 8)')
    seed_p.set_defaults(func=cmd_seed_hosts)
    restart_p = sub.add_parser(
        'restart-compute', help='(re)write a fake-driver host\'s '
        'nova-compute conf, restart (or first start) its nova-compute and '
        'wait until Placement holds its new provider tree')
    restart_p.add_argument('host', help='compute host (tools/cloud/hosts.py)')
    restart_p.add_argument(
        '--nova-conf', metavar='FILE',
        help='extra nova.conf sections for the host (e.g. the file gpu '
        'profile plan --output-dir wrote); default: the host\'s own')
    restart_p.add_argument(
        '--keep-enabled', dest='disable_new_spare', action='store_false',
        help='leave a spare host enabled when it comes up enabled')
    restart_p.set_defaults(func=cmd_restart_compute)
    facts_p = sub.add_parser(
        'host-facts', help='write a fake GPU host\'s sysfs/procfs tree '
        'again, healthy or with --fault, and run gpuclient-host-facts on it '
        'now (its node_exporter serves the result)')
    facts_p.add_argument('host', help='fake GPU host (tools/cloud/hosts.py '
                         'HOST_FACTS_HOSTS)')
    facts_p.add_argument('--fault', action='append', default=[],
                         help='a fault of tools/cloud/host_trees.py FAULTS '
                         '(repeat for several; none: the healthy tree)')
    facts_p.set_defaults(func=cmd_host_facts)
    sub.add_parser('smoke', help='a quick end-to-end check with the real '
                   'openstack CLI').set_defaults(func=cmd_smoke)
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except base.CloudError as exc:
        print('testcloud: %s' % exc, file=sys.stderr)
        return 1
