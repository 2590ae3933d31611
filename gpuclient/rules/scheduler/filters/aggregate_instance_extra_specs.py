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

"""Pure: AggregateInstanceExtraSpecsFilter
(``nova/scheduler/filters/aggregate_instance_extra_specs.py``).

A host is out when a flavor extra spec (unscoped, or scoped
``aggregate_instance_extra_specs:``) has no match in the metadata of the
host's aggregates. ``AGGREGATE_SCOPE`` is that scope, for every module
that reads it.
"""

from __future__ import annotations

from collections.abc import Mapping
import typing

from gpuclient.i18n import _
from gpuclient.rules import nova_rules
from gpuclient.rules.scheduler.filters import extra_specs_ops

if typing.TYPE_CHECKING:
    from gpuclient.rules.scheduler import host_manager
    from gpuclient.rules.scheduler import request_spec

NAME = 'AggregateInstanceExtraSpecsFilter'
AGGREGATE_SCOPE = nova_rules.AGGREGATE_SCOPE


def extra_specs_match(value: str | None, req: str) -> bool:
    """Nova's extra_specs_ops.match for AggregateInstanceExtraSpecsFilter.

    That filter treats a numeric operator on a non-number as no match.
    """
    try:
        return extra_specs_ops.spec_match(value, req)
    except ValueError:
        return False


def extra_specs_reasons(
        extra_specs: Mapping[str, str] | None,
        metadata: Mapping[str, set[str]]) -> list[dict[str, typing.Any]]:
    """AggregateInstanceExtraSpecsFilter: why a host fails, or []."""
    reasons: list[dict[str, typing.Any]] = []
    for key, req in sorted((extra_specs or {}).items()):
        scope = key.split(':', 1)
        if len(scope) > 1:
            if scope[0] != AGGREGATE_SCOPE:
                continue
            del scope[0]
        meta_key = scope[0]
        values = metadata.get(meta_key)
        if not values:
            reasons.append({'filter': 'AggregateInstanceExtraSpecsFilter',
                            'key': key, 'value': req, 'have': None})
            continue
        if not any(extra_specs_match(v, str(req)) for v in values):
            reasons.append({'filter': 'AggregateInstanceExtraSpecsFilter',
                            'key': key, 'value': req,
                            'have': ','.join(sorted(values))})
    return reasons


def host_reasons(state: host_manager.HostState,
                 spec: request_spec.RequestSpec
                 ) -> list[dict[str, typing.Any]]:
    return extra_specs_reasons(spec.extra_specs, state.metadata)


def text(host: str, reason: Mapping[str, typing.Any],
         project_id: str | None) -> str:
    key, value = reason['key'], reason['value']
    plain = key.split(':', 1)[-1]
    if plain == 'gpu_pool':
        lead = _('%(host)s: not in pool %(pool)s') % {
            'host': host, 'pool': value}
    elif reason['have'] is None:
        lead = _('%(host)s: no aggregate of the host has %(key)s') % {
            'host': host, 'key': plain}
    else:
        lead = _('%(host)s: its aggregates have %(key)s=%(have)s') % {
            'host': host, 'key': plain, 'have': reason['have']}
    return _('%(lead)s (%(spec)s=%(value)s; '
             'AggregateInstanceExtraSpecsFilter)') % {
                 'lead': lead, 'spec': key, 'value': value}
