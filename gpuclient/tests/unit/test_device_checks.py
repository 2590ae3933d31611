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

"""gpu check's DCGM checks over plain data: device rows as ``gpu device
list`` builds them and the DCGM exporter's series as Prometheus answers
them (issue 39 item 2). A corpus: each fault is found with its fix, and
the state after that fix is clean."""

from gpuclient.rules import checks
from gpuclient.rules import device_health as dh
from gpuclient.rules import utilisation
from gpuclient.tests.unit import test_checks

PT = 'gpu-pt-1'
VG = 'gpu-vgpu-1'
CARDS = ('0000:41:00.0', '0000:42:00.0', '0000:c1:00.0', '0000:c2:00.0')


def host_labels(host, pci, **extra):
    """The labels of a host-side DCGM series."""
    return dict({'gpu': '0', 'Hostname': host,
                 'pci_bus_id': '0000' + pci.upper()}, **extra)


def device(host, pci, servers=(), rc='CUSTOM_PCI_10DE_2331', **health):
    """A row of ``gpu device list`` with its health fields."""
    row = {'uuid': 'rp-%s-%s' % (host, pci), 'name': '%s_%s' % (host, pci),
           'host': host, 'pools': ['solver'], 'resource_class': rc,
           'pci_address': pci, 'server_ids': list(servers),
           'servers': ['vm-' + s for s in servers],
           'projects': ['p1'] if servers else [], 'total': 1,
           'used': len(servers)}
    row.update(dict.fromkeys(dh.FIELDS, dh.UNKNOWN))
    row.update(health)
    return row


def healthy(host, pci, servers=(), **health):
    return device(host, pci, servers, **dict(dict(
        health='pass', last_xid=0, xid_action=None, row_remap=dh.REMAP_OK),
        **health))


class DeviceChecksTestCase(test_checks.ChecksTestCase):

    def run_device(self, names, rows, answers, disabled=()):
        """The findings of the checks NAMES over ROWS and the parsed
        Prometheus ANSWERS ({query name: [(labels, value)]})."""
        self.pool(test_checks.PT_SPEC, [PT, VG])
        self.fc.disabled.update(disabled)
        cloud = self.cloud()
        cloud.device_health = {
            'rows': rows, 'series': dh.series(answers),
            'hosts': {h: utilisation.host_keys(h) for h in (PT, VG)},
            'window': 3600}
        return checks.run(cloud, names=names)


