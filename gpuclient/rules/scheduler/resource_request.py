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

"""Pure: flavor (+ image) -> the Placement query Nova's scheduler sends.

Written after Nova 34 (``nova/scheduler/utils.py`` ``ResourceRequest``,
``resources_from_request_spec``, ``RequestGroup.to_queryparams``;
``nova/scheduler/client/report.py``, microversion 1.36). No I/O: the
command reads the flavor, image, aggregates and settings and passes them
in. The rest of the scheduler package feeds it: the settings
(``conf``), PCI aliases and their groups (``pci``), the flavor/image
``hw:`` helpers (``hardware``) and Nova's prefilters (``request_filter``,
run by ``build`` and ``from_resources`` after the groups are made).

A request is a dict::

    {'groups': {suffix: group}, 'group_policy': None | 'none' | 'isolate',
     'root_required': set, 'root_forbidden': set, 'limit': int | None,
     'isolated': [{'aggregate', 'uuid', 'traits'}], 'zone_aggregates': [...],
     'tenant_aggregates': [...], 'notes': [str], 'not_covered': [str]}

and a group ``{'resources': {class: amount}, 'required': set,
'forbidden': set, 'member_of': [[uuid, ...]], 'forbidden_aggregates': set,
'origin': str, 'gpu': bool}``; the unsuffixed group has suffix ``''``.
"""

from collections.abc import Iterable
from collections.abc import Mapping
import math
import re
import typing
import urllib.parse

from gpuclient.i18n import _
from gpuclient.rules import address_space
from gpuclient.rules import placement_names as names
from gpuclient.rules import pools as pools_mod
from gpuclient.rules import specs as specs_mod
from gpuclient.rules.scheduler import conf
from gpuclient.rules.scheduler import exception
from gpuclient.rules.scheduler import hardware
from gpuclient.rules.scheduler import pci
from gpuclient.rules.scheduler import request_filter

MICROVERSION = (1, 36)  # nova.scheduler.client.report.SAME_SUBTREE_VERSION

VCPU = 'VCPU'
PCPU = 'PCPU'
MEMORY_MB = 'MEMORY_MB'
DISK_GB = 'DISK_GB'
COMPUTE_CLASSES = (VCPU, PCPU, MEMORY_MB, DISK_GB)
# one per guest with encrypted memory, on the compute node (root provider)
MEM_ENCRYPTION_CONTEXT = 'MEM_ENCRYPTION_CONTEXT'
# what a flavor takes from the root provider, besides devices
ROOT_CLASSES = COMPUTE_CLASSES + (MEM_ENCRYPTION_CONTEXT,)


_SUFFIX_RE = re.compile(r'^[a-zA-Z0-9_-]{1,64}$')
_XS_KEY_RE = re.compile(r'^(resources|trait)([a-zA-Z0-9_-]{1,64})?:(.*)$')
_STANDARD_CLASSES = set(names.STANDARD_RESOURCE_CLASSES) | {
    'PCPU', 'MEM_ENCRYPTION_CONTEXT', 'PGPU', 'VGPU', 'VGPU_DISPLAY_HEAD'}


# -- building ----------------------------------------------------------------

def _new_group(origin: str, gpu: bool = False) -> dict[str, typing.Any]:
    return {'resources': {}, 'required': set(), 'forbidden': set(),
            'member_of': [], 'forbidden_aggregates': set(),
            'origin': origin, 'gpu': gpu}


def _valid_class(rc: str) -> bool:
    return rc.startswith(names.CUSTOM_PREFIX) or rc in _STANDARD_CLASSES


