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

"""``openstack gpu flavor create/list/show/set/unset/delete``."""

import logging

from openstackclient.identity import common as identity_common
from osc_lib import exceptions
from osc_lib.cli import format_columns
from osc_lib.cli import parseractions

from gpuclient.i18n import _
from gpuclient.v1 import common

LOG = logging.getLogger(__name__)


def show_data(flavor, reading, projects, pools, notes=()):
    """(columns, values) of one GPU flavor.

    The fields "openstack flavor show" has carry its names
    (``OS-FLV-EXT-DATA:ephemeral``, ``os-flavor-access:is_public``,
    ``access_project_ids``: None for a public flavor, as there); the GPU
    fields follow.
    """
    from gpuclient.rules import specs

    extra = flavor.get('extra_specs') or {}
    public = flavor.get('os-flavor-access:is_public', True)
    pool = reading['pool'] or ', '.join(
        specs.matching_pools(reading, pools))
    rows = (
        ('id', flavor.get('id')),
        ('name', flavor.get('name')),
        ('description', flavor.get('description')),
        ('vcpus', flavor.get('vcpus')),
        ('ram', flavor.get('ram')),
        ('disk', flavor.get('disk')),
        ('OS-FLV-EXT-DATA:ephemeral',
         flavor.get('OS-FLV-EXT-DATA:ephemeral', 0)),
        ('swap', flavor.get('swap') or 0),
        ('os-flavor-access:is_public', public),
        ('access_project_ids',
         None if public else format_columns.ListColumn(projects)),
        ('pool', pool or None),
        ('mode', reading['mode']),
        ('gpus', reading['gpus']),
        ('patterns', format_columns.ListColumn(reading['patterns'])),
        ('request', format_columns.DictColumn(specs.request_text(reading))),
        ('numa_policy', reading['numa_policy']),
        ('group_policy', reading['group_policy']),
        ('properties', format_columns.DictColumn(extra)),
        ('notes', format_columns.ListColumn(list(notes))),
    )
    return tuple(r[0] for r in rows), tuple(r[1] for r in rows)


def _add_size_options(parser):
    for flag, meta, helptext, required in (
        ('--vcpus', '<vcpus>', _('Number of vCPUs'), True),
        ('--ram', '<size-mb>', _('Memory size in MB'), True),
        ('--disk', '<size-gb>', _('Root disk size in GB (0: the image '
                                  'size, for volume-backed servers)'), True),
        ('--ephemeral', '<size-gb>', _('Ephemeral disk size in GB '
                                       '(default 0)'), False),
        ('--swap', '<size-mb>', _('Swap size in MB (default 0)'), False),
    ):
        parser.add_argument(flag, metavar=meta, type=int, required=required,
                            default=None if required else 0, help=helptext)


