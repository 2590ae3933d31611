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

"""``gpu device list -f openmetrics``: gpuclient_device_info, the labels
that join the DCGM exporter's series, read back with Prometheus' parsers.

The rows come from plain device rows (``rules.devices.listing.rows``'
shape) made into the command's cells by ``v1.device``; what the parser
reads back is checked against those rows.
"""

import io
import shutil
import subprocess

from prometheus_client.openmetrics import parser as om_parser
import testtools

from gpuclient import formatters
from gpuclient.rules.devices import metrics as device_metrics
from gpuclient.tests import bench_device_list
from gpuclient.tests.unit.v1 import test_device
from gpuclient.v1 import device

# the metric and its labels, in order: dashboards and the shipped rules
# (etc/prometheus) are written against these; a change is an upgrade note
PINNED = {
    'gpuclient_device_info': (
        'host', 'hostname', 'pci_bus_id', 'provider', 'resource_class',
        'pool', 'state', 'server', 'instance_id', 'project', 'flavor'),
}


def row(host, address, servers=(), state='free', pools=('ws',),
        hypervisor=None, rc='VGPU'):
    """A device row as rules.devices.listing.rows and
    device_metrics.join_fields give it; SERVERS: (name, id, project,
    flavor) tuples."""
    name = '%s_pci_%s' % (host, (address or 'node').replace(':', '_')
                          .replace('.', '_'))
    return {
        'uuid': 'u-' + name, 'name': name, 'host': host,
        'pools': list(pools), 'resource_class': rc, 'pci_address': address,
        'state': state, 'servers': [s[0] for s in servers],
        'server_ids': [s[1] for s in servers],
        'projects': sorted({s[2] for s in servers}), 'total': 1,
        'used': len(servers), 'one_time_use': False, 'traits': [],
        'hypervisor_hostname': hypervisor or host,
        'holders': list(servers),
    }


ROWS = [
    # a time-sliced vGPU card two servers hold
    row('gpu-vgpu-1', '0000:84:00.0', state='in-use', servers=(
        ('vm-a', 'ia', 'p1', 'g1.vgpu'), ('vm-b', 'ib', 'p2', 'g1.vgpu'))),
    row('gpu-vgpu-1', '0000:85:00.0'),
    # passthrough, the hypervisor hostname a FQDN, in two pools
    row('gpu-pt-1', '0000:c1:00.0', state='in-use', pools=('a', 'b'),
        hypervisor='gpu-pt-1.gpu.test', rc='CUSTOM_PCI_10DE_2331',
        servers=(('vm-pt', 'ipt', 'p3', 'g1.h100.1'),)),
    # a bare-metal node: no PCI address
    row('bm-compute-1', None, rc='CUSTOM_BAREMETAL_GPU_H100',
        hypervisor='8be47cea'),
]


def render(rows=ROWS, long=True):
    columns = device.COLUMNS + (device.LONG_COLUMNS if long else ())
    return formatters.render(columns, [device._row(r, long) for r in rows])


def parse(text):
    return {f.name: (f.type, [s.labels for s in f.samples])
            for f in om_parser.text_string_to_metric_families(text)}


class TestDcgmPciBusId(testtools.TestCase):
    def test_addresses(self):
        for address, label in (('0000:84:00.0', '00000000:84:00.0'),
                               ('0000:c1:00.0', '00000000:C1:00.0'),
                               ('0001:0a:1f.7', '00000001:0A:1F.7'),
                               (None, ''), ('', ''), ('node', '')):
            self.assertEqual(label, formatters.dcgm_pci_bus_id(address),
                             address)


class TestJoinFields(testtools.TestCase):
    def test_hypervisor_and_holders(self):
        providers = {
            'root': {'root': 'root', 'name': 'gpu-pt-1.gpu.test'},
            'dev': {'root': 'root', 'name': 'gpu-pt-1.gpu.test_0000:41:00.0'},
        }
        servers = [{'id': 's1', 'name': 'vm1', 'tenant_id': 'p1',
                    'flavor': {'original_name': 'g1.h100.1'}}]
        rows = [{'uuid': 'dev', 'servers': ['vm1', 'gone'],
                 'server_ids': ['s1', 'gone']}]
        found = device_metrics.join_fields(rows, providers, servers)
        self.assertEqual('gpu-pt-1.gpu.test', found[0]['hypervisor_hostname'])
        # a consumer Nova does not list keeps its ID, nothing guessed
        self.assertEqual([('vm1', 's1', 'p1', 'g1.h100.1'),
                          ('gone', 'gone', '', '')], found[0]['holders'])
        # the rows given are not changed
        self.assertNotIn('holders', rows[0])


