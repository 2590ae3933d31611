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

"""gpuclient-host-facts against fake host trees (tools/cloud/host_trees.py):
every kind and every fault, bad input (unreadable files, missing nodes,
garbage, dangling links) reported unreadable and never a value, the
textfile written atomically, nvidia-smi never run under a fake root (and
run with a timeout on the host), ``promtool check metrics`` on what it
writes, and the console script itself."""

import contextlib
import importlib.util
import io
import os
import shutil
import stat
import subprocess
import sys
import textwrap
from unittest import mock

import fixtures

from gpuclient.hostfacts import collector
from gpuclient.hostfacts import files
from gpuclient.hostfacts import main
from gpuclient.hostfacts import nvidia_smi
from gpuclient.hostfacts import textfile
from gpuclient.rules.host_facts import contents
from gpuclient.rules.host_facts import series
from gpuclient.rules.host_facts import shapes
from gpuclient.tests.unit import base

SCRIPT = os.path.join(base.ROOT, 'tools', 'cloud', 'host_trees.py')
_spec = importlib.util.spec_from_file_location('host_trees', SCRIPT)
host_trees = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(host_trees)

PT = ('0000:41:00.0', '0000:42:00.0', '0000:c1:00.0', '0000:c2:00.0')
VGPU_VF_PF = '0000:a1:00.0'
MIG_CARD = '0000:41:00.0'


def promtool(test):
    """promtool's path; without it the test is skipped (CI's own check of
    the collector's series is tools/promtool-rules, tox -e promtool, which
    installs promtool: the unit tests may run before it is there)."""
    found = shutil.which('promtool')
    if not found:
        test.skipTest('promtool not found (apt-get install prometheus)')
    return found


def bus(address):
    return series.dcgm_bus_id(address)


class Collected:
    """What one run wrote: the text, its samples and the facts read back."""

    def __init__(self, text):
        self.text = text
        self.samples = series.parse_text(text)
        self.facts = series.from_samples(self.samples)

    def values(self, name, **labels):
        """The values of the series NAME whose labels include LABELS."""
        return [s.value for s in self.samples if s.name == name
                and all(s.label_map.get(k) == v for k, v in labels.items())]

    def value(self, name, **labels):
        found = self.values(name, **labels)
        assert len(found) == 1, (name, labels, found)
        return found[0]

    def labels(self, name, **labels):
        return [s.label_map for s in self.samples if s.name == name
                and all(s.label_map.get(k) == v for k, v in labels.items())]

    def unreadable(self):
        """{(fact, pci_bus_id or '')} of the unreadable series."""
        return {(m['fact'], m.get('pci_bus_id', ''))
                for m in self.labels('gpuclient_host_fact_unreadable')}

    def host(self):
        [facts] = self.facts.values()
        return facts


class TreeTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.work = self.useFixture(fixtures.TempDir()).path
        self.count = 0

    def tree(self, kind, *faults, **kwargs):
        self.count += 1
        root = os.path.join(self.work, 'tree%d' % self.count)
        return host_trees.write_tree(root, kind, faults=faults, **kwargs)

    def collect(self, root, *extra):
        """Run the console script on ROOT: its exit status must be 0."""
        out = os.path.join(self.work, 'out%d.prom' % self.count)
        status = main.main(['--root', root, '--output', out, *extra])
        self.assertEqual(0, status)
        with open(out) as f:
            return Collected(f.read())

    def path(self, root, rel):
        return os.path.join(root, rel)

    def device(self, root, address, *rest):
        return os.path.join(root, 'sys/devices/pci0000:00', address, *rest)


