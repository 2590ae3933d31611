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

"""Every command's parser, as OSC writes them: each argument that takes a
value shows a metavar ``<name>`` in --help (never argparse's ``{a,b}`` or
``DEST``), and an argument limited to choices names them in its help.

The commands are those of setup.cfg (``openstack.gpu.v1``); the options
cliff adds to every Lister and ShowOne (-f, -c, --quote, ...) are cliff's
and left out.
"""

import argparse
import re
from unittest import mock

from osc_lib.command import command

from gpuclient.tests.unit import base
from gpuclient.tests.unit import test_descriptions

METAVAR = re.compile(r'^<[^<>\s]+>$|^<[^<>\s]+>=<[^<>\s]+>$')


def _cliff_options(cls):
    """Option strings the cliff base class of CLS adds by itself."""
    for klass in (command.Lister, command.ShowOne, command.Command):
        if issubclass(cls, klass):
            bare = type('Bare', (klass,),
                        {'__module__': __name__,
                         'take_action': lambda self, parsed_args: None})
            parser = bare(mock.Mock(), None).get_parser('bare')
            return {s for a in parser._actions for s in a.option_strings}
    return set()


def parsers():
    """[(command name, argparse parser, cliff's own option strings)]."""
    found = []
    for name, target in sorted(test_descriptions.entry_points().items()):
        cls = test_descriptions.load(target)
        parser = cls(mock.Mock(), None).get_parser('openstack ' + name)
        found.append((name, parser, _cliff_options(cls)))
    return found


def valued(parser, cliff_options):
    """(label, action) of each argument that takes a value."""
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction) or action.nargs == 0:
            continue
        if set(action.option_strings) & cliff_options:
            continue
        label = '/'.join(action.option_strings) or action.dest
        yield label, action


class TestMetavars(base.TestCase):
    def test_commands_found(self):
        found = parsers()
        self.assertGreaterEqual(len(found), 20)
        # the walk sees the options that take values (not only flags)
        labels = {label for _n, parser, cliff in found
                  for label, _a in valued(parser, cliff)}
        self.assertIn('--layout', labels)
        self.assertIn('--pool', labels)

    def test_metavar_shape(self):
        bad = []
        for name, parser, cliff in parsers():
            for label, action in valued(parser, cliff):
                metavar = action.metavar
                if isinstance(metavar, tuple):
                    ok = all(METAVAR.match(m or '') for m in metavar)
                else:
                    ok = bool(METAVAR.match(metavar or ''))
                if not ok:
                    bad.append('%s %s: metavar %r' % (name, label, metavar))
        self.assertEqual([], bad)

    def test_choices_in_help(self):
        # with metavar <x>, --help no longer shows the choices: the help
        # text must name every one
        bad = []
        for name, parser, cliff in parsers():
            for label, action in valued(parser, cliff):
                if not action.choices:
                    continue
                text = action.help or ''
                missing = [str(c) for c in action.choices
                           if str(c) not in text]
                if missing:
                    bad.append('%s %s: help names not %s'
                               % (name, label, ', '.join(missing)))
        self.assertEqual([], bad)
