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

"""``gpu check``: one snapshot of the cloud, then the pure checks.

Requests: the snapshot with flavors, images, pool members and projects,
and Keystone's registered limits only when nova.conf's [quota] was read
and the cloud has pools (the quota-gpu-limits check judges them).
"""

import logging

from osc_lib import exceptions

from gpuclient.ops import snapshot
from gpuclient.rules import checks
from gpuclient.rules import pools as pools_mod

LOG = logging.getLogger(__name__)


def run(client, settings=None, names=None, pool=None):
    """The findings of ``checks.run`` over one snapshot."""
    cloud = snapshot.read(client, with_flavors=True, mapped_only=True,
                          with_images=True, with_pool_members=True,
                          with_projects=True)
    if pool and pool not in cloud.pools:
        raise pools_mod.unknown_pool(pool, cloud.pools)
    for note in cloud.placement.notes():
        LOG.warning(note)
    if (settings or {}).get('quota') and cloud.pools:
        # the quota-gpu-limits check judges the registered limits
        try:
            registered = client.limits.registered()
            cloud.registered_limits = {
                n: r['limit'] for n, r in registered.items()}
        except exceptions.CommandError as exc:
            # the quota-gpu-limits check says it could not judge
            cloud.registered_limits_error = str(exc)
    return checks.run(cloud, settings, names=names, pool=pool)
