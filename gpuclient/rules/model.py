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

"""Pure: the cloud as read, one model with declared fields.

``Cloud`` is what one read of the cloud saw (``gpuclient.ops.snapshot.read``
fills it, in a constant number of requests): its fields are declared
below, each item in the shape the client layer gives it (the
``TypedDict`` declarations, as openstacksdk declares its resources'
bodies). Read commands ask their questions of it, the planners take it
as it is (``pool_plan``), and the state after a plan is a copy of it
with the plan's steps applied (``document_plan.state_of``,
``document_plan.simulate``).

The zone rule (Nova's: one zone per host, no move with instances) is a
question of the model too (``zone_check``).
"""

from collections.abc import Callable
from collections.abc import Collection
from collections.abc import Iterable
from collections.abc import Mapping
import dataclasses
import typing

from osc_lib import exceptions

from gpuclient.i18n import _
from gpuclient.rules import baremetal
from gpuclient.rules import host_names
from gpuclient.rules import hosts as hosts_mod
from gpuclient.rules import one_time_use
from gpuclient.rules import pools as pools_mod
from gpuclient.rules import reservations
from gpuclient.rules.host_facts import shapes as facts_shapes

# the zone Nova gives a host in no aggregate with one
DEFAULT_ZONE = 'nova'


# -- the items, as the client layer reads them --------------------------------

class Aggregate(typing.TypedDict):
    """A host aggregate (``pools.aggregate_dict``)."""

    name: str
    id: int
    uuid: str
    hosts: list[str]
    metadata: dict[str, str]
    availability_zone: str | None


class Service(typing.TypedDict):
    """A nova-compute service (``Compute.compute_services``)."""

    host: str
    zone: str | None
    status: str
    state: str
    id: str
    disabled_reason: str | None


class Hypervisor(typing.TypedDict, total=False):
    """A hypervisor as Nova answers at compute API 2.53 (``id`` is its
    root provider's uuid; ``service`` names its host)."""

    id: str
    hypervisor_hostname: str
    service: dict[str, typing.Any]
    state: str
    status: str


class Provider(typing.TypedDict):
    """A Placement resource provider (``Placement.providers``)."""

    uuid: str
    name: str
    parent: str | None
    root: str


class Summary(typing.TypedDict, total=False):
    """What Placement says of one provider (``Placement.summaries``):
    {class: {capacity, used[, min_unit, max_unit, step_size]}} and its
    traits (None: not read)."""

    resources: dict[str, dict[str, int]]
    traits: list[str] | None


class Flavor(typing.TypedDict, total=False):
    """A Nova flavor with its extra specs (compute API 2.61)."""

    id: str
    name: str
    vcpus: int
    ram: int
    disk: int
    extra_specs: dict[str, str]
    description: str | None


class Image(typing.TypedDict, total=False):
    """A Glance image: its ID, name and properties at the top level."""

    id: str
    name: str


class RegisteredLimit(typing.TypedDict):
    """Keystone's registered limit of one resource (its default)."""

    id: str
    limit: int
    description: str | None


class Limit(typing.TypedDict):
    """Keystone's limit of one resource for one project."""

    id: str
    project_id: str
    resource_name: str
    resource_limit: int
    description: str | None


# -- the cloud as read --------------------------------------------------------

_REQUIRED = object()


def _field(doc: str, default: typing.Any = _REQUIRED,
           factory: Callable[[], typing.Any] | None = None) -> typing.Any:
    """A declared field of the model (Cloud, Placement): what it holds
    (DOC), its default."""
    if factory is not None:
        return dataclasses.field(default_factory=factory,
                                 metadata={'doc': doc})
    if default is _REQUIRED:
        return dataclasses.field(metadata={'doc': doc})
    return dataclasses.field(default=default, metadata={'doc': doc})


