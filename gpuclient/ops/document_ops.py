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

"""``gpu export``, ``gpu diff`` and ``gpu apply``: the cloud as a document.

One read into one ``model.Cloud`` (``snapshot.read`` without Placement:
aggregates, hypervisors, services, flavors and, when wanted, images;
``snapshot.read_access``: the access lists of the private GPU flavors;
``snapshot.read_limits``: Keystone's limits), shaped by
``gpuclient.rules.document``. ``diff``
reads the document's file, checks it, resolves its projects, hosts and
images against the same read, and asks ``document.diff``. ``apply`` reads
Placement too, plans with ``gpuclient.rules.document_plan`` and applies
with the journal.
"""

from __future__ import annotations

import collections.abc
import logging
import os
import tempfile
import typing

from osc_lib import exceptions

from gpuclient.i18n import _
from gpuclient.ops import journal
from gpuclient.ops import pool_ops
from gpuclient.ops import snapshot
from gpuclient.rules import document
from gpuclient.rules import document_plan
from gpuclient.rules import model
from gpuclient.rules import pools as pools_mod
from gpuclient.rules.scheduler import manager

if typing.TYPE_CHECKING:
    from gpuclient.cloud.client import GpuClient
    from gpuclient.rules import plan as plan_mod

    # {path in the document: its line} (document.load)
    _Lines: typing.TypeAlias = dict[tuple[str | int, ...], int]

LOG = logging.getLogger(__name__)


def observe(
    client: GpuClient,
    pool_names: collections.abc.Sequence[str] | None = None,
    with_images: bool = True,
    placement_classes: collections.abc.Iterable[str] | None = None,
    wanted: dict[str, typing.Any] | None = None,
) -> tuple[dict[str, typing.Any], model.Cloud, document.Scope | None]:
    """One read of the GPU layer (see ``read``): (the canonical document
    of the cloud, the model of the cloud as read: a ``model.Cloud`` with
    the access lists of the private GPU flavors and Keystone's limits,
    and for ``--pool`` the ``document.Scope``; None: the whole GPU
    layer). With PLACEMENT_CLASSES (GPU classes besides those of the
    pools) the model holds Placement too, with the providers' traits
    (what ``gpu apply`` plans from).

    With WANTED (a checked document: ``gpu diff`` and ``gpu apply``),
    POOL_NAMES is a scope (``document.scope``): a pool of the document
    need not be in the cloud yet, and the quotas read are those of the
    scope's classes."""
    listed = snapshot.read_aggregates(client, warn=False)
    found = listed.pools
    pool_names = pool_names and pools_mod.pool_names(found, pool_names, False)
    scope = None
    if pool_names and wanted is not None:
        scope = document.scope(pool_names, found, wanted)
    else:
        for name in pool_names or ():
            if name not in found:
                raise pools_mod.unknown_pool(name, found)
    cloud = snapshot.read(client, placement_classes or (), with_flavors=True,
                          with_placement=placement_classes is not None,
                          with_images=with_images,
                          aggregates=listed.aggregates)
    snapshot.warn_problems(cloud.problems)
    snapshot.read_access(client, cloud, set(pool_names or cloud.pools))
    snapshot.read_limits(client, cloud)
    doc, notes = document.from_cloud(
        cloud.pools, cloud.flavors, cloud.access, cloud.images,
        cloud.registered, cloud.limits,
        selected=list(pool_names) if pool_names else None,
        classes=scope.classes if scope is not None else None)
    for note in notes:
        LOG.warning(note)
    return doc, cloud, scope


def read(
    client: GpuClient, pool_names: collections.abc.Sequence[str] | None = None,
    with_images: bool = True,
) -> tuple[dict[str, typing.Any], model.Cloud]:
    """(canonical document of the cloud, the snapshot's Cloud).

    POOL_NAMES (None: every pool) are checked before anything else is
    read. The notes of ``document.from_cloud`` (flavors left out) are
    logged as warnings, as damaged pools are.
    """
    doc, cloud, _scope = observe(client, pool_names, with_images)
    return doc, cloud


