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

"""Pure: ImagePropertiesFilter
(``nova/scheduler/filters/image_props_filter.py``).

Judged from what the compute API shows of a compute node
(gpuclient.rules.scheduler.host_manager), the way Nova 34 judges it.
``supported_instances`` (the (architecture, hypervisor type, vm mode)
triples the filter compares) is not in the API. It is inferred per driver
(``supported_instances``): exactly for the fake driver; for libvirt
(hypervisor_type ``QEMU``) the host's own architecture under ``qemu`` is
certain, while ``kvm`` and emulated architectures depend on the host's
libvirt capabilities; for Ironic the architecture is the node's
``cpu_arch`` property, which the compute API does not show. What cannot be
decided is reported as such (``unknown``), never as a pass or a failure.
"""

from __future__ import annotations

from collections.abc import Collection
from collections.abc import Mapping
from collections.abc import Sequence
import re
import typing

from gpuclient.i18n import _
from gpuclient.rules.scheduler import host_manager

if typing.TYPE_CHECKING:
    from gpuclient.rules.scheduler import request_spec

NAME = 'ImagePropertiesFilter'

# nova.objects.fields.Architecture.ALL, HVType.ALL, VMMode.ALL (Nova 34)
ARCHITECTURES = (
    'alpha', 'armv6', 'armv7l', 'armv7b', 'aarch64', 'cris', 'i686', 'ia64',
    'lm32', 'm68k', 'microblaze', 'microblazeel', 'mips', 'mipsel',
    'mips64', 'mips64el', 'openrisc', 'parisc', 'parisc64', 'ppc', 'ppcle',
    'ppc64', 'ppc64le', 'ppcemb', 's390', 's390x', 'sh4', 'sh4eb', 'sparc',
    'sparc64', 'unicore32', 'x86_64', 'xtensa', 'xtensaeb')
HV_TYPES = (
    'baremetal', 'bhyve', 'docker', 'fake', 'hyperv', 'ironic', 'kqemu',
    'kvm', 'lxc', 'lxd', 'openvz', 'parallels', 'phyp', 'qemu', 'test', 'uml',
    'vbox', 'vz', 'vmware', 'xen', 'zvm', 'prsm')
VM_MODES = ('hvm', 'xen', 'uml', 'exe')
_ARCH_ALIASES = {'i386': 'i686', 'i486': 'i686', 'i586': 'i686',
                 'x86_32': 'i686', 'x86_32p': 'i686', 'amd64': 'x86_64'}
_HV_ALIASES = {'xapi': 'xen'}
_VM_ALIASES = {'pv': 'xen', 'hv': 'hvm', 'baremetal': 'hvm'}

# image property -> its legacy name (ImageMetaProps._legacy_property_map);
# the current name wins when both are set
IMAGE_PROPERTIES = (
    ('hw_architecture', 'architecture'),
    ('img_hv_type', 'hypervisor_type'),
    ('hw_vm_mode', 'vm_mode'),
    ('img_hv_requested_version', 'hypervisor_version_requires'),
    ('hw_maxphysaddr_bits', None),
)


# -- names ----------------------------------------------------------------

def _canonical(name: object, aliases: Mapping[str, str],
               valid: Collection[str]) -> str | None:
    if name is None:
        return None
    lowered = str(name).lower()
    lowered = aliases.get(lowered, lowered)
    if lowered not in valid:
        raise ValueError(name)
    return lowered


def canonical_arch(name: object) -> str | None:
    """Architecture.canonicalize; ValueError for a name Nova refuses."""
    return _canonical(name, _ARCH_ALIASES, ARCHITECTURES)


def canonical_hv_type(name: object) -> str | None:
    return _canonical(name, _HV_ALIASES, HV_TYPES)


def canonical_vm_mode(name: object) -> str | None:
    return _canonical(name, _VM_ALIASES, VM_MODES)


# -- versions (oslo_utils.versionutils, as Nova uses it) --------------------

def version_str(number: int | str) -> str:
    """versionutils.convert_version_to_str: 8002000 -> '8.2.0'."""
    parts: list[int] = []
    number = int(number)
    while number:
        parts.insert(0, number % 1000)
        number //= 1000
    return '.'.join(str(p) for p in parts)


def _version(text: str) -> tuple[int, ...]:
    parts = [int(p) for p in text.split('.')]
    while len(parts) > 1 and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


