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

"""Pool planners (gpuclient.rules.pool_plan) over plain observed data."""

import copy

from osc_lib import exceptions
import testtools

from gpuclient.rules import model
from gpuclient.rules import plan as plan_mod
from gpuclient.rules import pool_plan
from gpuclient.rules import pools

PCI_RC = 'CUSTOM_PCI_10DE_20B5'
A100_TRAIT = 'CUSTOM_GPU_POOL_A100'
V35_TRAIT = 'CUSTOM_GPU_POOL_V35'
NVIDIA_35 = 'CUSTOM_NVIDIA_35'
NVIDIA_36 = 'CUSTOM_NVIDIA_36'
POOL_SPEC = 'aggregate_instance_extra_specs:gpu_pool'


def a100_metadata(isolate=True, **extra):
    metadata = {'gpu_pool': 'a100', 'gpu_pool_mode': 'passthrough',
                'gpu_resource_class': PCI_RC, 'gpu_alias': 'a100',
                'gpu_pci_id': '10de:20b5'}
    if isolate:
        metadata['trait:' + A100_TRAIT] = 'required'
    metadata.update(extra)
    return metadata


def vgpu_metadata(name='v35', vgpu_type='nvidia-35', isolate=False,
                  **extra):
    metadata = {'gpu_pool': name, 'gpu_pool_mode': 'vgpu',
                'gpu_resource_class': 'VGPU', 'gpu_vgpu_type': vgpu_type}
    if isolate:
        metadata['trait:' + pools.pool_trait(name)] = 'required'
    metadata.update(extra)
    return metadata


def root(host):
    return 'rp-%s' % host


def dev(host, index):
    return 'rp-%s-%d' % (host, index)


class World:
    """Aggregates, provider trees, flavors and images as plain data."""

    def __init__(self):
        self.aggregates = []
        self.providers = []
        self.summaries = {}
        self.roots = {}
        self.existing = set()
        self.flavors = []
        self.images = []
        self.access = {}
        self.servers = None

    def aggregate(self, name, metadata=None, hosts=(), zone=None):
        self.aggregates.append({'name': name, 'metadata': dict(metadata or {}),
                                'hosts': list(hosts),
                                'availability_zone': zone,
                                'id': len(self.aggregates) + 1})

    def host(self, host, root_traits=(), devices=()):
        """``devices``: [(resource class, traits)], children of the root."""
        self.roots[host] = [root(host)]
        self.providers.append({'uuid': root(host), 'name': host,
                               'parent_provider_uuid': None,
                               'root_provider_uuid': root(host)})
        self.summaries[root(host)] = {
            'resources': {'VCPU': {'capacity': 64, 'used': 0}},
            'traits': list(root_traits)}
        for index, (rc, traits) in enumerate(devices):
            uuid = dev(host, index)
            self.providers.append({
                'uuid': uuid, 'name': '%s_gpu_%d' % (host, index),
                'parent_provider_uuid': root(host),
                'root_provider_uuid': root(host)})
            self.summaries[uuid] = {
                'resources': {rc: {'capacity': 4, 'used': 0}},
                'traits': list(traits)}

    def flavor(self, name, extra_specs, public=True, flavor_id=None):
        self.flavors.append({'id': flavor_id or 'id-' + name, 'name': name,
                             'extra_specs': dict(extra_specs),
                             'os-flavor-access:is_public': public})

    def observed(self):
        """The model.Cloud a pool planner takes (of copies): each host's
        roots are its hypervisors."""
        snapshot = model.Placement.listed(copy.deepcopy(self.providers))
        snapshot.summaries = copy.deepcopy(self.summaries)
        hypervisors = [{'id': uuid, 'hypervisor_hostname': host,
                        'service': {'host': host}}
                       for host, roots in self.roots.items()
                       for uuid in roots]
        return model.Cloud(
            copy.deepcopy(self.aggregates), hypervisors, None, snapshot,
            existing_traits=set(self.existing),
            flavors=copy.deepcopy(self.flavors),
            access=copy.deepcopy(self.access),
            images=copy.deepcopy(self.images),
            servers=copy.deepcopy(self.servers))

    def server(self, sid, host, flavor, extra_specs):
        """A server as Nova lists it at compute API 2.47: its host and
        its embedded flavor (the copy moves are scheduled with)."""
        self.servers = self.servers or []
        self.servers.append({
            'id': sid, 'name': 'vm-' + sid, 'OS-EXT-SRV-ATTR:host': host,
            'flavor': {'original_name': flavor, 'vcpus': 2, 'ram': 1024,
                       'disk': 10, 'extra_specs': dict(extra_specs)}})


def ops(result):
    return [step.op for step in result]


def pci_host(world, host, root_traits=()):
    world.host(host, root_traits, [(PCI_RC, [])])


def a100_world(isolate=True, root_has_trait=True, hosts=('cmp1',)):
    world = World()
    world.aggregate('a100', a100_metadata(isolate), hosts)
    for host in hosts:
        pci_host(world, host,
                 [A100_TRAIT] if isolate and root_has_trait else [])
    if isolate:
        world.existing.add(A100_TRAIT)
    return world


