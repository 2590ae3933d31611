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

"""``openstack gpu pool ...``: GPU pools kept as Nova host aggregates."""

import logging

from openstackclient.identity import common as identity_common
from osc_lib import exceptions
from osc_lib.cli import format_columns
from osc_lib.cli import parseractions

from gpuclient.i18n import _
from gpuclient.v1 import common

LOG = logging.getLogger(__name__)

POOL_FIELDS = (
    'name', 'mode', 'resource_class', 'alias', 'pci_id', 'vgpu_type',
    'mig_profile', 'live_migratable', 'hosts', 'isolated',
    'isolation_trait', 'type_trait', 'zone', 'projects', 'properties',
    'aggregate',
)


def pool_item(pool):
    """(fields, values) of a pool for ShowOne commands."""
    values = (
        pool['name'],
        pool['mode'],
        pool['resource_class'],
        pool.get('alias'),
        pool.get('pci_id'),
        pool.get('vgpu_type'),
        pool.get('mig_profile'),
        bool(pool.get('live_migratable')),
        format_columns.ListColumn(pool['hosts']),
        pool['isolate'],
        pool['pool_trait'] if pool['isolate'] else None,
        pool.get('type_trait'),
        pool.get('zone'),
        format_columns.ListColumn(pool.get('projects') or []),
        format_columns.DictColumn(pool.get('properties') or {}),
        pool.get('aggregate'),
    )
    return POOL_FIELDS, values


class GpusColumn(format_columns.DictColumn):
    """Per-host GPU figures: a dict of dicts in JSON/YAML, one line per
    host (total, used, free; held_by_blazar where Blazar holds it) in a
    table."""

    def human_readable(self):
        lines = []
        for host, figures in sorted((self._value or {}).items()):
            line = _('%(host)s: total %(total)d, used %(used)d, free '
                     '%(free)d') % dict(figures, host=host)
            if figures.get('held_by_blazar'):
                line += _(', held by Blazar (%s): not available to '
                          'ordinary flavors') % '; '.join(
                              figures['held_by_blazar'])
            lines.append(line)
        return '\n'.join(lines)


class DriftColumn(format_columns.ListColumn):
    """Drift findings: a list of dicts in JSON/YAML, one sentence per
    finding in a table."""

    def human_readable(self):
        from gpuclient.rules import pools

        return '\n'.join(pools.drift_text(f) for f in self._value or [])


def _add_pool_arg(parser, nargs=None):
    parser.add_argument(
        'pool', metavar='<pool>', nargs=nargs,
        help=_('GPU pool (name or aggregate ID)') if nargs is None else _(
            'GPU pool(s) to delete (name or aggregate ID)'))


def _add_property_arg(parser, help_text):
    parser.add_argument(
        '--property', metavar='<key=value>', dest='properties',
        action=parseractions.KeyValueAction, default={}, help=help_text)


def _add_project_arg(parser, help_text):
    parser.add_argument(
        '--project', metavar='<project>', dest='projects', action='append',
        default=[], help=help_text)
    identity_common.add_project_domain_option_to_parser(parser)


