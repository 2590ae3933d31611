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

"""``openstack gpu candidates`` against a real cloud, proven by Nova.

For each pool mode, the hosts ``gpu candidates --flavor F`` lists are
exactly those where ``server create --host H`` (compute API 2.74, which
still runs Placement and every scheduler filter for H) boots F. The cloud
is shared: other tests' servers may hold GPUs, so a mismatch is checked
again once before it fails, and nothing assumes a host is idle.
"""

import json

from gpuclient.tests.functional import base

PCI_CLASS = 'CUSTOM_PCI_10DE_2331'
ALL_HOSTS = (base.PT_HOST, base.VGPU_HOST, base.MIG_HOST, base.BM_HOST,
             base.PLAIN_HOST)


class CandidatesTestCase(base.FunctionalTestCase):
    def create_pool(self, *args):
        name = self.unique_name('pool')
        rc, out, err = self.openstack_raw('gpu', 'pool', 'create', name,
                                          *args, '-f', 'json')
        if rc:
            self.fail('gpu pool create failed: %s' % err.strip())
        self.addCleanup(self.delete_pool, name)
        return json.loads(out)

    def delete_pool(self, name):
        rc, _out, err = self.openstack_raw('gpu', 'pool', 'delete',
                                           '--force', name)
        if rc and 'No GPU pool named' not in err:
            self.fail('could not delete pool %s: %s' % (name, err))

    def gpu_flavor(self, pool, *args):
        name = self.unique_name('flavor')
        self.openstack('gpu', 'flavor', 'create', name, '--pool', pool,
                       '--vcpus', '1', '--ram', '512', '--disk', '1', *args)
        self.addCleanup(self.openstack_raw, 'flavor', 'delete', name)
        return name

    def candidates(self, *args, cloud=None):
        return self.openstack('gpu', 'candidates', *args, cloud=cloud)

    def hosts(self, *args):
        return {row['host'] for row in self.candidates(*args)['hosts']}

    def boots_on(self, flavor, host):
        """True when Nova boots FLAVOR on HOST (the server is deleted)."""
        name = self.unique_name('server')
        self.openstack_raw(
            '--os-compute-api-version', base.COMPUTE_API, 'server', 'create',
            '--flavor', flavor, '--image', base.IMAGE, '--nic', 'none',
            '--host', host, '--wait', name)
        server = self.openstack('--os-compute-api-version', base.COMPUTE_API,
                                'server', 'show', name)
        self._delete_server(name)
        return server['status'] == 'ACTIVE'

    def boot(self, flavor, host):
        name = self.unique_name('server')
        self.addCleanup(self._delete_server, name)
        rc, _out, err = self.openstack_raw(
            '--os-compute-api-version', base.COMPUTE_API, 'server', 'create',
            '--flavor', flavor, '--image', base.IMAGE, '--nic', 'none',
            '--host', host, '--wait', name)
        server = self.openstack('--os-compute-api-version', base.COMPUTE_API,
                                'server', 'show', name)
        self.assertEqual('ACTIVE', server['status'], err)
        return server

    def assert_matches_nova(self, flavor, *args):
        """gpu candidates == the hosts where Nova boots the flavor."""
        for _attempt in range(2):
            listed = self.hosts('--flavor', flavor, *args)
            booted = {h for h in ALL_HOSTS if self.boots_on(flavor, h)}
            if listed == booted:
                return listed
        self.assertEqual(booted, listed, 'gpu candidates vs Nova')


class TestCandidatesPerMode(CandidatesTestCase):
    def test_passthrough(self):
        pool = self.create_pool('--mode', 'passthrough', '--alias', 'h100',
                                '--pci-id', '10de:2331', '--host',
                                base.PT_HOST)
        flavor = self.gpu_flavor(pool['name'])
        self.assertEqual({base.PT_HOST}, self.assert_matches_nova(flavor))

    def test_vgpu(self):
        pool = self.create_pool('--mode', 'vgpu', '--vgpu-type',
                                self.unique_name('t')[-8:], '--host',
                                base.VGPU_HOST)
        flavor = self.gpu_flavor(pool['name'])
        self.assertEqual({base.VGPU_HOST}, self.assert_matches_nova(flavor))

    def test_mig(self):
        pool = self.create_pool('--mode', 'mig', '--mig-profile',
                                '1g.10gb', '--host', base.MIG_HOST)
        flavor = self.gpu_flavor(pool['name'])
        self.assertEqual({base.MIG_HOST}, self.assert_matches_nova(flavor))

    def test_baremetal(self):
        pool = self.create_pool('--mode', 'baremetal', '--resource-class',
                                'baremetal.gpu-h100', '--host', base.BM_HOST)
        flavor = self.gpu_flavor(pool['name'])
        found = self.assert_matches_nova(flavor)
        # the node may be taken by another test's server
        self.assertLessEqual(found, {base.BM_HOST})


