#!/usr/bin/env python3
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
"""``gpu profile plan`` on a large fleet: time and optimality status.

    python3 tools/bench_profiles.py [--hosts 500] [--cards-per-host 8]
                                    [--seed 27]

No cloud. Two fleets of HOSTS x CARDS_PER_HOST cards, half A100-80GB and
half H100-80GB, and a demand for five MIG profiles (about 90 % of what the
fleet could hold at most):

* ``new``: cards not racked yet (``profile_ops.plan_cards``, the path of
  ``--cards``);
* ``running``: the same cards with a current layout each (drawn at random,
  ``--seed``, default 27, from the models' maximal layouts) and about half
  of its placements in use, planned with ``rules.profiles.solver.plan``.

Prints ``<label>: <n> s`` lines (the layouts' enumeration, cached per
process, is timed apart) and, for each fleet, the three optimal values
(demand met, cards re-cut, servers disturbed) with HiGHS's model status
as it reports it ("Optimal": a proven optimum of the last model solved;
the plan raises otherwise), the number of classes of interchangeable
cards, and how the fewest servers disturbed were proven optimal: by the
LP bound (the plan's moves equal the LP relaxation's bound rounded up,
found on a model restricted to the arcs of small reduced cost), or by
HiGHS's branch and bound on the whole moves model.
"""

import argparse
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))

from gpuclient.ops import profile_ops  # noqa: E402
from gpuclient.rules.profiles import layouts  # noqa: E402
from gpuclient.rules.profiles import solver  # noqa: E402

MODELS = ('A100-80GB', 'H100-80GB')
DEMAND_SHARE = {'1g.10gb': 0.30, '2g.20gb': 0.15, '3g.40gb': 0.25,
                '4g.40gb': 0.05, '7g.80gb': 0.05}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--hosts', type=int, default=500)
    parser.add_argument('--cards-per-host', type=int, default=8)
    parser.add_argument('--seed', type=int, default=27,
                        help='seed of the running fleet\'s layouts and use')
    args = parser.parse_args(argv)
    n = args.hosts * args.cards_per_host

    start = time.perf_counter()
    for model in MODELS:
        layouts.layouts(model)
        layouts.layouts(model, maximal=True)
    print('enumerate layouts (2 models): %.2f s'
          % (time.perf_counter() - start))

    # a demand of about 90 % of the fleet in slices: 7 slices per card
    demand = {p: int(share * n * 7 * 0.9 / int(p[0]))
              for p, share in DEMAND_SHARE.items()}
    counts = {MODELS[0]: n // 2, MODELS[1]: n - n // 2}

    start = time.perf_counter()
    _rows, summary = profile_ops.plan_cards(counts, demand)
    print('plan new %d cards: %.2f s' % (n, time.perf_counter() - start))
    report('new', summary)

    rng = random.Random(args.seed)
    cards = []
    for i in range(n):
        model = MODELS[i % 2]
        current = rng.choice(layouts.layouts(model, maximal=True))
        in_use = tuple(p for p in current if rng.random() < 0.5)
        cards.append({'id': 'host%d/gpu%d' % divmod(i, args.cards_per_host),
                      'model': model, 'current': current, 'in_use': in_use})
    start = time.perf_counter()
    _rows, summary = solver.plan(cards, demand)
    print('plan running %d cards: %.2f s' % (n, time.perf_counter() - start))
    report('running', summary)
    return 0


def report(label, summary):
    print('%s: HiGHS status %s; %d classes; demand met %d of %d, cards '
          're-cut %d, servers disturbed %d, memory slices free %d'
          % (label, summary['status'], summary['classes'], summary['met'],
             summary['wanted'], summary['recut'], summary['moves'],
             summary['stranded_slices']))
    if summary['proof'] == solver.PROOF_BOUND:
        how = ('the LP bound: %d servers disturbed is its %.3f rounded up'
               % (summary['moves'], summary['moves_bound']))
    else:
        how = "HiGHS's branch and bound on the whole moves model"
        if summary['moves_bound'] is not None:
            how += ' (LP bound %.3f)' % summary['moves_bound']
    print('%s: fewest servers disturbed proven optimal by %s' % (label, how))


if __name__ == '__main__':
    sys.exit(main())
