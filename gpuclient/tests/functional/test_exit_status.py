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

"""One exit-status scheme on a real cloud: diff(1)'s 0 same, 1 different
or findings, 2 trouble, for gpu check, gpu diff and gpu config show
--diff (their 0 and their findings are proven with the clouds' objects in
test_check, test_document and test_config)."""

import os

import fixtures

from gpuclient.tests.functional import base

GATED = (('gpu', 'check'), ('gpu', 'diff', '{doc}'),
         ('gpu', 'config', 'show', '--pool', '{pool}', '--diff', '{conf}'))


class TestExitStatus(base.FunctionalTestCase):
    def setUp(self):
        super().setUp()
        where = self.useFixture(fixtures.TempDir()).path
        self.files = {'doc': os.path.join(where, 'gpu.yaml'),
                      'conf': os.path.join(where, 'nova.conf')}
        # a pool the cloud does not have: "create", drift (read only)
        with open(self.files['doc'], 'w') as out:
            out.write('version: 1\npools:\n- name: %s\n  mode: vgpu\n'
                      '  vgpu_type: nvidia-35\n  hosts: []\n'
                      % self.unique_name('t41out-pool'))
        # an empty pool (no host: nothing else on the cloud changes) and
        # a nova.conf whose scheduler lacks the filter its flavors need
        self.files['pool'] = self.unique_name('t41out-pool')
        self.openstack('gpu', 'pool', 'create', self.files['pool'],
                       '--mode', 'vgpu', '--vgpu-type', 'nvidia-35',
                       parse=False)
        self.addCleanup(self.openstack, 'gpu', 'pool', 'delete',
                        self.files['pool'], parse=False)
        with open(self.files['conf'], 'w') as out:
            out.write('[filter_scheduler]\nenabled_filters = ComputeFilter\n')

    def command(self, words):
        return [w.format(**self.files) for w in words]

    def test_different_and_trouble(self):
        index = 0
        # 1: the drift and the missing settings, said on stdout
        for words, said in ((GATED[1], 'create'),
                            (GATED[2], 'AggregateInstanceExtraSpecsFilter')):
            rc, out, err = self.openstack_matrix(index, *self.command(words))
            index += 1
            self.assertEqual(1, rc, (words, out, err))
            self.assertIn(said, out, words)
        # 2: a usage error (argparse's), a wrong password (OSC's shell
        # would exit 1), a file that cannot be read; nothing on stdout
        for words in GATED:
            cases = [(self.command(words) + ['--no-such-option'], 'usage'),
                     (['--os-password=gpuclient-t41out-wrong']
                      + self.command(words), 'HTTP 401')]
            if len(words) > 2:
                missing = [w.replace(self.files['doc'], '/nonexistent')
                           .replace(self.files['conf'], '/nonexistent')
                           for w in self.command(words)]
                cases.append((missing, '/nonexistent'))
            for argv, said in cases:
                rc, out, err = self.openstack_matrix(index, *argv)
                index += 1
                self.assertEqual(2, rc, (argv, out, err))
                self.assertEqual('', out.strip(), argv)
                self.assertIn(said, err, argv)
