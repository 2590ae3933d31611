#!/usr/bin/env python3
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
"""Break a rule on purpose and see which test fails (the testing guide's
mutation probe table).

For each mutation: replace one exact text in one file (it must occur
once), run the unit tests named for it with the py3 tox environment's
stestr, restore the file, and print "caught" (a test failed) or
"MISSED". Exit status 1 when a mutation was missed. The file is always
restored, also on Ctrl-C.

    tox -e py3 --notest && python tools/mutation_probe.py
"""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STESTR = os.path.join(ROOT, '.tox', 'py3', 'bin', 'stestr')

# (name, file, text, replacement, test regex)
MUTATIONS = [
    ('paging marker (os-simple-tenant-usage)', 'gpuclient/cloud/pager.py',
     "_query(more[0]['href']).get('marker')",
     "_query(more[0]['href']).get('limit')",
     'test_usage.TestUsageList.test_usage_pages_followed_by_instance_'
     'marker'),
    ('Keystone field name (registered limit)',
     'gpuclient/cloud/identity.py',
     'resource_name=name, default_limit=value)',
     'resource_name=name, limit=value)',
     'test_client.TestStrictKeystoneLimits'),
    ('members_of sends in_tree=', 'gpuclient/cloud/placement.py',
     'member_of=aggregate_uuid,',
     'in_tree=aggregate_uuid,',
     'test_client.TestStrictPlacementFake'),
    ('aggregates at Placement 1.1', 'gpuclient/cloud/versions.py',
     'PLACEMENT_AGGREGATES_VERSION = (1, 19)',
     'PLACEMENT_AGGREGATES_VERSION = (1, 1)',
     'test_client.TestStrictPlacementFake'),
    ('isolate boundary >=', 'gpuclient/rules/checks/pools.py',
     "group_policy == 'isolate' and len(numbered) > len(providers)",
     "group_policy == 'isolate' and len(numbered) >= len(providers)",
     'test_checks.TestIsolateEdges'),
    ('drain cordon undone on failure', 'gpuclient/ops/maintenance_ops.py',
     'reason,\n        undone=False, draining=True)',
     'reason,\n        undone=True, draining=True)',
     'test_drain.TestDrainEndToEnd.test_a_failed_move_leaves_the_host_'
     'cordoned'),
    ('drain --timeout not passed', 'gpuclient/ops/maintenance_ops.py',
     'confirm=confirm,\n                             timeout=timeout)',
     'confirm=confirm)',
     'test_drain.TestDrainEndToEnd.test_timeout_is_given_to_every_move'),
    ('drain re-run misses unconfirmed moves',
     'gpuclient/ops/maintenance_ops.py',
     '    if waiting:\n        rows = rows + maintenance.unconfirmed_rows(',
     '    if not waiting:\n        rows = rows + '
     'maintenance.unconfirmed_rows(',
     'test_drain.TestDrainUnconfirmed'),
    ('drain read-back failure passed through bare',
     'gpuclient/ops/maintenance_ops.py',
     "    except Exception as exc:  # noqa: BLE001 - any failed read\n",
     "    except KeyError as exc:\n",
     'test_drain.TestDrainReadBackFails'),
    ('HiGHS banner forwarded to stderr', 'gpuclient/ops/profile_ops.py',
     'if line.strip() and not line.startswith(BANNER)]',
     'if line.strip()]',
     'test_profile.TestSolverOutput'),
    ('Serves counts quoted', 'gpuclient/v1/profile.py',
     "'%s=%s' % (name, count)", "'%s=%r' % (name, str(count))",
     'test_profile.TestPlanProfile.test_plan'),
    ('pool named by aggregate UUID', 'gpuclient/rules/pools.py',
     "ids = (pool.get('aggregate_id'), pool.get('aggregate_uuid'))",
     "ids = (pool.get('aggregate_id'),)",
     'test_pools.TestFind'),
    ('pool delete counts CommandError only', 'gpuclient/v1/pool.py',
     "except Exception as exc:  # noqa: BLE001 - OSC's N-of-M delete\n"
     "                failures += 1",
     'except exceptions.CommandError as exc:\n'
     '                failures += 1',
     'test_pool.TestCommands.test_delete_n_of_m_any_error'),
    ('quota set: registered limit by default', 'gpuclient/ops/quota_ops.py',
     '    elif current:\n', '    elif False:\n',
     'test_quota.TestCommands.test_set_defaults_to_the_current_project'),
    ('placement API version silently ignored', 'gpuclient/plugin.py',
     "if value in (None, '') or str(value) == '1':", 'if True:',
     'test_plugin.TestPlugin.test_placement_api_version'),
    ('highspy missing: raw ImportError',
     'gpuclient/rules/profiles/solver.py',
     '    except ImportError as exc:\n', '    except KeyError as exc:\n',
     'test_profile.TestPlanProfile.test_without_highspy'),
    ('the plugin loads jsonschema', 'gpuclient/plugin.py',
     'import logging\n\nfrom osc_lib import utils',
     'import logging\n\nimport jsonschema  # noqa: F401\n'
     'from osc_lib import utils',
     'test_startup.TestStartup.test_non_gpu_command'),
    ('wheel ships gpuclient.tests', 'setup.py',
     "if p != name and not p.startswith(name + '.')]",
     'if p != name]',
     'test_requirements.TestPackaging.test_wheel_ships_no_tests'),
    ('apply --pool --prune ignores shared quota classes',
     'gpuclient/ops/document_ops.py',
     'keep=scope.keep(current) if scope is not None else (),\n'
     '        recorded=recorded',
     'keep=(),\n        recorded=recorded',
     'test_document_ops.TestScope.test_prune_keeps_quotas_of_a_class_'
     'shared_outside'),
    ('prune by shape, not by gpu apply\'s mark',
     'gpuclient/rules/document.py',
     'not in keep\n                          and old.get(APPLIED) else',
     'not in keep\n                          else',
     'test_document.TestDiff.test_prune_removes_only_what_apply_marked'),
    ('image step looked up by name', 'gpuclient/ops/journal.py',
     'never one named like it\n        image = self.client.image.find_image('
     'image_id, by_name=False)',
     'never one named like it\n        image = self.client.image.find_image('
     'image_id)',
     'test_document_ops.TestApplyChanges.test_image_step_acts_by_the_'
     'planned_id'),
    ('api_timeout not passed to Prometheus',
     'gpuclient/ops/utilisation_ops.py',
     "timeout=float(timeout) if timeout not in (None, '') else None,",
     'timeout=None,',
     'test_utilisation_commands.TestServerListUtilisation.test_api_'
     'timeout_of_the_cloud_bounds_prometheus'),
    ("Prometheus URL's query dropped", 'gpuclient/cloud/prometheus.py',
     "params = list(self.url_query) + [('query', promql)]",
     "params = [('query', promql)]",
     'test_prometheus.TestQuery.test_the_urls_own_query_is_kept_on_every_'
     'query'),
    ('exporter Hostname matched as written', 'gpuclient/rules/host_names.py',
     "return str(name).strip().lower().rstrip('.')",
     "return str(name).strip()",
     'test_utilisation.TestServerJoin.test_exporter_hostname_in_another_'
     'case_or_as_a_fqdn'),
    ('pager follows a page it asked for', 'gpuclient/cloud/pager.py',
     'if _request_key(url, params) in asked:',
     'if False:',
     'test_answers.TestPagerEnds'),
    ('2xx answer without its key read', 'gpuclient/cloud/errors.py',
     'not isinstance(data, dict) or (key is not None and key not in data)',
     'not isinstance(data, dict)',
     'test_answers.TestNotJson'),
    ('gpu apply\'s zone check lists aggregates again',
     'gpuclient/ops/document_ops.py',
     "        existing = cloud.aggregate(pool['name'])\n",
     "        existing = snapshot.read_aggregates(client, warn=False)"
     ".aggregate(\n            pool['name'])\n",
     'test_document_ops.TestApplyReadsOnce'),
    ('after-state of a plan keeps the flavors as read',
     'gpuclient/rules/document_plan.py',
     "        flavors=[dict(f, extra_specs=dict(f.get('extra_specs') or {}))\n"
     "                 for f in cloud.flavors or ()],\n",
     '        flavors=cloud.flavors,\n',
     'test_model.TestAfterThePlan'),
    ('zone rule: one zone per host', 'gpuclient/rules/model.py',
     'if zone and other and other != zone:',
     'if zone and other and other == zone:',
     'test_model.TestZoneCheck'),
    # issue 51 (apply)
    ('gpu apply: conflict check skipped', 'gpuclient/rules/document_plan.py',
     'problems = conflict_problems(rows, builder.plan, force_conflicts)',
     'problems = conflict_problems(rows, builder.plan, True)',
     'test_document_ops.TestConflicts'),
    ('conflict: the recorded value ignored', 'gpuclient/rules/document.py',
     '    if now in (want, was):', '    if now == want:',
     'test_document.TestConflicts.test_fields'),
    ('gpu apply: the export\'s record not read',
     'gpuclient/ops/document_ops.py',
     '    recorded = document.recorded(wanted)', '    recorded = None',
     'test_document_ops.TestConflicts'),
    # issue 51 (cli)
    ('exit status on unrun checks', 'gpuclient/rules/checks/__init__.py',
     '    if missing and all(n in missing for n in asked):\n',
     '    if False:\n',
     'test_checks_not_run'),
    ('release loop catches only CommandError',
     'gpuclient/ops/device_ops.py',
     "            except Exception as exc:  # noqa: BLE001 - OSC's N-of-M\n",
     '            except exceptions.CommandError as exc:\n',
     'v1.test_device.TestDeviceRelease'),
    ('release rows lost on a partial failure', 'gpuclient/v1/device.py',
     '        self._failed = (failures, failures + len(rows))\n',
     '        self._failed = (failures, failures + len(rows))\n'
     '        if failures:\n'
     "            raise exceptions.CommandError('%d failed' % failures)\n",
     'v1.test_device.TestDeviceRelease'),
    ('Blazar held hosts by the freepool name', 'gpuclient/rules/model.py',
     '        if self.blazar_hosts is not None:\n',
     '        if False:\n',
     'v1.test_capacity.TestBlazar'),
    ('freepool name used although Blazar answered',
     'gpuclient/rules/reservations.py',
     "        if enrolled is not None and aggregate.get('name') == "
     "freepool:\n",
     '        if False:\n',
     'test_reservations.TestHeldHosts'),
    # issue 51 (http)
    ('gpu session built without a timeout', 'gpuclient/plugin.py',
     '    config._session_constructor = build\n',
     '    config._session_constructor = current\n',
     'test_bounds.TestOscSession.test_without_any_setting_the_session_is_'
     'bounded'),
    ('a hung service asked again', 'gpuclient/cloud/http.py',
     '        if origin in self.hung:\n', '        if False:\n',
     'test_bounds.TestSilentServices.test_placement'),
    ('answer size cap not applied', 'gpuclient/cloud/http.py',
     '                if size > self.max_bytes:\n',
     '                if False:\n',
     'test_bounds.TestAnswerCap'),
    # issue 51 (health)
    ('XID class: an application\'s XID as the host\'s',
     'gpuclient/rules/devices/health.py',
     '    RESTART_APP: XID_APPLICATION,',
     '    RESTART_APP: XID_HOST,',
     'test_device_health.TestDeviceHealth.test_xid_classes'),
    ('a sticky XID read as recent whatever its age',
     'gpuclient/rules/devices/health.py',
     '    recent = since is not None\n',
     '    recent = since is not None or before is not None\n',
     'test_device_health.TestDeviceHealth.test_xid_class_dating_and_'
     'precedence'),
    ('host-vs-guest: a guest\'s series override the host\'s',
     'gpuclient/rules/devices/health.py',
     '        source = HOST_SIDE\n        if not mine:\n',
     '        source = HOST_SIDE\n'
     '        if any(index.guest.get(s) for s in row[\'server_ids\']):\n'
     '            mine = []\n        if not mine:\n',
     'test_device_health.TestDeviceHealth.test_xid_class_dating_and_'
     'precedence'),
    ('host-vs-guest: a guest\'s report makes a device unhealthy',
     'gpuclient/rules/devices/health.py',
     "'unhealthy': source == HOST_SIDE and (",
     "'unhealthy': (",
     'test_device_health.TestDeviceHealth.test_xid_class_dating_and_'
     'precedence'),
    ('gpu-missing compares counts, not addresses',
     'gpuclient/rules/checks/gpus.py',
     '        if not missing:\n            continue\n        found.append('
     'utils.finding(\n            utils.ERROR, \'gpu-missing\'',
     '        if not missing or len(device_health.served(mine)) >= len(\n'
     '                rows):\n            continue\n        found.append('
     'utils.finding(\n            utils.ERROR, \'gpu-missing\'',
     'test_device_checks.TestMissingByAddress'),
    # issue 51 (nova)
    ('vgpu-vf VFs from the inventory total',
     'gpuclient/rules/nova_conf/render.py',
     'resources.update(snapshot.totals.get(uuid) or {})',
     'resources.update({})',
     'test_config.TestShow.test_a_reserved_vf_keeps_its_device_spec'),
    ('--host-fact host resolved as --host', 'gpuclient/rules/model.py',
     'hosts, said = self.resolve_hosts([name])',
     'hosts, said = [name], []',
     'test_model.TestFactHosts'),
    ('[pci] alias numa_policy of nova.conf used',
     'gpuclient/rules/scheduler/filters/numa_topology_filter.py',
     "if guest and not guest['pci_policy']:",
     'if False:',
     'scheduler.filters.test_numa_topology_filter.TestJudge.test_the_'
     'alias_policy_of_the_'
     'nova_conf_given_decides'),
    ('unknown BAR1 size is not judged', 'gpuclient/rules/checks/pools.py',
     'elif (unknown and gpus',
     'elif (False and gpus',
     'test_checks.TestFlavors.test_address_space_not_judged_without_a_'
     'bar1_size'),
    # issue 51 (bar1)
    ('BAR1 size from MiB to GiB', 'gpuclient/rules/catalogue/__init__.py',
     'mib // 1024,',
     'mib // 1000,',
     'test_address_space.TestCatalogue.test_bar1_sizes'),
    # issue 51 (promjoin)
    ('exact-name join: another domain by its first label',
     'gpuclient/rules/host_names.py',
     'if domain and domain not in domains.get(host, {domain}):',
     'if domain and False:',
     'test_host_names.TestSeriesHosts|test_prometheus_join.TestTwoRegions'),
    ('two exporters at one host and address joined',
     'gpuclient/rules/utilisation.py',
     'if not card[1] or len(ids) < 2:',
     'if not card[1] or len(ids) < 3:',
     'test_utilisation.TestJoinAnswers|test_prometheus_join.TestTwoRegions'),
    ('a card replaced within the window taken for a second exporter',
     'gpuclient/rules/utilisation.py',
     'if len(served) == 1 and next(iter(served)) in ids:',
     'if False:',
     'test_utilisation.TestJoinAnswers'),
    ('an earlier UUID of another exporter taken for a replaced card',
     'gpuclient/rules/utilisation.py',
     'if all(e in exporters for uuid, seen_by in ids.items()',
     'if any(e in exporters for uuid, seen_by in ids.items()',
     'test_utilisation.TestJoinAnswers'),
    ('label selector not on the queries sent',
     'gpuclient/ops/utilisation_ops.py',
     'rewrite=functools.partial(promql.with_matchers, matchers=matchers)\n'
     '        if matchers else None)',
     'rewrite=None)',
     'test_prometheus_join.TestTwoRegions|test_utilisation_commands'),
    ('answer shape: a metric not an object',
     'gpuclient/rules/utilisation.py',
     "metric = item.get('metric', {})\n    if not isinstance(metric, dict):",
     "metric = item.get('metric', {})\n    if False:",
     'test_utilisation.TestAnswerShapes|test_prometheus_join.TestWrongShapes'),
    # issue 51 (lead): an interruption stops the N-of-M loops
    ('device release goes on after Ctrl-C', 'gpuclient/ops/device_ops.py',
     '                if journal.interrupted(exc):\n',
     '                if False:\n',
     'v1.test_device.TestDeviceRelease.test_an_interruption_stops_the_rest'),
    ('pool delete goes on after Ctrl-C', 'gpuclient/v1/pool.py',
     '                if pool_ops.interrupted(exc):\n',
     '                if False:\n',
     'v1.test_pool.TestCommands.test_delete_stops_at_an_interruption'),
    # issue 52 (proofs)
    ('NUMA device reason says required', 'gpuclient/rules/scheduler/'
     'filters/numa_topology_filter.py',
     "'have': sum(counts), 'policy': policy,",
     "'have': sum(counts), 'policy': 'required',",
     'scheduler.filters.test_numa_topology_filter.TestJudge.test_device_'
     'text_names_the_policy_asked'),
    # issue 52 (unitgap): unit tests for what only a functional test ran
    ('read-back ignores the reserved units', 'gpuclient/ops/journal.py',
     "return record is not None and not record.get('reserved')",
     'return record is not None',
     'test_journal_read_back.TestEveryOperation'),
    ('SIGHUP after SIGINT abandons the step', 'gpuclient/ops/journal.py',
     'if again and signum in ABANDONING:', 'if again:',
     'test_journal_read_back.TestSignalsForEveryOperation'),
    ('resource class loses its trailing _',
     'gpuclient/rules/placement_names.py',
     "        result = CUSTOM_PREFIX + _custom_suffix(text)\n",
     "        result = CUSTOM_PREFIX + _custom_suffix(text).rstrip('_')\n",
     'test_placement_names.TestResourceClass'),
    ('page size words in any case', 'gpuclient/rules/scheduler/hardware.py',
     '    value = str(text)\n    if value in (PAGES_SMALL,',
     '    value = str(text).lower()\n    if value in (PAGES_SMALL,',
     'scheduler.test_hardware.TestRequestedValues'),
    ('PCI NUMA policy not checked', 'gpuclient/rules/scheduler/hardware.py',
     '    if policy and policy not in PCI_POLICIES:',
     '    if False:', 'scheduler.test_hardware.TestRequestedValues'),
    ('series host keeps its final dot', 'gpuclient/rules/host_names.py',
     "return str(name).strip().lower().rstrip('.')",
     'return str(name).strip().lower()', 'test_series_host_joins'),
    ('health window not clamped to its start',
     'gpuclient/rules/devices/health.py',
     "'xid_since_before': 'clamp_max(%s or %s, time() - %d)' % (",
     "'xid_since_before': 'clamp_max(%s or %s, time() - %d + 60)' % (",
     'test_health_window.TestHealthWindow'),
    ('device release gives up at the first lost race',
     'gpuclient/cloud/placement.py',
     '                                 version, what, body, attempt, '
     'retries):\n                return True',
     '                                 version, what, body, retries - 1, '
     'retries):\n                return True',
     'test_retry_conflicts.TestReleaseReservedRaces'),
    # issue 52 (handshake)
    ('sigint2: second SIGINT without the handler\'s handshake',
     'gpuclient/tests/functional/faults.py',
     '            return runs.changed.wait_for(lambda: runs.seen > seen, '
     'timeout)\n',
     '            return True\n',
     'test_fault_handshake'),
    ('a nested signal handler writes into the line under way',
     'gpuclient/ops/journal.py',
     '    if _SAYING:\n        _PENDING.append((message, name))\n',
     '    if False:\n        _PENDING.append((message, name))\n',
     'test_journal.TestSignals.test_a_second_signal_during_the_first_line'),
]


def probe(path, text, replacement, tests):
    full = os.path.join(ROOT, path)
    with open(full) as source:
        original = source.read()
    if original.count(text) != 1:
        return 'NOT APPLIED (text found %d times)' % original.count(text)
    try:
        with open(full, 'w') as source:
            source.write(original.replace(text, replacement))
        run = subprocess.run([STESTR, 'run', tests], cwd=ROOT,
                             capture_output=True, text=True)
    finally:
        with open(full, 'w') as source:
            source.write(original)
    return 'caught' if run.returncode else 'MISSED'


def main():
    missed = 0
    for name, path, text, replacement, tests in MUTATIONS:
        outcome = probe(path, text, replacement, tests)
        missed += outcome != 'caught'
        print('%-42s %-22s %-8s %s' % (name, path, outcome, tests))
    return 1 if missed else 0


if __name__ == '__main__':
    sys.exit(main())
