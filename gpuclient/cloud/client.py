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

"""The one place where gpuclient talks to a cloud.

* Compute and image go through the openstacksdk connection that OSC already
  holds (``client_manager.sdk_connection``).
* Placement goes through the same connection's placement proxy (a
  keystoneauth ``Adapter``), so clouds.yaml's ``placement_endpoint_override``,
  interface and region apply. Its maximum microversion comes from the
  endpoint's version discovery, once per process and endpoint (lazily, on
  the first Placement call), and every call sends the microversion it
  needs.
* Every HTTP, SDK or connection error leaves this module as an
  ``osc_lib.exceptions.CommandError`` that carries the server's message and
  says what to do.
"""

import concurrent.futures
import contextlib
import json
import logging
import random
import re
import threading
import time
import urllib.parse

from keystoneauth1 import exceptions as ks_exc
from openstack import exceptions as sdk_exc
from osc_lib import exceptions

from gpuclient.i18n import _

LOG = logging.getLogger(__name__)

# Microversions this client needs, named by what needs them.
PLACEMENT_TREE_VERSION = (1, 14)  # parent/root provider uuids
PLACEMENT_SUMMARY_VERSION = (1, 29)  # whole-tree provider summaries
PLACEMENT_NOVA_VERSION = (1, 36)  # what Nova 34's scheduler sends
PLACEMENT_TRAITS_VERSION = (1, 6)  # traits API
PLACEMENT_AGGREGATES_VERSION = (1, 19)  # aggregates with generation
PLACEMENT_USAGES_VERSION = (1, 9)  # GET /usages?project_id=
COMPUTE_HYPERVISOR_UUID_VERSION = '2.53'  # hypervisor id == provider uuid
COMPUTE_FLAVOR_SPECS_VERSION = '2.61'  # extra_specs in flavor lists
COMPUTE_EMBEDDED_FLAVOR_VERSION = '2.47'  # flavor + extra specs in servers
COMPUTE_USAGE_LINKS_VERSION = '2.40'  # paged os-simple-tenant-usage
BAREMETAL_TRAITS_VERSION = '1.37'  # node traits in GET /nodes?fields=
BAREMETAL_NODE_FIELDS = ('uuid', 'name', 'provision_state', 'maintenance',
                         'maintenance_reason', 'power_state',
                         'resource_class', 'traits')
# limits.absolute: API name -> openstacksdk AbsoluteLimits attribute
COMPUTE_ABSOLUTE_LIMITS = (
    ('maxTotalInstances', 'instances'),
    ('totalInstancesUsed', 'instances_used'),
    ('maxTotalCores', 'total_cores'),
    ('totalCoresUsed', 'total_cores_used'),
    ('maxTotalRAMSize', 'total_ram'),
    ('totalRAMUsed', 'total_ram_used'),
)

# Placement HTTP 500 messages that mean "try again" (concurrent writes).
_TRANSIENT_500 = ('deadlock', 'concurrently updated', 'please retry')

# Bound on concurrent per-provider requests (the fallback path only).
MAX_WORKERS = 8

# How often a write that lost a race is tried again.
RETRIES = 5

# HTTP timeouts (seconds) when the cloud's clouds.yaml sets no api_timeout:
# a service that accepts and never answers fails the call instead of
# hanging the command (connect, then each read of the answer).
CONNECT_TIMEOUT = 10.0
READ_TIMEOUT = 120.0


def set_timeouts(session, api_timeout=None):
    """Give a keystoneauth session connect and read timeouts.

    A timeout the session already has (a library caller's, or
    ``openstack.connect(api_timeout=...)``) is kept. Otherwise
    ``api_timeout`` (clouds.yaml's, which OSC's ClientManager does not
    pass on) is used for both, as openstacksdk does; without it,
    (CONNECT_TIMEOUT, READ_TIMEOUT). keystoneauth hands the value to
    ``requests`` for every request of the session, token requests
    included.
    """
    if not hasattr(session, 'timeout') or session.timeout is not None:
        return  # not a keystoneauth session (a test's), or set already
    if api_timeout not in (None, ''):
        session.timeout = float(api_timeout)
    else:
        # requests takes a (connect, read) pair; keystoneauth passes the
        # session's value through unchanged
        session.timeout = (CONNECT_TIMEOUT, READ_TIMEOUT)


def _backoff(attempt):
    """Sleep a little longer after each lost race (with jitter)."""
    time.sleep(random.uniform(0.05, 0.2) * (attempt + 1))


def version_str(version):
    return '%d.%d' % version


def parse_version(text):
    """'1.36' -> (1, 36); None when the text is not a microversion."""
    match = re.fullmatch(r'v?(\d+)\.(\d+)', str(text or '').strip())
    if not match:
        return None
    return int(match.group(1)), int(match.group(2))


class APIError(exceptions.CommandError):
    """An API call failed; ``status`` is the HTTP status (None if none)."""

    def __init__(self, message, status=None):
        super().__init__(message)
        self.status = status


class NotFound(APIError):
    pass


class Conflict(APIError):
    pass


def server_message(body, limit=400):
    """Best-effort human message from an OpenStack error body.

    Placement answers ``{"errors": [{"detail": ...}]}``, Nova
    ``{"itemNotFound": {"message": ...}}``, Glance and proxies may answer
    plain text or HTML: never assume JSON.
    """
    if body is None:
        return ''
    if isinstance(body, bytes):
        body = body.decode('utf-8', 'replace')
    text = body if isinstance(body, str) else None
    data = body
    if text is not None:
        try:
            data = json.loads(text)
        except ValueError:
            data = None
    messages = []
    if isinstance(data, dict):
        if isinstance(data.get('errors'), list):
            for err in data['errors']:
                if isinstance(err, dict):
                    messages.append(
                        str(err.get('detail') or err.get('title') or '')
                    )
        elif 'message' in data:
            messages.append(str(data['message']))
        elif len(data) == 1:
            inner = next(iter(data.values()))
            if isinstance(inner, dict) and 'message' in inner:
                messages.append(str(inner['message']))
    if not messages and text is not None:
        # HTML or text: strip tags and collapse white space.
        messages.append(re.sub(r'<[^>]+>', ' ', text))
    message = ' '.join(' '.join(messages).split())
    if len(message) > limit:
        message = message[: limit - 3] + '...'
    return message


