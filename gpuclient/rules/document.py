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

"""Pure: the GPU layer as a versioned YAML document.

``gpu export`` writes it, ``gpu diff`` compares it with the cloud (and
``gpu apply`` applies it: ``gpuclient.rules.document_plan``).
Version 1 holds four lists:

* ``pools``: name, mode, resource_class, alias, pci_id, vgpu_type,
  mig_profile, zone, hosts, isolate, projects, properties;
* ``flavors``: name, pool, gpus, vcpus, ram, disk, ephemeral, swap,
  numa_policy, public, projects, description, properties (extra specs
  besides those gpuclient derives from the pool);
* ``images``: name (or ID) and the GPU properties gpuclient sets
  (``images.PROPERTIES``);
* ``quotas``: ``project`` or ``default: true``, ``pool`` or
  ``resource_class``, and ``gpus`` (a number, or ``unlimited``).

A project is a name or an ID, or ``{name: <name or ID>, domain: <domain
name or ID>}``. ``gpu export`` also writes ``observed``, its record of
what the cloud held (the same four lists: ``record``, ``recorded``), by
which ``gpu apply`` tells the author's edits from changes made in the
cloud since (``conflicts``).

Three shapes of a document live here: the *text* (YAML, ``load`` and
``dump``), the *written* form (defaults left out: what ``dump`` writes),
and the *canonical* form that ``diff`` compares, with every default
filled in, lists sorted, projects as IDs, hosts as Nova service hosts and
images by their key (``image_key``). ``check`` validates a written
document (``SCHEMA``, a JSON Schema, with ``rules/schema.py``, then
gpuclient's own rules) and
returns it canonical except for the references (projects, hosts, images)
that only the cloud can resolve: ``references`` lists them and
``substitute`` puts the resolved values in. ``from_cloud`` is the
canonical document of what the cloud holds, for the objects gpuclient
owns.

Errors name the line (when the text is known) and the path of the
field: ``line 7: pools[1].mode: 'vgu' is not one of [...]``.
"""

from __future__ import annotations

from collections.abc import Container
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
import typing

from osc_lib import exceptions

from gpuclient import exit_status
from gpuclient.i18n import _
from gpuclient.rules import images as images_mod
from gpuclient.rules import nova_rules
from gpuclient.rules import placement_names as names
from gpuclient.rules import pools as pools_mod
from gpuclient.rules import quota as quota_mod
from gpuclient.rules import schema as schema_mod
from gpuclient.rules import specs

if typing.TYPE_CHECKING:
    import yaml

VERSION = 1
UNLIMITED = 'unlimited'

POOL, FLAVOR, IMAGE, QUOTA = 'pool', 'flavor', 'image', 'quota'
# the lists of a document, in the order they are written and compared
KINDS = (('pools', POOL), ('flavors', FLAVOR), ('images', IMAGE),
         ('quotas', QUOTA))

# the record of what the cloud held when gpu export wrote the document:
# the same four lists, under this key (``record``, ``conflicts``)
OBSERVED = 'observed'

# changes of a diff row
CREATE, UPDATE, RECREATE, DELETE, UNTRACKED = (
    'create', 'update', 'recreate', 'delete', 'untracked')
DRIFT = (CREATE, UPDATE, RECREATE, DELETE)

# gpu diff's exit statuses (gpuclient.exit_status, diff(1)'s; before
# 2027.1 drift was 2 and an error 1)
EXIT_IN_SYNC = exit_status.SAME
EXIT_DRIFT = exit_status.DIFFERENT
EXIT_ERROR = exit_status.TROUBLE

# canonical fields, in the order they are written
POOL_FIELDS = ('name', 'mode', 'resource_class', 'alias', 'pci_id',
               'vgpu_type', 'mig_profile', 'live_migratable', 'zone',
               'hosts', 'isolate', 'projects', 'properties')
FLAVOR_FIELDS = ('name', 'pool', 'gpus', 'vcpus', 'ram', 'disk',
                 'ephemeral', 'swap', 'numa_policy', 'public', 'projects',
                 'description', 'properties')
IMAGE_FIELDS = ('name', 'properties')
QUOTA_FIELDS = ('project', 'resource_class', 'gpus')
FIELDS = {POOL: POOL_FIELDS, FLAVOR: FLAVOR_FIELDS, IMAGE: IMAGE_FIELDS,
          QUOTA: QUOTA_FIELDS}
# fields Nova (or gpuclient) cannot change in place: the object is made
# again (a pool of another kind of GPU; a flavor of other sizes, or
# public/private, which Nova does not change)
RECREATE_FIELDS = {
    POOL: ('mode', 'resource_class', 'alias', 'pci_id', 'vgpu_type',
           'mig_profile', 'live_migratable'),
    FLAVOR: ('vcpus', 'ram', 'disk', 'ephemeral', 'swap', 'public'),
    IMAGE: (), QUOTA: (),
}
# what a flavor's extra specs lack (or have) against what its pool
# derives: canonical flavors from the cloud only, never written
SPECS_DRIFT = '_specs_drift'

# -- what gpu apply owns (kubectl's rule for --prune) ----------------------
# Every object an applied document names is marked, on the object, as
# managed by gpu apply; --prune removes only marked objects, never one an
# imperative command (gpu pool/flavor create, gpu image set, gpu quota
# set) or a hand made, whatever its shape. Canonical objects from the
# cloud carry APPLIED (never written, never compared).
APPLIED = '_applied'
MANAGED_BY = 'gpu-apply'
# aggregate metadata: gpu_ keys are gpuclient's, never pool properties,
# and no flavor extra spec names it (AggregateInstanceExtraSpecsFilter)
POOL_MARK = 'gpu_managed_by'
# flavor extra spec: a namespace no Nova filter reads
# (AggregateInstanceExtraSpecsFilter and ComputeCapabilitiesFilter skip
# other scopes) and Nova's extra spec validation does not check
FLAVOR_MARK = 'gpuclient:managed_by'
# Glance image property (Nova's ImageMetaProps ignores it)
IMAGE_MARK = 'gpuclient_managed_by'
# Keystone limit: its description (limits have no other free field)
QUOTA_MARK = 'gpuclient:managed_by=%s' % MANAGED_BY
# where each kind carries it, as the plan says it
MARK_PLACES = {
    POOL: _('aggregate metadata %s=%s') % (POOL_MARK, MANAGED_BY),
    FLAVOR: _('extra spec %s=%s') % (FLAVOR_MARK, MANAGED_BY),
    IMAGE: _('image property %s=%s') % (IMAGE_MARK, MANAGED_BY),
    QUOTA: _('limit description %s') % QUOTA_MARK,
}


