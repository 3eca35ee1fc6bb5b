"""Per-model-endpoint concurrency limits: Redis semaphores whose slots are leases (a private redis-server)."""

from __future__ import annotations

import threading
import time

import pytest
import redis

from orchestrator.limits import Limit, Semaphores, limits_for_run, model_limit
from tests.service.conftest import requires_redis

pytestmark = requires_redis


@pytest.fixture
def client(redis_server) -> redis.Redis:
    c = redis.Redis.from_url(redis_server.url)
    c.flushdb()
    return c


def test_limit_is_shared_and_released(client) -> None:
    sems = Semaphores(client, lease_s=30)
    limit = [Limit("il:limit:model:x", 2)]
    a, b = sems.try_acquire(limit, "a"), sems.try_acquire(limit, "b")
    assert a and b and sems.try_acquire(limit, "c") is None
    assert Semaphores(redis.Redis(connection_pool=client.connection_pool), 30).try_acquire(limit, "d") is None
    a[0].release()
    assert sems.try_acquire(limit, "c")
    assert sems.try_acquire(limit, "b"), "re-acquiring a held slot renews it, it does not take a second one"


def test_all_or_none(client) -> None:
    sems = Semaphores(client, lease_s=30)
    assert sems.try_acquire([Limit("k2", 1)], "holder")
    assert sems.try_acquire([Limit("k1", 1), Limit("k2", 1)], "other") is None
    assert sems.holders("k1") == 0  # the slot taken on k1 was given back


def test_a_dead_holders_lease_expires_and_a_live_one_renews(client) -> None:
    sems = Semaphores(client, lease_s=1)  # 1 s leases
    dead = sems.try_acquire([Limit("k", 1)], "dead")
    live = Semaphores(client, lease_s=1)
    assert dead and live.try_acquire([Limit("k", 1)], "x") is None
    time.sleep(1.2)  # "dead" never renews
    held = live.try_acquire([Limit("k", 1)], "live")
    assert held
    for _ in range(3):
        time.sleep(0.5)
        assert held[0].renew()
    assert live.try_acquire([Limit("k", 1)], "y") is None
    assert dead[0].renew() is False


def test_no_more_than_the_limit_run_at_once(client) -> None:
    sems = Semaphores(client, lease_s=30)
    limit = [Limit("il:limit:model:openai:*", 3)]
    active, peak, done = [0], [0], [0]
    lock = threading.Lock()

    def job(i: int) -> None:
        while True:
            leases = sems.try_acquire(limit, f"job{i}")
            if leases is not None:
                break
            time.sleep(0.005)
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        time.sleep(0.02)
        with lock:
            active[0] -= 1
            done[0] += 1
        leases[0].release()

    threads = [threading.Thread(target=job, args=(i,)) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert done[0] == 20 and peak[0] == 3


def test_which_limits_apply_to_a_run() -> None:
    service = {"openai:*": 8, "openai:gpt-4o": 2, "scripted:*": 100}
    assert model_limit(service, "openai:gpt-4o") == Limit("il:limit:model:openai:gpt-4o", 2)
    assert model_limit(service, "openai:o3") == Limit("il:limit:model:openai:*", 8)
    assert model_limit(service, "anthropic:x") is None
    limits = limits_for_run(service, "b1", "openai:o3", {"max_runs": 4, "per_model": {"openai:o3": 1}})
    assert [(l.key, l.limit) for l in limits] == [
        ("il:limit:model:openai:*", 8), ("il:limit:batch:b1", 4), ("il:limit:batch:b1:model:openai:o3", 1)]
    assert limits_for_run({}, "b1", "scripted:honest", None) == []
