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

"""Keystone, Placement, Glance and Nova in the test cloud: their databases'
setup (``setup_keystone``, ``setup_placement``, ``setup_glance``,
``setup_nova``), Keystone's registered limits, the WSGI services under
uWSGI (``WSGI``, ``start_wsgi``) and Nova's API, conductor and scheduler
(``start_nova``; the computes are cloud.computes').

Standard library only, like the rest of tools/testcloud.
"""

import os

from cloud import api
from cloud import base

DEMO_PROJECT = 'gpuclient-demo'
DEMO_USER = 'gpuclient-demo'
# admin + no_extra_specs: Nova's policy (etc/nova-policy.yaml) denies it
# flavor extra specs, for fault-injection tests
OPERATOR_USER = 'gpuclient-flavor-operator'
IMAGE = 'gpuclient-tiny'
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


def setup_keystone():
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
                   '--bootstrap-region-id', 'RegionOne'],
             'setup-keystone.log')


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


def register_limits(session):
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


def setup_placement():
    base.run([os.path.join(base.BIN, 'placement-manage'), '--config-dir',
              os.path.join(base.STATE, 'etc', 'placement'), 'db', 'sync'],
             'setup-placement.log')


def setup_glance():
    base.run([os.path.join(base.BIN, 'glance-manage'), '--config-file',
              os.path.join(base.STATE, 'etc', 'glance', 'glance-api.conf'),
              'db_sync'], 'setup-glance.log')


def setup_nova():
    nm = [os.path.join(base.BIN, 'nova-manage'), '--config-file',
          os.path.join(base.STATE, 'etc', 'nova', 'nova.conf')]
    base.run(nm + ['api_db', 'sync'], 'setup-nova.log')
    base.run(nm + ['cell_v2', 'map_cell0', '--database_connection',
                   base.db_url('nova_cell0')], 'setup-nova.log')
    base.run(nm + ['cell_v2', 'create_cell', '--name', 'cell1'],
             'setup-nova.log')
    base.run(nm + ['db', 'sync'], 'setup-nova.log')


def start_wsgi(name):
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


def start_nova():
    """nova-api (under uWSGI), nova-conductor and nova-scheduler."""
    etc = os.path.join(base.STATE, 'etc', 'nova')
    conf = ['--config-file', os.path.join(etc, 'nova.conf')]
    start_wsgi('nova-api')
    for svc in ('conductor', 'scheduler'):
        base.spawn('nova-' + svc, [
            os.path.join(base.BIN, 'nova-' + svc), *conf,
            '--log-file', os.path.join(base.LOGS, 'nova-%s.log' % svc)])


def tiny_image():
    # 1 MiB of zeros: the fake drivers never read it
    return b'\0' * (1 << 20)
