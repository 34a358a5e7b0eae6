"""Run a ``brook`` tool in-process and capture what it prints."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from brook.cli.main import main

Tool = Callable[..., tuple[int, str, str]]


def tool_runner(capsys: pytest.CaptureFixture[str]) -> Tool:
    """``run("topics", "--list", bootstrap=...)`` -> (exit code, stdout, stderr)."""

    def run(command: str, *args: str, bootstrap: str | None = None) -> tuple[int, str, str]:
        argv = [command, *(["--bootstrap-server", bootstrap] if bootstrap else []), *args]
        capsys.readouterr()
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse usage errors
            code = int(exc.code or 0)
        out = capsys.readouterr()
        return code, out.out, out.err

    return run
