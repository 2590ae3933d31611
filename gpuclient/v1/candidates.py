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

"""``openstack gpu candidate list`` (and ``gpu candidates``, its deprecated
first name)."""

import argparse
import logging

from osc_lib import exceptions
from osc_lib.cli import format_columns

from gpuclient.i18n import _
from gpuclient.v1 import common

LOG = logging.getLogger(__name__)
# one output shape: every formatter gives these rows; --long and --explain
# add columns at the end
COLUMNS = ('Host', 'Pool', 'GPU Providers', 'GPUs Total', 'GPUs Used',
           'GPUs Free', 'Free VCPU', 'Free PCPU', 'Free RAM (MiB)',
           'Free Disk (GiB)', 'NUMA')
LONG_COLUMNS = ('Nodes', 'Allocation Candidates')
EXPLAIN_COLUMNS = ('Candidate', 'Reason')


def _parse_resources(pairs):
    """[(normalised class, amount)] of --resource {class: text}."""
    from gpuclient.rules import placement_names as names
    from gpuclient.rules.scheduler import resource_request as request
    amounts = common.number_values(
        '--resource', pairs, _('CLASS=N with N a whole number'),
        'CUSTOM_PCI_10DE_2331=1 or VCPU=4', integer=True)
    found = [(names.normalize_resource_class(rc), number)
             for rc, number in amounts.items()]
    # bounds (names.MAX_GPUS, names.MAX_AMOUNT), before any request
    request.check_resource_amounts(found)
    return found


def _check_traits(option, traits, forbidden_mark=False):
    """Trait names as Placement spells them; ``!TRAIT`` if FORBIDDEN_MARK."""
    from gpuclient.rules import placement_names as names

    for text in traits or ():
        name = text[1:] if forbidden_mark and text.startswith('!') else text
        if not names.is_trait_name(name):
            raise exceptions.CommandError(
                _('%(option)s %(text)s: give a trait name as Placement '
                  'spells it, upper case: a standard trait (A-Z, 0-9 and _, '
                  'such as HW_CPU_X86_AVX2) or CUSTOM_ followed by those, at '
                  'most 255 characters; a trait the host must not have goes '
                  'to --forbidden TRAIT.')
                % {'option': option, 'text': text})


def _row(host):
    providers = sorted({name for names_ in host['gpu_providers'].values()
                        for name in names_})
    free = host['free']
    return (host['host'], ', '.join(host['pools']) or None,
            format_columns.ListColumn(providers), host['gpus_total'],
            host['gpus_total'] - host['gpus_free'], host['gpus_free'],
            free.get('VCPU'), free.get('PCPU'), free.get('MEMORY_MB'),
            free.get('DISK_GB'), host.get('numa'))


def _reason(host, text):
    """A why-not text without its leading 'HOST: ' (the row names it)."""
    lead = '%s: ' % host
    return text[len(lead):] if text.startswith(lead) else text


def table(result, long=False, explain=False):
    """(columns, rows) of ``gpu candidate list``, the same for every
    formatter.

    One row per candidate host (sorted); with EXPLAIN, then one row per
    host ruled out (sorted), with its pools, Candidate False and its
    reasons, and no free amounts (it is not a candidate).
    """
    columns = (COLUMNS + (LONG_COLUMNS if long else ())
               + (EXPLAIN_COLUMNS if explain else ()))
    rows = []
    for host in result['hosts']:
        row = _row(host)
        if long:
            row += (format_columns.ListColumn(host['roots']),
                    host['candidates'])
        if explain:
            # an Ironic host's nodes that are out (the host is offered)
            row += (True, common.ReasonColumn([
                _reason(host['host'], t)
                for t in result['eliminated'].get(host['host'], ())]))
        rows.append(row)
    if explain:
        listed = {host['host'] for host in result['hosts']}
        for host, texts in sorted(result['eliminated'].items()):
            if host in listed:
                continue
            pools = ', '.join(result.get('pools_by_host', {}).get(
                host) or ()) or None
            row = (host, pools) + (None,) * (len(COLUMNS) - 2)
            if long:
                row += (None, None)
            row += (False, common.ReasonColumn(
                [_reason(host, t) for t in texts]))
            rows.append(row)
    return columns, rows


