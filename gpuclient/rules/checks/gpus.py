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

"""Pure: the checks of the GPUs themselves.

Capacity no server can use: GPUs stranded on a host out of compute
resources, and GPUs servers hold idle (with a Prometheus). The devices'
health, from the NVIDIA DCGM exporter's series in Prometheus: XIDs,
failed health watches, row remapping, vGPU licences, driver versions and
GPUs fallen off the bus. The versions of the driver, kernel, libvirt and
QEMU a pool's hosts run are also read from their facts
(gpuclient-host-facts, ``checks.hosts``).
"""

from __future__ import annotations

import typing

from osc_lib import exceptions

from gpuclient.i18n import _
from gpuclient.rules import capacity as capacity_mod
from gpuclient.rules import pools as pools_mod
from gpuclient.rules import utilisation as utilisation_mod
from gpuclient.rules.checks import hosts as host_checks
from gpuclient.rules.checks import utils
from gpuclient.rules.devices import health as device_health
from gpuclient.rules.host_facts import shapes as host_shapes
from gpuclient.rules.scheduler import manager

if typing.TYPE_CHECKING:
    from gpuclient.rules import model

# -- capacity and utilisation -------------------------------------------------


def _host_classes(cloud, roots):
    """GPU classes the trees of ROOTS offer."""
    found = set()
    for root in roots:
        found.update(utils.tree_classes(cloud, root))
    return sorted(found)


