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

"""Apply a plan (``gpuclient.rules.plan``) with a journal.

* Steps run in order through the client layer. SIGINT, SIGTERM and SIGHUP
  that arrive meanwhile are deferred to the next step boundary; every
  request is bounded (``cloud.http.set_timeouts``, which ``GpuClient``
  calls on its sessions: connect and read timeouts, and a
  ``DeadlineAdapter`` that bounds each call's whole time, its answer read
  to the end), so the boundary comes. A second SIGINT or SIGTERM abandons
  the running step at once: nothing more is undone, and the error names
  the step whose outcome is unknown and the steps in effect (a re-run
  finishes the plan).
* When a step fails, its outcome is checked by reading the cloud back: a
  write that happened although its answer was lost (a dropped connection, a
  proxy's HTML page) counts as done and the plan goes on. A write the
  service refused (a 4xx answer) is not read back: it did not happen, and
  what the cloud holds instead is someone else's. The journal adopts only
  what the plan observed as absent and made itself: an aggregate, host or
  flavor access that another writer added after the plan looked fails the
  step and is named, never taken over (nor removed by the undo).
* Flavors are acted on by ID (Nova looks ``/flavors/<x>`` up as an ID
  first); a flavor the plan creates is known by the ID its create
  returned, and its undo deletes that ID only.
* An undo that restores values read at plan time (aggregate metadata,
  flavor extra specs, image properties) restores a key only while it still
  holds what the plan wrote; a key another writer changed since is left
  as it is and named.
* Each operation is declared once, in ``gpuclient.rules.operations``;
  the Executor's code that carries one out (``executes``) and reads it
  back (``reads_back``) is registered against its declaration, and
  ``OPERATIONS`` (checked complete at import) is the table of both.
* Otherwise, or when interrupted, the journal undoes what it did, newest
  first (a step whose outcome could not be read is undone too: inverses are
  idempotent), and raises one CommandError that says what failed, whether
  everything was undone, and, when an undo failed as well, exactly what is
  left and that re-running the command finishes it.
"""

from __future__ import annotations

import collections
import collections.abc
import contextlib
import logging
import signal
import threading
import time
import typing

from osc_lib import exceptions

from gpuclient.cloud import errors
from gpuclient.i18n import _
from gpuclient.ops import invocation
from gpuclient.rules import nova_rules
from gpuclient.rules import operations
from gpuclient.rules import plan as plan_mod

if typing.TYPE_CHECKING:
    from openstack.compute.v2 import aggregate as sdk_aggregate

    from gpuclient.cloud.client import GpuClient
    from gpuclient.rules import model

    # a method of the Executor, registered by executes or reads_back
    _Method = typing.TypeVar(
        '_Method', bound=collections.abc.Callable[..., typing.Any])
    # on_step(index, step): called before each step
    OnStep: typing.TypeAlias = collections.abc.Callable[
        [int, plan_mod.Step], object]

LOG = logging.getLogger(__name__)


# server moves: how often Nova is asked, and how long a move may take
# when the step names no timeout (gpu host drain --timeout)
POLL_INTERVAL = 2.0
DEFAULT_MOVE_TIMEOUT = 600
HOST = 'OS-EXT-SRV-ATTR:host'
TASK = 'OS-EXT-STS:task_state'
# a server's status once a move is over (Nova's API statuses)
LIVE_DONE = ('ACTIVE', 'PAUSED')
COLD_DONE = ('ACTIVE', 'SHUTOFF')


def _label(server_id: str, name: str | None) -> str:
    return '%s (%s)' % (name, server_id) if name else server_id


class Interrupted(Exception):
    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum

    def __str__(self) -> str:
        try:
            name = signal.Signals(self.signum).name
        except ValueError:
            name = str(self.signum)
        return _('interrupted by %s') % name


class ApplyError(exceptions.CommandError):
    """A plan failed. ``left`` lists the steps whose effect remains;
    ``interrupted`` the signal that stopped it (Ctrl-C, kill, a hang-up),
    or None: a command that applies several plans stops at that one."""

    def __init__(
        self, message: str, failed: plan_mod.Step | None = None,
        left: collections.abc.Iterable[plan_mod.Step] = (),
        undo_failures: collections.abc.Iterable[
            tuple[plan_mod.Step, BaseException]] = (),
        interrupted: int | None = None,
    ) -> None:
        super().__init__(message)
        self.failed = failed
        self.left = list(left)
        self.undo_failures = list(undo_failures)
        self.interrupted = interrupted


def interrupted(exc: BaseException) -> bool:
    """Whether EXC is a plan stopped by a signal: the operator asked the
    command to stop, so an N-of-M loop (``gpu pool delete``, ``gpu device
    release``) does not go on to the next item."""
    return getattr(exc, 'interrupted', None) is not None


class UnderWay(errors.APIError):
    """Nova accepted a move (or its answer was lost), then reading the
    server back failed: the move may be under way. A forward plan's error
    says "under way or unknown", and the re-run waits for the move (a
    migration in progress) instead of starting another."""

    def __init__(self, doing: str, exc: BaseException) -> None:
        super().__init__(
            _('%(doing)s: Nova was asked, then reading the server back '
              'failed (%(error)s): the move may be under way.') % {
                  'doing': doing, 'error': _error_text(exc)})
        self.cause = exc


class NotOurs(errors.Conflict):
    """A step found another writer's object where the plan saw none: it
    did nothing, and its undo must not touch that object."""


class Abandoned(BaseException):
    """A second signal: the running step is given up at once.

    A BaseException, like KeyboardInterrupt, so that no ``except
    Exception`` on the way (the SDK's, keystoneauth's, the journal's own)
    takes it for a failed request.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


# deferred by apply(): Ctrl-C, kill, and the hang-up of a dropped ssh
# session (the process would otherwise die between two steps)
DEFERRED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# a second one of these abandons the running step; SIGHUP never does (a
# dropped terminal can send several, and nobody is there to read why)
ABANDONING = (signal.SIGINT, signal.SIGTERM)


# A handler's own line is written while no other handler's is: a second
# signal can land while the first handler writes its line to stderr (the
# operator's quick second Ctrl-C), and writing into that same buffered
# stream from the nested handler fails ("reentrant call inside
# BufferedWriter", and logging prints its own traceback). The nested
# handler's line waits in _PENDING and is written as the first one's ends.
_SAYING: list[bool] = []
_PENDING: list[tuple[str, str]] = []


def _say(message: str, name: str) -> None:
    """LOG.warning(MESSAGE, NAME) from a signal handler, never nested in
    another handler's write."""
    if _SAYING:
        _PENDING.append((message, name))
        return
    _SAYING.append(True)
    try:
        LOG.warning(message, name)
    finally:
        _SAYING.pop()
        while _PENDING and not _SAYING:
            _say(*_PENDING.pop(0))