class PlanTestCase(testtools.TestCase):

    def refused(self, func, *args, **kwargs):
        """The CommandError a planner raises (never a plain failure)."""
        error = self.assertRaises(exceptions.CommandError, func, *args,
                                  **kwargs)
        return str(error)

    def check_before(self, result, first, then):
        """Every step matching ``first`` comes before every ``then`` one."""
        steps = list(result)
        firsts = [i for i, s in enumerate(steps) if first(s)]
        thens = [i for i, s in enumerate(steps) if then(s)]
        self.assertTrue(firsts, 'no step matches the first condition')
        self.assertTrue(thens, 'no step matches the second condition')
        self.assertLess(max(firsts), min(thens),
                        '\n'.join(result.lines()))


# -- (1) isolation and its dependents ---------------------------------------

class TestIsolationOff(PlanTestCase):

    def world(self):
        world = a100_world()
        world.flavor('g1', {POOL_SPEC: 'a100',
                            'pci_passthrough:alias': 'a100:1',
                            'trait:' + A100_TRAIT: 'required'})
        world.flavor('plain', {'hw:cpu_policy': 'dedicated'})
        return world

    def test_refused_while_a_flavor_requires_the_trait(self):
        message = self.refused(pool_plan.set_isolation,
                                     self.world().observed(), 'a100', False)
        self.assertIn('Flavors g1 and images none require %s' % A100_TRAIT,
                      message)
        self.assertIn('--update-dependents', message)
        self.assertIn('openstack flavor unset --property trait:%s'
                      % A100_TRAIT, message)

    def test_refused_while_an_image_requires_the_trait(self):
        world = a100_world()
        world.images.append({'id': 'img-1', 'name': 'ubuntu-gpu',
                             'trait:' + A100_TRAIT: 'required'})
        message = self.refused(pool_plan.set_isolation,
                                     world.observed(), 'a100', False)
        self.assertIn('Flavors none and images ubuntu-gpu require %s'
                      % A100_TRAIT, message)
        self.assertIn('--update-dependents', message)

    def test_update_dependents_lifts_the_requirement_first(self):
        world = self.world()
        # a second flavor asks for the trait in a numbered group too
        world.flavor('g2', {POOL_SPEC: 'a100',
                            'pci_passthrough:alias': 'a100:2',
                            'trait:' + A100_TRAIT: 'required',
                            'trait1:' + A100_TRAIT: 'required'})
        result = pool_plan.set_isolation(world.observed(), 'a100', False,
                                         update_dependents=True)
        self.assertEqual(
            ['aggregate.metadata', 'flavor.specs', 'flavor.specs',
             'provider.remove_traits', 'trait.delete'], ops(result))
        self.assertEqual(
            {'name': 'a100', 'metadata': {'trait:' + A100_TRAIT: None},
             'expect': None},
            result.steps[0].args)
        self.assertEqual(
            {'flavor_id': 'id-g1', 'name': 'g1', 'specs_set': {},
             'unset': ['trait:' + A100_TRAIT], 'expect': None},
            result.steps[1].args)
        self.assertEqual(
            {'flavor_id': 'id-g2', 'name': 'g2', 'specs_set': {},
             'unset': ['trait1:' + A100_TRAIT, 'trait:' + A100_TRAIT],
             'expect': None},
            result.steps[2].args)
        self.assertEqual(
            {'uuid': root('cmp1'), 'traits': [A100_TRAIT], 'label': 'cmp1'},
            result.steps[3].args)
        self.assertEqual({'trait': A100_TRAIT}, result.steps[4].args)
        # the flavors stop requiring the trait once nothing requires it of
        # them (the aggregate), and before the hosts lose it
        self.check_before(result, lambda s: s.op == 'aggregate.metadata',
                          lambda s: s.op == 'flavor.specs')
        self.check_before(result, lambda s: s.op == 'flavor.specs',
                          lambda s: s.op == 'provider.remove_traits')

    def test_update_dependents_updates_images_after_the_requirement(self):
        world = self.world()
        world.images.append({'id': 'img-1', 'name': 'ubuntu-gpu',
                             'trait:' + A100_TRAIT: 'required'})
        world.images.append({'id': 'img-2', 'name': 'other'})
        result = pool_plan.set_isolation(world.observed(), 'a100', False,
                                         update_dependents=True)
        self.assertEqual(
            ['aggregate.metadata', 'flavor.specs', 'image.update',
             'provider.remove_traits', 'trait.delete'], ops(result))
        self.assertEqual(
            {'image_id': 'img-1', 'name': 'ubuntu-gpu',
             'changes': {'trait:' + A100_TRAIT: None}, 'expect': None},
            result.steps[2].args)

    def test_without_dependents(self):
        result = pool_plan.set_isolation(a100_world().observed(), 'a100',
                                         False)
        self.assertEqual(['aggregate.metadata', 'provider.remove_traits',
                          'trait.delete'], ops(result))


