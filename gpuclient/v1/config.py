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

"""``openstack gpu config show``.

A ``Command``, not a ``ShowOne``: what it shows is a document, nova.conf
text with repeated keys, comments and one block per service or host (or a
tree of files), which the one-row formatters (table, json, yaml) cannot
carry without losing what makes it usable: it is meant to be read, copied
into place or redirected to a file, like a file's contents.
"""

import logging
import os

from osc_lib import exceptions
from osc_lib.command import command

from gpuclient.i18n import _
from gpuclient.ops import snapshot
from gpuclient.rules import nova_config
from gpuclient.rules import pools as pools_mod
from gpuclient.rules import request

LOG = logging.getLogger(__name__)
LAYOUTS = ('ini', 'kolla')


def _read(path):
    try:
        with open(path) as conf:
            return conf.read()
    except OSError as exc:
        raise exceptions.CommandError(
            _('Cannot read %(path)s (%(error)s): give --diff a readable '
              'nova.conf or a Kolla-Ansible config directory (such as '
              '/etc/kolla/config).')
            % {'path': path, 'error': exc.strerror or exc}) from exc


def _parse_files(paths):
    """merge_ini over the files that exist, in order."""
    return request.merge_ini(request.parse_ini(_read(p), p) for p in paths
                             if os.path.isfile(p))


def read_existing(path, config, hosts=()):
    """({target: parsed ini}, {target: [files]}) for ``--diff PATH``.

    A directory is a Kolla-Ansible config dir: nova-api, nova-scheduler,
    nova-conductor and each host are compared with the files Kolla merges
    for them. A file is one service's
    nova.conf: compared with what the one --host needs, else with what
    nova-scheduler (and every service) needs.
    """
    path = os.path.expanduser(path)
    if os.path.isdir(path):
        existing, where = {}, {}
        hosts_shown = [t for t in config.ordered() if isinstance(t, tuple)]
        for target in list(nova_config.CONTROLLERS) + hosts_shown:
            reads = [os.path.join(path, f)
                     for f in nova_config.kolla_reads(target)]
            existing[target] = _parse_files(reads)
            where[target] = [f for f in reads if os.path.isfile(f)] or [
                _('no file')]
        return existing, where
    if len(hosts) > 1:
        raise exceptions.CommandError(
            _('--diff with a file compares one service\'s nova.conf: give '
              'at most one --host (or a Kolla config directory).'))
    target = (nova_config.host_target(hosts[0]) if hosts
              else nova_config.SCHEDULER)
    return {target: request.parse_ini(_read(path), path)}, {target: [path]}


def _parse_mig_types(texts):
    found = {}
    for text in texts or ():
        profile, sep, mdev_type = text.partition('=')
        if not sep or not profile.strip() or not mdev_type.strip():
            raise exceptions.CommandError(
                _('--mig-mdev-type %s: give PROFILE=MDEV_TYPE, e.g. '
                  '3g.40gb=nvidia-700 (the type name in '
                  '/sys/bus/pci/devices/<VF>/mdev_supported_types).') % text)
        found[profile.strip()] = mdev_type.strip()
    return found


def collect(client, pool_names=(), hosts=(), mig_types=None,
            numa_policy=nova_config.DEFAULT_NUMA_POLICY):
    """(Config, notes): one snapshot of the cloud (``snapshot.read``,
    with flavors for the aliases' NUMA policy, Placement trees of the
    pools' hosts only), shaped by ``nova_config.from_cloud``."""
    aggregates = client.compute.aggregates()
    pools, _problems = pools_mod.scan(
        [snapshot.aggregate_dict(a) for a in aggregates])
    for name in pool_names:
        # checked before anything else is read
        if name not in pools:
            raise pools_mod.unknown_pool(name, pools)
    chosen = [pools[n] for n in (pool_names or pools)]
    cloud = snapshot.read(
        client, extra_classes=('VGPU',), with_flavors=True,
        wanted_hosts={h for p in chosen for h in p['hosts']},
        with_traits=True, aggregates=aggregates)
    return nova_config.from_cloud(cloud, pool_names, hosts, mig_types,
                                  numa_policy)


