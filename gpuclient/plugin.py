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

"""OpenStackClient wiring for ``openstack gpu``.

This module is imported by every ``openstack`` invocation (it is an
``openstack.cli.extension`` entry point), so it imports nothing beyond the
standard library and osc-lib at module level: the client layer and the
commands are loaded only when a ``gpu`` command runs.
"""

import logging

from osc_lib import utils

from gpuclient.i18n import _

LOG = logging.getLogger(__name__)

API_NAME = 'gpu'
DEFAULT_API_VERSION = '1'
API_VERSION_OPTION = 'os_gpu_api_version'
API_VERSIONS = ('1',)


def make_client(instance):
    """Return the gpuclient client layer for an OSC ClientManager."""
    from gpuclient.cloud import client
    from gpuclient.cloud import http

    LOG.debug('Instantiating gpuclient client layer')
    placement_version = _placement_api_version(instance)
    if placement_version is not None:
        LOG.warning(
            _('--os-placement-api-version %s is ignored by openstack gpu: '
              'it negotiates the Placement microversion of each request '
              '(the one the request needs, within what the cloud offers). '
              'The option is osc-placement\'s, for "openstack resource '
              'provider ..." commands.'), placement_version)
    config = _cloud_config(instance)
    return client.GpuClient(
        session=instance.session,
        sdk_connection=instance.sdk_connection,
        region_name=instance.region_name,
        interface=instance.interface,
        api_timeout=_api_timeout(instance),
        compute_api_version=_compute_api_version(instance),
        cloud_config=config,
        max_bytes=http.max_answer_bytes(config),
    )


def bound_session(app):
    """Have OSC build the keystoneauth session of this ``openstack gpu``
    command with gpuclient's bounds, before its first request.

    OSC's shell builds the session and authenticates (Keystone's version
    discovery, then the token) before the command runs and before
    ``make_client``, with the session timeout clouds.yaml's api_timeout
    gives, and none without it: a Keystone that accepts and never answers
    holds the command for ever. So every gpu command calls this when it
    is made, before the shell prepares it: the session constructor of
    APP's cloud configuration (openstacksdk's, which OSC's ClientManager
    asks for the session) then gives the session it builds gpuclient's
    timeouts (``http.set_timeouts``: api_timeout, else
    $GPUCLIENT_API_TIMEOUT, else 10 s to connect and 120 s per call) and
    its cap on answers (``http.max_answer_bytes`` of the cloud's
    configuration). Other commands are not changed: only gpu commands
    call it; a process runs one command, and OSC's interactive mode
    builds one session for all its commands anyway. Idempotent.
    """
    from openstack.config import loader  # loaded by OSC's shell already

    config = getattr(app, 'cloud_config', None)
    if not (isinstance(config, loader.OpenStackConfig)
            and hasattr(config, '_session_constructor')):
        return  # not OSC's shell (a test's app)
    current = config._session_constructor
    if getattr(current, 'gpuclient_bounded', False):
        return

    def build(*args, **kwargs):
        from keystoneauth1 import session as ks_session

        from gpuclient.cloud import http

        session = (current or ks_session.Session)(*args, **kwargs)
        manager = getattr(app, 'client_manager', None)
        settings = getattr(getattr(manager, '_cli_options', None),
                           'config', None)
        # the session's own timeout is clouds.yaml's api_timeout (OSC's
        # CloudRegion passes it), kept when set
        http.set_timeouts(session, kwargs.get('timeout'),
                          http.max_answer_bytes(
                              settings if isinstance(settings, dict)
                              else {}))
        return session

    build.gpuclient_bounded = True
    config._session_constructor = build


def _cloud_config(instance):
    """The cloud's configuration (its clouds.yaml entry, as openstacksdk
    merged it), where gpuclient's own keys such as prometheus_endpoint
    are; {} when OSC has none."""
    options = getattr(instance, '_cli_options', None)
    config = getattr(options, 'config', None)
    return dict(config) if isinstance(config, dict) else {}


# the names openstacksdk gives a cloud that clouds.yaml does not name: OS_*
# variables alone, or nothing at all
_UNNAMED_CLOUDS = ('envvars', 'defaults')


def series_labels(instance):
    """(('cloud', name), ('region', region)) of the series ``-f
    openmetrics`` writes: OSC's cloud name (--os-cloud, $OS_CLOUD) and
    the region the command runs in (--os-region-name, region_name); ''
    where there is none (a cloud of OS_* variables alone: openstacksdk's
    "envvars"), which Prometheus reads as no such label."""
    options = getattr(instance, '_cli_options', None)
    name = getattr(options, 'name', None)
    region = getattr(instance, 'region_name', None) or getattr(
        options, 'region_name', None)
    return (('cloud', name if isinstance(name, str)
             and name not in _UNNAMED_CLOUDS else ''),
            ('region', region if isinstance(region, str) else ''))


def _placement_api_version(instance):
    """--os-placement-api-version (or $OS_PLACEMENT_API_VERSION, or
    clouds.yaml's placement_api_version) as given, or None when none was:
    osc-placement's option, whose default "1" (negotiate) is also None.
    gpuclient does not follow it (make_client says so)."""
    value = _cloud_config(instance).get('placement_api_version')
    if value in (None, '') or str(value) == '1':
        return None
    return str(value)


def _compute_api_version(instance):
    """--os-compute-api-version (or $OS_COMPUTE_API_VERSION, or
    clouds.yaml's compute_api_version) as given, or None when none was.

    Read from the cloud's configuration, where openstacksdk keeps only
    the options given: OSC's ``client_manager._api_version['compute']``
    says '2.1' (OSC's default) when none was, so it cannot tell an
    explicit 2.1 from nothing.
    """
    options = getattr(instance, '_cli_options', None)
    config = getattr(options, 'config', None)
    if not isinstance(config, dict):
        return None
    value = config.get('compute_api_version')
    return str(value) if value not in (None, '') else None


def _api_timeout(instance):
    """The cloud's clouds.yaml ``api_timeout``, or None.

    OSC's ClientManager sets its CloudRegion's ``api_timeout`` to None
    (its session never times out), so the value is read again from the
    cloud's own configuration, as openstacksdk resolves it (profiles and
    the ``<service>_timeout`` spellings included).
    """
    options = getattr(instance, '_cli_options', None)
    loader = getattr(options, '_openstack_config', None)
    if loader is None:
        return None
    try:
        region = loader.get_one(cloud=options.name, validate=False)
    except Exception as exc:  # noqa: BLE001 - the defaults apply
        LOG.debug('cannot read api_timeout of cloud %s: %s',
                  getattr(options, 'name', None), exc)
        return None
    return region.config.get('api_timeout')


def build_option_parser(parser):
    """Add the plugin's global option.

    Only ``--os-gpu-api-version``: the Placement microversion is negotiated
    per call, so there is deliberately no ``--os-placement-api-version``
    here (osc-placement owns that option; ``make_client`` warns that a
    given one is ignored).
    """
    parser.add_argument(
        '--os-gpu-api-version',
        metavar='<gpu-api-version>',
        default=utils.env('OS_GPU_API_VERSION', default=DEFAULT_API_VERSION),
        help=_(
            'gpuclient command set version, default=%s '
            '(Env: OS_GPU_API_VERSION)'
        )
        % DEFAULT_API_VERSION,
    )
    return parser
