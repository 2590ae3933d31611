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

"""rules.host_facts.join and rules.host_facts.listing with plain data: the
host fact series as Prometheus answers them, joined to a cloud's compute
hosts (host names exact or short, either label spelling), the trust rules
(a guest's series left out, two collectors for one host not judged, a
host of another cloud not joined), and the rows of ``gpu host facts``
(an unreadable fact never a value)."""

import testtools

from gpuclient.rules.host_facts import join
from gpuclient.rules.host_facts import listing
from gpuclient.rules.host_facts import series
from gpuclient.rules.host_facts import shapes

GPU = '0000:41:00.0'
AUDIO = '0000:41:00.1'
PF = '0000:a1:00.0'
VFS = ('0000:a1:00.4', '0000:a1:00.5', '0000:a1:00.6')
NOW = 1_000_000.0


def passthrough(hostname, driver='vfio-pci', audio='vfio-pci'):
    """The facts of a passthrough host: one H100 and its audio function
    in IOMMU group 12, collected 120 s before NOW."""
    facts = shapes.HostFacts(hostname, collected_at=NOW - 120,
                             iommu_cmdline={'intel_iommu': 'on',
                                            'iommu': 'pt'},
                             iommu_active=True, mdevctl=False,
                             nvidia_smi=False)
    facts.versions['kernel'] = shapes.Version('6.8.0-45-generic', '',
                                              'procfs')
    facts.versions['qemu'] = shapes.Version('8.2.2', '1:8.2.2+ds', 'dpkg')
    for address, device, pci_class, bound in (
            (GPU, '2331', '030200', driver),
            (AUDIO, '22ba', '040300', audio)):
        function = facts.function(address)
        function.vendor_id, function.device_id = '10de', device
        function.pci_class, function.driver = pci_class, bound
        function.iommu_group, function.numa_node = '12', 0
    return facts


def vgpu_vf(hostname):
    """An L40S with 3 of 8 VFs enabled, two typed L40S-24Q."""
    facts = shapes.HostFacts(hostname, collected_at=NOW - 30,
                             iommu_active=True)
    pf = facts.function(PF)
    pf.vendor_id, pf.device_id, pf.pci_class = '10de', '26b9', '030200'
    pf.driver, pf.iommu_group, pf.numa_node = 'nvidia', '40', 1
    pf.sriov_numvfs, pf.sriov_totalvfs = 3, 8
    for index, address in enumerate(VFS):
        vf = facts.function(address)
        vf.vendor_id, vf.device_id, vf.pci_class = '10de', '26b9', '030200'
        vf.driver, vf.iommu_group, vf.numa_node = 'nvidia', str(41 + index), 1
        vf.physfn = PF
        vf.vgpu_type_id = 1161 if index < 2 else 0
        vf.vgpu_type = 'L40S-24Q' if index < 2 else None
    return facts


def answers(*hosts, instance='10.0.0.1:9100', **labels):
    """{family name: [(labels, value)]} of the series of HOSTS (HostFacts)
    as Prometheus answers them: with the target's instance label and
    LABELS added."""
    found = {name: [] for name in join.queries()}
    for facts in hosts:
        for item in series.samples(facts):
            extra = dict(labels)
            if instance:
                extra[series.INSTANCE_LABEL] = instance
            found[item.name].append((dict(item.labels, **extra),
                                     item.value))
    return found


def merged(*found):
    result = {name: [] for name in join.queries()}
    for one in found:
        for name, items in one.items():
            result[name] += items
    return result


CLOUD = {'gpu-1': {'gpu-1', 'gpu-1.example.org'},
         'gpu-2.example.org': {'gpu-2.example.org'},
         'gpu-3': {'gpu-3'}}


class TestQueries(testtools.TestCase):

    def test_one_query_per_family(self):
        self.assertEqual([f.name for f in series.FAMILIES],
                         list(join.queries()))
        self.assertEqual(21, len(join.queries()))
        for name, text in join.queries().items():
            self.assertEqual(name, text)


