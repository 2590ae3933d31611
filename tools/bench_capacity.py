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
"""``gpu capacity list`` against the os-capacity approach, in one run.

For each host count given (ascending), seeds simulated GPU hosts into the
test cloud's Placement (``tools/testcloud seed-hosts N``: a root with VCPU,
MEMORY_MB and DISK_GB and two children with ``CUSTOM_PCI_10DE_2331`` total
1 each, or ``VGPU`` total 4 each on every 4th host; Placement providers
only, no Nova hypervisor), creates GPU flavors matching those trees
(private, ``bench-capacity-*``, deleted at the end, also on error or
SIGTERM), then measures against the same cloud, in the same process:

* gpuclient: ``snapshot.read`` (everything ``gpu capacity list`` reads),
  median API time and HTTP requests of several runs; then, apart, the CPU
  time of ``capacity.rows``. The seeded hosts have no nova-compute, so
  before that step the script adds one synthetic hypervisor entry per
  seeded root to the snapshot's Cloud, standing in for the nova-compute
  service each would have (host name = root name, id = root uuid, up and
  enabled); the reads are unchanged. The fit counts then really run over
  every seeded host and flavor.
* the os-capacity approach (stackhpc/os-capacity ``prometheus.py``): the
  flavor list, one ``GET /allocation_candidates`` per flavor (microversion
  1.29, the flavor's VCPU, MEMORY_MB, DISK_GB and GPU classes summed into
  one group, ``required=!COMPUTE_STATUS_DISABLED``, no effective limit),
  the provider list, and ``/usages`` and ``/inventories`` of every provider
  one by one, sequentially, as its collector does on each scrape (the
  per-provider ``/aggregates`` reads it caches after the first scrape are
  left out). The time of the per-provider reads restricted to the roots in
  the answers is printed too (a lower bound for that approach).

A benchmark that prints figures, not a gate. Aim: at most 2 s of API time
at 5,000 hosts, and the same request count at every host count. The seeded
hosts stay in Placement (as with bench_host_list.py): remove them with
``tools/testcloud seed-hosts --remove`` or ``--remove-seeded``.

    eval "$(tools/testcloud env)"
    python tools/bench_capacity.py --hosts 1000 5000
"""

import argparse
import os
import re
import signal
import statistics
import subprocess
import sys
import time
import uuid

# tools/ is on the path when run as "python tools/bench_capacity.py": the
# same request counter and timer as the host list benchmark
from bench_host_list import Counter
from bench_host_list import timed
from keystoneauth1 import adapter
import openstack

from gpuclient.cloud import client
from gpuclient.ops import nova_settings
from gpuclient.ops import snapshot
from gpuclient.rules import capacity

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTCLOUD = os.path.join(ROOT, 'tools', 'testcloud')
# the test cloud's rendered nova.conf (scheduler filters, PCI alias h100)
TESTCLOUD_NOVA_CONF = os.path.join(
    os.environ.get('GPUCLIENT_TESTCLOUD_HOME', '/var/tmp/gpuclient-testcloud'),
    'state', 'etc', 'nova', 'nova.conf')
SEED_ROOT = re.compile(r'^seed-gpu-\d+$')
FLAVOR_PREFIX = 'bench-capacity-'
PCI = 'CUSTOM_PCI_10DE_2331'  # the class tools/cloud/seed.py gives pGPUs
OS_CAPACITY_VERSION = '1.29'
NO_LIMIT = 1000000
# what nova-compute puts on the providers it manages, and on the root
NOVA_TRAITS = ('OWNER_NOVA',)
NOVA_ROOT_TRAITS = ('OWNER_NOVA', 'COMPUTE_NODE')


