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

"""requirements.txt and test-requirements.txt name what the code imports.

Every module gpuclient/ imports (outside the tests) is the standard
library, gpuclient, or a package of requirements.txt; every module the
tests import is also allowed from test-requirements.txt. An import inside
``try: ... except ImportError`` is optional: in gpuclient/ it is a
package of one of setup.cfg's extras (gpuclient.extras), in the tests
anything (the Nova differential test).
"""

import ast
import configparser
import importlib.metadata
import os
import re
import sys

import fixtures

import gpuclient
from gpuclient.tests.unit import base

PACKAGE = os.path.dirname(os.path.abspath(gpuclient.__file__))
ROOT = os.path.dirname(PACKAGE)
TESTS = os.path.join(PACKAGE, 'tests')


def normalize(name):
    return re.sub(r'[-_.]+', '-', name).lower()


def requirement_names(path):
    """Normalized distribution names in a pip requirements file."""
    found = set()
    with open(path) as text:
        for line in text:
            match = re.match(r'\s*([A-Za-z0-9][A-Za-z0-9._-]*)', line)
            if match and not line.lstrip().startswith(('#', '-')):
                found.add(normalize(match.group(1)))
    return found


_CATCH_IMPORT_ERROR = ('ImportError', 'ModuleNotFoundError', 'Exception',
                       'BaseException')


def _catches_import_error(handler):
    if handler.type is None:
        return True
    types = (handler.type.elts if isinstance(handler.type, ast.Tuple)
             else [handler.type])
    return any(isinstance(t, ast.Name) and t.id in _CATCH_IMPORT_ERROR
               for t in types)


def _have_flag(node):
    """Whether NODE is an ``if`` on a ``HAVE_*`` flag (the unit tests'
    ``if nova_harness.HAVE_NOVA:``: it imports only where Nova did)."""
    if not isinstance(node, ast.If):
        return False
    test = node.test
    name = test.attr if isinstance(test, ast.Attribute) else getattr(
        test, 'id', '')
    return name.startswith('HAVE_')


def _optional(node, parents):
    """Whether an import sits in a try whose handlers catch ImportError,
    or in the body of an ``if`` on a ``HAVE_*`` flag."""
    chain = parents.get(node, ())
    for i, parent in enumerate(chain):
        if isinstance(parent, ast.Try) and any(
                _catches_import_error(h) for h in parent.handlers):
            return True
        child = chain[i + 1] if i + 1 < len(chain) else node
        if _have_flag(parent) and child in parent.body:
            return True
    return False


def imported_modules(source, optional=False):
    """Top-level names of the modules SOURCE imports, optional ones out
    (with OPTIONAL: only the optional ones)."""
    tree = ast.parse(source)
    parents = {}

    def walk(node, chain):
        for child in ast.iter_child_nodes(node):
            parents[child] = chain + (node,)
            walk(child, chain + (node,))

    walk(tree, ())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names = [node.module]
        else:
            continue
        if _optional(node, parents) != optional:
            continue
        found.update(name.split('.')[0] for name in names)
    return found


def third_party(paths, optional=False):
    """{top-level module: files} for modules not stdlib nor gpuclient
    (with OPTIONAL: those imported as optional)."""
    found = {}
    for path in paths:
        with open(path) as src:
            for name in imported_modules(src.read(), optional):
                if name in sys.stdlib_module_names or name == 'gpuclient':
                    continue
                found.setdefault(name, []).append(
                    os.path.relpath(path, ROOT))
    return found


def python_files(top, skip=None):
    for folder, dirs, files in os.walk(top):
        if skip and os.path.abspath(folder) == skip:
            dirs[:] = []
            continue
        for name in files:
            if name.endswith('.py'):
                yield os.path.join(folder, name)


