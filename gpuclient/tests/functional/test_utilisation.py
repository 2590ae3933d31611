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

"""``--utilisation`` against the test cloud's real Prometheus.

tools/testcloud runs Debian's Prometheus, scraping every second the DCGM
exporter stand-in (tools/cloud/dcgm_exporter.py), which serves the devices
of the JSON file named by GPUCLIENT_DCGM_DEVICES: a test writes the
readings the hardware would give, then asks gpuclient. Host-side readings
(vGPU: ``Hostname`` + ``pci_bus_id`` of the pGPU Nova named the provider
after) and guest-side ones (passthrough: the ``instance_id`` label that
``openstack_sd_configs`` relabelling gives) are joined by gpuclient to the
servers that Nova and Placement say hold the devices. A cloud without the
stand-in (a devstack gate) skips.
"""

import datetime
import http.server
import json
import os
import re
import subprocess
import threading
import time

import openstack
import requests

from gpuclient.tests.functional import base

DEVICES = os.environ.get('GPUCLIENT_DCGM_DEVICES')
# the window the states are judged over: only readings written by the test
WINDOW = 8
PROMTOOL = '/usr/bin/promtool'


def _iso(epoch):
    """Epoch seconds as the ISO 8601 UTC time gpuclient's options take."""
    return datetime.datetime.fromtimestamp(
        epoch, datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%S.%fZ')


class TestUtilisation(base.FunctionalTestCase):
    # its hosts: lane B's (base.LANES), beside the fault matrices
    lane = 'b'

    def setUp(self):
        super().setUp()
        if not DEVICES:
            reason = ('no DCGM exporter stand-in on this cloud (set '
                      'GPUCLIENT_DCGM_DEVICES to its devices file)')
            if os.environ.get('GPUCLIENT_FT_NO_SKIP') == '1':
                self.fail(reason)
            self.skipTest(reason)

    def write_devices(self, devices):
        """Serve DEVICES from now on; none again at cleanup."""
        self.addCleanup(self._write, [])
        self._write(devices)

    def _write(self, devices):
        tmp = DEVICES + '.tmp'
        with open(tmp, 'w') as out:
            json.dump({'devices': devices}, out)
        os.replace(tmp, DEVICES)

    def make_pool(self, mode, host, *extra):
        name = self.unique_name(mode)
        self.addCleanup(self.delete_pool, name)
        self.openstack('gpu', 'pool', 'create', name, '--mode', mode,
                       '--host', host, *extra, parse=False)
        return name

    def prometheus(self, query, when=None):
        """The result of QUERY, from the cloud's Prometheus (its HTTP
        API), evaluated at WHEN (epoch seconds; None: now)."""
        url = openstack.config.OpenStackConfig().get_one(
            cloud=base.ADMIN_CLOUD).config['prometheus_endpoint']
        params = {'query': query}
        if when is not None:
            params['time'] = '%.3f' % when
        answer = requests.get(url + '/api/v1/query', params=params,
                              timeout=10)
        answer.raise_for_status()
        return answer.json()['data']['result']

    def wait_scraped(self, series, when):
        """Wait (bounded) until Prometheus holds a sample of SERIES at or
        after WHEN (epoch seconds), then assert once."""
        def newest():
            found = self.prometheus('timestamp(%s)' % series)
            return max((float(r['value'][1]) for r in found), default=0)

        newest = self.wait_for('%s scraped past %s' % (series, _iso(when)),
                               newest, lambda found: found >= when,
                               timeout=max(0, when - time.time()) + 30,
                               interval=1)
        self.assertGreaterEqual(newest, when, series)

    def pgpu_address(self, server):
        """The PCI address (0000:84:00.0) of the pGPU whose provider holds
        SERVER's vGPU, from Placement and the provider's name."""
        rows = self.openstack('resource', 'provider', 'allocation', 'show',
                              server['id'])
        uuids = [r['resource_provider'] for r in rows
                 if 'VGPU' in r['resources']]
        self.assertEqual(1, len(uuids), rows)
        name = self.openstack('resource', 'provider', 'show',
                              uuids[0])['name']
        match = re.search(r'pci_([0-9a-f]{4})_([0-9a-f]{2})_([0-9a-f]{2})_'
                          r'([0-7])$', name)
        self.assertIsNotNone(match, name)
        return '%s:%s:%s.%s' % match.groups()

    @base.needs('passthrough', 'vgpu')
    def test_idle_busy_unknown_in_two_modes(self):
        start = datetime.datetime.now(datetime.timezone.utc)
        pt_flavor = self.make_flavor(self.make_pool(
            'passthrough', self.pt_host, '--alias', 'h100', '--pci-id',
            '10de:2331'))
        pt_idle, pt_busy, pt_none = (self.boot(pt_flavor) for _i in
                                     range(3))
        # one vGPU server alone on each vGPU host: the card's figure is
        # that server's
        v_idle = self.boot(self.make_flavor(self.make_pool(
            'vgpu', self.vgpu_host, '--vgpu-type', 'nvidia-35')))
        self.use_spare(self.vgpu_host2)
        v_busy = self.boot(self.make_flavor(self.make_pool(
            'vgpu', self.vgpu_host2, '--vgpu-type', 'nvidia-35')))

        def guest(server, util):
            return {'hostname': server['name'], 'gpu': 0,
                    'pci_bus_id': '00000000:05:00.0', 'util': util,
                    'fb_used': 1000, 'labels': {'instance_id': server['id']}}

        def host(host, server, util):
            return {'hostname': host, 'gpu': 0, 'util': util,
                    'fb_used': 2000,
                    'pci_bus_id': '0000' + self.pgpu_address(server)}

        written = time.time()
        self.write_devices([
            guest(pt_idle, 1), guest(pt_busy, 90),
            host(self.vgpu_host, v_idle, 2),
            host(self.vgpu_host2, v_busy, 75)])
        # one scrape reads every device: the samples of pt_busy's series
        # (new with its server) are the scrapes of the readings written
        series = 'DCGM_FI_DEV_GPU_UTIL{instance_id="%s"}' % pt_busy['id']
        # the window is judged at an explicit time (--at), one that
        # Prometheus has scraped past and whose window holds only the
        # readings just written: a handshake with Prometheus, no sleep
        at = written + WINDOW + 1
        self.wait_scraped(series, at)
        rows = self.openstack('gpu', 'server', 'list', '--all-projects',
                              '--utilisation', '--window', '%ds' % WINDOW,
                              '--at', _iso(at))
        states = {r['ID']: r['State'] for r in rows}
        self.assertEqual(
            {'idle': [pt_idle['id'], v_idle['id']],
             'busy': [pt_busy['id'], v_busy['id']],
             'unknown': [pt_none['id']]},
            {state: [s['id'] for s in (pt_idle, v_idle, pt_busy, v_busy,
                                       pt_none) if states.get(s['id'])
                     == state]
             for state in ('idle', 'busy', 'unknown')}, rows)
        busy = [r for r in rows if r['ID'] == pt_busy['id']][0]
        self.assertEqual((90.0, 90.0, 'guest'),
                         (busy['Mean Util %'], busy['Peak Util %'],
                          busy['Source']))
        # --idle keeps the idle ones
        idle = self.openstack('gpu', 'server', 'list', '--all-projects',
                              '--idle', '--window', '%ds' % WINDOW,
                              '--at', _iso(at))
        self.assertEqual(sorted([pt_idle['id'], v_idle['id']]),
                         sorted(r['ID'] for r in idle
                                if r['ID'] in states))

        # usage: GPU-hours split into used, idle and unknown. Its buckets
        # are a minute long and aligned on the minute (Prometheus's
        # subquery steps): the period ends (--end) at the minute that
        # closes the bucket of the first scrape of the readings, once
        # Prometheus has scraped past it (Nova counts hours up to now)
        first = self.prometheus(series + '[5m]', at)[0]['values'][0][0]
        end = -(-first // 60) * 60
        self.wait_scraped(series, end)
        usage = self.openstack(
            'gpu', 'usage', 'list', '--utilisation',
            '--start', start.strftime('%Y-%m-%dT%H:%M:%S'),
            '--end', _iso(end), '--by', 'pool')
        self.assertTrue(usage)
        for row in usage:
            parts = (row['Used GPU Hours'] + row['Idle GPU Hours']
                     + row['Unknown GPU Hours'])
            self.assertAlmostEqual(row['GPU Hours'], parts, places=2,
                                   msg=row)
        self.assertTrue(any(r['Idle GPU Hours'] > 0 for r in usage), usage)
        self.assertTrue(any(r['Used GPU Hours'] > 0 for r in usage), usage)

        # the doctor names the idle servers (the exporter still serves the
        # same readings) and no busy one
        rc, out, err = self.openstack_raw(
            'gpu', 'check', '--check', 'gpu-idle', '--window',
            '%ds' % WINDOW, '-f', 'json')
        self.assertIn(rc, (0, 1), err)
        objects = ' '.join(row['Object'] for row in json.loads(out))
        for server in (pt_idle, v_idle):
            self.assertIn(server['id'], objects)
        for server in (pt_busy, v_busy):
            self.assertNotIn(server['id'], objects)

    def test_prometheus_down_is_one_line_and_exit_1(self):
        rc, out, err = self.openstack_raw(
            'gpu', 'server', 'list', '--utilisation', '--prometheus',
            'http://127.0.0.1:9')
        self.assertEqual(1, rc, out)
        self.assertNotIn('Traceback', err)
        self.assertIn('127.0.0.1:9', err)
        self.assertEqual(1, len(err.strip().splitlines()), err)

    @base.needs('vgpu')
    def test_capacity_openmetrics_is_scraped_and_queried_back(self):
        if not os.path.exists(PROMTOOL):
            self.skipTest('no %s (apt-get install prometheus)' % PROMTOOL)
        pool = self.make_pool('vgpu', self.vgpu_host, '--vgpu-type',
                              'nvidia-35')
        flavor = self.make_flavor(pool)
        rc, out, err = self.openstack_raw('gpu', 'capacity', 'list',
                                          '--pool', pool, '-f',
                                          'openmetrics')
        self.assertEqual(0, rc, err)
        # Prometheus' linter on both shapes (per pool; per host with the
        # --long metrics)
        rc, per_host, err = self.openstack_raw(
            'gpu', 'capacity', 'list', '--pool', pool, '--per-host',
            '--long', '-f', 'openmetrics')
        self.assertEqual(0, rc, err)
        for text in (out, per_host):
            checked = subprocess.run([PROMTOOL, 'check', 'metrics'],
                                     input=text, capture_output=True,
                                     text=True)
            self.assertEqual((0, ''), (checked.returncode,
                                       checked.stdout + checked.stderr),
                             text)
        self.assertIn('gpuclient_flavor_hosts_fitting{', per_host)
        fits = [line for line in out.splitlines()
                if line.startswith('gpuclient_flavor_fits{')
                and 'flavor="%s"' % flavor in line]
        self.assertEqual(1, len(fits), out)
        expected = float(fits[0].rsplit(' ', 1)[1])
        # the test cloud's Prometheus scrapes 127.0.0.1:9401 every second
        # (job gpuclient-capacity): serve the text there until it is read
        # back through Prometheus's query API
        body = out.encode()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's name
                self.send_response(200)
                self.send_header('Content-Type', 'application/openmetrics-'
                                 'text; version=1.0.0; charset=utf-8')
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        server = http.server.ThreadingHTTPServer(('127.0.0.1', 9401),
                                                 Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        url = openstack.config.OpenStackConfig().get_one(
            cloud=base.ADMIN_CLOUD).config['prometheus_endpoint']
        query = 'gpuclient_flavor_fits{flavor="%s"}' % flavor

        def scraped():
            answer = requests.get(url + '/api/v1/query',
                                  params={'query': query}, timeout=10)
            return answer.json()['data']['result']

        found = self.wait_for('%s scraped' % query, scraped, bool,
                              timeout=30, interval=1)
        self.assertEqual(1, len(found), query)
        self.assertEqual(expected, float(found[0]['value'][1]))
        self.assertEqual(pool, found[0]['metric']['pool'])
