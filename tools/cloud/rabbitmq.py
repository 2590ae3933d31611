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

"""RabbitMQ in the test cloud: Debian's ``rabbitmq-server`` as node
``gpuclient@localhost`` on 127.0.0.1:5672, its Erlang distribution and epmd
on loopback only, its data under ``<state>/rabbit``.

``start`` launches it detached (the Erlang VM writes its pid file itself),
``wait`` returns once it answers, ``stop`` stops it and the epmd it started.
Standard library only, like the rest of tools/testcloud.
"""

import os
import signal
import subprocess

from cloud import base

RABBIT = '/usr/lib/rabbitmq/bin'


def env():
    r = os.path.join(base.STATE, 'rabbit')
    return {
        'HOME': os.path.join(r, 'home'),
        'RABBITMQ_NODENAME': 'gpuclient@localhost',
        'RABBITMQ_MNESIA_BASE': os.path.join(r, 'mnesia'),
        'RABBITMQ_LOG_BASE': os.path.join(r, 'log'),
        'RABBITMQ_CONFIG_FILE': os.path.join(base.STATE, 'etc',
                                             'rabbitmq.conf'),
        'RABBITMQ_ENABLED_PLUGINS_FILE': os.path.join(r, 'enabled_plugins'),
        'RABBITMQ_PID_FILE': base.pidfile('rabbitmq'),
        'RABBITMQ_DIST_PORT': '25672',
        # Erlang distribution and epmd on loopback only
        'RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS':
            '-kernel inet_dist_use_interface {127,0,0,1}',
        'ERL_EPMD_ADDRESS': '127.0.0.1',
    }


def start():
    # -detached: the Erlang VM daemonises and writes RABBITMQ_PID_FILE
    # (pids/rabbitmq.pid) itself; it is stopped with rabbitmqctl stop.
    with open(os.path.join(base.LOGS, 'rabbitmq-start.log'), 'ab') as out:
        subprocess.run([os.path.join(RABBIT, 'rabbitmq-server'),
                        '-detached'], env=dict(os.environ, **env()),
                       stdin=subprocess.DEVNULL, stdout=out,
                       stderr=subprocess.STDOUT, start_new_session=True,
                       check=True)


def wait():
    base.run([os.path.join(RABBIT, 'rabbitmqctl'), 'wait',
              base.pidfile('rabbitmq'), '--timeout', '120'],
             'rabbitmq-wait.log', env())


def stop(pids, timeline):
    """Stop the recorded rabbitmq and epmd of PIDS ({name: pid},
    base.recorded())."""
    if pids.get('rabbitmq'):
        rc = subprocess.run(
            [os.path.join(RABBIT, 'rabbitmqctl'), 'stop',
             base.pidfile('rabbitmq')],
            env=dict(os.environ, **env()), capture_output=True)
        if rc.returncode and base.alive(pids['rabbitmq']):
            os.kill(pids['rabbitmq'], signal.SIGTERM)
            base.wait_dead([pids['rabbitmq']], 20)
        if os.path.exists(base.pidfile('rabbitmq')):
            base.forget('rabbitmq')
        timeline('rabbitmq stopped')
    if pids.get('epmd'):
        if base.alive(pids['epmd']):
            os.kill(pids['epmd'], signal.SIGTERM)
            base.wait_dead([pids['epmd']], 5)
        base.forget('epmd')
