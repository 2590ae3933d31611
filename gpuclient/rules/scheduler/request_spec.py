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

"""Pure: what the filters judge a host for (``nova/objects/
request_spec.py``): one request, decided once per flavor, image and
project (``filters.context`` builds it)."""

import dataclasses


@dataclasses.dataclass(frozen=True)
class RequestSpec:
    # the flavor's extra specs
    extra_specs: dict
    # the project the server is for
    project_id: str = None
    # what the image requires of a node (ImagePropertiesFilter:
    # image_props_filter.image_requirements)
    wanted: dict = None
    # the guest NUMA topology the flavor and image ask (None: none;
    # numa_topology_filter.constraints)
    guest: dict = None
    # PCI devices the flavor asks (numa_topology_filter.pci_devices)
    devices: int = 0
