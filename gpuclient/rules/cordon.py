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

"""Pure: cordon and uncordon decisions of ``gpu host cordon/uncordon``.

A cordon is Nova's compute service disabled: Nova's
``COMPUTE_STATUS_DISABLED`` prefilter then keeps the scheduler off the
host, and servers on it stay. gpuclient marks the reason it sets
(``disabled_reason`` starts with ``MARKER``) so that ``uncordon`` enables
only services gpuclient disabled: a service someone else disabled, for
their own reason, is left alone and named.

A drain's cordon is marked apart while the drain runs
(``DRAINING_MARKER``, "gpuclient: draining: <reason>"), and set to the
ordinary "gpuclient: <reason>" once the drained hosts read back empty:
``uncordon`` refuses a service a running (or stopped, unfinished) drain
holds unless forced, and names whose it is (its reason).

Nova keeps at most ``REASON_MAX`` characters of ``disabled_reason`` (a
longer one is a 400): ``reason_problem`` refuses it in the plan, the
marker counted.

Services are the dicts of ``cloud.compute.Compute.compute_services``
(host, id, status, disabled_reason).
"""

from collections.abc import Iterable
from collections.abc import Mapping
import typing

from gpuclient.i18n import _
from gpuclient.rules import plan as plan_mod

MARKER = 'gpuclient: '
DRAINING_MARKER = MARKER + 'draining: '
DEFAULT_REASON = 'maintenance'
# Nova's disabled_reason: a string of 1 to 255 characters
# (nova/api/openstack/compute/schemas/services.py)
REASON_MAX = 255

# what a row's action says
CORDON = 'cordon'
UNCORDON = 'uncordon'
ALREADY_CORDONED = 'already cordoned'
ALREADY_ENABLED = 'already enabled'
NOT_OURS = 'disabled by someone else: left alone'
HELD_BY_DRAIN = 'held by a drain: left alone'

ROW_FIELDS = ('host', 'status', 'reason', 'action')


def reason_text(reason: str | None = None, draining: bool = False) -> str:
    """The disabled_reason gpuclient sets for REASON (--reason); DRAINING:
    the one of a drain's cordon while the drain runs."""
    return (DRAINING_MARKER if draining else MARKER) + (
        (reason or '').strip() or DEFAULT_REASON)


def reason_problem(reason: str | None = None,
                   draining: bool = False) -> str | None:
    """Why Nova would refuse the disabled_reason of REASON (too long,
    the marker counted), in one sentence; None when it would not."""
    text = reason_text(reason, draining)
    if len(text) <= REASON_MAX:
        return None
    room = REASON_MAX - len(text) + len((reason or '').strip())
    return _('--reason is %(n)d characters long; Nova keeps at most '
             '%(max)d in a service\'s disabled reason, and gpuclient adds '
             '"%(marker)s" before it: give at most %(room)d characters.') % {
                 'n': len((reason or '').strip()), 'max': REASON_MAX,
                 'marker': DRAINING_MARKER if draining else MARKER,
                 'room': room}


def is_ours(disabled_reason: str | None) -> bool:
    """Whether a disabled_reason is one gpuclient set."""
    # not None past bool(), which mypy does not follow
    return (bool(disabled_reason)
            and disabled_reason.startswith(  # type: ignore[union-attr]
                MARKER))


def is_draining(disabled_reason: str | None) -> bool:
    """Whether a disabled_reason is the cordon of a drain that has not
    finished (running, or stopped before its hosts read back empty)."""
    # not None past bool(), which mypy does not follow
    return (bool(disabled_reason)
            and disabled_reason.startswith(  # type: ignore[union-attr]
                DRAINING_MARKER))


def is_disabled(service: Mapping[str, typing.Any]) -> bool:
    return service.get('status') == 'disabled'


def _row(service: Mapping[str, typing.Any],
         action: str) -> dict[str, typing.Any]:
    return {'host': service['host'], 'status': service.get('status'),
            'reason': service.get('disabled_reason'), 'action': action}


