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

"""Pure: the checks of the GPU pools and of what leads to them.

The pools themselves (members, aggregates, aliases, project limits); the
flavors that steer to them (traits, sizes, unscoped keys, memory
encryption, address space); the nova.conf and placement.conf lines their
devices need (PCI aliases, one-time use, post-copy, wide trees); and the
images booted with their flavors.

Which images are "used with" passthrough flavors cannot be read from the
cloud (any image boots with any flavor): when the cloud has a
passthrough GPU flavor, every active image that is not q35 + UEFI is
reported, as a warning.
"""

from __future__ import annotations

import typing

from osc_lib import exceptions

from gpuclient.i18n import _
from gpuclient.rules import address_space
from gpuclient.rules import capacity as capacity_mod
from gpuclient.rules import images as images_mod
from gpuclient.rules import one_time_use
from gpuclient.rules import pools as pools_mod
from gpuclient.rules import specs as specs_mod
from gpuclient.rules.checks import utils
from gpuclient.rules.nova_conf import render as nova_config
from gpuclient.rules.scheduler import hardware
from gpuclient.rules.scheduler import manager
from gpuclient.rules.scheduler import pci
from gpuclient.rules.scheduler import resource_request as request_mod
from gpuclient.rules.scheduler.filters import aggregate_instance_extra_specs
from gpuclient.rules.scheduler.filters import utils as filter_utils

if typing.TYPE_CHECKING:
    from gpuclient.rules import model

# -- pools -------------------------------------------------------------------


def pool_drift(cloud: model.Cloud,
               settings: dict[str, typing.Any] | None) -> list[utils.Finding]:
    """Members without their trait, outside the Placement aggregate, or
    without a compute node (``pools.drift``, as ``gpu pool show``)."""
    host_roots = cloud.host_roots()
    # not read (gpu apply's doctor reads no members): each pool's members
    # unknown, as where Placement's aggregate cannot be read
    members = cloud.pool_members or {}
    found = []
    for name, pool in sorted(cloud.pools.items()):
        roots = {h: sorted(host_roots.get(h, ())) for h in pool['hosts']}
        # gpu check reads Placement
        for item in pools_mod.drift(pool, roots, cloud.placement,  # type: ignore[arg-type]
                                    members.get(name)):
            fix = item['fix'] or 'openstack gpu pool remove host %s %s' % (
                name, item['host'])
            found.append(utils.finding(
                utils.ERROR, 'pool-drift', 'pool %s / host %s' % (
                    name, item['host']),
                pools_mod.drift_text(item), fix, [name]))
    return found


def unpooled_hosts(
        cloud: model.Cloud,
        settings: dict[str, typing.Any] | None) -> list[utils.Finding]:
    """GPU hosts in no pool (a warning: a cloud may not use pools)."""
    pooled = pools_mod.pools_by_host(cloud.pools)
    found = []
    for host, roots in sorted(cloud.host_roots().items()):
        if host in pooled:
            continue
        classes: set[str] = set()
        for root in roots:
            classes.update(utils.tree_classes(cloud, root))
        if not classes:
            continue
        found.append(utils.finding(
            utils.WARNING, 'pool-unpooled-hosts', 'host %s' % host,
            _('%(host)s offers %(rcs)s but is in no GPU pool: any flavor '
              'asking for that class may land there, and pool flavors '
              'never do.') % {'host': host, 'rcs': ', '.join(sorted(
                  classes))},
            'openstack gpu pool add host <pool> %s' % host))
    return found


def pool_no_devices(
        cloud: model.Cloud,
        settings: dict[str, typing.Any] | None) -> list[utils.Finding]:
    """Pool members that offer none of the pool's class (or whose pGPUs
    serve another pool's vGPU type)."""
    host_roots = cloud.host_roots()
    found = []
    for name, pool in sorted(cloud.pools.items()):
        for host in pool['hosts']:
            roots = sorted(host_roots.get(host, ()))
            if not roots:
                continue  # pool-drift reports it
            for message in pools_mod.host_problems(
                    # gpu check reads Placement
                    pool, host, roots, cloud.placement, cloud.pools):  # type: ignore[arg-type]
                found.append(utils.finding(
                    utils.ERROR, 'pool-no-devices', 'pool %s / host %s' % (
                        name, host),
                    message,
                    'openstack gpu pool remove host %s %s  (or configure '
                    'the host: openstack gpu config show --pool %s)'
                    % (name, host, name),
                    [name]))
    return found


def pool_aggregates(
        cloud: model.Cloud,
        settings: dict[str, typing.Any] | None) -> list[utils.Finding]:
    """Aggregates marked as pools that cannot be read, or that claim the
    same pool."""
    found = []
    for aggregate, pool, message in cloud.problems:
        found.append(utils.finding(
            utils.ERROR, 'pool-aggregates', 'aggregate %s' % aggregate,
            message,
            'openstack aggregate unset --property gpu_pool %s' % aggregate,
            [pool]))
    return found


