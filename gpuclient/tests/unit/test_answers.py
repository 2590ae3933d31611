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

"""Every reader of the client layer against answers no service gives:
a 2xx page that is not the JSON object it must be (an HTML portal in
front of the service), and a service that ignores the paging marker.
"""

import datetime
import functools
import logging
import urllib.parse

import fixtures

from gpuclient.cloud import baremetal
from gpuclient.cloud import compute
from gpuclient.cloud import errors
from gpuclient.cloud import http
from gpuclient.cloud import image
from gpuclient.cloud import pager
from gpuclient.cloud import placement
from gpuclient.tests.unit import base
from gpuclient.tests.unit import fakes
from gpuclient.tests.unit import sdk_proxy

PORTAL = ('<html><body><h1>Your session has expired</h1>'
          '<form action="/login">...</form></body></html>')
SECRET_QUERY = 'token=s3cret'


def portal(url):
    response = fakes.make_response(200, PORTAL, url=url)
    response.headers['Content-Type'] = 'text/html; charset=utf-8'
    return response


class AnswerProxy(sdk_proxy.SDKProxy):
    """A proxy (SDK or keystoneauth adapter) answering every request with
    ANSWER(url, params): a requests.Response. The SDK's own calls (its
    lists, its commits) run on it as on the SDK's proxy."""

    def __init__(self, root, answer):
        super().__init__()
        self.root = root
        self.answer = answer
        self.sent = []

    def _url(self, url, params):
        query = urllib.parse.urlencode(sorted(dict(params or {}).items()))
        # joined as keystoneauth joins a path to the endpoint (the SDK's
        # resources give theirs without the leading slash)
        return '%s/%s?%s&%s' % (self.root, url.lstrip('/'), query,
                                SECRET_QUERY)

    def get(self, url, params=None, **kwargs):
        self.sent.append((url, dict(params or {})))
        response = self.answer(self._url(url, params), url, params)
        # what the DeadlineAdapter of a real session records
        http._LAST.response = response
        return response

    put = post = patch = get

    def request(self, url, method, params=None, **kwargs):
        return self.get(url, params=params)

    def get_endpoint(self):
        return self.root

    def get_endpoint_data(self):
        return type('Data', (), {'max_microversion': (1, 39)})()

    @property
    def baremetal(self):
        return self


NOVA = 'http://nova.test/v2.1'
GLANCE = 'http://glance.test/v2'
IRONIC = 'http://ironic.test'
PLACEMENT = 'http://placement.test'

START = datetime.datetime(2026, 11, 1)
END = datetime.datetime(2026, 12, 1)


def html(url, path, params):
    return portal(url)


def readers(answer):
    """(service, path, read) of every reader of a list or an object."""
    nova = compute.Compute(AnswerProxy(NOVA, answer))
    glance = image.Image(AnswerProxy(GLANCE, answer))
    place = placement.Placement(AnswerProxy(PLACEMENT, answer))
    uuid = '11111111-2222-3333-4444-555555555555'
    return [
        ('Nova', '/os-hypervisors/detail', nova.hypervisors),
        ('Nova', '/flavors/detail', nova.flavors),
        ('Nova', '/servers/detail', nova.servers_detail),
        ('Nova', '/os-migrations', nova.migrations),
        ('Nova', '/os-simple-tenant-usage',
         lambda: nova.server_usages(START, END)),
        ('Nova', '/os-simple-tenant-usage/p1',
         lambda: nova.server_usages(START, END, project_id='p1')),
        ('Nova', '/servers/s1', lambda: nova.get_server('s1')),
        ('Nova', '/flavors/f1', lambda: nova.get_flavor('f1')),
        ('Nova', '/flavors', lambda: nova.create_flavor(name='x')),
        ('Nova', '/os-services/s1',
         lambda: nova.set_service_status('s1', False, 'r')),
        ('Glance', '/images', glance.images),
        ('Glance', '/images', lambda: glance.find_image('cirros')),
        ('Glance', '/images/%s' % uuid, lambda: glance.find_image(uuid)),
        ('Glance', '/images/i1', lambda: glance.update_properties(
            {'id': 'i1'}, {'hw_machine_type': 'q35'})),
        ('Placement', '/resource_providers', place.resource_providers),
        ('Placement', '/allocation_candidates',
         lambda: place.allocation_candidates({'VGPU': 1})),
        ('Placement', '/allocation_candidates',
         lambda: place.candidates_query([('resources', 'VGPU:1')])),
        ('Placement', '/usages', lambda: place.project_usages('p1')),
        ('Placement', '/resource_providers/%s/allocations' % uuid,
         lambda: place.provider_allocations(uuid)),
        ('Placement', '/allocations/%s' % uuid,
         lambda: place.consumer_allocations(uuid)),
        ('Placement', '/resource_providers/%s/inventories' % uuid,
         lambda: place.provider_detail(uuid)),
        ('Placement', '/resource_providers/%s/inventories' % uuid,
         lambda: place.inventories(uuid)),
        ('Placement', '/resource_providers/%s/traits' % uuid,
         lambda: place.traits(uuid)),
        ('Placement', '/resource_providers/%s/aggregates' % uuid,
         lambda: place.aggregates(uuid)),
    ]


