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
``resources_from_request_spec``; ``nova/objects/request_spec.py`` PCI
groups; ``nova/scheduler/request_filter.py`` prefilters;
``nova/scheduler/client/report.py``, microversion 1.36). No I/O: the
command reads the flavor, image, aggregates and settings and passes them
in. Nova's prefilters are functions of their Nova names, run in Nova's
order (``REQUEST_FILTERS``; those not modelled, and why, in
``NOT_MODELLED``).

A request is a dict::

    {'groups': {suffix: group}, 'group_policy': None | 'none' | 'isolate',
     'root_required': set, 'root_forbidden': set, 'limit': int | None,
     'isolated': [{'aggregate', 'uuid', 'traits'}], 'zone_aggregates': [...],
     'tenant_aggregates': [...], 'notes': [str], 'not_covered': [str]}

and a group ``{'resources': {class: amount}, 'required': set,
'forbidden': set, 'member_of': [[uuid, ...]], 'forbidden_aggregates': set,
'origin': str, 'gpu': bool}``; the unsuffixed group has suffix ``''``.
"""

import json
import math
import re
import urllib.parse

from osc_lib import exceptions

from gpuclient.i18n import _
from gpuclient.rules import names
from gpuclient.rules import pools as pools_mod
from gpuclient.rules import specs as specs_mod

MICROVERSION = (1, 36)  # nova.scheduler.client.report.SAME_SUBTREE_VERSION

VCPU = 'VCPU'
PCPU = 'PCPU'
MEMORY_MB = 'MEMORY_MB'
DISK_GB = 'DISK_GB'
COMPUTE_CLASSES = (VCPU, PCPU, MEMORY_MB, DISK_GB)
OWNER_NOVA = 'OWNER_NOVA'
STATUS_DISABLED = 'COMPUTE_STATUS_DISABLED'
ALIAS_SPEC = 'pci_passthrough:alias'
TENANT_KEY = 'filter_tenant_id'
AZ_KEY = 'availability_zone'

# Nova settings the API cannot show. Defaults: what the pools gpuclient
# makes need (isolation, PCI in Placement), Nova's own defaults otherwise
# (and the test cloud's nova.conf).
DEFAULT_FILTERS = (
    'ComputeFilter', 'ComputeCapabilitiesFilter', 'ImagePropertiesFilter',
    'ServerGroupAntiAffinityFilter', 'ServerGroupAffinityFilter',
    'PciPassthroughFilter', 'AggregateInstanceExtraSpecsFilter',
    'AggregateMultiTenancyIsolation', 'NUMATopologyFilter',
)
DEFAULT_SETTINGS = {
    # [scheduler]
    'enable_isolated_aggregate_filtering': True,
    'max_placement_results': 1000,
    'limit_tenants_to_placement_aggregate': False,
    'placement_aggregate_required_for_tenants': False,
    'query_placement_for_image_type_support': False,
    'image_metadata_prefilter': False,
    # [filter_scheduler]
    'pci_in_placement': True,
    'enabled_filters': DEFAULT_FILTERS,
    # every nova-compute is new enough (service version >= 73) for Nova to
    # require OWNER_NOVA (nova.scheduler.request_filter.owner_nova_filter)
    'owner_nova': True,
}
# where each setting lives in nova.conf
CONF_SECTIONS = {
    'enable_isolated_aggregate_filtering': 'scheduler',
    'max_placement_results': 'scheduler',
    'limit_tenants_to_placement_aggregate': 'scheduler',
    'placement_aggregate_required_for_tenants': 'scheduler',
    'query_placement_for_image_type_support': 'scheduler',
    'image_metadata_prefilter': 'scheduler',
    'pci_in_placement': 'filter_scheduler',
    'enabled_filters': 'filter_scheduler',
    'owner_nova': 'gpuclient',
}
_TRUE = ('1', 't', 'true', 'on', 'y', 'yes')
_SUFFIX_RE = re.compile(r'^[a-zA-Z0-9_-]{1,64}$')
_XS_KEY_RE = re.compile(r'^(resources|trait)([a-zA-Z0-9_-]{1,64})?:(.*)$')
_STANDARD_CLASSES = set(names.STANDARD_RESOURCE_CLASSES) | {
    'PCPU', 'MEM_ENCRYPTION_CONTEXT', 'PGPU', 'VGPU', 'VGPU_DISPLAY_HEAD'}

# image property -> trait prefix (request_filter.transform_image_metadata)
_IMAGE_PREFILTER = (
    ('hw_cdrom_bus', 'COMPUTE_STORAGE_BUS'),
    ('hw_disk_bus', 'COMPUTE_STORAGE_BUS'),
    ('hw_video_model', 'COMPUTE_GRAPHICS_MODEL'),
    ('hw_vif_model', 'COMPUTE_NET_VIF_MODEL'),
    ('hw_architecture', 'HW_ARCH'),
    ('hw_emulation_architecture', 'COMPUTE_ARCH'),
    ('hw_viommu_model', 'COMPUTE_VIOMMU'),
)
_MEM_ENCRYPTION_TRAITS = {
    'amd-sev': 'HW_CPU_X86_AMD_SEV',
    'amd-sev-es': 'HW_CPU_X86_AMD_SEV_ES',
    'amd-sev-snp': 'HW_CPU_X86_AMD_SEV_SNP',
    'intel-tdx': 'HW_CPU_X86_INTEL_TDX',
}


def _error(message, **kwargs):
    return exceptions.CommandError(message % kwargs if kwargs else message)


def _bool(value):
    return str(value).strip().lower() in _TRUE


# -- settings ----------------------------------------------------------------

def _conf_error(source, lineno, message):
    """The file and the line number, never the line's text: a nova.conf
    line may hold a password (a database connection URL)."""
    return _error(
        _('%(source)s line %(lineno)d: %(problem)s. Nova would not start '
          'with this file either (oslo.config refuses it): fix the file or '
          'give the settings with --setting.'),
        source=source or _('Nova settings'), lineno=lineno,
        problem=message)


def parse_ini(text, source=None):
    """{section: {key: [values]}} from nova.conf text, as oslo.config reads it.

    The rules of ``oslo_config.iniparser``: ``#`` and ``;`` start a comment
    only in the first column; a line that starts with white space continues
    the value before it (joined with a newline) and a blank line ends it;
    ``key = value`` or ``key: value`` (whichever sign comes first), white
    space around both stripped and one pair of matching quotes around the
    value removed; no inline comments. Section names are compared in lower
    case (``DEFAULT`` stays as it is), keys as written. A key may repeat
    (``[pci] alias`` does): every value is kept, in order. What oslo.config
    refuses is refused here too, naming SOURCE and the line.

    Not done (oslo.config does them when it reads an option, gpuclient
    knows no option types): ``$name`` substitution, deprecated option names
    and groups, and options given on Nova's command line.
    """
    found, section = {}, None
    key, value, key_line = None, [], 0

    def flush():
        if section is None:
            raise _conf_error(source, key_line,
                              _('a setting before any [section]'))
        found[section].setdefault(key, []).append('\n'.join(value))

    # lines as a file opened in text mode gives them (not splitlines(),
    # which also splits at form feeds and other separators)
    for lineno, raw in enumerate(re.split(r'\r\n|\r|\n', text or ''), 1):
        line = raw.rstrip()
        if not line:
            if key is not None:
                flush()
                key, value = None, []
            continue
        if line[0] in ' \t':
            if key is None:
                raise _conf_error(source, lineno,
                                  _('an indented line continues nothing'))
            value.append(line.lstrip())
            continue
        if key is not None:
            flush()
            key, value = None, []
        if line[0] == '[':
            if not line.endswith(']'):
                raise _conf_error(source, lineno,
                                  _('a section must end with ]'))
            if len(line) <= 2:
                raise _conf_error(source, lineno, _('empty section name'))
            name = line[1:-1]
            section = name if name == 'DEFAULT' else name.lower()
            found.setdefault(section, {})
        elif line[0] in '#;':
            continue
        else:
            colon, equal = line.find(':'), line.find('=')
            if colon < 0 and equal < 0:
                raise _conf_error(source, lineno,
                                  _('no "=" or ":" in a setting'))
            cut = equal if colon < 0 or 0 <= equal < colon else colon
            key, text_value = line[:cut].strip(), line[cut + 1:].strip()
            if (text_value and text_value[0] == text_value[-1]
                    and text_value[0] in '"\''):
                text_value = text_value[1:-1]
            if not key:
                raise _conf_error(source, lineno, _('empty key'))
            value, key_line = [text_value], lineno
    if key is not None:
        flush()
    return found


def merge_ini(parsed):
    """Several parsed files as one, as oslo.config reads them.

    PARSED is in the order the files are read (``--config-file`` options,
    then the ``--config-dir`` files): a key's values are those of every
    file, in that order, so a single-valued option takes the last one (the
    later file wins) and a multi-valued one (``[pci] alias``) all of them.
    """
    merged = {}
    for one in parsed:
        for section, keys in one.items():
            into = merged.setdefault(section, {})
            for key, values in keys.items():
                into.setdefault(key, []).extend(values)
    return merged


def conf_dir_files(names):
    """The files oslo.config's ``--config-dir`` reads, in its order: the
    ``*.conf`` names (not hidden ones, as glob), sorted."""
    return sorted(name for name in names
                  if name.endswith('.conf') and not name.startswith('.'))


_ALIAS_MAP_HINT = _('--alias-map %(text)r: give ALIAS=VENDOR:PRODUCT (e.g. '
                    'h100=10de:2331) or ALIAS=RESOURCE_CLASS (e.g. '
                    'a100=CUSTOM_A100).')


def parse_alias_map(text):
    """'ALIAS=VENDOR:PRODUCT|CLASS' -> (alias, {resource_class, traits})."""
    alias, sep, target = str(text or '').partition('=')
    if not sep:
        raise _error(_ALIAS_MAP_HINT, text=text)
    return alias_target(alias, target)


def alias_target(alias, target):
    """ALIAS and 'VENDOR:PRODUCT' or 'CLASS' -> (alias, {resource_class,
    traits, source}): one ``--alias-map`` or ``[gpuclient] alias_map``."""
    alias, target = str(alias or '').strip(), str(target or '').strip()
    if not alias or not target:
        raise _error(_ALIAS_MAP_HINT, text='%s=%s' % (alias, target))
    if re.fullmatch(r'[0-9a-fA-F]{4}:[0-9a-fA-F]{4}', target):
        vendor, product = target.split(':')
        rc = 'CUSTOM_PCI_%s_%s' % (vendor.upper(), product.upper())
    else:
        rc = names.normalize_resource_class(target)
    return alias, {'resource_class': rc, 'traits': set(), 'source': 'option'}


def alias_from_json(text):
    """One nova.conf ``[pci] alias`` JSON -> (name, alias) or None."""
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict) or not data.get('name'):
        return None
    if data.get('resource_class'):
        rc = names.normalize_resource_class(data['resource_class'])
    elif data.get('vendor_id') and data.get('product_id'):
        rc = ('CUSTOM_PCI_%s_%s' % (data['vendor_id'],
                                    data['product_id'])).upper()
    else:
        return None
    traits = set()
    for trait in str(data.get('traits') or '').split(','):
        trait = trait.strip()
        if trait:
            traits.add(trait.upper() if trait.upper().startswith(
                names.CUSTOM_PREFIX) or trait.isupper()
                else names.normalize_trait(trait))
    return data['name'], {'resource_class': rc, 'traits': traits,
                          'source': 'config'}


def load_settings(conf_text=None, overrides=None, alias_maps=()):
    """Settings: defaults < config files (nova.conf syntax) < options.

    ``conf_text`` is one file's text or a list of (source, text), in the
    order oslo.config would read them (see merge_ini). ``overrides`` is
    {name: value as text} (``--setting``), ``alias_maps`` the
    ``--alias-map`` options: {alias: target} as the option parses them,
    or 'ALIAS=TARGET' texts. Returns a dict like DEFAULT_SETTINGS plus
    ``aliases`` ({name: {resource_class, traits, source}}) and ``sources``
    ({name: 'default' | 'config' | 'option'}).
    """
    settings = dict(DEFAULT_SETTINGS)
    sources = {key: 'default' for key in settings}
    aliases = {}
    if conf_text is None or isinstance(conf_text, str):
        conf_text = [(None, conf_text)]
    ini = merge_ini(parse_ini(text, source) for source, text in conf_text)
    for key, section in CONF_SECTIONS.items():
        values = ini.get(section, {}).get(key)
        if values:
            settings[key] = _setting_value(key, values[-1])
            sources[key] = 'config'
    for text in ini.get('pci', {}).get('alias', []):
        parsed = alias_from_json(text)
        if parsed:
            aliases[parsed[0]] = parsed[1]
    for text in ini.get('gpuclient', {}).get('alias_map', []):
        name, alias = parse_alias_map(text)
        alias['source'] = 'config'
        aliases[name] = alias
    for key, value in (overrides or {}).items():
        if key not in DEFAULT_SETTINGS:
            raise _error(
                _('Unknown setting %(key)s: choose one of %(all)s.'),
                key=key, all=', '.join(sorted(DEFAULT_SETTINGS)))
        settings[key] = _setting_value(key, value)
        sources[key] = 'option'
    if isinstance(alias_maps, dict):
        maps = [alias_target(*pair) for pair in alias_maps.items()]
    else:
        maps = [parse_alias_map(text) for text in alias_maps or ()]
    for name, alias in maps:
        aliases[name] = alias
    settings['aliases'] = aliases
    settings['sources'] = sources
    return settings


def _setting_value(key, text):
    default = DEFAULT_SETTINGS[key]
    if isinstance(default, bool):
        return _bool(text)
    if isinstance(default, int):
        try:
            number = int(str(text).strip())
        except ValueError:
            number = 0
        if number < 1:
            raise _error(_('Setting %(key)s=%(value)s: give a positive '
                           'integer.'), key=key, value=text)
        return number
    return tuple(f.strip() for f in str(text).split(',') if f.strip())


def pool_aliases(pools):
    """{alias: {resource_class, traits, pool}} from passthrough pools."""
    found = {}
    for pool in (pools or {}).values():
        alias = pool.get('alias')
        rc = pool.get('resource_class')
        if not rc and pool.get('pci_id'):
            vendor, _sep, product = pool['pci_id'].partition(':')
            rc = 'CUSTOM_PCI_%s_%s' % (vendor.upper(), product.upper())
        if alias and rc:
            found[alias] = {'resource_class': rc, 'traits': set(),
                            'source': 'pool %s' % pool['name']}
    return found


def resolve_alias(name, settings, pools):
    """How Nova turns an alias into a Placement group (class, traits)."""
    alias = settings.get('aliases', {}).get(name)
    if alias is None:
        alias = pool_aliases(pools).get(name)
    if alias is None:
        raise _error(
            _('The flavor asks for PCI alias %(alias)s, which no GPU pool '
              'describes: tell gpuclient what nova.conf [pci] alias says '
              'with --alias-map %(alias)s=VENDOR:PRODUCT (or '
              '%(alias)s=RESOURCE_CLASS), or with --nova-conf pointing at '
              'a nova.conf.'), alias=name)
    return alias


# -- building ----------------------------------------------------------------

def _new_group(origin, gpu=False):
    return {'resources': {}, 'required': set(), 'forbidden': set(),
            'member_of': [], 'forbidden_aggregates': set(),
            'origin': origin, 'gpu': gpu}


def _valid_class(rc):
    return rc.startswith(names.CUSTOM_PREFIX) or rc in _STANDARD_CLASSES


class _Builder:
    def __init__(self, settings):
        self.settings = settings
        self.groups = {}
        self.group_policy = None
        self.root_required = set()
        self.root_forbidden = set()
        self.notes = []
        self.not_covered = []
        # what the aggregate prefilters found (the request's isolated,
        # tenant_aggregates and zone_aggregates)
        self.isolated = []
        self.tenant = []
        self.zoned = []
        # Nova's RequestFilterFailed, raised once every prefilter has run
        self.failures = []

    def group(self, suffix, origin=None, gpu=False):
        if suffix not in self.groups:
            self.groups[suffix] = _new_group(
                origin or (_('flavor group %s') % suffix if suffix
                           else _('flavor')), gpu)
        return self.groups[suffix]

    def add_resource(self, rc, amount, suffix=''):
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

    def add_trait(self, trait, value, suffix=''):
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

    def merged(self):
        total = {}
        for group in self.groups.values():
            for rc, amount in group['resources'].items():
                total[rc] = total.get(rc, 0) + amount
        return total


def _props(image):
    return dict(image or {})


def _pair(specs, image, key, prefix='hw'):
    return specs.get('%s:%s' % (prefix, key)), _props(image).get(
        '%s_%s' % (prefix, key))


def _unique(specs, image, key, prefix='hw'):
    flavor_value, image_value = _pair(specs, image, key, prefix)
    if flavor_value and image_value and str(flavor_value) != str(
            image_value):
        raise _error(
            _('The flavor has %(prefix)s:%(key)s=%(fv)s and the image '
              '%(prefix)s_%(key)s=%(iv)s: Nova refuses to boot this '
              'combination.'), prefix=prefix, key=key, fv=flavor_value,
            iv=image_value)
    return flavor_value or image_value


def parse_cpu_spec(text):
    """Nova's CPU set syntax ('0-3,^2') -> set of ints."""
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


