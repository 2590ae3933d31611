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

"""Pure: a host's facts as Prometheus series, and back.

The collector writes ``samples(facts)`` with ``render`` into
node_exporter's textfile directory; a command that asks the cloud's
Prometheus for the series gives its answers, as ``Sample`` s, to
``from_samples``, which gives the facts again (``parse_text`` reads the
text format itself, as a textfile holds it).

Every series has the host's name in ``Hostname`` and a PCI function's in
``pci_bus_id`` as the NVIDIA DCGM exporter labels a GPU (its
``os.Hostname()``, NVML's bus id ``00000000:41:00.0`` in upper-case hex:
``dcgm_bus_id``, as ``gpu device list -f openmetrics`` writes it), so
the series join DCGM's and gpuclient's own on (Hostname, pci_bus_id).
dcgm-exporter 4.8 and later spell the first ``hostname``: read back,
either is taken (``HOSTNAME_LABELS``); in PromQL, ``label_replace`` it
as the shipped rules do. One fact, one series: a fact that could not be
read has no series of its own but a ``gpuclient_host_fact_unreadable``
series naming it (``fact``, and ``pci_bus_id`` for a function's), so a
reader can tell "not read" from any value. A label with no value (a
function with no driver bound, a type without a name) is left out, as
Prometheus reads an empty label.

The series are gauges; ``*_info`` ones are 1 and carry their fact in
labels, the others carry it in their value (booleans 1 or 0).
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping
import math
import re
import typing

from gpuclient.rules.host_facts import contents
from gpuclient.rules.host_facts import shapes

HOSTNAME_LABEL = 'Hostname'
# read back: dcgm-exporter's spellings, the older first
HOSTNAME_LABELS = ('Hostname', 'hostname')
BUS_LABEL = 'pci_bus_id'
# Prometheus' label for the target a series was scraped from
INSTANCE_LABEL = 'instance'


class Family(typing.NamedTuple):
    """One series name: its help text, the labels it carries besides
    ``Hostname`` (and ``pci_bus_id`` when ``per_function``), and the fact
    it holds (the name of gpuclient_host_fact_unreadable's ``fact``)."""

    name: str
    help: str
    labels: tuple[str, ...] = ()
    per_function: bool = False
    fact: str = ''


COLLECTED = Family(
    'gpuclient_host_facts_collected_timestamp_seconds',
    'When gpuclient-host-facts read the host (Unix time).')
UNREADABLE = Family(
    'gpuclient_host_fact_unreadable',
    'A fact gpuclient-host-facts could not read (1): fact names it, '
    'pci_bus_id the PCI function of a function\'s fact.',
    ('fact',))
IOMMU_ACTIVE = Family(
    'gpuclient_host_iommu_active',
    'An IOMMU is active (1: /sys/class/iommu lists one) or not (0).',
    fact='iommu')
IOMMU_CMDLINE = Family(
    'gpuclient_host_kernel_iommu_info',
    'The IOMMU options of the kernel command line (/proc/cmdline), one '
    'label each: intel_iommu, amd_iommu, iommu.',
    contents.IOMMU_OPTIONS, fact='kernel_cmdline')
MDEVCTL = Family(
    'gpuclient_host_mdevctl_present',
    'mdevctl is installed (1) or not (0).')
NVIDIA_SMI = Family(
    'gpuclient_host_nvidia_smi_present',
    'nvidia-smi is installed (1) or not (0).')
VERSION = Family(
    'gpuclient_host_version_info',
    'The version of a component (kernel, nvidia_driver, libvirt, qemu, '
    'nova_compute): its upstream release, its package version and where '
    'it was read.',
    ('component', 'version', 'package_version', 'source'))
PCI_FUNCTION = Family(
    'gpuclient_host_pci_function_info',
    'A PCI function: an NVIDIA one or another member of its IOMMU group '
    '(vendor, device and class ids).',
    ('vendor_id', 'device_id', 'class'), True, 'pci_ids')
DRIVER = Family(
    'gpuclient_host_pci_driver_info',
    'The driver bound to a PCI function (no driver label: none).',
    ('driver',), True, 'driver')
IOMMU_GROUP = Family(
    'gpuclient_host_pci_iommu_group_info',
    'The IOMMU group of a PCI function (no iommu_group label: none).',
    ('iommu_group',), True, 'iommu_group')
NUMA_NODE = Family(
    'gpuclient_host_pci_numa_node',
    'The NUMA node of a PCI function (-1: none).',
    (), True, 'numa_node')
SRIOV_NUMVFS = Family(
    'gpuclient_host_sriov_numvfs',
    'The VFs enabled on a PF (sriov_numvfs).', (), True, 'sriov')
SRIOV_TOTALVFS = Family(
    'gpuclient_host_sriov_totalvfs',
    'The VFs a PF can have (sriov_totalvfs).', (), True, 'sriov')
VF = Family(
    'gpuclient_host_sriov_vf_info',
    'A VF (pci_bus_id) of a PF (physfn).', ('physfn',), True, 'vfs')
VGPU_TYPE = Family(
    'gpuclient_host_vgpu_type_info',
    "The vGPU type written in a VF's nvidia/current_vgpu_type (id 0: "
    'none) and its name.',
    ('vgpu_type_id', 'vgpu_type'), True, 'vgpu_type')
MDEV_AVAILABLE = Family(
    'gpuclient_host_mdev_type_available_instances',
    'How many more mediated devices of a type a PCI function can create '
    '(mdev_supported_types/<type>/available_instances).',
    ('mdev_type', 'mdev_type_name'), True, 'mdev_types')
MDEV_CREATED = Family(
    'gpuclient_host_mdev_devices',
    'The mediated devices of a type that exist on a PCI function '
    '(/sys/bus/mdev/devices).',
    ('mdev_type',), True, 'mdev_devices')
MIG_CURRENT = Family(
    'gpuclient_host_mig_mode_current',
    'The MIG mode of a GPU now (1 enabled, 0 disabled; none: no MIG).',
    (), True, 'mig_mode')
MIG_PENDING = Family(
    'gpuclient_host_mig_mode_pending',
    'The MIG mode of a GPU after its next reset (1 enabled, 0 disabled).',
    (), True, 'mig_mode')
MIG_INSTANCES = Family(
    'gpuclient_host_mig_gpu_instances',
    'The GPU instances of a GPU whose MIG mode is enabled.',
    (), True, 'mig_layout')
MIG_INSTANCE = Family(
    'gpuclient_host_mig_gpu_instance_info',
    'A GPU instance (GPU_I_ID, GPU_I_PROFILE as DCGM labels them), its '
    'profile id and placement (first slice, slices).',
    ('GPU_I_ID', 'GPU_I_PROFILE', 'profile_id', 'placement_start',
     'placement_size'), True, 'mig_layout')

FAMILIES = (COLLECTED, UNREADABLE, IOMMU_ACTIVE, IOMMU_CMDLINE, MDEVCTL,
            NVIDIA_SMI, VERSION, PCI_FUNCTION, DRIVER, IOMMU_GROUP,
            NUMA_NODE, SRIOV_NUMVFS, SRIOV_TOTALVFS, VF, VGPU_TYPE,
            MDEV_AVAILABLE, MDEV_CREATED, MIG_CURRENT, MIG_PENDING,
            MIG_INSTANCES, MIG_INSTANCE)
BY_NAME = {family.name: family for family in FAMILIES}


class Sample(typing.NamedTuple):
    """One series and its value: its name, its labels as sorted (name,
    value) pairs (those with a value only), the value."""

    name: str
    labels: tuple[tuple[str, str], ...]
    value: float

    @property
    def label_map(self) -> dict[str, str]:
        return dict(self.labels)


def dcgm_bus_id(address: str) -> str:
    """A PCI address ('0000:c1:00.0') as the DCGM exporter's
    ``pci_bus_id`` writes it: '00000000:C1:00.0'."""
    domain, bus, rest = contents.bus_id_address(address).split(':')
    device, function = rest.split('.')
    return '%08X:%02X:%02X.%s' % (int(domain, 16), int(bus, 16),
                                  int(device, 16), function)


def sample(family: Family, hostname: str, value: float,
           address: str | None = None, **labels: typing.Any) -> Sample:
    """One Sample of FAMILY (labels by name; those without a value left
    out)."""
    pairs = {HOSTNAME_LABEL: hostname} if hostname else {}
    if address:
        pairs[BUS_LABEL] = dcgm_bus_id(address)
    for name, text in labels.items():
        if text is not None and str(text) != '':
            pairs[name] = str(text)
    return Sample(family.name, tuple(sorted(pairs.items())), float(value))


# -- facts to series ----------------------------------------------------------

def _host_samples(facts):
    host = facts.hostname
    found = []
    if facts.collected_at is not None:
        found.append(sample(COLLECTED, host, facts.collected_at))
    for item in sorted(facts.unreadable):
        found.append(sample(UNREADABLE, host, 1, item.address or None,
                            fact=item.fact))
    if facts.iommu_active is not None:
        found.append(sample(IOMMU_ACTIVE, host, int(facts.iommu_active)))
    if facts.iommu_cmdline is not None:
        found.append(sample(IOMMU_CMDLINE, host, 1,
                            **dict(facts.iommu_cmdline)))
    for family, present in ((MDEVCTL, facts.mdevctl),
                            (NVIDIA_SMI, facts.nvidia_smi)):
        if present is not None:
            found.append(sample(family, host, int(present)))
    for component, version in sorted(facts.versions.items()):
        found.append(sample(VERSION, host, 1, component=component,
                            version=version.version,
                            package_version=version.package_version,
                            source=version.source))
    return found


def _function_samples(host, f):
    at = f.address
    found = []
    if f.vendor_id is not None:
        found.append(sample(PCI_FUNCTION, host, 1, at, vendor_id=f.vendor_id,
                            device_id=f.device_id, **{'class': f.pci_class}))
    if f.driver is not None:
        found.append(sample(DRIVER, host, 1, at, driver=f.driver))
    if f.iommu_group is not None:
        found.append(sample(IOMMU_GROUP, host, 1, at,
                            iommu_group=f.iommu_group))
    for family, value in ((NUMA_NODE, f.numa_node),
                          (SRIOV_NUMVFS, f.sriov_numvfs),
                          (SRIOV_TOTALVFS, f.sriov_totalvfs)):
        if value is not None:
            found.append(sample(family, host, value, at))
    if f.physfn is not None:
        found.append(sample(VF, host, 1, at, physfn=dcgm_bus_id(f.physfn)))
    if f.vgpu_type_id is not None:
        found.append(sample(VGPU_TYPE, host, 1, at,
                            vgpu_type_id=f.vgpu_type_id,
                            vgpu_type=f.vgpu_type))
    for name, mdev in sorted(f.mdev_types.items()):
        if mdev.available_instances is not None:
            found.append(sample(MDEV_AVAILABLE, host,
                                mdev.available_instances, at,
                                mdev_type=name, mdev_type_name=mdev.name))
        if mdev.created is not None:
            found.append(sample(MDEV_CREATED, host, mdev.created, at,
                                mdev_type=name))
    for family, mode in ((MIG_CURRENT, f.mig_current),
                         (MIG_PENDING, f.mig_pending)):
        if mode is not None:
            found.append(sample(family, host, int(mode), at))
    if f.gpu_instances is not None:
        found.append(sample(MIG_INSTANCES, host, len(f.gpu_instances), at))
        for gi in f.gpu_instances:
            found.append(sample(
                MIG_INSTANCE, host, 1, at, GPU_I_ID=gi.instance_id,
                GPU_I_PROFILE=gi.profile, profile_id=gi.profile_id,
                placement_start=gi.start, placement_size=gi.size))
    return found


def samples(facts: shapes.HostFacts) -> list[Sample]:
    """The series of one host's FACTS."""
    found = _host_samples(facts)
    for _address, function in sorted(facts.functions.items()):
        found += _function_samples(facts.hostname, function)
    return found


# -- the text format ----------------------------------------------------------

def _escape(value):
    return (value.replace('\\', '\\\\').replace('"', '\\"')
            .replace('\n', '\\n'))


def _number(value):
    if math.isfinite(value) and value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


def render(found: Iterable[Sample]) -> str:
    """The Prometheus text format (0.0.4, which node_exporter's textfile
    collector reads) of FOUND: each family's HELP and TYPE (gauge) once,
    its series together in FAMILIES' order, sorted; a series given twice
    is written once (the textfile collector refuses a file that repeats
    one)."""
    by_name: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for item in found:
        by_name.setdefault(item.name, {}).setdefault(item.labels,
                                                     item.value)
    order = [f.name for f in FAMILIES] + sorted(set(by_name) - set(BY_NAME))
    lines = []
    for name in order:
        series = by_name.get(name)
        if not series:
            continue
        family = BY_NAME.get(name)
        if family is not None:
            lines.append('# HELP %s %s' % (name, family.help.replace(
                '\\', '\\\\').replace('\n', '\\n')))
        lines.append('# TYPE %s gauge' % name)
        for labels, value in sorted(series.items()):
            text = ','.join('%s="%s"' % (k, _escape(v)) for k, v in labels)
            lines.append('%s{%s} %s' % (name, text, _number(value)))
    return '\n'.join(lines) + '\n' if lines else ''


_NAME = r'[a-zA-Z_:][a-zA-Z0-9_:]*'
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\\n]|\\.)*)"'
                    r'\s*(?:,|$)')
