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

"""Pure: Nova's one-time-use devices.

**One-time-use devices** (Nova 2025.2, ``"one_time_use": true`` in a
``[pci] device_spec``; ``nova/compute/pci_placement_translator.py``):
Nova puts the trait ``HW_PCI_ONE_TIME_USE`` on the device's provider
(one type-PCI or type-PF device, inventory total 1) and, once a server
holds the device, sets the inventory's ``reserved`` to its total. Nova
never lowers it again: after the delete the device has no allocation and
no capacity, and waits for the operator to clean it (wipe the GPU memory
between tenants) and release it, which is lowering ``reserved`` to 0
(``gpu device release``). Such a device is **awaiting release**: neither
free nor stranded, and counted apart (``awaiting_release``).

A device_spec that sets ``one_time_use`` where Nova refuses it is a
finding of gpu check (``one_time_use_problems``).
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping
import json
import typing

from gpuclient.i18n import _

# os-traits' trait on the provider of a one-time-use device (Nova 2025.2)
ONE_TIME_USE_TRAIT = 'HW_PCI_ONE_TIME_USE'


def is_one_time_use(traits: Iterable[str] | None) -> bool:
    """Does a provider with TRAITS (None: not read) hold a one-time-use
    device?"""
    return ONE_TIME_USE_TRAIT in (traits or ())


def awaiting_release(item: Mapping[str, int],
                     traits: Iterable[str] | None) -> bool:
    """Is a one-time-use device (its class's summary ITEM, {capacity,
    used}; its provider's TRAITS) reserved by Nova after its server went,
    waiting for the operator's release?"""
    return (is_one_time_use(traits) and not item.get('used')
            and item.get('capacity', 0) <= 0)


# -- gpu check: one_time_use in nova.conf -------------------------------------

def _spec_matches(spec: Mapping[str, typing.Any],
                  alias: Mapping[str, typing.Any]) -> bool:
    """Does a device_spec select devices of ALIAS's vendor:product (an
    absent or ``*`` id matches any)?"""
    for key in ('vendor_id', 'product_id'):
        want = str(spec.get(key) or '*').strip().lower()
        have = str(alias.get(key) or '').strip().lower()
        if want not in ('*', have):
            return False
    return True


def _is_true(value: object) -> bool:
    return str(value).strip().lower() in ('1', 't', 'true', 'on', 'y', 'yes')


def one_time_use_problems(
        pci: Mapping[str, typing.Any]) -> list[tuple[str, str, str]]:
    """[(object, symptom, fix)] of the ``one_time_use`` device specs Nova
    refuses, from a nova.conf's ``[pci]`` (``scheduler.conf``'s
    ``settings['pci']``): Nova 2025.2 ``nova/pci/devspec.py`` refuses
    ``one_time_use`` without ``report_in_placement`` (nova-compute does not
    start), and ``nova/compute/pci_placement_translator.py`` allows it on
    type-PCI and type-PF devices only: a device an alias asks for as
    ``type-VF`` is a child device, and Nova refuses to report it."""
    found = []
    for spec in pci.get('device_specs') or ():
        if not _is_true(spec.get('one_time_use')):
            continue
        label = _('nova.conf [pci] device_spec %s') % json.dumps(
            spec, sort_keys=True)
        if not pci.get('report_in_placement'):
            found.append((label, _(
                'one_time_use needs [pci] report_in_placement = true: '
                'nova-compute refuses to start ("one_time_use=true requires '
                'pci.report_in_placement to be enabled"), and without '
                'Placement nothing would keep a used device reserved.'),
                '[pci] report_in_placement = true'))
        vfs = sorted(a.get('name') or '?' for a in pci.get('aliases') or ()
                     if str(a.get('device_type')).lower() == 'type-vf'
                     and _spec_matches(spec, a))
        if vfs:
            found.append((label, _(
                'one_time_use applies to type-PCI and type-PF devices only, '
                'but PCI alias(es) %(aliases)s ask for these devices as '
                'type-VF: Nova refuses to report them to Placement ("Only '
                'type-PCI and type-PF devices may set one_time_use") and '
                'no server gets one.') % {'aliases': ', '.join(vfs)},
                _('remove "one_time_use" from this device_spec, or give the '
                  'VFs a device_spec of their own without it')))
    return found