def pool_shared_alias(
        cloud: model.Cloud,
        settings: dict[str, typing.Any] | None) -> list[utils.Finding]:
    """Passthrough pools of different PCI ids sharing one alias name:
    Nova takes one spec per alias with pci_in_placement
    (``nova_config.alias_conflicts``)."""
    found = []
    for alias, group, shared in nova_config.alias_conflicts(
            cloud.pools.values()):
        names = [p['name'] for p in group]
        if shared:
            found.append(utils.finding(
                utils.WARNING, 'pool-shared-alias', 'alias %s' % alias,
                _('pools %(pools)s share alias %(alias)s with different '
                  'PCI ids: two alias lines of one name are refused by '
                  'Nova with pci_in_placement (PciInvalidAlias); one alias '
                  'naming their class %(rc)s serves both.') % {
                      'pools': ', '.join(names), 'alias': alias,
                      'rc': shared},
                '[pci] alias = %s' % nova_config.shared_alias_json(
                    alias, shared, nova_config.DEFAULT_NUMA_POLICY),
                names))
            continue
        found.append(utils.finding(
            utils.ERROR, 'pool-shared-alias', 'alias %s' % alias,
            _('pools %(pools)s share alias %(alias)s but have different '
              'resource classes: no alias Nova accepts with '
              'pci_in_placement selects both, so the flavors of all but '
              'one pool get "No valid host".') % {
                  'pools': ', '.join(names), 'alias': alias},
            _('give each PCI id its own alias (recreate pool %(pool)s '
              'with --alias <name>), or one --resource-class for the '
              'pools') % {'pool': names[-1]},
            names))
    return found


def pool_projects(
        cloud: model.Cloud,
        settings: dict[str, typing.Any] | None) -> list[utils.Finding]:
    """Project limits that let the wrong projects in or nobody at all:
    a project name where Nova compares IDs, a deleted project (needs the
    Keystone project list, ``cloud.projects``).

    The fixes rewrite the one metadata key in place (one write), so the
    pool is never open to every project on the way.
    """
    known = cloud.projects
    if not known:
        # not read, or Keystone did not let us list projects
        return [utils.not_judged(
            'pool-projects', 'pool %s' % name,
            _('pool %(pool)s is limited to projects %(prj)s, and Keystone\'s '
              'project list was not read, so whether they are live '
              'project IDs is not known') % {
                  'pool': name, 'prj': ', '.join(pool['projects'])},
            _('run gpu check with a token that may list projects (admin)'),
            [name])
            for name, pool in sorted(cloud.pools.items())
            if pool['projects']]
    by_name: dict[str, list[str]] = {}
    for project_id, project_name in known.items():
        # an unnamed project is listed under None
        by_name.setdefault(project_name, []).append(project_id)  # type: ignore[arg-type]
    found = []
    for name, pool in sorted(cloud.pools.items()):
        entries = pools_mod.project_entries(pool['metadata'])
        live = [v for _k, v in entries if v in known]
        for key, value in entries:
            if value in known:
                continue
            values = [v for k, v in entries if k == key]
            if value in by_name:
                symptom = _(
                    '%(key)s=%(value)s names a project by name; Nova '
                    'compares project IDs, so project %(value)s cannot '
                    'use the pool') % {'key': key, 'value': value}
                values = [by_name[value][0] if v == value else v
                          for v in values]
            else:
                symptom = _('%(key)s=%(value)s is no project Keystone '
                            'knows (deleted?)') % {'key': key,
                                                    'value': value}
                values = [v for v in values if v != value]
                if not live:
                    values = values or ['<the project ID that should use '
                                        'it>']
            if not live:
                symptom += _(': no listed project can use the pool, its '
                             'hosts refuse every project.')
            else:
                symptom += '.'
            if values:
                fix = 'openstack aggregate set --property %s=%s %s' % (
                    key, ','.join(values), pool['aggregate'])
            else:
                fix = 'openstack aggregate unset --property %s %s' % (
                    key, pool['aggregate'])
            found.append(utils.finding(
                utils.ERROR if (value in by_name or not live)
                else utils.WARNING,
                'pool-projects', 'pool %s / %s' % (name, key), symptom,
                fix, [name]))
    return found


# -- flavors -----------------------------------------------------------------

def _known_traits(cloud):
    """Traits of every provider in a tree a hypervisor maps to, or None
    when some provider's traits were not read."""
    snap = cloud.placement
    roots = utils.root_hosts(cloud)
    traits = set()
    for uuid in snap.providers_in_trees(roots):
        summary = snap.summaries.get(uuid)
        if summary is None or summary.get('traits') is None:
            return None
        traits.update(summary['traits'])
    return traits


def _trait_fix(trait, group, flavor, cloud):
    for name, pool in sorted(cloud.pools.items()):
        if pool['isolate'] and pool['pool_trait'] == trait:
            return 'openstack gpu pool set %s --isolate' % name
        if pool.get('type_trait') == trait and pool['hosts']:
            return 'openstack gpu pool add host %s %s' % (
                name, ' '.join(pool['hosts']))
    return 'openstack flavor unset --property trait%s:%s %s' % (
        group, trait, utils.flavor_label(flavor))


