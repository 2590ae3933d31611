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

"""Pure: nova.conf's syntax, as oslo.config reads it.

``parse_ini`` reads one file's text with oslo.config's own parser
(``oslo_config.iniparser``), refusing what oslo.config refuses and naming
the file and the line, never the line's text; ``merge_ini`` lays several
files over each other as ``--config-file`` and ``--config-dir`` do, and
``conf_dir_files`` says which files a ``--config-dir`` reads. What the
options mean is not here: the scheduler's and the compute's options, as
Nova defines them, are ``gpuclient.rules.scheduler.conf``; the ``[quota]``
options, ``gpuclient.rules.quota``. No I/O: the ops layer reads the files.
"""

from __future__ import annotations

from collections.abc import Iterable
import re

from osc_lib import exceptions
from oslo_config import iniparser

from gpuclient.i18n import _

# nova.conf as parse_ini reads it: {section: {key: [values]}}
Ini = dict[str, dict[str, list[str]]]


def _conf_error(source: str | None, lineno: int,
                message: str) -> exceptions.CommandError:
    """The file and the line number, never the line's text: a nova.conf
    line may hold a password (a database connection URL)."""
    return exceptions.CommandError(
        _('%(source)s line %(lineno)d: %(problem)s. Nova would not start '
          'with this file either (oslo.config refuses it): fix the file or '
          'give the settings with --setting.')
        % {'source': source or _('Nova settings'), 'lineno': lineno,
           'problem': message})


class _IniReader(iniparser.BaseParser):
    """oslo.config's own ini parser (``oslo_config.iniparser``, what
    Nova's configuration is read with), collecting {section: {key:
    [values]}} and refusing what oslo.config refuses, naming SOURCE and
    the line number (never the line)."""

    def __init__(self, source):
        self.source = source
        self.found = {}
        self.section = None
        self.key_line = 0

    def _split_key_value(self, line):
        # the line a setting starts on: it is stored (assignment) only
        # once the next line, or the end, is read
        self.key_line = self.lineno
        return super()._split_key_value(line)

    def new_section(self, section):
        self.section = section if section == 'DEFAULT' else section.lower()
        self.found.setdefault(self.section, {})

    def assignment(self, key, value):
        if self.section is None:
            raise _conf_error(self.source, self.key_line,
                              _('a setting before any [section]'))
        self.found[self.section].setdefault(key, []).append('\n'.join(value))

    def _refuse(self, problem):
        raise _conf_error(self.source, self.lineno, problem)

    def error_invalid_assignment(self, line):
        self._refuse(_('no "=" or ":" in a setting'))

    def error_empty_key(self, line):
        self._refuse(_('empty key'))

    def error_unexpected_continuation(self, line):
        self._refuse(_('an indented line continues nothing'))

    def error_no_section_end_bracket(self, line):
        self._refuse(_('a section must end with ]'))

    def error_no_section_name(self, line):
        self._refuse(_('empty section name'))


def parse_ini(text: str | None, source: str | None = None) -> Ini:
    """{section: {key: [values]}} from nova.conf text, as oslo.config reads it.

    Read by oslo.config's parser (``oslo_config.iniparser.BaseParser``):
    ``#`` and ``;`` start a comment only in the first column; a line that
    starts with white space continues the value before it (joined with a
    newline) and a blank line ends it; ``key = value`` or ``key: value``
    (whichever sign comes first), white space around both stripped and
    one pair of matching quotes around the value removed; no inline
    comments. Section names are compared in lower case (``DEFAULT`` stays
    as it is), keys as written. A key may repeat (``[pci] alias`` does):
    every value is kept, in order. What oslo.config refuses is refused
    here too, naming SOURCE and the line.

    Not done (oslo.config does them when it reads an option, gpuclient
    knows no option types): ``$name`` substitution, deprecated option names
    and groups, and options given on Nova's command line.
    """
    reader = _IniReader(source)
    # lines as a file opened in text mode gives them (not splitlines(),
    # which also splits at form feeds and other separators)
    reader.parse(re.split(r'\r\n|\r|\n', text or ''))
    return reader.found


def merge_ini(parsed: Iterable[Ini]) -> Ini:
    """Several parsed files as one, as oslo.config reads them.

    PARSED is in the order the files are read (``--config-file`` options,
    then the ``--config-dir`` files): a key's values are those of every
    file, in that order, so a single-valued option takes the last one (the
    later file wins) and a multi-valued one (``[pci] alias``) all of them.
    """
    merged: Ini = {}
    for one in parsed:
        for section, keys in one.items():
            into = merged.setdefault(section, {})
            for key, values in keys.items():
                into.setdefault(key, []).extend(values)
    return merged


def conf_dir_files(names: Iterable[str]) -> list[str]:
    """The files oslo.config's ``--config-dir`` reads, in its order: the
    ``*.conf`` names (not hidden ones, as glob), sorted."""
    return sorted(name for name in names
                  if name.endswith('.conf') and not name.startswith('.'))
