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

"""``gpuclient.rules.dependents``: which flavors depend on which aggregate key.

Table-driven, and the same table given to Nova's own
AggregateInstanceExtraSpecsFilter where Nova is importable (a differential
test: tools/run-functional runs it with the test cloud's Python, where a
skip fails the build; in the py3 environment it skips).
"""

import types
import unittest

from gpuclient.rules import dependents
from gpuclient.tests.unit import nova_harness

if nova_harness.HAVE_NOVA:
    with nova_harness.quiet():
        from nova import objects
        from nova.scheduler.filters import aggregate_instance_extra_specs

SCOPED = 'aggregate_instance_extra_specs:'
GP = 'group_policy'

# (name, [aggregate metadata of the host's aggregates], extra specs,
#  failing aggregate keys); NOVA_RAISES: cases where Nova's filter raises
# (a numeric operator on a word) and gpuclient counts a failure
FILTER_CASES = [
    ('no specs', [{}], {}, []),
    ('unscoped matches', [{GP: 'isolate'}], {GP: 'isolate'}, []),
    ('unscoped missing', [{}], {GP: 'isolate'}, [GP]),
    ('unscoped other value', [{GP: 'none'}], {GP: 'isolate'}, [GP]),
    ('comma list', [{GP: 'none,isolate'}], {GP: 'isolate'}, []),
    ('values stripped', [{GP: ' none , isolate '}], {GP: 'isolate'}, []),
    ('scoped matches', [{'gpu': 'true'}], {SCOPED + 'gpu': 'true'}, []),
    ('scoped other value', [{'gpu': 'false'}], {SCOPED + 'gpu': 'true'},
     ['gpu']),
    ('scoped missing', [{'other': 'true'}], {SCOPED + 'gpu': 'true'},
     ['gpu']),
    ('scope removed once', [{'a:b': 'c'}], {SCOPED + 'a:b': 'c'}, []),
    ('other scopes ignored', [{}],
     {'trait:CUSTOM_X': 'required', 'hw:cpu_policy': 'dedicated',
      'resources1:VGPU': '1', 'pci_passthrough:alias': 'a:1'}, []),
    ('>= passes', [{'speed': '20'}], {SCOPED + 'speed': '>= 10'}, []),
    ('>= fails', [{'speed': '5'}], {SCOPED + 'speed': '>= 10'}, ['speed']),
    ('<in> substring', [{'model': 'nvidia-a100-80g'}],
     {SCOPED + 'model': '<in> a100'}, []),
    ('<or> passes', [{'m': 'b'}], {SCOPED + 'm': '<or> a <or> b'}, []),
    ('<or> fails', [{'m': 'c'}], {SCOPED + 'm': '<or> a <or> b'}, ['m']),
    ('s== passes', [{'m': 'x'}], {SCOPED + 'm': 's== x'}, []),
    ('s!= fails', [{'m': 'x'}], {SCOPED + 'm': 's!= x'}, ['m']),
    ('union of aggregates', [{'gpu': 'a'}, {'gpu': 'b'}],
     {SCOPED + 'gpu': 'b'}, []),
    ('empty value', [{'foo': ''}], {'foo': ''}, []),
    ('two keys, one fails', [{GP: 'isolate', 'gpu_pool': 'p1'}],
     {GP: 'isolate', SCOPED + 'gpu_pool': 'p2'}, ['gpu_pool']),
    ('scoped and unscoped same key', [{GP: 'isolate'}],
     {GP: 'isolate', SCOPED + GP: 'none'}, [GP]),
    ('numeric operator on a word', [{'speed': 'fast'}],
     {SCOPED + 'speed': '>= 10'}, ['speed']),
]
NOVA_RAISES = ('numeric operator on a word',)


class TestAggregateFilter(unittest.TestCase):

    def test_table(self):
        for name, metadatas, extra_specs, failing in FILTER_CASES:
            merged = dependents.union(metadatas)
            self.assertEqual(
                failing, dependents.failing_keys(extra_specs, merged),
                name)
            self.assertEqual(not failing,
                             dependents.passes(extra_specs, merged),
                             name)

    def test_spec_keys(self):
        self.assertEqual(
            {GP: [(GP, 'isolate')], 'a:b': [(SCOPED + 'a:b', 'c')]},
            dependents.spec_keys({GP: 'isolate', SCOPED + 'a:b': 'c',
                                        'trait:X': 'required',
                                        'hw:numa_nodes': '1'}))


