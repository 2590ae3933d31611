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

Builds (once, then reuses) two virtualenvs with the same packages, one with
gpuclient installed and one without, and runs the same OSC command
(``openstack aggregate list --help``) in both, interleaved (the order
alternates from pair to pair), printing the median of the per-pair time
ratios. It also prints the import time the plugin module adds on top of
what OSC imports anyway (``python -X importtime``).

A benchmark that prints figures, not a gate. Target: <= 3 % added.

    python tools/bench_startup.py [--pairs 20] [--workdir DIR]
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMMAND = ['aggregate', 'list', '--help']


def run(cmd, **kwargs):
    return subprocess.run(cmd, check=True, **kwargs)


def venv(path, with_gpuclient):
    python = os.path.join(path, 'bin', 'python')
    stamp = os.path.join(path, '.bench-ready')
    if not os.path.exists(stamp):
        shutil.rmtree(path, ignore_errors=True)
        run([sys.executable, '-m', 'venv', path])
        pip = [python, '-m', 'pip', 'install', '-q']
        run(pip + ['-r', os.path.join(ROOT, 'requirements.txt'),
                   'osc-placement'])
        if with_gpuclient:
            run(pip + ['--no-deps', ROOT])
        open(stamp, 'w').close()
    elif with_gpuclient:
        # always measure the working tree's plugin module
        run([python, '-m', 'pip', 'install', '-q', '--no-deps',
             '--force-reinstall', ROOT])
    return python


def time_once(python):
    exe = os.path.join(os.path.dirname(python), 'openstack')
    env = dict(os.environ)
    for key in list(env):
        if key.startswith('OS_'):
            del env[key]
    start = time.perf_counter()
    run([exe] + COMMAND, stdout=subprocess.DEVNULL, env=env)
    return time.perf_counter() - start


def _importtime(python, code):
    """{module: self microseconds} from ``python -X importtime``."""
    out = subprocess.run(
        [python, '-X', 'importtime', '-c', code],
        check=True, capture_output=True, text=True,
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


def plugin_import_us(python):
    """Microseconds and modules the plugin module adds to OSC's start-up.

    When OSC loads plugins (clientmanager.PLUGIN_MODULES) it has already
    imported osc-lib and oslo.i18n; what ``import gpuclient.plugin`` adds
    beyond those is what every ``openstack`` command pays for gpuclient.
    (OSC imports plugins with importlib, which -X importtime does not
    report, so the plugin is imported with a plain statement here.)
    """
    base = 'import osc_lib.utils, oslo_i18n'
    before = _importtime(python, base)
    after = _importtime(python, base + '; import gpuclient.plugin')
    added = {m: us for m, us in after.items() if m not in before}
    return sum(added.values()), sorted(added)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--pairs', type=int, default=20,
                        help='number of interleaved pairs (default 20)')
    parser.add_argument('--workdir', default='/var/tmp/gpuclient-bench',
                        help='where the two virtualenvs live')
    args = parser.parse_args()

    t0 = time.perf_counter()
    with_py = venv(os.path.join(args.workdir, 'with-gpuclient'), True)
    without_py = venv(os.path.join(args.workdir, 'without-gpuclient'), False)
    print('virtualenvs ready in %.1f s' % (time.perf_counter() - t0))
    # warm the page cache and stevedore's entry point caches
    for _ in range(2):
        time_once(with_py)
        time_once(without_py)

    ratios, with_t, without_t = [], [], []
    for i in range(args.pairs):
        if i % 2:
            b = time_once(without_py)
            a = time_once(with_py)
        else:
            a = time_once(with_py)
            b = time_once(without_py)
        with_t.append(a)
        without_t.append(b)
        ratios.append(a / b)
    added, modules = plugin_import_us(with_py)
    print('command: openstack %s, %d interleaved pairs'
          % (' '.join(COMMAND), args.pairs))
    print('median time with gpuclient:    %.3f s'
          % statistics.median(with_t))
    print('median time without gpuclient: %.3f s'
          % statistics.median(without_t))
    median = statistics.median(ratios)
    print('median per-pair ratio: %.4f (%+.2f %%; target <= +3 %%)'
          % (median, (median - 1) * 100))
    print('import time gpuclient adds to OSC start-up: %d us '
          '(modules: %s)' % (added, ', '.join(modules)))


if __name__ == '__main__':
    main()
