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

"""rules.device_health with plain data."""

import testtools

from gpuclient.rules import device_health as dh

HOST = {'Hostname': 'gpu-1', 'pci_bus_id': '00000000:41:00.0',
        'DCGM_FI_DRIVER_VERSION': '570.86.15', 'modelName': 'NVIDIA H100'}


def row(uuid, pci, servers=()):
    return {'uuid': uuid, 'name': 'gpu-1_%s' % pci, 'host': 'gpu-1',
            'pci_address': pci, 'server_ids': list(servers)}


class TestDeviceHealth(testtools.TestCase):

    def test_one_query_per_metric(self):
        queries = dh.queries(3600)
        # the licence metrics are gpu check's (check_queries)
        self.assertEqual(len(dh.METRICS) - 2, len(queries))
        self.assertEqual('last_over_time(DCGM_FI_DEV_XID_ERRORS[3600s])',
                         queries['xid'])
        self.assertEqual('DCGM_EXP_GPU_HEALTH_STATUS', queries['health'])

    def test_xid_actions(self):
        self.assertEqual('reboot the host', dh.xid_action(79))
        self.assertEqual(dh.SEE_CATALOGUE, dh.xid_action(999))
        self.assertIsNone(dh.xid_action(0))
        # as NVIDIA's catalogue buckets them (immediate action)
        self.assertEqual('reset the GPU (drain the server first)',
                         dh.xid_action(95))
        self.assertEqual('restart the application', dh.xid_action(94))
        self.assertEqual('contact NVIDIA support', dh.xid_action(61))
        self.assertEqual('none (informational)', dh.xid_action(63))
        # a workflow bucket is not one action: the catalogue says
        for xid in (45, 48, 74):
            self.assertEqual(dh.SEE_CATALOGUE, dh.xid_action(xid))

    def test_host_side_xid_is_unhealthy_and_unknown_is_not_guessed(self):
        answers = {
            'xid': [(HOST, 79.0)],
            'health': [(dict(HOST, health_watch='MEM'), 20.0),
                       (dict(HOST, health_watch='PCIE'), 0.0)],
            'row_remap_failure': [(HOST, 0.0)],
            'uncorrectable_remapped_rows': [(HOST, 0.0)],
            'util': [(HOST, 12.0)],
        }
        rows = [row('a', '0000:41:00.0', ['s1']), row('b', '0000:42:00.0')]
        got = dh.annotate(rows, dh.series(answers),
                          {'a': {'gpu-1'}, 'b': {'gpu-1'}})
        a, b = got
        self.assertEqual(
            ('NVIDIA H100', '570.86.15', 'fail', 79, 'reboot the host', 'ok',
             12.0, True),
            tuple(a[f] for f in dh.FIELDS))
        self.assertEqual((dh.UNKNOWN,) * 6 + (None, False),
                         tuple(b[f] for f in dh.FIELDS))
        self.assertEqual(['a'], [r['uuid'] for r in dh.unhealthy(got)])

    def test_guest_side_series_and_row_remap_failure(self):
        guest = {'instance_id': 's1', 'pci_bus_id': '00000000:05:00.0'}
        answers = {'xid': [(guest, 0.0)],
                   'row_remap_failure': [(guest, 1.0)]}
        got = dh.annotate([row('a', '0000:41:00.0', ['s1'])],
                          dh.series(answers), {'a': {'gpu-1'}})[0]
        self.assertEqual((0, dh.REMAP_FAILED, dh.UNKNOWN, True),
                         (got['last_xid'], got['row_remap'], got['health'],
                          got['unhealthy']))

    def test_healthy(self):
        answers = {'xid': [(HOST, 0.0)], 'health': [(HOST, 0.0)],
                   'row_remap_failure': [(HOST, 0.0)]}
        got = dh.annotate([row('a', '0000:41:00.0')], dh.series(answers),
                          {'a': {'gpu-1'}})
        self.assertEqual([], dh.unhealthy(got))
        self.assertEqual('pass', got[0]['health'])

    def test_xid_alone_is_unhealthy(self):
        answers = {'xid': [(HOST, 79.0)], 'health': [(HOST, 0.0)]}
        got = dh.annotate([row('a', '0000:41:00.0')], dh.series(answers),
                          {'a': {'gpu-1'}})
        self.assertEqual(['a'], [r['uuid'] for r in dh.unhealthy(got)])
