"""``symgrad.utils.data`` against ``torch.utils.data`` 2.13: each scenario runs once per library (the library and
its ``utils.data`` passed in) and the two results, made plain (tensors as dtype, shape and values), must be equal:
batch contents and order, the random stream after iterating, collation of nested samples, splits and samplers."""
from __future__ import annotations

import collections
import math
import random
import warnings
from typing import Any, Callable

import numpy as np
import pytest
import torch
import torch.utils.data as tdata

import symgrad as sg
import symgrad.utils.data as sdata

LIBS = {"torch": (torch, tdata), "symgrad": (sg, sdata)}
Point = collections.namedtuple("Point", ["x", "y"])


def plain(v: Any) -> Any:
    """``v`` with every tensor as (dtype, shape, values, requires_grad, grad_fn name), containers kept by kind."""
    if isinstance(v, (torch.Tensor, sg.Tensor)):
        fn = type(v.grad_fn).__name__ if v.grad_fn is not None else None
        return ("tensor", str(v.dtype).split(".")[-1], tuple(v.shape), v.tolist(), v.requires_grad, fn)
    if isinstance(v, tuple) and hasattr(v, "_fields"):
        return (type(v).__name__, *(plain(x) for x in v))
    if isinstance(v, (list, tuple)):
        return (type(v).__name__, [plain(x) for x in v])
    if isinstance(v, dict):
        return ("dict", {k: plain(x) for k, x in v.items()})
    if isinstance(v, np.ndarray):
        return ("ndarray", v.dtype.str, v.tolist())
    return v


def same(scenario: Callable[[Any, Any], Any]) -> Any:
    """Run ``scenario(lib, data)`` under both libraries; assert the plain results are equal; return torch's."""
    out = {name: plain(scenario(*libs)) for name, libs in LIBS.items()}
    assert out["symgrad"] == out["torch"]
    return out["torch"]


def xy(T: Any, n: int = 10) -> tuple[Any, Any]:
    return T.arange(n * 2, dtype=T.float32).reshape(n, 2), T.arange(n) * 10


# ---------------------------------------------------------------------------- DataLoader batches and order

@pytest.mark.parametrize("batch_size,drop_last", [(1, False), (3, False), (3, True), (5, True), (12, False)])
def test_sequential_batches_and_len(batch_size, drop_last):
    def run(T, D):
        loader = D.DataLoader(D.TensorDataset(*xy(T)), batch_size=batch_size, drop_last=drop_last)
        return len(loader), list(loader), len(iter(loader))
    same(run)


@pytest.mark.parametrize("use_generator", [False, True])
def test_shuffle_order_and_random_stream_after(use_generator):
    """Two shuffled epochs give torch's orders, and the draws after them are torch's (the global stream
    moved as torch moves it, or not at all when the loader has its own generator)."""
    def run(T, D):
        T.manual_seed(7)
        g = T.Generator().manual_seed(11) if use_generator else None
        loader = D.DataLoader(D.TensorDataset(*xy(T)), batch_size=4, shuffle=True, generator=g)
        epochs = [[b[1].tolist() for b in loader] for _ in range(2)]
        return epochs, T.randn(3), T.rand(2), (g.initial_seed() if g is not None else T.initial_seed())
    same(run)


def test_unshuffled_epoch_still_draws_the_base_seed():
    def run(T, D):
        T.manual_seed(3)
        for _ in D.DataLoader(list(range(5)), batch_size=2):
            pass
        return T.randn(2)
    out = same(run)
    torch.manual_seed(3)
    assert out[3] != torch.randn(2).tolist()  # the epoch did move the stream


def test_manual_seed_between_epochs_repeats_the_order():
    def run(T, D):
        loader = D.DataLoader(list(range(9)), batch_size=4, shuffle=True)
        out = []
        for _ in range(2):
            T.manual_seed(0)
            out.append([b.tolist() for b in loader])
        return out
    out = same(run)
    assert out[1][0] == out[1][1]