class TestKinds(TreeTest):
    """A healthy host of each kind."""

    def test_passthrough(self):
        got = self.collect(self.tree('passthrough', hostname='gpu-pt-1'))
        self.assertEqual(set(), got.unreadable())
        self.assertEqual(['gpu-pt-1'], list(got.facts))
        self.assertEqual(1, got.value('gpuclient_host_iommu_active'))
        self.assertEqual([{'Hostname': 'gpu-pt-1', 'intel_iommu': 'on',
                           'iommu': 'pt'}],
                         got.labels('gpuclient_host_kernel_iommu_info'))
        for number, address in enumerate(PT):
            audio = address[:-1] + '1'
            [group] = got.labels('gpuclient_host_pci_iommu_group_info',
                                 pci_bus_id=bus(address))
            # the card and its audio function: one group, on vfio-pci
            self.assertEqual([group['iommu_group']], [
                m['iommu_group'] for m in got.labels(
                    'gpuclient_host_pci_iommu_group_info',
                    pci_bus_id=bus(audio))])
            for function, device, pci_class in (
                    (address, '2331', '030200'), (audio, '22ba', '040300')):
                self.assertEqual(['vfio-pci'], [m['driver'] for m in (
                    got.labels('gpuclient_host_pci_driver_info',
                               pci_bus_id=bus(function)))])
                self.assertEqual(
                    [{'Hostname': 'gpu-pt-1', 'pci_bus_id': bus(function),
                      'vendor_id': '10de', 'device_id': device,
                      'class': pci_class}],
                    got.labels('gpuclient_host_pci_function_info',
                               pci_bus_id=bus(function)))
            self.assertEqual(number // 2, got.value(
                'gpuclient_host_pci_numa_node', pci_bus_id=bus(address)))
        # the network card is in no NVIDIA function's group: left out
        self.assertEqual([], got.labels('gpuclient_host_pci_function_info',
                                        vendor_id='8086'))
        self.assertEqual(0, got.value('gpuclient_host_nvidia_smi_present'))
        self.assertEqual(0, got.value('gpuclient_host_mdevctl_present'))
        versions = {m['component']: m for m in got.labels(
            'gpuclient_host_version_info')}
        self.assertEqual(['kernel', 'libvirt', 'nova_compute', 'qemu'],
                         sorted(versions))
        self.assertEqual({'Hostname': 'gpu-pt-1', 'component': 'qemu',
                          'version': '8.2.2', 'source': 'dpkg',
                          'package_version': '1:8.2.2+ds-0ubuntu1'},
                         versions['qemu'])
        self.assertEqual('29.0.0', versions['nova_compute']['version'])
        self.assertEqual('10.0.0', versions['libvirt']['version'])
        self.assertEqual([], got.labels('gpuclient_host_mig_mode_current'))

    def test_vgpu(self):
        got = self.collect(self.tree('vgpu'))
        self.assertEqual(set(), got.unreadable())
        first, second = (bus(a) for a in host_trees.GPUS['vgpu'])
        self.assertEqual(
            [7, 8], [got.value(
                'gpuclient_host_mdev_type_available_instances',
                pci_bus_id=b, mdev_type='nvidia-35',
                mdev_type_name='GRID T4-2Q') for b in (first, second)])
        self.assertEqual([1, 0], [got.value(
            'gpuclient_host_mdev_devices', pci_bus_id=b,
            mdev_type='nvidia-35') for b in (first, second)])
        self.assertEqual(1, got.value('gpuclient_host_mdevctl_present'))
        self.assertEqual(1, got.value('gpuclient_host_nvidia_smi_present'))
        self.assertEqual('550.90.05', got.host().versions[
            'nvidia_driver'].version)
        # T4s have no MIG: nvidia-smi says [N/A], no series
        self.assertEqual([], got.labels('gpuclient_host_mig_mode_current'))
        self.assertEqual({'nvidia'}, {
            m['driver'] for m in got.labels(
                'gpuclient_host_pci_driver_info')})

    def test_vgpu_vf(self):
        got = self.collect(self.tree('vgpu-vf'))
        self.assertEqual(set(), got.unreadable())
        pf = bus(VGPU_VF_PF)
        self.assertEqual(8, got.value('gpuclient_host_sriov_numvfs',
                                      pci_bus_id=pf))
        self.assertEqual(8, got.value('gpuclient_host_sriov_totalvfs',
                                      pci_bus_id=pf))
        vfs = host_trees.vfs(VGPU_VF_PF, 8)
        self.assertEqual([bus(vf) for vf in vfs], [
            m['pci_bus_id'] for m in got.labels(
                'gpuclient_host_sriov_vf_info', physfn=pf)])
        types = {m['pci_bus_id']: (m['vgpu_type_id'], m.get('vgpu_type'))
                 for m in got.labels('gpuclient_host_vgpu_type_info')}
        self.assertEqual(
            {bus(vf): ('1161', 'L40S-24Q') if n < 2 else ('0', None)
             for n, vf in enumerate(vfs)}, types)
        facts = got.host()
        self.assertEqual(VGPU_VF_PF, facts.functions[vfs[0]].physfn)
        self.assertEqual('L40S-24Q', facts.functions[vfs[0]].vgpu_type)

    def test_mig(self):
        got = self.collect(self.tree('mig'))
        self.assertEqual(set(), got.unreadable())
        card = bus(MIG_CARD)
        self.assertEqual(1, got.value('gpuclient_host_mig_mode_current',
                                      pci_bus_id=card))
        self.assertEqual(1, got.value('gpuclient_host_mig_mode_pending',
                                      pci_bus_id=card))
        self.assertEqual(7, got.value('gpuclient_host_mig_gpu_instances',
                                      pci_bus_id=card))
        instances = got.host().functions[MIG_CARD].gpu_instances
        self.assertEqual(
            [shapes.GpuInstance(7 + n, '1g.10gb', 19, n, 1)
             for n in range(7)], instances)
        vfs = host_trees.vfs(MIG_CARD, 7)
        # each VF offers its GPU instance's type; one holds a vGPU
        self.assertEqual([0] + [1] * 6, [got.value(
            'gpuclient_host_mdev_type_available_instances',
            pci_bus_id=bus(vf)) for vf in vfs])
        self.assertEqual([1] + [0] * 6, [got.value(
            'gpuclient_host_mdev_devices', pci_bus_id=bus(vf))
            for vf in vfs])

    def test_every_kind_reads_back_as_collected(self):
        # the textfile read back gives what the collector read
        for kind in host_trees.KINDS:
            root = self.tree(kind)
            facts = collector.collect(root, now=1700000000)
            got = series.from_samples(series.parse_text(
                series.render(series.samples(facts))))
            self.assertEqual({facts.hostname: facts}, got, kind)


