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


def is_q35(machine_type):
    """q35 or a versioned q35 machine (pc-q35-8.2)."""
    return bool(machine_type) and 'q35' in str(machine_type)


def _secure_boot_wanted(value):
    return value in ('required', 'optional')


def plan(image, q35=True, uefi=True, secure_boot=False,
         hide_hypervisor_id=False):
    """{property: value, or None to remove it} for ``gpu image set``.

    ``image`` is the image as Glance returns it (properties at top level).
    ``q35=False``/``uefi=False`` (``--no-q35``/``--no-uefi``) remove a q35
    machine type or UEFI firmware that is set, and leave other values
    alone. Raises CommandError for a combination Nova would refuse to
    boot.
    """
    if secure_boot and not (q35 and uefi):
        raise exceptions.CommandError(
            _('--secure-boot needs a q35 machine and UEFI firmware: drop '
              '--no-q35 and --no-uefi, or drop --secure-boot.'))
    changes = {}
    machine = image.get(MACHINE_TYPE)
    firmware = image.get(FIRMWARE_TYPE)
    if q35:
        if not is_q35(machine):
            changes[MACHINE_TYPE] = Q35
    elif is_q35(machine):
        changes[MACHINE_TYPE] = None
    if uefi:
        if firmware != UEFI:
            changes[FIRMWARE_TYPE] = UEFI
    elif firmware == UEFI:
        changes[FIRMWARE_TYPE] = None
    if secure_boot:
        if image.get(SECURE_BOOT) != 'required':
            changes[SECURE_BOOT] = 'required'
    elif (not (q35 and uefi)
          and _secure_boot_wanted(image.get(SECURE_BOOT))):
        raise exceptions.CommandError(
            _('Image %(image)s has %(key)s=%(value)s, which needs a q35 '
              'machine and UEFI firmware. Remove it first (openstack image '
              'unset --property %(key)s %(image)s) or keep q35 and UEFI.')
            % {'image': image.get('name') or image.get('id'),
               'key': SECURE_BOOT, 'value': image.get(SECURE_BOOT)})
    if hide_hypervisor_id:
        if str(image.get(HIDE_ID, '')).lower() not in _TRUE:
            changes[HIDE_ID] = 'true'
        if WRONG_HIDE_ID in image:
            changes[WRONG_HIDE_ID] = None
    return changes


def report(image):
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
            'may fail to initialise. Run "openstack gpu image set".')
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
            '...). Run "openstack gpu image set".') % FIRMWARE_TYPE)
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
