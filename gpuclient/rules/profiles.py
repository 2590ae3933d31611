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

"""Pure: the GPU partition catalogue and the plan of ``gpu profile plan``.

Where the numbers come from
---------------------------
MIG profiles (compute slices, memory slices, instances per GPU): NVIDIA's
*Multi-Instance GPU User Guide*, section "Supported MIG Profiles" (tables
"GPU Instance Profiles on A30 / A100 / H100 / H200 / B200", driver R580
edition of docs.nvidia.com/datacenter/tesla/mig-user-guide/). The H100 94GB
(H100 NVL) names (1g.12gb ... 7g.94gb) are those of NVIDIA's vGPU types
reference ("Hopper Architecture vGPU Types", MIG-backed tables for the H100
PCIe 94GB), whose profile table the user guide page omits in its HTML.

Placements (valid start positions on the memory-slice axis) are the ones
``nvidia-smi mig -lgipp`` prints, as the user guide shows them ("Getting
Started with MIG"): on the 8-slice GPUs (A100, H100, H200, B200)
``1g: {0..6}:1``, ``1g+me: {0..6}:1``, ``1g.<2 slices>: {0,2,4,6}:2``,
``2g: {0,2,4}:2``, ``3g: {0,4}:4``, ``4g: {0}:4``, ``7g: {0}:8``; on the
4-slice A30 ``1g: {0,1,2,3}:1``, ``2g: {0,2}:2``, ``4g: {0}:4`` (the +me
variants at the same starts). Two GPU instances of one card may not share a
memory slice (NVML: "Creation of new GPU instance will fail if there is
overlap with the already occupied memory slices"). The ``+me`` profiles take
the card's only optical-flow engine (OFA; the full profiles list one OFA per
GPU), so a card carries at most one ``+me`` instance of any size.

Time-sliced vGPU types (C-series, frame buffer, maximum vGPUs per GPU in
equal-size mode): NVIDIA's vGPU user guide / vGPU types reference,
"Time-Sliced NVIDIA vGPU (C-Series)" tables for the PCIe boards (A100 PCIe
40GB and 80GB, A30, H100 PCIe 80GB, H100 PCIe 94GB, H200 NVL). One physical
GPU serves one time-sliced type at a time (equal-size mode). No table for
B200 time-sliced types was at hand: B200 lists MIG profiles only.

The plan
--------
``plan(cards, demand)`` gives every card a layout (a set of placements,
``(profile, start)``; a time-sliced vGPU card's placements have start None)
so that, in this order (lexicographically):

1. as much of the demand as possible is met: sum over profiles of
   min(demand, instances offered);
2. the fewest cards are re-cut (their layout differs from the current one;
   a card with no current layout counts as cut when it gets one);
3. the fewest running servers are disturbed (placements in use that the
   new layout of a re-cut card does not keep; a re-cut card that keeps
   every in-use placement moves nobody).

Why it is exact. Cards with the same model, current layout and in-use
placements are interchangeable: they form a class. A card either keeps its
current layout or is re-cut; a re-cut card may be given a *maximal* layout
(one no placement can be added to) without loss: extending a layout L to a
maximal L' offers at least as many instances of every profile (objective 1
is monotone), keeps every placement L kept (objective 3 no worse) and is a
re-cut just as L was (or none, if L' is the current layout). So each class
has finitely many options: keep, or a maximal layout. Only the instances of
demanded profiles (the *supply vector*) and the disturbed servers matter,
so of the options with the same supply vector the one disturbing fewest
servers is kept, and an option whose vector is no larger than another's,
with no fewer re-cuts and moves, is dropped (it can be swapped for the
other without making any objective worse). What is left is the integer
program

    x[c,o] >= 0 integer, sum_o x[c,o] = n_c            (every card of c)
    met_p <= d_p,  met_p <= sum x[c,o] * v[o,p]        (offered)
    lexmax (sum met_p, -sum x * recut[o], -sum x * moves[c,o])

solved to proven optimality by HiGHS's branch and bound (``highspy``), one
objective at a time, each optimum fixed as a constraint before the next
(objectives are integers, so an absolute gap below 1 is optimality).
HiGHS is imported only when a plan is solved, never at plugin load.
``gpuclient/tests/unit/test_profiles.py`` checks the optimum against brute
force over every layout (maximal or not) of every card.
"""

