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

"""Option blocks and output pieces shared by the command modules.

A command module imports this module, never a sibling command module:
the base of the list commands, the nova.conf options, the boot project,
the read commands' --project, --dry-run and --update-dependents, and the
plan of a --dry-run.

OSC loads every command class on every ``openstack`` command, so this
module, like the command modules, imports ``ops`` and ``rules`` only
inside the functions that use them.
"""

import argparse
import logging
import os

from cliff import columns as cliff_columns
from openstackclient.common import envvars
from openstackclient.identity import common as identity_common
from osc_lib import exceptions
from osc_lib.cli import format_columns
from osc_lib.cli import parseractions
from osc_lib.command import command

from gpuclient import plugin
from gpuclient.i18n import _

LOG = logging.getLogger(__name__)


class _Bounded:
    """What every ``openstack gpu`` command is made with: OSC's session
    for it, built when the shell prepares the command (and authenticates,
    before ``make_client``), gets gpuclient's timeouts and answer cap
    (``plugin.bound_session``). A command class derives from Command,
    ShowOne or Lister below, never from osc-lib's directly."""

    def __init__(self, app, app_args, cmd_name=None):
        super().__init__(app, app_args, cmd_name=cmd_name)
        plugin.bound_session(app)


class Command(_Bounded, command.Command):
    """Base of the ``openstack gpu`` commands that print nothing."""


class ShowOne(_Bounded, command.ShowOne):
    """Base of the ``openstack gpu`` commands that show one object."""


class Lister(_Bounded, command.Lister):
    """Base of every ``openstack gpu`` list command.

    Its ``-f`` choices are cliff's (table, csv, json, yaml and value). A
    command whose rows make metrics offers ``-f openmetrics`` too by
    setting ``formatter_namespace = formatters.LIST_NAMESPACE`` (cliff's
    formatters plus openmetrics, setup.cfg): the choices are per command
    class, so no other command offers a format it cannot produce.
    """

    def run(self, parsed_args):
        # -f openmetrics' writer is an extra (gpuclient[metrics]): without
        # it the command says how to install it before reading the cloud
        if getattr(parsed_args, 'formatter', None) == 'openmetrics':
            from gpuclient import formatters

            formatters.import_prometheus_client()
        return super().run(parsed_args)


class Gated:
    """Mixin of the commands whose exit status a pipeline gates on
    (``gpu check``, ``gpu diff``, ``gpu config show --diff``): diff(1)'s
    statuses, gpuclient.exit_status: SAME when the command ran and found
    nothing, DIFFERENT when it found something (take_action sets
    ``self._status``), TROUBLE when it could not run, with the one-line
    reason logged as cliff logs it for other commands (argparse's usage
    error is 2 already).

    Authentication is part of running: OSC's shell authenticates before a
    command runs (``prepare_to_run_command``) and a failure there (a wrong
    password, Keystone unreachable) exits 1, which here means "different".
    So the shell is told no authentication is needed (it then only loads
    the cloud's configuration), and run() asks the shell to authenticate,
    inside the gate, where a failure is TROUBLE.

    ``_epilog_text`` says the statuses: %(same)d, %(different)d and
    %(trouble)d are filled in when the help is asked for.
    """

    auth_required = False
    auth_deferred = True
    _epilog_text = ''

    def get_epilog(self):
        from gpuclient import exit_status

        self._epilog = self._epilog_text % {
            'same': exit_status.SAME, 'different': exit_status.DIFFERENT,
            'trouble': exit_status.TROUBLE}
        return super().get_epilog()

    def run(self, parsed_args):
        from gpuclient import exit_status

        self._status = exit_status.SAME
        try:
            authenticate(self)
            result = super().run(parsed_args)
        except BrokenPipeError:
            raise
        except Exception as exc:
            if getattr(self.app_args, 'debug', False):
                LOG.exception(exc)
            else:
                LOG.error(exc)
            return exit_status.TROUBLE
        return result or self._status


