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

"""The test cloud's metrics: the DCGM exporter stand-in
(tools/cloud/dcgm_exporter.py), Debian's node_exporter for some hosts and
Debian's Prometheus scraping them, with gpuclient's rules (``start``).

Standard library only, like the rest of tools/testcloud.
"""

import os

from cloud import base
from cloud import host_facts
from cloud import hosts as hostlib
from cloud import node_exporter
from cloud import prometheus as prom

PROMETHEUS_PORT = 9090
DCGM_PORT = 9400
# where Prometheus also scrapes "gpu capacity list -f openmetrics" when a
# test serves it there (nothing listens otherwise: the target is down)
CAPACITY_PORT = 9401
# the Prometheus rules gpuclient ships, which the test cloud's Prometheus
# evaluates as an operator's does (the dashboard's panels read them:
# gpuclient/tests/functional/test_dashboard.py)
RULES = os.path.join(os.path.dirname(base.TOOLS), 'etc', 'prometheus',
                     'gpuclient.rules.yml')
# the DCGM exporter stand-in's devices, which tests rewrite to set values
# (tools/cloud/dcgm_exporter.py reads it on every scrape)
DCGM_DEVICES = os.path.join(base.STATE, 'dcgm', 'devices.json')
# the process that collects every GPU host's facts again (cloud.host_facts)
HOST_FACTS_TIMER = 'host-facts-timer'


def _node_exporters():
    """Debian's node_exporter for each host of NODE_EXPORTER_PORTS: on a
    fake sysfs tree of the host's NUMA topology (meminfo_numa) for the
    NUMA_METRICS_HOSTS, serving gpuclient-host-facts' textfile
    (cloud.host_facts) for the HOST_FACTS_HOSTS; the scrape target of
    each, labelled as a real deployment's (instance <nodename>:<port>)."""
    targets = []
    for host in hostlib.HOSTS:
        port = hostlib.NODE_EXPORTER_PORTS.get(host.name)
        if port is None:
            continue
        sysfs = textfile = None
        if host.name in hostlib.NUMA_METRICS_HOSTS:
            sysfs = node_exporter.write_sysfs(
                os.path.join(base.STATE, 'node-exporter', host.name, 'sys'),
                hostlib.numa_cells(host), hostlib.HOST_VCPUS,
                hostlib.HOST_MEMORY_MB)
        if host.name in hostlib.HOST_FACTS_HOSTS:
            textfile = host_facts.textfile_dir(host)
        base.spawn('node-exporter-' + host.name,
                   node_exporter.argv(sysfs, port, textfile=textfile))
        targets.append(prom.Target(
            'node', ['127.0.0.1:%d' % port],
            labels={'instance': '%s:%d' % (host.nodename, port)}))
    return targets


def start():
    """The DCGM exporter stand-in (no device until a test writes some),
    the node_exporters and Debian's Prometheus scraping them every
    second, on loopback, with gpuclient's rules (RULES)."""
    os.makedirs(os.path.dirname(DCGM_DEVICES), exist_ok=True)
    with open(DCGM_DEVICES, 'w') as f:
        f.write('{"devices": []}\n')
    base.spawn('dcgm-exporter', [
        os.path.join(base.BIN, 'python'),
        os.path.join(base.CLOUD_DIR, 'dcgm_exporter.py'), '--devices',
        DCGM_DEVICES, '--port', str(DCGM_PORT)])
    # every GPU host's facts, collected once before its exporter serves
    # them, then again by the timer (as the shipped one does)
    host_facts.prepare()
    base.spawn(HOST_FACTS_TIMER, [
        os.path.join(base.BIN, 'python'), '-m', 'cloud.host_facts',
        '--loop', str(host_facts.PERIOD)],
        env={'PYTHONPATH': base.TOOLS}, cwd=base.TOOLS)
    node_targets = _node_exporters()
    work = os.path.join(base.STATE, 'prometheus')
    os.makedirs(work, exist_ok=True)
    config = os.path.join(work, 'prometheus.yml')
    with open(config, 'w') as f:
        f.write(prom.config([
            prom.Target('dcgm', ['127.0.0.1:%d' % DCGM_PORT]),
            prom.Target('gpuclient-capacity',
                        ['127.0.0.1:%d' % CAPACITY_PORT])] + node_targets,
            rule_files=[RULES]))
    base.spawn('prometheus', [
        prom.BINARY, '--config.file=' + config,
        '--storage.tsdb.path=' + os.path.join(work, 'data'),
        '--storage.tsdb.retention.time=1d',
        '--web.listen-address=127.0.0.1:%d' % PROMETHEUS_PORT])