def error_for_status(service, what, status, message, endpoint=None):
    """Build the CommandError for an HTTP error status."""
    message = (message or '').rstrip('. ')
    detail = (': %s' % message) if message else ''
    if status == 401:
        return APIError(
            _(
                '%(what)s: authentication failed%(detail)s. Check the '
                'credentials of the cloud you named (clouds.yaml or OS_* '
                'variables).'
            )
            % {'what': what, 'detail': detail},
            status,
        )
    if status == 403:
        return APIError(
            _(
                '%(what)s: forbidden%(detail)s. This requires admin: use '
                'an account with the admin role (for example --os-cloud '
                'with an admin user).'
            )
            % {'what': what, 'detail': detail},
            status,
        )
    if status == 404:
        return NotFound(
            _('%(what)s: no such resource in %(service)s%(detail)s.')
            % {'what': what, 'service': service, 'detail': detail},
            status,
        )
    if status == 406:
        return APIError(
            _(
                '%(what)s: %(service)s at %(endpoint)s does not accept the '
                'microversion this call needs%(detail)s. Upgrade '
                '%(service)s or use a cloud with a newer one.'
            )
            % {
                'what': what,
                'service': service,
                'endpoint': endpoint or '?',
                'detail': detail,
            },
            status,
        )
    if status == 409:
        return Conflict(
            _(
                '%(what)s: conflict%(detail)s. Something else changed it '
                'at the same time: run the command again.'
            )
            % {'what': what, 'detail': detail},
            status,
        )
    if status is not None and status >= 500:
        return APIError(
            _(
                '%(what)s: %(service)s failed with HTTP %(status)s'
                '%(detail)s. Check the %(service)s service logs.'
            )
            % {
                'what': what,
                'service': service,
                'status': status,
                'detail': detail,
            },
            status,
        )
    return APIError(
        _('%(what)s: %(service)s answered HTTP %(status)s%(detail)s.')
        % {
            'what': what,
            'service': service,
            'status': status,
            'detail': detail,
        },
        status,
    )


def _connection_error(service, what, exc, endpoint=None):
    where = endpoint or _('its catalog endpoint')
    return APIError(
        _(
            '%(what)s: cannot connect to %(service)s at %(where)s '
            '(%(error)s). Is the service running, and is that endpoint '
            'reachable from here (see --os-interface and --os-region-name)?'
        )
        % {
            'what': what,
            'service': service,
            'where': where,
            'error': exc,
        }
    )


class TimedOut(APIError):
    """A request got no answer in time: a write may have happened."""


def _timeout_error(service, what, exc):
    return TimedOut(
        _(
            '%(what)s: %(service)s did not answer in time (%(error)s). '
            'The service may be hung or overloaded; a write may or may not '
            'have taken effect. Check the %(service)s service; gpuclient '
            'waits api_timeout seconds of the cloud in clouds.yaml, or '
            '%(connect)d s to connect and %(read)d s for an answer.'
        )
        % {
            'what': what,
            'service': service,
            'error': exc,
            'connect': CONNECT_TIMEOUT,
            'read': READ_TIMEOUT,
        }
    )


def _endpoint_of(url):
    parts = urllib.parse.urlsplit(url or '')
    if not parts.scheme:
        return None
    return '%s://%s' % (parts.scheme, parts.netloc)


@contextlib.contextmanager
def translate_errors(service, what):
    """Turn SDK and keystoneauth exceptions into CommandErrors."""
    try:
        yield
    except exceptions.CommandError:
        raise
    except sdk_exc.HttpException as exc:
        status = getattr(exc, 'status_code', None)
        message = server_message(getattr(exc, 'details', None)) or (
            server_message(getattr(exc, 'message', None))
        )
        url = getattr(getattr(exc, 'response', None), 'url', None)
        raise error_for_status(
            service, what, status, message, _endpoint_of(url)
        ) from exc
    except ks_exc.EndpointNotFound as exc:
        raise APIError(
            _(
                '%(what)s: the service catalog has no %(service)s endpoint '
                'for this region and interface (%(error)s). Check '
                '--os-region-name and --os-interface.'
            )
            % {'what': what, 'service': service, 'error': exc}
        ) from exc
    except sdk_exc.EndpointNotFound as exc:
        raise APIError(
            _(
                '%(what)s: the service catalog has no %(service)s endpoint '
                '(%(error)s). Check --os-region-name and --os-interface.'
            )
            % {'what': what, 'service': service, 'error': exc}
        ) from exc
    except ks_exc.ConnectTimeout as exc:
        raise _timeout_error(service, what, exc) from exc
    except ks_exc.ConnectionError as exc:
        raise _connection_error(service, what, exc) from exc
    except ks_exc.HttpError as exc:
        raise error_for_status(
            service, what, exc.http_status, server_message(exc.details)
        ) from exc
    except sdk_exc.SDKException as exc:
        raise APIError('%s: %s' % (what, exc)) from exc


def _check_response(service, what, response, endpoint=None):
    if response.status_code < 400:
        return response
    raise error_for_status(
        service,
        what,
        response.status_code,
        server_message(response.text),
        endpoint,
    )


def _json(response):
    if response.status_code == 204 or not response.content:
        return None
    try:
        return response.json()
    except ValueError:
        return None


def _microversion(version):
    """A discovered (major, minor) as ints; None when there is none."""
    try:
        major, minor = version
        return int(major), int(minor)
    except (TypeError, ValueError, OverflowError):
        return None


