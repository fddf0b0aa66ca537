"""The candidate's side of a held-out check: ``python3 -I -B -m sandbox_supervisor.candidate``.

PID 1 forks it as the workload's uid (``identity.WORKLOAD_UID``) with cwd
``/workspace``, requests from the judge on fd 3 and answers to it on fd 4
(``sandbox_supervisor.remote``, ``sandbox_supervisor.plaindata``). It imports modules of
the code under test when asked, keeps every object that is not plain data in a table
and answers with its number, and reports what the code raised by the names of the
exception's classes. Whatever the code under test does to this process (it can replace
any of it) only changes what the answers say: the judge decides, in another process of
another uid, from plain values it builds itself. EOF on fd 3 ends it.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
from typing import Any

from sandbox_supervisor import deps, plaindata

REQUEST_FD = 3
ANSWER_FD = 4
MODULE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")
MAX_OBJECTS = 100_000
MAX_TEXT = 500


class Objects:
    """The objects the judge holds references to, by number."""

    def __init__(self) -> None:
        self._objects: list[Any] = []

    def add(self, value: Any) -> int:
        if len(self._objects) >= MAX_OBJECTS:
            raise RuntimeError(f"more than {MAX_OBJECTS} remote objects")
        self._objects.append(value)
        return len(self._objects) - 1

    def get(self, number: int) -> Any:
        if not 0 <= number < len(self._objects):
            raise LookupError(f"no remote object {number}")
        return self._objects[number]

    def resolve(self, value: Any) -> Any:
        """Turn the judge's references back into the objects they name, at any depth."""
        if isinstance(value, plaindata.RefMarker):
            return self.get(value.number)
        if type(value) is list:
            return [self.resolve(item) for item in value]
        if type(value) is tuple:
            return tuple(self.resolve(item) for item in value)
        if type(value) is dict:
            return {self.resolve(k): self.resolve(v) for k, v in value.items()}
        return value


def _text(value: object) -> str:
    try:
        return str(value)[:MAX_TEXT]
    except BaseException:
        return "(unprintable)"


def perform(objects: Objects, request: dict[str, Any]) -> Any:
    """Carry out one request; its result (a value or an object)."""
    op = request.get("op")
    target = objects.get(request["target"]) if "target" in request else None
    if op == "module":
        name = request.get("name")
        if type(name) is not str or not MODULE_NAME.fullmatch(name):
            raise ValueError(f"not a module name: {name!r}"[:MAX_TEXT])
        return importlib.import_module(name)
    if op == "getattr":
        name = request.get("name")
        if type(name) is not str or name.startswith("__"):
            raise ValueError("not an attribute the judge may ask for")
        return getattr(target, name)
    if op == "call":
        args = objects.resolve(request.get("args", []))
        kwargs = objects.resolve(request.get("kwargs", {}))
        if type(args) is not list or type(kwargs) is not dict:
            raise ValueError("call needs a list of arguments and a dict of keywords")
        return target(*args, **kwargs)  # type: ignore[misc]  # any object may be called
    if op == "value":
        return target
    if op == "list":
        return list(target)  # type: ignore[arg-type]  # an error here is the answer
    raise ValueError(f"unknown request {op!r}"[:MAX_TEXT])


def answer(objects: Objects, request: Any) -> dict[str, Any]:
    """The answer to one decoded request."""
    number = request.get("id") if type(request) is dict else None
    try:
        result = perform(objects, request)
    except BaseException as error:
        if type(error) in (SystemExit, KeyboardInterrupt):
            raise
        types = [cls.__name__ for cls in type(error).__mro__ if cls is not object]
        return {"id": number, "raised": {"types": types, "message": _text(error)}}
    if request.get("op") == "value" or request.get("op") == "list":
        try:
            return {"id": number, "ok": plaindata.encode(result)}
        except plaindata.NotPlain as error:
            return {"id": number, "error": f"not plain data: {error}"}
    try:
        return {"id": number, "ok": plaindata.encode(result)}
    except plaindata.NotPlain:
        return {"id": number, "ref": objects.add(result)}


def serve(request_fd: int = REQUEST_FD, answer_fd: int = ANSWER_FD) -> int:
    """Answer requests until the judge closes its side."""
    objects = Objects()
    while True:
        try:
            request = plaindata.receive(request_fd, refs=True)
        except plaindata.ProtocolError:
            return 0  # the judge is done (EOF) or broke the format: nothing left to do
        reply = answer(objects, request)
        try:
            plaindata.send(answer_fd, reply)
        except plaindata.ProtocolError as error:
            plaindata.send(answer_fd, {"id": reply.get("id"), "error": _text(error)})


def main() -> int:
    """Put the workspace and the dependency environment on ``sys.path`` (as the runner
    does), then serve."""
    for fd in (REQUEST_FD, ANSWER_FD):
        os.set_inheritable(fd, False)  # not passed to the code under test's subprocesses
    sys.path.insert(0, os.getcwd())
    deps.add_to_path(sys.path, sys.modules)  # the code under test's dependencies (issue 17)
    return serve()


if __name__ == "__main__":
    sys.exit(main())