@contextlib.contextmanager
def deferred_signals(
    signals: collections.abc.Iterable[int] = DEFERRED, forward: bool = False,
) -> collections.abc.Iterator[list[int]]:
    """Record SIGNALS instead of acting on them; yield the record.

    The first one lets the running step finish (its request is bounded by
    the session's timeouts), then the journal undoes. A second SIGINT or
    SIGTERM raises Abandoned in the running step, whatever it waits for.
    """
    received: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield received
        return
    previous = {}

    def handler(signum, _frame):
        again = [s for s in received if s in ABANDONING]
        received.append(signum)
        name = signal.Signals(signum).name
        if again and signum in ABANDONING:
            _say(_('Received %s again: abandoning the running step.'),
                 name)
            raise Abandoned(signum)
        if forward:
            _say(_('Received %s: finishing the current step, then '
                   'stopping (Ctrl-C again abandons the step at once).'),
                 name)
            return
        _say(_('Received %s: finishing the current step, then undoing '
               '(Ctrl-C again abandons the step at once, and nothing is '
               'undone).'), name)

    for signum in signals:
        previous[signum] = signal.signal(signum, handler)
    try:
        yield received
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)


# the Executor's methods, by declaration: what carries each operation out,
# and what reads it back (see OPERATIONS)
_DOES: dict[type[operations.Operation],
            collections.abc.Callable[..., None]] = {}
_READS_BACK: dict[type[operations.Operation],
                  collections.abc.Callable[..., bool]] = {}


def _registering(
    table: dict[type[operations.Operation],
                collections.abc.Callable[..., typing.Any]],
    declaration: type[operations.Operation],
) -> collections.abc.Callable[[_Method], _Method]:
    def register(method):
        if declaration in table:
            raise TypeError('%s registered twice' % declaration.op)
        table[declaration] = method
        return method
    return register


def executes(
    declaration: type[operations.Operation],
) -> collections.abc.Callable[[_Method], _Method]:
    """Method decorator: the Executor carries DECLARATION out with it
    (called with the step's arguments)."""
    return _registering(_DOES, declaration)


def reads_back(
    declaration: type[operations.Operation],
) -> collections.abc.Callable[[_Method], _Method]:
    """Method decorator: the Executor tells with it whether a step of
    DECLARATION holds (True, False; raises when it cannot read)."""
    return _registering(_READS_BACK, declaration)


