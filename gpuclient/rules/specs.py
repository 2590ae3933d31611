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

"""Pure: GPU flavor extra specs, both ways.

* ``derive``: a pool (``pools.pool_from_aggregate``) and the options of
  ``gpu flavor create`` -> the flavor's extra specs (CLI.md, "Flavors and
  images"), the warnings to print, and the aggregate metadata the pool
  needs as well (``group_policy``).
* ``validate_spec``: what Nova's extra-spec validators
  (``nova/api/validation/extra_specs/``) would reject, for the namespaces
  listed in ``CHECKED_NAMESPACES``. Nova runs its validators only from
  compute API 2.86; gpuclient checks before anything is written whatever
  the version.
* ``read``: a flavor's extra specs -> what it asks for (pool, mode, GPUs
  per instance, request groups, aliases, NUMA policy), for any GPU flavor,
  hand-made or not.
"""

from collections.abc import Container
from collections.abc import Iterable
from collections.abc import Mapping
import fnmatch
import re
import typing

from osc_lib import exceptions

from gpuclient.i18n import _
from gpuclient.rules import address_space
from gpuclient.rules import nova_rules
from gpuclient.rules import placement_names as names
from gpuclient.rules import pools as pools_mod

AGGREGATE_PREFIX = nova_rules.AGGREGATE_SCOPE + ':'
POOL_SPEC = AGGREGATE_PREFIX + pools_mod.POOL_KEY
ALIAS_SPEC = 'pci_passthrough:alias'
NUMA_SPEC = 'hw:pci_numa_affinity_policy'
GROUP_POLICY = 'group_policy'
ISOLATE = 'isolate'
DEVICE_PROFILE_SPEC = 'accel:device_profile'
REQUIRED = 'required'
FORBIDDEN = 'forbidden'

NUMA_POLICIES = ('required', 'legacy', 'preferred', 'socket')
DEFAULT_NUMA_POLICY = 'preferred'
CYBORG = 'cyborg'

# Reading: what counts as a GPU resource class (besides pool classes).
GPU_CLASS_PATTERNS = ('VGPU', 'PGPU', 'CUSTOM_PCI_*', 'CUSTOM_*GPU*')

# Namespaces whose keys and values are checked like Nova does.
CHECKED_NAMESPACES = (
    'hw', 'hw_rng', 'hw_video', 'os', 'quota', 'pci_passthrough', 'accel',
    'resources', 'trait', 'aggregate_instance_extra_specs', 'group_policy',
)

_GROUP = r'[a-zA-Z0-9_-]{1,64}'
_RESOURCES_RE = re.compile(r'^resources(?P<group>%s)?:(?P<name>.*)$' % _GROUP)
_TRAIT_RE = re.compile(r'^trait(?P<group>%s)?:(?P<name>.*)$' % _GROUP)
_GROUPISH_RE = re.compile(r'^(resources|trait)[^:]*:')
_CUSTOM_NAME_RE = re.compile(r'^CUSTOM_[A-Z0-9_]+$')
_MAX_NAME = 255
_ALIAS_VALUE_RE = re.compile(r'[^:]+:\d+(?:\s*,\s*[^:]+:\d+)*')
_CPU_MASK = r'\^?\d+((-\d+)?(,\^?\d+(-\d+)?)?)*'
_TRUE = ('1', 't', 'true', 'on', 'y', 'yes')
_FALSE = ('0', 'f', 'false', 'off', 'n', 'no')

# Extra specs Nova knows (Nova 34), as (type, constraint): 'bool';
# ('int', min, max); ('enum', values); ('re', pattern). Our own table,
# written after nova/api/validation/extra_specs/{hw,hw_rng,hw_video,os}.py.
_BOOL = ('bool',)
_INT0 = ('int', 0, None)
_INT1 = ('int', 1, None)


def _enum(*values: str) -> tuple[str, tuple[str, ...]]:
    return ('enum', values)