def _cpu_policy(specs, image):
    flavor_policy, image_policy = _pair(specs, image, 'cpu_policy')
    if flavor_policy in ('dedicated', 'mixed', 'shared'):
        return flavor_policy
    if image_policy in ('dedicated', 'mixed', 'shared'):
        return image_policy
    return None


def _thread_policy(specs, image):
    flavor_policy, image_policy = _pair(specs, image, 'cpu_thread_policy')
    if flavor_policy in (None, 'prefer'):
        return flavor_policy or image_policy
    return flavor_policy


def _parse_alias_requests(value):
    """'a:1, b:2' -> [(alias, count)] in order (one PCI request each)."""
    found = []
    for part in str(value or '').split(','):
        part = part.strip()
        if not part:
            continue
        name, sep, count = part.rpartition(':')
        if not sep or not name:
            raise _error(_('Invalid %(key)s value %(value)r: give '
                           'ALIAS:COUNT[,ALIAS:COUNT].'),
                         key=ALIAS_SPEC, value=value)
        try:
            number = int(count)
        except ValueError:
            raise _error(_('Invalid %(key)s value %(value)r: the count '
                           'must be an integer.'),
                         key=ALIAS_SPEC, value=value) from None
        found.append((name.strip(), number))
    return found


def _pci_suffix(alias, index, taken):
    base = re.sub(r'[^a-zA-Z0-9_-]', '_', alias)[:50]
    suffix = 'pci-%s-%d' % (base, index)
    while suffix in taken:
        suffix += '_'
    return suffix


