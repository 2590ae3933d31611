#!/usr/bin/env python3
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
"""What gpuclient adds to every ``openstack`` command's start-up.

Times OSC commands that are not gpuclient's, ``openstack aggregate list
--help``, ``openstack server list --help`` and ``openstack --version``
(and ``openstack server list`` itself when OS_CLOUD is set), with and
without the plugin, in one run: for each repetition and command the two
runs follow each other, in an order that alternates from pair to pair.
It prints, per command, the median times and the median of the per-pair
ratios (target: 1.03 or less), of wall-clock time and of CPU time (user
and system, of the child: steadier than wall-clock time on a busy
machine), how many gpuclient modules the command loads, and the import
time the plugin module adds on top of what OSC imports anyway.

Two venvs (``--without``): PYTHON's venv has gpuclient installed, the
venv of ``--without`` the same packages but gpuclient (and so none of
its requirements that OSC lacks); each runs its own ``openstack``. This
shows what installing gpuclient adds, its requirements included: what
the overlays below cannot show (a requirement that OSC or openstacksdk
imports wherever it is installed, as openstacksdk does prometheus_client:
the script prints how many of its modules each side loads). Build them
alike, e.g.::

    python3 -m venv /tmp/venv-with; python3 -m venv /tmp/venv-without
    /tmp/venv-without/bin/pip install python-openstackclient
    /tmp/venv-with/bin/pip install python-openstackclient
    /tmp/venv-with/bin/pip install .
    python tools/bench_startup.py --python /tmp/venv-with/bin/python \
        --without /tmp/venv-without/bin/python

Otherwise, one interpreter: the plugin is hidden, not uninstalled.
OSC finds plugins only through entry points (importlib.metadata, through
stevedore), and importlib.metadata takes each distribution from the first
sys.path entry that has it. Each run gets, first on PYTHONPATH, a
directory of its own with a ``gpuclient`` dist-info made here: for the
runs *with* the plugin its entry points are those of this tree's
setup.cfg, for the runs *without* it has none. This tree comes next on
PYTHONPATH, so the runs with the plugin run this tree's code, and
whatever gpuclient is installed in the interpreter (an older release, an
editable install whose metadata predates a setup.cfg change, or none) is
hidden in both. Everything else (OSC, the other plugins, the page cache)
is shared. Before timing, the script checks what each run sees: the
plugin's entry points, and that a run without them loads no gpuclient
module. The two directories differ, so stevedore keeps a cache of entry
points for each.

Like for like: pip compiles an installed package's modules to bytecode,
and OSC's are, but this tree's may not be (PYTHONDONTWRITEBYTECODE, as
tox sets it), and then every run with the plugin would compile gpuclient
from source, which no installed gpuclient does. So the script first
compiles this tree's gpuclient package (``python -m compileall``, into
its ``__pycache__``, which git ignores).

A benchmark that prints figures, not a gate::

    python tools/bench_startup.py [--pairs 20] [--python PYTHON]
        [--without PYTHON]

PYTHON is the interpreter of the environment to measure (default: this
one); its ``openstack`` script, next to it, is what is run.
"""

import argparse
import configparser
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HELP_COMMANDS = (['aggregate', 'list', '--help'],
                 ['server', 'list', '--help'],
                 ['--version'])
CLOUD_COMMAND = ['server', 'list']

# Run in a child: the modules the openstack shell loaded for ARGV, on
# stderr, after the command's own output.
_COUNT = '''
import atexit
import sys

from openstackclient import shell


def _report():
    sys.stderr.write('LOADED-MODULES %s\\n' % ' '.join(sorted(sys.modules)))


atexit.register(_report)
sys.exit(shell.main(sys.argv[1:]))
'''

# Run in a child: the gpuclient entry points of OSC's plugin groups that
# importlib.metadata sees (group and name, one a line).
_ENTRY_POINTS = '''
from importlib import metadata

for group in ('openstack.cli.extension', 'openstack.gpu.v1'):
    for ep in metadata.entry_points(group=group):
        if ep.value.split(':')[0].split('.')[0] == 'gpuclient':
            print(group, ep.name)
'''


