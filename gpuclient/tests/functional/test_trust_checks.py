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

"""gpu check never stays silent about what it cannot judge (issue 21,
defect 10), on the real cloud and the real CLI.

A hand-made flavor (plain ``openstack flavor create`` and ``flavor set
--property``) asks for a PCI alias no GPU pool describes: without
``--nova-conf`` ``gpu check`` warns about it, naming the flavor and
``--nova-conf``; with the test cloud's nova.conf (which does not define
that alias) it is an error and the exit status is 1. No server is booted.
"""

import json
import uuid

import fixtures

from gpuclient.tests.functional import base
from gpuclient.tests.functional import test_check


class TestSilenceWhereACheckCannotRun(base.FunctionalTestCase):
    def nova_conf(self):
        """A nova.conf file: the test cloud's (or a bare one elsewhere);
        neither defines this run's alias."""
        path = self.useFixture(fixtures.TempDir()).join('nova.conf')
        with open(path, 'w') as conf:
            conf.write(test_check.testcloud_nova_conf() or '[DEFAULT]\n')
        return path

    def check(self, *args):
        rc, out, err = self.openstack_raw(
            'gpu', 'check', '--check', 'flavor-pci-alias', *args,
            '-f', 'json')
        return rc, json.loads(out), err

    def test_unknown_alias_warned_without_nova_conf_error_with_it(self):
        alias = 'ft%s' % uuid.uuid4().hex[:8]
        name = self.unique_name('trust-alias')
        flavor = self.openstack('flavor', 'create', '--private', '--vcpus',
                                '1', '--ram', '512', '--disk', '1', name)
        self.addCleanup(self.openstack, 'flavor', 'delete', flavor['id'],
                        parse=False)
        self.openstack('flavor', 'set', '--property',
                       'pci_passthrough:alias=%s:9' % alias, flavor['id'],
                       parse=False)
        # what Nova holds: the alias the flavor asks for
        shown = self.openstack('flavor', 'show', flavor['id'])
        self.assertEqual('%s:9' % alias,
                         shown['properties']['pci_passthrough:alias'])
        conf = self.nova_conf()
        self.assertNotIn('"%s"' % alias, open(conf).read())

        # no nova.conf at all: neither the option nor its variables
        for name_ in ('GPUCLIENT_NOVA_CONF', 'GPUCLIENT_NOVA_CONF_DIR'):
            self.useFixture(fixtures.EnvironmentVariable(name_))
        _rc, rows, err = self.check()
        mine = [r for r in rows if r['Object'] == 'flavor %s' % name]
        self.assertEqual([('warning', 'flavor-pci-alias')],
                         [(r['Severity'], r['Check']) for r in mine], err)
        self.assertIn(alias, mine[0]['Symptom'])
        self.assertIn('not judged', mine[0]['Symptom'])
        self.assertIn('--nova-conf', mine[0]['Fix'])

        rc, rows, err = self.check('--nova-conf', conf)
        mine = [r for r in rows if r['Object'] == 'flavor %s' % name]
        self.assertEqual([('error', 'flavor-pci-alias')],
                         [(r['Severity'], r['Check']) for r in mine], err)
        self.assertIn('nova.conf does not define', mine[0]['Symptom'])
        self.assertEqual(1, rc, err)
