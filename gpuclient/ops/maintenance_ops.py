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

"""Host maintenance: ``gpu host cordon``, ``uncordon`` and ``drain``.

Observe (compute services and hypervisors: two requests, whatever the
number of hosts), plan (``rules.cordon``), apply through the journal: a
failed cordon of several hosts enables again the services it disabled.

A drain observes one snapshot and the servers of every project, plans
(``rules.maintenance``) and applies forward only: its cordon and the moves
it made stay when a move fails, the error says what moved and what is
under way, and the re-run plans from where the servers are then (a move
Nova still runs is waited for). After the moves it reads its hosts back
(``read_back``: their servers and the migrations coming to them) and
plans another round for what arrived, up to MAX_ROUNDS; its cordon
carries the draining reason until the hosts read back empty.
"""

from __future__ import annotations

import collections.abc
import contextlib
import logging
import os
import time
import typing

from gpuclient.cloud import versions
from gpuclient.ops import journal
from gpuclient.ops import snapshot
from gpuclient.rules import cordon as cordon_rules
from gpuclient.rules import model
from gpuclient.rules import plan as plan_mod

if typing.TYPE_CHECKING:
    from gpuclient.cloud.client import GpuClient

    # {host or None (every host): facts} (rules.maintenance.parse_facts)
    _Facts: typing.TypeAlias = dict[str | None, dict[str, typing.Any]]

LOG = logging.getLogger(__name__)


def _services_of(client: GpuClient,
                 names: collections.abc.Iterable[str]) -> list[model.Service]:
    """The nova-compute services (dicts) of the hosts NAMES mean, in the
    order given; the notes of the resolution go to the log (stderr)."""
    services, notes = snapshot.services_of(client, names)
    for note in notes:
        LOG.warning(note)
    return services


def cordon(
    client: GpuClient, hosts: collections.abc.Iterable[str],
    reason: str | None = None, dry_run: bool = False,
) -> tuple[list[dict[str, typing.Any]], plan_mod.Plan]:
    """Disable the compute services of HOSTS with gpuclient's reason.

    Returns (rows, plan): one row per host (``rules.cordon.ROW_FIELDS``)
    as it is after the command (planned, for DRY_RUN).
    """
    _check_reason(reason)
    rows, steps = cordon_rules.cordon(_services_of(client, hosts), reason)
    plan = plan_mod.Plan('gpu host cordon', steps)
    journal.run(client, plan, dry_run=dry_run)
    return cordon_rules.apply_rows(rows, dry_run), plan


def _check_reason(reason: str | None, draining: bool = False) -> None:
    """Refuse, before anything is read or written, a --reason Nova would
    refuse (too long with gpuclient's marker)."""
    from osc_lib import exceptions

    problem = cordon_rules.reason_problem(reason, draining)
    if problem:
        raise exceptions.CommandError(problem)


def uncordon(
    client: GpuClient, hosts: collections.abc.Iterable[str],
    dry_run: bool = False, force: bool = False,
) -> tuple[list[dict[str, typing.Any]], plan_mod.Plan, str | None]:
    """Enable the compute services of HOSTS that gpuclient disabled.

    A service a drain holds (its cordon not finished) is refused, nothing
    changed, unless FORCE. Returns (rows, plan, note): NOTE names the
    services disabled by someone else, left alone (None when there are
    none).
    """
    from osc_lib import exceptions

    services = _services_of(client, hosts)
    held = cordon_rules.held_by_drain(services)
    if held and not force:
        raise exceptions.CommandError(cordon_rules.held_text(held))
    rows, steps, others = cordon_rules.uncordon(services, force=force)
    plan = plan_mod.Plan('gpu host uncordon', steps)
    journal.run(client, plan, dry_run=dry_run)
    note = cordon_rules.others_text(others) if others else None
    return cordon_rules.apply_rows(rows, dry_run), plan, note


# -- drain: the plan ----------------------------------------------------------

def drain_plan(
    client: GpuClient,
    hosts: collections.abc.Iterable[str],
    requested: str = 'auto',
    allow_downtime: bool = False,
    settings: dict[str, typing.Any] | None = None,
    facts: _Facts | None = None,
    prometheus: str | None = None,
) -> tuple[list[dict[str, typing.Any]], dict[str, typing.Any]]:
    """(rows, summary) of ``gpu host drain --dry-run`` (``observe``)."""
    observed = observe(client, hosts, requested, allow_downtime, settings,
                       facts, prometheus)
    return observed['rows'], observed['summary']


