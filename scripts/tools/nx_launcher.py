"""Starts nx-27017 (a MongoDB wire-protocol server over SQLite) for tests and the local pipeline.

One documented fix over the stock entry point (see shared/notes/ENVIRONMENT.md): neosqlite's SQL
update path stores a top-level `$set` of a BSON date as a string and of a bool as an int, which
would make `{leaseExpiresAt: {$lt: <date>}}` never match. Forcing its Python update path keeps the
types. `tests/mongo_wire_gaps.rs` shows the gap this closes. Production code is not bent to the
server: this is test tooling only.

Usage: python nx_launcher.py --data-dir memory --host 127.0.0.1 -p PORT
"""
import os
import sys
import threading

from neosqlite.collection.query_helper import utils as _neosqlite_utils

_neosqlite_utils.set_force_fallback(True)

from nx_27017 import nx_27017  # noqa: E402  (must import after the switch)


def _exit_when_parent_goes_away() -> None:
    """With a stdin pipe from a harness: exit when it closes (the parent died or stopped us)."""
    try:
        while sys.stdin.buffer.read(4096):
            pass
    finally:
        os._exit(0)


if __name__ == "__main__":
    if os.environ.get("SOPHIA_EXIT_ON_STDIN_EOF") == "1":
        threading.Thread(target=_exit_when_parent_goes_away, daemon=True).start()
    if "--host" not in sys.argv:
        sys.argv += ["--host", "127.0.0.1"]
    sys.exit(nx_27017.main())
