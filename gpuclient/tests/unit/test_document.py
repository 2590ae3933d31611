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

"""The document of the GPU layer (rules/document.py), with plain dicts:
schema and rule errors with their line and path, the cloud as a
document, the round trip through YAML text, and the diff."""

import copy
import os
import time

from osc_lib import exceptions

from gpuclient.rules import document
from gpuclient.rules import pools as pools_mod
from gpuclient.tests.unit import base

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))


def aggregate(name, hosts=(), zone=None, **metadata):
    return {'name': name, 'id': 1, 'uuid': 'uuid-' + name,
            'hosts': list(hosts), 'availability_zone': zone,
            'metadata': dict({'gpu_pool': name}, **metadata)}


# the seeds' three pools, as gpu pool create leaves their aggregates
AGGREGATES = [
    aggregate('solver', hosts=['gpu-pt-2', 'gpu-pt-1'], gpu_pool_mode=(
        'passthrough'), gpu_resource_class='CUSTOM_PCI_10DE_2331',
        gpu_alias='h100', gpu_pci_id='10de:2331',
        **{'trait:CUSTOM_GPU_POOL_SOLVER': 'required',
           'filter_tenant_id_p2': 'p2', 'filter_tenant_id_p1': 'p1',
           'gpu_tagged:x': 'CUSTOM_X', 'team': 'hpc'}),
    aggregate('ws', hosts=['gpu-vgpu-1'], zone='az1',
              gpu_pool_mode='vgpu', gpu_resource_class='VGPU',
              gpu_vgpu_type='nvidia-35', group_policy='isolate'),
    aggregate('mig', gpu_pool_mode='mig', gpu_resource_class='VGPU',
              gpu_mig_profile='3g.40gb'),
    {'name': 'plain', 'id': 9, 'uuid': 'u', 'hosts': ['cpu-1'],
     'availability_zone': None, 'metadata': {'ssd': 'true'}},
]


def flavor(name, extra_specs, public=True, vcpus=8, ram=65536, disk=80,
           **fields):
    return dict({'id': 'id-' + name, 'name': name, 'vcpus': vcpus,
                 'ram': ram, 'disk': disk, 'swap': '',
                 'OS-FLV-EXT-DATA:ephemeral': 0,
                 'os-flavor-access:is_public': public, 'description': None,
                 'extra_specs': extra_specs}, **fields)


FLAVORS = [
    flavor('solver.h100.2', {
        'aggregate_instance_extra_specs:gpu_pool': 'solver',
        'trait:CUSTOM_GPU_POOL_SOLVER': 'required',
        'pci_passthrough:alias': 'h100:2',
        'hw:pci_numa_affinity_policy': 'preferred',
        'hw:cpu_policy': 'dedicated'}, public=False,
        description='two H100'),
    flavor('ws.a40', {
        'aggregate_instance_extra_specs:gpu_pool': 'ws',
        'resources1:VGPU': '1', 'trait1:CUSTOM_NVIDIA_35': 'required',
        'resources2:VGPU': '1', 'trait2:CUSTOM_NVIDIA_35': 'required',
        'group_policy': 'isolate'}, vcpus=4, swap=1024),
    flavor('mig.3g', {
        'aggregate_instance_extra_specs:gpu_pool': 'mig',
        'resources:VGPU': '1', 'trait:CUSTOM_MIG_3G_40GB': 'required'},
        vcpus=2),
    # not gpuclient's: no pool, or a pool no aggregate holds
    flavor('m1.small', {}),
    flavor('cyborg', {'accel:device_profile': 'p'}),
    flavor('gone', {'aggregate_instance_extra_specs:gpu_pool': 'gone',
                    'resources:VGPU': '1'}),
]
ACCESS = {'id-solver.h100.2': ['p2', 'p1']}
IMAGES = [
    {'id': 'img-1', 'name': 'ubuntu', 'hw_machine_type': 'q35',
     'hw_firmware_type': 'uefi', 'os_distro': 'ubuntu'},
    {'id': 'img-2', 'name': 'twin', 'img_hide_hypervisor_id': 'true'},
    {'id': 'img-3', 'name': 'twin'},
    {'id': 'img-4', 'name': 'cirros'},
]
REGISTERED = {'class:VGPU': {'id': 'r1', 'limit': -1},
              'class:VCPU': {'id': 'r2', 'limit': 20},
              'class:CUSTOM_PCI_10DE_2331': {'id': 'r3', 'limit': 0}}
LIMITS = [
    {'id': 'l1', 'project_id': 'p1', 'resource_name': 'class:VGPU',
     'resource_limit': 4},
    {'id': 'l2', 'project_id': 'p1', 'resource_name': 'servers',
     'resource_limit': 10},
]


def cloud_doc(aggregates=AGGREGATES, flavors=FLAVORS, selected=None):
    pools, _problems = pools_mod.scan(aggregates)
    return document.from_cloud(pools, flavors, ACCESS, IMAGES, REGISTERED,
                               LIMITS, selected=selected)


