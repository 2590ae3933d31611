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

"""Test doubles: a fake client manager and Placement answers.

Placement is faked at the HTTP level with requests-mock, so the real
client layer (keystoneauth Adapter, microversion headers, error
translation) runs in every command test. The SDK compute proxy is a
``mock.Mock(spec=Proxy)`` whose calls FakeCompute answers.

The fakes are as strict as the services they play: Placement refuses
unknown traits and stale provider generations, Nova refuses to delete an
aggregate that still has hosts, pages its lists, gives integer hypervisor
ids below compute API 2.53, lists only public flavors unless asked
``is_public=None`` and refuses flavor writes it would refuse (a name in
use, an extra spec or a project that is not there, access to a public
flavor).
"""

import functools
import http
import json
import re
import types
from unittest import mock
import urllib.parse
import uuid as uuidlib

import fixtures
from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint
from openstack import connection
from openstack import exceptions as sdk_exc
from openstack.compute.v2 import _proxy as compute_proxy
from openstack.image.v2 import _proxy as image_proxy
import requests
from requests_mock.contrib import fixture as rm_fixture

from gpuclient.cloud import client
from gpuclient.cloud import placement as placement_mod
from gpuclient.cloud import reservation as reservation_mod
from gpuclient.cloud import versions
from gpuclient.tests.unit import sdk_proxy

PLACEMENT_URL = 'http://placement.example:8778'
BLAZAR_URL = 'http://blazar.example:1234/v1'
PLACEMENT_MAX = '1.39'
NOVA_URL = 'http://nova.example/v2.1'
# Nova's [api]max_limit (its default): the longest page it answers.
NOVA_MAX_LIMIT = 1000

# Standard (os-traits) traits the fake Placement knows from the start;
# traits already on a provider of the cloud exist too. Any other trait must
# be created (PUT /traits/CUSTOM_...) before a provider can have it.
STANDARD_TRAITS = frozenset({
    'COMPUTE_NODE', 'COMPUTE_MANAGED_PCI_DEVICE', 'OWNER_NOVA',
    'COMPUTE_STATUS_DISABLED', 'HW_CPU_X86_AVX2', 'HW_GPU_API_CUDA_V12_0',
})
# the class of FakeCloud.otu_host's one-time-use GPUs
OTU_CLASS = 'CUSTOM_PCI_10DE_2335'
# What a concurrent writer (nova-compute's resource tracker disabling the
# service) puts on a provider while gpuclient is changing its traits.
CONCURRENT_TRAIT = 'COMPUTE_STATUS_DISABLED'


def make_response(status=200, body=None, url='http://nova.example/v2.1'):
    """A real requests.Response with a JSON (or text) body."""
    response = requests.Response()
    response.status_code = status
    response.url = url
    if isinstance(body, (dict, list)):
        response._content = json.dumps(body).encode()
        response.headers['Content-Type'] = 'application/json'
    else:
        response._content = (body or '').encode()
    return response


def uid(name):
    """Deterministic uuid for a readable name."""
    return str(uuidlib.uuid5(uuidlib.NAMESPACE_URL, name))


class Aggregate:
    """A host aggregate as the SDK returns it (the attributes we read)."""

    def __init__(self, name, metadata=None, hosts=(), zone=None):
        self.name = name
        self.id = uid('agg-id-' + name)
        self.uuid = uid('agg-' + name)
        self.metadata = dict(metadata or {})
        self.hosts = list(hosts)
        self.availability_zone = zone


def _zone(agg):
    """The availability zone of a fake aggregate (metadata or create)."""
    return (agg.metadata or {}).get('availability_zone') or (
        agg.availability_zone)


class Provider:
    """One resource provider of a fake cloud."""

    def __init__(self, name, parent=None, inventory=None, used=None,
                 traits=()):
        self.name = name
        self.uuid = uid(name)
        self.parent = parent
        self.inventory = dict(inventory or {})
        self.used = dict(used or {})
        self.traits = list(traits)
        self.aggregates = []  # Placement aggregate uuids
        self.generation = 1

    @property
    def root(self):
        return self.parent.root if self.parent else self

    def capacity(self, rc):
        inv = self.inventory[rc]
        return int(
            (inv['total'] - inv.get('reserved', 0))
            * inv.get('allocation_ratio', 1.0)
        )

    def free(self, rc):
        if rc not in self.inventory:
            return 0
        return self.capacity(rc) - self.used.get(rc, 0)


def inv(total, reserved=0, ratio=1.0):
    return {
        'total': total,
        'reserved': reserved,
        'allocation_ratio': ratio,
        'min_unit': 1,
        'max_unit': total,
        'step_size': 1,
    }


