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

"""Differential test: every hw:mem_page_size and every PCI NUMA affinity
policy value against Nova's own functions.

* page sizes (flavor, and image within a flavor's large or any):
  ``nova.virt.hardware._get_numa_pagesize_constraint``'s answer or
  refusal is gpuclient's (``hardware.numa_constraints``), and every
  judged fit on the hosts of test_numa_topology_filter is Nova's
  ``numa_fit_instance_to_host``;
* PCI NUMA affinity policies (flavor, image property, and the [pci]
  alias's ``numa_policy`` where neither sets one):
  ``get_pci_numa_policy_constraint`` and the policy of Nova's own PCI
  request (``get_pci_requests_from_flavor``) are gpuclient's, a refusal
  is one, and every judged fit is Nova's.

Runs with the test cloud's interpreter (tools/run-functional's
run_differential, where a skip fails the run); skips where Nova is not
importable (the py3 tox env). Standard library unittest only.
"""

import unittest
import warnings

from osc_lib import exceptions

from gpuclient.rules.scheduler import conf as nova_conf
from gpuclient.rules.scheduler import hardware
from gpuclient.rules.scheduler import host_manager as hm
from gpuclient.rules.scheduler.filters import numa_topology_filter as ntf
from gpuclient.tests.unit.scheduler.filters import (
    test_numa_topology_filter as base,
)

try:
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        from nova import exception as nova_exception
        from nova import objects
        import nova.conf
        from nova.pci import request as pci_request
        from nova.virt import hardware as nova_hardware
    objects.register_all()
    HAVE_NOVA = True
except Exception:  # ImportError and anything nova's import may raise
    HAVE_NOVA = False

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
# Nova's fields.PCINUMAAffinityPolicy.ALL, and what it refuses
POLICIES = ('required', 'legacy', 'preferred', 'socket')
BAD_POLICIES = ('strict', 'Required', 'SOCKET', '')
ALIAS_POLICIES = (None,) + POLICIES
WORDS = {-1: 'small', -2: 'large', -3: 'any'}


def _nova_image(properties):
    """Nova's ImageMeta, or the exception Nova raises reading it."""
    try:
        return objects.ImageMeta.from_dict({'properties': properties})
    except Exception as exc:  # noqa: BLE001 - an enum field refuses it
        return exc


def _ours(the_flavor, image, aliases=None):
    """gpuclient's guest (None: no topology) or 'refused'."""
    guest = ntf.constraints(the_flavor, image, aliases)
    if guest and 'refused' in guest:
        return 'refused'
    return guest


def _nova_flavor(the_flavor):
    return objects.Flavor(vcpus=the_flavor['vcpus'],
                          memory_mb=the_flavor['ram'],
                          extra_specs=dict(the_flavor['extra_specs']))


def _nova_fits(host, the_flavor, image_meta, policy):
    """Nova's numa_fit_instance_to_host of the flavor with its PCI request
    (POLICY: the one Nova's request carries)."""
    topology, stats = base.nova_host(host)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        instance = nova_hardware.numa_get_constraints(
            _nova_flavor(the_flavor), image_meta)
    if instance is None:
        return True
    if topology is None:
        return False
    count = ntf.pci_devices(the_flavor['extra_specs'])
    requests = None
    if count:
        requests = [objects.InstancePCIRequest(
            count=count, spec=[{'vendor_id': base.VENDOR,
                                'product_id': base.PRODUCT}],
            alias_name=base.ALIAS, numa_policy=policy,
            request_id='00000000-0000-0000-0000-000000000001')]
    limits = objects.NUMATopologyLimits(cpu_allocation_ratio=1.0,
                                        ram_allocation_ratio=1.0)
    return nova_hardware.numa_fit_instance_to_host(
        topology, instance, provider_mapping=None, limits=limits,
        pci_requests=requests, pci_stats=stats) is not None


class _Judging(unittest.TestCase):

    def assert_judged_like_nova(self, the_flavor, image, image_meta,
                                policy, guest, label):
        """Every judged answer on every host (with host facts) is
        Nova's; a refused request passes no host."""
        judged = 0
        if guest is None:
            # no topology: the filter passes every host, as Nova's
            return judged
        for host in base.HOSTS:
            hypervisor, facts = base.api_view(host)
            status, detail = ntf.judge_numa(
                hypervisor, guest, facts,
                ntf.pci_devices(the_flavor['extra_specs']))
            if status == hm.UNKNOWN:
                continue
            judged += 1
            self.assertEqual(
                _nova_fits(host, the_flavor, image_meta, policy),
                status == hm.PASS, (label, host, detail))
        return judged


@unittest.skipUnless(HAVE_NOVA, 'nova is not importable here (run with the '
                     'test cloud\'s interpreter, see the module docstring)')
