#!/usr/bin/env python3
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

"""A stand-in for NVIDIA's DCGM exporter: the test cloud's GPU metrics.

Serves ``/metrics`` in the Prometheus text format with the metric and
label names of dcgm-exporter, for fake devices listed in a JSON file that
is read again on every scrape, so a test sets a value by rewriting the
file::

    {"hostname": "gpu-vgpu-1",
     "devices": [
       {"gpu": 0, "pci_bus_id": "00000000:84:00.0", "util": 3,
        "fb_used": 1024, "fb_free": 80000},
       {"gpu": 1, "pci_bus_id": "00000000:41:00.0", "gpu_instance": 1,
        "profile": "1g.10gb", "engine_active": 0.02, "fb_used": 10},
       {"hostname": "gpu-vgpu-2", "gpu": 0, "pci_bus_id": "...", ...}]}

Per device: ``util`` (percent) is DCGM_FI_DEV_GPU_UTIL, ``engine_active``
(0..1) DCGM_FI_PROF_GR_ENGINE_ACTIVE, ``fb_used``/``fb_free`` (MiB)
DCGM_FI_DEV_FB_USED/FREE, ``xid`` DCGM_FI_DEV_XID_ERRORS (the last XID,
held as the real exporter holds it: see below),
``row_remap_failure`` (0/1) DCGM_FI_DEV_ROW_REMAP_FAILURE,
``uncorrectable_remapped_rows`` DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS,
``health`` DCGM_EXP_GPU_HEALTH_STATUS (DCGM's result: 0 pass, 10 warn, 20
fail; a number is the ``ALL`` watch, a dict {watch: result} one series
per ``health_watch``); a field left out is a metric not served (as
the real exporter serves no GPU_UTIL figure for a MIG instance).
``licence`` (0/1) DCGM_FI_DEV_VGPU_LICENSE_STATUS (field 526, served by
an exporter in a vGPU guest), ``instance_licence`` (0/1)
DCGM_FI_DEV_VGPU_INSTANCE_LICENSE_STATUS (field 532, host side, one
device entry per vGPU instance) with ``vm_id`` (field 520,
DCGM_FI_DEV_VGPU_VM_ID: the libvirt domain UUID, which is the Nova
server's) as a label. ``driver`` is the DCGM_FI_DRIVER_VERSION label on
every series of the device, as dcgm-exporter's default counters add it.
A device with ``"absent": true`` is not served at all (a GPU that fell
off the bus, which DCGM no longer counts). Labels
as dcgm-exporter writes them: gpu, UUID, pci_bus_id, device, Hostname
(``--hostname-label hostname`` for the newer spelling), and GPU_I_PROFILE,
GPU_I_ID for a MIG instance; ``--model-label`` adds dcgm-exporter's
``modelName`` (left out by default: ``promtool check metrics`` flags its
camelCase). Standard library only.

The XID is held as dcgm-exporter holds it (dcgm-exporter#500, DCGM#277):
once a scrape has served a device a non-zero ``xid``, the device keeps
it when the file then says 0 or leaves the field out, until another
non-zero XID replaces it or the device's ``reset`` changes (any value: a
GPU reset, a driver or exporter restart), after which it serves what the
file says. A device is known by its host, ``pci_bus_id``,
``gpu_instance``, ``vm_id``, ``labels`` and ``owner`` (the tests tag
their devices: one test's XID is not another's); an entry removed from
the file is forgotten (its exporter is gone).

    python3 tools/cloud/dcgm_exporter.py --devices FILE [--port 9400]
"""

import argparse
import http.server
import json
import sys
import threading
import uuid

