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

"""Debian's node_exporter for the test cloud's fake hosts (stdlib only).

A real compute host runs ``prometheus-node-exporter``, whose
``meminfo_numa`` collector reads ``/sys/devices/system/node/node<N>/``
(``meminfo``, ``numastat``) and publishes ``node_memory_numa_MemTotal``,
``node_memory_numa_HugePages_Total``, ... with a ``node`` label. The fake
hosts have no sysfs of their own: ``sysfs_files`` writes the small tree
the kernel would show for the NUMA topology the fake driver reports
(``cloud.hosts.numa_cells``: 2 cells of half the CPUs and memory on the
passthrough hosts, one node holding everything on a host without a NUMA
topology, as on a real machine without NUMA; 4k pages only, so the huge
page counts are 0), and ``argv`` runs the real exporter on it with only
that collector.
"""

import os

BINARY = '/usr/bin/prometheus-node-exporter'

# the keys the kernel's node_read_meminfo writes, in its order (Linux 6.1)
MEMINFO_KEYS = (
    'MemTotal', 'MemFree', 'MemUsed', 'SwapCached', 'Active', 'Inactive',
    'Active(anon)', 'Inactive(anon)', 'Active(file)', 'Inactive(file)',
    'Unevictable', 'Mlocked', 'Dirty', 'Writeback', 'FilePages', 'Mapped',
    'AnonPages', 'Shmem', 'KernelStack', 'PageTables', 'SecPageTables',
    'NFS_Unstable', 'Bounce', 'WritebackTmp', 'KReclaimable', 'Slab',
    'SReclaimable', 'SUnreclaim', 'AnonHugePages', 'ShmemHugePages',
    'ShmemPmdMapped', 'FileHugePages', 'FilePmdMapped')
HUGEPAGE_KEYS = ('HugePages_Total', 'HugePages_Free', 'HugePages_Surp')
NUMASTAT_KEYS = ('numa_hit', 'numa_miss', 'numa_foreign', 'interleave_hit',
                 'local_node', 'other_node')


def _ranges(first, last):
    return '%d-%d' % (first, last) if last > first else '%d' % first


def meminfo(node, memory_kb):
    """node<N>/meminfo as the kernel writes it: an idle node, all memory
    free, no huge pages."""
    values = dict.fromkeys(MEMINFO_KEYS, 0)
    values.update(MemTotal=memory_kb, MemFree=memory_kb)
    lines = ['Node %d %-16s%8d kB' % (node, key + ':', values[key])
             for key in MEMINFO_KEYS]
    lines += ['Node %d %-16s%6d' % (node, key + ':', 0)
              for key in HUGEPAGE_KEYS]
    return '\n'.join(lines) + '\n'


def sysfs_files(cells, vcpus, memory_mb):
    """{path under the sysfs root: text} of a host with CELLS NUMA cells
    (0: no NUMA topology, one node as the kernel shows then), VCPUS CPUs
    and MEMORY_MB of memory, split evenly as the fake driver splits
    them."""
    nodes = max(cells, 1)
    per_cpus, per_kb = vcpus // nodes, memory_mb * 1024 // nodes
    base = os.path.join('devices', 'system', 'node')
    files = {os.path.join(base, name): _ranges(0, nodes - 1) + '\n'
             for name in ('online', 'possible', 'has_cpu', 'has_memory')}
    for node in range(nodes):
        path = os.path.join(base, 'node%d' % node)
        files[os.path.join(path, 'meminfo')] = meminfo(node, per_kb)
        files[os.path.join(path, 'numastat')] = ''.join(
            '%s 0\n' % key for key in NUMASTAT_KEYS)
        files[os.path.join(path, 'cpulist')] = _ranges(
            node * per_cpus, (node + 1) * per_cpus - 1) + '\n'
    return files


def write_sysfs(root, cells, vcpus, memory_mb):
    """Write sysfs_files under ROOT (a fresh tree); return ROOT."""
    for path, text in sysfs_files(cells, vcpus, memory_mb).items():
        full = os.path.join(root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, 'w') as f:
            f.write(text)
    return root


def argv(sysfs, port, binary=BINARY, textfile=None):
    """The exporter on 127.0.0.1:PORT: meminfo_numa reading SYSFS (None:
    not that collector) and, with TEXTFILE (a directory), the textfile
    collector serving the *.prom files there (gpuclient-host-facts')."""
    found = [binary, '--collector.disable-defaults']
    if sysfs is not None:
        found += ['--path.sysfs=' + sysfs, '--collector.meminfo_numa']
    if textfile is not None:
        found += ['--collector.textfile',
                  '--collector.textfile.directory=' + textfile]
    return found + ['--web.disable-exporter-metrics',
                    '--web.listen-address=127.0.0.1:%d' % port]
