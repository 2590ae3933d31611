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

"""gpu check against a fault corpus on the real cloud.

Each misconfiguration is injected on its own (the previous one is fixed
before the next read), ``gpu check``'s checks (through the client layer,
in this process: one cloud read per fault) must report it under the right
check name, and the fix the finding suggests, applied as written (an
``openstack`` command run through the CLI, or a nova.conf line added to
the scheduler's settings), must make it disappear. Objects are named with
a per-run tag, so concurrent tests and the benchmark's thousands of
simulated Placement trees (which no hypervisor maps to) do not disturb
the assertions. No server is booted.

CLI-level tests run ``openstack gpu check`` for its exit status and
rows, and for the table a person reads (the "not judged" rows folded)
with its summary line on stderr.
"""

import json
import os
import shlex
import uuid

import fixtures
from osc_lib import exceptions
from testtools import content

from gpuclient.cloud import errors
from gpuclient.ops import pool_ops
from gpuclient.ops import snapshot
from gpuclient.rules import checks
from gpuclient.rules import pools
from gpuclient.rules.scheduler import conf as nova_conf
from gpuclient.tests.functional import base
from gpuclient.tests.functional import faults
from gpuclient.v1 import check as check_cmd

PT_CLASS = 'CUSTOM_PCI_10DE_2331'


def testcloud_nova_conf():
    """The test cloud's nova.conf text (the scheduler's), or ''."""
    clouds = os.environ.get('OS_CLIENT_CONFIG_FILE') or ''
    path = os.path.join(os.path.dirname(clouds), 'etc', 'nova', 'nova.conf')
    if 'gpuclient-testcloud' in clouds and os.path.isfile(path):
        with open(path) as conf:
            return conf.read()
    return ''