def authenticate(cmd):
    """OSC's own authentication step for CMD, when CMD deferred it
    (Gated): the shell's prepare_to_run_command again, now with
    authentication required."""
    if getattr(cmd, 'auth_deferred', False) and not cmd.auth_required:
        cmd.auth_required = True
        cmd.app.prepare_to_run_command(cmd)


class KeyValueAction(parseractions.KeyValueAction):
    """osc-lib's KeyValueAction (``KEY=VALUE``, repeatable, into a dict;
    a key given twice keeps its last value), with the key and value
    stripped, an empty value refused as an empty key is, and a refusal
    that says what to type: the option's metavar and EXAMPLE.

    A fresh dict per parse: a ``default={}`` is copied, never filled.
    """

    def __init__(self, option_strings, dest, example=None, **kwargs):
        super().__init__(option_strings, dest, **kwargs)
        self.example = example

    def __call__(self, parser, namespace, values, option_string=None):
        key, sep, value = str(values).partition('=')
        if not sep or not key.strip() or not value.strip():
            hint = _('%(text)r: give %(syntax)s') % {
                'text': values, 'syntax': self.metavar}
            if self.example:
                hint += _(', e.g. %s') % self.example
            raise argparse.ArgumentError(self, hint)
        pairs = getattr(namespace, self.dest, None)
        if pairs is None or pairs is self.default:
            setattr(namespace, self.dest, dict(pairs or {}))
        super().__call__(parser, namespace,
                         '%s=%s' % (key.strip(), value.strip()),
                         option_string)


def add_key_value_arg(parser, option, metavar, dest, example, help_text):
    """A repeatable ``KEY=VALUE`` option into a dict (see KeyValueAction)."""
    parser.add_argument(option, metavar=metavar, dest=dest, default={},
                        action=KeyValueAction, example=example,
                        help=help_text)


def number_values(option, pairs, syntax, example, integer=False):
    """{key: number} from the {key: text} of a KeyValueAction option.

    Each value must be a number >= 0 (an integer if INTEGER); otherwise a
    CommandError says what to type: ``OPTION KEY=VALUE: give SYNTAX, e.g.
    EXAMPLE``. Checked before any request, so a refusal changes nothing.
    """
    numbers = {}
    for key, text in (pairs or {}).items():
        try:
            number = int(text) if integer else float(text)
        except ValueError:
            number = None
        # NaN is no price: it is neither >= 0 nor < 0
        if number is None or not number >= 0 or number == float('inf'):
            raise exceptions.CommandError(
                _('%(option)s %(key)s=%(text)s: give %(syntax)s, e.g. '
                  '%(example)s.')
                % {'option': option, 'key': key, 'text': text,
                   'syntax': syntax, 'example': example})
        numbers[key] = number
    return numbers


def add_nova_conf_args(parser, overrides=False):
    """The nova.conf options, the same in every command that reads it.

    --nova-conf and --nova-conf-dir (``gpu candidate list``, ``gpu capacity
    list``, ``gpu check``, ``gpu quota show``); with OVERRIDES also
    --setting and --alias-map, for the commands that build Nova's
    Placement request from the settings (candidates, capacity).
    """
    from gpuclient.ops import nova_settings

    if overrides:
        add_key_value_arg(
            parser, '--alias-map', '<alias>=<vendor:product|class>',
            'alias_maps', 'h100=10de:2331',
            _('What a PCI alias of nova.conf is, for flavors that no GPU '
              'pool describes: h100=10de:2331 or a100=CUSTOM_A100 (repeat '
              'option for several; an alias given twice keeps its last '
              'value)'))
    parser.add_argument(
        '--nova-conf', metavar='<file>', action='append',
        help=_('nova.conf-style file of Nova\'s scheduler and API '
               '([scheduler], [filter_scheduler], [pci] alias, [quota], '
               '[gpuclient]; for gpu check also Placement\'s placement.conf'
               ', [workarounds] and [placement]), read as Nova reads it; '
               'repeat option for several, later files win (as Nova\'s '
               '--config-file); '
               'default $%s, else Nova\'s defaults (see gpu candidate '
               'list --explain)') % nova_settings.CONF_ENV)
    parser.add_argument(
        '--nova-conf-dir', metavar='<directory>', action='append',
        help=_('Directory whose .conf files are read in sorted order '
               'after the --nova-conf files, as Nova\'s --config-dir '
               '(e.g. /etc/nova/nova.conf.d; repeat option for several); '
               'default $%s') % nova_settings.CONF_DIR_ENV)
    if overrides:
        parser.add_argument(
            '--setting', metavar='<key=value>', dest='settings',
            action=parseractions.KeyValueAction, default={},
            help=_('Override one Nova setting, e.g. pci_in_placement=false '
                   'or max_placement_results=50 (repeat option for '
                   'several)'))


