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

"""Pure: GPU pools <-> Nova host aggregate metadata.

A pool is a host aggregate whose metadata carries ``gpu_pool``; ordinary
aggregates are never treated as pools.
"""

POOL_KEY = 'gpu_pool'
MODE_KEY = 'gpu_pool_mode'
RESOURCE_CLASS_KEY = 'gpu_resource_class'
ALIAS_KEY = 'gpu_alias'
PCI_ID_KEY = 'gpu_pci_id'
VGPU_TYPE_KEY = 'gpu_vgpu_type'
MIG_PROFILE_KEY = 'gpu_mig_profile'

MODES = ('passthrough', 'vgpu', 'mig', 'baremetal')


def _get(obj, key, default=None):
    if isinstance(obj, dict):
        return obj.get(key, default)
    return getattr(obj, key, default)


def is_pool(aggregate):
    return POOL_KEY in (_get(aggregate, 'metadata') or {})


def pool_from_aggregate(aggregate):
    """Decode one aggregate (SDK resource or dict) into a pool dict."""
    metadata = dict(_get(aggregate, 'metadata') or {})
    return {
        'name': metadata.get(POOL_KEY) or _get(aggregate, 'name'),
        'aggregate': _get(aggregate, 'name'),
        'aggregate_id': _get(aggregate, 'id'),
        'aggregate_uuid': _get(aggregate, 'uuid'),
        'mode': metadata.get(MODE_KEY),
        'resource_class': metadata.get(RESOURCE_CLASS_KEY),
        'hosts': sorted(_get(aggregate, 'hosts') or []),
        'zone': _get(aggregate, 'availability_zone'),
        'metadata': metadata,
    }


def pools_from_aggregates(aggregates):
    """Every pool among the aggregates, keyed by pool name."""
    pools = {}
    for aggregate in aggregates:
        if is_pool(aggregate):
            pool = pool_from_aggregate(aggregate)
            pools[pool['name']] = pool
    return pools


def pools_by_host(pools):
    """{host: [pool names]} for the given pools."""
    result = {}
    for pool in pools.values():
        for host in pool['hosts']:
            result.setdefault(host, []).append(pool['name'])
    return {host: sorted(names) for host, names in result.items()}