def flavor_unknown_trait(
        cloud: model.Cloud,
        settings: dict[str, typing.Any] | None) -> list[utils.Finding]:
    """GPU flavors requiring a trait that no compute host's provider has."""
    known = _known_traits(cloud)
    found = []
    for flavor, reading in utils.gpu_flavors(cloud):
        for group, wanted in sorted(reading['traits'].items()):
            for trait, value in sorted(wanted.items()):
                if value != specs_mod.REQUIRED:
                    continue
                if known is None:
                    found.append(utils.not_judged(
                        'flavor-unknown-trait',
                        'flavor %s' % utils.flavor_label(flavor),
                        _('it requires trait %(trait)s and the traits of '
                          'some compute host\'s resource providers were '
                          'not read') % {'trait': trait},
                        _('run gpu check again (it reads every provider\'s '
                          'traits)'),
                        utils.flavor_pools(cloud, reading)))
                    continue
                if trait in known:
                    continue
                found.append(utils.finding(
                    utils.ERROR, 'flavor-unknown-trait',
                    'flavor %s' % utils.flavor_label(flavor),
                    _('requires trait %(trait)s, which no resource '
                      'provider of a compute host has: every boot fails '
                      'with "No valid host".') % {'trait': trait},
                    _trait_fix(trait, group, flavor, cloud),
                    utils.flavor_pools(cloud, reading)))
    return found


def _tree_fits(groups, group_policy, offered):
    """Could the GPU groups ever fit into one tree's GPU providers?

    ``groups``: [(suffix, class, amount)]; ``offered``: {class:
    [(uuid, capacity, max_unit)]}. Capacity, not free inventory: this is
    about "never", not "now".
    """
    for rc in {rc for _s, rc, _a in groups}:
        mine = [(s, a) for s, r, a in groups if r == rc]
        providers = offered.get(rc) or []
        if not providers:
            return False
        biggest = max(min(cap, unit) for _u, cap, unit in providers)
        if any(a > biggest for _s, a in mine):
            return False
        if sum(a for _s, a in mine) > sum(cap for _u, cap, _m in providers):
            return False
        numbered = [s for s, _a in mine if s]
        # isolate: Placement (_satisfies_group_policy) wants one distinct
        # provider per numbered group, so N groups fit on N providers
        # and fail on N-1 (none: groups may share a provider)
        if group_policy == 'isolate' and len(numbered) > len(providers):
            return False
    return True


def _largest(trees, rc):
    """(most of RC in one tree, most providers of RC in one tree, most
    of RC one provider gives one request group)."""
    most = count = unit = 0
    for offered in trees:
        providers = offered.get(rc) or []
        most = max(most, sum(cap for _u, cap, _m in providers))
        count = max(count, len(providers))
        unit = max([unit] + [min(cap, m) for _u, cap, m in providers])
    return most, count, unit


def flavor_too_many_devices(
        cloud: model.Cloud,
        settings: dict[str, typing.Any] | None) -> list[utils.Finding]:
    """GPU flavors asking for more devices than any host (of their pool)
    offers: multi-vGPU flavors on pools with fewer pGPUs included."""
    settings = manager.decide_settings(settings)
    host_roots = cloud.host_roots()
    found = []
    for flavor, reading in utils.gpu_flavors(cloud):
        try:
            req = request_mod.build(flavor, settings=settings,
                                    pools=cloud.pools,
                                    aggregates=cloud.aggregates)
        except exceptions.CommandError as exc:
            if not _unresolved_aliases(reading, settings, cloud.pools):
                found.append(utils.not_judged(
                    'flavor-too-many-devices',
                    'flavor %s' % utils.flavor_label(flavor),
                    _('its request cannot be built (%s)') % exc,
                    'openstack gpu candidate list --flavor %s --explain'
                    % utils.flavor_label(flavor),
                    utils.flavor_pools(cloud, reading)))
            continue  # an unknown PCI alias: flavor-pci-alias says it
        classes = request_mod.gpu_classes(req)
        groups = [(suffix, rc, group['resources'][rc])
                  for suffix, group in sorted(req['groups'].items())
                  for rc in classes if rc in group['resources']]
        if not groups:
            continue
        hosts, steered = utils.target_hosts(cloud, reading)
        if reading['steering'] and not hosts:
            # steers to no pool or to empty pools: not a size question,
            # but no boot lands anywhere until a host joins
            found.append(utils.finding(
                utils.WARNING, 'flavor-too-many-devices',
                'flavor %s' % utils.flavor_label(flavor),
                _('steers to %(where)s, which has no host: every boot '
                  'fails with "No valid host" until one is added (its '
                  'size is not judged).') % {
                      'where': (_('pool %s') % ', '.join(steered))
                      if steered else _('an aggregate that is no pool')},
                'openstack gpu pool add host %s <host>' % (
                    steered[0] if steered else '<pool>'),
                steered))
            continue
        trees = [utils.tree_classes(cloud, root) for host in hosts
                 for root in sorted(host_roots.get(host, ()))]
        if any(_tree_fits(groups, req['group_policy'], t) for t in trees):
            continue
        where = (_('pool %s') % ', '.join(steered) if steered
                 else _('the cloud'))
        asked = ', '.join('%s=%d' % (rc, sum(a for _s, r, a in groups
                                             if r == rc))
                          for rc in sorted({g[1] for g in groups}))
        offered = []
        for rc in sorted({g[1] for g in groups}):
            most, count, unit = _largest(trees, rc)
            offered.append(_('%(rc)s=%(most)d on %(count)d provider(s), at '
                             'most %(unit)d per request group')
                           % {'rc': rc, 'most': most, 'count': count,
                              'unit': unit})
        fix = (_('openstack gpu pool add host %s <host with more GPUs>')
               % steered[0] if steered else
               _('openstack flavor delete %s  (and create it asking for '
                 'fewer GPUs)') % utils.flavor_label(flavor))
        found.append(utils.finding(
            utils.ERROR, 'flavor-too-many-devices',
            'flavor %s' % utils.flavor_label(flavor),
            _('asks for %(asked)s in %(groups)d request group(s) '
              '(group_policy=%(policy)s) but the largest host of '
              '%(where)s offers %(offered)s (Placement takes one group\'s '
              'amount of a class from one provider): every boot fails '
              'with "No valid host".')
            % {'asked': asked, 'groups': len(groups),
               'policy': req['group_policy'] or 'none',
               'where': where, 'offered': ', '.join(offered)},
            fix, steered))
    return found


