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

"""gpuclient.rules.quota (pure), identity.Limits and the gpu quota
commands."""

import io
from unittest import mock

import fixtures
from openstack import exceptions as sdk_exc
from osc_lib import exceptions

from gpuclient.cloud import errors
from gpuclient.cloud import identity as identity_mod
from gpuclient.ops import candidate_ops
from gpuclient.ops import journal
from gpuclient.rules import checks
from gpuclient.rules import model
from gpuclient.rules import quota
from gpuclient.rules.checks import services as service_checks
from gpuclient.rules.nova_conf import parse
from gpuclient.tests.unit import base
from gpuclient.v1 import quota as quota_cmd

PT = 'CUSTOM_PCI_10DE_2331'


def pool(name, rc, mode='passthrough'):
    return {'name': name, 'resource_class': rc, 'mode': mode}


POOLS = {'h100': pool('h100', PT), 'h100-b': pool('h100-b', PT),
         'a10': pool('a10', 'VGPU', 'vgpu')}


def conf(text):
    return quota.conf_settings(parse.parse_ini(text))


UNIFIED = '[quota]\ndriver = nova.quota.UnifiedLimitsDriver\n'


class TestPure(base.TestCase):

    def test_names(self):
        self.assertEqual('class:VGPU', quota.resource_name('VGPU'))
        self.assertEqual('VGPU', quota.class_of('class:VGPU'))
        self.assertIsNone(quota.class_of('servers'))
        self.assertIsNone(quota.class_of('class:'))

    def test_target_class(self):
        self.assertEqual(PT, quota.target_class(POOLS, pool='h100'))
        self.assertEqual('VGPU', quota.target_class(
            POOLS, resource_class='vgpu'))
        self.assertEqual('CUSTOM_BAREMETAL_GPU_H100', quota.target_class(
            POOLS, resource_class='baremetal.gpu-h100'))
        error = self.assertRaises(exceptions.CommandError,
                                  quota.target_class, POOLS, pool='nope')
        self.assertIn('No GPU pool named nope', str(error))
        for bad in ('VCPU', 'MEMORY_MB'):
            error = self.assertRaises(exceptions.CommandError,
                                      quota.target_class, POOLS,
                                      resource_class=bad)
            self.assertIn("%s cannot be a pool's GPU resource class" % bad,
                          str(error))

    def test_check_gpus(self):
        for good, want in (('0', 0), ('2', 2), (' 7 ', 7),
                           (str(quota.MAX_LIMIT), quota.MAX_LIMIT)):
            self.assertEqual(want, quota.check_gpus(good))
        for bad in ('-1', 'two', '', '1.5', str(quota.MAX_LIMIT + 1), None):
            error = self.assertRaises(exceptions.CommandError,
                                      quota.check_gpus, bad)
            self.assertIn('--gpus %s' % bad, str(error))

    def test_shared_class(self):
        self.assertEqual({PT: ['h100', 'h100-b'], 'VGPU': ['a10']},
                         quota.pools_by_class(POOLS))
        self.assertIn('h100, h100-b share', quota.shared_note(PT, POOLS))
        self.assertIsNone(quota.shared_note('VGPU', POOLS))

    def test_conf_settings(self):
        self.assertEqual(
            (quota.LEGACY_DRIVER, 'require', ('servers',)),
            (lambda c: (c['driver'], c['strategy'], c['resource_list']))(
                conf('[DEFAULT]\n')))
        found = conf(UNIFIED + 'unified_limits_resource_strategy = ignore\n'
                     'unified_limits_resource_list = servers, class:VGPU\n')
        self.assertEqual((quota.UNIFIED_DRIVER, 'ignore',
                          ('servers', 'class:VGPU')),
                         (found['driver'], found['strategy'],
                          found['resource_list']))
        self.assertEqual((), conf(
            UNIFIED + 'unified_limits_resource_list =\n')['resource_list'])

    def test_effective(self):
        """Nova's should_enforce, case by case."""
        require = conf(UNIFIED)
        require_vgpu = conf(UNIFIED + 'unified_limits_resource_list = '
                            'servers,class:VGPU\n')
        ignore_none = conf(UNIFIED + 'unified_limits_resource_strategy = '
                           'ignore\nunified_limits_resource_list =\n')
        cases = [
            # project, registered, conf -> (limit, source, enforced)
            ({'class:VGPU': 2}, {'class:VGPU': 8}, require,
             (2, 'project', 2)),
            ({}, {'class:VGPU': 8}, require, (8, 'default', 8)),
            ({}, {'class:VGPU': -1}, require, (-1, 'default', None)),
            ({'class:VGPU': -1}, {'class:VGPU': 0}, require,
             (-1, 'project', None)),
            ({}, {'class:VGPU': 0}, require, (0, 'default', 0)),
            ({}, {}, require, (None, 'none', None)),
            ({}, {}, require_vgpu, (None, 'none', 0)),
            ({}, {}, ignore_none, (None, 'none', 0)),
            # a project limit of 0 without a registered one: the strategy
            ({'class:VGPU': 0}, {}, require, (0, 'project', None)),
            ({'class:VGPU': 0}, {}, require_vgpu, (0, 'project', 0)),
        ]
        for own, registered, settings, want in cases:
            got = quota.effective('VGPU', own, registered, settings)
            self.assertEqual(want, (got['limit'], got['source'],
                                    got['enforced']), (own, registered))

    def test_show_rows(self):
        rows = quota.show_rows(
            POOLS, {'class:VGPU': 4},
            {'class:VGPU': 8, 'class:%s' % PT: 2, 'servers': 10,
             'class:VCPU': 20},
            {'VGPU': 3, PT: 2, 'VCPU': 5, 'CUSTOM_GPU_L4': 1})
        self.assertEqual(
            [('CUSTOM_GPU_L4', [], None, 'none', 1, None),
             (PT, ['h100', 'h100-b'], 2, 'default', 2, 0),
             ('VGPU', ['a10'], 4, 'project', 3, 1)],
            [(r['resource_class'], r['pools'], r['limit'], r['source'],
              r['in_use'], r['free']) for r in rows])

    def test_list_rows(self):
        rows = quota.list_rows(POOLS, [
            {'project_id': 'p2', 'resource_name': 'class:VGPU',
             'resource_limit': 1},
            {'project_id': 'p1', 'resource_name': 'class:%s' % PT,
             'resource_limit': -1},
            {'project_id': 'p1', 'resource_name': 'class:VCPU',
             'resource_limit': 40},
            {'project_id': 'p1', 'resource_name': 'servers',
             'resource_limit': 4}])
        self.assertEqual([('p1', PT, None), ('p2', 'VGPU', 1)],
                         [(r['project_id'], r['resource_class'], r['limit'])
                          for r in rows])

    def test_excess(self):
        found = quota.excess({PT: 1, 'VGPU': 0}, {'class:%s' % PT: 2}, {},
                             {PT: 2})
        self.assertEqual([{'resource': 'class:%s' % PT, 'limit': 2,
                           'used': 2, 'asked': 1, 'source': 'project'}],
                         found)
        self.assertIn('2 used + 1 asked > 2', quota.excess_text('p', found))
        self.assertEqual([], quota.excess({PT: 1}, {'class:%s' % PT: 3},
                                          {}, {PT: 2}))
        # no limit anywhere: unlimited under Nova's default strategy
        self.assertEqual([], quota.excess({PT: 4}, {}, {}, {PT: 100}))

    def test_enforcement(self):
        self.assertEqual(quota.UNIFIED,
                         quota.enforcement(conf(UNIFIED))[0])
        self.assertEqual(quota.LEGACY,
                         quota.enforcement(conf('[quota]\n'))[0])
        absolute = {'maxTotalInstances': 10, 'maxTotalCores': 20,
                    'maxTotalRAMSize': 51200}
        # Keystone has nothing: unified Nova would report 0s
        state, why = quota.enforcement(None, absolute, {}, {})
        self.assertEqual(quota.LEGACY, state)
        self.assertIn('maxTotalInstances 10 (Keystone: 0)', why)
        registered = {'servers': 10, 'class:VCPU': 20,
                      'class:MEMORY_MB': 51200}
        self.assertEqual(quota.UNKNOWN, quota.enforcement(
            None, absolute, {}, registered)[0])
        self.assertEqual(quota.LEGACY, quota.enforcement(
            None, absolute, {'class:VCPU': 40}, registered)[0])
        self.assertEqual(quota.UNKNOWN, quota.enforcement(None, {})[0])

    def test_strategy_problems(self):
        self.assertEqual([], quota.strategy_problems(
            ['VGPU'], {}, conf(UNIFIED)))
        problems = quota.strategy_problems(
            ['VGPU', PT], {'class:%s' % PT: 4},
            conf(UNIFIED + 'unified_limits_resource_strategy = ignore\n'
                 'unified_limits_resource_list = servers\n'))
        self.assertEqual(['VGPU'], [rc for rc, _fix in problems])
        self.assertIn('unified_limits_resource_list = servers,class:VGPU',
                      problems[0][1])
        problems = quota.strategy_problems(
            ['VGPU'], {}, conf(UNIFIED + 'unified_limits_resource_list = '
                               'servers,class:VGPU\n'))
        self.assertIn('unified_limits_resource_list = servers',
                      problems[0][1])
        self.assertIn('--default --resource-class VGPU', problems[0][1])


