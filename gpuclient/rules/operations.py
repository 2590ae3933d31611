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

"""Pure: every write operation, declared once.

A declaration is a frozen dataclass: its fields are the operation's
arguments, and the class says the rest:

* ``op``: its name, as plans, journals and messages know it
  (``aggregate.create``);
* ``inverses``: the operations a step of it can be undone by (as the step
  builders of ``gpuclient.rules.plan`` pair them; empty: never undone);
* ``effect(world)``: what it does to the cloud as a plan simulates it
  (WORLD: the plan's state, a ``model.Cloud``; ``document_plan.simulate``
  calls it);
* ``read_back``: what the journal reads to tell whether it holds;
* ``kind``: what it acts on, the part of ``op`` before the dot
  (``aggregate``; ``AGGREGATE`` and ``FLAVOR`` name the two that
  ``document_plan`` asks about);
* ``check_input()``: refuse (``CommandError``), before anything is
  written, arguments that Nova or Placement would refuse, with the checks
  of ``gpuclient.rules.nova_rules`` (``nova_rules.check_plan`` calls it on
  every step and undo step). Default: nothing to check;
* ``several_writes()``: whether the executor carries this step out in
  more than one request, so that a failure can leave it half done (the
  journal then undoes it too). Default: False, one request;
* ``keys_written()``: the keys (aggregate metadata, flavor extra specs)
  the step writes when writing them is all it does (``document_plan``
  asks whether a step writes gpu apply's mark and nothing else). Default:
  None, it writes no such keys or more than them.

The planner (``plan``) builds steps from these classes, the executor
(``gpuclient.ops.journal``) registers its request code (do, and read
back) against them, and the simulation calls their ``effect``: nothing
finds an operation by building a method name from a string, and nothing
outside this module switches on an operation's name or class: a new
operation is one declaration here (and its request code in the journal).
``test_layers`` checks that each declaration has its three parts and that
no planner, executor or simulation names an operation without one.

Every operation is idempotent ("make X so"), and so is every inverse.
Flavors are addressed by ID (``flavor_id``; None: the flavor this plan
creates, whose ID the journal takes from the create's answer). An undo
that puts back a value read at plan time carries ``expect``, what the
step wrote: the journal restores a key only while it still holds that
value.
"""

from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
import dataclasses
import typing

from gpuclient.i18n import _
from gpuclient.rules import nova_rules
from gpuclient.rules import pools as pools_mod

if typing.TYPE_CHECKING:
    from gpuclient.rules import model


# the ID (flavor, limit) or uuid (aggregate) a simulated step gives what
# the plan creates: Nova and Keystone give the real one when the step runs
NEW = 'new:'
# the aggregate metadata key of its availability zone (Nova's)
ZONE_KEY = 'availability_zone'
# the kinds (``kind``) of the declarations acting on an aggregate and on a
# flavor
AGGREGATE = 'aggregate'
FLAVOR = 'flavor'

# every declaration, in the order the table below declares them
DECLARED: 'Sequence[type[Operation]]' = []


class Operation:
    """The base of every declaration (see the module's docstring)."""

    # each declaration's, set by _declare (the base declares none)
    op: typing.ClassVar[str] = None  # type: ignore[assignment]
    kind: typing.ClassVar[str] = None  # type: ignore[assignment]
    inverses: typing.ClassVar[tuple[type['Operation'], ...]] = ()
    read_back: typing.ClassVar[str] = None  # type: ignore[assignment]

    if typing.TYPE_CHECKING:
        # each declaration is a frozen dataclass of keyword-only fields
        # (_declare), which mypy does not see through the decorator
        __dataclass_fields__: typing.ClassVar[
            dict[str, dataclasses.Field[typing.Any]]]

        def __init__(self, **arguments: typing.Any) -> None: ...

    def arguments(self) -> dict[str, typing.Any]:
        """The arguments, {field: value}, in declaration order."""
        return {f.name: getattr(self, f.name)
                for f in dataclasses.fields(self)}

    def effect(self, world: 'model.Cloud') -> None:
        raise NotImplementedError(self.op)

    def check_input(self) -> None:
        """Refuse what Nova or Placement would refuse in the arguments;
        the default: nothing to check."""

    def several_writes(self) -> bool:
        """Whether the executor makes more than one request; the
        default: one."""
        return False

    def keys_written(self) -> set[str] | None:
        """The metadata or extra-spec keys written, when writing them is
        all the step does; the default: None."""
        return None


