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

"""Checks that could not run (issue 51, defect 7): a check whose source
(``checks.SOURCES``) the cloud lacks could not run, a declared property
read from ``cloud.unread`` and ``cloud.unconfigured``, never from the
findings' words; every check asked for in that state is trouble (2), some
of them leave the status to the others."""

from gpuclient.ops import check_ops
from gpuclient.rules import checks
from gpuclient.tests.unit import test_checks

DEVICE = ('gpu-unhealthy', 'gpu-application-xid', 'gpu-row-remap',
          'gpu-vgpu-licence', 'gpu-driver-drift', 'gpu-missing')
HOSTS = ('host-facts-stale', 'host-iommu-off', 'host-gpu-driver',
         'host-iommu-group', 'host-state-lost', 'host-layout-drift',
         'host-mig-pending', 'host-mdevctl-missing')
DOWN = 'Querying Prometheus at http://prom.test:9090: HTTP 500'
NONE = 'no Prometheus is configured'

# (unread, unconfigured, --check names, strict, checks not run, status)
CASES = [
    # Prometheus answered 500: the DCGM check alone could not run
    ({'device_health': DOWN}, {}, ['gpu-unhealthy'], False,
     ['gpu-unhealthy'], checks.EXIT_NOT_RUN),
    # ... with --strict too: trouble before findings
    ({'device_health': DOWN}, {}, ['gpu-unhealthy'], True,
     ['gpu-unhealthy'], checks.EXIT_NOT_RUN),
    # not configured: the same
    ({}, {'device_health': NONE, 'utilisation': NONE}, ['gpu-missing'],
     False, ['gpu-missing'], checks.EXIT_NOT_RUN),
    # both checks asked for could not run (one source each)
    ({'utilisation': DOWN}, {'device_health': NONE},
     ['gpu-idle', 'gpu-unhealthy'], False, ['gpu-idle', 'gpu-unhealthy'],
     checks.EXIT_NOT_RUN),
    # one of two ran (pool-drift rests on the snapshot): its status
    ({'device_health': DOWN}, {}, ['gpu-unhealthy', 'pool-drift'], False,
     ['gpu-unhealthy'], checks.EXIT_CLEAN),
    # with --strict the not-judged row of the one that could not run is
    # a warning, as before: 1
    ({'device_health': DOWN}, {}, ['gpu-unhealthy', 'pool-drift'], True,
     ['gpu-unhealthy'], checks.EXIT_FINDINGS),
    # every check (no --check), Prometheus down: the others decide
    ({'device_health': DOWN, 'utilisation': DOWN}, {}, None, False,
     ['gpu-idle', *DEVICE], checks.EXIT_CLEAN),
    # Keystone refused the registered limits: quota-gpu-limits alone
    ({'registered': 'Keystone: HTTP 403'}, {},
     ['quota-gpu-limits'], False, ['quota-gpu-limits'],
     checks.EXIT_NOT_RUN),
    # a source the checks asked for do not rest on: they ran
    ({'device_health': DOWN}, {}, ['gpu-idle'], False, [],
     checks.EXIT_CLEAN),
    # nothing missing
    ({}, {}, ['gpu-unhealthy'], False, [], checks.EXIT_CLEAN),
]


