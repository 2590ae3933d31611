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

"""Pure: misconfigurations that make GPU instances fail or land wrong.

Every check is a small function ``(cloud, settings) -> [Finding]`` over
one ``gpuclient.rules.model.Cloud`` (read with flavors, images and pool
members) and registered by name in ``CHECKS``. ``settings`` are the
scheduler's settings read from ``--nova-conf`` files
(``gpuclient.rules.scheduler.conf.load_settings``), or None when no file
was given: the others assume the settings gpuclient renders (``gpu config
show``), as ``gpu candidate list`` does.

A check never stays silent about an object it cannot judge (nova.conf
not given, Keystone's projects or some provider's traits not read, an
alias nothing describes): it reports a warning naming the object and
what would let it judge (``not_judged``).

A ``Finding`` says how bad it is (``error``: a user gets "No valid host",
a refused request or an instance on the wrong hosts; ``warning``: a
likely mistake that may be intended), which check found it, the object,
the symptom a user would see, and the exact command or nova.conf line
that fixes it.

Which images are "used with" passthrough flavors cannot be read from the
cloud (any image boots with any flavor): when the cloud has a
passthrough GPU flavor, every active image that is not q35 + UEFI is
reported, as a warning.
"""

import collections

from osc_lib import exceptions

from gpuclient import exit_status
from gpuclient.i18n import _
from gpuclient.rules import address_space
from gpuclient.rules import baremetal
from gpuclient.rules import capacity as capacity_mod
from gpuclient.rules import hosts as hosts_mod
from gpuclient.rules import images as images_mod
from gpuclient.rules import pools as pools_mod
from gpuclient.rules import quota as quota_mod
from gpuclient.rules import reservations
from gpuclient.rules import specs as specs_mod
from gpuclient.rules import utilisation as utilisation_mod
from gpuclient.rules.devices import health as device_health
from gpuclient.rules.devices import one_time_use as devices
from gpuclient.rules.nova_conf import render as nova_config
from gpuclient.rules.scheduler import hardware
from gpuclient.rules.scheduler import manager
from gpuclient.rules.scheduler import pci
from gpuclient.rules.scheduler import resource_request as request_mod
from gpuclient.rules.scheduler.filters import aggregate_instance_extra_specs
from gpuclient.rules.scheduler.filters import utils as filter_utils

ERROR = 'error'
WARNING = 'warning'
SEVERITIES = (ERROR, WARNING)
# unmapped trees named in one finding, at most
EXAMPLES = 3

Finding = collections.namedtuple(
    'Finding', ['severity', 'check', 'object', 'symptom', 'fix', 'pools'])

CHECKS = collections.OrderedDict()


def register(name):
    """Register a check function under NAME (order = report order)."""
    def wrap(func):
        CHECKS[name] = func
        return func
    return wrap


def finding(severity, check, obj, symptom, fix, pools=()):
    return Finding(severity, check, obj, symptom, fix, tuple(sorted(pools)))


# what lets the checks of nova.conf judge
NOVA_CONF_FIX = ('openstack gpu check --nova-conf /etc/nova/nova.conf  '
                 '(the nova.conf of nova-api and nova-scheduler)')


# the symptom of a "not judged" warning: how a reader (and is_not_judged)
# tells it from a finding
NOT_JUDGED = _('not judged: %s.')


def not_judged(check, obj, why, fix, pools=()):
    """A warning: CHECK cannot judge OBJ (WHY), FIX would let it."""
    return finding(WARNING, check, obj, NOT_JUDGED % why, fix, pools)


def is_not_judged(item):
    """Is the finding ITEM a "not judged" warning (``not_judged``)?"""
    return item.severity == WARNING and item.symptom.startswith(
        NOT_JUDGED.partition('%s')[0])


# -- shared questions --------------------------------------------------------

def _root_hosts(cloud):
    return {root: host for host, roots in cloud.host_roots().items()
            for root in roots}


def _tree_classes(cloud, root):
    """{class: [(provider uuid, capacity, max_unit)]} of GPU classes."""
    snap = cloud.placement
    ironic = root in cloud.node_roots()
    found = {}
    for uuid in snap.providers_in_trees([root]):
        summary = snap.summaries.get(uuid) or {}
        resources = summary.get('resources') or {}
        for rc, item in resources.items():
            if rc in cloud.gpu_classes:
                # a one-time-use device awaiting release counts: it is
                # the host's, only not free
                total = hosts_mod.device_figures(
                    item, node=baremetal.is_node_item(rc, item, ironic),
                    traits=summary.get('traits'))[0]
                found.setdefault(rc, []).append(
                    (uuid, total, item.get('max_unit') or total))
    return found


def _gpu_flavors(cloud):
    """[(flavor, reading)] of every GPU flavor, by name."""
    return capacity_mod.gpu_flavors(cloud.flavors or [], cloud.pools)


def _flavor_label(flavor):
    return flavor.get('name') or flavor['id']


def _flavor_pools(cloud, reading, also=()):
    """The pools a finding about a flavor belongs to: every pool the
    flavor steers to, and ALSO (a pool the finding names besides, such as
    the one whose alias it asks for). ``gpu check --pool P`` keeps the
    findings of P's flavors by this, so no flavor finding names fewer."""
    return sorted(set(capacity_mod.flavor_pools(reading, cloud.pools))
                  | {name for name in also if name})


def _target_hosts(cloud, reading):
    """(hosts a flavor can land on, its pools): pool hosts if it steers."""
    steered = capacity_mod.flavor_pools(reading, cloud.pools)
    if reading['steering']:
        found = set()
        for name in steered:
            found.update(cloud.pools[name]['hosts'])
        return sorted(found), steered
    return sorted(cloud.host_roots()), steered


# -- pools -------------------------------------------------------------------

@register('pool-drift')
def pool_drift(cloud, settings):
    """Members without their trait, outside the Placement aggregate, or
    without a compute node (``pools.drift``, as ``gpu pool show``)."""
    host_roots = cloud.host_roots()
    found = []
    for name, pool in sorted(cloud.pools.items()):
        roots = {h: sorted(host_roots.get(h, ())) for h in pool['hosts']}
        for item in pools_mod.drift(pool, roots, cloud.placement,
                                    cloud.pool_members.get(name)):
            fix = item['fix'] or 'openstack gpu pool remove host %s %s' % (
                name, item['host'])
            found.append(finding(
                ERROR, 'pool-drift', 'pool %s / host %s' % (
                    name, item['host']),
                pools_mod.drift_text(item), fix, [name]))
    return found


@register('pool-unpooled-hosts')
def unpooled_hosts(cloud, settings):
    """GPU hosts in no pool (a warning: a cloud may not use pools)."""
    pooled = pools_mod.pools_by_host(cloud.pools)
    found = []
    for host, roots in sorted(cloud.host_roots().items()):
        if host in pooled:
            continue
        classes = set()
        for root in roots:
            classes.update(_tree_classes(cloud, root))
        if not classes:
            continue
        found.append(finding(
            WARNING, 'pool-unpooled-hosts', 'host %s' % host,
            _('%(host)s offers %(rcs)s but is in no GPU pool: any flavor '
              'asking for that class may land there, and pool flavors '
              'never do.') % {'host': host, 'rcs': ', '.join(sorted(
                  classes))},
            'openstack gpu pool add host <pool> %s' % host))
    return found


@register('pool-no-devices')
def pool_no_devices(cloud, settings):
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
                    pool, host, roots, cloud.placement, cloud.pools):
                found.append(finding(
                    ERROR, 'pool-no-devices', 'pool %s / host %s' % (
                        name, host),
                    message,
                    'openstack gpu pool remove host %s %s  (or configure '
                    'the host: openstack gpu config show --pool %s)'
                    % (name, host, name),
                    [name]))
    return found


@register('pool-aggregates')
def pool_aggregates(cloud, settings):
    """Aggregates marked as pools that cannot be read, or that claim the
    same pool."""
    found = []
    for aggregate, pool, message in cloud.problems:
        found.append(finding(
            ERROR, 'pool-aggregates', 'aggregate %s' % aggregate, message,
            'openstack aggregate unset --property gpu_pool %s' % aggregate,
            [pool]))
    return found


