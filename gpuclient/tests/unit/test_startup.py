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

"""What gpuclient's commands cost every ``openstack`` command.

When OSC starts it loads every command class of every plugin (cliff's
CommandManager loads each ``openstack.gpu.v1`` entry point), whatever
command is run: ``openstack server list --help`` imports every gpuclient
command module. So a command module imports at module level only what its
classes need; ``ops``, ``rules`` and ``cloud`` are imported in the
functions that use them.
"""

import configparser
import importlib.metadata
import os
import re
import subprocess
import sys

from gpuclient.tests.unit import base
from gpuclient.tests.unit import test_descriptions
from gpuclient.tests.unit import test_requirements
from gpuclient.v1 import check

ROOT = test_descriptions.ROOT

# Every gpuclient module that loading the plugin and every command class
# may import: the plugin, i18n, the formatters, v1/common.py and the
# command modules. Nothing of gpuclient.ops, .rules or .cloud.
STARTUP_MODULES = frozenset({
    'gpuclient',
    'gpuclient.formatters',
    'gpuclient.i18n',
    'gpuclient.plugin',
    'gpuclient.v1',
    'gpuclient.v1.candidates',
    'gpuclient.v1.capacity',
    'gpuclient.v1.check',
    'gpuclient.v1.common',
    'gpuclient.v1.config',
    'gpuclient.v1.device',
    'gpuclient.v1.document',
    'gpuclient.v1.flavor',
    'gpuclient.v1.host',
    'gpuclient.v1.image',
    'gpuclient.v1.pool',
    'gpuclient.v1.profile',
    'gpuclient.v1.quota',
    'gpuclient.v1.server',
    'gpuclient.v1.usage',
})

_LOAD = '''
import importlib
import sys

for target in sys.argv[1:]:
    module, _sep, attr = target.partition(':')
    loaded = importlib.import_module(module)
    if attr:
        getattr(loaded, attr)
print('\\n'.join(sorted(m for m in sys.modules
                        if m.split('.')[0] == 'gpuclient')))
'''


def startup_targets():
    """The plugin module and every command class of setup.cfg."""
    config = configparser.ConfigParser()
    config.read(os.path.join(ROOT, 'setup.cfg'))
    plugins = [line.partition('=')[2].strip() for line in
               config['entry_points']['openstack.cli.extension'].splitlines()
               if line.strip()]
    return plugins + sorted(test_descriptions.entry_points().values())


def run_fresh(code, *argv, env=None):
    """stdout of CODE run with ARGV in a fresh interpreter (this tree's
    code first on the path, ENV added to the environment)."""
    env = dict(os.environ, **(env or {}))
    env['PYTHONPATH'] = os.pathsep.join(
        [ROOT] + [p for p in env.get('PYTHONPATH', '').split(os.pathsep)
                  if p])
    return subprocess.run([sys.executable, '-c', code, *argv],
                          check=True, capture_output=True, text=True,
                          env=env).stdout


def loaded_modules(targets):
    """gpuclient modules a fresh interpreter holds after loading
    TARGETS."""
    return set(run_fresh(_LOAD, *targets).split())


# Every import statement goes through builtins.__import__, whether the
# module is loaded already or not, with the importer's globals: the hook
# (installed before OSC's shell, whose clientmanager loads the plugins)
# records the top-level modules of $GPUCLIENT_WATCHED that a gpuclient
# module imports itself.
_OSC = '''
import builtins
import os
import sys

WATCHED = set(os.environ['GPUCLIENT_WATCHED'].split())
by_gpuclient = set()
_import = builtins.__import__


def _watch(name, globals=None, locals=None, fromlist=(), level=0):
    importer = (globals or {}).get('__name__') or ''
    top = name.split('.')[0]
    if (level == 0 and top in WATCHED
            and importer.split('.')[0] == 'gpuclient'):
        by_gpuclient.add(top)
    return _import(name, globals, locals, fromlist, level)


builtins.__import__ = _watch

from openstackclient import shell  # noqa: E402

try:
    shell.main(sys.argv[1:])
except SystemExit:
    pass
sys.stdout.write('\\nBY-GPUCLIENT ' + ' '.join(sorted(by_gpuclient))
                 + '\\nMODULES ' + ' '.join(sorted(sys.modules)) + '\\n')
'''