def _check_alias_total(value, requests):
    """Refuse a flavor asking for more than names.MAX_GPUS PCI devices."""
    total = sum(count for _alias, count in requests if count > 0)
    if total > names.MAX_GPUS:
        raise _error(
            _('The flavor asks for %(total)d PCI devices (%(key)s=%(value)s), '
              'and Nova asks Placement for each device in its own request '
              'group; gpuclient translates at most %(max)d GPUs per '
              'instance, more than any server holds. Fix the flavor\'s '
              '%(key)s extra spec (counts adding up to %(max)d or less).'),
            total=total, key=ALIAS_SPEC, value=value, max=names.MAX_GPUS)


def _add_pci_groups(builder, specs, settings, pools):
    requests = _parse_alias_requests(specs.get(ALIAS_SPEC))
    if not requests:
        return
    _check_alias_total(specs.get(ALIAS_SPEC), requests)
    if not settings.get('pci_in_placement'):
        builder.not_covered.append(
            _('PCI devices (%s): [filter_scheduler] pci_in_placement is '
              'off, so Placement does not see them and only '
              'PciPassthroughFilter checks them.') % specs[ALIAS_SPEC])
        return
    for alias, count in requests:
        resolved = resolve_alias(alias, settings, pools)
        for index in range(count):
            suffix = _pci_suffix(alias, index, builder.groups)
            group = builder.group(
                suffix, _('PCI alias %(alias)s, device %(n)d')
                % {'alias': alias, 'n': index + 1}, gpu=True)
            group['resources'][resolved['resource_class']] = 1
            group['required'] |= set(resolved.get('traits') or ())
            group['pci_alias'] = alias