def entry_points_text():
    """entry_points.txt of this tree's setup.cfg."""
    config = configparser.ConfigParser()
    config.read(os.path.join(ROOT, 'setup.cfg'))
    lines = []
    for group, text in config['entry_points'].items():
        lines.append('[%s]' % group)
        lines.extend(line.strip() for line in text.splitlines()
                     if line.strip())
        lines.append('')
    return '\n'.join(lines)


def overlay(path, with_plugin):
    """A directory holding a gpuclient dist-info, with this tree's entry
    points or none; returns the environment of a run that puts it first
    on PYTHONPATH, this tree next."""
    dist_info = os.path.join(path, 'gpuclient-0.0.0.dist-info')
    os.makedirs(dist_info)
    with open(os.path.join(dist_info, 'METADATA'), 'w') as out:
        out.write('Metadata-Version: 2.1\nName: gpuclient\n'
                  'Version: 0.0.0\n')
    if with_plugin:
        with open(os.path.join(dist_info, 'entry_points.txt'), 'w') as out:
            out.write(entry_points_text())
    env = {key: value for key, value in os.environ.items()
           if key != 'PYTHONPATH'}
    env['PYTHONPATH'] = os.pathsep.join(
        [path, ROOT] + [p for p in os.environ.get('PYTHONPATH', '').split(
            os.pathsep) if p])
    return env


def without_os_vars(env):
    return {key: value for key, value in env.items()
            if not key.startswith('OS_')}


def check(python, env, with_plugin):
    """Fail unless the run sees the plugin's entry points exactly when
    WITH_PLUGIN (and, without them, loads no gpuclient module)."""
    seen = subprocess.run([python, '-c', _ENTRY_POINTS], check=True,
                          capture_output=True, text=True,
                          env=env).stdout.split('\n')
    plugin = 'openstack.cli.extension gpu' in seen
    if plugin != with_plugin:
        sys.exit('the run %s the plugin sees its entry points: %s'
                 % ('with' if with_plugin else 'without', plugin))
    if not with_plugin:
        modules = loaded_modules(python, env, HELP_COMMANDS[0])
        if modules:
            sys.exit('the run without the plugin loads %s' % modules)


def loaded_modules(python, env, command, top='gpuclient'):
    """The modules of package TOP that ``openstack COMMAND`` loads."""
    err = subprocess.run([python, '-c', _COUNT] + command, check=True,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         text=True, env=env).stderr
    for line in err.splitlines():
        if line.startswith('LOADED-MODULES'):
            return [name for name in line.split()[1:]
                    if name.split('.')[0] == top]
    return []


def _children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def time_once(exe, command, env):
    """(wall seconds, CPU seconds) of one ``openstack COMMAND``."""
    cpu = _children_cpu()
    start = time.perf_counter()
    subprocess.run([exe] + command, check=True, stdout=subprocess.DEVNULL,
                   env=env)
    return time.perf_counter() - start, _children_cpu() - cpu


def _importtime(python, code, env):
    """{module: self microseconds} from ``python -X importtime``."""
    out = subprocess.run(
        [python, '-X', 'importtime', '-c', code],
        check=True, capture_output=True, text=True, env=env,
    ).stderr.splitlines()
    found = {}
    for line in out:
        if not line.startswith('import time:') or 'self [us]' in line:
            continue
        self_us, _cumulative, name = [
            part.strip() for part in line.split('|', 2)
        ]
        found[name] = int(self_us.split(':')[-1].strip())
    return found


def plugin_import_us(python, env):
    """Microseconds and modules the plugin module adds to OSC's start-up.

    When OSC loads plugins (clientmanager.PLUGIN_MODULES) it has already
    imported osc-lib and oslo.i18n; what ``import gpuclient.plugin`` adds
    beyond those is what every ``openstack`` command pays for gpuclient's
    plugin module (its command modules: see the module counts).
    """
    base = 'import osc_lib.utils, oslo_i18n'
    before = _importtime(python, base, env)
    after = _importtime(python, base + '; import gpuclient.plugin', env)
    added = {m: us for m, us in after.items() if m not in before}
    return sum(added.values()), sorted(added)


