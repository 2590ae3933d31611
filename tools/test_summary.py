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
"""

import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# stestr's --repo-url names the directory that holds .stestr
REPOS = (('unit', '.'), ('functional', '.stestr-functional'))


def stats(bindir, repo):
    last = subprocess.run(
        [os.path.join(bindir, 'stestr'), '--repo-url', repo, 'last',
         '--subunit'],
        cwd=ROOT, capture_output=True,
    )
    if not last.stdout:
        return None
    out = subprocess.run(
        [os.path.join(bindir, 'subunit-stats')],
        input=last.stdout, capture_output=True,
    ).stdout.decode()
    found = {}
    for key in ('Total', 'Passed', 'Failed', 'Skipped'):
        match = re.search(r'%s tests:\s+(\d+)' % key, out)
        found[key] = int(match.group(1)) if match else 0
    return found


def main():
    bindir = os.path.join(ROOT, '.tox', 'py3', 'bin')
    if not os.path.exists(os.path.join(bindir, 'stestr')):
        print('no tox py3 environment: nothing to summarise')
        return 0
    for label, repo in REPOS:
        if not os.path.isdir(os.path.join(ROOT, repo)):
            continue
        found = stats(bindir, repo)
        if found is None:
            continue
        print('%s: %d passed, %d failed, %d skipped'
              % (label, found['Passed'], found['Failed'], found['Skipped']))
    return 0


if __name__ == '__main__':
    sys.exit(main())