class Placement:
    """Placement over openstacksdk's placement proxy, explicit microversions.

    ``adapter`` is ``connection.placement`` of OSC's SDK connection (a
    keystoneauth ``Adapter`` subclass), so what clouds.yaml and the
    ``--os-*`` options say about Placement applies: region, interface,
    ``placement_endpoint_override``. Requests are raw because the client
    needs exact microversions and query shapes (repeated ``required``,
    numbered groups, ``same_subtree``, ``in:`` filters) and whole
    ``provider_summaries``, which the SDK's resources do not give. Every
    request names its microversion, so a default microversion configured
    for the proxy (``placement_api_version``) is never sent instead.
    """

    service = 'Placement'
    _max_versions = {}  # endpoint URL -> (major, minor), once per process
    _lock = threading.Lock()

    def __init__(self, adapter):
        self._adapter = adapter
        self._endpoint = None
        self._classes = None
        self.request_count = 0

    @property
    def endpoint(self):
        if self._endpoint is None:
            what = _('Looking up the Placement endpoint')
            with translate_errors(self.service, what):
                endpoint = self._adapter.get_endpoint()
            if not endpoint:
                raise APIError(
                    _(
                        '%(what)s: the service catalog has no placement '
                        'endpoint. Check --os-region-name and --os-interface.'
                    )
                    % {'what': what}
                )
            self._endpoint = endpoint.rstrip('/')
        return self._endpoint

    def _send(self, method, path, what, version=None, **kwargs):
        kwargs.setdefault('raise_exc', False)
        # always explicit: None keeps the adapter's default_microversion
        # out (keystoneauth only fills in a missing key)
        kwargs['microversion'] = (
            version_str(version) if version is not None else None)
        endpoint = self.endpoint
        self.request_count += 1
        with translate_errors(self.service, what):
            try:
                response = self._adapter.request(path, method, **kwargs)
            except ks_exc.ConnectTimeout:
                raise
            except ks_exc.ConnectionError as exc:
                raise _connection_error(
                    self.service, what, exc, endpoint
                ) from exc
        return _check_response(self.service, what, response, endpoint)

    def max_version(self):
        """The server's maximum microversion, read once per process.

        From keystoneauth's version discovery of the endpoint (the
        session caches the document), kept per endpoint URL.
        """
        endpoint = self.endpoint
        with self._lock:
            known = self._max_versions.get(endpoint)
        if known is not None:
            return known
        what = _('Reading the Placement API version')
        with translate_errors(self.service, what):
            data = self._adapter.get_endpoint_data()
        best = _microversion(getattr(data, 'max_microversion', None))
        if best is None:
            # keystoneauth swallows connection and HTTP errors of
            # discovery: one plain request says what went wrong
            self._send('GET', '/', what)
            raise APIError(
                _(
                    '%(what)s: Placement at %(endpoint)s publishes no '
                    'microversion range in its version document. Check '
                    'that this is a Placement endpoint (service catalog, '
                    'or placement_endpoint_override in clouds.yaml).'
                )
                % {'what': what, 'endpoint': endpoint}
            )
        with self._lock:
            self._max_versions[endpoint] = best
        return best

    def require(self, version, what):
        """Refuse, before sending it, a call the server cannot serve."""
        have = self.max_version()
        if have < version:
            raise APIError(
                _(
                    '%(what)s needs Placement API microversion %(need)s, but '
                    'the Placement service at %(endpoint)s supports only up '
                    'to %(have)s. Upgrade Placement (1.29 came with Rocky, '
                    '1.36 with Train).'
                )
                % {
                    'what': what,
                    'need': version_str(version),
                    'endpoint': self.endpoint,
                    'have': version_str(have),
                }
            )

    def get(self, path, version, what, params=None):
        self.require(version, what)
        return _json(self._send('GET', path, what, version, params=params))

    # -- reads -------------------------------------------------------------

    def resource_providers(self):
        what = _('Listing resource providers')
        data = self.get('/resource_providers', PLACEMENT_TREE_VERSION, what)
        return data['resource_providers']

    def resource_classes(self):
        """Names of the resource classes Placement knows (read once)."""
        if self._classes is None:
            what = _('Listing resource classes')
            data = self.get('/resource_classes', (1, 2), what)
            self._classes = [rc['name'] for rc in data['resource_classes']]
        return list(self._classes)

    def allocation_candidates(self, resources, version=None, **params):
        """GET /allocation_candidates; ``resources`` is {class: amount}."""
        version = version or PLACEMENT_SUMMARY_VERSION
        query = dict(params)
        query['resources'] = ','.join(
            '%s:%d' % (rc, amount) for rc, amount in sorted(resources.items())
        )
        what = _('Asking Placement for allocation candidates (%s)') % (
            query['resources']
        )
        return self.get('/allocation_candidates', version, what, query)

    # -- gpu candidates ------------------------------------------------------

    def candidates_query(self, params, version=PLACEMENT_NOVA_VERSION,
                         what=None):
        """GET /allocation_candidates with a query given as (key, value)
        pairs, sent in that order (the query Nova's scheduler builds)."""
        what = what or _('Asking Placement for allocation candidates')
        return self.get('/allocation_candidates', version, what,
                        list(params))

    def project_usages(self, project_id):
        """{resource class: amount} PROJECT_ID holds (``GET /usages``),
        what Nova's unified limits count."""
        what = _('Reading the Placement usages of project %s') % project_id
        data = self.get('/usages', PLACEMENT_USAGES_VERSION, what,
                        params={'project_id': project_id})
        return dict((data or {}).get('usages') or {})

    def provider_allocations(self, uuid):
        """{consumer uuid: {class: amount}} allocated from one provider."""
        what = _('Reading allocations of resource provider %s') % uuid
        data = self.get('/resource_providers/%s/allocations' % uuid,
                        (1, 0), what) or {}
        return {consumer: dict(item.get('resources') or {})
                for consumer, item in (data.get('allocations')
                                       or {}).items()}

    def providers_allocations(self, uuids):
        """provider_allocations of many providers, concurrently, bounded:
        {provider uuid: {consumer uuid: {class: amount}}}."""
        uuids = sorted(set(uuids))
        if not uuids:
            return {}
        self.max_version()  # negotiate once, before the threads start
        with concurrent.futures.ThreadPoolExecutor(
                min(MAX_WORKERS, len(uuids))) as pool:
            return dict(zip(uuids, pool.map(self.provider_allocations,
                                            uuids), strict=True))

    def provider_detail(self, uuid, with_traits=False):
        """Inventories, usages (and traits) of one provider, as Placement
        answers them: {'inventories', 'usages'[, 'traits']}.

        The slow path: used only for trees that no allocation-candidates
        answer covered.
        """
        what = _('Reading resource provider %s') % uuid
        base = '/resource_providers/%s' % uuid
        inv = self.get(base + '/inventories', (1, 0), what)
        use = self.get(base + '/usages', (1, 0), what)
        detail = {'inventories': inv['inventories'],
                  'usages': use['usages']}
        if with_traits:
            traits = self.get(base + '/traits', (1, 6), what)
            detail['traits'] = traits['traits']
        return detail

    def provider_details(self, uuids, with_traits=False):
        """provider_detail for many providers, concurrently and bounded."""
        uuids = list(uuids)
        if not uuids:
            return {}
        self.max_version()  # negotiate once, before the threads start
        workers = min(MAX_WORKERS, len(uuids))
        with concurrent.futures.ThreadPoolExecutor(workers) as pool:
            results = pool.map(
                lambda u: self.provider_detail(u, with_traits), uuids
            )
            return dict(zip(uuids, results, strict=True))

    # -- pools: providers, traits and aggregates ---------------------------

    def send(self, method, path, version, what, body=None, params=None):
        """A write (or read) with a required microversion; JSON or None."""
        self.require(version, what)
        kwargs = {'params': params}
        if body is not None:
            kwargs['json'] = body
        return _json(self._send(method, path, what, version, **kwargs))

    def inventories(self, uuid):
        what = _('Reading inventories of resource provider %s') % uuid
        data = self.get('/resource_providers/%s/inventories' % uuid,
                        (1, 0), what)
        return data['inventories']

    def traits(self, uuid):
        """(traits, provider generation) of one provider."""
        what = _('Reading traits of resource provider %s') % uuid
        data = self.get('/resource_providers/%s/traits' % uuid,
                        PLACEMENT_TRAITS_VERSION, what)
        return data['traits'], data['resource_provider_generation']

    def update_traits(self, uuid, add=(), remove=(), retries=5):
        """Add/remove traits on a provider, keeping the others.

        Read-modify-write on the provider generation; a generation
        conflict (Nova's resource tracker writing at the same time) is
        retried. Returns (added, removed): what actually changed.
        """
        return self._update_set(
            uuid, 'traits', PLACEMENT_TRAITS_VERSION, self.traits,
            _('Setting traits of resource provider %s') % uuid,
            add, remove, retries)

    def aggregates(self, uuid):
        """(aggregate uuids, provider generation) of one provider."""
        what = _('Reading aggregates of resource provider %s') % uuid
        data = self.get('/resource_providers/%s/aggregates' % uuid,
                        PLACEMENT_AGGREGATES_VERSION, what)
        return data['aggregates'], data['resource_provider_generation']

    def update_aggregates(self, uuid, add=(), remove=(), retries=5):
        """Add/remove Placement aggregates of a provider, keeping others.

        What ``nova-manage placement sync_aggregates`` does for a host
        whose Nova aggregate membership was not mirrored. Returns (added,
        removed).
        """
        return self._update_set(
            uuid, 'aggregates', PLACEMENT_AGGREGATES_VERSION,
            self.aggregates,
            _('Setting aggregates of resource provider %s') % uuid,
            add, remove, retries)

    def _update_set(self, uuid, field, version, read, what, add, remove,
                    retries):
        """Read-modify-write of a provider's trait or aggregate set."""
        for attempt in range(retries):
            items, generation = read(uuid)
            current = set(items)
            wanted = (current | set(add)) - set(remove)
            if wanted == current:
                return set(), set()
            try:
                self.send(
                    'PUT', '/resource_providers/%s/%s' % (uuid, field),
                    version, what,
                    body={field: sorted(wanted),
                          'resource_provider_generation': generation},
                )
            except Conflict:
                if attempt == retries - 1:
                    raise
                LOG.debug('generation conflict on %s, retrying', uuid)
                continue
            except APIError as exc:
                # Under concurrent writes to one provider Placement at
                # times answers HTTP 500 with a database deadlock or
                # "Another thread concurrently updated the resource
                # provider data. Please retry your update."; the write is
                # guarded by the generation, so re-reading and trying
                # again is safe
                text = str(exc).lower()
                if (exc.status is None or exc.status < 500
                        or not any(m in text for m in _TRANSIENT_500)
                        or attempt == retries - 1):
                    raise
                LOG.debug('transient Placement error on %s, retrying', uuid)
                _backoff(attempt)
                continue
            return wanted - current, current - wanted
        return set(), set()

    def existing_traits(self, names):
        what = _('Listing traits')
        data = self.get('/traits', PLACEMENT_TRAITS_VERSION, what,
                        params={'name': 'in:' + ','.join(sorted(names))})
        return set(data['traits'])

    def ensure_traits(self, names):
        """Create the custom traits that are missing; return those made."""
        names = set(names)
        if not names:
            return set()
        made = set()
        for name in sorted(names - self.existing_traits(names)):
            what = _('Creating trait %s') % name
            self.send('PUT', '/traits/%s' % name, PLACEMENT_TRAITS_VERSION,
                      what)
            made.add(name)
        return made

    def create_trait(self, name):
        """Create one custom trait (PUT is idempotent: 201 or 204)."""
        what = _('Creating trait %s') % name
        self.send('PUT', '/traits/%s' % name, PLACEMENT_TRAITS_VERSION, what)

    def delete_trait(self, name):
        """Delete a custom trait; False when a provider still has it."""
        what = _('Deleting trait %s') % name
        try:
            self.send('DELETE', '/traits/%s' % name,
                      PLACEMENT_TRAITS_VERSION, what)
        except Conflict:
            return False
        except NotFound:
            return True
        return True

    def providers_with_trait(self, trait):
        """Uuids of the providers that have ``trait``."""
        what = _('Listing resource providers with trait %s') % trait
        data = self.get('/resource_providers', (1, 18), what,
                        params={'required': trait})
        return {rp['uuid'] for rp in data['resource_providers']}

    def members_of(self, aggregate_uuid):
        """Uuids of the providers in a Placement aggregate."""
        what = _('Listing resource providers in aggregate %s') % (
            aggregate_uuid)
        data = self.get('/resource_providers', PLACEMENT_TREE_VERSION, what,
                        params={'member_of': aggregate_uuid})
        return {rp['uuid'] for rp in data['resource_providers']}