def limit(project, name, value, limit_id=None):
    return {'id': limit_id or 'l-%s' % project, 'project_id': project,
            'resource_name': name, 'resource_limit': value}


class TestPlans(base.TestCase):
    """quota.plan_set / plan_delete: steps from Keystone's limits."""

    NAME = 'class:%s' % PT

    def test_set_project_without_registered(self):
        """Keystone keeps a project limit only under a registered one:
        the plan creates the registered limit that keeps what Nova gives
        every other project now, as the strategy makes of none (Nova's
        nova.limit.utils.should_enforce), and its step says so."""
        # (nova.conf [quota], registered limit planned, others get, said)
        cases = [
            (None, -1, 'unlimited', "assumed Nova's defaults: [quota] "
             'unified_limits_resource_strategy = require, '
             'unified_limits_resource_list = servers; no --nova-conf'),
            (UNIFIED, -1, 'unlimited', 'read from the nova.conf given'),
            (UNIFIED + 'unified_limits_resource_strategy = require\n'
             'unified_limits_resource_list = servers,class:%s\n' % PT,
             0, '0 GPUs', 'strategy = require, unified_limits_resource_'
             'list = servers,class:%s, read from' % PT),
            (UNIFIED + 'unified_limits_resource_strategy = ignore\n',
             0, '0 GPUs', 'strategy = ignore, unified_limits_resource_list '
             '= servers, read from'),
            (UNIFIED + 'unified_limits_resource_strategy = ignore\n'
             'unified_limits_resource_list = servers,class:%s\n' % PT,
             -1, 'unlimited', 'strategy = ignore'),
            (UNIFIED + 'unified_limits_resource_strategy = ignore\n'
             'unified_limits_resource_list =\n', 0, '0 GPUs',
             'unified_limits_resource_list = (empty)'),
        ]
        for text, keep, others, said in cases:
            settings = None if text is None else conf(text)
            plan = quota.plan_set(PT, 2, 'p1', {}, [], conf=settings)
            self.assertEqual(
                [('limit.set', None, keep, 'limit.delete'),
                 ('limit.set', 'p1', 2, 'limit.delete')],
                [(s.op, s.args['project'], s.args['limit'], s.inverse.op)
                 for s in plan], text)
            first = plan.lines()[0]
            self.assertTrue(first.startswith(
                '1. set the registered limit %s to %d (every project '
                'without its own limit keeps what Nova gives it now: %s; '
                % (self.NAME, keep, others)), first)
            self.assertIn(said, first)
            self.assertIn('(undo: delete the registered limit %s)'
                          % self.NAME, first)
            self.assertIn('creates it at %d, so that every other project '
                          'keeps what Nova gives it now (%s;'
                          % (keep, others), plan.warnings[0])
            self.assertIn('gpu quota set --default --resource-class %s'
                          % PT, plan.warnings[0])
            # what Nova gives the others is the same before and after
            registered = {self.NAME: {'id': 'r', 'limit': keep}}
            self.assertEqual(
                quota.effective(PT, {}, {}, settings)['enforced'],
                quota.effective(PT, {}, {self.NAME: keep},
                                settings)['enforced'])
            # under that registered limit, only the project limit is set
            plan = quota.plan_set(PT, 2, 'p1', registered, [],
                                  conf=settings)
            self.assertEqual([('p1', 2)], [
                (s.args['project'], s.args['limit']) for s in plan])
            self.assertEqual([], plan.warnings)

    def test_registered_limit_steps_say_what_others_get(self):
        ignore = conf(UNIFIED + 'unified_limits_resource_strategy = '
                      'ignore\n')
        cases = [
            # (registered now, conf, planner, args, expected in step 1)
            ({}, ignore, quota.plan_set, (4, None),
             'to 4 (every project without its own limit: 0 GPUs now, '
             '4 GPUs after; [quota] unified_limits_resource_strategy = '
             'ignore'),
            ({}, None, quota.plan_set, (4, None),
             'to 4 (every project without its own limit: unlimited now, '
             "4 GPUs after; assumed Nova's defaults"),
            ({self.NAME: {'id': 'r', 'limit': -1}}, ignore, quota.plan_set,
             (0, None), 'to 0 (every project without its own limit: '
             'unlimited now, 0 GPUs after) (undo'),
            ({self.NAME: {'id': 'r', 'limit': 4}}, ignore,
             quota.plan_delete, (None,), 'delete the registered limit '
             '%s (every project without its own limit: 4 GPUs now, 0 GPUs '
             'after; [quota] unified_limits_resource_strategy = ignore'
             % self.NAME),
            ({self.NAME: {'id': 'r', 'limit': 4}}, None, quota.plan_delete,
             (None,), '4 GPUs now, unlimited after; assumed'),
        ]
        for registered, settings, planner, args, expected in cases:
            plan = planner(PT, *args, registered, [], conf=settings)
            self.assertIn(expected, plan.lines()[0])

    def test_set_project_update_and_no_op(self):
        registered = {self.NAME: {'id': 'r', 'limit': 4}}
        plan = quota.plan_set(PT, 3, 'p1', registered,
                              [limit('p1', self.NAME, 2)])
        self.assertEqual(1, len(plan))
        self.assertEqual(('limit.set', 3, 2), (
            plan.steps[0].op, plan.steps[0].args['limit'],
            plan.steps[0].inverse.args['limit']))
        self.assertFalse(quota.plan_set(PT, 2, 'p1', registered,
                                        [limit('p1', self.NAME, 2)]))
        # another project's limit is not this project's
        plan = quota.plan_set(PT, 2, 'p1', registered,
                              [limit('p2', self.NAME, 2)])
        self.assertEqual('limit.delete', plan.steps[0].inverse.op)

    def test_set_default(self):
        registered = {self.NAME: {'id': 'r', 'limit': -1}}
        users = [limit('p2', self.NAME, 1), limit('p1', self.NAME, 1)]
        error = self.assertRaises(exceptions.CommandError, quota.plan_set,
                                  PT, 4, None, registered, users)
        self.assertIn('(p1, p2)', str(error))
        # the same value: nothing to do, not refused
        self.assertFalse(quota.plan_set(PT, -1, None, registered, users))
        plan = quota.plan_set(PT, 4, None, registered, [])
        self.assertEqual((None, 4, -1), (
            plan.steps[0].args['project'], plan.steps[0].args['limit'],
            plan.steps[0].inverse.args['limit']))
        plan = quota.plan_set(PT, 4, None, {}, [])
        self.assertEqual('limit.delete', plan.steps[0].inverse.op)

    def test_delete(self):
        registered = {self.NAME: {'id': 'r', 'limit': 4}}
        error = self.assertRaises(exceptions.CommandError, quota.plan_delete,
                                  PT, 'p1', registered, [])
        self.assertIn('no limit of its own', str(error))
        plan = quota.plan_delete(PT, 'p1', registered,
                                 [limit('p1', self.NAME, 2)])
        self.assertEqual([('limit.delete', 'limit.set', 2)], [
            (s.op, s.inverse.op, s.inverse.args['limit']) for s in plan])
        error = self.assertRaises(
            exceptions.CommandError, quota.plan_delete, PT, None,
            registered, [limit('p1', self.NAME, 2)])
        self.assertIn('(p1)', str(error))
        error = self.assertRaises(exceptions.CommandError, quota.plan_delete,
                                  PT, None, {}, [])
        self.assertIn('no registered limit', str(error))
        plan = quota.plan_delete(PT, None, registered, [])
        self.assertEqual((None, 4), (plan.steps[0].inverse.args['project'],
                                     plan.steps[0].inverse.args['limit']))