@nova_harness.requires_nova
class TestAggregateFilterNova(unittest.TestCase):
    """The table of TestAggregateFilter, answered by Nova's filter."""

    def test_same_answers_as_nova(self):
        nova_filter = (aggregate_instance_extra_specs.
                       AggregateInstanceExtraSpecsFilter())
        for name, metadatas, extra_specs, failing in FILTER_CASES:
            state = types.SimpleNamespace(aggregates=[
                types.SimpleNamespace(metadata=m) for m in metadatas])
            spec = objects.RequestSpec(flavor=objects.Flavor(
                extra_specs=extra_specs))
            if name in NOVA_RAISES:
                self.assertRaises(ValueError, nova_filter.host_passes,
                                  state, spec)
                continue
            self.assertEqual(not failing,
                             nova_filter.host_passes(state, spec), name)


def _agg(name, metadata, hosts=()):
    return {'name': name, 'metadata': metadata, 'hosts': list(hosts)}


def _flavor(name, extra_specs):
    return {'id': 'id-' + name, 'name': name, 'extra_specs': extra_specs}


MULTI = _flavor('multi', {SCOPED + 'gpu_pool': 'p', GP: 'isolate',
                          'resources1:VGPU': '1', 'resources2:VGPU': '1'})
HAND = _flavor('hand', {SCOPED + 'gpu': 'true'})
OTHER = _flavor('other', {SCOPED + 'gpu_pool': 'q', GP: 'isolate'})
PLAIN = _flavor('plain', {'hw:cpu_policy': 'dedicated'})
FLAVORS = [MULTI, HAND, OTHER, PLAIN]
POOL_META = {'gpu_pool': 'p', GP: 'isolate', 'gpu': 'true'}

# (name, aggregates, changes of aggregate p, [(flavor, keys)] broken)
BROKEN_CASES = [
    ('unset group_policy', [_agg('p', POOL_META, ['h1'])], {GP: None},
     [('multi', [GP])]),
    ('group_policy=none', [_agg('p', POOL_META, ['h1'])], {GP: 'none'},
     [('multi', [GP])]),
    ('group_policy keeps isolate', [_agg('p', POOL_META, ['h1'])],
     {GP: 'none,isolate'}, []),
    ('hand-made steering', [_agg('p', POOL_META, ['h1'])], {'gpu': None},
     [('hand', ['gpu'])]),
    ('both', [_agg('p', POOL_META, ['h1'])], {'gpu': 'false', GP: None},
     [('multi', [GP]), ('hand', ['gpu'])]),
    ('another aggregate of the host keeps it',
     [_agg('p', POOL_META, ['h1']), _agg('az', {GP: 'isolate'}, ['h1'])],
     {GP: None}, []),
    ('another aggregate of another host does not',
     [_agg('p', POOL_META, ['h1']), _agg('az', {GP: 'isolate'}, ['h2'])],
     {GP: None}, [('multi', [GP])]),
    ('a pool without hosts: its own metadata', [_agg('p', POOL_META)],
     {GP: None}, [('multi', [GP])]),
    ('a new key breaks nothing', [_agg('p', POOL_META, ['h1'])],
     {'speed': 'fast'}, []),
    ('a key no flavor uses', [_agg('p', dict(POOL_META, color='red'),
                                   ['h1'])], {'color': None}, []),
]


class TestBrokenBy(unittest.TestCase):

    def test_table(self):
        for name, aggregates, changes, broken in BROKEN_CASES:
            found = dependents.broken_by(FLAVORS, aggregates, 'p',
                                               changes)
            self.assertEqual(broken, [(f['name'], keys)
                                      for f, keys in found], name)

    def test_follow(self):
        specs = {GP: 'isolate', SCOPED + GP: 'isolate', 'x': 'y'}
        for value, expected in (
                (None, ({}, [SCOPED + GP, GP])),
                ('none', ({GP: 'none', SCOPED + GP: 'none'}, [])),
                (' none ', ({GP: 'none', SCOPED + GP: 'none'}, [])),
                ('none,isolate', None),      # which one: the operator's
                ('s== x y', None)):          # parsed as an operator
            self.assertEqual(expected,
                             dependents.follow(specs, GP, value),
                             value)

    def test_requirement_for(self):
        for value, req in (('true', 'true'), ('a b', 'a b'),
                           ('<in>', 's== <in>'), ('a,b', None),
                           (None, None)):
            self.assertEqual(req, dependents.requirement_for(value),
                             value)