def observe(
    client: GpuClient,
    hosts: collections.abc.Iterable[str],
    requested: str = 'auto',
    allow_downtime: bool = False,
    settings: dict[str, typing.Any] | None = None,
    facts: _Facts | None = None,
    prometheus: str | None = None,
) -> dict[str, typing.Any]:
    """The drain of HOSTS as planned now: {'rows', 'summary' (of ``gpu
    host drain --dry-run``), 'cloud' (the ``model.Cloud`` it planned
    from), 'draining' (the compute hosts HOSTS mean)}.

    ``rules.maintenance.plan`` over the one model of the cloud as read
    (``snapshot.read``: aggregates, hypervisors, services, provider
    trees; ``snapshot.read_servers``: the servers of every project,
    paged), whatever the number of hosts.

    FACTS: ``rules.maintenance.parse_facts``, over what gpuclient-host-facts
    collected (``_facts``: PROMETHEUS, else the cloud's); a fact unknown
    plans no live migration that needs it.
    Servers whose move off a drained host Nova runs now (an earlier
    drain's) get a row that waits for it (``under_way``), and servers an
    earlier drain left in VERIFY_RESIZE one that confirms it.
    """
    from gpuclient.rules import maintenance
    from gpuclient.rules.scheduler import manager
    client.compute.require(versions.COMPUTE_EMBEDDED_FLAVOR_VERSION,
                           versions.COMPUTE_HYPERVISOR_UUID_VERSION)
    cloud = snapshot.read(client, mapped_only=True)
    snapshot.warn_problems(cloud.problems)
    draining, notes = cloud.resolve_hosts(hosts)
    # --host-fact HOST: resolved as the hosts are, refused when unknown
    facts, fact_notes = cloud.resolve_fact_hosts(facts or {})
    for note in notes + fact_notes:
        LOG.warning(note)
    all_servers = snapshot.read_servers(client, cloud)
    servers = [s for s in all_servers
               if s.get('OS-EXT-SRV-ATTR:host') in draining]
    # moves an earlier drain left unconfirmed, or that Nova still runs:
    # read the migrations only when a server waits for a confirmation or
    # is being moved (one paged request)
    waiting = [s for s in all_servers
               if (s.get('status') or '').upper() == maintenance.VERIFY_RESIZE
               and s.get('OS-EXT-SRV-ATTR:host') not in draining]
    moving = [s for s in servers if _moving(s)]
    migrations = []
    if moving:
        migrations = snapshot.read_migrations(client, cloud, draining)
    elif waiting:
        migrations = snapshot.read_migrations(
            client, cloud, status=maintenance.FINISHED,
            migration_type='migration')
    under_way = maintenance.outgoing(moving, migrations, draining)
    # read with the services
    cordoned = [svc['host'] for svc in cloud.services  # type: ignore[union-attr]
                if cordon_rules.is_disabled(svc)
                and svc['host'] not in draining]
    # BlazarFilter keeps ordinary flavors off the hosts Blazar holds: a
    # move there would end in "No valid host"
    assert cloud.blazar is not None  # noqa: S101 - snapshot.read reads it
    settings = manager.decide_settings(settings, cloud.blazar)
    result = maintenance.plan(
        cloud, draining, cordoned,
        facts=_facts(client, cloud, facts, settings, requested, prometheus),
        requested=requested, allow_downtime=allow_downtime,
        settings=settings,
        gpu_rows=_held(client, cloud, servers, draining),
        under_way=under_way)
    rows = result['rows'] + maintenance.under_way_rows(
        servers, under_way, cloud.pools)
    if waiting:
        rows = rows + maintenance.unconfirmed_rows(
            waiting, [m for m in migrations
                      if m.get('status') == maintenance.FINISHED
                      and m.get('migration_type') == 'migration'],
            draining, cloud.pools)
    return {'rows': rows, 'summary': result['summary'], 'cloud': cloud,
            'draining': draining}