@dataclasses.dataclass(eq=False)
class Placement:
    """The Placement part of the cloud as read (``Cloud.placement``): the
    providers of the GPU-relevant trees and the capacity and usage known
    for them, filled by ``ops.snapshot.placement_snapshot`` from
    allocation-candidate answers (``add_candidates``) and per-provider
    reads (``add_details``); ``listed`` starts it from the provider list.
    """

    providers: dict[str, dict[str, typing.Any]] = _field(
        '{uuid: Provider}: the providers listed, and those an answer '
        'named since', factory=dict)
    summaries: dict[str, dict[str, typing.Any]] = _field(
        '{uuid: Summary}: what Placement said of the providers of the '
        'trees read (covered)', factory=dict)
    covered: set[str] = _field(
        'the roots whose whole tree some answer gave', factory=set)
    queried: list[tuple[str, int]] = _field(
        '[(resource class, number of candidates)] of the '
        'allocation-candidate queries', factory=list)
    slow_roots: set[str] = _field(
        'the roots read provider by provider', factory=set)
    totals: dict[str, dict[str, int]] = _field(
        '{uuid: {class: inventory total}} where read (add_totals)',
        factory=dict)
    # {root: [provider uuids]}, indexed when first asked
    _by_root: dict[str, list[str]] | None = dataclasses.field(
        init=False, default=None, repr=False)

    @classmethod
    def listed(cls, providers: Iterable[Mapping[str, typing.Any]]
               ) -> 'Placement':
        """The Placement of PROVIDERS as ``GET /resource_providers``
        lists them (uuid, name, parent_provider_uuid,
        root_provider_uuid), nothing read of their trees yet."""
        found = cls()
        for rp in providers:
            found._add_provider(
                rp['uuid'],
                rp.get('name'),
                rp.get('parent_provider_uuid'),
                rp.get('root_provider_uuid'),
            )
        return found

    def _add_provider(self, uuid: str, name: str | None, parent: str | None,
                      root: str | None) -> None:
        self._by_root = None
        self.providers[uuid] = {
            'uuid': uuid,
            'name': name or uuid,
            'parent': parent,
            'root': root or uuid,
        }

    def roots(self) -> set[str]:
        return {rp['root'] for rp in self.providers.values()}

    def missing_roots(self, wanted: Iterable[str] | None = None) -> set[str]:
        """Roots (of those wanted) whose trees nothing has covered yet."""
        roots = self.roots()
        if wanted is not None:
            roots &= set(wanted)
        return roots - self.covered

    def providers_in_trees(self, roots: Iterable[str]) -> list[str]:
        if self._by_root is None:
            # indexed once: asked per host, a scan would be quadratic
            self._by_root = {}
            for uuid, rp in self.providers.items():
                self._by_root.setdefault(rp['root'], []).append(uuid)
        found: list[str] = []
        for root in set(roots):
            found.extend(self._by_root.get(root, ()))
        return sorted(found)

    def add_candidates(self, resource_class: str,
                       answer: Mapping[str, typing.Any] | None) -> None:
        """Take in a GET /allocation_candidates answer (>= 1.29)."""
        answer = answer or {}
        self.queried.append(
            (resource_class, len(answer.get('allocation_requests') or []))
        )
        for uuid, summary in (answer.get('provider_summaries') or {}).items():
            if uuid not in self.providers:
                # Created after we listed providers: keep what we know.
                self._add_provider(
                    uuid,
                    None,
                    summary.get('parent_provider_uuid'),
                    summary.get('root_provider_uuid'),
                )
            self.summaries[uuid] = {
                'resources': dict(summary.get('resources') or {}),
                'traits': summary.get('traits'),
            }
            self.covered.add(self.providers[uuid]['root'])

    def add_details(self, details: Mapping[str, dict[str, typing.Any]]
                    ) -> None:
        """Take in per-provider summaries read on the slow path."""
        for uuid, summary in details.items():
            self.summaries[uuid] = summary
            root = self.providers[uuid]['root']
            self.covered.add(root)
            self.slow_roots.add(root)

    def add_totals(
            self,
            inventories: Mapping[str, Mapping[str, Mapping[str, typing.Any]]
                                 | None]) -> None:
        """Take in inventories ({uuid: {class: inventory}}, as GET
        .../inventories answers them): the total of each class, which
        summaries lack (their capacity is Placement's, total less what is
        reserved, times the allocation ratio)."""
        for uuid, found in inventories.items():
            self.totals[uuid] = {rc: int(inv.get('total') or 0)
                                 for rc, inv in (found or {}).items()}

    def unread_roots(self, roots: Iterable[str]) -> set[str]:
        """Those of ROOTS whose tree this read did not cover, or covered
        without the traits of some provider (``Summary.traits`` None)."""
        return {root for root in roots
                if root not in self.covered or any(
                    self.summaries.get(uuid, {}).get('traits') is None
                    for uuid in self.providers_in_trees([root]))}

    def add_trees(self, other: 'Placement', roots: Iterable[str]) -> None:
        """Take in OTHER's read of the trees of ROOTS (a later read of
        them): its providers, summaries and totals of those trees replace
        what this one had; every other tree stays as read."""
        roots = set(roots)
        for uuid in self.providers_in_trees(roots):
            del self.providers[uuid]
            self.summaries.pop(uuid, None)
            self.totals.pop(uuid, None)
        for uuid in other.providers_in_trees(roots):
            self.providers[uuid] = other.providers[uuid]
            if uuid in other.summaries:
                self.summaries[uuid] = other.summaries[uuid]
            if uuid in other.totals:
                self.totals[uuid] = other.totals[uuid]
        self._by_root = None
        self.covered = (self.covered - roots) | (other.covered & roots)
        self.slow_roots = ((self.slow_roots - roots)
                           | (other.slow_roots & roots))
        self.queried += other.queried

    def free(self, uuid: str, resource_class: str) -> int:
        res = self.summaries.get(uuid, {}).get('resources', {})
        item = res.get(resource_class)
        if not item:
            return 0
        return item['capacity'] - item['used']

    def truncation_suspects(self) -> list[tuple[str, int, int]]:
        """Queried classes whose answer left out a tree that could serve it.

        A tree read on the slow path that has a free unit of a class we
        asked allocation candidates for should have been in that answer:
        Placement's ``max_allocation_candidates`` cut it short.
        """
        suspects = []
        for rc, count in self.queried:
            trees = set()
            for root in self.slow_roots:
                for uuid in self.providers_in_trees([root]):
                    if self.free(uuid, rc) >= 1:
                        trees.add(root)
            if trees:
                suspects.append((rc, count, len(trees)))
        return suspects

    def notes(self) -> list[str]:
        """Warnings for the operator about how complete the data is."""
        notes = []
        for rc, count, trees in self.truncation_suspects():
            notes.append(
                _(
                    'Placement answered resources=%(rc)s:1 with %(count)d '
                    'allocation candidates but left out %(trees)d provider '
                    'tree(s) with a free %(rc)s: its '
                    '[placement]max_allocation_candidates setting probably '
                    'truncated the answer. Those trees were read provider '
                    'by provider, so the figures are complete.'
                )
                % {'rc': rc, 'count': count, 'trees': trees}
            )
        return notes