def nova_conf_given(parsed_args):
    """Was a nova.conf given: an option of add_nova_conf_args or its
    environment variable ($GPUCLIENT_NOVA_CONF, $GPUCLIENT_NOVA_CONF_DIR)?
    """
    from gpuclient.ops import nova_settings

    return bool(parsed_args.nova_conf or parsed_args.nova_conf_dir
                or os.environ.get(nova_settings.CONF_ENV)
                or os.environ.get(nova_settings.CONF_DIR_ENV))


def settings_from_args(parsed_args):
    """nova_settings.read_settings with the options of add_nova_conf_args."""
    from gpuclient.ops import nova_settings

    return nova_settings.read_settings(parsed_args.nova_conf,
                         getattr(parsed_args, 'settings', None),
                         getattr(parsed_args, 'alias_maps', ()),
                         conf_dir=parsed_args.nova_conf_dir)


def add_boot_project_args(parser):
    """--project and --project-domain: the project that would boot."""
    parser.add_argument(
        '--project', metavar='<project>',
        help=_('Project that would boot the server (name or ID; '
               'default: the current project): decides project-limited '
               'pools'))
    identity_common.add_project_domain_option_to_parser(parser)


class ReasonColumn(cliff_columns.FormattableColumn):
    """Reasons (why a host is out, why GPUs are stranded): a list in
    json/yaml, '; ' between them elsewhere."""

    def human_readable(self):
        return '; '.join(self._value or ())

    def machine_readable(self):
        return list(self._value or ())


def add_project_args(parser, what, every_project=True):
    """--project and --project-domain of the read commands.

    EVERY_PROJECT: what an admin sees without --project: every project
    (``gpu usage list``, as ``openstack usage list``) or their own
    (``gpu server list``, as ``openstack server list``, which has
    --all-projects for the others: see add_all_projects_arg).
    """
    if every_project:
        default = _('Default: every project for an admin, your own '
                    'project otherwise')
    else:
        default = _('Default: your own project (see --all-projects)')
    parser.add_argument(
        '--project', metavar='<project>',
        help=_('Only %(what)s of this project (name or ID; another '
               'project\'s needs admin). %(default)s')
        % {'what': what, 'default': default})
    identity_common.add_project_domain_option_to_parser(parser)


def add_all_projects_arg(parser, what):
    """--all-projects, as OSC's (default from $ALL_PROJECTS)."""
    parser.add_argument(
        '--all-projects', action='store_true',
        default=envvars.boolenv('ALL_PROJECTS'),
        help=_('Include %s of all projects (admin only; can be given with '
               'the ALL_PROJECTS environment variable)') % what)


class PlanColumn(format_columns.ListColumn):
    """Plan lines: one per line in a table, a list in JSON/YAML."""

    def human_readable(self):
        return '\n'.join(self._value or [])


def plan_item(plan):
    """(fields, values) of a --dry-run: the plan and its warnings."""
    return (('dry_run', 'plan', 'warnings'),
            (True, PlanColumn(plan.lines()), PlanColumn(plan.warnings)))


