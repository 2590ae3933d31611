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

"""Pure: Nova's ``nova/scheduler/filters/extra_specs_ops.py``.

The operators of an extra spec a host filter compares with a host's value
(AggregateInstanceExtraSpecsFilter, ComputeCapabilitiesFilter), and the
aggregate dependents (gpuclient.rules.dependents).
"""

from collections.abc import Callable
import typing

# nova.scheduler.filters.extra_specs_ops (Nova 34): {operator word: its
# test}, asked with a requirement's first word (None when it has none)
_OPERATORS: dict[str | None,
                 Callable[[typing.Any, typing.Any], bool]] = {
    '=': lambda x, y: float(x) >= float(y),
    '<in>': lambda x, y: y in x,
    '<all-in>': lambda x, y: all(v in x for v in y),
    '==': lambda x, y: float(x) == float(y),
    '!=': lambda x, y: float(x) != float(y),
    '>=': lambda x, y: float(x) >= float(y),
    '<=': lambda x, y: float(x) <= float(y),
    's==': lambda x, y: x == y,
    's!=': lambda x, y: x != y,
    's<': lambda x, y: x < y,
    's<=': lambda x, y: x <= y,
    's>': lambda x, y: x > y,
    's>=': lambda x, y: x >= y,
}


def spec_match(value: str | None, req: str) -> bool:
    """Does ``value`` (a string) satisfy the extra spec ``req``?

    Nova's extra_specs_ops.match: an operator word first (``s==``,
    ``<in>``, ``>=``, ``<or>``, ...), else plain string equality. A
    numeric operator on a non-number raises ValueError, as in Nova (the
    filter does not catch it).
    """
    words = req.split()
    op = words.pop(0) if words else None
    method = _OPERATORS.get(op)
    if op != '<or>' and not method:
        return value == req
    if value is None:
        return False
    if op == '<or>':
        while words:
            if words.pop(0) == value:
                return True
            if not words:
                break
            words.pop(0)
        return False
    if not words:
        return False
    # an operator word here: METHOD is set (the test above), which mypy
    # does not follow
    if op == '<all-in>':
        return method(value, words)  # type: ignore[misc]
    return method(value, words[0])  # type: ignore[misc]