@dataclasses.dataclass(eq=False)
class Cloud:
    """What one read of the cloud saw (plain data, pure questions).

    Fields a command did not ask for are None (not read), never empty;
    each field's ``doc`` (its metadata) says what it holds.
    """

    aggregates: list[dict[str, typing.Any]] = _field(
        '[Aggregate]: every host aggregate (SDK resources or dicts, given)')
    hypervisors: list[Hypervisor] | None = _field(
        '[Hypervisor]: every hypervisor', None)
    services: list[Service] | None = _field(
        '[Service]: every nova-compute service', None)
    placement: Placement | None = _field(
        'Placement: the providers ([Provider]) of the GPU-relevant '
        'trees with their Summary', None)
    flavors: list[dict[str, typing.Any]] | None = _field(
        '[Flavor]: every flavor', None)
    gpu_classes: set[str] | None = _field(
        'the GPU resource classes the placement snapshot was read for '
        '(set with it)', None)
    known_classes: set[str] | None = _field(
        'the resource classes Placement knows (read with placement by '
        'snapshot.read)', None)
    images: list[dict[str, typing.Any]] | None = _field(
        '[Image]: every image the caller sees', None)
    pool_members: dict[str, set[str] | None] | None = _field(
        "{pool name: provider uuids in its Placement aggregate, or None "
        "when it could not be read} (with_pool_members: gpu check)", None)
    projects: dict[str, str | None] | None = _field(
        '{project id: name} from Keystone', None)
    access: dict[str, list[str]] | None = _field(
        '{flavor id: [project ids]} of the private GPU flavors', None)
    registered: dict[str, dict[str, typing.Any]] | None = _field(
        "{resource name: RegisteredLimit}: Keystone's registered limits "
        "(gpu apply, and gpu check's quota-gpu-limits)", None)
    limits: list[dict[str, typing.Any]] | None = _field(
        "[Limit]: Keystone's project limits (of every project the caller "
        "sees, or of the one project asked about)", None)
    existing_traits: set[str] | None = _field(
        'of the custom traits asked about, those Placement has', None)
    servers: list[dict[str, typing.Any]] | None = _field(
        "every project's servers (compute API 2.47: host and embedded "
        "flavor), or those of the project asked about (gpu server list, "
        "gpu usage list)", None)
    compute_max_version: tuple[int, int] | None = _field(
        "(2, N): Nova's maximum compute microversion, which tells its "
        "release, as gpu check judges PCI quotas (quota-pci-not-enforced)",
        None)
    blazar: bool | None = _field(
        "whether the token's catalog lists Blazar (service type "
        "reservation): its held hosts (held_hosts) and reservations "
        "count (snapshot.read reads it always, from the catalog)", None)
    blazar_hosts: list[dict[str, typing.Any]] | None = _field(
        "[host record]: Blazar's GET /v1/os-hosts, the hosts enrolled in "
        "it (None: not read; why in unread['blazar_hosts'])", None)
    utilisation: dict[str, typing.Any] | None = _field(
        "{'rows', 'window', 'idle_below'}: the servers' GPU utilisation "
        "(Prometheus), as gpu check judges it (gpu-idle)", None)
    device_health: dict[str, typing.Any] | None = _field(
        "{'rows', 'series', 'hosts', 'window', 'now'}: the GPU devices "
        "with their DCGM health, the DCGM series, the hosts' names and "
        "when Prometheus was asked, as gpu check judges them "
        "(gpu-unhealthy, gpu-application-xid, gpu-row-remap, "
        "gpu-vgpu-licence, gpu-driver-drift, gpu-missing)", None)
    changed_servers: list[dict[str, typing.Any]] | None = _field(
        "the servers changed since a time (Nova's changes-since: deleted "
        "ones and refused boots included, with their embedded flavor), of "
        "every project or of the one asked about (gpu usage list, gpu "
        "profile plan --from-usage)", None)
    server_usages: list[dict[str, typing.Any]] | None = _field(
        "[server usage]: Nova's usage of each server over a period "
        "(os-simple-tenant-usage at compute API 2.40: hours, started_at, "
        "ended_at), of every project or of the one asked about", None)
    allocations: dict[str, dict[str, dict[str, int]]] | None = _field(
        "{provider uuid: {consumer: {class: amount}}}: Placement's "
        "allocations of the GPU providers with usage (of the trees asked "
        "about, when some were)", None)
    migrations: list[dict[str, typing.Any]] | None = _field(
        "[migration]: Nova's migrations (compute API 2.59) of the hosts "
        "or of the status asked about (gpu host drain)", None)
    resource_providers: list[dict[str, typing.Any]] | None = _field(
        "[provider]: every resource provider as Placement lists it "
        "(uuid, name, parent_provider_uuid, root_provider_uuid), for a "
        "command that asks Placement its own question (gpu candidate "
        "list)", None)
    project_usages: dict[str, int] | None = _field(
        "{resource class: amount}: what the project asked about holds in "
        "Placement (its usages: what Nova's unified limits count)", None)
    compute_limits: dict[str, typing.Any] | None = _field(
        "Nova's absolute limits and usage of the project asked about, as "
        "the compute API names them (maxTotalInstances, "
        "totalInstancesUsed, ...)", None)
    host_facts: dict[str, facts_shapes.HostFacts] | None = _field(
        "{compute host: HostFacts}: what gpuclient-host-facts collected on "
        "each host, as the cloud's Prometheus holds it (host-side series "
        "only, this cloud's selector), for gpu host facts and gpu check's "
        "host findings; a host with no series is absent", None)
    host_facts_read_at: float | None = _field(
        "when host_facts was read (Unix time, the reader's clock, as "
        "device_health's 'now'): gpu check's host-facts-stale judges each "
        "host's collected time against it (None: not known, the age of "
        "the facts not judged)", None)
    unread: dict[str, str] = _field(
        '{field: why it could not be read} (aggregates: Nova lists them '
        'to admins only; registered, utilisation, device_health, '
        'host_facts: the service refused or failed)',
        factory=dict)
    unconfigured: dict[str, str] = _field(
        '{field: why it was not read: no source is configured} '
        '(utilisation, device_health, host_facts: no Prometheus)',
        factory=dict)
    # derived from the aggregates
    pools: dict[str, dict[str, typing.Any]] = dataclasses.field(
        init=False, repr=False, metadata={
            'doc': '{name: pool} (pools.scan), derived from the aggregates'})
    problems: list[tuple[str, str, str]] = dataclasses.field(
        init=False, repr=False, metadata={
            'doc': '[(aggregate, pool, message)] of damaged pools, derived'})
    _node_roots: set[str] | None = dataclasses.field(
        init=False, default=None, repr=False)

    def __post_init__(self) -> None:
        self.aggregates = [pools_mod.aggregate_dict(a)
                           for a in self.aggregates]
        # None: not read yet (a pool write reads them when it needs them)
        if self.hypervisors is not None:
            self.hypervisors = list(self.hypervisors)
        if self.services is not None:
            self.services = list(self.services)
        if self.gpu_classes is not None:
            self.gpu_classes = set(self.gpu_classes)
        self.pools, self.problems = pools_mod.scan(self.aggregates)

    def host_roots(self) -> dict[str, set[str]]:
        """{compute host: set of root provider uuids} (Ironic: several)."""
        return host_names.host_roots(self.hypervisors)

    def aggregate(self, name: str) -> dict[str, typing.Any] | None:
        """The aggregate named NAME, or None."""
        for agg in self.aggregates:
            if agg['name'] == name:
                return agg
        return None

    def limit(self, project: str | None,
              name: str) -> dict[str, typing.Any] | None:
        """Keystone's limit NAME of PROJECT (None: the registered limit),
        as read (a dict with 'description'), or None."""
        if project is None:
            return (self.registered or {}).get(name)
        for item in self.limits or ():
            if (item['project_id'], item['resource_name']) == (project,
                                                               name):
                return item
        return None

    def resolve_hosts(self, names: Iterable[str],
                      members: Iterable[str] | None = None
                      ) -> tuple[list[str], list[str]]:
        """(compute hosts meant by NAMES, notes), from this snapshot alone.

        ``resolve_hosts`` with this snapshot's providers (see there).
        """
        def providers() -> list[dict[str, typing.Any]] | None:
            if self.placement is None:
                return None
            return [{'uuid': uuid, 'name': rp['name'],
                     'root_provider_uuid': rp['root']}
                    for uuid, rp in self.placement.providers.items()]

        # asked once the services and hypervisors are read
        return resolve_hosts(
            names, self.services, self.hypervisors,  # type: ignore[arg-type]
            providers, members)

    def resolve_fact_hosts(
            self, facts: Mapping[str | None, Mapping[str, typing.Any]]
    ) -> tuple[dict[str | None, dict[str, typing.Any]], list[str]]:
        """(FACTS with each host part resolved as ``--host`` is, notes).

        FACTS: ``--host-fact`` as ``maintenance.parse_facts`` reads them
        ({host or None: facts}). A host part may be any name
        ``resolve_hosts`` takes (the hypervisor hostname, an FQDN such as
        ``gpu-pt-1.gpu.test``, a provider name); one that names no host,
        or several, is a CommandError naming it and the compute hosts,
        never a fact silently dropped. Two names of one host giving one
        key two values are refused too.
        """
        found: dict[str | None, dict[str, typing.Any]]
        notes: list[str]
        found, notes = {}, []
        for name, told in facts.items():
            if name is None:
                found.setdefault(None, {}).update(told)
                continue
            try:
                hosts, said = self.resolve_hosts([name])
            except exceptions.CommandError as exc:
                raise exceptions.CommandError(
                    _('--host-fact %(name)s:...: %(error)s') % {
                        'name': name, 'error': exc}) from None
            notes += said
            mine = found.setdefault(hosts[0], {})
            for key, value in told.items():
                if key in mine and mine[key] != value:
                    raise exceptions.CommandError(
                        _('--host-fact gives %(key)s of host %(host)s twice '
                          '(%(first)s, %(second)s; %(name)s is a name of '
                          'it): give it once.') % {
                              'key': key, 'host': hosts[0],
                              'first': mine[key], 'second': value,
                              'name': name})
                mine[key] = value
        return found, notes

    def root_aggregates(self, host: str) -> set[str]:
        """Aggregate uuids of a host: what Nova mirrors into Placement."""
        return {a['uuid'] for a in self.aggregates
                if a.get('uuid') and host in a['hosts']}

    def tree(self, root: str, aggregates: Iterable[str] = ()
             ) -> dict[str, dict[str, typing.Any]]:
        """One provider tree as ``gpuclient.rules.scheduler.fit`` takes it.

        Inventories come from the provider summaries, which carry
        capacity and usage but not min_unit, max_unit and step_size:
        those are known only for providers read one by one, and are
        otherwise taken as Nova's drivers report them for devices (1, the
        capacity, 1). ``aggregates`` are the root's aggregate uuids.
        """
        snap: Placement
        # asked of a cloud read with Placement
        snap = self.placement  # type: ignore[assignment]
        tree = {}
        for uuid in snap.providers_in_trees([root]):
            provider = snap.providers[uuid]
            summary = snap.summaries.get(uuid) or {}
            inventory = {}
            for rc, item in (summary.get('resources') or {}).items():
                capacity = item.get('capacity', 0)
                inventory[rc] = {
                    'free': max(capacity - item.get('used', 0), 0),
                    'min_unit': item.get('min_unit', 1),
                    'max_unit': item.get('max_unit') or max(capacity, 1),
                    'step_size': item.get('step_size', 1),
                }
            parent = provider['parent'] if uuid != root else None
            tree[uuid] = {
                'parent': parent,
                'name': provider['name'],
                'traits': set(summary.get('traits') or ()),
                'aggregates': set(aggregates) if uuid == root else set(),
                'inventory': inventory,
            }
        return tree

    def held_hosts(self) -> dict[str, list[str]]:
        """{host: [why]} of the hosts Blazar holds ({} without Blazar
        in the catalog): ``reservations.held_hosts`` over Blazar's host
        list (``blazar_hosts``), the aggregates and the classes of each
        host's provider trees."""
        # ops.snapshot.read reads it always (the catalog, no request)
        assert self.blazar is not None  # noqa: S101 - read
        if not self.blazar:
            return {}
        classes: dict[str, set[str]] = {}
        if self.placement is not None:
            for host, roots in self.host_roots().items():
                for uuid in self.placement.providers_in_trees(roots):
                    summary = self.placement.summaries.get(uuid) or {}
                    classes.setdefault(host, set()).update(
                        summary.get('resources') or {})
        enrolled = None
        if self.blazar_hosts is not None:
            enrolled = reservations.enrolled_hosts(self.blazar_hosts,
                                                   self.hypervisors)
        return reservations.held_hosts(
            self.aggregates, classes, enrolled=enrolled,
            unread=self.unread.get('blazar_hosts'))

    def root_classes(self, hosts: Iterable[str]) -> set[str] | None:
        """The classes the root providers of HOSTS offer (what Blazar
        copies of a host when it enrols it); None when Placement's summary
        of none of them was read."""
        found: set[str] = set()
        seen = False
        host_roots = self.host_roots()
        for host in hosts:
            for root in host_roots.get(host, ()):
                # asked of a cloud read with Placement
                summary = (
                    self.placement.summaries  # type: ignore[union-attr]
                    .get(root))
                if summary is not None:
                    seen = True
                    found.update(summary.get('resources') or {})
        return found if seen else None

    def node_roots(self) -> set[str]:
        """Root provider uuids of Ironic nodes (``baremetal.node_roots``)."""
        if self._node_roots is None:
            # asked per tree: computed once
            self._node_roots = baremetal.node_roots(self.hypervisors)
        return self._node_roots

    def gpu_providers(self, root: str, resource_class: str
                      ) -> list[tuple[str, str, int, int, int, int]]:
        """[(uuid, name, total, used, free, awaiting release)] of a class
        in one tree.

        A bare-metal node counts 1, whatever the ironic driver reserved;
        so does a one-time-use device awaiting release
        (``one_time_use``), counted apart as awaiting release (1),
        neither used nor free.
        """
        snap: Placement
        # asked of a cloud read with Placement
        snap = self.placement  # type: ignore[assignment]
        ironic = root in self.node_roots()
        found = []
        for uuid in snap.providers_in_trees([root]):
            resources = (snap.summaries.get(uuid) or {}).get(
                'resources') or {}
            item = resources.get(resource_class)
            if item:
                traits = snap.summaries[uuid].get('traits')
                node = baremetal.is_node_item(resource_class, item, ironic)
                total, used, free = hosts_mod.device_figures(
                    item, node=node, traits=traits)
                awaiting = int(not node and one_time_use.awaiting_release(
                    item, traits))
                found.append((uuid, snap.providers[uuid]['name'], total,
                              used, free, awaiting))
        return found


