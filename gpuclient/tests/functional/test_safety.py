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

"""Safe day-2 writes, one CLI-level test per behaviour (issue 9).

Each test is one of the defects the issue lists, proven by what Nova and
Placement hold (read back with plain OSC commands) or do (boots).
"""

import concurrent.futures
import json
import os
import signal
import subprocess
import time

from gpuclient.tests.functional import base
from gpuclient.tests.functional import test_pool

TRAITS_API = base.PLACEMENT_TRAITS


class SafetyTestCase(test_pool.PoolTestCase):
    def pool_flavor(self, pool, *extra):
        name = self.unique_name('flavor')
        # cleanup registered before the call, in case it half-succeeds
        self.addCleanup(self.openstack_raw, 'flavor', 'delete', name)
        self.openstack('gpu', 'flavor', 'create', name, '--pool', pool,
                       '--vcpus', '1', '--ram', '512', '--disk', '1',
                       *extra)
        return name

    def specs(self, flavor):
        return self.openstack('flavor', 'show', flavor)['properties']

    def pool_traits(self):
        return {t['name'] for t in self.openstack(*TRAITS_API, 'trait',
                                                  'list')
                if t['name'].startswith('CUSTOM_GPU_POOL_')}

    def set_traits(self, rp, traits):
        if not traits:
            self.openstack(*TRAITS_API, 'resource', 'provider', 'trait',
                           'delete', rp, parse=False)
            return
        args = []
        for trait in sorted(traits):
            args += ['--trait', trait]
        self.openstack(*TRAITS_API, 'resource', 'provider', 'trait', 'set',
                       *args, rp)

    def fails(self, *args, expect=None):
        rc, out, err = self.openstack_raw(*args)
        self.assertEqual(1, rc, out + err)
        if expect:
            self.assertIn(expect, err)
        return err


class TestDependents(SafetyTestCase):
    @base.needs('passthrough')
    def test_no_isolate_keeps_flavors_working(self):
        pool = self.create_pool('--mode', 'passthrough', '--alias', 'h100',
                                '--pci-id', '10de:2331', '--host',
                                base.PT_HOST, '--isolate')
        name, trait = pool['name'], pool['isolation_trait']
        flavor = self.pool_flavor(name)
        root = self.root_provider(base.PT_HOST)
        err = self.fails('gpu', 'pool', 'set', name, '--no-isolate',
                         expect='--update-dependents')
        self.assertIn(flavor, err)
        # refused: nothing changed
        self.assertIn(trait, self.traits(root))
        self.assertIn(trait, self.pool_traits())
        self.assertEqual('required', self.specs(flavor)['trait:' + trait])

        self.assertEqual('', self.openstack(
            'gpu', 'pool', 'set', name, '--no-isolate',
            '--update-dependents', parse=False))
        self.assertNotIn('trait:' + trait, self.specs(flavor))
        self.assertNotIn(trait, self.traits(root))
        self.assertNotIn(trait, self.pool_traits())
        self.assertNotIn('trait:' + trait,
                         self.aggregate(name)['properties'])
        # and Nova still schedules the flavor to the pool
        server = self.boot(flavor)
        self.assertEqual(base.PT_HOST, server['OS-EXT-SRV-ATTR:host'])

    @base.needs('passthrough')
    def test_isolate_takes_pool_flavors_along(self):
        pool = self.create_pool('--mode', 'passthrough', '--alias', 'h100',
                                '--pci-id', '10de:2331', '--host',
                                base.PT_HOST)
        name = pool['name']
        flavor = self.pool_flavor(name)
        self.fails('gpu', 'pool', 'set', name, '--isolate',
                   expect=flavor)
        self.assertFalse(self.openstack('gpu', 'pool', 'show',
                                        name)['isolated'])
        self.assertEqual('', self.openstack(
            'gpu', 'pool', 'set', name, '--isolate', '--update-dependents',
            parse=False))
        trait = 'CUSTOM_GPU_POOL_' + name.upper().replace('-', '_')
        self.assertEqual('required', self.specs(flavor)['trait:' + trait])
        server = self.boot(flavor)
        self.assertEqual(base.PT_HOST, server['OS-EXT-SRV-ATTR:host'])

    def test_candidates_explains_an_unknown_trait(self):
        """A flavor made by hand that requires a trait nobody has."""
        trait = 'CUSTOM_GPUCLIENT_FT_NO_SUCH_TRAIT'
        flavor = self.create_flavor({'trait:%s' % trait: 'required'})
        err = self.fails('gpu', 'candidate', 'list', '--flavor',
                         flavor['name'], expect=trait)
        self.assertIn('No valid host', err)
        self.assertNotIn('HTTP 400', err)

    @base.needs('mig')
    def test_delete_refused_while_flavors_steer_to_pool(self):
        pool = self.create_pool('--mode', 'mig', '--mig-profile', '3g.40gb',
                                '--host', base.MIG_HOST)
        flavor = self.pool_flavor(pool['name'])
        self.fails('gpu', 'pool', 'delete', '--force', pool['name'],
                   expect='openstack gpu flavor delete %s' % flavor)
        self.assertEqual([base.MIG_HOST],
                         self.aggregate(pool['name'])['hosts'])


