"""Reading and writing wheel files (PEP 427): a tree of files <-> a .whl zip.

Shared by the build backend (shardpack_build.py), which stages the wheel's
tree with CMake, and the bundler (shardpack_bundle.py), which unpacks a wheel,
adds the shared libraries it needs and packs it again. Only the standard
library: both run where nothing is installed.
"""
import base64
import contextlib
import hashlib
import os
import stat
import tempfile
import zipfile

# Every member gets this time: the same inputs make the same wheel.
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)


@contextlib.contextmanager
def replacing(path):
    """Yields a new binary file that becomes `path` when the block ends without an error.

    The file is created beside `path` under a name nobody can predict, with O_EXCL
    (mkstemp), so a link planted there is never followed; it gets the mode a plain
    open() would (0666 less the umask) and is renamed over `path`, which replaces
    a link at `path` rather than writing through it. On an error it is removed and
    `path` is left as it was.
    """
    folder, name = os.path.split(os.path.abspath(path))
    fd, partial = tempfile.mkstemp(prefix=f".{name}.", suffix=".partial", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            umask = os.umask(0)
            os.umask(umask)
            os.fchmod(f.fileno(), 0o666 & ~umask)
            yield f
        os.replace(partial, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.remove(partial)
        raise


def _digest(data):
    sha = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")
    return f"sha256={sha}"


def _members(root):
    """The files under `root` as wheel paths ('/'-separated), .dist-info last."""
    paths = []
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files):
            full = os.path.join(folder, name)
            if os.path.islink(full):
                raise ValueError(f"{full}: a link cannot go into a wheel")
            paths.append(os.path.relpath(full, root).replace(os.sep, "/"))
    return sorted(paths, key=lambda p: (p.split("/")[0].endswith(".dist-info"), p))


def pack(root, dist_info, wheel_path):
    """Zips the tree `root` into `wheel_path`, writing `dist_info`/RECORD.

    File modes are kept (pip installs an executable bit it finds in a wheel).
    The wheel is written through replacing(): a failed pack leaves no
    half-written wheel, and no link planted in the folder is followed.
    """
    record_name = f"{dist_info}/RECORD"
    record_path = os.path.join(root, *record_name.split("/"))
    if os.path.exists(record_path):
        os.remove(record_path)
    records = []
    with replacing(wheel_path) as out:
        with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            for arcname in _members(root):
                full = os.path.join(root, *arcname.split("/"))
                with open(full, "rb") as f:
                    data = f.read()
                info = zipfile.ZipInfo(arcname, date_time=_ZIP_TIME)
                info.external_attr = (stat.S_IFREG | (os.stat(full).st_mode & 0o777)) << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                zf.writestr(info, data)
                records.append(f"{arcname},{_digest(data)},{len(data)}")
            records.append(f"{record_name},,")
            info = zipfile.ZipInfo(record_name, date_time=_ZIP_TIME)
            info.external_attr = (stat.S_IFREG | 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, "\n".join(records) + "\n")


def unpack(wheel_path, root):
    """Extracts `wheel_path` into `root` with its file modes; returns the .dist-info name.

    A member whose path would leave `root` (absolute, or with '..') is refused.
    """
    dist_infos = set()
    with zipfile.ZipFile(wheel_path) as zf:
        for info in zf.infolist():
            parts = info.filename.split("/")
            if info.filename.startswith("/") or ".." in parts or "\\" in info.filename:
                raise ValueError(f"{wheel_path}: member '{info.filename}' leaves the wheel")
            if info.is_dir():
                continue
            full = os.path.join(root, *parts)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with zf.open(info) as src, open(full, "wb") as dst:
                dst.write(src.read())
            mode = (info.external_attr >> 16) & 0o777
            os.chmod(full, mode if mode else 0o644)
            if parts[0].endswith(".dist-info"):
                dist_infos.add(parts[0])
    if len(dist_infos) != 1:
        raise ValueError(f"{wheel_path}: {len(dist_infos)} .dist-info folders, not one")
    return dist_infos.pop()