class TestJoin(testtools.TestCase):

    def test_exact_and_short_names(self):
        found = join.join(merged(
            answers(passthrough('gpu-1.example.org')),
            answers(passthrough('gpu-2'), instance='10.0.0.2:9100'),
            answers(passthrough('GPU-3.'), instance='10.0.0.3:9100')),
            CLOUD)
        self.assertEqual({}, found.problems)
        self.assertEqual(['gpu-1', 'gpu-2.example.org', 'gpu-3'],
                         sorted(found.facts))
        # the collector's own name stays in the facts
        self.assertEqual('gpu-1.example.org', found.facts['gpu-1'].hostname)
        facts = found.facts['gpu-2.example.org']
        self.assertEqual('vfio-pci', facts.functions[GPU].driver)
        self.assertEqual({'10.0.0.2:9100'}, facts.exporters)
        self.assertFalse(facts.conflicting)

    def test_either_spelling_of_the_host_name_label(self):
        found = answers(passthrough('gpu-1'))
        lower = {name: [({('hostname' if k == 'Hostname' else k): v
                          for k, v in labels.items()}, value)
                         for labels, value in items]
                 for name, items in found.items()}
        joined = join.join(lower, CLOUD)
        self.assertEqual(['gpu-1'], list(joined.facts))
        self.assertEqual('12', joined.facts['gpu-1'].functions[
            GPU].iommu_group)
        # the cloud's own label names first
        renamed = {name: [(dict(labels, node='gpu-3'), value)
                          for labels, value in items]
                   for name, items in found.items()}
        self.assertEqual(['gpu-3'], list(join.join(
            renamed, CLOUD, hostname_labels=('node', 'Hostname')).facts))

    def test_another_clouds_host_joins_nothing(self):
        found = join.join(merged(
            answers(passthrough('gpu-9')),
            answers(passthrough('gpu-1.region-b.example'),
                    instance='10.9.0.1:9100')), CLOUD)
        self.assertEqual(({}, {}), (found.facts, found.problems))

    def test_a_name_of_two_hosts_is_not_judged(self):
        hosts = {'gpu-1.a.example': {'gpu-1.a.example'},
                 'gpu-1.b.example': {'gpu-1.b.example'}}
        found = join.join(answers(passthrough('gpu-1')), hosts)
        self.assertEqual({}, found.facts)
        self.assertEqual(sorted(hosts), sorted(found.problems))
        self.assertIn('shortens to gpu-1', found.problems['gpu-1.a.example'])

    def test_a_guests_series_are_left_out(self):
        tenant = passthrough('gpu-1', driver='nvidia')
        for label in ('instance_id', 'vm_id', 'DCGM_FI_DEV_VGPU_VM_ID'):
            found = join.join(merged(
                answers(passthrough('gpu-3')),
                answers(tenant, instance='192.168.0.5:9100',
                        **{label: 'a-server-uuid'})), CLOUD)
            # the tenant's VM claims gpu-1: nothing of it is read
            self.assertEqual(['gpu-3'], list(found.facts), label)
            self.assertEqual({}, found.problems)
            self.assertEqual(len(series.samples(tenant)), found.guests)
        # the host's own series with a guest's beside them: the host's
        found = join.join(merged(
            answers(passthrough('gpu-1')),
            answers(tenant, instance='192.168.0.5:9100',
                    instance_id='a-server-uuid')), CLOUD)
        self.assertEqual('vfio-pci', found.facts['gpu-1'].functions[
            GPU].driver)
        self.assertFalse(found.facts['gpu-1'].conflicting)

    def test_two_collectors_for_one_host_are_not_judged(self):
        found = join.join(merged(
            answers(passthrough('gpu-1')),
            answers(passthrough('gpu-1', driver='nvidia'),
                    instance='10.0.0.7:9100')), CLOUD)
        facts = found.facts['gpu-1']
        self.assertTrue(facts.conflicting)
        # no fact of either: neither is picked
        self.assertEqual(({}, None, None),
                         (facts.functions, facts.collected_at,
                          facts.iommu_active))
        self.assertEqual({'10.0.0.1:9100 (gpu-1)', '10.0.0.7:9100 (gpu-1)'},
                         facts.exporters)
        self.assertIn('two collectors say they are host gpu-1 '
                      '(10.0.0.1:9100 as gpu-1, 10.0.0.7:9100 as gpu-1)',
                      found.problems['gpu-1'])
        self.assertIn('prometheus_selector', found.problems['gpu-1'])

    def test_two_host_names_of_one_host_are_two_collectors(self):
        # one node_exporter serving two textfiles: gpu-1 and its FQDN
        found = join.join(merged(
            answers(passthrough('gpu-1')),
            answers(passthrough('gpu-1.example.org', driver='nvidia'))),
            CLOUD)
        self.assertTrue(found.facts['gpu-1'].conflicting)
        self.assertEqual({}, found.facts['gpu-1'].functions)
        self.assertIn('gpu-1', found.problems)

    def test_series_without_instance_are_one_collectors(self):
        found = join.join(merged(
            answers(passthrough('gpu-1')),
            answers(passthrough('gpu-1'), instance=None)), CLOUD)
        self.assertFalse(found.facts['gpu-1'].conflicting)
        self.assertEqual({}, found.problems)

    def test_unknown_families_are_left_out(self):
        found = answers(passthrough('gpu-1'))
        found['node_load1'] = [({'Hostname': 'gpu-3'}, 1.0)]
        self.assertEqual(['gpu-1'], list(join.join(found, CLOUD).facts))