def _facts(
    client: GpuClient, cloud: model.Cloud, facts: _Facts,
    settings: dict[str, typing.Any], requested: str, prometheus: str | None,
) -> dict[str, dict[str, typing.Any]]:
    """{host: facts} of every host of CLOUD the plan judges by: the
    operator's FACTS over what the pools and SETTINGS say
    (``maintenance.host_facts``), over the versions and mdev types each
    host's gpuclient-host-facts collected (``host_facts_ops.add_collected``,
    read only for a plan that may live-migrate: REQUESTED auto or live)."""
    from gpuclient.ops import host_facts_ops
    from gpuclient.rules import maintenance
    from gpuclient.rules.host_facts import scheduling

    told = maintenance.host_facts(facts, cloud.host_roots(), cloud.pools,
                                  settings)
    if requested not in (maintenance.AUTO, maintenance.LIVE):
        return told
    return host_facts_ops.add_collected(client, cloud, told,
                                        scheduling.DRAIN_KEYS, prometheus)


def _moving(server: dict[str, typing.Any]) -> bool:
    """Whether Nova is moving SERVER now (its status or task says so)."""
    status = (server.get('status') or '').upper()
    task = server.get('OS-EXT-STS:task_state') or ''
    return status in ('MIGRATING', 'RESIZE') or 'migrat' in task or (
        task.startswith('resize'))


def _held(
    client: GpuClient, cloud: model.Cloud,
    servers: list[dict[str, typing.Any]],
    draining: collections.abc.Iterable[str],
) -> dict[str, dict[str, typing.Any]]:
    """{server id: ``usage.server_rows`` row} of SERVERS: the GPU devices
    each holds, from the allocations of the used GPU providers of the
    DRAINING hosts only (one request per such provider)."""
    from gpuclient.rules import usage

    host_roots = cloud.host_roots()
    roots = set()
    for host in draining:
        roots |= set(host_roots.get(host) or ())
    allocations = snapshot.read_allocations(client, cloud, roots)
    return {row['id']: row
            for row in usage.server_rows(servers, cloud, allocations)}


def _tree_uuids(
    cloud: model.Cloud, hosts: collections.abc.Iterable[str | None],
) -> dict[str, list[str]]:
    """{host: uuids of every provider of its trees} for HOSTS."""
    roots = cloud.host_roots()
    assert cloud.placement is not None  # noqa: S101 - read with Placement
    return {host: list(cloud.placement.providers_in_trees(
        sorted(roots.get(host) or ()))) for host in hosts if host}


def _write_notices(notice_dir: str, texts: dict[str, str]) -> list[str]:
    """Write one notice per project into NOTICE_DIR. A file already there
    with the same text is kept (the re-run of a drain); one with another
    text is refused before anything is written. Returns the paths."""
    from osc_lib import exceptions

    from gpuclient.i18n import _
    from gpuclient.rules import maintenance

    paths = {project: os.path.join(notice_dir,
                                   maintenance.notice_name(project))
             for project in texts}
    same, other = set(), []
    for project, path in paths.items():
        if not os.path.exists(path):
            continue
        try:
            with open(path, encoding='utf-8') as there:
                kept = there.read() == texts[project]
        except (OSError, UnicodeDecodeError):
            kept = False
        if kept:
            same.add(project)
        else:
            other.append(path)
    if other:
        raise exceptions.CommandError(_(
            'Notice file(s) already there with another text, not '
            'overwritten: %s. Move them away or give another '
            '--notice-dir.') % ', '.join(sorted(other)))
    os.makedirs(notice_dir, exist_ok=True)
    for project, text in texts.items():
        if project in same:
            continue
        with open(paths[project], 'x', encoding='utf-8') as out:
            out.write(text)
    return sorted(paths.values())


# how many times a drain plans again for what arrived on its hosts
MAX_ROUNDS = 3
# how often the read-back looks again while moves to a drained host end
READ_BACK_INTERVAL = 5.0


def _clock() -> float:
    return time.monotonic()


def _sleep(seconds: float) -> None:
    time.sleep(seconds)


def read_back(
    client: GpuClient, draining: collections.abc.Sequence[str],
) -> dict[str, list[dict[str, typing.Any]]]:
    """What is on the DRAINING hosts now: {'servers': [servers whose host
    is one of them], 'incoming': [migrations Nova runs towards them]}.
    One server list per host (Nova's ``host`` filter) and one migration
    list, whatever the number of servers."""
    from gpuclient.rules import maintenance

    # list[Any] as before: incoming() types its items as Mappings, the
    # dicts read_back's callers take
    servers: list[typing.Any] = snapshot.servers_on(client, draining)
    return {'servers': servers, 'incoming': maintenance.incoming(
        snapshot.migrations_of(client, draining), draining)}


