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

"""Pure: the ``nvidia-smi`` scripts that ``gpu profile plan --output-dir``
writes, one per group of cards re-cut alike.

Syntax. ``-cgi`` takes a list of profile tuples, "a profile name or ID
and an optional placement specifier, which consists of a colon and a
placement start index" (``-cgi 3g.40gb:4``): the wording of nvidia-smi's
``mig --help``, as quoted by tools that wrap it; NVML's
nvmlDeviceCreateGpuInstanceWithPlacement is the call behind it. ``-C``
adds each GPU instance's default compute instance. ``-dci -gi <id>``
destroys the compute instances of GPU instance <id>, ``-dgi -gi <id>``
the GPU instance, as NVIDIA's MIG user guide does ("Destroying GPU
Instances"). ``-lgi`` lists GPU instances with the columns GPU, Name
("MIG 3g.40gb"), Profile ID, Instance ID and Placement Start:Size (as
the driver prints it in NVIDIA/DCGM issue 138). Not yet run against a
real GPU. Names are used, not profile IDs: the names are the
catalogue's, the IDs differ between models.
"""

from __future__ import annotations

import collections
from collections.abc import Collection
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
import re
import typing

from gpuclient.rules import catalogue
from gpuclient.rules.profiles import layouts


def _is_mig(layout):
    return bool(layout) and layout[0][1] is not None


def recut_steps(
        current: Iterable[Sequence[typing.Any]] | None,
        proposed: Iterable[Sequence[typing.Any]] | None
) -> tuple[layouts.Layout, layouts.Layout, layouts.Layout]:
    """(kept, destroyed, created) placements when a card goes from CURRENT
    to PROPOSED: a GPU instance at the same profile and start slot is kept
    (a MIG placement occurs once in a layout); every other one of CURRENT
    is destroyed, every other one of PROPOSED created. A time-sliced
    layout keeps nothing of a MIG one, nor the other way round."""
    current, proposed = layouts.normal(current), layouts.normal(proposed)
    if not (_is_mig(current) and _is_mig(proposed)):
        return (), tuple(p for p in current if p[1] is not None), tuple(
            p for p in proposed if p[1] is not None)
    kept = tuple(p for p in current if p in proposed)
    return (kept, tuple(p for p in current if p not in kept),
            tuple(p for p in proposed if p not in kept))


def groups(
        rows: Iterable[Mapping[str, typing.Any]]
) -> list[tuple[str, layouts.Layout, layouts.Layout,
                list[tuple[str, layouts.Layout]]]]:
    """Re-cut cards grouped for one script each: [(model, current,
    proposed, [(card id, in-use placements)])], cards that keep their
    layout left out."""
    found: collections.OrderedDict[
        tuple[str, layouts.Layout, layouts.Layout],
        list[tuple[str, layouts.Layout]]] = collections.OrderedDict()
    for row in rows:
        if not row['recut']:
            continue
        key = (row['model'], layouts.normal(row.get('current')),
               row['proposed'])
        found.setdefault(key, []).append(
            (row['id'], layouts.normal(row.get('in_use'))))
    return [key + (cards,) for key, cards in found.items()]


_GI_AT = '''\
gi_at() {  # ID of the GPU instance of profile $1 starting at slice $2
    nvidia-smi mig -i "$GPU" -lgi | awk -v name="$1" -v start="$2" \\
        '$3 == "MIG" && $4 == name && $7 ~ ("^" start ":") { print $6 }'
}
present() {
    if [ -z "$(gi_at "$1" "$2")" ]; then
        echo "gpuclient: GPU $GPU has no $1 at slice $2: it is not in the" \\
             "layout this script was planned for; nothing changed" >&2
        exit 1
    fi
}
destroy() {  # its compute instances, then the GPU instance
    gi="$(gi_at "$1" "$2")"
    nvidia-smi mig -i "$GPU" -dci -gi "$gi" || true  # none to destroy
    nvidia-smi mig -i "$GPU" -dgi -gi "$gi"
}'''


