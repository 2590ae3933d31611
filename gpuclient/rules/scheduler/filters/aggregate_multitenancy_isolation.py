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

"""Pure: AggregateMultiTenancyIsolation
(``nova/scheduler/filters/aggregate_multitenancy_isolation.py``).

A host in an aggregate with ``filter_tenant_id*`` metadata takes only
those projects' servers.
"""

from __future__ import annotations

from collections.abc import Mapping
import typing

from gpuclient.i18n import _

if typing.TYPE_CHECKING:
    from gpuclient.rules.scheduler import host_manager
    from gpuclient.rules.scheduler import request_spec

NAME = 'AggregateMultiTenancyIsolation'


def host_reasons(state: host_manager.HostState,
                 spec: request_spec.RequestSpec
                 ) -> list[dict[str, typing.Any]]:
    if not state.metadata:
        return []
    tenants = set()
    for key, values in state.metadata.items():
        if key.startswith('filter_tenant_id'):
            tenants |= values
    if tenants and spec.project_id not in tenants:
        return [{
            'filter': NAME,
            'projects': sorted(tenants),
            'pools': list(state.limited_pools)}]
    return []


def text(host: str, reason: Mapping[str, typing.Any],
         project_id: str | None) -> str:
    where = (_('pool %s') % ', '.join(reason['pools'])
             if reason['pools'] else _('its aggregates'))
    return _('%(host)s: %(where)s is limited to project(s) %(projects)s, '
             'not %(project)s (AggregateMultiTenancyIsolation).') % {
                 'host': host, 'where': where,
                 'projects': ', '.join(reason['projects']),
                 'project': project_id}
