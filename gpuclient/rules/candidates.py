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

"""Pure: ``gpu candidate list``'s answer from what its command read.

``ops/candidate_ops.collect`` reads (the cloud's snapshot, the flavor,
the image, Placement's answer to the flavor's own request, the
providers, the NUMA facts) into a ``Read``; ``table`` asks the scheduler
(``manager.select``) and builds the rows, notes and settings the command
shows. The explanation of hosts not offered stays with the reads it
needs (``candidate_ops._explain``).
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping
import dataclasses
import typing

from gpuclient.i18n import _
from gpuclient.rules import baremetal
from gpuclient.rules import pools as pools_mod
from gpuclient.rules.scheduler import conf as nova_conf
from gpuclient.rules.scheduler import explain
from gpuclient.rules.scheduler import filters
from gpuclient.rules.scheduler import manager
from gpuclient.rules.scheduler import pci
from gpuclient.rules.scheduler import resource_request as request
from gpuclient.rules.scheduler.filters import numa_topology_filter as numa_mod

if typing.TYPE_CHECKING:
    from gpuclient.rules import model


@dataclasses.dataclass
class Read:
    """What ``gpu candidate list`` read, once."""
    # model.Cloud: Nova's side (Placement is asked the flavor's own
    # question instead)
    cloud: model.Cloud
    # the settings, decided once (manager.decide_settings)
    settings: dict[str, typing.Any]
    # the request (resource_request.build or from_resources)
    req: dict[str, typing.Any]
    # Placement's allocation-candidates answer to REQ
    answer: dict[str, typing.Any]
    # every resource provider ([provider dicts])
    providers: list[dict[str, typing.Any]]
    project_id: str
    # the placement microversion the query used, as shown
    microversion: str | None = None
    # the flavor (None: resources given) and the image ({}: none)
    flavor: dict[str, typing.Any] | None = None
    image: dict[str, typing.Any] | None = None
    # --pool, resolved to its name (None: every host)
    pool: str | None = None
    # --zone (None: any)
    zone: str | None = None
    # {host: facts} of every host (--host-fact, NUMA nodes)
    host_facts: dict[str, dict[str, typing.Any]] | None = None
    # notes about --host-fact
    fact_notes: list[str] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Table:
    """``table``'s answer: RESULT, the command's dict, and what the
    explanation of hosts not offered goes on with."""
    result: dict[str, typing.Any]
    trees: explain.Trees
    hosts_roots: dict[str, set[str]]
    # {host: [reason dicts]} of the hosts the filters remove
    removed: dict[str, list[dict[str, typing.Any]]]
    # the hosts of --pool (None: every host)
    members: set[str] | None


def table(read: Read) -> Table:
    """The command's answer (a ``Table``) from READ (a ``Read``)."""
    cloud, settings, req, answer = (read.cloud, read.settings, read.req,
                                    read.answer)
    flavor, image = read.flavor, read.image or {}
    hypervisors, pools = cloud.hypervisors, cloud.pools
    trees = explain.Trees()
    trees.node_roots = baremetal.node_roots(hypervisors)
    trees.add_answer(answer)
    trees.name_providers(read.providers)
    by_host = pools_mod.pools_by_host(pools)
    rows = explain.candidate_rows(answer, req, hypervisors, trees, by_host)
    roots = cloud.host_roots()
    enabled = settings['enabled_filters']
    # the request and every host's state, once: the filters, the NUMA
    # verdicts and what they could not judge judge the same
    ctx = filters.context(cloud, filters.spec(
        settings, flavor, read.project_id, image, read.zone, req),
        read.host_facts)
    members = set(pools[read.pool]['hosts']) if read.pool else None
    offered = {row['host'] for row in rows}
    # NUMA judged on every offered host of --pool, a provider no
    # hypervisor maps to a host included (the filters never see it)
    selected = manager.select(
        cloud, ctx.spec, sorted(roots), ctx.states,
        numa_hosts=[row['host'] for row in rows
                    if members is None or row['host'] in members])
    removed = manager.removed(selected)
    kept = [row for row in rows if row['host'] not in removed
            and (members is None or row['host'] in members)]
    numa = {}
    for row in kept:
        verdict = (selected.get(row['host']) or manager.Selection(
            row['host'])).numa
        if verdict is not None:
            numa[row['host']] = verdict
    for row in kept:
        row['numa'] = numa_mod.row_text(numa.get(row['host']))
    count = len(answer.get('allocation_requests') or [])
    notes = read.fact_notes + list(req['notes'])
    notes += _limit_notes(req, rows, count)
    unjudged = numa_mod.unjudged_note(numa)
    if unjudged:
        notes.append(unjudged)
    not_checked = {name: why for name, why in filters.NOT_CHECKED.items()
                   if name in enabled}
    # ImagePropertiesFilter and ComputeCapabilitiesFilter are judged; only
    # what the compute API does not show stays "not checked"
    for name in (filters.IMAGE_FILTER, filters.CAPABILITIES_FILTER):
        not_checked.pop(name, None)
    not_checked.update(filters.unchecked(sorted(roots), ctx, enabled))
    result = {
        'flavor': (flavor or {}).get('name'),
        'image': image.get('name'),
        'project_id': read.project_id,
        'microversion': read.microversion,
        'query': request.querystring(req),
        'groups': request.describe(req),
        'candidates': count,
        'hosts': kept,
        'filtered': {host: [filters.post_filter_text(host, r,
                                                     read.project_id)
                            for r in reasons]
                     for host, reasons in removed.items()
                     if host in offered},
        'notes': notes,
        'not_covered': req['not_covered'],
        'not_checked': not_checked,
        'settings': {key: (list(value) if isinstance(value, tuple)
                           else value)
                     for key, value in settings.items()
                     if key in nova_conf.DEFAULT_SETTINGS},
        'settings_sources': settings['sources'],
        'settings_file': settings.get('file'),
        'aliases': {name: {'resource_class': alias['resource_class'],
                           'traits': sorted(alias.get('traits') or ()),
                           'source': alias.get('source')}
                    for name, alias in sorted(
                        dict(pci.pool_aliases(pools),
                             **settings['aliases']).items())},
        'placement_requests': 0,
        'eliminated': {},
        'pools_by_host': by_host,
        'quota': None,
        'maybe_truncated': bool(req.get('limit') and count >= req['limit']),
    }
    return Table(result, trees, roots, removed, members)


