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

"""``openstack gpu host render`` and ``host_render_ops.render`` on the
strict fake cloud of test_usage: passthrough pool solver (gpu-pt-1),
time-sliced pool ws (gpu-vgpu-1), MIG pool slices (gpu-mig-1: three
cards of one 1g.10gb VF each), bare-metal pool metal, and here a
vgpu-vf pool desktops on gpu-vf-1 (one L40S card, two 24Q VFs)."""

import os
import stat

import fixtures
from osc_lib import exceptions
import yaml

from gpuclient.ops import host_render_ops
from gpuclient.rules import host_prep
from gpuclient.rules.profiles import vf as profile_vf
from gpuclient.tests.unit import base
from gpuclient.tests.unit import test_usage as tu
from gpuclient.v1 import host as host_cmd

COLUMNS = ('Host', 'File', 'What')
VF_HOST = 'gpu-vf-1'
VF_PF = '0000:a1:00.0'
VF_CLASS = 'CUSTOM_VGPU_L40S_24Q'


class TestRenderParser(base.CommandTestCase):

    def parser(self):
        return host_cmd.RenderHost(self.make_app(None), None)

    def test_options(self):
        self.check_parser(
            self.parser(), ['--pool', 'p', '--output-dir', 'out'],
            [('pool', 'p'), ('output_dir', 'out'),
             ('file_format', 'systemd'), ('extra_pci_ids', []),
             ('model', None), ('mig_mdev_types', {}),
             ('formatter', 'table')])
        self.check_parser(
            self.parser(),
            ['--pool', 'p', '--output-dir', 'out', '--format', 'ansible',
             '-f', 'json', '--extra-pci-id', '10de:22ba', '--extra-pci-id',
             '10de:22bb', '--model', 'A100-80GB', '--mig-mdev-type',
             '1g.10gb=nvidia-699'],
            [('file_format', 'ansible'), ('formatter', 'json'),
             ('extra_pci_ids', ['10de:22ba', '10de:22bb']),
             ('model', 'A100-80GB'),
             ('mig_mdev_types', {'1g.10gb': 'nvidia-699'})])

    def test_refusals(self):
        for args in ([], ['--pool', 'p'], ['--output-dir', 'out'],
                     ['--pool', 'p', '--output-dir', 'out', '--format',
                      'json']):
            self.assertRaises(base.ParserError, self.check_parser,
                              self.parser(), args)


class RenderTestCase(tu.CommandTestCase):

    def setUp(self):
        super().setUp()
        self.out = os.path.join(
            self.useFixture(fixtures.TempDir()).path, 'render')

    def render(self, pool, *args):
        return self.run_cmd(host_cmd.RenderHost, '--pool', pool,
                            '--output-dir', self.out, *args)

    def read(self, *parts):
        with open(os.path.join(self.out, *parts)) as f:
            return f.read()

    def written(self):
        """Every file under the output directory, relative paths."""
        found = []
        for top, _dirs, names in os.walk(self.out):
            found += [os.path.relpath(os.path.join(top, n), self.out)
                      for n in names]
        return sorted(found)


