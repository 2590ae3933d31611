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

"""Pure: the plan of ``gpu profile plan``.

``plan(cards, demand)`` gives every card a layout that meets as much of
the demand as possible, then re-cuts the fewest cards, then disturbs the
fewest running servers, solved exactly by HiGHS (imported only when a plan
is solved) and proven optimal by an LP bound (``_dive``) or by HiGHS's
branch and bound.

Why the plan is exact and how the fewest moves are proven:
doc/source/contributor/profiles.rst (the contributor guide's "The profile
plan").
"""

from __future__ import annotations

import collections
from collections.abc import Collection
from collections.abc import Mapping
from collections.abc import Sequence
import functools
import math
import typing

from gpuclient.i18n import _
from gpuclient.rules import catalogue
from gpuclient.rules.profiles import layouts

if typing.TYPE_CHECKING:
    import types


def _moves(current, in_use, layout):
    """Servers disturbed when a card goes from CURRENT to LAYOUT."""
    if layout == current:
        return 0
    kept = collections.Counter(layout)
    lost = collections.Counter(in_use) - kept
    return sum(lost.values())


def _supply(layout, wanted, caps):
    """Instances of each wanted profile LAYOUT offers, each capped at its
    demand (a card never serves more than the whole demand of a profile)."""
    counts = collections.Counter(name for name, _start in layout)
    return tuple(min(counts[p], cap)
                 for p, cap in zip(wanted, caps, strict=True))


class _Table:
    """The re-cut options of one model for one demand: the maximal layouts
    grouped by supply vector, as bit masks, with the dominance relation
    between supply vectors worked out once."""

    def __init__(self, model, wanted, caps):
        m = catalogue.MODELS[model]
        bits = {p: 1 << i for i, p in enumerate(layouts.placements(m))}
        for i, t in enumerate(m.vgpu_types):
            # a time-sliced type is one bit: its vGPUs are interchangeable
            bits[(t.name, None)] = 1 << (len(bits) + i)
        self.bits = bits
        groups = collections.OrderedDict()
        for layout in layouts.layouts(model, maximal=True):
            mask = 0
            for p in layout:
                mask |= bits[p]
            groups.setdefault(_supply(layout, wanted, caps), []).append(
                (mask, layout))
        self.supplies = list(groups)
        self.groups = list(groups.values())
        n = len(self.supplies)
        # dominated_by[i]: supply vectors >= supplies[i], other than it
        self.dominated_by = [0] * n
        for i, low in enumerate(self.supplies):
            for j, high in enumerate(self.supplies):
                if i != j and all(a >= b for a, b in zip(high, low,
                                                         strict=True)):
                    self.dominated_by[i] |= 1 << j
        self._of_use = {}
        self._below = {}

    def mask(self, in_use):
        """IN_USE as (bit mask, servers per bit): a MIG placement holds one
        server, a time-sliced type as many as its vGPUs in use."""
        mask = 0
        for p in in_use:
            mask |= self.bits[p]
        return mask, (len(in_use) if in_use and in_use[0][1] is None
                      else 1)

    def of_use(self, in_use):
        """For cards with IN_USE in use: {supply index: (moves, layout)}
        of the re-cut options no other re-cut option dominates. Memoised:
        it depends on the placements in use only."""
        found = self._of_use.get(in_use)
        if found is not None:
            return found
        used, weight = self.mask(in_use)
        best = []
        for group in self.groups:
            # the first layout of the group that disturbs fewest servers
            moves, layout = (used & ~group[0][0]).bit_count(), group[0][1]
            for mask, other in group[1:] if moves else ():
                lost = (used & ~mask).bit_count()
                if lost < moves:
                    moves, layout = lost, other
                    if not lost:
                        break
            best.append((moves * weight, layout))
        # at_most[k]: supply vectors reachable with k moves or fewer
        top = max(m for m, _layout in best)
        at_most = [0] * (top + 1)
        for i, (moves, _layout) in enumerate(best):
            at_most[moves] |= 1 << i
        for k in range(1, top + 1):
            at_most[k] |= at_most[k - 1]
        found = {i: option for i, option in enumerate(best)
                 if not self.dominated_by[i] & at_most[option[0]]}
        self._of_use[in_use] = found
        return found

    def below(self, supply):
        """Bit mask of the supply vectors <= SUPPLY (memoised)."""
        found = self._below.get(supply)
        if found is None:
            found = 0
            for i, other in enumerate(self.supplies):
                if all(a <= b for a, b in zip(other, supply, strict=True)):
                    found |= 1 << i
            self._below[supply] = found
        return found


