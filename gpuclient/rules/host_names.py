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

"""Pure: the compute host an operator means by a name.

Nova's aggregate API takes the compute *service* host (``openstack compute
service list``). Operators often copy a name from ``openstack hypervisor
list`` (the hypervisor hostname, often a FQDN such as
``gpu-pt-1.gpu.test`` for service host ``gpu-pt-1``) or from ``openstack
resource provider list`` (root providers are named after the hypervisor
hostname; child providers after their device). Each of these names one
compute host; this module finds which, with no I/O: the client layer feeds
in the service hosts, the os-hypervisors entries (compute API >= 2.53,
where the hypervisor id is its root provider's uuid and ``service.host``
its compute host) and, when needed, Placement's provider list.

A bare-metal (Ironic) compute host has one hypervisor per node: the node
(hypervisor hostname or id, which is the node's uuid, or its provider's
name or uuid) resolves to the compute host that manages it. Ironic's own
node *names* are not known to Nova or Placement and are not resolved.
"""

import collections
from collections.abc import Collection
from collections.abc import Iterable
from collections.abc import Mapping
import typing

from osc_lib import exceptions

from gpuclient.i18n import _

# How a name matched a host (``Resolved.via``).
SERVICE_HOST = 'service host'
HYPERVISOR_HOSTNAME = 'hypervisor hostname'
HYPERVISOR_ID = 'hypervisor id'
PROVIDER_NAME = 'resource provider name'
PROVIDER_UUID = 'resource provider uuid'

_VIA_TEXT = {
    SERVICE_HOST: _('compute service host'),
    HYPERVISOR_HOSTNAME: _('hypervisor hostname'),
    HYPERVISOR_ID: _('hypervisor id'),
    PROVIDER_NAME: _('resource provider name'),
    PROVIDER_UUID: _('resource provider uuid'),
}


class Resolved(typing.NamedTuple):
    """A name that designates one compute host, and how (VIA)."""

    name: str
    host: str
    via: str


def nova_host(hypervisor: Mapping[str, typing.Any]) -> str | None:
    """The Nova host of a hypervisor (compute API >= 2.53), or None.

    The one map from hypervisors (and so root providers, whose uuid is the
    hypervisor id) to Nova hosts, which every command uses: the compute
    service host, the name aggregates, the scheduler and ``openstack
    compute service list`` use. A hypervisor without one is no host:
    Nova's aggregate API refuses its name and Nova lists none such (it
    skips compute nodes whose service is gone), so its tree is unmapped
    for every command alike, never named by its hypervisor hostname.
    """
    return (hypervisor.get('service') or {}).get('host') or None


def root_hosts(hypervisors: Iterable[Mapping[str, typing.Any]] | None
               ) -> dict[str, str]:
    """{root provider uuid: Nova host} (``nova_host``)."""
    found = {}
    for hv in hypervisors or ():
        host = nova_host(hv)
        if host:
            found[hv['id']] = host
    return found


def host_roots(hypervisors: Iterable[Mapping[str, typing.Any]] | None
               ) -> dict[str, set[str]]:
    """{Nova host: set of root provider uuids} (Ironic: several)."""
    found: dict[str, set[str]] = {}
    for hv in hypervisors or ():
        host = nova_host(hv)
        if host:
            found.setdefault(host, set()).add(hv['id'])
    return found


def index(hosts: Iterable[str],
          hypervisors: Iterable[Mapping[str, typing.Any]],
          providers: Iterable[Mapping[str, typing.Any]] | None = None
          ) -> dict[str, dict[str, str]]:
    """{name: {host: via}} of every name that designates a compute host.

    ``hosts`` are the compute service hosts (the names Nova's aggregate API
    takes); ``hypervisors`` os-hypervisors entries at compute API >= 2.53;
    ``providers`` Placement providers with ``uuid``, ``name`` and
    ``root_provider_uuid`` (None: not read).
    """
    names: dict[str, dict[str, str]] = collections.defaultdict(dict)

    def add(name: str | None, host: str | None, via: str) -> None:
        if name and host:
            names[name].setdefault(host, via)

    host: str | None
    for host in hosts:
        add(host, host, SERVICE_HOST)
    root_host = {}
    for hv in hypervisors:
        host = nova_host(hv)
        if not host:
            continue
        root_host[hv.get('id')] = host
        add(hv.get('hypervisor_hostname'), host, HYPERVISOR_HOSTNAME)
        add(hv.get('id'), host, HYPERVISOR_ID)
    for rp in providers or ():
        host = root_host.get(rp.get('root_provider_uuid') or rp.get('uuid'))
        add(rp.get('name'), host, PROVIDER_NAME)
        add(rp.get('uuid'), host, PROVIDER_UUID)
    return names


