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

"""gpuclient.rules.scheduler.filters: the registry of the post-filters, and
what they judge together (test_filters_nova: the registry is Nova's)."""

import importlib
import pkgutil
import unittest

from gpuclient.rules.scheduler import filters
from gpuclient.tests.unit.scheduler.filters import cases


class TestJudges(unittest.TestCase):

    def test_post_filters_and_text(self):
        hypervisors = [cases.api_view('fake'), cases.api_view('kvm')]
        enabled = ('ImagePropertiesFilter', 'ComputeCapabilitiesFilter')
        post = filters.post_filters(
            ['host-fake', 'host-kvm'],
            {'capabilities:hypervisor_type': 's== QEMU'}, [], [], 'p1',
            enabled, hypervisors=hypervisors,
            image={'architecture': 'aarch64'})
        self.assertEqual(['host-fake'], sorted(post))
        kinds = sorted(r['filter'] for r in post['host-fake'])
        self.assertEqual(list(sorted(enabled)), kinds)
        texts = [filters.post_filter_text('host-fake', r, 'p1')
                 for r in post['host-fake']]
        self.assertIn('host-fake: the image asks for architecture=aarch64, '
                      'the host (fake) runs x86_64/fake/hvm '
                      '(ImagePropertiesFilter)', texts)
        # a disabled filter judges nothing
        self.assertEqual({}, filters.post_filters(
            ['host-fake'], {'capabilities:hypervisor_type': 's== QEMU'},
            [], [], 'p1', ('ComputeFilter',), hypervisors=hypervisors,
            image={'architecture': 'aarch64'}))

    def test_unchecked_names_what_and_where(self):
        hypervisors = [cases.api_view('kvm'), cases.api_view('ironic')]
        gaps = filters.unchecked(
            ['host-kvm', 'host-ironic'], hypervisors,
            {'capabilities:numa_topology': 'x'}, {'architecture': 'aarch64'},
            ('ImagePropertiesFilter', 'ComputeCapabilitiesFilter'))
        self.assertIn('host-kvm', gaps['ImagePropertiesFilter'])
        self.assertIn('host-ironic', gaps['ImagePropertiesFilter'])
        self.assertIn('cpu_arch', gaps['ImagePropertiesFilter'])
        self.assertIn('HostState.numa_topology',
                      gaps['ComputeCapabilitiesFilter'])
        self.assertEqual({}, filters.unchecked(
            ['host-kvm'], hypervisors, {}, {'architecture': 'x86_64'},
            ('ImagePropertiesFilter', 'ComputeCapabilitiesFilter')))


class TestRegistry(unittest.TestCase):
    """filters.FILTERS is the one registry of the post-filters."""

    def test_every_filter_module_is_registered(self):
        found = []
        for info in pkgutil.iter_modules(filters.__path__):
            module = importlib.import_module(
                '%s.%s' % (filters.__name__, info.name))
            if hasattr(module, 'NAME'):
                found.append(module.__name__)
        self.assertEqual(sorted(found),
                         sorted(f.__name__ for f in filters.FILTERS))

    def test_the_order_they_run_in(self):
        self.assertEqual(
            ('ComputeFilter', 'AggregateInstanceExtraSpecsFilter',
             'AggregateMultiTenancyIsolation', 'ImagePropertiesFilter',
             'ComputeCapabilitiesFilter', 'NUMATopologyFilter',
             'BlazarFilter'),
            filters.CHECKED_FILTERS)
        self.assertFalse(set(filters.CHECKED_FILTERS)
                         & set(filters.NOT_CHECKED))

    def test_a_reason_of_no_registered_filter(self):
        self.assertEqual('h1: SomeFilter', filters.post_filter_text(
            'h1', {'filter': 'SomeFilter'}, 'p1'))

    def test_a_disabled_filter_does_not_run(self):
        services = [{'host': 'h1', 'status': 'disabled', 'state': 'up'}]
        self.assertEqual({'h1': [{'filter': 'ComputeFilter',
                                  'why': 'disabled'}]},
                         filters.post_filters(['h1'], {}, [], services,
                                              'p1', ['ComputeFilter']))
        self.assertEqual({}, filters.post_filters(
            ['h1'], {}, [], services, 'p1', ['ImagePropertiesFilter']))