def _check_card(index, card):
    model = catalogue.model_name(card['model'])
    current = layouts.normal(card.get('current'))
    in_use = layouts.normal(card.get('in_use'))
    why = layouts.check_layout(model, current)
    if why:
        raise ValueError(_('Card %(card)s: its current layout is not '
                           'valid: %(why)s.')
                         % {'card': card.get('id', index), 'why': why})
    if collections.Counter(in_use) - collections.Counter(current):
        raise ValueError(_('Card %s: a placement in use is not in its '
                           'current layout.') % card.get('id', index))
    return model, current, in_use


def _classes(cards, wanted, caps):
    """Cards grouped into classes of interchangeable cards: {key: [card
    index]}, key (model, keep supply, ((supply, moves), ...)); and per
    card its re-cut options {supply index: (moves, layout)} and table."""
    tables, classes, per_card = {}, collections.OrderedDict(), []
    for index, card in enumerate(cards):
        model, current, in_use = _check_card(index, card)
        table = tables.get(model)
        if table is None:
            table = tables[model] = _Table(model, wanted, caps)
        keep = _supply(current, wanted, caps)
        below = table.below(keep)
        options = {i: option for i, option in table.of_use(in_use).items()
                   if not below >> i & 1}
        key = (model, keep, tuple((table.supplies[i], moves)
                                  for i, (moves, _lay) in options.items()))
        classes.setdefault(key, []).append(index)
        per_card.append((current, in_use, options))
    return classes, per_card


def _highs(highspy):
    h = highspy.Highs()
    h.setOptionValue('output_flag', False)
    h.setOptionValue('threads', 1)
    # every objective is an integer: a gap below 1 proves the optimum
    h.setOptionValue('mip_rel_gap', 0.0)
    h.setOptionValue('mip_abs_gap', 0.99)
    return h


def _run(h, highspy, costs, infeasible=False):
    """Solve H for COSTS to a proven optimum: (value, solution, HiGHS's
    model status); None when H has no solution and INFEASIBLE is true.
    No first incumbent is given: measured, a start made HiGHS slower on
    the moves, and with a start HiGHS 1.16 once returned the start
    instead of the better optimum it reported (a unit test caught it);
    the value of the solution returned is checked against HiGHS's
    objective."""
    n_col = len(costs)
    cols = list(range(n_col))
    h.changeColsCost(n_col, cols, costs)
    h.run()
    status = h.getModelStatus()
    if infeasible and status == highspy.HighsModelStatus.kInfeasible:
        return None
    if status != highspy.HighsModelStatus.kOptimal:
        raise RuntimeError(_('The solver did not prove an optimum: %s')
                           % h.modelStatusToString(status))
    solution = list(h.getSolution().col_value)
    value = sum(c * x for c, x in zip(costs, solution, strict=True) if c)
    if abs(value - h.getInfo().objective_function_value) > 0.5:
        raise RuntimeError(_('The solver returned a solution of value %(x)s '
                             'for an optimum of %(y)s.') % {
            'x': value, 'y': h.getInfo().objective_function_value})
    return round(value), solution, h.modelStatusToString(status)


def _maxima(vectors):
    """The vectors of VECTORS no other one is >= (each once, sorted)."""
    return _maxima_of(frozenset(vectors))


@functools.lru_cache(maxsize=4096)
def _maxima_of(vectors):
    # memoised: classes of a fleet share their sets of vectors
    vectors = sorted(vectors)
    return tuple(v for v in vectors if not any(
        w != v and all(a >= b for a, b in zip(w, v, strict=True))
        for w in vectors))


