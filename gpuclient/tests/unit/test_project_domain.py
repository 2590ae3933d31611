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

"""--project with --project-domain: one resolver (GpuClient.project_ids),
domain looked up with OSC's identity helper, on every command that takes
--project."""

import io
from unittest import mock

from openstack import exceptions as sdk_exc
from openstack.identity.v3 import _proxy as identity_proxy
from osc_lib import exceptions

from gpuclient.cloud import client as client_mod
from gpuclient.cloud import errors
from gpuclient.ops import candidate_ops
from gpuclient.tests.unit import base
from gpuclient.tests.unit import test_pool_ops
from gpuclient.v1 import candidates
from gpuclient.v1 import flavor as flavor_cmd
from gpuclient.v1 import pool as pool_cmd

DOMAINS = {'default': 'Default', 'd' * 32: 'dom-b'}
# the same project name in two domains
PROJECTS = [
    {'id': '1' * 32, 'name': 'research', 'domain_id': 'default'},
    {'id': '2' * 32, 'name': 'research', 'domain_id': 'd' * 32},
    {'id': '3' * 32, 'name': 'only-b', 'domain_id': 'd' * 32},
]


class FakeKeystone:
    """find_domain / find_project with the SDK's semantics."""

    def __init__(self, forbidden=False):
        self.forbidden = forbidden
        self.proxy = mock.Mock(spec=identity_proxy.Proxy)
        self.proxy.find_domain.side_effect = self.find_domain
        self.proxy.find_project.side_effect = self.find_project

    def _check(self):
        if self.forbidden:
            raise sdk_exc.ForbiddenException('You are not authorized',
                                             http_status=403)

    def find_domain(self, name_or_id, ignore_missing=True, **query):
        self._check()
        for did, name in DOMAINS.items():
            if name_or_id in (did, name):
                return mock.Mock(id=did)
        if ignore_missing:
            return None
        raise sdk_exc.ResourceNotFound('No Domain found for %s' % name_or_id)

    def find_project(self, name_or_id, ignore_missing=True, **query):
        self._check()
        for p in PROJECTS:
            if p['id'] == name_or_id:
                return mock.Mock(id=p['id'])
        found = [p for p in PROJECTS if p['name'] == name_or_id and (
            'domain_id' not in query or p['domain_id'] == query['domain_id'])]
        if len(found) > 1:
            raise sdk_exc.DuplicateResource(
                'More than one Project exists with the name %s' % name_or_id)
        if found:
            return mock.Mock(id=found[0]['id'])
        if ignore_missing:
            return None
        raise sdk_exc.ResourceNotFound(name_or_id)


class TestResolver(base.TestCase):
    def setUp(self):
        super().setUp()
        self.keystone = FakeKeystone()
        conn = mock.Mock()
        conn.identity = self.keystone.proxy
        self.client = client_mod.GpuClient(mock.Mock(), conn)

    def test_domain_picks_the_project(self):
        for domain, wanted in (('Default', '1' * 32), ('dom-b', '2' * 32),
                               ('default', '1' * 32), ('d' * 32, '2' * 32)):
            self.assertEqual([wanted],
                             self.client.project_ids(['research'], domain))
            self.assertEqual(wanted,
                             self.client.project_id('research', domain))

    def test_domain_looked_up_once_for_several_projects(self):
        self.assertEqual(['2' * 32, '3' * 32],
                         self.client.project_ids(
                             ['research', 'only-b', 'research'], 'dom-b'))
        self.assertEqual(1, self.keystone.proxy.find_domain.call_count)
        for call in self.keystone.proxy.find_project.call_args_list:
            self.assertEqual('d' * 32, call.kwargs['domain_id'])

    def test_without_domain_same_name_is_ambiguous(self):
        exc = self.assertRaises(exceptions.CommandError,
                                self.client.project_ids, ['research'])
        self.assertIn('More than one Project', str(exc))
        self.keystone.proxy.find_domain.assert_not_called()
        self.assertEqual(['3' * 32], self.client.project_ids(['only-b']))

    def test_unknown_domain(self):
        exc = self.assertRaises(errors.NotFound, self.client.project_ids,
                                ['research'], 'nope')
        self.assertIn('No domain with name or ID nope', str(exc))
        self.keystone.proxy.find_project.assert_not_called()

    def test_project_not_in_domain(self):
        exc = self.assertRaises(errors.NotFound, self.client.project_ids,
                                ['only-b'], 'Default')
        self.assertIn('No project with name or ID only-b in domain Default',
                      str(exc))
        self.assertIn('openstack project list --domain Default', str(exc))

    def test_forbidden_takes_ids_only(self):
        self.keystone.forbidden = True
        self.assertEqual(['9' * 32],
                         self.client.project_ids(['9' * 32], 'dom-b'))
        exc = self.assertRaises(exceptions.CommandError,
                                self.client.project_ids, ['research'],
                                'dom-b')
        self.assertIn('Looking up project research: forbidden', str(exc))