import collections
import re

from gpuclient.i18n import _

MIG = 'mig'
VGPU = 'vgpu'

Profile = collections.namedtuple(
    'Profile', 'name compute memory_slices memory_gb max_count starts media')
VgpuType = collections.namedtuple('VgpuType', 'name memory_gb max_count')
Model = collections.namedtuple(
    'Model', 'name compute_slices memory_slices profiles vgpu_types')


class UnknownName(ValueError):
    """A model, profile or vGPU type that the catalogue does not know."""


# -- the catalogue ------------------------------------------------------------

# (compute slices, memory slices, starts, max count, media) of each shape of
# the 8-memory-slice GPUs, in the user guide's table order.
_SHAPES_8 = (
    ('1g', 1, 1, (0, 1, 2, 3, 4, 5, 6), 7, False),
    ('1g+me', 1, 1, (0, 1, 2, 3, 4, 5, 6), 1, True),
    ('1g2', 1, 2, (0, 2, 4, 6), 4, False),
    ('2g', 2, 2, (0, 2, 4), 3, False),
    ('3g', 3, 4, (0, 4), 2, False),
    ('4g', 4, 4, (0,), 1, False),
    ('7g', 7, 8, (0,), 1, False),
)
_SHAPES_4 = (
    ('1g', 1, 1, (0, 1, 2, 3), 4, False),
    ('1g+me', 1, 1, (0, 1, 2, 3), 1, True),
    ('2g', 2, 2, (0, 2), 2, False),
    ('2g+me', 2, 2, (0, 2), 1, True),
    ('4g', 4, 4, (0,), 1, False),
)


def _model(name, shapes, names, vgpu_types):
    compute = max(s[1] for s in shapes)
    memory = max(s[2] for s in shapes)
    profiles = []
    for (_shape, c, m, starts, count, media), pname in zip(
            shapes, names, strict=True):
        gb = int(re.match(r'\d+g\.(\d+)gb', pname).group(1))
        profiles.append(Profile(pname, c, m, gb, count, starts, media))
    vgpus = tuple(VgpuType(t, gb, count) for t, gb, count in vgpu_types)
    return Model(name, compute, memory, tuple(profiles), vgpus)


MODELS = collections.OrderedDict((m.name, m) for m in (
    _model('A100-40GB', _SHAPES_8,
           ('1g.5gb', '1g.5gb+me', '1g.10gb', '2g.10gb', '3g.20gb',
            '4g.20gb', '7g.40gb'),
           (('A100-40C', 40, 1), ('A100-20C', 20, 2), ('A100-10C', 10, 4),
            ('A100-8C', 8, 5), ('A100-5C', 5, 8), ('A100-4C', 4, 10))),
    _model('A100-80GB', _SHAPES_8,
           ('1g.10gb', '1g.10gb+me', '1g.20gb', '2g.20gb', '3g.40gb',
            '4g.40gb', '7g.80gb'),
           (('A100D-80C', 80, 1), ('A100D-40C', 40, 2), ('A100D-20C', 20, 4),
            ('A100D-16C', 16, 5), ('A100D-10C', 10, 8), ('A100D-8C', 8, 10),
            ('A100D-4C', 4, 20))),
    _model('A30-24GB', _SHAPES_4,
           ('1g.6gb', '1g.6gb+me', '2g.12gb', '2g.12gb+me', '4g.24gb'),
           (('A30-24C', 24, 1), ('A30-12C', 12, 2), ('A30-8C', 8, 3),
            ('A30-6C', 6, 4), ('A30-4C', 4, 6))),
    _model('H100-80GB', _SHAPES_8,
           ('1g.10gb', '1g.10gb+me', '1g.20gb', '2g.20gb', '3g.40gb',
            '4g.40gb', '7g.80gb'),
           (('H100-80C', 81, 1), ('H100-40C', 40, 2), ('H100-20C', 20, 4),
            ('H100-16C', 16, 6), ('H100-10C', 10, 8), ('H100-8C', 8, 10),
            ('H100-5C', 5, 16), ('H100-4C', 4, 20))),
    _model('H100-94GB', _SHAPES_8,
           ('1g.12gb', '1g.12gb+me', '1g.24gb', '2g.24gb', '3g.47gb',
            '4g.47gb', '7g.94gb'),
           (('H100L-94C', 96, 1), ('H100L-47C', 48, 2), ('H100L-23C', 23, 4),
            ('H100L-15C', 15, 6), ('H100L-11C', 11, 8), ('H100L-6C', 6, 15),
            ('H100L-4C', 4, 23))),
    _model('H200-141GB', _SHAPES_8,
           ('1g.18gb', '1g.18gb+me', '1g.35gb', '2g.35gb', '3g.71gb',
            '4g.71gb', '7g.141gb'),
           (('H200-141C', 144, 1), ('H200-70C', 71, 2), ('H200-35C', 35, 4),
            ('H200-28C', 28, 5), ('H200-17C', 17, 8), ('H200-14C', 14, 10),
            ('H200-8C', 8, 16), ('H200-7C', 7, 20), ('H200-4C', 4, 32))),
    _model('B200-180GB', _SHAPES_8,
           ('1g.23gb', '1g.23gb+me', '1g.45gb', '2g.45gb', '3g.90gb',
            '4g.90gb', '7g.180gb'),
           ()),
))


