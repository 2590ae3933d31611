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

"""Pure: bare-metal (Ironic) nodes as Placement and Ironic show them.

Nova's ironic driver gives each node one resource provider (named by the
node uuid, which is also the hypervisor's id and hostname) with one unit
of the node's class (``baremetal.gpu-h100`` -> ``CUSTOM_BAREMETAL_GPU_H100``)
and no VCPU, MEMORY_MB or DISK_GB. It sets ``reserved`` to the whole unit
while an instance is on the node (so total 1, reserved 1, used 1 at once)
and also while the node is in maintenance, not ``available`` in Ironic, or
has no power state. Placement's capacity ``(total - reserved) *
allocation_ratio`` is then 0, which a plain ``capacity - used`` turns
into -1 free for a node in use. A node is therefore counted by state:

* **in use**: something is allocated on it (used >= 1);
* **unavailable**: nothing is allocated and the driver reserved it
  (capacity 0): maintenance, cleaning, not ``available``, no power state;
* **available**: a unit is free.

Its figures are total 1 and used/free 0 or 1 whatever reserved says, so
``Total = Used + Free + Unavailable`` per host and class.

Nova replaces a node provider's traits with the node's Ironic traits plus
its own on every resource-tracker cycle: a trait set on the provider by
hand is gone within a minute. Traits of a node are set on the node
(``openstack baremetal node add trait``); gpuclient refuses to write them
on its provider (``refuse_provider_traits``) and ``gpu check`` compares
them with what the flavors of bare-metal pools require
(``trait_findings``).

Ironic's own view (``gpuclient.cloud.baremetal.Baremetal``, as
``node_dict`` by ``gpuclient.ops.snapshot.ironic_nodes``) is optional
detail: its default policy hides nodes from project-scoped tokens, even
admin ones, so the Placement-based answer never depends on it.
"""

from collections.abc import Collection
from collections.abc import Iterable
from collections.abc import Mapping
import typing

from osc_lib import exceptions

from gpuclient.i18n import _
from gpuclient.rules import pools as pools_mod
from gpuclient.rules import specs as specs_mod

NODE_CLASS_PREFIX = 'CUSTOM_BAREMETAL'
IRONIC_HYPERVISOR_TYPE = 'ironic'
# classes a node provider never offers (Nova 34's ironic driver)
_COMPUTE_CLASSES = frozenset(('VCPU', 'MEMORY_MB', 'DISK_GB'))

AVAILABLE = 'available'
IN_USE = 'in use'
UNAVAILABLE = 'unavailable'
STATES = (AVAILABLE, IN_USE, UNAVAILABLE)

RESERVED_REASON = _('node reserved by the ironic driver (maintenance, '
                    'cleaning or not available in Ironic)')


# -- Placement: which inventories are nodes, and their state -----------------

def node_roots(hypervisors: Iterable[Mapping[str, typing.Any]] | None
               ) -> set[str]:
    """Root provider uuids of Ironic nodes (hypervisor_type ironic)."""
    return {hv['id'] for hv in hypervisors or ()
            if str(hv.get('hypervisor_type') or '').lower()
            == IRONIC_HYPERVISOR_TYPE}


def is_node_class(resource_class: str) -> bool:
    """A class Nova's ironic driver makes from a node's resource_class
    (by convention ``baremetal.<name>``)."""
    return bool(resource_class) and resource_class.startswith(
        NODE_CLASS_PREFIX)


def is_node_item(resource_class: str, item: Mapping[str, int] | None,
                 ironic: bool = False) -> bool:
    """Is ITEM (a provider summary's class entry) one bare-metal node?

    A bare-metal class (``is_node_class``), or any non-compute class of a
    provider an Ironic hypervisor maps to (IRONIC), with at most one unit:
    capacity and used 0 or 1 (summaries carry no total; a node's total is
    always 1).
    """
    if resource_class in _COMPUTE_CLASSES:
        return False
    if not (ironic or is_node_class(resource_class)):
        return False
    item = item or {}
    return (item.get('capacity', 0) <= 1 and item.get('used', 0) <= 1
            and item.get('max_unit', 1) <= 1)


def node_state(item: Mapping[str, int]) -> str:
    """AVAILABLE, IN_USE or UNAVAILABLE of one node's class entry."""
    if (item.get('used') or 0) >= 1:
        return IN_USE
    if (item.get('capacity') or 0) < 1:
        return UNAVAILABLE
    return AVAILABLE


