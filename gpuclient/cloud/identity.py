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


"""Keystone: the compute service's unified limits (``Limits``), and the
projects and domains a command names or runs in (functions of OSC's
keystoneauth session and openstacksdk connection, which ``GpuClient``
calls)."""

import logging
import re

from osc_lib import exceptions

from gpuclient.cloud import errors
from gpuclient.i18n import _

LOG = logging.getLogger(__name__)
# update_registered/update_limit: leave the description as it is
KEEP = object()


class Limits:
    """Keystone unified limits of the compute service (Nova's quotas),
    through the SDK's identity proxy, as plain dicts.

    Limits are kept per service and region: the compute service's id and
    region come from the token's catalog (no request; members see it
    too), the region from --os-region-name when given.
    """

    service = 'Keystone'

    def __init__(self, proxy, session, region_name=None):
        self._proxy = proxy
        self._session = session
        self._region_name = region_name
        self._scope = None

    def scope(self):
        """(compute service id, region id or None) of Nova's limits."""
        if self._scope is not None:
            return self._scope
        what = _('Looking up the compute service in the catalog')
        get_access = getattr(self._session.auth, 'get_access', None)
        if get_access is None:
            raise errors.APIError(
                _('%s: this authentication has no service catalog (token '
                  'and endpoint given?); Nova\'s limits are kept under the '
                  'compute service of the catalog: authenticate with a '
                  'user.') % what)
        with errors.translate_errors(self.service, what):
            catalog = get_access(self._session).service_catalog.catalog or []
        entries = [e for e in catalog if e.get('type') == 'compute']
        if len(entries) != 1 or not entries[0].get('id'):
            raise errors.APIError(
                _('%(what)s: %(n)d compute services in the catalog. Nova '
                  'keeps its limits under one compute service: check the '
                  'catalog ("openstack catalog list").')
                % {'what': what, 'n': len(entries)})
        regions = sorted({ep.get('region_id') or ep.get('region')
                          for ep in entries[0].get('endpoints') or ()
                          if ep.get('region_id') or ep.get('region')})
        region = self._region_name
        if not region and len(regions) > 1:
            raise errors.APIError(
                _('%(what)s: the compute service has endpoints in regions '
                  '%(regions)s; limits are per region: give '
                  '--os-region-name.')
                % {'what': what, 'regions': ', '.join(regions)})
        if not region and regions:
            region = regions[0]
        self._scope = (entries[0]['id'], region)
        return self._scope

    def _query(self, **extra):
        service_id, region = self.scope()
        query = {'service_id': service_id}
        if region:
            query['region_id'] = region
        query.update({k: v for k, v in extra.items() if v})
        return query

    def registered(self):
        """{resource name: {'id', 'limit', 'description'}}: the defaults
        of every project."""
        what = _('Listing the registered limits of the compute service')
        with errors.sdk_read(self.service, what):
            items = list(self._proxy.registered_limits(**self._query()))
        return {r.resource_name: {'id': r.id, 'limit': r.default_limit,
                                  'description': r.description}
                for r in items}

    def limits(self, project_id=None):
        """[{'id', 'project_id', 'resource_name', 'resource_limit',
        'description'}]: project limits (of PROJECT_ID, or every one the
        caller sees)."""
        what = _('Listing the project limits of the compute service')
        with errors.sdk_read(self.service, what):
            items = list(self._proxy.limits(
                **self._query(project_id=project_id)))
        return [{'id': r.id, 'project_id': r.project_id,
                 'resource_name': r.resource_name,
                 'resource_limit': r.resource_limit,
                 'description': r.description} for r in items]

    def create_registered(self, name, value):
        service_id, region = self.scope()
        what = _('Creating the registered limit %s') % name
        with errors.translate_errors(self.service, what):
            self._proxy.create_registered_limit(
                service_id=service_id, region_id=region,
                resource_name=name, default_limit=value)

    def update_registered(self, limit_id, value=None, description=KEEP):
        """Set the default (VALUE, None: as it is) and the DESCRIPTION
        (None: none; KEEP: as it is) of a registered limit."""
        attrs = {} if value is None else {'default_limit': value}
        if description is not KEEP:
            attrs['description'] = description
        what = _('Updating the registered limit %s') % limit_id
        with errors.translate_errors(self.service, what):
            self._proxy.update_registered_limit(limit_id, **attrs)

    def delete_registered(self, limit_id):
        what = _('Deleting the registered limit %s') % limit_id
        with errors.translate_errors(self.service, what):
            self._proxy.delete_registered_limit(limit_id)

    def create_limit(self, project_id, name, value):
        service_id, region = self.scope()
        what = _('Creating the limit %(name)s of project %(project)s') % {
            'name': name, 'project': project_id}
        with errors.translate_errors(self.service, what):
            self._proxy.create_limit(
                service_id=service_id, region_id=region,
                project_id=project_id, resource_name=name,
                resource_limit=value)

    def update_limit(self, limit_id, value=None, description=KEEP):
        """Set the limit (VALUE, None: as it is) and the DESCRIPTION
        (None: none; KEEP: as it is) of a project limit."""
        attrs = {} if value is None else {'resource_limit': value}
        if description is not KEEP:
            attrs['description'] = description
        what = _('Updating the limit %s') % limit_id
        with errors.translate_errors(self.service, what):
            self._proxy.update_limit(limit_id, **attrs)

    def delete_limit(self, limit_id):
        what = _('Deleting the limit %s') % limit_id
        with errors.translate_errors(self.service, what):
            self._proxy.delete_limit(limit_id)

    def project_names(self):
        """{project id: name} of the projects the caller may list, or
        {} when Keystone does not let it.

        Keystone does not page: with ``list_limit`` set it answers the
        first ones only (``truncated``), so a project missing here is not
        gone: see find_projects.
        """
        try:
            with errors.sdk_read(self.service, _('Listing projects')):
                return {p.id: p.name for p in self._proxy.projects()}
        except errors.APIError as exc:
            LOG.debug('project names not readable: %s', exc)
            return {}

    def find_projects(self, names_or_ids):
        """{project id: name} of those of NAMES_OR_IDS that Keystone
        finds, by ID first, then by name (one lookup each).

        A value Keystone does not let the caller look up is given as
        {value: None}: not known to be gone.
        """
        found = {}
        for value in sorted(set(names_or_ids)):
            what = _('Looking up project %s') % value
            try:
                with errors.translate_errors(self.service, what):
                    project = self._proxy.find_project(
                        value, ignore_missing=True)
            except errors.APIError as exc:
                LOG.debug('%s: %s', what, exc)
                found[value] = None
                continue
            if project is not None:
                found[project.id] = project.name
        return found


