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

"""The one harness of the unit tests that run Nova's own code.

A differential test gives the same case to gpuclient and to Nova's own
function and compares the answers. Nova is not a dependency of gpuclient:
it is imported here once (its warnings silenced, its objects registered),
``HAVE_NOVA`` says whether that worked, and ``requires_nova`` skips a
test class where it did not (the py3 tox env). A differential module::

    from gpuclient.tests.unit import nova_harness

    if nova_harness.HAVE_NOVA:
        with nova_harness.quiet():
            from nova.virt import hardware as nova_hardware

    @nova_harness.requires_nova
    class TestAgainstNova(unittest.TestCase):
        ...

Its name ends in ``_nova`` where it holds only such tests, and
tools/run-functional's ``run_differential`` lists it: that runs them with
the test cloud's interpreter, where a skip fails the run (``RUN`` below
is how to run one by hand). Standard library only: that interpreter has
no test tools.
"""

import contextlib
import os
import sys
import unittest
from unittest import mock
import uuid
import warnings

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
# the test cloud's modules (tools/cloud: its hosts and fake virt drivers)
TOOLS = os.path.join(TOP, 'tools')
RUN = ('PYTHONPATH=. /var/tmp/gpuclient-testcloud/venv/bin/python '
       '-m unittest <module>')


@contextlib.contextmanager
def quiet():
    """Nova's imports and calls without their deprecation warnings."""
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        yield


try:
    with quiet():
        from nova import context as nova_context
        from nova import objects
        import nova.conf
        from nova.pci import request as pci_request
        from nova.scheduler import utils as sched_utils
    objects.register_all()
    HAVE_NOVA = True
except Exception:  # ImportError and anything nova's import may raise
    HAVE_NOVA = False

requires_nova = unittest.skipUnless(
    HAVE_NOVA, 'Nova is not importable here: run with the test cloud venv '
    '(%s), as tools/run-functional does' % RUN)


def import_tools():
    """Make tools/ importable (``from cloud import hosts``)."""
    if TOOLS not in sys.path:
        sys.path.append(TOOLS)


def conf(test):
    """Nova's CONF, parsed without files, reset at TEST's end."""
    nova_conf = nova.conf.CONF
    if not getattr(nova_conf, '_args', None):
        nova_conf([], project='nova')
    test.addCleanup(nova_conf.reset)
    return nova_conf


def override(test, name, value, group):
    """Nova's CONF option NAME of GROUP set to VALUE until TEST's end."""
    nova.conf.CONF.set_override(name, value, group)
    test.addCleanup(nova.conf.CONF.clear_override, name, group)


def pci_aliases(test, lines):
    """Nova's ``[pci] alias`` set to LINES (JSON texts) until TEST's end.

    Nova reads its aliases once per process (``get_alias_from_config`` is
    cached): the cache is cleared now and at the end.
    """
    override(test, 'alias', list(lines), 'pci')
    pci_request.get_alias_from_config.cache_clear()
    test.addCleanup(pci_request.get_alias_from_config.cache_clear)


# the compute API's flavor keys -> Nova's Flavor fields
FLAVOR_FIELDS = (('vcpus', 'vcpus'), ('ram', 'memory_mb'),
                 ('disk', 'root_gb'), ('OS-FLV-EXT-DATA:ephemeral',
                                       'ephemeral_gb'), ('swap', 'swap'))


def flavor(api_flavor, **fields):
    """Nova's Flavor of a flavor as the compute API shows it (the keys it
    has; its extra specs), with FIELDS."""
    for key, field in FLAVOR_FIELDS:
        if key in api_flavor:
            fields.setdefault(field, api_flavor[key])
    return objects.Flavor(
        extra_specs=dict(api_flavor.get('extra_specs') or {}), **fields)


def image(properties, **meta):
    """Nova's ImageMeta of an image with PROPERTIES (and META)."""
    return objects.ImageMeta.from_dict(dict(meta,
                                            properties=dict(properties)))


def request_spec(nova_flavor, image_meta, zone=None, project_id='p',
                 is_bfv=False):
    """Nova's RequestSpec of a boot of NOVA_FLAVOR, with the PCI requests
    Nova makes of the flavor's ``pci_passthrough:alias``."""
    with quiet():
        pci_requests = pci_request.get_pci_requests_from_flavor(nova_flavor)
        spec = objects.RequestSpec.from_components(
            nova_context.get_admin_context(), str(uuid.uuid4()),
            image_meta, nova_flavor, None, pci_requests, {}, None, zone,
            project_id=project_id)
    spec.is_bfv = is_bfv
    return spec


def querystring(spec):
    """The allocation candidates query Nova's scheduler sends for SPEC
    (``resources_from_request_spec``, ``ResourceRequest.to_querystring``).
    """
    with quiet(), mock.patch.object(sched_utils, 'LOG'):
        return sched_utils.resources_from_request_spec(
            nova_context.get_admin_context(), spec, None).to_querystring()