def flavor_unscoped_keys(
        cloud: model.Cloud,
        settings: dict[str, typing.Any] | None) -> list[utils.Finding]:
    """Unscoped extra specs (``group_policy``, ...) that
    AggregateInstanceExtraSpecsFilter matches against aggregate metadata
    and that no target host's aggregates satisfy."""
    settings = manager.decide_settings(settings)
    if 'AggregateInstanceExtraSpecsFilter' not in settings[
            'enabled_filters']:
        return []
    found = []
    for flavor, reading in utils.gpu_flavors(cloud):
        extra = flavor.get('extra_specs') or {}
        unscoped = {k: v for k, v in extra.items() if ':' not in k}
        if not unscoped:
            continue
        hosts, steered = utils.target_hosts(cloud, reading)
        if not hosts:
            continue
        failing: dict[str, set[str]] = {}
        for host in hosts:
            reasons = aggregate_instance_extra_specs.extra_specs_reasons(
                unscoped, filter_utils.host_metadata(cloud.aggregates, host))
            for reason in reasons:
                failing.setdefault(reason['key'], set()).add(host)
        for key, bad in sorted(failing.items()):
            if bad != set(hosts):
                continue
            targets = [cloud.pools[p]['aggregate'] for p in steered] or [
                '<aggregate of the GPU hosts>']
            found.append(utils.finding(
                utils.ERROR, 'flavor-unscoped-keys',
                'flavor %s' % utils.flavor_label(flavor),
                _('extra spec %(key)s=%(value)s has no scope, so '
                  'AggregateInstanceExtraSpecsFilter wants it in the '
                  'aggregate metadata of the host, and none of its %(n)d '
                  'target host(s) has it: every boot fails with "No valid '
                  'host".') % {'key': key, 'value': unscoped[key],
                               'n': len(hosts)},
                '; '.join('openstack aggregate set --property %s=%s %s'
                          % (key, unscoped[key], agg) for agg in targets),
                steered))
    return found


def flavor_public_limited_pool(
        cloud: model.Cloud,
        settings: dict[str, typing.Any] | None) -> list[utils.Finding]:
    """Public flavors of pools limited to projects."""
    found = []
    for flavor, reading in utils.gpu_flavors(cloud):
        if not flavor.get('os-flavor-access:is_public', True):
            continue
        for name in capacity_mod.flavor_pools(reading, cloud.pools):
            pool = cloud.pools[name]
            if not pool['projects']:
                continue
            found.append(utils.finding(
                utils.WARNING, 'flavor-public-limited-pool',
                'flavor %s' % utils.flavor_label(flavor),
                _('is public but pool %(pool)s is limited to %(n)d '
                  'project(s): every other project sees the flavor and '
                  'gets "No valid host".') % {
                      'pool': name, 'n': len(pool['projects'])},
                'openstack flavor delete %(f)s; openstack gpu flavor '
                'create %(f)s --pool %(pool)s --gpus %(gpus)s --vcpus '
                '%(vcpus)s --ram %(ram)s --disk %(disk)s --private %(prj)s'
                % {'f': utils.flavor_label(flavor), 'pool': name,
                   'gpus': reading['gpus'] or 1,
                   'vcpus': flavor.get('vcpus'), 'ram': flavor.get('ram'),
                   'disk': flavor.get('disk'),
                   'prj': ' '.join('--project %s' % p
                                   for p in pool['projects'])},
                [name]))
    return found


