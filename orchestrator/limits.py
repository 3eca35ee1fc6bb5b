"""Concurrency limits shared by every worker: counting semaphores in Redis whose slots are leases.

A slot is a member of a sorted set scored by its expiry (Redis server time, so
worker clocks do not matter). Taking a slot first drops expired members, so a
worker that died without releasing frees its slots once their lease runs out;
the holder renews its leases with each run heartbeat. Limits never block a
worker: if a slot is not free the caller gets ``None`` and re-queues the task.

Keys: ``il:limit:model:<pattern>`` for the service's per-model-endpoint limits
(``INTEGRITYLAB_MODEL_LIMITS="openai:*=8,openai:gpt-4o=2"``: the most specific
matching pattern applies, and every model matching it shares its slots),
``il:limit:batch:<id>`` and ``il:limit:batch:<id>:model:<spec>`` for a batch's
own caps (``concurrency`` in the batch spec).
"""

from __future__ import annotations

import fnmatch
import logging
import uuid
from dataclasses import dataclass

import redis

log = logging.getLogger(__name__)
PREFIX = "il:limit:"

_ACQUIRE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local ttl = tonumber(ARGV[2])
if redis.call('ZSCORE', KEYS[1], ARGV[3]) or redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[1]) then
  redis.call('ZADD', KEYS[1], now + ttl, ARGV[3])
  redis.call('PEXPIRE', KEYS[1], ttl * 2)
  return 1
end
return 0
"""

_RENEW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[1])
local score = redis.call('ZSCORE', KEYS[1], ARGV[2])
if not score or tonumber(score) < now then
  return 0
end
redis.call('ZADD', KEYS[1], now + ttl, ARGV[2])
redis.call('PEXPIRE', KEYS[1], ttl * 2)
return 1
"""


@dataclass(frozen=True)
class Limit:
    key: str
    limit: int


@dataclass
class Lease:
    """One held slot. ``renew`` returns False once the slot was lost (expired and possibly taken)."""

    client: redis.Redis
    key: str
    holder: str
    ttl_ms: int

    def renew(self) -> bool:
        return bool(self.client.eval(_RENEW, 1, self.key, self.ttl_ms, self.holder))

    def release(self) -> None:
        self.client.zrem(self.key, self.holder)


class Semaphores:
    """Try-acquire several limits at once: all or none."""

    def __init__(self, client: redis.Redis, lease_s: float) -> None:
        self.client = client
        self.ttl_ms = max(1000, int(lease_s * 1000))

    def try_acquire(self, limits: list[Limit], holder: str | None = None) -> list[Lease] | None:
        holder = holder or uuid.uuid4().hex
        leases: list[Lease] = []
        for item in limits:
            if self.client.eval(_ACQUIRE, 1, item.key, item.limit, self.ttl_ms, holder):
                leases.append(Lease(self.client, item.key, holder, self.ttl_ms))
                continue
            release_all(leases)
            return None
        return leases

    def holders(self, key: str) -> int:
        """Slots currently held under ``key`` (expired ones included until the next acquire drops them)."""
        return int(self.client.zcard(key))


def release_all(leases: list[Lease]) -> None:
    for lease in leases:
        try:
            lease.release()
        except redis.RedisError as exc:  # the lease expires by itself
            log.warning("could not release %s: %s", lease.key, exc)


def model_limit(model_limits: dict[str, int], model: str) -> Limit | None:
    """The service-wide limit for ``model``: an exact entry, else the longest matching pattern."""
    if model in model_limits:
        return Limit(f"{PREFIX}model:{model}", model_limits[model])
    matches = [p for p in model_limits if fnmatch.fnmatchcase(model, p)]
    if not matches:
        return None
    pattern = max(matches, key=len)
    return Limit(f"{PREFIX}model:{pattern}", model_limits[pattern])


def limits_for_run(model_limits: dict[str, int], batch_id: str, model: str,
                   caps: dict | None) -> list[Limit]:
    """Every limit a run of ``model`` in batch ``batch_id`` must hold a slot of."""
    limits: list[Limit] = []
    service = model_limit(model_limits, model)
    if service is not None:
        limits.append(service)
    caps = caps or {}
    if caps.get("max_runs"):
        limits.append(Limit(f"{PREFIX}batch:{batch_id}", int(caps["max_runs"])))
    per_model = (caps.get("per_model") or {}).get(model)
    if per_model:
        limits.append(Limit(f"{PREFIX}batch:{batch_id}:model:{model}", int(per_model)))
    return limits
