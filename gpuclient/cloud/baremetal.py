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

    def nodes(self):
        """{node uuid: node as Ironic answers it}, {} or None (see the
        class)."""
        what = _('Listing bare-metal nodes (Ironic API %s)') % (
            versions.BAREMETAL_TRAITS_VERSION)
        # the SDK's list at 1.37 (node traits) sent explicitly, with
        # fields=: only BAREMETAL_NODE_FIELDS, under Ironic's own names
        # (pager.wire). No limit: Ironic's [api]max_limit is the page,
        # and the SDK follows the next links (with a limit it would ask
        # once more after the last page). A 401/403 (the default policy
        # hides nodes from project-scoped tokens) is "not shown", not an
        # error
        try:
            proxy = self._conn.baremetal
            try:
                with errors.sdk_read(self.service, what):
                    nodes = pager.sdk_list(
                        self.service, what, '/nodes', proxy.nodes(
                            fields=list(BAREMETAL_NODE_FIELDS),
                            microversion=versions.BAREMETAL_TRAITS_VERSION))
            except errors.APIError as exc:
                if exc.status not in (401, 403):
                    raise
                LOG.debug('%s: HTTP %s', what, exc.status)
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
