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

"""gpuclient.rules.nova_conf.render's files, loaded with Nova's option
definitions.

Every file ``gpu config show`` renders (both layouts, every mode) is read
by oslo.config with the options Nova registers (``nova.conf``, then
``register_dynamic_opts`` for the ``[mdev_*]`` groups, as nova-compute
does); every key must be a registered option and every value valid for it,
the ``[pci] alias`` JSON as ``nova.pci.request.get_alias_from_config``
validates it, ``[pci] device_spec`` as ``nova.pci.whitelist.Whitelist``
does, and every enabled filter must be one of Nova's. Each file is read
alone, then, per service, the files that service reads are read together
(several ``--config-file``, as Kolla-Ansible merges them), so the aliases
are validated with the ``pci_in_placement`` every service sees. It skips
where Nova cannot be imported; CI runs it with the test cloud's interpreter
(tools/run-functional)::

    /var/tmp/gpuclient-testcloud/venv/bin/python -m unittest \\
        gpuclient.tests.unit.test_nova_config_nova

Standard library unittest only (that venv has no test tools); the cases
are shared with test_nova_config.
"""

import os
import tempfile
import unittest

from gpuclient.rules import pools as pools_mod
from gpuclient.rules.nova_conf import parse
from gpuclient.rules.nova_conf import render as nova_config
from gpuclient.rules.profiles import vf as profile_vf
from gpuclient.rules.scheduler import conf as nova_conf
from gpuclient.tests.unit import nova_harness

if nova_harness.HAVE_NOVA:
    with nova_harness.quiet():
        from nova import exception as nova_exception
        import nova.conf
        from nova.pci import request as pci_request
        from nova.pci import whitelist
        from nova.scheduler import filters as nova_filters
        from oslo_config import cfg

try:
    from placement.conf import placement as placement_conf
    from placement.conf import workarounds as placement_workarounds
    HAVE_PLACEMENT = True
except Exception:  # ImportError and anything placement's import may raise
    HAVE_PLACEMENT = False


def read_conf(test, text, project, *registers):
    """TEXT as oslo.config reads it for PROJECT, with the options
    REGISTERS register (a temporary file, removed at TEST's cleanup)."""
    with tempfile.NamedTemporaryFile('w', suffix='.conf',
                                     delete=False) as conf:
        conf.write(text)
    test.addCleanup(os.unlink, conf.name)
    conf_opts = cfg.ConfigOpts()
    for register in registers:
        register(conf_opts)
    conf_opts(['--config-file', conf.name], project=project,
              default_config_files=[], default_config_dirs=[])
    return conf_opts


def import_fakevirt():
    """The test cloud's fake virt drivers (tools/cloud), or None."""
    if not nova_harness.HAVE_NOVA:
        return None
    nova_harness.import_tools()
    try:
        with nova_harness.quiet():
            from cloud import fakevirt
    except Exception:
        return None
    return fakevirt


def pool(name, mode, hosts, tagged=None, **kwargs):
    """A pool as pools.scan reads it back from its aggregate."""
    spec = pools_mod.build_spec(name, mode, **kwargs)
    metadata = pools_mod.metadata_for(spec)
    metadata.update(tagged or {})
    return pools_mod.pool_from_aggregate({
        'name': name, 'metadata': metadata, 'hosts': hosts,
        'id': 1, 'uuid': 'agg-' + name})


def device(root, address, resources, traits=(), libvirt=True, uuid=None):
    """A device provider as nova names it (libvirt pGPU or PCI in
    Placement)."""
    if libvirt:
        name = '%s_pci_%s' % (root, address.replace(':', '_').replace(
            '.', '_'))
    else:
        name = '%s_%s' % (root, address.upper())
    return {'uuid': uuid or 'rp-' + name, 'name': name, 'root_name': root,
            'address': nova_config.pci_address(name, root),
            'resources': dict(resources), 'traits': set(traits)}


