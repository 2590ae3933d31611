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

"""Prometheus series joined to this cloud's hosts, and Prometheus answers
of a wrong shape, against the test cloud (issue 51 defects 4 and 11).

A second exporter in the same Prometheus: the DCGM stand-in serves, beside
this cloud's GPU, one of "region B" at the same PCI address of the same
host name (its own UUID, driver and XID, and a label naming the region),
as one Prometheus (or Thanos) over two regions holds them. What
Prometheus holds is read from its HTTP API; what gpuclient makes of it
must be this cloud's GPU only, and with ``--prometheus-selector`` the
region asked for. The devices are those of the second passthrough host,
which no other DCGM test writes.

A wrongly shaped answer: a local HTTP server on 127.0.0.1 that answers
every query with a JSON body whose ``metric`` is a list (a broken
Prometheus or proxy; it stands for no OpenStack service). The rows'
Nova and Placement columns must still be Placement's.
"""

import http.server
import json
import re
import threading
import time

import openstack
from prometheus_client.openmetrics import parser as om_parser
import requests

from gpuclient.tests.functional import base
from gpuclient.tests.functional import test_device_health
from gpuclient.tests.functional import test_device_metrics

HOST = base.PT_HOST2
WINDOW = test_device_health.WINDOW
XID = 'DCGM_FI_DEV_XID_ERRORS'


def prometheus_url():
    return openstack.config.OpenStackConfig().get_one(
        cloud=base.ADMIN_CLOUD).config['prometheus_endpoint']


class TestTwoRegionsOnePrometheus(test_device_health.DcgmTestCase):

    def setUp(self):
        super().setUp()
        self.tag = self.tag.replace('t39dev', 't51pj')

    def gpus(self):
        """{PCI address: (provider name, uuid, resource class)} of the
        GPU providers Placement has in HOST's tree."""
        found = {}
        for rp in self.openstack('resource', 'provider', 'list',
                                 '--os-placement-api-version', '1.14',
                                 '--in-tree', self.root_provider(HOST)):
            match = re.search(r'_([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:'
                              r'[0-9a-fA-F]{2}\.[0-7])$', rp['name'])
            if match:
                found[match.group(1).lower()] = (rp['name'], rp['uuid'])
        return found

    def prometheus(self, query):
        """The result of an instant QUERY, from Prometheus's HTTP API."""
        answer = requests.get(prometheus_url() + '/api/v1/query',
                              params={'query': query}, timeout=10)
        answer.raise_for_status()
        return answer.json()['data']['result']

    def devices(self, *args):
        """(rows by PCI address, stderr) of gpu device list on HOST."""
        rc, out, err = self.openstack_raw(
            'gpu', 'device', 'list', '--host', HOST, '--window', WINDOW,
            '-f', 'json', *args)
        self.assertEqual(0, rc, err)
        return {r['PCI Address']: r for r in json.loads(out)}, err

    def test_another_regions_gpu_is_not_joined_and_a_selector_picks(self):
        self.need_host('passthrough')
        gpus = sorted(self.gpus())
        self.assertGreaterEqual(len(gpus), 2, gpus)
        one, two = gpus[-2:]
        a, b = 'A-' + self.tag, 'B-' + self.tag

        def gpu(address, host, uuid, region, xid, driver):
            return {'hostname': host, 'gpu': 0, 'uuid': uuid, 'xid': xid,
                    'pci_bus_id': test_device_health.bus_id(address),
                    'driver': driver, 'health': 0, 'row_remap_failure': 0,
                    'labels': {'t51region': region}}

        # ONE: this cloud's exporter names the host by its hypervisor
        # hostname, region B's by its own FQDN (same first label); TWO:
        # both name it gpu-pt-2 (region B's NODE_NAME unset)
        self.write_devices([
            gpu(one, self.hypervisor(HOST)['hypervisor_hostname'],
                'GPU-%s-a1' % self.tag, a, 0, 'a-' + self.tag),
            gpu(one, '%s.region-b.example' % HOST, 'GPU-%s-b1' % self.tag,
                b, 79, 'b-' + self.tag),
            gpu(two, HOST, 'GPU-%s-a2' % self.tag, a, 0, 'a-' + self.tag),
            gpu(two, HOST, 'GPU-%s-b2' % self.tag, b, 79, 'b-' + self.tag)])
        # what Prometheus holds: two GPUs at each address, region B's with
        # XID 79
        held = self.until(
            lambda: self.prometheus('%s{UUID=~"GPU-%s-.*"}'
                                    % (XID, self.tag)),
            lambda found: len(found) == 4, 'Prometheus has not scraped them')
        by_uuid = {s['metric']['UUID']: s for s in held}
        self.assertEqual(
            {('GPU-%s-b1' % self.tag, '79', '%s.region-b.example' % HOST),
             ('GPU-%s-b2' % self.tag, '79', HOST)},
            {(u, s['value'][1], s['metric']['Hostname'])
             for u, s in by_uuid.items() if s['metric']['t51region'] == b})

        rows, err = self.devices()
        # ONE: this cloud's GPU only, not region B's XID 79 or driver
        self.assertEqual(('a-' + self.tag, 0), (
            rows[one]['Driver Version'], rows[one]['Last XID']), err)
        # TWO: which is this cloud's is not known, and said
        self.assertEqual(('unknown', 'unknown'), (
            rows[two]['Driver Version'], rows[two]['Last XID']))
        self.assertIn('two exporters report host %s and address %s'
                      % (HOST, two), err)
        self.assertIn('GPU-%s-b2' % self.tag, err)

        # the selector: every query asks for one region's series only
        for region, driver, xid in ((b, 'b-' + self.tag, 79),
                                    (a, 'a-' + self.tag, 0)):
            rows, err = self.devices('--prometheus-selector',
                                     't51region=%s' % region)
            # Prometheus's own answer for that matcher at TWO
            [found] = self.prometheus('%s{t51region="%s",pci_bus_id="%s"}'
                                      % (XID, region,
                                         test_device_health.bus_id(two)))
            self.assertEqual(str(xid), found['value'][1])
            self.assertEqual((driver, xid), (
                rows[two]['Driver Version'], rows[two]['Last XID']), err)
        # region B's FQDN is not this host even when it is all there is
        rows, _err = self.devices('--prometheus-selector', 't51region=' + b)
        self.assertEqual('unknown', rows[one]['Driver Version'])

    def test_openmetrics_names_the_cloud_and_region(self):
        rc, text, err = self.openstack_raw('gpu', 'device', 'list',
                                           '--host', HOST, '-f',
                                           'openmetrics')
        self.assertEqual(0, rc, err)
        series = [s.labels for f in om_parser.text_string_to_metric_families(
            text) if f.name == 'gpuclient_device_info' for s in f.samples]
        self.assertEqual(len(self.gpus()), len(series), text)
        # the cloud the command ran against, and its region as Keystone
        # lists it
        region = openstack.config.OpenStackConfig().get_one(
            cloud=self.cloud).config['region_name']
        self.assertIn(region, [r['Region'] for r in self.openstack(
            'region', 'list')])
        self.assertEqual({(self.cloud, region)}, {
            (s['cloud'], s['region']) for s in series})
        test_device_metrics.assert_promtool_passes(self, text)


