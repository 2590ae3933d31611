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

"""Pure: BlazarFilter, Blazar's filter in Nova's scheduler
(blazar-nova 10.0.0, ``blazarnova/scheduler/filters/blazar_filter.py``).

A host Blazar holds (``gpuclient.rules.reservations.held_hosts``: the
freepool, a lease aggregate, an instance reservation) takes no request
without a reservation: an ordinary flavor's servers never land there.
The held hosts come in the filters' context (``held``); without Blazar
in the catalog there are none.
"""

from __future__ import annotations

from collections.abc import Mapping
import typing

from gpuclient.i18n import _
from gpuclient.rules import reservations

if typing.TYPE_CHECKING:
    from gpuclient.rules.scheduler import host_manager
    from gpuclient.rules.scheduler import request_spec

NAME = reservations.FILTER_NAME


def host_reasons(state: host_manager.HostState,
                 spec: request_spec.RequestSpec
                 ) -> list[dict[str, typing.Any]]:
    why = state.held
    if not why or reservations.passes(spec.extra_specs):
        return []
    return [{'filter': NAME, 'held': why}]


def text(host: str, reason: Mapping[str, typing.Any],
         project_id: str | None) -> str:
    return _('%(host)s is held by Blazar (%(why)s): BlazarFilter passes '
             'only reserved requests there.') % {
                 'host': host, 'why': '; '.join(reason['held'])}
