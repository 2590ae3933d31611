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

"""``profile_ops.plan_pools`` and ``gpu profile plan --pool`` on a
time-sliced vGPU pool of the strict fake cloud of test_usage: the vGPU
host gpu-vgpu-1 (pool ws, mdev type nvidia-35, two pGPUs of 4 vGPUs)."""

import os

import fixtures
from osc_lib import exceptions

from gpuclient.ops import profile_ops
from gpuclient.rules.nova_conf import render as nova_config
from gpuclient.rules.profiles import cloud as profile_cloud
from gpuclient.tests.unit import test_usage as tu
from gpuclient.v1 import profile as profile_cmd

HOST = 'gpu-vgpu-1'
PGPUS = ('0000:84:00.0', '0000:85:00.0')
TYPES = {'A100D-20C': 'nvidia-35'}


def pgpu(address):
    return '%s_pci_%s' % (HOST, address.replace(':', '_').replace('.', '_'))


class PlanVgpuPoolTest(tu.CommandTestCase):

    def setUp(self):
        super().setUp()
        self.out = os.path.join(
            self.useFixture(fixtures.TempDir()).path, 'plan')
        # two servers on the second pGPU
        for sid in ('s1', 's2'):
            self.add_server(sid, tu.VGPU_SPEC, host=HOST,
                            devices=[pgpu(PGPUS[1])])

    def plan(self, demand, types=TYPES, **kwargs):
        return profile_ops.plan_pools(self.cm.gpu, ['ws'], demand,
                                      vgpu_types=types, **kwargs)

    def test_current_layout_and_servers_from_placement(self):
        rows, summary, notes = self.plan({'A100D-20C': 8})
        self.assertEqual([HOST, HOST], [r['host'] for r in rows])
        self.assertEqual(list(PGPUS), [r['address'] for r in rows])
        for row in rows:
            self.assertEqual('A100-80GB', row['model'])
            self.assertEqual((('A100D-20C', None),) * 4, row['current'])
            self.assertFalse(row['recut'])
        self.assertEqual([(), (('A100D-20C', None),) * 2],
                         [r['in_use'] for r in rows])
        self.assertEqual((8, 8, 0, 0), (summary['met'], summary['wanted'],
                                        summary['recut'], summary['moves']))
        self.assertEqual([], notes)

    def test_the_idle_pgpu_changes_type(self):
        rows, summary, notes = self.plan(
            {'A100D-20C': 4, 'A100D-40C': 2}, output_dir=self.out)
        # the pGPU with servers keeps its type: nobody moves
        self.assertEqual([True, False], [r['recut'] for r in rows])
        self.assertEqual((('A100D-40C', None),) * 2, rows[0]['proposed'])
        self.assertEqual([[], []], [r['servers'] for r in rows])
        self.assertEqual(0, summary['moves'])
        # no pool serves A100D-40C: said, and left out of nova.conf
        self.assertEqual(['A100D-40C'], rows[0]['unserved'])
        self.assertTrue(any('A100D-40C, which no vgpu pool serves' in n
                            for n in notes), notes)
        path = rows[0]['nova_conf']
        self.assertEqual(os.path.join(self.out, nova_config.ini_path(
            nova_config.host_target(HOST))), path)
        with open(path) as f:
            text = f.read()
        self.assertIn('[mdev_nvidia-35]\ndevice_addresses = %s\n'
                      % PGPUS[1], text)
        self.assertIn('enabled_mdev_types = nvidia-35\n', text)

    def test_a_pool_for_the_new_type(self):
        self.cloud.aggregates.append(tu.fakes.Aggregate(
            'big', tu.pools.metadata_for(tu.pools.build_spec(
                'big', 'vgpu', vgpu_type='nvidia-36',
                properties={'vgpu_profile': 'A100D-40C'})), [HOST]))
        rows, _summary, notes = self.plan({'A100D-40C': 4},
                                          output_dir=self.out)
        # both re-cut: the servers of the second must leave first, each
        # with the way gpu host drain would move it
        self.assertEqual([True, True], [r['recut'] for r in rows])
        self.assertEqual([], rows[0]['servers'])
        self.assertEqual(['s1', 's2'], [s[0] for s in rows[1]['servers']])
        self.assertEqual(['vm-s1', 'vm-s2'],
                         [s[1] for s in rows[1]['servers']])
        # no other host serves the pool: gpu host drain would shelve them
        self.assertEqual(['shelve (downtime: until unshelved)'] * 2,
                         [s[2] for s in rows[1]['servers']])
        with open(rows[0]['nova_conf']) as f:
            text = f.read()
        self.assertIn('enabled_mdev_types = nvidia-36\n', text)
        self.assertIn('[mdev_nvidia-36]\ndevice_addresses = %s\n'
                      % ','.join(PGPUS), text)
        self.assertNotIn('mdev_nvidia-35', text)
        self.assertTrue(any('Pool ws (nvidia-35, A100D-20C)' in n
                            for n in notes), notes)

    def test_with_a_mig_pool(self):
        # the MIG host's three one-VF cards and the two pGPUs, one plan
        rows, summary, _notes = profile_ops.plan_pools(
            self.cm.gpu, ['ws', 'slices'], {'A100D-20C': 8, '1g.10gb': 3},
            model='A100-80GB', vgpu_types=TYPES)
        self.assertEqual(['gpu-mig-1'] * 3 + [HOST] * 2,
                         [r['host'] for r in rows])
        self.assertEqual([(('1g.10gb', 0),)] * 3 + [
            (('A100D-20C', None),) * 4] * 2, [r['current'] for r in rows])
        self.assertEqual((11, 11, 0), (summary['met'], summary['wanted'],
                                       summary['recut']))

    def test_the_type_from_the_pool_property(self):
        ws = [a for a in self.cloud.aggregates if a.name == 'ws'][0]
        ws.metadata['vgpu_profile'] = 'A100D-20C'
        rows, _summary, _notes = self.plan({'A100D-20C': 1}, types=None)
        self.assertEqual((('A100D-20C', None),) * 4, rows[0]['current'])

    def test_refusals(self):
        e = self.assertRaises(profile_cloud.CannotTell, self.plan,
                              {'A100D-20C': 1}, types=None)
        self.assertIn('--vgpu-mdev-type <vGPU type>=nvidia-35', str(e))
        # 4 vGPUs each, and an A100D-40C GPU holds 2: 2 in use is fine,
        # a type whose GPU holds one is not
        e = self.assertRaises(ValueError, self.plan, {'A100D-80C': 1},
                              types={'A100D-80C': 'nvidia-35'})
        self.assertIn('2 vGPUs in use', str(e))
        e = self.assertRaises(exceptions.CommandError,
                              profile_ops.plan_pools, self.cm.gpu,
                              ['solver'], {'A100D-20C': 1})
        self.assertIn('passthrough pool', str(e))