_O = typing.TypeVar('_O', bound=Operation)


def _arguments(cls: type[_O]) -> type[_O]:
    """Class decorator: the arguments (fields) that several declarations
    share."""
    return dataclasses.dataclass(frozen=True, kw_only=True)(cls)


def _declare(op: str, read_back: str) -> Callable[[type[_O]], type[_O]]:
    """Class decorator: a declaration named OP, read back by READ_BACK."""
    def declare(cls: type[_O]) -> type[_O]:
        cls = dataclasses.dataclass(frozen=True, kw_only=True)(cls)
        cls.op = op
        cls.kind = op.partition('.')[0]
        cls.read_back = read_back
        # a list until the table is complete (a tuple after)
        DECLARED.append(cls)  # type: ignore[attr-defined]
        return cls
    return declare


# -- the simulation's helpers (the world: the plan's state, a model.Cloud) --

def _aggregate(world: 'model.Cloud', name: str) -> dict[str, typing.Any]:
    """The simulated aggregate NAME (a step names one the plan has)."""
    for agg in world.aggregates:
        if agg['name'] == name:
            return agg
    raise KeyError(name)


def _derive(world: 'model.Cloud') -> None:
    """The pools derived again from the aggregates a step changed, as
    ``model.Cloud`` derives them."""
    world.pools, world.problems = pools_mod.scan(world.aggregates)


def _set_metadata(world: 'model.Cloud', name: str,
                  metadata: Mapping[str, str | None]) -> None:
    agg = _aggregate(world, name)
    for key, value in metadata.items():
        if value is None:
            agg['metadata'].pop(key, None)
        else:
            agg['metadata'][key] = value
        if key == ZONE_KEY:
            agg['availability_zone'] = value
    _derive(world)


def _image(world: 'model.Cloud',
           image_id: str) -> dict[str, typing.Any] | None:
    """The simulated image whose ID is IMAGE_ID (what a step names), or
    None."""
    for image in world.images or ():
        if image['id'] == image_id:
            return image
    return None


def _existing_traits(world: 'model.Cloud') -> set[str]:
    """The simulated custom traits (a plan's state has them read)."""
    if world.existing_traits is None:
        world.existing_traits = set()
    return world.existing_traits


def _flavors(world: 'model.Cloud') -> list[dict[str, typing.Any]]:
    """The simulated flavors (a plan's state has them read)."""
    if world.flavors is None:
        world.flavors = []
    return world.flavors


def _access(world: 'model.Cloud') -> dict[str, list[str]]:
    """The simulated access lists (a plan's state has them read)."""
    if world.access is None:
        world.access = {}
    return world.access


def _registered(world: 'model.Cloud') -> dict[str, dict[str, typing.Any]]:
    """The simulated registered limits (a plan's state has them read)."""
    if world.registered is None:
        world.registered = {}
    return world.registered


def _limits(world: 'model.Cloud') -> list[dict[str, typing.Any]]:
    """The simulated project limits (a plan's state has them read)."""
    if world.limits is None:
        world.limits = []
    return world.limits


def _flavor(world: 'model.Cloud', flavor_id: str | None,
            name: str) -> dict[str, typing.Any] | None:
    """The simulated flavor FLAVOR_ID (None: the one the plan creates)."""
    flavor_id = flavor_id or NEW + name
    for flavor in _flavors(world):
        if flavor['id'] == flavor_id:
            return flavor
    return None


def _provider_traits(world: 'model.Cloud', uuid: str) -> set[str]:
    # a plan with provider traits steps read Placement
    summary = world.placement.summaries.setdefault(  # type: ignore[union-attr]
        uuid, {})
    summary['traits'] = set(summary.get('traits') or ())
    return summary['traits']


