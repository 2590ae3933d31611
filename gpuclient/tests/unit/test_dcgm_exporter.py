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

"""tools/cloud/dcgm_exporter.py: the Prometheus text it serves, read back
by gpuclient's own parsing of the labels, and over HTTP."""

import importlib.util
import json
import os
import re
import threading
import urllib.error
import urllib.request

import fixtures

from gpuclient.rules import utilisation
from gpuclient.tests.unit import base

SCRIPT = os.path.join(base.ROOT, 'tools', 'cloud', 'dcgm_exporter.py')
spec = importlib.util.spec_from_file_location('dcgm_exporter', SCRIPT)
exporter = importlib.util.module_from_spec(spec)
spec.loader.exec_module(exporter)

DOCUMENT = {'hostname': 'gpu-vgpu-1', 'devices': [
    {'gpu': 0, 'pci_bus_id': '00000000:84:00.0', 'util': 3,
     'fb_used': 1024, 'fb_free': 80000},
    {'gpu': 1, 'pci_bus_id': '00000000:41:00.0', 'gpu_instance': 2,
     'profile': '1g.10gb', 'engine_active': 0.25, 'fb_used': 10},
    {'hostname': 'odd"host\\', 'gpu': 2, 'pci_bus_id': '00000000:42:00.0',
     'util': 55.5, 'labels': {'instance_id': 'abc'}},
]}
# a sample line of the text format: name{label="value",...} number
SAMPLE = re.compile(
    r'^([a-zA-Z_:][a-zA-Z0-9_:]*)\{((?:[a-zA-Z_][a-zA-Z0-9_]*="'
    r'(?:[^"\\\n]|\\[\\"n])*",?)*)\} (-?[0-9.e+]+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def samples(text):
    found = []
    for line in text.splitlines():
        if not line or line.startswith('#'):
            continue
        match = SAMPLE.match(line)
        assert match, line
        labels = {k: v.replace('\\"', '"').replace('\\\\', '\\')
                  for k, v in LABEL.findall(match.group(2))}
        found.append((match.group(1), labels, float(match.group(3))))
    return found


class TestRender(base.TestCase):
    def test_text_format(self):
        text = exporter.render(DOCUMENT)
        self.assertTrue(text.endswith('\n'))
        lines = text.splitlines()
        # HELP and TYPE once per metric, before its samples
        for metric in ('DCGM_FI_DEV_GPU_UTIL', 'DCGM_FI_DEV_FB_USED',
                       'DCGM_FI_DEV_FB_FREE',
                       'DCGM_FI_PROF_GR_ENGINE_ACTIVE'):
            helps = [i for i, line in enumerate(lines)
                     if line.startswith('# HELP %s ' % metric)]
            types = [i for i, line in enumerate(lines)
                     if line == '# TYPE %s gauge' % metric]
            first = min(i for i, line in enumerate(lines)
                        if line.startswith(metric + '{'))
            self.assertEqual(1, len(helps), metric)
            self.assertEqual([helps[0] + 1], types, metric)
            self.assertEqual(types[0] + 1, first, metric)
        found = samples(text)
        self.assertEqual([
            ('DCGM_FI_DEV_GPU_UTIL', '0', 3.0),
            ('DCGM_FI_DEV_GPU_UTIL', '2', 55.5),
            ('DCGM_FI_DEV_FB_FREE', '0', 80000.0),
            ('DCGM_FI_DEV_FB_USED', '0', 1024.0),
            ('DCGM_FI_DEV_FB_USED', '1', 10.0),
            ('DCGM_FI_PROF_GR_ENGINE_ACTIVE', '1', 0.25),
        ], [(m, labels['gpu'], v) for m, labels, v in found])
        mig = found[-1][1]
        self.assertEqual(('1g.10gb', '2'), (mig['GPU_I_PROFILE'],
                                            mig['GPU_I_ID']))
        self.assertEqual('odd"host\\', found[1][1]['Hostname'])
        self.assertEqual('abc', found[1][1]['instance_id'])
        self.assertNotIn('modelName', found[0][1])
        # gpuclient reads the labels back as it reads a real exporter's
        key = utilisation.series_key(found[0][1])
        self.assertEqual(('gpu-vgpu-1', '0000:84:00.0'),
                         (key['host'], key['pci']))
        self.assertEqual('2', utilisation.series_key(mig)['gpu_instance'])
        self.assertTrue(found[0][1]['UUID'].startswith('GPU-'))
        self.assertEqual(text, exporter.render(DOCUMENT))  # stable UUIDs
        # one card, one UUID, however its address is written
        written = [{'hostname': 'h', 'pci_bus_id': pci, 'xid': 0}
                   for pci in ('00000000:C2:00.0', '0000:c2:00.0',
                               '0000:c3:00.0')]
        uuids = [labels['UUID'] for _m, labels, _v in samples(
            exporter.render({'devices': written}))]
        self.assertEqual(uuids[0], uuids[1])
        self.assertNotEqual(uuids[0], uuids[2])

    def test_label_options(self):
        text = exporter.render(DOCUMENT, hostname_label='hostname',
                               model_label=True)
        labels = samples(text)[0][1]
        self.assertEqual('gpu-vgpu-1', labels['hostname'])
        self.assertNotIn('Hostname', labels)
        self.assertIn('modelName', labels)
        self.assertEqual('\n', exporter.render({'devices': []}))

    def test_licences_and_an_absent_gpu(self):
        text = exporter.render({'devices': [
            {'hostname': 'h', 'gpu': 0, 'pci_bus_id': '00000000:84:00.0',
             'vm_id': 'srv-1', 'instance_licence': 0, 'driver': '550.1'},
            {'hostname': 'vm-1', 'gpu': 0, 'licence': 1,
             'labels': {'instance_id': 'srv-2'}},
            {'hostname': 'h', 'gpu': 1, 'pci_bus_id': '00000000:85:00.0',
             'xid': 0, 'absent': True}]})
        found = samples(text)
        self.assertEqual(
            [('DCGM_FI_DEV_VGPU_LICENSE_STATUS', 'srv-2', None, 1.0),
             ('DCGM_FI_DEV_VGPU_INSTANCE_LICENSE_STATUS', None, 'srv-1',
              0.0)],
            [(name, labels.get('instance_id'),
              labels.get('DCGM_FI_DEV_VGPU_VM_ID'), value)
             for name, labels, value in found])
        # the absent GPU is not served at all
        self.assertNotIn('00000000:85:00.0', text)

    def test_served_and_reread_per_scrape(self):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'devices.json')
        with open(path, 'w') as f:
            json.dump(DOCUMENT, f)
        server = exporter.serve(path, port=0)
        self.addCleanup(server.server_close)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        self.addCleanup(server.shutdown)
        url = 'http://127.0.0.1:%d' % server.server_address[1]

        def scrape():
            with urllib.request.urlopen(url + '/metrics', timeout=5) as r:
                self.assertEqual(exporter.CONTENT_TYPE,
                                 r.headers['Content-Type'])
                return r.read().decode()

        self.assertEqual(exporter.render(DOCUMENT), scrape())
        with open(path, 'w') as f:
            json.dump({'devices': [{'util': 42}]}, f)
        self.assertEqual(42.0, samples(scrape())[0][2])
        error = self.assertRaises(urllib.error.HTTPError,
                                  urllib.request.urlopen, url + '/nope',
                                  timeout=5)
        self.assertEqual(404, error.code)


