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


"""Placement, over the placement proxy of OSC's openstacksdk connection.

The proxy is a keystoneauth ``Adapter``, so clouds.yaml's
``placement_endpoint_override``, interface and region apply. Placement's
maximum microversion comes from the endpoint's version discovery, once
per process and endpoint (lazily, on the first Placement call), and every
call sends the microversion it needs (``gpuclient.cloud.versions``).
"""

import concurrent.futures
import contextlib
import logging
import threading

from keystoneauth1 import exceptions as ks_exc

from gpuclient.cloud import errors
from gpuclient.cloud import http
from gpuclient.cloud import pager
from gpuclient.cloud import versions
from gpuclient.i18n import _

LOG = logging.getLogger(__name__)

# Placement HTTP 500 messages that mean "try again" (concurrent writes).
_TRANSIENT_500 = ('deadlock', 'concurrently updated', 'please retry')

# How often a provider's trait or aggregate set is written again after a
# lost race. A root provider is written by Nova's resource tracker and by
# every pool command that joins or leaves it; writers that start together
# lose together unless each waits a random while (http.backoff), and one
# of N writers can lose N-1 races before its turn: room for a few more.
PROVIDER_RETRIES = 10

# Bound on concurrent per-provider requests (the fallback path only).
MAX_WORKERS = 8


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
    ``placement_endpoint_override``. Trait lists, creates and deletes,
    resource classes and the provider lists (all of them, by trait or by
    aggregate) are the SDK's calls (``_sdk``); the rest is raw, each with
    its reason at the call, true of openstacksdk 4.11 (the floor):
    allocation candidates, usages and allocations, which it has no call
    for, and writes guarded by the generation read before, whose calls
    take no microversion.
    Every request names its microversion, so a default microversion
    configured for the proxy (``placement_api_version``) is never sent
    instead, and every request counts in ``request_count``.
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
            with errors.translate_errors(self.service, what):
                endpoint = self._adapter.get_endpoint()
            if not endpoint:
                raise errors.APIError(
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
            versions.version_str(version) if version is not None else None)
        with self._request(what) as endpoint:
            response = self._adapter.request(path, method, **kwargs)
        return errors.check_response(self.service, what, response, endpoint)

    @contextlib.contextmanager
    def _request(self, what, read=False, key=None):
        """Count one request and translate its errors (naming the
        endpoint a connection failed to); yields the endpoint. READ: an
        SDK read, whose answer must be JSON (errors.sdk_read), holding
        KEY when given."""
        endpoint = self.endpoint
        self.request_count += 1
        if read:
            translate = errors.sdk_read(self.service, what, key)
        else:
            translate = errors.translate_errors(self.service, what)
        with translate:
            try:
                yield endpoint
            except ks_exc.ConnectTimeout:
                raise
            except ks_exc.ConnectionError as exc:
                raise errors.connection_error(
                    self.service, what, exc, endpoint
                ) from exc

    def _sdk(self, version, what, call, *args, read=False, key=None,
             **kwargs):
        """One call of the SDK's placement proxy, counted like a raw one.

        Refused first when the server is older than VERSION; a list the
        SDK yields is read to the end here, so its errors are translated
        too (READ, KEY: see _request).
        """
        self.require(version, what)
        with self._request(what, read, key):
            result = call(*args, **kwargs)
            if hasattr(result, '__next__'):
                result = list(result)
        return result

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
        with errors.translate_errors(self.service, what):
            data = self._adapter.get_endpoint_data()
        best = _microversion(getattr(data, 'max_microversion', None))
        if best is None:
            # keystoneauth swallows connection and HTTP errors of
            # discovery: one plain request says what went wrong
            self._send('GET', '/', what)
            raise errors.APIError(
                _(
                    '%(what)s: Placement at %(endpoint)s publishes no '
                    'microversion range in its version document. Check '
                    'that this is a Placement endpoint (service catalog, '
                    'or placement_endpoint_override in clouds.yaml).'
                )
                % {'what': what,
                   'endpoint': errors.public_host(endpoint, path=True)}
            )
        with self._lock:
            self._max_versions[endpoint] = best
        return best

    def require(self, version, what):
        """Refuse, before sending it, a call the server cannot serve."""
        have = self.max_version()
        if have < version:
            raise errors.APIError(
                _(
                    '%(what)s needs Placement API microversion %(need)s, but '
                    'the Placement service at %(endpoint)s supports only up '
                    'to %(have)s. Upgrade Placement (1.29 came with Rocky, '
                    '1.36 with Train).'
                )
                % {
                    'what': what,
                    'need': versions.version_str(version),
                    'endpoint': errors.public_host(self.endpoint,
                                                  path=True),
                    'have': versions.version_str(have),
                }
            )

    def get(self, path, version, what, params=None, key=None):
        """A read: its JSON object (holding KEY when given), else a
        CommandError naming Placement and the path
        (errors.json_answer): an HTML page answering 200 is never an
        empty answer."""
        self.require(version, what)
        return errors.json_answer(
            self.service, what,
            self._send('GET', path, what, version, params=params), key)

    # -- reads -------------------------------------------------------------

    def resource_providers(self):
        """Every resource provider, as Placement answers it at 1.14
        (parent and root provider uuids): the SDK's list, read as the
        dicts Placement answered (pager.wire: its own keys, which the
        snapshot and the planners read, not the SDK's renamed
        attributes). Placement does not page this list."""
        what = _('Listing resource providers')
        version = versions.PLACEMENT_TREE_VERSION
        found = self._sdk(version, what, self._adapter.resource_providers,
                          read=True, key='resource_providers',
                          microversion=versions.version_str(version))
        return [pager.wire(provider) for provider in found]

    def resource_classes(self):
        """Names of the resource classes Placement knows (read once)."""
        if self._classes is None:
            what = _('Listing resource classes')
            version = versions.PLACEMENT_CLASSES_VERSION
            found = self._sdk(version, what, self._adapter.resource_classes,
                              read=True,
                              microversion=versions.version_str(version))
            self._classes = [rc.name for rc in found]
        return list(self._classes)

    def allocation_candidates(self, resources, version=None, **params):
        """GET /allocation_candidates; ``resources`` is {class: amount}.

        Raw, as every allocation-candidates call: openstacksdk 4.11 (the
        floor) has no call for them; 4.22's ``allocation_candidates``
        gives each candidate only the summaries of its own providers, not
        the whole ``provider_summaries`` of 1.29+ (every provider of the
        trees) that gpuclient reads.
        """
        version = version or versions.PLACEMENT_SUMMARY_VERSION
        query = dict(params)
        query['resources'] = ','.join(
            '%s:%d' % (rc, amount) for rc, amount in sorted(resources.items())
        )
        what = _('Asking Placement for allocation candidates (%s)') % (
            query['resources']
        )
        return self.get('/allocation_candidates', version, what, query,
                        key='allocation_requests')

    # -- gpu candidate list --------------------------------------------------

    def candidates_query(self, params, version=versions.PLACEMENT_NOVA_VERSION,
                         what=None):
        """GET /allocation_candidates with a query given as (key, value)
        pairs, sent in that order (the query Nova's scheduler builds).

        Raw: repeated and numbered groups (``required``, ``resources1``,
        ``same_subtree``) at 1.36, in the order given; openstacksdk 4.11
        has no allocation-candidates call (4.22's: see
        allocation_candidates)."""
        what = what or _('Asking Placement for allocation candidates')
        return self.get('/allocation_candidates', version, what,
                        list(params), key='allocation_requests')

    def project_usages(self, project_id):
        """{resource class: amount} PROJECT_ID holds (``GET /usages``),
        what Nova's unified limits count.

        Raw: openstacksdk 4.11 (the floor) has no call for ``/usages``
        of a project (4.22's ``usages`` takes no microversion: it
        negotiates up to 1.38, which answers per consumer type)."""
        what = _('Reading the Placement usages of project %s') % project_id
        data = self.get('/usages', versions.PLACEMENT_USAGES_VERSION, what,
                        params={'project_id': project_id}, key='usages')
        return dict(data['usages'] or {})

    def provider_allocations(self, uuid):
        """{consumer uuid: {class: amount}} allocated from one provider.

        Raw: openstacksdk 4.11 (the floor) has no call for a provider's
        allocations (4.22 has ``resource_provider_allocations``)."""
        what = _('Reading allocations of resource provider %s') % uuid
        data = self.get('/resource_providers/%s/allocations' % uuid,
                        versions.PLACEMENT_BASE_VERSION, what,
                        key='allocations')
        return {consumer: dict(item.get('resources') or {})
                for consumer, item in (data.get('allocations')
                                       or {}).items()}

    def consumer_allocations(self, consumer):
        """{provider uuid: {class: amount}} that CONSUMER (a server or a
        migration uuid) holds: ``GET /allocations/{consumer}``.

        Raw: openstacksdk 4.11 (the floor) has no call for a consumer's
        allocations (4.22's ``get_allocation`` takes no microversion)."""
        what = _('Reading the allocations of consumer %s') % consumer
        data = self.get('/allocations/%s' % consumer,
                        versions.PLACEMENT_BASE_VERSION, what,
                        key='allocations')
        return {provider: dict(item.get('resources') or {})
                for provider, item in (data.get('allocations')
                                       or {}).items()}

    def providers_allocations(self, uuids):
        """provider_allocations of many providers, concurrently, bounded:
        {provider uuid: {consumer uuid: {class: amount}}}."""
        return self._each(self.provider_allocations, sorted(set(uuids)))

    def _each(self, read, uuids):
        """{uuid: READ(uuid)} for UUIDS, concurrently and bounded
        (MAX_WORKERS)."""
        uuids = list(uuids)
        if not uuids:
            return {}
        self.max_version()  # negotiate once, before the threads start
        with concurrent.futures.ThreadPoolExecutor(
                min(MAX_WORKERS, len(uuids))) as pool:
            return dict(zip(uuids, pool.map(read, uuids), strict=True))

    def provider_detail(self, uuid, with_traits=False):
        """Inventories, usages (and traits) of one provider, as Placement
        answers them: {'inventories', 'usages'[, 'traits']}.

        The slow path: used only for trees that no allocation-candidates
        answer covered. Raw: openstacksdk 4.11 (the floor) has no call
        for a provider's usages or traits (4.22 has both), and lists its
        inventories as one resource each.
        """
        what = _('Reading resource provider %s') % uuid
        base = '/resource_providers/%s' % uuid
        inv = self.get(base + '/inventories',
                       versions.PLACEMENT_BASE_VERSION, what,
                       key='inventories')
        use = self.get(base + '/usages', versions.PLACEMENT_BASE_VERSION,
                       what, key='usages')
        detail = {'inventories': inv['inventories'],
                  'usages': use['usages']}
        if with_traits:
            traits = self.get(base + '/traits',
                              versions.PLACEMENT_TRAITS_VERSION, what,
                              key='traits')
            detail['traits'] = traits['traits']
        return detail

    def provider_details(self, uuids, with_traits=False):
        """provider_detail for many providers, concurrently and bounded."""
        return self._each(lambda u: self.provider_detail(u, with_traits),
                          uuids)

    # -- pools: providers, traits and aggregates ---------------------------

    def send(self, method, path, version, what, body=None, params=None):
        """A write (or read) with a required microversion; JSON or None."""
        self.require(version, what)
        kwargs = {'params': params}
        if body is not None:
            kwargs['json'] = body
        return http.json_body(
            self._send(method, path, what, version, **kwargs))

    def inventories(self, uuid):
        what = _('Reading inventories of resource provider %s') % uuid
        data = self.get('/resource_providers/%s/inventories' % uuid,
                        versions.PLACEMENT_BASE_VERSION, what,
                        key='inventories')
        return data['inventories']

    def providers_inventories(self, uuids):
        """inventories of many providers, concurrently and bounded:
        {provider uuid: {class: inventory}}, each inventory as Placement
        answers it (total, reserved, allocation_ratio, ...): what
        allocation candidates' provider summaries lack (their capacity is
        (total - reserved) * allocation_ratio)."""
        return self._each(self.inventories, uuids)

    def release_reserved(self, uuid, resource_class,
                         retries=PROVIDER_RETRIES):
        """Lower the reserved RESOURCE_CLASS inventory of provider UUID
        to 0 (a one-time-use device Nova reserved), keeping every other
        field: a read of its inventories and usages, then ``PUT
        .../inventories/{class}`` with the generation both answered. An
        allocation on the class is a Conflict, nothing written; a
        generation conflict (Nova or a server claim wrote meanwhile) reads
        again. Returns False when nothing was reserved.

        Raw: the proxy's inventory calls take no microversion (they
        negotiate, or send clouds.yaml's placement_api_version, which this
        client never sends; openstacksdk 4.11 and 4.22 alike), and the
        inventory resource's commit, which takes one, sends the
        attributes set on it since it was made (made from the record
        read: none but the generation; made new: its resource class too),
        where this PUT carries the whole record read and nothing else."""
        what = _('Releasing resource provider %s') % uuid
        base = '/resource_providers/%s' % uuid
        version = versions.PLACEMENT_BASE_VERSION
        for attempt in range(retries):
            inventories = self.get(base + '/inventories', version, what,
                                   key='inventories')
            usages = self.get(base + '/usages', version, what,
                              key='usages')
            generation = inventories['resource_provider_generation']
            record = inventories['inventories'].get(resource_class)
            if record is None:
                raise errors.NotFound(
                    _('Resource provider %(uuid)s has no %(rc)s inventory '
                      '(any more).') % {'uuid': uuid, 'rc': resource_class},
                    404)
            if usages['usages'].get(resource_class):
                raise errors.Conflict(
                    _('Resource provider %(uuid)s has an allocation of '
                      '%(rc)s: a device in use is not released. Delete its '
                      'server first.') % {'uuid': uuid,
                                          'rc': resource_class}, 409)
            if usages.get('resource_provider_generation') != generation \
                    and attempt < retries - 1:
                continue  # written between the two reads: read again
            if not record.get('reserved'):
                return False
            body = dict(record, reserved=0,
                        resource_provider_generation=generation)
            if self._guarded_put('%s/inventories/%s' % (base, resource_class),
                                 version, what, body, attempt, retries):
                return True
        return False

    def _guarded_put(self, path, version, what, body, attempt, retries):
        """PUT BODY (which carries the provider generation) to PATH: True
        when written; False after a generation conflict with attempts
        left (back off, read again and retry), raised on the last."""
        try:
            self.send('PUT', path, version, what, body=body)
        except errors.Conflict:
            if attempt == retries - 1:
                raise
            LOG.debug('generation conflict on %s, retrying', path)
            http.backoff(attempt)
            return False
        return True

    def traits(self, uuid):
        """(traits, provider generation) of one provider.

        Raw: openstacksdk 4.11 (the floor) has no call for a provider's
        traits (4.22's proxy calls take no microversion)."""
        what = _('Reading traits of resource provider %s') % uuid
        data = self.get('/resource_providers/%s/traits' % uuid,
                        versions.PLACEMENT_TRAITS_VERSION, what,
                        key='traits')
        return data['traits'], data['resource_provider_generation']

    def update_traits(self, uuid, add=(), remove=(),
                      retries=PROVIDER_RETRIES):
        """Add/remove traits on a provider, keeping the others.

        Read-modify-write on the provider generation; a generation
        conflict (Nova's resource tracker writing at the same time) is
        retried. Returns (added, removed): what actually changed. Raw, as
        ``traits``.
        """
        return self._update_set(
            uuid, 'traits', versions.PLACEMENT_TRAITS_VERSION, self.traits,
            _('Setting traits of resource provider %s') % uuid,
            add, remove, retries)

    def aggregates(self, uuid):
        """(aggregate uuids, provider generation) of one provider. Raw:
        the SDK's fetch/set_resource_provider_aggregates (generation
        included) take no microversion, nor do the ResourceProvider
        methods they call (openstacksdk 4.11 and 4.22)."""
        what = _('Reading aggregates of resource provider %s') % uuid
        data = self.get('/resource_providers/%s/aggregates' % uuid,
                        versions.PLACEMENT_AGGREGATES_VERSION, what,
                        key='aggregates')
        return data['aggregates'], data['resource_provider_generation']

    def update_aggregates(self, uuid, add=(), remove=(),
                          retries=PROVIDER_RETRIES):
        """Add/remove Placement aggregates of a provider, keeping others.

        What ``nova-manage placement sync_aggregates`` does for a host
        whose Nova aggregate membership was not mirrored. Returns (added,
        removed).
        """
        return self._update_set(
            uuid, 'aggregates', versions.PLACEMENT_AGGREGATES_VERSION,
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
                if not self._guarded_put(
                        '/resource_providers/%s/%s' % (uuid, field),
                        version, what,
                        {field: sorted(wanted),
                         'resource_provider_generation': generation},
                        attempt, retries):
                    continue
            except errors.APIError as exc:
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
                http.backoff(attempt)
                continue
            return wanted - current, current - wanted
        return set(), set()

    def existing_traits(self, names):
        what = _('Listing traits')
        version = versions.PLACEMENT_TRAITS_VERSION
        found = self._sdk(version, what, self._adapter.traits, read=True,
                          name='in:' + ','.join(sorted(names)),
                          microversion=versions.version_str(version))
        # openstacksdk before 4.21 does not send the name filter and
        # lists every trait: keep the ones asked about
        return {trait.name for trait in found} & set(names)

    def ensure_traits(self, names):
        """Create the custom traits that are missing; return those made."""
        names = set(names)
        if not names:
            return set()
        made = set()
        for name in sorted(names - self.existing_traits(names)):
            self.create_trait(name)
            made.add(name)
        return made

    def create_trait(self, name):
        """Create one custom trait (PUT is idempotent: 201 or 204)."""
        what = _('Creating trait %s') % name
        self._sdk(versions.PLACEMENT_TRAITS_VERSION, what,
                  self._adapter.create_trait, name)

    def delete_trait(self, name):
        """Delete a custom trait; False when a provider still has it."""
        what = _('Deleting trait %s') % name
        try:
            # a trait already gone is what we wanted
            self._sdk(versions.PLACEMENT_TRAITS_VERSION, what,
                      self._adapter.delete_trait, name, ignore_missing=True)
        except errors.Conflict:
            return False
        return True

    def providers_with_trait(self, trait):
        """Uuids of the providers that have ``trait``."""
        what = _('Listing resource providers with trait %s') % trait
        version = versions.PLACEMENT_REQUIRED_VERSION
        found = self._sdk(version, what, self._adapter.resource_providers,
                          read=True,
                          required=trait,
                          microversion=versions.version_str(version))
        return {rp.id for rp in found}

    def members_of(self, aggregate_uuid):
        """Uuids of the providers in a Placement aggregate."""
        what = _('Listing resource providers in aggregate %s') % (
            aggregate_uuid)
        version = versions.PLACEMENT_TREE_VERSION
        found = self._sdk(version, what, self._adapter.resource_providers,
                          read=True,
                          member_of=aggregate_uuid,
                          microversion=versions.version_str(version))
        return {rp.id for rp in found}