class TestProjects(SafetyTestCase):
    def project(self):
        name = self.unique_name('project')
        self.addCleanup(self.openstack_raw, 'project', 'delete', name)
        return self.openstack('project', 'create', name)['id']

    @base.needs('mig')
    def test_last_project_needs_open_to_all(self):
        project = self.project()
        pool = self.create_pool('--mode', 'mig', '--mig-profile', '1g.10gb',
                                '--host', base.MIG_HOST, '--project',
                                project)
        key = 'filter_tenant_id_' + project
        self.assertEqual(project, self.aggregate(pool['name'])[
            'properties'][key])
        self.fails('gpu', 'pool', 'unset', pool['name'], '--project',
                   project, expect='--open-to-all')
        self.assertIn(key, self.aggregate(pool['name'])['properties'])
        self.assertEqual('', self.openstack(
            'gpu', 'pool', 'unset', pool['name'], '--project', project,
            '--open-to-all', parse=False))
        self.assertNotIn(key, self.aggregate(pool['name'])['properties'])

    def test_limiting_open_pool_with_public_flavor(self):
        project = self.project()
        # no host: nothing of the shared hosts is touched
        pool = self.create_pool('--mode', 'mig', '--mig-profile', '1g.10gb')
        name = pool['name']
        flavor = self.pool_flavor(name)  # public, as flavors are by default
        before = self.aggregate(name)['properties']
        err = self.fails('gpu', 'pool', 'set', name, '--project', project,
                         expect='--allow-public-flavors')
        self.assertIn('openstack gpu flavor delete %s' % flavor, err)
        self.assertIn('--private --project %s %s' % (project, flavor), err)
        # refused: the pool stays open to every project
        self.assertEqual(before, self.aggregate(name)['properties'])

        rc, out, err = self.openstack_raw('gpu', 'pool', 'set', name,
                                          '--project', project,
                                          '--allow-public-flavors')
        self.assertEqual(0, rc, out + err)
        self.assertIn(flavor, err)  # the warning names what stays public
        self.assertEqual(project, self.aggregate(name)['properties'].get(
            'filter_tenant_id_' + project))

    @base.needs('mig')
    def test_parallel_project_adds_lose_nothing(self):
        pool = self.create_pool('--mode', 'mig', '--mig-profile', '2g.20gb',
                                '--host', base.MIG_HOST)
        projects = [self.project() for _ in range(5)]
        with concurrent.futures.ThreadPoolExecutor(5) as pool_exec:
            results = list(pool_exec.map(
                lambda p: self.openstack_raw('gpu', 'pool', 'set',
                                             pool['name'], '--project', p),
                projects))
        for rc, out, err in results:
            self.assertEqual(0, rc, err)
            self.assertEqual('', out)
        props = self.aggregate(pool['name'])['properties']
        for project in projects:
            self.assertEqual(project, props.get('filter_tenant_id_' +
                                                project))
        shown = self.openstack('gpu', 'pool', 'show', pool['name'])
        self.assertEqual(sorted(projects), sorted(shown['projects']))