def marked_cloud_doc(unmarked=()):
    """``cloud_doc`` of the seeds' cloud after a ``gpu apply`` that named
    every object (each carries gpu apply's mark), but the pools, flavors,
    images and quota resource names of UNMARKED."""
    aggs = copy.deepcopy(AGGREGATES)
    for agg in aggs:
        if 'gpu_pool' in agg['metadata'] and agg['name'] not in unmarked:
            agg['metadata'][document.POOL_MARK] = document.MANAGED_BY
    flavors = copy.deepcopy(FLAVORS)
    for item in flavors:
        if item['name'] not in unmarked:
            item['extra_specs'][document.FLAVOR_MARK] = document.MANAGED_BY
    images = copy.deepcopy(IMAGES)
    for image in images:
        if image['name'] not in unmarked:
            image[document.IMAGE_MARK] = document.MANAGED_BY
    registered = {name: dict(item, description=None if name in unmarked
                             else 'x ' + document.QUOTA_MARK)
                  for name, item in REGISTERED.items()}
    limits = [dict(item, description=document.QUOTA_MARK)
              for item in LIMITS]
    pools, _problems = pools_mod.scan(aggs)
    return document.from_cloud(pools, flavors, ACCESS, images, registered,
                               limits)[0]


def parsed(text):
    """A document's text, checked; references resolved as themselves."""
    data, lines = document.load(text)
    doc = document.check(data, lines)
    return document.substitute(doc, {
        path: value for path, _what, value in document.references(doc)})


VALID = {
    'version': 1,
    'pools': [{'name': 'solver', 'mode': 'passthrough', 'alias': 'h100',
               'pci_id': '10de:2331'}],
    'flavors': [{'name': 'f', 'pool': 'solver', 'vcpus': 1, 'ram': 512,
                 'disk': 0}],
    'quotas': [{'default': True, 'pool': 'solver', 'gpus': 2}],
}


class TestFromCloud(base.TestCase):
    def test_seed_cloud(self):
        doc, notes = cloud_doc()
        self.assertEqual(['mig', 'solver', 'ws'],
                         [p['name'] for p in doc['pools']])
        solver = doc['pools'][1]
        self.assertEqual({
            'name': 'solver', 'mode': 'passthrough',
            'resource_class': 'CUSTOM_PCI_10DE_2331', 'alias': 'h100',
            'pci_id': '10de:2331', 'vgpu_type': None, 'mig_profile': None,
            'live_migratable': False,
            'zone': None, 'hosts': ['gpu-pt-1', 'gpu-pt-2'],
            'isolate': True, 'projects': ['p1', 'p2'],
            'properties': {'team': 'hpc'}}, solver)
        # group_policy is gpuclient's, set for the flavors that need it
        self.assertEqual({}, doc['pools'][2]['properties'])
        self.assertEqual('az1', doc['pools'][2]['zone'])
        self.assertEqual(['mig.3g', 'solver.h100.2', 'ws.a40'],
                         [f['name'] for f in doc['flavors']])
        self.assertEqual({
            'name': 'solver.h100.2', 'pool': 'solver', 'gpus': 2,
            'vcpus': 8, 'ram': 65536, 'disk': 80, 'ephemeral': 0,
            'swap': 0, 'numa_policy': None, 'public': False,
            'projects': ['p1', 'p2'], 'description': 'two H100',
            'properties': {'hw:cpu_policy': 'dedicated'}},
            doc['flavors'][1])
        self.assertEqual((2, 1024, {}), (
            doc['flavors'][2]['gpus'], doc['flavors'][2]['swap'],
            doc['flavors'][2]['properties']))
        # a shared name is named by ID; images without GPU properties out
        self.assertEqual([
            {'name': 'img-2', 'properties': {
                'img_hide_hypervisor_id': 'true'}},
            {'name': 'ubuntu', 'properties': {
                'hw_firmware_type': 'uefi', 'hw_machine_type': 'q35'}}],
            doc['images'])
        # GPU classes only; defaults first
        self.assertEqual([
            {'project': None, 'resource_class': 'CUSTOM_PCI_10DE_2331',
             'gpus': 0},
            {'project': None, 'resource_class': 'VGPU', 'gpus': -1},
            {'project': 'p1', 'resource_class': 'VGPU', 'gpus': 4}],
            doc['quotas'])
        self.assertEqual([], notes)

    def test_selected_pools(self):
        doc, _notes = cloud_doc(selected=['solver'])
        self.assertEqual(['solver'], [p['name'] for p in doc['pools']])
        self.assertEqual(['solver.h100.2'],
                         [f['name'] for f in doc['flavors']])
        self.assertEqual([], doc['images'])
        self.assertEqual(['CUSTOM_PCI_10DE_2331'],
                         [q['resource_class'] for q in doc['quotas']])

    def test_deterministic(self):
        shuffled = list(reversed(AGGREGATES))
        self.assertEqual(document.dump(cloud_doc()[0]),
                         document.dump(cloud_doc(shuffled,
                                                 FLAVORS[::-1])[0]))

    def test_flavor_specs_drift(self):
        # isolation turned on by hand: the flavor lacks the trait, and a
        # stale type trait is gpuclient's to remove
        flavors = [flavor('mig.3g', {
            'aggregate_instance_extra_specs:gpu_pool': 'mig',
            'resources:VGPU': '1', 'trait:CUSTOM_MIG_3G_40GB': 'required',
            'trait:CUSTOM_NVIDIA_35': 'required'})]
        aggs = copy.deepcopy(AGGREGATES)
        aggs[2]['metadata']['trait:CUSTOM_GPU_POOL_MIG'] = 'required'
        doc, notes = cloud_doc(aggs, flavors)
        self.assertEqual({
            'trait:CUSTOM_GPU_POOL_MIG': [None, 'required'],
            'trait:CUSTOM_NVIDIA_35': ['required', None]},
            doc['flavors'][0][document.SPECS_DRIFT])
        self.assertEqual({}, doc['flavors'][0]['properties'])
        self.assertNotIn(document.SPECS_DRIFT, document.dump(doc))

    def test_flavors_left_out_with_a_note(self):
        for specs, why in (
                ({'aggregate_instance_extra_specs:gpu_pool': 'mig'},
                 'gpus must be at least 1'),
                ({'aggregate_instance_extra_specs:gpu_pool': 'solver',
                  'pci_passthrough:alias': 'h100:1', 'hw:bogus': '1'},
                 'Nova does not know the extra spec hw:bogus')):
            doc, notes = cloud_doc(flavors=[flavor('odd', specs)])
            self.assertEqual([], doc['flavors'])
            self.assertEqual(1, len(notes))
            self.assertIn('Flavor odd steers to pool', notes[0])
            self.assertIn(why, notes[0])
        doc, notes = cloud_doc(flavors=FLAVORS[:1] + [
            dict(FLAVORS[0], id='other')])
        self.assertEqual([], doc['flavors'])
        self.assertIn('2 GPU flavors are named solver.h100.2', notes[0])


