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

"""Bare metal on real Ironic: the test cloud's BM_HOST is Nova's ironic
compute with fake-hardware nodes (tools/cloud/ironic.py).

What Ironic holds is read with a system-scoped token of the admin cloud's
user: Ironic's default policy hides nodes from project-scoped admins.
"""

import json

from keystoneauth1 import exceptions as ks_exceptions
from keystoneauth1 import session as ks_session
from keystoneauth1.identity import v3
import openstack.config

from gpuclient.tests.functional import base

BM_CLASS = 'CUSTOM_BAREMETAL_GPU_H100'
IRONIC_VERSION = '1.37'
RESERVED_REASON = 'node reserved by the ironic driver'


class SystemIronic:
    """Ironic's API as a system-scoped admin (the admin cloud's user)."""

    _PROJECT_KEYS = ('project_name', 'project_id', 'project_domain_name',
                     'project_domain_id', 'tenant_name', 'tenant_id',
                     'domain_name', 'domain_id', 'system_scope')

    def __init__(self, cloud=base.ADMIN_CLOUD):
        config = openstack.config.OpenStackConfig().get_one(cloud=cloud)
        auth = {k: v for k, v in config.config['auth'].items()
                if k not in self._PROJECT_KEYS}
        self.session = ks_session.Session(
            auth=v3.Password(system_scope='all', **auth),
            verify=config.config.get('verify', True))
        self.interface = config.config.get('interface') or 'public'

    def endpoint(self):
        try:
            return self.session.get_endpoint(service_type='baremetal',
                                             interface=self.interface)
        except ks_exceptions.EndpointNotFound:
            return None

    def _call(self, method, path, **kwargs):
        return self.session.request(
            path, method, endpoint_filter={
                'service_type': 'baremetal', 'interface': self.interface},
            headers={'X-OpenStack-Ironic-API-Version': IRONIC_VERSION},
            **kwargs)

    def node(self, uuid):
        return self._call('GET', '/v1/nodes/%s' % uuid).json()

    def set_maintenance(self, uuid, on, reason='gpuclient functional test'):
        if on:
            self._call('PUT', '/v1/nodes/%s/maintenance' % uuid,
                       json={'reason': reason})
        else:
            self._call('DELETE', '/v1/nodes/%s/maintenance' % uuid)


