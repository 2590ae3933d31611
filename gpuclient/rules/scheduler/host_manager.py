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

"""Pure: a compute node as Nova's scheduler sees it, from the compute API.

Nova's filters read a scheduler ``HostState`` (``nova/scheduler/
host_manager.py``) built from the ComputeNode record
(``HostState._update_from_compute_node``), not the API's dict.
``HOST_STATE_FIELDS`` maps each HostState attribute to the API field(s) it
is made from (``GET /os-hypervisors/detail`` at microversions 2.28-2.87:
hypervisor_type, hypervisor_version, hypervisor_hostname, host_ip,
cpu_info as a dict, vcpus, memory and disk figures, running_vms; 2.88
drops most of them); ``UNSEEN_ATTRIBUTES`` are HostState attributes the
API does not show (the node's ``stats``, NUMA topology, PCI pools,
metrics, ...). A filter judges one node: PASS, FAIL or UNKNOWN (what the
API does not show is never a pass or a failure); a host passes if one of
its nodes does.
"""

from gpuclient.i18n import _
from gpuclient.rules import host_names

# HostState attribute -> how the compute API (2.53) shows it
HOST_STATE_FIELDS = {
    'host': 'service.host',
    'nodename': 'hypervisor_hostname',
    'hypervisor_hostname': 'hypervisor_hostname',
    'uuid': 'id',
    'hypervisor_type': 'hypervisor_type',
    'hypervisor_version': 'hypervisor_version',
    'host_ip': 'host_ip',
    'cpu_info': 'cpu_info',
    'free_ram_mb': 'free_ram_mb',
    'total_usable_ram_mb': 'memory_mb',
    'total_usable_disk_gb': 'local_gb',
    'disk_mb_used': 'local_gb_used * 1024',
    'free_disk_mb': 'min(free_disk_gb, disk_available_least) * 1024',
    'vcpus_total': 'vcpus',
    'vcpus_used': 'vcpus_used',
    'num_instances': 'running_vms',
}
# HostState attributes the compute API does not show
UNSEEN_ATTRIBUTES = (
    'stats', 'numa_topology', 'pci_stats', 'metrics', 'limits',
    'aggregates', 'instances', 'num_io_ops', 'failed_builds',
    'cpu_allocation_ratio', 'ram_allocation_ratio', 'disk_allocation_ratio',
    'cell_uuid', 'updated', 'supported_instances', 'allocation_candidates')


PASS, FAIL, UNKNOWN = 'pass', 'fail', 'unknown'


def host_state(hypervisor):
    """{HostState attribute: value} as far as the API shows (2.28-2.87).

    ``cpu_info`` stays a dict (HostState holds the JSON text).
    """
    hv = hypervisor
    state = {}
    for attribute, field in HOST_STATE_FIELDS.items():
        if field in hv:
            state[attribute] = hv[field]
    state['host'] = host_names.nova_host(hv)
    if 'local_gb_used' in hv and hv['local_gb_used'] is not None:
        state['disk_mb_used'] = hv['local_gb_used'] * 1024
    free_gb, least = hv.get('free_disk_gb'), hv.get('disk_available_least')
    if free_gb is not None:
        state['free_disk_mb'] = (min(free_gb, least) if least is not None
                                 else free_gb) * 1024
    return state


def nodes_by_host(hypervisors):
    """{Nova host: [hypervisor dicts]} (compute API >= 2.53)."""
    found = {}
    for hv in hypervisors or ():
        host = host_names.nova_host(hv)
        if host:
            found.setdefault(host, []).append(hv)
    return found


def judge_host(nodes, judge):
    """A host passes if one of its nodes does (HostState is per node)."""
    results = [judge(node) for node in nodes]
    for status in (PASS, UNKNOWN):
        for found, detail in results:
            if found == status:
                return found, detail
    if results:
        return results[0]
    return UNKNOWN, {'why': _('no hypervisor record')}