class TestRoundTrip(base.TestCase):
    def test_export_parses_back_equal(self):
        doc, _notes = cloud_doc()
        text = document.dump(doc)
        self.assertEqual(doc, parsed(text))
        # and the text of the parsed document is the same text
        self.assertEqual(text, document.dump(parsed(text)))

    def test_written_form_leaves_defaults_out(self):
        written = document.written(cloud_doc()[0])
        mig = written['pools'][0]
        self.assertEqual(['name', 'mode', 'mig_profile', 'hosts',
                          'isolate'], list(mig))
        solver = written['pools'][1]
        self.assertNotIn('resource_class', solver)  # the mode's own
        self.assertEqual([{'default': True, 'pool': 'solver', 'gpus': 0},
                          {'default': True, 'resource_class': 'VGPU',
                           'gpus': 'unlimited'},
                          {'project': 'p1', 'resource_class': 'VGPU',
                           'gpus': 4}], written['quotas'])

    def test_guide_example_is_valid(self):
        # the complete example of the user guide is a valid document
        path = os.path.join(ROOT, 'doc', 'source', 'user',
                            'declarative.rst')
        with open(path) as rst:
            text = rst.read()
        start = text.index('.. code-block:: yaml\n   :caption: gpu.yaml')
        block = []
        for line in text[start:].splitlines()[3:]:
            if line and not line.startswith('   '):
                break
            block.append(line[3:])
        doc = parsed('\n'.join(block))
        self.assertEqual(['mig', 'solver', 'ws'],
                         [p['name'] for p in doc['pools']])
        self.assertEqual('10de:2331', doc['pools'][1]['pci_id'])

    def test_guide_names_every_field(self):
        path = os.path.join(ROOT, 'doc', 'source', 'user',
                            'declarative.rst')
        with open(path) as rst:
            text = rst.read()
        for plural, _kind in document.KINDS:
            item = document.SCHEMA['properties'][plural]['items']
            for field in item['properties']:
                self.assertIn('``%s``' % field, text, plural)