def _marked(item: dict[str, typing.Any],
            marked: bool) -> dict[str, typing.Any]:
    """ITEM (a canonical object from the cloud) with APPLIED when it
    carries gpu apply's mark."""
    if marked:
        item[APPLIED] = True
    return item


def quota_marked(description: object) -> bool:
    """Whether a Keystone limit's DESCRIPTION holds gpu apply's mark."""
    return isinstance(description, str) and QUOTA_MARK in description.split()


_NAME = {'type': 'string', 'minLength': 1, 'maxLength': 255}
_COUNT = {'type': 'integer', 'minimum': 0}
_PROJECT = {
    # a name or ID, or {name, domain}: keywords of one type apply to it
    'type': ['string', 'object'], 'minLength': 1, 'maxLength': 255,
    'properties': {'name': _NAME, 'domain': _NAME},
    'required': ['name', 'domain'], 'additionalProperties': False,
}
_PROJECTS = {'type': 'array', 'items': _PROJECT}
_PROPERTIES = {
    'type': 'object',
    'propertyNames': {'minLength': 1, 'maxLength': 255},
    'additionalProperties': {'type': ['string', 'integer', 'number',
                                      'boolean']},
}

# the four lists of a document (and of its ``observed`` record)
_LISTS = {
    'pools': {'type': 'array', 'items': {
        'type': 'object',
        'required': ['name', 'mode'],
        'additionalProperties': False,
        'properties': {
            'name': _NAME,
            'mode': {'enum': list(pools_mod.MODES)},
            'resource_class': _NAME,
            'alias': _NAME,
            'pci_id': {'type': 'string',
                       'pattern': '^[0-9a-fA-F]{4}:[0-9a-fA-F]{4}$'},
            'vgpu_type': _NAME,
            'mig_profile': _NAME,
            'live_migratable': {'type': 'boolean'},
            'zone': _NAME,
            'hosts': {'type': 'array', 'items': _NAME,
                      'uniqueItems': True},
            'isolate': {'type': 'boolean'},
            'projects': _PROJECTS,
            'properties': _PROPERTIES,
        },
    }},
    'flavors': {'type': 'array', 'items': {
        'type': 'object',
        'required': ['name', 'pool', 'vcpus', 'ram', 'disk'],
        'additionalProperties': False,
        'properties': {
            'name': _NAME,
            'pool': _NAME,
            'gpus': {'type': 'integer', 'minimum': 1,
                     'maximum': names.MAX_GPUS},
            'vcpus': {'type': 'integer', 'minimum': 1},
            'ram': {'type': 'integer', 'minimum': 1},
            'disk': _COUNT,
            'ephemeral': _COUNT,
            'swap': _COUNT,
            'numa_policy': {'enum': list(specs.NUMA_POLICIES)},
            'public': {'type': 'boolean'},
            'projects': _PROJECTS,
            'description': {'type': 'string', 'maxLength': 65535},
            'properties': _PROPERTIES,
        },
    }},
    'images': {'type': 'array', 'items': {
        'type': 'object',
        'required': ['name'],
        'additionalProperties': False,
        'properties': {
            'name': _NAME,
            'properties': {
                'type': 'object',
                'additionalProperties': False,
                'properties': {
                    images_mod.MACHINE_TYPE: _NAME,
                    images_mod.FIRMWARE_TYPE: {
                        'enum': list(images_mod.FIRMWARES)},
                    images_mod.SECURE_BOOT: {
                        'enum': list(images_mod.SECURE_BOOT_VALUES)},
                    images_mod.HIDE_ID: {'type': ['boolean', 'string']},
                },
            },
        },
    }},
    'quotas': {'type': 'array', 'items': {
        'type': 'object',
        'required': ['gpus'],
        'additionalProperties': False,
        'properties': {
            'project': _PROJECT,
            'default': {'const': True},
            'pool': _NAME,
            'resource_class': _NAME,
            # a number of GPUs, or "unlimited"
            'gpus': {'type': ['integer', 'string'], 'minimum': 0,
                     'maximum': quota_mod.MAX_LIMIT,
                     'pattern': '^%s$' % UNLIMITED},
        },
    }},
}

SCHEMA = {
    '$schema': 'https://json-schema.org/draft/2020-12/schema',
    'title': 'gpuclient document, version 1',
    'type': 'object',
    'required': ['version'],
    'additionalProperties': False,
    'properties': {
        'version': {'const': VERSION},
        **_LISTS,
        # what the cloud held when gpu export wrote the document: the
        # same four lists (``record``)
        OBSERVED: {'type': 'object', 'additionalProperties': False,
                   'properties': _LISTS},
    },
}


class DocumentError(exceptions.CommandError):
    """A document gpuclient cannot take: every problem, each with its line
    and path, in one message."""

    def __init__(self, problems: Iterable[str]) -> None:
        self.problems = list(problems)
        super().__init__(
            _('The document is not valid (%(n)d problem(s)): %(list)s')
            % {'n': len(self.problems), 'list': '; '.join(self.problems)})


# -- text ----------------------------------------------------------------

def path_text(path: Iterable[str | int]) -> str:
    """('pools', 1, 'mode') -> 'pools[1].mode'."""
    text = ''
    for part in path:
        if isinstance(part, int):
            text += '[%d]' % part
        else:
            text += ('.' if text else '') + str(part)
    return text or _('(document)')


def where(path: Iterable[str | int],
          lines: Mapping[tuple[str | int, ...], int] | None = None) -> str:
    """'line 7: pools[1].mode' (the line of the longest known prefix of
    PATH in LINES, {path tuple: line}), or the path alone."""
    path = tuple(path)
    for end in range(len(path), -1, -1):
        line = (lines or {}).get(path[:end])
        if line is not None:
            return _('line %(line)d: %(path)s') % {
                'line': line, 'path': path_text(path)}
    return path_text(path)


