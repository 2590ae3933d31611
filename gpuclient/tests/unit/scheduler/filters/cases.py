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

"""The compute nodes the image properties and compute capabilities
filters are judged on, and their cases: each request with the answer
gpuclient gives on each node. The plain tests check gpuclient's answers;
the _nova tests give every case to Nova's filters too, on a HostState
that reads the node as a ComputeNode (``_update_from_compute_node``),
while gpuclient sees it as the compute API (2.53) shows it. Standard
library only (the test cloud's interpreter runs the _nova tests).
"""

import json

from gpuclient.rules.scheduler import host_manager as hm
from gpuclient.tests.unit import nova_harness

if nova_harness.HAVE_NOVA:
    with nova_harness.quiet():
        from nova import objects
        from nova.scheduler import host_manager

CPU = {'arch': 'x86_64', 'model': 'Nehalem', 'vendor': 'Intel',
       'features': ['pge', 'clflush', 'avx2'],
       'topology': {'cores': 8, 'threads': 2, 'sockets': 2},
       'maxphysaddr': {'mode': 'passthrough', 'bits': 46}}

# (name, compute node fields, supported_instances as its driver reports)
NODES = {
    'fake': dict(hypervisor_type='fake', hypervisor_version=1000,
                 cpu_info=dict(CPU, topology={'cores': 1, 'threads': 1,
                                              'sockets': 4}),
                 supported=[['x86_64', 'fake', 'hvm']]),
    # libvirt/KVM on x86_64 with i686 guests too
    'kvm': dict(hypervisor_type='QEMU', hypervisor_version=8002000,
                cpu_info=CPU,
                supported=[['x86_64', 'qemu', 'hvm'],
                           ['x86_64', 'kvm', 'hvm'],
                           ['i686', 'qemu', 'hvm'], ['i686', 'kvm', 'hvm']]),
    # libvirt/QEMU without KVM, with an aarch64 emulator installed
    'tcg': dict(hypervisor_type='QEMU', hypervisor_version=6002000,
                cpu_info=dict(CPU, features=['pge']),
                supported=[['x86_64', 'qemu', 'hvm'],
                           ['aarch64', 'qemu', 'hvm']]),
    'ironic': dict(hypervisor_type='ironic', hypervisor_version=1,
                   cpu_info=None, supported=[['x86_64', 'baremetal', 'hvm']],
                   stats={'resource_class': 'baremetal.gpu',
                          'cpu_arch': 'x86_64'}),
}


def api_view(name):
    """The node as GET /os-hypervisors/detail (2.53) shows it."""
    node = NODES[name]
    return {'id': 'uuid-' + name, 'hypervisor_hostname': name,
            'hypervisor_type': node['hypervisor_type'],
            'hypervisor_version': node['hypervisor_version'],
            'host_ip': '192.0.2.7', 'cpu_info': node['cpu_info'] or {},
            'vcpus': 64, 'vcpus_used': 6, 'memory_mb': 262144,
            'memory_mb_used': 16384, 'free_ram_mb': 245760, 'local_gb': 900,
            'local_gb_used': 100, 'free_disk_gb': 800,
            'disk_available_least': 750, 'running_vms': 3,
            'service': {'host': 'host-' + name, 'id': 7}, 'state': 'up',
            'status': 'enabled'}


