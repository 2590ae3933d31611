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

"""gpuclient's Prometheus reads against a real Prometheus, end to end.

Starts Debian's prometheus and two stand-in DCGM exporters (one host-side
for a vGPU and a MIG host, one guest-side whose scrape job adds the
server's ``instance_id``, as ``openstack_sd_configs`` relabelling would) on
free loopback ports, sets device values, waits for the scrapes, runs
gpuclient's client (gpuclient.cloud.prometheus) and rules
(gpuclient.rules.utilisation) against it, changes a value and looks again,
checks the error of a stopped Prometheus, prints what it got and stops
everything. Every wait is bounded; the whole run takes about half a
minute. Needs ``apt-get install prometheus``; run from the tree:

    python3 tools/check_prometheus.py
"""

import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [TOP, os.path.join(TOP, 'tools', 'cloud')]

import dcgm_exporter  # noqa: E402
import prometheus as prom_server  # noqa: E402

from gpuclient.cloud import prometheus  # noqa: E402
from gpuclient.rules import utilisation  # noqa: E402

SERVER_PT = '6b1c1f4e-7d0a-4d5e-9c43-1f2f0c5b7a01'
HOST = {'hostname': 'gpu-vgpu-1.gpu.test', 'devices': [
    # one vGPU server on card 84 (idle), two on card 85 (busy: shared)
    {'gpu': 0, 'pci_bus_id': '00000000:84:00.0', 'util': 1,
     'fb_used': 2048},
    {'gpu': 1, 'pci_bus_id': '00000000:85:00.0', 'util': 70,
     'fb_used': 8192},
    # a MIG card on another host with two GPU instances, both idle
    {'hostname': 'gpu-mig-1', 'gpu': 0, 'pci_bus_id': '00000000:41:00.0',
     'gpu_instance': 1, 'profile': '1g.10gb', 'engine_active': 0.01,
     'fb_used': 20},
    {'hostname': 'gpu-mig-1', 'gpu': 0, 'pci_bus_id': '00000000:41:00.0',
     'gpu_instance': 2, 'profile': '1g.10gb', 'engine_active': 0.0,
     'fb_used': 10},
]}
GUEST = {'hostname': 'vm-pt', 'devices': [
    {'gpu': 0, 'pci_bus_id': '00000000:06:00.0', 'util': 97,
     'fb_used': 70000}]}

ROWS = [
    {'id': 'v1', 'name': 'vm-v1', 'mode': 'vgpu', 'host': 'gpu-vgpu-1',
     'providers': ['p84']},
    {'id': 'v2', 'name': 'vm-v2', 'mode': 'vgpu', 'host': 'gpu-vgpu-1',
     'providers': ['p85']},
    {'id': 'v3', 'name': 'vm-v3', 'mode': 'vgpu', 'host': 'gpu-vgpu-1',
     'providers': ['p85']},
    {'id': 'm1', 'name': 'vm-m1', 'mode': 'mig', 'host': 'gpu-mig-1',
     'providers': ['m4']},
    {'id': SERVER_PT, 'name': 'vm-pt', 'mode': 'passthrough',
     'host': 'gpu-pt-1', 'providers': ['pt81']},
    {'id': 'nometric', 'name': 'vm-x', 'mode': 'vgpu', 'host': 'gpu-vgpu-9',
     'providers': ['p99']},
]
PROVIDERS = {
    'p84': {'name': 'gpu-vgpu-1_pci_0000_84_00_0', 'root_name':
            'gpu-vgpu-1.gpu.test', 'host': 'gpu-vgpu-1', 'mode': 'vgpu',
            'consumers': ['v1']},
    'p85': {'name': 'gpu-vgpu-1_pci_0000_85_00_0', 'root_name':
            'gpu-vgpu-1.gpu.test', 'host': 'gpu-vgpu-1', 'mode': 'vgpu',
            'consumers': ['v2', 'v3']},
    'm4': {'name': 'gpu-mig-1_pci_0000_41_00_4', 'root_name': 'gpu-mig-1',
           'host': 'gpu-mig-1', 'mode': 'mig', 'consumers': ['m1']},
    'pt81': {'name': 'gpu-pt-1_0000:81:00.0', 'root_name': 'gpu-pt-1',
             'host': 'gpu-pt-1', 'mode': 'passthrough',
             'consumers': [SERVER_PT]},
    'p99': {'name': 'gpu-vgpu-9_pci_0000_99_00_0', 'root_name':
            'gpu-vgpu-9', 'host': 'gpu-vgpu-9', 'mode': 'vgpu',
            'consumers': ['nometric']},
}
# {Nova host: its names}, as utilisation_ops.cloud_hosts gives them: what
# the series are joined to (utilisation.join_answers)
HOSTS = {}
for _provider in PROVIDERS.values():
    HOSTS.setdefault(_provider['host'], {_provider['host']}).add(
        _provider['root_name'])


def write(path, document):
    tmp = path + '.tmp'
    with open(tmp, 'w') as f:
        json.dump(document, f)
    os.replace(tmp, path)  # a scrape never reads half a file


