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

from collections.abc import Mapping
import math
import re
import typing

from gpuclient.i18n import _
from gpuclient.rules import address_space
from gpuclient.rules.scheduler import exception


def image_props(
        image: Mapping[str, typing.Any] | None) -> dict[str, typing.Any]:
    """The image's properties as a dict (Glance shows them at top level)."""
    return dict(image or {})


def pair(specs: Mapping[str, str], image: Mapping[str, typing.Any] | None,
         key: str, prefix: str = 'hw') -> tuple[str | None, str | None]:
    """(flavor's PREFIX:KEY, image's PREFIX_KEY): _get_flavor_image_meta."""
    return specs.get('%s:%s' % (prefix, key)), image_props(image).get(
        '%s_%s' % (prefix, key))


def unique(specs: Mapping[str, str], image: Mapping[str, typing.Any] | None,
           key: str, prefix: str = 'hw') -> str | None:
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


def parse_cpu_spec(text: str) -> set[int]:
    """Nova's CPU set syntax ('0-3,^2') -> set of ints."""
    include: set[int]
    exclude: set[int]
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


def cpu_policy(specs: Mapping[str, str],
               image: Mapping[str, typing.Any] | None) -> str | None:
    flavor_policy, image_policy = pair(specs, image, 'cpu_policy')
    if flavor_policy in ('dedicated', 'mixed', 'shared'):
        return flavor_policy
    if image_policy in ('dedicated', 'mixed', 'shared'):
        return image_policy
    return None


def thread_policy(specs: Mapping[str, str],
                  image: Mapping[str, typing.Any] | None) -> str | None:
    flavor_policy, image_policy = pair(specs, image, 'cpu_thread_policy')
    if flavor_policy in (None, 'prefer'):
        return flavor_policy or image_policy
    return flavor_policy


def maxphysaddr_mode(specs: Mapping[str, str],
                     image: Mapping[str, typing.Any] | None) -> str | None:
    """hw:maxphysaddr_mode or the image's hw_maxphysaddr_mode, refused when
    they differ or Nova does not know it (get_maxphysaddr_mode)."""
    mode = unique(specs, image, 'maxphysaddr_mode')
    if mode is None:
        return None
    if mode not in address_space.MODES:
        raise exception.error(
            _('Invalid maxphysaddr mode %(mode)r: Nova takes %(modes)s.'),
            mode=mode, modes=', '.join(address_space.MODES))
    return mode


# -- memory encryption (confidential VMs) ------------------------------------
# Nova 34, nova/virt/hardware.py: get_mem_encryption_constraint and the
# MemEncryptionConfig classes; the models are nova.objects.fields.
# MemEncryptionModel.ALL, which the flavor validator
# (nova/api/validation/extra_specs/hw.py, hw:mem_encryption_model) and the
# image property accept alike. Nova 34 accepts intel-tdx (2026.2); each
# model's trait, and what it asks of the image:
# (trait, stateless firmware needed, video device refused)
MEM_ENCRYPTION_MODELS = {
    'amd-sev': ('HW_CPU_X86_AMD_SEV', False, False),
    'amd-sev-es': ('HW_CPU_X86_AMD_SEV_ES', False, False),
    'amd-sev-snp': ('HW_CPU_X86_AMD_SEV_SNP', True, False),
    'intel-tdx': ('HW_CPU_X86_INTEL_TDX', True, True),
}
MEM_ENCRYPTION_DEFAULT_MODEL = 'amd-sev'
# every model: UEFI firmware and a q35 machine type
MEM_ENCRYPTION_FIRMWARE = 'uefi'
MEM_ENCRYPTION_MACHINE = 'q35'


def _flag(value: object) -> bool | None:
    return None if value is None else str(value).strip().lower() in (
        '1', 't', 'true', 'on', 'y', 'yes')