def test_batch_size_none_sampler_and_batch_sampler():
    def run(T, D):
        ds = D.TensorDataset(*xy(T, 6))
        a = list(D.DataLoader(ds, batch_size=None))
        b = list(D.DataLoader(ds, sampler=[5, 0, 3], batch_size=2))
        c = list(D.DataLoader(ds, batch_sampler=[[1, 2], [0], [4, 5, 3]]))
        d = list(D.DataLoader([np.float32(1.5), np.arange(3), (1, 2.0)], batch_size=None))
        return a, b, c, d
    same(run)


def worker_scenario(T: Any, D: Any) -> list:
    """Workers as torch runs them: seeds (torch, Python, numpy) per worker, worker_init_fn on the worker's copy
    of the dataset, get_worker_info(), the round robin of batches, the sampler running ahead of the batches,
    persistent workers keeping their state, iterable datasets sharded by worker id or replicated per worker."""

    class Noisy(D.Dataset):
        tag = None

        def __len__(self):
            return 7

        def __getitem__(self, i):
            info = D.get_worker_info()
            crop = T.randint(high=100, size=(2,))  # the keyword spelling of randint, as augmentations write it
            return T.rand(1) + i, crop, random.random(), float(np.random.rand()), info.id, info.seed, self.tag

    class Range(D.IterableDataset):
        def __init__(self, start, end):
            self.start, self.end = start, end

        def __iter__(self):
            info = D.get_worker_info()
            per = int(math.ceil((self.end - self.start) / float(info.num_workers)))
            first = self.start + info.id * per
            return iter(range(first, min(first + per, self.end)))

    class Replicated(D.IterableDataset):
        def __iter__(self):
            return iter(range(5))

    def init(worker_id):
        info = D.get_worker_info()
        info.dataset.tag = (worker_id, info.num_workers, info.seed == T.initial_seed())

    T.manual_seed(0)
    random.seed(1)
    np.random.seed(2)
    out = []
    noisy = Noisy()
    for persistent in (False, True):
        loader = D.DataLoader(noisy, batch_size=3, num_workers=2, shuffle=True, persistent_workers=persistent,
                              worker_init_fn=init)
        out += [list(loader) for _ in range(2)]
        out.append((T.randn(2), random.random(), np.random.rand(), noisy.tag))
    out.append(list(D.DataLoader(Range(3, 14), batch_size=2, num_workers=2)))
    out.append(list(D.DataLoader(Replicated(), batch_size=2, num_workers=2, drop_last=True)))
    it = iter(D.DataLoader(D.TensorDataset(*xy(T, 6)), batch_size=2, shuffle=True, num_workers=2))
    out += [T.randn(1), list(it), T.randn(2)]  # the sampler drew its seed when the iterator was made
    return out


def test_workers_are_torchs_workers():
    saved = random.getstate(), np.random.get_state()
    try:
        out = same(worker_scenario)
    finally:
        random.setstate(saved[0])
        np.random.set_state(saved[1])
    first_batch = out[1][0][1][0][1]
    assert first_batch[4][3] == [0, 0, 0] and [t[3] for t in first_batch[6][1]] == [[0] * 3, [2] * 3, [True] * 3]
    assert out[1][2][1][3] is None  # worker_init_fn tagged the workers' copies, not the dataset


def test_worker_draws_leave_the_process_stream_alone():
    """Only the base seed comes from the process's stream; what the workers draw comes from theirs."""
    sg.manual_seed(3)
    sg.empty((), dtype=sg.int64).random_()
    expected = sg.randn(3).tolist()
    sg.manual_seed(3)
    batches = list(sdata.DataLoader(list(range(4)), batch_size=2, num_workers=2, collate_fn=lambda b: sg.rand(1)))
    assert sg.randn(3).tolist() == expected and sdata.get_worker_info() is None
    assert batches[0].tolist() != batches[1].tolist()  # two workers, two seeds


