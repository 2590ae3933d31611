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

"""Pure: GPU devices as Placement and Nova know them.

A device is a provider of the snapshot (``model.Placement``) whose
inventory holds a GPU class: a passthrough GPU, a pGPU or VF carrying
vGPUs, a MIG slice, a bare-metal node. Its row says where it is (host,
pools, PCI address from the provider's name, as Nova and libvirt name
device providers), who holds it (the consumers of its allocations, joined
to Nova's servers) and its state: a one-time-use device Nova keeps
reserved after its server went is **awaiting release**
(``one_time_use``), neither free nor stranded.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
import re
import typing

from osc_lib import exceptions

from gpuclient.i18n import _
from gpuclient.rules import baremetal
from gpuclient.rules import host_names
from gpuclient.rules import one_time_use

if typing.TYPE_CHECKING:
    from gpuclient.rules import model

# a device's state
FREE = 'free'
IN_USE = 'in-use'
AWAITING_RELEASE = 'awaiting-release'
# capacity 0 and no allocation, reserved by someone else than Nova's
# one-time use (or a bare-metal node the ironic driver reserved)
UNAVAILABLE = 'unavailable'

# the PCI address at the end of a device provider's name: Nova's PCI in
# Placement names it <node>_<address> (0000:41:00.0), libvirt's vGPU
# pGPUs <node>_pci_<address with _> (0000_84_00_0)
_ADDRESS_RE = re.compile(
    r'_(?:pci_)?([0-9a-fA-F]{4})[:_]([0-9a-fA-F]{2})[:_]([0-9a-fA-F]{2})'
    r'[._]([0-7])$')


def pci_address(provider_name: str | None) -> str | None:
    """The PCI address a device provider's name ends with, or None."""
    match = _ADDRESS_RE.search(provider_name or '')
    if not match:
        return None
    domain, bus, slot, function = match.groups()
    return ('%s:%s:%s.%s' % (domain, bus, slot, function)).lower()


def state(item: Mapping[str, int], traits: Iterable[str] | None,
          node: bool = False) -> str:
    """The state of a device from its class's summary ITEM and TRAITS;
    NODE: a bare-metal node (``baremetal.is_node_item``)."""
    if item.get('used'):
        return IN_USE
    if one_time_use.awaiting_release(item, traits):
        return AWAITING_RELEASE
    if node and baremetal.node_state(item) == baremetal.UNAVAILABLE:
        return UNAVAILABLE
    if item.get('capacity', 0) > 0:
        return FREE
    return UNAVAILABLE


ROW_FIELDS = ('uuid', 'name', 'host', 'pools', 'resource_class',
              'pci_address', 'state', 'servers', 'projects', 'total',
              'used', 'one_time_use', 'traits')


def rows(
        cloud: model.Cloud,
        allocations: Mapping[str, Mapping[str, dict[str, int]]] | None = None,
        servers: Iterable[Mapping[str, typing.Any]] | None = None,
        pools_by_host: Mapping[str, Iterable[str]] | None = None
) -> list[dict[str, typing.Any]]:
    """One row per GPU device of CLOUD (a ``model.Cloud`` with its
    Placement snapshot), dicts with ROW_FIELDS, by host and name.

    ALLOCATIONS: {provider uuid: {consumer: {class: amount}}} of the used
    GPU providers; SERVERS: Nova's servers (dicts with id, name,
    tenant_id or project_id), for the names and projects of the consumers.
    Trees no hypervisor maps to are left out.
    """
    # read with its Placement snapshot (ops.device_ops)
    snap: model.Placement = cloud.placement  # type: ignore[assignment]
    assert cloud.gpu_classes is not None  # noqa: S101 - read with it
    allocations = allocations or {}
    by_id = {s['id']: s for s in servers or ()}
    root_host = host_names.root_hosts(cloud.hypervisors or [])
    ironic = cloud.node_roots()
    pools_by_host = pools_by_host or {}
    found = []
    for uuid in sorted(snap.summaries):
        provider = snap.providers[uuid]
        host = root_host.get(provider['root'])
        if host is None:
            continue
        summary = snap.summaries[uuid]
        traits = summary.get('traits')
        for rc, item in sorted((summary.get('resources') or {}).items()):
            if rc not in cloud.gpu_classes:
                continue
            node = baremetal.is_node_item(rc, item,
                                          provider['root'] in ironic)
            consumers = sorted(allocations.get(uuid) or {})
            held = [by_id.get(c) for c in consumers]
            found.append({
                'uuid': uuid,
                'name': provider['name'],
                'host': host,
                'pools': list(pools_by_host.get(host, [])),
                'resource_class': rc,
                'pci_address': pci_address(provider['name']),
                'state': state(item, traits, node=node),
                'servers': [(s or {}).get('name') or c
                            for s, c in zip(held, consumers, strict=True)],
                'server_ids': consumers,
                'projects': sorted({_project(s) for s in held if s}
                                   - {None}),
                'total': max(item.get('capacity', 0), item.get('used', 0),
                             1 if one_time_use.awaiting_release(item, traits)
                             else 0),
                'used': item.get('used', 0),
                'one_time_use': one_time_use.is_one_time_use(traits),
                'traits': sorted(traits) if traits is not None else None,
            })
    found.sort(key=lambda r: (r['host'], r['name'], r['resource_class']))
    return found


def _project(server):
    return server.get('tenant_id') or server.get('project_id')


def select(found: Iterable[dict[str, typing.Any]], host: str | None = None,
           pool: str | None = None, server_ids: Iterable[str] | None = None,
           awaiting_only: bool = False) -> list[dict[str, typing.Any]]:
    """The rows of FOUND on HOST, in POOL, held by one of SERVER_IDS, or
    awaiting release (AWAITING_ONLY)."""
    return [r for r in found
            if (host is None or r['host'] == host)
            and (pool is None or pool in r['pools'])
            and (server_ids is None
                 or set(r['server_ids']) & set(server_ids))
            and (not awaiting_only or r['state'] == AWAITING_RELEASE)]


def resolve(found: Sequence[dict[str, typing.Any]],
            names: Iterable[str]) -> list[dict[str, typing.Any]]:
    """The rows of FOUND that NAMES mean, in order and each once: a
    provider UUID or name, or HOST:PCI_ADDRESS (the compute service host).
    A name that means no device, or several, is a CommandError naming
    every such name: nothing is done for any."""
    chosen, bad = [], []
    for name in names:
        matches = [r for r in found if name in (r['uuid'], r['name'])]
        if not matches and ':' in name:
            host, address = name.split(':', 1)
            matches = [r for r in found if r['host'] == host
                       and r['pci_address'] == address.lower()]
        uuids = {r['uuid'] for r in matches}
        if len(uuids) != 1:
            bad.append((name, len(uuids)))
            continue
        for row in matches:
            if row not in chosen:
                chosen.append(row)
    if bad:
        raise exceptions.CommandError('\n'.join(
            (_('No GPU device %s: give a device provider\'s UUID or name '
               'or HOST:PCI_ADDRESS (see "openstack gpu device list").')
             if not count else
             _('%s names several GPU devices: give the provider UUID.'))
            % name for name, count in bad))
    return chosen
