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

"""The shipped Grafana dashboard's queries against the test cloud's
Prometheus (issue 57 item 5).

Everything as an operator runs it: the publisher is the shipped
gpuclient-metrics.service's command (etc/systemd, read as systemd runs it)
writing into a textfile directory that Debian's node_exporter serves
(``--collector.textfile``) where the test cloud's Prometheus scrapes
(127.0.0.1:9401, job gpuclient-capacity); that Prometheus evaluates the
shipped rules (tools/cloud/metrics.py RULES); the DCGM exporter stand-in
serves what the hardware would say of the server's GPU (idle, XID 79) and
what its guest's exporter would (no vGPU licence). Then every panel's
query, the dashboard's variables set to this cloud and region, runs once
through Prometheus' HTTP API and must return series.

The publisher's ``openstack`` is the real one behind a shim that scopes
its two reads to this test's host and pool (``--host``, ``--pool``): the
other stream changes the rest of the cloud meanwhile. One panel's series
exist only while a GPU is stranded ("Why GPUs are stranded"): it must
return series exactly when the stranded count panel is above 0.
"""

import json
import os
import re
import shutil
import subprocess
import tempfile

import openstack
from prometheus_client.openmetrics import parser as om_parser
import requests

from gpuclient.tests.functional import base
from gpuclient.tests.functional import test_device_health
from gpuclient.tests.unit import test_dashboard as dashboard_test
from gpuclient.tests.unit import test_systemd_units as units_test

NODE_EXPORTER = '/usr/bin/prometheus-node-exporter'
# where the test cloud's Prometheus scrapes gpuclient's series
# (tools/cloud/metrics.py CAPACITY_PORT)
PORT = int(os.environ.get('GPUCLIENT_CAPACITY_PORT', '9401'))
# the one panel whose series exist only while a GPU is stranded, and the
# panel whose count says so
ONLY_WHILE_STRANDED = 'Why GPUs are stranded'
STRANDED = 'Stranded GPUs per pool'

SHIM = '''#!/bin/sh
# the real openstack, its reads scoped to the test's host and pool
case "$1 $2 $3" in
  "gpu device list") shift 3
    exec %(real)s gpu device list --host %(host)s "$@" ;;
  "gpu capacity list") shift 3
    exec %(real)s gpu capacity list --pool %(pool)s "$@" ;;
esac
echo "unexpected: openstack $*" >&2
exit 99
'''


def prometheus_url():
    return openstack.config.OpenStackConfig().get_one(
        cloud=base.ADMIN_CLOUD).config['prometheus_endpoint']


def _regex_value(value):
    """A label value as the dashboard variable's regex (Grafana escapes
    regex characters; a plain name needs none), '.*' for none."""
    if not value:
        return '.*'
    return value if re.match(r'^[A-Za-z0-9_-]+$', value) else re.escape(
        value).replace('\\', '\\\\')


