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

"""``openstack gpu config show`` over a fake cloud."""

import io
import json
import os
from unittest import mock

import fixtures
from osc_lib import exceptions

from gpuclient.ops import pool_ops
from gpuclient.ops import snapshot
from gpuclient.rules.nova_conf import parse
from gpuclient.tests.unit import base
from gpuclient.tests.unit import fakes
from gpuclient.tests.unit import test_pool_ops
from gpuclient.v1 import config as config_cmd

VF_CLASS = 'CUSTOM_VGPU_L40S_24Q'


class ConfigTestCase(test_pool_ops.PoolOpsTestCase, base.CommandTestCase):
    def setUp(self):
        super().setUp()
        pool_ops.create(self.client, self.spec(), ['gpu-pt-1'])
        pool_ops.create(self.client, self.spec('ws', 'vgpu', isolate=True),
                        ['gpu-vgpu-1'])
        self.out = self.useFixture(fixtures.TempDir()).path

    def run_cmd(self, *args, cls=config_cmd.ShowConfig):
        cm = mock.Mock()
        cm.gpu = self.client
        app = self.make_app(cm)
        self.stdout = app.stdout = io.StringIO()
        cmd = cls(app, None)
        parsed = self.check_parser(cmd, list(args))
        rc = cmd.take_action(parsed)
        if cls is config_cmd.ExportConfig:
            return rc
        return rc, self.stdout.getvalue()


class TestParser(ConfigTestCase):
    def test_defaults(self):
        cmd = config_cmd.ShowConfig(self.make_app(None), None)
        self.check_parser(cmd, [], [
            ('pool', []), ('host', []), ('layout', 'ini'),
            ('output_dir', None), ('diff', None), ('mig_mdev_types', {}),
            ('numa_policy', 'preferred')])

    def test_bad_layout(self):
        cmd = config_cmd.ShowConfig(self.make_app(None), None)
        self.assertRaises(base.ParserError, self.check_parser, cmd,
                          ['--layout', 'yaml'])

    def test_layout_metavar_and_choices_in_help(self):
        cmd = config_cmd.ShowConfig(self.make_app(None), None)
        text = cmd.get_parser('openstack gpu config show').format_help()
        self.assertIn('--layout <layout>', text)
        self.assertNotIn('{ini,kolla}', text)
        self.assertIn('ini or kolla', ' '.join(text.split()))

    def test_every_option_has_help(self):
        for cls in (config_cmd.ShowConfig, config_cmd.ExportConfig):
            parser = cls(self.make_app(None), None).get_parser('x')
            for action in parser._actions:
                self.assertTrue(action.help, action.dest)

    def test_export_needs_output_dir_and_shares_the_selection(self):
        cmd = config_cmd.ExportConfig(self.make_app(None), None)
        self.assertRaises(base.ParserError, self.check_parser, cmd, [])
        self.check_parser(cmd, ['--output-dir', 'd'], [
            ('pool', []), ('host', []), ('layout', 'ini'),
            ('output_dir', 'd'), ('mig_mdev_types', {}),
            ('numa_policy', 'preferred')])
        # export writes, it does not compare
        self.assertRaises(base.ParserError, self.check_parser, cmd,
                          ['--output-dir', 'd', '--diff', 'x'])
        show = config_cmd.ShowConfig(self.make_app(None), None)
        shown = {a.dest for a in show.get_parser('x')._actions}
        exported = {a.dest for a in cmd.get_parser('x')._actions}
        # -f/-c and the rest of a Lister's output options, and no --diff
        self.assertEqual({'diff'}, shown - exported)
        self.assertIn('formatter', exported)

    def test_show_output_dir_is_deprecated_in_help(self):
        text = ' '.join(config_cmd.ShowConfig(
            self.make_app(None), None).get_parser('x').format_help().split())
        self.assertIn('--output-dir <directory> Deprecated: use "openstack '
                      'gpu config export', text)


