"""Neutron READ-ONLY STUB of the test cloud (not a real Neutron).

The one faked service of the test cloud.  gpuclient never calls Neutron,
and every server of the test cloud is booted with ``--nic none``, but nova
still asks Neutron about ports and security groups when it shows or deletes
a server and in compute periodic tasks.  With no ports anywhere, empty
collections are the truthful answer, and that is all this WSGI app gives:
GET on a known collection returns it empty, everything else is 404.
"""

import json
import re

# URL collection -> JSON key of its list
COLLECTIONS = {
    'ports': 'ports',
    'networks': 'networks',
    'subnets': 'subnets',
    'subnetpools': 'subnetpools',
    'security-groups': 'security_groups',
    'security-group-rules': 'security_group_rules',
    'floatingips': 'floatingips',
    'routers': 'routers',
    'trunks': 'trunks',
    'extensions': 'extensions',
    'qos/policies': 'policies',
    'segments': 'segments',
    'network-ip-availabilities': 'network_ip_availabilities',
}
_PATH = re.compile(r'^/v2\.0/(?P<coll>[a-z/-]+?)(?:\.json)?/?$')


def _reply(start_response, status, body):
    data = json.dumps(body).encode()
    start_response(status, [('Content-Type', 'application/json'),
                            ('Content-Length', str(len(data)))])
    return [data]


def application(environ, start_response):
    path = environ.get('PATH_INFO') or '/'
    method = environ['REQUEST_METHOD']
    if path in ('', '/'):
        host = environ.get('HTTP_HOST', '127.0.0.1:9696')
        return _reply(start_response, '200 OK', {'versions': [{
            'id': 'v2.0', 'status': 'CURRENT',
            'links': [{'rel': 'self',
                       'href': 'http://%s/v2.0/' % host}]}]})
    match = _PATH.match(path)
    if method == 'GET' and match and match.group('coll') in COLLECTIONS:
        key = COLLECTIONS[match.group('coll')]
        return _reply(start_response, '200 OK', {key: []})
    return _reply(start_response, '404 Not Found', {'NeutronError': {
        'type': 'NotFound', 'detail': '',
        'message': 'neutron read-only stub of the gpuclient test cloud: '
                   '%s %s is not supported' % (method, path)}})
