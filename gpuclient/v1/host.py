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

"""``openstack gpu host list``, ``cordon``, ``uncordon``, ``drain``,
``render`` and ``facts``."""

import logging

from cliff import columns as cliff_columns
from osc_lib.cli import format_columns

from gpuclient.i18n import _
from gpuclient.v1 import common

LOG = logging.getLogger(__name__)


class ListHost(common.Lister):
    _description = _(
        'List compute hosts that offer GPUs.\n\n'
        'One row per host and GPU class, with GPU figures (total, used, '
        'free) as Placement counts them: the total is the capacity, '
        'total minus reserved times allocation_ratio. Awaiting Release '
        'counts one-time-use devices that Nova reserved after their '
        'server was deleted (in the total, neither used nor free; see '
        '"openstack gpu device release"). Bare-metal '
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
            help=_('Only hosts in this GPU pool (name or aggregate ID)'),
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
            'Awaiting Release',
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
                row['awaiting_release'],
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


# -- maintenance: cordon, uncordon --------------------------------------------

SERVICE_COLUMNS = ('Host', 'Status', 'Reason', 'Action')


def _service_rows(rows):
    return SERVICE_COLUMNS, [
        (row['host'], row['status'], row['reason'], row['action'])
        for row in rows]


def _add_hosts_arg(parser, verb):
    parser.add_argument(
        'hosts', metavar='<host>', nargs='+',
        help=_('Compute host(s) to %s (service host, hypervisor hostname '
               'or ID, or resource provider name or UUID)') % verb)


class CordonHost(common.Lister):
    _description = _(
        'Keep new servers off GPU hosts; servers on them stay.\n\n'
        'Disables the nova-compute service of each host with a reason '
        'that starts with "gpuclient: ", so Nova\'s '
        'COMPUTE_STATUS_DISABLED prefilter keeps the scheduler away and '
        '"openstack gpu host uncordon" knows the cordon is gpuclient\'s. '
        'A service already disabled is left as it is. Needs compute API '
        '2.53 or later.'
    )

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        _add_hosts_arg(parser, _('cordon'))
        parser.add_argument(
            '--reason', metavar='<text>',
            help=_('Why the hosts are cordoned (default: maintenance); '
                   'stored as the service\'s disabled reason after '
                   '"gpuclient: "; at most 244 characters (Nova keeps 255 '
                   'with the prefix)'))
        common.add_dry_run_arg(parser)
        return parser

    def take_action(self, parsed_args):
        from gpuclient.ops import maintenance_ops

        rows, _plan = maintenance_ops.cordon(
            self.app.client_manager.gpu, parsed_args.hosts,
            reason=parsed_args.reason, dry_run=parsed_args.dry_run)
        return _service_rows(rows)


class UncordonHost(common.Lister):
    _description = _(
        'Let new servers land on cordoned GPU hosts again.\n\n'
        'Enables the nova-compute service of each host that gpuclient '
        'disabled (its reason starts with "gpuclient: "). A service '
        'disabled by someone else, for another reason, is left alone and '
        'named. A host that a drain still holds (its reason starts with '
        '"gpuclient: draining: ": the drain runs, or stopped before its '
        'hosts read back empty) is refused, nothing changed, unless '
        '--force. Needs compute API 2.53 or later.'
    )

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        _add_hosts_arg(parser, _('uncordon'))
        parser.add_argument(
            '--force', action='store_true', default=False,
            help=_('Enable the services of hosts that a drain still holds '
                   '(default: refuse, naming the drain\'s reason); servers '
                   'may then land on a host being drained'))
        common.add_dry_run_arg(parser)
        return parser

    def take_action(self, parsed_args):
        from gpuclient.ops import maintenance_ops

        rows, _plan, note = maintenance_ops.uncordon(
            self.app.client_manager.gpu, parsed_args.hosts,
            dry_run=parsed_args.dry_run, force=parsed_args.force)
        if note:
            LOG.warning(note)
        return _service_rows(rows)


DRAIN_COLUMNS = ('Server', 'Name', 'Project', 'Flavor', 'Source',
                 'Resource Class', 'GPUs', 'Devices', 'Method',
                 'Destination', 'Downtime', 'Reason')


class DrainHost(common.Lister):
    _description = _(
        'Move every server off GPU hosts, for their maintenance.\n\n'
        'Cordons the hosts (as "openstack gpu host cordon"), then moves '
        'each server as Nova allows for its device: live where it can, '
        'else cold (stop, move, start) or shelved, with --allow-downtime; '
        'bare-metal and Cyborg servers stay. Each destination is a host '
        'where the server\'s embedded flavor fits (the request "openstack '
        'gpu candidate list" sends, never a host being drained or '
        'cordoned; '
        'each choice counted before the next, so two servers never count '
        'on the same last GPU), named to Nova, whose scheduler checks it; '
        'each move is waited for and its GPU allocation checked in '
        'Placement. One row per server. Nothing is changed when a server '
        'cannot leave, unless --skip-unmovable. Moves are not undone: a '
        'failed or interrupted drain stops and says what moved, and '
        'running it again finishes it from where the servers are (a move '
        'still under way is waited for). After the moves the hosts are '
        'read back (their servers and the migrations coming to them): '
        'what arrived meanwhile is moved in another round (three at '
        'most), and anything still there at the end is an error naming '
        'it. The cordon\'s reason is "gpuclient: draining: <reason>" '
        'until the hosts read back empty, so that "openstack gpu host '
        'uncordon" refuses them meanwhile. Needs compute API 2.59 or '
        'later (2.53 for --dry-run).'
    )

    def get_parser(self, prog_name):
        from gpuclient.rules import maintenance

        parser = super().get_parser(prog_name)
        _add_hosts_arg(parser, _('drain'))
        parser.add_argument(
            '--reason', metavar='<text>',
            help=_('Why the hosts are drained (default: maintenance): the '
                   'cordon\'s disabled reason after "gpuclient: draining: " '
                   '(after "gpuclient: " once drained), and the reason in '
                   'the notices; at most 234 characters (Nova keeps 255 '
                   'with the prefix)'))
        parser.add_argument(
            '--method', metavar='<method>', choices=maintenance.METHODS,
            default=maintenance.AUTO,
            help=_('How servers leave: auto (default: live where Nova '
                   'allows it, else cold, else shelve), live, cold or '
                   'shelve'))
        parser.add_argument(
            '--allow-downtime', action='store_true', default=False,
            help=_('Allow moves with downtime (cold migration stops and '
                   'starts the server; shelve keeps it down until its '
                   'owner unshelves it)'))
        parser.add_argument(
            '--no-confirm', dest='confirm', action='store_false',
            default=True,
            help=_('Leave cold migrations in VERIFY_RESIZE for their '
                   'owners to confirm or revert (default: confirm each '
                   'once the server is on its destination; a later drain '
                   'without this option confirms them)'))
        parser.add_argument(
            '--skip-unmovable', action='store_true', default=False,
            help=_('Cordon the hosts and move the servers that can move '
                   'even when others cannot (they stay, and are named); '
                   'without it such a plan changes nothing'))
        parser.add_argument(
            '--notice-dir', metavar='<dir>',
            help=_('Write one plain-text notice per project into this '
                   'directory (its servers, how each moves, the downtime '
                   'and the reason), for the operator to send; written '
                   'once the plan is final, before the first write; a '
                   'notice file already there is kept when its text is '
                   'the same, else the command refuses'))
        parser.add_argument(
            '--host-fact', metavar='<[host:]key>=<value>',
            action='append', default=[], dest='host_facts',
            help=_('What the API does not show about the hosts, for live '
                   'migration (repeat option): nova=<release> (e.g. '
                   '2025.1), libvirt=<version>, qemu=<version>, '
                   'live_migratable=true|false (the PCI device_spec and '
                   'alias flag), mdev_types=<type>[,<type>], '
                   'post_copy=true|false (the host\'s [libvirt] '
                   'live_migration_permit_post_copy: true plans no live '
                   'migration of GPU servers); for every '
                   'host, or one with <host>:. Where gpuclient-host-facts '
                   'runs on the hosts, the nova, libvirt, qemu and '
                   'mdev_types it collected are read from the cloud\'s '
                   'Prometheus: a --host-fact overrides them (a warning '
                   'names each it changes). Unknown facts plan no live '
                   'migration'))
        common.add_prometheus_args(parser, _(
            '; the versions and mdev types gpuclient-host-facts collected '
            'on the hosts are read there'), window=False)
        # where each server fits is the request gpu candidate list builds
        common.add_nova_conf_args(parser, overrides=True)
        parser.add_argument(
            '--timeout', metavar='<seconds>', type=int, default=600,
            help=_('How long to wait for each move (default: 600)'))
        parser.add_argument(
            '--dry-run', action='store_true', default=False,
            help=_('Show the plan, one row per server, and change nothing '
                   '(notices are still written with --notice-dir)'))
        return parser

    def take_action(self, parsed_args):
        from osc_lib import exceptions

        from gpuclient.ops import maintenance_ops
        from gpuclient.rules import maintenance

        if parsed_args.timeout <= 0:
            raise exceptions.CommandError(_(
                '--timeout must be a positive number of seconds.'))
        try:
            facts = maintenance.parse_facts(parsed_args.host_facts)
        except ValueError as exc:
            raise exceptions.CommandError(_(
                '--host-fact %(item)s: give [<host>:]<key>=<value> with '
                'a key of %(keys)s (versions as 8.6.0 or 2025.1, '
                'live_migratable true or false).') % {
                    'item': exc, 'keys': ', '.join(maintenance.FACT_KEYS)
                }) from None
        common.use_prometheus_selector(self.app.client_manager.gpu,
                                       parsed_args)
        rows, plan, written = maintenance_ops.drain(
            self.app.client_manager.gpu, parsed_args.hosts,
            requested=parsed_args.method,
            allow_downtime=parsed_args.allow_downtime,
            dry_run=parsed_args.dry_run, reason=parsed_args.reason,
            confirm=parsed_args.confirm, timeout=parsed_args.timeout,
            skip_unmovable=parsed_args.skip_unmovable,
            notice_dir=parsed_args.notice_dir, facts=facts,
            settings=common.settings_from_args(parsed_args),
            prometheus=parsed_args.prometheus)
        for path in written:
            LOG.info(_('Notice written: %s'), path)
        if parsed_args.dry_run:
            for line in plan.lines():
                LOG.info(line)
        return DRAIN_COLUMNS, [
            (row['server'], row['name'], row['project'], row['flavor'],
             row['source'], row['resource_class'], row['gpus'],
             format_columns.ListColumn(row['devices']), row['method'],
             row['destination'], row['downtime'], row['reason'])
            for row in rows]


# -- render: host preparation as files ----------------------------------------

RENDER_FORMATS = ('systemd', 'ansible')


def _take_format_option(parser):
    """Give ``--format`` to the kind of files (``gpu host render --format
    systemd|ansible``, as the product's CLI names it): cliff's output
    format keeps its short name, ``-f``."""
    for action in parser._actions:
        if action.dest == 'formatter' and '--format' in action.option_strings:
            action.option_strings.remove('--format')
            del parser._option_string_actions['--format']


class RenderHost(common.Lister):
    _description = _(
        'Render what each host of a pool needs, as files.\n\n'
        'The host preparation of the pool\'s mode, for the tools that '
        'apply it (gpuclient applies none of it): the IOMMU on the kernel '
        'command line (intel_iommu=on or amd_iommu=on, iommu=pt: a GRUB '
        'drop-in picks the line of the host\'s CPU vendor) and nouveau '
        'blacklisted; for passthrough pools the GPUs bound to vfio-pci at '
        'boot (options vfio-pci ids=, softdeps, modules-load.d); for mig '
        'pools each card\'s MIG layout as Placement shows it now, as an '
        'nvidia-mig-parted configuration with the script and systemd unit '
        'that apply it at boot before nova-compute (GPU instances do not '
        'survive a reboot, nor, from Hopper on, MIG mode); for vgpu-vf '
        'pools the VF script and unit of "gpu profile plan", with each '
        'card\'s current types; for vgpu pools nothing more (Nova creates '
        'the mdevs). Bare-metal pools are refused: Ironic prepares its '
        'nodes. One row per file written; an existing file is never '
        'overwritten (nothing is written then). To change a layout, '
        '"openstack gpu profile plan --pool <pool> --output-dir <dir>".')

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        _take_format_option(parser)
        parser.add_argument(
            '--pool', metavar='<pool>', required=True,
            help=_('Pool whose hosts to prepare (name or aggregate ID)'))
        parser.add_argument(
            '--output-dir', metavar='<directory>', required=True,
            help=_('Write the files into this directory (made if missing; '
                   'an existing file is never overwritten): per host a '
                   'directory laid out as on the host (systemd), or '
                   'host_vars/<host>.yml (ansible)'))
        parser.add_argument(
            '--format', metavar='<format>', dest='file_format',
            choices=RENDER_FORMATS, default=RENDER_FORMATS[0],
            help=_('The files: systemd (default: modprobe.d, '
                   'modules-load.d, a GRUB drop-in, scripts and systemd '
                   'units under <directory>/<host>/) or ansible (variables '
                   'of the stackhpc.linux roles iommu, gpu_passthrough and '
                   'vgpu, and gpuclient_* for the rest, in '
                   '<directory>/host_vars/). Not the table\'s format: that '
                   'is -f'))
        parser.add_argument(
            '--extra-pci-id', metavar='<vendor:product>', action='append',
            default=[], dest='extra_pci_ids',
            help=_('Passthrough pools: also bind this PCI function to '
                   'vfio-pci, another function in the GPU\'s IOMMU group '
                   'such as its audio or USB-C controller (lspci -nn shows '
                   'its [vendor:product]), e.g. 10de:22ba (repeat option '
                   'for several)'))
        parser.add_argument(
            '--model', metavar='<model>',
            help=_('Mig pools: the GPU model of the cards, when the cloud '
                   'cannot tell it (A100 80GB and H100 80GB share MIG '
                   'profile names)'))
        common.add_key_value_arg(
            parser, '--mig-mdev-type', '<profile>=<mdev-type>',
            'mig_mdev_types', '1g.10gb=nvidia-699',
            _('Mig pools with --format ansible: the mdev type that serves '
              'a MIG profile (e.g. 1g.10gb=nvidia-699), which the cloud '
              'does not record; with it, vgpu_definitions get the '
              'virtual_functions the vgpu role enables. Repeatable'))
        return parser

    def take_action(self, parsed_args):
        from osc_lib import exceptions

        from gpuclient.ops import host_render_ops
        from gpuclient.rules import catalogue
        from gpuclient.rules import host_prep
        from gpuclient.rules import pools
        from gpuclient.rules.profiles import cloud as profile_cloud

        try:
            # what the cloud cannot check is checked before it is read
            model = (catalogue.model_name(parsed_args.model)
                     if parsed_args.model else None)
            options = host_prep.Options(
                file_format=parsed_args.file_format,
                extra_pci_ids=tuple(pools.normalize_pci_id(pci_id) for
                                    pci_id in parsed_args.extra_pci_ids),
                model=model,
                mig_types=host_prep.mig_type_map(
                    parsed_args.mig_mdev_types))
            rows, notes = host_render_ops.render(
                self.app.client_manager.gpu, parsed_args.pool,
                parsed_args.output_dir, options)
        except (catalogue.UnknownName, profile_cloud.CannotTell, ValueError,
                OSError) as e:  # profiles.vf.CannotPlan is a ValueError
            raise exceptions.CommandError(str(e)) from e
        for note in notes:
            LOG.warning(note)
        return ('Host', 'File', 'What'), [
            (row['host'], row['file'], row['what']) for row in rows]


# -- facts: what each host says of itself -------------------------------------

FACTS_COLUMNS = ('Host', 'Device', 'Driver', 'IOMMU Group', 'Group Drivers',
                 'NUMA Node', 'VFs', 'vGPU Types', 'MIG', 'MIG Layout',
                 'Age', 'Status')
LONG_FACTS_COLUMNS = ('IOMMU Active', 'Kernel IOMMU Args', 'Kernel',
                      'NVIDIA Driver', 'libvirt', 'QEMU', 'nova-compute',
                      'mdevctl', 'Unreadable')


class AgeColumn(cliff_columns.FormattableColumn):
    """An age in seconds: a number in json/yaml, '4m 10s' elsewhere."""

    def human_readable(self):
        if self._value is None:
            return ''
        seconds = int(self._value)
        parts = []
        for unit, size in (('d', 86400), ('h', 3600), ('m', 60)):
            if seconds >= size or parts:
                parts.append('%d%s' % (seconds // size, unit))
                seconds %= size
            if len(parts) == 2:
                return ' '.join(parts)
        return ' '.join(parts + ['%ds' % seconds])

    def machine_readable(self):
        return self._value


def _listed(value):
    """A list (or dict) cell as its column, a text ('unreadable') or None
    as it is."""
    if isinstance(value, dict):
        return format_columns.DictColumn(value)
    if isinstance(value, list):
        return format_columns.ListColumn(value)
    return value


class FactsHost(common.Lister):
    _description = _(
        'Show what GPU hosts say of themselves.\n\n'
        'The facts gpuclient-host-facts collected on each host, as the '
        'cloud\'s Prometheus holds them (the series it publishes; see '
        'the host preparation guide): one row per NVIDIA GPU with its '
        'driver, IOMMU group and the drivers of the group\'s other members '
        '(the card\'s audio or USB-C function), NUMA node, VFs '
        '(enabled/total), vGPU types (written in its VFs, or mdev types '
        'made and available), MIG mode and GPU instances, and the age of '
        'the facts. A fact the collector could not read says '
        '"unreadable", never a value. A host with no series gets one row '
        'saying so; a host two collectors claim is not judged. Without '
        'HOST or --pool: the hosts of every pool (bare-metal pools '
        'aside) and every host with series. A constant number of PromQL '
        'queries whatever the number of hosts.')

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            'hosts', metavar='<host>', nargs='*',
            help=_('Compute host(s) to show (service host, hypervisor '
                   'hostname or ID, or resource provider name or UUID; '
                   'default: every GPU host)'))
        parser.add_argument(
            '--pool', metavar='<pool>',
            help=_('Only hosts in this GPU pool (name or aggregate ID)'))
        parser.add_argument(
            '--long', action='store_true', default=False,
            help=_('List additional fields in output (each host\'s IOMMU '
                   'state and kernel IOMMU options, the versions of its '
                   'kernel, NVIDIA driver, libvirt, QEMU and nova-compute, '
                   'whether mdevctl is installed, and the facts the '
                   'collector could not read)'))
        common.add_prometheus_args(parser, window=False)
        return parser

    def take_action(self, parsed_args):
        from gpuclient.ops import host_facts_ops
        from gpuclient.rules.host_facts import listing

        client = self.app.client_manager.gpu
        common.use_prometheus_selector(client, parsed_args)
        rows, notes = host_facts_ops.collect(
            client, names=parsed_args.hosts, pool=parsed_args.pool,
            url=parsed_args.prometheus)
        for note in notes:
            LOG.warning(note)
        fields = listing.FIELDS
        columns = FACTS_COLUMNS
        if parsed_args.long:
            fields += listing.LONG_FIELDS
            columns += LONG_FACTS_COLUMNS
        data = []
        for row in rows:
            data.append(tuple(
                AgeColumn(row[field]) if field == 'age'
                else _listed(row[field]) for field in fields))
        return columns, data
