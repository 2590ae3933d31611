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

"""Pure: the cloud's Prometheus label selector, and PromQL that carries it.

One Prometheus (or a Thanos or Mimir over several) often holds the series
of several clouds or regions. ``prometheus_selector`` (clouds.yaml) or
``--prometheus-selector`` names the label matchers of this cloud's series
(``region="RegionOne"``, ``cloud=~"prod-.*"``); ``with_matchers`` adds them
to every vector selector of a query, so that every PromQL gpuclient sends
asks for this cloud's series only.

A matcher is PromQL's: ``<label><op><value>`` with ``op`` one of ``=``,
``!=``, ``=~`` and ``!~``, the value a PromQL string (``"..."``, ``'...'``
or a raw ```...```) or bare text without a comma, quote or brace. The
label name is checked (``[a-zA-Z_][a-zA-Z0-9_]*``, not ``__name__``);
a regular expression is Prometheus' to judge (RE2), which refuses a bad
one with its own message.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Sequence
import re

from osc_lib import exceptions

from gpuclient.i18n import _

# a label matcher: (label, op, value as a PromQL string literal)
Matcher = tuple[str, str, str]

OPERATORS = ('=~', '!~', '!=', '=')
LABEL_RE = re.compile(r'^[a-zA-Z_][a-zA-Z0-9_]*$')
_STRING = r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'|`[^`]*`'
_MATCHER_RE = re.compile(
    r'\s*([^\s=!~,{}"\'`]*)\s*(=~|!~|!=|=)\s*'
    r'(%s|["\'`].*|[^\s,{}"\'`=!~]*)\s*' % _STRING, re.S)
_STRING_RE = re.compile(r'^(?:%s)$' % _STRING, re.S)

# the words of PromQL that are not metric names
KEYWORDS = frozenset((
    'by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'bool',
    'offset', 'and', 'or', 'unless', 'atan2', 'sum', 'min', 'max', 'avg',
    'group', 'stddev', 'stdvar', 'count', 'count_values', 'bottomk', 'topk',
    'quantile', 'limitk', 'limit_ratio', 'inf', 'nan'))
# keywords followed by a list of label names, in parentheses
_LABEL_LISTS = frozenset(('by', 'without', 'on', 'ignoring', 'group_left',
                          'group_right'))

_TOKEN_RE = re.compile(r'''
    (?P<space>\s+|\#[^\n]*)
  | (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`)
  | (?P<number>(?:0[xX][0-9a-fA-F]+|\d+(?:\.\d*)?(?:[eE][+-]?\d+)?
                 |\.\d+(?:[eE][+-]?\d+)?)[a-zA-Z0-9_]*)
  | (?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)
  | (?P<brace>\{)
  | (?P<bracket>\[)
  | (?P<other>.)
''', re.X | re.S)


def _refuse(source: str, text: object, why: str) -> exceptions.CommandError:
    return exceptions.CommandError(
        _('%(source)s %(text)r: %(why)s. Give PromQL label matchers '
          '<label><op><value> (op =, !=, =~ or !~), e.g. '
          'region=RegionOne, region="RegionOne" or cloud=~"prod-.*" '
          '(several: repeat the option, or separate them with commas).')
        % {'source': source, 'text': text, 'why': why})


def _literal(source: str, text: object, value: str) -> str:
    """VALUE (as the user wrote it) as a PromQL string literal."""
    if value[:1] in ('"', "'", '`'):
        if not _STRING_RE.match(value):
            raise _refuse(source, text, _('the value %s is not a closed '
                                          'PromQL string') % value)
        return value
    if value == '':
        raise _refuse(source, text, _('no value (for "no such label", '
                                      'write <label>="")'))
    return '"%s"' % value.replace('\\', '\\\\').replace('"', '\\"')


def parse_text(text: str,
               source: str = '--prometheus-selector') -> tuple[Matcher, ...]:
    """The matchers of TEXT (``a="x",b=~"y"``, braces allowed) as
    ((label, op, literal), ...); CommandError naming SOURCE when bad."""
    body = str(text).strip()
    if body.startswith('{') and body.endswith('}'):
        body = body[1:-1]
    found = []
    at = 0
    while True:
        match = _MATCHER_RE.match(body, at)
        if not match:
            raise _refuse(source, text, _('no <label><op><value> at %r')
                          % body[at:at + 20] if body[at:].strip()
                          else _('no matcher'))
        label, op, value = match.groups()
        if not LABEL_RE.match(label):
            raise _refuse(source, text, _('%r is not a label name (letters, '
                                          'digits and _, not first a '
                                          'digit)') % label)
        if label == '__name__':
            raise _refuse(source, text, _('a matcher on the metric name '
                                          'would change every query'))
        found.append((label, op, _literal(source, text, value.strip())))
        at = match.end()
        if at == len(body):
            return tuple(found)
        if body[at] != ',':
            raise _refuse(source, text, _('%r after a matcher: separate '
                                          'matchers with commas, and quote a '
                                          'value that holds one')
                          % body[at:at + 20])
        at += 1


def parse(given: str | list[str] | tuple[str, ...] | dict[str, object] | None,
          source: str = 'prometheus_selector') -> tuple[Matcher, ...]:
    """The matchers of a selector as clouds.yaml or the option gives it:
    a text of matchers, a list of such texts, or a mapping {label: value}
    (equality), as ((label, op, literal), ...); () for none."""
    if given in (None, '', [], {}, ()):
        return ()
    if isinstance(given, dict):
        found: list[Matcher] = []
        for label, value in sorted(given.items()):
            if isinstance(value, (dict, list, tuple, bool)) or value is None:
                raise _refuse(source, given, _('the value of %s is not a '
                                               'text') % label)
            found.extend(parse_text('%s=%s' % (label, _quoted(value)),
                                    source))
        return tuple(found)
    if isinstance(given, (list, tuple)):
        return tuple(m for item in given for m in parse_text(item, source))
    return parse_text(given, source)


def _quoted(value: object) -> str:
    return '"%s"' % str(value).replace('\\', '\\\\').replace('"', '\\"')


def text(matchers: Iterable[Matcher]) -> str:
    """MATCHERS as PromQL writes them inside braces: a="x",b=~"y"."""
    return ','.join('%s%s%s' % m for m in matchers)


def _block_end(query: str, at: int, close: str) -> int:
    """The index after the CLOSE that ends the block opened before AT,
    strings inside it skipped."""
    string = re.compile(_STRING, re.S)
    while at < len(query):
        char = query[at]
        if char == close:
            return at + 1
        match = string.match(query, at) if char in '"\'`' else None
        at = match.end() if match else at + 1
    return at


def _selectors(query):
    """The vector selectors of QUERY: [(name, braces)], each a (start,
    end) span of QUERY or None (a metric name without braces, or braces
    alone)."""
    found = []
    at = 0
    while at < len(query):
        match = _TOKEN_RE.match(query, at)
        kind, token, end = match.lastgroup, match.group(), match.end()
        if kind == 'brace':
            close = _block_end(query, end, '}')
            name = found[-1][0] if found else None
            if name and found[-1][1] is None and not query[
                    name[1]:at].strip():
                found[-1] = (name, (at, close))
            else:
                found.append((None, (at, close)))
            at = close
        elif kind == 'bracket':
            at = _block_end(query, end, ']')
        elif kind == 'name':
            word = token.lower()
            rest = query[end:].lstrip()
            if word in _LABEL_LISTS and rest.startswith('('):
                # by (a, b): label names, not metrics
                at = _block_end(query, query.index('(', end) + 1, ')')
                continue
            if not rest.startswith('(') and word not in KEYWORDS:
                found.append(((match.start(), end), None))
            at = end
        else:
            at = end
    return found


def metric_names(query: str) -> list[str]:
    """The metric names QUERY selects, in order, each once."""
    names = []
    for name, _braces in _selectors(query):
        if name and query[name[0]:name[1]] not in names:
            names.append(query[name[0]:name[1]])
    return names


def with_matchers(query: str, matchers: Sequence[Matcher]) -> str:
    """QUERY with MATCHERS added to each of its vector selectors
    (``m`` -> ``m{a="x"}``, ``m{b="y"}`` -> ``m{b="y",a="x"}``, ``{...}``
    likewise); QUERY unchanged without matchers."""
    if not matchers:
        return query
    added = text(matchers)
    pieces = []
    at = 0
    for name, braces in _selectors(query):
        if braces is None:
            pieces.append(query[at:name[1]] + '{%s}' % added)
            at = name[1]
            continue
        start, end = braces
        inner = query[start + 1:end - 1].strip().rstrip(',').strip()
        pieces.append(query[at:start] + '{%s}' % (
            '%s,%s' % (inner, added) if inner else added))
        at = end
    return ''.join(pieces) + query[at:]