class Compute:
    """Nova through the SDK's compute proxy."""

    service = 'Nova'

    def __init__(self, proxy):
        self._proxy = proxy

    def hypervisors(self):
        """Every hypervisor, at a microversion where id is the provider uuid.

        Sends 2.53 explicitly whatever --os-compute-api-version says, and
        follows the pagination links.
        """
        what = _('Listing hypervisors (compute API %s)') % (
            COMPUTE_HYPERVISOR_UUID_VERSION
        )
        found = []
        params = {}
        # raw, for the microversion: the SDK's Hypervisor negotiates up to
        # 2.88, which drops cpu_info, vcpus, memory_mb and the other fields
        # the host filters read; 2.53 is the oldest where id is the uuid
        with translate_errors(self.service, what):
            while True:
                response = self._proxy.get(
                    '/os-hypervisors/detail',
                    microversion=COMPUTE_HYPERVISOR_UUID_VERSION,
                    params=params,
                    raise_exc=False,
                )
                _check_response(self.service, what, response)
                data = _json(response) or {}
                page = data.get('hypervisors') or []
                found.extend(page)
                more = [link for link in data.get('hypervisors_links') or []
                        if link.get('rel') == 'next']
                # an empty page ends the list even if it carries a next
                # link: its marker would be the one just sent
                if not more or not page:
                    return found
                params = {'marker': page[-1]['id']}

    def aggregates(self):
        with translate_errors(self.service, _('Listing host aggregates')):
            return list(self._proxy.aggregates())

    # -- pools: services, aggregates ---------------------------------------

    def compute_services(self):
        """nova-compute services as dicts: host, zone, status, state."""
        what = _('Listing compute services')
        with translate_errors(self.service, what):
            return [
                {'host': svc.host, 'zone': svc.availability_zone,
                 'status': svc.status, 'state': svc.state, 'id': svc.id}
                for svc in self._proxy.services(binary='nova-compute')
            ]

    def host_has_servers(self, host):
        what = _('Listing servers on host %s') % host
        with translate_errors(self.service, what):
            for _server in self._proxy.servers(
                all_projects=True, compute_host=host, limit=1
            ):
                return True
        return False

    def create_aggregate(self, name, zone=None):
        what = _('Creating host aggregate %s') % name
        with translate_errors(self.service, what):
            return self._proxy.create_aggregate(
                name=name, availability_zone=zone
            )

    def set_aggregate_metadata(self, aggregate, metadata):
        """Set keys (value None deletes a key); returns the aggregate."""
        what = _('Setting metadata of host aggregate %s') % aggregate.name
        with translate_errors(self.service, what):
            return self._proxy.set_aggregate_metadata(aggregate, metadata)

    def add_host(self, aggregate, host):
        what = _('Adding host %(host)s to host aggregate %(agg)s') % {
            'host': host, 'agg': aggregate.name}
        with translate_errors(self.service, what):
            return self._proxy.add_host_to_aggregate(aggregate, host)

    def remove_host(self, aggregate, host, retries=RETRIES):
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
                with translate_errors(self.service, what):
                    return self._proxy.remove_host_from_aggregate(
                        aggregate, host)
            except Conflict as exc:
                if (attempt == retries - 1
                        or 'resource provider' not in str(exc).lower()):
                    raise
                LOG.debug('Placement race removing %s, retrying', host)
                _backoff(attempt)

    def delete_aggregate(self, aggregate):
        what = _('Deleting host aggregate %s') % aggregate.name
        with translate_errors(self.service, what):
            self._proxy.delete_aggregate(aggregate, ignore_missing=True)

    def get_aggregate(self, aggregate):
        what = _('Reading host aggregate %s') % aggregate.name
        with translate_errors(self.service, what):
            return self._proxy.get_aggregate(aggregate)

    def flavors(self):
        """Every flavor (public and private) with its extra specs.

        One paged ``GET /flavors/detail`` at compute API 2.61, where extra
        specs come inline: no request per flavor.
        """
        what = _('Listing flavors (compute API %s)') % (
            COMPUTE_FLAVOR_SPECS_VERSION)
        found = []
        params = {'is_public': 'None'}
        # raw, for the microversion: the SDK's Flavor negotiates the
        # highest one the server has up to 2.61, and below 2.61 lists come
        # without extra specs (silently wrong pools); 2.61 sent explicitly
        # fails loudly instead. The plain dicts are what flavor plans diff
        with translate_errors(self.service, what):
            while True:
                response = self._proxy.get(
                    '/flavors/detail',
                    microversion=COMPUTE_FLAVOR_SPECS_VERSION,
                    params=params, raise_exc=False)
                _check_response(self.service, what, response)
                data = _json(response) or {}
                page = data.get('flavors') or []
                found.extend(page)
                more = [link for link in data.get('flavors_links') or []
                        if link.get('rel') == 'next']
                if not more or not page:
                    return found
                params = {'is_public': 'None', 'marker': page[-1]['id']}

    # -- flavors (gpu flavor) ------------------------------------------------
    # Raw calls at compute API 2.61: descriptions (2.55) and extra specs
    # (2.61) come in every flavor body; answers are plain dicts.

    def _flavor_call(self, method, url, what, body=None, ok_missing=False):
        with translate_errors(self.service, what):
            kwargs = {'microversion': COMPUTE_FLAVOR_SPECS_VERSION,
                      'raise_exc': False}
            if body is not None:
                kwargs['json'] = body
            response = getattr(self._proxy, method)(url, **kwargs)
            if ok_missing and response.status_code == 404:
                return None
            _check_response(self.service, what, response)
            return _json(response) or {}

    def get_flavor(self, flavor_id):
        """Flavor FLAVOR_ID (dict with extra_specs) by ID only, or None.

        What a write acts on: ``find_flavor`` would take a name when no
        flavor has that ID.
        """
        what = _('Reading flavor %s') % flavor_id
        quoted = urllib.parse.quote(flavor_id, safe='')
        data = self._flavor_call('get', '/flavors/%s' % quoted, what,
                                 ok_missing=True)
        return data['flavor'] if data else None

    def find_flavor(self, name_or_id, ignore_missing=False):
        """One flavor (dict with extra_specs) by ID or exact name (the ID
        first, as Nova and OSC do: for what the operator typed)."""
        flavor = self.get_flavor(name_or_id)
        if flavor is not None:
            return flavor
        found = [f for f in self.flavors() if f.get('name') == name_or_id]
        if len(found) == 1:
            return found[0]
        if found:
            raise APIError(
                _('%(n)d flavors are named %(name)s: give the flavor ID.')
                % {'n': len(found), 'name': name_or_id})
        if ignore_missing:
            return None
        raise NotFound(
            _('No flavor with name or ID %s (see "openstack gpu flavor '
              'list").') % name_or_id, 404)

    def create_flavor(self, **fields):
        """POST /flavors; FIELDS as in Nova's flavor body."""
        what = _('Creating flavor %s') % fields.get('name')
        body = {'flavor': {k: v for k, v in fields.items()
                           if v is not None}}
        return self._flavor_call('post', '/flavors', what, body)['flavor']

    def set_flavor_extra_specs(self, flavor_id, extra_specs):
        what = _('Setting extra specs of flavor %s') % flavor_id
        return self._flavor_call(
            'post', '/flavors/%s/os-extra_specs' % flavor_id, what,
            {'extra_specs': extra_specs})['extra_specs']

    def add_flavor_access(self, flavor_id, project_id):
        what = _('Giving project %(project)s access to flavor %(flavor)s') % {
            'project': project_id, 'flavor': flavor_id}
        self._flavor_call('post', '/flavors/%s/action' % flavor_id, what,
                          {'addTenantAccess': {'tenant': project_id}})

    def remove_flavor_access(self, flavor_id, project_id):
        what = _('Taking access to flavor %(flavor)s from project '
                 '%(project)s') % {'project': project_id,
                                   'flavor': flavor_id}
        self._flavor_call('post', '/flavors/%s/action' % flavor_id, what,
                          {'removeTenantAccess': {'tenant': project_id}})

    def delete_flavor_extra_spec(self, flavor_id, key):
        what = _('Deleting extra spec %(key)s of flavor %(flavor)s') % {
            'key': key, 'flavor': flavor_id}
        quoted = urllib.parse.quote(key, safe='')
        self._flavor_call(
            'delete', '/flavors/%s/os-extra_specs/%s' % (flavor_id, quoted),
            what, ok_missing=True)

    def flavor_access(self, flavor_id):
        """Project ids that may use a private flavor."""
        what = _('Reading the access list of flavor %s') % flavor_id
        data = self._flavor_call(
            'get', '/flavors/%s/os-flavor-access' % flavor_id, what)
        return sorted(a['tenant_id'] for a in data.get('flavor_access', []))

    def delete_flavor(self, flavor_id):
        what = _('Deleting flavor %s') % flavor_id
        self._flavor_call('delete', '/flavors/%s' % flavor_id, what)

    def _paged_get(self, url, what, version, params, key):
        """Every item of a paged Nova list (``<key>_links`` next)."""
        # raw, for two page shapes the SDK does not follow alike: a list
        # (servers, tenant_usages) and one project's tenant_usage, a dict
        # whose server_usages are paged by tenant_usage_links (the SDK's
        # get_usage fetches the first page only). The marker is taken
        # from the next link, as Nova writes it.
        found = []
        params = dict(params)
        with translate_errors(self.service, what):
            while True:
                response = self._proxy.get(url, microversion=version,
                                           params=params, raise_exc=False)
                _check_response(self.service, what, response)
                data = _json(response) or {}
                page = data.get(key)
                if isinstance(page, dict):  # tenant_usage (one project)
                    page = page.get('server_usages') or []
                found.extend(page or [])
                more = [link for link in data.get(key + '_links') or []
                        if link.get('rel') == 'next']
                if not more or not page:
                    return found
                query = urllib.parse.urlsplit(more[0]['href']).query
                params = dict(params, marker=dict(
                    urllib.parse.parse_qsl(query)).get('marker'))

    def servers_detail(self, all_projects=False, project_id=None,
                       changes_since=None):
        """Servers with their embedded flavor (extra specs included),
        as dicts: ``GET /servers/detail`` at compute API 2.47, paged.

        CHANGES_SINCE (ISO time) lists servers changed since then,
        deleted ones included (Nova's ``changes-since``).
        """
        what = _('Listing servers (compute API %s)') % (
            COMPUTE_EMBEDDED_FLAVOR_VERSION)
        # raw, for the microversion and the fields: 2.47 pinned gives the
        # embedded flavor with its extra specs in one shape on every cloud
        # (the SDK's Server negotiates up to 2.100, and below 2.47 has a
        # flavor id only: silently no GPUs); usage.server_rows reads Nova's
        # own keys (OS-EXT-SRV-ATTR:host, OS-SRV-USG:launched_at, tenant_id)
        # from the plain dicts, which the SDK renames
        params = {}
        if all_projects:
            params['all_tenants'] = 1
        if project_id:
            params['project_id'] = project_id
        if changes_since:
            params['changes-since'] = changes_since
        return self._paged_get('/servers/detail', what,
                               COMPUTE_EMBEDDED_FLAVOR_VERSION, params,
                               'servers')

    def server_usages(self, start, end, project_id=None):
        """Nova's per-server usage in [START, END) (naive UTC datetimes),
        deleted servers included: ``os-simple-tenant-usage`` at 2.40,
        every project (admin) or one (``PROJECT_ID``), paged.
        """
        fmt = '%Y-%m-%dT%H:%M:%S.%f'
        # raw, for the microversion and the page links: 2.40 adds
        # tenant_usage(s)_links, which _paged_get follows for one project
        # too (the SDK's get_usage reads one page: a project with more
        # servers than Nova's page size would lose GPU-hours)
        params = {'start': start.strftime(fmt), 'end': end.strftime(fmt)}
        if project_id:
            what = _('Reading the server usage of project %s') % project_id
            return self._paged_get(
                '/os-simple-tenant-usage/%s' % project_id, what,
                COMPUTE_USAGE_LINKS_VERSION, params, 'tenant_usage')
        what = _('Reading the server usage of every project')
        params['detailed'] = 1
        usages = self._paged_get('/os-simple-tenant-usage', what,
                                 COMPUTE_USAGE_LINKS_VERSION, params,
                                 'tenant_usages')
        return [item for tenant in usages
                for item in tenant.get('server_usages') or []]

    def project_limits(self, project_id):
        """Absolute compute limits and usage of a project, as the API
        names them (maxTotalInstances, totalInstancesUsed, ...).

        ``GET /limits?tenant_id=`` (another project: admin); instances,
        cores and RAM are the same at every microversion.
        """
        what = _('Reading the compute limits of project %s') % project_id
        with translate_errors(self.service, what):
            # tenant_id=, the name Nova reads: the SDK's project_id alias
            # sends ?project_id=, which Nova ignores (own project's limits)
            absolute = self._proxy.get_limits(tenant_id=project_id).absolute
        return {wire: getattr(absolute, attribute, None)
                for wire, attribute in COMPUTE_ABSOLUTE_LIMITS}