def node_figures(item: Mapping[str, int]) -> tuple[int, int, int]:
    """(total, used, free) of one node: never free -1, never used > total."""
    state = node_state(item)
    return 1, int(state == IN_USE), int(state == AVAILABLE)


def empty_counts() -> dict[str, int]:
    return dict.fromkeys(STATES, 0)


# -- Ironic's view (optional) ------------------------------------------------

def node_dict(node: object) -> dict[str, typing.Any]:
    """An Ironic node (SDK resource or API dict) as plain data."""
    def get(key: str, default: typing.Any = None) -> typing.Any:
        if isinstance(node, dict):
            return node.get(key, default)
        return getattr(node, key, default)

    maintenance = get('maintenance', None)
    if maintenance is None:
        maintenance = get('is_maintenance', False)
    return {'uuid': get('uuid') or get('id'), 'name': get('name'),
            'provision_state': get('provision_state'),
            'maintenance': bool(maintenance),
            'maintenance_reason': get('maintenance_reason'),
            'power_state': get('power_state'),
            'resource_class': get('resource_class'),
            'traits': sorted(get('traits') or ())}


def node_label(uuid: str, node: Mapping[str, typing.Any] | None = None
               ) -> str:
    """``name (uuid)`` when Ironic told the name, else the uuid."""
    if node and node.get('name'):
        return '%s (%s)' % (node['name'], uuid)
    return uuid


def ironic_state(node: Mapping[str, typing.Any]) -> str:
    """What keeps a node out (or 'available'), in Ironic's words."""
    if node.get('maintenance'):
        reason = node.get('maintenance_reason')
        return (_('maintenance (%s)') % reason) if reason else _(
            'maintenance')
    state = node.get('provision_state') or _('no provision state')
    if state == 'active':
        return _('active (deployed)')
    if state != AVAILABLE:
        return _('provision state %s') % state
    if not node.get('power_state'):
        return _('no power state')
    return AVAILABLE


def hidden_note(node_providers: Collection[str],
                ironic_nodes: Mapping[str, typing.Any] | None
                ) -> str | None:
    """One line when Ironic lists none of the nodes Placement has.

    NODE_PROVIDERS: uuids of node providers seen in Placement;
    IRONIC_NODES: what Ironic listed ({uuid: node}), or None when Ironic
    was not read (no endpoint in the catalog): then nothing to say.
    """
    if ironic_nodes is None or not node_providers:
        return None
    if set(node_providers) & set(ironic_nodes):
        return None
    return _('Ironic lists none of the %d bare-metal node(s) Placement '
             'has: its default policy hides nodes from project-scoped '
             'tokens (use a system-scoped cloud, e.g. --os-system-scope '
             'all, or give the nodes an owner). The figures come from '
             'Placement and stand.') % len(set(node_providers))


def state_text(uuid: str, item: Mapping[str, int],
               node: Mapping[str, typing.Any] | None = None) -> str:
    """One node's state for ``gpu host list --long``."""
    state = node_state(item)
    if node is not None:
        return '%s: %s' % (node_label(uuid, node), ironic_state(node))
    if state == UNAVAILABLE:
        return '%s: %s' % (uuid, _('reserved'))
    return '%s: %s' % (uuid, state)


def node_reason(host: str, uuid: str, item: Mapping[str, int],
                node: Mapping[str, typing.Any] | None = None,
                servers: Collection[str] = ()) -> str | None:
    """Why one node of HOST takes no new server, or None when it could."""
    state = node_state(item)
    label = node_label(uuid, node)
    if state == AVAILABLE:
        return None
    if state == IN_USE:
        text = _('%(host)s: node %(node)s is in use') % {
            'host': host, 'node': label}
        if servers:
            text += _(' (server %s)') % ', '.join(servers)
        return text
    if node is not None and ironic_state(node) != AVAILABLE:
        return _('%(host)s: node %(node)s: %(reason)s, in Ironic: '
                 '%(state)s') % {'host': host, 'node': label,
                                 'reason': RESERVED_REASON,
                                 'state': ironic_state(node)}
    return _('%(host)s: node %(node)s: %(reason)s') % {
        'host': host, 'node': label, 'reason': RESERVED_REASON}


# -- traits: set on the node, never on its provider ---------------------------