def write_plan(app, plan):
    """--dry-run of a command without fields: the plan lines on stdout."""
    for line in plan.lines():
        app.stdout.write(line + '\n')


def add_dry_run_arg(parser):
    parser.add_argument(
        '--dry-run', action='store_true', default=False,
        help=_('Show the plan (every step, each with its undo) and change '
               'nothing'))


def add_update_dependents_arg(parser):
    parser.add_argument(
        '--update-dependents', action='store_true', default=False,
        help=_('Also change the flavors (and images) that depend on this '
               'change, in the same all-or-nothing plan, instead of '
               'refusing and listing them'))


def add_utilisation_args(parser, server_list=False):
    """--utilisation and --prometheus (``gpu server list``, ``gpu usage
    list``); with SERVER_LIST also --window, --idle-below and --idle."""
    parser.add_argument(
        '--utilisation', action='store_true', default=False,
        help=_('Add GPU utilisation from the cloud\'s Prometheus (NVIDIA '
               'DCGM exporter metrics, host-side or in the guest; see the '
               'utilisation guide)'))
    needs = _('; needs --utilisation')
    add_prometheus_args(parser, needs, window=server_list)
    if server_list:
        parser.add_argument(
            '--idle', action='store_true', default=False,
            help=_('Only idle devices (implies --utilisation)'))
        parser.add_argument(
            '--at', metavar='<time>',
            help=_('Judge the utilisation over the window that ends at '
                   'this time instead of now: ISO 8601, UTC unless an '
                   'offset is given (e.g. 2026-11-30T10:00:00Z). The '
                   'servers listed are those of now') + needs)


def add_prometheus_args(parser, needs='', window=True):
    """--prometheus, and with WINDOW --window and --idle-below: where GPU
    utilisation is read and what idle is (``gpu server list``, ``gpu
    usage list``, ``gpu check``); NEEDS ends each help text."""
    parser.add_argument(
        '--prometheus', metavar='<url>',
        help=_('Prometheus to read (http(s)://host:port; default: '
               'prometheus_endpoint of the cloud in clouds.yaml, else '
               '$GPUCLIENT_PROMETHEUS_URL)') + needs)
    parser.add_argument(
        '--prometheus-selector', metavar='<label>=<value>',
        action='append', dest='prometheus_selector',
        help=_('Read only the series with this label, in every query sent '
               'to Prometheus: a PromQL label matcher such as '
               'region=RegionOne, cloud="prod" or region=~"eu-.*" (also '
               '!=, !~; repeat option for several), for a Prometheus that '
               'holds several clouds\' series (default: '
               'prometheus_selector of the cloud in clouds.yaml, else '
               '$GPUCLIENT_PROMETHEUS_SELECTOR)') + needs)
    if not window:
        return
    parser.add_argument(
        '--window', metavar='<duration>',
        help=_('Period the utilisation is judged over, ending now: a '
               'number and a unit (s, m, h, d or w), e.g. 30m, 1h or 7d '
               '(default: 1h)') + needs)
    parser.add_argument(
        '--idle-below', metavar='<percent>',
        help=_('A device is idle when its peak GPU utilisation over the '
               'window is below this percentage (default: 5)') + needs)


def prometheus_args(parsed_args):
    """The options of add_prometheus_args as a dict (url; window in
    seconds and idle_below when the parser has them), checked before any
    request."""
    from gpuclient.rules import utilisation

    found = {'url': parsed_args.prometheus}
    if hasattr(parsed_args, 'window'):
        found['window'] = utilisation.window_seconds(
            parsed_args.window or utilisation.DEFAULT_WINDOW)
        found['idle_below'] = utilisation.idle_threshold(
            parsed_args.idle_below if parsed_args.idle_below is not None
            else utilisation.DEFAULT_IDLE_BELOW)
    return found


def add_series_labels(app, parsed_args):
    """The cloud and region ``-f openmetrics`` starts every series'
    labels with (``plugin.series_labels``), where its formatter finds
    them: ``parsed_args.series_labels``."""
    from gpuclient import plugin

    parsed_args.series_labels = plugin.series_labels(app.client_manager)