class FakeCloud:
    """Provider trees and hypervisors; renders Placement's answers.

    Only single-class ``resources=RC:1`` candidate queries are rendered,
    which is all ``gpu host list`` sends.
    """

    def __init__(self):
        self.providers = []
        self.hypervisors = []
        self.aggregates = []
        self.flavors = []  # Nova flavor bodies as at compute API 2.61
        self.flavor_access = {}  # private flavor id -> [project ids]
        self.images = []  # Glance v2 image bodies
        self.busy = set()  # hosts with instances
        self.disabled = set()  # hosts whose nova-compute is disabled
        self.disabled_reasons = {}  # host -> its service's disabled_reason
        self.servers = []  # Nova server bodies as at compute API 2.47
        # Placement consumers: {consumer uuid: {provider uuid: {rc: n}}};
        # allocate/release keep the providers' usage with them
        self.allocations = {}
        # Nova's migration records (os-migrations at 2.59 and later)
        self.migrations = []
        # server id -> how Nova ends its next move: 'fail' (rolled back to
        # its source, as a conductor or compute failure), 'stuck' (its
        # migration stays in progress, the server MIGRATING/RESIZE)
        self.move_outcome = {}
        # Ironic (ironic_node): its nodes; no endpoint in the catalog
        # unless ironic_endpoint; ironic_hidden plays the default policy
        # for project-scoped tokens (200 and no nodes)
        self.ironic_nodes = []
        self.ironic_max_limit = 1000  # Ironic's [api]max_limit
        self.ironic_endpoint = False
        self.ironic_hidden = False
        # Nova's maximum compute microversion (Nova 34, 2026.2: 2.104)
        self.compute_max_version = (2, 104)

    def add(self, provider):
        self.providers.append(provider)
        return provider

    # -- servers and their allocations (a drain moves them) ----------------

    def allocate(self, consumer, allocations):
        """CONSUMER takes ALLOCATIONS ({provider uuid: {rc: n}}), the
        providers' usage with it (what it held before is released)."""
        self.release(consumer)
        self.allocations[consumer] = {
            rp: dict(res) for rp, res in allocations.items()}
        for rp, res in allocations.items():
            provider = self.provider(rp)
            for rc, n in res.items():
                provider.used[rc] = provider.used.get(rc, 0) + n

    def release(self, consumer):
        for rp, res in self.allocations.pop(consumer, {}).items():
            provider = self.provider(rp)
            for rc, n in res.items():
                provider.used[rc] = provider.used.get(rc, 0) - n

    def host_root(self, host):
        for hv in self.hypervisors:
            if hv['service']['host'] == host:
                return self.provider(hv['id'])
        raise KeyError(host)

    def place(self, host, resources):
        """{provider uuid: {rc: n}} for RESOURCES ({rc: n}) on HOST: VCPU,
        MEMORY_MB, DISK_GB on its root, a GPU class on the first child
        with room (KeyError when none has)."""
        root = self.host_root(host)
        out = {}
        for rc, n in resources.items():
            if rc in root.inventory:
                out.setdefault(root.uuid, {})[rc] = n
                continue
            for child in self.providers:
                if child.root is root and child is not root and (
                        child.free(rc) >= n):
                    out.setdefault(child.uuid, {})[rc] = n
                    break
            else:
                raise KeyError('%s: no room for %s x %s' % (host, n, rc))
        return out

    def add_server(self, name, host, extra_specs=None, gpus=None,
                   status='ACTIVE', project='p1', vcpus=2):
        """A server on HOST with an embedded flavor of EXTRA_SPECS, its
        allocations in Placement (VCPU, MEMORY_MB, DISK_GB and GPUS
        {rc: n}). Returns its body."""
        server = {
            'id': uid('server-' + name), 'name': name, 'status': status,
            'OS-EXT-SRV-ATTR:host': host, 'OS-EXT-STS:task_state': None,
            'tenant_id': project, 'image': {'id': 'img'},
            'flavor': {'original_name': 'gpu.1' if gpus else 'plain.1',
                       'vcpus': vcpus, 'ram': 1024, 'disk': 10,
                       'ephemeral': 0, 'swap': 0,
                       'extra_specs': dict(extra_specs or {})}}
        self.servers.append(server)
        self.allocate(server['id'], self.place(host, dict(
            {'VCPU': vcpus, 'MEMORY_MB': 1024, 'DISK_GB': 10},
            **(gpus or {}))))
        return server

    def server(self, server_id):
        for server in self.servers:
            if server['id'] == server_id:
                return server
        return None

    def _server_resources(self, server_id):
        """{rc: n} the server holds (all its providers together)."""
        out = {}
        for res in self.allocations.get(server_id, {}).values():
            for rc, n in res.items():
                out[rc] = out.get(rc, 0) + n
        return out

    def schedule(self, server, requested=None):
        """The scheduler's answer for a move of SERVER: the REQUESTED host
        (still filtered, as Nova does without force) or, with none, the
        first host that passes, in hypervisor order: not the source, its
        compute service enabled (ComputeFilter), room in Placement for all
        the server holds (its allocation candidates). None: NoValidHost.
        """
        source = server['OS-EXT-SRV-ATTR:host']
        hosts = [requested] if requested else [
            hv['service']['host'] for hv in self.hypervisors]
        for host in hosts:
            if host == source or host in self.disabled:
                continue
            try:
                self.place(host, self._server_resources(server['id']))
            except KeyError:
                continue  # no candidate: not enough free there
            return host
        return None

    def move_server(self, server, host, kind):
        """Nova's move of SERVER to HOST (None: where the scheduler
        chooses), as the fake plays it at once: the scheduler's answer
        (``schedule``), a migration record, the allocations (a cold
        move's source ones held by the migration until confirmed), the
        server's host and status, or the outcome ``move_outcome`` names;
        no valid host: the migration in error, the server where it was."""
        source = server['OS-EXT-SRV-ATTR:host']
        chosen = self.schedule(server, host)
        host = chosen or host
        migration = {
            'id': len(self.migrations) + 1, 'uuid': uid(
                'migration-%d' % (len(self.migrations) + 1)),
            'instance_uuid': server['id'], 'source_compute': source,
            'dest_compute': host, 'source_node': source, 'dest_node': host,
            'migration_type': kind, 'status': 'running'}
        self.migrations.append(migration)
        outcome = self.move_outcome.pop(server['id'], None)
        if outcome == 'stuck':
            server['status'] = ('MIGRATING' if kind == 'live-migration'
                                else 'RESIZE')
            server['OS-EXT-STS:task_state'] = (
                'migrating' if kind == 'live-migration'
                else 'resize_migrating')
            return
        if outcome == 'fail' or chosen is None:
            # the scheduler finds no valid host (a disabled compute is
            # filtered out, no room), or the move fails: rolled back
            migration['status'] = 'error'
            return
        self._complete(server, migration)

    def _complete(self, server, migration):
        held = self.allocations.get(server['id'], {})
        host = migration['dest_compute']
        placed = self.place(host, self._server_resources(server['id']))
        server['OS-EXT-SRV-ATTR:host'] = host
        server['OS-EXT-STS:task_state'] = None
        if migration['migration_type'] == 'live-migration':
            migration['status'] = 'completed'
            self.allocate(server['id'], placed)
        else:
            migration['status'] = 'finished'
            server['resized_from'] = server['status']
            server['status'] = 'VERIFY_RESIZE'
            self.allocations.pop(server['id'], None)
            self.allocations[migration['uuid']] = held
            self.allocate(server['id'], placed)

    def finish_moves(self):
        """The moves left in progress ('stuck') end on their destination."""
        for migration in self.migrations:
            if migration['status'] == 'running':
                server = self.server(migration['instance_uuid'])
                server['status'] = 'ACTIVE'
                self._complete(server, migration)

    def confirm_server(self, server):
        for migration in self.migrations:
            if migration['instance_uuid'] == server['id'] and (
                    migration['status'] == 'finished'):
                migration['status'] = 'confirmed'
                self.release(migration['uuid'])
        server['status'] = server.pop('resized_from', 'ACTIVE')

    def compute_host(self, host, nodename=None, vcpus=32, used_vcpus=0):
        root = self.add(
            Provider(
                nodename or host,
                inventory={
                    'VCPU': inv(vcpus, ratio=4.0),
                    'MEMORY_MB': inv(262144, reserved=512),
                    'DISK_GB': inv(2000),
                },
                used={'VCPU': used_vcpus},
                traits=['COMPUTE_NODE'],
            )
        )
        self.hypervisors.append(
            {
                'id': root.uuid,
                'hypervisor_hostname': root.name,
                'service': {'host': host, 'id': uid('svc-' + host)},
                'state': 'up',
                'status': 'enabled',
            }
        )
        return root

    def pci_host(self, host, count=4, used=0, nodename=None, **kwargs):
        """The seed's passthrough host: whole GPUs as PCI child providers."""
        root = self.compute_host(host, nodename=nodename, **kwargs)
        for i in range(count):
            self.add(
                Provider(
                    '%s_0000:%02x:00.0' % (root.name, 0x81 + i),
                    parent=root,
                    inventory={'CUSTOM_PCI_10DE_2331': inv(1)},
                    used={'CUSTOM_PCI_10DE_2331': 1 if i < used else 0},
                    traits=['COMPUTE_MANAGED_PCI_DEVICE', 'OWNER_NOVA'],
                )
            )
        return root

    def otu_host(self, host, count=2):
        """A host whose whole GPUs are one-time-use (Nova 2025.2): PCI
        child providers of class OTU_CLASS with trait
        HW_PCI_ONE_TIME_USE; ``reserve`` plays Nova's reservation."""
        root = self.compute_host(host)
        for i in range(count):
            self.add(
                Provider(
                    '%s_0000:%02x:00.0' % (root.name, 0x41 + i),
                    parent=root,
                    inventory={OTU_CLASS: inv(1)},
                    traits=['COMPUTE_MANAGED_PCI_DEVICE', 'OWNER_NOVA',
                            'HW_PCI_ONE_TIME_USE'],
                )
            )
        return root

    @staticmethod
    def reserve(provider):
        """What Nova does to a one-time-use device once a server holds
        it: its inventory reserved, and left so after the delete."""
        for record in provider.inventory.values():
            record['reserved'] = record['total']
        provider.generation += 1

    def vgpu_host(self, host, pgpus=2, per_pgpu=4, used=(), traits=()):
        """The seed's vGPU host: pGPU child providers with VGPU inventory."""
        root = self.compute_host(host)
        used = list(used) + [0] * pgpus
        for i in range(pgpus):
            self.add(
                Provider(
                    '%s_pci_0000_%02x_00_0' % (host, 0x84 + i),
                    parent=root,
                    inventory={'VGPU': inv(per_pgpu)},
                    used={'VGPU': used[i]},
                    traits=list(traits),
                )
            )
        return root

    def baremetal_node(self, host, node_name, used=False):
        """An Ironic node: one unit of its custom class, no VCPU."""
        root = self.add(
            Provider(
                node_name,
                inventory={'CUSTOM_BAREMETAL_GPU_H100': inv(1)},
                used={'CUSTOM_BAREMETAL_GPU_H100': 1 if used else 0},
                traits=['CUSTOM_GPU_H100'],
            )
        )
        self.hypervisors.append(
            {
                'id': root.uuid,
                'hypervisor_hostname': node_name,
                'service': {'host': host, 'id': uid('svc-' + host)},
                'state': 'up',
                'status': 'enabled',
            }
        )
        return root

    def ironic_node(self, host, name, provision_state='available',
                    maintenance=False, power_state='power off', used=False,
                    traits=('CUSTOM_GPU_H100',),
                    node_class='baremetal.gpu-h100',
                    resource_class='CUSTOM_BAREMETAL_GPU_H100',
                    hypervisor_type='ironic'):
        """An Ironic node as Nova 34's ironic driver shows it.

        Provider and hypervisor named by the node uuid (uid(name)), one
        unit of its class, no VCPU; reserved = 1 while an instance is on
        it (USED: provision state active), in maintenance, not available
        or without a power state. Also listed by the fake Ironic.
        """
        if used:
            provision_state = 'active'
        reserved = int(used or maintenance or not power_state
                       or provision_state != 'available')
        root = self.add(Provider(
            name, inventory={resource_class: inv(1, reserved=reserved)},
            used={resource_class: int(used)},
            traits=list(traits) + ['COMPUTE_NODE']))
        root.name = root.uuid
        self.hypervisors.append({
            'id': root.uuid, 'hypervisor_hostname': root.uuid,
            'hypervisor_type': hypervisor_type,
            'service': {'host': host, 'id': uid('svc-' + host)},
            'state': 'up', 'status': 'enabled'})
        self.ironic_nodes.append({
            'uuid': root.uuid, 'name': name,
            'provision_state': provision_state, 'maintenance': maintenance,
            'maintenance_reason': 'testing' if maintenance else None,
            'power_state': power_state, 'resource_class': node_class,
            'traits': list(traits)})
        return root

    def add_flavor(self, name, public=True, extra_specs=None,
                   description=None, vcpus=1, ram=512, disk=1, swap=0,
                   ephemeral=0, flavor_id=None):
        flavor = {
            'id': flavor_id or uid('flavor-' + name), 'name': name,
            'vcpus': vcpus, 'ram': ram, 'disk': disk, 'swap': swap,
            'OS-FLV-EXT-DATA:ephemeral': ephemeral, 'rxtx_factor': 1.0,
            'os-flavor-access:is_public': public,
            'OS-FLV-DISABLED:disabled': False,
            'description': description,
            'extra_specs': dict(extra_specs or {}),
        }
        self.flavors.append(flavor)
        return flavor

    def mirror(self):
        """Put each host aggregate's uuid on its hosts' root providers, as
        Nova's add host does in Placement (GET /resource_providers?
        member_of= then finds them)."""
        for agg in self.aggregates:
            for hv in self.hypervisors:
                root = self.provider(hv['id'])
                if (hv['service']['host'] in agg.hosts and root is not None
                        and agg.uuid not in root.aggregates):
                    root.aggregates.append(agg.uuid)

    def provider(self, uuid):
        for p in self.providers:
            if p.uuid == uuid:
                return p
        return None

    def tree(self, root):
        return [p for p in self.providers if p.root is root]

    def resource_classes(self):
        names = {'VCPU', 'MEMORY_MB', 'DISK_GB', 'VGPU', 'PGPU'}
        for p in self.providers:
            names.update(p.inventory)
        return sorted(names)

    # -- rendered Placement answers --------------------------------------

    def providers_body(self, providers=None):
        """GET /resource_providers at 1.14 (PROVIDERS: default all)."""
        providers = self.providers if providers is None else providers
        return {
            'resource_providers': [
                {
                    'uuid': p.uuid,
                    'name': p.name,
                    'generation': p.generation,
                    'parent_provider_uuid': p.parent and p.parent.uuid,
                    'root_provider_uuid': p.root.uuid,
                }
                for p in providers
            ]
        }

    def summary(self, p):
        return {
            'resources': {
                name: {'capacity': p.capacity(name),
                       'used': p.used.get(name, 0)}
                for name in p.inventory
            },
            'traits': p.traits,
            'parent_provider_uuid': p.parent and p.parent.uuid,
            'root_provider_uuid': p.root.uuid,
        }

    def candidates_body(self, rc, limit=None):
        """Placement's answer to resources=RC:1 (>= 1.29).

        ``limit`` plays [placement]max_allocation_candidates: generation
        stops after that many candidates.
        """
        found, summaries = [], {}
        for root in [p for p in self.providers if p.parent is None]:
            tree = self.tree(root)
            for p in tree:
                if p.free(rc) < 1:
                    continue
                if limit is not None and len(found) >= limit:
                    break
                found.append(
                    {'allocations': {p.uuid: {'resources': {rc: 1}}}}
                )
                for member in tree:
                    summaries[member.uuid] = self.summary(member)
        return {'allocation_requests': found, 'provider_summaries': summaries}


def placement_error(context, status, detail, code=None):
    """Placement's error body (and status) for a requests-mock answer."""
    context.status_code = status
    error = {'status': status, 'title': http.HTTPStatus(status).phrase,
             'detail': detail}
    if code:
        error['code'] = code
    return {'errors': [error]}


