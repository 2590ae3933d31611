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

"""openstack gpu quota set / show / list / delete

GPU quotas are Keystone unified limits of the compute service on
``class:<resource class>``, which Nova enforces with ``[quota] driver =
nova.quota.UnifiedLimitsDriver`` (see ``gpuclient.rules.quota``).
"""

import logging

from cliff import columns as cliff_columns
from osc_lib.cli import format_columns

from gpuclient.i18n import _
from gpuclient.v1 import common

LOG = logging.getLogger(__name__)

SHOW_COLUMNS = ('Resource', 'Resource Class', 'Pools', 'Limit', 'Source',
                'In Use', 'Free')
LIST_COLUMNS = ('Project ID', 'Project', 'Resource', 'Resource Class',
                'Pools', 'Limit')


class LimitColumn(cliff_columns.FormattableColumn):
    """A limit: a number, or None (unlimited; "unlimited" in tables)."""

    def human_readable(self):
        return _('unlimited') if self._value is None else str(self._value)

    def machine_readable(self):
        return self._value


def _add_project_args(parser, verb, required=False, default=False,
                      current=False):
    """``[<project>]`` as OSC's ``quota show``/``set`` take it, with
    ``--project`` (and, for writes, ``--default``) in one exclusive group;
    ``--project-domain``."""
    who = parser.add_mutually_exclusive_group(required=required)
    tail = _('; default: the current project') if current else ''
    who.add_argument(
        'project_arg', metavar='<project>', nargs='?', default=None,
        help=_('%s the limit of this project (name or ID), as --project '
               'does') % verb + tail)
    who.add_argument(
        '--project', metavar='<project>',
        help=_('%s the limit of this project (name or ID)') % verb + tail)
    if default:
        who.add_argument(
            '--default', action='store_true', default=False,
            help=_('%s the registered limit: the default of every project '
                   'without its own') % verb)
    from openstackclient.identity import common as identity_common

    identity_common.add_project_domain_option_to_parser(parser)


def _project(parsed_args):
    """The project named by ``<project>`` or ``--project``, or None."""
    return parsed_args.project or parsed_args.project_arg


def _add_target_args(parser, verb, several=False, current=False):
    _add_project_args(parser, verb, required=not current, default=True,
                      current=current)
    what = parser.add_mutually_exclusive_group(required=True)
    repeat = {'action': 'append'} if several else {}
    again = (_('; repeat for several, deleted in one all-or-nothing run')
             if several else '')
    what.add_argument(
        '--pool', metavar='<pool>', **repeat,
        help=_('GPU pool (name or aggregate ID): its resource class is '
               'limited (pools sharing a class share one quota)') + again)
    what.add_argument(
        '--resource-class', metavar='<class>', **repeat,
        help=_('GPU resource class (VGPU, PGPU or a custom class such as '
               'CUSTOM_PCI_10DE_2331), without a pool') + again)

    # [quota] unified_limits_resource_strategy: what a project without its
    # own limit gets when the class has no registered limit
    common.add_nova_conf_args(parser)


def _quota_conf(parsed_args):
    """nova-api's [quota] settings from --nova-conf/--nova-conf-dir (or
    their environment variables), None when none was given."""

    if not common.nova_conf_given(parsed_args):
        return None
    return common.settings_from_args(parsed_args).get('quota')


def _finish(app, plan, dry_run):
    if dry_run:

        common.write_plan(app, plan)


class SetQuota(common.Command):
    _description = _(
        'Set a project\'s GPU quota, or every project\'s default.\n\n'
        'Writes a Keystone unified limit of the compute service on '
        'class:<resource class> (a pool stands for its class): a project '
        'limit with <project> or --project (default: the current project, '
        'as "openstack quota set" does), the registered limit with '
        '--default. Nova '
        'enforces it at server create and resize when it runs [quota] '
        'driver = nova.quota.UnifiedLimitsDriver. Keystone keeps a project '
        'limit only under a registered limit, the default of every other '
        'project: when the class has none, --project creates one first '
        'that keeps what Nova gives the other projects now, as nova-api\'s '
        '[quota] unified_limits_resource_strategy and '
        'unified_limits_resource_list make of a class without one (0 '
        'where they enforce it as 0, else -1, unlimited). Give nova-api\'s '
        'nova.conf with --nova-conf or --nova-conf-dir; without them '
        'Nova\'s defaults (require, servers: unlimited) are assumed and the '
        'plan says so. --default sets the registered limit itself. Needs '
        'admin.')

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        _add_target_args(parser, _('Set'), current=True)

        common.add_dry_run_arg(parser)
        parser.add_argument(
            '--gpus', metavar='<count>', required=True,
            help=_('How many GPUs of the class (vGPUs for VGPU) the '
                   'project may hold at once: 0 or more'))
        return parser

    def take_action(self, parsed_args):
        from gpuclient.ops import quota_ops
        from gpuclient.rules import quota

        gpus = quota.check_gpus(parsed_args.gpus)
        client = self.app.client_manager.gpu
        _pools_found, rc, project_id = quota_ops.target(
            client, parsed_args.pool, parsed_args.resource_class,
            _project(parsed_args), parsed_args.project_domain,
            current=not parsed_args.default)
        plan = quota_ops.plan_and_apply(
            client, quota.plan_set, rc, gpus, project_id,
            dry_run=parsed_args.dry_run, conf=_quota_conf(parsed_args))
        _finish(self.app, plan, parsed_args.dry_run)


