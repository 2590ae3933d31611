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

Services are the dicts of ``cloud.compute.Compute.compute_services``
(host, id, status, disabled_reason).
"""

from gpuclient.i18n import _
from gpuclient.rules import plan as plan_mod

MARKER = 'gpuclient: '
DEFAULT_REASON = 'maintenance'

# what a row's action says
CORDON = 'cordon'
UNCORDON = 'uncordon'
ALREADY_CORDONED = 'already cordoned'
ALREADY_ENABLED = 'already enabled'
NOT_OURS = 'disabled by someone else: left alone'

ROW_FIELDS = ('host', 'status', 'reason', 'action')


def reason_text(reason=None):
    """The disabled_reason gpuclient sets for REASON (--reason)."""
    return MARKER + ((reason or '').strip() or DEFAULT_REASON)


def is_ours(disabled_reason):
    """Whether a disabled_reason is one gpuclient set."""
    return bool(disabled_reason) and disabled_reason.startswith(MARKER)


def is_disabled(service):
    return service.get('status') == 'disabled'


def _row(service, action):
    return {'host': service['host'], 'status': service.get('status'),
            'reason': service.get('disabled_reason'), 'action': action}


def cordon(services, reason=None, undone=True):
    """(rows, steps) that cordon every service of SERVICES.

    An enabled service is disabled with gpuclient's reason (undone by
    enabling it again, unless UNDONE is False: a drain keeps its cordon
    when a move fails); a disabled one is left as it is, whoever disabled
    it: nothing lands there already.
    """
    rows, steps = [], []
    text = reason_text(reason)
    for service in services:
        if not is_disabled(service):
            rows.append(dict(_row(service, CORDON), reason=text))
            steps.append(plan_mod.disable_service(
                service['host'], service['id'], text, undone=undone))
        elif is_ours(service.get('disabled_reason')):
            rows.append(_row(service, ALREADY_CORDONED))
        else:
            rows.append(_row(service, NOT_OURS))
    return rows, steps


def uncordon(services):
    """(rows, steps, others) that uncordon SERVICES.

    A service gpuclient disabled is enabled (undone by disabling it again
    with its old reason); one disabled for another reason is left and
    returned in OTHERS (its host and reason), so the command names it;
    an enabled one needs nothing.
    """
    rows, steps, others = [], [], []
    for service in services:
        reason = service.get('disabled_reason')
        if not is_disabled(service):
            rows.append(_row(service, ALREADY_ENABLED))
        elif is_ours(reason):
            rows.append(_row(service, UNCORDON))
            steps.append(plan_mod.enable_service(
                service['host'], service['id'], reason))
        else:
            rows.append(_row(service, NOT_OURS))
            others.append((service['host'], reason))
    return rows, steps, others


def others_text(others):
    """The note that names services disabled by someone else."""
    return _('Left alone (not disabled by gpuclient): %s. Enable them with '
             '"openstack compute service set --enable HOST nova-compute" '
             'if they are ready.') % ', '.join(
        '%s (%s)' % (host, reason or _('no reason given'))
        for host, reason in others)


def apply_rows(rows, dry_run):
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
