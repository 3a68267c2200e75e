"""``torch.utils.data.DataLoader``: batches from a dataset through a sampler, with torch's order and random
draws. Loading always runs in this process: ``num_workers > 0`` is accepted (and checked as torch checks it),
there are no worker processes."""
from __future__ import annotations

import math
import os
import warnings
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Generic, TypeVar

import numpy as np

from ...core import dtypes
from ...eager.base import is_traced, make_tensor
from ...eager.functional import empty
from ...eager.random import Generator
from ...eager.tensor import Tensor
from .collate import collate_tensor_fn, default_collate, default_collate_fn_map, default_convert
from .dataset import Dataset, IterableDataset, Subset, TensorDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader", "default_collate", "default_convert", "get_worker_info"]

T_co = TypeVar("T_co", covariant=True)

_FROZEN = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset", "persistent_workers")


def get_worker_info() -> None:
    """Always None: data loading runs in the calling process (torch's answer outside a worker)."""
    return None


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

    ``num_workers > 0`` runs in this process too (no worker processes, no prefetching: the dataset's own random
    draws come from the global generator, ``get_worker_info()`` is None and an ``IterableDataset`` is iterated
    once, not once per worker); ``pin_memory``, ``timeout``, ``worker_init_fn``, ``multiprocessing_context``,
    ``prefetch_factor``, ``persistent_workers`` and ``in_order`` are checked as torch checks them and otherwise
    have no effect.
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
        if self.num_workers:
            self._check_worker_number()
        return _DataLoaderIter(self)

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
    values, dtypes and fresh contiguous tensors); None where that does not apply."""
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
    return [make_tensor(t._data[rows]) for t in tensors]


class _DataLoaderIter:
    """One pass over a ``DataLoader``: indices from its sampler, samples from its dataset, batches from its
    ``collate_fn``."""

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
        # torch draws the workers' base seed here, used or not: the random stream moves as torch's does
        self._base_seed = int(empty((), dtype=dtypes.int64).random_(generator=loader.generator).item())
        self._dataset_iter = iter(self._dataset) if self._iterable else None
        self._ended = False
        self._num_yielded = 0

    def __iter__(self) -> _DataLoaderIter:
        return self

    def __len__(self) -> int:
        return len(self._index_sampler)

    def _fetch(self, index: Any) -> Any:
        if self._dataset_iter is None:
            if not self._auto_collation:
                return self._collate_fn(self._dataset[index])
            if self._collate_fn is default_collate and (rows := _tensor_rows(self._dataset, index)) is not None:
                return rows
            if getattr(self._dataset, "__getitems__", None):
                return self._collate_fn(self._dataset.__getitems__(index))  # type: ignore[attr-defined]
            return self._collate_fn([self._dataset[i] for i in index])
        if self._ended:
            raise StopIteration
        if not self._auto_collation:
            return self._collate_fn(next(self._dataset_iter))
        data = []
        for _ in index:
            try:
                data.append(next(self._dataset_iter))
            except StopIteration:
                self._ended = True
                break
        if not data or (self._drop_last and len(data) < len(index)):
            raise StopIteration
        return self._collate_fn(data)

    def __next__(self) -> Any:
        data = self._fetch(next(self._sampler_iter))
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
