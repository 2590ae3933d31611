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

"""Debian's Prometheus on loopback, for the test cloud: start and stop.

Runs ``/usr/bin/prometheus`` (``apt-get install prometheus``; its systemd
service stays off) as a child process on 127.0.0.1, with its own config
and data directory under a work directory, scraping the given targets
every second. Standard library only::

    server = prometheus.start(workdir, [
        prometheus.Target('dcgm-host', ['127.0.0.1:9400']),
        prometheus.Target('dcgm-guest', ['127.0.0.1:9401'],
                          labels={'instance_id': '<server uuid>'}),
    ])
    ... server.url ...
    server.stop()

A guest-side target's ``instance_id`` label stands for what
``openstack_sd_configs`` relabelling gives a real cloud's guests.
"""

import collections
import json
import os
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request

BINARY = '/usr/bin/prometheus'

Target = collections.namedtuple('Target', 'job addresses labels')
Target.__new__.__defaults__ = (None,)


def free_port(host='127.0.0.1'):
    """A port nothing listens on now (the kernel's pick)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def config(targets, interval='1s', rule_files=()):
    """prometheus.yml (JSON is YAML) scraping TARGETS every INTERVAL
    (targets of one job: one scrape config, a static config each) and
    evaluating the rules of RULE_FILES (absolute paths) as often."""
    jobs = {}
    for target in targets:
        jobs.setdefault(target.job, []).append(dict(
            {'targets': list(target.addresses)},
            **({'labels': dict(target.labels)} if target.labels else {})))
    return json.dumps({
        'global': {'scrape_interval': interval,
                   'evaluation_interval': interval},
        'scrape_configs': [{
            'job_name': job,
            'scrape_interval': interval,
            'scrape_timeout': interval,
            'static_configs': static,
        } for job, static in jobs.items()],
        **({'rule_files': list(rule_files)} if rule_files else {}),
    }, indent=2) + '\n'


class Server:
    def __init__(self, process, url, workdir, log):
        self.process = process
        self.url = url
        self.workdir = workdir
        self.log = log

    def ready(self):
        try:
            with urllib.request.urlopen(self.url + '/-/ready',
                                        timeout=2) as answer:
                return answer.status == 200
        except (urllib.error.URLError, OSError):
            return False

    def wait_ready(self, timeout=30.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError('prometheus exited (%s): see %s' % (
                    self.process.returncode, self.log))
            if self.ready():
                return self
            time.sleep(0.2)
        raise RuntimeError('prometheus not ready in %.0f s: see %s' % (
            timeout, self.log))

    def stop(self, timeout=10.0):
        """SIGTERM, then SIGKILL after TIMEOUT seconds."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout)
        return self.process.returncode


def start(workdir, targets, port=None, interval='1s', binary=BINARY,
          timeout=30.0):
    """A ready Prometheus on 127.0.0.1:PORT (a free one by default) whose
    config, data and log are in WORKDIR."""
    if not os.path.exists(binary) and not shutil.which(binary):
        raise RuntimeError('%s not found: apt-get install prometheus'
                           % binary)
    os.makedirs(workdir, exist_ok=True)
    path = os.path.join(workdir, 'prometheus.yml')
    with open(path, 'w') as f:
        f.write(config(targets, interval))
    port = port or free_port()
    log = os.path.join(workdir, 'prometheus.log')
    with open(log, 'ab') as out:
        process = subprocess.Popen(
            [binary, '--config.file=' + path,
             '--storage.tsdb.path=' + os.path.join(workdir, 'data'),
             '--storage.tsdb.retention.time=1d',
             '--web.listen-address=127.0.0.1:%d' % port],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    server = Server(process, 'http://127.0.0.1:%d' % port, workdir, log)
    try:
        return server.wait_ready(timeout)
    except BaseException:
        server.stop()
        raise