class TestRenderModes(RenderTestCase):

    def test_passthrough_reads_no_placement(self):
        placement = len(self.placement.mock.request_history)
        rows = self.render('solver')
        self.assertEqual(placement, len(self.placement.mock.request_history))
        paths = [os.path.join('gpu-pt-1', p) for p in (
            host_prep.GRUB_FILE, host_prep.BLACKLIST_FILE,
            host_prep.VFIO_FILE, host_prep.MODULES_FILE)]
        self.assertEqual([('gpu-pt-1', os.path.join(self.out, p))
                          for p in paths],
                         [(r['Host'], r['File']) for r in rows])
        self.assertEqual(sorted(paths), self.written())
        self.assertIn('options vfio-pci ids=10de:2331\n',
                      self.read('gpu-pt-1', host_prep.VFIO_FILE))
        self.assertEqual('vfio-pci ids=10de:2331, softdeps', rows[2]['What'])
        self.assertIn('Nothing was applied', self.logger.output)

    def test_time_sliced(self):
        rows = self.render('ws')
        self.assertEqual(
            [os.path.join('gpu-vgpu-1', host_prep.GRUB_FILE),
             os.path.join('gpu-vgpu-1', host_prep.BLACKLIST_FILE)],
            [os.path.relpath(r['File'], self.out) for r in rows])
        self.assertIn('Nova creates the mediated devices itself',
                      self.logger.output)

    def test_mig_layout_from_placement(self):
        rows = self.render('slices', '--model', 'A100-80GB')
        self.assertEqual(
            sorted(os.path.join('gpu-mig-1', p) for p in (
                host_prep.GRUB_FILE, host_prep.BLACKLIST_FILE,
                host_prep.MIG_CONFIG_FILE, host_prep.MIG_SCRIPT_FILE,
                host_prep.MIG_UNIT_FILE)), self.written())
        config = yaml.safe_load(self.read('gpu-mig-1',
                                          host_prep.MIG_CONFIG_FILE))
        self.assertEqual(
            [{'devices': [i], 'mig-enabled': True,
              'mig-devices': {'1g.10gb': 1}} for i in range(3)],
            config['mig-configs']['gpuclient'])
        script = os.path.join(self.out, 'gpu-mig-1',
                              host_prep.MIG_SCRIPT_FILE)
        self.assertTrue(os.stat(script).st_mode & stat.S_IXUSR)
        self.assertIn('ExecStart=/%s\n' % host_prep.MIG_SCRIPT_FILE,
                      self.read('gpu-mig-1', host_prep.MIG_UNIT_FILE))
        self.assertIn('0000:84:00.0 1g.10gb x1', [
            r['What'] for r in rows
            if r['File'].endswith(host_prep.MIG_CONFIG_FILE)][0])
        self.assertIn('gpu profile plan --pool slices --output-dir',
                      self.logger.output)

    def test_mig_model_needed(self):
        e = self.assertRaises(exceptions.CommandError, self.render,
                              'slices')
        self.assertIn('--model', str(e))
        self.assertEqual([], self.written())

    def test_mig_ansible(self):
        self.render('slices', '--model', 'A100-80GB', '--format', 'ansible',
                    '--mig-mdev-type', '1g.10gb=nvidia-699')
        self.assertEqual(['host_vars/gpu-mig-1.yml'], self.written())
        data = yaml.safe_load(self.read('host_vars', 'gpu-mig-1.yml'))
        self.assertEqual(
            [{'pci_address': '0000:%02x:00.0' % bus,
              'mig_devices': {'1g.10gb': 1}} for bus in (0x84, 0x85, 0x86)],
            [{k: v for k, v in d.items() if k != 'virtual_functions'}
             for d in data['vgpu_definitions']])
        # the fake's cards are their own only device (a PF address, not a
        # VF behind it): no VF index, said
        self.assertNotIn('virtual_functions', data['vgpu_definitions'][0])
        self.assertIn('no virtual_functions', self.logger.output)

    def test_passthrough_ansible(self):
        rows = self.render('solver', '--format', 'ansible',
                           '--extra-pci-id', '10DE:22BA')
        self.assertEqual([('gpu-pt-1', os.path.join(
            self.out, 'host_vars', 'gpu-pt-1.yml'))],
            [(r['Host'], r['File']) for r in rows])
        data = yaml.safe_load(self.read('host_vars', 'gpu-pt-1.yml'))
        self.assertEqual(['10de:2331', '10de:22ba'],
                         data['gpuclient_vfio_pci_ids'])
        self.assertTrue(data['iommu_pt'])

    def test_bare_metal_refused_before_placement(self):
        placement = len(self.placement.mock.request_history)
        e = self.assertRaises(exceptions.CommandError, self.render, 'metal')
        self.assertIn('bare-metal pool', str(e))
        self.assertEqual(placement, len(self.placement.mock.request_history))
        self.assertFalse(os.path.exists(self.out))

    def test_refused_before_any_request(self):
        before = self.requests()
        for args, text in (
                (['--extra-pci-id', '10de'], 'Invalid PCI id'),
                (['--model', 'V100'], 'Unknown GPU model'),
                (['--mig-mdev-type', 'A100D-20C=nvidia-35'],
                 '--vgpu-mdev-type')):
            e = self.assertRaises(exceptions.CommandError, self.render,
                                  'slices', *args)
            self.assertIn(text, str(e), args)
        self.assertEqual(before, self.requests())

    def test_options_of_another_mode(self):
        e = self.assertRaises(exceptions.CommandError, self.render,
                              'ws', '--extra-pci-id', '10de:22ba')
        self.assertIn('goes with passthrough pools', str(e))
        e = self.assertRaises(exceptions.CommandError, self.render,
                              'slices', '--model', 'A100-80GB',
                              '--mig-mdev-type', '1g.10gb=nvidia-699')
        self.assertIn('--format ansible', str(e))

    def test_unknown_pool(self):
        e = self.assertRaises(exceptions.CommandError, self.render, 'nope')
        self.assertIn('nope', str(e))


