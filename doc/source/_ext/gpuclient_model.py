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

"""``.. gpuclient-model::``: the one model of the cloud as read, from the code.

At build time the directive imports ``gpuclient.rules.model`` and emits a
literal block: the fields of ``Cloud`` and of its ``Placement`` (each
with its type and what it holds, the field's ``doc``) and the declared
shape of each item
(``TypedDict`` classes, with their keys). The module is a dependency of the
page, so an incremental build redraws it when the model changes.
"""

import dataclasses
import typing

import gpuclient_layers
from sphinx.util.docutils import SphinxDirective


def _type(annotation):
    if isinstance(annotation, type):
        return annotation.__name__
    return str(annotation).replace('typing.', '').replace(
        'gpuclient.rules.', '')


def text(model):
    """What the directive shows, as plain text."""
    lines = ['rules.model.Cloud  (filled by ops.snapshot.read)', '']
    hints = typing.get_type_hints(model.Cloud)
    for field in dataclasses.fields(model.Cloud):
        if field.name.startswith('_'):
            continue
        lines.append('  %-16s %s' % (field.name, _type(hints[field.name])))
        lines.append('      %s' % field.metadata.get('doc', ''))
    lines += ['', 'rules.model.Placement  (Cloud.placement)', '']
    hints = typing.get_type_hints(model.Placement)
    for field in dataclasses.fields(model.Placement):
        if field.name.startswith('_'):
            continue
        lines.append('  %-16s %s' % (field.name, _type(hints[field.name])))
        lines.append('      %s' % field.metadata.get('doc', ''))
    lines += ['', 'Items:', '']
    for name, value in vars(model).items():
        if (isinstance(value, type) and issubclass(value, dict)
                and hasattr(value, '__annotations__')
                and value.__module__ == model.__name__):
            lines.append('  %-16s %s' % (
                name, ', '.join(typing.get_type_hints(value))))
    return '\n'.join(lines) + '\n'


class ModelDirective(SphinxDirective):
    has_content = False

    def run(self):
        from gpuclient.rules import model

        self.env.note_dependency(model.__file__)
        return gpuclient_layers.literal(text(model))


def setup(app):
    app.add_directive('gpuclient-model', ModelDirective)
    return {'parallel_read_safe': True, 'parallel_write_safe': True,
            'version': '1.0'}