def _lines_of(node: yaml.Node, path: tuple[str | int, ...],
              found: dict[tuple[str | int, ...], int],
              problems: list[str]) -> None:
    """{path: line} of every node under NODE (a yaml node); duplicate
    mapping keys are problems (YAML would keep the last silently)."""
    import yaml

    found[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        seen = set()
        for key, value in node.value:
            name = key.value
            if name in seen:
                problems.append(_('line %(line)d: %(path)s: %(key)s is given '
                                  'twice') % {
                    'line': key.start_mark.line + 1,
                    'path': path_text(path), 'key': name})
            seen.add(name)
            _lines_of(value, path + (name,), found, problems)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _lines_of(item, path + (index,), found, problems)


def _loader(text: str) -> yaml.SafeLoader:
    """A yaml SafeLoader of TEXT that refuses an anchor or an alias at
    its event, before any node is built: a document never needs one, and
    nested aliases expand into a tree far larger than the text (an "alias
    bomb": 315 bytes took 30 s and 1 GB to walk)."""
    import yaml

    class NoAliasLoader(yaml.SafeLoader):
        def compose_node(self, parent: yaml.Node | None,
                         index: object) -> yaml.Node | None:
            event = self.peek_event()
            if (isinstance(event, yaml.AliasEvent)
                    or getattr(event, 'anchor', None) is not None):
                raise DocumentError([_(
                    'line %d: YAML anchors and aliases (&name, *name, <<) '
                    'are not accepted in a document: write the value out')
                    % (event.start_mark.line + 1)])
            return super().compose_node(parent, index)

    return NoAliasLoader(text)


def load(text: str
         ) -> tuple[typing.Any, dict[tuple[str | int, ...], int]]:
    """(data, {path: line}) of a document's YAML TEXT; DocumentError for
    text that is not YAML, has an anchor or alias (``_loader``), or a
    mapping with a key given twice."""
    import yaml

    try:
        loader = _loader(text)
        try:
            node = loader.get_single_node()
            data = (loader.construct_document(node) if node is not None
                    else None)
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        mark = getattr(exc, 'problem_mark', None)
        reason = ' '.join(str(getattr(exc, 'problem', None) or exc).split())
        if mark is not None:
            reason = _('line %(line)d: %(reason)s') % {
                'line': mark.line + 1, 'reason': reason}
        raise DocumentError([_('not YAML: %s') % reason]) from exc
    lines: dict[tuple[str | int, ...], int]
    problems: list[str]
    lines, problems = {}, []
    if node is not None:
        _lines_of(node, (), lines, problems)
    if problems:
        raise DocumentError(problems)
    return data, lines


HEADER = ('# The GPU layer of an OpenStack cloud: "openstack gpu diff" '
          'compares it\n# with the cloud. Schema: gpuclient\'s user guide, '
          '"Declarative GPU layer".\n')


OBSERVED_HEADER = (
    '\n# What the cloud held when this document was exported. "openstack '
    'gpu\n# apply" refuses to change a field that the cloud has changed '
    'since\n# (another operator\'s edit), unless --force-conflicts. Make '
    'your edits\n# above; leave this record as it is (export again to '
    'renew it).\n')


def _yaml(data: object) -> str:
    import yaml

    return yaml.safe_dump(data, sort_keys=False, default_flow_style=False,
                          allow_unicode=True, width=79)


def dump(doc: Mapping[str, typing.Any]) -> str:
    """The YAML text of a canonical document (``written`` form), with its
    OBSERVED record (``record``) last, when it has one."""
    text = HEADER + _yaml(written(doc))
    if doc.get(OBSERVED) is not None:
        observed = written(dict(doc[OBSERVED], version=VERSION))
        del observed['version']
        text += OBSERVED_HEADER + _yaml({OBSERVED: observed})
    return text


def record(doc: Mapping[str, typing.Any]) -> dict[str, typing.Any]:
    """DOC (canonical, ``from_cloud``) with itself as its OBSERVED record:
    what ``gpu export`` writes, so that ``gpu apply`` can tell the
    author's edits from changes made in the cloud since (``conflicts``)."""
    return dict(doc, **{OBSERVED: {plural: doc[plural]
                                   for plural, _kind in KINDS}})


def recorded(doc: Mapping[str, typing.Any]
             ) -> dict[str, typing.Any] | None:
    """The OBSERVED record of DOC (checked) as a canonical document, or
    None when DOC has none (written by hand, or by a gpuclient before the
    record). Its references are taken as written (``gpu export`` writes
    project IDs, compute service hosts and image keys), a {name, domain}
    project as 'name@domain'."""
    observed = doc.get(OBSERVED)
    if observed is None:
        return None
    observed = dict(observed, version=doc['version'])
    return substitute(observed, {
        path: ('%s@%s' % (value['name'], value['domain'])
               if isinstance(value, dict) else value)
        for path, _what, value in references(observed)})


# -- validation ----------------------------------------------------------

def schema_problems(data: object,
                    lines: Mapping[tuple[str | int, ...], int] | None = None
                    ) -> list[str]:
    """Where DATA breaks SCHEMA: ['line 7: pools[1].mode: ...'], sorted
    by path."""
    found = []
    for path, message in schema_mod.errors(SCHEMA, data):
        found.append((tuple(str(p) for p in path), '%s: %s' % (
            where(path, lines), message)))
    return [message for _key, message in sorted(found)]


def _text(value: object) -> str:
    """A property value as Nova and Glance keep it (a string)."""
    if isinstance(value, bool):
        return 'true' if value else 'false'
    return str(value)


def _properties(values: Mapping[typing.Any, typing.Any] | None
                ) -> dict[str, str]:
    return {str(k): _text(v) for k, v in sorted((values or {}).items())}


def _pool_for_flavors(spec: Mapping[str, typing.Any]
                      ) -> dict[str, typing.Any]:
    """A canonical pool in the shape ``specs.derive`` reads."""
    pool = dict(spec, pool_trait=pools_mod.pool_trait(spec['name']))
    pool['type_trait'] = pools_mod.type_trait_of(pool)
    return pool


def _gpus(value: int | str) -> int:
    return -1 if value == UNLIMITED else int(value)


def _check_pool(item: Mapping[str, typing.Any],
                known: Iterable[str]) -> dict[str, typing.Any]:
    """The canonical pool of a written one (hosts and projects as
    written); CommandError for what ``gpu pool create`` would refuse."""
    properties = _properties(item.get('properties'))
    if specs.GROUP_POLICY in properties:
        raise exceptions.CommandError(
            _('properties: %s is set by gpuclient on a pool whose flavors '
              'need it (several vGPUs): leave it out') % specs.GROUP_POLICY)
    spec = pools_mod.build_spec(
        item['name'], item['mode'], alias=item.get('alias'),
        pci_id=item.get('pci_id'), vgpu_type=item.get('vgpu_type'),
        mig_profile=item.get('mig_profile'),
        resource_class=item.get('resource_class'),
        isolate=item.get('isolate', False), zone=item.get('zone'),
        properties=properties,
        live_migratable=item.get('live_migratable', False))
    pools_mod.check_trait_collision(
        spec['name'], {name: {'name': name,
                              'pool_trait': pools_mod.pool_trait(name)}
                       for name in known})
    spec['hosts'] = list(item.get('hosts') or ())
    spec['projects'] = list(item.get('projects') or ())
    return {field: spec.get(field) for field in POOL_FIELDS}


def _check_flavor(item: Mapping[str, typing.Any],
                  pools: Mapping[str, Mapping[str, typing.Any]]
                  ) -> dict[str, typing.Any]:
    """The canonical flavor of a written one; CommandError for what ``gpu
    flavor create`` would refuse (derivation from its pool included)."""
    pool = pools.get(item['pool'])
    if pool is None:
        raise exceptions.CommandError(
            _('pool: no pool %(pool)s in this document (a flavor\'s pool is '
              'described beside it; known: %(known)s)')
            % {'pool': item['pool'], 'known': ', '.join(sorted(pools))
               or _('none')})
    nova_rules.check_name(item['name'], _('flavor name'))
    nova_rules.check_description(item.get('description'))
    public = item.get('public', True)
    if public and item.get('projects'):
        raise exceptions.CommandError(
            _('projects: only a private flavor (public: false) has '
              'projects'))
    flavor = {
        'name': item['name'], 'pool': item['pool'],
        'gpus': item.get('gpus', 1), 'vcpus': item['vcpus'],
        'ram': item['ram'], 'disk': item['disk'],
        'ephemeral': item.get('ephemeral', 0), 'swap': item.get('swap', 0),
        'numa_policy': item.get('numa_policy'), 'public': public,
        'projects': list(item.get('projects') or ()),
        'description': item.get('description') or None,
        'properties': _properties(item.get('properties')),
    }
    specs.check_sizes(flavor['vcpus'], flavor['ram'], flavor['disk'],
                      flavor['ephemeral'], flavor['swap'])
    specs.derive(_pool_for_flavors(pool), gpus=flavor['gpus'],
                 numa_policy=flavor['numa_policy'],
                 properties=flavor['properties'])
    if flavor['numa_policy'] == specs.DEFAULT_NUMA_POLICY:
        flavor['numa_policy'] = None  # what derive writes without one
    return flavor


def _check_image(item: Mapping[str, typing.Any]) -> dict[str, typing.Any]:
    return {'name': item['name'],
            'properties': _properties(item.get('properties'))}


def _check_quota(item: Mapping[str, typing.Any],
                 pools: Mapping[str, Mapping[str, typing.Any]]
                 ) -> dict[str, typing.Any]:
    if ('project' in item) == ('default' in item):
        raise exceptions.CommandError(
            _('give either project (a project\'s own limit) or default: '
              'true (the registered limit of every project)'))
    if ('pool' in item) == ('resource_class' in item):
        raise exceptions.CommandError(
            _('give either pool or resource_class (a pool stands for its '
              'resource class; two pools of one class share one quota)'))
    if 'pool' in item:
        pool = pools.get(item['pool'])
        if pool is None:
            raise exceptions.CommandError(
                _('pool: no pool %s in this document') % item['pool'])
        resource_class = pool['resource_class']
    else:
        resource_class = names.check_gpu_class(
            names.normalize_resource_class(item['resource_class']))
    return {'project': item.get('project'), 'resource_class': resource_class,
            'gpus': _gpus(item['gpus'])}


# the options of gpu pool/flavor create that messages of the shared
# checks name, and the document's fields they are
_FLAGS = (('--resource-class', 'resource_class'), ('--alias', 'alias'),
          ('--pci-id', 'pci_id'), ('--vgpu-type', 'vgpu_type'),
          ('--mig-profile', 'mig_profile'), ('--isolate', 'isolate'),
          ('--live-migratable', 'live_migratable'),
          ('--project', 'projects'), ('--property', 'properties'),
          ('--numa-policy', 'numa_policy'), ('--gpus', 'gpus'),
          ('--vcpus', 'vcpus'), ('--ram', 'ram'), ('--disk', 'disk'),
          ('--ephemeral', 'ephemeral'), ('--swap', 'swap'),
          ('--zone', 'zone'))


def _as_fields(message: str) -> str:
    """A message of gpu pool/flavor create's checks, in the document's
    words (field names for option names)."""
    for flag, field in _FLAGS:
        message = message.replace(flag, field)
    return message.rstrip('.')


def key_of(kind: str, item: Mapping[str, typing.Any]
           ) -> str | tuple[str, str]:
    """What names one object of KIND in a canonical document."""
    if kind == QUOTA:
        project = item['project']
        if isinstance(project, dict):
            project = '%s@%s' % (project['name'], project['domain'])
        return (project or '', item['resource_class'])
    return item['name']


def check(data: typing.Any,
          lines: Mapping[tuple[str | int, ...], int] | None = None
          ) -> dict[str, typing.Any]:
    """The canonical document of DATA (a parsed written document),
    references not yet resolved (see ``references``); DocumentError with
    every problem, each with its line and path. The ``observed`` record
    of DATA, when it has one, is checked by the same rules and kept,
    canonical, under OBSERVED (``recorded``)."""
    problems = schema_problems(data, lines)
    if problems:
        raise DocumentError(problems)
    doc, problems = _check_lists(data, lines)
    if data.get(OBSERVED) is not None:
        found, more = _check_lists(data[OBSERVED], lines, (OBSERVED,))
        doc[OBSERVED] = {plural: found[plural] for plural, _kind in KINDS}
        problems += more
    if problems:
        raise DocumentError(problems)
    return doc


def _check_lists(data: Mapping[str, typing.Any],
                 lines: Mapping[tuple[str | int, ...], int] | None,
                 prefix: tuple[str | int, ...] = ()
                 ) -> tuple[dict[str, typing.Any], list[str]]:
    """(canonical document, problems) of the four lists of DATA, whose
    paths start with PREFIX."""
    doc: dict[str, typing.Any]
    problems: list[str]
    pools: dict[str, dict[str, typing.Any]]
    refused: set[str]
    doc, problems = {'version': VERSION}, []
    pools, refused = {}, set()
    for plural, kind in KINDS:
        doc[plural] = []
        seen: dict[str | tuple[str, str], int] = {}
        for index, item in enumerate(data.get(plural) or ()):
            path = prefix + (plural, index)
            if kind != POOL and item.get('pool') in refused:
                continue  # its pool's problem is said already
            try:
                if kind == POOL:
                    found = _check_pool(item, pools)
                    pools[found['name']] = found
                elif kind == FLAVOR:
                    found = _check_flavor(item, pools)
                elif kind == IMAGE:
                    found = _check_image(item)
                else:
                    found = _check_quota(item, pools)
            except exceptions.CommandError as exc:
                problems.append('%s: %s' % (where(path, lines),
                                            _as_fields(str(exc))))
                if kind == POOL:
                    refused.add(item['name'])
                continue
            key = key_of(kind, found)
            if key in seen:
                problems.append(
                    _('%(here)s: the same %(kind)s as %(other)s')
                    % {'here': where(path, lines), 'kind': kind,
                       'other': path_text(prefix + (plural, seen[key]))})
                continue
            seen[key] = index
            doc[plural].append(found)
    return doc, problems


# -- references: what only the cloud resolves -----------------------------

PROJECT_REF, HOST_REF, IMAGE_REF = 'project', 'host', 'image'


def references(doc: Mapping[str, typing.Any]
               ) -> list[tuple[tuple[str | int, ...], str, typing.Any]]:
    """[(path, what, value)]: the projects (PROJECT_REF: a name or ID, or
    {name, domain}), hosts (HOST_REF, with the pool's name as the path's
    second part's object) and images (IMAGE_REF) of a checked document,
    each to resolve against the cloud."""
    found: list[tuple[tuple[str | int, ...], str, typing.Any]] = []
    for index, pool in enumerate(doc['pools']):
        for i, host in enumerate(pool['hosts']):
            found.append((('pools', index, 'hosts', i), HOST_REF, host))
        for i, project in enumerate(pool['projects']):
            found.append((('pools', index, 'projects', i), PROJECT_REF,
                          project))
    for index, flavor in enumerate(doc['flavors']):
        for i, project in enumerate(flavor['projects']):
            found.append((('flavors', index, 'projects', i), PROJECT_REF,
                          project))
    for index, image in enumerate(doc['images']):
        found.append((('images', index, 'name'), IMAGE_REF, image['name']))
    for index, item in enumerate(doc['quotas']):
        if item['project'] is not None:
            found.append((('quotas', index, 'project'), PROJECT_REF,
                          item['project']))
    return found


def substitute(doc: Mapping[str, typing.Any],
               resolved: Mapping[tuple[str | int, ...], typing.Any]
               ) -> dict[str, typing.Any]:
    """DOC with each reference replaced by RESOLVED[path] (every path of
    ``references``), lists sorted: the canonical document ``diff``
    compares."""
    result: dict[str, typing.Any] = {'version': doc['version']}
    for plural, kind in KINDS:
        items = []
        for index, item in enumerate(doc[plural]):
            item = dict(item)
            for field, value in list(item.items()):
                path = (plural, index, field)
                if isinstance(value, list):
                    item[field] = sorted(
                        {resolved.get(path + (i,), v)
                         for i, v in enumerate(value)})
                elif path in resolved:
                    item[field] = resolved[path]
            items.append(item)
        # the lambda takes the loop's KIND as a default: no type of it
        result[plural] = sorted(
            items, key=lambda i, k=kind: key_of(k, i))  # type: ignore[misc]
    return result


# -- the cloud as a document ----------------------------------------------

def image_key(image: Mapping[str, typing.Any],
              images: Iterable[Mapping[str, typing.Any]]) -> str:
    """How a document names IMAGE: its name when no other image of
    IMAGES has it, else its ID."""
    name = image.get('name')
    if name and sum(1 for i in images if i.get('name') == name) == 1:
        return name
    return image['id']


def _flavor_from_cloud(flavor: Mapping[str, typing.Any],
                       access: Mapping[str, list[str]],
                       pools: Mapping[str, Mapping[str, typing.Any]],
                       notes: list[str]) -> dict[str, typing.Any] | None:
    """The canonical flavor of a Nova flavor gpuclient derives from a
    pool, or None (with a note when it steers to a pool but cannot be
    read as derived from it)."""
    extra = dict(flavor.get('extra_specs') or {})
    reading = specs.read(extra, pools)
    pool = pools.get(reading['pool'])
    if pool is None:
        return None
    numa = (extra.get(specs.NUMA_SPEC)
            if pool['mode'] in pools_mod.PCI_MODES else None)
    try:
        derived = specs.derive(pool, gpus=reading['gpus'],
                               numa_policy=numa)['extra_specs']
        properties: dict[str, str]
        drift: dict[str, list[str | None]]
        properties, drift = {}, {}
        for key, value in sorted(extra.items()):
            if key in derived:
                if value != derived[key]:
                    drift[key] = [value, derived[key]]
            elif key == FLAVOR_MARK:
                continue  # gpu apply's mark: APPLIED
            elif specs.owned_reason(key, pools):
                drift[key] = [value, None]
            else:
                properties[key] = value
        for key in sorted(set(derived) - set(extra)):
            drift[key] = [None, derived[key]]
        specs.derive(pool, gpus=reading['gpus'], numa_policy=numa,
                     properties=properties)
    except exceptions.CommandError as exc:
        notes.append(
            _('Flavor %(flavor)s steers to pool %(pool)s but is not a '
              'flavor gpuclient derives from it (%(why)s): left out.')
            % {'flavor': flavor.get('name') or flavor['id'],
               'pool': pool['name'], 'why': str(exc).rstrip('.')})
        return None
    public = flavor.get('os-flavor-access:is_public', True)
    found = {
        'name': flavor['name'], 'pool': pool['name'],
        'gpus': reading['gpus'], 'vcpus': flavor.get('vcpus'),
        'ram': flavor.get('ram'), 'disk': flavor.get('disk'),
        'ephemeral': flavor.get('OS-FLV-EXT-DATA:ephemeral') or 0,
        'swap': flavor.get('swap') or 0,
        'numa_policy': (None if numa == specs.DEFAULT_NUMA_POLICY
                        else numa),
        'public': public,
        'projects': [] if public else sorted(access.get(flavor['id'])
                                             or ()),
        'description': flavor.get('description') or None,
        'properties': properties,
    }
    _marked(found, extra.get(FLAVOR_MARK) == MANAGED_BY)
    if drift:
        found[SPECS_DRIFT] = drift
    return found


def from_cloud(pools: Mapping[str, Mapping[str, typing.Any]],
               flavors: Iterable[Mapping[str, typing.Any]] | None,
               access: Mapping[str, list[str]] | None,
               images: Sequence[Mapping[str, typing.Any]] | None,
               registered: Mapping[str, dict[str, typing.Any]] | None,
               limits: Iterable[dict[str, typing.Any]] | None,
               selected: Container[str] | None = None,
               classes: Container[str] | None = None
               ) -> tuple[dict[str, typing.Any], list[str]]:
    """(canonical document, notes) of what the cloud holds, for the
    objects gpuclient owns.

    POOLS: {name: pool} (``pools.scan``); FLAVORS: Nova flavors (dicts,
    with extra specs); ACCESS: {flavor id: [project ids]} of the private
    ones; IMAGES: Glance images (dicts; None: not read, no images);
    REGISTERED ({resource name: {'id', 'limit'}}) and LIMITS (project
    limits) of Keystone (None: not read, no quotas). SELECTED: pool names
    (None: every pool): then only their flavors and the quotas of their
    classes (or of CLASSES, when given: ``scope``), and no images (they
    belong to no pool).

    Pools are the aggregates with gpuclient metadata; flavors those whose
    extra specs steer to a pool and are what gpuclient derives from it
    (plus other extra specs: ``properties``); images those with a GPU
    property (``images.PROPERTIES``); quotas the unified limits on the
    GPU classes (``class:<RC>``). The notes name flavors that steer to a
    pool but were left out, and why.
    """
    chosen = {name: pool for name, pool in pools.items()
              if selected is None or name in selected}
    notes: list[str] = []
    doc: dict[str, typing.Any] = {
        'version': VERSION, 'pools': [], 'flavors': [], 'images': [],
        'quotas': []}
    for name in sorted(chosen):
        pool = chosen[name]
        item: dict[str, typing.Any] = {
            field: pool.get(field) for field in POOL_FIELDS}
        item['hosts'] = sorted(pool.get('hosts') or ())
        item['projects'] = sorted(pool.get('projects') or ())
        item['properties'] = _properties(
            {k: v for k, v in (pool.get('properties') or {}).items()
             if k != specs.GROUP_POLICY})
        item['isolate'] = bool(pool.get('isolate'))
        doc['pools'].append(_marked(item, (pool.get('metadata') or {}).get(
            POOL_MARK) == MANAGED_BY))
    by_name: dict[str, list[dict[str, typing.Any]]] = {}
    for flavor in flavors or ():
        found = _flavor_from_cloud(flavor, access or {}, pools, notes)
        if found is not None and found['pool'] in chosen:
            by_name.setdefault(found['name'], []).append(found)
    for name in sorted(by_name):
        if len(by_name[name]) > 1:
            notes.append(_('%(n)d GPU flavors are named %(name)s: left out '
                           '(a document names a flavor by its name).')
                         % {'n': len(by_name[name]), 'name': name})
            continue
        doc['flavors'].append(by_name[name][0])
    if selected is None:
        for image in images or ():
            properties = {k: _text(image[k]) for k in images_mod.PROPERTIES
                          if image.get(k) is not None}
            if properties:
                # IMAGES were read: the loop is over them
                doc['images'].append(_marked(
                    {'name': image_key(
                        image, images),  # type: ignore[arg-type]
                     'properties': dict(sorted(properties.items()))},
                    image.get(IMAGE_MARK) == MANAGED_BY))
        doc['images'].sort(key=lambda i: i['name'])
    if classes is None:
        classes = {p['resource_class'] for p in chosen.values()}
    quotas: list[tuple[str | None, str, int, str | None]] = []
    for name, item in (registered or {}).items():
        quotas.append((None, name, item['limit'], item.get('description')))
    for item in limits or ():
        if item.get('project_id'):
            quotas.append((item['project_id'], item['resource_name'],
                           item['resource_limit'], item.get('description')))
    for project, name, limit, description in quotas:
        rc = quota_mod.class_of(name)
        if not rc or not quota_mod.is_gpu_class(rc, pools) or (
                selected is not None and rc not in classes):
            continue
        doc['quotas'].append(_marked(
            {'project': project, 'resource_class': rc,
             'gpus': -1 if limit < 0 else limit},
            quota_marked(description)))
    doc['quotas'].sort(key=lambda i: key_of(QUOTA, i))
    return doc, notes


def written(doc: Mapping[str, typing.Any]) -> dict[str, typing.Any]:
    """The written form of a canonical document: defaults left out, a
    quota's class as its pool where one pool of the document has it."""
    out: dict[str, typing.Any] = {'version': doc['version']}
    defaults: dict[str, typing.Any] = {
        'resource_class': None, 'alias': None, 'pci_id': None,
        'vgpu_type': None, 'mig_profile': None,
        'live_migratable': False, 'zone': None,
        'projects': [], 'properties': {}, 'gpus': 1,
        'ephemeral': 0, 'swap': 0, 'numa_policy': None,
        'public': True, 'description': None}
    pools = []
    for pool in doc['pools']:
        item = {f: pool[f] for f in POOL_FIELDS
                if f in ('hosts', 'isolate') or pool[f] != defaults.get(f)}
        try:
            own = pools_mod.default_class(pool)
        except exceptions.CommandError:
            own = None  # a pool gpu pool create would refuse: keep it all
        if own == pool['resource_class']:
            item.pop('resource_class', None)  # the mode's own
        pools.append(item)
    if pools:
        out['pools'] = pools
    flavors = [{f: flavor[f] for f in FLAVOR_FIELDS
                if f in ('vcpus', 'ram', 'disk')
                or flavor[f] != defaults.get(f)} for flavor in doc['flavors']]
    if flavors:
        out['flavors'] = flavors
    images = [{f: image[f] for f in IMAGE_FIELDS} for image in doc['images']]
    if images:
        out['images'] = images
    by_class: dict[str, list[str]] = {}
    for pool in doc['pools']:
        by_class.setdefault(pool['resource_class'], []).append(pool['name'])
    quotas = []
    for item in doc['quotas']:
        entry: dict[str, typing.Any] = (
            {'project': item['project']} if item['project'] is not None
            else {'default': True})
        owners = by_class.get(item['resource_class']) or []
        if len(owners) == 1:
            entry['pool'] = owners[0]
        else:
            entry['resource_class'] = item['resource_class']
        entry['gpus'] = UNLIMITED if item['gpus'] < 0 else item['gpus']
        quotas.append(entry)
    if quotas:
        out['quotas'] = quotas
    return out


# -- the diff --------------------------------------------------------------

def label(kind: str, key: str | tuple[str, str]) -> str:
    """How a diff row names an object: 'pool solver', 'quota class:VGPU
    (default)'."""
    if kind == QUOTA:
        # a quota's key is (project, resource class): key_of
        project, rc = key  # type: ignore[str-unpack]
        whose = (_('project %s') % project) if project else _('default')
        return '%s %s (%s)' % (kind, quota_mod.resource_name(rc), whose)
    return '%s %s' % (kind, key)


def _public(item: Mapping[str, typing.Any]) -> dict[str, typing.Any]:
    return {k: v for k, v in item.items() if not k.startswith('_')}


# -- conflicts: what the cloud changed since the export --------------------
# Server-side apply's rule (Kubernetes' managedFields, --force-conflicts):
# a field the apply would change is a conflict when the cloud no longer
# holds the value the document's record says it held at the export,
# whether the document keeps that value (it would undo the other
# operator's change) or gives another (it would overwrite it).

# list fields compared element by element (each host or project is in
# the list or not), and mapping fields key by key ('properties.team')
SET_FIELDS = ('hosts', 'projects')
MAP_FIELDS = ('properties',)
# the fields that name an object (no field of it)
KEY_FIELDS = {POOL: ('name',), FLAVOR: ('name',), IMAGE: ('name',),
              QUOTA: ('project', 'resource_class')}


def _field_values(kind: str, item: Mapping[str, typing.Any] | None
                  ) -> dict[str, typing.Any]:
    """{field: value} of what the document sets of ITEM (canonical; None:
    absent), a mapping field key by key."""
    found = {}
    for field in FIELDS[kind]:
        if item is None or field in KEY_FIELDS[kind]:
            continue
        value = item.get(field)
        if field in MAP_FIELDS:
            for key, each in (value or {}).items():
                found['%s.%s' % (field, key)] = each
        else:
            found[field] = value
    return found


def _overwritten(field: str, was: typing.Any, now: typing.Any,
                 want: typing.Any) -> bool:
    """Whether writing WANT over NOW undoes a change the cloud made to
    FIELD since it held WAS (None: not set)."""
    if now in (want, was):
        return False  # the apply leaves it, or the change is the author's
    if field not in SET_FIELDS:
        return True
    was, now, want = (set(value or ()) for value in (was, now, want))
    return any((e in now) != (e in want) and (e in now) != (e in was)
               for e in was | now | want)


def conflicts(kind: str, now: Mapping[str, typing.Any] | None,
              wanted: Mapping[str, typing.Any] | None,
              recorded: Mapping[str, typing.Any] | None
              ) -> list[dict[str, typing.Any]]:
    """The fields of an object of KIND that going from NOW (the cloud's,
    canonical) to WANTED (the document's) would change, and that the cloud
    changed since it held RECORDED (the document's record of it):
    [{'field', 'recorded', 'now', 'wanted'}] in the order of FIELDS (None:
    not set). A host or project list conflicts only where an element the
    cloud added or removed since would be removed or added back."""
    was, have, want = (_field_values(kind, item)
                       for item in (recorded, now, wanted))
    order = FIELDS[kind]
    found = []
    for field in sorted(set(was) | set(have) | set(want), key=lambda f: (
            order.index(f.split('.', 1)[0]), f)):
        if _overwritten(field, was.get(field), have.get(field),
                        want.get(field)):
            found.append({'field': field, 'recorded': was.get(field),
                          'now': have.get(field),
                          'wanted': want.get(field)})
    return found


def _shown(value: object) -> str:
    if value is None:
        return _('(not set)')
    if isinstance(value, list):
        return '[%s]' % ', '.join(str(v) for v in value)
    return _text(value)


def conflict_text(conflict: Mapping[str, typing.Any]) -> str:
    """'properties.team (recorded hpc, now ml-ops, wanted hpc)'."""
    return _('%(field)s (recorded %(recorded)s, now %(now)s, wanted '
             '%(wanted)s)') % {
        'field': conflict['field'], 'recorded': _shown(conflict['recorded']),
        'now': _shown(conflict['now']), 'wanted': _shown(conflict['wanted'])}


def unchecked(rows: Iterable[Mapping[str, typing.Any]]) -> str | None:
    """The note on the rows of ``diff`` whose object could not be checked
    for conflicts (the document records nothing of it), or None."""
    names = [row['object'] for row in rows if row['conflicts'] is None]
    if not names:
        return None
    return _('Not checked for changes made in the cloud since the export, '
             'as the document records no earlier value of them (written '
             'by hand, by a gpuclient older than the record, or added '
             'after the export): %s. What another operator changed there '
             'is overwritten without a word; export again ("openstack gpu '
             'export") to record it.') % ', '.join(names)


def diff(current: Mapping[str, typing.Any], wanted: Mapping[str, typing.Any],
         prune: bool = False,
         keep: Container[tuple[str, str | tuple[str, str]]] = (),
         recorded: Mapping[str, typing.Any] | None = None
         ) -> list[dict[str, typing.Any]]:
    """Rows from the cloud (CURRENT, ``from_cloud``) to the document
    (WANTED, ``substitute``): [{'kind', 'key', 'object', 'change', 'from',
    'to', 'conflicts'}], pools, flavors, images then quotas, each sorted
    by name.

    ``conflicts`` (``conflicts``) of an UPDATE or RECREATE row: the fields
    it changes that the cloud changed since the document's record
    (RECORDED, ``recorded``) of the object; None when there is no record
    of it and the row overwrites a value the cloud holds (nothing to tell
    whose it is by). Creating an object, or pruning one, overwrites no
    field: [].

    ``change``: CREATE (only in WANTED; an image that has no GPU property
    yet is an UPDATE: the document does not make images), UPDATE (``from``
    and ``to`` hold the fields that differ, ``extra_specs`` for derived
    extra specs the flavor lacks or has wrong), RECREATE (a field of
    RECREATE_FIELDS differs) and, for objects only in CURRENT, DELETE with
    PRUNE (an image loses its GPU properties, not itself), else UNTRACKED
    (listed, not drift); an object of KEEP ((kind, key) pairs: what a
    scope shares with objects outside it, ``Scope.keep``) is never
    deleted. Objects equal in both are left out.
    """
    rows = []
    for plural, kind in KINDS:
        have = {key_of(kind, i): i for i in current.get(plural) or ()}
        want = {key_of(kind, i): i for i in wanted.get(plural) or ()}
        was = {key_of(kind, i): i
               for i in (recorded or {}).get(plural) or ()}
        for key in sorted(set(have) | set(want)):
            old, new = have.get(key), want.get(key)
            found: list[dict[str, typing.Any]] | None = []
            if old is None and kind == IMAGE:
                old = {'name': key, 'properties': {}}
            if old is None:
                # the key is WANTED's: NEW is there
                change, before, after = CREATE, None, _public(
                    new)  # type: ignore[arg-type]
            elif new is None:
                # prune removes only what gpu apply made or took over
                change = (DELETE if prune and (kind, key) not in keep
                          and old.get(APPLIED) else UNTRACKED)
                before, after = _public(old), None
            else:
                fields = [f for f in FIELDS[kind] if old.get(f) != new.get(f)]
                before = {f: old.get(f) for f in fields}
                after = {f: new.get(f) for f in fields}
                drift = old.get(SPECS_DRIFT)
                if drift and not {'pool', 'gpus', 'numa_policy'} & set(
                        fields):
                    before['extra_specs'] = {k: v[0] for k, v in
                                             drift.items()}
                    after['extra_specs'] = {k: v[1] for k, v in
                                            drift.items()}
                if not before:
                    continue
                change = (RECREATE if set(fields) & set(
                    RECREATE_FIELDS[kind]) else UPDATE)
                if key in was:
                    found = conflicts(kind, old, new, was[key])
                elif conflicts(kind, old, new, None):
                    # it overwrites values the cloud holds: since when?
                    found = None
            rows.append({'kind': kind, 'key': key,
                         'object': label(kind, key), 'change': change,
                         'from': before, 'to': after, 'conflicts': found})
    return rows


# shadows the module exit_status imported above (read for EXIT_* before
# this def): mypy keeps a name to one meaning
def exit_status(  # type: ignore[no-redef]
        rows: Iterable[Mapping[str, typing.Any]]) -> int:
    """EXIT_DRIFT when a row is a change (untracked objects are not),
    else EXIT_IN_SYNC."""
    if any(row['change'] in DRIFT for row in rows):
        return EXIT_DRIFT
    return EXIT_IN_SYNC


# -- scope: --pool of gpu diff and gpu apply --------------------------------

class Scope:
    """The part of the GPU layer that ``gpu diff --pool`` and ``gpu apply
    --pool`` look at: the pools NAMES, the flavors of those pools (by
    their ``pool``), the quotas on the resource classes of those pools
    (CLASSES: as ``gpu export --pool`` writes them), and no image (images
    belong to no pool). ``shared``: the classes of CLASSES that a pool
    outside the scope has too; a quota on one is compared and set, but
    never pruned (it limits that other pool's GPUs as well)."""

    def __init__(self, names: Iterable[str], classes: Iterable[str],
                 shared: Iterable[str] = ()) -> None:
        self.names = set(names)
        self.classes = set(classes)
        self.shared = set(shared)

    def holds(self, kind: str, item: Mapping[str, typing.Any]) -> bool:
        """Whether the canonical (or checked) object ITEM of KIND is in
        the scope."""
        if kind == POOL:
            return item['name'] in self.names
        if kind == FLAVOR:
            return item['pool'] in self.names
        if kind == QUOTA:
            return item['resource_class'] in self.classes
        return False

    def narrow(self, doc: Mapping[str, typing.Any]) -> dict[str, typing.Any]:
        """DOC (canonical or checked) with the objects of the scope only."""
        result: dict[str, typing.Any] = {'version': doc['version']}
        for plural, kind in KINDS:
            result[plural] = [item for item in doc.get(plural) or ()
                              if self.holds(kind, item)]
        return result

    def references(self, doc: Mapping[str, typing.Any]
                   ) -> list[tuple[tuple[str | int, ...], str, typing.Any]]:
        """``references`` of DOC (checked) in the scope only: what is left
        out is not resolved against the cloud."""
        # a reference's path is (plural, index, ...)
        return [(path, what, value) for path, what, value in references(doc)
                if self.holds(dict(KINDS)[path[0]],  # type: ignore[index]
                              doc[path[0]][path[1]])]  # type: ignore[index]

    def keep(self, current: Mapping[str, typing.Any]
             ) -> set[tuple[str, str | tuple[str, str]]]:
        """(kind, key) of the objects of CURRENT that prune leaves: quotas
        on a class shared with a pool outside the scope."""
        return {(QUOTA, key_of(QUOTA, item))
                for item in current.get('quotas') or ()
                if item['resource_class'] in self.shared}


def scope(names: Iterable[str],
          cloud_pools: Mapping[str, Mapping[str, typing.Any]],
          wanted: Mapping[str, typing.Any]) -> Scope:
    """The ``Scope`` of the pools NAMES (``--pool``), each a pool of the
    cloud (CLOUD_POOLS: {name: pool}) or of the document WANTED (checked).
    CommandError for a name that is neither, saying what to do."""
    names = list(dict.fromkeys(names))
    documented = {p['name']: p for p in wanted['pools']}
    unknown = [n for n in names if n not in cloud_pools
               and n not in documented]
    if unknown:
        raise exceptions.CommandError(
            _('--pool %(names)s: no such pool in the document nor in the '
              'cloud (pools of the document: %(doc)s; of the cloud: '
              '%(cloud)s). Check the name, or describe the pool in the '
              'document to create it.')
            % {'names': ', '.join(unknown),
               'doc': ', '.join(sorted(documented)) or _('none'),
               'cloud': ', '.join(sorted(cloud_pools)) or _('none')})
    classes: set[str]
    outside: set[str]
    classes, outside = set(), set()
    for pools in (cloud_pools, documented):
        for name, pool in pools.items():
            target = classes if name in names else outside
            target.add(pool['resource_class'])
    return Scope(names, classes, classes & outside)


def leaving_hosts(current: Mapping[str, typing.Any],
                  wanted: Mapping[str, typing.Any],
                  prune: bool = False) -> dict[str, list[str]]:
    """{pool name: [hosts]} that the change from CURRENT to WANTED (both
    canonical) takes out of a pool: hosts a pool of both no longer has,
    and, with PRUNE, every host of a pool WANTED drops."""
    want = {p['name']: p for p in wanted['pools']}
    found = {}
    for pool in current['pools']:
        new = want.get(pool['name'])
        if new is None:
            gone = list(pool['hosts']) if prune else []
        else:
            gone = [h for h in pool['hosts'] if h not in new['hosts']]
        if gone:
            found[pool['name']] = gone
    return found