class _Builder:
    def __init__(self, settings: Mapping[str, typing.Any]) -> None:
        self.settings = settings
        # {suffix: group} (the module docstring)
        self.groups: dict[str, dict[str, typing.Any]] = {}
        self.group_policy: str | None = None
        self.root_required: set[str] = set()
        self.root_forbidden: set[str] = set()
        self.notes: list[str] = []
        self.not_covered: list[str] = []
        # what the aggregate prefilters found (the request's isolated,
        # tenant_aggregates and zone_aggregates)
        self.isolated: list[dict[str, typing.Any]] = []
        self.tenant: list[dict[str, typing.Any]] = []
        self.zoned: list[dict[str, typing.Any]] = []
        # Nova's RequestFilterFailed, raised once every prefilter has run
        self.failures: list[Exception] = []

    def group(self, suffix: str, origin: str | None = None,
              gpu: bool = False) -> dict[str, typing.Any]:
        if suffix not in self.groups:
            self.groups[suffix] = _new_group(
                origin or (_('flavor group %s') % suffix if suffix
                           else _('flavor')), gpu)
        return self.groups[suffix]

    def add_resource(self, rc: str, amount: int | str,
                     suffix: str = '') -> None:
        if not _valid_class(rc):
            self.notes.append(
                _('%s is not a resource class: Nova ignores it.') % rc)
            return
        try:
            amount = int(amount)
            if amount < 0:
                raise ValueError
        except (TypeError, ValueError):
            self.notes.append(
                _('resources%(suffix)s:%(rc)s=%(amount)s is not a '
                  'non-negative integer: Nova ignores it.')
                % {'suffix': suffix, 'rc': rc, 'amount': amount})
            return
        self.group(suffix)['resources'][rc] = amount

    def add_trait(self, trait: str, value: str, suffix: str = '') -> None:
        group = self.group(suffix)
        if value == 'required':
            group['required'].add(trait)
        elif value == 'forbidden':
            group['forbidden'].add(trait)
        else:
            self.notes.append(
                _('trait%(suffix)s:%(trait)s=%(value)s: Nova only knows '
                  'required and forbidden, and ignores it.')
                % {'suffix': suffix, 'trait': trait, 'value': value})

    def merged(self) -> dict[str, int]:
        total: dict[str, int] = {}
        for group in self.groups.values():
            for rc, amount in group['resources'].items():
                total[rc] = total.get(rc, 0) + amount
        return total


def _translate_pinning(builder: _Builder, flavor: Mapping[str, typing.Any],
                       specs: Mapping[str, str],
                       image: Mapping[str, typing.Any] | None) -> None:
    policy = hardware.cpu_policy(specs, image)
    pcpus = None
    if policy == 'dedicated':
        pcpus = int(flavor.get('vcpus') or 0)
    elif policy == 'mixed':
        mask = specs.get('hw:cpu_dedicated_mask')
        vcpus = int(flavor.get('vcpus') or 0)
        if mask:
            if mask.strip().startswith('^'):
                dedicated = hardware.parse_cpu_spec(
                    '0-%d,%s' % (vcpus - 1, mask))
            else:
                dedicated = hardware.parse_cpu_spec(mask)
            pcpus = len(dedicated)
            builder.add_resource(VCPU, vcpus - pcpus)
        else:
            builder.not_covered.append(
                _('hw:cpu_policy=mixed without hw:cpu_dedicated_mask '
                  '(realtime masks): the PCPU/VCPU split is not '
                  'translated.'))
    if pcpus is not None:
        if specs.get('hw:emulator_threads_policy') == 'isolate':
            pcpus += 1
        builder.add_resource(PCPU, pcpus)
    # no policy (None) finds no trait
    trait = {'isolate': 'forbidden', 'require': 'required'}.get(
        hardware.thread_policy(specs, image))  # type: ignore[arg-type]
    if trait:
        builder.add_trait('HW_CPU_HYPERTHREADING', trait)


