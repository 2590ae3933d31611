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

"""Pure: the steps of a write, each with its inverse.

A write command observes the cloud, asks a planner (``pool_plan``,
``flavor_plan``, ``images``) for the steps from what *is* to what is asked,
and hands the plan to ``gpuclient.ops.journal``, which applies it. A step is
data: an operation (an instance of one of the declarations of
``gpuclient.rules.operations``, which hold its arguments) and a sentence;
its inverse is another step. Every operation is idempotent ("make X so"),
and so is every inverse, which is what lets the journal undo a step whose
outcome it does not know and lets a re-run converge.

Server moves (``gpu host drain``) go forward only: they have no inverse
(moving a server back is another maintenance), and a plan of them is
``forward``: a failure stops it and says what moved and what to run, and
the re-run plans from where the servers are.

Flavors are addressed by ID, never by name: Nova's ``GET /flavors/<x>``
takes ``x`` as an ID first, so a flavor named like another flavor's ID
would be the other one. A planner resolves each flavor once, by exact name
among names, and gives its steps the ID; ``flavor_id`` None is the flavor
this plan creates, whose ID the journal takes from the create's answer
(its undo deletes that ID and no other).

An undo that puts back a value read at plan time carries ``expect``, what
the step wrote: the journal restores a key only while it still holds that
value, and leaves (and names) a key another writer changed since.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Iterator
from collections.abc import Mapping
import typing

from gpuclient.i18n import _
from gpuclient.rules import operations as ops

# the names of the operations (``operations.DECLARED``)
OPERATIONS = tuple(d.op for d in ops.DECLARED)


class Step:
    """One idempotent write, what it is in words, and its inverse.

    OPERATION: an instance of a declaration of ``rules.operations`` (its
    arguments); INVERSE: the step that undoes it, or None.
    """

    def __init__(self, operation: ops.Operation, what: str,
                 inverse: Step | None = None) -> None:
        if type(operation) not in ops.DECLARED:
            raise ValueError('unknown operation %r' % (operation,))
        self.operation = operation
        self.what = what
        self.inverse = inverse

    @property
    def op(self) -> str:
        """The operation's name (``aggregate.create``)."""
        return self.operation.op

    @property
    def args(self) -> dict[str, typing.Any]:
        """The operation's arguments, {field: value}."""
        return self.operation.arguments()

    def __repr__(self) -> str:
        return 'Step(%s, %r)' % (self.op, self.args)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Step)
                and self.operation == other.operation)

    def as_dict(self) -> dict[str, typing.Any]:
        return {'op': self.op, 'what': self.what, 'args': self.args,
                'undo': self.inverse.what if self.inverse else None}


class Plan:
    """The ordered steps of one command, plus what to tell the operator."""

    def __init__(self, title: str, steps: Iterable[Step] = (),
                 warnings: Iterable[str] = (), rerun: str | None = None,
                 rerun_fixed: bool = False, forward: bool = False) -> None:
        """RERUN: the command that finishes the plan when the operator's
        own command line is not known; RERUN_FIXED: use RERUN even when it
        is (the operator's command would not converge, e.g. a delete
        that needs --force once its aggregate is left empty). FORWARD: a
        plan whose steps are not undone (server moves): a failure stops it
        where it is."""
        self.title = title
        self.forward = forward
        self.steps = list(steps)
        self.warnings = list(warnings)
        self.rerun = rerun
        self.rerun_fixed = rerun_fixed

    def __bool__(self) -> bool:
        return bool(self.steps)

    def __len__(self) -> int:
        return len(self.steps)

    def __iter__(self) -> Iterator[Step]:
        return iter(self.steps)

    def add(self, step: Step | None) -> Step | None:
        if step is not None:
            self.steps.append(step)
        return step

    def extend(self, steps: Iterable[Step | None]) -> None:
        for step in steps:
            self.add(step)

    def lines(self) -> list[str]:
        """Numbered plan lines for --dry-run."""
        if not self.steps:
            return [_('%s: nothing to do, the cloud already matches.')
                    % self.title]
        out = []
        for index, step in enumerate(self.steps, 1):
            undo = (_(' (undo: %s)') % step.inverse.what if step.inverse
                    else _(' (not undone on failure)'))
            out.append('%d. %s%s' % (index, step.what, undo))
        return out


def _meta_text(metadata: Mapping[str, object]) -> str:
    return ', '.join(
        ('%s=%s' % (k, v)) if v is not None else _('%s (removed)') % k
        for k, v in sorted(metadata.items()))


