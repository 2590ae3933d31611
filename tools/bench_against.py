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
"""One benchmark script, this tree against another commit, in one run.

Checks the base commit out into a temporary worktree (``git worktree``),
then runs ``tools/<script> <args>`` of each tree in turn, ROUNDS times,
alternating which goes first, each with its own tree first on
``PYTHONPATH``. Every line a run prints of the form ``<label>: <number> s``
(the first number and unit after the colon) is a figure; the medians per
tree and the ratio this tree / base are printed for every label both
printed. Both trees' scripts must take the same arguments.

A benchmark that prints figures, not a gate: a ratio near 1.00 means "no
slower"; the spread between rounds says how much of a difference is noise.

    eval "$(tools/testcloud env)"
    python tools/bench_against.py --base b1a5d16 --rounds 3 -- \\
        bench_capacity.py --hosts 1000 --no-os-capacity --runs 3
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# "gpuclient snapshot.read (API time, median of 3): 0.412 s, 7 requests"
FIGURE = re.compile(r'^(?P<label>[^:]+):\s*(?P<value>[0-9]+(?:\.[0-9]+)?)'
                    r'\s*s\b')


def figures(text):
    """{label: seconds} of the figure lines of one run's output."""
    found = {}
    for line in text.splitlines():
        match = FIGURE.match(line.strip())
        if match:
            found.setdefault(match.group('label').strip(),
                             float(match.group('value')))
    return found


def run_tree(tree, script, args):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [tree] + [p for p in [os.environ.get('PYTHONPATH')] if p]))
    proc = subprocess.run(
        [sys.executable, os.path.join(tree, 'tools', script), *args],
        cwd=tree, env=env, capture_output=True, text=True)
    if proc.returncode:
        sys.exit('%s in %s failed (%d):\n%s' % (
            script, tree, proc.returncode, proc.stderr[-2000:]))
    return figures(proc.stdout)


def table(results):
    """Rows (label, base median, head median, ratio) of the labels both
    trees printed in every round."""
    rows = []
    labels = set.intersection(*[set(r) for tree in results.values()
                                for r in tree])
    for label in sorted(labels):
        base = statistics.median(r[label] for r in results['base'])
        head = statistics.median(r[label] for r in results['head'])
        rows.append((label, base, head, head / base if base else None))
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.split('\n\n')[0],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--base', required=True, metavar='<commit>',
                        help='the commit to compare this tree with')
    parser.add_argument('--rounds', type=int, default=3, metavar='<n>',
                        help='runs of each tree, alternating (default 3)')
    parser.add_argument('script', metavar='<script>',
                        help='a script under tools/, e.g. bench_capacity.py')
    parser.add_argument('args', nargs=argparse.REMAINDER, metavar='<arg>',
                        help='its arguments (after --)')
    opts = parser.parse_args(argv)
    args = [a for a in opts.args if a != '--']
    with tempfile.TemporaryDirectory(prefix='gpuclient-bench-') as tmp:
        base_tree = os.path.join(tmp, 'base')
        subprocess.run(['git', '-C', ROOT, 'worktree', 'add', '--detach',
                        '--quiet', base_tree, opts.base], check=True)
        try:
            results = {'base': [], 'head': []}
            trees = {'base': base_tree, 'head': ROOT}
            for round_ in range(opts.rounds):
                order = ('base', 'head') if round_ % 2 == 0 else (
                    'head', 'base')
                for name in order:
                    print('round %d: %s' % (round_ + 1, name), flush=True)
                    results[name].append(
                        run_tree(trees[name], opts.script, args))
        finally:
            subprocess.run(['git', '-C', ROOT, 'worktree', 'remove',
                            '--force', base_tree], check=False)
    rows = table(results)
    if not rows:
        sys.exit('no figure ("<label>: <number> s") printed by both trees')
    print('\n%s %s, %d rounds each, base %s' % (
        opts.script, ' '.join(args), opts.rounds, opts.base))
    print('%-58s %9s %9s %7s' % ('figure (median, s)', 'base', 'this',
                                  'ratio'))
    for label, base, head, ratio in rows:
        print('%-58s %9.3f %9.3f %7s' % (
            label[:58], base, head,
            '%.2f' % ratio if ratio is not None else '-'))
    return 0


if __name__ == '__main__':
    sys.exit(main())