def _offers_mem_encryption(cloud, root, trait):
    """True, False, or None (the root's traits were not read): does ROOT
    offer a free guest slot of MEM_ENCRYPTION_CONTEXT with TRAIT (what
    Nova's _translate_mem_encryption_request asks of the root)?"""
    summary = cloud.placement.summaries.get(root) or {}
    item = (summary.get('resources') or {}).get(
        request_mod.MEM_ENCRYPTION_CONTEXT) or {}
    if (item.get('capacity') or 0) <= 0:
        return False
    traits = summary.get('traits')
    if traits is None:
        return None
    return trait in traits


def flavor_mem_encryption(
        cloud: model.Cloud,
        settings: dict[str, typing.Any] | None) -> list[utils.Finding]:
    """GPU flavors asking for memory encryption (``hw:mem_encryption``,
    Nova's confidential guests: AMD SEV since Nova 2019.2 / Train, the
    models Nova 34 knows in hardware.MEM_ENCRYPTION_MODELS) where no host
    of their pool has
    a MEM_ENCRYPTION_CONTEXT inventory and the model's CPU trait: every
    boot fails with "No valid host"."""
    host_roots = cloud.host_roots()
    found = []
    for flavor, reading in utils.gpu_flavors(cloud):
        label = 'flavor %s' % utils.flavor_label(flavor)
        try:
            model = hardware.mem_encryption(flavor.get('extra_specs') or {},
                                            {}, check_image=False)
        except exceptions.CommandError as exc:
            found.append(utils.finding(
                utils.ERROR, 'flavor-mem-encryption', label, str(exc),
                'openstack flavor unset --property hw:mem_encryption_model '
                '%s' % utils.flavor_label(flavor),
                utils.flavor_pools(cloud, reading)))
            continue
        if not model:
            continue
        hosts, steered = utils.target_hosts(cloud, reading)
        if not hosts:
            continue  # flavor-too-many-devices says a pool has no host
        trait = hardware.mem_encryption_trait(model)
        answers = [_offers_mem_encryption(cloud, root, trait)
                   for host in hosts for root in sorted(
                       host_roots.get(host, ()))]
        if any(answers):
            continue
        where = (_('pool %s') % ', '.join(steered) if steered
                 else _('the cloud'))
        fix = ('openstack flavor unset --property hw:mem_encryption %s'
               % utils.flavor_label(flavor))
        fix += _('  (or add hosts offering %(trait)s and '
                 'MEM_ENCRYPTION_CONTEXT to %(where)s)') % {
                     'trait': trait, 'where': where}
        if None in answers:
            found.append(utils.not_judged(
                'flavor-mem-encryption', label,
                _('asks for memory encryption (%(model)s) and no host of '
                  '%(where)s is known to offer it (the traits of some '
                  'were not read)') % {'model': model, 'where': where},
                fix, steered))
            continue
        found.append(utils.finding(
            utils.ERROR, 'flavor-mem-encryption', label,
            _('asks for memory encryption (%(model)s: MEM_ENCRYPTION_'
              'CONTEXT=1 and trait %(trait)s on the compute node) but no '
              'host of %(where)s offers it: every boot fails with "No '
              'valid host".') % {'model': model, 'trait': trait,
                                 'where': where},
            fix, steered))
    return found


def flavor_address_space(
        cloud: model.Cloud,
        settings: dict[str, typing.Any] | None) -> list[utils.Finding]:
    """Passthrough GPU flavors whose guests cannot map every GPU's BAR1
    window (issue 40 rule 3): RAM, the 32-bit hole and the BAR1 windows of
    the pool's board (profiles.BAR1) beyond the guest's physical address
    bits (40 with no hw:maxphysaddr_mode; Nova 2023.2 and later take
    the setting, rules/address_space). Where the catalogue has no BAR1
    size of the board (or no board of the pool's PCI ID), the flavor is
    "not judged", naming the board: never silent."""
    found = []
    for flavor, reading in utils.gpu_flavors(cloud):
        steered = capacity_mod.flavor_pools(reading, cloud.pools)
        by_alias = [p for p in cloud.pools.values()
                    if p.get('alias') in reading['aliases']]
        chosen = by_alias or [cloud.pools[name] for name in steered]
        gpus = reading['gpus'] or 0
        extra = flavor.get('extra_specs')
        bars = [bar1 for bar1 in (
            address_space.pool_bar1(pool) for pool in chosen)
            if bar1 and bar1.gib]
        unknown = sorted({what for what in (
            address_space.unknown_bar1(pool) for pool in chosen) if what})
        label = utils.flavor_label(flavor)
        pools = utils.flavor_pools(cloud, reading,
                                   [p['name'] for p in by_alias])
        # the boards of BARS all have a BAR1 size
        bar1 = max(bars, key=lambda b: b.gib) if bars else None  # type: ignore[arg-type,return-value]
        result = bar1 and address_space.judge(flavor.get('ram'), gpus,
                                              bar1.gib, extra)
        if result:
            found.append(utils.finding(
                utils.WARNING, 'flavor-address-space', 'flavor %s' % label,
                # result is set only with bar1
                address_space.symptom(
                    result, gpus,
                    bar1.gib,  # type: ignore[arg-type,union-attr]
                    bar1.board),  # type: ignore[union-attr]
                address_space.fix(label, result), pools))
        elif (unknown and gpus
              and address_space.guest_bits(extra) is not None):
            bits = address_space.guest_bits(extra)
            found.append(utils.not_judged(
                'flavor-address-space', 'flavor %s' % label,
                _('BAR1 size of %(board)s unknown: a guest of it (%(ram)d '
                  'MiB of RAM, %(gpus)d GPUs, %(bits)d address bits) maps '
                  'every GPU\'s BAR1 window only if each is at most '
                  '%(room)d GiB (the catalogue\'s BAR1 sizes: '
                  'doc/source/user/catalogue.rst)') % {
                      'board': ', '.join(unknown),
                      'ram': flavor.get('ram') or 0, 'gpus': gpus,
                      'bits': bits, 'room': address_space.room_per_gpu(
                          # guest_bits is not None (the elif above)
                          flavor.get('ram'), gpus, bits)},  # type: ignore[arg-type]
                address_space.unknown_fix(label), pools))
    return found


