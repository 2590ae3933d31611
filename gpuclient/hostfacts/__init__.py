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

"""``gpuclient-host-facts``: the read-only collector run on each GPU host.

Its own floor: it reads a host's files under a root directory (``/``, or
a fake tree in the tests), runs ``nvidia-smi`` where the host has it, and
writes the facts as node_exporter textfile series. It imports the pure
definitions of ``gpuclient.rules.host_facts`` and ``gpuclient.i18n``
only, so it starts without OpenStackClient, and nothing but the tests
imports it (``tools/layers.py`` keeps both).

================  ==========================================================
``files``         a root directory's files, read safely (regular files of
                  bounded size, links that stay inside the root)
``sysfs``         the PCI functions: NVIDIA's, their IOMMU groups, VFs,
                  vGPU and mdev types, mediated devices
``software``      the host name, the kernel command line, the IOMMU, the
                  tools installed and the versions of the kernel, the
                  NVIDIA driver, libvirt, QEMU and nova-compute
``nvidia_smi``    ``nvidia-smi``'s MIG modes and GPU instances (run with a
                  timeout; under a fake root, files stand for its output)
``collector``     one host's facts, all of the above
``textfile``      the file written atomically
``main``          the console script
================  ==========================================================
"""
