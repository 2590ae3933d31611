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

"""Pure: names an operator copies (service host, hypervisor hostname,
resource provider) -> the compute host, on plain dicts shaped like the
compute API (2.53) and Placement answers."""

from osc_lib import exceptions

from gpuclient.rules import host_names
from gpuclient.tests.unit import base

PT_ROOT = '11111111-1111-1111-1111-111111111111'
VGPU_ROOT = '22222222-2222-2222-2222-222222222222'
NODE_A = '33333333-3333-3333-3333-333333333333'
NODE_B = '44444444-4444-4444-4444-444444444444'
PGPU = '55555555-5555-5555-5555-555555555555'


def hv(uuid, hostname, host):
    return {'id': uuid, 'hypervisor_hostname': hostname,
            'service': {'host': host, 'id': 'svc-' + host}}


def rp(uuid, name, root=None):
    return {'uuid': uuid, 'name': name, 'root_provider_uuid': root or uuid,
            'parent_provider_uuid': root}


HOSTS = ['gpu-pt-1', 'gpu-vgpu-1', 'bm-compute-1']
HYPERVISORS = [
    hv(PT_ROOT, 'gpu-pt-1.gpu.test', 'gpu-pt-1'),
    hv(VGPU_ROOT, 'gpu-vgpu-1', 'gpu-vgpu-1'),
    # Ironic: one compute host, one hypervisor per node, named by uuid
    hv(NODE_A, NODE_A, 'bm-compute-1'),
    hv(NODE_B, NODE_B, 'bm-compute-1'),
]
PROVIDERS = [
    rp(PT_ROOT, 'gpu-pt-1.gpu.test'),
    rp('66666666-6666-6666-6666-666666666666',
       'gpu-pt-1.gpu.test_0000:41:00.0', PT_ROOT),
    rp(VGPU_ROOT, 'gpu-vgpu-1'),
    rp(PGPU, 'gpu-vgpu-1_pci_0000_84_00_0', VGPU_ROOT),
    rp(NODE_A, NODE_A),
    rp(NODE_B, NODE_B),
    # a sharing provider: no hypervisor, no host
    rp('77777777-7777-7777-7777-777777777777', 'shared-storage'),
]


