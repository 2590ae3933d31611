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

"""``openstack gpu device list``, ``show`` and ``release``."""

import logging

from osc_lib import exceptions
from osc_lib.cli import format_columns

from gpuclient import formatters
from gpuclient.i18n import _
from gpuclient.v1 import common

LOG = logging.getLogger(__name__)

# one list of names, which the openmetrics formatter reads too
COLUMNS = formatters.DEVICE_COLUMNS
LONG_COLUMNS = formatters.LONG_DEVICE_COLUMNS
SHOW_FIELDS = ('provider', 'provider_uuid', 'host', 'pools',
               'resource_class', 'pci_address', 'state', 'servers',
               'server_ids', 'projects', 'total', 'used', 'one_time_use',
               'traits')
# from the cloud's Prometheus (DCGM exporter), when one is configured
HEALTH_COLUMNS = formatters.HEALTH_DEVICE_COLUMNS
HEALTH_FIELDS = ('model', 'driver_version', 'health', 'last_xid',
                 'xid_action', 'row_remap', 'util')
LONG_HEALTH_COLUMNS = formatters.LONG_HEALTH_DEVICE_COLUMNS
LONG_HEALTH_FIELDS = ('xid_class', 'xid_since', 'health_source')
RELEASE_COLUMNS = ('Provider', 'Host', 'PCI Address', 'Resource Class',
                   'Action')
# the device argument's help, shared by show and release
DEVICE_HELP = _('a device provider\'s UUID or name, or HOST:PCI_ADDRESS '
                '(the compute service host and the device\'s PCI address)')


def add_health_args(parser):
    """--prometheus and --window of ``device list`` and ``show``."""
    common.add_prometheus_args(parser, window=False)
    parser.add_argument(
        '--window', metavar='<duration>',
        help=_('An application XID whose gauge changed in this period, '
               'ending now, is recent (a host XID stays until the GPU is '
               'reset), and utilisation is its mean over it: a number and '
               'a unit (s, m, h, d or w), e.g. 30m, 1h or 7d (default: 1h)'))


def window_arg(parsed_args):
    """--window in seconds (None: the default), checked before any
    request."""
    from gpuclient.rules import utilisation

    if parsed_args.window is None:
        return None
    return utilisation.window_seconds(parsed_args.window)


def _no_health_alone(parsed_args):
    """--no-health with an option that asks Prometheus is a CommandError,
    before any request."""
    given = [option for dest, option in (
        ('unhealthy', '--unhealthy'), ('prometheus', '--prometheus'),
        ('prometheus_selector', '--prometheus-selector'),
        ('window', '--window')) if getattr(parsed_args, dest)]
    if given:
        raise exceptions.CommandError(
            _('--no-health reads nothing from Prometheus, and %s asks '
              'it: drop one or the other.') % ', '.join(given))


def _health(row, long=False):
    """The HEALTH_FIELDS of ROW (and with LONG the LONG_HEALTH_FIELDS): ()
    when Prometheus was not read."""
    if 'health' not in row:
        return ()
    return tuple(row[f] for f in HEALTH_FIELDS + (
        LONG_HEALTH_FIELDS if long else ()))


class ServerColumn(format_columns.ListColumn):
    """The Server cell: the names of the servers holding the device in
    every list format, and ``holders``, (name, ID, project, flavor) per
    server, which -f openmetrics writes as one series per server."""

    def __init__(self, value, holders):
        super().__init__(value)
        self.holders = list(holders)


def _row(row, long=False):
    item = (row['host'], format_columns.ListColumn(row['pools']),
            row['resource_class'], row['pci_address'], row['state'],
            ServerColumn(row['servers'], row.get('holders', ())),
            format_columns.ListColumn(row['projects']))
    if long:
        item += (row['name'], row['uuid'], row['total'], row['used'],
                 row['one_time_use'],
                 format_columns.ListColumn(row['traits'] or []),
                 row.get('hypervisor_hostname'))
    return item + _health(row, long)


def long_arg(parsed_args):
    """--long, which -f openmetrics implies (its labels need the
    provider and hypervisor hostname)."""
    return parsed_args.long or getattr(
        parsed_args, 'formatter', None) == 'openmetrics'


