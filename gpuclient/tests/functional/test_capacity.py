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

"""gpu capacity list, proven by boots: it says N, N servers go ACTIVE,
one more gets "No valid host", and deleting one makes room for one.
"""

import uuid

from gpuclient.tests.functional import base

BM_CLASS = 'CUSTOM_BAREMETAL_GPU_H100'
# the test cloud's GPU hosts have 512 GiB (512 MiB reserved): two of these
# fit on one host, a third does not, whatever GPUs are left
BIG_RAM = 200000


class CapacityTestCase(base.FunctionalTestCase):
    def make_pool(self, mode, host, *options):
        name = self.unique_name(mode)
        tag = uuid.uuid4().hex[:6]
        extra = {
            'passthrough': ('--alias', 'h100', '--pci-id', '10de:2331'),
            'vgpu': ('--vgpu-type', 'ft-%s' % tag),
            'mig': ('--mig-profile', 'ft.%s' % tag),
            'baremetal': ('--resource-class', BM_CLASS),
        }[mode]
        rc, _out, err = self.openstack_raw(
            'gpu', 'pool', 'create', name, '--mode', mode, *extra,
            '--host', host, *options)
        self.addCleanup(self.delete_pool, name)
        self.assertEqual(0, rc, err)
        return name

    def make_flavor(self, pool, gpus=1, ram=512):
        name = self.unique_name('flavor')
        rc, _out, err = self.openstack_raw(
            'gpu', 'flavor', 'create', name, '--pool', pool, '--gpus',
            str(gpus), '--vcpus', '1', '--ram', str(ram), '--disk', '1')
        self.addCleanup(self.openstack_raw, 'flavor', 'delete', name)
        self.assertEqual(0, rc, err)
        return name

    def capacity(self, flavor, *args):
        rows = self.openstack('gpu', 'capacity', 'list', '--flavor',
                              flavor, *args)
        self.assertEqual(1, len(rows), rows)
        return rows[0]

    def fits(self, flavor):
        return self.capacity(flavor)['Fits']

    def boot_refused(self, flavor):
        server = self.boot(flavor, expect_status='ERROR')
        self.assertIn('No valid host', str(server.get('fault')))

    def boot_all(self, flavor, count):
        return [self.boot(flavor) for _ in range(count)]

    def delete(self, server):
        """Delete SERVER: back once Nova's list of its host and Placement's
        allocations no longer hold it, and a bare-metal node is back in
        Placement (base's _delete_server)."""
        self._delete_server(server['id'])


