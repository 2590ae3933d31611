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

"""Pure: the GPU partition catalogue, and the names in it.

The catalogue is data, two files beside this module: ``models.yaml``
(NVIDIA's MIG profiles and time-sliced vGPU types per GPU model, the types
keyed by the board they are named for, each model and board with its
source) and ``bar1.yaml`` (the BAR1 window of each board). ``MODELS``,
``BOARDS`` and ``BAR1`` are read from them the first time one of them is
asked for (a module ``__getattr__``), never when this module is imported:
a command that plans no partition reads no file. Where the numbers come
from: doc/source/user/catalogue.rst.
"""

from __future__ import annotations

import collections
from collections.abc import Iterable
from collections.abc import Mapping
import functools
import os
import re
import typing

from gpuclient.i18n import _

MIG = 'mig'
VGPU = 'vgpu'


class Profile(typing.NamedTuple):
    name: str
    compute: int
    memory_slices: int
    memory_gb: int
    max_count: int
    starts: tuple[int, ...]
    media: bool


# board: the key of the Board the type is named for (vGPU type names differ
# between the boards of one GPU: H100-80C on the PCIe card, H100XM-80C on
# the SXM5 module)
class VgpuType(typing.NamedTuple):
    name: str
    memory_gb: int
    max_count: int
    board: str


# a physical product carrying the model's GPU: its key (``H100-SXM5-80GB``),
# NVIDIA's name of it, physical GPUs on it, and the table its vGPU types are
# transcribed from
class Board(typing.NamedTuple):
    name: str
    title: str
    gpus: int
    source: str


# source: where the MIG profiles (names, counts, start slots) come from
class Model(typing.NamedTuple):
    name: str
    compute_slices: int
    memory_slices: int
    profiles: tuple[Profile, ...]
    vgpu_types: tuple[VgpuType, ...]
    boards: tuple[Board, ...]
    source: str | None


# the BAR1 window of a board (its frame buffer aperture, mapped into the
# guest's physical address space under passthrough: rules/address_space),
# ``gib`` None where no source gave its size, with the PCI device IDs that
# name the board in a pool (``--pci-id``)
class Bar1(typing.NamedTuple):
    board: str
    gib: int | None
    pci_ids: tuple[str, ...]
    source: str


# MODELS: {name: Model}; BOARDS: {board name: (Board, its model's name)};
# BAR1: {board name: Bar1}
class Tables(typing.NamedTuple):
    MODELS: dict[str, Model]
    BOARDS: dict[str, tuple[Board, str]]
    BAR1: dict[str, Bar1]


class UnknownName(ValueError):
    """A model, profile or vGPU type that the catalogue does not know."""


class BoardMismatch(ValueError):
    """vGPU types asked of cards of another board (``check_boards``)."""


# -- reading the data files ---------------------------------------------------

HERE = os.path.dirname(os.path.abspath(__file__))


def _read(name):
    # PyYAML: openstacksdk's config loader has imported it already in an
    # openstack command; libyaml's loader where there is one
    import yaml

    with open(os.path.join(HERE, name), encoding='utf-8') as f:
        return yaml.load(f, Loader=getattr(yaml, 'CSafeLoader',
                                           yaml.SafeLoader))


class _Sources:
    """What a source text is filled with (``str.format_map``): ``{name}``
    is the document NAME, itself filled with FIELDS, else the field
    NAME."""

    def __init__(self, documents, fields=None):
        self.documents, self.fields = documents, fields or {}

    def __getitem__(self, name):
        if name in self.documents:
            return self.documents[name].format_map(self.fields)
        return self.fields[name]


