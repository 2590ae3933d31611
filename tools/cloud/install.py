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

"""The test cloud's install: Debian packages and the venv, only what is
missing or changed (``install``).

Standard library only: it runs with the system python3 before the cloud's
venv exists.
"""

import hashlib
import os
import shutil
import subprocess
import sys
import sysconfig

from cloud import base

REQUIREMENTS = os.path.join(base.CLOUD_DIR, 'requirements.txt')
STAMP = os.path.join(base.VENV, '.gpuclient-requirements.sha256')

# prometheus: the cloud's metrics store that gpu ... --utilisation reads;
# prometheus-node-exporter: per-NUMA-node memory of some fake hosts
# (Debian's; their systemd services are not used)
APT_PACKAGES = ('rabbitmq-server', 'mariadb-server', 'prometheus',
                'prometheus-node-exporter')


def _missing_apt_packages():
    missing = []
    if not os.path.exists(os.path.join(base.BIN, 'python')):
        # what "python3 -m venv" and building uWSGI need
        try:
            import ensurepip  # noqa: F401
        except ImportError:
            missing.append('python3-venv')
        include = sysconfig.get_paths()['include']
        if not os.path.exists(os.path.join(include, 'Python.h')):
            missing.append('python3-dev')
    for pkg in APT_PACKAGES:
        out = subprocess.run(
            ['dpkg-query', '-W', '-f=${Status}', pkg],
            capture_output=True, text=True)
        if 'install ok installed' not in out.stdout:
            missing.append(pkg)
    if shutil.which('gcc') is None and not os.path.exists(STAMP):
        missing.append('gcc')  # uWSGI is built from source by pip
    return missing


def _requirements_hash():
    with open(REQUIREMENTS, 'rb') as f:
        return hashlib.sha256(f.read()).hexdigest()


def install(timeline):
    """Debian packages and the venv, only what is missing or changed."""
    missing = _missing_apt_packages()
    if missing:
        env = dict(os.environ, DEBIAN_FRONTEND='noninteractive')
        timeline('apt-get install %s' % ' '.join(missing))
        subprocess.run(['apt-get', 'update', '-q'], check=True, env=env,
                       stdout=subprocess.DEVNULL)
        # The packages' postinst cannot start the daemons without an init
        # system ("policy-rc.d denied execution"): harmless, up starts them.
        subprocess.run(['apt-get', 'install', '-y', '-q',
                        '--no-install-recommends', *missing],
                       check=True, env=env, stdout=subprocess.DEVNULL)
        timeline('apt packages installed')
    want = _requirements_hash()
    have = None
    if os.path.exists(STAMP):
        with open(STAMP) as f:
            have = f.read().strip()
    if have == want and os.path.exists(os.path.join(base.BIN, 'python')):
        return
    if not os.path.exists(os.path.join(base.BIN, 'python')):
        timeline('creating venv %s' % base.VENV)
        subprocess.run([sys.executable, '-m', 'venv', base.VENV], check=True)
    timeline('pip install -r tools/cloud/requirements.txt')
    subprocess.run([os.path.join(base.BIN, 'pip'), 'install', '-q',
                    '--disable-pip-version-check', '-r', REQUIREMENTS],
                   check=True)
    with open(STAMP, 'w') as f:
        f.write(want + '\n')
    timeline('venv ready')