class Executor:
    """Runs plan operations through a GpuClient, and reads them back."""

    def __init__(self, client: GpuClient) -> None:
        self.client = client
        self._aggregates: dict[str, sdk_aggregate.Aggregate] | None = None
        # flavors this plan creates: name -> the create's fields, and
        # name -> the ID Nova gave it (what its undo deletes)
        self._creating: dict[str, dict[str, typing.Any]] = {}
        self._created: dict[str, str] = {}
        self.warnings: list[str] = []
        # undo keys left because another writer changed them since
        self.left_to_others: list[str] = []
        # how server moves wait for Nova (tests make them fast)
        self.poll_interval = POLL_INTERVAL
        self.clock = time.monotonic
        self.sleep = time.sleep

    # -- lookups --------------------------------------------------------------

    def aggregate(self, name: str,
                  refresh: bool = False) -> sdk_aggregate.Aggregate | None:
        if self._aggregates is None or refresh or name not in (
                self._aggregates):
            self._aggregates = {
                a.name: a for a in self.client.compute.aggregates()}
        return self._aggregates.get(name)

    def _need_aggregate(self, name):
        agg = self.aggregate(name)
        if agg is None:
            raise errors.NotFound(
                _('Host aggregate %s does not exist (any more).') % name,
                404)
        return agg

    def created_flavor(self, name: str) -> str | None:
        """The ID of flavor NAME that this plan created, or None.

        Known from the create's answer, or (the answer lost) the one
        flavor named NAME with the create's sizes: the plan observed no
        flavor of that name, so a match by exact name among names is the
        one it made. Never looked up as an ID.
        """
        if name not in self._created and name in self._creating:
            fields = self._creating[name]
            found = [f for f in self.client.compute.flavors()
                     if f.get('name') == name
                     and all(f.get(k) == fields[k]
                             for k in ('vcpus', 'ram', 'disk')
                             if k in fields)]
            if len(found) == 1:
                self._created[name] = found[0]['id']
        return self._created.get(name)

    def _flavor_ref(self, flavor_id, name):
        """The ID a flavor step acts on: its own, or (None) the one this
        plan's create returned."""
        if flavor_id is not None:
            return flavor_id
        flavor_id = self.created_flavor(name)
        if flavor_id is None:
            raise errors.NotFound(
                _('Flavor %s was not created by this command, so it is '
                  'left alone.') % name, 404)
        return flavor_id

    def _flavor(self, flavor_id, name):
        """Flavor ``flavor_id`` (dict) if it still has the name ``name``,
        else None (gone, or another flavor)."""
        flavor = self.client.compute.get_flavor(flavor_id)
        if flavor is None or flavor.get('name') != name:
            return None
        return flavor

    def _not_ours(self, what):
        return NotOurs(
            _('%s was made by another writer after this command looked at '
              'the cloud: gpuclient does not take it over. See who made it, '
              'then run the command again.') % what, 409)

    def _unchanged(self, restore, expect, current, label):
        """The keys of RESTORE (undo values) whose value in CURRENT is
        still what the step wrote (EXPECT); the others are someone else's
        now: left, and named."""
        if expect is None:
            return restore
        keep = {}
        for key, value in restore.items():
            now = current.get(key)
            if now == expect.get(key) or now == value:
                keep[key] = value
            else:
                self.left_to_others.append(
                    _('%(key)s of %(label)s (now %(now)s, set by another '
                      'writer)') % {'key': key, 'label': label,
                                    'now': _value_text(now)})
        return keep

    # -- do -------------------------------------------------------------------

    def run(self, step: plan_mod.Step) -> None:
        operation(step.operation).do(self, **step.args)

    @executes(operations.AggregateCreate)
    def _do_aggregate_create(self, name, zone=None, metadata=None):
        # the plan observed no aggregate of that name: one there now (or
        # Nova's 409) is another writer's
        if self.aggregate(name, refresh=True) is not None:
            raise self._not_ours(_('Host aggregate %s') % name)
        try:
            made = self.client.compute.create_aggregate(name, zone)
        except errors.Conflict:
            raise self._not_ours(_('Host aggregate %s') % name) from None
        if getattr(made, 'id', None) is None:
            # an answer that was not Nova's (a proxy page): look it up
            made = self._need_aggregate(name)
        self._aggregates[name] = made
        if metadata:
            self._do_aggregate_metadata(name, metadata)

    @executes(operations.AggregateDelete)
    def _do_aggregate_delete(self, name):
        agg = self.aggregate(name, refresh=True)
        if agg is not None:
            self.client.compute.delete_aggregate(agg)
        self._aggregates.pop(name, None)

    @executes(operations.AggregateMetadata)
    def _do_aggregate_metadata(self, name, metadata, expect=None):
        agg = self._need_aggregate(name)
        if expect is not None:
            agg = self.aggregate(name, refresh=True) or agg
            metadata = self._unchanged(
                metadata, expect, agg.metadata or {},
                _('host aggregate %s') % name)
            if not metadata:
                return
        self.client.compute.set_aggregate_metadata(agg, metadata)

    @executes(operations.AggregateAddZone)
    def _do_aggregate_add_zone(self, name, zone):
        agg = self._need_aggregate(name)
        self.client.compute.set_aggregate_metadata(
            agg, {plan_mod.ZONE_KEY: zone})

    @executes(operations.AggregateAddHost)
    def _do_aggregate_add_host(self, name, host, providers=()):
        agg = self._need_aggregate(name)
        try:
            self.client.compute.add_host(agg, host)
        except errors.Conflict:
            if host not in (self.aggregate(name, True).hosts or []):
                raise
            raise self._not_ours(_('Host %(host)s in aggregate %(name)s')
                                 % {'host': host, 'name': name}) from None
        # Nova mirrors the host into the Placement aggregate (which
        # isolation and project limits rely on) but only logs it when
        # that loses a race: finish the mirror, as "nova-manage placement
        # sync_aggregates" would
        self._mirror(agg, providers, add=True)

    @executes(operations.AggregateRemoveHost)
    def _do_aggregate_remove_host(self, name, host, providers=()):
        agg = self._need_aggregate(name)
        try:
            self.client.compute.remove_host(agg, host)
        except errors.NotFound:
            agg = self.aggregate(name, True)
            if agg is not None and host in (agg.hosts or []):
                raise
        # Nova unmirrors only the host's first node
        self._mirror(agg, providers, add=False)

    def _mirror(self, agg, providers, add):
        uuid = getattr(agg, 'uuid', None)
        if not uuid:
            return
        change = {'add' if add else 'remove': [uuid]}
        for provider in providers:
            self.client.placement.update_aggregates(provider, **change)

    def _mirrored(self, agg, providers):
        """The Placement aggregates of ``providers`` that hold ``agg``."""
        uuid = getattr(agg, 'uuid', None)
        return [p for p in providers
                if uuid in self.client.placement.aggregates(p)[0]]

    @executes(operations.TraitCreate)
    def _do_trait_create(self, trait):
        self.client.placement.create_trait(trait)

    @executes(operations.TraitDelete)
    def _do_trait_delete(self, trait):
        if not self.client.placement.delete_trait(trait):
            if not self.client.placement.providers_with_trait(trait):
                raise errors.Conflict(
                    _('Placement refused to delete trait %s although no '
                      'resource provider has it.') % trait, 409)
            self.warnings.append(
                _('Trait %s is still on resource providers that gpuclient '
                  'did not tag, so it was kept.') % trait)

    @executes(operations.ProviderAddTraits)
    def _do_provider_add_traits(self, uuid, traits, label=None):
        self.client.placement.update_traits(uuid, add=traits)

    @executes(operations.ProviderRemoveTraits)
    def _do_provider_remove_traits(self, uuid, traits, label=None):
        self.client.placement.update_traits(uuid, remove=traits)

    @executes(operations.FlavorCreate)
    def _do_flavor_create(self, name, fields):
        self._creating[name] = fields
        flavor = self.client.compute.create_flavor(name=name, **fields)
        self._created[name] = flavor['id']

    @executes(operations.FlavorDelete)
    def _do_flavor_delete(self, name, flavor_id=None):
        try:
            flavor_id = self._flavor_ref(flavor_id, name)
        except errors.NotFound:
            return  # a create that did not happen: nothing to delete
        try:
            self.client.compute.delete_flavor(flavor_id)
        except errors.NotFound:
            pass
        if self._created.get(name) == flavor_id:
            del self._created[name]
            self._creating.pop(name, None)

    @executes(operations.FlavorDescription)
    def _do_flavor_description(self, name, description,
                               flavor_id=None, expect=None):
        flavor_id = self._flavor_ref(flavor_id, name)
        if expect is not None:
            flavor = self._flavor(flavor_id, name) or {}
            if not self._unchanged(
                    {'description': description}, expect,
                    {'description': flavor.get('description') or None},
                    _('flavor %s') % name):
                return
        self.client.compute.update_flavor_description(flavor_id,
                                                      description)

    @executes(operations.FlavorSpecs)
    def _do_flavor_specs(self, name, flavor_id=None, specs_set=None,
                         unset=(), expect=None):
        flavor_id = self._flavor_ref(flavor_id, name)
        if expect is not None:
            flavor = self._flavor(flavor_id, name)
            current = (flavor or {}).get('extra_specs') or {}
            label = _('flavor %s') % name
            specs_set = self._unchanged(specs_set or {}, expect, current,
                                        label)
            unset = list(self._unchanged(dict.fromkeys(unset), expect,
                                         current, label))
        if specs_set:
            self.client.compute.set_flavor_extra_specs(flavor_id, specs_set)
        for key in unset:
            self.client.compute.delete_flavor_extra_spec(flavor_id, key)

    @executes(operations.FlavorAddAccess)
    def _do_flavor_add_access(self, name, project, flavor_id=None):
        flavor_id = self._flavor_ref(flavor_id, name)
        try:
            self.client.compute.add_flavor_access(flavor_id, project)
        except errors.Conflict:
            if project not in self.client.compute.flavor_access(flavor_id):
                raise
            raise self._not_ours(
                _('Access of project %(project)s to flavor %(name)s')
                % {'project': project, 'name': name}) from None

    @executes(operations.FlavorRemoveAccess)
    def _do_flavor_remove_access(self, name, project,
                                 flavor_id=None):
        flavor_id = self._flavor_ref(flavor_id, name)
        try:
            self.client.compute.remove_flavor_access(flavor_id, project)
        except errors.NotFound:
            if project in self.client.compute.flavor_access(flavor_id):
                raise

    @executes(operations.ImageUpdate)
    def _do_image_update(self, image_id, name, changes,
                         expect=None):
        # the image the plan resolved, by its ID: never one named like it
        image = self.client.image.find_image(image_id, by_name=False)
        changes = self._unchanged(changes, expect, image,
                                  _('image %s') % name)
        if changes:
            self.client.image.update_properties(image, changes)

    def limit(self, project: str | None,
              name: str) -> model.RegisteredLimit | None:
        """{'id', 'limit', 'description'} of Keystone limit NAME of
        PROJECT (None: the registered limit), or None."""
        limits = self.client.limits
        if project is None:
            return limits.registered().get(name)
        for item in limits.limits(project):
            if (item['project_id'] == project
                    and item['resource_name'] == name):
                return {'id': item['id'], 'limit': item['resource_limit'],
                        'description': item.get('description')}
        return None

    @executes(operations.LimitSet)
    def _do_limit_set(self, project, name, limit):
        have = self.limit(project, name)
        limits = self.client.limits
        if have is None and project is None:
            limits.create_registered(name, limit)
        elif have is None:
            limits.create_limit(project, name, limit)
        elif have['limit'] != limit and project is None:
            limits.update_registered(have['id'], limit)
        elif have['limit'] != limit:
            limits.update_limit(have['id'], limit)

    @executes(operations.LimitDescribe)
    def _do_limit_describe(self, project, name, description, expect=None):
        have = self.limit(project, name)
        if have is None:
            raise errors.NotFound(
                _('No %(what)s %(name)s to describe: it was deleted since '
                  'the plan.') % {'what': _('registered limit') if project
                                  is None else _('limit'), 'name': name},
                404)
        if expect is not None and not self._unchanged(
                {'description': description}, expect,
                {'description': have.get('description') or None},
                _('limit %s') % name):
            return
        if project is None:
            self.client.limits.update_registered(have['id'],
                                                 description=description)
        else:
            self.client.limits.update_limit(have['id'],
                                            description=description)

    @executes(operations.LimitDelete)
    def _do_limit_delete(self, project, name):
        have = self.limit(project, name)
        if have is not None and project is None:
            self.client.limits.delete_registered(have['id'])
        elif have is not None:
            self.client.limits.delete_limit(have['id'])

    # -- compute services (cordon) -----------------------------------------

    def service(self, service_id: str) -> model.Service:
        """The compute service SERVICE_ID as a dict, read now."""
        for service in self.client.compute.compute_services():
            if service['id'] == service_id:
                return service
        raise errors.NotFound(
            _('Compute service %s does not exist (any more).') % service_id,
            404)

    @executes(operations.ServiceDisable)
    def _do_service_disable(self, host, service_id, reason):
        self.client.compute.set_service_status(service_id, False, reason)

    @executes(operations.ServiceEnable)
    def _do_service_enable(self, host, service_id):
        self.client.compute.set_service_status(service_id, True)

    @reads_back(operations.ServiceDisable)
    def _holds_service_disable(self, host, service_id, reason):
        service = self.service(service_id)
        return (service.get('status') == 'disabled'
                and service.get('disabled_reason') == reason)

    @reads_back(operations.ServiceEnable)
    def _holds_service_enable(self, host, service_id):
        return self.service(service_id).get('status') == 'enabled'

    # -- one-time-use devices (gpu device release) --------------------------

    @executes(operations.DeviceRelease)
    def _do_device_release(self, uuid, name, resource_class):
        self.client.placement.release_reserved(uuid, resource_class)

    @reads_back(operations.DeviceRelease)
    def _holds_device_release(self, uuid, name, resource_class):
        record = self.client.placement.inventories(uuid).get(resource_class)
        return record is not None and not record.get('reserved')

    # -- server moves (drain) ---------------------------------------------

    def _server(self, server_id, name):
        server = self.client.compute.get_server(server_id)
        if server is None:
            raise errors.NotFound(
                _('Server %s is gone (deleted while the drain ran): '
                  'nothing to move.') % _label(server_id, name), 404)
        return server

    def _wait_server(self, server_id, name, timeout, done, doing,
                     asked=False):
        """Poll the server until DONE(server) is true; TimedOut after
        TIMEOUT seconds, saying what it was DOING. ASKED: Nova was asked
        for it, so a read that fails (the server not gone) is UnderWay."""
        deadline = self.clock() + (timeout or DEFAULT_MOVE_TIMEOUT)
        while True:
            try:
                server = self._server(server_id, name)
            except errors.NotFound:
                raise
            except Exception as exc:  # noqa: BLE001 - the move may go on
                if not asked:
                    raise
                raise UnderWay(doing, exc) from exc
            outcome = done(server)
            if outcome:
                return server
            if self.clock() >= deadline:
                raise errors.TimedOut(
                    _('%(doing)s: still not done after %(timeout)d s (status '
                      '%(status)s, task %(task)s on %(host)s). Nova may '
                      'still finish it: see "openstack server migration '
                      'list --server %(id)s", then run the drain again.')
                    % {'doing': doing, 'timeout': timeout or
                       DEFAULT_MOVE_TIMEOUT, 'status': server.get('status'),
                       'task': server.get(TASK) or _('none'),
                       'host': server.get(HOST), 'id': server_id})
            self.sleep(self.poll_interval)

    def _stopped(self, server, source, label, doing):
        """Raise when Nova is done with the server without moving it: in
        ERROR, or back on SOURCE with no task (a failed or refused move,
        rolled back)."""
        status = (server.get('status') or '').upper()
        if status == 'ERROR':
            fault = (server.get('fault') or {}).get('message')
            raise errors.APIError(
                _('%(doing)s: Nova put server %(server)s in ERROR%(fault)s. '
                  'See "openstack server event list %(id)s".')
                % {'doing': doing, 'server': label, 'id': server['id'],
                   'fault': ' (%s)' % fault if fault else ''})
        if server.get(HOST) == source and not server.get(TASK) and (
                status not in ('VERIFY_RESIZE', 'MIGRATING', 'RESIZE')):
            raise errors.APIError(
                _('%(doing)s: Nova left server %(server)s on %(source)s '
                  '(the move failed or was refused and rolled back). See '
                  '"openstack server event list %(id)s" and "openstack '
                  'server migration list --server %(id)s".')
                % {'doing': doing, 'server': label, 'source': source,
                   'id': server['id']})

    def _check_allocations(self, server_id, name, classes, providers,
                           where, gpus=None):
        """The GPU CLASSES the server holds in Placement are all in the
        tree of WHERE ('destination', or None: none at all, shelved) and
        none in the source's. More units than GPUS (what it held before)
        is said as a warning: Nova allocated more on the destination."""
        held = self.client.placement.consumer_allocations(server_id)
        if not classes:
            self._check_plain_allocations(server_id, name, held, providers,
                                          where)
            return
        units = sum(res.get(c) or 0 for res in held.values()
                    for c in classes)
        if where and gpus and units > gpus:
            self.warnings.append(
                _('Nova allocated %(units)d x %(classes)s to server '
                  '%(server)s on its destination, where it held %(gpus)d '
                  'before the move: the extra units are not free for other '
                  'servers. See "openstack resource provider allocation '
                  'show %(id)s".') % {
                    'units': units, 'classes': '/'.join(classes),
                    'server': _label(server_id, name), 'gpus': gpus,
                    'id': server_id})
        on = {rp for rp, res in held.items()
              if any(res.get(c) for c in classes)}
        source = set((providers or {}).get('source') or ())
        wanted = set((providers or {}).get(where) or ()) if where else set()
        stray = on & source if where else on
        missing = not on if where else False
        if stray or missing or (where and on - wanted):
            raise errors.APIError(
                _('Server %(server)s moved, but its %(classes)s allocation '
                  'in Placement is %(on)s, not on %(where)s. Check it with '
                  '"openstack resource provider allocation show %(id)s".')
                % {'server': _label(server_id, name),
                   'classes': '/'.join(classes) or 'GPU',
                   'on': ', '.join(sorted(on)) or _('nowhere'),
                   'where': _('the destination') if where
                   else _('no provider (offloaded)'), 'id': server_id})

    def _check_plain_allocations(self, server_id, name, held, providers,
                                 where):
        """A server that holds no GPU: whatever it holds (VCPU, memory,
        disk...) is off the source's tree, and on the destination's when
        it moved (WHERE); a sharing provider outside both trees (shared
        storage) is neither."""
        on = {rp for rp, res in held.items() if any(res.values())}
        source = set((providers or {}).get('source') or ())
        wanted = set((providers or {}).get(where) or ()) if where else set()
        stray = on & source
        if stray or (where and wanted and not on & wanted):
            raise errors.APIError(
                _('Server %(server)s moved, but its allocations in '
                  'Placement are on %(on)s, not on %(where)s. Check them '
                  'with "openstack resource provider allocation show '
                  '%(id)s".')
                % {'server': _label(server_id, name),
                   'on': ', '.join(sorted(on)) or _('nothing'),
                   'where': _('the destination') if where
                   else _('no provider (offloaded)'), 'id': server_id})

    def _act(self, server_id, action, body=None):
        """Send a server action. A refusal (4xx) is raised; any other
        failure is returned: the answer may be lost while Nova took the
        action (its API sets the server's task before answering), so the
        caller waits and judges by what the server does."""
        try:
            self.client.compute.server_action(server_id, action, body)
        except errors.APIError as exc:
            if refused(exc):
                raise
            LOG.debug('%s of %s: %s; judging by the server', action,
                      server_id, exc)
            return exc
        return None

    def _act_and_wait(self, server_id, name, action, body, timeout, done,
                      source, doing):
        """``_act``, then wait until DONE(server); a server Nova left where
        it was (or put in ERROR) raises, with the lost request's error
        when there was one."""
        lost = self._act(server_id, action, body)
        return self._wait_move(server_id, name, timeout, done, source,
                               doing, lost)

    def _wait_move(self, server_id, name, timeout, done, source, doing,
                   lost=None):
        """Wait for a move Nova was asked for (LOST: the error of a request
        whose answer was lost): until DONE(server); a server Nova left
        where it was (or in ERROR) raises, and a read that fails raises
        UnderWay (the move may go on)."""
        label = _label(server_id, name)

        def finished(server):
            if done(server):
                return True
            try:
                self._stopped(server, source, label, doing)
            except errors.APIError:
                if lost is not None:
                    raise lost from None
                raise
            return False
        return self._wait_server(server_id, name, timeout, finished, doing,
                                 asked=True)

    def _on(self, server, host, statuses):
        return (server.get(HOST) == host and not server.get(TASK)
                and (server.get('status') or '').upper() in statuses)

    @executes(operations.ServerLiveMigrate)
    def _do_server_live_migrate(self, server_id, name, source, host,
                                classes, providers, timeout, gpus=None,
                                under_way=False):
        label = _label(server_id, name)
        doing = _('Live migration of server %s') % label
        server = self._server(server_id, name)
        if not self._on(server, host, LIVE_DONE):
            def done(server):
                return self._on(server, host, LIVE_DONE)
            if under_way:
                # an earlier drain's move Nova still runs: wait for it
                self._wait_move(server_id, name, timeout, done, source,
                                doing)
            else:
                self._act_and_wait(
                    server_id, name, 'os-migrateLive',
                    {'host': host, 'block_migration': 'auto'}, timeout,
                    done, source, doing)
        self._check_allocations(server_id, name, classes, providers,
                                'destination', gpus)

    @executes(operations.ServerMigrate)
    def _do_server_migrate(self, server_id, name, source, host,
                           classes, providers, timeout, confirm=True,
                           gpus=None, under_way=False):
        label = _label(server_id, name)
        doing = _('Cold migration of server %s') % label
        server = self._server(server_id, name)
        if not (self._on(server, host, COLD_DONE)
                or self._on(server, host, ('VERIFY_RESIZE',))):
            def done(server):
                return self._on(server, host, ('VERIFY_RESIZE',) + COLD_DONE)
            if under_way:
                # an earlier drain's move Nova still runs: wait for it
                server = self._wait_move(server_id, name, timeout, done,
                                         source, doing)
            else:
                server = self._act_and_wait(
                    server_id, name, 'migrate', {'host': host}, timeout, done,
                    source, doing)
        if confirm and (server.get('status') or '').upper() == (
                'VERIFY_RESIZE'):
            self._do_server_confirm(server_id, name, source, host, classes,
                                    providers, timeout, gpus)
            return
        self._check_allocations(server_id, name, classes, providers,
                                'destination', gpus)

    @executes(operations.ServerConfirm)
    def _do_server_confirm(self, server_id, name, source, host,
                           classes, providers, timeout, gpus=None):
        label = _label(server_id, name)
        doing = _('Confirming the migration of server %s') % label
        server = self._server(server_id, name)
        if not self._on(server, host, COLD_DONE):
            if (server.get('status') or '').upper() == 'VERIFY_RESIZE' and (
                    self._act(server_id, 'confirmResize') is not None):
                # the answer was lost, and a confirmation under way looks
                # like one not sent (VERIFY_RESIZE until it ends): send it
                # again; Nova refuses it (no migration waits for one) when
                # the first one got through, and the wait below tells
                try:
                    self._act(server_id, 'confirmResize')
                except errors.APIError as exc:
                    if not refused(exc):
                        raise
            self._wait_server(
                server_id, name, timeout,
                lambda server: self._on(server, host, COLD_DONE), doing,
                asked=True)
        self._check_allocations(server_id, name, classes, providers,
                                'destination', gpus)

    @executes(operations.ServerShelve)
    def _do_server_shelve(self, server_id, name, source, classes,
                          providers, timeout):
        label = _label(server_id, name)
        doing = _('Shelving server %s') % label
        server = self._server(server_id, name)
        status = (server.get('status') or '').upper()
        if status not in ('SHELVED', 'SHELVED_OFFLOADED'):
            server = self._act_and_wait(
                server_id, name, 'shelve', None, timeout,
                lambda server: (server.get('status') or '').upper() in (
                    'SHELVED', 'SHELVED_OFFLOADED') and not server.get(TASK),
                source, doing)
        if (server.get('status') or '').upper() == 'SHELVED':
            # [DEFAULT] shelved_offload_time > 0: offload now, which frees
            # the host's GPUs
            self._act(server_id, 'shelveOffload')
            self._wait_server(
                server_id, name, timeout,
                lambda server: (server.get('status') or '').upper() == (
                    'SHELVED_OFFLOADED') and not server.get(TASK), doing)
        self._check_allocations(server_id, name, classes, providers, None)

    # -- read back --------------------------------------------------------

    def holds(self, step: plan_mod.Step) -> bool:
        """True when the cloud shows the step's effect, False when not."""
        return operation(step.operation).holds(self, **step.args)

    @reads_back(operations.AggregateCreate)
    def _holds_aggregate_create(self, name, zone=None, metadata=None):
        agg = self.aggregate(name, refresh=True)
        return agg is not None and all(
            (agg.metadata or {}).get(k) == v
            for k, v in (metadata or {}).items())

    @reads_back(operations.AggregateDelete)
    def _holds_aggregate_delete(self, name):
        return self.aggregate(name, refresh=True) is None

    @reads_back(operations.AggregateMetadata)
    def _holds_aggregate_metadata(self, name, metadata, expect=None):
        agg = self.aggregate(name, refresh=True)
        if agg is None:
            return False
        return _holds_values(agg.metadata or {}, metadata, expect)

    @reads_back(operations.AggregateAddZone)
    def _holds_aggregate_add_zone(self, name, zone):
        agg = self.aggregate(name, refresh=True)
        return agg is not None and (
            (agg.metadata or {}).get(plan_mod.ZONE_KEY)
            or agg.availability_zone) == zone

    def _membership(self, name, host, providers):
        """(aggregate NAME read anew or None, HOST is in it, the
        Placement aggregates of PROVIDERS that hold it)."""
        agg = self.aggregate(name, refresh=True)
        if agg is None:
            return None, False, []
        return (agg, host in (agg.hosts or []),
                self._mirrored(agg, providers or ()))

    @reads_back(operations.AggregateAddHost)
    def _holds_aggregate_add_host(self, name, host, providers=()):
        agg, member, mirrored = self._membership(name, host, providers)
        if agg is None:
            return False
        return member and len(mirrored) == len(providers or ())

    @reads_back(operations.AggregateRemoveHost)
    def _holds_aggregate_remove_host(self, name, host, providers=()):
        agg, member, mirrored = self._membership(name, host, providers)
        if agg is None:
            return False
        return not member and not mirrored

    def _trait_exists(self, trait):
        return bool(self.client.placement.existing_traits({trait}))

    @reads_back(operations.TraitCreate)
    def _holds_trait_create(self, trait):
        return self._trait_exists(trait)

    @reads_back(operations.TraitDelete)
    def _holds_trait_delete(self, trait):
        return not self._trait_exists(trait)

    def _provider_traits(self, uuid):
        return set(self.client.placement.traits(uuid)[0])

    @reads_back(operations.ProviderAddTraits)
    def _holds_provider_add_traits(self, uuid, traits, label=None):
        return set(traits) <= self._provider_traits(uuid)

    @reads_back(operations.ProviderRemoveTraits)
    def _holds_provider_remove_traits(self, uuid, traits, label=None):
        return not (set(traits) & self._provider_traits(uuid))

    @reads_back(operations.FlavorCreate)
    def _holds_flavor_create(self, name, fields):
        flavor_id = self.created_flavor(name)
        return flavor_id is not None and self._flavor(
            flavor_id, name) is not None

    @reads_back(operations.FlavorDelete)
    def _holds_flavor_delete(self, name, flavor_id=None):
        try:
            flavor_id = self._flavor_ref(flavor_id, name)
        except errors.NotFound:
            # a flavor this plan never created: nothing to delete
            return True
        return self.client.compute.get_flavor(flavor_id) is None

    def _named_flavor(self, flavor_id, name):
        """(ID, flavor) of flavor ``flavor_id`` (None: the one this plan
        created) if it is there with the name NAME, else (ID, None)."""
        try:
            flavor_id = self._flavor_ref(flavor_id, name)
        except errors.NotFound:
            return None, None
        return flavor_id, self._flavor(flavor_id, name)

    @reads_back(operations.FlavorDescription)
    def _holds_flavor_description(self, name, description,
                                  flavor_id=None, expect=None):
        _flavor_id, flavor = self._named_flavor(flavor_id, name)
        if flavor is None:
            return False
        return _holds_values(
            {'description': flavor.get('description') or None},
            {'description': description}, expect)

    @reads_back(operations.FlavorSpecs)
    def _holds_flavor_specs(self, name, specs_set,
                            unset, flavor_id=None, expect=None):
        _flavor_id, flavor = self._named_flavor(flavor_id, name)
        if flavor is None:
            return False
        specs = flavor.get('extra_specs') or {}
        wanted = dict(specs_set or {}, **dict.fromkeys(unset))
        return _holds_values(specs, wanted, expect)

    def _access(self, flavor_id, name):
        """The projects with access to the flavor, or None when it is
        not there (with that name)."""
        flavor_id, flavor = self._named_flavor(flavor_id, name)
        if flavor is None:
            return None
        return self.client.compute.flavor_access(flavor_id)

    @reads_back(operations.FlavorAddAccess)
    def _holds_flavor_add_access(self, name, project,
                                 flavor_id=None):
        access = self._access(flavor_id, name)
        return access is not None and project in access

    @reads_back(operations.FlavorRemoveAccess)
    def _holds_flavor_remove_access(self, name, project,
                                    flavor_id=None):
        access = self._access(flavor_id, name)
        return access is not None and project not in access

    @reads_back(operations.ImageUpdate)
    def _holds_image_update(self, image_id, name, changes,
                            expect=None):
        try:
            image = self.client.image.find_image(image_id, by_name=False)
        except errors.NotFound:
            return False
        return _holds_values(image, changes, expect)

    @reads_back(operations.LimitSet)
    def _holds_limit_set(self, project, name, limit):
        have = self.limit(project, name)
        return have is not None and have['limit'] == limit

    @reads_back(operations.LimitDescribe)
    def _holds_limit_describe(self, project, name, description,
                              expect=None):
        have = self.limit(project, name)
        return have is not None and _holds_values(
            {'description': have.get('description') or None},
            {'description': description}, expect)

    @reads_back(operations.LimitDelete)
    def _holds_limit_delete(self, project, name):
        return self.limit(project, name) is None

    def _moved(self, server_id, name, classes, providers, where):
        try:
            self._check_allocations(server_id, name, classes, providers, where)
        except errors.APIError:
            return False
        return True

    @reads_back(operations.ServerLiveMigrate)
    def _holds_server_live_migrate(self, server_id, name, source, host,
                                   classes, providers, timeout, gpus=None,
                                   under_way=False):
        return self._on(self._server(server_id, name), host, LIVE_DONE) and (
            self._moved(server_id, name, classes, providers, 'destination'))

    @reads_back(operations.ServerMigrate)
    def _holds_server_migrate(self, server_id, name, source, host,
                              classes, providers, timeout, confirm=True,
                              gpus=None, under_way=False):
        wanted = COLD_DONE if confirm else ('VERIFY_RESIZE',) + COLD_DONE
        return self._on(self._server(server_id, name), host, wanted) and (
            self._moved(server_id, name, classes, providers, 'destination'))

    @reads_back(operations.ServerConfirm)
    def _holds_server_confirm(self, server_id, name, source, host,
                              classes, providers, timeout, gpus=None):
        return self._on(self._server(server_id, name), host, COLD_DONE) and (
            self._moved(server_id, name, classes, providers, 'destination'))

    @reads_back(operations.ServerShelve)
    def _holds_server_shelve(self, server_id, name, source, classes,
                             providers, timeout):
        server = self._server(server_id, name)
        return ((server.get('status') or '').upper() == 'SHELVED_OFFLOADED'
                and not server.get(TASK)
                and self._moved(server_id, name, classes, providers, None))

    def try_holds(self, step: plan_mod.Step) -> bool | None:
        """holds(), or None when the cloud cannot be read."""
        try:
            return self.holds(step)
        except Exception as exc:  # noqa: BLE001 - reported as unknown
            LOG.debug('cannot read back %s: %s', step.what, exc)
            return None


