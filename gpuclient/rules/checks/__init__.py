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

"""Pure: misconfigurations that make GPU instances fail or land wrong.

Every check is a small function ``(cloud, settings) -> [Finding]`` over
one ``gpuclient.rules.model.Cloud`` (read with flavors, images and pool
members). ``settings`` are the scheduler's settings read from
``--nova-conf`` files (``gpuclient.rules.scheduler.conf.load_settings``),
or None when no file was given: the others assume the settings gpuclient
renders (``gpu config show``), as ``gpu candidate list`` does.

Laid out as ``nova/scheduler/filters/``: a module per family of checks,
named after what it checks, each with ``CHECKS`` ((name, function) in the
order they run); ``utils`` holds what they share. ``FAMILIES`` lists the
families in the order they run, and ``CHECKS`` is the registry built from
them: {name: function}, in report order (``run`` sorts each severity's
findings by it).

* ``pools``: the GPU pools and what leads to them: members, aggregates,
  aliases and project limits; flavors; the nova.conf and placement.conf
  lines their devices need; images.
* ``services``: Nova's scheduler settings and quotas, Blazar, Placement's
  trees and compute services, Ironic's nodes.
* ``gpus``: the GPUs themselves: stranded and idle GPUs, and the devices'
  health (the DCGM exporter, through Prometheus).
* ``hosts``: the GPU hosts themselves, from the facts gpuclient-host-facts
  publishes of each (through Prometheus): IOMMU, the drivers of the GPUs
  and of their IOMMU groups, what a reboot loses (VFs, vGPU types, MIG
  instances), layouts, MIG changes pending, mdevctl, facts out of date.

A check never stays silent about an object it cannot judge (nova.conf
not given, Keystone's projects or some provider's traits not read, an
alias nothing describes): it reports a warning naming the object and
what would let it judge (``not_judged``).

A ``Finding`` says how bad it is (``error``: a user gets "No valid host",
a refused request or an instance on the wrong hosts; ``warning``: a
likely mistake that may be intended), which check found it, the object,
the symptom a user would see, and the exact command or nova.conf line
that fixes it.
"""

from __future__ import annotations

import collections
from collections.abc import Collection
from collections.abc import Iterable
from collections.abc import Mapping
import typing

from gpuclient import exit_status
from gpuclient.rules.checks import gpus
from gpuclient.rules.checks import hosts
from gpuclient.rules.checks import pools
from gpuclient.rules.checks import services
from gpuclient.rules.checks import utils

if typing.TYPE_CHECKING:
    from gpuclient.rules import model

# the families, in the order their checks run
FAMILIES = (
    pools,
    services,
    gpus,
    hosts,
)
CHECKS = collections.OrderedDict(
    check for family in FAMILIES for check in family.CHECKS)

# the names the command, the report (check_report), the plan's simulation
# (document_plan) and the tests use: what a finding is made of (utils),
# and the fixes the report folds the "not judged" warnings by
ERROR = utils.ERROR
WARNING = utils.WARNING
EXAMPLES = utils.EXAMPLES
finding = utils.finding
not_judged = utils.not_judged
is_not_judged = utils.is_not_judged
NOVA_CONF_FIX = utils.NOVA_CONF_FIX
PROMETHEUS_FIX = utils.PROMETHEUS_FIX
IDLE_DCGM_FIX = gpus.IDLE_DCGM_FIX
DCGM_FIX = gpus.DCGM_FIX
SELECTOR_FIX = gpus.SELECTOR_FIX
HOST_FACTS_FIX = hosts.HOST_FACTS_FIX


# -- running -----------------------------------------------------------------

def unknown_checks(names: Iterable[str] | None) -> list[str]:
    """Names that are not checks (for --check)."""
    return sorted(set(names or ()) - set(CHECKS))


def run(cloud: model.Cloud, settings: dict[str, typing.Any] | None = None,
        names: Collection[str] | None = None,
        pool: str | None = None) -> list[utils.Finding]:
    """Findings of the checks NAMES (default: all), errors first.

    POOL keeps only findings about that pool.
    """
    found = []
    for name, func in CHECKS.items():
        if names and name not in names:
            continue
        for item in func(cloud, settings):
            if pool is not None and pool not in item.pools:
                continue
            found.append(item)
    order = {name: i for i, name in enumerate(CHECKS)}
    found.sort(key=lambda f: (utils.SEVERITIES.index(f.severity),
                              order[f.check], f.object))
    return found


