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
others, and why. ``post_filters`` runs the enabled ones on every host.
"""

from __future__ import annotations

from collections.abc import Collection
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
    """The hosts' ``HostState``, each built once from the cloud's reads
    (aggregates, services, hypervisors, pools; FACTS {host: host facts},
    HELD {host: [why]} of the hosts Blazar holds)."""

    def __init__(
            self,
            aggregates: Collection[Mapping[str, typing.Any] | object] = (),
            services: Iterable[Mapping[str, typing.Any]] | None = (),
            hypervisors: Iterable[Mapping[str, typing.Any]] | None = (),
            pools: Mapping[str, Mapping[str, typing.Any]] | None = None,
            facts: Mapping[str, Mapping[str, typing.Any]] | None = None,
            held: Mapping[str, list[str]] | None = None):
        self.aggregates = aggregates or ()
        self.services = {s['host']: s for s in services or ()}
        self.nodes = host_manager.nodes_by_host(hypervisors)
        self.pools = pools or {}
        self.facts = facts or {}
        self.held = held or {}
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


def context(
        extra_specs: Mapping[str, str], project_id: str | None,
        pools: Mapping[str, Mapping[str, typing.Any]] | None = None,
        services: Iterable[Mapping[str, typing.Any]] | None = (),
        hypervisors: Iterable[Mapping[str, typing.Any]] | None = (),
        image: Mapping[str, typing.Any] | None = None,
        default_arch: str | None = None,
        flavor: Mapping[str, typing.Any] | None = None,
        facts: Mapping[str, Mapping[str, typing.Any]] | None = None,
        held: Mapping[str, list[str]] | None = None,
        aliases: Mapping[str, Mapping[str, typing.Any]] | None = None,
        aggregates: Collection[Mapping[str, typing.Any] | object] = ()
) -> Context:
    """What the filters read (a ``Context``): the request (FLAVOR's guest
    NUMA topology with the settings' [pci] ALIASES, whose numa_policy
    Nova gives a flavor's devices when it sets none; IMAGE's
    requirements) and the hosts as the API shows them (FACTS: {host: host
    facts}, HELD: {host: [why]} of the hosts Blazar holds).
    """
    return Context(
        spec(extra_specs, project_id, image, default_arch, flavor, aliases),
        HostStates(aggregates, services, hypervisors, pools, facts, held))


def spec(extra_specs: Mapping[str, str], project_id: str | None,
         image: Mapping[str, typing.Any] | None = None,
         default_arch: str | None = None,
         flavor: Mapping[str, typing.Any] | None = None,
         aliases: Mapping[str, Mapping[str, typing.Any]] | None = None
         ) -> request_spec.RequestSpec:
    """The ``RequestSpec`` the filters judge a host for (as ``context``
    takes its arguments)."""
    return request_spec.RequestSpec(
        extra_specs=extra_specs, project_id=project_id,
        wanted=image_props_filter.image_requirements(image, default_arch),
        guest=numa_topology_filter.constraints(flavor, image, aliases),
        devices=numa_topology_filter.pci_devices(extra_specs))


def post_filters(
        hosts: Iterable[str], extra_specs: Mapping[str, str],
        aggregates: Collection[Mapping[str, typing.Any] | object],
        services: Iterable[Mapping[str, typing.Any]] | None,
        project_id: str | None, enabled_filters: Iterable[str] | None,
        pools: Mapping[str, Mapping[str, typing.Any]] | None = None,
        hypervisors: Iterable[Mapping[str, typing.Any]] | None = (),
        image: Mapping[str, typing.Any] | None = None,
        default_arch: str | None = None,
        flavor: Mapping[str, typing.Any] | None = None,
        facts: Mapping[str, Mapping[str, typing.Any]] | None = None,
        held: Mapping[str, list[str]] | None = None,
        aliases: Mapping[str, Mapping[str, typing.Any]] | None = None
) -> dict[str, list[dict[str, typing.Any]]]:
    """{host: [reason dicts]} for hosts the judged filters remove.

    ``hypervisors`` (compute API 2.53 details) and ``image`` (its
    properties) feed ImagePropertiesFilter and ComputeCapabilitiesFilter,
    with FLAVOR (its vcpus, ram and extra specs) and FACTS ({host: host
    facts}) NUMATopologyFilter; a host whose nodes they cannot judge is
    not removed (see ``unchecked`` and ``numa``). HELD: the hosts Blazar
    holds (BlazarFilter). ALIASES: the settings' [pci] aliases (their
    numa_policy, see ``context``).
    """
    return run(hosts, context(
        extra_specs, project_id, pools, services, hypervisors, image,
        default_arch, flavor, facts, held, aliases, aggregates),
        enabled_filters)


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


def unchecked(hosts: Iterable[str],
              hypervisors: Iterable[Mapping[str, typing.Any]] | None,
              extra_specs: Mapping[str, str],
              image: Mapping[str, typing.Any] | None,
              enabled_filters: Iterable[str] | None,
              default_arch: str | None = None) -> dict[str, str]:
    """{filter: text}: what the two filters could not judge, and where."""
    enabled = set(enabled_filters or ())
    nodes = host_manager.nodes_by_host(hypervisors)
    wanted = image_props_filter.image_requirements(image, default_arch)
    judges = []
    if IMAGE_FILTER in enabled:
        judges.append((IMAGE_FILTER, lambda node: (
            image_props_filter.judge_image(node, wanted))))
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
