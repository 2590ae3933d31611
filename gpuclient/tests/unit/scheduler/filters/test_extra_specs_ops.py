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

"""gpuclient.rules.scheduler.filters.extra_specs_ops: the operators of
extra spec values, as Nova's."""

import unittest

from gpuclient.rules.scheduler.filters import extra_specs_ops


class TestSpecMatch(unittest.TestCase):

    def test_operators(self):
        cases = [('4', '>= 2', True), ('1', '>= 2', False),
                 ('2', '= 2', True), ('3', '= 2', True), ('1', '= 2', False),
                 ('2', '== 2.0', True), ('2', '!= 2', False),
                 ('abc', 's== abc', True), ('abc', 's!= abc', False),
                 ('abc', 's< abd', True), ('abc', 's>= abd', False),
                 ('[a, b]', '<in> a', True), ('[a, b]', '<in> c', False),
                 ('[a, b]', '<all-in> a b', True),
                 ('[a, b]', '<all-in> a c', False),
                 ('b', '<or> a <or> b', True), ('c', '<or> a <or> b', False),
                 ('x', 'x', True), ('x', 'y', False), ('x', '>=', False),
                 (None, 's== x', False)]
        for value, req, expected in cases:
            self.assertEqual(expected, extra_specs_ops.spec_match(value, req),
                             (value, req))

    def test_numeric_operator_on_text_raises(self):
        self.assertRaises(ValueError, extra_specs_ops.spec_match, 'abc',
                          '>= 2')
