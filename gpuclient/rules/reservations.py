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

"""Pure: what Blazar (OpenStack's reservation service) does to GPU hosts
and flavors (issue 40, rule 6).

Read from blazar 18.0.0 (2026.2, the release beside Nova 34) and
blazar-nova 10.0.0 (its scheduler filter):

* **Instance reservations** (``flavor:instance``) size a reservation by
  ``blazar/plugins/flavor/flavor_plugin.py``
  ``FlavorPlugin._estimate_flavor_resources``: VCPU (PCPU with
  ``hw:cpu_policy=dedicated``), MEMORY_MB, DISK_GB, and only the
  unsuffixed ``resources:<class>`` and ``trait:<name>`` extra specs.
  ``pci_passthrough:alias`` and numbered request groups
  (``resources1:``, ``trait1:``, ``resources_x:``) are dropped, so the
  GPUs of a passthrough or multi-group flavor are not counted
  (``estimate``, ``dropped``).
* Blazar counts a host's slots against the inventory it copied from the
  host's **root** provider when the host was enrolled
  (``blazar/plugins/oshosts/host_plugin.py`` ``create_computehost``:
  ``placement_client.get_inventory`` of the provider named as the
  hypervisor), and ``FlavorPlugin._get_hosts_list`` finds no slot on a
  host whose copied inventory lacks a class the flavor asks for: a class
  that lives on child providers (vGPU, PCI in Placement, MIG) cannot be
  reserved by ``resources:`` either (``unreservable``).
* **Hosts held by Blazar**: Blazar lists the hosts enrolled in it
  (``GET /v1/os-hosts``, ``blazar/api/v1/oshosts``; admin only by its
  default policy ``blazar:oshosts:get``), each with ``service_name``, the
  compute service host it puts into its aggregates
  (``host_plugin.create_computehost``). Enrolled hosts sit in the freepool
  aggregate (``[nova] aggregate_freepool_name``, default ``freepool``, a
  name each cloud may change: ``blazar/utils/openstack/nova.py``
  ``ReservationPool``), so that name alone is asked only where Blazar's
  list cannot be read (``held_hosts``' ENROLLED None); a host
  reservation moves them into a lease aggregate whose availability zone
  starts with ``blazar_`` (``host_plugin.reserve_resource``,
  ``[physical:host] blazar_az_prefix``) and whose metadata has
  ``blazar:owner``; an instance reservation makes an aggregate with
  metadata ``reservation=<id>`` and ``CUSTOM_RESERVATION_<ID>``
  inventory on the host's child provider ``blazar_<host>``
  (``blazar/utils/openstack/placement.py``). blazar-nova's
  ``BlazarFilter`` (``blazarnova/scheduler/filters/blazar_filter.py``)
  passes a host in the freepool or a ``blazar_`` zone only to a request
  with a reservation hint or the reservation flavor key
  (``aggregate_instance_extra_specs:reservation``): for ordinary flavors
  such a host is not available (``held_hosts``, ``host_reasons``).
"""

from collections.abc import Container
from collections.abc import Iterable
from collections.abc import Mapping
import re
import typing

from gpuclient.i18n import _
from gpuclient.rules import host_names

# the release the rules were read from
BLAZAR_RELEASE = 'blazar 18.0.0 (2026.2)'
# the service type Blazar registers in the Keystone catalog
SERVICE_TYPE = 'reservation'
# [nova] aggregate_freepool_name (and blazar-nova's [blazar:physical:host])
FREEPOOL = 'freepool'
# [physical:host] blazar_az_prefix, and the old prefix BlazarFilter keeps
AZ_PREFIXES = ('blazar_', 'blazar:')
# ReservationPool.create: the owner key of every Blazar aggregate
OWNER_KEY = 'blazar:owner'
# instance_plugin.RESERVATION_PREFIX: the aggregate metadata key of an
# instance reservation, and the flavor key of its reserved flavor
RESERVATION_KEY = 'reservation'
FLAVOR_EXTRA_SPEC = 'aggregate_instance_extra_specs:' + RESERVATION_KEY
# placement.BlazarPlacementClient.create_reservation_class
RESERVATION_CLASS_PREFIX = 'CUSTOM_RESERVATION_'
# the filter that keeps ordinary requests off held hosts
FILTER_NAME = 'BlazarFilter'

