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

"""The re-run hint of a failed write leaves secrets out as OSC's own
parser read them (argv.redact, invocation.invoked_command): abbreviations,
``--opt value`` and ``--opt=value``, URLs with ``user:password@``."""

import argparse
import shlex

import testtools

from gpuclient.ops import invocation
from gpuclient.rules import argv as argv_rules

TAIL = ['gpu', 'quota', 'set', '--project', 'p', '--resource-class', 'VGPU',
        '--gpus', '2']
HINT_TAIL = 'gpu quota set --project p --resource-class VGPU --gpus 2'


class TestInvokedCommand(testtools.TestCase):
    """invocation.invoked_command on argv, with OSC's real global parser."""

    # (case, global options given, global options the hint keeps)
    CASES = [
        ('exact, separate value', ['--os-password', 'S1'], []),
        ('exact, = value', ['--os-password=S1'], []),
        ('abbreviated, = value', ['--os-passw=S1'], []),
        ('abbreviated, separate value', ['--os-passw', 'S1'], []),
        ('shortest unique prefix', ['--os-passwo', 'S1'], []),
        ('ambiguous prefix (argparse refuses; still secret)',
         ['--os-pass', 'S1'], []),
        ('token abbreviated', ['--os-tok', 'S1'], []),
        ('passcode', ['--os-passc=S1'], []),
        ('application credential secret abbreviated',
         ['--os-application-credential-sec', 'S1'], []),
        ('client secret', ['--os-client-secret', 'S1'], []),
        ('OIDC access token', ['--os-access-token=S1'], []),
        ('OIDC code', ['--os-code', 'S1'], []),
        ('after the command word too', [], []),
        ('auth URL with userinfo',
         ['--os-auth-url', 'https://u:S1@keystone:5000/v3'],
         ['--os-auth-url', 'https://keystone:5000/v3']),
        ('auth URL with userinfo, = and abbreviated',
         ['--os-auth-u=http://admin:S1@10.0.0.1/identity'],
         ['--os-auth-u=http://10.0.0.1/identity']),
        ('userinfo with @ in the password',
         ['--os-endpoint', 'https://u:S1@x@host/v2'],
         ['--os-endpoint', 'https://host/v2']),
        ('non-secret option whose value has the word token',
         ['--os-auth-type', 'v3token', '--os-cloud', 'token-cloud'],
         ['--os-auth-type', 'v3token', '--os-cloud', 'token-cloud']),
        ('non-secret option named with token (not a secret destination)',
         ['--os-access-token-type', 'access_token'],
         ['--os-access-token-type', 'access_token']),
        ('plain URL kept', ['--os-auth-url', 'https://keystone/v3'],
         ['--os-auth-url', 'https://keystone/v3']),
    ]

    def test_secrets_left_out(self):
        for name, given, kept in self.CASES:
            argv = ['/usr/bin/openstack', '--os-cloud', 'c', *given, *TAIL]
            if name == 'after the command word too':
                argv = argv + ['--os-passw', 'S1', '--os-token=S1']
            hint = invocation.invoked_command(argv)
            self.assertNotIn('S1', hint, name)
            expected = '"openstack %s"' % shlex.join(
                ['--os-cloud', 'c', *kept, *TAIL])
            self.assertEqual(expected, hint, name)
            self.assertIn(HINT_TAIL, hint, name)

    def test_values_of_other_options_kept(self):
        """Command options and values that merely contain a secret word
        are the operator's command: kept."""
        argv = ['/usr/bin/openstack', '--os-cloud', 'c', 'gpu', 'pool',
                'set', '--property', 'password=token', '--property',
                'note=--os-password is not here', 'my-token-pool']
        self.assertEqual(
            '"openstack --os-cloud c gpu pool set --property password=token '
            "--property 'note=--os-password is not here' my-token-pool\"",
            invocation.invoked_command(argv))

    def test_secret_destinations_from_keystoneauth(self):
        dests = invocation.secret_dests()
        for dest in ('password', 'token', 'passcode',
                     'application_credential_secret', 'profile'):
            self.assertIn(dest, dests)
        for dest in ('username', 'auth_url', 'cloud', 'access_token_type'):
            self.assertNotIn(dest, dests)
        parser = invocation.global_parser()
        self.assertTrue(parser.allow_abbrev)
        self.assertEqual('password',
                         parser._option_string_actions['--os-password'].dest)


class TestRedact(testtools.TestCase):
    """argv.redact with a small parser: the rules, not OSC's options."""

    def parser(self, allow_abbrev=True):
        parser = argparse.ArgumentParser(add_help=False,
                                         allow_abbrev=allow_abbrev)
        parser.add_argument('--secret-key', dest='hmac')
        parser.add_argument('--pair', dest='pair', nargs=2)
        parser.add_argument('--foo-password', dest='foo_password')
        parser.add_argument('-k', dest='hmac2')
        parser.add_argument('--flag', action='store_true')
        return parser

    def test_rules(self):
        secret = {'hmac', 'pair', 'hmac2'}
        cases = [
            (['--secret-key', 'S', 'x'], ['x']),
            (['--secret', 'S', 'x'], ['x']),
            (['--secret=S', 'x'], ['x']),
            (['--pair', 'S', 'S', 'x'], ['x']),
            (['--foo-pass', 'S', 'x'], ['x']),  # dest ends with password
            (['-k', 'S', 'x'], ['x']),
            (['-kS', 'x'], ['x']),
            (['--flag', 'x'], ['--flag', 'x']),
            (['--', '--secret-key', 'x'], ['--', '--secret-key', 'x']),
            (['x', 'ftp://u:S@h/p'], ['x', 'ftp://h/p']),
            (['--other=https://S@h'], ['--other=https://h']),
            (['see https://h/p?u=a@b'], ['see https://h/p?u=a@b']),
        ]
        for argv, kept in cases:
            self.assertEqual(
                kept, argv_rules.redact(argv, self.parser(), secret), argv)

    def test_no_abbreviations_when_the_parser_allows_none(self):
        self.assertEqual(
            ['--secret', 'S'],
            argv_rules.redact(['--secret', 'S'], self.parser(False), {'hmac'}))

    def test_without_a_parser_by_spelling(self):
        self.assertEqual(
            ['gpu', 'pool', 'create', '--host', 'h', 'p'],
            argv_rules.redact(['--os-password', 'S', '--os-token=S', 'gpu',
                         'pool', 'create', '--host', 'h', 'p'], None))
        self.assertEqual(['--os-auth-url', 'https://h/v3'],
                         argv_rules.redact(['--os-auth-url', 'https://u:S@h/v3']))