# fault -> (kinds, check(test, collected, kind))
def _first(kind):
    return host_trees.GPUS[kind][0]


def _gpu_on_nvidia(test, got, kind):
    test.assertEqual('nvidia', got.host().functions[_first(kind)].driver)
    test.assertEqual('vfio-pci', got.host().functions[PT[1]].driver)
    test.assertIn('nvidia_driver', got.host().versions)


def _audio(test, got, kind):
    facts = got.host()
    audio = facts.functions['0000:41:00.1']
    test.assertEqual('snd_hda_intel', audio.driver)
    test.assertEqual(facts.functions[PT[0]].iommu_group, audio.iommu_group)


def _vfs_lost(test, got, kind):
    card = got.host().functions[_first(kind)]
    test.assertEqual(0, card.sriov_numvfs)
    test.assertEqual(host_trees.VF_COUNT[kind], card.sriov_totalvfs)
    test.assertEqual([], got.labels('gpuclient_host_sriov_vf_info'))
    test.assertEqual([], got.labels('gpuclient_host_vgpu_type_info'))
    test.assertEqual([], got.labels(
        'gpuclient_host_mdev_type_available_instances'))


def _mig_pending(test, got, kind):
    card = got.host().functions[_first(kind)]
    test.assertEqual((False, True), (card.mig_current, card.mig_pending))
    test.assertIsNone(card.gpu_instances)
    test.assertEqual([], got.labels('gpuclient_host_mig_gpu_instances'))


def _drift(test, got, kind):
    test.assertEqual(host_trees.OLD_DRIVER,
                     got.host().versions['nvidia_driver'].version)


def _iommu_off(test, got, kind):
    facts = got.host()
    test.assertIs(False, facts.iommu_active)
    test.assertEqual({}, facts.iommu_cmdline)
    test.assertEqual({''}, {f.iommu_group for f in facts.functions.values()})
    # in no group: the series without an iommu_group label
    test.assertEqual([], [m for m in got.labels(
        'gpuclient_host_pci_iommu_group_info') if 'iommu_group' in m])


def _mdevctl(test, got, kind):
    test.assertIs(False, got.host().mdevctl)


def _unreadable(fact, address=None):
    def check(test, got, kind):
        where = '' if address is None else bus(address(kind))
        test.assertEqual({(fact, where)}, got.unreadable())
    return check


FAULT_CHECKS = {
    'gpu-on-nvidia': _gpu_on_nvidia,
    'audio-on-snd-hda-intel': _audio,
    'vfs-lost': _vfs_lost,
    'mig-pending': _mig_pending,
    'driver-drift': _drift,
    'iommu-off': _iommu_off,
    'mdevctl-missing': _mdevctl,
    'garbage-vgpu-type': _unreadable(
        'vgpu_type', lambda kind: host_trees.vfs(_first(kind), 8)[0]),
    'missing-numa-node': _unreadable('numa_node', _first),
    'dangling-driver': _unreadable('driver', _first),
    'unreadable-cmdline': _unreadable('kernel_cmdline'),
}


class TestFaults(TreeTest):
    """Every fault of host_trees, on every kind it applies to."""

    def test_every_fault_is_checked(self):
        self.assertEqual(sorted(host_trees.FAULTS), sorted(FAULT_CHECKS))

    def test_each_fault(self):
        for fault, (kinds, _text) in sorted(host_trees.FAULTS.items()):
            for kind in kinds:
                got = self.collect(self.tree(kind, fault))
                with self.naming(fault, kind):
                    FAULT_CHECKS[fault](self, got, kind)
                    healthy = fault not in (
                        'garbage-vgpu-type', 'missing-numa-node',
                        'dangling-driver', 'unreadable-cmdline')
                    if healthy:
                        self.assertEqual(set(), got.unreadable())
                    # what was written reads back as it was read
                    facts = collector.collect(
                        self.tree(kind, fault), now=got.host().collected_at)
                    self.assertEqual({facts.hostname: facts}, got.facts)

    @contextlib.contextmanager
    def naming(self, fault, kind):
        try:
            yield
        except AssertionError as exc:
            raise AssertionError('%s on %s: %s' % (fault, kind, exc)) from exc

    def test_the_faults_are_refused_where_they_mean_nothing(self):
        self.assertRaises(ValueError, self.tree, 'passthrough', 'vfs-lost')
        self.assertRaises(ValueError, self.tree, 'mig', 'no-such-fault')
        self.assertRaises(ValueError, self.tree, 'bare-metal')
        root = self.tree('mig')
        self.assertRaises(ValueError, host_trees.write_tree, root, 'mig')


