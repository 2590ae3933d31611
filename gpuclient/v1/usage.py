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

"""``openstack gpu usage list``."""

import logging

from gpuclient.i18n import _
from gpuclient.v1 import common

LOG = logging.getLogger(__name__)

DIGITS = 4  # GPU-hours and cost: to the third of a second of one GPU


class ListUsage(common.Lister):
    _description = _(
        'List GPU-hours per project, pool, flavor or class.\n\n'
        'From Nova\'s server usage (os-simple-tenant-usage), which keeps '
        'servers deleted during the period, times the GPUs each server\'s '
        'embedded flavor asks for (so flavor edits do not rewrite '
        'history); for vGPU and MIG pools, the licence seats: the peak '
        'number of vGPU servers running at once. --rate adds a cost '
        'column; -f csv gives a billing file. The period is the last four '
        'weeks unless --start or --end say otherwise. An admin sees every '
        'project, as with "openstack usage list"; a member sees their '
        'own. Needs compute API 2.47.')

    def get_parser(self, prog_name):
        from gpuclient.rules import usage

        parser = super().get_parser(prog_name)
        parser.add_argument(
            '--start', metavar='<time>',
            help=_('Start of the period: ISO 8601 time or date, UTC unless '
                   'an offset is given (e.g. 2026-11-01 or '
                   '2026-11-01T08:00:00Z; default: four weeks before the '
                   'end, as "openstack usage list")'))
        parser.add_argument(
            '--end', metavar='<time>',
            help=_('End of the period (as --start; default: now)'))
        common.add_project_args(parser, _('usage'))
        parser.add_argument(
            '--pool', metavar='<pool>',
            help=_('Only GPUs of this GPU pool (name or aggregate ID)'))
        parser.add_argument(
            '--by', metavar='<key>', action='append',
            choices=sorted(usage.BY_KEYS),
            help=_('Group rows by project, pool, flavor or class (repeat '
                   'option to group by several; default: project and '
                   'pool). Each key is a column'))
        common.add_key_value_arg(
            parser, '--rate', '<class>=<price>', 'rates', 'VGPU=0.40',
            _('Price of one GPU-hour of a resource class, e.g. '
              'VGPU=0.40 (repeat option for several classes; a class '
              'given twice keeps its last price): adds a Cost column'))
        common.add_utilisation_args(parser)
        return parser

    def take_action(self, parsed_args):
        from gpuclient.ops import usage_ops
        from gpuclient.rules import usage

        rates = common.number_values(
            '--rate', parsed_args.rates,
            _('<resource class>=<price per GPU-hour>'),
            '--rate VGPU=0.40 or --rate CUSTOM_PCI_10DE_2331=2.5')
        utilisation = common.utilisation_args(parsed_args)
        if utilisation:
            common.use_prometheus_selector(self.app.client_manager.gpu,
                                           parsed_args)
        by, rows, notes = usage_ops.collect(
            self.app.client_manager.gpu, start=parsed_args.start,
            end=parsed_args.end, project=parsed_args.project,
            project_domain=parsed_args.project_domain,
            pool=parsed_args.pool, by=parsed_args.by,
            rates=rates, utilisation=utilisation)
        for note in notes:
            LOG.warning(note)
        columns = tuple(usage.BY_KEYS[k] for k in by) + (
            'Servers', 'GPU Hours', 'Peak Seats')
        if utilisation:
            columns += ('Used GPU Hours', 'Idle GPU Hours',
                        'Unknown GPU Hours')
        if parsed_args.rates:
            columns += ('Cost',)
        data = []
        for row in rows:
            item = tuple(row['keys'][k] for k in by) + (
                row['servers'], round(row['gpu_hours'], DIGITS),
                row['seats'])
            if utilisation:
                item += tuple(round(row[k], DIGITS) for k in (
                    'used_gpu_hours', 'idle_gpu_hours', 'unknown_gpu_hours'))
            if parsed_args.rates:
                item += (round(row['cost'], DIGITS),)
            data.append(item)
        return columns, data