class TestIsolationOn(PlanTestCase):

    def world(self):
        world = a100_world(isolate=False)
        world.flavor('g1', {POOL_SPEC: 'a100',
                            'pci_passthrough:alias': 'a100:1'})
        world.flavor('g0', {POOL_SPEC: 'a100',
                            'pci_passthrough:alias': 'a100:1',
                            'trait:' + A100_TRAIT: 'required'})
        world.flavor('elsewhere', {POOL_SPEC: 'other'})
        return world

    def test_refused_while_pool_flavors_lack_the_trait(self):
        message = self.refused(pool_plan.set_isolation,
                                     self.world().observed(), 'a100', True)
        self.assertIn('Isolating pool a100 would keep its flavors g1 off '
                      'its hosts: they do not require %s' % A100_TRAIT,
                      message)
        self.assertIn('--update-dependents', message)
        self.assertNotIn('g0', message)
        self.assertNotIn('elsewhere', message)

    def test_update_dependents_adds_the_trait_before_the_requirement(self):
        result = pool_plan.set_isolation(self.world().observed(), 'a100',
                                         True, update_dependents=True)
        self.assertEqual(
            ['trait.create', 'provider.add_traits', 'flavor.specs',
             'aggregate.metadata'], ops(result))
        self.assertEqual(
            {'flavor_id': 'id-g1', 'name': 'g1',
             'specs_set': {'trait:' + A100_TRAIT: 'required'},
             'unset': [], 'expect': None}, result.steps[2].args)
        self.assertEqual(
            {'name': 'a100',
             'metadata': {'trait:' + A100_TRAIT: 'required'},
             'expect': None},
            result.steps[3].args)
        self.check_before(result, lambda s: s.op != 'aggregate.metadata',
                          lambda s: s.op == 'aggregate.metadata')

    def test_dependent_flavor_steps_carry_the_flavor_id(self):
        # a plain flavor whose ID is the pool flavor's name: Nova's GET
        # /flavors/g1 would find it, so the step must name the ID
        world = self.world()
        world.flavor('plain', {}, flavor_id='g1')
        result = pool_plan.set_isolation(world.observed(), 'a100', True,
                                         update_dependents=True)
        (step,) = [s for s in result if s.op == 'flavor.specs']
        self.assertEqual(('id-g1', 'g1'),
                         (step.operation.flavor_id, step.operation.name))
        self.assertEqual('id-g1', step.inverse.operation.flavor_id)

    def test_repairs_a_root_that_lost_the_trait(self):
        # (6) already isolated, but cmp2's root lacks the trait
        world = a100_world(hosts=('cmp1',))
        world.aggregates[0]['hosts'].append('cmp2')
        pci_host(world, 'cmp2')
        result = pool_plan.set_isolation(world.observed(), 'a100', True)
        self.assertEqual(['provider.add_traits'], ops(result))
        self.assertEqual(
            {'uuid': root('cmp2'), 'traits': [A100_TRAIT], 'label': 'cmp2'},
            result.steps[0].args)

    def test_already_isolated_and_complete(self):
        result = pool_plan.set_isolation(a100_world().observed(), 'a100',
                                         True)
        self.assertEqual([], result.steps)


class TestDelete(PlanTestCase):

    def test_refused_while_flavors_steer_to_the_pool(self):
        world = a100_world(hosts=())
        world.flavor('g2', {POOL_SPEC: 'a100'})
        world.flavor('g1', {POOL_SPEC: 'a100'})
        world.flavor('hand', {'trait:' + A100_TRAIT: 'required'})
        world.flavor('other', {POOL_SPEC: 'b200'})
        message = self.refused(pool_plan.delete, world.observed(),
                                     'a100')
        self.assertIn('"openstack gpu flavor delete g1 g2 hand"', message)
        self.assertIn('flavors g1, g2, hand', message)
        self.assertNotIn('other', message)

    def test_refused_while_images_require_the_trait(self):
        world = a100_world(hosts=())
        world.images.append({'id': 'img-1', 'name': 'ubuntu-gpu',
                             'trait:' + A100_TRAIT: 'required'})
        message = self.refused(pool_plan.delete, world.observed(),
                                     'a100')
        self.assertIn('"openstack image unset --property trait:%s img-1"'
                      % A100_TRAIT, message)

    def test_refused_with_hosts_unless_forced(self):
        message = self.refused(pool_plan.delete,
                                     a100_world().observed(), 'a100')
        self.assertIn('Pool a100 still has hosts (cmp1)', message)
        self.assertIn('--force', message)

    def test_forced_delete_empties_then_deletes(self):
        result = pool_plan.delete(a100_world().observed(), 'a100',
                                  force=True)
        self.assertEqual(
            ['provider.remove_traits', 'aggregate.remove_host',
             'trait.delete', 'aggregate.delete'], ops(result))
        self.assertEqual(
            {'name': 'a100', 'zone': None, 'metadata': a100_metadata()},
            result.steps[-1].inverse.args)

    def test_empty_pool(self):
        world = a100_world(hosts=())
        result = pool_plan.delete(world.observed(), 'a100')
        self.assertEqual(['trait.delete', 'aggregate.delete'], ops(result))


# -- (2), (3) projects and properties -----------------------------------------

