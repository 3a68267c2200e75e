"""``torch.utils.data.DataLoader``: batches from a dataset through a sampler, with torch's order and random
draws. Loading always runs in this process: ``num_workers > 0`` emulates torch's workers in it (their seeds,
random states, dataset copies, ``worker_init_fn``, ``get_worker_info()`` and their batch schedule), one batch at a
time, with no processes and no parallelism."""
from __future__ import annotations

import collections
import copy
import dataclasses
import itertools
import math
import os
import random
import warnings
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Generic, TypeVar

import numpy as np

from ...core import dtypes
from ...eager.base import is_traced, make_tensor
from ...eager.functional import empty
from ...eager.random import Generator, get_rng_state, manual_seed, set_rng_state
from ...eager.tensor import Tensor
from .collate import collate_tensor_fn, default_collate, default_collate_fn_map, default_convert
from .dataset import Dataset, IterableDataset, Subset, TensorDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader", "WorkerInfo", "default_collate", "default_convert", "get_worker_info"]

T_co = TypeVar("T_co", covariant=True)

_FROZEN = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset", "persistent_workers")


@dataclasses.dataclass(frozen=True, slots=True)
class WorkerInfo:
    """What ``get_worker_info()`` returns inside a worker: its id, the number of workers, its seed and its copy
    of the dataset."""

    id: int
    num_workers: int
    seed: int
    dataset: Any
    rng: Any = None
    worker_method: str | None = "multiprocessing"


_worker_info: WorkerInfo | None = None


def get_worker_info() -> WorkerInfo | None:
    """The current worker's ``WorkerInfo`` while a ``DataLoader`` worker runs (its ``worker_init_fn``, its
    dataset's ``__iter__`` / ``__getitem__``, its ``collate_fn``), else None."""
    return _worker_info


class _InfiniteConstantSampler(Sampler):
    """The sampler of an iterable dataset: ``None`` forever."""

    def __iter__(self) -> Iterator[None]:
        while True:
            yield None