class TestWhyNot(CandidatesTestCase):
    def test_full_pool_names_devices_and_servers(self):
        pool = self.create_pool('--mode', 'passthrough', '--alias', 'h100',
                                '--pci-id', '10de:2331', '--host',
                                base.PT_HOST)
        flavor = self.gpu_flavor(pool['name'])
        rows = self.candidates('--flavor', flavor)['hosts']
        free = rows[0]['gpus_free'] if rows else 0
        servers = [self.boot(flavor, base.PT_HOST)['id']
                   for _i in range(free)]
        result = self.candidates('--flavor', flavor)
        self.assertEqual([], result['hosts'])
        texts = result['eliminated'][base.PT_HOST]
        full = [t for t in texts if 'devices are allocated' in t]
        self.assertEqual(1, len(full), texts)
        self.assertIn(PCI_CLASS, full[0])
        for server in servers:
            self.assertIn(server, full[0])
        # the other hosts are out for the pool steering or the class
        self.assertIn('not in pool %s' % pool['name'],
                      ' '.join(result['eliminated'][base.PLAIN_HOST]))

    def test_isolated_pool_keeps_ordinary_flavors_out(self):
        pool = self.create_pool('--mode', 'passthrough', '--alias', 'h100',
                                '--pci-id', '10de:2331', '--host',
                                base.PT_HOST, '--isolate')
        ordinary = self.create_flavor({})['name']
        result = self.candidates('--flavor', ordinary, '--explain')
        listed = {row['host'] for row in result['hosts']}
        self.assertNotIn(base.PT_HOST, listed)
        self.assertIn(base.PLAIN_HOST, listed)
        text = ' '.join(result['eliminated'][base.PT_HOST])
        self.assertIn("isolated pool '%s'" % pool['name'], text)
        self.assertIn(pool['isolation_trait'], text)
        self.assertIn('!in:', result['query'].replace('%21', '!').replace(
            '%3A', ':'))
        self.assertFalse(self.boots_on(ordinary, base.PT_HOST))

    def test_project_limited_pool(self):
        pool = self.create_pool('--mode', 'passthrough', '--alias', 'h100',
                                '--pci-id', '10de:2331', '--host',
                                base.PT_HOST, '--project', 'gpuclient-demo')
        flavor = self.gpu_flavor(pool['name'])
        self.assertEqual(
            {base.PT_HOST},
            self.hosts('--flavor', flavor, '--project', 'gpuclient-demo'))
        result = self.candidates('--flavor', flavor)  # the admin project
        self.assertEqual([], result['hosts'])
        self.assertIn('AggregateMultiTenancyIsolation',
                      ' '.join(result['eliminated'][base.PT_HOST]))
        # Nova agrees: the admin project cannot boot there
        self.assertFalse(self.boots_on(flavor, base.PT_HOST))

    def test_disabled_service_drops_its_host(self):
        flavor = self.create_flavor({})['name']
        self.assertIn(base.PLAIN_HOST, self.hosts('--flavor', flavor))
        self.openstack('compute', 'service', 'set', '--disable',
                       base.PLAIN_HOST, 'nova-compute', parse=False)
        self.addCleanup(self.openstack, 'compute', 'service', 'set',
                        '--enable', base.PLAIN_HOST, 'nova-compute',
                        parse=False)
        result = self.candidates('--flavor', flavor, '--explain')
        self.assertNotIn(base.PLAIN_HOST,
                         {row['host'] for row in result['hosts']})
        self.assertIn('disabled',
                      ' '.join(result['eliminated'][base.PLAIN_HOST]))
