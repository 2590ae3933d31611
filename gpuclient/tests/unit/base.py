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

"""Base classes for unit tests."""

import argparse
import logging
from unittest import mock

import fixtures
import testtools


class ParserError(Exception):
    pass


def parser_error(message):
    """argparse's error(MESSAGE) as a ParserError that keeps MESSAGE."""
    raise ParserError(message)


class TestCase(testtools.TestCase):
    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.NestedTempfile())
        self.logger = self.useFixture(
            fixtures.FakeLogger(level=logging.INFO)
        )


class CommandTestCase(TestCase):
    """Runs a command class the way OSC does: parse, then take_action."""

    def make_app(self, client_manager):
        app = mock.Mock()
        app.client_manager = client_manager
        app.options = mock.Mock()
        return app

    def check_parser(self, cmd, args, verify_args=()):
        parser = cmd.get_parser('check_parser')
        # argparse exits on errors: turn that into an exception to assert on
        with mock.patch.object(
            argparse.ArgumentParser,
            'error',
            side_effect=parser_error,
        ):
            parsed = parser.parse_args(args)
        for name, value in verify_args:
            self.assertEqual(value, getattr(parsed, name), name)
        return parsed