class TestBadInput(TreeTest):
    """What a host's files may hold that the kernel never writes: the fact
    is unreadable, the rest is read, and the file is still written."""

    def vgpu_vf(self):
        root = self.tree('vgpu-vf')
        return root, host_trees.vfs(VGPU_VF_PF, 8)

    def write(self, path, data):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if os.path.lexists(path):
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)
            else:
                os.unlink(path)
        with open(path, 'wb' if isinstance(data, bytes) else 'w') as f:
            f.write(data)

    def relink(self, path, target):
        os.unlink(path)
        os.symlink(target, path)

    def test_garbage_in_current_vgpu_type(self):
        root, vfs = self.vgpu_vf()
        for garbage in ('L40S-24Q\n', '-3\n', '', '1161\n1162\n',
                        b'\xff\xfe\n'):
            self.write(self.device(root, vfs[0], 'nvidia',
                                   'current_vgpu_type'), garbage)
            got = self.collect(root)
            self.assertEqual({('vgpu_type', bus(vfs[0]))}, got.unreadable(),
                             garbage)
            self.assertEqual([], got.labels('gpuclient_host_vgpu_type_info',
                                            pci_bus_id=bus(vfs[0])))
            self.assertEqual(['1161'], [m['vgpu_type_id'] for m in got.labels(
                'gpuclient_host_vgpu_type_info', pci_bus_id=bus(vfs[1]))])

    def test_a_type_no_card_names(self):
        root, vfs = self.vgpu_vf()
        for vf in vfs:
            self.write(self.device(root, vf, 'nvidia',
                                   'creatable_vgpu_types'),
                       'ID    : vGPU Name\n')
        got = self.collect(root)
        self.assertEqual({('vgpu_type_name', bus(vf)) for vf in vfs[:2]},
                         got.unreadable())
        self.assertEqual({'1161'}, {m['vgpu_type_id'] for m in got.labels(
            'gpuclient_host_vgpu_type_info', pci_bus_id=bus(vfs[0]))})

    def test_unreadable_files(self):
        root, vfs = self.vgpu_vf()
        # a directory, a FIFO (never waited on) and a file too large where
        # attributes should be
        os.unlink(self.device(root, VGPU_VF_PF, 'numa_node'))
        os.mkdir(self.device(root, VGPU_VF_PF, 'numa_node'))
        os.unlink(self.device(root, vfs[0], 'numa_node'))
        os.mkfifo(self.device(root, vfs[0], 'numa_node'))
        self.write(self.device(root, vfs[1], 'numa_node'),
                   '0' * (files.MAX_BYTES + 1))
        self.write(self.device(root, VGPU_VF_PF, 'sriov_numvfs'), 'lots\n')
        got = self.collect(root)
        self.assertEqual({('numa_node', bus(VGPU_VF_PF)),
                          ('numa_node', bus(vfs[0])),
                          ('numa_node', bus(vfs[1])),
                          ('sriov', bus(VGPU_VF_PF))}, got.unreadable())
        self.assertEqual([], got.values('gpuclient_host_sriov_numvfs'))
        # the VFs are still read from their links
        self.assertEqual(8, len(got.labels('gpuclient_host_sriov_vf_info')))

    def test_a_file_denied(self):
        root = self.tree('vgpu')
        path = self.device(root, host_trees.GPUS['vgpu'][0], 'numa_node')
        real_open = os.open

        def denying(name, *args, **kwargs):
            if os.path.realpath(name) == os.path.realpath(path):
                raise PermissionError(13, 'Permission denied', name)
            return real_open(name, *args, **kwargs)

        with mock.patch.object(files.os, 'open', denying):
            facts = collector.collect(root)
        self.assertEqual(
            {shapes.Unreadable('numa_node', host_trees.GPUS['vgpu'][0])},
            facts.unreadable)
        if os.getuid() != 0:  # root reads a file of mode 000
            os.chmod(path, 0)
            self.assertEqual({('numa_node', bus(host_trees.GPUS['vgpu'][0]))},
                             self.collect(root).unreadable())

    def test_missing_nodes(self):
        root = self.tree('passthrough')
        for name in ('vendor', 'device', 'class'):
            path = self.device(root, PT[1], name)
            if name != 'vendor':
                os.unlink(path)
        os.unlink(self.device(root, PT[2], 'class'))
        got = self.collect(root)
        # 42:00.0 without its device id, c1:00.0 without its class
        self.assertEqual({('pci_ids', bus(PT[1])), ('pci_ids', bus(PT[2]))},
                         got.unreadable())
        facts = got.host()
        self.assertIsNone(facts.functions[PT[1]].device_id)
        self.assertEqual('vfio-pci', facts.functions[PT[1]].driver)
        shutil.rmtree(os.path.join(root, 'sys/bus/pci'))
        got = self.collect(root)
        self.assertEqual({('pci_devices', '')}, got.unreadable())
        self.assertEqual([], got.labels('gpuclient_host_pci_function_info'))

    def test_dangling_links(self):
        root, vfs = self.vgpu_vf()
        pf = self.device(root, VGPU_VF_PF)
        self.relink(os.path.join(pf, 'iommu_group'),
                    '../../../kernel/iommu_groups/99')
        self.relink(os.path.join(pf, 'virtfn7'), '../0000:a1:09.0')
        # a link out of the tree is no link into it
        self.relink(self.device(root, vfs[0], 'driver'),
                    '/sys/bus/pci/drivers/nvidia')
        got = self.collect(root)
        self.assertEqual({('iommu_group', bus(VGPU_VF_PF)),
                          ('vfs', bus(VGPU_VF_PF)),
                          ('driver', bus(vfs[0]))}, got.unreadable())
        # the VF behind the broken link is still read, as a function with
        # its own physfn link
        self.assertEqual(8, len(got.labels('gpuclient_host_sriov_vf_info')))
        self.assertEqual([], got.labels('gpuclient_host_pci_driver_info',
                                        pci_bus_id=bus(vfs[0])))

    def test_garbage_links(self):
        root = self.tree('passthrough')
        gpu = self.device(root, PT[0])
        # a group that is no number
        os.makedirs(os.path.join(root, 'sys/kernel/iommu_groups/zero/'
                                 'devices'))
        self.relink(os.path.join(gpu, 'iommu_group'),
                    '../../../kernel/iommu_groups/zero')
        got = self.collect(root)
        self.assertEqual({('iommu_group', bus(PT[0]))}, got.unreadable())

    def test_group_members(self):
        root = self.tree('passthrough')
        members = os.path.join(root, 'sys/kernel/iommu_groups/1/devices')
        # a bridge in the card's group (no ACS), and a member link that
        # dangles
        os.symlink('../../../../devices/pci0000:00/0000:40:01.1',
                   os.path.join(members, '0000:40:01.1'))
        bridge = self.device(root, '0000:40:01.1')
        os.makedirs(bridge)
        for name, text in (('vendor', '0x1022'), ('device', '0x1453'),
                           ('class', '0x060400'), ('numa_node', '0')):
            self.write(os.path.join(bridge, name), text + '\n')
        os.symlink('../../../bus/pci/drivers/pcieport',
                   os.path.join(bridge, 'driver'))
        os.makedirs(os.path.join(root, 'sys/bus/pci/drivers/pcieport'))
        os.symlink('../../../devices/pci0000:00/0000:40:01.1', os.path.join(
            root, 'sys/bus/pci/devices/0000:40:01.1'))
        got = self.collect(root)
        self.assertEqual(set(), got.unreadable())
        self.assertEqual([{'Hostname': 'gpu-passthrough', 'driver':
                           'pcieport', 'pci_bus_id': '00000000:40:01.1'}],
                         got.labels('gpuclient_host_pci_driver_info',
                                    pci_bus_id='00000000:40:01.1'))
        self.assertEqual('060400',
                         got.host().functions['0000:40:01.1'].pci_class)
        os.symlink('../../../../devices/pci0000:00/0000:40:01.2',
                   os.path.join(members, '0000:40:01.2'))
        got = self.collect(root)
        self.assertIn(('iommu_group_members', bus(PT[0])), got.unreadable())

    def test_mediated_devices(self):
        root = self.tree('vgpu')
        mdevs = os.path.join(root, 'sys/bus/mdev/devices')
        [name] = os.listdir(mdevs)
        self.relink(os.path.join(mdevs, name), '../../../devices/gone')
        got = self.collect(root)
        self.assertEqual({('mdev_devices', '')}, got.unreadable())
        # how many exist is not known: not written as 0
        self.assertEqual([], got.labels('gpuclient_host_mdev_devices'))
        self.assertEqual(2, len(got.labels(
            'gpuclient_host_mdev_type_available_instances')))
        # no mdev bus (the module is not loaded): none made
        shutil.rmtree(os.path.join(root, 'sys/bus/mdev'))
        got = self.collect(root)
        self.assertEqual(set(), got.unreadable())
        self.assertEqual([0, 0], got.values('gpuclient_host_mdev_devices'))

    def test_mdev_type_files(self):
        root = self.tree('vgpu')
        types = self.device(root, host_trees.GPUS['vgpu'][1],
                            'mdev_supported_types', 'nvidia-35')
        self.write(os.path.join(types, 'available_instances'), 'many\n')
        got = self.collect(root)
        self.assertEqual({('mdev_types', bus(host_trees.GPUS['vgpu'][1]))},
                         got.unreadable())

    def test_hostname(self):
        root = self.tree('vgpu')
        self.write(os.path.join(root, 'proc/sys/kernel/hostname'), '\n')
        got = self.collect(root, '--hostname', 'gpu-vgpu-1')
        self.assertEqual(['gpu-vgpu-1'], list(got.facts))
        self.assertEqual(set(), got.unreadable())
        # a fake tree without a name: said, and the series still written
        text = io.StringIO()
        with mock.patch.object(sys, 'stdout', text):
            self.assertEqual(0, main.main(['--root', root, '--output', '-']))
        self.assertIn('gpuclient_host_fact_unreadable{fact="hostname"} 1\n',
                      text.getvalue())
        # no Hostname label rather than an empty one
        self.assertEqual([], [s for s in series.parse_text(text.getvalue())
                              if 'Hostname' in s.label_map])

    def test_versions_from_other_sources(self):
        root = self.tree('vgpu', versions={
            'libvirt-daemon': None, 'libvirt0': None,
            'qemu-system-x86': None, 'nova-compute': None,
            'python3-nova': None})
        got = self.collect(root)
        self.assertEqual({('libvirt_version', ''), ('qemu_version', ''),
                          ('nova_compute_version', '')}, got.unreadable())
        # what an RPM host (or a pip install) leaves
        lib = os.path.join(root, 'usr/lib64/libvirt.so.0.9007.0')
        self.write(lib, '')
        cache = os.path.join(root, 'var/cache/libvirt/qemu/capabilities')
        self.write(os.path.join(cache, 'a1b2.xml'), textwrap.dedent('''\
            <qemuCaps>
              <emulator>/usr/libexec/qemu-kvm</emulator>
              <selfvers>9007000</selfvers>
              <version>8002000</version>
            </qemuCaps>
            '''))
        site = os.path.join(root, 'usr/lib/python3.9/site-packages')
        os.makedirs(os.path.join(site, 'nova-27.1.0-py3.9.egg-info'))
        got = self.collect(root)
        self.assertEqual(set(), got.unreadable())
        versions = got.host().versions
        self.assertEqual(shapes.Version('9.7.0', '', 'library'),
                         versions['libvirt'])
        self.assertEqual(shapes.Version('8.2.0', '', 'libvirt-cache'),
                         versions['qemu'])
        self.assertEqual(shapes.Version('27.1.0', '', 'python'),
                         versions['nova_compute'])
        # two venvs of two releases: which one runs is not known
        os.makedirs(os.path.join(
            root, 'openstack/venvs/nova-29.0.0/lib/python3.12/'
            'site-packages/nova-29.0.0.dist-info'))
        got = self.collect(root)
        self.assertEqual({('nova_compute_version', '')}, got.unreadable())

    def test_dpkg_status_unreadable(self):
        root = self.tree('mig')
        status = os.path.join(root, 'var/lib/dpkg/status')
        os.unlink(status)
        os.mkdir(status)
        got = self.collect(root)
        self.assertEqual({('libvirt_version', ''), ('qemu_version', ''),
                          ('nova_compute_version', '')}, got.unreadable())
        self.assertIn('kernel', got.host().versions)

    def test_driver_version_files(self):
        root = self.tree('vgpu')
        self.write(os.path.join(root, 'sys/module/nvidia/version'), 'x\n')
        got = self.collect(root)
        # /proc/driver/nvidia/version says it
        self.assertEqual(shapes.Version('550.90.05', '', 'procfs'),
                         got.host().versions['nvidia_driver'])
        os.unlink(os.path.join(root, 'proc/driver/nvidia/version'))
        got = self.collect(root)
        self.assertEqual({('nvidia_driver_version', '')}, got.unreadable())


