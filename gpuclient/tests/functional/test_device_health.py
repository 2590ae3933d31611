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

"""GPU health from the DCGM exporter against the test cloud (issue 39).

The test cloud's Prometheus scrapes, every second, the DCGM exporter
stand-in (tools/cloud/dcgm_exporter.py), which serves the devices of the
JSON file named by GPUCLIENT_DCGM_DEVICES: a test writes what the hardware
would report (an XID, a driver version, a guest's licence state) and reads
the effect through gpuclient. The proof of who holds a device is what Nova
and Placement say, read with plain ``openstack`` commands.

Other tests write the same file: a test adds its own devices (tagged with
its id) and removes only those at cleanup.
"""

import calendar
import json
import os
import re
import time
import uuid

import openstack
import requests
from testtools import content

from gpuclient.tests.functional import base

DEVICES = os.environ.get('GPUCLIENT_DCGM_DEVICES')
# the window an application's XID counts as recent in: only readings the
# test wrote
WINDOW = '30s'
WINDOW_SECONDS = 30
# how much longer than the time since a test's first write a window must
# be to start before it: gpu check's own time to its Prometheus query
# (seconds), however loaded the machine
LATENCY_MARGIN = 60
# how long Prometheus may take to scrape what a test wrote
SCRAPE_TIMEOUT = 30
# the test cloud Prometheus' job of the stand-in (tools/cloud/metrics.py)
DCGM_JOB = os.environ.get('GPUCLIENT_DCGM_JOB', 'dcgm')