_SAMPLE = re.compile(r'^(%s)\s*(?:\{(.*)\})?\s+(\S+)(?:\s+-?[0-9]+)?\s*$'
                     % _NAME)
_UNESCAPE = re.compile(r'\\(.)')


def _labels(text, number):
    pairs, at = [], 0
    while at < len(text):
        match = _LABEL.match(text, at)
        if not match:
            raise ValueError('line %d: labels not understood' % number)
        value = _UNESCAPE.sub(
            lambda m: '\n' if m.group(1) == 'n' else m.group(1),
            match.group(2))
        pairs.append((match.group(1), value))
        at = match.end()
    names = [k for k, _ in pairs]
    if len(set(names)) != len(names):
        raise ValueError('line %d: a label given twice' % number)
    return tuple(sorted((k, v) for k, v in pairs if v != ''))


def parse_text(text: str) -> list[Sample]:
    """The samples of a Prometheus text format TEXT (comments skipped;
    a timestamp after the value is ignored). A line that is not one, a
    value that is not a number, or a last line without its newline (a
    file cut short) raises ValueError naming the line."""
    if text and not text.endswith('\n'):
        raise ValueError('the text ends without a newline: cut short?')
    found = []
    for number, line in enumerate(text.split('\n')[:-1], 1):
        if not line.strip() or line.lstrip().startswith('#'):
            continue
        match = _SAMPLE.match(line)
        if not match:
            raise ValueError('line %d is not a sample' % number)
        name, label_text, value_text = match.groups()
        try:
            value = float(value_text)
        except ValueError:
            raise ValueError('line %d: %r is not a number'
                             % (number, value_text[:20])) from None
        found.append(Sample(name, _labels(label_text or '', number), value))
    return found