class TestNvidiaSmi(TreeTest):

    def seam(self, root, name):
        return os.path.join(root, nvidia_smi.SEAM, name)

    def test_a_fake_root_never_runs_the_hosts_nvidia_smi(self):
        root = self.tree('mig')
        marker = os.path.join(self.work, 'ran')
        smi = os.path.join(root, 'usr/bin/nvidia-smi')
        with open(smi, 'w') as f:
            f.write('#!/bin/sh\ntouch %s\n' % marker)
        got = self.collect(root)
        self.assertEqual(7, got.value('gpuclient_host_mig_gpu_instances'))
        self.assertFalse(os.path.exists(marker))

    def test_what_nvidia_smi_says_that_is_not_understood(self):
        root = self.tree('mig')
        card = bus(MIG_CARD)
        os.unlink(self.seam(root, 'query-gpu.txt'))
        got = self.collect(root)
        self.assertEqual({('mig_mode', '')}, got.unreadable())
        self.assertEqual([], got.labels('gpuclient_host_mig_mode_current'))
        with open(self.seam(root, 'query-gpu.txt'), 'w') as f:
            f.write('Failed to initialize NVML: Driver/library version '
                    'mismatch\n')
        self.assertEqual({('mig_mode', '')},
                         self.collect(root).unreadable())
        with open(self.seam(root, 'query-gpu.txt'), 'w') as f:
            f.write('0, %s, Enabled, Enabled\n' % card)
        with open(self.seam(root, 'mig-lgi.txt'), 'w') as f:
            f.write('Insufficient Permissions\n')
        got = self.collect(root)
        self.assertEqual({('mig_layout', card)}, got.unreadable())
        self.assertEqual(1, got.value('gpuclient_host_mig_mode_current'))
        self.assertEqual([], got.labels('gpuclient_host_mig_gpu_instances'))
        with open(self.seam(root, 'mig-lgi.txt'), 'w') as f:
            f.write('No GPU instances found: Not Found\n')
        got = self.collect(root)
        # MIG on and no GPU instance: the layout a reboot loses
        self.assertEqual(set(), got.unreadable())
        self.assertEqual(0, got.value('gpuclient_host_mig_gpu_instances'))

    def test_a_gpu_nvidia_smi_does_not_list(self):
        root = self.tree('vgpu')
        with open(self.seam(root, 'query-gpu.txt'), 'w') as f:
            f.write('0, 00000000:84:00.0, [N/A], [N/A]\n')
        got = self.collect(root)
        self.assertEqual({('mig_mode', bus('0000:85:00.0'))},
                         got.unreadable())

    def script(self, body):
        path = os.path.join(self.work, 'nvidia-smi')
        with open(path, 'w') as f:
            f.write('#!/bin/sh\n' + body)
        os.chmod(path, 0o755)
        return nvidia_smi.NvidiaSmi(files.Tree('/'), path, timeout=1)

    def test_on_the_host_it_is_run_with_a_timeout(self):
        smi = self.script('echo "$@"\nexit 6\n')
        self.assertEqual((6, 'mig -lgi\n'), smi.output(contents.MIG_LIST))
        smi = self.script('exec sleep 30\n')
        self.assertRaises(subprocess.TimeoutExpired, smi.output,
                          contents.MIG_QUERY)

    def test_no_instances_with_a_failure_status(self):
        # nvidia-smi mig -lgi exits non-zero when there is no GPU
        # instance: still an empty layout; a query that fails is not
        facts = collector.collect(self.tree('mig'))
        card = facts.functions[MIG_CARD]
        card.gpu_instances = None
        smi = self.script(
            'case "$1" in mig) echo "No GPU instances found: Not Found"; '
            'exit 6;; *) echo "0, %s, Enabled, Enabled";; esac\n'
            % bus(MIG_CARD))
        nvidia_smi.read_mig(facts, smi)
        self.assertEqual([], card.gpu_instances)
        smi = self.script('echo "0, %s, Enabled, Enabled"; exit 15\n'
                          % bus(MIG_CARD))
        facts.unreadable.clear()
        nvidia_smi.read_mig(facts, smi)
        self.assertEqual({shapes.Unreadable('mig_mode')}, facts.unreadable)
        smi = self.script('exec sleep 30\n')
        facts.unreadable.clear()
        nvidia_smi.read_mig(facts, smi)
        self.assertEqual({shapes.Unreadable('mig_mode')}, facts.unreadable)

    def test_not_asked_where_no_gpu_is_on_nvidia(self):
        facts = collector.collect(self.tree('passthrough', 'iommu-off'))
        smi = mock.Mock(spec=nvidia_smi.NvidiaSmi)
        nvidia_smi.read_mig(facts, smi)
        self.assertEqual([], smi.output.mock_calls)