def _move_steps(
    cloud: model.Cloud, rows: list[dict[str, typing.Any]],
    cordon_steps: list[plan_mod.Step], confirm: bool, timeout: int | None,
) -> list[plan_mod.Step]:
    from gpuclient.rules import maintenance

    involved = {r['destination'] for r in rows} | {r['source'] for r in rows}
    return maintenance.steps(rows, cordon_steps,
                             _tree_uuids(cloud, involved), confirm=confirm,
                             timeout=timeout)


def drain(
    client: GpuClient,
    hosts: collections.abc.Iterable[str],
    requested: str = 'auto',
    allow_downtime: bool = False,
    dry_run: bool = False,
    reason: str | None = None,
    confirm: bool = True,
    timeout: int | None = None,
    skip_unmovable: bool = False,
    notice_dir: str | None = None,
    settings: dict[str, typing.Any] | None = None,
    facts: _Facts | None = None,
    on_step: journal.OnStep | None = None,
    prometheus: str | None = None,
) -> tuple[list[dict[str, typing.Any]], plan_mod.Plan, list[str]]:
    """``gpu host drain``: cordon HOSTS, then move every server off them
    as planned, forward only (the journal: a failure stops and says what
    moved; the re-run plans from where the servers are).

    The cordon's reason is the draining one ("gpuclient: draining:
    <reason>") until the hosts read back empty. After the moves, the
    servers of the drained hosts and the migrations coming to them are
    read again: what arrived meanwhile is planned and moved in another
    round (at most MAX_ROUNDS in all; moves coming in are waited for, up
    to TIMEOUT), and what is still there at the end is an error naming
    it (the servers --skip-unmovable let stay excepted). Hosts read back
    empty get the ordinary cordon reason and are logged as drained.

    Returns (rows, plan, notices): the rows of every round, the first
    round's Plan, and the notice files (written when the plan is final,
    just before the first write; identical files already there are
    kept). Refuses, before any write or notice, a --reason Nova would
    refuse and a plan where a server would stay unless SKIP_UNMOVABLE.
    ON_STEP(index, step): called before each step of each round (tests
    pause there: before the first write, the plan is final). PROMETHEUS:
    where the hosts' collected facts are read (``observe``).
    """
    from osc_lib import exceptions

    from gpuclient.i18n import _
    from gpuclient.rules import maintenance

    _check_reason(reason, draining=True)
    if not dry_run:
        client.compute.require(versions.COMPUTE_MIGRATE_HOST_VERSION,
                               versions.COMPUTE_MIGRATIONS_VERSION)
    observed = observe(client, hosts, requested, allow_downtime, settings,
                       facts, prometheus)
    rows, cloud, draining = (observed['rows'], observed['cloud'],
                             observed['draining'])
    staying = maintenance.blockers(rows)
    if staying and not skip_unmovable and not dry_run:
        raise exceptions.CommandError(_(
            'Nothing was changed: %(n)d server(s) cannot leave %(hosts)s: '
            '%(which)s. Make room (or allow downtime, or another --method) '
            'and run it again, or add --skip-unmovable to cordon the hosts '
            'and move the others.') % {
                'n': len(staying), 'hosts': ', '.join(draining),
                'which': maintenance.blockers_text(staying)})
    _cordon_rows, cordon_steps = cordon_rules.cordon(
        [svc for svc in cloud.services if svc['host'] in draining], reason,
        undone=False, draining=True)
    plan = plan_mod.Plan('gpu host drain', _move_steps(
        cloud, rows, cordon_steps, confirm, timeout), forward=True)
    written = []
    if notice_dir:
        written = _write_notices(
            notice_dir, maintenance.notices(rows, draining, reason))
    if dry_run:
        return rows, plan, written
    _run(client, plan, on_step)
    # servers --skip-unmovable lets stay
    let_stay = {r['server'] for r in staying}
    all_rows = list(rows) + _more_rounds(
        client, draining, let_stay, requested, allow_downtime, settings,
        facts, confirm, timeout, on_step, prometheus)
    _finish(client, draining, let_stay, reason, timeout, on_step)
    return all_rows, plan, written


