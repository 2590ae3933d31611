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
from gpuclient.rules import utilisation
from gpuclient.rules.devices import health as dh
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
        health='pass', last_xid=0, xid_action=None, row_remap=dh.REMAP_OK,
        xid_class=None, xid_since=None, health_source=dh.HOST_SIDE,
        unhealthy=False), **health))


# when the queries were evaluated (2023-11-14T22:13:20Z)
NOW = 1700000000
DAY = 86400


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
            'window': 3600, 'now': NOW}
        return checks.run(cloud, names=names)

    def run_read(self, names, rows, answers, disabled=()):
        """run_device over ROWS annotated from ANSWERS, as the ops layer
        does (dh.annotate at NOW over an hour)."""
        found = dh.series(answers)
        rows = dh.annotate(rows, found, {r['uuid']: utilisation.host_keys(
            r['host']) for r in rows}, NOW, 3600)
        return self.run_device(names, rows, answers, disabled)


class TestCorpus(DeviceChecksTestCase):
    """(case, check, fault, what it names, a word of its fix, the state
    after the fix): rows and answers."""

    def cases(self):
        xid = healthy(PT, CARDS[0], ['s1'], last_xid=79,
                      xid_action=dh.xid_action(79), xid_class=dh.XID_HOST,
                      xid_since='2023-11-12T22:13:20Z', unhealthy=True)
        remap = healthy(PT, CARDS[1], row_remap=dh.REMAP_FAILED)
        vgpu = healthy(VG, '0000:84:00.0', ['s1'], rc='VGPU')
        vgpu2 = healthy(VG, '0000:85:00.0', ['s2'], rc='VGPU')
        guest = {'gpu': '0', 'instance_id': 's1'}
        vm = host_labels(VG, '0000:85:00.0', DCGM_FI_DEV_VGPU_VM_ID='s2')
        drivers = {'xid': [
            (host_labels(PT, CARDS[0], DCGM_FI_DRIVER_VERSION='550.90.07'),
             0.0),
            (host_labels(VG, '0000:84:00.0',
                         DCGM_FI_DRIVER_VERSION='535.216.01'), 0.0)]}
        same = {'xid': [
            (host_labels(PT, CARDS[0], DCGM_FI_DRIVER_VERSION='550.90.07'),
             0.0),
            (host_labels(VG, '0000:84:00.0',
                         DCGM_FI_DRIVER_VERSION='550.90.07'), 0.0)]}
        four = [healthy(PT, pci) for pci in CARDS]
        three = {'xid': [(host_labels(PT, pci), 0.0)
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
             'XID 79', (four, {'xid': [(host_labels(PT, pci), 0.0)
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
        xid = self.cases()[0][2][0][0]
        found = self.run_device(['gpu-unhealthy'], [xid], {})
        self.assertEqual(checks.ERROR, found[0].severity)
        self.assertIn('held by vm-s1 of project p1', found[0].symptom)
        # dated by the change of the gauge, not "in the last hour"
        self.assertIn('XID 79 since 2023-11-12T22:13:20Z', found[0].symptom)
        self.assertEqual(('solver',), found[0].pools)
        self.fresh()
        drift = self.cases()[4][2][1]
        found = self.run_device(['gpu-driver-drift'], [], drift)
        self.assertIn('535.216.01 on gpu-vgpu-1; 550.90.07 on gpu-pt-1',
                      found[0].symptom)
        self.fresh()
        four, three = self.cases()[5][2][:2]
        found = self.run_device(['gpu-missing'], four, three)
        self.assertIn('does not serve the GPU(s) Placement offers at '
                      '0000:c2:00.0', found[0].symptom)

    def test_a_failed_health_watch_alone(self):
        sick = healthy(PT, CARDS[0], health=dh.HEALTH_FAIL)
        found = self.run_device(['gpu-unhealthy'], [sick], {})
        self.assertIn('fails a DCGM health watch', found[0].symptom)
        self.assertIn('dcgmi diag', found[0].fix)


def xid(labels, value, since=None):
    """The answers of one series' XID gauge: its value now and when it
    took it (SINCE, epoch seconds: in the hour's answer or the one before
    it; None: before the lookback)."""
    found = {'xid': [(labels, float(value))], 'xid_since': [],
             'xid_since_before': []}
    if since:
        found['xid_since' if since > NOW - 3600
              else 'xid_since_before'].append((labels, float(since)))
    return found


def merged(*answers):
    found = {}
    for item in answers:
        for name, results in item.items():
            found.setdefault(name, []).extend(results)
    return found


# the labels of the exporter in server s1's guest: the tenant's, all but
# instance_id
GUEST = {'gpu': '0', 'instance_id': 's1', 'Hostname': 'vm-s1',
         'pci_bus_id': '00000000:05:00.0'}


class TestXidClasses(DeviceChecksTestCase):
    """Whose an XID is decides what gpu check says, and to whom."""

    def test_cases(self):
        """(case, answers, disabled hosts, [(severity, check, object)]):
        passthrough GPU CARDS[0] of gpu-pt-1, held by server s1 of
        project p1; gpu-unhealthy and gpu-application-xid."""
        host = host_labels(PT, CARDS[0])
        device_ = 'device gpu-pt-1 0000:41:00.0'
        server = 'server vm-s1 (s1)'
        recent, old = NOW - 600, NOW - 2 * DAY
        error, warning = checks.ERROR, checks.WARNING
        cases = [
            # the host's: an error and a cordon, however old the change
            ('reboot class', xid(host, 79, old), (),
             [(error, 'gpu-unhealthy', device_)]),
            ('reset class, before the lookback', xid(host, 95), (),
             [(error, 'gpu-unhealthy', device_)]),
            ('support class', xid(host, 61, recent), (),
             [(error, 'gpu-unhealthy', device_)]),
            ('reset: the gauge back at 0', xid(host, 0, recent), (), []),
            ('reboot class, host cordoned', xid(host, 79, old), (PT,), []),
            # the application's: the project's, and only in the window
            ('application, recent', xid(host, 13, recent), (),
             [(warning, 'gpu-application-xid', server)]),
            ('application, aged out', xid(host, 31, old), (), []),
            ('application, before the lookback', xid(host, 13), (), []),
            ('informational', xid(host, 43, recent), (), []),
            # a workflow or an XID gpuclient does not class: looked up
            ('workflow', xid(host, 48, recent), (),
             [(warning, 'gpu-unhealthy', device_)]),
            ('not in the table', xid(host, 254, old), (),
             [(warning, 'gpu-unhealthy', device_)]),
        ]
        for case, answers, disabled, expected in cases:
            self.fresh()
            found = self.run_read(
                ['gpu-unhealthy', 'gpu-application-xid'],
                [healthy(PT, CARDS[0], ['s1'])], answers, disabled)
            self.assertEqual(expected, [(f.severity, f.check, f.object)
                                        for f in found], case)

    def test_what_each_says(self):
        host = host_labels(PT, CARDS[0])
        row = dict(healthy(PT, CARDS[0], ['s1']),
                   holders=[('vm-s1', 's1', 'p-nova', 'g1')])
        app = self.run_read(['gpu-application-xid'], [row],
                            xid(host, 13, NOW - 600))[0]
        # the project Nova says holds it (holders), the time of the change
        self.assertIn('server vm-s1 of project p-nova holds took XID 13 '
                      'since 2023-11-14T22:03:20Z', app.symptom)
        self.assertIn('not of the host', app.symptom)
        self.assertEqual('tell project p-nova to restart its application '
                         'on server s1; nothing to do on the host (this '
                         'finding ages out of the --window)', app.fix)
        self.assertNotIn('cordon', app.fix)
        self.fresh()
        unlisted = self.run_read(['gpu-unhealthy'], [row],
                                 xid(host, 48, NOW - 600))[0]
        self.assertIn(dh.CATALOGUE, unlisted.fix)
        self.assertFalse(unlisted.fix.startswith('openstack gpu host'))
        self.fresh()
        sticky = self.run_read(['gpu-unhealthy'], [row], xid(host, 79))[0]
        self.assertIn('XID 79 since before 2023-10-31T22:13:20Z',
                      sticky.symptom)


class TestHostSideDecides(DeviceChecksTestCase):
    """A guest's own exporter (labels and values the tenant's) never
    makes a host finding; what it says is passed on as its word."""

    def test_cases(self):
        """(case, row, answers, [(severity, check, object)]) over
        gpu-unhealthy, gpu-row-remap and gpu-application-xid."""
        vgpu = healthy(VG, '0000:84:00.0', ['s1', 's2'], rc='VGPU')
        pt = healthy(PT, CARDS[0], ['s1'])
        card = host_labels(VG, '0000:84:00.0')
        server = 'server vm-s1 (s1)'
        recent = NOW - 60
        # row remapping read and sound on both sides (one case differs)
        sound = {'row_remap_failure': [(card, 0.0), (GUEST, 0.0)]}
        cases = [
            # one tenant of a time-sliced card: its guest says 79 and
            # fails, the host-side series of the card reads healthy
            ('vgpu guest 79 and fail', vgpu, merged(
                sound, xid(card, 0), xid(GUEST, 79, recent),
                {'health': [(dict(card, health_watch='ALL'), 0.0),
                            (dict(GUEST, health_watch='ALL'), 20.0)]}),
             [(checks.WARNING, 'gpu-unhealthy', server)]),
            ('vgpu guest remap failed', vgpu, merged(
                xid(card, 0), {'row_remap_failure': [(card, 0.0),
                                                      (GUEST, 1.0)]}),
             [(checks.WARNING, 'gpu-row-remap', server)]),
            # its application XID is its own to see
            ('vgpu guest 13', vgpu, merged(sound, xid(card, 0),
                                           xid(GUEST, 13, recent)), []),
            # passthrough: the host's DCGM cannot see it; the guest's word
            # is all there is, and still no cordon
            ('passthrough guest 79', pt, merged(
                {'row_remap_failure': [(GUEST, 0.0)]},
                xid(GUEST, 79, recent)),
             [(checks.WARNING, 'gpu-unhealthy', server)]),
            # the host's own series: the host's verdict
            ('vgpu host 79, guest healthy', vgpu, merged(
                sound, xid(card, 79, recent), xid(GUEST, 0)),
             [(checks.ERROR, 'gpu-unhealthy',
               'device gpu-vgpu-1 0000:84:00.0')]),
        ]
        for case, row, answers, expected in cases:
            self.fresh()
            found = self.run_read(
                ['gpu-unhealthy', 'gpu-row-remap', 'gpu-application-xid'],
                [row], answers)
            self.assertEqual(expected, [(f.severity, f.check, f.object)
                                        for f in found], case)
            self.assertFalse([f for f in found if f.object == server
                              and 'cordon' in f.fix], case)

    def test_the_guests_word_is_marked(self):
        vgpu = healthy(VG, '0000:84:00.0', ['s1'], rc='VGPU')
        card = host_labels(VG, '0000:84:00.0')
        found = self.run_read(['gpu-unhealthy'], [vgpu], merged(
            xid(card, 0), xid(GUEST, 79, NOW - 60)))[0]
        self.assertIn('the guest\'s report', found.symptom)
        self.assertIn('decides nothing for the host', found.symptom)
        self.assertIn('own DCGM series of that GPU reads XID 0',
                      found.symptom)
        self.assertIn('openstack gpu device show gpu-vgpu-1:0000:84:00.0',
                      found.fix)


class TestMissingByAddress(DeviceChecksTestCase):
    """gpu-missing compares addresses, never counts."""

    def test_cases(self):
        """(case, rows, answers, [(severity, object, a word)])."""
        four = [healthy(PT, pci) for pci in CARDS]
        served = [xid(host_labels(PT, pci), 0) for pci in CARDS]
        extra = xid(host_labels(PT, '0000:e1:00.0'), 0)
        held = [healthy(PT, CARDS[0], ['s1'])] + four[1:]
        guest = xid(GUEST, 0)
        cases = [
            ('all served', four, merged(*served), []),
            # as many served as offered: c2 gone, e1 never offered
            ('gone and an extra', four, merged(*served[:3] + [extra]),
             [(checks.ERROR, 'host gpu-pt-1', '0000:c2:00.0')]),
            # passthrough: vfio-pci hides it from the host's DCGM
            ('held, guest reports', held, merged(*served[1:] + [guest]),
             []),
            ('held, guest silent', held, merged(*served[1:]),
             [(checks.WARNING, '1 GPU device(s)', 'not judged')]),
        ]
        for case, rows, answers, expected in cases:
            self.fresh()
            found = self.run_device(['gpu-missing'], rows, answers)
            self.assertEqual(expected, [
                (f.severity, f.object, word) for f, (_s, _o, word) in zip(
                    found, expected, strict=True) if word in f.symptom],
                case)


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
             ('gpu-application-xid', '1 GPU device(s)'),
             ('gpu-row-remap', '2 GPU device(s)'),
             ('gpu-vgpu-licence', '1 vGPU server(s)'),
             ('gpu-missing', '2 host(s)')],
            test_checks.not_judged(found))
        self.assertEqual({checks.WARNING}, {f.severity for f in found})

    def test_a_pool_host_without_a_driver_label(self):
        self.assertEqual(
            [('gpu-driver-drift', 'pool solver')],
            test_checks.not_judged(self.run_device(
                ['gpu-driver-drift'], [], {'xid': [(host_labels(
                    PT, CARDS[0], DCGM_FI_DRIVER_VERSION='550.90.07'),
                    0.0)]})))

    def test_prometheus_failed_or_not_configured(self):
        # not configured: the checks do not run (gpu check says so)
        self.assertEqual([], checks.run(self.cloud(),
                                        names=list(checkops_names())))
        cloud = self.cloud()
        cloud.unread['device_health'] = 'HTTP 500'
        found = checks.run(cloud, names=list(checkops_names()))
        self.assertEqual(6, len(test_checks.not_judged(found)))
        self.assertTrue(all('HTTP 500' in f.symptom for f in found))


def checkops_names():
    return ('gpu-unhealthy', 'gpu-application-xid', 'gpu-row-remap',
            'gpu-vgpu-licence', 'gpu-driver-drift', 'gpu-missing')


class TestQueries(test_checks.base.TestCase):

    def test_a_fixed_number_whatever_the_devices(self):
        queries = dh.check_queries(600)
        self.assertEqual(9, len(queries))
        # the XID gauge now: a GPU DCGM no longer serves is gone from it
        self.assertEqual('DCGM_FI_DEV_XID_ERRORS', queries['xid'])
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
