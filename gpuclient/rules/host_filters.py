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

"""Pure: ImagePropertiesFilter, ComputeCapabilitiesFilter and the quota check.

Judged from what the compute API shows of a compute node
(``GET /os-hypervisors/detail`` at microversions 2.28-2.87: hypervisor_type,
hypervisor_version, hypervisor_hostname, host_ip, cpu_info as a dict,
vcpus, memory and disk figures, running_vms; 2.88 drops most of them) and
from ``GET /limits?tenant_id=``, the way Nova 34 judges them.

What Nova's filters read and where it comes from here
-----------------------------------------------------
Nova's filters read a scheduler ``HostState`` built from the ComputeNode
record (``HostState._update_from_compute_node``), not the API's dict.
``HOST_STATE_FIELDS`` maps each HostState attribute to the API field(s) it
is made from; ``UNSEEN_ATTRIBUTES`` are HostState attributes the API does
not show (the node's ``stats``, NUMA topology, PCI pools, metrics, ...).

``supported_instances`` (the (architecture, hypervisor type, vm mode)
triples ImagePropertiesFilter compares) is not in the API either. It is
inferred per driver (``supported_instances``): exactly for the fake
driver; for libvirt (hypervisor_type ``QEMU``) the host's own architecture
under ``qemu`` is certain, while ``kvm`` and emulated architectures depend
on the host's libvirt capabilities; for Ironic the architecture is the
node's ``cpu_arch`` property, which the compute API does not show. What
cannot be decided is reported as such (``unknown``), never as a pass or a
failure.
"""

import json
import re

from gpuclient.i18n import _
from gpuclient.rules import host_names

IMAGE_FILTER = 'ImagePropertiesFilter'
CAPABILITIES_FILTER = 'ComputeCapabilitiesFilter'

# nova.objects.fields.Architecture.ALL, HVType.ALL, VMMode.ALL (Nova 34)
ARCHITECTURES = (
    'alpha', 'armv6', 'armv7l', 'armv7b', 'aarch64', 'cris', 'i686', 'ia64',
    'lm32', 'm68k', 'microblaze', 'microblazeel', 'mips', 'mipsel',
    'mips64', 'mips64el', 'openrisc', 'parisc', 'parisc64', 'ppc', 'ppcle',
    'ppc64', 'ppc64le', 'ppcemb', 's390', 's390x', 'sh4', 'sh4eb', 'sparc',
    'sparc64', 'unicore32', 'x86_64', 'xtensa', 'xtensaeb')
HV_TYPES = (
    'baremetal', 'bhyve', 'docker', 'fake', 'hyperv', 'ironic', 'kqemu',
    'kvm', 'lxc', 'lxd', 'openvz', 'parallels', 'phyp', 'qemu', 'test', 'uml',
    'vbox', 'vz', 'vmware', 'xen', 'zvm', 'prsm')
VM_MODES = ('hvm', 'xen', 'uml', 'exe')
_ARCH_ALIASES = {'i386': 'i686', 'i486': 'i686', 'i586': 'i686',
                 'x86_32': 'i686', 'x86_32p': 'i686', 'amd64': 'x86_64'}
_HV_ALIASES = {'xapi': 'xen'}
_VM_ALIASES = {'pv': 'xen', 'hv': 'hvm', 'baremetal': 'hvm'}

# image property -> its legacy name (ImageMetaProps._legacy_property_map);
# the current name wins when both are set
IMAGE_PROPERTIES = (
    ('hw_architecture', 'architecture'),
    ('img_hv_type', 'hypervisor_type'),
    ('hw_vm_mode', 'vm_mode'),
    ('img_hv_requested_version', 'hypervisor_version_requires'),
    ('hw_maxphysaddr_bits', None),
)

