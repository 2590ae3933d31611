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

"""rules/schema.py against jsonschema (a test requirement only): the same
documents give the same errors, at the same paths, in the same words."""

import copy

import jsonschema

from gpuclient.rules import document
from gpuclient.rules import schema
from gpuclient.tests.unit import base

VALID = {
    'version': 1,
    'pools': [{'name': 'solver', 'mode': 'passthrough', 'alias': 'h100',
               'pci_id': '10de:2331', 'hosts': ['gpu-pt-1'],
               'projects': ['p1', {'name': 'p2', 'domain': 'd'}],
               'properties': {'team': 'hpc', 'n': 2, 'on': True}}],
    'flavors': [{'name': 'f', 'pool': 'solver', 'gpus': 2, 'vcpus': 1,
                 'ram': 512, 'disk': 0, 'public': False,
                 'description': 'two'}],
    'images': [{'name': 'img', 'properties': {
        'hw_machine_type': 'q35', 'hw_firmware_type': 'uefi'}}],
    'quotas': [{'default': True, 'pool': 'solver', 'gpus': 'unlimited'},
               {'project': 'p1', 'pool': 'solver', 'gpus': 2}],
}


def _set(path, value):
    def change(doc):
        *parents, last = path
        target = doc
        for key in parents:
            target = target[key]
        target[last] = value
    return change


def _drop(path):
    def change(doc):
        *parents, last = path
        target = doc
        for key in parents:
            target = target[key]
        del target[last]
    return change


# one mutation per keyword and type the document's schema uses, and a few
# at once
CHANGES = [
    _set(('version',), 2),
    _set(('version',), True),
    _set(('extra',), 1),
    _set(('extra_a',), 1),
    _set(('pools',), {}),
    _set(('pools', 0, 'mode'), 'vgu'),
    _set(('pools', 0, 'mode'), 1),
    _set(('pools', 0, 'name'), ''),
    _set(('pools', 0, 'name'), 'x' * 256),
    _set(('pools', 0, 'name'), None),
    _set(('pools', 0, 'pci_id'), '10de'),
    _set(('pools', 0, 'hosts'), ['a', 'a']),
    _set(('pools', 0, 'hosts'), 'a'),
    _set(('pools', 0, 'isolate'), 1),
    _set(('pools', 0, 'projects'), [{'name': 'x'}]),
    _set(('pools', 0, 'projects'), [{'name': 'x', 'domain': 'd', 'y': 1}]),
    _set(('pools', 0, 'projects'), ['', 3]),
    _set(('pools', 0, 'properties'), {'': 'x', 'k': None, 'l': [1]}),
    _set(('pools', 0, 'properties'), []),
    _drop(('pools', 0, 'mode')),
    _drop(('pools', 0, 'name')),
    _set(('flavors', 0, 'gpus'), 0),
    _set(('flavors', 0, 'gpus'), 10 ** 6),
    _set(('flavors', 0, 'gpus'), 1.5),
    _set(('flavors', 0, 'gpus'), True),
    _set(('flavors', 0, 'ram'), -1),
    _set(('flavors', 0, 'disk'), '0'),
    _set(('flavors', 0, 'public'), 'yes'),
    _set(('flavors', 0, 'numa_policy'), 'loose'),
    _set(('flavors', 0, 'description'), 7),
    _drop(('flavors', 0, 'ram')),
    _set(('flavors', 0, 'other'), 1),
    _set(('images', 0, 'properties', 'hw_hide_hypervisor_id'), True),
    _set(('images', 0, 'properties', 'hw_firmware_type'), 'efi'),
    _set(('images', 0, 'properties', 'os_secure_boot'), 'yes'),
    _set(('images', 0), 'img'),
    _set(('quotas', 0, 'gpus'), 'lots'),
    _set(('quotas', 0, 'gpus'), -1),
    _set(('quotas', 0, 'gpus'), None),
    _set(('quotas', 0, 'default'), False),
    _set(('quotas', 0, 'default'), 1),
    _drop(('quotas', 1, 'gpus')),
    lambda doc: doc.clear(),
    lambda doc: doc.update(pools=[None, 1, []], flavors=[{}]),
]


# JSON numbers: 1.0 is the integer 1
STILL_VALID = [
    _set(('version',), 1.0),
    _set(('flavors', 0, 'gpus'), 2.0),
]


def jsonschema_errors(data):
    validator = jsonschema.Draft202012Validator(document.SCHEMA)
    return sorted((tuple(str(p) for p in error.absolute_path),
                   error.message) for error in validator.iter_errors(data))


def our_errors(data):
    return sorted((tuple(str(p) for p in path), message)
                  for path, message in schema.errors(document.SCHEMA, data))


class TestAgainstJsonschema(base.TestCase):
    def test_valid_documents(self):
        self.assertEqual([], our_errors(VALID))
        self.assertEqual([], jsonschema_errors(VALID))
        for at, change in enumerate(STILL_VALID):
            data = copy.deepcopy(VALID)
            change(data)
            with self.subTest(change=at):
                self.assertEqual([], jsonschema_errors(data))
                self.assertEqual([], our_errors(data))

    def test_each_change(self):
        for at, change in enumerate(CHANGES):
            data = copy.deepcopy(VALID)
            change(data)
            expected = jsonschema_errors(data)
            with self.subTest(change=at):
                # each change is an error jsonschema finds
                self.assertNotEqual([], expected)
                self.assertEqual(expected, our_errors(data))

    def test_the_schema_uses_known_keywords_only(self):
        self.assertEqual(set(), schema.unknown_keywords(document.SCHEMA))


class TestSchema(base.TestCase):
    def test_unknown_keywords_in_subschemas(self):
        self.assertEqual({'oneOf', 'format'}, schema.unknown_keywords({
            'type': 'object', 'title': 't',
            'properties': {'a': {'oneOf': []}},
            'additionalProperties': {'items': {'format': 'uri'}}}))

    def test_types(self):
        cases = [(True, 'boolean', True), (True, 'integer', False),
                 (1, 'integer', True), (1.0, 'integer', True),
                 (1.5, 'integer', False), (1.5, 'number', True),
                 (False, 'number', False), ('1', 'string', True),
                 ([], 'array', True), ({}, 'object', True),
                 (None, 'null', True), (None, 'object', False)]
        for value, name, expected in cases:
            with self.subTest(value=value, name=name):
                self.assertEqual(expected, schema.is_type(value, name))

    def test_equal_keeps_booleans_apart(self):
        self.assertTrue(schema.equal([1, {'a': 'b'}], [1, {'a': 'b'}]))
        self.assertFalse(schema.equal(True, 1))
        self.assertFalse(schema.equal([0], [False]))
        self.assertFalse(schema.equal({'a': 1}, {'a': True}))
        self.assertTrue(schema.equal(1, 1.0))

    def test_messages_and_paths(self):
        found = list(schema.errors(
            {'type': 'object', 'required': ['a'],
             'additionalProperties': False,
             'properties': {'b': {'type': 'array', 'uniqueItems': True,
                                  'items': {'enum': ['x']}}}},
            {'b': ['x', 'x', 'y'], 'c': 1, 'd': 2}))
        self.assertEqual(sorted([
            ((), "'a' is a required property"),
            ((), "Additional properties are not allowed ('c', 'd' were "
                 "unexpected)"),
            (('b',), "['x', 'x', 'y'] has non-unique elements"),
            (('b', 2), "'y' is not one of ['x']"),
        ]), sorted(found))