_PREDICATE = re.compile(r'^\s*(<=|>=|<|>|!=|==)\s*([0-9]+(\.[0-9]+)*)\s*$')
_COMPARE = {'<': lambda a, b: a < b, '<=': lambda a, b: a <= b,
            '==': lambda a, b: a == b, '>': lambda a, b: a > b,
            '>=': lambda a, b: a >= b, '!=': lambda a, b: a != b}


def version_satisfies(version: str, predicate: str) -> bool:
    """``version`` (dotted) against ``>=8.0,<10`` (VersionPredicate).

    Numeric release versions only; ValueError for anything else (Nova's
    predicate parser accepts more, such as pre-releases).
    """
    have = _version(version)
    for part in predicate.split(','):
        found = _PREDICATE.match(part)
        if not found:
            raise ValueError(predicate)
        if not _COMPARE[found.group(1)](have, _version(found.group(2))):
            return False
    return True


# -- ImagePropertiesFilter -------------------------------------------------

def image_requirements(properties: Mapping[str, typing.Any] | None,
                       default_arch: str | None = None
                       ) -> dict[str, typing.Any]:
    """What ImagePropertiesFilter compares, from Glance image properties.

    {'architecture', 'hv_type', 'vm_mode', 'hv_version', 'maxphysaddr_bits',
    'invalid': [property names Nova would refuse]}; ``default_arch`` is
    [filter_scheduler] image_properties_default_architecture.
    """
    props: dict[str, typing.Any] = {}
    for current, legacy in IMAGE_PROPERTIES:
        value = (properties or {}).get(current)
        if value is None and legacy:
            value = (properties or {}).get(legacy)
        props[current] = value
    wanted: dict[str, typing.Any] = {'invalid': []}
    for key, name, canonical in (
            ('architecture', 'hw_architecture', canonical_arch),
            ('hv_type', 'img_hv_type', canonical_hv_type),
            ('vm_mode', 'hw_vm_mode', canonical_vm_mode)):
        value = props[name]
        if key == 'architecture' and value is None:
            value = default_arch
        try:
            wanted[key] = canonical(value)
        except ValueError:
            wanted[key] = str(value).lower()
            wanted['invalid'].append(name)
    wanted['hv_version'] = props['img_hv_requested_version'] or None
    bits = props['hw_maxphysaddr_bits']
    try:
        wanted['maxphysaddr_bits'] = int(bits) if bits not in (
            None, '') else None
    except (TypeError, ValueError):
        wanted['maxphysaddr_bits'] = None
        wanted['invalid'].append('hw_maxphysaddr_bits')
    return wanted


def asks_image_filter(wanted: Mapping[str, typing.Any]) -> bool:
    return bool(wanted['architecture'] or wanted['hv_type']
                or wanted['vm_mode'])


def supported_instances(
        hypervisor: Mapping[str, typing.Any]
) -> tuple[Sequence[tuple[str | None, str | None, str | None]],
           Sequence[tuple[str | None, str | None, str | None]], str | None]:
    """(certain, possible, why): the node's supported_instances, inferred.

    ``certain``: triples the driver surely reports; ``possible``: patterns
    (None: any value) it may report, which the API cannot confirm, with
    ``why`` saying what is missing.
    """
    kind = str(hypervisor.get('hypervisor_type') or '').lower()
    arch = (hypervisor.get('cpu_info') or {}).get('arch')
    try:
        arch = canonical_arch(arch)
    except ValueError:
        arch = None
    if kind == 'fake':
        # nova.virt.fake.FakeDriver reports exactly this
        return [('x86_64', 'fake', 'hvm')], [], None
    if kind == 'qemu':
        # libvirt: one triple per guest architecture and domain type in
        # its capabilities; the host's own architecture runs under qemu
        certain = [(arch, 'qemu', 'hvm')] if arch else []
        return certain, [(None, 'kvm', 'hvm'), (None, 'qemu', 'hvm')], _(
            'libvirt reports a guest architecture and domain type (qemu, '
            'kvm) for each emulator and accelerator on the host; the API '
            'shows only the host CPU architecture (%s)') % (arch or '?')
    if kind == 'ironic':
        return [], [(None, 'baremetal', 'hvm')], _(
            'Ironic reports the node\'s cpu_arch property, which the '
            'compute API does not show')
    return [], [(None, None, None)], _(
        'the instance types of hypervisor type "%s" are not in the compute '
        'API') % (hypervisor.get('hypervisor_type') or '?')