class TestWrongShapes(base.FunctionalTestCase):

    def setUp(self):
        super().setUp()
        # every query answered "success", with a metric that is a list
        body = json.dumps({'status': 'success', 'data': {
            'resultType': 'vector', 'result': [
                {'metric': ['Hostname', HOST], 'value': [time.time(),
                                                         '79']}]}}).encode()
        self.answered = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's name
                size = int(self.headers.get('Content-Length') or 0)
                handler.answered.append(self.rfile.read(size))
                self.send_response(200)
                self.send_header('Content-Type', 'application/json')
                self.send_header('Content-Length', str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        handler = self
        server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        self.url = 'http://127.0.0.1:%d' % server.server_address[1]

    def test_not_judged_said_why_and_the_rest_is_placements(self):
        self.need_host('passthrough')
        rc, out, err = self.openstack_raw(
            'gpu', 'device', 'list', '--host', HOST, '--long',
            '--prometheus', self.url, '-f', 'json')
        self.assertEqual(0, rc, err)
        self.assertNotIn('Traceback', err)
        self.assertIn('not judged', err)
        self.assertIn('Prometheus answered a metric that is not an object: '
                      'a list', err)
        self.assertIn('for %s' % XID, err)
        self.assertTrue(self.answered)
        rows = json.loads(out)
        self.assertEqual({'unknown'}, {r['Last XID'] for r in rows})
        # the Nova and Placement columns: Placement's providers of HOST
        placement = {
            rp['uuid']: rp['name'] for rp in self.openstack(
                'resource', 'provider', 'list', '--os-placement-api-version',
                '1.14', '--in-tree', self.root_provider(HOST))
            if rp['uuid'] != self.root_provider(HOST)}
        self.assertEqual(placement, {r['Provider UUID']: r['Provider']
                                     for r in rows})
        for row in rows:
            inventory = {i['resource_class']: i for i in self.openstack(
                'resource', 'provider', 'inventory', 'list',
                row['Provider UUID'])}
            self.assertEqual([row['Resource Class']], list(inventory))
            self.assertEqual(inventory[row['Resource Class']]['total'],
                             row['Total'])
            self.assertEqual(row['Provider'].rsplit('_', 1)[1].lower(),
                             row['PCI Address'])

        # gpu check: the DCGM checks not judged, said why; the others run
        rc, out, err = self.openstack_raw(
            'gpu', 'check', '--check', 'gpu-unhealthy', '--check',
            'pool-drift', '--prometheus', self.url, '-f', 'json')
        self.assertIn(rc, (0, 1), err)
        self.assertNotIn('Traceback', err)
        found = {(r['Check'], r['Object']): r['Symptom']
                 for r in json.loads(out)}
        self.assertIn('not judged: Prometheus answered a metric that is not '
                      'an object: a list', found[('gpu-unhealthy',
                                                  'Prometheus')])
