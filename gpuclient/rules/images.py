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

"""Pure: the image properties a GPU guest needs.

Datacenter GPUs expose very large PCI BARs: the guest should boot as a q35
machine with UEFI firmware (``hw_machine_type=q35``,
``hw_firmware_type=uefi``). Secure boot (``os_secure_boot``) needs both.
The property that hides the hypervisor from the guest is
``img_hide_hypervisor_id``; ``hw_hide_hypervisor_id`` does not exist as
an image property (it is a flavor extra spec, ``hw:hide_hypervisor_id``),
and Nova ignores it on an image.
"""

from collections.abc import Mapping
import typing

from osc_lib import exceptions

from gpuclient.i18n import _

MACHINE_TYPE = 'hw_machine_type'
FIRMWARE_TYPE = 'hw_firmware_type'
SECURE_BOOT = 'os_secure_boot'
HIDE_ID = 'img_hide_hypervisor_id'
WRONG_HIDE_ID = 'hw_hide_hypervisor_id'
PROPERTIES = (MACHINE_TYPE, FIRMWARE_TYPE, SECURE_BOOT, HIDE_ID)

Q35 = 'q35'
UEFI = 'uefi'
FIRMWARES = ('bios', 'uefi')
SECURE_BOOT_VALUES = ('required', 'disabled', 'optional')
_TRUE = ('1', 't', 'true', 'on', 'y', 'yes')
_FALSE = ('0', 'f', 'false', 'off', 'n', 'no')


def is_q35(machine_type: object) -> bool:
    """q35 or a versioned q35 machine (pc-q35-8.2)."""
    return bool(machine_type) and 'q35' in str(machine_type)


def _secure_boot_wanted(value: object) -> bool:
    return value in ('required', 'optional')


# What ``gpu image set --x`` writes, and what ``--no-x`` writes (None: it
# removes the property instead; see ``plan``).
SET_VALUES = {
    MACHINE_TYPE: Q35,
    FIRMWARE_TYPE: UEFI,
    SECURE_BOOT: 'required',
    HIDE_ID: 'true',
}
OFF_VALUES = {
    MACHINE_TYPE: None,
    FIRMWARE_TYPE: 'bios',
    SECURE_BOOT: 'disabled',
    HIDE_ID: 'false',
}
# option name (as in the parsers) -> property
OPTIONS = (
    ('q35', MACHINE_TYPE),
    ('uefi', FIRMWARE_TYPE),
    ('secure_boot', SECURE_BOOT),
    ('hide_hypervisor_id', HIDE_ID),
)


def _label(image: Mapping[str, typing.Any]) -> str | None:
    return image.get('name') or image.get('id')


def _after(image: Mapping[str, typing.Any],
           changes: Mapping[str, typing.Any]) -> dict[str, typing.Any]:
    result = dict(image)
    for key, value in changes.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = value
    return result


def check_secure_boot(image: Mapping[str, typing.Any],
                      changes: Mapping[str, str | None],
                      remedy: str) -> None:
    """Refuse changes that leave secure boot without q35 and UEFI.

    Nova refuses to boot an image whose ``os_secure_boot`` asks for secure
    boot without UEFI firmware on a q35 machine. Only a change to one of
    the three properties can break that, so an image already in that state
    and left alone is not refused here (``gpu image show`` warns).
    """
    if not {MACHINE_TYPE, FIRMWARE_TYPE, SECURE_BOOT} & set(changes):
        return
    result = _after(image, changes)
    secure = result.get(SECURE_BOOT)
    if not _secure_boot_wanted(secure):
        return
    if is_q35(result.get(MACHINE_TYPE)) and result.get(FIRMWARE_TYPE) == UEFI:
        return
    raise exceptions.CommandError(
        _('Image %(image)s would have %(key)s=%(value)s without a q35 '
          'machine and UEFI firmware, which Nova refuses to boot. '
          '%(remedy)s') % {'image': _label(image), 'key': SECURE_BOOT,
                           'value': secure, 'remedy': remedy})