# what a command that plans nothing must not import: the solver of gpu
# profile plan (an extra) with numpy, and the document schema checker
HEAVY = ('highspy', 'numpy', 'jsonschema')


def optional_modules():
    """Top-level modules that no ``openstack`` command may import from
    gpuclient unless it uses them: those of the extras (setup.cfg) and
    of what they require, jsonschema and attrs (test requirements, whose
    cost test_requirements.TestStartUpDependencies tells), and PyYAML, a
    requirement imported only where a document is read or written or the
    GPU catalogue is read."""
    config = configparser.ConfigParser()
    config.read(os.path.join(ROOT, 'setup.cfg'))
    names = [line for text in config['extras'].values()
             for line in text.split() if line]
    dists = test_requirements._dependencies(
        re.match(r'[A-Za-z0-9._-]+', name).group() for name in names)
    modules = {'jsonschema', 'attrs', 'yaml'}
    for module, owners in importlib.metadata.packages_distributions(
            ).items():
        if {test_requirements.normalize(d) for d in owners} & dists:
            modules.add(module)
    # an extra not installed here: its distribution's name
    modules.update(d.replace('-', '_') for d in dists)
    return modules


def osc_modules(*argv, watched=()):
    """Top-level modules a fresh ``openstack ARGV`` (in-process OSC
    shell, every plugin loaded) holds at its end, every module it holds,
    and which of the top-level modules WATCHED a gpuclient module
    imported."""
    env = {'GPUCLIENT_WATCHED': ' '.join(sorted(watched))}
    text = run_fresh(_OSC, *argv, env=env)
    by_gpuclient, _sep, line = text.rpartition('\nBY-GPUCLIENT ')[
        2].partition('\nMODULES ')
    return ({name.split('.')[0] for name in line.split()},
            set(line.split()), set(by_gpuclient.split()))


class TestStartup(base.TestCase):
    def test_targets_read(self):
        targets = startup_targets()
        self.assertIn('gpuclient.plugin', targets)
        self.assertIn('gpuclient.v1.pool:CreatePool', targets)
        self.assertGreaterEqual(len(targets), 20)

    def test_loading_every_command_class_is_cheap(self):
        self.assertEqual(set(STARTUP_MODULES),
                         loaded_modules(startup_targets()))

    def test_check_description_names_the_checks(self):
        # filled in when asked for, not when the class is loaded
        from gpuclient.rules import checks

        description = check.Check(None, None).get_description()
        self.assertNotIn('%s', description)
        self.assertIn('Checks: %s. Needs admin.' % ', '.join(checks.CHECKS),
                      description)

    def test_non_gpu_command_imports_no_solver_nor_schema(self):
        # the plugin is loaded (its global option is in every command),
        # its heavy dependencies are not
        for argv in (('aggregate', 'list', '--help'),
                     ('gpu', 'profile', 'plan', '--help')):
            top, modules, _by_gpuclient = osc_modules(*argv)
            self.assertIn('gpuclient.plugin', modules, argv)
            self.assertEqual([], [m for m in HEAVY if m in top], argv)

    def test_no_command_imports_an_optional_dependency(self):
        # openstacksdk imports prometheus_client wherever it is installed
        # (and rich attrs), so what is loaded at the end tells little:
        # what counts is what gpuclient's own modules import. --version
        # and other commands' help load the plugin and every command
        # class; capacity list's help the openmetrics formatter too.
        watched = optional_modules()
        for module in ('prometheus_client', 'highspy', 'numpy', 'yaml'):
            self.assertIn(module, watched)
        for argv in (('--version',), ('aggregate', 'list', '--help'),
                     ('gpu', 'capacity', 'list', '--help')):
            # osc_lib: gpuclient imports it at start-up, so the hook sees
            # what it is meant to see
            _top, modules, by_gpuclient = osc_modules(
                *argv, watched=watched | {'osc_lib'})
            self.assertIn('gpuclient.plugin', modules, argv)
            self.assertEqual({'osc_lib'}, by_gpuclient, argv)
