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

"""Pure: the scheduler's entry point (``nova/scheduler/manager.py``).

Nova's manager takes one request spec through the pipeline: the
settings it runs with, the Placement request, the filters, the fit. Here
the settings are decided once, at the top of a command, and every floor
below takes them as given (issue 53).
"""

from gpuclient.rules import reservations
from gpuclient.rules.scheduler import conf


def decide_settings(settings, blazar=False):
    """The scheduler settings a command runs with: SETTINGS as read
    (nova.conf, options), else Nova's defaults; where Blazar runs
    (BLAZAR), with BlazarFilter added when the filters are the defaults
    (``reservations.with_filter``: Blazar's install guide adds it)."""
    settings = settings or conf.load_settings()
    if blazar:
        settings = reservations.with_filter(settings)
    return settings