def resolve_hosts(
        names: Iterable[str], services: Iterable[Mapping[str, typing.Any]],
        hypervisors: Collection[Mapping[str, typing.Any]],
        read_providers: Callable[[], list[dict[str, typing.Any]] | None],
        members: Iterable[str] | None = None
) -> tuple[list[str], list[str]]:
    """(compute hosts meant by NAMES, in order and each once; notes).

    The one resolution of host names, for reads and writes alike: a name
    may be the compute service host, or the hypervisor hostname,
    hypervisor id, resource provider name or uuid (root or child) of
    exactly one host (``gpuclient.rules.host_names``); the providers
    (READ_PROVIDERS(), dicts with uuid, name, root_provider_uuid) are
    asked for only when services and hypervisors do not explain a name.
    The notes say which host a name that is not the host's own resolved
    to. An ambiguous name is a CommandError, and so is an unknown one
    unless MEMBERS (a pool's hosts, hosts even when Nova no longer lists
    their service) is given: then it is returned as it is, for the caller
    to refuse as not in the pool.
    """
    names = list(names)
    # None is discarded below
    known: set[str] = (
        {svc.get('host') for svc in services}  # type: ignore[assignment]
        | set(host_names.host_roots(hypervisors)) | set(members or ()))
    known.discard(None)
    result = host_names.resolve(names, known, hypervisors)
    if result.unknown:
        providers = read_providers()
        if providers is not None:
            result = host_names.resolve(names, known, hypervisors,
                                        providers)
    result.check(unknown=members is None)
    return (result.hosts(keep_unknown=members is not None),
            result.notes())