# -- series to facts ----------------------------------------------------------

def _integer(value, minimum=None):
    if not math.isfinite(value) or value != int(value):
        raise ValueError('not a whole number')
    if minimum is not None and value < minimum:
        raise ValueError('below %s' % minimum)
    return int(value)


def _boolean(value):
    if value not in (0, 1):
        raise ValueError('not 0 or 1')
    return bool(value)


def _label_int(labels, name, minimum=0):
    text = labels.get(name, '')
    if not re.match(r'^[0-9]+$', text):
        raise ValueError('%s is not a number' % name)
    return max(int(text), minimum)


def _apply_host(facts, family, labels, value):
    if family is COLLECTED:
        if not math.isfinite(value):
            raise ValueError('not a time')
        facts.collected_at = value
    elif family is IOMMU_ACTIVE:
        facts.iommu_active = _boolean(value)
    elif family is IOMMU_CMDLINE:
        facts.iommu_cmdline = {k: labels[k] for k in contents.IOMMU_OPTIONS
                               if k in labels}
    elif family is MDEVCTL:
        facts.mdevctl = _boolean(value)
    elif family is NVIDIA_SMI:
        facts.nvidia_smi = _boolean(value)
    elif family is VERSION:
        component = labels.get('component')
        if component not in shapes.COMPONENTS or not labels.get('version'):
            raise ValueError('not a component version')
        facts.versions[component] = shapes.Version(
            labels['version'], labels.get('package_version', ''),
            labels.get('source', ''))


