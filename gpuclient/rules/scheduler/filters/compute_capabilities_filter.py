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

"""Pure: ComputeCapabilitiesFilter
(``nova/scheduler/filters/compute_capabilities_filter.py``).

Judged on the HostState gpuclient.rules.scheduler.host_manager builds from
the compute API, the way Nova 34 judges it: what the API does not show
(the node's ``stats`` beyond what the driver adds, NUMA topology, ...) is
``unknown``, never a pass or a failure.
"""

from __future__ import annotations

from collections.abc import Mapping
import json
import re
import typing

from gpuclient.i18n import _
from gpuclient.rules.scheduler import host_manager
from gpuclient.rules.scheduler.filters import extra_specs_ops

if typing.TYPE_CHECKING:
    from gpuclient.rules.scheduler import request_spec

NAME = 'ComputeCapabilitiesFilter'

# keys nova-compute's resource tracker puts in a node's stats
_TRACKER_STATS = re.compile(
    r'^(num_instances|io_workload|failed_builds|'
    r'num_(vm|task|os_type|proj)_.*)$')
# drivers whose get_available_resource adds no stats of its own
_NO_DRIVER_STATS = ('qemu', 'fake')


def capability_specs(extra_specs: Mapping[str, str] | None
                     ) -> list[tuple[str, list[str], str]]:
    """[(key, scope list, requirement)] the filter looks at, in order.

    ``capabilities:a:b`` -> ['a', 'b']; unscoped keys -> [key]; other
    scopes are ignored. hw:maxphysaddr_bits becomes
    capabilities:cpu_info:maxphysaddr:bits >= N, as in Nova.
    """
    specs = dict(extra_specs or {})
    bits = specs.pop('hw:maxphysaddr_bits', None)
    if bits is not None:
        specs['capabilities:cpu_info:maxphysaddr:bits'] = '>= %s' % bits
    found = []
    for key, req in specs.items():
        scope = key.split(':')
        if len(scope) > 1:
            if scope[0] != 'capabilities':
                continue
            scope = scope[1:]
        found.append((key, scope, str(req)))
    return found


def _walk(value: object, scope: list[str]) -> object:
    """HostState-style traversal below the first level (None: missing)."""
    for name in scope:
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                return None
        if isinstance(value, dict):
            value = value.get(name)
        else:
            return None
        if value is None:
            return None
    return value


def judge_capabilities(hypervisor: Mapping[str, typing.Any],
                       extra_specs: Mapping[str, str] | None
                       ) -> tuple[str, dict[str, typing.Any]]:
    """ComputeCapabilitiesFilter on one node.

    (PASS|FAIL|UNKNOWN, {'failed': [...], 'unknown': [...]}); a failed
    item: {'key', 'value' (requirement), 'have' (None: missing)}; an
    unknown item: {'key', 'why'}.
    """
    state = host_manager.host_state(hypervisor)
    kind = str(hypervisor.get('hypervisor_type') or '').lower()
    failed: list[dict[str, typing.Any]]
    unknown: list[dict[str, typing.Any]]
    failed, unknown = [], []
    for key, scope, req in capability_specs(extra_specs):
        first = scope[0]
        if (first not in host_manager.HOST_STATE_FIELDS
                and first not in host_manager.UNSEEN_ATTRIBUTES):
            # not a HostState attribute: only the node's stats can have it
            # (an unscoped key that nothing has is ignored by Nova)
            if _TRACKER_STATS.match(first) or kind not in _NO_DRIVER_STATS:
                unknown.append({'key': key, 'why': _(
                    'the compute node\'s stats, not in the API')})
            elif ':' in key:
                failed.append({'key': key, 'value': req, 'have': None})
            continue
        if first in host_manager.UNSEEN_ATTRIBUTES:
            unknown.append({'key': key, 'why': _(
                'HostState.%s, not in the API') % first})
            continue
        if first == 'cpu_info' and len(scope) == 1:
            unknown.append({'key': key, 'why': _(
                'Nova compares the raw cpu_info JSON text')})
            continue
        if first not in state:
            unknown.append({'key': key, 'why': _(
                'the API answer has no %s')
                % host_manager.HOST_STATE_FIELDS[first]})
            continue
        have = state[first]
        if have is None:
            # Nova falls back to stats when the attribute is None
            if kind in _NO_DRIVER_STATS:
                failed.append({'key': key, 'value': req, 'have': None})
            else:
                unknown.append({'key': key, 'why': _(
                    'no %s in the API, maybe in the node\'s stats') % first})
            continue
        have = _walk(have, scope[1:])
        if have is None:
            failed.append({'key': key, 'value': req, 'have': None})
            continue
        try:
            ok = extra_specs_ops.spec_match(str(have), req)
        except ValueError:
            unknown.append({'key': key, 'why': _(
                'Nova raises an error comparing %(have)s with "%(req)s"')
                % {'have': have, 'req': req}})
            continue
        if not ok:
            failed.append({'key': key, 'value': req, 'have': str(have)})
    if failed:
        return host_manager.FAIL, {'failed': failed, 'unknown': unknown}
    if unknown:
        return host_manager.UNKNOWN, {'failed': [], 'unknown': unknown}
    return host_manager.PASS, {'failed': [], 'unknown': []}


def asks_capabilities(extra_specs: Mapping[str, str] | None) -> bool:
    return bool(capability_specs(extra_specs))


def capabilities_text(host: str, detail: Mapping[str, typing.Any]) -> str:
    parts = []
    for item in detail['failed']:
        if item['have'] is None:
            parts.append(_('%(key)s=%(value)s, the host has no such '
                           'capability') % item)
        else:
            parts.append(_('%(key)s=%(value)s, the host has %(have)s')
                         % item)
    return _('%(host)s: %(parts)s (ComputeCapabilitiesFilter)') % {
        'host': host, 'parts': '; '.join(parts)}


def host_reasons(state: host_manager.HostState,
                 spec: request_spec.RequestSpec
                 ) -> list[dict[str, typing.Any]]:
    """[reason] when no node of the host passes (a host without a
    hypervisor record is not judged)."""
    nodes = state.nodes
    if not nodes:
        return []
    status, detail = host_manager.judge_host(
        nodes, lambda node: judge_capabilities(node, spec.extra_specs))
    if status == host_manager.FAIL:
        return [{'filter': NAME, 'detail': detail}]
    return []


def text(host: str, reason: Mapping[str, typing.Any],
         project_id: str | None) -> str:
    return capabilities_text(host, reason['detail'])
