"""tools/testcloud: the gpuclient test cloud on this machine.

Standard library only: it runs with the system python3 before the cloud's
venv exists.  See doc/source/contributor/testcloud.rst.
"""

import argparse
import concurrent.futures
import fcntl
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import time

from cloud import api
from cloud import base
from cloud import blazar
from cloud import hosts as hostlib
from cloud import ironic
from cloud import node_exporter
from cloud import prometheus as prom

REQUIREMENTS = os.path.join(base.CLOUD_DIR, 'requirements.txt')
STAMP = os.path.join(base.VENV, '.gpuclient-requirements.sha256')

# prometheus: the cloud's metrics store that gpu ... --utilisation reads;
# prometheus-node-exporter: per-NUMA-node memory of some fake hosts
# (Debian's; their systemd services are not used)
APT_PACKAGES = ('rabbitmq-server', 'mariadb-server', 'prometheus',
                'prometheus-node-exporter')
DEMO_PROJECT = 'gpuclient-demo'
DEMO_USER = 'gpuclient-demo'
# admin + no_extra_specs: Nova's policy (etc/nova-policy.yaml) denies it
# flavor extra specs, for fault-injection tests
OPERATOR_USER = 'gpuclient-flavor-operator'
IMAGE = 'gpuclient-tiny'
RABBIT = '/usr/lib/rabbitmq/bin'
# port -> what listens there (all on 127.0.0.1)
PORTS = {3306: 'mariadb', 5672: 'rabbitmq', 25672: 'rabbitmq (dist)',
         5000: 'keystone', 8778: 'placement', 9292: 'glance',
         8774: 'nova-api', 9696: 'neutron read-only stub',
         9090: 'prometheus', 9400: 'DCGM exporter stand-in',
         9401: 'gpuclient -f openmetrics, served by a test',
         1234: 'blazar-api',
         **{port: 'node_exporter of ' + host for host, port in
            hostlib.NODE_EXPORTER_PORTS.items()}}
PROMETHEUS_PORT = 9090
DCGM_PORT = 9400
# where Prometheus also scrapes "gpu capacity list -f openmetrics" when a
# test serves it there (nothing listens otherwise: the target is down)
CAPACITY_PORT = 9401
# the Prometheus rules gpuclient ships, which the test cloud's Prometheus
# evaluates as an operator's does (the dashboard's panels read them:
# gpuclient/tests/functional/test_dashboard.py)
RULES = os.path.join(os.path.dirname(base.TOOLS), 'etc', 'prometheus',
                     'gpuclient.rules.yml')
# the DCGM exporter stand-in's devices, which tests rewrite to set values
# (tools/cloud/dcgm_exporter.py reads it on every scrape)
DCGM_DEVICES = os.path.join(base.STATE, 'dcgm', 'devices.json')
# WSGI services: name -> (port, module, threads, env)
WSGI = {
    'keystone': (5000, 'keystone.wsgi.api:application', 4,
                 {'OS_KEYSTONE_CONFIG_DIR': 'etc'}),
    'neutron-stub': (9696, 'cloud.neutron_stub:application', 1, {}),
    'placement': (8778, 'placement.wsgi.api:application', 4,
                  {'OS_PLACEMENT_CONFIG_DIR': 'etc/placement'}),
    'glance-api': (9292, 'glance.wsgi.api:application', 2,
                   {'OS_GLANCE_CONFIG_DIR': 'etc/glance'}),
    'nova-api': (8774, 'nova.wsgi.osapi_compute:application', 4,
                 {'OS_NOVA_CONFIG_DIR': 'etc/nova',
                  'OS_NOVA_CONFIG_FILES':
                      'api-paste.ini;nova.conf;nova-api.conf'}),
}
# stop order of the OpenStack processes (all stopped together, computes
# signalled first); rabbitmq, epmd and mariadb follow in that order
OPENSTACK_SERVICES = (
    ['nova-compute-' + h.name for h in hostlib.HOSTS] +
    ['nova-scheduler', 'nova-conductor', 'nova-api', 'glance-api',
     'placement', 'neutron-stub', 'keystone', 'prometheus',
     'dcgm-exporter'] +
    ['node-exporter-' + h for h in sorted(hostlib.NODE_EXPORTER_PORTS)])


# ---------------------------------------------------------------- install

def _missing_apt_packages():
    missing = []
    if not os.path.exists(os.path.join(base.BIN, 'python')):
        # what "python3 -m venv" and building uWSGI need
        try:
            import ensurepip  # noqa: F401
        except ImportError:
            missing.append('python3-venv')
        include = sysconfig.get_paths()['include']
        if not os.path.exists(os.path.join(include, 'Python.h')):
            missing.append('python3-dev')
    for pkg in APT_PACKAGES:
        out = subprocess.run(
            ['dpkg-query', '-W', '-f=${Status}', pkg],
            capture_output=True, text=True)
        if 'install ok installed' not in out.stdout:
            missing.append(pkg)
    if shutil.which('gcc') is None and not os.path.exists(STAMP):
        missing.append('gcc')  # uWSGI is built from source by pip
    return missing


