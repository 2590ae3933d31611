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

"""tools/test_summary.py: the fault-matrix total of a functional run.

The script is not a package module: it is imported by path. The input is
a small subunit v2 stream made here, shaped as test_faults.py leaves it:
one "fault-matrix: LABEL" detail per matrix holding a "fault points:
LABEL: N ..." line, which the printed copy repeats in the test's stdout.
"""

import contextlib
import importlib.util
import io
import os
import stat
import sys
from unittest import mock

import fixtures
import subunit

from gpuclient.tests.unit import base

SCRIPT = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))), 'tools', 'test_summary.py')
BINDIR = os.path.dirname(sys.executable)

CREATE = ('fault points: pool create: 12 (20 writes; left, re-run '
          'converged 4, rolled back 8) in 31 s')
SET = 'fault points: pool set: 5 (5 writes; rolled back 5) in 9 s'


def load_script():
    spec = importlib.util.spec_from_file_location('gpuclient_test_summary',
                                                  SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def stream():
    """Three tests: two matrices (one also on stdout), one failure."""
    out = io.BytesIO()
    result = subunit.StreamResultToBytes(out)

    def attach(test_id, name, text):
        result.status(test_id=test_id, file_name=name,
                      file_bytes=text.encode('utf-8'),
                      mime_type='text/plain; charset=utf8', eof=True)

    def test(test_id, status, details):
        result.status(test_id=test_id, test_status='inprogress')
        for name, text in details:
            attach(test_id, name, text)
        result.status(test_id=test_id, test_status=status)

    test('f.TestPoolFaults.test_create', 'success', [
        ('fault-matrix: pool create', CREATE),
        ('stdout', 'setting up\n' + CREATE + '\n')])
    test('f.TestPoolFaults.test_set', 'success', [
        ('fault-matrix: pool set', SET)])
    test('f.TestOther.test_broken', 'fail', [
        ('traceback', 'AssertionError: fault points: not a matrix')])
    return out.getvalue()


class TestFaultTotal(base.TestCase):
    def setUp(self):
        super().setUp()
        self.script = load_script()

    def test_total_counts_each_matrix_once(self):
        text = '\n'.join([CREATE, 'noise', SET, CREATE, ''])
        self.assertEqual((17, 2), self.script.fault_total(text))
        self.assertEqual((0, 0), self.script.fault_total('no matrix here'))

    def test_lane_b_waits_summed(self):
        text = '\n'.join([
            'lane B wait: 12.5 s before: server create --flavor f s1',
            'noise: lane B wait: 99 s before: not at a line start',
            'lane B wait: 3.0 s before: gpu host drain gpu-pt-1', ''])
        self.assertEqual((15.5, 2), self.script.lane_b_waits(text))
        self.assertEqual((0, 0), self.script.lane_b_waits('none'))

    def test_details_of_a_subunit_stream(self):
        out = io.StringIO()
        self.script.print_details(io.BytesIO(stream()), out)
        lines = out.getvalue().splitlines()
        self.assertEqual(2, lines.count(CREATE))  # detail and stdout
        self.assertIn(SET, lines)
        self.assertEqual((17, 2), self.script.fault_total(out.getvalue()))

    def test_main_prints_the_total_line(self):
        """main() as .ci/run runs it, on a functional repository whose
        last run is the stream above (tox's stestr replaced by it)."""
        stats = os.path.join(BINDIR, 'subunit-stats')
        if not os.path.exists(stats):
            self.skipTest('subunit-stats is not installed next to %s'
                          % sys.executable)
        root = self.useFixture(fixtures.TempDir()).path
        bindir = os.path.join(root, '.tox', 'py3', 'bin')
        os.makedirs(bindir)
        os.mkdir(os.path.join(root, '.stestr-functional'))
        # wrappers, not symlinks: a venv's python must run from its own path
        for name, body in (
                ('python', 'exec %s "$@"' % sys.executable),
                ('subunit-stats', 'exec %s "$@"' % stats),
                # stestr answers only "slowest" (its table of the last run)
                ('stestr', 'case "$*" in *slowest) echo "Test id  Runtime '
                           '(s)"; echo "t.slow  9.000";; *) exit 1;; esac')):
            path = os.path.join(bindir, name)
            with open(path, 'w') as f:
                f.write('#!/bin/sh\n%s\n' % body)
            os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
        data = stream()

        def last_stream(_bindir, repo):
            return data if repo == '.stestr-functional' else b''

        out = io.StringIO()
        with mock.patch.object(self.script, 'ROOT', root), \
                mock.patch.object(self.script, 'last_stream', last_stream), \
                mock.patch.object(sys, 'argv', ['test_summary.py']), \
                contextlib.redirect_stdout(out):
            self.assertEqual(0, self.script.main())
        self.assertEqual(
            ['functional: 2 passed, 1 failed, 0 skipped',
             'fault matrix: 17 fault points in 2 matrices',
             'Test id  Runtime (s)', 't.slow  9.000'],
            out.getvalue().splitlines())
