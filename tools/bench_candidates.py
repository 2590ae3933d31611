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
"""``gpu candidate list --flavor F`` against ``allocation candidate list``.

Both real CLI commands, run alternately against the same cloud, median
wall time of each and their ratio. The osc-placement command gets the same
resources (every class of the query gpuclient sends, summed), which is what
an operator types today. Target: ratio <= 1.15.

    eval "$(tools/testcloud env)"
    python tools/bench_candidates.py --flavor g1.h100.1 --runs 9
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.parse


def _run(argv):
    start = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True,
                          env=dict(os.environ, PYTHONWARNINGS='ignore'))
    elapsed = time.monotonic() - start
    if proc.returncode:
        sys.exit('%s failed: %s' % (' '.join(argv), proc.stderr.strip()))
    return elapsed, proc.stdout


def resources_of(query):
    totals = {}
    for key, value in urllib.parse.parse_qsl(query):
        if not key.startswith('resources'):
            continue
        for item in value.split(','):
            rc, _sep, amount = item.partition(':')
            totals[rc] = totals.get(rc, 0) + int(amount)
    return totals


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--flavor', required=True, help='flavor to place')
    parser.add_argument('--runs', type=int, default=9,
                        help='runs of each command (default 9)')
    parser.add_argument('--openstack', default='openstack',
                        help='the openstack executable')
    parser.add_argument('gpu_args', nargs='*',
                        help='more gpu candidate list options (after --)')
    args = parser.parse_args()
    gpu = [args.openstack, 'gpu', 'candidate', 'list', '--flavor',
           args.flavor, *args.gpu_args]
    _elapsed, out = _run(gpu + ['-f', 'json'])
    result = json.loads(out)
    resources = resources_of(result['query'])
    osc = [args.openstack, '--os-placement-api-version', '1.29',
           'allocation', 'candidate', 'list', '-f', 'value']
    for rc, amount in sorted(resources.items()):
        osc += ['--resource', '%s=%d' % (rc, amount)]
    gpu += ['-f', 'value']
    _run(osc)  # warm caches once, like the gpu run above
    times = {'gpu': [], 'osc': []}
    for _i in range(args.runs):
        times['gpu'].append(_run(gpu)[0])
        times['osc'].append(_run(osc)[0])
    gpu_median = statistics.median(times['gpu'])
    osc_median = statistics.median(times['osc'])
    print('flavor %s: %d host(s), %d Placement request(s) per gpu run'
          % (args.flavor, len(result['hosts']),
             result['placement_requests']))
    print('query: %s' % result['query'])
    print('gpu candidate list:        median %.3f s (%d runs)'
          % (gpu_median, args.runs))
    print('allocation candidate list: median %.3f s (%s)'
          % (osc_median, ' '.join(osc[3:])))
    print('ratio: %.2fx (target <= 1.15x)' % (gpu_median / osc_median))


if __name__ == '__main__':
    main()
