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

"""gpuclient.rules.checks over plain clouds: each misconfiguration is found
under its check name, and the cloud after the suggested fix is clean."""

from openstack import exceptions as sdk_exc

from gpuclient.cloud import identity as identity_mod
from gpuclient.ops import snapshot
from gpuclient.rules import capacity as capacity_mod
from gpuclient.rules import checks
from gpuclient.rules import hosts
from gpuclient.rules import model
from gpuclient.rules import pools
from gpuclient.rules import pools as pools_mod
from gpuclient.rules import quota
from gpuclient.rules import specs
from gpuclient.rules.checks import pools as pool_checks
from gpuclient.rules.nova_conf import parse
from gpuclient.rules.scheduler import conf as nova_conf
from gpuclient.tests.unit import base
from gpuclient.tests.unit import fakes

PT_SPEC = pools.build_spec('solver', 'passthrough', alias='h100',
                           pci_id='10de:2331')
VGPU_SPEC = pools.build_spec('ws', 'vgpu', vgpu_type='nvidia-35')
ISO_SPEC = pools.build_spec('solver', 'passthrough', alias='h100',
                            pci_id='10de:2331', isolate=True)
LIMITED_SPEC = pools.build_spec('solver', 'passthrough', alias='h100',
                                pci_id='10de:2331', projects=['p1'])
# H100 NVL: 128 GiB BAR1 windows (profiles.BAR1)
NVL_SPEC = pools.build_spec('llm', 'passthrough', alias='h100nvl',
                            pci_id='10de:2321')
GOOD_IMAGE = {'id': 'img-good', 'name': 'good', 'status': 'active',
              'hw_machine_type': 'q35', 'hw_firmware_type': 'uefi'}


def conf(text):
    """Settings as gpu check reads --nova-conf (with its [quota])."""
    settings = nova_conf.load_settings(text)
    settings['quota'] = quota.conf_settings(parse.parse_ini(text))
    return settings


# a nova.conf with which the clean cloud has nothing to say
GOOD_CONF = ('[pci]\nalias = {"name": "h100", "vendor_id": "10de", '
             '"product_id": "2331"}\n[quota]\n'
             'driver = nova.quota.UnifiedLimitsDriver\n'
             'unified_limits_resource_strategy = ignore\n')


def registered(limits):
    """Keystone's registered limits as the model holds them
    ({resource name: RegisteredLimit}) from {resource name: limit}."""
    return {name: {'id': 'rl-%s' % name, 'limit': limit,
                   'description': None}
            for name, limit in limits.items()}


def not_judged(found):
    return [(f.check, f.object) for f in found
            if f.symptom.startswith('not judged')]


class ChecksTestCase(base.TestCase):
    def setUp(self):
        super().setUp()
        self.fresh()

    def fresh(self):
        """The cloud of every test (again, for each row of a table)."""
        self.fc = fakes.FakeCloud()
        self.pt = self.fc.pci_host('gpu-pt-1')
        self.fc.vgpu_host('gpu-vgpu-1', traits=['CUSTOM_NVIDIA_35'])
        self.fc.compute_host('plain-1')
        self.fc.images.append(dict(GOOD_IMAGE))
        self.members = None

    def pool(self, spec, hosts_=()):
        agg = fakes.Aggregate(spec['name'], pools.metadata_for(spec),
                              list(hosts_))
        self.fc.aggregates.append(agg)
        if spec.get('isolate'):
            for host in hosts_:
                self.root(host).traits.append(pools.pool_trait(
                    spec['name']))
        return agg

    def root(self, host):
        return [self.fc.provider(hv['id']) for hv in self.fc.hypervisors
                if hv['service']['host'] == host][0]

    def flavor(self, name, spec, gpus=1, public=True, ram=512, **extra):
        pool = pools.pool_from_aggregate(
            fakes.Aggregate(spec['name'], pools.metadata_for(spec)))
        derived = specs.derive(pool, gpus=gpus)
        for agg in self.fc.aggregates:
            if agg.name == spec['name']:
                agg.metadata.update(derived['aggregate_metadata'])
        extra_specs = dict(derived['extra_specs'], **extra)
        return self.fc.add_flavor(name, public=public, ram=ram,
                                  extra_specs=extra_specs)

    def cloud(self):
        fc = self.fc
        snap = model.Placement.listed(
            fc.providers_body()['resource_providers'])
        snap.add_details({p.uuid: fc.summary(p) for p in fc.providers})
        services = [{'host': hv['service']['host'],
                     'status': ('disabled' if hv['service']['host']
                                in fc.disabled else 'enabled'),
                     'state': 'up'} for hv in fc.hypervisors]
        aggregates = [pools_mod.aggregate_dict(a) for a in fc.aggregates]
        found, _problems = pools.scan(aggregates)
        classes = hosts.gpu_classes(
            fc.resource_classes(),
            [p['resource_class'] for p in found.values()])
        # as snapshot.read reads it for gpu check (a catalog without
        # Blazar)
        cloud = model.Cloud(fc.aggregates, fc.hypervisors, services,
                            snap, flavors=fc.flavors,
                            gpu_classes=classes, blazar=False,
                            pool_members={})
        cloud.images = fc.images
        cloud.compute_max_version = fc.compute_max_version
        for name, pool in cloud.pools.items():
            if self.members is not None:
                cloud.pool_members[name] = self.members
            else:
                cloud.pool_members[name] = {
                    self.root(h).uuid for h in pool['hosts']}
        return cloud

    def run_checks(self, settings=None, **kwargs):
        return checks.run(self.cloud(), settings, **kwargs)

    def named(self, check, settings=None):
        return [f for f in self.run_checks(settings) if f.check == check]

    def assert_found(self, check, settings=None, severity=checks.ERROR):
        found = self.named(check, settings)
        self.assertTrue(found, 'no %s finding in %s' % (
            check, self.run_checks(settings)))
        self.assertEqual({severity}, {f.severity for f in found})
        return found

    def clean_cloud(self):
        """Every GPU host pooled, GPU flavors fitting: no finding."""
        self.pool(PT_SPEC, ['gpu-pt-1'])
        self.pool(VGPU_SPEC, ['gpu-vgpu-1'])
        self.flavor('pt.1', PT_SPEC)
        self.flavor('ws.1', VGPU_SPEC)


class TestClean(ChecksTestCase):
    def test_clean_cloud_has_no_finding(self):
        self.clean_cloud()
        # without nova.conf: only the checks of nova.conf, saying so
        found = self.run_checks()
        # (and the BAR1 size of an H100 PCIe, which the catalogue lacks)
        self.assertEqual([
            ('flavor-address-space', 'flavor pt.1'),
            ('flavor-pci-alias', 'nova.conf [pci] alias'),
            ('scheduler-settings', 'nova.conf'),
            ('quota-gpu-limits', 'nova.conf [quota]')], not_judged(found))
        self.assertEqual({checks.WARNING}, {f.severity for f in found})
        self.assertEqual(len(found), len(not_judged(found)))
        self.assertEqual(0, checks.exit_status(found))
        self.assertEqual(1, checks.exit_status(found, strict=True))
        cloud = self.cloud()
        cloud.registered = registered({'class:CUSTOM_PCI_10DE_2331': 4,
                                       'class:VGPU': 8})
        self.assertEqual([('flavor-address-space', 'flavor pt.1')],
                         not_judged(checks.run(cloud, conf(GOOD_CONF))))
        self.assertEqual(0, checks.exit_status([], strict=True))