def flavor_pci_alias(
        cloud: model.Cloud,
        settings: dict[str, typing.Any] | None) -> list[utils.Finding]:
    """PCI aliases of flavors that nova.conf does not define (needs
    ``--nova-conf``): Nova refuses to create the server."""
    if settings is None:
        return _pci_alias_not_judged(cloud)
    defined = settings.get('aliases') or {}
    by_alias = {p['alias']: p for p in cloud.pools.values()
                if p.get('alias') and p.get('pci_id')}
    found = []
    for flavor, reading in utils.gpu_flavors(cloud):
        for alias in sorted(reading['aliases']):
            if alias in defined:
                continue
            pool = by_alias.get(alias)
            line = ('[pci] alias = %s' % nova_config.alias_json(pool)
                    if pool else
                    '[pci] alias = {"name": "%s", "vendor_id": "<vendor>", '
                    '"product_id": "<product>"}' % alias)
            found.append(utils.finding(
                utils.ERROR, 'flavor-pci-alias',
                'flavor %s' % utils.flavor_label(flavor),
                _('asks for PCI alias %(alias)s, which nova.conf does not '
                  'define: Nova refuses to create the server ("PCI alias '
                  '%(alias)s is not defined").') % {'alias': alias},
                line, utils.flavor_pools(cloud, reading,
                                         [pool['name']] if pool else ())))
    return found


def pool_vf_alias(
        cloud: model.Cloud,
        settings: dict[str, typing.Any] | None) -> list[utils.Finding]:
    """vgpu-vf pools whose type-VF alias nova.conf lacks or gets wrong
    (needs ``--nova-conf``): Nova asks Placement for the alias's class
    (only with pci_in_placement) and PciPassthroughFilter matches its
    device_type against the VFs."""
    if settings is None:
        return []
    found = []
    for name, pool in sorted(cloud.pools.items()):
        if pool['mode'] != pools_mod.VGPU_VF:
            continue
        line = '[pci] alias = %s' % nova_config.alias_json(pool)
        alias = (settings.get('aliases') or {}).get(pool['alias'])
        obj = 'alias %s' % pool['alias']
        if not settings.get('pci_in_placement'):
            found.append(utils.finding(
                utils.ERROR, 'pool-vf-alias', 'pci_in_placement',
                _('vgpu-vf pool %s asks for VFs by resource class, which '
                  'Nova does only with [filter_scheduler] pci_in_placement '
                  'on.') % name,
                '[filter_scheduler] pci_in_placement = True', [name]))
        if alias is None or alias.get('source') != 'config':
            found.append(utils.finding(
                utils.ERROR, 'pool-vf-alias', obj,
                _('vgpu-vf pool %(pool)s: nova.conf defines no alias '
                  '%(alias)s, so Nova refuses every server of its flavors.')
                % {'pool': name, 'alias': pool['alias']}, line, [name]))
            continue
        wrong = []
        if alias['resource_class'] != pool['resource_class']:
            wrong.append(_('it asks for %(have)s, the pool\'s VFs are '
                           '%(want)s') % {'have': alias['resource_class'],
                                          'want': pool['resource_class']})
        if alias.get('device_type') != 'type-VF':
            wrong.append(_('its device_type is %s, not type-VF (the VFs '
                           'would never match)')
                         % (alias.get('device_type') or _('unset')))
        if wrong:
            found.append(utils.finding(
                utils.ERROR, 'pool-vf-alias', obj,
                _('vgpu-vf pool %(pool)s: %(wrong)s.')
                % {'pool': name, 'wrong': '; '.join(wrong)}, line, [name]))
        elif pool.get('live_migratable') and not alias.get(
                'live_migratable'):
            found.append(utils.finding(
                utils.WARNING, 'pool-vf-alias', obj,
                _('vgpu-vf pool %s is live-migratable but its alias does '
                  'not ask for live_migratable devices: Nova does not '
                  'live-migrate its servers.') % name, line, [name]))
    return found


def _unresolved_aliases(reading, settings, pools):
    """The PCI aliases of a flavor neither SETTINGS nor a pool describes."""
    described = set((settings or {}).get('aliases') or ()) | set(
        pci.pool_aliases(pools))
    return sorted(set(reading['aliases']) - described)