def _translate_pinning(builder, flavor, specs, image):
    policy = _cpu_policy(specs, image)
    pcpus = None
    if policy == 'dedicated':
        pcpus = int(flavor.get('vcpus') or 0)
    elif policy == 'mixed':
        mask = specs.get('hw:cpu_dedicated_mask')
        vcpus = int(flavor.get('vcpus') or 0)
        if mask:
            if mask.strip().startswith('^'):
                dedicated = parse_cpu_spec('0-%d,%s' % (vcpus - 1, mask))
            else:
                dedicated = parse_cpu_spec(mask)
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
    trait = {'isolate': 'forbidden', 'require': 'required'}.get(
        _thread_policy(specs, image))
    if trait:
        builder.add_trait('HW_CPU_HYPERTHREADING', trait)


def _translate_features(builder, specs, image):
    """ResourceRequest._translate_* (traits added to the unsuffixed group)."""
    props = _props(image)
    # memory encryption
    flavor_enc, image_enc = _pair(specs, image, 'mem_encryption')
    if (flavor_enc is not None and _bool(flavor_enc)) or (
            image_enc is not None and _bool(image_enc)):
        model = (_pair(specs, image, 'mem_encryption_model')[1]
                 or _pair(specs, image, 'mem_encryption_model')[0]
                 or 'amd-sev')
        builder.add_resource('MEM_ENCRYPTION_CONTEXT', 1)
        trait = _MEM_ENCRYPTION_TRAITS.get(model)
        if trait:
            builder.add_trait(trait, 'required')
    # persistent memory
    labels = [label.strip() for label in
              str(specs.get('hw:pmem') or '').split(',') if label.strip()]
    amounts = {}
    for label in labels:
        rc = names.normalize_resource_class('PMEM_NAMESPACE_' + label)
        amounts[rc] = amounts.get(rc, 0) + 1
    for rc, amount in amounts.items():
        builder.add_resource(rc, amount)
    # vTPM
    version = _unique(specs, image, 'tpm_version')
    if version:
        model = _unique(specs, image, 'tpm_model') or 'tpm-tis'
        builder.add_trait('COMPUTE_SECURITY_TPM_CRB' if model == 'tpm-crb'
                          else 'COMPUTE_SECURITY_TPM_TIS', 'required')
        builder.add_trait('COMPUTE_SECURITY_TPM_2_0' if version == '2.0'
                          else 'COMPUTE_SECURITY_TPM_1_2', 'required')
    # PCI NUMA policy: only socket has a trait
    flavor_numa, image_numa = _pair(specs, image, 'pci_numa_affinity_policy')
    if (flavor_numa or image_numa) == 'socket':
        builder.add_trait('COMPUTE_SOCKET_PCI_NUMA_AFFINITY', 'required')
    # secure boot
    if _unique(specs, image, 'secure_boot', prefix='os') == 'required':
        builder.add_trait('COMPUTE_SECURITY_UEFI_SECURE_BOOT', 'required')
    # maxphysaddr
    mode = _unique(specs, image, 'maxphysaddr_mode')
    if mode == 'passthrough':
        builder.add_trait('COMPUTE_ADDRESS_SPACE_PASSTHROUGH', 'required')
    elif mode == 'emulate':
        builder.add_trait('COMPUTE_ADDRESS_SPACE_EMULATED', 'required')
    # stateless firmware (UEFI only)
    stateless = props.get('hw_firmware_stateless')
    if (stateless is not None and props.get('hw_firmware_type') == 'uefi'
            and _bool(stateless)):
        builder.add_trait('COMPUTE_SECURITY_STATELESS_FIRMWARE', 'required')