def _coarse(options):
    """Per class, the options that matter to the first two objectives:
    the keep vectors no other keep vector is above, and the re-cut
    vectors no other re-cut vector and no keep vector is above."""
    keeps = _maxima(s for s, cut, _m in options if not cut)
    recuts = tuple(v for v in _maxima(s for s, cut, _m in options if cut)
                   if not any(all(a >= b for a, b in zip(k, v, strict=True))
                              for k in keeps))
    return keeps, recuts


def _add_supply(index, value, supply, first):
    for k, v in enumerate(supply):
        if v:
            index.append(first + k)
            value.append(-float(v))


def _met_recut(highspy, sizes, options, caps):
    """Stages 1 and 2 (demand met, fewest re-cuts) on the coarse classes
    (module docstring): the two optimal values."""
    inf = highspy.kHighsInf
    coarse = collections.OrderedDict()
    for c, class_options in enumerate(options):
        coarse.setdefault(_coarse(class_options), []).append(c)
    h = _highs(highspy)
    n_class, n_wanted = len(coarse), len(caps)
    counts = [float(sum(sizes[c] for c in members))
              for members in coarse.values()]
    h.addRows(n_class + n_wanted, counts + [-inf] * n_wanted,
              counts + [0.0] * n_wanted, 0, [], [], [])
    columns, starts, index, value, recut = [], [], [], [], []
    for c, (keeps, recuts) in enumerate(coarse):
        for supply, cut in [(k, 0) for k in keeps] + [(r, 1) for r in recuts]:
            columns.append((c, supply, cut))
            starts.append(len(index))
            index.append(c)
            value.append(1.0)
            _add_supply(index, value, supply, n_class)
            recut.append(float(cut))
    n_x = len(columns)
    for k in range(n_wanted):
        starts.append(len(index))
        index.append(n_class + k)
        value.append(1.0)
    n_col = n_x + n_wanted
    h.addCols(n_col, [0.0] * n_col, [0.0] * n_col,
              [inf] * n_x + [float(cap) for cap in caps],
              len(index), starts, index, value)
    h.changeColsIntegrality(n_col, list(range(n_col)),
                            [highspy.HighsVarType.kInteger] * n_col)
    met, _solution, _status = _run(h, highspy,
                                   [0.0] * n_x + [-1.0] * n_wanted)
    wanted = list(range(n_x, n_col))
    h.addRow(-inf, met + 0.5, n_wanted, wanted, [-1.0] * n_wanted)
    cut, _solution, _status = _run(h, highspy, recut + [0.0] * n_wanted)
    return -met, cut


def import_highspy() -> types.ModuleType:
    """The HiGHS solver module (``highspy``), an optional dependency:
    ``pip install "gpuclient[profiles]"``; CommandError saying so when it
    is not installed (it pulls numpy, for ``gpu profile plan`` only)."""
    try:
        import highspy
    except ImportError as exc:
        from gpuclient import extras

        raise extras.missing(
            extras.PROFILES, 'highspy', _(
                'Planning partitions (the HiGHS solver, which brings '
                'numpy)'), exc) from None
    return highspy


def _solve(sizes, options, caps, groups=None):
    """The lexicographic optimum of the integer program of the module
    docstring. SIZES: cards per class; OPTIONS: per class, its options
    (supply, recut, moves); CAPS: demand per wanted profile. Returns the
    count of each (class, option), the three optimal values (met, recut,
    moves), HiGHS's model status of the last model solved, how the fewest
    moves were proven (``PROOF_BOUND`` or ``PROOF_SOLVER``, module
    docstring) and the LP bound on moves (None when not computed). HiGHS
    is imported here only (``import_highspy``)."""
    highspy = import_highspy()
    met, cut = _met_recut(highspy, sizes, options, caps)
    model = _Transport(sizes, options, caps, groups, met, cut)
    found = lower = None
    relaxed = model.highs(highspy, integer=False)
    relaxed.run()
    if relaxed.getModelStatus() == highspy.HighsModelStatus.kOptimal:
        found, lower = _by_bound(highspy, model, relaxed)
    if found is not None:
        proof = PROOF_BOUND
    else:
        found = _transport_run(highspy, model, None)
        if found is None:
            raise RuntimeError(_('The solver did not prove an optimum: %s')
                               % 'Infeasible')
        proof = PROOF_SOLVER
    counts, moved, status = found
    # the plan checked apart from the solver: every card once, the first
    # two optima kept, the moves as found
    if model.check(counts) != (met, cut, moved):
        raise RuntimeError(_('The solver returned a plan of values %(x)s '
                             'for the optima %(y)s.') % {
            'x': model.check(counts), 'y': (met, cut, moved)})
    return counts, (met, cut, moved), status, proof, lower