def explanation_lines(result, full=False, why_not=True):
    """Text for stderr: with FULL the query, settings and what is not
    checked; with WHY_NOT the reasons hosts are out; always the notes."""
    lines = []
    if full:
        lines.append(_('Placement query (microversion %(mv)s): '
                       'GET /allocation_candidates?%(query)s')
                     % {'mv': result['microversion'],
                        'query': result['query']})
        for label, text in sorted(result['groups'].items()):
            lines.append('  %s: %s' % (label, text))
        sources = result['settings_sources']
        lines.append(_('Nova settings (%s):') % (
            result['settings_file'] or _('defaults and options')))
        for key, value in sorted(result['settings'].items()):
            if isinstance(value, list):
                value = ','.join(value)
            lines.append('  %s = %s (%s)' % (key, value, sources.get(key)))
        for name, alias in result['aliases'].items():
            lines.append(_('  PCI alias %(name)s -> %(rc)s%(traits)s '
                           '(%(source)s)') % {
                               'name': name, 'rc': alias['resource_class'],
                               'traits': (' ' + ','.join(alias['traits'])
                                          if alias['traits'] else ''),
                               'source': alias['source']})
        for name, why in sorted(result['not_checked'].items()):
            lines.append(_('Not checked: %(filter)s (%(why)s)') % {
                'filter': name, 'why': why})
        for text in result['not_covered']:
            lines.append(_('Not translated: %s') % text)
    if why_not and result['eliminated']:
        lines.append(_('Why not:'))
        for _host, texts in sorted(result['eliminated'].items()):
            for text in texts:
                lines.append('  ' + text)
    for note in result['notes']:
        lines.append(_('Note: %s') % note)
    return lines