# -- step constructors: each builds the step and its inverse --------------

def create_aggregate(name: str, zone: str | None = None) -> Step:
    return Step(ops.AggregateCreate(name=name, zone=zone, metadata={}),
                _('create host aggregate %(name)s%(zone)s')
                % {'name': name,
                   'zone': (_(' in zone %s') % zone) if zone else ''},
                inverse=Step(ops.AggregateDelete(name=name),
                             _('delete host aggregate %s') % name))


def delete_aggregate(name: str, zone: str | None = None,
                     metadata: Mapping[str, str] | None = None) -> Step:
    """Delete an (empty) aggregate; undone by creating it with metadata."""
    undo = Step(ops.AggregateCreate(name=name, zone=zone,
                                    metadata=dict(metadata or {})),
                _('create host aggregate %s again') % name)
    return Step(ops.AggregateDelete(name=name),
                _('delete host aggregate %s') % name, inverse=undo)


def set_metadata(name: str, old: Mapping[str, str | None],
                 changes: Mapping[str, str | None]) -> Step | None:
    """Set ``changes`` on aggregate ``name`` whose metadata is ``old``."""
    changes = {k: v for k, v in changes.items() if old.get(k) != v}
    if not changes:
        return None
    restore = {k: old.get(k) for k in changes}
    texts = {'name': name, 'meta': _meta_text(changes),
             'old': _meta_text(restore)}
    return _restoring(
        ops.AggregateMetadata,
        _('set metadata of aggregate %(name)s: %(meta)s') % texts,
        _('restore metadata of aggregate %(name)s: %(old)s') % texts,
        'metadata', changes, restore, name=name)


def _restoring(declaration: type[ops.Operation], what: str, undo_what: str,
               key: str, value: object, old: object,
               **args: object) -> Step:
    """A step of DECLARATION that writes VALUE as its argument KEY, undone
    by the same operation writing OLD back while VALUE is still there
    (``expect``)."""
    expect = dict(value) if isinstance(value, dict) else {key: value}
    undo = declaration(expect=expect, **dict(args, **{key: old}))
    return Step(declaration(**dict(args, **{key: value})), what,
                inverse=Step(undo, undo_what))


ZONE_KEY = ops.ZONE_KEY


def set_zone(name: str, old: str | None, zone: str) -> Step | None:
    """Put aggregate ``name`` (in zone ``old``, None: none) in ``zone``.

    A zone replaced is a metadata change undone by putting the old zone
    back; a first zone is not undone (Nova refuses an empty zone, so no
    call takes a zone off an aggregate).
    """
    if old == zone:
        return None
    if old is not None:
        return set_metadata(name, {ZONE_KEY: old}, {ZONE_KEY: zone})
    return Step(ops.AggregateAddZone(name=name, zone=zone),
                _('put host aggregate %(name)s in availability zone '
                  '%(zone)s') % {'name': name, 'zone': zone})


# Operations that are each other's inverse, and how a step says itself.
_TEXTS = {
    ops.AggregateAddHost: _('add host %(host)s to aggregate %(name)s'),
    ops.AggregateRemoveHost: _('remove host %(host)s from aggregate '
                               '%(name)s'),
    ops.TraitCreate: _('create trait %(trait)s'),
    ops.TraitDelete: _('delete trait %(trait)s'),
    ops.ProviderAddTraits: _('add trait %(traits)s to resource provider '
                             '%(label)s'),
    ops.ProviderRemoveTraits: _('remove trait %(traits)s from resource '
                                'provider %(label)s'),
    ops.FlavorAddAccess: _('give project %(project)s access to flavor '
                           '%(name)s'),
    ops.FlavorRemoveAccess: _('take access to flavor %(name)s from '
                              'project %(project)s'),
}
_REMOVALS = (ops.AggregateRemoveHost, ops.TraitDelete,
             ops.ProviderRemoveTraits, ops.FlavorRemoveAccess)


def _mirrored(declaration: type[ops.Operation], **args: typing.Any) -> Step:
    """A step of DECLARATION whose inverse is its declared opposite on the
    same args."""
    text = dict(args)
    if 'traits' in args:
        text['traits'] = ', '.join(args['traits'])
    (undo,) = declaration.inverses
    undo_text = _TEXTS[undo] % text
    if declaration in _REMOVALS:
        undo_text = _('%s again') % undo_text
    return Step(declaration(**args), _TEXTS[declaration] % text,
                inverse=Step(undo(**args), undo_text))