# HostState attribute -> how the compute API (2.53) shows it
HOST_STATE_FIELDS = {
    'host': 'service.host',
    'nodename': 'hypervisor_hostname',
    'hypervisor_hostname': 'hypervisor_hostname',
    'uuid': 'id',
    'hypervisor_type': 'hypervisor_type',
    'hypervisor_version': 'hypervisor_version',
    'host_ip': 'host_ip',
    'cpu_info': 'cpu_info',
    'free_ram_mb': 'free_ram_mb',
    'total_usable_ram_mb': 'memory_mb',
    'total_usable_disk_gb': 'local_gb',
    'disk_mb_used': 'local_gb_used * 1024',
    'free_disk_mb': 'min(free_disk_gb, disk_available_least) * 1024',
    'vcpus_total': 'vcpus',
    'vcpus_used': 'vcpus_used',
    'num_instances': 'running_vms',
}
# HostState attributes the compute API does not show
UNSEEN_ATTRIBUTES = (
    'stats', 'numa_topology', 'pci_stats', 'metrics', 'limits',
    'aggregates', 'instances', 'num_io_ops', 'failed_builds',
    'cpu_allocation_ratio', 'ram_allocation_ratio', 'disk_allocation_ratio',
    'cell_uuid', 'updated', 'supported_instances', 'allocation_candidates')
# keys nova-compute's resource tracker puts in a node's stats
_TRACKER_STATS = re.compile(
    r'^(num_instances|io_workload|failed_builds|'
    r'num_(vm|task|os_type|proj)_.*)$')
# drivers whose get_available_resource adds no stats of its own
_NO_DRIVER_STATS = ('qemu', 'fake')

# nova.scheduler.filters.extra_specs_ops (Nova 34)
_OPERATORS = {
    '=': lambda x, y: float(x) >= float(y),
    '<in>': lambda x, y: y in x,
    '<all-in>': lambda x, y: all(v in x for v in y),
    '==': lambda x, y: float(x) == float(y),
    '!=': lambda x, y: float(x) != float(y),
    '>=': lambda x, y: float(x) >= float(y),
    '<=': lambda x, y: float(x) <= float(y),
    's==': lambda x, y: x == y,
    's!=': lambda x, y: x != y,
    's<': lambda x, y: x < y,
    's<=': lambda x, y: x <= y,
    's>': lambda x, y: x > y,
    's>=': lambda x, y: x >= y,
}

PASS, FAIL, UNKNOWN = 'pass', 'fail', 'unknown'


def spec_match(value, req):
    """Does ``value`` (a string) satisfy the extra spec ``req``?

    Nova's extra_specs_ops.match: an operator word first (``s==``,
    ``<in>``, ``>=``, ``<or>``, ...), else plain string equality. A
    numeric operator on a non-number raises ValueError, as in Nova (the
    filter does not catch it).
    """
    words = req.split()
    op = words.pop(0) if words else None
    method = _OPERATORS.get(op)
    if op != '<or>' and not method:
        return value == req
    if value is None:
        return False
    if op == '<or>':
        while words:
            if words.pop(0) == value:
                return True
            if not words:
                break
            words.pop(0)
        return False
    if not words:
        return False
    if op == '<all-in>':
        return method(value, words)
    return method(value, words[0])


# -- names ----------------------------------------------------------------

def _canonical(name, aliases, valid):
    if name is None:
        return None
    lowered = str(name).lower()
    lowered = aliases.get(lowered, lowered)
    if lowered not in valid:
        raise ValueError(name)
    return lowered


def canonical_arch(name):
    """Architecture.canonicalize; ValueError for a name Nova refuses."""
    return _canonical(name, _ARCH_ALIASES, ARCHITECTURES)


def canonical_hv_type(name):
    return _canonical(name, _HV_ALIASES, HV_TYPES)


def canonical_vm_mode(name):
    return _canonical(name, _VM_ALIASES, VM_MODES)


# -- versions (oslo_utils.versionutils, as Nova uses it) --------------------

def version_str(number):
    """versionutils.convert_version_to_str: 8002000 -> '8.2.0'."""
    parts = []
    number = int(number)
    while number:
        parts.insert(0, number % 1000)
        number //= 1000
    return '.'.join(str(p) for p in parts)


def _version(text):
    parts = [int(p) for p in text.split('.')]
    while len(parts) > 1 and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


