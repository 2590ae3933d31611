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

"""What CI can check of the devstack gate without a devstack.

The shell syntax of devstack/plugin.sh and devstack/settings, the Zuul job
in .zuul.yaml, and every plugin phase run against a stub devstack: a
wrapper script defines the devstack functions the plugin may call
(``setup_develop``, ``pip_install``, ``is_service_enabled``, ...) as stubs
that record their arguments, sources settings and plugin.sh with the
phase's arguments the way devstack's ``run_phase`` does, and the tests read
back what was called.
"""

import os
import shutil
import subprocess

import fixtures
import yaml

from gpuclient.tests.unit import base

TOP = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__)))))
DEVSTACK = os.path.join(TOP, 'devstack')
PLUGIN = os.path.join(DEVSTACK, 'plugin.sh')
SETTINGS = os.path.join(DEVSTACK, 'settings')
ZUUL = os.path.join(TOP, '.zuul.yaml')
BASH = shutil.which('bash') or '/bin/bash'

# A stub devstack: the functions devstack offers a plugin, each recording
# "name args..." (one line per call, arguments separated by a tab) in
# $STUB_CALLS.  enable_service/disable_service/is_service_enabled keep
# ENABLED_SERVICES and DISABLED_SERVICES as devstack does (a disabled
# service cannot be enabled again); die exits like devstack's.
STUB = r'''
set -o errexit
_record() {
    local IFS=$'\t'
    printf '%s\n' "$*" >> "$STUB_CALLS"
}
define_plugin() { _record define_plugin "$@"; }
plugin_requires() { _record plugin_requires "$@"; }
enable_service() {
    _record enable_service "$@"
    local s
    for s in "$@"; do
        [[ ,$DISABLED_SERVICES, =~ ,$s, ]] && continue
        ENABLED_SERVICES="$ENABLED_SERVICES,$s"
    done
}
disable_service() {
    _record disable_service "$@"
    local s
    for s in "$@"; do
        DISABLED_SERVICES="$DISABLED_SERVICES,$s"
        ENABLED_SERVICES=${ENABLED_SERVICES//,$s/}
    done
}
is_service_enabled() {
    local s
    for s in "$@"; do
        [[ ,$ENABLED_SERVICES, =~ ,$s, ]] && return 0
    done
    return 1
}
echo_summary() { _record echo_summary "$@"; }
setup_develop() { _record setup_develop "$@"; }
setup_dev_lib() { _record setup_dev_lib "$@"; }
setup_install() { _record setup_install "$@"; }
pip_install() { _record pip_install "$@"; }
pip_install_gr() { _record pip_install_gr "$@"; }
pip_uninstall() { _record pip_uninstall "$@"; }
git_clone() { _record git_clone "$@"; }
iniset() { _record iniset "$@"; }
run_process() { _record run_process "$@"; }
stop_process() { _record stop_process "$@"; }
warn() { _record warn "$@"; }
die() { _record die "$@"; exit 1; }
openstack() { _record openstack "$@"; return "${STUB_OPENSTACK_RC:-0}"; }
# stack.sh sources the plugin's settings first, then plugin.sh MODE PHASE
source "$STUB_SETTINGS"
source "$STUB_PLUGIN" "$@"
'''


class TestShellSyntax(base.TestCase):
    def test_bash_n(self):
        for path in (PLUGIN, SETTINGS):
            proc = subprocess.run([BASH, '-n', path], capture_output=True,
                                  text=True)
            self.assertEqual(0, proc.returncode,
                             '%s: %s' % (path, proc.stderr))


