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

"""``openstack gpu host list`` against a real cloud.

Its figures are checked against what plain OSC commands read from the same
Placement: ``resource provider inventory list`` (capacity is
``(total - reserved) * allocation_ratio``) and ``resource provider usage
show``, with a server holding one passthrough GPU so "used" is not zero.
"""

from gpuclient.tests.functional import base

PCI_CLASS = 'CUSTOM_PCI_10DE_2331'
BM_CLASS = 'CUSTOM_BAREMETAL_GPU_H100'


class TestHostList(base.FunctionalTestCase):
    def host_list(self, *args, cloud=None):
        rows = self.openstack('gpu', 'host', 'list', *args, cloud=cloud)
        return {(r['Host'], r['Resource Class']): r for r in rows}

    def provider_figures(self, names, uuids):
        """(devices, capacity, used) summed over providers named NAMES."""
        total = used = free = 0
        for name in names:
            uuid = uuids[name]
            usages = {
                row['resource_class']: row['usage']
                for row in self.openstack(
                    'resource', 'provider', 'usage', 'show', uuid
                )
            }
            for inv in self.openstack(
                'resource', 'provider', 'inventory', 'list', uuid
            ):
                rc = inv['resource_class']
                if rc in (PCI_CLASS, 'VGPU', BM_CLASS):
                    capacity = int(
                        (inv['total'] - inv['reserved'])
                        * inv['allocation_ratio']
                    )
                    in_use = usages.get(rc, 0)
                    # a node in use is reserved by Nova's Ironic driver:
                    # it still counts as one device, used
                    total += max(capacity, in_use)
                    used += in_use
                    free += max(capacity - in_use, 0)
        return len(names), total, used, free

    @base.needs('passthrough', 'vgpu', 'mig', 'baremetal', 'plain')
    def test_figures_match_placement(self):
        flavor = self.create_flavor({'pci_passthrough:alias': 'h100:1'})
        # a shared cloud (a devstack gate) may hold other servers' GPUs
        used_before = self.host_list('--long')[(base.PT_HOST, PCI_CLASS)][
            'Used']
        server = self.boot(flavor['id'])
        self.assertEqual(base.PT_HOST, server['OS-EXT-SRV-ATTR:host'])

        rows = self.host_list('--long')
        uuids = {
            rp['name']: rp['uuid']
            for rp in self.openstack('resource', 'provider', 'list')
        }
        for key in (
            (base.PT_HOST, PCI_CLASS),
            (base.VGPU_HOST, 'VGPU'),
            (base.MIG_HOST, 'VGPU'),
            (base.BM_HOST, BM_CLASS),
        ):
            self.assertIn(key, rows)
            row = rows[key]
            figures = self.provider_figures(
                row['Device Providers'], uuids
            )
            self.assertEqual(
                figures,
                (row['Devices'], row['Total'], row['Used'], row['Free']),
                key,
            )
        # the booted server holds one more of the passthrough GPUs
        self.assertEqual(used_before + 1,
                         rows[(base.PT_HOST, PCI_CLASS)]['Used'])
        # hosts are Nova service hosts, whatever their providers are named
        self.assertNotIn(base.PLAIN_HOST, {host for host, _ in rows})
        pt_providers = rows[(base.PT_HOST, PCI_CLASS)]['Device Providers']
        self.assertFalse(
            any(name.startswith(base.PT_HOST + '_') for name in pt_providers)
        )

    @base.needs('passthrough', 'plain')
    def test_resource_class_and_formats(self):
        # value format, one column: just the hosts
        out = self.openstack(
            'gpu', 'host', 'list', '-f', 'value', '-c', 'Host', parse=False
        )
        self.assertIn(base.PT_HOST, out.split())
        # a class that is not a GPU by default can be added
        rows = self.host_list('--resource-class', 'disk_gb')
        self.assertIn((base.PLAIN_HOST, 'DISK_GB'), rows)

    def test_non_admin_is_told_it_needs_admin(self):
        rc, out, err = self.openstack_raw(
            'gpu', 'host', 'list', cloud=self.member_cloud
        )
        self.assertEqual(1, rc)
        self.assertIn('requires admin', err)
        self.assertEqual('', out)

    def test_unknown_pool(self):
        rc, _out, err = self.openstack_raw(
            'gpu', 'host', 'list', '--pool', 'no-such-pool'
        )
        self.assertEqual(1, rc)
        self.assertIn('No GPU pool named no-such-pool', err)