class FakeLimits:
    """Keystone's limits in memory, as identity.Limits shows them; the
    k-th write can fail before ('error') or after ('lost') it happens.
    Like Keystone, it refuses a project limit without a registered one
    and deleting a registered limit projects still use."""

    def __init__(self, registered=None, limits=None):
        self.registered_limits = dict(registered or {})  # name -> value
        self.project_limits = dict(limits or {})  # (project, name) -> value
        self.writes = 0
        self.faults = {}

    def state(self):
        return dict(self.registered_limits), dict(self.project_limits)

    def _write(self, what, action):
        self.writes += 1
        kind = self.faults.pop(self.writes, None)
        if kind == 'error':
            raise errors.APIError('%s: 500 Internal Server Error' % what, 500)
        action()
        if kind == 'lost':
            raise errors.APIError('%s: Connection aborted' % what)

    def registered(self):
        return {n: {'id': 'r-' + n, 'limit': v}
                for n, v in self.registered_limits.items()}

    def limits(self, project_id=None):
        return [limit(p, n, v, 'l-%s-%s' % (p, n))
                for (p, n), v in sorted(self.project_limits.items())
                if project_id in (None, p)]

    def create_registered(self, name, value):
        def action():
            if name in self.registered_limits:
                raise errors.Conflict('duplicate %s' % name, 409)
            self.registered_limits[name] = value
        self._write('create registered %s' % name, action)

    def update_registered(self, limit_id, value):
        name = limit_id[2:]
        self._write('update registered %s' % name,
                    lambda: self.registered_limits.__setitem__(name, value))

    def delete_registered(self, limit_id):
        name = limit_id[2:]

        def action():
            if any(n == name for _p, n in self.project_limits):
                raise errors.APIError('registered %s in use' % name, 403)
            del self.registered_limits[name]
        self._write('delete registered %s' % name, action)

    def create_limit(self, project_id, name, value):
        def action():
            if name not in self.registered_limits:
                raise errors.APIError('no registered limit %s' % name, 403)
            self.project_limits[(project_id, name)] = value
        self._write('create limit %s' % name, action)

    def _key(self, limit_id):
        return next(k for k in self.project_limits
                    if 'l-%s-%s' % k == limit_id)

    def update_limit(self, limit_id, value):
        key = self._key(limit_id)
        self._write('update limit %s' % (key,),
                    lambda: self.project_limits.__setitem__(key, value))

    def delete_limit(self, limit_id):
        key = self._key(limit_id)
        self._write('delete limit %s' % (key,),
                    lambda: self.project_limits.pop(key))


