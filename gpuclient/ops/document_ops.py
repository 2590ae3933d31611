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

"""``gpu export`` and ``gpu diff``: the cloud as a document.

One read (``snapshot.read`` without Placement: aggregates, hypervisors,
services, flavors and, when wanted, images; the access lists of the
private GPU flavors as ``flavor_ops`` reads them; Keystone's limits as
``gpu quota`` reads them), shaped by ``gpuclient.rules.document``. ``diff``
reads the document's file, checks it, resolves its projects, hosts and
images against the same read, and asks ``document.diff``.
"""

import logging
import os
import tempfile

from osc_lib import exceptions

from gpuclient.i18n import _
from gpuclient.ops import flavor_ops
from gpuclient.ops import snapshot
from gpuclient.rules import document
from gpuclient.rules import pools as pools_mod
from gpuclient.rules import specs

LOG = logging.getLogger(__name__)


def read(client, pool_names=None, with_images=True):
    """(canonical document of the cloud, the snapshot's Cloud).

    POOL_NAMES (None: every pool) are checked before anything else is
    read. The notes of ``document.from_cloud`` (flavors left out) are
    logged as warnings, as damaged pools are.
    """
    aggregates = client.compute.aggregates()
    found, _problems = pools_mod.scan(
        [pools_mod.aggregate_dict(a) for a in aggregates])
    for name in pool_names or ():
        if name not in found:
            raise pools_mod.unknown_pool(name, found)
    cloud = snapshot.read(client, with_flavors=True, with_placement=False,
                          with_images=with_images, aggregates=aggregates)
    snapshot.warn_problems(cloud.problems)
    chosen = set(pool_names or cloud.pools)
    access = {}
    for flavor in cloud.flavors:
        if (not flavor.get('os-flavor-access:is_public', True)
                and specs.read(flavor.get('extra_specs'),
                               cloud.pools)['pool'] in chosen):
            access[flavor['id']] = flavor_ops.flavor_projects(client,
                                                              flavor)
    doc, notes = document.from_cloud(
        cloud.pools, cloud.flavors, access, cloud.images,
        client.limits.registered(), client.limits.limits(),
        selected=list(pool_names) if pool_names else None)
    for note in notes:
        LOG.warning(note)
    return doc, cloud


def export(client, pool_names=None):
    """``gpu export``: the document's text (see ``read``)."""
    doc, _cloud = read(client, pool_names, with_images=not pool_names)
    return document.dump(doc)


def write(path, text, overwrite=False):
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


def load(path):
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


def _find_image(images, value):
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


def resolve(client, doc, lines, current, cloud):
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
                    projects[name, domain] = client.project_id(name, domain)
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
                    _find_image(cloud.images or [], value), cloud.images)
        except exceptions.CommandError as exc:
            problems.append('%s: %s' % (document.where(path, lines),
                                        str(exc).rstrip('.')))
    if problems:
        raise document.DocumentError(problems)
    return document.substitute(doc, resolved)


def diff(client, path, prune=False):
    """``gpu diff``: the rows from the cloud to the document at PATH
    (``document.diff``); the document is checked before the cloud is
    read."""
    wanted, lines = load(path)
    current, cloud = read(client)
    return document.diff(
        current, resolve(client, wanted, lines, current, cloud), prune)
