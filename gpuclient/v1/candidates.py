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

"""``openstack gpu candidates``."""

import argparse
import logging
import os
import re

from cliff import columns as cliff_columns
from openstackclient.identity import common as identity_common
from osc_lib import exceptions
from osc_lib.cli import format_columns
from osc_lib.cli import parseractions
from osc_lib.command import command

from gpuclient.cloud import errors
from gpuclient.cloud import versions
from gpuclient.i18n import _
from gpuclient.ops import snapshot
from gpuclient.rules import baremetal
from gpuclient.rules import explain
from gpuclient.rules import host_filters
from gpuclient.rules import names
from gpuclient.rules import pools as pools_mod
from gpuclient.rules import quota
from gpuclient.rules import request

LOG = logging.getLogger(__name__)
CONF_ENV = 'GPUCLIENT_NOVA_CONF'
CONF_DIR_ENV = 'GPUCLIENT_NOVA_CONF_DIR'
# one output shape: every formatter gives these rows; --long and --explain
# add columns at the end
COLUMNS = ('Host', 'Pool', 'GPU Providers', 'GPUs Total', 'GPUs Used',
           'GPUs Free', 'Free VCPU', 'Free PCPU', 'Free RAM (MiB)',
           'Free Disk (GiB)')
LONG_COLUMNS = ('Nodes', 'Allocation Candidates')
EXPLAIN_COLUMNS = ('Candidate', 'Reason')


def _parse_resources(texts):
    found = []
    for text in texts or ():
        rc, sep, amount = text.partition('=')
        try:
            number = int(amount)
        except ValueError:
            number = -1
        if not sep or not rc.strip() or number < 0:
            raise exceptions.CommandError(
                _('--resource %s: give CLASS=N, e.g. '
                  'CUSTOM_PCI_10DE_2331=1 or VCPU=4.') % text)
        found.append((names.normalize_resource_class(rc.strip()), number))
    # bounds (names.MAX_GPUS, names.MAX_AMOUNT), before any request
    request.check_resource_amounts(found)
    return found


def _check_traits(option, traits, forbidden_mark=False):
    """Trait names as Placement spells them; ``!TRAIT`` if FORBIDDEN_MARK."""
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


def _read_conf(path, what):
    try:
        with open(os.path.expanduser(path)) as conf:
            return conf.read()
    except OSError as exc:
        raise exceptions.CommandError(
            _('Cannot read the Nova settings %(what)s %(path)s (%(error)s): '
              'give a readable nova.conf-style file with --nova-conf or a '
              'directory of *.conf files with --nova-conf-dir.')
            % {'what': what, 'path': path,
               'error': exc.strerror or exc}) from exc


def read_settings(path=None, overrides=None, alias_maps=(), conf_dir=None):
    """Settings from nova.conf-style files, read as Nova reads them.

    PATH: one file or a list (--nova-conf, repeatable; default
    $GPUCLIENT_NOVA_CONF), like oslo.config's --config-file; CONF_DIR: one
    directory or a list (--nova-conf-dir; default
    $GPUCLIENT_NOVA_CONF_DIR) whose *.conf files are read after them,
    sorted, like --config-dir. Later files win; multi-valued options
    ([pci] alias) collect every file's values.
    """
    paths = [path] if isinstance(path, str) else list(path or ())
    dirs = [conf_dir] if isinstance(conf_dir, str) else list(conf_dir or ())
    if not paths and os.environ.get(CONF_ENV):
        paths = [os.environ[CONF_ENV]]
    if not dirs and os.environ.get(CONF_DIR_ENV):
        dirs = [os.environ[CONF_DIR_ENV]]
    files = [(p, _read_conf(p, _('file'))) for p in paths]
    for folder in dirs:
        try:
            names = os.listdir(os.path.expanduser(folder))
        except OSError as exc:
            raise exceptions.CommandError(
                _('Cannot read the Nova settings directory %(path)s '
                  '(%(error)s): give a directory of *.conf files with '
                  '--nova-conf-dir.')
                % {'path': folder, 'error': exc.strerror or exc}) from exc
        for name in request.conf_dir_files(names):
            full = os.path.join(folder, name)
            if os.path.isfile(os.path.expanduser(full)):
                files.append((full, _read_conf(full, _('file'))))
    settings = request.load_settings(files, overrides, alias_maps)
    # [quota]: whether Nova enforces GPU quotas (gpu quota, gpu check)
    settings['quota'] = quota.conf_settings(request.merge_ini(
        request.parse_ini(text, source) for source, text in files)) if (
            files) else None
    settings['file'] = ', '.join(name for name, _text in files) or None
    return settings