class TestApply(base.TestCase):
    """Quota plans through the journal: all or nothing, at every fault."""

    NAME = 'class:%s' % PT

    def apply(self, limits, plan):
        journal.apply(mock.Mock(limits=limits), plan)

    def test_set_project_at_every_fault(self):
        goal = ({self.NAME: -1}, {('p1', self.NAME): 2})
        for k in (1, 2):
            for kind in ('error', 'lost'):
                limits = FakeLimits()
                limits.faults[k] = kind
                plan = quota.plan_set(PT, 2, 'p1', *self._read(limits, 'p1'))
                if kind == 'lost':
                    # the write happened: read back, the plan goes on
                    self.apply(limits, plan)
                    self.assertEqual(goal, limits.state(), (k, kind))
                    continue
                error = self.assertRaises(journal.ApplyError, self.apply,
                                          limits, plan)
                self.assertEqual(({}, {}), limits.state(), (k, kind))
                self.assertIn('Nothing had been changed' if k == 1 else
                              'the cloud is as it was', str(error))
                # the re-run converges
                self.apply(limits, quota.plan_set(
                    PT, 2, 'p1', *self._read(limits, 'p1')))
                self.assertEqual(goal, limits.state())

    def test_failed_undo_names_what_is_left(self):
        limits = FakeLimits()
        limits.faults.update({2: 'error', 3: 'error'})
        error = self.assertRaises(
            journal.ApplyError, self.apply, limits,
            quota.plan_set(PT, 2, 'p1', *self._read(limits, 'p1')))
        self.assertEqual(({self.NAME: -1}, {}), limits.state())
        self.assertIn('so this is left: set the registered limit %s to -1'
                      % self.NAME, str(error))
        self.apply(limits, quota.plan_set(PT, 2, 'p1',
                                          *self._read(limits, 'p1')))
        self.assertEqual(({self.NAME: -1}, {('p1', self.NAME): 2}),
                         limits.state())

    def test_delete_and_default(self):
        limits = FakeLimits({self.NAME: 4}, {('p1', self.NAME): 2})
        self.apply(limits, quota.plan_delete(PT, 'p1',
                                             *self._read(limits, 'p1')))
        self.assertEqual(({self.NAME: 4}, {}), limits.state())
        limits.faults[limits.writes + 1] = 'error'
        self.assertRaises(journal.ApplyError, self.apply, limits,
                          quota.plan_set(PT, 6, None,
                                         *self._read(limits, None)))
        self.assertEqual(({self.NAME: 4}, {}), limits.state())
        self.apply(limits, quota.plan_set(PT, 6, None,
                                          *self._read(limits, None)))
        self.apply(limits, quota.plan_delete(PT, None,
                                             *self._read(limits, None)))
        self.assertEqual(({}, {}), limits.state())

    def test_delete_several_all_or_nothing(self):
        """Several classes in one plan: a failed second delete puts the
        first back; a class without a limit refuses them all."""
        vgpu = 'class:VGPU'
        start = ({self.NAME: 4, vgpu: 1},
                 {('p1', self.NAME): 2, ('p1', vgpu): 1})
        limits = FakeLimits(*start)
        plan = quota.plan_delete_many([PT, 'VGPU'], 'p1',
                                      *self._read(limits, 'p1'))
        self.assertEqual(2, len(plan))
        limits.faults[limits.writes + 2] = 'error'
        self.assertRaises(journal.ApplyError, self.apply, limits, plan)
        self.assertEqual(start, limits.state())
        self.apply(limits, plan)
        self.assertEqual(({self.NAME: 4, vgpu: 1}, {}), limits.state())
        error = self.assertRaises(
            exceptions.CommandError, quota.plan_delete_many,
            [PT, 'VGPU'], 'p1', *self._read(limits, 'p1'))
        self.assertIn('2 of 2 GPU quotas cannot be deleted, so none is',
                      str(error))

    @staticmethod
    def _read(limits, project_id):
        return limits.registered(), limits.limits(project_id)


class FakeCloud:
    """What checks.services.quota_gpu_limits reads of a snapshot."""

    def __init__(self, pools, registered=None):
        self.pools = pools
        if registered is not None:
            # {resource name: RegisteredLimit}, as the model holds them
            self.registered = {name: {'id': name, 'limit': limit,
                                      'description': None}
                               for name, limit in registered.items()}


class TestCheck(base.TestCase):

    def run_check(self, cloud, text):
        settings = {'quota': conf(text)} if text is not None else None
        return service_checks.quota_gpu_limits(cloud, settings)

    def test_not_judged_without_nova_conf_silent_without_pools(self):
        found = self.run_check(FakeCloud(POOLS), None)
        self.assertEqual([('warning', 'nova.conf [quota]')],
                         [(f.severity, f.object) for f in found])
        self.assertTrue(found[0].symptom.startswith('not judged: '))
        self.assertEqual([], self.run_check(FakeCloud({}), '[quota]\n'))

    def test_legacy_driver(self):
        found = self.run_check(FakeCloud(POOLS), '[DEFAULT]\n')
        self.assertEqual([('warning', '[quota] driver')],
                         [(f.severity, f.object) for f in found])
        self.assertIn(quota.FIX_DRIVER, found[0].fix)
        self.assertEqual(('a10', 'h100', 'h100-b'), found[0].pools)

    def test_strategy_refuses(self):
        text = UNIFIED + ('unified_limits_resource_strategy = ignore\n'
                          'unified_limits_resource_list = servers\n')
        found = self.run_check(FakeCloud(POOLS, {'class:VGPU': 2}), text)
        self.assertEqual([('error', 'class:%s' % PT, ('h100', 'h100-b'))],
                         [(f.severity, f.object, f.pools) for f in found])
        self.assertEqual([], self.run_check(
            FakeCloud(POOLS, {'class:VGPU': 2, 'class:%s' % PT: -1}), text))
        self.assertEqual([], self.run_check(FakeCloud(POOLS, {}), UNIFIED))
        self.assertIn('quota-gpu-limits', checks.CHECKS)


def sdk_limit(**kw):
    return mock.Mock(**dict({'description': None}, **kw))


