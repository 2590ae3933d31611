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

"""MIG modes and GPU instances, from ``nvidia-smi``.

Asked only where it can answer: ``nvidia-smi`` is installed and a GPU is
bound to ``nvidia`` (on a passthrough host every GPU is on vfio-pci and
nvidia-smi would only fail). Two questions, each run once with a
timeout (TIMEOUT seconds: a GPU that fell off the bus can hang NVML; the
program is then killed and the fact is unreadable)::

    nvidia-smi --query-gpu=index,pci.bus_id,mig.mode.current,\\
        mig.mode.pending --format=csv,noheader
    nvidia-smi mig -lgi

the second only when a GPU's MIG mode is enabled. (The index maps the
GPU column of ``-lgi`` to a bus id.) Listing GPU instances is one of
NVML's privileged calls: as another user than root, it is unreadable.

The test seam: under a root other than ``/`` the host's nvidia-smi is
never run. ``<root>/run/gpuclient/nvidia-smi/query-gpu.txt`` and
``mig-lgi.txt`` stand for the two outputs (a missing file is a failed
run); whether nvidia-smi is installed is still read from the tree
(``<root>/usr/bin/nvidia-smi``).
"""

from __future__ import annotations

import os
import subprocess

from gpuclient.hostfacts import files
from gpuclient.rules.host_facts import contents
from gpuclient.rules.host_facts import shapes

TIMEOUT = 30
SEAM = 'run/gpuclient/nvidia-smi'
SEAM_FILES = {contents.MIG_QUERY: 'query-gpu.txt',
              contents.MIG_LIST: 'mig-lgi.txt'}
_ENV = {'PATH': '/usr/sbin:/usr/bin:/sbin:/bin', 'LC_ALL': 'C'}
_ERRORS = (OSError, ValueError, subprocess.SubprocessError)


class NvidiaSmi:
    """nvidia-smi at PATH (in TREE), or its seam files under a fake
    root."""

    def __init__(self, tree: files.Tree, path: str,
                 timeout: float = TIMEOUT) -> None:
        self.tree = tree
        self.path = path
        self.timeout = timeout

    def output(self, args: tuple[str, ...]) -> tuple[int, str]:
        """(exit status, what it printed) of nvidia-smi ARGS; OSError
        when it cannot be run, SubprocessError when it timed out."""
        if not self.tree.is_host:
            return 0, self.tree.read(os.path.join(SEAM, SEAM_FILES[args]))
        proc = subprocess.Popen(
            [self.tree.path(self.path), *args], stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=_ENV)
        try:
            out, _ = proc.communicate(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            try:
                proc.communicate(timeout=5)
            except subprocess.TimeoutExpired:
                pass  # in the kernel's hands (D state): not waited for
            raise
        return proc.returncode, out.decode('utf-8', 'replace')


def _modes(smi, facts, gpus):
    """{GPU index: Function} of nvidia-smi's MIG query, MIG modes set."""
    status, text = smi.output(contents.MIG_QUERY)
    if status:
        raise OSError('nvidia-smi exited with %d' % status)
    by_index = {}
    for index, (address, current, pending) in sorted(
            contents.mig_modes(text).items()):
        function = facts.functions.get(address)
        if function is None or not function.is_nvidia:
            continue  # a GPU sysfs does not show as NVIDIA's: not judged
        function.mig_current, function.mig_pending = current, pending
        by_index[index] = function
    listed = {f.address for f in by_index.values()}
    for function in gpus:
        if function.address not in listed:
            facts.note('mig_mode', function.address)
    return by_index


def read_mig(facts: shapes.HostFacts, smi: NvidiaSmi | None) -> None:
    """The MIG modes of the GPUs bound to nvidia, and the GPU instances
    of those whose MIG mode is enabled, into FACTS."""
    gpus = [f for f in facts.nvidia_functions()
            if f.is_gpu and f.physfn is None and f.driver == 'nvidia']
    if smi is None or not gpus:
        return
    try:
        by_index = _modes(smi, facts, gpus)
    except _ERRORS:
        facts.note('mig_mode')
        return
    enabled = {i: f for i, f in by_index.items() if f.mig_current}
    if not enabled:
        return
    try:
        status, text = smi.output(contents.MIG_LIST)
        layout = contents.gpu_instances(text)
        if status and layout:
            raise OSError('nvidia-smi exited with %d' % status)
    except _ERRORS:
        for function in enabled.values():
            facts.note('mig_layout', function.address)
        return
    for index, function in enabled.items():
        function.gpu_instances = list(layout.get(index, ()))