class TestCheck(base.TestCase):
    def problems(self, change):
        data = copy.deepcopy(VALID)
        change(data)
        error = self.assertRaises(document.DocumentError, document.check,
                                  data)
        return error.problems

    def test_valid(self):
        doc = document.check(copy.deepcopy(VALID))
        self.assertEqual('CUSTOM_PCI_10DE_2331',
                         doc['quotas'][0]['resource_class'])
        self.assertEqual(1, doc['flavors'][0]['gpus'])

    def test_problems_name_path_and_field(self):
        cases = [
            (lambda d: d['pools'][0].update(mode='vgu'),
             "pools[0].mode: 'vgu' is not one of ['passthrough', 'vgpu', "
             "'mig', 'baremetal', 'vgpu-vf']"),
            (lambda d: d.update(version=2), 'version: 1 was expected'),
            (lambda d: d.update(extra=1),
             "(document): Additional properties are not allowed ('extra' "
             "was unexpected)"),
            (lambda d: d['pools'][0].update(pci_id='10de'),
             "pools[0].pci_id: '10de' does not match"),
            (lambda d: d['flavors'][0].update(gpus=0),
             'flavors[0].gpus: 0 is less than the minimum of 1'),
            (lambda d: d['flavors'][0].pop('ram'),
             "flavors[0]: 'ram' is a required property"),
            (lambda d: d['pools'][0].update(projects=[{'name': 'x'}]),
             "pools[0].projects[0]: 'domain' is a required property"),
            (lambda d: d['quotas'][0].update(gpus='lots'),
             "quotas[0].gpus: 'lots' does not match '^unlimited$'"),
            (lambda d: d.update(images=[{'name': 'i', 'properties': {
                'hw_hide_hypervisor_id': True}}]),
             "images[0].properties: Additional properties are not allowed "
             "('hw_hide_hypervisor_id' was unexpected)"),
            # gpuclient's own rules, in the document's words
            (lambda d: d['pools'][0].pop('alias'),
             'pools[0]: A passthrough pool needs both alias'),
            (lambda d: d['pools'][0].update(vgpu_type='nvidia-35'),
             'pools[0]: vgpu_type is for vgpu and vgpu-vf pools'),
            (lambda d: d['pools'][0].update(properties={
                'group_policy': 'isolate'}),
             'pools[0]: properties: group_policy is set by gpuclient'),
            (lambda d: d['pools'].append(dict(d['pools'][0])),
             'pools[1]: the same pool as pools[0]'),
            (lambda d: d['pools'].append(dict(d['pools'][0],
                                              name='SOLVER')),
             'pools[1]: Pool name SOLVER normalises to trait '
             'CUSTOM_GPU_POOL_SOLVER'),
            (lambda d: d['flavors'][0].update(pool='nope'),
             'flavors[0]: pool: no pool nope in this document'),
            (lambda d: d['flavors'][0].update(numa_policy='required',
                                              properties={
                'pci_passthrough:alias': 'h100:3'}),
             'flavors[0]: properties pci_passthrough:alias=h100:3 '
             'contradicts'),
            (lambda d: d['flavors'][0].update(projects=['p1']),
             'flavors[0]: projects: only a private flavor'),
            (lambda d: d['quotas'][0].update(project='p1'),
             'quotas[0]: give either project'),
            (lambda d: d['quotas'][0].update(resource_class='VCPU'),
             'quotas[0]: give either pool or resource_class'),
            (lambda d: d['quotas'].append({'default': True,
                                           'resource_class': 'vcpu',
                                           'gpus': 1}),
             "quotas[1]: VCPU cannot be a pool's GPU resource class"),
            (lambda d: d['quotas'].append({
                'default': True, 'resource_class': 'CUSTOM_PCI_10DE_2331',
                'gpus': 'unlimited'}),
             'quotas[1]: the same quota as quotas[0]'),
        ]
        for change, expected in cases:
            found = self.problems(change)
            self.assertEqual(1, len(found), found)
            self.assertIn(expected, found[0])

    def test_every_problem_at_once_in_path_order(self):
        def change(data):
            data['quotas'][0]['gpus'] = -2
            data['pools'][0]['mode'] = 'x'
            data['flavors'][0]['vcpus'] = 0
        found = self.problems(change)
        self.assertEqual(['flavors[0].vcpus', 'pools[0].mode',
                          'quotas[0].gpus'],
                         [p.split(':')[0] for p in found])

    def test_lines(self):
        text = ('version: 1\npools:\n- name: a\n  mode: passthrough\n'
                '  alias: h100\n  pci_id: 10de:2331\n- name: b\n'
                '  mode: vgu\n')
        data, lines = document.load(text)
        error = self.assertRaises(document.DocumentError, document.check,
                                  data, lines)
        self.assertEqual(["line 8: pools[1].mode: 'vgu' is not one of "
                          "['passthrough', 'vgpu', 'mig', 'baremetal', "
                          "'vgpu-vf']"],
                         error.problems)
        # a rule's problem names the object's line
        data['pools'][1]['mode'] = 'vgpu'
        error = self.assertRaises(document.DocumentError, document.check,
                                  data, lines)
        self.assertIn('line 7: pools[1]: A vgpu pool needs vgpu_type',
                      error.problems[0])

    def test_load_errors(self):
        for text, expected in (
                ('version: 1\npools: [\n', 'not YAML: line 3'),
                ('version: 1\nversion: 1\n',
                 'line 2: (document): version is given twice'),
                ('version: 1\npools:\n- name: a\n  name: b\n',
                 'line 4: pools[0]: name is given twice')):
            error = self.assertRaises(document.DocumentError,
                                      document.load, text)
            self.assertIn(expected, str(error))
        self.assertEqual(({'version': 1}, {(): 1, ('version',): 1}),
                         document.load('version: 1\n'))

    def test_aliases_and_anchors_refused(self):
        # anchors and aliases are refused before a tree is built: a
        # reused value is written out, and no document expands
        for text, line in (
                ('version: 1\npools:\n- &p {name: a, mode: vgpu}\n', 3),
                ('version: 1\nx: &v 1\ny: *v\n', 2),
                ('version: 1\npools:\n- name: a\n  <<: *m\n', 4)):
            error = self.assertRaises(document.DocumentError,
                                      document.load, text)
            self.assertIn('line %d: YAML anchors and aliases' % line,
                          str(error))

    def test_alias_bomb_refused_at_once(self):
        # the 315-byte document of issue 36 (30 s and 1 GB in gpu diff),
        # two levels deeper: refused at its first alias
        levels = ['a0: &a0 [x, x, x, x, x, x, x, x, x]']
        for i in range(1, 11):
            levels.append('a%d: &a%d [%s]' % (
                i, i, ', '.join(['*a%d' % (i - 1)] * 9)))
        text = 'version: 1\n' + '\n'.join(levels) + '\n'
        started = time.monotonic()
        error = self.assertRaises(document.DocumentError, document.load,
                                  text)
        self.assertLess(time.monotonic() - started, 1.0)
        self.assertIn('line 2: YAML anchors and aliases', str(error))

    def test_references(self):
        data = copy.deepcopy(VALID)
        data['pools'][0].update(hosts=['h1'], projects=[
            'p1', {'name': 'team', 'domain': 'd'}])
        data['flavors'][0].update(public=False, projects=['p1'])
        data['images'] = [{'name': 'ubuntu'}]
        data['quotas'].append({'project': 'team', 'resource_class': 'VGPU',
                               'gpus': 1})
        doc = document.check(data)
        refs = document.references(doc)
        self.assertEqual([
            (('pools', 0, 'hosts', 0), 'host', 'h1'),
            (('pools', 0, 'projects', 0), 'project', 'p1'),
            (('pools', 0, 'projects', 1), 'project',
             {'name': 'team', 'domain': 'd'}),
            (('flavors', 0, 'projects', 0), 'project', 'p1'),
            (('images', 0, 'name'), 'image', 'ubuntu'),
            (('quotas', 1, 'project'), 'project', 'team')], refs)
        ids = {'p1': 'id-9', 'team': 'id-1'}
        resolved = document.substitute(doc, {
            path: (value if what != 'project' else ids[
                value['name'] if isinstance(value, dict) else value])
            for path, what, value in refs})
        self.assertEqual(['id-1', 'id-9'],
                         resolved['pools'][0]['projects'])
        self.assertEqual(['id-1', None], sorted(
            (q['project'] for q in resolved['quotas']),
            key=lambda p: p or '~'))