def _more_rounds(client, draining, let_stay, requested, allow_downtime,
                 settings, facts, confirm, timeout, on_step, prometheus):
    """The drain's later rounds: what arrived on DRAINING meanwhile,
    planned and moved (at most MAX_ROUNDS in all); their rows."""
    from gpuclient.rules import maintenance

    all_rows = []
    for _round in range(1, MAX_ROUNDS):
        left = _settled(client, draining, timeout)
        pending = [s for s in left['servers'] if s['id'] not in let_stay]
        if not pending:
            break
        with _reading_back(draining):
            observed = observe(client, draining, requested, allow_downtime,
                               settings, facts, prometheus)
        more = [r for r in observed['rows'] if r['server'] not in let_stay]
        movable = [r for r in more if r['method'] != maintenance.STAYS]
        all_rows += more
        if not movable:
            break
        _run(client, plan_mod.Plan('gpu host drain', _move_steps(
            observed['cloud'], more, [], confirm, timeout), forward=True),
            on_step)
    return all_rows


def _finish(client, draining, let_stay, reason, timeout, on_step):
    """The drain's end: DRAINING read back (an error names what is still
    there, LET_STAY excepted), then the ordinary cordon reason."""
    from osc_lib import exceptions

    from gpuclient.i18n import _
    from gpuclient.rules import maintenance

    left = _settled(client, draining, timeout)
    there = [s for s in left['servers'] if s['id'] not in let_stay]
    if there or left['incoming']:
        raise exceptions.CommandError(_(
            'gpu host drain did not empty %(hosts)s: %(left)s. The hosts '
            'stay cordoned (by the drain: "gpu host uncordon" refuses them '
            'without --force). Settle these servers (see "openstack server '
            'migration list --host <host>"), then run the drain '
            'again.') % {'hosts': ', '.join(draining),
                         'left': maintenance.left_text(
                             there, left['incoming'])})
    stays = {s.get('OS-EXT-SRV-ATTR:host') for s in left['servers']}
    with _reading_back(draining):
        services = snapshot.compute_services(client)
    try:
        _run(client, plan_mod.Plan('gpu host drain', cordon_rules.drained(
            [svc for svc in services if svc['host'] in draining], reason),
            forward=True), on_step)
    except journal.ApplyError as exc:
        raise journal.ApplyError(_(
            'gpu host drain moved every server it could and read '
            '%(hosts)s back empty, but giving them the ordinary cordon '
            'reason failed (%(error)s): they keep the drain\'s reason, '
            'which "gpu host uncordon" refuses without --force. Run the '
            'drain again to finish.') % {
                'hosts': ', '.join(draining),
                'error': str(exc).strip().rstrip('.')},
            failed=exc.failed, left=exc.left) from exc
    empty = [h for h in draining if h not in stays]
    if empty:
        LOG.info(_('Drained (read back with no server and no move coming): '
                   '%s'), ', '.join(empty))
    if stays:
        LOG.warning(_('Not drained (--skip-unmovable): %s'),
                    maintenance.left_text(left['servers'], ()))


def _run(client: GpuClient, plan: plan_mod.Plan,
         on_step: journal.OnStep | None) -> None:
    executor = journal.run(client, plan, on_step=on_step)
    for warning in executor.warnings if executor else ():
        LOG.warning(warning)


@contextlib.contextmanager
def _reading_back(
    draining: collections.abc.Iterable[str],
) -> collections.abc.Iterator[None]:
    """Any read that fails after the cordon is a CommandError that says
    the hosts stay the drain's and to run it again: without the read
    nobody knows they are empty."""
    from osc_lib import exceptions

    from gpuclient.i18n import _

    try:
        yield
    except Exception as exc:  # noqa: BLE001 - any failed read
        raise exceptions.CommandError(_(
            'gpu host drain could not read %(hosts)s back after its cordon '
            'and moves (%(error)s), so it does not know whether they are '
            'empty. The hosts stay cordoned by the drain ("gpu host '
            'uncordon" refuses them without --force); run the drain again '
            'to finish it.') % {
                'hosts': ', '.join(draining),
                'error': str(exc).strip().rstrip('.')}) from exc


def _settled(
    client: GpuClient, draining: collections.abc.Sequence[str],
    timeout: int | None,
) -> dict[str, list[dict[str, typing.Any]]]:
    """read_back, again while only moves coming to the hosts are left
    (up to TIMEOUT seconds): their servers land on a drained host, where
    the next round moves them."""
    deadline = _clock() + (timeout or journal.DEFAULT_MOVE_TIMEOUT)
    while True:
        with _reading_back(draining):
            left = read_back(client, draining)
        if not left['incoming'] or left['servers'] or _clock() >= deadline:
            return left
        _sleep(READ_BACK_INTERVAL)
