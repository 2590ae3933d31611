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

"""Pure: idle GPUs, from the NVIDIA DCGM exporter's metrics in Prometheus.

No I/O here. The ops layer runs the PromQL of ``server_queries`` (``gpu
server list --utilisation``) or ``usage_queries`` (``gpu usage list
--utilisation``), a constant number whatever the number of servers, and
gives this module the answers, the server rows of ``rules.usage`` and the
Placement device providers they hold.

The join:

* **guest-side** series (an exporter inside the server: passthrough, bare
  metal) carry the server's UUID in a label (``instance_id``, which
  Prometheus's ``openstack_sd_configs`` relabelling of
  ``__meta_openstack_instance_id`` gives). Each series is one GPU as the
  guest sees it; the server's rows are the guest's GPUs.
* **host-side** series (the exporter on a vGPU or MIG compute host) carry
  the host (``Hostname``, newer exporters ``hostname``) and the card's PCI
  address (``pci_bus_id``, ``00000000:84:00.0``). Nova names each device
  provider after that address (``gpu-vgpu-1_pci_0000_84_00_0``, or
  ``<host>_0000:41:00.0`` for PCI in Placement): both are normalised to
  ``0000:84:00.0``, and the host to the Nova host it names
  (``join_answers``: its service host or hypervisor hostname exactly,
  else its first label, ``gpu-1`` for ``gpu-1.example.org``, only where
  that is not ambiguous; a host and address two exporters report is
  ``unknown``).
* a card that several servers hold (time-sliced vGPU) reports one figure
  for the card: the rows say ``shared``, never one server's figure.
* a MIG card reports one series per GPU instance (``GPU_I_ID``), with
  ``DCGM_FI_PROF_GR_ENGINE_ACTIVE`` (a 0..1 ratio; ``GPU_UTIL`` reads 0
  there). Placement does not say which instance a server's slice (VF) is:
  when the card has one instance and one holder, it is that one; otherwise
  the servers on the card are ``idle`` when every instance is (each
  instance is a hardware partition, so none of them works), else
  ``shared``. A VF provider is tied to its card by the card's domain and
  bus when its own address is not the card's.

No metric for a device is ``unknown``: never guessed idle.
"""

from __future__ import annotations

import calendar
from collections.abc import Container
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
import datetime
import re
import typing

from osc_lib import exceptions

from gpuclient.i18n import _
from gpuclient.rules import host_names
from gpuclient.rules import pools as pools_mod
from gpuclient.rules import usage

# a series' labels, as Prometheus answers them: {name: value}
Labels = dict[str, str]
# a subquery's points of one series: [(time, value)]
Points = list[tuple[float, float]]
# what one series answers (a value, or a subquery's Points)
_V = typing.TypeVar('_V')

# states of a device row
BUSY = 'busy'
IDLE = 'idle'
SHARED = 'shared'
UNKNOWN = 'unknown'
STATES = (BUSY, IDLE, SHARED, UNKNOWN)

DEFAULT_WINDOW = '1h'
DEFAULT_IDLE_BELOW = 5.0

# DCGM exporter metric names (setting: prometheus_metrics)
METRICS = {
    'util': 'DCGM_FI_DEV_GPU_UTIL',            # percent
    'mig_util': 'DCGM_FI_PROF_GR_ENGINE_ACTIVE',  # ratio 0..1
    'fb_used': 'DCGM_FI_DEV_FB_USED',          # MiB
}

# label names, the first one a series has wins (setting: prometheus_labels)
LABELS = {
    'hostname': ('Hostname', 'hostname'),
    'pci_bus_id': ('pci_bus_id',),
    'uuid': ('UUID',),
    'gpu_instance': ('GPU_I_ID',),
    'gpu_profile': ('GPU_I_PROFILE',),
    'instance_id': ('instance_id',),
    # the exporter a series is scraped from (Prometheus' target label)
    'exporter': ('instance',),
}

_DURATION_RE = re.compile(r'(\d+)([smhdw])')
_UNITS = {'s': 1, 'm': 60, 'h': 3600, 'd': 86400, 'w': 604800}
# a window longer than a year is no question a Prometheus keeps data for
MAX_WINDOW = 366 * 86400
# usage list: at most this many buckets per series over the period
MAX_BUCKETS = 2000
MIN_STEP = 60

