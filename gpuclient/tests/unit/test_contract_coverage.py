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

"""Every public member of the client layer has a contract test.

gpuclient/tests/functional/test_contract.py runs one test per public
method or property of each client class against the real cloud; this
test fails when a class or a member has none (a new method cannot slip
in untested against the real services).
"""

import inspect

from gpuclient.cloud import baremetal as baremetal_mod
from gpuclient.cloud import client
from gpuclient.cloud import compute as compute_mod
from gpuclient.cloud import identity as identity_mod
from gpuclient.cloud import image as image_mod
from gpuclient.cloud import placement as placement_mod
from gpuclient.cloud import reservation as reservation_mod
from gpuclient.tests.functional import test_contract
from gpuclient.tests.unit import base

# the client layer's modules that hold classes
MODULES = (placement_mod, compute_mod, image_mod, baremetal_mod,
           identity_mod, reservation_mod, client)


def client_classes():
    """The client layer's classes: those that talk to a service (a
    ``service`` name), and GpuClient, which wires them."""
    return [cls for module in MODULES
            for _name, cls in inspect.getmembers(module, inspect.isclass)
            if cls.__module__ == module.__name__
            and (isinstance(vars(cls).get('service'), str)
                 or cls is client.GpuClient)]


def public_members(cls):
    return sorted(name for name, value in vars(cls).items()
                  if not name.startswith('_')
                  and (inspect.isfunction(value)
                       or isinstance(value, property)))


class TestContractCoverage(base.TestCase):

    def test_every_client_class_has_a_contract_test_case(self):
        classes = client_classes()
        self.assertIn(placement_mod.Placement, classes)
        self.assertIn(identity_mod.Limits, classes)
        self.assertEqual(set(classes), set(test_contract.CONTRACTS))

    def test_every_public_member_has_a_contract_test(self):
        missing = []
        for cls, case in test_contract.CONTRACTS.items():
            tests = {name for name in dir(case) if name.startswith('test_')}
            missing += ['%s.%s' % (cls.__name__, member)
                        for member in public_members(cls)
                        if 'test_' + member not in tests]
        self.assertEqual([], missing, 'client members without a contract '
                         'test in gpuclient/tests/functional/'
                         'test_contract.py')

    def test_no_contract_test_names_a_member_that_is_not_there(self):
        stale = []
        for cls, case in test_contract.CONTRACTS.items():
            members = set(public_members(cls))
            stale += ['%s.%s' % (case.__name__, name) for name in
                      vars(case) if name.startswith('test_')
                      and name[len('test_'):] not in members]
        self.assertEqual([], stale)