class Image:
    """Glance through the SDK's image proxy, as plain dicts.

    Glance v2 keeps image properties as top-level members of the image, so
    the raw JSON is what ``gpu image`` reads and JSON-patches.
    """

    service = 'Glance'
    PATCH_TYPE = 'application/openstack-images-v2.1-json-patch'

    def __init__(self, proxy):
        self._proxy = proxy

    def _call(self, method, url, what, ok_missing=False, **kwargs):
        # raw, for the body shape: the SDK's Image moves properties it does
        # not know under ``properties`` and computes its own JSON patch;
        # gpuclient reads and patches the top-level members Glance keeps
        with translate_errors(self.service, what):
            response = getattr(self._proxy, method)(
                url, raise_exc=False, **kwargs)
            if ok_missing and response.status_code == 404:
                return None
            _check_response(self.service, what, response)
            return _json(response) or {}

    def images(self, page_size=200):
        """Every image the caller can see (dicts), following next links."""
        what = _('Listing images')
        found, params = [], {'limit': page_size}
        url = '/images'
        while url:
            data = self._call('get', url, what, params=params)
            page = data.get('images') or []
            found.extend(page)
            nxt = data.get('next')
            if not nxt or not page:
                break
            parts = urllib.parse.urlsplit(nxt)
            url = parts.path.replace('/v2', '', 1) if (
                parts.path.startswith('/v2/')) else parts.path
            params = dict(urllib.parse.parse_qsl(parts.query))
        return found

    def find_image(self, name_or_id):
        """One image (dict) by ID or exact name."""
        what = _('Reading image %s') % name_or_id
        if re.fullmatch(r'[0-9a-fA-F-]{32,36}', name_or_id):
            image = self._call('get', '/images/%s' % name_or_id, what,
                               ok_missing=True)
            if image:
                return image
        data = self._call('get', '/images', what,
                          params={'name': name_or_id})
        found = data.get('images') or []
        if len(found) == 1:
            return found[0]
        if found:
            raise APIError(
                _('%(n)d images are named %(name)s: give the image ID.')
                % {'n': len(found), 'name': name_or_id})
        raise NotFound(
            _('No image with name or ID %s (see "openstack image list").')
            % name_or_id, 404)

    def update_properties(self, image, changes):
        """Set (value) or remove (None) image properties in one PATCH."""
        what = _('Updating properties of image %s') % image['id']
        patch = []
        for key, value in sorted(changes.items()):
            if value is None:
                if key in image:
                    patch.append({'op': 'remove', 'path': '/' + key})
            else:
                op = 'replace' if key in image else 'add'
                patch.append({'op': op, 'path': '/' + key, 'value': value})
        if not patch:
            return image
        return self._call('patch', '/images/%s' % image['id'], what,
                          json=patch,
                          headers={'Content-Type': self.PATCH_TYPE})