KNOWN_SPECS = {
    'hw:boot_menu': _BOOL,
    'hw:cpu_cores': _INT1,
    'hw:cpu_dedicated_mask': ('re', _CPU_MASK),
    'hw:cpu_max_cores': _INT1,
    'hw:cpu_max_sockets': _INT1,
    'hw:cpu_max_threads': _INT1,
    'hw:cpu_policy': _enum('dedicated', 'shared', 'mixed'),
    'hw:cpu_realtime': _BOOL,
    'hw:cpu_realtime_mask': ('re', r'(\^)?' + _CPU_MASK[3:]),
    'hw:cpu_sockets': _INT1,
    'hw:cpu_thread_policy': _enum('prefer', 'isolate', 'require'),
    'hw:cpu_threads': _INT1,
    'hw:emulator_threads_policy': _enum('isolate', 'share'),
    'hw:ephemeral_encryption': _BOOL,
    'hw:ephemeral_encryption_format': _enum('plain', 'luks', 'luksv2'),
    'hw:hide_hypervisor_id': _BOOL,
    'hw:locked_memory': _BOOL,
    'hw:mem_encryption': _BOOL,
    # Nova 34's validator (nova/api/validation/extra_specs/hw.py) and
    # MemEncryptionModel.ALL: intel-tdx too (scheduler/test_hardware_nova
    # compares)
    'hw:mem_encryption_model': _enum('amd-sev', 'amd-sev-es', 'amd-sev-snp',
                                     'intel-tdx'),
    'hw:mem_page_size': ('re', r'(large|small|any|\d+([kKMGT]i?)?(b|bit|B)?)'),
    # Nova 34 reads these (hardware.get_maxphysaddr_mode, the libvirt
    # driver, ComputeCapabilitiesFilter) but its API validator does not
    # register them: refused at 2.86+, taken at the 2.61 gpuclient writes
    # (rules/address_space)
    address_space.BITS_SPEC: ('int', address_space.MIN_BITS,
                              address_space.MAX_BITS),
    address_space.MODE_SPEC: _enum(*address_space.MODES),
    'hw:numa_nodes': _INT1,
    'hw:pci_numa_affinity_policy': _enum(*NUMA_POLICIES),
    'hw:pmem': ('re', r'([a-zA-Z0-9_]+(,)?)+'),
    'hw:pmu': _BOOL,
    'hw:redirected_usb_ports': ('int', 0, 15),
    'hw:serial_port_count': _INT0,
    'hw:sound_model': _enum('sb16', 'es1370', 'pcspk', 'ac97', 'ich6',
                            'ich9', 'usb', 'virtio'),
    'hw:tpm_model': _enum('tpm-tis', 'tpm-crb'),
    'hw:tpm_secret_security': _enum('user', 'host', 'deployment'),
    'hw:tpm_version': _enum('1.2', '2.0'),
    'hw:usb_model': _enum('none', 'nec-xhci', 'qemu-xhci'),
    'hw:vif_multiqueue_enabled': _BOOL,
    'hw:viommu_model': _enum('intel', 'smmuv3', 'virtio', 'auto'),
    'hw:virtio_packed_ring': _BOOL,
    'hw:watchdog_action': _enum('none', 'pause', 'poweroff', 'reset',
                                'disabled'),
    'hw_rng:allowed': _BOOL,
    'hw_rng:rate_bytes': _INT0,
    'hw_rng:rate_period': _INT0,
    'hw_video:ram_max_mb': _INT0,
    'os:secure_boot': _enum('disabled', 'required'),
    'pci_passthrough:alias': ('re', _ALIAS_VALUE_RE.pattern),
    'accel:device_profile': ('str',),
    'group_policy': _enum('isolate', 'none'),
    'quota:cpu_shares': _INT0,
    'quota:cpu_period': _INT0,
    'quota:cpu_quota': ('int', None, None),
}
for _what in ('cpu', 'memory', 'disk_io', 'vif'):
    KNOWN_SPECS['quota:%s_limit' % _what] = _INT0
    KNOWN_SPECS['quota:%s_reservation' % _what] = ('int', None, None)
    KNOWN_SPECS['quota:%s_shares_level' % _what] = _enum(
        'custom', 'high', 'normal', 'low')
    KNOWN_SPECS['quota:%s_shares_share' % _what] = _INT0
for _what in ('read', 'write', 'total'):
    for _unit in ('bytes', 'iops'):
        KNOWN_SPECS['quota:disk_%s_%s_sec' % (_what, _unit)] = _INT0
for _what in ('inbound', 'outbound'):
    for _unit in ('average', 'peak', 'burst'):
        KNOWN_SPECS['quota:vif_%s_%s' % (_what, _unit)] = _INT0
_KNOWN_PATTERNS = (
    (re.compile(r'^hw:numa_cpus\.\d+$'), ('re', _CPU_MASK)),
    (re.compile(r'^hw:numa_mem\.\d+$'), _INT1),
)
_CLOSED_NAMESPACES = ('hw', 'hw_rng', 'hw_video', 'os', 'quota',
                      'pci_passthrough', 'accel')


def _error(message: str, **kwargs: object) -> exceptions.CommandError:
    return exceptions.CommandError(message % kwargs if kwargs else message)


# -- Nova's validators ------------------------------------------------------

def _check_value(key: str, value: object,
                 rule: tuple[typing.Any, ...]) -> None:
    kind = rule[0]
    bad = None
    if kind == 'bool':
        if str(value).strip().lower() not in _TRUE + _FALSE:
            bad = _('a boolean (true or false)')
    elif kind == 'int':
        try:
            number = int(str(value).strip())
        except ValueError:
            number = None
        low, high = rule[1], rule[2]
        if (number is None or (low is not None and number < low)
                or (high is not None and number > high)):
            if low is not None and high is not None:
                bad = _('an integer from %(low)d to %(high)d') % {
                    'low': low, 'high': high}
            elif low is not None:
                bad = _('an integer of at least %d') % low
            else:
                bad = _('an integer')
    elif kind == 'enum':
        if value not in rule[1]:
            bad = _('one of %s') % ', '.join(rule[1])
    elif kind == 're':
        if not re.fullmatch(rule[1], str(value)):
            bad = _('of the form %s') % rule[1]
    if bad:
        raise _error(
            _('Invalid extra spec %(key)s=%(value)s: Nova wants %(bad)s.'),
            key=key, value=value, bad=bad)


def alias_count(value: object) -> int:
    """Devices a ``pci_passthrough:alias`` value asks for (summed)."""
    return sum(count for count in parse_aliases(value).values()
               if count > 0)