def test_collate_fn_and_custom_dataset():
    class Squares(sdata.Dataset):
        def __len__(self):
            return 7

        def __getitem__(self, i):
            return {"i": i, "sq": float(i * i)}

    class TSquares(tdata.Dataset):
        __len__ = Squares.__len__
        __getitem__ = Squares.__getitem__

    def run(T, D):
        ds = Squares() if D is sdata else TSquares()
        plainly = list(D.DataLoader(ds, batch_size=3))
        summed = list(D.DataLoader(ds, batch_size=3, collate_fn=lambda b: sum(s["sq"] for s in b)))
        return plainly, summed
    same(run)


def test_tensors_built_by_a_program_keep_their_graph():
    def run(T, D):
        w = T.tensor([[1.0, -2.0], [0.5, 3.0], [2.0, 2.0]], requires_grad=True)
        feats = w * 3 - 1
        loader = D.DataLoader(D.TensorDataset(feats, T.tensor([0, 1, 1])), batch_size=2)
        batches = list(loader)
        (batches[0][0] ** 2).sum().backward()
        return batches, w.grad
    same(run)


def test_tensor_dataset_gather_is_the_per_sample_collate():
    """A TensorDataset (or a Subset of one) is batched by one gather per tensor: the same batches as fetching
    sample by sample and stacking (forced by a collate_fn that is not default_collate, and by a subclass)."""
    class Rows(sdata.TensorDataset):
        pass

    sg.manual_seed(0)
    x, y, flags = sg.randn(11, 2, 3).permute(0, 2, 1), sg.arange(11).double(), sg.arange(11) % 3 == 0
    gathered, general = [], []
    for ds in (sdata.TensorDataset(x, y, flags), sdata.Subset(sdata.TensorDataset(x, y, flags), [4, 0, 9, 2, 7])):
        for loader_kw in ({"batch_size": 4}, {"batch_size": 4, "shuffle": True}, {"sampler": [3, 1, 2, 1]}):
            for collate, out in ((None, gathered), (lambda b: sdata.default_collate(b), general)):
                sg.manual_seed(1)
                for batch in sdata.DataLoader(ds, collate_fn=collate, **loader_kw):
                    out.append([plain(t) for t in batch])
                    assert out is general or all(t.is_contiguous() for t in batch)  # as torch.stack makes them
    sg.manual_seed(1)
    subclassed = [[plain(t) for t in b] for b in sdata.DataLoader(Rows(x, y, flags), batch_size=4, shuffle=True)]
    assert gathered == general and len(gathered) == 18
    from symgrad.utils.data.dataloader import _tensor_rows  # the gather did run: it applies to these datasets

    assert _tensor_rows(sdata.TensorDataset(x, y), [1, 0]) is not None and _tensor_rows(Rows(x), [0]) is None
    assert subclassed == gathered[3:6]


def test_symgrad_tensors_from_sg_tensor_stack_to_batches():
    ds = [sg.tensor([1.0, 2.0]), sg.tensor([3.0, 4.0]), sg.tensor([5.0, 6.0])]
    (batch,) = list(sdata.DataLoader(ds, batch_size=3))
    assert isinstance(batch, sg.Tensor) and batch.tolist() == [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]


# ---------------------------------------------------------------------------- collation

def test_default_collate_nested_structures():
    def run(T, D):
        samples = [
            {"a": T.tensor([i, i + 1.0]), "b": (i, float(i) / 3, True), "c": [np.arange(3) * i, np.float32(i)],
             "p": Point(np.int16(i), f"s{i}"), "s": "name", "raw": b"x", "f": np.float64(i) / 7}
            for i in range(3)]
        return D.default_collate(samples), D.default_collate([1, 2, 3]), D.default_collate([0.5, 1.5]), \
            D.default_collate([True, False]), D.default_collate([np.array(1.5, dtype=np.float32)] * 2), \
            D.default_collate([np.int64(1), np.float32(2.5)]), D.default_collate([np.int8(1), np.uint8(200)]), \
            D.default_collate([np.bool_(True), np.float16(2)])
    same(run)