class Operation(collections.namedtuple('Operation', 'do holds')):
    """How the Executor runs one declared operation (its inverses and
    effect are in the declaration): ``do(executor, **args)`` carries it
    out, ``holds(executor, **args)`` reads back whether the cloud shows
    it."""

    __slots__ = ()


def _table() -> dict[type[operations.Operation], Operation]:
    """{declaration: Operation} for every declaration of
    ``rules.operations``; an import error when one lacks its do or its
    read-back, or a method is registered for no declaration."""
    declared = set(operations.DECLARED)
    missing = sorted(d.op for d in declared
                     if d not in _DOES or d not in _READS_BACK)
    stray = sorted(getattr(d, 'op', repr(d))
                   for d in (set(_DOES) | set(_READS_BACK)) - declared)
    if missing or stray:
        raise ImportError(
            'journal: operations without do or read-back: %s; registered '
            'for no declaration: %s' % (missing, stray))
    return {d: Operation(do=_DOES[d], holds=_READS_BACK[d])
            for d in operations.DECLARED}


OPERATIONS = _table()


def operation(
    operation_or_declaration: operations.Operation
    | type[operations.Operation],
) -> Operation:
    """The Operation of a declaration (or of an instance of one)."""
    declaration = operation_or_declaration
    if not isinstance(declaration, type):
        declaration = type(declaration)
    try:
        return OPERATIONS[declaration]
    except KeyError:
        raise ValueError(declaration) from None