class TestImportedModules(base.TestCase):
    def test_optional_and_nested_imports(self):
        source = (
            'import os\n'
            'from a.b import c\n'
            'def f():\n'
            '    import d\n'
            'try:\n'
            '    import nova.conf\n'
            'except ImportError:\n'
            '    nova = None\n'
            'try:\n'
            '    import e\n'
            'finally:\n'
            '    pass\n'
            'try:\n'
            '    with x:\n'
            '        import f\n'
            'except (ValueError, Exception):\n'
            '    pass\n'
            'try:\n'
            '    import g\n'
            'except ValueError:\n'
            '    pass\n'
            'if nova_harness.HAVE_NOVA:\n'
            '    with quiet():\n'
            '        import h\n'
            'else:\n'
            '    import i\n'
            'if HAVE_BLAZAR:\n'
            '    import j\n'
            'if ready:\n'
            '    import k\n'
            'from . import sibling\n')
        self.assertEqual({'os', 'a', 'd', 'e', 'g', 'i', 'k'},
                         imported_modules(source))
        self.assertEqual({'nova', 'f', 'h', 'j'},
                         imported_modules(source, optional=True))

    def test_requirement_names(self):
        path = self.useFixture(fixtures.TempDir()).join('r.txt')
        with open(path, 'w') as out:
            out.write('# comment\npbr>=6.1.1 # Apache-2.0\n'
                      'oslo.i18n>=3.15.3\n-r other.txt\nPyYAML>=6.0\n')
        self.assertEqual({'pbr', 'oslo-i18n', 'pyyaml'},
                         requirement_names(path))


class TestRequirementFiles(base.TestCase):
    def setUp(self):
        super().setUp()
        if not os.path.exists(os.path.join(ROOT, 'requirements.txt')):
            self.skipTest('not a source tree (no requirements.txt)')
        self.distributions = importlib.metadata.packages_distributions()

    def missing(self, modules, allowed):
        """Modules whose distribution is not ALLOWED, with their files."""
        wrong = {}
        for module, files in sorted(modules.items()):
            dists = {normalize(d)
                     for d in self.distributions.get(module, ())}
            if not dists & allowed:
                wrong[module] = (sorted(dists) or ['not installed'],
                                 sorted(files))
        return wrong

    def test_package_imports_are_requirements(self):
        runtime = requirement_names(os.path.join(ROOT, 'requirements.txt'))
        modules = third_party(python_files(PACKAGE, skip=TESTS))
        # what gpuclient imports today, so the check cannot pass empty
        self.assertIn('osc_lib', modules)
        self.assertEqual({}, self.missing(modules, runtime))

    def test_package_optional_imports_are_extras(self):
        # an optional import of gpuclient/ is a package of an extra (or
        # a requirement guarded all the same: the plugin's of OSC), and
        # none of the extras' packages is a requirement
        extras = set().union(*extra_names(
            os.path.join(ROOT, 'setup.cfg')).values())
        runtime = requirement_names(os.path.join(ROOT, 'requirements.txt'))
        modules = third_party(python_files(PACKAGE, skip=TESTS),
                              optional=True)
        # the extras' modules today, so the check cannot pass empty
        self.assertIn('highspy', modules)
        self.assertIn('prometheus_client', modules)
        self.assertEqual({}, self.missing(modules, extras | runtime))
        self.assertEqual(set(), runtime & extras)

    def test_test_imports_are_requirements(self):
        allowed = (
            requirement_names(os.path.join(ROOT, 'requirements.txt'))
            | requirement_names(os.path.join(ROOT, 'test-requirements.txt')))
        modules = third_party(python_files(TESTS))
        self.assertIn('testtools', modules)
        self.assertEqual({}, self.missing(modules, allowed))


def extra_names(setup_cfg):
    """{extra: normalized distribution names} of setup.cfg's [extras]."""
    config = configparser.ConfigParser()
    config.read(setup_cfg)
    return {extra: {normalize(re.match(r'[A-Za-z0-9._-]+', line).group())
                    for line in text.split() if line}
            for extra, text in config['extras'].items()}


def floors(path):
    """{normalized name: floor} of the ``NAME>=X`` lines of a requirements
    file or of setup.cfg's extras (one requirement a line)."""
    found = {}
    with open(path) as text:
        for line in text:
            match = re.match(r'\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*>=\s*'
                             r'([0-9][^\s,;#]*)', line)
            if match:
                found[normalize(match.group(1))] = match.group(2)
    return found


def pins(path):
    """{normalized name: version} of a constraints file's ``NAME==X``."""
    found = {}
    with open(path) as text:
        for line in text:
            match = re.match(r'\s*([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)',
                             line)
            if match:
                found[normalize(match.group(1))] = match.group(2)
    return found