class ProjectCommandTestCase(test_pool_ops.PoolOpsTestCase,
                             base.CommandTestCase):
    def setUp(self):
        super().setUp()
        self.client._conn.identity = FakeKeystone().proxy

    def run_cmd(self, cls, args):
        cm = mock.Mock()
        cm.gpu = self.client
        app = self.make_app(cm)
        app.stdout = io.StringIO()
        cmd = cls(app, None)
        return cmd.take_action(self.check_parser(cmd, args))

    def tenants(self, name):
        agg = next(a for a in self.cloud.aggregates if a.name == name)
        return sorted(v for k, v in agg.metadata.items()
                      if k.startswith('filter_tenant_id'))

    def test_pool_create_set_unset(self):
        self.run_cmd(pool_cmd.CreatePool, [
            'solver', '--mode', 'passthrough', '--alias', 'h100',
            '--pci-id', '10de:2331', '--project', 'research',
            '--project-domain', 'dom-b'])
        self.assertEqual(['2' * 32], self.tenants('solver'))
        self.run_cmd(pool_cmd.SetPool, [
            'solver', '--project', 'research', '--project-domain',
            'Default'])
        self.assertEqual(['1' * 32, '2' * 32], self.tenants('solver'))
        self.run_cmd(pool_cmd.UnsetPool, [
            'solver', '--project', 'research', '--project-domain', 'dom-b'])
        self.assertEqual(['1' * 32], self.tenants('solver'))

    def test_flavor_create(self):
        self.run_cmd(pool_cmd.CreatePool, [
            'solver', '--mode', 'passthrough', '--alias', 'h100',
            '--pci-id', '10de:2331'])
        self.run_cmd(flavor_cmd.CreateFlavor, [
            'gpu.small', '--pool', 'solver', '--vcpus', '4', '--ram', '4096',
            '--disk', '10', '--private', '--project', 'research',
            '--project-domain', 'dom-b'])
        flavor = next(f for f in self.cloud.flavors
                      if f['name'] == 'gpu.small')
        self.assertEqual(['2' * 32],
                         self.cloud.flavor_access[flavor['id']])


class TestCandidatesOption(base.CommandTestCase):
    def test_project_domain_reaches_the_resolver(self):
        cmd = candidates.ListCandidate(self.make_app(mock.Mock()), None)
        parsed = self.check_parser(cmd, [
            '--resource', 'VGPU=1', '--project', 'research',
            '--project-domain', 'dom-b'])
        self.assertEqual('dom-b', parsed.project_domain)
        client = mock.Mock()
        client.project_id.side_effect = RuntimeError('stop here')
        client.compute.aggregates.return_value = []
        client.compute.hypervisors.return_value = []
        client.compute.compute_services.return_value = []
        self.assertRaises(RuntimeError, candidate_ops.collect, client,
                          resources={'VGPU': 1}, project='research',
                          project_domain='dom-b', settings={})
        client.project_id.assert_called_once_with('research', 'dom-b')
