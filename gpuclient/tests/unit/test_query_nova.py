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

"""Differential test: every compute query gpuclient sends, against the
query schemas of Nova's API controllers.

Compute API 2.102 (Nova 2026.1, 33.0.0) answers 400 to any query
parameter its schema does not name, on every API; below 2.75 most lists
silently drop an unknown parameter (the filter is not applied, which is
as wrong). So each query the client layer sends (recorded by driving
``gpuclient.cloud.compute.Compute`` with a recording proxy, second pages
included) must name only parameters of the controller's schema at the
microversion gpuclient sends it with, and pass that schema and the one
at Nova's maximum (the versions gpuclient pins may be raised later).

Nova is not a dependency of gpuclient: this module skips where Nova
cannot be imported (the py3 tox env). Run it with the test cloud's venv::

    /var/tmp/gpuclient-testcloud/venv/bin/python -m unittest \\
        gpuclient.tests.unit.test_query_nova
"""

import datetime
import unittest
from unittest import mock

from gpuclient.cloud import compute
from gpuclient.tests.unit import nova_harness
from gpuclient.tests.unit import sdk_proxy

if nova_harness.HAVE_NOVA:
    with nova_harness.quiet():
        from nova.api.openstack import api_version_request as nova_versions
        from nova.api.openstack.compute import flavors as nova_flavors
        from nova.api.openstack.compute import hypervisors as nova_hyp
        from nova.api.openstack.compute import limits as nova_limits
        from nova.api.openstack.compute import migrations as nova_mig
        from nova.api.openstack.compute import servers as nova_servers
        from nova.api.openstack.compute import services as nova_services
        from nova.api.openstack.compute import simple_tenant_usage as usage
        from nova.api.validation import validators


def _controllers():
    """URL path gpuclient sends -> the Nova controller method serving it
    (``nova/api/openstack/compute/routes.py``)."""
    return {
        '/os-hypervisors/detail': nova_hyp.HypervisorsController.detail,
        '/flavors/detail': nova_flavors.FlavorsController.detail,
        '/flavors/{id}': nova_flavors.FlavorsController.show,
        '/servers/detail': nova_servers.ServersController.detail,
        '/servers/{id}': nova_servers.ServersController.show,
        '/os-migrations': nova_mig.MigrationsController.index,
        '/os-simple-tenant-usage':
            usage.SimpleTenantUsageController.index,
        '/os-simple-tenant-usage/{id}':
            usage.SimpleTenantUsageController.show,
        '/os-services': nova_services.ServiceController.index,
        '/limits': nova_limits.LimitsController.index,
    }


def sdk_queries():
    """(route, params) the SDK sends for the client layer's SDK reads
    with filters: each resource's own query mapping turns the proxy's
    arguments into the query string (the SDK negotiates the microversion,
    up to Nova's maximum)."""
    from openstack.compute.v2 import limits
    from openstack.compute.v2 import server
    from openstack.compute.v2 import service

    def query(resource, **kwargs):
        return resource._query_mapping._transpose(kwargs, resource)
    return [
        # Compute.compute_services
        ('/os-services', query(service.Service, binary='nova-compute')),
        # Compute.host_has_servers
        ('/servers/detail', query(server.Server, all_projects=True,
                                  compute_host='h1', limit=1)),
        # Compute.project_limits
        ('/limits', query(limits.Limits, tenant_id='p1')),
    ]


_KEYS = {'/os-hypervisors/detail': 'hypervisors',
         '/flavors/detail': 'flavors', '/servers/detail': 'servers',
         '/os-migrations': 'migrations',
         '/os-simple-tenant-usage': 'tenant_usages',
         '/os-simple-tenant-usage/{id}': 'tenant_usage',
         '/servers/{id}': 'server', '/flavors/{id}': 'flavor'}


def _route(url):
    parts = url.split('/')
    if len(parts) == 3 and parts[1] in ('servers', 'flavors',
                                        'os-simple-tenant-usage') and (
            parts[2] not in ('detail',)):
        return '/%s/{id}' % parts[1]
    return url