def mem_encryption(specs: Mapping[str, str],
                   image: Mapping[str, typing.Any] | None,
                   check_image: bool = True) -> str | None:
    """The memory encryption model the flavor (SPECS) and IMAGE ask for,
    or None: Nova's get_mem_encryption_constraint at the API (no machine
    type of the host). A flavor and an image that disagree, an unknown
    model, or (CHECK_IMAGE) an image Nova refuses for the model is a
    CommandError, the fix in it (Nova refuses the boot with a 400)."""
    flavor_enc: str | bool | None
    image_enc: str | bool | None
    flavor_enc, image_enc = pair(specs, image, 'mem_encryption')
    flavor_enc, image_enc = _flag(flavor_enc), _flag(image_enc)
    if not flavor_enc and not image_enc:
        return None
    if (flavor_enc is not None and image_enc is not None
            and flavor_enc != image_enc):
        raise exception.error(
            _('The flavor sets hw:mem_encryption=%(fv)s and the image '
              'hw_mem_encryption=%(iv)s: Nova refuses to boot this '
              'combination. Drop one of them, or make them agree.'),
            fv=flavor_enc, iv=image_enc)
    model = unique(specs, image, 'mem_encryption_model') or (
        MEM_ENCRYPTION_DEFAULT_MODEL)
    if model not in MEM_ENCRYPTION_MODELS:
        raise exception.error(
            _('Memory encryption model %(model)s is not one Nova knows '
              '(%(known)s): set hw:mem_encryption_model to one of them.'),
            model=model, known=', '.join(MEM_ENCRYPTION_MODELS))
    problems = (mem_encryption_image_problems(model, image)
                if check_image else [])
    if problems:
        raise exception.error(
            _('Memory encryption (%(model)s) is asked for, but Nova '
              'refuses the image: %(problems)s.'),
            model=model, problems='; '.join(problems))
    return model


def mem_encryption_trait(model: str) -> str:
    return MEM_ENCRYPTION_MODELS[model][0]


def mem_encryption_image_problems(
        model: str, image: Mapping[str, typing.Any] | None) -> list[str]:
    """What IMAGE lacks for memory encryption MODEL, as the fixes
    (MemEncryptionConfig.check_constraints): [] when Nova takes it."""
    props = image_props(image)
    _trait, stateless, no_video = MEM_ENCRYPTION_MODELS[model]
    problems = []
    if props.get('hw_firmware_type') != MEM_ENCRYPTION_FIRMWARE:
        problems.append(_('set the image property hw_firmware_type=uefi'))
    machine = props.get('hw_machine_type')
    if machine is not None and MEM_ENCRYPTION_MACHINE not in str(machine):
        problems.append(_('set the image property hw_machine_type=q35'))
    if stateless and not _flag(props.get('hw_firmware_stateless')):
        problems.append(
            _('set the image property hw_firmware_stateless=true'))
    if no_video and props.get('hw_video_model') != 'none':
        problems.append(_('set the image property hw_video_model=none'))
    return problems


# hw:mem_page_size's words (MEMPAGES_SMALL, _LARGE, _ANY)
PAGES_SMALL, PAGES_LARGE, PAGES_ANY = 'small', 'large', 'any'
_PAGE_UNITS = {'': 1, 'K': 1, 'M': 1024, 'G': 1024 * 1024}
PCI_POLICIES = ('required', 'legacy', 'preferred', 'socket')


def page_size(text: str | int) -> str | int | None:
    """'small', 'large', 'any' or a size in KiB from a hw:mem_page_size
    value (2048, 2MB, 1GiB, ...); None when it is none of them."""
    value = str(text).strip()
    if value.lower() in (PAGES_SMALL, PAGES_LARGE, PAGES_ANY):
        return value.lower()
    number = value.rstrip('BbIi')
    unit = number[-1:].upper() if number[-1:].isalpha() else ''
    digits = number[:-1] if unit else number
    if not digits.isdigit() or unit not in _PAGE_UNITS or not int(digits):
        return None
    return int(digits) * _PAGE_UNITS[unit]