class TestDeviceInfo(testtools.TestCase):
    def test_metric_and_label_names_are_pinned(self):
        self.assertEqual(PINNED, {f.name: f.labels()
                                  for f in formatters.DEVICE_FAMILIES})
        text, left_out = render()
        self.assertEqual([], left_out)
        parsed = parse(text)
        self.assertEqual(set(PINNED), set(parsed))
        self.assertEqual('gauge', parsed['gpuclient_device_info'][0])
        for labels in parsed['gpuclient_device_info'][1]:
            self.assertEqual(set(PINNED['gpuclient_device_info']),
                             set(labels))

    def test_one_series_per_device_and_server(self):
        found = parse(render()[0])['gpuclient_device_info'][1]
        got = sorted((s['hostname'], s['pci_bus_id'], s['server'],
                      s['instance_id'], s['project'], s['flavor'],
                      s['pool'], s['state']) for s in found)
        self.assertEqual(sorted([
            ('gpu-vgpu-1', '00000000:84:00.0', 'vm-a', 'ia', 'p1',
             'g1.vgpu', 'ws', 'in-use'),
            ('gpu-vgpu-1', '00000000:84:00.0', 'vm-b', 'ib', 'p2',
             'g1.vgpu', 'ws', 'in-use'),
            ('gpu-vgpu-1', '00000000:85:00.0', '', '', '', '', 'ws',
             'free'),
            ('gpu-pt-1.gpu.test', '00000000:C1:00.0', 'vm-pt', 'ipt', 'p3',
             'g1.h100.1', 'a; b', 'in-use'),
            ('8be47cea', '', '', '', '', '', 'ws', 'free'),
        ]), got)
        text = render()[0]
        self.assertIn('gpuclient_device_info{', text)
        self.assertTrue(all(line.endswith(' 1.0')
                            for line in text.splitlines()
                            if line.startswith('gpuclient_device_info{')))

    def test_no_rows(self):
        self.assertEqual('# HELP', render([])[0][:6])

    def test_cloud_and_region_on_every_series(self):
        # issue 51 defect 4: one Prometheus may hold several clouds'
        columns = device.COLUMNS + device.LONG_COLUMNS
        rows = [device._row(r, True) for r in ROWS]
        text = formatters.render(columns, rows, (('cloud', 'prod'),
                                                 ('region', 'RegionOne')))[0]
        found = parse(text)['gpuclient_device_info'][1]
        self.assertEqual(5, len(found))
        for labels in found:
            self.assertEqual(('prod', 'RegionOne'),
                             (labels['cloud'], labels['region']))
        # one not known is left out, not written empty
        text = formatters.render(columns, rows, (('cloud', 'prod'),
                                                 ('region', '')))[0]
        self.assertNotIn('region=', text)
        self.assertEqual({'prod'}, {s['cloud'] for s in parse(text)[
            'gpuclient_device_info'][1]})
        self.assertNotIn('cloud=', render()[0])

    def test_promtool_check_metrics(self):
        promtool = shutil.which('promtool')
        if not promtool:
            self.skipTest('promtool not found (apt-get install prometheus)')
        columns = device.COLUMNS + device.LONG_COLUMNS
        labelled = formatters.render(columns, [
            device._row(r, True) for r in ROWS], (('cloud', 'c'),
                                                  ('region', 'r')))[0]
        for text in (render(ROWS)[0], render([])[0], labelled):
            proc = subprocess.run([promtool, 'check', 'metrics'],
                                  input=text,
                                  capture_output=True, text=True)
            self.assertEqual((0, ''), (proc.returncode,
                                       proc.stdout + proc.stderr))

    def test_without_long_it_says_what_is_missing(self):
        exc = self.assertRaises(formatters.OpenMetricsError, render,
                                ROWS, False)
        self.assertIn('gpuclient_device_info needs Hypervisor Hostname, '
                      'Provider', str(exc))

    def test_server_names_without_holders_are_refused(self):
        columns = device.COLUMNS + device.LONG_COLUMNS
        cells = list(device._row(ROWS[0], True))
        cells[columns.index('Server')] = ['vm-a', 'vm-b']
        exc = self.assertRaises(formatters.OpenMetricsError,
                                formatters.render, columns, [cells])
        self.assertIn('names without the servers behind them', str(exc))