def _holds_values(
    current: collections.abc.Mapping[str, typing.Any],
    wanted: collections.abc.Mapping[str, typing.Any],
    expect: collections.abc.Mapping[str, typing.Any] | None = None,
) -> bool:
    """CURRENT holds WANTED ({key: value, None: absent}); with EXPECT (an
    undo), a key that holds neither the step's value nor the undo's is
    another writer's and left: it counts as held."""
    return all(current.get(k) == v
               or (expect is not None and current.get(k) != expect.get(k))
               for k, v in wanted.items())


def _value_text(value):
    return _('removed') if value is None else value


def refused(exc: BaseException) -> bool:
    """The service answered and refused the write (4xx): it did not
    happen, so reading the cloud back would only find another writer's."""
    status = getattr(exc, 'status', None)
    return (isinstance(exc, errors.APIError) and status is not None
            and 400 <= status < 500)


def _error_text(exc: BaseException) -> str:
    return str(exc).strip().rstrip('.') or exc.__class__.__name__


class _Progress:
    """Where apply() is: what a second signal leaves behind."""

    def __init__(self):
        self.index = None  # the step running (or last run)
        self.step = None
        self.done = []  # steps in effect
        self.unknown = None  # a failed step that may have taken effect
        self.undoing = False
        self.todo = []  # what _unwind has to undo, newest first
        self.undone = []
        self.failure = None