class TestProjects(PlanTestCase):

    def world(self, **project_keys):
        world = World()
        world.aggregate('a100', a100_metadata(False, **project_keys))
        return world

    def test_removing_the_last_project_is_refused(self):
        obs = self.world(filter_tenant_id_p1='p1').observed()
        message = self.refused(pool_plan.update_metadata, obs, 'a100',
                                     projects_remove=['p1'])
        self.assertIn('Removing p1 would leave pool a100 with no project, '
                      'which opens it to every project', message)
        self.assertIn('--open-to-all', message)

    def test_removing_the_last_project_with_open_to_all(self):
        obs = self.world(filter_tenant_id_p1='p1').observed()
        result = pool_plan.update_metadata(obs, 'a100',
                                           projects_remove=['p1'],
                                           open_to_all=True)
        self.assertEqual(['aggregate.metadata'], ops(result))
        self.assertEqual({'filter_tenant_id_p1': None},
                         result.steps[0].args['metadata'])

    def test_replacing_the_last_project_is_not_opening(self):
        obs = self.world(filter_tenant_id_p1='p1').observed()
        result = pool_plan.update_metadata(obs, 'a100', projects_add=['p2'],
                                           projects_remove=['p1'])
        self.assertEqual(
            {'filter_tenant_id_p1': None, 'filter_tenant_id_p2': 'p2'},
            result.steps[0].args['metadata'])

    def test_adding_writes_one_key(self):
        obs = self.world(filter_tenant_id_p1='p1',
                         filter_tenant_id_p2='p2').observed()
        result = pool_plan.update_metadata(obs, 'a100', projects_add=['p3'])
        self.assertEqual(['aggregate.metadata'], ops(result))
        self.assertEqual({'filter_tenant_id_p3': 'p3'},
                         result.steps[0].args['metadata'])
        self.assertEqual({'filter_tenant_id_p3': None},
                         result.steps[0].inverse.args['metadata'])

    def test_removing_writes_one_key(self):
        obs = self.world(filter_tenant_id_p1='p1',
                         filter_tenant_id_p2='p2').observed()
        result = pool_plan.update_metadata(obs, 'a100',
                                           projects_remove=['p1'])
        self.assertEqual({'filter_tenant_id_p1': None},
                         result.steps[0].args['metadata'])

    def test_adding_a_present_project_is_nothing(self):
        obs = self.world(filter_tenant_id_p1='p1').observed()
        result = pool_plan.update_metadata(obs, 'a100', projects_add=['p1'])
        self.assertEqual([], result.steps)

    def test_legacy_keys_are_migrated_in_the_same_step(self):
        for label, legacy in [
                ('numbered', {'filter_tenant_id': 'p1',
                              'filter_tenant_id2': 'p2'}),
                ('comma list', {'filter_tenant_id': 'p1,p2'}),
        ]:
            obs = self.world(**legacy).observed()
            result = pool_plan.update_metadata(obs, 'a100',
                                               projects_add=['p3'])
            self.assertEqual(['aggregate.metadata'], ops(result), label)
            expected = {'filter_tenant_id_p1': 'p1',
                        'filter_tenant_id_p2': 'p2',
                        'filter_tenant_id_p3': 'p3'}
            expected.update({k: None for k in legacy})
            self.assertEqual(expected, result.steps[0].args['metadata'],
                             label)
            # the undo puts the legacy keys back and drops the new ones
            undo = dict(legacy)
            undo.update({'filter_tenant_id_p1': None,
                         'filter_tenant_id_p2': None,
                         'filter_tenant_id_p3': None})
            self.assertEqual(undo, result.steps[0].inverse.args['metadata'],
                             label)

    def test_removing_a_legacy_project(self):
        obs = self.world(filter_tenant_id='p1',
                         filter_tenant_id2='p2').observed()
        result = pool_plan.update_metadata(obs, 'a100',
                                           projects_remove=['p1'])
        self.assertEqual(
            {'filter_tenant_id_p2': 'p2', 'filter_tenant_id': None,
             'filter_tenant_id2': None},
            result.steps[0].args['metadata'])

    def test_removing_an_unknown_project_is_refused(self):
        obs = self.world(filter_tenant_id_p1='p1').observed()
        message = self.refused(pool_plan.update_metadata, obs, 'a100',
                                     projects_remove=['p9'])
        self.assertIn('Project p9 is not a project of pool a100 (its '
                      'projects: p1)', message)

    def test_flavor_access_of_removed_projects(self):
        world = self.world(filter_tenant_id_p1='p1',
                           filter_tenant_id_p2='p2')
        world.flavor('g1', {POOL_SPEC: 'a100'}, public=False)
        world.access['id-g1'] = ['p1', 'p2']
        message = self.refused(pool_plan.update_metadata,
                                     world.observed(), 'a100',
                                     projects_remove=['p1'])
        self.assertIn('(g1: p1)', message)
        self.assertIn('--update-dependents', message)
        result = pool_plan.update_metadata(world.observed(), 'a100',
                                           projects_remove=['p1'],
                                           update_dependents=True)
        self.assertEqual(['flavor.remove_access', 'aggregate.metadata'],
                         ops(result))
        self.assertEqual({'flavor_id': 'id-g1', 'name': 'g1',
                          'project': 'p1'}, result.steps[0].args)

    def test_properties(self):
        obs = self.world(color='red').observed()
        result = pool_plan.update_metadata(
            obs, 'a100', properties={'speed': 'fast'},
            remove_properties=['color', 'absent'])
        self.assertEqual({'speed': 'fast', 'color': None},
                         result.steps[0].args['metadata'])
        message = self.refused(pool_plan.update_metadata, obs, 'a100',
                                     properties={'gpu_pool': 'x'})
        self.assertIn('Property gpu_pool is managed by gpuclient', message)


# -- (4) hosts and the type traits a pool owns --------------------------------

