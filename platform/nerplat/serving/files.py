"""Files and folders handed to a user (`predict -o`, `export --out`): written whole, readable as the user's umask says.

`predict -o PATH`:
    a new or regular file   replaced whole once tagging is done (a temporary sibling, then a rename)
    a symlink               its target is replaced; the link stays a link
    a FIFO, /dev/stdout,    written in place, as a shell redirection would
    /dev/null (character devices)
    a folder, a dangling symlink, a block device or a socket: refused (exit 2) before any tagging.

`export --out FOLDER`: a new or empty folder (or a symlink to one), filled in a temporary sibling
and renamed into place, so a failed export leaves nothing behind; a write the machine refuses (a
full disk, `ulimit -f`) is one line naming the cause (`write_failure`), not a traceback.

`train --save FOLDER`, `run --storage FOLDER`: a folder written after minutes or hours of work is
tried first (`check_writable_folder`), so `/proc/x` is refused before training, not after it.

Temporary files are created private (mode 0600); what is handed over gets the mode a plain `open`
would have given (0666, 0777 for folders, less the umask), not 0600.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import stat
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, TextIO

from nerplat.errors import Problem, StorageError, UserInputError


def check_output_file(path: Path, flag: str = "-o") -> bool:
    """Refuses what `write_output_file` cannot write; True when `path` is a stream (FIFO, character device)."""
    try:
        mode = os.stat(path).st_mode  # follows symlinks
    except FileNotFoundError:
        if path.is_symlink():
            raise _refused(
                flag, path, f"is a symlink to {os.readlink(path)}, which does not exist: name a file to write"
            ) from None
        return False
    except OSError as error:
        raise _refused(flag, path, f"cannot be written: {error.strerror}") from None
    if stat.S_ISDIR(mode):
        raise _refused(flag, path, f"is a folder: name a file in it, e.g. {path / 'tagged.jsonl'}")
    if stat.S_ISREG(mode):
        return False
    if stat.S_ISFIFO(mode) or stat.S_ISCHR(mode):
        return True
    raise _refused(flag, path, "is a block device or a socket: name a file, a FIFO or /dev/stdout")


def write_output_file(path: Path, write: Callable[[TextIO], None], flag: str = "-o") -> None:
    """Calls `write(stream)` on `path` as the module docstring says (UTF-8 text)."""
    try:
        if check_output_file(path, flag):
            with open(path, "w", encoding="utf-8") as stream:
                write(stream)
            return
        target = Path(os.path.realpath(path))  # through a symlink, its target: the link stays
        target.parent.mkdir(parents=True, exist_ok=True)
        mode = stat.S_IMODE(target.stat().st_mode) if target.exists() else 0o666 & ~current_umask()
        handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as stream:
                write(stream)
            os.chmod(temporary, mode)
            os.replace(temporary, target)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
    except (PermissionError, NotADirectoryError, IsADirectoryError) as error:
        raise _refused(flag, path, f"cannot be written: {error.strerror}") from None
    except OSError as error:
        raise StorageError(f"writing {path} failed: {error.strerror}") from None


def check_output_folder(out: Path, flag: str = "--out") -> None:
    """Refuses a target that holds anything, or a symlink to nothing: an export never mixes with other files."""
    if out.is_symlink() and not out.exists():
        raise _refused(flag, out, f"is a symlink to {os.readlink(out)}, which does not exist: name a new folder")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise _refused(flag, out, "exists and is not an empty folder: choose a new one")


@contextmanager
def output_folder(out: Path, flag: str = "--out") -> Iterator[Path]:
    """A temporary sibling of `out` to fill; on success it gets handover permissions and becomes `out`."""
    check_output_folder(out, flag)
    target = Path(os.path.realpath(out))
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        temporary = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}."))
    except OSError as error:
        raise _refused(flag, out, f"cannot be written: {error.strerror}") from None
    try:
        yield temporary
        hand_over(temporary)
        if target.exists():
            target.rmdir()  # empty, checked above
        os.replace(temporary, target)
    except Exception as error:
        failure = write_failure(out, error, "nothing was left behind")
        if failure is None:
            raise
        raise failure from None
    finally:
        shutil.rmtree(temporary, ignore_errors=True)


def check_writable_folder(folder: Path, flag: str) -> None:
    """Refuses a folder this process cannot create or write into, found by making (and removing) an
    empty folder where it would go: access checks say yes to root everywhere, /proc included."""
    folder = Path(os.path.abspath(folder))
    if folder.is_symlink() and not folder.exists():
        raise _refused(flag, folder, f"is a symlink to {os.readlink(folder)}, which does not exist: name a folder")
    if folder.exists() and not folder.is_dir():
        raise _refused(flag, folder, "exists and is not a folder: name a folder")
    existing = next(path for path in (folder, *folder.parents) if path.exists())
    try:
        os.rmdir(tempfile.mkdtemp(dir=existing, prefix=".nerplat-probe-"))
    except OSError as error:
        where = "" if existing == folder else f" ({existing} refused a new folder)"
        raise _refused(
            flag, folder, f"cannot be written{where}: {error.strerror}; name a folder this user can write"
        ) from None


_FIXES = {
    errno.EFBIG: "raise the file-size limit (`ulimit -f`) or write where it allows",
    errno.ENOSPC: "free disk space or write elsewhere",
    errno.EDQUOT: "free space within the disk quota or write elsewhere",
    errno.EROFS: "write to a folder on a writable disk",
    errno.EACCES: "write to a folder this user can write",
    errno.EPERM: "write to a folder this user can write",
}
_RUST_OS_ERROR = re.compile(r"\(os error (\d+)\)")  # how safetensors (Rust) words an OSError


def write_failure(path: Path, error: BaseException, left: str) -> StorageError | None:
    """A write of `path` that the machine refused, as one line with the cause and what to do (`left`
    says what became of the partial output); None when `error` is no such refusal (a bug: let it show).

    An OSError, or safetensors' SafetensorError, which carries one only in its text."""
    if isinstance(error, OSError) and error.errno is not None:
        code = error.errno
    elif type(error).__name__ == "SafetensorError" and (found := _RUST_OS_ERROR.search(str(error))):
        code = int(found.group(1))
    else:
        return None
    fix = _FIXES.get(code, "check the disk and write again")
    return StorageError(f"writing {path} failed: {os.strerror(code)}; {left}: {fix}")


def hand_over(folder: Path) -> None:
    """Gives `folder` and everything in it the modes a plain `open`/`mkdir` gives under the umask."""
    mask = current_umask()
    for directory, _, files in os.walk(folder):
        os.chmod(directory, 0o777 & ~mask)
        for name in files:
            os.chmod(os.path.join(directory, name), 0o666 & ~mask)


def current_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _refused(flag: str, path: Path, what: str) -> UserInputError:
    return UserInputError(Problem(f"{flag} {path} {what}", path=flag))
