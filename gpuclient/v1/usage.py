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

import datetime
import logging

from osc_lib import exceptions
from osc_lib.command import command

from gpuclient.i18n import _
from gpuclient.rules import pools as pools_mod
from gpuclient.rules import usage
from gpuclient.v1 import server as server_cmd

LOG = logging.getLogger(__name__)

DIGITS = 4  # GPU-hours and cost: to the third of a second of one GPU


def _nova_iso(when):
    return when.strftime('%Y-%m-%dT%H:%M:%SZ')


def collect(client, parsed_args, now=None):
    """(rows, notes): GPU-hours over the period, grouped.

    Requests, whatever the number of servers: host aggregates (pools;
    refused to a member, who then sees their own project), Nova's server
    usage for the period (paged), the servers with their embedded
    flavors (paged), the servers changed since the start (deleted ones,
    paged) only when the usage names servers the first list lacks, and
    the flavor list only when Nova no longer lists some server at all.
    """
    start = usage.parse_time(parsed_args.start, '--start')
    end = (usage.parse_time(parsed_args.end, '--end') if parsed_args.end
           else (now or datetime.datetime.now(datetime.timezone.utc)
                 ).replace(tzinfo=None))
    usage.check_period(start, end)
    rates = usage.parse_rates(parsed_args.rates) if parsed_args.rates \
        else None
    by = []
    for key in parsed_args.by or usage.DEFAULT_BY:
        if key not in by:
            by.append(key)
    project_id, own_id = server_cmd.target_project(client, parsed_args)
    notes = []
    try:
        aggregates = client.compute.aggregates()
    except exceptions.CommandError as exc:
        if not server_cmd.forbidden(exc):
            raise
        aggregates = None
    if aggregates is None:
        # a member: their own project, pools named by the flavors only
        if project_id not in (None, own_id):
            raise server_cmd.not_yours(parsed_args.project, own_id)
        pools = {}
        project_id = own_id
        usages = client.compute.server_usages(start, end, own_id)
        all_projects = False
    else:
        pools, problems = pools_mod.scan(aggregates)
        notes += [message for _agg, _pool, message in problems]
        if parsed_args.pool and parsed_args.pool not in pools:
            raise pools_mod.unknown_pool(parsed_args.pool, pools)
        usages = client.compute.server_usages(start, end, project_id)
        all_projects = project_id != own_id
    listed = {}
    wanted = {u.get('instance_id') for u in usages}
    if wanted:
        query = {'all_projects': all_projects,
                 'project_id': project_id if all_projects else None}
        for server in client.compute.servers_detail(**query):
            listed[server['id']] = server
        if wanted - set(listed):
            for server in client.compute.servers_detail(
                    changes_since=_nova_iso(start), **query):
                listed.setdefault(server['id'], server)
    flavors = None
    if wanted - set(listed):
        flavors = {f.get('name'): f for f in client.compute.flavors()}
    items, more = usage.usage_items(usages, listed, start, end, pools,
                                    flavors)
    notes += more
    rows, more = usage.usage_rows(items, by, rates, parsed_args.pool)
    notes += more
    return by, rows, notes


class ListUsage(command.Lister):
    _description = _(
        'List GPU-hours per project, pool, flavor or class.\n\n'
        'From Nova\'s server usage (os-simple-tenant-usage), which keeps '
        'servers deleted during the period, times the GPUs each server\'s '
        'embedded flavor asks for (so flavor edits do not rewrite '
        'history); for vGPU and MIG pools, the licence seats: the peak '
        'number of vGPU servers running at once. --rate adds a cost '
        'column; -f csv gives a billing file. An admin sees every project; '
        'a member sees their own. Needs compute API 2.47.')

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            '--start', metavar='<time>', required=True,
            help=_('Start of the period: ISO 8601 time or date, UTC unless '
                   'an offset is given (e.g. 2026-11-01 or '
                   '2026-11-01T08:00:00Z)'))
        parser.add_argument(
            '--end', metavar='<time>',
            help=_('End of the period (as --start; default: now)'))
        server_cmd.add_project_args(parser, _('usage'))
        parser.add_argument(
            '--pool', metavar='<pool>',
            help=_('Only GPUs of this GPU pool (name)'))
        parser.add_argument(
            '--by', metavar='<key>', action='append',
            choices=sorted(usage.BY_KEYS),
            help=_('Group rows by project, pool, flavor or class (repeat '
                   'option to group by several; default: project and '
                   'pool). Each key is a column'))
        parser.add_argument(
            '--rate', metavar='<class>=<price>', action='append',
            dest='rates',
            help=_('Price of one GPU-hour of a resource class, e.g. '
                   'VGPU=0.40 (repeat option for several classes): adds a '
                   'Cost column'))
        return parser

    def take_action(self, parsed_args):
        by, rows, notes = collect(self.app.client_manager.gpu, parsed_args)
        for note in notes:
            LOG.warning(note)
        columns = tuple(usage.BY_KEYS[k] for k in by) + (
            'Servers', 'GPU Hours', 'Peak Seats')
        if parsed_args.rates:
            columns += ('Cost',)
        data = []
        for row in rows:
            item = tuple(row['keys'][k] for k in by) + (
                row['servers'], round(row['gpu_hours'], DIGITS),
                row['seats'])
            if parsed_args.rates:
                item += (round(row['cost'], DIGITS),)
            data.append(item)
        return columns, data
