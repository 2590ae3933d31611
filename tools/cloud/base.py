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

"""What every part of the test cloud shares.

* the paths (``HOME``, ``VENV``, ``STATE``, ``PIDS``, ``LOGS``, ``BIN``) and
  the one password and database user;
* ``Timeline`` (the start-up's log lines) and ``CloudError``;
* the processes: pid files in ``PIDS``, each process the leader of its own
  group (``spawn``, ``run``, ``read_pid``, ``alive``, ``ours``,
  ``signal_group``, ``group_alive``, ``stop_processes``, ...) and the waits
  (``wait``, ``http_up``);
* the cloud's MariaDB (``db_url``, ``sql``, ``ensure_database``);
* the configuration files, rendered from ``tools/cloud/etc`` (``render``,
  ``auth``, ``authtoken``).

Standard library only, like the rest of tools/testcloud.  The services'
modules (cloud.mariadb, cloud.control_plane, cloud.ironic, ...) import it;
it imports none of them.
"""

import os
import signal
import string
import subprocess
import threading
import time

from cloud import api

TOOLS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLOUD_DIR = os.path.join(TOOLS, 'cloud')
HOME = os.environ.get('GPUCLIENT_TESTCLOUD_HOME',
                      '/var/tmp/gpuclient-testcloud')
VENV = os.path.join(HOME, 'venv')
STATE = os.path.join(HOME, 'state')
PIDS = os.path.join(STATE, 'pids')
LOGS = os.path.join(STATE, 'logs')
BIN = os.path.join(VENV, 'bin')

PASSWORD = 'secret'
DB_USER = 'gpuclient'


class Timeline:
    """Where the time goes: (seconds since start, event) lines."""

    def __init__(self, quiet=False):
        self.t0 = time.monotonic()
        self.lock = threading.Lock()
        self.quiet = quiet

    def __call__(self, event):
        with self.lock:
            print('[%6.1fs] %s' % (time.monotonic() - self.t0, event),
                  flush=True)

    def elapsed(self):
        return time.monotonic() - self.t0


class CloudError(Exception):
    pass


# ---------------------------------------------------------------- processes

def pidfile(name):
    return os.path.join(PIDS, name + '.pid')


