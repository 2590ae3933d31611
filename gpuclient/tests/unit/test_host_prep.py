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

"""``rules.host_prep``: the files of ``gpu host render``, per pool mode and
format, with plain data (pools as ``pools.scan`` reads them back from
their aggregates, device providers as ``trees_from_snapshot`` gives
them). The scripts and the GRUB drop-in are run here too, against stand-ins
for the host's tools, and the units go through ``systemd-analyze
verify``."""

import os
import shutil
import stat
import subprocess
import tempfile

import fixtures
from osc_lib import exceptions
import yaml

from gpuclient.rules import host_prep
from gpuclient.rules import pools as pools_mod
from gpuclient.rules.nova_conf import render as nova_config
from gpuclient.rules.profiles import cloud as profile_cloud
from gpuclient.rules.profiles import vf as profile_vf
from gpuclient.tests.unit import base
from gpuclient.tests.unit import test_systemd_units

HOST = 'gpu-1'
MIG_A = '0000:41:00.0'
MIG_B = '0000:61:00.0'
PT_CARD = '0000:51:00.0'
PGPU = '0000:71:00.0'
VF_PF = '0000:a1:00.0'
SMALL = 'CUSTOM_MIG_1G10GB'
LARGE = 'CUSTOM_MIG_3G40GB'
VF_CLASS = 'CUSTOM_VGPU_L40S_24Q'


def pool(name, mode, hosts=(HOST,), **options):
    spec = pools_mod.build_spec(name, mode, **options)
    return pools_mod.pool_from_aggregate({
        'name': name, 'metadata': pools_mod.metadata_for(spec),
        'hosts': list(hosts), 'id': 1, 'uuid': 'agg-' + name})


def by_name(*items):
    return {p['name']: p for p in items}


def libvirt_device(address, resources, traits=(), host=HOST):
    """A device provider named as libvirt names a pGPU or VF."""
    name = '%s_pci_%s' % (host, address.replace(':', '_').replace('.', '_'))
    return {'uuid': 'rp-' + address, 'name': name, 'root_name': host,
            'address': nova_config.pci_address(name, host),
            'resources': dict(resources), 'traits': set(traits)}


def pci_device(address, resources, host=HOST):
    """A device provider of PCI in Placement (a whole GPU, or a PF whose
    VFs Nova groups under it)."""
    name = '%s_%s' % (host, address.upper())
    return {'uuid': 'rp-' + address, 'name': name, 'root_name': host,
            'address': nova_config.pci_address(name, host),
            'resources': dict(resources), 'traits': set()}


def unit_settings(text):
    """[(section, key, value)] of a unit's TEXT
    (``test_systemd_units.unit_settings``, from text)."""
    work = tempfile.mkdtemp(prefix='gpuclient-unit-')
    try:
        path = os.path.join(work, 'x.service')
        with open(path, 'w') as f:
            f.write(text)
        return test_systemd_units.unit_settings(path)
    finally:
        shutil.rmtree(work, True)


def files_of(found):
    """{path: HostFile} of host_prep's files."""
    files, _notes = found
    return {f.path: f for f in files}


