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

"""``openstack gpu profile list`` and ``openstack gpu profile plan``."""

import logging

from osc_lib import exceptions
from osc_lib.cli import format_columns

from gpuclient.i18n import _
from gpuclient.v1 import common

LOG = logging.getLogger(__name__)


class SlotsColumn(format_columns.ListColumn):
    """Start slots: numbers in JSON/YAML, ``0, 4`` in a table."""

    def human_readable(self):
        return ', '.join(str(slot) for slot in self._value or ())


class ServesColumn(format_columns.DictColumn):
    """{profile: count} a card serves: a dict in JSON/YAML, and in a table
    ``3g.40gb=2, 1g.10gb=1`` (osc-lib's DictColumn would quote the
    counts: ``3g.40gb='2'``)."""

    def human_readable(self):
        served = sorted((self._value or {}).items())
        return ', '.join('%s=%s' % (name, count) for name, count in served)


class ListProfile(common.Lister):
    _description = _(
        'List the MIG profiles and vGPU types of each GPU model.\n\n'
        'The partition catalogue from NVIDIA\'s tables: per model, each MIG '
        'profile with its compute and memory slices, memory, the most '
        'instances one GPU holds and the memory slots it may start at; '
        'then the time-sliced vGPU types (one type per physical GPU), '
        'with no slices or placements, each with the board it is named '
        'for (the SXM module and the PCIe card of one GPU have vGPU types '
        'of different names). --long adds where each row comes from. '
        'Needs no cloud.')
    auth_required = False  # no cloud is read: no credentials asked for

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            '--model', metavar='<model>',
            help=_('Only this GPU model (case-insensitive; a board name '
                   'gives its model), e.g. A100-80GB, H100-94GB, '
                   'H200-141GB, B200-180GB, GB200-186GB, RTX-PRO-6000-96GB, '
                   'L40S-48GB (all: see this list without it)'))
        parser.add_argument(
            '--board', metavar='<board>',
            help=_('Only this board\'s model, with the vGPU types of this '
                   'board (case-insensitive), e.g. H100-SXM5-80GB (vGPU '
                   'types H100XM-*), H100-PCIE-80GB (H100-*), H200-SXM5 '
                   '(H200X-*), H200-NVL, A100-HGX-80GB (A100DX-*), L40S'))
        parser.add_argument(
            '--long', action='store_true', default=False,
            help=_('List additional fields in output: the source each row '
                   'is transcribed from'))
        return parser

    def take_action(self, parsed_args):
        from gpuclient.ops import profile_ops
        from gpuclient.rules import catalogue

        try:
            rows = profile_ops.catalogue(parsed_args.model,
                                         parsed_args.board)
        except catalogue.UnknownName as e:
            raise exceptions.CommandError(str(e)) from e
        columns = ('Model', 'Profile', 'Compute Slices', 'Memory Slices',
                   'Memory (GB)', 'Max Count', 'Placements', 'Board')
        if parsed_args.long:
            columns += ('Source',)
        data = []
        for r in rows:
            item = (r['model'], r['profile'], r['compute_slices'],
                    r['memory_slices'], r['memory_gb'], r['max_count'],
                    SlotsColumn(r['placements']), r['board'])
            if parsed_args.long:
                item += (r['source'],)
            data.append(item)
        return columns, data