class TestDiff(base.TestCase):
    def setUp(self):
        super().setUp()
        self.current = cloud_doc()[0]

    def rows(self, change, prune=False):
        wanted = copy.deepcopy(self.current)
        change(wanted)
        return [(r['object'], r['change'], r['from'], r['to'])
                for r in document.diff(self.current, wanted, prune)]

    def test_in_sync(self):
        self.assertEqual([], self.rows(lambda d: None))
        self.assertEqual(document.EXIT_IN_SYNC, document.exit_status([]))

    def test_changes(self):
        def pool(d, name):
            return next(p for p in d['pools'] if p['name'] == name)

        def flavor(d, name):
            return next(f for f in d['flavors'] if f['name'] == name)

        new_pool = dict(pool(self.current, 'mig'), name='mig2')
        cases = [
            (lambda d: pool(d, 'solver').update(hosts=['gpu-pt-1']),
             [('pool solver', 'update', {'hosts': ['gpu-pt-1', 'gpu-pt-2']},
               {'hosts': ['gpu-pt-1']})]),
            (lambda d: pool(d, 'ws').update(vgpu_type='nvidia-36'),
             [('pool ws', 'recreate', {'vgpu_type': 'nvidia-35'},
               {'vgpu_type': 'nvidia-36'})]),
            (lambda d: d['pools'].append(new_pool),
             [('pool mig2', 'create', None, new_pool)]),
            (lambda d: flavor(d, 'ws.a40').update(ram=1024,
                                                  description='x'),
             [('flavor ws.a40', 'recreate',
               {'ram': 65536, 'description': None},
               {'ram': 1024, 'description': 'x'})]),
            (lambda d: flavor(d, 'mig.3g').update(properties={'a:b': 'c'}),
             [('flavor mig.3g', 'update', {'properties': {}},
               {'properties': {'a:b': 'c'}})]),
            (lambda d: d['images'].append({'name': 'cirros', 'properties': {
                'hw_machine_type': 'q35'}}),
             [('image cirros', 'update', {'properties': {}},
               {'properties': {'hw_machine_type': 'q35'}})]),
            (lambda d: d['quotas'][2].update(gpus=8),
             [('quota class:VGPU (project p1)', 'update', {'gpus': 4},
               {'gpus': 8})]),
        ]
        for change, expected in cases:
            self.assertEqual(expected, self.rows(change))

    def test_absent_objects_untracked_or_deleted(self):
        self.current = marked_cloud_doc()

        def drop(d):
            d['pools'] = [p for p in d['pools'] if p['name'] != 'mig']
            d['flavors'] = [f for f in d['flavors'] if f['pool'] != 'mig']
            d['images'] = []
        kept = self.rows(drop)
        self.assertEqual([('pool mig', 'untracked'),
                          ('flavor mig.3g', 'untracked'),
                          ('image img-2', 'untracked'),
                          ('image ubuntu', 'untracked')],
                         [r[:2] for r in kept])
        self.assertEqual(document.EXIT_IN_SYNC, document.exit_status(
            document.diff(self.current, {'pools': []})))
        pruned = self.rows(drop, prune=True)
        self.assertEqual(['delete'] * 4, [r[1] for r in pruned])
        self.assertEqual(document.EXIT_DRIFT, document.exit_status(
            document.diff(self.current, {'pools': []}, prune=True)))

    def test_prune_removes_only_what_apply_marked(self):
        # issue 36, defects 4 and 5: an image with firmware properties, a
        # pool, a flavor and a quota gpu apply never made nor took over
        # (made by gpu pool/flavor create, gpu image set, gpu quota set or
        # by hand, before or after the export) are left by --prune, listed
        # as untracked; what an earlier apply marked is deleted
        self.current = marked_cloud_doc(
            unmarked=('ubuntu', 'mig', 'mig.3g', 'class:VGPU'))
        empty = {'version': 1, 'pools': [], 'flavors': [], 'images': [],
                 'quotas': []}
        rows = document.diff(self.current, empty, prune=True)
        self.assertEqual([
            ('pool mig', 'untracked'), ('pool solver', 'delete'),
            ('pool ws', 'delete'), ('flavor mig.3g', 'untracked'),
            ('flavor solver.h100.2', 'delete'), ('flavor ws.a40', 'delete'),
            ('image img-2', 'delete'), ('image ubuntu', 'untracked'),
            ('quota class:CUSTOM_PCI_10DE_2331 (default)', 'delete'),
            ('quota class:VGPU (default)', 'untracked'),
            ('quota class:VGPU (project p1)', 'delete')],
            [(r['object'], r['change']) for r in rows])
        # the mark is no field of the document, and no drift
        self.assertEqual([], document.diff(self.current, cloud_doc()[0]))
        self.assertNotIn('managed_by', document.dump(self.current))

    def test_flavor_specs_drift_is_an_update(self):
        aggs = copy.deepcopy(AGGREGATES)
        aggs[2]['metadata']['trait:CUSTOM_GPU_POOL_MIG'] = 'required'
        current = cloud_doc(aggs)[0]
        wanted = copy.deepcopy(current)
        for item in wanted['flavors']:
            item.pop(document.SPECS_DRIFT, None)
        rows = document.diff(current, wanted)
        self.assertEqual([('flavor mig.3g', 'update',
                           {'extra_specs': {
                               'trait:CUSTOM_GPU_POOL_MIG': None}},
                           {'extra_specs': {
                               'trait:CUSTOM_GPU_POOL_MIG': 'required'}})],
                         [(r['object'], r['change'], r['from'], r['to'])
                          for r in rows])
        self.assertEqual(document.EXIT_DRIFT, document.exit_status(rows))


