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

"""Pure: PCI aliases, and the request groups of a flavor's PCI devices.

After Nova 34's ``nova/pci/request.py`` (``[pci] alias`` JSON, the
flavor's ``pci_passthrough:alias`` extra spec) and
``nova/objects/request_spec.py`` (with ``[filter_scheduler]
pci_in_placement`` on, one single-device request group per device). An
alias Nova's nova.conf defines, gpuclient learns from ``[pci] alias``,
``[gpuclient] alias_map``, ``--alias-map`` or a passthrough pool.
"""

from __future__ import annotations

from collections.abc import Container
from collections.abc import Mapping
import json
import re
import typing

from osc_lib import exceptions

from gpuclient.i18n import _
from gpuclient.rules import placement_names as names
from gpuclient.rules import pools as pools_mod
from gpuclient.rules.scheduler import exception

if typing.TYPE_CHECKING:
    from gpuclient.rules.scheduler import request_spec

ALIAS_SPEC = 'pci_passthrough:alias'
# the numa_policy of a [pci] alias that says none (nova/pci/request.py)
LEGACY = 'legacy'


_ALIAS_MAP_HINT = _('--alias-map %(text)r: give ALIAS=VENDOR:PRODUCT (e.g. '
                    'h100=10de:2331) or ALIAS=RESOURCE_CLASS (e.g. '
                    'a100=CUSTOM_A100).')


def parse_alias_map(text: str | None) -> tuple[str, dict[str, typing.Any]]:
    """'ALIAS=VENDOR:PRODUCT|CLASS' -> (alias, {resource_class, traits})."""
    alias, sep, target = str(text or '').partition('=')
    if not sep:
        raise exception.error(_ALIAS_MAP_HINT, text=text)
    return alias_target(alias, target)


def alias_target(alias: str | None,
                 target: str | None) -> tuple[str, dict[str, typing.Any]]:
    """ALIAS and 'VENDOR:PRODUCT' or 'CLASS' -> (alias, {resource_class,
    traits, source}): one ``--alias-map`` or ``[gpuclient] alias_map``."""
    alias, target = str(alias or '').strip(), str(target or '').strip()
    if not alias or not target:
        raise exception.error(_ALIAS_MAP_HINT, text='%s=%s' % (alias, target))
    if re.fullmatch(r'[0-9a-fA-F]{4}:[0-9a-fA-F]{4}', target):
        vendor, product = target.split(':')
        rc = 'CUSTOM_PCI_%s_%s' % (vendor.upper(), product.upper())
    else:
        rc = names.normalize_resource_class(target)
    return alias, {'resource_class': rc, 'traits': set(), 'source': 'option'}


def alias_from_json(text: str) -> tuple[str, dict[str, typing.Any]] | None:
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
    found: dict[str, typing.Any] = {
        'resource_class': rc, 'traits': traits, 'source': 'config',
        # Nova's get_alias_from_config: an alias without numa_policy is
        # legacy
        'numa_policy': str(data.get('numa_policy') or LEGACY).lower()}
    if data.get('device_type'):
        found['device_type'] = data['device_type']
    if data.get('live_migratable') is not None:
        found['live_migratable'] = str(
            data['live_migratable']).strip().lower() in ('yes', 'true', '1')
    return data['name'], found


def alias_policy(
        extra_specs: Mapping[str, str] | None,
        aliases: Mapping[str, Mapping[str, typing.Any]] | None) -> str | None:
    """The PCI NUMA affinity policy Nova gives the devices a flavor asks
    when neither the flavor nor the image sets one
    (``_translate_alias_to_requests``: the flavor's or image's policy, else
    the alias's ``numa_policy``, legacy when the alias says none): that of
    its aliases in ALIASES (``settings['aliases']``; a ``numa_policy``
    only where nova.conf defined the alias). None when not known: an
    alias from a pool or ``--alias-map`` (no nova.conf line read), or
    aliases of different policies (each device request has its own)."""
    names = [name for name, count in parse_alias_requests(
        (extra_specs or {}).get(ALIAS_SPEC)) if count > 0]
    policies = {((aliases or {}).get(name) or {}).get('numa_policy')
                for name in names}
    if len(policies) != 1 or None in policies:
        return None
    return policies.pop()


def pool_aliases(pools: Mapping[str, Mapping[str, typing.Any]] | None
                 ) -> dict[str, dict[str, typing.Any]]:
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


# the class Nova's PCI-in-Placement gives a device of no resource_class
_PCI_CLASS = re.compile(r'^CUSTOM_PCI_([0-9A-F]{4})_([0-9A-F]{4})$')


