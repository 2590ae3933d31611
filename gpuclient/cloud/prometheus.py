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

"""The cloud's Prometheus: PromQL instant queries over its HTTP API.

Not an OpenStack service: no catalog entry, no Keystone token. The URL
and the credentials come from ``--prometheus``, the cloud's clouds.yaml
entry or the environment (``gpuclient.ops.utilisation_ops``); TLS is
verified as the cloud's other endpoints are (its ``cacert``, or
``insecure``) unless the settings say otherwise. A bearer token or basic
auth is sent when given; no message ever shows a credential (the URL is
named without its ``user:password@`` and query).

Every query goes through ``Prometheus.query``, which first passes it
through ``rewrite`` (the ops layer gives one that adds the cloud's label
selector to each vector selector: ``rules.promql.with_matchers``). The
shape of the answer's ``data`` is checked where it is read
(``rules.utilisation.parse_vector``).
"""

import urllib.parse

import requests

from gpuclient.cloud import errors
from gpuclient.cloud import http
from gpuclient.i18n import _

SERVICE = 'Prometheus'
QUERY_PATH = '/api/v1/query'


def public_url(url):
    """URL without credentials, query or fragment: what requests is
    given (the credentials go in headers, the query in the form). A
    message names less: errors.public_host."""
    parts = urllib.parse.urlsplit(url or '')
    host = parts.hostname or ''
    if ':' in host:
        host = '[%s]' % host
    if parts.port:
        host += ':%d' % parts.port
    return urllib.parse.urlunsplit((parts.scheme, host, parts.path, '', ''))


class Prometheus:
    """One Prometheus server, through one requests session.

    REWRITE: a function of a PromQL text that gives the one sent (the
    cloud's label selector added); None sends each query as given."""

    def __init__(self, url, token=None, username=None, password=None,
                 verify=True, cert=None, timeout=None, session=None,
                 max_bytes=None, rewrite=None):
        parts = urllib.parse.urlsplit(url or '')
        if parts.scheme not in ('http', 'https') or not parts.hostname:
            raise errors.APIError(
                _('%(url)s is not a Prometheus URL: give http(s)://host:port '
                  '(e.g. http://prometheus.example.org:9090) with '
                  '--prometheus, prometheus_endpoint in clouds.yaml or '
                  '$GPUCLIENT_PROMETHEUS_URL.')
                % {'url': errors.public_host(url)})
        self.session = session or requests.Session()
        if parts.username and not (token or username):
            username = urllib.parse.unquote(parts.username)
            password = urllib.parse.unquote(parts.password or '')
        # the credentials go in headers, never in the URL requests sees
        self.url = public_url(url).rstrip('/')
        if parts.query:
            self.url_query = urllib.parse.parse_qsl(parts.query)
        else:
            self.url_query = []
        if token:
            self.session.headers['Authorization'] = 'Bearer %s' % token
        elif username:
            self.session.auth = (username, password or '')
        # per request: a session's verify loses to $REQUESTS_CA_BUNDLE
        self.verify = verify
        self.cert = cert or None
        self.timeout = timeout or http.request_timeout()
        # the whole time of a query, its answer read to the end: TIMEOUT
        # (clouds.yaml's api_timeout) or http.TOTAL_TIMEOUT; its answer's
        # size once decoded: MAX_BYTES or http.max_answer_bytes()
        http.bound_total_time(self.session, http.total_timeout(
            None if isinstance(timeout, tuple) else timeout), max_bytes)
        self.sent = 0  # queries sent: a constant number per command
        self.rewrite = rewrite

    def query(self, promql, time=None):
        """The ``data`` of an instant query (resultType and result).

        PROMQL goes through ``rewrite`` first. TIME: epoch seconds (None:
        the server's now). Every failure is an ``errors.APIError`` naming
        the URL without credentials.
        """
        if self.rewrite is not None:
            promql = self.rewrite(promql)
        endpoint = self.url + QUERY_PATH
        what = _('Querying Prometheus at %s') % errors.public_host(
            self.url)
        params = list(self.url_query) + [('query', promql)]
        if time is not None:
            params.append(('time', '%.3f' % time))
        self.sent += 1
        try:
            # POST: a long query never hits a URL length limit
            response = self.session.post(
                endpoint, data=params, timeout=self.timeout,
                verify=self.verify, cert=self.cert)
        except http.AnswerTooLarge as exc:
            raise errors.too_large(SERVICE, what, exc) from None
        except requests.exceptions.SSLError as exc:
            raise errors.APIError(
                _('%(what)s: TLS verification failed (%(error)s). Set '
                  'prometheus_cacert (or the cloud\'s cacert) in clouds.yaml '
                  'to the CA that signed its certificate.')
                % {'what': what, 'error': _reason(exc)}) from None
        except requests.exceptions.Timeout as exc:
            raise errors.TimedOut(
                _('%(what)s: no answer in time (%(error)s). Is Prometheus '
                  'overloaded? A shorter --window asks less of it.')
                % {'what': what, 'error': _reason(exc)}) from None
        except requests.exceptions.RequestException as exc:
            raise errors.APIError(
                _('%(what)s: cannot connect (%(error)s). Is Prometheus '
                  'running, and is --prometheus (or prometheus_endpoint in '
                  'clouds.yaml) the right URL?')
                % {'what': what, 'error': _reason(exc)}) from None
        if response.status_code in (401, 403):
            raise errors.APIError(
                _('%(what)s: HTTP %(status)s, not allowed. Set '
                  'prometheus_token, or prometheus_username and '
                  'prometheus_password, in the cloud\'s clouds.yaml entry '
                  '(or $GPUCLIENT_PROMETHEUS_TOKEN, '
                  '$GPUCLIENT_PROMETHEUS_USERNAME and '
                  '$GPUCLIENT_PROMETHEUS_PASSWORD).')
                % {'what': what, 'status': response.status_code},
                response.status_code)
        body = http.json_body(response)
        data = body if isinstance(body, dict) else None
        if response.status_code >= 400 and not (
                data and data.get('status') == 'error'):
            raise errors.error_for_status(
                SERVICE, what, response.status_code,
                errors.server_message(response.text), self.url)
        # (error_for_status names the endpoint by errors.public_host)
        if data is None:
            raise errors.APIError(
                _('%(what)s: the answer is not JSON (HTTP %(status)s): is '
                  'this the Prometheus HTTP API?')
                % {'what': what, 'status': response.status_code})
        if data.get('status') != 'success':
            raise errors.APIError(
                _('%(what)s: Prometheus refused the query %(query)s '
                  '(HTTP %(status)s, %(type)s): %(error)s')
                % {'what': what, 'query': promql,
                   'status': response.status_code,
                   'type': data.get('errorType') or '?',
                   'error': data.get('error') or _('no reason given')},
                response.status_code)
        return data.get('data')


def _reason(exc):
    """The exception's text, with no URL or query in it (either may hold
    a credential): requests names the host and port, enough to act on."""
    return ' '.join(
        '<url>' if any(c in word for c in ('://', '@', '?', '/')) else word
        for word in errors.scrub(exc).split())[:300]
