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

"""Write what gpuclient-host-facts makes of every fake host tree.

    python3 tools/host_facts_samples.py DIR

For each kind of tools/cloud/host_trees.py (passthrough, vgpu, vgpu-vf,
mig), healthy and with each fault of that kind, the collector
(gpuclient.hostfacts.collector, standard library only) reads a fresh fake
tree and DIR/<kind>-<fault or ok>.prom gets its textfile, for
tools/promtool-rules to give to ``promtool check metrics`` (CI installs
promtool there, not before the unit tests). Prints the files written.
"""

import os
import sys
import tempfile

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [TOP, os.path.join(TOP, 'tools')]

from cloud import host_trees  # noqa: E402

from gpuclient.hostfacts import collector  # noqa: E402
from gpuclient.rules.host_facts import series  # noqa: E402


def main(out):
    os.makedirs(out, exist_ok=True)
    with tempfile.TemporaryDirectory() as work:
        for kind in host_trees.KINDS:
            faults = [None] + [name for name, (kinds, _) in
                               host_trees.FAULTS.items() if kind in kinds]
            for fault in faults:
                name = '%s-%s' % (kind, fault or 'ok')
                root = host_trees.write_tree(
                    os.path.join(work, name), kind,
                    faults=(fault,) if fault else ())
                facts = collector.collect(root, hostname='host-' + kind,
                                          now=1.0e9)
                path = os.path.join(out, name + '.prom')
                with open(path, 'w') as f:
                    f.write(series.render(series.samples(facts)))
                print(path)


if __name__ == '__main__':
    main(sys.argv[1])
