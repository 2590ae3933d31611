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

"""gpuclient.cloud.prometheus over requests_mock."""

import base64
import urllib.parse

from osc_lib import exceptions
import requests
from requests_mock.contrib import fixture as rm_fixture

from gpuclient.cloud import errors
from gpuclient.cloud import prometheus
from gpuclient.tests.unit import base

URL = 'http://prom.test:9090'
QUERY = URL + '/api/v1/query'
VECTOR = {'status': 'success', 'data': {'resultType': 'vector', 'result': [
    {'metric': {'Hostname': 'h'}, 'value': [1.0, '3']}]}}


class TestQuery(base.TestCase):
    def setUp(self):
        super().setUp()
        self.mock = self.useFixture(rm_fixture.Fixture())

    def form(self, index=-1):
        return dict(urllib.parse.parse_qsl(
            self.mock.request_history[index].text))

    def test_query_and_time(self):
        self.mock.post(QUERY, json=VECTOR)
        client = prometheus.Prometheus(URL + '/')
        self.assertEqual(VECTOR['data'], client.query('up'))
        self.assertEqual({'query': 'up'}, self.form())
        client.query('max_over_time(x[60s])', time=1700000000.25)
        self.assertEqual({'query': 'max_over_time(x[60s])',
                          'time': '1700000000.250'}, self.form())
        self.assertEqual(2, client.sent)
        sent = self.mock.request_history[-1]
        self.assertEqual((prometheus.http.CONNECT_TIMEOUT,
                          prometheus.http.READ_TIMEOUT), sent.timeout)
        self.assertNotIn('Authorization', sent.headers)

    def test_path_prefix_and_tls(self):
        self.mock.post('https://p.test/prom/api/v1/query', json=VECTOR)
        client = prometheus.Prometheus('https://p.test/prom', verify='/ca',
                                       cert=('/c', '/k'), timeout=7)
        client.query('up')
        sent = self.mock.request_history[-1]
        self.assertEqual('/ca', sent.verify)
        self.assertEqual(('/c', '/k'), sent.cert)
        self.assertEqual(7, sent.timeout)

    def test_the_urls_own_query_is_kept_on_every_query(self):
        # e.g. a multi-tenant proxy in front of Prometheus (tenant=a)
        self.mock.post('https://prom.test/x/api/v1/query', json=VECTOR)
        client = prometheus.Prometheus(
            'https://prom.test/x?tenant=a&dedup=true')
        client.query('up')
        client.query('down', time=5)
        sent = [urllib.parse.parse_qsl(r.text)
                for r in self.mock.request_history]
        self.assertEqual([('tenant', 'a'), ('dedup', 'true'),
                          ('query', 'up')], sent[0])
        self.assertEqual([('tenant', 'a'), ('dedup', 'true'),
                          ('query', 'down'), ('time', '5.000')], sent[1])
        # and never in the URL requests is given, nor in a message
        self.assertEqual('https://prom.test/x/api/v1/query',
                         self.mock.request_history[-1].url)

    def test_bearer_token(self):
        self.mock.post(QUERY, json=VECTOR)
        prometheus.Prometheus(URL, token='s3cret').query('up')
        self.assertEqual('Bearer s3cret',
                         self.mock.request_history[-1].headers[
                             'Authorization'])

    def test_basic_auth_given_or_in_the_url(self):
        self.mock.post(QUERY, json=VECTOR)
        for client in (prometheus.Prometheus(URL, username='u',
                                             password='p@ss'),
                       prometheus.Prometheus(
                           'http://u:p%40ss@prom.test:9090')):
            client.query('up')
            sent = self.mock.request_history[-1]
            self.assertEqual(QUERY, sent.url)
            self.assertEqual(
                'Basic ' + base64.b64encode(b'u:p@ss').decode(),
                sent.headers['Authorization'])
            self.assertEqual('http://prom.test:9090', client.url)

    def fails(self, client, *parts, cls=errors.APIError):
        error = self.assertRaises(cls, client.query, 'up')
        self.assertIsInstance(error, exceptions.CommandError)
        text = str(error)
        for part in parts:
            self.assertIn(part, text)
        for secret in ('s3cret', 'p@ss', 'p%40ss', 'token='):
            self.assertNotIn(secret, text)
        self.assertEqual(1, len(text.splitlines()))
        return error

    def secret_client(self):
        return prometheus.Prometheus('http://u:s3cret@prom.test:9090/'
                                     '?token=s3cret')

    def test_500(self):
        self.mock.post(QUERY, status_code=500, text='<h1>Oops</h1>')
        error = self.fails(
            self.secret_client(),
            'Querying Prometheus at http://prom.test:9090: Prometheus '
            'failed with HTTP 500: Oops. Check the Prometheus service logs.')
        self.assertEqual(500, error.status)

    def test_503_with_an_error_body(self):
        self.mock.post(QUERY, status_code=503, json={
            'status': 'error', 'errorType': 'unavailable',
            'error': 'TSDB not ready'})
        self.fails(self.secret_client(), 'refused the query up',
                         'HTTP 503, unavailable', 'TSDB not ready')

    def test_connection_refused(self):
        self.mock.post(QUERY, exc=requests.exceptions.ConnectionError(
            "HTTPConnectionPool(host='prom.test', port=9090): Max retries "
            "exceeded with url: /api/v1/query?token=s3cret (Caused by "
            "NewConnectionError('Connection refused'))"))
        self.fails(self.secret_client(), 'cannot connect',
                         'prom.test', 'Connection refused',
                         'http://prom.test:9090')

    def test_timeout_and_tls(self):
        self.mock.post(QUERY, exc=requests.exceptions.ReadTimeout('slow'))
        self.fails(self.secret_client(), 'no answer in time',
                         cls=errors.TimedOut)
        self.mock.post(QUERY, exc=requests.exceptions.SSLError('bad cert'))
        self.fails(self.secret_client(), 'TLS verification failed',
                         'prometheus_cacert')

    def test_bad_json(self):
        self.mock.post(QUERY, text='<html>a proxy</html>')
        self.fails(self.secret_client(), 'not JSON (HTTP 200)')
        self.mock.post(QUERY, json=['not', 'a', 'dict'])
        self.fails(self.secret_client(), 'not JSON')

    def test_status_error(self):
        self.mock.post(QUERY, status_code=400, json={
            'status': 'error', 'errorType': 'bad_data',
            'error': 'parse error at char 3'})
        error = self.fails(self.secret_client(), 'bad_data',
                                 'parse error at char 3', 'HTTP 400')
        self.assertEqual(400, error.status)

    def test_unauthorised(self):
        self.mock.post(QUERY, status_code=401, text='no')
        self.fails(self.secret_client(), 'HTTP 401',
                         'prometheus_token')

    def test_not_a_url(self):
        for url in ('prom.test:9090', '', None, 'ftp://x'):
            error = self.assertRaises(errors.APIError,
                                      prometheus.Prometheus, url)
            self.assertIn('is not a Prometheus URL', str(error))

    def test_public_url(self):
        self.assertEqual('https://[::1]:9090/p',
                         prometheus.public_url('https://a:b@[::1]:9090/p?x=1'))