_PREDICATE = re.compile(r'^\s*(<=|>=|<|>|!=|==)\s*([0-9]+(\.[0-9]+)*)\s*$')
_COMPARE = {'<': lambda a, b: a < b, '<=': lambda a, b: a <= b,
            '==': lambda a, b: a == b, '>': lambda a, b: a > b,
            '>=': lambda a, b: a >= b, '!=': lambda a, b: a != b}


def version_satisfies(version, predicate):
    """``version`` (dotted) against ``>=8.0,<10`` (VersionPredicate).

    Numeric release versions only; ValueError for anything else (Nova's
    predicate parser accepts more, such as pre-releases).
    """
    have = _version(version)
    for part in predicate.split(','):
        found = _PREDICATE.match(part)
        if not found:
            raise ValueError(predicate)
        if not _COMPARE[found.group(1)](have, _version(found.group(2))):
            return False
    return True


# -- ImagePropertiesFilter -------------------------------------------------

def image_requirements(properties, default_arch=None):
    """What ImagePropertiesFilter compares, from Glance image properties.

    {'architecture', 'hv_type', 'vm_mode', 'hv_version', 'maxphysaddr_bits',
    'invalid': [property names Nova would refuse]}; ``default_arch`` is
    [filter_scheduler] image_properties_default_architecture.
    """
    props = {}
    for current, legacy in IMAGE_PROPERTIES:
        value = (properties or {}).get(current)
        if value is None and legacy:
            value = (properties or {}).get(legacy)
        props[current] = value
    wanted = {'invalid': []}
    for key, name, canonical in (
            ('architecture', 'hw_architecture', canonical_arch),
            ('hv_type', 'img_hv_type', canonical_hv_type),
            ('vm_mode', 'hw_vm_mode', canonical_vm_mode)):
        value = props[name]
        if key == 'architecture' and value is None:
            value = default_arch
        try:
            wanted[key] = canonical(value)
        except ValueError:
            wanted[key] = str(value).lower()
            wanted['invalid'].append(name)
    wanted['hv_version'] = props['img_hv_requested_version'] or None
    bits = props['hw_maxphysaddr_bits']
    try:
        wanted['maxphysaddr_bits'] = int(bits) if bits not in (
            None, '') else None
    except (TypeError, ValueError):
        wanted['maxphysaddr_bits'] = None
        wanted['invalid'].append('hw_maxphysaddr_bits')
    return wanted


def asks_image_filter(wanted):
    return bool(wanted['architecture'] or wanted['hv_type']
                or wanted['vm_mode'])


def supported_instances(hypervisor):
    """(certain, possible, why): the node's supported_instances, inferred.

    ``certain``: triples the driver surely reports; ``possible``: patterns
    (None: any value) it may report, which the API cannot confirm, with
    ``why`` saying what is missing.
    """
    kind = str(hypervisor.get('hypervisor_type') or '').lower()
    arch = (hypervisor.get('cpu_info') or {}).get('arch')
    try:
        arch = canonical_arch(arch)
    except ValueError:
        arch = None
    if kind == 'fake':
        # nova.virt.fake.FakeDriver reports exactly this
        return [('x86_64', 'fake', 'hvm')], [], None
    if kind == 'qemu':
        # libvirt: one triple per guest architecture and domain type in
        # its capabilities; the host's own architecture runs under qemu
        certain = [(arch, 'qemu', 'hvm')] if arch else []
        return certain, [(None, 'kvm', 'hvm'), (None, 'qemu', 'hvm')], _(
            'libvirt reports a guest architecture and domain type (qemu, '
            'kvm) for each emulator and accelerator on the host; the API '
            'shows only the host CPU architecture (%s)') % (arch or '?')
    if kind == 'ironic':
        return [], [(None, 'baremetal', 'hvm')], _(
            'Ironic reports the node\'s cpu_arch property, which the '
            'compute API does not show')
    return [], [(None, None, None)], _(
        'the instance types of hypervisor type "%s" are not in the compute '
        'API') % (hypervisor.get('hypervisor_type') or '?')