def _requirements_hash():
    with open(REQUIREMENTS, 'rb') as f:
        return hashlib.sha256(f.read()).hexdigest()


def install(timeline):
    """Debian packages and the venv, only what is missing or changed."""
    missing = _missing_apt_packages()
    if missing:
        env = dict(os.environ, DEBIAN_FRONTEND='noninteractive')
        timeline('apt-get install %s' % ' '.join(missing))
        subprocess.run(['apt-get', 'update', '-q'], check=True, env=env,
                       stdout=subprocess.DEVNULL)
        # The packages' postinst cannot start the daemons without an init
        # system ("policy-rc.d denied execution"): harmless, up starts them.
        subprocess.run(['apt-get', 'install', '-y', '-q',
                        '--no-install-recommends', *missing],
                       check=True, env=env, stdout=subprocess.DEVNULL)
        timeline('apt packages installed')
    want = _requirements_hash()
    have = None
    if os.path.exists(STAMP):
        with open(STAMP) as f:
            have = f.read().strip()
    if have == want and os.path.exists(os.path.join(base.BIN, 'python')):
        return
    if not os.path.exists(os.path.join(base.BIN, 'python')):
        timeline('creating venv %s' % base.VENV)
        subprocess.run([sys.executable, '-m', 'venv', base.VENV], check=True)
    timeline('pip install -r tools/cloud/requirements.txt')
    subprocess.run([os.path.join(base.BIN, 'pip'), 'install', '-q',
                    '--disable-pip-version-check', '-r', REQUIREMENTS],
                   check=True)
    with open(STAMP, 'w') as f:
        f.write(want + '\n')
    timeline('venv ready')


# ---------------------------------------------------------------- processes


def _rabbit_env():
    r = os.path.join(base.STATE, 'rabbit')
    return {
        'HOME': os.path.join(r, 'home'),
        'RABBITMQ_NODENAME': 'gpuclient@localhost',
        'RABBITMQ_MNESIA_BASE': os.path.join(r, 'mnesia'),
        'RABBITMQ_LOG_BASE': os.path.join(r, 'log'),
        'RABBITMQ_CONFIG_FILE': os.path.join(base.STATE, 'etc',
                                             'rabbitmq.conf'),
        'RABBITMQ_ENABLED_PLUGINS_FILE': os.path.join(r, 'enabled_plugins'),
        'RABBITMQ_PID_FILE': base.pidfile('rabbitmq'),
        'RABBITMQ_DIST_PORT': '25672',
        # Erlang distribution and epmd on loopback only
        'RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS':
            '-kernel inet_dist_use_interface {127,0,0,1}',
        'ERL_EPMD_ADDRESS': '127.0.0.1',
    }


def stop(timeline):
    pids = base.recorded()
    if not pids:
        timeline('nothing recorded in %s: nothing to stop' % base.PIDS)
        return
    groups = [(n, pids[n]) for n in OPENSTACK_SERVICES if pids.get(n)]
    groups += [(n, pids[n]) for n in ironic.process_names(OPENSTACK_SERVICES)
               if pids.get(n)]
    groups += [(n, pids[n]) for n in blazar.process_names(OPENSTACK_SERVICES)
               if pids.get(n)]
    for _name, pid in groups:
        base.signal_group(pid, signal.SIGTERM)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(
            base.group_alive(pid) for _n, pid in groups):
        time.sleep(0.2)
    for name, pid in groups:
        if base.group_alive(pid):
            timeline('%s did not stop on SIGTERM: SIGKILL' % name)
            base.signal_group(pid, signal.SIGKILL)
        os.unlink(base.pidfile(name))
    timeline('OpenStack services stopped')
    if pids.get('rabbitmq'):
        rc = subprocess.run(
            [os.path.join(RABBIT, 'rabbitmqctl'), 'stop',
             base.pidfile('rabbitmq')],
            env=dict(os.environ, **_rabbit_env()), capture_output=True)
        if rc.returncode and base.alive(pids['rabbitmq']):
            os.kill(pids['rabbitmq'], signal.SIGTERM)
            base.wait_dead([pids['rabbitmq']], 20)
        if os.path.exists(base.pidfile('rabbitmq')):
            os.unlink(base.pidfile('rabbitmq'))
        timeline('rabbitmq stopped')
    if pids.get('epmd'):
        if base.alive(pids['epmd']):
            os.kill(pids['epmd'], signal.SIGTERM)
            base.wait_dead([pids['epmd']], 5)
        os.unlink(base.pidfile('epmd'))
    if pids.get('mariadb'):
        os.kill(pids['mariadb'], signal.SIGTERM)
        if not base.wait_dead([pids['mariadb']], 30):
            os.kill(pids['mariadb'], signal.SIGKILL)
        os.unlink(base.pidfile('mariadb'))
        timeline('mariadb stopped')
    for name in base.recorded():  # anything else recorded (should be none)
        pid = base.read_pid(name)
        if pid and base.alive(pid):
            base.signal_group(pid, signal.SIGKILL)
        os.unlink(base.pidfile(name))