class TestNothingSecretPrinted(base.TestCase):
    """Defect 7: no message names a URL's userinfo, path, query or
    token; the host and port are named."""

    def setUp(self):
        super().setUp()
        self.mock = self.useFixture(rm_fixture.Fixture())

    def assert_safe(self, text, host):
        self.assertIn(host, text)
        for secret in ('S3cret', 'admin', 'T0ken', 'tenant'):
            self.assertNotIn(secret, text)

    def test_a_url_without_a_scheme(self):
        for url, host in (('admin:S3cret@prom:9090', 'prom:9090'),
                          ('admin:S3cret@prom', 'prom'),
                          ('//admin:S3cret@prom:9090/x?T0ken=1',
                           'prom:9090'),
                          ('ftp://admin:S3cret@prom:21/', 'ftp://prom:21'),
                          ('admin:S3cret@prom:90x0', 'prom')):
            error = self.assertRaises(errors.APIError,
                                      prometheus.Prometheus, url)
            self.assertIn('is not a Prometheus URL', str(error))
            self.assert_safe(str(error), host)

    def test_every_failure_names_the_host_only(self):
        url = 'http://admin:S3cret@prom.test:9090/x/?tenant=a&T0ken=b'
        query = 'http://prom.test:9090/x/api/v1/query'
        for answer in (
                {'exc': requests.exceptions.ConnectionError(
                    'Max retries exceeded with url: %s?T0ken=b' % query)},
                {'exc': requests.exceptions.ReadTimeout(
                    'read timed out: %s?tenant=a' % url)},
                {'status_code': 500, 'text': 'no %s' % url},
                {'status_code': 200, 'text': '<html>%s</html>' % url}):
            self.mock.post(query, **answer)
            error = self.assertRaises(errors.APIError,
                                      prometheus.Prometheus(url).query, 'up')
            self.assert_safe(str(error), 'http://prom.test:9090')

    def test_public_host_and_scrub(self):
        for url, host in (
                ('https://u:S3cret@p.example.org:9443/a?T0ken=1',
                 'https://p.example.org:9443'),
                ('u:S3cret@[::1]:9090', '[::1]:9090'),
                ('', '(no host)'), (None, '(no host)')):
            self.assertEqual(host, errors.public_host(url))
        self.assertEqual(
            'Unable to connect to https://k.test:5000/v3 (refused)',
            errors.scrub('Unable to connect to '
                         'https://admin:S3cret@k.test:5000/v3?T0ken=x '
                         '(refused)'))
        error = errors.connection_error(
            'Placement', 'Listing', Exception(
                'http://u:S3cret@p.test/rp?T0ken=1 refused'),
            'http://u:S3cret@p.test:8778/placement')
        self.assert_safe(str(error), 'http://p.test:8778/placement (')
        error = errors.error_for_status(
            'Placement', 'x', 406, 'no', 'http://u:S3cret@p.test:8778/a')
        self.assert_safe(str(error), 'at http://p.test:8778/a does not')