class PlanProfile(common.Lister):
    _description = _(
        'Plan the MIG or vGPU layout of each GPU for a demand.\n\n'
        'Exact, in this order: meet as much of the demand as possible, '
        're-cut the fewest cards, disturb the fewest running servers. '
        'Placement rules are kept (each profile at its valid start slots, '
        'no two instances of a card on one memory slice, one time-sliced '
        'vGPU type per GPU). One row per card: its layout now, the layout '
        'proposed and the demand it serves; the summary (demand met per '
        'profile, cards re-cut, memory slices left free) goes to stderr. '
        '--cards plans cards not racked yet and needs no cloud.')
    auth_required = False  # --cards reads no cloud (--pool asks below)

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        common.add_key_value_arg(
            parser, '--cards', '<model>=<count>', 'cards', 'A100-80GB=8',
            _('Plan this many cards of a GPU model not racked yet, e.g. '
              'A100-80GB=8 (repeat option for several models; see "gpu '
              'profile list" for the models)'))
        common.add_key_value_arg(
            parser, '--demand', '<profile>=<count>', 'demand', '3g.40gb=4',
            _('Instances wanted of a MIG profile or time-sliced vGPU type, '
              'e.g. 3g.40gb=4 or A100D-10C=16 (repeat option for several; '
              'a name counts on every model that has it)'))
        parser.add_argument(
            '--output-dir', metavar='<directory>',
            help=_('Write one nvidia-smi script per group of cards with '
                   'the same model and proposed layout into this '
                   'directory (made if missing; an existing file is never '
                   'overwritten): adds a Script column. For vgpu-vf pools: '
                   'per host the VF script, its systemd unit and nova.conf '
                   '(Script, Unit and Nova Conf columns)'))
        parser.add_argument(
            '--pool', metavar='<pool>', action='append', dest='pools',
            default=[],
            help=_('Plan the cards of this MIG or time-sliced vGPU (vgpu) '
                   'pool\'s hosts, as the cloud has them cut now (name or '
                   'aggregate ID; repeat option for several pools). Adds the '
                   'Host and Servers To Move columns; with --output-dir, each '
                   're-cut host\'s nova.conf too. Of vgpu-vf pools (not '
                   'mixed with the others): the vGPU type of each card\'s '
                   'VFs (NVIDIA equal-size mode), and with --output-dir per '
                   're-typed host the script writing each VF\'s '
                   'current_vgpu_type, its systemd unit and the nova.conf '
                   'with a device_spec per VF'))
        parser.add_argument(
            '--model', metavar='<model>',
            help=_('With --pool: the GPU model of the cards, when the cloud '
                   'cannot tell it (A100 80GB and H100 80GB share MIG '
                   'profile names; a time-sliced card\'s model is that of '
                   'its vGPU type)'))
        common.add_key_value_arg(
            parser, '--mig-mdev-type', '<profile>=<mdev-type>',
            'mig_mdev_types', '3g.40gb=nvidia-700',
            _('With --pool --output-dir: the mdev type that serves a MIG '
              'profile (e.g. 3g.40gb=nvidia-700), which the cloud does not '
              'record, as "gpu config show" takes it; without it the '
              'nova.conf says so instead of [devices]. Repeatable'))
        common.add_key_value_arg(
            parser, '--vgpu-mdev-type', '<vgpu-type>=<mdev-type>',
            'vgpu_mdev_types', 'A100D-10C=nvidia-35',
            _('With --pool: the mdev type that serves a time-sliced vGPU '
              'type (e.g. A100D-10C=nvidia-35), which the cloud does not '
              'record: it tells the vGPU type of the vgpu pools of that '
              'mdev type (else their vgpu_profile property) and the mdev '
              'type of a type the plan proposes. Repeatable'))
        parser.add_argument(
            '--from-usage', action='store_true',
            help=_('With --pool: take the demand from the period\'s usage '
                   'instead of --demand: per GPU flavor of a MIG or vgpu '
                   'pool, the peak of its servers running at once plus '
                   'the boots Nova refused with "No valid host" (unmet '
                   'demand is demand too). Needs --start'))
        parser.add_argument(
            '--start', metavar='<time>',
            help=_('With --from-usage: start of the period (UTC, ISO 8601 '
                   'such as 2026-11-01 or 2026-11-01T08:00:00)'))
        parser.add_argument(
            '--end', metavar='<time>',
            help=_('With --from-usage: end of the period (UTC, ISO 8601; '
                   'default: now)'))
        return parser

    def take_action(self, parsed_args):
        from gpuclient.ops import profile_ops
        from gpuclient.rules import catalogue
        from gpuclient.rules.profiles import layouts

        if parsed_args.from_usage:
            if not parsed_args.pools:
                raise exceptions.CommandError(_(
                    '--from-usage plans the cards of the cloud: give --pool '
                    '<pool>. For cards not racked yet (--cards) give '
                    '--demand with that model\'s profiles.'))
            if parsed_args.demand:
                raise exceptions.CommandError(_(
                    'Give --demand or --from-usage, not both.'))
            if not parsed_args.start:
                raise exceptions.CommandError(_(
                    '--from-usage needs the period: --start <time> [--end '
                    '<time>], e.g. --start 2026-11-01.'))
        elif parsed_args.start or parsed_args.end:
            raise exceptions.CommandError(_(
                '--start and --end go with --from-usage.'))
        if parsed_args.pools and parsed_args.cards:
            raise exceptions.CommandError(_(
                'Give --pool (cards of the cloud) or --cards (cards not '
                'racked yet), not both.'))
        if parsed_args.pools:
            return self._plan_pools(parsed_args)
        if (parsed_args.model or parsed_args.mig_mdev_types
                or parsed_args.vgpu_mdev_types):
            raise exceptions.CommandError(_(
                '--model, --mig-mdev-type and --vgpu-mdev-type go with '
                '--pool: --cards names its models itself.'))
        if not parsed_args.cards:
            raise exceptions.CommandError(_(
                'Give the cards to plan: --cards <model>=<count>, e.g. '
                '--cards A100-80GB=8.'))
        if not parsed_args.demand:
            raise exceptions.CommandError(_(
                'Give the demand: --demand <profile>=<count>, e.g. '
                '--demand 3g.40gb=4.'))
        cards = common.number_values(
            '--cards', parsed_args.cards, _('<model>=<count>'),
            '--cards A100-80GB=8', integer=True)
        demand = common.number_values(
            '--demand', parsed_args.demand, _('<profile>=<count>'),
            '--demand 3g.40gb=4', integer=True)
        try:
            rows, summary = profile_ops.plan_cards(
                cards, demand, parsed_args.output_dir)
        except (catalogue.UnknownName, catalogue.BoardMismatch,
                OSError) as e:
            raise exceptions.CommandError(str(e)) from e
        _log_summary(summary)
        columns = ('Card', 'Model', 'Layout Now', 'Layout Proposed',
                   'Serves')
        if parsed_args.output_dir:
            columns += ('Script',)
        data = []
        for row in rows:
            item = (row['id'], row['model'],
                    layouts.layout_text(row['current']),
                    layouts.layout_text(row['proposed']),
                    ServesColumn(row['serves']))
            if parsed_args.output_dir:
                item += (row['script'],)
            data.append(item)
        return columns, data

    def _plan_pools(self, parsed_args):
        from gpuclient.ops import profile_ops
        from gpuclient.rules import catalogue
        from gpuclient.rules import pools as pools_mod
        from gpuclient.rules.profiles import cloud as profile_cloud
        from gpuclient.rules.profiles import layouts

        usage_period = None
        if parsed_args.from_usage:
            from gpuclient.rules import usage

            # a bad period is refused before the cloud is read
            usage_period = (parsed_args.start, parsed_args.end)
            usage.period(*usage_period)
            demand = {}
        elif not parsed_args.demand:
            raise exceptions.CommandError(_(
                'Give the demand: --demand <flavor-or-profile>=<count>, '
                'e.g. --demand 3g.40gb=4, or --from-usage --start <time>.'))
        else:
            demand = common.number_values(
                '--demand', parsed_args.demand,
                _('<flavor-or-profile>=<count>'), '--demand 3g.40gb=4',
                integer=True)
        try:
            if parsed_args.model:
                catalogue.model_name(parsed_args.model)
            # the names are checked before the cloud is read
            vgpu_types = profile_cloud.vgpu_type_map(
                parsed_args.vgpu_mdev_types)
            profile_cloud.check_mig_type_names(parsed_args.mig_mdev_types)
            # the command is declared without auth (--cards reads no
            # cloud): --pool does, so the shell's auth step runs now
            self.auth_required = True
            self.app.prepare_to_run_command(self)
            rows, summary, notes = profile_ops.plan_pools(
                self.app.client_manager.gpu, parsed_args.pools, demand,
                parsed_args.model, parsed_args.mig_mdev_types,
                parsed_args.output_dir, usage_period=usage_period,
                vgpu_types=vgpu_types)
        except (catalogue.UnknownName, profile_cloud.CannotTell, ValueError,
                OSError) as e:  # profiles.vf.CannotPlan is a ValueError
            raise exceptions.CommandError(str(e)) from e
        for note in notes:
            LOG.warning(note)
        if summary.get('mode') == pools_mod.VGPU_VF:
            return _vf_rows(rows, summary, parsed_args.output_dir)
        _log_summary(summary)
        columns = ('Host', 'Card', 'Model', 'Layout Now', 'Layout Proposed',
                   'Serves', 'Servers To Move')
        if parsed_args.output_dir:
            columns += ('Script', 'Nova Conf')
        data = []
        for row in rows:
            item = (row['host'], row['address'], row['model'],
                    layouts.layout_text(row['current']),
                    layouts.layout_text(row['proposed']),
                    ServesColumn(row['serves']),
                    format_columns.ListColumn(
                        [_server_text(*server) for server in row['servers']]))
            if parsed_args.output_dir:
                item += (row['script'], row['nova_conf'])
            data.append(item)
        return columns, data