def cases():
    """{case: (pools, trees, mig_types)}, one per mode and mix."""
    pt = pool('solver', 'passthrough', ['gpu-pt-1'], alias='h100',
              pci_id='10de:2331')
    vg35 = pool('ws35', 'vgpu', ['gpu-vgpu-1'], vgpu_type='nvidia-35',
                isolate=True)
    vg36 = pool('ws36', 'vgpu', ['gpu-vgpu-1'], vgpu_type='nvidia-36',
                projects=['p1'])
    vgcls = pool('wscls', 'vgpu', ['gpu-vgpu-2'], vgpu_type='nvidia-37',
                 resource_class='CUSTOM_VGPU_NVIDIA_37')
    mig = pool('slices', 'mig', ['gpu-mig-1'], mig_profile='3g.40gb')
    # one alias name, two PCI ids: of one class, or of two
    sh_a = pool('sh-a', 'passthrough', ['gpu-pt-1'], alias='gpu',
                pci_id='10de:2331', resource_class='CUSTOM_GPU')
    sh_b = pool('sh-b', 'passthrough', ['gpu-pt-2'], alias='gpu',
                pci_id='10de:20b5', resource_class='CUSTOM_GPU')
    two_a = pool('two-a', 'passthrough', ['gpu-pt-1'], alias='gpu',
                 pci_id='10de:2331')
    two_b = pool('two-b', 'passthrough', ['gpu-pt-2'], alias='gpu',
                 pci_id='10de:20b5')
    bm = pool('training', 'baremetal', ['bm-compute-1'],
              resource_class='baremetal.gpu-h100')
    vf = pool('desktops', 'vgpu-vf', ['gpu-vf-1'], vgpu_type='L40S-24Q',
              alias='l40s-24q', pci_id='10de:26b9', live_migratable=True)
    pt_root = 'gpu-pt-1.gpu.test'
    pt_tree = [device(pt_root, a, {'CUSTOM_PCI_10DE_2331': 1},
                      libvirt=False)
               for a in ('0000:41:00.0', '0000:c1:00.0')]
    vgpu_tree = [
        device('gpu-vgpu-1', '0000:84:00.0', {'VGPU': 4},
               ['CUSTOM_NVIDIA_35']),
        device('gpu-vgpu-1', '0000:85:00.0', {'VGPU': 4},
               ['CUSTOM_NVIDIA_36']),
        device('gpu-vgpu-1', '0000:86:00.0', {'VGPU': 4},
               ['CUSTOM_NVIDIA_35']),
    ]
    cls_tree = [device('gpu-vgpu-2', '0000:3b:00.0',
                       {'CUSTOM_VGPU_NVIDIA_37': 8})]
    mig_tree = [device('gpu-mig-1', '0000:41:00.%d' % fn, {'VGPU': 1},
                       ['CUSTOM_MIG_3G_40GB']) for fn in (4, 5, 6)]
    # PCI in Placement: one provider per PF holding its typed VFs
    vf_card_tree = [device('gpu-vf-1', '0000:a1:00.0',
                      {'CUSTOM_VGPU_L40S_24Q': 2}, libvirt=False)]
    # time-sliced A40-12C (4 per GPU) on the SR-IOV VFs of two A40s
    desk = pool('desk', 'vgpu', ['gpu-vf-3'], vgpu_type='nvidia-558',
                properties={'vgpu_profile': 'A40-12C'})
    vf_tree = [device('gpu-vf-3', a, {'VGPU': 1}, ['CUSTOM_NVIDIA_558'])
               for a in ('0000:81:00.4', '0000:81:00.5', '0000:81:00.6',
                         '0000:81:00.7', '0000:82:00.4', '0000:82:00.5')]
    return {
        'passthrough': ({'solver': pt}, {'gpu-pt-1': pt_tree}, None),
        'vgpu': ({'ws35': vg35, 'ws36': vg36},
                 {'gpu-vgpu-1': vgpu_tree}, None),
        'vgpu-class': ({'wscls': vgcls}, {'gpu-vgpu-2': cls_tree}, None),
        'mig': ({'slices': mig}, {'gpu-mig-1': mig_tree},
                {'3g.40gb': 'nvidia-700'}),
        'mig-unknown-type': ({'slices': mig}, {'gpu-mig-1': mig_tree},
                             None),
        'baremetal': ({'training': bm}, {'bm-compute-1': []}, None),
        'vgpu-vf': ({'desktops': vf}, {'gpu-vf-1': vf_card_tree}, None),
        'vgpu-vf-no-provider': ({'desktops': vf}, {'gpu-vf-1': []}, None),
        'vgpu-vfs': ({'desk': desk}, {'gpu-vf-3': vf_tree}, None),
        'shared-alias': ({'sh-a': sh_a, 'sh-b': sh_b},
                         {'gpu-pt-1': [], 'gpu-pt-2': []}, None),
        'shared-alias-classes': ({'two-a': two_a, 'two-b': two_b},
                                 {'gpu-pt-1': [], 'gpu-pt-2': []}, None),
        'all': ({'solver': pt, 'ws35': vg35, 'ws36': vg36, 'slices': mig,
                 'training': bm},
                {'gpu-pt-1': pt_tree, 'gpu-vgpu-1': vgpu_tree,
                 'gpu-mig-1': mig_tree, 'bm-compute-1': []},
                {'3g.40gb': 'nvidia-700'}),
    }