# how the fewest moves were proven (summary ``proof``)
PROOF_BOUND = 'lp-bound'
PROOF_SOLVER = 'solver'
# objective values are integers: a float within this of one is that one
_TOLERANCE = 1e-6
# LPs the dive (_dive) solves at most before it gives up
_DIVE_NODES = 150


def _by_bound(highspy, model, relaxed):
    """The fewest moves proven by the LP bound (module docstring): from
    RELAXED, MODEL's LP solved, the bound and the arcs of small reduced
    cost; then a plan of exactly the bound rounded up, searched on those
    arcs by _dive, else by HiGHS. Returns ((counts, moves, status) or
    None, the bound)."""
    # any multipliers give a valid bound: HiGHS's duals a good one
    lower, reduced = model.bound(relaxed.getSolution().row_dual)
    target = math.ceil(lower - _TOLERANCE)
    slack = target - lower + _TOLERANCE
    keep = [j for j, (key, _cost, _up, _rows) in enumerate(model.columns)
            if key[0] != 'x' or reduced[j] <= slack]
    found, complete = _dive(highspy, model, keep, target)
    if found is None and not complete:
        found = _transport_run(highspy, model, keep)
    if found is None:
        return None, lower
    values = model.check(found[0])
    if values is None or values[:2] != (model.met, model.cut):
        return None, lower
    if values[2] < target:
        raise RuntimeError(_('The plan found %(x)s moves under the '
                             'bound %(y)s.') % {'x': values[2], 'y': lower})
    return (found if values[2] == target else None), lower


def _dive(highspy, model, keep, target, limit=_DIVE_NODES):
    """A plan of at most TARGET moves on the columns KEEP of MODEL by a
    depth-first branch and bound of our own on the counts, each node an
    LP (HiGHS's dual simplex from the parent's basis), cut off when the
    LP is above TARGET: the first fractional count (keep ends first) is
    branched on, its nearer side first. Returns ((counts, moves,
    status) or None, whether the search was complete): complete and none
    means no plan of these columns has TARGET moves. At most LIMIT
    LPs."""
    h = model.highs(highspy, keep, integer=False)
    costs = [model.columns[j][1] for j in keep]
    counted = [i for i, j in enumerate(keep) if model.columns[j][0][0] != 'x']
    lower = [0.0] * len(keep)
    upper = [model.columns[j][2] for j in keep]
    solved, unsure = [0], [False]

    def node():
        if solved[0] >= limit:
            return None
        solved[0] += 1
        h.run()
        status = h.getModelStatus()
        if status != highspy.HighsModelStatus.kOptimal:
            # an LP neither solved nor infeasible: the search is not
            # complete (HiGHS on the arcs takes over)
            unsure[0] |= status != highspy.HighsModelStatus.kInfeasible
            return None
        if h.getInfo().objective_function_value > target + _TOLERANCE:
            return None
        solution = h.getSolution().col_value
        i = next((i for i in counted
                  if abs(solution[i] - round(solution[i])) > _TOLERANCE),
                 None)
        if i is None:
            return _leaf(h, model, keep, costs, counted)
        v = solution[i]
        below = (lower[i], float(math.floor(v)))
        above = (float(math.ceil(v)), upper[i])
        for low, up in ((below, above) if v - math.floor(v) < 0.5
                        else (above, below)):
            old = lower[i], upper[i]
            lower[i], upper[i] = low, up
            h.changeColBounds(i, low, up)
            found = node()
            lower[i], upper[i] = old
            h.changeColBounds(i, *old)
            if found is not None or solved[0] >= limit:
                return found
        return None

    found = node()
    return found, found is not None or (solved[0] < limit and not unsure[0])