class TestRefusals(base.TestCase):

    def test_baremetal_is_refused_naming_ironic(self):
        metal = pool('metal', pools_mod.BAREMETAL,
                     resource_class='baremetal.gpu-h100')
        e = self.assertRaises(exceptions.CommandError, host_prep.pool_files,
                              metal, by_name(metal), None)
        self.assertIn('bare-metal pool', str(e))
        self.assertIn('Ironic', str(e))

    def test_what_cannot_be_rendered(self):
        solver = pool('solver', pools_mod.PASSTHROUGH, alias='h100',
                      pci_id='10de:2331')
        empty = pool('empty', pools_mod.VGPU, hosts=(),
                     vgpu_type='nvidia-35')
        slices = pool('slices', pools_mod.MIG, mig_profile='1g.10gb')
        cases = (
            (empty, host_prep.Options(), 'holds no host'),
            (solver, host_prep.Options(file_format='puppet'),
             '--format puppet: give one of systemd, ansible'),
            (slices, host_prep.Options(extra_pci_ids=('10de:22ba',)),
             '--extra-pci-id binds functions to vfio-pci'),
            (solver, host_prep.Options(model='A100-80GB'),
             '--model tells the model of a mig pool'),
            (slices, host_prep.Options(mig_types={'1g.10gb': 'nvidia-699'}),
             'it goes with --format ansible and a mig pool'),
        )
        for item, options, text in cases:
            e = self.assertRaises(exceptions.CommandError,
                                  host_prep.check_request, item, options)
            self.assertIn(text, str(e))

    def test_mig_type_names(self):
        self.assertEqual({'1g.10gb': 'nvidia-699'},
                         host_prep.mig_type_map({'1G.10GB': ' nvidia-699'}))
        self.assertRaises(ValueError, host_prep.mig_type_map,
                          {'A100D-20C': 'nvidia-35'})


class TestPassthrough(base.TestCase):

    def setUp(self):
        super().setUp()
        self.solver = pool('solver', pools_mod.PASSTHROUGH, alias='h100',
                           pci_id='10DE:2331')

    def render(self, pools=None, **options):
        pools = pools or by_name(self.solver)
        return host_prep.pool_files(self.solver, pools, None,
                                    host_prep.Options(**options))

    def test_the_seeds_recipe(self):
        files, notes = self.render()
        found = {f.path: f for f in files}
        self.assertEqual(sorted(HOST + '/' + p for p in (
            host_prep.GRUB_FILE, host_prep.BLACKLIST_FILE,
            host_prep.VFIO_FILE, host_prep.MODULES_FILE)), sorted(found))
        vfio = found[HOST + '/' + host_prep.VFIO_FILE].text.splitlines()
        self.assertIn('options vfio-pci ids=10de:2331', vfio)
        self.assertIn('softdep nvidia pre: vfio-pci', vfio)
        self.assertIn('softdep nouveau pre: vfio-pci', vfio)
        self.assertNotIn('softdep snd_hda_intel pre: vfio-pci', vfio)
        blacklist = found[HOST + '/' + host_prep.BLACKLIST_FILE].text
        self.assertIn('\nblacklist nouveau\n', blacklist)
        self.assertIn('\noptions nouveau modeset=0\n', blacklist)
        self.assertTrue(found[HOST + '/' + host_prep.MODULES_FILE]
                        .text.endswith('\nvfio-pci\n'))
        self.assertEqual({host_prep.FILE_MODE},
                         {f.mode for f in found.values()})
        self.assertEqual({HOST}, {f.host for f in found.values()})
        self.assertIn('Nothing was applied', notes[-1])

    def test_extra_functions_of_the_iommu_group(self):
        found = files_of(self.render(extra_pci_ids=('10de:22ba',
                                                    '10DE:2331')))
        vfio = found[HOST + '/' + host_prep.VFIO_FILE].text.splitlines()
        # the pool's id once, then the extra one
        self.assertIn('options vfio-pci ids=10de:2331,10de:22ba', vfio)
        self.assertIn('softdep snd_hda_intel pre: vfio-pci', vfio)

    def test_one_ids_list_per_host(self):
        # a host in two passthrough pools: both ids on one options line
        # (a second line would replace the first)
        other = pool('other', pools_mod.PASSTHROUGH, alias='a6000',
                     pci_id='10de:2230')
        files, notes = self.render(pools=by_name(self.solver, other))
        vfio = {f.path: f for f in files}[HOST + '/' + host_prep.VFIO_FILE]
        self.assertEqual(1, vfio.text.count('options vfio-pci'))
        self.assertIn('options vfio-pci ids=10de:2230,10de:2331\n',
                      vfio.text)
        self.assertTrue(any('also in passthrough pool other' in n
                            for n in notes), notes)

    def test_a_host_shared_with_a_mig_pool_is_warned(self):
        slices = pool('slices', pools_mod.MIG, mig_profile='1g.10gb')
        _files, notes = self.render(pools=by_name(self.solver, slices))
        text = ' '.join(notes)
        self.assertIn('also in mig pool slices', text)
        self.assertIn('driverctl set-override', text)

    def test_ansible(self):
        files, _notes = self.render(file_format=host_prep.ANSIBLE,
                                    extra_pci_ids=('10de:22ba',))
        self.assertEqual(['host_vars/%s.yml' % HOST], [f.path for f in files])
        text = files[0].text
        self.assertIn('stackhpc.linux.gpu_passthrough', text)
        self.assertEqual({
            'iommu_pt': True,
            'gpuclient_kernel_args': {
                'GenuineIntel': ['intel_iommu=on', 'iommu=pt'],
                'AuthenticAMD': ['amd_iommu=on', 'iommu=pt']},
            'gpuclient_vfio_pci_ids': ['10de:2331', '10de:22ba'],
        }, yaml.safe_load(text))


