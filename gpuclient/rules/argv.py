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

"""Pure: a command line as a re-run hint shows it, less its secrets.

A failed write names the command that finishes it: the operator's own
``openstack ...`` arguments (``gpuclient.ops.invocation`` reads them,
with OSC's global parser) or one a planner builds (``pool_plan``). Either
way the options carrying a secret go, with their values, and so does the
userinfo of every URL (``redact``).
"""

from __future__ import annotations

from collections.abc import Collection
from collections.abc import Sequence
import re
import typing

if typing.TYPE_CHECKING:
    import argparse

# Without the parser (a hint gpuclient builds from its own arguments):
# options spelt with one of these words are left out. With OSC's parser,
# the destination an option resolves to decides (see command_line).
_SECRET_WORDS = ('password', 'token', 'secret', 'passcode')
# scheme://[userinfo@]authority: the authority ends at the first / ? #
# (RFC 3986), and its userinfo at its last @ (as urllib and requests
# split it, so what they would send as credentials is what is dropped)
_URL = re.compile(r'([A-Za-z][A-Za-z0-9+.-]*://)([^/?#\s]*)')


def strip_userinfo(text: str) -> str:
    """TEXT with the ``user:password@`` of every URL in it removed."""
    def drop(match: re.Match[str]) -> str:
        authority = match.group(2).rpartition('@')[2]
        return match.group(1) + authority
    return _URL.sub(drop, text)


def _resolve(parser: argparse.ArgumentParser, word: str
             ) -> tuple[list[argparse.Action], str | None]:
    """(actions, value given in WORD) of the options WORD stands for in
    PARSER, as argparse resolves it: the exact option string, ``--opt=v``,
    a unique prefix of a long option when the parser allows abbreviations
    (every candidate when the prefix is ambiguous: argparse then refuses
    the command, but a secret stays a secret), or a short option with its
    value attached (``-pVALUE``). ([], None) for anything else."""
    table = parser._option_string_actions  # noqa: SLF001 - argparse's own
    if word in table:
        return [table[word]], None
    name, equals, value = word.partition('=')
    if equals and name in table:
        return [table[name]], value
    if name.startswith('--'):
        if not getattr(parser, 'allow_abbrev', True):
            return [], None
        found = [action for option, action in table.items()
                 if option.startswith(name)]
        return found, (value if equals else None)
    if len(word) > 2 and word[:2] in table:
        return [table[word[:2]]], word[2:]
    return [], None


def _values_taken(action: argparse.Action, following: Sequence[str]) -> int:
    """How many of the words FOLLOWING an option ACTION takes as its
    values (the option given without ``=``)."""
    nargs = action.nargs
    if isinstance(nargs, int):
        return nargs
    if nargs is None:
        return 1
    taken = 0
    for word in following:
        if word.startswith('-'):
            break
        taken += 1
        if nargs == '?':
            break
    return taken


def redact(argv: Sequence[str],
           parser: argparse.ArgumentParser | None = None,
           secret_dests: Collection[str] = ()) -> list[str]:
    """ARGV without the options that carry a secret and their values, and
    with the userinfo of every URL removed.

    With PARSER (the argparse parser that read ARGV, OSC's global one), an
    option is secret when the destination it resolves to (prefixes and
    ``--opt=value`` as argparse resolves them) is one of SECRET_DESTS or
    ends with a secret word (``os_foo_password``); its values go with it.
    Without a parser, options spelt with a secret word are left out.
    Words after ``--`` are values.
    """
    kept, skip, ended = [], 0, False
    for index, arg in enumerate(argv):
        if skip:
            skip -= 1
            continue
        if ended or not arg.startswith('-') or arg == '-':
            kept.append(strip_userinfo(arg))
            continue
        if arg == '--':
            ended = True
            kept.append(arg)
            continue
        if parser is not None:
            actions, value = _resolve(parser, arg)
            secret = [a for a in actions
                      if _secret_dest(a.dest, secret_dests)]
            if secret:
                skip = (0 if value is not None
                        else _values_taken(secret[0], argv[index + 1:]))
                continue
        else:
            name = arg.split('=', 1)[0]
            if name.startswith('--') and any(w in name
                                             for w in _SECRET_WORDS):
                skip = 0 if '=' in arg else 1
                continue
        kept.append(strip_userinfo(arg))
    return kept


def _secret_dest(dest: str, secret_dests: Collection[str]) -> bool:
    return dest in secret_dests or (
        isinstance(dest, str) and dest.rsplit('_', 1)[-1] in _SECRET_WORDS)


def command_line(argv: Sequence[str],
                 parser: argparse.ArgumentParser | None = None,
                 secret_dests: Collection[str] = ()) -> str | None:
    """The command a re-run hint names, from the CLI's argv (without the
    program), quoted for a shell: '"openstack gpu pool create ..."' with
    the operator's own arguments, less the secrets (``redact``: options
    carrying a secret, by what PARSER resolves them to, and the userinfo
    of URLs) and --dry-run. None when nothing is left.
    """
    import shlex  # noqa: PLC0415 - only when a write fails

    kept = [arg for arg in redact(argv, parser, secret_dests)
            if arg != '--dry-run']
    if not kept:
        return None
    return '"openstack %s"' % shlex.join(kept)
