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

from gpuclient.rules import model
from gpuclient.rules.scheduler import filters
from gpuclient.tests.unit.scheduler.filters import cases


def removed(hosts, enabled, services=(), hypervisors=(), **request):
    """{host: [reason dicts]} of the ENABLED filters on HOSTS of a cloud
    with SERVICES and HYPERVISORS, for the request ``filters.spec`` makes
    of REQUEST (its keywords; project p1)."""
    cloud = model.Cloud([], list(hypervisors), list(services),
                        blazar=False)
    request.setdefault('project_id', 'p1')
    ctx = filters.context(cloud, filters.spec({}, **request))
    return filters.run(hosts, ctx, enabled)


class TestJudges(unittest.TestCase):

    def test_run_and_text(self):
        hypervisors = [cases.api_view('fake'), cases.api_view('kvm')]
        enabled = ('ImagePropertiesFilter', 'ComputeCapabilitiesFilter')
        flavor = {'extra_specs': {'capabilities:hypervisor_type': 's== QEMU'}}
        post = removed(['host-fake', 'host-kvm'], enabled,
                       hypervisors=hypervisors, flavor=flavor,
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
        self.assertEqual({}, removed(
            ['host-fake'], ('ComputeFilter',), hypervisors=hypervisors,
            flavor=flavor, image={'architecture': 'aarch64'}))

    def test_unchecked_names_what_and_where(self):
        hypervisors = [cases.api_view('kvm'), cases.api_view('ironic')]
        cloud = model.Cloud([], hypervisors, [], blazar=False)
        enabled = ('ImagePropertiesFilter', 'ComputeCapabilitiesFilter')

        def ctx(extra_specs, image):
            return filters.context(cloud, filters.spec(
                {}, {'extra_specs': extra_specs}, image=image))

        gaps = filters.unchecked(
            ['host-kvm', 'host-ironic'],
            ctx({'capabilities:numa_topology': 'x'},
                {'architecture': 'aarch64'}), enabled)
        self.assertIn('host-kvm', gaps['ImagePropertiesFilter'])
        self.assertIn('host-ironic', gaps['ImagePropertiesFilter'])
        self.assertIn('cpu_arch', gaps['ImagePropertiesFilter'])
        self.assertIn('HostState.numa_topology',
                      gaps['ComputeCapabilitiesFilter'])
        self.assertEqual({}, filters.unchecked(
            ['host-kvm'], ctx({}, {'architecture': 'x86_64'}), enabled))

    def test_the_default_architecture_stands_in_for_a_given_image(self):
        # [filter_scheduler] image_properties_default_architecture: judged
        # for an image that names none ({}: none given), not where no
        # image is judged (None: a flavor counted, a move)
        settings = {'image_properties_default_architecture': 'aarch64'}
        self.assertEqual('aarch64', filters.spec(
            settings, image={}).wanted['architecture'])
        self.assertIsNone(filters.spec(settings).wanted['architecture'])


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
                         removed(['h1'], ['ComputeFilter'], services))
        self.assertEqual({}, removed(['h1'], ['ImagePropertiesFilter'],
                                     services))