class _Recorder(sdk_proxy.SDKProxy):
    """A compute proxy answering every GET with one page that links a
    next one (so the second query of a list, the pager's or the SDK's,
    is recorded too), then an empty page."""

    def __init__(self):
        super().__init__()
        self.sent = []

    def get(self, url, microversion=None, params=None, raise_exc=True,
            **kwargs):
        # the SDK follows the next link as a whole URL
        route = _route(url.replace('http://n/v2.1', '', 1))
        # the SDK's resources ask for their path without the leading /
        route = route if route.startswith('/') else _route('/' + route)
        params = dict(params or {})
        self.sent.append((route, microversion, params))
        key = _KEYS[route]
        response = mock.Mock(status_code=200, content=b'{}', text='{}',
                             links={}, headers={})
        first = 'marker' not in params
        item = {'id': 'x1', 'instance_id': 'x1'}
        if route == '/os-simple-tenant-usage/{id}':
            body = {key: {'server_usages': [item] if first else []}}
        elif route in ('/servers/{id}', '/flavors/{id}'):
            body = {key: item}
        else:
            body = {key: [item] if first else []}
        if first:
            body[key + '_links'] = [{'rel': 'next',
                                     'href': 'http://n/v2.1%s?marker=x1'
                                     % url}]
        response.json.return_value = body
        return response


def recorded_queries():
    """(route, microversion, params) of every GET with a query (or to a
    listed route) that the client layer sends."""
    proxy = _Recorder()
    client = compute.Compute(proxy=proxy)
    start = datetime.datetime(2026, 1, 1)
    end = datetime.datetime(2026, 2, 1)
    client.hypervisors()
    client.flavors()
    client.get_flavor('f1')
    client.servers_detail(all_projects=True, project_id='p1',
                          changes_since='2026-01-01T00:00:00Z', host='h1')
    client.get_server('s1')
    client.migrations(status='finished', migration_type='migration',
                      host='h1')
    client.server_usages(start, end)
    client.server_usages(start, end, project_id='p1')
    return proxy.sent


def _schema_at(method, version):
    schemas = method.request_query_schemas._schemas
    for schema, low, high in schemas:
        if version.matches(low, high):
            return schema
    raise AssertionError('no query schema of %s at %s'
                         % (method.__qualname__, version.get_string()))


@nova_harness.requires_nova
class TestQueriesAgainstNova(unittest.TestCase):

    def setUp(self):
        self.controllers = _controllers()
        self.maximum = nova_versions.max_api_version()

    def check(self, route, params, version):
        method = self.controllers[route]
        schema = _schema_at(method, version)
        named = set(schema.get('properties') or {})
        unknown = sorted(set(params) - named)
        self.assertEqual([], unknown, '%s at %s: Nova does not know %s'
                         % (route, version.get_string(), unknown))
        target = {k: [str(v)] for k, v in params.items()}
        validators._SchemaValidator(schema, False, False).validate(target)

    def test_sent_queries(self):
        sent = recorded_queries()
        self.assertGreater(len(sent), 10)
        routes = {route for route, _v, _p in sent}
        self.assertEqual(set(_KEYS), routes)
        for route, version, params in sent:
            for at in (nova_versions.APIVersionRequest(version),
                       self.maximum):
                with self.subTest(route=route, at=at.get_string(),
                                  params=sorted(params)):
                    self.check(route, params, at)

    def test_sdk_queries(self):
        for route, params in sdk_queries():
            self.assertTrue(params, route)
            with self.subTest(route=route, params=sorted(params)):
                self.check(route, params, self.maximum)

    def test_nova_is_at_least_2102(self):
        """The installed Nova is one that refuses unknown parameters."""
        self.assertTrue(self.maximum >= nova_versions.APIVersionRequest(
            '2.102'))

    def test_unknown_parameter_is_refused(self):
        """The check can fail: a parameter Nova does not name."""
        self.assertRaises(AssertionError, self.check, '/servers/detail',
                          {'gpu': '1'}, self.maximum)


if __name__ == '__main__':
    unittest.main()
