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

"""gpuclient.rules.scheduler.filters against Nova's: each registered filter
module is named as Nova's file of that filter.
"""

import importlib
import unittest

from gpuclient.rules.scheduler import filters
from gpuclient.tests.unit import nova_harness


@nova_harness.requires_nova
class TestRegistryIsNovas(unittest.TestCase):
    """Each registered filter module is named as Nova names the file of
    the filter, and NAME is the class in it."""

    def test_module_and_class_names(self):
        for host_filter in filters.FILTERS:
            name = host_filter.__name__.rpartition('.')[2]
            package = 'nova.scheduler.filters.'
            if host_filter is filters.blazar_filter:
                # Blazar's, in blazar-nova (installed beside Nova where
                # the cloud runs Blazar)
                package = 'blazarnova.scheduler.filters.'
                try:
                    importlib.import_module(package + name)
                except ImportError:
                    continue
            nova_module = importlib.import_module(package + name)
            self.assertTrue(hasattr(nova_module, host_filter.NAME),
                            (name, host_filter.NAME))

