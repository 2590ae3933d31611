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

"""``openstack gpu flavor ...`` against a real cloud.

Pools are made by hand here, exactly as the pool encoding says (plain
``openstack aggregate`` commands with ``pools.metadata_for``, type traits on
the host's VGPU child providers), so these tests need nothing but the
flavor commands. Every pool gets its own vGPU type / MIG profile, hence its
own type trait, so tests running at the same time do not disturb each
other. Flavors are read back with plain ``openstack flavor show``.
"""

import json
import os
import time
import uuid

import yaml

from gpuclient.rules import pools
from gpuclient.tests.functional import base

PCI_CLASS = 'CUSTOM_PCI_10DE_2331'
BM_CLASS = 'CUSTOM_BAREMETAL_GPU_H100'
STEER = 'aggregate_instance_extra_specs:gpu_pool'
OPERATOR_CLOUD = os.environ.get('GPUCLIENT_FLAVOR_OPERATOR_CLOUD',
                                'gpuclient-flavor-operator')
PLACEMENT_TRAITS = base.PLACEMENT_TRAITS
SIZES = ('--vcpus', '1', '--ram', '512', '--disk', '1')


def _clouds():
    path = os.environ.get('OS_CLIENT_CONFIG_FILE')
    candidates = [path] if path else [
        'clouds.yaml', os.path.expanduser('~/.config/openstack/clouds.yaml'),
        '/etc/openstack/clouds.yaml']
    for candidate in candidates:
        if candidate and os.path.exists(candidate):
            with open(candidate) as f:
                return (yaml.safe_load(f) or {}).get('clouds') or {}
    return {}