def _pci_alias_not_judged(cloud):
    """Without nova.conf: a warning per flavor whose alias nothing
    describes (it cannot boot unless nova.conf defines it), and one for
    the aliases pools describe (assumed as gpu config show renders)."""
    found = []
    assumed = {}
    for flavor, reading in utils.gpu_flavors(cloud):
        unknown = _unresolved_aliases(reading, None, cloud.pools)
        for alias in unknown:
            found.append(utils.not_judged(
                'flavor-pci-alias', 'flavor %s' % utils.flavor_label(flavor),
                _('it asks for PCI alias %(alias)s, which no GPU pool '
                  'describes, and nova.conf was not given: unless nova.conf '
                  '[pci] alias defines %(alias)s, Nova refuses every server '
                  'of it ("PCI alias %(alias)s is not defined")')
                % {'alias': alias}, utils.NOVA_CONF_FIX,
                utils.flavor_pools(cloud, reading)))
        for alias in set(reading['aliases']) - set(unknown):
            assumed.setdefault(alias, []).append((flavor, reading))
    if assumed:
        flavors = sorted({utils.flavor_label(f) for group in assumed.values()
                          for f, _r in group})
        pools = {p['name'] for p in cloud.pools.values()
                 if p.get('alias') in assumed}
        pools.update(p for group in assumed.values() for _f, r in group
                     for p in utils.flavor_pools(cloud, r))
        found.append(utils.not_judged(
            'flavor-pci-alias', 'nova.conf [pci] alias',
            _('nova.conf was not given, so whether it defines PCI aliases '
              '%(aliases)s of flavors %(flavors)s is not known (assumed as '
              'gpu config show renders them for their pools)')
            % {'aliases': ', '.join(sorted(assumed)),
               'flavors': ', '.join(flavors)},
            utils.NOVA_CONF_FIX, pools))
    return found


def pci_one_time_use(
        cloud: model.Cloud,
        settings: dict[str, typing.Any] | None) -> list[utils.Finding]:
    """``one_time_use`` device specs Nova refuses (needs ``--nova-conf``
    with a nova-compute's ``[pci]``: ``one_time_use.one_time_use_problems``);
    nothing to judge without it."""
    if settings is None:
        return []
    return [utils.finding(utils.ERROR, 'pci-one-time-use', obj, symptom, fix)
            for obj, symptom, fix in one_time_use.one_time_use_problems(
                settings.get('pci') or {})]


def libvirt_post_copy(
        cloud: model.Cloud,
        settings: dict[str, typing.Any] | None) -> list[utils.Finding]:
    """``[libvirt] live_migration_permit_post_copy = True`` in the given
    nova.conf while pools live-migrate servers with VFIO devices
    (``nova_config.post_copy_needed``: live-migratable passthrough and
    vgpu-vf pools, Nova 2025.1; vgpu and mig pools, Nova 2024.1): QEMU
    refuses post-copy with a VFIO device, so such a live migration fails
    once Nova switches to post-copy. Unset, Nova's default (False) is
    right; needs ``--nova-conf`` with a nova-compute's ``[libvirt]``."""
    if settings is None:
        return []
    libvirt = settings.get('libvirt') or {}
    if not libvirt.get('live_migration_permit_post_copy'):
        return []
    moving = sorted(name for name, pool in cloud.pools.items()
                    if nova_config.post_copy_needed(pool))
    if not moving:
        return []
    return [utils.finding(
        utils.ERROR, 'libvirt-post-copy',
        'nova.conf [libvirt] live_migration_permit_post_copy',
        _('is True, and pools %s live-migrate servers with VFIO devices '
          '(PCI passthrough, vGPU): QEMU refuses post-copy with them, so '
          'their live migrations fail (gpu drain plans them cold on such '
          'hosts).') % ', '.join(moving),
        '[libvirt] live_migration_permit_post_copy = False', moving)]


def placement_wide_trees(
        cloud: model.Cloud,
        settings: dict[str, typing.Any] | None) -> list[utils.Finding]:
    """Placement's candidate generation where pools have wide provider
    trees (``nova_config.wide_trees``: a host with >= 8 child providers of
    a pool's class and a flavor asking > 4 of them; Placement's "when to
    enable", bug 2126751) without ``nova_config.WIDE_TREE_SETTINGS`` in
    placement.conf (Placement's options, releases beside them). Needs
    placement.conf among the ``--nova-conf`` files; without any file, one
    warning says what is not known."""
    roots = cloud.host_roots()
    members = {h for pool in cloud.pools.values() for h in pool['hosts']}
    # gpu check reads Placement (ops.check_ops.run)
    trees = nova_config.trees_from_snapshot(
        cloud.placement,  # type: ignore[arg-type]
        {h: sorted(roots[h]) for h in sorted(members) if roots.get(h)})
    wide = nova_config.wide_trees(cloud.pools, trees, cloud.flavors)
    if not wide:
        return []
    pools = sorted({item['pool'] for item in wide})
    why = ' '.join(nova_config.wide_tree_text(item) for item in wide)
    if settings is None:
        return [utils.not_judged(
            'placement-wide-trees', 'placement.conf',
            _('placement.conf was not given, so whether Placement is set '
              'for wide provider trees is not known. %s') % why,
            _('openstack gpu check --nova-conf /etc/nova/nova.conf '
              '--nova-conf /etc/placement/placement.conf'), pools)]
    return [utils.finding(
        utils.WARNING, 'placement-wide-trees',
        'placement.conf [%s] %s' % (section, key),
        _('is not %(value)s in the files given (Placement\'s default '
          'otherwise). %(why)s %(releases)s') % {
              'value': value, 'why': why,
              'releases': nova_config.wide_trees_releases()},
        '[%s] %s = %s' % (section, key, value), pools)
        for section, key, value in nova_config.wide_trees_unset(
            settings['placement'])]