def _check_alias_count(key: str, value: str) -> None:
    total = alias_count(value)
    if total > names.MAX_GPUS:
        raise _error(
            _('Invalid extra spec %(key)s=%(value)s: it asks for %(total)d '
              'PCI devices, and Nova makes one Placement request group per '
              'device; at most %(max)d GPUs per instance. Give counts that '
              'add up to %(max)d or less.'),
            key=key, value=value, total=total, max=names.MAX_GPUS)


def check_gpus(gpus: int | None) -> int:
    """Refuse a ``--gpus`` outside 1..names.MAX_GPUS (no I/O)."""
    if gpus is None:
        return 1
    if gpus < 1:
        raise _error(_('--gpus must be at least 1 (got %d).') % gpus)
    if gpus > names.MAX_GPUS:
        raise _error(
            _('--gpus %(gpus)d: at most %(max)d GPUs per instance (Nova '
              'asks Placement for each GPU in its own request group). Give '
              '--gpus from 1 to %(max)d.'), gpus=gpus, max=names.MAX_GPUS)
    return gpus


def parse_group_key(key: str) -> tuple[str, str, str] | None:
    """('resources'|'trait', group suffix or '', name) or None."""
    for kind, regex in (('resources', _RESOURCES_RE), ('trait', _TRAIT_RE)):
        match = regex.match(key)
        if match:
            return kind, match.group('group') or '', match.group('name')
    return None


def validate_spec(key: str, value: object) -> None:
    """Raise CommandError where Nova's extra-spec validators would.

    Checked: every key of the ``hw``, ``hw_rng``, ``hw_video``, ``os``,
    ``quota``, ``pci_passthrough`` and ``accel`` namespaces (unknown keys
    refused), ``resources*:`` and ``trait*:`` (group suffix, class or trait
    name, amount, required/forbidden), ``aggregate_instance_extra_specs:``
    and ``group_policy``. Not checked: ``capabilities:``, ``vmware:`` and
    namespaces Nova does not know (Nova accepts those as they are).
    Stricter than Nova: negative resource amounts (Nova's scheduler ignores
    them quietly), amounts above Placement's names.MAX_AMOUNT, more than
    names.MAX_GPUS of a GPU class in one key or of PCI devices in
    ``pci_passthrough:alias`` (one request group each), and names longer
    than Placement's 255 characters or ``CUSTOM_`` alone.
    """
    value = '' if value is None else str(value)
    if key in KNOWN_SPECS:
        _check_value(key, value, KNOWN_SPECS[key])
        if key == ALIAS_SPEC:
            _check_alias_count(key, value)
        return
    for regex, rule in _KNOWN_PATTERNS:
        if regex.match(key):
            _check_value(key, value, rule)
            return
    parsed = parse_group_key(key)
    if parsed:
        kind, _group, name = parsed
        if kind == 'resources':
            if ((name not in names.STANDARD_RESOURCE_CLASSES
                    and not _CUSTOM_NAME_RE.match(name))
                    or len(name) > _MAX_NAME):
                raise _error(
                    _('Invalid extra spec %(key)s: %(name)s is not a '
                      'resource class (a standard one such as VGPU, or '
                      'CUSTOM_ followed by A-Z, 0-9 and _, at most 255 '
                      'characters).'),
                    key=key, name=name)
            try:
                amount = int(value.strip())
            except ValueError:
                amount = None
            if amount is None or amount < 0:
                raise _error(
                    _('Invalid extra spec %(key)s=%(value)s: the amount '
                      'must be an integer of at least 0 (Nova ignores '
                      'other amounts without a word).'),
                    key=key, value=value)
            if amount > names.MAX_AMOUNT:
                raise _error(
                    _('Invalid extra spec %(key)s=%(value)s: Placement '
                      'takes amounts up to %(max)d. Give a smaller '
                      'amount.'), key=key, value=value,
                    max=names.MAX_AMOUNT)
            if is_gpu_class(name) and amount > names.MAX_GPUS:
                raise _error(
                    _('Invalid extra spec %(key)s=%(value)s: at most '
                      '%(max)d GPUs per instance. Give an amount from 1 to '
                      '%(max)d.'), key=key, value=value, max=names.MAX_GPUS)
        else:
            if not names.is_trait_name(name):
                raise _error(
                    _('Invalid extra spec %(key)s: %(name)s is not a trait '
                      'name (A-Z, 0-9 and _, at most 255 characters; custom '
                      'traits are CUSTOM_ followed by at least one of '
                      'those).'), key=key, name=name)
            if value not in (REQUIRED, FORBIDDEN):
                raise _error(
                    _('Invalid extra spec %(key)s=%(value)s: a trait is '
                      'required or forbidden.'), key=key, value=value)
        return
    if _GROUPISH_RE.match(key):
        raise _error(
            _('Invalid extra spec %(key)s: a request group suffix is 1 to '
              '64 letters, digits, "_" or "-" (resources1:VGPU, '
              'trait1:CUSTOM_X).'), key=key)
    if key.startswith(AGGREGATE_PREFIX):
        if not key[len(AGGREGATE_PREFIX):]:
            raise _error(_('Invalid extra spec %s: no metadata key after '
                           'the namespace.') % key)
        return
    namespace = key.split(':', 1)[0] if ':' in key else None
    if namespace in _CLOSED_NAMESPACES:
        raise _error(
            _('Nova does not know the extra spec %(key)s: check its name '
              '(image properties such as hw_machine_type belong on the '
              'image, not the flavor).'), key=key)


