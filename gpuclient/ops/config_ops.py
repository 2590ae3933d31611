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

"""``gpu config show``: read the cloud, shape the nova.conf, compare it
with files on disk or write it into an empty directory.
"""

from __future__ import annotations

import collections.abc
import os
import typing

from osc_lib import exceptions

from gpuclient.i18n import _
from gpuclient.ops import snapshot
from gpuclient.rules import pools as pools_mod
from gpuclient.rules.nova_conf import parse
from gpuclient.rules.nova_conf import render

if typing.TYPE_CHECKING:
    from gpuclient.cloud.client import GpuClient

    # a parsed nova.conf: {section: {key: [values]}} (parse.parse_ini)
    _Ini: typing.TypeAlias = dict[str, dict[str, list[str]]]
    # what a nova.conf is for: a service, or (render.HOST, host)
    _Target: typing.TypeAlias = str | tuple[str, str]


def _read(path: str) -> str:
    try:
        with open(path) as conf:
            return conf.read()
    except OSError as exc:
        raise exceptions.CommandError(
            _('Cannot read %(path)s (%(error)s): give --diff a readable '
              'nova.conf or a Kolla-Ansible config directory (such as '
              '/etc/kolla/config).')
            % {'path': path, 'error': exc.strerror or exc}) from exc


def _parse_files(paths: collections.abc.Iterable[str]) -> _Ini:
    """merge_ini over the files that exist, in order."""
    return parse.merge_ini(parse.parse_ini(_read(p), p) for p in paths
                           if os.path.isfile(p))


def read_existing(
    path: str, config: render.Config,
    hosts: collections.abc.Sequence[str] = (),
) -> tuple[dict[_Target, _Ini], dict[_Target, list[str]]]:
    """({target: parsed ini}, {target: [files]}) for ``--diff PATH``.

    A directory is a Kolla-Ansible config dir: nova-api, nova-scheduler,
    nova-conductor and each host are compared with the files Kolla merges
    for them. A file is one service's
    nova.conf: compared with what the one --host needs, else with what
    nova-scheduler (and every service) needs.
    """
    path = os.path.expanduser(path)
    if os.path.isdir(path):
        existing, where = {}, {}
        hosts_shown = [t for t in config.ordered() if isinstance(t, tuple)]
        for target in list(render.CONTROLLERS) + hosts_shown:
            reads = [os.path.join(path, f)
                     for f in render.kolla_reads(target)]
            existing[target] = _parse_files(reads)
            where[target] = [f for f in reads if os.path.isfile(f)] or [
                _('no file')]
        return existing, where
    if len(hosts) > 1:
        raise exceptions.CommandError(
            _('--diff with a file compares one service\'s nova.conf: give '
              'at most one --host (or a Kolla config directory).'))
    target = (render.host_target(hosts[0]) if hosts
              else render.SCHEDULER)
    return {target: parse.parse_ini(_read(path), path)}, {target: [path]}


def collect(
    client: GpuClient,
    pool_names: collections.abc.Iterable[str] = (),
    hosts: collections.abc.Sequence[str] = (),
    mig_types: collections.abc.Mapping[str, str] | None = None,
    numa_policy: str = render.DEFAULT_NUMA_POLICY,
) -> tuple[render.Config, list[str]]:
    """(Config, notes): one snapshot of the cloud (``snapshot.read``,
    with flavors for the aliases' NUMA policy, Placement trees of the
    pools' hosts only), shaped by ``render.from_cloud``. The hosts
    of vgpu-vf pools have their device providers' inventories read
    (``snapshot.read_totals``, one request each): a VF per device_spec,
    as many as each card's inventory total, reserved ones included."""
    aggregates, pools, pool_names = snapshot.named_pools(client,
                                                         pool_names)
    chosen = [pools[n] for n in (pool_names or pools)]
    cloud = snapshot.read(
        client, extra_classes=('VGPU',), with_flavors=True,
        wanted_hosts={h for p in chosen for h in p['hosts']},
        with_traits=True, aggregates=aggregates)
    host_roots = cloud.host_roots()
    snapshot.read_totals(client, cloud, {
        root for p in chosen if p['mode'] == pools_mod.VGPU_VF
        for host in p['hosts'] for root in host_roots.get(host, ())})
    return render.from_cloud(cloud, pool_names, hosts, mig_types,
                             numa_policy)


def inside(directory: str, path: str) -> str:
    """DIRECTORY joined with PATH (a name made from cloud data), refused
    when it would resolve outside DIRECTORY (``..``, an absolute path, a
    link pointing out): every file gpuclient writes stays in the
    directory the operator gave."""
    top = os.path.realpath(directory)
    full = os.path.realpath(os.path.join(top, path))
    if os.path.commonpath([top, full]) != top or full == top:
        raise exceptions.CommandError(
            _('Refusing to write %(path)s: it is not inside %(dir)s (the '
              'name comes from the cloud). Nothing was written.')
            % {'path': path, 'dir': directory})
    return os.path.join(directory, path)


def write_files(
    directory: str,
    file_list: collections.abc.Sequence[tuple[str, str]],
) -> list[str]:
    """Write [(relative path, text)] under DIRECTORY; never overwrite,
    never outside it (``inside``)."""
    directory = os.path.expanduser(directory)
    for path, _text in file_list:
        inside(directory, path)
    taken = [p for p, _text in file_list
             if os.path.exists(os.path.join(directory, p))]
    if taken:
        raise exceptions.CommandError(
            _('%(dir)s already holds %(files)s: gpuclient does not '
              'overwrite configuration files (they may hold other '
              'settings). Compare with --diff %(dir)s, or write to an empty '
              'directory and merge.')
            % {'dir': directory, 'files': ', '.join(taken)})
    written: list[str] = []
    for path, text in file_list:
        full = os.path.join(directory, path)
        try:
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, 'x') as out:
                out.write(text)
        except OSError as exc:
            raise exceptions.CommandError(
                _('Cannot write %(path)s (%(error)s); written so far: '
                  '%(done)s.')
                % {'path': full, 'error': exc.strerror or exc,
                   'done': ', '.join(written) or _('nothing')}) from exc
        written.append(full)
    return written
