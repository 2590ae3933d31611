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

"""Pure: GPU pools <-> Nova host aggregate metadata.

A pool is a host aggregate whose metadata carries ``gpu_pool``; ordinary
aggregates are never treated as pools. Everything a pool is can be read
back from the aggregate alone:

=====================  ==================================================
``gpu_pool``           the pool name
``gpu_pool_mode``      passthrough, vgpu, mig, baremetal or vgpu-vf
``gpu_resource_class`` the Placement class one GPU is
``gpu_alias``          passthrough, vgpu-vf: the ``[pci] alias`` flavors
                       ask for
``gpu_pci_id``         passthrough, vgpu-vf: ``VENDOR:PRODUCT`` (of the VF)
``gpu_vgpu_type``      vgpu: the mdev type (``nvidia-35``); vgpu-vf:
                       NVIDIA's type name (``L40S-24Q``)
``gpu_live_migratable`` passthrough, vgpu-vf: ``true`` when the devices
                       are ``"live_migratable"`` (device_spec and alias)
``gpu_mig_profile``    mig: the MIG profile (``3g.40gb``)
``trait:CUSTOM_GPU_POOL_<NAME>=required``  isolation (``--isolate``)
``filter_tenant_id_<project id>=<project id>``  project limits, one key
                       per project (AggregateMultiTenancyIsolation and
                       Nova's tenant prefilter match the key prefix), so
                       concurrent changes never overwrite each other;
                       older ``filter_tenant_id``, ``filter_tenant_id2``
                       keys are read and rewritten on the next change
``gpu_tagged:<provider uuid>=<trait>``  a type trait this pool put on a
                       pGPU provider (only those are removed again)
=====================  ==================================================

Aggregates that carry ``gpu_pool`` but cannot be read as a pool (a bad
name, mode or class), and pool names claimed by several aggregates, are
reported by ``scan`` and skipped: they never break other commands.
"""

from collections.abc import Collection
from collections.abc import Container
from collections.abc import Iterable
from collections.abc import Mapping
import re
import typing

from osc_lib import exceptions

from gpuclient.i18n import _
from gpuclient.rules import nova_rules
from gpuclient.rules import placement_names as names

if typing.TYPE_CHECKING:
    class _Snapshot(typing.Protocol):
        """A ``model.Placement``, named by what is asked of it (model
        imports this module)."""

        @property
        def providers(self) -> Mapping[str, Mapping[str, typing.Any]]: ...

        @property
        def summaries(self) -> Mapping[str, Mapping[str, typing.Any]]: ...

        def providers_in_trees(self, roots: Iterable[str]
                               ) -> Iterable[str]: ...


POOL_KEY = 'gpu_pool'
MODE_KEY = 'gpu_pool_mode'
RESOURCE_CLASS_KEY = 'gpu_resource_class'
ALIAS_KEY = 'gpu_alias'
PCI_ID_KEY = 'gpu_pci_id'
VGPU_TYPE_KEY = 'gpu_vgpu_type'
# the pool property (--property) naming a vgpu pool's NVIDIA vGPU type
# (A100D-20C): neither Nova nor Placement records it
VGPU_PROFILE_PROPERTY = 'vgpu_profile'
MIG_PROFILE_KEY = 'gpu_mig_profile'
TENANT_KEY = 'filter_tenant_id'
OWNED_PREFIX = 'gpu_tagged:'
MAX_TRAIT_LENGTH = 255  # Placement's limit on trait names
TRAIT_PREFIX = 'trait:'
REQUIRED = 'required'
POOL_TRAIT_PREFIX = 'GPU_POOL_'
MIG_TRAIT_PREFIX = 'MIG_'

PASSTHROUGH = 'passthrough'
VGPU = 'vgpu'
MIG = 'mig'
BAREMETAL = 'baremetal'
# vGPU on SR-IOV virtual functions bound to the kernel's VFIO variant
# driver (NVIDIA's vGPU drivers for Ada, Hopper, Blackwell; Nova 2025.1+):
# each VF carries one vGPU and Nova passes it through as a PCI device
VGPU_VF = 'vgpu-vf'
MODES = (PASSTHROUGH, VGPU, MIG, BAREMETAL, VGPU_VF)
# modes whose GPUs are PCI devices Nova hands out by [pci] alias
# (pci_passthrough:alias, the PCI-in-Placement request, PciPassthroughFilter)
PCI_MODES = (PASSTHROUGH, VGPU_VF)
LIVE_MIGRATABLE_KEY = 'gpu_live_migratable'
# what a vgpu-vf pool's class is without --resource-class:
# CUSTOM_VGPU_<TYPE>
VF_CLASS_PREFIX = 'VGPU_'

# Options that belong to some modes only.
MODE_OPTIONS = {
    'alias': (PASSTHROUGH, VGPU_VF),
    'pci_id': (PASSTHROUGH, VGPU_VF),
    'vgpu_type': (VGPU, VGPU_VF),
    'mig_profile': (MIG,),
    'live_migratable': (PASSTHROUGH, VGPU_VF),
}
OPTION_FLAGS = {
    'alias': '--alias',
    'pci_id': '--pci-id',
    'vgpu_type': '--vgpu-type',
    'mig_profile': '--mig-profile',
    'resource_class': '--resource-class',
    'live_migratable': '--live-migratable',
}