# -- derivation --------------------------------------------------------------

def is_gpu_class(resource_class: str,
                 extra: Container[str | None] = ()) -> bool:
    if resource_class in extra:
        return True
    return any(fnmatch.fnmatchcase(resource_class, pattern)
               for pattern in GPU_CLASS_PATTERNS)


def has_numa_topology(extra_specs: Mapping[str, typing.Any] | None) -> bool:
    """Would Nova give an instance of this flavor a NUMA topology?"""
    specs = extra_specs or {}
    if specs.get('hw:numa_nodes') or specs.get('hw:mem_page_size'):
        return True
    if specs.get('hw:cpu_policy') in ('dedicated', 'mixed'):
        return True
    if specs.get('resources:PCPU') not in (None, '0'):
        return True
    return any(k.startswith(('hw:numa_cpus.', 'hw:numa_mem.'))
               for k in specs)


def numa_warning(policy: str) -> str:
    return _(
        'hw:pci_numa_affinity_policy=%s only acts when the instance has a '
        'NUMA topology (hw:numa_nodes, hw:cpu_policy=dedicated or '
        'hw:mem_page_size on the flavor, or the same on the image) and '
        'NUMATopologyFilter is enabled; this flavor has none, so Nova will '
        'place the GPU without regard to NUMA.') % policy


def sriov_warning(pool: str, gpus: int) -> str:
    return _(
        '--gpus %(gpus)d on vgpu pool %(pool)s: group_policy=isolate puts '
        'each vGPU on a different child provider, but on SR-IOV cards '
        '(NVIDIA Ampere and later) every virtual function is a provider, '
        'so two vGPUs may still come from one physical GPU, which the '
        'NVIDIA driver refuses at boot. Use such flavors only on pools of '
        'time-sliced cards without SR-IOV.') % {'gpus': gpus, 'pool': pool}


def vf_warning(pool: str, gpus: int) -> str:
    return _(
        '--gpus %(gpus)d on vgpu-vf pool %(pool)s: Nova may take the VFs '
        'from one physical GPU (one provider per card holds all its VFs), '
        'and NVIDIA supports several vGPUs in one VM only for some types '
        '(see NVIDIA\'s "multiple vGPU" table for your board).') % {
            'gpus': gpus, 'pool': pool}


def _pool_error(pool: str, field: str) -> exceptions.CommandError:
    return _error(
        _('Pool %(pool)s has no %(field)s in its aggregate metadata, so no '
          'flavor can be derived from it. Repair it (openstack gpu pool '
          'show %(pool)s).'), pool=pool, field=field)


def _gpu_specs(pool: Mapping[str, typing.Any], gpus: int,
               numa_policy: str | None
               ) -> tuple[dict[str, str], dict[str, str], list[str]]:
    """(extra specs, aggregate metadata, warnings) for the pool's mode."""
    mode, name = pool['mode'], pool['name']
    specs: dict[str, str]
    aggregate: dict[str, str]
    warnings: list[str]
    specs, aggregate, warnings = {}, {}, []
    if mode in pools_mod.PCI_MODES:
        if not pool.get('alias'):
            raise _pool_error(name, pools_mod.ALIAS_KEY)
        specs[ALIAS_SPEC] = '%s:%d' % (pool['alias'], gpus)
        specs[NUMA_SPEC] = numa_policy or DEFAULT_NUMA_POLICY
        if mode == pools_mod.VGPU_VF and gpus > 1:
            warnings.append(vf_warning(name, gpus))
        return specs, aggregate, warnings
    if numa_policy:
        raise _error(
            _('--numa-policy is for passthrough pools: it sets '
              'hw:pci_numa_affinity_policy, which applies to PCI devices, '
              'and pool %(pool)s is a %(mode)s pool.'), pool=name, mode=mode)
    resource_class = pool.get('resource_class')
    if not resource_class:
        raise _pool_error(name, pools_mod.RESOURCE_CLASS_KEY)
    if mode == pools_mod.BAREMETAL:
        if gpus != 1:
            raise _error(
                _('--gpus %(gpus)d on baremetal pool %(pool)s: an instance '
                  'takes one whole node, whatever its number of GPUs; '
                  'leave --gpus out.'), gpus=gpus, pool=name)
        specs['resources:%s' % resource_class] = '1'
        for zeroed in ('VCPU', 'MEMORY_MB', 'DISK_GB'):
            specs['resources:%s' % zeroed] = '0'
        return specs, aggregate, warnings
    if mode not in (pools_mod.VGPU, pools_mod.MIG):
        raise _error(_('Pool %(pool)s has an unknown mode %(mode)r.'),
                     pool=name, mode=mode)
    if mode == pools_mod.MIG and gpus > 1:
        raise _error(
            _('--gpus %(gpus)d on mig pool %(pool)s: each MIG slice is its '
              'own virtual-function provider, so group_policy=isolate '
              'cannot keep two slices on two physical GPUs, and the NVIDIA '
              'driver refuses two slices of one GPU in a VM. MIG flavors '
              'take one GPU; use a passthrough or vgpu pool for more.'),
            gpus=gpus, pool=name)
    trait = pool.get('type_trait')
    if gpus == 1:
        specs['resources:%s' % resource_class] = '1'
        if trait:
            specs['trait:%s' % trait] = REQUIRED
        return specs, aggregate, warnings
    for group in range(1, gpus + 1):
        specs['resources%d:%s' % (group, resource_class)] = '1'
        if trait:
            specs['trait%d:%s' % (group, trait)] = REQUIRED
    specs[GROUP_POLICY] = ISOLATE
    aggregate[GROUP_POLICY] = ISOLATE
    warnings.append(sriov_warning(name, gpus))
    return specs, aggregate, warnings


