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

"""``openstack gpu config show`` against the cloud's own configuration.

On the project's test cloud the rendered keys are compared, key for key,
with the configuration its services run with (``etc/nova/nova.conf`` and
``nova-compute-<host>.conf`` next to its clouds.yaml), for the vGPU host
too: its fake driver reports the pGPUs its ``[mdev_*] device_addresses``
list, which Placement holds. A test cloud started before that host's
conf had ``[devices]`` skips the vGPU comparison (after all the others).
On another cloud the comparison with files is skipped (they are not
readable from here) and only Placement is compared.
"""

import ast
import json
import os
import shutil
import tempfile

from gpuclient.rules.nova_conf import parse
from gpuclient.tests.functional import base

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
PCI_ID = os.environ.get('GPUCLIENT_PT_PCI_ID', '10de:2331')
VGPU_TYPE = 'nvidia-35'


def testcloud_etc():
    """The test cloud's etc/nova, or None for another cloud."""
    clouds = os.environ.get('OS_CLIENT_CONFIG_FILE') or ''
    etc = os.path.join(os.path.dirname(clouds), 'etc', 'nova')
    if 'gpuclient-testcloud' in clouds and os.path.isfile(
            os.path.join(etc, 'nova.conf')):
        return etc
    return None


def fake_driver_devices(driver):
    """DEVICES of a test cloud fake driver class (read, not imported: it
    needs nova)."""
    path = os.path.join(TOP, 'tools', 'cloud', 'fakevirt.py')
    with open(path) as source:
        tree = ast.parse(source.read())
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == driver:
            for item in node.body:
                if (isinstance(item, ast.Assign)
                        and item.targets[0].id == 'DEVICES'):
                    return list(ast.literal_eval(item.value))
    raise AssertionError('no %s.DEVICES in %s' % (driver, path))


def read_ini(*paths):
    parsed = []
    for path in paths:
        with open(path) as conf:
            parsed.append(parse.parse_ini(conf.read(), path))
    return parse.merge_ini(parsed)


