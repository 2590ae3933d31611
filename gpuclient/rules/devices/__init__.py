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

"""Pure: GPU devices, one by one (``gpu device list``, ``show`` and
``release``, and gpu check's device findings).

A device is a provider of the snapshot whose inventory holds a GPU class.
One module per question (Nova's one-time-use devices are
``gpuclient.rules.one_time_use``, a floor below: the model and the host
rows read them too):

================  ==========================================================
``listing``       a device's row: where it is, who holds it, its state;
                  picking rows by host, pool, server or name
``release``       whether and how ``gpu device release`` releases a row
``health``        the DCGM exporter's series in Prometheus, joined to the
                  rows: XIDs, row remapping, health watches, licences,
                  drivers, devices the exporter does not see
``metrics``       the labels a row needs to join DCGM's series
                  (``gpu device list -f openmetrics``)
================  ==========================================================
"""
