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

"""Moves that go through the scheduler's answer: the fake Nova moves a
server only where its scheduler (``FakeCloud.schedule``) places it: the
host asked for, still filtered (enabled, room in Placement for all the
server holds), or with none the first host that passes; no valid host
leaves the migration in error and the server where it was, as Nova
does. A drain whose destination filled up after its plan stops there,
the host still cordoned, and its re-run finishes once there is room."""

from gpuclient.cloud import errors
from gpuclient.ops import journal
from gpuclient.rules import plan as plan_mod
from gpuclient.tests.unit import test_drain

PCI = test_drain.PCI


class TestSchedule(test_drain.DrainTestCase):

    def fill(self, host):
        """Servers on HOST holding every GPU it has left."""
        fillers = []
        while True:
            try:
                fillers.append(self.cloud.add_server(
                    'filler-%d' % len(fillers), host, self.specs,
                    gpus={PCI: 1}))
            except KeyError:
                return fillers

    def empty(self, fillers):
        for server in fillers:
            self.cloud.release(server['id'])
            self.cloud.servers.remove(server)

    def test_the_scheduler_filters_the_host_asked_for(self):
        server = self.gpu_server('a')
        self.assertEqual('gpu-pt-2', self.cloud.schedule(server, 'gpu-pt-2'))
        self.assertIsNone(self.cloud.schedule(server, 'gpu-pt-1'))
        fillers = self.fill('gpu-pt-2')
        self.assertEqual(4, len(fillers))
        self.assertIsNone(self.cloud.schedule(server, 'gpu-pt-2'))
        self.empty(fillers)
        self.cloud.disabled.add('gpu-pt-2')
        self.assertIsNone(self.cloud.schedule(server, 'gpu-pt-2'))

    def test_without_a_host_the_first_that_passes(self):
        server = self.gpu_server('a')
        # the vGPU host has no PCI device: gpu-pt-2
        self.assertEqual('gpu-pt-2', self.cloud.schedule(server))
        self.fill('gpu-pt-2')
        self.assertIsNone(self.cloud.schedule(server))

    def test_a_move_nova_cannot_schedule_is_rolled_back(self):
        server = self.gpu_server('a')
        self.fill('gpu-pt-2')
        step = plan_mod.cold_migrate(
            server['id'], 'a', 'gpu-pt-1', 'gpu-pt-2', [PCI],
            {'source': [p.uuid for p in self.cloud.tree(
                self.cloud.host_root('gpu-pt-1'))],
             'destination': [p.uuid for p in self.cloud.tree(
                 self.cloud.host_root('gpu-pt-2'))]}, 60)
        executor = journal.Executor(self.client)
        executor.poll_interval = 0
        error = self.assertRaises(errors.APIError, executor.run, step)
        self.assertIn('Nova left server', str(error))
        self.assertEqual(('gpu-pt-1', 'ACTIVE'), self.where(server))
        self.assert_gpu_on(server, 'gpu-pt-1')
        self.assertEqual(['error'], [m['status']
                                     for m in self.cloud.migrations])
        self.assertFalse(executor.holds(step))

    def test_a_destination_filled_after_the_plan_stops_the_drain(self):
        server = self.gpu_server('a')
        fillers = []

        def on_step(_index, step):
            # another server lands on the destination between the drain's
            # plan and its move
            if step.op == 'server.migrate' and not fillers:
                fillers.extend(self.fill('gpu-pt-2'))

        exc = self.assertRaises(journal.ApplyError, self.drain,
                                reason='fw', on_step=on_step)
        self.assertIn('Not done', str(exc))
        self.assertEqual(('gpu-pt-1', 'ACTIVE'), self.where(server))
        self.assert_gpu_on(server, 'gpu-pt-1')
        self.assertEqual('gpuclient: draining: fw', self.reason())
        # room again: the re-run moves it
        self.empty(fillers)
        self.drain(reason='fw')
        self.assertEqual(('gpu-pt-2', 'ACTIVE'), self.where(server))
        self.assert_gpu_on(server, 'gpu-pt-2')
        self.assertEqual('gpuclient: fw', self.reason())
