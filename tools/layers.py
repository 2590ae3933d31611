#!/usr/bin/env python3
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

"""The floors of gpuclient and the imports between them, read from the code.

    python3 tools/layers.py [ROOT]

ROOT is the repository (default: the one holding this file). Every module
under gpuclient/ (gpuclient/tests excepted) and every Python file under
tools/ is parsed with ast; every import of a gpuclient module counts,
including one inside a function. Prints the imports that break the floor
rules, then the floors and how many imports go from each to each. Exits 1
when an import breaks a rule.

Standard library only. gpuclient/tests/unit/test_layers.py and the docs'
gpuclient-layers directive load this file by path and call graph(),
violations(), diagram() and modules_by_floor().
"""

import ast
import collections
import os
import sys

PACKAGE = 'gpuclient'

# Top to bottom. 'top' is plugin, i18n, formatters and the package itself:
# OSC wiring that anyone may import. 'hostfacts' is the host collector's
# console script (gpuclient-host-facts), an entry point beside v1 that
# runs without OSC: it reads rules' definitions and i18n only, and only
# the tests and tools (the test cloud's collector runs) import it.
FLOORS = ('tools', 'v1', 'hostfacts', 'ops', 'rules', 'cloud', 'top')
SUBPACKAGES = ('v1', 'hostfacts', 'ops', 'rules', 'cloud', 'tests')
V1_SHARED = frozenset({PACKAGE + '.v1', PACKAGE + '.v1.common'})
# the top-level modules the collector may import (no OSC wiring)
HOSTFACTS_TOP = frozenset({PACKAGE + '.i18n'})


def floor_of(module):
    """The floor of a dotted module name, or None outside gpuclient/tools.

    >>> floor_of('gpuclient.rules.specs')
    'rules'
    >>> floor_of('gpuclient.plugin')
    'top'
    """
    parts = module.split('.')
    if parts[0] == 'tools':
        return 'tools'
    if parts[0] != PACKAGE:
        return None
    if len(parts) > 1 and parts[1] in SUBPACKAGES:
        return parts[1]
    return 'top'


def rule_broken(importer, imported):
    """The rule that importer importing imported breaks, or None."""
    a, b = floor_of(importer), floor_of(imported)
    if b == 'tests' and a != 'tests':
        return 'only tests import gpuclient.tests'
    if b == 'hostfacts' and a not in ('hostfacts', 'tests', 'tools'):
        return ('only tests and tools import gpuclient.hostfacts (the '
                "host collector's console script)")
    if a == 'hostfacts' and b not in ('hostfacts', 'rules') and (
            imported not in HOSTFACTS_TOP):
        return ('hostfacts imports only rules and gpuclient.i18n (it '
                'starts without OSC)')
    if a == 'rules' and b in ('v1', 'ops', 'cloud'):
        return 'rules is pure: it imports no v1, ops or cloud'
    if a == 'cloud' and b in ('v1', 'ops', 'rules'):
        return 'cloud is the I/O only: it imports no rules, ops or v1'
    if a == 'ops' and b == 'v1':
        return 'ops imports no v1 command module'
    if a == 'v1' and b == 'cloud':
        return 'v1 reaches the cloud through ops, never directly'
    if a == 'v1' and b == 'v1' and imported not in V1_SHARED:
        return ('a v1 module imports no other v1 command module '
                '(gpuclient.v1.common is the shared one)')
    if a == 'tools' and b == 'v1':
        return 'tools call ops, never a v1 command module'
    if a == 'top' and b != 'top':
        if importer == PACKAGE + '.plugin' and b == 'cloud':
            return None  # the plugin builds the lazy client
        return ('top-level modules import only each other '
                '(plugin may import cloud)')
    return None


def _is_python_script(path):
    try:
        with open(path, 'rb') as f:
            first = f.readline(200)
    except OSError:
        return False
    return first.startswith(b'#!') and b'python' in first


def _module_name(rel_path):
    """'gpuclient/rules/specs.py' -> 'gpuclient.rules.specs'."""
    base, ext = os.path.splitext(rel_path)
    if ext != '.py':
        base = rel_path
    parts = base.split(os.sep)
    if parts[-1] == '__init__':
        parts = parts[:-1]
    return '.'.join(parts)


def sources(root):
    """{module: path}: gpuclient's modules (tests too) and tools' files."""
    found = {}
    for top in (PACKAGE, 'tools'):
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames[:] = sorted(d for d in dirnames
                                 if d != '__pycache__')
            for name in sorted(filenames):
                path = os.path.join(dirpath, name)
                if not (name.endswith('.py') or (
                        top == 'tools' and '.' not in name
                        and _is_python_script(path))):
                    continue
                rel = os.path.relpath(path, root)
                found[_module_name(rel)] = path
    return found


def _is_ours(name):
    return name == PACKAGE or name.startswith(PACKAGE + '.')


