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

"""Pure: GPU devices as Placement and Nova know them, and one-time use.

A device is a provider of the snapshot (``hosts.Snapshot``) whose
inventory holds a GPU class: a passthrough GPU, a pGPU or VF carrying
vGPUs, a MIG slice, a bare-metal node. Its row says where it is (host,
pools, PCI address from the provider's name, as Nova and libvirt name
device providers), who holds it (the consumers of its allocations, joined
to Nova's servers) and its state.

**One-time-use devices** (Nova 2025.2, ``"one_time_use": true`` in a
``[pci] device_spec``; ``nova/compute/pci_placement_translator.py``):
Nova puts the trait ``HW_PCI_ONE_TIME_USE`` on the device's provider
(one type-PCI or type-PF device, inventory total 1) and, once a server
holds the device, sets the inventory's ``reserved`` to its total. Nova
never lowers it again: after the delete the device has no allocation and
no capacity, and waits for the operator to clean it (wipe the GPU memory
between tenants) and release it, which is lowering ``reserved`` to 0
(``gpu device release``). Such a device is **awaiting release**: neither
free nor stranded, and counted apart (``awaiting_release``).
"""

import json
import re

from osc_lib import exceptions

from gpuclient.i18n import _
from gpuclient.rules import baremetal
from gpuclient.rules import host_names

# os-traits' trait on the provider of a one-time-use device (Nova 2025.2)
ONE_TIME_USE_TRAIT = 'HW_PCI_ONE_TIME_USE'

# a device's state
FREE = 'free'
IN_USE = 'in-use'
AWAITING_RELEASE = 'awaiting-release'
# capacity 0 and no allocation, reserved by someone else than Nova's
# one-time use (or a bare-metal node the ironic driver reserved)
UNAVAILABLE = 'unavailable'

# what a release row's action says
RELEASE = 'release'
RELEASED = 'released'
ALREADY_RELEASED = 'already released'

# the PCI address at the end of a device provider's name: Nova's PCI in
# Placement names it <node>_<address> (0000:41:00.0), libvirt's vGPU
# pGPUs <node>_pci_<address with _> (0000_84_00_0)
_ADDRESS_RE = re.compile(
    r'_(?:pci_)?([0-9a-fA-F]{4})[:_]([0-9a-fA-F]{2})[:_]([0-9a-fA-F]{2})'
    r'[._]([0-7])$')


def pci_address(provider_name):
    """The PCI address a device provider's name ends with, or None."""
    match = _ADDRESS_RE.search(provider_name or '')
    if not match:
        return None
    domain, bus, slot, function = match.groups()
    return ('%s:%s:%s.%s' % (domain, bus, slot, function)).lower()


def is_one_time_use(traits):
    """Does a provider with TRAITS (None: not read) hold a one-time-use
    device?"""
    return ONE_TIME_USE_TRAIT in (traits or ())


def awaiting_release(item, traits):
    """Is a one-time-use device (its class's summary ITEM, {capacity,
    used}; its provider's TRAITS) reserved by Nova after its server went,
    waiting for the operator's release?"""
    return (is_one_time_use(traits) and not item.get('used')
            and item.get('capacity', 0) <= 0)


def state(item, traits, node=False):
    """The state of a device from its class's summary ITEM and TRAITS;
    NODE: a bare-metal node (``baremetal.is_node_item``)."""
    if item.get('used'):
        return IN_USE
    if awaiting_release(item, traits):
        return AWAITING_RELEASE
    if node and baremetal.node_state(item) == baremetal.UNAVAILABLE:
        return UNAVAILABLE
    if item.get('capacity', 0) > 0:
        return FREE
    return UNAVAILABLE


ROW_FIELDS = ('uuid', 'name', 'host', 'pools', 'resource_class',
              'pci_address', 'state', 'servers', 'projects', 'total',
              'used', 'one_time_use', 'traits')


def rows(cloud, allocations=None, servers=None, pools_by_host=None):
    """One row per GPU device of CLOUD (a ``model.Cloud`` with its
    Placement snapshot), dicts with ROW_FIELDS, by host and name.

    ALLOCATIONS: {provider uuid: {consumer: {class: amount}}} of the used
    GPU providers; SERVERS: Nova's servers (dicts with id, name,
    tenant_id or project_id), for the names and projects of the consumers.
    Trees no hypervisor maps to are left out.
    """
    snap = cloud.placement
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
                             1 if awaiting_release(item, traits) else 0),
                'used': item.get('used', 0),
                'one_time_use': is_one_time_use(traits),
                'traits': sorted(traits) if traits is not None else None,
            })
    found.sort(key=lambda r: (r['host'], r['name'], r['resource_class']))
    return found