# -- host aggregates (pools) ------------------------------------------------

def _metadata_key() -> str:
    # translated when a check runs, not at import
    return _('aggregate metadata key')


@_declare('aggregate.create', 'the aggregate NAME, with METADATA')
class AggregateCreate(Operation):
    """Create aggregate NAME in ZONE; METADATA is set right after."""

    name: str
    zone: str | None = None
    metadata: dict[str, str] | None = None

    def effect(self, world: 'model.Cloud') -> None:
        meta: dict[str, str | None] = dict(self.metadata or {})
        if self.zone:
            meta[ZONE_KEY] = self.zone
        made: dict[str, typing.Any] = {
            'name': self.name, 'id': None, 'uuid': NEW + self.name,
            'hosts': [], 'metadata': meta,
            'availability_zone': self.zone or None}
        for index, agg in enumerate(world.aggregates):
            if agg['name'] == self.name:
                world.aggregates[index] = made
                break
        else:
            world.aggregates.append(made)
        _derive(world)

    def check_input(self) -> None:
        nova_rules.check_name(self.name, _('aggregate name'))
        if self.zone:
            nova_rules.check_zone(self.zone)
        nova_rules.check_metadata(self.metadata, _metadata_key())

    def several_writes(self) -> bool:
        # the create, then its metadata
        return bool(self.metadata)


@_declare('aggregate.delete', 'no aggregate NAME')
class AggregateDelete(Operation):
    """Delete (empty) aggregate NAME."""

    name: str

    def effect(self, world: 'model.Cloud') -> None:
        world.aggregates = [a for a in world.aggregates
                            if a['name'] != self.name]
        _derive(world)


@_declare('aggregate.metadata', "the aggregate's METADATA")
class AggregateMetadata(Operation):
    """Set METADATA ({key: value, or None to delete}) on aggregate NAME;
    EXPECT (an undo): {key: what the step set}."""

    name: str
    metadata: dict[str, str | None]
    expect: dict[str, str | None] | None = None

    def effect(self, world: 'model.Cloud') -> None:
        _set_metadata(world, self.name, self.metadata)

    def check_input(self) -> None:
        nova_rules.check_metadata(self.metadata, _metadata_key())

    def keys_written(self) -> set[str]:
        return set(self.metadata)


@_declare('aggregate.add_zone', "the aggregate's zone")
class AggregateAddZone(Operation):
    """Put aggregate NAME, which has none, in ZONE. Not undone: Nova takes
    no zone off an aggregate (an empty zone is refused); a zone replaced
    is an AggregateMetadata step instead."""

    name: str
    zone: str

    def effect(self, world: 'model.Cloud') -> None:
        _set_metadata(world, self.name, {ZONE_KEY: self.zone})

    def check_input(self) -> None:
        nova_rules.check_zone(self.zone)


@_arguments
class _Membership(Operation):
    """HOST in aggregate NAME; PROVIDERS: its roots, whose Placement
    aggregates mirror Nova's."""

    name: str
    host: str
    providers: Sequence[str] = ()


_MEMBERS = ("the aggregate's hosts, and the Placement aggregates of "
            'PROVIDERS')


@_declare('aggregate.add_host', _MEMBERS)
class AggregateAddHost(_Membership):
    """Add HOST to aggregate NAME (and PROVIDERS to its Placement
    aggregate)."""

    def effect(self, world: 'model.Cloud') -> None:
        hosts = _aggregate(world, self.name)['hosts']
        if self.host not in hosts:
            hosts.append(self.host)
        _derive(world)


@_declare('aggregate.remove_host', _MEMBERS)
class AggregateRemoveHost(_Membership):
    """Take HOST out of aggregate NAME (and PROVIDERS out of its
    Placement aggregate)."""

    def effect(self, world: 'model.Cloud') -> None:
        hosts = _aggregate(world, self.name)['hosts']
        if self.host in hosts:
            hosts.remove(self.host)
        _derive(world)


# -- Placement traits --------------------------------------------------------

