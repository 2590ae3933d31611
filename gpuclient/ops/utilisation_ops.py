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

"""``--utilisation`` of ``gpu server list`` and ``gpu usage list``: the
cloud's Prometheus read with a constant number of PromQL queries (five
for a server list, two for a usage list), joined by
``gpuclient.rules.utilisation``.

Where Prometheus is, first found wins: ``--prometheus``, the cloud's
clouds.yaml entry (``prometheus_endpoint``), ``$GPUCLIENT_PROMETHEUS_URL``.
Credentials and TLS: ``prometheus_token``, or ``prometheus_username`` and
``prometheus_password``; ``prometheus_cacert`` (else the cloud's own
verification), ``prometheus_insecure``, ``prometheus_cert`` and
``prometheus_key`` (a client certificate), in clouds.yaml or as
``$GPUCLIENT_PROMETHEUS_<NAME>``. ``prometheus_metrics`` and
``prometheus_labels`` (clouds.yaml dicts) rename the DCGM metrics and
labels. ``prometheus_selector`` (or ``--prometheus-selector``, or
``$GPUCLIENT_PROMETHEUS_SELECTOR``) names the labels of this cloud's
series: every query sent carries its matchers (``rules.promql``).

Every answer is read by ``ask``: one of a wrong shape leaves its query
unanswered with the reason (the figures it gives are ``unknown``, not
judged), the others are used. The series are joined to this cloud's
hosts by ``rules.utilisation.join_answers``.
"""

from __future__ import annotations

import collections.abc
import functools
import logging
import os
import time
import typing

from osc_lib import exceptions

from gpuclient.cloud import errors
from gpuclient.cloud import http
from gpuclient.cloud import prometheus as prometheus_mod
from gpuclient.i18n import _
from gpuclient.rules import host_names
from gpuclient.rules import numa_metrics
from gpuclient.rules import pools as pools_mod
from gpuclient.rules import promql
from gpuclient.rules import utilisation
from gpuclient.rules.scheduler import host_manager

if typing.TYPE_CHECKING:
    import datetime

    from gpuclient.cloud.client import GpuClient
    from gpuclient.rules import model

    # what a PARSE of ``ask`` makes of one answer
    _Parsed = typing.TypeVar('_Parsed')
    # {provider uuid: {consumer: {class: amount}}} (server_ops)
    _Allocations: typing.TypeAlias = dict[str, dict[str, dict[str, int]]]

LOG = logging.getLogger(__name__)
URL_ENV = 'GPUCLIENT_PROMETHEUS_URL'
ENV_PREFIX = 'GPUCLIENT_PROMETHEUS_'
CONFIG_PREFIX = 'prometheus_'
SELECTOR = 'selector'


def _setting(config: collections.abc.Mapping[str, typing.Any],
             name: str) -> typing.Any:
    value = config.get(CONFIG_PREFIX + name)
    if value in (None, ''):
        value = os.environ.get(ENV_PREFIX + name.upper())
    return value if value not in (None, '') else None


def _true(value: object) -> bool:
    return str(value).strip().lower() in ('1', 'true', 'yes', 'on')


def tls_verify(
        config: collections.abc.Mapping[str, typing.Any]) -> bool | str:
    """requests' verify for Prometheus: prometheus_insecure or
    prometheus_cacert when set, else the cloud's own (its cacert, or
    False when clouds.yaml says verify: false or insecure: true, as
    openstacksdk reads them)."""
    insecure = _setting(config, 'insecure')
    if insecure is not None:
        if _true(insecure):
            return False
    if _setting(config, 'cacert'):
        return _setting(config, 'cacert')
    if insecure is not None:
        return True
    if config.get('verify') is False or _true(config.get('insecure')):
        return False
    return config.get('cacert') or True


def endpoint(client: GpuClient, url: str | None = None) -> str | None:
    """The Prometheus URL: URL (--prometheus), the cloud's
    prometheus_endpoint or $GPUCLIENT_PROMETHEUS_URL; None when none is
    configured."""
    return (url or client.cloud_config.get('prometheus_endpoint')
            or os.environ.get(URL_ENV) or None)


def selector(client: GpuClient) -> tuple[tuple[str, str, str], ...]:
    """The label matchers of this cloud's series: --prometheus-selector
    (``use_selector``), else prometheus_selector in the cloud's
    clouds.yaml entry, else $GPUCLIENT_PROMETHEUS_SELECTOR; () for none.
    A bad one is a CommandError that names where it was read."""
    given = client.cloud_config.get(CONFIG_PREFIX + SELECTOR)
    if given not in (None, '', [], {}):
        return promql.parse(given, _('prometheus_selector (clouds.yaml)'))
    return promql.parse(os.environ.get(ENV_PREFIX + SELECTOR.upper()),
                        '$' + ENV_PREFIX + SELECTOR.upper())