class PlacementFixture(fixtures.Fixture):
    """requests-mock answers for a FakeCloud's Placement.

    Provider traits are stateful, with generations. ``traits`` holds the
    traits that exist beside those on providers (standard ones and the
    custom ones created). ``conflicts[uuid] = n`` makes the next n trait
    writes on that provider lose a race: a concurrent writer adds
    CONCURRENT_TRAIT and bumps the generation first, so the write is a 409
    and only a retry that reads the traits again keeps the writer's trait.
    ``failures[uuid] = status`` answers trait writes with that status.
    """

    def __init__(self, cloud, max_version=PLACEMENT_MAX, limit=None):
        super().__init__()
        self.cloud = cloud
        self.max_version = max_version
        self.limit = limit

    def _setUp(self):
        self.mock = self.useFixture(rm_fixture.Fixture())
        placement_mod.Placement._max_versions.clear()
        self.addCleanup(placement_mod.Placement._max_versions.clear)
        self.traits = set(STANDARD_TRAITS)
        # uuid -> n: the next n guarded PUTs lose a race (_race)
        self.conflicts = {}
        self.deadlocks = {}  # uuid -> n: the next n trait PUTs deadlock
        self.failures = {}
        self.concurrent_writes = []  # provider uuids a racer wrote to
        url = PLACEMENT_URL
        self.mock.get(
            url + '/',
            json={
                'versions': [
                    {
                        'id': 'v1.0',
                        'min_version': '1.0',
                        'max_version': self.max_version,
                        'status': 'CURRENT',
                        'links': [{'rel': 'self', 'href': ''}],
                    }
                ]
            },
        )
        self.mock.get(url + '/resource_providers',
                      json=self._versioned((1, 0), self._providers))
        self.mock.get(
            url + '/resource_classes',
            json=lambda req, ctx: {
                'resource_classes': [
                    {'name': n} for n in self.cloud.resource_classes()
                ]
            },
        )
        self.mock.get(url + '/allocation_candidates',
                      json=self._versioned((1, 10), self._candidates))
        provider_url = re.compile(
            re.escape(url) + r'/resource_providers/([^/?]+)/'
            r'(inventories|usages|traits|aggregates)(\?|$)')
        self.mock.get(provider_url,
                      json=self._versioned((1, 0), self._provider_get))
        self.mock.put(provider_url,
                      json=self._versioned((1, 0), self._provider_put))
        self.mock.put(re.compile(re.escape(url) + r'/resource_providers/'
                                 r'([^/?]+)/inventories/([A-Z0-9_]+)$'),
                      json=self._versioned((1, 0), self._inventory_put))
        self.mock.get(re.compile(re.escape(url) + r'/allocations/([^/?]+)$'),
                      json=self._versioned((1, 0), self._consumer))
        self.mock.get(re.compile(re.escape(url) + r'/resource_providers/'
                                 r'([^/?]+)/allocations$'),
                      json=self._versioned((1, 0), self._rp_allocations))
        self.mock.get(url + '/traits',
                      json=self._versioned((1, 6), self._list_traits))
        trait_url = re.compile(re.escape(url) + r'/traits/([^/?]+)$')
        self.mock.put(trait_url,
                      json=self._versioned((1, 6), self._create_trait))
        self.mock.delete(trait_url,
                         json=self._versioned((1, 6), self._delete_trait))

    # -- microversions (placement/microversion.py, handlers/*) ---------------

    @staticmethod
    def version(request):
        """The microversion a request asks for (1.0 without a header)."""
        header = request.headers.get('OpenStack-API-Version') or ''
        found = versions.parse_version(header.replace('placement', '').strip())
        return found or (1, 0)

    def _versioned(self, minimum, handler):
        """HANDLER as Placement routes it: 406 above the maximum
        (microversion-parse), 404 below the handler's version_handler."""
        def answer(request, context):
            want = self.version(request)
            if want > versions.parse_version(self.max_version):
                return placement_error(
                    context, 406, 'Unacceptable version header: %s'
                    % versions.version_str(want))
            if want < minimum:
                return placement_error(
                    context, 404, 'The resource could not be found.')
            return handler(request, context)
        return answer

    # query parameters of GET /resource_providers, by microversion
    # (placement/schemas/resource_provider.py GET_RPS_SCHEMA_*)
    PROVIDER_QUERY = ((1, 18, {'required'}), (1, 14, {'in_tree'}),
                      (1, 4, {'resources'}), (1, 3, {'member_of'}),
                      (1, 0, {'name', 'uuid'}))

    def _providers(self, request, context):
        want = self.version(request)
        allowed = set()
        for major, minor, names in self.PROVIDER_QUERY:
            if want >= (major, minor):
                allowed |= names
        query = urllib.parse.parse_qs(
            urllib.parse.urlsplit(request.url).query)
        unknown = sorted(set(query) - allowed)
        if unknown:
            return placement_error(
                context, 400, 'Invalid query string parameters: '
                'Additional properties are not allowed (%s unexpected)'
                % ', '.join(repr(u) for u in unknown))
        found = list(self.cloud.providers)
        for value in query.get('member_of', ()):
            wanted = set(value[3:].split(',') if value.startswith('in:')
                         else [value])
            found = [p for p in found if wanted & set(p.aggregates)]
        for value in query.get('in_tree', ()):
            tree = self.cloud.provider(value)
            found = [p for p in found if tree and p.root is tree.root]
        for value in query.get('required', ()):
            traits = {t for t in value.split(',') if not t.startswith('!')}
            missing = sorted(traits - self.existing_traits())
            if missing:
                return placement_error(
                    context, 400, 'Invalid trait(s) in "required" '
                    'parameter: No such trait(s): %s.' % ', '.join(missing))
            found = [p for p in found if traits <= set(p.traits)]
        for key in ('name', 'uuid'):
            for value in query.get(key, ()):
                found = [p for p in found if getattr(p, key) == value]
        body = self.cloud.providers_body(found)
        if want < (1, 14):  # parent and root: 1.14
            for item in body['resource_providers']:
                del item['parent_provider_uuid'], item['root_provider_uuid']
        return body

    def _candidates(self, request, context):
        """Single-class ``resources=RC:1``; bad syntax and unknown traits
        are 400s as Placement answers them (util.normalize_resources_qs_
        param; TraitNotFound)."""
        query = urllib.parse.parse_qs(
            urllib.parse.urlsplit(request.url).query)
        for key, values in query.items():
            if key.startswith('resources'):
                for value in values:
                    if not re.fullmatch(r'([A-Z0-9_]+:\d+)(,[A-Z0-9_]+:\d+)*',
                                        value):
                        return placement_error(
                            context, 400, 'Badly formed resources '
                            'parameter. Expected resources query string '
                            'parameter in form: ?resources=VCPU:2,'
                            'MEMORY_MB:1024. Got: %s.' % value)
            if key.startswith('required'):
                names = {t.lstrip('!') for v in values
                         for t in v.replace('in:', '').split(',')}
                missing = sorted(names - self.existing_traits())
                if missing:
                    return placement_error(
                        context, 400, 'No such trait(s): %s.'
                        % ', '.join(missing))
        rc, _amount = query['resources'][0].split(':')
        return self.cloud.candidates_body(rc, self.limit)

    # -- providers ----------------------------------------------------------

    def _provider(self, request, context):
        """(provider, what) from the URL; provider None after a 404."""
        match = re.search(r'/resource_providers/([^/?]+)/([a-z]+)',
                          urllib.parse.urlsplit(request.url).path)
        uuid, what = match.group(1), match.group(2)
        provider = self.cloud.provider(uuid)
        if provider is None:
            return None, placement_error(
                context, 404,
                'No resource provider with uuid %s found' % uuid,
                'placement.undefined_code')
        return provider, what

    def _consumer(self, request, context):
        """``GET /allocations/{consumer}``: what it holds, by provider
        (an unknown consumer holds nothing: 200 and no allocations, as
        Placement answers)."""
        consumer = urllib.parse.urlsplit(request.url).path.rpartition(
            '/')[2]
        held = self.cloud.allocations.get(consumer) or {}
        body = {'allocations': {
            rp: {'resources': dict(res),
                 'generation': self.cloud.provider(rp).generation}
            for rp, res in held.items() if res}}
        if held and self.version(request) >= (1, 12):
            body.update(project_id='p1', user_id='u1')
        return body

    def _rp_allocations(self, request, context):
        """``GET /resource_providers/{uuid}/allocations``."""
        uuid = urllib.parse.urlsplit(request.url).path.split('/')[-2]
        provider = self.cloud.provider(uuid)
        if provider is None:
            return placement_error(
                context, 404,
                'No resource provider with uuid %s found' % uuid,
                'placement.undefined_code')
        return {'allocations': {
            consumer: {'resources': dict(held[uuid])}
            for consumer, held in self.cloud.allocations.items()
            if held.get(uuid)},
            'resource_provider_generation': provider.generation}

    def _provider_get(self, request, context):
        p, what = self._provider(request, context)
        if p is None:
            return what
        if what == 'inventories':
            return {'inventories': p.inventory,
                    'resource_provider_generation': p.generation}
        if what == 'usages':
            return {'usages': {rc: p.used.get(rc, 0) for rc in p.inventory},
                    'resource_provider_generation': p.generation}
        if what == 'aggregates':
            want = self.version(request)
            if want < (1, 1):  # version_handler('1.1')
                return placement_error(
                    context, 404, 'The resource could not be found.')
            if want < (1, 19):  # the generation: 1.19
                return {'aggregates': list(p.aggregates)}
            return {'aggregates': list(p.aggregates),
                    'resource_provider_generation': p.generation}
        if what == 'traits' and self.version(request) < (1, 6):
            return placement_error(
                context, 404, 'The resource could not be found.')
        return {'traits': list(p.traits),
                'resource_provider_generation': p.generation}

    def _inventory_put(self, request, context):
        """``PUT /resource_providers/{uuid}/inventories/{class}``:
        the record replaced (total required, reserved at most total),
        guarded by the provider generation (409), as Placement does."""
        path = urllib.parse.urlsplit(request.url).path.split('/')
        uuid, rc = path[-3], path[-1]
        p = self.cloud.provider(uuid)
        if p is None:
            return placement_error(
                context, 404, 'No resource provider with uuid %s found'
                % uuid, 'placement.undefined_code')
        body = request.json()
        if 'total' not in body or 'resource_provider_generation' not in body:
            return placement_error(
                context, 400, "JSON does not validate: 'total' and "
                "'resource_provider_generation' are required properties")
        extra = sorted(set(body) - set(inv(1))
                       - {'resource_provider_generation'})
        if extra:
            # placement/schemas/inventory.py: additionalProperties False
            return placement_error(
                context, 400, 'JSON does not validate: Additional '
                'properties are not allowed (%s were unexpected)'
                % ', '.join(repr(k) for k in extra))
        self._race(p)
        if body['resource_provider_generation'] != p.generation:
            return placement_error(
                context, 409, "resource provider generation conflict",
                'placement.concurrent_update')
        if rc not in p.inventory:
            return placement_error(
                context, 400, 'No inventory record with resource class '
                'for resource provider %s' % uuid)
        record = {k: body.get(k, inv(body['total'])[k])
                  for k in inv(1)}
        # handlers/inventory.py _validate_inventory_capacity: reserved
        # may equal total from 1.26 only
        if record['reserved'] > record['total'] or (
                record['reserved'] == record['total']
                and self.version(request) < (1, 26)):
            return placement_error(
                context, 400, 'Unable to update inventory: the reserved '
                'value is greater than or equal to total.')
        p.inventory[rc] = record
        p.generation += 1
        return dict(record, resource_provider_generation=p.generation)

    def _provider_put(self, request, context):
        p, what = self._provider(request, context)
        if p is None:
            return what
        if what == 'aggregates':
            body = request.json()
            want = self.version(request)
            if want < (1, 1):
                return placement_error(
                    context, 404, 'The resource could not be found.')
            if want < (1, 19):  # a plain list of uuids, no generation
                if not isinstance(body, list):
                    return placement_error(
                        context, 400, 'JSON does not validate: %r is not '
                        "of type 'array'" % (body,))
                p.aggregates = list(body)
                return {'aggregates': list(p.aggregates)}
            if not isinstance(body, dict) or 'aggregates' not in body:
                return placement_error(
                    context, 400, "JSON does not validate: 'aggregates' "
                    'is a required property')
            self._race(p)
            if body.get('resource_provider_generation') != p.generation:
                return placement_error(
                    context, 409, "Resource provider's generation already "
                    "changed.", 'placement.concurrent_update')
            p.aggregates = list(body['aggregates'])
            p.generation += 1
            return {'aggregates': list(p.aggregates),
                    'resource_provider_generation': p.generation}
        if what != 'traits':
            return placement_error(context, 405, 'not faked')
        if self.version(request) < (1, 6):
            return placement_error(
                context, 404, 'The resource could not be found.')
        if self.failures.get(p.uuid):
            return placement_error(context, self.failures[p.uuid],
                                   'injected failure')
        if self.deadlocks.get(p.uuid):
            self.deadlocks[p.uuid] -= 1
            return placement_error(
                context, 500, "(pymysql.err.OperationalError) (1213, "
                "'Deadlock found when trying to get lock; try restarting "
                "transaction')")
        self._race(p)
        body = request.json()
        if body.get('resource_provider_generation') != p.generation:
            return placement_error(
                context, 409,
                "Resource provider's generation already changed. Please "
                "update the generation and try again.",
                'placement.concurrent_update')
        unknown = sorted(set(body['traits']) - self.existing_traits())
        if unknown:
            return placement_error(
                context, 400, 'No such trait(s): %s.' % ', '.join(unknown))
        p.traits = list(body['traits'])
        p.generation += 1
        return {'traits': list(p.traits),
                'resource_provider_generation': p.generation}

    def _race(self, provider):
        """``conflicts[uuid] = n``: the next n generation-guarded PUTs to
        the provider (traits, aggregates, an inventory record) lose a race
        to another writer, who writes just before them."""
        if self.conflicts.get(provider.uuid):
            self.conflicts[provider.uuid] -= 1
            self.concurrent_write(provider)

    def concurrent_write(self, provider, trait=CONCURRENT_TRAIT):
        """Another writer changes the provider's traits (and generation)."""
        if trait not in provider.traits:
            provider.traits.append(trait)
        provider.generation += 1
        self.concurrent_writes.append(provider.uuid)

    # -- traits ---------------------------------------------------------------

    def existing_traits(self):
        found = set(self.traits)
        for p in self.cloud.providers:
            found.update(p.traits)
        return found

    @staticmethod
    def _trait_name(request):
        path = urllib.parse.urlsplit(request.url).path
        return urllib.parse.unquote(path.rsplit('/', 1)[1])

    def _list_traits(self, request, context):
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(request.url).query)
        names = sorted(self.existing_traits())
        wanted = (query.get('name') or [''])[0]
        if wanted.startswith('in:'):
            asked = set(wanted[3:].split(','))
            names = [n for n in names if n in asked]
        elif wanted.startswith('startswith:'):
            names = [n for n in names if n.startswith(wanted[11:])]
        return {'traits': names}

    def _create_trait(self, request, context):
        name = self._trait_name(request)
        if not re.fullmatch(r'CUSTOM_[A-Z0-9_]+', name) or len(name) > 255:
            return placement_error(
                context, 400,
                'The trait is invalid. A valid trait must be no longer than '
                '255 characters, start with the prefix "CUSTOM_" and use '
                'following characters: "A"-"Z", "0"-"9" and "_"')
        if name in self.existing_traits():
            context.status_code = 204
        else:
            self.traits.add(name)
            context.status_code = 201
        return None

    def _delete_trait(self, request, context):
        name = self._trait_name(request)
        if name in STANDARD_TRAITS or not name.startswith('CUSTOM_'):
            return placement_error(
                context, 400, 'Cannot delete standard trait %s.' % name)
        if any(name in p.traits for p in self.cloud.providers):
            return placement_error(
                context, 409,
                'The trait %s is in use by a resource provider.' % name)
        if name not in self.traits:
            return placement_error(context, 404,
                                   'No such trait(s): %s.' % name)
        self.traits.discard(name)
        context.status_code = 204
        return None

    def requests(self, path=None):
        """Requests sent to Placement (optionally only to ``path``)."""
        sent = [
            r for r in self.mock.request_history
            if r.url.startswith(PLACEMENT_URL)
        ]
        if path is not None:
            sent = [r for r in sent if r.path == path]
        return sent

    def puts(self):
        """The provider trait writes sent."""
        return [r for r in self.mock.request_history
                if r.method == 'PUT' and r.path.endswith('/traits')]


