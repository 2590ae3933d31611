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

from __future__ import annotations

import collections.abc
import contextlib
import ctypes
import logging
import os
import sys
import typing

from gpuclient.i18n import _
from gpuclient.ops import config_ops
from gpuclient.rules import catalogue as catalogue_mod
from gpuclient.rules import pools as pools_mod
from gpuclient.rules.profiles import scripts
from gpuclient.rules.profiles import solver

if typing.TYPE_CHECKING:
    from gpuclient.cloud.client import GpuClient
    from gpuclient.rules import model as model_mod

LOG = logging.getLogger(__name__)


def catalogue(model: str | None = None,
              board: str | None = None) -> list[dict[str, typing.Any]]:
    """Rows of ``gpu profile list`` (``rules.catalogue.rows``)."""
    return catalogue_mod.rows(model, board)


def cards_of(
        counts: collections.abc.Mapping[str, int]) -> list[dict[str, str]]:
    """Cards not racked yet from {model: count}: ids ``<MODEL>#<n>``."""
    cards = []
    for text, count in counts.items():
        model = catalogue_mod.model_name(text)
        for n in range(1, count + 1):
            cards.append({'id': '%s#%d' % (model, n), 'model': model})
    return cards


def demand_of(counts: collections.abc.Mapping[str, int]) -> dict[str, int]:
    """{profile: count} with the catalogue's names (a name given twice in
    two spellings adds up)."""
    demand: dict[str, int] = {}
    for text, count in counts.items():
        name = catalogue_mod.profile_name(text)
        demand[name] = demand.get(name, 0) + count
    return demand