# ---------------------------------------------------------------- config


CLOUDS_YAML = """\
# generated by tools/testcloud up
clouds:
  gpuclient-admin:
    auth:
      auth_url: http://127.0.0.1:5000/v3
      username: admin
      password: {password}
      project_name: admin
      user_domain_name: Default
      project_domain_name: Default
    region_name: RegionOne
    identity_api_version: 3
    interface: public
    # where gpu server list / usage list --utilisation find Prometheus
    prometheus_endpoint: http://127.0.0.1:{prometheus_port}
  gpuclient-flavor-operator:
    auth:
      auth_url: http://127.0.0.1:5000/v3
      username: {operator_user}
      password: {password}
      project_name: admin
      user_domain_name: Default
      project_domain_name: Default
    region_name: RegionOne
    identity_api_version: 3
    interface: public
  gpuclient-member:
    auth:
      auth_url: http://127.0.0.1:5000/v3
      username: {demo_user}
      password: {password}
      project_name: {demo_project}
      user_domain_name: Default
      project_domain_name: Default
    region_name: RegionOne
    identity_api_version: 3
    interface: public
"""


def _write_config():
    etc = os.path.join(base.STATE, 'etc')
    for sub in ('etc/nova', 'etc/glance', 'etc/placement', 'logs', 'pids',
                'keystone', 'glance/images', 'glance/staging',
                'glance/tasks', 'nova/controller', 'nova/locks',
                'rabbit/mnesia', 'rabbit/log', 'rabbit/home'):
        os.makedirs(os.path.join(base.STATE, sub), exist_ok=True)
    for h in hostlib.HOSTS:
        os.makedirs(os.path.join(base.STATE, 'nova', h.name), exist_ok=True)
    base.render('keystone.conf', os.path.join(etc, 'keystone.conf'))
    base.render('placement.conf', os.path.join(etc, 'placement',
                                           'placement.conf'))
    base.render('glance-api.conf', os.path.join(etc, 'glance',
                                            'glance-api.conf'))
    base.render('nova.conf', os.path.join(etc, 'nova', 'nova.conf'))
    with open(os.path.join(etc, 'nova', 'nova-api.conf'), 'w') as f:
        f.write('[DEFAULT]\nlog_file = %s/nova-api.log\n' % base.LOGS)
    for h in hostlib.HOSTS:
        if h.driver == hostlib.IRONIC:
            continue  # cloud.ironic renders its compute's conf
        base.render('nova-compute.conf',
                os.path.join(etc, 'nova', 'nova-compute-%s.conf' % h.name),
                host=h.name, driver=h.driver, extra=h.extra_conf)
    ironic.write_config(ironic.HOST)
    blazar.write_config()
    shutil.copy(os.path.join(base.CLOUD_DIR, 'etc', 'rabbitmq.conf'), etc)
    shutil.copy(os.path.join(base.CLOUD_DIR, 'etc', 'nova-policy.yaml'),
                os.path.join(etc, 'nova', 'policy.yaml'))
    shutil.copy(os.path.join(base.VENV, 'etc', 'nova', 'api-paste.ini'),
                os.path.join(etc, 'nova'))
    shutil.copy(os.path.join(base.VENV, 'etc', 'glance',
                             'glance-api-paste.ini'),
                os.path.join(etc, 'glance'))
    with open(os.path.join(base.STATE, 'rabbit', 'enabled_plugins'), 'w') as f:
        f.write('[].\n')
    with open(os.path.join(base.STATE, 'clouds.yaml'), 'w') as f:
        f.write(CLOUDS_YAML.format(password=base.PASSWORD, demo_user=DEMO_USER,
                                   demo_project=DEMO_PROJECT,
                                   operator_user=OPERATOR_USER,
                                   prometheus_port=PROMETHEUS_PORT))


# ---------------------------------------------------------------- start-up

def _port_busy(port):
    import socket
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(('127.0.0.1', port)) == 0


