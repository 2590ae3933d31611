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

"""The floors keep their direction: v1 -> ops -> {rules, cloud}.

tools/layers.py reads the imports (lazy ones too) of gpuclient/ and tools/;
the rules are its rule_broken(). KNOWN lists the breaks that exist today,
so that the list can only shrink: a new break fails test_no_new_violation,
and a mended one fails test_known_is_not_stale until it leaves KNOWN.

Each write operation is declared once (gpuclient/rules/operations.py):
the planners, the executor and the simulation name operations only
through those declarations (TestOperationsDeclaredOnce).
"""

import ast
import collections
import functools
import glob
import importlib.util
import os
import re
import textwrap

import fixtures

from gpuclient.ops import journal
from gpuclient.rules import document_plan
from gpuclient.rules import model
from gpuclient.rules import operations
from gpuclient.tests.unit import base

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
SCRIPT = os.path.join(ROOT, 'tools', 'layers.py')

KNOWN = set()  # no floor break left; a new one fails the test


def load_layers():
    spec = importlib.util.spec_from_file_location('gpuclient_layers',
                                                  SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


layers = load_layers()


@functools.cache
def tree_graph():
    # Parsed once per test process: the tree does not change under a run.
    return layers.graph(ROOT)


class TestTree(base.TestCase):
    """The repository's own imports."""

    def setUp(self):
        super().setUp()
        self.graph = tree_graph()
        self.found = {(a, b): rule
                      for a, b, rule in layers.violations(self.graph)}

    def test_reads_the_package(self):
        # A sanity check that the graph is the real one, not empty.
        self.assertIn('gpuclient.plugin', self.graph)
        self.assertIn('gpuclient.ops.journal', self.graph)
        self.assertIn('gpuclient.rules.plan',
                      self.graph['gpuclient.ops.journal'])
        self.assertNotIn('gpuclient.tests.unit.base', self.graph)
        self.assertNotIn('gpuclient.tests.unit.test_layers', self.graph)

    def test_the_scheduler_package_is_the_rules_floor(self):
        # rules/scheduler/ (and its filters/) are read and are rules: pure
        found = [m for m in self.graph
                 if m.startswith('gpuclient.rules.scheduler.')]
        self.assertIn('gpuclient.rules.scheduler.resource_request', found)
        self.assertIn('gpuclient.rules.scheduler.filters.compute_filter',
                      found)
        self.assertEqual({'rules'}, {layers.floor_of(m) for m in found})

    def test_the_scheduler_package_imports_nothing_that_imports_it(self):
        # issue 53: rules/specs.py took AGGREGATE_SCOPE from the scheduler's
        # filter while the scheduler imported specs
        self.assertEqual(
            [], layers.back_into(self.graph, 'gpuclient.rules.scheduler'))

    def test_no_module_circle(self):
        self.assertEqual([], layers.cycles(self.graph))

    def test_no_function_of_ops_over_80_lines(self):
        # issue 53: ops/ reads, plans and applies; a longer function is
        # doing a rule's work (or two steps' worth of reads)
        long = []
        for path in sorted(glob.glob(os.path.join(ROOT, 'gpuclient', 'ops',
                                                  '*.py'))):
            with open(path) as f:
                tree = ast.parse(f.read())
            for node in ast.walk(tree):
                if isinstance(node, ast.FunctionDef):
                    lines = node.end_lineno - node.lineno + 1
                    if lines > 80:
                        long.append('%s:%s (%d lines)' % (
                            os.path.basename(path), node.name, lines))
        self.assertEqual([], long)

    def test_the_rooms_of_rules_import_one_way(self):
        # issue 53: a folder of rules/ (scheduler/, checks/, devices/,
        # nova_conf/, profiles/, catalogue/) and each flat module is one
        # room; no two rooms may reach each other (the catalogue and the
        # one-time-use rules left profiles/ and devices/ for it)
        def room(module):
            parts = module.split('.')
            return '.'.join(parts[:3])

        rooms = collections.defaultdict(set)
        for module, imported in self.graph.items():
            if not module.startswith('gpuclient.rules.'):
                continue
            for other in imported:
                if (other.startswith('gpuclient.rules.')
                        and room(other) != room(module)):
                    rooms[room(module)].add(room(other))
        self.assertEqual([], layers.cycles(dict(rooms)))

    def test_only_the_commands_import_the_osc_entry_point(self):
        # issue 53: the journal took OSC's global parser from the plugin
        # for a re-run hint; ops.invocation builds it now
        self.assertEqual(['gpuclient.v1.common'], sorted(
            m for m, imported in self.graph.items()
            if 'gpuclient.plugin' in imported))

    def test_the_host_collector_is_a_floor_of_its_own(self):
        # issue 54: gpuclient-host-facts runs on each GPU host without OSC:
        # it reads rules' definitions and i18n, and only tests and tools
        # (tools/host_facts_samples.py, the test cloud) import it
        found = sorted(m for m in self.graph
                       if m.startswith('gpuclient.hostfacts'))
        self.assertIn('gpuclient.hostfacts.main', found)
        self.assertEqual({'hostfacts'}, {layers.floor_of(m) for m in found})
        imported = set().union(*(self.graph[m] for m in found))
        self.assertEqual({'hostfacts', 'rules', 'top'},
                         {layers.floor_of(m) for m in imported})
        self.assertEqual({'gpuclient.i18n'}, {
            m for m in imported if layers.floor_of(m) == 'top'})
        self.assertEqual({'tools'}, {
            layers.floor_of(m) for m, targets in self.graph.items()
            if not m.startswith('gpuclient.hostfacts')
            and any(t.startswith('gpuclient.hostfacts') for t in targets)})

    def test_sees_lazy_imports(self):
        # profile_ops imports maintenance_ops inside a function only
        self.assertIn('gpuclient.ops.maintenance_ops',
                      self.graph['gpuclient.ops.profile_ops'])

    def test_no_new_violation(self):
        new = sorted('%s -> %s: %s' % (a, b, rule)
                     for (a, b), rule in self.found.items()
                     if (a, b) not in KNOWN)
        self.assertEqual([], new)

    def test_known_is_not_stale(self):
        stale = sorted(pair for pair in KNOWN if pair not in self.found)
        self.assertEqual([], stale, 'mended: remove from KNOWN')


class TestOneWayToWrite(base.TestCase):
    """Every write command applies its plan through ``journal.run``."""

    def calls_of(self, attr):
        """(module file, line) of each ``journal.<attr>(`` call outside
        the journal itself."""
        found = []
        package = os.path.join(ROOT, 'gpuclient')
        for folder, dirs, files in os.walk(package):
            dirs[:] = [d for d in dirs if d != 'tests']
            for name in files:
                path = os.path.join(folder, name)
                if not name.endswith('.py') or path.endswith(
                        os.path.join('ops', 'journal.py')):
                    continue
                with open(path) as source:
                    tree = ast.parse(source.read())
                for node in ast.walk(tree):
                    if (isinstance(node, ast.Call)
                            and isinstance(node.func, ast.Attribute)
                            and node.func.attr == attr
                            and isinstance(node.func.value, ast.Name)
                            and node.func.value.id == 'journal'):
                        found.append((os.path.relpath(path, ROOT),
                                      node.lineno))
        return found

    def test_no_write_calls_apply_directly(self):
        self.assertEqual([], self.calls_of('apply'))

    def test_the_writes_call_run(self):
        # the scan sees calls: pools, flavors and quotas write through it
        modules = {path for path, _line in self.calls_of('run')}
        self.assertLessEqual({'gpuclient/ops/pool_ops.py',
                              'gpuclient/ops/flavor_ops.py',
                              'gpuclient/ops/quota_ops.py'}, modules)


# -- one way to read: ops/snapshot.py --------------------------------------

# The client layer's services (GpuClient's properties) whose calls are
# requests, and of each the calls an ops module may make outside the one
# reader: none of them reads the cloud.
CLIENT_SERVICES = {
    'compute': {
        # (a) writes (the journal makes them)
        'set_service_status', 'create_aggregate', 'set_aggregate_metadata',
        'add_host', 'remove_host', 'delete_aggregate', 'create_flavor',
        'update_flavor_description', 'set_flavor_extra_specs',
        'add_flavor_access', 'remove_flavor_access',
        'delete_flavor_extra_spec', 'delete_flavor', 'server_action',
        # no request: refuses a lower --os-compute-api-version before
        # anything is sent
        'require',
    },
    'placement': {
        # (a) writes
        'release_reserved', 'update_traits', 'update_aggregates',
        'ensure_traits', 'create_trait', 'delete_trait',
        # no request: the count of those sent (gpu candidate list shows it)
        'request_count',
    },
    'image': {'update_properties'},  # (a) a write
    'limits': {  # (a) writes
        'create_registered', 'update_registered', 'delete_registered',
        'create_limit', 'update_limit', 'delete_limit',
    },
    'baremetal': set(),
    'reservation': set(),
}
# GpuClient's own attributes that send nothing: its clouds.yaml entry
CLIENT_NOT_READS = {'cloud_config'}
# the one reader, and the journal, which reads back its own writes
READERS = ('snapshot.py', 'journal.py')
# (b) modules whose reads have not moved to ops/snapshot.py yet:
# {module: why}, every entry to go
NOT_MOVED_YET: dict[str, str] = {}
# (c) reads left where they are on purpose: {(module, 'client.x.y'): why}.
# None: the drain's read-backs (its hosts' servers and migrations, the
# services before the last cordon step) moved to snapshot.py as they were
# (servers_on, migrations_of, compute_services), in the same order.
LEFT_ON_PURPOSE: dict[tuple[str, str], str] = {}


def client_reads(source):
    """The reads of the cloud SOURCE (Python) makes through the client
    layer, as 'line: client.<service>.<call>' (or 'client.<service>'
    handed on, or 'client.<call>' of GpuClient's own, such as
    project_id): every use of a client (a name ``client``, an attribute
    ``.client``, or a parameter typed GpuClient) that is not a write or
    sends no request (CLIENT_SERVICES, CLIENT_NOT_READS)."""
    tree = ast.parse(source)
    names = {'client'}
    parents = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[child] = node
        if isinstance(node, ast.arg) and node.annotation is not None:
            if 'GpuClient' in ast.unparse(node.annotation):
                names.add(node.arg)

    def is_client(node):
        return ((isinstance(node, ast.Name) and node.id in names)
                or (isinstance(node, ast.Attribute)
                    and node.attr == 'client'))

    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and is_client(node.value)):
            continue
        if node.attr in CLIENT_NOT_READS:
            continue
        used = 'client.%s' % node.attr
        parent = parents.get(node)
        if node.attr in CLIENT_SERVICES:
            if not isinstance(parent, ast.Attribute):
                found.append('%d: %s' % (node.lineno, used))
            elif parent.attr not in CLIENT_SERVICES[node.attr]:
                found.append('%d: %s.%s' % (node.lineno, used, parent.attr))
            continue
        found.append('%d: %s' % (node.lineno, used))
    return sorted(found, key=lambda read: int(read.split(':')[0]))