def one_row(facts, address=GPU, **kwargs):
    rows = [r for r in listing.host_rows('gpu-1', facts, NOW, **kwargs)
            if r['device'] == address]
    assert len(rows) == 1, rows
    return rows[0]


class TestRows(testtools.TestCase):

    def test_passthrough_host(self):
        rows = listing.host_rows('gpu-1', passthrough('gpu-1'), NOW)
        self.assertEqual(1, len(rows))
        row = rows[0]
        self.assertEqual(
            {'host': 'gpu-1', 'device': GPU, 'driver': 'vfio-pci',
             'iommu_group': '12', 'group_drivers': {AUDIO: 'vfio-pci'},
             'numa_node': 0, 'vfs': None, 'vgpu_types': [], 'mig': None,
             'mig_layout': None, 'age': 120, 'status': 'ok'},
            {k: row[k] for k in listing.FIELDS})
        self.assertEqual(
            {'iommu_active': True,
             'iommu_args': {'intel_iommu': 'on', 'iommu': 'pt'},
             'kernel': '6.8.0-45-generic', 'nvidia_driver': None,
             'libvirt': None, 'qemu': '8.2.2', 'nova_compute': None,
             'mdevctl': False, 'unreadable': []},
            {k: row[k] for k in listing.LONG_FIELDS})

    def test_audio_function_on_its_own_driver(self):
        row = one_row(passthrough('gpu-1', driver='nvidia',
                                  audio='snd_hda_intel'))
        self.assertEqual(('nvidia', {AUDIO: 'snd_hda_intel'}),
                         (row['driver'], row['group_drivers']))
        facts = passthrough('gpu-1', driver='', audio='')
        row = one_row(facts)
        self.assertEqual(('none', {AUDIO: 'none'}),
                         (row['driver'], row['group_drivers']))

    def test_vfs_and_their_types(self):
        rows = listing.host_rows('gpu-2', vgpu_vf('gpu-2'), NOW)
        self.assertEqual([PF], [r['device'] for r in rows])
        self.assertEqual(('3/8', ['L40S-24Q x2', 'none x1'], 30),
                         (rows[0]['vfs'], rows[0]['vgpu_types'],
                          rows[0]['age']))
        # VFs lost at a reboot
        facts = vgpu_vf('gpu-2')
        facts.functions[PF].sriov_numvfs = 0
        for address in VFS:
            del facts.functions[address]
        row = one_row(facts, PF)
        self.assertEqual(('0/8', []), (row['vfs'], row['vgpu_types']))

    def test_mdev_types_summed_over_vfs(self):
        facts = vgpu_vf('gpu-2')
        for index, address in enumerate(VFS):
            vf = facts.functions[address]
            vf.vgpu_type_id = vf.vgpu_type = None
            vf.mdev_types['nvidia-901'] = shapes.MdevType(
                'NVIDIA A100D-1-10C', 0 if index == 0 else 1,
                1 if index == 0 else 0)
        self.assertEqual(['nvidia-901 (NVIDIA A100D-1-10C): 1 made, 2 '
                          'available'], one_row(facts, PF)['vgpu_types'])
        facts.note('mdev_devices')
        for address in VFS:
            vf = facts.functions[address]
            vf.mdev_types['nvidia-901'] = shapes.MdevType(
                'NVIDIA A100D-1-10C', 1, None)
        self.assertEqual(['nvidia-901 (NVIDIA A100D-1-10C): ? made, 3 '
                          'available'], one_row(facts, PF)['vgpu_types'])

    def test_mig(self):
        facts = passthrough('gpu-1', driver='nvidia')
        gpu = facts.functions[GPU]
        gpu.mig_current = gpu.mig_pending = True
        gpu.gpu_instances = [shapes.GpuInstance(2, '3g.40gb', 9, 4, 4),
                             shapes.GpuInstance(1, '3g.40gb', 9, 0, 4)]
        row = one_row(facts)
        self.assertEqual(('enabled', ['3g.40gb', '3g.40gb']),
                         (row['mig'], row['mig_layout']))
        gpu.mig_current, gpu.gpu_instances = False, None
        row = one_row(facts)
        self.assertEqual(('disabled, enabled after a reset', None),
                         (row['mig'], row['mig_layout']))

    def test_unreadable_facts_are_never_values(self):
        facts = passthrough('gpu-1')
        # a half-read host: the driver and NUMA node of its GPU, its
        # group's members, the kernel command line, libvirt's version
        facts.note('driver', GPU)
        facts.note('numa_node', GPU)
        facts.note('iommu_group_members', GPU)
        facts.note('kernel_cmdline')
        facts.note('libvirt_version')
        facts.note('mig_mode', GPU)
        facts.note('sriov', GPU)
        facts.note('vgpu_type', VFS[0])
        row = one_row(facts)
        # a value came for the driver too: unreadable wins
        self.assertEqual('vfio-pci', facts.functions[GPU].driver)
        for field in ('driver', 'numa_node', 'group_drivers', 'iommu_args',
                      'libvirt', 'mig', 'vfs'):
            self.assertEqual('unreadable', row[field], field)
        self.assertEqual(
            ['driver (0000:41:00.0)', 'iommu_group_members (0000:41:00.0)',
             'kernel_cmdline', 'libvirt_version', 'mig_mode (0000:41:00.0)',
             'numa_node (0000:41:00.0)', 'sriov (0000:41:00.0)'],
            sorted(row['unreadable']))
        # a VF's type unreadable: counted as such, never as 'none'
        facts = vgpu_vf('gpu-2')
        facts.note('vgpu_type', VFS[2])
        self.assertEqual(['L40S-24Q x2', 'unreadable x1'],
                         one_row(facts, PF)['vgpu_types'])
        facts.note('vgpu_type_name', VFS[0])
        facts.functions[VFS[0]].vgpu_type = None
        self.assertEqual(['L40S-24Q x1', 'type 1161 (its name unreadable) '
                          'x1', 'unreadable x1'],
                         one_row(facts, PF)['vgpu_types'])

    def test_a_function_whose_ids_are_unreadable_gets_a_row(self):
        facts = passthrough('gpu-1')
        facts.note('pci_ids', '0000:c1:00.0')
        rows = listing.host_rows('gpu-1', facts, NOW)
        self.assertEqual([GPU, '0000:c1:00.0'], [r['device'] for r in rows])
        self.assertIn('may be an NVIDIA GPU', rows[1]['status'])
        self.assertEqual((None, ['pci_ids (0000:c1:00.0)']),
                         (rows[1]['driver'], rows[1]['unreadable']))
        # one in a GPU's group is the group's, not a row
        facts.function('0000:41:00.2').iommu_group = '12'
        facts.note('pci_ids', '0000:41:00.2')
        self.assertEqual([GPU, '0000:c1:00.0'], [
            r['device'] for r in listing.host_rows('gpu-1', facts, NOW)])

    def test_hosts_without_a_gpu_row(self):
        rows = listing.rows(
            ['gpu-1', 'gpu-2', 'gpu-3', 'gpu-4', 'gpu-5'],
            {'gpu-1': shapes.HostFacts('gpu-1', collected_at=NOW - 5),
             'gpu-2': shapes.HostFacts('gpu-2', exporters={'a', 'b'}),
             'gpu-4': shapes.HostFacts('gpu-4', unreadable={
                 shapes.Unreadable('pci_devices')})},
            {'gpu-5': 'the series host name gpu-5 is a name of each of x, '
                      'y'}, NOW)
        self.assertEqual(
            [('gpu-1', None, 5, 'no NVIDIA GPU in its facts'),
             ('gpu-2', None, None, 'not judged: two collectors say they '
              'are this host (a, b)'),
             ('gpu-3', None, None, 'no facts: is gpuclient-host-facts '
              'running there?'),
             ('gpu-4', None, None, 'its PCI functions unreadable'),
             ('gpu-5', None, None, 'not judged: the series host name gpu-5 '
              'is a name of each of x, y')],
            [(r['host'], r['device'], r['age'], r['status']) for r in rows])
        for row in rows:
            self.assertEqual(set(listing.FIELDS + listing.LONG_FIELDS),
                             set(row))

    def test_read_back_from_series(self):
        # what the collector writes, read back through join: the same rows
        found = join.join(answers(vgpu_vf('gpu-3'), passthrough('gpu-1')),
                          CLOUD)
        self.assertEqual(
            listing.host_rows('gpu-3', vgpu_vf('gpu-3'), NOW),
            listing.host_rows('gpu-3', found.facts['gpu-3'], NOW))
        self.assertEqual(
            listing.host_rows('gpu-1', passthrough('gpu-1'), NOW),
            listing.host_rows('gpu-1', found.facts['gpu-1'], NOW))

    def test_default_hosts(self):
        pools = {'pt': {'mode': 'passthrough', 'hosts': ['gpu-1', 'gpu-2']},
                 'metal': {'mode': 'baremetal', 'hosts': ['bm-1']}}
        self.assertEqual(['gpu-1', 'gpu-2', 'gpu-3', 'gpu-4'],
                         listing.default_hosts(pools, ['gpu-3', 'gpu-1'],
                                               ['gpu-4']))