def _check_property(key: str, value: object, derived: Mapping[str, str],
                    pool: Mapping[str, typing.Any]) -> None:
    """Refuse a --property that contradicts the derived extra specs."""
    validate_spec(key, value)
    name = pool['name']
    if key in derived:
        if str(value) != derived[key]:
            hint = {
                NUMA_SPEC: _(' Use --numa-policy instead.'),
                ALIAS_SPEC: _(' Use --gpus for the count; one flavor asks '
                              'for the GPUs of one pool.'),
            }.get(key, '')
            raise _error(
                _('--property %(key)s=%(value)s contradicts what pool '
                  '%(pool)s needs (%(key)s=%(derived)s).%(hint)s'),
                key=key, value=value, pool=name, derived=derived[key],
                hint=hint)
        return
    if ':' not in key:
        raise _error(
            _('--property %(key)s=%(value)s: an extra spec without a '
              'namespace is matched by AggregateInstanceExtraSpecsFilter '
              'against host aggregate metadata, so the flavor would not '
              'schedule unless every pool aggregate carried %(key)s too. '
              'gpuclient sets group_policy itself when a flavor needs it; '
              'use a namespaced key (aggregate_instance_extra_specs:'
              '%(key)s) for aggregate matching.'), key=key, value=value)
    # indexed where the filter found it parsed (not None)
    used_groups = {parse_group_key(k)[1]  # type: ignore[index]
                   for k in derived if parse_group_key(k)}
    parsed = parse_group_key(key)
    if parsed:
        kind, group, item = parsed
        if group and group in used_groups:
            raise _error(
                _('--property %(key)s: request group %(group)s is the one '
                  'gpuclient uses for a GPU of pool %(pool)s. Use another '
                  'group suffix.'), key=key, group=group, pool=name)
        if kind == 'resources' and is_gpu_class(
                item, (pool.get('resource_class'),)):
            raise _error(
                _('--property %(key)s=%(value)s asks for GPUs besides the '
                  'ones pool %(pool)s hands out. Use --gpus for the number '
                  'of GPUs; one flavor asks for the GPUs of one pool.'),
                key=key, value=value, pool=name)
        if kind == 'trait' and item.startswith(
                names.CUSTOM_PREFIX + pools_mod.POOL_TRAIT_PREFIX):
            raise _error(
                _('--property %(key)s: %(trait)s is a pool isolation trait '
                  'that is not pool %(pool)s\'s own (or the pool is not '
                  'isolated); the flavor would never schedule. Drop it.'),
                key=key, trait=item, pool=name)
    if key == ALIAS_SPEC:
        raise _error(
            _('--property %(key)s=%(value)s: a flavor of %(mode)s pool '
              '%(pool)s gets its GPUs from the pool; a PCI alias would ask '
              'for devices its hosts may not have.'),
            key=key, value=value, mode=pool['mode'], pool=name)


def derive(pool: Mapping[str, typing.Any], gpus: int | None = 1,
           numa_policy: str | None = None,
           properties: Mapping[str, typing.Any] | None = None,
           maxphysaddr_mode: str | None = None,
           maxphysaddr_bits: int | None = None,
           ram: int | None = None) -> dict[str, typing.Any]:
    """Extra specs for a flavor of ``pool`` (CLI.md's table).

    ``gpus`` is 1 to names.MAX_GPUS (``check_gpus``);
    ``maxphysaddr_mode``/``_bits``: Nova's hw:maxphysaddr_* settings
    (``address_space.options_specs``); ``ram`` (MB): to warn when the
    guest would not hold its GPUs' BAR1 windows. Returns a dict:
    ``extra_specs``, ``aggregate_metadata`` (keys the pool
    aggregate must carry as well: ``group_policy=isolate`` for several
    vGPUs, because AggregateInstanceExtraSpecsFilter matches unscoped
    keys) and ``warnings`` (strings for the operator). Raises CommandError
    for options that make no sense for the pool and for ``properties``
    that contradict the derived keys or that Nova would reject.
    """
    gpus = check_gpus(gpus)
    if numa_policy and numa_policy not in NUMA_POLICIES:
        raise _error(_('Unknown --numa-policy %(policy)s: choose one of '
                       '%(all)s.'), policy=numa_policy,
                     all=', '.join(NUMA_POLICIES))
    specs = {POOL_SPEC: pool['name']}
    if pool.get('isolate') and pool.get('pool_trait'):
        specs['trait:%s' % pool['pool_trait']] = REQUIRED
    gpu_specs, aggregate, warnings = _gpu_specs(pool, gpus, numa_policy)
    specs.update(gpu_specs)
    specs.update(address_space.options_specs(maxphysaddr_mode,
                                             maxphysaddr_bits))
    merged = dict(specs)
    for key, value in sorted((properties or {}).items()):
        _check_property(key, value, specs, pool)
        nova_rules.check_pair(key, value, '--property')
        merged[key] = str(value)
    if numa_policy and not has_numa_topology(merged):
        warnings.insert(0, numa_warning(numa_policy))
    if ram is not None:
        warning = address_space.flavor_warning(pool, gpus, ram, merged)
        if warning:
            warnings.append(warning)
    return {
        'extra_specs': merged,
        'aggregate_metadata': aggregate,
        'warnings': warnings,
    }


