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

"""The test cloud's modules (tools/cloud) import one way.

``cli.py`` holds the verbs of ``tools/testcloud`` and no module imports
it; ``base.py`` holds what the services' modules share, so ``ironic.py``,
``blazar.py`` and the others import it and never ``cli``; no modules of
tools/cloud import each other in a circle; and none reaches into
another's private names (``cli._render``): a name used across modules is
public. Read with ast from the files, lazy imports too, so neither the
cloud nor its venv is needed.
"""

import ast
import os

import fixtures

from gpuclient.tests.unit import base
from gpuclient.tests.unit import test_layers

CLOUD = os.path.join(base.ROOT, 'tools', 'cloud')
PACKAGE = 'cloud'


def _private(name):
    return name.startswith('_') and not (
        name.startswith('__') and name.endswith('__'))


def _module_imports(tree):
    """({imported module of PACKAGE}, {bound name: module}, [(line,
    'module._name')] of private names imported from one)."""
    imported, bound, private = set(), {}, []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split('.')
                if parts[0] == PACKAGE and len(parts) > 1:
                    imported.add(parts[1])
                    if alias.asname:
                        bound[alias.asname] = parts[1]
                    else:
                        bound[PACKAGE] = None  # cloud.<module>.<name>
        elif isinstance(node, ast.ImportFrom):
            if node.module == PACKAGE or (node.level and not node.module):
                for alias in node.names:  # from cloud import cli
                    imported.add(alias.name)
                    bound[alias.asname or alias.name] = alias.name
                continue
            if node.level:  # from .cli import ...
                target = node.module.split('.')[0]
            elif (node.module or '').startswith(PACKAGE + '.'):
                target = node.module.split('.')[1]
            else:
                continue
            imported.add(target)
            private += [(node.lineno, '%s.%s' % (target, alias.name))
                        for alias in node.names if _private(alias.name)]
    return imported, bound, private


def _module_of(node, bound):
    """The module of PACKAGE that expression NODE names, or None."""
    if isinstance(node, ast.Name):
        return bound.get(node.id)
    if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
            and node.value.id == PACKAGE and PACKAGE in bound):
        return node.attr
    return None


def read(folder):
    """{module: (set of modules of tools/cloud it imports, ['file:line:
    module._name' of each private name it takes from another])} of the
    Python files of FOLDER (a tools/cloud)."""
    found = {}
    for name in sorted(os.listdir(folder)):
        if not name.endswith('.py'):
            continue
        with open(os.path.join(folder, name)) as source:
            tree = ast.parse(source.read(), name)
        imported, bound, private = _module_imports(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and _private(node.attr):
                module = _module_of(node.value, bound)
                if module:
                    private.append((node.lineno, '%s.%s' % (module,
                                                            node.attr)))
        module = name[:-3]
        found[module] = (imported - {module}, sorted(
            '%s:%d: %s' % (name, line, used) for line, used in private
            if not used.startswith(module + '.')))
    return found


def importers(found, module):
    return sorted(m for m, (imported, _) in found.items()
                  if module in imported)


def circles(found):
    return test_layers.layers.cycles(
        {m: imported for m, (imported, _) in found.items()})


def private_uses(found):
    return [use for _, (_, private) in sorted(found.items())
            for use in private]


class TestTestCloudImports(base.TestCase):

    def setUp(self):
        super().setUp()
        self.found = read(CLOUD)

    def test_reads_the_tree(self):
        # the real tree, lazy imports too (cli imports seed in its verb)
        self.assertIn('cli', self.found)
        self.assertIn('base', self.found['ironic'][0])
        self.assertIn('seed', self.found['cli'][0])

    def test_nothing_imports_cli(self):
        # but tools/testcloud, the entry script, which is no module here
        self.assertEqual([], importers(self.found, 'cli'))

    def test_ironic_and_blazar_import_base_api_and_hosts_only(self):
        for module in ('ironic', 'blazar'):
            imported = self.found[module][0]
            self.assertIn('base', imported)
            self.assertLessEqual(imported, {'base', 'api', 'hosts'},
                                 module)

    def test_no_circle(self):
        self.assertEqual([], circles(self.found))

    def test_no_private_name_across_modules(self):
        self.assertEqual([], private_uses(self.found))


class TestTheCheck(base.TestCase):
    """The checks fail on the layout issue 53 took apart: cli.py holding
    the shared pieces, ironic.py taking them from it."""

    def write(self, folder, name, text):
        with open(os.path.join(folder, name), 'w') as f:
            f.write(text)

    def test_the_old_layout_fails(self):
        folder = self.useFixture(fixtures.TempDir()).path
        self.write(folder, 'cli.py', 'from cloud import ironic\n\n\n'
                   'def _render():\n    return ironic\n')
        self.write(folder, 'ironic.py', 'from cloud import cli\n\n\n'
                   'def write_config():\n'
                   '    from cloud import blazar\n'
                   '    cli._render(blazar._etc())\n')
        self.write(folder, 'blazar.py', 'import cloud.cli\n'
                   'from cloud.api import _request\n\n\n'
                   'def _etc():\n    return cloud.cli._spawn\n')
        found = read(folder)
        self.assertEqual(['blazar', 'ironic'], importers(found, 'cli'))
        self.assertEqual([['blazar', 'cli', 'ironic']], circles(found))
        self.assertEqual(['blazar.py:2: api._request',
                          'blazar.py:6: cli._spawn',
                          'ironic.py:6: blazar._etc',
                          'ironic.py:6: cli._render'], private_uses(found))
