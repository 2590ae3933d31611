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


"""The client layer's errors, and the one mapping of an HTTP status, an
SDK or keystoneauth exception, or a raw response to them.

Every HTTP, SDK or connection error leaves the client layer as an
``osc_lib.exceptions.CommandError`` (``APIError`` and its subclasses)
that carries the server's message and says what to do.
"""

import contextlib
import json
import re
import urllib.parse

from keystoneauth1 import exceptions as ks_exc
from openstack import exceptions as sdk_exc
from osc_lib import exceptions
import requests

from gpuclient.cloud import http
from gpuclient.i18n import _


def public_host(url, path=False):
    """What a message may name of URL: its scheme, host and port
    (``https://prom.example.org:9090``; ``prom:9090`` when it has no
    scheme), and with PATH its path, never its userinfo, query or
    fragment, which may hold a password or a token."""
    text = str(url or '').strip()
    if '://' not in text:
        text = '//' + text.lstrip('/')
    parts = urllib.parse.urlsplit(text)
    try:
        host, port = parts.hostname or '', parts.port
    except ValueError:  # a port that is not a number
        host, port = parts.netloc.rpartition('@')[2].split(':')[0], None
    if ':' in host:
        host = '[%s]' % host
    if port:
        host += ':%d' % port
    if not host:
        return _('(no host)')
    if path:
        host += parts.path.rstrip('/')
    return '%s://%s' % (parts.scheme, host) if parts.scheme else host


_URL_RE = re.compile(r'[A-Za-z][A-Za-z0-9+.-]*://[^\s\'"<>]+')


def scrub(text):
    """TEXT (an exception's, a server's) with every URL in it cut to its
    scheme, host, port and path (public_host)."""
    return _URL_RE.sub(lambda m: public_host(m.group(0), path=True),
                       str(text))


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
        elif 'error_message' in data:  # Blazar's v1 API
            messages.append(str(data['error_message']))
        elif len(data) == 1:
            inner = next(iter(data.values()))
            if isinstance(inner, dict) and 'message' in inner:
                messages.append(str(inner['message']))
    if not messages and text is not None:
        # HTML or text: strip tags and collapse white space.
        messages.append(re.sub(r'<[^>]+>', ' ', text))
    message = scrub(' '.join(' '.join(messages).split()))
    if len(message) > limit:
        message = message[: limit - 3] + '...'
    return message


def error_for_status(service, what, status, message, endpoint=None):
    """Build the CommandError for an HTTP error status."""
    message = (message or '').rstrip('. ')
    endpoint = public_host(endpoint, path=True) if endpoint else None
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


def connection_error(service, what, exc, endpoint=None):
    where = public_host(endpoint, path=True) if endpoint else _(
        'its catalog endpoint')
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
            'error': scrub(exc),
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
            'waits api_timeout seconds of the cloud in clouds.yaml (else '
            '$%(env)s) for a whole call, or %(connect)d s to connect and '
            '%(total)d s for the whole answer, once per service and command.'
        )
        % {
            'what': what,
            'service': service,
            'error': scrub(exc),
            'env': http.TIMEOUT_ENV,
            'connect': http.CONNECT_TIMEOUT,
            'total': http.TOTAL_TIMEOUT,
        }
    )


def too_large(service, what, exc):
    """The error of an answer of SERVICE larger than the cap once decoded
    (EXC: an http.AnswerTooLarge): one line, nothing of it read."""
    return APIError(
        _("%(what)s: %(service)s's answer at %(path)s exceeds %(limit)s MiB "
          "once decoded; nothing of it was read. A compressed answer that "
          "inflates so far is a fault of %(service)s or of a proxy in front "
          "of it; if the answer is genuine, raise %(key)s in the cloud's "
          "clouds.yaml entry (or $%(env)s).")
        % {'what': what, 'service': service, 'path': url_path(exc.url),
           'limit': http.mib(exc.limit), 'key': http.MAX_ANSWER_KEY,
           'env': http.MAX_ANSWER_ENV})


def _endpoint_of(url):
    parts = urllib.parse.urlsplit(url or '')
    if not parts.scheme:
        return None
    return '%s://%s' % (parts.scheme, public_host(parts.netloc))


