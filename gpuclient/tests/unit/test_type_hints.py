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

"""Every public function of rules/ and ops/ says what it takes and gives
(issue 53): each parameter but ``self``/``cls`` and the return carry a
type hint. What the hints say is checked by mypy in the pep8
environment (``[tool.mypy]`` in pyproject.toml); this test keeps a new
public function from coming without them."""

import ast
import os

from gpuclient.tests.unit import base

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
# and the host fact collector (issue 54), a floor of its own
FLOORS = ('gpuclient/rules', 'gpuclient/ops', 'gpuclient/hostfacts')


def public_functions(tree):
    """(name, node) of the public functions of a module's TREE: its
    functions, and the methods (dunder ones but __init__ excepted) of its
    public classes, nested classes included."""
    def walk(body, prefix, public):
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = node.name
                dunder = name.startswith('__') and name.endswith('__')
                if not public or (name.startswith('_') and not (
                        dunder and name == '__init__')):
                    continue
                yield prefix + name, node
            elif isinstance(node, ast.ClassDef):
                yield from walk(node.body, prefix + node.name + '.',
                                public and not node.name.startswith('_'))
    yield from walk(tree.body, '', True)


def missing_hints(node, method):
    """The parts of function NODE without a type hint."""
    args = node.args
    params = args.posonlyargs + args.args + args.kwonlyargs
    if method and params and params[0].arg in ('self', 'cls'):
        params = params[1:]
    missing = [p.arg for p in params if p.annotation is None]
    for star in (args.vararg, args.kwarg):
        if star is not None and star.annotation is None:
            missing.append(star.arg)
    if node.returns is None and node.name != '__init__':
        missing.append('return')
    return missing


def unhinted(path):
    """['module:function (parts)'] of the public functions of the module
    at PATH that lack a hint."""
    with open(path) as f:
        tree = ast.parse(f.read())
    out = []
    for name, node in public_functions(tree):
        missing = missing_hints(node, '.' in name)
        if missing:
            out.append('%s:%s (%s)' % (os.path.relpath(path, ROOT), name,
                                       ', '.join(missing)))
    return out


class TestTypeHints(base.TestCase):
    def test_every_public_function_of_rules_and_ops_is_hinted(self):
        found = []
        for floor in FLOORS:
            for folder, _dirs, files in os.walk(os.path.join(ROOT, floor)):
                for name in sorted(files):
                    if name.endswith('.py'):
                        found += unhinted(os.path.join(folder, name))
        self.assertEqual([], found)

    def test_the_scan(self):
        source = '''
def a(x, y: int) -> int: pass
def b(x: int): pass
def _private(x): pass
class C:
    def __init__(self, v): pass
    def m(self, *args: int, **kw) -> None: pass
    def _p(self, x): pass
    def __eq__(self, other): pass
    @classmethod
    def k(cls, z: str) -> str: pass
class _Hidden:
    def m(self, x): pass
'''
        tree = ast.parse(source)
        found = {name: missing_hints(node, '.' in name)
                 for name, node in public_functions(tree)}
        self.assertEqual({'a': ['x'], 'b': ['return'], 'C.__init__': ['v'],
                          'C.m': ['kw'], 'C.k': []}, found)