class TestOwnership(SafetyTestCase):
    @base.needs('vgpu')
    def test_type_traits_put_by_hand_stay(self):
        pgpus = sorted(self.children(base.VGPU_HOST))
        self.assertEqual(2, len(pgpus))
        hand, free = pgpus
        before = self.traits(hand)
        self.assertNotIn('CUSTOM_NVIDIA_35', before | self.traits(free))
        self.openstack(*TRAITS_API, 'trait', 'create', 'CUSTOM_NVIDIA_36',
                       parse=False)
        self.addCleanup(self.openstack_raw, *TRAITS_API, 'trait', 'delete',
                        'CUSTOM_NVIDIA_36')
        self.addCleanup(self.set_traits, hand, before)
        # an operator marks one pGPU for another type, as Nova's docs say
        self.set_traits(hand, before | {'CUSTOM_NVIDIA_36'})
        pool = self.create_pool('--mode', 'vgpu', '--vgpu-type',
                                'nvidia-35', '--host', base.VGPU_HOST)
        self.assertNotIn('CUSTOM_NVIDIA_35', self.traits(hand))
        self.assertIn('CUSTOM_NVIDIA_36', self.traits(hand))
        self.assertIn('CUSTOM_NVIDIA_35', self.traits(free))
        # the operator now marks that pGPU for nvidia-35 by hand: the pool
        # did not put it there, so remove host must keep it
        self.set_traits(hand, before | {'CUSTOM_NVIDIA_35'})
        self.openstack('gpu', 'pool', 'remove', 'host', pool['name'],
                       base.VGPU_HOST)
        self.assertIn('CUSTOM_NVIDIA_35', self.traits(hand))
        self.assertNotIn('CUSTOM_NVIDIA_35', self.traits(free))


class TestConvergence(SafetyTestCase):
    @base.needs('passthrough', 'vgpu', 'mig')
    def test_rerun_create_puts_missing_trait_back(self):
        args = ('--mode', 'passthrough', '--alias', 'h100', '--pci-id',
                '10de:2331', '--host', base.PT_HOST, '--isolate')
        pool = self.create_pool(*args)
        trait = pool['isolation_trait']
        root = self.root_provider(base.PT_HOST)
        self.set_traits(root, self.traits(root) - {trait})
        out = self.openstack('gpu', 'pool', 'create', pool['name'], *args,
                             '--dry-run')
        self.assertIn('add trait %s' % trait, '\n'.join(out['plan']))
        self.assertNotIn(trait, self.traits(root))  # dry run: no change
        self.openstack('gpu', 'pool', 'create', pool['name'], *args)
        self.assertIn(trait, self.traits(root))
        # and the remedy pool show prints works on an isolated pool
        self.set_traits(root, self.traits(root) - {trait})
        drift = self.openstack('gpu', 'pool', 'show', pool['name'])['drift']
        self.assertEqual('openstack gpu pool set %s --isolate'
                         % pool['name'], drift[0]['fix'])
        self.openstack('gpu', 'pool', 'set', pool['name'], '--isolate',
                       parse=False)
        self.assertIn(trait, self.traits(root))

    @base.needs('vgpu', 'mig')
    def test_sigint_during_create_then_rerun(self):
        """Real SIGINTs to the real CLI at several moments, then a re-run."""
        name = self.unique_name('pool')
        self.addCleanup(self.delete_pool, name)
        args = [base.OPENSTACK, '--os-cloud', self.cloud, 'gpu', 'pool',
                'create', name, '--mode', 'vgpu', '--vgpu-type', 'nvidia-35',
                '--host', base.VGPU_HOST, '--host', base.MIG_HOST,
                '--isolate', '-f', 'json']
        env = dict(os.environ, PYTHONWARNINGS='ignore')
        outcomes = []
        for delay in (1.5, 2.5, 3.5, 5.0):
            proc = subprocess.Popen(args, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True,
                                    env=env)
            time.sleep(delay)
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=300)
            outcomes.append((delay, proc.returncode, err.strip()[-300:]))
            if proc.returncode == 0:
                break  # it had finished: nothing left to interrupt
            rc, _out, _err = self.openstack_raw('aggregate', 'show', name)
            if rc == 0:
                # the signal came after the last write (while the command
                # printed or the interpreter exited): then the pool must be
                # whole, never half made
                self.assert_whole_pool(name, outcomes)
                break
            # interrupted: either before the first write, or undone
            self.assertEqual(1, rc, outcomes)
        # the re-run converges to the whole pool
        self.openstack('gpu', 'pool', 'create', name, '--mode', 'vgpu',
                       '--vgpu-type', 'nvidia-35', '--host', base.VGPU_HOST,
                       '--host', base.MIG_HOST, '--isolate')
        self.assert_whole_pool(name, outcomes)
        self.addDetail('sigint-outcomes', _text(json.dumps(outcomes)))

    def assert_whole_pool(self, name, outcomes):
        """Both hosts in the aggregate, with their traits, and no drift."""
        agg = self.aggregate(name)
        self.assertEqual({base.VGPU_HOST, base.MIG_HOST}, set(agg['hosts']),
                         outcomes)
        pool = self.openstack('gpu', 'pool', 'show', name)
        trait = pool['isolation_trait']
        for host in (base.VGPU_HOST, base.MIG_HOST):
            self.assertIn(trait, self.traits(self.root_provider(host)))
        for rp in self.children(base.VGPU_HOST):
            self.assertIn('CUSTOM_NVIDIA_35', self.traits(rp))
        self.assertEqual([], pool['drift'], outcomes)


