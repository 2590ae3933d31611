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


"""The one pager: every item of a list that Nova, Glance or Ironic pages.

Where openstacksdk has the list at the microversion gpuclient sends (Nova's
hypervisors, flavors, servers, migrations and every project's usage,
Ironic's nodes), the SDK follows the pages and ``sdk_list`` reads them as
plain dicts.
``collect`` pages the lists that stay hand-written (their reasons are at
the calls): it reads page after page until an answer links no next page,
or a page is empty (an empty page ends the list even if it links a next
one: its marker would be the one just sent). A page that repeats a request
already sent or an item already listed is an error: a service that ignores
the marker would otherwise be asked for the same page forever. How the
next request is made from an answer is the service's:

* Nova: a ``<key>_links`` entry with ``rel`` ``next``; the next request
  is the same URL and query with ``marker`` set (``next_marker``).
* Glance: a top-level ``next``, a path and query under the image API
  root: the next request is that path and query (``next_path``).
"""

import urllib.parse

from openstack import exceptions as sdk_exc

from gpuclient.cloud import errors
from gpuclient.i18n import _


def collect(fetch, url, params, items, next_page, service, what):
    """Every item of a paged list, in the order the pages give them.

    FETCH(url, params) returns one answer's JSON object (it refuses an
    answer that is not one: ``errors.json_answer``); ITEMS(data) the
    page's items; NEXT_PAGE(data, url, params, page) the (url, params) of
    the next request, or None when the answer links no next page.

    A service that ignores the marker would give the same page forever:
    a next request already sent, or a page holding an item already
    listed (by ``id``, ``uuid`` or ``instance_id``), is a CommandError
    naming SERVICE and the path, with WHAT (the read) first.
    """
    found = []
    asked = set()
    seen = set()
    while True:
        asked.add(_request_key(url, params))
        data = fetch(url, params)
        page = items(data)
        for item in page:
            ident = _identity(item)
            if ident is None:
                continue
            if ident in seen:
                raise errors.endless_pages(service, what, url,
                            _('an item of an earlier page came again'))
            seen.add(ident)
        found.extend(page)
        if not page:
            return found
        following = next_page(data, url, params, page)
        if following is None:
            return found
        url, params = following
        if _request_key(url, params) in asked:
            raise errors.endless_pages(service, what, url,
                        _('its next page is one already asked for'))


def _request_key(url, params):
    return url, tuple(sorted((str(k), str(v))
                             for k, v in dict(params or {}).items()))


def _identity(item):
    """What names one item of a list: its id, uuid or instance_id."""
    if not isinstance(item, dict):
        return None
    for name in ('id', 'uuid', 'instance_id'):
        if item.get(name) is not None:
            return name, str(item[name])
    return None


def items(key):
    """ITEMS for ``collect``: the list under KEY."""
    return lambda data: data.get(key) or []


def _query(link):
    return dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(link).query))


def next_marker(key, from_item=False):
    """NEXT_PAGE for Nova: follow ``<KEY>_links`` (``rel`` ``next``).

    The marker is the one the next link carries, or with FROM_ITEM the
    ``id`` of the page's last item.
    """
    def next_page(data, url, params, page):
        more = [link for link in data.get(key + '_links') or []
                if link.get('rel') == 'next']
        if not more:
            return None
        if from_item:
            marker = page[-1]['id']
        else:
            marker = _query(more[0]['href']).get('marker')
        return url, dict(params, marker=marker)
    return next_page


def next_path(data, url, params, page):
    """NEXT_PAGE for Glance: the ``next`` path (without the ``/v2`` the
    proxy adds) and its query."""
    nxt = data.get('next')
    if not nxt:
        return None
    parts = urllib.parse.urlsplit(nxt)
    path = parts.path.replace('/v2', '', 1) if (
        parts.path.startswith('/v2/')) else parts.path
    if not path:
        return None
    return path, dict(urllib.parse.parse_qsl(parts.query))


def wire(resource):
    """An SDK resource as the plain dict its service answered: the fields
    it answered, under the service's own names and as it wrote them (what
    the rules read). The SDK's resource keeps them so (its body); its
    ``to_dict`` would add every field the SDK declares (None where the
    service answered none) and retype some."""
    return dict(resource._body.attributes)


def sdk_list(service, what, path, listing):
    """Every resource of an SDK LISTING (its generator, which follows the
    pages) as plain dicts (``wire``). SERVICE answering the same page
    again (it ignores the marker) is the error ``collect`` gives, not
    the SDK's "Endless pagination loop detected"."""
    try:
        return [wire(item) for item in listing]
    except sdk_exc.SDKException as exc:
        if 'endless pagination' not in str(exc).lower():
            raise
        raise errors.endless_pages(
            service, what, path,
            _('its next page is one already asked for')) from None