class TestLimitsClient(base.TestCase):

    def make(self, catalog, region=None):
        proxy = mock.Mock()
        session = mock.Mock()
        access = session.auth.get_access.return_value
        access.service_catalog.catalog = catalog
        return identity_mod.Limits(proxy, session, region), proxy

    COMPUTE = {'type': 'compute', 'id': 'svc-nova', 'endpoints': [
        {'region_id': 'RegionOne', 'interface': 'public'},
        {'region_id': 'RegionOne', 'interface': 'internal'}]}

    def test_scope_from_catalog(self):
        limits, proxy = self.make([{'type': 'identity', 'id': 'k'},
                                   self.COMPUTE])
        self.assertEqual(('svc-nova', 'RegionOne'), limits.scope())
        proxy.registered_limits.return_value = [sdk_limit(
            resource_name='class:VGPU', id='r1', default_limit=4)]
        self.assertEqual({'class:VGPU': {'id': 'r1', 'limit': 4,
                                         'description': None}},
                         limits.registered())
        proxy.registered_limits.assert_called_once_with(
            service_id='svc-nova', region_id='RegionOne')
        limits.create_limit('p1', 'class:VGPU', 2)
        proxy.create_limit.assert_called_once_with(
            service_id='svc-nova', region_id='RegionOne', project_id='p1',
            resource_name='class:VGPU', resource_limit=2)

    def test_regions(self):
        two = dict(self.COMPUTE, endpoints=[{'region_id': 'A'},
                                            {'region_id': 'B'}])
        limits, _proxy = self.make([two])
        error = self.assertRaises(errors.APIError, limits.scope)
        self.assertIn('--os-region-name', str(error))
        limits, _proxy = self.make([two], region='B')
        self.assertEqual(('svc-nova', 'B'), limits.scope())
        limits, _proxy = self.make([])
        self.assertRaises(errors.APIError, limits.scope)

    def test_forbidden(self):
        limits, proxy = self.make([self.COMPUTE])
        response = mock.Mock(status_code=403, headers={}, url='http://k')
        proxy.create_limit.side_effect = sdk_exc.HttpException(
            message='You are not authorized', response=response,
            http_status=403)
        error = self.assertRaises(errors.APIError, limits.create_limit,
                                  'p', 'class:VGPU', 1)
        self.assertEqual(403, error.status)


def aggregate(name, rc, mode='passthrough'):
    return {'name': name, 'uuid': name + '-uuid', 'hosts': [],
            'availability_zone': None,
            'metadata': {'gpu_pool': name, 'gpu_pool_mode': mode,
                         'gpu_resource_class': rc, 'gpu_alias': 'h100',
                         'gpu_pci_id': '10de:2331'}}


