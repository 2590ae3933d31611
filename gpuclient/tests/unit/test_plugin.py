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

"""The plugin's wiring: cheap to import, and it coexists with osc-placement.
"""

import subprocess
import sys

import fixtures
from openstackclient import shell

from gpuclient import plugin
from gpuclient.tests.unit import base


class TestPlugin(base.TestCase):
    def modules_after(self, code):
        code += '; import sys; print(",".join(sorted(sys.modules)))'
        out = subprocess.run([sys.executable, '-c', code], check=True,
                             capture_output=True, text=True).stdout
        return set(out.strip().split(','))

    def test_module_adds_nothing_heavy_to_start_up(self):
        # OSC has imported osc-lib and oslo.i18n when it loads plugins;
        # the plugin module must add only itself (no SDK, no client
        # layer, no commands): it is imported by every openstack command.
        base_code = 'import osc_lib.utils, oslo_i18n'
        before = self.modules_after(base_code)
        after = self.modules_after(base_code + '; import gpuclient.plugin')
        self.assertEqual(
            {'gpuclient', 'gpuclient.i18n', 'gpuclient.plugin'},
            after - before)

    def test_option_parser_with_osc_placement(self):
        # the real OSC shell, with every installed plugin (osc-placement
        # is a test requirement): no clashing global option
        app = shell.OpenStackShell()
        parser = app.build_option_parser('test', '1')
        options = {
            opt for action in parser._actions
            for opt in action.option_strings
        }
        self.assertIn('--os-gpu-api-version', options)
        self.assertIn('--os-placement-api-version', options)
        names = {m.API_NAME for m in
                 shell.clientmanager.PLUGIN_MODULES}
        self.assertIn('gpu', names)
        self.assertIn('placement', names)

    def test_make_client_is_lazy(self):
        instance = type('CM', (), {
            'session': object(), 'sdk_connection': object(),
            'region_name': 'RegionOne', 'interface': 'public'})()
        gpu = plugin.make_client(instance)
        # nothing talks to a cloud until a service is used
        self.assertIsNone(gpu._placement)
        self.assertIsNone(gpu._compute)

    def make(self, **config):
        options = type('Options', (), {'config': config})()
        instance = type('CM', (), {
            'session': object(), 'sdk_connection': object(),
            'region_name': 'RegionOne', 'interface': 'public',
            '_cli_options': options})()
        logger = self.useFixture(fixtures.FakeLogger(name='gpuclient'))
        plugin.make_client(instance)
        return logger.output

    def test_placement_api_version_given_is_said_to_be_ignored(self):
        # osc-placement's --os-placement-api-version (or its environment
        # variable, or clouds.yaml's placement_api_version): gpuclient
        # negotiates per call, so a given version is not used; said once
        # when the client is made, not silently dropped
        for given in ('1.10', '1.39', 1.6):
            output = self.make(placement_api_version=given)
            self.assertIn('--os-placement-api-version %s is ignored by '
                          'openstack gpu' % given, output)
        # osc-placement's default ("1": negotiate), or no osc-placement
        for config in ({'placement_api_version': '1'}, {},
                       {'placement_api_version': None}):
            self.assertNotIn('os-placement-api-version',
                             self.make(**config))