def add_host(name: str, host: str, providers: Iterable[str] = ()) -> Step:
    """``providers``: the host's root providers, mirrored in Placement."""
    return _mirrored(ops.AggregateAddHost, name=name, host=host,
                     providers=sorted(providers))


def remove_host(name: str, host: str,
                providers: Iterable[str] = ()) -> Step:
    return _mirrored(ops.AggregateRemoveHost, name=name, host=host,
                     providers=sorted(providers))


def create_trait(trait: str) -> Step:
    return _mirrored(ops.TraitCreate, trait=trait)


def delete_trait(trait: str) -> Step:
    return _mirrored(ops.TraitDelete, trait=trait)


def add_traits(uuid: str, traits: Iterable[str],
               label: str | None = None) -> Step:
    return _mirrored(ops.ProviderAddTraits, uuid=uuid, traits=sorted(traits),
                     label=label or uuid)


def remove_traits(uuid: str, traits: Iterable[str],
                  label: str | None = None) -> Step:
    return _mirrored(ops.ProviderRemoveTraits, uuid=uuid,
                     traits=sorted(traits), label=label or uuid)


def create_flavor(name: str, fields: Mapping[str, typing.Any]) -> Step:
    """Create flavor ``name``; undone by deleting the ID Nova gave it."""
    return Step(ops.FlavorCreate(name=name, fields=dict(fields)),
                _('create flavor %s') % name,
                inverse=Step(ops.FlavorDelete(name=name, flavor_id=None),
                             _('delete flavor %s') % name))


def delete_flavor(flavor_id: str, name: str) -> Step:
    """Irreversible: a re-created flavor would get another ID."""
    return Step(ops.FlavorDelete(name=name, flavor_id=flavor_id),
                _('delete flavor %(name)s (%(id)s)')
                % {'name': name, 'id': flavor_id})


def _description_text(description: str | None) -> str:
    return repr(description) if description else _('none')


def _describing(declaration: type[ops.Operation], label: str,
                old: str | None, description: str | None,
                **args: object) -> Step | None:
    """DECLARATION making the description of LABEL (now OLD) DESCRIPTION
    (None or empty: none), undone by writing OLD back; None when it is
    so."""
    old, description = old or None, description or None
    if old == description:
        return None
    texts = {'label': label, 'new': _description_text(description),
             'old': _description_text(old)}
    return _restoring(
        declaration,
        _('set the description of %(label)s to %(new)s') % texts,
        _('restore the description of %(label)s: %(old)s') % texts,
        'description', description, old, **args)


def set_description(name: str, old: str | None, description: str | None,
                    *, flavor_id: str | None) -> Step | None:
    """Make the description of flavor ``name`` (now ``old``) DESCRIPTION
    (None or empty: none)."""
    return _describing(ops.FlavorDescription, _('flavor %s') % name, old,
                       description, flavor_id=flavor_id, name=name)


def flavor_specs(name: str, old: Mapping[str, str],
                 set_specs: Mapping[str, str] | None = None,
                 unset: Iterable[str] = (), *,
                 flavor_id: str | None) -> Step | None:
    """Set and unset extra specs of flavor ``name`` whose specs are old.

    ``flavor_id``: the flavor's ID (None: the flavor this plan creates).
    """
    set_specs = {k: v for k, v in (set_specs or {}).items()
                 if old.get(k) != v}
    unset = sorted(k for k in unset if k in old and k not in set_specs)
    if not set_specs and not unset:
        return None
    restore = {k: old[k] for k in list(set_specs) + unset if k in old}
    drop = sorted(k for k in set_specs if k not in old)
    expect = dict(set_specs, **{k: None for k in unset})
    parts = ['%s=%s' % kv for kv in sorted(set_specs.items())]
    parts += [_('%s (removed)') % k for k in unset]
    undo_parts = ['%s=%s' % kv for kv in sorted(restore.items())]
    undo_parts += [_('%s (removed)') % k for k in drop]
    return Step(ops.FlavorSpecs(flavor_id=flavor_id, name=name,
                                specs_set=set_specs, unset=unset),
                _('set extra specs of flavor %(name)s: %(specs)s')
                % {'name': name, 'specs': ', '.join(parts)},
                inverse=Step(ops.FlavorSpecs(flavor_id=flavor_id, name=name,
                                             specs_set=restore, unset=drop,
                                             expect=expect),
                             _('restore extra specs of flavor %(name)s: '
                               '%(specs)s')
                             % {'name': name,
                                'specs': ', '.join(undo_parts)}))


