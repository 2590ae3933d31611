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

"""gpuclient.rules.devices (listing, one_time_use, release) with plain
data: one-time-use devices, the device rows, their resolution and the
release rules."""

from osc_lib import exceptions
import testtools

from gpuclient.rules import hosts
from gpuclient.rules import model
from gpuclient.rules import one_time_use
from gpuclient.rules.devices import listing
from gpuclient.rules.devices import release

OTU = ['COMPUTE_MANAGED_PCI_DEVICE', 'HW_PCI_ONE_TIME_USE', 'OWNER_NOVA']
PCI = ['COMPUTE_MANAGED_PCI_DEVICE', 'OWNER_NOVA']
RC = 'CUSTOM_PCI_10DE_2335'


class TestOneTimeUse(testtools.TestCase):
    # (capacity, used, traits) -> awaiting release, state
    CASES = (
        # Nova's life of a one-time-use device (reserved = total once held)
        ((1, 0, OTU), False, listing.FREE),
        ((0, 1, OTU), False, listing.IN_USE),
        ((0, 0, OTU), True, listing.AWAITING_RELEASE),
        # configured one-time-use while a server held it (reserved not yet)
        ((1, 1, OTU), False, listing.IN_USE),
        # reserved by an operator, not one-time-use: not Nova's
        ((0, 0, PCI), False, listing.UNAVAILABLE),
        # traits not read: never guessed
        ((0, 0, None), False, listing.UNAVAILABLE),
        ((1, 0, PCI), False, listing.FREE),
    )

    def test_cases(self):
        for (capacity, used, traits), awaiting, state in self.CASES:
            item = {'capacity': capacity, 'used': used}
            self.assertEqual(awaiting,
                             one_time_use.awaiting_release(item, traits),
                             (capacity, used, traits))
            self.assertEqual(state, listing.state(item, traits),
                             (capacity, used, traits))

    def test_figures_count_it_apart(self):
        # total 1, neither used nor free: the host list's figures
        self.assertEqual((1, 0, 0), hosts.device_figures(
            {'capacity': 0, 'used': 0}, traits=OTU))
        # in use: total 1, used 1 although capacity is 0
        self.assertEqual((1, 1, 0), hosts.device_figures(
            {'capacity': 0, 'used': 1}, traits=OTU))
        # someone else's reservation stays out of the total, as before
        self.assertEqual((0, 0, 0), hosts.device_figures(
            {'capacity': 0, 'used': 0}, traits=PCI))


class TestPciAddress(testtools.TestCase):
    def test_names(self):
        for name, address in (
                ('gpu-pt-1.gpu.test_0000:C1:00.0', '0000:c1:00.0'),
                ('gpu-vgpu-1_pci_0000_84_00_0', '0000:84:00.0'),
                ('gpu-mig-1_pci_0000_41_01_2', '0000:41:01.2'),
                ('6a254128-bb57-5397-afc7-34326eee784e', None),
                ('gpu-pt-1', None)):
            self.assertEqual(address, listing.pci_address(name), name)


def snapshot(summaries):
    """A model.Placement of host h1 (root r1) with device providers
    {name: (capacity, used, traits)}."""
    providers = [{'uuid': 'r1', 'name': 'h1.test', 'parent_provider_uuid':
                  None, 'root_provider_uuid': 'r1'}]
    snap_summaries = {'r1': {'resources': {'VCPU': {'capacity': 8,
                                                    'used': 0}},
                             'traits': ['COMPUTE_NODE']}}
    for name, (capacity, used, traits) in summaries.items():
        uuid = 'u-' + name
        providers.append({'uuid': uuid, 'name': 'h1.test_' + name,
                          'parent_provider_uuid': 'r1',
                          'root_provider_uuid': 'r1'})
        snap_summaries[uuid] = {'resources': {RC: {'capacity': capacity,
                                                   'used': used}},
                                'traits': traits}
    snap = model.Placement.listed(providers)
    snap.add_details(snap_summaries)
    return snap


def cloud(summaries):
    hypervisors = [{'id': 'r1', 'hypervisor_hostname': 'h1.test',
                    'service': {'host': 'h1'}}]
    return model.Cloud([], hypervisors, [], snapshot(summaries),
                       gpu_classes={RC})


