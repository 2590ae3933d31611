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

"""Pure: the layouts of a card, checked and enumerated.

A layout is how one GPU is cut: MIG placements ``(profile, start slot)``,
or one time-sliced vGPU type as many times as it runs, each ``(type,
None)``. Valid layouts follow the catalogue's table of the model (start
slots, instances per GPU, memory and compute slices, media engines).
"""

from __future__ import annotations

import collections
from collections.abc import Iterable
from collections.abc import Sequence
import typing

from gpuclient.i18n import _
from gpuclient.rules import catalogue

# a +me.all instance takes every media engine: the others on its GPU must
# be -me (no media engine)
ALL_MEDIA = '+me.all'
NO_MEDIA = '-me'

# a placement: (MIG profile, start slot), or (time-sliced vGPU type, None)
Placement = tuple[str, int | None]
# how one GPU is cut: its placements
Layout = tuple[Placement, ...]


def profiles_by_name(model: catalogue.Model) -> dict[str, catalogue.Profile]:
    return {p.name: p for p in model.profiles}


def _slices(profile, start):
    return set(range(start, start + profile.memory_slices))


def check_layout(model: str | catalogue.Model,
                 layout: Iterable[Placement]) -> str | None:
    """Why LAYOUT (placements ``(profile, start)``) is not a valid layout of
    MODEL, or None when it is: valid starts only, no shared memory slice,
    counts within the table's, at most one ``+me``, compute slices within
    the card's; or one time-sliced type with start None, at most its
    maximum."""
    model = catalogue.MODELS[model] if isinstance(model, str) else model
    layout = list(layout)
    if not layout:
        return None
    vgpus = {t.name: t for t in model.vgpu_types}
    if any(start is None for _name, start in layout):
        names = {name for name, _start in layout}
        if len(names) != 1 or any(s is not None for _n, s in layout):
            return _('a time-sliced card serves one vGPU type, alone')
        name = names.pop()
        if name not in vgpus:
            return _('%s is no time-sliced vGPU type of this model') % name
        if len(layout) > vgpus[name].max_count:
            return _('more than %(n)d %(type)s on one GPU') % {
                'n': vgpus[name].max_count, 'type': name}
        return None
    profiles = profiles_by_name(model)
    used: set[int]
    counts: collections.Counter[str]
    used, counts, compute, media = set(), collections.Counter(), 0, 0
    for name, start in layout:
        profile = profiles.get(name)
        if profile is None:
            return _('%s is no MIG profile of this model') % name
        if start not in profile.starts:
            return _('%(p)s cannot start at slice %(s)s') % {
                'p': name, 's': start}
        slices = _slices(profile, start)
        if used & slices:
            return _('%(p)s at %(s)s overlaps another instance') % {
                'p': name, 's': start}
        used |= slices
        counts[name] += 1
        compute += profile.compute
        media += profile.media
        if counts[name] > profile.max_count:
            return _('more than %(n)d %(p)s on one GPU') % {
                'n': profile.max_count, 'p': name}
    if media > 1:
        return _('more than one +me instance on one GPU')
    if len(layout) > 1 and any(n.endswith(ALL_MEDIA) for n, _s in layout) \
            and not all(n.endswith((ALL_MEDIA, NO_MEDIA))
                        for n, _s in layout):
        return _('a +me.all instance takes every media engine: the others '
                 'on its GPU must be -me profiles')
    if compute > model.compute_slices:
        return _('more than %d compute slices') % model.compute_slices
    return None


def placements(model: catalogue.Model) -> list[Placement]:
    return [(p.name, s) for p in model.profiles for s in p.starts]


_LAYOUTS: dict[tuple[str, bool], tuple[Layout, ...]] = {}


def layouts(model: str, maximal: bool = False) -> tuple[Layout, ...]:
    """Every valid layout of MODEL (sorted tuples of placements, the empty
    one included): MIG layouts, then time-sliced ones; with MAXIMAL only
    those no placement (or vGPU) can be added to."""
    key = (catalogue.model_name(model), maximal)
    if key in _LAYOUTS:
        return _LAYOUTS[key]
    m = catalogue.MODELS[key[0]]
    places = placements(m)
    found = []

    def grow(index, chosen):
        found.append(tuple(chosen))
        for i in range(index, len(places)):
            candidate = chosen + [places[i]]
            if check_layout(m, candidate) is None:
                grow(i + 1, candidate)

    grow(0, [])
    mig = [tuple(sorted(lay, key=_order)) for lay in found]
    if maximal:
        mig = [lay for lay in mig if not any(
            check_layout(m, lay + (p,)) is None for p in places
            if p not in lay)]
    vgpu = [((t.name, None),) * k for t in m.vgpu_types
            for k in ((t.max_count,) if maximal
                      else range(1, t.max_count + 1))]
    if maximal and not places:
        # no MIG: the empty layout is not a way to cut the card
        mig = [lay for lay in mig if lay]
    result = tuple(sorted(set(mig), key=_layout_order)) + tuple(vgpu)
    _LAYOUTS[key] = result
    return result


def _order(placement):
    name, start = placement
    return (-1 if start is None else start, name)


def _layout_order(layout):
    return (len(layout), [_order(p) for p in layout])


def normal(layout: Iterable[Sequence[typing.Any]] | None) -> Layout:
    """LAYOUT as the plan compares it: a sorted tuple of placements."""
    return tuple(sorted((tuple(p) for p in (layout or ())), key=_order))


def layout_text(layout: Iterable[Sequence[typing.Any]] | None) -> str:
    """``3g.40gb@0, 1g.10gb@4`` (MIG) or ``A100D-10C x8`` (time-sliced)."""
    layout = normal(layout)
    if not layout:
        return '-'
    if layout[0][1] is None:
        return '%s x%d' % (layout[0][0], len(layout))
    # MIG placements: each with its start
    return ', '.join('%s@%d' % p for p in layout)  # type: ignore[str-format]


def free_slices(model: str,
                layout: Iterable[Sequence[typing.Any]] | None) -> int:
    """Memory slices of a MIG layout that no instance covers (0 for a
    time-sliced or empty layout)."""
    m = catalogue.MODELS[catalogue.model_name(model)]
    layout = normal(layout)
    if not layout or layout[0][1] is None:
        return 0
    profiles = profiles_by_name(m)
    used = set()
    for name, start in layout:
        used |= _slices(profiles[name], start)
    return m.memory_slices - len(used)