def _version(text):
    found = versions.parse_version(text)
    return found or (2, 1)


def _page(items, params, key, max_limit, id_key='id'):
    """Nova's paging: ``marker`` (an id), ``limit`` capped by max_limit.

    Returns (page, links): a next link (the request's query plus the
    marker) when the page is full, as Nova does, so a last page that is
    exactly full is followed by an empty one. Raises ValueError (a 400)
    for a marker that matches nothing. ``id_key``: the field the marker
    names (``instance_id`` for os-simple-tenant-usage).
    """
    limit = min(int(params.get('limit') or max_limit), max_limit)
    start = 0
    marker = params.get('marker')
    if marker is not None:
        ids = [str(item[id_key]) for item in items]
        if str(marker) not in ids:
            raise ValueError('Marker %s could not be found.' % marker)
        start = ids.index(str(marker)) + 1
    page = items[start:start + limit]
    links = []
    if page and len(page) == limit:
        query = dict(params, marker=page[-1][id_key])
        links.append({'rel': 'next', 'href': '%s/%s?%s' % (
            NOVA_URL, key, urllib.parse.urlencode(sorted(query.items())))})
    return page, links


def simple_tenant_usage(usages, path, params, max_limit, seen=None):
    """Nova's answer to ``GET /os-simple-tenant-usage[/<project>]`` at
    2.40 (nova/api/openstack/compute/simple_tenant_usage.py): the
    servers' usages are paged (``limit``, capped by [api]max_limit, and
    ``marker``, the ``instance_id`` of the last server of the previous
    page; an unknown marker is a 400), the page grouped by project, with
    a ``tenant_usages_links`` (``tenant_usage_links``) next link when the
    page is full. SEEN (a list) records each query and whether its answer
    had a next link: the same query again right after such an answer is a
    pager that would loop forever against Nova (AssertionError).
    """
    query = (path, tuple(sorted((params or {}).items())))
    if seen is not None:
        if seen and seen[-1] == (query, True):
            raise AssertionError('the page just answered with a next link '
                                 'asked for again (a pager looping '
                                 'forever): %s %s' % query)
    project = path.rstrip('/').rpartition('/')[2]
    if project != 'os-simple-tenant-usage':
        usages = [u for u in usages if u['tenant_id'] == project]
    try:
        page, links = _page(list(usages), dict(params or {}), path.strip('/'),
                            max_limit, id_key='instance_id')
    except ValueError as exc:
        return nova_error(400, str(exc))
    if seen is not None:
        seen.append((query, bool(links)))
    if project != 'os-simple-tenant-usage':
        body = {'tenant_usage': {'tenant_id': project,
                                 'server_usages': page} if page else {}}
        if links:
            body['tenant_usage_links'] = links
        return make_response(200, body)
    projects = sorted({u['tenant_id'] for u in page})
    body = {'tenant_usages': [
        {'tenant_id': p, 'server_usages': [
            u for u in page if u['tenant_id'] == p]} for p in projects]}
    if links:
        body['tenant_usages_links'] = links
    return make_response(200, body)


# Nova's error body: its key for each status (computeFault otherwise).
NOVA_FAULTS = {400: 'badRequest', 403: 'forbidden', 404: 'itemNotFound',
               409: 'conflictingRequest'}
# What an injected failure (FakeCompute.fail) says, by status.
INJECTED = {403: 'Policy says no'}
# The fields of a flavor create request Nova knows (description: 2.55).
FLAVOR_FIELDS = frozenset({
    'name', 'id', 'ram', 'vcpus', 'disk', 'OS-FLV-EXT-DATA:ephemeral',
    'swap', 'rxtx_factor', 'os-flavor-access:is_public'})
# The least value of each numeric flavor field.
FLAVOR_MINIMUM = {'ram': 1, 'vcpus': 1, 'disk': 0,
                  'OS-FLV-EXT-DATA:ephemeral': 0, 'swap': 0}
EXTRA_SPEC_KEY = re.compile(r'[a-zA-Z0-9-_:. ]{1,255}')
# keys Nova 34 acts on but registers no validator for: refused at 2.86 and
# later (nova.api.validation.extra_specs.validators.validate, "hw" being a
# namespace it knows)
NOVA_UNVALIDATED_SPECS = ('hw:maxphysaddr_mode', 'hw:maxphysaddr_bits')


def nova_error(status, message):
    """Nova's error answer, e.g. {"itemNotFound": {"message": ...}}."""
    key = NOVA_FAULTS.get(status, 'computeFault')
    return make_response(status, {key: {'message': message, 'code': status}})


def sdk_error(status, details):
    """The exception the SDK raises for a Nova error status."""
    cls = {
        400: sdk_exc.BadRequestException,
        403: sdk_exc.ForbiddenException,
        404: sdk_exc.NotFoundException,
        409: sdk_exc.ConflictException,
    }.get(status, sdk_exc.HttpException)
    return cls(message=http.HTTPStatus(status).phrase, http_status=status,
               details=details)


def injected(status):
    return INJECTED.get(status, 'Injected failure')


def render_flavor(flavor, version):
    """A flavor body as Nova shows it at ``version``."""
    flavor = dict(flavor, extra_specs=dict(flavor['extra_specs']))
    if version < (2, 61):
        flavor.pop('extra_specs')
    if version < (2, 55):
        flavor.pop('description', None)
    return flavor


def _segments(url):
    """'/flavors/a%2Fb/os-extra_specs/k' -> ['flavors', 'a/b', ...]."""
    path = urllib.parse.urlsplit(url).path.strip('/')
    return [urllib.parse.unquote(part) for part in path.split('/')]


def _is_count(value):
    """An integer as Nova's flavor schema takes it (or its digits)."""
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (
        isinstance(value, str) and value.strip().isdigit())


def wire_params(params):
    """A query as it goes on the wire: one value in a list (the SDK's
    next-link query, as parsed) is that value."""
    return {key: value[0] if isinstance(value, list) and len(value) == 1
            else value for key, value in dict(params or {}).items()}


def nova_path(url):
    """The path of a Nova request as keystoneauth joins it to the
    endpoint: a whole URL (a next link) or a path with or without its
    leading slash (the SDK's resources join theirs without)."""
    if url.startswith(NOVA_URL + '/'):
        url = url[len(NOVA_URL):]
    return '/' + url.lstrip('/')


