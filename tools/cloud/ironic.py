"""Ironic in the test cloud: fake-hardware nodes behind Nova's ironic driver.

Standard library only, like the rest of tools/testcloud.  One all-in-one
``ironic`` process (API and conductor, ``rpc_transport = none``) on port 6385
against the cloud's MariaDB, registered in Keystone (service type
``baremetal``, service user ``ironic``; no noauth), with NODES
``fake-hardware`` nodes enrolled and made ``available``, and one nova-compute
running Nova's real ``ironic.IronicDriver`` that reports them to Placement.

For ``tools/testcloud`` (cloud.stack):

* ``write_config(host)`` renders ``etc/ironic/ironic.conf`` and the ironic
  compute's ``etc/nova/nova-compute-<host>.conf``;
* ``start(timeline, host)`` does every remaining step, each skipped when
  already done (database, schema, Keystone, process, nodes, compute,
  discover_hosts) and returns when the nodes are providers in Placement
  (and, unless ``discover=False``, hypervisors of HOST);
* ``stop()`` stops the ironic compute(s) and Ironic (SIGTERM, then
  SIGKILL); ``process_names()``: their names in ``<state>/pids``, for
  cloud.stack's stop;
* ``status()`` returns printable lines: the process and every node;
* ``forget(host)`` undoes a hot-add on a running cloud (compute service,
  providers, Keystone entries, database, configuration).

Also runnable on its own, with tools/ on sys.path::

    cd tools && python3 -m cloud.ironic start|stop|status|forget [--host H]
"""

import argparse
import os
import shutil
import urllib.parse

from cloud import api
from cloud import base
from cloud import hosts as hostlib

PORT = 6385
ENDPOINT = 'http://127.0.0.1:%d' % PORT
API_VERSION = '1.82'  # node shards
CONDUCTOR = 'gpuclient-ironic'
SHARD = 'gpuclient'
DB = 'ironic'
SERVICE_USER = 'ironic'
PROCESS = 'ironic'
DEFAULT_HOST = 'bm-compute-1'
# The service host of the ironic nova-compute that tools/testcloud up starts
# (the test cloud's bare-metal host, cloud.hosts).
HOST = [h.name for h in hostlib.HOSTS if h.driver == hostlib.IRONIC][0]
NODES = 2
RESOURCE_CLASS = 'baremetal.gpu-h100'
# Nova's ironic driver normalises the node's class to this Placement class
PLACEMENT_CLASS = hostlib.BM_RESOURCE_CLASS
NODE_TRAITS = ('HW_CPU_X86_AVX512F', 'CUSTOM_GPU_H100_SXM')
# what an 8 x H100 server would report (Nova's ironic driver copies them to
# the hypervisor record and the node's instance_info; Placement gets only
# the resource class)
NODE_PROPERTIES = {'cpus': 96, 'memory_mb': 2097152, 'local_gb': 3500,
                   'cpu_arch': 'x86_64'}


def _etc():
    return os.path.join(base.STATE, 'etc', 'ironic')


def _conf():
    return os.path.join(_etc(), 'ironic.conf')


def _compute_name(host):
    return 'nova-compute-' + host


def node_uuids(host=DEFAULT_HOST, count=NODES):
    """Deterministic node UUIDs; the first is hostlib's node of HOST.

    So that bm-compute-1's first node is the node name hostlib (and the
    readiness check of tools/testcloud up) already expects.
    """
    return [hostlib.baremetal_node(host) if i == 0 else
            hostlib.node_uuid('baremetal-node:%s:%d' % (host, i))
            for i in range(count)]


def node_name(host, index):
    return '%s-node-%d' % (host, index)


# ---------------------------------------------------------------- config