class DataLoader(Generic[T_co]):
    """Iterate over ``dataset`` in batches (torch's ``DataLoader``).

    ``batch_size`` samples per batch (``None``: samples one by one, converted by ``default_convert``), in the
    order of ``sampler`` (``RandomSampler(dataset, generator=generator)`` with ``shuffle=True``, else
    sequential) or of ``batch_sampler``; ``collate_fn`` (``default_collate``) makes each batch; ``drop_last``
    drops a short last batch. Each ``iter()`` draws torch's per-epoch base seed from ``generator`` (or the global
    generator), and a shuffling sampler its permutation after it, so batches and the random stream afterwards
    are torch's for the same seed.

    ``num_workers > 0`` runs in this process, one batch at a time: each of torch's workers is emulated with a
    shallow copy of the dataset and its own torch / Python / numpy random states seeded as torch seeds a worker
    (``base_seed + id``); ``worker_init_fn`` and the dataset's code run as that worker (``get_worker_info()``
    gives its ``WorkerInfo``), batches go round robin to the workers, each worker iterates its own replica of an
    ``IterableDataset``, and ``persistent_workers`` keeps the workers (and draws the base seed once), so
    batches, dataset-side random draws and the process's random stream are torch's. ``pin_memory``,
    ``timeout``, ``multiprocessing_context`` and ``in_order`` are checked as torch checks them and have no
    effect (batches always come in order); a dataset's side effects are those of one process.
    """

    dataset: Dataset[T_co]
    batch_size: int | None
    num_workers: int
    drop_last: bool
    sampler: Sampler | Iterable
    __initialized = False

    def __init__(self, dataset: Dataset[T_co], batch_size: int | None = 1, shuffle: bool | None = None,
                 sampler: Sampler | Iterable | None = None, batch_sampler: Sampler | Iterable | None = None,
                 num_workers: int = 0, collate_fn: Callable[[list], Any] | None = None, pin_memory: bool = False,
                 drop_last: bool = False, timeout: float = 0, worker_init_fn: Callable[[int], None] | None = None,
                 multiprocessing_context: Any = None, generator: Generator | None = None, *,
                 prefetch_factor: int | None = None, persistent_workers: bool = False,
                 pin_memory_device: str = "", in_order: bool = True) -> None:
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                             "multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 "
                             "to enable multiprocessing, otherwise set prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        if multiprocessing_context is not None and num_workers == 0:
            raise ValueError("multiprocessing_context can only be used with multi-process loading (num_workers > 0), "
                             f"but got num_workers={num_workers}")
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order

        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            if shuffle not in {False, None}:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, but got "
                                 f"shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler option, but got "
                                 f"sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified batch_sampler option, but "
                                 f"got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and "
                                 "drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with drop_last")
        if sampler is None:
            if self._iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)  # type: ignore[arg-type]
            else:
                sampler = SequentialSampler(dataset)  # type: ignore[arg-type]
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self._IterableDataset_len_called: int | None = None
        self._iterator: _WorkerLoaderIter | None = None
        self.__initialized = True
        self._check_worker_number()

    def __setattr__(self, attr: str, val: Any) -> None:
        if self.__initialized and attr in _FROZEN:
            raise ValueError(f"{attr} attribute should not be set after {self.__class__.__name__} is initialized")
        super().__setattr__(attr, val)

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self) -> Any:
        return self.batch_sampler if self._auto_collation else self.sampler

    def __iter__(self) -> _DataLoaderIter:
        if not self.num_workers:
            return _DataLoaderIter(self)
        if self.persistent_workers:
            if self._iterator is None:
                self._iterator = _WorkerLoaderIter(self)
            else:
                self._iterator._reset(self)
            return self._iterator
        self._check_worker_number()
        return _WorkerLoaderIter(self)

    def __len__(self) -> int:
        if self._iterable:
            length = self._IterableDataset_len_called = len(self.dataset)  # type: ignore[arg-type]
            if self.batch_size is not None:
                length = length // self.batch_size if self.drop_last else math.ceil(length / self.batch_size)
            return length
        return len(self._index_sampler)

    def _check_worker_number(self) -> None:
        if not self.num_workers:
            return
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        if cpus is None or self.num_workers > cpus:
            checked = "" if hasattr(os, "sched_getaffinity") else " (`cpuset` is not taken into account)"
            suggest = (f"Our suggested max number of worker in current system is {cpus}{checked}, which is smaller "
                       "than what this DataLoader is going to create." if cpus is not None else
                       "DataLoader is not able to compute a suggested max number of worker in current system.")
            warnings.warn(f"This DataLoader will create {self.num_workers} worker processes in total. {suggest} "
                          "Please be aware that excessive worker creation might get DataLoader running slow or even "
                          "freeze, lower the worker number to avoid potential slowness/freeze if necessary.",
                          stacklevel=3)


def _tensor_rows(dataset: Any, index: list) -> list[Tensor] | None:
    """``default_collate([dataset[i] for i in index])`` for a ``TensorDataset`` (or a ``Subset`` of one) of tensors
    without a graph, gathered by one numpy take per tensor instead of a getitem per sample and a stack (the same
    values and dtypes, in fresh contiguous tensors as torch's stack makes); None where that does not apply."""
    if type(dataset) is Subset and type(dataset.dataset) is TensorDataset:
        try:
            index = [dataset.indices[i] for i in index]
        except Exception:  # noqa: BLE001  (the general path raises what it raises)
            return None
        dataset = dataset.dataset
    if type(dataset) is not TensorDataset or default_collate_fn_map.get(Tensor) is not collate_tensor_fn:
        return None
    tensors = dataset.tensors
    if not index or not all(type(t) is Tensor and not t.requires_grad and not is_traced(t) for t in tensors):
        return None
    if not all(type(i) is int for i in index):
        return None
    rows = np.array(index, dtype=np.int64)
    if rows.min() < 0 or rows.max() >= tensors[0].shape[0]:
        return None
    return [make_tensor(np.ascontiguousarray(t._data[rows])) for t in tensors]  # contiguous, as torch.stack