# image properties -> expected ImagePropertiesFilter answer per node
IMAGE_CASES = [
    ({}, {'fake': hm.PASS, 'kvm': hm.PASS, 'tcg': hm.PASS,
          'ironic': hm.PASS}),
    ({'architecture': 'x86_64'}, {'fake': hm.PASS, 'kvm': hm.PASS,
                                  'tcg': hm.PASS, 'ironic': hm.UNKNOWN}),
    ({'architecture': 'amd64'}, {'fake': hm.PASS, 'kvm': hm.PASS}),
    ({'architecture': 'aarch64'}, {'fake': hm.FAIL, 'kvm': hm.UNKNOWN,
                                   'tcg': hm.UNKNOWN}),
    ({'hw_architecture': 'aarch64', 'architecture': 'x86_64'},
     {'fake': hm.FAIL}),
    ({'img_hv_type': 'qemu'}, {'fake': hm.FAIL, 'kvm': hm.PASS,
                               'tcg': hm.PASS, 'ironic': hm.FAIL}),
    ({'hypervisor_type': 'kvm'}, {'fake': hm.FAIL, 'kvm': hm.UNKNOWN,
                                  'tcg': hm.UNKNOWN, 'ironic': hm.FAIL}),
    ({'img_hv_type': 'xen'}, {'kvm': hm.FAIL, 'fake': hm.FAIL}),
    ({'img_hv_type': 'baremetal'}, {'fake': hm.FAIL, 'kvm': hm.FAIL,
                                    'ironic': hm.UNKNOWN}),
    ({'img_hv_type': 'fake'}, {'fake': hm.PASS, 'kvm': hm.FAIL}),
    ({'hw_vm_mode': 'hvm'}, {'fake': hm.PASS, 'kvm': hm.PASS}),
    ({'vm_mode': 'xen'}, {'fake': hm.FAIL, 'kvm': hm.FAIL,
                          'ironic': hm.FAIL}),
    ({'hw_vm_mode': 'exe'}, {'fake': hm.FAIL, 'tcg': hm.FAIL}),
    ({'architecture': 'x86_64', 'img_hv_requested_version': '>=8.0'},
     {'kvm': hm.PASS, 'tcg': hm.FAIL, 'fake': hm.FAIL}),
    ({'architecture': 'x86_64',
      'img_hv_requested_version': '>=6.2,<8'},
     {'kvm': hm.FAIL, 'tcg': hm.PASS}),
    ({'img_hv_type': 'qemu', 'hypervisor_version_requires': '==8.2'},
     {'kvm': hm.PASS, 'tcg': hm.FAIL}),
    # the version alone does not make the filter look
    ({'img_hv_requested_version': '>=99'}, {'fake': hm.PASS,
                                            'kvm': hm.PASS}),
    # Nova 34 raises in the filter (cpu_info read as a dict): open
    ({'architecture': 'x86_64', 'hw_maxphysaddr_bits': '48'},
     {'kvm': hm.UNKNOWN, 'fake': hm.UNKNOWN}),
    ({'architecture': 'aarch64', 'hw_maxphysaddr_bits': '40'},
     {'fake': hm.FAIL}),
]

