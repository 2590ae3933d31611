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

"""Pure: which flavors depend on which aggregate metadata key.

Nova's AggregateInstanceExtraSpecsFilter (Nova 34,
``nova/scheduler/filters/aggregate_instance_extra_specs.py``) matches a
flavor's extra specs against the metadata of the aggregates a host is in:

* a key without a scope (``group_policy``) and a key of the
  ``aggregate_instance_extra_specs:`` scope (``...:gpu_pool``, the scope
  removed once: ``...:a:b`` wants ``a:b``) are matched; a key of any other
  scope (``trait:``, ``hw:``, ``resources1:``) is ignored;
* the host's metadata is the union over its aggregates, each value split
  on commas and stripped (``utils.aggregate_metadata_get_by_host``);
* a matched key missing from that union fails the host; otherwise one of
  the values must match the spec with ``extra_specs_ops.match``
  (``extra_specs_ops.spec_match``: ``s==``, ``<in>``, ``<or>``, ``>=``, ...,
  else plain equality).

A flavor *depends on* key K of aggregate A when it passes the filter on a
host of A (on A's own metadata when A has no host) now, and fails there
once K changes. ``broken_by`` answers that for a planned metadata change;
``follow`` says how a flavor's specs change to keep matching.
"""

from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
import typing

from gpuclient.rules.scheduler.filters import aggregate_instance_extra_specs
from gpuclient.rules.scheduler.filters import extra_specs_ops


def spec_keys(extra_specs: Mapping[str, typing.Any] | None
              ) -> dict[str, list[tuple[str, str]]]:
    """{aggregate key: [(extra-spec key, requirement)]} that the filter
    matches for a flavor with ``extra_specs``."""
    found: dict[str, list[tuple[str, str]]] = {}
    for key, req in (extra_specs or {}).items():
        scope = key.split(':', 1)
        if len(scope) > 1:
            if scope[0] != (
                    aggregate_instance_extra_specs.AGGREGATE_SCOPE):
                continue
            name = scope[1]
        else:
            name = key
        found.setdefault(name, []).append((key, str(req)))
    return found


def value_set(value: object) -> set[str]:
    """An aggregate metadata value as the filter reads it."""
    return {part.strip() for part in str(value).split(',')}


def union(metadatas: Iterable[Mapping[str, typing.Any] | None]
          ) -> dict[str, set[str]]:
    """{key: set of values} over several aggregates' metadata."""
    merged: dict[str, set[str]] = {}
    for metadata in metadatas:
        for key, value in (metadata or {}).items():
            if value is not None:
                merged.setdefault(key, set()).update(value_set(value))
    return merged


def _matches(values: Iterable[str], req: str) -> bool:
    for value in values:
        try:
            if extra_specs_ops.spec_match(value, req):
                return True
        except ValueError:  # a numeric operator on a word: Nova fails too
            continue
    return False


def failing_keys(extra_specs: Mapping[str, typing.Any] | None,
                 merged: Mapping[str, set[str]]) -> list[str]:
    """Aggregate keys of the flavor that ``merged`` (``union``) fails."""
    return sorted(
        name for name, wanted in spec_keys(extra_specs).items()
        if not merged.get(name)
        or not all(_matches(merged[name], req) for _key, req in wanted))


def passes(extra_specs: Mapping[str, typing.Any] | None,
           merged: Mapping[str, set[str]]) -> bool:
    return not failing_keys(extra_specs, merged)


def changed(metadata: Mapping[str, typing.Any] | None,
            changes: Mapping[str, typing.Any] | None
            ) -> dict[str, typing.Any]:
    """``metadata`` with ``changes`` ({key: value, None deletes}) set."""
    result = dict(metadata or {})
    for key, value in (changes or {}).items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = value
    return result


def broken_by(flavors: Iterable[Mapping[str, typing.Any]] | None,
              aggregates: Sequence[Mapping[str, typing.Any]], name: str,
              changes: Mapping[str, str | None] | None
              ) -> list[tuple[Mapping[str, typing.Any], list[str]]]:
    """[(flavor, [aggregate keys])] of the flavors (dicts with
    ``extra_specs``) that pass the filter on a host of aggregate ``name``
    now and fail there once ``changes`` are set on it.

    ``aggregates``: [{'name', 'hosts', 'metadata'}], every aggregate (a
    host's other aggregates can carry the key as well).
    """
    keys = set(changes or ())
    target = next(a for a in aggregates if a['name'] == name)
    after = changed(target.get('metadata'), changes)
    hosts = list(target.get('hosts') or ()) or [None]
    views = []
    for host in hosts:
        others = [a.get('metadata') for a in aggregates
                  if host is not None and a['name'] != name
                  and host in (a.get('hosts') or ())]
        views.append((union(others + [target.get('metadata')]),
                      union(others + [after])))
    found = []
    for flavor in flavors or ():
        extra_specs = flavor.get('extra_specs') or {}
        if not keys & set(spec_keys(extra_specs)):
            continue
        lost = set()
        for before, later in views:
            if passes(extra_specs, before):
                lost.update(failing_keys(extra_specs, later))
        if lost:
            found.append((flavor, sorted(lost)))
    return found


def requirement_for(value: object) -> str | None:
    """The extra-spec requirement that matches aggregate value ``value``
    (a single value), or None when no plain one does (a comma list, which
    leaves the choice to the operator, or text the filter would parse as
    an operator with spaces in it)."""
    if value is None or len(value_set(value)) != 1:
        return None
    plain = str(value).strip()
    for req in (plain, 's== ' + plain):
        if _matches({plain}, req):
            return req
    return None


def follow(extra_specs: Mapping[str, typing.Any] | None, key: str,
           value: object) -> tuple[dict[str, str], list[str]] | None:
    """(set, unset) that make a flavor's specs steering on aggregate key
    ``key`` match the new ``value`` (None: the key is removed, and so are
    the flavor's specs on it), or None when no plain requirement matches
    ``value`` (``requirement_for``)."""
    wanted = spec_keys(extra_specs).get(key) or []
    if value is None:
        return {}, sorted(spec for spec, _req in wanted)
    req = requirement_for(value)
    if req is None:
        return None
    return {spec: req for spec, _old in wanted}, []