def use_prometheus_selector(client, parsed_args):
    """--prometheus-selector for the command's queries (over the cloud's
    prometheus_selector); a bad selector, given or in clouds.yaml, is a
    CommandError before any request."""
    from gpuclient.ops import utilisation_ops

    utilisation_ops.use_selector(
        client, getattr(parsed_args, 'prometheus_selector', None),
        getattr(parsed_args, 'prometheus', None))


def utilisation_args(parsed_args):
    """The options of add_utilisation_args as the ops layer's
    ``utilisation`` dict (None without --utilisation), checked before
    any request."""
    wanted = parsed_args.utilisation or getattr(parsed_args, 'idle', False)
    if not wanted:
        for dest, option in (('prometheus', '--prometheus'),
                             ('prometheus_selector',
                              '--prometheus-selector'),
                             ('window', '--window'),
                             ('idle_below', '--idle-below'),
                             ('at', '--at')):
            if getattr(parsed_args, dest, None) is not None:
                raise exceptions.CommandError(
                    _('%s needs --utilisation: add it, or drop the '
                      'option.') % option)
        return None
    found = prometheus_args(parsed_args)
    if hasattr(parsed_args, 'idle'):
        found['idle'] = parsed_args.idle
    if getattr(parsed_args, 'at', None) is not None:
        from gpuclient.rules import usage

        # the end of the window: utilisation_ops.server_rows' NOW
        found['now'] = usage.parse_time(parsed_args.at, '--at')
    return found


def add_numa_facts_arg(parser):
    """--host-fact with the NUMA facts (gpu candidate list, capacity
    list)."""
    parser.add_argument(
        '--host-fact', metavar='<[host:]key>=<value>',
        action='append', default=[], dest='host_facts',
        help=_('What the compute API does not show of a host\'s NUMA '
               'topology, for flavors that ask one (repeat option): '
               'numa_cells=<N> (0: the host reports no NUMA topology), '
               'numa_pages=4k[,2M:<pages per cell>][,1G:<pages per cell>] '
               '(every page size of each cell), numa_gpus=<PCI devices on '
               'cell 0>,<on cell 1>,...; for every host, or one with '
               '<host>:. Without them gpuclient judges by the NUMA nodes '
               'in the cloud\'s Prometheus (--prometheus) or the '
               'hypervisor\'s cpu_info, and marks what it cannot judge. '
               'Where gpuclient-host-facts runs on the hosts, the cell of '
               'each GPU it collected is read from that Prometheus too: '
               'a --host-fact numa_gpus overrides it (a warning names '
               'each it changes)'))


def add_numa_prometheus_arg(parser):
    """--prometheus for the NUMA fit (gpu candidate list, capacity
    list)."""
    add_prometheus_args(parser, _(
        '; for flavors that ask a NUMA topology, gpuclient reads each '
        'host\'s NUMA nodes there (node_exporter\'s meminfo_numa '
        'collector) and, for flavors that ask PCI devices too, the cell '
        'of each GPU gpuclient-host-facts collected'), window=False)


def numa_facts(parsed_args):
    """{host or None: facts} of --host-fact (CommandError when bad)."""
    from osc_lib import exceptions

    from gpuclient.rules import maintenance
    from gpuclient.rules.scheduler import host_manager

    try:
        return maintenance.parse_facts(parsed_args.host_facts,
                                       keys=host_manager.NUMA_FACT_KEYS)
    except ValueError as exc:
        raise exceptions.CommandError(_(
            '--host-fact %(item)s: give [<host>:]<key>=<value> with a key '
            'of %(keys)s (numa_cells=2, numa_pages=4k,2M:1024, '
            'numa_gpus=2,2).') % {
                'item': exc,
                'keys': ', '.join(host_manager.NUMA_FACT_KEYS)}) from None