class CreatePool(common.ShowOne):
    _description = _(
        'Create a GPU pool.\n\n'
        'A Nova host aggregate whose metadata records what the pool hands '
        'out, with its hosts, optional isolation and project limits. All '
        'or nothing; re-running the same create finishes an interrupted '
        'one and otherwise changes nothing.')

    def get_parser(self, prog_name):
        from gpuclient.rules import pools

        parser = super().get_parser(prog_name)
        parser.add_argument('name', metavar='<name>',
                            help=_('New pool name (also the aggregate '
                                   'name)'))
        parser.add_argument(
            '--mode', metavar='<mode>', required=True,
            choices=pools.MODES,
            help=_('How the pool hands out GPUs: passthrough, vgpu, mig, '
                   'baremetal or vgpu-vf (vGPU on SR-IOV virtual functions, '
                   'Nova 2025.1+) (required)'))
        parser.add_argument(
            '--alias', metavar='<alias>',
            help=_('passthrough, vgpu-vf: the [pci] alias flavors ask for '
                   '(as in nova.conf, e.g. h100; for vgpu-vf a type-VF '
                   'alias, e.g. l40s-24q)'))
        parser.add_argument(
            '--pci-id', metavar='<vendor:product>',
            help=_('passthrough: PCI vendor and product id, e.g. '
                   '10de:2331; vgpu-vf: the VFs\' id, e.g. 10de:26b9'))
        parser.add_argument(
            '--vgpu-type', metavar='<type>',
            help=_('vgpu: the mdev type of the pool\'s pGPUs, e.g. '
                   'nvidia-35 (tagged on them as trait CUSTOM_<TYPE>); '
                   'vgpu-vf: NVIDIA\'s vGPU type written to the VFs, e.g. '
                   'L40S-24Q (class CUSTOM_VGPU_<TYPE> unless '
                   '--resource-class)'))
        parser.add_argument(
            '--live-migratable', action='store_true',
            help=_('passthrough, vgpu-vf: the devices are '
                   '"live_migratable" in [pci] device_spec and alias, so '
                   'gpu host drain may live-migrate their servers'))
        parser.add_argument(
            '--mig-profile', metavar='<profile>',
            help=_('mig: the MIG profile of the slices, e.g. 3g.40gb '
                   '(tagged as trait CUSTOM_MIG_<PROFILE>)'))
        parser.add_argument(
            '--resource-class', metavar='<resource-class>',
            help=_('baremetal (required): the nodes\' resource class, e.g. '
                   'baremetal.gpu-h100; passthrough, vgpu-vf: the class set '
                   'in [pci] device_spec; vgpu/mig: a per-type class from '
                   '[mdev_<type>] mdev_class (then no type trait is used)'))
        parser.add_argument(
            '--zone', metavar='<availability-zone>',
            help=_('Availability zone of the pool\'s hosts'))
        parser.add_argument(
            '--host', metavar='<host>', dest='hosts', action='append',
            default=[],
            help=_('Compute host to add, as "openstack compute service '
                   'list" names it, or its hypervisor hostname or a '
                   'resource provider name or UUID of its tree (repeat '
                   'option to add several)'))
        parser.add_argument(
            '--isolate', action='store_true',
            help=_('Keep flavors that do not ask for this pool off its '
                   'hosts (trait CUSTOM_GPU_POOL_<NAME> on the hosts and '
                   'required by the aggregate; needs [scheduler] '
                   'enable_isolated_aggregate_filtering)'))
        _add_project_arg(
            parser, _('Only this project may use the pool\'s hosts (name or '
                      'ID; repeat option for several; needs the '
                      'AggregateMultiTenancyIsolation filter)'))
        _add_property_arg(
            parser, _('Other aggregate metadata to set (repeat option to '
                      'set several)'))
        common.add_dry_run_arg(parser)
        return parser

    def take_action(self, parsed_args):
        from gpuclient.ops import pool_ops
        from gpuclient.rules import pools

        client = self.app.client_manager.gpu
        spec = pools.build_spec(
            parsed_args.name, parsed_args.mode, alias=parsed_args.alias,
            pci_id=parsed_args.pci_id, vgpu_type=parsed_args.vgpu_type,
            mig_profile=parsed_args.mig_profile,
            resource_class=parsed_args.resource_class,
            isolate=parsed_args.isolate, zone=parsed_args.zone,
            properties=parsed_args.properties,
            live_migratable=parsed_args.live_migratable)
        pool, plan = pool_ops.create(
            client, spec, parsed_args.hosts, dry_run=parsed_args.dry_run,
            projects=parsed_args.projects,
            project_domain=parsed_args.project_domain)
        if parsed_args.dry_run:
            return common.plan_item(plan)
        if not plan:
            LOG.warning(_('Pool %s already exists with these settings: '
                          'nothing changed.'), pool['name'])
        return pool_item(pool)


class ListPool(common.Lister):
    _description = _(
        'List GPU pools.\n\n'
        'GPU pools are the host aggregates that carry gpu_pool metadata; '
        'ordinary aggregates are not shown.')

    def get_parser(self, prog_name):
        from gpuclient.rules import pools

        parser = super().get_parser(prog_name)
        parser.add_argument(
            '--mode', metavar='<mode>', choices=pools.MODES,
            help=_('Only pools of this mode (%s)') % ', '.join(pools.MODES))
        parser.add_argument(
            '--long', action='store_true',
            help=_('List additional fields in output (GPU totals, '
                   'projects)'))
        return parser

    def take_action(self, parsed_args):
        from gpuclient.ops import pool_ops
        from gpuclient.rules import pools

        selected, rows = pool_ops.list_pools(
            self.app.client_manager.gpu, mode=parsed_args.mode,
            long=parsed_args.long)
        columns = ('Name', 'Mode', 'Device', 'Hosts', 'Isolated', 'Zone')
        if parsed_args.long:
            columns += ('GPUs Total', 'GPUs Used', 'GPUs Free', 'Projects')
        data = []
        for pool in selected:
            item = (
                pool['name'], pool['mode'], pools.device(pool),
                format_columns.ListColumn(pool['hosts']), pool['isolate'],
                pool.get('zone'),
            )
            if parsed_args.long:
                figures = pools.gpu_figures(rows, pool).values()
                item += (
                    sum(f['total'] for f in figures),
                    sum(f['used'] for f in figures),
                    sum(f['free'] for f in figures),
                    format_columns.ListColumn(pool['projects']),
                )
            data.append(item)
        return columns, data


