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

import collections

from gpuclient.i18n import _
from gpuclient.rules import baremetal
from gpuclient.rules import capacity as capacity_mod
from gpuclient.rules import hosts as hosts_mod

ERROR = 'error'
WARNING = 'warning'
SEVERITIES = (ERROR, WARNING)
# unmapped trees named in one finding, at most
EXAMPLES = 3

Finding = collections.namedtuple(
    'Finding', ['severity', 'check', 'object', 'symptom', 'fix', 'pools'])


def finding(severity, check, obj, symptom, fix, pools=()):
    return Finding(severity, check, obj, symptom, fix, tuple(sorted(pools)))


# what lets the checks of nova.conf judge
NOVA_CONF_FIX = ('openstack gpu check --nova-conf /etc/nova/nova.conf  '
                 '(the nova.conf of nova-api and nova-scheduler)')


# the symptom of a "not judged" warning: how a reader (and is_not_judged)
# tells it from a finding
NOT_JUDGED = _('not judged: %s.')


def not_judged(check, obj, why, fix, pools=()):
    """A warning: CHECK cannot judge OBJ (WHY), FIX would let it."""
    return finding(WARNING, check, obj, NOT_JUDGED % why, fix, pools)


def is_not_judged(item):
    """Is the finding ITEM a "not judged" warning (``not_judged``)?"""
    return item.severity == WARNING and item.symptom.startswith(
        NOT_JUDGED.partition('%s')[0])


# -- shared questions --------------------------------------------------------

def root_hosts(cloud):
    """{root provider: host} of the trees a hypervisor maps to."""
    return {root: host for host, roots in cloud.host_roots().items()
            for root in roots}


def tree_classes(cloud, root):
    """{class: [(provider uuid, capacity, max_unit)]} of GPU classes."""
    snap = cloud.placement
    ironic = root in cloud.node_roots()
    found = {}
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


def gpu_flavors(cloud):
    """[(flavor, reading)] of every GPU flavor, by name."""
    return capacity_mod.gpu_flavors(cloud.flavors or [], cloud.pools)


def flavor_label(flavor):
    """A flavor as a finding names it: its name, else its ID."""
    return flavor.get('name') or flavor['id']


def flavor_pools(cloud, reading, also=()):
    """The pools a finding about a flavor belongs to: every pool the
    flavor steers to, and ALSO (a pool the finding names besides, such as
    the one whose alias it asks for). ``gpu check --pool P`` keeps the
    findings of P's flavors by this, so no flavor finding names fewer."""
    return sorted(set(capacity_mod.flavor_pools(reading, cloud.pools))
                  | {name for name in also if name})


def target_hosts(cloud, reading):
    """(hosts a flavor can land on, its pools): pool hosts if it steers."""
    steered = capacity_mod.flavor_pools(reading, cloud.pools)
    if reading['steering']:
        found = set()
        for name in steered:
            found.update(cloud.pools[name]['hosts'])
        return sorted(found), steered
    return sorted(cloud.host_roots()), steered

