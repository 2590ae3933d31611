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

"""Pure: the scheduler's entry point (``nova/scheduler/manager.py``).

Nova's manager takes one request spec through the pipeline: the
settings it runs with, the Placement request, the filters
(``host_manager.get_filtered_hosts``), the fit
(``consume_from_request``). Here the settings are decided once, at the
top of a command (``decide_settings``), and every floor below takes them
as given; ``select(cloud, spec)`` is the one pass of a request (a
``request_spec.RequestSpec``, with those settings) over the hosts of the
cloud as read (a ``model.Cloud``) that candidates, capacity, the drain,
apply's fit check and ``gpu check`` ask.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Collection
from collections.abc import Iterable
from collections.abc import Mapping
import dataclasses
import typing

from gpuclient.rules import reservations
from gpuclient.rules.scheduler import conf
from gpuclient.rules.scheduler import filters
from gpuclient.rules.scheduler import host_manager
from gpuclient.rules.scheduler import request_spec

if typing.TYPE_CHECKING:
    from gpuclient.rules import model


@dataclasses.dataclass(frozen=True)
class Selection:
    """One host's answer to one request."""
    host: str
    # the reasons of the filters that remove it (empty: it passes)
    reasons: tuple[dict[str, typing.Any], ...] = ()
    # NUMATopologyFilter's verdict, (status, text): for a host the filter
    # removes (FAIL, the source that shows its topology); for one that
    # passes, as the fit or the filter judged it; None when the request
    # asks no NUMA topology or nobody asked
    numa: tuple[str, str | None] | None = None
    # how many of the request fit (0 on a host the filters remove); None
    # when not counted (Placement's answer decides) or when NUMA could
    # not be judged
    count: int | None = None

    @property
    def passes(self) -> bool:
        return not self.reasons


def decide_settings(settings: dict[str, typing.Any] | None,
                    blazar: bool = False) -> dict[str, typing.Any]:
    """The scheduler settings a command runs with: SETTINGS as read
    (nova.conf, options), else Nova's defaults; where Blazar runs
    (BLAZAR), with BlazarFilter added when the filters are the defaults
    (``reservations.with_filter``: Blazar's install guide adds it)."""
    settings = settings or conf.load_settings()
    if blazar:
        settings = reservations.with_filter(settings)
    return settings


def select(
        cloud: model.Cloud, spec: request_spec.RequestSpec,
        hosts: Collection[str] | None = None,
        states: filters.HostStates | None = None,
        count: Callable[[str], tuple[int | None,
                                     tuple[str, str | None] | None]]
        | None = None,
        numa_hosts: Iterable[str] | None = None) -> dict[str, Selection]:
    """{host: ``Selection``} of one request, SPEC (a ``RequestSpec``:
    ``filters.spec``), on HOSTS of CLOUD (default: every host of CLOUD,
    sorted): the filters SPEC's settings enable, then, on the hosts they
    pass, the fit.

    STATES: the hosts' states (``filters.HostStates`` of CLOUD, with
    their host facts), built once by a caller that asks several
    requests; else built here, without facts. COUNT(host) -> (count,
    NUMA verdict or None) counts what fits on a host the filters pass
    (capacity: the tree's fit bounded by the NUMA fit); without it
    nothing is counted (candidates: Placement's answer decides) and
    NUMATopologyFilter's verdict is judged for the hosts in NUMA_HOSTS
    (default: every host that passes) where the filter is enabled and
    the request asks a NUMA topology. A host of HOSTS is always in the
    answer; one of NUMA_HOSTS only, when judged.
    """
    if hosts is None:
        hosts = sorted(cloud.host_roots())
    if states is None:
        states = filters.HostStates(cloud)
    ctx = filters.Context(spec, states)
    enabled_filters = spec.settings['enabled_filters']
    removed = filters.run(hosts, ctx, enabled_filters)
    out: dict[str, Selection] = {}
    for host in hosts:
        reasons = tuple(removed.get(host, ()))
        if reasons:
            numa = next(((host_manager.FAIL, r['source']) for r in reasons
                         if r['filter'] == filters.NUMA_FILTER), None)
            out[host] = Selection(host, reasons, numa,
                                  None if count is None else 0)
        elif count is not None:
            fit, numa = count(host)
            out[host] = Selection(host, (), numa, fit)
        else:
            out[host] = Selection(host)
    if count is None:
        # a host of NUMA_HOSTS the filters did not see (a provider
        # Placement offered that no hypervisor maps to a host) is judged
        # as one they pass
        judge = [h for h in (hosts if numa_hosts is None else numa_hosts)
                 if h not in out or out[h].passes]
        for host, verdict in filters.numa(judge, ctx,
                                          enabled_filters).items():
            out[host] = dataclasses.replace(out.get(host) or Selection(host),
                                            numa=verdict)
    return out


def removed(selected: Mapping[str, Selection]
            ) -> dict[str, list[dict[str, typing.Any]]]:
    """{host: [reason dicts]} of the hosts SELECTED (``select``'s
    answer) that the filters remove."""
    return {host: list(s.reasons) for host, s in selected.items()
            if s.reasons}
