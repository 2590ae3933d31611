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

"""The textfile, written so that node_exporter never reads half of it.

The text goes to a temporary file beside the final one, named so that
node_exporter's textfile collector (which reads ``*.prom`` only) skips
it (``.gpuclient_host_facts.prom.XXXXXXXX``), is flushed to disk, made
readable by every user (node_exporter's), and renamed over the final
name; the directory is then synced so the rename survives a crash. A
failure at any step removes the temporary file and leaves the last good
file as it was. Only a regular file is replaced: a device, a directory
or a FIFO at that path (``--output /dev/null``) is refused, since the
rename would put the text in its place.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile

MODE = 0o644


def write_atomically(path: str, text: str) -> None:
    """Replace PATH by TEXT, atomically; OSError when it cannot."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
        raise OSError(errno.EINVAL, 'not a regular file', path)
    folder = os.path.dirname(os.path.abspath(path))
    fd, temporary = tempfile.mkstemp(
        dir=folder, prefix='.%s.' % os.path.basename(path))
    try:
        with os.fdopen(fd, 'w', encoding='utf-8') as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
            os.fchmod(f.fileno(), MODE)
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return  # renamed; only its durability across a crash is unsure
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
