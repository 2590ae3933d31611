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

"""Pure: ``gpu check``'s findings as a person reads them.

The machine formats (json, yaml, csv, value) print one row per finding,
in ``checks.run``'s order. The table is read by a person at a terminal:

* its rows go by severity: errors, warnings, then what was not judged
  (``SEVERITY_ORDER``), each in ``checks.run``'s order;
* a "not judged" warning (``checks.is_not_judged``) shows the severity
  ``not judged``;
* the "not judged" warnings for want of one source (``SOURCES``: no
  nova.conf, no DCGM exporter series, ...) fold into one row for that
  source: the checks it would let judge, the objects, and how to give it
  (the host checks' rows naming the hosts without current facts fold so
  too).
  A "not judged" warning of another cause (one provider's traits not
  read, a board whose BAR1 size is unknown) stays a row of its own.

``summary`` counts the findings for the one line ``gpu check`` writes on
stderr in every format.
"""

from __future__ import annotations

from collections.abc import Collection
from collections.abc import Iterable
from collections.abc import Sequence
import typing

from gpuclient.i18n import _
from gpuclient.rules import checks

if typing.TYPE_CHECKING:
    from gpuclient.rules.checks import utils as check_utils

# the severity a "not judged" warning shows in the table
NOT_JUDGED = 'not judged'
SEVERITY_ORDER = (checks.ERROR, checks.WARNING, NOT_JUDGED)
# objects named in a folded row, at most
EXAMPLES = checks.EXAMPLES


# A source whose absence leaves checks unable to judge: what the summary
# says is missing, and the fixes of the "not judged" warnings it lacks
# (the first is the folded row's: how to give the source).
class Source(typing.NamedTuple):
    missing: str
    fixes: tuple[str, ...]


SOURCES = (
    Source(_('no nova.conf'), (checks.NOVA_CONF_FIX,)),
    Source(_('no DCGM exporter series'),
           (checks.DCGM_FIX, checks.IDLE_DCGM_FIX)),
    Source(_('Prometheus not read'), (checks.PROMETHEUS_FIX,)),
    Source(_('series of several clouds'), (checks.SELECTOR_FIX,)),
    Source(_('no current host facts'), (checks.HOST_FACTS_FIX,)),
)


def source_of(item: check_utils.Finding) -> Source | None:
    """The Source whose want made the finding ITEM "not judged", or None
    (a finding, or "not judged" for another cause)."""
    if not checks.is_not_judged(item):
        return None
    for source in SOURCES:
        if item.fix in source.fixes:
            return source
    return None


def _severity(item: check_utils.Finding) -> str:
    return NOT_JUDGED if checks.is_not_judged(item) else item.severity


def _some(names: Iterable[str]) -> str:
    names = list(names)
    return ', '.join(names[:EXAMPLES]) + (', ...' if len(names) > EXAMPLES
                                          else '')


def _folded(
        source: Source, items: Iterable[check_utils.Finding]
) -> tuple[str, str, str, str, str]:
    """The one table row of the "not judged" ITEMS of SOURCE."""
    names = list(dict.fromkeys(item.check for item in items))
    objects = list(dict.fromkeys(item.object for item in items))
    return (NOT_JUDGED, ', '.join(names), _some(objects),
            _('not judged (%(missing)s): %(checks)d check(s) could not '
              'judge %(objects)d object(s); -f json lists each, with '
              'why.') % {
                  'missing': source.missing, 'checks': len(names),
                  'objects': len(objects)},
            source.fixes[0])


def table_rows(
        findings: Sequence[check_utils.Finding]
) -> list[tuple[str, str, str, str, str]]:
    """[(severity, check, object, symptom, fix)] of FINDINGS (in
    ``checks.run``'s order) for the table: by severity (SEVERITY_ORDER),
    the "not judged" warnings of one source (SOURCES) folded into one row
    where the first of them was."""
    by_source: dict[Source, list[check_utils.Finding]] = {}
    for item in findings:
        source = source_of(item)
        if source is not None:
            by_source.setdefault(source, []).append(item)
    rows = []
    for item in findings:
        source = source_of(item)
        if source is None:
            rows.append((_severity(item), item.check, item.object,
                         item.symptom, item.fix))
        elif by_source[source][0] is item:
            rows.append(_folded(source, by_source[source]))
    # sorted() is stable: checks.run's order within a severity
    return sorted(rows, key=lambda row: SEVERITY_ORDER.index(row[0]))


# what ``summary`` counts (see there)
class Summary(typing.NamedTuple):
    errors: int
    warnings: int
    not_judged: int
    missing: list[str]
    not_run: int


def summary(findings: Collection[check_utils.Finding],
            not_run: Collection[str] | None = None) -> Summary:
    """Summary of FINDINGS: errors, warnings (but "not judged"), the
    checks that could not judge some object, the sources they lack (in
    SOURCES' order), and the checks that could not run (NOT_RUN,
    ``checks.not_run``'s answer)."""
    judged = [f for f in findings if not checks.is_not_judged(f)]
    unjudged = [f for f in findings if checks.is_not_judged(f)]
    lacking = {source_of(f) for f in unjudged}
    return Summary(
        errors=sum(1 for f in judged if f.severity == checks.ERROR),
        warnings=sum(1 for f in judged if f.severity == checks.WARNING),
        not_judged=len({f.check for f in unjudged}),
        missing=[s.missing for s in SOURCES if s in lacking],
        not_run=len(not_run or ()))


def _count(number: int, one: str, many: str) -> str:
    return (one if number == 1 else many) % number


def summary_text(findings: Collection[check_utils.Finding],
                 not_run: Collection[str] | None = None) -> str:
    """'gpu check: 2 errors, 3 warnings, 5 checks not judged (no
    nova.conf, no DCGM exporter series)': the line on stderr."""
    found = summary(findings, not_run)
    text = _('gpu check: %(errors)s, %(warnings)s, %(unjudged)s') % {
        'errors': _count(found.errors, _('%d error'), _('%d errors')),
        'warnings': _count(found.warnings, _('%d warning'),
                           _('%d warnings')),
        'unjudged': _count(found.not_judged, _('%d check not judged'),
                           _('%d checks not judged'))}
    if found.missing:
        text += ' (%s)' % ', '.join(found.missing)
    if found.not_run:
        text += _('; %s') % _count(found.not_run, _('%d check could not run'),
                                   _('%d checks could not run'))
    return text + '.'
