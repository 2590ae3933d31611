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


"""Nova, through the compute proxy of OSC's openstacksdk connection."""

import logging
import urllib.parse

from openstack.compute.v2 import flavor as sdk_flavor
from openstack.compute.v2 import server as sdk_server
from openstack.compute.v2 import service as sdk_service
from openstack.compute.v2 import usage as sdk_usage

from gpuclient.cloud import errors
from gpuclient.cloud import http
from gpuclient.cloud import pager
from gpuclient.cloud import versions
from gpuclient.i18n import _

LOG = logging.getLogger(__name__)

# limits.absolute: API name -> openstacksdk AbsoluteLimits attribute
COMPUTE_ABSOLUTE_LIMITS = (
    ('maxTotalInstances', 'instances'),
    ('totalInstancesUsed', 'instances_used'),
    ('maxTotalCores', 'total_cores'),
    ('totalCoresUsed', 'total_cores_used'),
    ('maxTotalRAMSize', 'total_ram'),
    ('totalRAMUsed', 'total_ram_used'),
)


def requested_version(text):
    """--os-compute-api-version TEXT as (2, N), 'latest', or None when it
    names no microversion (not given, or the bare major version '2' of
    many clouds.yaml files). Anything else is a CommandError."""
    text = str(text or '').strip()
    if text in ('', '2', 'v2'):
        return None
    if text.lower() == 'latest':
        return 'latest'
    version = versions.parse_version(text)
    if version is None or version[0] != 2:
        raise errors.APIError(
            _('--os-compute-api-version %s is not a compute API version: '
              'give 2.N (e.g. 2.61) or leave the option out.') % text)
    return version


def check_requested(text, need, warned=None):
    """The microversion to send for a call that needs NEED ('2.53') when
    --os-compute-api-version is TEXT (None: not given): NEED, or a
    CommandError when TEXT is lower (nothing is sent). A higher TEXT is
    said once per set WARNED (one per client, so once per command run,
    also when several commands run in one process)."""
    asked = requested_version(text)
    if asked is None:
        return need
    if asked != 'latest' and asked < versions.parse_version(need):
        raise errors.APIError(
            _('This command needs compute API %(need)s or later '
              '(%(why)s); --os-compute-api-version %(asked)s is lower. '
              'Give %(need)s or later, or leave the option out.')
            % {'need': need, 'why': versions.COMPUTE_NEEDS.get(need, need),
               'asked': text})
    if asked == 'latest' or asked > versions.parse_version(need):
        if warned is None or text not in warned:
            if warned is not None:
                warned.add(text)
            LOG.warning(
                _('--os-compute-api-version %(asked)s: gpu commands send '
                  'the compute microversion each call is written for '
                  '(%(need)s here), whose answers they read; the option '
                  'only refuses lower ones.'),
                {'asked': text, 'need': need})
    return need