def _agg(aggregate, key, default=None):
    if isinstance(aggregate, dict):
        return aggregate.get(key, default)
    return getattr(aggregate, key, default)


def _metadata(aggregate):
    return dict(_agg(aggregate, 'metadata') or {})


def isolated_aggregates(aggregates, required_traits):
    """request_filter.isolate_aggregates: aggregates that require a trait
    the request does not ask for (the ``trait:X=required`` metadata)."""
    found = []
    for aggregate in aggregates:
        missing = sorted(
            key[len('trait:'):] for key, value in _metadata(aggregate).items()
            if key.startswith('trait:') and value == 'required'
            and key[len('trait:'):] not in required_traits)
        if missing:
            found.append({'aggregate': _agg(aggregate, 'name'),
                          'uuid': _agg(aggregate, 'uuid'),
                          'traits': missing,
                          'hosts': sorted(_agg(aggregate, 'hosts') or [])})
    return found


def tenant_aggregates(aggregates, project_id):
    """request_filter.require_tenant_aggregate's aggregates."""
    found = []
    for aggregate in aggregates:
        metadata = _metadata(aggregate)
        if project_id not in metadata.values():
            continue
        if any(key.startswith(TENANT_KEY) for key in metadata):
            found.append(aggregate)
    return found


def zone_aggregates(aggregates, zone):
    return [a for a in aggregates
            if _metadata(a).get(AZ_KEY) == zone
            or _agg(a, 'availability_zone') == zone]


