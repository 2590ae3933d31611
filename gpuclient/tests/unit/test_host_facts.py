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

"""rules.host_facts on plain data: what a host's files and nvidia-smi
say, and the series written and read back (the collector on fake trees is
test_host_facts_collector)."""

import testtools

from gpuclient import formatters
from gpuclient.rules.host_facts import contents
from gpuclient.rules.host_facts import series
from gpuclient.rules.host_facts import shapes

LGI = '''\
+-------------------------------------------------------+
| GPU instances:                                        |
| GPU   Name             Profile  Instance   Placement  |
|                          ID       ID       Start:Size |
|=======================================================|
|   0  MIG 3g.40gb          9        2          4:4     |
+-------------------------------------------------------+
|   0  MIG 1g.10gb         19        9          2:1     |
+-------------------------------------------------------+
|   1  MIG 7g.80gb          0        0          0:8     |
+-------------------------------------------------------+
'''
CREATABLE = '''\
ID    : vGPU Name
1155  : NVIDIA L40S-1Q
1161  : NVIDIA L40S-24Q
'''
DPKG = '''\
Package: libvirt0
Status: install ok installed
Architecture: amd64
Version: 10.0.0-2ubuntu8
Description: library
 Version: 1.0 (a continuation line, not a field)

Package: qemu-kvm
Status: deinstall ok config-files
Version: 1:6.2+dfsg-2ubuntu6

Package: libvirt0
Status: install ok installed
Architecture: i386
Version: 9.0.0-1

Package: nova-compute
Status: install ok installed
Version: 3:29.0.0-0ubuntu1'''


class TestSysfsContents(testtools.TestCase):

    def test_ids_and_class(self):
        self.assertEqual('10de', contents.hex_id('0x10DE\n'))
        self.assertEqual('030200', contents.pci_class('0x030200\n'))
        for bad in ('', '10de', '0x10d', '0x10de\n0x10de', 'garbage'):
            self.assertRaises(ValueError, contents.hex_id, bad)
        for bad in ('0x0302', '030200', '0x03020g'):
            self.assertRaises(ValueError, contents.pci_class, bad)

    def test_integers(self):
        self.assertEqual(-1, contents.integer('-1\n', -1))
        self.assertEqual(8, contents.integer(' 8 \n', 0))
        for bad in ('', 'lots', '1.5', '-2', '8\n9', '9' * 20):
            self.assertRaises(ValueError, contents.integer, bad, -1)

    def test_addresses(self):
        self.assertEqual('0000:c1:00.0', contents.address('0000:C1:00.0'))
        self.assertRaises(ValueError, contents.address, 'virtfn0')
        self.assertRaises(ValueError, contents.address, '0000:c1:00.8')
        self.assertEqual('0000:3b:00.0',
                         contents.bus_id_address('00000000:3B:00.0'))
        self.assertEqual('0000:3b:00.0',
                         contents.bus_id_address('0000:3b:00.0'))
        self.assertRaises(ValueError, contents.bus_id_address, '3b:00')

    def test_vgpu_type_names(self):
        self.assertEqual({1155: 'L40S-1Q', 1161: 'L40S-24Q'},
                         contents.vgpu_type_names(CREATABLE))
        self.assertEqual({}, contents.vgpu_type_names('ID : vGPU Name\n'))
        self.assertRaises(ValueError, contents.vgpu_type_names,
                          'L40S-24Q\n')