def _triple_matches(wanted, triple):
    # Nova's _compare_props: each wanted value must be somewhere in the
    # triple (not necessarily at its own position); None in a pattern
    # stands for any value at that position
    for position, key in enumerate(('architecture', 'hv_type', 'vm_mode')):
        want = wanted[key]
        if want and want not in triple and triple[position] is not None:
            return False
    return True


def judge_image(hypervisor, wanted):
    """ImagePropertiesFilter on one node: (PASS|FAIL|UNKNOWN, detail)."""
    if not asks_image_filter(wanted):
        return PASS, {}
    if wanted['invalid']:
        return FAIL, {'invalid': list(wanted['invalid'])}
    certain, possible, why = supported_instances(hypervisor)
    version = hypervisor.get('hypervisor_version')
    cpu_bits = ((hypervisor.get('cpu_info') or {}).get('maxphysaddr')
                or {}).get('bits')
    detail = {'supported': [list(t) for t in certain],
              'hypervisor_type': hypervisor.get('hypervisor_type'),
              'hypervisor_version': version}
    if wanted['hv_version'] and version:
        try:
            version_ok = version_satisfies(version_str(version),
                                           wanted['hv_version'])
        except ValueError:
            return UNKNOWN, dict(detail, why=_(
                'img_hv_requested_version=%s is not a plain version '
                'predicate gpuclient can compare') % wanted['hv_version'])
    else:
        version_ok = True
    matches = any(_triple_matches(wanted, t) for t in certain)
    if not matches and not any(_triple_matches(wanted, t) for t in possible):
        return FAIL, detail
    if not version_ok:
        return FAIL, dict(detail, version_ok=False)
    if wanted['maxphysaddr_bits'] and matches:
        # Nova 34 reads HostState.cpu_info (JSON text) with .get() here:
        # the filter raises AttributeError and the boot errors out
        return UNKNOWN, dict(detail, nova_error=True, why=_(
            'image hw_maxphysaddr_bits: Nova 34\'s filter fails reading '
            'cpu_info at this point (AttributeError), the boot errors; the '
            'CPU has %s address bits') % (cpu_bits or '?'))
    if matches:
        return PASS, detail
    return UNKNOWN, dict(detail, why=why)


# -- ComputeCapabilitiesFilter ---------------------------------------------

def host_state(hypervisor):
    """{HostState attribute: value} as far as the API shows (2.28-2.87).

    ``cpu_info`` stays a dict (HostState holds the JSON text).
    """
    hv = hypervisor
    state = {}
    for attribute, field in HOST_STATE_FIELDS.items():
        if field in hv:
            state[attribute] = hv[field]
    state['host'] = host_names.nova_host(hv)
    if 'local_gb_used' in hv and hv['local_gb_used'] is not None:
        state['disk_mb_used'] = hv['local_gb_used'] * 1024
    free_gb, least = hv.get('free_disk_gb'), hv.get('disk_available_least')
    if free_gb is not None:
        state['free_disk_mb'] = (min(free_gb, least) if least is not None
                                 else free_gb) * 1024
    return state


def capability_specs(extra_specs):
    """[(key, scope list, requirement)] the filter looks at, in order.

    ``capabilities:a:b`` -> ['a', 'b']; unscoped keys -> [key]; other
    scopes are ignored. hw:maxphysaddr_bits becomes
    capabilities:cpu_info:maxphysaddr:bits >= N, as in Nova.
    """
    specs = dict(extra_specs or {})
    bits = specs.pop('hw:maxphysaddr_bits', None)
    if bits is not None:
        specs['capabilities:cpu_info:maxphysaddr:bits'] = '>= %s' % bits
    found = []
    for key, req in specs.items():
        scope = key.split(':')
        if len(scope) > 1:
            if scope[0] != 'capabilities':
                continue
            scope = scope[1:]
        found.append((key, scope, str(req)))
    return found


def _walk(value, scope):
    """HostState-style traversal below the first level (None: missing)."""
    for name in scope:
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                return None
        if isinstance(value, dict):
            value = value.get(name)
        else:
            return None
        if value is None:
            return None
    return value


