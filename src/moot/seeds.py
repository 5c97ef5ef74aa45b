"""Deterministic seed derivation.

Every sampled call gets its own seed, derived from the run seed and the call's
identity (question, agent, round, sample index), so that agents sampling at the
same temperature stay independent while a rerun reproduces every call.
"""

import hashlib

SEED_BITS = 31


def derive_seed(*parts: object) -> int:
    """A non-negative 31-bit seed from any printable parts (stable across processes)."""
    text = "\x1f".join(repr(p) for p in parts)
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % (2**SEED_BITS)