def _start_mariadb():
    base.run(['mariadb-install-db', '--no-defaults',
          '--datadir=%s/mysql' % base.STATE, '--user=root',
          '--auth-root-authentication-method=normal', '--skip-test-db'],
         'mariadb-install.log')
    base.spawn('mariadb', [
        '/usr/sbin/mariadbd', '--no-defaults',
        '--datadir=%s/mysql' % base.STATE,
        '--socket=%s/mysql.sock' % base.STATE,
        '--pid-file=%s/mysql.pid' % base.STATE, '--port=3306',
        '--bind-address=127.0.0.1', '--user=root', '--skip-name-resolve',
        '--innodb-buffer-pool-size=64M',
        '--innodb-flush-log-at-trx-commit=0', '--max-connections=1000',
        '--log-error=%s/mariadb.log' % base.LOGS])
    client = ['mariadb', '--no-defaults', '-S', base.STATE + '/mysql.sock',
              '-uroot']

    def ready():
        return subprocess.run(client + ['-e', 'select 1'],
                              capture_output=True).returncode == 0
    base.wait('mariadb', ready, 60)
    sql = "CREATE USER '%s'@'127.0.0.1' IDENTIFIED BY '%s';" % (
        base.DB_USER, base.PASSWORD)
    sql += "GRANT ALL ON *.* TO '%s'@'127.0.0.1';" % base.DB_USER
    for db in ('keystone', 'placement', 'glance', 'nova_api', 'nova_cell0',
               'nova_cell1'):
        sql += 'CREATE DATABASE %s;' % db
    subprocess.run(client + ['-e', sql], check=True, capture_output=True)


def _setup_keystone():
    km = [os.path.join(base.BIN, 'keystone-manage'), '--config-file',
          os.path.join(base.STATE, 'etc', 'keystone.conf')]
    owner = ['--keystone-user', 'root', '--keystone-group', 'root']
    base.run(km + ['db_sync'], 'setup-keystone.log')
    base.run(km + ['fernet_setup'] + owner, 'setup-keystone.log')
    base.run(km + ['credential_setup'] + owner, 'setup-keystone.log')
    url = api.KEYSTONE
    base.run(km + ['bootstrap', '--bootstrap-password', base.PASSWORD,
               '--bootstrap-admin-url', url,
               '--bootstrap-internal-url', url,
               '--bootstrap-public-url', url,
               '--bootstrap-region-id', 'RegionOne'], 'setup-keystone.log')


# Nova's unified limits (etc/nova.conf [quota] driver): Keystone registered
# limits of the compute service, what "nova-manage limits
# migrate_to_unified_limits" copies from Nova's legacy defaults. None for
# GPU classes (class:VGPU, ...): unlimited until a test sets a limit.
REGISTERED_LIMITS = {
    'servers': 10, 'class:VCPU': 20, 'class:MEMORY_MB': 51200,
    'server_metadata_items': 128, 'server_injected_files': 5,
    'server_injected_file_content_bytes': 10240,
    'server_injected_file_path_bytes': 255, 'server_key_pairs': 100,
    'server_groups': 10, 'server_group_members': 10,
}


def _register_limits(session):
    """Create REGISTERED_LIMITS for the compute service (idempotent)."""
    compute = [s for s in session.get('identity', '/services')['services']
               if s['type'] == 'compute'][0]
    have = {r['resource_name'] for r in session.get(
        'identity', '/registered_limits?service_id=%s' % compute['id'])[
            'registered_limits']}
    todo = [{'service_id': compute['id'], 'region_id': 'RegionOne',
             'resource_name': name, 'default_limit': value}
            for name, value in sorted(REGISTERED_LIMITS.items())
            if name not in have]
    if todo:
        session.post('identity', '/registered_limits',
                     {'registered_limits': todo})


def _setup_nova():
    nm = [os.path.join(base.BIN, 'nova-manage'), '--config-file',
          os.path.join(base.STATE, 'etc', 'nova', 'nova.conf')]
    base.run(nm + ['api_db', 'sync'], 'setup-nova.log')
    base.run(nm + ['cell_v2', 'map_cell0', '--database_connection',
               base.db_url('nova_cell0')], 'setup-nova.log')
    base.run(nm + ['cell_v2', 'create_cell', '--name', 'cell1'],
         'setup-nova.log')
    base.run(nm + ['db', 'sync'], 'setup-nova.log')


def _start_wsgi(name):
    port, module, threads, env = WSGI[name]
    argv = [os.path.join(base.BIN, 'uwsgi'),
            '--http-socket', '127.0.0.1:%d' % port,
            '--module', module, '--virtualenv', base.VENV,
            '--pythonpath', base.TOOLS,
            '--master', '--processes', '1', '--threads', str(threads),
            '--enable-threads', '--lazy-apps', '--die-on-term',
            '--need-app', '--buffer-size', '65535',
            # nova-api's worker keeps non-daemon threads: without a short
            # mercy the master waits 60 s for it on SIGTERM.
            '--worker-reload-mercy', '3', '--reload-mercy', '3',
            # python-requests reuses connections; uWSGI's http-socket
            # resets the second request on one ("Connection reset by
            # peer"): close every connection.
            '--add-header', 'Connection: close',
            '--procname-prefix-spaced', 'gpuclient-' + name,
            '--logto', os.path.join(base.LOGS, name + '-uwsgi.log')]
    for key, value in env.items():
        if key.endswith('_DIR'):
            value = os.path.join(base.STATE, value)
        argv += ['--env', '%s=%s' % (key, value)]
    base.spawn(name, argv)