class Resolution:
    """What a list of names resolved to.

    ``resolved``: Resolved(name, host, via) per name that designates one
    host; ``unknown``: names that designate none; ``ambiguous``: {name:
    {host: via}} for names that designate several.
    """

    def __init__(self, names: Iterable[str], resolved: list[Resolved],
                 unknown: list[str], ambiguous: dict[str, dict[str, str]],
                 hosts: Iterable[str],
                 hypervisors: Iterable[Mapping[str, typing.Any]]):
        self.names = list(names)
        self.resolved = resolved
        self.unknown = unknown
        self.ambiguous = ambiguous
        self._hosts = sorted(set(hosts))
        self._hypervisors = hypervisors

    def hosts(self, keep_unknown: bool = False) -> list[str]:
        """The compute hosts, in the order the names came, each once.

        Unknown names are left out, or with ``keep_unknown`` kept as they
        are (for a caller with a better message for them).
        """
        found = {r.name: r.host for r in self.resolved}
        return list(dict.fromkeys(
            found.get(name, name) for name in self.names
            if name in found or (keep_unknown and name in self.unknown)))

    def notes(self) -> list[str]:
        """For the operator: names that were not a compute host's own."""
        return [
            _('"%(name)s" is the %(via)s of compute host %(host)s: using '
              '%(host)s.')
            % {'name': r.name, 'via': _VIA_TEXT[r.via], 'host': r.host}
            for r in self.resolved if r.via != SERVICE_HOST]

    def _choices(self) -> str:
        """Compute hosts, with their hypervisor hostname where it differs.

        A host with several hypervisors (Ironic) shows their number only:
        there may be thousands.
        """
        by_host: dict[str, list[str | None]] = collections.defaultdict(list)
        for hv in self._hypervisors:
            if nova_host(hv):
                # a host (the test above), which mypy does not follow
                by_host[nova_host(hv)].append(  # type: ignore[index]
                    hv.get('hypervisor_hostname'))
        choices = []
        for host in self._hosts:
            names = by_host.get(host) or []
            if len(names) == 1 and names[0] and names[0] != host:
                choices.append(_('%(host)s (hypervisor %(hv)s)')
                               % {'host': host, 'hv': names[0]})
            elif len(names) > 1:
                choices.append(_('%(host)s (%(count)d hypervisors)')
                               % {'host': host, 'count': len(names)})
            else:
                choices.append(host)
        return ', '.join(choices) or _('none')

    def check(self, unknown: bool = True) -> None:
        """Raise a CommandError for ambiguous (and unknown) names."""
        if self.ambiguous:
            parts = []
            for name in sorted(self.ambiguous):
                matches = self.ambiguous[name]
                parts.append(
                    _('"%(name)s" is %(matches)s')
                    % {'name': name, 'matches': _(', ').join(
                        _('the %(via)s of %(host)s')
                        % {'via': _VIA_TEXT[matches[host]], 'host': host}
                        for host in sorted(matches))})
            raise exceptions.CommandError(
                _('Ambiguous host name(s): %(parts)s. Give the compute host '
                  'as "openstack compute service list" names it: one of '
                  '%(choices)s.')
                % {'parts': '; '.join(parts), 'choices': self._choices()})
        if unknown and self.unknown:
            raise exceptions.CommandError(
                _('Unknown compute host(s): %(unknown)s. Give a compute host '
                  'as "openstack compute service list" names it, or the '
                  'hypervisor hostname or resource provider name of one. '
                  'Compute hosts: %(choices)s.')
                % {'unknown': ', '.join(self.unknown),
                   'choices': self._choices()})


def resolve(names: Iterable[str], hosts: Collection[str],
            hypervisors: Collection[Mapping[str, typing.Any]],
            providers: Iterable[Mapping[str, typing.Any]] | None = None
            ) -> Resolution:
    """Resolve names to compute hosts; returns a Resolution.

    A name that is a compute host (one of ``hosts``) is that host, even if
    it also is another host's hypervisor hostname: that is the name Nova's
    own API takes, and what worked before keeps working. Otherwise a name
    matching hypervisors or providers of exactly one host resolves to that
    host; several hosts make it ambiguous, none unknown.
    """
    names = list(names)
    table = index(hosts, hypervisors, providers)
    resolved: list[Resolved]
    unknown: list[str]
    ambiguous: dict[str, dict[str, str]]
    resolved, unknown, ambiguous = [], [], {}
    for name in names:
        matches = table.get(name) or {}
        own = [h for h, via in matches.items() if via == SERVICE_HOST]
        if own:
            resolved.append(Resolved(name, own[0], SERVICE_HOST))
        elif len(matches) == 1:
            (host, via), = matches.items()
            resolved.append(Resolved(name, host, via))
        elif matches:
            ambiguous[name] = dict(matches)
        elif name not in unknown:
            unknown.append(name)
    return Resolution(names, resolved, unknown, ambiguous, hosts,
                      hypervisors)


