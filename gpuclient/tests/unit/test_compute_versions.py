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

"""--os-compute-api-version: how it reaches gpuclient, lower refused
before the call, higher kept at the pinned microversion."""

import copy
import io
from unittest import mock

import fixtures
from openstack import config as os_config
from openstackclient import shell
from osc_lib import exceptions
import yaml

from gpuclient import plugin
from gpuclient.cloud import client
from gpuclient.cloud import compute
from gpuclient.cloud import versions
from gpuclient.tests.unit import base
from gpuclient.tests.unit import fakes
from gpuclient.tests.unit.v1 import test_flavor
from gpuclient.v1 import flavor as flavor_cmd
from gpuclient.v1 import host as host_cmd
from gpuclient.v1 import usage as usage_cmd


class TestRequestedVersion(base.TestCase):
    def test_parsed(self):
        for text, expected in ((None, None), ('', None), ('2', None),
                               ('v2', None), ('2.1', (2, 1)),
                               (' 2.61 ', (2, 61)), ('2.100', (2, 100)),
                               ('latest', 'latest')):
            self.assertEqual(expected, compute.requested_version(text),
                             text)

    def test_not_a_version(self):
        for text in ('two', '3.1', '2.x', '2.1.1'):
            error = self.assertRaises(exceptions.CommandError,
                                      compute.requested_version, text)
            self.assertEqual(
                '--os-compute-api-version %s is not a compute API version: '
                'give 2.N (e.g. 2.61) or leave the option out.' % text,
                str(error))

    def test_lower_is_refused_with_the_need(self):
        error = self.assertRaises(
            exceptions.CommandError, compute.check_requested, '2.1',
            versions.COMPUTE_HYPERVISOR_UUID_VERSION)
        self.assertEqual(
            'This command needs compute API 2.53 or later (hypervisor ids '
            'as provider uuids); --os-compute-api-version 2.1 is lower. '
            'Give 2.53 or later, or leave the option out.', str(error))
        # every pinned version says what it is for
        for need in (versions.COMPUTE_USAGE_LINKS_VERSION,
                     versions.COMPUTE_EMBEDDED_FLAVOR_VERSION,
                     versions.COMPUTE_FLAVOR_SPECS_VERSION):
            self.assertIn(need, versions.COMPUTE_NEEDS)

    def test_not_given_equal_and_higher_send_the_pinned_version(self):
        warned = set()
        for text in (None, '2', '2.53'):
            self.assertEqual('2.53',
                             compute.check_requested(text, '2.53', warned))
        self.assertNotIn('--os-compute-api-version', self.logger.output)
        for text in ('2.90', 'latest', '2.90'):
            self.assertEqual('2.53',
                             compute.check_requested(text, '2.53', warned))
        # said once per version asked, never silently
        self.assertEqual(1, self.logger.output.count(
            '--os-compute-api-version 2.90: gpu commands send the compute '
            'microversion each call is written for (2.53 here)'))
        self.assertEqual(1, self.logger.output.count(
            '--os-compute-api-version latest'))


class TestWarnedOncePerClient(base.TestCase):
    def test_each_client_says_it_once(self):
        # two commands in one process (a script, a test) each say it
        for _command in range(2):
            client = compute.Compute(proxy=mock.Mock(), requested='2.90')
            client.require('2.53', '2.61')
            client.require('2.53')
        self.assertEqual(2, self.logger.output.count(
            '--os-compute-api-version 2.90: gpu commands send'))


class TestNoRequest(base.TestCase):
    def test_require_makes_no_proxy(self):
        # making the SDK's compute proxy reads the catalog and Nova's
        # version document: require() refuses before that
        conn = mock.Mock()
        type(conn).compute = mock.PropertyMock(
            side_effect=AssertionError('proxy made'))
        gpu = client.GpuClient(mock.Mock(), conn,
                               compute_api_version='2.1')
        self.assertRaises(exceptions.CommandError, gpu.compute.require,
                          versions.COMPUTE_HYPERVISOR_UUID_VERSION)
        self.assertRaises(exceptions.CommandError, gpu.compute.hypervisors)
        # a call that needs no pinned version makes it
        self.assertRaises(AssertionError, gpu.compute.aggregates)


class TestFromOSC(base.TestCase):
    """What reaches make_client under OSC: the cloud's config keeps
    compute_api_version only when given; OSC's _api_version would say
    2.1 either way."""

    def region(self, argv):
        path = self.useFixture(fixtures.TempDir()).join('clouds.yaml')
        with open(path, 'w') as out:
            yaml.safe_dump({'clouds': {'gpu-test': {
                'auth_type': 'v3token',
                'auth': {'auth_url': 'http://keystone.test/v3',
                         'token': 'secret', 'project_id': 'p1'},
                'region_name': 'RegionOne'}}}, out)
        config = os_config.OpenStackConfig(
            config_files=[path], vendor_files=[], secure_files=[],
            load_envvars=False)
        self.useFixture(fixtures.EnvironmentVariable(
            'OS_COMPUTE_API_VERSION'))
        parser = shell.OpenStackShell().build_option_parser('', '')
        options, _rest = parser.parse_known_args(argv)
        return config.get_one('gpu-test', argparse=options, validate=False)

    def instance(self, argv):
        return mock.Mock(_cli_options=self.region(argv))

    def test_not_given_is_none(self):
        region = self.region([])
        # what OSC's shell puts in client_manager._api_version['compute']
        self.assertEqual('2.1', region.config.get('compute_api_version',
                                                  '2.1'))
        self.assertIsNone(plugin._compute_api_version(
            mock.Mock(_cli_options=region)))

    def test_given_is_what_was_given(self):
        self.assertEqual('2.1', plugin._compute_api_version(
            self.instance(['--os-compute-api-version', '2.1'])))
        self.assertEqual('2.90', plugin._compute_api_version(
            self.instance(['--os-compute-api-version', '2.90'])))

    def test_make_client_passes_it_on(self):
        instance = self.instance(['--os-compute-api-version', '2.40'])
        gpu = plugin.make_client(instance)
        self.assertEqual('2.40', gpu.compute._requested)


