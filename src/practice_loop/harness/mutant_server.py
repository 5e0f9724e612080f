"""A warm pytest for ``practice-loop mutants``: imports pytest and Hypothesis once, then forks
one child per test run, so a mutant pays for importing this project and its tests, not for
starting pytest again (docs/adr/0014).

Run as a script, never as part of the package (``python .../mutant_server.py``): this process
must not import ``practice_loop`` or ``practice_strategies``, or every child would test the
checkout's code instead of the copy's. The children's ``--mutant-root`` check makes that a
usage error, never a survivor.

Protocol, one JSON object per line: the runner writes ``{"cwd", "path", "environment",
"arguments", "output", "timeout"}`` to standard input; this process answers
``{"returncode": N or null, "seconds": S}`` (``null``: killed at the timeout) on standard
output. It ends at end of input, and on SIGTERM after killing the child in progress.
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys
import time

# Hypothesis runs its plugins' set-up hooks on import; ours imports the project, so they are
# run in each child instead, once the copy is on the path.
os.environ["HYPOTHESIS_NO_PLUGINS"] = "1"

import _pytest.assertion.rewrite  # noqa: E402,F401  (what every pytest start-up imports)
import _pytest.python  # noqa: E402,F401
import _pytest.terminal  # noqa: E402,F401
import hypothesis  # noqa: E402
import hypothesis.entry_points  # noqa: E402
import hypothesis.strategies  # noqa: E402,F401
import pytest  # noqa: E402

try:
    import hypothesis_crosshair_provider  # noqa: E402,F401  (imports CrossHair, the slowest)
except ImportError:
    pass

_CHILD: list[int] = []


def _child(request: dict) -> None:
    """In the forked child: become the test run the request describes, then exit."""
    os.setsid()  # a group of its own, so a timeout ends everything the tests started
    output = os.open(request["output"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(output, 1)
    os.dup2(output, 2)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["environment"])
    sys.path[:] = [*request["path"], *(p for p in sys.path[1:] if p not in request["path"])]
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    code = 3
    try:
        hypothesis.entry_points.run()
        code = int(pytest.main(request["arguments"]))
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _wait(pid: int, timeout: float) -> int | None:
    """The child's exit status, or ``None`` once it has been killed at ``timeout``."""
    deadline = time.monotonic() + timeout
    handle = os.pidfd_open(pid)
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                os.killpg(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                return None
            ready, _, _ = select.select([handle], [], [], left)
            if ready:
                _, status = os.waitpid(pid, 0)
                return os.waitstatus_to_exitcode(status)
    finally:
        os.close(handle)


def _terminate(signum: int, frame: object) -> None:
    for pid in _CHILD:
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    os._exit(128 + signum)


def main() -> None:
    signal.signal(signal.SIGTERM, _terminate)
    for line in sys.stdin:
        request = json.loads(line)
        start = time.monotonic()
        pid = os.fork()
        if pid == 0:
            _child(request)
        _CHILD[:] = [pid]
        returncode = _wait(pid, request["timeout"])
        _CHILD.clear()
        answer = {"returncode": returncode, "seconds": time.monotonic() - start}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
