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

"""Pure: Nova's prefilters (``nova/scheduler/request_filter.py``).

Before asking Placement, Nova's scheduler runs every function of
``request_filter.ALL_REQUEST_FILTERS``, in order, on the RequestSpec
(``process_reqspec``). Each one gpuclient models is a function of the same
name here, in ``REQUEST_FILTERS``, in Nova's order; those not modelled,
and why, are in ``NOT_MODELLED``.
"""

from __future__ import annotations

from collections.abc import Container
from collections.abc import Iterable
from collections.abc import Mapping
import typing

from gpuclient.i18n import _
from gpuclient.rules.scheduler import conf
from gpuclient.rules.scheduler import exception
from gpuclient.rules.scheduler import hardware

if typing.TYPE_CHECKING:
    from gpuclient.rules.scheduler import request_spec

OWNER_NOVA = 'OWNER_NOVA'
STATUS_DISABLED = 'COMPUTE_STATUS_DISABLED'
TENANT_KEY = 'filter_tenant_id'
AZ_KEY = 'availability_zone'


# image property -> trait prefix (request_filter.transform_image_metadata)
_IMAGE_PREFILTER = (
    ('hw_cdrom_bus', 'COMPUTE_STORAGE_BUS'),
    ('hw_disk_bus', 'COMPUTE_STORAGE_BUS'),
    ('hw_video_model', 'COMPUTE_GRAPHICS_MODEL'),
    ('hw_vif_model', 'COMPUTE_NET_VIF_MODEL'),
    ('hw_architecture', 'HW_ARCH'),
    ('hw_emulation_architecture', 'COMPUTE_ARCH'),
    ('hw_viommu_model', 'COMPUTE_VIOMMU'),
)


def _agg(aggregate: Mapping[str, typing.Any] | object, key: str,
         default: typing.Any = None) -> typing.Any:
    if isinstance(aggregate, dict):
        return aggregate.get(key, default)
    return getattr(aggregate, key, default)


def _metadata(aggregate: Mapping[str, typing.Any] | object) -> dict[str, str]:
    return dict(_agg(aggregate, 'metadata') or {})


def isolated_aggregates(
        aggregates: Iterable[Mapping[str, typing.Any] | object],
        required_traits: Container[str]) -> list[dict[str, typing.Any]]:
    """request_filter.isolate_aggregates: aggregates that require a trait
    the request does not ask for (the ``trait:X=required`` metadata)."""
    found = []
    for aggregate in aggregates:
        missing = sorted(
            key[len('trait:'):] for key, value in _metadata(aggregate).items()
            if key.startswith('trait:') and value == 'required'
            and key[len('trait:'):] not in required_traits)
        if missing:
            found.append({'aggregate': _agg(aggregate, 'name'),
                          'uuid': _agg(aggregate, 'uuid'),
                          'traits': missing,
                          'hosts': sorted(_agg(aggregate, 'hosts') or [])})
    return found


def tenant_aggregates(
        aggregates: Iterable[Mapping[str, typing.Any] | object],
        project_id: str) -> list[Mapping[str, typing.Any] | object]:
    """request_filter.require_tenant_aggregate's aggregates."""
    found = []
    for aggregate in aggregates:
        metadata = _metadata(aggregate)
        if project_id not in metadata.values():
            continue
        if any(key.startswith(TENANT_KEY) for key in metadata):
            found.append(aggregate)
    return found


def zone_aggregates(
        aggregates: Iterable[Mapping[str, typing.Any] | object],
        zone: str) -> list[Mapping[str, typing.Any] | object]:
    return [a for a in aggregates
            if _metadata(a).get(AZ_KEY) == zone
            or _agg(a, 'availability_zone') == zone]


def _aggregate_info(
        aggregate: Mapping[str, typing.Any] | object) -> dict[str, typing.Any]:
    return {'aggregate': _agg(aggregate, 'name'),
            'uuid': _agg(aggregate, 'uuid'),
            'hosts': sorted(_agg(aggregate, 'hosts') or [])}


# -- prefilters (nova/scheduler/request_filter.py) ---------------------------
#
# Before asking Placement, Nova's scheduler runs every function of
# request_filter.ALL_REQUEST_FILTERS, in order, on the RequestSpec
# (process_reqspec). Here each one gpuclient models is a function of the
# same name taking CTX, the plain inputs (prefilter_context), and SPEC,
# the request being built (resource_request._Builder); like Nova's, it
# returns True when it applied. REQUEST_FILTERS lists them in Nova's
# order, NOT_MODELLED names the others and why.