@_declare('trait.create', "Placement's traits")
class TraitCreate(Operation):
    """Create custom trait TRAIT."""

    trait: str

    def effect(self, world: 'model.Cloud') -> None:
        _existing_traits(world).add(self.trait)

    def check_input(self) -> None:
        nova_rules.check_trait(self.trait)


@_declare('trait.delete', "Placement's traits")
class TraitDelete(Operation):
    """Delete custom trait TRAIT (kept while a provider has it)."""

    trait: str

    def effect(self, world: 'model.Cloud') -> None:
        _existing_traits(world).discard(self.trait)

    check_input = TraitCreate.check_input


@_arguments
class _ProviderTraits(Operation):
    """TRAITS of resource provider UUID (LABEL: how it is said)."""

    uuid: str
    traits: list[str]
    label: str | None = None

    def check_input(self) -> None:
        for trait in self.traits:
            nova_rules.check_trait(trait)


@_declare('provider.add_traits', "the provider's traits")
class ProviderAddTraits(_ProviderTraits):
    """Add TRAITS to resource provider UUID."""

    def effect(self, world: 'model.Cloud') -> None:
        _provider_traits(world, self.uuid).update(self.traits)


@_declare('provider.remove_traits', "the provider's traits")
class ProviderRemoveTraits(_ProviderTraits):
    """Remove TRAITS from resource provider UUID."""

    def effect(self, world: 'model.Cloud') -> None:
        _provider_traits(world, self.uuid).difference_update(self.traits)


# -- flavors (by ID; None: the one this plan creates) ------------------------

_SPEC = _('flavor extra spec')


@_declare('flavor.create',
          'the flavor NAME the create returned (or the one flavor NAME '
          'with its sizes)')
class FlavorCreate(Operation):
    """Create flavor NAME with FIELDS (Nova's flavor body); its undo
    deletes the ID the create returned."""

    name: str
    fields: dict[str, typing.Any]

    def effect(self, world: 'model.Cloud') -> None:
        flavor = dict(self.fields, id=NEW + self.name, name=self.name,
                      extra_specs={})
        _flavors(world).append(flavor)
        if not self.fields.get('os-flavor-access:is_public', True):
            _access(world)[flavor['id']] = []

    def check_input(self) -> None:
        nova_rules.check_name(self.name, _('flavor name'))
        nova_rules.check_description((self.fields or {}).get('description'))


@_declare('flavor.delete', 'no flavor FLAVOR_ID')
class FlavorDelete(Operation):
    """Delete flavor FLAVOR_ID (named NAME). Not undone: a re-created
    flavor would get another ID."""

    name: str
    flavor_id: str | None = None

    def effect(self, world: 'model.Cloud') -> None:
        flavor = _flavor(world, self.flavor_id, self.name)
        if flavor is not None:
            _flavors(world).remove(flavor)
            _access(world).pop(flavor['id'], None)


@_declare('flavor.description', "the flavor's description")
class FlavorDescription(Operation):
    """Make the description of flavor FLAVOR_ID DESCRIPTION (None:
    none)."""

    name: str
    description: str | None = None
    flavor_id: str | None = None
    expect: dict[str, str | None] | None = None

    def effect(self, world: 'model.Cloud') -> None:
        # the step's flavor is in the world (read, or created before)
        _flavor(world, self.flavor_id,  # type: ignore[index]
                self.name)['description'] = self.description

    def check_input(self) -> None:
        nova_rules.check_description(self.description)


@_declare('flavor.specs', "the flavor's extra specs")
class FlavorSpecs(Operation):
    """Set SPECS_SET ({key: value}) and unset UNSET (keys) in the extra
    specs of flavor FLAVOR_ID."""

    name: str
    flavor_id: str | None = None
    specs_set: dict[str, str] | None = None
    unset: Sequence[str] = ()
    expect: dict[str, str | None] | None = None

    def effect(self, world: 'model.Cloud') -> None:
        # the step's flavor is in the world (read, or created before)
        extra = _flavor(world, self.flavor_id,  # type: ignore[index]
                        self.name)['extra_specs']
        extra.update(self.specs_set or {})
        for key in self.unset:
            extra.pop(key, None)

    def check_input(self) -> None:
        nova_rules.check_metadata(self.specs_set, _SPEC)
        for key in self.unset or ():
            nova_rules.check_key(key, _SPEC)

    def several_writes(self) -> bool:
        # one request sets SPECS_SET, one per key unsets UNSET
        return bool(self.specs_set) + len(self.unset or ()) > 1

    def keys_written(self) -> set[str] | None:
        # the unset keys are requests of their own
        return None if self.unset else set(self.specs_set or ())


