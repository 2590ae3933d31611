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

"""Pure: names of Placement resource classes and traits."""

import re

from osc_lib import exceptions

from gpuclient.i18n import _

CUSTOM_PREFIX = 'CUSTOM_'

# Placement's standard resource classes (os-resource-classes 1.1).
STANDARD_RESOURCE_CLASSES = frozenset(
    (
        'VCPU',
        'MEMORY_MB',
        'DISK_GB',
        'PCI_DEVICE',
        'SRIOV_NET_VF',
        'NUMA_SOCKET',
        'NUMA_CORE',
        'NUMA_THREAD',
        'NUMA_MEMORY_MB',
        'VGPU',
        'VGPU_DISPLAY_HEAD',
        'NET_BW_EGR_KILOBIT_PER_SEC',
        'NET_BW_IGR_KILOBIT_PER_SEC',
        'PCPU',
        'MEM_ENCRYPTION_CONTEXT',
        'FPGA',
        'PGPU',
        'NET_PACKET_RATE_KILOPACKET_PER_SEC',
        'NET_PACKET_RATE_EGR_KILOPACKET_PER_SEC',
        'NET_PACKET_RATE_IGR_KILOPACKET_PER_SEC',
    )
)

_CUSTOM_RE = re.compile(r'^CUSTOM_[A-Z0-9_]+$')
_MAX_NAME = 255


def _custom_suffix(text):
    # Nova and Ironic: non-alphanumerics become '_', then upper case.
    return re.sub('[^0-9A-Za-z]+', '_', text).upper()


def normalize_resource_class(name):
    """Return the Placement resource class an operator means by ``name``.

    * a standard class (``VGPU``, ``pgpu``) is returned in upper case;
    * ``CUSTOM_...`` is kept, with other characters normalised;
    * anything else is normalised as Nova does for an Ironic node's
      resource class: ``baremetal.gpu-h100`` -> ``CUSTOM_BAREMETAL_GPU_H100``.

    Raises CommandError for a name that cannot become a class.
    """
    text = (name or '').strip()
    if not text or not re.search('[0-9A-Za-z]', text):
        raise exceptions.CommandError(
            _(
                'Invalid resource class %r: give a standard class such as '
                'VGPU or a custom one such as CUSTOM_PCI_10DE_2331.'
            )
            % name
        )
    upper = text.upper()
    if upper in STANDARD_RESOURCE_CLASSES:
        return upper
    if upper.startswith(CUSTOM_PREFIX):
        result = CUSTOM_PREFIX + _custom_suffix(text[len(CUSTOM_PREFIX):])
    else:
        result = CUSTOM_PREFIX + _custom_suffix(text)
    result = result.rstrip('_') if result.endswith('_') else result
    if not _CUSTOM_RE.match(result) or len(result) > _MAX_NAME:
        raise exceptions.CommandError(
            _('Invalid resource class %r: it does not normalise to a valid '
              'custom class name (CUSTOM_ followed by A-Z, 0-9 and _).')
            % name
        )
    return result


def normalize_trait(name):
    """``nvidia-35`` -> ``CUSTOM_NVIDIA_35`` (custom trait naming)."""
    text = (name or '').strip()
    if not re.search('[0-9A-Za-z]', text):
        raise exceptions.CommandError(
            _('Invalid trait name %r.') % name
        )
    upper = text.upper()
    if upper.startswith(CUSTOM_PREFIX):
        text = text[len(CUSTOM_PREFIX):]
    result = (CUSTOM_PREFIX + _custom_suffix(text)).rstrip('_')
    if len(result) > _MAX_NAME:
        raise exceptions.CommandError(
            _('Invalid trait name %r: longer than 255 characters.') % name
        )
    return result