class GpuFlavorTestCase(base.FunctionalTestCase):
    """Hand-made pools, flavors and servers that clean up after themselves."""

    def gpu_children(self, host, resource_class='VGPU'):
        root = self.root_provider(host)
        found = []
        for rp in self.openstack('resource', 'provider', 'list',
                                 '--in-tree', root):
            if rp['uuid'] == root:
                continue
            inventory = self.openstack('resource', 'provider', 'inventory',
                                       'list', rp['uuid'])
            if any(i['resource_class'] == resource_class
                   for i in inventory):
                found.append(rp['uuid'])
        return found

    def update_traits(self, provider, add=(), remove=()):
        """Read-modify-write of a provider's traits, retried on conflict."""
        for attempt in range(5):
            current = self.traits(provider)
            wanted = (current | set(add)) - set(remove)
            if wanted == current:
                return
            if wanted:
                args = []
                for trait in sorted(wanted):
                    args += ['--trait', trait]
                rc, _out, err = self.openstack_raw(
                    *PLACEMENT_TRAITS, 'resource', 'provider', 'trait', 'set',
                    *args, provider)
            else:
                rc, _out, err = self.openstack_raw(
                    *PLACEMENT_TRAITS, 'resource', 'provider', 'trait',
                    'delete', provider)
            if rc == 0:
                return
            if '409' not in err:
                break  # not a generation conflict: no retry helps
            # Placement's protocol for a read-modify-write that lost the
            # race with Nova's resource tracker: read again, write again
            # (a real conflict, not a wait for an answer to agree)
            time.sleep(0.5 + attempt)
        self.fail('could not update traits of %s: %s' % (provider, err))

    def make_pool(self, mode, host=None, **options):
        """A pool made by hand: aggregate, metadata, host, type trait."""
        name = self.unique_name(mode)
        tag = uuid.uuid4().hex[:6]
        if mode == pools.VGPU:
            options.setdefault('vgpu_type', 'ft-%s' % tag)
        elif mode == pools.MIG:
            options.setdefault('mig_profile', 'ft.%s' % tag)
        elif mode == pools.PASSTHROUGH:
            options.setdefault('alias', 'h100')
            options.setdefault('pci_id', '10de:2331')
        elif mode == pools.BAREMETAL:
            options.setdefault('resource_class', BM_CLASS)
        spec = pools.build_spec(name, mode, **options)
        self.openstack('aggregate', 'create', name)
        self.addCleanup(self.openstack, 'aggregate', 'delete', name,
                        parse=False)
        args = []
        for key, value in sorted(pools.metadata_for(spec).items()):
            args += ['--property', '%s=%s' % (key, value)]
        self.openstack('aggregate', 'set', *args, name, parse=False)
        if host:
            self.openstack('aggregate', 'add', 'host', name, host)
            self.addCleanup(self.openstack, 'aggregate', 'remove', 'host',
                            name, host)
        trait = pools.type_trait(mode, spec['vgpu_type'],
                                 spec['mig_profile'])
        if host and trait and spec['resource_class'] == 'VGPU':
            self.openstack(*PLACEMENT_TRAITS, 'trait', 'create', trait,
                           parse=False)
            self.addCleanup(self.openstack_raw, *PLACEMENT_TRAITS, 'trait',
                            'delete', trait)
            for provider in self.gpu_children(host):
                self.update_traits(provider, add=[trait])
                self.addCleanup(self.update_traits, provider,
                                remove=[trait])
        return name

    def gpu_flavor(self, pool, *args):
        """``gpu flavor create``; deleted at cleanup with plain OSC."""
        name = self.unique_name('flavor')
        rc, out, err = self.openstack_raw(
            'gpu', 'flavor', 'create', name, '--pool', pool, *args,
            '-f', 'json')
        if rc:
            self.fail('gpu flavor create failed: %s' % err.strip())
        self.addCleanup(self.delete_flavor, name)
        return json.loads(out), err

    def delete_flavor(self, name):
        """Cleanup: delete a flavor unless a test already did."""
        rc, _out, err = self.openstack_raw('flavor', 'delete', name)
        if rc and 'No Flavor found' not in err:
            raise base.CommandFailed(['flavor', 'delete', name], rc, '', err)

    def flavor_specs(self, name):
        return self.openstack('flavor', 'show', name)['properties']

    def boot_on(self, flavor, host=None):
        """Boot (optionally with --host, compute API 2.74); (server, err)."""
        name = self.unique_name('server')
        extra = ['--host', host] if host else []
        rc, out, err = self.openstack_raw(
            '--os-compute-api-version', base.COMPUTE_API, 'server', 'create',
            '--flavor', flavor, '--image', base.IMAGE, '--nic', 'none',
            '--wait', *extra, name, '-f', 'json')
        self.addCleanup(self._delete_server, name)
        rc, out, show_err = self.openstack_raw(
            '--os-compute-api-version', base.COMPUTE_API, 'server', 'show',
            name, '-f', 'json')
        if rc:
            self.fail('server create failed: %s' % err.strip())
        return json.loads(out), err

    def allocations_by_provider(self, server_id):
        return {row['resource_provider']: row['resources']
                for row in self.openstack('resource', 'provider',
                                          'allocation', 'show', server_id)}

    def assert_gpu_allocation(self, server, host, resource_class, count):
        """COUNT units of the class, one per provider, in HOST's tree."""
        self.assertEqual('ACTIVE', server['status'], server.get('fault'))
        self.assertEqual(host, server['OS-EXT-SRV-ATTR:host'])
        allocations = self.allocations_by_provider(server['id'])
        gpu = {rp: res[resource_class] for rp, res in allocations.items()
               if resource_class in res}
        self.assertEqual(count, sum(gpu.values()), allocations)
        self.assertEqual(count, len(gpu), allocations)
        root = self.root_provider(host) if host != base.BM_HOST else None
        for provider in gpu:
            shown = self.openstack('resource', 'provider', 'show', provider)
            if root:
                self.assertEqual(root, shown['root_provider_uuid'])
        return allocations

    def assert_refused_on(self, flavor, host):
        server, err = self.boot_on(flavor, host)
        self.assertEqual('ERROR', server['status'], err)
        self.assertIn('No valid host', str(server.get('fault')))