@_arguments
class _Access(Operation):
    """The access of PROJECT to flavor FLAVOR_ID (named NAME)."""

    name: str
    project: str
    flavor_id: str | None = None


@_declare('flavor.add_access', "the flavor's access list")
class FlavorAddAccess(_Access):
    """Give PROJECT access to (private) flavor FLAVOR_ID."""

    def effect(self, world: 'model.Cloud') -> None:
        # the step's flavor is in the world (read, or created before)
        flavor: dict[str, typing.Any] = _flavor(  # type: ignore[assignment]
            world, self.flavor_id, self.name)
        projects = _access(world).setdefault(flavor['id'], [])
        if self.project not in projects:
            projects.append(self.project)


@_declare('flavor.remove_access', "the flavor's access list")
class FlavorRemoveAccess(_Access):
    """Take access to flavor FLAVOR_ID from PROJECT."""

    def effect(self, world: 'model.Cloud') -> None:
        # the step's flavor is in the world (read, or created before)
        flavor: dict[str, typing.Any] = _flavor(  # type: ignore[assignment]
            world, self.flavor_id, self.name)
        projects = _access(world).get(flavor['id']) or []
        if self.project in projects:
            projects.remove(self.project)


# -- images ------------------------------------------------------------------

@_declare('image.update', "the image's properties, by ID")
class ImageUpdate(Operation):
    """Set (value) or remove (None) CHANGES, properties of image IMAGE_ID
    (NAME: how it is said)."""

    image_id: str
    name: str
    changes: dict[str, typing.Any]
    expect: dict[str, typing.Any] | None = None

    def effect(self, world: 'model.Cloud') -> None:
        # the step's image is in the world (the plan read it)
        image: dict[str, typing.Any]
        image = _image(world, self.image_id)  # type: ignore[assignment]
        for key, value in self.changes.items():
            if value is None:
                image.pop(key, None)
            else:
                image[key] = value


# -- Keystone limits (PROJECT None: the registered limit) --------------------

@_declare('limit.set', 'the limit NAME of PROJECT')
class LimitSet(Operation):
    """Make the limit NAME of PROJECT LIMIT (created when there is
    none)."""

    project: str | None
    name: str
    limit: int

    def effect(self, world: 'model.Cloud') -> None:
        if self.project is None:
            have = _registered(world).setdefault(self.name,
                                                 {'id': NEW + self.name})
            have['limit'] = self.limit
            return
        for item in _limits(world):
            if item['project_id'] == self.project and (
                    item['resource_name'] == self.name):
                item['resource_limit'] = self.limit
                return
        _limits(world).append({'id': NEW + self.name,
                             'project_id': self.project,
                             'resource_name': self.name,
                             'resource_limit': self.limit})


@_declare('limit.delete', 'no limit NAME of PROJECT')
class LimitDelete(Operation):
    """Delete the limit NAME of PROJECT."""

    project: str | None
    name: str

    def effect(self, world: 'model.Cloud') -> None:
        if self.project is None:
            _registered(world).pop(self.name, None)
            return
        world.limits = [i for i in _limits(world)
                        if (i['project_id'], i['resource_name'])
                        != (self.project, self.name)]


@_declare('limit.describe', "the limit's description")
class LimitDescribe(Operation):
    """Make the description of the limit NAME of PROJECT DESCRIPTION
    (None: none)."""

    project: str | None
    name: str
    description: str | None = None
    expect: dict[str, str | None] | None = None

    def effect(self, world: 'model.Cloud') -> None:
        # the step's limit is in the world (the plan read it)
        world.limit(self.project,  # type: ignore[index]
                    self.name)['description'] = self.description