def run(client: GpuClient, plan: plan_mod.Plan, dry_run: bool = False,
        on_step: OnStep | None = None) -> Executor | None:
    """What a write command does with its plan: nothing when the plan is
    empty or for a dry run (returns None), else ``apply`` it (returns
    the Executor, for its ``warnings`` and the flavors it created)."""
    if not plan or dry_run:
        return None
    return apply(client, plan, on_step=on_step)


def finish(client: GpuClient, plan: plan_mod.Plan, dry_run: bool = False,
           on_step: OnStep | None = None) -> plan_mod.Plan:
    """``run`` as a write command does it: first refuse a plan whose
    writes (or undos) Nova or Placement would refuse part-way, nothing
    written; log the plan's warnings, then the journal's. Returns the
    plan."""
    nova_rules.check_plan(plan)
    for warning in plan.warnings:
        LOG.warning(warning)
    executor = run(client, plan, dry_run=dry_run, on_step=on_step)
    for warning in executor.warnings if executor else ():
        LOG.warning(warning)
    return plan


def apply(client: GpuClient, plan: plan_mod.Plan,
          on_step: OnStep | None = None,
          executor: Executor | None = None) -> Executor:
    """Apply ``plan``; return the Executor (its ``warnings``).

    ``on_step(index, step)`` is called before each step (tests use it to
    interrupt at a given step). A second SIGINT or SIGTERM (see
    deferred_signals) abandons the running step or the undoing at once and
    raises an ApplyError naming what may be left.
    """
    executor = executor or Executor(client)
    progress = _Progress()
    with deferred_signals(forward=getattr(plan, 'forward', False)) as (
            received):
        try:
            return _apply(executor, plan, on_step, received, progress)
        except Abandoned as exc:
            error = _abandoned_error(plan, progress, exc.signum)
    raise error


