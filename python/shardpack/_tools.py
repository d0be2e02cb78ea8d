"""The command-line tools of an installed wheel: shardpack, sharddump, shardbench.

The wheel's binaries live in the package (shardpack/bin/), next to the shared
libraries they were linked with; pip puts these launchers on PATH. Each one
replaces this Python process with the binary (exec: same pid, signals and exit
status), so the tool behaves as if it were started directly; `shardpack parquet`
alone runs in this process (shardpack/parquet.py).
"""
import os
import sys

# The wheel's binaries (shardpack/bin/).
BIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin")


def _exec(tool):
    path = os.path.join(BIN, tool)
    try:
        os.execv(path, [tool] + sys.argv[1:])
    except OSError as e:
        sys.stderr.write(f"{tool}: cannot start {path}: {e.strerror} "
                         f"(reinstall the shardpack wheel)\n")
        sys.exit(127)


def shardpack():
    # `shardpack parquet` runs here, in Python (pyarrow reads Parquet);
    # every other subcommand is the binary's.
    if len(sys.argv) > 1 and sys.argv[1] == "parquet":
        from shardpack.parquet import main
        sys.exit(main(sys.argv[2:]))
    _exec("shardpack")


def sharddump():
    _exec("sharddump")


def shardbench():
    _exec("shardbench")
