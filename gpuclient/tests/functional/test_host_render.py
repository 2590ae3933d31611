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

"""``openstack gpu host render`` against a real cloud (issue 54 item 5).

Each test makes a pool of its own on the cloud's host of a kind, runs the
real executable into a directory of its own, and checks the files against
what the cloud holds, read back with plain OSC: the pool's hosts (``openstack
aggregate show``), the GPUs' vendor:product id, and, for MIG and vgpu-vf
pools, the layout of each card as Placement shows it (``openstack resource
provider list --in-tree``, ``inventory list``, ``trait list``). Nothing is
applied to a host: the command only writes files here. The units are
checked with ``systemd-analyze verify`` where it is installed.
"""

import collections
import json
import os
import re
import shutil
import subprocess
import tempfile

import yaml

from gpuclient.tests.functional import base

PCI_ID = '10de:2331'
GRUB = 'etc/default/grub.d/gpuclient-iommu.cfg'
BLACKLIST = 'etc/modprobe.d/gpuclient-blacklist-nouveau.conf'
VFIO = 'etc/modprobe.d/gpuclient-vfio.conf'
MODULES = 'etc/modules-load.d/gpuclient-vfio-pci.conf'
MIG_CONFIG = 'etc/nvidia-mig-manager/gpuclient.yaml'
MIG_SCRIPT = 'usr/local/sbin/gpuclient-mig-layout.sh'
MIG_UNIT = 'etc/systemd/system/gpuclient-mig-layout.service'
_LIBVIRT_PCI = re.compile(
    r'_pci_([0-9a-f]{4})_([0-9a-f]{2})_([0-9a-f]{2})_([0-7])$')
_PLACEMENT_PCI = re.compile(
    r'_([0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])$')


class HostRenderTestCase(base.FunctionalTestCase):

    def setUp(self):
        super().setUp()
        self.out = os.path.join(
            tempfile.mkdtemp(prefix='gpuclient-ft-render-'), 'out')
        self.addCleanup(shutil.rmtree, os.path.dirname(self.out), True)

    def create_pool(self, *args):
        name = self.unique_name('render')
        self.addCleanup(self.delete_pool, name)
        self.openstack('gpu', 'pool', 'create', name, *args, parse=False)
        return name

    def render(self, pool, *args):
        return self.openstack('gpu', 'host', 'render', '--pool', pool,
                              '--output-dir', self.out, *args)

    def pool_hosts(self, pool):
        """The pool's hosts as Nova's aggregate holds them."""
        return sorted(self.openstack('aggregate', 'show', pool)['hosts'])

    def read(self, *parts):
        with open(os.path.join(self.out, *parts)) as f:
            return f.read()

    def written(self):
        found = []
        for top, _dirs, names in os.walk(self.out):
            found += [os.path.relpath(os.path.join(top, n), self.out)
                      for n in names]
        return sorted(found)

    def tree(self, host):
        """[(provider name, {class: total}, {trait})] of HOST's device
        providers, read with plain OSC."""
        root = self.root_provider(host)
        found = []
        for rp in self.openstack('resource', 'provider', 'list',
                                 '--in-tree', root):
            if rp['uuid'] == root:
                continue
            totals = {row['resource_class']: row['total'] for row in
                      self.openstack('resource', 'provider', 'inventory',
                                     'list', rp['uuid'])}
            found.append((rp['name'], totals, self.traits(rp['uuid'])))
        return found

    def verify_units(self, host_dir):
        """systemd-analyze verify of every unit under HOST_DIR, its
        ExecStart the rendered script (where the unit names its installed
        path), as the unit test does; skipped without systemd-analyze."""
        analyze = shutil.which('systemd-analyze')
        if analyze is None:
            return
        for top, _dirs, names in os.walk(host_dir):
            for name in names:
                if not name.endswith('.service'):
                    continue
                with open(os.path.join(top, name)) as f:
                    text = f.read()
                installed = re.search(r'^ExecStart=(\S+)$', text,
                                      re.M).group(1)
                script = os.path.join(host_dir, installed.lstrip('/'))
                self.assertTrue(os.access(script, os.X_OK), script)
                work = tempfile.mkdtemp(prefix='gpuclient-ft-unit-')
                self.addCleanup(shutil.rmtree, work, True)
                unit = os.path.join(work, name)
                with open(unit, 'w') as f:
                    f.write(text.replace('ExecStart=' + installed,
                                         'ExecStart=' + script))
                proc = subprocess.run(
                    [analyze, 'verify', '--man=no', '--generators=no',
                     unit], capture_output=True, text=True, cwd=work)
                self.assertEqual(
                    (0, ''), (proc.returncode,
                              (proc.stdout + proc.stderr).strip()), name)


