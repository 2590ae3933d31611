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

"""openstack gpu check"""

import logging
import os

from osc_lib import exceptions

from gpuclient.i18n import _
from gpuclient.v1 import common

LOG = logging.getLogger(__name__)

COLUMNS = ('Severity', 'Check', 'Object', 'Symptom', 'Fix')


def table(findings):
    """(columns, rows) of ``gpu check`` for the machine formats (json,
    yaml, csv, value): one row per finding."""
    return COLUMNS, [(f.severity, f.check, f.object, f.symptom, f.fix)
                     for f in findings]


def _terminal_width(stream):
    """The width of the terminal STREAM writes to, or None."""
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, TypeError, ValueError):
        return None


def fit_to_terminal(parsed_args, stdout, *others):
    """The table fits the terminal unless told otherwise (--max-width,
    CLIFF_FIT_WIDTH=0): cliff measures stdout's terminal; when stdout is
    none (``gpu check | less``, or a script capturing it), the width of
    the first of OTHERS (stderr, stdin) at a terminal is given."""
    if (parsed_args.formatter != 'table' or not parsed_args.fit_width
            or parsed_args.max_width > 0 or _terminal_width(stdout)):
        return
    for stream in others:
        width = _terminal_width(stream)
        if width:
            parsed_args.max_width = width
            return


class Check(common.Gated, common.Lister):
    # get_description fills in the names of the checks
    _description = _(
        'Find GPU misconfigurations before users do.\n\n'
        'Reads the cloud once (pools, hosts, Placement trees, flavors, '
        'images; with --nova-conf or --nova-conf-dir the scheduler '
        'settings too, which the checks of scheduler settings and PCI '
        'aliases need) and prints '
        'the findings: severity (error: instances fail or land on '
        'the wrong hosts; warning: a likely mistake), the check, the '
        'object, the symptom a user would see and the command or '
        'nova.conf line that fixes it. The exit status tells findings from '
        'a check that could not run (see below), so it can gate a '
        'deployment pipeline. With a Prometheus (--prometheus, or '
        'prometheus_endpoint in clouds.yaml) the gpu-idle check also '
        'reads every project\'s servers and their GPU utilisation, and '
        'the checks of the GPUs themselves (gpu-unhealthy, '
        'gpu-application-xid, gpu-row-remap, gpu-vgpu-licence, '
        'gpu-driver-drift, gpu-missing) the NVIDIA DCGM '
        'exporter\'s figures, and the checks of the hosts themselves '
        '(the host-... checks, and gpu-driver-drift\'s kernel, libvirt and '
        'QEMU) the '
        'facts gpuclient-host-facts publishes of each host, each in a '
        'fixed number of queries; without one they do not run. The table '
        '(the default format) is read by a person: fitted to the terminal '
        '(as cliff\'s --fit-width; CLIFF_FIT_WIDTH=0 or --max-width say '
        'otherwise), errors first, then warnings, then what was not '
        'judged, with the "not judged" rows for want of one source '
        '(nova.conf, the DCGM exporter\'s series, Prometheus, the hosts\' '
        'facts) folded into one row naming the checks it would let judge '
        'and how to give it; json, yaml, csv and value print one row per '
        'finding. One line on stderr sums up: errors, '
        'warnings, checks not judged and why. Checks: %s. Needs admin.')
    _epilog_text = _(
        'Exit status: %(same)d when the checks ran and found no error '
        '(with --strict, no finding at all); %(different)d when they found '
        'one (the rows say which); %(trouble)d when the checks could not '
        'run (bad options, an unknown check or pool, the cloud unreachable '
        'or refusing the reads or the credentials, output that could not '
        'be written, or no check asked for could read what it rests on: '
        'the DCGM checks, the host checks and gpu-idle without a '
        'Prometheus or with one down or failing), with the reason on '
        'stderr: diff(1)\'s scheme, '
        'the same as "gpu diff" and "gpu config show --diff". When only '
        'some of the checks could not run, the status is the others\' and '
        'stderr names those it does not cover.')

    # the names of the checks are filled in here, not in the class body:
    # loading the class (which every openstack command does) does not
    # import the checks

    def get_description(self):
        from gpuclient.rules import checks

        return self._description % ', '.join(checks.CHECKS)

    def get_parser(self, prog_name):
        from gpuclient.rules import checks

        parser = super().get_parser(prog_name)
        common.add_nova_conf_args(parser)
        parser.add_argument(
            '--check', metavar='<name>', action='append', dest='checks',
            help=_('Run only this check (repeat option for several; '
                   'one of %s). Default: all')
            % ', '.join(checks.CHECKS))
        parser.add_argument(
            '--pool', metavar='<pool>',
            help=_('Only findings about this GPU pool (name or aggregate ID)'))
        common.add_prometheus_args(parser, _(
            '; for the gpu-idle check and the DCGM checks (their window: '
            'an XID in it is recent)'))
        parser.add_argument(
            '--strict', action='store_true', default=False,
            help=_('Exit with status %d on warnings too')
            % checks.EXIT_FINDINGS)
        # the table fits the terminal (cliff's --fit-width) unless
        # CLIFF_FIT_WIDTH=0
        parser.set_defaults(fit_width=bool(int(
            os.environ.get('CLIFF_FIT_WIDTH', 1))))
        return parser

    def take_action(self, parsed_args):
        from gpuclient.ops import check_ops
        from gpuclient.rules import check_report
        from gpuclient.rules import checks

        unknown = checks.unknown_checks(parsed_args.checks)
        if unknown:
            raise exceptions.CommandError(
                _('Unknown check(s) %(bad)s: choose among %(all)s.')
                % {'bad': ', '.join(unknown),
                   'all': ', '.join(checks.CHECKS)})
        utilisation = common.prometheus_args(parsed_args)
        common.use_prometheus_selector(self.app.client_manager.gpu,
                                       parsed_args)
        settings = None
        if common.nova_conf_given(parsed_args):
            settings = common.settings_from_args(parsed_args)
        findings, missing = check_ops.run(
            self.app.client_manager.gpu, settings,
            names=parsed_args.checks, pool=parsed_args.pool,
            utilisation=utilisation)
        self._status = checks.exit_status(
            findings, parsed_args.strict, parsed_args.checks, missing)
        LOG.warning(check_report.summary_text(findings, missing))
        if self._status == checks.EXIT_NOT_RUN:
            LOG.error(_('No check asked for could run: %s.'),
                      checks.not_run_text(missing))
        elif missing:
            LOG.warning(_('Could not run, so the exit status does not '
                          'cover: %s.'), checks.not_run_text(missing))
        if parsed_args.formatter != 'table':
            return table(findings)
        fit_to_terminal(parsed_args, self.app.stdout, self.app.stderr,
                        self.app.stdin)
        return COLUMNS, check_report.table_rows(findings)