class TestFlavorModes(GpuFlavorTestCase):
    """Per mode: create, boot on the pool, refused outside it."""

    @base.needs('passthrough', 'baremetal', 'plain')
    def test_passthrough(self):
        pool = self.make_pool(pools.PASSTHROUGH, base.PT_HOST)
        flavor, _err = self.gpu_flavor(pool, *SIZES)
        self.assertEqual({
            STEER: pool, 'pci_passthrough:alias': 'h100:1',
            'hw:pci_numa_affinity_policy': 'preferred',
        }, self.flavor_specs(flavor['name']))
        self.assertEqual(('passthrough', 1), (flavor['mode'], flavor['gpus']))
        server, _err = self.boot_on(flavor['name'])
        self.assert_gpu_allocation(server, base.PT_HOST, PCI_CLASS, 1)
        self.assert_refused_on(flavor['name'], base.PLAIN_HOST)

    @base.needs('vgpu', 'mig', 'baremetal')
    def test_vgpu(self):
        pool = self.make_pool(pools.VGPU, base.VGPU_HOST)
        flavor, _err = self.gpu_flavor(pool, *SIZES)
        specs = self.flavor_specs(flavor['name'])
        traits = [k for k in specs if k.startswith('trait:CUSTOM_FT_')]
        self.assertEqual(1, len(traits), specs)
        trait = traits[0][len('trait:'):]
        self.assertEqual({STEER: pool, 'resources:VGPU': '1',
                          'trait:' + trait: 'required'}, specs)
        server, _err = self.boot_on(flavor['name'])
        allocations = self.assert_gpu_allocation(server, base.VGPU_HOST,
                                                 'VGPU', 1)
        (provider,) = [rp for rp, res in allocations.items()
                       if 'VGPU' in res]
        self.assertIn(trait, self.traits(provider))
        # the MIG host has VGPU inventory too, but not this type or pool
        self.assert_refused_on(flavor['name'], base.MIG_HOST)

    @base.needs('vgpu', 'baremetal')
    def test_two_vgpus_from_two_pgpus(self):
        pool = self.make_pool(pools.VGPU, base.VGPU_HOST)
        children = self.gpu_children(base.VGPU_HOST)
        free = 0
        for provider in children:
            usage = {u['resource_class']: u['usage'] for u in self.openstack(
                'resource', 'provider', 'usage', 'show', provider)}
            inventory = {i['resource_class']: i for i in self.openstack(
                'resource', 'provider', 'inventory', 'list', provider)}
            inv = inventory['VGPU']
            capacity = int((inv['total'] - inv['reserved'])
                           * inv['allocation_ratio'])
            if capacity - usage.get('VGPU', 0) > 0:
                free += 1
        if free < 2:
            self.skipTest('fewer than two pGPUs of %s have a free vGPU now'
                          % base.VGPU_HOST)
        flavor, err = self.gpu_flavor(pool, '--gpus', '2', *SIZES)
        self.assertIn('SR-IOV', err)
        specs = self.flavor_specs(flavor['name'])
        self.assertEqual('isolate', specs['group_policy'])
        self.assertEqual('1', specs['resources1:VGPU'])
        self.assertEqual('1', specs['resources2:VGPU'])
        # the aggregate carries group_policy too (unscoped key trap)
        aggregate = self.openstack('aggregate', 'show', pool)
        self.assertEqual('isolate', aggregate['properties']['group_policy'])
        server, _err = self.boot_on(flavor['name'])
        self.assert_gpu_allocation(server, base.VGPU_HOST, 'VGPU', 2)

    @base.needs('vgpu', 'mig', 'baremetal')
    def test_mig(self):
        pool = self.make_pool(pools.MIG, base.MIG_HOST)
        flavor, _err = self.gpu_flavor(pool, *SIZES)
        specs = self.flavor_specs(flavor['name'])
        self.assertEqual('1', specs['resources:VGPU'])
        self.assertEqual(1, len([k for k in specs
                                 if k.startswith('trait:CUSTOM_MIG_FT_')]))
        self.assertEqual(('mig', 1), (flavor['mode'], flavor['gpus']))
        server, _err = self.boot_on(flavor['name'])
        self.assert_gpu_allocation(server, base.MIG_HOST, 'VGPU', 1)
        self.assert_refused_on(flavor['name'], base.VGPU_HOST)

    @base.needs('baremetal', 'plain')
    def test_baremetal(self):
        pool = self.make_pool(pools.BAREMETAL, base.BM_HOST)
        flavor, _err = self.gpu_flavor(pool, '--vcpus', '2', '--ram',
                                       '1024', '--disk', '2')
        shown = self.openstack('flavor', 'show', flavor['name'])
        self.assertEqual((2, 1024, 2),
                         (shown['vcpus'], shown['ram'], shown['disk']))
        self.assertEqual({
            STEER: pool, 'resources:%s' % BM_CLASS: '1',
            'resources:VCPU': '0', 'resources:MEMORY_MB': '0',
            'resources:DISK_GB': '0',
        }, shown['properties'])
        server, _err = self.boot_on(flavor['name'])
        allocations = self.assert_gpu_allocation(server, base.BM_HOST,
                                                 BM_CLASS, 1)
        for resources in allocations.values():
            self.assertNotIn('VCPU', resources)
        self.assert_refused_on(flavor['name'], base.PLAIN_HOST)


