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

"""``openstack gpu host facts`` against the test cloud (issue 54 item 2).

Each fake GPU host of the test cloud has a fake sysfs/procfs tree of its
kind (tools/cloud/host_trees.py, at the PCI addresses of its fake driver,
tools/cloud/fakevirt.py); gpuclient-host-facts runs on it and Debian's
node_exporter serves its textfile to the cloud's Prometheus. What the
command shows of a host must be what its tree holds. A test that breaks a
tree leases the host (``host_lease``), rewrites the tree with the test
cloud's helper (GPUCLIENT_HOST_TREE_HELPER, which ``tools/testcloud env``
sets to ``tools/testcloud host-facts``: ``<helper> HOST [--fault
FAULT]...`` rewrites HOST's tree, re-runs its collector and prints when
it collected), waits until Prometheus holds facts collected then or
later (the
authority the command reads), asserts once, and puts the healthy tree
back.
"""

import importlib.util
import json
import os
import shlex
import subprocess

import openstack
import requests

from gpuclient.tests.functional import base

_TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
_spec = importlib.util.spec_from_file_location(
    'host_trees', os.path.join(_TOP, 'tools', 'cloud', 'host_trees.py'))
host_trees = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(host_trees)

HELPER = os.environ.get('GPUCLIENT_HOST_TREE_HELPER')
COLLECTED = 'gpuclient_host_facts_collected_timestamp_seconds'
# how long a rewritten tree may take to be collected and scraped
SCRAPE_TIMEOUT = 60


def prometheus_url():
    return openstack.config.OpenStackConfig().get_one(
        cloud=base.ADMIN_CLOUD).config['prometheus_endpoint']


def audio(address):
    """The audio function of a passthrough card (host_trees: function 1)."""
    return address[:-1] + '1'


class HostFactsTestCase(base.FunctionalTestCase):

    def facts(self, *args):
        """The rows of gpu host facts ARGS --long, by (host, device)."""
        rows = self.openstack('gpu', 'host', 'facts', '--long', *args)
        return {(r['Host'], r['Device']): r for r in rows}

    def devices(self, host, rows):
        return {device: row for (name, device), row in rows.items()
                if name == host}

    def collected(self, host):
        """When the facts Prometheus holds of HOST (any of its names) were
        collected, or None."""
        answer = requests.get(prometheus_url() + '/api/v1/query', params={
            'query': '%s{Hostname=~"(?i)%s([.].*)?"}' % (COLLECTED, host)},
            timeout=10)
        answer.raise_for_status()
        found = answer.json()['data']['result']
        return max((float(s['value'][1]) for s in found), default=None)

    def rewrite(self, host, *faults):
        """HOST's tree rewritten with FAULTS, collected and
        scraped (a bounded wait on Prometheus); the healthy tree is put
        back at cleanup."""
        if not HELPER:
            reason = ('no host tree helper on this cloud (set '
                      'GPUCLIENT_HOST_TREE_HELPER)')
            if os.environ.get('GPUCLIENT_FT_NO_SKIP') == '1':
                self.fail(reason)
            self.skipTest(reason)

        def run(*fault_args):
            """The helper's run: when it collected the tree it wrote (it
            prints ``collected <timestamp>``)."""
            proc = subprocess.run(shlex.split(HELPER) + [host, *fault_args],
                                  check=True, capture_output=True,
                                  timeout=120, text=True)
            return float(proc.stdout.split()[-1])

        self.addCleanup(run)
        args = []
        for fault in faults:
            args += ['--fault', fault]
        since = run(*args)
        # every collection from the helper's on is of the tree it wrote
        # (the test cloud's timer waits for the helper: a lock)
        seen = self.wait_for('%s collected again' % host,
                             lambda: self.collected(host),
                             lambda when: when is not None and when >= since,
                             timeout=SCRAPE_TIMEOUT)
        self.assertGreaterEqual(seen or 0, since)


