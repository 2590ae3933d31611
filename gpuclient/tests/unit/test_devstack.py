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
import sys

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
openstack() {
    _record openstack "$@"
    [[ -n "${STUB_OPENSTACK_OUT:-}" ]] && printf '%b\n' "$STUB_OPENSTACK_OUT"
    return "${STUB_OPENSTACK_RC:-0}"
}
iniget() { _record iniget "$@"; echo "${STUB_INIGET:-}"; }
# devstack's: True or False from a setting's value, else the default
trueorfalse() {
    local default=$1 v=${!2:-}
    case "$v" in
        1|yes|Yes|YES|true|True|TRUE|on|On|ON) echo True ;;
        0|no|No|NO|false|False|FALSE|off|Off|OFF) echo False ;;
        *) echo "$default" ;;
    esac
}
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
        # with the extras: gpu profile plan's solver, -f openmetrics'
        # writer (devstack's setup_package makes them [profiles,metrics])
        self.assertEqual([['setup_develop', src, 'profiles,metrics']],
                         installs)
        self.assertNotIn('openstack', _names(calls))

    def test_gpuclient_dir_defaults_to_dest(self):
        stub = StubDevstack(self)
        calls = stub.run('stack', 'install')
        self.assertIn(
            ['setup_develop', os.path.join(stub.env['DEST'], 'gpuclient'),
             'profiles,metrics'],
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


# the hosts the plugin starts with GPUCLIENT_FAKE_GPU_HOSTS and their drivers
FAKE_HOSTS = {'gpu-pt-1': 'PassthroughDriver', 'gpu-vgpu-1': 'VgpuDriver',
              'gpu-mig-1': 'MigDriver', 'plain-1': 'PlainDriver'}


class TestFakeGpuHosts(base.TestCase):
    """GPUCLIENT_FAKE_GPU_HOSTS: nova-computes with tools/cloud/fakevirt.py."""

    def stub(self, **env):
        tmp = self.useFixture(fixtures.TempDir()).path
        bindir = os.path.join(tmp, 'bin')
        os.mkdir(bindir)
        manage = os.path.join(bindir, 'nova-manage')
        with open(manage, 'w') as f:
            f.write('#!/bin/sh\nexit 0\n')
        os.chmod(manage, 0o755)
        cpu_conf = os.path.join(tmp, 'nova-cpu.conf')
        with open(cpu_conf, 'w') as f:
            f.write('[DEFAULT]\n')
        env = dict({
            'GPUCLIENT_FAKE_GPU_HOSTS': 'true',
            'GPUCLIENT_DIR': TOP,
            'GPUCLIENT_NOVA_PYTHON': sys.executable,
            'NOVA_BIN_DIR': bindir,
            'NOVA_CONF_DIR': tmp,
            'NOVA_CONF': os.path.join(tmp, 'nova.conf'),
            'NOVA_CPU_CONF': cpu_conf,
            'DATA_DIR': tmp,
            'STUB_OPENSTACK_OUT': r'gpu-pt-1.gpu.test\ngpu-vgpu-1\n'
                                  r'gpu-mig-1\nplain-1',
        }, **env)
        return StubDevstack(self, **env), tmp

    def test_off_by_default(self):
        stub = StubDevstack(self)
        self.assertNotIn('run_process', _names(stub.run('stack', 'extra')))
        self.assertEqual([], [n for n in _names(stub.run('unstack'))
                              if n not in SETTINGS_CALLS])

    def test_stack_extra_starts_one_compute_per_host(self):
        stub, tmp = self.stub()
        calls = stub.run('stack', 'extra')
        started = {c[1]: c[2] for c in calls if c[0] == 'run_process'}
        self.assertEqual({'gpuclient-cpu-' + h for h in FAKE_HOSTS},
                         set(started))
        for host, driver in FAKE_HOSTS.items():
            conf = os.path.join(tmp, 'nova-cpu-gpuclient-%s.conf' % host)
            self.assertIn(['iniset', conf, 'DEFAULT', 'host', host], calls)
            self.assertIn(['iniset', conf, 'DEFAULT', 'compute_driver',
                           'gpufake.' + driver], calls)
            command = started['gpuclient-cpu-' + host]
            self.assertIn('PYTHONPATH=%s/tools' % TOP, command)
            self.assertIn('-m cloud.compute --config-file ' + conf, command)
        # the extra conf is tools/cloud/hosts.py's
        with open(os.path.join(
                tmp, 'nova-cpu-gpuclient-gpu-pt-1-extra.conf')) as f:
            self.assertIn('report_in_placement = true', f.read())
        with open(os.path.join(
                tmp, 'nova-cpu-gpuclient-gpu-vgpu-1-extra.conf')) as f:
            self.assertIn('enabled_mdev_types = nvidia-35', f.read())
        # still checked afterwards
        self.assertEqual(['openstack', '--os-cloud', 'devstack-admin', 'gpu',
                          'host', 'list'], calls[-1])

    def test_hosts_that_never_come_up_fail_stack(self):
        stub, _ = self.stub(STUB_OPENSTACK_OUT='gpu-pt-1.gpu.test')
        # the wait is 60 tries of 2 s: make sleep free
        stub.env['PATH'] = self._no_sleep_path() + ':' + stub.env['PATH']
        calls = stub.run('stack', 'extra', check=False)
        self.assertNotEqual(0, stub.returncode)
        self.assertEqual('die', calls[-1][0])

    def _no_sleep_path(self):
        d = self.useFixture(fixtures.TempDir()).path
        path = os.path.join(d, 'sleep')
        with open(path, 'w') as f:
            f.write('#!/bin/sh\nexit 0\n')
        os.chmod(path, 0o755)
        return d

    def test_post_config_sets_the_alias_and_pci_filter(self):
        stub, tmp = self.stub(STUB_INIGET='ComputeFilter,NUMATopologyFilter')
        calls = stub.run('stack', 'post-config')
        nova_conf = os.path.join(tmp, 'nova.conf')
        self.assertIn(['iniset', nova_conf, 'filter_scheduler',
                       'pci_in_placement', 'true'], calls)
        self.assertIn(['iniset', nova_conf, 'filter_scheduler',
                       'enabled_filters',
                       'ComputeFilter,NUMATopologyFilter,'
                       'PciPassthroughFilter'], calls)
        alias = [c for c in calls if c[:4] == ['iniset', nova_conf, 'pci',
                                                'alias']]
        self.assertIn('"h100"', alias[0][4])

    def test_unstack_stops_them(self):
        stub, _ = self.stub()
        stopped = [c[1] for c in stub.run('unstack')
                   if c[0] == 'stop_process']
        self.assertEqual(sorted('gpuclient-cpu-' + h for h in FAKE_HOSTS),
                         sorted(stopped))


class TestZuulJobFakeHosts(base.TestCase):
    """The job turns the fake hosts on and names them to the tests."""

    def setUp(self):
        super().setUp()
        with open(ZUUL) as f:
            self.jobs = {item['job']['name']: item['job']
                         for item in yaml.safe_load(f) if 'job' in item}

    def test_job_enables_the_fake_hosts_with_the_plugins_names(self):
        job_vars = self.jobs['gpuclient-functional-devstack']['vars']
        self.assertIs(True,
                      job_vars['devstack_localrc']['GPUCLIENT_FAKE_GPU_HOSTS'])
        env = job_vars['tox_environment']
        with open(SETTINGS) as f:
            settings = f.read()
        for var, host in (('GPUCLIENT_PT_HOST', 'gpu-pt-1'),
                          ('GPUCLIENT_VGPU_HOST', 'gpu-vgpu-1'),
                          ('GPUCLIENT_MIG_HOST', 'gpu-mig-1'),
                          ('GPUCLIENT_PLAIN_HOST', 'plain-1')):
            self.assertEqual(host, env[var])
            self.assertIn('%s:%s' % (host, FAKE_HOSTS[host]), settings)
        # no Ironic on the job: the bare-metal tests skip (discovery)
        self.assertNotIn('GPUCLIENT_BM_HOST', env)

    def test_results_go_where_fetch_subunit_output_reads(self):
        env = self.jobs['gpuclient-functional-devstack']['vars'][
            'tox_environment']
        self.assertEqual('.', env['GPUCLIENT_FT_REPO'])
        with open(os.path.join(TOP, 'tools', 'run-functional')) as f:
            self.assertIn('--repo-url "$REPO"', f.read())
