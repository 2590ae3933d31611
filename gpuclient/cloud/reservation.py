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


"""Blazar, OpenStack's reservation service: the hosts enrolled in it
(read only).

openstacksdk has no Blazar calls: its generic ``reservation`` proxy
discovers versions first (two requests more) and picks Blazar's deprecated
v2 API, whose host list is another shape. So the one request goes through
a keystoneauth adapter on OSC's session (its token, timeouts and TLS) to
the catalog's endpoint, Blazar's v1 API, as python-blazarclient does.
"""

from keystoneauth1 import adapter

from gpuclient.cloud import errors
from gpuclient.i18n import _

# the service type Blazar registers in the Keystone catalog
SERVICE_TYPE = 'reservation'
# blazar/api/v1/oshosts/v1_0.py: every enrolled host, unpaged
HOSTS_PATH = '/os-hosts'


class Reservation:
    """Blazar's v1 API through ADAPTER (a keystoneauth Adapter, or an
    object with its ``get``)."""

    service = 'Blazar'

    def __init__(self, adapter_):
        self._adapter = adapter_

    @classmethod
    def on_session(cls, session, interface=None, region_name=None):
        """The catalog's Blazar endpoint of SESSION (no request)."""
        return cls(adapter.Adapter(session, service_type=SERVICE_TYPE,
                                   interface=interface,
                                   region_name=region_name))

    def hosts(self):
        """[host record as Blazar answers it]: ``GET /v1/os-hosts``, every
        host enrolled in Blazar (``service_name``, ``hypervisor_hostname``,
        ...). One request. A CommandError (with the HTTP status) when
        Blazar refuses (403 without admin, its default policy), is missing
        (404) or fails, or answers another shape."""
        what = _('Listing the hosts enrolled in Blazar (GET %s)') % (
            HOSTS_PATH)
        with errors.translate_errors(self.service, what):
            response = self._adapter.get(HOSTS_PATH, raise_exc=False)
        data = errors.json_answer(self.service, what, response, 'hosts')
        records = data['hosts']
        if not isinstance(records, list) or not all(
                isinstance(r, dict) for r in records):
            raise errors.not_json(self.service, what, response, 'hosts')
        return records
