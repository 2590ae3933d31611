"""Which compute host of the cloud under test plays each kind of GPU host.

The functional tests need up to five kinds of host: ``passthrough`` (whole
GPUs as ``CUSTOM_PCI_*`` providers), ``vgpu`` (mediated devices: ``VGPU``
inventory), ``mig`` (MIG-backed vGPU: one ``VGPU`` per VF provider),
``baremetal`` (an Ironic node: a ``CUSTOM_BAREMETAL_*`` root) and
``plain`` (a compute without a GPU class).

For each kind, in order:

1. ``GPUCLIENT_<KIND>_HOST`` (``GPUCLIENT_PT_HOST``, ...) names it;
2. on the project's test cloud (tools/testcloud), its known names;
3. otherwise the kind is discovered once per process from what Placement
   offers and Nova's hypervisors (:func:`classify`); a kind the cloud does
   not have is None, and the tests that need it skip with
   :func:`missing_reason`.

:func:`classify` is pure (plain dicts in, ``{kind: host}`` out) and is
unit-tested in gpuclient/tests/unit/test_functional_hosts.py.
"""

import os

KINDS = ('passthrough', 'vgpu', 'mig', 'baremetal', 'plain')
# the environment variable of each kind
ENV = {
    'passthrough': 'GPUCLIENT_PT_HOST',
    'vgpu': 'GPUCLIENT_VGPU_HOST',
    'mig': 'GPUCLIENT_MIG_HOST',
    'baremetal': 'GPUCLIENT_BM_HOST',
    'plain': 'GPUCLIENT_PLAIN_HOST',
}
# the test cloud's hosts (tools/cloud/hosts.py)
TESTCLOUD = {
    'passthrough': 'gpu-pt-1',
    'vgpu': 'gpu-vgpu-1',
    'mig': 'gpu-mig-1',
    'baremetal': 'bm-compute-1',
    'plain': 'plain-1',
}
# what a cloud lacks, for the skip message of a test that needs the kind
WHAT = {
    'passthrough': ('passthrough GPU host', 'a CUSTOM_PCI_* class'),
    'vgpu': ('vGPU host', 'VGPU (with more than one vGPU per pGPU)'),
    'mig': ('MIG host', 'VGPU on MIG providers (one vGPU per VF, or a '
            '*MIG* trait)'),
    'baremetal': ('bare-metal host', 'a CUSTOM_BAREMETAL_* class (no '
                  'Ironic node)'),
    'plain': ('plain compute host', 'no GPU class'),
}
# the classes that make a host a GPU host (not "plain")
# (CUSTOM_VGPU_: the default class of VF-backed vGPU, gpu-vf-1's)
GPU_CLASS_PREFIXES = ('CUSTOM_PCI_', 'CUSTOM_BAREMETAL_', 'CUSTOM_VGPU_',
                      'VGPU', 'PGPU')


def missing_reason(kind):
    """The skip reason of a test that needs a kind this cloud lacks."""
    what, offer = WHAT[kind]
    return ('this cloud has no %s: Placement offers %s on no compute '
            '(set %s to name one)' % (what, offer, ENV[kind]))


def on_testcloud(environ=None):
    """True on the project's test cloud (tools/testcloud env)."""
    environ = os.environ if environ is None else environ
    return 'gpuclient-testcloud' in (environ.get('OS_CLIENT_CONFIG_FILE')
                                     or '')


def _is_mig(vgpu_providers, traits):
    if any('MIG' in t for p in vgpu_providers for t in traits.get(p, ())):
        return True
    # the test cloud's MigDriver (and MIG-backed vGPU on SR-IOV cards): one
    # VGPU per VF provider, several VFs; VgpuDriver: several per pGPU
    return all(total == 1 for total in vgpu_providers.values()) \
        and len(vgpu_providers) > 1


def classify(providers, inventories, traits, hypervisors):
    """{kind: service host or None} from plain Placement and Nova data.

    ``providers``: dicts with ``uuid``, ``name`` and ``root_provider_uuid``;
    ``inventories``: {provider uuid: {resource class: {'total': n, ...}}};
    ``traits``: {provider uuid: [trait, ...]};
    ``hypervisors``: dicts with ``hypervisor_hostname`` (the node, the
    root provider's name) and ``service`` {'host': service host}.
    Of several hosts of a kind, the first by name.
    """
    node_host = {h['hypervisor_hostname']: (h.get('service') or {}).get('host')
                 for h in hypervisors}
    trees = {}
    for p in providers:
        trees.setdefault(p.get('root_provider_uuid') or p['uuid'],
                         []).append(p['uuid'])
    names = {p['uuid']: p['name'] for p in providers}
    found = {kind: [] for kind in KINDS}
    for root, members in trees.items():
        host = node_host.get(names.get(root))
        if not host:
            continue  # not a compute node (a sharing provider, a seed)
        classes = {rc for m in members for rc in inventories.get(m, {})}
        vgpu = {m: inventories[m]['VGPU'].get('total', 0)
                for m in members if 'VGPU' in inventories.get(m, {})}
        if any(rc.startswith('CUSTOM_BAREMETAL_') for rc in classes):
            found['baremetal'].append(host)
        if any(rc.startswith('CUSTOM_PCI_') for rc in classes):
            found['passthrough'].append(host)
        if vgpu:
            found['mig' if _is_mig(vgpu, traits) else 'vgpu'].append(host)
        if 'VCPU' in classes and not any(
                rc.startswith(GPU_CLASS_PREFIXES) for rc in classes):
            found['plain'].append(host)
    return {kind: (sorted(hosts)[0] if hosts else None)
            for kind, hosts in found.items()}


def read(conn):
    """The Placement and Nova data :func:`classify` takes, from ``conn``."""
    headers = {'OpenStack-API-Version': 'placement 1.14'}
    providers = conn.placement.get(
        '/resource_providers', headers=headers).json()['resource_providers']
    inventories, traits = {}, {}
    for p in providers:
        uuid = p['uuid']
        inventories[uuid] = conn.placement.get(
            '/resource_providers/%s/inventories' % uuid,
            headers=headers).json()['inventories']
        traits[uuid] = conn.placement.get(
            '/resource_providers/%s/traits' % uuid,
            headers=headers).json()['traits']
    hypervisors = [
        {'hypervisor_hostname': h.name,
         'service': {'host': (h.service_details or {}).get('host')}}
        for h in conn.compute.hypervisors(details=True)]
    return providers, inventories, traits, hypervisors


_DISCOVERED = None


def discovered(cloud):
    """:func:`classify` of cloud ``cloud``, read once per process."""
    global _DISCOVERED
    if _DISCOVERED is None:
        import openstack
        conn = openstack.connect(cloud=cloud)
        try:
            _DISCOVERED = classify(*read(conn))
        finally:
            conn.close()
    return _DISCOVERED


def resolve(cloud, environ=None):
    """{kind: host or None}: the environment, the test cloud, discovery."""
    environ = os.environ if environ is None else environ
    named = {k: environ[v] for k, v in ENV.items() if environ.get(v)}
    if len(named) == len(KINDS):
        return named
    if on_testcloud(environ):
        return dict(TESTCLOUD, **named)
    if not (environ.get('OS_CLOUD') or environ.get('OS_CLIENT_CONFIG_FILE')):
        # no cloud: the tests skip anyway; keep the names printable
        return dict(TESTCLOUD, **named)
    return dict(discovered(cloud), **named)