def add_nova_conf_args(parser, overrides=False):
    """The nova.conf options, the same in every command that reads it.

    --nova-conf and --nova-conf-dir (``gpu candidates``, ``gpu capacity
    list``, ``gpu check``, ``gpu quota show``); with OVERRIDES also
    --setting and --alias-map, for the commands that build Nova's
    Placement request from the settings (candidates, capacity).
    """
    if overrides:
        parser.add_argument(
            '--alias-map', metavar='<alias=vendor:product|class>',
            action='append', default=[], dest='alias_maps',
            help=_('What a PCI alias of nova.conf is, for flavors that no '
                   'GPU pool describes: h100=10de:2331 or a100=CUSTOM_A100 '
                   '(repeat option for several)'))
    parser.add_argument(
        '--nova-conf', metavar='<file>', action='append',
        help=_('nova.conf-style file of Nova\'s scheduler and API '
               '([scheduler], [filter_scheduler], [pci] alias, [quota], '
               '[gpuclient]), read as Nova reads it; repeat option for '
               'several, later files win (as Nova\'s --config-file); '
               'default $%s, else Nova\'s defaults (see gpu candidates '
               '--explain)') % CONF_ENV)
    parser.add_argument(
        '--nova-conf-dir', metavar='<directory>', action='append',
        help=_('Directory whose .conf files are read in sorted order '
               'after the --nova-conf files, as Nova\'s --config-dir '
               '(e.g. /etc/nova/nova.conf.d; repeat option for several); '
               'default $%s') % CONF_DIR_ENV)
    if overrides:
        parser.add_argument(
            '--setting', metavar='<key=value>', dest='settings',
            action=parseractions.KeyValueAction, default={},
            help=_('Override one Nova setting, e.g. pci_in_placement=false '
                   'or max_placement_results=50 (repeat option for '
                   'several)'))


def nova_conf_given(parsed_args):
    """Was a nova.conf given: an option of add_nova_conf_args or its
    environment variable ($GPUCLIENT_NOVA_CONF, $GPUCLIENT_NOVA_CONF_DIR)?
    """
    return bool(parsed_args.nova_conf or parsed_args.nova_conf_dir
                or os.environ.get(CONF_ENV) or os.environ.get(CONF_DIR_ENV))


def settings_from_args(parsed_args):
    """read_settings with the options of add_nova_conf_args."""
    return read_settings(parsed_args.nova_conf,
                         getattr(parsed_args, 'settings', None),
                         getattr(parsed_args, 'alias_maps', ()),
                         conf_dir=parsed_args.nova_conf_dir)