def script(model: str, current: Iterable[Sequence[typing.Any]] | None,
           proposed: Iterable[Sequence[typing.Any]] | None,
           cards: Collection[tuple[str, layouts.Layout]]) -> str:
    """A POSIX shell script that re-cuts one GPU (``GPU=<index>`` in the
    environment, default 0) from CURRENT to PROPOSED, for CARDS ([(card
    id, in-use placements)]): it first checks that the GPU holds every
    instance of CURRENT (else it stops, changing nothing), then destroys
    only the GPU instances PROPOSED does not keep (compute instances
    first), then creates the new ones each at its planned start slot
    (largest first) with its default compute instance. The kept ones are
    never touched. For a time-sliced PROPOSED, MIG goes off (Nova creates
    the vGPUs through mdev)."""
    m = catalogue.MODELS[catalogue.model_name(model)]
    current, proposed = layouts.normal(current), layouts.normal(proposed)
    # recut_steps destroys and creates MIG placements only: each with
    # its start
    destroyed: tuple[tuple[str, int], ...]
    created: tuple[tuple[str, int], ...]
    kept, destroyed, created = recut_steps(  # type: ignore[assignment]
        current, proposed)
    in_use = collections.defaultdict(list)
    for card, used in cards:
        for p in used:
            in_use[p].append(card)
    lines = ['#!/bin/sh',
             '# gpuclient: %s from %s to %s' % (
                 m.name, layouts.layout_text(current),
                 layouts.layout_text(proposed)),
             '# cards: %s' % ', '.join(
                 card + (' (in use: %s)' % layouts.layout_text(used)
                         if used else '')
                 for card, used in cards),
             '# run on the host of each card: GPU=<index> sh <this file>',
             'set -e',
             'GPU="${GPU:-0}"']
    if _is_mig(current):
        lines.append(_GI_AT)
        lines.append('# the GPU holds the layout planned from')
        lines += ['present %s %d' % p  # type: ignore[str-format]
                  for p in current]  # MIG: each with its start
    if kept:
        lines.append('# kept, untouched: %s' % layouts.layout_text(kept))
    for name, start in destroyed:
        servers = in_use.get((name, start))
        if servers:
            lines.append('# %s@%d is in use on %s: move its server first'
                         % (name, start, ', '.join(servers)))
        lines.append('destroy %s %d' % (name, start))
    if proposed and not _is_mig(proposed):
        if m.profiles and (not current or _is_mig(current)):
            lines.append('nvidia-smi -i "$GPU" -mig 0')
        lines.append('# time-sliced: Nova creates the %d %s mdevs '
                     '([devices] enabled_mdev_types)'
                     % (len(proposed), proposed[0][0]))
        return '\n'.join(lines) + '\n'
    if current and not _is_mig(current):
        lines.append('# its %d %s vGPUs (mdevs) are removed first'
                     % (len(current), current[0][0]))
    if not _is_mig(current):
        lines.append('nvidia-smi -i "$GPU" -mig 1')
    profiles = layouts.profiles_by_name(m)
    for name, start in sorted(created, key=lambda p: (
            -profiles[p[0]].memory_slices, p[1])):
        lines.append('nvidia-smi mig -i "$GPU" -cgi %s:%d -C' % (name, start))
    lines.append('nvidia-smi mig -i "$GPU" -lgi')
    return '\n'.join(lines) + '\n'


def script_name(model: str, proposed: Iterable[Sequence[typing.Any]] | None,
                current: Iterable[Sequence[typing.Any]] | None = ()) -> str:
    """File name of the script of one group: model, proposed layout and,
    for a card cut already, the layout it comes from; safe characters."""
    text = '%s_%s' % (model, layouts.layout_text(proposed))
    if current:
        text += '_from_%s' % layouts.layout_text(current)
    return re.sub(r'[^A-Za-z0-9.+-]+', '_', text).strip('_') + '.sh'