class TestVgpu(base.TestCase):

    def test_kernel_arguments_and_blacklist_only(self):
        ws = pool('ws', pools_mod.VGPU, hosts=('b', 'a'),
                  vgpu_type='nvidia-35')
        files, notes = host_prep.pool_files(ws, by_name(ws), None)
        # hosts in name order
        self.assertEqual(
            ['a/' + host_prep.GRUB_FILE, 'a/' + host_prep.BLACKLIST_FILE,
             'b/' + host_prep.GRUB_FILE, 'b/' + host_prep.BLACKLIST_FILE],
            [f.path for f in files])
        self.assertIn('Nova creates the mediated devices itself', notes[-1])
        files, _notes = host_prep.pool_files(
            ws, by_name(ws), None,
            host_prep.Options(file_format=host_prep.ANSIBLE))
        data = yaml.safe_load(files[0].text)
        self.assertEqual({'iommu_pt', 'gpuclient_kernel_args'}, set(data))


class TestKernelArguments(base.TestCase):
    """The GRUB drop-in, sourced by sh as update-grub sources it, with a
    stand-in /proc/cpuinfo."""

    def cmdline(self, vendor, before='quiet'):
        ws = pool('ws', pools_mod.VGPU, vgpu_type='nvidia-35')
        text = host_prep.grub_dropin(ws)
        work = self.useFixture(fixtures.TempDir()).path
        cpuinfo = os.path.join(work, 'cpuinfo')
        with open(cpuinfo, 'w') as f:
            f.write('processor\t: 0\nvendor_id\t: %s\ncpu family\t: 6\n\n'
                    'processor\t: 1\nvendor_id\t: %s\n' % (vendor, vendor))
        dropin = os.path.join(work, 'gpuclient-iommu.cfg')
        with open(dropin, 'w') as f:
            f.write(text.replace('/proc/cpuinfo', cpuinfo))
        proc = subprocess.run(
            ['sh', '-ec', 'GRUB_CMDLINE_LINUX="$1"; . "$2"; '
             'printf %s "$GRUB_CMDLINE_LINUX"', 'sh', before, dropin],
            capture_output=True, text=True, check=True)
        return proc.stdout

    def test_each_vendor_gets_its_line(self):
        self.assertEqual('quiet intel_iommu=on iommu=pt',
                         self.cmdline('GenuineIntel'))
        self.assertEqual('quiet amd_iommu=on iommu=pt',
                         self.cmdline('AuthenticAMD'))
        # an unknown vendor: the command line is left as it was
        self.assertEqual('quiet', self.cmdline('HygonGenuine'))

    def test_the_grubby_lines_are_given(self):
        ws = pool('ws', pools_mod.VGPU, vgpu_type='nvidia-35')
        text = host_prep.grub_dropin(ws)
        self.assertIn('grubby --update-kernel=ALL --args="intel_iommu=on '
                      'iommu=pt"', text)
        self.assertIn('grubby --update-kernel=ALL --args="amd_iommu=on '
                      'iommu=pt"', text)


