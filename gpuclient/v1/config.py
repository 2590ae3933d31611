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

"""``openstack gpu config show`` and ``openstack gpu config export``.

``show`` only shows (and compares, ``--diff``); ``export`` writes the
files and lists them. ``show`` is a ``Command``, not a ``ShowOne``: what
it shows is a document, nova.conf text with repeated keys, comments and
one block per service or host (or a tree of files), which the one-row
formatters (table, json, yaml) cannot carry without losing what makes it
usable: it is meant to be read, copied into place or redirected to a
file, like a file's contents. ``export`` is a list: one row per file
written, so ``-f json`` and ``-f value`` work on what it did.
"""

import logging

from osc_lib import exceptions
from osc_lib.command import command

from gpuclient.i18n import _
from gpuclient.v1 import common

LOG = logging.getLogger(__name__)
LAYOUTS = ('ini', 'kolla')
EXPORT_COLUMNS = ('Path',)


def _add_selection_args(parser):
    """What to render: the options ``config show`` and ``config export``
    share."""
    from gpuclient.rules.nova_conf import render

    parser.add_argument(
        '--pool', metavar='<pool>', action='append', default=[],
        help=_('Only this pool (name or aggregate ID; repeat for several). '
               'Default: every GPU pool.'))
    parser.add_argument(
        '--host', metavar='<host>', action='append', default=[],
        help=_('Only this compute host\'s part (service host, '
               'hypervisor or provider name; repeatable); the '
               'controller part is always shown.'))
    parser.add_argument(
        '--layout', metavar='<layout>', choices=LAYOUTS, default='ini',
        help=_('Layout of the output, ini or kolla. ini: one block per '
               'service and host (default); kolla: '
               'the files of a Kolla-Ansible config directory '
               '(nova.conf, nova/nova-api.conf, nova/nova-scheduler.conf,'
               ' nova/<inventory host>/nova.conf).'))
    common.add_key_value_arg(
        parser, '--mig-mdev-type', '<profile>=<mdev-type>',
        'mig_mdev_types', '3g.40gb=nvidia-700 (the type name in '
        '/sys/bus/pci/devices/<VF>/mdev_supported_types)',
        _('The mdev type that serves a MIG profile (e.g. '
               '3g.40gb=nvidia-700), which the cloud does not record; '
               'without it MIG hosts get a comment instead of [devices]'
               '. Repeatable; a profile given twice keeps its last '
               'type.'))
    parser.add_argument(
        '--numa-policy', metavar='<policy>',
        choices=('required', 'legacy', 'preferred', 'socket'),
        default=render.DEFAULT_NUMA_POLICY,
        help=_('numa_policy of a [pci] alias whose flavors do not '
               'agree on one hw:pci_numa_affinity_policy (required, '
               'legacy, preferred or socket; default: preferred, as '
               'gpu flavor create); otherwise the flavors\' policy is '
               'used. A flavor\'s own policy overrides the alias\'s.'))


def _collect(app, parsed_args):
    """(config, notes on stderr said) of the selection options."""
    from gpuclient.ops import config_ops

    config, notes = config_ops.collect(
        app.client_manager.gpu, parsed_args.pool, parsed_args.host,
        parsed_args.mig_mdev_types,
        parsed_args.numa_policy)
    for note in notes:
        LOG.warning(note)
    return config


def _write(config, parsed_args):
    """The files of the layout written under --output-dir: their paths."""
    from gpuclient.ops import config_ops
    from gpuclient.rules.nova_conf import render

    return config_ops.write_files(
        parsed_args.output_dir,
        render.files(config, parsed_args.layout))