class TestHostList(base.CommandTestCase):
    def run_host_list(self, version):
        cloud = fakes.FakeCloud()
        cloud.pci_host('gpu-pt-1')
        self.placement = self.useFixture(fakes.PlacementFixture(cloud))
        cm = self.useFixture(fakes.ClientManagerFixture(
            cloud, compute_api_version=version))
        cmd = host_cmd.ListHost(self.make_app(cm.client_manager), None)
        return cm, lambda: cmd.take_action(self.check_parser(cmd, []))

    def test_lower_is_refused_before_the_call(self):
        cm, run = self.run_host_list('2.1')
        error = self.assertRaises(exceptions.CommandError, run)
        self.assertIn('needs compute API 2.53 or later (hypervisor ids as '
                      'provider uuids); --os-compute-api-version 2.1 is '
                      'lower', str(error))
        # before any request: not even the aggregates or Placement
        self.assertEqual([], cm.nova.sent)
        cm.compute.aggregates.assert_not_called()
        self.assertEqual([], self.placement.requests())

    def test_higher_sends_the_pinned_version(self):
        cm, run = self.run_host_list('2.90')
        _columns, rows = run()
        self.assertEqual(['gpu-pt-1'], [row[0] for row in rows])
        self.assertEqual({'2.53'}, {mv for _m, url, mv in cm.nova.sent
                                    if 'hypervisors' in url})
        self.assertIn('--os-compute-api-version 2.90: gpu commands send',
                      self.logger.output)


class TestUsageList(base.CommandTestCase):
    def test_lower_than_paged_usage_sends_nothing(self):
        cloud = fakes.FakeCloud()
        placement = self.useFixture(fakes.PlacementFixture(cloud))
        cm = self.useFixture(fakes.ClientManagerFixture(
            cloud, compute_api_version='2.39'))
        cmd = usage_cmd.ListUsage(self.make_app(cm.client_manager), None)
        parsed = self.check_parser(cmd, [])
        error = self.assertRaises(exceptions.CommandError,
                                  cmd.take_action, parsed)
        self.assertIn('needs compute API 2.40 or later (paged server '
                      'usage); --os-compute-api-version 2.39 is lower',
                      str(error))
        self.assertEqual([], cm.nova.sent)
        cm.compute.aggregates.assert_not_called()
        self.assertEqual([], placement.requests())


class TestFlavorCreate(test_flavor.FlavorTestCase):
    def test_lower_than_extra_specs_changes_nothing(self):
        self.gpu._compute_api_version = '2.60'
        self.gpu._compute = None
        before = copy.deepcopy(self.cloud.flavors)
        app = self.make_app(self.cm.client_manager)
        app.stdout = io.StringIO()
        cmd = flavor_cmd.CreateFlavor(app, None)
        parsed = self.check_parser(
            cmd, ['g1', '--pool', 'mig'] + test_flavor.SIZES)
        error = self.assertRaises(exceptions.CommandError,
                                  cmd.take_action, parsed)
        self.assertIn('needs compute API 2.61 or later (flavor extra specs '
                      'inline); --os-compute-api-version 2.60 is lower',
                      str(error))
        self.assertEqual([], self.nova.sent)
        self.cm.compute.aggregates.assert_not_called()
        self.assertEqual([], self.nova.calls)
        self.assertEqual(before, self.cloud.flavors)

    def test_higher_writes_maxphysaddr_at_the_pinned_version(self):
        # issue 40 rule 3: from 2.86 Nova 34 refuses hw:maxphysaddr_* (it
        # registers no validator for them; scheduler.test_hardware_nova
        # checks that against Nova), so the extra specs are written at 2.61
        # whatever --os-compute-api-version says
        self.gpu._compute_api_version = '2.90'
        self.gpu._compute = None
        self.run_cmd(flavor_cmd.CreateFlavor,
                     ['g4', '--pool', 'solver', '--maxphysaddr-mode',
                      'emulate', '--maxphysaddr-bits', '44']
                     + test_flavor.SIZES)
        (flavor,) = self.cloud.flavors
        self.assertEqual('44', flavor['extra_specs']['hw:maxphysaddr_bits'])
        self.assertEqual({'2.61'}, {mv for method, url, mv in self.nova.sent
                                    if url.endswith('/os-extra_specs')})
        # what Nova answers at 2.86 and later
        response = self.nova.post(
            '/flavors/%s/os-extra_specs' % flavor['id'], microversion='2.86',
            json={'extra_specs': {'hw:maxphysaddr_mode': 'passthrough'}})
        self.assertEqual(400, response.status_code)