class TestCorpus(DeviceChecksTestCase):
    """(case, check, fault, what it names, a word of its fix, the state
    after the fix): rows and answers."""

    def cases(self):
        xid = device(PT, CARDS[0], ['s1'], last_xid=79,
                     xid_action=dh.xid_action(79), health='pass',
                     row_remap=dh.REMAP_OK)
        remap = healthy(PT, CARDS[1], row_remap=dh.REMAP_FAILED)
        vgpu = healthy(VG, '0000:84:00.0', ['s1'], rc='VGPU')
        vgpu2 = healthy(VG, '0000:85:00.0', ['s2'], rc='VGPU')
        guest = {'gpu': '0', 'instance_id': 's1'}
        vm = host_labels(VG, '0000:85:00.0', DCGM_FI_DEV_VGPU_VM_ID='s2')
        drivers = {'present': [
            (host_labels(PT, CARDS[0], DCGM_FI_DRIVER_VERSION='550.90.07'),
             0.0),
            (host_labels(VG, '0000:84:00.0',
                         DCGM_FI_DRIVER_VERSION='535.216.01'), 0.0)]}
        same = {'present': [
            (host_labels(PT, CARDS[0], DCGM_FI_DRIVER_VERSION='550.90.07'),
             0.0),
            (host_labels(VG, '0000:84:00.0',
                         DCGM_FI_DRIVER_VERSION='550.90.07'), 0.0)]}
        four = [healthy(PT, pci) for pci in CARDS]
        three = {'present': [(host_labels(PT, pci), 0.0)
                             for pci in CARDS[:3]]}
        return [
            # a cordon closes the host: the finding goes
            ('xid', 'gpu-unhealthy', ([xid], {}, ()),
             'device gpu-pt-1 0000:41:00.0', 'openstack gpu host cordon '
             'gpu-pt-1; openstack gpu host drain gpu-pt-1; then reboot the '
             'host', ([xid], {}, (PT,))),
            ('remap', 'gpu-row-remap', ([remap], {}, ()),
             'device gpu-pt-1 0000:42:00.0', 'nvidia-smi -r',
             ([healthy(PT, CARDS[1])], {}, ())),
            ('guest licence', 'gpu-vgpu-licence',
             ([vgpu], {'licence': [(guest, 0.0)]}, ()), 'server vm-s1 (s1)',
             'nvidia-gridd', ([vgpu], {'licence': [(guest, 1.0)]}, ())),
            ('host licence', 'gpu-vgpu-licence',
             ([vgpu2], {'instance_licence': [(vm, 0.0)]}, ()),
             'server vm-s2 (s2)', 'NVIDIA License System',
             ([vgpu2], {'instance_licence': [(vm, 1.0)]}, ())),
            ('drift', 'gpu-driver-drift', ([], drivers, ()), 'pool solver',
             'install the driver', ([], same, ())),
            # the GPU back on the bus
            ('missing', 'gpu-missing', (four, three, ()), 'host gpu-pt-1',
             'XID 79', (four, {'present': [(host_labels(PT, pci), 0.0)
                                           for pci in CARDS]}, ())),
        ]

    def test_corpus(self):
        for case, check, fault, obj, fix, fixed in self.cases():
            self.fresh()
            found = self.run_device([check], *fault)
            self.assertEqual([obj], [f.object for f in found], case)
            self.assertIn(fix, found[0].fix, case)
            self.fresh()
            self.assertEqual([], self.run_device([check], *fixed), case)

    def test_symptoms_name_what_an_operator_needs(self):
        xid = device(PT, CARDS[0], ['s1'], last_xid=79,
                     xid_action=dh.xid_action(79))
        found = self.run_device(['gpu-unhealthy'], [xid], {})
        self.assertEqual(checks.ERROR, found[0].severity)
        self.assertIn('held by vm-s1 of project p1', found[0].symptom)
        self.assertIn('XID 79 in the last 1h', found[0].symptom)
        self.assertEqual(('solver',), found[0].pools)
        self.fresh()
        drift = self.cases()[4][2][1]
        found = self.run_device(['gpu-driver-drift'], [], drift)
        self.assertIn('535.216.01 on gpu-vgpu-1; 550.90.07 on gpu-pt-1',
                      found[0].symptom)
        self.fresh()
        four, three = self.cases()[5][2][:2]
        found = self.run_device(['gpu-missing'], four, three)
        self.assertIn('sees 3 of the 4 GPUs', found[0].symptom)
        self.assertIn('0000:c2:00.0', found[0].symptom)

    def test_a_gpu_gone_within_the_window_is_missing(self):
        # its last XID is still in the window, but DCGM serves it no more
        four = [healthy(PT, pci) for pci in CARDS]
        answers = {
            'xid': [(host_labels(PT, pci), 0.0) for pci in CARDS],
            'present': [(host_labels(PT, pci), 0.0) for pci in CARDS[:3]]}
        found = self.run_device(['gpu-missing'], four, answers)
        self.assertEqual(['host gpu-pt-1'], [f.object for f in found])
        self.assertIn('not seen: 0000:c2:00.0', found[0].symptom)

    def test_a_failed_health_watch_alone(self):
        sick = healthy(PT, CARDS[0], health=dh.HEALTH_FAIL)
        found = self.run_device(['gpu-unhealthy'], [sick], {})
        self.assertIn('fails a DCGM health watch', found[0].symptom)
        self.assertIn('dcgmi diag', found[0].fix)


