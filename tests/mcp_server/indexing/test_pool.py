"""GenerationPool: calls keep the generation they started on; a retired one closes once, when drained."""

from __future__ import annotations

import threading

import anyio
import pytest

from mcp_server.indexing.pool import GenerationPool


def test_a_call_keeps_its_generation_and_the_last_call_closes_the_retired_one() -> None:
    closed: list[str] = []
    pool: GenerationPool[str] = GenerationPool(closed.append)
    assert pool.publish("gen-1") is None
    with pool.hold() as first:
        pool.publish("gen-2")
        with pool.hold() as second:
            assert (first, second) == ("gen-1", "gen-2")
        assert closed == []  # gen-1 is still held
    assert closed == ["gen-1"]
    pool.publish(None)
    assert closed == ["gen-1", "gen-2"] and pool.current is None


def test_calls_on_many_threads_never_see_a_closed_generation() -> None:
    closed: list[int] = []
    seen_closed: list[int] = []
    pool: GenerationPool[int] = GenerationPool(closed.append)
    pool.publish(0)
    stop = threading.Event()

    def call() -> None:
        while not stop.is_set():
            with pool.hold() as generation:
                assert generation is not None
                if generation in closed:
                    seen_closed.append(generation)

    threads = [threading.Thread(target=call) for _ in range(4)]
    for thread in threads:
        thread.start()
    for generation in range(1, 200):
        pool.publish(generation)
    stop.set()
    for thread in threads:
        thread.join()
    pool.publish(None)
    assert seen_closed == [] and sorted(closed) == list(range(200))  # each closed once, none while held


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_drain_closes_a_generation_still_held_after_the_timeout() -> None:
    closed: list[str] = []
    pool: GenerationPool[str] = GenerationPool(closed.append)
    pool.publish("gen-1")
    with pool.hold():
        old = pool.publish("gen-2")
        assert old is not None
        assert await pool.drain(old, 0.05) == 1  # one call was still running
        assert closed == ["gen-1"]
    assert closed == ["gen-1"]  # not closed a second time by the call that outlasted the drain