class TestPools(ChecksTestCase):
    def test_missing_isolation_trait_and_fix(self):
        self.pool(ISO_SPEC, ['gpu-pt-1'])
        self.root('gpu-pt-1').traits.remove(pools.pool_trait('solver'))
        found = self.assert_found('pool-drift')
        self.assertEqual('openstack gpu pool set solver --isolate',
                         found[0].fix)
        self.root('gpu-pt-1').traits.append(pools.pool_trait('solver'))
        self.assertEqual([], self.named('pool-drift'))

    def test_not_in_placement_aggregate(self):
        self.pool(PT_SPEC, ['gpu-pt-1'])
        self.members = set()
        found = self.assert_found('pool-drift')
        self.assertEqual('nova-manage placement sync_aggregates',
                         found[0].fix)
        self.members = {self.pt.uuid}
        self.assertEqual([], self.named('pool-drift'))

    def test_unpooled_gpu_host_is_a_warning(self):
        self.pool(PT_SPEC, ['gpu-pt-1'])
        found = self.assert_found('pool-unpooled-hosts',
                                 severity=checks.WARNING)
        self.assertEqual(['host gpu-vgpu-1'], [f.object for f in found])
        self.assertIn('gpu-vgpu-1', found[0].fix)
        self.assertEqual(0, checks.exit_status(found))
        self.assertEqual(1, checks.exit_status(found, strict=True))

    def test_pool_host_without_the_class(self):
        self.pool(PT_SPEC, ['gpu-pt-1', 'plain-1'])
        found = self.assert_found('pool-no-devices')
        self.assertEqual(['pool solver / host plain-1'],
                         [f.object for f in found])
        self.assertTrue(found[0].fix.startswith(
            'openstack gpu pool remove host solver plain-1  ('))
        self.fc.aggregates[0].hosts.remove('plain-1')
        self.assertEqual([], self.named('pool-no-devices'))

    def test_pools_sharing_an_alias(self):
        self.pool(PT_SPEC, ['gpu-pt-1'])
        self.assertEqual([], self.named('pool-shared-alias'))
        other = pools.build_spec('solver2', 'passthrough', alias='h100',
                                 pci_id='10de:20b5')
        self.pool(other)
        found = self.assert_found('pool-shared-alias')
        self.assertEqual((('solver', 'solver2'), 'alias h100'),
                         (found[0].pools, found[0].object))
        self.assertIn('--resource-class', found[0].fix)
        # one class for both: Nova accepts the class-only alias (warning)
        for agg, pci_id in zip(self.fc.aggregates, ('2331', '20b5'),
                                  strict=True):
            spec = pools.build_spec(
                agg.name, 'passthrough', alias='h100',
                pci_id='10de:' + pci_id, resource_class='CUSTOM_H100')
            agg.metadata = pools.metadata_for(spec)
        found = self.assert_found('pool-shared-alias',
                                  severity=checks.WARNING)
        self.assertIn('"resource_class": "CUSTOM_H100"', found[0].fix)

    def test_duplicate_pool_aggregates(self):
        self.pool(PT_SPEC, ['gpu-pt-1'])
        self.fc.aggregates.append(fakes.Aggregate(
            'solver-copy', pools.metadata_for(PT_SPEC)))
        found = self.assert_found('pool-aggregates')
        self.assertEqual({'aggregate solver', 'aggregate solver-copy'},
                         {f.object for f in found})
        del self.fc.aggregates[1].metadata[pools.POOL_KEY]
        self.assertEqual([], self.named('pool-aggregates'))

    def project_cloud(self, metadata):
        self.pool(PT_SPEC, ['gpu-pt-1'])
        self.pool(VGPU_SPEC, ['gpu-vgpu-1'])
        self.fc.aggregates[0].metadata.update(metadata)
        cloud = self.cloud()
        cloud.projects = {'p1': 'team-a', 'p2': 'team-b'}
        return cloud

    def test_project_limits_with_a_name_or_a_deleted_project(self):
        cloud = self.project_cloud({'filter_tenant_id_p1': 'p1',
                                    'filter_tenant_id_x': 'team-b',
                                    'filter_tenant_id_gone': 'gone'})
        found = {f.object: f for f in checks.run(
            cloud, names=['pool-projects'])}
        self.assertEqual({'pool solver / filter_tenant_id_x',
                          'pool solver / filter_tenant_id_gone'},
                         set(found))
        by_name = found['pool solver / filter_tenant_id_x']
        self.assertEqual(checks.ERROR, by_name.severity)
        self.assertEqual(
            'openstack aggregate set --property filter_tenant_id_x=p2 '
            'solver', by_name.fix)
        gone = found['pool solver / filter_tenant_id_gone']
        # p1 still uses the pool: a dead entry is a warning
        self.assertEqual(checks.WARNING, gone.severity)
        self.assertEqual('openstack aggregate unset --property '
                         'filter_tenant_id_gone solver', gone.fix)

    def test_only_dead_projects_close_the_pool(self):
        cloud = self.project_cloud({'filter_tenant_id': 'gone1,gone2'})
        found = checks.run(cloud, names=['pool-projects'])
        self.assertEqual(2, len(found))
        self.assertEqual({checks.ERROR}, {f.severity for f in found})
        self.assertIn('refuse every project', found[0].symptom)
        # the key is rewritten in place, never unset (that would open
        # the pool to every project)
        self.assertEqual(
            ['openstack aggregate set --property filter_tenant_id=gone2 '
             'solver',
             'openstack aggregate set --property filter_tenant_id=gone1 '
             'solver'], [f.fix for f in found])

    def test_a_dead_project_in_a_list_with_live_ones(self):
        cloud = self.project_cloud({'filter_tenant_id': 'p1,gone,p2'})
        found = checks.run(cloud, names=['pool-projects'])
        self.assertEqual([checks.WARNING], [f.severity for f in found])
        self.assertEqual('openstack aggregate set --property '
                         'filter_tenant_id=p1,p2 solver', found[0].fix)

    def test_projects_fixed_or_not_read(self):
        cloud = self.project_cloud({'filter_tenant_id': 'gone'})
        self.assertEqual(1, len(checks.run(cloud, names=['pool-projects'])))
        cloud.projects = None  # Keystone not read: said, not judged
        self.assertEqual([('pool-projects', 'pool solver')], not_judged(
            checks.run(cloud, names=['pool-projects'])))
        # the fix applied: a live project, the dead entry gone
        metadata = self.fc.aggregates[0].metadata
        del metadata['filter_tenant_id']
        metadata['filter_tenant_id_p1'] = 'p1'
        cloud = self.cloud()
        cloud.projects = {'p1': 'team-a'}
        self.assertEqual([], checks.run(cloud, names=['pool-projects']))

    def test_a_truncated_project_list_calls_no_live_project_gone(self):
        # Keystone's list_limit: the list stops after 2 projects and
        # says "truncated"; it does not page. p3 is alive, beyond it
        keystone = TruncatingKeystone(
            {'p1': 'team-a', 'p2': 'team-b', 'p3': 'team-c'}, list_limit=2,
            forbidden={'hidden'})
        limits = identity_mod.Limits(keystone, session=None)
        cloud = self.project_cloud({
            'filter_tenant_id': 'p1,p3,gone,hidden',
            'filter_tenant_id_x': 'team-c'})
        pools_read = {name: {'metadata': pool['metadata']}
                      for name, pool in cloud.pools.items()}
        cloud.projects = snapshot._projects(
            type('C', (), {'limits': limits})(), pools_read)
        self.assertEqual({'p1', 'p2', 'p3', 'hidden'}, set(cloud.projects))
        found = {f.object: f for f in checks.run(
            cloud, names=['pool-projects'])}
        self.assertEqual({'pool solver / filter_tenant_id',
                          'pool solver / filter_tenant_id_x'}, set(found))
        # only "gone" is called deleted; p3 and the project Keystone does
        # not let us look up ("hidden") stay
        self.assertIn('filter_tenant_id=gone is no project',
                      found['pool solver / filter_tenant_id'].symptom)
        self.assertEqual('openstack aggregate set --property '
                         'filter_tenant_id=p1,p3,hidden solver',
                         found['pool solver / filter_tenant_id'].fix)
        # a name beyond the list is found by name, and named as a name
        self.assertIn('names a project by name',
                      found['pool solver / filter_tenant_id_x'].symptom)
        # one list, then one lookup per value missing from it
        self.assertEqual(['list', 'find gone', 'find hidden', 'find p3',
                          'find team-c'], keystone.calls)

    def test_pool_option_keeps_that_pools_findings(self):
        self.pool(PT_SPEC, ['gpu-pt-1', 'plain-1'])
        self.pool(VGPU_SPEC, ['gpu-vgpu-1', 'plain-1'])
        found = self.run_checks(pool='ws')
        self.assertEqual(['pool ws / host plain-1', 'nova.conf [quota]'],
                         [f.object for f in found])