def mig_host():
    """Pools small (1g.10gb) and large (3g.40gb), each with its own class
    ([mdev_<type>] mdev_class), passthrough pool solver and vgpu pool ws
    on HOST, and HOST's devices: card MIG_A with 7 VFs of small, a
    passthrough GPU (on vfio-pci: nvidia-smi does not see it), card MIG_B
    with 4 VFs of small and one of large, and a time-sliced pGPU."""
    small = pool('small', pools_mod.MIG, mig_profile='1g.10gb',
                 resource_class=SMALL)
    large = pool('large', pools_mod.MIG, mig_profile='3g.40gb',
                 resource_class=LARGE)
    solver = pool('solver', pools_mod.PASSTHROUGH, alias='h100',
                  pci_id='10de:2331')
    ws = pool('ws', pools_mod.VGPU, vgpu_type='nvidia-35')
    devices = [libvirt_device(vf, {SMALL: 1})
               for vf in nova_config.vf_addresses(MIG_A, 7)]
    devices.append(pci_device(PT_CARD, {'CUSTOM_PCI_10DE_2331': 1}))
    b_vfs = nova_config.vf_addresses(MIG_B, 5)
    devices += [libvirt_device(vf, {SMALL: 1}) for vf in b_vfs[:4]]
    devices.append(libvirt_device(b_vfs[4], {LARGE: 1}))
    devices.append(libvirt_device(PGPU, {'VGPU': 4}, [ws['type_trait']]))
    return by_name(small, large, solver, ws), devices