# Aggregate metadata values that Nova's AggregateInstanceExtraSpecsFilter
# would read as operators, and Nova's own reserved keys.
_OPERATOR_RE = re.compile(
    r'^\s*(=|==|!=|>=|<=|s==|s!=|s>=|s>|s<=|s<|<in>|<all-in>|<or>)'
)
_PROJECT_ID_RE = re.compile(r'^[a-zA-Z0-9-_.]{1,200}$')
_PCI_ID_RE = re.compile(r'^[0-9a-fA-F]{4}:[0-9a-fA-F]{4}$')
_RESERVED_PROPERTY_RE = re.compile(
    r'^(gpu_|filter_tenant_id|trait:|availability_zone$)'
)


def _get(obj: object, key: str, default: typing.Any = None) -> typing.Any:
    if isinstance(obj, dict):
        return obj.get(key, default)
    return getattr(obj, key, default)


def _error(message: str, **kwargs: object) -> exceptions.CommandError:
    return exceptions.CommandError(message % kwargs if kwargs else message)


def unknown_pool(name: str, pools: Iterable[str]) -> exceptions.CommandError:
    """The error for a pool name that is not among ``pools``."""
    return _error(
        _('No GPU pool named %(pool)s. Known pools: %(known)s (see '
          '"openstack gpu pool list").'),
        pool=name, known=', '.join(sorted(pools)) or _('none'))


def find(pools: Mapping[str, dict[str, typing.Any]], name_or_id: str,
         problems: Iterable[tuple[str, str, str]] = ()
         ) -> dict[str, typing.Any]:
    """The pool NAME_OR_ID names among POOLS (from ``scan``): a pool name,
    else the ID or UUID of a pool's aggregate (as ``openstack aggregate
    show`` takes them; a pool name wins over another aggregate's ID).
    Otherwise CommandError: what is wrong with its aggregate when
    PROBLEMS name it, else the pools there are.

    The one resolver of every command that names a pool."""
    if name_or_id in pools:
        return pools[name_or_id]
    text = str(name_or_id).strip().lower()
    for pool in pools.values():
        ids = (pool.get('aggregate_id'), pool.get('aggregate_uuid'))
        if text in {str(i).lower() for i in ids if i is not None}:
            return pool
    bad = [message for _agg, pool, message in problems if pool == name_or_id]
    if bad:
        raise exceptions.CommandError(' '.join(bad))
    raise unknown_pool(name_or_id, pools)


def pool_name(pools: Mapping[str, dict[str, typing.Any]], name_or_id: str,
              problems: Iterable[tuple[str, str, str]] = ()) -> str:
    """The name of the pool NAME_OR_ID names (``find``), or CommandError."""
    return find(pools, name_or_id, problems)['name']


def pool_names(pools: Mapping[str, dict[str, typing.Any]],
               names_or_ids: Iterable[str], strict: bool = True
               ) -> list[str]:
    """[pool name] of NAMES_OR_IDS (``find`` each), in order; a name that
    is no pool is CommandError, or, unless STRICT, kept as given (a
    document's pool that the cloud does not have yet)."""
    if not strict:
        return [pool_name(pools, n) if _is_aggregate_id(pools, n) else n
                for n in names_or_ids]
    return [pool_name(pools, n) for n in names_or_ids]


def _is_aggregate_id(pools: Mapping[str, Mapping[str, typing.Any]],
                     text: str) -> bool:
    return text not in pools and any(
        str(text).strip().lower() in {str(i).lower() for i in (
            p.get('aggregate_id'), p.get('aggregate_uuid')) if i is not None}
        for p in pools.values())


def lookup(pools: Mapping[str, dict[str, typing.Any]],
           problems: Iterable[tuple[str, str, str]],
           name: str) -> dict[str, typing.Any]:
    """The pool NAME (name or aggregate ID/UUID) among POOLS (``find``)."""
    return find(pools, name, problems)


def pool_trait(name: str) -> str:
    """The isolation trait of a pool: ``CUSTOM_GPU_POOL_<NAME>``."""
    return names.normalize_trait(POOL_TRAIT_PREFIX + name)


def validate_name(name: str) -> str:
    """Refuse names Nova would misread (CLI.md, "Name rules")."""
    if not name or not name.strip():
        raise _error(_('A pool name cannot be empty.'))
    if name != name.strip():
        raise _error(
            _('Pool name %(name)r has leading or trailing spaces: Nova '
              'does not accept them in aggregate names.'), name=name)
    if len(name) > 255:
        raise _error(_('Pool name is longer than 255 characters.'))
    if ',' in name:
        raise _error(
            _('Pool name %(name)r contains a comma: Nova splits aggregate '
              'metadata values on commas, so flavors could never match it. '
              'Choose a name without commas.'), name=name)
    if _OPERATOR_RE.match(name):
        raise _error(
            _('Pool name %(name)r starts with an operator token (=, s==, '
              '<in>, <or>, ...) that Nova\'s aggregate extra-spec filter '
              'would interpret. Choose another name.'), name=name)
    if not re.search('[0-9A-Za-z]', name):
        raise _error(
            _('Pool name %(name)r has no letter or digit, so it has no '
              'trait name. Choose another name.'), name=name)
    longest = MAX_TRAIT_LENGTH - len('CUSTOM_' + POOL_TRAIT_PREFIX)
    if len(name) > longest:
        raise _error(
            _('Pool name is %(length)d characters long: its isolation trait '
              'CUSTOM_GPU_POOL_<NAME> would exceed Placement\'s limit of '
              '%(max)d characters. Choose a name of at most %(left)d '
              'characters.'),
            length=len(name), max=MAX_TRAIT_LENGTH, left=longest)
    return name


