"""tools/testcloud seed-hosts: simulated GPU hosts in Placement, for scale.

Each simulated host is a root provider ``seed-gpu-NNNN`` with VCPU,
MEMORY_MB and DISK_GB inventory and two child providers
``seed-gpu-NNNN_pgpu_0/1``: ``CUSTOM_PCI_10DE_2331`` total 1 each (whole
GPUs), or on every 4th host ``VGPU`` total 4 each, so both kinds exist.
Every 3rd host has an allocation from a fake consumer (project and user
``gpuclient-seed``) on its root and first GPU, so "used" is non-zero there.

They are Placement providers only: no nova-compute behind them and none of
the traits Nova's providers carry (``OWNER_NOVA``, ``COMPUTE_NODE``), so
Nova's scheduler never picks them.  Standard library only.
"""

import concurrent.futures
import time
import uuid

from cloud import api

PREFIX = 'seed-gpu-'
SEED_PROJECT = 'gpuclient-seed'
MICROVERSION = '1.36'
ROOT_INVENTORY = {
    'VCPU': {'total': 64, 'allocation_ratio': 4.0},
    'MEMORY_MB': {'total': 512 * 1024, 'reserved': 4096},
    'DISK_GB': {'total': 3500},
}


def _uuid(name):
    return str(uuid.uuid5(uuid.NAMESPACE_URL, 'gpuclient-seed:' + name))


def host_name(number):
    return '%s%04d' % (PREFIX, number)


def consumer(name):
    """The fake consumer holding an allocation on host NAME."""
    return _uuid('consumer:' + name)


def _gpu_inventory(number):
    if number % 4 == 0:
        return 'VGPU', {'total': 4, 'max_unit': 4}
    return 'CUSTOM_PCI_10DE_2331', {'total': 1, 'max_unit': 1}


def _seed_one(session, number):
    name = host_name(number)
    root = _uuid(name)
    session.post('placement', '/resource_providers',
                 {'name': name, 'uuid': root}, microversion=MICROVERSION)
    session.put('placement', '/resource_providers/%s/inventories' % root,
                {'resource_provider_generation': 0,
                 'inventories': ROOT_INVENTORY}, microversion=MICROVERSION)
    rc, inv = _gpu_inventory(number)
    children = []
    for i in range(2):
        child = _uuid('%s_pgpu_%d' % (name, i))
        children.append(child)
        session.post('placement', '/resource_providers', {
            'name': '%s_pgpu_%d' % (name, i), 'uuid': child,
            'parent_provider_uuid': root}, microversion=MICROVERSION)
        session.put('placement',
                    '/resource_providers/%s/inventories' % child,
                    {'resource_provider_generation': 0,
                     'inventories': {rc: inv}}, microversion=MICROVERSION)
    if number % 3 == 0:
        session.put('placement', '/allocations/%s' % consumer(name), {
            'allocations': {
                root: {'resources': {'VCPU': 8, 'MEMORY_MB': 65536,
                                     'DISK_GB': 100}},
                children[0]: {'resources': {rc: 1}},
            },
            'project_id': SEED_PROJECT, 'user_id': SEED_PROJECT,
            'consumer_generation': None}, microversion=MICROVERSION)


def _providers(session):
    return session.get('placement', '/resource_providers',
                       microversion=MICROVERSION)['resource_providers']


def add(count, workers=8):
    t0 = time.monotonic()
    session = api.Session()
    have = {rp['name'] for rp in _providers(session)
            if rp['name'].startswith(PREFIX)}
    todo = [n for n in range(1, count + 1) if host_name(n) not in have]
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        for future in [pool.submit(_seed_one, session, n) for n in todo]:
            future.result()
    print('seed-hosts: %d simulated GPU hosts added (%d already there) in '
          '%.1fs: %d providers' % (len(todo), count - len(todo),
                                   time.monotonic() - t0, 3 * len(todo)))
    return 0


def remove(workers=8):
    t0 = time.monotonic()
    session = api.Session()
    seeds = [rp for rp in _providers(session)
             if rp['name'].startswith(PREFIX)]
    roots = [rp for rp in seeds if rp['parent_provider_uuid'] is None]
    children = [rp for rp in seeds if rp['parent_provider_uuid']]

    def delete_consumer(rp):
        session.delete('placement', '/allocations/%s' % consumer(rp['name']),
                       microversion=MICROVERSION, expect={404})

    def delete_provider(rp):
        session.delete('placement', '/resource_providers/%s' % rp['uuid'],
                       microversion=MICROVERSION, expect={404})

    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        for step, items in ((delete_consumer, roots),
                            (delete_provider, children),
                            (delete_provider, roots)):
            for future in [pool.submit(step, rp) for rp in items]:
                future.result()
    print('seed-hosts --remove: %d providers (%d hosts) removed in %.1fs' % (
        len(seeds), len(roots), time.monotonic() - t0))
    return 0