class TestFloors(base.TestCase):
    """lower-constraints.txt pins exactly the floors of requirements.txt
    and of setup.cfg's extras, and tox -e py3-floors (GPUCLIENT_FLOORS=1)
    runs with exactly those releases installed."""

    def setUp(self):
        super().setUp()
        self.constraints = os.path.join(ROOT, 'lower-constraints.txt')
        if not os.path.exists(self.constraints):
            self.skipTest('not a source tree (no lower-constraints.txt)')

    def declared(self):
        config = configparser.ConfigParser()
        config.read(os.path.join(ROOT, 'setup.cfg'))
        extras = self.useFixture(fixtures.TempDir()).join('extras.txt')
        with open(extras, 'w') as out:
            out.write('\n'.join(config['extras'].values()))
        found = floors(os.path.join(ROOT, 'requirements.txt'))
        found.update(floors(extras))
        return found

    def test_constraints_are_the_floors(self):
        declared = self.declared()
        # what requirements.txt and the extra declare today
        self.assertIn('python-openstackclient', declared)
        self.assertIn('highspy', declared)
        self.assertEqual(declared, pins(self.constraints))

    def test_floors_file_parsers(self):
        path = self.useFixture(fixtures.TempDir()).join('r.txt')
        with open(path, 'w') as out:
            out.write('# a>=1\ncliff>=4.0.0 # Apache-2.0\n'
                      'oslo.i18n>=3.15.3\nPyYAML==6.0\n')
        self.assertEqual({'cliff': '4.0.0', 'oslo-i18n': '3.15.3'},
                         floors(path))
        self.assertEqual({'pyyaml': '6.0'}, pins(path))

    def test_floors_are_installed(self):
        if os.environ.get('GPUCLIENT_FLOORS') != '1':
            self.skipTest('tox -e py3-floors checks the installed floors')
        installed = {name: importlib.metadata.version(name)
                     for name in pins(self.constraints)}
        self.assertEqual(pins(self.constraints), installed)


def _dependencies(names):
    """Normalized names of the installed distributions NAMES need, NAMES
    included, through their metadata (extras and markers left out)."""
    found, todo = set(), [normalize(n) for n in names]
    while todo:
        name = todo.pop()
        if name in found:
            continue
        found.add(name)
        try:
            requires = importlib.metadata.requires(name) or ()
        except importlib.metadata.PackageNotFoundError:
            continue
        for line in requires:
            if 'extra ==' in line:
                continue
            match = re.match(r'\s*([A-Za-z0-9][A-Za-z0-9._-]*)', line)
            if match:
                todo.append(normalize(match.group(1)))
    return found


class TestStartUpDependencies(base.TestCase):
    """What gpuclient's requirements add to an OSC install holds none of
    the optional dependencies: no package of an extra nor of what it
    requires (prometheus-client: openstacksdk imports it on every
    ``openstack`` command where it is installed; highspy and numpy), and
    no attrs or jsonschema (where attrs is installed every ``openstack``
    command imports it: rich, which cmd2 loads for OSC's shell, imports
    attrs when it can). test_startup checks that gpuclient itself imports
    none of them on a command that does not use them."""

    def test_no_optional_dependency_beyond_osc(self):
        path = os.path.join(ROOT, 'requirements.txt')
        if not os.path.exists(path):
            self.skipTest('not a source tree (no requirements.txt)')
        added = (_dependencies(requirement_names(path))
                 - _dependencies(['python-openstackclient']))
        optional = _dependencies(set().union(*extra_names(
            os.path.join(ROOT, 'setup.cfg')).values()))
        optional |= {'attrs', 'jsonschema'}
        self.assertEqual(set(), added & optional)
        # the walk itself: jsonschema (a test requirement) needs attrs,
        # highspy (the profiles extra) numpy
        self.assertIn('attrs', _dependencies(['jsonschema']))
        self.assertIn('numpy', optional)
        self.assertIn('prometheus-client', optional)