def normalize_pci_id(pci_id: str | None) -> str:
    if not pci_id or not _PCI_ID_RE.match(pci_id.strip()):
        raise _error(
            _('Invalid PCI id %(id)r: give VENDOR:PRODUCT as two groups of '
              '4 hexadecimal digits, e.g. 10de:2331 (see lspci -nn).'),
            id=pci_id)
    return pci_id.strip().lower()


def validate_alias(alias: str | None) -> str:
    if not alias or not re.fullmatch(r'[A-Za-z0-9_.\-]+', alias):
        raise _error(
            _('Invalid PCI alias %(alias)r: use letters, digits, ".", "-" '
              'and "_" (flavors ask for it as pci_passthrough:alias='
              '<alias>:<count>).'), alias=alias)
    return alias


def type_trait(mode: str, vgpu_type: str | None = None,
               mig_profile: str | None = None) -> str | None:
    """The trait that tells a vGPU/MIG pool's pGPU providers apart."""
    if mode == VGPU and vgpu_type:
        return names.normalize_trait(vgpu_type)
    if mode == MIG and mig_profile:
        return names.normalize_trait(MIG_TRAIT_PREFIX + mig_profile)
    return None


def validate_properties(properties: Mapping[str, str | None] | None
                        ) -> dict[str, str | None]:
    for key, value in (properties or {}).items():
        nova_rules.check_pair(key, value, '--property')
        if _RESERVED_PROPERTY_RE.match(key):
            raise _error(
                _('Property %(key)s is managed by gpuclient (pool fields, '
                  'isolation, projects, zone): use the matching option '
                  'instead.'), key=key)
    return dict(properties or {})


def build_spec(name: str, mode: str, alias: str | None = None,
               pci_id: str | None = None, vgpu_type: str | None = None,
               mig_profile: str | None = None,
               resource_class: str | None = None, isolate: bool = False,
               zone: str | None = None,
               projects: Iterable[str] | None = (),
               properties: Mapping[str, str] | None = None,
               live_migratable: bool = False) -> dict[str, typing.Any]:
    """Validate create options and return the pool they describe.

    Raises CommandError, before anything is written, for a bad name, a
    mode/option combination that makes no sense, a malformed PCI id or
    resource class, or a reserved property.
    """
    validate_name(name)
    if mode not in MODES:
        raise _error(_('Unknown mode %(mode)r: choose one of %(modes)s.'),
                     mode=mode, modes=', '.join(MODES))
    given = {'alias': alias, 'pci_id': pci_id, 'vgpu_type': vgpu_type,
             'mig_profile': mig_profile, 'live_migratable': live_migratable}
    for option, value in given.items():
        if value and mode not in MODE_OPTIONS[option]:
            raise _error(
                _('%(flag)s is for %(owner)s pools, not %(mode)s pools.'),
                flag=OPTION_FLAGS[option],
                owner=' and '.join(MODE_OPTIONS[option]), mode=mode)
    spec: dict[str, typing.Any] = {
        'name': name,
        'mode': mode,
        'alias': None,
        'pci_id': None,
        'vgpu_type': None,
        'mig_profile': None,
        'live_migratable': bool(live_migratable),
        'isolate': bool(isolate),
        'zone': zone or None,
        'projects': list(projects or ()),
        'properties': validate_properties(properties),
    }
    rc = names.normalize_resource_class(resource_class) if (
        resource_class) else None
    if mode == PASSTHROUGH:
        if not alias or not pci_id:
            raise _error(
                _('A passthrough pool needs both --alias (the [pci] alias '
                  'in nova.conf, e.g. h100) and --pci-id VENDOR:PRODUCT '
                  '(e.g. 10de:2331).'))
        spec['alias'] = validate_alias(alias)
        spec['pci_id'] = normalize_pci_id(pci_id)
        vendor, product = spec['pci_id'].upper().split(':')
        rc = rc or 'CUSTOM_PCI_%s_%s' % (vendor, product)
    elif mode == VGPU:
        if not vgpu_type:
            raise _error(
                _('A vgpu pool needs --vgpu-type, the mdev type its pGPUs '
                  'serve (e.g. nvidia-35; see enabled_mdev_types).'))
        spec['vgpu_type'] = vgpu_type.strip()
        rc = rc or 'VGPU'
    elif mode == VGPU_VF:
        if not alias or not pci_id or not vgpu_type:
            raise _error(
                _('A vgpu-vf pool needs --vgpu-type (NVIDIA\'s vGPU type '
                  'written to the VFs, e.g. L40S-24Q), --alias (the '
                  'type-VF [pci] alias in nova.conf, e.g. l40s-24q) and '
                  '--pci-id VENDOR:PRODUCT of the VFs (e.g. 10de:26b9, see '
                  'lspci -nn).'))
        spec['alias'] = validate_alias(alias)
        spec['pci_id'] = normalize_pci_id(pci_id)
        spec['vgpu_type'] = vgpu_type.strip()
        rc = rc or names.normalize_resource_class(
            VF_CLASS_PREFIX + spec['vgpu_type'])
    elif mode == MIG:
        if not mig_profile:
            raise _error(
                _('A mig pool needs --mig-profile, the MIG profile of its '
                  'slices (e.g. 3g.40gb).'))
        spec['mig_profile'] = mig_profile.strip()
        rc = rc or 'VGPU'
    elif mode == BAREMETAL:
        if not rc:
            raise _error(
                _('A baremetal pool needs --resource-class, the Ironic '
                  'nodes\' resource class (e.g. baremetal.gpu-h100, which '
                  'Nova reports as CUSTOM_BAREMETAL_GPU_H100).'))
        if isolate:
            raise _error(
                _('--isolate is refused for baremetal pools: bare-metal '
                  'nodes offer no VCPU, so ordinary flavors never fit them, '
                  'and Nova\'s Ironic driver replaces the traits of node '
                  'providers, so an isolation trait would not stay. Limit '
                  'the pool to projects with --project instead.'))
    spec['resource_class'] = names.check_gpu_class(rc)
    check_writable(spec)
    return spec


