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

"""tools/run-functional's second stream and the functional test classes'
lanes agree: every class on lane B's hosts (``lane = 'b'``, itself or by
inheritance in its module) runs in the second stream, and no class on lane
A's hosts does, but for the fault matrices on their own leased hosts. Read
from the sources (importing the functional tests would ask a cloud)."""

import ast
import os
import re

import testtools

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
FUNCTIONAL = os.path.join(TOP, 'gpuclient', 'tests', 'functional')
# the second stream's classes that are not lane B: on hosts of their own
# (fault-vgpu-1, fault-mig-1), leased
FAULT_MODULES = ('test_faults', 'test_hung')


def second_stream():
    with open(os.path.join(TOP, 'tools', 'run-functional')) as src:
        found = re.search(r"^FAULT_TESTS='([^']*)'", src.read(), re.M)
    return re.compile('^' + found.group(1))


def lanes():
    """{test id prefix 'gpuclient.tests.functional.<module>.<Class>.':
    lane} of every class with a test method."""
    found = {}
    for name in sorted(os.listdir(FUNCTIONAL)):
        if not (name.startswith('test_') and name.endswith('.py')):
            continue
        module = name[:-3]
        with open(os.path.join(FUNCTIONAL, name)) as src:
            tree = ast.parse(src.read())
        own, bases, tests = {}, {}, set()
        for node in tree.body:
            if not isinstance(node, ast.ClassDef):
                continue
            bases[node.name] = [b.id for b in node.bases
                                if isinstance(b, ast.Name)]
            for item in node.body:
                if (isinstance(item, ast.Assign)
                        and [getattr(t, 'id', None) for t in item.targets]
                        == ['lane']):
                    own[node.name] = item.value.value
                if (isinstance(item, ast.FunctionDef)
                        and item.name.startswith('test_')):
                    tests.add(node.name)

        def lane(cls, own=own, bases=bases):
            if cls in own:
                return own[cls]
            for base in bases.get(cls, ()):
                if base in bases:
                    return lane(base, own, bases)
            return 'a'

        for cls in tests:
            found['gpuclient.tests.functional.%s.%s.' % (module, cls)] = (
                lane(cls))
    return found


class TestStreams(testtools.TestCase):

    def test_lane_b_classes_run_in_the_second_stream_alone(self):
        stream = second_stream()
        classes = lanes()
        self.assertIn('b', classes.values())
        wrong = sorted(prefix for prefix, lane in classes.items()
                       if (lane == 'b') != bool(stream.match(prefix))
                       and prefix.split('.')[3] not in FAULT_MODULES)
        self.assertEqual([], wrong)
        # every fault matrix is there too (each on a leased pair of fault
        # hosts), not a lane-A neighbour of lane-B classes
        for cls in ('TestPoolFaults', 'TestConcurrency', 'TestInterrupts',
                    'TestQuotaFaults'):
            self.assertTrue(stream.match('gpuclient.tests.functional.'
                                         'test_faults.%s.' % cls))
        self.assertFalse(stream.match('gpuclient.tests.functional.'
                                      'test_maintenance.TestDrainReadBack.'))

    def test_no_second_stream_class_writes_to_lane_a_hosts(self):
        """A class of the second stream that is not lane B (a fault
        matrix on its leased fault hosts) names none of lane A's hosts:
        while it runs, lane A's tests boot there (TestConcurrency's
        isolated pools on gpu-pt-1 took a lane-A boot's host away)."""
        lane_a_hosts = {'PT_HOST', 'PT_HOST2', 'VGPU_HOST', 'VGPU_HOST2',
                        'PLAIN_HOST'}
        stream = second_stream()
        classes = lanes()
        wrong = []
        for module in FAULT_MODULES:
            with open(os.path.join(FUNCTIONAL, module + '.py')) as src:
                tree = ast.parse(src.read())
            for node in tree.body:
                if not isinstance(node, ast.ClassDef):
                    continue
                prefix = 'gpuclient.tests.functional.%s.%s.' % (module,
                                                                node.name)
                if not stream.match(prefix) or classes.get(prefix) == 'b':
                    continue
                wrong += ['%s: base.%s' % (node.name, n.attr)
                          for n in ast.walk(node)
                          if isinstance(n, ast.Attribute)
                          and isinstance(n.value, ast.Name)
                          and n.value.id == 'base'
                          and n.attr in lane_a_hosts]
        self.assertEqual([], wrong)


# what a test class writes when it creates or deletes the registered
# limit of a class lane B's servers ask for (test_quota's
# forget_registered, a "gpu quota delete --default")
REGISTERED_WRITES = ('forget_registered(', "'--default', '--resource-class'")


def _class_sources():
    """{(module, class): (its source, [base names])} of every functional
    test module's classes."""
    found = {}
    for name in sorted(os.listdir(FUNCTIONAL)):
        if not (name.startswith('test_') and name.endswith('.py')):
            continue
        with open(os.path.join(FUNCTIONAL, name)) as src:
            text = src.read()
        for node in ast.parse(text).body:
            if isinstance(node, ast.ClassDef):
                found[(name[:-3], node.name)] = (
                    ast.get_source_segment(text, node),
                    [ast.unparse(b) for b in node.bases])
    return found


class TestRegisteredLimits(testtools.TestCase):

    def test_classes_that_write_registered_limits_keep_lane_b_out(self):
        """Run 13: a lane-B boot refused as over a limit of 0 while a
        lane-A class made the passthrough class's registered limit."""
        classes = _class_sources()
        writers = sorted(
            key for key, (text, _bases) in classes.items()
            if any(w in text for w in REGISTERED_WRITES)
            # of the passthrough class or VGPU (test_trust_quota and the
            # contract tests write limits of classes of their own)
            and ('PT_CLASS' in text or "'VGPU'" in text))
        self.assertIn(('test_quota', 'TestQuota'), writers)

        def keeps_out(key):
            _text, bases = classes[key]
            return 'base.KeepsLaneBOut' in bases or any(
                keeps_out((key[0], b)) for b in bases
                if (key[0], b) in classes)

        self.assertEqual([], [k for k in writers if not keeps_out(k)])
