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

"""Differential test: the resource class of every pool mode against
Nova's own code, host side and request side.

For each GPU host of the test cloud (tools/cloud/hosts.py, one case per
host; a host kind without a case fails):

* the class the host offers, as Nova computes it from the host's own
  configuration: ``pci_placement_translator.get_resource_class`` over its
  ``[pci] device_spec`` (passthrough, vgpu-vf), the fake virt driver's
  ``[mdev_<type>] mdev_class`` reading through Nova's option definitions
  (vgpu, mig), ``nova.utils.normalize_rc_name`` over the Ironic node's
  class (baremetal); it is the class the test cloud declares for it;
* the pool gpuclient builds for that host with the options the
  functional tests use has that class;
* the flavor gpuclient derives from the pool makes Nova's own request
  path (``get_pci_requests_from_flavor`` with the test cloud's
  ``[pci] alias`` lines, ``RequestSpec.from_components``,
  ``resources_from_request_spec``) ask Placement for exactly that GPU
  class.

And Nova's naming rules for every value: ``CUSTOM_PCI_<VENDOR>_<PRODUCT>``
of a passthrough pool, an Ironic node's class, a ``device_spec`` or alias
``resource_class``.

Runs with the test cloud's interpreter (tools/run-functional's
run_differential, where a skip fails the run); skips where Nova is not
importable (the py3 tox env).
"""

import json
import os
import re
import tempfile
import unittest
import urllib.parse
import uuid

from osc_lib import exceptions

from gpuclient.rules import pools as pools_mod
from gpuclient.rules import specs
from gpuclient.rules.scheduler import pci as pci_rules
from gpuclient.tests.unit import nova_harness

NOVA_CONF = os.path.join(nova_harness.TOOLS, 'cloud', 'etc', 'nova.conf')

if nova_harness.HAVE_NOVA:
    nova_harness.import_tools()
    with nova_harness.quiet():
        from cloud import fakevirt
        from cloud import hosts
        from cloud import ironic as cloud_ironic
        from nova import utils as nova_utils
        from nova.compute import pci_placement_translator
        import nova.conf.devices
        from oslo_config import cfg

# the standard classes a flavor's own sizes ask for (not the GPU's)
SIZES = {'VCPU', 'MEMORY_MB', 'DISK_GB'}


def _pool_options():
    """{host name: (mode, build_spec options)}: the pool each GPU host of
    the test cloud is put in, as the functional tests create them."""
    return {
        'gpu-pt-1': ('passthrough', {'alias': 'h100',
                                     'pci_id': '10de:2331'}),
        'gpu-pt-2': ('passthrough', {'alias': 'h100',
                                     'pci_id': '10de:2331'}),
        # lane B (the functional tests' second stream)
        'gpu-pt-3': ('passthrough', {'alias': 'h100',
                                     'pci_id': '10de:2331'}),
        'gpu-pt-4': ('passthrough', {'alias': 'h100',
                                     'pci_id': '10de:2331'}),
        'gpu-vgpu-3': ('vgpu', {'vgpu_type': 'nvidia-35'}),
        'gpu-vgpu-4': ('vgpu', {'vgpu_type': 'nvidia-35'}),
        'gpu-otu-1': ('passthrough', {'alias': hosts.OTU_ALIAS,
                                      'pci_id': '10de:2335'}),
        'gpu-vgpu-1': ('vgpu', {'vgpu_type': 'nvidia-35'}),
        'gpu-vgpu-2': ('vgpu', {'vgpu_type': 'nvidia-35'}),
        'fault-vgpu-1': ('vgpu', {'vgpu_type': 'nvidia-35'}),
        'gpu-mig-1': ('mig', {'mig_profile': '3g.40gb'}),
        'fault-mig-1': ('mig', {'mig_profile': '3g.40gb'}),
        'fault-vgpu-2': ('vgpu', {'vgpu_type': 'nvidia-35'}),
        'fault-mig-2': ('mig', {'mig_profile': '3g.40gb'}),
        'recut-mig-1': ('mig', {
            'mig_profile': '1g.10gb',
            'resource_class': hosts.RECUT_CLASSES['1g.10gb']}),
        'gpu-vf-1': ('vgpu-vf', {'alias': hosts.VF_ALIAS,
                                 'pci_id': '%s:%s' % (hosts.VF_VENDOR_ID,
                                                      hosts.VF_PRODUCT_ID),
                                 'vgpu_type': hosts.VF_VGPU_TYPE}),
        'bm-compute-1': ('baremetal', {
            'resource_class': cloud_ironic.RESOURCE_CLASS}),
    }


