"""The run store: one SQLite file per run (WAL mode), written call by call.

Every completed model call is committed at once, so a run killed at any moment
loses at most the calls in flight; a question's turns and result are committed
together in one transaction, so a question is either wholly stored or not at all.

The store writes the engine's records and reads the same types back (``results``,
``conditions``, ``run_meta`` ...; see ``moot.runner.records``): its column names and
JSON layouts stay in this package. A store written with an older schema is migrated
in place when opened for writing (``MIGRATIONS``), in one transaction, once the opener accepts it: a
store refused (held by another run, or another experiment's: ``RunStore.open``'s ``accept``) is left as
it was. Every text it writes is valid UTF-8: a lone surrogate (a reply's "\\ud800") becomes U+FFFD
(``codec.store_text``), so no reply can make a write fail.

Readers (``RunStore.read``: ``moot report``, ``export``, ``runs``) open the file read-only and change
nothing: a store closed cleanly (no ``-wal`` file beside it) is read as an immutable file, so no
``-wal``/``-shm`` file is created; a store with a ``-wal`` file (a run in progress, or one killed) is
read through it, which may create or update its ``-shm`` index but never the store itself. An older
schema is migrated in a copy in memory. A file that is not a moot store is refused, unmodified.

A run holds its store exclusively (``StoreLock``: an OS lock on ``STORE.lock`` beside it, which dies
with the process): a second run on the same store is refused, naming the first one's PID; a store
whose status says "running" while no process holds it was left by a killed run ("interrupted"), and so
was a session left "running" (recorded as interrupted when the next session starts).

Every SQLite fault (a damaged file, a missing table, bad JSON, a read-only file or folder, a full
disk) is raised as a ``StoreError`` naming the store, never as a raw sqlite3 error.

Its modules, by job; every name is importable from ``moot.runner.store`` itself:

- ``errors``: ``StoreError``, and how a SQLite fault becomes one (``_guarded``);
- ``schema``: the tables (``SCHEMA``, ``SCHEMA_VERSION``, ``TABLES``), the metadata table, ``MIGRATIONS``;
- ``lock``: ``StoreLock``, ``lock_path``, ``lock_holder``;
- ``codec``: the JSON layouts of requests, replies, votes and turns, to and from the engine's records;
- ``run_store``: ``RunStore``, which opens, writes and reads a store: its opening, metadata and sessions,
  built on ``connection`` (its SQLite connection and transactions), ``call_tables`` (its calls) and
  ``result_tables`` (its questions, turns and results).
"""

from moot.runner.store.codec import _vote as _vote  # the JSON layout of a vote, which tests/test_prompts.py checks
from moot.runner.store.codec import _vote_json as _vote_json
from moot.runner.store.codec import reply_from_json, reply_to_json, request_to_json
from moot.runner.store.errors import StoreError
from moot.runner.store.lock import StoreLock, lock_holder, lock_path
from moot.runner.store.run_store import RunStore
from moot.runner.store.schema import MIGRATIONS, SCHEMA, SCHEMA_VERSION, TABLES

__all__ = [
    "MIGRATIONS",
    "SCHEMA",
    "SCHEMA_VERSION",
    "TABLES",
    "RunStore",
    "StoreError",
    "StoreLock",
    "lock_holder",
    "lock_path",
    "reply_from_json",
    "reply_to_json",
    "request_to_json",
]