def _leaf(h, model, keep, costs, counted):
    """The plan of an LP solution of H whose counts are integers: its
    arcs rounded; if they are not integers (a solution off a vertex), the
    counts fixed and the LP solved again (the transport part is
    integral). (counts, moves, status)."""
    solution = list(h.getSolution().col_value)
    arcs = [i for i in range(len(keep)) if model.columns[keep[i]][0][0] == 'x']
    if any(abs(solution[i] - round(solution[i])) > _TOLERANCE for i in arcs):
        fixed = [float(round(solution[i])) for i in counted]
        h.changeColsBounds(len(counted), counted, fixed, fixed)
        h.run()
        solution = list(h.getSolution().col_value)
    counts = {model.columns[keep[i]][0][1]: int(round(solution[i]))
              for i in arcs}
    moved = sum(round(costs[i]) * counts[model.columns[keep[i]][0][1]]
                for i in arcs)
    return counts, moved, h.modelStatusToString(h.getModelStatus())


class _Transport:
    """The moves model (stage 3, module docstring) in transport form,
    with the first two optima as rows: rows per class (its cards), per end
    (cards ending there, as a balance), per wanted profile (met <= offered),
    then demand met >= MET and re-cuts <= CUT. Columns: ``('x', (class,
    option))`` continuous arcs, ``('end', e)`` integer counts, ``('met',
    k)`` integer; each with its cost, upper bound and entries [(row,
    value)]. The upper bounds of arcs and counts are implied by the rows
    (an arc carries at most its class's cards, an end at most the cards
    of the classes that reach it): written out, the bound below is
    finite."""

    def __init__(self, sizes, options, caps, groups, met, cut):
        inf = float('inf')
        groups = groups or [None] * len(options)
        ends = collections.OrderedDict()
        for kept in (True, False):
            for group, class_options in zip(groups, options, strict=True):
                for supply, flag, _moves in class_options:
                    if kept != bool(flag):
                        ends.setdefault((group, bool(flag), supply),
                                        len(ends))
        n_class, n_end, n_wanted = len(options), len(ends), len(caps)
        self.sizes, self.options, self.caps = sizes, options, caps
        self.met, self.cut = met, cut
        first_end, first_supply = n_class, n_class + n_end
        row_met, row_cut = first_supply + n_wanted, first_supply + n_wanted + 1
        self.row_lo = ([float(n) for n in sizes] + [0.0] * n_end
                       + [-inf] * n_wanted + [float(met), -inf])
        self.row_up = ([float(n) for n in sizes] + [0.0] * (n_end + n_wanted)
                       + [inf, float(cut)])
        self.columns = columns = []
        reach = [0] * n_end
        for c, class_options in enumerate(options):
            for e in {ends[(groups[c], bool(flag), supply)]
                      for supply, flag, _moves in class_options}:
                reach[e] += sizes[c]
            for o, (supply, flag, moved) in enumerate(class_options):
                e = ends[(groups[c], bool(flag), supply)]
                columns.append((('x', (c, o)), float(moved), float(sizes[c]),
                                ((c, 1.0), (first_end + e, 1.0))))
        for (_group, flag, supply), e in ends.items():
            entries = [(first_end + e, -1.0)] + [
                (first_supply + k, -float(v))
                for k, v in enumerate(supply) if v]
            if flag:
                entries.append((row_cut, 1.0))
            columns.append((('end', e), 0.0, float(reach[e]),
                            tuple(entries)))
        for k, cap in enumerate(caps):
            columns.append((('met', k), 0.0, float(cap),
                            ((first_supply + k, 1.0), (row_met, 1.0))))

    def check(self, counts):
        """(met, recut, moves) of COUNTS, cards per (class, option),
        worked out from the options alone; None unless every card of
        every class is counted once."""
        per_class = [0] * len(self.sizes)
        offered = [0] * len(self.caps)
        recut = moves = 0
        for (c, o), n in counts.items():
            if not isinstance(n, int) or n < 0:
                return None
            supply, flag, moved = self.options[c][o]
            per_class[c] += n
            recut += n * bool(flag)
            moves += n * moved
            for k, v in enumerate(supply):
                offered[k] += n * v
        if per_class != list(self.sizes):
            return None
        return (sum(min(a, b) for a, b in zip(offered, self.caps,
                                              strict=True)), recut, moves)

    def highs(self, highspy, keep=None, integer=True):
        """A HiGHS model of the columns KEEP (indexes; None: all), the
        counts integer with INTEGER."""
        keep = range(len(self.columns)) if keep is None else keep
        h = _highs(highspy)
        h.addRows(len(self.row_lo), self.row_lo, self.row_up, 0, [], [], [])
        starts, index, value, cost, upper, counted = [], [], [], [], [], []
        for j in keep:
            key, moved, up, entries = self.columns[j]
            if key[0] != 'x':
                counted.append(len(cost))
            starts.append(len(index))
            for row, v in entries:
                index.append(row)
                value.append(v)
            cost.append(moved)
            upper.append(up)
        h.addCols(len(cost), cost, [0.0] * len(cost), upper, len(index),
                  starts, index, value)
        if integer:
            h.changeColsIntegrality(
                len(counted), counted,
                [highspy.HighsVarType.kInteger] * len(counted))
        return h

    def bound(self, duals):
        """A lower bound on the fewest moves from any row multipliers
        DUALS (Lagrange): the least of sum_j d_j x_j + sum_i y_i r_i over
        the columns' and rows' bounds, d_j = cost_j - sum_i y_i a_ij the
        reduced costs (returned too). A multiplier of the wrong sign for
        a row with one side open is taken as 0 (the least would be minus
        infinity)."""
        y = []
        for v, lo, up in zip(duals, self.row_lo, self.row_up, strict=True):
            if (v > 0 and lo == float('-inf')) or (
                    v < 0 and up == float('inf')):
                v = 0.0
            y.append(v)
        terms = [v * (lo if v > 0 else up)
                 for v, lo, up in zip(y, self.row_lo, self.row_up,
                                      strict=True) if v]
        reduced = []
        for _key, moved, up, entries in self.columns:
            d = moved - sum(y[row] * v for row, v in entries)
            reduced.append(d)
            if d < 0:
                terms.append(d * up)
        return math.fsum(terms), reduced