class ListCandidate(common.Lister):
    _description = _(
        'List the hosts Nova would consider for a flavor now.\n\n'
        'One row per host that could take the flavor (and image) now: the '
        'Placement query Nova\'s scheduler sends, then the scheduler '
        'filters the API lets a client judge. With --explain the hosts '
        'ruled out are rows too (Candidate False, with the Reason), and '
        'the query, the Nova settings assumed and what is not checked are '
        'written to stderr. Without --explain, when no host remains, why '
        'not is written to stderr. Stdout holds only rows, in every '
        'format. Needs admin (aggregates, hypervisors, Placement).')

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        what = parser.add_mutually_exclusive_group(required=True)
        what.add_argument(
            '--flavor', metavar='<flavor>',
            help=_('Flavor to place (name or ID)'))
        common.add_key_value_arg(
            what, '--resource', '<class>=<amount>', 'resources',
            'CUSTOM_PCI_10DE_2331=2',
            _('Ask for a resource instead of a flavor, e.g. '
              'CUSTOM_PCI_10DE_2331=2 (repeat option for several; a class '
              'given twice keeps its last amount). A '
              'per-device class (CUSTOM_PCI_*, VGPU, the class of a '
              'passthrough, vgpu or mig pool) becomes one single-unit '
              'request group per device, as Nova does for PCI aliases'))
        parser.add_argument(
            '--required', metavar='<trait>', action='append', default=[],
            dest='required',
            help=_('With --resource: a trait the host must have (repeat '
                   'option for several; !TRAIT, Placement\'s spelling, is '
                   'the same as --forbidden TRAIT)'))
        parser.add_argument(
            '--forbidden', metavar='<trait>', action='append', default=[],
            dest='forbidden',
            help=_('With --resource: a trait the host must not have '
                   '(repeat option for several)'))
        parser.add_argument(
            '--image', metavar='<image>',
            help=_('Image to boot (name or ID): its trait:* properties and '
                   'the options that translate to traits count'))
        parser.add_argument(
            '--pool', metavar='<pool>',
            help=_('Only show hosts of this GPU pool (name or aggregate ID)'))
        common.add_boot_project_args(parser)
        parser.add_argument(
            '--zone', metavar='<zone>', dest='zone',
            help=_('Availability zone the server would be booted in'))
        # deprecated spelling of --zone, kept working for old scripts
        parser.add_argument(
            '--availability-zone', metavar='<zone>',
            dest='availability_zone', help=argparse.SUPPRESS)
        parser.add_argument(
            '--boot-from-volume', action='store_true',
            help=_('The server boots from a volume: the flavor\'s root disk '
                   'is not asked from the host'))
        parser.add_argument(
            '--limit', metavar='<count>', type=int,
            help=_('Placement result limit for this query (default: Nova\'s '
                   '[scheduler] max_placement_results, 1000 unless '
                   'configured)'))
        parser.add_argument(
            '--long', action='store_true', default=False,
            help=_('List additional fields in output (the compute nodes '
                   'and the number of allocation candidates per host)'))
        parser.add_argument(
            '--explain', action='store_true',
            help=_('Also list the hosts ruled out, with the reason '
                   '(Candidate and Reason columns), and write the query, '
                   'the Nova settings assumed and what is not checked to '
                   'stderr'))
        common.add_numa_facts_arg(parser)
        common.add_numa_prometheus_arg(parser)
        common.add_nova_conf_args(parser, overrides=True)
        return parser

    def _zone(self, parsed_args):
        old = parsed_args.availability_zone
        if old is None:
            return parsed_args.zone
        if parsed_args.zone is not None and parsed_args.zone != old:
            raise exceptions.CommandError(
                _('--zone %(zone)s and --availability-zone %(old)s differ: '
                  'give --zone alone (--availability-zone is its deprecated '
                  'spelling).') % {'zone': parsed_args.zone, 'old': old})
        LOG.warning(_('--availability-zone is deprecated, use --zone.'))
        return old

    def take_action(self, parsed_args):
        from gpuclient.ops import candidate_ops

        traits = parsed_args.required + parsed_args.forbidden
        if traits and not parsed_args.resources:
            raise exceptions.CommandError(
                _('--required and --forbidden go with --resource; a flavor '
                  'brings its own traits (trait:*=required or forbidden '
                  'extra specs).'))
        if parsed_args.limit is not None and parsed_args.limit < 1:
            raise exceptions.CommandError(_('--limit must be at least 1.'))
        _check_traits('--required', parsed_args.required,
                      forbidden_mark=True)
        _check_traits('--forbidden', parsed_args.forbidden)
        zone = self._zone(parsed_args)
        resources = _parse_resources(parsed_args.resources)
        settings = common.settings_from_args(parsed_args)
        facts = common.numa_facts(parsed_args)
        common.use_prometheus_selector(self.app.client_manager.gpu,
                                       parsed_args)
        result = candidate_ops.collect(
            self.app.client_manager.gpu, flavor=parsed_args.flavor,
            resources=resources,
            required=parsed_args.required + [
                '!' + trait for trait in parsed_args.forbidden],
            image=parsed_args.image,
            pool=parsed_args.pool, project=parsed_args.project,
            project_domain=parsed_args.project_domain,
            zone=zone,
            boot_from_volume=parsed_args.boot_from_volume,
            limit=parsed_args.limit, explain_all=parsed_args.explain,
            settings=settings, facts=facts,
            prometheus=parsed_args.prometheus)
        # stdout holds rows only, in every format: the rest is for people
        for line in explanation_lines(result, full=parsed_args.explain,
                                      why_not=not parsed_args.explain):
            self.app.stderr.write(line + '\n')
        return table(result, long=parsed_args.long,
                     explain=parsed_args.explain)


class Candidates(ListCandidate):
    """``gpu candidates``, the deprecated first name of ``gpu candidate
    list``: the same options, rows and exit status, and a warning naming
    the new name, as OSC keeps its renamed commands (``server migrate
    confirm``)."""

    # cliff's "openstack help" leaves a deprecated command out of its list
    deprecated = True

    _description = _(
        'DEPRECATED: Use "gpu candidate list" instead.\n\n'
        'The first name of "openstack gpu candidate list", kept for the '
        'scripts that use it: the same options, rows and exit status, '
        'with a warning on stderr.')

    def take_action(self, parsed_args):
        self.log.warning(_('The "gpu candidates" command is deprecated: use '
                           '"gpu candidate list", the same options and '
                           'rows.'))
        return super().take_action(parsed_args)