def export(client: GpuClient,
           pool_names: collections.abc.Sequence[str] | None = None) -> str:
    """``gpu export``: the document's text (see ``read``), with the record
    of what the cloud held (``document.record``)."""
    doc, _cloud = read(client, pool_names, with_images=not pool_names)
    return document.dump(document.record(doc))


def write(path: str, text: str, overwrite: bool = False) -> None:
    """Write TEXT to PATH through a temporary file in its directory, so
    that PATH holds the old text or the new, never a part; an existing
    PATH is refused unless OVERWRITE."""
    path = os.path.expanduser(path)
    if not overwrite and os.path.lexists(path):
        raise exceptions.CommandError(
            _('%s already exists: give --overwrite to replace it, or '
              'another file.') % path)
    directory = os.path.dirname(os.path.abspath(path))
    try:
        handle, temp = tempfile.mkstemp(prefix='.gpu-export-', dir=directory)
        try:
            with os.fdopen(handle, 'w') as out:
                out.write(text)
            if overwrite:
                os.replace(temp, path)
            else:
                # fails, atomically, when PATH appeared meanwhile
                os.link(temp, path)
        finally:
            if os.path.exists(temp):
                os.unlink(temp)
    except FileExistsError as exc:
        raise exceptions.CommandError(
            _('%s already exists: give --overwrite to replace it, or '
              'another file.') % path) from exc
    except OSError as exc:
        raise exceptions.CommandError(
            _('Cannot write %(path)s: %(error)s.')
            % {'path': path, 'error': exc.strerror or exc}) from exc


def load(path: str) -> tuple[dict[str, typing.Any], _Lines]:
    """The checked document of the file at PATH (``document.check``),
    references not yet resolved, with its lines."""
    try:
        with open(os.path.expanduser(path)) as source:
            text = source.read()
    except OSError as exc:
        raise exceptions.CommandError(
            _('Cannot read %(path)s: %(error)s.')
            % {'path': path, 'error': exc.strerror or exc}) from exc
    data, lines = document.load(text)
    return document.check(data, lines), lines


def _find_image(images: collections.abc.Iterable[dict[str, typing.Any]],
                value: str) -> dict[str, typing.Any]:
    """The image of IMAGES whose ID, else whose name alone, is VALUE."""
    for image in images:
        if image.get('id') == value:
            return image
    named = [i for i in images if i.get('name') == value]
    if len(named) > 1:
        raise exceptions.CommandError(
            _('%(n)d images are named %(name)s: give the image ID')
            % {'n': len(named), 'name': value})
    if not named:
        raise exceptions.CommandError(
            _('no image with name or ID %s (see "openstack image list")')
            % value)
    return named[0]


def resolve(
    client: GpuClient,
    doc: dict[str, typing.Any],
    lines: _Lines,
    current: dict[str, typing.Any],
    cloud: model.Cloud,
    scope: document.Scope | None = None,
) -> dict[str, typing.Any]:
    """DOC (checked) with its references resolved against the cloud
    (``document.substitute``): projects to IDs (one Keystone lookup per
    distinct name), hosts to compute hosts (``Cloud.resolve_hosts``; a
    current member of the pool is taken as it is, its service gone or
    not), images to their key.
    DocumentError with every reference that cannot be resolved."""
    members = {p['name']: p['hosts'] for p in current['pools']}
    projects, resolved, problems = {}, {}, []
    for path, what, value in document.references(doc):
        try:
            if what == document.PROJECT_REF:
                name, domain = ((value['name'], value['domain'])
                                if isinstance(value, dict) else (value, None))
                if (name, domain) not in projects:
                    projects[name, domain] = snapshot.project_id(
                        client, name, domain)
                resolved[path] = projects[name, domain]
            elif what == document.HOST_REF:
                if value in members.get(doc['pools'][path[1]]['name'],
                                        ()):
                    resolved[path] = value  # a member, service or not
                    continue
                hosts, notes = cloud.resolve_hosts([value])
                for note in notes:
                    LOG.warning(note)
                resolved[path] = hosts[0]
            else:
                resolved[path] = document.image_key(
                    # read with the images
                    _find_image(cloud.images or [], value), cloud.images)  # type: ignore[arg-type]
        except exceptions.CommandError as exc:
            problems.append('%s: %s' % (document.where(path, lines),
                                        str(exc).rstrip('.')))
    if problems:
        raise document.DocumentError(problems)
    result = document.substitute(doc, resolved)
    return scope.narrow(result) if scope is not None else result


