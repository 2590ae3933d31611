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

from osc_lib.cli import format_columns

from gpuclient.i18n import _
from gpuclient.v1 import common

LOG = logging.getLogger(__name__)

COLUMNS = ('ID', 'Name', 'Project', 'Status', 'Host', 'Pool', 'Mode',
           'Resource Class', 'GPUs', 'Devices', 'Flavor', 'Since')
LONG_COLUMNS = ('Device Providers',)
UTILISATION_COLUMNS = ('Source', 'Mean Util %', 'Peak Util %',
                       'FB Used MiB', 'State', 'Shared By')
DIGITS = 1  # utilisation figures: a tenth of a percent, of a MiB


class ListServer(common.Lister):
    _description = _(
        'List servers that hold GPUs, and which devices.\n\n'
        'One row per server: its host, pool, mode, the resource class and '
        'number of GPUs it holds, and the devices (PCI address, pGPU, MIG '
        'slice or bare-metal node), from the providers of its Placement '
        'allocation; the flavor is the one embedded in the server. Lists '
        'the current project\'s servers, as "openstack server list" does; '
        'an admin adds --all-projects for every project or --project for '
        'another one. A member sees only their own project\'s servers, '
        'with the GPUs their flavors ask for (no hosts or devices). Needs '
        'compute API 2.47 (embedded flavors).')

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            '--pool', metavar='<pool>',
            help=_('Only servers whose GPUs come from this GPU pool (name or '
                   'aggregate ID)'))
        parser.add_argument(
            '--host', metavar='<host>',
            help=_('Only servers on this compute host, as "openstack '
                   'compute service list" names it, or its hypervisor '
                   'hostname or a resource provider name or UUID of its '
                   'tree (admin)'))
        common.add_all_projects_arg(parser, _('servers'))
        common.add_project_args(parser, _('servers'), every_project=False)
        parser.add_argument(
            '--long', action='store_true', default=False,
            help=_('List additional fields in output (the UUIDs of the '
                   'resource providers the GPUs are allocated from)'))
        common.add_utilisation_args(parser, server_list=True)
        return parser

    def take_action(self, parsed_args):
        from gpuclient.ops import server_ops

        utilisation = common.utilisation_args(parsed_args)
        if utilisation:
            common.use_prometheus_selector(self.app.client_manager.gpu,
                                           parsed_args)
        rows, notes = server_ops.collect(
            self.app.client_manager.gpu, project=parsed_args.project,
            project_domain=parsed_args.project_domain,
            all_projects=parsed_args.all_projects, host=parsed_args.host,
            pool=parsed_args.pool, utilisation=utilisation)
        for note in notes:
            LOG.warning(note)
        columns = COLUMNS + (LONG_COLUMNS if parsed_args.long else ())
        if utilisation:
            columns += UTILISATION_COLUMNS
        data = []
        for row in rows:
            item = (row['id'], row['name'], row['project'], row['status'],
                    row['host'], row['pool'], row['mode'],
                    row['resource_class'], row['gpus'],
                    format_columns.ListColumn(row['devices']),
                    row['flavor'], row['since'])
            if parsed_args.long:
                item += (format_columns.ListColumn(row['providers']),)
            if utilisation:
                item += (row['source'], _rounded(row['mean']),
                         _rounded(row['peak']), _rounded(row['fb_used']),
                         row['state'], row['shared_by'])
            data.append(item)
        return columns, data


def _rounded(value):
    return None if value is None else round(value, DIGITS)