class Baremetal:
    """Ironic's node list through the SDK's baremetal proxy (read only).

    Optional detail for bare-metal answers that stand on Placement alone:
    ``nodes`` is None when the catalog has no Ironic endpoint, {} when
    Ironic lists nothing or refuses the caller (its default policy hides
    nodes from project-scoped tokens, admin ones included).
    """

    service = 'Ironic'

    def __init__(self, connection):
        self._conn = connection

    def nodes(self, page_size=1000):
        """{node uuid: node as Ironic answers it}, {} or None (see the
        class)."""
        what = _('Listing bare-metal nodes (Ironic API %s)') % (
            BAREMETAL_TRAITS_VERSION)
        # raw, for the fields and the refusal: GET /nodes?fields= at 1.37
        # (node traits) returns only BAREMETAL_NODE_FIELDS, as plain dicts,
        # in one request per page; a 401/403 (the
        # default policy hides nodes from project-scoped tokens) is "not
        # shown", not an error, which needs the response, not an exception
        try:
            proxy = self._conn.baremetal
            params = {'fields': ','.join(BAREMETAL_NODE_FIELDS),
                      'limit': page_size}
            found = {}
            while True:
                response = proxy.get(
                    '/nodes', microversion=BAREMETAL_TRAITS_VERSION,
                    params=params, raise_exc=False)
                if response.status_code in (401, 403):
                    LOG.debug('%s: HTTP %s', what, response.status_code)
                    return {}
                _check_response(self.service, what, response)
                page = (_json(response) or {}).get('nodes') or []
                for node in page:
                    found[node.get('uuid') or node.get('id')] = node
                # Ironic caps a page at its [api]max_limit, which may be
                # less than page_size, and links the next page: follow it
                nxt = (_json(response) or {}).get('next')
                if not nxt or not page:
                    return found
                params = dict(params, **dict(urllib.parse.parse_qsl(
                    urllib.parse.urlsplit(nxt).query)))
        except (sdk_exc.ServiceDisabledException, ks_exc.EndpointNotFound,
                sdk_exc.EndpointNotFound) as exc:
            LOG.debug('%s: no Ironic endpoint (%s)', what, exc)
            return None
        except (APIError, ks_exc.ClientException,
                sdk_exc.SDKException) as exc:
            # detail only: the Placement-based answer stands
            LOG.warning(_('%(what)s failed, node states are not shown: '
                          '%(error)s'), {'what': what, 'error': exc})
            return None


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
            raise APIError(
                _('%s: this authentication has no service catalog (token '
                  'and endpoint given?); Nova\'s limits are kept under the '
                  'compute service of the catalog: authenticate with a '
                  'user.') % what)
        with translate_errors(self.service, what):
            catalog = get_access(self._session).service_catalog.catalog or []
        entries = [e for e in catalog if e.get('type') == 'compute']
        if len(entries) != 1 or not entries[0].get('id'):
            raise APIError(
                _('%(what)s: %(n)d compute services in the catalog. Nova '
                  'keeps its limits under one compute service: check the '
                  'catalog ("openstack catalog list").')
                % {'what': what, 'n': len(entries)})
        regions = sorted({ep.get('region_id') or ep.get('region')
                          for ep in entries[0].get('endpoints') or ()
                          if ep.get('region_id') or ep.get('region')})
        region = self._region_name
        if not region and len(regions) > 1:
            raise APIError(
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
        """{resource name: {'id', 'limit'}}: the defaults of every
        project."""
        what = _('Listing the registered limits of the compute service')
        with translate_errors(self.service, what):
            items = list(self._proxy.registered_limits(**self._query()))
        return {r.resource_name: {'id': r.id, 'limit': r.default_limit}
                for r in items}

    def limits(self, project_id=None):
        """[{'id', 'project_id', 'resource_name', 'resource_limit'}]:
        project limits (of PROJECT_ID, or every one the caller sees)."""
        what = _('Listing the project limits of the compute service')
        with translate_errors(self.service, what):
            items = list(self._proxy.limits(
                **self._query(project_id=project_id)))
        return [{'id': r.id, 'project_id': r.project_id,
                 'resource_name': r.resource_name,
                 'resource_limit': r.resource_limit} for r in items]

    def create_registered(self, name, value):
        service_id, region = self.scope()
        what = _('Creating the registered limit %s') % name
        with translate_errors(self.service, what):
            self._proxy.create_registered_limit(
                service_id=service_id, region_id=region,
                resource_name=name, default_limit=value)

    def update_registered(self, limit_id, value):
        what = _('Updating the registered limit %s') % limit_id
        with translate_errors(self.service, what):
            self._proxy.update_registered_limit(limit_id,
                                                default_limit=value)

    def delete_registered(self, limit_id):
        what = _('Deleting the registered limit %s') % limit_id
        with translate_errors(self.service, what):
            self._proxy.delete_registered_limit(limit_id)

    def create_limit(self, project_id, name, value):
        service_id, region = self.scope()
        what = _('Creating the limit %(name)s of project %(project)s') % {
            'name': name, 'project': project_id}
        with translate_errors(self.service, what):
            self._proxy.create_limit(
                service_id=service_id, region_id=region,
                project_id=project_id, resource_name=name,
                resource_limit=value)

    def update_limit(self, limit_id, value):
        what = _('Updating the limit %s') % limit_id
        with translate_errors(self.service, what):
            self._proxy.update_limit(limit_id, resource_limit=value)

    def delete_limit(self, limit_id):
        what = _('Deleting the limit %s') % limit_id
        with translate_errors(self.service, what):
            self._proxy.delete_limit(limit_id)

    def project_names(self):
        """{project id: name} of the projects the caller may list, or
        {} when Keystone does not let it.

        Keystone does not page: with ``list_limit`` set it answers the
        first ones only (``truncated``), so a project missing here is not
        gone: see find_projects.
        """
        try:
            with translate_errors(self.service, _('Listing projects')):
                return {p.id: p.name for p in self._proxy.projects()}
        except APIError as exc:
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
                with translate_errors(self.service, what):
                    project = self._proxy.find_project(
                        value, ignore_missing=True)
            except APIError as exc:
                LOG.debug('%s: %s', what, exc)
                found[value] = None
                continue
            if project is not None:
                found[project.id] = project.name
        return found


class GpuClient:
    """What ``client_manager.gpu`` is: the per-service clients, lazily."""

    def __init__(
        self, session, sdk_connection, region_name=None, interface=None,
        api_timeout=None,
    ):
        self._session = session
        self._conn = sdk_connection
        # every request of both sessions (OSC's and the SDK connection's,
        # one object under OSC) gets connect and read timeouts
        set_timeouts(session, api_timeout)
        set_timeouts(getattr(sdk_connection, 'session', None), api_timeout)
        self._region_name = region_name
        self._interface = interface
        self._placement = None
        self._compute = None

    @property
    def placement(self):
        if self._placement is None:
            # the SDK's proxy: clouds.yaml placement_* settings apply
            with translate_errors('Placement',
                                  _('Connecting to Placement')):
                proxy = self._conn.placement
            self._placement = Placement(proxy)
        return self._placement

    @property
    def compute(self):
        if self._compute is None:
            self._compute = Compute(self._conn.compute)
        return self._compute

    @property
    def image(self):
        if getattr(self, '_image', None) is None:
            self._image = Image(self._conn.image)
        return self._image

    @property
    def baremetal(self):
        if getattr(self, '_baremetal', None) is None:
            self._baremetal = Baremetal(self._conn)
        return self._baremetal

    @property
    def limits(self):
        if getattr(self, '_limits', None) is None:
            self._limits = Limits(self._conn.identity, self._session,
                                  self._region_name)
        return self._limits

    def current_project_id(self):
        """The project the command runs in (its token's scope)."""
        with translate_errors('Keystone', _('Reading the current project')):
            return self._session.get_project_id()

    def current_project(self):
        """(id, name) of the project the command runs in."""
        with translate_errors('Keystone', _('Reading the current project')):
            access = self._session.auth.get_access(self._session)
        return access.project_id, access.project_name

    def project_ids(self, names_or_ids, domain=None):
        """Keystone project ids of several names or ids, in order, once
        each.

        ``domain`` (--project-domain: a domain name or ID) scopes the names
        as in OSC's own commands: it is looked up once, with OSC's identity
        helper, and the projects are found in it.
        """
        domain_id = self.domain_id(domain) if domain else None
        found = []
        for name_or_id in names_or_ids:
            project_id = self._find_project_id(name_or_id, domain_id, domain)
            if project_id not in found:
                found.append(project_id)
        return found

    def project_id(self, name_or_id, domain=None):
        """A Keystone project id from a name or id (see project_ids)."""
        return self.project_ids([name_or_id], domain)[0]

    def domain_id(self, name_or_id):
        """A Keystone domain id from a name or id (OSC's helper)."""
        # imported here: plugin loading stays cheap for other commands
        from openstackclient.identity import common as identity_common

        what = _('Looking up domain %s') % name_or_id
        try:
            with translate_errors('Keystone', what):
                return identity_common.find_domain_id_sdk(
                    self._conn.identity, name_or_id)
        except APIError:
            raise
        except exceptions.CommandError as exc:
            # OSC's helper raises a CommandError without a message
            raise NotFound(
                _('No domain with name or ID %s. Check the name ("openstack '
                  'domain list"), or give the domain ID.') % name_or_id,
                404) from exc

    def _find_project_id(self, name_or_id, domain_id=None, domain=None):
        """The project's id; like OSC's ``find_project_id_sdk``, except
        that when Keystone forbids the lookup only an ID-shaped value is
        taken as it is (OSC would take a name too, and a project name
        written as a project id into aggregate metadata or flavor access
        silently lets nobody in).
        """
        what = _('Looking up project %s') % name_or_id
        query = {'domain_id': domain_id} if domain_id else {}
        try:
            with translate_errors('Keystone', what):
                project = self._conn.identity.find_project(
                    name_or_id, ignore_missing=True, **query
                )
        except APIError as exc:
            if exc.status == 403 and re.fullmatch(r'[0-9a-f]{32}',
                                                  name_or_id):
                # not allowed to look it up, but it is an id
                return name_or_id
            raise
        if project is None:
            if domain_id:
                raise NotFound(
                    _('No project with name or ID %(project)s in domain '
                      '%(domain)s. Check both names ("openstack project '
                      'list --domain %(domain)s"), or give the project '
                      'ID.') % {'project': name_or_id, 'domain': domain},
                    404)
            raise NotFound(
                _('No project with name or ID %s. Check the name, or give '
                  'the project ID.') % name_or_id, 404)
        return project.id