def exporter(path):
    server = dcgm_exporter.serve(path, port=0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return server, '127.0.0.1:%d' % server.server_address[1]


def wait_for(client, promql, count, timeout=30.0):
    """Bounded: until PROMQL gives COUNT series (or TIMEOUT passes)."""
    deadline = time.monotonic() + timeout
    found = []
    while time.monotonic() < deadline:
        found = utilisation.parse_vector(client.query(promql))
        if len(found) >= count:
            return found
        time.sleep(0.5)
    raise RuntimeError('%s: %d series after %.0f s, expected %d' % (
        promql, len(found), timeout, count))


def table(rows):
    print('  %-9s %-20s %-6s %6s %6s %8s %-8s %s' % (
        'server', 'device', 'source', 'mean%', 'peak%', 'fb MiB', 'state',
        'shared by'))
    for r in rows:
        def fmt(v):
            return '-' if v is None else '%.1f' % v
        print('  %-9s %-20s %-6s %6s %6s %8s %-8s %s' % (
            r['id'][:9], r['device'] or '-', r['source'] or '-',
            fmt(r['mean']), fmt(r['peak']), fmt(r['fb_used']), r['state'],
            r['shared_by']))


def run_queries(client, window):
    answers = {name: utilisation.parse_vector(client.query(q))
               for name, q in utilisation.server_queries(window).items()}
    answers, _problems = utilisation.join_answers(answers, HOSTS)
    return utilisation.server_utilisation(
        ROWS, PROVIDERS, utilisation.device_series(answers))


def main():
    t0 = time.monotonic()
    workdir = tempfile.mkdtemp(prefix='gpuclient-prom-')
    host_file = os.path.join(workdir, 'host.json')
    guest_file = os.path.join(workdir, 'guest.json')
    write(host_file, HOST)
    write(guest_file, GUEST)
    host_exporter, host_addr = exporter(host_file)
    guest_exporter, guest_addr = exporter(guest_file)
    server = None
    status = 1
    try:
        with urllib.request.urlopen('http://%s/metrics' % host_addr,
                                    timeout=5) as answer:
            text = answer.read()
        check = subprocess.run(['promtool', 'check', 'metrics'],
                               input=text, capture_output=True, timeout=30)
        print('promtool check metrics (host exporter, %d lines): exit %d %s'
              % (text.count(b'\n'), check.returncode,
                 (check.stdout + check.stderr).decode().strip()))
        server = prom_server.start(os.path.join(workdir, 'prometheus'), [
            prom_server.Target('dcgm-host', [host_addr]),
            prom_server.Target('dcgm-guest', [guest_addr],
                               labels={'instance_id': SERVER_PT}),
        ])
        print('prometheus %s ready after %.1f s (exporters %s, %s)' % (
            server.url, time.monotonic() - t0, host_addr, guest_addr))
        client = prometheus.Prometheus(server.url)
        wait_for(client, 'DCGM_FI_DEV_FB_USED', 5)
        time.sleep(3)  # a few scrapes in the window
        sent = client.sent
        rows = run_queries(client, 60)
        print('after %.1f s, window 60s, %d queries:' % (
            time.monotonic() - t0, client.sent - sent))
        table(rows)
        states = {r['id']: r['state'] for r in rows}

        # card 84 gets busy: its peak over a short window says so
        HOST['devices'][0]['util'] = 85
        write(host_file, HOST)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            time.sleep(1)
            rows = run_queries(client, 60)
            if {r['id']: r['state'] for r in rows}['v1'] == 'busy':
                break
        print('after card 84 went to 85%% (%.1f s):' % (
            time.monotonic() - t0))
        table([r for r in rows if r['id'] == 'v1'])
        changed = {r['id']: r['state'] for r in rows}['v1']

        # usage list's buckets over the last minute (a subquery; the
        # command's step is 60 s or more, 5 s here for a short run)
        time.sleep(3)
        end = datetime.datetime.now(datetime.timezone.utc).replace(
            tzinfo=None)
        period, step = 60, 5
        answers = {name: utilisation.parse_matrix(client.query(
            q, time=utilisation.epoch(end)))
            for name, q in utilisation.usage_queries(period, step).items()}
        answers, _problems = utilisation.join_answers(answers, HOSTS)
        buckets = utilisation.bucket_series(answers)
        print('usage buckets (%ds by %ds): %s' % (period, step, ', '.join(
            '%s/%s%s: %d' % (d['host'] or d['instance_id'], d['pci'],
                             '/GI%s' % d['gpu_instance']
                             if d['gpu_instance'] else '',
                             len(d['points'])) for d in buckets)))
        items = [{'id': 'v1', 'interval': (
            end - datetime.timedelta(seconds=period), end), 'gpus': 1,
            'mode': 'vgpu'}]
        split = utilisation.usage_split(items, PROVIDERS, buckets, step)
        print('v1 over the last %ds: idle %.2f, used %.2f, unknown %.2f '
              '(no samples before the run)' % (
                  period, split['v1'][0], split['v1'][1],
                  1 - sum(split['v1'])))

        server.stop()
        try:
            client.query('up')
            error = 'no error'
        except Exception as exc:  # noqa: BLE001 - printed, checked
            error = '%s: %s' % (type(exc).__name__, exc)
        print('after prometheus stopped: %s' % error)

        expected = {'v1': 'idle', 'v2': 'shared', 'v3': 'shared',
                    'm1': 'idle', SERVER_PT: 'busy', 'nometric': 'unknown'}
        ok = (states == expected and changed == 'busy'
              and split['v1'][0] > 0 and split['v1'][1] > 0
              and 'cannot connect' in error)
        print('%s in %.1f s' % ('OK' if ok else 'MISMATCH %r' % states,
                                time.monotonic() - t0))
        status = 0 if ok else 1
    finally:
        if server is not None:
            server.stop()
        for one in (host_exporter, guest_exporter):
            one.shutdown()
            one.server_close()
        if status == 0:
            shutil.rmtree(workdir, ignore_errors=True)
            print('stopped prometheus and exporters; removed %s' % workdir)
        else:
            print('stopped prometheus and exporters; files kept in %s'
                  % workdir)
    return status


if __name__ == '__main__':
    sys.exit(main())
