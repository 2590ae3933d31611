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

"""``openstack gpu server list``."""

import logging

from osc_lib import exceptions
from osc_lib.cli import format_columns
from osc_lib.command import command

from gpuclient.cloud import errors
from gpuclient.i18n import _
from gpuclient.ops import snapshot
from gpuclient.rules import pools as pools_mod
from gpuclient.rules import usage

LOG = logging.getLogger(__name__)

COLUMNS = ('ID', 'Name', 'Project', 'Status', 'Host', 'Pool', 'Mode',
           'Resource Class', 'GPUs', 'Devices', 'Flavor', 'Since')
LONG_COLUMNS = ('Device Providers',)


def add_project_args(parser, what):
    """--project and --project-domain of the read commands."""
    parser.add_argument(
        '--project', metavar='<project>',
        help=_('Only %s of this project (name or ID). Default: every '
               'project for an admin, your own project otherwise') % what)
    from openstackclient.identity import common as identity_common

    identity_common.add_project_domain_option_to_parser(parser)


def target_project(client, parsed_args):
    """(project id or None, own project id): None is "every project"."""
    own_id, own_name = client.current_project()
    wanted = parsed_args.project
    if not wanted:
        return None, own_id
    if wanted in (own_id, own_name) and not parsed_args.project_domain:
        return own_id, own_id
    try:
        return client.project_id(wanted, parsed_args.project_domain), own_id
    except errors.APIError as exc:
        if exc.status == 403:
            raise not_yours(wanted, own_name) from exc
        raise


def not_yours(project, own_name):
    return exceptions.CommandError(
        _('You may only see your own project (%(own)s), not %(project)s: '
          'Nova lets only admins read other projects\' servers and usage. '
          'Drop --project, or use an account with the admin role.')
        % {'own': own_name, 'project': project})


def forbidden(exc):
    return isinstance(exc, errors.APIError) and exc.status == 403


def _used_gpu_providers(cloud, roots=None):
    """GPU providers with usage (in the trees of ROOTS, when given)."""
    snap = cloud.placement
    found = []
    for uuid, summary in snap.summaries.items():
        if roots is not None and snap.providers[uuid]['root'] not in roots:
            continue
        for rc, item in (summary.get('resources') or {}).items():
            if rc in cloud.gpu_classes and item.get('used'):
                found.append(uuid)
                break
    return sorted(found)


def collect(client, parsed_args):
    """(rows, notes): what ``gpu server list`` shows.

    Admin: the cloud snapshot (a fixed number of requests), the servers
    of every project (or one) with their embedded flavors (paged), and
    the allocations of the GPU providers that have usage (one request
    per used GPU provider, concurrently; never one per server). Member:
    the own project's servers only, GPUs from their embedded flavors.
    """
    project_id, own_id = target_project(client, parsed_args)
    notes = []
    try:
        cloud = snapshot.read(client, mapped_only=True, with_traits=False)
    except exceptions.CommandError as exc:
        if not forbidden(exc):
            raise
        cloud = None
    if cloud is None:
        if project_id not in (None, own_id):
            raise not_yours(parsed_args.project, own_id)
        if parsed_args.host:
            raise exceptions.CommandError(_(
                '--host needs admin: Nova shows hosts to admins only. Drop '
                '--host, or use an account with the admin role.'))
        servers = client.compute.servers_detail()
        notes.append(_(
            'Showing your project\'s servers only, with the GPUs their '
            'flavors ask for: hosts, pools and devices need admin (Nova '
            'hides hosts, Placement allocations are admin-only).'))
        rows = usage.server_rows(servers, None, host=None,
                                 pool=parsed_args.pool)
        return rows, notes
    for _agg, _pool, message in cloud.problems:
        notes.append(message)
    roots = None
    host = None
    if parsed_args.pool and parsed_args.pool not in cloud.pools:
        raise pools_mod.unknown_pool(parsed_args.pool, cloud.pools)
    host_roots = cloud.host_roots()
    if parsed_args.host:
        found, resolved = cloud.resolve_hosts([parsed_args.host])
        host = found[0]
        notes += resolved
        roots = set(host_roots.get(host, ()))
    if parsed_args.pool:
        pool_roots = set()
        for member in cloud.pools[parsed_args.pool]['hosts']:
            pool_roots |= host_roots.get(member, set())
        roots = pool_roots if roots is None else roots & pool_roots
    servers = client.compute.servers_detail(
        all_projects=project_id != own_id, project_id=project_id
        if project_id != own_id else None)
    allocations = client.placement.providers_allocations(
        _used_gpu_providers(cloud, roots))
    rows = usage.server_rows(servers, cloud, allocations, host=host,
                             pool=parsed_args.pool)
    notes += cloud.placement.notes()
    return rows, notes


class ListServer(command.Lister):
    _description = _(
        'List servers that hold GPUs, and which devices.\n\n'
        'One row per server: its host, pool, mode, the resource class and '
        'number of GPUs it holds, and the devices (PCI address, pGPU, MIG '
        'slice or bare-metal node), from the providers of its Placement '
        'allocation; the flavor is the one embedded in the server. An '
        'admin sees every project; a member sees their own project\'s '
        'servers, with the GPUs their flavors ask for. Needs compute API '
        '2.47 (embedded flavors).')

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            '--pool', metavar='<pool>',
            help=_('Only servers whose GPUs come from this GPU pool (name)'))
        parser.add_argument(
            '--host', metavar='<host>',
            help=_('Only servers on this compute host, as "openstack '
                   'compute service list" names it, or its hypervisor '
                   'hostname or a resource provider name or UUID of its '
                   'tree (admin)'))
        add_project_args(parser, _('servers'))
        parser.add_argument(
            '--long', action='store_true', default=False,
            help=_('List additional fields in output (the UUIDs of the '
                   'resource providers the GPUs are allocated from)'))
        return parser

    def take_action(self, parsed_args):
        rows, notes = collect(self.app.client_manager.gpu, parsed_args)
        for note in notes:
            LOG.warning(note)
        columns = COLUMNS + (LONG_COLUMNS if parsed_args.long else ())
        data = []
        for row in rows:
            item = (row['id'], row['name'], row['project'], row['status'],
                    row['host'], row['pool'], row['mode'],
                    row['resource_class'], row['gpus'],
                    format_columns.ListColumn(row['devices']),
                    row['flavor'], row['since'])
            if parsed_args.long:
                item += (format_columns.ListColumn(row['providers']),)
            data.append(item)
        return columns, data