def rendered_files():
    """[(case, layout, path, text)] for every case and layout."""
    found = []
    for name, (pools, trees, mig_types) in sorted(cases().items()):
        config = nova_config.build(pools, trees, mig_types)
        for layout in ('ini', 'kolla'):
            for path, text in nova_config.files(config, layout):
                found.append((name, layout, path, text))
    return found


@nova_harness.requires_nova
class TestNovaReadsRenderedFiles(unittest.TestCase):
    """Nova's option definitions accept every rendered file."""

    def load(self, *texts):
        """A ConfigOpts with Nova's options that has read TEXTS, one
        --config-file each, in order (later files win, as in Nova)."""
        args = []
        for text in texts:
            with tempfile.NamedTemporaryFile('w', suffix='.conf',
                                             delete=False) as conf:
                conf.write(text)
            self.addCleanup(os.unlink, conf.name)
            args += ['--config-file', conf.name]
        # Nova's own ConfigOpts, every option registered as its services
        # register them (nova.conf registers on import)
        conf_opts = nova.conf.CONF
        conf_opts(args, project='nova',
                  default_config_files=[], default_config_dirs=[])
        self.addCleanup(conf_opts.clear)
        nova.conf.devices.register_dynamic_opts(conf_opts)
        return conf_opts

    def check_file(self, label, text, *more):
        """Check TEXT (and MORE files read after it, merged)."""
        conf_opts = self.load(text, *more)
        ini = parse.merge_ini(parse.parse_ini(t, label)
                                for t in (text,) + more)
        for section, keys in ini.items():
            for key in keys:
                try:
                    group = (conf_opts if section == 'DEFAULT'
                             else conf_opts[section])
                    # reading an option converts and validates its value
                    value = group[key]
                except (cfg.NoSuchOptError, cfg.NoSuchGroupError) as exc:
                    self.fail('%s: [%s] %s is not a Nova option: %s'
                              % (label, section, key, exc))
                except (cfg.ConfigFileValueError, ValueError) as exc:
                    self.fail('%s: [%s] %s has a value Nova refuses: %s'
                              % (label, section, key, exc))
                self.assertIsNotNone(value)
        # the JSON options, validated by Nova's own code
        enabled = set(conf_opts.devices.enabled_mdev_types)
        for section in ini:
            if section.startswith('mdev_'):
                # groups of other files stay registered: Nova reads only
                # the types enabled here
                self.assertIn(section[len('mdev_'):], enabled,
                              '%s: [%s] is not an enabled mdev type'
                              % (label, section))
        try:
            pci_request.get_alias_from_config.cache_clear()
            aliases = pci_request.get_alias_from_config()
        except nova_exception.PciInvalidAlias as exc:
            self.fail('%s: [pci] alias refused by Nova: %s' % (label, exc))
        finally:
            pci_request.get_alias_from_config.cache_clear()
        try:
            specs = whitelist.Whitelist(conf_opts.pci.device_spec).specs
        except nova_exception.PciConfigInvalidSpec as exc:
            self.fail('%s: [pci] device_spec refused by Nova: %s'
                      % (label, exc))
        known = {cls.__name__ for cls in nova_filters.all_filters()}
        for name in conf_opts.filter_scheduler.enabled_filters:
            self.assertIn(name, known, '%s: no Nova filter %s'
                          % (label, name))
        return conf_opts, aliases, specs

    def test_every_rendered_file(self):
        checked = 0
        for case, layout, path, text in rendered_files():
            with self.subTest(case=case, layout=layout, path=path):
                self.check_file('%s/%s/%s' % (case, layout, path), text)
                checked += 1
        self.assertGreater(checked, 10)

    def test_what_each_service_reads_merged(self):
        """Per service, the files it reads, loaded together."""
        checked = 0
        for case, (pools, trees, mig_types) in sorted(cases().items()):
            config = nova_config.build(pools, trees, mig_types)
            kolla = dict(nova_config.files(config, 'kolla'))
            hosts = [t for t in config.ordered() if isinstance(t, tuple)]
            for target in list(nova_config.CONTROLLERS) + hosts:
                texts = [kolla[p] for p in nova_config.kolla_reads(target)
                         if p in kolla]
                if not texts:
                    continue
                with self.subTest(case=case, target=target):
                    conf_opts, _aliases, _specs = self.check_file(
                        '%s/%s' % (case, target), *texts)
                    if 'pci' in config.targets.get(nova_config.ALL, {}):
                        self.assertTrue(
                            conf_opts.filter_scheduler.pci_in_placement)
                    checked += 1
        self.assertGreater(checked, 20)

    def test_shared_alias_is_one_nova_accepts(self):
        for case, want in (
                ('shared-alias', [{'resource_class': 'CUSTOM_GPU',
                                   'dev_type': 'type-PCI'}]),
                ('shared-alias-classes', [{'vendor_id': '10de',
                                           'product_id': '2331',
                                           'dev_type': 'type-PCI'}])):
            pools, trees, mig_types = cases()[case]
            config = nova_config.build(pools, trees, mig_types)
            text = nova_config.render_target(config, nova_config.ALL)
            _conf, aliases, _specs = self.check_file(case, text)
            self.assertEqual(want, aliases['gpu'][1], case)
            # what gpuclient avoids: both pools' aliases, refused by Nova
            both = text + ''.join(
                '[pci]\nalias = %s\n' % nova_config.alias_json(p)
                for p in pools.values())
            self.assertRaises(self.failureException, self.check_file,
                              case + ' both', both)

    def test_nova_reads_what_gpuclient_meant(self):
        pools, trees, mig_types = cases()['all']
        config = nova_config.build(pools, trees, mig_types)
        text = '\n'.join(nova_config.render_target(
            config, t) for t in (nova_config.ALL,
                                 nova_config.host_target('gpu-vgpu-1')))
        conf_opts, aliases, _specs = self.check_file('vgpu host', text)
        self.assertEqual(['nvidia-35', 'nvidia-36'],
                         sorted(conf_opts.devices.enabled_mdev_types))
        self.assertEqual(['0000:84:00.0', '0000:86:00.0'],
                         conf_opts['mdev_nvidia-35'].device_addresses)
        self.assertEqual(['0000:85:00.0'],
                         conf_opts['mdev_nvidia-36'].device_addresses)
        self.assertEqual('preferred', aliases['h100'][0])
        self.assertEqual([{'vendor_id': '10de', 'product_id': '2331',
                           'dev_type': 'type-PCI'}], aliases['h100'][1])
        conf_opts, _aliases, specs = self.check_file(
            'pt host', nova_config.render_target(
                config, nova_config.host_target('gpu-pt-1')))
        self.assertTrue(conf_opts.pci.report_in_placement)
        self.assertEqual(1, len(specs))
        self.assertTrue(specs[0].match({
            'vendor_id': '10de', 'product_id': '2331',
            'address': '0000:41:00.0', 'parent_addr': None,
            'dev_type': 'type-PCI'}))

    def test_vf_lines_as_nova_reads_them(self):
        pools, trees, mig_types = cases()['vgpu-vf']
        config = nova_config.build(pools, trees, mig_types)
        text = '\n'.join(nova_config.render_target(
            config, t) for t in (nova_config.ALL,
                                 nova_config.host_target('gpu-vf-1')))
        conf_opts, aliases, specs = self.check_file('vf host', text)
        self.assertFalse(conf_opts.libvirt.live_migration_permit_post_copy)
        self.assertEqual([{'dev_type': 'type-VF',
                           'resource_class': 'CUSTOM_VGPU_L40S_24Q',
                           'live_migratable': 'true'}],
                         aliases['l40s-24q'][1])

        def dev(address, parent):
            return {'vendor_id': '10de', 'product_id': '26b9',
                    'address': address, 'parent_addr': parent}
        # the typed VFs match, unmanaged, live-migratable, in the class;
        # neither the PF (same vendor:product) nor an untyped VF does
        pf = '0000:a1:00.0'
        for address, wanted in (('0000:a1:00.4', True),
                                ('0000:a1:00.5', True),
                                ('0000:a1:00.6', False), (pf, False)):
            matching = [s for s in specs if s.match(
                dev(address, None if address == pf else pf))]
            self.assertEqual(wanted, bool(matching), address)
            for spec in matching:
                self.assertEqual(
                    {'managed': 'false', 'live_migratable': 'true',
                     'resource_class': 'CUSTOM_VGPU_L40S_24Q'},
                    spec.get_tags())

    def test_vf_plan_lines_as_nova_reads_them(self):
        """gpu profile plan's nova.conf for vgpu-vf cards: each VF in the
        class of the type the plan gives it, every VF of one PF in one
        class (Nova refuses VFs of one PF in different classes:
        PlacementPciMixedResourceClassException)."""
        big = pool('big', 'vgpu-vf', ['gpu-vf-1'], vgpu_type='L40S-24Q',
                   alias='l40s-24q', pci_id='10de:26b9')
        small = pool('small', 'vgpu-vf', ['gpu-vf-1'], vgpu_type='L40S-12Q',
                     alias='l40s-12q', pci_id='10de:26b9')
        types = profile_vf.pool_types([big, small])
        pfs = ('0000:a1:00.0', '0000:c1:00.0')
        devices = [device('gpu-vf-1', a, {'CUSTOM_VGPU_L40S_24Q': 2},
                          libvirt=False) for a in pfs]
        rows, _summary = profile_vf.plan(
            profile_vf.host_cards('gpu-vf-1', devices, types),
            {'L40S-24Q': 1, 'L40S-12Q': 4})
        target = nova_config.host_target('gpu-vf-1')
        conf_opts, _aliases, specs = self.check_file(
            'vf plan', nova_config.render_target(
                profile_vf.host_config('gpu-vf-1', rows, types), target))
        self.assertTrue(conf_opts.pci.report_in_placement)
        classes = {}
        for pf in pfs:
            for fn in range(4, 9):
                address = nova_config.vf_addresses(pf, fn - 3)[-1]
                matching = [s for s in specs if s.match({
                    'vendor_id': '10de', 'product_id': '26b9',
                    'address': address, 'parent_addr': pf})]
                self.assertLessEqual(len(matching), 1, address)
                if matching:
                    self.assertEqual('false',
                                     matching[0].get_tags()['managed'])
                    classes.setdefault(pf, []).append(
                        matching[0].get_tags()['resource_class'])
        self.assertEqual({pfs[0]: ['CUSTOM_VGPU_L40S_24Q'] * 2,
                          pfs[1]: ['CUSTOM_VGPU_L40S_12Q'] * 4}, classes)

    def test_nova_reads_max_instances(self):
        pools, trees, mig_types = cases()['vgpu-vfs']
        config = nova_config.build(pools, trees, mig_types)
        conf_opts, _aliases, _specs = self.check_file(
            'vf host', nova_config.render_target(
                config, nova_config.host_target('gpu-vf-3')))
        self.assertEqual(8, conf_opts['mdev_nvidia-558'].max_instances)

    def test_the_check_catches_errors(self):
        """The checks fail on what Nova refuses (so they can fail)."""
        bad = {
            'unknown option': '[pci]\nno_such_option = 1\n',
            'bad boolean': '[pci]\nreport_in_placement = maybe\n',
            'bad alias': '[pci]\nalias = {"name": "x", "numa_policy": '
                         '"sometimes", "vendor_id": "10de", '
                         '"product_id": "2331"}\n',
            'bad device_spec': '[pci]\ndevice_spec = {"vendor_id": '
                               '"10dex"}\n',
            'bad mdev_class': '[devices]\nenabled_mdev_types = a\n'
                              '[mdev_a]\nmdev_class = vgpu\n',
            'unknown filter': '[filter_scheduler]\nenabled_filters = '
                              'NoSuchFilter\n',
        }
        for name, text in bad.items():
            with self.subTest(name=name):
                self.assertRaises(self.failureException, self.check_file,
                                  name, text)


