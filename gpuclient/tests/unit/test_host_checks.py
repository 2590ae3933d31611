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

"""gpu check's host findings (rules/checks/hosts.py, and gpu-driver-drift's
versions from the hosts' facts) over plain clouds whose hosts' facts are
what gpuclient-host-facts reads on the fake host trees of
tools/cloud/host_trees.py, written as series and read back as the
cloud's Prometheus holds them: each fault of the issue found with its
fix, gone once fixed; a fact unreadable or absent, a host without
current facts, the facts not read: "not judged", never a verdict; garbage
in any series never a wrong verdict."""

import copy
import dataclasses
import importlib.util
import os

import fixtures

from gpuclient.hostfacts import collector
from gpuclient.rules import checks
from gpuclient.rules import hosts as hosts_mod
from gpuclient.rules import model
from gpuclient.rules import pools
from gpuclient.rules.checks import hosts as host_checks
from gpuclient.rules.host_facts import series
from gpuclient.rules.host_facts import shapes
from gpuclient.tests.unit import base
from gpuclient.tests.unit import fakes

SCRIPT = os.path.join(base.ROOT, 'tools', 'cloud', 'host_trees.py')
_spec = importlib.util.spec_from_file_location('host_trees', SCRIPT)
host_trees = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(host_trees)

# {(kind, host, faults, options): the facts of that tree}, read once
_COLLECTED = {}

# when the facts were collected, and read
COLLECTED = 1700000000.0
READ = COLLECTED + 60

SPECS = {
    'solver': pools.build_spec('solver', 'passthrough', alias='h100',
                               pci_id='10de:2331'),
    'ws': pools.build_spec('ws', 'vgpu', vgpu_type='nvidia-35'),
    'vf': pools.build_spec('vf', 'vgpu-vf', vgpu_type='L40S-24Q',
                           alias='l40s-24q', pci_id='10de:26b9'),
    'mig': pools.build_spec('mig', 'mig', mig_profile='1g.10gb'),
}
# a host of each kind, in its pool
HOSTS = {'gpu-pt-1': ('passthrough', 'solver'),
         'gpu-vgpu-1': ('vgpu', 'ws'),
         'gpu-vf-1': ('vgpu-vf', 'vf'),
         'gpu-mig-1': ('mig', 'mig')}
HOST_CHECKS = [name for name, _func in host_checks.CHECKS]
ALL = HOST_CHECKS + ['gpu-driver-drift']

PT_GPU = '0000:41:00.0'
PT_AUDIO = '0000:41:00.1'
VF_CARD = '0000:a1:00.0'
MIG_CARD = '0000:41:00.0'
VGPU_CARD = '0000:84:00.0'


def not_judged(found):
    return [(f.check, f.object) for f in found if checks.is_not_judged(f)]


def judged(found):
    return [(f.severity, f.check, f.object) for f in found
            if not checks.is_not_judged(f)]


def _provider_name(host, address, libvirt):
    if libvirt:
        return '%s_pci_%s' % (host, address.replace(':', '_').replace(
            '.', '_'))
    return '%s_%s' % (host, address)