class TestScope(base.TestCase):
    """--pool of gpu diff and gpu apply: a part of the layer, as gpu
    export --pool writes it; prune never leaves it."""

    def setUp(self):
        super().setUp()
        self.pools = pools_mod.scan(AGGREGATES)[0]
        self.current = cloud_doc()[0]

    def test_narrow_is_what_export_writes(self):
        for names in (['solver'], ['ws'], ['ws', 'mig']):
            scope = document.scope(names, self.pools, self.current)
            exported = cloud_doc(selected=names)[0]
            self.assertEqual(exported, scope.narrow(self.current), names)
            # the round trip: the export of a scope diffs in sync with it
            self.assertEqual([], document.diff(
                scope.narrow(self.current), scope.narrow(exported),
                prune=True, keep=scope.keep(self.current)))

    def test_what_a_scope_holds(self):
        scope = document.scope(['solver'], self.pools, self.current)
        narrowed = scope.narrow(self.current)
        self.assertEqual(['solver'], [p['name'] for p in narrowed['pools']])
        self.assertEqual(['solver.h100.2'],
                         [f['name'] for f in narrowed['flavors']])
        self.assertEqual([], narrowed['images'])
        self.assertEqual([('', 'CUSTOM_PCI_10DE_2331')],
                         [document.key_of(document.QUOTA, q)
                          for q in narrowed['quotas']])
        self.assertEqual(set(), scope.shared)

    def test_a_pool_of_the_document_only_brings_its_class(self):
        wanted = copy.deepcopy(self.current)
        wanted['pools'].append(dict(wanted['pools'][0], name='new',
                                    resource_class='CUSTOM_PCI_10DE_2330',
                                    pci_id='10de:2330'))
        scope = document.scope(['new'], self.pools, wanted)
        self.assertEqual({'CUSTOM_PCI_10DE_2330'}, scope.classes)
        self.assertEqual(['new'], [p['name']
                                   for p in scope.narrow(wanted)['pools']])
        self.assertEqual([], scope.narrow(self.current)['pools'])

    def test_unknown_pool_says_what_to_do(self):
        error = self.assertRaises(
            exceptions.CommandError, document.scope,
            ['solver', 'nope'], self.pools, {'pools': []})
        self.assertEqual(
            '--pool nope: no such pool in the document nor in the cloud '
            '(pools of the document: none; of the cloud: mig, solver, ws). '
            'Check the name, or describe the pool in the document to '
            'create it.', str(error))

    def test_prune_within_the_scope_only(self):
        # ws and mig share VGPU: a scope of ws prunes its pool and flavor
        # the document dropped, never VGPU's quotas (mig's GPUs too), nor
        # anything of the other pools
        self.current = marked_cloud_doc()
        scope = document.scope(['ws'], self.pools, self.current)
        self.assertEqual({'VGPU'}, scope.shared)
        rows = document.diff(scope.narrow(self.current),
                             scope.narrow({'version': 1, 'pools': [],
                                           'flavors': [], 'images': [],
                                           'quotas': []}),
                             prune=True, keep=scope.keep(self.current))
        self.assertEqual([('pool ws', 'delete'), ('flavor ws.a40', 'delete'),
                          ('quota class:VGPU (default)', 'untracked'),
                          ('quota class:VGPU (project p1)', 'untracked')],
                         [(r['object'], r['change']) for r in rows])

    def test_references_of_the_scope_only(self):
        data, lines = document.load(document.dump(self.current))
        doc = document.check(data, lines)
        scope = document.scope(['ws'], self.pools, doc)
        found = scope.references(doc)
        self.assertEqual({('pools', 2, 'hosts', 0)},
                         {path for path, _what, _value in found
                          if path[0] == 'pools'})
        self.assertNotIn('images', {path[0] for path, _w, _v in found})

    def test_leaving_hosts(self):
        wanted = copy.deepcopy(self.current)
        solver = next(p for p in wanted['pools'] if p['name'] == 'solver')
        solver['hosts'] = ['gpu-pt-1', 'gpu-pt-3']
        wanted['pools'] = [p for p in wanted['pools'] if p['name'] != 'ws']
        self.assertEqual({'solver': ['gpu-pt-2']},
                         document.leaving_hosts(self.current, wanted))
        self.assertEqual({'solver': ['gpu-pt-2'], 'ws': ['gpu-vgpu-1']},
                         document.leaving_hosts(self.current, wanted,
                                                prune=True))
        self.assertEqual({}, document.leaving_hosts(self.current,
                                                    self.current, True))