def judge_capabilities(hypervisor, extra_specs):
    """ComputeCapabilitiesFilter on one node.

    (PASS|FAIL|UNKNOWN, {'failed': [...], 'unknown': [...]}); a failed
    item: {'key', 'value' (requirement), 'have' (None: missing)}; an
    unknown item: {'key', 'why'}.
    """
    state = host_state(hypervisor)
    kind = str(hypervisor.get('hypervisor_type') or '').lower()
    failed, unknown = [], []
    for key, scope, req in capability_specs(extra_specs):
        first = scope[0]
        if first not in HOST_STATE_FIELDS and first not in UNSEEN_ATTRIBUTES:
            # not a HostState attribute: only the node's stats can have it
            # (an unscoped key that nothing has is ignored by Nova)
            if _TRACKER_STATS.match(first) or kind not in _NO_DRIVER_STATS:
                unknown.append({'key': key, 'why': _(
                    'the compute node\'s stats, not in the API')})
            elif ':' in key:
                failed.append({'key': key, 'value': req, 'have': None})
            continue
        if first in UNSEEN_ATTRIBUTES:
            unknown.append({'key': key, 'why': _(
                'HostState.%s, not in the API') % first})
            continue
        if first == 'cpu_info' and len(scope) == 1:
            unknown.append({'key': key, 'why': _(
                'Nova compares the raw cpu_info JSON text')})
            continue
        if first not in state:
            unknown.append({'key': key, 'why': _(
                'the API answer has no %s') % HOST_STATE_FIELDS[first]})
            continue
        have = state[first]
        if have is None:
            # Nova falls back to stats when the attribute is None
            if kind in _NO_DRIVER_STATS:
                failed.append({'key': key, 'value': req, 'have': None})
            else:
                unknown.append({'key': key, 'why': _(
                    'no %s in the API, maybe in the node\'s stats') % first})
            continue
        have = _walk(have, scope[1:])
        if have is None:
            failed.append({'key': key, 'value': req, 'have': None})
            continue
        try:
            ok = spec_match(str(have), req)
        except ValueError:
            unknown.append({'key': key, 'why': _(
                'Nova raises an error comparing %(have)s with "%(req)s"')
                % {'have': have, 'req': req}})
            continue
        if not ok:
            failed.append({'key': key, 'value': req, 'have': str(have)})
    if failed:
        return FAIL, {'failed': failed, 'unknown': unknown}
    if unknown:
        return UNKNOWN, {'failed': [], 'unknown': unknown}
    return PASS, {'failed': [], 'unknown': []}


def asks_capabilities(extra_specs):
    return bool(capability_specs(extra_specs))


# -- per host (a host may have several nodes) ------------------------------

def nodes_by_host(hypervisors):
    """{Nova host: [hypervisor dicts]} (compute API >= 2.53)."""
    found = {}
    for hv in hypervisors or ():
        host = host_names.nova_host(hv)
        if host:
            found.setdefault(host, []).append(hv)
    return found


def unchecked(hosts, hypervisors, extra_specs, image, enabled_filters,
              default_arch=None):
    """{filter: text}: what the two filters could not judge, and where."""
    enabled = set(enabled_filters or ())
    nodes = nodes_by_host(hypervisors)
    wanted = image_requirements(image, default_arch)
    judges = []
    if IMAGE_FILTER in enabled:
        judges.append((IMAGE_FILTER, lambda node: judge_image(node, wanted)))
    if CAPABILITIES_FILTER in enabled:
        judges.append((CAPABILITIES_FILTER,
                       lambda node: judge_capabilities(node, extra_specs)))
    out = {}
    for name, judge in judges:
        whys = {}
        for host in sorted(hosts):
            if not nodes.get(host):
                whys.setdefault(_('no hypervisor record'), []).append(host)
                continue
            status, detail = judge_host(nodes[host], judge)
            if status != UNKNOWN:
                continue
            if name == IMAGE_FILTER:
                texts = [detail.get('why') or '']
            else:
                texts = ['%s (%s)' % (item['key'], item['why'])
                         for item in detail.get('unknown') or ()]
            for text in texts:
                whys.setdefault(text, []).append(host)
        if whys:
            out[name] = '; '.join(_('%(why)s on %(hosts)s') % {
                'why': why, 'hosts': ', '.join(found)}
                for why, found in sorted(whys.items()))
    return out


