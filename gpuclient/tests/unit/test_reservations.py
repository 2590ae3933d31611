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

"""gpuclient.rules.reservations with plain data, and against Blazar's own
code where it is importable (issue 40, rule 6).

Blazar is not a dependency of gpuclient: the classes against Blazar skip
where blazar 18.0.0 (and blazar-nova 10.0.0, beside Nova) cannot be
imported (the py3 tox env). Run them with the test cloud's venv, which
has both (``tools/cloud/blazar.py``)::

    /var/tmp/gpuclient-testcloud/venv/bin/python -m unittest \\
        gpuclient.tests.unit.test_reservations
"""

import unittest
from unittest import mock
import warnings

from gpuclient.rules import reservations
from gpuclient.rules.scheduler import conf as nova_conf

try:
    from oslo_config import cfg

    with warnings.catch_warnings(), mock.patch.object(
            cfg, 'CONF', cfg.ConfigOpts()):
        # Blazar registers options Nova registers too ("host"): its
        # modules get their own ConfigOpts, so both import in one process
        # (tools/run-functional runs this beside the Nova differentials)
        warnings.simplefilter('ignore')
        from blazar.plugins.flavor import flavor_plugin
    HAVE_BLAZAR = True
except Exception:  # ImportError and anything blazar's import may raise
    HAVE_BLAZAR = False

try:
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        from blazarnova.scheduler.filters import blazar_filter
    HAVE_BLAZAR_NOVA = True
except Exception:  # needs nova too
    HAVE_BLAZAR_NOVA = False


def flavor(vcpus=8, ram=65536, disk=40, ephemeral=0, **extra):
    return {'id': 'f1', 'name': 'f1', 'vcpus': vcpus, 'ram': ram,
            'disk': disk, 'OS-FLV-EXT-DATA:ephemeral': ephemeral,
            'extra_specs': extra}


# (flavor, what Blazar 18.0.0's estimate counts, what it drops)
CASES = [
    # passthrough: the alias is not counted
    (flavor(**{'pci_passthrough:alias': 'h100:2'}),
     {'VCPU': 8, 'MEMORY_MB': 65536, 'DISK_GB': 40},
     {reservations.ALIAS_DROPPED: ['pci_passthrough:alias']}),
    # one vGPU, unsuffixed: counted
    (flavor(**{'resources:VGPU': '1', 'trait:CUSTOM_NVIDIA_35':
               'required'}),
     {'VCPU': 8, 'MEMORY_MB': 65536, 'DISK_GB': 40, 'VGPU': 1}, {}),
    # two vGPUs in numbered groups (group_policy=isolate): dropped
    (flavor(**{'resources1:VGPU': '1', 'resources2:VGPU': '1',
               'trait1:CUSTOM_NVIDIA_35': 'required',
               'group_policy': 'isolate'}),
     {'VCPU': 8, 'MEMORY_MB': 65536, 'DISK_GB': 40},
     {reservations.GROUPS_DROPPED: ['resources1:VGPU', 'resources2:VGPU',
                                    'trait1:CUSTOM_NVIDIA_35']}),
    # named groups (Nova's resources_<name>:) too
    (flavor(**{'resources_gpu:CUSTOM_PCI_10DE_2331': '1'}),
     {'VCPU': 8, 'MEMORY_MB': 65536, 'DISK_GB': 40},
     {reservations.GROUPS_DROPPED: ['resources_gpu:CUSTOM_PCI_10DE_2331']}),
    # dedicated CPUs become PCPU; ephemeral disk counts
    (flavor(ephemeral=10, **{'hw:cpu_policy': 'dedicated',
                             'resources:CUSTOM_BAREMETAL_GPU': '1'}),
     {'VCPU': 0, 'PCPU': 8, 'MEMORY_MB': 65536, 'DISK_GB': 50,
      'CUSTOM_BAREMETAL_GPU': 1}, {}),
]