class TestFlavorCommands(GpuFlavorTestCase):
    @base.needs('baremetal')
    def test_list_show_delete_and_noop(self):
        pool = self.make_pool(pools.PASSTHROUGH)
        flavor, _err = self.gpu_flavor(
            pool, '--gpus', '2', '--numa-policy', 'required', '--property',
            'hw:numa_nodes=1', '--private', '--project', 'admin',
            '--description', 'two H100', *SIZES)
        plain = self.openstack('flavor', 'show', flavor['name'])
        self.assertFalse(plain['os-flavor-access:is_public'])
        self.assertEqual('two H100', plain['description'])
        self.assertEqual('h100:2',
                         plain['properties']['pci_passthrough:alias'])
        self.assertEqual('1', plain['properties']['hw:numa_nodes'])
        admin_project = self.openstack('project', 'show', 'admin')['id']
        self.assertEqual([admin_project], flavor['access_project_ids'])
        # the fields openstack flavor show has: its names, its values
        shown = self.openstack('gpu', 'flavor', 'show', flavor['name'])
        for field in ('id', 'name', 'description', 'vcpus', 'ram', 'disk',
                      'OS-FLV-EXT-DATA:ephemeral',
                      'os-flavor-access:is_public', 'access_project_ids',
                      'properties'):
            self.assertEqual(plain[field], shown[field], field)
            self.assertEqual(plain[field], flavor[field], field)
        # identical again: a no-op that says so
        rc, out, err = self.openstack_raw(
            'gpu', 'flavor', 'create', flavor['name'], '--pool', pool,
            '--gpus', '2', '--numa-policy', 'required', '--property',
            'hw:numa_nodes=1', '--private', '--project', admin_project,
            '--description', 'two H100', *SIZES, '-f', 'json')
        self.assertEqual(0, rc, err)
        self.assertIn('nothing to do', err)
        self.assertEqual(flavor['id'], json.loads(out)['id'])
        # a hand-made seed flavor is listed too
        seed = self.create_flavor({
            'pci_passthrough:alias': 'h100:1',
            'aggregate_instance_extra_specs:gpu': 'true',
            'hw:pci_numa_affinity_policy': 'preferred'})
        plain_flavor = self.create_flavor({'hw:cpu_policy': 'shared'})
        rows = {r['Name']: r for r in self.openstack('gpu', 'flavor',
                                                     'list', '--long')}
        self.assertEqual((pool, 'passthrough', 2),
                         (rows[flavor['name']]['Pool'],
                          rows[flavor['name']]['Mode'],
                          rows[flavor['name']]['GPUs']))
        self.assertEqual([admin_project], rows[flavor['name']]['Projects'])
        self.assertEqual(('passthrough', 1), (rows[seed['name']]['Mode'],
                                              rows[seed['name']]['GPUs']))
        self.assertNotIn(plain_flavor['name'], rows)
        only = self.openstack('gpu', 'flavor', 'list', '--pool', pool)
        self.assertEqual([flavor['name']], [r['Name'] for r in only])
        shown = self.openstack('gpu', 'flavor', 'show', seed['id'])
        self.assertEqual(('passthrough', 1, 'preferred'),
                         (shown['mode'], shown['gpus'],
                          shown['numa_policy']))
        # delete: N of M, non-GPU flavors refused
        rc, _out, err = self.openstack_raw(
            'gpu', 'flavor', 'delete', flavor['name'], plain_flavor['name'])
        self.assertEqual(1, rc)
        self.assertIn('1 of 2 flavors failed to delete.', err)
        self.assertIn('not a GPU flavor', err)
        names = {f['Name'] for f in self.openstack('flavor', 'list',
                                                   '--all')}
        self.assertNotIn(flavor['name'], names)
        self.assertIn(plain_flavor['name'], names)

    @base.needs('baremetal')
    def test_extra_specs_denied_leaves_no_flavor(self):
        """Fault injection: Nova's policy denies setting extra specs."""
        if OPERATOR_CLOUD not in _clouds():
            self.skipTest('cloud %s (admin plus the no_extra_specs role, '
                          'denied flavor extra specs by Nova policy) is not '
                          'in clouds.yaml' % OPERATOR_CLOUD)
        pool = self.make_pool(pools.VGPU)
        name = self.unique_name('flavor')
        # registered before the call: a create that wrongly succeeds or
        # leaves its flavor behind must not leak it
        self.addCleanup(self.openstack_raw, 'flavor', 'delete', name)
        rc, _out, err = self.openstack_raw(
            'gpu', 'flavor', 'create', name, '--pool', pool, '--gpus', '2',
            *SIZES, cloud=OPERATOR_CLOUD)
        self.assertEqual(1, rc, err)
        self.assertIn('failed at step 2 of 3 (set extra specs', err)
        self.assertIn('Everything it had done was undone (1 step(s))', err)
        names = {f['Name'] for f in self.openstack('flavor', 'list',
                                                   '--all')}
        self.assertNotIn(name, names)
        metadata = self.openstack('aggregate', 'show', pool)['properties']
        self.assertNotIn('group_policy', metadata)