class DcgmTestCase(base.FunctionalTestCase):

    def setUp(self):
        super().setUp()
        if not DEVICES:
            reason = ('no DCGM exporter stand-in on this cloud (set '
                      'GPUCLIENT_DCGM_DEVICES to its devices file)')
            if os.environ.get('GPUCLIENT_FT_NO_SKIP') == '1':
                self.fail(reason)
            self.skipTest(reason)
        self.tag = 't39dev-%s' % uuid.uuid4().hex[:8]
        self.first_written = None

    def _update(self, devices):
        """Replace this test's devices in the shared file by DEVICES."""
        try:
            with open(DEVICES) as src:
                document = json.load(src)
        except (OSError, ValueError):
            document = {'devices': []}
        kept = [d for d in document.get('devices') or ()
                if d.get('owner') != self.tag]
        document['devices'] = kept + [dict(d, owner=self.tag)
                                      for d in devices]
        tmp = '%s.%s.tmp' % (DEVICES, self.tag)
        with open(tmp, 'w') as out:
            json.dump(document, out)
        os.replace(tmp, DEVICES)
        # a scrape that starts from now reads this file (the stand-in
        # reads it on every request)
        self.written = time.time()
        if devices and self.first_written is None:
            self.first_written = self.written

    def window(self):
        """The health window of this test's reads: from its first write
        (whole seconds, at least 2) to now, at most WINDOW. Prometheus
        keeps an earlier test's series of the same GPU (another UUID)
        within WINDOW of its last sample; a window that starts at this
        test's first write leaves them out."""
        if self.first_written is None:
            return WINDOW
        since = int(time.time() - self.first_written) + 2
        return '%ds' % min(since, WINDOW_SECONDS)

    def wait_served(self):
        """Wait (bounded) until Prometheus has scraped the stand-in since
        the last write (its job's ``up`` sample), then assert once: from
        then on its newest samples are the file's, what gpuclient reads."""
        def scraped():
            # the time of the last successful scrape (timestamp() of a
            # plain selector: a computed one's would be the query's time)
            found = self.prometheus(
                'timestamp(up{job="%(job)s"}) and on(job, instance) '
                'up{job="%(job)s"} == 1' % {'job': DCGM_JOB})
            return max((float(r['value'][1]) for r in found), default=0)

        last = self.wait_for('a scrape of the DCGM stand-in', scraped,
                             lambda when: when >= self.written,
                             timeout=SCRAPE_TIMEOUT, interval=base.POLL)
        self.assertGreaterEqual(last, self.written, 'no scrape since the '
                                'devices were written')

    def write_devices(self, devices):
        """Serve DEVICES from now on (besides other tests' devices);
        removed at cleanup."""
        self.addCleanup(self._update, [])
        self._update(devices)

    def make_pool(self, mode, host, *extra):
        name = self.unique_name('t39dev-' + mode)
        self.addCleanup(self.delete_pool, name)
        self.openstack('gpu', 'pool', 'create', name, '--mode', mode,
                       '--host', host, *extra, parse=False)
        return name

    def device_of(self, server, rc_prefix):
        """(provider uuid, provider name) holding SERVER's device of a
        resource class starting with RC_PREFIX, as Placement says."""
        rows = self.openstack('resource', 'provider', 'allocation', 'show',
                              server['id'])
        found = [r['resource_provider'] for r in rows
                 if any(rc.startswith(rc_prefix) for rc in r['resources'])]
        self.assertEqual(1, len(found), rows)
        return found[0], self.openstack('resource', 'provider', 'show',
                                        found[0])['name']

    def gpus(self, host):
        """{PCI address: provider name} of the GPU providers Placement
        has in HOST's tree (vGPU pGPUs: <node>_pci_0000_84_00_0;
        passthrough: <node>_0000:41:00.0)."""
        found = {}
        for rp in self.openstack('resource', 'provider', 'list',
                                 '--os-placement-api-version', '1.14',
                                 '--in-tree', self.root_provider(host)):
            match = re.search(r'_(?:pci_)?([0-9a-fA-F]{4})[:_]([0-9a-fA-F]'
                              r'{2})[:_]([0-9a-fA-F]{2})[._]([0-7])$',
                              rp['name'])
            if match:
                found['%s:%s:%s.%s' % match.groups()] = rp['name']
        return {pci.lower(): name for pci, name in found.items()}

    def check(self, *names, window=None):
        """{(check, object): finding} of ``gpu check --check NAMES``
        (which exits 0 or 1) and its exit status."""
        args = [a for name in names for a in ('--check', name)]
        rc, out, err = self.openstack_raw('gpu', 'check', *args,
                                          '--window', window or self.window(),
                                          '-f', 'json')
        self.assertIn(rc, (0, 1), err)
        return rc, {(r['Check'], r['Object']): r for r in json.loads(out)}

    def prometheus(self, query):
        """The result of an instant PromQL QUERY, from the cloud's
        Prometheus itself (its HTTP API)."""
        url = openstack.config.OpenStackConfig().get_one(
            cloud=base.ADMIN_CLOUD).config['prometheus_endpoint']
        answer = requests.get(url + '/api/v1/query',
                              params={'query': query}, timeout=10)
        answer.raise_for_status()
        return answer.json()['data']['result']

    def until(self, read, done, what):
        """READ() (Prometheus) until DONE(result), bounded (Prometheus
        scrapes every second), then assert once."""
        result = self.wait_for(what, read, done, timeout=SCRAPE_TIMEOUT,
                               interval=base.POLL * 2)
        self.assertTrue(done(result), '%s: %s' % (what, result))
        return result


def pci_of(provider_name):
    """The PCI address a passthrough provider's name ends with (Nova:
    <node>_0000:41:00.0), lower-case."""
    return provider_name.rsplit('_', 1)[1].lower()