class ListDevice(common.Lister):
    # rows that make metrics: -f openmetrics as well as cliff's formats
    # (setup.cfg's gpuclient.formatter.list)
    formatter_namespace = formatters.LIST_NAMESPACE

    _description = _(
        'List GPU devices as Placement and Nova know them.\n\n'
        'One row per GPU device provider (a passthrough GPU, a pGPU or VF '
        'carrying vGPUs, a MIG slice, a bare-metal node): host, pools, '
        'class, PCI address (from the provider\'s name), state (free, '
        'in-use, awaiting-release, unavailable), the servers holding it '
        'and their projects. A one-time-use device (Nova\'s '
        '"one_time_use" device_spec tag, trait HW_PCI_ONE_TIME_USE) that '
        'Nova reserved after its server was deleted is awaiting-release '
        'until "openstack gpu device release". With the cloud\'s '
        'Prometheus configured (--prometheus, prometheus_endpoint in '
        'clouds.yaml or $GPUCLIENT_PROMETHEUS_URL), the NVIDIA DCGM '
        'exporter\'s view is added: model, driver version, health, last '
        'XID with NVIDIA\'s recommended action, row-remap state and '
        'utilisation ("unknown" where no metric says), and with --long '
        'the XID\'s class, when its gauge took it and whether the figures '
        'are the host\'s or the guest\'s, in one query per metric. Read '
        'in a fixed number of requests, plus one per GPU device in use. '
        '--no-health leaves the DCGM exporter\'s view out and sends no '
        'query to Prometheus. '
        '"-f openmetrics" (which implies --long) writes '
        'one gpuclient_device_info series per device and server holding '
        'it, labelled to join the DCGM exporter\'s series in Prometheus '
        '(hostname, pci_bus_id, instance_id) with what Prometheus cannot '
        'know (server, project, flavor, pool). Needs admin.')

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            '--host', metavar='<host>',
            help=_('Only devices of this compute host (service host, '
                   'hypervisor hostname or ID, or resource provider name '
                   'or UUID)'))
        parser.add_argument(
            '--pool', metavar='<pool>',
            help=_('Only devices of hosts in this GPU pool (name or '
                   'aggregate ID)'))
        parser.add_argument(
            '--server', metavar='<server>',
            help=_('Only devices this server holds (name or ID, any '
                   'project)'))
        parser.add_argument(
            '--awaiting-release', action='store_true', default=False,
            help=_('Only one-time-use devices that Nova reserved after '
                   'their server was deleted, waiting to be cleaned and '
                   'released'))
        parser.add_argument(
            '--unhealthy', action='store_true', default=False,
            help=_('Only devices whose host-side DCGM series hold an XID '
                   'NVIDIA answers with a GPU reset, a reboot or a call to '
                   'support (until the GPU is reset), fail a DCGM health '
                   'watch or report a row-remap failure; a guest\'s own '
                   'exporter never puts a device here (needs the cloud\'s '
                   'Prometheus)'))
        parser.add_argument(
            '--long', action='store_true', default=False,
            help=_('List additional fields in output (provider name and '
                   'UUID, units total and used, one-time use, traits, '
                   'hypervisor hostname; with Prometheus, XID class, XID '
                   'since and health source); implied by -f openmetrics'))
        parser.add_argument(
            '--no-health', action='store_false', dest='health',
            default=True,
            help=_('Leave out the health columns (model, driver version, '
                   'health, XID, row remap, utilisation) and send no query '
                   'to Prometheus, even where one is configured; the '
                   'default where no Prometheus is configured (no '
                   '--prometheus, no prometheus_endpoint in clouds.yaml, '
                   'no $GPUCLIENT_PROMETHEUS_URL)'))
        add_health_args(parser)
        return parser

    def take_action(self, parsed_args):
        from gpuclient.ops import device_ops

        if parsed_args.health:
            common.use_prometheus_selector(self.app.client_manager.gpu,
                                           parsed_args)
        else:
            _no_health_alone(parsed_args)
        window = window_arg(parsed_args)
        rows, notes = device_ops.collect(
            self.app.client_manager.gpu, host=parsed_args.host,
            pool=parsed_args.pool, server=parsed_args.server,
            awaiting_release=parsed_args.awaiting_release,
            unhealthy=parsed_args.unhealthy, url=parsed_args.prometheus,
            window=window, health=parsed_args.health)
        for note in notes:
            LOG.warning(note)
        common.add_series_labels(self.app, parsed_args)
        long = long_arg(parsed_args)
        columns = COLUMNS + (LONG_COLUMNS if long else ())
        if device_ops.health_read(self.app.client_manager.gpu,
                                  parsed_args.prometheus,
                                  parsed_args.unhealthy,
                                  wanted=parsed_args.health):
            columns += HEALTH_COLUMNS + (LONG_HEALTH_COLUMNS if long
                                         else ())
        return columns, [_row(r, long) for r in rows]