class TestLargeBar(GpuFlavorTestCase):
    """Issue 40 rule 3: a flavor of four H100 NVL (128 GiB BAR1 each) and
    512 GiB of RAM is warned about, and Nova holds the hw:maxphysaddr_*
    settings gpu flavor create gives it (Nova 34 refuses them through
    "openstack flavor set" at 2.86 and later)."""

    def test_maxphysaddr_settings_reach_nova(self):
        pool = self.make_pool(pools.PASSTHROUGH, alias='t40bar-nvl',
                              pci_id='10de:2321')
        sizes = ('--vcpus', '1', '--ram', str(512 * 1024), '--disk', '1')
        flavor, err = self.gpu_flavor(pool, '--gpus', '4', *sizes)
        self.assertIn('--maxphysaddr-mode passthrough', err)
        self.assertNotIn('hw:maxphysaddr_mode',
                         self.flavor_specs(flavor['name']))
        # at a compute API above 2.86 too: gpuclient writes at 2.61
        name = self.unique_name('flavor')
        self.addCleanup(self.delete_flavor, name)
        rc, _out, err = self.openstack_raw(
            '--os-compute-api-version', '2.90', 'gpu', 'flavor', 'create',
            name, '--pool', pool, '--gpus', '4', '--maxphysaddr-mode',
            'emulate', '--maxphysaddr-bits', '42', *sizes)
        self.assertEqual(0, rc, err)
        self.assertNotIn('BAR1', err)
        held = self.flavor_specs(name)
        self.assertEqual(('emulate', '42'),
                         (held.get('hw:maxphysaddr_mode'),
                          held.get('hw:maxphysaddr_bits')))
        # what Nova 34 does with the keys from 2.86 (its validator has
        # none for them): refused, nothing written
        rc, _out, err = self.openstack_raw(
            '--os-compute-api-version', '2.86', 'flavor', 'set',
            '--property', 'hw:maxphysaddr_mode=passthrough', name)
        self.assertEqual(1, rc)
        self.assertIn("'hw:maxphysaddr_mode' does not appear to be a valid "
                      "extra spec", err)
        self.assertEqual('emulate',
                         self.flavor_specs(name)['hw:maxphysaddr_mode'])


class TestLargeBarUnknown(GpuFlavorTestCase):
    """Issue 51 defect 16: a flavor of four H100 PCIe (10de:2331, whose BAR1
    size the catalogue lacks) and 512 GiB of RAM is "not judged" by gpu
    check, which names it; before, flavor-address-space said nothing."""

    def test_check_says_not_judged(self):
        pool = self.make_pool(pools.PASSTHROUGH, alias='t51bar-pcie',
                              pci_id='10de:2331')
        flavor, _err = self.gpu_flavor(pool, '--gpus', '4', '--vcpus', '1',
                                       '--ram', str(512 * 1024),
                                       '--disk', '1')
        # what Nova holds: the flavor the finding names
        held = self.openstack('flavor', 'show', flavor['name'])
        self.assertEqual((512 * 1024, 't51bar-pcie:4'), (
            held['ram'], held['properties']['pci_passthrough:alias']))
        rc, out, err = self.openstack_raw(
            'gpu', 'check', '--pool', pool, '--check',
            'flavor-address-space', '-f', 'json')
        self.assertEqual(0, rc, err)  # a warning: not an error
        self.assertEqual(
            [('warning', 'flavor-address-space',
              'flavor %s' % held['name'])],
            [(r['Severity'], r['Check'], r['Object'])
             for r in json.loads(out)])
        symptom = json.loads(out)[0]['Symptom']
        self.assertTrue(symptom.startswith(
            'not judged: BAR1 size of H100-PCIE-80GB (10de:2331) unknown'),
            symptom)
        self.assertIn('at most 127 GiB', symptom)


