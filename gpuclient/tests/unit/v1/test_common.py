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

"""The KEY=VALUE option of gpuclient.v1.common and its number check."""

import argparse
from unittest import mock

from osc_lib import exceptions
from osc_lib.cli import parseractions
import testtools

from gpuclient.tests.unit import base
from gpuclient.v1 import common


def _parser():
    parser = argparse.ArgumentParser()
    common.add_key_value_arg(parser, '--rate', '<class>=<price>', 'rates',
                             'VGPU=0.40', 'help')
    return parser


def _parse(parser, args):
    with mock.patch.object(argparse.ArgumentParser, 'error',
                           side_effect=base.parser_error):
        return parser.parse_args(args)


class TestKeyValueAction(testtools.TestCase):
    def test_is_osc_libs(self):
        self.assertTrue(issubclass(common.KeyValueAction,
                                   parseractions.KeyValueAction))

    def test_pairs(self):
        parser = _parser()
        self.assertEqual({}, _parse(parser, []).rates)
        self.assertEqual(
            {'VGPU': '0.5', 'PCI': '2', 'URL': 'a=b'},
            _parse(parser, ['--rate', ' VGPU = 0.4', '--rate', 'PCI=2',
                            '--rate', 'VGPU=0.5', '--rate', 'URL=a=b']).rates)

    def test_default_is_not_filled(self):
        parser = _parser()
        _parse(parser, ['--rate', 'VGPU=1'])
        # a second parse (OSC's interactive shell) starts empty again
        self.assertEqual({}, _parse(parser, []).rates)
        self.assertEqual({}, parser.get_default('rates'))

    def test_bad_pairs_say_what_to_type(self):
        parser = _parser()
        for text in ('VGPU', 'VGPU=', '=1', ' =1', 'VGPU= '):
            error = self.assertRaises(base.ParserError, _parse, parser,
                                      ['--rate', text])
            self.assertEqual(
                "argument --rate: %r: give <class>=<price>, e.g. VGPU=0.40"
                % text, str(error))


class TestNumberValues(testtools.TestCase):
    def test_numbers(self):
        self.assertEqual({'VGPU': 0.4, 'PCI': 2.0, 'X': 0.0},
                         common.number_values(
                             '--rate', {'VGPU': '0.4', 'PCI': '2', 'X': '0'},
                             'S', 'E'))
        self.assertEqual({'VGPU': 2}, common.number_values(
            '--resource', {'VGPU': '2'}, 'S', 'E', integer=True))
        self.assertEqual({}, common.number_values('--rate', None, 'S', 'E'))

    def test_bad_numbers(self):
        for text, integer in (('cheap', False), ('-1', False),
                              ('nan', False), ('inf', False),
                              ('1.5', True), ('-2', True)):
            error = self.assertRaises(
                exceptions.CommandError, common.number_values, '--rate',
                {'VGPU': text}, '<class>=<price>', 'VGPU=0.40', integer)
            self.assertEqual('--rate VGPU=%s: give <class>=<price>, e.g. '
                             'VGPU=0.40.' % text, str(error))