def _set_mdev(function, labels, **values):
    name = labels.get('mdev_type')
    if not name:
        raise ValueError('no mdev type')
    before = function.mdev_types.get(name) or shapes.MdevType()
    fields = {'name': before.name,
              'available_instances': before.available_instances,
              'created': before.created}
    fields.update(values)
    function.mdev_types[name] = shapes.MdevType(**fields)


def _set_instance(function, labels):
    gi = shapes.GpuInstance(
        _label_int(labels, 'GPU_I_ID'), labels.get('GPU_I_PROFILE', ''),
        _label_int(labels, 'profile_id'),
        _label_int(labels, 'placement_start'),
        _label_int(labels, 'placement_size'))
    if not gi.profile:
        raise ValueError('no profile')
    if function.gpu_instances is None:
        function.gpu_instances = []
    if gi not in function.gpu_instances:
        function.gpu_instances.append(gi)
        function.gpu_instances.sort()


def _apply_function(f, family, labels, value):
    """One series of a PCI function into F (ValueError: it does not say
    what FAMILY says)."""
    if family is PCI_FUNCTION:
        f.vendor_id = labels.get('vendor_id')
        f.device_id = labels.get('device_id')
        f.pci_class = labels.get('class')
    elif family is DRIVER:
        f.driver = labels.get('driver', '')
    elif family is IOMMU_GROUP:
        f.iommu_group = labels.get('iommu_group', '')
    elif family is NUMA_NODE:
        f.numa_node = _integer(value, -1)
    elif family is SRIOV_NUMVFS:
        f.sriov_numvfs = _integer(value, 0)
    elif family is SRIOV_TOTALVFS:
        f.sriov_totalvfs = _integer(value, 0)
    elif family is VF:
        f.physfn = contents.bus_id_address(labels.get('physfn', ''))
    elif family is VGPU_TYPE:
        f.vgpu_type_id = _label_int(labels, 'vgpu_type_id')
        f.vgpu_type = labels.get('vgpu_type')
    elif family is MDEV_AVAILABLE:
        _set_mdev(f, labels, name=labels.get('mdev_type_name', ''),
                  available_instances=_integer(value, 0))
    elif family is MDEV_CREATED:
        _set_mdev(f, labels, created=_integer(value, 0))
    elif family is MIG_CURRENT:
        f.mig_current = _boolean(value)
    elif family is MIG_PENDING:
        f.mig_pending = _boolean(value)
    elif family is MIG_INSTANCES:
        _integer(value, 0)
        if f.gpu_instances is None:
            f.gpu_instances = []
    elif family is MIG_INSTANCE:
        _set_instance(f, labels)