def _translate_features(builder: _Builder, specs: Mapping[str, str],
                        image: Mapping[str, typing.Any] | None) -> None:
    """ResourceRequest._translate_* (traits added to the unsuffixed group)."""
    props = hardware.image_props(image)
    # memory encryption
    # (_translate_mem_encryption_request: one MEM_ENCRYPTION_CONTEXT on the
    # root and the model's CPU trait; what the image must have is checked
    # where an image is given, and said where it is not)
    model = hardware.mem_encryption(specs, image, check_image=bool(image))
    if model:
        builder.add_resource(MEM_ENCRYPTION_CONTEXT, 1)
        builder.add_trait(hardware.mem_encryption_trait(model), 'required')
        if not image:
            builder.notes.append(
                _('Memory encryption (%(model)s): Nova boots this flavor '
                  'only from an image Nova takes for it (%(needs)s).')
                % {'model': model, 'needs': '; '.join(
                    hardware.mem_encryption_image_problems(model, {}))})
    # persistent memory
    labels = [label.strip() for label in
              str(specs.get('hw:pmem') or '').split(',') if label.strip()]
    amounts: dict[str, int] = {}
    for label in labels:
        rc = names.normalize_resource_class('PMEM_NAMESPACE_' + label)
        amounts[rc] = amounts.get(rc, 0) + 1
    for rc, amount in amounts.items():
        builder.add_resource(rc, amount)
    # vTPM
    version = hardware.unique(specs, image, 'tpm_version')
    if version:
        model = hardware.unique(specs, image, 'tpm_model') or 'tpm-tis'
        builder.add_trait('COMPUTE_SECURITY_TPM_CRB' if model == 'tpm-crb'
                          else 'COMPUTE_SECURITY_TPM_TIS', 'required')
        builder.add_trait('COMPUTE_SECURITY_TPM_2_0' if version == '2.0'
                          else 'COMPUTE_SECURITY_TPM_1_2', 'required')
    # PCI NUMA policy: only socket has a trait
    flavor_numa, image_numa = hardware.pair(specs, image,
                                            'pci_numa_affinity_policy')
    if (flavor_numa or image_numa) == 'socket':
        builder.add_trait('COMPUTE_SOCKET_PCI_NUMA_AFFINITY', 'required')
    # secure boot
    if hardware.unique(specs, image, 'secure_boot', prefix='os') == 'required':
        builder.add_trait('COMPUTE_SECURITY_UEFI_SECURE_BOOT', 'required')
    # maxphysaddr
    # (_translate_maxphysaddr_request)
    mode = hardware.maxphysaddr_mode(specs, image)
    if mode:
        builder.add_trait(address_space.TRAITS[mode], 'required')
    # stateless firmware (UEFI only)
    stateless = props.get('hw_firmware_stateless')
    if (stateless is not None and props.get('hw_firmware_type') == 'uefi'
            and conf.is_true(stateless)):
        builder.add_trait('COMPUTE_SECURITY_STATELESS_FIRMWARE', 'required')


def _finish(builder: _Builder, ctx: Mapping[str, typing.Any],
            suffixed_from_flavor: int) -> dict[str, typing.Any]:
    """strip_zeros, the default group_policy; the request."""
    settings = builder.settings
    # strip_zeros, then drop empty groups
    for suffix, group in list(builder.groups.items()):
        group['resources'] = {rc: n for rc, n in group['resources'].items()
                              if n != 0}
        if not (group['resources'] or group['required'] or group['forbidden']
                or group['member_of'] or group['forbidden_aggregates']):
            del builder.groups[suffix]
    suffixed = [s for s in builder.groups if s]
    if len(suffixed) >= 2 and not builder.group_policy:
        if suffixed_from_flavor <= 1:
            builder.group_policy = 'none'
        else:
            builder.notes.append(
                _('Several numbered request groups but no group_policy: '
                  'Placement refuses the query, and Nova fails the boot.'))
    return {
        'groups': builder.groups,
        'group_policy': builder.group_policy,
        'root_required': builder.root_required,
        'root_forbidden': builder.root_forbidden,
        'limit': settings.get('max_placement_results'),
        'isolated': builder.isolated,
        'tenant_aggregates': builder.tenant,
        'zone_aggregates': builder.zoned,
        'zone': ctx['zone'],
        'project_id': ctx['project_id'],
        'notes': builder.notes,
        'not_covered': builder.not_covered,
    }


def flavor_disk(flavor: Mapping[str, typing.Any],
                boot_from_volume: bool = False) -> int:
    """DISK_GB as Nova counts it: root (unless BFV) + ephemeral + swap."""
    swap = int(flavor.get('swap') or 0)
    disk = int(flavor.get('OS-FLV-EXT-DATA:ephemeral',
                          flavor.get('ephemeral', 0)) or 0)
    disk += int(math.ceil(swap / 1024.0))
    if not boot_from_volume:
        disk += int(flavor.get('disk') or 0)
    return disk