def ops_reads():
    """{module file name: client_reads} of each module of gpuclient/ops/
    but the READERS."""
    found = {}
    for path in sorted(glob.glob(os.path.join(ROOT, 'gpuclient', 'ops',
                                              '*.py'))):
        name = os.path.basename(path)
        if name not in READERS:
            with open(path) as source:
                found[name] = client_reads(source.read())
    return found


class TestOneWayToRead(base.TestCase):
    """Every read of the cloud goes through ops/snapshot.py, the one
    reader, which fills ``model.Cloud`` (issue 53)."""

    def test_ops_read_only_through_the_snapshot(self):
        reads = ops_reads()
        # the scan reads the real modules
        self.assertIn('candidate_ops.py', reads)
        left = ['%s:%s' % (module, read)
                for module, found in sorted(reads.items())
                if module not in NOT_MOVED_YET
                for read in found
                if (module, read.split(': ', 1)[1]) not in LEFT_ON_PURPOSE]
        self.assertEqual([], left)

    def test_the_allow_lists_are_not_stale(self):
        reads = ops_reads()
        stale = sorted(module for module in NOT_MOVED_YET
                       if not reads.get(module))
        stale += sorted('%s:%s' % entry for entry in LEFT_ON_PURPOSE
                        if not any(read.endswith(': ' + entry[1])
                                   for read in reads.get(entry[0], ())))
        self.assertEqual([], stale, 'moved: remove from the allow-list')

    def test_the_allowed_calls_exist(self):
        # a renamed or misspelt write must not leave a name that allows
        # nothing, nor a read named as a write
        from gpuclient.cloud import baremetal
        from gpuclient.cloud import client as client_mod
        from gpuclient.cloud import compute
        from gpuclient.cloud import identity
        from gpuclient.cloud import image
        from gpuclient.cloud import placement
        from gpuclient.cloud import reservation

        classes = {'compute': compute.Compute,
                   'placement': placement.Placement,
                   'image': image.Image, 'limits': identity.Limits,
                   'baremetal': baremetal.Baremetal,
                   'reservation': reservation.Reservation}
        self.assertEqual(set(classes), set(CLIENT_SERVICES))
        for service in classes:
            self.assertIsInstance(vars(client_mod.GpuClient)[service],
                                  property)
        missing = sorted(
            '%s.%s' % (service, call)
            for service, calls in CLIENT_SERVICES.items()
            for call in calls - {'request_count'}
            if not callable(getattr(classes[service], call, None)))
        self.assertEqual([], missing)

    def test_the_scan_finds_each_way_round(self):
        source = textwrap.dedent('''\
            def collect(client, gpu: GpuClient, view):
                client.compute.require((2, 53))
                aggregates = client.compute.aggregates()
                client.compute.create_flavor(name='x')
                placement = client.placement
                pid = client.project_id('demo')
                url = client.cloud_config.get('prometheus_endpoint')
                image = view.client.image.find_image('cirros')
                limits = gpu.limits.limits()
                return client.placement.request_count
            ''')
        self.assertEqual(
            ['3: client.compute.aggregates', '5: client.placement',
             '6: client.project_id', '8: client.image.find_image',
             '9: client.limits.limits'],
            sorted(client_reads(source)))


