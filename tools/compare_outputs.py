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
"""Compare every command's output and exit status: old tree vs new tree.

For a refactoring that must not change behaviour:

    git worktree add --detach /tmp/old <ref>
    eval "$(tools/testcloud env | grep '^export ')"
    tools/compare_outputs.py /tmp/old .

Builds a small GPU layer (three pools, four flavors) with the old tree's
gpu apply, runs each read command and each write's --dry-run (and a few
refusals), and every command's --help (setup.cfg's entry points), with
both trees back to back, prints every difference of exit
status, stdout or stderr, then removes the layer with gpu apply --prune.
The trees are put on PYTHONPATH in front of the installed gpuclient; the
`openstack` executable is $OPENSTACK, else the one on PATH. Exit status 1
when any command differs.
"""
import difflib
import os
import subprocess
import sys
import tempfile

OSC = os.environ.get('OPENSTACK', 'openstack')
P = 'gpuclient-cmp'
DOC = """version: 1
pools:
- name: %(p)s-mig
  mode: mig
  mig_profile: 3g.40gb
  hosts: [gpu-mig-1]
  isolate: true
- name: %(p)s-solver
  mode: passthrough
  alias: h100
  pci_id: 10de:2331
  hosts: [gpu-pt-1, gpu-pt-2]
  isolate: false
  projects: [gpuclient-demo]
- name: %(p)s-ws
  mode: vgpu
  vgpu_type: nvidia-35
  hosts: [gpu-vgpu-1]
  properties:
    team: design
flavors:
- name: %(p)s.mig.3g
  pool: %(p)s-mig
  vcpus: 1
  ram: 512
  disk: 1
- name: %(p)s.h100.1
  pool: %(p)s-solver
  vcpus: 1
  ram: 512
  disk: 1
  public: false
  projects: [gpuclient-demo]
- name: %(p)s.h100.2
  pool: %(p)s-solver
  gpus: 2
  vcpus: 1
  ram: 512
  disk: 1
  numa_policy: preferred
- name: %(p)s.vgpu.1
  pool: %(p)s-ws
  vcpus: 1
  ram: 512
  disk: 1
  description: one nvidia-35 vGPU
""" % {'p': P}
DOC2 = (DOC.replace('isolate: false', 'isolate: true')
        .replace('team: design', 'team: render')
        .replace('ram: 512\n  disk: 1\n  description',
                 'ram: 1024\n  disk: 1\n  description'))
SCOPE = '--pool {p}-solver --pool {p}-mig --pool {p}-ws'
# one command a line; {p} the prefix, {doc}/{doc2}/{empty} the documents
COMMANDS = """
gpu host list
gpu host list --long -f json
gpu pool list --long
gpu pool show {p}-solver -f json
gpu pool show {p}-mig
gpu pool show nope-{p}
gpu flavor list --long
gpu flavor show {p}.h100.2 -f yaml
gpu candidate list --flavor {p}.h100.1
gpu candidates --flavor {p}.mig.3g -f json
gpu candidate list --flavor {p}.vgpu.1 --long
gpu capacity list
gpu capacity list --per-host -f json
gpu check -f json
gpu check --pool {p}-solver
gpu config show
gpu config show --pool {p}-ws
gpu export SCOPE
gpu diff {doc} SCOPE
gpu diff {doc2} SCOPE
gpu apply --dry-run {doc2} SCOPE
gpu apply --dry-run --prune {empty} SCOPE
gpu apply --dry-run {doc}
gpu server list --all-projects
gpu usage list
gpu quota list
gpu quota show --default
gpu profile list
gpu profile plan --pool {p}-mig --demand {p}.mig.3g=2
gpu host drain gpu-pt-1 --dry-run
gpu host drain gpu-vgpu-1 --dry-run --allow-downtime
gpu host cordon gpu-pt-2 --dry-run
gpu pool add host {p}-mig fault-mig-1 --dry-run
gpu pool remove host {p}-solver gpu-pt-2 --dry-run
gpu pool set {p}-mig --no-isolate --dry-run
gpu pool set {p}-solver --isolate --dry-run
gpu pool unset {p}-solver --project gpuclient-demo --dry-run
gpu pool delete {p}-ws --dry-run
gpu pool delete {p}-ws --force --dry-run
gpu pool create {p}-new --mode passthrough --alias a40 --pci-id 10de:2235 \
 --host gpu-pt-2 --isolate --dry-run
gpu flavor create {p}.new --pool {p}-solver --vcpus 1 --ram 512 --disk 1 \
 --dry-run
gpu flavor set {p}.h100.2 --description x --dry-run
gpu flavor delete {p}.h100.2 --dry-run
gpu image show gpuclient-tiny
gpu candidate list --flavor {p}.h100.1 --explain
gpu candidate list --resource VGPU=1 --required CUSTOM_NVIDIA_35
gpu candidate list --flavor {p}.h100.2 --setting enabled_filters=ComputeFilter
gpu candidate list
gpu capacity list --pool {p}-solver --long
gpu device list
gpu device list --long -f json
gpu device show nope-{p}
gpu host list --host gpu-pt-1 -f yaml
gpu flavor show nope-{p}
gpu host drain nope-{p} --dry-run
gpu pool create {p}-bad --mode nope --dry-run
gpu quota set --project gpuclient-demo --pool {p}-solver --gpus 2 --dry-run
gpu quota delete --project gpuclient-demo --pool {p}-solver --dry-run
gpu image set gpuclient-tiny --secure-boot --q35 --dry-run
gpu image unset gpuclient-tiny --secure-boot --dry-run
gpu flavor unset {p}.h100.2 --property hw:numa_nodes --dry-run
gpu host uncordon gpu-pt-2 --dry-run
gpu device release nope-{p} --dry-run
gpu check --long
gpu usage list --all-projects -f json
"""