def _device_specs(conf_text):
    """The ``[pci] device_spec`` JSON values of a nova.conf text."""
    return [json.loads(m) for m in re.findall(
        r'^device_spec\s*=\s*(.+)$', conf_text, re.M)]


def _aliases():
    """The test cloud's ``[pci] alias`` lines (its shared nova.conf)."""
    with open(NOVA_CONF) as conf:
        return re.findall(r'^alias\s*=\s*(.+)$', conf.read(), re.M)


def _mdev_classes(conf_text):
    """The classes the fake vGPU/MIG driver reports for a host whose
    nova.conf adds CONF_TEXT (Nova's own option definitions read it)."""
    conf = cfg.ConfigOpts()
    nova.conf.devices.register_opts(conf)
    with tempfile.NamedTemporaryFile('w', suffix='.conf') as extra:
        extra.write(conf_text)
        extra.flush()
        conf([], project='nova', default_config_files=[extra.name])
        classes = fakevirt.VgpuDriver.device_classes(conf)
    # a pGPU no type names offers VGPU (the driver's default)
    return set(classes.values()) or {'VGPU'}


def host_classes(host):
    """The GPU classes HOST offers, by Nova's code over its config."""
    if host.kind in ('passthrough', 'vgpu-vf'):
        return {pci_placement_translator.get_resource_class(
            spec.get('resource_class'), spec['vendor_id'],
            spec['product_id']) for spec in _device_specs(host.extra_conf)}
    if host.kind in ('vgpu', 'mig'):
        return _mdev_classes(host.extra_conf)
    if host.kind == 'baremetal':
        return {nova_utils.normalize_rc_name(cloud_ironic.RESOURCE_CLASS)}
    raise AssertionError('no rule for host kind %s' % host.kind)