class FakeCompute:
    """Nova behind a mock(spec=compute Proxy): raw calls and aggregates.

    Raw calls are answered as Nova answers them at the microversion sent:

    - ``get``: ``/os-hypervisors/detail`` and ``/flavors/detail`` (paged
      by ``max_limit``), ``/flavors/{id}`` (by ID only) and
      ``/flavors/{id}/os-flavor-access`` (a 404 for a public flavor);
    - ``post``: ``/flavors`` (refuses fields Nova does not know, bad
      sizes, a name or ID in use), ``/flavors/{id}/os-extra_specs`` and
      ``/flavors/{id}/action`` with addTenantAccess (409 for a public
      flavor or a project already there) or removeTenantAccess (404 for a
      project not there);
    - ``put``: ``/flavors/{id}`` with the description alone (2.55 and
      later, as Nova's flavor update; 405 below) and ``/os-services/{id}``
      (2.53 and later: status, disabled_reason only when disabling);
    - ``delete``: ``/flavors/{id}/os-extra_specs/{key}`` (404 for a key
      the flavor lacks) and ``/flavors/{id}``.

    Aggregate and service calls keep their state in the FakeCloud and
    refuse what Nova refuses: a duplicate aggregate, an unknown host, a
    host added twice, removing a host that is not there, deleting an
    aggregate with hosts. Hosts in ``cloud.busy`` have servers.

    Records: ``sent``, every raw call as (method, url, microversion);
    ``gets``, every raw GET as (url, microversion, params); ``calls``,
    every write asked for (done, refused or failed; not those on an
    aggregate that does not exist), flavors by name:
    ('create', aggregate), ('metadata', aggregate, metadata), ('add',
    aggregate, host), ('remove', aggregate, host), ('delete', aggregate),
    ('create_flavor', name), ('specs', flavor, extra specs), ('unset',
    flavor, key), ('describe', flavor, description), ('share', flavor,
    project), ('unshare', flavor, project), ('delete_flavor', flavor),
    ('service', service id, status).

    Faults: ``fail[(method, url suffix)] = status`` answers the raw calls
    that match with that status before doing anything (403: "Policy says
    no"); ``fail[('metadata', aggregate name)] = status`` does the same to
    metadata writes of that aggregate; adding a host in ``fail_add_host``
    fails with a 500 (Compute service is down).

    Like Nova, adding or removing a host mirrors it into the Placement
    aggregate of its first node. ``unmirrored`` hosts lose that race on
    add (Nova logs it and answers 200); ``remove_conflicts[host] = n``
    makes the next n removals lose it (Nova answers 409, changes nothing).
    """

    def __init__(self, cloud, proxy, max_limit=NOVA_MAX_LIMIT):
        self.cloud = cloud
        self.proxy = proxy
        self.max_limit = max_limit
        self.sent = []
        self.gets = []
        self.calls = []
        self.fail = {}
        self.fail_add_host = set()
        self.unmirrored = set()
        self.remove_conflicts = {}
        self.server_lists = []  # the params of each GET /servers/detail
        self.migration_lists = []  # the params of each GET /os-migrations
        proxy.get.side_effect = self.get
        # version discovery: the version document's maximum microversion
        proxy.get_endpoint_data.side_effect = lambda: mock.Mock(
            max_microversion=self.cloud.compute_max_version)
        proxy.post.side_effect = self.post
        proxy.delete.side_effect = self.delete
        # the SDK's flavor calls, onto the same raw answers (as the SDK
        # sends them, and raising what the SDK raises)
        proxy.delete_flavor_extra_specs_property.side_effect = (
            self.sdk_unset_spec)
        proxy.get_flavor_access.side_effect = self.sdk_access
        proxy.delete_flavor.side_effect = self.sdk_delete_flavor
        proxy.update_flavor.side_effect = self.sdk_update_flavor
        proxy.put.side_effect = self.put
        # the SDK's own lists (its proxy methods, its paging) and commits
        # over the raw answers, as the SDK sends them (a proxy's defaults)
        proxy.retriable_status_codes = None
        proxy.default_microversion = None
        for name in ('_list', 'hypervisors', 'flavors', 'migrations'):
            getattr(proxy, name).side_effect = functools.partial(
                getattr(compute_proxy.Proxy, name), proxy)
        proxy.aggregates.side_effect = lambda **kw: list(cloud.aggregates)
        proxy.create_aggregate.side_effect = self.create_aggregate
        proxy.set_aggregate_metadata.side_effect = (
            self.set_aggregate_metadata)
        proxy.add_host_to_aggregate.side_effect = self.add_host_to_aggregate
        proxy.remove_host_from_aggregate.side_effect = (
            self.remove_host_from_aggregate)
        proxy.delete_aggregate.side_effect = self.delete_aggregate
        proxy.get_aggregate.side_effect = self.get_aggregate
        proxy.services.side_effect = self.services
        proxy.servers.side_effect = self.sdk_servers

    def sdk_servers(self, **query):
        """The SDK's server list: at a microversion (servers_detail), the
        SDK's own code over the raw answers; without (host_has_servers),
        a server on the hosts in ``cloud.busy``."""
        if 'microversion' in query:
            return compute_proxy.Proxy.servers(self.proxy, **query)
        return iter([object()] if query.get('compute_host') in self.cloud.busy
                    else [])

    # -- the SDK's flavor calls -----------------------------------------------

    @staticmethod
    def _sdk_url(flavor, *rest):
        return '/'.join(['/flavors', urllib.parse.quote(flavor, safe=''),
                         *rest])

    @staticmethod
    def _sdk_answer(response, ignore_missing=False):
        if ignore_missing and response.status_code == 404:
            return None
        sdk_exc.raise_from_response(response)
        return response

    def sdk_unset_spec(self, flavor, prop, ignore_missing=True):
        self._sdk_answer(self.delete(
            self._sdk_url(flavor, 'os-extra_specs',
                          urllib.parse.quote(prop, safe='')),
            microversion='2.61'), ignore_missing)

    def sdk_access(self, flavor):
        response = self._sdk_answer(self.get(
            self._sdk_url(flavor, 'os-flavor-access')))
        return response.json().get('flavor_access', [])

    def sdk_update_flavor(self, flavor, **attrs):
        # the SDK's Flavor.commit: PUT /flavors/{id} {"flavor": attrs} at
        # the version it negotiated (2.61 against this Nova)
        response = self._sdk_answer(self.put(
            self._sdk_url(flavor), microversion='2.61',
            json={'flavor': dict(attrs)}))
        body = response.json()['flavor']
        return types.SimpleNamespace(id=body['id'],
                                     description=body.get('description'))

    def sdk_delete_flavor(self, flavor, ignore_missing=True):
        self._sdk_answer(self.delete(self._sdk_url(flavor)), ignore_missing)

    # -- raw calls ------------------------------------------------------------

    def _injected(self, method, url):
        """The injected failure answer for this call, or None."""
        for (fail_method, suffix), status in self.fail.items():
            if fail_method == method and url.endswith(suffix):
                return nova_error(status, injected(status))
        return None

    def _write(self, call, method, url, action):
        """Record a write, then fail it as injected or do it."""
        self.calls.append(call)
        failed = self._injected(method, url)
        return failed if failed is not None else action()

    def get(self, url, microversion=None, params=None, **kwargs):
        params = wire_params(params)
        url = nova_path(url)
        self.sent.append(('get', url, microversion))
        self.gets.append((url, microversion, params))
        failed = self._injected('get', url)
        if failed is not None:
            return failed
        version = _version(microversion)
        try:
            if url == '/os-hypervisors/detail':
                return make_response(200, self.hypervisors(version, params))
            if url == '/flavors/detail':
                return make_response(200, self.flavors(version, params))
            if url == '/servers/detail':
                return make_response(200, self.servers_detail(version,
                                                              params))
            if url == '/os-migrations':
                return self.migrations(version, params)
        except ValueError as exc:
            return nova_error(400, str(exc))
        parts = _segments(url)
        if parts[0] == 'servers' and len(parts) == 2:
            return self.server_show(parts[1], version)
        if parts[0] == 'flavors' and len(parts) == 2:
            flavor = self._flavor(parts[1])
            if flavor is None:
                return self._no_flavor(parts[1])
            return make_response(
                200, {'flavor': render_flavor(flavor, version)})
        if parts[0] == 'flavors' and parts[2:] == ['os-flavor-access']:
            return self._access_list(parts[1])
        return nova_error(404, 'The resource could not be found.')

    def post(self, url, microversion=None, json=None, **kwargs):
        self.sent.append(('post', url, microversion))
        version = _version(microversion)
        body = json if isinstance(json, dict) else {}
        parts = _segments(url)
        if parts == ['flavors']:
            name = (body.get('flavor') or {}).get('name')
            return self._write(('create_flavor', name), 'post', url,
                               lambda: self._create_flavor(body, version))
        if parts[0] == 'servers' and parts[2:] == ['action']:
            name = next(iter(body), None)
            return self._write(('action', parts[1], name), 'post', url,
                               lambda: self.server_action(parts[1], json,
                                                          version))
        if parts[0] != 'flavors' or len(parts) != 3:
            raise AssertionError('FakeCompute: unexpected POST %s' % url)
        label = self._label(parts[1])
        if parts[2] == 'os-extra_specs':
            return self._write(
                ('specs', label, dict(body.get('extra_specs') or {})),
                'post', url, lambda: self._set_specs(parts[1], body,
                                                     version))
        if parts[2] == 'action' and len(body) == 1:
            action, args = next(iter(body.items()))
            project = (args or {}).get('tenant')
            if action == 'addTenantAccess':
                return self._write(
                    ('share', label, project), 'post', url,
                    lambda: self._add_access(parts[1], project, version))
            if action == 'removeTenantAccess':
                return self._write(
                    ('unshare', label, project), 'post', url,
                    lambda: self._remove_access(parts[1], project))
        raise AssertionError('FakeCompute: unexpected POST %s %s'
                             % (url, json))

    def put(self, url, microversion=None, json=None, **kwargs):
        url = nova_path(url)
        self.sent.append(('put', url, microversion))
        version = _version(microversion)
        parts = _segments(url)
        if parts[0] == 'os-services' and len(parts) == 2:
            return self._write(
                ('service', parts[1], (json or {}).get('status')), 'put',
                url, lambda: self._update_service(parts[1], json, version))
        if parts[0] != 'flavors' or len(parts) != 2:
            raise AssertionError('FakeCompute: unexpected PUT %s' % url)
        body = json if isinstance(json, dict) else {}
        fields = body.get('flavor')
        description = (fields or {}).get('description')
        return self._write(
            ('describe', self._label(parts[1]), description), 'put', url,
            lambda: self._update_flavor(parts[1], body, version))

    def servers_detail(self, version, params):
        """``GET /servers/detail``: every server with all_tenants (else
        none: the fake's servers belong to other projects), paged as Nova
        pages it (``limit`` capped by max_limit, ``marker`` a server id, a
        ``servers_links`` next link on a full page, a 400 for a marker
        that is no server); the embedded flavor needs 2.47 (the fake
        renders no older shape)."""
        if version < (2, 47):
            raise AssertionError('FakeCompute: servers below 2.47')
        if str(params.get('all_tenants')) != '1':
            return {'servers': []}
        servers = self.cloud.servers
        if 'host' in params:
            # an admin filter, an exact match of one value (Nova's
            # search_opts take the last of repeated ones)
            host = params['host']
            if isinstance(host, (list, tuple)):
                host = host[-1]
            servers = [s for s in servers
                       if s.get('OS-EXT-SRV-ATTR:host') == host]
        self.server_lists.append(dict(params))
        return self._paged([dict(s) for s in servers], params, 'servers',
                           'servers/detail')

    def server_show(self, server_id, version):
        """``GET /servers/{id}``: 404 for a server Nova does not have; the
        2.47 shape only."""
        if version < (2, 47):
            raise AssertionError('FakeCompute: a server below 2.47')
        server = self.cloud.server(server_id)
        if server is None:
            return nova_error(404, 'Instance %s could not be found.'
                              % server_id)
        return make_response(200, {'server': dict(server)})

    # the vm states each action is taken from (nova/compute/api.py
    # check_instance_state), as the server's API status; any other, or a
    # task under way, is a 409
    ACTION_STATES = {
        'os-migrateLive': ('ACTIVE', 'PAUSED'),
        'migrate': ('ACTIVE', 'SHUTOFF'),
        'confirmResize': ('VERIFY_RESIZE',),
        'shelve': ('ACTIVE', 'SHUTOFF', 'PAUSED', 'SUSPENDED'),
        'shelveOffload': ('SHELVED',),
    }

    def server_action(self, server_id, body, version):
        """``POST /servers/{id}/action`` as Nova answers it: 404 for an
        unknown server, 400 for a body its schema refuses at VERSION (a
        migrate host below 2.56, a live migration without host or
        block_migration, an unknown host), 409 for a server in a state
        the action is not taken from or with a task under way; else 202
        and the move, played at once by FakeCloud.move_server."""
        server = self.cloud.server(server_id)
        if server is None:
            return nova_error(404, 'Instance %s could not be found.'
                              % server_id)
        if not isinstance(body, dict) or len(body) != 1:
            return nova_error(400, 'Invalid request body.')
        action, args = next(iter(body.items()))
        if action not in self.ACTION_STATES:
            return nova_error(400, 'There is no such action: %s' % action)
        hosts = {hv['service']['host'] for hv in self.cloud.hypervisors}
        if action == 'os-migrateLive':
            if not isinstance(args, dict) or (
                    {'host', 'block_migration'} - set(args)) or (
                    set(args) - {'host', 'block_migration', 'force'}):
                return nova_error(400, 'Invalid input for field/attribute '
                                       'os-migrateLive.')
        elif action == 'migrate':
            if args is not None and (not isinstance(args, dict) or set(
                    args) - ({'host'} if version >= (2, 56) else set())):
                return nova_error(400, "Additional properties are not "
                                       "allowed ('host' was unexpected)")
        elif args is not None:
            return nova_error(400, 'Invalid input for field/attribute %s.'
                              % action)
        host = (args or {}).get('host') if isinstance(args, dict) else None
        if host is not None and host not in hosts:
            return nova_error(400, 'Compute host %s could not be found.'
                              % host)
        status = (server.get('status') or '').upper()
        if status not in self.ACTION_STATES[action] or server.get(
                'OS-EXT-STS:task_state'):
            return nova_error(409, "Cannot '%s' instance %s while it is in "
                              "vm_state %s" % (action, server_id,
                                               status.lower()))
        if action == 'os-migrateLive':
            self.cloud.move_server(server, host, 'live-migration')
        elif action == 'migrate':
            if host == server['OS-EXT-SRV-ATTR:host']:
                return nova_error(400, 'No valid host was found.')
            # without a host the scheduler chooses (FakeCloud.schedule)
            self.cloud.move_server(server, host, 'migration')
        elif action == 'confirmResize':
            self.cloud.confirm_server(server)
        else:  # shelve (offloaded at once: shelved_offload_time 0)
            self.cloud.release(server_id)
            server.update({'status': 'SHELVED_OFFLOADED',
                           'OS-EXT-SRV-ATTR:host': None})
        return make_response(202, None)

    # query parameters of GET /os-migrations, by microversion
    # (nova/api/openstack/compute/schemas/migrations.py: from 2.59 no
    # other is allowed, a 400)
    MIGRATION_QUERY = ((2, 80, {'user_id', 'project_id'}),
                       (2, 66, {'changes-before'}),
                       (2, 59, {'limit', 'marker', 'changes-since'}),
                       (2, 1, {'hidden', 'host', 'instance_uuid',
                               'source_compute', 'status',
                               'migration_type'}))

    def migrations(self, version, params):
        """``GET /os-migrations``: the filters Nova takes (host: source or
        destination; one value each), paged from 2.59 by the migration
        uuid, newest first; unknown parameters a 400 from 2.59."""
        allowed = set()
        for major, minor, names in self.MIGRATION_QUERY:
            if version >= (major, minor):
                allowed |= names
        unknown = sorted(set(params) - allowed)
        if unknown and version >= (2, 59):
            return nova_error(400, "Additional properties are not allowed "
                                   "(%s was unexpected)" % ', '.join(unknown))
        self.migration_lists.append(dict(params))
        found = []
        for migration in reversed(self.cloud.migrations):
            if 'host' in params and params['host'] not in (
                    migration['source_compute'], migration['dest_compute']):
                continue
            if any(k in params and str(params[k]) != str(migration[k])
                   for k in ('status', 'migration_type', 'instance_uuid',
                             'source_compute')):
                continue
            item = dict(migration)
            if version < (2, 59):
                item.pop('uuid')
            if version < (2, 23):
                item.pop('migration_type')
            found.append(item)
        if version < (2, 59):
            return make_response(200, {'migrations': found})
        page, links = _page(found, params, 'os-migrations', self.max_limit,
                            id_key='uuid')
        body = {'migrations': page}
        if links:
            body['migrations_links'] = links
        return make_response(200, body)

    def _service_host(self, service_id):
        for service in self.services():
            if service.id == service_id:
                return service.host
        return None

    def _update_service(self, service_id, body, version):
        """Nova's service update by uuid (2.53 and later; 404 below, where
        the route takes host and binary): status, and disabled_reason only
        with status disabled (400 otherwise, as Nova)."""
        if version < (2, 53):
            return nova_error(404, 'Service %s could not be found.'
                              % service_id)
        host = self._service_host(service_id)
        if host is None:
            return nova_error(404, 'Service %s could not be found.'
                              % service_id)
        body = body if isinstance(body, dict) else {}
        status = body.get('status')
        if status not in ('enabled', 'disabled') or (
                set(body) - {'status', 'disabled_reason', 'forced_down'}):
            return nova_error(400, 'Invalid input for field/attribute '
                                   'status. Value: %s.' % status)
        if 'disabled_reason' in body and status != 'disabled':
            return nova_error(400, 'Specifying a disabled reason is not '
                                   'supported when the status is enabled.')
        reason = body.get('disabled_reason')
        if reason is not None and (not isinstance(reason, str)
                                   or not 1 <= len(reason) <= 255):
            # schemas/services.py: a string of 1 to 255 characters
            return nova_error(400, 'Invalid input for field/attribute '
                                   'disabled_reason. Value: %s. %r is too '
                                   'long' % (reason, reason))
        if status == 'disabled':
            self.cloud.disabled.add(host)
            self.cloud.disabled_reasons[host] = body.get('disabled_reason')
        else:
            self.cloud.disabled.discard(host)
            self.cloud.disabled_reasons.pop(host, None)
        return make_response(200, {'service': {
            'id': service_id, 'host': host, 'binary': 'nova-compute',
            'status': status,
            'disabled_reason': self.cloud.disabled_reasons.get(host)}})

    def _update_flavor(self, flavor_id, body, version):
        """Nova's flavor update (2.55): the description alone, a string
        or null; the body may repeat the id."""
        if version < (2, 55):
            return nova_error(405, 'The method PUT is not allowed for '
                                   'this resource.')
        flavor = self._flavor(flavor_id)
        if flavor is None:
            return self._no_flavor(flavor_id)
        fields = body.get('flavor')
        if not isinstance(fields, dict) or set(body) != {'flavor'} or (
                'description' not in fields) or (
                set(fields) - {'description', 'id'}):
            return nova_error(400, "Invalid input for field/attribute "
                                   "flavor. Value: %s." % body)
        description = fields['description']
        if description is not None and (
                not isinstance(description, str)
                or len(description) > 65535):
            return nova_error(400, 'Invalid input for field/attribute '
                                   'description. Value: %s.' % description)
        flavor['description'] = description
        return make_response(200, {'flavor': render_flavor(flavor, version)})

    def delete(self, url, microversion=None, **kwargs):
        self.sent.append(('delete', url, microversion))
        parts = _segments(url)
        if parts[0] == 'flavors' and len(parts) == 2:
            return self._write(('delete_flavor', self._label(parts[1])),
                               'delete', url,
                               lambda: self._delete_flavor(parts[1]))
        if parts[0] == 'flavors' and len(parts) == 4 and (
                parts[2] == 'os-extra_specs'):
            return self._write(
                ('unset', self._label(parts[1]), parts[3]), 'delete', url,
                lambda: self._unset_spec(parts[1], parts[3]))
        raise AssertionError('FakeCompute: unexpected DELETE %s' % url)

    def _paged(self, found, params, collection, path):
        page, links = _page(found, params, path, self.max_limit)
        body = {collection: page}
        if links:
            body[collection + '_links'] = links
        return body

    def hypervisors(self, version, params):
        """Below 2.53 ids are integers (not provider uuids); no paging
        below 2.33."""
        found = []
        for index, hv in enumerate(self.cloud.hypervisors):
            hv = dict(hv)
            if version < (2, 53):
                hv['id'] = index + 1
                if 'service' in hv:
                    hv['service'] = dict(hv['service'], id=index + 1)
            found.append(hv)
        if version < (2, 33):
            return {'hypervisors': found}
        return self._paged(found, params, 'hypervisors',
                           'os-hypervisors/detail')

    def flavors(self, version, params):
        """Public flavors only unless is_public says otherwise (``None``:
        all, ``false``: private only), sorted by id, paged."""
        is_public = params.get('is_public')
        if is_public is None:
            want = True
        elif str(is_public).lower() == 'none':
            want = None
        elif str(is_public).lower() in ('true', '1', 'yes', 'on'):
            want = True
        elif str(is_public).lower() in ('false', '0', 'no', 'off'):
            want = False
        else:
            raise ValueError('Invalid is_public filter [%s]' % is_public)
        found = [
            render_flavor(flavor, version)
            for flavor in sorted(self.cloud.flavors, key=lambda f: f['id'])
            if want is None or flavor['os-flavor-access:is_public'] == want
        ]
        return self._paged(found, params, 'flavors', 'flavors/detail')

    # -- flavors --------------------------------------------------------------

    def _flavor(self, flavor_id):
        for flavor in self.cloud.flavors:
            if flavor['id'] == flavor_id:
                return flavor
        return None

    def _label(self, flavor_id):
        """A flavor's name for ``calls`` (its ID if there is none)."""
        flavor = self._flavor(flavor_id)
        return flavor['name'] if flavor else flavor_id

    @staticmethod
    def _no_flavor(flavor_id):
        return nova_error(404, 'Flavor %s could not be found.' % flavor_id)

    def _create_flavor(self, body, version):
        fields = body.get('flavor')
        if not isinstance(fields, dict) or set(body) != {'flavor'}:
            return nova_error(400, "Invalid input for field/attribute "
                                   "flavor. Value: %s." % body)
        known = FLAVOR_FIELDS | (
            {'description'} if version >= (2, 55) else set())
        unknown = sorted(set(fields) - known)
        if unknown:
            return nova_error(400, 'Additional properties are not allowed '
                                   '(%s were unexpected)' % ', '.join(
                                       repr(k) for k in unknown))
        for key in ('name', 'ram', 'vcpus', 'disk'):
            if key not in fields:
                return nova_error(400, "'%s' is a required property" % key)
        name = fields['name']
        if not isinstance(name, str) or not 1 <= len(name) <= 255 or (
                name != name.strip()):
            return nova_error(400, 'Invalid input for field/attribute '
                                   'name. Value: %s.' % name)
        for key, least in FLAVOR_MINIMUM.items():
            value = fields.get(key, least)
            if not _is_count(value) or int(value) < least:
                return nova_error(400, 'Invalid input for field/attribute '
                                       '%s. Value: %s.' % (key, value))
        public = fields.get('os-flavor-access:is_public', True)
        if not isinstance(public, bool):
            return nova_error(400, 'Invalid input for field/attribute '
                                   'os-flavor-access:is_public. Value: '
                                   '%s.' % public)
        if any(f['name'] == name for f in self.cloud.flavors):
            return nova_error(409, 'Flavor with name %s already exists.'
                              % name)
        flavor_id = fields.get('id') or str(uuidlib.uuid4())
        if self._flavor(flavor_id) is not None:
            return nova_error(409, 'Flavor with ID %s already exists.'
                              % flavor_id)
        flavor = self.cloud.add_flavor(
            name, public=public, description=fields.get('description'),
            vcpus=int(fields['vcpus']), ram=int(fields['ram']),
            disk=int(fields['disk']), swap=int(fields.get('swap', 0)),
            ephemeral=int(fields.get('OS-FLV-EXT-DATA:ephemeral', 0)),
            flavor_id=flavor_id)
        if 'rxtx_factor' in fields:
            flavor['rxtx_factor'] = float(fields['rxtx_factor'])
        return make_response(200, {'flavor': render_flavor(flavor, version)})

    def _set_specs(self, flavor_id, body, version):
        flavor = self._flavor(flavor_id)
        if flavor is None:
            return self._no_flavor(flavor_id)
        specs = body.get('extra_specs')
        if not isinstance(specs, dict) or set(body) != {'extra_specs'}:
            return nova_error(400, 'Invalid input for field/attribute '
                                   'extra_specs. Value: %s.' % body)
        for key, value in specs.items():
            if not EXTRA_SPEC_KEY.fullmatch(key) or isinstance(
                    value, bool) or not isinstance(
                    value, (str, int, float)) or len(str(value)) > 255:
                return nova_error(400, 'Invalid input for field/attribute '
                                       'extra_specs. Value: %s.' % specs)
            # from 2.86 Nova 34's validator refuses keys of a namespace it
            # knows (hw:) that it has no validator for
            if version >= (2, 86) and key in NOVA_UNVALIDATED_SPECS:
                return nova_error(
                    400, "Validation failed; extra spec '%s' does not "
                    "appear to be a valid extra spec." % key)
        flavor['extra_specs'].update({k: str(v) for k, v in specs.items()})
        return make_response(200, {'extra_specs': specs})

    def _unset_spec(self, flavor_id, key):
        flavor = self._flavor(flavor_id)
        if flavor is None:
            return self._no_flavor(flavor_id)
        if key not in flavor['extra_specs']:
            return nova_error(404, 'Flavor %s has no extra specs with key '
                                   '%s.' % (flavor_id, key))
        del flavor['extra_specs'][key]
        return make_response(202, None)

    def _access_answer(self, flavor_id):
        return make_response(200, {'flavor_access': [
            {'flavor_id': flavor_id, 'tenant_id': project}
            for project in self.cloud.flavor_access.get(flavor_id, [])]})

    def _access_list(self, flavor_id):
        flavor = self._flavor(flavor_id)
        if flavor is None:
            return self._no_flavor(flavor_id)
        if flavor['os-flavor-access:is_public']:
            return nova_error(404, 'Access list not available for public '
                                   'flavors.')
        return self._access_answer(flavor_id)

    def _add_access(self, flavor_id, project, version):
        flavor = self._flavor(flavor_id)
        if flavor is None:
            return self._no_flavor(flavor_id)
        if not isinstance(project, str) or not project:
            return nova_error(400, 'Invalid input for field/attribute '
                                   'tenant. Value: %s.' % project)
        if flavor['os-flavor-access:is_public'] and version >= (2, 7):
            return nova_error(409, 'Can not add access to a public flavor.')
        projects = self.cloud.flavor_access.setdefault(flavor_id, [])
        if project in projects:
            return nova_error(409, 'Flavor access already exists for flavor '
                                   '%s and project %s combination.'
                              % (flavor_id, project))
        projects.append(project)
        return self._access_answer(flavor_id)

    def _remove_access(self, flavor_id, project):
        flavor = self._flavor(flavor_id)
        if flavor is None:
            return self._no_flavor(flavor_id)
        projects = self.cloud.flavor_access.get(flavor_id, [])
        if project not in projects:
            return nova_error(404, 'Flavor access not found for %s / %s '
                                   'combination.' % (flavor_id, project))
        projects.remove(project)
        return self._access_answer(flavor_id)

    def _delete_flavor(self, flavor_id):
        flavor = self._flavor(flavor_id)
        if flavor is None:
            return self._no_flavor(flavor_id)
        self.cloud.flavors.remove(flavor)
        self.cloud.flavor_access.pop(flavor_id, None)
        return make_response(202, None)

    # -- aggregates and services ----------------------------------------------

    def _find(self, agg):
        for found in self.cloud.aggregates:
            if found is agg or found.id == getattr(agg, 'id', agg):
                return found
        raise sdk_error(404, 'Aggregate %s could not be found.'
                        % getattr(agg, 'id', agg))

    def services(self, **query):
        seen = {}
        for hv in self.cloud.hypervisors:
            host = hv['service']['host']
            seen.setdefault(host, mock.Mock(
                host=host, availability_zone='nova',
                status='disabled' if host in self.cloud.disabled
                else 'enabled',
                disabled_reason=self.cloud.disabled_reasons.get(host),
                state='up', id=hv['service'].get('id') or uid('svc-' + host),
                binary='nova-compute'))
        return list(seen.values())

    def create_aggregate(self, name, availability_zone=None):
        self.calls.append(('create', name))
        if any(a.name == name for a in self.cloud.aggregates):
            raise sdk_error(409, 'Aggregate %s already exists.' % name)
        agg = Aggregate(name, zone=availability_zone)
        self.cloud.aggregates.append(agg)
        return agg

    def set_aggregate_metadata(self, agg, metadata):
        agg = self._find(agg)
        self.calls.append(('metadata', agg.name, dict(metadata)))
        status = self.fail.get(('metadata', agg.name))
        if status:
            raise sdk_error(status, injected(status))
        if 'availability_zone' in metadata:
            if not metadata['availability_zone']:
                raise sdk_error(400, 'Aggregate %s does not support empty '
                                'named availability zone' % agg.name)
            zones = self._other_zones(agg.hosts, agg,
                                      metadata['availability_zone'])
            if zones:
                raise sdk_error(400, 'Cannot update aggregate %s. Reason: '
                                'One or more hosts already in availability '
                                'zone(s) %s.' % (agg.id, zones))
        for key, value in metadata.items():
            if value is None:
                agg.metadata.pop(key, None)
            else:
                agg.metadata[key] = value
        if metadata.get('availability_zone'):
            # Nova keeps the zone in the metadata and shows it as the
            # aggregate's availability_zone as well
            agg.availability_zone = metadata['availability_zone']
        return agg

    def add_host_to_aggregate(self, agg, host):
        agg = self._find(agg)
        self.calls.append(('add', agg.name, host))
        if host in self.fail_add_host:
            raise sdk_error(500, 'Compute service is down')
        if host not in {s.host for s in self.services()}:
            raise sdk_error(404, 'Compute host %s could not be found.'
                            % host)
        if host in agg.hosts:
            raise sdk_error(409, 'Aggregate %s already has host %s.'
                            % (agg.id, host))
        # Nova's is_safe_to_update_az: a host is in one zone at most
        zones = self._other_zones([host], agg, _zone(agg))
        if zones:
            raise sdk_error(409, 'Cannot add host to aggregate %s. Reason: '
                            'One or more hosts already in availability '
                            'zone(s) %s.' % (agg.id, zones))
        agg.hosts.append(host)
        node = self._first_node(host)
        if node is not None and host not in self.unmirrored:
            if agg.uuid not in node.aggregates:
                node.aggregates.append(agg.uuid)
                node.generation += 1
        return agg

    def _other_zones(self, hosts, agg, zone):
        """The zones other than ZONE of the other aggregates of HOSTS (a
        zone-less aggregate: nothing to compare)."""
        if not zone:
            return []
        return sorted({_zone(a) for a in self.cloud.aggregates
                       if a is not agg and _zone(a) and _zone(a) != zone
                       and set(hosts) & set(a.hosts)})

    def _first_node(self, host):
        for hv in self.cloud.hypervisors:
            if hv['service']['host'] == host:
                return self.cloud.provider(hv['id'])
        return None

    def remove_host_from_aggregate(self, agg, host):
        agg = self._find(agg)
        self.calls.append(('remove', agg.name, host))
        if host not in agg.hosts:
            raise sdk_error(404, 'Aggregate %s has no host %s.'
                            % (agg.id, host))
        node = self._first_node(host)
        if self.remove_conflicts.get(host):
            self.remove_conflicts[host] -= 1
            raise sdk_error(
                409, 'A conflict was encountered attempting to update '
                'resource provider %s (generation 7)' % node.uuid)
        if node is not None and agg.uuid in node.aggregates:
            node.aggregates.remove(agg.uuid)
            node.generation += 1
        agg.hosts.remove(host)
        return agg

    def delete_aggregate(self, agg, ignore_missing=True):
        try:
            agg = self._find(agg)
        except sdk_exc.NotFoundException:
            if ignore_missing:
                return None
            raise
        self.calls.append(('delete', agg.name))
        if agg.hosts:
            raise sdk_error(400, 'Cannot remove aggregate %s. Reason: Host '
                                 'aggregate is not empty.' % agg.id)
        self.cloud.aggregates.remove(agg)
        return None

    def get_aggregate(self, agg):
        return self._find(agg)