@nova_harness.requires_nova
class TestTestCloudVgpuDriverReadsTheConfig(unittest.TestCase):
    """The test cloud's fake vGPU driver reports the pGPUs the rendered
    [devices]/[mdev_*] keys list, as the libvirt driver would use them."""

    def conf(self, text):
        return read_conf(self, text, 'nova', nova.conf.devices.register_opts)

    def test_devices_from_the_rendered_config(self):
        fakevirt = import_fakevirt()
        self.assertIsNotNone(fakevirt, 'tools/cloud/fakevirt.py')
        driver = fakevirt.VgpuDriver
        self.assertEqual(driver.DEVICES, driver.devices(self.conf('')))
        pools, trees, mig_types = cases()['vgpu']
        config = nova_config.build(pools, trees, mig_types)
        text = nova_config.render_target(
            config, nova_config.host_target('gpu-vgpu-1'))
        self.assertEqual(
            ('0000:84:00.0', '0000:86:00.0', '0000:85:00.0'),
            driver.devices(self.conf(text)))
        # MIG keeps its own VFs when nova.conf lists none
        self.assertEqual(fakevirt.MigDriver.DEVICES,
                         fakevirt.MigDriver.devices(self.conf('')))


@nova_harness.requires_nova
@unittest.skipUnless(HAVE_PLACEMENT,
                     'placement is not importable here: run with the test '
                     'cloud venv (/var/tmp/gpuclient-testcloud/venv)')