class Compute:
    """Nova through the SDK's compute proxy."""

    service = 'Nova'

    def __init__(self, proxy=None, requested=None, connect=None):
        # the SDK's compute proxy, or CONNECT() to make it on first use:
        # making it reads the catalog and Nova's version document, which
        # require() must not (it refuses before any request)
        self._given_proxy = proxy
        self._connect = connect
        # --os-compute-api-version as given (None: not given)
        self._requested = requested
        # the versions asked for that were warned about (once per client)
        self._warned = set()

    @property
    def _proxy(self):
        if self._given_proxy is None:
            self._given_proxy = self._connect()
        return self._given_proxy

    def _version(self, need):
        """The microversion to send for a call written for NEED.

        NEED itself, whatever --os-compute-api-version says above it
        (with a warning once: see versions); a CommandError, before the
        call is sent, when the option asks for less than NEED.
        """
        return check_requested(self._requested, need, self._warned)

    def require(self, *needs):
        """Refuse, before a command sends anything, a
        --os-compute-api-version lower than any of NEEDS (the pinned
        versions of the calls it will make); see check_requested."""
        for need in needs:
            check_requested(self._requested, need, self._warned)

    def _fetch(self, what, version, key):
        """FETCH for pager.collect: one raw GET at VERSION, its JSON (an
        object holding KEY, else a CommandError: errors.json_answer)."""
        version = self._version(version)

        def fetch(url, params):
            response = self._proxy.get(url, microversion=version,
                                       params=params, raise_exc=False)
            return errors.json_answer(self.service, what, response, key)
        return fetch

    def _fetch_one(self, resource, ident, what, need, key):
        """RESOURCE (the SDK's Flavor or Server) IDENT fetched at NEED, as
        the dict Nova answered (pager.wire), or None when Nova answers
        404. KEY: what the answer must hold (errors.sdk_read)."""
        version = self._version(need)
        # the ID quoted as one path segment: the SDK joins it as it is,
        # where "a/b" or "a?b" would name another resource
        found = resource.existing(id=urllib.parse.quote(str(ident), safe=''))
        try:
            with errors.sdk_read(self.service, what, key=key):
                found.fetch(self._proxy, microversion=version)
        except errors.NotFound:
            return None
        return pager.wire(found)

    def max_version(self):
        """Nova's maximum compute microversion as (2, N), or None when its
        version document names none: from keystoneauth's version
        discovery of the endpoint (cached by the session), what tells
        Nova's release (rules.quota.nova_release)."""
        what = _('Reading the compute API version')
        with errors.translate_errors(self.service, what):
            data = self._proxy.get_endpoint_data()
        version = getattr(data, 'max_microversion', None)
        try:
            major, minor = version
            return int(major), int(minor)
        except (TypeError, ValueError):
            return None

    def hypervisors(self):
        """Every hypervisor, at a microversion where id is the provider uuid.

        Sends 2.53 explicitly (a higher --os-compute-api-version is not
        used, a lower one refused: check_requested), and follows the
        pagination links.
        """
        what = _('Listing hypervisors (compute API %s)') % (
            versions.COMPUTE_HYPERVISOR_UUID_VERSION
        )
        version = self._version(versions.COMPUTE_HYPERVISOR_UUID_VERSION)
        # the SDK's list at 2.53 (the oldest where id is the uuid) sent
        # explicitly: negotiated, it would reach 2.88, which drops
        # cpu_info, vcpus, memory_mb and the other fields the host filters
        # read. The SDK follows hypervisors_links
        with errors.sdk_read(self.service, what):
            return pager.sdk_list(self.service, what, '/os-hypervisors/detail',
                             self._proxy.hypervisors(details=True,
                                                     microversion=version))

    def aggregates(self):
        what = _('Listing host aggregates')
        with errors.sdk_read(self.service, what):
            return list(self._proxy.aggregates())

    # -- pools: services, aggregates ---------------------------------------

    def compute_services(self):
        """nova-compute services as dicts: host, zone, status, state."""
        what = _('Listing compute services')
        with errors.sdk_read(self.service, what):
            return [
                {'host': svc.host, 'zone': svc.availability_zone,
                 'status': svc.status, 'state': svc.state, 'id': svc.id,
                 'disabled_reason': getattr(svc, 'disabled_reason', None)}
                for svc in self._proxy.services(binary='nova-compute')
            ]

    def set_service_status(self, service_id, enabled, reason=None):
        """Enable or disable (with REASON) the compute service SERVICE_ID:
        ``PUT /os-services/{id}`` at compute API 2.53, where the id is the
        service's uuid. Returns the service as Nova answers it (a dict).
        """
        what = (_('Enabling compute service %s') if enabled
                else _('Disabling compute service %s')) % service_id
        version = self._version(versions.COMPUTE_HYPERVISOR_UUID_VERSION)
        # the SDK's Service, committed at 2.53 (the proxy's
        # update_service and enable/disable_service negotiate up to 2.69)
        service = sdk_service.Service.existing(id=service_id)
        service.status = 'enabled' if enabled else 'disabled'
        if not enabled and reason:
            service.disabled_reason = reason
        with errors.sdk_read(self.service, what, key='service'):
            service.commit(self._proxy, microversion=version)
        return pager.wire(service)

    def host_has_servers(self, host):
        what = _('Listing servers on host %s') % host
        with errors.sdk_read(self.service, what):
            for _server in self._proxy.servers(
                all_projects=True, compute_host=host, limit=1
            ):
                return True
        return False

    def create_aggregate(self, name, zone=None):
        what = _('Creating host aggregate %s') % name
        with errors.translate_errors(self.service, what):
            return self._proxy.create_aggregate(
                name=name, availability_zone=zone
            )

    def set_aggregate_metadata(self, aggregate, metadata):
        """Set keys (value None deletes a key); returns the aggregate."""
        what = _('Setting metadata of host aggregate %s') % aggregate.name
        with errors.translate_errors(self.service, what):
            return self._proxy.set_aggregate_metadata(aggregate, metadata)

    def add_host(self, aggregate, host):
        what = _('Adding host %(host)s to host aggregate %(agg)s') % {
            'host': host, 'agg': aggregate.name}
        with errors.translate_errors(self.service, what):
            return self._proxy.add_host_to_aggregate(aggregate, host)

    def remove_host(self, aggregate, host, retries=http.RETRIES):
        """Remove a host; retry when Nova lost a race in Placement.

        Nova takes the host's provider out of the Placement aggregate
        first and answers 409 when that loses a generation race (another
        aggregate change, the resource tracker), before it changes its
        own aggregate: trying again is safe.
        """
        what = _('Removing host %(host)s from host aggregate %(agg)s') % {
            'host': host, 'agg': aggregate.name}
        for attempt in range(retries):
            try:
                with errors.translate_errors(self.service, what):
                    return self._proxy.remove_host_from_aggregate(
                        aggregate, host)
            except errors.Conflict as exc:
                if (attempt == retries - 1
                        or 'resource provider' not in str(exc).lower()):
                    raise
                LOG.debug('Placement race removing %s, retrying', host)
                http.backoff(attempt)

    def delete_aggregate(self, aggregate):
        what = _('Deleting host aggregate %s') % aggregate.name
        with errors.translate_errors(self.service, what):
            self._proxy.delete_aggregate(aggregate, ignore_missing=True)

    def get_aggregate(self, aggregate):
        what = _('Reading host aggregate %s') % aggregate.name
        with errors.sdk_read(self.service, what):
            return self._proxy.get_aggregate(aggregate)

    def flavors(self):
        """Every flavor (public and private) with its extra specs.

        One paged ``GET /flavors/detail`` at compute API 2.61, where extra
        specs come inline: no request per flavor.
        """
        what = _('Listing flavors (compute API %s)') % (
            versions.COMPUTE_FLAVOR_SPECS_VERSION)
        version = self._version(versions.COMPUTE_FLAVOR_SPECS_VERSION)
        # the SDK's list at 2.61 sent explicitly (negotiated, a cloud
        # below 2.61 would list flavors without extra specs: silently
        # wrong pools; 2.61 sent fails loudly instead), public and private
        # (is_public=None), the pages followed by the SDK
        with errors.sdk_read(self.service, what):
            return pager.sdk_list(self.service, what, '/flavors/detail',
                                  self._proxy.flavors(details=True,
                                                      is_public='None',
                                                      microversion=version))

    # -- flavors (gpu flavor) ------------------------------------------------
    # The list (flavors), the read by ID, the create, deleting an extra
    # spec, the description, the access list and delete go through the
    # SDK: the read and the create through its Flavor at compute API 2.61
    # sent explicitly (the proxy's get_flavor and create_flavor negotiate
    # it), read as the dicts Nova answered (pager.wire), with descriptions
    # (2.55) and extra specs (2.61), which the flavor plans diff. Setting
    # extra specs and the access changes stay raw at 2.61 (_flavor_call):
    # the SDK's calls for them take no microversion (openstacksdk 4.11 and
    # 4.22 alike), each as its method says.

    def _flavor_call(self, method, url, what, body=None, ok_missing=False,
                     key=None):
        version = self._version(versions.COMPUTE_FLAVOR_SPECS_VERSION)
        with errors.translate_errors(self.service, what):
            kwargs = {'microversion': version, 'raise_exc': False}
            if body is not None:
                kwargs['json'] = body
            response = getattr(self._proxy, method)(url, **kwargs)
            if ok_missing and response.status_code == 404:
                return None
            if key is not None:
                return errors.json_answer(self.service, what, response, key)
            errors.check_response(self.service, what, response)
            return http.json_body(response) or {}

    def get_flavor(self, flavor_id):
        """Flavor FLAVOR_ID (dict with extra_specs) by ID only, or None.

        What a write acts on: ``find_flavor`` would take a name when no
        flavor has that ID.
        """
        what = _('Reading flavor %s') % flavor_id
        return self._fetch_one(sdk_flavor.Flavor, flavor_id, what,
                               versions.COMPUTE_FLAVOR_SPECS_VERSION,
                               'flavor')

    def find_flavor(self, name_or_id, ignore_missing=False,
                    unambiguous=False):
        """One flavor (dict with extra_specs) by ID or exact name (the ID
        first, as Nova and OSC do: for what the operator typed).

        UNAMBIGUOUS (what a write acts on): a NAME_OR_ID that is the ID
        of one flavor and the name of another is refused, both named
        (one more request: the flavor list).
        """
        flavor = self.get_flavor(name_or_id)
        if flavor is not None and not unambiguous:
            return flavor
        found = [f for f in self.flavors() if f.get('name') == name_or_id]
        if flavor is not None:
            others = [f for f in found if f['id'] != flavor['id']]
            if not others:
                return flavor
            raise errors.APIError(
                _('%(x)s is the ID of flavor %(name)s and the name of '
                  'flavor %(ids)s: nothing was changed. Name the one you '
                  'mean without ambiguity: %(name)s (by its name) or '
                  '%(ids)s (by ID).')
                % {'x': name_or_id, 'name': flavor.get('name'),
                   'ids': ', '.join(f['id'] for f in others)})
        if len(found) == 1:
            return found[0]
        if found:
            raise errors.APIError(
                _('%(n)d flavors are named %(name)s: give the flavor ID.')
                % {'n': len(found), 'name': name_or_id})
        if ignore_missing:
            return None
        raise errors.NotFound(
            _('No flavor with name or ID %s (see "openstack gpu flavor '
              'list").') % name_or_id, 404)

    def create_flavor(self, **fields):
        """POST /flavors at compute API 2.61; FIELDS as in Nova's flavor
        body (None: left out). Returns the flavor as Nova answered it.

        The SDK's Flavor created at 2.61 sent explicitly; it sends the
        fields it declares (every field of Nova's flavor create) and
        drops any other: such a field is refused here, before anything
        is sent, as Nova would refuse it.
        """
        what = _('Creating flavor %s') % fields.get('name')
        body = {k: v for k, v in fields.items() if v is not None}
        version = self._version(versions.COMPUTE_FLAVOR_SPECS_VERSION)
        flavor = sdk_flavor.Flavor.new(**body)
        unknown = sorted(set(body) - set(flavor._body.dirty))
        if unknown:
            raise errors.APIError(
                _('%(what)s: %(fields)s not a field of a Nova flavor; '
                  'nothing was sent.')
                % {'what': what, 'fields': ', '.join(unknown)})
        with errors.sdk_read(self.service, what, key='flavor'):
            flavor.create(self._proxy, microversion=version)
        return pager.wire(flavor)

    def update_flavor_description(self, flavor_id, description):
        """PUT /flavors/{id} with the description (None: none); compute
        API 2.55 or later, which the SDK's Flavor negotiates (up to
        2.61, the version every flavor read here needs anyway)."""
        what = _('Updating the description of flavor %s') % flavor_id
        with errors.translate_errors(self.service, what):
            flavor = self._proxy.update_flavor(flavor_id,
                                               description=description)
        return getattr(flavor, 'description', None)

    def set_flavor_extra_specs(self, flavor_id, extra_specs):
        """POST /flavors/{id}/os-extra_specs, raw at compute API 2.61.

        Not the SDK's call: Flavor.create_extra_specs takes no microversion
        (openstacksdk 4.11 and 4.22: it sends --os-compute-api-version when
        given, else negotiates up to 2.61), and from 2.86 Nova validates
        the keys against its registry, which in Nova 34 lacks settings it
        acts on (``hw:maxphysaddr_mode`` and
        ``hw:maxphysaddr_bits``: 400 "does not appear to be a valid extra
        spec"). gpuclient checks the keys it writes itself (rules.specs).
        """
        what = _('Setting extra specs of flavor %s') % flavor_id
        quoted = urllib.parse.quote(flavor_id, safe='')
        data = self._flavor_call('post', '/flavors/%s/os-extra_specs' % quoted,
                                 what, {'extra_specs': extra_specs},
                                 key='extra_specs')
        return dict(data['extra_specs'] or {})

    def add_flavor_access(self, flavor_id, project_id):
        what = _('Giving project %(project)s access to flavor %(flavor)s') % {
            'project': project_id, 'flavor': flavor_id}
        # raw: the SDK's add/remove_tenant_access (openstacksdk 4.11 and
        # 4.22) send no microversion (only the private Flavor._action takes
        # one), and below 2.7 Nova adds access to a public flavor instead
        # of refusing it
        self._flavor_call('post', '/flavors/%s/action' % flavor_id, what,
                          {'addTenantAccess': {'tenant': project_id}})

    def remove_flavor_access(self, flavor_id, project_id):
        what = _('Taking access to flavor %(flavor)s from project '
                 '%(project)s') % {'project': project_id,
                                   'flavor': flavor_id}
        # raw, as add_flavor_access
        self._flavor_call('post', '/flavors/%s/action' % flavor_id, what,
                          {'removeTenantAccess': {'tenant': project_id}})

    def delete_flavor_extra_spec(self, flavor_id, key):
        """Delete one extra spec; one already gone is what we wanted."""
        what = _('Deleting extra spec %(key)s of flavor %(flavor)s') % {
            'key': key, 'flavor': flavor_id}
        with errors.translate_errors(self.service, what):
            self._proxy.delete_flavor_extra_specs_property(
                flavor_id, key, ignore_missing=True)

    def flavor_access(self, flavor_id):
        """Project ids that may use a private flavor."""
        what = _('Reading the access list of flavor %s') % flavor_id
        with errors.sdk_read(self.service, what):
            access = self._proxy.get_flavor_access(flavor_id)
        return sorted(a['tenant_id'] for a in access)

    def delete_flavor(self, flavor_id):
        what = _('Deleting flavor %s') % flavor_id
        with errors.translate_errors(self.service, what):
            self._proxy.delete_flavor(flavor_id, ignore_missing=False)

    def _paged_get(self, url, what, version, params, key):
        """Every item of a paged Nova list (``<key>_links`` next)."""
        # raw (pager.collect), for one project's os-simple-tenant-usage:
        # its answer is a dict whose server_usages are paged by
        # tenant_usage_links, and the SDK's get_usage is a Usage.fetch,
        # which reads the first page only (openstacksdk 4.11 and 4.22).
        # The marker is taken from the next link, as Nova writes it.

        def page_items(data):
            page = data.get(key)
            if isinstance(page, dict):  # tenant_usage (one project)
                page = page.get('server_usages') or []
            return page or []

        with errors.translate_errors(self.service, what):
            return pager.collect(self._fetch(what, version, key), url,
                                 dict(params), page_items,
                                 pager.next_marker(key), self.service,
                                 what)

    def servers_detail(self, all_projects=False, project_id=None,
                       changes_since=None, host=None):
        """Servers with their embedded flavor (extra specs included),
        as dicts: ``GET /servers/detail`` at compute API 2.47, paged.

        CHANGES_SINCE (ISO time) lists servers changed since then,
        deleted ones included (Nova's ``changes-since``). HOST: only the
        servers of that compute host (Nova's admin filter ``host``, an
        exact match, one value; every microversion).
        """
        what = _('Listing servers (compute API %s)') % (
            versions.COMPUTE_EMBEDDED_FLAVOR_VERSION)
        # the SDK's list at 2.47 sent explicitly: 2.47 gives the embedded
        # flavor with its extra specs in one shape on every cloud (below, a
        # flavor id only: silently no GPUs; negotiated, 2.100); the SDK
        # follows servers_links, and usage.server_rows reads Nova's own
        # keys (OS-EXT-SRV-ATTR:host, OS-SRV-USG:launched_at, tenant_id).
        # The host filter is compute_host=: the SDK sends a host= too, then
        # matches it against the body's "host" (absent at 2.47): no server
        version = self._version(versions.COMPUTE_EMBEDDED_FLAVOR_VERSION)
        query = {}
        if all_projects:
            query['all_tenants'] = 1
        if project_id:
            query['project_id'] = project_id
        if changes_since:
            query['changes_since'] = changes_since
        if host:
            query['compute_host'] = host
        with errors.sdk_read(self.service, what):
            return pager.sdk_list(self.service, what, '/servers/detail',
                                  self._proxy.servers(details=True,
                                                      microversion=version,
                                                      **query))

    def get_server(self, server_id):
        """Server SERVER_ID as Nova shows it at compute API 2.47 (a dict
        with ``OS-EXT-SRV-ATTR:host``, ``status``,
        ``OS-EXT-STS:task_state`` and the embedded flavor), or None when
        it is gone.

        The SDK's Server fetched at 2.47 sent explicitly (the proxy's
        get_server negotiates, up to 2.100), read as the dict Nova
        answered (pager.wire: the fields the SDK declares, Nova's own
        keys, as servers_detail); a 404 is None here, not an error."""
        what = _('Reading server %s') % server_id
        return self._fetch_one(sdk_server.Server, server_id, what,
                               versions.COMPUTE_EMBEDDED_FLAVOR_VERSION,
                               'server')

    def server_action(self, server_id, action, body=None):
        """``POST /servers/{id}/action`` {ACTION: BODY} at compute API
        2.56: ``os-migrateLive`` (with a host, Nova's scheduler
        checks it), ``migrate`` (with a host: 2.56), ``confirmResize``,
        ``shelve``, ``shelveOffload``.

        Raw, for the microversion: the SDK's server actions take none
        (openstacksdk 4.11 and 4.22; only the private Server._action
        does): they negotiate up to the SDK's own maximum, where the live
        migration body differs: 2.68 drops ``force``, and its migrate refuses a
        host below 2.56 only after negotiating."""
        what = _('Asking Nova to %(action)s server %(server)s') % {
            'action': action, 'server': server_id}
        version = self._version(versions.COMPUTE_MIGRATE_HOST_VERSION)
        quoted = urllib.parse.quote(str(server_id), safe='')
        with errors.translate_errors(self.service, what):
            response = self._proxy.post(
                '/servers/%s/action' % quoted, json={action: body},
                microversion=version, raise_exc=False)
            errors.check_response(self.service, what, response)

    def migrations(self, status=None, migration_type=None, host=None):
        """Nova's migration records as dicts (``GET /os-migrations`` at
        2.59, paged), filtered by STATUS and MIGRATION_TYPE (``migration``,
        ``live-migration``, ``resize``...) and HOST (its source or its
        destination; one value): what a re-run of a drain reads to find
        the moves it left unconfirmed or under way, and the moves coming
        to a drained host."""
        what = _('Listing migrations')
        version = self._version(versions.COMPUTE_MIGRATIONS_VERSION)
        query = {}
        if host:
            query['host'] = host
        if status:
            query['status'] = status
        if migration_type:
            query['migration_type'] = migration_type
        # the SDK's list at 2.59 (paged by migrations_links), sent
        # explicitly: negotiated, it would reach 2.80
        with errors.sdk_read(self.service, what):
            return pager.sdk_list(self.service, what, '/os-migrations',
                             self._proxy.migrations(microversion=version,
                                                    **query))

    def server_usages(self, start, end, project_id=None):
        """Nova's per-server usage in [START, END) (naive UTC datetimes),
        deleted servers included: ``os-simple-tenant-usage`` at 2.40,
        every project (admin) or one (``PROJECT_ID``), paged.
        """
        fmt = '%Y-%m-%dT%H:%M:%S.%f'
        # at 2.40, sent explicitly: it adds tenant_usage(s)_links
        params = {'start': start.strftime(fmt), 'end': end.strftime(fmt)}
        if project_id:
            # raw: _paged_get follows one project's page links too (the
            # SDK's get_usage reads one page: a project with more servers
            # than Nova's page size would lose GPU-hours)
            what = _('Reading the server usage of project %s') % project_id
            return self._paged_get(
                '/os-simple-tenant-usage/%s' % project_id, what,
                versions.COMPUTE_USAGE_LINKS_VERSION, params, 'tenant_usage')
        what = _('Reading the server usage of every project')
        version = self._version(versions.COMPUTE_USAGE_LINKS_VERSION)
        # the SDK's list of Usage, which follows tenant_usages_links (a
        # project's servers may span pages: each page is read); through
        # the resource, as the proxy's usages() does, but with START and
        # END as written above (usages() writes isoformat(), without the
        # microseconds of a whole second)
        with errors.sdk_read(self.service, what, key='tenant_usages'):
            usages = pager.sdk_list(
                self.service, what, '/os-simple-tenant-usage',
                sdk_usage.Usage.list(self._proxy, microversion=version,
                                     detailed=1, **params))
        return [item for tenant in usages
                for item in tenant.get('server_usages') or []]

    def project_limits(self, project_id):
        """Absolute compute limits and usage of a project, as the API
        names them (maxTotalInstances, totalInstancesUsed, ...).

        ``GET /limits?tenant_id=`` (another project: admin); instances,
        cores and RAM are the same at every microversion.
        """
        what = _('Reading the compute limits of project %s') % project_id
        with errors.sdk_read(self.service, what):
            # tenant_id=, the name Nova reads: the SDK's project_id alias
            # sends ?project_id=, which Nova ignores (own project's limits)
            absolute = self._proxy.get_limits(tenant_id=project_id).absolute
        return {wire: getattr(absolute, attribute, None)
                for wire, attribute in COMPUTE_ABSOLUTE_LIMITS}
