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

"""The test cloud's fake-GPU nova-computes (tools/cloud/hosts.py, run by
cloud.compute): ``start`` and ``spawn`` them, the readiness checks of
``tools/testcloud up`` (``providers_ready``, ``hypervisors_ready``,
``computes_up``), the spares kept disabled (``spares``,
``disable_spares``) and ``restart``, which re-cuts one host
(``tools/testcloud restart-compute``).

The bare-metal host's compute is cloud.ironic's.  Standard library only,
like the rest of tools/testcloud.
"""

import os
import signal

from cloud import api
from cloud import base
from cloud import hosts as hostlib


def spawn(host):
    """Start HOST's nova-compute with its nova-compute-<host>.conf."""
    etc = os.path.join(base.STATE, 'etc', 'nova')
    conf = ['--config-file', os.path.join(etc, 'nova.conf')]
    base.spawn('nova-compute-' + host.name, [
        os.path.join(base.BIN, 'python'), '-m', 'cloud.compute', *conf,
        '--config-file',
        os.path.join(etc, 'nova-compute-%s.conf' % host.name)],
        env={'PYTHONPATH': base.TOOLS})


def start():
    """The nova-compute of every host but the bare-metal one."""
    for h in hostlib.HOSTS:
        if h.driver == hostlib.IRONIC:
            continue  # started by cloud.ironic once Ironic has its nodes
        spawn(h)


def _providers_ready_one(session, host, root):
    with_class = session.get(
        'placement', '/resource_providers?resources=%s:1&in_tree=%s' % (
            host.gpu_class, root['uuid']),
        microversion='1.14')['resource_providers']
    return len(with_class) >= max(host.children, 1)


def providers_ready(session):
    """Every compute's provider tree, as its driver reports it."""
    rps = session.get('placement', '/resource_providers',
                      microversion='1.14')['resource_providers']
    by_name = {rp['name']: rp for rp in rps}
    for h in hostlib.HOSTS:
        root = by_name.get(h.nodename)
        if root is None:
            return False
        if not _providers_ready_one(session, h, root):
            return False
    return True


def hypervisors_ready(session):
    found = session.get('compute', '/os-hypervisors',
                        microversion='2.53')['hypervisors']
    names = {hv['hypervisor_hostname'] for hv in found}
    return names >= {h.nodename for h in hostlib.HOSTS}


def computes_up(session):
    """Every compute up; enabled, but for the spares."""
    svcs = session.get('compute', '/os-services?binary=nova-compute')
    up = {s['host'] for s in svcs['services']
          if s['state'] == 'up' and (s['status'] == 'enabled'
                                     or s['host'] in spares())}
    return up >= {h.name for h in hostlib.HOSTS}


def spares():
    return {h.name for h in hostlib.HOSTS if h.spare}


def disable_spares(session):
    """Disable the spare hosts' compute services (hosts.SPARE_REASON)."""
    svcs = session.get('compute', '/os-services?binary=nova-compute',
                       microversion='2.53')['services']
    for svc in svcs:
        if svc['host'] in spares() and svc['status'] == 'enabled':
            session.put('compute', '/os-services/%s' % svc['id'],
                        {'status': 'disabled',
                         'disabled_reason': hostlib.SPARE_REASON},
                        microversion='2.53')


def expected_devices(extra):
    """{pGPU address: class} a fake vGPU/MIG driver reports for the extra
    nova.conf text EXTRA (cloud.fakevirt.VgpuDriver.device_classes, read
    here without nova), or None when it lists no mdev type."""
    import configparser
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    parser.read_string(extra or '')
    types = [t.strip() for t in parser.get(
        'devices', 'enabled_mdev_types', fallback='').split(',')
        if t.strip()]
    if not types:
        return None
    found = {}
    for mdev_type in types:
        section = 'mdev_%s' % mdev_type
        rc = parser.get(section, 'mdev_class', fallback='VGPU') or 'VGPU'
        for address in parser.get(section, 'device_addresses',
                                  fallback='').split(','):
            if address.strip():
                found.setdefault(address.strip(), rc)
    return found


