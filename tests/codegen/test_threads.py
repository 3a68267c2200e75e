"""codegen.threads: a parallel kernel on all threads or on one, by recent timings (fake clock and controls)."""
from __future__ import annotations

import random

import pytest

from codegen import threads
from codegen.threads import FIRST, MAX_EVERY, WINDOW, Adaptive


class Machine:
    """Fake threading controls and clock: a call takes ``cost[threads]`` seconds."""

    def __init__(self, all_threads: int = 2, cost: dict | None = None) -> None:
        self.full = all_threads
        self.n = all_threads
        self.now = 0.0
        self.cost = cost or {}
        self.sets: list[int] = []
        self.ran_on: list[int] = []

    def get(self) -> int:
        return self.n

    def put(self, n: int) -> None:
        self.sets.append(n)
        self.n = n

    def clock(self) -> float:
        return self.now

    def kernel(self, x: float) -> float:
        self.ran_on.append(self.n)
        self.now += self.cost[self.n]
        return 2 * x


def adaptive(m: Machine) -> Adaptive:
    return Adaptive(m.kernel, (m.get, m.put), clock=m.clock)


def test_one_thread_wins_on_a_busy_machine():
    m = Machine(cost={2: 20e-3, 1: 1e-3})
    a = adaptive(m)
    assert [a(1.0) for _ in range(FIRST - 1)] == [2.0] * (FIRST - 1)
    assert m.ran_on == [2] * (FIRST - 1) and a.threads == "all"
    a(1.0)                                  # the first look at one thread: faster, it becomes the choice
    assert m.ran_on[-1] == 1 and a.threads == "one" and m.sets == [1, 2] and m.n == 2
    for _ in range(20):
        a(1.0)
    # only the looks back at all threads, two calls each (the first wakes the workers: not timed)
    assert m.ran_on[FIRST:] == [1] * 3 + [2, 2] + [1] * 7 + [2, 2] + [1] * 6
    assert FIRST - 1 <= len(a.samples[0]) <= WINDOW and a.threads == "one"
    assert m.n == 2                         # the caller's setting restored after every call


def test_all_threads_keep_an_idle_machine_and_looks_get_rarer():
    m = Machine(cost={2: 0.1e-3, 1: 0.2e-3})
    a = adaptive(m)
    for _ in range(400):
        a(1.0)
    ones = [i for i, n in enumerate(m.ran_on) if n == 1]
    assert a.threads == "all" and ones == [FIRST - 1]      # one look; all-thread calls never slowed: no other
    assert len(a.samples[0]) == WINDOW      # (the all-thread call after each look is not timed)
    assert a.every == MAX_EVERY


def test_looks_resume_when_all_thread_calls_slow_down_and_get_rarer():
    """All-thread calls slower than the fastest seen (a noisy machine, not slow enough to switch): looks at one
    thread at doubling intervals, up to MAX_EVERY calls."""
    m = Machine(cost={2: 0.1e-3, 1: 0.2e-3})
    a = adaptive(m)
    for _ in range(20):
        a(1.0)
    m.cost = {2: 0.6e-3, 1: 0.25e-3}        # 6x the fastest (past SUSPECT), under MARGIN times one thread's
    start = len(m.ran_on)
    for _ in range(600):
        a(1.0)
    ones = [i for i, n in enumerate(m.ran_on) if n == 1 and i >= start]
    gaps = [b - a for a, b in zip(ones, ones[1:])]
    assert a.threads == "all" and len(ones) >= 5
    assert gaps == sorted(gaps) and gaps[-1] == MAX_EVERY


def test_the_choice_follows_the_machine():
    m = Machine(cost={2: 0.1e-3, 1: 0.2e-3})
    a = adaptive(m)
    for _ in range(100):
        a(1.0)
    assert a.threads == "all"
    m.cost = {2: 20e-3, 1: 1e-3}            # the machine gets busy: all-thread calls slow, seen on every call
    for _ in range(MAX_EVERY + WINDOW + 2):
        a(1.0)
    assert a.threads == "one"
    m.cost = {2: 0.1e-3, 1: 0.2e-3}         # idle again: the looks back at all threads see it
    for _ in range(2 * (WINDOW + 1) * FIRST * 4):
        a(1.0)
    assert a.threads == "all"