class TestDeviceHealth(DcgmTestCase):
    # its hosts: lane B's (base.LANES), beside the fault matrices
    lane = 'b'

    @base.needs('passthrough')
    def test_xid_79_on_a_held_gpu_is_unhealthy_with_its_server(self):
        pool = self.make_pool('passthrough', self.pt_host, '--alias',
                              'h100', '--pci-id', '10de:2331')
        server = self.boot(self.make_flavor(pool))
        held_uuid, held_name = self.device_of(server, 'CUSTOM_PCI_')
        held = pci_of(held_name)
        # a free GPU of the same host, healthy
        root = self.root_provider(self.pt_host)
        others = [rp for rp in self.openstack(
            'resource', 'provider', 'list', '--os-placement-api-version',
            '1.14', '--in-tree', root) if rp['uuid'] not in (root,
                                                             held_uuid)]

        def unhealthy():
            return self.openstack('gpu', 'device', 'list', '--host',
                                  self.pt_host, '--unhealthy', '--window',
                                  self.window())

        # the healthy one: a GPU no XID in the window marks yet (an
        # earlier test's XID on this host stays in Prometheus' window)
        marked = {r['PCI Address'] for r in unhealthy()}
        others = [pci_of(rp['name']) for rp in others]
        others = [pci for pci in others if pci not in marked]
        self.assertTrue(others, 'every other GPU of %s has an XID in the '
                        'window' % self.pt_host)
        healthy = others[0]

        def card(gpu, pci, **fields):
            return dict(hostname=self.pt_host, gpu=gpu,
                        pci_bus_id='0000' + pci, driver='550.90.07',
                        row_remap_failure=0, health=0, **fields)

        self.write_devices([card(0, held, xid=79), card(1, healthy, xid=0)])

        self.wait_served()
        rows = unhealthy()
        self.assertIn(held, [r['PCI Address'] for r in rows],
                      'XID 79 not shown')
        row = [r for r in rows if r['PCI Address'] == held][0]
        # who holds it, as Nova says
        nova = self.openstack('server', 'show', server['id'])
        self.assertEqual([server['name']], row['Server'])
        self.assertEqual([nova['project_id']], row['Project'])
        self.assertEqual((79, 'reboot the host', '550.90.07'),
                         (row['Last XID'], row['XID Action'],
                          row['Driver Version']))
        self.assertNotIn(healthy, [r['PCI Address'] for r in rows])

        # the held card replaced (an RMA swap: another UUID at its
        # address, served by the same exporter, reset): judged by the new
        # card, though the old one's series is in the window too
        self.write_devices([card(0, held, xid=0, reset=1,
                                 uuid='GPU-%s-new' % self.tag),
                            card(1, healthy, xid=0)])
        self.wait_served()
        window = int(time.time() - self.first_written) + LATENCY_MARGIN
        rc, out, err = self.openstack_raw(
            'gpu', 'device', 'list', '--host', self.pt_host, '--long',
            '--window', '%ds' % window, '-f', 'json')
        self.assertEqual(0, rc, err)
        row = [r for r in json.loads(out) if r['PCI Address'] == held][0]
        self.assertEqual((0, 'host', 'pass'),
                         (row['Last XID'], row['Health Source'],
                          row['Health']), row)
        self.assertNotIn(held, err)


def bus_id(pci):
    """DCGM's pci_bus_id of a PCI address (0000:84:00.0)."""
    return '0000' + pci.upper()


def host_series(host, pci):
    """The PromQL selector of the host-side XID gauge of HOST's GPU PCI."""
    return 'DCGM_FI_DEV_XID_ERRORS{Hostname="%s",pci_bus_id="%s"}' % (
        host, bus_id(pci))


def epoch(text):
    """ISO 8601 UTC ('2024-05-01T10:00:00Z') as epoch seconds."""
    return calendar.timegm(time.strptime(text, '%Y-%m-%dT%H:%M:%SZ'))