# flavor extra specs -> expected ComputeCapabilitiesFilter answer per node
CAPABILITY_CASES = [
    ({}, {'fake': hm.PASS, 'kvm': hm.PASS, 'ironic': hm.PASS}),
    ({'hw:cpu_policy': 'dedicated', 'trait:HW_CPU_X86_AVX2': 'required'},
     {'fake': hm.PASS, 'kvm': hm.PASS, 'ironic': hm.PASS}),
    ({'capabilities:cpu_info:arch': 'x86_64'},
     {'fake': hm.PASS, 'kvm': hm.PASS, 'ironic': hm.FAIL}),
    ({'capabilities:cpu_info:arch': 's== aarch64'},
     {'fake': hm.FAIL, 'kvm': hm.FAIL}),
    ({'capabilities:cpu_info:arch': '<or> aarch64 <or> x86_64'},
     {'fake': hm.PASS, 'kvm': hm.PASS}),
    ({'capabilities:cpu_info:vendor': 's!= Intel'}, {'kvm': hm.FAIL}),
    ({'capabilities:cpu_info:features': '<in> avx2'},
     {'fake': hm.PASS, 'tcg': hm.FAIL}),
    ({'capabilities:cpu_info:features': '<all-in> pge avx2'},
     {'kvm': hm.PASS, 'tcg': hm.FAIL}),
    ({'capabilities:cpu_info:topology:cores': '>= 4'},
     {'fake': hm.FAIL, 'kvm': hm.PASS}),
    ({'capabilities:cpu_info:topology:sockets': '4'},
     {'fake': hm.PASS, 'kvm': hm.FAIL}),
    ({'capabilities:cpu_info:numa_cells': '2'}, {'kvm': hm.FAIL}),
    ({'capabilities:hypervisor_type': 's== QEMU'},
     {'kvm': hm.PASS, 'fake': hm.FAIL}),
    ({'capabilities:hypervisor_version': '>= 7000000'},
     {'kvm': hm.PASS, 'tcg': hm.FAIL, 'ironic': hm.FAIL}),
    ({'capabilities:free_ram_mb': '>= 200000'}, {'kvm': hm.PASS}),
    ({'capabilities:free_disk_mb': '== 768000'}, {'kvm': hm.PASS}),
    ({'capabilities:free_disk_mb': '>= 800000'}, {'kvm': hm.FAIL}),
    ({'capabilities:total_usable_ram_mb': '262144'}, {'kvm': hm.PASS}),
    ({'capabilities:vcpus_total': '>= 128'}, {'kvm': hm.FAIL}),
    ({'capabilities:vcpus_used': '<= 6'}, {'kvm': hm.PASS}),
    ({'capabilities:disk_mb_used': '102400'}, {'kvm': hm.PASS}),
    ({'capabilities:host_ip': '192.0.2.7'}, {'kvm': hm.PASS}),
    ({'capabilities:hypervisor_hostname': 's== kvm'},
     {'kvm': hm.PASS, 'tcg': hm.FAIL}),
    ({'capabilities:no_such_thing': '1'}, {'fake': hm.FAIL,
                                           'kvm': hm.FAIL}),
    ({'capabilities:resource_class': 'baremetal.gpu'},
     {'ironic': hm.UNKNOWN, 'kvm': hm.FAIL}),
    ({'capabilities:cpu_info': '<in> x86_64'}, {'kvm': hm.UNKNOWN}),
    ({'capabilities:numa_topology': '<in> cells'}, {'kvm': hm.UNKNOWN}),
    # unscoped: judged when HostState has the attribute, else ignored
    ({'hypervisor_type': 'fake'}, {'fake': hm.PASS, 'kvm': hm.FAIL}),
    ({'vcpus_total': '64'}, {'kvm': hm.PASS}),
    ({'gpu_pool': 'h100'}, {'fake': hm.PASS, 'kvm': hm.PASS,
                            'ironic': hm.UNKNOWN}),
    ({'num_instances': '3'}, {'kvm': hm.PASS}),
    ({'num_vm_active': '3'}, {'kvm': hm.UNKNOWN}),
    ({'aggregate_instance_extra_specs:gpu_pool': 'h100'},
     {'kvm': hm.PASS}),
    ({'hw:maxphysaddr_bits': '40'}, {'kvm': hm.PASS, 'ironic': hm.FAIL}),
    ({'hw:maxphysaddr_bits': '52'}, {'kvm': hm.FAIL}),
]


def nova_host_state(name):
    """Nova's HostState of node NAME, read from its ComputeNode."""
    node = NODES[name]
    cpu = node['cpu_info']
    compute = objects.ComputeNode(
        uuid='00000000-0000-0000-0000-%012d' % len(name),
        hypervisor_hostname=name, host='host-' + name,
        hypervisor_type=node['hypervisor_type'],
        hypervisor_version=node['hypervisor_version'],
        cpu_info=json.dumps(cpu) if cpu else '',
        host_ip='192.0.2.7', vcpus=64, vcpus_used=6, memory_mb=262144,
        memory_mb_used=16384, free_ram_mb=245760, local_gb=900,
        local_gb_used=100, free_disk_gb=800, disk_available_least=750,
        running_vms=3, numa_topology=None, pci_device_pools=None,
        metrics='[]', updated_at=None, cpu_allocation_ratio=16.0,
        ram_allocation_ratio=1.5, disk_allocation_ratio=1.0,
        stats=dict(node.get('stats') or {}, num_instances='3'),
        supported_hv_specs=[objects.HVSpec.from_list(s)
                            for s in node['supported']])
    state = host_manager.HostState('host-' + name, name, 'cell')
    state._update_from_compute_node(compute)
    return state


def nova_request_spec(extra_specs=None, properties=None):
    """Nova's RequestSpec of a flavor with EXTRA_SPECS and an image with
    PROPERTIES."""
    return objects.RequestSpec(
        flavor=nova_harness.flavor({'extra_specs': extra_specs}),
        image=nova_harness.image(properties or {}))