class TestShow(ConfigTestCase):
    def test_ini_from_the_cloud(self):
        rc, text = self.run_cmd()
        self.assertEqual(0, rc)
        ini = parse.parse_ini(text)
        # the pGPU addresses come from the provider names in Placement
        self.assertEqual(['0000:84:00.0,0000:85:00.0'],
                         ini['mdev_nvidia-35']['device_addresses'])
        self.assertEqual(['nvidia-35'],
                         ini['devices']['enabled_mdev_types'])
        self.assertEqual(['true'], ini['scheduler'][
            'enable_isolated_aggregate_filtering'])
        self.assertIn('"name": "h100"', ini['pci']['alias'][0])
        self.assertIn('# gpuclient: nova-compute on gpu-pt-1', text)

    def test_one_pool_one_host(self):
        _rc, text = self.run_cmd('--pool', 'ws', '--host', 'gpu-vgpu-1')
        self.assertNotIn('[pci]', text)
        self.assertNotIn('PciPassthroughFilter', text)
        self.assertIn('[mdev_nvidia-35]', text)

    def test_unknown_pool(self):
        error = self.assertRaises(exceptions.CommandError, self.run_cmd,
                                  '--pool', 'nope')
        self.assertIn('No GPU pool named nope', str(error))

    def test_host_not_in_pools(self):
        error = self.assertRaises(exceptions.CommandError, self.run_cmd,
                                  '--pool', 'ws', '--host', 'gpu-pt-1')
        self.assertIn('gpu-pt-1 is in none of the pools', str(error))

    def test_bad_mig_type(self):
        for text in ('3g.40gb', '3g.40gb=', '=nvidia-700', ' = '):
            error = self.assertRaises(base.ParserError, self.run_cmd,
                                      '--mig-mdev-type', text)
            self.assertIn(
                'argument --mig-mdev-type: %r: give <profile>=<mdev-type>, '
                'e.g. 3g.40gb=nvidia-700 (the type name in ' % text,
                str(error))

    def test_mig_types_parsed(self):
        cmd = config_cmd.ShowConfig(self.make_app(None), None)
        self.check_parser(cmd, [
            '--mig-mdev-type', ' 3g.40gb = nvidia-700', '--mig-mdev-type',
            '1g.10gb=nvidia-699', '--mig-mdev-type', '1g.10gb=nvidia-701'],
            [('mig_mdev_types', {'3g.40gb': 'nvidia-700',
                                 '1g.10gb': 'nvidia-701'})])

    def test_kolla_output_dir_and_diff(self):
        rc, text = self.run_cmd('--layout', 'kolla', '--output-dir',
                                self.out)
        self.assertEqual(0, rc)
        written = text.split()
        self.assertEqual(sorted(os.path.join(self.out, p) for p in (
            'nova.conf', 'nova/nova-scheduler.conf',
            'nova/gpu-pt-1/nova.conf', 'nova/gpu-vgpu-1/nova.conf')),
            sorted(written))
        with open(os.path.join(self.out, 'nova/gpu-pt-1/nova.conf')) as f:
            self.assertIn('report_in_placement = true', f.read())
        # what it wrote has everything
        rc, text = self.run_cmd('--diff', self.out)
        self.assertEqual((0, True), (rc, 'no differences' in text))
        # never overwrites
        error = self.assertRaises(exceptions.CommandError, self.run_cmd,
                                  '--layout', 'kolla', '--output-dir',
                                  self.out)
        self.assertIn('does not overwrite', str(error))
        # a host file lost: its keys are missing, exit 1
        os.unlink(os.path.join(self.out, 'nova/gpu-vgpu-1/nova.conf'))
        rc, text = self.run_cmd('--diff', self.out)
        self.assertEqual(1, rc)
        self.assertIn('+ [mdev_nvidia-35] device_addresses = '
                      '0000:84:00.0,0000:85:00.0', text)
        self.assertNotIn('gpu-pt-1', text)

    def test_export_lists_the_files_written(self):
        columns, rows = self.run_cmd('--layout', 'kolla', '--output-dir',
                                     self.out, cls=config_cmd.ExportConfig)
        self.assertEqual(('Path',), columns)
        self.assertEqual(sorted((os.path.join(self.out, p),) for p in (
            'nova.conf', 'nova/nova-scheduler.conf',
            'nova/gpu-pt-1/nova.conf', 'nova/gpu-vgpu-1/nova.conf')),
            sorted(rows))
        # nothing on stdout but what cliff formats from the rows
        self.assertEqual('', self.stdout.getvalue())
        # the same files as show renders, and --diff agrees
        rc, text = self.run_cmd('--diff', self.out)
        self.assertEqual((0, True), (rc, 'no differences' in text))
        error = self.assertRaises(
            exceptions.CommandError, self.run_cmd, '--layout', 'kolla',
            '--output-dir', self.out, cls=config_cmd.ExportConfig)
        self.assertIn('does not overwrite', str(error))

    def test_host_names_never_leave_the_directory(self):
        # a compute host named like a path: its files stay inside
        self.cloud.pci_host('../../evil')
        agg = [a for a in self.cloud.aggregates if a.name == 'solver'][0]
        agg.hosts.append('../../evil')
        self.cloud.mirror()
        for layout in ('kolla', 'ini'):
            out = os.path.join(self.out, layout, 'a', 'b')
            _columns, rows = self.run_cmd(
                '--layout', layout, '--output-dir', out,
                cls=config_cmd.ExportConfig)
            found = sorted(os.path.join(top, name)
                           for top, _dirs, names in os.walk(self.out)
                           for name in names)
            self.assertEqual(sorted(r[0] for r in rows), found)
            for path in found:
                self.assertTrue(path.startswith(out + os.sep), path)
            self.assertIn(os.path.join(out, {
                'kolla': 'nova/_.._evil/nova.conf',
                'ini': 'nova-compute-_.._evil.conf'}[layout]), found)
            if layout == 'kolla':  # --diff reads the same files back
                rc, text = self.run_cmd('--diff', out)
                self.assertEqual((0, True), (rc, 'no differences' in text))
            for path in found:
                os.unlink(path)

    def test_a_path_out_of_the_directory_is_refused(self):
        from gpuclient.ops import config_ops
        for path in ('../x', '/etc/x', 'a/../../x', '.'):
            self.assertRaises(exceptions.CommandError, config_ops.inside,
                              self.out, path)
        self.assertEqual(os.path.join(self.out, 'nova/h/nova.conf'),
                         config_ops.inside(self.out, 'nova/h/nova.conf'))

    def test_export_ini_layout(self):
        _columns, rows = self.run_cmd('--pool', 'ws', '--output-dir',
                                      self.out, cls=config_cmd.ExportConfig)
        self.assertEqual(sorted(
            (os.path.join(self.out, p),) for p in (
                'nova-scheduler.conf', 'nova-compute-gpu-vgpu-1.conf')),
            sorted(rows))

    def test_show_output_dir_still_writes_and_warns(self):
        with self.assertLogs(config_cmd.LOG.name, 'WARNING') as logs:
            rc, text = self.run_cmd('--output-dir', self.out)
        self.assertEqual(0, rc)
        self.assertTrue(text.split())
        for path in text.split():
            self.assertTrue(os.path.isfile(path), path)
        self.assertIn('"openstack gpu config show --output-dir" is '
                      'deprecated and will be removed: run "openstack gpu '
                      'config export --output-dir %s"' % self.out,
                      ' '.join(logs.output))

    def test_diff_one_file_for_one_host(self):
        path = os.path.join(self.out, 'nova.conf')
        with open(path, 'w') as f:
            f.write('[pci]\nreport_in_placement = false\n')
        rc, text = self.run_cmd('--diff', path, '--host', 'gpu-pt-1')
        self.assertEqual(1, rc)
        self.assertIn('- [pci] report_in_placement = false', text)
        self.assertIn('+ [pci] device_spec = ', text)
        error = self.assertRaises(
            exceptions.CommandError, self.run_cmd, '--diff',
            os.path.join(self.out, 'missing.conf'))
        self.assertIn('Cannot read', str(error))

    def test_diff_kolla_checks_every_controller(self):
        """pci_in_placement only in nova-scheduler's file: nova-api and
        nova-conductor lack it (Nova reads it in all three)."""
        rc, _text = self.run_cmd('--layout', 'kolla', '--output-dir',
                                 self.out)
        self.assertEqual(0, rc)
        every = os.path.join(self.out, 'nova.conf')
        with open(every) as f:
            text = f.read()
        self.assertIn('pci_in_placement = true', text)
        with open(every, 'w') as f:
            f.write(text.replace('pci_in_placement = true\n', ''))
        with open(os.path.join(self.out, 'nova/nova-scheduler.conf'),
                  'a') as f:
            f.write('[filter_scheduler]\npci_in_placement = true\n')
        rc, text = self.run_cmd('--diff', self.out)
        self.assertEqual(1, rc)
        blocks = text.split('\n\n')
        lacking = [b.splitlines()[0] for b in blocks
                   if '+ [filter_scheduler] pci_in_placement = true' in b]
        self.assertEqual(2, len(lacking), text)
        self.assertIn('# nova-api (', lacking[0])
        self.assertIn('# nova-conductor (', lacking[1])
        self.assertNotIn('# nova-scheduler', text)

    def test_one_snapshot_and_constant_requests(self):
        """One snapshot.read, whatever the number of pool hosts; no other
        Placement request."""
        read = mock.Mock(wraps=snapshot.read)
        self.useFixture(fixtures.MockPatchObject(snapshot, 'read', read))
        self.useFixture(fixtures.MockPatchObject(
            snapshot, 'read_aggregates',
            side_effect=AssertionError('read_aggregates used')))
        counts = []
        for extra in (0, 6):
            for i in range(extra):
                self.cloud.vgpu_host('vg-%d' % i)
                self.cloud.aggregates[-1].hosts.append('vg-%d' % i)
            before = len(self.placement.requests())
            rc, text = self.run_cmd()
            self.assertEqual(0, rc)
            counts.append(len(self.placement.requests()) - before)
        self.assertEqual(2, read.call_count)
        self.assertEqual(counts[0], counts[1])
        self.assertTrue(read.call_args.kwargs['with_flavors'])
        self.assertIn('# gpuclient: nova-compute on vg-5', text)

    def test_alias_policy_from_the_pool_flavors(self):
        self.cloud.add_flavor('pt.req', extra_specs={
            'pci_passthrough:alias': 'h100:1',
            'hw:pci_numa_affinity_policy': 'required'})
        _rc, text = self.run_cmd()
        ini = parse.parse_ini(text)
        self.assertIn('"numa_policy": "required"', ini['pci']['alias'][0])
        self.assertNotIn('is assumed', text)

    def vf_card(self, total, reserved):
        """A host with one L40S card whose VFs carry L40S-24Q (PCI in
        Placement: one provider per PF, one unit per VF), in a vgpu-vf
        pool; (root, card provider)."""
        root = self.cloud.compute_host('gpu-vf-1')
        card = self.cloud.add(fakes.Provider(
            'gpu-vf-1_0000:A1:00.0', parent=root, inventory={
                VF_CLASS: fakes.inv(total, reserved=reserved)}))
        pool_ops.create(self.client, self.spec(
            'vf', 'vgpu-vf', vgpu_type='L40S-24Q', alias='l40s-24q',
            pci_id='10de:26b9'), ['gpu-vf-1'])
        return root, card

    def test_a_reserved_vf_keeps_its_device_spec(self):
        """Issue 51 defect 6: a VF the operator reserved in Placement is
        still in the device_spec (the inventory's total, not Placement's
        capacity); one inventory read per device provider of the VF
        host, none for the other pools' hosts."""
        root, card = self.vf_card(total=4, reserved=1)
        self.assertEqual(3, card.capacity(VF_CLASS))
        before = len(self.placement.requests())
        _rc, text = self.run_cmd('--pool', 'vf')
        ini = parse.parse_ini(text)
        self.assertEqual(
            ['0000:a1:00.4', '0000:a1:00.5', '0000:a1:00.6',
             '0000:a1:00.7'],
            [json.loads(spec)['address']
             for spec in ini['pci']['device_spec']])
        read = [r.path for r in self.placement.requests()[before:]
                if r.path.endswith('/inventories')]
        self.assertEqual(['/resource_providers/%s/inventories' % card.uuid],
                         read)
        self.assertNotIn(root.uuid, ' '.join(read))

    def test_host_by_hypervisor_name_says_so(self):
        with self.assertLogs(config_cmd.LOG.name, 'WARNING') as logs:
            _rc, text = self.run_cmd('--host', 'gpu-pt-1.test')
        self.assertIn('# gpuclient: nova-compute on gpu-pt-1', text)
        self.assertNotIn('gpu-vgpu-1', text)
        self.assertIn('using gpu-pt-1', ' '.join(logs.output))

    def test_diff_and_output_dir_refused(self):
        error = self.assertRaises(exceptions.CommandError, self.run_cmd,
                                  '--diff', self.out, '--output-dir',
                                  self.out)
        self.assertIn('--diff and --output-dir do not go together',
                      str(error))
