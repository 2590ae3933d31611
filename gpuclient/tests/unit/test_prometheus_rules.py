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

"""The shipped Prometheus rules (etc/prometheus) against gpuclient's real
output: every ``gpuclient_`` metric and every label the rules (and their
promtool tests' input series) use is one that ``gpu device list`` or ``gpu
capacity list -f openmetrics`` writes, or gpuclient-host-facts writes of a
fake host of each kind, so renaming a metric or a label in the formatter
or the collector fails here, not in a user's Prometheus. The rules' own
behaviour is tested by promtool (tox -e promtool).
"""

import importlib.util
import os
import re
import tempfile

import fixtures
from prometheus_client.openmetrics import parser as om_parser
import testtools
import yaml

from gpuclient import formatters
from gpuclient.hostfacts import collector
from gpuclient.rules.checks import hosts as host_checks
from gpuclient.rules.devices import health as device_health
from gpuclient.rules.host_facts import series
from gpuclient.tests.unit import test_device_metrics
from gpuclient.tests.unit import test_formatters

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
RULES = os.path.join(TOP, 'etc', 'prometheus', 'gpuclient.rules.yml')
TESTS = os.path.join(TOP, 'etc', 'prometheus', 'gpuclient.rules.test.yml')

# the labels only the DCGM exporter's series have (dcgm-exporter
# internal/pkg/rendermetrics/render_metrics.go: GPU_I_ID, Hostname before
# 4.8; DCGM_FI_DRIVER_VERSION is a label field of etc/default-counters.csv)
# and the labels the rules make (bus, by label_replace; xid, the XID a
# gauge holds, by count_values). The join keys,
# hostname, pci_bus_id and instance_id (an exporter in a guest, from
# openstack_sd_configs relabelling), are on both sides: gpuclient must
# write them, so they are not here.
OTHER_LABELS = {'Hostname', 'GPU_I_ID', 'DCGM_FI_DRIVER_VERSION', 'bus',
                'xid'}

# the collector's series the host rules read (each fed to their promtool
# tests)
HOST = 'gpuclient_host_'
HOST_USED = {
    'gpuclient_host_facts_collected_timestamp_seconds',
    'gpuclient_host_iommu_active', 'gpuclient_host_mdevctl_present',
    'gpuclient_host_mdev_type_available_instances',
    'gpuclient_host_mig_gpu_instances', 'gpuclient_host_mig_mode_current',
    'gpuclient_host_mig_mode_pending', 'gpuclient_host_pci_driver_info',
    'gpuclient_host_pci_function_info',
    'gpuclient_host_pci_iommu_group_info', 'gpuclient_host_sriov_numvfs',
    'gpuclient_host_sriov_totalvfs', 'gpuclient_host_sriov_vf_info',
    'gpuclient_host_vgpu_type_info',
}

_NAME = re.compile(r'\bgpuclient_[a-z0-9_]+')
_SELECTOR = re.compile(r'\b(gpuclient_[a-z0-9_]+)\{([^}]*)\}')
_MATCHER = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!~|!=|=)')
_GROUPING = re.compile(r'\b(?:by|without|on|ignoring|group_left|'
                       r'group_right)\s*\(([^)]*)\)')
_REPLACE = re.compile(r'label_replace\(.*?,\s*"([^"]+)",\s*"[^"]*",\s*'
                      r'"([^"]+)"', re.S)
_TEMPLATE = re.compile(r'\$labels\.([A-Za-z_][A-Za-z0-9_]*)')


# the cloud and region every series carries when they are known
SERIES = (('cloud', 'prod'), ('region', 'RegionOne'))

_spec = importlib.util.spec_from_file_location(
    'host_trees', os.path.join(TOP, 'tools', 'cloud', 'host_trees.py'))
host_trees = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(host_trees)