@contextlib.contextmanager
def translate_errors(service, what, key=None):
    """Turn SDK and keystoneauth exceptions into CommandErrors. KEY: what
    the JSON object of the answer must hold (named when it is not
    JSON)."""
    timed_out = http.last_timeout()
    try:
        yield
    except exceptions.CommandError:
        raise
    except http.AnswerTooLarge as exc:
        raise too_large(service, what, exc) from None
    except sdk_exc.HttpException as exc:
        status = getattr(exc, 'status_code', None)
        response = getattr(exc, 'response', None)
        # the body first: the SDK's ``details`` finds Nova's and Glance's
        # "message" but not Placement's {"errors": [{"detail": ...}]},
        # where it falls back to the reason phrase ("Conflict")
        message = (
            server_message(getattr(response, 'text', None))
            or server_message(getattr(exc, 'details', None))
            or server_message(getattr(exc, 'message', None))
        )
        url = getattr(response, 'url', None)
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
            % {'what': what, 'service': service, 'error': scrub(exc)}
        ) from exc
    except sdk_exc.EndpointNotFound as exc:
        raise APIError(
            _(
                '%(what)s: the service catalog has no %(service)s endpoint '
                '(%(error)s). Check --os-region-name and --os-interface.'
            )
            % {'what': what, 'service': service, 'error': scrub(exc)}
        ) from exc
    except ks_exc.ConnectTimeout as exc:
        raise _timeout_error(service, what, exc) from exc
    except ks_exc.ConnectionError as exc:
        raise connection_error(service, what, exc) from exc
    except ks_exc.HttpError as exc:
        raise error_for_status(
            service, what, exc.http_status, server_message(exc.details)
        ) from exc
    except (sdk_exc.SDKException, ks_exc.DiscoveryFailure) as exc:
        count, request = http.last_timeout()
        if count != timed_out[0]:
            # keystoneauth's version discovery swallowed a timeout, and
            # the SDK then says only that it found no version
            raise _timeout_error(service, what, _('%s timed out')
                                 % request) from exc
        raise APIError('%s: %s' % (what, scrub(exc))) from exc
    except (json.JSONDecodeError, requests.JSONDecodeError) as exc:
        # an SDK call read a 2xx answer that is not JSON: the answer is
        # the last one read. requests' JSONDecodeError derives from
        # simplejson's, not json's, where simplejson is installed (older
        # osc-lib releases require it)
        answer = http.last_answer()
        if answer is not None and answer.ok:
            raise not_json(service, what, answer, key) from None
        raise APIError(
            _('%(what)s: %(service)s answered without JSON (%(error)s): '
              'is a proxy or a login page in front of it? Check the '
              '%(service)s endpoint (the service catalog, or its endpoint '
              'override in clouds.yaml); nothing was read from this '
              'answer.')
            % {'what': what, 'service': service, 'error': exc.msg}) from None


def _json_object(response):
    """RESPONSE's JSON when it is an object, else None."""
    try:
        data = response.json()
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


@contextlib.contextmanager
def sdk_read(service, what, key=None):
    """translate_errors for a read made by an SDK call, which reads its
    answer itself: a 2xx answer that is not a JSON object (holding KEY,
    when given: what an SDK fetch, create or commit would read as an
    empty answer, an empty body too) is ignored by the SDK's
    single-resource reads (an object with nothing in it) and breaks its
    lists (KeyError, TypeError). Both are a CommandError naming SERVICE
    and the answer's path (the last answer the DeadlineAdapter read in
    this thread, http.last_answer)."""
    before = http.last_answer()
    try:
        with translate_errors(service, what, key):
            yield
    except (KeyError, TypeError) as exc:
        answer = http.last_answer()
        if answer is before or answer is None or not answer.ok:
            raise
        data = _json_object(answer)
        missing = (exc.args[0] if isinstance(exc, KeyError) and exc.args
                   else None)
        if data is None or (missing is not None and missing not in data):
            named = key if key is not None else missing
            raise not_json(service, what, answer,
                           named if isinstance(named, str) else None
                           ) from None
        raise
    answer = http.last_answer()
    if (answer is not before and answer is not None and answer.ok
            and (answer.content or key is not None)):
        data = _json_object(answer)
        if data is None or (key is not None and key not in data):
            raise not_json(service, what, answer, key)


def url_path(url):
    """The path of URL, without its query, fragment or host: what a
    message may name of a request (a query or userinfo may hold a
    credential)."""
    return urllib.parse.urlsplit(str(url or '')).path or '/'


def not_json(service, what, response, key=None):
    """The error for a 2xx RESPONSE that is not the JSON object it must
    be (an HTML page of a proxy or of an expired-session portal): never
    read as an empty answer."""
    kind = (getattr(response, 'headers', None) or {}).get('Content-Type')
    holds = (_('a JSON object with "%s"') % key) if key else _(
        'a JSON object')
    return APIError(
        _('%(what)s: %(service)s answered HTTP %(status)s at %(path)s '
          'without %(holds)s (%(kind)s): is a proxy or a login page in '
          'front of it? Check the %(service)s endpoint (the service '
          'catalog, or its endpoint override in clouds.yaml); nothing '
          'was read from this answer.')
        % {'what': what, 'service': service,
           'status': getattr(response, 'status_code', '?'),
           'path': url_path(getattr(response, 'url', None)),
           'holds': holds,
           'kind': (kind or _('no Content-Type')).split(';')[0]},
        getattr(response, 'status_code', None))


def json_answer(service, what, response, key=None):
    """The JSON object of a successful read: RESPONSE's, after
    check_response; a CommandError naming SERVICE and the URL path when
    it is not a JSON object, or (KEY) holds no KEY."""
    check_response(service, what, response)
    try:
        data = response.json()
    except ValueError:
        data = None
    if not isinstance(data, dict) or (key is not None and key not in data):
        raise not_json(service, what, response, key)
    return data


def check_response(service, what, response, endpoint=None):
    """RESPONSE when its status is below 400, else its CommandError."""
    if response.status_code < 400:
        return response
    raise error_for_status(
        service,
        what,
        response.status_code,
        server_message(response.text),
        endpoint,
    )


def endless_pages(service, what, url, why):
    """The error of a list that SERVICE pages without end at URL (WHY: a
    next page already asked for, an item already listed): it ignores the
    paging marker; nothing of the list is read."""
    return APIError(
        _('%(what)s: %(service)s at %(path)s pages without end (%(why)s): '
          'it does not follow the paging marker. Stopped; nothing was read '
          'from this list. Check the %(service)s service (or a proxy in '
          'front of it).')
        % {'what': what, 'service': service, 'why': why,
           'path': url_path(url)})
