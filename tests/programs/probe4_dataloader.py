"""DataLoader with a custom Dataset: collate_fn, samplers (random, weighted, subset, batch), drop_last, random_split."""
import torch
from torch.utils.data import (
    BatchSampler,
    ConcatDataset,
    DataLoader,
    Dataset,
    RandomSampler,
    SequentialSampler,
    Subset,
    SubsetRandomSampler,
    TensorDataset,
    WeightedRandomSampler,
    random_split,
)


class Squares(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return {"x": torch.tensor([float(i), float(i) ** 2]), "y": i % 3, "name": f"item{i}"}


ds = Squares(7)
print(len(ds), ds[2])
dl = DataLoader(ds, batch_size=3)
print(len(dl))
for batch in dl:
    print(batch["x"].shape, batch["y"], batch["name"])

dl2 = DataLoader(ds, batch_size=3, drop_last=True)
print(len(dl2), [b["y"].tolist() for b in dl2])


def pad_collate(items):
    lengths = torch.tensor([len(s) for s, _ in items])
    width = int(lengths.max())
    out = torch.zeros(len(items), width, dtype=torch.long)
    for k, (s, _) in enumerate(items):
        out[k, : len(s)] = torch.tensor(s)
    labels = torch.tensor([lab for _, lab in items])
    return out, lengths, labels


seqs = [([1, 2, 3], 0), ([4], 1), ([5, 6], 0), ([7, 8, 9, 10], 1), ([11], 0)]
for padded, lengths, labels in DataLoader(seqs, batch_size=2, collate_fn=pad_collate):
    print(padded.tolist(), lengths.tolist(), labels.tolist())

X = torch.arange(20, dtype=torch.float32).reshape(10, 2)
Y = torch.arange(10) % 2
tds = TensorDataset(X, Y)
print(tds[3])
g = torch.Generator().manual_seed(11)
for xb, yb in DataLoader(tds, batch_size=4, shuffle=True, generator=g):
    print(xb[:, 0].tolist(), yb.tolist())

print(list(SequentialSampler(range(4))))
torch.manual_seed(5)
print(list(RandomSampler(range(6))))
print(list(RandomSampler(range(6), replacement=True, num_samples=4)))
print(list(BatchSampler(SequentialSampler(range(7)), batch_size=3, drop_last=False)))
print(list(BatchSampler(range(7), batch_size=3, drop_last=True)))
w = torch.tensor([0.1, 0.1, 5.0, 0.1])
print(list(WeightedRandomSampler(w, num_samples=6, replacement=True)))
print(sorted(SubsetRandomSampler([1, 4, 6])))

bs = BatchSampler(RandomSampler(tds, generator=torch.Generator().manual_seed(2)), batch_size=3, drop_last=False)
for xb, yb in DataLoader(tds, batch_sampler=bs):
    print(xb.shape, yb.tolist())

train, val = random_split(tds, [7, 3], generator=torch.Generator().manual_seed(0))
print(len(train), len(val), type(train).__name__, sorted(train.indices))
sub = Subset(tds, [0, 2, 4])
print([int(y) for _, y in sub])
cat = ConcatDataset([sub, Squares(2)])
print(len(cat), cat[3]["name"])

dl3 = DataLoader(tds, batch_size=None)
first = next(iter(dl3))
print(first)
dl4 = DataLoader(list(range(5)), batch_size=2)
print([b.tolist() for b in dl4], next(iter(dl4)).dtype)
dl5 = DataLoader([(1.5, True), (2.5, False)], batch_size=2)
print(next(iter(dl5)))