class TestNotJson(base.TestCase):
    """Defect 2: a 2xx answer without the JSON object it must hold is an
    error naming the service and the path, never an empty answer."""

    def assert_refused(self, service, path, read, kind='text/html'):
        error = self.assertRaises(errors.APIError, read)
        text = str(error)
        self.assertIn('%s answered HTTP 200 at %s%s without' % (
            service, {'Nova': '/v2.1', 'Glance': '/v2'}.get(service, ''),
            path), text)
        self.assertIn(kind, text)
        self.assertNotIn('s3cret', text)
        self.assertNotIn('=', text)  # no query string
        self.assertNotIn('<html', text)
        self.assertEqual(1, len(text.splitlines()))

    def test_every_reader_refuses_an_html_page(self):
        for service, path, read in readers(html):
            with self.subTest(path=path, read=read):
                self.assert_refused(service, path, read)

    def test_every_reader_refuses_json_without_its_key(self):
        def other(url, path, params):
            return fakes.make_response(200, {'error': 'portal'}, url=url)
        for service, path, read in readers(other):
            with self.subTest(path=path, read=read):
                self.assert_refused(service, path, read,
                                    kind='application/json')

    def test_an_sdk_read_of_a_portal_names_the_last_answer(self):
        # an SDK list (aggregates, services) calls response.json() itself
        answer = portal(NOVA + '/os-aggregates?' + SECRET_QUERY)
        self.useFixture(fixtures.MockPatch(
            'gpuclient.cloud.http.last_answer', return_value=answer))

        def sdk_list():
            with errors.translate_errors('Nova', 'Listing host aggregates'):
                answer.json()
        error = self.assertRaises(errors.APIError, sdk_list)
        self.assertEqual(
            'Listing host aggregates: Nova answered HTTP 200 at '
            '/v2.1/os-aggregates without a JSON object (text/html): is a '
            'proxy or a login page in front of it? Check the Nova endpoint '
            '(the service catalog, or its endpoint override in '
            'clouds.yaml); nothing was read from this answer.', str(error))

    def test_sdk_reads_of_a_portal(self):
        # what the SDK does with a 2xx answer that is not JSON: a single
        # resource comes back empty, a list breaks (KeyError/TypeError)
        def sdk(result):
            def call(*args, **kwargs):
                http._LAST.response = self.answer
                if isinstance(result, Exception):
                    raise result
                return result
            return call

        class Proxy:
            pass
        proxy = Proxy()
        nova = compute.Compute(proxy)
        place = placement.Placement(AnswerProxy(PLACEMENT, html))
        cases = (
            ('get_aggregate', object(), lambda: nova.get_aggregate(
                type('A', (), {'name': 'a'})()), '/v2.1/os-aggregates/1'),
            ('aggregates', KeyError('aggregates'), nova.aggregates,
             '/v2.1/os-aggregates'),
            ('services', TypeError('list indices'), nova.compute_services,
             '/v2.1/os-services'),
            ('get_flavor_access', KeyError('flavor_access'),
             lambda: nova.flavor_access('f1'), '/v2.1/flavors/f1'),
        )
        for method, result, read, path in cases:
            with self.subTest(method=method):
                self.answer = portal(NOVA.rsplit('/v2.1', 1)[0] + path
                                     + '?' + SECRET_QUERY)
                setattr(proxy, method, sdk(result))
                error = self.assertRaises(errors.APIError, read)
                self.assertIn('Nova answered HTTP 200 at %s without' % path,
                              str(error))
                self.assertNotIn('s3cret', str(error))
        # JSON without the list's key: named
        self.answer = fakes.make_response(200, {'error': 'portal'},
                                          url=NOVA + '/os-aggregates')
        proxy.aggregates = sdk(KeyError('aggregates'))
        error = self.assertRaises(errors.APIError, nova.aggregates)
        self.assertIn('without a JSON object with "aggregates"', str(error))
        # a KeyError of gpuclient's own over a good answer stays a bug
        self.answer = fakes.make_response(200, {'aggregates': []},
                                          url=NOVA + '/os-aggregates')
        proxy.aggregates = sdk(KeyError('aggregates'))
        self.assertRaises(KeyError, nova.aggregates)
        # Placement's SDK reads
        self.answer = portal(PLACEMENT + '/traits')
        place._adapter.traits = sdk(iter([]))
        error = self.assertRaises(errors.APIError, place.existing_traits,
                                  {'CUSTOM_X'})
        self.assertIn('Placement answered HTTP 200 at /traits without',
                      str(error))

    def test_ironic_portal_is_said_not_an_empty_node_list(self):
        logger = self.useFixture(fixtures.FakeLogger(
            level=logging.WARNING))
        nodes = baremetal.Baremetal(AnswerProxy(IRONIC, html)).nodes()
        self.assertIsNone(nodes)  # not shown, not {} (no nodes)
        self.assertIn('Ironic answered HTTP 200 at /nodes without',
                      logger.output)

    def test_empty_json_lists_still_read_empty(self):
        def empty(url, path, params):
            key = {'/os-hypervisors/detail': 'hypervisors',
                   '/flavors/detail': 'flavors',
                   '/servers/detail': 'servers',
                   '/os-migrations': 'migrations'}[path]
            return fakes.make_response(200, {key: []}, url=url)
        nova = compute.Compute(AnswerProxy(NOVA, empty))
        self.assertEqual([], nova.hypervisors())
        self.assertEqual([], nova.flavors())
        self.assertEqual([], nova.servers_detail())
        self.assertEqual([], nova.migrations())