def prefilter_context(
        flavor: Mapping[str, typing.Any] | None = None,
        image: Mapping[str, typing.Any] | None = None,
        settings: Mapping[str, typing.Any] | None = None,
        aggregates: Iterable[Mapping[str, typing.Any] | object] | None = (),
        project_id: str | None = None, zone: str | None = None,
        boot_from_volume: bool = False) -> dict[str, typing.Any]:
    """The plain inputs of the prefilters, as one dict.

    ``flavor`` as the compute API shows it (``specs`` are its
    extra_specs), ``image`` as Glance shows it (properties at top level),
    ``settings`` as load_settings returns them (or a plain dict: a missing
    setting is off), ``aggregates`` every host aggregate, ``project_id``
    and ``zone`` those of the server.
    """
    flavor = dict(flavor or {})
    return {'flavor': flavor,
            'specs': dict(flavor.get('extra_specs') or {}),
            'image': hardware.image_props(image),
            'settings': settings if settings is not None else {},
            'aggregates': list(aggregates or ()),
            'project_id': project_id,
            'zone': zone,
            'boot_from_volume': bool(boot_from_volume)}


def _require_aggregates(spec: request_spec.RequestBuilder,
                        found: Iterable[Mapping[str, typing.Any]]) -> None:
    """Destination.require_aggregates: one more member_of (AND)."""
    spec.group('')['member_of'].append(sorted(a['uuid'] for a in found))


def require_tenant_aggregate(ctx: Mapping[str, typing.Any],
                             spec: request_spec.RequestBuilder) -> bool:
    """The project's aggregates (``filter_tenant_id*`` metadata) when
    [scheduler] limit_tenants_to_placement_aggregate is on; none, with
    placement_aggregate_required_for_tenants on, fails the request."""
    settings, project_id = ctx['settings'], ctx['project_id']
    if not (settings.get('limit_tenants_to_placement_aggregate')
            and project_id):
        return False
    spec.tenant = [_aggregate_info(a)
                   for a in tenant_aggregates(ctx['aggregates'], project_id)]
    if spec.tenant:
        _require_aggregates(spec, spec.tenant)
    elif settings.get('placement_aggregate_required_for_tenants'):
        spec.failures.append(exception.error(
            _('Project %s is in no aggregate and [scheduler] '
              'placement_aggregate_required_for_tenants is on: Nova '
              'answers "No hosts available for tenant".') % project_id))
    return True


def map_az_to_placement_aggregate(ctx: Mapping[str, typing.Any],
                                  spec: request_spec.RequestBuilder) -> bool:
    """The aggregates of the requested availability zone."""
    zone = ctx['zone']
    if not zone:
        return False
    spec.zoned = [_aggregate_info(a)
                  for a in zone_aggregates(ctx['aggregates'], zone)]
    if spec.zoned:
        _require_aggregates(spec, spec.zoned)
    return True


def require_image_type_support(ctx: Mapping[str, typing.Any],
                               spec: request_spec.RequestBuilder) -> bool:
    """COMPUTE_IMAGE_TYPE_<disk_format> on the root, with [scheduler]
    query_placement_for_image_type_support on, unless booting from
    volume."""
    disk_format = ctx['image'].get('disk_format')
    if not (ctx['settings'].get('query_placement_for_image_type_support')
            and not ctx['boot_from_volume'] and disk_format):
        return False
    spec.root_required.add(
        'COMPUTE_IMAGE_TYPE_%s' % str(disk_format).upper())
    return True


def compute_status_filter(ctx: Mapping[str, typing.Any],
                          spec: request_spec.RequestBuilder) -> bool:
    """Never a disabled compute: !COMPUTE_STATUS_DISABLED on the root."""
    spec.root_forbidden.add(STATUS_DISABLED)
    return True


def isolate_aggregates(ctx: Mapping[str, typing.Any],
                       spec: request_spec.RequestBuilder) -> bool:
    """Not in the aggregates requiring a trait the request does not ask
    for, with [scheduler] enable_isolated_aggregate_filtering on."""
    if not ctx['settings'].get('enable_isolated_aggregate_filtering'):
        return False
    required = set()
    for group in spec.groups.values():
        required |= group['required']
    spec.isolated = isolated_aggregates(ctx['aggregates'], required)
    if spec.isolated:
        spec.group('')['forbidden_aggregates'] |= {
            a['uuid'] for a in spec.isolated}
    return True


def transform_image_metadata(ctx: Mapping[str, typing.Any],
                             spec: request_spec.RequestBuilder) -> bool:
    """Image properties as root traits (_IMAGE_PREFILTER), with
    [scheduler] image_metadata_prefilter on."""
    if not ctx['settings'].get('image_metadata_prefilter'):
        return False
    props = ctx['image']
    for key, prefix in _IMAGE_PREFILTER:
        if props.get(key):
            value = str(props[key]).replace('-', '_').upper()
            spec.root_required.add('%s_%s' % (prefix, value))
    return True


def accelerators_filter(ctx: Mapping[str, typing.Any],
                        spec: request_spec.RequestBuilder) -> bool:
    """COMPUTE_ACCELERATORS for a flavor with a Cyborg device profile."""
    profile = ctx['specs'].get('accel:device_profile')
    if profile:
        spec.root_required.add('COMPUTE_ACCELERATORS')
        spec.not_covered.append(
            _('accel:device_profile=%s: the request groups of a Cyborg '
              'device profile are not translated.') % profile)
    return True