def model_name(text):
    """The catalogue's name of a GPU model: case-insensitive, ``_`` or a
    space for ``-`` (``h100_80gb`` is ``H100-80GB``)."""
    key = re.sub(r'[\s_]+', '-', str(text).strip()).upper()
    if key not in MODELS:
        raise UnknownName(
            _('Unknown GPU model %(model)r: give one of %(models)s.')
            % {'model': text, 'models': ', '.join(MODELS)})
    return key


def _profile_key(text):
    key = str(text).strip().lower()
    for prefix in ('mig ', 'mig-', 'nvidia.com/mig-'):
        if key.startswith(prefix):
            key = key[len(prefix):]
    return key


def profile_names(model=None):
    """Every MIG profile and vGPU type name (of MODEL, or of every model)."""
    names = []
    for m in ([MODELS[model]] if model else MODELS.values()):
        for name in [p.name for p in m.profiles] + [
                t.name for t in m.vgpu_types]:
            if name not in names:
                names.append(name)
    return names


def profile_name(text):
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


def catalogue(model=None):
    """Rows of ``gpu profile list``: one per model and profile (MIG
    profiles, then time-sliced vGPU types)."""
    rows = []
    models = [MODELS[model_name(model)]] if model else MODELS.values()
    for m in models:
        for p in m.profiles:
            rows.append({'model': m.name, 'profile': p.name, 'mode': MIG,
                         'compute_slices': p.compute,
                         'memory_slices': p.memory_slices,
                         'memory_gb': p.memory_gb, 'max_count': p.max_count,
                         'placements': list(p.starts)})
        for t in m.vgpu_types:
            rows.append({'model': m.name, 'profile': t.name, 'mode': VGPU,
                         'compute_slices': None, 'memory_slices': None,
                         'memory_gb': t.memory_gb, 'max_count': t.max_count,
                         'placements': []})
    return rows


# -- layouts ------------------------------------------------------------------

def _profiles_by_name(model):
    return {p.name: p for p in model.profiles}


def _slices(profile, start):
    return set(range(start, start + profile.memory_slices))


def check_layout(model, layout):
    """Why LAYOUT (placements ``(profile, start)``) is not a valid layout of
    MODEL, or None when it is: valid starts only, no shared memory slice,
    counts within the table's, at most one ``+me``, compute slices within
    the card's; or one time-sliced type with start None, at most its
    maximum."""
    model = MODELS[model] if isinstance(model, str) else model
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
    profiles = _profiles_by_name(model)
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
    if compute > model.compute_slices:
        return _('more than %d compute slices') % model.compute_slices
    return None


