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

"""The host fact collector's systemd units (etc/systemd/gpuclient-host-
facts.*): systemd's own checker finds nothing in them, they are package
data beside gpuclient-metrics', and the service's command, as systemd
runs it, writes the facts of a fake host tree into the textfile
directory."""

import configparser
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile

import testtools

from gpuclient.rules.host_facts import series
from gpuclient.tests.unit import base
from gpuclient.tests.unit import test_host_facts_collector
from gpuclient.tests.unit import test_systemd_units as units

SERVICE = os.path.join(units.UNITS, 'gpuclient-host-facts.service')
TIMER = os.path.join(units.UNITS, 'gpuclient-host-facts.timer')
SETTINGS = os.path.join(units.UNITS, 'gpuclient-host-facts.env')


def exec_argv(path, environ):
    """The argv systemd runs for ExecStart of PATH: ``${VAR}`` is the
    variable's value as one word, a word that is ``$VAR`` alone its value
    split at whitespace (systemd.service, "Command lines")."""
    [command] = [value for section, key, value in units.unit_settings(path)
                 if (section, key) == ('Service', 'ExecStart')]
    assert '%' not in command, command
    words = []
    for word in shlex.split(command):
        alone = re.match(r'^\$([A-Za-z_][A-Za-z0-9_]*)$', word)
        if alone:
            words += environ.get(alone.group(1), '').split()
            continue
        words.append(re.sub(r'\$\{([A-Za-z_][A-Za-z0-9_]*)\}',
                            lambda m: environ[m.group(1)], word))
    return words


class TestUnits(testtools.TestCase):

    def verify(self, *paths):
        if not os.path.exists(units.SYSTEMD_ANALYZE):
            self.skipTest('%s not found: apt-get install systemd'
                          % units.SYSTEMD_ANALYZE)
        work = tempfile.mkdtemp(prefix='gpuclient-units-')
        self.addCleanup(shutil.rmtree, work, True)
        copies = []
        for path in paths:
            shutil.copy(path, work)
            copies.append(os.path.join(work, os.path.basename(path)))
        proc = subprocess.run(
            [units.SYSTEMD_ANALYZE, 'verify', '--man=no', '--generators=no',
             *copies], capture_output=True, text=True, cwd=work,
            env=dict(os.environ, SYSTEMD_LOG_COLOR='0'))
        return proc.returncode, (proc.stdout + proc.stderr).strip()

    def test_systemd_analyze_verify_finds_nothing(self):
        self.assertEqual((0, ''), self.verify(SERVICE, TIMER))

    def test_the_timer(self):
        timer = dict(((s, k), v) for s, k, v in units.unit_settings(TIMER))
        self.assertEqual('*:0/5', timer[('Timer', 'OnCalendar')])
        self.assertEqual('1min', timer[('Timer', 'OnBootSec')])
        self.assertEqual('timers.target', timer[('Install', 'WantedBy')])
        self.assertNotIn(('Timer', 'Unit'), timer)

    def test_the_service(self):
        service = units.unit_settings(SERVICE)
        self.assertIn(('Service', 'Type', 'oneshot'), service)
        # the settings are optional: the collector needs none
        self.assertIn(('Service', 'EnvironmentFile',
                       '-/etc/default/gpuclient-host-facts'), service)
        for setting in ('NoNewPrivileges', 'PrivateNetwork', 'ProtectHome',
                        'ProtectKernelTunables'):
            self.assertIn(('Service', setting, 'yes'), service)
        with open(SETTINGS) as f:
            lines = f.read().splitlines()
        names = {line.split('=', 1)[0].lstrip('#') for line in lines
                 if re.match(r'^#?[A-Z_]+=', line)}
        self.assertEqual({'TEXTFILE_DIR', 'HOST_FACTS_OPTIONS', 'PATH'},
                         names)
        self.assertIn('TEXTFILE_DIR=' + units.environment(SERVICE)[
            'TEXTFILE_DIR'], lines)

    def test_installed_beside_the_metrics_units(self):
        config = configparser.ConfigParser()
        config.read(os.path.join(base.ROOT, 'setup.cfg'))
        listed = config['files']['data_files']
        for path in (SERVICE, TIMER, SETTINGS,
                     os.path.join(units.UNITS, 'gpuclient-metrics.service')):
            self.assertIn(os.path.relpath(path, base.ROOT), listed)


class TestServiceCommand(testtools.TestCase):
    """ExecStart as systemd runs it, the installed script standing for
    ``python -m gpuclient.hostfacts``, on a fake host tree."""

    def setUp(self):
        super().setUp()
        self.dir = tempfile.mkdtemp(prefix='gpuclient-host-facts-')
        self.addCleanup(shutil.rmtree, self.dir, True)
        bin_dir = os.path.join(self.dir, 'bin')
        os.mkdir(bin_dir)
        script = os.path.join(bin_dir, 'gpuclient-host-facts')
        with open(script, 'w') as f:
            f.write('#!/bin/sh\ncd %s\nexec %s -m gpuclient.hostfacts "$@"\n'
                    % (shlex.quote(base.ROOT), shlex.quote(sys.executable)))
        os.chmod(script, 0o755)
        self.textfile = os.path.join(self.dir, 'textfile')
        os.mkdir(self.textfile)
        self.root = test_host_facts_collector.host_trees.write_tree(
            os.path.join(self.dir, 'tree'), 'mig')
        self.env = {'PATH': bin_dir + ':/usr/bin:/bin',
                    'TEXTFILE_DIR': self.textfile,
                    'HOST_FACTS_OPTIONS': '--root %s --hostname gpu-mig-1'
                                          % self.root}

    def test_writes_the_facts(self):
        argv = exec_argv(SERVICE, self.env)
        self.assertEqual(['/usr/bin/env', 'gpuclient-host-facts', '--output',
                          os.path.join(self.textfile,
                                       'gpuclient_host_facts.prom'),
                          '--root', self.root, '--hostname', 'gpu-mig-1'],
                         argv)
        proc = subprocess.run(argv, capture_output=True, text=True,
                              env=self.env)
        self.assertEqual((0, ''), (proc.returncode, proc.stderr))
        self.assertEqual(['gpuclient_host_facts.prom'],
                         os.listdir(self.textfile))
        path = os.path.join(self.textfile, 'gpuclient_host_facts.prom')
        self.assertEqual(0o644, stat.S_IMODE(os.stat(path).st_mode))
        with open(path) as f:
            facts = series.from_samples(series.parse_text(f.read()))
        self.assertEqual(['gpu-mig-1'], list(facts))
        self.assertEqual(7, len(facts['gpu-mig-1'].functions[
            '0000:41:00.0'].gpu_instances))

    def test_without_options(self):
        env = dict(self.env, HOST_FACTS_OPTIONS='')
        self.assertEqual(4, len(exec_argv(SERVICE, env)))

    def test_a_directory_it_cannot_write_fails_the_unit(self):
        env = dict(self.env, TEXTFILE_DIR=os.path.join(self.dir, 'gone'))
        proc = subprocess.run(exec_argv(SERVICE, env), capture_output=True,
                              text=True, env=env)
        self.assertEqual(1, proc.returncode)
        self.assertEqual(1, proc.stderr.count('\n'))
        self.assertIn('cannot write', proc.stderr)