class TestDashboard(test_device_health.DcgmTestCase):
    # its hosts: lane B's (base.LANES), beside the DCGM tests, whose
    # leftover readings that stream's tests already allow for; port 9401
    # is test_utilisation's too, in the same stream
    lane = 'b'

    def query(self, expr):
        answer = requests.get(prometheus_url() + '/api/v1/query',
                              params={'query': expr}, timeout=10)
        return answer.status_code, answer.json()

    def rules_loaded(self):
        answer = requests.get(prometheus_url() + '/api/v1/rules',
                              timeout=10)
        answer.raise_for_status()
        return {g['name'] for g in answer.json()['data']['groups']}

    def publish(self, host, pool):
        """Run gpuclient-metrics.service's command into a textfile
        directory and serve it with node_exporter on PORT; return the
        directory."""
        work = tempfile.mkdtemp(prefix='gpuclient-ft-textfile-')
        self.addCleanup(shutil.rmtree, work, True)
        textfile = os.path.join(work, 'textfile')
        bin_dir = os.path.join(work, 'bin')
        os.mkdir(textfile)
        os.mkdir(bin_dir)
        real = shutil.which(base.OPENSTACK)
        self.assertIsNotNone(real, base.OPENSTACK)
        shim = os.path.join(bin_dir, 'openstack')
        with open(shim, 'w') as out:
            out.write(SHIM % {'real': real, 'host': host, 'pool': pool})
        os.chmod(shim, 0o755)
        argv = units_test.exec_start(environ={'TEXTFILE_DIR': textfile})
        env = dict(os.environ, TEXTFILE_DIR=textfile, OS_CLOUD=self.cloud,
                   PATH=bin_dir + os.pathsep + os.environ.get('PATH', ''))
        proc = subprocess.run(argv, env=env, capture_output=True, text=True,
                              timeout=300)
        self.assertEqual(0, proc.returncode, proc.stderr)
        self.assertEqual(['gpuclient_capacity.prom',
                          'gpuclient_devices.prom'],
                         sorted(n for n in os.listdir(textfile)
                                if not n.startswith('.')))
        if not os.path.exists(NODE_EXPORTER):
            self.fail('%s not found (apt-get install '
                      'prometheus-node-exporter)' % NODE_EXPORTER)
        exporter = subprocess.Popen(
            [NODE_EXPORTER, '--collector.disable-defaults',
             '--collector.textfile',
             '--collector.textfile.directory=' + textfile,
             '--web.listen-address=127.0.0.1:%d' % PORT],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.addCleanup(exporter.wait, 10)
        self.addCleanup(exporter.terminate)
        return textfile

    @base.needs('vgpu')
    def test_every_panel_query_returns_series(self):
        self.assertIn('gpuclient.recording', self.rules_loaded(),
                      'the test cloud\'s Prometheus does not evaluate '
                      'etc/prometheus/gpuclient.rules.yml: restart the '
                      'test cloud (tools/testcloud)')
        host = self.vgpu_host
        pool = self.make_pool('vgpu', host, '--vgpu-type', 'nvidia-35')
        server = self.boot(self.make_flavor(pool))
        _uuid, provider = self.device_of(server, 'VGPU')
        pci = '%s:%s:%s.%s' % re.search(
            r'_pci_([0-9a-f]{4})_([0-9a-f]{2})_([0-9a-f]{2})_([0-7])$',
            provider).groups()
        bus_id = test_device_health.bus_id(pci)
        hostname = self.hypervisor(host)['hypervisor_hostname']
        # the held pGPU idle and holding XID 79 (host side); its guest's
        # exporter: no licence. The host's other pGPU is not served.
        self.write_devices([
            {'hostname': hostname, 'gpu': 0, 'pci_bus_id': bus_id,
             'uuid': 'GPU-%s-host' % self.tag, 'util': 0, 'fb_used': 512,
             'xid': 79},
            {'hostname': 'guest-' + self.tag, 'gpu': 0,
             'pci_bus_id': '00000000:00:05.0',
             'uuid': 'GPU-%s-guest' % self.tag, 'licence': 0,
             'labels': {'instance_id': server['id']}}])
        textfile = self.publish(host, pool)

        with open(os.path.join(textfile, 'gpuclient_devices.prom')) as f:
            mine = [s.labels for family in
                    om_parser.text_string_to_metric_families(f.read())
                    for s in family.samples
                    if s.labels.get('instance_id') == server['id']]
        self.assertEqual(1, len(mine), mine)
        values = {name: _regex_value(mine[0].get(name))
                  for name in ('cloud', 'region')}

        # the handshake: Prometheus has scraped both exporters and
        # evaluated the rules on what they served (the recorded series of
        # this server's GPU exist)
        ready = {
            'idle': 'gpuclient:allocated_gpu_util:max1h{instance_id="%s"}'
                    % server['id'],
            'xid': 'gpuclient:dcgm_host_xid:info{hostname="%s",'
                   'pci_bus_id="%s",xid="79"}' % (hostname, bus_id),
            'unseen': 'gpuclient:host_gpu_cards:not_served{hostname="%s"}'
                      % hostname,
            'age': 'node_textfile_mtime_seconds{instance="127.0.0.1:%d"}'
                   % PORT}

        def held():
            return {what: bool(self.query(expr)[1]['data']['result'])
                    for what, expr in ready.items()}

        found = self.wait_for('Prometheus has the published series',
                              held, lambda h: all(h.values()),
                              timeout=test_device_health.SCRAPE_TIMEOUT,
                              interval=base.POLL * 2)
        self.assertEqual(dict.fromkeys(ready, True), found)

        answers = {}
        for panel, target in dashboard_test.targets(dashboard_test.load()):
            expr = dashboard_test.expand(target['expr'], values)
            status, body = self.query(expr)
            answers[(panel['title'], target['refId'])] = (
                status, body.get('status'), len(body.get('data', {}).get(
                    'result', ())), expr)
        failed = {key: answer for key, answer in answers.items()
                  if answer[:2] != (200, 'success')
                  or (not answer[2] and key[0] != ONLY_WHILE_STRANDED)}
        self.assertEqual({}, failed, json.dumps(
            {'%s %s' % k: v for k, v in answers.items()}, indent=1))
        # the stranded reasons have series exactly when a GPU is stranded
        [(_s, _st, _n, stranded)] = [a for k, a in answers.items()
                                     if k[0] == STRANDED]
        count = sum(float(r['value'][1])
                    for r in self.query(stranded)[1]['data']['result'])
        reasons = [a[2] for k, a in answers.items()
                   if k[0] == ONLY_WHILE_STRANDED]
        self.assertEqual([count > 0], [bool(n) for n in reasons])