class FakeGlance:
    """Glance v2 images behind a mock image proxy's raw calls: the listing
    (``get``, paged by ``limit`` and ``marker``, with a ``next`` link on a
    full page; ``name`` filters), one image by ID, and ``patch`` with a
    JSON patch of the v2.1 media type (add, replace, remove of top-level
    properties; replace or remove of a property the image lacks is a
    409, as Glance answers; any other media type a 415).

    Faults: ``fail[image id] = status`` answers the image's PATCH with
    that status before changing anything. ``patches`` records every
    PATCH asked for as (image id, patch)."""

    PATCH_TYPE = 'application/openstack-images-v2.1-json-patch'

    def __init__(self, cloud, proxy):
        self.cloud = cloud
        self.gets = []
        self.patches = []
        self.fail = {}
        proxy.get.side_effect = self.get
        proxy.patch.side_effect = self.patch

    def _image(self, image_id):
        for image in self.cloud.images:
            if image['id'] == image_id:
                return image
        return None

    def patch(self, url, json=None, headers=None, **kwargs):
        image_id = url.rsplit('/', 1)[-1]
        self.patches.append((image_id, json))
        image = self._image(image_id)
        if not url.startswith('/images/') or image is None:
            return make_response(404, '404 Not Found')
        if (headers or {}).get('Content-Type') != self.PATCH_TYPE:
            return make_response(415, 'Unsupported Media Type')
        if image_id in self.fail:
            return make_response(self.fail[image_id],
                                 injected(self.fail[image_id]))
        changed = dict(image)
        for change in json or ():
            key = change['path'].lstrip('/')
            if change['op'] in ('replace', 'remove') and key not in changed:
                return make_response(409, 'Property %s does not exist.'
                                     % key)
            if change['op'] == 'remove':
                del changed[key]
            elif change['op'] in ('add', 'replace'):
                changed[key] = change['value']
            else:
                return make_response(400, 'Invalid operation')
        image.clear()
        image.update(changed)
        return make_response(200, dict(image))

    def get(self, url, params=None, **kwargs):
        params = dict(params or {})
        self.gets.append((url, params))
        if url.startswith('/images/'):
            image = self._image(url.rsplit('/', 1)[-1])
            if image is None:
                return make_response(404, '404 Not Found')
            return make_response(200, dict(image))
        if url != '/images':
            return make_response(404, '404 Not Found')
        if 'name' in params:
            found = [dict(i) for i in self.cloud.images
                     if i.get('name') == params['name']]
            return make_response(200, {'images': found})
        try:
            page, _links = _page(self.cloud.images, params, 'images',
                                 int(params.get('limit') or 25))
        except ValueError as exc:
            return make_response(400, str(exc))
        body = {'images': page, 'first': '/v2/images',
                'schema': '/v2/schemas/images'}
        if _links:
            body['next'] = '/v2/images?%s' % urllib.parse.urlencode(
                sorted(dict(params, marker=page[-1]['id']).items()))
        return make_response(200, body)