# the modules that name write operations: the planners, the executor, the
# simulation (document_plan.simulate) and the checks of a plan's steps
OPERATION_USERS = ('gpuclient/rules/*plan*.py', 'gpuclient/ops/journal.py',
                   'gpuclient/rules/nova_rules.py')
# what the declarations module offers besides declarations
NOT_DECLARATIONS = {'NEW', 'ZONE_KEY', 'DECLARED', 'BY_NAME', 'AGGREGATE',
                    'FLAVOR', 'Operation'}


def scan(paths, problems_of):
    """PROBLEMS_OF(source) of each file of PATHS, as 'path:problem'."""
    found = []
    for path in paths:
        with open(path) as source:
            found += ['%s:%s' % (os.path.relpath(path, ROOT), problem)
                      for problem in problems_of(source.read())]
    return found


def operation_problems(source):
    """How SOURCE (Python) names a write operation other than through a
    declaration of gpuclient.rules.operations, as messages:

    * a string that is an operation's name (``'aggregate.create'``, or one
      with no declaration, ``'aggregate.rename'``);
    * ``operations.X`` where X is no declaration (nor one of the module's
      few other names);
    * ``getattr(obj, <a name built at run time>)``: a method found by a
      name made from a string (``'_do_%s' % op``).
    """
    declared = {d.__name__ for d in operations.DECLARED}
    kinds = {d.kind for d in operations.DECLARED}
    shape = re.compile(r'^(%s)\.[a-z_]+$' % '|'.join(sorted(kinds)))
    tree = ast.parse(source)
    aliases = {'operations'}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == (
                'gpuclient.rules'):
            aliases.update(a.asname or a.name for a in node.names
                           if a.name == 'operations')
    problems = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and shape.match(node.value):
            known = node.value in operations.BY_NAME
            problems.append(
                '%d: names operation %r by a string%s' % (
                    node.lineno, node.value,
                    '' if known else ' (and it has no declaration)'))
        elif (isinstance(node, ast.Attribute)
              and isinstance(node.value, ast.Name)
              and node.value.id in aliases
              and node.attr not in declared | NOT_DECLARATIONS):
            problems.append('%d: operations.%s is no declaration'
                            % (node.lineno, node.attr))
        elif (isinstance(node, ast.Call)
              and isinstance(node.func, ast.Name)
              and node.func.id == 'getattr' and len(node.args) > 1
              and not isinstance(node.args[1], ast.Constant)):
            problems.append('%d: getattr() with a name built at run time'
                            % node.lineno)
    return problems