class TestMig(base.TestCase):

    def setUp(self):
        super().setUp()
        self.pools, self.devices = mig_host()

    def render(self, **options):
        options.setdefault('model', 'A100-80GB')
        return host_prep.pool_files(
            self.pools['small'], self.pools, {HOST: self.devices},
            host_prep.Options(**options))

    def test_each_card_as_placement_shows_it(self):
        cards, _notes = host_prep.mig_cards(HOST, self.devices, self.pools,
                                            'A100-80GB')
        # the passthrough GPU has no index (vfio-pci), the time-sliced
        # pGPU is no MIG card but has one (the NVIDIA driver holds it)
        self.assertEqual([(MIG_A, 0, {'1g.10gb': 7}),
                          (MIG_B, 1, {'1g.10gb': 4, '3g.40gb': 1})],
                         [(c['address'], c['index'], c['counts'])
                          for c in cards])
        self.assertEqual([MIG_A, MIG_B, PGPU],
                         host_prep.nvidia_gpus(self.devices, self.pools))

    def test_a_card_of_no_mig_pool_is_left_out(self):
        # VGPU on a card whose VFs serve no pool: its layout is not known
        # (rendering it empty would destroy its GPU instances at boot)
        stray = [libvirt_device(vf, {'VGPU': 1})
                 for vf in nova_config.vf_addresses('0000:81:00.0', 2)]
        cards, notes = host_prep.mig_cards(HOST, self.devices + stray,
                                           self.pools, 'A100-80GB')
        self.assertEqual([MIG_A, MIG_B], [c['address'] for c in cards])
        self.assertIn('%s 0000:81:00.0: no VF of it serves a MIG pool'
                      % HOST, ' '.join(notes))

    def test_mig_parted_configuration(self):
        found = files_of(self.render())
        self.assertEqual(sorted(HOST + '/' + p for p in (
            host_prep.GRUB_FILE, host_prep.BLACKLIST_FILE,
            host_prep.MIG_CONFIG_FILE, host_prep.MIG_SCRIPT_FILE,
            host_prep.MIG_UNIT_FILE)), sorted(found))
        config = yaml.safe_load(
            found[HOST + '/' + host_prep.MIG_CONFIG_FILE].text)
        self.assertEqual({'version': 'v1', 'mig-configs': {'gpuclient': [
            {'devices': [0], 'mig-enabled': True,
             'mig-devices': {'1g.10gb': 7}},
            {'devices': [1], 'mig-enabled': True,
             'mig-devices': {'1g.10gb': 4, '3g.40gb': 1}}]}}, config)
        script = found[HOST + '/' + host_prep.MIG_SCRIPT_FILE]
        self.assertEqual(host_prep.SCRIPT_MODE, script.mode)
        lines = script.text.splitlines()
        # indices checked, then the VFs, then the layout
        self.assertEqual(
            ['check_index %s 0' % MIG_A, 'check_index %s 1' % MIG_B,
             'enable_vfs %s' % MIG_A, 'enable_vfs %s' % MIG_B,
             'nvidia-mig-parted apply -f "$CONFIG" -c gpuclient'],
            lines[-5:])
        unit = unit_settings(
            found[HOST + '/' + host_prep.MIG_UNIT_FILE].text)
        self.assertIn(('Service', 'Type', 'oneshot'), unit)
        self.assertIn(('Service', 'ExecStart',
                       '/' + host_prep.MIG_SCRIPT_FILE), unit)
        self.assertIn(('Unit', 'Before', 'nova-compute.service'), unit)
        self.assertIn(('Unit', 'After', ' '.join(host_prep.NVIDIA_SERVICES)),
                      unit)

    def test_the_same_files_from_either_pool(self):
        # the host's files hold every MIG card, whichever pool is rendered
        small = files_of(self.render())
        large = files_of(host_prep.pool_files(
            self.pools['large'], self.pools, {HOST: self.devices},
            host_prep.Options(model='A100-80GB')))
        key = HOST + '/' + host_prep.MIG_CONFIG_FILE
        self.assertEqual(small[key].text.replace('small', 'large'),
                         large[key].text)

    def test_the_model_must_be_told(self):
        # A100 80GB and H100 80GB share these profile names
        self.assertRaises(profile_cloud.CannotTell, self.render, model=None)

    def test_ansible_without_mdev_types(self):
        files, notes = self.render(file_format=host_prep.ANSIBLE)
        self.assertEqual(['host_vars/%s.yml' % HOST], [f.path for f in files])
        self.assertIn('stackhpc.linux.vgpu', files[0].text)
        data = yaml.safe_load(files[0].text)
        self.assertEqual(
            [{'pci_address': MIG_A, 'mig_devices': {'1g.10gb': 7}},
             {'pci_address': MIG_B,
              'mig_devices': {'1g.10gb': 4, '3g.40gb': 1}}],
            data['vgpu_definitions'])
        self.assertTrue(any('--mig-mdev-type' in n for n in notes), notes)

    def test_ansible_with_mdev_types(self):
        files, _notes = self.render(
            file_format=host_prep.ANSIBLE,
            mig_types={'1g.10gb': 'nvidia-699', '3g.40gb': 'nvidia-701'})
        a, b = yaml.safe_load(files[0].text)['vgpu_definitions']
        # each VF by its index behind the PF (virtfn<N>)
        self.assertEqual([{'index': i, 'mdev_type': 'nvidia-699'}
                          for i in range(7)], a['virtual_functions'])
        self.assertEqual([{'index': i, 'mdev_type': 'nvidia-699'}
                          for i in range(4)]
                         + [{'index': 4, 'mdev_type': 'nvidia-701'}],
                         b['virtual_functions'])

    def test_ansible_with_a_profile_missing(self):
        files, notes = self.render(file_format=host_prep.ANSIBLE,
                                   mig_types={'1g.10gb': 'nvidia-699'})
        a, b = yaml.safe_load(files[0].text)['vgpu_definitions']
        self.assertIn('virtual_functions', a)
        self.assertNotIn('virtual_functions', b)
        self.assertTrue(any('%s %s: no virtual_functions' % (HOST, MIG_B)
                            in n and '3g.40gb' in n for n in notes), notes)

    def test_hosts_without_cards(self):
        small = self.pools['small']
        small['hosts'] = [HOST, 'gone', 'empty']
        files, notes = host_prep.pool_files(
            small, self.pools, {HOST: self.devices, 'empty': []},
            host_prep.Options(model='A100-80GB'))
        # the IOMMU and the blacklist still; no layout, said
        for host in ('empty', 'gone'):
            self.assertEqual(
                [host + '/' + host_prep.GRUB_FILE,
                 host + '/' + host_prep.BLACKLIST_FILE],
                [f.path for f in files if f.host == host])
        text = ' '.join(notes)
        self.assertIn('gone has no compute node in Placement', text)
        self.assertIn('empty: Placement shows no card serving a mig pool',
                      text)

    def test_vf_index(self):
        self.assertEqual(0, host_prep.vf_index(MIG_A, '0000:41:00.4'))
        self.assertEqual(4, host_prep.vf_index(MIG_A, '0000:41:01.0'))
        self.assertIsNone(host_prep.vf_index(MIG_A, '0000:42:00.4'))