def packed_virtqueue_filter(ctx: Mapping[str, typing.Any],
                            spec: request_spec.RequestBuilder) -> bool:
    """COMPUTE_NET_VIRTIO_PACKED for hw:virtio_packed_ring (the flavor's
    value, else the image's)."""
    flavor_packed, image_packed = hardware.pair(ctx['specs'], ctx['image'],
                                                'virtio_packed_ring')
    if (flavor_packed is not None and conf.is_true(flavor_packed)) or (
            flavor_packed is None and image_packed is not None
            and conf.is_true(image_packed)):
        spec.root_required.add('COMPUTE_NET_VIRTIO_PACKED')
    return True


def ephemeral_encryption_filter(ctx: Mapping[str, typing.Any],
                                spec: request_spec.RequestBuilder) -> bool:
    """COMPUTE_EPHEMERAL_ENCRYPTION (and _<format>) for an encrypted
    ephemeral disk asked for by the flavor or the image."""
    specs, image = ctx['specs'], ctx['image']
    flavor_eph, image_eph = hardware.pair(specs, image, 'ephemeral_encryption')
    if not ((flavor_eph is not None and conf.is_true(flavor_eph)) or (
            image_eph is not None and conf.is_true(image_eph))):
        return False
    spec.root_required.add('COMPUTE_EPHEMERAL_ENCRYPTION')
    eph_format = hardware.unique(specs, image, 'ephemeral_encryption_format')
    if eph_format:
        spec.root_required.add(
            'COMPUTE_EPHEMERAL_ENCRYPTION_%s' % eph_format.upper())
    return True


def virtio_sound_filter(ctx: Mapping[str, typing.Any],
                        spec: request_spec.RequestBuilder) -> bool:
    """COMPUTE_SOUND_MODEL_VIRTIO for a virtio sound device."""
    if hardware.unique(ctx['specs'], ctx['image'], 'sound_model') != 'virtio':
        return False
    spec.root_required.add('COMPUTE_SOUND_MODEL_VIRTIO')
    return True


def tpm_secret_security_filter(ctx: Mapping[str, typing.Any],
                               spec: request_spec.RequestBuilder) -> bool:
    """COMPUTE_SECURITY_TPM_SECRET_SECURITY_<hw:tpm_secret_security,
    user by default> for a vTPM."""
    specs = ctx['specs']
    if not hardware.unique(specs, ctx['image'], 'tpm_version'):
        return False
    security = specs.get('hw:tpm_secret_security') or 'user'
    spec.root_required.add(
        'COMPUTE_SECURITY_TPM_SECRET_SECURITY_%s' % security.upper())
    return True


def owner_nova_filter(ctx: Mapping[str, typing.Any],
                      spec: request_spec.RequestBuilder) -> bool:
    """OWNER_NOVA on the root and on every PCI alias group, when every
    nova-compute reports it (the ``owner_nova`` setting)."""
    if not ctx['settings'].get('owner_nova'):
        return False
    spec.root_required.add(OWNER_NOVA)
    for group in spec.groups.values():
        if group.get('pci_alias'):
            group['required'].add(OWNER_NOVA)
    return True


# request_filter.ALL_REQUEST_FILTERS, in Nova's order, without NOT_MODELLED
REQUEST_FILTERS = (
    require_tenant_aggregate,
    map_az_to_placement_aggregate,
    require_image_type_support,
    compute_status_filter,
    isolate_aggregates,
    transform_image_metadata,
    accelerators_filter,
    packed_virtqueue_filter,
    ephemeral_encryption_filter,
    virtio_sound_filter,
    tpm_secret_security_filter,
    owner_nova_filter,
)
# (Nova's name, why gpuclient leaves it out), in Nova's order
NOT_MODELLED = (
    ('routed_networks_filter',
     _('needs the requested networks and ports, which a flavor and an '
       'image do not say (and Neutron segment aggregates)')),
    ('remote_managed_ports_filter',
     _('needs the requested ports (their VNIC type remote-managed), '
       'which a flavor and an image do not say')),
)
# Nova 34's request_filter.ALL_REQUEST_FILTERS by name: REQUEST_FILTERS
# and NOT_MODELLED together, in its order
NOVA_REQUEST_FILTERS = (
    'require_tenant_aggregate',
    'map_az_to_placement_aggregate',
    'require_image_type_support',
    'compute_status_filter',
    'isolate_aggregates',
    'transform_image_metadata',
    'accelerators_filter',
    'packed_virtqueue_filter',
    'routed_networks_filter',
    'remote_managed_ports_filter',
    'ephemeral_encryption_filter',
    'virtio_sound_filter',
    'tpm_secret_security_filter',
    'owner_nova_filter',
)


def process_request(ctx: Mapping[str, typing.Any],
                    spec: request_spec.RequestBuilder) -> None:
    """request_filter.process_reqspec: REQUEST_FILTERS, in order, on SPEC.

    A prefilter's failure (Nova's RequestFilterFailed) is raised once all
    have run: a flavor/image conflict a later one finds is refused first,
    as Nova's API refuses it before the scheduler runs.
    """
    for prefilter in REQUEST_FILTERS:
        prefilter(ctx, spec)
    if spec.failures:
        raise spec.failures[0]