def test_default_convert():
    def run(T, D):
        return (D.default_convert(np.arange(3)), D.default_convert(Point(np.array(0), 1)),
                D.default_convert([np.array([1.5]), "s"]), D.default_convert((np.int64(3), 2.0)),
                D.default_convert({"k": np.zeros(2, dtype=np.float32)}), D.default_convert(np.array(["a"])),
                D.default_convert(T.tensor([1])))
    same(run)


def test_collate_errors_are_torchs():
    def run(T, D):
        msgs = []
        for batch in ([object(), object()], [[1, 2], [3]], [np.array(["a"]), np.array(["b"])]):
            try:
                D.default_collate(batch)
            except (TypeError, RuntimeError) as e:
                msgs.append((type(e).__name__, str(e).replace("torch.", "")))
        return msgs
    assert len(same(run)[1]) == 3


# ---------------------------------------------------------------------------- datasets and splits

def test_subset_concat_stack_datasets():
    def run(T, D):
        a = D.TensorDataset(*xy(T, 4))
        b = D.TensorDataset(*xy(T, 3))
        cat = a + b
        sub = D.Subset(cat, [6, 0, 4])
        st = D.StackDataset(a, D.Subset(b, [0, 1, 2, 0]))
        named = D.StackDataset(x=a, y=list("wxyz"))
        return (len(cat), cat[5], cat[-1], cat.cumulative_sizes, len(sub), sub[0], list(D.DataLoader(sub, 2)),
                list(D.DataLoader(st, 3)), named[2], list(D.DataLoader(named, 4)))
    same(run)