class TestPoolScope(ChecksTestCase):
    """A finding about a flavor belongs to every pool the flavor steers
    to, so ``gpu check --pool P`` shows P's broken flavors."""

    def broken_flavors(self):
        self.pool(PT_SPEC, ['gpu-pt-1'])
        self.pool(VGPU_SPEC, ['gpu-vgpu-1'])
        self.flavor('pt.1', PT_SPEC)
        self.flavor('ws.1', VGPU_SPEC)
        # steered to solver, asking for an alias nothing maps
        self.flavor('pt.typo', PT_SPEC, **{
            'pci_passthrough:alias': 'h10O:1'})
        # steered to ws: a trait nothing has, an unscoped key, too many
        self.flavor('ws.trait', VGPU_SPEC, **{
            'trait:CUSTOM_NOPE': 'required'})
        self.flavor('ws.many', VGPU_SPEC, gpus=9)
        self.flavor('ws.unscoped', VGPU_SPEC, ssd='true')
        # memory encryption no host of ws offers
        self.flavor('ws.sev', VGPU_SPEC, **{'hw:mem_encryption': 'true'})
        # four large-BAR GPUs and 512 GiB of RAM in 40 bits
        self.pool(NVL_SPEC, ['gpu-pt-1'])
        self.flavor('llm.4', NVL_SPEC, gpus=4, ram=512 * 1024)

    def test_a_pool_flavor_with_an_unmapped_alias_is_the_pools(self):
        self.broken_flavors()
        for settings in (None, conf(GOOD_CONF)):
            found = [f for f in self.run_checks(settings, pool='solver')
                     if f.object == 'flavor pt.typo']
            # (an H100 PCIe's BAR1 size is not in the catalogue)
            self.assertEqual(['flavor-address-space', 'flavor-pci-alias'],
                             sorted(f.check for f in found), settings)
        found = [f for f in self.run_checks(conf(GOOD_CONF),
                                            pool='solver')
                 if f.check == 'flavor-pci-alias']
        self.assertEqual([checks.ERROR], [f.severity for f in found])

    def test_every_flavor_finding_names_the_flavors_pools(self):
        self.broken_flavors()
        settings_cases = (None, conf(GOOD_CONF), conf(
            '[filter_scheduler]\nenabled_filters = ComputeFilter\n'
            'pci_in_placement = false\n'))
        cloud = self.cloud()
        readings = {'flavor %s' % f['name']: r
                    for f, r in capacity_mod.gpu_flavors(
                        cloud.flavors, cloud.pools)}
        seen = set()
        for settings in settings_cases:
            every = checks.run(cloud, settings)
            for item in every:
                reading = readings.get(item.object)
                if reading is None:
                    continue
                steered = set(capacity_mod.flavor_pools(
                    reading, cloud.pools))
                self.assertTrue(steered, item)
                self.assertLessEqual(steered, set(item.pools), item)
                for pool in steered:
                    self.assertIn(item, checks.run(cloud, settings,
                                                   pool=pool))
                seen.add(item.check)
        # the corpus reaches every check that speaks of one flavor
        self.assertEqual(
            {'flavor-pci-alias', 'flavor-unknown-trait',
             'flavor-too-many-devices', 'flavor-unscoped-keys',
             'flavor-mem-encryption', 'flavor-address-space'}, seen)

    def test_a_scheduler_setting_the_pools_flavors_rely_on(self):
        self.clean_cloud()
        found = [f for f in self.run_checks(
            conf(GOOD_CONF + '[filter_scheduler]\n'
                 'pci_in_placement = false\n'), pool='solver')
            if f.object == 'pci_in_placement']
        self.assertEqual(['scheduler-settings'], [f.check for f in found])


