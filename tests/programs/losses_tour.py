"""Loss modules side by side: MSE, L1, SmoothL1, Huber, BCE, BCEWithLogits(pos_weight), CrossEntropy, NLL."""
import torch
import torch.nn as nn
import torch.nn.functional as F

pred = torch.tensor([[0.5, -1.0, 2.0], [1.5, 0.0, -0.5]], dtype=torch.float64, requires_grad=True)
target = torch.tensor([[1.0, -1.5, 0.0], [1.0, 0.25, 0.5]], dtype=torch.float64)

for loss_fn in [nn.MSELoss(), nn.MSELoss(reduction="sum"), nn.L1Loss(), nn.SmoothL1Loss(beta=0.5),
                nn.HuberLoss(delta=1.0), nn.L1Loss(reduction="none")]:
    pred.grad = None
    loss = loss_fn(pred, target)
    loss.sum().backward()
    print(loss_fn, loss.detach())
    print("  grad:", pred.grad)

probs = torch.tensor([0.9, 0.2, 0.6, 0.4], dtype=torch.float64, requires_grad=True)
labels = torch.tensor([1.0, 0.0, 1.0, 1.0], dtype=torch.float64)
bce = nn.BCELoss()(probs, labels)
bce.backward()
print(nn.BCELoss(), bce, probs.grad)

logits = torch.tensor([2.0, -1.0, 0.5, -0.5], dtype=torch.float64, requires_grad=True)
weighted = nn.BCEWithLogitsLoss(pos_weight=torch.tensor([3.0], dtype=torch.float64))(logits, labels)
weighted.backward()
print(weighted, logits.grad)

scores = torch.tensor([[2.0, 0.5, -1.0], [0.1, 0.2, 3.0], [1.0, 1.0, 1.0]], dtype=torch.float64, requires_grad=True)
classes = torch.tensor([0, 2, 1])
ce = nn.CrossEntropyLoss()
print(ce, ce(scores, classes))
print(nn.CrossEntropyLoss(label_smoothing=0.1)(scores, classes))
print(nn.CrossEntropyLoss(weight=torch.tensor([1.0, 2.0, 0.5], dtype=torch.float64))(scores, classes))
nll = nn.NLLLoss()(F.log_softmax(scores, dim=1), classes)
print(nll)
nll.backward()
print(scores.grad)
print(F.mse_loss(pred, target, reduction="mean"), F.l1_loss(pred, target))