class TestPackaging(base.TestCase):
    """setup.cfg's Python classifiers agree with python_requires and name
    the interpreter the tests run on; the licence file is there."""

    def setUp(self):
        super().setUp()
        self.setup_cfg = os.path.join(ROOT, 'setup.cfg')
        if not os.path.exists(self.setup_cfg):
            self.skipTest('not a source tree (no setup.cfg)')
        self.config = configparser.ConfigParser()
        self.config.read(self.setup_cfg)

    def minors(self):
        text = self.config['metadata']['classifier']
        return sorted(int(m) for m in re.findall(
            r'Programming Language :: Python :: 3\.(\d+)$', text, re.M))

    def test_classifiers_start_at_python_requires(self):
        required = self.config['metadata']['python_requires']
        match = re.fullmatch(r'>=\s*3\.(\d+)', required.strip())
        self.assertIsNotNone(match, required)
        minors = self.minors()
        self.assertEqual(int(match.group(1)), minors[0])
        # no gaps: every version from the lowest to the highest
        self.assertEqual(list(range(minors[0], minors[-1] + 1)), minors)

    def test_running_python_is_listed(self):
        self.assertIn(sys.version_info.minor, self.minors())

    def test_license_is_apache_2(self):
        with open(os.path.join(ROOT, 'LICENSE')) as text:
            license_text = text.read()
        self.assertIn('Apache License\n                           Version 2.0',
                      license_text)
        self.assertIn('END OF TERMS AND CONDITIONS', license_text)
        self.assertEqual('Apache-2.0', self.config['metadata']['license'])

    def test_no_deprecated_licence_classifier(self):
        # PEP 639: the licence is the SPDX expression of license =; the
        # "License ::" classifiers are deprecated (setuptools warns, PyPI
        # will refuse both together)
        self.assertNotIn('License ::', self.config['metadata']['classifier'])

    def test_man_page_built_by_the_docs_env(self):
        # openstack-gpu(1) from the CLI reference, in tox -e docs
        with open(os.path.join(ROOT, 'doc', 'source', 'conf.py')) as text:
            namespace = {'__file__': os.path.join(ROOT, 'doc', 'source',
                                                  'conf.py')}
            exec(compile(text.read(), 'conf.py', 'exec'), namespace)
        self.assertEqual([('cli/index', 'openstack-gpu', 1)],
                         [(m[0], m[1], m[4])
                          for m in namespace['man_pages']])
        tox = configparser.ConfigParser(interpolation=None)
        tox.read(os.path.join(ROOT, 'tox.ini'))
        self.assertIn('-b man', tox['testenv:docs']['commands'])

    def test_extras(self):
        # highspy (numpy) only with pip install "gpuclient[profiles]",
        # prometheus-client only with "gpuclient[metrics]"; the tests
        # install both. pbr builds the package and is not a run-time
        # requirement
        self.assertEqual({'profiles': {'highspy'},
                          'metrics': {'prometheus-client'}},
                         extra_names(self.setup_cfg))
        runtime = requirement_names(os.path.join(ROOT, 'requirements.txt'))
        tests = requirement_names(
            os.path.join(ROOT, 'test-requirements.txt'))
        for name in ('highspy', 'prometheus-client'):
            self.assertNotIn(name, runtime)
            self.assertIn(name, tests)
        self.assertNotIn('pbr', runtime)
        tox = configparser.ConfigParser(interpolation=None)
        tox.read(os.path.join(ROOT, 'tox.ini'))
        self.assertEqual(['metrics', 'profiles'],
                         sorted(tox['testenv']['extras'].split()))

    def test_wheel_ships_no_tests(self):
        # setup.py's build_py (pbr adds it: [global] commands) leaves out
        # gpuclient.tests, as packages and as package data
        import importlib.util

        self.assertEqual('setup.BuildPy',
                         self.config['global']['commands'].strip())
        spec = importlib.util.spec_from_file_location(
            'setup', os.path.join(ROOT, 'setup.py'))
        setup = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(setup)
        # setuptools as setup.py imports it (a build requirement)
        cmd = setup.BuildPy(setup.setuptools.Distribution({'packages': [
            'gpuclient', 'gpuclient.v1', 'gpuclient.tests',
            'gpuclient.tests.unit', 'gpuclient.tests.functional']}))
        cmd.finalize_options()
        self.assertEqual(['gpuclient', 'gpuclient.v1'], cmd.packages)
        self.assertEqual(['gpuclient/i18n.py'], cmd.exclude_data_files(
            'gpuclient', 'gpuclient', ['gpuclient/i18n.py',
                                       'gpuclient/tests/unit/base.py']))