class TestKernelAndVersions(testtools.TestCase):

    def test_iommu_options(self):
        self.assertEqual(
            {'intel_iommu': 'on', 'iommu': 'pt'}, contents.iommu_options(
                'BOOT_IMAGE=/vmlinuz ro intel_iommu=off iommu=pt '
                'intel_iommu=on quiet\n'))
        self.assertEqual({'amd_iommu': 'force_isolation'},
                         contents.iommu_options('amd_iommu=force_isolation'))
        self.assertEqual({}, contents.iommu_options('ro quiet iommu'))
        self.assertRaises(ValueError, contents.iommu_options, 'ro\0quiet')

    def test_kernel_and_driver(self):
        self.assertEqual('6.8.0-45-generic',
                         contents.kernel_release('6.8.0-45-generic\n'))
        self.assertRaises(ValueError, contents.kernel_release, 'six')
        self.assertEqual('550.90.05',
                         contents.nvidia_module_version('550.90.05\n'))
        self.assertRaises(ValueError, contents.nvidia_module_version, '550')
        for line in ('NVRM version: NVIDIA UNIX x86_64 Kernel Module  '
                     '550.90.05  Tue Jun  4 22:13:10 UTC 2024\n',
                     'NVRM version: NVIDIA UNIX Open Kernel Module for '
                     'x86_64  550.90.05  Release Build  (dvs-builder@U16)'):
            self.assertEqual('550.90.05',
                             contents.nvidia_proc_version(line))
        self.assertRaises(ValueError, contents.nvidia_proc_version,
                          'GCC version: 13.2.0')

    def test_dpkg(self):
        self.assertEqual(
            {'libvirt0': '10.0.0-2ubuntu8',
             'nova-compute': '3:29.0.0-0ubuntu1'},
            contents.dpkg_installed(DPKG, ('libvirt0', 'qemu-kvm',
                                           'nova-compute', 'absent')))
        self.assertEqual({}, contents.dpkg_installed('', ('libvirt0',)))

    def test_upstream_versions(self):
        for version, release in (('1:8.2.2+ds-0ubuntu1', '8.2.2'),
                                 ('3:29.0.0-0ubuntu1', '29.0.0'),
                                 ('10.0.0-2ubuntu8', '10.0.0'),
                                 ('2:29.0.0~b1-0ubuntu1', '29.0.0'),
                                 ('9.0.0', '9.0.0')):
            self.assertEqual(release, contents.upstream_version(version))
        self.assertRaises(ValueError, contents.upstream_version, 'git-1')

    def test_file_names_and_cache(self):
        self.assertEqual('10.0.0', contents.libvirt_library_version(
            'libvirt.so.0.10000.0'))
        self.assertEqual('9.7.1', contents.libvirt_library_version(
            'libvirt.so.0.9007.1'))
        self.assertRaises(ValueError, contents.libvirt_library_version,
                          'libvirt.so.0')
        self.assertEqual('29.0.0', contents.python_dist_version(
            'nova-29.0.0.dist-info', 'nova'))
        self.assertEqual('27.1.0', contents.python_dist_version(
            'nova-27.1.0-py3.9.egg-info', 'nova'))
        self.assertRaises(ValueError, contents.python_dist_version,
                          'novaclient-18.0.0.dist-info', 'nova')
        self.assertEqual(('10.0.0', '8.2.2'), contents.libvirt_cache_versions(
            '<qemuCaps>\n  <selfvers>10000000</selfvers>\n'
            '  <version>8002002</version>\n</qemuCaps>\n'))
        self.assertEqual((None, None), contents.libvirt_cache_versions(
            '<qemuCaps></qemuCaps>'))
        self.assertRaises(ValueError, contents.libvirt_cache_versions, '')


class TestNvidiaSmi(testtools.TestCase):

    def test_mig_modes(self):
        self.assertEqual(
            {0: ('0000:41:00.0', True, False),
             1: ('0000:c1:00.0', None, None)},
            contents.mig_modes('0, 00000000:41:00.0, Enabled, Disabled\n'
                               '1, 00000000:C1:00.0, [N/A], [N/A]\n'))
        for bad in ('', 'Failed to initialize NVML: Unknown Error\n',
                    '0, 00000000:41:00.0, Enabled\n',
                    '0, 00000000:41:00.0, Maybe, Enabled\n',
                    'x, 00000000:41:00.0, Enabled, Enabled\n'):
            self.assertRaises(ValueError, contents.mig_modes, bad)

    def test_gpu_instances(self):
        found = contents.gpu_instances(LGI)
        self.assertEqual(
            [shapes.GpuInstance(2, '3g.40gb', 9, 4, 4),
             shapes.GpuInstance(9, '1g.10gb', 19, 2, 1)], found[0])
        self.assertEqual([shapes.GpuInstance(0, '7g.80gb', 0, 0, 8)],
                         found[1])
        for none in ('No GPU instances found: Not Found\n',
                     'No MIG-enabled devices found.\n'):
            self.assertEqual({}, contents.gpu_instances(none))
        for bad in ('', 'Insufficient Permissions\n',
                    LGI.replace('MIG 1g.10gb', 'MIG'),
                    LGI.split('|===')[0]):
            self.assertRaises(ValueError, contents.gpu_instances, bad)


