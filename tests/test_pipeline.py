"""The one indexing pipeline (issue #19): every source through the same steps, one update entry."""
from __future__ import annotations

import time

from test_hooks import query, sid

from prima_memory import indexer
from prima_memory.memory import ALL, HOOK, Memory

OLD = time.time() - 30 * 86400


def test_a_transcript_killed_between_committed_steps_is_resumed_not_taken_as_read(
        env, monkeypatch):
    """Its size is written only once it is read to its end: a run that stopped after a step
    was committed (a kill, an error) leaves it to the next run, which reads on from there."""
    monkeypatch.setattr(indexer, "BATCH_BYTES", 4096)
    monkeypatch.setattr(indexer, "STEP_BYTES", 1)  # every step committed
    t = env.transcript(sid(0xB), start=OLD)
    for i in range(40):
        t.exchange(f"question {i} about the heron", "an answer of some length " * 10)
    t.exchange("the last lapwing question", "Done.")
    real, calls = indexer.Indexer._apply, []

    def dies_on_the_third_step(self, d):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt  # (not an Exception: ends the run, as a kill would)
        return real(self, d)
    monkeypatch.setattr(indexer.Indexer, "_apply", dies_on_the_third_step)
    mem = Memory(str(env.ws))
    try:
        try:
            mem.update()
        except KeyboardInterrupt:
            pass
        kept = query(env, "SELECT count(*) FROM messages")[0][0]
        assert 0 < kept < 82 and mem.pending() != (0, 0)
        monkeypatch.setattr(indexer.Indexer, "_apply", real)
        mem.update()
        assert mem.pending() == (0, 0)
        assert query(env, "SELECT count(*) FROM messages")[0][0] == 82
    finally:
        mem.close()


def test_one_update_reads_every_source_asked_for_under_one_lock(env, monkeypatch):
    mem = Memory(str(env.ws))
    taken = []
    real = mem._take_lock
    monkeypatch.setattr(mem, "_take_lock", lambda timeout: (taken.append(timeout),
                                                            real(timeout))[1])
    try:
        env.transcript(sid(0xC), start=OLD).exchange("how do herons fish", "Patiently.")
        assert mem.update(sources=HOOK).files_read == 1 and len(taken) == 1
        mem.update(sources=ALL)  # the other sources' folders, listed a first time
        assert len(taken) == 2
        assert mem.update(sources=ALL).files_read == 0 and len(taken) == 2  # nothing changed
        env.transcript(sid(0xD), start=OLD).exchange("and egrets", "Also patiently.")
        rep = mem.update(sources=ALL, quick=True)
        assert rep.files_read == 1 and len(taken) == 3
    finally:
        mem.close()
