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

"""JSON Schema (Draft 2020-12) validation of the keywords that
gpuclient's document schema uses, in jsonschema's words.

Why not jsonschema: it brings attrs, referencing and rpds-py, and where
attrs is installed every ``openstack`` command imports it (rich, which
cmd2 loads for OSC's shell, imports attrs when it can), so gpuclient
would slow every OSC command down for the one that reads a document.
This module knows :data:`KEYWORDS` only; :func:`unknown_keywords` names
any other keyword a schema uses (a unit test keeps the document's schema
within them), and the unit tests compare :func:`errors` with jsonschema's
messages on the same documents.
"""

from collections.abc import Iterator
from collections.abc import Sequence
import re
import typing

# what each keyword checks, in the order the messages are made
KEYWORDS = frozenset({
    'type', 'const', 'enum', 'minimum', 'maximum', 'minLength',
    'maxLength', 'pattern', 'uniqueItems', 'items', 'required',
    'properties', 'additionalProperties', 'propertyNames',
})
# keywords that check nothing
ANNOTATIONS = frozenset({'$schema', 'title', 'description'})


def is_type(value: object, name: str) -> bool:
    """VALUE is of JSON type NAME (a bool is no number; 1.0 is an
    integer, as JSON Schema says)."""
    if name == 'object':
        return isinstance(value, dict)
    if name == 'array':
        return isinstance(value, list)
    if name == 'string':
        return isinstance(value, str)
    if name == 'boolean':
        return isinstance(value, bool)
    if name == 'null':
        return value is None
    if isinstance(value, bool):
        return False
    if name == 'integer':
        return isinstance(value, int) or (isinstance(value, float)
                                          and value.is_integer())
    return name == 'number' and isinstance(value, (int, float))


def equal(one: object, two: object) -> bool:
    """JSON equality: True is not 1, False is not 0, also inside lists
    and objects."""
    if isinstance(one, list) and isinstance(two, list):
        return len(one) == len(two) and all(map(equal, one, two))
    if isinstance(one, dict) and isinstance(two, dict):
        return (one.keys() == two.keys()
                and all(equal(one[key], two[key]) for key in one))
    if isinstance(one, bool) or isinstance(two, bool):
        return isinstance(one, bool) and isinstance(two, bool) and one == two
    return one == two


def _unique(items: Sequence[object]) -> bool:
    return not any(equal(item, other)
                   for at, item in enumerate(items)
                   for other in items[at + 1:])


def _scalar_errors(schema: dict[str, typing.Any],
                   value: typing.Any) -> Iterator[str]:
    """Messages of the keywords that look at VALUE itself."""
    if 'type' in schema:
        names = schema['type']
        names = [names] if isinstance(names, str) else names
        if not any(is_type(value, name) for name in names):
            yield '%r is not of type %s' % (
                value, ', '.join(repr(name) for name in names))
    if 'const' in schema and not equal(value, schema['const']):
        yield '%r was expected' % (schema['const'],)
    if 'enum' in schema and not any(equal(value, each)
                                    for each in schema['enum']):
        yield '%r is not one of %r' % (value, schema['enum'])
    if is_type(value, 'number'):
        if 'minimum' in schema and value < schema['minimum']:
            yield '%r is less than the minimum of %r' % (
                value, schema['minimum'])
        if 'maximum' in schema and value > schema['maximum']:
            yield '%r is greater than the maximum of %r' % (
                value, schema['maximum'])
    if isinstance(value, str):
        least = schema.get('minLength')
        if least is not None and len(value) < least:
            yield '%r %s' % (value, 'should be non-empty' if least == 1
                             else 'is too short')
        most = schema.get('maxLength')
        if most is not None and len(value) > most:
            yield '%r %s' % (value, 'is expected to be empty' if most == 0
                             else 'is too long')
        if 'pattern' in schema and not re.search(schema['pattern'], value):
            yield '%r does not match %r' % (value, schema['pattern'])
    if (isinstance(value, list) and schema.get('uniqueItems')
            and not _unique(value)):
        yield '%r has non-unique elements' % (value,)


def errors(schema: dict[str, typing.Any], value: typing.Any,
           path: tuple[str | int, ...] = ()
           ) -> Iterator[tuple[tuple[str | int, ...], str]]:
    """(path, message) for each way VALUE breaks SCHEMA, the path a tuple
    of keys and indexes from the document's root, the message
    jsonschema's for the same error."""
    for message in _scalar_errors(schema, value):
        yield path, message
    if isinstance(value, list) and 'items' in schema:
        for index, item in enumerate(value):
            yield from errors(schema['items'], item, path + (index,))
    if not isinstance(value, dict):
        return
    for name in schema.get('required', ()):
        if name not in value:
            yield path, '%r is a required property' % (name,)
    known = schema.get('properties', {})
    for name, subschema in known.items():
        if name in value:
            yield from errors(subschema, value[name], path + (name,))
    extras = sorted((key for key in value if key not in known), key=str)
    additional = schema.get('additionalProperties', True)
    if additional is False and extras:
        yield path, ('Additional properties are not allowed (%s %s '
                     'unexpected)' % (', '.join(repr(e) for e in extras),
                                      'was' if len(extras) == 1
                                      else 'were'))
    elif isinstance(additional, dict):
        for key in extras:
            yield from errors(additional, value[key], path + (key,))
    if 'propertyNames' in schema:
        for key in value:
            for message in _scalar_errors(schema['propertyNames'], key):
                yield path, message


def unknown_keywords(schema: dict[str, typing.Any]) -> set[str]:
    """The keywords of SCHEMA (and its subschemas) that :func:`errors`
    does not know."""
    found = set(schema) - KEYWORDS - ANNOTATIONS
    subschemas = list(schema.get('properties', {}).values())
    for key in ('items', 'additionalProperties', 'propertyNames'):
        if isinstance(schema.get(key), dict):
            subschemas.append(schema[key])
    for subschema in subschemas:
        found |= unknown_keywords(subschema)
    return found
