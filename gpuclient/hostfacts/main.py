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

"""``gpuclient-host-facts [--root DIR] [--output FILE] [--hostname NAME]``.

Reads this host (or the tree under DIR) and writes its facts as
node_exporter textfile series to FILE (default: Debian's
prometheus-node-exporter textfile directory; ``-``: standard output).
Exit status 0 when it wrote them, what it could not read included (it
is in the series); 1, with one line on stderr, when it could not write
them; 2 for a usage error.
"""

from __future__ import annotations

import argparse
import sys

from gpuclient.hostfacts import collector
from gpuclient.hostfacts import textfile
from gpuclient.i18n import _
from gpuclient.rules.host_facts import series

PROG = 'gpuclient-host-facts'
TEXTFILE_DIR = '/var/lib/prometheus/node-exporter'
OUTPUT = TEXTFILE_DIR + '/gpuclient_host_facts.prom'


def parser() -> argparse.ArgumentParser:
    found = argparse.ArgumentParser(
        prog=PROG,
        description=_('Read the GPU host facts (IOMMU, drivers, IOMMU '
                      'groups, NUMA nodes, VFs, vGPU and mdev types, MIG, '
                      'versions) and write them as node_exporter textfile '
                      'series. Read-only.'))
    found.add_argument(
        '--root', metavar='<dir>', default='/',
        help=_('Read the host whose files are under this directory '
               '(default: /, this host; another directory is a fake tree, '
               'where nvidia-smi is not run)'))
    found.add_argument(
        '--output', metavar='<file>', default=OUTPUT,
        help=_('Write the series to this file, atomically (default: '
               '%(default)s; - for standard output)'))
    found.add_argument(
        '--hostname', metavar='<name>',
        help=_("The Hostname label: the name the host's DCGM exporter "
               'gives (default: the kernel\'s host name, as the DCGM '
               'exporter takes it)'))
    return found


def _say(line):
    """One line on stderr (a message with a newline in it stays one)."""
    sys.stderr.write(' '.join(str(line).split()) + '\n')


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        facts = collector.collect(args.root, hostname=args.hostname)
        text = series.render(series.samples(facts))
    except Exception as exc:  # a defect: one line, not a traceback
        _say(_('%(prog)s: could not read the host: %(error)s')
             % {'prog': PROG, 'error': exc})
        return 1
    if args.output == '-':
        sys.stdout.write(text)
        return 0
    try:
        textfile.write_atomically(args.output, text)
    except OSError as exc:
        _say(_('%(prog)s: cannot write %(file)s: %(error)s')
             % {'prog': PROG, 'file': args.output,
                'error': exc.strerror or exc})
        return 1
    return 0