class TestFlavors(ChecksTestCase):
    def test_unknown_trait(self):
        self.clean_cloud()
        self.flavor('pt.avx', PT_SPEC, **{'trait:CUSTOM_NOPE': 'required'})
        found = self.assert_found('flavor-unknown-trait')
        self.assertEqual(
            'openstack flavor unset --property trait:CUSTOM_NOPE pt.avx',
            found[0].fix)
        self.pt.traits.append('CUSTOM_NOPE')
        self.assertEqual([], self.named('flavor-unknown-trait'))

    def test_mem_encryption_no_host_of_the_pool_offers(self):
        # issue 40, rule 2: Nova adds MEM_ENCRYPTION_CONTEXT=1 and the
        # model's trait to the request (Nova 34's
        # _translate_mem_encryption_request)
        self.clean_cloud()
        self.flavor('pt.snp', PT_SPEC, **{
            'hw:mem_encryption': 'true',
            'hw:mem_encryption_model': 'amd-sev-snp'})
        found = self.assert_found('flavor-mem-encryption')
        # the encryption slot is no GPU: not a device count question
        self.assertEqual([], self.named('flavor-too-many-devices'))
        self.assertEqual('flavor pt.snp', found[0].object)
        self.assertIn('HW_CPU_X86_AMD_SEV_SNP', found[0].symptom)
        self.assertEqual(['solver'], list(found[0].pools))
        self.assertTrue(found[0].fix.startswith(
            'openstack flavor unset --property hw:mem_encryption pt.snp  ('))
        # a slot without the model's trait (plain SEV only): still none
        root = self.root('gpu-pt-1')
        root.inventory['MEM_ENCRYPTION_CONTEXT'] = fakes.inv(8)
        root.traits.append('HW_CPU_X86_AMD_SEV')
        self.assert_found('flavor-mem-encryption')
        # the host offers it: clean
        root.traits.append('HW_CPU_X86_AMD_SEV_SNP')
        self.assertEqual([], self.named('flavor-mem-encryption'))
        # the fix as written: the flavor no longer asks
        root.traits.remove('HW_CPU_X86_AMD_SEV_SNP')
        flavor = [f for f in self.fc.flavors if f['name'] == 'pt.snp'][0]
        del flavor['extra_specs']['hw:mem_encryption']
        self.assertEqual([], self.named('flavor-mem-encryption'))

    def test_address_space_of_large_bar_gpus(self):
        # issue 40, rule 3: 4 x H100 NVL (BAR1 128 GiB) and 512 GiB of RAM
        # overflow the 40 bits a guest has without hw:maxphysaddr_mode
        self.clean_cloud()
        self.pool(NVL_SPEC, ['gpu-pt-1'])
        self.flavor('llm.2', NVL_SPEC, gpus=2, ram=512 * 1024)
        self.flavor('llm.4', NVL_SPEC, gpus=4, ram=512 * 1024)
        found = [f for f in self.assert_found('flavor-address-space',
                                              severity=checks.WARNING)
                 if not f.symptom.startswith('not judged')]
        self.assertEqual(['flavor llm.4'], [f.object for f in found])
        self.assertEqual(('llm',), found[0].pools)
        self.assertIn('1028 GiB', found[0].symptom)
        self.assertIn('40 bits', found[0].symptom)
        self.assertTrue(found[0].fix.startswith(
            'openstack gpu flavor set --property '
            'hw:maxphysaddr_mode=passthrough llm.4  ('))
        self.assertIn('hw:maxphysaddr_bits=42', found[0].fix)
        flavor = [f for f in self.fc.flavors if f['name'] == 'llm.4'][0]
        # too few emulated bits: still found
        flavor['extra_specs'].update({'hw:maxphysaddr_mode': 'emulate',
                                      'hw:maxphysaddr_bits': '40'})
        self.assert_found('flavor-address-space', severity=checks.WARNING)
        # either fix as written: clean
        flavor['extra_specs']['hw:maxphysaddr_bits'] = '42'
        self.assertEqual(['flavor pt.1'], [
            f.object for f in self.named('flavor-address-space')])
        flavor['extra_specs'] = dict(flavor['extra_specs'], **{
            'hw:maxphysaddr_mode': 'passthrough'})
        del flavor['extra_specs']['hw:maxphysaddr_bits']
        self.assertEqual(['flavor pt.1'], [
            f.object for f in self.named('flavor-address-space')])

    def test_address_space_not_judged_without_a_bar1_size(self):
        """Issue 51 defect 16: a 4-GPU, 512 GiB flavor of an H100 PCIe
        pool (the catalogue has no BAR1 size of it) is "not judged",
        naming the board and the most each BAR1 may be; so is a pool of a
        PCI ID no catalogue board has. Nothing where nothing is at
        stake: no GPU, or the host's address bits (passthrough)."""
        self.pool(PT_SPEC, ['gpu-pt-1'])
        self.flavor('pt.4', PT_SPEC, gpus=4, ram=512 * 1024)
        other = pools.build_spec('other', 'passthrough', alias='x1',
                                 pci_id='10de:ffff')
        self.pool(other, [])
        self.flavor('x.1', other)
        self.flavor('pt.host-bits', PT_SPEC, gpus=4, ram=512 * 1024, **{
            'hw:maxphysaddr_mode': 'passthrough'})
        found = {f.object: f for f in self.assert_found(
            'flavor-address-space', severity=checks.WARNING)}
        self.assertEqual({'flavor pt.4', 'flavor x.1'}, set(found))
        self.assertEqual(
            'not judged: BAR1 size of H100-PCIE-80GB (10de:2331) unknown: '
            'a guest of it (524288 MiB of RAM, 4 GPUs, 40 address bits) '
            'maps every GPU\'s BAR1 window only if each is at most 127 GiB '
            '(the catalogue\'s BAR1 sizes: doc/source/user/catalogue.rst).',
            found['flavor pt.4'].symptom)
        self.assertEqual(('solver',), found['flavor pt.4'].pools)
        self.assertIn('nvidia-smi -q -d MEMORY', found['flavor pt.4'].fix)
        self.assertIn('hw:maxphysaddr_mode=passthrough pt.4',
                      found['flavor pt.4'].fix)
        self.assertIn('BAR1 size of the GPU with PCI ID 10de:ffff (no board '
                      'of the catalogue) unknown', found['flavor x.1'].symptom)
        # emulated bits: judged by them
        flavor = [f for f in self.fc.flavors if f['name'] == 'pt.4'][0]
        flavor['extra_specs'].update({'hw:maxphysaddr_mode': 'emulate',
                                      'hw:maxphysaddr_bits': '44'})
        found = {f.object: f for f in self.named('flavor-address-space')}
        self.assertIn('44 address bits', found['flavor pt.4'].symptom)
        self.assertEqual(0, checks.exit_status(list(found.values())))

    def test_address_space_judged_with_a_sourced_bar1_size(self):
        """Issue 51 defect 16: a board whose BAR1 size the catalogue now
        has from a source (H100 SXM5, 10de:2330: 128 GiB) is judged: four
        of them and 512 GiB of RAM overflow 40 bits, as the H100 NVL's."""
        sxm = pools.build_spec('sxm', 'passthrough', alias='h100sxm',
                               pci_id='10de:2330')
        self.pool(sxm, [])
        self.flavor('sxm.4', sxm, gpus=4, ram=512 * 1024)
        found = {f.object: f for f in self.named('flavor-address-space')}
        symptom = found['flavor sxm.4'].symptom
        self.assertFalse(symptom.startswith('not judged'), symptom)
        self.assertIn('1028 GiB', symptom)
        self.assertIn('40 bits', symptom)

    def test_mem_encryption_unknown_model(self):
        self.clean_cloud()
        self.flavor('pt.cca', PT_SPEC, **{
            'hw:mem_encryption': 'true',
            'hw:mem_encryption_model': 'arm-cca'})
        found = self.assert_found('flavor-mem-encryption')
        self.assertIn('not one Nova knows', found[0].symptom)

    def test_unknown_pool_trait_points_at_pool_set(self):
        self.pool(ISO_SPEC, ['gpu-pt-1'])
        self.flavor('pt.1', ISO_SPEC)
        self.root('gpu-pt-1').traits.remove(pools.pool_trait('solver'))
        found = self.assert_found('flavor-unknown-trait')
        self.assertEqual('openstack gpu pool set solver --isolate',
                         found[0].fix)

    def test_more_devices_than_any_pool_host(self):
        self.clean_cloud()
        self.flavor('pt.8', PT_SPEC, gpus=8)
        found = self.assert_found('flavor-too-many-devices')
        self.assertEqual(['flavor pt.8'], [f.object for f in found])
        self.assertIn('CUSTOM_PCI_10DE_2331=4', found[0].symptom)
        self.fc.pci_host('gpu-pt-2', count=8)
        self.fc.aggregates[0].hosts.append('gpu-pt-2')
        self.assertEqual([], self.named('flavor-too-many-devices'))

    def test_multi_vgpu_needs_as_many_pgpus(self):
        self.clean_cloud()
        # 3 vGPUs, group_policy=isolate: 3 pGPUs, the host has 2
        self.flavor('ws.3', VGPU_SPEC, gpus=3)
        found = self.assert_found('flavor-too-many-devices')
        self.assertIn('VGPU=3', found[0].symptom)
        self.fc.vgpu_host('gpu-vgpu-2', pgpus=4,
                          traits=['CUSTOM_NVIDIA_35'])
        self.fc.aggregates[1].hosts.append('gpu-vgpu-2')
        self.assertEqual([], self.named('flavor-too-many-devices'))

    def test_unscoped_group_policy_trap(self):
        self.clean_cloud()
        self.flavor('ws.2', VGPU_SPEC, gpus=2)
        # the pool's aggregate lost what gpu flavor create put there
        del self.fc.aggregates[1].metadata['group_policy']
        found = self.assert_found('flavor-unscoped-keys')
        self.assertEqual(
            'openstack aggregate set --property group_policy=isolate ws',
            found[0].fix)
        self.fc.aggregates[1].metadata['group_policy'] = 'isolate'
        self.assertEqual([], self.named('flavor-unscoped-keys'))

    def test_flavor_of_a_pool_without_hosts_is_no_size_question(self):
        self.pool(PT_SPEC)
        self.flavor('pt.8', PT_SPEC, gpus=8)
        # not a size, but said: no boot lands until a host joins
        found = self.named('flavor-too-many-devices')
        self.assertEqual([(checks.WARNING, 'flavor pt.8',
                           'openstack gpu pool add host solver <host>')],
                         [(f.severity, f.object, f.fix) for f in found])
        self.fc.aggregates[0].hosts.append('gpu-pt-1')
        self.assertEqual(['flavor pt.8'], [
            f.object for f in self.named('flavor-too-many-devices')])

    def test_unscoped_keys_silent_without_the_filter(self):
        self.clean_cloud()
        self.flavor('ws.2', VGPU_SPEC, gpus=2)
        del self.fc.aggregates[1].metadata['group_policy']
        settings = conf('[filter_scheduler]\nenabled_filters = '
                        'ComputeFilter\n')
        self.assertEqual([], self.named('flavor-unscoped-keys', settings))

    def test_public_flavor_of_limited_pool(self):
        self.pool(LIMITED_SPEC, ['gpu-pt-1'])
        self.flavor('pt.1', LIMITED_SPEC)
        found = self.assert_found('flavor-public-limited-pool',
                                 severity=checks.WARNING)
        self.assertIn('--private --project p1', found[0].fix)
        self.fc.flavors[0]['os-flavor-access:is_public'] = False
        self.assertEqual([], self.named('flavor-public-limited-pool'))

    def test_pci_alias_missing_from_nova_conf(self):
        self.clean_cloud()
        self.assertEqual(  # no conf: said, not judged
            [('flavor-pci-alias', 'nova.conf [pci] alias')],
            not_judged(self.named('flavor-pci-alias')))
        found = self.assert_found('flavor-pci-alias', conf(''))
        self.assertTrue(found[0].fix.startswith('[pci] alias = '))
        self.assertIn('"name": "h100"', found[0].fix)
        fixed = conf('[pci]\nalias = %s\n' % found[0].fix.split(' = ')[1])
        self.assertEqual([], self.named('flavor-pci-alias', fixed))


