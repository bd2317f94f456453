"""init_process_group as a barrier of a round's members.

Every member's init returns when the last member arrives; a member that never comes (it died
after the rendezvous) fails each waiter's init `timeout` after that waiter arrived. All of a
round's members wait on one event, and one timer per round (not per member) serves the
deadlines, which come in arrival order: a round whose members all arrive costs one event
to release them and one spent timer, however many members it has.
"""
from __future__ import annotations

from collections import deque
from functools import partial

import simpy

_TIMED_OUT = "process group init timed out"


class _Barrier:
    __slots__ = ("names", "done", "waiting", "timing")

    def __init__(self, env: simpy.Environment):
        self.names: set[str] = set()      # members arrived (a member that dies is taken out)
        self.done = env.event()           # everyone is in
        self.waiting: deque = deque()     # (deadline, process) in arrival order
        self.timing = False               # a timer is set for the first deadline


class InitBarriers:
    def __init__(self, env: simpy.Environment, timeout: float):
        self.env, self.timeout = env, timeout
        self.barriers: dict[int, _Barrier] = {}

    def join(self, key: int, name: str, members: int):
        """Process body (yield from): True when all `members` arrived, False at the deadline."""
        env = self.env
        b = self.barriers.get(key)
        if b is None:
            b = self.barriers[key] = _Barrier(env)
        b.names.add(name)
        if len(b.names) >= members:
            b.done.succeed()
            del self.barriers[key]            # everyone is in: nothing left to track
            return True
        b.waiting.append((env.now + self.timeout, env.active_process))
        if not b.timing:
            b.timing = True
            env.timeout(self.timeout).callbacks.append(partial(self._expire, b))
        try:
            yield b.done
        except simpy.Interrupt as i:
            if i.cause is not _TIMED_OUT:     # a crash or a stop: not ours to handle
                raise
            return False
        return True

    def _expire(self, b: _Barrier, _e) -> None:
        if b.done.triggered:
            b.timing = False
            return
        now = self.env.now
        while b.waiting and b.waiting[0][0] <= now + 1e-9:
            _, proc = b.waiting.popleft()
            if proc.is_alive and proc.target is b.done:
                proc.interrupt(_TIMED_OUT)
        if b.waiting:
            self.env.timeout(b.waiting[0][0] - now).callbacks.append(partial(self._expire, b))
        else:
            b.timing = False

    def member_died(self, name: str) -> None:
        """A dead host never completes an init: the rounds it had arrived at wait for it again."""
        for b in self.barriers.values():
            b.names.discard(name)