class TestRenderSafety(RenderTestCase):

    def test_an_existing_file_is_never_overwritten(self):
        target = os.path.join(self.out, 'gpu-pt-1', host_prep.VFIO_FILE)
        os.makedirs(os.path.dirname(target))
        with open(target, 'w') as f:
            f.write('mine\n')
        e = self.assertRaises(exceptions.CommandError, self.render,
                              'solver')
        self.assertIn('%s exists already' % target, str(e))
        # nothing else was written, and the file is as it was
        self.assertEqual([os.path.join('gpu-pt-1', host_prep.VFIO_FILE)],
                         self.written())
        self.assertEqual('mine\n', self.read('gpu-pt-1',
                                             host_prep.VFIO_FILE))

    def test_a_second_run_into_the_same_directory(self):
        self.render('solver')
        before = self.written()
        self.assertRaises(exceptions.CommandError, self.render, 'solver')
        self.assertEqual(before, self.written())

    def test_a_host_name_cannot_leave_the_directory(self):
        files = [host_prep.HostFile('x', '../escape', 'text\n', 0o644, '')]
        self.assertRaises(exceptions.CommandError,
                          host_render_ops.write_files, self.out, files)
        self.assertFalse(os.path.exists(os.path.join(
            os.path.dirname(self.out), 'escape')))

    def test_a_write_that_fails_names_what_is_left(self):
        # the second host's directory cannot be made (a file is there):
        # the error names the file written before it, which stays
        os.makedirs(self.out, exist_ok=True)
        with open(os.path.join(self.out, 'h2'), 'w'):
            pass
        files = [host_prep.HostFile('h', 'h/a.conf', 'x\n', 0o644, ''),
                 host_prep.HostFile('h2', 'h2/b.conf', 'y\n', 0o644, '')]
        error = self.assertRaises(OSError, host_render_ops.write_files,
                                  self.out, files)
        first = os.path.join(self.out, 'h', 'a.conf')
        self.assertIn('Writing %s failed' % os.path.join(
            self.out, 'h2', 'b.conf'), str(error))
        self.assertIn('left as they are: %s.' % first, str(error))
        self.assertTrue(os.path.isfile(first))

    def test_modes_and_directories(self):
        files = [host_prep.HostFile('h', 'h/a/b/run.sh', '#!/bin/sh\n',
                                    0o755, ''),
                 host_prep.HostFile('h', 'h/c.conf', 'x\n', 0o644, '')]
        paths = host_render_ops.write_files(self.out, files)
        self.assertEqual([os.path.join(self.out, 'h', 'a', 'b', 'run.sh'),
                          os.path.join(self.out, 'h', 'c.conf')], paths)
        self.assertEqual([0o755, 0o644],
                         [stat.S_IMODE(os.stat(p).st_mode) for p in paths])


class TestRenderVf(RenderTestCase):

    reserved = 0

    def setUp(self):
        super().setUp()
        root = self.cloud.compute_host(VF_HOST)
        self.cloud.add(tu.fakes.Provider(
            '%s_%s' % (VF_HOST, VF_PF.upper()), parent=root,
            inventory={VF_CLASS: tu.fakes.inv(2, reserved=self.reserved)},
            used={VF_CLASS: 0}, traits=['COMPUTE_MANAGED_PCI_DEVICE']))
        self.cloud.aggregates.append(tu.fakes.Aggregate(
            'desktops', tu.pools.metadata_for(tu.pools.build_spec(
                'desktops', 'vgpu-vf', vgpu_type='L40S-24Q',
                alias='l40s-24q', pci_id='10de:26b9')), [VF_HOST]))

    def test_the_vf_script_and_unit_of_profile_plan(self):
        self.render('desktops')
        script = os.path.join(VF_HOST, host_prep.SCRIPT_DIR,
                              profile_vf.script_name(VF_HOST))
        unit = os.path.join(VF_HOST, host_prep.UNIT_DIR,
                            profile_vf.unit_name(VF_HOST))
        self.assertEqual(sorted([
            os.path.join(VF_HOST, host_prep.GRUB_FILE),
            os.path.join(VF_HOST, host_prep.BLACKLIST_FILE), script, unit]),
            self.written())
        text = self.read(script)
        self.assertIn('/usr/lib/nvidia/sriov-manage -e %s\n' % VF_PF, text)
        self.assertIn('keep_type 0000:a1:00.4 L40S-24Q\n', text)
        self.assertIn('keep_type 0000:a1:00.5 L40S-24Q\n', text)
        self.assertNotIn('\nset_type ', text)
        self.assertIn('ExecStart=/usr/local/sbin/%s\n'
                      % profile_vf.script_name(VF_HOST), self.read(unit))

    def test_ansible(self):
        self.render('desktops', '--format', 'ansible')
        data = yaml.safe_load(self.read('host_vars', VF_HOST + '.yml'))
        for item in data['gpuclient_files']:
            self.assertTrue(os.path.isfile(os.path.join(self.out,
                                                        item['src'])))
        self.assertEqual(['/usr/local/sbin/%s'
                          % profile_vf.script_name(VF_HOST),
                          '/etc/systemd/system/%s'
                          % profile_vf.unit_name(VF_HOST)],
                         [i['dest'] for i in data['gpuclient_files']])


class TestRenderReservedVf(TestRenderVf):
    """An operator reserved one of the two VFs in Placement: it still has
    its type on the host, and keeps it at boot (the inventory total, not
    Placement's capacity, counts the VFs, as gpu config show counts
    them)."""

    reserved = 1
