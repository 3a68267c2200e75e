"""A tiny CTC model: per-frame Linear + log_softmax trained with CTCLoss on short label sequences, greedily decoded."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
T, N, C, H = 10, 3, 4, 6  # frames, batch, classes (0 is the blank), features per frame
targets = torch.tensor([[1, 2, 0], [3, 3, 0], [2, 1, 3]])
target_lengths = torch.tensor([2, 2, 3])
input_lengths = torch.tensor([10, 8, 10])
frames = torch.randn(T, N, H)
for n in range(N):  # frame t carries a hint of the label it should emit
    for k in range(int(target_lengths[n])):
        frames[3 * k + 1, n, int(targets[n, k])] += 2.0


class FrameClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(H, C)

    def forward(self, x):
        return F.log_softmax(self.proj(x), dim=-1)


model = FrameClassifier()
ctc = nn.CTCLoss(blank=0, zero_infinity=True)
print(ctc)
opt = torch.optim.Adam(model.parameters(), lr=0.1)
for step in range(25):
    opt.zero_grad()
    log_probs = model(frames)
    loss = ctc(log_probs, targets, input_lengths, target_lengths)
    loss.backward()
    opt.step()
    if step % 6 == 0 or step == 24:
        print(f"step {step:2d} ctc {loss.item():.4f} grad_fn {loss.grad_fn.name()}")

with torch.no_grad():
    log_probs = model(frames)
    per_sample = F.ctc_loss(log_probs, targets, input_lengths, target_lengths, reduction="none")
    print("per-sample losses:", [round(v, 3) for v in per_sample.tolist()])
    best = log_probs.argmax(-1).T  # (N, T)
    for n in range(N):
        path = best[n, : int(input_lengths[n])].tolist()
        decoded = [c for i, c in enumerate(path) if c != 0 and (i == 0 or c != path[i - 1])]
        print(f"sample {n}: path {path} -> {decoded} target {targets[n, : int(target_lengths[n])].tolist()}")

# concatenated 1-D targets give the same loss as the padded 2-D ones
flat = torch.cat([targets[n, : int(target_lengths[n])] for n in range(N)])
same = F.ctc_loss(log_probs, flat, input_lengths, target_lengths)
padded = ctc(log_probs, targets, input_lengths, target_lengths)
print("1-D targets:", f"{same.item():.4f}", "2-D targets:", f"{padded.item():.4f}")
# an input too short for its target has an infinite loss, unless zero_infinity
two_frames = torch.tensor([2, 2, 2])
print("too short:", F.ctc_loss(log_probs[:2], targets, two_frames, target_lengths, reduction="none"))
print("zeroed:", F.ctc_loss(log_probs[:2], targets, two_frames, target_lengths, reduction="none", zero_infinity=True))