class TestBaremetal(base.FunctionalTestCase):
    def setUp(self):
        super().setUp()
        self.ironic = SystemIronic()
        if not self.ironic.endpoint():
            # a cloud without Ironic (a devstack gate without it)
            self.skipTest('no baremetal endpoint in the catalog')

    def create_pool(self):
        name = self.unique_name('pool')
        rc, out, err = self.openstack_raw(
            'gpu', 'pool', 'create', name, '--mode', 'baremetal',
            '--resource-class', 'baremetal.gpu-h100', '--host', base.BM_HOST,
            '-f', 'json')
        if rc:
            self.fail('gpu pool create failed: %s' % err.strip())
        self.addCleanup(self.delete_pool, name)
        return json.loads(out)['name']

    def gpu_flavor(self, pool):
        name = self.unique_name('flavor')
        self.openstack('gpu', 'flavor', 'create', name, '--pool', pool,
                       '--vcpus', '1', '--ram', '512', '--disk', '1')
        self.addCleanup(self.openstack_raw, 'flavor', 'delete', name)
        return name

    def provider_figures(self, uuid):
        """(total, reserved, used) of BM_CLASS on node provider UUID."""
        inventory = {row['resource_class']: row for row in self.openstack(
            'resource', 'provider', 'inventory', 'list', uuid)}
        usages = {row['resource_class']: row['usage'] for row in
                  self.openstack('resource', 'provider', 'usage', 'show',
                                 uuid)}
        item = inventory.get(BM_CLASS) or {}
        return (item.get('total'), item.get('reserved'),
                usages.get(BM_CLASS, 0))

    def wait(self, what, check, timeout=60):
        """Poll CHECK; Nova's ironic driver reports a node's maintenance
        to Placement at its next resource update (10 s here), but the
        first ones after nova-compute starts were seen to take longer."""
        value = self.wait_for(what, check, bool, timeout=timeout,
                              interval=base.POLL * 2)
        self.assertTrue(value, 'timed out waiting for %s' % what)
        return value

    @base.needs('baremetal')
    def test_boot_and_maintenance(self):
        pool = self.create_pool()
        flavor = self.gpu_flavor(pool)

        # (a) a pool flavor boots a node: Ironic deploys it, Placement
        # holds the node's class on the node's provider
        server = self.boot(flavor)
        self.assertEqual(base.BM_HOST, server['OS-EXT-SRV-ATTR:host'])
        rows = self.openstack('resource', 'provider', 'allocation', 'show',
                              server['id'])
        self.assertEqual(1, len(rows), rows)
        node = rows[0]['resource_provider']
        self.assertEqual({BM_CLASS: 1}, rows[0]['resources'])
        self.assertEqual(node, server['OS-EXT-SRV-ATTR:hypervisor_hostname'])
        self.assertEqual('active', self.ironic.node(node)['provision_state'])
        # a drain plans no move for a bare-metal server: it stays, named
        rows = self.openstack('gpu', 'host', 'drain', base.BM_HOST,
                              '--dry-run', '--allow-downtime')
        mine = [r for r in rows if r['Server'] == server['id']]
        self.assertEqual(['stays'], [r['Method'] for r in mine], rows)
        self.assertIn('bare-metal', mine[0]['Reason'])
        # in use: total 1, used 1, never free -1
        host = [r for r in self.openstack('gpu', 'host', 'list', '--long')
                if r['Host'] == base.BM_HOST and r['Resource Class']
                == BM_CLASS][0]
        self.assertGreaterEqual(host['Free'], 0)
        self.assertLessEqual(host['Used'], host['Total'])
        self.assertEqual(host['Total'], host['Used'] + host['Free']
                         + host['Unavailable'])
        # Ironic's words when the token may list nodes, else Placement's
        self.assertTrue([s for s in host['Node States'] if node in s
                         and ('active' in s or 'in use' in s)],
                        host['Node States'])
        self.openstack('server', 'delete', '--wait', server['id'],
                       parse=False)
        self.wait('node %s available' % node, lambda: self.ironic.node(
            node)['provision_state'] == 'available', timeout=120)

        # (b) a node in maintenance is reserved in Placement, shown
        # unavailable and named by candidates --explain; cleared after
        self.addCleanup(self.end_maintenance, node)
        self.ironic.set_maintenance(node, True)
        self.wait('reserved=1 on %s' % node,
                  lambda: self.provider_figures(node) == (1, 1, 0),
                  timeout=120)
        host = [r for r in self.openstack('gpu', 'host', 'list', '--long',
                                          '--pool', pool)
                if r['Resource Class'] == BM_CLASS][0]
        self.assertGreaterEqual(host['Unavailable'], 1)
        self.assertTrue([s for s in host['Node States'] if node in s
                         and ('maintenance' in s or 'reserved' in s)],
                        host['Node States'])
        rc, out, err = self.openstack_raw(
            'gpu', 'candidate', 'list', '--flavor', flavor, '--explain', '-f',
            'json')
        self.assertEqual(0, rc, err)
        reasons = [text for row in json.loads(out)
                   if row['Host'] == base.BM_HOST
                   for text in row['Reason']]
        named = [t for t in reasons if node in t]
        self.assertEqual(1, len(named), reasons)
        self.assertIn(RESERVED_REASON, named[0])

    def end_maintenance(self, node):
        """Cleanup: NODE out of maintenance, back once Placement has it
        unreserved again (the driver's next resource update), which the
        next test's capacity and boots read."""
        self.ironic.set_maintenance(node, False)
        self.assert_node_back(node)

    def candidate_hosts(self, flavor):
        return {row['Host'] for row in self.openstack(
            'gpu', 'candidate', 'list', '--flavor', flavor)}

    def boots_on_host(self, flavor):
        """Nova's own answer: the status of a boot pinned to BM_HOST."""
        name = self.unique_name('server')
        self.addCleanup(self._delete_server, name)
        self.openstack_raw(
            '--os-compute-api-version', base.COMPUTE_API, 'server', 'create',
            '--flavor', flavor, '--image', base.IMAGE, '--nic', 'none',
            '--host', base.BM_HOST, '--wait', name)
        server = self.openstack('--os-compute-api-version', base.COMPUTE_API,
                                'server', 'show', name)
        return server['status']

    @base.needs('baremetal')
    def test_all_nodes_in_maintenance_leave_the_candidates(self):
        """As Nova's scheduler sees it: out while every node is in
        maintenance, back when maintenance is cleared."""
        pool = self.create_pool()
        flavor = self.gpu_flavor(pool)
        nodes = [r for r in self.openstack('gpu', 'host', 'list', '--long',
                                           '--pool', pool)
                 if r['Resource Class'] == BM_CLASS][0]['Device Providers']
        self.assertEqual(2, len(nodes), nodes)
        self.assertIn(base.BM_HOST, self.candidate_hosts(flavor))
        for node in nodes:
            self.addCleanup(self.end_maintenance, node)
            self.ironic.set_maintenance(node, True)
        for node in nodes:
            self.wait('reserved=1 on %s' % node,
                      lambda node=node: self.provider_figures(node) == (
                          1, 1, 0), timeout=120)
        self.assertNotIn(base.BM_HOST, self.candidate_hosts(flavor))
        self.assertEqual('ERROR', self.boots_on_host(flavor))
        for node in nodes:
            self.ironic.set_maintenance(node, False)
        for node in nodes:
            self.wait('reserved=0 on %s' % node,
                      lambda node=node: self.provider_figures(node) == (
                          1, 0, 0), timeout=120)
        self.assertIn(base.BM_HOST, self.candidate_hosts(flavor))
        self.assertEqual('ACTIVE', self.boots_on_host(flavor))
