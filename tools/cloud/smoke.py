"""tools/testcloud smoke: a quick end-to-end check with the real CLI.

Boots one server with a passthrough flavor (pci_passthrough:alias=h100:1),
checks its CUSTOM_PCI_10DE_2331 allocation, deletes it and its flavor.
Uses the cloud venv's openstack; about half a minute.
"""

import json
import os
import subprocess
import time
import uuid


def main(bindir, state, image):
    t0 = time.monotonic()
    env = dict(os.environ, PYTHONWARNINGS='ignore',
               OS_CLIENT_CONFIG_FILE=os.path.join(state, 'clouds.yaml'),
               OS_CLOUD='gpuclient-admin')

    def osc(*args, parse=True):
        argv = [os.path.join(bindir, 'openstack'), *args]
        if parse:
            argv += ['-f', 'json']
        print('[%5.1fs] $ openstack %s' % (time.monotonic() - t0,
                                          ' '.join(args)), flush=True)
        out = subprocess.run(argv, env=env, capture_output=True, text=True)
        if out.returncode:
            raise RuntimeError(out.stderr.strip())
        return json.loads(out.stdout) if parse and out.stdout.strip() else None

    name = 'smoke-%s' % uuid.uuid4().hex[:6]
    osc('flavor', 'create', '--vcpus', '1', '--ram', '512', '--disk', '1',
        '--property', 'pci_passthrough:alias=h100:1', name)
    try:
        server = osc('--os-compute-api-version', '2.74', 'server', 'create',
                     '--flavor', name, '--image', image, '--nic', 'none',
                     '--wait', name)
        allocations = osc('resource', 'provider', 'allocation', 'show',
                          server['id'])
        gpus = sum(a['resources'].get('CUSTOM_PCI_10DE_2331', 0)
                   for a in allocations)
        print('server %s: %s on %s, %d CUSTOM_PCI_10DE_2331' % (
            name, server['status'], server['OS-EXT-SRV-ATTR:host'], gpus))
        ok = server['status'] == 'ACTIVE' and gpus == 1
    except RuntimeError as exc:
        print('FAILED: %s' % exc)
        ok = False
    finally:
        subprocess.run([os.path.join(bindir, 'openstack'), 'server',
                        'delete', '--wait', name], env=env,
                       capture_output=True)
        osc('flavor', 'delete', name, parse=False)
    print('SMOKE %s (%.1fs)' % ('OK' if ok else 'FAILED',
                                time.monotonic() - t0))
    return 0 if ok else 1