# oslo.utils string_to_bytes (IEC), as Nova reads a requested page size
_SIZE_RE = re.compile(r'(^[-+]?\d*\.?\d+)([KMGTPEZYRQ]i?)?(b|bit|B)$')
_SIZE_EXPONENTS = {prefix: exponent
                   for exponent, letter in enumerate('KMGTPEZYRQ', 1)
                   for prefix in (letter, letter + 'i')}
# Nova's MEMPAGES_SMALL, _LARGE and _ANY
_PAGE_WORDS: dict[float, str] = {-1: PAGES_SMALL, -2: PAGES_LARGE,
                                  -3: PAGES_ANY}


def requested_page_size(text: str | int) -> str | int | float | None:
    """A requested hw:mem_page_size (or the image's hw_mem_page_size)
    as Nova reads it (_get_numa_pagesize_constraint's
    check_and_return_pages_size): 'small', 'large' or 'any' exactly, a
    number of KiB in digits, or a size that ends in b, bit or B (2MB,
    2MiB, 1GB, 2048KB; b and bit count bits: 2Mb is 256 KiB), in KiB (a
    fraction when it is one, which no host's pages are); None for
    anything else (2M, 1G, LARGE: Nova refuses them at boot).
    """
    value = str(text)
    if value in (PAGES_SMALL, PAGES_LARGE, PAGES_ANY):
        return value
    if value.isdigit():
        return int(value)
    match = _SIZE_RE.match(value)
    if not match:
        return None
    magnitude = float(match.group(1))
    if match.group(3) in ('b', 'bit'):
        magnitude /= 8
    if match.group(2):
        magnitude *= 1024 ** _SIZE_EXPONENTS[match.group(2)]
    size = math.ceil(magnitude) / 1024
    size = int(size) if size == int(size) else size
    # Nova compares the number with its MEMPAGES_SMALL, _LARGE, _ANY
    return _PAGE_WORDS.get(size, size)


def _page_constraint(
        specs: Mapping[str, str],
        image: Mapping[str, typing.Any] | None) -> str | int | float | None:
    """_get_numa_pagesize_constraint: the flavor allows, the image may
    choose within any or large."""
    flavor_value, image_value = pair(specs, image, 'mem_page_size')
    if not flavor_value and image_value:
        raise exception.error(
            _('The image asks hw_mem_page_size=%(value)s and the flavor '
              'sets no hw:mem_page_size: Nova refuses it (set '
              'hw:mem_page_size=large or any on the flavor).'),
            value=image_value)
    if not flavor_value:
        return None
    chosen = requested_page_size(flavor_value)
    if image_value and chosen in (PAGES_ANY, PAGES_LARGE):
        chosen = requested_page_size(image_value)
    elif image_value:
        raise exception.error(
            _('The image asks hw_mem_page_size=%(value)s while the flavor '
              'fixes hw:mem_page_size: Nova refuses it.'), value=image_value)
    if chosen is None:
        raise exception.error(
            _('Invalid memory page size %(value)s: give small, large, any '
              'or a size such as 2MB or 1GB.'),
            value=image_value or flavor_value)
    return chosen


def _whole(specs: Mapping[str, str], image: Mapping[str, typing.Any] | None,
           key: str) -> int | None:
    flavor_value, image_value = pair(specs, image, key)
    value = flavor_value or image_value
    try:
        return int(value) if value else None
    except ValueError:
        raise exception.error(
            _('Invalid hw:%(key)s value %(value)s: give a whole number.'),
            key=key, value=value) from None


def _manual_cells(specs: Mapping[str, str],
                  nodes: int) -> list[dict[str, int]] | None:
    """hw:numa_cpus.N and hw:numa_mem.N -> [{cpus, memory_mb}] or None."""
    cpus = [specs.get('hw:numa_cpus.%d' % n) for n in range(nodes)]
    mems = [specs.get('hw:numa_mem.%d' % n) for n in range(nodes)]
    if not any(cpus) and not any(mems):
        return None
    if not all(cpus) or not all(mems):
        raise exception.error(
            _('The flavor sets hw:numa_cpus.N and hw:numa_mem.N for only '
              'some of its %(nodes)d NUMA nodes: Nova refuses it (set both '
              'for every node).'), nodes=nodes)
    # every one is set (all() above), which mypy does not follow
    return [{'cpus': len(parse_cpu_spec(c)),  # type: ignore[arg-type]
             'memory_mb': int(m)}  # type: ignore[arg-type]
            for c, m in zip(cpus, mems, strict=True)]


