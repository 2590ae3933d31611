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

"""The exit statuses of the commands a pipeline gates on: diff(1)'s.

``gpu check``, ``gpu diff`` and ``gpu config show --diff`` report a
difference or findings; their exit status says which of three things
happened, as ``diff``, ``cmp`` and ``grep`` say it:

* :data:`SAME` (0): the comparison or the checks ran and found nothing
  that counts;
* :data:`DIFFERENT` (1): they found a difference or a finding (the
  output says which);
* :data:`TROUBLE` (2): they could not run: bad options (argparse exits 2
  on a usage error already), an unreadable file, the cloud unreachable or
  refusing the reads, output that could not be written. The reason is on
  stderr.

Every other ``openstack gpu`` command exits as OSC's commands do: 0, or 1
with a one-line reason. The user documentation says this in one place
(``doc/source/user/exit-status.rst``). Standard library only: the command
classes read these numbers when every ``openstack`` command loads them.
"""

SAME = 0
DIFFERENT = 1
TROUBLE = 2