def host_series():
    """{metric: {labels}} of what gpuclient-host-facts writes of a fake
    host of each kind (and with bad input: its unreadable series)."""
    found = {}
    with tempfile.TemporaryDirectory() as work:
        for kind in host_trees.KINDS:
            faults = ('garbage-vgpu-type',) if kind == 'vgpu-vf' else ()
            root = host_trees.write_tree(os.path.join(work, kind), kind,
                                         faults=faults)
            text = series.render(series.samples(collector.collect(root)))
            for item in series.parse_text(text):
                found.setdefault(item.name, set()).update(item.label_map)
    return found


def produced():
    """{metric: {labels}} of gpuclient's real output: both commands'
    rows through the formatter, with the cloud and region labels, and
    the host fact collector's series (``host_series``)."""
    device = test_device_metrics
    texts = [formatters.render(
        device.device.COLUMNS + device.device.LONG_COLUMNS,
        [device.device._row(r, True) for r in device.ROWS], SERIES)[0]]
    for per_host in (False, True):
        texts.append(formatters.render(
            test_formatters.columns_of(per_host, True),
            test_formatters.capacity_rows(per_host=per_host,
                                          long=True), SERIES)[0])
    found = host_series()
    for text in texts:
        for family in om_parser.text_string_to_metric_families(text):
            for sample in family.samples:
                found.setdefault(sample.name, set()).update(sample.labels)
    return found


def rules():
    with open(RULES) as f:
        return [rule for group in yaml.safe_load(f)['groups']
                for rule in group['rules']]


def used_labels(text):
    """Label names TEXT (PromQL or an annotation) refers to."""
    labels = set()
    for group in _GROUPING.findall(text):
        labels |= {g.strip() for g in group.split(',') if g.strip()}
    for _name, matchers in _SELECTOR.findall(text):
        labels |= set(_MATCHER.findall(matchers))
    for made, source in _REPLACE.findall(text):
        labels |= {made, source}
    return labels | set(_TEMPLATE.findall(text))


def used_metrics(rules_):
    return {name for rule in rules_ for name in _NAME.findall(rule['expr'])}


def unknown_labels(found, rules_):
    """Labels RULES_ use that neither FOUND (gpuclient's output) nor DCGM
    has."""
    gpuclient = set().union(*found.values())
    unknown = set()
    for rule in rules_:
        texts = [rule['expr']] + list(
            (rule.get('annotations') or {}).values())
        unknown |= set().union(*(used_labels(t) for t in texts)) - (
            gpuclient | OTHER_LABELS)
    return unknown


