"""A small standard-library REST client for the test cloud's APIs.

tools/testcloud uses it for what must happen before (or without) the venv's
openstack client: registering services in Keystone, uploading the image,
readiness checks and seeding Placement.  One token per Session; thread-safe
(every request is its own connection: the uWSGI servers close them anyway).
"""

import json
import urllib.error
import urllib.request

KEYSTONE = 'http://127.0.0.1:5000/v3'
ENDPOINTS = {
    'identity': KEYSTONE,
    'compute': 'http://127.0.0.1:8774/v2.1',
    'placement': 'http://127.0.0.1:8778',
    'image': 'http://127.0.0.1:9292',
    # the neutron READ-ONLY STUB (cloud/neutron_stub.py), not Neutron
    'network': 'http://127.0.0.1:9696',
}
MICROVERSION_HEADERS = {
    'compute': 'X-OpenStack-Nova-API-Version',
    'placement': 'OpenStack-API-Version',
}


class APIError(Exception):
    def __init__(self, method, url, status, body):
        super().__init__('%s %s -> %s %s' % (method, url, status,
                                             body[:300]))
        self.status = status
        self.body = body


def request(method, url, body=None, headers=None, timeout=30,
            raw=False):
    """Return (status, parsed JSON or None, response headers)."""
    headers = dict(headers or {})
    data = None
    if body is not None:
        if raw:
            data = body
            headers.setdefault('Content-Type', 'application/octet-stream')
        else:
            data = json.dumps(body).encode()
            headers.setdefault('Content-Type', 'application/json')
    headers.setdefault('Accept', 'application/json')
    req = urllib.request.Request(url, data=data, method=method,
                                 headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            payload = resp.read()
            status, rheaders = resp.status, resp.headers
    except urllib.error.HTTPError as exc:
        raise APIError(method, url, exc.code,
                       exc.read().decode(errors='replace')) from None
    parsed = None
    if payload:
        try:
            parsed = json.loads(payload)
        except ValueError:
            parsed = None
    return status, parsed, rheaders


class Session:
    """A Keystone-scoped session (password auth, project scope)."""

    def __init__(self, username='admin', password='secret',
                 project='admin', timeout=30):
        self.timeout = timeout
        body = {'auth': {
            'identity': {'methods': ['password'], 'password': {'user': {
                'name': username, 'domain': {'id': 'default'},
                'password': password}}},
            'scope': {'project': {'name': project,
                                  'domain': {'id': 'default'}}}}}
        _, _, headers = request('POST', KEYSTONE + '/auth/tokens', body,
                                timeout=timeout)
        self.token = headers['X-Subject-Token']

    def call(self, method, service, path, body=None, microversion=None,
             expect=None, raw=False, headers=None):
        """Call SERVICE's PATH; return parsed JSON (or None).

        expect: statuses (e.g. {404}) to return None for instead of raising.
        """
        hdrs = {'X-Auth-Token': self.token}
        hdrs.update(headers or {})
        if microversion:
            name = MICROVERSION_HEADERS[service]
            value = microversion
            if service == 'placement':
                value = 'placement ' + microversion
            hdrs[name] = value
        url = ENDPOINTS[service] + path
        try:
            _, parsed, _ = request(method, url, body, hdrs,
                                   timeout=self.timeout, raw=raw)
        except APIError as exc:
            if expect and exc.status in expect:
                return None
            raise
        return parsed

    def get(self, service, path, **kw):
        return self.call('GET', service, path, **kw)

    def post(self, service, path, body, **kw):
        return self.call('POST', service, path, body, **kw)

    def put(self, service, path, body, **kw):
        return self.call('PUT', service, path, body, **kw)

    def delete(self, service, path, **kw):
        return self.call('DELETE', service, path, **kw)


def _one(items):
    return items[0] if items else None


def ensure_service(session, name, stype, url, description=''):
    """Keystone service STYPE with public/internal/admin endpoints URL."""
    idn = 'identity'
    svc = _one([s for s in session.get(idn, '/services')['services']
                if s['type'] == stype])
    if svc is None:
        svc = session.post(idn, '/services', {'service': {
            'name': name, 'type': stype,
            'description': description}})['service']
    have = {e['interface'] for e in session.get(
        idn, '/endpoints?service_id=%s' % svc['id'])['endpoints']}
    for iface in ('public', 'internal', 'admin'):
        if iface not in have:
            session.post(idn, '/endpoints', {'endpoint': {
                'service_id': svc['id'], 'interface': iface,
                'url': url, 'region_id': 'RegionOne'}})
    return svc


def ensure_service_user(session, name, password):
    """Service user NAME in project service with roles admin and service
    (what a service's keystone_authtoken and service clients log in as)."""
    idn = 'identity'
    project = _one(session.get(idn, '/projects?name=service')['projects'])
    user = _one(session.get(idn, '/users?name=%s' % name)['users'])
    if user is None:
        user = session.post(idn, '/users', {'user': {
            'name': name, 'password': password, 'domain_id': 'default',
            'default_project_id': project['id']}})['user']
    for role_name in ('admin', 'service'):
        role = _one(session.get(idn, '/roles?name=%s' % role_name)['roles'])
        session.put(idn, '/projects/%s/users/%s/roles/%s' % (
            project['id'], user['id'], role['id']), None)
    return user


def register(session, demo_project, demo_user, password,
             operator_user=None):
    """Service users, services, endpoints, and the demo project and user.

    Idempotent (safe to run again on a registered Keystone).
    """
    idn = 'identity'

    def find(collection, key, name):
        return _one(session.get(idn, '/%s?name=%s' % (collection, name))
                    [key])

    def project(name):
        return find('projects', 'projects', name) or session.post(
            idn, '/projects', {'project': {
                'name': name, 'domain_id': 'default'}})['project']

    def user(name, project_id):
        return find('users', 'users', name) or session.post(
            idn, '/users', {'user': {
                'name': name, 'password': password, 'domain_id': 'default',
                'default_project_id': project_id}})['user']

    def grant(project_id, user_id, role_name):
        role = find('roles', 'roles', role_name)
        session.put(idn, '/projects/%s/users/%s/roles/%s' % (
            project_id, user_id, role['id']), None)

    service_project = project('service')
    services = {
        # user: (service type, endpoint)
        'placement': ('placement', ENDPOINTS['placement']),
        'nova': ('compute', ENDPOINTS['compute']),
        'glance': ('image', ENDPOINTS['image']),
        'neutron-stub': ('network', ENDPOINTS['network']),
    }
    for name, (stype, url) in services.items():
        if name != 'neutron-stub':
            svc_user = user(name, service_project['id'])
            for role in ('admin', 'service'):
                grant(service_project['id'], svc_user['id'], role)
        ensure_service(session, name, stype, url, description=(
            'neutron READ-ONLY STUB of the gpuclient test cloud, not '
            'Neutron') if stype == 'network' else '')
    demo = project(demo_project)
    member = user(demo_user, demo['id'])
    grant(demo['id'], member['id'], 'member')
    if operator_user:
        # admin, but Nova's policy override denies it flavor extra specs
        if find('roles', 'roles', 'no_extra_specs') is None:
            session.post(idn, '/roles', {'role': {'name': 'no_extra_specs'}})
        admin = project('admin')
        operator = user(operator_user, admin['id'])
        for role in ('admin', 'no_extra_specs'):
            grant(admin['id'], operator['id'], role)


def upload_image(session, name, data):
    """Upload a public raw image NAME (skipped if it exists)."""
    found = session.get('image', '/v2/images?name=%s' % name)['images']
    if found:
        return found[0]['id']
    image = session.post('image', '/v2/images', {
        'name': name, 'disk_format': 'raw', 'container_format': 'bare',
        'visibility': 'public', 'min_disk': 0, 'min_ram': 0})
    session.put('image', '/v2/images/%s/file' % image['id'], data,
                raw=True)
    return image['id']
