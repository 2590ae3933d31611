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


"""Ironic's node list, through the baremetal proxy of OSC's openstacksdk
connection (read only)."""

import logging

from keystoneauth1 import exceptions as ks_exc
from openstack import exceptions as sdk_exc

from gpuclient.cloud import errors
from gpuclient.cloud import pager
from gpuclient.cloud import versions
from gpuclient.i18n import _

LOG = logging.getLogger(__name__)

# What GET /nodes?fields= asks for (at versions.BAREMETAL_TRAITS_VERSION).
BAREMETAL_NODE_FIELDS = ('uuid', 'name', 'provision_state', 'maintenance',
                         'maintenance_reason', 'power_state',
                         'resource_class', 'traits')


class _Hidden(Exception):
    """Ironic refused the caller its node list (HTTP 401/403)."""


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
            versions.BAREMETAL_TRAITS_VERSION)
        # raw, for the fields: GET /nodes?fields= at 1.37 (node traits)
        # returns only BAREMETAL_NODE_FIELDS as the plain dicts Ironic
        # answers (the SDK's Node renames keys such as provision_state),
        # one request per page. A 401/403 (the default policy hides nodes
        # from project-scoped tokens) is "not shown", not an error
        try:
            proxy = self._conn.baremetal

            def fetch(url, params):
                response = proxy.get(
                    url, microversion=versions.BAREMETAL_TRAITS_VERSION,
                    params=params, raise_exc=False)
                if response.status_code in (401, 403):
                    LOG.debug('%s: HTTP %s', what, response.status_code)
                    raise _Hidden()
                return errors.json_answer(self.service, what, response,
                                          'nodes')

            params = {'fields': ','.join(BAREMETAL_NODE_FIELDS),
                      'limit': page_size}
            try:
                # Ironic caps a page at its [api]max_limit, which may be
                # less than page_size, and links the next page: follow it
                nodes = pager.collect(fetch, '/nodes', params,
                                      pager.items('nodes'), pager.next_query,
                                      self.service, what)
            except _Hidden:
                return {}
            return {node.get('uuid') or node.get('id'): node
                    for node in nodes}
        except (sdk_exc.ServiceDisabledException, ks_exc.EndpointNotFound,
                sdk_exc.EndpointNotFound) as exc:
            LOG.debug('%s: no Ironic endpoint (%s)', what, exc)
            return None
        except (errors.APIError, ks_exc.ClientException,
                sdk_exc.SDKException) as exc:
            # detail only: the Placement-based answer stands
            LOG.warning(_('%(what)s failed, node states are not shown: '
                          '%(error)s'), {'what': what, 'error': exc})
            return None
