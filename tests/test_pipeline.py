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


def test_a_file_the_store_refuses_for_its_content_is_failed_and_the_rest_indexed(
        env, monkeypatch):
    """A session too big to number (TooManyMessages: a hostile file) is that file's trouble:
    marked failed, and the run goes on; the other file's messages land in their own session
    (SQLite gives the rolled-back session's row id again)."""
    from prima_memory import storage as storemod
    env.transcript(sid(0xC1), start=OLD).exchange("the first osprey question", "Osprey answer.")
    env.transcript(sid(0xC2), start=OLD + 60).exchange("the second grebe question", "Grebe.")
    real, calls = storemod.Store.new_message_ids, []

    def refuses_the_first(self, session, n):
        calls.append(session)
        if len(calls) == 1:
            raise storemod.TooManyMessages(f"session {session} has too many messages")
        return real(self, session, n)
    monkeypatch.setattr(storemod.Store, "new_message_ids", refuses_the_first)
    mem = Memory(str(env.ws))
    try:
        mem.update()
        statuses = sorted(r[0] for r in query(env, "SELECT status FROM files"))
        assert statuses == ["failed", "ok"]
        sessions = query(env, "SELECT session_id FROM sessions WHERE id IN "
                              "(SELECT DISTINCT id >> 24 FROM messages)")
        assert len(sessions) == 1
        held = query(env, "SELECT text FROM messages WHERE role = 'user'")
        assert len(held) == 1 and ("osprey" in held[0][0]) != ("grebe" in held[0][0])
        owner = query(env, "SELECT s.session_id, m.text FROM messages m JOIN sessions s "
                           "ON s.id = m.id >> 24 WHERE m.role = 'user'")[0]
        assert (owner[0] == sid(0xC1)) == ("osprey" in owner[1])  # in its own session
    finally:
        mem.close()


def test_the_users_key_is_read_again_after_an_unexpected_failure(env, monkeypatch):
    """Only a key read (or known missing) counts as read: an odd error once must not leave a
    long-lived process (the MCP server) opening indexes unchecked for its life."""
    from prima_memory import owner
    real, calls = owner.key, []

    def fails_once():
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("an odd failure")
        return real()
    monkeypatch.setattr(owner, "key", fails_once)
    mem = Memory(str(env.ws))
    try:
        try:
            mem.key()
        except RuntimeError:
            pass
        assert isinstance(mem.key(), bytes)
    finally:
        mem.close()