def use_selector(
    client: GpuClient, given: collections.abc.Iterable[str] | None,
    url: str | None = None,
) -> tuple[tuple[str, str, str], ...]:
    """--prometheus-selector GIVEN (its texts; none: the cloud's own) for
    the command's queries, checked now: a bad selector, given or (with a
    Prometheus, URL or configured) in clouds.yaml, is refused before any
    request."""
    if given:
        promql.parse(list(given), '--prometheus-selector')
        # as OSC's own options do, the option wins over clouds.yaml
        client.cloud_config = dict(client.cloud_config, **{
            CONFIG_PREFIX + SELECTOR: list(given)})
    if given or endpoint(client, url):
        return selector(client)
    return ()


def ask(
    prometheus: prometheus_mod.Prometheus,
    queries: collections.abc.Mapping[str, str],
    parse: collections.abc.Callable[[dict[str, typing.Any]], _Parsed],
    time: float | None = None,
) -> tuple[dict[str, _Parsed], dict[str, str]]:
    """({name: answer}, {name: why it is not judged}) of QUERIES ({name:
    PromQL}), each answer read by PARSE (``utilisation.parse_vector`` or
    ``parse_matrix``). An answer of a wrong shape leaves its query out,
    with the reason naming its metric; a Prometheus that fails raises
    (``errors.APIError``)."""
    answers, unread = {}, {}
    for name, text in queries.items():
        try:
            answers[name] = parse(prometheus.query(text, time=time))
        except utilisation.BadAnswer as exc:
            unread[name] = _('Prometheus answered %(what)s for '
                             '%(metric)s') % {
                'what': exc.what,
                'metric': ', '.join(promql.metric_names(text)) or text}
    return answers, unread


def cloud_hosts(cloud: model.Cloud | None) -> dict[str, set[str]]:
    """{Nova host: its names} of every compute host of CLOUD (a snapshot;
    None: none), what series are joined to."""
    if cloud is None:
        return {}
    return host_names.names_by_host(
        cloud.hypervisors, [s.get('host') for s in cloud.services or ()])


def join(
    answers: dict[str, list[typing.Any]], cloud: model.Cloud | None,
    labels: dict[str, tuple[str, ...]],
) -> tuple[dict[str, list[typing.Any]],
           list[tuple[str, str | None, str]]]:
    """``utilisation.join_answers`` over CLOUD's hosts; each problem is
    logged as a warning (the devices it names are ``unknown``)."""
    answers, problems = utilisation.join_answers(answers, cloud_hosts(cloud),
                                                 labels)
    for _host, _pci, why in problems:
        LOG.warning(_('Not judged: %s.'), why)
    return answers, problems


def connect(
    client: GpuClient, url: str | None = None, option: str = '--utilisation',
) -> tuple[prometheus_mod.Prometheus, dict[str, str],
           dict[str, tuple[str, ...]]]:
    """(Prometheus client, metric names, label names) of the cloud;
    OPTION: what asked for it, named when none is configured."""
    config = client.cloud_config
    url = endpoint(client, url)
    if not url:
        raise exceptions.CommandError(_(
            '%(option)s reads the cloud\'s Prometheus, and none is '
            'configured: give --prometheus <url>, prometheus_endpoint in '
            'the cloud\'s clouds.yaml entry, or $%(env)s.')
            % {'option': option, 'env': URL_ENV})
    cert = _setting(config, 'cert')
    if cert and _setting(config, 'key'):
        cert = (cert, _setting(config, 'key'))
    timeout = config.get('api_timeout')
    matchers = selector(client)
    prometheus = prometheus_mod.Prometheus(
        url, verify=tls_verify(config), token=_setting(config, 'token'),
        username=_setting(config, 'username'),
        password=_setting(config, 'password'), cert=cert,
        max_bytes=http.max_answer_bytes(config),
        timeout=float(timeout) if timeout not in (None, '') else None,
        rewrite=functools.partial(promql.with_matchers, matchers=matchers)
        if matchers else None)
    metrics, labels = utilisation.names(config.get('prometheus_metrics'),
                                        config.get('prometheus_labels'))
    return prometheus, metrics, labels


def providers_of(
    cloud: model.Cloud | None, allocations: _Allocations | None,
    rows: collections.abc.Iterable[dict[str, typing.Any]],
) -> dict[str, dict[str, typing.Any]]:
    """{provider uuid: name, root_name, host, mode, consumers} of the GPU
    providers with allocations (rules.utilisation's PROVIDERS)."""
    if cloud is None:
        return {}
    assert cloud.placement is not None  # noqa: S101 - read with Placement
    assert cloud.gpu_classes is not None  # noqa: S101 - read with it
    snap = cloud.placement
    root_host = host_names.root_hosts(cloud.hypervisors)
    by_host = pools_mod.pools_by_host(cloud.pools)
    modes = {}
    for row in rows:
        for uuid in row['providers']:
            modes[uuid] = row['mode']
    found = {}
    for uuid, consumers in (allocations or {}).items():
        provider = snap.providers.get(uuid) or {'name': uuid, 'root': uuid}
        root = snap.providers.get(provider['root']) or provider
        host = root_host.get(provider['root'])
        mode = modes.get(uuid)
        if mode is None:
            pool_modes = {cloud.pools[p].get('mode')
                          # a provider without a host finds no pool
                          for p in by_host.get(host, ()) if p in cloud.pools}  # type: ignore[arg-type]
            mode = pool_modes.pop() if len(pool_modes) == 1 else None
        found[uuid] = {
            'name': provider['name'], 'root_name': root['name'],
            'host': host, 'mode': mode,
            'consumers': sorted(c for c, resources in consumers.items()
                                if any(rc in cloud.gpu_classes and n
                                       for rc, n in resources.items())),
        }
    return found