def collect(client, flavor=None, resources=(), required=(), image=None,
            pool=None, project=None, zone=None, boot_from_volume=False,
            limit=None, explain_all=False, settings=None,
            project_domain=None):
    """Everything ``gpu candidates`` shows, as one dict.

    Requests: aggregates, flavor (1-2), image (0-2), hypervisors, compute
    services, providers and one allocation-candidates query; with an
    explanation, at most MAX_RELAXED relaxed queries, the trees of at most
    MAX_DETAIL_HOSTS hosts and the allocations of at most
    MAX_ALLOCATION_READS providers.
    """
    settings = settings or request.load_settings()
    # Nova's side from the snapshot other read commands use; Placement is
    # asked this flavor's own question below
    cloud = snapshot.read(client, with_placement=False)
    aggregates, pools = cloud.aggregates, cloud.pools
    for _agg, _pool, message in cloud.problems:
        LOG.warning(message)
    if pool and pool not in pools:
        raise pools_mod.unknown_pool(pool, pools)
    project_id = (client.project_id(project, project_domain) if project
                  else client.current_project_id())
    the_flavor = client.compute.find_flavor(flavor) if flavor else None
    the_image = client.image.find_image(image) if image else {}
    if the_flavor is not None:
        req = request.build(the_flavor, the_image, settings, pools=pools,
                            aggregates=aggregates, project_id=project_id,
                            zone=zone, boot_from_volume=boot_from_volume)
    else:
        req = request.from_resources(
            resources, required, settings, pools=pools,
            aggregates=aggregates, project_id=project_id, zone=zone)
    if limit:
        req['limit'] = limit
    params = request.query_params(req)
    placement = client.placement
    try:
        answer = placement.candidates_query(params)
    except errors.APIError as exc:
        unknown = re.search(r'No such trait\(s\):\s*([A-Z0-9_, ]+)',
                            str(exc))
        if exc.status != 400 or not unknown:
            raise
        traits = unknown.group(1).strip(' ,')
        raise exceptions.CommandError(
            _('The request requires trait(s) %(traits)s, which Placement '
              'does not know: no host has them, so Nova answers "No valid '
              'host" for it (and for resize, migrate and evacuate of its '
              'servers). Remove the requirement ("openstack flavor unset '
              '--property trait:<TRAIT> <flavor>", or the image property), '
              'or put the trait back on the hosts that should take it.')
            % {'traits': traits}) from exc
    hypervisors, services = cloud.hypervisors, cloud.services
    providers = placement.resource_providers()
    trees = explain.Trees()
    trees.node_roots = baremetal.node_roots(hypervisors)
    trees.add_answer(answer)
    trees.name_providers(providers)
    by_host = pools_mod.pools_by_host(pools)
    rows = explain.candidate_rows(answer, req, hypervisors, trees, by_host)
    hosts_roots = {}
    for root, host in explain.root_hosts(hypervisors).items():
        hosts_roots.setdefault(host, set()).add(root)
    extra_specs = (the_flavor or {}).get('extra_specs') or {}
    # [filter_scheduler] image_properties_default_architecture (unset
    # unless the settings give it)
    default_arch = settings.get('image_properties_default_architecture')
    post = explain.post_filters(
        sorted(hosts_roots), extra_specs, aggregates, services, project_id,
        settings['enabled_filters'], pools, hypervisors=hypervisors,
        image=the_image, default_arch=default_arch)
    members = set(pools[pool]['hosts']) if pool else None
    kept = [row for row in rows if row['host'] not in post
            and (members is None or row['host'] in members)]
    count = len(answer.get('allocation_requests') or [])
    notes = list(req['notes'])
    if req.get('limit') and count >= req['limit']:
        notes.append(_(
            'Placement returned %(count)d allocation candidates, the limit '
            'of this query (%(limit)d, Nova\'s [scheduler] '
            'max_placement_results): hosts beyond it are not shown, as Nova '
            'would not see them either. Raise --limit to see more.')
            % {'count': count, 'limit': req['limit']})
    enabled = settings['enabled_filters']
    not_checked = {name: why for name, why in explain.NOT_CHECKED.items()
                   if name in enabled}
    # ImagePropertiesFilter and ComputeCapabilitiesFilter are judged; only
    # what the compute API does not show stays "not checked"
    for name in (host_filters.IMAGE_FILTER, host_filters.CAPABILITIES_FILTER):
        not_checked.pop(name, None)
    not_checked.update(host_filters.unchecked(
        sorted(hosts_roots), hypervisors, extra_specs, the_image, enabled,
        default_arch))
    result = {
        'flavor': (the_flavor or {}).get('name'),
        'image': (the_image or {}).get('name'),
        'project_id': project_id,
        'microversion': versions.version_str(request.MICROVERSION),
        'query': request.querystring(req),
        'groups': request.describe(req),
        'candidates': count,
        'hosts': kept,
        'filtered': {host: [explain.post_filter_text(host, r, project_id)
                            for r in reasons]
                     for host, reasons in post.items()
                     if host in {row['host'] for row in rows}},
        'notes': notes,
        'not_covered': req['not_covered'],
        'not_checked': not_checked,
        'settings': {key: (list(value) if isinstance(value, tuple)
                           else value)
                     for key, value in settings.items()
                     if key in request.DEFAULT_SETTINGS},
        'settings_sources': settings['sources'],
        'settings_file': settings.get('file'),
        'aliases': {name: {'resource_class': alias['resource_class'],
                           'traits': sorted(alias.get('traits') or ()),
                           'source': alias.get('source')}
                    for name, alias in sorted(
                        dict(request.pool_aliases(pools),
                             **settings['aliases']).items())},
        'placement_requests': 0,
        'eliminated': {},
        'pools_by_host': by_host,
        'quota': None,
        'maybe_truncated': bool(req.get('limit') and count >= req['limit']),
    }
    if explain_all or not kept:
        _read_ironic(client, trees, hosts_roots, members, notes)
        result['eliminated'] = _explain(
            placement, req, answer, trees, providers, hosts_roots, post,
            project_id, members)
        result['quota'] = _quota(client, project_id, the_flavor, req,
                                 settings.get('quota'))
        if result['quota']['gpu_excess']:
            notes.insert(0, quota.excess_text(
                project_id, result['quota']['gpu_excess']))
        if result['quota']['excess']:
            notes.insert(0, host_filters.quota_text(
                project_id, result['quota']['excess']))
        for name, why in result['quota']['not_checked'].items():
            not_checked[name] = why
    result['placement_requests'] = placement.request_count
    return result