def gpu_stranded(
        cloud: model.Cloud,
        settings: dict[str, typing.Any] | None) -> list[utils.Finding]:
    """Free GPUs on a host that ran out of VCPU, MEMORY_MB or DISK_GB for
    every GPU flavor asking for them: what ``gpu capacity list`` counts as
    stranded (``capacity.stranded_providers``), when each flavor that
    would use them is short of a compute class there (whatever the
    project: a host closed by its filters is reported by other checks).
    """
    settings = manager.decide_settings(settings)
    fits = capacity_mod.Fits(cloud, settings, None)
    usable = []
    for flavor, _reading in utils.gpu_flavors(cloud):
        try:
            fits.add(flavor)
        except exceptions.CommandError:
            continue  # its request cannot be built: flavor-* checks say it
        usable.append(flavor)
    by_host = pools_mod.pools_by_host(cloud.pools)
    found = []
    for host, roots in sorted(fits.host_roots.items()):
        # the same roots, in order
        roots = sorted(roots)  # type: ignore[assignment]
        for rc in _host_classes(cloud, roots):
            short: dict[str, tuple[int, dict[str, int]]]
            free, short = 0, {}
            for _rp, units, users in capacity_mod.stranded_providers(
                    fits, usable, host, rc):
                lacks = [(f, capacity_mod.shortage(fits, f, host, roots))
                         for f in users]
                if not lacks or any(s is None for _f, s in lacks):
                    continue  # no flavor asks, or another reason
                free += units
                # no shortage is None here (the continue above)
                for flavor, (klass, left, need) in lacks:  # type: ignore[misc]
                    short.setdefault(klass, (left, {}))[1][
                        utils.flavor_label(flavor)] = need
            if not free:
                continue
            pools = sorted(by_host.get(host, ()))
            found.append(utils.finding(
                utils.WARNING, 'gpu-stranded', 'host %s' % host,
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
PROMETHEUS_FIX = utils.PROMETHEUS_FIX


# what lets gpu-idle judge the servers Prometheus has no utilisation for
IDLE_DCGM_FIX = _('run the NVIDIA DCGM exporter on their hosts (or in the '
                  'guests, labelled with instance_id): see "openstack gpu '
                  'server list --all-projects --utilisation"')


def _server_label(row):
    if row.get('name') and row['name'] != row['id']:
        return 'server %s (%s)' % (row['name'], row['id'])
    return 'server %s' % row['id']


def gpu_idle(cloud: model.Cloud,
             settings: dict[str, typing.Any] | None) -> list[utils.Finding]:
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
        return [utils.not_judged(
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
        found.append(utils.finding(
            utils.WARNING, 'gpu-idle', _server_label(row),
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
        found.append(utils.not_judged(
            'gpu-idle', _('%d server device(s)') % len(unjudged),
            _('Prometheus has no utilisation figure for the devices of '
              '%(names)s%(more)s (no DCGM exporter series matches them), '
              'so whether they idle is not known') % {
                  'names': ', '.join(names[:utils.EXAMPLES]),
                  'more': ', ...' if len(names) > utils.EXAMPLES else ''},
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


def unread_answers(cloud: model.Cloud, check: str) -> str | None:
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
            return None, [utils.not_judged(check, 'Prometheus', why,
                                           PROMETHEUS_FIX)]
        return _joined(wanted), [utils.not_judged(
            check, 'device %s %s' % (host, pci) if pci else 'host %s' % host,
            why, SELECTOR_FIX) for host, pci, why in wanted.get(
                'problems') or ()]
    error = cloud.unread.get('device_health')
    if error is None:
        return None, []
    return None, [utils.not_judged(
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
    return ', '.join(names[:utils.EXAMPLES]) + (
        ', ...' if len(names) > utils.EXAMPLES else '')


def _devices_not_judged(check, rows, field, what):
    """One warning for the ROWS Prometheus has no FIELD figure for."""
    rows = device_health.unjudged(rows, field)
    if not rows:
        return []
    return [utils.not_judged(
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
    return utils.finding(
        utils.ERROR, check, _device_label(row), symptom % dict(
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


def gpu_unhealthy(
        cloud: model.Cloud,
        settings: dict[str, typing.Any] | None) -> list[utils.Finding]:
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
            found.append(utils.finding(
                utils.WARNING, 'gpu-unhealthy', _device_label(row),
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
        found.append(utils.finding(
            utils.WARNING, check, _server_label({'id': server, 'name': name}),
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


def gpu_application_xid(
        cloud: model.Cloud,
        settings: dict[str, typing.Any] | None) -> list[utils.Finding]:
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
            found.append(utils.finding(
                utils.WARNING, 'gpu-application-xid',
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


def gpu_row_remap(
        cloud: model.Cloud,
        settings: dict[str, typing.Any] | None) -> list[utils.Finding]:
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


def gpu_vgpu_licence(
        cloud: model.Cloud,
        settings: dict[str, typing.Any] | None) -> list[utils.Finding]:
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
            found.append(utils.finding(
                utils.ERROR, 'gpu-vgpu-licence', _server_label(
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
        found.append(utils.not_judged(
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


# what gpu-driver-drift compares across a pool's hosts from their facts,
# besides the NVIDIA driver (the DCGM exporter's label, else the facts)
FACT_COMPONENTS = (host_shapes.KERNEL, host_shapes.LIBVIRT,
                   host_shapes.QEMU)
COMPONENT_NAMES = {
    host_shapes.KERNEL: _('kernel'),
    host_shapes.LIBVIRT: 'libvirt',
    host_shapes.QEMU: 'QEMU',
}


def _host_driver(facts, host):
    """[the NVIDIA driver version] the facts of HOST give ([] none)."""
    version = (facts.facts.get(host) or host_shapes.HostFacts(
        host)).versions.get(host_shapes.NVIDIA_DRIVER) if facts else None
    return [version.version] if version is not None else []


def _nvidia_drift(name, pool, series, wanted, facts):
    """gpu-driver-drift's findings of POOL's NVIDIA drivers: the DCGM
    exporter's version of each host (SERIES; WANTED: device_health, or
    None when it could not be read), else its facts' (FACTS: Judged, or
    None; not for a passthrough pool, whose hosts do not load it)."""
    on = {}
    unread = []
    use_facts = facts is not None and pool['mode'] in (
        host_checks.NVIDIA_MODES)
    for host in sorted(pool.get('hosts') or ()):
        versions = device_health.drivers_of(series.get(host, ())) \
            if wanted is not None else []
        if not versions and use_facts:
            versions = _host_driver(facts, host)
        if not versions:
            unread.append(host)
        for version in versions:
            on.setdefault(version, []).append(host)
    found = []
    if len(on) > 1:
        found.append(utils.finding(
            utils.WARNING, 'gpu-driver-drift', 'pool %s' % name,
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
        found.append(utils.not_judged(
            'gpu-driver-drift', 'pool %s' % name,
            _('Prometheus has no driver version for %s') % _some(unread),
            DCGM_FIX if wanted is not None else host_checks.HOST_FACTS_FIX,
            [name]))
    return found


def _component_drift(name, pool, facts, component):
    """gpu-driver-drift's findings of COMPONENT's versions (kernel,
    libvirt, QEMU) across POOL's hosts, from their facts (FACTS:
    Judged)."""
    on = {}
    unread = []
    for host in sorted(pool.get('hosts') or ()):
        version = (facts.facts.get(host) or host_shapes.HostFacts(
            host)).versions.get(component)
        if version is None:
            unread.append(host)
        else:
            on.setdefault(version.version, []).append(host)
    label = COMPONENT_NAMES[component]
    obj = 'pool %s / %s' % (name, component)
    found = []
    if len(on) > 1:
        found.append(utils.finding(
            utils.WARNING, 'gpu-driver-drift', obj,
            _('the hosts of pool %(pool)s run %(n)d %(what)s versions: '
              '%(on)s, as their facts say; a pool runs one tested set of '
              'driver, kernel, libvirt and OpenStack, and a server moved '
              'between them meets another (a live migration between '
              'libvirt or QEMU versions may be refused or fail).') % {
                  'pool': name, 'n': len(on), 'what': label,
                  'on': '; '.join('%s on %s' % (v, ', '.join(h))
                                  for v, h in sorted(on.items()))},
            _('bring every host of the pool to the %(what)s version the '
              'pool was tested with, one host at a time: openstack gpu '
              'host drain <host>, upgrade %(what)s, reboot, openstack gpu '
              'host uncordon <host>') % {'what': label}, [name]))
    if unread and on:
        found.append(utils.not_judged(
            'gpu-driver-drift', obj,
            _('Prometheus has no %(what)s version of %(hosts)s in their '
              'facts') % {'what': label, 'hosts': _some(unread)},
            host_checks.HOST_FACTS_FIX, [name]))
    return found


def gpu_driver_drift(
        cloud: model.Cloud,
        settings: dict[str, typing.Any] | None) -> list[utils.Finding]:
    """More than one NVIDIA driver version among the hosts of one pool
    (the DCGM_FI_DRIVER_VERSION label, else the hosts' facts), or more
    than one kernel, libvirt or QEMU version among the hosts of a pool of
    compute hosts (their facts, gpuclient-host-facts'): the pool runs one
    tested set."""
    wanted, found = _device_health(cloud, 'gpu-driver-drift')
    facts, unread = host_checks.judged_facts(
        cloud, 'gpu-driver-drift',
        {h for p in cloud.pools.values() for h in p['hosts']}, stale=False)
    # both could not be read: a row of each, named apart
    found += [item._replace(object=_('Prometheus (host facts)'))
              if found else item for item in unread]
    if wanted is None and facts is None:
        return found
    series = device_health.host_series(
        wanted['series'], wanted['hosts']) if wanted is not None else {}
    for name, pool in sorted(cloud.pools.items()):
        found += _nvidia_drift(name, pool, series, wanted, facts)
        if facts is None or pool['mode'] not in host_checks.HOST_MODES:
            continue
        for component in FACT_COMPONENTS:
            found += _component_drift(name, pool, facts, component)
    return found


def _held_through_pci(cloud, row):
    """Does a server hold ROW's device through PCI passthrough (bound to
    vfio-pci, out of the host DCGM's sight), not as a vGPU?"""
    return bool(row['server_ids']) and not _is_vgpu(cloud, row)


def gpu_missing(cloud: model.Cloud,
                settings: dict[str, typing.Any] | None) -> list[utils.Finding]:
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
        found.append(utils.finding(
            utils.ERROR, 'gpu-missing', 'host %s' % host,
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
        found.append(utils.not_judged(
            'gpu-missing', _('%d GPU device(s)') % len(unsure),
            _('the host\'s DCGM does not serve %s, which servers hold '
              'through PCI passthrough (bound to vfio-pci: out of the host '
              'DCGM\'s sight), and their guests report no DCGM series, so '
              'whether they are on the bus is not known') % _some(
                  _device_label(r) + _holders(r) for r in unsure),
            DCGM_FIX, sorted({p for r in unsure for p in r['pools']})))
    if unread:
        found.append(utils.not_judged(
            'gpu-missing', _('%d host(s)') % len(unread),
            _('Prometheus has no DCGM series for %s, so which GPUs DCGM '
              'sees there is not known') % _some(unread), DCGM_FIX,
            sorted({p for h in unread for p in by_pool.get(h, ())})))
    return found


# the checks of this family, in the order they run
CHECKS = (
    ('gpu-stranded', gpu_stranded),
    ('gpu-idle', gpu_idle),
    ('gpu-unhealthy', gpu_unhealthy),
    ('gpu-application-xid', gpu_application_xid),
    ('gpu-row-remap', gpu_row_remap),
    ('gpu-vgpu-licence', gpu_vgpu_licence),
    ('gpu-driver-drift', gpu_driver_drift),
    ('gpu-missing', gpu_missing),
)