class DeleteQuota(common.Command):
    _description = _(
        'Delete GPU quotas of a project, or defaults.\n\n'
        'Deletes the Keystone limits on class:<resource class> of each '
        '--pool or --resource-class given (repeatable), in one '
        'all-or-nothing plan: if one cannot be deleted, none is, and a '
        'failure undoes what was deleted. A project then has the '
        'registered limit (the default); without a registered limit Nova '
        'applies its [quota] unified_limits_resource_strategy (read with '
        '--nova-conf; the plan of --default says what every project '
        'without its own limit gets after). Needs admin.')

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        _add_target_args(parser, _('Delete'), several=True)

        common.add_dry_run_arg(parser)
        return parser

    def take_action(self, parsed_args):
        from gpuclient.ops import quota_ops
        from gpuclient.rules import quota

        client = self.app.client_manager.gpu
        _pools_found, classes, project_id = quota_ops.targets(
            client, parsed_args.pool or (), parsed_args.resource_class or (),
            _project(parsed_args), parsed_args.project_domain)
        plan = quota_ops.plan_and_apply(
            client, quota.plan_delete_many, classes, project_id,
            dry_run=parsed_args.dry_run, conf=_quota_conf(parsed_args))
        _finish(self.app, plan, parsed_args.dry_run)


class ShowQuota(common.Lister):
    _description = _(
        'Show the GPU quota of a project.\n\n'
        'The project is <project> or --project (default: the current '
        'one), as in "openstack quota show [<project>]"; --default shows '
        'the registered limits instead, what a project without its own '
        'gets (no project, no usage). '
        'One row per GPU resource class (of a pool, or with a limit or '
        'usage): the limit Nova enforces under unified limits (the '
        'project\'s own, else the registered default, else what [quota] '
        'unified_limits_resource_strategy makes of none), where it comes '
        'from, the GPUs in use (Placement usages of the project) and how '
        'many more it may take. Pools sharing a class share one quota. '
        'With --nova-conf or --nova-conf-dir, nova-api\'s [quota] driver '
        'and unified_limits_resource_strategy/_list apply; without them, '
        'Nova\'s default strategy, and the driver judged from Nova\'s '
        'limits. Notes on stderr say when Nova does not enforce GPU '
        'quotas.')

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        _add_project_args(parser, _('Show'), default=True, current=True)

        common.add_nova_conf_args(parser)
        return parser

    def take_action(self, parsed_args):
        from gpuclient.ops import quota_ops

        rows, notes = quota_ops.show(
            self.app.client_manager.gpu, _project(parsed_args),
            parsed_args.project_domain, _quota_conf(parsed_args),
            defaults=parsed_args.default)
        for note in notes:
            LOG.warning(note)
        return SHOW_COLUMNS, [
            (r['resource'], r['resource_class'],
             format_columns.ListColumn(r['pools']), LimitColumn(r['limit']),
             r['source'], r['in_use'], LimitColumn(r['free']))
            for r in rows]


class ListQuota(common.Lister):
    _description = _(
        'List the projects with a GPU quota of their own.\n\n'
        'One row per project limit on a GPU class (Keystone unified limits '
        'of the compute service); the registered defaults are in "gpu '
        'quota show". Needs admin to see every project.')

    def take_action(self, parsed_args):
        from gpuclient.ops import quota_ops
        from gpuclient.rules import quota

        rows, names = quota_ops.list_limits(self.app.client_manager.gpu)
        return LIST_COLUMNS, [
            (r['project_id'], names.get(r['project_id']) or '',
             quota.resource_name(r['resource_class']), r['resource_class'],
             format_columns.ListColumn(r['pools']), LimitColumn(r['limit']))
            for r in rows]