@pytest.mark.parametrize("lengths", [[3, 7], [0.3, 0.7], [0.5, 0.25, 0.25], [0.34, 0.33, 0.33], [0.1, 0.2, 0.7]])
def test_random_split(lengths):
    def run(T, D):
        T.manual_seed(1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            default = [s.indices for s in D.random_split(range(10), lengths)] if sum(lengths) in (1, 10) else None
            seeded = [list(s) for s in D.random_split(range(10), lengths, generator=T.Generator().manual_seed(4))]
        return default, seeded, T.randn(1)
    same(run)


def test_random_split_bad_lengths():
    for D in (tdata, sdata):
        with pytest.raises(ValueError, match="Sum of input lengths does not equal"):
            D.random_split(range(5), [2, 2])
        with pytest.raises(ValueError, match="Fraction at index 1 is not between 0 and 1"):
            D.random_split(range(5), [0.5, 1.5, -1.0])


def test_iterable_datasets():
    class Count(sdata.IterableDataset):
        def __init__(self, n):
            self.n = n

        def __iter__(self):
            return iter(range(self.n))

        def __len__(self):
            return self.n

    class TCount(tdata.IterableDataset):
        __init__ = Count.__init__
        __iter__ = Count.__iter__
        __len__ = Count.__len__

    def run(T, D):
        C = Count if D is sdata else TCount
        ds = C(7)
        out = [list(D.DataLoader(ds, batch_size=3)), list(D.DataLoader(ds, batch_size=3, drop_last=True)),
               len(D.DataLoader(ds, batch_size=3)), len(D.DataLoader(ds, batch_size=3, drop_last=True)),
               list(D.DataLoader(ds, batch_size=None)), list(D.DataLoader(C(2) + C(3), batch_size=2)), len(C(2) + C(3))]
        with pytest.raises(ValueError, match="expected unspecified shuffle option"):
            D.DataLoader(ds, shuffle=True)
        return out
    same(run)


# ---------------------------------------------------------------------------- samplers

def test_samplers():
    def run(T, D):
        T.manual_seed(2)
        g = T.Generator().manual_seed(9)
        src = range(10)
        return (list(D.SequentialSampler(src)),
                list(D.RandomSampler(src)), list(D.RandomSampler(src, generator=g)),
                list(D.RandomSampler(src, num_samples=23)), len(D.RandomSampler(src, num_samples=23)),
                list(D.RandomSampler(src, replacement=True, num_samples=70, generator=g)),
                list(D.RandomSampler(src, replacement=True)),
                list(D.SubsetRandomSampler([3, 5, 8, 13])), list(D.SubsetRandomSampler([1, 2, 3], generator=g)),
                list(D.WeightedRandomSampler([0.1, 0.9, 0.4, 0.7, 3.0, 0.6], 5)),
                list(D.WeightedRandomSampler([0.9, 0.4, 0.05, 0.2, 0.3, 0.1], 5, replacement=False, generator=g)),
                list(D.BatchSampler(D.SequentialSampler(src), 3, False)), list(D.BatchSampler(src, 3, True)),
                len(D.BatchSampler(src, 3, False)), len(D.BatchSampler(src, 3, True)),
                list(D.DataLoader(list(range(8)), sampler=D.RandomSampler(range(8), replacement=True), batch_size=3)),
                T.randn(2))
    same(run)


def test_argument_errors_are_torchs():
    def run(T, D):
        ds = D.TensorDataset(*xy(T, 4))
        msgs = []
        cases = [lambda: D.DataLoader(ds, shuffle=True, sampler=[0]),
                 lambda: D.DataLoader(ds, batch_size=2, batch_sampler=[[0]]),
                 lambda: D.DataLoader(ds, batch_size=None, drop_last=True),
                 lambda: D.DataLoader(ds, num_workers=-1),
                 lambda: D.DataLoader(ds, persistent_workers=True),
                 lambda: D.DataLoader(ds, prefetch_factor=2),
                 lambda: setattr(D.DataLoader(ds), "batch_size", 3),
                 lambda: D.RandomSampler(ds, num_samples=0),
                 lambda: D.RandomSampler(ds, replacement=1),
                 lambda: D.BatchSampler(ds, 0, False),
                 lambda: D.WeightedRandomSampler([[1.0]], 2),
                 lambda: D.TensorDataset(T.zeros(2), T.zeros(3)),
                 lambda: D.ConcatDataset([]),
                 lambda: (D.TensorDataset(T.zeros(2)) + D.TensorDataset(T.zeros(1)))[-4]]
        for case in cases:
            try:
                case()
                msgs.append(None)
            except Exception as e:  # noqa: BLE001
                msgs.append((type(e).__name__, str(e)))
        return msgs
    assert None not in same(run)


def test_symgrad_utils_is_a_namespace():
    assert sg.utils.data.DataLoader is sdata.DataLoader
    assert sdata.get_worker_info() is None and tdata.get_worker_info() is None
    from symgrad.utils.data import DataLoader, TensorDataset  # noqa: F401  (the spelling programs use)
    from symgrad.utils.data.dataloader import default_collate

    assert default_collate is sdata.default_collate


# ---------------------------------------------------------------------------- a training loop

def train(T: Any, D: Any) -> list[str]:
    """nn.Linear + SGD over a shuffled DataLoader of a TensorDataset, three epochs; the printed lines (as a
    tutorial prints them: symgrad's float32 matrix products may differ from torch's in the last bit, see
    docs/fidelity.md, so no full-precision float is printed)."""
    T.manual_seed(0)
    x = T.randn(24, 3)
    y = x @ T.tensor([[1.5], [-2.0], [0.5]]) + 0.1 * T.randn(24, 1)
    loader = D.DataLoader(D.TensorDataset(x, y), batch_size=5, shuffle=True)
    model = T.nn.Linear(3, 1)
    opt = T.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    lines = []
    for epoch in range(3):
        total = 0.0
        for xb, yb in loader:
            opt.zero_grad()
            loss = T.nn.functional.mse_loss(model(xb), yb)
            loss.backward()
            opt.step()
            total += loss.item() * len(xb)
        lines.append(f"epoch {epoch} loss {total / len(loader.dataset):.5f} last {loss!s}")
    lines.append(repr(model.weight))
    lines.append(repr(T.randn(2)))
    return lines


def test_training_loop_prints_torchs_text():
    expected = train(torch, tdata)
    assert train(sg, sdata) == expected
    assert len(expected) == 5
