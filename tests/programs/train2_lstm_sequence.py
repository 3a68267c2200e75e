"""A 2-layer batch_first LSTM with a Linear head learns the running sum of a sequence (Adam, clip_grad_norm_)."""
import torch
import torch.nn as nn

torch.manual_seed(0)


class SeqModel(nn.Module):
    def __init__(self, hidden=8):
        super().__init__()
        self.rnn = nn.LSTM(input_size=1, hidden_size=hidden, num_layers=2, batch_first=True)
        self.head = nn.Linear(hidden, 1)

    def forward(self, x):
        out, (h, c) = self.rnn(x)
        return self.head(out[:, -1, :]), h, c


x = torch.randn(6, 5, 1)
y = x.sum(dim=1)
model = SeqModel()
print(model)
for name, p in model.named_parameters():
    print(name, tuple(p.shape))

optimizer = torch.optim.Adam(model.parameters(), lr=0.02)
print(optimizer)
loss_fn = nn.MSELoss()
for step in range(12):
    optimizer.zero_grad()
    pred, h, c = model(x)
    loss = loss_fn(pred, y)
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    optimizer.step()
    if step % 3 == 0:
        print(f"step {step:2d} loss {loss.item():.5f} grad norm {norm.item():.5f}")
print(loss)
print(h.shape, c.shape)
print(h[-1, :2])
print(pred.grad_fn, h.grad_fn)
print(model.head.weight.grad)
print(model.rnn.weight_hh_l1.grad[:2])

gru = nn.GRU(input_size=1, hidden_size=4, num_layers=2, batch_first=True)
print(gru)
out, h = gru(x[:2], torch.zeros(2, 2, 4))
print(out.grad_fn)
print(out.shape, h.shape)
print(out[0, -1])
out.sum().backward()
print(gru.bias_ih_l0.grad)
with torch.no_grad():
    pred, _, _ = model(x[:3])
print(pred)
print(y[:3])
