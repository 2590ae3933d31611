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

"""Pure: helpers of the host filters (``nova/scheduler/filters/utils.py``)."""

from collections.abc import Iterable
from collections.abc import Mapping
import typing


def _get(obj: object, key: str, default: typing.Any = None) -> typing.Any:
    if isinstance(obj, dict):
        return obj.get(key, default)
    return getattr(obj, key, default)


def host_metadata(aggregates: Iterable[Mapping[str, typing.Any] | object],
                  host: str) -> dict[str, set[str]]:
    """Nova's aggregate_metadata_get_by_host: {key: set of values}."""
    metadata: dict[str, set[str]] = {}
    for aggregate in aggregates:
        if host not in (_get(aggregate, 'hosts') or []):
            continue
        for key, value in (_get(aggregate, 'metadata') or {}).items():
            metadata.setdefault(key, set()).update(
                v.strip() for v in str(value).split(','))
    return metadata
