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

"""What ``gpu host facts`` and its reader (``host_facts_ops.read``, which
``gpu check``'s host findings call) send, by the number of hosts: requests
to OpenStack and PromQL queries.

No cloud: a simulated one in this process, the unit tests' strict fakes
(gpuclient.tests.unit.fakes: Placement over HTTP through requests_mock,
Nova behind the SDK proxy) with HOSTS passthrough hosts in one pool, each
with 4 GPUs and their audio functions, and a Prometheus (requests_mock too)
holding the host fact series gpuclient-host-facts writes of each (half
naming their host by its FQDN, the hypervisor hostname, half by the
service host). For each host count it runs:

* ``gpu host facts``: ``host_facts_ops.collect`` (everything the command
  reads and the rows it makes);
* the reader alone, over a cloud read as ``gpu check`` reads it
  (``snapshot.read``), which holds the services and hypervisors already;
* ``gpu check`` with its host checks (``check_ops.run``: the snapshot,
  the reader and the checks; its rows are the findings).

It prints the OpenStack requests (Placement's, Nova's raw requests and the
SDK's aggregate and service lists), the PromQL queries, the rows and the
wall time (in this process most of it is the fakes' own work, JSON
included, not a figure of a real cloud). Neither count may grow with the
number of hosts, but for Nova's paged hypervisor list: one request per
page of 1,000 (Nova's [api]max_limit), as every gpuclient read pays.

A benchmark that prints figures, not a gate (tox -e bench runs it); it
lives beside the tests, as bench_device_list does, because it runs on
their fakes (only gpuclient.tests imports gpuclient.tests:
tools/layers.py). test_host_facts_command.TestRequests is its gate.

    python -m gpuclient.tests.bench_host_facts --hosts 50 500 5000
"""

import argparse
import collections
import re
import sys
import time
import urllib.parse

PROM = 'http://prometheus.bench:9090'
GPUS = ('0000:81:00.0', '0000:82:00.0', '0000:c1:00.0', '0000:c2:00.0')
QUERY = re.compile(r'^(gpuclient_host_[a-z_]+)(?:\{.*\})?$')

Measure = collections.namedtuple(
    'Measure', 'what hosts rows openstack queries seconds')


def host_facts(hostname, now):
    """A passthrough host's facts: 4 H100 on vfio-pci, each with its
    audio function in its IOMMU group."""
    from gpuclient.rules.host_facts import shapes

    facts = shapes.HostFacts(hostname, collected_at=now - 60,
                             iommu_cmdline={'intel_iommu': 'on',
                                            'iommu': 'pt'},
                             iommu_active=True, mdevctl=False,
                             nvidia_smi=False)
    for component in ('kernel', 'libvirt', 'qemu', 'nova_compute'):
        facts.versions[component] = shapes.Version('1.0.0', '', 'dpkg')
    for group, address in enumerate(GPUS):
        for function, device, pci_class in ((address, '2331', '030200'),
                                            (address[:-1] + '1', '22ba',
                                             '040300')):
            found = facts.function(function)
            found.vendor_id, found.device_id = '10de', device
            found.pci_class, found.driver = pci_class, 'vfio-pci'
            found.iommu_group = str(group)
            found.numa_node = 0 if address < '0000:c' else 1
    return facts


def build(hosts):
    """(the fake cloud, {family: [result items]} of its hosts' series)."""
    from gpuclient.rules import pools
    from gpuclient.rules.host_facts import series
    from gpuclient.tests.unit import fakes

    cloud = fakes.FakeCloud()
    names = ['bench-%d' % i for i in range(hosts)]
    for name in names:
        cloud.pci_host(name, nodename=name + '.bench.test')
    spec = pools.build_spec('bench', 'passthrough', alias='h100',
                            pci_id='10de:2331')
    cloud.aggregates.append(fakes.Aggregate(
        'bench', pools.metadata_for(spec), names))
    template = series.samples(host_facts('TEMPLATE', time.time()))
    answers = {family.name: [] for family in series.FAMILIES}
    for index, name in enumerate(names):
        label = name + '.bench.test' if index % 2 else name
        instance = '10.%d.%d.%d:9100' % (index >> 16, (index >> 8) & 255,
                                        index & 255)
        for item in template:
            labels = dict(item.labels, Hostname=label, instance=instance,
                          job='node')
            answers[item.name].append({'metric': labels,
                                       'value': [0, repr(item.value)]})
    return cloud, answers