def cordon(services: Iterable[Mapping[str, typing.Any]],
           reason: str | None = None, undone: bool = True,
           draining: bool = False
           ) -> tuple[list[dict[str, typing.Any]], list[plan_mod.Step]]:
    """(rows, steps) that cordon every service of SERVICES.

    An enabled service is disabled with gpuclient's reason (undone by
    enabling it again, unless UNDONE is False: a drain keeps its cordon
    when a move fails); a disabled one is left as it is, whoever disabled
    it: nothing lands there already. DRAINING (a drain's cordon): the
    reason is the draining one, set on gpuclient's own cordons too (not
    undone), so that ``uncordon`` sees the drain.
    """
    rows: list[dict[str, typing.Any]]
    steps: list[plan_mod.Step]
    rows, steps = [], []
    text = reason_text(reason, draining)
    for service in services:
        had = service.get('disabled_reason')
        if not is_disabled(service):
            rows.append(dict(_row(service, CORDON), reason=text))
            steps.append(plan_mod.disable_service(
                service['host'], service['id'], text, undone=undone))
        elif draining and is_ours(had) and had != text:
            rows.append(dict(_row(service, CORDON), reason=text))
            steps.append(plan_mod.disable_service(
                service['host'], service['id'], text, undone=False))
        elif is_ours(had):
            rows.append(_row(service, ALREADY_CORDONED))
        else:
            rows.append(_row(service, NOT_OURS))
    return rows, steps


def drained(services: Iterable[Mapping[str, typing.Any]],
            reason: str | None = None) -> list[plan_mod.Step]:
    """The steps that end a drain whose hosts read back empty: each of
    SERVICES (the drained hosts') still held by a drain gets the ordinary
    cordon reason (not undone); others are left as they are."""
    text = reason_text(reason)
    return [plan_mod.disable_service(service['host'], service['id'], text,
                                     undone=False)
            for service in services
            if is_disabled(service)
            and is_draining(service.get('disabled_reason'))]


def uncordon(
        services: Iterable[Mapping[str, typing.Any]], force: bool = False
) -> tuple[list[dict[str, typing.Any]], list[plan_mod.Step],
           list[tuple[str, str | None]]]:
    """(rows, steps, others) that uncordon SERVICES.

    A service gpuclient disabled is enabled (undone by disabling it again
    with its old reason); one disabled for another reason is left and
    returned in OTHERS (its host and reason), so the command names it;
    an enabled one needs nothing. A service a drain holds (``is_draining``)
    is enabled only with FORCE; see ``held_by_drain``.
    """
    rows: list[dict[str, typing.Any]]
    steps: list[plan_mod.Step]
    others: list[tuple[str, str | None]]
    rows, steps, others = [], [], []
    for service in services:
        reason = service.get('disabled_reason')
        if not is_disabled(service):
            rows.append(_row(service, ALREADY_ENABLED))
        elif is_draining(reason) and not force:
            rows.append(_row(service, HELD_BY_DRAIN))
        elif is_ours(reason):
            rows.append(_row(service, UNCORDON))
            steps.append(plan_mod.enable_service(
                service['host'], service['id'], reason))
        else:
            rows.append(_row(service, NOT_OURS))
            others.append((service['host'], reason))
    return rows, steps, others


def held_by_drain(services: Iterable[Mapping[str, typing.Any]]
                  ) -> list[tuple[str, str | None]]:
    """(host, reason) of the disabled SERVICES a drain holds."""
    return [(service['host'], service.get('disabled_reason'))
            for service in services if is_disabled(service)
            and is_draining(service.get('disabled_reason'))]


def held_text(held: Iterable[tuple[str, str | None]]) -> str:
    """The refusal of an uncordon of services a drain holds."""
    return _('Nothing was changed: a drain holds %(which)s (it runs, or '
             'stopped before the hosts read back empty). Let it finish (run '
             'the drain again), or add --force to enable them anyway: '
             'servers may then land on a host being drained.') % {
                 'which': ', '.join('%s ("%s")' % (host, reason)
                                    for host, reason in held)}


def others_text(others: Iterable[tuple[str, str | None]]) -> str:
    """The note that names services disabled by someone else."""
    return _('Left alone (not disabled by gpuclient): %s. Enable them with '
             '"openstack compute service set --enable HOST nova-compute" '
             'if they are ready.') % ', '.join(
        '%s (%s)' % (host, reason or _('no reason given'))
        for host, reason in others)


def apply_rows(rows: list[dict[str, typing.Any]],
               dry_run: bool) -> list[dict[str, typing.Any]]:
    """ROWS as they are after the plan ran (or, DRY_RUN, as planned):
    the status a cordoned or uncordoned host has now."""
    if dry_run:
        return rows
    out = []
    for row in rows:
        row = dict(row)
        if row['action'] == CORDON:
            row['status'] = 'disabled'
        elif row['action'] == UNCORDON:
            row.update(status='enabled', reason=None)
        out.append(row)
    return out