# (name, vcpus, ram MiB, disk GB, extra specs): the seeded trees' classes
# in the shapes gpuclient counts: PCI alias (the test cloud's nova.conf
# has "h100" = 10de:2331, one group per device), the class directly, one
# or several devices, vGPUs of one or several units, RAM- and VCPU-bound.
# Those asking for more devices than a seeded tree offers fit nowhere,
# which is a figure too. No group_policy: the test cloud enables
# AggregateInstanceExtraSpecsFilter, which (as in Nova) removes every host
# whose aggregates lack that unscoped key, and seeded hosts have none.
BASE_FLAVORS = [
    ('pt1', 8, 65536, 100, {'pci_passthrough:alias': 'h100:1'}),
    ('pt2', 16, 131072, 200, {'pci_passthrough:alias': 'h100:2'}),
    ('pt4', 32, 262144, 400, {'pci_passthrough:alias': 'h100:4'}),
    ('pt1-class', 8, 65536, 100, {'resources:%s' % PCI: '1'}),
    ('pt2-one-group', 16, 131072, 200, {'resources:%s' % PCI: '2'}),
    ('pt1-192cpu', 192, 65536, 100, {'pci_passthrough:alias': 'h100:1'}),
    ('vgpu1', 4, 16384, 40, {'resources:VGPU': '1'}),
    ('vgpu2', 8, 32768, 80, {'resources:VGPU': '2'}),
    ('vgpu4', 16, 65536, 160, {'resources:VGPU': '4'}),
    ('vgpu1-bigmem', 4, 196608, 40, {'resources:VGPU': '1'}),
]