def _quota(client, project_id, flavor, req, conf=None):
    """The project's instances, cores and RAM quota against one boot, and
    its unified GPU limits (CONF: nova.conf [quota], when read)."""
    own = req['groups'].get('', {}).get('resources', {})
    if flavor is not None:
        cores, ram = flavor.get('vcpus') or 0, flavor.get('ram') or 0
    else:
        cores = own.get('VCPU', 0) + own.get('PCPU', 0)
        ram = own.get('MEMORY_MB', 0)
    found = {'excess': [], 'gpu_excess': [], 'not_checked': {}}
    try:
        absolute = client.compute.project_limits(project_id)
    except errors.APIError as exc:
        found['not_checked']['Quota'] = _(
            'the compute limits of project %(project)s could not be read: '
            '%(error)s') % {'project': project_id, 'error': exc}
        absolute = {}
    found['excess'] = host_filters.quota_excess(
        absolute, instances=1, cores=cores, ram=ram)
    if request.gpu_classes(req):
        _gpu_quota(client, project_id, req, conf, absolute, found)
    return found


def _gpu_quota(client, project_id, req, conf, absolute, found):
    """Unified GPU limits against one boot, into FOUND."""
    classes = request.gpu_classes(req)
    asked = {}
    for group in req['groups'].values():
        for rc, amount in group.get('resources', {}).items():
            if rc in classes:
                asked[rc] = asked.get(rc, 0) + amount
    try:
        registered = {n: r['limit']
                      for n, r in client.limits.registered().items()}
        own = {item['resource_name']: item['resource_limit']
               for item in client.limits.limits(project_id)
               if item['project_id'] == project_id}
        state, why = quota.enforcement(conf, absolute, own, registered)
        if state == quota.LEGACY:
            found['not_checked']['Quota (GPUs)'] = _(
                'Nova does not count GPUs against a quota (%s)') % why
            return
        usages = client.placement.project_usages(project_id)
    except errors.APIError as exc:
        found['not_checked']['Quota (GPUs)'] = _(
            'the unified limits of project %(project)s on %(classes)s '
            'could not be read: %(error)s') % {
                'project': project_id, 'classes': ', '.join(classes),
                'error': exc}
        return
    found['gpu_excess'] = quota.excess(asked, own, registered, usages, conf)


def _read_ironic(client, trees, hosts_roots, members, notes):
    """Ironic's view of the nodes, when some host explained has nodes.

    Optional detail: without an Ironic endpoint nothing is said; when
    Ironic lists none of the nodes (its policy hides them from
    project-scoped tokens) a note says so and Placement's answer stands.
    """
    roots = set()
    for host, host_roots in hosts_roots.items():
        if members is None or host in members:
            roots |= host_roots
    nodes = roots & trees.node_roots
    if not nodes:
        return
    trees.ironic_nodes = snapshot.ironic_nodes(client)
    note = baremetal.hidden_note(nodes, trees.ironic_nodes)
    if note:
        notes.append(note)


