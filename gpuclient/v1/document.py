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

"""``openstack gpu export``, ``openstack gpu diff`` and ``openstack gpu
apply``.

``export`` is a ``Command``: what it prints is a document (YAML text meant
to be kept in a file), which the one-row formatters cannot carry, as
``gpu config show``. ``diff`` is a list: one row per object that differs,
the same rows in every formatter, and an exit status that says in sync,
drift or error. ``apply`` is a write command: it prints nothing, or its
plan with ``--dry-run``, as ``gpu pool set`` does.
"""

from cliff import columns as cliff_columns
from osc_lib import exceptions

from gpuclient.i18n import _
from gpuclient.v1 import common

COLUMNS = ('Object', 'Change', 'From', 'To', 'Conflicts')


class FieldsColumn(cliff_columns.FormattableColumn):
    """The fields of one side of a diff row: ``hosts=a,b; isolate=True``
    in a table, the mapping itself in JSON and YAML (None: the object is
    not on that side)."""

    @staticmethod
    def _text(value):
        if isinstance(value, list):
            return ','.join(str(v) for v in value)
        if isinstance(value, dict):
            return ','.join('%s=%s' % item for item in value.items())
        return str(value)

    def human_readable(self):
        if self._value is None:
            return ''
        return '; '.join('%s=%s' % (key, self._text(value))
                         for key, value in self._value.items())

    def machine_readable(self):
        return self._value


class ConflictsColumn(cliff_columns.FormattableColumn):
    """The fields of a diff row that the cloud changed since the
    document's record: ``properties.team (recorded hpc, now ml-ops, wanted
    hpc)`` in a table, the list of {field, recorded, now, wanted} in JSON
    and YAML (None: the document records nothing of the object)."""

    def human_readable(self):
        from gpuclient.rules import document

        return '; '.join(document.conflict_text(c)
                         for c in self._value or ())

    def machine_readable(self):
        return self._value


def add_document_args(parser, file_help, prune_help):
    """<file>, --prune and --pool, of gpu diff and gpu apply."""
    parser.add_argument('file', metavar='<file>', help=file_help)
    parser.add_argument('--prune', action='store_true', default=False,
                        help=prune_help)
    parser.add_argument(
        '--pool', metavar='<pool>', action='append', default=[],
        help=_('Only this pool (name; of the document, the cloud or both), '
               'its flavors and the quotas of its class, as "openstack gpu '
               'export --pool" writes them; the rest of the document and '
               'of the cloud is left alone, --prune included. Repeat '
               'option for several. Default: the whole GPU layer'))


def table(rows):
    """(columns, rows) of ``gpu diff`` for every formatter."""
    return COLUMNS, [(row['object'], row['change'], FieldsColumn(row['from']),
                      FieldsColumn(row['to']),
                      ConflictsColumn(row.get('conflicts', [])))
                     for row in rows]


class ExportDocument(common.Command):
    _description = _(
        'Write the GPU layer of the cloud as a YAML document.\n\n'
        'Pools (with their hosts, isolation, projects and properties), the '
        'GPU flavors gpuclient derives from them (sizes, GPUs, NUMA policy, '
        'access, description, other extra specs), the GPU properties of '
        'images and the GPU quotas (unified limits on class:<RC>), as the '
        'versioned document "openstack gpu diff" compares with a cloud. '
        'The text is deterministic: the same cloud gives the same text. '
        'After the lists comes the record of what the cloud held '
        '(observed), by which "openstack gpu apply" refuses to undo what '
        'another operator changes after the export. '
        'Flavors that steer to a pool but are not what gpuclient derives '
        'from it are left out, with a warning. Needs admin.')

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            '--pool', metavar='<pool>', action='append', default=[],
            help=_('Only this pool (name), its flavors and the quotas of '
                   'its class; repeat option for several. Images are left '
                   'out. Default: the whole GPU layer'))
        parser.add_argument(
            '--output', metavar='<file>',
            help=_('Write the document to this file instead of stdout '
                   '(through a temporary file: never half written)'))
        parser.add_argument(
            '--overwrite', action='store_true', default=False,
            help=_('Replace the --output file when it exists (default: '
                   'refuse)'))
        return parser

    def take_action(self, parsed_args):
        from gpuclient.ops import document_ops

        if parsed_args.overwrite and not parsed_args.output:
            raise exceptions.CommandError(
                _('--overwrite goes with --output <file>.'))
        text = document_ops.export(self.app.client_manager.gpu,
                                   parsed_args.pool or None)
        if parsed_args.output:
            document_ops.write(parsed_args.output, text,
                               parsed_args.overwrite)
        else:
            self.app.stdout.write(text)
        return 0