class TestEstimate(unittest.TestCase):
    def test_cases(self):
        for item, counted, dropped in CASES:
            self.assertEqual(counted, reservations.estimate(item)[0], item)
            self.assertEqual(dropped, reservations.dropped(
                item['extra_specs']), item)

    def test_traits_unsuffixed_only(self):
        self.assertEqual({'CUSTOM_NVIDIA_35': 'required'},
                         reservations.estimate(CASES[1][0])[1])
        self.assertEqual({}, reservations.estimate(CASES[2][0])[1])

    def test_unreservable(self):
        pt, vgpu, multi, _named, metal = (c[0] for c in CASES)
        self.assertEqual({reservations.ALIAS_DROPPED: [
            'pci_passthrough:alias']}, reservations.unreservable(pt))
        # vGPU lives on the pGPU child providers: Blazar copied the root's
        # inventory only, so the reservation finds no host
        root = {'VCPU', 'MEMORY_MB', 'DISK_GB'}
        self.assertEqual({reservations.CLASS_NOT_ON_ROOT: ['VGPU']},
                         reservations.unreservable(vgpu, root))
        # not judged without the roots' classes
        self.assertEqual({}, reservations.unreservable(vgpu))
        self.assertIn(reservations.GROUPS_DROPPED,
                      reservations.unreservable(multi, root))
        # a bare-metal GPU flavor: its class is on the node's root
        self.assertEqual({}, reservations.unreservable(
            metal, root | {'PCPU', 'CUSTOM_BAREMETAL_GPU'}))
        for reason, what in reservations.unreservable(pt, root).items():
            self.assertIn('pci_passthrough:alias',
                          reservations.reason_text(reason, what))


def aggregate(name, hosts, zone=None, **metadata):
    return {'name': name, 'hosts': hosts, 'availability_zone': zone,
            'metadata': metadata}


# (aggregate, held by Blazar)
AGGREGATES = [
    (aggregate('freepool', ['h1']), True),
    (aggregate('0b7d-res', ['h2'], zone='blazar_0b7d-res',
               **{'blazar:owner': 'p1'}), True),
    (aggregate('old', ['h3'], zone='blazar:old'), True),
    (aggregate('solver', ['h4'], zone='gpu',
               **{'gpuclient:pool': 'solver'}), False),
    (aggregate('freepool-2', ['h5']), False),
]


class TestHeldHosts(unittest.TestCase):
    def test_aggregates(self):
        held = reservations.held_hosts([a for a, _h in AGGREGATES])
        self.assertEqual({'h1', 'h2', 'h3'}, set(held))
        self.assertIn('freepool', held['h1'][0])
        self.assertIn('0b7d-res', held['h2'][0])
        # an instance reservation's aggregate
        held = reservations.held_hosts([aggregate(
            'r1', ['h6'], reservation='r1', filter_tenant_id='p1')])
        self.assertEqual(['h6'], list(held))
        # another freepool name ([nova] aggregate_freepool_name)
        self.assertEqual(['h2', 'h3', 'h5'], sorted(reservations.held_hosts(
            [a for a, _h in AGGREGATES], freepool='freepool-2')))

    def test_blazar_host_list_decides_not_the_name(self):
        # issue 51 defect 14: Blazar's os-hosts names the hosts it holds,
        # whatever its freepool aggregate is named ("reservable" here);
        # an aggregate named freepool holds nothing then
        aggregates = [aggregate('reservable', ['h1']),
                      aggregate('freepool', ['h9']),
                      aggregate('0b7d-res', ['h2'], zone='blazar_0b7d-res',
                                **{'blazar:owner': 'p1'})]
        held = reservations.held_hosts(aggregates, enrolled=['h1', 'h2'])
        self.assertEqual(['h1', 'h2'], sorted(held))
        self.assertEqual(['enrolled and not leased, as Blazar\'s host list '
                          'says'], held['h1'])
        # leased: the lease aggregate is the reason
        self.assertIn('0b7d-res', held['h2'][0])
        self.assertEqual(1, len(held['h2']))
        # nothing enrolled: nothing held by the name
        self.assertEqual({}, reservations.held_hosts(aggregates[:2],
                                                     enrolled=[]))

    def test_the_name_only_where_blazar_cannot_say(self):
        held = reservations.held_hosts(
            [aggregate('freepool', ['h1']), aggregate('reservable', ['h2'])],
            unread='Blazar: HTTP 403.')
        self.assertEqual(['h1'], list(held))
        self.assertEqual(['in the freepool aggregate freepool (enrolled, '
                          'not leased), found by its name: Blazar\'s host '
                          'list could not be read (Blazar: HTTP 403)'],
                         held['h1'])

    def test_enrolled_hosts_of_blazar_records(self):
        hypervisors = [{'hypervisor_hostname': 'gpu-pt-1.example.org',
                        'service': {'host': 'gpu-pt-1'}},
                       {'hypervisor_hostname': 'node-uuid',
                        'service': {'host': 'bm-compute-1'}}]
        records = [
            # Blazar 18 records service_name, the host it puts in its
            # aggregates
            {'id': '1', 'service_name': 'gpu-vgpu-1',
             'hypervisor_hostname': 'gpu-vgpu-1.example.org'},
            # a record without it: its hypervisor's host
            {'id': '2', 'service_name': None,
             'hypervisor_hostname': 'gpu-pt-1.example.org'},
            # a hypervisor Nova no longer lists: no host
            {'id': '3', 'hypervisor_hostname': 'gone.example.org'}]
        self.assertEqual(['gpu-pt-1', 'gpu-vgpu-1'],
                         reservations.enrolled_hosts(records, hypervisors))

    def test_reservation_inventory(self):
        held = reservations.held_hosts([], {
            'h7': {'VCPU', 'CUSTOM_RESERVATION_0B7D_1234'},
            'h8': {'VCPU', 'VGPU'}})
        self.assertEqual(['h7'], list(held))
        self.assertIn('CUSTOM_RESERVATION_0B7D_1234', held['h7'][0])

    def test_the_reservation_flavor_passes(self):
        self.assertTrue(reservations.passes(
            {reservations.FLAVOR_EXTRA_SPEC: 'r1'}))
        self.assertFalse(reservations.passes({'resources:VGPU': '1'}))

    def test_filter_added_to_default_filters_only(self):
        default = nova_conf.load_settings()
        self.assertNotIn(reservations.FILTER_NAME,
                         default['enabled_filters'])
        self.assertIn(reservations.FILTER_NAME, reservations.with_filter(
            default)['enabled_filters'])
        configured = nova_conf.load_settings(
            '[filter_scheduler]\nenabled_filters = ComputeFilter\n')
        self.assertEqual(['ComputeFilter'], list(reservations.with_filter(
            configured)['enabled_filters']))