class HostChecksCase(base.TestCase):
    """A cloud of four pools, a host of each kind in each, Placement
    offering what the healthy tree holds, and the hosts' facts."""

    def setUp(self):
        super().setUp()
        self.work = self.useFixture(fixtures.TempDir()).path
        self.count = 0
        self.fc = fakes.FakeCloud()
        self.members = {name: [] for name in SPECS}
        self.facts = {}
        for host, (kind, pool) in HOSTS.items():
            self.add_host(host, kind, pool)

    def add_host(self, host, kind, pool, *faults, **kwargs):
        """HOST of KIND in POOL: its providers as Nova reports the healthy
        tree's devices, and the facts of its tree with FAULTS."""
        root = self.fc.compute_host(host)
        rc = SPECS[pool]['resource_class']
        if kind == 'passthrough':
            for address in host_trees.GPUS[kind]:
                self.fc.add(fakes.Provider(
                    _provider_name(host, address, False), parent=root,
                    inventory={rc: fakes.inv(1)}))
        elif kind == 'vgpu':
            for address in host_trees.GPUS[kind]:
                self.fc.add(fakes.Provider(
                    _provider_name(host, address, True), parent=root,
                    inventory={'VGPU': fakes.inv(host_trees.MDEV_TYPE[2])},
                    traits=['CUSTOM_NVIDIA_35']))
        elif kind == 'vgpu-vf':
            for vf in host_trees.vfs(VF_CARD, host_trees.VFS_TYPED):
                self.fc.add(fakes.Provider(
                    _provider_name(host, vf, False), parent=root,
                    inventory={rc: fakes.inv(1)}))
        else:
            for vf in host_trees.vfs(MIG_CARD, host_trees.VF_COUNT[kind]):
                self.fc.add(fakes.Provider(
                    _provider_name(host, vf, True), parent=root,
                    inventory={'VGPU': fakes.inv(1)},
                    traits=['CUSTOM_MIG_1G_10GB']))
        self.members[pool].append(host)
        self.facts[host] = self.collect(kind, host, *faults, **kwargs)

    def collect(self, kind, host, *faults, **kwargs):
        """The facts of a tree of KIND with FAULTS, as Prometheus holds
        them: collected, written as series, read back (each tree once:
        a copy for each test)."""
        key = (kind, host, faults, tuple(sorted(
            (k, tuple(sorted(v.items())) if isinstance(v, dict) else v)
            for k, v in kwargs.items())))
        if key not in _COLLECTED:
            self.count += 1
            root = host_trees.write_tree(
                os.path.join(self.work, 'tree%d' % self.count), kind,
                faults=faults, hostname=host, **kwargs)
            facts = collector.collect(root, now=COLLECTED)
            _COLLECTED[key] = series.from_samples(
                series.samples(facts))[host]
        return copy.deepcopy(_COLLECTED[key])

    def remove_provider(self, host, address, libvirt):
        name = _provider_name(host, address, libvirt)
        self.fc.providers = [p for p in self.fc.providers if p.name != name]

    def cloud(self, **fields):
        fc = self.fc
        snap = model.Placement.listed(
            fc.providers_body()['resource_providers'])
        snap.add_details({p.uuid: fc.summary(p) for p in fc.providers})
        aggregates = [fakes.Aggregate(name, pools.metadata_for(spec),
                                      self.members[name])
                      for name, spec in SPECS.items()]
        services = [{'host': hv['service']['host'], 'status': 'enabled',
                     'state': 'up'} for hv in fc.hypervisors]
        found, _problems = pools.scan(aggregates)
        cloud = model.Cloud(
            aggregates, fc.hypervisors, services, snap, flavors=[],
            gpu_classes=hosts_mod.gpu_classes(
                fc.resource_classes(),
                [p['resource_class'] for p in found.values()]),
            blazar=False)
        cloud.host_facts = dict(self.facts)
        cloud.host_facts_read_at = READ
        for name, value in fields.items():
            setattr(cloud, name, value)
        return cloud

    def run_checks(self, cloud=None, names=ALL, **kwargs):
        return checks.run(cloud or self.cloud(), names=names, **kwargs)

    def named(self, check, cloud=None):
        return [f for f in self.run_checks(cloud, [check])
                if not checks.is_not_judged(f)]

    def assert_one(self, check, severity, obj, cloud=None):
        """The one finding of CHECK (besides "not judged" ones)."""
        found = self.named(check, cloud)
        self.assertEqual([(severity, check, obj)], judged(found),
                         [f.symptom for f in found])
        return found[0]

    def fault(self, host, *faults, **kwargs):
        """HOST's facts those of its kind's tree with FAULTS."""
        self.facts[host] = self.collect(HOSTS[host][0], host, *faults,
                                        **kwargs)

    def heal(self, host):
        self.fault(host)


class TestHealthy(HostChecksCase):
    def test_a_prepared_host_of_each_kind_has_no_finding(self):
        self.assertEqual([], self.run_checks())

    def test_every_host_check_is_registered_with_its_source(self):
        for name in HOST_CHECKS:
            self.assertIn(name, checks.CHECKS)
            self.assertEqual(('host_facts',), checks.SOURCES[name])


class TestIommu(HostChecksCase):
    def test_iommu_off_on_a_passthrough_host_and_its_fix(self):
        self.fault('gpu-pt-1', 'iommu-off')
        found = self.assert_one('host-iommu-off', checks.ERROR,
                                'host gpu-pt-1')
        self.assertIn('no IOMMU option on the kernel command line',
                      found.symptom)
        self.assertEqual(['solver'], list(found.pools))
        self.assertTrue(found.fix.startswith(
            'openstack gpu host cordon gpu-pt-1; openstack gpu host drain '
            'gpu-pt-1; then turn VT-d'), found.fix)
        self.assertIn('intel_iommu=on iommu=pt', found.fix)
        self.assertIn('openstack gpu host render --pool solver '
                      '--output-dir <dir>', found.fix)
        # no group to judge: the IOMMU check says it, not the group check
        self.assertEqual([], self.named('host-iommu-group'))
        self.heal('gpu-pt-1')
        self.assertEqual([], self.named('host-iommu-off'))

    def test_a_time_sliced_vgpu_host_is_warned(self):
        self.fault('gpu-vgpu-1', 'iommu-off')
        found = self.assert_one('host-iommu-off', checks.WARNING,
                                'host gpu-vgpu-1')
        self.assertIn('work without one', found.symptom)

    def test_on_by_default_without_an_option_is_a_warning(self):
        facts = self.facts['gpu-pt-1']
        facts.iommu_cmdline = {}
        found = self.assert_one('host-iommu-off', checks.WARNING,
                                'host gpu-pt-1')
        self.assertIn('no IOMMU option', found.symptom)
        facts.iommu_cmdline = {'amd_iommu': 'on', 'iommu': 'pt'}
        self.assertEqual([], self.named('host-iommu-off'))

    def test_an_option_turning_it_off_is_said(self):
        facts = self.facts['gpu-vf-1']
        facts.iommu_active = False
        facts.iommu_cmdline = {'intel_iommu': 'off'}
        found = self.assert_one('host-iommu-off', checks.ERROR,
                                'host gpu-vf-1')
        self.assertIn('the kernel command line has intel_iommu=off',
                      found.symptom)

    def test_unreadable_is_not_judged(self):
        self.fault('gpu-pt-1', 'unreadable-cmdline')
        found = self.run_checks(names=['host-iommu-off'])
        self.assertEqual([('host-iommu-off', 'host gpu-pt-1')],
                         not_judged(found))
        self.assertIn('the kernel command line (/proc/cmdline) could not '
                      'be read', found[0].symptom)
        self.assertEqual(host_checks.UNREADABLE_FIX % {'host': 'gpu-pt-1'},
                         found[0].fix)
        facts = self.facts['gpu-pt-1']
        facts.iommu_active = None
        facts.note('iommu')
        self.assertEqual([('host-iommu-off', 'host gpu-pt-1')],
                         not_judged(self.run_checks(
                             names=['host-iommu-off'])))