class TestRemoveHost(PlanTestCase):

    def world(self, isolate=False):
        world = World()
        world.aggregate(
            'v35', vgpu_metadata(isolate=isolate, **{
                pools.owned_key(dev('cmp2', 0)): NVIDIA_35}),
            ['cmp2'])
        world.host('cmp2', [V35_TRAIT] if isolate else [],
                   [('VGPU', [NVIDIA_35]),    # tagged by the pool
                    ('VGPU', [NVIDIA_35])])   # set by hand
        world.existing.update({NVIDIA_35, V35_TRAIT})
        return world

    def test_removes_only_owned_traits(self):
        result = pool_plan.remove_hosts(self.world().observed(), 'v35',
                                        ['cmp2'])
        self.assertEqual(
            ['provider.remove_traits', 'aggregate.remove_host',
             'aggregate.metadata'], ops(result))
        self.assertEqual(
            {'uuid': dev('cmp2', 0), 'traits': [NVIDIA_35],
             'label': 'cmp2_gpu_0'}, result.steps[0].args)
        self.assertEqual(
            {'name': 'v35',
             'metadata': {pools.owned_key(dev('cmp2', 0)): None},
             'expect': None},
            result.steps[2].args)
        self.assertNotIn(dev('cmp2', 1), str(result.steps))
        self.assertEqual(1, len(result.warnings))
        self.assertIn('%s stays on cmp2_gpu_1' % NVIDIA_35,
                      result.warnings[0])
        self.assertIn('this pool did not put it there', result.warnings[0])

    def test_leave_order(self):
        # traits (type, then pool trait), out of the aggregate, records
        result = pool_plan.remove_hosts(self.world(isolate=True).observed(),
                                        'v35', ['cmp2'])
        self.assertEqual(
            ['provider.remove_traits', 'provider.remove_traits',
             'aggregate.remove_host', 'aggregate.metadata'], ops(result))
        self.assertEqual([NVIDIA_35], result.steps[0].args['traits'])
        self.assertEqual({'uuid': root('cmp2'), 'traits': [V35_TRAIT],
                          'label': 'cmp2'}, result.steps[1].args)

    def test_record_moves_to_a_pool_that_keeps_the_host(self):
        world = self.world()
        world.aggregate('v35b', vgpu_metadata(name='v35b'), ['cmp2'])
        result = pool_plan.remove_hosts(world.observed(), 'v35', ['cmp2'])
        self.assertEqual(
            ['aggregate.metadata', 'aggregate.remove_host',
             'aggregate.metadata'], ops(result))
        self.assertEqual(
            {'name': 'v35b',
             'metadata': {pools.owned_key(dev('cmp2', 0)): NVIDIA_35},
             'expect': None},
            result.steps[0].args)
        self.assertEqual(
            {'name': 'v35',
             'metadata': {pools.owned_key(dev('cmp2', 0)): None},
             'expect': None},
            result.steps[2].args)
        self.assertNotIn('provider.remove_traits', ops(result))

    def test_host_not_in_pool_is_refused(self):
        message = self.refused(pool_plan.remove_hosts,
                                     self.world().observed(), 'v35',
                                     ['cmp9'])
        self.assertIn('Not in pool v35: cmp9. Its hosts: cmp2.', message)