class TestRenderPassthrough(HostRenderTestCase):

    @base.needs('passthrough')
    def test_vfio_pci_files_and_ansible(self):
        pool = self.create_pool('--mode', 'passthrough', '--alias', 'h100',
                                '--pci-id', PCI_ID, '--host', self.pt_host)
        hosts = self.pool_hosts(pool)
        rows = self.render(pool)
        self.assertEqual(sorted(os.path.join(h, p) for h in hosts
                                for p in (GRUB, BLACKLIST, VFIO, MODULES)),
                         self.written())
        self.assertEqual(sorted(os.path.join(self.out, p)
                                for p in self.written()),
                         sorted(r['File'] for r in rows))
        for host in hosts:
            vfio = self.read(host, VFIO).splitlines()
            # the pool's id, and any other passthrough pool's of the host
            ids = re.search(r'^options vfio-pci ids=(\S+)$',
                            '\n'.join(vfio), re.M).group(1).split(',')
            self.assertIn(PCI_ID, ids)
            self.assertIn('softdep nvidia pre: vfio-pci', vfio)
            self.assertIn('softdep nouveau pre: vfio-pci', vfio)
            self.assertIn('blacklist nouveau',
                          self.read(host, BLACKLIST).splitlines())
            self.assertIn('vfio-pci', self.read(host, MODULES).splitlines())
            grub = self.read(host, GRUB)
            self.assertIn('intel_iommu=on iommu=pt', grub)
            self.assertIn('amd_iommu=on iommu=pt', grub)
        # a second run refuses, naming the file, and writes nothing
        before = self.written()
        rc, _out, err = self.openstack_raw(
            'gpu', 'host', 'render', '--pool', pool, '--output-dir',
            self.out)
        self.assertEqual(1, rc)
        self.assertIn('exists already', err)
        self.assertEqual(before, self.written())
        # the Ansible variables of the same hosts, in another directory
        self.out = os.path.join(os.path.dirname(self.out), 'ansible')
        self.render(pool, '--format', 'ansible', '--extra-pci-id',
                    '10de:22ba')
        self.assertEqual(['host_vars/%s.yml' % h for h in hosts],
                         self.written())
        data = yaml.safe_load(self.read('host_vars', hosts[0] + '.yml'))
        self.assertTrue(data['iommu_pt'])
        self.assertIn(PCI_ID, data['gpuclient_vfio_pci_ids'])
        self.assertEqual('10de:22ba', data['gpuclient_vfio_pci_ids'][-1])


class TestRenderVgpu(HostRenderTestCase):

    @base.needs('vgpu')
    def test_only_the_iommu_and_the_blacklist(self):
        pool = self.create_pool('--mode', 'vgpu', '--vgpu-type',
                                'nvidia-35', '--host', self.vgpu_host)
        rc, text, err = self.openstack_raw(
            'gpu', 'host', 'render', '--pool', pool, '--output-dir',
            self.out, '-f', 'json')
        self.assertEqual(0, rc, err)
        self.assertEqual(
            sorted(os.path.join(h, p) for h in self.pool_hosts(pool)
                   for p in (GRUB, BLACKLIST)), self.written())
        self.assertEqual(['Host', 'File', 'What'],
                         list(json.loads(text)[0]))
        self.assertIn('Nova creates the mediated devices itself',
                      ' '.join(err.split()))


