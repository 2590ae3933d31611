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

"""Pure: nova.conf, read and written.

==========  ================================================================
``parse``   nova.conf's syntax as oslo.config reads it: one file's text to
            {section: {key: [values]}}, several files laid over each other
            (``--config-file``, ``--config-dir``)
``render``  the nova.conf (and placement.conf) settings the GPU pools need,
            per service and host (``build``), as text, as the Kolla-Ansible
            override tree, or as files
``diff``    what an existing configuration lacks or contradicts
==========  ================================================================

What the options mean to the scheduler is Nova's layout, so it stays in
``gpuclient.rules.scheduler.conf`` (``nova/conf/scheduler.py``), which
reads the files with ``parse``. The files themselves are read in the ops
layer: ``gpuclient.ops.nova_settings`` (``--nova-conf``,
``--nova-conf-dir``) and ``gpuclient.ops.config_ops`` (``gpu config
show --diff`` and ``export``).
"""