class TestAmbiguousNames(GpuFlavorTestCase):
    def test_an_id_that_is_another_flavors_name_is_refused(self):
        """Flavor A has ID X, GPU flavor B is named X: ``gpu flavor
        delete X`` deletes neither and names both; Nova still holds
        both."""
        pool = self.make_pool(pools.PASSTHROUGH)
        second, _err = self.gpu_flavor(pool, *SIZES)
        first = self.unique_name('flavor')
        self.openstack('flavor', 'create', '--id', second['name'],
                       '--vcpus', '1', '--ram', '512', '--disk', '1',
                       '--property', 'pci_passthrough:alias=h100:1', first)
        self.addCleanup(self.delete_flavor, first)
        for args in (('delete', second['name']),
                     ('set', second['name'], '--description', 'x')):
            rc, _out, err = self.openstack_raw('gpu', 'flavor', *args)
            self.assertEqual(1, rc, err)
            self.assertIn('%s is the ID of flavor %s and the name of flavor '
                          '%s' % (second['name'], first, second['id']), err)
        listed = {f['ID']: f['Name'] for f in self.openstack(
            'flavor', 'list', '--all')}
        self.assertEqual(first, listed.get(second['name']))
        self.assertEqual(second['name'], listed.get(second['id']))
        self.assertIsNone(self.openstack('flavor', 'show',
                                         second['id'])['description'])