class Prometheus:
    """/api/v1/query answered from the series of ``build`` (any other
    query: no series), counted."""

    def __init__(self, mock, answers):
        self.queries = 0
        self.answers = answers
        mock.post(PROM + '/api/v1/query', json=self.answer)

    def answer(self, request, _context):
        self.queries += 1
        form = dict(urllib.parse.parse_qsl(request.text))
        match = QUERY.match(form['query'])
        # the DCGM queries gpu-driver-drift sends too: no DCGM series here
        return {'status': 'success',
                'data': {'resultType': 'vector',
                         'result': self.answers[match.group(1)]
                         if match else []}}


def _sent(placement, manager):
    """OpenStack requests so far: Placement's, Nova's raw ones, and the
    SDK's aggregate and service lists (one request each)."""
    return (len(placement.requests()) + len(manager.nova.sent)
            + manager.compute.aggregates.call_count
            + manager.compute.services.call_count)


def measure(hosts):
    """[Measure] of gpu host facts and of the reader alone, HOSTS
    hosts."""
    from gpuclient.ops import check_ops
    from gpuclient.ops import host_facts_ops
    from gpuclient.ops import snapshot
    from gpuclient.tests.unit import fakes

    cloud, answers = build(hosts)
    placement = fakes.PlacementFixture(cloud)
    manager = fakes.ClientManagerFixture(cloud)
    placement.setUp()
    manager.setUp()
    try:
        prometheus = Prometheus(placement.mock, answers)
        client = manager.gpu
        client.cloud_config = {'prometheus_endpoint': PROM}
        found = []
        sent, queries = _sent(placement, manager), prometheus.queries
        start = time.perf_counter()
        rows, _notes = host_facts_ops.collect(client)
        found.append(Measure(
            'gpu host facts', hosts, len(rows),
            _sent(placement, manager) - sent,
            prometheus.queries - queries, time.perf_counter() - start))
        # gpu check's read, then the reader over it
        model = snapshot.read(client)
        sent, queries = _sent(placement, manager), prometheus.queries
        start = time.perf_counter()
        host_facts_ops.read(client, model)
        found.append(Measure(
            'reader (gpu check)', hosts, len(model.host_facts or ()),
            _sent(placement, manager) - sent,
            prometheus.queries - queries, time.perf_counter() - start))
        # gpu check --check host-... (each host check): its whole read,
        # the snapshot included, and the findings
        sent, queries = _sent(placement, manager), prometheus.queries
        start = time.perf_counter()
        findings, _not_run = check_ops.run(
            client, names=check_ops.HOST_FACT_CHECKS)
        found.append(Measure(
            'gpu check (hosts)', hosts, len(findings),
            _sent(placement, manager) - sent,
            prometheus.queries - queries, time.perf_counter() - start))
        return found
    finally:
        manager.cleanUp()
        placement.cleanUp()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--hosts', type=int, nargs='+',
                        default=[50, 500, 5000],
                        help='simulated host counts (default 50 500 5000)')
    args = parser.parse_args()
    out = sys.stdout
    out.write('%-20s %6s %6s %9s %7s %7s\n' % (
        'read', 'hosts', 'rows', 'openstack', 'queries', 'read s'))
    for hosts in args.hosts:
        for item in measure(hosts):
            out.write('%-20s %6d %6d %9d %7d %7.3f\n' % item)
        out.flush()
    out.write('(rows: gpu host facts\' rows, the reader\'s hosts with '
              'facts, gpu check\'s findings; '
              'openstack: requests to Nova and Placement, Nova\'s '
              'hypervisor list paged by 1,000)\n')


if __name__ == '__main__':
    main()