def _start_nova():
    etc = os.path.join(base.STATE, 'etc', 'nova')
    conf = ['--config-file', os.path.join(etc, 'nova.conf')]
    _start_wsgi('nova-api')
    for svc in ('conductor', 'scheduler'):
        base.spawn('nova-' + svc, [
            os.path.join(base.BIN, 'nova-' + svc), *conf,
            '--log-file', os.path.join(base.LOGS, 'nova-%s.log' % svc)])
    for h in hostlib.HOSTS:
        if h.driver == hostlib.IRONIC:
            continue  # started by cloud.ironic once Ironic has its nodes
        base.spawn('nova-compute-' + h.name, [
            os.path.join(base.BIN, 'python'), '-m', 'cloud.compute', *conf,
            '--config-file',
            os.path.join(etc, 'nova-compute-%s.conf' % h.name)],
            env={'PYTHONPATH': base.TOOLS})


def _node_exporters():
    """Debian's node_exporter for each host of NODE_EXPORTER_PORTS, on a
    fake sysfs tree of the host's NUMA topology; the scrape target of
    each, labelled as a real deployment's (instance <nodename>:<port>)."""
    targets = []
    for host in hostlib.HOSTS:
        port = hostlib.NODE_EXPORTER_PORTS.get(host.name)
        if port is None:
            continue
        sysfs = node_exporter.write_sysfs(
            os.path.join(base.STATE, 'node-exporter', host.name, 'sys'),
            hostlib.numa_cells(host), hostlib.HOST_VCPUS,
            hostlib.HOST_MEMORY_MB)
        base.spawn('node-exporter-' + host.name,
                   node_exporter.argv(sysfs, port))
        targets.append(prom.Target(
            'node', ['127.0.0.1:%d' % port],
            labels={'instance': '%s:%d' % (host.nodename, port)}))
    return targets


def _start_metrics():
    """The DCGM exporter stand-in (no device until a test writes some),
    the node_exporters and Debian's Prometheus scraping them every
    second, on loopback, with gpuclient's rules (RULES)."""
    os.makedirs(os.path.dirname(DCGM_DEVICES), exist_ok=True)
    with open(DCGM_DEVICES, 'w') as f:
        f.write('{"devices": []}\n')
    base.spawn('dcgm-exporter', [
        os.path.join(base.BIN, 'python'),
        os.path.join(base.CLOUD_DIR, 'dcgm_exporter.py'), '--devices',
        DCGM_DEVICES, '--port', str(DCGM_PORT)])
    node_targets = _node_exporters()
    work = os.path.join(base.STATE, 'prometheus')
    os.makedirs(work, exist_ok=True)
    config = os.path.join(work, 'prometheus.yml')
    with open(config, 'w') as f:
        f.write(prom.config([
            prom.Target('dcgm', ['127.0.0.1:%d' % DCGM_PORT]),
            prom.Target('gpuclient-capacity',
                        ['127.0.0.1:%d' % CAPACITY_PORT])] + node_targets,
            rule_files=[RULES]))
    base.spawn('prometheus', [
        prom.BINARY, '--config.file=' + config,
        '--storage.tsdb.path=' + os.path.join(work, 'data'),
        '--storage.tsdb.retention.time=1d',
        '--web.listen-address=127.0.0.1:%d' % PROMETHEUS_PORT])


def _tiny_image():
    # 1 MiB of zeros: the fake drivers never read it
    return b'\0' * (1 << 20)


def _providers_ready(session):
    """Every compute's provider tree, as its driver reports it."""
    rps = session.get('placement', '/resource_providers',
                      microversion='1.14')['resource_providers']
    by_name = {rp['name']: rp for rp in rps}
    for h in hostlib.HOSTS:
        root = by_name.get(h.nodename)
        if root is None:
            return False
        with_class = session.get(
            'placement', '/resource_providers?resources=%s:1&in_tree=%s' % (
                h.gpu_class, root['uuid']),
            microversion='1.14')['resource_providers']
        if len(with_class) < max(h.children, 1):
            return False
    return True


def _hypervisors_ready(session):
    found = session.get('compute', '/os-hypervisors',
                        microversion='2.53')['hypervisors']
    names = {hv['hypervisor_hostname'] for hv in found}
    return names >= {h.nodename for h in hostlib.HOSTS}


def _computes_up(session):
    """Every compute up; enabled, but for the spares."""
    svcs = session.get('compute', '/os-services?binary=nova-compute')
    up = {s['host'] for s in svcs['services']
          if s['state'] == 'up' and (s['status'] == 'enabled'
                                     or s['host'] in _spares())}
    return up >= {h.name for h in hostlib.HOSTS}


def _spares():
    return {h.name for h in hostlib.HOSTS if h.spare}