def pci_numa_policy(specs: Mapping[str, str],
                    image: Mapping[str, typing.Any] | None) -> str | None:
    """hw:pci_numa_affinity_policy or the image's, as Nova reads them
    at boot (get_pci_numa_policy_constraint; None: neither sets one).
    Refused as Nova refuses the boot: the two differ, or one is not a
    policy Nova knows (the image's property is an enum field, so an
    empty one is refused too)."""
    flavor_value, image_value = pair(specs, image, 'pci_numa_affinity_policy')
    if image_value is not None and image_value not in PCI_POLICIES:
        raise exception.error(
            _('The image has hw_pci_numa_affinity_policy=%(value)s: Nova '
              'cannot read it (one of %(policies)s), and refuses the '
              'boot.'), value=image_value, policies=', '.join(PCI_POLICIES))
    if flavor_value and image_value and flavor_value != image_value:
        raise exception.error(
            _('The flavor has hw:pci_numa_affinity_policy=%(fv)s and the '
              'image hw_pci_numa_affinity_policy=%(iv)s: Nova refuses '
              'the boot when they differ.'), fv=flavor_value, iv=image_value)
    policy = flavor_value or image_value
    if policy and policy not in PCI_POLICIES:
        raise exception.error(
            _('Invalid PCI NUMA affinity policy %(value)s: Nova knows '
              '%(policies)s.'), value=policy,
            policies=', '.join(PCI_POLICIES))
    return policy or None


def numa_constraints(
        flavor: Mapping[str, typing.Any],
        image: Mapping[str, typing.Any] | None = None
) -> dict[str, typing.Any] | None:
    """The guest NUMA topology Nova asks of a host (numa_get_constraints),
    or None when the flavor and image ask none.

    {'cells': [{'cpus', 'memory_mb'}], 'pagesize': None, a word or KiB,
    'cpu_policy', 'pci_policy' (None: the [pci] alias's, else legacy)}.
    A topology comes from hw:numa_nodes, hw:mem_page_size or a dedicated
    or mixed CPU policy; hw:pci_numa_affinity_policy alone asks none.
    """
    specs = (flavor or {}).get('extra_specs') or {}
    # Nova refuses a bad policy at boot, whatever the topology
    pci_policy = pci_numa_policy(specs, image)
    policy = cpu_policy(specs, image)
    nodes = _whole(specs, image, 'numa_nodes')
    pagesize = _page_constraint(specs, image)
    if not (nodes or pagesize or policy in ('dedicated', 'mixed')):
        return None
    nodes = nodes or 1
    vcpus, ram = flavor.get('vcpus') or 0, flavor.get('ram') or 0
    cells = _manual_cells(specs, nodes)
    if cells is None:
        if nodes < 1 or vcpus % nodes or ram % nodes:
            raise exception.error(
                _('The flavor asks %(nodes)s NUMA nodes for %(vcpus)d vCPUs '
                  'and %(ram)d MiB: Nova refuses it unless both divide '
                  'evenly (or hw:numa_cpus.N and hw:numa_mem.N say how).'),
                nodes=nodes, vcpus=vcpus, ram=ram)
        cells = [{'cpus': vcpus // nodes, 'memory_mb': ram // nodes}
                 for _n in range(nodes)]
    if pagesize not in (None, PAGES_SMALL, PAGES_LARGE, PAGES_ANY):
        # a number asks a topology even below 1 KiB (Nova tests the
        # float), but the guest cell's page size is an integer field:
        # 4Kb (0.5 KiB) is 0 there, no page size asked
        pagesize = int(pagesize)
    return {'cells': cells, 'pagesize': pagesize, 'cpu_policy': policy,
            'pci_policy': pci_policy}
