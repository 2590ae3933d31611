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

"""One host's facts: everything the collector reads, in one call."""

from __future__ import annotations

import time

from gpuclient.hostfacts import files
from gpuclient.hostfacts import nvidia_smi
from gpuclient.hostfacts import software
from gpuclient.hostfacts import sysfs
from gpuclient.rules.host_facts import shapes


def collect(root: str = '/', hostname: str | None = None,
            now: float | None = None,
            timeout: float = nvidia_smi.TIMEOUT) -> shapes.HostFacts:
    """The facts of the host whose files are under ROOT (``/``: this
    host, where nvidia-smi is run; another directory: a fake tree, where
    its seam files stand for nvidia-smi's output). HOSTNAME overrides the
    host's own name; NOW is the collection time (default: the clock).
    Never raises for what the files hold: what cannot be read is in the
    facts' ``unreadable``."""
    tree = files.Tree(root)
    facts = shapes.HostFacts('')
    facts.hostname = hostname or software.hostname(tree, facts)
    software.read_kernel(tree, facts)
    software.read_tools(tree, facts)
    software.read_versions(tree, facts)
    sysfs.read_functions(tree, facts)
    smi = software.find_tool(tree, 'nvidia-smi')
    nvidia_smi.read_mig(facts, nvidia_smi.NvidiaSmi(tree, smi, timeout)
                        if smi else None)
    facts.collected_at = time.time() if now is None else now
    return facts