class ShowDevice(common.ShowOne):
    _description = _(
        'Show one GPU device as Placement and Nova know it.\n\n'
        'Its provider, host, pools, class, PCI address, state, the servers '
        'holding it and their projects, one-time use and traits; with the '
        'cloud\'s Prometheus configured, model, driver version, health, '
        'last XID with NVIDIA\'s recommended action, row-remap state and '
        'utilisation from the NVIDIA DCGM exporter. Needs admin.')

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('device', metavar='<device>',
                            help=_('Device to display: %s') % DEVICE_HELP)
        add_health_args(parser)
        return parser

    def take_action(self, parsed_args):
        from gpuclient.ops import device_ops

        window = window_arg(parsed_args)
        common.use_prometheus_selector(self.app.client_manager.gpu,
                                       parsed_args)
        row = device_ops.show(self.app.client_manager.gpu,
                              parsed_args.device, url=parsed_args.prometheus,
                              window=window)
        values = dict(row, provider=row['name'], provider_uuid=row['uuid'])
        fields = SHOW_FIELDS + (HEALTH_FIELDS + LONG_HEALTH_FIELDS
                                if 'health' in row else ())
        return fields, tuple(
            format_columns.ListColumn(values[f] or [])
            if f in ('pools', 'servers', 'server_ids', 'projects', 'traits')
            else values[f] for f in fields)


class ReleaseDevice(common.Lister):
    _description = _(
        'Release one-time-use GPU devices that Nova reserved.\n\n'
        'Nova reserves a one-time-use device (Nova 2025.2, "one_time_use" '
        'in [pci] device_spec) in Placement once a server holds it, and '
        'never gives it back: after the server is deleted, clean the '
        'device (wipe its memory between tenants), then release it here. '
        'The device provider\'s reserved inventory is lowered to 0 with '
        'the provider generation. Refused for a device in use and for one '
        'that is not one-time-use; a device already released needs '
        'nothing. Every device is resolved before anything changes; each '
        'is then released on its own, and a failure names the device: the '
        'rows of the devices released are printed, then the command fails '
        'with "N of M devices failed to release." (exit status 1). '
        'Needs admin.')

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            'devices', metavar='<device>', nargs='+',
            help=_('Device(s) to release: %s') % DEVICE_HELP)
        common.add_dry_run_arg(parser)
        return parser

    def take_action(self, parsed_args):
        from gpuclient.ops import device_ops

        rows, failures = device_ops.release(
            self.app.client_manager.gpu, parsed_args.devices,
            dry_run=parsed_args.dry_run)
        self._failed = (failures, failures + len(rows))
        return RELEASE_COLUMNS, [
            (r['name'], r['host'], r['pci_address'], r['resource_class'],
             r['action']) for r in rows]

    def run(self, parsed_args):
        """The rows of what was released (every -f format), then "N of M
        devices failed to release." when some failed: OSC's multi-object
        commands say what they did before they fail."""
        self._failed = (0, 0)
        result = super().run(parsed_args)
        failed, total = self._failed
        if failed:
            raise exceptions.CommandError(
                _('%(failed)d of %(total)d devices failed to release.')
                % {'failed': failed, 'total': total})
        return result