class TestDeviceListCommand(test_device.DeviceTestCase):
    def test_openmetrics_implies_long_and_names_the_server(self):
        cmd = device.ListDevice(self.make_app(self.cm.client_manager), None)
        parsed = self.check_parser(cmd, ['-f', 'openmetrics'])
        columns, data = cmd.take_action(parsed)
        self.assertEqual(device.COLUMNS + device.LONG_COLUMNS, columns)
        out = io.StringIO()
        formatters.OpenMetricsFormatter().emit_list(columns, data, out,
                                                    parsed)
        held = [s for s in parse(out.getvalue())['gpuclient_device_info'][1]
                if s['server']]
        self.assertEqual(
            [('vm1', self.vm['id'], 'gpu.1', 'gpu-otu-1',
              '00000000:42:00.0')],
            [(s['server'], s['instance_id'], s['flavor'], s['host'],
              s['pci_bus_id']) for s in held if s['host'] == 'gpu-otu-1'])
        # the hypervisor hostname, as the DCGM exporter on it names it
        self.assertEqual({'gpu-pt-1.gpu.test'}, {
            s['hostname'] for s in parse(out.getvalue())[
                'gpuclient_device_info'][1] if s['host'] == 'gpu-pt-1'})

    def test_openmetrics_names_the_cloud_and_region(self):
        manager = self.cm.client_manager
        manager._cli_options.name = 'prod'
        manager.region_name = 'RegionOne'
        cmd = device.ListDevice(self.make_app(manager), None)
        parsed = self.check_parser(cmd, ['-f', 'openmetrics'])
        columns, data = cmd.take_action(parsed)
        out = io.StringIO()
        formatters.OpenMetricsFormatter().emit_list(columns, data, out,
                                                    parsed)
        found = parse(out.getvalue())['gpuclient_device_info'][1]
        self.assertEqual({('prod', 'RegionOne')}, {
            (s['cloud'], s['region']) for s in found})
        # OS_* variables alone: openstacksdk names that cloud "envvars",
        # no name of the operator's: left out
        manager._cli_options.name = 'envvars'
        manager.region_name = None
        columns, data = cmd.take_action(parsed)
        out = io.StringIO()
        formatters.OpenMetricsFormatter().emit_list(columns, data, out,
                                                    parsed)
        self.assertNotIn('cloud=', out.getvalue())
        self.assertNotIn('region=', out.getvalue())

    def test_table_without_long_is_unchanged(self):
        cmd = device.ListDevice(self.make_app(self.cm.client_manager), None)
        columns, _data = cmd.take_action(self.check_parser(cmd, []))
        self.assertEqual(device.COLUMNS, columns)


class TestReadCost(testtools.TestCase):
    """The gate of gpuclient.tests.bench_device_list: the requests of gpu
    device list (with and without Prometheus) do not grow with the number
    of hosts and devices, only with the devices in use."""

    def counts(self, hosts, servers):
        return [(devices, placement, nova, queries)
                for _url, devices, placement, nova, queries, _took, _series
                in bench_device_list.measure(hosts, servers)]

    def test_requests_do_not_grow_with_hosts(self):
        small, large = self.counts(10, 2), self.counts(100, 2)
        # ten times the devices, without and with Prometheus ...
        self.assertEqual([30, 30, 300, 300],
                         [c[0] for c in small + large])
        # ... the same requests: Placement, Nova, Prometheus queries
        self.assertEqual([c[1:] for c in small], [c[1:] for c in large])
        self.assertEqual([0, len(bench_device_list.QUERIES)],
                         [c[3] for c in small])

    def test_one_allocation_read_per_device_in_use(self):
        two, four = self.counts(10, 2), self.counts(10, 4)
        self.assertEqual([2, 2], [b[1] - a[1] for a, b in zip(
            two, four, strict=True)])
