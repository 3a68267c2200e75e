"""A bag-of-words sentiment classifier: EmbeddingBag (mean of word vectors, offsets) + Linear, trained with Adam."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
sentences = [("a great fun movie", 1), ("boring and slow", 0), ("great acting great story", 1),
             ("slow boring plot", 0), ("fun story", 1), ("bad acting and a bad plot", 0),
             ("a fun great plot", 1), ("bad slow movie", 0)]
vocab = {"<pad>": 0}
for text, _ in sentences:
    for word in text.split():
        vocab.setdefault(word, len(vocab))
print("vocabulary size:", len(vocab))


def encode(batch):
    ids, offsets = [], []
    for text in batch:
        offsets.append(len(ids))
        ids.extend(vocab[w] for w in text.split())
    return torch.tensor(ids), torch.tensor(offsets)


class BagOfWords(nn.Module):
    def __init__(self, vocab_size, dim, classes):
        super().__init__()
        self.bag = nn.EmbeddingBag(vocab_size, dim, mode="mean", padding_idx=0)
        self.fc = nn.Linear(dim, classes)

    def forward(self, ids, offsets):
        return self.fc(self.bag(ids, offsets))


model = BagOfWords(len(vocab), 6, 2)
print(model)
print([(name, tuple(p.shape)) for name, p in model.named_parameters()])
ids, offsets = encode([t for t, _ in sentences])
labels = torch.tensor([y for _, y in sentences])
print("ids:", ids)
print("offsets:", offsets)
opt = torch.optim.Adam(model.parameters(), lr=0.1)
for step in range(15):
    opt.zero_grad()
    logits = model(ids, offsets)
    loss = F.cross_entropy(logits, labels)
    loss.backward()
    opt.step()
    if step % 5 == 0 or step == 14:
        acc = (logits.argmax(1) == labels).float().mean().item()
        print(f"step {step:2d} loss {loss.item():.4f} acc {acc:.2f}")
print("padding row stays zero:", model.bag.weight[0].abs().sum().item())
print("grad of <pad> row:", model.bag.weight.grad[0])
test_ids, test_offsets = encode(["great fun", "boring bad plot", "a movie"])
with torch.no_grad():
    probs = model(test_ids, test_offsets).softmax(1)
print("predictions:", probs.argmax(1).tolist())

# the same bags as a fixed-length 2-D batch, summed with per-sample weights, and the max of each bag
pairs = torch.tensor([[vocab["great"], vocab["fun"]], [vocab["bad"], vocab["slow"]]])
weights = torch.tensor([[1.0, 0.5], [2.0, -1.0]], requires_grad=True)
summed = F.embedding_bag(pairs, model.bag.weight, mode="sum", per_sample_weights=weights)
print(summed.grad_fn.name())
summed.sum().backward()
print("per-sample weight grads:", weights.grad.shape)
peak = F.embedding_bag(pairs, model.bag.weight.detach(), mode="max")
print(peak.shape, torch.equal(peak, model.bag.weight.detach()[pairs].max(1).values))
