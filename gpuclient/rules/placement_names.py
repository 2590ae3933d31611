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
        'IPV4_ADDRESS',
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

# The standard classes one GPU can be; every other standard class counts
# something else (CPUs, memory, disk, NICs, addresses, bandwidth, ...).
GPU_STANDARD_CLASSES = frozenset(('VGPU', 'PGPU'))
NON_GPU_RESOURCE_CLASSES = STANDARD_RESOURCE_CLASSES - GPU_STANDARD_CLASSES

# Bounds, so that no option or extra spec builds an enormous request.
# MAX_GPUS: GPUs (devices) one instance may ask for. Nova turns each PCI
# device and each numbered vGPU group into its own Placement request
# group; no server holds more than a few dozen GPUs.
MAX_GPUS = 64
# MAX_AMOUNT: the largest amount Placement stores (a signed 32-bit
# integer, as for inventory totals).
MAX_AMOUNT = 2147483647

_CUSTOM_RE = re.compile(r'^CUSTOM_[A-Z0-9_]+$')
_STANDARD_RE = re.compile(r'^[A-Z0-9_]+$')
_MAX_NAME = 255


def _custom_suffix(text: str) -> str:
    # Nova and Ironic: non-alphanumerics become '_', then upper case.
    return re.sub('[^0-9A-Za-z]+', '_', text).upper()


def normalize_resource_class(name: str | None) -> str:
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
    # a trailing '_' stays, as in Nova's normalize_rc_name (an Ironic
    # node's class) and os_resource_classes.normalize_name (a PCI
    # device_spec or alias): 'gpu-h100-' is CUSTOM_GPU_H100_ there
    if not _CUSTOM_RE.match(result) or len(result) > _MAX_NAME:
        raise exceptions.CommandError(
            _('Invalid resource class %r: it does not normalise to a valid '
              'custom class name (CUSTOM_ followed by A-Z, 0-9 and _).')
            % name
        )
    return result


def normalize_trait(name: str | None) -> str:
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
    if not _CUSTOM_RE.match(result):
        raise exceptions.CommandError(
            _('Invalid trait name %r: nothing is left after CUSTOM_ once '
              'it is normalised; give a name with letters or digits after '
              'the prefix.') % name
        )
    return check_custom_trait(result)


def check_custom_trait(name: object) -> str:
    """Return ``name`` if Placement accepts it as a custom trait.

    A custom trait is ``CUSTOM_`` followed by A-Z, 0-9 and ``_``, 255
    characters at most (Placement's schema). For the traits gpuclient
    writes (pool isolation and vGPU/MIG type traits). Raises CommandError
    otherwise; ``normalize_trait`` turns free text into such a name.
    """
    text = name if isinstance(name, str) else ''
    if len(text) > _MAX_NAME:
        raise exceptions.CommandError(
            _('Invalid custom trait %(name)s...: %(length)d characters, '
              'Placement allows at most %(max)d. Choose a shorter name.')
            % {'name': text[:40], 'length': len(text), 'max': _MAX_NAME}
        )
    if not _CUSTOM_RE.match(text):
        raise exceptions.CommandError(
            _('Invalid custom trait %r: Placement wants CUSTOM_ followed '
              'by upper-case letters, digits and _ (e.g. '
              'CUSTOM_GPU_POOL_SOLVER).') % (name,)
        )
    return text


def is_trait_name(name: object) -> bool:
    """Is ``name`` a trait name Placement accepts?

    Standard traits are A-Z, 0-9 and ``_``; custom ones ``CUSTOM_``
    followed by at least one of those; 255 characters at most.
    """
    if not isinstance(name, str) or len(name) > _MAX_NAME:
        return False
    if name.startswith(CUSTOM_PREFIX):
        return bool(_CUSTOM_RE.match(name))
    return bool(_STANDARD_RE.match(name))


def check_gpu_class(name: str | None) -> str:
    """The Placement class one GPU of a pool is, or CommandError.

    ``name`` is normalised first (``normalize_resource_class``), and the
    result returned. Refused: Placement's standard classes that count
    something other than GPUs (VCPU, PCPU, MEMORY_MB, DISK_GB,
    SRIOV_NET_VF, NUMA_*, IPV4_ADDRESS, NET_BW_*, NET_PACKET_RATE_*,
    MEM_ENCRYPTION_CONTEXT, PCI_DEVICE, FPGA, VGPU_DISPLAY_HEAD): a
    flavor derived from such a pool would not ask Placement for a GPU
    (a bare-metal flavor zeroes VCPU, MEMORY_MB and DISK_GB, so it would
    ask for nothing). Allowed: VGPU, PGPU and every CUSTOM_ class.
    """
    rc = normalize_resource_class(name)
    if rc in NON_GPU_RESOURCE_CLASSES:
        raise exceptions.CommandError(
            _('%(rc)s cannot be a pool\'s GPU resource class: it is one of '
              'Placement\'s standard classes for something other than a '
              'GPU, so the pool\'s flavors would not ask Placement for a '
              'GPU. Give the class one GPU is: VGPU, PGPU, or a custom '
              'class such as CUSTOM_PCI_10DE_2331 (passthrough) or the '
              'Ironic nodes\' class (baremetal.gpu-h100, which Nova '
              'reports as CUSTOM_BAREMETAL_GPU_H100; Nova reports an '
              'Ironic class named %(name)s as CUSTOM_%(rc)s, so give that '
              'if it is really the nodes\' class).')
            % {'rc': rc, 'name': str(name).strip()}
        )
    return rc