class TestCommands(base.CommandTestCase):

    def setUp(self):
        super().setUp()
        self.gpu = mock.Mock()
        self.gpu.compute.aggregates.return_value = [
            aggregate('h100', PT), aggregate('h100-b', PT)]
        self.gpu.project_id.side_effect = lambda name, domain=None: 'p-' + name
        self.gpu.current_project_id.return_value = 'p-own'
        # Nova 34 (2026.2): it counts GPUs asked through PCI aliases
        self.gpu.compute.max_version.return_value = (2, 104)
        self.limits = self.gpu.limits = mock.Mock(spec=identity_mod.Limits)
        self.limits.registered.return_value = {}
        self.limits.limits.return_value = []
        self.app = self.make_app(mock.Mock(gpu=self.gpu))

    def run_cmd(self, cls, args):
        cmd = cls(self.app, None)
        parsed = self.check_parser(cmd, args)
        return cmd.take_action(parsed)

    def writes(self):
        return [c for c in self.limits.method_calls
                if c[0].startswith(('create', 'update', 'delete'))]

    def test_parser_needs_one_of_each(self):
        cmd = quota_cmd.SetQuota(self.app, None)
        for args in (['--project', 'a', '--gpus', '1'],
                     ['--project', 'a', '--default', '--pool', 'h100',
                      '--gpus', '1'],
                     ['--project', 'a', '--pool', 'h100']):
            self.assertRaises(base.ParserError, self.check_parser, cmd,
                              args)

    def test_project_positional_or_option(self):
        """<project> as OSC's quota show/set take it, or --project; never
        both, nor with --default."""
        for cls, rest in ((quota_cmd.SetQuota, ['--pool', 'h100', '--gpus',
                                                '1']),
                          (quota_cmd.DeleteQuota, ['--pool', 'h100']),
                          (quota_cmd.ShowQuota, [])):
            cmd = cls(self.app, None)
            self.check_parser(cmd, ['team'] + rest,
                              [('project_arg', 'team'), ('project', None)])
            self.check_parser(cmd, ['--project', 'team'] + rest,
                              [('project_arg', None), ('project', 'team')])
            self.assertRaises(base.ParserError, self.check_parser, cmd,
                              ['team', '--project', 'other'] + rest)
            if cls is not quota_cmd.ShowQuota:
                self.assertRaises(base.ParserError, self.check_parser, cmd,
                                  ['team', '--default'] + rest)
            text = ' '.join(cmd.get_parser('x').format_help().split())
            self.assertIn('<project> ', text)
            self.assertIn('as --project does', text)
        self.check_parser(quota_cmd.ShowQuota(self.app, None), [],
                          [('project_arg', None), ('project', None)])

    def test_delete_parser_takes_several_targets(self):
        cmd = quota_cmd.DeleteQuota(self.app, None)
        self.check_parser(cmd, ['team', '--pool', 'h100', '--pool', 'a'],
                          [('pool', ['h100', 'a'])])
        self.check_parser(cmd, ['team', '--resource-class', 'VGPU'],
                          [('resource_class', ['VGPU'])])
        for args in (['team'], ['team', '--pool', 'h100',
                                '--resource-class', 'VGPU']):
            self.assertRaises(base.ParserError, self.check_parser, cmd,
                              args)
        text = ' '.join(cmd.get_parser('x').format_help().split())
        self.assertIn('repeat for several, deleted in one all-or-nothing '
                      'run', text)
        # set takes one target and one --gpus
        set_cmd = quota_cmd.SetQuota(self.app, None)
        self.check_parser(set_cmd, ['team', '--pool', 'h100', '--gpus', '1'],
                          [('pool', 'h100')])
        self.assertNotIn('repeat for several', set_cmd.get_parser(
            'x').format_help())

    def test_set_positional_project(self):
        self.run_cmd(quota_cmd.SetQuota, ['team', '--pool', 'h100',
                                          '--gpus', '2'])
        self.assertEqual([
            mock.call.create_registered('class:%s' % PT, -1),
            mock.call.create_limit('p-team', 'class:%s' % PT, 2)],
            self.writes())

    def test_set_defaults_to_the_current_project(self):
        # as "openstack quota set" does: no <project>, --project nor
        # --default is the current project (never the registered limit)
        self.run_cmd(quota_cmd.SetQuota, ['--pool', 'h100', '--gpus', '2'])
        self.assertEqual([
            mock.call.create_registered('class:%s' % PT, -1),
            mock.call.create_limit('p-own', 'class:%s' % PT, 2)],
            self.writes())
        self.gpu.project_id.assert_not_called()
        text = ' '.join(quota_cmd.SetQuota(self.app, None).get_parser(
            'x').format_help().split())
        self.assertIn('default: the current project', text)

    def test_set_project_creates_registered_first(self):
        self.run_cmd(quota_cmd.SetQuota, ['--project', 'team', '--pool',
                                          'h100', '--gpus', '2'])
        self.assertEqual([
            mock.call.create_registered('class:%s' % PT, -1),
            mock.call.create_limit('p-team', 'class:%s' % PT, 2)],
            self.writes())
        self.assertIn('share', self.logger.output)

    def test_set_project_updates(self):
        self.limits.registered.return_value = {
            'class:%s' % PT: {'id': 'r', 'limit': -1}}
        self.limits.limits.return_value = [
            {'id': 'l1', 'project_id': 'p-team',
             'resource_name': 'class:%s' % PT, 'resource_limit': 2}]
        self.run_cmd(quota_cmd.SetQuota, ['--project', 'team', '--pool',
                                          'h100', '--gpus', '3'])
        self.assertEqual([mock.call.update_limit('l1', 3)], self.writes())

    def test_set_default_refused_while_projects_use_it(self):
        self.limits.registered.return_value = {
            'class:%s' % PT: {'id': 'r', 'limit': -1}}
        self.limits.limits.return_value = [
            {'id': 'l1', 'project_id': 'p-team',
             'resource_name': 'class:%s' % PT, 'resource_limit': 2}]
        error = self.assertRaises(
            exceptions.CommandError, self.run_cmd, quota_cmd.SetQuota,
            ['--default', '--resource-class', PT, '--gpus', '4'])
        self.assertIn('p-team', str(error))
        self.assertEqual([], self.writes())
        self.limits.limits.return_value = []
        self.run_cmd(quota_cmd.SetQuota,
                     ['--default', '--resource-class', PT, '--gpus', '4'])
        self.assertEqual([mock.call.update_registered('r', 4)],
                         self.writes())

    def test_bad_input_writes_nothing(self):
        for args, message in (
                (['--project', 't', '--pool', 'nope', '--gpus', '1'],
                 'No GPU pool named nope'),
                (['--project', 't', '--pool', 'h100', '--gpus', '-2'],
                 '--gpus -2: give a whole number'),
                (['--project', 't', '--resource-class', 'VCPU', '--gpus',
                  '1'], "VCPU cannot be a pool's GPU resource class"),
                (['--default', '--pool', 'h100', '--gpus', 'x'],
                 '--gpus x: give a whole number')):
            error = self.assertRaises(exceptions.CommandError, self.run_cmd,
                                      quota_cmd.SetQuota, args)
            self.assertIn(message, str(error))
        self.assertEqual([], self.writes())

    def test_dry_run_writes_nothing(self):
        self.app.stdout = io.StringIO()
        self.run_cmd(quota_cmd.SetQuota, ['--project', 'team', '--pool',
                                          'h100', '--gpus', '2',
                                          '--dry-run'])
        self.assertEqual([], self.writes())
        lines = self.app.stdout.getvalue().splitlines()
        self.assertEqual(2, len(lines), lines)
        self.assertTrue(lines[0].startswith(
            '1. set the registered limit class:%s to -1 (every project '
            'without its own limit keeps what Nova gives it now: unlimited; '
            "assumed Nova's defaults" % PT), lines[0])
        self.assertEqual(
            '2. set the limit class:%s of project p-team to 2 (undo: '
            'delete the limit class:%s of project p-team)' % (PT, PT),
            lines[1])
        self.assertIn('creates it at -1', self.logger.output)

    def test_set_project_reads_the_strategy(self):
        """--nova-conf (or $GPUCLIENT_NOVA_CONF) with strategy ignore: the
        registered limit planned is 0, what Nova gives the others now."""
        path = self.useFixture(fixtures.TempDir()).join('nova.conf')
        with open(path, 'w') as f:
            f.write(UNIFIED + 'unified_limits_resource_strategy = ignore\n')
        self.run_cmd(quota_cmd.SetQuota, ['--project', 'team', '--pool',
                                          'h100', '--gpus', '2',
                                          '--nova-conf', path])
        self.assertEqual([
            mock.call.create_registered('class:%s' % PT, 0),
            mock.call.create_limit('p-team', 'class:%s' % PT, 2)],
            self.writes())
        self.assertIn('read from the nova.conf given', self.logger.output)

    def test_delete(self):
        error = self.assertRaises(
            exceptions.CommandError, self.run_cmd, quota_cmd.DeleteQuota,
            ['--project', 'team', '--pool', 'h100'])
        self.assertIn('no limit of its own', str(error))
        self.limits.limits.return_value = [
            {'id': 'l1', 'project_id': 'p-team',
             'resource_name': 'class:%s' % PT, 'resource_limit': 2}]
        self.run_cmd(quota_cmd.DeleteQuota,
                     ['--project', 'team', '--pool', 'h100'])
        self.assertEqual([mock.call.delete_limit('l1')], self.writes())

    def test_delete_several_in_one_plan(self):
        self.limits.registered.return_value = {
            'class:%s' % PT: {'id': 'r1', 'limit': -1},
            'class:VGPU': {'id': 'r2', 'limit': -1}}
        self.limits.limits.return_value = [
            {'id': 'l1', 'project_id': 'p-team',
             'resource_name': 'class:%s' % PT, 'resource_limit': 2},
            {'id': 'l2', 'project_id': 'p-team',
             'resource_name': 'class:VGPU', 'resource_limit': 1}]
        self.app.stdout = io.StringIO()
        self.run_cmd(quota_cmd.DeleteQuota,
                     ['team', '--resource-class', PT, '--resource-class',
                      'VGPU', '--dry-run'])
        self.assertEqual([], self.writes())
        self.assertEqual([
            '1. delete the limit class:%s of project p-team (undo: set the '
            'limit class:%s of project p-team to 2)' % (PT, PT),
            '2. delete the limit class:VGPU of project p-team (undo: set the '
            'limit class:VGPU of project p-team to 1)'],
            self.app.stdout.getvalue().splitlines())
        self.run_cmd(quota_cmd.DeleteQuota,
                     ['team', '--resource-class', PT, '--resource-class',
                      'VGPU'])
        self.assertEqual([mock.call.delete_limit('l1'),
                          mock.call.delete_limit('l2')], self.writes())

    def test_delete_two_pools_of_one_class_is_one_quota(self):
        self.limits.registered.return_value = {
            'class:%s' % PT: {'id': 'r1', 'limit': -1}}
        self.limits.limits.return_value = [
            {'id': 'l1', 'project_id': 'p-team',
             'resource_name': 'class:%s' % PT, 'resource_limit': 2}]
        self.run_cmd(quota_cmd.DeleteQuota,
                     ['--project', 'team', '--pool', 'h100', '--pool',
                      'h100-b'])
        self.assertEqual([mock.call.delete_limit('l1')], self.writes())
        self.assertIn('share one quota', self.logger.output)

    def test_delete_several_refused_writes_nothing(self):
        self.limits.registered.return_value = {
            'class:%s' % PT: {'id': 'r1', 'limit': -1}}
        self.limits.limits.return_value = [
            {'id': 'l1', 'project_id': 'p-team',
             'resource_name': 'class:%s' % PT, 'resource_limit': 2}]
        error = self.assertRaises(
            exceptions.CommandError, self.run_cmd, quota_cmd.DeleteQuota,
            ['team', '--resource-class', PT, '--resource-class', 'VGPU'])
        self.assertIn('1 of 2 GPU quotas cannot be deleted, so none is: '
                      'Project p-team has no limit of its own on class:VGPU',
                      str(error))
        self.assertEqual([], self.writes())

    def test_show_positional_project(self):
        self.gpu.placement.project_usages.return_value = {}
        self.gpu.compute.project_limits.return_value = {}
        self.run_cmd(quota_cmd.ShowQuota, ['team'])
        self.gpu.placement.project_usages.assert_called_once_with('p-team')
        self.gpu.placement.project_usages.reset_mock()
        self.run_cmd(quota_cmd.ShowQuota, [])
        self.gpu.placement.project_usages.assert_called_once_with('p-own')

    def test_show_default(self):
        # the registered limits, as "openstack quota show --default": no
        # project is read, no usage (In Use and Free are empty)
        self.limits.registered.return_value = {
            'class:%s' % PT: {'id': 'r', 'limit': 4}}
        self.limits.limits.return_value = [
            {'id': 'l1', 'project_id': 'p-own',
             'resource_name': 'class:%s' % PT, 'resource_limit': 2}]
        columns, rows = self.run_cmd(quota_cmd.ShowQuota, ['--default'])
        self.assertEqual(quota_cmd.SHOW_COLUMNS, columns)
        row = dict(zip(columns, rows[0], strict=True))
        self.assertEqual((PT, 4, 'default', None, None), (
            row['Resource Class'], row['Limit'].machine_readable(),
            row['Source'], row['In Use'], row['Free'].machine_readable()))
        self.gpu.placement.project_usages.assert_not_called()
        self.gpu.current_project_id.assert_not_called()
        self.assertRaises(base.ParserError, self.check_parser,
                          quota_cmd.ShowQuota(self.app, None),
                          ['team', '--default'])

    def test_show(self):
        self.limits.registered.return_value = {
            'class:%s' % PT: {'id': 'r', 'limit': 4}}
        self.limits.limits.return_value = [
            {'id': 'l1', 'project_id': 'p-team',
             'resource_name': 'class:%s' % PT, 'resource_limit': 2}]
        self.gpu.placement.project_usages.return_value = {PT: 2, 'VCPU': 2}
        self.gpu.compute.project_limits.return_value = {
            'maxTotalInstances': 10, 'maxTotalCores': 20,
            'maxTotalRAMSize': 51200}
        columns, rows = self.run_cmd(quota_cmd.ShowQuota,
                                     ['--project', 'team'])
        self.assertEqual(quota_cmd.SHOW_COLUMNS, columns)
        self.assertEqual(1, len(rows))
        row = dict(zip(columns, rows[0], strict=True))
        self.assertEqual((PT, 2, 'project', 2, 0), (
            row['Resource Class'], row['Limit'].machine_readable(),
            row['Source'], row['In Use'], row['Free'].machine_readable()))
        self.gpu.placement.project_usages.assert_called_once_with('p-team')
        # Nova reports legacy figures Keystone does not hold: a note
        self.assertIn('Nova does not enforce GPU quotas', self.logger.output)

    def test_pci_limits_not_enforced_before_nova_2026_2(self):
        # issue 40, rule 1: Nova 2026.1 (compute API 2.103) does not count
        # what pci_passthrough:alias asks for (fix-unified-limits-pci)
        self.limits.limits.return_value = [
            {'id': 'l1', 'project_id': 'p-team',
             'resource_name': 'class:%s' % PT, 'resource_limit': 2}]
        self.gpu.placement.project_usages.return_value = {}
        self.gpu.compute.project_limits.return_value = {}
        self.limits.project_names.return_value = {'p-team': 'team'}
        for version, warned in (((2, 104), False), ((2, 103), True),
                                ((2, 96), True)):
            self.gpu.compute.max_version.return_value = version
            self.logger = self.useFixture(fixtures.FakeLogger())
            self.run_cmd(quota_cmd.ShowQuota, ['--project', 'team'])
            self.run_cmd(quota_cmd.ListQuota, [])
            self.run_cmd(quota_cmd.SetQuota, ['--project', 'team', '--pool',
                                              'h100', '--gpus', '3'])
            said = self.logger.output.count('is not enforced for pools '
                                            'h100, h100-b')
            self.assertEqual(3 if warned else 0, said, version)
        self.assertIn('Nova 2024.1 or 2024.2 (compute API up to 2.96)',
                      self.logger.output)
        self.assertIn('openstack gpu pool set <pool> --project',
                      self.logger.output)

    def test_list(self):
        self.limits.limits.return_value = [
            {'id': 'l1', 'project_id': 'p-team',
             'resource_name': 'class:%s' % PT, 'resource_limit': 2},
            {'id': 'l2', 'project_id': 'p-team',
             'resource_name': 'class:VCPU', 'resource_limit': 2}]
        self.limits.project_names.return_value = {'p-team': 'team'}
        columns, rows = self.run_cmd(quota_cmd.ListQuota, [])
        self.assertEqual([('p-team', 'team', 'class:%s' % PT, PT)],
                         [tuple(r[:4]) for r in rows])

    def test_list_names_projects_a_truncated_list_left_out(self):
        self.limits.limits.return_value = [
            {'id': 'l1', 'project_id': 'p-team',
             'resource_name': 'class:%s' % PT, 'resource_limit': 2},
            {'id': 'l2', 'project_id': 'p-late',
             'resource_name': 'class:%s' % PT, 'resource_limit': 1},
            {'id': 'l3', 'project_id': 'p-hidden',
             'resource_name': 'class:%s' % PT, 'resource_limit': 1}]
        # Keystone's list stopped at list_limit: p-late is looked up by
        # ID; p-hidden cannot be looked up (None: left blank)
        self.limits.project_names.return_value = {'p-team': 'team'}
        self.limits.find_projects.return_value = {'p-late': 'late',
                                                  'p-hidden': None}
        columns, rows = self.run_cmd(quota_cmd.ListQuota, [])
        self.limits.find_projects.assert_called_once_with(
            {'p-late', 'p-hidden'})
        self.assertEqual(
            [('p-hidden', ''), ('p-late', 'late'), ('p-team', 'team')],
            sorted(tuple(r[:2]) for r in rows))