def _disable_spares(session):
    """Disable the spare hosts' compute services (hosts.SPARE_REASON)."""
    svcs = session.get('compute', '/os-services?binary=nova-compute',
                       microversion='2.53')['services']
    for svc in svcs:
        if svc['host'] in _spares() and svc['status'] == 'enabled':
            session.put('compute', '/os-services/%s' % svc['id'],
                        {'status': 'disabled',
                         'disabled_reason': hostlib.SPARE_REASON},
                        microversion='2.53')


def healthy():
    """True if every recorded process is alive and the cloud answers."""
    pids = base.recorded()
    expected = set(OPENSTACK_SERVICES) | {'mariadb', 'rabbitmq',
                                          ironic.PROCESS} | set(
                                              blazar.process_names())
    if not expected <= set(pids) or not all(
            base.alive(pids[n]) for n in expected):
        return False
    try:
        session = api.Session(timeout=10)
        return _hypervisors_ready(session) and _computes_up(session)
    except Exception:  # noqa: BLE001
        return False


def start(timeline):
    busy = {p: what for p, what in PORTS.items() if _port_busy(p)}
    if busy:
        raise base.CloudError(
            'ports in use on 127.0.0.1: %s (another cloud or service?)'
            % ', '.join('%d (%s)' % kv for kv in sorted(busy.items())))
    if os.path.exists(base.STATE):
        shutil.rmtree(base.STATE)
    _write_config()
    timeline('state wiped and configuration written to %s' % base.STATE)

    epmd_before = set(base.pids_by_comm('epmd'))
    # -detached: the Erlang VM daemonises and writes RABBITMQ_PID_FILE
    # (pids/rabbitmq.pid) itself; it is stopped with rabbitmqctl stop.
    with open(os.path.join(base.LOGS, 'rabbitmq-start.log'), 'ab') as out:
        subprocess.run([os.path.join(RABBIT, 'rabbitmq-server'),
                        '-detached'], env=dict(os.environ, **_rabbit_env()),
                       stdin=subprocess.DEVNULL, stdout=out,
                       stderr=subprocess.STDOUT, start_new_session=True,
                       check=True)
    timeline('rabbitmq-server starting (in the background)')
    _start_mariadb()
    timeline('mariadb up, databases created')

    pool = concurrent.futures.ThreadPoolExecutor(max_workers=6)

    def step(label, fn, *args):
        def run():
            fn(*args)
            timeline(label)
        return pool.submit(run)

    keystone = step('keystone db_sync/fernet/bootstrap done',
                    _setup_keystone)
    placement = step('placement db sync done', base.run, [
        os.path.join(base.BIN, 'placement-manage'), '--config-dir',
        os.path.join(base.STATE, 'etc', 'placement'), 'db', 'sync'],
        'setup-placement.log')
    glance = step('glance db_sync done', base.run, [
        os.path.join(base.BIN, 'glance-manage'), '--config-file',
        os.path.join(base.STATE, 'etc', 'glance', 'glance-api.conf'),
        'db_sync'], 'setup-glance.log')
    nova = step('nova api_db/cell0/cell1 ready', _setup_nova)
    rabbit = step('rabbitmq ready', base.run, [
        os.path.join(RABBIT, 'rabbitmqctl'), 'wait', base.pidfile('rabbitmq'),
        '--timeout', '120'], 'rabbitmq-wait.log', _rabbit_env())

    _start_wsgi('neutron-stub')
    placement.result()
    _start_wsgi('placement')
    keystone.result()
    _start_wsgi('keystone')
    base.wait('keystone', base.http_up(api.KEYSTONE), 120)
    session = api.Session()
    api.register(session, DEMO_PROJECT, DEMO_USER, base.PASSWORD,
                 OPERATOR_USER)
    _register_limits(session)
    timeline('keystone up; services, endpoints, project %s and user %s '
             'registered' % (DEMO_PROJECT, DEMO_USER))
    glance.result()
    _start_wsgi('glance-api')
    nova.result()
    rabbit.result()
    epmd = set(base.pids_by_comm('epmd')) - epmd_before
    if epmd:  # started by this rabbitmq: ours to stop
        with open(base.pidfile('epmd'), 'w') as f:
            f.write('%d\n' % min(epmd))
    _start_nova()
    timeline('nova-api, conductor, scheduler and %d nova-computes started'
             % len(hostlib.HOSTS))
    _start_metrics()
    # Ironic, its nodes and the bare-metal host's nova-compute, while the
    # image is uploaded (discovered with the other hosts below)
    bare_metal = pool.submit(ironic.start, timeline, ironic.HOST,
                             discover=False)
    # Blazar (reservations) once Nova's API answers (its freepool)
    reservations = pool.submit(blazar.start, timeline)
    base.wait('glance', base.http_up(api.ENDPOINTS['image']), 120)
    api.upload_image(session, IMAGE, _tiny_image())
    timeline('image %s uploaded' % IMAGE)
    base.wait('placement', base.http_up(api.ENDPOINTS['placement'] + '/'), 60)
    bare_metal.result()
    reservations.result()
    base.wait('compute provider trees in placement',
          lambda: _providers_ready(session), 240, interval=1)
    timeline('every compute reported its provider tree to placement')
    base.run([os.path.join(base.BIN, 'nova-manage'), '--config-file',
          os.path.join(base.STATE, 'etc', 'nova', 'nova.conf'),
          'cell_v2', 'discover_hosts', '--verbose'], 'setup-discover.log')
    base.wait('hypervisors', lambda: _hypervisors_ready(session), 60)
    base.wait('prometheus', base.http_up('http://127.0.0.1:%d/-/ready'
                                 % PROMETHEUS_PORT), 60)
    base.wait('compute services up', lambda: _computes_up(session), 60)
    _disable_spares(session)
    timeline('hosts discovered, hypervisors and compute services up '
             '(spares %s disabled)' % ', '.join(sorted(_spares())))
    pool.shutdown()