class TestImages(ChecksTestCase):
    def test_bios_image_with_passthrough_flavors(self):
        self.clean_cloud()
        self.fc.images.append({'id': 'img-bios', 'name': 'cirros',
                               'status': 'active'})
        found = self.assert_found('image-firmware', severity=checks.WARNING)
        self.assertEqual(['image cirros'], [f.object for f in found])
        self.assertEqual('openstack gpu image set --q35 --uefi img-bios',
                         found[0].fix)
        self.fc.images[-1].update(hw_machine_type='q35',
                                  hw_firmware_type='uefi')
        self.assertEqual([], self.named('image-firmware'))

    def test_images_not_judged_without_passthrough_flavors(self):
        self.pool(VGPU_SPEC, ['gpu-vgpu-1'])
        self.flavor('ws.1', VGPU_SPEC)
        self.fc.images.append({'id': 'img-bios', 'status': 'active'})
        self.assertEqual([], self.named('image-firmware'))

    def test_image_requiring_pool_trait(self):
        self.clean_cloud()
        trait = pools.pool_trait('solver')
        self.fc.images.append({'id': 'img-x', 'name': 'x',
                               'status': 'active',
                               'hw_machine_type': 'q35',
                               'hw_firmware_type': 'uefi',
                               'trait:' + trait: 'required'})
        found = self.assert_found('image-pool-trait')
        self.assertEqual('openstack image unset --property trait:%s img-x'
                         % trait, found[0].fix)
        self.assertEqual(('solver',), found[0].pools)
        del self.fc.images[-1]['trait:' + trait]
        self.assertEqual([], self.named('image-pool-trait'))


class TestScheduler(ChecksTestCase):
    def test_isolation_without_filtering(self):
        self.pool(ISO_SPEC, ['gpu-pt-1'])
        bad = conf('[scheduler]\nenable_isolated_aggregate_filtering = '
                   'false\n')
        found = self.assert_found('scheduler-settings', bad)
        self.assertEqual(
            '[scheduler] enable_isolated_aggregate_filtering = True',
            found[0].fix)
        self.assertEqual([], self.named('scheduler-settings', conf(
            '[scheduler]\n' + found[0].fix.split('] ')[1] + '\n')))
        self.assertEqual(  # no conf: said, not judged
            [('scheduler-settings', 'nova.conf')],
            not_judged(self.named('scheduler-settings')))

    def test_projects_without_tenant_filter(self):
        self.pool(LIMITED_SPEC, ['gpu-pt-1'])
        bad = conf('[filter_scheduler]\nenabled_filters = ComputeFilter,'
                   'AggregateInstanceExtraSpecsFilter\n')
        found = self.assert_found('scheduler-settings', bad)
        self.assertEqual(['AggregateMultiTenancyIsolation'],
                         [f.object for f in found])
        fixed = conf('[filter_scheduler]\n%s\n'
                     % found[0].fix.split('] ')[1])
        self.assertEqual([], self.named('scheduler-settings', fixed))

    def test_steering_without_extra_specs_filter(self):
        self.clean_cloud()
        bad = conf('[filter_scheduler]\nenabled_filters = ComputeFilter\n')
        found = self.assert_found('scheduler-settings', bad)
        self.assertEqual(['AggregateInstanceExtraSpecsFilter'],
                         [f.object for f in found])

    def test_pci_in_placement_off(self):
        self.clean_cloud()
        found = self.assert_found('scheduler-settings', conf(
            '[filter_scheduler]\npci_in_placement = false\n'),
            severity=checks.WARNING)
        self.assertEqual('[filter_scheduler] pci_in_placement = True',
                         found[0].fix)


class TestLibvirtPostCopy(ChecksTestCase):
    """Issue 40, rule 4: post-copy on hosts live-migrating VFIO devices."""

    ON = '[libvirt]\nlive_migration_permit_post_copy = true\n'

    def test_vgpu_pool_with_post_copy(self):
        self.pool(VGPU_SPEC, ['gpu-vgpu-1'])
        found = self.assert_found('libvirt-post-copy', conf(self.ON))
        self.assertEqual(['ws'], list(found[0].pools))
        self.assertEqual('[libvirt] live_migration_permit_post_copy = False',
                         found[0].fix)
        section, line = found[0].fix.split(' ', 1)
        fixed = conf(self.ON + '%s\n%s\n' % (section, line))
        self.assertEqual([], self.named('libvirt-post-copy', fixed))
        # unset: Nova's default (False); no nova.conf: nothing to judge
        self.assertEqual([], self.named('libvirt-post-copy',
                                        conf('[DEFAULT]\n')))
        self.assertEqual([], self.named('libvirt-post-copy'))

    def test_passthrough_only_when_live_migratable(self):
        self.pool(PT_SPEC, ['gpu-pt-1'])
        self.assertEqual([], self.named('libvirt-post-copy', conf(self.ON)))
        self.fresh()
        self.pool(pools.build_spec('solver', 'passthrough', alias='h100',
                                   pci_id='10de:2331', live_migratable=True),
                  ['gpu-pt-1'])
        self.assert_found('libvirt-post-copy', conf(self.ON))


class TestWideTrees(ChecksTestCase):
    """Issue 40, rule 5: >= 8 child providers of a pool's class on a host
    and a flavor asking > 4 (Placement's bug 2126751 "when to enable")
    without Placement's settings for it in placement.conf."""

    PLACEMENT_CONF = ('[workarounds]\noptimize_for_wide_provider_trees = '
                      'True\n[placement]\nmax_allocation_candidates = 1000\n'
                      'allocation_candidates_generation_strategy = '
                      'breadth-first\n')

    def wide_cloud(self, children=8, gpus=5):
        self.fc = fakes.FakeCloud()
        self.fc.pci_host('gpu-pt-8', count=children)
        self.fc.images.append(dict(GOOD_IMAGE))
        self.pool(PT_SPEC, ['gpu-pt-8'])
        self.flavor('pt.%d' % gpus, PT_SPEC, gpus=gpus)

    def test_each_setting_and_its_fix(self):
        self.wide_cloud()
        text = GOOD_CONF
        found = self.assert_found('placement-wide-trees', conf(text),
                                  severity=checks.WARNING)
        self.assertEqual(
            ['[placement] allocation_candidates_generation_strategy = '
             'breadth-first',
             '[placement] max_allocation_candidates = 1000',
             '[workarounds] optimize_for_wide_provider_trees = true'],
            [f.fix for f in found])
        self.assertEqual({('solver',)}, {f.pools for f in found})
        self.assertIn('host gpu-pt-8 has 8 child providers', found[0].symptom)
        self.assertIn('Placement 15.0.0 (2026.1)', found[0].symptom)
        # each fix, as written, clears its finding
        for item in found:
            section, line = item.fix.split(' ', 1)
            text += '%s\n%s\n' % (section, line)
            self.assertNotIn(item.object, [
                f.object for f in self.named('placement-wide-trees',
                                             conf(text))])
        self.assertEqual([], self.named('placement-wide-trees', conf(text)))
        self.assertEqual([], self.named('placement-wide-trees',
                                        conf(self.PLACEMENT_CONF)))
        # unlimited or above 1000 is not what Placement advises
        for maximum in ('-1', '5000'):
            self.assertEqual(
                ['placement.conf [placement] max_allocation_candidates'],
                [f.object for f in self.named(
                    'placement-wide-trees', conf(self.PLACEMENT_CONF.replace(
                        '= 1000', '= ' + maximum)))])

    def test_only_where_the_pools_make_it_matter(self):
        for children, gpus in ((7, 5), (8, 4)):
            self.wide_cloud(children, gpus)
            self.assertEqual([], self.named('placement-wide-trees',
                                            conf(GOOD_CONF)),
                             (children, gpus))
        # without any file: said, not judged
        self.wide_cloud()
        found = self.named('placement-wide-trees')
        self.assertEqual([('placement-wide-trees', 'placement.conf')],
                         not_judged(found))
        self.assertIn('--nova-conf /etc/placement/placement.conf',
                      found[0].fix)