class TestTextfile(base.TestCase):

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.path = os.path.join(self.dir, 'gpuclient_host_facts.prom')
        textfile.write_atomically(self.path, 'good 1\n')

    def read(self):
        with open(self.path) as f:
            return f.read()

    def test_written_readable_by_node_exporter(self):
        self.assertEqual('good 1\n', self.read())
        self.assertEqual(0o644, stat.S_IMODE(os.stat(self.path).st_mode))
        self.assertEqual(['gpuclient_host_facts.prom'], os.listdir(self.dir))

    def test_a_half_written_file_never_replaces_the_good_one(self):
        seen = []
        real_fsync = os.fsync

        def fail(fd):
            # the temporary file is beside the final one, hidden from the
            # textfile collector (*.prom), when the disk fails
            seen.extend(os.listdir(self.dir))
            real_fsync(fd)
            raise OSError(5, 'Input/output error')

        with mock.patch.object(textfile.os, 'fsync', fail):
            self.assertRaises(OSError, textfile.write_atomically,
                              self.path, 'half')
        self.assertEqual('good 1\n', self.read())
        self.assertEqual(['gpuclient_host_facts.prom'], os.listdir(self.dir))
        [temporary] = [n for n in seen if n != 'gpuclient_host_facts.prom']
        self.assertTrue(temporary.startswith('.gpuclient_host_facts.prom.'))
        self.assertFalse(temporary.endswith('.prom'))
        with mock.patch.object(textfile.os, 'replace',
                               side_effect=OSError(28, 'No space')):
            self.assertRaises(OSError, textfile.write_atomically,
                              self.path, 'half')
        self.assertEqual('good 1\n', self.read())
        self.assertEqual(['gpuclient_host_facts.prom'], os.listdir(self.dir))

    def test_only_a_regular_file_is_replaced(self):
        fifo = os.path.join(self.dir, 'fifo')
        os.mkfifo(fifo)
        for path in (fifo, self.dir):
            self.assertRaises(OSError, textfile.write_atomically, path, 'x')
        self.assertTrue(stat.S_ISFIFO(os.stat(fifo).st_mode))

    def test_the_script_says_it_could_not_write_in_one_line(self):
        root = os.path.join(self.dir, 'tree')
        host_trees.write_tree(root, 'vgpu')
        for path in (os.path.join(self.dir, 'no', 'such', 'x.prom'),
                     self.dir):
            err = io.StringIO()
            with mock.patch.object(sys, 'stderr', err):
                self.assertEqual(1, main.main(['--root', root,
                                               '--output', path]))
            self.assertEqual(1, err.getvalue().count('\n'))
            self.assertTrue(err.getvalue().startswith(
                'gpuclient-host-facts: cannot write %s: ' % path))
        self.assertEqual('good 1\n', self.read())

    def test_a_defect_is_one_line_too(self):
        err = io.StringIO()
        with mock.patch.object(collector.sysfs, 'read_functions',
                               side_effect=KeyError('x')), \
                mock.patch.object(sys, 'stderr', err):
            self.assertEqual(1, main.main(['--root', self.dir, '--output',
                                           self.path]))
        self.assertEqual("gpuclient-host-facts: could not read the host: "
                         "'x'\n", err.getvalue())
        self.assertEqual('good 1\n', self.read())