def write_config(host=DEFAULT_HOST):
    for sub in ('etc/ironic', 'ironic/locks', 'nova/' + host):
        os.makedirs(os.path.join(base.STATE, sub), exist_ok=True)
    base.render('ironic.conf', _conf(), conductor=CONDUCTOR, port=PORT,
                db_ironic=base.db_url(DB),
                authtoken_ironic=base.authtoken(SERVICE_USER),
                service_auth_ironic=base.auth(SERVICE_USER))
    base.render('nova-compute-ironic.conf',
                os.path.join(base.STATE, 'etc', 'nova',
                             'nova-compute-%s.conf' % host),
                host=host, shard=SHARD)


# ---------------------------------------------------------------- database

def setup_db():
    """Create the database and its schema (skipped if they exist)."""
    base.ensure_database(DB, [os.path.join(base.BIN, 'ironic-dbsync'),
                              '--config-file', _conf(), 'create_schema'],
                         'setup-ironic.log')


# ---------------------------------------------------------------- keystone

def register(session):
    """Service user ironic (admin, service), service and endpoints."""
    api.ensure_service_user(session, SERVICE_USER, base.PASSWORD)
    api.ensure_service(session, 'ironic', 'baremetal', ENDPOINT)


def _unregister(session):
    idn = 'identity'
    for svc in session.get(idn, '/services')['services']:
        if svc['type'] == 'baremetal':
            for ep in session.get(idn, '/endpoints?service_id=%s' %
                                  svc['id'])['endpoints']:
                session.delete(idn, '/endpoints/%s' % ep['id'])
            session.delete(idn, '/services/%s' % svc['id'])
    for user in session.get(idn, '/users?name=%s' %
                            SERVICE_USER)['users']:
        session.delete(idn, '/users/%s' % user['id'])


# ---------------------------------------------------------------- ironic API

class Ironic:
    """Ironic's API with a system-scoped admin token.

    Creating nodes is for system-scoped admins in Ironic's default policy
    (a project-scoped admin only sees nodes its project owns).
    """

    def __init__(self, timeout=30):
        self.timeout = timeout
        body = {'auth': {
            'identity': {'methods': ['password'], 'password': {'user': {
                'name': 'admin', 'domain': {'id': 'default'},
                'password': base.PASSWORD}}},
            'scope': {'system': {'all': True}}}}
        _, _, headers = api.request('POST', api.KEYSTONE + '/auth/tokens',
                                    body, timeout=timeout)
        self.token = headers['X-Subject-Token']

    def call(self, method, path, body=None, expect=()):
        headers = {'X-Auth-Token': self.token,
                   'X-OpenStack-Ironic-API-Version': API_VERSION}
        try:
            return api.request(method, ENDPOINT + path, body, headers,
                               timeout=self.timeout)[1]
        except api.APIError as exc:
            if exc.status in expect:
                return None
            raise

    def nodes(self):
        fields = ('uuid,name,provision_state,power_state,maintenance,'
                  'resource_class,traits,instance_uuid,shard,last_error')
        found, path = [], '/v1/nodes?fields=%s' % fields
        while path:  # pages of [api]max_limit nodes, linked by "next"
            data = self.call('GET', path)
            found.extend(data['nodes'])
            nxt = urllib.parse.urlsplit(data.get('next') or '')
            path = ('%s?%s' % (nxt.path, nxt.query)
                    if data['nodes'] and nxt.path else None)
        return found


def _wait_state(client, uuid, state, timeout=60, field='provision_state'):
    def reached():
        node = client.call('GET', '/v1/nodes/%s' % uuid)
        if node['last_error'] and node[field] != state:
            raise base.CloudError('node %s: %s' % (uuid, node['last_error']))
        return node[field] == state
    base.wait('node %s %s' % (uuid, state), reached, timeout,
              interval=0.5)