class FakeIronic(sdk_proxy.SDKProxy):
    """Ironic's GET /nodes over a FakeCloud (the baremetal proxy: its get,
    and the SDK's node list on it)."""

    def __init__(self, cloud):
        super().__init__()
        self.cloud = cloud
        self.calls = []  # (url, microversion, params)

    def get(self, url, microversion=None, params=None, raise_exc=True,
            **kwargs):
        if not self.cloud.ironic_endpoint:
            raise sdk_exc.ServiceDisabledException(
                'The service is not present in the service catalog')
        # a next link is a whole URL, keystoneauth sends it as it is
        url = url.replace('http://ironic.example/v1', '', 1)
        params = wire_params(params)
        self.calls.append((url, microversion, dict(params or {})))
        if url != '/nodes':
            return make_response(404, {'error_message': 'not found'})
        nodes = [] if self.cloud.ironic_hidden else self.cloud.ironic_nodes
        fields = (params or {}).get('fields')
        if fields:
            keep = fields.split(',')
            nodes = [{k: n.get(k) for k in keep} for n in nodes]
        nodes = sorted(nodes, key=lambda n: n['uuid'])
        marker = (params or {}).get('marker')
        if marker:
            nodes = [n for n in nodes if n['uuid'] > marker]
        # Ironic caps a page at [api]max_limit and links the next page
        # whenever a page is full, whatever limit was asked for
        limit = min(int((params or {}).get('limit') or 1000),
                    self.cloud.ironic_max_limit)
        page = nodes[:limit]
        body = {'nodes': page}
        if page and len(page) == limit:
            query = dict(params or {}, limit=limit, marker=page[-1]['uuid'])
            body['next'] = 'http://ironic.example/v1/nodes?%s' % (
                urllib.parse.urlencode(query))
        return make_response(200, body, url='http://ironic.example/v1/nodes')