class TestGpuDriver(HostChecksCase):
    def test_a_passthrough_gpu_on_nvidia_and_its_fix(self):
        self.fault('gpu-pt-1', 'gpu-on-nvidia')
        found = self.assert_one('host-gpu-driver', checks.ERROR,
                                'device gpu-pt-1 %s' % PT_GPU)
        self.assertIn('bound to nvidia, not vfio-pci', found.symptom)
        self.assertTrue(found.fix.startswith(
            'driverctl set-override %s vfio-pci' % PT_GPU), found.fix)
        self.assertIn('vfio-pci ids=10de:2331', found.fix)
        self.assertEqual(('solver',), found.pools)
        self.heal('gpu-pt-1')
        self.assertEqual([], self.named('host-gpu-driver'))

    def test_nouveau_is_an_error_no_driver_a_warning(self):
        gpu = self.facts['gpu-pt-1'].functions[PT_GPU]
        gpu.driver = 'nouveau'
        self.assert_one('host-gpu-driver', checks.ERROR,
                        'device gpu-pt-1 %s' % PT_GPU)
        gpu.driver = ''
        found = self.assert_one('host-gpu-driver', checks.WARNING,
                                'device gpu-pt-1 %s' % PT_GPU)
        self.assertIn('no driver bound', found.symptom)

    def test_a_vgpu_card_off_nvidia(self):
        card = self.facts['gpu-vgpu-1'].functions[VGPU_CARD]
        card.driver = 'vfio-pci'
        found = self.assert_one('host-gpu-driver', checks.ERROR,
                                'device gpu-vgpu-1 %s' % VGPU_CARD)
        self.assertIn('not to NVIDIA\'s vGPU host driver', found.symptom)
        self.assertIn('driverctl unset-override %s' % VGPU_CARD, found.fix)
        card.driver = 'nvidia'
        self.assertEqual([], self.named('host-gpu-driver'))

    def test_a_dangling_driver_link_is_not_judged(self):
        self.fault('gpu-pt-1', 'dangling-driver')
        found = self.run_checks(names=['host-gpu-driver'])
        self.assertEqual([('host-gpu-driver', 'device gpu-pt-1 %s'
                           % PT_GPU)], not_judged(found))
        self.assertIn('%s: the driver bound to it could not be read'
                      % PT_GPU, found[0].symptom)

    def test_unknown_ids_are_not_judged(self):
        facts = self.facts['gpu-pt-1']
        gpu = facts.functions[PT_GPU]
        gpu.vendor_id = gpu.device_id = gpu.pci_class = None
        gpu.driver = 'nvidia'
        facts.note('pci_ids', PT_GPU)
        found = self.run_checks(names=['host-gpu-driver'])
        self.assertEqual([], judged(found))
        self.assertEqual([('host-gpu-driver', 'host gpu-pt-1')],
                         not_judged(found))


class TestIommuGroup(HostChecksCase):
    def test_the_audio_function_on_snd_hda_intel_and_its_fix(self):
        self.fault('gpu-pt-1', 'audio-on-snd-hda-intel')
        found = self.assert_one('host-iommu-group', checks.ERROR,
                                'device gpu-pt-1 %s' % PT_GPU)
        self.assertIn('holds %s on snd_hda_intel' % PT_AUDIO, found.symptom)
        self.assertIn('driverctl set-override %s vfio-pci' % PT_AUDIO,
                      found.fix)
        self.assertIn('openstack gpu host render --pool solver '
                      '--extra-pci-id 10de:22ba --output-dir <dir>',
                      found.fix)
        self.heal('gpu-pt-1')
        self.assertEqual([], self.named('host-iommu-group'))

    def test_another_device_in_the_group(self):
        facts = self.facts['gpu-pt-1']
        group = facts.functions[PT_GPU].iommu_group
        facts.functions['0000:40:00.0'] = shapes.Function(
            '0000:40:00.0', '8086', '1592', '020000', 'ice', group, 0)
        found = self.assert_one('host-iommu-group', checks.ERROR,
                                'device gpu-pt-1 %s' % PT_GPU)
        self.assertIn('another device', found.fix)
        self.assertIn('openstack gpu pool remove host solver gpu-pt-1',
                      found.fix)
        # a bridge, or a member with no driver, leave it viable
        facts.functions['0000:40:00.0'].pci_class = '060400'
        self.assertEqual([], self.named('host-iommu-group'))
        facts.functions['0000:40:00.0'].pci_class = '020000'
        facts.functions['0000:40:00.0'].driver = ''
        self.assertEqual([], self.named('host-iommu-group'))

    def test_unknown_members_are_not_judged(self):
        facts = self.facts['gpu-pt-1']
        facts.note('iommu_group_members', PT_GPU)
        self.assertEqual(
            [('host-iommu-group', 'device gpu-pt-1 %s' % PT_GPU)],
            not_judged(self.run_checks(names=['host-iommu-group'])))
        facts.unreadable.clear()
        facts.functions[PT_AUDIO].driver = None
        facts.note('driver', PT_AUDIO)
        found = self.run_checks(names=['host-iommu-group'])
        self.assertEqual([], judged(found))
        self.assertIn(PT_AUDIO, found[0].symptom)