def _model(entry, shapes, documents):
    profiles = tuple(
        Profile(name, compute, memory,
                int(re.match(r'\d+g\.(\d+)gb', name).group(1)), count,
                tuple(starts), media)
        for (_shape, compute, memory, starts, count, media), name in zip(
            shapes.get(entry.get('shapes'), ()), entry.get('profiles', ()),
            strict=True))
    boards = tuple(Board(b['name'], b['title'], b['gpus'],
                         b['source'].format_map(_Sources(documents)))
                   for b in entry.get('boards', ()))
    types = tuple(VgpuType(t, gb, count, b['name'])
                  for b in entry.get('boards', ())
                  for t, gb, count in b['types'])
    source = entry.get('source')
    return Model(entry['name'], max((p.compute for p in profiles), default=0),
                 max((p.memory_slices for p in profiles), default=0),
                 profiles, types, boards,
                 source and source.format_map(_Sources(documents)))


def _bar1(entry, documents):
    mib = entry['mib']
    return Bar1(entry['board'], None if mib is None else mib // 1024,
                ('10de:%s' % entry['device'].lower(),),
                entry['source'].format_map(_Sources(documents, entry)))


@functools.cache
def tables() -> Tables:
    """The catalogue's MODELS, BOARDS and BAR1, read from the data files
    once, when first asked for."""
    data = _read('models.yaml')
    models = collections.OrderedDict(
        (m.name, m) for m in (_model(entry, data['shapes'],
                                     data['documents'])
                              for entry in data['models']))
    boards = collections.OrderedDict(
        (b.name, (b, m.name)) for m in models.values() for b in m.boards)
    data = _read('bar1.yaml')
    bar1 = collections.OrderedDict(
        (b.board, b) for b in (_bar1(entry, data['documents'])
                               for entry in data['boards']))
    return Tables(models, boards, bar1)


def __getattr__(name):
    # MODELS, BOARDS and BAR1 (PEP 562): read on first use
    if name in Tables._fields:
        return getattr(tables(), name)
    raise AttributeError('module %r has no attribute %r' % (__name__, name))


# -- names --------------------------------------------------------------------

def bar1_for_pci_id(pci_id: str | None) -> Bar1 | None:
    """The Bar1 of the board with PCI ID ``vendor:product`` (its ``gib``
    None where the size is not known), or None (no catalogue board has
    that ID)."""
    key = str(pci_id or '').strip().lower()
    for bar1 in tables().BAR1.values():
        if key in bar1.pci_ids:
            return bar1
    return None


def _key(text: str) -> str:
    return re.sub(r'[\s_]+', '-', str(text).strip()).upper()


def model_name(text: str) -> str:
    """The catalogue's name of a GPU model: case-insensitive, ``_`` or a
    space for ``-`` (``h100_80gb`` is ``H100-80GB``); a board's name gives
    its model (``H100-NVL`` is ``H100-94GB``)."""
    key = _key(text)
    models, boards = tables().MODELS, tables().BOARDS
    if key in models:
        return key
    if key in boards:
        return boards[key][1]
    raise UnknownName(
        _('Unknown GPU model %(model)r: give one of %(models)s (or a board: '
          'see "openstack gpu profile list --long").')
        % {'model': text, 'models': ', '.join(models)})


def board_name(text: str) -> str:
    """The catalogue's name of a board (``h100-sxm5-80gb`` is
    ``H100-SXM5-80GB``)."""
    key = _key(text)
    boards = tables().BOARDS
    if key not in boards:
        raise UnknownName(
            _('Unknown board %(board)r: give one of %(boards)s.')
            % {'board': text, 'boards': ', '.join(boards)})
    return key


def _profile_key(text: str) -> str:
    key = str(text).strip().lower()
    for prefix in ('mig ', 'mig-', 'nvidia.com/mig-'):
        if key.startswith(prefix):
            key = key[len(prefix):]
    return key


def profile_names(model: str | None = None) -> list[str]:
    """Every MIG profile and vGPU type name (of MODEL, or of every model)."""
    models = tables().MODELS
    names = []
    for m in ([models[model]] if model else models.values()):
        for name in [p.name for p in m.profiles] + [
                t.name for t in m.vgpu_types]:
            if name not in names:
                names.append(name)
    return names