def judge_host(nodes, judge):
    """A host passes if one of its nodes does (HostState is per node)."""
    results = [judge(node) for node in nodes]
    for status in (PASS, UNKNOWN):
        for found, detail in results:
            if found == status:
                return found, detail
    if results:
        return results[0]
    return UNKNOWN, {'why': _('no hypervisor record')}


def image_text(host, detail, wanted):
    asked = ', '.join('%s=%s' % (name, wanted[key]) for key, name in (
        ('architecture', 'architecture'), ('hv_type', 'img_hv_type'),
        ('vm_mode', 'hw_vm_mode')) if wanted[key])
    if detail.get('invalid'):
        return _('%(host)s: image property %(props)s has a value Nova does '
                 'not accept (%(asked)s; ImagePropertiesFilter)') % {
                     'host': host, 'props': ', '.join(detail['invalid']),
                     'asked': asked}
    if detail.get('version_ok') is False:
        return _('%(host)s: hypervisor version %(version)s does not satisfy '
                 'img_hv_requested_version %(want)s '
                 '(ImagePropertiesFilter)') % {
                     'host': host, 'want': wanted['hv_version'],
                     'version': version_str(detail['hypervisor_version'])}
    supported = ', '.join('/'.join(t) for t in detail['supported']) or _(
        'only unknown instance types')
    return _('%(host)s: the image asks for %(asked)s, the host '
             '(%(type)s) runs %(supported)s (ImagePropertiesFilter)') % {
                 'host': host, 'asked': asked, 'supported': supported,
                 'type': detail.get('hypervisor_type')}


def capabilities_text(host, detail):
    parts = []
    for item in detail['failed']:
        if item['have'] is None:
            parts.append(_('%(key)s=%(value)s, the host has no such '
                           'capability') % item)
        else:
            parts.append(_('%(key)s=%(value)s, the host has %(have)s')
                         % item)
    return _('%(host)s: %(parts)s (ComputeCapabilitiesFilter)') % {
        'host': host, 'parts': '; '.join(parts)}


# -- quota (before scheduling) ---------------------------------------------

QUOTAS = (
    ('instances', 'maxTotalInstances', 'totalInstancesUsed'),
    ('cores', 'maxTotalCores', 'totalCoresUsed'),
    ('ram', 'maxTotalRAMSize', 'totalRAMUsed'),
)


def quota_excess(absolute, instances=1, cores=0, ram=0):
    """[{'resource', 'limit', 'used', 'asked'}] the project would exceed.

    ``absolute`` is ``limits.absolute`` of ``GET /limits?tenant_id=``;
    a negative limit is unlimited; Nova refuses when used + asked > limit.
    """
    asked = {'instances': instances, 'cores': cores, 'ram': ram}
    found = []
    for resource, limit_key, used_key in QUOTAS:
        limit = (absolute or {}).get(limit_key)
        if not isinstance(limit, int) or limit < 0:
            continue  # unlimited, or not reported
        used = (absolute or {}).get(used_key)
        used = used if isinstance(used, int) else 0
        if used + asked[resource] > limit:
            found.append({'resource': resource, 'limit': limit,
                          'used': used, 'asked': asked[resource]})
    return found


def quota_text(project_id, excess):
    names = {'instances': _('instances'), 'cores': _('cores'),
             'ram': _('RAM (MiB)')}
    parts = ['%s: %d used + %d asked > %d' % (
        names[e['resource']], e['used'], e['asked'], e['limit'])
        for e in excess]
    return _('Project %(project)s is over its quota (%(parts)s): Nova '
             'refuses the boot before scheduling. Free some, or raise it '
             'with "openstack quota set".') % {
                 'project': project_id, 'parts': '; '.join(parts)}