class TestConfigShow(base.FunctionalTestCase):
    @base.needs('passthrough', 'vgpu')
    def test_rendered_config_matches_the_cloud(self):
        pt = self.unique_name('cfg-pt')
        vg = self.unique_name('cfg-vg')
        alias = 'h100'
        self.addCleanup(self.delete_pool, pt)
        self.openstack('gpu', 'pool', 'create', pt, '--mode', 'passthrough',
                       '--alias', alias, '--pci-id', PCI_ID,
                       '--host', base.PT_HOST)
        self.addCleanup(self.delete_pool, vg)
        self.openstack('gpu', 'pool', 'create', vg, '--mode', 'vgpu',
                       '--vgpu-type', VGPU_TYPE, '--host', base.VGPU_HOST)
        # the alias's numa_policy comes from its flavors when they agree,
        # else --numa-policy (preferred): with this flavor it is preferred
        # whatever other flavors asking for h100 say
        flavor = self.unique_name('cfg-pt')
        self.addCleanup(self.openstack, 'flavor', 'delete', flavor,
                        parse=False)
        self.openstack('flavor', 'create', flavor, '--vcpus', '1', '--ram',
                       '64', '--disk', '1', '--private', '--property',
                       'pci_passthrough:alias=%s:1' % alias, '--property',
                       'hw:pci_numa_affinity_policy=preferred')
        out = tempfile.mkdtemp(prefix='gpuclient-ft-config-')
        self.addCleanup(shutil.rmtree, out, True)
        written = [row['Path'] for row in self.openstack(
            'gpu', 'config', 'export', '--pool', pt, '--pool', vg,
            '--layout', 'kolla', '--output-dir', out)]
        self.assertEqual(sorted(os.path.join(out, p) for p in (
            'nova.conf', 'nova/nova-scheduler.conf',
            'nova/%s/nova.conf' % base.PT_HOST,
            'nova/%s/nova.conf' % base.VGPU_HOST)), sorted(written))
        every = read_ini(os.path.join(out, 'nova.conf'))
        sched = read_ini(os.path.join(out, 'nova/nova-scheduler.conf'))
        pt_conf = read_ini(os.path.join(out, 'nova', base.PT_HOST,
                                        'nova.conf'))
        vg_conf = read_ini(os.path.join(out, 'nova', base.VGPU_HOST,
                                        'nova.conf'))
        # only keys gpuclient owns, where they belong: pci_in_placement
        # where nova-api, nova-scheduler and nova-conductor all read it
        self.assertEqual({'filter_scheduler': ['pci_in_placement'],
                          'pci': ['alias']},
                         {s: sorted(k) for s, k in every.items()})
        self.assertEqual({'filter_scheduler': ['enabled_filters']},
                         {s: sorted(k) for s, k in sched.items()})
        self.assertEqual({'pci': ['device_spec', 'report_in_placement']},
                         {s: sorted(k) for s, k in pt_conf.items()})
        self.assertEqual(['devices', 'libvirt', 'mdev_%s' % VGPU_TYPE],
                         sorted(vg_conf))
        # vGPUs are VFIO devices: post-copy off where they live-migrate
        # (issue 40, rule 4)
        self.assertEqual(['false'], vg_conf['libvirt'][
            'live_migration_permit_post_copy'])

        # the vGPU host: the pGPU addresses are those of the providers Nova
        # made in Placement, the ones the test cloud's driver reports
        root = self.root_provider(base.VGPU_HOST)
        children = [rp['name'] for rp in self.openstack(
            'resource', 'provider', 'list', '--in-tree', root)
            if rp['uuid'] != root]
        addresses = sorted(
            vg_conf['mdev_%s' % VGPU_TYPE]['device_addresses'][0].split(','))
        self.assertEqual(
            sorted('%s_pci_%s' % (self.hypervisor(base.VGPU_HOST)[
                'hypervisor_hostname'], a.replace(':', '_').replace('.', '_'))
                for a in addresses),
            sorted(children))
        self.assertEqual([VGPU_TYPE],
                         vg_conf['devices']['enabled_mdev_types'])

        etc = testcloud_etc()
        if etc is None:
            self.skipTest('not the local test cloud: its nova.conf files '
                          'cannot be read, so only Placement was compared')
        self.assertEqual(sorted(fake_driver_devices('VgpuDriver')),
                         addresses)
        # passthrough: key for key against what the test cloud runs with
        compute = read_ini(os.path.join(etc, 'nova.conf'), os.path.join(
            etc, 'nova-compute-%s.conf' % base.PT_HOST))
        controller = read_ini(os.path.join(etc, 'nova.conf'))
        for ours, theirs in ((every, compute), (every, controller),
                             (pt_conf, compute)):
            for section, keys in ours.items():
                for key, values in keys.items():
                    have = theirs.get(section, {}).get(key)
                    self.assertTrue(have, '[%s] %s' % (section, key))
                    if key == 'alias':
                        # the cloud's nova.conf also has the aliases of
                        # hosts these pools do not cover (gpu-otu-1,
                        # gpu-vf-1): each rendered one is there
                        self.assertLessEqual(
                            {json.dumps(json.loads(v), sort_keys=True)
                             for v in values},
                            {json.dumps(json.loads(v), sort_keys=True)
                             for v in have}, key)
                    elif key == 'device_spec':
                        self.assertEqual(
                            sorted(json.dumps(json.loads(v), sort_keys=True)
                                   for v in values),
                            sorted(json.dumps(json.loads(v), sort_keys=True)
                                   for v in have), key)
                    else:
                        self.assertEqual(values[-1].lower(),
                                         have[-1].lower(), key)
        filters = sched['filter_scheduler']
        self.assertLessEqual(
            set(filters['enabled_filters'][0].split(',')),
            set(controller['filter_scheduler']['enabled_filters'][-1]
                .split(',')))
        self.assertEqual(controller['filter_scheduler']['pci_in_placement'],
                         every['filter_scheduler']['pci_in_placement'])
        # and --diff agrees: the test cloud's scheduler lacks nothing
        rc, stdout, stderr = self.openstack_raw(
            'gpu', 'config', 'show', '--pool', pt, '--pool', vg,
            '--diff', os.path.join(etc, 'nova.conf'))
        self.assertEqual(0, rc, stdout + stderr)

        # vGPU: key for key against the vGPU host's nova-compute, whose
        # fake driver reports the pGPUs its [mdev_*] device_addresses list
        vg_etc = read_ini(os.path.join(etc, 'nova.conf'), os.path.join(
            etc, 'nova-compute-%s.conf' % base.VGPU_HOST))
        if 'devices' not in vg_etc:
            self.skipTest('the running test cloud predates [devices] in '
                          'nova-compute-%s.conf (restart it: tools/testcloud'
                          ' down && up); everything else was compared'
                          % base.VGPU_HOST)
        for section, keys in vg_conf.items():
            for key, values in keys.items():
                have = vg_etc.get(section, {}).get(key)
                if (section, key) == ('libvirt',
                                      'live_migration_permit_post_copy'):
                    # unset on the test cloud: Nova's default, False
                    self.assertEqual('false', (have or ['false'])[-1].lower())
                    continue
                self.assertTrue(have, '[%s] %s' % (section, key))
                self.assertEqual(set(values[-1].split(',')),
                                 set(have[-1].split(',')),
                                 '[%s] %s' % (section, key))
        self.assertEqual(sorted(s for s in vg_etc if s.startswith('mdev_')),
                         sorted(s for s in vg_conf if s.startswith('mdev_')))