def default_class(spec: Mapping[str, typing.Any]) -> str | None:
    """The class a pool of SPEC's mode and options gets without
    --resource-class (None for baremetal, which needs one)."""
    if spec['mode'] == BAREMETAL:
        return None
    options: dict[str, typing.Any] = {
        key: spec.get(key) for key, modes in MODE_OPTIONS.items()
        if spec['mode'] in modes}
    return build_spec(spec['name'], spec['mode'], **options)[
        'resource_class']


def check_writable(spec: Mapping[str, typing.Any]) -> None:
    """Refuse a pool whose own writes, or its isolation's and its
    flavors' later, Nova or Placement would refuse (``nova_rules``): the
    aggregate name and zone, the values of its metadata, and the derived
    keys ``trait:CUSTOM_GPU_POOL_<NAME>`` and ``trait:<type trait>``
    (aggregate metadata and flavor extra specs, at most 255
    characters)."""
    name = spec['name']
    nova_rules.check_name(name, _('pool name'))
    if spec.get('zone'):
        nova_rules.check_name(spec['zone'], '--zone', colon=False)
    for field in ('alias', 'vgpu_type', 'mig_profile'):
        if spec.get(field):
            nova_rules.check_value(OPTION_FLAGS[field], spec[field],
                                   _('option'))
    key = TRAIT_PREFIX + pool_trait(name)
    if len(key) > nova_rules.MAX_LENGTH:
        raise _error(
            _('Pool name is %(length)d characters long: its isolation key '
              'trait:CUSTOM_GPU_POOL_<NAME> (aggregate metadata, and extra '
              'spec of its flavors) would be %(key)d characters, and Nova '
              'takes at most %(max)d. Choose a name of at most %(left)d '
              'characters.'),
            length=len(name), key=len(key), max=nova_rules.MAX_LENGTH,
            left=len(name) - (len(key) - nova_rules.MAX_LENGTH))
    spec_key = 'resources:' + spec['resource_class']
    if len(spec_key) > nova_rules.MAX_LENGTH:
        raise _error(
            _('--resource-class is too long: the flavor extra spec '
              'resources:<class> would be %(key)d characters, and Nova '
              'takes at most %(max)d. Give a shorter class.'),
            key=len(spec_key), max=nova_rules.MAX_LENGTH)
    trait = type_trait_of(spec)
    if trait and len(TRAIT_PREFIX + trait) > nova_rules.MAX_LENGTH:
        flag = OPTION_FLAGS['vgpu_type' if spec['mode'] == VGPU
                            else 'mig_profile']
        raise _error(
            _('%(flag)s is too long: its type trait %(trait)s... would make '
              'the flavor extra spec trait:<trait> %(key)d characters, and '
              'Nova takes at most %(max)d. Give a shorter type, or a '
              'per-type --resource-class (then no type trait is used).'),
            flag=flag, trait=trait[:40], key=len(TRAIT_PREFIX + trait),
            max=nova_rules.MAX_LENGTH)


def type_trait_of(pool: Mapping[str, typing.Any]) -> str | None:
    """Type trait of a pool (dict), or None when it needs none.

    With a per-type resource class (``--resource-class``, Nova's
    ``[mdev_<type>] mdev_class``) the class tells types apart: no trait.
    """
    if pool['mode'] not in (VGPU, MIG) or pool['resource_class'] != 'VGPU':
        return None
    return type_trait(pool['mode'], pool.get('vgpu_type'),
                      pool.get('mig_profile'))


def project_key(project_id: str) -> str:
    """The metadata key of one project: ``filter_tenant_id_<id>``."""
    if not _PROJECT_ID_RE.match(project_id or ''):
        raise _error(
            _('Project ID %(id)r cannot be a metadata key: Nova accepts '
              'only letters, digits, "-", "_", "." and ":".'), id=project_id)
    return '%s_%s' % (TENANT_KEY, project_id)


def project_metadata(project_ids: Iterable[str]) -> dict[str, str]:
    """One metadata key per project."""
    return {project_key(p): p for p in project_ids}


def legacy_project_keys(metadata: Mapping[str, typing.Any]) -> list[str]:
    """Project keys not in the one-key-per-project form."""
    return sorted(
        k for k, v in metadata.items()
        if k.startswith(TENANT_KEY) and k != '%s_%s' % (TENANT_KEY, v))