class TestStateLost(HostChecksCase):
    def test_vfs_lost_at_a_reboot_and_the_fix(self):
        self.fault('gpu-vf-1', 'vfs-lost')
        found = self.assert_one('host-state-lost', checks.ERROR,
                                'device gpu-vf-1 %s' % VF_CARD)
        self.assertIn('sriov_numvfs is 0 (of 8)', found.symptom)
        self.assertIn('Placement offers L40S-24Q x2 typed VFs',
                      found.symptom)
        self.assertTrue(found.fix.startswith(
            'openstack gpu host cordon gpu-vf-1; openstack gpu host render '
            '--pool vf --output-dir <dir>'), found.fix)
        self.assertIn('/usr/local/sbin/gpuclient-vgpu-vfs-gpu-vf-1.sh',
                      found.fix)
        # what a card lost is not a layout of its own
        self.assertEqual([], self.named('host-layout-drift'))
        self.heal('gpu-vf-1')
        self.assertEqual([], self.named('host-state-lost'))

    def test_types_lost_or_fewer_than_offered(self):
        vfs = [f for f in self.facts['gpu-vf-1'].functions.values()
               if f.vgpu_type_id]
        self.assertEqual(2, len(vfs))
        vfs[1].vgpu_type_id, vfs[1].vgpu_type = 0, None
        found = self.assert_one('host-state-lost', checks.ERROR,
                                'device gpu-vf-1 %s' % VF_CARD)
        self.assertIn('it lacks L40S-24Q x1', found.symptom)
        vfs[0].vgpu_type_id, vfs[0].vgpu_type = 0, None
        found = self.assert_one('host-state-lost', checks.ERROR,
                                'device gpu-vf-1 %s' % VF_CARD)
        self.assertIn('no VF has a vGPU type', found.symptom)

    def test_vfs_lost_where_placement_offers_none_any_more(self):
        # Nova dropped the VFs' providers: the pool's plan (the L40S-24Q's
        # two per GPU) is what the card should hold
        self.fault('gpu-vf-1', 'vfs-lost')
        for vf in host_trees.vfs(VF_CARD, 2):
            self.remove_provider('gpu-vf-1', vf, False)
        found = self.assert_one('host-state-lost', checks.ERROR,
                                'device gpu-vf-1 %s' % VF_CARD)
        self.assertIn('the pool\'s plan (gpu profile plan) puts L40S-24Q '
                      'x2', found.symptom)
        self.assertIn('openstack gpu profile plan --pool vf --demand '
                      'L40S-24Q=<count>', found.fix)

    def test_mig_vfs_lost(self):
        self.fault('gpu-mig-1', 'vfs-lost')
        found = self.assert_one('host-state-lost', checks.ERROR,
                                'device gpu-mig-1 %s' % MIG_CARD)
        self.assertIn('the VFs that carry its MIG-backed vGPUs are gone',
                      found.symptom)
        self.assertIn('/usr/local/sbin/gpuclient-mig-layout.sh', found.fix)

    def test_mig_instances_lost(self):
        card = self.facts['gpu-mig-1'].functions[MIG_CARD]
        card.gpu_instances = card.gpu_instances[:3]
        found = self.assert_one('host-state-lost', checks.ERROR,
                                'device gpu-mig-1 %s' % MIG_CARD)
        self.assertIn('it lacks 1g.10gb x4', found.symptom)
        card.gpu_instances = []
        found = self.assert_one('host-state-lost', checks.ERROR,
                                'device gpu-mig-1 %s' % MIG_CARD)
        self.assertIn('holds no GPU instance', found.symptom)
        # and with nothing offered there any more: MIG on, no instance
        for vf in host_trees.vfs(MIG_CARD, 7):
            self.remove_provider('gpu-mig-1', vf, True)
        found = self.assert_one('host-state-lost', checks.ERROR,
                                'device gpu-mig-1 %s' % MIG_CARD)
        self.assertIn('a host of mig', found.symptom)

    def test_mig_pending_loses_the_instances(self):
        self.fault('gpu-mig-1', 'mig-pending')
        found = self.assert_one('host-state-lost', checks.ERROR,
                                'device gpu-mig-1 %s' % MIG_CARD)
        self.assertIn('its MIG mode is disabled (enabled after its next '
                      'reset)', found.symptom)

    def test_mdev_type_gone(self):
        card = self.facts['gpu-vgpu-1'].functions[VGPU_CARD]
        card.mdev_types = {}
        found = self.assert_one('host-state-lost', checks.ERROR,
                                'device gpu-vgpu-1 %s' % VGPU_CARD)
        self.assertIn('offers no mdev type', found.symptom)
        self.assertIn('nvidia-vgpu-mgr', found.fix)
        card.mdev_types = {'nvidia-36': shapes.MdevType('GRID T4-4Q', 4, 0)}
        found = self.assert_one('host-state-lost', checks.ERROR,
                                'device gpu-vgpu-1 %s' % VGPU_CARD)
        self.assertIn('it lacks nvidia-35 x8', found.symptom)

    def test_unreadable_is_not_judged(self):
        self.fault('gpu-vf-1', 'garbage-vgpu-type')
        found = self.run_checks(names=['host-state-lost',
                                       'host-layout-drift'])
        self.assertEqual([], judged(found))
        self.assertEqual(
            [('host-state-lost', 'device gpu-vf-1 %s' % VF_CARD),
             ('host-layout-drift', 'device gpu-vf-1 %s' % VF_CARD)],
            not_judged(found))
        self.assertIn('0000:a1:00.4: a VF\'s vGPU type', found[0].symptom)

    def test_vfs_prometheus_has_no_series_of(self):
        # the card says 8 VFs and Prometheus holds none of them, or no VF
        # counts at all: what the card holds is not known
        facts = self.facts['gpu-vf-1']
        for address in [a for a, f in facts.functions.items()
                        if f.physfn == VF_CARD]:
            del facts.functions[address]
        found = self.run_checks(names=['host-state-lost'])
        self.assertEqual([], judged(found))
        self.assertEqual([('host-state-lost', 'device gpu-vf-1 %s'
                           % VF_CARD)], not_judged(found))
        facts.functions[VF_CARD].sriov_numvfs = None
        facts.functions[VF_CARD].sriov_totalvfs = None
        found = self.run_checks(names=['host-state-lost'])
        self.assertEqual([], judged(found))
        self.assertIn('its SR-IOV VF counts', found[0].symptom)

    def test_mig_not_read_is_not_judged(self):
        facts = self.facts['gpu-mig-1']
        card = facts.functions[MIG_CARD]
        card.mig_current = card.mig_pending = card.gpu_instances = None
        facts.note('mig_mode')
        found = self.run_checks(names=['host-state-lost'])
        self.assertEqual([], judged(found))
        self.assertEqual(1, len(not_judged(found)))
        facts.unreadable.clear()
        facts.nvidia_smi = False
        found = self.run_checks(names=['host-state-lost'])
        self.assertEqual([], judged(found))
        self.assertIn('nvidia-smi is not installed', found[0].symptom)