def compile_tree(python):
    """Bytecode for this tree's gpuclient package, as pip writes it for
    an installed one (see the docstring)."""
    subprocess.run([python, '-m', 'compileall', '-q',
                    os.path.join(ROOT, 'gpuclient')],
                   check=True, stdout=subprocess.DEVNULL)


def openstack(python):
    """The ``openstack`` script of PYTHON's environment."""
    return os.path.join(os.path.dirname(python), 'openstack')


def sides(args, tmp):
    """(interpreter, environment) with the plugin and without it, and
    how they differ: two venvs (--without) or two overlays."""
    if args.without:
        env = {key: value for key, value in os.environ.items()
               if key != 'PYTHONPATH'}
        return ((args.python, env), (args.without, env),
                'plugin installed in the first venv only')
    compile_tree(args.python)
    return ((args.python, overlay(os.path.join(tmp, 'with'), True)),
            (args.python, overlay(os.path.join(tmp, 'without'), False)),
            'plugin hidden by metadata overlays (see the docstring)')


def measure(args, tmp):
    """Check the two sides, time the runs, print the figures."""
    (python, with_env), (python_without, without_env), how = sides(args,
                                                                   tmp)
    exe, exe_without = openstack(python), openstack(python_without)
    check(python, with_env, True)
    check(python_without, without_env, False)

    # (command, environment with, environment without)
    runs = [(command, without_os_vars(with_env),
             without_os_vars(without_env)) for command in HELP_COMMANDS]
    if os.environ.get('OS_CLOUD'):
        runs.append((CLOUD_COMMAND, with_env, without_env))

    # warm the page cache and stevedore's caches of entry points
    for command, with_run, without_run in runs:
        for _ in range(2):
            time_once(exe, command, with_run)
            time_once(exe_without, command, without_run)

    # command -> [(wall with, wall without, CPU with, CPU without)]
    figures = {tuple(command): [] for command, _w, _o in runs}
    for i in range(args.pairs):
        for command, with_run, without_run in runs:
            if i % 2:
                b = time_once(exe_without, command, without_run)
                a = time_once(exe, command, with_run)
            else:
                a = time_once(exe, command, with_run)
                b = time_once(exe_without, command, without_run)
            figures[tuple(command)].append((a[0], b[0], a[1], b[1]))

    print('%s against %s, %d interleaved pairs per command, %s'
          % (exe, exe_without, args.pairs, how))
    for command, with_run, without_run in runs:
        pairs = figures[tuple(command)]
        print('openstack %s' % ' '.join(command))
        for what, at in (('wall', 0), ('CPU', 2)):
            ratio = statistics.median(p[at] / p[at + 1] for p in pairs)
            print('  %-4s median with %.3f s, without %.3f s; median '
                  'per-pair ratio %.4f (%+.2f %%; target <= 1.03)'
                  % (what, statistics.median(p[at] for p in pairs),
                     statistics.median(p[at + 1] for p in pairs),
                     ratio, (ratio - 1) * 100))
        print('  gpuclient modules loaded: %d; prometheus_client modules '
              'loaded with %d, without %d'
              % (len(loaded_modules(python, with_run, command)),
                 len(loaded_modules(python, with_run, command,
                                    'prometheus_client')),
                 len(loaded_modules(python_without, without_run, command,
                                    'prometheus_client'))))
    added, modules = plugin_import_us(python, with_env)
    print('import time gpuclient.plugin adds to OSC start-up: %d us '
          '(modules: %s)' % (added, ', '.join(modules)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--pairs', type=int, default=20,
                        help='interleaved pairs per command (default 20)')
    parser.add_argument('--python', default=sys.executable,
                        help='interpreter of the environment to measure '
                             '(default: this one)')
    parser.add_argument('--without', metavar='PYTHON',
                        help='interpreter of a venv without gpuclient to '
                             'compare with (default: this tree, with its '
                             'plugin hidden)')
    args = parser.parse_args()

    cwd = os.getcwd()
    with tempfile.TemporaryDirectory(prefix='gpuclient-bench-') as tmp:
        # python -c puts the working directory first on sys.path: not
        # this tree's root, which may hold a gpuclient.egg-info
        os.chdir(tmp)
        try:
            measure(args, tmp)
        finally:
            os.chdir(cwd)


if __name__ == '__main__':
    main()