def node_trait_command(node: str, traits: Iterable[str],
                       remove: bool = False) -> str:
    return 'openstack baremetal node %s trait %s %s' % (
        'remove' if remove else 'add', node, ' '.join(sorted(traits)))


def refuse_provider_traits(label: str, traits: Iterable[str]
                           ) -> exceptions.CommandError:
    """The CommandError for a trait write on a bare-metal node provider."""
    return exceptions.CommandError(
        _('Resource provider %(rp)s is an Ironic node: Nova\'s ironic '
          'driver replaces its traits with the node\'s own on every '
          'resource-tracker cycle, so %(traits)s would not stay. Set the '
          'trait on the node instead: %(cmd)s (or run "openstack gpu pool '
          'create/add host" with a pool that needs no provider trait: '
          'bare-metal pools are never isolated by traits; limit them to '
          'projects with --project).')
        % {'rp': label, 'traits': ', '.join(sorted(traits)),
           'cmd': node_trait_command(label, traits)})


def summary_is_node(summary: Mapping[str, typing.Any] | None,
                    ironic: bool = False) -> bool:
    """Does a provider summary hold one bare-metal node?"""
    resources = (summary or {}).get('resources') or {}
    return any(is_node_item(rc, item, ironic)
               for rc, item in resources.items())


def _flavor_traits(reading: Mapping[str, typing.Any]
                   ) -> tuple[set[str], set[str]]:
    """(required, forbidden) traits of a flavor, all groups together."""
    required: set[str] = set()
    forbidden: set[str] = set()
    for wanted in reading['traits'].values():
        for trait, value in wanted.items():
            if value == specs_mod.REQUIRED:
                required.add(trait)
            elif value == specs_mod.FORBIDDEN:
                forbidden.add(trait)
    return required, forbidden


def trait_mismatches(
        pools: Mapping[str, Mapping[str, typing.Any]],
        flavors: Iterable[tuple[Mapping[str, typing.Any],
                                Mapping[str, typing.Any]]],
        host_roots: Mapping[str, Iterable[str]],
        summaries: Mapping[str, Mapping[str, typing.Any] | None]
) -> list[dict[str, typing.Any]]:
    """Bare-metal nodes whose traits differ from what a pool flavor needs.

    POOLS {name: pool}; FLAVORS [(flavor, reading)] (``specs.read``) of
    the GPU flavors; HOST_ROOTS {host: root uuids}; SUMMARIES {uuid:
    provider summary} (traits None: not read, skipped).

    Returns [dict(pool, flavor, node, missing, extra, any_fits)]: per
    flavor of a baremetal pool and node of the pool's class in the pool's
    hosts, the required traits the node lacks and the forbidden ones it
    has; ``any_fits`` says whether some node of the pool matches the
    flavor (else every boot of it fails).
    """
    found = []
    for name, pool in sorted(pools.items()):
        if pool.get('mode') != pools_mod.BAREMETAL:
            continue
        rc = pool.get('resource_class')
        nodes = []
        for host in sorted(pool.get('hosts') or ()):
            for root in sorted(host_roots.get(host, ())):
                summary = summaries.get(root) or {}
                item = (summary.get('resources') or {}).get(rc)
                if item is None or summary.get('traits') is None:
                    continue
                nodes.append((root, set(summary['traits'])))
        if not nodes:
            continue
        for flavor, reading in flavors:
            if reading.get('pool') != name:
                continue
            required, forbidden = _flavor_traits(reading)
            if not required and not forbidden:
                continue
            per_node = [(uuid, sorted(required - traits),
                         sorted(forbidden & traits))
                        for uuid, traits in nodes]
            any_fits = any(not m and not x for _u, m, x in per_node)
            for uuid, missing, extra in per_node:
                if missing or extra:
                    found.append({'pool': name, 'flavor': flavor,
                                  'node': uuid, 'missing': missing,
                                  'extra': extra, 'any_fits': any_fits})
    return found


def trait_fix(item: Mapping[str, typing.Any]) -> str:
    """The node-trait command(s) that make a node match its flavor."""
    fixes = []
    if item['missing']:
        fixes.append(node_trait_command(item['node'], item['missing']))
    if item['extra']:
        fixes.append(node_trait_command(item['node'], item['extra'],
                                        remove=True))
    return '; '.join(fixes)
