"""A write the file system refuses (read-only, full, over quota, not permitted), said in one line that names the
folder, the reason and the fix, where it would otherwise end a command in a traceback."""

from __future__ import annotations

import errno
import shutil
from pathlib import Path

REFUSED = {errno.EROFS, errno.ENOSPC, errno.EACCES, errno.EPERM, errno.EDQUOT}


def write_refused(error: BaseException | None) -> OSError | None:
    """The OSError behind `error` (itself, or what it was raised from or while handling) that is the file system
    refusing a write; None when there is none. A library may wrap it (numpy's zip writer, MLflow)."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, OSError) and error.errno in REFUSED:
            return error
        error = error.__cause__ or error.__context__
    return None


def naming(error: OSError, path: Path | str) -> OSError:
    """`error` anew, with `path` as its file name when it has none (a write or flush that fails names no file);
    its errno kept, so OSError(2, ...) is still a FileNotFoundError. Raise it `from error`."""
    return OSError(error.errno, error.strerror or str(error), str(path) if error.filename is None else error.filename)


def cannot_write(error: OSError, setting: str | None = None) -> str:
    """`cannot write PATH: REASON; FIX`, the fix naming `setting` (e.g. cache.dir) when the folder is one."""
    path = Path(error.filename) if error.filename is not None else None
    where = str(path) if path is not None else "a file"
    elsewhere = f"point {setting} at another folder" if setting else "work in a copy you can write"
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
        folder = _existing_folder(path) if path is not None else None
        full = "no space left" if error.errno == errno.ENOSPC else "your disk quota is used up"
        free = f" on the file system of {_mount_point(folder)} ({_free(folder)} free)" if folder is not None else ""
        return f"cannot write {where}: {full}{free}; free space there, or {elsewhere} with room"
    if error.errno == errno.EROFS:
        return f"cannot write {where}: the file system is read-only; mount it writable, or {elsewhere}"
    return (f"cannot write {where}: permission denied; give this user write permission there (chmod, chown), "
            f"or {elsewhere}")


def _existing_folder(path: Path) -> Path | None:
    """The nearest folder at or above `path` that exists: the one whose file system ran out of room."""
    for folder in (path, *path.parents):
        if folder.is_dir():
            return folder
    return None


def _mount_point(folder: Path) -> Path:
    """The top folder of `folder`'s file system (its mount point): the one a user frees or enlarges."""
    folder = folder.resolve()
    device = folder.stat().st_dev
    while folder.parent != folder and folder.parent.stat().st_dev == device:
        folder = folder.parent
    return folder


def _free(folder: Path) -> str:
    """Free space of `folder`'s file system, e.g. `12 KB of 64 KB`."""
    usage = shutil.disk_usage(folder)
    return f"{_size(usage.free)} of {_size(usage.total)}"


def _size(count: float) -> str:
    """Bytes in the largest unit below 1024 of it: `12 KB`, `3.4 GB`."""
    unit = "bytes"
    for unit in ("bytes", "KB", "MB", "GB", "TB"):
        if count < 1024 or unit == "TB":
            break
        count /= 1024
    return f"{count:.0f} {unit}" if unit == "bytes" or count >= 10 else f"{count:.1f} {unit}"