# (field, metric, type, help) in dcgm-exporter's order
METRICS = (
    ('util', 'DCGM_FI_DEV_GPU_UTIL', 'gauge', 'GPU utilization (in %).'),
    ('fb_free', 'DCGM_FI_DEV_FB_FREE', 'gauge',
     'Framebuffer memory free (in MiB).'),
    ('fb_used', 'DCGM_FI_DEV_FB_USED', 'gauge',
     'Framebuffer memory used (in MiB).'),
    ('xid', 'DCGM_FI_DEV_XID_ERRORS', 'gauge',
     'Value of the last XID error encountered.'),
    ('engine_active', 'DCGM_FI_PROF_GR_ENGINE_ACTIVE', 'gauge',
     'Ratio of time the graphics engine is active.'),
    # a counter in dcgm-exporter: gauge here, as promtool's lint wants a
    # counter named *_total
    ('uncorrectable_remapped_rows', 'DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS',
     'gauge', 'Number of remapped rows for uncorrectable errors'),
    ('row_remap_failure', 'DCGM_FI_DEV_ROW_REMAP_FAILURE', 'gauge',
     'Whether remapping of rows has failed'),
    ('health', 'DCGM_EXP_GPU_HEALTH_STATUS', 'gauge',
     'DCGM reported health status'),
    # field 526, in a guest: 0 the vGPU is not licensed, 1 it is
    ('licence', 'DCGM_FI_DEV_VGPU_LICENSE_STATUS', 'gauge',
     'vGPU License status'),
    # field 532 on the host, one series per vGPU instance, its VM (field
    # 520) as the DCGM_FI_DEV_VGPU_VM_ID label
    ('instance_licence', 'DCGM_FI_DEV_VGPU_INSTANCE_LICENSE_STATUS', 'gauge',
     'License state of the vGPU instance'),
)
CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8'


def _escape(value):
    return (str(value).replace('\\', '\\\\').replace('"', '\\"')
            .replace('\n', '\\n'))


def _number(value):
    number = float(value)
    if number == int(number) and abs(number) < 1e15:
        return str(int(number))
    return repr(number)


def _card(pci_bus_id):
    """One card's address however it is written (00000000:C2:00.0,
    0000:c2:00.0): a card has one UUID."""
    parts = str(pci_bus_id).lower().split(':')
    try:
        parts[0] = '%x' % int(parts[0], 16)
    except ValueError:
        pass
    return ':'.join(parts)


def labels_of(device, hostname=None, hostname_label='Hostname',
              model_label=False):
    """The label pairs of one device, in dcgm-exporter's order."""
    gpu = device.get('gpu', 0)
    pairs = [
        ('gpu', gpu),
        # a stable UUID per host and card, as a real card has
        ('UUID', device.get('uuid') or 'GPU-%s' % uuid.uuid5(
            uuid.NAMESPACE_OID, '%s/%s' % (device.get('hostname') or hostname,
                                          _card(device.get('pci_bus_id'))))),
        ('pci_bus_id', device.get('pci_bus_id', '00000000:00:00.0')),
        ('device', device.get('device') or 'nvidia%s' % gpu),
    ]
    if model_label:
        # dcgm-exporter's camelCase label, which promtool's lint flags
        pairs.append(('modelName', device.get('model') or 'NVIDIA H100'))
    pairs.append((hostname_label,
                  device.get('hostname') or hostname or 'localhost'))
    if device.get('gpu_instance') is not None:
        pairs += [('GPU_I_PROFILE', device.get('profile') or ''),
                  ('GPU_I_ID', device['gpu_instance'])]
    if device.get('driver'):
        pairs.append(('DCGM_FI_DRIVER_VERSION', device['driver']))
    if device.get('vm_id'):
        pairs.append(('DCGM_FI_DEV_VGPU_VM_ID', device['vm_id']))
    for key, value in sorted((device.get('labels') or {}).items()):
        pairs.append((key, value))
    return pairs


def _values(field, value):
    """[(extra label pairs, value)] of one device's FIELD: the health
    status is one series per health watch."""
    if field != 'health':
        return [([], value)]
    if not isinstance(value, dict):
        value = {'ALL': value}
    return [([('health_watch', watch), ('health_error_code', 'DCGM_FR_OK'
                                         if not result else 'DCGM_FR_XID')],
             result) for watch, result in sorted(value.items())]


