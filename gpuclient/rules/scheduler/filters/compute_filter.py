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

"""Pure: ComputeFilter (``nova/scheduler/filters/compute_filter.py``).

A host whose nova-compute service is disabled or down is out. The service
list of the compute API shows both; a host without a service record is not
judged.
"""

from __future__ import annotations

from collections.abc import Mapping
import typing

from gpuclient.i18n import _

if typing.TYPE_CHECKING:
    from gpuclient.rules.scheduler import host_manager
    from gpuclient.rules.scheduler import request_spec

NAME = 'ComputeFilter'


def host_reasons(state: host_manager.HostState,
                 spec: request_spec.RequestSpec
                 ) -> list[dict[str, typing.Any]]:
    service = state.service
    if service is None:
        return []
    if service.get('status') == 'disabled':
        return [{'filter': NAME, 'why': 'disabled'}]
    if service.get('state') == 'down':
        return [{'filter': NAME, 'why': 'down'}]
    return []


def text(host: str, reason: Mapping[str, typing.Any],
         project_id: str | None) -> str:
    if reason['why'] == 'disabled':
        return _('%s: its nova-compute service is disabled '
                 '(ComputeFilter; enable it with "openstack compute '
                 'service set --enable").') % host
    return _('%s: its nova-compute service is down (ComputeFilter).') % (
        host)