class ShowConfig(common.Gated, common.Command):
    _description = _(
        "Show the nova.conf settings the GPU pools need.\n\n"
        "Rendered from the cloud's state (pools, and each pGPU's PCI "
        "address read from Placement): [pci] alias and device_spec, "
        "[devices] enabled_mdev_types and [mdev_<type>] device_addresses, "
        "and the scheduler settings, grouped by service and host, or as "
        "the Kolla-Ansible override tree. Only the keys gpuclient owns; "
        "what the cloud cannot tell is said in comments. With --diff, "
        "shows what an existing configuration lacks or contradicts, with "
        "an exit status a pipeline can gate on (below). To write the "
        "files, use \"openstack gpu config export\".")
    _epilog_text = _(
        'Exit status with --diff: %(same)d when the configuration has '
        'everything the pools need; %(different)d when it lacks or '
        'contradicts something (the lines say what); %(trouble)d when it '
        'could not compare (bad options, a path that cannot be read, the '
        'cloud unreachable), with the reason on stderr: diff(1)\'s '
        'scheme, the same as "gpu check" and "gpu diff". Changed: an '
        'error was 1 as well before. Without --diff: 0, or 1 on error.')

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        _add_selection_args(parser)
        parser.add_argument(
            '--output-dir', metavar='<directory>',
            help=_('Deprecated: use "openstack gpu config export '
                   '--output-dir <directory>", which writes the same files. '
                   'Writes the files there instead of printing them (never '
                   'overwrites a file) and prints the paths written.'))
        parser.add_argument(
            '--diff', metavar='<path>',
            help=_('Compare with an existing nova.conf (one service\'s; '
                   'with --host, that host\'s nova-compute) or a '
                   'Kolla-Ansible config directory, and show what it lacks '
                   '(+) or contradicts (-/+).'))
        return parser

    def take_action(self, parsed_args):
        from gpuclient import exit_status
        from gpuclient.ops import config_ops
        from gpuclient.rules.nova_conf import diff as conf_diff
        from gpuclient.rules.nova_conf import render

        if parsed_args.diff and parsed_args.output_dir:
            raise exceptions.CommandError(
                _('--diff and --output-dir do not go together: compare '
                  'first, then write to an empty directory.'))
        if parsed_args.output_dir:
            LOG.warning(_(
                '"openstack gpu config show --output-dir" is deprecated and '
                'will be removed: run "openstack gpu config export '
                '--output-dir %s" (the same options; it lists the files '
                'written, and -f json works).'), parsed_args.output_dir)
        config = _collect(self.app, parsed_args)
        out = self.app.stdout
        if parsed_args.diff:
            existing, where = config_ops.read_existing(
                parsed_args.diff, config, parsed_args.host)
            findings = conf_diff.diff(config, existing)
            out.write(conf_diff.render_diff(findings, where))
            self._status = (exit_status.DIFFERENT if findings
                            else exit_status.SAME)
            return self._status
        if parsed_args.output_dir:
            for path in _write(config, parsed_args):
                out.write(path + '\n')
            return 0
        if parsed_args.layout == 'kolla':
            out.write(render.render_kolla(config))
        else:
            out.write(render.render_ini(config))
        return 0

    def run(self, parsed_args):
        # with --diff, the exit status says same, different, or that the
        # comparison could not be made (common.Gated); without, OSC's 0,
        # or 1 on error (cliff's, past the gate)
        if not parsed_args.diff:
            common.authenticate(self)
            return command.Command.run(self, parsed_args)
        return super().run(parsed_args)


class ExportConfig(common.Lister):
    _description = _(
        "Write the nova.conf settings the GPU pools need into files.\n\n"
        "The same settings as \"openstack gpu config show\" (the same "
        "selection and layout options), written under --output-dir: with "
        "--layout kolla the Kolla-Ansible override tree (nova.conf, "
        "nova/nova-scheduler.conf, nova/<host>/nova.conf), with ini one "
        "file per service and host. It never overwrites a file: the "
        "directory must not hold any of them (they may hold other "
        "settings; compare with \"gpu config show --diff\" instead). "
        "Lists the files written, one row each.")

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        _add_selection_args(parser)
        parser.add_argument(
            '--output-dir', metavar='<directory>', required=True,
            help=_('Directory to write the files into (created if '
                   'missing; no file in it is overwritten)'))
        return parser

    def take_action(self, parsed_args):
        config = _collect(self.app, parsed_args)
        return EXPORT_COLUMNS, [(path,) for path in _write(config,
                                                           parsed_args)]