def project_changes(metadata: Mapping[str, typing.Any],
                    add: Iterable[str] = (), remove: Iterable[str] = ()
                    ) -> dict[str, str | None]:
    """Metadata changes that add/remove projects, one key per project.

    Legacy keys (``filter_tenant_id``, ``filter_tenant_id2``, or a comma
    list) are rewritten into per-project keys in the same write.
    """
    changes: dict[str, str | None] = {}
    legacy = legacy_project_keys(metadata)
    if legacy:
        for project in _projects_from({k: metadata[k] for k in legacy}):
            changes[project_key(project)] = project
        for key in legacy:
            changes[key] = None
    for project in add:
        changes[project_key(project)] = project
    for project in remove:
        key = project_key(project)
        changes[key] = None if (key in metadata or key in changes) else None
    return {k: v for k, v in changes.items()
            if not (v is None and k not in metadata)}


# The type traits gpuclient makes (type_trait): a vGPU type's mdev name
# normalised (NVIDIA's nvidia-<n>, Intel GVT-g's i915-GVTg_V<n>_<n>, the
# kernel samples mtty-<n> and mdpy[-<name>]) and CUSTOM_MIG_<profile>.
# Operators following Nova's docs name vGPU type traits the same way
# (CUSTOM_NVIDIA_11). Any other CUSTOM_ trait on a pGPU is a label.
_TYPE_TRAIT_RE = re.compile(
    r'CUSTOM_(NVIDIA_\d+|I915_GVTG_V\d+_\d+|MTTY_\d+|MDPY\w*|'
    + MIG_TRAIT_PREFIX + r'\w+)')


def is_type_trait(trait: str, known: Container[str] = ()) -> bool:
    """Whether ``trait`` on a pGPU provider says which type it serves.

    True for the shapes ``type_trait`` makes and for ``known`` traits (the
    type traits of the pools and those their ownership records name);
    False for other labels (CUSTOM_NVLINK).
    """
    return bool(_TYPE_TRAIT_RE.fullmatch(trait)) or trait in known


def owned_traits(metadata: Mapping[str, typing.Any]) -> dict[str, str]:
    """{provider uuid: trait} this pool put on pGPU providers."""
    return {k[len(OWNED_PREFIX):]: v for k, v in metadata.items()
            if k.startswith(OWNED_PREFIX)}


def owned_key(uuid: str) -> str:
    return OWNED_PREFIX + uuid


def metadata_for(spec: Mapping[str, typing.Any]) -> dict[str, str]:
    """The aggregate metadata that records a pool."""
    metadata = dict(spec.get('properties') or {})
    metadata.update({
        POOL_KEY: spec['name'],
        MODE_KEY: spec['mode'],
        RESOURCE_CLASS_KEY: spec['resource_class'],
    })
    for key, field in ((ALIAS_KEY, 'alias'), (PCI_ID_KEY, 'pci_id'),
                       (VGPU_TYPE_KEY, 'vgpu_type'),
                       (MIG_PROFILE_KEY, 'mig_profile')):
        if spec.get(field):
            metadata[key] = spec[field]
    if spec.get('live_migratable'):
        metadata[LIVE_MIGRATABLE_KEY] = 'true'

    if spec.get('isolate'):
        metadata[TRAIT_PREFIX + pool_trait(spec['name'])] = REQUIRED
    metadata.update(project_metadata(spec.get('projects') or ()))
    return metadata


def is_pool(aggregate: object) -> bool:
    return POOL_KEY in (_get(aggregate, 'metadata') or {})


def _projects_from(metadata: Mapping[str, typing.Any]) -> list[str]:
    found: list[str] = []
    keys = sorted(
        (k for k in metadata if k.startswith(TENANT_KEY)),
        key=lambda k: (len(k), k),
    )
    for key in keys:
        for value in str(metadata[key]).split(','):
            value = value.strip()
            if value and value not in found:
                found.append(value)
    return found


def project_entries(metadata: Mapping[str, typing.Any]
                    ) -> list[tuple[str, str]]:
    """[(metadata key, project value)] of a pool's project limits.

    A key holding a comma list gives one entry per value.
    """
    entries = []
    for key in sorted((k for k in metadata if k.startswith(TENANT_KEY)),
                      key=lambda k: (len(k), k)):
        for value in str(metadata[key]).split(','):
            if value.strip():
                entries.append((key, value.strip()))
    return entries


def pool_from_aggregate(aggregate: object) -> dict[str, typing.Any]:
    """Decode one aggregate (SDK resource or dict) into a pool dict."""
    metadata = dict(_get(aggregate, 'metadata') or {})
    name = metadata.get(POOL_KEY) or _get(aggregate, 'name')
    trait = pool_trait(name) if re.search('[0-9A-Za-z]', name or '') else None
    isolated = metadata.get(TRAIT_PREFIX + (trait or '')) == REQUIRED
    properties = {
        k: v for k, v in metadata.items()
        if not _RESERVED_PROPERTY_RE.match(k)
    }
    pool: dict[str, typing.Any] = {
        'name': name,
        'aggregate': _get(aggregate, 'name'),
        'aggregate_id': _get(aggregate, 'id'),
        'aggregate_uuid': _get(aggregate, 'uuid'),
        'mode': metadata.get(MODE_KEY),
        'resource_class': metadata.get(RESOURCE_CLASS_KEY),
        'alias': metadata.get(ALIAS_KEY),
        'pci_id': metadata.get(PCI_ID_KEY),
        'vgpu_type': metadata.get(VGPU_TYPE_KEY),
        'mig_profile': metadata.get(MIG_PROFILE_KEY),
        'live_migratable': str(metadata.get(
            LIVE_MIGRATABLE_KEY, '')).lower() == 'true',
        'isolate': isolated,
        'pool_trait': trait,
        'projects': _projects_from(metadata),
        'properties': properties,
        'hosts': sorted(_get(aggregate, 'hosts') or []),
        'zone': _get(aggregate, 'availability_zone') or None,
        'metadata': metadata,
    }
    pool['type_trait'] = type_trait_of(pool)
    return pool


