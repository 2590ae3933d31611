#!/usr/bin/env python3
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
"""``gpu host drain --dry-run``'s plan over thousands of hosts, in one run.

Boots SERVERS servers of a passthrough flavor (``pci_passthrough:alias``
h100:1, no pool steering, so every host with the class is a destination)
on the test cloud's ``gpu-pt-1`` (its spare ``gpu-pt-2`` is disabled, so
they land there), then for each host count given (ascending) seeds
simulated GPU hosts into Placement (``tools/testcloud seed-hosts N``, as
bench_capacity.py does) and measures ``maintenance_ops.observe`` for a
drain of ``gpu-pt-1``: everything ``gpu host drain --dry-run`` reads (one
snapshot, the servers of every project) and plans. The seeded roots get
synthetic hypervisor entries in the snapshot (bench_capacity's
``add_synthetic_hypervisors``), so the planner really weighs every seeded
host as a destination. Printed: median API time and HTTP requests of the
read, median CPU time of the plan, and where the servers would go.

A benchmark that prints figures, not a gate; the requests must not grow
with the number of hosts. The servers and the flavor are deleted at the
end; the seeded hosts stay unless --remove-seeded.

    eval "$(tools/testcloud env)"
    python tools/bench_drain.py --hosts 1000 5000
"""

import argparse
import os
import signal
import statistics
import subprocess
import sys
import time
from unittest import mock
import uuid

from bench_capacity import TESTCLOUD
from bench_capacity import TESTCLOUD_NOVA_CONF
from bench_capacity import add_synthetic_hypervisors
from bench_capacity import seed
from bench_capacity import seeded_roots
from bench_host_list import Counter
from keystoneauth1 import adapter
import openstack

from gpuclient.cloud import client
from gpuclient.ops import maintenance_ops
from gpuclient.ops import nova_settings
from gpuclient.ops import snapshot
from gpuclient.rules import maintenance

SOURCE = 'gpu-pt-1'
IMAGE = 'gpuclient-tiny'


def boot(conn, count, tag):
    flavor = conn.compute.create_flavor(
        name='bench-drain-%s' % tag, vcpus=1, ram=512, disk=1)
    conn.compute.create_flavor_extra_specs(
        flavor, {'pci_passthrough:alias': 'h100:1'})
    image = conn.image.find_image(IMAGE)
    servers = []
    for index in range(count):
        servers.append(conn.compute.create_server(
            name='bench-drain-%s-%d' % (tag, index), flavor_id=flavor.id,
            image_id=image.id, networks='none'))
    for server in servers:
        conn.compute.wait_for_server(server, wait=300)
    return flavor, servers


def clean(conn, flavor, servers):
    for server in servers:
        conn.compute.delete_server(server, ignore_missing=True)
    for server in servers:
        conn.compute.wait_for_delete(server, wait=300)
    if flavor is not None:
        conn.compute.delete_flavor(flavor, ignore_missing=True)


def measure(new_client, counter, placement, hosts, runs):
    have = seeded_roots(placement)
    if have < hosts:
        print('seeding %d simulated GPU hosts (have %d)...' % (hosts, have))
        seed(hosts)
    real_read = snapshot.read
    added = []

    def read(*args, **kwargs):
        cloud = real_read(*args, **kwargs)
        added.append(add_synthetic_hypervisors(cloud))
        return cloud

    # the test cloud's nova.conf: [pci] alias h100 and the filters
    settings = nova_settings.read_settings([TESTCLOUD_NOVA_CONF])
    times, requests, cpu = [], [], []
    observed = None
    with mock.patch.object(snapshot, 'read', read), \
            mock.patch.object(maintenance, 'plan',
                              _timed(maintenance.plan, cpu)):
        for _ in range(runs):
            gpu = new_client()
            counter.count = 0
            start = time.perf_counter()
            observed = maintenance_ops.observe(
                gpu, [SOURCE], requested='cold', allow_downtime=True,
                settings=settings)
            times.append(time.perf_counter() - start)
            requests.append(counter.count)
    api = statistics.median(times) - statistics.median(cpu)
    where = sorted({row['destination'] or row['method']
                    for row in observed['rows']})
    print('\n== %d seeded hosts (%d synthetic hypervisors) ==' % (
        seeded_roots(placement), added[-1]))
    print('drain read (API time): %.3f s' % api)
    print('drain plan (CPU time): %.3f s' % statistics.median(cpu))
    print('requests: %d' % statistics.median(requests))
    print('servers planned: %d, to: %s' % (len(observed['rows']),
                                           ', '.join(where)))
    return {'hosts': hosts, 'requests': statistics.median(requests)}


def _timed(func, into):
    def wrapper(*args, **kwargs):
        start = time.process_time()
        try:
            return func(*args, **kwargs)
        finally:
            into.append(time.process_time() - start)
    return wrapper


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--hosts', type=int, nargs='+', default=[5000],
                        metavar='N', help='simulated GPU hosts to seed, '
                        'one measurement per count (default 5000)')
    parser.add_argument('--servers', type=int, default=2,
                        help='servers to boot on %s (default 2)' % SOURCE)
    parser.add_argument('--runs', type=int, default=3,
                        help='runs per host count (median; default 3)')
    parser.add_argument('--cloud', default=os.environ.get('OS_CLOUD'),
                        help='cloud name in clouds.yaml (default OS_CLOUD)')
    parser.add_argument('--remove-seeded', action='store_true',
                        help='run "tools/testcloud seed-hosts --remove" at '
                        'the end (default: leave the seeded hosts)')
    args = parser.parse_args()
    if not args.cloud:
        sys.exit('set OS_CLOUD (eval "$(tools/testcloud env)")')
    signal.signal(signal.SIGTERM, lambda *_a: sys.exit(143))
    conn = openstack.connect(cloud=args.cloud)
    placement = adapter.Adapter(
        conn.session, service_type='placement',
        region_name=conn.config.get_region_name('placement'),
        interface=conn.config.get_interface('placement'))

    def new_client():
        return client.GpuClient(
            conn.session, conn,
            region_name=conn.config.get_region_name('placement'),
            interface=conn.config.get_interface('placement'))

    counter = Counter(conn.session)
    flavor, servers, results = None, [], []
    try:
        flavor, servers = boot(conn, args.servers, uuid.uuid4().hex[:6])
        for hosts in sorted(args.hosts):
            results.append(measure(new_client, counter, placement, hosts,
                                   args.runs))
    finally:
        clean(conn, flavor, servers)
    if len(results) > 1:
        same = len({r['requests'] for r in results}) == 1
        print('\nrequests: %s: %s' % (
            ', '.join('%d at %d hosts' % (r['requests'], r['hosts'])
                      for r in results),
            'independent of the host count' if same
            else 'NOT independent of the host count'))
    if args.remove_seeded:
        subprocess.run([TESTCLOUD, 'seed-hosts', '--remove'], check=True)


if __name__ == '__main__':
    main()