class TestCapacityByBoots(CapacityTestCase):
    @base.needs('passthrough')
    def test_passthrough_one_and_two_gpus(self):
        pool = self.make_pool('passthrough', base.PT_HOST)
        one = self.make_flavor(pool)
        two = self.make_flavor(pool, gpus=2)
        row = self.capacity(one)
        # what Placement holds: 4 free H100 on the host
        self.assertEqual((4, 4, 0, 4), (row['Fits'], row['GPUs Total'],
                                        row['GPUs Used'], row['GPUs Free']))
        self.assertEqual(2, self.fits(two))
        pair = self.boot_all(two, 2)
        self.assertEqual((0, 0), (self.fits(one), self.fits(two)))
        self.boot_refused(one)
        self.delete(pair[0])
        self.assertEqual((2, 1), (self.fits(one), self.fits(two)))
        self.boot_all(one, 2)
        self.assertEqual(0, self.fits(one))
        self.boot_refused(one)

    @base.needs('vgpu')
    def test_vgpu_one_and_two(self):
        pool = self.make_pool('vgpu', base.VGPU_HOST)
        one = self.make_flavor(pool)
        two = self.make_flavor(pool, gpus=2)
        # 2 pGPUs of 4 vGPUs: 8 single, 4 pairs (one vGPU on each pGPU)
        self.assertEqual((8, 4), (self.fits(one), self.fits(two)))
        servers = self.boot_all(two, 4)
        self.assertEqual((0, 0), (self.fits(one), self.fits(two)))
        self.boot_refused(two)
        self.delete(servers[0])
        self.assertEqual((2, 1), (self.fits(one), self.fits(two)))

    def unlimited_ram(self):
        """Lift the project's RAM quota (Nova refuses a big boot before
        scheduling otherwise): the legacy quota, and a Keystone project
        limit for Nova's unified limits (the test cloud's driver, where
        "quota set" changes nothing); put both back at cleanup."""
        limits = {row['Name']: row['Value'] for row in self.openstack(
            'limits', 'show', '--absolute')}
        project = self.openstack('token', 'issue')['project_id']
        self.openstack('quota', 'set', '--ram', '-1', project, parse=False)
        self.addCleanup(self.openstack, 'quota', 'set', '--ram',
                        str(limits['max_total_ram_size']), project,
                        parse=False)
        limit = self.openstack(
            'limit', 'create', '--service', 'compute', '--region',
            'RegionOne', '--project', project, '--resource-limit', '-1',
            'class:MEMORY_MB')
        self.addCleanup(self.openstack, 'limit', 'delete', limit['id'],
                        parse=False)

    @base.needs('mig')
    def test_mig_and_ram_stranding(self):
        self.unlimited_ram()
        pool = self.make_pool('mig', base.MIG_HOST)
        small = self.make_flavor(pool)
        big = self.make_flavor(pool, ram=BIG_RAM)
        self.assertEqual(7, self.fits(small))
        # RAM, not GPUs, limits the big one
        self.assertEqual(2, self.fits(big))
        servers = self.boot_all(big, 2)
        self.assertEqual(0, self.fits(big))
        self.boot_refused(big)
        # the small flavor can still use the 5 free slices: none stranded
        self.assertEqual(5, self.fits(small))
        self.assertEqual(0, self.capacity(small)['Stranded'])
        # without it, nothing can: the 5 free slices are stranded by RAM
        self.openstack('flavor', 'delete', small, parse=False)
        row = self.capacity(big, '--per-host')
        self.assertEqual((base.MIG_HOST, 0, 5, 5),
                         (row['Host'], row['Fits'], row['GPUs Free'],
                          row['Stranded']))
        # --long adds columns to the same row: no host, the counts
        long = self.capacity(big, '--long')
        self.assertNotIn('Host', long)
        self.assertEqual((0, 5, 1, 0),
                         (long['Fits'], long['Stranded'], long['Hosts'],
                          long['Hosts Fitting']))
        self.assertEqual(self.openstack('flavor', 'show', big)['id'],
                         long['Flavor ID'])
        self.assertEqual(5, len(row['Stranded Reason']))
        self.assertIn('MEMORY_MB free and %s needs %d' % (big, BIG_RAM),
                      row['Stranded Reason'][0])
        self.delete(servers[0])
        self.assertEqual(1, self.fits(big))

    @base.needs('baremetal')
    def test_baremetal(self):
        # real Ironic: the host's nova-compute serves 2 fake-hardware nodes
        pool = self.make_pool('baremetal', base.BM_HOST)
        flavor = self.make_flavor(pool)
        row = self.capacity(flavor)
        self.assertEqual((2, 2, 0, 2), (row['Fits'], row['GPUs Total'],
                                        row['GPUs Used'], row['GPUs Free']))
        servers = self.boot_all(flavor, 2)
        # the ironic driver also reserves a node while it is in use: the
        # figures stay total 2, used 2, free 0 (never -1)
        row = self.capacity(flavor)
        self.assertEqual((0, 2, 2, 0), (row['Fits'], row['GPUs Total'],
                                        row['GPUs Used'], row['GPUs Free']))
        self.boot_refused(flavor)
        self.delete(servers[0])  # back once the node is unreserved
        self.assertEqual(1, self.fits(flavor))