class TestLayoutDrift(HostChecksCase):
    def test_another_mig_layout_is_an_error(self):
        card = self.facts['gpu-mig-1'].functions[MIG_CARD]
        card.gpu_instances = [shapes.GpuInstance(1, '3g.40gb', 9, 0, 4),
                              shapes.GpuInstance(2, '3g.40gb', 9, 4, 4)]
        found = self.assert_one('host-layout-drift', checks.ERROR,
                                'device gpu-mig-1 %s' % MIG_CARD)
        self.assertIn('3g.40gb x2 are not offered, and 1g.10gb x7 are '
                      'missing', found.symptom)
        self.assertIn('openstack gpu profile plan --pool mig', found.fix)
        # one finding for the card: not also "state lost"
        self.assertEqual([], self.named('host-state-lost'))

    def test_more_than_offered_is_a_warning(self):
        for vf in host_trees.vfs(MIG_CARD, 7)[3:]:
            self.remove_provider('gpu-mig-1', vf, True)
        found = self.assert_one('host-layout-drift', checks.WARNING,
                                'device gpu-mig-1 %s' % MIG_CARD)
        self.assertIn('1g.10gb x4 are not offered', found.symptom)
        self.assertEqual([], self.named('host-state-lost'))

    def test_vfs_of_another_type(self):
        for vf in self.facts['gpu-vf-1'].functions.values():
            if vf.vgpu_type_id:
                vf.vgpu_type_id, vf.vgpu_type = 1160, 'L40S-12Q'
        found = self.assert_one('host-layout-drift', checks.ERROR,
                                'device gpu-vf-1 %s' % VF_CARD)
        self.assertIn('L40S-12Q x2 are not offered', found.symptom)