PCI_ALIAS = 'pci_passthrough:alias'
# Nova's numbered (or named) request groups: resources1:, trait_x:
_GROUPED = re.compile(r'^(resources|trait)([1-9][0-9]*|_[a-zA-Z0-9_-]+):')

# why a flavor:instance reservation cannot hold a flavor's GPUs
ALIAS_DROPPED = 'pci_alias_dropped'
GROUPS_DROPPED = 'numbered_groups_dropped'
CLASS_NOT_ON_ROOT = 'class_not_on_root'


def estimate(
        flavor: Mapping[str, typing.Any]
) -> tuple[dict[str, int], dict[str, str]]:
    """(resources, traits) a ``flavor:instance`` reservation counts for
    FLAVOR (a Nova flavor dict with ``extra_specs``), as Blazar's
    ``FlavorPlugin._estimate_flavor_resources`` sizes it: the flavor's
    VCPU (PCPU when dedicated), MEMORY_MB, DISK_GB (root plus ephemeral)
    and the unsuffixed ``resources:``/``trait:`` extra specs only."""
    extra = flavor.get('extra_specs') or {}
    vcpus = int(flavor.get('vcpus') or 0)
    resources = {
        'VCPU': vcpus, 'MEMORY_MB': int(flavor.get('ram') or 0),
        'DISK_GB': int(flavor.get('disk') or 0) + int(
            flavor.get('OS-FLV-EXT-DATA:ephemeral') or 0)}
    if extra.get('hw:cpu_policy') == 'dedicated':
        resources['PCPU'], resources['VCPU'] = vcpus, 0
    traits: dict[str, str] = {}
    for key, value in extra.items():
        scope, _sep, name = key.partition(':')
        if scope == 'trait':
            traits[name.split(':')[0]] = value
        elif scope == 'resources':
            resources[name.split(':')[0]] = int(value)
    return resources, traits


def dropped(extra_specs: Mapping[str, str] | None) -> dict[str, list[str]]:
    """{reason: [keys]}: the extra specs asking for devices that Blazar's
    estimate leaves out (ALIAS_DROPPED, GROUPS_DROPPED)."""
    found: dict[str, list[str]] = {}
    for key in sorted(extra_specs or {}):
        if key == PCI_ALIAS:
            found.setdefault(ALIAS_DROPPED, []).append(key)
        elif _GROUPED.match(key):
            found.setdefault(GROUPS_DROPPED, []).append(key)
    return found


def unreservable(flavor: Mapping[str, typing.Any],
                 root_classes: Container[str] | None = None
                 ) -> dict[str, list[str]]:
    """{reason: [what]}: why a ``flavor:instance`` reservation of FLAVOR
    does not hold its GPUs ({}: it does). ROOT_CLASSES: the classes the
    root providers of the flavor's hosts offer (None: not judged); an
    unsuffixed ``resources:`` class none of them offers is
    CLASS_NOT_ON_ROOT (Blazar copies the root's inventory only)."""
    found = dropped(flavor.get('extra_specs'))
    if root_classes is not None:
        resources, _traits = estimate(flavor)
        missing = sorted(rc for rc, amount in resources.items()
                         if amount and rc not in root_classes)
        if missing:
            found[CLASS_NOT_ON_ROOT] = missing
    return found


def reason_text(reason: str, what: Iterable[str]) -> str:
    """One reason of ``unreservable`` in operator terms."""
    what = ', '.join(what)
    if reason == ALIAS_DROPPED:
        return _('Blazar sizes a reservation without %s (its flavor '
                 'plugin counts only unsuffixed resources: and trait: '
                 'extra specs), so the PCI devices are not held') % what
    if reason == GROUPS_DROPPED:
        return _('Blazar drops the numbered request groups %s when it '
                 'sizes a reservation, so their devices are not '
                 'held') % what
    return _('Blazar counts only the inventory of a host\'s root '
             'provider, which has no %s (it lives on child providers): '
             'the reservation finds no host') % what


def _zone(aggregate: Mapping[str, typing.Any]) -> str:
    return str(aggregate.get('availability_zone') or '')


