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

"""The shipped systemd units (etc/systemd): systemd's own checker
(``systemd-analyze verify``) finds nothing in them, and the publisher's
command, as systemd will run it, writes both files atomically, keeps the
last good file when a command fails, and runs under the lock.

``exec_start`` reads ExecStart as systemd does for these units (continued
lines joined, ``$$`` made ``$``, ``${VAR}`` taken from the environment,
quotes removed); the functional test runs the same command against the
test cloud (gpuclient/tests/functional/test_dashboard.py).
"""

import fcntl
import os
import re
import shlex
import shutil
import stat
import subprocess
import tempfile

import testtools

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
UNITS = os.path.join(TOP, 'etc', 'systemd')
SERVICE = os.path.join(UNITS, 'gpuclient-metrics.service')
TIMER = os.path.join(UNITS, 'gpuclient-metrics.timer')
SETTINGS = os.path.join(UNITS, 'gpuclient-metrics.env')
SYSTEMD_ANALYZE = shutil.which('systemd-analyze') or '/usr/bin/systemd-analyze'


def unit_settings(path):
    """[(section, key, value)] of a unit file: continued lines joined
    (systemd replaces a backslash at the end of a line by a space),
    comments left out."""
    with open(path) as f:
        text = re.sub(r'\\\n', ' ', f.read())
    section, found = None, []
    for line in text.splitlines():
        line = line.strip()
        if not line or line[0] in '#;':
            continue
        if line.startswith('['):
            section = line.strip('[]')
            continue
        key, _eq, value = line.partition('=')
        found.append((section, key.strip(), value.strip()))
    return found


def exec_start(path=SERVICE, environ=None):
    """The argv systemd runs for the ExecStart of unit PATH, with the
    variables of ENVIRON: ``${VAR}`` replaced by its value, ``$$`` by
    ``$`` (systemd.service, "Command lines"), then split as systemd
    splits (quotes as the shell's; these units use no other escape)."""
    environ = environ or {}
    [command] = [value for section, key, value in unit_settings(path)
                 if (section, key) == ('Service', 'ExecStart')]
    assert '%' not in command, 'a specifier in ExecStart: %s' % command
    expanded = re.sub(r'\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)\}',
                      lambda m: environ[m.group(1)] if m.group(1) else '$',
                      command)
    return shlex.split(expanded)


def environment(path=SERVICE):
    """{name: value} of the unit's Environment= lines."""
    return dict(value.split('=', 1) for section, key, value
                in unit_settings(path) if key == 'Environment')


FAKE_OPENSTACK = '''#!/bin/sh
# stands for openstack: prints "<args>" and a line of the environment, or
# fails when FAKE_FAIL names its second word
case "$2" in "$FAKE_FAIL") echo "$2 broke" >&2; exit 3 ;; esac
echo "$*"
echo "cloud=$OS_CLOUD"
'''


class TestUnitsVerify(testtools.TestCase):

    def verify(self, *paths):
        """(exit status, output) of systemd-analyze verify on copies of
        PATHS (its search path: the copies' directory, no generators,
        no man page look-ups)."""
        if not os.path.exists(SYSTEMD_ANALYZE):
            self.skipTest('%s not found: apt-get install systemd (it '
                          'checks the shipped units)' % SYSTEMD_ANALYZE)
        work = self.tempdir()
        copies = []
        for path in paths:
            shutil.copy(path, work)
            copies.append(os.path.join(work, os.path.basename(path)))
        proc = subprocess.run(
            [SYSTEMD_ANALYZE, 'verify', '--man=no', '--generators=no',
             *copies], capture_output=True, text=True, cwd=work,
            env=dict(os.environ, SYSTEMD_LOG_COLOR='0'))
        return proc.returncode, (proc.stdout + proc.stderr).strip()

    def tempdir(self):
        work = tempfile.mkdtemp(prefix='gpuclient-units-')
        self.addCleanup(shutil.rmtree, work, True)
        return work

    def test_systemd_analyze_verify_finds_nothing(self):
        self.assertEqual((0, ''), self.verify(SERVICE, TIMER))

    def test_verify_sees_a_defect(self):
        # the check is not blind: a wrong value and a missing binary are
        # reported
        work = self.tempdir()
        broken = os.path.join(work, 'gpuclient-metrics.service')
        with open(SERVICE) as src, open(broken, 'w') as out:
            out.write(src.read().replace('Type=oneshot', 'Type=oneshoot')
                      .replace('/usr/bin/flock', '/usr/bin/no-flock'))
        rc, output = self.verify(broken, TIMER)
        self.assertIn('oneshoot', output)
        self.assertIn('/usr/bin/no-flock', output)

    def test_the_timer_starts_the_service_every_minute(self):
        timer = dict(((s, k), v) for s, k, v in unit_settings(TIMER))
        self.assertEqual('minutely', timer[('Timer', 'OnCalendar')])
        self.assertEqual('timers.target', timer[('Install', 'WantedBy')])
        # the timer's unit is the service of the same name
        self.assertNotIn(('Timer', 'Unit'), timer)
        self.assertEqual(
            os.path.splitext(os.path.basename(TIMER))[0],
            os.path.splitext(os.path.basename(SERVICE))[0])

    def test_the_service_reads_the_shipped_settings(self):
        service = unit_settings(SERVICE)
        self.assertIn(('Service', 'EnvironmentFile',
                       '/etc/default/gpuclient-metrics'), service)
        self.assertIn(('Service', 'Type', 'oneshot'), service)
        with open(SETTINGS) as f:
            lines = f.read().splitlines()
        names = {line.split('=', 1)[0].lstrip('#') for line in lines
                 if re.match(r'^#?[A-Z_]+=', line)}
        self.assertEqual({'OS_CLOUD', 'TEXTFILE_DIR', 'PATH'}, names)
        # the unit's default directory is the one the settings name
        self.assertIn('TEXTFILE_DIR=' + environment()['TEXTFILE_DIR'],
                      lines)