class TestMigPending(HostChecksCase):
    def test_pending_and_its_fix(self):
        self.fault('gpu-mig-1', 'mig-pending')
        found = self.assert_one('host-mig-pending', checks.WARNING,
                                'device gpu-mig-1 %s' % MIG_CARD)
        self.assertIn('is disabled and becomes enabled at its next reset',
                      found.symptom)
        self.assertIn('nvidia-smi -i %s -r' % MIG_CARD, found.fix)
        self.assertIn('nvidia-smi -i %s -mig 0' % MIG_CARD, found.fix)
        self.heal('gpu-mig-1')
        self.assertEqual([], self.named('host-mig-pending'))

    def test_modes_not_read_are_not_judged(self):
        facts = self.facts['gpu-mig-1']
        card = facts.functions[MIG_CARD]
        card.mig_current = card.mig_pending = None
        facts.note('mig_mode', MIG_CARD)
        found = self.run_checks(names=['host-mig-pending'])
        self.assertEqual([('host-mig-pending', 'host gpu-mig-1')],
                         not_judged(found))
        # a GPU without MIG (the vGPU cards: [N/A]) is nothing to judge
        self.heal('gpu-mig-1')
        self.assertIsNone(
            self.facts['gpu-vgpu-1'].functions[VGPU_CARD].mig_current)
        self.assertEqual([], self.run_checks(names=['host-mig-pending']))


class TestMdevctl(HostChecksCase):
    def test_missing_on_mdev_hosts_only(self):
        for host in ('gpu-vgpu-1', 'gpu-mig-1'):
            self.fault(host, 'mdevctl-missing')
            found = self.assert_one('host-mdevctl-missing', checks.WARNING,
                                    'host %s' % host)
            self.assertEqual('on %s: apt-get install mdevctl (dnf install '
                             'mdevctl)' % host, found.fix)
            self.heal(host)
            self.assertEqual([], self.named('host-mdevctl-missing'))
        # a vgpu-vf or passthrough host needs none
        self.facts['gpu-vf-1'].mdevctl = False
        self.facts['gpu-pt-1'].mdevctl = False
        self.assertEqual([], self.named('host-mdevctl-missing'))
        self.facts['gpu-mig-1'].mdevctl = None
        self.assertEqual(
            [('host-mdevctl-missing', 'host gpu-mig-1')],
            not_judged(self.run_checks(names=['host-mdevctl-missing'])))


class TestDriverDrift(HostChecksCase):
    def test_nvidia_driver_from_the_facts(self):
        self.add_host('gpu-vf-2', 'vgpu-vf', 'vf', 'driver-drift')
        found = self.assert_one('gpu-driver-drift', checks.WARNING,
                                'pool vf')
        self.assertIn('%s on gpu-vf-2; %s on gpu-vf-1' % (
            host_trees.OLD_DRIVER, host_trees.DRIVER), found.symptom)
        self.facts['gpu-vf-2'] = self.collect('vgpu-vf', 'gpu-vf-2')
        self.assertEqual([], self.named('gpu-driver-drift'))

    def test_kernel_libvirt_qemu(self):
        self.add_host('gpu-pt-2', 'passthrough', 'solver', versions={
            'qemu-system-x86': '1:9.0.2+ds-1', 'libvirt-daemon': None,
            'libvirt0': '10.6.0-1'})
        self.facts['gpu-pt-2'].versions[shapes.KERNEL] = shapes.Version(
            '6.8.0-50-generic', '', 'procfs')
        found = self.named('gpu-driver-drift')
        self.assertEqual(
            [(checks.WARNING, 'gpu-driver-drift', 'pool solver / %s' % c)
             for c in ('kernel', 'libvirt', 'qemu')], judged(found))
        self.assertIn('8.2.2 on gpu-pt-1; 9.0.2 on gpu-pt-2',
                      found[2].symptom)
        self.assertIn('upgrade QEMU', found[2].fix)
        # a passthrough pool's hosts load no NVIDIA driver: not judged
        self.assertNotIn('pool solver', [f.object for f in found])

    def test_a_version_not_read_is_not_judged(self):
        self.add_host('gpu-pt-2', 'passthrough', 'solver')
        facts = self.facts['gpu-pt-2']
        del facts.versions[shapes.QEMU]
        facts.note('qemu_version')
        found = self.run_checks(names=['gpu-driver-drift'])
        self.assertEqual([], judged(found))
        self.assertEqual([('gpu-driver-drift', 'pool solver / qemu')],
                         not_judged(found))
        self.assertIn('gpu-pt-2', found[0].symptom)
        self.assertEqual(checks.HOST_FACTS_FIX, found[0].fix)

    def test_dcgm_down_the_facts_judge(self):
        self.add_host('gpu-vf-2', 'vgpu-vf', 'vf', 'driver-drift')
        cloud = self.cloud()
        cloud.unread['device_health'] = 'Prometheus: HTTP 500'
        found = self.run_checks(cloud, ['gpu-driver-drift'])
        self.assertEqual([(checks.WARNING, 'gpu-driver-drift', 'pool vf')],
                         judged(found))
        self.assertEqual([('gpu-driver-drift', 'Prometheus')],
                         not_judged(found))
        self.assertEqual({}, checks.not_run(cloud, ['gpu-driver-drift']))
        # both down: a row of each, and it could not run
        cloud.host_facts = None
        cloud.unread['host_facts'] = 'Prometheus: HTTP 503'
        self.assertEqual(
            [('gpu-driver-drift', 'Prometheus'),
             ('gpu-driver-drift', 'Prometheus (host facts)')],
            not_judged(self.run_checks(cloud, ['gpu-driver-drift'])))
        self.assertEqual(
            {'gpu-driver-drift': 'Prometheus: HTTP 500; Prometheus: HTTP '
                                 '503'},
            checks.not_run(cloud, ['gpu-driver-drift']))