# -- compute services (gpu host cordon / uncordon) ---------------------------

@_declare('service.disable', "the service's status and reason")
class ServiceDisable(Operation):
    """Disable the nova-compute SERVICE_ID of HOST with REASON."""

    host: str
    service_id: str
    reason: str | None

    def effect(self, world: 'model.Cloud') -> None:
        """The plan of a document disables no service."""


@_declare('service.enable', "the service's status")
class ServiceEnable(Operation):
    """Enable the nova-compute SERVICE_ID of HOST."""

    host: str
    service_id: str

    def effect(self, world: 'model.Cloud') -> None:
        """The plan of a document enables no service."""


# -- one-time-use devices (gpu device release): forward only ---------------

@_declare('device.release', "the device provider's reserved inventory")
class DeviceRelease(Operation):
    """Lower the reserved RESOURCE_CLASS inventory of the one-time-use
    device provider UUID (named NAME) to 0, with the provider's
    generation; refused while an allocation exists. Never undone: Nova
    reserves the device again when the next server holds it."""

    uuid: str
    name: str
    resource_class: str

    def effect(self, world: 'model.Cloud') -> None:
        """The plan of a document releases no device."""


# -- server moves (gpu host drain): forward only, never undone ------------

@_arguments
class _Move(Operation):
    """Server SERVER_ID (named NAME) off SOURCE. PROVIDERS: {'source':
    [uuids], 'destination': [uuids]} of both trees, where its CLASSES
    must have moved; TIMEOUT: how long the move may take."""

    server_id: str
    name: str
    source: str
    classes: list[str]
    providers: dict[str, list[str]]
    timeout: int | None

    def effect(self, world: 'model.Cloud') -> None:
        """The plan of a document moves no server."""


@_arguments
class _MoveTo(_Move):
    """To HOST; GPUS: the units it held (more after the move is
    said)."""

    host: str
    gpus: int | None = None


_MOVED = "the server's host and status, and its allocations"


@_declare('server.live_migrate', _MOVED)
class ServerLiveMigrate(_MoveTo):
    """Live-migrate the server from SOURCE to HOST. UNDER_WAY: Nova runs
    that move already (an earlier drain's): wait for it, send nothing."""

    under_way: bool = False

    effect = _Move.effect


@_declare('server.migrate', _MOVED)
class ServerMigrate(_MoveTo):
    """Cold-migrate the server from SOURCE to HOST, then confirm unless
    CONFIRM is False (left in VERIFY_RESIZE); UNDER_WAY as a live
    migration's."""

    confirm: bool = True
    under_way: bool = False

    effect = _Move.effect


@_declare('server.confirm', _MOVED)
class ServerConfirm(_MoveTo):
    """Confirm the cold migration of the server to HOST."""

    effect = _Move.effect


@_declare('server.shelve', "the server's status, and its allocations")
class ServerShelve(_Move):
    """Shelve and offload the server off SOURCE."""

    effect = _Move.effect


# -- what undoes what --------------------------------------------------------

for _one, _other in ((AggregateCreate, AggregateDelete),
                     (AggregateAddHost, AggregateRemoveHost),
                     (TraitCreate, TraitDelete),
                     (ProviderAddTraits, ProviderRemoveTraits),
                     (FlavorAddAccess, FlavorRemoveAccess),
                     (ServiceDisable, ServiceEnable)):
    _one.inverses, _other.inverses = (_other,), (_one,)
# undone by themselves, with the old values (and ``expect``)
for _self in (AggregateMetadata, FlavorDescription, FlavorSpecs,
              ImageUpdate, LimitDescribe):
    _self.inverses = (_self,)
# its undo deletes the ID the create returned; a delete is not undone
FlavorCreate.inverses = (FlavorDelete,)
# no limit before: deleted; else set to the old value
LimitSet.inverses = (LimitDelete, LimitSet)
LimitDelete.inverses = (LimitSet,)
del _one, _other, _self

DECLARED = tuple(DECLARED)
# the declarations by name
BY_NAME = {d.op: d for d in DECLARED}
