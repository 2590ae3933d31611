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
``mock.Mock(spec=Proxy)``.
"""

import json
from unittest import mock
import uuid as uuidlib

import fixtures
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint
from openstack.compute.v2 import _proxy as compute_proxy
import requests
from requests_mock.contrib import fixture as rm_fixture

from gpuclient import client

PLACEMENT_URL = 'http://placement.example:8778'
PLACEMENT_MAX = '1.39'


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

    def add(self, provider):
        self.providers.append(provider)
        return provider

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

    def tree(self, root):
        return [p for p in self.providers if p.root is root]

    def resource_classes(self):
        names = {'VCPU', 'MEMORY_MB', 'DISK_GB', 'VGPU', 'PGPU'}
        for p in self.providers:
            names.update(p.inventory)
        return sorted(names)

    # -- rendered Placement answers --------------------------------------

    def providers_body(self):
        return {
            'resource_providers': [
                {
                    'uuid': p.uuid,
                    'name': p.name,
                    'generation': 1,
                    'parent_provider_uuid': p.parent and p.parent.uuid,
                    'root_provider_uuid': p.root.uuid,
                }
                for p in self.providers
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


class PlacementFixture(fixtures.Fixture):
    """requests-mock answers for a FakeCloud's Placement."""

    def __init__(self, cloud, max_version=PLACEMENT_MAX, limit=None):
        super().__init__()
        self.cloud = cloud
        self.max_version = max_version
        self.limit = limit

    def _setUp(self):
        self.mock = self.useFixture(rm_fixture.Fixture())
        client.Placement._max_versions.clear()
        self.addCleanup(client.Placement._max_versions.clear)
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
                    }
                ]
            },
        )
        self.mock.get(
            url + '/resource_providers',
            json=lambda req, ctx: self.cloud.providers_body(),
        )
        self.mock.get(
            url + '/resource_classes',
            json=lambda req, ctx: {
                'resource_classes': [
                    {'name': n} for n in self.cloud.resource_classes()
                ]
            },
        )
        self.mock.get(url + '/allocation_candidates', json=self._candidates)
        for p in self.cloud.providers:
            base = '%s/resource_providers/%s' % (url, p.uuid)
            self.mock.get(
                base + '/inventories',
                json={
                    'inventories': p.inventory,
                    'resource_provider_generation': 1,
                },
            )
            self.mock.get(
                base + '/usages',
                json={
                    'usages': {rc: p.used.get(rc, 0) for rc in p.inventory},
                    'resource_provider_generation': 1,
                },
            )
            self.mock.get(
                base + '/traits',
                json={'traits': p.traits, 'resource_provider_generation': 1},
            )

    def _candidates(self, request, context):
        resources = request.qs['resources'][0].upper()
        rc, _amount = resources.split(':')
        return self.cloud.candidates_body(rc, self.limit)

    def requests(self, path=None):
        """Requests sent to Placement (optionally only to ``path``)."""
        sent = [
            r for r in self.mock.request_history
            if r.url.startswith(PLACEMENT_URL)
        ]
        if path is not None:
            sent = [r for r in sent if r.path == path]
        return sent


class ClientManagerFixture(fixtures.Fixture):
    """A client manager whose ``gpu`` is the real client layer.

    Placement: a keystoneauth session whose endpoint is PLACEMENT_URL
    (answered by PlacementFixture). Compute: an SDK proxy mock whose raw
    ``get`` serves the FakeCloud's hypervisors.
    """

    def __init__(self, cloud):
        super().__init__()
        self.cloud = cloud

    def _setUp(self):
        session = ks_session.Session(
            auth=token_endpoint.Token(PLACEMENT_URL, 'token')
        )
        self.compute = mock.Mock(spec=compute_proxy.Proxy)
        self.compute.get.side_effect = self._compute_get
        self.compute.aggregates.side_effect = lambda: list(
            self.cloud.aggregates
        )
        conn = mock.Mock()
        conn.compute = self.compute
        self.gpu = client.GpuClient(session, conn, 'RegionOne', 'public')
        self.client_manager = mock.Mock()
        self.client_manager.gpu = self.gpu

    def _compute_get(self, url, microversion=None, params=None, **kwargs):
        if url.startswith('/os-hypervisors/detail'):
            return make_response(
                200,
                {'hypervisors': self.cloud.hypervisors},
            )
        return make_response(404, {'itemNotFound': {'message': 'nope'}})