def _check_readable(pool: Mapping[str, typing.Any]) -> str | None:
    """Why an aggregate with gpu_pool cannot be used as a pool, or None."""
    metadata = pool['metadata']
    try:
        validate_name(metadata.get(POOL_KEY) or '')
    except exceptions.CommandError as exc:
        return str(exc)
    if pool['mode'] not in MODES:
        return _('unknown mode %r') % pool['mode']
    rc = pool['resource_class']
    if not rc:
        return _('no %s') % RESOURCE_CLASS_KEY
    try:
        names.check_gpu_class(names.normalize_resource_class(rc))
    except exceptions.CommandError as exc:
        return str(exc)
    needs = {PASSTHROUGH: ('alias', 'pci_id'), VGPU: ('vgpu_type',),
             MIG: ('mig_profile',),
             VGPU_VF: ('vgpu_type', 'alias', 'pci_id')}.get(pool['mode'], ())
    missing = [f for f in needs if not pool.get(f)]
    if missing:
        return _('a %(mode)s pool without %(fields)s') % {
            'mode': pool['mode'], 'fields': ', '.join(missing)}
    return None


def aggregate_dict(aggregate: object) -> dict[str, typing.Any]:
    """A host aggregate (SDK resource or dict) as the one plain shape every
    consumer reads: name, id, uuid, hosts, metadata and availability_zone
    (Nova's own key; None when the aggregate names no zone)."""
    return {'name': _get(aggregate, 'name'), 'id': _get(aggregate, 'id'),
            'uuid': _get(aggregate, 'uuid'),
            'hosts': list(_get(aggregate, 'hosts') or []),
            'metadata': dict(_get(aggregate, 'metadata') or {}),
            'availability_zone': _get(aggregate, 'availability_zone') or None}


def scan(aggregates: Iterable[object]
         ) -> tuple[dict[str, dict[str, typing.Any]],
                    list[tuple[str, str, str]]]:
    """(pools by name, problems) over all aggregates.

    ``problems`` is a list of (aggregate name, pool name, message) for
    aggregates that carry ``gpu_pool`` but cannot be read as a pool, and
    for pool names (or isolation traits) claimed by several aggregates:
    those are all skipped, never half-used.
    """
    found: dict[str, dict[str, typing.Any]]
    problems: list[tuple[str, str, str]]
    claims: dict[str, list[dict[str, typing.Any]]]
    found, problems, claims = {}, [], {}
    for aggregate in aggregates:
        if not is_pool(aggregate):
            continue
        agg_name = _get(aggregate, 'name')
        try:
            pool = pool_from_aggregate(aggregate)
            reason = _check_readable(pool)
        except (exceptions.CommandError, ValueError, TypeError) as exc:
            pool, reason = None, str(exc)
        if reason:
            value = str((_get(aggregate, 'metadata') or {}).get(POOL_KEY))
            problems.append((agg_name, value[:60], _(
                'aggregate %(agg)s is marked as GPU pool but cannot be read '
                'as one: %(reason)s. Fix or remove its gpu_* metadata '
                '("openstack aggregate show %(agg)s").')
                % {'agg': agg_name, 'reason': reason.rstrip('. ')}))
            continue
        # POOL was read: REASON is None
        claims.setdefault(pool['pool_trait'],  # type: ignore[index]
                          []).append(pool)  # type: ignore[arg-type]
    for trait, claimed in sorted(claims.items()):
        if len(claimed) == 1:
            found[claimed[0]['name']] = claimed[0]
            continue
        aggs = ', '.join(sorted(p['aggregate'] for p in claimed))
        for pool in claimed:
            problems.append((pool['aggregate'], pool['name'], _(
                'pool %(pool)s is claimed by several aggregates (%(aggs)s, '
                'sharing trait %(trait)s) and is skipped: remove gpu_pool '
                'from all but one ("openstack aggregate unset --property '
                'gpu_pool <aggregate>").')
                % {'pool': pool['name'], 'aggs': aggs, 'trait': trait}))
    return found, problems


def pools_by_host(pools: Mapping[str, Mapping[str, typing.Any]]
                  ) -> dict[str, list[str]]:
    """{host: [pool names]} for the given pools."""
    result: dict[str, list[str]] = {}
    for pool in pools.values():
        for host in pool['hosts']:
            result.setdefault(host, []).append(pool['name'])
    return {host: sorted(found) for host, found in result.items()}


