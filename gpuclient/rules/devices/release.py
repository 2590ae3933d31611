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

"""Pure: ``gpu device release``: whether a device's row can be released,
and what releasing it does (lowering the ``reserved`` Nova set on a
one-time-use device, ``one_time_use``).
"""

from __future__ import annotations

from collections.abc import Mapping
import typing

from gpuclient.i18n import _
from gpuclient.rules import one_time_use
from gpuclient.rules.devices import listing

# what a release row's action says
RELEASE = 'release'
RELEASED = 'released'
ALREADY_RELEASED = 'already released'


def release_problem(row: Mapping[str, typing.Any]) -> str | None:
    """Why the device of ROW cannot be released (None: it can, or has
    nothing to release)."""
    if not row['one_time_use']:
        return _(
            '%(name)s is not a one-time-use device (its provider has no '
            '%(trait)s trait): gpuclient releases only what Nova reserved '
            'after a one-time-use device\'s server was deleted, never a '
            'reservation someone else set. Set "one_time_use" in the '
            'host\'s [pci] device_spec, or change the inventory with '
            '"openstack resource provider inventory set".') % {
                'name': row['name'], 'trait': one_time_use.ONE_TIME_USE_TRAIT}
    if row['state'] == listing.IN_USE:
        return _(
            '%(name)s is in use (%(servers)s): Placement holds an '
            'allocation on it. Delete the server, clean the device, then '
            'release it.') % {'name': row['name'],
                              'servers': ', '.join(row['servers'])}
    return None


def release_action(row: Mapping[str, typing.Any]) -> str:
    """RELEASE for a device awaiting release, ALREADY_RELEASED for a free
    one (a re-run converges), after ``release_problem``."""
    return (RELEASE if row['state'] == listing.AWAITING_RELEASE
            else ALREADY_RELEASED)
