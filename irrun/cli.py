"""The ``irrun`` command line: the commands of :mod:`irrun.tools`, assembled.

``irrun MODEL.xml ...`` is short for ``irrun run MODEL.xml ...``.  Errors are one
line on stderr with exit code 1 (2 for misuse of the command line); ``--debug``
shows the traceback instead.

``irrun validate`` prints one line per finding and a summary, and exits 0 when
there is no error (1 with errors, or with warnings under ``--strict``).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from .errors import InternalError, IrrunError, UsageError
from .tools import benchmark, compare, generate, graph, inspect, ops, run, validate
from .tools.common import parents
from .version import __version__

# The subcommands, in the order --help lists them; each module's register() adds its own
# parser and handler.
TOOLS = {
    "run": run, "validate": validate, "inspect": inspect, "compare": compare,
    "benchmark": benchmark, "graph": graph,
    "generate": generate, "ops": ops,
}  # fmt: skip
COMMANDS = tuple(TOOLS)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="irrun",
        description="Run and check OpenVINO IR models (model.xml + model.bin) with NumPy.",
        epilog="'irrun MODEL.xml ...' is short for 'irrun run MODEL.xml ...'.",
    )
    parser.add_argument("--version", action="version", version=f"irrun {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    shared = parents()
    for tool in TOOLS.values():
        tool.register(sub, shared)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list and args_list[0] not in (*COMMANDS, "-h", "--help", "--version"):
        args_list.insert(0, "run")
    args = _parser().parse_args(args_list)
    try:
        rc = int(args.handler(args))
        # What is still buffered (stdout to a pipe is block-buffered) is written here,
        # where a reader that has gone is the BrokenPipeError below, not an error at exit.
        sys.stdout.flush()
        return rc
    except UsageError as exc:
        if args.debug:
            raise
        print(f"irrun: error: {exc}", file=sys.stderr)
        return 2
    except InternalError as exc:  # a bug in irrun, caught at the layer it surfaced in
        if args.debug:
            raise
        print(f"irrun: internal error: {exc}", file=sys.stderr)
        return 1
    except IrrunError as exc:
        if args.debug:
            raise
        print(f"irrun: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (irrun inspect ... | head): stop quietly, and keep Python's
        # flush of stdout at exit from failing again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, as the shell reports a process a pipe killed
    except Exception as exc:  # a bug in irrun: still one line, the traceback with --debug
        if args.debug:
            raise
        print(
            f"irrun: internal error: {type(exc).__name__}: {exc} (a bug in irrun: please "
            "report it; --debug shows the traceback)",
            file=sys.stderr,
        )
        return 1