class _Fetcher:
    """Samples to batches for one dataset (torch's map / iterable fetchers): ``fetch(index)`` raises
    StopIteration when an iterable dataset is done."""

    def __init__(self, dataset: Any, iterable: bool, auto_collation: bool, collate_fn: Callable, drop_last: bool):
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last
        self.dataset_iter = iter(dataset) if iterable else None
        self.ended = False

    def fetch(self, index: Any) -> Any:
        if self.dataset_iter is None:
            if not self.auto_collation:
                return self.collate_fn(self.dataset[index])
            if self.collate_fn is default_collate and (rows := _tensor_rows(self.dataset, index)) is not None:
                return rows
            if getattr(self.dataset, "__getitems__", None):
                return self.collate_fn(self.dataset.__getitems__(index))
            return self.collate_fn([self.dataset[i] for i in index])
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            return self.collate_fn(next(self.dataset_iter))
        data = []
        for _ in index:
            try:
                data.append(next(self.dataset_iter))
            except StopIteration:
                self.ended = True
                break
        if not data or (self.drop_last and len(data) < len(index)):
            raise StopIteration
        return self.collate_fn(data)


class _DataLoaderIter:
    """One pass over a ``DataLoader`` without workers: indices from its sampler, batches from its fetcher."""

    def __init__(self, loader: DataLoader) -> None:
        self._dataset = loader.dataset
        self._iterable = loader._iterable
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._collate_fn = loader.collate_fn
        self._len_called = loader._IterableDataset_len_called
        self._num_workers = loader.num_workers
        if loader.pin_memory:
            warnings.warn("'pin_memory' argument is set as true but no accelerator is found, then device pinned "
                          "memory won't be used.", stacklevel=3)
        self._sampler_iter = iter(self._index_sampler)
        # torch draws the workers' base seed here, workers or not: the random stream moves as torch's does
        self._base_seed = int(empty((), dtype=dtypes.int64).random_(generator=loader.generator).item())
        self._num_yielded = 0
        if not self._num_workers:
            self._fetcher = self._new_fetcher(self._dataset)

    def _new_fetcher(self, dataset: Any) -> _Fetcher:
        return _Fetcher(dataset, self._iterable, self._auto_collation, self._collate_fn, self._drop_last)

    def __iter__(self) -> _DataLoaderIter:
        return self

    def __len__(self) -> int:
        return len(self._index_sampler)

    def _next_data(self) -> Any:
        return self._fetcher.fetch(next(self._sampler_iter))

    def __next__(self) -> Any:
        data = self._next_data()
        self._num_yielded += 1
        if self._iterable and self._len_called is not None and self._num_yielded > self._len_called:
            msg = (f"Length of IterableDataset {self._dataset} was reported to be {self._len_called}(when accessing "
                   f"len(dataloader)), but {self._num_yielded} samples have been fetched. ")
            if self._num_workers > 0:
                msg += ("For multiprocessing data-loading, this could be caused by not properly configuring the "
                        "IterableDataset replica at each worker. Please see "
                        "https://pytorch.org/docs/stable/data.html#torch.utils.data.IterableDataset for examples.")
            warnings.warn(msg, stacklevel=2)
        return data


# ---------------------------------------------------------------------------- workers, run in this process

def _generate_state(base_seed: int, worker_id: int) -> list[int]:
    """The four 32-bit words torch seeds a worker's numpy global generator with (a SeedSequence-style hash of
    the worker id and the 64-bit base seed)."""
    mask = 0xFFFFFFFF
    mult_a, mult_b = 0x931E8875, 0x58F38DED
    hash_a = 0x43B0D7E5

    def hash32(value: int) -> int:
        nonlocal hash_a
        value = (value ^ hash_a) & mask
        hash_a = (hash_a * mult_a) & mask
        value = (value * hash_a) & mask
        return (value ^ (value >> 16)) & mask

    def mix(x: int, y: int) -> int:
        r = ((0xCA01F9DD * x) - (0x4973F715 * y)) & mask
        return (r ^ (r >> 16)) & mask

    pool = [hash32(e) for e in (worker_id, base_seed & mask, base_seed >> 32, 0)]
    for src in range(4):
        for dst in range(4):
            if src != dst:
                pool[dst] = mix(pool[dst], hash32(pool[src]))
    hash_b = 0x8B51F9DD
    state = []
    for value in pool:
        value = (value ^ hash_b) & mask
        hash_b = (hash_b * mult_b) & mask
        value = (value * hash_b) & mask
        state.append((value ^ (value >> 16)) & mask)
    return state