def add_access(name: str, project: str, *, flavor_id: str | None) -> Step:
    """``flavor_id``: None for the flavor this plan creates."""
    return _mirrored(ops.FlavorAddAccess, flavor_id=flavor_id, name=name,
                     project=project)


def remove_access(name: str, project: str, *,
                  flavor_id: str | None) -> Step:
    return _mirrored(ops.FlavorRemoveAccess, flavor_id=flavor_id, name=name,
                     project=project)


def update_image(image: Mapping[str, typing.Any],
                 changes: Mapping[str, typing.Any]) -> Step | None:
    """Set (value) or remove (None) properties of an image (dict)."""
    changes = {k: v for k, v in changes.items() if image.get(k) != v}
    if not changes:
        return None
    label = image.get('name') or image['id']
    restore = {k: image.get(k) for k in changes}
    return Step(ops.ImageUpdate(image_id=image['id'], name=label,
                                changes=changes),
                _('set properties of image %(name)s: %(meta)s')
                % {'name': label, 'meta': _meta_text(changes)},
                inverse=Step(ops.ImageUpdate(image_id=image['id'],
                                             name=label, changes=restore,
                                             expect=dict(changes)),
                             _('restore properties of image %(name)s: '
                               '%(meta)s')
                             % {'name': label, 'meta': _meta_text(restore)}))


def _limit_text(project: str | None, name: str,
                limit: int | None = None) -> str:
    values = {'name': name, 'project': project, 'limit': limit}
    if project is None:
        if limit is None:
            return _('delete the registered limit %(name)s') % values
        return _('set the registered limit %(name)s to %(limit)s') % values
    if limit is None:
        return _('delete the limit %(name)s of project %(project)s') % values
    return _('set the limit %(name)s of project %(project)s to '
             '%(limit)s') % values


def set_limit(project: str | None, name: str, limit: int,
              old: int | None = None, note: str | None = None
              ) -> Step | None:
    """Make the Keystone limit NAME of PROJECT (None: the registered
    limit) LIMIT; ``old`` is its value now, None when there is none.
    NOTE: what the step means beyond itself (for a registered limit: what
    every project without its own limit gets), said in the step.

    Limits are named by (project, resource name), not by ID: a limit
    re-created by an undo is the same quota.
    """
    if old == limit:
        return None
    if old is None:
        undo = Step(ops.LimitDelete(project=project, name=name),
                    _limit_text(project, name))
    else:
        undo = Step(ops.LimitSet(project=project, name=name, limit=old),
                    _limit_text(project, name, old))
    return Step(ops.LimitSet(project=project, name=name, limit=limit),
                _noted(_limit_text(project, name, limit), note),
                inverse=undo)


def delete_limit(project: str | None, name: str, old: int,
                 note: str | None = None) -> Step:
    """Delete the Keystone limit NAME of PROJECT (None: registered)."""
    return Step(ops.LimitDelete(project=project, name=name),
                _noted(_limit_text(project, name), note),
                inverse=Step(ops.LimitSet(project=project, name=name,
                                          limit=old),
                             _limit_text(project, name, old)))


def describe_limit(project: str | None, name: str, old: str | None,
                   description: str | None) -> Step | None:
    """Make the description of the Keystone limit NAME of PROJECT (None:
    the registered limit), now OLD, DESCRIPTION (None: none)."""
    label = (_('registered limit %s') % name if project is None else
             _('limit %(name)s of project %(project)s')
             % {'name': name, 'project': project})
    return _describing(ops.LimitDescribe, label, old, description,
                       project=project, name=name)


def _noted(text: str, note: str | None) -> str:
    return '%s (%s)' % (text, note) if note else text


# -- one-time-use devices (gpu device release) ------------------------------

def release_device(uuid: str, name: str, resource_class: str) -> Step:
    """Release the one-time-use device provider UUID (NAME): its reserved
    RESOURCE_CLASS inventory lowered to 0; forward only."""
    return Step(ops.DeviceRelease(uuid=uuid, name=name,
                                  resource_class=resource_class),
                _('release one-time-use device %(name)s (%(rc)s reserved '
                  'to 0)') % {'name': name, 'rc': resource_class})


# -- compute services (gpu host cordon / uncordon) ---------------------------

def disable_service(host: str, service_id: str, reason: str,
                    undone: bool = True) -> Step:
    """Disable HOST's nova-compute (SERVICE_ID) with REASON; undone by
    enabling it again (not when UNDONE is False: a drain's cordon stays
    when a move fails)."""
    inverse = Step(ops.ServiceEnable(host=host, service_id=service_id),
                   _('enable compute service of %s again') % host
                   ) if undone else None
    return Step(ops.ServiceDisable(host=host, service_id=service_id,
                                   reason=reason),
                _('disable compute service of %(host)s (%(reason)s)')
                % {'host': host, 'reason': reason}, inverse=inverse)


