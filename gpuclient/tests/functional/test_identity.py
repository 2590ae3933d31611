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

"""Names operators copy: hosts as ``hypervisor list`` and ``resource
provider list`` show them (``gpu pool add host``, ``gpu server list
--host``), projects of the same name in two domains.

Proven by what Nova then holds (aggregate hosts and metadata, flavor
access), read back with plain OSC commands.
"""

import json

from gpuclient.tests.functional import base

PASSTHROUGH = ('--mode', 'passthrough', '--alias', 'h100', '--pci-id',
               '10de:2331')
SIZES = ('--vcpus', '1', '--ram', '512', '--disk', '1')


class IdentityTestCase(base.FunctionalTestCase):
    def create_pool(self, *args):
        name = self.unique_name('pool')
        rc, out, err = self.openstack_raw('gpu', 'pool', 'create', name,
                                          *PASSTHROUGH, *args, '-f', 'json')
        self.addCleanup(self.delete_pool, name)
        self.assertEqual(0, rc, err)
        return name, err


class TestHostNames(IdentityTestCase):
    @base.needs('passthrough')
    def test_hypervisor_hostname_and_provider_uuid(self):
        hv = self.hypervisor(base.PT_HOST)
        hv_name = hv['hypervisor_hostname']
        if hv_name == base.PT_HOST:
            self.skipTest('hypervisor hostname of %s is the host name: '
                          'nothing to resolve' % base.PT_HOST)
        name, err = self.create_pool('--host', hv_name)
        self.assertEqual([base.PT_HOST], self.aggregate(name)['hosts'])
        self.assertIn('"%s" is the hypervisor hostname of compute host %s'
                      % (hv_name, base.PT_HOST), err)
        # the root provider's uuid, as "resource provider list" shows it
        rc, _out, err = self.openstack_raw(
            'gpu', 'pool', 'remove', 'host', name, hv['id'], '-f', 'json')
        self.assertEqual(0, rc, err)
        self.assertEqual([], self.aggregate(name)['hosts'])
        # an unknown name changes nothing and lists the choices
        rc, _out, err = self.openstack_raw(
            'gpu', 'pool', 'add', 'host', name, hv_name + '.nope')
        self.assertEqual(1, rc)
        self.assertIn('Unknown compute host(s): %s.nope' % hv_name, err)
        self.assertIn('%s (hypervisor %s)' % (base.PT_HOST, hv_name), err)
        self.assertEqual([], self.aggregate(name)['hosts'])

    @base.needs('mig')
    def test_server_list_host_by_child_provider_name(self):
        root = self.root_provider(base.MIG_HOST)
        children = [rp for rp in self.openstack(
            '--os-placement-api-version', '1.14', 'resource', 'provider',
            'list', '--in-tree', root) if rp['uuid'] != root]
        self.assertTrue(children, 'no child provider under %s' % root)
        child = sorted(rp['name'] for rp in children)[0]
        rc, out, err = self.openstack_raw('gpu', 'server', 'list', '--host',
                                          child, '--all-projects', '-f',
                                          'json')
        self.assertEqual(0, rc, err)
        self.assertIn('"%s" is the resource provider name of compute host '
                      '%s: using %s.' % (child, base.MIG_HOST, base.MIG_HOST),
                      err)
        # only that host's servers (whoever booted them)
        self.assertEqual(set(), {row['Host'] for row in json.loads(out)}
                         - {base.MIG_HOST})


class TestProjectDomain(IdentityTestCase):
    def make_domain_project(self, project):
        domain = self.openstack('domain', 'create',
                                self.unique_name('domain'))
        self.addCleanup(self.openstack, 'domain', 'delete', domain['id'],
                        parse=False)
        self.addCleanup(self.openstack, 'domain', 'set', '--disable',
                        domain['id'], parse=False)
        # deleting the domain deletes its projects
        created = self.openstack('project', 'create', '--domain',
                                 domain['id'], project)
        return domain['name'], created['id']

    def test_same_project_name_in_two_domains(self):
        project = self.unique_name('project')
        domain_a, id_a = self.make_domain_project(project)
        domain_b, id_b = self.make_domain_project(project)
        # without a domain the name is ambiguous: nothing is created
        refused = self.unique_name('pool')
        self.addCleanup(self.delete_pool, refused)
        rc, _out, err = self.openstack_raw(
            'gpu', 'pool', 'create', refused, *PASSTHROUGH, '--project',
            project)
        self.assertEqual(1, rc)
        self.assertIn(project, err)
        rc, _out, _err = self.openstack_raw('aggregate', 'show', refused)
        self.assertEqual(1, rc)
        # the pool limited to domain B's project
        pool, _err = self.create_pool('--project', project,
                                      '--project-domain', domain_b)
        tenants = {k: v for k, v in self.aggregate(pool)['properties'].items()
                   if k.startswith('filter_tenant_id')}
        self.assertEqual({'filter_tenant_id_' + id_b: id_b}, tenants)
        # a private flavor for domain A's project
        flavor = self.unique_name('flavor')
        rc, _out, err = self.openstack_raw(
            'gpu', 'flavor', 'create', flavor, '--pool', pool, *SIZES,
            '--private', '--project', project, '--project-domain', domain_a)
        self.addCleanup(self.openstack_raw, 'flavor', 'delete', flavor)
        self.assertEqual(0, rc, err)
        shown = self.openstack('flavor', 'show', flavor)
        self.assertEqual([id_a], shown['access_project_ids'])