def _apply(executor, plan, on_step, received, progress):
    done = progress.done
    for index, step in enumerate(plan.steps):
        if received:
            progress.failure = (index, step, Interrupted(received[0]), False)
            break
        progress.index, progress.step = index, step
        if on_step is not None:
            on_step(index, step)
        LOG.debug('step %d/%d: %s', index + 1, len(plan), step.what)
        try:
            executor.run(step)
        except Exception as exc:  # noqa: BLE001 - any failure undoes
            held = False if refused(exc) else executor.try_holds(step)
            if held:
                LOG.debug('%s failed (%s) but took effect',
                          step.what, exc)
                done.append(step)
                continue
            if not isinstance(exc, NotOurs) and (
                    held is None or step.operation.several_writes()
                    or isinstance(exc, errors.TimedOut)):
                # maybe (partly) done, or a timed-out write the service may
                # still carry out after the read-back: undo it too
                progress.unknown = step
            progress.failure = (index, step, exc, True)
            break
        done.append(step)
    else:
        if received and len(plan.steps):
            LOG.warning(_('The last step had already started: the '
                          'command completed.'))
        return executor
    progress.undoing = True
    undone, left, kept, undo_failure = _unwind(
        executor, done, progress.unknown, progress)
    raise _failure_error(plan, progress.failure, done, left, kept,
                         undo_failure, executor.left_to_others)