class TestRows(testtools.TestCase):
    def setUp(self):
        super().setUp()
        self.cloud = cloud({'0000:41:00.0': (0, 0, OTU),
                            '0000:42:00.0': (0, 1, OTU),
                            '0000:43:00.0': (1, 0, OTU),
                            '0000:44:00.0': (0, 0, PCI)})
        self.servers = [{'id': 's1', 'name': 'vm1', 'tenant_id': 'p1'}]
        self.rows = listing.rows(
            self.cloud, {'u-0000:42:00.0': {'s1': {RC: 1}}}, self.servers,
            {'h1': ['solver']})

    def test_rows(self):
        self.assertEqual(
            [('0000:41:00.0', listing.AWAITING_RELEASE, [], [], 1, True),
             ('0000:42:00.0', listing.IN_USE, ['vm1'], ['p1'], 1, True),
             ('0000:43:00.0', listing.FREE, [], [], 1, True),
             ('0000:44:00.0', listing.UNAVAILABLE, [], [], 0, False)],
            [(r['pci_address'], r['state'], r['servers'], r['projects'],
              r['total'], r['one_time_use']) for r in self.rows])
        self.assertEqual({'h1'}, {r['host'] for r in self.rows})
        self.assertEqual([['solver']] * 4, [r['pools'] for r in self.rows])

    def test_select(self):
        self.assertEqual(['0000:41:00.0'], [
            r['pci_address'] for r in listing.select(self.rows,
                                                     awaiting_only=True)])
        self.assertEqual(['0000:42:00.0'], [
            r['pci_address'] for r in listing.select(self.rows,
                                                     server_ids=['s1'])])
        self.assertEqual([], listing.select(self.rows, host='h2'))
        self.assertEqual(4, len(listing.select(self.rows, pool='solver')))

    def test_capacity_figures(self):
        # what capacity list sums: total 3 (the awaiting and the in-use
        # device count, the operator's reservation does not), 1 used,
        # 1 free, 1 awaiting release
        found = self.cloud.gpu_providers('r1', RC)
        self.assertEqual((3, 1, 1, 1), tuple(
            sum(f[i] for f in found) for i in (2, 3, 4, 5)))

    def test_checks_count_it_among_the_hosts_devices(self):
        from gpuclient.rules.checks import utils as check_utils

        # flavor-too-many-devices: what a host has, free or not
        self.assertEqual([1, 1, 1, 0], [
            total for _uuid, total, _unit in sorted(
                check_utils.tree_classes(self.cloud, 'r1')[RC])])

    def test_host_rows(self):
        rows, _unmapped = hosts.host_rows(self.cloud.placement,
                                          self.cloud.hypervisors, {RC})
        self.assertEqual([(4, 3, 1, 1, 1)], [
            (r['devices'], r['total'], r['used'], r['free'],
             r['awaiting_release']) for r in rows])

    def test_resolve(self):
        by = {r['pci_address']: r for r in self.rows}
        first = by['0000:41:00.0']
        self.assertEqual([first], listing.resolve(self.rows, [
            'u-0000:41:00.0', 'h1.test_0000:41:00.0', 'h1:0000:41:00.0',
            'H1:0000:41:00.0'.lower()]))
        self.assertEqual([by['0000:43:00.0']],
                         listing.resolve(self.rows, ['h1:0000:43:00.0']))

    def test_unknown_names_refuse_them_all(self):
        exc = self.assertRaises(exceptions.CommandError, listing.resolve,
                                self.rows, ['h1:0000:41:00.0', 'nope',
                                            'h2:0000:41:00.0'])
        self.assertIn('No GPU device nope', str(exc))
        self.assertIn('No GPU device h2:0000:41:00.0', str(exc))

    def test_release_rules(self):
        by = {r['pci_address']: r for r in self.rows}
        self.assertIsNone(release.release_problem(by['0000:41:00.0']))
        self.assertEqual(release.RELEASE,
                         release.release_action(by['0000:41:00.0']))
        # free: nothing to do, a re-run converges
        self.assertIsNone(release.release_problem(by['0000:43:00.0']))
        self.assertEqual(release.ALREADY_RELEASED,
                         release.release_action(by['0000:43:00.0']))
        self.assertIn('is in use (vm1)',
                      release.release_problem(by['0000:42:00.0']))
        self.assertIn('is not a one-time-use device',
                      release.release_problem(by['0000:44:00.0']))


class TestOneTimeUseConf(testtools.TestCase):
    """gpu check's pci-one-time-use over a nova-compute's [pci]."""

    SPEC = ('device_spec = {"vendor_id": "10de", "product_id": "2335", '
            '"one_time_use": true}\n')
    VF_ALIAS = ('alias = {"name": "h200-vf", "vendor_id": "10de", '
                '"product_id": "2335", "device_type": "type-VF"}\n')

    def problems(self, text):
        from gpuclient.rules import checks
        from gpuclient.rules.scheduler import conf as nova_conf

        settings = nova_conf.load_settings(text)
        found = checks.CHECKS['pci-one-time-use'](None, settings)
        self.assertEqual({'error'} if found else set(),
                         {f.severity for f in found})
        return [(f.symptom, f.fix) for f in found]

    def test_good(self):
        self.assertEqual([], self.problems(
            '[pci]\n' + self.SPEC + 'report_in_placement = true\n'))
        # not one-time use: nothing to say; nor without nova.conf
        self.assertEqual([], self.problems(
            '[pci]\ndevice_spec = {"vendor_id": "10de"}\n'))
        from gpuclient.rules import checks
        self.assertEqual([], checks.CHECKS['pci-one-time-use'](None, None))

    def test_needs_report_in_placement(self):
        for text in ('[pci]\n' + self.SPEC,
                     '[pci]\n' + self.SPEC + 'report_in_placement = no\n'):
            found = self.problems(text)
            self.assertEqual(1, len(found), text)
            self.assertIn('needs [pci] report_in_placement = true',
                          found[0][0])
            self.assertEqual('[pci] report_in_placement = true', found[0][1])

    def test_type_pci_and_pf_only(self):
        found = self.problems('[pci]\n' + self.SPEC + self.VF_ALIAS
                              + 'report_in_placement = true\n')
        self.assertEqual(1, len(found))
        self.assertIn('type-PCI and type-PF devices only', found[0][0])
        self.assertIn('h200-vf', found[0][0])
        # a type-PF or type-PCI alias, or a VF of other devices: allowed
        for alias in (self.VF_ALIAS.replace('type-VF', 'type-PF'),
                      self.VF_ALIAS.replace('type-VF', 'type-PCI'),
                      self.VF_ALIAS.replace('2335', '2330')):
            self.assertEqual([], self.problems(
                '[pci]\n' + self.SPEC + alias
                + 'report_in_placement = true\n'), alias)
        # a spec matching any product matches the VF alias too
        self.assertEqual(1, len(self.problems(
            '[pci]\ndevice_spec = [{"vendor_id": "10de", "one_time_use": '
            '"yes"}]\n' + self.VF_ALIAS + 'report_in_placement = true\n')))
