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

"""OSC's own options as gpu commands take them (issue 23):
--os-compute-api-version as a floor, KEY=VALUE options' refusals."""

from gpuclient.tests.functional import base


class TestComputeApiVersion(base.FunctionalTestCase):
    def test_lower_is_refused_with_the_need(self):
        rc, out, err = self.openstack_raw(
            '--os-compute-api-version', '2.1', 'gpu', 'host', 'list')
        self.assertEqual(1, rc, err)
        self.assertEqual('', out)
        self.assertIn('This command needs compute API 2.53 or later '
                      '(hypervisor ids as provider uuids); '
                      '--os-compute-api-version 2.1 is lower.', err)
        self.assertNotIn('Traceback', err)

    def test_higher_lists_the_same_hosts(self):
        plain = self.openstack('gpu', 'host', 'list')
        rc, out, err = self.openstack_raw(
            '--os-compute-api-version', '2.90', 'gpu', 'host', 'list',
            '-f', 'value', '-c', 'Host')
        self.assertEqual(0, rc, err)
        self.assertEqual(sorted({row['Host'] for row in plain}),
                         sorted(set(out.split())))
        self.assertIn('--os-compute-api-version 2.90: gpu commands send',
                      err)


class TestKeyValueOptions(base.FunctionalTestCase):
    def test_bad_rates_say_what_to_type(self):
        # (rate, exit status, message): argparse's refusal of the syntax
        # (2, with the usage line), then the price check (1)
        for rate, status, message in (
                ('VGPU', 2, "argument --rate: 'VGPU': give <class>=<price>, "
                            "e.g. VGPU=0.40"),
                ('VGPU=cheap', 1, '--rate VGPU=cheap: give <resource '
                                  'class>=<price per GPU-hour>')):
            rc, _out, err = self.openstack_raw('gpu', 'usage', 'list',
                                               '--rate', rate)
            self.assertEqual(status, rc, err)
            self.assertIn(message, err)