def enable_service(host: str, service_id: str,
                   reason: str | None) -> Step:
    """Enable HOST's nova-compute, disabled with REASON; undone by
    disabling it again with the same reason."""
    return Step(ops.ServiceEnable(host=host, service_id=service_id),
                _('enable compute service of %s') % host,
                inverse=Step(ops.ServiceDisable(host=host,
                                                service_id=service_id,
                                                reason=reason),
                             _('disable compute service of %(host)s again '
                               '(%(reason)s)')
                             % {'host': host, 'reason': reason}))


def _server_label(name: str | None, server_id: str) -> str:
    return '%s (%s)' % (name, server_id) if name else server_id


def live_migrate(server_id: str, name: str, source: str, host: str,
                 classes: Iterable[str], providers: dict[str, list[str]],
                 timeout: int | None, gpus: int | None = None,
                 under_way: bool = False) -> Step:
    """Live-migrate a server from SOURCE to HOST (named to Nova, whose
    scheduler checks it); forward only. PROVIDERS: {'source': [uuids],
    'destination': [uuids]} of both trees, where its CLASSES must have
    moved. UNDER_WAY: Nova runs that migration already (an earlier
    drain's): wait for it, send nothing."""
    text = (_('wait for the live migration of server %(server)s from '
              '%(source)s to %(host)s (under way)') if under_way else
            _('live-migrate server %(server)s from %(source)s to '
              '%(host)s'))
    return Step(ops.ServerLiveMigrate(
        server_id=server_id, name=name, source=source, host=host,
        classes=sorted(classes), providers=providers, timeout=timeout,
        gpus=gpus, under_way=under_way),
        text % {'server': _server_label(name, server_id),
                'source': source, 'host': host})


def cold_migrate(server_id: str, name: str, source: str, host: str,
                 classes: Iterable[str], providers: dict[str, list[str]],
                 timeout: int | None, confirm: bool = True,
                 gpus: int | None = None, under_way: bool = False) -> Step:
    """Cold-migrate a server from SOURCE to HOST (2.56), then confirm the
    resize unless CONFIRM is False; forward only. UNDER_WAY: Nova runs
    that migration already (an earlier drain's): wait for it, send no
    migrate."""
    if under_way:
        text = (_('wait for the cold migration of server %(server)s from '
                  '%(source)s to %(host)s (under way) and confirm')
                if confirm else
                _('wait for the cold migration of server %(server)s from '
                  '%(source)s to %(host)s (under way; left to confirm)'))
    else:
        text = (_('cold-migrate server %(server)s from %(source)s to '
                  '%(host)s and confirm') if confirm else
                _('cold-migrate server %(server)s from %(source)s to '
                  '%(host)s (left to confirm)'))
    return Step(ops.ServerMigrate(
        server_id=server_id, name=name, source=source, host=host,
        classes=sorted(classes), providers=providers, timeout=timeout,
        confirm=confirm, gpus=gpus, under_way=under_way),
        text % {'server': _server_label(name, server_id),
                'source': source, 'host': host})


def confirm_migration(server_id: str, name: str, source: str, host: str,
                      classes: Iterable[str],
                      providers: dict[str, list[str]], timeout: int | None,
                      gpus: int | None = None) -> Step:
    """Confirm the cold migration of a server that a drain left on HOST in
    VERIFY_RESIZE; forward only."""
    return Step(ops.ServerConfirm(
        server_id=server_id, name=name, source=source, host=host,
        classes=sorted(classes), providers=providers, timeout=timeout,
        gpus=gpus),
        _('confirm the migration of server %(server)s from %(source)s to '
          '%(host)s') % {'server': _server_label(name, server_id),
                         'source': source, 'host': host})


def shelve(server_id: str, name: str, source: str, classes: Iterable[str],
           providers: dict[str, list[str]], timeout: int | None) -> Step:
    """Shelve and offload a server off SOURCE (its GPUs freed; its owner
    unshelves it later); forward only."""
    return Step(ops.ServerShelve(
        server_id=server_id, name=name, source=source,
        classes=sorted(classes), providers=providers, timeout=timeout),
        _('shelve and offload server %(server)s off %(source)s')
        % {'server': _server_label(name, server_id), 'source': source})
