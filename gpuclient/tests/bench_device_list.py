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

"""What ``gpu device list`` (and ``-f openmetrics``) reads, by the number
of hosts: requests to Placement, Nova and Prometheus.

No cloud: a simulated one in this process, the unit tests' strict fakes
(gpuclient.tests.unit.fakes: Placement over HTTP through requests_mock,
Nova behind the SDK proxy) with HOSTS hosts, half passthrough hosts with 4
GPUs, half vGPU hosts with 2 pGPUs of 4 vGPUs, and SERVERS servers holding
a GPU (default 10, the same at every host count), plus a Prometheus that
answers every query with an empty vector. For each host count it runs
``device_ops.collect`` (everything the command reads) without and with
Prometheus and prints the requests of each service, the wall time (in
this process most of it is the fakes' own work, not a figure of a real
cloud) and the number of gpuclient_device_info series -f openmetrics
writes. The read cost must not grow
with the number of hosts or devices: only with the devices in use (one
allocation read each, concurrently), which --servers varies.

A benchmark that prints figures, not a gate (tox -e bench runs it). It
lives beside the tests, not in tools/, because it runs on their fakes (only
gpuclient.tests imports gpuclient.tests: tools/layers.py); tools/' own
benchmarks seed the test cloud's Placement, whose trees have no hypervisor
and so are no device rows. test_device_metrics.TestReadCost is its gate.

    python -m gpuclient.tests.bench_device_list --hosts 50 500 5000
"""

import argparse
import sys
import time

PROM = 'http://prometheus.bench:9090'
# the PromQL queries of the device health, one per metric (and when the
# XID gauge took its value)
QUERIES = ('xid', 'xid_since', 'xid_since_before', 'row_remap_failure',
           'uncorrectable_remapped_rows', 'health', 'util')


def build(hosts, servers):
    from gpuclient.tests.unit import fakes

    cloud = fakes.FakeCloud()
    for i in range(hosts):
        if i % 2:
            cloud.vgpu_host('bench-vgpu-%d' % i)
        else:
            cloud.pci_host('bench-pt-%d' % i)
    for i in range(servers):
        host = 'bench-pt-%d' % (2 * i % hosts) if i * 2 < hosts else None
        if host is None:
            break
        cloud.add_server('bench-vm-%d' % i, host,
                         gpus={'CUSTOM_PCI_10DE_2331': 1})
    return cloud


class Prometheus:
    """Every /api/v1/query answered with an empty vector, counted."""

    def __init__(self, mock):
        self.queries = 0
        mock.post(PROM + '/api/v1/query', json=self.answer)

    def answer(self, _request, _context):
        self.queries += 1
        return {'status': 'success',
                'data': {'resultType': 'vector', 'result': []}}


def measure(hosts, servers):
    from gpuclient.ops import device_ops
    from gpuclient.tests.unit import fakes

    cloud = build(hosts, servers)
    placement = fakes.PlacementFixture(cloud)
    manager = fakes.ClientManagerFixture(cloud)
    placement.setUp()
    manager.setUp()
    try:
        prometheus = Prometheus(placement.mock)
        client = manager.gpu
        client.cloud_config = {}
        # the version and class list are read once per process
        device_ops.collect(client)
        found = []
        for url in (None, PROM):
            sent = len(placement.requests())
            nova = len(manager.nova.sent)
            queries = prometheus.queries
            start = time.perf_counter()
            rows, _notes = device_ops.collect(client, url=url)
            took = time.perf_counter() - start
            # the gpuclient_device_info series -f openmetrics writes: one
            # per device and server holding it
            series = sum(max(1, len(r['holders'])) for r in rows)
            found.append((url, len(rows), len(placement.requests()) - sent,
                          len(manager.nova.sent) - nova,
                          prometheus.queries - queries, took, series))
        return found
    finally:
        manager.cleanUp()
        placement.cleanUp()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--hosts', type=int, nargs='+',
                        default=[50, 500, 5000],
                        help='simulated host counts (default 50 500 5000)')
    parser.add_argument('--servers', type=int, default=10,
                        help='servers holding a GPU (default 10)')
    args = parser.parse_args()
    out = sys.stdout
    out.write('%6s %7s %10s %9s %4s %7s %7s %7s\n' % (
        'hosts', 'devices', 'prometheus', 'placement', 'nova', 'queries',
        'read s', 'series'))
    for hosts in args.hosts:
        for (url, devices, placement, nova, queries, took,
             series) in measure(hosts, args.servers):
            out.write('%6d %7d %10s %9d %4d %7d %7.3f %7d\n' % (
                hosts, devices, 'yes' if url else 'no', placement, nova,
                queries, took, series))
        out.flush()


if __name__ == '__main__':
    main()