def _placements(model):
    return [(p.name, s) for p in model.profiles for s in p.starts]


_LAYOUTS = {}


def layouts(model, maximal=False):
    """Every valid layout of MODEL (sorted tuples of placements, the empty
    one included): MIG layouts, then time-sliced ones; with MAXIMAL only
    those no placement (or vGPU) can be added to."""
    key = (model_name(model), maximal)
    if key in _LAYOUTS:
        return _LAYOUTS[key]
    m = MODELS[key[0]]
    places = _placements(m)
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
    result = tuple(sorted(set(mig), key=_layout_order)) + tuple(vgpu)
    _LAYOUTS[key] = result
    return result


def _order(placement):
    name, start = placement
    return (-1 if start is None else start, name)


def _layout_order(layout):
    return (len(layout), [_order(p) for p in layout])


def normal(layout):
    """LAYOUT as the plan compares it: a sorted tuple of placements."""
    return tuple(sorted((tuple(p) for p in (layout or ())), key=_order))


def layout_text(layout):
    """``3g.40gb@0, 1g.10gb@4`` (MIG) or ``A100D-10C x8`` (time-sliced)."""
    layout = normal(layout)
    if not layout:
        return '-'
    if layout[0][1] is None:
        return '%s x%d' % (layout[0][0], len(layout))
    return ', '.join('%s@%d' % p for p in layout)


def free_slices(model, layout):
    """Memory slices of a MIG layout that no instance covers (0 for a
    time-sliced or empty layout)."""
    m = MODELS[model_name(model)]
    layout = normal(layout)
    if not layout or layout[0][1] is None:
        return 0
    profiles = _profiles_by_name(m)
    used = set()
    for name, start in layout:
        used |= _slices(profiles[name], start)
    return m.memory_slices - len(used)


# -- the plan -----------------------------------------------------------------

def _moves(current, in_use, layout):
    """Servers disturbed when a card goes from CURRENT to LAYOUT."""
    if layout == current:
        return 0
    kept = collections.Counter(layout)
    lost = collections.Counter(in_use) - kept
    return sum(lost.values())


def _supply(layout, wanted):
    counts = collections.Counter(name for name, _start in layout)
    return tuple(counts[p] for p in wanted)


def class_options(model, current, in_use, wanted):
    """The options of one class of cards: (layout, supply, recut, moves),
    keep-current first, Pareto-pruned as the module docstring says."""
    best = {}
    keep = (current, _supply(current, wanted), 0, 0)
    for layout in layouts(model, maximal=True):
        if layout == current:
            continue
        option = (layout, _supply(layout, wanted), 1,
                  _moves(current, in_use, layout))
        old = best.get(option[1])
        if old is None or option[3] < old[3]:
            best[option[1]] = option
    options = [keep] + sorted(best.values(), key=lambda o: (o[3], o[1]))
    kept = []
    for i, option in enumerate(options):
        dominated = any(
            j != i and all(a >= b for a, b in zip(other[1], option[1],
                                              strict=True))
            and other[2] <= option[2] and other[3] <= option[3]
            and (other[1], other[2], other[3]) != (
                option[1], option[2], option[3])
            for j, other in enumerate(options))
        if not dominated or i == 0:
            kept.append(option)
    return kept


def _classes(cards):
    classes = collections.OrderedDict()
    for index, card in enumerate(cards):
        model = model_name(card['model'])
        current = normal(card.get('current'))
        in_use = normal(card.get('in_use'))
        why = check_layout(model, current)
        if why:
            raise ValueError(_('Card %(card)s: its current layout is not '
                               'valid: %(why)s.')
                             % {'card': card.get('id', index), 'why': why})
        if collections.Counter(in_use) - collections.Counter(current):
            raise ValueError(_('Card %s: a placement in use is not in its '
                               'current layout.') % card.get('id', index))
        classes.setdefault((model, current, in_use), []).append(index)
    return classes


