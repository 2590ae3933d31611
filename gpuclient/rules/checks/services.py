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

"""Pure: the checks of the services a GPU server passes through.

Nova's scheduler settings and quotas (with ``--nova-conf``; the quotas
also with Keystone's registered limits and Nova's version), Blazar's
flavor reservations, Placement's trees against Nova's hypervisors and
compute services, and the traits of Ironic's nodes.
"""

from __future__ import annotations

import typing

from gpuclient.i18n import _
from gpuclient.rules import baremetal
from gpuclient.rules import capacity as capacity_mod
from gpuclient.rules import pools as pools_mod
from gpuclient.rules import quota as quota_mod
from gpuclient.rules import reservations
from gpuclient.rules.checks import utils

if typing.TYPE_CHECKING:
    from gpuclient.rules import model

# -- scheduler settings (with --nova-conf) ----------------------------------


def _filters_line(settings, missing):
    filters = list(settings['enabled_filters']) + [missing]
    return '[filter_scheduler] enabled_filters = %s' % ','.join(filters)


def scheduler_settings(
        cloud: model.Cloud,
        settings: dict[str, typing.Any] | None) -> list[utils.Finding]:
    """Pool features nova.conf does not enforce (needs ``--nova-conf``)."""
    if settings is None:
        return _scheduler_not_judged(cloud)
    found = []
    filters = set(settings['enabled_filters'])
    isolated = sorted(n for n, p in cloud.pools.items() if p['isolate'])
    if isolated and not settings['enable_isolated_aggregate_filtering']:
        found.append(utils.finding(
            utils.ERROR, 'scheduler-settings',
            'enable_isolated_aggregate_filtering',
            _('pools %s are isolated but the scheduler does not filter '
              'isolated aggregates: ordinary flavors land on their GPU '
              'hosts.') % ', '.join(isolated),
            '[scheduler] enable_isolated_aggregate_filtering = True',
            isolated))
    limited = sorted(n for n, p in cloud.pools.items() if p['projects'])
    if (limited and 'AggregateMultiTenancyIsolation' not in filters
            and not settings['limit_tenants_to_placement_aggregate']):
        found.append(utils.finding(
            utils.ERROR, 'scheduler-settings',
            'AggregateMultiTenancyIsolation',
            _('pools %s are limited to projects but neither '
              'AggregateMultiTenancyIsolation nor '
              'limit_tenants_to_placement_aggregate is on: every project '
              'can use their hosts.') % ', '.join(limited),
            _filters_line(settings, 'AggregateMultiTenancyIsolation'),
            limited))
    steering = [(f, r) for f, r in utils.gpu_flavors(cloud) if r['steering']]
    if steering and 'AggregateInstanceExtraSpecsFilter' not in filters:
        names = sorted(utils.flavor_label(f) for f, _r in steering)
        pools = sorted({p for _f, r in steering
                        for p in capacity_mod.flavor_pools(r, cloud.pools)})
        found.append(utils.finding(
            utils.ERROR, 'scheduler-settings',
            'AggregateInstanceExtraSpecsFilter',
            _('flavors %s steer to aggregates (aggregate_instance_extra_'
              'specs:*) but AggregateInstanceExtraSpecsFilter is off: '
              'their servers land on any host with the resources.')
            % ', '.join(names),
            _filters_line(settings, 'AggregateInstanceExtraSpecsFilter'),
            pools))
    pci = [(f, r) for f, r in utils.gpu_flavors(cloud) if r['aliases']]
    if pci and not settings['pci_in_placement']:
        names = sorted(utils.flavor_label(f) for f, _r in pci)
        found.append(utils.finding(
            utils.WARNING, 'scheduler-settings', 'pci_in_placement',
            _('flavors %s ask for PCI aliases but [filter_scheduler] '
              'pci_in_placement is off: Placement is not asked for the '
              'devices, so pool isolation and device traits do not steer '
              'them and only PciPassthroughFilter picks the host.')
            % ', '.join(names),
            '[filter_scheduler] pci_in_placement = True',
            {p for _f, r in pci for p in utils.flavor_pools(cloud, r)}))
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
    flavors = utils.gpu_flavors(cloud)
    for setting, wanted in (
            ('AggregateInstanceExtraSpecsFilter',
             [(f, r) for f, r in flavors if r['steering']]),
            ('pci_in_placement', [(f, r) for f, r in flavors
                                  if r['aliases']])):
        if wanted:
            relied.append(_('%(setting)s (flavors %(flavors)s)') % {
                'setting': setting, 'flavors': ', '.join(sorted(
                    utils.flavor_label(f) for f, _r in wanted))})
            pools.update(p for _f, r in wanted
                         for p in capacity_mod.flavor_pools(r, cloud.pools))
    if not relied:
        return []
    return [utils.not_judged(
        'scheduler-settings', 'nova.conf',
        _('nova.conf was not given, so whether the scheduler enforces what '
          'the GPU pools rely on is not known: %s') % '; '.join(relied),
        utils.NOVA_CONF_FIX, pools)]