class TestZuulJob(base.TestCase):
    def setUp(self):
        super().setUp()
        with open(ZUUL) as f:
            self.config = yaml.safe_load(f)
        self.jobs = {item['job']['name']: item['job']
                     for item in self.config if 'job' in item}
        self.project = [item['project'] for item in self.config
                        if 'project' in item]

    def test_functional_job(self):
        job = self.jobs['gpuclient-functional-devstack']
        self.assertEqual('devstack-tox-functional', job['parent'])
        variables = job['vars']
        self.assertEqual('functional', variables['tox_envlist'])
        self.assertEqual('devstack-admin',
                         variables['tox_environment']['OS_CLOUD'])
        plugins = variables['devstack_plugins']
        self.assertIn('gpuclient', plugins)
        self.assertTrue(plugins['gpuclient'].endswith('/gpuclient'))

    def test_differential_tests_run_with_novas_python(self):
        # devstack's defaults (stackrc): DEST=/opt/stack, DATA_DIR=$DEST/data,
        # DEVSTACK_VENV=$DATA_DIR/venv with GLOBAL_VENV, where Nova and the
        # plugin's setup_develop install
        env = self.jobs['gpuclient-functional-devstack']['vars'][
            'tox_environment']
        self.assertEqual(
            os.path.join('/opt/stack', 'data', 'venv', 'bin', 'python'),
            env['GPUCLIENT_NOVA_PYTHON'])
        # tox passes it on, and run-functional uses it and fails when it
        # is set but missing, instead of skipping the differential tests
        with open(os.path.join(TOP, 'tox.ini')) as f:
            functional = f.read().split('[testenv:functional]')[1]
        self.assertIn('GPUCLIENT_*', functional.split('\n[')[0])
        with open(os.path.join(TOP, 'tools', 'run-functional')) as f:
            runner = f.read()
        self.assertIn('NOVA_PYTHON=${GPUCLIENT_NOVA_PYTHON:-', runner)
        self.assertIn('-n "${GPUCLIENT_NOVA_PYTHON:-}" ]; then', runner)
        # the plugin installs gpuclient into devstack's python (the venv
        # above), where the differential tests import it
        calls = StubDevstack(self).run('stack', 'install')
        self.assertIn('setup_develop', [c[0] for c in calls])

    def test_plugin_name_matches_settings(self):
        # devstack loads devstack/ of the repo enabled as NAME; settings
        # must define the same NAME
        job = self.jobs['gpuclient-functional-devstack']
        calls = StubDevstack(self).run('source')
        self.assertIn(['define_plugin', *job['vars']['devstack_plugins']],
                      calls)

    def test_tox_env_exists(self):
        # the job runs a tox environment tox.ini defines, whose runner
        # uses OS_CLOUD instead of starting the test cloud
        with open(os.path.join(TOP, 'tox.ini')) as f:
            tox_ini = f.read()
        self.assertIn('[testenv:functional]', tox_ini)
        with open(os.path.join(TOP, 'tools', 'run-functional')) as f:
            self.assertIn('OS_CLOUD', f.read())

    def test_job_is_run(self):
        self.assertEqual(1, len(self.project))
        names = []
        for pipeline in ('check', 'gate'):
            for job in self.project[0].get(pipeline, {}).get('jobs', []):
                names.append(next(iter(job)) if isinstance(job, dict)
                             else job)
        self.assertIn('gpuclient-functional-devstack', names)


class StubDevstack:
    """Runs the plugin's phases in a temp dir with stub devstack functions."""

    def __init__(self, test, **env):
        self.test = test
        self.tmp = test.useFixture(fixtures.TempDir()).path
        self.env = {
            'PATH': os.environ.get('PATH', '/usr/bin:/bin'),
            'HOME': self.tmp,
            'DEST': os.path.join(self.tmp, 'opt-stack'),
            'ENABLED_SERVICES': 'key,n-api,placement-api,g-api',
            'DISABLED_SERVICES': '',
            'STUB_CALLS': os.path.join(self.tmp, 'calls'),
            'STUB_SETTINGS': SETTINGS,
            'STUB_PLUGIN': PLUGIN,
        }
        self.env.update(env)
        self.wrapper = os.path.join(self.tmp, 'stub-devstack.sh')
        with open(self.wrapper, 'w') as f:
            f.write(STUB)
        self.returncode = None
        self.stderr = ''

    def run(self, *args, check=True):
        """Run plugin.sh ARGS; the recorded calls as lists of words."""
        calls = self.env['STUB_CALLS']
        if os.path.exists(calls):
            os.unlink(calls)
        proc = subprocess.run([BASH, self.wrapper, *args], env=self.env,
                              capture_output=True, text=True, timeout=60)
        self.returncode, self.stderr = proc.returncode, proc.stderr
        if check:
            self.test.assertEqual(0, proc.returncode, proc.stderr)
        if not os.path.exists(calls):
            return []
        with open(calls) as f:
            return [line.rstrip('\n').split('\t') for line in f]


