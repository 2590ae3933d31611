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

"""Pure: Nova's scheduler, laid out as Nova lays it out (Nova 34).

One module per piece, named after the Nova file it follows, so that a
change in Nova maps to one file here:

=============================  ============================================
gpuclient.rules.scheduler      Nova
=============================  ============================================
``conf``                       ``nova/conf/scheduler.py`` (nova.conf's
                               syntax: ``gpuclient.rules.nova_conf``)
``pci``                        ``nova/pci/request.py`` (``[pci] alias``)
``hardware``                   ``nova/virt/hardware.py`` (flavor ``hw:``
                               and image ``hw_`` values)
``request_filter``             ``nova/scheduler/request_filter.py``
``resource_request``           ``nova/scheduler/utils.py``
                               (``ResourceRequest``, the query string)
``manager``                    ``nova/scheduler/manager.py`` (the
                               settings, decided once per command)
``request_spec``               ``nova/objects/request_spec.py``
                               (``RequestSpec``: what the filters judge)
``host_manager``               ``nova/scheduler/host_manager.py``
                               (``HostState``)
``filters``                    ``nova/scheduler/filters/``: one module per
                               filter, the registry ``filters.FILTERS``
``fit``                        Placement's allocation candidates, counted
``explain``                    why Placement or a filter left a host out
``exception``                  ``nova/exception.py`` (one CommandError)
=============================  ============================================

Not here: the compute quota (Nova's API checks it before scheduling:
gpuclient.rules.quota) and which flavors depend on which aggregate key
(gpuclient.rules.dependents).
"""