class TestResolve(base.TestCase):
    def resolve(self, names, hosts=HOSTS, hypervisors=HYPERVISORS,
                providers=PROVIDERS):
        return host_names.resolve(names, hosts, hypervisors, providers)

    def test_each_kind_of_name(self):
        cases = [
            # name, compute host, how it matched
            ('gpu-pt-1', 'gpu-pt-1', host_names.SERVICE_HOST),
            ('gpu-pt-1.gpu.test', 'gpu-pt-1',
             host_names.HYPERVISOR_HOSTNAME),
            (PT_ROOT, 'gpu-pt-1', host_names.HYPERVISOR_ID),
            ('gpu-pt-1.gpu.test_0000:41:00.0', 'gpu-pt-1',
             host_names.PROVIDER_NAME),
            (PGPU, 'gpu-vgpu-1', host_names.PROVIDER_UUID),
            ('gpu-vgpu-1_pci_0000_84_00_0', 'gpu-vgpu-1',
             host_names.PROVIDER_NAME),
            (NODE_A, 'bm-compute-1', host_names.HYPERVISOR_HOSTNAME),
            (NODE_B, 'bm-compute-1', host_names.HYPERVISOR_HOSTNAME),
        ]
        for name, host, via in cases:
            result = self.resolve([name])
            self.assertEqual([host_names.Resolved(name, host, via)],
                             result.resolved, name)
            self.assertEqual([host], result.hosts(), name)
            result.check()

    def test_service_host_gives_no_note_others_do(self):
        result = self.resolve(['gpu-vgpu-1', 'gpu-pt-1.gpu.test'])
        notes = result.notes()
        self.assertEqual(1, len(notes))
        self.assertIn('gpu-pt-1.gpu.test', notes[0])
        self.assertIn('hypervisor hostname', notes[0])
        self.assertIn('compute host gpu-pt-1', notes[0])

    def test_names_of_one_host_count_once_in_order(self):
        result = self.resolve(['gpu-vgpu-1', 'gpu-pt-1.gpu.test',
                               'gpu-pt-1', NODE_A, NODE_B])
        self.assertEqual(['gpu-vgpu-1', 'gpu-pt-1', 'bm-compute-1'],
                         result.hosts())

    def test_without_providers_only_provider_names_are_unknown(self):
        result = host_names.resolve(
            ['gpu-pt-1.gpu.test', 'gpu-pt-1.gpu.test_0000:41:00.0'],
            HOSTS, HYPERVISORS)
        self.assertEqual(['gpu-pt-1'], result.hosts())
        self.assertEqual(['gpu-pt-1.gpu.test_0000:41:00.0'], result.unknown)

    def test_unknown_lists_the_choices(self):
        result = self.resolve(['nope', 'shared-storage', 'gpu-pt'])
        self.assertEqual(['nope', 'shared-storage', 'gpu-pt'],
                         result.unknown)
        self.assertEqual([], result.hosts())
        self.assertEqual(['nope', 'gpu-pt'],
                         result.hosts(keep_unknown=True)[::2])
        exc = self.assertRaises(exceptions.CommandError, result.check)
        message = str(exc)
        self.assertIn('nope, shared-storage, gpu-pt', message)
        # every compute host is a choice; the hypervisor hostname where it
        # differs, the number of nodes for Ironic
        self.assertIn('gpu-pt-1 (hypervisor gpu-pt-1.gpu.test)', message)
        self.assertTrue(message.endswith(', gpu-vgpu-1.'), message)
        self.assertIn('bm-compute-1 (2 hypervisors)', message)
        self.assertNotIn(NODE_A, message)

    def test_name_of_several_hosts_is_ambiguous(self):
        # a hypervisor hostname that is also another host's provider name
        hypervisors = HYPERVISORS + [hv('88888888-8888-8888-8888-888888888888',
                                        'gpu-twin', 'gpu-vgpu-1')]
        providers = PROVIDERS + [rp('99999999-9999-9999-9999-999999999999',
                                    'gpu-twin', PT_ROOT)]
        result = self.resolve(['gpu-twin', 'gpu-pt-1'],
                              hypervisors=hypervisors, providers=providers)
        self.assertEqual(['gpu-pt-1'], result.hosts())
        self.assertEqual({'gpu-twin': {
            'gpu-vgpu-1': host_names.HYPERVISOR_HOSTNAME,
            'gpu-pt-1': host_names.PROVIDER_NAME}}, result.ambiguous)
        exc = self.assertRaises(exceptions.CommandError, result.check)
        self.assertIn('Ambiguous', str(exc))
        self.assertIn('the hypervisor hostname of gpu-vgpu-1', str(exc))
        self.assertIn('the resource provider name of gpu-pt-1', str(exc))

    def test_service_host_wins_over_another_hosts_hypervisor(self):
        # host a's hypervisor is called b, and b is a host of its own:
        # "b" is host b, as Nova's own API reads it
        hypervisors = [hv(PT_ROOT, 'b', 'a'), hv(VGPU_ROOT, 'b.example',
                                                  'b')]
        result = host_names.resolve(['b'], ['a', 'b'], hypervisors)
        self.assertEqual([host_names.Resolved('b', 'b',
                                              host_names.SERVICE_HOST)],
                         result.resolved)
        result.check()
        self.assertEqual([], result.notes())

    def test_hypervisor_without_service_is_ignored(self):
        hypervisors = [{'id': PT_ROOT, 'hypervisor_hostname': 'orphan',
                        'service': None}]
        result = host_names.resolve(['orphan'], ['gpu-pt-1'], hypervisors)
        self.assertEqual(['orphan'], result.unknown)

    def test_members_not_in_services_are_hosts(self):
        # a pool member whose compute service was deleted
        result = host_names.resolve(['gone-1'], HOSTS + ['gone-1'],
                                    HYPERVISORS)
        self.assertEqual(['gone-1'], result.hosts())