def device(pool: Mapping[str, typing.Any]) -> str:
    """What one GPU of the pool is, in a few words (for listings)."""
    if pool['mode'] == PASSTHROUGH:
        return '%s (%s)' % (pool.get('alias'), pool.get('pci_id'))
    if pool['mode'] == VGPU:
        return '%s (%s)' % (pool.get('vgpu_type'), pool['resource_class'])
    if pool['mode'] == MIG:
        return '%s (%s)' % (pool.get('mig_profile'), pool['resource_class'])
    if pool['mode'] == VGPU_VF:
        return '%s VF (%s, %s)' % (pool.get('vgpu_type'), pool.get('alias'),
                                   pool.get('pci_id'))
    return pool.get('resource_class') or ''


COMPARED_FIELDS = ('mode', 'resource_class', 'alias', 'pci_id', 'vgpu_type',
                   'mig_profile', 'live_migratable', 'isolate', 'zone',
                   'projects', 'properties')


def differences(spec: Mapping[str, typing.Any],
                pool: Mapping[str, typing.Any], hosts: Iterable[str] = ()
                ) -> list[tuple[str, typing.Any, typing.Any]]:
    """[(field, wanted, existing)] between a create request and a pool."""
    found = []
    for field in COMPARED_FIELDS:
        want, have = spec.get(field), pool.get(field)
        if field == 'projects':
            want, have = sorted(want or []), sorted(have or [])
        if field == 'properties':
            want, have = dict(want or {}), dict(have or {})
        if (want or None) != (have or None):
            found.append((field, want, have))
    missing = sorted(set(hosts) - set(pool['hosts']))
    extra = sorted(set(pool['hosts']) - set(hosts))
    if missing or extra:
        found.append(('hosts', sorted(hosts), pool['hosts']))
    return found


def check_trait_collision(name: str,
                          pools: Mapping[str, Mapping[str, typing.Any]]
                          ) -> str:
    """Refuse a name whose isolation trait another pool already has."""
    trait = pool_trait(name)
    for other in pools.values():
        if other['name'] != name and other.get('pool_trait') == trait:
            raise _error(
                _('Pool name %(name)s normalises to trait %(trait)s, which '
                  'pool %(other)s already uses. Choose a name that differs '
                  'in letters or digits.'),
                name=name, trait=trait, other=other['name'])
    return trait


# -- what a pool's hosts look like in Placement (pure, on a Snapshot) -----

def device_providers(snapshot: '_Snapshot', roots: Iterable[str],
                     resource_class: str) -> list[str]:
    """Providers in the trees of ``roots`` with inventory of the class."""
    return [
        uuid for uuid in snapshot.providers_in_trees(roots)
        if resource_class in (
            snapshot.summaries.get(uuid, {}).get('resources') or {})
    ]


def vgpu_children(snapshot: '_Snapshot', roots: Iterable[str]) -> list[str]:
    """pGPU (or VF) child providers with VGPU inventory."""
    return [
        uuid for uuid in device_providers(snapshot, roots, 'VGPU')
        if snapshot.providers[uuid]['parent']
    ]


def traits_of(snapshot: '_Snapshot', uuid: str) -> set[str]:
    return set(snapshot.summaries.get(uuid, {}).get('traits') or ())


def host_problems(pool: Mapping[str, typing.Any], host: str,
                  roots: Collection[str], snapshot: '_Snapshot',
                  other_pools: Mapping[str, Mapping[str, typing.Any]]
                  ) -> list[str]:
    """Why ``host`` cannot join ``pool`` (list of messages; empty if fine).

    The pool's class must really be offered in the host's provider trees,
    and a vgpu/mig pool's pGPU providers must not carry another pool's type
    trait (one vGPU type per pGPU).
    """
    rc = pool['resource_class']
    if not roots:
        return [_('%(host)s has no compute node in Placement (no '
                  'hypervisor maps to it yet).') % {'host': host}]
    problems = []
    if not device_providers(snapshot, roots, rc):
        problems.append(
            _('%(host)s offers no %(rc)s in Placement: check the nova.conf '
              'of that host (%(hint)s) and "openstack gpu host list".')
            % {'host': host, 'rc': rc, 'hint': _CLASS_HINTS.get(
                pool['mode'], '')})
    mine = pool.get('type_trait')
    if mine:
        others = {
            other['type_trait']: other['name']
            for other in other_pools.values()
            if other.get('type_trait') and other['name'] != pool['name']
            and other['type_trait'] != mine
        }
        taken: dict[str, list[str]] = {}
        for uuid in vgpu_children(snapshot, roots):
            for trait in traits_of(snapshot, uuid) & set(others):
                taken.setdefault(trait, []).append(
                    snapshot.providers[uuid]['name'])
        for trait in sorted(taken):
            problems.append(
                _('%(host)s: %(count)d pGPU provider(s) already serve '
                  '%(trait)s for pool %(other)s (one vGPU type per physical '
                  'GPU): %(rps)s.')
                % {'host': host, 'count': len(taken[trait]),
                   'trait': trait, 'other': others[trait],
                   'rps': ', '.join(sorted(taken[trait]))})
    return problems


_CLASS_HINTS = {
    PASSTHROUGH: '[pci] device_spec and report_in_placement',
    VGPU: '[devices] enabled_mdev_types and [mdev_<type>]',
    MIG: '[devices] enabled_mdev_types and [mdev_<type>]',
    BAREMETAL: 'the Ironic nodes\' resource_class',
    VGPU_VF: '[pci] device_spec of the VFs with their resource_class and '
             'report_in_placement',
}


