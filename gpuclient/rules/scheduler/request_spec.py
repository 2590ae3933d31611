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

"""Pure: the request the scheduler judges hosts for (``nova/objects/
request_spec.py``): one request, declared once (its flavor, image,
project, zone, Placement request and the settings decided for it), with
what the filters read of it derived once (``filters.spec`` builds it)."""

from collections.abc import Mapping
import dataclasses
import typing


@dataclasses.dataclass(frozen=True)
class RequestSpec:
    # -- the request
    # the scheduler settings, decided once (manager.decide_settings):
    # the enabled filters, the [pci] aliases, the default architecture
    settings: Mapping[str, typing.Any]
    # the flavor (vcpus, ram, extra specs); None: resources given instead
    flavor: Mapping[str, typing.Any] | None = None
    # the image (its properties at the top level; {}: none given); None:
    # not judged (a flavor counted, a move), nor the default architecture
    # that stands in for its own
    image: Mapping[str, typing.Any] | None = None
    # the project the server is for
    project_id: str | None = None
    # the availability zone asked (None: any)
    zone: str | None = None
    # the Placement request (resource_request.build or from_resources; {}:
    # not built, the filters alone are asked)
    resource_request: dict[str, typing.Any] = dataclasses.field(
        default_factory=dict)
    # -- what the filters read of it (filters.spec derives it)
    # the flavor's extra specs
    extra_specs: Mapping[str, str] = dataclasses.field(default_factory=dict)
    # what the image requires of a node (ImagePropertiesFilter:
    # image_props_filter.image_requirements)
    wanted: dict[str, typing.Any] | None = None
    # the guest NUMA topology the flavor and image ask (None: none;
    # numa_topology_filter.constraints)
    guest: dict[str, typing.Any] | None = None
    # PCI devices the flavor asks (numa_topology_filter.pci_devices)
    devices: int = 0


if typing.TYPE_CHECKING:
    class RequestBuilder(typing.Protocol):
        """The request being built (``resource_request._Builder``), as
        the prefilters (``request_filter``) and the PCI groups (``pci``)
        add to it; declared here for the type checker, where both may
        import it (resource_request imports them)."""

        groups: dict[str, dict[str, typing.Any]]
        root_required: set[str]
        root_forbidden: set[str]
        not_covered: list[str]
        # what the aggregate prefilters found
        isolated: list[dict[str, typing.Any]]
        tenant: list[dict[str, typing.Any]]
        zoned: list[dict[str, typing.Any]]
        # Nova's RequestFilterFailed, raised once every prefilter has run
        failures: list[Exception]

        def group(self, suffix: str, origin: str | None = None,
                  gpu: bool = False) -> dict[str, typing.Any]:
            ...