def plan(image: Mapping[str, typing.Any], q35: bool | None = None,
         uefi: bool | None = None, secure_boot: bool | None = None,
         hide_hypervisor_id: bool | None = None) -> dict[str, str | None]:
    """{property: value, or None to remove it} for ``gpu image set``.

    ``image`` is the image as Glance returns it (properties at top level).
    Each option is True (``--x``), False (``--no-x``) or None (not given:
    the property is left alone, so no option changes nothing).

    ``--x`` writes the value in ``SET_VALUES`` unless the image already
    has it (any q35 machine type, e.g. ``pc-q35-8.2``, counts; so does any
    true spelling of ``img_hide_hypervisor_id``). ``--no-x`` writes the
    explicit "off" value Nova defines (``hw_firmware_type=bios``,
    ``os_secure_boot=disabled``, ``img_hide_hypervisor_id=false``); no
    machine type means "not q35" on every architecture, so ``--no-q35``
    removes a q35 machine type (the host's default applies) and keeps any
    other. Either ``--hide-hypervisor-id`` or its ``--no-`` form removes
    the misspelt ``hw_hide_hypervisor_id``, which Nova ignores.

    Raises CommandError for a result Nova would refuse to boot.
    """
    changes: dict[str, str | None] = {}
    machine = image.get(MACHINE_TYPE)
    if q35 is True and not is_q35(machine):
        changes[MACHINE_TYPE] = Q35
    elif q35 is False and is_q35(machine):
        changes[MACHINE_TYPE] = None
    for wanted, key in ((uefi, FIRMWARE_TYPE), (secure_boot, SECURE_BOOT)):
        if wanted is None:
            continue
        value = SET_VALUES[key] if wanted else OFF_VALUES[key]
        if image.get(key) != value:
            changes[key] = value
    if hide_hypervisor_id is not None:
        have = str(image.get(HIDE_ID, '')).lower()
        if hide_hypervisor_id and have not in _TRUE:
            changes[HIDE_ID] = SET_VALUES[HIDE_ID]
        elif not hide_hypervisor_id and have not in _FALSE:
            changes[HIDE_ID] = OFF_VALUES[HIDE_ID]
        if WRONG_HIDE_ID in image:
            changes[WRONG_HIDE_ID] = None
    if secure_boot:
        remedy = _('Add --q35 and --uefi (or drop --secure-boot).')
    else:
        remedy = _('Add --no-secure-boot, or keep q35 and UEFI.')
    check_secure_boot(image, changes, remedy)
    return changes


def own_values(key: str) -> tuple[str, ...]:
    """The values ``gpu image set`` writes for ``key``: --x's and --no-x's."""
    return tuple(value for value in (SET_VALUES[key], OFF_VALUES[key])
                 if value is not None)


def plan_unset(image: Mapping[str, typing.Any], q35: bool = False,
               uefi: bool = False, secure_boot: bool = False,
               hide_hypervisor_id: bool = False
               ) -> tuple[dict[str, str | None], list[str]]:
    """(changes, notes) for ``gpu image unset``: remove what set added.

    A property is removed only when it holds a value ``gpu image set``
    writes: the ``--x`` value (``SET_VALUES``) or the explicit "off" value
    of ``--no-x`` (``OFF_VALUES``: ``hw_firmware_type=bios``,
    ``os_secure_boot=disabled``, ``img_hide_hypervisor_id=false``). Any
    other value (``pc-q35-8.2``, ``os_secure_boot=optional``, ...) was put
    there by someone else and is left, with a note saying so and how to
    remove it. No option removes nothing.
    """
    wanted = {'q35': q35, 'uefi': uefi, 'secure_boot': secure_boot,
              'hide_hypervisor_id': hide_hypervisor_id}
    changes: dict[str, str | None] = {}
    notes: list[str] = []
    for option, key in OPTIONS:
        if not wanted[option] or key not in image:
            continue
        have = image.get(key)
        mine = own_values(key)
        if str(have).lower() in mine:
            changes[key] = None
        else:
            notes.append(
                _('%(key)s=%(value)s is not a value gpuclient sets '
                  '(%(mine)s): left as it is. To remove it anyway: '
                  'openstack image unset --property %(key)s %(image)s')
                % {'key': key, 'value': have, 'mine': ' or '.join(mine),
                   'image': _label(image)})
    check_secure_boot(image, changes, _(
        'Add --secure-boot to remove os_secure_boot too (or openstack '
        'image unset --property os_secure_boot).'))
    return changes, notes


