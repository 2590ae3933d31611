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

"""Pure: what a GPU host is, as its own files say (issue 54).

The collector (``gpuclient-host-facts``, ``gpuclient.hostfacts``) reads a
host's sysfs, procfs, package database and ``nvidia-smi``, and writes what
it read as node_exporter textfile series; the commands that read those
series back from the cloud's Prometheus use the same definitions. No I/O
here. One module per question (the collector uses the first three;
``join``, ``listing`` and ``scheduling`` are the reading side's):

================  ==========================================================
``shapes``        the facts of one host (``HostFacts``: its IOMMU, its PCI
                  functions with their drivers, IOMMU groups, NUMA nodes,
                  VFs, vGPU and mdev types, MIG modes and layouts, the
                  versions of its driver, kernel, libvirt, QEMU and
                  nova-compute) and the names of the facts that can be
                  unreadable (``FACTS``)
``contents``      what the host's files and ``nvidia-smi`` say, parsed:
                  the kernel command line, sysfs attributes, dpkg's status
                  file, the driver's version file, ``nvidia-smi``'s MIG
                  query and GPU-instance table, vGPU type lists
``series``        the series (``gpuclient_host_*``, labelled ``Hostname``
                  and ``pci_bus_id`` as the DCGM exporter labels a GPU):
                  their names, facts to series and back, the Prometheus
                  text format written and read
``join``          the series the cloud's Prometheus holds, joined to this
                  cloud's compute hosts (the queries; a guest's series left
                  out, two collectors for one host not judged)
``listing``       the rows of ``gpu host facts`` (an unreadable fact never
                  a value)
``scheduling``    a host's facts as the NUMA fit and the drain take them
                  (``numa_gpus``, ``nova``, ``libvirt``, ``qemu``,
                  ``mdev_types``: what ``--host-fact`` gives), none where a
                  value could be wrong
================  ==========================================================
"""