class TestServersLeftBehind(PlanTestCase):
    """A host that runs servers whose flavor steers to the pool it leaves,
    and to no other pool holding it, is refused."""

    STEERED = {POOL_SPEC: 'v35', 'resources:VGPU': '1'}

    def world(self):
        world = World()
        world.aggregate('v35', vgpu_metadata(), ['cmp2', 'cmp3'])
        world.aggregate('v36', vgpu_metadata(name='v36',
                                             vgpu_type='nvidia-36'),
                        ['cmp2'])
        for host in ('cmp2', 'cmp3'):
            world.host(host, [], [('VGPU', [])])
        world.servers = []
        return world

    def test_refused_naming_servers_flavor_and_what_to_do(self):
        world = self.world()
        world.server('s1', 'cmp2', 'g1.v35', self.STEERED)
        world.server('s2', 'cmp2', 'g1.v35', self.STEERED)
        message = self.refused(pool_plan.remove_hosts, world.observed(),
                               'v35', ['cmp2'])
        self.assertIn('Taking cmp2 out of pool v35 would strand servers: '
                      'cmp2 runs 2 server(s) of flavor g1.v35 (s1, s2), and '
                      'their flavor steers to pool v35 only.', message)
        self.assertIn('"openstack gpu host drain cmp2"', message)
        self.assertIn('add the host to another pool their flavor steers '
                      'to', message)
        self.assertIn('run again with --allow-servers', message)
        # the escape: the same plan as without servers
        allowed = pool_plan.remove_hosts(world.observed(), 'v35', ['cmp2'],
                                         allow_servers=True)
        self.assertEqual(['aggregate.remove_host'], ops(allowed))

    def test_only_the_servers_of_the_leaving_host_and_pool_count(self):
        world = self.world()
        # on another host of the pool; of a flavor of another pool; of an
        # ordinary flavor; shelved (no host)
        world.server('s1', 'cmp3', 'g1.v35', self.STEERED)
        world.server('s2', 'cmp2', 'g1.v36',
                     {POOL_SPEC: 'v36', 'resources:VGPU': '1'})
        world.server('s3', 'cmp2', 'm1.small', {})
        world.server('s4', None, 'g1.v35', self.STEERED)
        result = pool_plan.remove_hosts(world.observed(), 'v35', ['cmp2'])
        self.assertEqual(['aggregate.remove_host'], ops(result))
        message = self.refused(pool_plan.remove_hosts, world.observed(),
                               'v35', ['cmp3'])
        self.assertIn('cmp3 runs 1 server(s) of flavor g1.v35 (s1)',
                      message)
        self.assertNotIn('s4', message)

    def test_a_flavor_that_steers_to_another_pool_holding_the_host(self):
        # hand-made steering (gpu=true) matches both pools: cmp2 stays in
        # v36, where the flavor still lands
        world = self.world()
        for agg in world.aggregates:
            agg['metadata']['gpu'] = 'true'
        hand = {'aggregate_instance_extra_specs:gpu': 'true',
                'resources:VGPU': '1'}
        world.server('s1', 'cmp2', 'hand', hand)
        result = pool_plan.remove_hosts(world.observed(), 'v35', ['cmp2'])
        self.assertEqual(['aggregate.remove_host'], ops(result))
        # cmp3 is in v35 only
        world.server('s2', 'cmp3', 'hand', hand)
        message = self.refused(pool_plan.remove_hosts, world.observed(),
                               'v35', ['cmp3'])
        self.assertIn('flavor hand (s2)', message)

    def test_a_server_whose_delete_ran_on_its_host_is_not_counted(self):
        # Nova lists it (status DELETED) until the compute has deleted its
        # allocations and destroyed the record; it stays nowhere
        world = self.world()
        world.server('s1', 'cmp3', 'g1.v35', self.STEERED)
        world.servers[-1]['OS-EXT-STS:vm_state'] = 'deleted'
        result = pool_plan.remove_hosts(world.observed(), 'v35', ['cmp3'])
        self.assertEqual(['aggregate.remove_host'], ops(result))
        # still being deleted (task_state deleting, vm_state active): counted
        world.servers[-1]['OS-EXT-STS:vm_state'] = 'active'
        world.servers[-1]['OS-EXT-STS:task_state'] = 'deleting'
        self.assertIn('cmp3 runs 1 server(s) of flavor g1.v35 (s1)',
                      self.refused(pool_plan.remove_hosts, world.observed(),
                                   'v35', ['cmp3']))

    def test_many_servers_named_by_count_and_a_few_ids(self):
        world = self.world()
        for index in range(5):
            world.server('s%d' % index, 'cmp2', 'g1.v35', self.STEERED)
        message = self.refused(pool_plan.remove_hosts, world.observed(),
                               'v35', ['cmp2'])
        self.assertIn('5 server(s) of flavor g1.v35 (s0, s1, s2 and 2 '
                      'more)', message)

    def test_delete_with_force_refused_too(self):
        world = self.world()
        world.server('s1', 'cmp3', 'g1.v35', self.STEERED)
        message = self.refused(pool_plan.delete, world.observed(), 'v35',
                               force=True, escape='do something else')
        self.assertIn('Taking cmp3 out of pool v35 would strand servers',
                      message)
        self.assertIn('or do something else.', message)
        # servers not read: the planner cannot tell, as before
        world.servers = None
        self.assertIn('aggregate.delete',
                      ops(pool_plan.delete(world.observed(), 'v35',
                                           force=True)))