def _aggregate_info(aggregate):
    return {'aggregate': _agg(aggregate, 'name'),
            'uuid': _agg(aggregate, 'uuid'),
            'hosts': sorted(_agg(aggregate, 'hosts') or [])}


# -- prefilters (nova/scheduler/request_filter.py) ---------------------------
#
# Before asking Placement, Nova's scheduler runs every function of
# request_filter.ALL_REQUEST_FILTERS, in order, on the RequestSpec
# (process_reqspec). Here each one gpuclient models is a function of the
# same name taking CTX, the plain inputs (prefilter_context), and SPEC,
# the request being built (a _Builder); like Nova's, it returns True when
# it applied. REQUEST_FILTERS lists them in Nova's order, NOT_MODELLED
# names the others and why.

def prefilter_context(flavor=None, image=None, settings=None, aggregates=(),
                      project_id=None, zone=None, boot_from_volume=False):
    """The plain inputs of the prefilters, as one dict.

    ``flavor`` as the compute API shows it (``specs`` are its
    extra_specs), ``image`` as Glance shows it (properties at top level),
    ``settings`` as load_settings returns them (or a plain dict: a missing
    setting is off), ``aggregates`` every host aggregate, ``project_id``
    and ``zone`` those of the server.
    """
    flavor = dict(flavor or {})
    return {'flavor': flavor,
            'specs': dict(flavor.get('extra_specs') or {}),
            'image': _props(image),
            'settings': settings if settings is not None else {},
            'aggregates': list(aggregates or ()),
            'project_id': project_id,
            'zone': zone,
            'boot_from_volume': bool(boot_from_volume)}


def _require_aggregates(spec, found):
    """Destination.require_aggregates: one more member_of (AND)."""
    spec.group('')['member_of'].append(sorted(a['uuid'] for a in found))


def require_tenant_aggregate(ctx, spec):
    """The project's aggregates (``filter_tenant_id*`` metadata) when
    [scheduler] limit_tenants_to_placement_aggregate is on; none, with
    placement_aggregate_required_for_tenants on, fails the request."""
    settings, project_id = ctx['settings'], ctx['project_id']
    if not (settings.get('limit_tenants_to_placement_aggregate')
            and project_id):
        return False
    spec.tenant = [_aggregate_info(a)
                   for a in tenant_aggregates(ctx['aggregates'], project_id)]
    if spec.tenant:
        _require_aggregates(spec, spec.tenant)
    elif settings.get('placement_aggregate_required_for_tenants'):
        spec.failures.append(_error(
            _('Project %s is in no aggregate and [scheduler] '
              'placement_aggregate_required_for_tenants is on: Nova '
              'answers "No hosts available for tenant".') % project_id))
    return True


def map_az_to_placement_aggregate(ctx, spec):
    """The aggregates of the requested availability zone."""
    zone = ctx['zone']
    if not zone:
        return False
    spec.zoned = [_aggregate_info(a)
                  for a in zone_aggregates(ctx['aggregates'], zone)]
    if spec.zoned:
        _require_aggregates(spec, spec.zoned)
    return True


def require_image_type_support(ctx, spec):
    """COMPUTE_IMAGE_TYPE_<disk_format> on the root, with [scheduler]
    query_placement_for_image_type_support on, unless booting from
    volume."""
    disk_format = ctx['image'].get('disk_format')
    if not (ctx['settings'].get('query_placement_for_image_type_support')
            and not ctx['boot_from_volume'] and disk_format):
        return False
    spec.root_required.add(
        'COMPUTE_IMAGE_TYPE_%s' % str(disk_format).upper())
    return True


def compute_status_filter(ctx, spec):
    """Never a disabled compute: !COMPUTE_STATUS_DISABLED on the root."""
    spec.root_forbidden.add(STATUS_DISABLED)
    return True


def isolate_aggregates(ctx, spec):
    """Not in the aggregates requiring a trait the request does not ask
    for, with [scheduler] enable_isolated_aggregate_filtering on."""
    if not ctx['settings'].get('enable_isolated_aggregate_filtering'):
        return False
    required = set()
    for group in spec.groups.values():
        required |= group['required']
    spec.isolated = isolated_aggregates(ctx['aggregates'], required)
    if spec.isolated:
        spec.group('')['forbidden_aggregates'] |= {
            a['uuid'] for a in spec.isolated}
    return True


def transform_image_metadata(ctx, spec):
    """Image properties as root traits (_IMAGE_PREFILTER), with
    [scheduler] image_metadata_prefilter on."""
    if not ctx['settings'].get('image_metadata_prefilter'):
        return False
    props = ctx['image']
    for key, prefix in _IMAGE_PREFILTER:
        if props.get(key):
            value = str(props[key]).replace('-', '_').upper()
            spec.root_required.add('%s_%s' % (prefix, value))
    return True