class TestCandidatesQuota(base.TestCase):
    """gpu candidate list --explain: unified GPU limits as the reason."""

    REQ = {'groups': {'': {'resources': {'VCPU': 1, 'MEMORY_MB': 512},
                           'gpu': False},
                      '1': {'resources': {PT: 1}, 'gpu': True},
                      '2': {'resources': {PT: 1}, 'gpu': True}}}

    def make_client(self, own, registered, usages):
        gpu = mock.Mock()
        gpu.compute.project_limits.return_value = {
            'maxTotalInstances': 10, 'totalInstancesUsed': 0,
            'maxTotalCores': 20, 'totalCoresUsed': 0,
            'maxTotalRAMSize': 51200, 'totalRAMUsed': 0}
        gpu.limits.registered.return_value = {
            n: {'id': n, 'limit': v} for n, v in registered.items()}
        gpu.limits.limits.return_value = [
            {'id': 'l', 'project_id': 'p', 'resource_name': n,
             'resource_limit': v} for n, v in own.items()]
        gpu.placement.project_usages.return_value = usages
        return gpu

    LEGACY_DEFAULTS = {'servers': 10, 'class:VCPU': 20,
                       'class:MEMORY_MB': 51200}

    def test_over_gpu_quota(self):

        gpu = self.make_client({'class:%s' % PT: 3}, self.LEGACY_DEFAULTS,
                               {PT: 2})
        found = candidate_ops._quota(gpu, unread(), 'p',
                                     {'vcpus': 1, 'ram': 512}, self.REQ)
        self.assertEqual([], found['excess'])
        self.assertEqual([('class:%s' % PT, 3, 2, 2)],
                         [(e['resource'], e['limit'], e['used'], e['asked'])
                          for e in found['gpu_excess']])
        gpu = self.make_client({'class:%s' % PT: 4}, self.LEGACY_DEFAULTS,
                               {PT: 2})
        self.assertEqual([], candidate_ops._quota(
            gpu, unread(), 'p', {'vcpus': 1, 'ram': 512},
            self.REQ)['gpu_excess'])

    def test_legacy_nova_is_not_checked(self):

        # Keystone has no registered servers, VCPU or RAM limits: Nova's
        # 10/20/51200 are its own
        gpu = self.make_client({'class:%s' % PT: 3},
                               {'class:%s' % PT: -1}, {PT: 2})
        found = candidate_ops._quota(gpu, unread(), 'p',
                                     {'vcpus': 1, 'ram': 512}, self.REQ)
        self.assertEqual([], found['gpu_excess'])
        self.assertIn('does not count GPUs',
                      found['not_checked']['Quota (GPUs)'])
        gpu.placement.project_usages.assert_not_called()
        # nova.conf says unified: judged
        found = candidate_ops._quota(gpu, unread(), 'p',
                                     {'vcpus': 1, 'ram': 512}, self.REQ,
                                     conf(UNIFIED))
        self.assertEqual(['class:%s' % PT],
                         [e['resource'] for e in found['gpu_excess']])