class TestAddHost(PlanTestCase):

    def world(self, isolate=False, devices=None):
        world = World()
        world.aggregate('v35', vgpu_metadata(isolate=isolate))
        world.host('cmp3', [], devices if devices is not None else [
            ('VGPU', []), ('VGPU', [NVIDIA_36])])
        return world

    def test_tags_only_free_pgpus_and_records_them_first(self):
        result = pool_plan.add_hosts(self.world().observed(), 'v35',
                                     ['cmp3'])
        self.assertEqual(
            ['trait.create', 'aggregate.metadata', 'provider.add_traits',
             'aggregate.add_host'], ops(result))
        self.assertEqual({'trait': NVIDIA_35}, result.steps[0].args)
        self.assertEqual(
            {'name': 'v35',
             'metadata': {pools.owned_key(dev('cmp3', 0)): NVIDIA_35},
             'expect': None},
            result.steps[1].args)
        self.assertEqual(
            {'uuid': dev('cmp3', 0), 'traits': [NVIDIA_35],
             'label': 'cmp3_gpu_0'}, result.steps[2].args)
        self.assertEqual({'name': 'v35', 'host': 'cmp3',
                          'providers': ['rp-cmp3']}, result.steps[3].args)
        self.assertEqual(1, len(result.warnings))
        self.assertIn('cmp3_gpu_1 (%s)' % NVIDIA_36, result.warnings[0])

    def test_join_order(self):
        # ownership records, then traits (pool, type), then the host
        world = self.world(isolate=True)
        world.existing.update({NVIDIA_35, V35_TRAIT})
        result = pool_plan.add_hosts(world.observed(), 'v35', ['cmp3'])
        self.assertEqual(
            ['aggregate.metadata', 'provider.add_traits',
             'provider.add_traits', 'aggregate.add_host'], ops(result))
        self.assertEqual({'uuid': root('cmp3'), 'traits': [V35_TRAIT],
                          'label': 'cmp3'}, result.steps[1].args)
        self.check_before(result, lambda s: s.op == 'aggregate.metadata',
                          lambda s: s.op == 'provider.add_traits')
        self.check_before(result, lambda s: s.op == 'provider.add_traits',
                          lambda s: s.op == 'aggregate.add_host')

    def test_refused_when_every_pgpu_serves_another_type(self):
        world = self.world(devices=[('VGPU', [NVIDIA_36]),
                                    ('VGPU', ['CUSTOM_MIG_3G_40GB'])])
        message = self.refused(pool_plan.add_hosts, world.observed(),
                                     'v35', ['cmp3'])
        self.assertIn('cmp3 has no pGPU provider that can serve %s'
                      % NVIDIA_35, message)
        self.assertIn('cmp3_gpu_0 (%s)' % NVIDIA_36, message)
        self.assertIn('cmp3_gpu_1 (CUSTOM_MIG_3G_40GB)', message)

    def test_an_operator_label_is_not_a_type(self):
        # CUSTOM_NVLINK is not of the shape of a type trait: the pGPU is
        # tagged (and recorded), with no warning
        world = self.world(devices=[('VGPU', ['CUSTOM_NVLINK'])])
        world.existing.add(NVIDIA_35)
        result = pool_plan.add_hosts(world.observed(), 'v35', ['cmp3'])
        self.assertEqual(['aggregate.metadata', 'provider.add_traits',
                          'aggregate.add_host'], ops(result))
        self.assertEqual([], result.warnings)

    def test_a_trait_another_pool_recorded_is_a_type(self):
        # an unusual type name is still a type once a pool recorded it
        world = self.world(devices=[('VGPU', ['CUSTOM_ACME_7'])])
        world.aggregate('other', {'gpu_pool': 'other', 'gpu_mode':
                                  'passthrough', 'gpu_tagged:x':
                                  'CUSTOM_ACME_7'}, [])
        message = self.refused(pool_plan.add_hosts, world.observed(),
                               'v35', ['cmp3'])
        self.assertIn('cmp3_gpu_0 (CUSTOM_ACME_7)', message)

    def test_refused_when_another_pool_owns_the_pgpus(self):
        world = self.world(devices=[('VGPU', [NVIDIA_36])])
        world.aggregate('v36', vgpu_metadata(name='v36',
                                             vgpu_type='nvidia-36'),
                        ['cmp3'])
        message = self.refused(pool_plan.add_hosts, world.observed(),
                                     'v35', ['cmp3'])
        self.assertIn('already serve %s for pool v36' % NVIDIA_36, message)

    def test_pgpu_already_serving_is_neither_tagged_nor_recorded(self):
        world = self.world(devices=[('VGPU', [NVIDIA_35])])
        world.existing.add(NVIDIA_35)
        result = pool_plan.add_hosts(world.observed(), 'v35', ['cmp3'])
        self.assertEqual(['aggregate.add_host'], ops(result))

    def test_host_without_the_class_is_refused(self):
        world = self.world(devices=[(PCI_RC, [])])
        message = self.refused(pool_plan.add_hosts, world.observed(),
                                     'v35', ['cmp3'])
        self.assertIn('cmp3 offers no VGPU in Placement', message)


# -- (5) create, from nothing or finishing one --------------------------------

def a100_spec(isolate=True):
    return pools.build_spec('a100', 'passthrough', alias='a100',
                            pci_id='10de:20b5', isolate=isolate)


class TestCreate(PlanTestCase):

    def test_from_nothing(self):
        world = World()
        pci_host(world, 'cmp1')
        result = pool_plan.create(world.observed(), a100_spec(), ['cmp1'])
        self.assertEqual(
            ['aggregate.create', 'aggregate.metadata', 'trait.create',
             'provider.add_traits', 'aggregate.add_host'], ops(result))
        self.assertEqual(a100_metadata(), result.steps[1].args['metadata'])
        self.assertEqual([], result.warnings)

    def test_existing_member_lacking_its_trait_is_repaired(self):
        world = a100_world(root_has_trait=False)
        result = pool_plan.create(world.observed(), a100_spec(), ['cmp1'])
        self.assertEqual(['provider.add_traits'], ops(result))
        self.assertEqual(
            {'uuid': root('cmp1'), 'traits': [A100_TRAIT], 'label': 'cmp1'},
            result.steps[0].args)

    def test_existing_and_complete(self):
        result = pool_plan.create(a100_world().observed(), a100_spec(),
                                  ['cmp1'])
        self.assertEqual([], result.steps)
        self.assertEqual(
            ['Creating pool a100: nothing to do, the cloud already '
             'matches.'], result.lines())

    def test_existing_gets_the_missing_host(self):
        world = a100_world()
        pci_host(world, 'cmp2')
        result = pool_plan.create(world.observed(), a100_spec(),
                                  ['cmp1', 'cmp2'])
        self.assertEqual(['provider.add_traits', 'aggregate.add_host'],
                         ops(result))

    def test_existing_with_other_settings_is_refused(self):
        message = self.refused(pool_plan.create,
                                     a100_world().observed(),
                                     a100_spec(isolate=False), ['cmp1'])
        self.assertIn('Pool a100 already exists with other settings: '
                      'isolate: True (requested False)', message)

    def test_existing_with_more_hosts_is_refused(self):
        world = a100_world(hosts=('cmp1', 'cmp2'))
        message = self.refused(pool_plan.create, world.observed(),
                                     a100_spec(), ['cmp1'])
        self.assertIn('more hosts (cmp2)', message)

    def test_empty_aggregate_without_metadata_is_adopted(self):
        world = World()
        world.aggregate('a100')
        pci_host(world, 'cmp1')
        result = pool_plan.create(world.observed(), a100_spec(), ['cmp1'])
        self.assertNotIn('aggregate.create', ops(result))
        self.assertEqual(
            ['aggregate.metadata', 'trait.create', 'provider.add_traits',
             'aggregate.add_host'], ops(result))
        self.assertEqual(1, len(result.warnings))
        self.assertIn('Host aggregate a100 exists, empty and without '
                      'metadata', result.warnings[0])

    def test_aggregate_that_is_not_a_pool_is_refused(self):
        for label, metadata, hosts in [
                ('metadata', {'ssd': 'true'}, []),
                ('hosts', {}, ['cmp1']),
        ]:
            world = World()
            world.aggregate('a100', metadata, hosts)
            pci_host(world, 'cmp1')
            message = self.refused(pool_plan.create, world.observed(),
                                         a100_spec(), ['cmp1'])
            self.assertIn('A host aggregate named a100 already exists and '
                          'is not a GPU pool', message, label)

    def test_trait_collision_is_refused(self):
        world = a100_world(hosts=())
        pci_host(world, 'cmp1')
        spec = pools.build_spec('A100', 'passthrough', alias='a100',
                                pci_id='10de:20b5')
        message = self.refused(pool_plan.create, world.observed(),
                                     spec, ['cmp1'])
        self.assertIn('normalises to trait %s, which pool a100 already uses'
                      % A100_TRAIT, message)