class TestPublisher(testtools.TestCase):
    """The ExecStart command, run as systemd runs it, with a stand-in for
    ``openstack`` on PATH."""

    def setUp(self):
        super().setUp()
        self.dir = tempfile.mkdtemp(prefix='gpuclient-textfile-')
        self.addCleanup(shutil.rmtree, self.dir, True)
        bin_dir = os.path.join(self.dir, 'bin')
        os.mkdir(bin_dir)
        fake = os.path.join(bin_dir, 'openstack')
        with open(fake, 'w') as f:
            f.write(FAKE_OPENSTACK)
        os.chmod(fake, 0o755)
        self.textfile = os.path.join(self.dir, 'textfile')
        os.mkdir(self.textfile)
        self.env = {'PATH': bin_dir + ':/usr/bin:/bin', 'OS_CLOUD': 'c1',
                    'TEXTFILE_DIR': self.textfile}

    def publish(self, argv=None, **env):
        argv = argv or exec_start(environ=self.env)
        return subprocess.run(argv, capture_output=True, text=True,
                              env=dict(self.env, **env))

    def files(self):
        return sorted(os.listdir(self.textfile))

    def read(self, name):
        with open(os.path.join(self.textfile, name)) as f:
            return f.read()

    def test_both_files_are_written(self):
        proc = self.publish()
        self.assertEqual((0, ''), (proc.returncode, proc.stderr))
        self.assertEqual(['.gpuclient-metrics.lock', 'gpuclient_capacity.prom',
                          'gpuclient_devices.prom'], self.files())
        self.assertEqual('gpu device list -f openmetrics\ncloud=c1\n',
                         self.read('gpuclient_devices.prom'))
        self.assertEqual('gpu capacity list --per-host --long -f '
                         'openmetrics\ncloud=c1\n',
                         self.read('gpuclient_capacity.prom'))
        mode = os.stat(os.path.join(self.textfile,
                                    'gpuclient_devices.prom')).st_mode
        # node_exporter's user reads it (mktemp makes 0600)
        self.assertEqual(0o644, stat.S_IMODE(mode))

    def test_a_failed_command_leaves_the_last_good_file(self):
        self.assertEqual(0, self.publish().returncode)
        before = self.read('gpuclient_capacity.prom')
        proc = self.publish(OS_CLOUD='c2', FAKE_FAIL='capacity')
        # the failure is the unit's (systemd logs it), the other file is
        # still refreshed, no temporary file stays
        self.assertEqual(1, proc.returncode)
        self.assertIn('gpuclient_capacity.prom not replaced', proc.stderr)
        self.assertIn('capacity broke', proc.stderr)
        self.assertEqual(before, self.read('gpuclient_capacity.prom'))
        self.assertIn('cloud=c2', self.read('gpuclient_devices.prom'))
        self.assertEqual(['.gpuclient-metrics.lock', 'gpuclient_capacity.prom',
                          'gpuclient_devices.prom'], self.files())

    def test_the_files_are_renamed_into_place(self):
        # each is written beside its final name under a name the
        # collector skips ("*.prom" only), then renamed: the command's
        # shell asks mktemp in TEXTFILE_DIR and mv -f
        argv = exec_start(environ=self.env)
        script = argv[-1]
        self.assertIn('mktemp "$TEXTFILE_DIR/.$name.prom.XXXXXX"', script)
        self.assertIn('mv -f "$tmp" "$TEXTFILE_DIR/$name.prom"', script)

    def test_a_held_lock_keeps_a_second_run_out(self):
        argv = exec_start(environ=self.env)
        self.assertEqual(['/usr/bin/flock', '--wait', '50',
                          os.path.join(self.textfile,
                                       '.gpuclient-metrics.lock'),
                          '/bin/sh', '-c'], argv[:6])
        # another run holds the lock: this one gives up (--nonblock, not
        # to wait the unit's 50 seconds here) and writes nothing
        with open(argv[3], 'a') as held:
            fcntl.flock(held, fcntl.LOCK_EX)
            proc = self.publish(argv=[argv[0], '--nonblock'] + argv[3:])
        self.assertEqual(1, proc.returncode)
        self.assertEqual(['.gpuclient-metrics.lock'], self.files())