class TestPromtool(TreeTest):

    def test_promtool_check_metrics(self):
        path = promtool(self)
        for kind in host_trees.KINDS:
            for fault in [None] + [f for f, (kinds, _) in
                                   host_trees.FAULTS.items() if kind in kinds]:
                got = self.collect(self.tree(kind, *filter(None, [fault])))
                proc = subprocess.run([path, 'check', 'metrics'],
                                      input=got.text, capture_output=True,
                                      text=True)
                self.assertEqual((0, ''), (proc.returncode,
                                           proc.stdout + proc.stderr),
                                 '%s %s' % (kind, fault))

    def test_promtool_sees_a_defect(self):
        # the check is not blind: a counter without _total is flagged
        path = promtool(self)
        proc = subprocess.run([path, 'check', 'metrics'],
                              input='# HELP x_seconds x\n# TYPE x_seconds '
                              'counter\nx_seconds 1\n', capture_output=True,
                              text=True)
        self.assertNotEqual(0, proc.returncode)


class TestConsoleScript(TreeTest):

    def test_declared_in_setup_cfg(self):
        scripts = base.declared_entry_points()['console_scripts']
        self.assertEqual('gpuclient.hostfacts.main:main',
                         scripts['gpuclient-host-facts'])
        self.assertTrue(callable(main.main))

    def test_options(self):
        args = main.parser().parse_args([])
        self.assertEqual(('/', main.OUTPUT, None),
                         (args.root, args.output, args.hostname))
        self.assertEqual('/var/lib/prometheus/node-exporter/'
                         'gpuclient_host_facts.prom', main.OUTPUT)
        out = io.StringIO()
        with mock.patch.object(sys, 'stdout', out):
            self.assertRaises(SystemExit, main.main, ['--help'])
        for option in ('--root <dir>', '--output <file>',
                       '--hostname <name>'):
            self.assertIn(option, out.getvalue())

    def test_python_m(self):
        root = self.tree('vgpu-vf', hostname='gpu-vf-1')
        out = os.path.join(self.work, 'facts.prom')
        proc = subprocess.run(
            [sys.executable, '-m', 'gpuclient.hostfacts', '--root', root,
             '--output', out], capture_output=True, text=True,
            cwd=base.ROOT)
        self.assertEqual((0, '', ''), (proc.returncode, proc.stdout,
                                       proc.stderr))
        with open(out) as f:
            got = Collected(f.read())
        self.assertEqual(['gpu-vf-1'], list(got.facts))
        self.assertEqual(2, len(got.labels('gpuclient_host_vgpu_type_info',
                                           vgpu_type='L40S-24Q')))

    def test_starts_without_openstackclient(self):
        proc = subprocess.run(
            [sys.executable, '-c', 'import sys\n'
             'import gpuclient.hostfacts.main\n'
             'print(" ".join(sorted({m.split(".")[0] for m in sys.modules'
             '})))'], capture_output=True, text=True, cwd=base.ROOT)
        self.assertEqual(0, proc.returncode, proc.stderr)
        loaded = set(proc.stdout.split())
        self.assertIn('gpuclient', loaded)
        self.assertEqual(set(), loaded & {
            'osc_lib', 'openstack', 'openstackclient', 'cliff',
            'keystoneauth1', 'stevedore', 'requests', 'yaml'})