class TestHostFacts(HostFactsTestCase):

    def test_each_kind_of_host_as_its_tree_holds(self):
        self.need_host('passthrough', 'vgpu', 'mig')
        rows = self.facts(self.pt_host, self.vgpu_host, base.MIG_HOST)
        pt = self.devices(self.pt_host, rows)
        self.assertEqual(sorted(host_trees.GPUS['passthrough']), sorted(pt))
        for address, row in pt.items():
            self.assertEqual(
                ('vfio-pci', {audio(address): 'vfio-pci'},
                 host_trees.numa_node(address), None, None, 'ok'),
                (row['Driver'], row['Group Drivers'], row['NUMA Node'],
                 row['VFs'], row['MIG'], row['Status']), address)
            self.assertEqual(
                (True, {'intel_iommu': 'on', 'iommu': 'pt'},
                 host_trees.KERNEL, None, '10.0.0', '8.2.2', '29.0.0',
                 False, []),
                (row['IOMMU Active'], row['Kernel IOMMU Args'],
                 row['Kernel'], row['NVIDIA Driver'], row['libvirt'],
                 row['QEMU'], row['nova-compute'], row['mdevctl'],
                 row['Unreadable']), address)
            self.assertGreaterEqual(row['Age'], 0)
        vgpu = self.devices(self.vgpu_host, rows)
        first, second = host_trees.GPUS['vgpu']
        name, label, total = host_trees.MDEV_TYPE
        self.assertEqual(
            {first: ('nvidia', ['%s (%s): 1 made, %d available'
                                % (name, label, total - 1)],
                     host_trees.DRIVER, True),
             second: ('nvidia', ['%s (%s): 0 made, %d available'
                                 % (name, label, total)],
                      host_trees.DRIVER, True)},
            {address: (row['Driver'], row['vGPU Types'],
                       row['NVIDIA Driver'], row['mdevctl'])
             for address, row in vgpu.items()})
        mig = self.devices(base.MIG_HOST, rows)
        card = host_trees.GPUS['mig'][0]
        name, label, _one = host_trees.MIG_MDEV_TYPE
        vfs = host_trees.VF_COUNT['mig']
        self.assertEqual(
            {card: ('%d/%d' % (vfs, vfs), 'enabled',
                    [host_trees.MIG_PROFILE[0]] * 7,
                    ['%s (%s): 1 made, %d available'
                     % (name, label, vfs - 1)])},
            {address: (row['VFs'], row['MIG'], row['MIG Layout'],
                       row['vGPU Types'])
             for address, row in mig.items()})

    def test_a_pool_lists_its_hosts(self):
        self.need_host('passthrough')
        pool = self.unique_name('facts')
        self.addCleanup(self.delete_pool, pool)
        self.openstack('gpu', 'pool', 'create', pool, '--mode',
                       'passthrough', '--alias', 'h100', '--pci-id',
                       '10de:2331', '--host', self.pt_host, parse=False)
        hosts = sorted(self.openstack('aggregate', 'show', pool)['hosts'])
        rows = self.facts('--pool', pool)
        self.assertEqual(hosts, sorted({host for host, _d in rows}))

    def test_bad_input_is_one_line(self):
        for args, said in (
                (['gpu-no-such-host'], 'gpu-no-such-host'),
                (['--prometheus', 'http://127.0.0.1:9/'],
                 'The host facts could not be read')):
            rc, out, err = self.openstack_raw('gpu', 'host', 'facts', *args)
            self.assertEqual((1, ''), (rc, out), err)
            self.assertIn(said, err)
            self.assertNotIn('Traceback', err)


class TestHostFactsFaults(HostFactsTestCase):

    def test_vfs_lost_at_a_reboot_and_back(self):
        host = self.host_lease('vgpu-vf')
        pf = host_trees.GPUS['vgpu-vf'][0]
        total = host_trees.VF_COUNT['vgpu-vf']
        typed = host_trees.VFS_TYPED
        self.rewrite(host, 'vfs-lost')
        row = self.devices(host, self.facts(host))[pf]
        self.assertEqual(('0/%d' % total, []), (row['VFs'],
                                                row['vGPU Types']))
        self.rewrite(host)
        row = self.devices(host, self.facts(host))[pf]
        self.assertEqual(
            ('%d/%d' % (total, total),
             ['L40S-24Q x%d' % typed, 'none x%d' % (total - typed)]),
            (row['VFs'], row['vGPU Types']))

    def test_unreadable_facts_are_said_never_guessed(self):
        host = self.host_lease('vgpu-vf')
        pf = host_trees.GPUS['vgpu-vf'][0]
        self.rewrite(host, 'garbage-vgpu-type',
                     'missing-numa-node')
        rc, out, err = self.openstack_raw('gpu', 'host', 'facts', host,
                                          '--long', '-f', 'json')
        self.assertEqual(0, rc, err)
        row = {r['Device']: r for r in json.loads(out)}[pf]
        total = host_trees.VF_COUNT['vgpu-vf']
        typed = host_trees.VFS_TYPED
        self.assertEqual(
            ('unreadable', ['L40S-24Q x%d' % (typed - 1),
                            'none x%d' % (total - typed), 'unreadable x1']),
            (row['NUMA Node'], row['vGPU Types']))
        first_vf = host_trees.vfs(pf, total)[0]
        self.assertIn('vgpu_type (%s)' % first_vf, row['Unreadable'])
        self.assertIn('numa_node (%s)' % pf, row['Unreadable'])