class TestWideTreesAgainstPlacement(unittest.TestCase):
    """issue 40 rule 5: the placement.conf gpuclient renders and reads
    (nova_config.WIDE_TREE_SETTINGS, conf._placement) as Placement reads
    it: the options, their groups, defaults and choices."""

    def placement(self, text):
        return read_conf(self, text, 'placement',
                         placement_conf.register_opts,
                         placement_workarounds.register_opts)

    def theirs(self, conf_opts):
        return {
            'optimize_for_wide_provider_trees':
                conf_opts.workarounds.optimize_for_wide_provider_trees,
            'max_allocation_candidates':
                conf_opts.placement.max_allocation_candidates,
            'allocation_candidates_generation_strategy':
                conf_opts.placement.allocation_candidates_generation_strategy,
        }

    def test_defaults_and_rendered_settings_read_the_same(self):
        for text in ('', '[placement]\nmax_allocation_candidates = 500\n'):
            ours = nova_conf.load_settings(text)['placement']
            self.assertEqual(self.theirs(self.placement(text)), ours)
        config = nova_config.Config()
        nova_config.wide_trees_settings(config, [])
        text = nova_config.render_target(config, nova_config.PLACEMENT)
        theirs = self.theirs(self.placement(text))
        self.assertEqual(theirs, nova_conf.load_settings(text)['placement'])
        self.assertEqual({'optimize_for_wide_provider_trees': True,
                          'max_allocation_candidates': 1000,
                          'allocation_candidates_generation_strategy':
                              'breadth-first'}, theirs)
        self.assertEqual([], nova_config.wide_trees_unset(theirs))


if __name__ == '__main__':
    unittest.main()
