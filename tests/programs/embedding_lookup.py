"""nn.Embedding: lookups by LongTensor indices, padding_idx, from_pretrained, and gradients into the table."""
import torch
import torch.nn as nn

emb = nn.Embedding(5, 3)
with torch.no_grad():
    emb.weight.copy_(torch.arange(15, dtype=torch.float32).reshape(5, 3) / 10)
print(emb)
idx = torch.LongTensor([[0, 2], [4, 2]])
vecs = emb(idx)
print(vecs.shape)
print(vecs)

loss = vecs.sum(dim=-1).mean()
loss.backward()
print(emb.weight.grad)

table = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])
frozen = nn.Embedding.from_pretrained(table)
print(frozen.weight.requires_grad)
print(frozen(torch.tensor([2, 0, 1])))

padded = nn.Embedding(4, 2, padding_idx=0)
print(padded.weight[0])
with torch.no_grad():
    padded.weight[1:] = torch.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
sentence = torch.tensor([1, 0, 3, 0])
out = padded(sentence)
print(out)
out.pow(2).sum().backward()
print(padded.weight.grad)
bag = padded(torch.tensor([[1, 2, 0], [3, 3, 0]])).mean(dim=1)
print(bag)
