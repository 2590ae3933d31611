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

"""``gpu candidate list``'s answer from what it read (rules.candidates)."""

from gpuclient.rules import candidates
from gpuclient.rules import model
from gpuclient.rules.scheduler import manager
from gpuclient.rules.scheduler import resource_request as request
from gpuclient.tests.unit import base

ROOT = '11111111-0000-0000-0000-000000000001'


class TestUnmappedProvider(base.TestCase):
    def test_an_offered_provider_no_hypervisor_maps_is_numa_judged(self):
        """A provider Placement offers that no hypervisor maps to a host
        is outside the hosts the filters judge, and still gets its NUMA
        verdict for a flavor asking a topology: not judged, no
        hypervisor record (never an empty cell)."""
        settings = manager.decide_settings(None)
        req = request.from_resources([('VCPU', 1)], [], settings, pools={},
                                     aggregates=[], project_id='p')
        answer = {
            'allocation_requests': [
                {'allocations': {ROOT: {'resources': {'VCPU': 1}}}}],
            'provider_summaries': {ROOT: {
                'resources': {'VCPU': {'capacity': 8, 'used': 0}},
                'traits': [], 'parent_provider_uuid': None,
                'root_provider_uuid': ROOT}}}
        flavor = {'name': 'f', 'vcpus': 2, 'ram': 1024,
                  'extra_specs': {'hw:numa_nodes': '1'}}
        found = candidates.table(candidates.Read(
            cloud=model.Cloud([], [], [], blazar=False), settings=settings,
            req=req,
            answer=answer, providers=[{'uuid': ROOT, 'name': 'orphan'}],
            project_id='p', flavor=flavor, host_facts={}))
        [row] = found.result['hosts']
        self.assertEqual(('orphan', False), (row['host'], row['mapped']))
        self.assertIn('not judged', row['numa'])
        self.assertIn('no hypervisor record', row['numa'])