def _vf_rows(rows, summary, output_dir):
    """(columns, rows) of a vgpu-vf plan (``rules.profiles.vf.plan``)."""
    from gpuclient.rules.profiles import vf as profile_vf

    _log_demand(summary)
    LOG.warning(_('Demand met: %(met)d of %(wanted)d; cards re-typed: '
                  '%(recut)d.'), summary)
    columns = ('Host', 'Card', 'Board', 'VFs Now', 'VFs Proposed', 'Serves')
    if output_dir:
        columns += ('Script', 'Unit', 'Nova Conf')
    data = []
    for row in rows:
        item = (row['host'], row['address'], row['board'],
                profile_vf.layout_text(row['current']),
                profile_vf.layout_text(row['proposed']),
                ServesColumn(row['serves']))
        if output_dir:
            item += (row['script'], row['unit'], row['nova_conf'])
        data.append(item)
    return columns, data


def _server_text(server, name, how):
    """'<id> (<name>): <how it would leave the card>'."""
    text = '%s (%s)' % (server, name) if name else server
    return '%s: %s' % (text, how) if how else text


def _log_demand(summary):
    """Demand met per profile, on stderr."""
    for name, (wanted, offered, met) in sorted(
            summary['demand'].items()):
        LOG.warning(_('%(name)s: %(met)d of %(wanted)d met '
                      '(%(offered)d offered)'),
                    {'name': name, 'met': met, 'wanted': wanted,
                     'offered': offered})


def _log_summary(summary):
    """The summary of a plan on stderr."""
    _log_demand(summary)
    for flavor, (now, after) in sorted(summary.get('flavors', {}).items()):
        LOG.warning(_('Flavor %(flavor)s: %(now)d free now, %(after)d free '
                      'after the plan'),
                    {'flavor': flavor, 'now': now, 'after': after})
    LOG.warning(_('Demand met: %(met)d of %(wanted)d; cards re-cut: '
                  '%(recut)d; servers disturbed: %(moves)d; memory '
                  'slices left free: %(free)d.'),
                {'met': summary['met'], 'wanted': summary['wanted'],
                 'recut': summary['recut'], 'moves': summary['moves'],
                 'free': summary['stranded_slices']})