def _limit_notes(req: Mapping[str, typing.Any],
                 rows: Iterable[Mapping[str, typing.Any]],
                 count: int) -> list[str]:
    """Notes on Placement's candidate limit: COUNT candidates reached it,
    and hosts with several of ROWS may have crowded others out."""
    notes = []
    if req.get('limit') and count >= req['limit']:
        notes.append(_(
            'Placement returned %(count)d allocation candidates, the limit '
            'of this query (%(limit)d, Nova\'s [scheduler] '
            'max_placement_results): hosts beyond it are not shown, as Nova '
            'would not see them either. Raise --limit to see more.')
            % {'count': count, 'limit': req['limit']})
    crowded = explain.crowded_hosts(rows, count, req.get('limit'))
    if crowded:
        notes.append(_(
            'Hosts with several of them (%(hosts)s) may have crowded others '
            'out: a host with many child providers of a class (a wide '
            'provider tree) gives one candidate per combination, and '
            'Placement keeps the limit\'s share of all candidates in no '
            'order it promises. Where placement.conf also sets '
            'max_allocation_candidates, Placement stops generating at it: '
            'with [placement] allocation_candidates_generation_strategy = '
            'breadth-first (Placement 13.0.0, 2025.1) it takes one '
            'candidate of each host in turn instead of every candidate of '
            'the first hosts (gpu check: placement-wide-trees).')
            % {'hosts': ', '.join('%s: %d' % item for item in crowded)})
    return notes