def vf_host():
    """vgpu-vf pool desktops (L40S-24Q) on HOST, whose L40S card offers
    two 24Q VFs (PCI in Placement: one provider per PF)."""
    desktops = pool('desktops', pools_mod.VGPU_VF, vgpu_type='L40S-24Q',
                    alias='l40s-24q', pci_id='10de:26b9')
    return desktops, [pci_device(VF_PF, {VF_CLASS: 2})]


class TestVgpuVf(base.TestCase):

    def test_the_profile_plan_script_and_unit_reused(self):
        desktops, devices = vf_host()
        found = files_of(host_prep.pool_files(
            desktops, by_name(desktops), {HOST: devices}))
        rows = [{'id': '%s/%s' % (HOST, VF_PF), 'host': HOST,
                 'address': VF_PF, 'board': 'L40S',
                 'current': {'L40S-24Q': 2}, 'proposed': {'L40S-24Q': 2},
                 'recut': False, 'in_use': 0}]
        script_path = '%s/%s' % (host_prep.SCRIPT_DIR,
                                 profile_vf.script_name(HOST))
        script = found['%s/%s' % (HOST, script_path)]
        self.assertEqual(profile_vf.script(HOST, rows), script.text)
        self.assertEqual(host_prep.SCRIPT_MODE, script.mode)
        # the card keeps its types: at boot each VF gets its type again
        self.assertEqual(['keep_type 0000:a1:00.4 L40S-24Q',
                          'keep_type 0000:a1:00.5 L40S-24Q'],
                         [line for line in script.text.splitlines()
                          if line.startswith('keep_type ')])
        unit = found['%s/%s/%s' % (HOST, host_prep.UNIT_DIR,
                                   profile_vf.unit_name(HOST))]
        self.assertEqual(profile_vf.unit(HOST, '/' + script_path), unit.text)

    def test_ansible_names_the_files_to_copy(self):
        desktops, devices = vf_host()
        files, _notes = host_prep.pool_files(
            desktops, by_name(desktops), {HOST: devices},
            host_prep.Options(file_format=host_prep.ANSIBLE))
        by_path = {f.path: f for f in files}
        data = yaml.safe_load(by_path['host_vars/%s.yml' % HOST].text)
        script = '%s/%s' % (host_prep.SCRIPT_DIR,
                            profile_vf.script_name(HOST))
        unit = '%s/%s' % (host_prep.UNIT_DIR, profile_vf.unit_name(HOST))
        self.assertEqual(
            [{'src': 'files/%s/%s' % (HOST, script), 'dest': '/' + script,
              'mode': '0755'},
             {'src': 'files/%s/%s' % (HOST, unit), 'dest': '/' + unit,
              'mode': '0644'}], data['gpuclient_files'])
        for item in data['gpuclient_files']:
            self.assertIn(item['src'], by_path)
        self.assertNotIn('vgpu_definitions', data)


