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

"""``.. gpuclient-layers::``: the floors and their imports, from the code.

At build time the directive loads tools/layers.py by path (it is a script,
not a package module), reads the repository's imports with it and emits a
literal block: the floors with their imports from each to each, the imports
that break a rule (test_layers.KNOWN lists them), and the modules of each
floor, a subpackage's (such as gpuclient.rules.scheduler) under it. Every
file it read is a dependency of the page, so an incremental build redraws
it when an import changes.
"""

import importlib.util
import os

from docutils import nodes
from sphinx.util.docutils import SphinxDirective

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__),
                                    '..', '..', '..'))
SCRIPT = os.path.join(ROOT, 'tools', 'layers.py')


def load_layers():
    spec = importlib.util.spec_from_file_location('gpuclient_layers', SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def text(layers, root=ROOT):
    """What the directive shows, as plain text."""
    imports = layers.graph(root)
    lines = [layers.diagram(imports).rstrip('\n'), '']
    found = layers.violations(imports)
    if found:
        lines += ['Imports that break a rule today (%d):' % len(found), '']
        lines += ['  %s -> %s' % (a, b) for a, b, _ in found]
        lines.append('')
    lines += ['Modules by floor (a package\'s modules indented under it):',
              '']
    for floor, modules in layers.modules_by_floor(imports).items():
        lines.append('  %s' % floor)
        lines += ['    %s' % m for m in tree(modules)]
    return '\n'.join(lines) + '\n'


def literal(body):
    """The nodes of a plain-text literal block of BODY."""
    block = nodes.literal_block(body, body)
    block['language'] = 'text'
    return [block]


def tree(modules):
    """Sorted dotted names, a package's modules indented under it by their
    last name (gpuclient.rules.scheduler/, then "  conf", ...)."""
    names = set(modules)
    packages = {m for m in names
                if any(other.startswith(m + '.') for other in names)}
    shown = []
    for module in sorted(names):
        parent, depth = module.rpartition('.')[0], 0
        while parent in packages and parent.count('.') >= 2:
            depth += 1
            parent = parent.rpartition('.')[0]
        name = module.rpartition('.')[2] if depth else module
        suffix = '/' if module in packages and module.count('.') >= 2 else ''
        shown.append('  ' * depth + name + suffix)
    return shown


class LayersDirective(SphinxDirective):
    has_content = False
    required_arguments = 0
    optional_arguments = 0

    def run(self):
        layers = load_layers()
        self.env.note_dependency(SCRIPT)
        for path in layers.sources(ROOT).values():
            self.env.note_dependency(path)
        return literal(text(layers))


def setup(app):
    app.add_directive('gpuclient-layers', LayersDirective)
    return {'parallel_read_safe': True, 'parallel_write_safe': True,
            'version': '1.0'}