class ShowPool(common.ShowOne):
    _description = _(
        'Show a GPU pool.\n\n'
        'Its settings, member hosts with their GPU figures (total, used, '
        'free), its GPU flavors, and where the cloud has drifted from what '
        'the pool says (each finding with the command that repairs it). '
        'Where the cloud runs Blazar, hosts it holds say so. '
        'For an isolated pool, the limits of isolation are printed on '
        'stderr.')

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        _add_pool_arg(parser)
        return parser

    def take_action(self, parsed_args):
        from gpuclient.ops import pool_ops
        from gpuclient.rules import pools

        shown = pool_ops.show(self.app.client_manager.gpu,
                              parsed_args.pool)
        pool = shown['pool']
        if pool['isolate']:
            LOG.warning(pools.ISOLATION_LIMITS)
        columns, values = pool_item(pool)
        columns += ('gpus', 'flavors', 'drift')
        values += (
            GpusColumn(shown['gpus']),
            format_columns.ListColumn(shown['flavors']),
            DriftColumn(shown['drift']),
        )
        return columns, values


class SetPool(common.Command):
    _description = _(
        'Set GPU pool isolation, projects, properties and zone.\n\n'
        '--isolate on an isolated pool repairs members that lack the '
        'trait. --zone is refused before any write when a member host is '
        'in another zone\'s aggregate or has instances in another zone. '
        'A change that would break flavors or images (isolation '
        'on or off, a property flavors steer on) is refused with their '
        'list unless --update-dependents changes them too. Prints nothing '
        'on success; --dry-run prints the plan.')

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        _add_pool_arg(parser)
        group = parser.add_mutually_exclusive_group()
        group.add_argument(
            '--isolate', dest='isolate', action='store_true', default=None,
            help=_('Isolate the pool (or repair its isolation): put its '
                   'trait on every member host and require it on the '
                   'aggregate'))
        group.add_argument(
            '--no-isolate', dest='isolate', action='store_false',
            help=_('Stop isolating the pool: take the requirement and the '
                   'trait off again'))
        _add_project_arg(
            parser, _('Add a project that may use the pool (name or ID; '
                      'repeat option for several)'))
        _add_property_arg(
            parser, _('Property to set on the pool\'s aggregate (repeat '
                      'option to set several)'))
        parser.add_argument(
            '--zone', metavar='<availability-zone>',
            help=_('Put the pool\'s hosts in this availability zone (set or '
                   'changed; Nova takes no zone off an aggregate, so a '
                   'first zone is not undone on failure)'))
        parser.add_argument(
            '--allow-public-flavors', action='store_true', default=False,
            help=_('Allow limiting an open pool to projects while it has '
                   'public flavors (other projects keep seeing them and get '
                   '"No valid host"); without it, that is refused with the '
                   'commands that re-create them private'))
        common.add_update_dependents_arg(parser)
        common.add_dry_run_arg(parser)
        return parser

    def take_action(self, parsed_args):
        from gpuclient.ops import pool_ops

        client = self.app.client_manager.gpu
        _pool, plan = pool_ops.set_pool(
            client, parsed_args.pool, isolate=parsed_args.isolate,
            projects_add=parsed_args.projects,
            project_domain=parsed_args.project_domain,
            properties=parsed_args.properties,
            update_dependents=parsed_args.update_dependents,
            allow_public_flavors=parsed_args.allow_public_flavors,
            zone=parsed_args.zone, dry_run=parsed_args.dry_run)
        if parsed_args.dry_run:
            common.write_plan(self.app, plan)


class UnsetPool(common.Command):
    _description = _(
        'Unset GPU pool projects and properties.\n\n'
        'Removing the last project of a limited pool opens it to every '
        'project: that needs --open-to-all. Removing a property that '
        'flavors steer on is refused with their list unless '
        '--update-dependents changes them too. Prints nothing on success; '
        '--dry-run prints the plan.')

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        _add_pool_arg(parser)
        _add_project_arg(
            parser, _('Project to remove from the pool (name or ID; repeat '
                      'option for several)'))
        parser.add_argument(
            '--property', metavar='<key>', dest='properties',
            action='append', default=[],
            help=_('Property to remove from the pool\'s aggregate (repeat '
                   'option to remove several)'))
        parser.add_argument(
            '--open-to-all', action='store_true', default=False,
            help=_('Allow removing the last project, which opens the pool '
                   'to every project'))
        common.add_update_dependents_arg(parser)
        common.add_dry_run_arg(parser)
        return parser

    def take_action(self, parsed_args):
        from gpuclient.ops import pool_ops

        client = self.app.client_manager.gpu
        _pool, plan = pool_ops.update_metadata(
            client, parsed_args.pool,
            projects_remove=parsed_args.projects,
            project_domain=parsed_args.project_domain,
            remove_properties=parsed_args.properties,
            open_to_all=parsed_args.open_to_all,
            update_dependents=parsed_args.update_dependents,
            dry_run=parsed_args.dry_run)
        if parsed_args.dry_run:
            common.write_plan(self.app, plan)


