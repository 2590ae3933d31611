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

"""The test cloud's host facts: gpuclient-host-facts on each fake GPU host.

A real GPU host runs the collector from its systemd timer into
node_exporter's textfile directory, and the host's node_exporter serves
it to Prometheus. The fake hosts have no sysfs of their own: each host
of ``hosts.HOST_FACTS_HOSTS`` gets one (its kind's tree,
``cloud.host_trees``, with the addresses and NUMA nodes its fake driver
reports) under ``STATE/host-facts/<host>/root``, the collector
(``gpuclient.hostfacts.collector``, the same code the console script
runs) reads it with ``--root`` and writes ``textfile/gpuclient-host.prom``
beside it, and the host's node_exporter (``cloud.metrics``) serves that
directory. ``loop`` is the timer: it collects every host again every
``PERIOD`` seconds, as the shipped timer does every five minutes, so the
facts never age past their timer during a run.

A test breaks a host as the issue's faults do and proves the findings:
``tools/testcloud host-facts HOST --fault F ...`` writes the host's tree
again with those faults and collects it at once; without ``--fault`` the
healthy tree comes back. Standard library only (the collector is too);
the repository's root is put on sys.path for it.
"""

import argparse
import contextlib
import fcntl
import os
import shutil
import sys
import time

from cloud import base
from cloud import host_trees
from cloud import hosts as hostlib

sys.path.insert(0, os.path.dirname(base.TOOLS))

from gpuclient.hostfacts import collector  # noqa: E402
from gpuclient.hostfacts import textfile  # noqa: E402
from gpuclient.rules.host_facts import series  # noqa: E402

# how often the test cloud's timer collects every host again (seconds)
PERIOD = 30
HOME = os.path.join(base.STATE, 'host-facts')
TEXTFILE = 'gpuclient-host.prom'

# the cards of each fake driver (tools/cloud/fakevirt.py), where they are
# not host_trees' defaults for the kind
_CARDS = {
    'OneTimeUseDriver': ('0000:41:00.0',),
}
# the re-cut host's card (hosts.RECUT_VFS are its VFs)
_RECUT_CARD = ('0000:61:00.0',)


def kind_of(host):
    """The host_trees kind of HOST, or None (bare metal, plain hosts)."""
    return host.kind if host.kind in host_trees.KINDS else None


def cards(host):
    """The GPU addresses HOST's fake driver reports."""
    if host.name == 'recut-mig-1':
        return _RECUT_CARD
    return _CARDS.get(host.driver) or host_trees.GPUS[kind_of(host)]


def hosts():
    """The hosts that have a tree (hostlib.HOST_FACTS_HOSTS)."""
    return [h for h in hostlib.HOSTS if h.name in hostlib.HOST_FACTS_HOSTS]


def host_named(name):
    """The fake GPU host NAME, or a CloudError naming them."""
    for host in hosts():
        if host.name == name:
            return host
    raise base.CloudError('%s is no fake GPU host: one of %s' % (
        name, ', '.join(h.name for h in hosts())))


def root(host):
    return os.path.join(HOME, host.name, 'root')


def textfile_dir(host):
    return os.path.join(HOME, host.name, 'textfile')


@contextlib.contextmanager
def locked(host):
    """HOST's tree and textfile for this process alone: the timer never
    collects a tree a test is writing, nor writes its textfile over the
    test's (a lock file beside them)."""
    os.makedirs(os.path.join(HOME, host.name), exist_ok=True)
    with open(os.path.join(HOME, host.name, 'lock'), 'w') as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


def write(host, faults=()):
    """Write HOST's tree afresh, with FAULTS (host_trees.FAULTS); the
    caller holds ``locked(host)``."""
    path = root(host)
    if os.path.lexists(path):
        shutil.rmtree(path)
    host_trees.write_tree(path, kind_of(host), gpus=cards(host),
                          faults=faults, hostname=host.nodename)
    os.makedirs(textfile_dir(host), exist_ok=True)


def collect(host):
    """What gpuclient-host-facts writes for HOST (its tree), atomically
    into its textfile directory; the caller holds ``locked(host)``.
    Returns when it collected (the series' collected timestamp)."""
    facts = collector.collect(root(host), hostname=host.nodename)
    textfile.write_atomically(
        os.path.join(textfile_dir(host), TEXTFILE),
        series.render(series.samples(facts)))
    return facts.collected_at


def prepare():
    """Every GPU host's healthy tree, collected once (the cloud's start)."""
    for host in hosts():
        with locked(host):
            write(host)
            collect(host)


def loop(period=PERIOD):
    """The timer: collect every host again every PERIOD seconds."""
    while True:
        for host in hosts():
            try:
                with locked(host):
                    collect(host)
            except (OSError, ValueError) as exc:
                print('host-facts: %s: %s' % (host.name, exc), flush=True)
        time.sleep(period)


def set_faults(name, faults):
    """Write the tree of host NAME with FAULTS and collect it now; returns
    when it collected: every collection of the host from then on, the
    timer's included, is of that tree."""
    host = host_named(name)
    with locked(host):
        write(host, faults)
        return collect(host)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--loop', type=int, metavar='SECONDS',
                        help='collect every host every SECONDS, forever')
    args = parser.parse_args(argv)
    if args.loop:
        loop(args.loop)
    return 0


if __name__ == '__main__':
    sys.exit(main())