def render(document, hostname_label='Hostname', model_label=False):
    """The /metrics text of a devices DOCUMENT (the JSON file's dict)."""
    # a GPU that fell off the bus: DCGM no longer sees it
    devices = [d for d in document.get('devices') or ()
               if not d.get('absent')]
    hostname = document.get('hostname')
    lines = []
    for field, metric, kind, text in METRICS:
        samples = [d for d in devices if d.get(field) is not None]
        if not samples:
            continue
        lines.append('# HELP %s %s' % (metric, text))
        lines.append('# TYPE %s %s' % (metric, kind))
        for device in samples:
            pairs = labels_of(device, hostname, hostname_label, model_label)
            for extra, value in _values(field, device[field]):
                labels = ','.join('%s="%s"' % (k, _escape(v))
                                  for k, v in pairs + extra)
                lines.append('%s{%s} %s' % (metric, labels, _number(value)))
    return '\n'.join(lines) + '\n'


def _device_key(device, hostname):
    return json.dumps([device.get('owner'), device.get('hostname')
                       or hostname, device.get('pci_bus_id'),
                       device.get('gpu_instance'), device.get('vm_id'),
                       device.get('labels') or {}], sort_keys=True,
                      default=str)


class XidMemory:
    """The XID each device was last served, held as DCGM holds it: until
    another XID replaces it or the device's ``reset`` changes."""

    def __init__(self):
        self._held = {}  # device key -> (its reset, the XID served)
        self._lock = threading.Lock()

    def apply(self, document):
        """DOCUMENT with each device's held XID where it says 0 or
        nothing; what it says is remembered for the next scrape."""
        hostname = document.get('hostname')
        devices, held = [], {}
        with self._lock:
            for device in document.get('devices') or ():
                key = _device_key(device, hostname)
                reset, xid = device.get('reset'), device.get('xid')
                before = self._held.get(key)
                if not xid and before and before[0] == reset and before[1]:
                    device = dict(device, xid=before[1])
                    xid = before[1]
                held[key] = (reset, xid)
                devices.append(device)
            self._held = held
        return dict(document, devices=devices)


def read(path):
    with open(path) as f:
        return json.load(f)


def handler(path, hostname_label='Hostname', model_label=False,
            memory=None):
    memory = memory or XidMemory()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's name
            if self.path.split('?')[0] != '/metrics':
                self.send_error(404)
                return
            try:
                body = render(memory.apply(read(path)), hostname_label,
                              model_label).encode()
            except (OSError, ValueError) as exc:
                self.send_error(500, 'cannot read %s: %s' % (path, exc))
                return
            self.send_response(200)
            self.send_header('Content-Type', CONTENT_TYPE)
            self.send_header('Content-Length', str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass  # quiet: one scrape a second

    return Handler


def serve(path, host='127.0.0.1', port=9400, hostname_label='Hostname',
          model_label=False):
    """A server for PATH's devices (port 0: a free one); the caller runs
    its serve_forever() and shutdown()."""
    return http.server.ThreadingHTTPServer(
        (host, port), handler(path, hostname_label, model_label))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--devices', required=True,
                        help='JSON file of the devices (read per scrape)')
    parser.add_argument('--listen', default='127.0.0.1')
    parser.add_argument('--port', type=int, default=9400,
                        help='0 for a free port (printed on stdout)')
    parser.add_argument('--hostname-label', default='Hostname',
                        choices=('Hostname', 'hostname'))
    parser.add_argument('--model-label', action='store_true',
                        help="add dcgm-exporter's modelName label")
    args = parser.parse_args(argv)
    server = serve(args.devices, args.listen, args.port,
                   args.hostname_label, args.model_label)
    print('listening on http://%s:%d/metrics' % server.server_address[:2],
          flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == '__main__':
    sys.exit(main())