def _left_out(doc: dict[str, typing.Any],
              scope: document.Scope | None) -> None:
    """Say what of the document (checked) a --pool scope leaves out."""
    if scope is None:
        return
    left = [document.label(kind, document.key_of(kind, item))
            for plural, kind in document.KINDS
            for item in doc[plural] if not scope.holds(kind, item)]
    if left:
        LOG.warning(_('Left out by --pool %(pools)s: %(left)s.'),
                    {'pools': ', '.join(sorted(scope.names)),
                     'left': ', '.join(left)})


def diff(
    client: GpuClient, path: str, prune: bool = False,
    pool_names: collections.abc.Sequence[str] | None = None,
) -> list[dict[str, typing.Any]]:
    """``gpu diff``: the rows from the cloud to the document at PATH
    (``document.diff``); the document is checked before the cloud is
    read. POOL_NAMES: the scope (``document.Scope``): only those pools,
    their flavors and the quotas of their classes are compared (and
    pruned: never what is outside the scope)."""
    wanted, lines = load(path)
    # images belong to no pool: a scope compares none
    current, cloud, scope = observe(client, pool_names,
                                    with_images=not pool_names,
                                    wanted=wanted)
    _left_out(wanted, scope)
    keep = scope.keep(current) if scope is not None else ()
    rows = document.diff(
        current, resolve(client, wanted, lines, current, cloud, scope),
        prune, keep, document.recorded(wanted))
    note = document.unchecked(rows)
    if note:
        LOG.warning(note)
    return rows


def _check_zones(client: GpuClient, cloud: model.Cloud,
                 current: dict[str, typing.Any],
                 wanted: dict[str, typing.Any]) -> None:
    """Nova's zone rules (one zone per host; no host with instances moves
    zone) for the hosts the document adds to a pool and the pools whose
    zone it changes, before anything is written (``pool_ops.check_zone``,
    over the aggregates and services of CLOUD, as read)."""
    have = {p['name']: p for p in current['pools']}
    for pool in wanted['pools']:
        old = have.get(pool['name'])
        hosts = [h for h in pool['hosts'] if old is None
                 or h not in old['hosts']]
        if old is not None and pool['zone'] != old['zone']:
            hosts = pool['hosts']
        if not hosts or not (pool['zone'] or old):
            continue
        existing = cloud.aggregate(pool['name'])
        zone = pool['zone'] or (old or {}).get('zone')
        pool_ops.check_zone(
            client, cloud, zone, hosts,
            own_aggregate=existing['name'] if existing else None)


def _pool_traits(*docs: dict[str, typing.Any]) -> set[str]:
    found: set[str | None] = set()
    for doc in docs:
        for pool in doc['pools']:
            found.add(pools_mod.pool_trait(pool['name']))
            found.add(pools_mod.type_trait_of(pool))
    found.discard(None)
    return found  # type: ignore[return-value]  # None discarded