def sample_facts():
    """A host with one of everything."""
    facts = shapes.HostFacts('gpu-1', collected_at=1700000000.5,
                             iommu_cmdline={'intel_iommu': 'on',
                                            'iommu': 'pt'},
                             iommu_active=True, mdevctl=True,
                             nvidia_smi=True)
    facts.versions = {
        'kernel': shapes.Version('6.8.0-45-generic', '', 'procfs'),
        'qemu': shapes.Version('8.2.2', '1:8.2.2+ds-0ubuntu1', 'dpkg')}
    card = facts.function('0000:41:00.0')
    card.vendor_id, card.device_id, card.pci_class = '10de', '20b5', '030200'
    card.driver, card.iommu_group, card.numa_node = 'nvidia', '12', 1
    card.sriov_numvfs, card.sriov_totalvfs = 2, 16
    card.mig_current, card.mig_pending = True, False
    card.gpu_instances = [shapes.GpuInstance(2, '3g.40gb', 9, 4, 4)]
    vf = facts.function('0000:41:00.4')
    vf.vendor_id, vf.device_id, vf.pci_class = '10de', '20b5', '030200'
    vf.driver, vf.iommu_group, vf.numa_node = '', '', -1
    vf.physfn, vf.vgpu_type_id, vf.vgpu_type = '0000:41:00.0', 1161, None
    vf.mdev_types = {'nvidia-901': shapes.MdevType('NVIDIA A100D-1-10C', 0,
                                                   1)}
    facts.note('vgpu_type_name', '0000:41:00.4')
    facts.note('nova_compute_version')
    return facts


def round_trip(facts):
    text = series.render(series.samples(facts))
    return series.from_samples(series.parse_text(text))


class TestSeries(testtools.TestCase):

    def test_dcgm_bus_id(self):
        for address in ('0000:41:00.0', '0000:c1:00.4', '0001:3b:1f.7'):
            self.assertEqual(formatters.dcgm_pci_bus_id(address),
                             series.dcgm_bus_id(address))
        self.assertEqual('00000000:C1:00.0',
                         series.dcgm_bus_id('0000:c1:00.0'))

    def test_families(self):
        names = [f.name for f in series.FAMILIES]
        self.assertEqual(len(names), len(set(names)))
        for family in series.FAMILIES:
            self.assertTrue(family.name.startswith('gpuclient_host_'))
            self.assertTrue(family.help)
            if family.fact:
                self.assertIn(family.fact, shapes.FACTS)

    def test_round_trip(self):
        facts = sample_facts()
        self.assertEqual({'gpu-1': facts}, round_trip(facts))

    def test_labels(self):
        found = {}
        for item in series.samples(sample_facts()):  # the card's first
            found.setdefault(item.name, item.label_map)
        self.assertEqual({'Hostname': 'gpu-1',
                          'pci_bus_id': '00000000:41:00.0',
                          'driver': 'nvidia'},
                         found['gpuclient_host_pci_driver_info'])
        self.assertEqual(
            {'Hostname': 'gpu-1', 'pci_bus_id': '00000000:41:00.0',
             'GPU_I_ID': '2', 'GPU_I_PROFILE': '3g.40gb', 'profile_id': '9',
             'placement_start': '4', 'placement_size': '4'},
            found['gpuclient_host_mig_gpu_instance_info'])
        text = series.render(series.samples(sample_facts()))
        # a label with no value is left out: the VF's driver and name
        self.assertIn('gpuclient_host_pci_driver_info{Hostname="gpu-1",'
                      'pci_bus_id="00000000:41:00.4"} 1\n', text)
        self.assertIn('gpuclient_host_vgpu_type_info{Hostname="gpu-1",'
                      'pci_bus_id="00000000:41:00.4",vgpu_type_id="1161"} '
                      '1\n', text)
        self.assertIn('gpuclient_host_fact_unreadable{Hostname="gpu-1",'
                      'fact="vgpu_type_name",pci_bus_id="00000000:41:00.4"} '
                      '1\n', text)
        self.assertIn('gpuclient_host_fact_unreadable{Hostname="gpu-1",'
                      'fact="nova_compute_version"} 1\n', text)

    def test_render(self):
        one = series.sample(series.MDEVCTL, 'h"1\\', 1)
        text = series.render([one, one, series.sample(series.COLLECTED,
                                                      'h"1\\', 5)])
        self.assertEqual(
            '# HELP gpuclient_host_facts_collected_timestamp_seconds When '
            'gpuclient-host-facts read the host (Unix time).\n'
            '# TYPE gpuclient_host_facts_collected_timestamp_seconds gauge\n'
            'gpuclient_host_facts_collected_timestamp_seconds'
            '{Hostname="h\\"1\\\\"} 5\n'
            '# HELP gpuclient_host_mdevctl_present mdevctl is installed (1) '
            'or not (0).\n'
            '# TYPE gpuclient_host_mdevctl_present gauge\n'
            'gpuclient_host_mdevctl_present{Hostname="h\\"1\\\\"} 1\n', text)
        self.assertEqual([('h"1\\', 5.0), ('h"1\\', 1.0)],
                         [(s.label_map['Hostname'], s.value)
                          for s in series.parse_text(text)])
        self.assertEqual('', series.render([]))

    def test_parse_text_refuses(self):
        good = 'a{b="c"} 1\n'
        self.assertEqual([series.Sample('a', (('b', 'c'),), 1.0)],
                         series.parse_text(good + '# x\n\n'))
        self.assertEqual([series.Sample('a', (), 2.0)],
                         series.parse_text('a 2 1700000000000\n'))
        for bad in ('a{b="c"} 1',  # cut short: no newline
                    good + 'a{b="c} 1\n', good + 'a{b="c"} one\n',
                    good + 'a{b="c",b="d"} 1\n', good + '{b="c"} 1\n',
                    good + 'a{b=c} 1\n'):
            self.assertRaises(ValueError, series.parse_text, bad)