# ---------------------------------------------------------------- commands

def cmd_up(args):
    # one "up" at a time: a second one (.ci/run starts the cloud in the
    # background while the unit tests run; tools/run-functional asks for
    # it again) waits for the first, then reuses what it brought up
    os.makedirs(base.HOME, exist_ok=True)
    with open(os.path.join(base.HOME, 'up.lock'), 'w') as lock:
        waited = time.monotonic()
        fcntl.flock(lock, fcntl.LOCK_EX)
        waited = time.monotonic() - waited
        return _up(args, waited)


def _up(args, waited):
    timeline = base.Timeline()
    if waited > 1:
        timeline('waited %.0f s for another "up" to finish' % waited)
    install(timeline)
    installed = timeline.elapsed()
    timeline('install check done (%.1fs)' % installed)
    if healthy():
        timeline('the cloud is already up and healthy: reusing it')
        print(env_text())
        print('READY')
        return 0
    if base.recorded():
        timeline('stale or unhealthy cloud recorded: stopping it first')
        stop(timeline)
    start_t = time.monotonic()
    try:
        start(timeline)
    except Exception as exc:
        timeline('FAILED: %s' % exc)
        timeline('logs: %s (stopping what was started)' % base.LOGS)
        stop(timeline)
        return 1
    timeline('install %.1fs, start-up %.1fs' % (
        installed, time.monotonic() - start_t))
    print(env_text())
    print('READY')
    return 0


def cmd_down(args):
    timeline = base.Timeline()
    stop(timeline)
    left = base.cloud_processes()
    for pid, cmd in left:
        timeline('still running: %d %s' % (pid, cmd))
    timeline('down' if not left else 'down, but %d processes left' %
             len(left))
    return 1 if left else 0


def cmd_status(args):
    pids = base.recorded()
    ok = True
    print('%-26s %-6s %s' % ('process', 'state', 'pid'))
    for name in ['mariadb', 'rabbitmq', 'epmd'] + list(
            reversed(OPENSTACK_SERVICES)):
        pid = pids.get(name)
        if name == 'epmd' and not pid:
            continue
        alive = base.alive(pid)
        ok &= alive
        print('%-26s %-6s %s' % (name, 'up' if alive else 'down',
                                 pid or '-'))
    if not pids:
        print('no cloud recorded in %s' % base.STATE)
        return 1
    try:
        session = api.Session(timeout=10)
        svcs = session.get('compute', '/os-services')['services']
        print('\n%-16s %-14s %-8s %s' % ('nova service', 'host', 'status',
                                         'state'))
        for s in svcs:
            print('%-16s %-14s %-8s %s' % (s['binary'], s['host'],
                                           s['status'], s['state']))
            ok &= s['state'] == 'up'
        hvs = session.get('compute', '/os-hypervisors/detail',
                          microversion='2.53')['hypervisors']
        print('\n%-38s %-14s %s' % ('hypervisor', 'service host', 'state'))
        for hv in hvs:
            print('%-38s %-14s %s' % (hv['hypervisor_hostname'],
                                      hv['service']['host'], hv['state']))
        bare_metal = ironic.status()
        if bare_metal:
            print('\n' + '\n'.join(bare_metal))
        reserving = blazar.status()
        if reserving:
            print('\n' + '\n'.join(reserving))
        rps = session.get('placement', '/resource_providers',
                          microversion='1.14')['resource_providers']
        print('\nmemory: %d processes, RSS %d MiB, PSS %d MiB' % base.memory())
        print('resource providers: %d (%d seed-gpu-*)' % (
            len(rps), sum(r['name'].startswith('seed-gpu-') for r in rps)))
    except Exception as exc:  # noqa: BLE001
        print('APIs not answering: %s' % exc)
        return 1
    return 0 if ok else 1


def env_text():
    return ('export OS_CLIENT_CONFIG_FILE=%s/clouds.yaml '
            'OS_CLOUD=gpuclient-admin GPUCLIENT_MEMBER_CLOUD=gpuclient-member'
            ' GPUCLIENT_DCGM_DEVICES=%s' % (base.STATE, DCGM_DEVICES))