class TestTolerance(SafetyTestCase):
    @base.needs('mig')
    def test_malformed_and_duplicate_pools_are_skipped(self):
        good = self.create_pool('--mode', 'mig', '--mig-profile', '4g.40gb',
                                '--host', base.MIG_HOST)
        long_name = 'x' * 250
        bad = self.unique_name('agg')
        self.addCleanup(self.openstack_raw, 'aggregate', 'delete', bad)
        self.openstack('aggregate', 'create', '--property',
                       'gpu_pool=' + long_name, bad)
        twins = []
        for _ in range(2):
            twin = self.unique_name('agg')
            self.addCleanup(self.openstack_raw, 'aggregate', 'delete', twin)
            self.openstack('aggregate', 'create', '--property',
                           'gpu_pool=twin-pool', '--property',
                           'gpu_pool_mode=baremetal', '--property',
                           'gpu_resource_class=CUSTOM_BAREMETAL_GPU_H100',
                           twin)
            twins.append(twin)
        for cmd in (('gpu', 'pool', 'list'), ('gpu', 'host', 'list')):
            rc, out, err = self.openstack_raw(*cmd, '-f', 'json')
            self.assertEqual(0, rc, err)
            self.assertIn(bad, err)
            self.assertIn('twin-pool', err)
        listed = [p['Name'] for p in self.openstack('gpu', 'pool', 'list')]
        self.assertIn(good['name'], listed)
        self.assertNotIn('twin-pool', listed)
        self.fails('gpu', 'pool', 'show', 'twin-pool',
                   expect='claimed by several aggregates')


class TestBounds(SafetyTestCase):
    @base.needs('passthrough', 'vgpu', 'baremetal')
    def test_bounds_refused_before_writing(self):
        pool = self.create_pool('--mode', 'vgpu', '--vgpu-type',
                                'nvidia-35', '--host', base.VGPU_HOST)
        name = self.unique_name('flavor')
        self.addCleanup(self.openstack_raw, 'flavor', 'delete', name)
        self.fails('gpu', 'flavor', 'create', name, '--pool', pool['name'],
                   '--vcpus', '1', '--ram', '512', '--disk', '1', '--gpus',
                   '20000', expect='64')
        rc, _out, _err = self.openstack_raw('flavor', 'show', name)
        self.assertEqual(1, rc)
        agg = self.unique_name('pool')
        self.addCleanup(self.delete_pool, agg)
        self.fails('gpu', 'pool', 'create', agg, '--mode', 'baremetal',
                   '--resource-class', 'VCPU', '--host', base.BM_HOST,
                   expect='VCPU')
        rc, _out, _err = self.openstack_raw('aggregate', 'show', agg)
        self.assertEqual(1, rc)
        # and --dry-run writes nothing either
        out = self.openstack('gpu', 'pool', 'create', agg, '--mode',
                             'passthrough', '--alias', 'h100', '--pci-id',
                             '10de:2331', '--host', base.PT_HOST,
                             '--dry-run')
        self.assertTrue(out['dry_run'])
        rc, _out, _err = self.openstack_raw('aggregate', 'show', agg)
        self.assertEqual(1, rc)


def _text(value):
    from testtools import content
    return content.text_content(value)
