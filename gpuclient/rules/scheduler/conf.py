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

"""Pure: the nova.conf options gpuclient reads.

Nova defines them in ``nova/conf/scheduler.py`` (``[scheduler]`` and
``[filter_scheduler]``) and ``nova/conf/pci.py`` (``[pci] alias``, parsed
in gpuclient.rules.scheduler.pci); the compute API shows none of them, so
the operator gives them (``--nova-conf``, ``--setting``, ``--alias-map``)
or gpuclient assumes the defaults below. ``load_settings`` layers
defaults < files < options, the files read as oslo.config reads them
(``gpuclient.rules.nova_conf.parse``).
"""

from collections.abc import Iterable
from collections.abc import Mapping
import json
import typing

from gpuclient.i18n import _
from gpuclient.rules.nova_conf import parse
from gpuclient.rules.scheduler import exception
from gpuclient.rules.scheduler import pci

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


def is_true(value: object) -> bool:
    return str(value).strip().lower() in _TRUE


# -- settings ----------------------------------------------------------------

def load_settings(
        conf_text: str | Iterable[tuple[str | None, str | None]] | None = None,
        overrides: Mapping[str, object] | None = None,
        alias_maps: Mapping[str, str] | Iterable[str] | None = ()
) -> dict[str, typing.Any]:
    """Settings: defaults < config files (nova.conf syntax) < options.

    ``conf_text`` is one file's text or a list of (source, text), in the
    order oslo.config would read them (see ``parse.merge_ini``).
    ``overrides`` is {name: value as text} (``--setting``), ``alias_maps`` the
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
    ini = parse.merge_ini(parse.parse_ini(text, source)
                          for source, text in conf_text)
    for key, section in CONF_SECTIONS.items():
        values = ini.get(section, {}).get(key)
        if values:
            settings[key] = _setting_value(key, values[-1])
            sources[key] = 'config'
    for text in ini.get('pci', {}).get('alias', []):
        parsed = pci.alias_from_json(text)
        if parsed:
            aliases[parsed[0]] = parsed[1]
    for text in ini.get('gpuclient', {}).get('alias_map', []):
        name, alias = pci.parse_alias_map(text)
        alias['source'] = 'config'
        aliases[name] = alias
    for key, value in (overrides or {}).items():
        if key not in DEFAULT_SETTINGS:
            raise exception.error(
                _('Unknown setting %(key)s: choose one of %(all)s.'),
                key=key, all=', '.join(sorted(DEFAULT_SETTINGS)))
        settings[key] = _setting_value(key, value)
        sources[key] = 'option'
    if isinstance(alias_maps, dict):
        maps = [pci.alias_target(*pair) for pair in alias_maps.items()]
    else:
        maps = [pci.parse_alias_map(text) for text in alias_maps or ()]
    for name, alias in maps:
        aliases[name] = alias
    settings['aliases'] = aliases
    settings['sources'] = sources
    settings['pci'] = _pci_devices(ini.get('pci', {}))
    settings['libvirt'] = _libvirt(ini.get('libvirt', {}))
    settings['placement'] = _placement(ini)
    return settings


def _placement(
        ini: Mapping[str, Mapping[str, list[str]]]) -> dict[str, typing.Any]:
    """What a placement.conf among the files says of candidate
    generation (Placement's ``placement/conf/workarounds.py`` and
    ``placement.py``, not Nova's: ``gpu check`` reads it where trees are
    wide): ``optimize_for_wide_provider_trees``,
    ``max_allocation_candidates`` and
    ``allocation_candidates_generation_strategy``, Placement's defaults
    (False, -1: no limit, depth-first) when the files do not set them."""
    optimize = ini.get('workarounds', {}).get(
        'optimize_for_wide_provider_trees')
    section = ini.get('placement', {})
    # the values written, then the number they say
    maximum: list[str] | int | None
    maximum = section.get('max_allocation_candidates')
    strategy = section.get('allocation_candidates_generation_strategy')
    try:
        maximum = int(maximum[-1].strip()) if maximum else -1
    except ValueError:
        maximum = -1  # Placement would not start: no limit is known
    return {
        'optimize_for_wide_provider_trees':
            is_true(optimize[-1]) if optimize else False,
        'max_allocation_candidates': maximum,
        'allocation_candidates_generation_strategy':
            strategy[-1].strip() if strategy else 'depth-first',
    }


def _libvirt(section: Mapping[str, list[str]]) -> dict[str, bool | None]:
    """What a nova-compute's ``[libvirt]`` says of live migration (Nova's
    ``nova/conf/libvirt.py``): ``live_migration_permit_post_copy`` as
    written, None when the files do not set it (Nova 34's default:
    False)."""
    values = section.get('live_migration_permit_post_copy')
    return {'live_migration_permit_post_copy':
            is_true(values[-1]) if values else None}


def _pci_devices(section: Mapping[str, list[str]]) -> dict[str, typing.Any]:
    """What a nova-compute's ``[pci]`` says of its devices (Nova's
    ``nova/conf/pci.py``): ``device_specs`` (every ``device_spec``, and
    the old name ``passthrough_whitelist``, JSON objects or lists of
    them), ``report_in_placement`` (Nova's default: false) and ``aliases``
    (the ``alias`` JSON objects as written: their ``device_type``).
    Unreadable JSON is left out (Nova refuses it at start)."""
    specs: list[dict[str, typing.Any]]
    aliases: list[dict[str, typing.Any]]
    specs, aliases = [], []
    for key, into in (('device_spec', specs),
                      ('passthrough_whitelist', specs),
                      ('alias', aliases)):
        for text in section.get(key, []):
            try:
                data = json.loads(text)
            except ValueError:
                continue
            for item in data if isinstance(data, list) else [data]:
                if isinstance(item, dict):
                    into.append(item)
    values = section.get('report_in_placement')
    return {'device_specs': specs, 'aliases': aliases,
            'report_in_placement': is_true(values[-1]) if values else False}


def _setting_value(key: str, text: object) -> bool | int | tuple[str, ...]:
    default = DEFAULT_SETTINGS[key]
    if isinstance(default, bool):
        return is_true(text)
    if isinstance(default, int):
        try:
            number = int(str(text).strip())
        except ValueError:
            number = 0
        if number < 1:
            raise exception.error(
                _('Setting %(key)s=%(value)s: give a positive integer.'),
                key=key, value=text)
        return number
    return tuple(f.strip() for f in str(text).split(',') if f.strip())