def current_project_id(session):
    """The project the command runs in (its token's scope)."""
    with errors.translate_errors('Keystone', _('Reading the current project')):
        return session.get_project_id()


def current_project(session):
    """(id, name) of the project the command runs in."""
    with errors.translate_errors('Keystone', _('Reading the current project')):
        access = session.auth.get_access(session)
    return access.project_id, access.project_name


def in_catalog(session, service_type):
    """Whether the token's service catalog lists a service of
    SERVICE_TYPE (``reservation``: Blazar). No request: the catalog came
    with the token; an authentication without one (token and endpoint
    given) lists nothing."""
    get_access = getattr(getattr(session, 'auth', None), 'get_access', None)
    if get_access is None:
        return False
    with errors.translate_errors('Keystone',
                                 _('Reading the service catalog')):
        catalog = get_access(session).service_catalog.catalog or []
    return any(entry.get('type') == service_type for entry in catalog)


def project_ids(connection, names_or_ids, domain=None):
    """Keystone project ids of several names or ids, in order, once
    each.

    ``domain`` (--project-domain: a domain name or ID) scopes the names
    as in OSC's own commands: it is looked up once, with OSC's identity
    helper, and the projects are found in it.
    """
    scope = domain_id(connection, domain) if domain else None
    found = []
    for name_or_id in names_or_ids:
        project_id = _find_project_id(connection, name_or_id, scope, domain)
        if project_id not in found:
            found.append(project_id)
    return found


def project_id(connection, name_or_id, domain=None):
    """A Keystone project id from a name or id (see project_ids)."""
    return project_ids(connection, [name_or_id], domain)[0]


def domain_id(connection, name_or_id):
    """A Keystone domain id from a name or id (OSC's helper)."""
    # imported here: plugin loading stays cheap for other commands
    from openstackclient.identity import common as identity_common

    what = _('Looking up domain %s') % name_or_id
    try:
        with errors.translate_errors('Keystone', what):
            return identity_common.find_domain_id_sdk(
                connection.identity, name_or_id)
    except errors.APIError:
        raise
    except exceptions.CommandError as exc:
        # OSC's helper raises a CommandError without a message
        raise errors.NotFound(
            _('No domain with name or ID %s. Check the name ("openstack '
              'domain list"), or give the domain ID.') % name_or_id,
            404) from exc


def _find_project_id(connection, name_or_id, domain_id=None,
                     domain=None):
    """The project's id; like OSC's ``find_project_id_sdk``, except
    that when Keystone forbids the lookup only an ID-shaped value is
    taken as it is (OSC would take a name too, and a project name
    written as a project id into aggregate metadata or flavor access
    silently lets nobody in).
    """
    what = _('Looking up project %s') % name_or_id
    query = {'domain_id': domain_id} if domain_id else {}
    try:
        with errors.translate_errors('Keystone', what):
            project = connection.identity.find_project(
                name_or_id, ignore_missing=True, **query
            )
    except errors.APIError as exc:
        if exc.status == 403 and re.fullmatch(r'[0-9a-f]{32}',
                                              name_or_id):
            # not allowed to look it up, but it is an id
            return name_or_id
        raise
    if project is None:
        if domain_id:
            raise errors.NotFound(
                _('No project with name or ID %(project)s in domain '
                  '%(domain)s. Check both names ("openstack project '
                  'list --domain %(domain)s"), or give the project '
                  'ID.') % {'project': name_or_id, 'domain': domain},
                404)
        raise errors.NotFound(
            _('No project with name or ID %s. Check the name, or give '
              'the project ID.') % name_or_id, 404)
    return project.id