def write_files(directory, file_list):
    """Write [(relative path, text)] under DIRECTORY; never overwrite."""
    directory = os.path.expanduser(directory)
    taken = [p for p, _text in file_list
             if os.path.exists(os.path.join(directory, p))]
    if taken:
        raise exceptions.CommandError(
            _('%(dir)s already holds %(files)s: gpuclient does not '
              'overwrite configuration files (they may hold other '
              'settings). Compare with --diff %(dir)s, or write to an empty '
              'directory and merge.')
            % {'dir': directory, 'files': ', '.join(taken)})
    written = []
    for path, text in file_list:
        full = os.path.join(directory, path)
        try:
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, 'x') as out:
                out.write(text)
        except OSError as exc:
            raise exceptions.CommandError(
                _('Cannot write %(path)s (%(error)s); written so far: '
                  '%(done)s.')
                % {'path': full, 'error': exc.strerror or exc,
                   'done': ', '.join(written) or _('nothing')}) from exc
        written.append(full)
    return written


class ShowConfig(command.Command):
    _description = _(
        "Show the nova.conf settings the GPU pools need.\n\n"
        "Rendered from the cloud's state (pools, and each pGPU's PCI "
        "address read from Placement): [pci] alias and device_spec, "
        "[devices] enabled_mdev_types and [mdev_<type>] device_addresses, "
        "and the scheduler settings, grouped by service and host, or as "
        "the Kolla-Ansible override tree. Only the keys gpuclient owns; "
        "what the cloud cannot tell is said in comments. With --diff, "
        "shows what an existing configuration lacks or contradicts and "
        "exits 1 when it does.")

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            '--pool', metavar='<pool>', action='append', default=[],
            help=_('Only this pool (name; repeat for several). Default: '
                   'every GPU pool.'))
        parser.add_argument(
            '--host', metavar='<host>', action='append', default=[],
            help=_('Only this compute host\'s part (service host, '
                   'hypervisor or provider name; repeatable); the '
                   'controller part is always shown.'))
        parser.add_argument(
            '--layout', choices=LAYOUTS, default='ini',
            help=_('ini: one block per service and host (default); kolla: '
                   'the files of a Kolla-Ansible config directory '
                   '(nova.conf, nova/nova-api.conf, nova/nova-scheduler.conf,'
                   ' nova/<inventory host>/nova.conf).'))
        parser.add_argument(
            '--output-dir', metavar='<directory>',
            help=_('Write the files there instead of printing them (never '
                   'overwrites a file) and print the paths written.'))
        parser.add_argument(
            '--diff', metavar='<path>',
            help=_('Compare with an existing nova.conf (one service\'s; '
                   'with --host, that host\'s nova-compute) or a '
                   'Kolla-Ansible config directory, and show what it lacks '
                   '(+) or contradicts (-/+).'))
        parser.add_argument(
            '--mig-mdev-type', metavar='<profile>=<mdev-type>',
            action='append', default=[],
            help=_('The mdev type that serves a MIG profile (e.g. '
                   '3g.40gb=nvidia-700), which the cloud does not record; '
                   'without it MIG hosts get a comment instead of [devices]'
                   '. Repeatable.'))
        parser.add_argument(
            '--numa-policy', metavar='<policy>',
            choices=('required', 'legacy', 'preferred', 'socket'),
            default=nova_config.DEFAULT_NUMA_POLICY,
            help=_('numa_policy of a [pci] alias whose flavors do not '
                   'agree on one hw:pci_numa_affinity_policy (required, '
                   'legacy, preferred or socket; default: preferred, as '
                   'gpu flavor create); otherwise the flavors\' policy is '
                   'used. A flavor\'s own policy overrides the alias\'s.'))
        return parser

    def take_action(self, parsed_args):
        if parsed_args.diff and parsed_args.output_dir:
            raise exceptions.CommandError(
                _('--diff and --output-dir do not go together: compare '
                  'first, then write to an empty directory.'))
        config, notes = collect(
            self.app.client_manager.gpu, parsed_args.pool, parsed_args.host,
            _parse_mig_types(parsed_args.mig_mdev_type),
            parsed_args.numa_policy)
        for note in notes:
            LOG.warning(note)
        out = self.app.stdout
        if parsed_args.diff:
            existing, where = read_existing(parsed_args.diff, config,
                                            parsed_args.host)
            findings = nova_config.diff(config, existing)
            out.write(nova_config.render_diff(findings, where))
            return 1 if findings else 0
        if parsed_args.output_dir:
            for path in write_files(
                    parsed_args.output_dir,
                    nova_config.files(config, parsed_args.layout)):
                out.write(path + '\n')
            return 0
        if parsed_args.layout == 'kolla':
            out.write(nova_config.render_kolla(config))
        else:
            out.write(nova_config.render_ini(config))
        return 0