def _unread(unread: dict[str, str], strict: bool) -> None:
    """Say why the UNREAD queries ({name: why}) are not judged: a
    CommandError when STRICT, else a warning each."""
    if unread and strict:
        raise exceptions.CommandError('; '.join(
            unread[name] for name in sorted(unread)))
    for name in sorted(unread):
        LOG.warning(_('Not judged: %s.'), unread[name])


def server_rows(
    client: GpuClient,
    rows: list[dict[str, typing.Any]],
    cloud: model.Cloud | None,
    allocations: _Allocations | None,
    window: int,
    idle_below: float,
    url: str | None = None,
    now: datetime.datetime | None = None,
    strict: bool = False,
) -> list[dict[str, typing.Any]]:
    """``gpu server list --utilisation``: one row per server and device
    (rules.utilisation.server_utilisation), from the five queries of
    rules.utilisation.server_queries at NOW (a datetime; None: the
    Prometheus server's now). An answer of a wrong shape: its figures
    ``unknown`` and a warning, or with STRICT a CommandError."""
    prometheus, metrics, labels = connect(client, url)
    answers, unread = ask(prometheus, utilisation.server_queries(
        window, metrics), utilisation.parse_vector,
        time=utilisation.epoch(now))
    _unread(unread, strict)
    answers, _problems = join(answers, cloud, labels)
    devices = utilisation.device_series(answers, labels)
    ends = utilisation.epoch(now) if now is not None else time.time()
    return utilisation.server_utilisation(
        rows, providers_of(cloud, allocations, rows), devices, idle_below,
        window_start=ends - window)


def usage_split(
    client: GpuClient,
    items: list[dict[str, typing.Any]],
    start: datetime.datetime,
    end: datetime.datetime,
    cloud: model.Cloud | None = None,
    allocations: _Allocations | None = None,
    idle_below: float = utilisation.DEFAULT_IDLE_BELOW,
    url: str | None = None,
) -> dict[str, tuple[float, float]]:
    """{server id: (idle, used) fractions} of the usage ITEMS over
    [START, END) from the two queries of rules.utilisation.usage_queries
    (buckets of the peak utilisation, evaluated at END)."""
    prometheus, metrics, labels = connect(client, url)
    period = int((end - start).total_seconds())
    step = utilisation.bucket_step(period)
    answers, unread = ask(prometheus, utilisation.usage_queries(
        period, step, metrics), utilisation.parse_matrix,
        time=utilisation.epoch(end))
    _unread(unread, False)
    answers, _problems = join(answers, cloud, labels)
    devices = utilisation.bucket_series(answers, labels)
    return utilisation.usage_split(
        items, providers_of(cloud, allocations, []), devices, step,
        idle_below)


def add_numa_nodes(
    client: GpuClient,
    facts: dict[str, dict[str, typing.Any]],
    hypervisors: collections.abc.Iterable[model.Hypervisor] | None,
    url: str | None = None,
) -> dict[str, dict[str, typing.Any]]:
    """FACTS ({Nova host: facts}) with each host's NUMA nodes as
    node_exporter shows them in the cloud's Prometheus
    (host_manager.METRICS_FACT), when one is configured (URL, else as
    endpoint finds it): one query per metric (rules.numa_metrics). A
    Prometheus that fails is a warning: the hosts are judged by the other
    sources."""
    if not endpoint(client, url):
        return facts
    names: dict[str, list[str | None]] = {}
    for hv in hypervisors or ():
        host = host_names.nova_host(hv)
        if host:
            names.setdefault(host, []).append(hv.get('hypervisor_hostname'))
    prometheus, _metrics, labels = connect(client, url)
    try:
        answers, unread = ask(prometheus, numa_metrics.queries(
            client.cloud_config.get('prometheus_metrics')),
            utilisation.parse_vector)
    except errors.APIError as exc:
        LOG.warning(_('NUMA nodes not read from Prometheus: %s'), exc)
        return facts
    if unread:
        LOG.warning(_('NUMA nodes not read from Prometheus: %s'),
                    '; '.join(unread[n] for n in sorted(unread)))
        return facts
    nodes = numa_metrics.host_nodes(answers, names, labels)
    return {host: dict(told, **({host_manager.METRICS_FACT: nodes[host]}
                                if host in nodes else {}))
            for host, told in (facts or {}).items()}
