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

"""Nova's settings from nova.conf-style files on disk, read as Nova
reads them (the files of --nova-conf and --nova-conf-dir, or their
environment variables), parsed by ``gpuclient.rules.nova_conf.parse``
and made settings by ``gpuclient.rules.scheduler.conf``.
"""

from __future__ import annotations

import collections.abc
import os
import typing

from osc_lib import exceptions

from gpuclient.i18n import _
from gpuclient.rules import quota
from gpuclient.rules.nova_conf import parse
from gpuclient.rules.scheduler import conf as scheduler_conf

CONF_ENV = 'GPUCLIENT_NOVA_CONF'


CONF_DIR_ENV = 'GPUCLIENT_NOVA_CONF_DIR'


def _read_conf(path: str, what: str) -> str:
    try:
        with open(os.path.expanduser(path)) as conf:
            return conf.read()
    except OSError as exc:
        raise exceptions.CommandError(
            _('Cannot read the Nova settings %(what)s %(path)s (%(error)s): '
              'give a readable nova.conf-style file with --nova-conf or a '
              'directory of *.conf files with --nova-conf-dir.')
            % {'what': what, 'path': path,
               'error': exc.strerror or exc}) from exc


def read_settings(
    path: str | collections.abc.Sequence[str] | None = None,
    overrides: collections.abc.Mapping[str, str] | None = None,
    alias_maps: collections.abc.Mapping[str, str]
    | collections.abc.Iterable[str] = (),
    conf_dir: str | collections.abc.Sequence[str] | None = None,
) -> dict[str, typing.Any]:
    """Settings from nova.conf-style files, read as Nova reads them.

    PATH: one file or a list (--nova-conf, repeatable; default
    $GPUCLIENT_NOVA_CONF), like oslo.config's --config-file; CONF_DIR: one
    directory or a list (--nova-conf-dir; default
    $GPUCLIENT_NOVA_CONF_DIR) whose *.conf files are read after them,
    sorted, like --config-dir. Later files win; multi-valued options
    ([pci] alias) collect every file's values.
    """
    paths = [path] if isinstance(path, str) else list(path or ())
    dirs = [conf_dir] if isinstance(conf_dir, str) else list(conf_dir or ())
    if not paths and os.environ.get(CONF_ENV):
        paths = [os.environ[CONF_ENV]]
    if not dirs and os.environ.get(CONF_DIR_ENV):
        dirs = [os.environ[CONF_DIR_ENV]]
    files = [(p, _read_conf(p, _('file'))) for p in paths]
    for folder in dirs:
        try:
            names = os.listdir(os.path.expanduser(folder))
        except OSError as exc:
            raise exceptions.CommandError(
                _('Cannot read the Nova settings directory %(path)s '
                  '(%(error)s): give a directory of *.conf files with '
                  '--nova-conf-dir.')
                % {'path': folder, 'error': exc.strerror or exc}) from exc
        for name in parse.conf_dir_files(names):
            full = os.path.join(folder, name)
            if os.path.isfile(os.path.expanduser(full)):
                files.append((full, _read_conf(full, _('file'))))
    settings = scheduler_conf.load_settings(files, overrides, alias_maps)
    # [quota]: whether Nova enforces GPU quotas (gpu quota, gpu check)
    settings['quota'] = quota.conf_settings(parse.merge_ini(
        parse.parse_ini(text, source) for source, text in files)) if (
            files) else None
    settings['file'] = ', '.join(name for name, _text in files) or None
    return settings