class CreateFlavor(common.ShowOne):
    _description = _(
        'Create a GPU flavor for a pool.\n\n'
        'The extra specs are derived from the pool (steering to its hosts, '
        'the GPU request, isolation trait), and the flavor, its extra '
        'specs and project access are created all or nothing.')

    def get_parser(self, prog_name):
        from gpuclient.rules import address_space
        from gpuclient.rules import specs

        parser = super().get_parser(prog_name)
        parser.add_argument('name', metavar='<flavor-name>',
                            help=_('New flavor name'))
        parser.add_argument('--pool', metavar='<pool>', required=True,
                            help=_('GPU pool whose GPUs the flavor asks for '
                                   '(name or aggregate ID)'))
        parser.add_argument(
            '--gpus', metavar='<count>', type=int, default=1,
            help=_('GPUs per instance (default 1). Several vGPUs become one '
                   'request group each with group_policy=isolate; MIG and '
                   'bare-metal flavors take 1'))
        _add_size_options(parser)
        parser.add_argument(
            '--numa-policy', metavar='<policy>', choices=specs.NUMA_POLICIES,
            help=_('PCI NUMA affinity policy of passthrough GPUs (%s; '
                   'default preferred). Acts only when the instance has a '
                   'NUMA topology') % ', '.join(specs.NUMA_POLICIES))
        parser.add_argument(
            '--maxphysaddr-mode', metavar='<mode>',
            choices=address_space.MODES,
            help=_('Guest physical address bits (hw:maxphysaddr_mode, Nova '
                   '2023.2 and later): passthrough (the host\'s; hosts with '
                   'COMPUTE_ADDRESS_SPACE_PASSTHROUGH) or emulate (needs '
                   '--maxphysaddr-bits; hosts with '
                   'COMPUTE_ADDRESS_SPACE_EMULATED). For several large-BAR '
                   'GPUs (H100 NVL) with much RAM, which overflow the '
                   'default 40 bits'))
        parser.add_argument(
            '--maxphysaddr-bits', metavar='<bits>', type=int,
            help=_('Guest physical address bits with --maxphysaddr-mode '
                   'emulate (hw:maxphysaddr_bits, %(low)d to %(high)d; only '
                   'hosts with at least as many are chosen)')
            % {'low': address_space.MIN_BITS,
               'high': address_space.MAX_BITS})
        public = parser.add_mutually_exclusive_group()
        public.add_argument('--public', dest='public', action='store_true',
                            default=True,
                            help=_('Flavor is available to other projects '
                                   '(default)'))
        public.add_argument('--private', dest='public',
                            action='store_false',
                            help=_('Flavor is not available to other '
                                   'projects'))
        parser.add_argument(
            '--project', metavar='<project>', action='append', default=[],
            dest='projects',
            help=_('Allow <project> to use the private flavor (name or ID; '
                   'repeat option to allow several; needs --private)'))
        identity_common.add_project_domain_option_to_parser(parser)
        parser.add_argument('--description', metavar='<description>',
                            help=_('Description of the flavor'))
        parser.add_argument(
            '--property', metavar='<key=value>',
            action=parseractions.KeyValueAction, dest='properties',
            help=_('Another extra spec to set (repeat option to set '
                   'several); refused when it contradicts the derived ones '
                   'or when Nova would reject it'))
        common.add_dry_run_arg(parser)
        return parser

    def take_action(self, parsed_args):
        from gpuclient.ops import flavor_ops
        from gpuclient.rules import specs

        client = self.app.client_manager.gpu
        flavor, projects, warnings, plan = flavor_ops.create(
            client, parsed_args.name, parsed_args.pool,
            vcpus=parsed_args.vcpus, ram=parsed_args.ram,
            disk=parsed_args.disk, ephemeral=parsed_args.ephemeral,
            swap=parsed_args.swap, gpus=parsed_args.gpus,
            numa_policy=parsed_args.numa_policy, public=parsed_args.public,
            projects=parsed_args.projects,
            project_domain=parsed_args.project_domain,
            description=parsed_args.description,
            properties=parsed_args.properties, dry_run=parsed_args.dry_run,
            maxphysaddr_mode=parsed_args.maxphysaddr_mode,
            maxphysaddr_bits=parsed_args.maxphysaddr_bits)
        for warning in warnings:
            LOG.warning(warning)
        if parsed_args.dry_run:
            return common.plan_item(plan)
        pools, _aggregates = flavor_ops.read_pools(client, required=False)
        reading = specs.read(flavor.get('extra_specs'), pools)
        return show_data(flavor, reading, projects, pools)


class ListFlavor(common.Lister):
    _description = _(
        'List GPU flavors.\n\n'
        'Every flavor whose extra specs ask for GPUs (PCI alias, VGPU, GPU '
        'resource classes, bare-metal GPU nodes, Cyborg device profiles) '
        'or steer to a GPU pool, made by gpuclient or not.')

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--pool', metavar='<pool>',
                            help=_('Only flavors of this GPU pool (name or '
                                   'aggregate ID)'))
        parser.add_argument(
            '--long', action='store_true', default=False,
            help=_('List additional fields in output (request groups and '
                   'traits, visibility, projects)'))
        return parser

    def take_action(self, parsed_args):
        from gpuclient.ops import flavor_ops
        from gpuclient.rules import specs

        found = flavor_ops.list_flavors(
            self.app.client_manager.gpu, pool=parsed_args.pool,
            long=parsed_args.long)
        columns = ('ID', 'Name', 'Pool', 'Mode', 'GPUs', 'VCPUs', 'RAM',
                   'Disk')
        if parsed_args.long:
            columns += ('Request', 'Is Public', 'Projects')
        rows = []
        for flavor, reading, in_pools, projects in found:
            row = (flavor['id'], flavor.get('name'),
                   ', '.join(p for p in in_pools if p) or None,
                   reading['mode'], reading['gpus'], flavor.get('vcpus'),
                   flavor.get('ram'), flavor.get('disk'))
            if parsed_args.long:
                row += (
                    format_columns.DictColumn(specs.request_text(reading)),
                    flavor.get('os-flavor-access:is_public', True),
                    format_columns.ListColumn(projects),
                )
            rows.append(row)
        return columns, rows


class ShowFlavor(common.ShowOne):
    _description = _(
        'Show a GPU flavor and what it asks for.\n\n'
        'Read back from its extra specs (pool, mode, GPUs per instance, '
        'request groups), with anything that would make Nova do something '
        'else.')

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('flavor', metavar='<flavor>',
                            help=_('Flavor to display (name or ID)'))
        return parser

    def take_action(self, parsed_args):
        from gpuclient.ops import flavor_ops
        from gpuclient.rules import specs

        client = self.app.client_manager.gpu
        pools, _aggregates = flavor_ops.read_pools(client, required=False)
        flavor, reading = flavor_ops.find_gpu_flavor(
            client, parsed_args.flavor, pools)
        if not reading['is_gpu']:
            raise exceptions.CommandError(
                _('Flavor %s is not a GPU flavor: its extra specs ask for '
                  'no GPU and steer to no GPU pool. Use "openstack flavor '
                  'show".') % parsed_args.flavor)
        notes = specs.problems(flavor.get('extra_specs'), reading, pools)
        return show_data(flavor, reading,
                         flavor_ops.flavor_projects(client, flavor), pools,
                         notes)


