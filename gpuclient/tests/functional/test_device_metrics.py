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

"""``gpu device list -f openmetrics`` on the real cloud (issue 39 item 3).

One server on a passthrough GPU; the exposition must pass Prometheus' own
linter (``promtool check metrics``) and its series for that server must
carry what Nova and Placement say: the server, its project and flavor, the
compute host and hypervisor hostname Nova placed it on, and the PCI
address of the device Placement allocated to it, in DCGM's format.
"""

import re
import shutil
import subprocess

from prometheus_client.openmetrics import parser as om_parser

from gpuclient.tests.functional import base


def assert_promtool_passes(test, text):
    """``promtool check metrics`` finds nothing in TEXT (where promtool
    is installed: Debian's prometheus package)."""
    promtool = shutil.which('promtool')
    if promtool:
        proc = subprocess.run([promtool, 'check', 'metrics'],
                              input=text, capture_output=True, text=True)
        test.assertEqual((0, ''), (proc.returncode,
                                   proc.stdout + proc.stderr), text)


class TestDeviceMetrics(base.FunctionalTestCase):

    def make_pool(self):
        name = self.unique_name('t39met-pt')
        self.addCleanup(self.delete_pool, name)
        self.openstack('gpu', 'pool', 'create', name, '--mode',
                       'passthrough', '--host', base.PT_HOST, '--alias',
                       'h100', '--pci-id', '10de:2331', parse=False)
        return name

    def allocated_address(self, server):
        """The PCI address ('0000:41:00.0') of the device provider Placement
        allocated to SERVER, from the provider's name."""
        rows = self.openstack('resource', 'provider', 'allocation', 'show',
                              server['id'])
        uuids = [r['resource_provider'] for r in rows
                 if any(rc.startswith('CUSTOM_PCI_')
                        for rc in r['resources'])]
        self.assertEqual(1, len(uuids), rows)
        name = self.openstack('resource', 'provider', 'show',
                              uuids[0])['name']
        return name.rsplit('_', 1)[1].lower()

    @base.needs('passthrough')
    def test_openmetrics_names_the_server_nova_placed(self):
        pool = self.make_pool()
        server = self.boot(self.make_flavor(pool))
        rc, text, err = self.openstack_raw(
            'gpu', 'device', 'list', '--host', base.PT_HOST, '-f',
            'openmetrics')
        self.assertEqual(0, rc, err)
        assert_promtool_passes(self, text)

        series = [s.labels for f in om_parser.text_string_to_metric_families(
            text) if f.name == 'gpuclient_device_info' for s in f.samples]
        mine = [s for s in series if s['instance_id'] == server['id']]
        self.assertEqual(1, len(mine), text)
        found = mine[0]
        # what Nova says of the server (admin view, the compute API that
        # embeds the flavor)
        nova = self.openstack('--os-compute-api-version', base.COMPUTE_API,
                              'server', 'show', server['id'])
        address = self.allocated_address(server)
        domain, bus, device, function = re.match(
            r'^([0-9a-f]{4}):([0-9a-f]{2}):([0-9a-f]{2})\.([0-7])$',
            address).groups()
        self.assertEqual({
            'server': nova['name'],
            'project': nova['project_id'],
            'flavor': nova['flavor']['original_name'],
            'host': nova['OS-EXT-SRV-ATTR:host'],
            'hostname': nova['OS-EXT-SRV-ATTR:hypervisor_hostname'],
            'pci_bus_id': ('0000%s:%s:%s.%s' % (domain, bus, device,
                                                function)).upper(),
            'state': 'in-use',
        }, {k: found[k] for k in ('server', 'project', 'flavor', 'host',
                                  'hostname', 'pci_bus_id', 'state')})
        self.assertIn(pool, found['pool'].split('; '))
