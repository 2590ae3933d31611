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

import os
import sys

import setuptools
from setuptools.command import build_py

TESTS = ('gpuclient', 'tests')


def _in_tests(path):
    return tuple(os.path.normpath(path).split(os.sep)[:2]) == TESTS


class BuildPy(build_py.build_py):
    """build_py without gpuclient/tests: the wheel ships the plugin only.

    The tests need the source tree (setup.cfg, tools/, doc/, the test
    cloud) and run from it (tox). pbr's [files] packages takes every
    subpackage, and its include_package_data every file git tracks, with
    no exclude: both are filtered here. The sdist keeps the tests.

    pbr replaces setup()'s cmdclass with its own commands; setup.cfg's
    [global] commands = setup.BuildPy adds this one to them.
    """

    command_name = 'build_py'

    def finalize_options(self):
        super().finalize_options()
        name = '.'.join(TESTS)
        self.packages = [p for p in self.packages or ()
                         if p != name and not p.startswith(name + '.')]

    def exclude_data_files(self, package, src_dir, files):
        return [f for f in super().exclude_data_files(package, src_dir,
                                                      files)
                if not _in_tests(f)]


if __name__ == '__main__':  # not when pbr imports BuildPy from here
    # pbr imports setup.BuildPy: this directory on the path also in a PEP
    # 517 build (pyproject.toml), which runs this file from elsewhere
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    setuptools.setup(setup_requires=['pbr>=2.0.0'], pbr=True)