def profile_name(text: str) -> str:
    """The catalogue's name of a MIG profile (``3g.40gb``, case-insensitive,
    ``MIG `` or ``nvidia.com/mig-`` prefix allowed) or time-sliced vGPU
    type (``A100D-10C``)."""
    key = _profile_key(text)
    for name in profile_names():
        if name.lower() == key:
            return name
    raise UnknownName(
        _('Unknown MIG profile or vGPU type %(name)r: see "openstack gpu '
          'profile list" for the names (e.g. 3g.40gb, 1g.10gb+me, '
          'A100D-10C).') % {'name': text})


def rows(model: str | None = None,
         board: str | None = None) -> list[dict[str, typing.Any]]:
    """Rows of ``gpu profile list``: one per model and profile (MIG
    profiles, then time-sliced vGPU types with their board), each with the
    source it is transcribed from. BOARD: only its model's MIG profiles and
    the vGPU types of that board."""
    found = []
    all_models = tables().MODELS
    models = ([all_models[model_name(model)]] if model
              else list(all_models.values()))
    if board:
        board = board_name(board)
        owner = tables().BOARDS[board][1]
        if model and models[0].name != owner:
            raise UnknownName(
                _('Board %(board)s carries a %(owner)s, not a %(model)s.')
                % {'board': board, 'owner': owner, 'model': models[0].name})
        models = [all_models[owner]]
    for m in models:
        for p in m.profiles:
            found.append({'model': m.name, 'profile': p.name, 'mode': MIG,
                          'board': None,
                          'compute_slices': p.compute,
                          'memory_slices': p.memory_slices,
                          'memory_gb': p.memory_gb, 'max_count': p.max_count,
                          'placements': list(p.starts), 'source': m.source})
        sources = {b.name: b.source for b in m.boards}
        for t in m.vgpu_types:
            if board and t.board != board:
                continue
            found.append({'model': m.name, 'profile': t.name, 'mode': VGPU,
                          'board': t.board,
                          'compute_slices': None, 'memory_slices': None,
                          'memory_gb': t.memory_gb, 'max_count': t.max_count,
                          'placements': [], 'source': sources[t.board]})
    return found


def vgpu_type(name: str) -> tuple[str, VgpuType] | None:
    """(model name, VgpuType) of a time-sliced vGPU type (catalogue name,
    case-insensitive), or None."""
    key = str(name).strip().upper()
    for m in tables().MODELS.values():
        for t in m.vgpu_types:
            if t.name.upper() == key:
                return m.name, t
    return None


def check_boards(card_names: Iterable[str],
                 demand: Mapping[str, int]) -> str | None:
    """Why DEMAND ({profile: count}, catalogue names) cannot be planned on
    the cards CARD_NAMES (models or boards, as ``--cards`` gives them), or
    None. A vGPU type is named for one board: a card given by its board
    serves that board's types only, and cards given by their model cannot
    tell which board's types they serve when the demand names types of
    two boards of that model."""
    wanted: dict[str, dict[str, str]] = {}
    for name in demand:
        found = vgpu_type(name)
        if found:
            wanted.setdefault(found[0], {})[name] = found[1].board
    for text in card_names:
        key = _key(text)
        model = model_name(text)
        types = wanted.get(model, {})
        if key in tables().BOARDS:
            other = sorted(t for t, b in types.items() if b != key)
            if other:
                return _('%(types)s: vGPU types of another board than '
                         '%(board)s (see "openstack gpu profile list '
                         '--board %(board)s" for its types).') % {
                    'types': ', '.join(other), 'board': key}
        elif len(set(types.values())) > 1:
            return _('%(types)s are vGPU types of boards %(boards)s of the '
                     '%(model)s: give the cards by board (--cards '
                     '<board>=<count>, e.g. %(board)s) so that each is '
                     'planned with its own board\'s types.') % {
                'types': ', '.join(sorted(types)),
                'boards': ', '.join(sorted(set(types.values()))),
                'model': model, 'board': sorted(set(types.values()))[0]}
    return None
