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

import json
import os
import re
import time
import uuid

from gpuclient.tests.functional import base

DEVICES = os.environ.get('GPUCLIENT_DCGM_DEVICES')
# the window an XID counts as recent in: only readings the test wrote
WINDOW = '30s'
# how long Prometheus may take to scrape what a test wrote
SCRAPE_TIMEOUT = 30


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

    def until(self, read, done, what):
        """READ() until DONE(result) (Prometheus scrapes every second)."""
        deadline = time.time() + SCRAPE_TIMEOUT
        while True:
            result = read()
            if done(result) or time.time() > deadline:
                break
            time.sleep(base.POLL * 2)
        self.assertTrue(done(result), '%s: %s' % (what, result))
        return result


def pci_of(provider_name):
    """The PCI address a passthrough provider's name ends with (Nova:
    <node>_0000:41:00.0), lower-case."""
    return provider_name.rsplit('_', 1)[1].lower()


class TestDeviceHealth(DcgmTestCase):

    @base.needs('passthrough')
    def test_xid_79_on_a_held_gpu_is_unhealthy_with_its_server(self):
        pool = self.make_pool('passthrough', base.PT_HOST, '--alias',
                              'h100', '--pci-id', '10de:2331')
        server = self.boot(self.make_flavor(pool))
        held_uuid, held_name = self.device_of(server, 'CUSTOM_PCI_')
        held = pci_of(held_name)
        # a free GPU of the same host, healthy
        root = self.root_provider(base.PT_HOST)
        others = [rp for rp in self.openstack(
            'resource', 'provider', 'list', '--os-placement-api-version',
            '1.14', '--in-tree', root) if rp['uuid'] not in (root,
                                                             held_uuid)]

        def unhealthy():
            return self.openstack('gpu', 'device', 'list', '--host',
                                  base.PT_HOST, '--unhealthy', '--window',
                                  WINDOW)

        # the healthy one: a GPU no XID in the window marks yet (an
        # earlier test's XID on this host stays in Prometheus' window)
        marked = {r['PCI Address'] for r in unhealthy()}
        others = [pci_of(rp['name']) for rp in others]
        others = [pci for pci in others if pci not in marked]
        self.assertTrue(others, 'every other GPU of %s has an XID in the '
                        'window' % base.PT_HOST)
        healthy = others[0]

        def card(gpu, pci, **fields):
            return dict(hostname=base.PT_HOST, gpu=gpu,
                        pci_bus_id='0000' + pci, driver='550.90.07',
                        row_remap_failure=0, health=0, **fields)

        self.write_devices([card(0, held, xid=79), card(1, healthy, xid=0)])

        rows = self.until(unhealthy, lambda rows: any(
            r['PCI Address'] == held for r in rows), 'XID 79 not shown')
        row = [r for r in rows if r['PCI Address'] == held][0]
        # who holds it, as Nova says
        nova = self.openstack('server', 'show', server['id'])
        self.assertEqual([server['name']], row['Server'])
        self.assertEqual([nova['project_id']], row['Project'])
        self.assertEqual((79, 'reboot the host', '550.90.07'),
                         (row['Last XID'], row['XID Action'],
                          row['Driver Version']))
        self.assertNotIn(healthy, [r['PCI Address'] for r in rows])


def bus_id(pci):
    """DCGM's pci_bus_id of a PCI address (0000:84:00.0)."""
    return '0000' + pci.upper()


class TestCheckDevices(DcgmTestCase):

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

    @base.needs('vgpu', 'passthrough')
    def test_check_names_xid_licence_driver_drift_and_missing_gpu(self):
        pool = self.make_pool('vgpu', base.VGPU_HOST, '--host',
                              base.VGPU_HOST2, '--vgpu-type', 'nvidia-35')
        server = self.boot(self.make_flavor(pool))
        pool_hosts = set(self.openstack('aggregate', 'show',
                                        pool)['hosts'])
        self.assertEqual({base.VGPU_HOST, base.VGPU_HOST2}, pool_hosts)
        drivers = {base.VGPU_HOST: '550.90.07',
                   base.VGPU_HOST2: '535.216.01'}
        pt_gpus = sorted(self.gpus(base.PT_HOST))
        self.assertGreaterEqual(len(pt_gpus), 2, pt_gpus)
        self.write_devices(
            # the guest's exporter, labelled with its server's id
            [{'hostname': server['name'], 'gpu': 0,
              'pci_bus_id': '00000000:05:00.0', 'licence': 0,
              'labels': {'instance_id': server['id']}}]
            # every pGPU of the pool's hosts, each host on its driver
            + [{'hostname': host, 'gpu': i, 'pci_bus_id': bus_id(pci),
                'xid': 0, 'driver': driver}
               for host, driver in sorted(drivers.items())
               for i, pci in enumerate(sorted(self.gpus(host)))]
            # the passthrough host (enabled, taking servers): its first
            # GPU reports XID 79, its last fell off the bus
            + [{'hostname': base.PT_HOST, 'gpu': i,
                'pci_bus_id': bus_id(pci), 'xid': 79 if i == 0 else 0,
                'absent': pci == pt_gpus[-1]}
               for i, pci in enumerate(pt_gpus)])

        def check():
            rc, out, err = self.openstack_raw(
                'gpu', 'check', '--check', 'gpu-unhealthy', '--check',
                'gpu-vgpu-licence', '--check',
                'gpu-driver-drift', '--check', 'gpu-missing', '--window',
                WINDOW, '-f', 'json')
            self.assertIn(rc, (0, 1), err)
            return rc, {(r['Check'], r['Object']): r
                        for r in json.loads(out)}

        wanted = {('gpu-vgpu-licence',
                   'server %s (%s)' % (server['name'], server['id'])),
                  ('gpu-driver-drift', 'pool %s' % pool),
                  ('gpu-missing', 'host %s' % base.PT_HOST),
                  ('gpu-unhealthy', 'device %s %s' % (base.PT_HOST,
                                                      pt_gpus[0]))}
        rc, rows = self.until(check, lambda got: wanted <= set(got[1]),
                              'gpu check did not name them')
        self.assertEqual(1, rc)  # errors found
        drift, missing, unhealthy, licence = (rows[key]
                                              for key in sorted(wanted))
        # where the server is now, as Nova says (other tests drain hosts)
        nova = self.openstack('server', 'show', server['id'])
        # the XID on a GPU of a host still taking servers: the cordon fix
        self.assertIn('XID 79', unhealthy['Symptom'])
        self.assertEqual(
            'openstack gpu host cordon %(h)s; openstack gpu host drain '
            '%(h)s; then reboot the host' % {'h': base.PT_HOST},
            unhealthy['Fix'])
        # the server and project Nova says
        self.assertIn('project %s' % nova['project_id'], licence['Symptom'])
        self.assertIn('on %s' % nova['OS-EXT-SRV-ATTR:host'],
                      licence['Symptom'])
        # each host of the pool Nova holds, on its version
        for host, driver in drivers.items():
            self.assertIn('%s on %s' % (driver, host), drift['Symptom'])
        # Placement offers every GPU, DCGM sees one fewer
        self.assertIn('sees %d of the %d GPUs' % (len(pt_gpus) - 1,
                                                 len(pt_gpus)),
                      missing['Symptom'])
        self.assertIn(pt_gpus[-1], missing['Symptom'])
        self.assertIn('openstack gpu host cordon %s' % base.PT_HOST,
                      missing['Fix'])
