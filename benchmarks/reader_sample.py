"""Draw the hand-labelling samples of the reader check (issue 55): for each published replication store, 100
distinct stored replies that a reader reads (a final round's turns of a condition whose answer is its agents'
vote; a single-round condition's final round is its round 0, so the vote pools are in it), spread evenly over
the store's conditions and tasks, drawn with a seeded generator. Each line of
docs/results/readers/STORE.jsonl is one reply with the question it answers and the request's closing words (the
format the prompt asked for); ``label`` is left empty for a person to fill in with the answer a careful reader
reads in the reply (``null``: the reply commits to no answer), never with any reader's output.

    python benchmarks/reader_sample.py            # every store under runs/replicate/
    python benchmarks/reader_sample.py du zhu     # some

    python benchmarks/reader_sample.py --held-out  # a second sample of 50 a store, none of the first's replies

Rerunning draws the same replies; a file that already has labels is not overwritten. The held-out samples
(docs/results/readers/held-out/) check moot's reader on replies its fixes were not made from.
"""

from __future__ import annotations

import json
import random
import sqlite3
import sys
from pathlib import Path

STORES = Path("runs/replicate")
OUT = Path("docs/results/readers")
SIZE = 100
HELD_OUT = 50
JUDGED = {"moderator", "judge"}


def candidates(db: sqlite3.Connection) -> dict[tuple[str, str], list[dict[str, object]]]:
    """Every distinct reply a reader reads, by (condition, task), in a fixed order."""
    judged = {
        name
        for name, config in db.execute("SELECT name, config FROM conditions")
        if json.loads(config)["protocol"]["aggregation"].get("kind") in JUDGED
    }
    rows = db.execute(
        """SELECT t.condition, t.task, t.question_id, t.seed, t.round, t.agent, t.call_key, t.text, q.prompt, c.request
           FROM turns t JOIN results r USING (condition, task, question_id, seed)
           JOIN questions q USING (task, question_id) JOIN calls c ON c.key = t.call_key
           WHERE t.round = r.rounds_used - 1 AND t.agent LIKE 'agent-%'
           ORDER BY t.condition, t.task, t.question_id, t.seed, t.round, t.agent"""
    )
    out: dict[tuple[str, str], list[dict[str, object]]] = {}
    for condition, task, qid, seed, rnd, agent, key, text, prompt, request in rows:
        if condition in judged:
            continue
        messages = json.loads(request)["messages"]
        asked = next((m["content"] for m in reversed(messages) if m["role"] == "user"), "")
        out.setdefault((condition, task), []).append(
            {
                "condition": condition,
                "task": task,
                "question_id": qid,
                "seed": seed,
                "round": rnd,
                "agent": agent,
                "call_key": key,
                "question": prompt,
                "asked": asked[-400:],
                "text": text,
            }
        )
    return out


def draw(
    store: str, size: int = SIZE, salt: str = "reader-sample", exclude: frozenset[object] = frozenset()
) -> list[dict[str, object]]:
    """``size`` distinct replies of ``store`` (none of ``exclude``'s call keys), as evenly spread over (condition,
    task) as they allow."""
    db = sqlite3.connect(f"file:{STORES / store}.sqlite?mode=ro", uri=True)
    try:
        groups = candidates(db)
    finally:
        db.close()
    rng = random.Random(f"{salt}:{store}")
    pools = {g: rng.sample(items, len(items)) for g, items in sorted(groups.items())}
    chosen: list[dict[str, object]] = []
    seen: set[object] = set(exclude)
    while len(chosen) < size and any(pools.values()):
        for g in sorted(pools):
            while pools[g] and len(chosen) < size:
                item = pools[g].pop()
                if item["call_key"] not in seen:
                    seen.add(item["call_key"])
                    chosen.append({"store": store, **item, "label": None, "note": ""})
                    break
    return chosen


def main(args: list[str]) -> None:
    held_out = "--held-out" in args
    names = [a for a in args if a != "--held-out"]
    out = OUT / "held-out" if held_out else OUT
    out.mkdir(parents=True, exist_ok=True)
    for store in names or sorted(p.stem for p in STORES.glob("*.sqlite")):
        path = out / f"{store}.jsonl"
        if path.exists() and any(json.loads(line).get("label") is not None for line in path.open()):
            print(f"{path}: labelled already, kept")
            continue
        if held_out:
            first = frozenset(json.loads(line)["call_key"] for line in (OUT / f"{store}.jsonl").open())
            sample = draw(store, HELD_OUT, "reader-held-out", first)
        else:
            sample = draw(store)
        path.write_text("".join(json.dumps(item, ensure_ascii=False) + "\n" for item in sample))
        print(f"{path}: {len(sample)} replies")


if __name__ == "__main__":
    main(sys.argv[1:])