class DiffDocument(common.Gated, common.Lister):
    _description = _(
        'Compare the cloud with a GPU layer document.\n\n'
        'Reads the document (as "openstack gpu export" writes it), checks '
        'it (every problem with its line and field), reads the cloud once '
        'and prints one row per object that differs: create, update, '
        'recreate (a flavor\'s sizes, a pool\'s kind of GPU), and objects '
        'gpuclient owns that the document does not name: untracked, or, '
        'with --prune, delete when an earlier "gpu apply" made or took '
        'them over (they carry its mark). Objects in sync are left out. '
        'The exit status tells in sync from drift, so a pipeline can gate '
        'on it. Conflicts lists the fields a row changes that the cloud '
        'changed since the document was exported (its record): "gpu '
        'apply" refuses them without --force-conflicts. YAML anchors and '
        'aliases are refused. Needs admin.')
    _epilog_text = _(
        'Exit status: %(same)d when the cloud is in sync with the document '
        '(untracked objects are not drift, unless --prune); %(different)d '
        'when it is not (the rows say how); %(trouble)d when it could not '
        'compare (bad options, an invalid document, a project, host or '
        'image the cloud does not have, the cloud unreachable), with the '
        'reason on stderr: diff(1)\'s scheme, the same as "gpu check" and '
        '"gpu config show --diff". Changed: drift was 2 and an error 1 '
        'before; a pipeline that tested for 2 must test for 1.')

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        add_document_args(
            parser, _('The document (YAML) to compare the cloud with'),
            _('The document is the whole of what "gpu apply" manages (with '
              '--pool: in those pools): what an earlier apply made or took '
              'over (marked) and the document does not name is a delete '
              '(drift), not untracked'))
        return parser

    def take_action(self, parsed_args):
        from gpuclient.ops import document_ops
        from gpuclient.rules import document

        rows = document_ops.diff(self.app.client_manager.gpu,
                                 parsed_args.file, prune=parsed_args.prune,
                                 pool_names=parsed_args.pool or None)
        self._status = document.exit_status(rows)
        return table(rows)


class ApplyDocument(common.Command):
    _description = _(
        'Make the cloud what a GPU layer document says.\n\n'
        'Reads the document (as "openstack gpu export" writes it), checks '
        'it (every problem with its line and field), reads the cloud once '
        '(Placement included) and plans every change in one plan, in '
        'dependency order: traits and pools, then flavors, then image '
        'properties and quotas; with --prune, the removals in the reverse '
        'order. The plan is made of the steps "gpu pool", "gpu flavor", '
        '"gpu image" and "gpu quota" would take, and refused, nothing '
        'written, where one of them would refuse. Before any write, each '
        'flavor the plan creates or changes (or whose pool it changes) '
        'must fit a host of its pool in the cloud as it will be after '
        'the apply, as "gpu capacity list" counts it. A host the document '
        'takes out of a pool while it runs servers whose flavor steers to '
        'that pool only is refused, as "gpu pool remove host" refuses it. '
        'The plan is applied all or nothing, and a re-run after success '
        'plans nothing. Every object the document names is marked as the '
        'apply\'s, on the object (aggregate metadata gpu_managed_by, '
        'flavor extra spec gpuclient:managed_by, image property '
        'gpuclient_managed_by, limit description): what a later --prune '
        'may remove. With --pool, only those pools, their flavors and '
        'the quotas of their classes are planned. A field the plan would '
        'change that the cloud changed since the document was exported '
        '(another operator\'s edit: the export records what each field '
        'held) is a conflict: the apply is refused, nothing written, '
        'naming the object, the field and its recorded, current and '
        'wanted values, unless --force-conflicts. Needs admin.')

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        add_document_args(
            parser, _('The document (YAML) to apply'),
            _('The document is the whole of what "gpu apply" manages (with '
              '--pool: in those pools): remove the pools, GPU flavors, GPU '
              'image properties and GPU quotas that an earlier apply made '
              'or took over (they carry its mark) and the document does not '
              'name; never one a single command or a hand made, nor one '
              'outside --pool. The plan names each, and what it leaves'))
        parser.add_argument(
            '--recreate-flavors', action='store_true', default=False,
            help=_('Delete and create again the flavors whose sizes (or '
                   'public/private) the document changes, which Nova '
                   'cannot edit: they get a new ID, with the access list '
                   'and extra properties of the document; running servers '
                   'keep their embedded copy (default: refuse)'))
        parser.add_argument(
            '--force-conflicts', action='store_true', default=False,
            help=_('Overwrite the fields the cloud changed since the '
                   'document was exported (another operator\'s edit), as '
                   'the document says; the plan names each. Default: '
                   'refuse, nothing written. A document without the '
                   'export\'s record (written by hand, or by an older '
                   'gpuclient) cannot be checked: it is applied with a '
                   'warning'))
        common.add_dry_run_arg(parser)
        return parser

    def take_action(self, parsed_args):
        from gpuclient.ops import document_ops

        plan = document_ops.apply(
            self.app.client_manager.gpu, parsed_args.file,
            dry_run=parsed_args.dry_run, prune=parsed_args.prune,
            recreate_flavors=parsed_args.recreate_flavors,
            pool_names=parsed_args.pool or None,
            force_conflicts=parsed_args.force_conflicts)
        if parsed_args.dry_run:
            common.write_plan(self.app, plan)
        return 0