def accelerators_filter(ctx, spec):
    """COMPUTE_ACCELERATORS for a flavor with a Cyborg device profile."""
    profile = ctx['specs'].get('accel:device_profile')
    if profile:
        spec.root_required.add('COMPUTE_ACCELERATORS')
        spec.not_covered.append(
            _('accel:device_profile=%s: the request groups of a Cyborg '
              'device profile are not translated.') % profile)
    return True


def packed_virtqueue_filter(ctx, spec):
    """COMPUTE_NET_VIRTIO_PACKED for hw:virtio_packed_ring (the flavor's
    value, else the image's)."""
    flavor_packed, image_packed = _pair(ctx['specs'], ctx['image'],
                                        'virtio_packed_ring')
    if (flavor_packed is not None and _bool(flavor_packed)) or (
            flavor_packed is None and image_packed is not None
            and _bool(image_packed)):
        spec.root_required.add('COMPUTE_NET_VIRTIO_PACKED')
    return True


def ephemeral_encryption_filter(ctx, spec):
    """COMPUTE_EPHEMERAL_ENCRYPTION (and _<format>) for an encrypted
    ephemeral disk asked for by the flavor or the image."""
    specs, image = ctx['specs'], ctx['image']
    flavor_eph, image_eph = _pair(specs, image, 'ephemeral_encryption')
    if not ((flavor_eph is not None and _bool(flavor_eph)) or (
            image_eph is not None and _bool(image_eph))):
        return False
    spec.root_required.add('COMPUTE_EPHEMERAL_ENCRYPTION')
    eph_format = _unique(specs, image, 'ephemeral_encryption_format')
    if eph_format:
        spec.root_required.add(
            'COMPUTE_EPHEMERAL_ENCRYPTION_%s' % eph_format.upper())
    return True


def virtio_sound_filter(ctx, spec):
    """COMPUTE_SOUND_MODEL_VIRTIO for a virtio sound device."""
    if _unique(ctx['specs'], ctx['image'], 'sound_model') != 'virtio':
        return False
    spec.root_required.add('COMPUTE_SOUND_MODEL_VIRTIO')
    return True


def tpm_secret_security_filter(ctx, spec):
    """COMPUTE_SECURITY_TPM_SECRET_SECURITY_<hw:tpm_secret_security,
    user by default> for a vTPM."""
    specs = ctx['specs']
    if not _unique(specs, ctx['image'], 'tpm_version'):
        return False
    security = specs.get('hw:tpm_secret_security') or 'user'
    spec.root_required.add(
        'COMPUTE_SECURITY_TPM_SECRET_SECURITY_%s' % security.upper())
    return True


def owner_nova_filter(ctx, spec):
    """OWNER_NOVA on the root and on every PCI alias group, when every
    nova-compute reports it (the ``owner_nova`` setting)."""
    if not ctx['settings'].get('owner_nova'):
        return False
    spec.root_required.add(OWNER_NOVA)
    for group in spec.groups.values():
        if group.get('pci_alias'):
            group['required'].add(OWNER_NOVA)
    return True


# request_filter.ALL_REQUEST_FILTERS, in Nova's order, without NOT_MODELLED
REQUEST_FILTERS = (
    require_tenant_aggregate,
    map_az_to_placement_aggregate,
    require_image_type_support,
    compute_status_filter,
    isolate_aggregates,
    transform_image_metadata,
    accelerators_filter,
    packed_virtqueue_filter,
    ephemeral_encryption_filter,
    virtio_sound_filter,
    tpm_secret_security_filter,
    owner_nova_filter,
)
# (Nova's name, why gpuclient leaves it out), in Nova's order
NOT_MODELLED = (
    ('routed_networks_filter',
     _('needs the requested networks and ports, which a flavor and an '
       'image do not say (and Neutron segment aggregates)')),
    ('remote_managed_ports_filter',
     _('needs the requested ports (their VNIC type remote-managed), '
       'which a flavor and an image do not say')),
)
# Nova 34's request_filter.ALL_REQUEST_FILTERS by name: REQUEST_FILTERS
# and NOT_MODELLED together, in its order
NOVA_REQUEST_FILTERS = (
    'require_tenant_aggregate',
    'map_az_to_placement_aggregate',
    'require_image_type_support',
    'compute_status_filter',
    'isolate_aggregates',
    'transform_image_metadata',
    'accelerators_filter',
    'packed_virtqueue_filter',
    'routed_networks_filter',
    'remote_managed_ports_filter',
    'ephemeral_encryption_filter',
    'virtio_sound_filter',
    'tpm_secret_security_filter',
    'owner_nova_filter',
)


def process_request(ctx, spec):
    """request_filter.process_reqspec: REQUEST_FILTERS, in order, on SPEC.

    A prefilter's failure (Nova's RequestFilterFailed) is raised once all
    have run: a flavor/image conflict a later one finds is refused first,
    as Nova's API refuses it before the scheduler runs.
    """
    for prefilter in REQUEST_FILTERS:
        prefilter(ctx, spec)
    if spec.failures:
        raise spec.failures[0]


def _finish(builder, ctx, suffixed_from_flavor):
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


