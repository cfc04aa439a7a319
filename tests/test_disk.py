"""A write the file system refuses is found behind the errors that wrap it and said in one line with its fix."""

from __future__ import annotations

import errno

from ragsweep.disk import cannot_write, naming, write_refused


def test_a_refused_write_is_found_behind_the_error_raised_while_handling_it():
    try:
        try:
            raise OSError(errno.ENOSPC, "No space left on device")
        except OSError:
            raise RuntimeError("the zip writer could not close")  # noqa: B904 (as numpy's savez does)
    except RuntimeError as error:
        assert write_refused(error).errno == errno.ENOSPC
    assert write_refused(FileNotFoundError(errno.ENOENT, "No such file")) is None


def test_a_full_disk_names_the_folder_its_file_system_and_the_free_space(tmp_path):
    error = naming(OSError(errno.ENOSPC, "No space left on device"), tmp_path / "cache" / "entry")
    line = cannot_write(error, "cache.dir")
    assert line.startswith(f"cannot write {tmp_path / 'cache' / 'entry'}: no space left on the file system of /")
    assert " free); free space there, or point cache.dir at another folder with room" in line


def test_a_missing_permission_and_a_quota_say_what_to_do(tmp_path):
    assert cannot_write(OSError(errno.EACCES, "Permission denied", "conf/best")) == (
        "cannot write conf/best: permission denied; give this user write permission there (chmod, chown), or work "
        "in a copy you can write")
    assert cannot_write(OSError(errno.EPERM, "Operation not permitted", "reports")).startswith(
        "cannot write reports: permission denied;")
    assert "your disk quota is used up on the file system of" in cannot_write(
        OSError(errno.EDQUOT, "Disk quota exceeded", str(tmp_path / "x")))