class TestVfLicence(DeviceChecksTestCase):

    def test_a_vf_of_a_vgpu_vf_pool_is_a_vgpu(self):
        self.pool(test_checks.PT_SPEC, [PT, VG])
        cloud = self.cloud()
        cloud.pools['vf'] = {'mode': 'vgpu-vf', 'hosts': []}
        vf = dict(healthy(VG, '0000:41:00.4', ['s3'],
                          rc='CUSTOM_PCI_10DE_26B9'), pools=['vf'])
        pt = healthy(PT, CARDS[0], ['s4'])
        cloud.device_health = {'rows': [vf, pt], 'series': [], 'hosts': {},
                               'window': 3600}
        # the VF's server is a vGPU server; the passthrough one is not
        self.assertEqual(
            [('gpu-vgpu-licence', '1 vGPU server(s)')],
            test_checks.not_judged(checks.run(cloud,
                                              names=['gpu-vgpu-licence'])))
        cloud.device_health['series'] = dh.series({'licence': [
            ({'instance_id': 's3'}, 0.0)]})
        self.assertEqual(['server vm-s3 (s3)'], [f.object for f in checks.run(
            cloud, names=['gpu-vgpu-licence'])])


class TestNotJudged(DeviceChecksTestCase):

    def test_no_figure_is_not_judged_never_clean(self):
        rows = [device(PT, CARDS[0]),
                device(VG, '0000:84:00.0', ['s1'], rc='VGPU')]
        found = self.run_device(list(checkops_names()), rows, {})
        self.assertEqual(
            [('gpu-unhealthy', '2 GPU device(s)'),
             ('gpu-row-remap', '2 GPU device(s)'),
             ('gpu-vgpu-licence', '1 vGPU server(s)'),
             ('gpu-missing', '2 host(s)')],
            test_checks.not_judged(found))
        self.assertEqual({checks.WARNING}, {f.severity for f in found})

    def test_a_pool_host_without_a_driver_label(self):
        self.assertEqual(
            [('gpu-driver-drift', 'pool solver')],
            test_checks.not_judged(self.run_device(
                ['gpu-driver-drift'], [], {'present': [(host_labels(
                    PT, CARDS[0], DCGM_FI_DRIVER_VERSION='550.90.07'),
                    0.0)]})))

    def test_prometheus_failed_or_not_configured(self):
        # not configured: the checks do not run (gpu check says so)
        self.assertEqual([], checks.run(self.cloud(),
                                        names=list(checkops_names())))
        cloud = self.cloud()
        cloud.unread['device_health'] = 'HTTP 500'
        found = checks.run(cloud, names=list(checkops_names()))
        self.assertEqual(5, len(test_checks.not_judged(found)))
        self.assertTrue(all('HTTP 500' in f.symptom for f in found))


def checkops_names():
    return ('gpu-unhealthy', 'gpu-row-remap', 'gpu-vgpu-licence',
            'gpu-driver-drift', 'gpu-missing')


class TestQueries(test_checks.base.TestCase):

    def test_a_fixed_number_whatever_the_devices(self):
        queries = dh.check_queries(600)
        self.assertEqual(8, len(queries))
        self.assertEqual('DCGM_FI_DEV_XID_ERRORS', queries['present'])
        self.assertEqual(
            'last_over_time(DCGM_FI_DEV_VGPU_INSTANCE_LICENSE_STATUS[600s])',
            queries['instance_licence'])

    def test_licences_join_guest_and_host_side(self):
        found = dh.series({
            'licence': [({'instance_id': 's1'}, 1.0)],
            'instance_licence': [
                (host_labels(VG, '0000:84:00.0',
                             DCGM_FI_DEV_VGPU_VM_ID='s1'), 0.0),
                (host_labels(VG, '0000:84:00.0',
                             DCGM_FI_DEV_VGPU_VM_ID='s2'), 1.0)]})
        self.assertEqual({'s1': ('host', False), 's2': ('host', True)},
                         dh.licences(found))
