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

import http.server
import json
import os
import threading
import urllib.parse

import fixtures
import yaml

from gpuclient.rules import pools
from gpuclient.tests.functional import base

# a copy of the admin cloud without prometheus_endpoint
NO_PROMETHEUS = 'gpuclient-t51-no-prometheus'
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


class _Broken(http.server.ThreadingHTTPServer):
    """A Prometheus that answers every query HTTP 500 (its storage
    failing): not a stand-in for a working Prometheus, the fault itself.
    ``queries`` keeps the PromQL it was sent."""

    daemon_threads = True

    def __init__(self):
        queries = self.queries = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's name
                length = int(self.headers.get('Content-Length') or 0)
                form = urllib.parse.parse_qs(self.rfile.read(length).decode())
                queries.extend(form.get('query', []))
                body = json.dumps({'status': 'error', 'errorType': 'internal',
                                   'error': 'storage failing'}).encode()
                self.send_response(500)
                self.send_header('Content-Type', 'application/json')
                self.send_header('Content-Length', str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST  # noqa: N815

            def log_message(self, *args):
                pass

        super().__init__(('127.0.0.1', 0), Handler)
        self.url = 'http://127.0.0.1:%d' % self.server_address[1]
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def close(self):
        self.shutdown()
        self.server_close()


class TestChecksNotRun(base.FunctionalTestCase):
    """Issue 51, defect 7: a check that could not read what it rests on
    (no Prometheus configured, Prometheus answering 500) could not run:
    asked alone it exits 2, not 0; beside a check that ran, the status is
    that check's and stderr names the one it does not cover."""

    CHECK = 'gpu-unhealthy'

    def check(self, *args, cloud=None):
        rc, out, err = self.openstack_raw(
            'gpu', 'check', '--check', self.CHECK, '-f', 'json', *args,
            cloud=cloud)
        return rc, json.loads(out) if out.strip() else [], err

    def test_prometheus_not_configured(self):
        path = os.environ.get('OS_CLIENT_CONFIG_FILE')
        if not path:
            self.skipTest('needs OS_CLIENT_CONFIG_FILE (the test cloud\'s '
                          'clouds.yaml) to copy a cloud from')
        with open(path) as conf:
            entry = dict(yaml.safe_load(conf)['clouds'][self.cloud])
        # the same cloud, no Prometheus anywhere
        entry.pop('prometheus_endpoint', None)
        copy = self.useFixture(fixtures.TempDir()).join('clouds.yaml')
        with open(copy, 'w') as out:
            yaml.safe_dump({'clouds': {NO_PROMETHEUS: entry}}, out)
        self.useFixture(fixtures.EnvironmentVariable(
            'OS_CLIENT_CONFIG_FILE', copy))
        self.useFixture(fixtures.EnvironmentVariable(
            'GPUCLIENT_PROMETHEUS_URL'))
        rc, rows, err = self.check(cloud=NO_PROMETHEUS)
        self.assertEqual(2, rc, err)
        self.assertEqual([], rows)
        self.assertIn('No check asked for could run: gpu-unhealthy (no '
                      'Prometheus is configured', err)

    def test_prometheus_answering_500(self):
        broken = _Broken()
        self.addCleanup(broken.close)
        rc, rows, err = self.check('--prometheus', broken.url)
        self.assertEqual(2, rc, err)
        self.assertIn('No check asked for could run: gpu-unhealthy (', err)
        self.assertIn('HTTP 500', err)
        # it asked that Prometheus, which failed every query
        self.assertTrue(broken.queries)
        self.assertEqual([('warning', 'Prometheus')],
                         [(r['Severity'], r['Object']) for r in rows])

        # beside a check that ran: an aggregate that claims to be a pool
        # and is not one, as Nova holds it, is pool-aggregates' error (1);
        # stderr names gpu-unhealthy, the check the 1 does not cover
        bad = self.unique_name('t51cli-agg')
        self.openstack('aggregate', 'create', bad, parse=False)
        self.addCleanup(self.openstack_raw, 'aggregate', 'delete', bad)
        self.openstack('aggregate', 'set', '--property',
                       '%s=%s' % (pools.POOL_KEY, bad), bad, parse=False)
        self.assertEqual({pools.POOL_KEY: bad},
                         self.aggregate(bad)['properties'])
        rc, rows, err = self.check('--check', 'pool-aggregates',
                                   '--prometheus', broken.url)
        self.assertEqual(1, rc, err)
        self.assertIn(('error', 'pool-aggregates', 'aggregate %s' % bad),
                      [(r['Severity'], r['Check'], r['Object'])
                       for r in rows])
        self.assertIn('Could not run, so the exit status does not cover: '
                      'gpu-unhealthy (', err)
        self.assertNotIn('pool-aggregates (', err)
