"""A tiny TransformerEncoder over embedded random tokens learns whether token 1 occurs (StepLR, eval accuracy)."""
import torch
import torch.nn as nn

torch.manual_seed(0)

VOCAB, SEQ, DIM = 6, 5, 8
tokens = torch.randint(0, VOCAB, (16, SEQ))
labels = (tokens == 1).any(dim=1).long()
print(tokens[:3])
print(labels)


class TinyTransformer(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, DIM)
        layer = nn.TransformerEncoderLayer(d_model=DIM, nhead=2, dim_feedforward=16, dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=1, enable_nested_tensor=False)
        self.classifier = nn.Linear(DIM, 2)

    def forward(self, x):
        h = self.encoder(self.embed(x))
        return self.classifier(h.mean(dim=1))


model = TinyTransformer()
print(model)
print(sum(p.numel() for p in model.parameters()))
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=4, gamma=0.5)
criterion = nn.CrossEntropyLoss()

for epoch in range(10):
    model.train()
    optimizer.zero_grad()
    logits = model(tokens)
    loss = criterion(logits, labels)
    loss.backward()
    optimizer.step()
    scheduler.step()
    model.eval()
    with torch.no_grad():
        preds = model(tokens).argmax(dim=1)
        acc = (preds == labels).float().mean()
    print(f"epoch {epoch} loss {loss.item():.4f} acc {acc.item():.3f} lr {scheduler.get_last_lr()[0]:.5f}")

print(loss)
print(logits[:2])
print(model.embed.weight.grad[1])
with torch.no_grad():
    probs = torch.softmax(model(tokens[:4]), dim=1)
print(probs)
print(probs.requires_grad, preds.dtype)

attn = nn.MultiheadAttention(embed_dim=DIM, num_heads=2, batch_first=True)
q = model.embed(tokens[:2]).detach()
pad = tokens[:2] == 0
out, weights = attn(q, q, q, key_padding_mask=pad)
print(out.shape, weights.shape)
print(weights[0])
out.pow(2).mean().backward()
print(attn.in_proj_weight.grad.shape, attn.out_proj.bias.grad)
opt2 = torch.optim.SGD(attn.parameters(), lr=0.1)
cosine = torch.optim.lr_scheduler.CosineAnnealingLR(opt2, T_max=5, eta_min=0.01)
for _ in range(3):
    opt2.step()
    cosine.step()
    print(cosine.get_last_lr())
print(cosine.state_dict())