def _solve(classes, options, wanted, demand):
    """Counts per (class, option) of the lexicographic optimum, and the
    three optimal values; HiGHS imported here only."""
    import highspy

    h = highspy.Highs()
    h.setOptionValue('output_flag', False)
    h.setOptionValue('mip_rel_gap', 0.0)
    h.setOptionValue('mip_abs_gap', 1e-6)
    h.setOptionValue('threads', 1)
    inf = highspy.kHighsInf
    columns = []  # (class index, option index)
    of_class = []
    for c, _key in enumerate(classes):
        of_class.append([])
        for o, _option in enumerate(options[c]):
            of_class[c].append(len(columns))
            columns.append((c, o))
    n_x = len(columns)
    for _col in columns:
        h.addCol(0.0, 0.0, inf, 0, [], [])
    for p in wanted:
        h.addCol(0.0, 0.0, float(demand[p]), 0, [], [])
    h.changeColsIntegrality(
        n_x + len(wanted), list(range(n_x + len(wanted))),
        [highspy.HighsVarType.kInteger] * (n_x + len(wanted)))
    for c, key in enumerate(classes):
        idx = of_class[c]
        n = float(len(classes[key]))
        h.addRow(n, n, len(idx), idx, [1.0] * len(idx))
    for k in range(len(wanted)):
        idx, val = [n_x + k], [1.0]
        for i, (c, o) in enumerate(columns):
            v = options[c][o][1][k]
            if v:
                idx.append(i)
                val.append(-float(v))
        h.addRow(-inf, 0.0, len(idx), idx, val)
    stages = (
        [(n_x + k, -1.0) for k in range(len(wanted))],
        [(i, float(options[c][o][2])) for i, (c, o) in enumerate(columns)],
        [(i, float(options[c][o][3])) for i, (c, o) in enumerate(columns)],
    )
    values = []
    for stage in stages:
        costs = [0.0] * (n_x + len(wanted))
        for i, cost in stage:
            costs[i] = cost
        h.changeColsCost(len(costs), list(range(len(costs))), costs)
        h.run()
        status = h.getModelStatus()
        if status != highspy.HighsModelStatus.kOptimal:
            raise RuntimeError(_('The solver did not prove an optimum: %s')
                               % h.modelStatusToString(status))
        value = round(h.getInfo().objective_function_value)
        values.append(value)
        idx = [i for i, cost in stage if cost]
        val = [cost for _i, cost in stage if cost]
        if idx:
            # keep this optimum while the next objective is solved
            h.addRow(-inf, value + 0.5, len(idx), idx, val)
    solution = h.getSolution().col_value
    counts = {col: int(round(solution[i])) for i, col in enumerate(columns)}
    return counts, (-values[0], values[1], values[2])


def plan(cards, demand):
    """The per-card layouts that serve DEMAND best (see module docstring).

    CARDS: dicts with ``id``, ``model`` and optionally ``current`` (its
    layout now, placements ``(profile, start)``; none: not cut) and
    ``in_use`` (the placements of ``current`` that hold servers). DEMAND:
    {profile or vGPU type: instances wanted}, profile names as
    ``profile_name`` gives them; a name counts on every model that has it.

    Returns ``(rows, summary)``: one row per card (``id``, ``model``,
    ``current``, ``proposed``, ``recut``, ``moves``, ``serves``: {profile:
    instances of the demand it serves}) in the order given, and the summary
    (``demand``: {profile: (wanted, offered, met)}, ``met``, ``wanted``,
    ``recut``, ``moves``, ``stranded_slices``).
    """
    wanted = sorted(p for p, n in demand.items() if n > 0)
    classes = _classes(cards)
    options = [class_options(key[0], key[1], key[2], wanted)
               for key in classes]
    if wanted and classes:
        counts, _values = _solve(classes, options, wanted, demand)
    else:
        counts = {(c, 0): len(classes[key])
                  for c, key in enumerate(classes)}
    proposed = [None] * len(cards)
    for c, key in enumerate(classes):
        members = iter(classes[key])
        for o, option in enumerate(options[c]):
            for _n in range(counts.get((c, o), 0)):
                proposed[next(members)] = option
    left = dict((p, demand[p]) for p in wanted)
    rows, moves, recut, stranded = [], 0, 0, 0
    for index, card in enumerate(cards):
        layout, _supply_v, cut, moved = proposed[index]
        model = model_name(card['model'])
        serves = collections.OrderedDict()
        for name, _start in layout:
            if left.get(name, 0) > 0:
                left[name] -= 1
                serves[name] = serves.get(name, 0) + 1
        if layout:
            stranded += free_slices(model, layout)
        moves += moved
        recut += cut
        rows.append({'id': card.get('id', str(index)), 'model': model,
                     'current': normal(card.get('current')),
                     'proposed': layout, 'recut': bool(cut),
                     'moves': moved, 'serves': dict(serves)})
    offered = collections.Counter(
        name for row in rows for name, _start in row['proposed'])
    table = {p: (demand[p], offered[p], min(demand[p], offered[p]))
             for p in wanted}
    summary = {'demand': table,
               'wanted': sum(demand[p] for p in wanted),
               'met': sum(v[2] for v in table.values()),
               'recut': recut, 'moves': moves,
               'stranded_slices': stranded}
    return rows, summary