class TestFactsNotCurrent(HostChecksCase):
    def test_a_host_without_facts(self):
        del self.facts['gpu-pt-1']
        found = self.run_checks()
        self.assertEqual([], judged(found))
        rows = {(f.check, f.object): f for f in found}
        for name in ('host-facts-stale', 'host-iommu-off', 'host-gpu-driver',
                     'host-iommu-group', 'host-mig-pending'):
            item = rows.pop((name, '1 host(s)'))
            self.assertIn('gpu-pt-1 (no gpuclient-host-facts series: the '
                          'collector is not running there', item.symptom)
            self.assertEqual(checks.HOST_FACTS_FIX, item.fix)
            self.assertEqual(('solver',), item.pools)
        self.assertEqual({}, rows)

    def test_stale_facts_are_said_and_judged_no_more(self):
        self.fault('gpu-pt-1', 'gpu-on-nvidia', 'audio-on-snd-hda-intel')
        self.facts['gpu-pt-1'].collected_at = READ - (
            host_checks.STALE_AFTER + 1)
        found = self.run_checks()
        self.assertEqual(
            [(checks.WARNING, 'host-facts-stale', 'host gpu-pt-1')],
            judged(found))
        self.assertIn('collected 15m1s before they were read, and its '
                      'collector runs every 5m', found[0].symptom)
        self.assertIn('systemctl enable --now gpuclient-host-facts.timer',
                      found[0].fix)
        unjudged = [f for f in found if checks.is_not_judged(f)]
        self.assertTrue(unjudged)
        for item in unjudged:
            self.assertIn('see host-facts-stale', item.symptom)
        # three periods are not yet stale
        self.facts['gpu-pt-1'].collected_at = READ - host_checks.STALE_AFTER
        self.assertEqual(
            [(checks.ERROR, 'host-gpu-driver', 'device gpu-pt-1 %s' % PT_GPU),
             (checks.ERROR, 'host-iommu-group',
              'device gpu-pt-1 %s' % PT_GPU)], judged(self.run_checks()))

    def test_ages_not_known(self):
        found = self.run_checks(self.cloud(host_facts_read_at=None))
        self.assertEqual([('host-facts-stale', 'host facts')],
                         not_judged(found))
        self.facts['gpu-pt-1'].collected_at = None
        self.assertEqual(
            [('host-facts-stale', 'host gpu-pt-1')],
            not_judged(self.run_checks(names=['host-facts-stale'])))
        # a time after the read: two clocks disagree
        self.facts['gpu-pt-1'].collected_at = READ + 3600
        found = self.run_checks(names=['host-facts-stale'])
        self.assertEqual([('host-facts-stale', 'host gpu-pt-1')],
                         not_judged(found))
        self.assertIn('timedatectl', found[0].fix)

    def test_two_collectors_for_one_host(self):
        self.fault('gpu-pt-1', 'gpu-on-nvidia')
        self.facts['gpu-pt-1'].exporters = {'10.0.0.1:9100',
                                            '10.0.0.2:9100'}
        found = self.run_checks()
        self.assertEqual([], judged(found))
        self.assertIn('the series of 2 collectors, 10.0.0.1:9100 and '
                      '10.0.0.2:9100, say they are this host',
                      found[0].symptom)

    def test_facts_not_read(self):
        # Prometheus down: one row per check, naming its reason
        cloud = self.cloud(host_facts=None)
        cloud.unread['host_facts'] = 'Querying Prometheus: HTTP 500'
        found = self.run_checks(cloud, HOST_CHECKS)
        self.assertEqual([(name, 'Prometheus') for name in HOST_CHECKS],
                         not_judged(found))
        self.assertEqual({checks.PROMETHEUS_FIX}, {f.fix for f in found})
        self.assertEqual(set(HOST_CHECKS), set(checks.not_run(cloud)) & set(
            HOST_CHECKS))
        # none configured: no row, they could not run
        cloud = self.cloud(host_facts=None)
        cloud.unconfigured['host_facts'] = 'no Prometheus is configured'
        self.assertEqual([], self.run_checks(cloud, HOST_CHECKS))
        self.assertEqual(set(HOST_CHECKS), set(checks.not_run(
            cloud, HOST_CHECKS)))