def build(flavor: Mapping[str, typing.Any],
          image: Mapping[str, typing.Any] | None = None,
          settings: Mapping[str, typing.Any] | None = None,
          pools: Mapping[str, Mapping[str, typing.Any]] | None = None,
          aggregates: Iterable[Mapping[str, typing.Any] | object] = (),
          project_id: str | None = None, zone: str | None = None,
          boot_from_volume: bool = False) -> dict[str, typing.Any]:
    """The allocation-candidates request Nova 34 sends for a server.

    ``flavor`` as the compute API shows it (vcpus, ram, disk,
    OS-FLV-EXT-DATA:ephemeral, swap, extra_specs); ``image`` as Glance
    shows it (properties at top level); ``aggregates`` every host
    aggregate (SDK resources or dicts with name, uuid, hosts, metadata,
    availability_zone); ``pools`` ({name: pool}) resolve PCI aliases.
    """
    settings = settings or conf.load_settings()
    ctx = request_filter.prefilter_context(flavor, image, settings,
                                           aggregates, project_id, zone,
                                           boot_from_volume)
    specs = dict(flavor.get('extra_specs') or {})
    builder = _Builder(settings)
    # flavor extra specs (ResourceRequest._process_extra_specs)
    for key, value in specs.items():
        if key == 'group_policy':
            if value in ('none', 'isolate'):
                builder.group_policy = value
            else:
                builder.notes.append(
                    _('group_policy=%s is neither none nor isolate: Nova '
                      'ignores it.') % value)
            continue
        match = _XS_KEY_RE.match(key)
        if not match:
            continue
        prefix, suffix, name = match.groups()
        if prefix == 'resources':
            builder.add_resource(name, value, suffix or '')
        else:
            builder.add_trait(name, value, suffix or '')
    suffixed_from_flavor = len([s for s in builder.groups if s])
    # image traits (unsuffixed group)
    for key, value in sorted(hardware.image_props(image).items()):
        if str(key).startswith('trait:') and str(value) == 'required':
            builder.add_trait(key[len('trait:'):], 'required')
    _translate_pinning(builder, flavor, specs, image)
    # PCI aliases: one group per device (RequestSpec.requested_resources)
    pci.add_pci_groups(builder, specs, settings, pools)
    merged = builder.merged()
    if VCPU not in merged and PCPU not in merged:
        builder.add_resource(VCPU, int(flavor.get('vcpus') or 0))
    if MEMORY_MB not in merged:
        builder.add_resource(MEMORY_MB, int(flavor.get('ram') or 0))
    if DISK_GB not in merged:
        disk = flavor_disk(flavor, boot_from_volume)
        if disk:
            builder.add_resource(DISK_GB, disk)
    _translate_features(builder, specs, image)
    request_filter.process_request(ctx, builder)
    _mark_gpu_groups(builder.groups, pools)
    return _finish(builder, ctx, suffixed_from_flavor)


def per_device_classes(
        pools: Mapping[str, Mapping[str, typing.Any]] | None = None
) -> set[str]:
    """Classes offered one device per provider (not on the root)."""
    found = {'VGPU', 'PGPU'}
    for pool in (pools or {}).values():
        if pool.get('mode') != pools_mod.BAREMETAL and pool.get(
                'resource_class'):
            found.add(pool['resource_class'])
    return found


def is_per_device(
        rc: str,
        pools: Mapping[str, Mapping[str, typing.Any]] | None = None) -> bool:
    return rc.startswith('CUSTOM_PCI_') or rc in per_device_classes(pools)