class TestQuotaPci(ChecksTestCase):
    """Issue 40, rule 1: PCI alias GPUs are not counted against unified
    limits before Nova 2026.2 (compute API 2.104)."""

    def test_older_nova_does_not_enforce_pci_limits(self):
        self.pool(PT_SPEC, ['gpu-pt-1'])
        self.pool(VGPU_SPEC, ['gpu-vgpu-1'])
        self.assertEqual([], self.named('quota-pci-not-enforced'))
        self.fc.compute_max_version = (2, 103)
        found = self.assert_found('quota-pci-not-enforced',
                                  severity=checks.WARNING)
        # the passthrough pool only: vGPU flavors ask resources:VGPU
        self.assertEqual([('class:CUSTOM_PCI_10DE_2331', ('solver',))],
                         [(f.object, f.pools) for f in found])
        self.assertIn('Nova 2026.1', found[0].symptom)
        self.assertTrue(found[0].fix.startswith(
            'openstack gpu pool set solver --project <project>'))
        # the legacy driver counts no GPU at all: quota-gpu-limits says so
        self.assertEqual([], self.named('quota-pci-not-enforced', conf(
            '[quota]\ndriver = nova.quota.DbQuotaDriver\n')))
        # the version not read: not judged
        self.fc.compute_max_version = None
        self.assertEqual([('quota-pci-not-enforced', 'compute API version')],
                         not_judged(self.named('quota-pci-not-enforced')))


class TestPlacement(ChecksTestCase):
    def test_unmapped_trees_aggregate_per_class(self):
        self.clean_cloud()
        for i in range(5):
            self.fc.add(fakes.Provider(
                'ghost-%d' % i,
                inventory={'CUSTOM_PCI_10DE_2331': fakes.inv(2)}))
        found = self.assert_found('placement-unmapped-trees',
                                 severity=checks.WARNING)
        self.assertEqual(1, len(found))
        self.assertEqual('5 provider tree(s) with CUSTOM_PCI_10DE_2331',
                         found[0].object)
        self.assertIn('ghost-0, ghost-1, ghost-2, ...', found[0].symptom)
        self.assertIn(fakes.uid('ghost-0'), found[0].fix)
        # not about any pool
        self.assertEqual([], [f for f in self.run_checks(pool='solver')
                              if f.check == 'placement-unmapped-trees'])
        self.fc.providers = [p for p in self.fc.providers
                             if not p.name.startswith('ghost')]
        self.assertEqual([], self.named('placement-unmapped-trees'))

    def test_disabled_service_with_gpus(self):
        self.clean_cloud()
        self.fc.disabled.add('gpu-pt-1')
        found = self.assert_found('placement-disabled-service',
                                 severity=checks.WARNING)
        self.assertIn('4 CUSTOM_PCI_10DE_2331', found[0].symptom)
        self.assertEqual(
            'openstack compute service set --enable gpu-pt-1 nova-compute',
            found[0].fix)
        self.fc.disabled.add('plain-1')  # no GPUs: nothing to say
        self.assertEqual(1, len(self.named('placement-disabled-service')))


class TestRun(ChecksTestCase):
    def test_errors_first_and_only_named_checks(self):
        self.pool(PT_SPEC, ['gpu-pt-1', 'plain-1'])
        found = self.run_checks()
        self.assertEqual(checks.ERROR, found[0].severity)
        self.assertEqual(checks.WARNING, found[-1].severity)
        only = self.run_checks(names=['pool-unpooled-hosts'])
        self.assertEqual({'pool-unpooled-hosts'}, {f.check for f in only})
        self.assertEqual(1, checks.exit_status(found))

    def test_unknown_checks(self):
        self.assertEqual(['nope'], checks.unknown_checks(
            ['nope', 'pool-drift']))


class TestStranded(ChecksTestCase):
    """gpu-stranded: capacity's stranded GPUs on a host out of a compute
    class for every GPU flavor that would use them."""

    # (case, the flavor's sizes, used on gpu-pt-1's compute node, what the
    # symptom says or None for no finding)
    CASES = [
        ('room left', {'ram': 4096}, {'MEMORY_MB': 1024}, None),
        ('memory', {'ram': 102400}, {'MEMORY_MB': 262144 - 512 - 1024},
         'MEMORY_MB exhausted (1024 free, pt.1 needs 102400)'),
        ('vcpu', {'vcpus': 16}, {'VCPU': 120},
         'VCPU exhausted (8 free, pt.1 needs 16)'),
        ('disk', {'disk': 500}, {'DISK_GB': 1800},
         'DISK_GB exhausted (200 free, pt.1 needs 500)'),
        ('disk with swap', {'disk': 100, 'swap': 204800},
         {'DISK_GB': 1800}, 'DISK_GB exhausted (200 free, pt.1 needs 300)'),
    ]

    def loaded(self, sizes, used, spec=PT_SPEC):
        self.pool(spec, ['gpu-pt-1'])
        self.flavor('pt.1', spec)
        self.fc.flavors[-1].update(sizes)
        self.pt.used.update(used)

    def test_cases(self):
        for case, sizes, used, said in self.CASES:
            self.fresh()
            self.loaded(sizes, used)
            found = self.named('gpu-stranded')
            if said is None:
                self.assertEqual([], found, case)
                continue
            self.assertEqual(
                [(checks.WARNING, 'host gpu-pt-1', ('solver',))],
                [(f.severity, f.check and f.object, f.pools)
                 for f in found], case)
            self.assertIn(said, found[0].symptom, case)
            self.assertIn('4 free CUSTOM_PCI_10DE_2331 on gpu-pt-1',
                          found[0].symptom, case)
            self.assertEqual(
                'openstack server list --all-projects --host gpu-pt-1  '
                '(move the servers that use no GPU off it: openstack '
                'server migrate --live-migration <server>); openstack gpu '
                'pool set solver --isolate', found[0].fix, case)

    def test_used_gpus_are_not_counted_and_isolated_pools_not_told(self):
        self.loaded({'ram': 102400}, {'MEMORY_MB': 262144 - 512 - 1024},
                    spec=ISO_SPEC)
        for provider in self.fc.tree(self.pt)[1:2]:
            provider.used['CUSTOM_PCI_10DE_2331'] = 1
        found = self.assert_found('gpu-stranded', severity=checks.WARNING)
        self.assertIn('3 free CUSTOM_PCI_10DE_2331', found[0].symptom)
        self.assertNotIn('--isolate', found[0].fix)

    def test_a_flavor_that_still_fits_frees_them(self):
        self.loaded({'ram': 102400}, {'MEMORY_MB': 262144 - 512 - 1024})
        self.assertEqual(1, len(self.named('gpu-stranded')))
        self.flavor('pt.small', PT_SPEC)
        self.assertEqual([], self.named('gpu-stranded'))

    def test_other_reasons_are_other_checks(self):
        # a disabled service: placement-disabled-service says it
        self.loaded({}, {})
        self.fc.disabled.add('gpu-pt-1')
        self.assertEqual([], self.named('gpu-stranded'))
        self.assertEqual(1, len(self.named('placement-disabled-service')))
        # vGPUs no flavor asks for: capacity strands them, not for want
        # of RAM (pool-unpooled-hosts names the host)
        self.assertEqual([], [f for f in self.named('gpu-stranded')
                              if 'gpu-vgpu-1' in f.object])