def aggregate_changes(pool: Mapping[str, typing.Any],
                      wanted: Mapping[str, str] | None) -> dict[str, str]:
    """Metadata to set on the pool aggregate for ``wanted`` keys.

    Aggregate values are comma-separated sets for the filter. Raises
    CommandError when the aggregate carries the key with values that
    exclude the wanted one (changing it would break other flavors).
    """
    metadata = pool.get('metadata') or {}
    changes = {}
    for key, value in (wanted or {}).items():
        have = metadata.get(key)
        if have is None:
            changes[key] = value
            continue
        values = {v.strip() for v in str(have).split(',')}
        if value not in values:
            raise _error(
                _('Pool %(pool)s\'s aggregate has %(key)s=%(have)s, but a '
                  'flavor with several vGPUs needs %(key)s=%(value)s there '
                  'too (AggregateInstanceExtraSpecsFilter matches the '
                  'flavor\'s %(key)s against it). Check which flavors rely '
                  'on %(have)s before changing it.'),
                pool=pool['name'], key=key, have=have, value=value)
    return changes


# -- what gpuclient owns on a flavor ----------------------------------------

_BAREMETAL_ZEROED = ('VCPU', 'MEMORY_MB', 'DISK_GB')


def owned_reason(key: str,
                 pools: Mapping[str, Mapping[str, typing.Any]] | None = None
                 ) -> str | None:
    """Why extra spec KEY is gpuclient's to keep (derived from the pool:
    steering, the GPU request, the isolation trait, the NUMA policy of
    passthrough GPUs), or None when an operator may set or unset it on a
    GPU flavor (``gpu flavor set/unset --property``).

    Numbered request groups are gpuclient's GPU groups; in the unnumbered
    group, GPU resource classes (those of ``pools`` too), bare-metal's
    zeroed VCPU, MEMORY_MB and DISK_GB, pool isolation traits and the
    pools' type traits. Other ``resources:``/``trait:`` keys (a CPU trait,
    PCPU) are the operator's, as ``gpu flavor create --property`` takes
    them.
    """
    pools = pools or {}
    if key.startswith(AGGREGATE_PREFIX):
        return _('it steers the flavor to its pool\'s hosts')
    if key in (ALIAS_SPEC, DEVICE_PROFILE_SPEC):
        return _('it asks for the flavor\'s GPUs')
    if key == GROUP_POLICY:
        return _('it keeps the GPUs of the flavor apart and is matched '
                 'against the pool aggregate')
    if key == NUMA_SPEC:
        return _('it is the NUMA policy of the flavor\'s GPUs '
                 '(gpu flavor create --numa-policy)')
    parsed = parse_group_key(key)
    if parsed is None:
        return None
    kind, group, name = parsed
    if group:
        return _('request group %s is the one of the flavor\'s GPUs') % group
    classes = {p.get('resource_class') for p in pools.values()}
    classes.discard(None)
    if kind == 'resources' and (is_gpu_class(name, classes)
                                or name in _BAREMETAL_ZEROED):
        return _('it asks for the flavor\'s GPUs (or, zeroed, for a whole '
                 'bare-metal node)')
    type_traits = {p.get('type_trait') for p in pools.values()}
    if kind == 'trait' and (
            name.startswith(names.CUSTOM_PREFIX + pools_mod.POOL_TRAIT_PREFIX)
            or name in type_traits):
        return _('it is the pool\'s isolation or GPU type trait (gpu pool '
                 'set --isolate/--no-isolate keeps it)')
    return None


# -- reading -----------------------------------------------------------------

def _plain_value(value: object) -> str | None:
    """Aggregate filter value -> the plain value, if it is one."""
    text = str(value).strip()
    match = re.match(r'^s==\s*(.*)$', text)
    if match:
        return match.group(1).strip()
    if re.match(r'^(=|==|!=|>=|<=|s!=|s>=|s>|s<=|s<|<in>|<all-in>|<or>)',
                text):
        return None
    return text


def _int(value: object) -> int | None:
    try:
        return int(str(value).strip())
    except (TypeError, ValueError):
        return None


def parse_aliases(value: object) -> dict[str, int]:
    """'a:1, b:2' -> {'a': 1, 'b': 2} (counts summed per alias)."""
    aliases: dict[str, int] = {}
    for part in str(value or '').split(','):
        if ':' not in part:
            continue
        name, _sep, count = part.strip().rpartition(':')
        number = _int(count)
        if name and number is not None:
            aliases[name] = aliases.get(name, 0) + number
    return aliases


