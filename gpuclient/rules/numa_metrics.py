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

"""Pure: a host's NUMA nodes from node_exporter's metrics in Prometheus.

No I/O here. node_exporter's ``meminfo_numa`` collector publishes what
the kernel writes in ``/sys/devices/system/node/node<N>/meminfo``, one
series per NUMA node (label ``node``): ``node_memory_numa_MemTotal`` (in
bytes: the memory libvirt reports for the cell) and
``node_memory_numa_HugePages_Total`` (the cell's huge pages of the default
size, which the collector does not name). The ops layer runs ``queries``
(one per metric, whatever the number of hosts) and gives ``host_nodes``
the answers.

A series names its host as the DCGM metrics do (``rules.utilisation``):
the ``Hostname`` or ``hostname`` label (setting ``prometheus_labels``)
when a deployment's relabelling adds one, else the host part of
``instance`` (``gpu-1.example.org:9100``, the target Prometheus scrapes),
matched against the Nova service host and the hypervisor hostname as
``host_names.series_hosts`` matches them: exact names before short ones,
a short one only where it is not ambiguous.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence

from gpuclient.rules import host_names
from gpuclient.rules import utilisation

# node_exporter metric names (setting: prometheus_metrics)
METRICS = {
    'numa_memory': 'node_memory_numa_MemTotal',           # bytes
    'numa_huge_pages': 'node_memory_numa_HugePages_Total',  # pages
}
NODE_LABEL = 'node'
INSTANCE_LABEL = 'instance'
MIB = 1024 * 1024


def queries(metrics: Mapping[str, str] | None = None) -> dict[str, str]:
    """{name: PromQL}: each metric's latest value, every host at once."""
    metrics = dict(METRICS, **{k: v for k, v in (metrics or {}).items()
                               if k in METRICS})
    return {name: metrics[name] for name in METRICS}


def series_host(
        labels: Mapping[str, str],
        label_names: Mapping[str, Sequence[str]] | None = None) -> str | None:
    """The host a series is of: its hostname label, else the host part of
    ``instance`` (``host:port``, ``[v6]:port``); None without either."""
    label_names = label_names or utilisation.LABELS
    for name in label_names['hostname']:
        if labels.get(name):
            return labels[name]
    instance = str(labels.get(INSTANCE_LABEL) or '')
    if instance.startswith('['):
        return instance[1:].partition(']')[0] or None
    return instance.rpartition(':')[0] or instance or None


def host_nodes(
        answers: Mapping[
            str, Iterable[tuple[utilisation.Labels, float]] | None],
        hosts: Mapping[str, Iterable[str | None]],
        label_names: Mapping[str, Sequence[str]] | None = None
) -> dict[str, list[dict[str, int | None]]]:
    """{Nova host: [{'node', 'memory_mb', 'huge_pages'}] by node} for the
    HOSTS ({Nova host: its names: service host, hypervisor hostnames})
    whose series ANSWERS ({name: [(labels, value)]}) hold; a host with a
    node missing MemTotal, or with series from two exporters, is left out
    (not known, never half known)."""
    joined, _problems = host_names.series_hosts(
        # None is taken out of the set
        {series_host(labels, label_names) for results in answers.values()  # type: ignore[arg-type]
         for labels, _value in results or ()} - {None},
        {host: {n for n in names if n} for host, names in hosts.items()})
    # {host: {node: {field: value}}}, {host: the exporters}
    found: dict[str, dict[int, dict[str, int]]]
    sources: dict[str, set[str | None]]
    found, sources = {}, {}
    for name, field in (('numa_memory', 'memory_mb'),
                        ('numa_huge_pages', 'huge_pages')):
        for labels, value in answers.get(name) or ():
            node = str(labels.get(NODE_LABEL, ''))
            # a series without a host finds none
            host = joined.get(series_host(labels, label_names))  # type: ignore[arg-type]
            # a node number in ASCII digits ('²' is a digit, not a number)
            if not (node.isascii() and node.isdigit()) or value is None \
                    or host is None:
                continue
            sources.setdefault(host, set()).add(labels.get(INSTANCE_LABEL))
            if field == 'memory_mb':
                value = value / MIB
            found.setdefault(host, {}).setdefault(int(node), {})[field] = (
                int(value))
    nodes = {}
    for host, by_node in found.items():
        if len(sources[host]) > 1 or any(
                'memory_mb' not in n for n in by_node.values()):
            continue
        nodes[host] = [dict({'huge_pages': None}, node=node, **by_node[node])
                       for node in sorted(by_node)]
    return nodes
