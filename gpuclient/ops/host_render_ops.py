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

"""``gpu host render``: what each host of a pool needs, as files.

One read, through the one reader (``ops.snapshot``): the aggregates, and
for mig and vgpu-vf pools the provider trees of the pool's hosts with
their traits, as ``gpu profile plan --pool`` reads them (the cards and
their layouts now), and for vgpu-vf pools the inventory totals of their
device providers, as ``gpu config show`` reads them (one request each).
The files are ``rules.host_prep``'s; they are written into the output
directory (made if missing), never over an existing file (every path is
checked before the first is written). Nothing is applied to any host.
"""

from __future__ import annotations

import collections.abc
import os
import typing

from gpuclient.i18n import _
from gpuclient.ops import config_ops
from gpuclient.ops import snapshot
from gpuclient.rules import host_prep
from gpuclient.rules import pools as pools_mod
from gpuclient.rules.nova_conf import render as nova_config

if typing.TYPE_CHECKING:
    from gpuclient.cloud.client import GpuClient


def render(
    client: GpuClient, pool_name: str, output_dir: str,
    options: host_prep.Options | None = None,
) -> tuple[list[dict[str, str]], list[str]]:
    """Write the files of every host of pool POOL_NAME (a name or
    aggregate ID) into OUTPUT_DIR: (rows, notes), a row per file written
    ({'host', 'file' (its path), 'what'}), notes for the operator.
    OPTIONS: ``host_prep.Options`` (the format and what the cloud does not
    say). A pool that cannot be rendered is refused before its hosts'
    trees are read, an existing file before anything is written."""
    options = options or host_prep.Options()
    aggregates, pools, names = snapshot.named_pools(client, [pool_name])
    pool = pools[names[0]]
    host_prep.check_request(pool, options)
    trees = None
    if pool['mode'] in host_prep.TREE_MODES:
        cloud = snapshot.read(
            client, extra_classes=('VGPU',), wanted_hosts=set(pool['hosts']),
            with_traits=True, aggregates=aggregates)
        snapshot.warn_problems(cloud.problems)
        pools = cloud.pools
        host_roots = cloud.host_roots()
        roots = {host: sorted(host_roots.get(host) or ())
                 for host in pool['hosts']}
        assert cloud.placement is not None  # noqa: S101 - read with it
        if pool['mode'] == pools_mod.VGPU_VF:
            # a VF per unit of each card's total, reserved ones included
            # (a reserved VF keeps its type), as gpu config show counts
            snapshot.read_totals(client, cloud,
                                 {r for rs in roots.values() for r in rs})
        trees = nova_config.trees_from_snapshot(
            cloud.placement, {h: r for h, r in roots.items() if r})
    files, notes = host_prep.pool_files(pool, pools, trees, options)
    paths = write_files(output_dir, files)
    return [{'host': f.host, 'file': path, 'what': f.what}
            for f, path in zip(files, paths, strict=True)], notes


def write_files(output_dir: str,
                files: collections.abc.Sequence[host_prep.HostFile]
                ) -> list[str]:
    """Write FILES (``host_prep.HostFile``, paths relative to OUTPUT_DIR)
    with their modes, the directories made as needed; never outside
    OUTPUT_DIR nor over an existing file: each is refused before any file
    is written. Returns the paths written, in order."""
    paths = [config_ops.inside(output_dir, f.path) for f in files]
    for path in paths:
        if os.path.lexists(path):
            raise FileExistsError(
                _('%s exists already: gpuclient does not overwrite it; '
                  'give another --output-dir or move the file. Nothing '
                  'was written.') % path)
    written: list[str] = []
    for host_file, path in zip(files, paths, strict=True):
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, 'x') as out:
                out.write(host_file.text)
            os.chmod(path, host_file.mode)
        except OSError as exc:
            # what is left: the files written before this one, and this
            # one when it was made (perhaps partly written)
            raise OSError(
                _('Writing %(path)s failed (%(error)s)%(made)s. Written '
                  'before it, left as they are: %(written)s.') % {
                      'path': path, 'error': exc.strerror or exc,
                      'made': _(', it is left partly written')
                      if os.path.lexists(path) else '',
                      'written': ', '.join(written) or _('none')}) from exc
        written.append(path)
    return paths