class TestPageSizesAgainstNova(_Judging):

    def nova_page_size(self, the_flavor, image_meta):
        """Nova's answer (a word, KiB) or 'refused'."""
        if isinstance(image_meta, Exception):
            return 'refused'
        try:
            found = nova_hardware._get_numa_pagesize_constraint(
                _nova_flavor(the_flavor), image_meta)
        except (nova_exception.MemoryPageSizeInvalid,
                nova_exception.MemoryPageSizeForbidden):
            return 'refused'
        return WORDS.get(found, found)

    def cases(self):
        for value in PAGE_SIZES:
            for image in IMAGE_PAGE_SIZES:
                yield base.flavor(mem_page_size=value), (
                    {} if image is None else {'hw_mem_page_size': image})
        # no hw:mem_page_size at all: an image's alone is refused
        for image in IMAGE_PAGE_SIZES:
            yield base.flavor(), (
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
            the_flavor = base.flavor(mem_page_size=value)
            nova_answer = self.nova_page_size(the_flavor, _nova_image({}))
            self.assertEqual(wanted, nova_answer, value)
            ours = _ours(the_flavor, {})
            self.assertEqual(wanted, ours if ours == 'refused'
                             else ours['pagesize'], value)


@unittest.skipUnless(HAVE_NOVA, 'nova is not importable here (run with the '
                     'test cloud\'s interpreter, see the module docstring)')
class TestPciPoliciesAgainstNova(_Judging):

    def setUp(self):
        self.conf = nova.conf.CONF
        if not getattr(self.conf, '_args', None):
            self.conf([], project='nova')
        self.addCleanup(self.conf.clear_override, 'alias', 'pci')
        # Nova reads its aliases once per process (functools.cache)
        self.addCleanup(pci_request.get_alias_from_config.cache_clear)

    def nova_policy(self, the_flavor, image_meta):
        """get_pci_numa_policy_constraint's answer, or 'refused'."""
        if isinstance(image_meta, Exception):
            return 'refused'
        try:
            return nova_hardware.get_pci_numa_policy_constraint(
                _nova_flavor(the_flavor), image_meta)
        except (nova_exception.ImagePCINUMAPolicyForbidden,
                nova_exception.InvalidPCINUMAAffinity):
            return 'refused'

    def nova_request_policy(self, the_flavor, alias_policy, policy):
        """The numa_policy of Nova's own PCI request for the flavor."""
        self.conf.set_override('alias', [base.alias_conf(alias_policy)],
                               'pci')
        pci_request.get_alias_from_config.cache_clear()
        requests = pci_request.get_pci_requests_from_flavor(
            _nova_flavor(the_flavor), affinity_policy=policy).requests
        return requests[0].numa_policy

    def test_flavor_and_image_policies(self):
        """Every value in the flavor, the image or both, with and without
        a guest topology: Nova's policy or refusal."""
        values = (None,) + POLICIES + BAD_POLICIES
        for numa_nodes in (None, 1):
            for flavor_value in values:
                for image_value in values:
                    specs = {}
                    if numa_nodes:
                        specs['numa_nodes'] = numa_nodes
                    if flavor_value is not None:
                        specs['pci_numa_affinity_policy'] = flavor_value
                    the_flavor = base.flavor(gpus=1, **specs)
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
        for policy in POLICIES:
            sources += [
                ('flavor ' + policy,
                 {'pci_numa_affinity_policy': policy}, {}),
                ('image ' + policy, {},
                 {'hw_pci_numa_affinity_policy': policy})]
        judged = 0
        for alias_policy in ALIAS_POLICIES:
            aliases = nova_conf.load_settings(
                '[pci]\nalias = %s\n' % base.alias_conf(alias_policy))[
                    'aliases']
            for name, specs, image in sources:
                for gpus, nodes in ((1, 1), (3, 1), (3, 2), (4, 2)):
                    the_flavor = base.flavor(gpus=gpus, numa_nodes=nodes,
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


class TestRequestedValues(unittest.TestCase):
    """Without Nova (the py3 env too): Nova's answers, as the classes
    above check them against Nova's functions, spelled out."""

    def test_page_sizes(self):
        expected = {
            'small': 'small', 'large': 'large', 'any': 'any', '4': 4,
            '2048': 2048, '1048576': 1048576, '2MB': 2048, '1GB': 1048576,
            '2MiB': 2048, '2048KB': 2048, '2.5MB': 2560, '2Mb': 256,
            '4Kb': 0.5, '0': 0, '-2048B': 'large',
            # what Nova refuses at boot
            '2M': None, '1G': None, '4k': None, 'LARGE': None,
            'Any': None, ' 2048': None, '2 MB': None, 'huge': None,
            '-1': None, '2mb': None}
        for value, wanted in expected.items():
            self.assertEqual(wanted, hardware.requested_page_size(value),
                             value)

    def test_a_fraction_asks_a_topology_without_a_page_size(self):
        guest = hardware.numa_constraints(base.flavor(mem_page_size='4Kb'))
        self.assertEqual(0, guest['pagesize'])
        self.assertIsNone(hardware.numa_constraints(
            base.flavor(mem_page_size='0')))

    def test_pci_policies(self):
        specs = 'hw:pci_numa_affinity_policy'
        image = 'hw_pci_numa_affinity_policy'
        for policy in POLICIES:
            self.assertEqual(policy, hardware.pci_numa_policy(
                {specs: policy}, {}))
            self.assertEqual(policy, hardware.pci_numa_policy(
                {}, {image: policy}))
            self.assertEqual(policy, hardware.pci_numa_policy(
                {specs: policy}, {image: policy}))
        self.assertIsNone(hardware.pci_numa_policy({specs: ''}, {}))
        for flavor_specs, props in (({specs: 'strict'}, {}),
                                    ({specs: 'Required'}, {}),
                                    ({}, {image: ''}),
                                    ({}, {image: 'SOCKET'}),
                                    ({specs: 'required'},
                                     {image: 'preferred'})):
            self.assertRaises(exceptions.CommandError,
                              hardware.pci_numa_policy, flavor_specs, props)
            # refused whatever the topology: no host passes
            self.assertIn('refused', ntf.constraints(
                {'vcpus': 2, 'ram': 1024, 'extra_specs': flavor_specs},
                props))