def _hostname(labels, label_names):
    for name in label_names:
        if labels.get(name):
            return labels[name]
    return None


def from_samples(
        found: Iterable[Sample | tuple[str, Mapping[str, str], float]],
        label_names: Iterable[str] = HOSTNAME_LABELS
) -> dict[str, shapes.HostFacts]:
    """{host name: HostFacts} of the series FOUND ((name, labels, value):
    a Sample, or a name, a label mapping and a value as a Prometheus
    answer gives them). Series of other names, and series without a host
    name, are left out. A series whose labels or value do not say what
    its family says (a driver series without a bus id, a MIG mode of 7)
    gives no value but the fact unreadable, so a bad series is never read
    as a fact. ``instance`` labels are gathered in ``exporters``."""
    label_names = tuple(label_names)
    hosts: dict[str, shapes.HostFacts] = {}
    for item in found:
        name, raw, value = item[0], item[1], item[2]
        labels = dict(raw)
        family = BY_NAME.get(name)
        host = _hostname(labels, label_names)
        if family is None or not host:
            continue
        facts = hosts.setdefault(host, shapes.HostFacts(host))
        if labels.get(INSTANCE_LABEL):
            facts.exporters.add(labels[INSTANCE_LABEL])
        _apply(facts, family, labels, float(value))
    return hosts


def _apply(facts, family, labels, value):
    """One series into FACTS (or its fact unreadable)."""
    address = ''
    try:
        if family.per_function or family is UNREADABLE:
            bus = labels.get(BUS_LABEL)
            if bus or family.per_function:
                address = contents.bus_id_address(bus or '')
        if family is UNREADABLE:
            fact = labels.get('fact', '')
            if value == 1 and (fact in shapes.HOST_FACTS
                               or fact in shapes.FUNCTION_FACTS):
                facts.unreadable.add(shapes.Unreadable(fact, address))
            return
        if family.per_function:
            _apply_function(facts.function(address), family, labels, value)
        else:
            _apply_host(facts, family, labels, value)
    except (ValueError, KeyError):
        if family.fact:
            # a fact only the host has (mdev_devices) is the host's
            facts.unreadable.add(shapes.Unreadable(
                family.fact, address
                if family.fact in shapes.FUNCTION_FACTS else ''))
