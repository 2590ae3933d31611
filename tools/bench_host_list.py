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
"""``gpu host list`` against the per-provider loop, in one run.

Seeds N simulated GPU hosts into the test cloud's Placement
(``tools/testcloud seed-hosts N``, skipped if they are there), then times,
against the same cloud and in the same process:

* what ``openstack gpu host list --unmapped`` reads (the client layer's
  ``collect``: aggregates, hypervisors, resource classes, providers and a
  fixed number of allocation-candidate queries), median of several runs,
  with the number of HTTP requests it sent;
* the per-provider loop that exporters use (``GET /resource_providers``,
  then ``/inventories`` and ``/usages`` of each provider), sequentially and
  with a thread pool.

A benchmark that prints figures, not a gate. Target: 500 hosts in <= 0.5 s
of API time and >= 20x faster than the loop.

    eval "$(tools/testcloud env)"
    python tools/bench_host_list.py --hosts 500
"""

import argparse
import concurrent.futures
import os
import statistics
import subprocess
import sys
import time

from keystoneauth1 import adapter
import openstack

from gpuclient.cloud import client
from gpuclient.ops import host_ops

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Counter:
    """Counts HTTP requests sent through a keystoneauth session."""

    def __init__(self, session):
        self.count = 0
        session.session.hooks['response'].append(self._hook)

    def _hook(self, response, *args, **kwargs):
        self.count += 1


def seeded_hosts(placement):
    providers = placement.get('/resource_providers').json()
    return sum(
        1 for rp in providers['resource_providers']
        if rp['name'].startswith('seed-gpu-') and '_' not in rp['name']
    )


def per_provider_loop(placement, threads):
    providers = placement.get(
        '/resource_providers', microversion='1.14'
    ).json()['resource_providers']

    def read(rp):
        base = '/resource_providers/%s' % rp['uuid']
        inventories = placement.get(base + '/inventories').json()
        usages = placement.get(base + '/usages').json()
        return rp['uuid'], inventories, usages

    if threads <= 1:
        return len(providers), [read(rp) for rp in providers]
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        return len(providers), list(pool.map(read, providers))


def timed(func, *args, **kwargs):
    start = time.perf_counter()
    result = func(*args, **kwargs)
    return time.perf_counter() - start, result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--hosts', type=int, default=500,
                        help='simulated GPU hosts to seed (default 500; '
                        '0 to use the cloud as it is)')
    parser.add_argument('--runs', type=int, default=5,
                        help='runs of gpu host list (median; default 5)')
    parser.add_argument('--threads', type=int, default=8,
                        help='threads for the threaded loop (default 8)')
    parser.add_argument('--cloud', default=os.environ.get('OS_CLOUD'),
                        help='cloud name in clouds.yaml (default OS_CLOUD)')
    args = parser.parse_args()
    if not args.cloud:
        sys.exit('set OS_CLOUD (eval "$(tools/testcloud env)")')

    conn = openstack.connect(cloud=args.cloud)
    placement = adapter.Adapter(
        conn.session, service_type='placement',
        region_name=conn.config.get_region_name('placement'),
        interface=conn.config.get_interface('placement'),
    )
    have = seeded_hosts(placement)
    if args.hosts and have < args.hosts:
        print('seeding %d simulated GPU hosts (have %d)...'
              % (args.hosts, have))
        t, _ = timed(subprocess.run,
                     [os.path.join(ROOT, 'tools', 'testcloud'),
                      'seed-hosts', str(args.hosts)], check=True)
        print('seeded in %.1f s' % t)

    def new_client():
        # a fresh client layer per run, as each `openstack` process has;
        # the Placement version, read once per process, stays known
        return client.GpuClient(
            conn.session, conn,
            region_name=conn.config.get_region_name('placement'),
            interface=conn.config.get_interface('placement'),
        )

    counter = Counter(conn.session)
    # warm up: token, catalog, microversion negotiation
    host_ops.collect(new_client(), unmapped=True)

    times, requests = [], []
    for _ in range(args.runs):
        gpu = new_client()
        counter.count = 0
        t, (rows, notes) = timed(host_ops.collect, gpu, unmapped=True)
        times.append(t)
        requests.append(counter.count)
    hosts = {row['host'] for row in rows}
    gpu_time = statistics.median(times)

    counter.count = 0
    seq_time, (nproviders, _) = timed(per_provider_loop, placement, 1)
    seq_requests = counter.count
    thr_time, _ = timed(per_provider_loop, placement, args.threads)

    start = time.perf_counter()
    subprocess.run(
        ['openstack', '--os-cloud', args.cloud, 'gpu', 'host', 'list',
         '--unmapped', '-f', 'value'],
        check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    cli_time = time.perf_counter() - start

    print('providers in Placement: %d; hosts with GPUs listed: %d; '
          'rows: %d' % (nproviders, len(hosts), len(rows)))
    for note in notes:
        print('note: %s' % note)
    print('gpu host list (API time, median of %d): %.3f s, %d HTTP requests'
          % (args.runs, gpu_time, statistics.median(requests)))
    print('per-provider loop, sequential: %.3f s, %d HTTP requests'
          % (seq_time, seq_requests))
    print('per-provider loop, %d threads: %.3f s'
          % (args.threads, thr_time))
    print('speed-up: %.1fx over the sequential loop, %.1fx over the '
          'threaded loop (target >= 20x)'
          % (seq_time / gpu_time, thr_time / gpu_time))
    print('whole CLI run (openstack gpu host list --unmapped): %.2f s'
          % cli_time)


if __name__ == '__main__':
    main()