def read_pid(name):
    try:
        with open(pidfile(name)) as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def alive(pid):
    if not pid:
        return False
    try:
        with open('/proc/%d/stat' % pid) as f:
            state = f.read().rsplit(')', 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != 'Z'


def ours(name, pid):
    """Is PID still the process recorded as NAME (not a reused PID)?"""
    try:
        with open('/proc/%d/cmdline' % pid, 'rb') as f:
            cmd = f.read()
        with open('/proc/%d/comm' % pid) as f:
            comm = f.read().strip()
    except OSError:
        return False
    if name == 'epmd':
        return comm == 'epmd'
    return any(mark in cmd for mark in (
        STATE.encode(), VENV.encode(), b'gpuclient-'))


def running(name):
    """Is the process recorded as NAME ours and alive?"""
    pid = read_pid(name)
    return bool(pid and ours(name, pid) and alive(pid))


def recorded():
    """{name: pid} of the recorded processes that are still ours."""
    if not os.path.isdir(PIDS):
        return {}
    found = {}
    for f in os.listdir(PIDS):
        if f.endswith('.pid'):
            name = f[:-4]
            pid = read_pid(name)
            found[name] = pid if pid and ours(name, pid) else None
    return found


def spawn(name, argv, env=None, cwd=None):
    """Start ARGV in its own session; record its PID (= process group)."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    out = open(os.path.join(LOGS, name + '.out'), 'ab')
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out,
                            stderr=subprocess.STDOUT, env=full_env,
                            cwd=cwd or STATE, start_new_session=True)
    out.close()
    with open(pidfile(name), 'w') as f:
        f.write('%d\n' % proc.pid)
    return proc


def run(argv, log, env=None):
    full_env = dict(os.environ, PYTHONWARNINGS='ignore')
    full_env.update(env or {})
    with open(os.path.join(LOGS, log), 'ab') as out:
        out.write(('$ %s\n' % ' '.join(argv)).encode())
        out.flush()
        rc = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=out,
                            stderr=subprocess.STDOUT, env=full_env).returncode
    if rc:
        raise CloudError('%s failed (rc %d), see %s' % (
            ' '.join(argv[:3]), rc, os.path.join(LOGS, log)))


def pids_by_comm(comm):
    pids = []
    for entry in os.listdir('/proc'):
        if entry.isdigit():
            try:
                with open('/proc/%s/comm' % entry) as f:
                    if f.read().strip() == comm:
                        pids.append(int(entry))
            except OSError:
                pass
    return pids


def cloud_processes():
    """PIDs whose command line mentions the state dir or the venv."""
    found = []
    marks = (STATE.encode(), VENV.encode())
    for entry in os.listdir('/proc'):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open('/proc/%s/cmdline' % entry, 'rb') as f:
                cmd = f.read()
        except OSError:
            continue
        if any(m in cmd for m in marks) and alive(int(entry)):
            found.append((int(entry), cmd.replace(b'\0', b' ').decode(
                errors='replace')[:120]))
    return found


def _proc_table():
    """{pid: (ppid, pgid)} of every live process."""
    table = {}
    for entry in os.listdir('/proc'):
        if entry.isdigit():
            try:
                with open('/proc/%s/stat' % entry) as f:
                    fields = f.read().rsplit(')', 1)[1].split()
            except OSError:
                continue
            if fields[0] != 'Z':
                table[int(entry)] = (int(fields[1]), int(fields[2]))
    return table


def memory():
    """(processes, RSS MiB, PSS MiB) of the recorded process trees."""
    roots = {p for p in recorded().values() if p}
    table = _proc_table()
    members = {p for p, (_ppid, pgid) in table.items()
               if p in roots or pgid in roots}
    grew = True
    while grew:  # children of members (beam's helpers, ...)
        new = {p for p, (ppid, _pg) in table.items()
               if ppid in members} - members
        members |= new
        grew = bool(new)
    rss = pss = 0
    for pid in members:
        try:
            with open('/proc/%d/smaps_rollup' % pid) as f:
                for line in f:
                    key, value = line.split(':', 1)
                    if key in ('Rss', 'Pss'):
                        kb = int(value.split()[0])
                        if key == 'Rss':
                            rss += kb
                        else:
                            pss += kb
        except OSError:
            pass
    return len(members), rss // 1024, pss // 1024


def signal_group(pid, sig):
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        pass
    except PermissionError:
        os.kill(pid, sig)


def wait_dead(pids, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(alive(p) for p in pids):
            return True
        time.sleep(0.2)
    return False


def group_alive(pgid):
    return any(group == pgid for _ppid, group in _proc_table().values())


def forget(name):
    """Remove NAME's pid file; gone already is fine (another stop, e.g.
    an interrupted "up" stopping what it started, got there first)."""
    try:
        os.unlink(pidfile(name))
    except FileNotFoundError:
        pass


def stop_processes(names):
    """Stop each recorded process of NAMES that is ours, with its group
    (SIGTERM; SIGKILL after 30 s), and forget its pid file."""
    for name in names:
        pid = read_pid(name)
        if not pid:
            continue
        if ours(name, pid):
            signal_group(pid, signal.SIGTERM)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and group_alive(pid):
                time.sleep(0.2)
            if group_alive(pid):
                signal_group(pid, signal.SIGKILL)
        forget(name)


def wait(what, check, timeout, interval=0.25):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except Exception as exc:  # noqa: BLE001 - still starting
            last = exc
        time.sleep(interval)
    raise CloudError('timed out waiting for %s (%s)' % (what, last))


def http_up(url):
    def check():
        try:
            api.request('GET', url, timeout=2)
        except api.APIError as exc:
            return exc.status < 500
        return True
    return check


# ---------------------------------------------------------------- database

def db_url(name):
    return 'mysql+pymysql://%s:%s@127.0.0.1:3306/%s?charset=utf8' % (
        DB_USER, PASSWORD, name)


def sql(statement):
    """Run STATEMENT as root on the cloud's MariaDB; its output."""
    out = subprocess.run(
        ['mariadb', '--no-defaults', '-S', STATE + '/mysql.sock',
         '-uroot', '-N', '-B', '-e', statement],
        capture_output=True, text=True)
    if out.returncode:
        raise CloudError('mariadb: %s: %s' % (statement, out.stderr.strip()))
    return out.stdout.strip()


def ensure_database(name, schema_argv, log):
    """Create database NAME and, while it has no table, its schema by
    SCHEMA_ARGV (output in LOG): skipped where both exist."""
    sql('CREATE DATABASE IF NOT EXISTS %s' % name)
    tables = sql("SELECT COUNT(*) FROM information_schema.tables "
                 "WHERE table_schema = '%s'" % name)
    if tables == '0':
        run(schema_argv, log)


# ---------------------------------------------------------------- config

class _Template(string.Template):
    delimiter = '@'


def auth(user, section=None):
    lines = ['[%s]' % section] if section else []
    lines += ['auth_type = password',
              'auth_url = http://127.0.0.1:5000/v3',
              'username = %s' % user,
              'password = %s' % PASSWORD,
              'project_name = service',
              'user_domain_name = Default',
              'project_domain_name = Default']
    return '\n'.join(lines)


def authtoken(user):
    return auth(user, 'keystone_authtoken') + '\n' + '\n'.join([
        'www_authenticate_uri = http://127.0.0.1:5000/v3',
        'memcached_servers =',
        'service_token_roles_required = true'])


def render(template, dest, **extra):
    values = {
        'state': STATE,
        'transport_url': 'rabbit://guest:guest@127.0.0.1:5672/',
        'db_keystone': db_url('keystone'),
        'db_placement': db_url('placement'),
        'db_glance': db_url('glance'),
        'db_nova_api': db_url('nova_api'),
        'db_nova_cell1': db_url('nova_cell1'),
        'authtoken_placement': authtoken('placement'),
        'authtoken_glance': authtoken('glance'),
        'authtoken_nova': authtoken('nova'),
        'service_auth_placement': auth('placement'),
        'service_auth_nova': auth('nova'),
    }
    values.update(extra)
    with open(os.path.join(CLOUD_DIR, 'etc', template)) as f:
        text = _Template(f.read()).substitute(values)
    with open(dest, 'w') as f:
        f.write(text)
