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

"""openstack gpu capacity list"""

import logging

from gpuclient import formatters
from gpuclient.i18n import _
from gpuclient.v1 import common

LOG = logging.getLogger(__name__)

# one list of names, which the openmetrics formatter reads too
COLUMNS = tuple(c for c in formatters.CAPACITY_COLUMNS
                if c != formatters.HOST
                and c not in formatters.LONG_CAPACITY_COLUMNS)


class StrandedReasonColumn(common.ReasonColumn):
    """The Stranded Reason cell: the sentences (which device, and why, with
    its figures) in every list format, and ``counts``, {reason: GPUs} with
    reasons from a fixed set (rules.capacity.STRANDED_REASONS), which -f
    openmetrics writes as the ``reason`` label instead: a label must not
    change with the locale or a count."""

    def __init__(self, value, counts):
        super().__init__(value)
        self.counts = dict(counts)


def table(rows, per_host=False, long=False):
    """(columns, rows) of ``gpu capacity list`` for every formatter.

    PER_HOST: the rows have a host (a Host column after Pool); LONG: the
    columns of formatters.LONG_CAPACITY_COLUMNS at the end.
    """
    columns = COLUMNS
    if per_host:
        columns = columns[:2] + (formatters.HOST,) + columns[2:]
    if long:
        columns += formatters.LONG_CAPACITY_COLUMNS
    data = []
    for row in rows:
        item = (row['flavor'], row['pool'])
        if per_host:
            item += (row['host'],)
        item += (row['resource_class'], row['fits'], row['total'],
                 row['used'], row['free'], row['awaiting_release'],
                 row['allocated'],
                 row['stranded'], StrandedReasonColumn(
                     row['stranded_reasons'], row['stranded_by_reason']),
                 row['numa'])
        if long:
            item += (row['flavor_id'], row['hosts'], row['hosts_fitting'])
        data.append(item)
    return columns, data


class ListCapacity(common.Lister):
    # the one command whose rows make metrics: -f openmetrics as well as
    # cliff's formats (setup.cfg's gpuclient.formatter.list)
    formatter_namespace = formatters.LIST_NAMESPACE

    _description = _(
        'List how many more of each GPU flavor fit now.\n\n'
        'For every GPU flavor (or those given) and pool: how many more '
        'servers fit right now (with --per-host per host), counted exactly '
        'from the free inventory of each host\'s provider trees for the '
        'Placement request Nova sends for the flavor (device groups, '
        'group_policy, traits, isolation, project aggregates), with the '
        'hosts Nova\'s filters would remove counted as 0 (for a flavor '
        'asking a NUMA topology, no number where its NUMA fit cannot be '
        'judged: the NUMA column says why); and the pool\'s '
        'GPUs of that class: total, used, free, awaiting release '
        '(one-time-use devices Nova reserved after their server was '
        'deleted: neither free nor stranded), the share allocated (used over '
        'total, Placement\'s count: not how busy the GPUs are), and stranded '
        'GPUs (free, but no GPU flavor can use them now) with the reason. '
        'Read in a fixed number of requests whatever the number of hosts '
        'and flavors. Needs admin (aggregates, hypervisors, Placement).')

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            '--pool', metavar='<pool>',
            help=_('Only rows of this GPU pool (name or aggregate ID)'))
        parser.add_argument(
            '--flavor', metavar='<flavor>', action='append', dest='flavors',
            help=_('Only this flavor (name or ID; repeat option for '
                   'several). Default: every GPU flavor'))
        common.add_boot_project_args(parser)
        common.add_nova_conf_args(parser, overrides=True)
        common.add_numa_facts_arg(parser)
        common.add_numa_prometheus_arg(parser)
        parser.add_argument(
            '--per-host', action='store_true', default=False,
            help=_('One row per flavor, pool and host (a Host column), '
                   'instead of one per flavor and pool'))
        parser.add_argument(
            '--long', action='store_true', default=False,
            help=_('List additional fields in output (flavor ID, hosts '
                   'counted, hosts where at least one more fits)'))
        return parser

    def take_action(self, parsed_args):
        from gpuclient.ops import capacity_ops

        facts = common.numa_facts(parsed_args)
        common.use_prometheus_selector(self.app.client_manager.gpu,
                                       parsed_args)
        rows = capacity_ops.collect(
            self.app.client_manager.gpu,
            common.settings_from_args(parsed_args),
            project=parsed_args.project,
            project_domain=parsed_args.project_domain,
            pool=parsed_args.pool, flavors=parsed_args.flavors,
            per_host=parsed_args.per_host,
            facts=facts, prometheus=parsed_args.prometheus)
        common.add_series_labels(self.app, parsed_args)
        return table(rows, per_host=parsed_args.per_host,
                     long=parsed_args.long)