def enrol(client, host=DEFAULT_HOST, count=NODES):
    """COUNT fake-hardware nodes, driven enroll -> manageable -> available.

    Idempotent: an existing node is only driven on to ``available``.
    """
    for index, uuid in enumerate(node_uuids(host, count)):
        node = client.call('GET', '/v1/nodes/%s' % uuid, expect={404})
        if node is None:
            node = client.call('POST', '/v1/nodes', {
                'uuid': uuid, 'name': node_name(host, index),
                'driver': 'fake-hardware',
                'network_interface': 'noop',
                'resource_class': RESOURCE_CLASS,
                'properties': NODE_PROPERTIES,
                'shard': SHARD})
            client.call('PUT', '/v1/nodes/%s/traits' % uuid,
                        {'traits': list(NODE_TRAITS)})
        if node['provision_state'] == 'enroll':
            client.call('PUT', '/v1/nodes/%s/states/provision' % uuid,
                        {'target': 'manage'})
            _wait_state(client, uuid, 'manageable')
            node['provision_state'] = 'manageable'
        if node['provision_state'] == 'manageable':
            client.call('PUT', '/v1/nodes/%s/states/provision' % uuid,
                        {'target': 'provide'})
            _wait_state(client, uuid, 'available')
        if client.call('GET', '/v1/nodes/%s' % uuid)['power_state'] is None:
            # A new fake node has no power state, and Nova's ironic driver
            # reserves a node without one.  "power on": the fake deploy
            # and tear-down never change it, and an instance on a node
            # that is off is "Shutdown" to Nova, whose power-state sync
            # would then stop the server.
            client.call('PUT', '/v1/nodes/%s/states/power' % uuid,
                        {'target': 'power on'})
            _wait_state(client, uuid, 'power on', field='power_state')


# ---------------------------------------------------------------- processes

def _start_process():
    base.spawn(PROCESS, [os.path.join(base.BIN, 'ironic'),
                         '--config-file', _conf()])


def _start_compute(host):
    etc = os.path.join(base.STATE, 'etc', 'nova')
    base.spawn(_compute_name(host), [
        os.path.join(base.BIN, 'nova-compute'),
        '--config-file', os.path.join(etc, 'nova.conf'),
        '--config-file', os.path.join(etc, 'nova-compute-%s.conf' % host)])


def _providers_ready(session, uuids):
    rps = session.get('placement', '/resource_providers?resources=%s:1' %
                      PLACEMENT_CLASS, microversion='1.14'
                      )['resource_providers']
    return set(uuids) <= {rp['name'] for rp in rps}


def _hypervisors_ready(session, host, uuids):
    hvs = session.get('compute', '/os-hypervisors?with_servers=false',
                      microversion='2.53')['hypervisors']
    return set(uuids) <= {hv['hypervisor_hostname'] for hv in hvs}


def start(timeline, host=DEFAULT_HOST, count=NODES, discover=True):
    """Bring Ironic, its nodes and HOST's ironic nova-compute up.

    Returns when the nodes are providers in Placement; with DISCOVER also
    runs ``nova-manage cell_v2 discover_hosts`` and waits until they are
    hypervisors (tools/testcloud up discovers every host itself).
    """
    if not os.path.exists(_conf()):
        write_config(host)
    setup_db()
    timeline('ironic database ready')
    session = api.Session()
    register(session)
    if not base.running(PROCESS):
        _start_process()
    base.wait('ironic API', base.http_up(ENDPOINT + '/v1'), 60)
    timeline('ironic (API and conductor) up on port %d' % PORT)
    client = Ironic()
    enrol(client, host, count)
    timeline('%d fake-hardware nodes available' % count)
    if not base.running(_compute_name(host)):
        _start_compute(host)
    uuids = node_uuids(host, count)
    base.wait('ironic nodes in placement',
              lambda: _providers_ready(session, uuids), 180, interval=1)
    timeline('nova-compute %s reported the nodes to placement as %s' % (
        host, PLACEMENT_CLASS))
    if not discover:
        return
    base.run([os.path.join(base.BIN, 'nova-manage'), '--config-file',
              os.path.join(base.STATE, 'etc', 'nova', 'nova.conf'),
              'cell_v2', 'discover_hosts', '--verbose'],
             'setup-discover.log')
    base.wait('ironic hypervisors',
              lambda: _hypervisors_ready(session, host, uuids), 60)
    timeline('%s discovered: its nodes are hypervisors' % host)


