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


"""gpuclient.rules.scheduler.hardware against Nova's own
``nova/virt/hardware.py`` (test_hardware: the same values on plain data).

* page sizes: every ``hw:mem_page_size`` value (flavor, and image within
  a flavor's large or any): ``_get_numa_pagesize_constraint``'s answer or
  refusal is gpuclient's (``hardware.numa_constraints``), and every
  judged fit on the hosts of numa_hosts is Nova's
  ``numa_fit_instance_to_host``;
* PCI NUMA affinity policies (flavor, image property, and the [pci]
  alias's ``numa_policy`` where neither sets one):
  ``get_pci_numa_policy_constraint`` and the policy of Nova's own PCI
  request (``get_pci_requests_from_flavor``) are gpuclient's, a refusal
  is one, and every judged fit is Nova's;
* memory encryption (``hardware.mem_encryption``) against
  ``get_mem_encryption_constraint``, its models against Nova's flavor
  validator and image field;
* maxphysaddr (``hardware.maxphysaddr_mode`` and its trait) against
  ``get_maxphysaddr_mode`` and ``_translate_maxphysaddr_request``.
"""

import unittest
from unittest import mock
import uuid

from osc_lib import exceptions

from gpuclient.rules import address_space
from gpuclient.rules import specs as specs_mod
from gpuclient.rules.scheduler import hardware
from gpuclient.rules.scheduler import host_manager as hm
from gpuclient.rules.scheduler.filters import numa_topology_filter as ntf
from gpuclient.tests.unit import nova_harness
from gpuclient.tests.unit.scheduler import numa_hosts

if nova_harness.HAVE_NOVA:
    with nova_harness.quiet():
        from nova import exception as nova_exception
        from nova.api.validation.extra_specs import hw as nova_hw_specs
        from nova.objects import fields as nova_fields
        from nova.scheduler import utils as sched_utils
        from nova.virt import hardware as nova_hardware

# every hw:mem_page_size value worth a look: Nova's words, sizes in KiB,
# with units (IEC, bits), and what Nova refuses (a unit without b/B, any
# other case, blanks, signs, words it does not know)
PAGE_SIZES = (
    'small', 'large', 'any', '4', '2048', '1048576', '2MB', '1GB', '2MiB',
    '1GiB', '4KB', '2048KB', '2.5MB', '2Mb', '2Mbit', '4Kb', '0', '3',
    '2M', '1G', '4k', '4K', '2Mi', '2048K', 'LARGE', 'Small', 'Any',
    'huge', '-1', '2 MB', ' 2048', '2mb', '2MBit', '1T', '')
# an image's within a flavor's large or any (Nova lets the image choose
# only then), and alone
IMAGE_PAGE_SIZES = (None, 'small', 'large', 'any', '4', '2048', '2MB',
                    '1GB', '2M', 'LARGE', 'huge', '')
# what Nova's fields.PCINUMAAffinityPolicy refuses
BAD_POLICIES = ('strict', 'Required', 'SOCKET', '')
ALIAS_POLICIES = (None,) + numa_hosts.POLICIES
WORDS = {-1: 'small', -2: 'large', -3: 'any'}


def _nova_image(properties):
    """Nova's ImageMeta, or the exception Nova raises reading it."""
    try:
        return nova_harness.image(properties)
    except Exception as exc:  # noqa: BLE001 - an enum field refuses it
        return exc


def _ours(the_flavor, image, aliases=None):
    """gpuclient's guest (None: no topology) or 'refused'."""
    guest = ntf.constraints(the_flavor, image, aliases)
    if guest and 'refused' in guest:
        return 'refused'
    return guest


class _Judging(unittest.TestCase):

    def assert_judged_like_nova(self, the_flavor, image, image_meta,
                                policy, guest, label):
        """Every judged answer on every host (with host facts) is
        Nova's; a refused request passes no host."""
        judged = 0
        if guest is None:
            # no topology: the filter passes every host, as Nova's
            return judged
        for host in numa_hosts.HOSTS:
            hypervisor, facts = numa_hosts.api_view(host)
            status, detail = ntf.judge_numa(
                hypervisor, guest, facts,
                ntf.pci_devices(the_flavor['extra_specs']))
            if status == hm.UNKNOWN:
                continue
            judged += 1
            self.assertEqual(
                numa_hosts.nova_fits(
                    host, the_flavor,
                    numa_hosts.nova_pci_requests(the_flavor, policy),
                    image_meta),
                status == hm.PASS, (label, host, detail))
        return judged