# Kinds of drift ``pool show`` reports (the ``problem`` of a finding).
NO_COMPUTE_NODE = 'no_compute_node'
MISSING_ISOLATION_TRAIT = 'missing_isolation_trait'
MISSING_TYPE_TRAIT = 'missing_type_trait'
NOT_IN_PLACEMENT_AGGREGATE = 'not_in_placement_aggregate'


def _finding(problem: str, host: str, provider: str | None = None,
             trait: str | None = None,
             fix: str | None = None) -> dict[str, str | None]:
    return {'host': host, 'problem': problem, 'provider': provider,
            'trait': trait, 'fix': fix}


def drift(pool: Mapping[str, typing.Any],
          host_roots: Mapping[str, Collection[str]], snapshot: '_Snapshot',
          placement_members: Collection[str] | None
          ) -> list[dict[str, str | None]]:
    """Where a pool is not what its metadata says: a list of findings.

    Each finding is data: ``{'host', 'problem', 'provider', 'trait',
    'fix'}`` where ``problem`` is one of NO_COMPUTE_NODE,
    MISSING_ISOLATION_TRAIT, MISSING_TYPE_TRAIT or
    NOT_IN_PLACEMENT_AGGREGATE, ``provider`` the provider's name (or
    None), ``trait`` the missing trait (or None) and ``fix`` the command
    that repairs it (or None). ``drift_text`` says it in a sentence.

    ``host_roots`` maps each member host to its root provider uuids;
    ``placement_members`` is the set of provider uuids in the pool's
    Placement aggregate (None when it could not be read).
    """
    found = []
    for host in pool['hosts']:
        roots = host_roots.get(host) or []
        if not roots:
            found.append(_finding(NO_COMPUTE_NODE, host))
            continue
        if pool['isolate']:
            for root in roots:
                if pool['pool_trait'] not in traits_of(snapshot, root):
                    found.append(_finding(
                        MISSING_ISOLATION_TRAIT, host,
                        provider=snapshot.providers.get(
                            root, {}).get('name', root),
                        trait=pool['pool_trait'],
                        fix='openstack gpu pool set %s --isolate'
                        % pool['name']))
        if pool.get('type_trait'):
            for uuid in vgpu_children(snapshot, roots):
                if pool['type_trait'] not in traits_of(snapshot, uuid):
                    found.append(_finding(
                        MISSING_TYPE_TRAIT, host,
                        provider=snapshot.providers[uuid]['name'],
                        trait=pool['type_trait'],
                        fix='openstack gpu pool add host %s %s'
                        % (pool['name'], host)))
        if placement_members is not None:
            if [r for r in roots if r not in placement_members]:
                found.append(_finding(
                    NOT_IN_PLACEMENT_AGGREGATE, host,
                    fix='nova-manage placement sync_aggregates'))
    return found


def drift_text(finding: Mapping[str, typing.Any]) -> str:
    """One drift finding (from ``drift``) as a sentence for people."""
    texts = {
        NO_COMPUTE_NODE: _('%(host)s: no compute node in Placement.'),
        MISSING_ISOLATION_TRAIT: _(
            '%(host)s: root provider %(provider)s lacks %(trait)s, so '
            'isolated flavors cannot land there (run "%(fix)s" to put it '
            'back).'),
        MISSING_TYPE_TRAIT: _(
            '%(host)s: pGPU provider %(provider)s lacks %(trait)s (Nova '
            're-creates a provider without operator traits when its '
            'inventory drops to 0 and comes back; run "%(fix)s" to put it '
            'back).'),
        NOT_IN_PLACEMENT_AGGREGATE: _(
            '%(host)s: not in the pool\'s Placement aggregate, so isolation '
            'and aggregate-based scheduling ignore it (run "%(fix)s").'),
    }
    return texts[finding['problem']] % finding


ISOLATION_LIMITS = _(
    'Isolation keeps out flavors and images that do not require '
    'the pool trait; an image owner can still set that trait on an image '
    'and get in. Protect trait:CUSTOM_GPU_POOL_* image properties with '
    'Glance property protections, or limit the pool to projects '
    '(--project).'
)


def gpu_figures(rows: Iterable[Mapping[str, typing.Any]],
                pool: Mapping[str, typing.Any],
                held: Mapping[str, Iterable[str]] | None = None
                ) -> dict[str, dict[str, typing.Any]]:
    """{host: {total, used, free}} of the pool's class on its hosts.

    Every member host is there: one that offers none of the pool's class
    counts 0 / 0 / 0. A host Blazar holds (HELD: {host: [why]},
    ``reservations.held_hosts``) has ``held_by_blazar`` (the reasons) too:
    its GPUs are not available to ordinary flavors.
    """
    figures: dict[str, dict[str, typing.Any]] = {
        host: {'total': 0, 'used': 0, 'free': 0} for host in pool['hosts']}
    for row in rows:
        if row['host'] in figures and (
                row['resource_class'] == pool['resource_class']):
            figures[row['host']] = {
                'total': row['total'], 'used': row['used'],
                'free': row['free']}
    for host, why in (held or {}).items():
        if host in figures:
            figures[host]['held_by_blazar'] = list(why)
    return figures