# The reads beyond the snapshot each check rests on whole: keys of
# ``cloud.unread`` (the source failed: refused, unreachable, an error or a
# wrongly shaped answer) or of ``cloud.unconfigured`` (no source is
# configured: no Prometheus). Without them all the check has nothing to
# judge: it could not run (``not_run``), and the exit status does not
# cover it; with one of several (gpu-driver-drift: the DCGM exporter's
# driver versions, the hosts' facts) it runs on what it has. A read
# missing for some objects only (one provider's traits, a device without
# a series, a host without facts, nova.conf not given, where the checks
# judge with the settings gpuclient renders) is not this: the check ran
# and says "not judged" of those objects.
SOURCES = {
    'quota-gpu-limits': ('registered',),
    'quota-pci-not-enforced': ('compute_max_version',),
    'gpu-idle': ('utilisation',),
    'gpu-unhealthy': ('device_health',),
    'gpu-application-xid': ('device_health',),
    'gpu-row-remap': ('device_health',),
    'gpu-vgpu-licence': ('device_health',),
    'gpu-driver-drift': ('device_health', hosts.SOURCE),
    'gpu-missing': ('device_health',),
}
SOURCES.update((name, (hosts.SOURCE,)) for name, _func in hosts.CHECKS)


def _missing(cloud: model.Cloud, source: str, name: str) -> str | None:
    """Why CLOUD lacks SOURCE for the check NAME, or None."""
    why = cloud.unread.get(source) or cloud.unconfigured.get(source)
    if not why and source == 'device_health':
        why = gpus.unread_answers(cloud, name)
    return why or None


def not_run(cloud: model.Cloud,
            names: Collection[str] | None = None) -> dict[str, str]:
    """{check: why it could not run} of the checks NAMES (default: all),
    in report order: the checks CLOUD lacks their sources for (SOURCES):
    one at least says why (``_missing``) and none of the others was read
    (its field None), their reasons '; ' joined."""
    found = {}
    for name in CHECKS:
        sources = SOURCES.get(name)
        if not sources or (names and name not in names):
            continue
        why = {source: _missing(cloud, source, name) for source in sources}
        if any(why.values()) and all(
                reason or getattr(cloud, source) is None
                for source, reason in why.items()):
            found[name] = '; '.join(dict.fromkeys(
                reason for reason in why.values() if reason))
    return found


def not_run_text(missing: Mapping[str, str]) -> str:
    """'check, check (why); check (why)' of NOT_RUN's answer MISSING:
    the checks that could not run for one reason named together."""
    by_why: dict[str, list[str]] = {}
    for name, why in missing.items():
        by_why.setdefault(why, []).append(name)
    return '; '.join('%s (%s)' % (', '.join(names), str(why).rstrip('.'))
                     for why, names in by_why.items())


# The exit statuses of ``gpu check`` (gpuclient.exit_status, diff(1)'s):
# the checks ran and found nothing that counts; they found an error (with
# --strict, any finding); they could not run (bad options, the cloud
# unreachable or refusing, output that could not be written, or every
# check asked for lacks its source), which is argparse's status for bad
# usage too.
EXIT_CLEAN = exit_status.SAME
EXIT_FINDINGS = exit_status.DIFFERENT
EXIT_NOT_RUN = exit_status.TROUBLE


# the module exit_status is read above, before this function takes its name
def exit_status(  # type: ignore[no-redef]
        findings: Iterable[utils.Finding], strict: bool = False,
        names: Collection[str] | None = None,
        missing: Collection[str] | None = None) -> int:
    """EXIT_NOT_RUN when every check of NAMES (default: all) is in
    MISSING (``not_run``: they could not run); else EXIT_FINDINGS when an
    error (with STRICT: any finding) was found, else EXIT_CLEAN."""
    asked = [n for n in CHECKS if not names or n in names]
    if missing and all(n in missing for n in asked):
        return EXIT_NOT_RUN
    for item in findings:
        if item.severity == ERROR or strict:
            return EXIT_FINDINGS
    return EXIT_CLEAN
