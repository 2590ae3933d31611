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

"""Pure: the host filters Nova runs after Placement, one module each.

Laid out as ``nova/scheduler/filters/``: a module per filter, named as
Nova names its file, each with ``NAME`` (the filter's class name, as in
``[filter_scheduler] enabled_filters``), ``host_reasons(state, spec)``
([reason dicts] for a host the filter removes; STATE a
``host_manager.HostState``, SPEC a ``request_spec.RequestSpec``) and
``text(host, reason, project_id)`` (the reason in operator terms).
``FILTERS`` is the registry, in the order Nova 34 runs the default
filters that the API lets a client judge; ``NOT_CHECKED`` names the
others, and why. ``run`` runs the enabled ones on every host, for one
request (``spec``) over the hosts of one cloud (``context``).
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping
import typing

from gpuclient.i18n import _
from gpuclient.rules.scheduler import host_manager
from gpuclient.rules.scheduler import request_spec
from gpuclient.rules.scheduler.filters import aggregate_instance_extra_specs
from gpuclient.rules.scheduler.filters import aggregate_multitenancy_isolation
from gpuclient.rules.scheduler.filters import blazar_filter
from gpuclient.rules.scheduler.filters import compute_capabilities_filter
from gpuclient.rules.scheduler.filters import compute_filter
from gpuclient.rules.scheduler.filters import image_props_filter
from gpuclient.rules.scheduler.filters import numa_topology_filter
from gpuclient.rules.scheduler.filters import utils

if typing.TYPE_CHECKING:
    from gpuclient.rules import model

# the filters judged here, in the order they run
FILTERS = (
    compute_filter,
    aggregate_instance_extra_specs,
    aggregate_multitenancy_isolation,
    image_props_filter,
    compute_capabilities_filter,
    numa_topology_filter,
    # Blazar's (blazar-nova), where the cloud runs Blazar
    blazar_filter,
)
CHECKED_FILTERS = tuple(host_filter.NAME for host_filter in FILTERS)
_BY_NAME = {host_filter.NAME: host_filter for host_filter in FILTERS}
# the two that judge compute nodes: what the API does not show of a node
# stays unknown (``unchecked``)
IMAGE_FILTER = image_props_filter.NAME
CAPABILITIES_FILTER = compute_capabilities_filter.NAME
# judges a node where a source shows its NUMA topology (``numa``)
NUMA_FILTER = numa_topology_filter.NAME
# enabled_filters not judged here, with why
NOT_CHECKED = {
    'PciPassthroughFilter': _('the PCI device pools the compute host '
                              'reports to Nova (NUMA, device type)'),
    'ServerGroupAffinityFilter': _('server group affinity (no group given)'),
    'ServerGroupAntiAffinityFilter': _('server group anti-affinity (no '
                                       'group given)'),
}


class Context(typing.NamedTuple):
    """What the filters read: the request, decided once, and the hosts'
    states."""

    spec: request_spec.RequestSpec
    states: HostStates


class HostStates:
    """The hosts' ``HostState``, each built once from the ``model.Cloud``
    as read (its aggregates, services, hypervisors, pools and the hosts
    Blazar holds, ``model.Cloud.held_hosts``) and FACTS ({host: host
    facts})."""

    def __init__(
            self, cloud: model.Cloud,
            facts: Mapping[str, Mapping[str, typing.Any]] | None = None):
        self.aggregates = cloud.aggregates
        self.services = {s['host']: s for s in cloud.services or ()}
        self.nodes = host_manager.nodes_by_host(cloud.hypervisors)
        self.pools = cloud.pools
        self.facts = facts or {}
        self.held = cloud.held_hosts()
        self._states: dict[str, host_manager.HostState] = {}

    def get(self, host: str) -> host_manager.HostState:
        if host not in self._states:
            self._states[host] = host_manager.HostState(
                host=host, service=self.services.get(host),
                nodes=self.nodes.get(host),
                metadata=utils.host_metadata(self.aggregates, host),
                facts=self.facts.get(host), held=self.held.get(host),
                limited_pools=tuple(sorted(
                    p['name'] for p in self.pools.values()
                    if host in p['hosts'] and p['projects'])))
        return self._states[host]


def context(cloud: model.Cloud, request: request_spec.RequestSpec,
            facts: Mapping[str, Mapping[str, typing.Any]] | None = None
            ) -> Context:
    """What the filters read (a ``Context``): the REQUEST (a
    ``RequestSpec``, ``spec`` makes it) and the hosts of CLOUD as the API
    shows them (``HostStates``; FACTS: {host: host facts})."""
    return Context(request, HostStates(cloud, facts))


def spec(settings: Mapping[str, typing.Any],
         flavor: Mapping[str, typing.Any] | None = None,
         project_id: str | None = None,
         image: Mapping[str, typing.Any] | None = None,
         zone: str | None = None,
         resource_request: dict[str, typing.Any] | None = None,
         with_numa: bool = True) -> request_spec.RequestSpec:
    """The ``RequestSpec`` of one request (its fields as named there),
    with what the filters read of it: FLAVOR's extra specs, IMAGE's
    requirements (with SETTINGS' default architecture, where an image is
    judged), FLAVOR's guest NUMA topology with the settings' [pci]
    aliases, whose numa_policy Nova gives a flavor's devices when it sets
    none (WITH_NUMA False: none asked of the filters, as for a drain's
    move, ``maintenance.eligible``), and the PCI devices it asks."""
    extra_specs = (flavor or {}).get('extra_specs') or {}
    default_arch = None
    if image is not None:
        # [filter_scheduler] image_properties_default_architecture (unset
        # unless the settings give it)
        default_arch = settings.get('image_properties_default_architecture')
    return request_spec.RequestSpec(
        settings=settings, flavor=flavor, image=image,
        project_id=project_id, zone=zone,
        resource_request=resource_request or {}, extra_specs=extra_specs,
        wanted=image_props_filter.image_requirements(image, default_arch),
        guest=numa_topology_filter.constraints(
            flavor, image, settings.get('aliases')) if with_numa else None,
        devices=numa_topology_filter.pci_devices(extra_specs))


def run(hosts: Iterable[str], ctx: Context,
        enabled_filters: Iterable[str] | None
        ) -> dict[str, list[dict[str, typing.Any]]]:
    """{host: [reason dicts]} of the enabled filters for CTX's request
    (a ``Context``) on each of HOSTS."""
    enabled = set(enabled_filters or ())
    out = {}
    for host in hosts:
        state = ctx.states.get(host)
        reasons: list[dict[str, typing.Any]] = []
        for host_filter in FILTERS:
            if host_filter.NAME in enabled:
                reasons += host_filter.host_reasons(state, ctx.spec)
        if reasons:
            out[host] = reasons
    return out


def post_filter_text(host: str, reason: Mapping[str, typing.Any],
                     project_id: str | None) -> str:
    host_filter = _BY_NAME.get(reason['filter'])
    if host_filter is None:
        return '%s: %s' % (host, reason['filter'])
    return host_filter.text(host, reason, project_id)


def unchecked(hosts: Iterable[str], ctx: Context,
              enabled_filters: Iterable[str] | None) -> dict[str, str]:
    """{filter: text}: what the two filters could not judge of CTX's
    request (a ``Context``), and where."""
    enabled = set(enabled_filters or ())
    nodes = ctx.states.nodes
    wanted = ctx.spec.wanted
    extra_specs = ctx.spec.extra_specs
    judges = []
    if IMAGE_FILTER in enabled:
        # WANTED is never None: spec, which makes every RequestSpec, sets
        # it (image_requirements)
        judges.append((IMAGE_FILTER, lambda node: (
            image_props_filter.judge_image(
                node, wanted))))  # type: ignore[arg-type]
    if CAPABILITIES_FILTER in enabled:
        judges.append((CAPABILITIES_FILTER, lambda node: (
            compute_capabilities_filter.judge_capabilities(
                node, extra_specs))))
    out = {}
    for name, judge in judges:
        whys: dict[str, list[str]] = {}
        for host in sorted(hosts):
            if not nodes.get(host):
                whys.setdefault(_('no hypervisor record'), []).append(host)
                continue
            status, detail = host_manager.judge_host(nodes[host], judge)
            if status != host_manager.UNKNOWN:
                continue
            if name == IMAGE_FILTER:
                texts = [detail.get('why') or '']
            else:
                texts = ['%s (%s)' % (item['key'], item['why'])
                         for item in detail.get('unknown') or ()]
            for text in texts:
                whys.setdefault(text, []).append(host)
        if whys:
            out[name] = '; '.join(_('%(why)s on %(hosts)s') % {
                'why': why, 'hosts': ', '.join(found)}
                for why, found in sorted(whys.items()))
    return out


def numa(hosts: Iterable[str], ctx: Context,
         enabled_filters: Iterable[str] | None
         ) -> dict[str, tuple[str, str | None]]:
    """{host: (status, text)} of NUMATopologyFilter for a flavor asking a
    NUMA topology ({} when it asks none or the filter is off): 'judged'
    (passes or fails, by which source) or 'not judged' and why."""
    if NUMA_FILTER not in set(enabled_filters or ()) or not ctx.spec.guest:
        return {}
    out: dict[str, tuple[str, str | None]] = {}
    for host in hosts:
        status, detail = numa_topology_filter.judge(ctx.states.get(host),
                                                    ctx.spec)
        if status == host_manager.UNKNOWN:
            # UNKNOWN always has its detail (None only with PASS)
            out[host] = (status, numa_topology_filter.unknown_text(
                detail))  # type: ignore[arg-type]
        else:
            out[host] = (status, (detail or {}).get('source'))
    return out