def read(extra_specs: Mapping[str, typing.Any] | None,
         pools: Mapping[str, Mapping[str, typing.Any]] | None = None
         ) -> dict[str, typing.Any]:
    """What a flavor asks for, read from its extra specs.

    ``pools`` ({name: pool}, optional) lets the reading use the pool's
    mode and class. Returns a dict: ``pool`` (from
    ``aggregate_instance_extra_specs:gpu_pool``), ``steering`` (every
    ``aggregate_instance_extra_specs:`` key, unprefixed), ``mode``
    (passthrough, vgpu, mig, baremetal, cyborg, or None when it cannot be
    told), ``gpus`` (per instance; None when the device profile decides),
    ``resources`` ({group: {class: amount}}, '' is the unnumbered group),
    ``traits`` ({group: {trait: required|forbidden}}), ``aliases``,
    ``device_profile``, ``numa_policy``, ``group_policy``, ``patterns``
    (which GPU patterns it uses) and ``is_gpu``.

    Reading never refuses a flavor (``flavor list`` shows every one):
    ``problems`` says when ``gpus`` is above names.MAX_GPUS.
    """
    specs = dict(extra_specs or {})
    pools = pools or {}
    resources: dict[str, dict[str, int]]
    traits: dict[str, dict[str, str]]
    steering: dict[str, str]
    resources, traits, steering = {}, {}, {}
    for key, value in specs.items():
        parsed = parse_group_key(key)
        if parsed:
            kind, group, name = parsed
            if kind == 'resources':
                amount = _int(value)
                if amount is not None:
                    resources.setdefault(group, {})[name] = amount
            else:
                traits.setdefault(group, {})[name] = str(value)
        elif key.startswith(AGGREGATE_PREFIX):
            steering[key[len(AGGREGATE_PREFIX):]] = str(value)
    pool_name = None
    if pools_mod.POOL_KEY in steering:
        pool_name = _plain_value(steering[pools_mod.POOL_KEY])
    pool = pools.get(pool_name) if pool_name else None
    pool_classes = {p.get('resource_class') for p in pools.values()}
    pool_classes.discard(None)
    aliases = parse_aliases(specs.get(ALIAS_SPEC))
    profile = specs.get(DEVICE_PROFILE_SPEC)
    zeroed = resources.get('', {}).get('VCPU') == 0

    gpu_classes: dict[str, int] = {}
    for wanted in resources.values():
        for rc, amount in wanted.items():
            if is_gpu_class(rc, pool_classes) or (
                    zeroed and pool is not None
                    and rc == pool.get('resource_class')):
                gpu_classes[rc] = gpu_classes.get(rc, 0) + amount

    patterns = []
    if aliases:
        patterns.append('pci-alias')
    if 'VGPU' in gpu_classes:
        numbered = [g for g, w in resources.items() if g and 'VGPU' in w]
        patterns.append('vgpu-groups' if numbered else 'vgpu')
    others = sorted(rc for rc in gpu_classes if rc != 'VGPU')
    if others:
        patterns.append('baremetal' if zeroed else 'gpu-class')
    if profile:
        patterns.append('device-profile')

    all_traits = {t for group in traits.values() for t in group}
    if pool is not None:
        mode = pool.get('mode')
    elif zeroed and others:
        mode = pools_mod.BAREMETAL
    elif 'VGPU' in gpu_classes:
        mode = (pools_mod.MIG if any(t.startswith('CUSTOM_MIG_')
                                     for t in all_traits)
                else pools_mod.VGPU)
    elif aliases or any(rc.startswith('CUSTOM_PCI_') or rc == 'PGPU'
                        for rc in others):
        by_alias = {p.get('alias'): p.get('mode') for p in pools.values()
                    if p.get('mode') in pools_mod.PCI_MODES}
        mode = next((by_alias[a] for a in aliases if a in by_alias),
                    pools_mod.PASSTHROUGH)
    elif others:
        by_class = {p.get('resource_class'): p.get('mode')
                    for p in pools.values()}
        mode = next((by_class[rc] for rc in others if rc in by_class), None)
    elif profile:
        mode = CYBORG
    else:
        mode = None

    if aliases:
        gpus = sum(aliases.values())
    elif gpu_classes:
        gpus = sum(gpu_classes.values())
    elif profile:
        gpus = None
    else:
        gpus = 0
    return {
        'pool': pool_name,
        'steering': steering,
        'mode': mode,
        'gpus': gpus,
        'resources': resources,
        'traits': traits,
        'aliases': aliases,
        'gpu_classes': gpu_classes,
        'device_profile': profile,
        'numa_policy': specs.get(NUMA_SPEC),
        'group_policy': specs.get(GROUP_POLICY),
        'patterns': patterns,
        'is_gpu': bool(patterns or pool_name),
    }


def request_text(reading: Mapping[str, typing.Any]) -> dict[str, str]:
    """{group label: 'RC=N, ...'} for display."""
    shown: dict[str, str] = {}
    for group in sorted(set(reading['resources']) | set(reading['traits'])):
        label = group or _('(unnumbered)')
        parts = ['%s=%d' % item for item in
                 sorted(reading['resources'].get(group, {}).items())]
        for trait, value in sorted(reading['traits'].get(group, {}).items()):
            parts.append(('!' if value == FORBIDDEN else '') + trait)
        shown[label] = ', '.join(parts)
    if reading['aliases']:
        shown[ALIAS_SPEC] = ', '.join(
            '%s:%d' % item for item in sorted(reading['aliases'].items()))
    if reading['device_profile']:
        shown[DEVICE_PROFILE_SPEC] = reading['device_profile']
    return shown