def gpu_commands():
    """Every ``openstack gpu`` command, from setup.cfg's entry points."""
    import configparser

    conf = configparser.ConfigParser()
    conf.read(os.path.join(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))), 'setup.cfg'))
    points = conf['entry_points']['openstack.gpu.v1']
    return sorted(line.split('=')[0].strip().replace('_', ' ')
                  for line in points.strip().splitlines())


def run(tree, args):
    env = dict(os.environ, PYTHONPATH=tree, COLUMNS='120')
    p = subprocess.run([OSC] + args, env=env, capture_output=True,
                       text=True)
    return p.returncode, p.stdout, p.stderr


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    old, new = sys.argv[1], sys.argv[2]
    tmp = tempfile.mkdtemp()
    paths = {n: os.path.join(tmp, n + '.yaml')
             for n in ('doc', 'doc2', 'empty')}
    for name, text in (('doc', DOC), ('doc2', DOC2),
                       ('empty', 'version: 1\n')):
        with open(paths[name], 'w') as f:
            f.write(text)
    words = dict(paths, p=P)
    lines = COMMANDS.strip().splitlines()
    commands = [line.replace('SCOPE', SCOPE).format(**words).split()
                for line in lines]
    # the help of every command, byte for byte
    commands += [name.split() + ['--help'] for name in gpu_commands()]
    rc, _out, err = run(old, ['gpu', 'apply', paths['doc']])
    print('layer made: exit %d %s' % (rc, err[-500:]))
    same = differ = ok = 0
    try:
        for args in commands:
            a, b = run(old, args), run(new, args)
            ok += a[0] == 0
            if a == b:
                same += 1
                continue
            differ += 1
            print('### DIFF: openstack %s' % ' '.join(args))
            for label, x, y in zip(('exit', 'stdout', 'stderr'), a, b,
                                   strict=True):
                if x != y:
                    print('--- %s' % label)
                    print(''.join(difflib.unified_diff(
                        str(x).splitlines(True), str(y).splitlines(True),
                        n=1))[:3000])
    finally:
        rc, _out, err = run(old, ['gpu', 'apply', '--prune',
                                  paths['empty']]
                            + SCOPE.format(p=P).split())
        print('layer removed: exit %d' % rc)
    print('same %d, different %d, of %d commands (%d exit 0)'
          % (same, differ, len(commands), ok))
    return 1 if differ else 0


if __name__ == '__main__':
    sys.exit(main())
