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

"""The optional parts of gpuclient: setup.cfg's [extras].

A module of an extra is imported in a ``try`` whose ``except
ImportError`` raises :func:`missing`: one line saying what needs it and
how to install it (gpuclient/tests/unit/test_requirements.py checks that
such an import is declared in an extra, and test_startup that no
``openstack`` command imports it unless it is used).
"""

from gpuclient.i18n import _

# setup.cfg's extras: gpu profile plan's solver and -f openmetrics' writer
PROFILES = 'profiles'
METRICS = 'metrics'


def missing(extra, package, needs, error):
    """The CommandError for a module of EXTRA (the Python package
    PACKAGE) that could not be imported (ERROR): NEEDS says what needs
    it."""
    from osc_lib import exceptions

    return exceptions.CommandError(
        _('%(needs)s needs the Python package %(package)s, an optional '
          'part of gpuclient not installed here (%(error)s). Install it '
          'with: pip install "gpuclient[%(extra)s]" (or pip install '
          '%(package)s), then run the command again.')
        % {'needs': needs, 'package': package, 'error': error,
           'extra': extra})