def _alias_id(name: str, pools: Mapping[str, Mapping[str, typing.Any]],
              aliases: Mapping[str, Mapping[str, typing.Any]]) -> str | None:
    """The PCI ID (``10de:2331``) of the whole GPUs alias NAME gets, or
    None: nova.conf's alias (or ``--alias-map``'s) by its class, when the
    class names the ID; else the passthrough pools of that alias, when
    they name one ID. An alias of VFs has none."""
    given = aliases.get(name)
    if given is not None:
        if given.get('device_type') == 'type-VF':
            return None
        match = _PCI_CLASS.match(str(given.get('resource_class') or ''))
        if match:
            return '%s:%s' % (match.group(1).lower(),
                              match.group(2).lower())
    ids = {pool['pci_id'] for pool in pools.values()
           if pool.get('alias') == name and pool.get('pci_id')
           and pool.get('mode') == pools_mod.PASSTHROUGH}
    return ids.pop() if len(ids) == 1 else None


def counted_ids(host: str, pools: Mapping[str, Mapping[str, typing.Any]],
                extra_specs: Mapping[str, str] | None = None,
                aliases: Mapping[str, Mapping[str, typing.Any]] | None = None
                ) -> frozenset[str] | None:
    """The PCI IDs (``vendor:product``) of the whole GPUs a flavor's
    devices are on HOST, whose cells ``numa_gpus`` counts
    (``rules.host_facts.scheduling``), or None when that is not known.
    The flavor known (its EXTRA_SPECS): the IDs of the aliases it asks
    (ALIASES: ``settings['aliases']``, then POOLS), None when one has none
    or it asks no device. Else (``gpu capacity list``, whose host facts
    serve every flavor): the PCI ID of HOST's passthrough pools, when
    they name one."""
    if extra_specs is not None:
        try:
            asked = [alias for alias, count in parse_alias_requests(
                extra_specs.get(ALIAS_SPEC)) if count > 0]
        except exceptions.CommandError:
            return None
        found = {_alias_id(alias, pools, aliases or {}) for alias in asked}
        if not found or None in found:
            return None
        return frozenset(typing.cast('set[str]', found))
    ids = {pool['pci_id'] for pool in pools.values()
           if pool.get('mode') == pools_mod.PASSTHROUGH and pool.get('pci_id')
           and host in (pool.get('hosts') or ())}
    return frozenset(ids) if len(ids) == 1 else None


def resolve_alias(name: str, settings: Mapping[str, typing.Any],
                  pools: Mapping[str, Mapping[str, typing.Any]] | None
                  ) -> dict[str, typing.Any]:
    """How Nova turns an alias into a Placement group (class, traits)."""
    alias = settings.get('aliases', {}).get(name)
    if alias is None:
        alias = pool_aliases(pools).get(name)
    if alias is None:
        raise exception.error(
            _('The flavor asks for PCI alias %(alias)s, which no GPU pool '
              'describes: tell gpuclient what nova.conf [pci] alias says '
              'with --alias-map %(alias)s=VENDOR:PRODUCT (or '
              '%(alias)s=RESOURCE_CLASS), or with --nova-conf pointing at '
              'a nova.conf.'), alias=name)
    return alias


def parse_alias_requests(value: str | None) -> list[tuple[str, int]]:
    """'a:1, b:2' -> [(alias, count)] in order (one PCI request each)."""
    found = []
    for part in str(value or '').split(','):
        part = part.strip()
        if not part:
            continue
        name, sep, count = part.rpartition(':')
        if not sep or not name:
            raise exception.error(
                _('Invalid %(key)s value %(value)r: give '
                  'ALIAS:COUNT[,ALIAS:COUNT].'), key=ALIAS_SPEC, value=value)
        try:
            number = int(count)
        except ValueError:
            raise exception.error(
                _('Invalid %(key)s value %(value)r: the count must be an '
                  'integer.'), key=ALIAS_SPEC, value=value) from None
        found.append((name.strip(), number))
    return found


def _pci_suffix(alias: str, index: int, taken: Container[str]) -> str:
    base = re.sub(r'[^a-zA-Z0-9_-]', '_', alias)[:50]
    suffix = 'pci-%s-%d' % (base, index)
    while suffix in taken:
        suffix += '_'
    return suffix


def _check_alias_total(value: str | None,
                       requests: list[tuple[str, int]]) -> None:
    """Refuse a flavor asking for more than names.MAX_GPUS PCI devices."""
    total = sum(count for _alias, count in requests if count > 0)
    if total > names.MAX_GPUS:
        raise exception.error(
            _('The flavor asks for %(total)d PCI devices (%(key)s=%(value)s), '
              'and Nova asks Placement for each device in its own request '
              'group; gpuclient translates at most %(max)d GPUs per '
              'instance, more than any server holds. Fix the flavor\'s '
              '%(key)s extra spec (counts adding up to %(max)d or less).'),
            total=total, key=ALIAS_SPEC, value=value, max=names.MAX_GPUS)


def add_pci_groups(builder: request_spec.RequestBuilder,
                   specs: Mapping[str, str],
                   settings: Mapping[str, typing.Any],
                   pools: Mapping[str, Mapping[str, typing.Any]] | None
                   ) -> None:
    requests = parse_alias_requests(specs.get(ALIAS_SPEC))
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