class PlanVgpuCommandTest(tu.CommandTestCase):

    def test_rows(self):
        rows = self.run_cmd(profile_cmd.PlanProfile, '--pool', 'ws',
                            '--demand', 'A100D-20C=3', '--vgpu-mdev-type',
                            'a100d-20c=nvidia-35')
        self.assertEqual(
            [(HOST, a, 'A100-80GB', 'A100D-20C x4', 'A100D-20C x4')
             for a in PGPUS],
            [(r['Host'], r['Card'], r['Model'], r['Layout Now'],
              r['Layout Proposed']) for r in rows])
        self.assertEqual(3, sum(sum(r['Serves'].values()) for r in rows))

    def test_names_refused_before_any_request(self):
        before = self.requests()
        for args, text in (
                (['--vgpu-mdev-type', '3g.40gb=nvidia-35'],
                 '--mig-mdev-type 3g.40gb=nvidia-35'),
                (['--mig-mdev-type', 'A100D-20C=nvidia-35'],
                 '--vgpu-mdev-type A100D-20C=<mdev type>'),
                (['--vgpu-mdev-type', 'V100-8Q=nvidia-35'],
                 'profile list')):
            e = self.assertRaises(
                exceptions.CommandError, self.run_cmd,
                profile_cmd.PlanProfile, '--pool', 'ws', '--demand',
                'A100D-20C=1', *args)
            self.assertIn(text, str(e), args)
        self.assertEqual(before, self.requests())


VF_HOST = 'gpu-vf-1'
VF_PFS = ('0000:a1:00.0', '0000:c1:00.0')
VF_CLASS = 'CUSTOM_VGPU_L40S_24Q'


