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

"""Pure: the host fact series the cloud's Prometheus holds, joined to this
cloud's compute hosts.

``queries`` are what is asked: one instant query per series family
(``series.FAMILIES``), the same number whatever the number of hosts; the
ops layer adds the cloud's label selector to each (``rules.promql``), so
another cloud's series in the same Prometheus are never asked for.
``join`` takes the answers ({family: [(labels, value)]}) and gives each
compute host its ``HostFacts`` (``series.from_samples``), by the host name
the collector wrote (``Hostname``, or ``hostname``) matched to the host's
service host or hypervisor hostname as every other series gpuclient reads
is (``host_names.series_hosts``: exact names first, then a short name
that is no other host's).

What is trusted, and what is not:

* a series with a guest label (``GUEST_LABELS``, as a guest's exporter
  gets them from Prometheus' OpenStack discovery) is left out: a tenant's
  VM may publish ``gpuclient_host_*`` series under a host's name, and a
  tenant does not speak for a host;
* a host whose series come from two collectors (two ``instance`` labels,
  or two host names that are both names of it: two runs, two textfiles)
  is not judged: its ``HostFacts`` carries no fact, only ``exporters``
  (each as ``<instance> (<host name>)``, so ``conflicting`` is true), and
  ``Joined.problems`` says why; one of them is never picked;
* a host name that is no host of this cloud joins nothing (another
  cloud's host, where the selector does not tell the clouds apart), and
  one that could be several hosts joins none of them
  (``Joined.problems``).
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping
import typing

from gpuclient.i18n import _
from gpuclient.rules import host_names
from gpuclient.rules.host_facts import series
from gpuclient.rules.host_facts import shapes

# the labels of a series a guest's exporter serves: the server's UUID as
# Prometheus' OpenStack discovery labels a VM (instance_id, as
# rules/utilisation reads guest-side series), and a vGPU's VM
# (DCGM_FI_DEV_VGPU_VM_ID, as rules/devices/health reads it, or vm_id)
GUEST_LABELS = ('instance_id', 'vm_id', 'DCGM_FI_DEV_VGPU_VM_ID')

Labels = Mapping[str, str]


class Joined(typing.NamedTuple):
    """What ``join`` made of the answers.

    ``facts``: {compute host: HostFacts} of the hosts that have series (a
    host not judged for two collectors is there, ``conflicting``, without
    facts). ``problems``: {compute host: why its series are not judged}.
    ``guests``: how many series were left out for a guest label.
    """

    facts: dict[str, shapes.HostFacts]
    problems: dict[str, str]
    guests: int


def queries() -> dict[str, str]:
    """{family name: PromQL} of the host fact series: one instant query of
    each family's series, whatever the number of hosts."""
    return {family.name: family.name for family in series.FAMILIES}


def _first(labels: Labels, names: Iterable[str]) -> str | None:
    for name in names:
        if labels.get(name):
            return labels[name]
    return None


def _conflict(host: str, sources: set[tuple[str, str]]) -> str | None:
    """Why HOST's series are not judged, from SOURCES {(host name label,
    instance label)}, or None: one collector."""
    labels = {label for label, _instance in sources}
    instances = {instance for _label, instance in sources if instance}
    if len(labels) < 2 and len(instances) < 2:
        return None
    return _(
        'two collectors say they are host %(host)s (%(which)s): its facts '
        'are not judged. Run one gpuclient-host-facts on the host (one '
        'textfile, one node_exporter), or name this cloud\'s series with '
        'prometheus_selector in clouds.yaml or --prometheus-selector') % {
            'host': host, 'which': ', '.join(sorted(
                _('%(instance)s as %(label)s') % {
                    'instance': instance or '?', 'label': label}
                for label, instance in sources))}


def join(answers: Mapping[str, Iterable[tuple[Labels, float]]],
         hosts: Mapping[str, Iterable[str]],
         hostname_labels: Iterable[str] = series.HOSTNAME_LABELS,
         guest_labels: Iterable[str] = GUEST_LABELS) -> Joined:
    """ANSWERS ({family name: [(labels, value)]}, as ``queries`` asks
    them) joined to HOSTS ({compute host: its names},
    ``host_names.names_by_host``): see the module's docstring. A series
    names its host by the first of HOSTNAME_LABELS it has; one of
    GUEST_LABELS leaves it out."""
    hostname_labels = tuple(hostname_labels)
    guest_labels = tuple(guest_labels)
    kept: list[tuple[str, Labels, float, str]] = []
    guests = 0
    for name, found in answers.items():
        if name not in series.BY_NAME:
            continue
        for labels, value in found:
            if _first(labels, guest_labels):
                guests += 1
                continue
            label = _first(labels, hostname_labels)
            if label:
                kept.append((name, labels, value, label))
    joined, problems = host_names.series_hosts({k[3] for k in kept}, hosts)
    groups: dict[str, list[tuple[str, Labels, float]]] = {}
    sources: dict[str, set[tuple[str, str]]] = {}
    for name, labels, value, label in kept:
        host = joined.get(label)
        if host is None:
            continue
        groups.setdefault(host, []).append((name, labels, value))
        sources.setdefault(host, set()).add(
            (label, labels.get(series.INSTANCE_LABEL, '')))
    facts: dict[str, shapes.HostFacts] = {}
    for host, samples in groups.items():
        why = _conflict(host, sources[host])
        if why is not None:
            problems[host] = why
            facts[host] = shapes.HostFacts(
                min(label for label, _i in sources[host]), exporters={
                    '%s (%s)' % (instance or '?', label)
                    for label, instance in sources[host]})
            continue
        read = series.from_samples(samples, hostname_labels)
        # one host name: from_samples gives one host
        facts[host] = next(iter(read.values()))
    return Joined(facts, problems, guests)