class TestIdle(ChecksTestCase):
    """gpu-idle over the rows of gpu server list --utilisation."""

    def row(self, sid, state, peak=None, pool='solver', device='pGPU x'):
        return {'id': sid, 'name': 'vm-' + sid, 'project': 'p1',
                'pool': pool, 'resource_class': 'CUSTOM_PCI_10DE_2331',
                'device': device, 'state': state, 'peak': peak,
                'mean': peak}

    # (case, the rows' states and peaks, the objects found)
    CASES = [
        ('idle', [('s1', 'idle', 1.5)], ['server vm-s1 (s1)']),
        ('busy', [('s1', 'busy', 80.0)], []),
        ('shared card', [('s1', 'shared', 0.0)], []),
        ('unknown', [('s1', 'unknown', None), ('s2', 'unknown', None)],
         ['2 server device(s)']),
        ('mixed', [('s1', 'idle', 0.0), ('s1', 'busy', 60.0),
                   ('s2', 'idle', 4.9)],
         ['server vm-s1 (s1)', 'server vm-s2 (s2)']),
    ]

    def run_idle(self, rows, pool=None, window=5400, idle_below=5.0):
        cloud = self.cloud()
        cloud.utilisation = {'rows': rows, 'window': window,
                             'idle_below': idle_below}
        return checks.run(cloud, names=['gpu-idle'], pool=pool)

    def test_cases(self):
        for case, states, objects in self.CASES:
            found = self.run_idle([self.row(*s) for s in states])
            self.assertEqual(objects, [f.object for f in found], case)
            self.assertEqual({checks.WARNING} if objects else set(),
                             {f.severity for f in found}, case)

    def test_symptom_and_fix(self):
        found = self.run_idle([self.row('s1', 'idle', 1.25, device='pGPU '
                                        '0000:84:00.0')])
        self.assertEqual(
            'project p1 holds pGPU 0000:84:00.0 (CUSTOM_PCI_10DE_2331, pool '
            'solver) and its peak GPU utilisation over the last 1h30m was '
            '1.2 % (idle below 5 %): allocated, counted against quota and '
            'capacity, and unused.', found[0].symptom)
        self.assertIn('openstack server delete s1', found[0].fix)
        self.assertIn('openstack server resize --flavor <flavor> s1',
                      found[0].fix)
        self.assertIn('--idle-below', found[0].fix)
        self.assertEqual(('solver',), found[0].pools)
        self.assertEqual(0, checks.exit_status(found))
        self.assertEqual(1, checks.exit_status(found, strict=True))

    def test_pool_option(self):
        rows = [self.row('s1', 'idle', 0.0),
                self.row('s2', 'idle', 0.0, pool='ws')]
        self.assertEqual(['server vm-s2 (s2)'], [
            f.object for f in self.run_idle(rows, pool='ws')])

    def test_not_configured_or_not_read(self):
        # no Prometheus: the check does not run (the command says so)
        self.assertEqual([], checks.run(self.cloud(), names=['gpu-idle']))
        cloud = self.cloud()
        cloud.unread['utilisation'] = (
            'Querying Prometheus at http://p: HTTP 500')
        found = checks.run(cloud, names=['gpu-idle'])
        self.assertEqual([('gpu-idle', 'Prometheus')], not_judged(found))
        self.assertIn('HTTP 500', found[0].symptom)
        self.assertIn('--prometheus', found[0].fix)


class TestOneGroup(ChecksTestCase):
    def test_one_group_cannot_span_providers(self):
        # 2 whole GPUs in one group: Placement takes them from one
        # provider, and each PCI provider has 1
        self.clean_cloud()
        self.fc.add_flavor('pt.2.one', extra_specs={
            'resources:CUSTOM_PCI_10DE_2331': '2'})
        found = self.assert_found('flavor-too-many-devices')
        self.assertIn('at most 1 per request group', found[0].symptom)
        self.fc.flavors[-1]['extra_specs'] = {
            'resources1:CUSTOM_PCI_10DE_2331': '1',
            'resources2:CUSTOM_PCI_10DE_2331': '1',
            'group_policy': 'isolate'}
        self.assertEqual([], self.named('flavor-too-many-devices'))


class TestIsolateEdges(ChecksTestCase):
    """group_policy=isolate: Placement's _satisfies_group_policy wants as
    many distinct providers as numbered groups (N groups fit on N
    providers, not on N-1); group_policy=none lets the groups share one
    provider with room for them."""

    CASES = [
        # (numbered groups, pGPUs of the host, policy, fits?)
        (2, 2, 'isolate', True),
        (2, 1, 'isolate', False),
        (3, 3, 'isolate', True),
        (3, 2, 'isolate', False),
        (1, 1, 'isolate', True),
        (2, 1, 'none', True),
        (3, 1, 'none', True),
    ]

    def test_tree_fits_edges(self):
        for groups, pgpus, policy, fits in self.CASES:
            offered = {'VGPU': [('pgpu-%d' % i, 4, 4)
                                for i in range(pgpus)]}
            asked = [(str(n + 1), 'VGPU', 1) for n in range(groups)]
            self.assertEqual(
                fits, pool_checks._tree_fits(asked, policy, offered),
                '%d groups on %d pGPUs, group_policy=%s'
                % (groups, pgpus, policy))

    def test_check_edges_on_a_cloud(self):
        for groups, pgpus, policy, fits in self.CASES:
            self.fc = fakes.FakeCloud()
            self.fc.vgpu_host('gpu-vgpu-1', pgpus=pgpus,
                              traits=['CUSTOM_NVIDIA_35'])
            self.pool(VGPU_SPEC, ['gpu-vgpu-1'])
            extra = {'resources%d:VGPU' % (n + 1): '1'
                     for n in range(groups)}
            extra['group_policy'] = policy
            self.fc.add_flavor('ws.n', extra_specs=extra)
            found = self.named('flavor-too-many-devices')
            case = '%d groups on %d pGPUs, group_policy=%s' % (
                groups, pgpus, policy)
            self.assertEqual([] if fits else ['flavor ws.n'],
                             [f.object for f in found], case)