class TestGarbage(HostChecksCase):
    """A series whose value its family cannot hold (the collector would
    never write it; a broken exporter or relabelling might) gives "not
    judged" at most, never a finding, on a host that is healthy."""

    def test_each_series_of_each_kind(self):
        for host, (kind, _pool) in HOSTS.items():
            facts = collector.collect(
                host_trees.write_tree(
                    os.path.join(self.work, 'garbage-' + host), kind,
                    hostname=host), now=COLLECTED)
            samples = series.samples(facts)
            for index, item in enumerate(samples):
                if item.name == series.COLLECTED.name:
                    continue
                for bad in (0.5, -7.0, float('nan')):
                    broken = list(samples)
                    broken[index] = item._replace(value=bad)
                    self.facts[host] = series.from_samples(broken)[host]
                    found = judged(self.run_checks())
                    self.assertEqual([], found, (host, item, bad))
            self.facts[host] = series.from_samples(samples)[host]

    def test_labels_that_say_nothing(self):
        facts = self.facts['gpu-vf-1']
        text = series.render(series.samples(facts)).replace(
            'vgpu_type_id="1161"', 'vgpu_type_id="L40S"')
        self.facts['gpu-vf-1'] = series.from_samples(
            series.parse_text(text))['gpu-vf-1']
        found = self.run_checks()
        self.assertEqual([], judged(found))
        self.assertIn(('host-state-lost', 'device gpu-vf-1 %s' % VF_CARD),
                      not_judged(found))


class TestPoolFilter(HostChecksCase):
    def test_findings_belong_to_their_pools(self):
        self.fault('gpu-pt-1', 'gpu-on-nvidia')
        self.fault('gpu-vf-1', 'vfs-lost')
        cloud = self.cloud()
        self.assertEqual(
            [(checks.ERROR, 'host-gpu-driver', 'device gpu-pt-1 %s'
              % PT_GPU)],
            judged(checks.run(cloud, names=ALL, pool='solver')))
        self.assertEqual(
            [(checks.ERROR, 'host-state-lost', 'device gpu-vf-1 %s'
              % VF_CARD)],
            judged(checks.run(cloud, names=ALL, pool='vf')))


class TestEveryFaultOfTheTrees(HostChecksCase):
    """Each fault host_trees seeds is found by the check named here on
    the first host of its kind, and the others stay silent or say "not
    judged" (bad input)."""

    FOUND = {
        'gpu-on-nvidia': {'passthrough': ['host-gpu-driver']},
        'audio-on-snd-hda-intel': {'passthrough': ['host-iommu-group']},
        'vfs-lost': {'vgpu-vf': ['host-state-lost'],
                     'mig': ['host-state-lost']},
        'mig-pending': {'mig': ['host-state-lost', 'host-mig-pending']},
        'driver-drift': {},
        'iommu-off': {kind: ['host-iommu-off']
                      for kind in host_trees.KINDS},
        'mdevctl-missing': {'vgpu': ['host-mdevctl-missing'],
                            'mig': ['host-mdevctl-missing']},
        'garbage-vgpu-type': {},
        'missing-numa-node': {},
        'dangling-driver': {},
        'unreadable-cmdline': {},
    }

    def test_every_fault(self):
        self.assertEqual(sorted(host_trees.FAULTS), sorted(self.FOUND))
        by_kind = {kind: host for host, (kind, _p) in HOSTS.items()}
        for fault, (kinds, _text) in sorted(host_trees.FAULTS.items()):
            for kind in kinds:
                host = by_kind[kind]
                self.fault(host, fault)
                found = self.run_checks()
                self.assertEqual(
                    sorted(self.FOUND[fault].get(kind, [])),
                    sorted({check for _s, check, _o in judged(found)}),
                    (fault, kind, [f.symptom for f in found]))
                self.heal(host)
        self.assertEqual([], self.run_checks())


class TestLayoutsOfTheFacts(HostChecksCase):
    def test_what_each_card_holds_against_placement(self):
        cloud = self.cloud()
        roots = cloud.host_roots()
        got = {}
        for host, (kind, pool) in HOSTS.items():
            if kind == 'passthrough':
                continue
            found = host_checks.layouts(
                cloud, host, self.facts[host], [pool],
                host_checks.NVIDIA_MODES, roots[host])
            got[host] = [(layout.card, dict(layout.wanted),
                          dict(layout.present), layout.lost)
                         for layout in found]
        self.assertEqual({
            'gpu-vgpu-1': [
                (card, {'nvidia-35': 8}, {'nvidia-35': 8}, None)
                for card in host_trees.GPUS['vgpu']],
            'gpu-vf-1': [(VF_CARD, {'L40S-24Q': 2}, {'L40S-24Q': 2}, None)],
            'gpu-mig-1': [(MIG_CARD, {'1g.10gb': 7}, {'1g.10gb': 7}, None)],
        }, got)

    def test_without_a_placement_tree(self):
        cloud = self.cloud()
        self.assertIsNone(host_checks.layouts(
            cloud, 'gpu-vf-1', self.facts['gpu-vf-1'], ['vf'],
            host_checks.NVIDIA_MODES, []))

    def test_facts_are_plain_data(self):
        # the checks read the facts and change none of them
        before = {h: dataclasses.asdict(f) for h, f in self.facts.items()}
        self.run_checks()
        self.assertEqual(before, {h: dataclasses.asdict(f)
                                  for h, f in self.facts.items()})