def imports_of(module, path, known):
    """The gpuclient modules that one file imports, anywhere in it."""
    with open(path, encoding='utf-8') as f:
        tree = ast.parse(f.read(), filename=path)
    is_package = os.path.basename(path) == '__init__.py'
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _is_ours(alias.name):
                    found.add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = module.split('.')
                if not is_package:
                    parts = parts[:-1]
                if node.level > 1:
                    parts = parts[:-(node.level - 1)]
                base = '.'.join(parts + ([node.module]
                                         if node.module else []))
            else:
                base = node.module
            if not _is_ours(base):
                continue
            for alias in node.names:
                sub = base + '.' + alias.name
                # from gpuclient.rules import specs: the module specs;
                # from gpuclient.rules.specs import X: the module that
                # holds X.
                found.add(sub if sub in known else base)
    found.discard(module)
    return found


def graph(root):
    """{module: set of gpuclient modules it imports} for gpuclient/ (not
    gpuclient/tests) and tools/ under root."""
    known = sources(root)
    result = {}
    for module, path in known.items():
        if floor_of(module) == 'tests':
            continue
        result[module] = imports_of(module, path, known)
    return result


def violations(imports):
    """Sorted (importer, imported, rule) for each import breaking a rule."""
    found = []
    for importer, targets in imports.items():
        for imported in targets:
            rule = rule_broken(importer, imported)
            if rule:
                found.append((importer, imported, rule))
    return sorted(found)


def _reach(imports, start):
    """{module: the module it was reached from}, for every gpuclient
    module reachable from the modules in START (which are not in it)."""
    seen = {}
    todo = list(start)
    while todo:
        module = todo.pop()
        for target in sorted(imports.get(module, ())):
            if target not in seen and target not in start:
                seen[target] = module
                todo.append(target)
    return seen


def back_into(imports, package):
    """Sorted (outside module, the module of PACKAGE it imports) for each
    module outside PACKAGE that PACKAGE's modules import, directly or
    not, and that imports PACKAGE again: a circle through the package
    (empty when PACKAGE imports nothing that imports it)."""
    inside = {m for m in imports
              if m == package or m.startswith(package + '.')}
    found = []
    for module in sorted(_reach(imports, inside)):
        if module in inside:
            continue
        for target in sorted(imports.get(module, ())):
            if target in inside:
                found.append((module, target))
    return found


def cycles(imports):
    """Sorted lists of modules that import each other in a circle (the
    strongly connected components of more than one module)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(start):
        # iterative Tarjan: (module, iterator over its targets)
        work = [(start, iter(sorted(imports.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            module, targets = work[-1]
            for target in targets:
                if target not in imports:
                    continue
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(
                        imports.get(target, ())))))
                    break
                if target in on_stack:
                    low[module] = min(low[module], index[target])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[module])
                if low[module] == index[module]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == module:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))

    for module in sorted(imports):
        if module not in index:
            visit(module)
    return sorted(found)


def floor_edges(imports):
    """{(floor, floor): number of (importer, imported) module pairs}."""
    counts = collections.Counter()
    for importer, targets in imports.items():
        for imported in targets:
            counts[floor_of(importer), floor_of(imported)] += 1
    return counts


def modules_by_floor(imports):
    """{floor: sorted modules}, floors in FLOORS order."""
    by_floor = {floor: [] for floor in FLOORS}
    for module in imports:
        by_floor.setdefault(floor_of(module), []).append(module)
    return {floor: sorted(mods) for floor, mods in by_floor.items()
            if mods}


def diagram(imports):
    """The floors and the imports from each to each, as plain text."""
    by_floor = modules_by_floor(imports)
    counts = floor_edges(imports)
    broken = collections.Counter(
        (floor_of(a), floor_of(b)) for a, b, _ in violations(imports))
    order = list(FLOORS) + sorted(
        {f for edge in counts for f in edge} - set(FLOORS))
    lines = ['Floors (v1 -> ops -> {rules, cloud}; hostfacts -> rules; '
             'the top-level modules are shared):', '']
    for floor in order:
        if floor in by_floor:
            n = len(by_floor[floor])
            lines.append('  %-6s %3d module%s' % (
                floor, n, '' if n == 1 else 's'))
    lines += ['', 'Imports between floors (module pairs):', '']
    for a in order:
        for b in order:
            n = counts.get((a, b))
            if not n:
                continue
            line = '  %-6s -> %-6s (%d import%s' % (
                a, b, n, '' if n == 1 else 's')
            if broken[a, b]:
                line += '; %d break%s a rule' % (
                    broken[a, b], 's' if broken[a, b] == 1 else '')
            lines.append(line + ')')
    return '\n'.join(lines) + '\n'


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    root = argv[0] if argv else os.path.dirname(
        os.path.dirname(os.path.abspath(__file__)))
    imports = graph(root)
    found = violations(imports)
    if found:
        print('Imports that break a floor rule (%d):' % len(found))
        print()
        for importer, imported, rule in found:
            print('  %s -> %s: %s' % (importer, imported, rule))
    else:
        print('No import breaks a floor rule.')
    print()
    print(diagram(imports), end='')
    return 1 if found else 0


if __name__ == '__main__':
    sys.exit(main())