# -- the host a monitoring series names ---------------------------------------

def names_by_host(hypervisors: Iterable[Mapping[str, typing.Any]] | None,
                  hosts: Iterable[str] | None = ()) -> dict[str, set[str]]:
    """{Nova host: its names}: the compute service host and the hypervisor
    hostnames of its hypervisors (compute API >= 2.53), for
    ``series_hosts``. HOSTS: service hosts without a hypervisor."""
    found = {host: {host} for host in hosts or () if host}
    for hv in hypervisors or ():
        host = nova_host(hv)
        if host:
            found.setdefault(host, {host}).add(
                hv.get('hypervisor_hostname') or host)
    return found


def _plain(name: object) -> str:
    return str(name).strip().lower().rstrip('.')


def series_hosts(labels: Iterable[str], hosts: Mapping[str, Iterable[str]]
                 ) -> tuple[dict[str, str], dict[str, str]]:
    """(joined, problems): which compute host each host name of a
    monitoring series (DCGM's ``Hostname``, node_exporter's ``instance``
    host) is. JOINED: {label: Nova host}; PROBLEMS: {Nova host: why a
    label that may be its own joins nothing}. HOSTS: {Nova host: its
    names} (``names_by_host``) of every compute host of this cloud.

    Exact before short, case and a final dot aside:

    * a label that is a host's service host or a hypervisor hostname is
      that host (the service host first, as ``resolve`` takes it);
    * otherwise its first DNS label (``gpu-1`` of ``gpu-1.example.org``)
      joins the one host that has a name with that first label, only
      when no other host has one, the label does not name another domain
      than the host's own FQDNs do (``gpu-1.region-b.example`` is not
      ``gpu-1.region-a.example``), the host has no label of its own
      exactly (then the other is another machine's), and no second label
      shortens to the same host (``gpu-1.a.example`` and
      ``gpu-1.b.example`` for a host known only as ``gpu-1``: which is
      it?).

    A label that could be several hosts, or one of several labels that
    could be one host, joins none; the host's PROBLEMS says why. A label
    that is no host of this cloud joins none without a word: it is
    another cloud's (one Prometheus may serve several).
    """
    # {plain name: {host: is it the host's own name}}
    exact: dict[str, dict[str, bool]]
    short: dict[str, set[str]]
    domains: dict[str, set[str]]
    exact, short, domains = {}, {}, {}
    for host, names in hosts.items():
        for name in set(names) | {host}:
            if not name:
                continue
            plain = _plain(name)
            exact.setdefault(plain, {})[host] = (
                exact.get(plain, {}).get(host) or _plain(host) == plain)
            first, _dot, domain = plain.partition('.')
            short.setdefault(first, set()).add(host)
            if domain:
                domains.setdefault(host, set()).add(domain)
    joined: dict[str, str]
    problems: dict[str, str]
    own: set[str]
    by_short: dict[str, dict[str, list[str]]]
    joined, problems, own, by_short = {}, {}, set(), {}
    for label in sorted(labels, key=str):
        plain = _plain(label)
        matches = exact.get(plain)
        if matches:
            # FIRST, once a first DNS label, is here the hosts whose own
            # name the label is
            first = sorted(  # type: ignore[assignment]
                h for h, is_own in matches.items() if is_own)
            if first or len(matches) == 1:
                joined[label] = (first or sorted(matches))[0]
                own.add(joined[label])
                continue
            for host in matches:
                problems[host] = _(
                    'the series host name %(label)s is a name of each of '
                    '%(hosts)s') % {'label': label,
                                    'hosts': ', '.join(sorted(matches))}
            continue
        first, _dot, domain = plain.partition('.')
        candidates = short.get(first, set())
        if len(candidates) > 1:
            for host in candidates:
                problems.setdefault(host, _(
                    'the series host name %(label)s shortens to %(short)s, '
                    'a name of each of %(hosts)s') % {
                        'label': label, 'short': first,
                        'hosts': ', '.join(sorted(candidates))})
            continue
        if not candidates:
            continue
        host = next(iter(candidates))
        if domain and domain not in domains.get(host, {domain}):
            continue  # the machine of that name in another domain
        by_short.setdefault(host, {}).setdefault(plain, []).append(label)
    for host, found in sorted(by_short.items()):
        if host in own:
            continue
        if len(found) > 1:
            problems[host] = _(
                'the series host names %(labels)s all shorten to its '
                'name, and which of them is %(host)s is not known') % {
                    'labels': ', '.join(sorted(found)), 'host': host}
            continue
        for label in next(iter(found.values())):
            joined[label] = host
    # a host with a label of its own: another name is another machine's
    return joined, {h: why for h, why in problems.items()
                    if h not in set(joined.values())}
