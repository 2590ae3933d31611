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

"""Host-name normalisation in every join of Prometheus series to hosts.

One table of host labels (case, a final dot, FQDN against a short name
either way, another domain) goes through every function that joins a
series to a compute host: ``host_names.series_hosts``,
``utilisation.join_answers`` (DCGM), the device index the utilisation
rows read (``index_series(...).card_of`` by ``host_keys``),
``device_health.annotate`` and ``host_series`` (gpu device list and
gpu check), and ``numa_metrics.host_nodes`` (node_exporter's
``instance``). Each must land the series on the same host, or on none.
"""

import testtools

from gpuclient.rules import host_names
from gpuclient.rules import numa_metrics
from gpuclient.rules import utilisation
from gpuclient.rules.devices import health as dh

# this cloud: gpu-pt-1 whose hypervisor hostname is its FQDN, gpu-vgpu-1
# known by its short name only
HYPERVISORS = [
    {'id': 'rp-pt', 'hypervisor_hostname': 'gpu-pt-1.gpu.test',
     'service': {'host': 'gpu-pt-1'}},
    {'id': 'rp-vgpu', 'hypervisor_hostname': 'gpu-vgpu-1',
     'service': {'host': 'gpu-vgpu-1'}},
]
HOSTS = host_names.names_by_host(HYPERVISORS)
NODENAME = {'gpu-pt-1': 'gpu-pt-1.gpu.test', 'gpu-vgpu-1': 'gpu-vgpu-1'}

# (the host label a series carries, the host it is, None: no host here)
CASES = [
    ('gpu-pt-1', 'gpu-pt-1'),
    ('GPU-PT-1', 'gpu-pt-1'),
    ('gpu-pt-1.', 'gpu-pt-1'),
    ('gpu-pt-1.gpu.test', 'gpu-pt-1'),
    ('GPU-PT-1.Gpu.Test.', 'gpu-pt-1'),
    (' gpu-pt-1.gpu.test ', 'gpu-pt-1'),
    # another domain: the machine of that name there, not ours
    ('gpu-pt-1.other.test', None),
    ('GPU-PT-1.OTHER.TEST.', None),
    # a host known by its short name: an FQDN joins by its first label
    ('gpu-vgpu-1', 'gpu-vgpu-1'),
    ('Gpu-Vgpu-1.', 'gpu-vgpu-1'),
    ('gpu-vgpu-1.dc1.example', 'gpu-vgpu-1'),
    ('GPU-VGPU-1.DC1.EXAMPLE.', 'gpu-vgpu-1'),
    # no host of this cloud
    ('gpu-pt-10', None),
    ('gpu-pt', None),
    ('pt-1.gpu.test', None),
]
PCI = '00000000:41:00.0'
ADDRESS = '0000:41:00.0'


def dcgm(label, xid=79.0, util=40.0):
    """DCGM's answers of one GPU whose Hostname is LABEL."""
    labels = {'Hostname': label, 'pci_bus_id': PCI, 'UUID': 'GPU-1',
              'modelName': 'NVIDIA H100'}
    return {'xid': [(dict(labels), xid)], 'xid_since': [],
            'xid_since_before': [], 'util': [(dict(labels), util)]}


def node_exporter(label):
    """node_exporter's NUMA answers of a host scraped as LABEL:9100."""
    labels = {'instance': '%s:9100' % label, 'job': 'node', 'node': '0'}
    return {'numa_memory': [(dict(labels), 64 * numa_metrics.MIB * 1024)],
            'numa_huge_pages': [(dict(labels), 0)]}


def keys(host):
    """What device_ops gives annotate: its Nova host and hypervisor
    hostname, as host_keys."""
    return utilisation.host_keys(host, NODENAME[host])


class TestEveryJoin(testtools.TestCase):

    def test_series_hosts(self):
        for label, host in CASES:
            joined, _problems = host_names.series_hosts([label], HOSTS)
            self.assertEqual(host, joined.get(label), label)

    def test_join_answers(self):
        for label, host in CASES:
            found, _problems = utilisation.join_answers(dcgm(label), HOSTS)
            hosts = {labels['Hostname'] for labels, _v in found['xid']}
            self.assertEqual({host} if host else set(), hosts, label)

    def test_utilisation_device_index(self):
        """What gpu server utilisation and gpu usage read: the card on the
        device's host keys."""
        for label, host in CASES:
            found, _problems = utilisation.join_answers(
                {'util_mean': dcgm(label)['util']}, HOSTS)
            index = utilisation.index_series(
                utilisation.device_series(found))
            for each in NODENAME:
                card, series = index.card_of(keys(each), ADDRESS, False)
                self.assertEqual(each == host, bool(series),
                                 (label, each))

    def test_device_health_annotate_and_host_series(self):
        """gpu device list's health fields and gpu check's host series."""
        for label, host in CASES:
            found, _problems = utilisation.join_answers(dcgm(label), HOSTS)
            series = dh.series(found)
            for each in NODENAME:
                row = {'uuid': 'dev-' + each, 'name': 'd', 'host': each,
                       'pci_address': ADDRESS, 'server_ids': []}
                got = dh.annotate([row], series, {row['uuid']: keys(each)},
                                  1700000000, 3600)[0]
                self.assertEqual(79 if each == host else dh.UNKNOWN,
                                 got['last_xid'], (label, each))
            by_host = dh.host_series(series, {h: keys(h) for h in NODENAME})
            self.assertEqual([host] if host else [], sorted(by_host), label)

    def test_numa_host_nodes(self):
        for label, host in CASES:
            nodes = numa_metrics.host_nodes(node_exporter(label.strip()),
                                            HOSTS)
            self.assertEqual([host] if host else [], sorted(nodes), label)

    def test_host_keys_are_the_joins_normalisation(self):
        """The keys a device is matched by are the names as the join
        compares them: case and a final dot aside."""
        self.assertEqual({'gpu-pt-1', 'gpu-pt-1.gpu.test'},
                         utilisation.host_keys('GPU-PT-1.', 'gpu-pt-1',
                                               'Gpu-Pt-1.Gpu.Test.', None))
