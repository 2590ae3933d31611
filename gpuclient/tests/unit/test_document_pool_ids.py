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

"""gpu export/diff/apply --pool by the pool's aggregate ID or UUID, as
every other command takes a pool (``rules.pools.pool_names``)."""

from osc_lib import exceptions

from gpuclient.ops import document_ops
from gpuclient.tests.unit import test_document_ops


class TestScopeByAggregateId(test_document_ops.ApplyTestCase):
    def setUp(self):
        super().setUp()
        self.build()
        self.agg = next(a for a in self.cloud.aggregates if a.name == 'ws')

    def test_export_diff_apply_by_id_and_uuid(self):
        # the same document, rows and plan as --pool ws (whatever the
        # plan holds: compared, not assumed empty)
        text = document_ops.export(self.client, ['ws'])
        path = self.path(text)
        before = self.state()

        def answers(scope):
            return (
                document_ops.export(self.client, scope),
                document_ops.diff(self.client, path, prune=True,
                                  pool_names=scope),
                [repr(step) for step in document_ops.apply(
                    self.client, path, prune=True, dry_run=True,
                    pool_names=scope)])

        by_name = answers(['ws'])
        self.assertEqual(text, by_name[0])
        for given in (str(self.agg.id), self.agg.uuid.upper()):
            self.assertEqual(by_name, answers([given]), given)
        self.assertEqual(before, self.state())

    def test_unknown_id_is_refused(self):
        exc = self.assertRaises(exceptions.CommandError, document_ops.export,
                                self.client, ['no-such-aggregate'])
        self.assertIn('No GPU pool named no-such-aggregate', str(exc))