_PCI_LABEL_RE = re.compile(
    r'^(?:([0-9a-fA-F]{1,8}):)?([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2})'
    r'\.([0-7])$')


# -- settings -----------------------------------------------------------------

def window_seconds(text: str | None, option: str = '--window') -> int:
    """A duration such as 1h, 30m, 7d or 1h30m in seconds (a whole
    positive number of seconds up to a year), else a CommandError."""
    text = str(text or '').strip().lower()
    parts = _DURATION_RE.findall(text)
    if not text or ''.join(n + u for n, u in parts) != text:
        raise exceptions.CommandError(
            _('%(option)s %(text)r is not a duration: give a number and a '
              'unit (s, m, h, d or w), e.g. 30m, 1h, 7d or 1h30m.')
            % {'option': option, 'text': text})
    seconds = sum(int(n) * _UNITS[u] for n, u in parts)
    if not 0 < seconds <= MAX_WINDOW:
        raise exceptions.CommandError(
            _('%(option)s %(text)s: give a duration above 0 and at most '
              '366d.') % {'option': option, 'text': text})
    return seconds


def duration_text(seconds: float) -> str:
    """SECONDS as window_seconds reads it: 3600 -> '1h', 5400 -> '1h30m'."""
    seconds = int(seconds)
    parts = []
    for unit in ('w', 'd', 'h', 'm', 's'):
        count, seconds = divmod(seconds, _UNITS[unit])
        if count:
            parts.append('%d%s' % (count, unit))
    return ''.join(parts) or '0s'


