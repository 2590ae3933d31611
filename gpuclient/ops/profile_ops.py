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

"""``gpu profile list`` and the cloud-free ``gpu profile plan --cards``.

No cloud is read: the catalogue and the plan are ``rules.profiles``; this
module turns ``--cards``/``--demand`` into cards and a demand, and writes
the ``nvidia-smi`` scripts of ``--output-dir`` (never over an existing
file).
"""

import contextlib
import ctypes
import os
import sys

from gpuclient.i18n import _
from gpuclient.rules import profiles


def catalogue(model=None):
    """Rows of ``gpu profile list`` (``rules.profiles.catalogue``)."""
    return profiles.catalogue(model)


def cards_of(counts):
    """Cards not racked yet from {model: count}: ids ``<MODEL>#<n>``."""
    cards = []
    for text, count in counts.items():
        model = profiles.model_name(text)
        for n in range(1, count + 1):
            cards.append({'id': '%s#%d' % (model, n), 'model': model})
    return cards


def demand_of(counts):
    """{profile: count} with the catalogue's names (a name given twice in
    two spellings adds up)."""
    demand = {}
    for text, count in counts.items():
        name = profiles.profile_name(text)
        demand[name] = demand.get(name, 0) + count
    return demand


def write_scripts(rows, output_dir):
    """One script per group of re-cut cards with the same model, current
    and proposed layout, in OUTPUT_DIR (made if missing). Returns {card
    id: path written}; a file that exists already is refused, before
    anything is written."""
    plans = []
    for model, current, layout, cards in profiles.groups(rows):
        path = os.path.join(output_dir,
                            profiles.script_name(model, layout, current))
        if os.path.exists(path):
            raise FileExistsError(
                _('%s exists already: gpuclient does not overwrite it; '
                  'give another --output-dir or move the file.') % path)
        plans.append((path, profiles.script(model, current, layout, cards),
                      [card for card, _in_use in cards]))
    os.makedirs(output_dir, exist_ok=True)
    written = {}
    for path, text, ids in plans:
        with open(path, 'x') as out:
            out.write(text)
        os.chmod(path, 0o755)
        for card in ids:
            written[card] = path
    return written


@contextlib.contextmanager
def stdout_to_stderr():
    """Send what is written on file descriptor 1 to 2 meanwhile: HiGHS
    prints its banner on stdout when a solver is made, whatever its
    options, which would break ``-f json``. C's buffers are flushed before
    stdout is given back, so nothing of it arrives there later."""
    sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:  # no stdout at all: nothing to protect
        yield
        return
    try:
        os.dup2(2, 1)
        yield
    finally:
        try:
            ctypes.CDLL(None).fflush(None)
        except (OSError, AttributeError):
            pass
        os.dup2(saved, 1)
        os.close(saved)


def plan_cards(card_counts, demand_counts, output_dir=None):
    """The plan for cards not racked yet: (rows, summary), each row with
    ``script`` (the path written for it, or None)."""
    with stdout_to_stderr():
        rows, summary = profiles.plan(cards_of(card_counts),
                                      demand_of(demand_counts))
    written = write_scripts(rows, output_dir) if output_dir else {}
    for row in rows:
        row['script'] = written.get(row['id'])
    return rows, summary