def unread():
    # the model candidate_ops._quota reads into: nothing read yet
    return model.Cloud([], None, None)


class TestQuota(base.TestCase):

    ABSOLUTE = {'maxTotalInstances': 10, 'totalInstancesUsed': 9,
                'maxTotalCores': 20, 'totalCoresUsed': 16,
                'maxTotalRAMSize': 51200, 'totalRAMUsed': 40960}

    def test_fits(self):
        self.assertEqual([], quota.quota_excess(self.ABSOLUTE, 1, 4, 10240))

    def test_each_limit(self):
        found = quota.quota_excess(self.ABSOLUTE, 2, 5, 10241)
        self.assertEqual(['instances', 'cores', 'ram'],
                         [e['resource'] for e in found])
        self.assertEqual({'resource': 'cores', 'limit': 20, 'used': 16,
                          'asked': 5}, found[1])
        text = quota.quota_text('p1', found)
        self.assertIn('cores: 16 used + 5 asked > 20', text)
        self.assertIn('openstack quota set', text)

    def test_unlimited_and_missing(self):
        absolute = dict(self.ABSOLUTE, maxTotalCores=-1)
        absolute.pop('maxTotalRAMSize')
        self.assertEqual([], quota.quota_excess(absolute, 1, 100, 10 ** 6))


class TestQuotaInCandidates(base.TestCase):
    """candidate_ops._quota: what the flavor (or --resource) asks counts."""

    class Compute:
        asked = []

        @classmethod
        def project_limits(cls, project_id):
            cls.asked.append(project_id)
            return dict(TestQuota.ABSOLUTE)

    class Client:
        pass

    Client.compute = Compute

    def req(self, **own):
        return {'groups': {'': {'resources': own, 'gpu': False}}}

    def test_flavor_over_cores(self):
        found = candidate_ops._quota(
            self.Client, unread(), 'p1', {'vcpus': 8, 'ram': 1024},
            self.req(VCPU=8, MEMORY_MB=1024))
        self.assertEqual(['cores'], [e['resource'] for e in found['excess']])
        self.assertEqual('p1', self.Compute.asked[-1])
        self.assertEqual({}, found['not_checked'])

    def test_resources_fit(self):
        found = candidate_ops._quota(
            self.Client, unread(), 'p2', None,
            self.req(VCPU=2, MEMORY_MB=2048))
        self.assertEqual([], found['excess'])