def _triple_matches(wanted: Mapping[str, typing.Any],
                    triple: tuple[str | None, str | None, str | None]
                    ) -> bool:
    # Nova's _compare_props: each wanted value must be somewhere in the
    # triple (not necessarily at its own position); None in a pattern
    # stands for any value at that position
    for position, key in enumerate(('architecture', 'hv_type', 'vm_mode')):
        want = wanted[key]
        if want and want not in triple and triple[position] is not None:
            return False
    return True


def judge_image(hypervisor: Mapping[str, typing.Any],
                wanted: Mapping[str, typing.Any]
                ) -> tuple[str, dict[str, typing.Any]]:
    """ImagePropertiesFilter on one node: (PASS|FAIL|UNKNOWN, detail)."""
    if not asks_image_filter(wanted):
        return host_manager.PASS, {}
    if wanted['invalid']:
        return host_manager.FAIL, {'invalid': list(wanted['invalid'])}
    certain, possible, why = supported_instances(hypervisor)
    version = hypervisor.get('hypervisor_version')
    cpu_bits = ((hypervisor.get('cpu_info') or {}).get('maxphysaddr')
                or {}).get('bits')
    detail = {'supported': [list(t) for t in certain],
              'hypervisor_type': hypervisor.get('hypervisor_type'),
              'hypervisor_version': version}
    if wanted['hv_version'] and version:
        try:
            version_ok = version_satisfies(version_str(version),
                                           wanted['hv_version'])
        except ValueError:
            return host_manager.UNKNOWN, dict(detail, why=_(
                'img_hv_requested_version=%s is not a plain version '
                'predicate gpuclient can compare') % wanted['hv_version'])
    else:
        version_ok = True
    matches = any(_triple_matches(wanted, t) for t in certain)
    if not matches and not any(_triple_matches(wanted, t) for t in possible):
        return host_manager.FAIL, detail
    if not version_ok:
        return host_manager.FAIL, dict(detail, version_ok=False)
    if wanted['maxphysaddr_bits'] and matches:
        # Nova 34 reads HostState.cpu_info (JSON text) with .get() here:
        # the filter raises AttributeError and the boot errors out
        return host_manager.UNKNOWN, dict(detail, nova_error=True, why=_(
            'image hw_maxphysaddr_bits: Nova 34\'s filter fails reading '
            'cpu_info at this point (AttributeError), the boot errors; the '
            'CPU has %s address bits') % (cpu_bits or '?'))
    if matches:
        return host_manager.PASS, detail
    return host_manager.UNKNOWN, dict(detail, why=why)


def image_text(host: str, detail: Mapping[str, typing.Any],
               wanted: Mapping[str, typing.Any]) -> str:
    asked = ', '.join('%s=%s' % (name, wanted[key]) for key, name in (
        ('architecture', 'architecture'), ('hv_type', 'img_hv_type'),
        ('vm_mode', 'hw_vm_mode')) if wanted[key])
    if detail.get('invalid'):
        return _('%(host)s: image property %(props)s has a value Nova does '
                 'not accept (%(asked)s; ImagePropertiesFilter)') % {
                     'host': host, 'props': ', '.join(detail['invalid']),
                     'asked': asked}
    if detail.get('version_ok') is False:
        return _('%(host)s: hypervisor version %(version)s does not satisfy '
                 'img_hv_requested_version %(want)s '
                 '(ImagePropertiesFilter)') % {
                     'host': host, 'want': wanted['hv_version'],
                     'version': version_str(detail['hypervisor_version'])}
    supported = ', '.join('/'.join(t) for t in detail['supported']) or _(
        'only unknown instance types')
    return _('%(host)s: the image asks for %(asked)s, the host '
             '(%(type)s) runs %(supported)s (ImagePropertiesFilter)') % {
                 'host': host, 'asked': asked, 'supported': supported,
                 'type': detail.get('hypervisor_type')}


def host_reasons(state: host_manager.HostState,
                 spec: request_spec.RequestSpec
                 ) -> list[dict[str, typing.Any]]:
    """[reason] when no node of the host passes (a host without a
    hypervisor record is not judged)."""
    nodes = state.nodes
    if not nodes:
        return []
    wanted = spec.wanted
    # WANTED is never None here: filters.spec, which makes every
    # RequestSpec, sets it (image_requirements)
    status, detail = host_manager.judge_host(
        nodes, lambda node: judge_image(
            node, wanted))  # type: ignore[arg-type]
    if status == host_manager.FAIL:
        return [{'filter': NAME, 'detail': detail, 'wanted': wanted}]
    return []


def text(host: str, reason: Mapping[str, typing.Any],
         project_id: str | None) -> str:
    return image_text(host, reason['detail'], reason['wanted'])
