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

"""A root directory's files, read the safe way.

Every path is relative to the root (``sys/bus/pci/devices``). A read
opens without blocking (a FIFO where a file should be does not hang the
collector), refuses anything but a regular file (sysfs and procfs
attributes are regular files), reads at most a bound, and decodes UTF-8
strictly; a link is followed only when its target exists inside the root
(the kernel's sysfs links are relative, so a fake tree's stay inside it).
What cannot be read raises OSError or ValueError, which the readers turn
into an unreadable fact.
"""

from __future__ import annotations

import errno
import glob
import os
import stat

# a sysfs or procfs attribute; dpkg's status file
MAX_BYTES = 1 << 20
MAX_STATUS_BYTES = 128 << 20


class Tree:
    """The files under ROOT (``/`` for the host itself)."""

    def __init__(self, root: str = '/') -> None:
        self.root = os.path.realpath(root)

    @property
    def is_host(self) -> bool:
        """The tree is the host's own (root ``/``), not a fake one."""
        return self.root == os.sep

    def path(self, rel: str) -> str:
        return os.path.join(self.root, rel.lstrip(os.sep))

    def _inside(self, path: str) -> bool:
        real = os.path.realpath(path)
        return self.is_host or real == self.root or real.startswith(
            self.root + os.sep)

    def exists(self, rel: str) -> bool:
        """REL is there (a link: and its target, inside the root)."""
        path = self.path(rel)
        return os.path.exists(path) and self._inside(path)

    def is_dir(self, rel: str) -> bool:
        path = self.path(rel)
        return os.path.isdir(path) and self._inside(path)

    def read(self, rel: str, limit: int = MAX_BYTES) -> str:
        """The text of the regular file REL (at most LIMIT bytes)."""
        path = self.path(rel)
        if not self._inside(path):
            raise OSError(errno.ENOENT, 'a link out of the root', rel)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise OSError(errno.EINVAL, 'not a regular file', rel)
            chunks, size = [], 0
            while True:
                chunk = os.read(fd, 65536)
                if not chunk:
                    break
                size += len(chunk)
                if size > limit:
                    raise ValueError('%s is larger than %d bytes'
                                     % (rel, limit))
                chunks.append(chunk)
        finally:
            os.close(fd)
        return b''.join(chunks).decode('utf-8')

    def link(self, rel: str) -> str | None:
        """The name a link REL points to (``vfio-pci`` for a ``driver``
        link), None when there is no such link; OSError for one that
        dangles or leaves the root, or a file that is not a link."""
        path = self.path(rel)
        if not os.path.lexists(path):
            return None
        target = os.readlink(path)
        if not os.path.exists(path) or not self._inside(path):
            raise OSError(errno.ENOENT, 'a dangling link', rel)
        name = os.path.basename(os.path.normpath(target))
        if not name or name in (os.curdir, os.pardir):
            raise OSError(errno.EINVAL, 'a link to no name', rel)
        return name

    def target(self, rel: str) -> str:
        """Where link (or directory) REL is, relative to the root: for a
        mediated device, the PCI function that holds it is its parent."""
        path = self.path(rel)
        if not os.path.exists(path) or not self._inside(path):
            raise OSError(errno.ENOENT, 'a dangling link', rel)
        return os.path.relpath(os.path.realpath(path), self.root)

    def listdir(self, rel: str) -> list[str] | None:
        """The sorted names in directory REL, None when it is not there."""
        path = self.path(rel)
        if not os.path.lexists(path):
            return None
        if not self._inside(path):
            raise OSError(errno.ENOENT, 'a link out of the root', rel)
        return sorted(os.listdir(path))

    def glob(self, pattern: str) -> list[str]:
        """The paths (relative to the root) matching PATTERN, sorted."""
        found = glob.glob(self.path(pattern))
        return sorted(os.path.relpath(p, self.root) for p in found
                      if self._inside(p))

    def executable(self, rel: str) -> bool:
        path = self.path(rel)
        return (os.path.isfile(path) and self._inside(path)
                and os.access(path, os.X_OK))