def _abandoned_error(plan, progress, signum):
    """The ApplyError of a second signal: what may be left, by name."""
    values = {'title': plan.title, 'n': len(plan),
              'signal': signal.Signals(signum).name}
    if progress.undoing:
        # the step being undone is among the remaining ones: its inverse
        # may have half happened
        left = [s for s in progress.todo
                if s not in progress.undone and s.inverse is not None]
        kept = [s for s in progress.todo if s.inverse is None]
        head = _('%(title)s failed (%(error)s) and was abandoned while '
                 'undoing, by a second %(signal)s.') % dict(
                     values, error=_error_text(progress.failure[2]))
        unknown = left[:1]
        effect = left[1:] + kept
    elif progress.step is None:
        head = _('%(title)s was abandoned by a second %(signal)s before '
                 'its first step.') % values
        unknown, effect = [], []
    else:
        head = _('%(title)s was abandoned by a second %(signal)s during '
                 'step %(k)d of %(n)d (%(what)s).') % dict(
                     values, k=progress.index + 1, what=progress.step.what)
        # the running step: its request was sent, or not; its answer lost
        unknown = [progress.step]
        effect = list(reversed(progress.done))
    parts = [head, _('Nothing more was undone.')]
    if unknown:
        parts.append(_('Its outcome is unknown, this may or may not have '
                       'happened: %s.') % unknown[0].what)
    if effect:
        parts.append(_('This is in effect: %s.') % '; '.join(
            s.what for s in effect))
    if unknown or effect:
        parts.append(_('Run %s again to finish it from where it '
                       'stopped.') % _rerun(plan))
    else:
        parts.append(_('Nothing had been changed.'))
    LOG.debug('abandoned: %s', ' '.join(parts))
    return ApplyError(' '.join(parts), failed=progress.step,
                      left=effect + unknown, interrupted=signum)


def _unwind(executor, done, unknown, progress=None):
    """Undo newest first; stop at the first undo that fails.

    Stopping there leaves the cloud at a prefix of the plan (plus the
    failed step, maybe), which a re-run of the same command completes.
    Returns (undone, left, kept, undo_failure): ``left`` the steps whose
    effect remains because undoing stopped, ``kept`` the steps that cannot
    be undone, ``undo_failure`` (step, exception) or None.
    """
    undone, kept = [], []
    todo = list(reversed(done))
    if unknown is not None:
        todo.insert(0, unknown)
    if progress is not None:  # for a second signal meanwhile
        progress.todo, undone = todo, progress.undone
    for position, step in enumerate(todo):
        if step.inverse is None:
            kept.append(step)
            continue
        try:
            executor.run(step.inverse)
        except Exception as exc:  # noqa: BLE001 - reported below
            if executor.try_holds(step.inverse):
                undone.append(step)
                continue
            LOG.error(_('Could not undo "%(what)s": %(error)s'),
                      {'what': step.what, 'error': _error_text(exc)})
            left = [s for s in todo[position:] if s.inverse is not None]
            kept += [s for s in todo[position:] if s.inverse is None]
            return undone, left, kept, (step, exc)
        undone.append(step)
    return undone, [], kept, None


def _rerun(plan: plan_mod.Plan) -> str:
    """The command that finishes PLAN, as the operator should type it."""
    return ((plan.rerun if plan.rerun_fixed else None)
            or invocation.invoked_command() or plan.rerun
            or _('the same command'))


def _forward_error(head, plan, step, exc, done, rerun):
    """The ApplyError of a forward plan (server moves): nothing is undone;
    what was done, what may still be under way, and the re-run."""
    parts = []
    if done:
        parts.append(_('Done, and kept (moves are not undone): %s.')
                     % '; '.join(s.what for s in done))
    else:
        parts.append(_('Nothing had been changed.'))
    if isinstance(exc, (errors.TimedOut, UnderWay)):
        parts.append(_('Still under way or unknown: %s.') % step.what)
    elif not isinstance(exc, Interrupted):
        parts.append(_('Not done: %s.') % step.what)
    parts.append(_('Run %s again: it plans from where the servers are '
                   'now and finishes the rest.') % rerun)
    return ApplyError('%s %s' % (head, ' '.join(parts)), failed=step,
                      left=list(done), interrupted=_signum(exc))


def _failure_error(plan, failure, done, left, kept, undo_failure,
                   others=()):
    index, step, exc, _ran = failure
    values = {'title': plan.title, 'k': index + 1, 'n': len(plan),
              'what': step.what, 'error': _error_text(exc)}
    if isinstance(exc, Interrupted):
        head = _('%(title)s was %(error)s after step %(done)d of %(n)d.') % (
            dict(values, done=index))
    else:
        head = _('%(title)s failed at step %(k)d of %(n)d (%(what)s): '
                 '%(error)s.') % values
    rerun = _rerun(plan)
    if getattr(plan, 'forward', False):
        return _forward_error(head, plan, step, exc, done, rerun)
    parts = []
    if others:
        parts.append(_('Left as another writer changed them after this '
                       'command had: %s.') % '; '.join(others))
    if undo_failure is None and not kept:
        if done and others:
            parts.append(_('Everything else it had done was undone (%d '
                           'step(s)).') % len(done))
        elif done:
            parts.append(_('Everything it had done was undone (%d '
                           'step(s)): the cloud is as it was.') % len(done))
        else:
            parts.append(_('Nothing had been changed.'))
        parts.append(_('Fix the cause and run %s again.') % rerun)
    else:
        if kept:
            parts.append(_('Not undone (cannot be): %s.') % '; '.join(
                s.what for s in reversed(kept)))
        if undo_failure is not None:
            failed, error = undo_failure
            parts.append(
                _('Undoing failed too (could not undo "%(what)s": '
                  '%(error)s), so this is left: %(left)s.')
                % {'what': failed.what, 'error': _error_text(error),
                   'left': '; '.join(s.what for s in reversed(left))})
        parts.append(_('Run %s again to finish it from where it '
                       'stopped.') % rerun)
    return ApplyError('%s %s' % (head, ' '.join(parts)), failed=step,
                      left=left + kept,
                      undo_failures=[undo_failure] if undo_failure else [],
                      interrupted=_signum(exc))


def _signum(exc: BaseException) -> int | None:
    """The signal of an Interrupted step's EXC, else None."""
    return exc.signum if isinstance(exc, Interrupted) else None