class TestFlavorSetUnset(GpuFlavorTestCase):
    """``gpu flavor set/unset``, proven by what ``openstack flavor show``
    then holds. No server boots."""

    def private_flavor(self, *args):
        pool = self.make_pool(pools.VGPU)
        flavor, _err = self.gpu_flavor(pool, '--private', *args, *SIZES)
        return flavor

    def make_project(self):
        name = self.unique_name('project')
        project = self.openstack('project', 'create', name)
        self.addCleanup(self.openstack, 'project', 'delete', project['id'],
                        parse=False)
        return project

    def gpu_ok(self, *args):
        rc, out, err = self.openstack_raw('gpu', 'flavor', *args)
        self.assertEqual(0, rc, err)
        return out, err

    @base.needs('baremetal')
    def test_set_description_property_and_project(self):
        flavor = self.private_flavor()
        project = self.make_project()
        out, _err = self.gpu_ok('set', flavor['name'], '--description',
                                'for CAD', '--property', 'hw:pmu=false',
                                '--project', project['name'])
        self.assertEqual('', out)  # set prints nothing, as OSC's does
        plain = self.openstack('flavor', 'show', flavor['id'])
        self.assertEqual('for CAD', plain['description'])
        self.assertEqual('false', plain['properties']['hw:pmu'])
        self.assertIn(project['id'], plain['access_project_ids'])

    @base.needs('baremetal')
    def test_unset_property_and_project(self):
        """An extra spec gpuclient set and one set by hand with plain OSC
        go, and the project; every other extra spec stays as Nova held it
        (issue 52 item 7). A key the flavor lacks is nothing to do; a
        flavor that is not a GPU flavor is refused, unchanged."""
        project = self.make_project()
        flavor = self.private_flavor('--project', project['id'],
                                     '--property', 'hw:pmu=true')
        self.openstack('flavor', 'set', '--property',
                       'hw:watchdog_action=pause', flavor['id'], parse=False)
        before = self.flavor_specs(flavor['id'])
        self.assertEqual(('true', 'pause'), (before.get('hw:pmu'),
                                             before.get('hw:watchdog_action')))
        self.gpu_ok('unset', flavor['id'], '--property', 'hw:pmu',
                    '--property', 'hw:watchdog_action', '--project',
                    project['name'])
        plain = self.openstack('flavor', 'show', flavor['id'])
        self.assertNotIn(project['id'], plain['access_project_ids'] or [])
        # the pool's own specs, and any other, stay as they were
        self.assertIn(STEER, before)
        self.assertEqual({key: value for key, value in before.items()
                          if key not in ('hw:pmu', 'hw:watchdog_action')},
                         plain['properties'])
        _out, err = self.gpu_ok('unset', flavor['name'], '--property',
                                'hw:pmu')
        self.assertIn('nothing to do', err)
        self.assertEqual(plain['properties'], self.flavor_specs(flavor['id']))
        other = self.create_flavor({'hw:pmu': 'true'})
        rc, _out, err = self.openstack_raw('gpu', 'flavor', 'unset',
                                           other['name'], '--property',
                                           'hw:pmu')
        self.assertEqual(1, rc, err)
        self.assertIn('is not a GPU flavor', err)
        self.assertIn('Use "openstack flavor unset".', err)
        self.assertEqual({'hw:pmu': 'true'}, self.flavor_specs(other['id']))

    @base.needs('baremetal')
    def test_rerun_is_nothing_to_do(self):
        flavor = self.private_flavor()
        args = ('set', flavor['name'], '--description', 'x', '--property',
                'hw:pmu=true')
        self.gpu_ok(*args)
        before = self.openstack('flavor', 'show', flavor['id'])
        _out, err = self.gpu_ok(*args)
        self.assertIn('nothing to do', err)
        self.assertEqual(before, self.openstack('flavor', 'show',
                                                flavor['id']))

    @base.needs('baremetal')
    def test_dry_run_changes_nothing(self):
        flavor = self.private_flavor()
        before = self.openstack('flavor', 'show', flavor['id'])
        out, _err = self.gpu_ok('set', flavor['name'], '--description', 'x',
                                '--property', 'hw:pmu=true', '--dry-run')
        self.assertIn('1. set the description of flavor %s' % flavor['name'],
                      out)
        self.assertIn('2. set extra specs of flavor %s: hw:pmu=true'
                      % flavor['name'], out)
        self.assertEqual(before, self.openstack('flavor', 'show',
                                                flavor['id']))

    @base.needs('baremetal')
    def test_refusals_change_nothing(self):
        flavor = self.private_flavor()
        pool = self.make_pool(pools.PASSTHROUGH)
        public, _err = self.gpu_flavor(pool, *SIZES)
        plain = self.create_flavor({'hw:cpu_policy': 'shared'})
        before = [self.openstack('flavor', 'show', f['id'])
                  for f in (flavor, public, plain)]
        for args, message in (
                (('set', plain['name'], '--description', 'x'),
                 'Use "openstack flavor set".'),
                (('set', flavor['name'], '--property', 'resources:VGPU=2'),
                 'gpuclient derives this extra spec'),
                (('unset', flavor['name'], '--property', STEER),
                 'gpuclient derives this extra spec'),
                (('set', public['name'], '--project', 'admin'),
                 'is public'),
                (('set', flavor['name'], '--property', 'hw:pmu=maybe'),
                 'Nova wants a boolean')):
            rc, _out, err = self.openstack_raw('gpu', 'flavor', *args)
            self.assertEqual(1, rc, args)
            self.assertIn(message, err, args)
        self.assertEqual(before, [self.openstack('flavor', 'show', f['id'])
                                  for f in (flavor, public, plain)])

    @base.needs('baremetal')
    def test_failure_puts_the_description_back(self):
        """Fault injection: Nova's policy denies setting extra specs after
        the description was written: the journal restores it."""
        if OPERATOR_CLOUD not in _clouds():
            self.skipTest('cloud %s (admin plus the no_extra_specs role, '
                          'denied flavor extra specs by Nova policy) is not '
                          'in clouds.yaml' % OPERATOR_CLOUD)
        flavor = self.private_flavor('--description', 'old')
        rc, _out, err = self.openstack_raw(
            'gpu', 'flavor', 'set', flavor['name'], '--description', 'new',
            '--property', 'hw:pmu=true', cloud=OPERATOR_CLOUD)
        self.assertEqual(1, rc, err)
        self.assertIn('failed at step 2 of 2 (set extra specs', err)
        self.assertIn('Everything it had done was undone (1 step(s))', err)
        plain = self.openstack('flavor', 'show', flavor['id'])
        self.assertEqual('old', plain['description'])
        self.assertNotIn('hw:pmu', plain['properties'])


