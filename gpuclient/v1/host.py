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

"""``openstack gpu host list``."""

import logging

from osc_lib.cli import format_columns

from gpuclient.i18n import _
from gpuclient.v1 import common

LOG = logging.getLogger(__name__)


class ListHost(common.Lister):
    _description = _(
        'List compute hosts that offer GPUs.\n\n'
        'One row per host and GPU class, with GPU figures (total, used, '
        'free) as Placement counts them: the total is the capacity, '
        'total minus reserved times allocation_ratio. Bare-metal '
        '(Ironic) classes count nodes: total the nodes, used those in '
        'use, free the available ones; with --long, Unavailable counts '
        'the nodes the ironic driver reserved (maintenance, cleaning, not '
        'available in Ironic) and Node States names each node\'s state.'
    )

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            '--pool',
            metavar='<pool>',
            help=_('Only hosts in this GPU pool (name)'),
        )
        parser.add_argument(
            '--resource-class',
            metavar='<resource-class>',
            action='append',
            default=[],
            dest='resource_classes',
            help=_(
                'Also count this resource class as a GPU class, e.g. an '
                'Intel GPU class or CUSTOM_BAREMETAL_GPU (repeat option to '
                'add several). Defaults: VGPU, PGPU, NVIDIA and AMD PCI '
                'classes (CUSTOM_PCI_10DE_<product>, '
                'CUSTOM_PCI_1002_<product>), custom classes with GPU in '
                'their name and the classes of GPU pools.'
            ),
        )
        parser.add_argument(
            '--unmapped',
            action='store_true',
            help=_(
                'Also list GPU provider trees that no Nova hypervisor maps '
                'to (for example providers left behind by a deleted '
                'compute service), named by their root provider'
            ),
        )
        parser.add_argument(
            '--long',
            action='store_true',
            help=_('List additional fields in output (device providers '
                   'and their traits; for bare-metal classes the nodes '
                   'the ironic driver reserved and each node\'s state, '
                   'from Ironic when the token may list its nodes)'),
        )
        return parser

    def take_action(self, parsed_args):
        from gpuclient.ops import host_ops

        rows, notes = host_ops.collect(
            self.app.client_manager.gpu,
            pool=parsed_args.pool,
            resource_classes=parsed_args.resource_classes,
            unmapped=parsed_args.unmapped,
            long=parsed_args.long,
        )
        for note in notes:
            LOG.warning(note)
        columns = (
            'Host',
            'Pools',
            'Resource Class',
            'Devices',
            'Total',
            'Used',
            'Free',
        )
        if parsed_args.long:
            columns += ('Device Providers', 'Traits', 'Unavailable',
                        'Node States')
        data = []
        for row in rows:
            item = (
                row['host'],
                format_columns.ListColumn(row['pools']),
                row['resource_class'],
                row['devices'],
                row['total'],
                row['used'],
                row['free'],
            )
            if parsed_args.long:
                item += (
                    format_columns.ListColumn(row['providers']),
                    format_columns.DictListColumn(row['traits']),
                    row['unavailable'] if row['nodes'] else None,
                    format_columns.ListColumn(row['node_states']),
                )
            data.append(item)
        return columns, data