def ironic_computes():
    """Service hosts whose nova-compute.conf uses Nova's ironic driver."""
    etc = os.path.join(base.STATE, 'etc', 'nova')
    found = []
    for conf in sorted(os.listdir(etc)) if os.path.isdir(etc) else ():
        if conf.startswith('nova-compute-') and conf.endswith('.conf'):
            with open(os.path.join(etc, conf)) as f:
                if 'compute_driver = ironic.IronicDriver' in f.read():
                    found.append(conf[len('nova-compute-'):-len('.conf')])
    return found


def process_names(exclude=()):
    """Recorded names of the processes this module starts (but EXCLUDE)."""
    names = [_compute_name(h) for h in ironic_computes()] + [PROCESS]
    return [n for n in names if n not in exclude]


def stop():
    """Stop the ironic nova-compute(s), then Ironic (for a hot-add;
    tools/testcloud down stops process_names() with the other services)."""
    base.stop_processes(process_names())


def forget(host=DEFAULT_HOST, count=NODES):
    """Undo a hot-add: HOST's compute service and providers, Keystone
    entries, the database and the configuration.  Call after stop().

    Not for the test cloud's own bare-metal host (``HOST``): that one
    goes with ``tools/testcloud down``."""
    session = api.Session()
    svcs = session.get('compute', '/os-services?host=%s' % host,
                       microversion='2.53')['services']
    for svc in svcs:
        session.delete('compute', '/os-services/%s' % svc['id'],
                       microversion='2.53')
    for uuid in node_uuids(host, count):
        # nova deletes them with the service; this catches what is left
        session.delete('placement', '/resource_providers/%s' % uuid,
                       expect={404})
    _unregister(session)
    base.sql('DROP DATABASE IF EXISTS %s' % DB)
    # configuration too, so that status() and process_names() see no Ironic
    os.unlink(os.path.join(base.STATE, 'etc', 'nova',
                           'nova-compute-%s.conf' % host))
    shutil.rmtree(_etc())


def status():
    """Printable lines: the ironic process, its API and its nodes.

    Empty when this cloud has no Ironic configured."""
    if not os.path.exists(_conf()):
        return []
    pid = base.read_pid(PROCESS)
    alive = bool(pid and base.alive(pid))
    computes = ['%s %s' % (h, 'up' if base.alive(base.read_pid(
        _compute_name(h))) else 'down') for h in ironic_computes()]
    lines = ['ironic %s (pid %s, API %s; nova-compute %s)' % (
        'up' if alive else 'down', pid or '-', ENDPOINT,
        ', '.join(computes) or '-')]
    if not alive:
        return lines
    try:
        nodes = Ironic(timeout=10).nodes()
    except Exception as exc:  # noqa: BLE001
        return lines + ['ironic API not answering: %s' % exc]
    lines.append('%-36s %-20s %-11s %-9s %-5s %s' % (
        'node', 'name', 'provision', 'power', 'maint', 'resource class'))
    for n in nodes:
        lines.append('%-36s %-20s %-11s %-9s %-5s %s' % (
            n['uuid'], n['name'], n['provision_state'], n['power_state'],
            'yes' if n['maintenance'] else 'no', n['resource_class']))
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(prog='python3 -m cloud.ironic')
    parser.add_argument('command',
                        choices=('start', 'stop', 'status', 'forget'))
    parser.add_argument('--host', default=DEFAULT_HOST,
                        help='service host of the ironic nova-compute')
    parser.add_argument('--nodes', type=int, default=NODES,
                        help='fake-hardware nodes to enrol')
    args = parser.parse_args(argv)
    if args.command == 'start':
        write_config(args.host)
        start(base.Timeline(), args.host, args.nodes)
    elif args.command == 'stop':
        stop()
    elif args.command == 'forget':
        forget(args.host, args.nodes)
    else:
        print('\n'.join(status()))
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