class TestXidClasses(DcgmTestCase):
    """Whose an XID is, when it came, and what a GPU a guest holds
    through passthrough looks like from the host (issue 51)."""

    # its hosts: lane B's (base.LANES), beside the fault matrices
    lane = 'b'

    def run_start(self, selector, value):
        """When the series SELECTOR served now last took VALUE, from
        Prometheus' own samples of the last 5 minutes (a gap of more than
        5 s, one scrape a second, is a break: the series was not served;
        an earlier test's series of the same GPU ended before)."""
        found = self.prometheus(selector + '[5m]')
        self.assertTrue(found, selector)
        live = max(found, key=lambda series: series['values'][-1][0])
        start = previous = None
        for when, text in live['values']:
            if float(text) != value or (previous is not None
                                        and when - previous > 5):
                start = None
            if float(text) == value and start is None:
                start = when
            previous = when
        self.assertIsNotNone(start, found)
        return start

    def value_now(self, selector):
        found = self.prometheus(selector)
        return [float(r['value'][1]) for r in found]

    @base.needs('passthrough')
    def test_xids_by_class_dated_by_the_change_and_a_passthrough_gpu(self):
        pool = self.make_pool('passthrough', self.pt_host, '--alias',
                              'h100', '--pci-id', '10de:2331')
        server = self.boot(self.make_flavor(pool))
        _uuid, held_name = self.device_of(server, 'CUSTOM_PCI_')
        held = pci_of(held_name)
        nova = self.openstack('server', 'show', server['id'])
        self.assertEqual(self.pt_host, nova['OS-EXT-SRV-ATTR:host'])
        gpus = sorted(self.gpus(self.pt_host))
        # a free GPU of the host (an earlier test's XID at its address is
        # in other series: see cards)
        sick = [pci for pci in gpus if pci != held][0]
        server_label = 'server %s (%s)' % (server['name'], server['id'])
        held_label = 'device %s %s' % (self.pt_host, held)
        sick_label = 'device %s %s' % (self.pt_host, sick)
        guest = {'hostname': server['name'], 'gpu': 0,
                 'pci_bus_id': '00000000:05:00.0', 'xid': 0,
                 'labels': {'instance_id': server['id']}}

        def cards(**by_pci):
            # with a label of this test's own (as a Kubernetes exporter's
            # pod label changes when it restarts): its series are new to
            # Prometheus, so an earlier test's XID at the same address
            # (lane B's tests follow one another on this host) does not
            # date this test's change before its first write
            return [dict(hostname=self.pt_host, gpu=i,
                         pci_bus_id=bus_id(pci), labels={'pod': self.tag},
                         **by_pci.get(pci, {'xid': 0}))
                    for i, pci in enumerate(gpus)]

        # the held GPU's host-side gauge takes 13 (an illegal address in
        # the tenant's kernel), a free one 79 (fallen off the bus)
        self.write_devices(cards(**{held: {'xid': 13}, sick: {'xid': 79}})
                           + [guest])
        names = ('gpu-unhealthy', 'gpu-application-xid')
        wanted = {('gpu-application-xid', server_label),
                  ('gpu-unhealthy', sick_label)}
        self.wait_served()
        # the window: from a margin before this test's first write to the
        # query, however long gpu check takes to reach Prometheus (the
        # 13 is recent while its change is in it). A window that starts
        # at the first write, as self.window(), starts after it when the
        # command is slow (run 7 on a loaded machine: the 13 read as held
        # through the window, not recent). No other test writes a 13, and
        # the sick GPU held no XID in the last 10 minutes.
        window = int(time.time() - self.first_written) + LATENCY_MARGIN
        # the date's precision: the window's step (one of 240 points)
        step = -(-window // 240)
        _rc, got = self.check(*names, window='%ds' % window)
        self.assertEqual(set(), wanted - set(got), 'the XIDs not found')
        self.addDetail('check', content.text_content(repr(got)))
        # 13 is the project's (Nova's project of the server), no cordon
        app = got[('gpu-application-xid', server_label)]
        self.assertEqual('warning', app['Severity'])
        self.assertIn('server %s of project %s holds took XID 13' % (
            server['name'], nova['project_id']), app['Symptom'])
        self.assertIn('tell project %s' % nova['project_id'], app['Fix'])
        self.assertNotIn(('gpu-unhealthy', held_label), got)
        # 79 is the host's, dated by the change of the gauge as
        # Prometheus holds it (a window of 30 s: one-second steps)
        sick_row = got[('gpu-unhealthy', sick_label)]
        self.assertEqual('error', sick_row['Severity'])
        since = re.search(r'XID 79 since (\S+Z)',
                          sick_row['Symptom']).group(1)
        first = self.run_start(host_series(self.pt_host, sick), 79)
        self.assertTrue(first <= epoch(since) <= first + step,
                        (first, since, step))
        app_since = epoch(re.search(r'XID 13 since (\S+Z)',
                                    app['Symptom']).group(1))

        # the window passes; the gauges hold their XIDs (as DCGM's do)
        time.sleep(max(0.0, app_since + WINDOW_SECONDS + 2 - time.time()))
        self.assertEqual([13.0], self.value_now(host_series(self.pt_host,
                                                            held)))
        self.assertEqual([79.0], self.value_now(host_series(self.pt_host,
                                                            sick)))
        # a window of WINDOW_SECONDS that ends later still (the query's
        # time) starts after the 13 came
        _rc, got = self.check(*names, window=WINDOW)
        # the application's aged out; the host's stays, dated by the same
        # change (to the minute once out of the window)
        self.assertNotIn(('gpu-application-xid', server_label), got)
        self.assertNotIn(('gpu-unhealthy', held_label), got)
        later = epoch(re.search(
            r'XID 79 since (\S+Z)',
            got[('gpu-unhealthy', sick_label)]['Symptom']).group(1))
        self.assertTrue(first <= later <= first + 60, (first, later))

        # a GPU reset: the gauge back at 0, the finding gone
        self.write_devices(cards(**{held: {'xid': 13}, sick: {
            'xid': 0, 'reset': 1}}) + [guest])
        self.until(lambda: self.value_now(host_series(self.pt_host, sick)),
                   lambda got: got == [0.0], 'the reset not scraped')
        _rc, got = self.check(*names)
        self.assertNotIn(('gpu-unhealthy', sick_label), got)

        # the held GPU bound to vfio-pci: the host's DCGM no longer serves
        # it, the guest's exporter reports: not missing
        self.write_devices(cards(**{held: {'absent': True}}) + [guest])
        self.until(lambda: (self.value_now(host_series(self.pt_host, held)),
                            self.value_now('DCGM_FI_DEV_XID_ERRORS{'
                                           'instance_id="%s"}'
                                           % server['id'])),
                   lambda got: got == ([], [0.0]), 'vfio-pci not scraped')
        _rc, got = self.check('gpu-missing')
        named = [key for key, row in got.items()
                 if held in row['Symptom'] or held in key[1]]
        self.assertEqual([], named)
        # and with its guest silent too: not judged, never an error
        self.write_devices(cards(**{held: {'absent': True}}))
        self.until(lambda: self.value_now('DCGM_FI_DEV_XID_ERRORS{'
                                          'instance_id="%s"}' % server['id']),
                   lambda got: got == [], 'the silent guest not scraped')
        _rc, got = self.check('gpu-missing')
        named = [(row['Severity'], row['Symptom'].startswith('not judged'))
                 for row in got.values() if held_label in row['Symptom']]
        self.assertEqual([('warning', True)], named)
        self.assertNotIn(('gpu-missing', 'host %s' % self.pt_host), got)


class TestCheckDevices(DcgmTestCase):
    # its hosts: lane B's (base.LANES), beside the fault matrices
    lane = 'b'

    @base.needs('vgpu', 'passthrough')
    def test_check_names_xid_licence_driver_drift_and_missing_gpu(self):
        """... and a vGPU guest's own report of XID 79 is its word, no
        host verdict (issue 51 item 3); a GPU gone is named by address
        though DCGM serves as many as Placement offers (item 5)."""
        pool = self.make_pool('vgpu', self.vgpu_host, '--host',
                              self.vgpu_host2, '--vgpu-type', 'nvidia-35')
        server = self.boot(self.make_flavor(pool))
        pool_hosts = set(self.openstack('aggregate', 'show',
                                        pool)['hosts'])
        self.assertEqual({self.vgpu_host, self.vgpu_host2}, pool_hosts)
        drivers = {self.vgpu_host: '550.90.07',
                   self.vgpu_host2: '535.216.01'}
        pt_gpus = sorted(self.gpus(self.pt_host))
        self.assertGreaterEqual(len(pt_gpus), 2, pt_gpus)
        # an address DCGM serves on the passthrough host that Placement
        # does not offer there
        extra = '0000:ee:00.0'
        self.assertNotIn(extra, pt_gpus)
        server_label = 'server %s (%s)' % (server['name'], server['id'])
        self.write_devices(
            # the guest's exporter, labelled with its server's id: no
            # licence, and its own word of XID 79 and a failed watch
            [{'hostname': server['name'], 'gpu': 0,
              'pci_bus_id': '00000000:05:00.0', 'licence': 0, 'xid': 79,
              'health': 20, 'labels': {'instance_id': server['id']}}]
            # every pGPU of the pool's hosts, each host on its driver,
            # healthy as the host's DCGM sees it
            + [{'hostname': host, 'gpu': i, 'pci_bus_id': bus_id(pci),
                'xid': 0, 'health': 0, 'driver': driver}
               for host, driver in sorted(drivers.items())
               for i, pci in enumerate(sorted(self.gpus(host)))]
            # the passthrough host (enabled, taking servers): its first
            # GPU reports XID 79, its last fell off the bus, and DCGM
            # serves one GPU Placement does not offer: as many as offered
            + [{'hostname': self.pt_host, 'gpu': i,
                'pci_bus_id': bus_id(pci), 'xid': 79 if i == 0 else 0,
                'absent': pci == pt_gpus[-1]}
               for i, pci in enumerate(pt_gpus)]
            + [{'hostname': self.pt_host, 'gpu': len(pt_gpus),
                'pci_bus_id': bus_id(extra), 'xid': 0}])

        def check():
            return self.check('gpu-unhealthy', 'gpu-vgpu-licence',
                              'gpu-driver-drift', 'gpu-missing')

        wanted = {('gpu-vgpu-licence', server_label),
                  ('gpu-driver-drift', 'pool %s' % pool),
                  ('gpu-missing', 'host %s' % self.pt_host),
                  ('gpu-unhealthy', 'device %s %s' % (self.pt_host,
                                                      pt_gpus[0])),
                  ('gpu-unhealthy', server_label)}
        self.wait_served()
        rc, rows = check()
        self.assertEqual(set(), wanted - set(rows),
                         'gpu check did not name them')
        self.assertEqual(1, rc)  # errors found
        drift, missing, unhealthy, guest, licence = (
            rows[key] for key in sorted(wanted))
        # where the server is now, as Nova says (other tests drain hosts)
        nova = self.openstack('server', 'show', server['id'])
        # the card Placement allocated it, healthy in the host's series
        _uuid, pgpu = self.device_of(server, 'VGPU')
        card = [pci for pci, name in self.gpus(
            nova['OS-EXT-SRV-ATTR:host']).items() if name == pgpu][0]
        self.assertEqual([0.0], [float(r['value'][1]) for r in self.prometheus(
            host_series(nova['OS-EXT-SRV-ATTR:host'], card))])
        # the guest's word: a warning, marked so, no host verdict
        self.assertEqual('warning', guest['Severity'])
        self.assertIn('XID 79', guest['Symptom'])
        self.assertIn('the guest\'s report', guest['Symptom'])
        self.assertNotIn('cordon', guest['Fix'])
        self.assertNotIn(('gpu-unhealthy', 'device %s %s' % (
            nova['OS-EXT-SRV-ATTR:host'], card)), rows)
        self.assertEqual([], [r for r in self.openstack(
            'gpu', 'device', 'list', '--host', nova['OS-EXT-SRV-ATTR:host'],
            '--unhealthy', '--window', self.window())
            if r['PCI Address'] == card])
        # the XID on a GPU of a host still taking servers: the cordon fix
        self.assertIn('XID 79', unhealthy['Symptom'])
        self.assertEqual(
            'openstack gpu host cordon %(h)s; openstack gpu host drain '
            '%(h)s; then reboot the host' % {'h': self.pt_host},
            unhealthy['Fix'])
        # the server and project Nova says
        self.assertIn('project %s' % nova['project_id'], licence['Symptom'])
        self.assertIn('on %s' % nova['OS-EXT-SRV-ATTR:host'],
                      licence['Symptom'])
        # each host of the pool Nova holds, on its version
        for host, driver in drivers.items():
            self.assertIn('%s on %s' % (driver, host), drift['Symptom'])
        # Placement offers every GPU, DCGM serves as many, one of them
        # not offered: the one gone is named by its address
        self.assertIn('Placement offers at %s (it serves %s' % (
            pt_gpus[-1], extra), missing['Symptom'])
        self.assertIn('openstack gpu host cordon %s' % self.pt_host,
                      missing['Fix'])