class TestNotRun(test_checks.ChecksTestCase):
    def test_cases(self):
        self.clean_cloud()
        for unread, unconfigured, names, strict, missing, status in CASES:
            cloud = self.cloud()
            cloud.registered = test_checks.registered(
                {'class:CUSTOM_PCI_10DE_2331': 4, 'class:VGPU': 8})
            cloud.unread.update(unread)
            cloud.unconfigured.update(unconfigured)
            if 'registered' in unread:
                cloud.registered = None
            settings = test_checks.conf(test_checks.GOOD_CONF)
            found = checks.run(cloud, settings, names=names)
            said = checks.not_run(cloud, names)
            case = (unread, unconfigured, names, strict)
            self.assertEqual(missing, list(said), case)
            self.assertEqual(status, checks.exit_status(
                found, strict, names, said), case)

    def test_the_findings_do_not_decide(self):
        # a check that could not run says "not judged" in a row; the
        # status reads the declared state, not the row's words
        cloud = self.cloud()
        cloud.unread['device_health'] = DOWN
        found = checks.run(cloud, names=['gpu-unhealthy'])
        self.assertEqual([('gpu-unhealthy', 'Prometheus')],
                         test_checks.not_judged(found))
        self.assertEqual(checks.EXIT_NOT_RUN, checks.exit_status(
            found, False, ['gpu-unhealthy'],
            checks.not_run(cloud, ['gpu-unhealthy'])))
        # the same words with the source read: a check that ran (its
        # not-judged warning is its finding)
        cloud.unread.clear()
        self.assertEqual(checks.EXIT_CLEAN, checks.exit_status(
            found, False, ['gpu-unhealthy'],
            checks.not_run(cloud, ['gpu-unhealthy'])))

    def test_every_source_is_a_field_of_the_cloud(self):
        cloud = self.cloud()
        for name, sources in checks.SOURCES.items():
            self.assertIn(name, checks.CHECKS)
            self.assertTrue(sources, name)
            for source in sources:
                self.assertTrue(hasattr(cloud, source), source)

    def test_every_check_on_dcgm_rests_on_device_health(self):
        # a check the ops layer reads DCGM's series for could not run
        # when Prometheus could not be read: a new one is declared too
        for name in check_ops.DEVICE_CHECKS:
            self.assertIn('device_health', checks.SOURCES.get(name), name)
        self.assertEqual(set(DEVICE), set(check_ops.DEVICE_CHECKS))

    def test_every_host_check_rests_on_the_host_facts(self):
        for name in HOSTS:
            self.assertEqual(('host_facts',), checks.SOURCES[name], name)
        self.assertEqual(('device_health', 'host_facts'),
                         checks.SOURCES['gpu-driver-drift'])

    def test_driver_drift_runs_on_either_source(self):
        # DCGM down and the hosts' facts read: it runs on the facts; both
        # down: it could not run, each reason said once
        cloud = self.cloud()
        cloud.unread['device_health'] = DOWN
        cloud.host_facts = {}
        self.assertEqual({}, checks.not_run(cloud, ['gpu-driver-drift']))
        cloud.host_facts = None
        self.assertEqual({'gpu-driver-drift': DOWN},
                         checks.not_run(cloud, ['gpu-driver-drift']))
        cloud.unread['host_facts'] = DOWN
        self.assertEqual({'gpu-driver-drift': DOWN},
                         checks.not_run(cloud, ['gpu-driver-drift']))
        cloud.unread['host_facts'] = 'Prometheus: HTTP 403'
        self.assertEqual(
            {'gpu-driver-drift': DOWN + '; Prometheus: HTTP 403'},
            checks.not_run(cloud, ['gpu-driver-drift']))
        # the facts down and DCGM read: it runs on DCGM's figures
        del cloud.unread['device_health']
        cloud.device_health = {'rows': [], 'series': [], 'hosts': {},
                               'window': 3600}
        self.assertEqual({}, checks.not_run(cloud, ['gpu-driver-drift']))

    def test_host_checks_without_prometheus(self):
        # none configured: every host check could not run, as the DCGM
        # checks; not asked for (the facts never read): they ran, silent
        cloud = self.cloud()
        self.assertEqual({}, checks.not_run(cloud, HOSTS))
        self.assertEqual([], checks.run(cloud, names=HOSTS))
        cloud.unconfigured['host_facts'] = NONE
        self.assertEqual({name: NONE for name in HOSTS},
                         checks.not_run(cloud, HOSTS))
        self.assertEqual(checks.EXIT_NOT_RUN, checks.exit_status(
            [], False, HOSTS, checks.not_run(cloud, HOSTS)))

    def test_text_groups_checks_by_reason(self):
        self.assertEqual(
            'gpu-idle, gpu-unhealthy (no Prometheus is configured); '
            'quota-gpu-limits (Keystone: HTTP 403)',
            checks.not_run_text({'gpu-idle': NONE, 'gpu-unhealthy': NONE,
                                 'quota-gpu-limits': 'Keystone: HTTP 403.'}))