class TestFromSamples(testtools.TestCase):

    def test_bad_series_are_unreadable_not_values(self):
        host = {'Hostname': 'gpu-1'}
        card = dict(host, pci_bus_id='00000000:41:00.0')
        found = series.from_samples([
            ('gpuclient_host_mig_mode_current', card, 7),
            ('gpuclient_host_pci_numa_node', card, 1.5),
            ('gpuclient_host_pci_driver_info', dict(host, driver='nvidia'),
             1),
            ('gpuclient_host_pci_iommu_group_info',
             dict(host, pci_bus_id='garbage', iommu_group='3'), 1),
            ('gpuclient_host_iommu_active', host, 2),
            ('gpuclient_host_version_info',
             dict(host, component='firmware', version='1'), 1),
            ('gpuclient_host_mig_gpu_instance_info',
             dict(card, GPU_I_ID='x', GPU_I_PROFILE='1g.10gb'), 1),
            ('gpuclient_host_mdev_devices', card, 1),
            ('gpuclient_host_fact_unreadable', dict(host, fact='weather'),
             1),
            ('node_memory_numa_MemTotal', host, 1),
            ('gpuclient_host_mdevctl_present', {}, 1),
        ])['gpu-1']
        card = found.functions['0000:41:00.0']
        self.assertIsNone(card.mig_current)
        self.assertIsNone(card.numa_node)
        self.assertIsNone(found.iommu_active)
        self.assertEqual({}, found.versions)
        self.assertIsNone(card.gpu_instances)
        self.assertEqual(
            {shapes.Unreadable('mig_mode', '0000:41:00.0'),
             shapes.Unreadable('numa_node', '0000:41:00.0'),
             shapes.Unreadable('driver'), shapes.Unreadable('iommu_group'),
             shapes.Unreadable('iommu'),
             shapes.Unreadable('mig_layout', '0000:41:00.0'),
             shapes.Unreadable('mdev_devices')}, found.unreadable)
        self.assertTrue(found.is_unreadable('driver', '0000:41:00.0'))

    def test_either_hostname_label_and_two_exporters(self):
        found = series.from_samples([
            ('gpuclient_host_mdevctl_present',
             {'hostname': 'gpu-1', 'instance': 'gpu-1:9100'}, 1),
            ('gpuclient_host_mdevctl_present',
             {'Hostname': 'gpu-1', 'instance': '10.0.0.9:9100'}, 1),
            ('gpuclient_host_mdevctl_present', {'Hostname': 'gpu-2'}, 0)])
        self.assertEqual(['gpu-1', 'gpu-2'], sorted(found))
        self.assertTrue(found['gpu-1'].conflicting)
        self.assertFalse(found['gpu-2'].conflicting)
        self.assertFalse(found['gpu-2'].mdevctl)

    def test_unknown_fact_is_refused(self):
        facts = shapes.HostFacts('h')
        self.assertRaises(ValueError, facts.note, 'weather')
        self.assertEqual('libvirt_version', shapes.version_fact('libvirt'))
        for component in shapes.COMPONENTS:
            self.assertIn(shapes.version_fact(component), shapes.FACTS)