class TestScripts(base.TestCase):
    """The MIG script run by bash, as its unit would, against stand-ins
    for nvidia-smi, sriov-manage and nvidia-mig-parted (a log of their
    calls) and a sysfs tree."""

    def setUp(self):
        super().setUp()
        self.work = tempfile.mkdtemp(prefix='gpuclient-mig-script-')
        self.addCleanup(shutil.rmtree, self.work, True)
        self.bin = os.path.join(self.work, 'bin')
        os.mkdir(self.bin)
        self.log = os.path.join(self.work, 'calls')
        for name, body in (
                ('nvidia-smi', 'echo "nvidia-smi $*" >> "$LOG"\n'
                               'eval "echo \\$INDEX_${2//[:.]/_}"\n'),
                ('sriov-manage', 'echo "sriov-manage $*" >> "$LOG"\n'),
                ('nvidia-mig-parted',
                 'echo "nvidia-mig-parted $*" >> "$LOG"\n')):
            path = os.path.join(self.bin, name)
            with open(path, 'w') as f:
                f.write('#!/bin/bash\n' + body)
            os.chmod(path, 0o755)
        self.sysfs = os.path.join(self.work, 'sys')
        for address, numvfs in ((MIG_A, '0'), (MIG_B, '5')):
            os.makedirs(os.path.join(self.sysfs, address))
            with open(os.path.join(self.sysfs, address, 'sriov_numvfs'),
                      'w') as f:
                f.write(numvfs + '\n')

    def run_script(self, indices):
        pools, devices = mig_host()
        cards, _notes = host_prep.mig_cards(HOST, devices, pools,
                                            'A100-80GB')
        text = host_prep.mig_script(pools['small'], HOST, cards)
        text = (text.replace(profile_vf.SYSFS, self.sysfs)
                .replace(profile_vf.SRIOV_MANAGE,
                         os.path.join(self.bin, 'sriov-manage')))
        script = os.path.join(self.work, 'mig.sh')
        with open(script, 'w') as f:
            f.write(text)
        env = {'PATH': self.bin + ':/usr/bin:/bin', 'LOG': self.log}
        for address, index in indices.items():
            env['INDEX_' + address.replace(':', '_').replace('.', '_')] = (
                str(index))
        proc = subprocess.run(['bash', script], capture_output=True,
                              text=True, env=env)
        calls = []
        if os.path.exists(self.log):
            with open(self.log) as f:
                calls = f.read().splitlines()
        return proc, calls

    def test_applies_the_layout(self):
        proc, calls = self.run_script({MIG_A: 0, MIG_B: 1})
        self.assertEqual((0, ''), (proc.returncode, proc.stderr))
        self.assertEqual([
            'nvidia-smi -i %s --query-gpu=index --format=csv,noheader'
            % MIG_A,
            'nvidia-smi -i %s --query-gpu=index --format=csv,noheader'
            % MIG_B,
            # MIG_B has its VFs already
            'sriov-manage -e %s' % MIG_A,
            'nvidia-mig-parted apply -f /%s -c gpuclient'
            % host_prep.MIG_CONFIG_FILE], calls)

    def test_another_index_stops_before_any_change(self):
        proc, calls = self.run_script({MIG_A: 1, MIG_B: 0})
        self.assertEqual(1, proc.returncode)
        self.assertIn('%s is GPU 1, not 0: write devices: [1] for it in '
                      '/%s' % (MIG_A, host_prep.MIG_CONFIG_FILE),
                      proc.stderr)
        self.assertEqual(1, len(calls))

    def test_the_vf_script_and_the_mig_script_parse(self):
        pools, devices = mig_host()
        cards, _notes = host_prep.mig_cards(HOST, devices, pools,
                                            'A100-80GB')
        desktops, vf_devices = vf_host()
        rows = host_prep.vf_rows(HOST, vf_devices, by_name(desktops))
        for text in (host_prep.mig_script(pools['small'], HOST, cards),
                     profile_vf.script(HOST, rows)):
            proc = subprocess.run(['bash', '-n'], input=text,
                                  capture_output=True, text=True)
            self.assertEqual((0, ''), (proc.returncode, proc.stderr))