class TestOperationsDeclaredOnce(base.TestCase):
    """The planners, the executor and the simulation name operations only
    through their declarations, and every declaration has its executor
    (do, read back) and its simulation effect."""

    def test_users_name_only_declared_operations(self):
        paths = sorted({path for pattern in OPERATION_USERS
                        for path in glob.glob(os.path.join(ROOT, pattern))})
        # the scan reads the real modules
        self.assertIn(os.path.join(ROOT, 'gpuclient/rules/plan.py'), paths)
        self.assertIn(os.path.join(ROOT, 'gpuclient/ops/journal.py'), paths)
        self.assertIn(os.path.join(ROOT, 'gpuclient/rules/document_plan.py'),
                      paths)
        self.assertEqual([], scan(paths, operation_problems))

    def test_every_declaration_is_executed_read_back_and_simulated(self):
        missing = []
        for declaration in operations.DECLARED:
            entry = journal.OPERATIONS.get(declaration)
            if entry is None or not (callable(entry.do)
                                     and callable(entry.holds)):
                missing.append('%s: no executor' % declaration.op)
            if 'effect' not in vars(declaration):
                missing.append('%s: no simulation effect' % declaration.op)
            if not declaration.read_back:
                missing.append('%s: no read-back' % declaration.op)
        self.assertEqual([], missing)
        self.assertEqual(set(operations.DECLARED), set(journal.OPERATIONS))

    def test_the_simulation_applies_the_declared_effect(self):
        # simulate is the declaration's effect: no function (nor model
        # method) of its own per operation
        names = {'_%s' % d.op.replace('.', '_') for d in operations.DECLARED}
        self.assertEqual(set(), names & (set(vars(document_plan))
                                         | set(vars(model.Cloud))))

    def test_the_scan_finds_each_way_round(self):
        source = textwrap.dedent('''\
            from gpuclient.rules import operations as ops

            def plan(step, world, op):
                if step.op == 'aggregate.create':
                    pass
                ops.AggregateRename(name='x')
                getattr(world, '_%s' % op.replace('.', '_'))(**step.args)
                return ops.AggregateCreate(name='a'), 'aggregate.rename'
            ''')
        self.assertEqual(
            ["4: names operation 'aggregate.create' by a string",
             '6: operations.AggregateRename is no declaration',
             '7: getattr() with a name built at run time',
             "8: names operation 'aggregate.rename' by a string (and it "
             "has no declaration)"],
            sorted(operation_problems(source)))