def check_resource_amounts(
        resources: Iterable[tuple[str, int]],
        pools: Mapping[str, Mapping[str, typing.Any]] | None = None) -> None:
    """Refuse ``--resource`` amounts that would build an absurd query.

    ``resources`` is [(normalised class, amount)]. Refused, with
    CommandError: an amount above Placement's names.MAX_AMOUNT; more than
    names.MAX_GPUS of a GPU class; per-device classes (``is_per_device``,
    one request group per unit) adding up to more than names.MAX_GPUS
    groups. Without ``pools`` (before any I/O) the pools' own classes are
    judged by name only; ``from_resources`` checks again with the pools.
    """
    pool_classes = {p.get('resource_class')
                    for p in (pools or {}).values()} - {None}
    groups = 0
    for rc, amount in resources:
        if amount > names.MAX_AMOUNT:
            raise exception.error(
                _('--resource %(rc)s=%(amount)d: Placement takes amounts up '
                  'to %(max)d. Give a smaller amount.'),
                rc=rc, amount=amount, max=names.MAX_AMOUNT)
        if specs_mod.is_gpu_class(rc, pool_classes) and (
                amount > names.MAX_GPUS):
            raise exception.error(
                _('--resource %(rc)s=%(amount)d: %(rc)s is a GPU class and '
                  'an instance has at most %(max)d GPUs. Give an amount '
                  'from 1 to %(max)d.'),
                rc=rc, amount=amount, max=names.MAX_GPUS)
        if is_per_device(rc, pools) and amount > 0:
            groups += amount
    if groups > names.MAX_GPUS:
        raise exception.error(
            _('--resource: %(groups)d devices of per-device classes '
              '(CUSTOM_PCI_*, VGPU, PGPU, the classes of passthrough, vgpu '
              'and mig pools), one Placement request group each as Nova '
              'asks for them; at most %(max)d GPUs per instance. Ask for '
              '%(max)d or fewer in all.'),
            groups=groups, max=names.MAX_GPUS)


def from_resources(
        resources: Iterable[tuple[str, int]], required: Iterable[str] = (),
        settings: Mapping[str, typing.Any] | None = None,
        pools: Mapping[str, Mapping[str, typing.Any]] | None = None,
        aggregates: Iterable[Mapping[str, typing.Any] | object] = (),
        project_id: str | None = None,
        zone: str | None = None) -> dict[str, typing.Any]:
    """``--resource RC=N`` and ``--required TRAIT``, as Nova would send.

    A per-device class (``CUSTOM_PCI_*``, ``VGPU``, the class of a
    passthrough/vgpu/mig pool) becomes N single-unit groups, as Nova does
    for PCI aliases; other classes and the traits go to the unsuffixed
    group.
    """
    settings = settings or conf.load_settings()
    resources = [(names.normalize_resource_class(rc), amount)
                 for rc, amount in resources]
    check_resource_amounts(resources, pools)
    builder = _Builder(settings)
    devices: dict[str, int] = {}
    for rc, amount in resources:
        if is_per_device(rc, pools) and amount > 0:
            first = devices.get(rc, 0)
            devices[rc] = first + amount
            for index in range(first, first + amount):
                suffix = 'dev-%s-%d' % (rc.lower().replace('_', '-')[:50],
                                        index)
                group = builder.group(
                    suffix, _('%(rc)s, device %(n)d')
                    % {'rc': rc, 'n': index + 1}, gpu=True)
                group['resources'][rc] = 1
        else:
            builder.add_resource(rc, amount)
    for trait in required:
        if trait.startswith('!'):
            builder.add_trait(trait[1:], 'forbidden')
        else:
            builder.add_trait(trait, 'required')
    # no flavor, no image: only the prefilters of aggregates, of disabled
    # computes and of OWNER_NOVA add anything
    ctx = request_filter.prefilter_context(
        settings=settings, aggregates=aggregates, project_id=project_id,
        zone=zone)
    request_filter.process_request(ctx, builder)
    _mark_gpu_groups(builder.groups, pools)
    query = _finish(builder, ctx, 0)
    own = query['groups'].get('')
    if own is not None and not own['resources']:
        # the prefilters (isolated aggregates, availability zone, project
        # aggregates) and --required go to the unsuffixed group; Placement
        # refuses an unsuffixed group without resources (400, placement
        # lib.RequestGroup: "Badly formed resources parameter"), and a
        # flavor always has VCPU/MEMORY_MB there
        raise exception.error(
            _('--resource: only per-device classes (%(classes)s) were asked '
              'for, and the query also carries %(what)s, which Placement '
              'takes only beside resources of the host itself. Add one, as '
              'a flavor would: e.g. --resource VCPU=1.'),
            classes=', '.join(sorted(devices)),
            what=_('traits or aggregate filters (isolated pools, zone or '
                   'project aggregates)'))
    return query