class CheckCorpusTestCase(base.FunctionalTestCase):
    def setUp(self):
        super().setUp()
        self.admin = faults.make_client()
        self.tag = uuid.uuid4().hex[:8]
        self.found_log = []  # (fault, found?, fix worked?)
        self.extra = []  # unexpected findings about this run's objects

    def name(self, kind):
        return 'gpuclient-ft-check-%s-%s' % (kind, self.tag)

    def read(self):
        # a fresh client per read: Placement's resource classes are read
        # once per client, and a fault may add one
        return snapshot.read(faults.make_client(), with_flavors=True,
                             mapped_only=True, with_images=True,
                             with_pool_members=True, with_projects=True)

    def mine(self, found):
        return [f for f in found if self.tag in f.object]

    def expect(self, cloud, check, obj, settings=None, fault=None):
        """The finding CHECK on OBJ, asserting nothing else of ours is."""
        found = checks.run(cloud, settings)
        hits = [f for f in found if f.check == check and f.object == obj]
        others = [f for f in self.mine(found)
                  if (f.check, f.object) != (check, obj)
                  and f.severity == checks.ERROR]
        self.extra += others
        self.found_log.append([fault or check, bool(hits), None])
        self.assertTrue(hits, 'no %s finding for %s in %s' % (
            check, obj, self.mine(found) or found))
        return hits[0]

    def gone(self, cloud, check, obj, settings=None):
        found = checks.run(cloud, settings)
        left = [f for f in found if f.check == check and f.object == obj]
        self.found_log[-1][2] = not left
        self.assertEqual([], left, 'the fix did not work')

    def apply(self, fix):
        """Run the suggested openstack command(s) as written.

        In this process (OSC's own shell, the same argv): an ``openstack``
        process per fix would cost more than the whole check.
        """
        for command in fix.split('  (')[0].split('; '):
            argv = shlex.split(command)
            self.assertEqual('openstack', argv[0], fix)
            rc, _out, err = base._run_shell(['--os-cloud', self.cloud,
                                             *argv[1:]])
            self.assertEqual(0, rc, '%s: %s' % (command, err))

    # setup and cleanup in-process (the fixes go through the CLI)

    def make_pool(self, kind, hosts, **options):
        name = self.name(kind)
        self.addCleanup(self._delete_pool, name)
        pool_ops.create(self.admin, pools.build_spec(name, **options), hosts)
        return name

    def _delete_pool(self, name):
        try:
            pool_ops.delete(self.admin, name, force=True)
        except exceptions.CommandError as exc:
            if 'No GPU pool named' not in str(exc):
                raise

    def make_aggregate(self, name, metadata, hosts=()):
        compute = self.admin.compute
        agg = compute.create_aggregate(name)
        self.addCleanup(self._delete_aggregate, name)
        compute.set_aggregate_metadata(agg, metadata)
        for host in hosts:
            compute.add_host(agg, host)
        return agg

    def _delete_aggregate(self, name):
        for agg in self.admin.compute.aggregates():
            if agg.name == name:
                for host in agg.hosts or ():
                    self.admin.compute.remove_host(agg, host)
                self.admin.compute.delete_aggregate(agg)

    def make_flavor(self, name, extra_specs, ram=512):
        flavor = self.admin.compute.create_flavor(
            name=name, vcpus=1, ram=ram, disk=1)
        self.addCleanup(self._delete_flavor, name)
        self.admin.compute.set_flavor_extra_specs(flavor['id'], extra_specs)
        return flavor

    def _delete_flavor(self, name):
        # the fix of fault 8 recreates the flavor under the same name
        flavor = self.admin.compute.find_flavor(name, ignore_missing=True)
        if flavor:
            self.admin.compute.delete_flavor(flavor['id'])

    @base.needs('passthrough', 'vgpu', 'baremetal', 'plain')
    def test_fault_corpus(self):
        conf = testcloud_nova_conf()
        pt_pool = self.make_pool('pt', [base.PT_HOST], mode='passthrough',
                                 alias='h100', pci_id='10de:2331')
        # the type trait the vgpu pool makes outlives the pool: deleted
        # after it (cleanups run last-in first-out)
        self.addCleanup(self.admin.placement.delete_trait, pools.type_trait(
            'vgpu', vgpu_type='ft-%s' % self.tag))
        vgpu_pool = self.make_pool('vgpu', [base.VGPU_HOST], mode='vgpu',
                                   vgpu_type='ft-%s' % self.tag)
        # host-less pools, harmless to other tests: isolated, and limited
        # to the admin project with a PCI alias nova.conf lacks
        lim_alias = 'ft%s' % self.tag
        lim_spec = pools.build_spec(
            self.name('lim'), 'passthrough', alias=lim_alias,
            pci_id='10de:2331',
            projects=[self.admin.current_project_id()])
        self.make_aggregate(lim_spec['name'], pools.metadata_for(lim_spec))
        # a host-less pool of H100 NVL (BAR1 128 GiB: issue 40 rule 3)
        nvl_alias = 'ftnvl%s' % self.tag
        nvl_spec = pools.build_spec(self.name('nvl'), 'passthrough',
                                    alias=nvl_alias, pci_id='10de:2321')
        self.make_aggregate(nvl_spec['name'], pools.metadata_for(nvl_spec))
        iso_spec = pools.build_spec(self.name('iso'), 'passthrough',
                                    alias='h100', pci_id='10de:2331',
                                    isolate=True)
        self.make_aggregate(iso_spec['name'], pools.metadata_for(iso_spec))

        # 1. a malformed pool aggregate
        bad = self.name('bad')
        self.make_aggregate(bad, {pools.POOL_KEY: bad,
                                  pools.MODE_KEY: 'nonsense'})
        cloud = self.read()
        # the cloud but for this run's objects: no error on its own
        # hosts, pools and images with its nova.conf (flavors and pools
        # other tests are making may be mid-change)
        own = [f for f in checks.run(cloud, nova_conf.load_settings(conf)
                                     if conf else None)
               if f.severity == checks.ERROR
               and 'gpuclient-ft-' not in f.object
               and not f.object.startswith('flavor bench-')]
        self.assertEqual([], own)
        roots = cloud.host_roots()
        pt_root = sorted(roots[base.PT_HOST])[0]
        hit = self.expect(cloud, 'pool-aggregates', 'aggregate %s' % bad)
        self.apply(hit.fix)

        # 2. a pool member offering none of the pool's class
        agg = [a for a in self.admin.compute.aggregates()
               if a.name == pt_pool][0]
        self.admin.compute.add_host(agg, base.PLAIN_HOST)
        cloud = self.read()
        self.gone(cloud, 'pool-aggregates', 'aggregate %s' % bad)
        obj = 'pool %s / host %s' % (pt_pool, base.PLAIN_HOST)
        hit = self.expect(cloud, 'pool-no-devices', obj)
        self.apply(hit.fix)

        # 3. a member missing from the pool's Placement aggregate
        self.admin.placement.update_aggregates(pt_root, remove=[agg.uuid])
        cloud = self.read()
        self.gone(cloud, 'pool-no-devices', obj)
        obj = 'pool %s / host %s' % (pt_pool, base.PT_HOST)
        hit = self.expect(cloud, 'pool-drift', obj,
                          fault='pool-drift (Placement aggregate)')
        # the fix is nova-manage placement sync_aggregates; what it does:
        self.assertEqual('nova-manage placement sync_aggregates', hit.fix)
        self.admin.placement.update_aggregates(pt_root, add=[agg.uuid])

        # 4. a pGPU that lost the vGPU type trait
        vgpu_root = sorted(roots[base.VGPU_HOST])[0]
        trait = pools.type_trait('vgpu', vgpu_type='ft-%s' % self.tag)
        pgpu = sorted(u for u in cloud.placement.providers_in_trees(
            [vgpu_root]) if u != vgpu_root and trait in (
                cloud.placement.summaries.get(u) or {}).get('traits', ()))[0]
        self.admin.placement.update_traits(pgpu, remove=[trait])
        cloud = self.read()
        self.gone(cloud, 'pool-drift', obj)
        obj = 'pool %s / host %s' % (vgpu_pool, base.VGPU_HOST)
        hit = self.expect(cloud, 'pool-drift', obj,
                          fault='pool-drift (type trait)')
        self.apply(hit.fix)

        # 5. a flavor requiring a trait no provider has
        fx = self.name('trait')
        missing = 'CUSTOM_FT_NOPE_%s' % self.tag.upper()
        self.make_flavor(fx, {'resources:%s' % PT_CLASS: '1',
                              'trait:%s' % missing: 'required'})
        cloud = self.read()
        self.gone(cloud, 'pool-drift', obj)
        hit = self.expect(cloud, 'flavor-unknown-trait', 'flavor %s' % fx)
        self.apply(hit.fix)

        # 6. more GPUs in one group than one provider has
        big = self.name('big')
        self.make_flavor(big, {'resources:%s' % PT_CLASS: '2'})
        cloud = self.read()
        self.gone(cloud, 'flavor-unknown-trait', 'flavor %s' % fx)
        hit = self.expect(cloud, 'flavor-too-many-devices',
                          'flavor %s' % big)
        self.apply(hit.fix)

        # 7. an unscoped key the aggregate filter matches (the same trap
        # as group_policy, with a key no other test sets)
        key = 'gpuclient_ft_%s' % self.tag
        unscoped = self.name('unscoped')
        self.make_flavor(unscoped, {
            'resources:%s' % PT_CLASS: '1', key: 'true',
            'aggregate_instance_extra_specs:gpu_pool': pt_pool})
        cloud = self.read()
        self.gone(cloud, 'flavor-too-many-devices', 'flavor %s' % big)
        hit = self.expect(cloud, 'flavor-unscoped-keys',
                          'flavor %s' % unscoped)
        self.apply(hit.fix)

        # 8. a public flavor of a project-limited pool
        public = self.name('public')
        self.make_flavor(public, {
            'pci_passthrough:alias': '%s:1' % lim_alias,
            'aggregate_instance_extra_specs:gpu_pool': lim_spec['name']})
        cloud = self.read()
        self.gone(cloud, 'flavor-unscoped-keys', 'flavor %s' % unscoped)
        hit = self.expect(cloud, 'flavor-public-limited-pool',
                          'flavor %s' % public)
        self.apply(hit.fix)

        # 8b. memory encryption that no host of the pool offers (issue
        # 40, rule 2: MEM_ENCRYPTION_CONTEXT and the model's trait)
        sev = self.name('sev')
        self.make_flavor(sev, {
            'resources:%s' % PT_CLASS: '1', 'hw:mem_encryption': 'true',
            'aggregate_instance_extra_specs:gpu_pool': pt_pool})
        cloud = self.read()
        self.gone(cloud, 'flavor-public-limited-pool', 'flavor %s' % public)
        hit = self.expect(cloud, 'flavor-mem-encryption', 'flavor %s' % sev)
        self.apply(hit.fix)

        # 8c. 4 x H100 NVL and 512 GiB of RAM beyond the guest's default
        # 40 address bits (issue 40, rule 3); the fix sets
        # hw:maxphysaddr_mode, which Nova 34 refuses from compute API 2.86
        nvl = self.name('nvl')
        self.make_flavor(nvl, {
            'pci_passthrough:alias': '%s:4' % nvl_alias,
            'aggregate_instance_extra_specs:gpu_pool': nvl_spec['name']},
            ram=512 * 1024)
        cloud = self.read()
        self.gone(cloud, 'flavor-mem-encryption', 'flavor %s' % sev)
        hit = self.expect(cloud, 'flavor-address-space', 'flavor %s' % nvl)
        self.assertEqual(checks.WARNING, hit.severity)
        self.apply(hit.fix)
        self.assertEqual('passthrough', self.admin.compute.find_flavor(nvl)[
            'extra_specs'].get('hw:maxphysaddr_mode'))

        # 9. an image without q35/UEFI while passthrough flavors exist
        # (Glance's raw proxy: the image calls of the client layer read
        # JSON answers, and these two answer with none)
        glance = self.admin.image._proxy
        image = glance.post('/images', json={
            'name': self.name('image'), 'disk_format': 'raw',
            'container_format': 'bare'}).json()
        self.addCleanup(glance.delete, '/images/%s' % image['id'],
                        raise_exc=False)
        glance.put('/images/%s/file' % image['id'], data=b'x',
                   headers={'Content-Type': 'application/octet-stream'})
        cloud = self.read()
        self.gone(cloud, 'flavor-address-space', 'flavor %s' % nvl)
        # its alias is in no nova.conf: gone before the nova.conf cases
        self._delete_flavor(nvl)
        obj = 'image %s' % image['name']
        hit = self.expect(cloud, 'image-firmware', obj)
        self.apply(hit.fix)

        # 10. an image requiring a pool's isolation trait
        pool_trait = pools.pool_trait(iso_spec['name'])
        self.admin.image.update_properties(
            image, {'trait:%s' % pool_trait: 'required'})
        cloud = self.read()
        self.gone(cloud, 'image-firmware', obj)
        hit = self.expect(cloud, 'image-pool-trait', obj)
        self.apply(hit.fix)

        # 11. a GPU provider tree no hypervisor maps to
        rc = 'CUSTOM_GPU_FT_%s' % self.tag.upper()
        ghost = self.make_ghost_tree(rc)
        cloud = self.read()
        self.gone(cloud, 'image-pool-trait', obj)
        obj = '1 provider tree(s) with %s' % rc
        hit = self.expect(cloud, 'placement-unmapped-trees', obj)
        self.assertIn(ghost, hit.fix)
        self.apply(hit.fix)
        # 12. a project limit written with the project's name
        admin_id, admin_name = self.admin.current_project()
        agg = [a for a in self.admin.compute.aggregates()
               if a.name == lim_spec['name']][0]
        self.admin.compute.set_aggregate_metadata(
            agg, {'filter_tenant_id_ft': admin_name})
        cloud = self.read()
        self.gone(cloud, 'placement-unmapped-trees', obj)
        obj = 'pool %s / filter_tenant_id_ft' % lim_spec['name']
        hit = self.expect(cloud, 'pool-projects', obj)
        self.assertIn('filter_tenant_id_ft=%s ' % admin_id, hit.fix)
        self.apply(hit.fix)

        # 13. a disabled compute service whose host holds GPUs
        self.openstack('compute', 'service', 'set', '--disable',
                       base.BM_HOST, 'nova-compute', parse=False)
        self.addCleanup(self.openstack, 'compute', 'service', 'set',
                        '--enable', base.BM_HOST, 'nova-compute',
                        parse=False)
        cloud = self.read()
        self.gone(cloud, 'pool-projects', obj)
        obj = 'host %s' % base.BM_HOST
        hit = self.expect(cloud, 'placement-disabled-service', obj)
        self.apply(hit.fix)

        # 14. a GPU host in no pool (the fix: pool it)
        cloud = self.read()
        self.gone(cloud, 'placement-disabled-service', obj)
        hit = self.expect(cloud, 'pool-unpooled-hosts', obj)
        self.assertEqual('openstack gpu pool add host <pool> %s'
                         % base.BM_HOST, hit.fix)
        self.make_pool('bm', [base.BM_HOST], mode='baremetal',
                       resource_class='CUSTOM_BAREMETAL_GPU_H100')
        cloud = self.read()
        self.gone(cloud, 'pool-unpooled-hosts', obj)

        # 15-19. nova.conf (pure: the last read, settings changed)
        base_conf = conf or '[DEFAULT]\n'
        flavor_obj = 'flavor %s' % public
        hit = self.expect(cloud, 'flavor-pci-alias', flavor_obj,
                          nova_conf.load_settings(base_conf))
        base_conf += '\n[pci]\n%s\n' % hit.fix.split('] ', 1)[1]
        self.gone(cloud, 'flavor-pci-alias', flavor_obj,
                  nova_conf.load_settings(base_conf))
        filters = ','.join(nova_conf.DEFAULT_FILTERS)
        for setting, wrong in (
                ('enable_isolated_aggregate_filtering',
                 '[scheduler]\nenable_isolated_aggregate_filtering = '
                 'false\n'),
                ('AggregateMultiTenancyIsolation',
                 '[filter_scheduler]\nenabled_filters = %s\n' % filters.
                 replace(',AggregateMultiTenancyIsolation', '')),
                ('AggregateInstanceExtraSpecsFilter',
                 '[filter_scheduler]\nenabled_filters = %s\n' % filters.
                 replace(',AggregateInstanceExtraSpecsFilter', '')),
                ('pci_in_placement',
                 '[filter_scheduler]\npci_in_placement = false\n')):
            text = base_conf + '\n' + wrong
            found = [f for f in checks.run(cloud, nova_conf.load_settings(
                text)) if f.check == 'scheduler-settings'
                and f.object == setting]
            self.found_log.append(['scheduler-settings (%s)' % setting,
                                   bool(found), None])
            self.assertTrue(found, setting)
            section, line = found[0].fix.split(' ', 1)
            fixed = text + '\n%s\n%s\n' % (section, line)
            self.gone(cloud, 'scheduler-settings', setting,
                      nova_conf.load_settings(fixed))

        # 20. post-copy on while this run's vgpu pool live-migrates vGPUs
        # (VFIO devices: issue 40, rule 4)
        text = base_conf + (
            '\n[libvirt]\nlive_migration_permit_post_copy = true\n')
        obj = 'nova.conf [libvirt] live_migration_permit_post_copy'
        hit = self.expect(cloud, 'libvirt-post-copy', obj,
                          nova_conf.load_settings(text))
        self.assertIn(vgpu_pool, hit.pools)
        section, line = hit.fix.split(' ', 1)
        self.gone(cloud, 'libvirt-post-copy', obj, nova_conf.load_settings(
            text + '\n%s\n%s\n' % (section, line)))

        recall = sum(1 for _f, hit, _fix in self.found_log if hit)
        fixed = sum(1 for _f, _hit, fix in self.found_log if fix)
        self.addDetail('recall', content.text_content(
            'found %d of %d injected faults; fixes worked for %d; '
            'unexpected errors about this run\'s objects: %d\n%s' % (
                recall, len(self.found_log), fixed, len(self.extra),
                '\n'.join(str(f) for f in self.extra))))
        self.assertEqual(len(self.found_log), recall)
        self.assertEqual(len(self.found_log), fixed)
        self.assertEqual([], self.extra)

    def make_ghost_tree(self, rc):
        """A root provider with VCPU and RC, and no hypervisor."""
        placement = self.admin.placement
        placement.send('PUT', '/resource_classes/%s' % rc, (1, 7),
                       'create class')
        self.addCleanup(self._placement_delete, '/resource_classes/%s' % rc)
        rp = placement.send('POST', '/resource_providers', (1, 20),
                            'create provider',
                            body={'name': 'gpuclient-ft-check-ghost-%s'
                                  % self.tag})
        # cleanups run last-in first-out: the provider before its class
        self.addCleanup(self._placement_delete,
                        '/resource_providers/%s' % rp['uuid'])
        placement.send(
            'PUT', '/resource_providers/%s/inventories' % rp['uuid'],
            (1, 0), 'set inventory', body={
                'resource_provider_generation': rp['generation'],
                'inventories': {'VCPU': {'total': 1}, rc: {'total': 1}}})
        return rp['uuid']

    def _placement_delete(self, path):
        try:
            self.admin.placement.send('DELETE', path, (1, 7), 'cleanup')
        except errors.NotFound:
            pass