@nova_harness.requires_nova
class TestPageSizesAgainstNova(_Judging):

    def nova_page_size(self, the_flavor, image_meta):
        """Nova's answer (a word, KiB) or 'refused'."""
        if isinstance(image_meta, Exception):
            return 'refused'
        try:
            found = nova_hardware._get_numa_pagesize_constraint(
                nova_harness.flavor(the_flavor), image_meta)
        except (nova_exception.MemoryPageSizeInvalid,
                nova_exception.MemoryPageSizeForbidden):
            return 'refused'
        return WORDS.get(found, found)

    def cases(self):
        for value in PAGE_SIZES:
            for image in IMAGE_PAGE_SIZES:
                yield numa_hosts.flavor(mem_page_size=value), (
                    {} if image is None else {'hw_mem_page_size': image})
        # no hw:mem_page_size at all: an image's alone is refused
        for image in IMAGE_PAGE_SIZES:
            yield numa_hosts.flavor(), (
                {} if image is None else {'hw_mem_page_size': image})

    def test_every_value(self):
        judged = 0
        for the_flavor, image in self.cases():
            label = (the_flavor['extra_specs'].get('hw:mem_page_size'),
                     image)
            with self.subTest(case=label):
                image_meta = _nova_image(dict(image))
                theirs = self.nova_page_size(the_flavor, image_meta)
                ours = _ours(the_flavor, image)
                if theirs == 'refused':
                    self.assertEqual('refused', ours, label)
                    continue
                self.assertNotEqual('refused', ours, label)
                if not theirs:
                    # None or 0: Nova asks no topology for it
                    self.assertIsNone(ours, label)
                    continue
                # the guest cell's page size: an integer field
                self.assertEqual(theirs if theirs in WORDS.values()
                                 else int(theirs), ours['pagesize'], label)
                judged += self.assert_judged_like_nova(
                    the_flavor, image, image_meta, 'legacy',
                    ours, label)
        # the words and sizes Nova takes were judged on the hosts
        self.assertGreater(judged, len(PAGE_SIZES))

    def test_the_values_the_issue_names(self):
        """small, large, any, 4, 2048, 1048576, 2MB, 1GB and an invalid
        one: Nova's answer, spelled out."""
        expected = {'small': 'small', 'large': 'large', 'any': 'any',
                    '4': 4, '2048': 2048, '1048576': 1048576, '2MB': 2048,
                    '1GB': 1048576, 'huge': 'refused', '2M': 'refused'}
        for value, wanted in expected.items():
            the_flavor = numa_hosts.flavor(mem_page_size=value)
            nova_answer = self.nova_page_size(the_flavor, _nova_image({}))
            self.assertEqual(wanted, nova_answer, value)
            ours = _ours(the_flavor, {})
            self.assertEqual(wanted, ours if ours == 'refused'
                             else ours['pagesize'], value)