def blazar_aggregate(aggregate: Mapping[str, typing.Any],
                     freepool: str = FREEPOOL) -> str | None:
    """Why AGGREGATE (a dict as ``pools.aggregate_dict`` gives it) is
    Blazar's, or None: the freepool, a host reservation's lease aggregate
    (zone prefix, as BlazarFilter.fetch_blazar_pools finds it, or the
    owner key), an instance reservation's aggregate."""
    metadata = aggregate.get('metadata') or {}
    if aggregate.get('name') == freepool:
        return _('in the freepool aggregate %s (enrolled, not leased)') % (
            freepool)
    if _zone(aggregate).startswith(AZ_PREFIXES) or OWNER_KEY in metadata:
        return _('in lease aggregate %(agg)s (zone %(zone)s)') % {
            'agg': aggregate.get('name'), 'zone': _zone(aggregate) or '-'}
    if RESERVATION_KEY in metadata:
        return _('in instance reservation aggregate %s') % (
            aggregate.get('name'))
    return None


def enrolled_hosts(
        records: Iterable[Mapping[str, typing.Any]],
        hypervisors: Iterable[Mapping[str, typing.Any]] | None = ()
) -> list[str]:
    """The compute hosts of Blazar's ``GET /v1/os-hosts`` RECORDS (host
    dicts as Blazar answers them), sorted: each record's ``service_name``
    (the host Blazar puts into its aggregates), else the Nova host of the
    hypervisor named its ``hypervisor_hostname``."""
    by_name = {}
    for hv in hypervisors or ():
        host = host_names.nova_host(hv)
        if host and hv.get('hypervisor_hostname'):
            by_name[hv['hypervisor_hostname']] = host
    found = set()
    for record in records:
        host = record.get('service_name') or by_name.get(
            record.get('hypervisor_hostname'))
        if host:
            found.add(host)
    return sorted(found)


def held_hosts(aggregates: Iterable[Mapping[str, typing.Any]],
               host_classes: Mapping[str, Iterable[str]] | None = None,
               freepool: str = FREEPOOL, enrolled: Iterable[str] | None = None,
               unread: str | None = None) -> dict[str, list[str]]:
    """{host: [why]}: the hosts Blazar holds (sorted reasons).

    ENROLLED: the hosts Blazar lists as enrolled (``enrolled_hosts``), all
    held, whatever its freepool aggregate is named; None when its list
    could not be read (UNREAD: why), where the members of the aggregate
    named FREEPOOL count instead, said so. Besides: members of a lease or
    instance reservation aggregate (``blazar_aggregate``) and, from
    HOST_CLASSES ({host: resource classes of its provider trees}), hosts
    carrying a ``CUSTOM_RESERVATION_*`` inventory (an instance
    reservation)."""
    held: dict[str, set[str]] = {}
    for aggregate in aggregates:
        if enrolled is not None and aggregate.get('name') == freepool:
            continue  # Blazar said which hosts it holds: not by the name
        why = blazar_aggregate(aggregate, freepool)
        if why is None:
            continue
        if aggregate.get('name') == freepool:
            why = _('%(why)s, found by its name: Blazar\'s host list could '
                    'not be read (%(error)s)') % {
                        'why': why, 'error': str(
                            unread or _('not asked')).rstrip('.')}
        for host in aggregate.get('hosts') or ():
            held.setdefault(host, set()).add(why)
    for host, classes in (host_classes or {}).items():
        for rc in sorted(classes):
            if rc.startswith(RESERVATION_CLASS_PREFIX):
                held.setdefault(host, set()).add(
                    _('carries %s inventory (an instance reservation)')
                    % rc)
    for host in enrolled or ():
        if host not in held:
            # in Blazar's free pool, whatever its aggregate is named
            held[host] = {_('enrolled and not leased, as Blazar\'s host '
                            'list says')}
    return {host: sorted(whys) for host, whys in held.items()}


def passes(extra_specs: Mapping[str, str] | None) -> bool:
    """Whether BlazarFilter lets a request of EXTRA_SPECS onto a held
    host without a scheduler hint: only a reservation's own flavor."""
    return FLAVOR_EXTRA_SPEC in (extra_specs or {})


def with_filter(settings: dict[str, typing.Any]) -> dict[str, typing.Any]:
    """SETTINGS with BlazarFilter enabled where Blazar runs and the
    filters are gpuclient's defaults (Blazar's install guide adds it to
    ``[filter_scheduler] enabled_filters``); filters read from a
    nova.conf or an option are taken as they are."""
    source = (settings.get('sources') or {}).get('enabled_filters')
    filters = list(settings['enabled_filters'])
    if source not in (None, 'default') or FILTER_NAME in filters:
        return settings
    return dict(settings, enabled_filters=filters + [FILTER_NAME])
