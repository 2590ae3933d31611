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


"""Glance, through the image proxy of OSC's openstacksdk connection."""

import re

from gpuclient.cloud import errors
from gpuclient.cloud import pager
from gpuclient.i18n import _


class Image:
    """Glance through the SDK's image proxy, as plain dicts.

    Glance v2 keeps image properties as top-level members of the image, so
    the raw JSON is what ``gpu image`` reads and JSON-patches.
    """

    service = 'Glance'
    PATCH_TYPE = 'application/openstack-images-v2.1-json-patch'

    def __init__(self, proxy):
        self._proxy = proxy

    def _call(self, method, url, what, key, ok_missing=False, **kwargs):
        # raw, for the body shape: the SDK's Image moves properties it does
        # not know under ``properties`` and computes its own JSON patch;
        # gpuclient reads and patches the top-level members Glance keeps
        with errors.translate_errors(self.service, what):
            response = getattr(self._proxy, method)(
                url, raise_exc=False, **kwargs)
            if ok_missing and response.status_code == 404:
                return None
            # KEY: what a JSON object answering it must hold (an HTML
            # page of a proxy is an error, never an empty answer)
            return errors.json_answer(self.service, what, response, key)

    def images(self, page_size=200):
        """Every image the caller can see (dicts), following next links."""
        what = _('Listing images')
        # raw (pager.collect), as _call says, and for the request count:
        # the SDK's list given a page size asks once more after the last
        # page, and without one Glance's page is 25 images
        return pager.collect(
            lambda url, params: self._call('get', url, what, 'images',
                                          params=params),
            '/images', {'limit': page_size}, pager.items('images'),
            pager.next_path, self.service, what)

    def find_image(self, name_or_id, by_name=True):
        """One image (dict) by ID or exact name; BY_NAME False: by ID
        only (NotFound when that image is gone, whatever images are
        named like it)."""
        what = _('Reading image %s') % name_or_id
        if not by_name:
            image = self._call('get', '/images/%s' % name_or_id, what,
                               'id', ok_missing=True)
            if not image:
                raise errors.NotFound(
                    _('No image with ID %s: it was deleted since it was '
                      'read.') % name_or_id, 404)
            return image
        if re.fullmatch(r'[0-9a-fA-F-]{32,36}', name_or_id):
            image = self._call('get', '/images/%s' % name_or_id, what,
                               'id', ok_missing=True)
            if image:
                return image
        data = self._call('get', '/images', what, 'images',
                          params={'name': name_or_id})
        found = data.get('images') or []
        if len(found) == 1:
            return found[0]
        if found:
            raise errors.APIError(
                _('%(n)d images are named %(name)s: give the image ID.')
                % {'n': len(found), 'name': name_or_id})
        raise errors.NotFound(
            _('No image with name or ID %s (see "openstack image list").')
            % name_or_id, 404)

    def update_properties(self, image, changes):
        """Set (value) or remove (None) image properties in one PATCH."""
        what = _('Updating properties of image %s') % image['id']
        patch = []
        for key, value in sorted(changes.items()):
            if value is None:
                if key in image:
                    patch.append({'op': 'remove', 'path': '/' + key})
            else:
                op = 'replace' if key in image else 'add'
                patch.append({'op': op, 'path': '/' + key, 'value': value})
        if not patch:
            return image
        return self._call('patch', '/images/%s' % image['id'], what, 'id',
                          json=patch,
                          headers={'Content-Type': self.PATCH_TYPE})
