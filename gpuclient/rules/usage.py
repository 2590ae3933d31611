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

"""Pure: who holds which GPUs, and GPU-hours over a period.

No I/O here. ``gpu server list`` gives this module the servers (``GET
/servers/detail`` at compute API 2.47, each with its embedded flavor and
extra specs), the cloud snapshot (hypervisors, pools, providers) and the
Placement allocations of the GPU providers that have usage; ``gpu usage
list`` gives it Nova's per-server usage (``os-simple-tenant-usage``, which
keeps deleted servers) and the same servers. What a server asks for is
read from its *embedded* flavor (``gpuclient.rules.specs.read``), so a flavor
edited or deleted later does not rewrite history.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
import datetime
import re
import typing

from osc_lib import exceptions

from gpuclient.i18n import _
from gpuclient.rules import host_names
from gpuclient.rules import placement_names as names
from gpuclient.rules import pools as pools_mod
from gpuclient.rules import specs
from gpuclient.rules.scheduler import pci

if typing.TYPE_CHECKING:
    from gpuclient.rules import model

# --by keys: option value -> (row key, column name)
BY_KEYS = {
    'project': 'Project',
    'pool': 'Pool',
    'flavor': 'Flavor',
    'class': 'Resource Class',
}
DEFAULT_BY = ('project', 'pool')
# pool modes whose servers need a vGPU guest licence each
# vGPUs need a licence each: mdev, MIG and VF-backed alike
SEAT_MODES = (pools_mod.VGPU, pools_mod.MIG, pools_mod.VGPU_VF)

_PCI_NAME_RE = re.compile(
    r'(?:^|_)(?:pci_)?([0-9a-fA-F]{4})[_:]([0-9a-fA-F]{2})[_:]'
    r'([0-9a-fA-F]{2})[_.]([0-9a-fA-F])$')


# -- input --------------------------------------------------------------------

def parse_time(text: str | datetime.datetime,
               option: str = '--start') -> datetime.datetime:
    """An ISO 8601 time or date as a naive UTC datetime.

    A time without an offset is UTC (as Nova reads it).
    """
    try:
        value = datetime.datetime.fromisoformat(str(text).strip())
    except ValueError:
        raise exceptions.CommandError(
            _('%(option)s %(text)r is not a time: give an ISO 8601 time '
              'such as 2026-11-01T00:00:00Z or a date such as '
              '2026-11-01 (UTC unless an offset is given).')
            % {'option': option, 'text': text}) from None
    if value.tzinfo is not None:
        value = value.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    return value


# the period without --start, as openstack usage list: four weeks
DEFAULT_PERIOD = datetime.timedelta(weeks=4)


def period(
        start: str | datetime.datetime | None = None,
        end: str | datetime.datetime | None = None,
        now: datetime.datetime | None = None
) -> tuple[datetime.datetime, datetime.datetime]:
    """(start, end) as naive UTC datetimes from the option texts.

    END defaults to NOW, START to DEFAULT_PERIOD before END (four weeks
    ago when neither is given, as ``openstack usage list``). An empty
    period is a CommandError.
    """
    if end:
        end = parse_time(end, '--end')
    else:
        now = now or datetime.datetime.now(datetime.timezone.utc)
        if now.tzinfo is not None:
            now = now.astimezone(datetime.timezone.utc).replace(tzinfo=None)
        end = now
    start = parse_time(start, '--start') if start else end - DEFAULT_PERIOD
    check_period(start, end)
    return start, end


def check_period(start: datetime.datetime, end: datetime.datetime) -> None:
    if not start < end:
        raise exceptions.CommandError(
            _('The period is empty: --start %(start)s is not before --end '
              '%(end)s. Give a --start before --end.')
            % {'start': start.isoformat(), 'end': end.isoformat()})


def parse_rates(rates: Mapping[str, float] | None) -> dict[str, float]:
    """{class as given: price} -> {resource class: price per GPU-hour}.

    The prices are numbers already (``--rate``, checked where the option
    is parsed); the classes are normalised (vgpu is VGPU, the later of
    two spellings wins).
    """
    return {names.normalize_resource_class(key.strip()): float(price)
            for key, price in (rates or {}).items()}


def nova_time(text: str | None) -> datetime.datetime | None:
    """A time as Nova writes it ('2026-11-30T15:32:01.000000', with or
    without Z) as a naive UTC datetime; None for none."""
    if not text:
        return None
    return parse_time(str(text).replace('Z', '+00:00'), 'time')


# -- what a server holds ------------------------------------------------------

def gpu_request(
        server: Mapping[str, typing.Any] | None,
        pools: Mapping[str, Mapping[str, typing.Any]] | None = None
) -> dict[str, typing.Any]:
    """What a server's embedded flavor asks for: dict with gpus,
    resource_class (None when it cannot be told), mode, pool (the
    flavor's gpu_pool, else None) and flavor (its name)."""
    flavor = (server or {}).get('flavor') or {}
    pools = pools or {}
    reading = specs.read(flavor.get('extra_specs') or {}, pools)
    classes = sorted(reading['gpu_classes'])
    if not classes and reading['aliases']:
        known = pci.pool_aliases(pools)
        classes = sorted({known[a]['resource_class']
                          for a in reading['aliases'] if a in known})
    return {
        'gpus': reading['gpus'] or 0,
        'resource_class': ','.join(classes) or None,
        'mode': reading['mode'],
        'pool': reading['pool'],
        'flavor': flavor.get('original_name') or flavor.get('name')
        or flavor.get('id'),
    }


def pci_address(name: str | None) -> str | None:
    """The PCI address ('0000:84:00.0') a Nova device provider is named
    after ('gpu-vgpu-1_pci_0000_84_00_0', 'host_0000:41:00.0'), or
    None."""
    match = _PCI_NAME_RE.search(name or '')
    return ('%s:%s:%s.%s' % match.groups()).lower() if match else None


def device_label(provider_name: str | None, root_name: str | None,
                 mode: str | None) -> str:
    """What one provider is, for a person: the PCI address of a
    passthrough GPU, the pGPU of a vGPU, the MIG slice (VF), the node."""
    rest = provider_name or ''
    if root_name and rest.startswith(root_name) and rest != root_name:
        rest = rest[len(root_name):].lstrip('_')
    address = pci_address(rest) or rest
    if provider_name == root_name or not rest:
        return _('node %s') % provider_name
    if mode == pools_mod.VGPU:
        return _('pGPU %s') % address
    if mode == pools_mod.MIG:
        return _('MIG %s') % address
    if mode == pools_mod.VGPU_VF:
        # PCI in Placement: one provider per card holds its VFs; which VF
        # a server has only the host knows (libvirt's domain XML)
        return _('VF of %s') % address
    return address


def _pool_of(request, host_pools, pools, classes=()):
    """The pool a server's GPUs count in: its flavor's gpu_pool, else
    the one pool of its host handing out its class."""
    if request['pool']:
        return request['pool']
    wanted = set(classes) or set(
        (request['resource_class'] or '').split(',')) - {''}
    found = [name for name in host_pools
             if name in pools and (not wanted or pools[name].get(
                 'resource_class') in wanted)]
    return found[0] if len(found) == 1 else None


def server_rows(
        servers: Iterable[Mapping[str, typing.Any]],
        cloud: model.Cloud | None = None,
        allocations: Mapping[str, Mapping[str, dict[str, int]]] | None = None,
        host: str | None = None,
        pool: str | None = None) -> list[dict[str, typing.Any]]:
    """One row per server that holds GPUs.

    CLOUD (a ``gpuclient.rules.model.Cloud``, or None in a member's view)
    gives hypervisors, pools and providers; ALLOCATIONS is {provider
    uuid: {consumer uuid: {class: amount}}} of GPU providers. Without a
    cloud the GPUs come from the embedded flavor and the devices are
    unknown (Placement and hosts need admin). HOST and POOL filter.
    """
    pools = cloud.pools if cloud is not None else {}
    by_host = pools_mod.pools_by_host(pools)
    classes: set[str] = set()
    root_host = {}
    if cloud is not None:
        # read with Placement, as the allocations are (server_ops)
        assert cloud.gpu_classes is not None  # noqa: S101 - read
        classes = cloud.gpu_classes
        root_host = host_names.root_hosts(cloud.hypervisors)
    held: dict[str, list[tuple[str, str, int]]] = {}
    # consumer -> [(provider uuid, class, amount)]
    # a provider uuid (ALLOCATIONS), then the provider (model.Provider)
    provider: typing.Any
    for provider, consumers in sorted((allocations or {}).items()):
        for consumer, resources in consumers.items():
            for rc, amount in sorted(resources.items()):
                if rc in classes and amount:
                    held.setdefault(consumer, []).append(
                        (provider, rc, amount))
    rows = []
    for server in servers:
        request = gpu_request(server, pools)
        holdings = held.get(server['id'], [])
        server_host = server.get('OS-EXT-SRV-ATTR:host')
        providers, devices, rcs, gpus = [], [], [], 0
        for uuid, rc, amount in holdings:
            # held only with a CLOUD (CLASSES), read with Placement
            snap: model.Placement = (
                cloud.placement)  # type: ignore[union-attr,assignment]
            provider = snap.providers.get(uuid) or {'name': uuid,
                                                    'root': uuid}
            root = snap.providers.get(provider['root']) or provider
            if not server_host:
                server_host = root_host.get(provider['root'])
            providers.append(uuid)
            rcs.append(rc)
            gpus += amount
            label = device_label(provider['name'], root['name'],
                                 request['mode'])
            devices.append(label if amount == 1 else '%s (x%d)' % (
                label, amount))
        if cloud is not None and not holdings:
            continue  # admin: holds nothing in Placement
        if cloud is None:
            if not request['gpus'] or not server.get(
                    'OS-SRV-USG:launched_at'):
                continue
            gpus = request['gpus']
        rcs = sorted(set(rcs)) or ([request['resource_class']]
                                   if request['resource_class'] else [])
        # a server without a host finds no pool
        pool_name = _pool_of(request, by_host.get(server_host, ()), pools,  # type: ignore[arg-type]
                             rcs)
        mode = request['mode']
        if pool_name in pools:
            mode = pools[pool_name].get('mode') or mode
        if host and server_host != host:
            continue
        if pool and pool_name != pool:
            continue
        rows.append({
            'id': server['id'],
            'name': server.get('name'),
            'project': server.get('tenant_id'),
            'status': server.get('status'),
            'host': server_host,
            'pool': pool_name,
            'mode': mode,
            'resource_class': ','.join(rcs) or None,
            'gpus': gpus,
            'devices': devices,
            'providers': sorted(set(providers)),
            'flavor': request['flavor'],
            'since': server.get('OS-SRV-USG:launched_at')
            or server.get('created'),
        })
    rows.sort(key=lambda r: (r['host'] or '', r['pool'] or '',
                             r['name'] or '', r['id']))
    return rows


# -- usage over a period ---------------------------------------------------

def peak(
        intervals: Iterable[tuple[datetime.datetime, datetime.datetime]]
) -> int:
    """Most intervals [start, end) open at one instant (an interval that
    ends when another starts does not overlap it)."""
    events = []
    for start, end in intervals:
        if start < end:
            events.append((start, 1))
            events.append((end, -1))
    events.sort(key=lambda e: (e[0], e[1]))  # ends first on a tie
    best = current = 0
    for _when, step in events:
        current += step
        best = max(best, current)
    return best


def key_value(key: str, item: Mapping[str, typing.Any]) -> typing.Any:
    return item[{'project': 'project', 'pool': 'pool', 'flavor': 'flavor',
                 'class': 'resource_class'}[key]]


def usage_items(
        server_usages: Iterable[Mapping[str, typing.Any]],
        servers: Mapping[str, Mapping[str, typing.Any]],
        start: datetime.datetime, end: datetime.datetime,
        pools: Mapping[str, dict[str, typing.Any]] | None = None,
        flavors: Mapping[str, Mapping[str, typing.Any]] | None = None
) -> tuple[list[dict[str, typing.Any]], list[str]]:
    """One item per server that held GPUs in [START, END).

    SERVER_USAGES: Nova's ``server_usages`` (hours, started_at, ended_at,
    tenant_id, flavor name); SERVERS: {id: server at 2.47} for the
    embedded flavor and host; FLAVORS ({name: flavor}) stand in for a
    server Nova no longer lists (the current flavor of that name).
    Returns (items, notes).
    """
    pools = pools or {}
    by_host = pools_mod.pools_by_host(pools)
    items, notes = [], []
    for usage in server_usages:
        # a usage without a server id finds none
        server = servers.get(
            usage.get('instance_id'))  # type: ignore[arg-type]
        if server is None:
            flavor = (flavors or {}).get(
                usage.get('flavor'))  # type: ignore[arg-type]
            if flavor is None:
                notes.append(_(
                    'Server %(id)s (%(name)s): Nova no longer lists it and '
                    'no flavor is named %(flavor)r; its usage is left '
                    'out.') % {'id': usage.get('instance_id'),
                               'name': usage.get('name'),
                               'flavor': usage.get('flavor')})
                continue
            notes.append(_(
                'Server %(id)s: Nova no longer lists it; its GPUs are '
                'read from the current flavor %(flavor)s.')
                % {'id': usage.get('instance_id'),
                   'flavor': usage.get('flavor')})
            server = {'id': usage.get('instance_id'), 'flavor': dict(
                flavor, original_name=flavor.get('name'))}
        request = gpu_request(server, pools)
        if not request['gpus']:
            continue
        began = nova_time(usage.get('started_at'))
        ended = nova_time(usage.get('ended_at'))
        if began is None:
            continue  # never launched: Nova bills nothing
        opened, closed = max(began, start), min(ended or end, end)
        hours = float(usage.get('hours') or 0.0)
        if hours <= 0 and closed <= opened:
            continue
        pool_name = _pool_of(request, by_host.get(
            # a server without a host finds no pool
            server.get('OS-EXT-SRV-ATTR:host'), ()), pools)  # type: ignore[arg-type]
        mode = request['mode']
        if pool_name in pools:
            mode = pools[pool_name].get('mode') or mode
        items.append({
            'id': usage.get('instance_id'),
            'project': usage.get('tenant_id') or server.get('tenant_id'),
            'pool': pool_name,
            'flavor': request['flavor'] or usage.get('flavor'),
            'resource_class': request['resource_class'],
            'mode': mode,
            'gpus': request['gpus'],
            'hours': hours,
            'gpu_hours': hours * request['gpus'],
            'interval': (opened, closed),
        })
    return items, notes


def usage_rows(
        items: Iterable[Mapping[str, typing.Any]],
        by: Sequence[str] = DEFAULT_BY,
        rates: Mapping[str, float] | None = None, pool: str | None = None
) -> tuple[list[dict[str, typing.Any]], list[str]]:
    """Rows grouped by the BY keys: dict with the keys, servers,
    gpu_hours, seats (peak concurrent vGPU/MIG servers) and cost (None
    without RATES). Returns (rows, notes)."""
    groups: dict[tuple[typing.Any, ...], list[Mapping[str, typing.Any]]] = {}
    for item in items:
        if pool and item['pool'] != pool:
            continue
        key = tuple(key_value(k, item) for k in by)
        groups.setdefault(key, []).append(item)
    rows, unpriced = [], set()
    for key in sorted(groups, key=lambda k: tuple(v or '' for v in k)):
        group = groups[key]
        cost = None
        if rates is not None:
            cost = 0.0
            for item in group:
                rate = rates.get(item['resource_class'])
                if rate is None:
                    unpriced.add(item['resource_class'])
                else:
                    cost += rate * item['gpu_hours']
        rows.append({
            'keys': dict(zip(by, key, strict=True)),
            'servers': len({i['id'] for i in group}),
            'gpu_hours': sum(i['gpu_hours'] for i in group),
            'seats': peak([i['interval'] for i in group
                           if i['mode'] in SEAT_MODES]),
            'cost': cost,
        })
    notes = [_('No --rate for resource class %s: its GPU-hours are not in '
               'the Cost column.') % (rc or _('(unknown)'))
             for rc in sorted(unpriced, key=lambda r: r or '')]
    return rows, notes