def _names(calls):
    return [call[0] for call in calls]


# what settings alone records: the plugin's name and service
SETTINGS_CALLS = ['define_plugin', 'enable_service']


class TestPluginPhases(base.TestCase):
    def test_settings(self):
        calls = StubDevstack(self).run('source')
        self.assertEqual([['define_plugin', 'gpuclient'],
                          ['enable_service', 'gpuclient']], calls)

    def test_stack_install_installs_from_gpuclient_dir(self):
        src = self.useFixture(fixtures.TempDir()).path
        calls = StubDevstack(self, GPUCLIENT_DIR=src).run('stack', 'install')
        installs = [c for c in calls
                    if c[0] in ('setup_develop', 'setup_dev_lib',
                                'setup_install', 'pip_install',
                                'pip_install_gr')]
        self.assertEqual([['setup_develop', src]], installs)
        self.assertNotIn('openstack', _names(calls))

    def test_gpuclient_dir_defaults_to_dest(self):
        stub = StubDevstack(self)
        calls = stub.run('stack', 'install')
        self.assertIn(
            ['setup_develop', os.path.join(stub.env['DEST'], 'gpuclient')],
            calls)

    def test_phases_without_work(self):
        # phases a client plugin has nothing to do in run cleanly and
        # neither install nor call the cloud
        for args in (('stack', 'pre-install'), ('stack', 'post-config'),
                     ('stack', 'test-config'), ('unstack',)):
            calls = StubDevstack(self).run(*args)
            work = [n for n in _names(calls)
                    if n not in SETTINGS_CALLS + ['echo_summary']]
            self.assertEqual([], work, args)

    def test_stack_extra_checks_the_cloud(self):
        calls = StubDevstack(self).run('stack', 'extra')
        self.assertIn(['openstack', '--os-cloud', 'devstack-admin', 'gpu',
                       'host', 'list'], calls)
        calls = StubDevstack(self, GPUCLIENT_CHECK_CLOUD='other').run(
            'stack', 'extra')
        self.assertIn(['openstack', '--os-cloud', 'other', 'gpu', 'host',
                       'list'], calls)

    def test_stack_extra_fails_stack_when_the_check_fails(self):
        stub = StubDevstack(self, STUB_OPENSTACK_RC='1')
        calls = stub.run('stack', 'extra', check=False)
        self.assertNotEqual(0, stub.returncode)
        self.assertEqual('die', calls[-1][0])
        self.assertIn('gpu host list failed', ' '.join(calls[-1]))

    def test_stack_extra_check_can_be_turned_off(self):
        calls = StubDevstack(self, GPUCLIENT_CHECK_CLOUD='').run(
            'stack', 'extra')
        self.assertNotIn('openstack', _names(calls))

    def test_clean_uninstalls(self):
        calls = StubDevstack(self).run('clean')
        self.assertIn(['pip_uninstall', 'gpuclient'], calls)

    def test_disabled_service_does_nothing(self):
        # local.conf "disable_service gpuclient" wins over settings'
        # enable_service, and then no phase does anything
        for args in (('stack', 'install'), ('stack', 'extra'), ('clean',)):
            calls = StubDevstack(self, DISABLED_SERVICES='gpuclient').run(
                *args)
            self.assertEqual(SETTINGS_CALLS, _names(calls), args)
