"""The ``ctxscribe`` console script: the Rust command line of the core library."""

from __future__ import annotations

import signal
import sys

from ._native import _cli_main


def main() -> None:
    """Runs ``ctxscribe`` with ``sys.argv``; pip runs with this interpreter."""
    # The command runs in Rust, detached from the interpreter: Ctrl-C ends the process
    # at once, as it does the `cargo install`ed binary.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    sys.exit(_cli_main(sys.argv, sys.executable))


if __name__ == "__main__":
    main()