def _explain(placement, req, answer, trees, providers, hosts_roots, post,
             project_id, members):
    offered = explain.candidate_roots(answer)
    relaxed = []
    for requirement in explain.requirements(req):
        try:
            relaxed_answer = placement.candidates_query(
                [p for p in request.query_params(requirement['request'])
                 if p != ('resources', '')],
                what=_('Asking Placement for allocation candidates '
                       'without %s') % requirement['label'])
        except errors.APIError as exc:
            if exc.status != 400:
                raise
            LOG.debug('relaxed query refused: %s', exc)
            continue
        trees.add_answer(relaxed_answer)
        relaxed.append((requirement,
                        explain.candidate_roots(relaxed_answer) - offered))
    wanted = {h: r for h, r in hosts_roots.items()
              if members is None or h in members}
    known = trees.known_roots()

    def unknown(roots):
        if roots & offered:
            # an offered Ironic host: its nodes that were not offered
            return (roots & trees.node_roots) - known
        return set() if roots & known else roots

    missing = sorted(h for h, roots in wanted.items() if unknown(roots))
    read, unread = missing[:explain.MAX_DETAIL_HOSTS], set(
        missing[explain.MAX_DETAIL_HOSTS:])
    if read:
        roots = set().union(*(unknown(wanted[h]) for h in read))
        in_trees = [rp for rp in providers
                    if (rp.get('root_provider_uuid') or rp['uuid']) in roots]
        details = snapshot.provider_summaries(
            placement, [rp['uuid'] for rp in in_trees], with_traits=True)
        for rp in in_trees:
            summary = dict(details[rp['uuid']],
                           parent_provider_uuid=rp.get(
                               'parent_provider_uuid'),
                           root_provider_uuid=rp.get('root_provider_uuid'))
            trees.add(rp['uuid'], summary, rp.get('name'))
    gpu = set(request.gpu_classes(req))
    used_gpus = []
    for roots in wanted.values():
        if roots & offered:
            roots = (roots & trees.node_roots) - offered
        for root in sorted(roots):
            for uuid, provider in sorted(trees.tree(root).items()):
                if any(provider['resources'].get(rc, {}).get('used')
                       for rc in gpu):
                    used_gpus.append(uuid)
    allocations = {}
    for uuid in used_gpus[:explain.MAX_ALLOCATION_READS]:
        allocations[uuid] = sorted(placement.provider_allocations(uuid))
    return explain.why_not(wanted, offered, relaxed, req, trees,
                           allocations, post, project_id, unread)


def add_boot_project_args(parser):
    """--project and --project-domain: the project that would boot."""
    parser.add_argument(
        '--project', metavar='<project>',
        help=_('Project that would boot the server (name or ID; '
               'default: the current project): decides project-limited '
               'pools'))
    identity_common.add_project_domain_option_to_parser(parser)


class ReasonColumn(cliff_columns.FormattableColumn):
    """Reasons (why a host is out, why GPUs are stranded): a list in
    json/yaml, '; ' between them elsewhere."""

    def human_readable(self):
        return '; '.join(self._value or ())

    def machine_readable(self):
        return list(self._value or ())


def _row(host):
    providers = sorted({name for names_ in host['gpu_providers'].values()
                        for name in names_})
    free = host['free']
    return (host['host'], ', '.join(host['pools']) or None,
            format_columns.ListColumn(providers), host['gpus_total'],
            host['gpus_total'] - host['gpus_free'], host['gpus_free'],
            free.get('VCPU'), free.get('PCPU'), free.get('MEMORY_MB'),
            free.get('DISK_GB'))


def _reason(host, text):
    """A why-not text without its leading 'HOST: ' (the row names it)."""
    lead = '%s: ' % host
    return text[len(lead):] if text.startswith(lead) else text


def table(result, long=False, explain=False):
    """(columns, rows) of ``gpu candidates``, the same for every formatter.

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
            row += (True, ReasonColumn([
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
            row += (False, ReasonColumn([_reason(host, t) for t in texts]))
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


class Candidates(command.Lister):
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
        what.add_argument(
            '--resource', metavar='<class=amount>', action='append',
            dest='resources',
            help=_('Ask for a resource instead of a flavor, e.g. '
                   'CUSTOM_PCI_10DE_2331=2 (repeat option for several). A '
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
            help=_('Only show hosts of this GPU pool (name)'))
        add_boot_project_args(parser)
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
        add_nova_conf_args(parser, overrides=True)
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
        settings = settings_from_args(parsed_args)
        result = collect(
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
            settings=settings)
        # stdout holds rows only, in every format: the rest is for people
        for line in explanation_lines(result, full=parsed_args.explain,
                                      why_not=not parsed_args.explain):
            self.app.stderr.write(line + '\n')
        return table(result, long=parsed_args.long,
                     explain=parsed_args.explain)