# -- Nova's zone rules --------------------------------------------------------

def zone_check(cloud: Cloud, zone: str | None, host: str,
               own_aggregate: str | None = None) -> str | None:
    """The zone HOST is in now when putting it in ZONE moves it there
    (for the caller to refuse if the host has instances: Nova refuses to
    move a host with instances), else None.

    CLOUD: the ``Cloud`` as read, with its services. Nova's other rule,
    one zone per host, is a CommandError: HOST is in another aggregate
    (not OWN_AGGREGATE) with another zone.
    """
    for agg in cloud.aggregates:
        if agg['name'] == own_aggregate or host not in (agg['hosts'] or []):
            continue
        other = agg['availability_zone']
        if zone and other and other != zone:
            raise exceptions.CommandError(
                _('Host %(host)s is in availability zone %(other)s '
                  '(aggregate %(agg)s) and a host can be in one zone '
                  'only: use --zone %(other)s or take it out of '
                  '%(agg)s first.')
                % {'host': host, 'other': other, 'agg': agg['name']})
    # CLOUD is read with its services
    by_host = {svc['host']: svc
               for svc in cloud.services}  # type: ignore[union-attr]
    current = (by_host.get(host) or {}).get('zone') or DEFAULT_ZONE
    return current if zone and current != zone else None


def zone_move_refused(host: str, current: str,
                      zone: str | None) -> exceptions.CommandError:
    """The CommandError of a host with instances that would move zone."""
    return exceptions.CommandError(
        _('Host %(host)s has instances and is in zone '
          '%(current)s: Nova refuses to move a host with '
          'instances to zone %(zone)s. Move or delete them '
          'first, or use --zone %(current)s.')
        % {'host': host, 'current': current, 'zone': zone})