class PlanVfPoolTest(tu.CommandTestCase):
    """vgpu-vf pools big (L40S-24Q) and small (L40S-12Q) on gpu-vf-1, whose
    two L40S cards offer two 24Q VFs each (PCI in Placement: a provider
    per PF); a server holds a VF of the second card."""

    def setUp(self):
        super().setUp()
        self.out = os.path.join(
            self.useFixture(fixtures.TempDir()).path, 'plan')
        root = self.cloud.compute_host(VF_HOST)
        for address in VF_PFS:
            self.cloud.add(tu.fakes.Provider(
                '%s_%s' % (VF_HOST, address.upper()), parent=root,
                inventory={VF_CLASS: tu.fakes.inv(2)}, used={VF_CLASS: 0},
                traits=['COMPUTE_MANAGED_PCI_DEVICE']))
        for name, vgpu_type in (('big', 'L40S-24Q'), ('small', 'L40S-12Q')):
            self.cloud.aggregates.append(tu.fakes.Aggregate(
                name, tu.pools.metadata_for(tu.pools.build_spec(
                    name, 'vgpu-vf', vgpu_type=vgpu_type,
                    alias=vgpu_type.lower(), pci_id='10de:26b9',
                    live_migratable=True)), [VF_HOST]))
        self.hold('s1', '%s_%s' % (VF_HOST, VF_PFS[1].upper()), VF_CLASS)

    def test_plan_and_files(self):
        rows, summary, notes = profile_ops.plan_pools(
            self.cm.gpu, ['big', 'small'], {'L40S-12Q': 8},
            output_dir=self.out)
        self.assertEqual([], notes)
        # the card with a server keeps its type (the VF in use cannot
        # change) though 24Q is not wanted; the idle one is re-typed
        self.assertEqual(
            [(VF_HOST, VF_PFS[0], {'L40S-24Q': 2}, {'L40S-12Q': 4}, True),
             (VF_HOST, VF_PFS[1], {'L40S-24Q': 2}, {'L40S-24Q': 2}, False)],
            [(r['host'], r['address'], r['current'], r['proposed'],
              r['recut']) for r in rows])
        self.assertEqual((8, 4, 1), (summary['wanted'], summary['met'],
                                     summary['recut']))
        # one script per host, for every card: the boot redoes them all
        self.assertEqual(rows[0]['script'], rows[1]['script'])
        with open(rows[0]['script']) as f:
            script = f.read()
        self.assertIn('/usr/lib/nvidia/sriov-manage -e %s\n' % VF_PFS[0],
                      script)
        self.assertIn('set_type 0000:a1:00.7 L40S-12Q\n', script)
        self.assertIn('keep_type 0000:c1:00.5 L40S-24Q\n', script)
        self.assertTrue(os.access(rows[0]['script'], os.X_OK))
        with open(rows[0]['unit']) as f:
            self.assertIn('Before=nova-compute.service', f.read())
        with open(rows[0]['nova_conf']) as f:
            conf = f.read()
        self.assertIn('"address": "0000:c1:00.5"', conf)
        self.assertIn('"resource_class": "CUSTOM_VGPU_L40S_12Q"', conf)
        # a second run does not write over the files
        self.assertRaises(FileExistsError, profile_ops.plan_pools,
                          self.cm.gpu, ['big', 'small'], {'L40S-12Q': 4},
                          output_dir=self.out)

    def test_command_rows(self):
        rows = self.run_cmd(profile_cmd.PlanProfile, '--pool', 'big',
                            '--pool', 'small', '--demand', 'L40S-24Q=2')
        self.assertEqual(
            [(VF_HOST, a, 'L40S', 'L40S-24Q x2', 'L40S-24Q x2')
             for a in VF_PFS],
            [(r['Host'], r['Card'], r['Board'], r['VFs Now'],
              r['VFs Proposed']) for r in rows])
        self.assertEqual([{'L40S-24Q': 2}, {}], [r['Serves'] for r in rows])

    def test_refusals(self):
        for pools, demand, text in (
                (['big', 'ws'], {'L40S-24Q': 1}, 'not both in one plan'),
                (['big'], {'L40S-12Q': 1}, 'no vGPU type of the planned'),
                (['big'], {'3g.40gb': 1}, 'no vGPU type of the planned')):
            e = self.assertRaises(
                (exceptions.CommandError, ValueError),
                profile_ops.plan_pools, self.cm.gpu, pools, demand,
                vgpu_types=TYPES)
            self.assertIn(text, str(e), pools)
        e = self.assertRaises(
            exceptions.CommandError, self.run_cmd, profile_cmd.PlanProfile,
            '--pool', 'big', '--demand', 'L40S-8Q=1')
        self.assertIn('L40S-24Q', str(e))
        e = self.assertRaises(
            exceptions.CommandError, self.run_cmd, profile_cmd.PlanProfile,
            '--pool', 'big', '--from-usage', '--start', '2026-11-01')
        self.assertIn('give vgpu-vf pools a --demand', str(e))
