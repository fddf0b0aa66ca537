"""A stand-in for ``llama-server``: parses the flags the project passes, then behaves as
the ``mode`` file beside it says: ``ok`` (healthy, checks the key), ``exit`` (dies at
start with an error line), ``silent-crash`` (dies of SIGILL before writing a byte, as a
binary built for another CPU does), ``loading`` (503 for ever)."""

from __future__ import annotations

import http.server
import json
import os
import signal
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    flags = dict(zip(argv[::2], argv[1::2], strict=False))
    if "--version" in argv:
        print("version: 0 (fake)", file=sys.stderr)
        return 0
    mode = (Path(__file__).parent / "mode").read_text().strip()
    if mode == "silent-crash":
        signal.signal(signal.SIGILL, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGILL)
    print(f"fake llama-server starting: {json.dumps(argv)}", flush=True)
    if mode == "exit":
        print("error: failed to load model", flush=True)
        return 1
    key = Path(flags["--api-key-file"]).read_text().strip()

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            return None

        def do_GET(self) -> None:
            if self.path == "/health":
                status = 200 if mode == "ok" else 503
                self.send_response(status)
                self.end_headers()
                self.wfile.write(
                    json.dumps({"status": "ok" if status == 200 else "loading"}).encode()
                )
                return
            authorised = self.headers.get("Authorization") == f"Bearer {key}"
            self.send_response(200 if authorised else 401)
            self.end_headers()

    server = http.server.HTTPServer((flags["--host"], int(flags["--port"])), Handler)
    print(f"listening on {flags['--host']}:{flags['--port']}", flush=True)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