def flavor_disk(flavor, boot_from_volume=False):
    """DISK_GB as Nova counts it: root (unless BFV) + ephemeral + swap."""
    swap = int(flavor.get('swap') or 0)
    disk = int(flavor.get('OS-FLV-EXT-DATA:ephemeral',
                          flavor.get('ephemeral', 0)) or 0)
    disk += int(math.ceil(swap / 1024.0))
    if not boot_from_volume:
        disk += int(flavor.get('disk') or 0)
    return disk


def build(flavor, image=None, settings=None, pools=None, aggregates=(),
          project_id=None, zone=None, boot_from_volume=False):
    """The allocation-candidates request Nova 34 sends for a server.

    ``flavor`` as the compute API shows it (vcpus, ram, disk,
    OS-FLV-EXT-DATA:ephemeral, swap, extra_specs); ``image`` as Glance
    shows it (properties at top level); ``aggregates`` every host
    aggregate (SDK resources or dicts with name, uuid, hosts, metadata,
    availability_zone); ``pools`` ({name: pool}) resolve PCI aliases.
    """
    settings = settings or load_settings()
    ctx = prefilter_context(flavor, image, settings, aggregates, project_id,
                            zone, boot_from_volume)
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
    for key, value in sorted(_props(image).items()):
        if str(key).startswith('trait:') and str(value) == 'required':
            builder.add_trait(key[len('trait:'):], 'required')
    _translate_pinning(builder, flavor, specs, image)
    # PCI aliases: one group per device (RequestSpec.requested_resources)
    _add_pci_groups(builder, specs, settings, pools)
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
    process_request(ctx, builder)
    _mark_gpu_groups(builder.groups, pools)
    return _finish(builder, ctx, suffixed_from_flavor)


def per_device_classes(pools=None):
    """Classes offered one device per provider (not on the root)."""
    found = {'VGPU', 'PGPU'}
    for pool in (pools or {}).values():
        if pool.get('mode') != pools_mod.BAREMETAL and pool.get(
                'resource_class'):
            found.add(pool['resource_class'])
    return found


def is_per_device(rc, pools=None):
    return rc.startswith('CUSTOM_PCI_') or rc in per_device_classes(pools)


def check_resource_amounts(resources, pools=None):
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
            raise _error(
                _('--resource %(rc)s=%(amount)d: Placement takes amounts up '
                  'to %(max)d. Give a smaller amount.'),
                rc=rc, amount=amount, max=names.MAX_AMOUNT)
        if specs_mod.is_gpu_class(rc, pool_classes) and (
                amount > names.MAX_GPUS):
            raise _error(
                _('--resource %(rc)s=%(amount)d: %(rc)s is a GPU class and '
                  'an instance has at most %(max)d GPUs. Give an amount '
                  'from 1 to %(max)d.'),
                rc=rc, amount=amount, max=names.MAX_GPUS)
        if is_per_device(rc, pools) and amount > 0:
            groups += amount
    if groups > names.MAX_GPUS:
        raise _error(
            _('--resource: %(groups)d devices of per-device classes '
              '(CUSTOM_PCI_*, VGPU, PGPU, the classes of passthrough, vgpu '
              'and mig pools), one Placement request group each as Nova '
              'asks for them; at most %(max)d GPUs per instance. Ask for '
              '%(max)d or fewer in all.'),
            groups=groups, max=names.MAX_GPUS)


def from_resources(resources, required=(), settings=None, pools=None,
                   aggregates=(), project_id=None, zone=None):
    """``--resource RC=N`` and ``--required TRAIT``, as Nova would send.

    A per-device class (``CUSTOM_PCI_*``, ``VGPU``, the class of a
    passthrough/vgpu/mig pool) becomes N single-unit groups, as Nova does
    for PCI aliases; other classes and the traits go to the unsuffixed
    group.
    """
    settings = settings or load_settings()
    resources = [(names.normalize_resource_class(rc), amount)
                 for rc, amount in resources]
    check_resource_amounts(resources, pools)
    builder = _Builder(settings)
    devices = {}
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
    ctx = prefilter_context(settings=settings, aggregates=aggregates,
                            project_id=project_id, zone=zone)
    process_request(ctx, builder)
    _mark_gpu_groups(builder.groups, pools)
    return _finish(builder, ctx, 0)


def _mark_gpu_groups(groups, pools):
    pool_classes = {p.get('resource_class') for p in (pools or {}).values()}
    pool_classes.discard(None)
    for group in groups.values():
        if any(specs_mod.is_gpu_class(rc, pool_classes)
               for rc in group['resources']):
            group['gpu'] = True


def gpu_classes(request):
    """Resource classes of the GPU groups (and GPU classes unsuffixed)."""
    found = []
    for group in request['groups'].values():
        if group['gpu']:
            for rc in group['resources']:
                if rc not in COMPUTE_CLASSES and rc not in found:
                    found.append(rc)
    return found


# -- the query ---------------------------------------------------------------

def group_params(suffix, group):
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


def query_params(request):
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


def querystring(request):
    return urllib.parse.urlencode(query_params(request))


def copy(request):
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


def describe(request):
    """{label: text} of the groups, for display."""
    shown = {}
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
