"""A small PyTorch 2.13 training program (embedding, bidirectional LSTM, LayerNorm, BatchNorm1d, KL divergence,
gradient clipping, ReduceLROnPlateau; a GRUCell with Adam and OneCycleLR; GroupNorm; inference_mode) run
unchanged with ``import symgrad as torch`` prints what it prints under torch. Losses and norms print to 4 decimals:
float32 sums in another order (torch's oneDNN LSTM) move the 6th digit."""
from __future__ import annotations

import contextlib
import io

import torch

PROGRAM = '''
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class Tagger(nn.Module):
    def __init__(self, vocab, dim, hidden, classes):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim, padding_idx=0)
        self.rnn = nn.LSTM(dim, hidden, num_layers=2, batch_first=True, bidirectional=True)
        self.norm = nn.LayerNorm(2 * hidden)
        self.head = nn.Sequential(nn.Linear(2 * hidden, hidden), nn.BatchNorm1d(hidden), nn.ReLU(),
                                  nn.Linear(hidden, classes))

    def forward(self, tokens):
        out, (h, c) = self.rnn(self.emb(tokens))
        return self.head(self.norm(out[:, -1]))


model = Tagger(10, 4, 5, 3)
print(model)
print(sum(p.numel() for p in model.parameters()))
tokens = torch.randint(0, 10, (6, 7))
target = torch.softmax(torch.randn(6, 3), dim=1)
opt = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=0, factor=0.5)
for epoch in range(4):
    opt.zero_grad()
    logits = model(tokens)
    loss = F.kl_div(F.log_softmax(logits, dim=1), target, reduction="batchmean")
    loss.backward()
    total = nn.utils.clip_grad_norm_(model.parameters(), max_norm=0.5)
    opt.step()
    plateau.step(loss.item() if epoch != 1 else 10.0)
    print(epoch, f"{loss.item():.4f}", f"{total.item():.4f}", plateau.get_last_lr())
print(model.head[1].running_mean, model.head[1].num_batches_tracked)
model.eval()
with torch.inference_mode():
    print(model(tokens).argmax(dim=1), torch.is_inference_mode_enabled())

cell = nn.GRUCell(3, 4)
opt2 = torch.optim.Adam(cell.parameters(), lr=0.05)
sched = torch.optim.lr_scheduler.OneCycleLR(opt2, max_lr=0.1, total_steps=5)
x, h = torch.randn(2, 3), torch.zeros(2, 4)
for step in range(5):
    opt2.zero_grad()
    h2 = cell(x, h)
    loss = (h2 - 0.5).pow(2).mean()
    loss.backward()
    nn.utils.clip_grad_value_(cell.parameters(), 0.1)
    opt2.step()
    if step < 4:
        sched.step()
    print(step, f"{loss.item():.5f}", f"{sched.get_last_lr()[0]:.6f}", f"{opt2.param_groups[0]['betas'][0]:.4f}")
vec = nn.utils.parameters_to_vector(cell.parameters())
print(vec.shape, f"{vec.abs().sum().item():.4f}")
gn = nn.GroupNorm(2, 4)
print(gn, gn(torch.arange(16.0).reshape(2, 4, 2) ** 2)[:, :, 0])
'''

SYMGRAD = {"import torch\n": "import symgrad as torch\n", "import torch.nn as nn\n": "import symgrad.nn as nn\n",
           "import torch.nn.functional as F\n": "import symgrad.nn.functional as F\n"}


def _run(source: str) -> str:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        exec(compile(source, "<program>", "exec"), {"__name__": "program"})
    return buf.getvalue()


def test_training_program_prints_what_torch_prints():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        expected = _run(PROGRAM)
    finally:
        torch.set_num_threads(n)
    source = PROGRAM
    for a, b in SYMGRAD.items():
        source = source.replace(a, b, 1)
    assert "import symgrad as torch" in source
    assert _run(source) == expected