def flavor_specs(count):
    """COUNT flavor definitions: BASE_FLAVORS, then vCPU variants."""
    found = []
    for i in range(count):
        name, vcpus, ram, disk, specs = BASE_FLAVORS[i % len(BASE_FLAVORS)]
        if i >= len(BASE_FLAVORS):
            name = '%s-v%d' % (name, i // len(BASE_FLAVORS))
            vcpus += i // len(BASE_FLAVORS)
        found.append((name, vcpus, ram, disk, dict(specs)))
    return found


# -- flavors -----------------------------------------------------------------

def create_flavors(conn, count, tag):
    created = []
    for name, vcpus, ram, disk, specs in flavor_specs(count):
        flavor = conn.compute.create_flavor(
            name='%s%s-%s' % (FLAVOR_PREFIX, tag, name), vcpus=vcpus,
            ram=ram, disk=disk, is_public=False)
        created.append(flavor)
        conn.compute.create_flavor_extra_specs(flavor, specs)
    return created


def delete_flavors(conn, flavors):
    for flavor in flavors:
        try:
            conn.compute.delete_flavor(flavor, ignore_missing=True)
        except openstack.exceptions.SDKException as exc:
            print('could not delete flavor %s: %s (delete it with '
                  '"openstack flavor delete %s")'
                  % (flavor.name, exc, flavor.id), file=sys.stderr)


# -- hosts -------------------------------------------------------------------

def seeded_roots(placement):
    providers = placement.get('/resource_providers').json()
    return sum(1 for rp in providers['resource_providers']
               if SEED_ROOT.match(rp['name']))


def seed(count):
    t, _ = timed(subprocess.run, [TESTCLOUD, 'seed-hosts', str(count)],
                 check=True)
    print('seeded up to %d simulated GPU hosts in %.1f s' % (count, t))


def add_synthetic_hypervisors(cloud):
    """One hypervisor entry per seeded root that none maps to; how many.

    Stands in for the nova-compute service a real host would have, in the
    Cloud only: a hypervisor entry (host name = root provider name, id =
    root uuid, as compute API 2.53 gives it; no service entry, so no
    filter removes it) and the traits nova-compute puts on its root
    and its other providers (``OWNER_NOVA``, which Nova's request
    requires, and ``COMPUTE_NODE`` on the root) in their provider
    summaries. Placement is not written (its seeded
    providers stay invisible to Nova's scheduler) and the reads stay what
    they were; the fit counts then run over these trees.
    """
    mapped = {hv['id'] for hv in cloud.hypervisors}
    summaries = cloud.placement.summaries
    added = 0
    for uuid_, rp in sorted(cloud.placement.providers.items()):
        if rp['parent'] is None and SEED_ROOT.match(rp['name'] or '') and (
                uuid_ not in mapped):
            cloud.hypervisors.append({
                'id': uuid_, 'hypervisor_hostname': rp['name'],
                'service': {'host': rp['name'], 'id': None},
                'state': 'up', 'status': 'enabled'})
            for member in cloud.placement.providers_in_trees([uuid_]):
                if member in summaries:
                    summaries[member]['traits'] = sorted(
                        set(summaries[member].get('traits') or ())
                        | set(NOVA_ROOT_TRAITS if member == uuid_
                              else NOVA_TRAITS))
            added += 1
    return added


# -- gpuclient -----------------------------------------------------------

def gpuclient_read(new_client, counter, runs):
    """(median API time, median requests, last Cloud, project id)."""
    times, requests = [], []
    cloud = project_id = None
    for _ in range(runs):
        gpu = new_client()
        counter.count = 0
        start = time.perf_counter()
        project_id = gpu.current_project_id()
        cloud = snapshot.read(gpu, with_flavors=True, mapped_only=True)
        times.append(time.perf_counter() - start)
        requests.append(counter.count)
    return statistics.median(times), statistics.median(requests), cloud, \
        project_id


def gpuclient_compute(cloud, settings, project_id, flavor_ids, runs):
    """(median CPU seconds of capacity.rows, rows, {flavor: total fits})."""
    cpu = []
    rows = []
    for _ in range(runs):
        start = time.process_time()
        rows = capacity.rows(cloud, settings, project_id,
                             wanted_flavors=set(flavor_ids))
        cpu.append(time.process_time() - start)
    totals = {}
    for row in rows:
        totals[row['flavor']] = totals.get(row['flavor'], 0) + row['fits']
    return statistics.median(cpu), rows, totals


# -- the os-capacity approach ------------------------------------------------

def flavor_resources(flavor):
    """The flavor's resources as one group: {class: amount}."""
    found = {'VCPU': flavor['vcpus'], 'MEMORY_MB': flavor['ram'],
             'DISK_GB': flavor['disk']}
    for key, value in (flavor.get('extra_specs') or {}).items():
        prefix, _sep, rc = key.partition(':')
        if rc and re.match(r'^resources\d*$', prefix):
            found[rc] = found.get(rc, 0) + int(value)
    return {rc: n for rc, n in found.items() if n}


def os_capacity_count(answer, resources):
    """What os-capacity makes of one answer: the sum over every provider
    summary of min(free // asked) over the asked classes it has."""
    total = 0
    for summary in (answer.get('provider_summaries') or {}).values():
        counts = [
            (item['capacity'] - item['used']) // resources[rc]
            for rc, item in summary['resources'].items()
            if resources.get(rc)]
        if counts:
            total += min(counts)
    return total


def os_capacity(compute, placement, counter, flavor_ids):
    """Times and counts of the os-capacity approach (see the module)."""
    counter.count = 0
    start = time.perf_counter()
    # one GET /flavors/detail, private ones too (ours are), specs inline
    flavors = compute.get('/flavors/detail', params={'is_public': 'None'},
                          microversion='2.61').json()['flavors']
    for flavor in flavors:
        flavor['extra_specs'] = flavor.get('extra_specs') or {}
    query_time = time.perf_counter()
    answers = {}
    for flavor in flavors:
        if flavor['id'] not in flavor_ids:
            continue
        resources = flavor_resources(flavor)
        answer = placement.get('/allocation_candidates', params={
            'resources': ','.join('%s:%d' % item
                                  for item in sorted(resources.items())),
            'required': '!COMPUTE_STATUS_DISABLED',
            'limit': NO_LIMIT,
        }, microversion=OS_CAPACITY_VERSION).json()
        answers[flavor['name']] = os_capacity_count(answer, resources), {
            s['root_provider_uuid'] for s in
            answer['provider_summaries'].values()}
    queries = time.perf_counter() - query_time
    query_requests = counter.count
    providers = placement.get(
        '/resource_providers', microversion='1.14').json()[
            'resource_providers']
    in_answers = set()
    for _count, roots in answers.values():
        in_answers |= roots
    roots_time = 0.0
    for rp in providers:
        base = '/resource_providers/%s' % rp['uuid']
        t0 = time.perf_counter()
        placement.get(base + '/usages', microversion='1.19').json()
        placement.get(base + '/inventories', microversion='1.19').json()
        if rp['uuid'] in in_answers:
            roots_time += time.perf_counter() - t0
    return {
        'time': time.perf_counter() - start,
        'requests': counter.count,
        'queries': queries,
        'query_requests': query_requests,
        'providers': len(providers),
        'roots_in_answers': len(in_answers),
        'roots_time': roots_time,
        'counts': {name: count for name, (count, _r) in answers.items()},
    }


# -- one host count ----------------------------------------------------------

def measure(args, compute, placement, counter, new_client, flavors,
            hosts):
    have = seeded_roots(placement)
    if hosts and have < hosts:
        print('seeding %d simulated GPU hosts (have %d)...' % (hosts, have))
        seed(hosts)
        have = seeded_roots(placement)
    print('\n== %d seeded GPU hosts in Placement%s ==' % (
        have, '' if not hosts or have == hosts else
        ' (asked %d: more were there already)' % hosts))
    # warm up: token, catalog, microversion negotiation
    snapshot.read(new_client(), with_flavors=True, mapped_only=True)
    api_time, requests, cloud, project_id = gpuclient_read(
        new_client, counter, args.runs)
    added = add_synthetic_hypervisors(cloud)
    ids = [f.id for f in flavors]
    settings = nova_settings.read_settings(args.nova_conf)
    cpu, rows, totals = gpuclient_compute(cloud, settings, project_id, ids,
                                          args.compute_runs)
    if args.no_os_capacity:
        oscap = {'time': float('nan'), 'requests': 0, 'query_requests': 0,
                 'queries': float('nan'), 'providers': 0, 'counts': {},
                 'roots_in_answers': 0, 'roots_time': float('nan')}
    else:
        oscap = os_capacity(compute, placement, counter, set(ids))

    print('hosts counted: %d (%d synthetic hypervisor entries for seeded '
          'roots); GPU flavors in the cloud: %d; rows for the %d bench '
          'flavors: %d' % (
              len(cloud.host_roots()), added,
              len(capacity.gpu_flavors(cloud.flavors or [], cloud.pools)),
              len(flavors), len(rows)))
    print('%-40s %12s %12s' % ('flavor', 'gpuclient', 'os-capacity'))
    for flavor in flavors:
        print('%-40s %12d %12d' % (flavor.name, totals.get(flavor.name, 0),
                                   oscap['counts'].get(flavor.name, 0)))
    print('(fits: more instances that fit now; os-capacity\'s figure sums '
          'min(free // asked) over every provider of its one-group answer)')
    for note in cloud.placement.notes():
        print('note: %s' % note)
    print('gpuclient snapshot.read (API time, median of %d): %.3f s, '
          '%d HTTP requests' % (args.runs, api_time, requests))
    print('gpuclient capacity.rows (CPU time, median of %d): %.3f s'
          % (args.compute_runs, cpu))
    print('os-capacity approach: %.3f s, %d HTTP requests (%d flavor '
          'list + allocation-candidates queries in %.3f s; %d providers '
          'x usages + inventories)' % (
              oscap['time'], oscap['requests'], oscap['query_requests'],
              oscap['queries'], oscap['providers']))
    print('  of which per-provider reads of the %d roots in its answers: '
          '%.3f s' % (oscap['roots_in_answers'], oscap['roots_time']))
    lower = oscap['queries'] + oscap['roots_time']
    print('ratio: os-capacity / gpuclient API time = %.1fx (%.1fx against '
          'its queries plus root reads only)' % (
              oscap['time'] / api_time, lower / api_time))
    print('aim: <= 2 s of API time at 5,000 hosts: %.3f s at %d (%s)' % (
        api_time, have, 'met' if api_time <= 2 else 'NOT met'))
    return {'hosts': have, 'api_time': api_time, 'requests': requests,
            'oscap_requests': oscap['requests']}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--hosts', type=int, nargs='+', default=[5000],
                        metavar='N',
                        help='simulated GPU hosts to seed, one measurement '
                        'per count, ascending (default 5000; 0 to use the '
                        'cloud as it is)')
    parser.add_argument('--flavors', type=int, default=len(BASE_FLAVORS),
                        help='GPU flavors to create (default %d)'
                        % len(BASE_FLAVORS))
    parser.add_argument('--runs', type=int, default=5,
                        help='runs of the gpuclient read (median; '
                        'default 5)')
    parser.add_argument('--compute-runs', type=int, default=1,
                        help='runs of capacity.rows (median; default 1)')
    parser.add_argument('--cloud', default=os.environ.get('OS_CLOUD'),
                        help='cloud name in clouds.yaml (default OS_CLOUD)')
    parser.add_argument('--nova-conf', metavar='<file>', action='append',
                        help='nova.conf-style file with the scheduler\'s '
                        'settings, as "gpu capacity list --nova-conf" '
                        '(repeat option for several; default $%s, else the '
                        'test cloud\'s %s)' % (nova_settings.CONF_ENV,
                                               TESTCLOUD_NOVA_CONF))
    parser.add_argument('--no-os-capacity', action='store_true',
                        help='skip the os-capacity comparison (minutes at '
                        '5,000 hosts): gpuclient figures only')
    parser.add_argument('--remove-seeded', action='store_true',
                        help='run "tools/testcloud seed-hosts --remove" at '
                        'the end (default: leave the seeded hosts)')
    args = parser.parse_args()
    if not args.cloud:
        sys.exit('set OS_CLOUD (eval "$(tools/testcloud env)")')
    if not args.nova_conf and not os.environ.get(nova_settings.CONF_ENV) \
            and os.path.exists(TESTCLOUD_NOVA_CONF):
        args.nova_conf = [TESTCLOUD_NOVA_CONF]
    if min(args.flavors, args.runs, args.compute_runs) < 1:
        sys.exit('--flavors, --runs and --compute-runs must be at least 1')
    # SIGTERM (a CI timeout) unwinds like Ctrl-C, so the flavors go
    signal.signal(signal.SIGTERM, lambda *_a: sys.exit(143))

    conn = openstack.connect(cloud=args.cloud)
    placement, compute = (adapter.Adapter(
        conn.session, service_type=service,
        region_name=conn.config.get_region_name(service),
        interface=conn.config.get_interface(service),
    ) for service in ('placement', 'compute'))

    def new_client():
        # a fresh client layer per run, as each `openstack` process has
        return client.GpuClient(
            conn.session, conn,
            region_name=conn.config.get_region_name('placement'),
            interface=conn.config.get_interface('placement'),
        )

    counter = Counter(conn.session)
    flavors = []
    results = []
    try:
        flavors = create_flavors(conn, args.flavors, uuid.uuid4().hex[:6])
        for hosts in sorted(args.hosts):
            results.append(measure(args, compute, placement, counter,
                                   new_client, flavors, hosts))
        start = time.perf_counter()
        subprocess.run(
            ['openstack', '--os-cloud', args.cloud, 'gpu', 'capacity',
             'list', '-f', 'value'] + [
                 item for path in args.nova_conf or ()
                 for item in ('--nova-conf', path)],
            check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        print('\nwhole CLI run (openstack gpu capacity list; it reads the '
              'seeded trees but counts no fits there, as they have no '
              'hypervisor): %.2f s' % (time.perf_counter() - start))
    finally:
        delete_flavors(conn, flavors)
    if len(results) > 1:
        counts = ', '.join('%d at %d hosts' % (r['requests'], r['hosts'])
                           for r in results)
        same = len({r['requests'] for r in results}) == 1
        print('gpuclient requests: %s: %s' % (
            counts, 'independent of the host count' if same else
            'NOT independent of the host count'))
        print('os-capacity requests: %s' % ', '.join(
            '%d at %d hosts' % (r['oscap_requests'], r['hosts'])
            for r in results))
    if args.remove_seeded:
        subprocess.run([TESTCLOUD, 'seed-hosts', '--remove'], check=True)
    else:
        print('the seeded hosts stay in Placement: "tools/testcloud '
              'seed-hosts --remove" deletes them')


if __name__ == '__main__':
    main()