def quota_gpu_limits(
        cloud: model.Cloud,
        settings: dict[str, typing.Any] | None) -> list[utils.Finding]:
    """GPU pools without an enforced GPU quota, or whose boots Nova's
    unified limits strategy refuses (needs ``--nova-conf``; the strategy
    also needs the registered limits, ``cloud.registered``)."""
    conf = (settings or {}).get('quota')
    if not cloud.pools:
        return []
    if conf is None:
        return [utils.not_judged(
            'quota-gpu-limits', 'nova.conf [quota]',
            _('nova.conf was not given, so whether Nova counts the GPUs of '
              'pools %s against quotas is not known')
            % ', '.join(sorted(cloud.pools)), utils.NOVA_CONF_FIX,
            cloud.pools)]
    by_class = quota_mod.pools_by_class(cloud.pools)
    if conf['driver'] != quota_mod.UNIFIED_DRIVER:
        return [utils.finding(
            utils.WARNING, 'quota-gpu-limits', '[quota] driver',
            _('Nova\'s quota driver %(driver)s counts instances, cores and '
              'RAM, never GPUs: one project can take every GPU of pools '
              '%(pools)s.') % {'driver': conf['driver'],
                               'pools': ', '.join(sorted(cloud.pools))},
            _('%(fix)s, with an [oslo_limit] section for Nova\'s Keystone '
              'user (endpoint_service_type = compute), in nova-api\'s and '
              'nova-conductor\'s nova.conf; then "openstack gpu quota set"')
            % {'fix': quota_mod.FIX_DRIVER}, cloud.pools)]
    if cloud.registered is None:
        return [utils.not_judged(
            'quota-gpu-limits', 'registered limits',
            _('Keystone\'s registered limits were not read (%(why)s), so '
              'whether [quota] unified_limits_resource_strategy = '
              '%(strategy)s refuses the boots of pools %(pools)s is not '
              'known') % {
                  'why': cloud.unread.get('registered')
                  or _('not asked'), 'strategy': conf['strategy'],
                  'pools': ', '.join(sorted(cloud.pools))},
            _('run gpu check with a token that may read registered limits '
              '(admin)'), cloud.pools)]
    registered = {name: limit['limit']
                  for name, limit in cloud.registered.items()}
    found = []
    for rc, fix in quota_mod.strategy_problems(by_class, registered, conf):
        found.append(utils.finding(
            utils.ERROR, 'quota-gpu-limits', quota_mod.resource_name(rc),
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


def quota_pci_not_enforced(
        cloud: model.Cloud,
        settings: dict[str, typing.Any] | None) -> list[utils.Finding]:
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
        return [utils.not_judged(
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
        found.append(utils.finding(
            utils.WARNING, 'quota-pci-not-enforced',
            quota_mod.resource_name(rc),
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


def blazar_flavor_reservation(
        cloud: model.Cloud,
        settings: dict[str, typing.Any] | None) -> list[utils.Finding]:
    """GPU flavors a Blazar ``flavor:instance`` reservation cannot hold
    (``reservations.unreservable``, read from blazar 18.0.0): their PCI
    alias or numbered groups are dropped, or their GPU class is not on
    the hosts' root providers. Only where the cloud runs Blazar; Blazar's
    own reservation flavors are its copies and are left out."""
    # ops.snapshot.read reads it always (the catalog, no request)
    assert cloud.blazar is not None  # noqa: S101 - read
    if not cloud.blazar:
        return []
    found = []
    for flavor, reading in utils.gpu_flavors(cloud):
        extra = flavor.get('extra_specs') or {}
        if reservations.passes(extra):
            continue
        hosts, steered = utils.target_hosts(cloud, reading)
        root_classes = (cloud.root_classes(hosts)
                        if cloud.placement is not None else None)
        why = reservations.unreservable(flavor, root_classes)
        if not why:
            continue
        where = (_('pool %s') % ', '.join(steered) if steered
                 else _('the GPU hosts'))
        found.append(utils.finding(
            utils.WARNING, 'blazar-flavor-reservation',
            'flavor %s' % utils.flavor_label(flavor),
            _('a Blazar flavor:instance reservation of it does not hold '
              'its GPUs: %s.') % '; '.join(
                  reservations.reason_text(reason, what)
                  for reason, what in sorted(why.items())),
            HOST_LEASE_FIX % {'host': hosts[0] if hosts else '<host>',
                              'where': where},
            utils.flavor_pools(cloud, reading)))
    return found


# -- Placement ---------------------------------------------------------------

def placement_unmapped_trees(
        cloud: model.Cloud,
        settings: dict[str, typing.Any] | None) -> list[utils.Finding]:
    """GPU provider trees no hypervisor maps to: one finding per class."""
    # gpu check reads Placement (ops.check_ops.run)
    snap: model.Placement = cloud.placement  # type: ignore[assignment]
    assert cloud.gpu_classes is not None  # noqa: S101 - read with it
    mapped = utils.root_hosts(cloud)
    by_class: dict[str, set[str]] = {}
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
        found.append(utils.finding(
            utils.WARNING, 'placement-unmapped-trees',
            _('%(n)d provider tree(s) with %(rc)s') % {
                'n': len(roots), 'rc': rc},
            _('Placement counts their %(rc)s but no Nova hypervisor maps '
              'to them (%(names)s%(more)s): stale compute nodes, or hosts '
              'not yet in Nova; no server lands there.')
            % {'rc': rc, 'names': ', '.join(names[:utils.EXAMPLES]),
               'more': ', ...' if len(names) > utils.EXAMPLES else ''},
            _('openstack resource provider delete %(uuid)s  (each stale '
              'root; list: openstack resource provider list --resource '
              '%(rc)s=1)') % {'uuid': example, 'rc': rc}))
    return found


def placement_disabled_service(
        cloud: model.Cloud,
        settings: dict[str, typing.Any] | None) -> list[utils.Finding]:
    """Disabled nova-compute services whose hosts hold GPU capacity."""
    host_roots = cloud.host_roots()
    by_host = pools_mod.pools_by_host(cloud.pools)
    found = []
    # gpu check reads the services
    for service in sorted(cloud.services, key=lambda s: s.get('host') or ''):  # type: ignore[arg-type]
        if service.get('status') != 'disabled':
            continue
        host = service.get('host')
        classes: dict[str, int] = {}
        for root in sorted(host_roots.get(host, ())):
            for rc, providers in utils.tree_classes(cloud, root).items():
                classes[rc] = classes.get(rc, 0) + sum(
                    cap for _u, cap, _m in providers)
        if not any(classes.values()):
            continue
        found.append(utils.finding(
            utils.WARNING, 'placement-disabled-service', 'host %s' % host,
            _('nova-compute on %(host)s is disabled but its %(gpus)s are '
              'still counted as capacity: no server lands there.')
            % {'host': host, 'gpus': ', '.join(
                '%d %s' % (n, rc) for rc, n in sorted(classes.items()))},
            'openstack compute service set --enable %s nova-compute' % host,
            by_host.get(host, ())))
    return found


def baremetal_node_traits(
        cloud: model.Cloud,
        settings: dict[str, typing.Any] | None) -> list[utils.Finding]:
    """Ironic nodes of baremetal pools whose traits differ from what a
    pool flavor requires or forbids (fixed on the node: Nova copies node
    traits to Placement and overwrites provider traits)."""
    found = []
    for item in baremetal.trait_mismatches(
            cloud.pools, utils.gpu_flavors(cloud), cloud.host_roots(),
            # gpu check reads Placement (ops.check_ops.run)
            cloud.placement.summaries):  # type: ignore[union-attr]
        parts = []
        if item['missing']:
            parts.append(_('lacks %s') % ', '.join(item['missing']))
        if item['extra']:
            parts.append(_('has forbidden %s') % ', '.join(item['extra']))
        symptom = _('node %(node)s %(what)s, which flavor %(flavor)s of '
                    'pool %(pool)s asks about: ') % {
                        'node': item['node'], 'what': _(' and ').join(parts),
                        'flavor': utils.flavor_label(item['flavor']),
                        'pool': item['pool']}
        if item['any_fits']:
            symptom += _('that flavor never lands on this node.')
        else:
            symptom += _('no node of the pool matches, so every boot of it '
                         'fails with "No valid host".')
        found.append(utils.finding(
            utils.WARNING if item['any_fits'] else utils.ERROR,
            'baremetal-node-traits',
            'pool %s / node %s' % (item['pool'], item['node']), symptom,
            baremetal.trait_fix(item), [item['pool']]))
    return found


# the checks of this family, in the order they run
CHECKS = (
    ('scheduler-settings', scheduler_settings),
    ('quota-gpu-limits', quota_gpu_limits),
    ('quota-pci-not-enforced', quota_pci_not_enforced),
    ('blazar-flavor-reservation', blazar_flavor_reservation),
    ('placement-unmapped-trees', placement_unmapped_trees),
    ('placement-disabled-service', placement_disabled_service),
    ('baremetal-node-traits', baremetal_node_traits),
)