def _transport_run(highspy, model, keep):
    """The fewest moves over the columns KEEP of MODEL (None: all), to a
    proven optimum of that model: (counts of (class, option), moves,
    HiGHS's status), or None when those columns have no solution."""
    keep = list(range(len(model.columns)) if keep is None else keep)
    h = model.highs(highspy, keep)
    costs = [model.columns[j][1] for j in keep]
    found = _run(h, highspy, costs, infeasible=True)
    if found is None:
        return None
    moved, solution, status = found
    arcs = [i for i, j in enumerate(keep) if model.columns[j][0][0] == 'x']
    if any(abs(solution[i] - round(solution[i])) > _TOLERANCE
           for i in arcs):
        # not a vertex: the same optimum with the counts integer, the
        # totals fixed (the transport part is integral: no branching)
        is_arc = set(arcs)
        counted = [i for i in range(len(keep)) if i not in is_arc]
        fixed = [float(round(solution[i])) for i in counted]
        h.changeColsBounds(len(counted), counted, fixed, fixed)
        h.changeColsIntegrality(len(arcs), arcs,
                                [highspy.HighsVarType.kInteger] * len(arcs))
        moved, solution, status = _run(h, highspy, costs)
    counts = {model.columns[keep[i]][0][1]: int(round(solution[i]))
              for i in arcs}
    return counts, moved, status


