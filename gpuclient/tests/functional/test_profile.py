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

"""gpu profile plan --pool, proven by a re-cut: the plan's nova.conf is
applied to the test cloud's spare MIG host recut-mig-1 (whose fake driver
builds its VFs from it), Nova reports the new inventory to Placement,
``gpu capacity list`` says what the plan predicted per flavor, and the
newly served slices boot. And for a time-sliced vGPU pool of the shared
vGPU host: its cards and their servers are what Placement holds, and the
plan's nova.conf lists the pGPUs Placement names (nothing is applied
there: the host is shared).

The host is the test cloud's own (tools/cloud/hosts.py): only this test
uses it, it is re-cut with ``tools/testcloud restart-compute`` and put
back to its own nova.conf at cleanup; on another cloud the test skips.
"""

import configparser
import datetime
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

from gpuclient.tests.functional import base
from gpuclient.tests.functional import test_config

TOP = test_config.TOP
HOST = 'recut-mig-1'


def _testcloud_hosts():
    """tools/cloud/hosts.py (standard library only), loaded by path."""
    path = os.path.join(TOP, 'tools', 'cloud', 'hosts.py')
    spec = importlib.util.spec_from_file_location('_testcloud_hosts', path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class ProfilePlanTestCase(base.FunctionalTestCase):

    def setUp(self):
        super().setUp()
        # the re-cut host for this test alone (base.host_lease)
        self.assertEqual(HOST, self.host_lease('mig-recut'))

    def restart_compute(self, *args):
        proc = subprocess.run(
            [sys.executable, os.path.join(TOP, 'tools', 'testcloud'),
             'restart-compute', HOST, *args], capture_output=True,
            text=True, timeout=400)
        self.assertEqual(0, proc.returncode, proc.stdout + proc.stderr)

    def create_pool(self, *args):
        name = self.unique_name('recut')
        self.addCleanup(self.delete_pool, name)
        self.openstack('gpu', 'pool', 'create', name, *args, parse=False)
        return name

    def inventory(self):
        """{resource class: total} over the VF providers of HOST."""
        root = self.root_provider(HOST)
        totals = {}
        for rp in self.openstack('resource', 'provider', 'list',
                                 '--in-tree', root):
            if rp['uuid'] == root:
                continue
            for row in self.openstack('resource', 'provider', 'inventory',
                                      'list', rp['uuid']):
                rc = row['resource_class']
                totals[rc] = totals.get(rc, 0) + row['total']
        return totals

    def test_recut_as_planned(self):
        if test_config.testcloud_etc() is None:
            self.skipTest('not the local test cloud: the plan\'s nova.conf '
                          'cannot be applied to a host here')
        hosts = _testcloud_hosts()
        classes, types = hosts.RECUT_CLASSES, hosts.RECUT_TYPES
        # the host as tools/cloud/hosts.py cuts it (started if the
        # running cloud predates it), and so again at cleanup
        self.addCleanup(self.restart_compute)
        start = {classes['1g.10gb']: 4, classes['3g.40gb']: 1}
        services = self.openstack('compute', 'service', 'list', '--service',
                                  'nova-compute', '--host', HOST)
        if not services or self.inventory() != start:
            self.restart_compute()
        self.assertEqual(start, self.inventory())
        self.use_spare(HOST)
        # the period of --from-usage below: from now (UTC), to the second
        started = datetime.datetime.now(datetime.timezone.utc).strftime(
            '%Y-%m-%dT%H:%M:%S')
        small = self.create_pool('--mode', 'mig', '--mig-profile', '1g.10gb',
                                 '--resource-class', classes['1g.10gb'],
                                 '--host', HOST)
        large = self.create_pool('--mode', 'mig', '--mig-profile', '3g.40gb',
                                 '--resource-class', classes['3g.40gb'],
                                 '--host', HOST)
        small_flavor = self.make_flavor(small)
        large_flavor = self.make_flavor(large)
        # a server on a 1g.10gb slice: the re-cut takes its slice, so it
        # must leave the card first, and the plan says how
        tenant = self.boot(small_flavor)
        out = tempfile.mkdtemp(prefix='gpuclient-ft-recut-')
        rows = self.openstack(
            'gpu', 'profile', 'plan', '--pool', large, '--pool', small,
            '--demand', '%s=2' % large_flavor, '--model', 'A100-80GB',
            '--mig-mdev-type', '1g.10gb=%s' % types['1g.10gb'],
            '--mig-mdev-type', '3g.40gb=%s' % types['3g.40gb'],
            '--output-dir', out)
        self.assertEqual([HOST], [r['Host'] for r in rows])
        row = rows[0]
        self.assertEqual('0000:61:00.0', row['Card'])
        predicted = {p: len(re.findall(re.escape(p) + '@', row[
            'Layout Proposed'])) for p in ('1g.10gb', '3g.40gb')}
        # the plan: two 3g.40gb slices (all the demand), no 1g.10gb left
        self.assertEqual({'1g.10gb': 0, '3g.40gb': 2}, predicted)
        self.assertTrue(os.path.isfile(row['Nova Conf']), row)
        self.assertTrue(os.path.isfile(row['Script']), row)
        # no other host serves 1g.10gb: the drain plan shelves it
        self.assertEqual(['%s (%s): shelve (downtime: until unshelved)'
                          % (tenant['id'], tenant['name'])],
                         row['Servers To Move'])
        self.openstack('server', 'delete', '--wait', tenant['id'],
                       parse=False)

        self.restart_compute('--nova-conf', row['Nova Conf'])
        # Placement: the inventory Nova now reports, class by class
        self.assertEqual({classes[p]: n for p, n in predicted.items() if n},
                         self.inventory())
        # gpu capacity list: what the plan predicted for each flavor
        for flavor, profile in ((large_flavor, '3g.40gb'),
                                (small_flavor, '1g.10gb')):
            rows = self.openstack('gpu', 'capacity', 'list', '--flavor',
                                  flavor)
            self.assertEqual(predicted[profile],
                             sum(r['Fits'] for r in rows), rows)
        # the newly cut slices boot
        for _n in range(predicted['3g.40gb']):
            server = self.boot(large_flavor)
            self.assertEqual({'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1,
                              classes['3g.40gb']: 1},
                             self.allocations(server['id']))
        # one more is refused for lack of room: unmet demand, which
        # --from-usage counts with the peak of the servers that ran
        refused = self.boot(large_flavor, expect_status='ERROR')
        self.assertIn('No valid host', str(refused.get('fault')))
        rc, _out, err = self.openstack_raw(
            'gpu', 'profile', 'plan', '--pool', large, '--pool', small,
            '--from-usage', '--start', started, '--model', 'A100-80GB',
            '-f', 'json')
        self.assertEqual(0, rc, err)
        self.assertIn('Flavor %s: 2 servers at the peak, 1 boots refused '
                      '("No valid host"): demand 3.' % large_flavor, err)
        self.assertIn('3g.40gb: 2 of 3 met', err)


class VgpuProfilePlanTestCase(base.FunctionalTestCase):

    def pgpus(self, host):
        """{PCI address: (provider uuid, VGPU total)} of HOST's pGPU
        providers, read with plain OSC (the address from the libvirt
        driver's name, <node>_pci_0000_84_00_0)."""
        root = self.root_provider(host)
        found = {}
        for rp in self.openstack('resource', 'provider', 'list',
                                 '--in-tree', root):
            totals = {row['resource_class']: row['total'] for row in
                      self.openstack('resource', 'provider', 'inventory',
                                     'list', rp['uuid'])}
            named = re.search(r'_pci_([0-9a-f]{4})_([0-9a-f]{2})_'
                              r'([0-9a-f]{2})_([0-7])$', rp['name'])
            if 'VGPU' in totals and named:
                found['%s:%s:%s.%s' % named.groups()] = (rp['uuid'],
                                                        totals['VGPU'])
        return found

    @base.needs('vgpu')
    def test_vgpu_pool_plan(self):
        host = base.VGPU_HOST
        name = self.unique_name('ts')
        self.addCleanup(self.delete_pool, name)
        self.openstack('gpu', 'pool', 'create', name, '--mode', 'vgpu',
                       '--vgpu-type', 'nvidia-35', '--host', host,
                       parse=False)
        flavor = self.make_flavor(name)
        server = self.boot(flavor)
        pgpus = self.pgpus(host)
        self.assertEqual(2, len(pgpus), pgpus)
        # the pGPU that holds the server, as Placement says
        holding = [a for a, (uuid, _t) in pgpus.items() if uuid in {
            row['resource_provider'] for row in self.openstack(
                'resource', 'provider', 'allocation', 'show', server['id'])}]
        self.assertEqual(1, len(holding), pgpus)
        out = tempfile.mkdtemp(prefix='gpuclient-ft-vgpu-plan-')
        self.addCleanup(shutil.rmtree, out, True)
        # A100D-20C: 4 vGPUs per A100 80GB, as many as each pGPU offers
        rc, text, err = self.openstack_raw(
            'gpu', 'profile', 'plan', '--pool', name, '--model', 'A100-80GB',
            '--vgpu-mdev-type', 'A100D-20C=nvidia-35',
            '--demand', 'A100D-20C=4', '--demand', 'A100D-40C=2',
            '--output-dir', out, '-f', 'json')
        self.assertEqual(0, rc, err)
        rows = {r['Card']: r for r in json.loads(text)}
        # one card per pGPU provider, its layout now its VGPU total
        self.assertEqual(sorted(pgpus), sorted(rows))
        for address, (_uuid, total) in pgpus.items():
            self.assertEqual(host, rows[address]['Host'])
            self.assertEqual('A100D-20C x%d' % total,
                             rows[address]['Layout Now'])
        # the idle pGPU changes type, the server's keeps it: nobody moves
        idle, = set(pgpus) - set(holding)
        self.assertEqual('A100D-40C x2', rows[idle]['Layout Proposed'])
        self.assertEqual('A100D-20C x4', rows[holding[0]]['Layout Proposed'])
        self.assertEqual([[], []], [r['Servers To Move']
                                    for r in rows.values()])
        self.assertIn('Demand met: 6 of 6; cards re-cut: 1; servers '
                      'disturbed: 0', err)
        # no pool serves A100D-40C: said, and left out of the nova.conf,
        # which lists the kept pGPU under its pool's mdev type
        self.assertIn('A100D-40C, which no vgpu pool serves', err)
        conf = configparser.ConfigParser()
        self.assertEqual([rows[idle]['Nova Conf']],
                         conf.read(rows[idle]['Nova Conf']))
        self.assertEqual('nvidia-35', conf['devices']['enabled_mdev_types'])
        self.assertEqual(holding[0],
                         conf['mdev_nvidia-35']['device_addresses'])


class TestProfileList(base.FunctionalTestCase):
    """``gpu profile list`` (issue 52 item 7): NVIDIA's partition
    catalogue, which reads nothing from the cloud, so the proof is its
    output as the real executable gives it: the same rows with a cloud and
    with none configured at all, -f json with numbers and lists, --long
    adding Source to the same rows, --model and --board keeping one model
    (a board: its own vGPU types), an unknown model refused."""

    def no_cloud(self, *args):
        """``openstack ARGS`` as a process, with no cloud configured (no
        OS_* variable, an empty clouds.yaml): (rc, stdout, stderr)."""
        empty = tempfile.NamedTemporaryFile(
            'w', prefix='gpuclient-ft-clouds-', suffix='.yaml')
        self.addCleanup(empty.close)
        empty.write('clouds: {}\n')
        empty.flush()
        env = {k: v for k, v in os.environ.items() if not k.startswith('OS_')}
        env.update(OS_CLIENT_CONFIG_FILE=empty.name, PYTHONWARNINGS='ignore')
        proc = subprocess.run([base.OPENSTACK, *args], capture_output=True,
                              text=True, env=env, timeout=120)
        return proc.returncode, proc.stdout, proc.stderr

    def test_catalogue_and_its_filters(self):
        rows = self.openstack('gpu', 'profile', 'list', '--long')
        rc, out, err = self.no_cloud('gpu', 'profile', 'list', '--long',
                                     '-f', 'json')
        self.assertEqual(0, rc, err)
        self.assertEqual(rows, json.loads(out))
        self.assertTrue(all(row['Source'] for row in rows))
        short = [{k: v for k, v in row.items() if k != 'Source'}
                 for row in rows]
        # a model (case-insensitive): its rows of the whole list, in order
        a100 = self.openstack('gpu', 'profile', 'list', '--model',
                              'a100-80gb')
        self.assertEqual([row for row in short
                          if row['Model'] == 'A100-80GB'], a100)
        # NVIDIA's MIG table of the A100 80GB: compute and memory slices,
        # GB, instances per GPU, start slots
        found = {row['Profile']: (
            row['Compute Slices'], row['Memory Slices'], row['Memory (GB)'],
            row['Max Count'], row['Placements']) for row in a100}
        self.assertEqual((1, 1, 10, 7, [0, 1, 2, 3, 4, 5, 6]),
                         found['1g.10gb'])
        self.assertEqual((3, 4, 40, 2, [0, 4]), found['3g.40gb'])
        self.assertEqual((7, 8, 80, 1, [0]), found['7g.80gb'])
        # a board: its model's MIG profiles, and the vGPU types named for
        # that board alone (time-sliced: no slices, no start slots)
        board = self.openstack('gpu', 'profile', 'list', '--board',
                               'h100-pcie-80gb')
        self.assertEqual({'H100-80GB'}, {row['Model'] for row in board})
        vgpu = [row for row in board if row['Board']]
        self.assertTrue(vgpu)
        self.assertEqual({('H100-PCIE-80GB', None, None, ())}, {
            (row['Board'], row['Compute Slices'], row['Memory Slices'],
             tuple(row['Placements'])) for row in vgpu})
        self.assertTrue(all(row['Profile'].startswith('H100-')
                            for row in vgpu))
        mig = [row for row in short if row['Model'] == 'H100-80GB'
               and not row['Board']]
        self.assertEqual(mig, [row for row in board if not row['Board']])
        # rows of the whole list, none made up by the filter; the SXM
        # module's types (H100XM-*) are not the PCIe card's
        self.assertEqual([], [row for row in vgpu if row not in short])
        self.assertTrue(any(row['Profile'].startswith('H100XM-')
                            for row in short))
        rc, out, err = self.openstack_raw('gpu', 'profile', 'list',
                                          '--model', 'no-such-gpu')
        self.assertEqual((1, ''), (rc, out))
        self.assertIn("Unknown GPU model 'no-such-gpu': give one of", err)