class TestUnitsVerify(base.TestCase):
    """Every unit ``gpu host render`` writes passes ``systemd-analyze
    verify`` (skipped where systemd-analyze is absent).

    verify also checks that ExecStart's program exists and is executable;
    the rendered units name the script where the operator installs it
    (/usr/local/sbin), which does not exist here. So the unit is verified
    as rendered, with that one path replaced by the rendered script's own
    copy (the file the operator installs there), and the test asserts the
    two paths are the unit's and the script's."""

    def verify(self, path):
        """(exit status, output) of systemd-analyze verify on PATH, as
        ``test_systemd_units`` runs it (no generators, no man pages)."""
        analyze = test_systemd_units.SYSTEMD_ANALYZE
        if not os.path.exists(analyze):
            self.skipTest('%s not found: apt-get install systemd (it '
                          'checks the rendered units)' % analyze)
        proc = subprocess.run(
            [analyze, 'verify', '--man=no', '--generators=no', path],
            capture_output=True, text=True, cwd=os.path.dirname(path),
            env=dict(os.environ, SYSTEMD_LOG_COLOR='0'))
        return proc.returncode, (proc.stdout + proc.stderr).strip()

    def rendered(self):
        """[(unit HostFile, script HostFile)] of a MIG and a vgpu-vf host
        in the systemd format."""
        pools, devices = mig_host()
        mig = files_of(host_prep.pool_files(
            pools['small'], pools, {HOST: devices},
            host_prep.Options(model='A100-80GB')))
        desktops, vf_devices = vf_host()
        vf = files_of(host_prep.pool_files(
            desktops, by_name(desktops), {HOST: vf_devices}))
        pairs = []
        for found in (mig, vf):
            units = [f for p, f in found.items() if p.endswith('.service')]
            scripts = [f for p, f in found.items() if p.endswith('.sh')]
            self.assertEqual(1, len(units))
            self.assertEqual(1, len(scripts))
            pairs.append((units[0], scripts[0]))
        return pairs

    def verify_rendered(self, unit, script, edit=None):
        """systemd-analyze verify of UNIT as rendered, its ExecStart the
        copy of SCRIPT (see above), EDIT(text) applied first."""
        work = self.useFixture(fixtures.TempDir()).path
        installed = '/' + script.path.split('/', 1)[1]
        copy = os.path.join(work, os.path.basename(script.path))
        with open(copy, 'w') as f:
            f.write(script.text)
        os.chmod(copy, script.mode)
        self.assertIn('\nExecStart=%s\n' % installed, unit.text)
        text = unit.text.replace('ExecStart=' + installed,
                                 'ExecStart=' + copy)
        if edit:
            text = edit(text)
        path = os.path.join(work, os.path.basename(unit.path))
        with open(path, 'w') as f:
            f.write(text)
        return self.verify(path)

    def test_rendered_units_verify(self):
        for unit, script in self.rendered():
            self.assertEqual((0, ''), self.verify_rendered(unit, script),
                             unit.path)
            self.assertTrue(stat.S_IXUSR & script.mode)

    def test_rendered_verify_sees_a_defect(self):
        unit, script = self.rendered()[0]
        rc, output = self.verify_rendered(
            unit, script, lambda t: t.replace('Type=oneshot',
                                              'Type=oneshoot'))
        self.assertIn('oneshoot', output)