@nova_harness.requires_nova
class TestPciPoliciesAgainstNova(_Judging):

    def setUp(self):
        nova_harness.conf(self)

    def nova_policy(self, the_flavor, image_meta):
        """get_pci_numa_policy_constraint's answer, or 'refused'."""
        if isinstance(image_meta, Exception):
            return 'refused'
        try:
            return nova_hardware.get_pci_numa_policy_constraint(
                nova_harness.flavor(the_flavor), image_meta)
        except (nova_exception.ImagePCINUMAPolicyForbidden,
                nova_exception.InvalidPCINUMAAffinity):
            return 'refused'

    def nova_request_policy(self, the_flavor, alias_policy, policy):
        """The numa_policy of Nova's own PCI request for the flavor."""
        return numa_hosts.nova_alias_requests(
            self, the_flavor, alias_policy, policy)[0].numa_policy

    def test_flavor_and_image_policies(self):
        """Every value in the flavor, the image or both, with and without
        a guest topology: Nova's policy or refusal."""
        values = (None,) + numa_hosts.POLICIES + BAD_POLICIES
        for numa_nodes in (None, 1):
            for flavor_value in values:
                for image_value in values:
                    specs = {}
                    if numa_nodes:
                        specs['numa_nodes'] = numa_nodes
                    if flavor_value is not None:
                        specs['pci_numa_affinity_policy'] = flavor_value
                    the_flavor = numa_hosts.flavor(gpus=1, **specs)
                    image = ({} if image_value is None else
                             {'hw_pci_numa_affinity_policy': image_value})
                    label = (numa_nodes, flavor_value, image_value)
                    with self.subTest(case=label):
                        theirs = self.nova_policy(the_flavor,
                                                  _nova_image(dict(image)))
                        if theirs == 'refused':
                            self.assertRaises(
                                exceptions.CommandError,
                                hardware.pci_numa_policy,
                                the_flavor['extra_specs'], image)
                            self.assertEqual('refused',
                                             _ours(the_flavor, image))
                            continue
                        self.assertEqual(theirs, hardware.pci_numa_policy(
                            the_flavor['extra_specs'], image), label)
                        guest = _ours(the_flavor, image)
                        if numa_nodes:
                            self.assertEqual(theirs or None,
                                             guest['pci_policy'], label)
                        else:
                            self.assertIsNone(guest, label)

    def test_alias_policies_and_fits(self):
        """The alias's numa_policy (every value, socket too) where the
        flavor and image set none, theirs where they do: the policy of
        Nova's own request is gpuclient's, and every judged fit on every
        host is Nova's."""
        sources = [('none', {}, {})]
        for policy in numa_hosts.POLICIES:
            sources += [
                ('flavor ' + policy,
                 {'pci_numa_affinity_policy': policy}, {}),
                ('image ' + policy, {},
                 {'hw_pci_numa_affinity_policy': policy})]
        judged = 0
        for alias_policy in ALIAS_POLICIES:
            aliases = numa_hosts.aliases(alias_policy)
            for name, specs, image in sources:
                for gpus, nodes in ((1, 1), (3, 1), (3, 2), (4, 2)):
                    the_flavor = numa_hosts.flavor(gpus=gpus, numa_nodes=nodes,
                                             **specs)
                    label = (alias_policy, name, gpus, nodes)
                    with self.subTest(case=label):
                        image_meta = _nova_image(dict(image))
                        policy = self.nova_policy(the_flavor, image_meta)
                        theirs = self.nova_request_policy(
                            the_flavor, alias_policy, policy)
                        guest = _ours(the_flavor, image, aliases)
                        self.assertEqual(theirs, guest['pci_policy'],
                                         label)
                        judged += self.assert_judged_like_nova(
                            the_flavor, image, image_meta, theirs, guest,
                            label)
        # socket is not judged (the API shows no sockets); the rest is
        self.assertGreater(judged, len(ALIAS_POLICIES) * len(sources))


def _nova_boot(flavor_specs, props):
    """Nova's Flavor with FLAVOR_SPECS and ImageMeta with PROPS."""
    return (nova_harness.flavor({'extra_specs': flavor_specs}, name='f'),
            nova_harness.image(props, name='i', id=str(uuid.uuid4())))


def _mem_encryption_cases():
    """(name, flavor extra specs, image properties) for memory
    encryption (issue 40, rule 2)."""
    uefi = {'hw_firmware_type': 'uefi', 'hw_machine_type': 'q35'}
    tdx_image = dict(uefi, hw_firmware_stateless='true',
                     hw_video_model='none')
    cases = [
        ('none', {}, {}),
        ('flavor false', {'hw:mem_encryption': 'false'}, uefi),
        ('default model', {'hw:mem_encryption': 'true'}, uefi),
        ('image asks', {}, dict(uefi, hw_mem_encryption='true')),
        ('flavor true, image false', {'hw:mem_encryption': 'true'},
         dict(uefi, hw_mem_encryption='false')),
        ('no uefi', {'hw:mem_encryption': 'true'},
         {'hw_machine_type': 'q35'}),
        ('pc machine', {'hw:mem_encryption': 'true'},
         dict(uefi, hw_machine_type='pc')),
        ('versioned q35', {'hw:mem_encryption': 'true'},
         dict(uefi, hw_machine_type='pc-q35-8.2')),
        ('no machine type', {'hw:mem_encryption': 'true'},
         {'hw_firmware_type': 'uefi'}),
        ('models disagree', {'hw:mem_encryption': 'true',
                             'hw:mem_encryption_model': 'amd-sev'},
         dict(uefi, hw_mem_encryption_model='amd-sev-es')),
        ('image model', {'hw:mem_encryption': 'true'},
         dict(uefi, hw_mem_encryption_model='amd-sev-es')),
    ]
    for model in nova_fields.MemEncryptionModel.ALL:
        specs_ = {'hw:mem_encryption': 'true',
                  'hw:mem_encryption_model': model}
        cases += [('%s, UEFI q35' % model, specs_, uefi),
                  ('%s, stateless, no video' % model, specs_, tdx_image),
                  ('%s, stateless, video' % model, specs_,
                   dict(tdx_image, hw_video_model='virtio'))]
    return cases


