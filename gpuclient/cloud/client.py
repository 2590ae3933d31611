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


"""``client_manager.gpu``: the one object through which gpuclient talks to
a cloud, building each service's client when first used.

The service modules are the client layer, the only I/O of gpuclient:

* ``placement``: Placement, through the placement proxy of OSC's
  openstacksdk connection (``client_manager.sdk_connection``), so
  clouds.yaml's ``placement_endpoint_override``, interface and region
  apply; every call sends the microversion it needs (``versions``).
* ``compute``, ``image``, ``baremetal``: Nova, Glance and Ironic through
  the same connection's proxies; lists are followed by ``pager``.
* ``identity``: Keystone's unified limits and project and domain lookups.
* ``reservation``: Blazar's host list, on OSC's session (the SDK has no
  Blazar calls).
* ``errors``: every HTTP, SDK or connection error leaves the client layer
  as an ``osc_lib.exceptions.CommandError`` that carries the server's
  message and says what to do.
"""

from gpuclient.cloud import baremetal as baremetal_mod
from gpuclient.cloud import compute as compute_mod
from gpuclient.cloud import errors
from gpuclient.cloud import http
from gpuclient.cloud import identity as identity_mod
from gpuclient.cloud import image as image_mod
from gpuclient.cloud import placement as placement_mod
from gpuclient.cloud import reservation as reservation_mod
from gpuclient.i18n import _


class GpuClient:
    """What ``client_manager.gpu`` is: the per-service clients, lazily."""

    def __init__(
        self, session, sdk_connection, region_name=None, interface=None,
        api_timeout=None, compute_api_version=None, cloud_config=None,
        max_bytes=None,
    ):
        self._session = session
        # --os-compute-api-version as the user gave it; None: not given
        self._compute_api_version = compute_api_version
        self._conn = sdk_connection
        # every request of both sessions (OSC's and the SDK connection's,
        # one object under OSC) gets connect and read timeouts, and a cap
        # on its answer (MAX_BYTES, else http.max_answer_bytes())
        http.set_timeouts(session, api_timeout, max_bytes)
        http.set_timeouts(getattr(sdk_connection, 'session', None),
                          api_timeout, max_bytes)
        self._region_name = region_name
        # the cloud's clouds.yaml entry as openstacksdk read it (keys
        # gpuclient reads beside OSC's own, such as prometheus_endpoint,
        # and its TLS settings for services outside the catalog)
        self.cloud_config = dict(cloud_config or {})
        self._interface = interface
        self._placement = None
        self._compute = None

    @property
    def placement(self):
        if self._placement is None:
            # the SDK's proxy: clouds.yaml placement_* settings apply
            with errors.translate_errors('Placement',
                                         _('Connecting to Placement')):
                proxy = self._conn.placement
            self._placement = placement_mod.Placement(proxy)
        return self._placement

    @property
    def compute(self):
        if self._compute is None:
            # the proxy on first use: require() sends nothing
            self._compute = compute_mod.Compute(
                requested=self._compute_api_version,
                connect=lambda: self._conn.compute)
        return self._compute

    @property
    def image(self):
        if getattr(self, '_image', None) is None:
            self._image = image_mod.Image(self._conn.image)
        return self._image

    @property
    def baremetal(self):
        if getattr(self, '_baremetal', None) is None:
            self._baremetal = baremetal_mod.Baremetal(self._conn)
        return self._baremetal

    @property
    def reservation(self):
        """Blazar (ask only where the catalog lists it: ``in_catalog``)."""
        if getattr(self, '_reservation', None) is None:
            self._reservation = reservation_mod.Reservation.on_session(
                self._session, self._interface, self._region_name)
        return self._reservation

    @property
    def limits(self):
        if getattr(self, '_limits', None) is None:
            self._limits = identity_mod.Limits(
                self._conn.identity, self._session, self._region_name)
        return self._limits

    # -- Keystone: the command's project, projects and domains it names --

    def current_project_id(self):
        """The project the command runs in (its token's scope)."""
        return identity_mod.current_project_id(self._session)

    def current_project(self):
        """(id, name) of the project the command runs in."""
        return identity_mod.current_project(self._session)

    def in_catalog(self, service_type):
        """Whether the token's catalog has SERVICE_TYPE (no request)."""
        return identity_mod.in_catalog(self._session, service_type)

    def project_ids(self, names_or_ids, domain=None):
        """Keystone project ids of several names or ids, in order, once
        each (``identity.project_ids``: DOMAIN scopes the names)."""
        return identity_mod.project_ids(self._conn, names_or_ids, domain)

    def project_id(self, name_or_id, domain=None):
        """A Keystone project id from a name or id (see project_ids)."""
        return identity_mod.project_id(self._conn, name_or_id, domain)

    def domain_id(self, name_or_id):
        """A Keystone domain id from a name or id (OSC's helper)."""
        return identity_mod.domain_id(self._conn, name_or_id)
