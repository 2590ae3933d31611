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

"""``gpu export`` -> wipe -> ``gpu apply``: the cloud holds the same GPU
layer again, read back with plain ``openstack``.

The layer is the demo's recipes made with the single commands (an
isolated passthrough pool, a vGPU pool limited to a project, a MIG pool,
a bare-metal pool; a flavor of each, one of them private with an access
list; an image's GPU properties; a project's GPU quota), with this
test's names. The cloud is shared with the other stream's tests, so the
exported document is cut down to this test's objects and the wipe
removes only them.
"""

import os

import fixtures
import yaml

from gpuclient.tests.functional import base

PT_CLASS = 'CUSTOM_PCI_10DE_2331'


def unmarked(properties):
    """PROPERTIES without gpu apply's mark (gpu_managed_by on an
    aggregate, gpuclient:managed_by on a flavor): the single commands do
    not write it, the apply does."""
    return {k: v for k, v in properties.items() if 'managed_by' not in k}


class TestRoundTrip(base.KeepsLaneBOut, base.FunctionalTestCase):

    def make_project(self):
        project = self.openstack('project', 'create',
                                 self.unique_name('rt'))
        self.addCleanup(self.openstack, 'project', 'delete', project['id'],
                        parse=False)
        return project

    def make_image(self):
        image = self.openstack('image', 'create', '--disk-format', 'raw',
                               '--container-format', 'bare',
                               self.unique_name('rtimage'))
        self.addCleanup(self.openstack, 'image', 'delete', image['id'],
                        parse=False)
        return image

    def gpu(self, *args):
        self.openstack('gpu', *args, parse=False)

    def build(self, names, project, image):
        """The demo's recipes, with the single commands."""
        pt, vg, mig, bm = names['pools']
        self.gpu('pool', 'create', pt, '--mode', 'passthrough', '--alias',
                 names['alias'], '--pci-id', '10de:2331', '--host',
                 base.PT_HOST, '--isolate', '--property', 'team=solvers')
        self.gpu('pool', 'create', vg, '--mode', 'vgpu', '--vgpu-type',
                 'nvidia-35', '--host', base.VGPU_HOST, '--project',
                 project['id'])
        self.gpu('pool', 'create', mig, '--mode', 'mig', '--mig-profile',
                 '3g.40gb', '--host', base.MIG_HOST)
        self.gpu('pool', 'create', bm, '--mode', 'baremetal',
                 '--resource-class', 'baremetal.gpu-h100', '--host',
                 base.BM_HOST)
        f_pt, f_vg, f_mig, f_bm = names['flavors']
        self.gpu('flavor', 'create', f_pt, '--pool', pt, '--vcpus', '2',
                 '--ram', '2048', '--disk', '1', '--numa-policy', 'legacy')
        self.gpu('flavor', 'create', f_vg, '--pool', vg, '--vcpus', '2',
                 '--ram', '2048', '--disk', '1', '--private', '--project',
                 project['id'], '--description', 'workstation vGPU')
        self.gpu('flavor', 'create', f_mig, '--pool', mig, '--vcpus', '1',
                 '--ram', '1024', '--disk', '1')
        self.gpu('flavor', 'create', f_bm, '--pool', bm, '--vcpus', '8',
                 '--ram', '8192', '--disk', '10')
        self.gpu('image', 'set', image['id'], '--q35', '--uefi')
        self.gpu('quota', 'set', '--project', project['id'], '--pool', pt,
                 '--gpus', '2')

    def wipe(self, names, project, image):
        """Remove this test's GPU layer with the single commands."""
        self.gpu('quota', 'delete', '--project', project['id'],
                 '--resource-class', PT_CLASS)
        self.gpu('image', 'unset', image['id'], '--q35', '--uefi')
        self.gpu('flavor', 'delete', *names['flavors'])
        for pool in names['pools']:
            self.gpu('pool', 'delete', '--force', pool)

    def held(self, names, project, image):
        """What Nova, Placement, Glance and Keystone hold of the layer,
        read with plain ``openstack`` (IDs left out: a flavor made again
        has another)."""
        state = {'aggregates': {}, 'flavors': {}}
        for pool in names['pools']:
            agg = self.openstack('aggregate', 'show', pool)
            state['aggregates'][pool] = {
                'hosts': sorted(agg['hosts']),
                'properties': unmarked(agg['properties']),
                'zone': agg['availability_zone']}
        for flavor in names['flavors']:
            shown = self.openstack('flavor', 'show', flavor)
            state['flavors'][flavor] = {
                key: shown.get(key) for key in (
                    'vcpus', 'ram', 'disk', 'OS-FLV-EXT-DATA:ephemeral',
                    'swap', 'os-flavor-access:is_public', 'properties',
                    'description', 'access_project_ids')}
            state['flavors'][flavor]['properties'] = unmarked(
                shown['properties'])
        state['traits'] = {
            host: sorted(t for t in self.traits(self.root_provider(host))
                         if t.startswith('CUSTOM_'))
            for host in (base.PT_HOST, base.VGPU_HOST, base.MIG_HOST)}
        # the vGPU type trait gpuclient puts on the pGPU providers
        root = self.root_provider(base.VGPU_HOST)
        state['pgpu_traits'] = sorted(
            (rp['name'], sorted(t for t in self.traits(rp['uuid'])
                                if t.startswith('CUSTOM_')))
            for rp in self.openstack('resource', 'provider', 'list',
                                     '--in-tree', root)
            if rp['uuid'] != root)
        props = self.openstack('image', 'show', image['id'])['properties']
        state['image'] = {k: v for k, v in props.items()
                          if k.startswith('hw_')}
        state['limits'] = sorted(
            (row['Resource Name'], row['Resource Limit'])
            for row in self.openstack('limit', 'list', '--project',
                                      project['id']))
        return state

    def ours(self, document, names, project, image):
        """DOCUMENT cut down to this test's objects."""
        pools, flavors = set(names['pools']), set(names['flavors'])
        keys = {project['id'], project['name']}
        return {
            'version': document['version'],
            'pools': [p for p in document.get('pools', ())
                      if p['name'] in pools],
            'flavors': [f for f in document.get('flavors', ())
                        if f['name'] in flavors],
            'images': [i for i in document.get('images', ())
                       if i['name'] in (image['id'], image['name'])],
            'quotas': [q for q in document.get('quotas', ())
                       if q.get('project') in keys],
        }

    @base.needs('passthrough', 'vgpu', 'mig', 'baremetal')
    def test_export_wipe_apply_holds_the_same_layer(self):
        names = {'pools': [self.unique_name(p)
                           for p in ('solver', 'ws', 'mig', 'training')],
                 'flavors': [self.unique_name(f)
                             for f in ('g1pt', 'g1vg', 'g1mig', 'bm')],
                 'alias': 'rt%s' % self.unique_name('a')[-6:]}
        project, image = self.make_project(), self.make_image()
        # cleanups run last first: quota and flavors before the pools
        for pool in names['pools']:
            self.addCleanup(self.delete_pool, pool)
        for flavor in names['flavors']:
            self.addCleanup(self.openstack_raw, 'flavor', 'delete', flavor)
        self.forget_registered()
        self.addCleanup(self.openstack_raw, 'gpu', 'quota', 'delete',
                        '--project', project['id'], '--resource-class',
                        PT_CLASS)
        self.build(names, project, image)
        before = self.held(names, project, image)
        # the build is what the test thinks it is
        self.assertIn('CUSTOM_GPU_POOL_' + names['pools'][0].upper()
                      .replace('-', '_'), before['traits'][base.PT_HOST])
        self.assertEqual('q35', before['image']['hw_machine_type'])
        self.assertEqual(2, len(before['pgpu_traits']))
        for _name, traits in before['pgpu_traits']:
            self.assertIn('CUSTOM_NVIDIA_35', traits)
        self.assertIn(('class:' + PT_CLASS, 2), before['limits'])
        self.assertEqual([project['id']], before['flavors'][
            names['flavors'][1]]['access_project_ids'])

        where = self.useFixture(fixtures.TempDir()).path
        exported = os.path.join(where, 'all.yaml')
        self.gpu('export', '--output', exported)
        with open(exported) as f:
            document = self.ours(yaml.safe_load(f), names, project, image)
        self.assertEqual((4, 4, 1, 1), tuple(
            len(document[k]) for k in ('pools', 'flavors', 'images',
                                       'quotas')), document)
        path = os.path.join(where, 'ours.yaml')
        with open(path, 'w') as out:
            yaml.safe_dump(document, out)
        self.assertEqual(0, self.openstack_raw('gpu', 'diff', path)[0])

        self.wipe(names, project, image)
        gone = {a['Name'] for a in self.openstack('aggregate', 'list')}
        self.assertFalse(gone & set(names['pools']))
        self.assertEqual(1, self.openstack_raw('gpu', 'diff', path)[0])

        self.gpu('apply', path)
        self.assertEqual(before, self.held(names, project, image))
        rc, out, err = self.openstack_raw('gpu', 'apply', path, '--dry-run')
        self.assertEqual(0, rc, err)
        self.assertIn('nothing to do', out)
        self.assertEqual(0, self.openstack_raw('gpu', 'diff', path)[0])

    def forget_registered(self):
        """Delete at cleanup the registered limit of the passthrough class
        if this test's ``gpu quota set`` makes it."""
        registered = {row['Resource Name'] for row in self.openstack(
            'registered', 'limit', 'list')}
        if 'class:' + PT_CLASS not in registered:
            self.addCleanup(self.openstack_raw, 'gpu', 'quota', 'delete',
                            '--default', '--resource-class', PT_CLASS)