class TestRulesUseGpuclientsNames(testtools.TestCase):
    def setUp(self):
        super().setUp()
        self.produced = produced()
        self.rules = rules()

    def test_every_gpuclient_metric_is_produced(self):
        used = used_metrics(self.rules)
        self.assertEqual({'gpuclient_device_info', 'gpuclient_flavor_fits'},
                         {n for n in used if not n.startswith(HOST)})
        self.assertEqual(HOST_USED, {n for n in used if n.startswith(HOST)})
        self.assertEqual(set(), used - set(self.produced))

    def test_the_stale_threshold_is_the_checks(self):
        # GPUClientHostFactsStale and gpu check's host-facts-stale agree
        [rule] = [r for r in self.rules
                  if r.get('alert') == 'GPUClientHostFactsStale']
        self.assertEqual(
            'time() - gpuclient_host_facts_collected_timestamp_seconds '
            '> %d' % host_checks.STALE_AFTER, rule['expr'].strip())

    def test_every_label_is_gpuclients_or_dcgms(self):
        self.assertEqual(set(), unknown_labels(self.produced, self.rules))

    def test_selectors_on_gpuclient_metrics_use_its_labels(self):
        for rule in self.rules:
            for name, matchers in _SELECTOR.findall(rule['expr']):
                self.assertLessEqual(set(_MATCHER.findall(matchers)),
                                     self.produced[name], rule)

    def test_promtool_inputs_are_gpuclients_series(self):
        # the promtool tests feed series shaped as gpuclient writes them
        with open(TESTS) as f:
            tests = yaml.safe_load(f)['tests']
        seen = set()
        for test in tests:
            for item in test['input_series']:
                name, _brace, rest = item['series'].partition('{')
                if not name.startswith('gpuclient_'):
                    continue
                labels = set(re.findall(r'([A-Za-z_]\w*)="', rest))
                seen.add(name)
                if name == 'gpuclient_device_info':
                    # the cloud and region where known
                    self.assertEqual(
                        self.produced[name] - set(formatters.SERIES_LABELS),
                        labels - set(formatters.SERIES_LABELS), item)
                else:
                    self.assertLessEqual(labels, self.produced[name] |
                                         {'host'}, item)
        self.assertEqual({'gpuclient_device_info', 'gpuclient_flavor_fits'},
                         {n for n in seen if not n.startswith(HOST)})
        self.assertEqual(HOST_USED, {n for n in seen if n.startswith(HOST)})

    def test_a_rename_is_caught(self):
        # the formatter writing server_id instead of instance_id, and
        # gpuclient_flavor_fits under another name: both are seen
        family = formatters.DEVICE_FAMILIES[0]
        renamed = formatters.Family(
            family.name, family.help, family.keys, info=True,
            each=(family.each[0], tuple(
                'server_id' if label == 'instance_id' else label
                for label in family.each[1])), convert=family.convert)
        self.useFixture(fixtures.MockPatchObject(
            formatters, 'DEVICE_FAMILIES', (renamed,)))
        self.useFixture(fixtures.MockPatchObject(
            formatters.EXPOSITIONS[1], 'families', (renamed,)))
        self.assertEqual({'instance_id'},
                         unknown_labels(produced(), self.rules))
        fits = formatters.FAMILIES[0]
        self.assertEqual('gpuclient_flavor_fits', fits.name)
        self.useFixture(fixtures.MockPatchObject(
            fits, 'name', 'gpuclient_flavor_fits_now'))
        self.assertEqual({'gpuclient_flavor_fits'},
                         used_metrics(self.rules) - set(produced()))

    def test_every_alert_has_a_promtool_test(self):
        with open(TESTS) as f:
            tests = yaml.safe_load(f)['tests']
        tested = {case['alertname'] for test in tests
                  for case in test.get('alert_rule_test', ())}
        alerts = {r['alert'] for r in self.rules if 'alert' in r}
        self.assertEqual(alerts, tested)
        recorded = {case['expr'] for test in tests
                    for case in test.get('promql_expr_test', ())}
        records = {r['record'] for r in self.rules if 'record' in r}
        # every recording rule is tested directly or through its alert
        self.assertLessEqual(recorded, records)


def _xids(text):
    return {int(x) for x in text.split('|')}


class TestRulesClassXidsAsGpuclient(testtools.TestCase):
    """The alerts class XIDs as gpu check does (device_health's
    XID_CLASSES over XID_ACTIONS): the host's alone are critical, the
    application's are the project's, informational ones nothing."""

    def test_xid_lists(self):
        by_class = {}
        for xid, bucket in device_health.XID_ACTIONS.items():
            by_class.setdefault(device_health.XID_CLASSES[bucket],
                                set()).add(xid)
        exprs = {r['alert']: r['expr'] for r in rules() if 'alert' in r}
        host = re.search(r'xid=~"([0-9|]+)"',
                         exprs['GPUClientXIDOnAllocatedGPU']).group(1)
        app = re.search(r'xid=~"([0-9|]+)"',
                        exprs['GPUClientApplicationXID']).group(1)
        not_guests = re.search(r'xid!~"([0-9|]+)"',
                               exprs['GPUClientGuestReportsXID']).group(1)
        self.assertEqual(by_class[device_health.XID_HOST], _xids(host))
        self.assertEqual(by_class[device_health.XID_APPLICATION],
                         _xids(app))
        self.assertEqual(
            {0} | by_class[device_health.XID_APPLICATION]
            | by_class[device_health.XID_INFORMATIONAL], _xids(not_guests))
        # no alert reads the sticky gauge over a window
        for rule in rules():
            self.assertNotIn('last_over_time(DCGM_FI_DEV_XID_ERRORS',
                             rule['expr'])