class TestSeriesHosts(base.TestCase):
    """issue 51 defect 4: the host a monitoring series names, exact names
    before short ones; a short one only where it is not ambiguous."""

    # this cloud: gpu-pt-1 (hypervisor gpu-pt-1.region-a.example),
    # gpu-vgpu-1 (no FQDN known), and two hosts whose hypervisor
    # hostnames share the first label gpu-x
    HOSTS = {
        'gpu-pt-1': {'gpu-pt-1.region-a.example'},
        'gpu-vgpu-1': {'gpu-vgpu-1'},
        'x-1': {'gpu-x.rack1.example'},
        'x-2': {'gpu-x.rack2.example'},
    }

    def test_table(self):
        # (labels Prometheus holds, {label: host it joins}, hosts with a
        # problem)
        cases = [
            # exact: the service host, the hypervisor hostname, any case,
            # a final dot
            (['gpu-pt-1'], {'gpu-pt-1': 'gpu-pt-1'}, []),
            (['GPU-PT-1.Region-A.example.'],
             {'GPU-PT-1.Region-A.example.': 'gpu-pt-1'}, []),
            # region B's host of the same name: another domain, not ours,
            # and no word about it (it is another cloud's)
            (['gpu-pt-1.region-b.example'], {}, []),
            # ours and region B's side by side: ours only
            (['gpu-pt-1.region-a.example', 'gpu-pt-1.region-b.example'],
             {'gpu-pt-1.region-a.example': 'gpu-pt-1'}, []),
            # a host known without a domain: its FQDN joins by its first
            # label ...
            (['gpu-vgpu-1.dc1.example'],
             {'gpu-vgpu-1.dc1.example': 'gpu-vgpu-1'}, []),
            # ... unless its own name is there too (then the FQDN is
            # another machine's) ...
            (['gpu-vgpu-1', 'gpu-vgpu-1.dc2.example'],
             {'gpu-vgpu-1': 'gpu-vgpu-1'}, []),
            # ... or two FQDNs shorten to it: which one is it?
            (['gpu-vgpu-1.dc1.example', 'gpu-vgpu-1.dc2.example'], {},
             ['gpu-vgpu-1']),
            # a first label two hosts share joins neither
            (['gpu-x'], {}, ['x-1', 'x-2']),
            (['gpu-x.rack1.example'], {'gpu-x.rack1.example': 'x-1'}, []),
            # names of no host here, odd text: nothing, no error
            (['gpu-9', '\u00b2', '', '.', 'gpu-pt-1:9400'], {}, []),
        ]
        for labels, joined, problems in cases:
            found, why = host_names.series_hosts(labels, self.HOSTS)
            self.assertEqual(joined, found, labels)
            self.assertEqual(problems, sorted(why), labels)
            for text in why.values():
                self.assertIn('gpu-', text)

    def test_service_host_before_another_hosts_hypervisor(self):
        # a's hypervisor hostname is b's service host: b
        hosts = {'a': {'b'}, 'b': {'b.example'}}
        self.assertEqual({'b': 'b'},
                         host_names.series_hosts(['b'], hosts)[0])

    def test_names_by_host(self):
        self.assertEqual(
            {'gpu-pt-1': {'gpu-pt-1', 'gpu-pt-1.gpu.test'},
             'plain-1': {'plain-1'}},
            host_names.names_by_host(
                [hv('u1', 'gpu-pt-1.gpu.test', 'gpu-pt-1'),
                 {'id': 'x', 'hypervisor_hostname': 'orphan',
                  'service': {}}], ['plain-1']))