class TestRenderMig(HostRenderTestCase):

    def cards(self, host, trait):
        """{PF address: {profile: VFs}} of HOST's VF providers that carry
        TRAIT (the pool's type trait), by the card their address is on."""
        found = collections.defaultdict(collections.Counter)
        for name, totals, traits in self.tree(host):
            named = _LIBVIRT_PCI.search(name)
            if 'VGPU' not in totals or trait not in traits or not named:
                continue
            domain, bus = named.group(1), named.group(2)
            found['%s:%s:00.0' % (domain, bus)]['1g.10gb'] += 1
        return {card: dict(counts) for card, counts in found.items()}

    @base.needs('mig')
    def test_the_layout_placement_shows(self):
        host = base.MIG_HOST
        pool = self.create_pool('--mode', 'mig', '--mig-profile', '1g.10gb',
                                '--host', host)
        trait = self.openstack('gpu', 'pool', 'show', pool)['type_trait']
        rows = self.render(pool, '--model', 'A100-80GB')
        cards = self.cards(host, trait)
        self.assertTrue(cards, 'no VF of %s carries %s' % (host, trait))
        self.assertEqual(
            sorted(os.path.join(host, p) for p in (
                GRUB, BLACKLIST, MIG_CONFIG, MIG_SCRIPT, MIG_UNIT)),
            self.written())
        config = yaml.safe_load(self.read(host, MIG_CONFIG))
        self.assertEqual('v1', config['version'])
        entries = config['mig-configs']['gpuclient']
        # one entry per card, in PCI order, with the VFs Placement shows
        self.assertEqual([cards[card] for card in sorted(cards)],
                         [e['mig-devices'] for e in entries])
        self.assertEqual([True] * len(cards),
                         [e['mig-enabled'] for e in entries])
        script = self.read(host, MIG_SCRIPT)
        for card in sorted(cards):
            self.assertIn('\ncheck_index %s ' % card, script)
            self.assertIn('\nenable_vfs %s\n' % card, script)
        proc = subprocess.run(['bash', '-n'], input=script,
                              capture_output=True, text=True)
        self.assertEqual((0, ''), (proc.returncode, proc.stderr))
        unit = self.read(host, MIG_UNIT)
        self.assertIn('\nBefore=nova-compute.service\n', unit)
        self.assertIn('\nExecStart=/%s\n' % MIG_SCRIPT, unit)
        self.verify_units(os.path.join(self.out, host))
        self.assertEqual({host}, {r['Host'] for r in rows})
        # the Ansible vgpu role's definitions of the same cards
        self.out = os.path.join(os.path.dirname(self.out), 'ansible')
        self.render(pool, '--model', 'A100-80GB', '--format', 'ansible')
        data = yaml.safe_load(self.read('host_vars', host + '.yml'))
        self.assertEqual(
            [{'pci_address': card, 'mig_devices': cards[card]}
             for card in sorted(cards)], data['vgpu_definitions'])


class TestRenderVgpuVf(HostRenderTestCase):

    def setUp(self):
        super().setUp()
        # the VF host for this test alone (base.host_lease)
        self.host_lease('vgpu-vf')

    def test_the_vf_script_and_unit(self):
        host = base.VF_HOST
        pool = self.create_pool(
            '--mode', 'vgpu-vf', '--vgpu-type', base.VF_TYPE, '--alias',
            base.VF_ALIAS, '--pci-id', base.VF_PCI_ID, '--live-migratable',
            '--host', host)
        vf_class = 'CUSTOM_VGPU_%s' % base.VF_TYPE.upper().replace('-', '_')
        totals = {}
        for name, inventory, _traits in self.tree(host):
            named = _PLACEMENT_PCI.search(name)
            if vf_class in inventory and named:
                totals[named.group(1).lower()] = inventory[vf_class]
        self.assertTrue(totals, '%s offers no %s' % (host, vf_class))
        self.render(pool)
        script = 'usr/local/sbin/gpuclient-vgpu-vfs-%s.sh' % host
        unit = 'etc/systemd/system/gpuclient-vgpu-vfs-%s.service' % host
        self.assertEqual(sorted(os.path.join(host, p) for p in (
            GRUB, BLACKLIST, script, unit)), self.written())
        text = self.read(host, script)
        # each card's VFs keep the type they have, as many as Placement
        # counts; nothing is re-typed
        for card in totals:
            self.assertIn('sriov-manage -e %s\n' % card, text)
        self.assertEqual(sum(totals.values()),
                         len(re.findall(r'^keep_type \S+ %s$'
                                        % re.escape(base.VF_TYPE), text,
                                        re.M)))
        self.assertNotIn('\nset_type ', text)
        self.assertIn('\nExecStart=/%s\n' % script, self.read(host, unit))
        self.verify_units(os.path.join(self.out, host))


class TestRenderBaremetal(HostRenderTestCase):

    @base.needs('baremetal')
    def test_refused(self):
        pool = self.create_pool('--mode', 'baremetal', '--resource-class',
                                'baremetal.gpu-h100', '--host',
                                base.BM_HOST)
        rc, out, err = self.openstack_raw(
            'gpu', 'host', 'render', '--pool', pool, '--output-dir',
            self.out)
        self.assertEqual((1, ''), (rc, out))
        self.assertIn('bare-metal pool', err)
        self.assertFalse(os.path.exists(self.out))
