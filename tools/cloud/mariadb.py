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

"""MariaDB in the test cloud: one ``mariadbd`` on 127.0.0.1:3306 with its
data under ``<state>/mysql``, the database user ``base.DB_USER`` and the
databases of Keystone, Placement, Glance and Nova (``start``); ``stop``.

Standard library only, like the rest of tools/testcloud.  Other services
create their own databases with ``base.ensure_database``.
"""

import os
import signal
import subprocess

from cloud import base


def start():
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


def stop(pids, timeline):
    """Stop the recorded mariadb of PIDS ({name: pid}, base.recorded())."""
    if pids.get('mariadb'):
        os.kill(pids['mariadb'], signal.SIGTERM)
        if not base.wait_dead([pids['mariadb']], 30):
            os.kill(pids['mariadb'], signal.SIGKILL)
        base.forget('mariadb')
        timeline('mariadb stopped')