def objective(rows, demand):
    """(met, recut, moves) of ROWS for DEMAND: what ``plan`` optimises,
    computed from the rows alone (the tests' referee)."""
    offered = collections.Counter(
        name for row in rows for name, _start in row['proposed'])
    met = sum(min(n, offered[p]) for p, n in demand.items() if n > 0)
    return (met, sum(1 for r in rows if r['recut']),
            sum(r['moves'] for r in rows))


# -- nvidia-smi scripts -------------------------------------------------------

def groups(rows):
    """Cards grouped by (model, proposed layout) for one script each:
    [(model, layout, [card ids])], cards that keep their layout left out."""
    found = collections.OrderedDict()
    for row in rows:
        if not row['recut']:
            continue
        found.setdefault((row['model'], row['proposed']), []).append(
            row['id'])
    return [(m, lay, ids) for (m, lay), ids in found.items()]


def script(model, layout, card_ids):
    """A POSIX shell script that cuts one GPU (``GPU=<index>`` in the
    environment, default 0) into LAYOUT: destroy every compute instance,
    then every GPU instance, then create the GPU instances (largest first,
    then by start slot) each with its default compute instance; for a
    time-sliced layout, MIG off (the vGPU types are then created by Nova
    through mdev)."""
    layout = normal(layout)
    lines = ['#!/bin/sh',
             '# gpuclient: layout %s for %s' % (layout_text(layout), model),
             '# cards: %s' % ', '.join(card_ids),
             '# run on the host of each card: GPU=<index> sh <this file>',
             'set -e',
             'GPU="${GPU:-0}"',
             '# compute instances go before their GPU instances; "|| true":'
             ' a card without instances has none to destroy',
             'nvidia-smi mig -i "$GPU" -dci || true',
             'nvidia-smi mig -i "$GPU" -dgi || true']
    if layout and layout[0][1] is None:
        lines += ['nvidia-smi -i "$GPU" -mig 0',
                  '# time-sliced: Nova creates the %d %s mdevs '
                  '([devices] enabled_mdev_types)' % (len(layout),
                                                       layout[0][0])]
    else:
        lines.append('nvidia-smi -i "$GPU" -mig 1')
        profiles = _profiles_by_name(MODELS[model_name(model)])
        ordered = sorted(layout, key=lambda p: (
            -profiles[p[0]].memory_slices, p[1]))
        for name, start in ordered:
            lines.append('nvidia-smi mig -i "$GPU" -cgi %s -C  '
                         '# planned start slot %d' % (name, start))
        lines.append('nvidia-smi mig -i "$GPU" -lgi  # compare each '
                     'Placement start with the plan')
    return '\n'.join(lines) + '\n'


def script_name(model, layout):
    """File name of the script of one group: model and layout, safe."""
    text = '%s_%s' % (model, layout_text(layout))
    return re.sub(r'[^A-Za-z0-9.+-]+', '_', text).strip('_') + '.sh'