class DeleteFlavor(common.Command):
    _description = _(
        'Delete GPU flavor(s).\n\n'
        'Flavors that ask for no GPU are refused: use openstack flavor '
        'delete for them.')

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('flavors', metavar='<flavor>', nargs='+',
                            help=_('GPU flavor(s) to delete (name or ID)'))
        common.add_dry_run_arg(parser)
        return parser

    def take_action(self, parsed_args):
        from gpuclient.ops import flavor_ops

        client = self.app.client_manager.gpu
        pools, _aggregates = flavor_ops.read_pools(client, required=False)
        failed = 0
        for name in parsed_args.flavors:
            try:
                plan = flavor_ops.delete(client, name, pools,
                                         dry_run=parsed_args.dry_run)
                if parsed_args.dry_run:
                    common.write_plan(self.app, plan)
            except Exception as exc:  # noqa: BLE001 - OSC's N-of-M delete
                failed += 1
                LOG.error(_('Failed to delete flavor with name or ID '
                            '%(flavor)s: %(error)s'),
                          {'flavor': name, 'error': exc})
        if failed:
            raise exceptions.CommandError(
                _('%(failed)d of %(total)d flavors failed to delete.')
                % {'failed': failed, 'total': len(parsed_args.flavors)})


class _ChangeFlavor(common.Command):
    """``gpu flavor set`` and ``unset``: FLAVOR, their own options,
    --project (with --project-domain) and --dry-run; one call of
    flavor_ops.update with what ``changes`` reads from the options."""

    verb = None
    project_help = None

    def add_options(self, parser):
        raise NotImplementedError

    def changes(self, parsed_args):
        raise NotImplementedError

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('flavor', metavar='<flavor>',
                            help=_('GPU flavor to change (name or ID)'))
        self.add_options(parser)
        parser.add_argument(
            '--project', metavar='<project>', action='append', default=[],
            dest='projects', help=self.project_help)
        identity_common.add_project_domain_option_to_parser(parser)
        common.add_dry_run_arg(parser)
        return parser

    def take_action(self, parsed_args):
        from gpuclient.ops import flavor_ops  # noqa: PLC0415 - lazy

        plan = flavor_ops.update(
            self.app.client_manager.gpu, parsed_args.flavor,
            command=self.verb, project_domain=parsed_args.project_domain,
            dry_run=parsed_args.dry_run, **self.changes(parsed_args))
        if parsed_args.dry_run:
            common.write_plan(self.app, plan)


class SetFlavor(_ChangeFlavor):
    _description = _(
        'Set GPU flavor description, properties and project access.\n\n'
        'Only GPU flavors (use openstack flavor set for others); the extra '
        'specs gpuclient derives from the pool (steering, the GPU request, '
        'isolation and type traits, NUMA policy) are refused. All or '
        'nothing; prints nothing on success; --dry-run prints the plan.')
    verb = 'set'
    project_help = _('Allow <project> to use the private flavor (name or '
                     'ID; repeat option to allow several)')

    def add_options(self, parser):
        parser.add_argument(
            '--description', metavar='<description>',
            help=_('New description of the flavor (compute API 2.55 or '
                   'later; "" removes it)'))
        parser.add_argument(
            '--property', metavar='<key=value>',
            action=parseractions.KeyValueAction, dest='properties',
            default={},
            help=_('Extra spec to set (repeat option to set several); '
                   'refused for the ones derived from the pool and when '
                   'Nova would reject it'))

    def changes(self, parsed_args):
        return {'description': parsed_args.description,
                'properties': parsed_args.properties,
                'add_projects': parsed_args.projects}


class UnsetFlavor(_ChangeFlavor):
    _description = _(
        'Unset GPU flavor properties and project access.\n\n'
        'Only GPU flavors (use openstack flavor unset for others); the '
        'extra specs gpuclient derives from the pool are refused. All or '
        'nothing; prints nothing on success; --dry-run prints the plan.')
    verb = 'unset'
    project_help = _('Remove the access of <project> to the private flavor '
                     '(name or ID; repeat option to remove several)')

    def add_options(self, parser):
        parser.add_argument(
            '--property', metavar='<key>', action='append', default=[],
            dest='properties',
            help=_('Extra spec to remove (repeat option to remove several); '
                   'refused for the ones derived from the pool'))

    def changes(self, parsed_args):
        return {'unset': parsed_args.properties,
                'remove_projects': parsed_args.projects}
