"""Slots shared fairly between tenants: one tenant never holds the last free slot while another may need it.

The SQL statements of a team server run in a few slots per process (``RAGMCP_SQL_MAX_CONCURRENT``).
With a plain semaphore, one team sending statements that run to their deadline keeps every
slot busy, and another team's ``SELECT count(*)`` waits seconds behind them. Here a tenant
may hold at most all slots but one when there is more than one tenant: a newcomer always
finds a slot at once, however busy the first is, and a tenant alone still gets the most it
can. Waiting tenants are served in turn, the one holding fewest slots first.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Hashable


class FairSlots:
    """``total`` slots; :meth:`acquire` and :meth:`release` by tenant, from any thread."""

    def __init__(self, total: int) -> None:
        self.total = total
        self._held: dict[Hashable, int] = {}
        self._waiting: dict[Hashable, int] = {}
        self._seen: set[Hashable] = set()
        self._changed = threading.Condition()

    def acquire(self, tenant: Hashable, timeout_s: float) -> bool:
        """Take a slot for ``tenant``, waiting at most ``timeout_s``; False if none came in time."""
        deadline = time.monotonic() + timeout_s
        with self._changed:
            self._seen.add(tenant)
            self._waiting[tenant] = self._waiting.get(tenant, 0) + 1
            try:
                while not self._may_take(tenant):
                    left = deadline - time.monotonic()
                    if left <= 0 or not self._changed.wait(left):
                        if not self._may_take(tenant):
                            return False
                self._held[tenant] = self._held.get(tenant, 0) + 1
                return True
            finally:
                self._waiting[tenant] -= 1
                if not self._waiting[tenant]:
                    del self._waiting[tenant]

    def release(self, tenant: Hashable) -> None:
        with self._changed:
            self._held[tenant] -= 1
            if not self._held[tenant]:
                del self._held[tenant]
            self._changed.notify_all()

    def _may_take(self, tenant: Hashable) -> bool:
        held = sum(self._held.values())
        if held >= self.total:
            return False
        mine = self._held.get(tenant, 0)
        if len(self._seen) > 1 and self.total > 1 and mine >= self.total - 1:
            return False  # the last free slot is kept for another tenant
        # Served in turn: no other waiting tenant holds fewer slots than this one.
        return all(self._held.get(other, 0) >= mine for other in self._waiting if other != tenant)
