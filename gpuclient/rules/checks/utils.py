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

"""Pure: what the families of checks share.

Laid out as ``nova/scheduler/filters/utils.py`` beside its filters: the
``Finding`` every check returns and its severities, the "not judged"
warning (``not_judged``), the fix that gives the checks a nova.conf, and
the questions several families ask of the cloud (the GPU flavors, a
flavor's pools and target hosts, a tree's GPU classes).
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping
import typing

from gpuclient.i18n import _
from gpuclient.rules import baremetal
from gpuclient.rules import capacity as capacity_mod
from gpuclient.rules import hosts as hosts_mod

if typing.TYPE_CHECKING:
    from gpuclient.rules import model

ERROR = 'error'
WARNING = 'warning'
SEVERITIES = (ERROR, WARNING)
# unmapped trees named in one finding, at most
EXAMPLES = 3


class Finding(typing.NamedTuple):
    # ERROR or WARNING
    severity: str
    # the check's name
    check: str
    # what the finding is about ('pool P / host H', 'flavor F', ...)
    object: str
    symptom: str
    fix: str
    # the pools it belongs to, sorted (gpu check --pool)
    pools: tuple[str, ...]


def finding(severity: str, check: str, obj: str, symptom: str, fix: str,
            pools: Iterable[str] = ()) -> Finding:
    return Finding(severity, check, obj, symptom, fix, tuple(sorted(pools)))


# what lets the checks of nova.conf judge
NOVA_CONF_FIX = ('openstack gpu check --nova-conf /etc/nova/nova.conf  '
                 '(the nova.conf of nova-api and nova-scheduler)')


# where the checks that read Prometheus (the servers' utilisation, the DCGM
# exporter's series, the hosts' facts) find it: gpu check's options and
# settings
PROMETHEUS_FIX = ('openstack gpu check --prometheus <url>  (or '
                  'prometheus_endpoint in the cloud\'s clouds.yaml entry, '
                  'or $GPUCLIENT_PROMETHEUS_URL)')


# the symptom of a "not judged" warning: how a reader (and is_not_judged)
# tells it from a finding
NOT_JUDGED = _('not judged: %s.')


def not_judged(check: str, obj: str, why: str, fix: str,
               pools: Iterable[str] = ()) -> Finding:
    """A warning: CHECK cannot judge OBJ (WHY), FIX would let it."""
    return finding(WARNING, check, obj, NOT_JUDGED % why, fix, pools)


def is_not_judged(item: Finding) -> bool:
    """Is the finding ITEM a "not judged" warning (``not_judged``)?"""
    return item.severity == WARNING and item.symptom.startswith(
        NOT_JUDGED.partition('%s')[0])


# -- shared questions --------------------------------------------------------

def root_hosts(cloud: model.Cloud) -> dict[str, str]:
    """{root provider: host} of the trees a hypervisor maps to."""
    return {root: host for host, roots in cloud.host_roots().items()
            for root in roots}


def tree_classes(cloud: model.Cloud,
                 root: str) -> dict[str, list[tuple[str, int, int]]]:
    """{class: [(provider uuid, capacity, max_unit)]} of GPU classes."""
    # gpu check reads Placement (ops.check_ops.run)
    snap: model.Placement = cloud.placement  # type: ignore[assignment]
    assert cloud.gpu_classes is not None  # noqa: S101 - read with it
    ironic = root in cloud.node_roots()
    found: dict[str, list[tuple[str, int, int]]] = {}
    for uuid in snap.providers_in_trees([root]):
        summary = snap.summaries.get(uuid) or {}
        resources = summary.get('resources') or {}
        for rc, item in resources.items():
            if rc in cloud.gpu_classes:
                # a one-time-use device awaiting release counts: it is
                # the host's, only not free
                total = hosts_mod.device_figures(
                    item, node=baremetal.is_node_item(rc, item, ironic),
                    traits=summary.get('traits'))[0]
                found.setdefault(rc, []).append(
                    (uuid, total, item.get('max_unit') or total))
    return found


def gpu_flavors(
        cloud: model.Cloud
) -> list[tuple[Mapping[str, typing.Any], dict[str, typing.Any]]]:
    """[(flavor, reading)] of every GPU flavor, by name."""
    return capacity_mod.gpu_flavors(cloud.flavors or [], cloud.pools)


def flavor_label(flavor: Mapping[str, typing.Any]) -> str:
    """A flavor as a finding names it: its name, else its ID."""
    return flavor.get('name') or flavor['id']


def flavor_pools(cloud: model.Cloud, reading: dict[str, typing.Any],
                 also: Iterable[str | None] = ()) -> list[str]:
    """The pools a finding about a flavor belongs to: every pool the
    flavor steers to, and ALSO (a pool the finding names besides, such as
    the one whose alias it asks for). ``gpu check --pool P`` keeps the
    findings of P's flavors by this, so no flavor finding names fewer."""
    return sorted(set(capacity_mod.flavor_pools(reading, cloud.pools))
                  | {name for name in also if name})


def target_hosts(
        cloud: model.Cloud,
        reading: dict[str, typing.Any]) -> tuple[list[str], list[str]]:
    """(hosts a flavor can land on, its pools): pool hosts if it steers."""
    steered = capacity_mod.flavor_pools(reading, cloud.pools)
    if reading['steering']:
        found = set()
        for name in steered:
            found.update(cloud.pools[name]['hosts'])
        return sorted(found), steered
    return sorted(cloud.host_roots()), steered