def xid_of(document):
    return [(labels['pci_bus_id'], value)
            for name, labels, value in samples(exporter.render(document))
            if name == 'DCGM_FI_DEV_XID_ERRORS']


class TestXidHeld(base.TestCase):
    """The XID gauge holds the last XID, as dcgm-exporter's does, until
    the device's reset changes."""

    def test_scrapes(self):
        """Per scrape: (the file's devices, the XIDs served)."""
        card = {'hostname': 'h', 'gpu': 0, 'pci_bus_id': '00000000:84:00.0'}
        other = dict(card, gpu=1, pci_bus_id='00000000:85:00.0')
        scrapes = [
            ([dict(card, xid=0)], [('00000000:84:00.0', 0.0)]),
            ([dict(card, xid=79)], [('00000000:84:00.0', 79.0)]),
            # the file says 0, or nothing: the gauge still holds 79
            ([dict(card, xid=0)], [('00000000:84:00.0', 79.0)]),
            ([dict(card)], [('00000000:84:00.0', 79.0)]),
            # another XID replaces it
            ([dict(card, xid=13)], [('00000000:84:00.0', 13.0)]),
            ([dict(card, xid=0), dict(other, xid=0)],
             [('00000000:84:00.0', 13.0), ('00000000:85:00.0', 0.0)]),
            # a reset (any new value) clears it
            ([dict(card, xid=0, reset=1)], [('00000000:84:00.0', 0.0)]),
            ([dict(card, xid=0, reset=1)], [('00000000:84:00.0', 0.0)]),
            ([dict(card, xid=48, reset=1)], [('00000000:84:00.0', 48.0)]),
            # another test's device at the same address is another device
            ([dict(card, xid=0, reset=1, owner='t2')],
             [('00000000:84:00.0', 0.0)]),
            # removed from the file: forgotten
            ([], []),
            ([dict(card, xid=0, reset=1)], [('00000000:84:00.0', 0.0)]),
        ]
        memory = exporter.XidMemory()
        for i, (devices, served) in enumerate(scrapes):
            document = {'devices': devices}
            self.assertEqual(served, xid_of(memory.apply(document)), i)
        # the document itself is not changed
        document = {'devices': [dict(card, xid=7)]}
        memory.apply(document)
        self.assertEqual(7, document['devices'][0]['xid'])

    def test_held_over_http(self):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'devices.json')
        card = {'hostname': 'h', 'gpu': 0, 'pci_bus_id': '00000000:84:00.0'}
        server = exporter.serve(path, port=0)
        self.addCleanup(server.server_close)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        self.addCleanup(server.shutdown)
        url = 'http://127.0.0.1:%d/metrics' % server.server_address[1]
        served = []
        for device in (dict(card, xid=79), dict(card, xid=0),
                       dict(card, xid=0, reset='after')):
            with open(path, 'w') as f:
                json.dump({'devices': [device]}, f)
            with urllib.request.urlopen(url, timeout=5) as r:
                served += [v for n, _l, v in samples(r.read().decode())
                           if n == 'DCGM_FI_DEV_XID_ERRORS']
        self.assertEqual([79.0, 79.0, 0.0], served)