def matching_pools(reading: Mapping[str, typing.Any],
                   pools: Mapping[str, Mapping[str, typing.Any]]
                   ) -> list[str]:
    """Names of the pools a flavor can land in, by its aggregate keys.

    ``gpu_pool`` names one; hand-made steering (``gpu=true``) matches
    every pool whose aggregate carries the same plain values and whose
    mode is the flavor's (when both are known).
    """
    steering = reading['steering']
    if not steering:
        return []
    found = []
    for name, pool in sorted(pools.items()):
        if (reading['mode'] and pool.get('mode')
                and reading['mode'] != pool['mode']):
            continue
        metadata = pool.get('metadata') or {}
        for key, value in steering.items():
            plain = _plain_value(value)
            have = {v.strip() for v in str(metadata.get(key, '')).split(',')}
            if plain is None or plain not in have:
                break
        else:
            found.append(name)
    return found


def problems(extra_specs: Mapping[str, typing.Any] | None,
             reading: Mapping[str, typing.Any],
             pools: Mapping[str, Mapping[str, typing.Any]]) -> list[str]:
    """What would make Nova do something else than the flavor says."""
    found = []
    specs = extra_specs or {}
    if reading['pool'] and reading['pool'] not in pools:
        found.append(_(
            'aggregate_instance_extra_specs:gpu_pool names pool %s, which '
            'does not exist: the flavor cannot schedule.') % reading['pool'])
    if reading['numa_policy'] and not has_numa_topology(specs):
        found.append(numa_warning(reading['numa_policy']))
    if (reading['gpus'] or 0) > names.MAX_GPUS:
        found.append(_(
            'the flavor asks for %(gpus)d GPUs per instance, more than '
            'the %(max)d gpuclient allows (more than any server holds): it '
            'will not schedule, and gpu candidate list refuses PCI aliases '
            'asking for that many. Fix its extra specs, or delete it.') % {
                'gpus': reading['gpus'], 'max': names.MAX_GPUS})
    numbered = [g for g in reading['resources'] if g]
    if len(numbered) > 1 and not reading['group_policy']:
        found.append(_(
            'several numbered request groups but no group_policy: Nova '
            'refuses to boot such a flavor.'))
    if reading['group_policy']:
        for name in matching_pools(reading, pools):
            metadata = pools[name].get('metadata') or {}
            values = {v.strip() for v in
                      str(metadata.get(GROUP_POLICY, '')).split(',')}
            if reading['group_policy'] not in values:
                found.append(_(
                    'group_policy=%(policy)s is unscoped, so '
                    'AggregateInstanceExtraSpecsFilter also wants it on the '
                    'aggregate, and pool %(pool)s\'s aggregate lacks it: '
                    'the flavor never schedules there.') % {
                        'policy': reading['group_policy'], 'pool': name})
    return found


# -- existing flavors --------------------------------------------------------

FLAVOR_FIELDS = ('vcpus', 'ram', 'disk', 'ephemeral', 'swap', 'is_public',
                 'description')


def flavor_differences(wanted: Mapping[str, typing.Any],
                       existing: Mapping[str, typing.Any]
                       ) -> list[tuple[str, typing.Any, typing.Any]]:
    """[(what, wanted, existing)] between a create request and a flavor.

    Both are dicts with FLAVOR_FIELDS, ``extra_specs`` and ``projects``
    (only compared for private flavors).
    """
    found = []
    for field in FLAVOR_FIELDS:
        want, have = wanted.get(field), existing.get(field)
        if field == 'description':
            want, have = want or None, have or None
        if want != have:
            found.append((field, want, have))
    want_specs = wanted.get('extra_specs') or {}
    have_specs = existing.get('extra_specs') or {}
    for key in sorted(set(want_specs) | set(have_specs)):
        want, have = want_specs.get(key), have_specs.get(key)
        if want != have:
            found.append((key, want, have))
    if not wanted.get('is_public'):
        want = sorted(wanted.get('projects') or [])
        have = sorted(existing.get('projects') or [])
        if want != have:
            found.append(('projects', ','.join(want), ','.join(have)))
    return found


def describe_differences(differences: Iterable[tuple[str, object, object]]
                         ) -> str:
    """'vcpus: 8 (existing 4); resources:VGPU: - (existing 1)'."""
    def show(value: object) -> str:
        return '-' if value is None else str(value)

    return '; '.join(
        _('%(what)s: %(want)s (existing %(have)s)') % {
            'what': what, 'want': show(want), 'have': show(have)}
        for what, want, have in differences)


def check_sizes(vcpus: int | None, ram: int | None, disk: int | None,
                ephemeral: int | None = 0, swap: int | None = 0) -> None:
    """Refuse sizes Nova would refuse, before anything is written."""
    for flag, value, low in (('--vcpus', vcpus, 1), ('--ram', ram, 1),
                             ('--disk', disk, 0),
                             ('--ephemeral', ephemeral, 0),
                             ('--swap', swap, 0)):
        if value is None:
            continue
        if value < low:
            raise _error(
                _('%(flag)s %(value)d: give at least %(low)d.'),
                flag=flag, value=value, low=low)
