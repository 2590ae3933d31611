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

"""The fault harness's double Ctrl-C ('sigint2',
gpuclient/tests/functional/faults.py): the second SIGINT is sent once the
journal's real handler has run for the first, seen by the warning it logs
(faults.SignalHandshake), never after a fixed gap."""

import logging
import os
import signal
import threading
from unittest import mock

import fixtures
import testtools

from gpuclient.ops import journal
from gpuclient.tests.functional import faults

# bounds only: nothing here asserts a duration
BOUND = 30.0


class _Injector:
    def __init__(self, handshake):
        self.handshake = handshake
        self.handshakes = []


class TestSignalHandshake(testtools.TestCase):
    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.FakeLogger(level=logging.WARNING))
        self.handshake = self.useFixture(faults.SignalHandshake())

    def test_counts_the_handlers_warning_only(self):
        log = logging.getLogger(journal.LOG.name)
        log.warning('Received %s: finishing the current step', 'SIGINT')
        log.warning('Received %s: finishing the current step', 'SIGHUP')
        log.warning('no signal')
        logging.getLogger('gpuclient.ops.pool_ops').warning(
            'Received %s', 'SIGINT')
        self.assertEqual(1, self.handshake.count())
        self.assertTrue(self.handshake.wait_beyond(0, 0))
        self.assertFalse(self.handshake.wait_beyond(1, 0))

    def test_a_quiet_journal_logger_still_makes_the_record(self):
        log = logging.getLogger(journal.LOG.name)
        self.addCleanup(log.setLevel, log.level)
        log.setLevel(logging.ERROR)
        handshake = faults.SignalHandshake()
        with handshake:
            log.warning('Received %s: finishing', 'SIGINT')
            self.assertEqual(1, handshake.count())
        self.assertEqual(logging.ERROR, log.level)

    def test_second_sigint_after_the_first_was_handled(self):
        """The harness's thread against the journal's own handler: the
        first SIGINT is deferred (its warning is the handshake), the
        second abandons the wait in the main thread."""
        server = mock.Mock(arrived=threading.Event())
        server.arrived.set()
        injector = _Injector(self.handshake)
        adapter = faults._FaultAdapter(injector, None)
        never = threading.Event()
        # the hung server's hang-up ends the main thread's wait
        server.close.side_effect = never.set
        thread = threading.Thread(target=adapter._ctrl_c_twice,
                                  args=(server,), daemon=True)
        with journal.deferred_signals() as received:
            thread.start()
            # the main thread waits as in a hung request; the first
            # signal's handler returns, the second raises Abandoned
            self.assertRaises(journal.Abandoned, never.wait, BOUND)
        thread.join(BOUND)
        self.assertEqual(([signal.SIGINT, signal.SIGINT], [True]),
                         (received, injector.handshakes))
        server.close.assert_called_once_with()

    def test_no_second_sigint_once_the_request_is_over(self):
        server = mock.Mock(arrived=threading.Event())
        injector = _Injector(self.handshake)
        adapter = faults._FaultAdapter(injector, None)
        with mock.patch.object(faults.signal, 'pthread_kill') as kill, \
                mock.patch.object(server.arrived, 'wait',
                                  return_value=False):
            adapter._ctrl_c_twice(server)
        kill.assert_not_called()
        self.assertEqual([], injector.handshakes)

    def test_a_missed_handshake_is_recorded(self):
        """No handler run (the record never comes): the wait is bounded,
        False is recorded for the test's one assertion, and the second
        signal still ends the hung request."""
        server = mock.Mock(arrived=threading.Event())
        server.arrived.set()
        injector = _Injector(self.handshake)
        adapter = faults._FaultAdapter(injector, None)
        with mock.patch.object(faults.signal, 'pthread_kill') as kill, \
                mock.patch.object(faults, 'HANDSHAKE_TIMEOUT', 0):
            adapter._ctrl_c_twice(server)
        self.assertEqual(2, kill.call_count)
        self.assertEqual([False], injector.handshakes)


class TestLineWatch(testtools.TestCase):
    """The handshake with a real process (test_hung): the line its
    journal handler prints on stderr, waited for, bounded."""

    def pipe(self):
        read_fd, write_fd = os.pipe()
        reader = os.fdopen(read_fd, 'r')
        writer = os.fdopen(write_fd, 'w', buffering=1)
        self.addCleanup(reader.close)
        self.addCleanup(lambda: writer.closed or writer.close())
        return reader, writer

    def test_waits_for_the_line(self):
        reader, writer = self.pipe()
        watch = faults.LineWatch(reader)
        writer.write('Creating pool p\n')
        self.assertFalse(watch.wait_for('Received SIGINT:', 0))
        threading.Thread(target=writer.write, args=(
            'Received SIGINT: finishing the current step\n',)).start()
        self.assertTrue(watch.wait_for('Received SIGINT:', BOUND))
        writer.close()
        watch.close(BOUND)
        self.assertEqual('Creating pool p\nReceived SIGINT: finishing the '
                         'current step\n', watch.text())

    def test_a_stream_at_its_end_answers_at_once(self):
        """The process exited without the line: False, without waiting
        out the bound."""
        reader, writer = self.pipe()
        watch = faults.LineWatch(reader)
        writer.write('Traceback\n')
        writer.close()
        waiter = threading.Thread(target=lambda: result.append(
            watch.wait_for('Received SIGINT:', None)))
        result = []
        waiter.start()
        waiter.join(BOUND)
        self.assertEqual([False], result)