def write_scripts(rows: collections.abc.Iterable[dict[str, typing.Any]],
                  output_dir: str) -> dict[str, str]:
    """One script per group of re-cut cards with the same model, current
    and proposed layout, in OUTPUT_DIR (made if missing). Returns {card
    id: path written}; a file that exists already is refused, before
    anything is written."""
    plans = []
    for model, current, layout, cards in scripts.groups(rows):
        path = config_ops.inside(
            output_dir, scripts.script_name(model, layout, current))
        if os.path.exists(path):
            raise FileExistsError(
                _('%s exists already: gpuclient does not overwrite it; '
                  'give another --output-dir or move the file.') % path)
        plans.append((path, scripts.script(model, current, layout, cards),
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


# the lines HiGHS prints on stdout when a solver is made, whatever its
# options (output_flag off silences everything else it writes)
BANNER = ('Running HiGHS ', 'Includes third-party software components')


@contextlib.contextmanager
def quiet_solver() -> collections.abc.Iterator[None]:
    """Keep HiGHS's banner ("Running HiGHS 1.16.0 ... Copyright ...") off
    the terminal: file descriptor 1 goes to a temporary file meanwhile
    (the banner is printed by the C++ solver's constructor, before any
    option can be set, on stdout, which would also break ``-f json``);
    afterwards, any line of it that is not the banner is written to
    stderr. C's buffers are flushed before stdout is given back."""
    import tempfile

    sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:  # no stdout at all: nothing to protect
        yield
        return
    with tempfile.TemporaryFile() as caught:
        try:
            os.dup2(caught.fileno(), 1)
            yield
        finally:
            try:
                ctypes.CDLL(None).fflush(None)
            except (OSError, AttributeError):
                pass
            os.dup2(saved, 1)
            os.close(saved)
            caught.seek(0)
            text = caught.read().decode('utf-8', 'replace')
            rest = [line for line in text.splitlines()
                    if line.strip() and not line.startswith(BANNER)]
            if rest:
                sys.stderr.write('\n'.join(rest) + '\n')


def plan_cards(
    card_counts: collections.abc.Mapping[str, int],
    demand_counts: collections.abc.Mapping[str, int],
    output_dir: str | None = None,
) -> tuple[list[dict[str, typing.Any]], dict[str, typing.Any]]:
    """The plan for cards not racked yet: (rows, summary), each row with
    ``script`` (the path written for it, or None)."""
    demand = demand_of(demand_counts)
    why = catalogue_mod.check_boards(card_counts, demand)
    if why:
        raise catalogue_mod.BoardMismatch(why)
    with quiet_solver():
        rows, summary = solver.plan(cards_of(card_counts), demand)
    written = write_scripts(rows, output_dir) if output_dir else {}
    for row in rows:
        row['script'] = written.get(row['id'])
    return rows, summary


def _read_cloud(
    client: GpuClient, pool_names: collections.abc.Iterable[str],
) -> tuple[model_mod.Cloud, list[str], list[str]]:
    """(cloud, planned hosts, pool names): one snapshot (aggregates,
    hypervisors, services, flavors, the planned hosts' provider trees with
    traits), as ``gpu config show`` reads it. The pools are MIG and vgpu
    pools, or vgpu-vf pools only."""
    from osc_lib import exceptions

    from gpuclient.ops import snapshot

    aggregates, pools, pool_names = snapshot.named_pools(client,
                                                         pool_names)
    vf = pools[pool_names[0]]['mode'] == pools_mod.VGPU_VF if pool_names \
        else False
    modes = (pools_mod.VGPU_VF,) if vf else (pools_mod.MIG, pools_mod.VGPU)
    for name in pool_names:
        if pools[name]['mode'] not in modes:
            raise exceptions.CommandError(
                _('Pool %(pool)s is a %(mode)s pool: --pool plans the cards '
                  'of MIG and time-sliced vGPU (vgpu) pools, or of vgpu-vf '
                  'pools (not both in one plan).')
                % {'pool': name, 'mode': pools[name]['mode']})
    hosts = sorted({h for n in pool_names for h in pools[n]['hosts']})
    if not hosts:
        raise exceptions.CommandError(
            _('Pool(s) %s hold no host: add hosts first ("openstack gpu '
              'pool add host") or plan with --cards.')
            % ', '.join(pool_names))
    cloud = snapshot.read(
        client, extra_classes=('VGPU',), with_flavors=True,
        wanted_hosts=set(hosts), with_traits=True, aggregates=aggregates)
    snapshot.warn_problems(cloud.problems)
    return cloud, hosts, pool_names


def plan_pools(
    client: GpuClient,
    pool_names: collections.abc.Iterable[str],
    demand_counts: collections.abc.Mapping[str, int] | None,
    model: str | None = None,
    mig_types: collections.abc.Mapping[str, str] | None = None,
    output_dir: str | None = None,
    usage_period: tuple[str | None, str | None] | None = None,
    vgpu_types: collections.abc.Mapping[str, str] | None = None,
) -> tuple[list[dict[str, typing.Any]], dict[str, typing.Any], list[str]]:
    """The plan of the cards of POOL_NAMES' hosts: (rows, summary, notes).

    One snapshot, the allocations of the used GPU providers of those hosts
    and the server list (names of the servers to move); the cards and the
    current layouts are ``rules.profiles.cloud.cards`` (MIG) and
    ``vgpu_cards`` (time-sliced pGPUs; VGPU_TYPES: {vGPU type: mdev type}
    from ``--vgpu-mdev-type``, else the pools' ``vgpu_profile``
    property), the plan ``rules.profiles.cloud.plan``, the nova.conf after
    it
    ``rules.profiles.cloud.proposed_config`` (``render.build``). Each
    row: the plan's fields plus ``host``, ``address``, ``servers``
    (the servers that must leave the card first: [(id, name, how)], how
    as ``gpu host drain --allow-downtime --dry-run`` would move it), ``script``
    and ``nova_conf`` (paths written, with OUTPUT_DIR) and ``unserved``
    (proposed profiles no pool serves). The summary has ``flavors``:
    {flavor: (free now, free after)}.
    """
    from gpuclient.rules.profiles import cloud as profile_cloud

    cloud, hosts, pool_names = _read_cloud(client, pool_names)
    if cloud.pools[pool_names[0]]['mode'] == pools_mod.VGPU_VF:
        if usage_period is not None:
            raise profile_cloud.CannotTell(_(
                '--from-usage plans MIG and vgpu pools: give vgpu-vf pools '
                'a --demand.'))
        return plan_vf_pools(cloud, hosts, pool_names, demand_counts,
                             output_dir)
    vgpu_profiles, notes = profile_cloud.vgpu_profiles(cloud.pools,
                                                       vgpu_types)
    if usage_period is not None:
        demand_counts = _usage_demand(client, cloud, usage_period,
                                      vgpu_profiles, notes)
    wanted, of_flavor = profile_cloud.profiles_wanted(
        # given: --demand, or --from-usage above
        demand_counts, cloud.flavors, cloud.pools, vgpu_profiles)  # type: ignore[arg-type]
    trees, found = _cards(client, cloud, hosts, vgpu_profiles, model,
                          notes)
    with quiet_solver():
        rows, summary = profile_cloud.plan(found, wanted)
    config, host_notes, unserved = profile_cloud.proposed_config(
        cloud.pools, trees, found, rows, mig_types, vgpu_profiles)
    for host in hosts:
        notes += host_notes.get(host, [])
    _servers_to_move(client, found, rows, unserved, notes)
    summary['flavors'] = profile_cloud.flavor_figures(found, rows,
                                                      of_flavor)
    written, conf_paths = {}, {}
    if output_dir:
        recut_hosts = sorted({r['host'] for r in rows if r['recut']})
        files = profile_cloud.host_files(config, recut_hosts)
        _refuse_existing(output_dir, [name for name, _text in files])
        written = write_scripts(rows, output_dir)
        conf_paths = write_host_confs(output_dir, files, recut_hosts)
    for row in rows:
        row['script'] = written.get(row['id'])
        row['nova_conf'] = conf_paths.get(row['host'])
    return rows, summary, notes


def _usage_demand(client, cloud, usage_period, vgpu_profiles, notes):
    """The demand counts of ``--from-usage`` (USAGE_PERIOD), notes added
    to NOTES."""
    from gpuclient.ops import usage_ops
    from gpuclient.rules.profiles import cloud as profile_cloud
    from gpuclient.rules.profiles import demand as profile_demand

    (start, end), rows, more = usage_ops.demand(client, *usage_period)
    LOG.info(_('Demand from the usage of %(start)s to %(end)s (UTC).'),
             {'start': start.isoformat(), 'end': end.isoformat()})
    demand_counts, found = profile_demand.entries(
        rows, cloud.flavors, cloud.pools, vgpu_profiles)
    notes += more + found
    for row in rows:
        notes.append(_(
            'Flavor %(flavor)s: %(peak)d servers at the peak, '
            '%(refused)d boots refused ("No valid host"): demand '
            '%(total)d.') % row._asdict())
    if not demand_counts:
        raise profile_cloud.CannotTell(_(
            'No server of a MIG or vGPU pool\'s flavor ran or was '
            'refused from %(start)s to %(end)s: nothing to plan for. '
            'Give a longer period (--start) or --demand.')
            % {'start': start.isoformat(), 'end': end.isoformat()})
    return demand_counts


def _cards(client, cloud, hosts, vgpu_profiles, model, notes):
    """(trees, cards) of HOSTS' MIG and time-sliced vGPU cards, with the
    allocations of their used GPU providers; notes added to NOTES."""
    from gpuclient.ops import snapshot
    from gpuclient.rules.nova_conf import render
    from gpuclient.rules.profiles import cloud as profile_cloud

    host_roots = cloud.host_roots()
    roots = {h: sorted(host_roots.get(h) or ()) for h in hosts}
    notes += [_('%s has no compute node in Placement: its cards are not '
               'planned.') % h for h in hosts if not roots[h]]
    trees = render.trees_from_snapshot(
        cloud.placement, {h: r for h, r in roots.items() if r})
    allocations = snapshot.read_allocations(
        client, cloud, {r for rs in roots.values() for r in rs})
    found = []
    for host in hosts:
        if roots[host]:
            host_cards, host_notes = profile_cloud.host_cards(
                host, trees.get(host, []), cloud.pools, vgpu_profiles,
                allocations, model)
            found += host_cards
            notes += host_notes
    if not found:
        raise profile_cloud.CannotTell(
            _('No MIG or time-sliced vGPU card found on %s: their device '
              'providers serve no VGPU nor a pool\'s class (see '
              '"openstack gpu host list --long").') % ', '.join(hosts))
    return trees, found


def _servers_to_move(client, found, rows, unserved, notes):
    """Each row's host, address, servers to move first (as the drain
    would move them: one drain plan of the hosts concerned) and unserved
    profiles; notes added to NOTES."""
    from gpuclient.rules.profiles import cloud as profile_cloud

    by_id = {c['id']: c for c in found}
    moving = {c['host'] for row in rows for c in [by_id[row['id']]]
              if profile_cloud.servers_to_move(c, row)}
    # how each would leave: the drain plan of those hosts (one more
    # snapshot and server list, whatever the number of servers)
    drain_rows = {}
    if moving:
        from gpuclient.ops import maintenance_ops

        drained, _summary = maintenance_ops.drain_plan(
            client, sorted(moving), allow_downtime=True)
        drain_rows = {r['server']: r for r in drained}
    for row in rows:
        card = by_id[row['id']]
        row['host'], row['address'] = card['host'], card['address']
        row['servers'] = [
            (s, (drain_rows.get(s) or {}).get('name'),
             profile_cloud.move_text(drain_rows.get(s)))
            for s in profile_cloud.servers_to_move(card, row)]
        row['unserved'] = unserved.get(row['id'], [])
        notes += profile_cloud.unserved_notes(row['id'], row['unserved'])
    if any(r['servers'] for r in rows):
        notes.append(_(
            'Servers must leave the re-cut cards first (a server of a card '
            'that keeps its slice stays): each is shown with the way "gpu '
            'host drain <host> --allow-downtime --dry-run" would move it '
            '(live migration only with --host-fact; see "gpu host drain").'))


def plan_vf_pools(
    cloud: model_mod.Cloud,
    hosts: collections.abc.Sequence[str],
    pool_names: collections.abc.Sequence[str],
    demand_counts: collections.abc.Mapping[str, int] | None,
    output_dir: str | None = None,
) -> tuple[list[dict[str, typing.Any]], dict[str, typing.Any], list[str]]:
    """The plan of the VFs of vgpu-vf POOL_NAMES' cards on HOSTS, from the
    snapshot CLOUD (``_read_cloud``): (rows, summary,
    notes), rows as ``rules.profiles.vf.plan`` gives them plus ``script``,
    ``unit`` and ``nova_conf`` (paths written, with OUTPUT_DIR: per host
    of a planned card, re-typed or not, the script that makes the VFs and
    writes their vGPU types, its systemd unit, and the nova-compute file
    with a device_spec per VF)."""
    from gpuclient.rules.nova_conf import render
    from gpuclient.rules.profiles import vf as profile_vf

    types = profile_vf.pool_types([cloud.pools[n] for n in pool_names])
    # given: vgpu-vf pools take --demand only
    wanted = profile_vf.wanted(demand_counts, cloud.flavors, cloud.pools,  # type: ignore[arg-type]
                               types)
    host_roots = cloud.host_roots()
    roots = {h: sorted(host_roots.get(h) or ()) for h in hosts}
    notes = [_('%s has no compute node in Placement: its cards are not '
               'planned.') % h for h in hosts if not roots[h]]
    trees = render.trees_from_snapshot(
        # read with Placement
        cloud.placement, {h: r for h, r in roots.items() if r})  # type: ignore[arg-type]
    assert cloud.placement is not None  # noqa: S101 - read with Placement
    used = {uuid: {rc: item.get('used', 0)
                   for rc, item in (summary.get('resources') or {}).items()}
            for uuid, summary in cloud.placement.summaries.items()}
    found = []
    for host in hosts:
        found += profile_vf.host_cards(host, trees.get(host, []), types,
                                       used)
    if not found:
        raise profile_vf.CannotPlan(_(
            'No card of %(hosts)s offers the classes of %(pools)s in '
            'Placement: give its VFs a vGPU type and a device_spec first '
            '(see "openstack gpu config show --pool <pool>").')
            % {'hosts': ', '.join(hosts), 'pools': ', '.join(pool_names)})
    rows, summary = profile_vf.plan(found, wanted)
    summary['mode'] = pools_mod.VGPU_VF
    # every host's files, re-typed or not: VFs and their types do not
    # survive a reboot, so each host needs the script and its unit
    written = {}
    if output_dir:
        written = write_vf_files(output_dir, sorted({r['host'] for r in rows}),
                                 rows, types)
    for row in rows:
        paths = written.get(row['host']) or {}
        for key in ('script', 'unit', 'nova_conf'):
            row[key] = paths.get(key)
    return rows, summary, notes


def write_vf_files(
    output_dir: str, hosts: collections.abc.Iterable[str],
    rows: list[dict[str, typing.Any]],
    types: dict[str, dict[str, typing.Any]],
) -> dict[str, dict[str, str]]:
    """Per host of HOSTS, the VF script (executable), its systemd unit and
    its nova-compute file in OUTPUT_DIR, never over an existing file (all
    refused before any is written). Returns {host: {'script', 'unit',
    'nova_conf': path}}."""
    from gpuclient.rules.nova_conf import render
    from gpuclient.rules.profiles import vf as profile_vf

    files = []
    for host in hosts:
        target = render.host_target(host)
        installed = '/usr/local/sbin/' + profile_vf.script_name(host)
        files += [
            (host, 'script', profile_vf.script_name(host),
             profile_vf.script(host, rows)),
            (host, 'unit', profile_vf.unit_name(host),
             profile_vf.unit(host, installed)),
            (host, 'nova_conf', render.ini_path(target),
             render.render_target(
                 profile_vf.host_config(host, rows, types), target))]
    _refuse_existing(output_dir, [name for _h, _k, name, _t in files])
    os.makedirs(output_dir, exist_ok=True)
    found: dict[str, dict[str, str]] = {}
    for host, kind, name, text in files:
        path = os.path.join(output_dir, name)
        with open(path, 'x') as out:
            out.write(text)
        if kind == 'script':
            os.chmod(path, 0o755)
        found.setdefault(host, {})[kind] = path
    return found


def write_host_confs(
    output_dir: str, files: collections.abc.Sequence[tuple[str, str]],
    hosts: collections.abc.Sequence[str],
) -> dict[str, str]:
    """Write [(file name, text)], the files of HOSTS in their order, into
    OUTPUT_DIR (made if missing), never over an existing file nor outside
    it (all refused before any is written). Returns {host: path}."""
    _refuse_existing(output_dir, [name for name, _text in files])
    os.makedirs(output_dir, exist_ok=True)
    found = {}
    for host, (name, text) in zip(hosts, files, strict=True):
        path = os.path.join(output_dir, name)
        with open(path, 'x') as out:
            out.write(text)
        found[host] = path
    return found


def _refuse_existing(output_dir: str,
                     names: collections.abc.Iterable[str]) -> None:
    for name in names:
        path = config_ops.inside(output_dir, name)
        if os.path.exists(path):
            raise FileExistsError(
                _('%s exists already: gpuclient does not overwrite it; '
                  'give another --output-dir or move the file.') % path)
