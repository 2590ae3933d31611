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

"""Pure: the demand per GPU flavor that ``gpu profile plan --from-usage``
plans for.

Demand for a flavor over a period is

* the *peak* of its servers running at one instant in the period (from
  Nova's server usage: each server's interval, clipped to the period, as
  ``gpu usage list`` reads it, ``rules.usage.usage_items``), plus
* the boots Nova *refused* for lack of room in the period: servers of the
  flavor whose fault says "No valid host" (Nova's scheduler message for
  ``NoValidHost``), created in the period, deleted since or not (Nova shows
  the fault of ERROR and DELETED servers). Unmet demand is demand too.

A refused boot and a running server are counted apart even when the user
booted again later and got in: the plan then offers one slice more than
the peak, which is the safe side for a partition that is hard to change.
"""

from __future__ import annotations

import collections
from collections.abc import Iterable
from collections.abc import Mapping
import typing

from gpuclient.i18n import _
from gpuclient.rules import catalogue
from gpuclient.rules import pools as pools_mod
from gpuclient.rules import usage

if typing.TYPE_CHECKING:
    import datetime

# the message of Nova's NoValidHost, as the fault of the server shows it
NO_VALID_HOST = 'No valid host'


# POOL: the flavor's pool (as its servers' usage names it, else its
# gpu_pool), GPUS: the GPUs one server of it holds
class Demand(typing.NamedTuple):
    flavor: str
    peak: int
    refused: int
    total: int
    pool: str | None
    gpus: int


def refused(server: Mapping[str, typing.Any]) -> bool:
    """Whether SERVER (a dict of ``GET /servers/detail``) was refused by
    the scheduler: ERROR (or since DELETED) with a "No valid host"
    fault."""
    fault = server.get('fault') or {}
    return (server.get('status') in ('ERROR', 'DELETED')
            and NO_VALID_HOST.lower() in str(fault.get('message') or '')
            .lower())


def from_usage(
        items: Iterable[Mapping[str, typing.Any]],
        servers: Iterable[Mapping[str, typing.Any]], start: datetime.datetime,
        end: datetime.datetime,
        pools: Mapping[str, dict[str, typing.Any]] | None = None
) -> list[Demand]:
    """[Demand] per GPU flavor, sorted by flavor name.

    ITEMS: ``rules.usage.usage_items`` of the period (each with
    ``flavor`` and ``interval``); SERVERS: servers listed for the period
    (``changes-since`` START, all projects: dicts with ``created``,
    ``status``, ``fault`` and the embedded flavor); START, END: the
    period (naive UTC datetimes); POOLS: the pools, to tell GPU flavors
    (``usage.gpu_request``).
    """
    intervals = collections.defaultdict(list)
    of = {}  # flavor -> (pool, gpus), the last server's that says
    for item in items:
        if item.get('flavor'):
            intervals[item['flavor']].append(item['interval'])
            of[item['flavor']] = (item.get('pool'), item.get('gpus') or 1)
    refusals: collections.Counter[str] = collections.Counter()
    for server in servers:
        if not refused(server):
            continue
        created = usage.nova_time(server.get('created'))
        if created is None or not start <= created < end:
            continue
        request = usage.gpu_request(server, pools)
        if request['gpus'] and request['flavor']:
            refusals[request['flavor']] += 1
            of.setdefault(request['flavor'],
                          (request['pool'], request['gpus']))
    rows = []
    for flavor in sorted(set(intervals) | set(refusals)):
        top = usage.peak(intervals.get(flavor, ()))
        pool, gpus = of[flavor]
        rows.append(Demand(flavor, top, refusals[flavor],
                           top + refusals[flavor], pool, gpus))
    return rows


def entries(
        rows: Iterable[Demand],
        flavors: Iterable[Mapping[str, typing.Any]] | None,
        pools: Mapping[str, Mapping[str, typing.Any]],
        vgpu_profiles: Mapping[str, str] | None = None
) -> tuple[dict[str, int], list[str]]:
    """``--demand`` entries ({flavor or profile: count}) and notes from
    the rows of ``from_usage`` (ROWS, as ``usage_ops.demand`` reads them): a
    flavor of a MIG pool, or of a vgpu pool whose vGPU type is known
    (VGPU_PROFILES: {pool name: vGPU type}), that the cloud still has
    (FLAVORS) counts by its name (so the summary speaks of it), one Nova
    no longer lists by its pool's profile times its GPUs; flavors of
    other pools are not partitions to plan (a note says so)."""
    vgpu_profiles = vgpu_profiles or {}
    existing = {f.get('name') for f in flavors or ()}
    entries: dict[str, int]
    notes: list[str]
    entries, notes = {}, []
    for row in rows:
        pool = pools.get(row.pool or '')
        if pool is not None and pool['mode'] == pools_mod.VGPU and (
                pool['name'] not in vgpu_profiles):
            notes.append(_(
                'Flavor %(flavor)s (pool %(pool)s): the NVIDIA vGPU type of '
                'mdev type %(type)s is not known (--vgpu-mdev-type), left '
                'out of the demand (%(total)d).')
                % {'flavor': row.flavor, 'pool': row.pool,
                   'type': pool.get('vgpu_type'), 'total': row.total})
            continue
        if pool is None or pool['mode'] not in (pools_mod.MIG,
                                                pools_mod.VGPU):
            notes.append(_(
                'Flavor %(flavor)s (pool %(pool)s): not a MIG or vGPU '
                'pool\'s flavor, left out of the demand (%(total)d).')
                % {'flavor': row.flavor, 'pool': row.pool or '-',
                   'total': row.total})
            continue
        if not row.total:
            continue
        if row.flavor in existing:
            entries[row.flavor] = entries.get(row.flavor, 0) + row.total
        else:
            name = vgpu_profiles.get(pool['name']) or catalogue.profile_name(
                pool['mig_profile'])
            entries[name] = entries.get(name, 0) + row.total * row.gpus
    return entries, notes
