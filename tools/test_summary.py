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
"""Print one 'N passed, N failed, N skipped' line per stestr repository.

Reads the last run of the unit (.stestr) and functional
(.stestr-functional) repositories with the tox environment's stestr and
subunit-stats. Used by .ci/run after the tests.

For the functional run it also sums the fault-injection matrices: each
matrix of gpuclient/tests/functional/test_faults.py attaches one
"fault points: LABEL: N (...)" line to its test, and this prints one
"fault matrix: N fault points in M matrices" line (the attachments are
read with python-subunit, in the tox environment's python:
``test_summary.py --details`` prints the text attachments of a subunit
stream on stdin), and where the time went: one line per test module (its
stestr workers, tests and seconds; ``--modules`` on a stream) and each
worker's span.
"""

import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# stestr's --repo-url names the directory that holds .stestr
REPOS = (('unit', '.'), ('functional', '.stestr-functional'))
FAULT_LINE = re.compile(r'^fault points: (.+): (\d+)\b', re.MULTILINE)
# a lane-A test's unsteered boot or drain waiting for lane B's tests (the
# detail base.FunctionalTestCase.openstack_raw attaches)
WAIT_LINE = re.compile(r'^lane B wait: ([0-9.]+) s before: ', re.MULTILINE)


def last_stream(bindir, repo):
    """The subunit stream of the repository's last run (bytes)."""
    return subprocess.run(
        [os.path.join(bindir, 'stestr'), '--repo-url', repo, 'last',
         '--subunit'],
        cwd=ROOT, capture_output=True,
    ).stdout


def print_details(stream, out):
    """Write every text attachment of a subunit v2 STREAM to OUT."""
    import subunit  # noqa: PLC0415 - only in the tox environment
    import testtools  # noqa: PLC0415

    chunks = {}

    class Collect(testtools.StreamResult):
        def status(self, test_id=None, file_name=None, file_bytes=None,
                   **kwargs):
            if file_name and file_bytes:
                key = (test_id, file_name)
                chunks[key] = chunks.get(key, b'') + bytes(file_bytes)

    subunit.ByteStreamToStreamResult(stream).run(Collect())
    for (_test, _name), data in chunks.items():
        out.write(data.decode('utf-8', 'replace').rstrip('\n') + '\n')


def print_modules(stream, out):
    """Write, from a subunit v2 STREAM, one line per test module: the
    stestr workers it ran in, its tests and the seconds they took (the sum
    of each test's start-to-end), slowest module first; and each worker's
    seconds from its first test's start to its last test's end."""
    import subunit  # noqa: PLC0415 - only in the tox environment
    import testtools  # noqa: PLC0415

    started, tests, seconds, workers, spans = {}, {}, {}, {}, {}

    class Collect(testtools.StreamResult):
        def status(self, test_id=None, test_status=None, test_tags=None,
                   timestamp=None, **kwargs):
            if not test_id or timestamp is None:
                return
            module = '.'.join(test_id.split('.')[:4])
            worker = sorted(t for t in (test_tags or ())
                            if t.startswith('worker-'))
            if test_status == 'inprogress':
                started[test_id] = timestamp
                return
            if test_status not in ('success', 'fail', 'skip', 'xfail',
                                   'uxsuccess') or test_id not in started:
                return
            took = (timestamp - started[test_id]).total_seconds()
            tests[module] = tests.get(module, 0) + 1
            seconds[module] = seconds.get(module, 0.0) + took
            workers.setdefault(module, set()).update(worker)
            for name in worker:
                first, last = spans.get(name, (started[test_id], timestamp))
                spans[name] = (min(first, started[test_id]),
                               max(last, timestamp))

    subunit.ByteStreamToStreamResult(stream).run(Collect())
    for module in sorted(seconds, key=lambda m: -seconds[m]):
        out.write('%-56s %-18s %4d tests %8.1f s\n' % (
            module, ','.join(sorted(workers[module])) or '-',
            tests[module], seconds[module]))
    for name, (first, last) in sorted(spans.items()):
        out.write('%s: %.0f s from its first test to its last\n'
                  % (name, (last - first).total_seconds()))


def module_times(bindir, stream):
    return subprocess.run(
        [os.path.join(bindir, 'python'), os.path.abspath(__file__),
         '--modules'],
        input=stream, capture_output=True,
    ).stdout.decode().rstrip('\n')


def fault_total(text):
    """(points, matrices) of the "fault points" lines in TEXT; each matrix
    counts once even when its line appears twice (detail and stdout)."""
    found = dict(FAULT_LINE.findall(text))
    return sum(int(n) for n in found.values()), len(found)


def lane_b_waits(text):
    """(seconds, calls) of the lane-B waits attached in TEXT."""
    found = [float(s) for s in WAIT_LINE.findall(text)]
    return sum(found), len(found)


def details_text(bindir, stream):
    return subprocess.run(
        [os.path.join(bindir, 'python'), os.path.abspath(__file__),
         '--details'],
        input=stream, capture_output=True,
    ).stdout.decode()


def stats(bindir, repo, stream=None):
    if stream is None:
        stream = last_stream(bindir, repo)
    if not stream:
        return None
    out = subprocess.run(
        [os.path.join(bindir, 'subunit-stats')],
        input=stream, capture_output=True,
    ).stdout.decode()
    found = {}
    for key in ('Total', 'Passed', 'Failed', 'Skipped'):
        match = re.search(r'%s tests:\s+(\d+)' % key, out)
        found[key] = int(match.group(1)) if match else 0
    return found


def slowest(bindir, repo):
    """stestr's table of the slowest tests of the repository's last run
    (where a slower suite should be looked at first)."""
    return subprocess.run(
        [os.path.join(bindir, 'stestr'), '--repo-url', repo, 'slowest'],
        cwd=ROOT, capture_output=True, text=True,
    ).stdout.rstrip('\n')


def main():
    if sys.argv[1:] == ['--details']:
        print_details(sys.stdin.buffer, sys.stdout)
        return 0
    if sys.argv[1:] == ['--modules']:
        print_modules(sys.stdin.buffer, sys.stdout)
        return 0
    bindir = os.path.join(ROOT, '.tox', 'py3', 'bin')
    if not os.path.exists(os.path.join(bindir, 'stestr')):
        print('no tox py3 environment: nothing to summarise')
        return 0
    for label, repo in REPOS:
        if not os.path.isdir(os.path.join(ROOT, repo)):
            continue
        stream = last_stream(bindir, repo)
        found = stats(bindir, repo, stream)
        if found is None:
            continue
        print('%s: %d passed, %d failed, %d skipped'
              % (label, found['Passed'], found['Failed'], found['Skipped']))
        if label == 'functional':
            text = details_text(bindir, stream)
            points, matrices = fault_total(text)
            if matrices:
                print('fault matrix: %d fault points in %d matrices'
                      % (points, matrices))
            waited, calls = lane_b_waits(text)
            if calls:
                print('lane A waited %.0f s for lane B (%d unsteered '
                      'calls)' % (waited, calls))
            table = slowest(bindir, repo)
            if table:
                print(table)
            modules = module_times(bindir, stream)
            if modules:
                print('where the functional time went, per module:')
                print(modules)
    return 0


if __name__ == '__main__':
    sys.exit(main())
