"""The PEP 517 build backend of the silt client: the standard library only.

Why not setuptools: building a wheel with it needs the ``wheel`` package
too (before setuptools 70.1), which an offline machine may not have, and
``pip install ./clients/python`` must work with ``python3`` alone. A pure
Python package needs little: its files zipped with three metadata files.
pyproject.toml stays the one place name, version and description live.
"""

import base64
import hashlib
import io
import os
import tarfile
import tomllib
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "silt"


def _project():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)["project"]


def _dist_name():
    project = _project()
    return project["name"].replace("-", "_"), project["version"]


def _metadata():
    p = _project()
    with open(os.path.join(ROOT, p["readme"]), encoding="utf-8") as f:
        readme = f.read()
    return (f"Metadata-Version: 2.1\nName: {p['name']}\nVersion: {p['version']}\nSummary: {p['description']}\n"
            f"Requires-Python: {p['requires-python']}\nDescription-Content-Type: text/markdown\n\n{readme}")


def _package_files():
    """(path in the archive, path on disk) of every module of the package."""
    base = os.path.join(ROOT, PACKAGE)
    for name in sorted(os.listdir(base)):
        if name.endswith(".py"):
            yield f"{PACKAGE}/{name}", os.path.join(base, name)


def _record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def _write_wheel(wheel_directory, contents):
    """A wheel of ``contents`` (archive path -> bytes) plus its dist-info."""
    name, version = _dist_name()
    info = f"{name}-{version}.dist-info"
    contents = dict(contents)
    contents[f"{info}/METADATA"] = _metadata().encode()
    contents[f"{info}/WHEEL"] = (b"Wheel-Version: 1.0\nGenerator: silt_build\nRoot-Is-Purelib: true\n"
                                 b"Tag: py3-none-any\n")
    record = [_record_line(path, data) for path, data in contents.items()] + [f"{info}/RECORD,,"]
    contents[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    filename = f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, filename), "w", zipfile.ZIP_DEFLATED) as whl:
        for path, data in contents.items():
            whl.writestr(path, data)
    return filename


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    files = {}
    for path, disk in _package_files():
        with open(disk, "rb") as f:
            files[path] = f.read()
    return _write_wheel(wheel_directory, files)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """An editable install: a .pth file that puts this checkout on sys.path."""
    name, _ = _dist_name()
    return _write_wheel(wheel_directory, {f"{name}.pth": (ROOT + "\n").encode()})


def build_sdist(sdist_directory, config_settings=None):
    name, version = _dist_name()
    base = f"{name}-{version}"
    filename = f"{base}.tar.gz"
    with tarfile.open(os.path.join(sdist_directory, filename), "w:gz") as tar:
        for rel in ["pyproject.toml", "README.md", "build_backend/silt_build.py"]:
            tar.add(os.path.join(ROOT, rel), f"{base}/{rel}")
        for path, disk in _package_files():
            tar.add(disk, f"{base}/{path}")
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        data = _metadata().encode()
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return filename