class TestChecker(base.TestCase):
    """The checker on a tiny package written to a temporary directory."""

    def setUp(self):
        super().setUp()
        self.root = self.useFixture(fixtures.TempDir()).path
        for package in ('gpuclient', 'gpuclient/v1', 'gpuclient/ops',
                        'gpuclient/rules', 'gpuclient/cloud',
                        'gpuclient/tests'):
            self.write(package + '/__init__.py', '')
        self.write('gpuclient/i18n.py', '')
        self.write('gpuclient/plugin.py', 'from gpuclient.cloud import api\n')
        self.write('gpuclient/cloud/api.py', 'from gpuclient import i18n\n')
        self.write('gpuclient/rules/specs.py', 'X = 1\n')
        self.write('gpuclient/ops/pools.py',
                   'from gpuclient.rules import specs as s\n'
                   'import gpuclient.cloud.api\n')
        self.write('gpuclient/v1/common.py', '')
        self.write('gpuclient/v1/pool.py',
                   'from gpuclient.ops import pools\n'
                   'from gpuclient.rules.specs import X\n'
                   'from gpuclient.v1 import common\n')

    def write(self, rel, text):
        path = os.path.join(self.root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'w') as f:
            f.write(textwrap.dedent(text))

    def pairs(self):
        return [(a, b) for a, b, _ in
                layers.violations(layers.graph(self.root))]

    def test_clean_package(self):
        self.assertEqual([], self.pairs())

    def test_import_forms(self):
        g = layers.graph(self.root)
        self.assertEqual({'gpuclient.rules.specs', 'gpuclient.cloud.api'},
                         g['gpuclient.ops.pools'])
        self.assertEqual({'gpuclient.ops.pools', 'gpuclient.rules.specs',
                          'gpuclient.v1.common'},
                         g['gpuclient.v1.pool'])
        self.assertEqual({'gpuclient.i18n'}, g['gpuclient.cloud.api'])

    def test_floor_of(self):
        self.assertEqual('v1', layers.floor_of('gpuclient.v1'))
        self.assertEqual('rules', layers.floor_of('gpuclient.rules.specs'))
        self.assertEqual('top', layers.floor_of('gpuclient.formatters'))
        self.assertEqual('top', layers.floor_of('gpuclient'))
        self.assertEqual('tools', layers.floor_of('tools.bench_startup'))
        self.assertIsNone(layers.floor_of('osc_lib.command'))

    def test_rules_importing_cloud(self):
        self.write('gpuclient/rules/fit.py',
                   'from gpuclient.cloud import api\n')
        self.assertEqual([('gpuclient.rules.fit', 'gpuclient.cloud.api')],
                         self.pairs())

    def test_cloud_importing_rules(self):
        self.write('gpuclient/cloud/api.py',
                   'from gpuclient.rules.specs import X\n')
        self.assertEqual([('gpuclient.cloud.api', 'gpuclient.rules.specs')],
                         self.pairs())

    def test_ops_importing_v1(self):
        self.write('gpuclient/ops/flavors.py',
                   'import gpuclient.v1.pool\n')
        self.assertEqual([('gpuclient.ops.flavors', 'gpuclient.v1.pool')],
                         self.pairs())

    def test_v1_importing_cloud(self):
        self.write('gpuclient/v1/host.py',
                   'from gpuclient.cloud import api as client_mod\n')
        self.assertEqual([('gpuclient.v1.host', 'gpuclient.cloud.api')],
                         self.pairs())

    def test_v1_importing_a_sibling(self):
        self.write('gpuclient/v1/flavor.py',
                   'from gpuclient.v1 import common\n'
                   'from gpuclient.v1 import pool as pool_cmd\n')
        self.assertEqual([('gpuclient.v1.flavor', 'gpuclient.v1.pool')],
                         self.pairs())

    def test_lazy_import_in_a_function(self):
        self.write('gpuclient/rules/fit.py', '''\
            def fit():
                if True:
                    from gpuclient.ops import pools
                return pools
            ''')
        self.assertEqual([('gpuclient.rules.fit', 'gpuclient.ops.pools')],
                         self.pairs())

    def test_relative_imports(self):
        self.write('gpuclient/rules/fit.py',
                   'from . import specs\n'
                   'from ..ops import pools\n'
                   'from .. import i18n\n')
        g = layers.graph(self.root)
        self.assertEqual({'gpuclient.rules.specs', 'gpuclient.ops.pools',
                          'gpuclient.i18n'}, g['gpuclient.rules.fit'])
        self.assertEqual([('gpuclient.rules.fit', 'gpuclient.ops.pools')],
                         self.pairs())

    def test_tools_importing_v1(self):
        self.write('tools/bench.py', 'from gpuclient.v1 import pool\n')
        self.write('tools/script', '#!/usr/bin/env python3\n'
                   'from gpuclient.v1 import pool\n')
        self.write('tools/notes', 'from gpuclient.v1 import pool\n')
        self.assertEqual([('tools.bench', 'gpuclient.v1.pool'),
                          ('tools.script', 'gpuclient.v1.pool')],
                         self.pairs())

    def test_top_level_importing_a_floor(self):
        self.write('gpuclient/i18n.py', 'from gpuclient.rules import specs\n')
        self.assertEqual([('gpuclient.i18n', 'gpuclient.rules.specs')],
                         self.pairs())

    def test_hostfacts_imports_rules_and_i18n_only(self):
        self.write('gpuclient/hostfacts/__init__.py', '')
        self.write('gpuclient/hostfacts/main.py',
                   'from gpuclient.rules import specs\n'
                   'from gpuclient import i18n\n'
                   'from gpuclient.hostfacts import read\n')
        self.write('gpuclient/hostfacts/read.py', '')
        self.assertEqual([], self.pairs())
        self.write('gpuclient/hostfacts/read.py',
                   'from gpuclient.ops import pools\n'
                   'from gpuclient import plugin\n'
                   'import gpuclient.cloud.api\n')
        self.assertEqual([('gpuclient.hostfacts.read', 'gpuclient.cloud.api'),
                          ('gpuclient.hostfacts.read', 'gpuclient.ops.pools'),
                          ('gpuclient.hostfacts.read', 'gpuclient.plugin')],
                         self.pairs())
        self.assertEqual('hostfacts',
                         layers.floor_of('gpuclient.hostfacts.main'))

    def test_only_tests_and_tools_import_hostfacts(self):
        self.write('gpuclient/hostfacts/__init__.py', '')
        self.write('gpuclient/hostfacts/main.py', '')
        for path in ('gpuclient/ops/facts.py', 'gpuclient/v1/facts.py',
                     'gpuclient/rules/facts.py', 'gpuclient/formatters.py',
                     'tools/facts.py', 'gpuclient/tests/test_facts.py'):
            self.write(path, 'from gpuclient.hostfacts import main\n')
        self.assertEqual(
            [('gpuclient.formatters', 'gpuclient.hostfacts.main'),
             ('gpuclient.ops.facts', 'gpuclient.hostfacts.main'),
             ('gpuclient.rules.facts', 'gpuclient.hostfacts.main'),
             ('gpuclient.v1.facts', 'gpuclient.hostfacts.main')],
            self.pairs())

    def test_tests_are_not_read(self):
        self.write('gpuclient/tests/test_x.py',
                   'from gpuclient.cloud import api\n'
                   'from gpuclient.v1 import pool\n')
        self.assertNotIn('gpuclient.tests.test_x', layers.graph(self.root))
        self.assertEqual([], self.pairs())

    def test_back_into_a_package(self):
        imports = {
            'gpuclient.rules.sched.a': {'gpuclient.rules.specs'},
            'gpuclient.rules.sched.b': set(),
            'gpuclient.rules.specs': {'gpuclient.rules.pools'},
            'gpuclient.rules.pools': {'gpuclient.rules.sched.b'},
            'gpuclient.rules.other': {'gpuclient.rules.sched.a'},
        }
        self.assertEqual(
            [('gpuclient.rules.pools', 'gpuclient.rules.sched.b')],
            layers.back_into(imports, 'gpuclient.rules.sched'))
        imports['gpuclient.rules.pools'] = set()
        self.assertEqual([], layers.back_into(imports,
                                              'gpuclient.rules.sched'))

    def test_cycles(self):
        imports = {'a': {'b'}, 'b': {'c'}, 'c': {'a', 'd'}, 'd': {'e'},
                   'e': {'d'}, 'f': {'a'}}
        self.assertEqual([['a', 'b', 'c'], ['d', 'e']],
                         layers.cycles(imports))
        self.assertEqual([], layers.cycles({'a': {'b'}, 'b': set()}))

    def test_diagram_counts(self):
        text = layers.diagram(layers.graph(self.root))
        self.assertIn('v1     -> ops    (1 import)', text)
        self.assertIn('ops    -> cloud  (1 import)', text)
        self.write('gpuclient/rules/fit.py',
                   'from gpuclient.cloud import api\n')
        text = layers.diagram(layers.graph(self.root))
        self.assertIn('rules  -> cloud  (1 import; 1 breaks a rule)', text)
        self.assertEqual(['gpuclient.rules', 'gpuclient.rules.fit',
                          'gpuclient.rules.specs'],
                         layers.modules_by_floor(
                             layers.graph(self.root))['rules'])

    def test_script_exit_status(self):
        self.assertEqual(0, layers.main([self.root]))
        self.write('gpuclient/ops/flavors.py', 'import gpuclient.v1.pool\n')
        self.assertEqual(1, layers.main([self.root]))
