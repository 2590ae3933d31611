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
import configparser
from importlib import metadata as importlib_metadata
import logging
import os
from unittest import mock

import fixtures
from stevedore import extension
import testtools

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))


class ParserError(Exception):
    pass


def declared_entry_points():
    """{group: {name: "module:attr"}} of setup.cfg."""
    config = configparser.ConfigParser()
    config.read(os.path.join(ROOT, 'setup.cfg'))
    found = {}
    for group, text in config['entry_points'].items():
        found[group] = dict(
            (part.strip() for part in line.split('=', 1))
            for line in text.splitlines() if line.strip())
    return found


def _is_gpuclient(entry_point):
    dist = entry_point.dist
    return dist is not None and dist.name.lower() == 'gpuclient'


_TREE_ENTRY_POINTS = {}


def tree_entry_points(group):
    """GROUP's entry points once this tree is installed: every other
    distribution's, and setup.cfg's instead of those of the gpuclient
    metadata the interpreter holds (which may be older than the tree)."""
    if group not in _TREE_ENTRY_POINTS:
        found = [ep for ep in importlib_metadata.entry_points(group=group)
                 if not _is_gpuclient(ep)]
        found += [importlib_metadata.EntryPoint(name, target, group)
                  for name, target in declared_entry_points().get(
                      group, {}).items()]
        _TREE_ENTRY_POINTS[group] = sorted(found, key=lambda ep: ep.name)
    return _TREE_ENTRY_POINTS[group]


def tree_loader(cmd):
    """cliff's DisplayCommandBase._load_formatter_plugins, on the entry
    points of tree_entry_points."""
    loaded = []
    for entry_point in tree_entry_points(cmd.formatter_namespace):
        plugin = entry_point.load()
        loaded.append(extension.Extension(entry_point.name, entry_point,
                                          plugin, plugin()))
    return extension.ExtensionManager.make_test_instance(loaded)


class TreeFormatters(fixtures.Fixture):
    """Commands load their -f formatters as this tree, installed, has
    them, so that the tests do not depend on a reinstall after setup.cfg
    changed (the interpreter's gpuclient metadata is what
    ``pip install -e`` wrote last)."""

    def _setUp(self):
        self.useFixture(fixtures.MonkeyPatch(
            'cliff.display.DisplayCommandBase._load_formatter_plugins',
            tree_loader))


def parser_error(message):
    """argparse's error(MESSAGE) as a ParserError that keeps MESSAGE."""
    raise ParserError(message)


class TestCase(testtools.TestCase):
    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.NestedTempfile())
        self.useFixture(TreeFormatters())
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