@nova_harness.requires_nova
class TestMemEncryptionAgainstNova(unittest.TestCase):
    """hardware.mem_encryption against Nova's get_mem_encryption_constraint
    (the API's check, no machine type), and the models against Nova's
    flavor validator and image field."""

    def nova(self, flavor_specs, props):
        flavor, image_meta = _nova_boot(flavor_specs, props)
        try:
            with mock.patch.object(nova_hardware, 'LOG'):
                config = nova_hardware.get_mem_encryption_constraint(
                    flavor, image_meta)
        except nova_exception.NovaException:
            return 'refused'
        return config and (config.model, config.required_trait)

    def ours(self, flavor_specs, props):
        try:
            model = hardware.mem_encryption(flavor_specs, props)
        except Exception:
            return 'refused'
        return model and (model, hardware.mem_encryption_trait(model))

    def test_same_answer_as_nova(self):
        refused = 0
        for name, flavor_specs, props in _mem_encryption_cases():
            with self.subTest(case=name):
                theirs = self.nova(flavor_specs, props)
                refused += theirs == 'refused'
                self.assertEqual(theirs, self.ours(flavor_specs, props))
        self.assertGreater(refused, 5)

    def test_models_are_novas(self):
        enum = [v for v in nova_hw_specs.register()
                if v.name == 'hw:mem_encryption_model'][0].value['enum']
        self.assertEqual(sorted(nova_fields.MemEncryptionModel.ALL),
                         sorted(hardware.MEM_ENCRYPTION_MODELS))
        self.assertEqual(sorted(enum), sorted(hardware.MEM_ENCRYPTION_MODELS))
        self.assertEqual(('enum', tuple(enum)),
                         specs_mod.KNOWN_SPECS['hw:mem_encryption_model'])


@nova_harness.requires_nova
class TestMaxphysaddrAgainstNova(unittest.TestCase):
    """hardware.maxphysaddr_mode and the trait it requires against Nova's
    get_maxphysaddr_mode and _translate_maxphysaddr_request (issue 40 rule
    3), and what Nova 34's flavor validator makes of the keys."""

    CASES = (
        ({}, {}),
        ({'hw:maxphysaddr_mode': 'passthrough'}, {}),
        ({'hw:maxphysaddr_mode': 'emulate', 'hw:maxphysaddr_bits': '42'},
         {}),
        ({}, {'hw_maxphysaddr_mode': 'emulate',
              'hw_maxphysaddr_bits': 42}),
        ({'hw:maxphysaddr_mode': 'emulate'},
         {'hw_maxphysaddr_mode': 'emulate'}),
        ({'hw:maxphysaddr_mode': 'host'}, {}),
        ({'hw:maxphysaddr_mode': 'passthrough'},
         {'hw_maxphysaddr_mode': 'emulate'}),
    )

    def nova(self, flavor_specs, props):
        flavor, image_meta = _nova_boot(flavor_specs, props)
        try:
            mode = nova_hardware.get_maxphysaddr_mode(flavor, image_meta)
        except nova_exception.NovaException:
            return 'refused'
        res_req = sched_utils.ResourceRequest()
        res_req._translate_maxphysaddr_request(flavor, image_meta)
        return mode, sorted(res_req.all_required_traits)

    def ours(self, flavor_specs, props):
        try:
            mode = hardware.maxphysaddr_mode(flavor_specs, props)
        except Exception:
            return 'refused'
        return mode, [address_space.TRAITS[mode]] if mode else []

    def test_same_answer_as_nova(self):
        refused = 0
        for flavor_specs, props in self.CASES:
            with self.subTest(specs=flavor_specs, props=props):
                theirs = self.nova(flavor_specs, props)
                refused += theirs == 'refused'
                self.assertEqual(theirs, self.ours(flavor_specs, props))
        self.assertEqual(2, refused)

    def test_modes_are_novas(self):
        self.assertEqual(sorted(nova_fields.MaxPhyAddrMode.ALL),
                         sorted(address_space.MODES))

    def test_novas_validator_does_not_know_the_keys(self):
        # Nova 34 registers no validator for them: at compute API 2.86 and
        # later it refuses them (address_space's docstring); gpuclient
        # writes at 2.61. When Nova registers them, compare the values.
        names = [v.name for v in nova_hw_specs.register()]
        self.assertNotIn(address_space.MODE_SPEC, names)
        self.assertNotIn(address_space.BITS_SPEC, names)
