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

"""gpu check's host findings on the test cloud (issue 54).

The hosts' trees are the hardware here (tools/cloud/host_trees.py): a
fault seeded in a host's tree is what a real host would show after the
event the fault stands for (a GPU left on ``nvidia`` in a passthrough
pool, the card's audio function on ``snd_hda_intel`` in its IOMMU group,
the IOMMU off, ``sriov_numvfs`` back to 0 after a reboot while Placement
still offers the VFs, a MIG mode change pending a reset, ``mdevctl``
missing, another NVIDIA driver on one host of a pool). The collector reads
the tree, node_exporter serves it and Prometheus scrapes it, as on a real
cloud; ``gpu check`` must name each fault with its fix, and no longer
once the tree is healthy again. The hosts are leased (lane B's and the
VF and re-cut hosts), each in a pool of its kind made for this test.
"""

import json

import requests

from gpuclient.tests.functional import base
from gpuclient.tests.functional import test_host_facts

PT_PCI_ID = '10de:2331'
# the card each finding names (tools/cloud/host_trees.py GPUS)
PT_CARD = test_host_facts.host_trees.GPUS['passthrough'][0]
VF_CARD = test_host_facts.host_trees.GPUS['vgpu-vf'][0]
RECUT_CARD = '0000:61:00.0'
# the class of the re-cut host's 1g.10gb VFs (tools/cloud/hosts.py)
RECUT_CLASS = 'CUSTOM_RECUT_1G10GB'


class TestHostFindings(test_host_facts.HostFactsTestCase):

    # lane B's hosts: two passthrough and two vgpu hosts, this test's own
    lane = 'b'

    def create_pool(self, *args):
        name = self.unique_name('findings')
        self.addCleanup(self.delete_pool, name)
        self.openstack('gpu', 'pool', 'create', name, *args, parse=False)
        return name

    def findings(self, hosts):
        """{(check, host): rows} of gpu check's findings (errors and
        warnings) that name one of HOSTS (in their object, or in their
        symptom where the object is a pool: gpu-driver-drift)."""
        rc, out, err = self.openstack_raw('gpu', 'check', '-f', 'json')
        self.assertIn(rc, (0, 1), err)
        found = {}
        for row in json.loads(out):
            if row['Severity'] not in ('error', 'warning'):
                continue
            for host in hosts:
                if host in row['Object'] + ' ' + row['Symptom']:
                    found.setdefault((row['Check'], host), []).append(row)
        return found

    def alerts(self):
        """{(alert name, Hostname)} of the shipped rules' alerts the
        cloud's Prometheus holds now (pending or firing)."""
        answer = requests.get(test_host_facts.prometheus_url()
                              + '/api/v1/alerts', timeout=10)
        answer.raise_for_status()
        return {(a['labels'].get('alertname'), a['labels'].get('Hostname'))
                for a in answer.json()['data']['alerts']}

    def test_each_fault_is_found_with_its_fix_and_gone_once_healed(self):
        pt, pt2 = self.pt_host, self.pt_host2
        vgpu, vgpu2 = self.vgpu_host, self.vgpu_host2
        vf_host = self.host_lease('vgpu-vf')
        mig_host = self.host_lease('mig-recut')
        self.create_pool('--mode', 'passthrough', '--alias', 'h100',
                         '--pci-id', PT_PCI_ID, '--host', pt, '--host', pt2)
        self.create_pool('--mode', 'vgpu', '--vgpu-type', 'nvidia-35',
                         '--host', vgpu, '--host', vgpu2)
        self.create_pool('--mode', 'vgpu-vf', '--vgpu-type', base.VF_TYPE,
                         '--alias', base.VF_ALIAS, '--pci-id',
                         base.VF_PCI_ID, '--host', vf_host)
        self.create_pool('--mode', 'mig', '--mig-profile', '1g.10gb',
                         '--resource-class', RECUT_CLASS, '--host', mig_host)
        hosts = (pt, pt2, vgpu, vgpu2, vf_host, mig_host)
        # what each fault must make gpu check say: (check, host, a word of
        # its fix)
        seeded = {
            pt: ('gpu-on-nvidia', 'audio-on-snd-hda-intel'),
            pt2: ('iommu-off',),
            vgpu: ('mdevctl-missing',),
            vgpu2: ('driver-drift',),
            vf_host: ('vfs-lost',),
            mig_host: ('mig-pending',),
        }
        expected = {
            ('host-gpu-driver', pt): 'vfio-pci',
            ('host-iommu-group', pt): 'vfio-pci',
            ('host-iommu-off', pt2): 'iommu',
            ('host-mdevctl-missing', vgpu): 'mdevctl',
            ('gpu-driver-drift', vgpu2): 'driver',
            ('host-state-lost', vf_host): 'gpu host render',
            ('host-mig-pending', mig_host): '-r (or reboot)',
        }
        before = self.findings(hosts)
        self.assertEqual([], sorted(set(expected) & set(before)))
        for host, faults in seeded.items():
            self.rewrite(host, *faults)
        broken = self.findings(hosts)
        for (check, host), word in sorted(expected.items()):
            rows = broken.get((check, host))
            self.assertTrue(rows, '%s not found on %s: %s' % (
                check, host, sorted(broken)))
            self.assertIn(word, ' '.join(r['Fix'] for r in rows).lower(),
                          rows)
        self.assertIn(PT_CARD, ' '.join(
            r['Object'] for r in broken[('host-gpu-driver', pt)]))
        self.assertIn(VF_CARD, ' '.join(
            r['Object'] + r['Symptom']
            for r in broken[('host-state-lost', vf_host)]))
        self.assertIn(RECUT_CARD, ' '.join(
            r['Object'] + r['Symptom']
            for r in broken[('host-mig-pending', mig_host)]))
        # the shipped rules see the same faults in Prometheus (pending:
        # their "for" durations are longer than a test)
        raised = {('GPUClientHostVFsLost', vf_host),
                  ('GPUClientHostMIGModePending', mig_host)}
        seen = self.wait_for('the host alerts', self.alerts,
                             lambda found: raised <= found, timeout=60)
        self.assertEqual(raised, raised & seen)
        # healthy trees again (as the cleanup would), collected and scraped
        for host in seeded:
            self.rewrite(host)
        healed = self.findings(hosts)
        self.assertEqual([], sorted(set(expected) & set(healed)))