# -- images ------------------------------------------------------------------

def _active_images(cloud):
    return sorted((i for i in cloud.images or ()
                   if i.get('status', 'active') == 'active'),
                  key=lambda i: (i.get('name') or '', i['id']))


def image_firmware(
        cloud: model.Cloud,
        settings: dict[str, typing.Any] | None) -> list[utils.Finding]:
    """Active images without q35 and UEFI, when passthrough GPU flavors
    exist (any image may be booted with them)."""
    passthrough = sorted(
        name for name, pool in cloud.pools.items()
        if pool['mode'] == pools_mod.PASSTHROUGH)
    if not any(r['mode'] == pools_mod.PASSTHROUGH
               for _f, r in utils.gpu_flavors(cloud)):
        return []
    if cloud.images is None:
        return [utils.not_judged(
            'image-firmware', 'images',
            _('passthrough GPU flavors exist and Glance\'s images were not '
              'read'), _('run gpu check again (it reads the images)'),
            passthrough)]
    found = []
    for image in _active_images(cloud):
        machine = image.get(images_mod.MACHINE_TYPE)
        firmware = image.get(images_mod.FIRMWARE_TYPE)
        if images_mod.is_q35(machine) and firmware == images_mod.UEFI:
            continue
        found.append(utils.finding(
            utils.WARNING, 'image-firmware',
            'image %s' % (image.get('name') or image['id']),
            _('%(mt)s=%(machine)s, %(fw)s=%(firmware)s: booted with a '
              'passthrough GPU flavor, GPUs with large PCI BARs may fail '
              'to initialise in the guest (q35 and UEFI needed).')
            % {'mt': images_mod.MACHINE_TYPE, 'machine': machine or '-',
               'fw': images_mod.FIRMWARE_TYPE, 'firmware': firmware or '-'},
            'openstack gpu image set --q35 --uefi %s' % image['id'],
            passthrough))
    return found


def image_pool_trait(
        cloud: model.Cloud,
        settings: dict[str, typing.Any] | None) -> list[utils.Finding]:
    """Images requiring a pool's isolation trait: any flavor booted with
    them lands in the isolated pool (the isolation loophole)."""
    by_trait = {p['pool_trait']: name for name, p in cloud.pools.items()}
    found = []
    for image in _active_images(cloud):
        for key, value in sorted(image.items()):
            if not (str(key).startswith(pools_mod.TRAIT_PREFIX)
                    and str(value) == pools_mod.REQUIRED):
                continue
            trait = key[len(pools_mod.TRAIT_PREFIX):]
            if not trait.startswith('CUSTOM_' + pools_mod.POOL_TRAIT_PREFIX):
                continue
            pool = by_trait.get(trait)
            found.append(utils.finding(
                utils.ERROR, 'image-pool-trait',
                'image %s' % (image.get('name') or image['id']),
                _('requires %(trait)s: servers of any flavor booted from '
                  'it land on the isolated GPU hosts of pool %(pool)s, '
                  'using capacity meant for GPU flavors.')
                % {'trait': trait, 'pool': pool or '-'},
                'openstack image unset --property %s %s' % (
                    key, image['id']),
                [pool] if pool else []))
    return found


# the checks of this family, in the order they run
CHECKS = (
    ('pool-drift', pool_drift),
    ('pool-unpooled-hosts', unpooled_hosts),
    ('pool-no-devices', pool_no_devices),
    ('pool-aggregates', pool_aggregates),
    ('pool-shared-alias', pool_shared_alias),
    ('pool-projects', pool_projects),
    ('flavor-unknown-trait', flavor_unknown_trait),
    ('flavor-too-many-devices', flavor_too_many_devices),
    ('flavor-unscoped-keys', flavor_unscoped_keys),
    ('flavor-public-limited-pool', flavor_public_limited_pool),
    ('flavor-mem-encryption', flavor_mem_encryption),
    ('flavor-address-space', flavor_address_space),
    ('flavor-pci-alias', flavor_pci_alias),
    ('pool-vf-alias', pool_vf_alias),
    ('pci-one-time-use', pci_one_time_use),
    ('libvirt-post-copy', libvirt_post_copy),
    ('placement-wide-trees', placement_wide_trees),
    ('image-firmware', image_firmware),
    ('image-pool-trait', image_pool_trait),
)
