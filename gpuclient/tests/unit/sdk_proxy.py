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

"""Proxies for tests' stand-ins of Nova and Ironic, on which the SDK's
own list and commit code runs (no test-only imports: the differential
tests against Nova import it in the test cloud's interpreter)."""

from keystoneauth1 import adapter as ks_adapter
from openstack.baremetal.v1 import _proxy as baremetal_proxy
from openstack.compute.v2 import _proxy as compute_proxy
from openstack.placement.v1 import _proxy as placement_proxy


class SDKProxy(ks_adapter.Adapter):
    """What the SDK's lists and commits need of a proxy, for a test's
    stand-in that answers the raw requests itself (its ``get``, ``put``):
    they run the SDK's own code on it (``Proxy.hypervisors``,
    ``Proxy.flavors``, ``Proxy.migrations``, the baremetal ``Proxy.nodes``,
    the placement ``Proxy.resource_providers``, ``Resource.list`` and its
    paging, ``Resource.fetch``, ``create`` and ``commit``). Made without
    a keystoneauth session: nothing goes on the wire."""

    retriable_status_codes = None
    default_microversion = None

    def __init__(self):
        # no keystoneauth session behind it: nothing is sent
        pass

    def _get_connection(self):
        return None

    def hypervisors(self, **query):
        return compute_proxy.Proxy.hypervisors(self, **query)

    def servers(self, **query):
        return compute_proxy.Proxy.servers(self, **query)

    def flavors(self, **query):
        return compute_proxy.Proxy.flavors(self, **query)

    def migrations(self, **query):
        return compute_proxy.Proxy.migrations(self, **query)

    def nodes(self, **query):
        return baremetal_proxy.Proxy.nodes(self, **query)

    def resource_providers(self, **query):
        return placement_proxy.Proxy.resource_providers(self, **query)

    def _list(self, *args, **kwargs):
        return compute_proxy.Proxy._list(self, *args, **kwargs)