def _project(server):
    return server.get('tenant_id') or server.get('project_id')


def select(found, host=None, pool=None, server_ids=None,
           awaiting_only=False):
    """The rows of FOUND on HOST, in POOL, held by one of SERVER_IDS, or
    awaiting release (AWAITING_ONLY)."""
    return [r for r in found
            if (host is None or r['host'] == host)
            and (pool is None or pool in r['pools'])
            and (server_ids is None
                 or set(r['server_ids']) & set(server_ids))
            and (not awaiting_only or r['state'] == AWAITING_RELEASE)]


def resolve(found, names):
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


def release_problem(row):
    """Why the device of ROW cannot be released (None: it can, or has
    nothing to release)."""
    if not row['one_time_use']:
        return _(
            '%(name)s is not a one-time-use device (its provider has no '
            '%(trait)s trait): gpuclient releases only what Nova reserved '
            'after a one-time-use device\'s server was deleted, never a '
            'reservation someone else set. Set "one_time_use" in the '
            'host\'s [pci] device_spec, or change the inventory with '
            '"openstack resource provider inventory set".') % {
                'name': row['name'], 'trait': ONE_TIME_USE_TRAIT}
    if row['state'] == IN_USE:
        return _(
            '%(name)s is in use (%(servers)s): Placement holds an '
            'allocation on it. Delete the server, clean the device, then '
            'release it.') % {'name': row['name'],
                              'servers': ', '.join(row['servers'])}
    return None


def release_action(row):
    """RELEASE for a device awaiting release, ALREADY_RELEASED for a free
    one (a re-run converges), after ``release_problem``."""
    return RELEASE if row['state'] == AWAITING_RELEASE else ALREADY_RELEASED


# -- gpu check: one_time_use in nova.conf -------------------------------------

def _spec_matches(spec, alias):
    """Does a device_spec select devices of ALIAS's vendor:product (an
    absent or ``*`` id matches any)?"""
    for key in ('vendor_id', 'product_id'):
        want = str(spec.get(key) or '*').strip().lower()
        have = str(alias.get(key) or '').strip().lower()
        if want not in ('*', have):
            return False
    return True


def _is_true(value):
    return str(value).strip().lower() in ('1', 't', 'true', 'on', 'y', 'yes')


def one_time_use_problems(pci):
    """[(object, symptom, fix)] of the ``one_time_use`` device specs Nova
    refuses, from a nova.conf's ``[pci]`` (``scheduler.conf``'s
    ``settings['pci']``): Nova 2025.2 ``nova/pci/devspec.py`` refuses
    ``one_time_use`` without ``report_in_placement`` (nova-compute does not
    start), and ``nova/compute/pci_placement_translator.py`` allows it on
    type-PCI and type-PF devices only: a device an alias asks for as
    ``type-VF`` is a child device, and Nova refuses to report it."""
    found = []
    for spec in pci.get('device_specs') or ():
        if not _is_true(spec.get('one_time_use')):
            continue
        label = _('nova.conf [pci] device_spec %s') % json.dumps(
            spec, sort_keys=True)
        if not pci.get('report_in_placement'):
            found.append((label, _(
                'one_time_use needs [pci] report_in_placement = true: '
                'nova-compute refuses to start ("one_time_use=true requires '
                'pci.report_in_placement to be enabled"), and without '
                'Placement nothing would keep a used device reserved.'),
                '[pci] report_in_placement = true'))
        vfs = sorted(a.get('name') or '?' for a in pci.get('aliases') or ()
                     if str(a.get('device_type')).lower() == 'type-vf'
                     and _spec_matches(spec, a))
        if vfs:
            found.append((label, _(
                'one_time_use applies to type-PCI and type-PF devices only, '
                'but PCI alias(es) %(aliases)s ask for these devices as '
                'type-VF: Nova refuses to report them to Placement ("Only '
                'type-PCI and type-PF devices may set one_time_use") and '
                'no server gets one.') % {'aliases': ', '.join(vfs)},
                _('remove "one_time_use" from this device_spec, or give the '
                  'VFs a device_spec of their own without it')))
    return found