@nova_harness.requires_nova
class TestPoolClassesAgainstNova(unittest.TestCase):
    maxDiff = None

    def setUp(self):
        nova_harness.conf(self)
        nova_harness.pci_aliases(self, _aliases())
        nova_harness.override(self, 'pci_in_placement', True,
                              'filter_scheduler')

    def nova_classes(self, extra_specs):
        """The GPU classes Nova's request path asks Placement for."""
        flavor = nova_harness.flavor(
            {'vcpus': 4, 'ram': 8192, 'disk': 20,
             'OS-FLV-EXT-DATA:ephemeral': 0, 'swap': 0,
             'extra_specs': extra_specs}, name='f', flavorid='f')
        spec = nova_harness.request_spec(
            flavor, nova_harness.image({}, disk_format='raw'))
        asked = set()
        query = urllib.parse.parse_qsl(nova_harness.querystring(spec))
        for key, value in query:
            if not key.startswith('resources'):
                continue
            for item in value.split(','):
                rc, amount = item.split(':')
                if int(amount) and rc not in SIZES:
                    asked.add(rc)
        return asked

    def test_every_gpu_host_kind_has_a_case(self):
        options = _pool_options()
        gpu_hosts = [h.name for h in hosts.HOSTS if h.kind != 'plain']
        self.assertEqual(sorted(gpu_hosts), sorted(options))
        self.assertEqual(set(pools_mod.MODES),
                         {mode for mode, _o in options.values()})

    def test_host_pool_and_request_agree_with_nova(self):
        by_name = {h.name: h for h in hosts.HOSTS}
        for name, (mode, options) in _pool_options().items():
            host = by_name[name]
            with self.subTest(host=name, mode=mode):
                offered = host_classes(host)
                # the class the test cloud declares (its readiness check
                # reads it) is one Nova makes of the host's config (the
                # re-cut host offers two, one per MIG profile)
                self.assertIn(host.gpu_class, offered)
                if name != 'recut-mig-1':
                    self.assertEqual({host.gpu_class}, offered)
                spec = pools_mod.build_spec('p-' + name, mode, **options)
                self.assertEqual(host.gpu_class, spec['resource_class'])
                aggregate = {
                    'name': spec['name'], 'id': 1, 'uuid': str(uuid.uuid4()),
                    'hosts': [name], 'availability_zone': None,
                    'metadata': pools_mod.metadata_for(spec)}
                pool = pools_mod.pool_from_aggregate(aggregate)
                derived = specs.derive(pool, gpus=1)['extra_specs']
                self.assertEqual({host.gpu_class},
                                 self.nova_classes(derived), derived)

    def test_passthrough_class_is_novas_for_every_pci_id(self):
        for pci_id in ('10de:2331', '10DE:2331', '10de:20b5', '10De:26B9',
                       ' 10de:2335 ', '8086:0d58', '1002:740f'):
            with self.subTest(pci_id=pci_id):
                spec = pools_mod.build_spec('pt', 'passthrough',
                                            alias='a', pci_id=pci_id)
                vendor, product = pci_id.strip().lower().split(':')
                # the device's IDs as Nova reads them (sysfs: lower case)
                self.assertEqual(
                    pci_placement_translator.get_resource_class(
                        None, vendor, product),
                    spec['resource_class'])

    def test_ironic_class_is_novas_for_every_name(self):
        """An Ironic node's class, as Nova's ironic driver reports it.
        Left out: names gpuclient takes as Placement's own (CUSTOM_...,
        standard classes: check_gpu_class says to give CUSTOM_<name>)."""
        for given in ('baremetal.gpu-h100', 'BAREMETAL_GPU', 'gpu h100',
                      'gpu--h100', 'Gpu.H100.80gb', 'gpu-h100-', 'gpu_',
                      '.gpu', 'a__b', 'custom-gpu', 'baremetal.gpu-h100.',
                      'bm/gpu:h100'):
            with self.subTest(name=given):
                spec = pools_mod.build_spec('bm', 'baremetal',
                                            resource_class=given)
                self.assertEqual(nova_utils.normalize_rc_name(given),
                                 spec['resource_class'])

    def test_device_spec_and_alias_class_is_novas(self):
        """A ``resource_class`` in a device_spec or alias, normalised as
        Nova's PCI code does (the vgpu-vf pool's --resource-class, the
        alias gpuclient reads from nova.conf)."""
        for given in ('CUSTOM_VGPU_L40S_24Q', 'VGPU_L40S-24Q', 'l40s 24q',
                      'vgpu', 'PGPU', 'gpu-', 'CUSTOM_A100', 'a100_'):
            with self.subTest(resource_class=given):
                nova_rc = pci_placement_translator.get_resource_class(
                    given, None, None)
                alias = pci_rules.alias_from_json(json.dumps(
                    {'name': 'x', 'device_type': 'type-VF',
                     'resource_class': given}))
                self.assertEqual(nova_rc, alias[1]['resource_class'])
                try:
                    spec = pools_mod.build_spec(
                        'vf', 'vgpu-vf', alias='x', pci_id='10de:26b9',
                        vgpu_type='L40S-24Q', resource_class=given)
                except exceptions.CommandError:
                    # not a GPU's class (gpuclient refuses it), so no
                    # pool asks for it
                    continue
                self.assertEqual(nova_rc, spec['resource_class'])

    def test_vgpu_vf_default_class_is_novas(self):
        """Without --resource-class, a vgpu-vf pool's class is what Nova
        makes of ``VGPU_<type>`` in a device_spec (the docs' example)."""
        for vgpu_type in ('L40S-24Q', 'A16-4C', 'H100XM-80C', 'l4-2b',
                          'RTX6000 Ada-8Q'):
            with self.subTest(vgpu_type=vgpu_type):
                spec = pools_mod.build_spec(
                    'vf', 'vgpu-vf', alias='x', pci_id='10de:26b9',
                    vgpu_type=vgpu_type)
                self.assertEqual(
                    pci_placement_translator.get_resource_class(
                        'VGPU_' + vgpu_type, None, None),
                    spec['resource_class'])