def idle_threshold(value: float | str, option: str = '--idle-below') -> float:
    """A percentage in [0, 100], else a CommandError."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = None
    if number is None or not 0 <= number <= 100:
        raise exceptions.CommandError(
            _('%(option)s %(value)s: give a GPU utilisation percentage '
              'between 0 and 100, e.g. 5.') % {'option': option,
                                               'value': value})
    return number


def names(
        metrics: Mapping[str, object] | None = None,
        labels: Mapping[str, str | Sequence[str]] | None = None
) -> tuple[dict[str, str], dict[str, tuple[str, ...]]]:
    """(metrics, labels) with the cloud's overrides: METRICS and LABELS,
    where a label override may be one name or a list of names."""
    merged = dict(METRICS)
    merged.update({k: str(v) for k, v in (metrics or {}).items()
                   if k in METRICS and v})
    found = dict(LABELS)
    for key, value in (labels or {}).items():
        if key in LABELS and value:
            found[key] = ((value,) if isinstance(value, str)
                          else tuple(str(v) for v in value))
    return merged, found


# -- PromQL ------------------------------------------------------------------

def server_queries(window: int,
                   metrics: Mapping[str, str] | None = None) -> dict[str, str]:
    """{name: PromQL} of ``gpu server list --utilisation``: mean and peak
    of GPU_UTIL and of the MIG engine activity over WINDOW seconds, and
    the last framebuffer figure in it. Five queries, whatever the number
    of servers or devices."""
    metrics = metrics or METRICS
    span = '[%ds]' % window
    return {
        'util_mean': 'avg_over_time(%s%s)' % (metrics['util'], span),
        'util_peak': 'max_over_time(%s%s)' % (metrics['util'], span),
        'mig_mean': 'avg_over_time(%s%s)' % (metrics['mig_util'], span),
        'mig_peak': 'max_over_time(%s%s)' % (metrics['mig_util'], span),
        'fb_used': 'last_over_time(%s%s)' % (metrics['fb_used'], span),
    }


def bucket_step(period: float) -> int:
    """Seconds per bucket for a period of PERIOD seconds: at least
    MIN_STEP, at most MAX_BUCKETS buckets."""
    return max(MIN_STEP, -(-int(period) // MAX_BUCKETS))


def usage_queries(period: int, step: int,
                  metrics: Mapping[str, str] | None = None) -> dict[str, str]:
    """{name: PromQL} of ``gpu usage list --utilisation``: the peak of
    each STEP-second bucket over the PERIOD seconds that end at the
    query's time (a subquery: one answer holds every bucket of every
    device). Two queries, whatever the number of servers."""
    metrics = metrics or METRICS
    return {
        name: 'max_over_time(%s[%ds])[%ds:%ds]' % (
            metrics[key], step, period, step)
        for name, key in (('util_peak', 'util'), ('mig_peak', 'mig_util'))
    }


# -- answers -----------------------------------------------------------------

def _number(text):
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value if value == value and abs(value) != float('inf') else None


class BadAnswer(exceptions.CommandError):
    """An answer that is not what the query asks: ``what`` says what came
    instead (the ops layer names the query's metric)."""

    def __init__(self, what: str) -> None:
        super().__init__(_('Prometheus answered %s') % what)
        self.what = what


def _describe(value):
    kind = {dict: _('an object'), list: _('a list'), str: _('a text'),
            bool: _('a boolean'), int: _('a number'), float: _('a number'),
            type(None): _('null')}.get(type(value), type(value).__name__)
    text = repr(value)
    return '%s (%s)' % (kind, text if len(text) <= 60 else
                        text[:57] + '...')


def _result(data, kind):
    """The items of DATA's result, each an object; else BadAnswer."""
    if not isinstance(data, dict):
        raise BadAnswer(
            _('%(got)s where an object with a %(kind)s was expected (is '
              'the URL the Prometheus HTTP API?)')
            % {'got': _describe(data), 'kind': kind})
    if data.get('resultType') != kind:
        got = data.get('resultType')
        raise BadAnswer(
            _('%(got)s where a %(kind)s was expected') % {
                'got': (_('a %s') % got) if isinstance(got, str) else _(
                    'a resultType of %s') % _describe(got), 'kind': kind})
    if not isinstance(data.get('result'), list):
        raise BadAnswer(_('a %(kind)s whose result is %(got)s, not a list')
                        % {'kind': kind,
                           'got': _describe(data.get('result'))})
    for item in data['result']:
        if not isinstance(item, dict):
            raise BadAnswer(_('a result item that is not an object: %s')
                            % _describe(item))
    return data['result']


def _labels(item):
    """The labels of a result ITEM: its ``metric``, an object of texts."""
    metric = item.get('metric', {})
    if not isinstance(metric, dict):
        raise BadAnswer(_('a metric that is not an object: %s')
                        % _describe(metric))
    for name, value in metric.items():
        if not isinstance(value, str):
            raise BadAnswer(_('a label %(name)s whose value is not a text: '
                              '%(value)s') % {'name': name,
                                              'value': _describe(value)})
    return dict(metric)


def _sample(pair):
    """(time, value) of a [time, "value"] PAIR; value None for NaN and
    infinities (no figure); else BadAnswer."""
    if isinstance(pair, (list, tuple)) and len(pair) == 2 and isinstance(
            pair[0], (int, float)) and not isinstance(pair[0], bool) and (
                isinstance(pair[1], str)):
        try:
            float(pair[1])
        except ValueError:
            pass
        else:
            return float(pair[0]), _number(pair[1])
    raise BadAnswer(_('a value that is not a [time, "number"] pair: %s')
                    % _describe(pair))


def parse_vector(data: object) -> list[tuple[Labels, float]]:
    """[(labels, value)] of an instant query's ``data`` (a vector);
    NaN and infinite values are left out (no figure). Anything but a
    vector of objects with a ``metric`` of texts and a [time, "number"]
    ``value`` is a BadAnswer."""
    found = []
    for item in _result(data, 'vector'):
        labels = _labels(item)
        number = _sample(item.get('value'))[1]
        if number is not None:
            found.append((labels, number))
    return found


def parse_matrix(data: object) -> list[tuple[Labels, Points]]:
    """[(labels, [(time, value)])] of a subquery's ``data`` (a matrix);
    a BadAnswer as parse_vector's."""
    found = []
    for item in _result(data, 'matrix'):
        labels = _labels(item)
        values = item.get('values')
        if not isinstance(values, list):
            raise BadAnswer(_('values that are not a list: %s')
                            % _describe(values))
        points = [_sample(pair) for pair in values]
        found.append((labels, sorted((when, number) for when, number
                                     in points if number is not None)))
    return found


def _label(labels, names_):
    for name in names_:
        if labels.get(name) not in (None, ''):
            return str(labels[name])
    return None


def pci_label(text: str | None) -> str | None:
    """A DCGM ``pci_bus_id`` ('00000000:84:00.0') as '0000:84:00.0'."""
    match = _PCI_LABEL_RE.match(str(text or '').strip())
    if not match:
        return None
    domain, bus, device, function = match.groups()
    return '%04x:%02x:%02x.%s' % (int(domain or '0', 16), int(bus, 16),
                                  int(device, 16), function)


def host_keys(*hosts: str | None) -> set[str]:
    """Lower-case names of HOSTS, the keys a device's Nova service host
    and hypervisor hostname are matched by to the series ``join_answers``
    gave a Nova host: exact names only (a short name is joined there,
    only when it is not ambiguous)."""
    return {str(host).lower().rstrip('.') for host in hosts if host}


def join_answers(
        answers: Mapping[str, Iterable[tuple[Labels, _V]]],
        hosts: Mapping[str, Iterable[str]],
        label_names: Mapping[str, Sequence[str]] | None = None,
        current: Container[str] = ()
) -> tuple[dict[str, list[tuple[Labels, _V]]],
           list[tuple[str, str | None, str]]]:
    """(ANSWERS joined to this cloud's hosts, problems).

    ANSWERS: {name: [(labels, value)]}; HOSTS: {Nova host: its names}
    (``host_names.names_by_host``) of every compute host of this cloud.
    A guest-side series (``instance_id``) is kept as it is. A host-side
    series gets the Nova host its hostname label names
    (``host_names.series_hosts``: exact names before short ones) as that
    label; one that names no host of this cloud is left out (another
    cloud's, in a Prometheus several share). When the series of one host
    and PCI address come from two exporters (two GPU UUIDs, or without
    a UUID two ``instance`` labels) which is this cloud's GPU is not
    known: they are all left out, so the device's figures are
    ``unknown``. CURRENT names the answers of instant queries (what the
    exporters serve now, not over a window): where one UUID alone is
    served there now and every other UUID of that address within the
    window came from the same exporter, the card was replaced (an RMA
    swap, a test's stand-in card) and the others' series, another
    card's history, are left out instead.

    PROBLEMS: [(Nova host, PCI address or None, why)] of the hosts and
    devices whose series were left out for a reason the operator can fix
    (a label selector: ``prometheus_selector``).
    """
    label_names = label_names or LABELS
    hostname = label_names['hostname']
    guest = label_names['instance_id']
    raw = {_label(labels, hostname) for results in answers.values()
           for labels, _value in results if not _label(labels, guest)}
    joined, host_problems = host_names.series_hosts(raw - {None}, hosts)
    # sources: {(host, pci): {(uuid, exporter, hostname label)}}; now:
    # {(host, pci): {(uuid, exporter)}} of the CURRENT answers
    found: dict[str, list[tuple[Labels, _V]]]
    sources: dict[tuple[str, str | None],
                  set[tuple[str | None, str | None, str | None]]]
    now: dict[tuple[str, str | None], set[tuple[str | None, str | None]]]
    found, sources, now = {}, {}, {}
    for name, results in answers.items():
        kept = found.setdefault(name, [])
        for labels, value in results:
            if _label(labels, guest):
                kept.append((labels, value))
                continue
            label = _label(labels, hostname)
            host = joined.get(label)
            if host is None:
                continue
            labels = dict({k: v for k, v in labels.items()
                           if k not in hostname}, **{hostname[0]: host})
            pci = pci_label(_label(labels, label_names['pci_bus_id']))
            uuid = _label(labels, label_names['uuid'])
            exporter = _label(labels, label_names['exporter'])
            sources.setdefault((host, pci), set()).add(
                (uuid, exporter, label))
            if name in current:
                now.setdefault((host, pci), set()).add((uuid, exporter))
            kept.append((labels, value))
    two, replaced = {}, {}
    for card, seen in sources.items():
        # a GPU is its UUID; without one, the exporter that serves it
        ids: dict[str | None, set[tuple[str | None, str]]] = {}
        for uuid, exporter, label in seen:
            if uuid or not any(u for u, _e, _l in seen):
                ids.setdefault(uuid or exporter, set()).add(
                    (label, exporter or '?'))
        if not card[1] or len(ids) < 2:
            continue
        served = {uuid for uuid, _e in now.get(card, ()) if uuid}
        if len(served) == 1 and next(iter(served)) in ids:
            exporters = {e for _l, e in ids[next(iter(served))]}
            if all(e in exporters for uuid, seen_by in ids.items()
                   for _l, e in seen_by):
                replaced[card] = served
                continue
        two[card] = ids

    def wanted(labels):
        card = (labels.get(hostname[0]),
                pci_label(_label(labels, label_names['pci_bus_id'])))
        if card in replaced:
            return _label(labels, label_names['uuid']) in replaced[card]
        return card not in two

    if two or replaced:
        found = {name: [(labels, value) for labels, value in results
                        if _label(labels, guest) or wanted(labels)]
                 for name, results in found.items()}
    problems: list[tuple[str, str | None, str]] = [
        (host, None, why) for host, why in host_problems.items()]
    for (host, pci), ids in sorted(two.items()):
        problems.append((host, pci, _(
            'two exporters report host %(host)s and address %(pci)s: '
            '%(which)s; which is this cloud\'s GPU is not known (name '
            'this cloud\'s series with prometheus_selector in clouds.yaml '
            'or --prometheus-selector)') % {
                'host': host, 'pci': pci, 'which': '; '.join(
                    '%s (%s)' % (ident or '?', ', '.join(
                        _('host name %(label)s, instance %(instance)s') % {
                            'label': label, 'instance': instance}
                        for label, instance in sorted(seen)))
                    for ident, seen in sorted(
                        ids.items(), key=lambda i: str(i[0])))}))
    return found, sorted(problems, key=lambda p: (p[0], p[1] or ''))


def series_key(
        labels: Mapping[str, str],
        label_names: Mapping[str, Sequence[str]] | None = None
) -> dict[str, str | None]:
    """What one device series is: dict with host, pci, uuid,
    gpu_instance, profile, instance_id (None when absent)."""
    label_names = label_names or LABELS
    return {
        'host': _label(labels, label_names['hostname']),
        'pci': pci_label(_label(labels, label_names['pci_bus_id'])),
        'uuid': _label(labels, label_names['uuid']),
        'gpu_instance': _label(labels, label_names['gpu_instance']),
        'profile': _label(labels, label_names['gpu_profile']),
        'instance_id': _label(labels, label_names['instance_id']),
    }


def _identity(key):
    return (key['host'], key['pci'], key['uuid'], key['gpu_instance'],
            key['instance_id'])


def _by_device(answers, label_names):
    """[(series_key, {answer name: what it says})] per device, sorted:
    ANSWERS is {name: [(labels, value or points)]}."""
    devices = {}
    for name, results in answers.items():
        for labels, value in results:
            key = series_key(labels, label_names)
            devices.setdefault(_identity(key), (key, {}))[1][name] = value
    return [devices[ident] for ident in sorted(
        devices, key=lambda k: tuple(v or '' for v in k))]


def device_series(
        answers: Mapping[str, Iterable[tuple[Labels, float]]],
        label_names: Mapping[str, Sequence[str]] | None = None
) -> list[dict[str, typing.Any]]:
    """One dict per device (a GPU, or a MIG GPU instance) from the
    parsed answers of ``server_queries`` ({name: [(labels, value)]}):
    its series_key plus mean and peak utilisation (percent, None when
    none), fb_used (MiB) and mig (a GPU instance)."""
    found = []
    for key, figures in _by_device(answers, label_names):
        mig = key['gpu_instance'] is not None
        mean, peak = figures.get('util_mean'), figures.get('util_peak')
        # MIG: GPU_UTIL reads 0, the engine activity (0..1) is the figure
        if mig or (mean is None and peak is None):
            mean, peak = (_percent(figures.get('mig_mean')),
                          _percent(figures.get('mig_peak')))
        found.append(dict(key, mig=mig, mean=mean, peak=peak,
                          fb_used=figures.get('fb_used')))
    return found


def _percent(ratio):
    return None if ratio is None else ratio * 100.0


def classify(peak: float | None,
             idle_below: float = DEFAULT_IDLE_BELOW) -> str:
    """busy, idle (the peak over the window below IDLE_BELOW percent) or
    unknown (no figure)."""
    if peak is None:
        return UNKNOWN
    return IDLE if peak < idle_below else BUSY


# -- the join ---------------------------------------------------------------

class _Index:
    """Device series by server (guest-side) and by host and card."""

    def __init__(self, devices: Iterable[Mapping[str, typing.Any]]) -> None:
        # server uuid -> [device]
        self.guest: dict[str, list[Mapping[str, typing.Any]]] = {}
        # (host key, pci) -> [device]
        self.card: dict[tuple[str, str], list[Mapping[str, typing.Any]]] = {}
        # (host key, domain:bus) -> {pci}
        self.bus: dict[tuple[str, str], set[str]] = {}
        for device in devices:
            if device['instance_id']:
                self.guest.setdefault(device['instance_id'], []).append(
                    device)
            elif device['host'] and device['pci']:
                for host in host_keys(device['host']):
                    self.card.setdefault((host, device['pci']), []).append(
                        device)
                    self.bus.setdefault((host, device['pci'][:7]),
                                        set()).add(device['pci'])

    def card_of(
            self, hosts: Iterable[str], pci: str | None,
            mig: bool) -> tuple[str | None, list[Mapping[str, typing.Any]]]:
        """(card pci, its series) of the device at PCI on HOSTS: the card
        at that address, or for a MIG slice (VF) the one card of its
        domain and bus."""
        if not pci:
            return None, []
        for host in sorted(hosts):
            if (host, pci) in self.card:
                return pci, self.card[(host, pci)]
        if mig:
            for host in sorted(hosts):
                cards = self.bus.get((host, pci[:7]), set())
                if len(cards) == 1:
                    card = next(iter(cards))
                    return card, self.card[(host, card)]
        return None, []


def index_series(devices: Iterable[Mapping[str, typing.Any]]) -> _Index:
    """DEVICES (dicts with a ``series_key``) by server (``guest``: {server
    uuid: [device]}) and by host and card (``card_of(hosts, pci, mig)``)."""
    return _Index(devices)


def _figures(devices):
    """Mean and peak of several series: the highest of each, the last
    framebuffer figures summed; None when one has no figure."""
    if not devices or any(d['peak'] is None for d in devices):
        return None, None, None
    fb = [d['fb_used'] for d in devices if d['fb_used'] is not None]
    return (max(d['mean'] if d['mean'] is not None else d['peak']
                for d in devices),
            max(d['peak'] for d in devices), sum(fb) if fb else None)


def _card_state(devices, holders, idle_below):
    """(state, mean, peak, fb) of one card's series for one holder of
    HOLDERS."""
    mean, peak, fb = _figures(devices)
    if peak is None:
        return UNKNOWN, None, None, None
    mig = any(d['mig'] for d in devices)
    if holders <= 1 and (not mig or len(devices) == 1):
        return classify(peak, idle_below), mean, peak, fb
    if mig and peak < idle_below:
        # every instance of the card idles: so does every slice of it
        return IDLE, mean, peak, fb
    return SHARED, mean, peak, fb


def card_holders(providers: Mapping[str, Mapping[str, typing.Any]],
                 hosts_of: Mapping[str, set[str]],
                 index: _Index | None = None) -> dict[str, int]:
    """{provider uuid: servers on its card}: for a vGPU provider the
    consumers of its allocation; a MIG slice counts every holder of a
    slice of the same card. PROVIDERS: {uuid: dict with name, mode,
    consumers}; HOSTS_OF: {uuid: set of host_keys}."""
    card_of = {}
    for uuid, provider in providers.items():
        hosts = hosts_of.get(uuid, set())
        pci = usage.pci_address(provider.get('name'))
        if provider.get('mode') == pools_mod.MIG and index is not None:
            pci = index.card_of(hosts, pci, True)[0] or pci
        card_of[uuid] = (frozenset(hosts), pci or uuid)
    consumers: dict[tuple[frozenset[str], str], set[str]] = {}
    for uuid, card in card_of.items():
        consumers.setdefault(card, set()).update(
            providers[uuid].get('consumers') or ())
    return {uuid: len(consumers[card]) for uuid, card in card_of.items()}


def _join(providers, devices):
    """(index of DEVICES, {provider: host_keys}, card_holders)."""
    index = _Index(devices)
    hosts_of = {uuid: host_keys(p.get('host'), p.get('root_name'))
                for uuid, p in providers.items()}
    return index, hosts_of, card_holders(providers, hosts_of, index)


def _row(row, device, source, state, mean, peak, fb, shared_by):
    return dict(row, devices=[device] if device else [], device=device,
                source=source, state=state, mean=mean, peak=peak,
                fb_used=fb, shared_by=shared_by)


def _guest_label(device):
    if device['pci']:
        return _('guest %s') % device['pci']
    return _('guest %s') % (device['uuid'] or '?')


def launched_after(row: Mapping[str, typing.Any], start: float | None) -> bool:
    """True when ROW's server was launched after START (epoch seconds):
    a host-side reading of its card over a window that starts before
    then is partly another holder's (or nobody's)."""
    since = row.get('since')
    if start is None or not since:
        return False
    try:
        when = datetime.datetime.strptime(str(since).split('.')[0],
                                          '%Y-%m-%dT%H:%M:%S')
    except ValueError:
        return False
    return epoch(when) > start


def server_utilisation(
        rows: Iterable[Mapping[str, typing.Any]],
        providers: Mapping[str, Mapping[str, typing.Any]],
        devices: Iterable[Mapping[str, typing.Any]],
        idle_below: float = DEFAULT_IDLE_BELOW,
        window_start: float | None = None) -> list[dict[str, typing.Any]]:
    """One row per server and device, with source (host, guest or None),
    mean and peak utilisation (percent), fb_used (MiB), state and
    shared_by (servers on the card).

    WINDOW_START (epoch seconds): a host-side card of a server launched
    after it is ``unknown``: the card's readings in the window include
    time before the server held it, which says nothing of the server.

    ROWS: ``usage.server_rows``; PROVIDERS: {uuid: dict with name,
    root_name (the hypervisor hostname), host (the service host), mode
    and consumers (server uuids with an allocation there)} of the GPU
    providers the rows hold; DEVICES: ``device_series``.
    """
    index, hosts_of, holders = _join(providers, devices)
    found = []
    for row in rows:
        guest = index.guest.get(row['id'], [])
        if guest:
            for device in guest:
                state = classify(device['peak'], idle_below)
                found.append(_row(row, _guest_label(device), 'guest',
                                  state, device['mean'], device['peak'],
                                  device['fb_used'], 1))
            for _missing in range(len(row['providers']) - len(guest)):
                if row['mode'] == pools_mod.BAREMETAL:
                    break  # one node, its GPUs are the guest's
                found.append(_row(row, None, None, UNKNOWN, None, None,
                                  None, 1))
            continue
        if not row['providers']:
            found.append(_row(row, None, None, UNKNOWN, None, None, None,
                              None))
            continue
        for uuid in row['providers']:
            provider = providers.get(uuid) or {'name': uuid}
            label = usage.device_label(provider.get('name'),
                                       provider.get('root_name'),
                                       row['mode'])
            pci = usage.pci_address(provider.get('name'))
            mig = row['mode'] == pools_mod.MIG
            _card, series = index.card_of(hosts_of.get(uuid, set()), pci,
                                          mig)
            shared_by = holders.get(uuid, 1)
            if not series or launched_after(row, window_start):
                found.append(_row(row, label, None, UNKNOWN, None, None,
                                  None, shared_by))
                continue
            state, mean, peak, fb = _card_state(series, shared_by,
                                                idle_below)
            found.append(_row(row, label, 'host', state, mean, peak, fb,
                              shared_by))
    return found


# -- GPU-hours: used and idle ----------------------------------------------

def bucket_series(
        answers: Mapping[str, Iterable[tuple[Labels, Points]]],
        label_names: Mapping[str, Sequence[str]] | None = None
) -> list[dict[str, typing.Any]]:
    """One dict per device from the parsed answers of ``usage_queries``
    ({name: [(labels, [(time, value)])]}): series_key plus mig and
    points [(bucket end, peak percent)]."""
    found = []
    for key, got in _by_device(answers, label_names):
        mig = key['gpu_instance'] is not None
        if mig or 'util_peak' not in got:
            points = [(t, v * 100.0) for t, v in got.get('mig_peak', ())]
        else:
            points = got['util_peak']
        found.append(dict(key, mig=mig, points=points, peak=None,
                          mean=None, fb_used=None))
    return found


def _split(devices, opened, closed, step, idle_below):
    """(idle, used) fractions of [OPENED, CLOSED) (epoch seconds) in
    which DEVICES (one card's series, taken together: idle only when
    all are) were idle and busy; the rest is unknown."""
    span = closed - opened
    if span <= 0 or not devices:
        return 0.0, 0.0
    by_time = [dict(d['points']) for d in devices]
    times = sorted(set().union(*by_time))
    idle = used = 0.0
    for end in times:
        overlap = min(end, closed) - max(end - step, opened)
        if overlap <= 0:
            continue
        values = [points.get(end) for points in by_time]
        if any(v is None for v in values):
            continue
        peak = max(values)
        if peak < idle_below:
            idle += overlap
        elif len(devices) == 1:
            used += overlap
    return idle / span, used / span


def usage_split(
        items: Iterable[Mapping[str, typing.Any]],
        providers: Mapping[str, Mapping[str, typing.Any]],
        devices: Iterable[Mapping[str, typing.Any]], step: float,
        idle_below: float = DEFAULT_IDLE_BELOW
) -> dict[str, tuple[float, float]]:
    """{server id: (idle fraction, used fraction)} of the usage ITEMS
    (``usage.usage_items``, intervals as naive UTC datetimes) from the
    bucket_series DEVICES; a server missing has no figure.

    Guest-side series count per GPU the guest reports (a server that
    reports fewer GPUs than it holds is unknown for the rest). Host-side
    figures apply only to servers that still hold their device (Placement
    keeps no history), never to a card shared by several servers; the
    slices of a MIG card count as idle only when every instance is.
    PROVIDERS: {uuid: dict with name, root_name, host, mode and
    consumers}, as server_utilisation.
    """
    index, hosts_of, holders = _join(providers, devices)
    held: dict[str, list[str]] = {}
    for uuid, provider in sorted(providers.items()):
        for consumer in provider.get('consumers') or ():
            held.setdefault(consumer, []).append(uuid)
    found = {}
    for item in items:
        opened, closed = (epoch(t) for t in item['interval'])
        guest = index.guest.get(item['id'])
        if guest:
            parts = [_split([d], opened, closed, step, idle_below)
                     for d in guest]
            count = max(len(guest), item['gpus'] if item.get(
                'mode') != pools_mod.BAREMETAL else 1)
        else:
            parts = []
            for uuid in held.get(item['id'], ()):
                provider = providers[uuid]
                mig = provider.get('mode') == pools_mod.MIG
                _card, series = index.card_of(
                    hosts_of[uuid], usage.pci_address(provider.get('name')),
                    mig)
                if holders.get(uuid, 1) > 1 and not mig:
                    parts.append((0.0, 0.0))  # time-sliced: the card's
                elif mig and (len(series) > 1 or holders.get(uuid, 1) > 1):
                    parts.append((_split(series, opened, closed, step,
                                         idle_below)[0], 0.0))
                else:
                    parts.append(_split(series, opened, closed, step,
                                        idle_below))
            count = max(len(parts), 1)
        if parts:
            found[item['id']] = (sum(p[0] for p in parts) / count,
                                 sum(p[1] for p in parts) / count)
    return found


@typing.overload
def epoch(when: datetime.datetime) -> float: ...
@typing.overload
def epoch(when: None) -> None: ...
def epoch(when: datetime.datetime | None) -> float | None:
    """A naive UTC datetime as epoch seconds; None for None."""
    if when is None:
        return None
    return float(calendar.timegm(when.timetuple())) + when.microsecond / 1e6


def split_rows(rows: Iterable[Mapping[str, typing.Any]],
               items: Iterable[Mapping[str, typing.Any]],
               split: Mapping[str, tuple[float, float]],
               by: Sequence[str]) -> list[dict[str, typing.Any]]:
    """Add idle_gpu_hours, used_gpu_hours and unknown_gpu_hours to the
    ``usage.usage_rows`` ROWS (grouped by BY) from the per-server SPLIT
    of usage_split."""
    totals: dict[tuple[typing.Any, ...], list[float]] = {}
    for item in items:
        key = tuple(usage.key_value(k, item) for k in by)
        idle, used = split.get(item['id'], (0.0, 0.0))
        total = totals.setdefault(key, [0.0, 0.0])
        total[0] += item['gpu_hours'] * idle
        total[1] += item['gpu_hours'] * used
    found = []
    for row in rows:
        idle, used = totals.get(tuple(row['keys'][k] for k in by),
                                (0.0, 0.0))
        found.append(dict(row, idle_gpu_hours=idle, used_gpu_hours=used,
                          unknown_gpu_hours=max(
                              row['gpu_hours'] - idle - used, 0.0)))
    return found