def cmd_env(args):
    print(env_text())
    print('# the cloud\'s own client: export PATH=%s:$PATH' % base.BIN)
    return 0


def cmd_seed_hosts(args):
    from cloud import seed
    if args.remove:
        return seed.remove()
    if args.count is None:
        print('seed-hosts: give N or --remove', file=sys.stderr)
        return 2
    return seed.add(args.count, workers=args.workers)


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


def _providers_ready_one(session, host, root):
    with_class = session.get(
        'placement', '/resource_providers?resources=%s:1&in_tree=%s' % (
            host.gpu_class, root['uuid']),
        microversion='1.14')['resource_providers']
    return len(with_class) >= max(host.children, 1)


def cmd_restart_compute(args):
    """(Re)write a host's nova-compute-<host>.conf, restart (or start) its
    nova-compute, wait for its provider tree and discover it."""
    timeline = base.Timeline()
    host = next((h for h in hostlib.HOSTS if h.name == args.host), None)
    if host is None or host.driver == hostlib.IRONIC:
        raise base.CloudError('%s is no fake-driver compute host of %s' % (
            args.host, ', '.join(h.name for h in hostlib.HOSTS
                                 if h.driver != hostlib.IRONIC)))
    if not base.recorded():
        raise base.CloudError('no cloud recorded in %s: run tools/testcloud '
                              'up' % base.STATE)
    extra = host.extra_conf
    if args.nova_conf:
        with open(args.nova_conf) as f:
            extra = f.read()
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
    conf = ['--config-file', os.path.join(etc, 'nova.conf')]
    base.spawn(name, [
        os.path.join(base.BIN, 'python'), '-m', 'cloud.compute', *conf,
        '--config-file', os.path.join(etc, 'nova-compute-%s.conf'
                                      % host.name)],
        env={'PYTHONPATH': base.TOOLS})
    timeline('started %s' % name)
    devices = expected_devices(extra) if host.kind in ('vgpu', 'mig') \
        else None
    base.wait('%s provider tree in placement' % host.name,
          lambda: _tree_matches(session, host, devices), 240, interval=1)
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
            if svc['status'] == 'enabled' and args.disable_new_spare:
                session.put('compute', '/os-services/%s' % svc['id'],
                            {'status': 'disabled',
                             'disabled_reason': hostlib.SPARE_REASON},
                            microversion='2.53')
    timeline('%s up and discovered' % host.name)
    return 0


def cmd_smoke(args):
    from cloud import smoke
    return smoke.main(base.BIN, base.STATE, IMAGE)


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog='tools/testcloud',
        description='The gpuclient test cloud: real Keystone, Placement, '
                    'Glance and Nova with fake GPU compute hosts, on '
                    '127.0.0.1.  State: %s' % base.STATE)
    sub = parser.add_subparsers(dest='command', required=True)
    sub.add_parser('up', help='install what is missing, (re)build and '
                   'start the cloud, wait until ready'
                   ).set_defaults(func=cmd_up)
    sub.add_parser('down', help='stop every process the cloud started'
                   ).set_defaults(func=cmd_down)
    sub.add_parser('status', help='processes, compute services, '
                   'hypervisors').set_defaults(func=cmd_status)
    sub.add_parser('env', help='print the client environment'
                   ).set_defaults(func=cmd_env)
    seed_p = sub.add_parser('seed-hosts', help='add N simulated GPU hosts '
                            'to Placement (or --remove them)')
    seed_p.add_argument('count', nargs='?', type=int, metavar='N')
    seed_p.add_argument('--remove', action='store_true',
                        help='delete every seed-gpu-* provider')
    seed_p.add_argument('--workers', type=int, default=8,
                        help='concurrent Placement requests (default 8)')
    seed_p.set_defaults(func=cmd_seed_hosts)
    restart_p = sub.add_parser(
        'restart-compute', help='(re)write a fake-driver host\'s '
        'nova-compute conf, restart (or first start) its nova-compute and '
        'wait until Placement holds its new provider tree')
    restart_p.add_argument('host', help='compute host (tools/cloud/hosts.py)')
    restart_p.add_argument(
        '--nova-conf', metavar='FILE',
        help='extra nova.conf sections for the host (e.g. the file gpu '
        'profile plan --output-dir wrote); default: the host\'s own')
    restart_p.add_argument(
        '--keep-enabled', dest='disable_new_spare', action='store_false',
        help='leave a spare host enabled when it comes up enabled')
    restart_p.set_defaults(func=cmd_restart_compute)
    sub.add_parser('smoke', help='a quick end-to-end check with the real '
                   'openstack CLI').set_defaults(func=cmd_smoke)
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except base.CloudError as exc:
        print('testcloud: %s' % exc, file=sys.stderr)
        return 1