def apply(
    client: GpuClient,
    path: str,
    dry_run: bool = False,
    prune: bool = False,
    recreate_flavors: bool = False,
    on_step: journal.OnStep | None = None,
    settings: dict[str, typing.Any] | None = None,
    pool_names: collections.abc.Sequence[str] | None = None,
    force_conflicts: bool = False,
) -> plan_mod.Plan:
    """``gpu apply``: make the cloud what the document at PATH says, in
    one plan (``document_plan.plan``) applied by the journal, all or
    nothing. Returns the plan (for a dry run, not applied).

    The document is checked before the cloud is read. The cloud is then
    read once, into one ``model.Cloud``, before the first write: the
    host aggregates, hypervisors, compute services and flavors (Nova),
    the images (Glance), Placement (``snapshot.placement_snapshot`` with
    the providers' traits, for the GPU classes of the document's pools),
    the access list of each private GPU flavor, Keystone's registered
    and project limits, which of the pools' custom traits Placement has,
    a project ID per project name the document gives, and, only when
    needed, every project's servers (see below) and, for each host whose
    zone the document changes, whether it has instances (Nova's zone
    rules, ``pool_ops.check_zone``). The plan is refused, nothing
    written, when a single command would refuse a part of it, or when a
    flavor it creates or changes (or whose pool it changes) would fit no
    host of its pool in the cloud as it will be after the apply
    (``document_plan.fit_problems``, with Nova's scheduler settings
    SETTINGS, default: Nova's documented defaults), or when ``gpu
    check`` would find an error in the cloud after the apply
    that it does not find now (``document_plan.check_problems``).

    POOL_NAMES: the scope (``document.Scope``): the plan covers those
    pools, their flavors and the quotas of their classes, and PRUNE
    removes only what gpuclient owns in that scope.

    A field the plan would change that the cloud changed since the
    document's record (``gpu export`` writes it) is refused before any
    write, naming the object, the field and its three values, unless
    FORCE_CONFLICTS (``document.conflicts``).

    Every project's servers are read (once, paged) when the plan may take
    a host out of a pool: a host that runs servers whose flavor steers to
    that pool only is refused (``pool_plan.check_servers``).
    """
    wanted, lines = load(path)
    recorded = document.recorded(wanted)
    current, cloud, scope, wanted = _observe_for_apply(
        client, wanted, lines, pool_names, prune)
    # the plan's state: at the end, the model with the plan's steps applied
    after = document_plan.state_of(cloud)
    plan = document_plan.plan(
        after, current, wanted, prune=prune,
        recreate_flavors=recreate_flavors,
        title=_('Applying %s') % os.path.basename(path),
        keep=scope.keep(current) if scope is not None else (),
        recorded=recorded, force_conflicts=force_conflicts)
    problems = document_plan.fit_problems(
        after, manager.decide_settings(settings), wanted,
        document_plan.touched_flavors(current, wanted, plan))
    # the doctor judges as "gpu check" does: nova.conf only when given
    problems += document_plan.check_problems(cloud, after, settings)
    if problems:
        raise document_plan.Refused(problems)
    journal.finish(client, plan, dry_run=dry_run, on_step=on_step)
    return plan


def _observe_for_apply(
    client: GpuClient, wanted: dict[str, typing.Any], lines: _Lines,
    pool_names: collections.abc.Sequence[str] | None, prune: bool,
) -> tuple[dict[str, typing.Any], model.Cloud, document.Scope | None,
           dict[str, typing.Any]]:
    """``apply``'s read: the cloud as it is (``observe``), the document
    checked against it and resolved (names to IDs), the zones checked,
    and the servers and traits the plan needs; (the canonical document of
    the cloud, the model, the scope: ``observe``'s, and the document
    resolved)."""
    classes = sorted({p['resource_class'] for p in wanted['pools']
                      if not pool_names or p['name'] in pool_names})
    current, cloud, scope = observe(client, pool_names,
                                    placement_classes=classes, wanted=wanted)
    _left_out(wanted, scope)
    # in the document's order (``resolve`` sorts), so lines are right
    unknown = document_plan.class_problems(
        # read with Placement
        wanted, lines, document_plan.offered_classes(cloud.placement),  # type: ignore[arg-type]
        scope)
    if unknown:
        raise document.DocumentError(unknown)
    wanted = resolve(client, wanted, lines, current, cloud, scope)
    _check_zones(client, cloud, current, wanted)
    if document.leaving_hosts(current, wanted, prune):
        snapshot.read_servers(client, cloud)
    snapshot.read_existing_traits(client, cloud,
                                  _pool_traits(current, wanted))
    return current, cloud, scope, wanted