class TestFlavorBadInput(GpuFlavorTestCase):
    """Each case: exit 1, one line on stderr, nothing left behind."""

    @base.needs('baremetal')
    def test_bad_input(self):
        pt = self.make_pool(pools.PASSTHROUGH)
        vgpu = self.make_pool(pools.VGPU)
        mig = self.make_pool(pools.MIG)
        bm = self.make_pool(pools.BAREMETAL)
        existing, _err = self.gpu_flavor(vgpu, *SIZES)
        cases = [
            (['--pool', 'gpuclient-ft-no-such-pool'], 'No GPU pool named'),
            (['--pool', vgpu, '--numa-policy', 'required'],
             'passthrough pools'),
            (['--pool', vgpu, '--property', 'resources:VGPU=2'],
             'contradicts'),
            (['--pool', pt, '--property', 'pci_passthrough:alias=h100:2'],
             'contradicts'),
            (['--pool', vgpu, '--property', 'resources:PGPU=1'],
             'besides the ones'),
            (['--pool', mig, '--gpus', '2'], 'MIG slice'),
            (['--pool', bm, '--gpus', '2'], 'one whole node'),
            (['--pool', pt, '--gpus', '0'], 'at least 1'),
            (['--pool', vgpu, '--ram', '-512'], '--ram -512'),
            (['--pool', vgpu, '--vcpus', '0'], '--vcpus 0'),
            (['--pool', vgpu, '--disk', '-1'], '--disk -1'),
            (['--pool', vgpu, '--property', 'hw:no_such_key=1'],
             'does not know'),
            (['--pool', vgpu, '--property', 'hw:cpu_policy=pinned'],
             'one of dedicated'),
            (['--pool', vgpu, '--property', 'trait:CUSTOM_X=maybe'],
             'required or forbidden'),
            (['--pool', vgpu, '--gpus', '2', '--property',
              'resources1:SRIOV_NET_VF=1'], 'request group 1'),
            (['--pool', vgpu, '--property', 'group_policy=none'],
             'without a namespace'),
            (['--pool', vgpu, '--project', 'admin'], '--private'),
            (['--pool', vgpu, '--private', '--project',
              'gpuclient-ft-no-such-project'], 'No project'),
        ]
        before = self.openstack('aggregate', 'show', vgpu)['properties']
        attempted = []
        for index, (args, message) in enumerate(cases):
            name = self.unique_name('bad')
            attempted.append(name)
            # registered first: a create that wrongly succeeds is removed
            self.addCleanup(self.openstack_raw, 'flavor', 'delete', name)
            argv = list(args)
            for flag, value in zip(SIZES[::2], SIZES[1::2], strict=True):
                if flag not in argv:
                    argv += [flag, value]
            rc, _out, err = self.openstack_matrix(index, 'gpu', 'flavor',
                                                  'create', name, *argv)
            self.assert_one_line_error(rc, err, message, args)
        # the same name with other settings: refused, the flavor unchanged
        rc, _out, err = self.openstack_raw(
            'gpu', 'flavor', 'create', existing['name'], '--pool', vgpu,
            '--vcpus', '2', '--ram', '512', '--disk', '1')
        self.assert_one_line_error(rc, err, 'vcpus: 2 (existing 1)',
                                   'existing name')
        self.assertEqual(1, self.openstack('flavor', 'show',
                                           existing['name'])['vcpus'])
        # a member (not admin) cannot create GPU flavors
        name = self.unique_name('bad')
        attempted.append(name)
        self.addCleanup(self.openstack_raw, 'flavor', 'delete', name)
        rc, _out, err = self.openstack_raw(
            'gpu', 'flavor', 'create', name, '--pool', vgpu, *SIZES,
            cloud=self.member_cloud)
        self.assert_one_line_error(rc, err, 'forbidden', 'member')
        names = {f['Name'] for f in self.openstack('flavor', 'list',
                                                   '--all')}
        self.assertEqual(set(), names & set(attempted))
        self.assertEqual(before, self.openstack('aggregate', 'show',
                                                vgpu)['properties'])

    def assert_one_line_error(self, rc, err, message, case):
        lines = [line for line in err.splitlines() if line.strip()]
        self.assertEqual(1, rc, (case, err))
        self.assertEqual(1, len(lines), (case, err))
        self.assertIn(message, lines[0], case)
