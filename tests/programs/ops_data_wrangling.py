"""Everyday tensor wrangling for data: normalising, one-hot labels, accuracy, padding, masking, bucketing."""
import torch

data = torch.tensor([[1.0, 200.0, 3.0], [2.0, 180.0, 5.0], [4.0, 220.0, 4.0], [3.0, 210.0, 8.0]])
mean, std = data.mean(0, keepdim=True), data.std(0, keepdim=True)
print(((data - mean) / std).round(decimals=3))
lo, hi = data.min(0).values, data.max(0).values
print((data - lo) / (hi - lo))
print(data.T.contiguous().ravel(), data.type_as(torch.tensor([1])), data.new_zeros(2).dtype)

labels = torch.tensor([2, 0, 1, 2, 2])
one_hot = torch.eye(3)[labels]
print(one_hot, one_hot.argmax(1).eq(labels).all())
print(torch.nn.functional.one_hot(labels, num_classes=4))
preds = torch.tensor([2, 1, 1, 2, 0])
correct = (preds == labels)
print(correct.sum().item(), correct.float().mean().item(), f"{100 * correct.float().mean():.1f}%")
confusion = torch.zeros(3, 3, dtype=torch.long)
for t, p in zip(labels, preds):
    confusion[t, p] += 1
print(confusion, confusion.diag().sum() / confusion.sum())
flat = labels * 3 + preds
print(torch.zeros(9, dtype=torch.long).index_add_(0, flat, torch.ones_like(flat)).view(3, 3))

seqs = [torch.tensor([5, 3, 8]), torch.tensor([2]), torch.tensor([7, 1])]
lengths = torch.tensor([len(s) for s in seqs])
padded = torch.zeros(len(seqs), int(lengths.max()), dtype=torch.long)
for i, s in enumerate(seqs):
    padded[i, : len(s)] = s
print(padded, lengths)
mask = torch.arange(padded.shape[1]).unsqueeze(0) < lengths.unsqueeze(1)
print(mask, padded.masked_fill(~mask, -1))
print((padded * mask).sum(1) / lengths, padded.float().masked_fill(~mask, float("-inf")).max(1).values)

ages = torch.tensor([3.0, 17.0, 25.0, 42.0, 67.0, 90.0])
edges = torch.tensor([12.0, 18.0, 65.0])
print(torch.bucketize(ages, edges), torch.searchsorted(edges, ages, right=True))
print(torch.histc(ages, bins=4, min=0, max=100), ages.clamp(max=65.0), ages.clamp_(18.0, 65.0), ages)

scores = torch.tensor([[0.1, 0.6, 0.3], [0.5, 0.2, 0.3], [0.05, 0.15, 0.8]])
top2 = scores.topk(2, dim=1).indices
target = torch.tensor([2, 0, 1])
print(top2, (top2 == target.unsqueeze(1)).any(1), (top2 == target.unsqueeze(1)).any(1).float().mean())
probs = scores / scores.sum(1, keepdim=True)
print(probs.sum(1), -(probs * probs.log()).sum(1))
print(torch.where(scores > 0.25, scores, torch.zeros(())), (scores > 0.25).nonzero().tolist())
ids = torch.tensor([10, 20, 10, 30, 20, 10])
uniq, inverse = torch.unique(ids, return_inverse=True)
print(uniq, inverse, uniq[inverse].equal(ids))
print(torch.arange(10).reshape(2, 5).T.flatten().tolist(), list(torch.arange(6).split(2)))
print(torch.linspace(0, 1, 5), torch.arange(0, 1, 0.25), torch.full((2, 2), 7), torch.ones(2, 3).cumsum(1).int())
