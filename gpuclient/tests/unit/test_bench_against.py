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

"""tools/bench_against.py: the figures it reads and the table it prints
(imported by path: the script is not a package module)."""

import importlib.util
import os

from gpuclient.tests.unit import base

SCRIPT = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))), 'tools', 'bench_against.py')


def load():
    spec = importlib.util.spec_from_file_location('bench_against', SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class TestFigures(base.TestCase):
    def setUp(self):
        super().setUp()
        self.bench = load()

    def test_reads_seconds_lines_only(self):
        out = '\n'.join([
            '== 1000 seeded GPU hosts in Placement ==',
            'gpuclient snapshot.read (API time, median of 3): 0.412 s, '
            '7 HTTP requests',
            'gpuclient capacity.rows (CPU time, median of 3): 0.050 s',
            'hosts counted: 1004 (1000 synthetic hypervisor entries)',
            'ratio: os-capacity / gpuclient API time = 12.1x',
        ])
        self.assertEqual(
            {'gpuclient snapshot.read (API time, median of 3)': 0.412,
             'gpuclient capacity.rows (CPU time, median of 3)': 0.05},
            self.bench.figures(out))

    def test_first_of_a_repeated_label(self):
        self.assertEqual({'x': 1.0},
                         self.bench.figures('x: 1 s\nx: 2 s\n'))

    def test_table_medians_and_ratio(self):
        results = {'base': [{'a': 1.0, 'b': 2.0}, {'a': 3.0, 'b': 2.0},
                            {'a': 2.0, 'b': 2.0}],
                   'head': [{'a': 2.0, 'b': 1.0}, {'a': 2.2},
                            {'a': 1.8, 'b': 1.0}]}
        # b is missing from one head round: only a is compared
        self.assertEqual([('a', 2.0, 2.0, 1.0)],
                         self.bench.table(results))

    def test_zero_base_has_no_ratio(self):
        results = {'base': [{'a': 0.0}], 'head': [{'a': 1.0}]}
        self.assertEqual([('a', 0.0, 1.0, None)], self.bench.table(results))