def plan(
        cards: Sequence[Mapping[str, typing.Any]], demand: Mapping[str, int]
) -> tuple[list[dict[str, typing.Any]], dict[str, typing.Any]]:
    """The per-card layouts that serve DEMAND best (see module docstring).

    CARDS: dicts with ``id``, ``model`` and optionally ``current`` (its
    layout now, placements ``(profile, start)``; none: not cut) and
    ``in_use`` (the placements of ``current`` that hold servers). DEMAND:
    {profile or vGPU type: instances wanted}, profile names as
    ``profile_name`` gives them; a name counts on every model that has it.

    Returns ``(rows, summary)``: one row per card (``id``, ``model``,
    ``current``, ``in_use``, ``proposed``, ``recut``, ``moves``,
    ``serves``: {profile: instances of the demand it serves}) in the order
    given, and the summary (``demand``: {profile: (wanted, offered, met)},
    ``met``, ``wanted``, ``recut``, ``moves``, ``stranded_slices``,
    ``classes``: classes of interchangeable cards, ``status``: HiGHS's
    model status of the last model solved, None when nothing was solved;
    ``proof``: how the fewest moves were proven optimal, ``'lp-bound'``
    (they equal the LP bound ``moves_bound`` rounded up) or ``'solver'``
    (HiGHS's branch and bound on the whole moves model), None when
    nothing was solved).
    """
    wanted = sorted(p for p, n in demand.items() if n > 0)
    caps = tuple(demand[p] for p in wanted)
    classes, per_card = _classes(cards, wanted, caps)
    proposed = [current for current, _in_use, _options in per_card]
    status = proof = lower = None
    if wanted and classes:
        keys = list(classes)
        options = []
        for key in keys:
            _model, keep, recuts = key
            options.append([(keep, 0, 0)] + [
                (supply, 1, moves) for supply, moves in recuts])
        counts, _values, status, proof, lower = _solve(
            [len(classes[key]) for key in keys], options, caps,
            [key[0] for key in keys])
        for c, key in enumerate(keys):
            members = iter(classes[key])
            first = next(iter(classes[key]))
            recut_index = list(per_card[first][2])
            for o in range(len(options[c])):
                for _n in range(counts.get((c, o), 0)):
                    card = next(members)
                    if o:
                        # the card's own layout of that supply and moves
                        proposed[card] = per_card[card][2][
                            recut_index[o - 1]][1]
    left = dict((p, demand[p]) for p in wanted)
    rows, moves, recut, stranded = [], 0, 0, 0
    for index, card in enumerate(cards):
        current, in_use, _options = per_card[index]
        layout = proposed[index]
        model = catalogue.model_name(card['model'])
        cut = layout != current
        moved = _moves(current, in_use, layout)
        serves: collections.OrderedDict[str, int] = collections.OrderedDict()
        for name, _start in layout:
            if left.get(name, 0) > 0:
                left[name] -= 1
                serves[name] = serves.get(name, 0) + 1
        if layout:
            stranded += layouts.free_slices(model, layout)
        moves += moved
        recut += cut
        rows.append({'id': card.get('id', str(index)), 'model': model,
                     'current': current, 'in_use': in_use,
                     'proposed': layout, 'recut': cut,
                     'moves': moved, 'serves': dict(serves)})
    offered = collections.Counter(
        name for row in rows for name, _start in row['proposed'])
    table = {p: (demand[p], offered[p], min(demand[p], offered[p]))
             for p in wanted}
    summary = {'demand': table,
               'wanted': sum(demand[p] for p in wanted),
               'met': sum(v[2] for v in table.values()),
               'recut': recut, 'moves': moves,
               'stranded_slices': stranded,
               'classes': len(classes), 'status': status,
               'proof': proof, 'moves_bound': lower}
    return rows, summary


def objective(rows: Collection[Mapping[str, typing.Any]],
              demand: Mapping[str, int]) -> tuple[int, int, int]:
    """(met, recut, moves) of ROWS for DEMAND: what ``plan`` optimises,
    computed from the rows alone (the tests' referee)."""
    offered = collections.Counter(
        name for row in rows for name, _start in row['proposed'])
    met = sum(min(n, offered[p]) for p, n in demand.items() if n > 0)
    return (met, sum(1 for r in rows if r['recut']),
            sum(r['moves'] for r in rows))

