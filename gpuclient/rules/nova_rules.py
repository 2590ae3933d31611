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

"""Pure: Nova's and Placement's own input rules, checked before writing.

Written after Nova 34's API schemas (``nova/api/validation/
parameter_types.py``: ``metadata``, ``name``, ``az_name``,
``description``; ``schemas/aggregates.py``, ``flavors.py`` and
``flavors_extraspecs.py``) and Placement's trait schema:

* aggregate metadata keys and flavor extra-spec keys: 1 to 255 of
  ``a-z A-Z 0-9 - _ : .`` and space; values at most 255 characters;
* aggregate and flavor names: 1 to 255 printable characters, not starting
  or ending with whitespace; availability zones the same without ``:``;
  flavor descriptions at most 255 printable characters;
* traits: ``CUSTOM_`` then ``A-Z 0-9 _`` (or a standard name), at most 255.

``check_plan`` looks at every step of a plan, so a key gpuclient derives
(``trait:CUSTOM_GPU_POOL_<NAME>``, ``trait64:<type trait>``) is checked
as it will be written, not only the operator's input; the commands call
it before the first write (and for ``--dry-run``).
"""

from collections.abc import Iterable
from collections.abc import Mapping
import re
import typing
import unicodedata

from osc_lib import exceptions

from gpuclient.i18n import _
from gpuclient.rules import placement_names as names

# the scope of a flavor extra spec that Nova's
# AggregateInstanceExtraSpecsFilter matches against aggregate metadata
# (``aggregate_instance_extra_specs:<key>``): here, a leaf of rules/, so
# that the spec rules (specs.py) and the scheduler's filter share it
# without the spec rules importing the scheduler
AGGREGATE_SCOPE = 'aggregate_instance_extra_specs'

MAX_LENGTH = 255
_KEY_RE = re.compile(r'[a-zA-Z0-9\-_:. ]{1,%d}' % MAX_LENGTH)
KEY_CHARACTERS = _('letters, digits, spaces and "-", "_", ":", ".", 1 to '
                   '255 of them')

# what a check gives back: what it was given
_T = typing.TypeVar('_T')
_Steps = typing.TypeVar('_Steps', bound=Iterable[typing.Any])


def _error(message: str, **kwargs: object) -> exceptions.CommandError:
    return exceptions.CommandError(message % kwargs if kwargs else message)


def _short(text: object, length: int = 60) -> str:
    text = str(text)
    return text if len(text) <= length else text[:length] + '...'


def is_key(key: object) -> bool:
    """Would Nova take ``key`` as aggregate metadata or extra-spec key?"""
    return isinstance(key, str) and bool(_KEY_RE.fullmatch(key))


def check_key(key: _T, what: str) -> _T:
    """Refuse a metadata/extra-spec key Nova's schema refuses.

    ``what`` says where the key comes from (``--property``, ``aggregate
    metadata key``), for the message.
    """
    if not is_key(key):
        raise _error(
            _('Invalid %(what)s %(key)r: Nova takes only %(chars)s in a '
              'key (this one: %(length)d characters). Choose another key.'),
            what=what, key=_short(key), chars=KEY_CHARACTERS,
            length=len(str(key)))
    return key


def check_value(key: object, value: _T, what: str) -> _T:
    """Refuse a metadata/extra-spec value longer than Nova takes."""
    if value is not None and len(str(value)) > MAX_LENGTH:
        raise _error(
            _('Invalid %(what)s %(key)s: its value is %(length)d characters '
              'long and Nova takes at most %(max)d. Give a shorter value.'),
            what=what, key=_short(key), length=len(str(value)),
            max=MAX_LENGTH)
    return value


def check_pair(key: object, value: object, what: str) -> None:
    check_key(key, what)
    check_value(key, value, what)


def _printable(char: str) -> bool:
    # parameter_types._is_printable over the range Nova's regex builds
    # (code points below 0xFFFF)
    if ord(char) >= 0xFFFF:
        return False
    category = unicodedata.category(char)
    return not category.startswith('C') and (
        not category.startswith('Z') or category == 'Zs')


def check_name(name: _T, what: str, colon: bool = True) -> _T:
    """Refuse a name Nova's ``name`` (``az_name`` without ``colon``)
    schema refuses: 1 to 255 printable characters, no leading or
    trailing whitespace (and no ``:`` for a zone)."""
    text = name if isinstance(name, str) else ''
    if not text or len(text) > MAX_LENGTH:
        raise _error(
            _('Invalid %(what)s %(name)r: Nova takes 1 to %(max)d '
              'characters (%(length)d given).'),
            what=what, name=_short(text), max=MAX_LENGTH, length=len(text))
    bad = [c for c in text if not _printable(c) or (not colon and c == ':')]
    if bad or text != text.strip():
        raise _error(
            _('Invalid %(what)s %(name)r: Nova takes printable characters'
              '%(colon)s only, not starting or ending with a space.'),
            what=what, name=_short(text),
            colon='' if colon else _(' except ":"'))
    return name


def check_description(description: str | None,
                      what: str | None = None) -> str | None:
    if description is None:
        return None
    what = what or _('flavor description')
    if len(description) > MAX_LENGTH or not all(
            _printable(c) for c in description):
        raise _error(
            _('Invalid %(what)s: Nova takes at most %(max)d printable '
              'characters (%(length)d given).'),
            what=what, max=MAX_LENGTH, length=len(description))
    return description


def check_trait(trait: str) -> str:
    if not names.is_trait_name(trait):
        raise _error(
            _('Invalid trait %(trait)r (%(length)d characters): Placement '
              'takes CUSTOM_ followed by A-Z, 0-9 and _, at most %(max)d '
              'characters. Choose a shorter name.'),
            trait=_short(trait), length=len(str(trait)), max=MAX_LENGTH)
    return trait


def check_zone(zone: str) -> str:
    """Refuse an availability zone Nova's ``az_name`` schema refuses."""
    return check_name(zone, _('availability zone'), colon=False)


def check_metadata(metadata: Mapping[str, typing.Any] | None,
                   what: str) -> None:
    """Refuse a key or value of METADATA ({key: value}: aggregate metadata,
    flavor extra specs) that Nova's schema refuses."""
    for key, value in (metadata or {}).items():
        check_pair(key, value, what)


def check_plan(plan: _Steps) -> _Steps:
    """Refuse, before the first write, a plan that Nova or Placement would
    refuse part-way: every step and every undo step is checked, each by
    its declaration (``check_input``, ``gpuclient.rules.operations``)."""
    for step in plan:
        step.operation.check_input()
        if step.inverse is not None:
            step.inverse.operation.check_input()
    return plan
