"""Writing result files safely: only regular files the command may replace, whole or not at all.

The command line writes sweeps, calibration reports and cached cells. A path from the user can
be anything: a directory, a device (``/dev/full``), a FIFO, a path under a file. Run as root, a
plain ``os.replace`` onto ``/dev/full`` replaces the device node itself, so every write here
checks what is at the path first, and refuses anything but a regular file (or nothing yet).

A write goes to a temporary file beside the target, with a name unique to this write (two runs
writing the same file never share it), and then replaces the target in one step: a reader never
sees half a file, and a killed run leaves the old file or none.

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> write_text_atomically(d / "r.json", "{}")
    >>> (d / "r.json").read_text(), sorted(p.name for p in d.iterdir())
    ('{}', ['r.json'])
    >>> check_output_file(d, "--out")   # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    decoding_lab.errors.SettingsError: --out ... is a directory, not a file: name a file in it
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

from decoding_lab.errors import SettingsError


def check_output_file(path: str | os.PathLike, what: str) -> Path:
    """``path`` if a result may be written there: nothing there yet, or a regular file (followed
    through a link); its folder may be created. Anything else is a ``SettingsError`` naming it."""
    path = Path(path)
    try:
        info = os.stat(path)           # follows a link: a link to /dev/full is a device
    except FileNotFoundError:
        info = None
    except OSError as e:               # a path through a file (ENOTDIR), no permission, a link loop
        raise SettingsError(f"{what} {str(path)!r}: {e.strerror}") from None
    if info is not None:
        if stat.S_ISDIR(info.st_mode):
            raise SettingsError(f"{what} {str(path)!r} is a directory, not a file: name a file in it")
        if not stat.S_ISREG(info.st_mode):
            raise SettingsError(f"{what} {str(path)!r} is not a regular file (a device, a pipe or a socket); "
                                "name a file")
    for parent in path.parents:        # the nearest folder that exists must be a folder
        if parent.exists() or parent.is_symlink():
            if not parent.is_dir():
                raise SettingsError(f"{what} {str(path)!r}: {str(parent)!r} is not a folder")
            break
    return path


def check_folder(path: str | os.PathLike, what: str) -> Path:
    """``path`` if it is a folder or can be made one (a file there is a ``SettingsError``)."""
    path = Path(path)
    if (path.exists() or path.is_symlink()) and not path.is_dir():
        raise SettingsError(f"{what} {str(path)!r} is a file, not a folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise SettingsError(f"{what} {str(path)!r}: part of the path is a file, not a folder") from None
    except OSError as e:
        raise SettingsError(f"{what} {str(path)!r}: {e.strerror}") from None
    return path


def write_text_atomically(path: str | os.PathLike, text: str, what: str = "output") -> None:
    """Write ``text`` to ``path`` (checked as ``check_output_file``) through a temporary file
    with a name unique to this write, then one ``os.replace``."""
    path = check_output_file(path, what)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        check_output_file(path, what)  # still a file (or nothing) just before the swap
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