@unittest.skipUnless(HAVE_BLAZAR, 'blazar is not importable here: run with '
                     'the test cloud\'s interpreter (module docstring)')
class TestAgainstBlazar(unittest.TestCase):
    """What blazar 18.0.0's flavor plugin counts, and what gpuclient says
    it counts: the same."""

    def test_estimate(self):
        self.assertTrue(flavor_plugin.__file__)
        for item, _counted, _dropped in CASES:
            theirs = flavor_plugin.FlavorPlugin._estimate_flavor_resources(
                None, dict(item))
            self.assertEqual(theirs, reservations.estimate(item), item)

    def test_every_dropped_key_is_left_out_by_blazar(self):
        for item, _counted, dropped in CASES:
            resources, traits = (
                flavor_plugin.FlavorPlugin._estimate_flavor_resources(
                    None, dict(item)))
            for keys in dropped.values():
                for key in keys:
                    name = key.partition(':')[2]
                    self.assertNotIn(name, resources, key)
                    self.assertNotIn(name, traits, key)


@unittest.skipUnless(HAVE_BLAZAR_NOVA, 'blazar-nova (and nova) are not '
                     'importable here: run with the test cloud\'s '
                     'interpreter (module docstring)')
class TestAgainstBlazarFilter(unittest.TestCase):
    """blazar-nova 10.0.0's BlazarFilter and gpuclient: an ordinary
    request is refused on exactly the held hosts of its zone and freepool
    rules, and the reservation flavor passes."""

    def passes(self, agg, extra_specs):
        nova_agg = mock.Mock(availability_zone=agg['availability_zone'],
                             metadata=agg['metadata'])
        nova_agg.name = agg['name']  # Mock(name=) names the mock
        host_state = mock.Mock(aggregates=[nova_agg])
        spec = mock.Mock(project_id='p1')
        spec.get_scheduler_hint.return_value = None
        spec.flavor.extra_specs = extra_specs
        return blazar_filter.BlazarFilter().host_passes(host_state, spec)

    def test_held_hosts(self):
        for agg, held in AGGREGATES:
            ours = bool(reservations.held_hosts([agg]))
            self.assertEqual(held, ours, agg)
            self.assertEqual(not held, self.passes(agg, {}), agg)
            extra = {reservations.FLAVOR_EXTRA_SPEC: 'r1'}
            self.assertTrue(self.passes(agg, extra))
            self.assertTrue(reservations.passes(extra))
