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

"""Pure: what an existing nova.conf lacks or contradicts
(``gpu config show --diff``).

``diff`` compares the ``Config`` the pools need (``render.build``) with
the files each service reads, parsed (``parse.parse_ini`` and
``merge_ini``; the ops layer reads them), and ``render_diff`` writes the
findings as ``+``/``-`` lines under each service's or host's label.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
import json
import typing

from gpuclient.i18n import _
from gpuclient.rules.nova_conf import render

if typing.TYPE_CHECKING:
    from gpuclient.rules.nova_conf import parse

MISSING = 'missing'
DIFFERS = 'differs'


def _json_or_text(text):
    try:
        return json.loads(text)
    except ValueError:
        return text


def _items(text):
    return [v.strip() for v in str(text).split(',') if v.strip()]


def _bool(text):
    return str(text).strip().lower() in ('1', 't', 'true', 'on', 'y', 'yes')


def _compare(section, key, want, have):
    """None when ``have`` (a list of values, as parse_ini) satisfies
    ``want``; else (kind, text of what is there)."""
    if not have:
        return MISSING, None
    if (section, key) in render.MULTI_KEYS:
        present = [_json_or_text(v) for v in have]
        lacking = [w for w in want if _json_or_text(w) not in present]
        if not lacking:
            return None
        names = {(_json_or_text(w) or {}).get('name') for w in lacking
                 if isinstance(_json_or_text(w), dict)} - {None}
        clash = [v for v in have if isinstance(_json_or_text(v), dict)
                 and _json_or_text(v).get('name') in names]
        return (DIFFERS if clash else MISSING), '; '.join(clash) or None
    last = have[-1]
    if (section, key) in render.LIST_KEYS:
        if set(_items(want)) <= set(_items(last)):
            return None
        return DIFFERS, last
    if (section, key) in render.BOOL_KEYS:
        return None if _bool(last) == _bool(want) else (DIFFERS, last)
    if key == 'device_addresses':
        return None if set(_items(last)) == set(_items(want)) else (
            DIFFERS, last)
    return None if last.strip() == want else (DIFFERS, last)


def diff(
        config: render.Config, existing: Mapping[render.Target, parse.Ini]
) -> list[dict[str, typing.Any]]:
    """What existing configurations lack or contradict.

    ``existing``: {target: parsed ini} (``parse.parse_ini`` /
    ``merge_ini`` of what that service reads), for the targets to check.
    Compute hosts are not compared on the scheduler's sections
    (``render.CONTROLLER_SECTIONS``). Returns [{target, section, key, kind,
    want, have}], kind MISSING or
    DIFFERS; list options are satisfied by a superset (other filters may
    be enabled), multi-valued ones when every wanted value is there.
    """
    found = []
    for target in sorted(existing, key=render.target_order):
        have_ini = existing[target]
        for section, keys in sorted(config.effective(target).items()):
            if (isinstance(target, tuple)
                    and section in render.CONTROLLER_SECTIONS):
                continue
            for key in sorted(keys):
                want = keys[key]
                have = (have_ini.get(section) or {}).get(key) or []
                result = _compare(section, key, want, have)
                if result is None:
                    continue
                wants = want if isinstance(want, list) else [want]
                if (section, key) in render.MULTI_KEYS:
                    present = [_json_or_text(v) for v in have]
                    wants = [w for w in wants
                             if _json_or_text(w) not in present]
                found.append({'target': target, 'section': section,
                              'key': key, 'kind': result[0],
                              'want': wants, 'have': result[1]})
    return found


def render_diff(
        findings: Iterable[Mapping[str, typing.Any]],
        where: Mapping[render.Target, Sequence[str]] | None = None) -> str:
    """The findings as text (one line per value; ``where`` maps a target
    to the files read for it)."""
    if not findings:
        return _('# no differences: the configuration has every setting '
                 'the pools need\n')
    lines: list[str]
    lines, last = [], None
    for item in findings:
        if item['target'] != last:
            last = item['target']
            if lines:
                lines.append('')
            label = render.target_label(last)
            if where and where.get(last):
                label += ' (%s)' % ', '.join(where[last])
            lines += render.comment_lines(label)
        for want in item['want']:
            if item['kind'] == MISSING:
                lines.append('+ [%s] %s = %s' % (item['section'],
                                                  item['key'], want))
            else:
                lines.append('- [%s] %s = %s' % (item['section'],
                                                  item['key'], item['have']))
                lines.append('+ [%s] %s = %s' % (item['section'],
                                                  item['key'], want))
    return '\n'.join(lines) + '\n'
