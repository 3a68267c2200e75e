"""Variable-length token sequences padded, packed and fed to a bidirectional GRU classifier (padding_idx, Adam)."""
import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pad_sequence

torch.manual_seed(0)

VOCAB = 7
lengths = torch.tensor([5, 2, 4, 3, 1, 4])
sequences = [torch.randint(1, VOCAB, (int(n),)) for n in lengths]
labels = torch.tensor([int((s == 3).any()) for s in sequences])
batch = pad_sequence(sequences, batch_first=True, padding_value=0)
print(batch)
print(labels)


class Classifier(nn.Module):
    def __init__(self, hidden=6):
        super().__init__()
        self.embedding = nn.Embedding(VOCAB, 4, padding_idx=0)
        self.gru = nn.GRU(4, hidden, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(2 * hidden, 2)

    def forward(self, tokens, lengths):
        packed = pack_padded_sequence(self.embedding(tokens), lengths, batch_first=True, enforce_sorted=False)
        out, h = self.gru(packed)
        features = torch.cat([h[0], h[1]], dim=1)
        return self.fc(features), out


model = Classifier()
print(model)
packed = pack_padded_sequence(batch, lengths, batch_first=True, enforce_sorted=False)
print(packed.batch_sizes, packed.sorted_indices, packed.unsorted_indices)

optimizer = torch.optim.Adam(model.parameters(), lr=0.03)
criterion = nn.CrossEntropyLoss()
for epoch in range(10):
    optimizer.zero_grad()
    logits, out = model(batch, lengths)
    loss = criterion(logits, labels)
    loss.backward()
    optimizer.step()
    if epoch % 3 == 0:
        acc = (logits.argmax(1) == labels).float().mean().item()
        print(f"epoch {epoch} loss {loss.item():.4f} acc {acc:.3f}")
print(loss)
print(type(out).__name__, out.data.shape, out.data.grad_fn)
padded, out_lengths = pad_packed_sequence(out, batch_first=True)
print(padded.shape, out_lengths)
print(padded[1])
print(model.embedding.weight.grad[0], model.embedding.weight.grad[3])
print(model.gru.weight_hh_l0_reverse.grad[:2])

model.eval()
with torch.no_grad():
    logits, _ = model(batch, lengths)
print(logits.softmax(dim=1))
h0 = torch.zeros(2, 3, 6)
out, h = model.gru(pack_padded_sequence(model.embedding(batch[:3]), lengths[:3], batch_first=True,
                                        enforce_sorted=False), h0)
print(h.shape, h.grad_fn)
print(h[1])
