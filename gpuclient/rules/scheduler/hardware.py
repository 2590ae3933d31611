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

"""Pure: a flavor's ``hw:`` extra specs and an image's ``hw_`` properties.

After Nova 34's ``nova/virt/hardware.py``: the flavor's value and the
image's of one setting (``_get_flavor_image_meta``), refused when both are
set and differ (``_get_unique_flavor_image_meta``), the CPU policies and
the CPU set syntax. The request (resource_request) and the prefilters
(request_filter) read them here.
"""

from gpuclient.i18n import _
from gpuclient.rules.scheduler import exception


def image_props(image):
    """The image's properties as a dict (Glance shows them at top level)."""
    return dict(image or {})


def pair(specs, image, key, prefix='hw'):
    """(flavor's PREFIX:KEY, image's PREFIX_KEY): _get_flavor_image_meta."""
    return specs.get('%s:%s' % (prefix, key)), image_props(image).get(
        '%s_%s' % (prefix, key))


def unique(specs, image, key, prefix='hw'):
    """The one value of KEY, refused when flavor and image differ
    (_get_unique_flavor_image_meta)."""
    flavor_value, image_value = pair(specs, image, key, prefix)
    if flavor_value and image_value and str(flavor_value) != str(
            image_value):
        raise exception.error(
            _('The flavor has %(prefix)s:%(key)s=%(fv)s and the image '
              '%(prefix)s_%(key)s=%(iv)s: Nova refuses to boot this '
              'combination.'), prefix=prefix, key=key, fv=flavor_value,
            iv=image_value)
    return flavor_value or image_value


def parse_cpu_spec(text):
    """Nova's CPU set syntax ('0-3,^2') -> set of ints."""
    include, exclude = set(), set()
    for part in str(text).split(','):
        part = part.strip()
        if not part:
            continue
        target = include
        if part.startswith('^'):
            target, part = exclude, part[1:]
        if '-' in part:
            low, _sep, high = part.partition('-')
            target.update(range(int(low), int(high) + 1))
        else:
            target.add(int(part))
    return include - exclude


def cpu_policy(specs, image):
    flavor_policy, image_policy = pair(specs, image, 'cpu_policy')
    if flavor_policy in ('dedicated', 'mixed', 'shared'):
        return flavor_policy
    if image_policy in ('dedicated', 'mixed', 'shared'):
        return image_policy
    return None


def thread_policy(specs, image):
    flavor_policy, image_policy = pair(specs, image, 'cpu_thread_policy')
    if flavor_policy in (None, 'prefer'):
        return flavor_policy or image_policy
    return flavor_policy