class TestNotJudged(ChecksTestCase):
    """A check that cannot judge an object says so (a warning naming the
    object and what would let it judge), never nothing; with what it
    lacked, it judges (an error, or nothing)."""

    def unknown_alias(self):
        # defect 10: an alias no pool describes, nine devices
        self.clean_cloud()
        self.fc.add_flavor('gpu.h100x9', extra_specs={
            'pci_passthrough:alias': 'a100:9'})

    def no_projects(self):
        self.pool(LIMITED_SPEC, ['gpu-pt-1'])
        self.flavor('pt.1', LIMITED_SPEC, public=False)

    def isolated(self):
        self.pool(ISO_SPEC, ['gpu-pt-1'])

    def traits_unread(self):
        self.clean_cloud()
        self.flavor('pt.avx', PT_SPEC, **{'trait:HW_CPU_X86_AVX2':
                                          'required'})

    # (name, setup, cloud change, check, object, fix says,
    #  settings that let it judge, severity then (None: nothing))
    CASES = [
        ('pci alias nothing describes', unknown_alias, None,
         'flavor-pci-alias', 'flavor gpu.h100x9', '--nova-conf',
         GOOD_CONF, checks.ERROR),
        ('pci aliases pools describe', unknown_alias, None,
         'flavor-pci-alias', 'nova.conf [pci] alias', '--nova-conf',
         GOOD_CONF, None),
        ('scheduler settings', isolated, None, 'scheduler-settings',
         'nova.conf', '--nova-conf',
         '[scheduler]\nenable_isolated_aggregate_filtering = false\n',
         checks.ERROR),
        ('quota driver', isolated, None, 'quota-gpu-limits',
         'nova.conf [quota]', '--nova-conf', '[DEFAULT]\n',
         checks.WARNING),
        ('registered limits', isolated, None, 'quota-gpu-limits',
         'registered limits', 'registered limits',
         '[quota]\ndriver = nova.quota.UnifiedLimitsDriver\n'
         'unified_limits_resource_strategy = ignore\n', None),
        ('project list', no_projects, 'projects', 'pool-projects',
         'pool solver', 'list projects', None, None),
        ('provider traits', traits_unread, 'traits',
         'flavor-unknown-trait', 'flavor pt.avx', 'traits', None, None),
        ('images', ChecksTestCase.clean_cloud, 'images',
         'image-firmware', 'images', 'images', None, checks.WARNING),
    ]

    def judge(self, change, settings, check):
        cloud = self.cloud()
        if change == 'projects':
            cloud.projects = None
        elif change == 'traits':
            for summary in cloud.placement.summaries.values():
                summary['traits'] = None
        elif change == 'images':
            cloud.images = None
        if check == 'quota-gpu-limits' and settings and 'ignore' in str(
                settings['quota']):
            cloud.registered = None  # Keystone refused them
        return [f for f in checks.run(cloud, settings, names=[check])]

    def test_each_check_says_what_it_cannot_judge(self):
        for (case, setup, change, check, obj, fix, judging,
             then) in self.CASES:
            self.fc = fakes.FakeCloud()
            self.pt = self.fc.pci_host('gpu-pt-1')
            self.fc.vgpu_host('gpu-vgpu-1', traits=['CUSTOM_NVIDIA_35'])
            self.fc.images.append(dict(GOOD_IMAGE))
            setup(self)
            settings = None
            if check == 'quota-gpu-limits' and obj == 'registered limits':
                settings = conf(judging)
            found = self.judge(change, settings, check)
            hits = [f for f in found if f.object == obj]
            self.assertEqual([checks.WARNING], [f.severity for f in hits],
                             '%s: %s' % (case, found))
            self.assertTrue(hits[0].symptom.startswith('not judged: '),
                            case)
            self.assertIn(fix, hits[0].fix, case)
            if judging is None or settings is not None:
                continue
            # given what it lacked, the check judges the same object
            judged = [f for f in checks.run(self.cloud(), conf(judging),
                                            names=[check])
                      if not f.symptom.startswith('not judged')]
            if then is None:
                self.assertEqual([], [f for f in judged if f.object == obj],
                                 case)
            else:
                self.assertIn(then, [f.severity for f in judged], case)

    def test_unknown_alias_is_an_error_with_nova_conf(self):
        # the flavor: no pool has alias h100 here
        self.pool(VGPU_SPEC, ['gpu-vgpu-1'])
        self.fc.add_flavor('gpu.h100x9', extra_specs={
            'pci_passthrough:alias': 'h100:9'})
        found = self.named('flavor-pci-alias')
        self.assertEqual([(checks.WARNING, 'flavor gpu.h100x9')],
                         [(f.severity, f.object) for f in found])
        self.assertIn('which no GPU pool describes', found[0].symptom)
        self.assertIn('h100', found[0].symptom)
        self.assertEqual(checks.NOVA_CONF_FIX, found[0].fix)
        # and it is not sized either, nor silently: flavor-pci-alias says
        self.assertEqual([], self.named('flavor-too-many-devices'))
        found = self.named('flavor-pci-alias', conf('[DEFAULT]\n'))
        self.assertEqual([(checks.ERROR, 'flavor gpu.h100x9')],
                         [(f.severity, f.object) for f in found])

    def test_a_request_that_cannot_be_built_is_said(self):
        self.clean_cloud()
        self.fc.add_flavor('pt.bad', extra_specs={
            'pci_passthrough:alias': 'h100:99'})
        found = self.named('flavor-too-many-devices')
        self.assertEqual([(checks.WARNING, 'flavor pt.bad')],
                         [(f.severity, f.object) for f in found])
        self.assertIn('not judged: its request cannot be built',
                      found[0].symptom)


class TruncatingKeystone:
    """Keystone's projects as the SDK's identity proxy gives them: the
    list cut at ``list_limit`` (Keystone does not page), ``find_project``
    by ID, then by name; 403 for the FORBIDDEN values."""

    def __init__(self, projects, list_limit, forbidden=()):
        self._projects = [type('Project', (), {'id': i, 'name': n})()
                          for i, n in sorted(projects.items())]
        self._limit = list_limit
        self._forbidden = set(forbidden)
        self.calls = []

    def projects(self):
        self.calls.append('list')
        return iter(self._projects[:self._limit])

    def find_project(self, value, ignore_missing=True):
        self.calls.append('find %s' % value)
        if value in self._forbidden:
            raise sdk_exc.ForbiddenException(message='forbidden',
                                             http_status=403)
        for project in self._projects:
            if project.id == value:
                return project
        for project in self._projects:
            if project.name == value:
                return project
        return None


class TestBlazar(ChecksTestCase):
    """Issue 40, rule 6: GPU flavors a Blazar flavor:instance reservation
    cannot hold (blazar 18.0.0's flavor plugin), only where the cloud
    runs Blazar."""

    def run_blazar(self, blazar=True):
        cloud = self.cloud()
        cloud.blazar = blazar
        return [f for f in checks.run(cloud, None)
                if f.check == 'blazar-flavor-reservation']

    def test_flavors_blazar_cannot_reserve(self):
        self.clean_cloud()
        # no Blazar in the catalog: nothing to say
        self.assertEqual([], self.run_blazar(blazar=False))
        found = {f.object: f for f in self.run_blazar()}
        self.assertEqual({'flavor pt.1', 'flavor ws.1'}, set(found))
        self.assertEqual({checks.WARNING},
                         {f.severity for f in found.values()})
        # the passthrough flavor: its alias is dropped
        self.assertIn('pci_passthrough:alias', found['flavor pt.1'].symptom)
        self.assertEqual(('solver',), found['flavor pt.1'].pools)
        self.assertTrue(found['flavor pt.1'].fix.startswith(
            'openstack reservation lease create --reservation '
            'resource_type=physical:host'))
        self.assertIn('"gpu-pt-1"', found['flavor pt.1'].fix)
        # the vGPU flavor: VGPU lives on the pGPU child providers
        self.assertIn('root provider, which has no VGPU',
                      found['flavor ws.1'].symptom)
        # the roots' summaries not read: where the class lives is not
        # judged (the dropped keys still are)
        cloud = self.cloud()
        cloud.blazar = True
        for root in cloud.host_roots().values():
            for uuid in root:
                cloud.placement.summaries.pop(uuid, None)
        self.assertEqual(['flavor pt.1'], [
            f.object for f in checks.run(cloud, None)
            if f.check == 'blazar-flavor-reservation'])
        # two vGPUs in numbered groups: dropped
        self.flavor('ws.2', VGPU_SPEC, gpus=2)
        found = {f.object: f for f in self.run_blazar()}
        self.assertIn('numbered request groups', found['flavor ws.2'].symptom)
        # Blazar's own reservation flavor is its copy: left out
        self.fc.add_flavor('reservation:r1', extra_specs=dict(
            self.fc.flavors[0]['extra_specs'],
            **{'aggregate_instance_extra_specs:reservation': 'r1'}))
        self.assertNotIn('flavor reservation:r1',
                         {f.object for f in self.run_blazar()})

    def test_fix_a_flavor_blazar_counts(self):
        # the fix's second way: a GPU flavor whose class Blazar counts (an
        # unsuffixed class on the hosts' root providers: bare metal)
        self.fresh()
        self.fc.baremetal_node('ironic-1', 'node-1')
        spec = pools.build_spec('metal', 'baremetal',
                                resource_class='CUSTOM_BAREMETAL_GPU_H100')
        self.pool(spec, ['ironic-1'])
        self.flavor('bm.1', spec)
        self.assertEqual([], self.run_blazar())
        # the same pool's flavor asking in a numbered group: found
        self.fc.add_flavor('bm.grouped', extra_specs={
            'resources1:CUSTOM_BAREMETAL_GPU_H100': '1',
            'aggregate_instance_extra_specs:gpu_pool': 'metal'})
        self.assertEqual(['flavor bm.grouped'],
                         [f.object for f in self.run_blazar()])
