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

"""The scheduler's entry point: the settings decided once."""

from gpuclient.rules import reservations
from gpuclient.rules.scheduler import conf
from gpuclient.rules.scheduler import manager
from gpuclient.tests.unit import base


class TestDecideSettings(base.TestCase):
    def test_none_or_empty_is_novas_defaults(self):
        self.assertEqual(conf.load_settings(), manager.decide_settings(None))
        self.assertEqual(conf.load_settings(), manager.decide_settings({}))

    def test_settings_read_are_kept(self):
        read = conf.load_settings('[filter_scheduler]\n'
                                  'enabled_filters = ComputeFilter\n')
        self.assertIs(read, manager.decide_settings(read))
        # filters read from a nova.conf are taken as they are, Blazar or not
        self.assertEqual(['ComputeFilter'], list(manager.decide_settings(
            read, blazar=True)['enabled_filters']))

    def test_blazar_adds_its_filter_to_the_defaults(self):
        decided = manager.decide_settings(None, blazar=True)
        self.assertIn(reservations.FILTER_NAME, decided['enabled_filters'])
        self.assertNotIn(reservations.FILTER_NAME,
                         manager.decide_settings(None)['enabled_filters'])
        # once: deciding again changes nothing
        self.assertEqual(decided,
                         manager.decide_settings(decided, blazar=True))