@register('pool-shared-alias')
def pool_shared_alias(cloud, settings):
    """Passthrough pools of different PCI ids sharing one alias name:
    Nova takes one spec per alias with pci_in_placement
    (``nova_config.alias_conflicts``)."""
    found = []
    for alias, group, shared in nova_config.alias_conflicts(
            cloud.pools.values()):
        names = [p['name'] for p in group]
        if shared:
            found.append(finding(
                WARNING, 'pool-shared-alias', 'alias %s' % alias,
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
        found.append(finding(
            ERROR, 'pool-shared-alias', 'alias %s' % alias,
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


@register('pool-projects')
def pool_projects(cloud, settings):
    """Project limits that let the wrong projects in or nobody at all:
    a project name where Nova compares IDs, a deleted project (needs the
    Keystone project list, ``cloud.projects``).

    The fixes rewrite the one metadata key in place (one write), so the
    pool is never open to every project on the way.
    """
    known = cloud.projects
    if not known:
        # not read, or Keystone did not let us list projects
        return [not_judged(
            'pool-projects', 'pool %s' % name,
            _('pool %(pool)s is limited to projects %(prj)s, and Keystone\'s '
              'project list was not read, so whether they are live '
              'project IDs is not known') % {
                  'pool': name, 'prj': ', '.join(pool['projects'])},
            _('run gpu check with a token that may list projects (admin)'),
            [name])
            for name, pool in sorted(cloud.pools.items())
            if pool['projects']]
    by_name = {}
    for project_id, project_name in known.items():
        by_name.setdefault(project_name, []).append(project_id)
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
            found.append(finding(
                ERROR if (value in by_name or not live) else WARNING,
                'pool-projects', 'pool %s / %s' % (name, key), symptom,
                fix, [name]))
    return found


# -- flavors -----------------------------------------------------------------

def _known_traits(cloud):
    """Traits of every provider in a tree a hypervisor maps to, or None
    when some provider's traits were not read."""
    snap = cloud.placement
    roots = _root_hosts(cloud)
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
        group, trait, _flavor_label(flavor))


@register('flavor-unknown-trait')
def flavor_unknown_trait(cloud, settings):
    """GPU flavors requiring a trait that no compute host's provider has."""
    known = _known_traits(cloud)
    found = []
    for flavor, reading in _gpu_flavors(cloud):
        for group, wanted in sorted(reading['traits'].items()):
            for trait, value in sorted(wanted.items()):
                if value != specs_mod.REQUIRED:
                    continue
                if known is None:
                    found.append(not_judged(
                        'flavor-unknown-trait',
                        'flavor %s' % _flavor_label(flavor),
                        _('it requires trait %(trait)s and the traits of '
                          'some compute host\'s resource providers were '
                          'not read') % {'trait': trait},
                        _('run gpu check again (it reads every provider\'s '
                          'traits)'),
                        _flavor_pools(cloud, reading)))
                    continue
                if trait in known:
                    continue
                found.append(finding(
                    ERROR, 'flavor-unknown-trait',
                    'flavor %s' % _flavor_label(flavor),
                    _('requires trait %(trait)s, which no resource '
                      'provider of a compute host has: every boot fails '
                      'with "No valid host".') % {'trait': trait},
                    _trait_fix(trait, group, flavor, cloud),
                    _flavor_pools(cloud, reading)))
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


@register('flavor-too-many-devices')
def flavor_too_many_devices(cloud, settings):
    """GPU flavors asking for more devices than any host (of their pool)
    offers: multi-vGPU flavors on pools with fewer pGPUs included."""
    settings = manager.decide_settings(settings)
    host_roots = cloud.host_roots()
    found = []
    for flavor, reading in _gpu_flavors(cloud):
        try:
            req = request_mod.build(flavor, settings=settings,
                                    pools=cloud.pools,
                                    aggregates=cloud.aggregates)
        except exceptions.CommandError as exc:
            if not _unresolved_aliases(reading, settings, cloud.pools):
                found.append(not_judged(
                    'flavor-too-many-devices',
                    'flavor %s' % _flavor_label(flavor),
                    _('its request cannot be built (%s)') % exc,
                    'openstack gpu candidate list --flavor %s --explain'
                    % _flavor_label(flavor),
                    _flavor_pools(cloud, reading)))
            continue  # an unknown PCI alias: flavor-pci-alias says it
        classes = request_mod.gpu_classes(req)
        groups = [(suffix, rc, group['resources'][rc])
                  for suffix, group in sorted(req['groups'].items())
                  for rc in classes if rc in group['resources']]
        if not groups:
            continue
        hosts, steered = _target_hosts(cloud, reading)
        if reading['steering'] and not hosts:
            # steers to no pool or to empty pools: not a size question,
            # but no boot lands anywhere until a host joins
            found.append(finding(
                WARNING, 'flavor-too-many-devices',
                'flavor %s' % _flavor_label(flavor),
                _('steers to %(where)s, which has no host: every boot '
                  'fails with "No valid host" until one is added (its '
                  'size is not judged).') % {
                      'where': (_('pool %s') % ', '.join(steered))
                      if steered else _('an aggregate that is no pool')},
                'openstack gpu pool add host %s <host>' % (
                    steered[0] if steered else '<pool>'),
                steered))
            continue
        trees = [_tree_classes(cloud, root) for host in hosts
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
                 'fewer GPUs)') % _flavor_label(flavor))
        found.append(finding(
            ERROR, 'flavor-too-many-devices',
            'flavor %s' % _flavor_label(flavor),
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


@register('flavor-unscoped-keys')
def flavor_unscoped_keys(cloud, settings):
    """Unscoped extra specs (``group_policy``, ...) that
    AggregateInstanceExtraSpecsFilter matches against aggregate metadata
    and that no target host's aggregates satisfy."""
    settings = manager.decide_settings(settings)
    if 'AggregateInstanceExtraSpecsFilter' not in settings[
            'enabled_filters']:
        return []
    found = []
    for flavor, reading in _gpu_flavors(cloud):
        extra = flavor.get('extra_specs') or {}
        unscoped = {k: v for k, v in extra.items() if ':' not in k}
        if not unscoped:
            continue
        hosts, steered = _target_hosts(cloud, reading)
        if not hosts:
            continue
        failing = {}
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
            found.append(finding(
                ERROR, 'flavor-unscoped-keys',
                'flavor %s' % _flavor_label(flavor),
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


@register('flavor-public-limited-pool')
def flavor_public_limited_pool(cloud, settings):
    """Public flavors of pools limited to projects."""
    found = []
    for flavor, reading in _gpu_flavors(cloud):
        if not flavor.get('os-flavor-access:is_public', True):
            continue
        for name in capacity_mod.flavor_pools(reading, cloud.pools):
            pool = cloud.pools[name]
            if not pool['projects']:
                continue
            found.append(finding(
                WARNING, 'flavor-public-limited-pool',
                'flavor %s' % _flavor_label(flavor),
                _('is public but pool %(pool)s is limited to %(n)d '
                  'project(s): every other project sees the flavor and '
                  'gets "No valid host".') % {
                      'pool': name, 'n': len(pool['projects'])},
                'openstack flavor delete %(f)s; openstack gpu flavor '
                'create %(f)s --pool %(pool)s --gpus %(gpus)s --vcpus '
                '%(vcpus)s --ram %(ram)s --disk %(disk)s --private %(prj)s'
                % {'f': _flavor_label(flavor), 'pool': name,
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


@register('flavor-mem-encryption')
def flavor_mem_encryption(cloud, settings):
    """GPU flavors asking for memory encryption (``hw:mem_encryption``,
    Nova's confidential guests: AMD SEV since Nova 2019.2 / Train, the
    models Nova 34 knows in hardware.MEM_ENCRYPTION_MODELS) where no host
    of their pool has
    a MEM_ENCRYPTION_CONTEXT inventory and the model's CPU trait: every
    boot fails with "No valid host"."""
    host_roots = cloud.host_roots()
    found = []
    for flavor, reading in _gpu_flavors(cloud):
        label = 'flavor %s' % _flavor_label(flavor)
        try:
            model = hardware.mem_encryption(flavor.get('extra_specs') or {},
                                            {}, check_image=False)
        except exceptions.CommandError as exc:
            found.append(finding(
                ERROR, 'flavor-mem-encryption', label, str(exc),
                'openstack flavor unset --property hw:mem_encryption_model '
                '%s' % _flavor_label(flavor), _flavor_pools(cloud, reading)))
            continue
        if not model:
            continue
        hosts, steered = _target_hosts(cloud, reading)
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
               % _flavor_label(flavor))
        fix += _('  (or add hosts offering %(trait)s and '
                 'MEM_ENCRYPTION_CONTEXT to %(where)s)') % {
                     'trait': trait, 'where': where}
        if None in answers:
            found.append(not_judged(
                'flavor-mem-encryption', label,
                _('asks for memory encryption (%(model)s) and no host of '
                  '%(where)s is known to offer it (the traits of some '
                  'were not read)') % {'model': model, 'where': where},
                fix, steered))
            continue
        found.append(finding(
            ERROR, 'flavor-mem-encryption', label,
            _('asks for memory encryption (%(model)s: MEM_ENCRYPTION_'
              'CONTEXT=1 and trait %(trait)s on the compute node) but no '
              'host of %(where)s offers it: every boot fails with "No '
              'valid host".') % {'model': model, 'trait': trait,
                                 'where': where},
            fix, steered))
    return found


@register('flavor-address-space')
def flavor_address_space(cloud, settings):
    """Passthrough GPU flavors whose guests cannot map every GPU's BAR1
    window (issue 40 rule 3): RAM, the 32-bit hole and the BAR1 windows of
    the pool's board (profiles.BAR1) beyond the guest's physical address
    bits (40 with no hw:maxphysaddr_mode; Nova 2023.2 and later take
    the setting, rules/address_space). Where the catalogue has no BAR1
    size of the board (or no board of the pool's PCI ID), the flavor is
    "not judged", naming the board: never silent."""
    found = []
    for flavor, reading in _gpu_flavors(cloud):
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
        label = _flavor_label(flavor)
        pools = _flavor_pools(cloud, reading, [p['name'] for p in by_alias])
        bar1 = max(bars, key=lambda b: b.gib) if bars else None
        result = bar1 and address_space.judge(flavor.get('ram'), gpus,
                                              bar1.gib, extra)
        if result:
            found.append(finding(
                WARNING, 'flavor-address-space', 'flavor %s' % label,
                address_space.symptom(result, gpus, bar1.gib, bar1.board),
                address_space.fix(label, result), pools))
        elif (unknown and gpus
              and address_space.guest_bits(extra) is not None):
            bits = address_space.guest_bits(extra)
            found.append(not_judged(
                'flavor-address-space', 'flavor %s' % label,
                _('BAR1 size of %(board)s unknown: a guest of it (%(ram)d '
                  'MiB of RAM, %(gpus)d GPUs, %(bits)d address bits) maps '
                  'every GPU\'s BAR1 window only if each is at most '
                  '%(room)d GiB (the catalogue\'s BAR1 sizes: '
                  'doc/source/user/catalogue.rst)') % {
                      'board': ', '.join(unknown),
                      'ram': flavor.get('ram') or 0, 'gpus': gpus,
                      'bits': bits, 'room': address_space.room_per_gpu(
                          flavor.get('ram'), gpus, bits)},
                address_space.unknown_fix(label), pools))
    return found


@register('flavor-pci-alias')
def flavor_pci_alias(cloud, settings):
    """PCI aliases of flavors that nova.conf does not define (needs
    ``--nova-conf``): Nova refuses to create the server."""
    if settings is None:
        return _pci_alias_not_judged(cloud)
    defined = settings.get('aliases') or {}
    by_alias = {p['alias']: p for p in cloud.pools.values()
                if p.get('alias') and p.get('pci_id')}
    found = []
    for flavor, reading in _gpu_flavors(cloud):
        for alias in sorted(reading['aliases']):
            if alias in defined:
                continue
            pool = by_alias.get(alias)
            line = ('[pci] alias = %s' % nova_config.alias_json(pool)
                    if pool else
                    '[pci] alias = {"name": "%s", "vendor_id": "<vendor>", '
                    '"product_id": "<product>"}' % alias)
            found.append(finding(
                ERROR, 'flavor-pci-alias',
                'flavor %s' % _flavor_label(flavor),
                _('asks for PCI alias %(alias)s, which nova.conf does not '
                  'define: Nova refuses to create the server ("PCI alias '
                  '%(alias)s is not defined").') % {'alias': alias},
                line, _flavor_pools(cloud, reading,
                                    [pool['name']] if pool else ())))
    return found


@register('pool-vf-alias')
def pool_vf_alias(cloud, settings):
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
            found.append(finding(
                ERROR, 'pool-vf-alias', 'pci_in_placement',
                _('vgpu-vf pool %s asks for VFs by resource class, which '
                  'Nova does only with [filter_scheduler] pci_in_placement '
                  'on.') % name,
                '[filter_scheduler] pci_in_placement = True', [name]))
        if alias is None or alias.get('source') != 'config':
            found.append(finding(
                ERROR, 'pool-vf-alias', obj,
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
            found.append(finding(
                ERROR, 'pool-vf-alias', obj,
                _('vgpu-vf pool %(pool)s: %(wrong)s.')
                % {'pool': name, 'wrong': '; '.join(wrong)}, line, [name]))
        elif pool.get('live_migratable') and not alias.get(
                'live_migratable'):
            found.append(finding(
                WARNING, 'pool-vf-alias', obj,
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
    for flavor, reading in _gpu_flavors(cloud):
        unknown = _unresolved_aliases(reading, None, cloud.pools)
        for alias in unknown:
            found.append(not_judged(
                'flavor-pci-alias', 'flavor %s' % _flavor_label(flavor),
                _('it asks for PCI alias %(alias)s, which no GPU pool '
                  'describes, and nova.conf was not given: unless nova.conf '
                  '[pci] alias defines %(alias)s, Nova refuses every server '
                  'of it ("PCI alias %(alias)s is not defined")')
                % {'alias': alias}, NOVA_CONF_FIX,
                _flavor_pools(cloud, reading)))
        for alias in set(reading['aliases']) - set(unknown):
            assumed.setdefault(alias, []).append((flavor, reading))
    if assumed:
        flavors = sorted({_flavor_label(f) for group in assumed.values()
                          for f, _r in group})
        pools = {p['name'] for p in cloud.pools.values()
                 if p.get('alias') in assumed}
        pools.update(p for group in assumed.values() for _f, r in group
                     for p in _flavor_pools(cloud, r))
        found.append(not_judged(
            'flavor-pci-alias', 'nova.conf [pci] alias',
            _('nova.conf was not given, so whether it defines PCI aliases '
              '%(aliases)s of flavors %(flavors)s is not known (assumed as '
              'gpu config show renders them for their pools)')
            % {'aliases': ', '.join(sorted(assumed)),
               'flavors': ', '.join(flavors)},
            NOVA_CONF_FIX, pools))
    return found


@register('pci-one-time-use')
def pci_one_time_use(cloud, settings):
    """``one_time_use`` device specs Nova refuses (needs ``--nova-conf``
    with a nova-compute's ``[pci]``: ``devices.one_time_use_problems``);
    nothing to judge without it."""
    if settings is None:
        return []
    return [finding(ERROR, 'pci-one-time-use', obj, symptom, fix)
            for obj, symptom, fix in devices.one_time_use_problems(
                settings.get('pci') or {})]


@register('libvirt-post-copy')
def libvirt_post_copy(cloud, settings):
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
    return [finding(
        ERROR, 'libvirt-post-copy',
        'nova.conf [libvirt] live_migration_permit_post_copy',
        _('is True, and pools %s live-migrate servers with VFIO devices '
          '(PCI passthrough, vGPU): QEMU refuses post-copy with them, so '
          'their live migrations fail (gpu drain plans them cold on such '
          'hosts).') % ', '.join(moving),
        '[libvirt] live_migration_permit_post_copy = False', moving)]


@register('placement-wide-trees')
def placement_wide_trees(cloud, settings):
    """Placement's candidate generation where pools have wide provider
    trees (``nova_config.wide_trees``: a host with >= 8 child providers of
    a pool's class and a flavor asking > 4 of them; Placement's "when to
    enable", bug 2126751) without ``nova_config.WIDE_TREE_SETTINGS`` in
    placement.conf (Placement's options, releases beside them). Needs
    placement.conf among the ``--nova-conf`` files; without any file, one
    warning says what is not known."""
    roots = cloud.host_roots()
    members = {h for pool in cloud.pools.values() for h in pool['hosts']}
    trees = nova_config.trees_from_snapshot(
        cloud.placement, {h: sorted(roots[h]) for h in sorted(members)
                          if roots.get(h)})
    wide = nova_config.wide_trees(cloud.pools, trees, cloud.flavors)
    if not wide:
        return []
    pools = sorted({item['pool'] for item in wide})
    why = ' '.join(nova_config.wide_tree_text(item) for item in wide)
    if settings is None:
        return [not_judged(
            'placement-wide-trees', 'placement.conf',
            _('placement.conf was not given, so whether Placement is set '
              'for wide provider trees is not known. %s') % why,
            _('openstack gpu check --nova-conf /etc/nova/nova.conf '
              '--nova-conf /etc/placement/placement.conf'), pools)]
    return [finding(
        WARNING, 'placement-wide-trees',
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


@register('image-firmware')
def image_firmware(cloud, settings):
    """Active images without q35 and UEFI, when passthrough GPU flavors
    exist (any image may be booted with them)."""
    passthrough = sorted(
        name for name, pool in cloud.pools.items()
        if pool['mode'] == pools_mod.PASSTHROUGH)
    if not any(r['mode'] == pools_mod.PASSTHROUGH
               for _f, r in _gpu_flavors(cloud)):
        return []
    if cloud.images is None:
        return [not_judged(
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
        found.append(finding(
            WARNING, 'image-firmware',
            'image %s' % (image.get('name') or image['id']),
            _('%(mt)s=%(machine)s, %(fw)s=%(firmware)s: booted with a '
              'passthrough GPU flavor, GPUs with large PCI BARs may fail '
              'to initialise in the guest (q35 and UEFI needed).')
            % {'mt': images_mod.MACHINE_TYPE, 'machine': machine or '-',
               'fw': images_mod.FIRMWARE_TYPE, 'firmware': firmware or '-'},
            'openstack gpu image set --q35 --uefi %s' % image['id'],
            passthrough))
    return found


@register('image-pool-trait')
def image_pool_trait(cloud, settings):
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
            found.append(finding(
                ERROR, 'image-pool-trait',
                'image %s' % (image.get('name') or image['id']),
                _('requires %(trait)s: servers of any flavor booted from '
                  'it land on the isolated GPU hosts of pool %(pool)s, '
                  'using capacity meant for GPU flavors.')
                % {'trait': trait, 'pool': pool or '-'},
                'openstack image unset --property %s %s' % (
                    key, image['id']),
                [pool] if pool else []))
    return found


# -- scheduler settings (with --nova-conf) ----------------------------------

def _filters_line(settings, missing):
    filters = list(settings['enabled_filters']) + [missing]
    return '[filter_scheduler] enabled_filters = %s' % ','.join(filters)


@register('scheduler-settings')
def scheduler_settings(cloud, settings):
    """Pool features nova.conf does not enforce (needs ``--nova-conf``)."""
    if settings is None:
        return _scheduler_not_judged(cloud)
    found = []
    filters = set(settings['enabled_filters'])
    isolated = sorted(n for n, p in cloud.pools.items() if p['isolate'])
    if isolated and not settings['enable_isolated_aggregate_filtering']:
        found.append(finding(
            ERROR, 'scheduler-settings',
            'enable_isolated_aggregate_filtering',
            _('pools %s are isolated but the scheduler does not filter '
              'isolated aggregates: ordinary flavors land on their GPU '
              'hosts.') % ', '.join(isolated),
            '[scheduler] enable_isolated_aggregate_filtering = True',
            isolated))
    limited = sorted(n for n, p in cloud.pools.items() if p['projects'])
    if (limited and 'AggregateMultiTenancyIsolation' not in filters
            and not settings['limit_tenants_to_placement_aggregate']):
        found.append(finding(
            ERROR, 'scheduler-settings', 'AggregateMultiTenancyIsolation',
            _('pools %s are limited to projects but neither '
              'AggregateMultiTenancyIsolation nor '
              'limit_tenants_to_placement_aggregate is on: every project '
              'can use their hosts.') % ', '.join(limited),
            _filters_line(settings, 'AggregateMultiTenancyIsolation'),
            limited))
    steering = [(f, r) for f, r in _gpu_flavors(cloud) if r['steering']]
    if steering and 'AggregateInstanceExtraSpecsFilter' not in filters:
        names = sorted(_flavor_label(f) for f, _r in steering)
        pools = sorted({p for _f, r in steering
                        for p in capacity_mod.flavor_pools(r, cloud.pools)})
        found.append(finding(
            ERROR, 'scheduler-settings',
            'AggregateInstanceExtraSpecsFilter',
            _('flavors %s steer to aggregates (aggregate_instance_extra_'
              'specs:*) but AggregateInstanceExtraSpecsFilter is off: '
              'their servers land on any host with the resources.')
            % ', '.join(names),
            _filters_line(settings, 'AggregateInstanceExtraSpecsFilter'),
            pools))
    pci = [(f, r) for f, r in _gpu_flavors(cloud) if r['aliases']]
    if pci and not settings['pci_in_placement']:
        names = sorted(_flavor_label(f) for f, _r in pci)
        found.append(finding(
            WARNING, 'scheduler-settings', 'pci_in_placement',
            _('flavors %s ask for PCI aliases but [filter_scheduler] '
              'pci_in_placement is off: Placement is not asked for the '
              'devices, so pool isolation and device traits do not steer '
              'them and only PciPassthroughFilter picks the host.')
            % ', '.join(names),
            '[filter_scheduler] pci_in_placement = True',
            {p for _f, r in pci for p in _flavor_pools(cloud, r)}))
    return found


def _scheduler_not_judged(cloud):
    """Without nova.conf: one warning naming what the pools rely on."""
    relied, pools = [], set()
    isolated = sorted(n for n, p in cloud.pools.items() if p['isolate'])
    if isolated:
        relied.append(_('enable_isolated_aggregate_filtering (isolated '
                        'pools %s)') % ', '.join(isolated))
    limited = sorted(n for n, p in cloud.pools.items() if p['projects'])
    if limited:
        relied.append(_('AggregateMultiTenancyIsolation or '
                        'limit_tenants_to_placement_aggregate (pools %s '
                        'limited to projects)') % ', '.join(limited))
    pools.update(isolated + limited)
    flavors = _gpu_flavors(cloud)
    for setting, wanted in (
            ('AggregateInstanceExtraSpecsFilter',
             [(f, r) for f, r in flavors if r['steering']]),
            ('pci_in_placement', [(f, r) for f, r in flavors
                                  if r['aliases']])):
        if wanted:
            relied.append(_('%(setting)s (flavors %(flavors)s)') % {
                'setting': setting, 'flavors': ', '.join(sorted(
                    _flavor_label(f) for f, _r in wanted))})
            pools.update(p for _f, r in wanted
                         for p in capacity_mod.flavor_pools(r, cloud.pools))
    if not relied:
        return []
    return [not_judged(
        'scheduler-settings', 'nova.conf',
        _('nova.conf was not given, so whether the scheduler enforces what '
          'the GPU pools rely on is not known: %s') % '; '.join(relied),
        NOVA_CONF_FIX, pools)]


@register('quota-gpu-limits')
def quota_gpu_limits(cloud, settings):
    """GPU pools without an enforced GPU quota, or whose boots Nova's
    unified limits strategy refuses (needs ``--nova-conf``; the strategy
    also needs the registered limits, ``cloud.registered_limits``)."""
    conf = (settings or {}).get('quota')
    if not cloud.pools:
        return []
    if conf is None:
        return [not_judged(
            'quota-gpu-limits', 'nova.conf [quota]',
            _('nova.conf was not given, so whether Nova counts the GPUs of '
              'pools %s against quotas is not known')
            % ', '.join(sorted(cloud.pools)), NOVA_CONF_FIX, cloud.pools)]
    by_class = quota_mod.pools_by_class(cloud.pools)
    if conf['driver'] != quota_mod.UNIFIED_DRIVER:
        return [finding(
            WARNING, 'quota-gpu-limits', '[quota] driver',
            _('Nova\'s quota driver %(driver)s counts instances, cores and '
              'RAM, never GPUs: one project can take every GPU of pools '
              '%(pools)s.') % {'driver': conf['driver'],
                               'pools': ', '.join(sorted(cloud.pools))},
            _('%(fix)s, with an [oslo_limit] section for Nova\'s Keystone '
              'user (endpoint_service_type = compute), in nova-api\'s and '
              'nova-conductor\'s nova.conf; then "openstack gpu quota set"')
            % {'fix': quota_mod.FIX_DRIVER}, cloud.pools)]
    registered = cloud.registered_limits
    if registered is None:
        return [not_judged(
            'quota-gpu-limits', 'registered limits',
            _('Keystone\'s registered limits were not read (%(why)s), so '
              'whether [quota] unified_limits_resource_strategy = '
              '%(strategy)s refuses the boots of pools %(pools)s is not '
              'known') % {
                  'why': cloud.unread.get('registered_limits')
                  or _('not asked'), 'strategy': conf['strategy'],
                  'pools': ', '.join(sorted(cloud.pools))},
            _('run gpu check with a token that may read registered limits '
              '(admin)'), cloud.pools)]
    found = []
    for rc, fix in quota_mod.strategy_problems(by_class, registered, conf):
        found.append(finding(
            ERROR, 'quota-gpu-limits', quota_mod.resource_name(rc),
            _('no registered limit for %(name)s and [quota] '
              'unified_limits_resource_strategy = %(strategy)s with '
              'unified_limits_resource_list = %(list)s: Nova refuses every '
              'boot of pools %(pools)s as over quota in projects without '
              'their own limit.')
            % {'name': quota_mod.resource_name(rc),
               'strategy': conf['strategy'],
               'list': ','.join(conf['resource_list']) or '(empty)',
               'pools': ', '.join(by_class[rc])},
            fix, by_class[rc]))
    return found


@register('quota-pci-not-enforced')
def quota_pci_not_enforced(cloud, settings):
    """Pools whose servers ask for their GPUs through a PCI alias
    (passthrough, vgpu-vf) on a Nova before 2026.2, which does not count
    them against unified limits (``quota.PCI_COUNTED_FROM``; Nova's
    release from its maximum compute microversion): a GPU quota on their
    class is not enforced. Not judged when the version was not read."""
    by_class = quota_mod.pci_classes(cloud.pools)
    if not by_class:
        return []
    conf = (settings or {}).get('quota')
    if conf and conf['driver'] != quota_mod.UNIFIED_DRIVER:
        return []  # quota-gpu-limits: no GPU is counted at all
    version = cloud.compute_max_version
    if version is None:
        pools = sorted(p for names in by_class.values() for p in names)
        return [not_judged(
            'quota-pci-not-enforced', 'compute API version',
            _('Nova\'s maximum compute microversion was not read (%s), so '
              'whether its unified limits count the GPUs of pools %s is '
              'not known') % (cloud.unread.get('compute_max_version')
                              or _('not asked'), ', '.join(pools)),
            _('run gpu check again'), pools)]
    found = []
    for rc, names in sorted(by_class.items()):
        note = quota_mod.pci_not_enforced_note(rc, cloud.pools, version)
        if not note:
            continue
        found.append(finding(
            WARNING, 'quota-pci-not-enforced', quota_mod.resource_name(rc),
            note, 'openstack gpu pool set %s --project <project>  (and '
            'private flavors: openstack gpu flavor create ... --private '
            '--project <project>; or upgrade Nova to 2026.2)' % names[0],
            names))
    return found


# -- reservations (Blazar) ----------------------------------------------------

# the fix of blazar-flavor-reservation: whole hosts (Blazar's host
# reservation moves them into the lease's aggregate, GPUs and all)
HOST_LEASE_FIX = (
    'openstack reservation lease create --reservation '
    'resource_type=physical:host,min=1,max=1,hypervisor_properties=\'["=", '
    '"$hypervisor_hostname", "%(host)s"]\' --start-date "<start>" '
    '--end-date "<end>" <lease>  (a host reservation of %(where)s; boot '
    'with --hint reservation=<reservation id>), or reserve a flavor '
    'without PCI alias or numbered groups')


@register('blazar-flavor-reservation')
def blazar_flavor_reservation(cloud, settings):
    """GPU flavors a Blazar ``flavor:instance`` reservation cannot hold
    (``reservations.unreservable``, read from blazar 18.0.0): their PCI
    alias or numbered groups are dropped, or their GPU class is not on
    the hosts' root providers. Only where the cloud runs Blazar; Blazar's
    own reservation flavors are its copies and are left out."""
    if not cloud.blazar:
        return []
    found = []
    for flavor, reading in _gpu_flavors(cloud):
        extra = flavor.get('extra_specs') or {}
        if reservations.passes(extra):
            continue
        hosts, steered = _target_hosts(cloud, reading)
        root_classes = (cloud.root_classes(hosts)
                        if cloud.placement is not None else None)
        why = reservations.unreservable(flavor, root_classes)
        if not why:
            continue
        where = (_('pool %s') % ', '.join(steered) if steered
                 else _('the GPU hosts'))
        found.append(finding(
            WARNING, 'blazar-flavor-reservation',
            'flavor %s' % _flavor_label(flavor),
            _('a Blazar flavor:instance reservation of it does not hold '
              'its GPUs: %s.') % '; '.join(
                  reservations.reason_text(reason, what)
                  for reason, what in sorted(why.items())),
            HOST_LEASE_FIX % {'host': hosts[0] if hosts else '<host>',
                              'where': where},
            _flavor_pools(cloud, reading)))
    return found


# -- Placement ---------------------------------------------------------------

@register('placement-unmapped-trees')
def placement_unmapped_trees(cloud, settings):
    """GPU provider trees no hypervisor maps to: one finding per class."""
    snap = cloud.placement
    mapped = _root_hosts(cloud)
    by_class = {}
    for uuid in sorted(snap.summaries):
        root = snap.providers[uuid]['root']
        if root in mapped:
            continue
        for rc in (snap.summaries[uuid].get('resources') or {}):
            if rc in cloud.gpu_classes:
                by_class.setdefault(rc, set()).add(root)
    found = []
    for rc, roots in sorted(by_class.items()):
        names = sorted(snap.providers[r]['name'] for r in roots)
        example = sorted(roots, key=lambda r: snap.providers[r]['name'])[0]
        found.append(finding(
            WARNING, 'placement-unmapped-trees',
            _('%(n)d provider tree(s) with %(rc)s') % {
                'n': len(roots), 'rc': rc},
            _('Placement counts their %(rc)s but no Nova hypervisor maps '
              'to them (%(names)s%(more)s): stale compute nodes, or hosts '
              'not yet in Nova; no server lands there.')
            % {'rc': rc, 'names': ', '.join(names[:EXAMPLES]),
               'more': ', ...' if len(names) > EXAMPLES else ''},
            _('openstack resource provider delete %(uuid)s  (each stale '
              'root; list: openstack resource provider list --resource '
              '%(rc)s=1)') % {'uuid': example, 'rc': rc}))
    return found


@register('placement-disabled-service')
def placement_disabled_service(cloud, settings):
    """Disabled nova-compute services whose hosts hold GPU capacity."""
    host_roots = cloud.host_roots()
    by_host = pools_mod.pools_by_host(cloud.pools)
    found = []
    for service in sorted(cloud.services, key=lambda s: s.get('host') or ''):
        if service.get('status') != 'disabled':
            continue
        host = service.get('host')
        classes = {}
        for root in sorted(host_roots.get(host, ())):
            for rc, providers in _tree_classes(cloud, root).items():
                classes[rc] = classes.get(rc, 0) + sum(
                    cap for _u, cap, _m in providers)
        if not any(classes.values()):
            continue
        found.append(finding(
            WARNING, 'placement-disabled-service', 'host %s' % host,
            _('nova-compute on %(host)s is disabled but its %(gpus)s are '
              'still counted as capacity: no server lands there.')
            % {'host': host, 'gpus': ', '.join(
                '%d %s' % (n, rc) for rc, n in sorted(classes.items()))},
            'openstack compute service set --enable %s nova-compute' % host,
            by_host.get(host, ())))
    return found


@register('baremetal-node-traits')
def baremetal_node_traits(cloud, settings):
    """Ironic nodes of baremetal pools whose traits differ from what a
    pool flavor requires or forbids (fixed on the node: Nova copies node
    traits to Placement and overwrites provider traits)."""
    found = []
    for item in baremetal.trait_mismatches(
            cloud.pools, _gpu_flavors(cloud), cloud.host_roots(),
            cloud.placement.summaries):
        parts = []
        if item['missing']:
            parts.append(_('lacks %s') % ', '.join(item['missing']))
        if item['extra']:
            parts.append(_('has forbidden %s') % ', '.join(item['extra']))
        symptom = _('node %(node)s %(what)s, which flavor %(flavor)s of '
                    'pool %(pool)s asks about: ') % {
                        'node': item['node'], 'what': _(' and ').join(parts),
                        'flavor': _flavor_label(item['flavor']),
                        'pool': item['pool']}
        if item['any_fits']:
            symptom += _('that flavor never lands on this node.')
        else:
            symptom += _('no node of the pool matches, so every boot of it '
                         'fails with "No valid host".')
        found.append(finding(
            WARNING if item['any_fits'] else ERROR, 'baremetal-node-traits',
            'pool %s / node %s' % (item['pool'], item['node']), symptom,
            baremetal.trait_fix(item), [item['pool']]))
    return found


# -- capacity and utilisation -------------------------------------------------

def _host_classes(cloud, roots):
    """GPU classes the trees of ROOTS offer."""
    found = set()
    for root in roots:
        found.update(_tree_classes(cloud, root))
    return sorted(found)


@register('gpu-stranded')
def gpu_stranded(cloud, settings):
    """Free GPUs on a host that ran out of VCPU, MEMORY_MB or DISK_GB for
    every GPU flavor asking for them: what ``gpu capacity list`` counts as
    stranded (``capacity.stranded_providers``), when each flavor that
    would use them is short of a compute class there (whatever the
    project: a host closed by its filters is reported by other checks).
    """
    settings = manager.decide_settings(settings)
    fits = capacity_mod.Fits(cloud, settings, None)
    usable = []
    for flavor, _reading in _gpu_flavors(cloud):
        try:
            fits.add(flavor)
        except exceptions.CommandError:
            continue  # its request cannot be built: flavor-* checks say it
        usable.append(flavor)
    by_host = pools_mod.pools_by_host(cloud.pools)
    found = []
    for host, roots in sorted(fits.host_roots.items()):
        roots = sorted(roots)
        for rc in _host_classes(cloud, roots):
            free, short = 0, {}
            for _rp, units, users in capacity_mod.stranded_providers(
                    fits, usable, host, rc):
                lacks = [(f, capacity_mod.shortage(fits, f, host, roots))
                         for f in users]
                if not lacks or any(s is None for _f, s in lacks):
                    continue  # no flavor asks, or another reason
                free += units
                for flavor, (klass, left, need) in lacks:
                    short.setdefault(klass, (left, {}))[1][
                        _flavor_label(flavor)] = need
            if not free:
                continue
            pools = sorted(by_host.get(host, ()))
            found.append(finding(
                WARNING, 'gpu-stranded', 'host %s' % host,
                _('%(free)d free %(rc)s on %(host)s but no GPU flavor that '
                  'asks for them fits there: %(short)s. They count as free '
                  'capacity and none of them can be used (a GPU at 0 %% on '
                  'a loaded node is a scheduling problem, not free '
                  'capacity).') % {
                      'free': free, 'rc': rc, 'host': host,
                      'short': '; '.join(
                          _('%(klass)s exhausted (%(left)d free, %(needs)s)')
                          % {'klass': klass, 'left': left,
                             'needs': ', '.join(
                                 _('%(f)s needs %(n)d') % {'f': f, 'n': n}
                                 for f, n in sorted(needs.items()))}
                          for klass, (left, needs) in sorted(
                              short.items()))},
                _stranded_fix(host, pools, cloud.pools), pools))
    return found


def _stranded_fix(host, pools, all_pools):
    """Move the servers that hold the exhausted resources, and keep
    ordinary flavors off the pool's hosts."""
    fix = _('openstack server list --all-projects --host %(host)s  (move '
            'the servers that use no GPU off it: openstack server migrate '
            '--live-migration <server>)') % {'host': host}
    open_pools = [p for p in pools if not all_pools[p]['isolate']]
    if open_pools:
        fix += '; ' + '; '.join('openstack gpu pool set %s --isolate' % p
                                for p in open_pools)
    return fix


# where gpu-idle reads its figures (gpu check's options and settings)
PROMETHEUS_FIX = ('openstack gpu check --prometheus <url>  (or '
                  'prometheus_endpoint in the cloud\'s clouds.yaml entry, '
                  'or $GPUCLIENT_PROMETHEUS_URL)')


# what lets gpu-idle judge the servers Prometheus has no utilisation for
IDLE_DCGM_FIX = _('run the NVIDIA DCGM exporter on their hosts (or in the '
                  'guests, labelled with instance_id): see "openstack gpu '
                  'server list --all-projects --utilisation"')


def _server_label(row):
    if row.get('name') and row['name'] != row['id']:
        return 'server %s (%s)' % (row['name'], row['id'])
    return 'server %s' % row['id']


@register('gpu-idle')
def gpu_idle(cloud, settings):
    """Allocated GPUs idle for the whole window: the ``idle`` rows of
    ``gpu server list --all-projects --utilisation``, which the ops layer
    puts in ``cloud.utilisation`` (a dict: rows, window, idle_below) when
    a Prometheus is configured; ``cloud.unread['utilisation']`` says why
    they could not be read. Neither: the check does not run (gpu check says
    so on stderr)."""
    wanted = cloud.utilisation
    if wanted is None:
        error = cloud.unread.get('utilisation')
        if error is None:
            return []
        return [not_judged(
            'gpu-idle', 'Prometheus',
            _('the GPU utilisation of the servers could not be read '
              '(%s)') % error, PROMETHEUS_FIX)]
    window = utilisation_mod.duration_text(wanted['window'])
    found = []
    unjudged = []
    for row in wanted['rows']:
        if row['state'] != utilisation_mod.IDLE:
            if row['state'] == utilisation_mod.UNKNOWN:
                unjudged.append(row)
            continue
        found.append(finding(
            WARNING, 'gpu-idle', _server_label(row),
            _('project %(project)s holds %(device)s (%(rc)s%(pool)s) and '
              'its peak GPU utilisation over the last %(window)s was '
              '%(peak).1f %% (idle below %(below)g %%): allocated, counted '
              'against quota and capacity, and unused.') % {
                  'project': row['project'] or '-',
                  'device': row['device'] or _('its GPU'),
                  'rc': row['resource_class'] or '-',
                  'pool': (_(', pool %s') % row['pool']) if row['pool']
                  else '',
                  'window': window, 'peak': row['peak'],
                  'below': wanted['idle_below']},
            _('ask project %(project)s to release it (openstack server '
              'delete %(id)s) or resize it to a smaller GPU flavor '
              '(openstack server resize --flavor <flavor> %(id)s); if the '
              'work is bursty, judge it over a longer --window or a lower '
              '--idle-below') % {'project': row['project'] or '-',
                                 'id': row['id']},
            [row['pool']] if row['pool'] else []))
    if unjudged:
        names = sorted({_server_label(r) for r in unjudged})
        found.append(not_judged(
            'gpu-idle', _('%d server device(s)') % len(unjudged),
            _('Prometheus has no utilisation figure for the devices of '
              '%(names)s%(more)s (no DCGM exporter series matches them), '
              'so whether they idle is not known') % {
                  'names': ', '.join(names[:EXAMPLES]),
                  'more': ', ...' if len(names) > EXAMPLES else ''},
            IDLE_DCGM_FIX, sorted({r['pool'] for r in unjudged if r['pool']})))
    return found


# -- the GPUs themselves (DCGM exporter, through Prometheus) -----------------

# what lets the device checks judge a device or host Prometheus has nothing
# for
DCGM_FIX = _('run the NVIDIA DCGM exporter on the host (and, for the '
             'licence of a vGPU guest, in the guest, its series labelled '
             'instance_id=<server id>) and scrape it into the cloud\'s '
             'Prometheus: see "openstack gpu device list"')


# what lets the DCGM checks join a host's or card's series that several
# clouds' exporters (or jobs) answer for
SELECTOR_FIX = _('name this cloud\'s series: openstack gpu check '
                 '--prometheus-selector <label>=<value> (or '
                 'prometheus_selector in the cloud\'s clouds.yaml entry)')


# the answers of device_health.check_queries each DCGM check judges by
# (the XID gauge now is also the GPUs DCGM serves, and their drivers)
_XID = ('xid', 'xid_since', 'xid_since_before')
CHECK_QUERIES = {
    'gpu-unhealthy': _XID + ('health',),
    'gpu-application-xid': _XID,
    'gpu-row-remap': ('row_remap_failure', 'uncorrectable_remapped_rows'),
    'gpu-vgpu-licence': ('licence', 'instance_licence'),
    'gpu-driver-drift': ('xid',),
    'gpu-missing': ('xid',),
}


def unread_answers(cloud, check):
    """Why CHECK cannot run on what Prometheus answered: the reasons the
    answers it needs (CHECK_QUERIES) are not judged (a wrong shape), '; '
    joined; None when they all were."""
    unread = (cloud.device_health or {}).get('unread') or {}
    why = [unread[n] for n in CHECK_QUERIES.get(check, ()) if n in unread]
    return '; '.join(why) or None


def _joined(wanted):
    """WANTED without the device rows of the hosts and cards whose series
    could not be joined (``problems``: [(host, card PCI address or None,
    why)]): neither judged nor counted (a card left out is not missing)."""
    problems = wanted.get('problems') or ()

    def troubled(row):
        return any(row['host'] == host and (pci is None or (
            row['pci_address'] or '')[:7] == pci[:7])
            for host, pci, _why in problems)

    return dict(wanted, rows=[r for r in wanted['rows'] if not troubled(r)])


def _device_health(cloud, check):
    """(cloud.device_health but the devices whose series could not be
    joined, a not-judged finding for each of those) or (None, the
    not-judged finding when Prometheus could not be read or answered a
    query CHECK needs (CHECK_QUERIES) with a wrong shape, or nothing when
    none is configured)."""
    wanted = cloud.device_health
    if wanted is not None:
        why = unread_answers(cloud, check)
        if why:
            return None, [not_judged(check, 'Prometheus', why,
                                     PROMETHEUS_FIX)]
        return _joined(wanted), [not_judged(
            check, 'device %s %s' % (host, pci) if pci else 'host %s' % host,
            why, SELECTOR_FIX) for host, pci, why in wanted.get(
                'problems') or ()]
    error = cloud.unread.get('device_health')
    if error is None:
        return None, []
    return None, [not_judged(
        check, 'Prometheus', _('the DCGM exporter\'s figures could not be '
                               'read (%s)') % error, PROMETHEUS_FIX)]


def _device_label(row):
    return 'device %s %s' % (row['host'], row['pci_address'] or row['name'])


def _holders(row):
    """', held by server X (project P)' of a device row, or ''."""
    if not row['server_ids']:
        return ''
    return _(', held by %(servers)s of project %(projects)s') % {
        'servers': ', '.join(row['servers']),
        'projects': ', '.join(row['projects']) or '-'}


def _some(names):
    names = sorted(names)
    return ', '.join(names[:EXAMPLES]) + (', ...' if len(names) > EXAMPLES
                                          else '')


def _devices_not_judged(check, rows, field, what):
    """One warning for the ROWS Prometheus has no FIELD figure for."""
    rows = device_health.unjudged(rows, field)
    if not rows:
        return []
    return [not_judged(
        check, _('%d GPU device(s)') % len(rows),
        _('Prometheus has no %(what)s figure for %(names)s (no DCGM '
          'exporter series matches them), so whether they are sound is '
          'not known') % {'what': what,
                          'names': _some(_device_label(r) for r in rows)},
        DCGM_FIX, sorted({p for r in rows for p in r['pools']}))]


def _enabled(cloud, host):
    """Does nova-compute on HOST accept new servers?"""
    return any(s.get('host') == host and s.get('status') != 'disabled'
               for s in cloud.services)


def _cordon_fix(host, then):
    return _('openstack gpu host cordon %(host)s; openstack gpu host drain '
             '%(host)s; then %(then)s') % {'host': host, 'then': then}


def _device_finding(check, row, symptom, then, **more):
    """An error about the GPU of ROW: SYMPTOM (with pci, host, rc, held
    and MORE), fixed by a cordon and drain of its host, THEN."""
    return finding(
        ERROR, check, _device_label(row), symptom % dict(
            more, pci=row['pci_address'] or row['name'], host=row['host'],
            rc=row['resource_class'], held=_holders(row)),
        _cordon_fix(row['host'], then), row['pools'])


def _holders_of(row):
    """(name, id, project) of each server holding ROW's device: its
    ``holders`` where the ops layer joined them, else the row's projects
    (one project: that one)."""
    if row.get('holders'):
        return [(h[0], h[1], h[2] or '-') for h in row['holders']]
    project = row['projects'][0] if len(row['projects']) == 1 else '-'
    return [(name, sid, project) for name, sid in zip(
        row['servers'], row['server_ids'], strict=True)]


def _since(row):
    """'since 2024-05-01T10:00:00Z' (or 'since before ...') of ROW's
    XID."""
    return _('since %s') % row.get('xid_since')


def _xid_text(row):
    return _('XID %(xid)d %(since)s (NVIDIA\'s action: %(action)s)') % {
        'xid': row['last_xid'], 'since': _since(row),
        'action': row['xid_action']}


@register('gpu-unhealthy')
def gpu_unhealthy(cloud, settings):
    """A GPU whose host-side series holds a host XID (NVIDIA's action: reset
    the GPU, reboot or contact support; DCGM holds it until the GPU is
    reset) or fails a DCGM health watch, on a host whose nova-compute
    still takes new servers: an error, cordon and drain. An XID
    gpuclient's table does not class: a warning to look it up, no cordon.
    Application and informational XIDs are not the host's (see
    gpu-application-xid). What a guest reports of its own GPU (its
    exporter, which the project controls): a warning marked as the
    guest's report, never a cordon."""
    wanted, found = _device_health(cloud, 'gpu-unhealthy')
    if wanted is None:
        return found
    for row in wanted['rows']:
        if row.get('health_source') != device_health.HOST_SIDE \
                or not _enabled(cloud, row['host']):
            continue
        xid_class = row.get('xid_class')
        failed = row.get('health') == device_health.HEALTH_FAIL
        what = []
        if xid_class in (device_health.XID_HOST,
                         device_health.XID_UNLISTED):
            what.append(_('holds %s') % _xid_text(row))
        if failed:
            what.append(_('fails a DCGM health watch'))
        if xid_class == device_health.XID_HOST or failed:
            found.append(_device_finding(
                'gpu-unhealthy', row,
                _('the GPU at %(pci)s on %(host)s (%(rc)s%(held)s) '
                  '%(what)s, as the host\'s DCGM exporter reports it, and '
                  'nova-compute on %(host)s still takes new servers: the '
                  'next boot there may get a broken GPU.'),
                row['xid_action'] if xid_class == device_health.XID_HOST
                else _('run DCGM\'s diagnostics on it (dcgmi diag -r 3)'),
                what=_(' and ').join(what)))
        elif what:
            found.append(finding(
                WARNING, 'gpu-unhealthy', _device_label(row),
                _('the GPU at %(pci)s on %(host)s (%(rc)s%(held)s) '
                  '%(what)s, as the host\'s DCGM exporter reports it: an XID '
                  'gpuclient does not class, neither known to be the '
                  'host\'s nor the application\'s.') % {
                      'pci': row['pci_address'] or row['name'],
                      'host': row['host'], 'rc': row['resource_class'],
                      'held': _holders(row), 'what': what[0]},
                _('look XID %(xid)d up in NVIDIA\'s XID catalogue '
                  '(%(url)s) and in the host\'s kernel log (journalctl -k '
                  '| grep -i xid): where its action is a GPU reset or a '
                  'reboot, openstack gpu host cordon %(host)s; openstack '
                  'gpu host drain %(host)s') % {
                      'xid': row['last_xid'],
                      'url': device_health.CATALOGUE, 'host': row['host']},
                row['pools']))
    found += _guest_findings(cloud, wanted, 'gpu-unhealthy')
    return found + _devices_not_judged('gpu-unhealthy', wanted['rows'],
                                       'last_xid', _('XID'))


def _guest_findings(cloud, wanted, check):
    """CHECK's warnings about what the guests report of their own GPUs
    (``device_health.guest_reports``): gpu-unhealthy a host or unlisted
    XID or a failed health watch, gpu-row-remap a row-remap failure. The
    guest's word: marked so, and never a cordon or drain."""
    found = []
    for row, server, got in device_health.guest_reports(
            wanted['rows'], wanted['series'], wanted.get('now'),
            wanted['window']):
        what = []
        if check == 'gpu-row-remap':
            if got['row_remap'] == device_health.REMAP_FAILED:
                what.append(_('row remapping failed'))
        else:
            if got['xid_class'] in (device_health.XID_HOST,
                                    device_health.XID_UNLISTED):
                what.append(_xid_text(dict(row, **got)))
            if got['health'] == device_health.HEALTH_FAIL:
                what.append(_('a failed DCGM health watch'))
        if not what:
            continue
        name, project = next(((n, p) for n, sid, p in _holders_of(row)
                              if sid == server), (server, '-'))
        if row.get('health_source') == device_health.HOST_SIDE:
            host_view = _('the host\'s own DCGM series of that GPU reads '
                          'XID %(xid)s, health %(health)s') % {
                              'xid': row['last_xid'],
                              'health': row['health']}
        else:
            host_view = _('the host\'s DCGM has no series of that GPU (a '
                          'GPU bound to vfio-pci for a guest is out of its '
                          'sight)')
        found.append(finding(
            WARNING, check, _server_label({'id': server, 'name': name}),
            _('the guest of server %(name)s (project %(project)s, on '
              '%(host)s) reports %(what)s on its GPU: the guest\'s report, '
              'from an exporter the project runs and labels, so it '
              'decides nothing for the host; %(host_view)s.') % {
                  'name': name, 'project': project, 'host': row['host'],
                  'what': _(' and ').join(what), 'host_view': host_view},
            _('tell project %(project)s what its guest reports; before '
              'acting on host %(host)s, confirm it there (journalctl -k | '
              'grep -i xid; nvidia-smi; openstack gpu device show '
              '%(host)s:%(pci)s)') % {
                  'project': project, 'host': row['host'],
                  'pci': row['pci_address'] or row['name']},
            row['pools']))
    return found


@register('gpu-application-xid')
def gpu_application_xid(cloud, settings):
    """A GPU a server holds whose host-side XID gauge took an application
    XID (NVIDIA's action: restart the application; 13, 31, 94: an illegal
    address, a kernel's fault) within the window: the fault of the
    application the project runs there, not of the host. A warning naming
    the server and project to tell; it ages out with the window. Guests'
    own application XIDs are the project's to see already."""
    wanted, found = _device_health(cloud, 'gpu-application-xid')
    if wanted is None:
        return found
    window = utilisation_mod.duration_text(wanted['window'])
    held = [r for r in wanted['rows'] if r['server_ids']]
    for row in held:
        if row.get('health_source') != device_health.HOST_SIDE \
                or row.get('xid_class') != device_health.XID_APPLICATION \
                or not row.get('xid_recent'):
            continue
        holders = _holders_of(row)
        for name, server, project in holders:
            found.append(finding(
                WARNING, 'gpu-application-xid',
                _server_label({'id': server, 'name': name}),
                _('the GPU at %(pci)s on %(host)s that server %(name)s of '
                  'project %(project)s holds took %(xid)s, within the last '
                  '%(window)s: a fault of the application running on it, '
                  'not of the host%(shared)s.') % {
                      'pci': row['pci_address'] or row['name'],
                      'host': row['host'], 'name': name,
                      'project': project, 'xid': _xid_text(row),
                      'window': window,
                      'shared': _(' (the card is shared by %d servers: '
                                  'whose application it was is not '
                                  'known)') % len(holders)
                      if len(holders) > 1 else ''},
                _('tell project %(project)s to restart its application on '
                  'server %(id)s; nothing to do on the host (this finding '
                  'ages out of the --window)') % {
                      'project': project, 'id': server},
                row['pools']))
    return found + _devices_not_judged('gpu-application-xid', held,
                                       'last_xid', _('XID'))


@register('gpu-row-remap')
def gpu_row_remap(cloud, settings):
    """A GPU whose memory row remapping failed (DCGM_FI_DEV_ROW_REMAP_
    FAILURE) as its host-side series says: its memory can no longer be
    repaired. A guest's own report of it: a warning, the guest's word."""
    wanted, found = _device_health(cloud, 'gpu-row-remap')
    if wanted is None:
        return found
    for row in wanted['rows']:
        if row.get('row_remap') != device_health.REMAP_FAILED \
                or row.get('health_source') != device_health.HOST_SIDE:
            continue
        found.append(_device_finding(
            'gpu-row-remap', row,
            _('row remapping failed on the GPU at %(pci)s on %(host)s '
              '(%(rc)s%(held)s): uncorrectable memory errors can no longer '
              'be repaired on it.'),
            _('reset the GPU (nvidia-smi -r) and, if the failure stays, '
              'contact NVIDIA support to replace it')))
    found += _guest_findings(cloud, wanted, 'gpu-row-remap')
    return found + _devices_not_judged('gpu-row-remap', wanted['rows'],
                                       'row_remap', _('row-remap'))


def _is_vgpu(cloud, row):
    """Does the device of ROW carry vGPUs (a pGPU's VGPU, or a VF of a
    vgpu-vf pool)?"""
    return row['resource_class'] == 'VGPU' or any(
        (cloud.pools.get(p) or {}).get('mode') == pools_mod.VGPU_VF
        for p in row['pools'])


@register('gpu-vgpu-licence')
def gpu_vgpu_licence(cloud, settings):
    """A vGPU server whose guest (DCGM_FI_DEV_VGPU_LICENSE_STATUS, field
    526, series labelled instance_id) or whose vGPU instance on the host
    (DCGM_FI_DEV_VGPU_INSTANCE_LICENSE_STATUS, field 532, joined by its VM
    id, field 520) reports no licence: the vGPU degrades silently."""
    wanted, found = _device_health(cloud, 'gpu-vgpu-licence')
    if wanted is None:
        return found
    states = device_health.licences(wanted['series'])
    unknown = {}
    for row in wanted['rows']:
        if not _is_vgpu(cloud, row):
            continue
        for sid, name in zip(row['server_ids'], row['servers'],
                             strict=True):
            state = states.get(sid)
            if state is None:
                unknown[sid] = (name, row)
                continue
            side, licensed = state
            if licensed:
                continue
            found.append(finding(
                ERROR, 'gpu-vgpu-licence', _server_label(
                    {'id': sid, 'name': name}),
                _('the vGPU of server %(name)s (project %(projects)s, on '
                  '%(host)s) is not licensed (%(side)s): the NVIDIA driver '
                  'degrades an unlicensed vGPU (frame rate and CUDA '
                  'capped) without telling the user.') % {
                      'name': name, 'projects': ', '.join(
                          row['projects']) or '-', 'host': row['host'],
                      'side': _('as its guest reports') if side == 'guest'
                      else _('as the host reports its vGPU instance')},
                _('in the guest, check nvidia-gridd (systemctl status '
                  'nvidia-gridd; nvidia-smi -q shows "License Status") '
                  'and that the guest reaches the NVIDIA License System '
                  'with a client configuration token; on the licence '
                  'server, check that licences of the vGPU type are '
                  'free'), row['pools']))
    if unknown:
        found.append(not_judged(
            'gpu-vgpu-licence', _('%d vGPU server(s)') % len(unknown),
            _('Prometheus has no licence figure for %s (neither the '
              'guest\'s nor the host\'s), so whether they are licensed is '
              'not known') % _some(_server_label({'id': sid, 'name': n})
                                   for sid, (n, _r) in unknown.items()),
            DCGM_FIX, sorted({p for _n, r in unknown.values()
                              for p in r['pools']})))
    return found


def _hosts_rows(rows):
    by_host = {}
    for row in rows:
        by_host.setdefault(row['host'], []).append(row)
    return by_host


@register('gpu-driver-drift')
def gpu_driver_drift(cloud, settings):
    """More than one NVIDIA driver version among the hosts of one pool
    (the DCGM_FI_DRIVER_VERSION label): the pool runs one tested set."""
    wanted, found = _device_health(cloud, 'gpu-driver-drift')
    if wanted is None:
        return found
    series = device_health.host_series(wanted['series'], wanted['hosts'])
    for name, pool in sorted(cloud.pools.items()):
        on = {}
        unread = []
        for host in sorted(pool.get('hosts') or ()):
            versions = device_health.drivers_of(series.get(host, ()))
            if not versions:
                unread.append(host)
            for version in versions:
                on.setdefault(version, []).append(host)
        if len(on) > 1:
            found.append(finding(
                WARNING, 'gpu-driver-drift', 'pool %s' % name,
                _('the hosts of pool %(pool)s run %(n)d NVIDIA driver '
                  'versions: %(on)s; a pool runs one tested set of driver, '
                  'kernel, libvirt and OpenStack, and a server moved '
                  'between them meets another driver.') % {
                      'pool': name, 'n': len(on),
                      'on': '; '.join('%s on %s' % (v, ', '.join(h))
                                      for v, h in sorted(on.items()))},
                _('bring every host of the pool to the version the pool '
                  'was tested with, one host at a time: openstack gpu host '
                  'drain <host>, install the driver, reboot, openstack gpu '
                  'host uncordon <host>'), [name]))
        if unread and on:
            found.append(not_judged(
                'gpu-driver-drift', 'pool %s' % name,
                _('Prometheus has no driver version for %s') % _some(unread),
                DCGM_FIX, [name]))
    return found


def _held_through_pci(cloud, row):
    """Does a server hold ROW's device through PCI passthrough (bound to
    vfio-pci, out of the host DCGM's sight), not as a vGPU?"""
    return bool(row['server_ids']) and not _is_vgpu(cloud, row)


@register('gpu-missing')
def gpu_missing(cloud, settings):
    """A GPU Placement offers whose address the host's DCGM no longer
    serves: it fell off the bus, and boots Placement sends to it fail.
    Compared address by address (a VF by its GPU's bus), never by count:
    a GPU DCGM serves that Placement does not offer makes up for none. A
    GPU a server holds through PCI passthrough is left out while the
    server's guest reports a GPU, and not judged when it is silent too."""
    wanted, found = _device_health(cloud, 'gpu-missing')
    if wanted is None:
        return found
    series = device_health.host_series(wanted['series'], wanted['hosts'])
    by_pool = pools_mod.pools_by_host(cloud.pools)
    unread, unsure = [], []
    for host, rows in sorted(_hosts_rows(wanted['rows']).items()):
        if not any(r['pci_address'] and r['total'] for r in rows):
            continue
        mine = series.get(host, ())
        if not device_health.served(mine):
            unread.append(host)
            continue
        missing, silent, extra = device_health.not_served(
            rows, mine, wanted['series'],
            lambda row: _held_through_pci(cloud, row))
        unsure += silent
        if not missing:
            continue
        found.append(finding(
            ERROR, 'gpu-missing', 'host %s' % host,
            _('DCGM on %(host)s does not serve the GPU(s) Placement offers '
              'at %(missing)s%(extra)s: a GPU fell off the bus, and boots '
              'Placement sends to it fail.') % {
                  'host': host,
                  'missing': ', '.join(sorted(r['pci_address']
                                              for r in missing)),
                  'extra': _(' (it serves %s, which Placement does not '
                             'offer: no stand-in for them)') % ', '.join(
                                 extra) if extra else ''},
            _cordon_fix(host, _(
                'look for XID 79 in the host\'s kernel log, reseat or '
                'replace the GPU and reboot; a GPU removed for good: take '
                'it out of nova.conf ([pci] device_spec, [devices]) so '
                'Placement stops offering it')),
            by_pool.get(host, ())))
    if unsure:
        found.append(not_judged(
            'gpu-missing', _('%d GPU device(s)') % len(unsure),
            _('the host\'s DCGM does not serve %s, which servers hold '
              'through PCI passthrough (bound to vfio-pci: out of the host '
              'DCGM\'s sight), and their guests report no DCGM series, so '
              'whether they are on the bus is not known') % _some(
                  _device_label(r) + _holders(r) for r in unsure),
            DCGM_FIX, sorted({p for r in unsure for p in r['pools']})))
    if unread:
        found.append(not_judged(
            'gpu-missing', _('%d host(s)') % len(unread),
            _('Prometheus has no DCGM series for %s, so which GPUs DCGM '
              'sees there is not known') % _some(unread), DCGM_FIX,
            sorted({p for h in unread for p in by_pool.get(h, ())})))
    return found


# -- running -----------------------------------------------------------------

def unknown_checks(names):
    """Names that are not checks (for --check)."""
    return sorted(set(names or ()) - set(CHECKS))


def run(cloud, settings=None, names=None, pool=None):
    """Findings of the checks NAMES (default: all), errors first.

    POOL keeps only findings about that pool.
    """
    found = []
    for name, func in CHECKS.items():
        if names and name not in names:
            continue
        for item in func(cloud, settings):
            if pool is not None and pool not in item.pools:
                continue
            found.append(item)
    order = {name: i for i, name in enumerate(CHECKS)}
    found.sort(key=lambda f: (SEVERITIES.index(f.severity),
                              order[f.check], f.object))
    return found


# The read beyond the snapshot each check rests on whole: a key of
# ``cloud.unread`` (the source failed: refused, unreachable, an error or a
# wrongly shaped answer) or of ``cloud.unconfigured`` (no source is
# configured: no Prometheus). Without it the check has nothing to judge: it
# could not run (``not_run``), and the exit status does not cover it. A
# read missing for some objects only (one provider's traits, a device
# without a series, nova.conf not given, where the checks judge with the
# settings gpuclient renders) is not this: the check ran and says "not
# judged" of those objects.
SOURCES = {
    'quota-gpu-limits': 'registered_limits',
    'quota-pci-not-enforced': 'compute_max_version',
    'gpu-idle': 'utilisation',
    'gpu-unhealthy': 'device_health',
    'gpu-application-xid': 'device_health',
    'gpu-row-remap': 'device_health',
    'gpu-vgpu-licence': 'device_health',
    'gpu-driver-drift': 'device_health',
    'gpu-missing': 'device_health',
}


def not_run(cloud, names=None):
    """{check: why it could not run} of the checks NAMES (default: all),
    in report order: the checks whose source (SOURCES) CLOUD lacks."""
    found = {}
    for name in CHECKS:
        source = SOURCES.get(name)
        if source is None or (names and name not in names):
            continue
        why = cloud.unread.get(source) or cloud.unconfigured.get(source) or (
            unread_answers(cloud, name))
        if why:
            found[name] = why
    return found


def not_run_text(missing):
    """'check, check (why); check (why)' of NOT_RUN's answer MISSING:
    the checks that could not run for one reason named together."""
    by_why = {}
    for name, why in missing.items():
        by_why.setdefault(why, []).append(name)
    return '; '.join('%s (%s)' % (', '.join(names), str(why).rstrip('.'))
                     for why, names in by_why.items())


# The exit statuses of ``gpu check`` (gpuclient.exit_status, diff(1)'s):
# the checks ran and found nothing that counts; they found an error (with
# --strict, any finding); they could not run (bad options, the cloud
# unreachable or refusing, output that could not be written, or every
# check asked for lacks its source), which is argparse's status for bad
# usage too.
EXIT_CLEAN = exit_status.SAME
EXIT_FINDINGS = exit_status.DIFFERENT
EXIT_NOT_RUN = exit_status.TROUBLE


def exit_status(findings, strict=False, names=None, missing=None):
    """EXIT_NOT_RUN when every check of NAMES (default: all) is in
    MISSING (``not_run``: they could not run); else EXIT_FINDINGS when an
    error (with STRICT: any finding) was found, else EXIT_CLEAN."""
    asked = [n for n in CHECKS if not names or n in names]
    if missing and all(n in missing for n in asked):
        return EXIT_NOT_RUN
    for item in findings:
        if item.severity == ERROR or strict:
            return EXIT_FINDINGS
    return EXIT_CLEAN