def _pool(**fields):
    """A canonical pool (an isolated vGPU pool) with FIELDS."""
    return dict({'name': 'p', 'mode': 'vgpu', 'resource_class': 'VGPU',
                 'alias': None, 'pci_id': None, 'vgpu_type': 'nvidia-35',
                 'mig_profile': None, 'live_migratable': False,
                 'zone': None, 'hosts': ['a'], 'isolate': True,
                 'projects': [], 'properties': {'team': 'hpc'}}, **fields)


def _flavor(**fields):
    return dict({'name': 'f', 'pool': 'p', 'gpus': 1, 'vcpus': 8,
                 'ram': 1024, 'disk': 10, 'ephemeral': 0, 'swap': 0,
                 'numa_policy': None, 'public': False, 'projects': ['p1'],
                 'description': None, 'properties': {}}, **fields)


class TestConflicts(base.TestCase):
    """Server-side apply's rule: a field the apply changes is a conflict
    when the cloud no longer holds what the export recorded (issue 51,
    defect 12)."""

    def test_fields(self):
        pool, flavor = document.POOL, document.FLAVOR
        cases = [
            # (kind, recorded, now, wanted, [(field, recorded, now,
            # wanted)])
            # another operator's value, the document's old one: undone
            (pool, _pool(), _pool(properties={'team': 'ml-ops'}), _pool(),
             [('properties.team', 'hpc', 'ml-ops', 'hpc')]),
            # the author's edit, the cloud as recorded: no conflict
            (pool, _pool(), _pool(), _pool(properties={'team': 'ai'}), []),
            # both edited it: the author's overwrites the other's
            (pool, _pool(), _pool(properties={'team': 'ml-ops'}),
             _pool(properties={'team': 'ai'}),
             [('properties.team', 'hpc', 'ml-ops', 'ai')]),
            # the cloud changed to what the document says: nothing to do
            (pool, _pool(), _pool(properties={'team': 'ai'}),
             _pool(properties={'team': 'ai'}), []),
            # a key another operator added since, or took away
            (pool, _pool(), _pool(properties={'team': 'hpc', 'x': '1'}),
             _pool(), [('properties.x', None, '1', None)]),
            (pool, _pool(), _pool(properties={}), _pool(),
             [('properties.team', 'hpc', None, 'hpc')]),
            # a key the author adds, beside one the cloud added: only the
            # cloud's is in question
            (pool, _pool(), _pool(properties={'team': 'hpc', 'x': '1'}),
             _pool(properties={'team': 'hpc', 'y': '2'}),
             [('properties.x', None, '1', None)]),
            (pool, _pool(), _pool(isolate=False), _pool(),
             [('isolate', True, False, True)]),
            # hosts, element by element: one the cloud gained since would
            # be taken out; the author's own additions are not in question
            (pool, _pool(), _pool(hosts=['a', 'c']), _pool(hosts=['a', 'd']),
             [('hosts', ['a'], ['a', 'c'], ['a', 'd'])]),
            (pool, _pool(), _pool(), _pool(hosts=['a', 'd']), []),
            (pool, _pool(), _pool(hosts=['a', 'c']),
             _pool(hosts=['a', 'c', 'd']), []),
            (pool, _pool(hosts=['a', 'b']), _pool(), _pool(hosts=['a', 'b']),
             [('hosts', ['a', 'b'], ['a'], ['a', 'b'])]),
            (flavor, _flavor(), _flavor(vcpus=16), _flavor(),
             [('vcpus', 8, 16, 8)]),
            (flavor, _flavor(), _flavor(projects=['p1', 'p2']), _flavor(),
             [('projects', ['p1'], ['p1', 'p2'], ['p1'])]),
            (flavor, _flavor(properties={'hw:cpu_policy': 'dedicated'}),
             _flavor(properties={'hw:cpu_policy': 'shared'}),
             _flavor(properties={'hw:cpu_policy': 'dedicated'}),
             [('properties.hw:cpu_policy', 'dedicated', 'shared',
               'dedicated')]),
            (document.IMAGE, {'name': 'i', 'properties': {
                'hw_machine_type': 'q35'}},
             {'name': 'i', 'properties': {'hw_machine_type': 'pc'}},
             {'name': 'i', 'properties': {'hw_machine_type': 'q35'}},
             [('properties.hw_machine_type', 'q35', 'pc', 'q35')]),
            # a quota's project and class name it: only gpus is a field
            (document.QUOTA,
             {'project': 'p1', 'resource_class': 'VGPU', 'gpus': 4},
             {'project': 'p1', 'resource_class': 'VGPU', 'gpus': 8},
             {'project': 'p1', 'resource_class': 'VGPU', 'gpus': 4},
             [('gpus', 4, 8, 4)]),
        ]
        for kind, recorded, now, wanted, expected in cases:
            self.assertEqual(
                [{'field': f, 'recorded': r, 'now': n, 'wanted': w}
                 for f, r, n, w in expected],
                document.conflicts(kind, now, wanted, recorded),
                (kind, recorded, now, wanted))

    def test_text(self):
        self.assertEqual(
            'properties.team (recorded hpc, now ml-ops, wanted hpc); '
            'hosts (recorded [a], now [a, c], wanted [a]); '
            'properties.x (recorded (not set), now 1, wanted (not set))',
            '; '.join(document.conflict_text(c) for c in (
                {'field': 'properties.team', 'recorded': 'hpc',
                 'now': 'ml-ops', 'wanted': 'hpc'},
                {'field': 'hosts', 'recorded': ['a'], 'now': ['a', 'c'],
                 'wanted': ['a']},
                {'field': 'properties.x', 'recorded': None, 'now': '1',
                 'wanted': None})))

    def test_diff_rows(self):
        recorded = cloud_doc()[0]
        current = copy.deepcopy(recorded)
        wanted = copy.deepcopy(recorded)
        solver = next(p for p in current['pools'] if p['name'] == 'solver')
        solver['properties'] = {'team': 'ml-ops'}  # another operator's
        ws = next(p for p in wanted['pools'] if p['name'] == 'ws')
        ws['zone'] = 'az2'  # the author's edit
        wanted['pools'].append(dict(ws, name='new'))  # a pool to create
        rows = {r['object']: r['conflicts'] for r in document.diff(
            current, wanted, recorded=recorded)}
        self.assertEqual({
            'pool new': [], 'pool ws': [],
            'pool solver': [{'field': 'properties.team', 'recorded': 'hpc',
                             'now': 'ml-ops', 'wanted': 'hpc'}]}, rows)
        # no record: nothing to tell the edits apart by (None), but where
        # the row overwrites nothing the cloud holds
        rows = document.diff(current, wanted)
        self.assertEqual({'pool new': [], 'pool ws': None,
                          'pool solver': None},
                         {r['object']: r['conflicts'] for r in rows})
        self.assertIn('pool solver, pool ws. What another operator changed '
                      'there is overwritten', document.unchecked(rows))
        self.assertIsNone(document.unchecked(document.diff(
            current, wanted, recorded=recorded)))
        # an object added to the document after the export: unchecked
        partial = dict(recorded, pools=[p for p in recorded['pools']
                                        if p['name'] != 'solver'])
        rows = document.diff(current, wanted, recorded=partial)
        self.assertIsNone(next(r['conflicts'] for r in rows
                               if r['object'] == 'pool solver'))
        # an image the document gives its first GPU properties: nothing
        # of it is overwritten, record or not
        wanted['images'].append({'name': 'cirros', 'properties': {
            'hw_machine_type': 'q35'}})
        self.assertEqual([], next(
            r['conflicts'] for r in document.diff(current, wanted)
            if r['object'] == 'image cirros'))

    def test_pruning_and_creating_overwrite_no_field(self):
        recorded = marked_cloud_doc()
        current = copy.deepcopy(recorded)
        next(p for p in current['pools'] if p['name'] == 'ws')[
            'properties'] = {'x': '1'}
        wanted = dict(recorded, pools=[p for p in recorded['pools']
                                       if p['name'] != 'ws'])
        rows = document.diff(current, wanted, prune=True, recorded=recorded)
        self.assertEqual([('pool ws', 'delete', [])],
                         [(r['object'], r['change'], r['conflicts'])
                          for r in rows if r['kind'] == document.POOL])

    def test_export_records_what_it_read(self):
        doc = cloud_doc()[0]
        text = document.dump(document.record(doc))
        self.assertIn('\n# What the cloud held when this document was '
                      'exported.', text)
        head, tail = text.split(document.OBSERVED_HEADER + 'observed:\n')
        # the record is the document, indented under observed
        self.assertEqual(head.split('version: 1\n')[1],
                         '\n'.join(line[2:] for line in tail.splitlines())
                         + '\n')
        data, lines = document.load(text)
        checked = document.check(data, lines)
        recorded = document.recorded(checked)
        self.assertEqual(parsed(document.dump(doc)), recorded)
        # dumped again, the record is kept as it is: the author's edits
        # above it do not change it
        checked['pools'][0]['isolate'] = False
        again = document.recorded(document.check(document.load(
            document.dump(checked))[0]))
        self.assertEqual(recorded, again)
        # a document without a record has none
        self.assertIsNone(document.recorded(parsed(document.dump(doc))))

    def test_record_checked_by_the_same_rules(self):
        data = copy.deepcopy(VALID)
        data['observed'] = copy.deepcopy(VALID)
        del data['observed']['version']
        data['observed']['pools'][0]['mode'] = 'vgu'
        data['observed']['flavors'][0]['pool'] = 'nope'
        error = self.assertRaises(document.DocumentError, document.check,
                                  data)
        self.assertEqual(["observed.pools[0].mode: 'vgu' is not one of"],
                         [p.split(' [')[0] for p in error.problems])
        data['observed']['pools'][0]['mode'] = 'passthrough'
        error = self.assertRaises(document.DocumentError, document.check,
                                  data)
        self.assertEqual(['observed.flavors[0]: pool: no pool nope in this '
                          'document'],
                         [p.split(' (')[0] for p in error.problems])
        data['observed']['version'] = 1
        error = self.assertRaises(document.DocumentError, document.check,
                                  data)
        self.assertIn("observed: Additional properties are not allowed "
                      "('version' was unexpected)", error.problems[0])