def _tree_matches(session, host, devices):
    """Does HOST's provider tree in Placement hold exactly DEVICES
    ({address: class}, one unit each) as children (None: at least
    host.children providers of its class)?"""
    rps = session.get('placement', '/resource_providers',
                      microversion='1.14')['resource_providers']
    root = next((rp for rp in rps if rp['name'] == host.nodename), None)
    if root is None:
        return False
    if devices is None:
        return _providers_ready_one(session, host, root)
    children = {rp['name']: rp for rp in rps
                if rp['root_provider_uuid'] == root['uuid']
                and rp['uuid'] != root['uuid']}
    wanted = {'%s_pci_%s' % (host.nodename, a.replace(':', '_').replace(
        '.', '_')): rc for a, rc in devices.items()}
    if set(children) != set(wanted):
        return False
    for name, rc in wanted.items():
        inv = session.get('placement', '/resource_providers/%s/inventories'
                          % children[name]['uuid'])['inventories']
        if set(inv) != {rc}:
            return False
    return True


def restart(timeline, host, extra, disable_new_spare):
    """(Re)write HOST's nova-compute-<host>.conf with EXTRA, restart (or
    start) its nova-compute, wait for its provider tree and discover it;
    a spare never started before is disabled if DISABLE_NEW_SPARE."""
    etc = os.path.join(base.STATE, 'etc', 'nova')
    os.makedirs(os.path.join(base.STATE, 'nova', host.name), exist_ok=True)
    base.render('nova-compute.conf',
                os.path.join(etc, 'nova-compute-%s.conf' % host.name),
                host=host.name, driver=host.driver, extra=extra)
    timeline('wrote %s' % os.path.join(etc, 'nova-compute-%s.conf'
                                       % host.name))
    session = api.Session()
    known = session.get('compute', '/os-services?binary=nova-compute'
                        '&host=%s' % host.name)['services']
    name = 'nova-compute-' + host.name
    pid = base.read_pid(name)
    if pid and base.alive(pid) and base.ours(name, pid):
        base.signal_group(pid, signal.SIGTERM)
        if not base.wait_dead([pid], 60):
            base.signal_group(pid, signal.SIGKILL)
            base.wait_dead([pid], 10)
        timeline('stopped %s (pid %d)' % (name, pid))
    spawn(host)
    timeline('started %s' % name)
    devices = expected_devices(extra) if host.kind in ('vgpu', 'mig') \
        else None
    base.wait('%s provider tree in placement' % host.name,
              lambda: _tree_matches(session, host, devices), 240,
              interval=1)
    timeline('placement holds the provider tree of %s' % host.name)
    base.run([os.path.join(base.BIN, 'nova-manage'), '--config-file',
              os.path.join(etc, 'nova.conf'), 'cell_v2', 'discover_hosts'],
             'setup-discover.log')

    def service_up():
        svcs = session.get('compute', '/os-services?binary=nova-compute'
                           '&host=%s' % host.name)['services']
        return any(s['state'] == 'up' for s in svcs)

    def hypervisor():
        found = session.get('compute', '/os-hypervisors',
                            microversion='2.53')['hypervisors']
        return any(hv['hypervisor_hostname'] == host.nodename
                   for hv in found)

    base.wait('%s hypervisor' % host.name, hypervisor, 60)
    base.wait('%s compute service up' % host.name, service_up, 60)
    if host.spare and not known:
        # a spare never started before comes up enabled: disable it (the
        # status of one Nova knew stays as it was)
        svcs = session.get('compute', '/os-services?binary=nova-compute'
                           '&host=%s' % host.name,
                           microversion='2.53')['services']
        for svc in svcs:
            if svc['status'] == 'enabled' and disable_new_spare:
                session.put('compute', '/os-services/%s' % svc['id'],
                            {'status': 'disabled',
                             'disabled_reason': hostlib.SPARE_REASON},
                            microversion='2.53')
    timeline('%s up and discovered' % host.name)