class _HostsCommand(common.ShowOne):
    """pool add host / remove host: POOL HOST [HOST ...]."""

    hosts_help = None
    operation = None  # the name of the pool_ops function to call

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        _add_pool_arg(parser)
        parser.add_argument('hosts', metavar='<host>', nargs='+',
                            help=self.hosts_help)
        common.add_dry_run_arg(parser)
        return parser

    def options(self, parsed_args):
        """The keyword arguments of the command's own options."""
        return {}

    def take_action(self, parsed_args):
        from gpuclient.ops import pool_ops

        pool, plan = getattr(pool_ops, self.operation)(
            self.app.client_manager.gpu, parsed_args.pool, parsed_args.hosts,
            dry_run=parsed_args.dry_run, **self.options(parsed_args))
        if parsed_args.dry_run:
            return common.plan_item(plan)
        return pool_item(pool)


class AddHostPool(_HostsCommand):
    _description = _(
        'Add compute hosts to a GPU pool.\n\n'
        'Aggregate membership, isolation trait and vGPU type traits (only '
        'on pGPUs that serve no other type), all or nothing; re-running '
        'repairs a member that lost its traits.')
    hosts_help = _('Compute host(s) to add, as "openstack compute service '
                   'list" names them, or their hypervisor hostnames or '
                   'resource provider names or UUIDs')
    operation = 'add_hosts'


class RemoveHostPool(_HostsCommand):
    _description = _(
        'Remove compute hosts from a GPU pool.\n\n'
        'Takes off only the traits this pool recorded putting there. '
        'Refused while a host runs servers whose flavor steers to this '
        'pool only (they would keep running on a host their flavor no '
        'longer matches): move them first with "openstack gpu host '
        'drain", or use --allow-servers.')
    hosts_help = _('Compute host(s) to remove (compute host, hypervisor '
                   'hostname or resource provider name or UUID)')
    operation = 'remove_hosts'

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            '--allow-servers', action='store_true', default=False,
            help=_('Remove the hosts even while they run servers whose '
                   'flavor steers to this pool only: the servers keep '
                   'running, but on a host their flavor no longer matches '
                   '(default: refuse, naming them)'))
        return parser

    def options(self, parsed_args):
        return {'allow_servers': parsed_args.allow_servers}


class DeletePool(common.Command):
    _description = _(
        'Delete GPU pool(s).\n\n'
        'Refused while flavors or images depend on the pool (they are '
        'listed with the command that fixes them).')

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        _add_pool_arg(parser, nargs='+')
        parser.add_argument(
            '--force', action='store_true',
            help=_('Remove the pool\'s hosts (and the traits it put on '
                   'them) first; refused while a host runs servers whose '
                   'flavor steers to this pool only'))
        parser.add_argument(
            '--allow-servers', action='store_true', default=False,
            help=_('With --force, remove the hosts even while they run '
                   'servers whose flavor steers to this pool only: the '
                   'servers keep running, on a host their flavor no longer '
                   'matches (default: refuse, naming them)'))
        common.add_dry_run_arg(parser)
        return parser

    def take_action(self, parsed_args):
        from gpuclient.ops import pool_ops

        client = self.app.client_manager.gpu
        failures = 0
        for index, name in enumerate(parsed_args.pool):
            try:
                plan = pool_ops.delete(
                    client, name, force=parsed_args.force,
                    dry_run=parsed_args.dry_run,
                    allow_servers=parsed_args.allow_servers)
            except Exception as exc:  # noqa: BLE001 - OSC's N-of-M delete
                failures += 1
                LOG.error(_('Failed to delete pool %(name)s: %(error)s'),
                          {'name': name, 'error': exc})
                if pool_ops.interrupted(exc):
                    # the operator asked to stop: the rest is not tried
                    rest = parsed_args.pool[index + 1:]
                    if rest:
                        LOG.error(_('Not tried, as the command was '
                                    'interrupted: %s'), ', '.join(rest))
                    failures += len(rest)
                    break
                continue
            if parsed_args.dry_run:
                common.write_plan(self.app, plan)
        if failures:
            total = len(parsed_args.pool)
            raise exceptions.CommandError(
                _('%(failures)s of %(total)s pools failed to delete.')
                % {'failures': failures, 'total': total})