class CheckCommandTestCase(base.FunctionalTestCase):
    def test_exit_status_and_rows(self):
        admin = faults.make_client()
        bad = 'gpuclient-ft-check-cli-%s' % uuid.uuid4().hex[:8]
        agg = admin.compute.create_aggregate(bad)
        self.addCleanup(self.openstack_raw, 'aggregate', 'delete', bad)
        admin.compute.set_aggregate_metadata(agg, {pools.POOL_KEY: bad})
        rc, out, err = self.openstack_raw(
            'gpu', 'check', '--check', 'pool-aggregates', '-f', 'json')
        rows = json.loads(out)
        self.assertEqual(1, rc, err)
        mine = [r for r in rows if r['Object'] == 'aggregate %s' % bad]
        self.assertEqual(
            [('error', 'pool-aggregates')],
            [(r['Severity'], r['Check']) for r in mine])
        self.assertEqual({'pool-aggregates'}, {r['Check'] for r in rows})
        self.assertEqual(list(('Severity', 'Check', 'Object', 'Symptom',
                               'Fix')), list(rows[0]))

    def test_table_folds_not_judged_and_sums_up(self):
        """Without nova.conf, whether an isolated pool is enforced (the
        scheduler's isolated-aggregate filtering) and counted (Nova's
        quota driver) is not judged: ``-f json`` has a row for each, the
        table one row naming both checks and how to give nova.conf, and
        stderr one line summing up, in both formats."""
        for name_ in ('GPUCLIENT_NOVA_CONF', 'GPUCLIENT_NOVA_CONF_DIR'):
            self.useFixture(fixtures.EnvironmentVariable(name_))
        admin = faults.make_client()
        name = 'gpuclient-ft-check-glance-%s' % uuid.uuid4().hex[:8]
        self.addCleanup(pool_ops.delete, admin, name, force=True)
        pool_ops.create(admin, pools.build_spec(
            name, pools.PASSTHROUGH, alias='h100', pci_id='10de:2331',
            isolate=True), [])
        # what Nova holds: an isolated GPU pool, which the two checks
        # judge against nova.conf
        props = self.openstack('aggregate', 'show', name)['properties']
        self.assertEqual(name, props[pools.POOL_KEY])
        self.assertEqual(pools.REQUIRED, props[
            pools.TRAIT_PREFIX + pools.pool_trait(name)])
        args = ('gpu', 'check', '--pool', name, '--check',
                'scheduler-settings', '--check', 'quota-gpu-limits')
        summary = ('gpu check: 0 errors, 0 warnings, 2 checks not judged '
                   '(no nova.conf).')
        rc, out, err = self.openstack_raw(*args, '-f', 'json')
        self.assertEqual(0, rc, err)  # "not judged" warnings only
        rows = json.loads(out)
        self.assertEqual(
            [('warning', 'scheduler-settings', 'nova.conf'),
             ('warning', 'quota-gpu-limits', 'nova.conf [quota]')],
            [(r['Severity'], r['Check'], r['Object']) for r in rows])
        self.assertEqual(
            [(True, checks.NOVA_CONF_FIX)] * 2,
            [(r['Symptom'].startswith('not judged: '), r['Fix'])
             for r in rows])
        self.assertIn(summary, err.splitlines())
        # the table, not fitted (whatever terminal the runner has): a row
        # a line
        self.useFixture(fixtures.EnvironmentVariable('CLIFF_FIT_WIDTH', '0'))
        rc, out, err = self.openstack_raw(*args, '-f', 'table')
        self.assertEqual(0, rc, err)
        self.assertIn(summary, err.splitlines())
        cells = [[c.strip() for c in line.split('|')[1:-1]]
                 for line in out.splitlines() if line.startswith('|')]
        self.assertEqual(list(check_cmd.COLUMNS), cells[0])
        self.assertEqual(
            [['not judged', 'scheduler-settings, quota-gpu-limits',
              'nova.conf, nova.conf [quota]']],
            [row[:3] for row in cells[1:]])
        self.assertTrue(cells[1][3].startswith(
            'not judged (no nova.conf): 2 check(s) could not judge 2 '
            'object(s)'), cells[1][3])
        self.assertEqual(checks.NOVA_CONF_FIX, cells[1][4])

    def test_pool_keeps_its_own_flavors_findings(self):
        """A flavor steered to pool P asking for a PCI alias nothing maps
        is P's finding: ``gpu check --pool P`` names it and exits 1."""
        admin = faults.make_client()
        name = 'gpuclient-ft-check-scope-%s' % uuid.uuid4().hex[:8]
        self.addCleanup(pool_ops.delete, admin, name, force=True)
        pool_ops.create(admin, pools.build_spec(
            name, pools.PASSTHROUGH, alias='h100', pci_id='10de:2331'), [])
        flavor = self.make_flavor(name)
        self.openstack('flavor', 'set', '--property',
                       'pci_passthrough:alias=h10O:1', flavor, parse=False)
        conf = self.useFixture(fixtures.TempDir()).join('nova.conf')
        with open(conf, 'w') as out:
            out.write(testcloud_nova_conf() or '[DEFAULT]\n')
        rc, out, err = self.openstack_raw(
            'gpu', 'check', '--pool', name, '--nova-conf', conf,
            '--check', 'flavor-pci-alias', '-f', 'json')
        self.assertEqual(1, rc, err)
        self.assertEqual(
            [('error', 'flavor-pci-alias', 'flavor %s' % flavor)],
            [(r['Severity'], r['Check'], r['Object'])
             for r in json.loads(out)])
        # what Nova does with it: refuses the server
        server = self.unique_name('server')
        self.addCleanup(self.openstack_raw, 'server', 'delete', server)
        rc, _out, err = self.openstack_raw(
            'server', 'create', '--flavor', flavor, '--image', base.IMAGE,
            '--nic', 'none', server)
        self.assertEqual(1, rc)
        self.assertIn('h10O', err)

    def test_could_not_run_is_exit_status_2(self):
        # told apart from findings (1): an unknown check, an unknown pool,
        # and a member, whom Nova refuses the aggregates; no rows
        for args, cloud, message in (
                (('--check', 'nope'), None, 'Unknown check(s) nope'),
                (('--pool', 'gpuclient-ft-check-none'), None,
                 'No GPU pool named gpuclient-ft-check-none'),
                ((), self.member_cloud, '')):
            kwargs = {'cloud': cloud} if cloud else {}
            rc, out, err = self.openstack_raw('gpu', 'check', '-f', 'json',
                                              *args, **kwargs)
            self.assertEqual(checks.EXIT_NOT_RUN, rc, (args, out, err))
            self.assertEqual('', out.strip(), args)
            self.assertIn(message, err)
            self.assertTrue(err.strip(), args)
        # bad usage: argparse's 2 as well
        rc, _out, err = self.openstack_raw('gpu', 'check', '--no-such')
        self.assertEqual(checks.EXIT_NOT_RUN, rc, err)