class FakeBlazar:
    """Blazar's v1 API (blazar 18.0.0) behind a keystoneauth adapter's
    ``get``: ``GET /os-hosts`` and nothing else (any other path is
    Blazar's 404), admin only (``blazar:oshosts:get``: 403 otherwise).

    Blazar's own state is kept as Blazar keeps it with Nova: a host
    enrolled in it sits in its freepool aggregate, named FREEPOOL
    (``[nova] aggregate_freepool_name``, a setting: not always
    "freepool"), or, leased, in a lease aggregate (zone ``blazar_``...).
    So the enrolled hosts are the members of those aggregates of the
    FakeCloud, each a record as Blazar answers it. ``status`` answers
    every request with that HTTP status instead; ``down`` refuses the
    connection. ``calls``: the paths asked.
    """

    def __init__(self, cloud, freepool='freepool'):
        self.cloud = cloud
        self.freepool = freepool
        self.admin = True
        self.status = None
        self.down = False
        self.calls = []

    def enrolled(self):
        hosts = []
        for agg in self.cloud.aggregates:
            if agg.name == self.freepool or str(_zone(agg) or '').startswith(
                    'blazar_'):
                hosts += [h for h in agg.hosts if h not in hosts]
        return hosts

    def record(self, index, host):
        names = [hv.get('hypervisor_hostname')
                 for hv in self.cloud.hypervisors
                 if hv['service']['host'] == host]
        return {'id': str(index + 1), 'service_name': host,
                'hypervisor_hostname': names[0] if names else host,
                'hypervisor_type': 'QEMU', 'hypervisor_version': 9002000,
                'vcpus': 64, 'memory_mb': 524288, 'local_gb': 3500,
                'cpu_info': '{"arch": "x86_64"}', 'status': None,
                'availability_zone': 'nova', 'reservable': True,
                'trust_id': uid('trust-' + host),
                'created_at': '2026-12-01 08:00:00', 'updated_at': None}

    def get(self, url, raise_exc=True, **kwargs):
        if raise_exc or kwargs:
            raise AssertionError('an unexpected Blazar request: GET %s %r'
                                 % (url, kwargs))
        self.calls.append(url)
        if self.down:
            raise ks_exc.ConnectFailure(
                'Unable to establish connection to %s%s' % (BLAZAR_URL, url))
        if self.status:
            return make_response(self.status, {
                'error_code': self.status, 'error_name': self.status,
                'error_message': 'Internal Server Error'},
                url=BLAZAR_URL + url)
        if url != '/os-hosts':
            return make_response(404, {
                'error': 404, 'error_message': 'The requested URL was not '
                'found on the server.'}, url=BLAZAR_URL + url)
        if not self.admin:
            return make_response(403, {
                'error_code': 403, 'error_name': 403,
                'error_message': 'Policy doesn\'t allow '
                'blazar:oshosts:get to be performed'}, url=BLAZAR_URL + url)
        return make_response(200, {'hosts': [
            self.record(i, h) for i, h in enumerate(self.enrolled())]},
            url=BLAZAR_URL + url)


class ClientManagerFixture(fixtures.Fixture):
    """A client manager whose ``gpu`` is the real client layer.

    Placement: a keystoneauth session whose endpoint is PLACEMENT_URL
    (answered by PlacementFixture). Compute: an SDK proxy mock answered by
    a FakeCompute (``nova``) over the FakeCloud; ``max_limit`` plays Nova's
    [api]max_limit (the page size). Image: a mock proxy whose raw ``get``
    lists the FakeCloud's images (``glance``).
    """

    def __init__(self, cloud, max_limit=NOVA_MAX_LIMIT,
                 compute_api_version=None, catalog=None):
        super().__init__()
        self.cloud = cloud
        self.max_limit = max_limit
        # --os-compute-api-version as given (None: not given)
        self.compute_api_version = compute_api_version
        # service types of the token's catalog (None: a token and
        # endpoint, which has no catalog)
        self.catalog = catalog

    def _setUp(self):
        session = ks_session.Session(
            auth=token_endpoint.Token(PLACEMENT_URL, 'token')
        )
        if self.catalog is not None:
            # what a password or token authentication carries: the
            # catalog came with the token, reading it sends nothing
            access = mock.Mock()
            access.service_catalog.catalog = [
                {'type': kind, 'id': uid(kind), 'endpoints': []}
                for kind in self.catalog]
            session.auth.get_access = lambda _session: access
        self.compute = mock.Mock(spec=compute_proxy.Proxy)
        self.nova = FakeCompute(self.cloud, self.compute, self.max_limit)
        self.image = mock.Mock(spec=image_proxy.Proxy)
        self.glance = FakeGlance(self.cloud, self.image)
        conn = mock.Mock()
        conn.compute = self.compute
        conn.image = self.image
        self.ironic = FakeIronic(self.cloud)
        conn.baremetal = self.ironic
        # Placement: the real SDK proxy on the session, made on first use
        sdk = connection.Connection(session=session, region_name='RegionOne',
                                    interface='public')
        type(conn).placement = property(lambda _conn: sdk.placement)
        self.gpu = client.GpuClient(
            session, conn, 'RegionOne', 'public',
            compute_api_version=self.compute_api_version)
        # Blazar, asked where the catalog lists it
        self.blazar = FakeBlazar(self.cloud)
        self.gpu._reservation = reservation_mod.Reservation(self.blazar)
        self.client_manager = mock.Mock()
        self.client_manager.gpu = self.gpu

    def _compute_get(self, url, microversion=None, params=None, **kwargs):
        return self.nova.get(url, microversion, params, **kwargs)


class FakeKeystoneLimits:
    """Keystone's unified limits behind the SDK identity proxy's limit
    calls, as strict as keystone/limit (schema.py, backends/sql.py): the
    create fields are Keystone's own (an unknown one, or a required one
    missing, is a 400: the SDK drops attributes its resource lacks, so
    Keystone sees the required field missing), and a second limit for the
    same service, region, resource (and project) is a 409 "Duplicate
    entry". Install with ``install(proxy)`` on a mock identity proxy.
    """

    REGISTERED = frozenset({'service_id', 'region_id', 'resource_name',
                            'default_limit', 'description'})
    REGISTERED_REQUIRED = frozenset({'service_id', 'resource_name',
                                     'default_limit'})
    LIMIT = frozenset({'project_id', 'domain_id', 'service_id', 'region_id',
                       'resource_name', 'resource_limit', 'description'})
    LIMIT_REQUIRED = frozenset({'project_id', 'service_id', 'resource_name',
                                'resource_limit'})

    def __init__(self):
        self.registered = []
        self.project_limits = []

    def install(self, proxy):
        proxy.registered_limits.side_effect = self.list_registered
        proxy.limits.side_effect = self.list_limits
        proxy.create_registered_limit.side_effect = self.create_registered
        proxy.create_limit.side_effect = self.create_limit
        proxy.update_registered_limit.side_effect = self.update_registered
        proxy.update_limit.side_effect = self.update_limit
        proxy.delete_registered_limit.side_effect = self.delete_registered
        proxy.delete_limit.side_effect = self.delete_limit

    @staticmethod
    def _find(items, limit_id):
        for item in items:
            if item.id == limit_id:
                return item
        raise sdk_error(404, 'Could not find limit: %s.' % limit_id)

    def _referenced(self, registered):
        return [r for r in self.project_limits
                if (r.service_id, r.region_id, r.resource_name) == (
                    registered.service_id, registered.region_id,
                    registered.resource_name)]

    # keystone/limit/schema.py: what an update may change
    REGISTERED_UPDATE = frozenset({'service_id', 'region_id',
                                   'resource_name', 'default_limit',
                                   'description'})
    LIMIT_UPDATE = frozenset({'resource_limit', 'description'})

    def update_registered(self, limit_id, **attrs):
        self._validate(attrs, self.REGISTERED_UPDATE, ())
        item = self._find(self.registered, limit_id)
        for key, value in attrs.items():
            setattr(item, key, value)
        return item

    def update_limit(self, limit_id, **attrs):
        self._validate(attrs, self.LIMIT_UPDATE, ())
        item = self._find(self.project_limits, limit_id)
        for key, value in attrs.items():
            setattr(item, key, value)
        return item

    def delete_registered(self, limit_id):
        item = self._find(self.registered, limit_id)
        if self._referenced(item):
            # keystone/limit/backends/sql.py: a registered limit that
            # project limits reference is not deleted
            raise sdk_error(403, 'Cannot delete a registered limit that '
                            'is referenced by project limits.')
        self.registered.remove(item)

    def delete_limit(self, limit_id):
        self.project_limits.remove(self._find(self.project_limits,
                                              limit_id))

    @staticmethod
    def _validate(attrs, allowed, required):
        unknown = sorted(set(attrs) - allowed)
        missing = sorted(k for k in required if attrs.get(k) is None)
        if unknown or missing:
            raise sdk_error(400, 'Invalid input for field/attribute: %s'
                            % ', '.join(unknown + missing))

    @staticmethod
    def _match(item, query):
        return all(getattr(item, k, None) == v for k, v in query.items())

    def list_registered(self, **query):
        return [r for r in self.registered if self._match(r, query)]

    def list_limits(self, **query):
        return [r for r in self.project_limits if self._match(r, query)]

    def _create(self, items, attrs, key):
        same = [r for r in items
                if all(getattr(r, k, None) == attrs.get(k) for k in key)]
        if same:
            raise sdk_error(409, 'Conflict occurred attempting to store '
                            'limit - Duplicate entry.')
        item = mock.Mock(id=uuidlib.uuid4().hex, **{
            k: attrs.get(k) for k in self.LIMIT | self.REGISTERED})
        items.append(item)
        return item

    def create_registered(self, **attrs):
        self._validate(attrs, self.REGISTERED, self.REGISTERED_REQUIRED)
        return self._create(self.registered, attrs,
                            ('service_id', 'region_id', 'resource_name'))

    def create_limit(self, **attrs):
        self._validate(attrs, self.LIMIT, self.LIMIT_REQUIRED)
        return self._create(self.project_limits, attrs,
                            ('service_id', 'region_id', 'resource_name',
                             'project_id'))