# -- (7) pools that cannot be read ------------------------------------------

class TestObserved(PlanTestCase):

    def world(self):
        world = a100_world()
        world.aggregate('bad-long', {
            'gpu_pool': 'x' * 250, 'gpu_pool_mode': 'passthrough',
            'gpu_resource_class': PCI_RC, 'gpu_alias': 'a100',
            'gpu_pci_id': '10de:20b5'})
        world.aggregate('bad-mode', {
            'gpu_pool': 'weird', 'gpu_pool_mode': 'sriov',
            'gpu_resource_class': PCI_RC})
        for name in ('twin-1', 'twin-2'):
            world.aggregate(name, {
                'gpu_pool': 'twin', 'gpu_pool_mode': 'vgpu',
                'gpu_resource_class': 'VGPU', 'gpu_vgpu_type': 'nvidia-35'})
        world.aggregate('ordinary', {'ssd': 'true'}, ['cmp1'])
        return world

    def test_problems_are_reported_and_skipped(self):
        obs = self.world().observed()
        self.assertEqual(['a100'], sorted(obs.pools))
        self.assertEqual(['bad-long', 'bad-mode', 'twin-1', 'twin-2'],
                         sorted(agg for agg, _pool, _msg in obs.problems))
        messages = {agg: msg for agg, _pool, msg in obs.problems}
        self.assertIn("unknown mode 'sriov'", messages['bad-mode'])
        self.assertIn('longer', messages['bad-long'])
        self.assertIn('claimed by several aggregates (twin-1, twin-2',
                      messages['twin-1'])

    def test_naming_a_skipped_pool_says_why(self):
        obs = self.world().observed()
        message = self.refused(pool_plan.find_pool, obs, 'twin')
        self.assertIn('claimed by several aggregates', message)
        message = self.refused(pool_plan.find_pool, obs, 'weird')
        self.assertIn("unknown mode 'sriov'", message)
        message = self.refused(pool_plan.find_pool, obs, 'nope')
        self.assertIn('No GPU pool named nope. Known pools: a100', message)

    def test_other_pools_still_work(self):
        world = self.world()
        pci_host(world, 'cmp2')
        obs = world.observed()
        result = pool_plan.add_hosts(obs, 'a100', ['cmp2'])
        self.assertEqual(['provider.add_traits', 'aggregate.add_host'],
                         ops(result))
        result = pool_plan.set_isolation(world.observed(), 'a100', False)
        self.assertEqual('trait.delete', result.steps[-1].op)

    def test_without_snapshot(self):
        obs = model.Cloud([{'name': 'a100', 'metadata': a100_metadata(),
                            'hosts': []}], None, None)
        self.assertEqual(set(), pool_plan.provider_traits(obs, 'anything'))
        self.assertEqual('anything',
                         pool_plan.provider_label(obs, 'anything'))
        self.assertIsInstance(
            pool_plan.delete(obs, 'a100'), plan_mod.Plan)


class TestDeleteLeftover(testtools.TestCase):
    def test_empty_aggregate_left_by_an_interrupted_delete_is_finished(self):
        obs = model.Cloud(
            [{'name': 'solver', 'hosts': [], 'metadata': {},
              'availability_zone': None}], None, None,
            existing_traits={'CUSTOM_GPU_POOL_SOLVER'})
        plan = pool_plan.delete(obs, 'solver', force=True)
        self.assertEqual(['trait.delete', 'aggregate.delete'],
                         [step.op for step in plan])
        self.assertIn('left by an interrupted', plan.warnings[0])

    def test_ordinary_aggregate_is_not_a_pool(self):
        obs = model.Cloud(
            [{'name': 'rack1', 'hosts': ['h1'], 'metadata': {'ssd': 'true'},
              'availability_zone': None}], None, None)
        exc = self.assertRaises(exceptions.CommandError, pool_plan.delete,
                                obs, 'rack1')
        self.assertIn('No GPU pool named rack1', str(exc))