def _mark_gpu_groups(
        groups: Mapping[str, dict[str, typing.Any]],
        pools: Mapping[str, Mapping[str, typing.Any]] | None) -> None:
    pool_classes = {p.get('resource_class') for p in (pools or {}).values()}
    pool_classes.discard(None)
    for group in groups.values():
        if any(specs_mod.is_gpu_class(rc, pool_classes)
               for rc in group['resources']):
            group['gpu'] = True


def gpu_classes(request: Mapping[str, typing.Any]) -> list[str]:
    """Resource classes of the GPU groups (and GPU classes unsuffixed)."""
    found: list[str] = []
    for group in request['groups'].values():
        if group['gpu']:
            for rc in group['resources']:
                if rc not in ROOT_CLASSES and rc not in found:
                    found.append(rc)
    return found


# -- the query ---------------------------------------------------------------

def group_params(suffix: str,
                 group: Mapping[str, typing.Any]) -> list[tuple[str, str]]:
    """RequestGroup.to_queryparams."""
    params = [('resources%s' % suffix, ','.join(sorted(
        '%s:%s' % item for item in group['resources'].items())))]
    required = ','.join(sorted(group['required'])
                        + ['!%s' % t for t in sorted(group['forbidden'])])
    if required:
        params.append(('required%s' % suffix, required))
    params.extend(sorted(('member_of%s' % suffix, 'in:' + ','.join(
        sorted(uuids))) for uuids in group['member_of']))
    if group.get('in_tree'):
        params.append(('in_tree%s' % suffix, group['in_tree']))
    if group['forbidden_aggregates']:
        params.append(('member_of%s' % suffix, '!in:' + ','.join(
            sorted(group['forbidden_aggregates']))))
    return params


def query_params(request: Mapping[str, typing.Any]) -> list[tuple[str, str]]:
    """ResourceRequest.to_querystring, as a sorted list of pairs."""
    params = []
    if request.get('limit') is not None:
        params.append(('limit', str(request['limit'])))
    if request.get('group_policy'):
        params.append(('group_policy', request['group_policy']))
    if request['root_required'] or request['root_forbidden']:
        params.append(('root_required', ','.join(
            sorted(request['root_required'])
            + ['!' + t for t in sorted(request['root_forbidden'])])))
    for suffix, group in request['groups'].items():
        params.extend(group_params(suffix, group))
    return sorted(params)


def querystring(request: Mapping[str, typing.Any]) -> str:
    return urllib.parse.urlencode(query_params(request))


def copy(request: Mapping[str, typing.Any]) -> dict[str, typing.Any]:
    """A deep enough copy to relax one requirement on."""
    new = dict(request)
    new['groups'] = {
        suffix: dict(group, resources=dict(group['resources']),
                     required=set(group['required']),
                     forbidden=set(group['forbidden']),
                     member_of=[list(m) for m in group['member_of']],
                     forbidden_aggregates=set(group['forbidden_aggregates']))
        for suffix, group in request['groups'].items()}
    new['root_required'] = set(request['root_required'])
    new['root_forbidden'] = set(request['root_forbidden'])
    return new


def describe(request: Mapping[str, typing.Any]) -> dict[str, str]:
    """{label: text} of the groups, for display."""
    shown: dict[str, str] = {}
    for suffix, group in sorted(request['groups'].items()):
        parts = ['%s=%d' % item for item in sorted(group['resources'].items())]
        parts += sorted(group['required'])
        parts += ['!' + t for t in sorted(group['forbidden'])]
        if group['member_of']:
            parts.append(_('in %d aggregate set(s)') % len(group['member_of']))
        if group['forbidden_aggregates']:
            parts.append(_('not in %d isolated aggregate(s)')
                         % len(group['forbidden_aggregates']))
        shown[suffix or _('(unnumbered)')] = '%s: %s' % (
            group['origin'], ', '.join(parts))
    return shown
