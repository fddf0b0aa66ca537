"""Wheels and a package index made in the test: no network, nothing built by a backend.

``make_wheel`` zips files with the three ``.dist-info`` files a wheel needs (a wheel is
a zip archive); ``FakeIndex`` serves a PEP 503 simple index of them (and of sdists)
on loopback, with each file's sha256 in its link, as PyPI does.
"""

from __future__ import annotations

import base64
import hashlib
import http.server
import io
import tarfile
import threading
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from packaging.utils import canonicalize_name


def _record_hash(data: bytes) -> str:
    digest = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def make_wheel(
    folder: Path,
    name: str,
    version: str,
    files: dict[str, str | bytes],
    *,
    requires: tuple[str, ...] = (),
    tag: str = "py3-none-any",
) -> Path:
    """Write ``{name}-{version}-{tag}.whl`` into ``folder``: ``files`` plus its metadata."""
    dist = f"{name.replace('-', '_')}-{version}"
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    metadata += "".join(f"Requires-Dist: {req}\n" for req in requires)
    entries: dict[str, bytes] = {
        path: (text.encode() if isinstance(text, str) else text) for path, text in files.items()
    }
    entries[f"{dist}.dist-info/METADATA"] = metadata.encode()
    entries[f"{dist}.dist-info/WHEEL"] = (
        f"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: {tag}\n"
    ).encode()
    record = "".join(f"{path},{_record_hash(data)},{len(data)}\n" for path, data in entries.items())
    record += f"{dist}.dist-info/RECORD,,\n"
    entries[f"{dist}.dist-info/RECORD"] = record.encode()
    path = folder / f"{dist}-{tag}.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for member, data in entries.items():
            archive.writestr(member, data)
    return path


def make_sdist(folder: Path, name: str, version: str) -> Path:
    """An sdist only (``setup.py`` that would run code if anything built it)."""
    base = f"{name}-{version}"
    path = folder / f"{base}.tar.gz"
    with tarfile.open(path, "w:gz") as archive:
        for member, text in {
            f"{base}/setup.py": "raise SystemExit('built on the host!')\n",
            f"{base}/PKG-INFO": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        }.items():
            data = text.encode()
            info = tarfile.TarInfo(member)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


@dataclass
class FakeIndex:
    """A PEP 503 index of the files in ``folder``, served while the context is open."""

    folder: Path
    url: str = ""
    requests: list[str] = field(default_factory=list)

    def project_files(self) -> dict[str, list[Path]]:
        projects: dict[str, list[Path]] = {}
        for path in sorted(self.folder.iterdir()):
            stem = path.name.split("-", 1)[0]
            projects.setdefault(str(canonicalize_name(stem)), []).append(path)
        return projects

    def page(self, project: str) -> bytes | None:
        files = self.project_files().get(project)
        if files is None:
            return None
        links = "".join(
            f'<a href="../../files/{p.name}#sha256={hashlib.sha256(p.read_bytes()).hexdigest()}">'
            f"{p.name}</a>\n"
            for p in files
        )
        return f"<!DOCTYPE html><html><body>\n{links}</body></html>\n".encode()


@contextmanager
def serve_index(folder: Path) -> Iterator[FakeIndex]:
    """Serve ``folder``'s wheels and sdists as ``http://127.0.0.1:PORT/simple``."""
    index = FakeIndex(folder)

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_HEAD(self) -> None:
            self._answer(head=True)

        def do_GET(self) -> None:
            self._answer(head=False)

        def _answer(self, *, head: bool) -> None:
            index.requests.append(self.path)
            parts = [p for p in self.path.split("?")[0].split("/") if p]
            body: bytes | None = None
            kind = "text/html"
            if len(parts) == 2 and parts[0] == "simple":
                body = index.page(str(canonicalize_name(parts[1])))
            elif len(parts) == 2 and parts[0] == "files":
                path = folder / parts[1]
                if path.is_file():
                    body, kind = path.read_bytes(), "application/octet-stream"
            if body is None:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if not head:
                self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            return

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    index.url = f"http://127.0.0.1:{server.server_address[1]}/simple"
    try:
        yield index
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