def test_a_slowdown_of_the_chosen_setting_switches_without_waiting_for_a_look():
    m = Machine(cost={2: 0.1e-3, 1: 0.2e-3})
    a = adaptive(m)
    for _ in range(40):
        a(1.0)
    assert a.threads == "all" and a.next - a.calls > WINDOW
    m.cost = {2: 20e-3, 1: 1e-3}
    for _ in range(WINDOW // 2):
        a(1.0)
    assert a.threads == "all"               # a minority of slow calls: the median of the last WINDOW holds
    a(1.0)
    assert a.threads == "one" and m.ran_on[-2:] == [2, 2] and a.samples[1] == []
    for _ in range(3):
        a(1.0)
    assert a.threads == "one" and a.samples[1] == pytest.approx([1e-3] * 3)


def test_thread_count_restored_on_error_and_one_thread_setups_untouched():
    m = Machine(cost={2: 20e-3, 1: 1e-3})

    def boom(x):
        m.kernel(x)
        raise ValueError("bad")
    a = Adaptive(boom, (m.get, m.put), clock=m.clock)
    for _ in range(FIRST - 1):
        with pytest.raises(ValueError):
            a(1.0)
    with pytest.raises(ValueError):
        a(1.0)                              # a look at one thread that raises
    assert m.ran_on[-1] == 1 and m.n == 2
    single = Machine(all_threads=1, cost={1: 1e-3})
    b = adaptive(single)
    for _ in range(10):
        assert b(3.0) == 6.0
    assert single.sets == [] and b.calls == 0


def test_adaptive_only_for_parallel_sources(monkeypatch):
    def f(x):
        return x
    assert threads.adaptive(f, "def k(v0):\n    return v0\n") is f
    monkeypatch.setattr(threads, "controls", lambda: (lambda: 2, lambda n: None))
    assert isinstance(threads.adaptive(f, "for c in numba.prange(n):"), Adaptive)
    monkeypatch.setenv("SYMGRAD_ADAPTIVE_THREADS", "0")
    assert threads.adaptive(f, "for c in numba.prange(n):") is f
    monkeypatch.delenv("SYMGRAD_ADAPTIVE_THREADS")
    monkeypatch.setattr(threads, "controls", lambda: None)
    assert threads.adaptive(f, "for c in numba.prange(n):") is None   # no threads started yet: ask again


def test_a_setting_only_a_little_faster_is_not_chosen():
    """A median within ``MARGIN`` of the chosen setting's is noise (a virtual machine's calls spread widely)."""
    m = Machine(cost={2: 0.25e-3, 1: 0.2e-3})       # one thread 1.25x faster: under the margin
    a = adaptive(m)
    for _ in range(200):
        a(1.0)
    assert a.threads == "all"
    m.cost = {2: 1.5e-3, 1: 0.1e-3}                 # all threads past SUSPECT times their best, one thread 15x
                                                    # faster: chosen once the looks' samples show it
    for _ in range(WINDOW * MAX_EVERY + 2):
        a(1.0)
    assert a.threads == "one"


class _Checked(Adaptive):
    """The rule without the shortcut: the chosen setting's median checked on every call."""

    __slots__ = ()

    def __call__(self, *args):
        self.below = False
        return super().__call__(*args)


class _Noisy(Machine):
    """Call times drawn per call: busy and idle spells, spikes, one thread sometimes the faster."""

    def __init__(self, seed: int) -> None:
        super().__init__(cost={2: 0.0, 1: 0.0})
        self.rng = random.Random(seed)
        self.busy = False

    def kernel(self, x: float) -> float:
        if self.rng.random() < 0.05:
            self.busy = not self.busy
        base = {2: 0.1e-3, 1: 0.2e-3} if not self.busy else {2: 20e-3, 1: 1e-3}
        spike = self.rng.choice([1.0] * 8 + [3.0, 12.0])
        self.cost = {k: v * spike * self.rng.uniform(0.8, 1.25) for k, v in base.items()}
        return super().kernel(x)


@pytest.mark.parametrize("seed", range(6))
def test_the_shortcut_makes_the_choices_of_checking_every_call(seed):
    """A call no slower than the limit skips the median (the samples under it stay a majority): the settings run
    are those of the rule that checks the median on every call."""
    runs = []
    for cls in (Adaptive, _Checked):
        m = _Noisy(seed)
        a = cls(m.kernel, (m.get, m.put), clock=m.clock)
        for _ in range(600):
            a(1.0)
        runs.append(m.ran_on)
    assert runs[0] == runs[1]
    assert 1 in runs[0] and 2 in runs[0]       # both settings were chosen at some point
