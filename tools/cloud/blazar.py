"""Blazar in the test cloud: reservations of GPU hosts (issue 40, rule 6).

Standard library only, like the rest of tools/testcloud. blazar 18.0.0
(2026.2, beside Nova 34) from tools/cloud/requirements.txt: its API under
uWSGI on port 1234 (``blazar.api.wsgi_app``, through ``application``
below) and ``blazar-manager`` over the cloud's RabbitMQ, against the
cloud's MariaDB, registered in Keystone (service type ``reservation``,
service user ``blazar``), with the host and flavor-instance plugins and the
freepool aggregate Blazar enrols hosts into (``FREEPOOL``). Nova's
scheduler gets blazar-nova's ``BlazarFilter`` from etc/nova.conf.

For ``tools/testcloud`` (cloud.stack):

* ``write_config()`` renders ``etc/blazar/blazar.conf``;
* ``start(timeline)`` does every remaining step, each skipped when already
  done (database, schema, Keystone, freepool, processes) and returns when
  the API answers; it can be called into a running cloud;
* ``stop()`` stops both processes; ``process_names()``: their names in
  ``<state>/pids``, for cloud.stack's stop;
* ``status()`` returns printable lines.

Also runnable on its own, with tools/ on sys.path::

    cd tools && python3 -m cloud.blazar start|stop|status
"""

import argparse
import os

from cloud import api
from cloud import base

PORT = 1234
ENDPOINT = 'http://127.0.0.1:%d' % PORT
DB = 'blazar'
SERVICE_USER = 'blazar'
SERVICE_TYPE = 'reservation'
API = 'blazar-api'
MANAGER = 'blazar-manager'
FREEPOOL = 'freepool'


def _etc():
    return os.path.join(base.STATE, 'etc', 'blazar')


def _conf():
    return os.path.join(_etc(), 'blazar.conf')


def application(environ, start_response):
    """Blazar's API as uWSGI's callable (blazar.api.wsgi_app has only
    init_app); reads $OS_BLAZAR_CONFIG_DIR/blazar.conf."""
    global _APP
    if _APP is None:
        from blazar.api import wsgi_app
        _APP = wsgi_app.init_app()
    return _APP(environ, start_response)


_APP = None


def write_config():
    for sub in ('etc/blazar', 'blazar/locks', 'logs'):
        os.makedirs(os.path.join(base.STATE, sub), exist_ok=True)
    base.render('blazar.conf', _conf(), port=PORT, password=base.PASSWORD,
                db_blazar=base.db_url(DB), freepool=FREEPOOL,
                authtoken_blazar=base.authtoken(SERVICE_USER))


def setup_db():
    """Create the database and its schema (skipped if they exist)."""
    base.ensure_database(DB, [os.path.join(base.BIN, 'blazar-db-manage'),
                              '--config-file', _conf(), 'upgrade', 'head'],
                         'setup-blazar.log')


def register(session):
    """Service user blazar (admin, service), service and endpoints."""
    api.ensure_service_user(session, SERVICE_USER, base.PASSWORD)
    api.ensure_service(session, 'blazar', SERVICE_TYPE, ENDPOINT + '/v1')


def ensure_freepool(session):
    """The freepool aggregate Blazar enrols hosts into (its operator
    creates it: Blazar does not)."""
    aggs = session.get('compute', '/os-aggregates')['aggregates']
    if not any(a['name'] == FREEPOOL for a in aggs):
        session.post('compute', '/os-aggregates',
                     {'aggregate': {'name': FREEPOOL}})


def _start_api():
    argv = [os.path.join(base.BIN, 'uwsgi'),
            '--http-socket', '127.0.0.1:%d' % PORT,
            '--module', 'cloud.blazar:application', '--virtualenv', base.VENV,
            '--pythonpath', base.TOOLS,
            '--master', '--processes', '1', '--threads', '2',
            '--enable-threads', '--lazy-apps', '--die-on-term',
            '--need-app', '--buffer-size', '65535',
            '--worker-reload-mercy', '3', '--reload-mercy', '3',
            '--add-header', 'Connection: close',
            '--procname-prefix-spaced', 'gpuclient-' + API,
            '--env', 'OS_BLAZAR_CONFIG_DIR=%s' % _etc(),
            '--logto', os.path.join(base.LOGS, API + '-uwsgi.log')]
    base.spawn(API, argv)


def _start_manager():
    base.spawn(MANAGER, [os.path.join(base.BIN, MANAGER), '--config-file',
                         _conf(), '--log-file',
                         os.path.join(base.LOGS, MANAGER + '.log')])


def start(timeline):
    """Bring Blazar up (each step skipped when done); returns when its API
    answers."""
    if not os.path.exists(_conf()):
        write_config()
    setup_db()
    timeline('blazar database ready')
    session = api.Session()
    register(session)
    base.wait('nova-api', base.http_up(api.ENDPOINTS['compute']), 120)
    ensure_freepool(session)
    if not base.running(MANAGER):
        _start_manager()
    if not base.running(API):
        _start_api()
    base.wait('blazar API', base.http_up(ENDPOINT + '/'), 60)
    timeline('blazar (API on port %d, manager) up' % PORT)


def process_names(exclude=()):
    """Recorded names of the processes this module starts (but EXCLUDE),
    when this cloud has Blazar configured."""
    if not os.path.exists(_conf()):
        return []
    return [n for n in (API, MANAGER) if n not in exclude]


def stop():
    """Stop Blazar's API and manager (tools/testcloud down stops
    process_names() with the other services)."""
    base.stop_processes(process_names())


def status():
    """Printable lines: Blazar's processes (empty without Blazar)."""
    return ['%s %s (pid %s)' % (
        name, 'up' if base.running(name) else 'down',
        base.read_pid(name) or '-') for name in process_names()]


def main(argv=None):
    parser = argparse.ArgumentParser(prog='python3 -m cloud.blazar')
    parser.add_argument('command', choices=('start', 'stop', 'status'))
    args = parser.parse_args(argv)
    if args.command == 'start':
        write_config()
        start(base.Timeline())
    elif args.command == 'stop':
        stop()
    else:
        print('\n'.join(status()))
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