class _Worker:
    """One of torch's worker processes, emulated: a shallow copy of the dataset, the worker's own torch, Python
    and numpy random states (seeded as torch seeds a worker), its ``WorkerInfo`` and its fetcher. Code of the
    worker runs inside ``running()``, which swaps those states in and out of the process's globals."""

    def __init__(self, loader_iter: _WorkerLoaderIter, worker_id: int) -> None:
        base = loader_iter._base_seed
        try:
            dataset = copy.copy(loader_iter._dataset)
        except Exception:  # noqa: BLE001  (an uncopyable dataset is shared)
            dataset = loader_iter._dataset
        self.info = WorkerInfo(id=worker_id, num_workers=loader_iter._num_workers, seed=base + worker_id,
                               dataset=dataset)
        self.states: tuple | None = None
        with self.running():
            manual_seed(base + worker_id)
            random.seed(base + worker_id)
            np.random.seed(_generate_state(base, worker_id))
            if loader_iter._worker_init_fn is not None:
                loader_iter._worker_init_fn(worker_id)
            self.fetcher = loader_iter._new_fetcher(dataset)

    def running(self) -> _Worker:
        """``with worker.running():`` runs the block as this worker."""
        return self

    def __enter__(self) -> None:
        global _worker_info
        self._outside = (get_rng_state(), random.getstate(), np.random.get_state(), _worker_info)
        if self.states is not None:
            set_rng_state(self.states[0])
            random.setstate(self.states[1])
            np.random.set_state(self.states[2])
        _worker_info = self.info

    def __exit__(self, *exc: Any) -> None:
        global _worker_info
        self.states = (get_rng_state(), random.getstate(), np.random.get_state())
        torch_state, python_state, numpy_state, _worker_info = self._outside
        set_rng_state(torch_state)
        random.setstate(python_state)
        np.random.set_state(numpy_state)


class _WorkerLoaderIter(_DataLoaderIter):
    """A pass with ``num_workers`` workers, as torch schedules them (``in_order``): the sampler runs
    ``prefetch_factor * num_workers`` batches ahead, batch ``i`` goes to the next worker still active in a
    round robin, and an iterable dataset ends per worker."""

    def __init__(self, loader: DataLoader) -> None:
        super().__init__(loader)
        self._prefetch = loader.prefetch_factor * loader.num_workers
        self._worker_init_fn = loader.worker_init_fn
        self._workers = [_Worker(self, w) for w in range(self._num_workers)]
        self._reset(loader, first_iter=True)

    def _reset(self, loader: DataLoader, first_iter: bool = False) -> None:
        if not first_iter:  # a persistent iterator's next epoch: same workers, same random states
            self._sampler_iter = iter(self._index_sampler)
            self._num_yielded = 0
            self._len_called = loader._IterableDataset_len_called
            for worker in self._workers:
                with worker.running():
                    worker.fetcher = self._new_fetcher(worker.info.dataset)
        self._tasks: collections.deque[tuple[int, Any]] = collections.deque()
        self._active = [True] * self._num_workers
        self._cycle = itertools.cycle(range(self._num_workers))
        for _ in range(self._prefetch):
            self._put_index()

    def _put_index(self) -> None:
        try:
            index = next(self._sampler_iter)
        except StopIteration:
            return
        for _ in range(self._num_workers):
            w = next(self._cycle)
            if self._active[w]:
                self._tasks.append((w, index))
                return

    def _next_data(self) -> Any:
        while True:
            while self._tasks and not self._active[self._tasks[0][0]]:
                self._tasks.popleft()
            if not self._tasks:
                raise StopIteration
            w, index = self._tasks.popleft()
            worker = self._workers[w]
            try:
                with worker.running():
                    data = worker.fetcher.fetch(index)
            except StopIteration:
                if not self._iterable:
                    raise
                self._active[w] = False
                self._put_index()
                continue
            self._put_index()
            return data
