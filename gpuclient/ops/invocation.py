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

"""The command this process runs, as a re-run hint names it.

Only when a write fails: the process's own ``openstack ...`` arguments,
less what OSC's global parser reads as a secret (``rules.argv.redact``).
The parser is built as the ``openstack`` shell builds it; loading OSC's
shell here, not in the plugin, keeps the journal off the OSC entry point.
"""

from __future__ import annotations

import collections.abc
import os
import sys
import typing

from gpuclient.rules import argv as argv_mod

if typing.TYPE_CHECKING:
    import argparse


def global_parser() -> argparse.ArgumentParser | None:
    """OSC's global option parser, built as the ``openstack`` shell builds
    the one that read this process's arguments (osc-lib's options, every
    plugin's, keystoneauth's --os-<auth option>; abbreviations allowed).
    None when OSC's shell cannot be loaded. Only for a failed write's
    re-run hint: cheap once OSC is loaded."""
    try:
        from openstackclient import shell
    except ImportError:  # pragma: no cover - gpuclient requires OSC
        return None
    return shell.OpenStackShell().build_option_parser('', '')


def secret_dests() -> frozenset[str]:
    """The destinations of OSC's global options whose value is a secret:
    keystoneauth's auth plugin options marked secret (password, token,
    passcode, application_credential_secret, ...), under the destination
    osc-lib gives them, and osprofiler's HMAC key (--os-profile)."""
    from keystoneauth1.loading import base
    from osc_lib.api import auth

    found = {'profile'}
    for name in auth.get_plugin_list():
        for option in base.get_plugin_options(name):
            if option.secret:
                # osc-lib: --os-<name with dashes>, dest with underscores
                found.add(option.name.lower().replace('-', '_'))
    return frozenset(found)


def invoked_command(
        argv: collections.abc.Sequence[str] | None = None) -> str | None:
    """The exact command to re-run: this process's own ``openstack ...``
    arguments when it is the OSC executable (every write command, pool,
    flavor, image and quota alike), else None (library use: the plan's
    own hint is used). Secrets are left out as OSC's parser read them:
    an abbreviated --os-passw is the password (``argv.redact``)."""
    argv = sys.argv if argv is None else argv
    if not argv or os.path.basename(argv[0]) != 'openstack':
        return None
    return argv_mod.command_line(argv[1:], global_parser(), secret_dests())