def report(image: Mapping[str, typing.Any]
           ) -> tuple[dict[str, typing.Any], bool, list[str]]:
    """(GPU-relevant properties, ready, warnings) for ``gpu image show``."""
    machine = image.get(MACHINE_TYPE)
    firmware = image.get(FIRMWARE_TYPE)
    secure = image.get(SECURE_BOOT)
    hide = image.get(HIDE_ID)
    warnings = []
    if not machine:
        warnings.append(_(
            '%s is not set: Nova uses the host\'s default machine type '
            '(i440fx "pc" on most hosts), where GPUs with large PCI BARs '
            'may fail to initialise. Run "openstack gpu image set --q35".')
            % MACHINE_TYPE)
    elif not is_q35(machine):
        warnings.append(_(
            '%(key)s=%(value)s is not a q35 machine: GPUs with large PCI '
            'BARs may fail to initialise.') % {'key': MACHINE_TYPE,
                                               'value': machine})
    if not firmware:
        warnings.append(_(
            '%s is not set, so the guest boots with BIOS firmware, which '
            'cannot map the large PCI BARs of datacenter GPUs (A100, H100, '
            '...). Run "openstack gpu image set --uefi".') % FIRMWARE_TYPE)
    elif firmware not in FIRMWARES:
        warnings.append(_(
            '%(key)s=%(value)s is not a firmware Nova knows (bios or '
            'uefi).') % {'key': FIRMWARE_TYPE, 'value': firmware})
    elif firmware != UEFI:
        warnings.append(_(
            '%(key)s=%(value)s: BIOS firmware cannot map the large PCI BARs '
            'of datacenter GPUs (A100, H100, ...); use uefi.')
            % {'key': FIRMWARE_TYPE, 'value': firmware})
    if secure is not None and secure not in SECURE_BOOT_VALUES:
        warnings.append(_(
            '%(key)s=%(value)s is not one of %(all)s.')
            % {'key': SECURE_BOOT, 'value': secure,
               'all': ', '.join(SECURE_BOOT_VALUES)})
    if secure == 'required' and firmware != UEFI:
        warnings.append(_(
            '%(key)s=required without %(fw)s=uefi: Nova refuses to boot '
            'this image.') % {'key': SECURE_BOOT, 'fw': FIRMWARE_TYPE})
    if secure == 'required' and not is_q35(machine):
        warnings.append(_(
            '%(key)s=required needs a q35 machine type (%(mt)s=q35): Nova '
            'refuses to boot this image otherwise.')
            % {'key': SECURE_BOOT, 'mt': MACHINE_TYPE})
    if WRONG_HIDE_ID in image:
        warnings.append(_(
            '%(wrong)s is not an image property Nova reads: it is ignored. '
            'Use %(right)s=true ("openstack gpu image set '
            '--hide-hypervisor-id").') % {'wrong': WRONG_HIDE_ID,
                                          'right': HIDE_ID})
    if hide is not None and str(hide).lower() not in _TRUE + _FALSE:
        warnings.append(_('%(key)s=%(value)s is not a boolean.')
                        % {'key': HIDE_ID, 'value': hide})
    properties = {key: image.get(key) for key in PROPERTIES}
    ready = (is_q35(machine) and firmware == UEFI
             and not any(w for w in warnings))
    return properties, ready, warnings