class TestPagerEnds(base.TestCase):
    """Defect 3: a service that ignores the marker gives the same page
    forever; the pager stops with an error naming service and path."""

    def ignoring_marker(self, key, id_key='id', link='nova'):
        """An answer that ignores the marker: always the first page,
        linking a next one."""
        def answer(url, path, params):
            self.asked += 1
            if self.asked > 50:
                raise AssertionError('the pager did not stop')
            items = [{id_key: 'a'}, {id_key: 'b'}]
            body = {key: items}
            if link == 'nova':
                body[key + '_links'] = [{'rel': 'next', 'href': (
                    '%s/%s?marker=b' % (NOVA, key))}]
            elif link == 'glance':
                body['next'] = '/v2/images?marker=b&limit=2'
            else:
                body['next'] = IRONIC + '/nodes?marker=b&limit=2'
            return fakes.make_response(200, body, url=url)
        self.asked = 0
        return answer

    def assert_stopped(self, read, service, path):
        error = self.assertRaises(errors.APIError, read)
        self.assertIn('%s at %s pages without end' % (service, path),
                      str(error))
        self.assertLessEqual(self.asked, 3)

    def test_nova_lists(self):
        for key, read in (
                ('servers', lambda n: n.servers_detail()),
                ('flavors', lambda n: n.flavors()),
                ('hypervisors', lambda n: n.hypervisors()),
                ('migrations', lambda n: n.migrations())):
            with self.subTest(key=key):
                nova = compute.Compute(AnswerProxy(
                    NOVA, self.ignoring_marker(key)))
                path = {'servers': '/servers/detail',
                        'flavors': '/flavors/detail',
                        'hypervisors': '/os-hypervisors/detail',
                        'migrations': '/os-migrations'}[key]
                self.assert_stopped(functools.partial(read, nova), 'Nova',
                                    path)

    def test_glance_images(self):
        glance = image.Image(AnswerProxy(
            GLANCE, self.ignoring_marker('images', link='glance')))
        self.assert_stopped(glance.images, 'Glance', '/images')

    def test_ironic_nodes(self):
        logger = self.useFixture(fixtures.FakeLogger(
            level=logging.WARNING))
        ironic = baremetal.Baremetal(AnswerProxy(
            IRONIC, self.ignoring_marker('nodes', 'uuid', link='ironic')))
        self.assertIsNone(ironic.nodes())
        self.assertIn('Ironic at /nodes pages without end', logger.output)
        self.assertLessEqual(self.asked, 3)

    def test_an_item_seen_again_under_another_marker(self):
        # the marker changes (the link says so) but the items repeat
        pages = iter([
            {'servers': [{'id': 'a'}, {'id': 'b'}],
             'servers_links': [{'rel': 'next', 'href': 'x?marker=b'}]},
            {'servers': [{'id': 'b'}, {'id': 'c'}],
             'servers_links': [{'rel': 'next', 'href': 'x?marker=c'}]},
        ])
        error = self.assertRaises(
            errors.APIError, pager.collect,
            lambda url, params: next(pages), NOVA + '/servers/detail?x=1',
            {}, pager.items('servers'), pager.next_marker('servers'),
            'Nova', 'Listing servers')
        self.assertEqual(
            'Listing servers: Nova at /v2.1/servers/detail pages without '
            'end (an item of an earlier page came again): it does not '
            'follow the paging marker. Stopped; nothing was read from this '
            'list. Check the Nova service (or a proxy in front of it).',
            str(error))

    def test_a_next_page_already_asked_for(self):
        # every project's usage: pages of projects, which have no id of
        # their own (a project's servers may span pages); Nova ignoring
        # the marker links the same next page again
        asked = []

        def fetch(url, params):
            asked.append(dict(params))
            if len(asked) > 20:
                raise AssertionError('the pager did not stop')
            return {'tenant_usages': [{'tenant_id': 'p1'}],
                    'tenant_usages_links': [
                        {'rel': 'next', 'href': 'x?marker=s9'}]}
        error = self.assertRaises(
            errors.APIError, pager.collect, fetch,
            '/os-simple-tenant-usage', {'detailed': 1},
            pager.items('tenant_usages'), pager.next_marker('tenant_usages'),
            'Nova', 'Reading the server usage of every project')
        self.assertIn('Nova at /os-simple-tenant-usage pages without end '
                      '(its next page is one already asked for)', str(error))
        self.assertEqual([{'detailed': 1}, {'detailed': 1, 'marker': 's9'}],
                         asked)

    def test_pages_that_move_on_are_read(self):
        pages = {None: ({'id': 'a'}, 'a'), 'a': ({'id': 'b'}, 'b'),
                 'b': ({'id': 'c'}, None)}

        def fetch(url, params):
            item, marker = pages[params.get('marker')]
            body = {'servers': [item]}
            if marker:
                body['servers_links'] = [
                    {'rel': 'next', 'href': 'x?marker=%s' % marker}]
            return body
        self.assertEqual(
            ['a', 'b', 'c'],
            [s['id'] for s in pager.collect(
                fetch, '/servers/detail', {}, pager.items('servers'),
                pager.next_marker('servers'), 'Nova', 'Listing servers')])
