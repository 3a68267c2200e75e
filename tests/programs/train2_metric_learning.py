"""A small embedding net trained with TripletMarginLoss and CosineEmbeddingLoss; a Gaussian NLL regression head."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

centers = torch.tensor([[2.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 2.0]])
labels = torch.randint(0, 3, (18,))
points = centers[labels] + 0.5 * torch.randn(18, 3)

embed = nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 2))
triplet = nn.TripletMarginLoss(margin=0.5)
cosine = nn.CosineEmbeddingLoss(margin=0.1)
print(triplet, cosine)
opt = torch.optim.Adam(embed.parameters(), lr=0.02)

anchor, positive, negative = points[0:6], points[6:12], points[12:18]
same = (labels[0:6] == labels[6:12]).float() * 2 - 1
print(same)
for step in range(12):
    opt.zero_grad()
    ea, ep, en = embed(anchor), embed(positive), embed(negative)
    loss_t = triplet(ea, ep, en)
    loss_c = cosine(ea, ep, same)
    loss = loss_t + 0.5 * loss_c
    loss.backward()
    opt.step()
    if step % 4 == 0:
        print(f"step {step} triplet {loss_t.item():.4f} cosine {loss_c.item():.4f}")
print(loss_t, loss_c)
print(embed[2].bias.grad)
with torch.no_grad():
    e = embed(points[:4])
    print(F.pairwise_distance(e[:2], e[2:]))
    print(nn.PairwiseDistance(p=1)(e[:2], e[2:]), nn.CosineSimilarity(dim=1)(e[:2], e[2:]))
print(F.margin_ranking_loss(e[:, 0], e[:, 1], torch.tensor([1.0, -1.0, 1.0, -1.0]), margin=0.2))
print(F.hinge_embedding_loss(e, torch.tensor([[1.0, -1.0]] * 4), reduction="sum"))
print(F.soft_margin_loss(e, torch.ones(4, 2)))

x = torch.linspace(-2, 2, 20).unsqueeze(1)
y = torch.sin(x) + 0.1 * (1 + x.abs()) * torch.randn(20, 1)
net = nn.Sequential(nn.Linear(1, 8), nn.Tanh(), nn.Linear(8, 2))
gnll = nn.GaussianNLLLoss()
opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
for step in range(10):
    opt.zero_grad()
    out = net(x)
    mean, var = out[:, :1], F.softplus(out[:, 1:]) + 1e-3
    loss = gnll(mean, y, var)
    loss.backward()
    opt.step()
    if step % 3 == 0:
        print(f"gaussian nll step {step}: {loss.item():.4f}")
print(loss)
print(net[0].weight.grad.flatten())
counts = torch.tensor([5.0, 3.0, 1.0, 4.0, 0.0, 2.0])
rate = torch.zeros(6, requires_grad=True)
pnll = nn.PoissonNLLLoss()
print(counts, pnll(rate, counts))
pnll(rate, counts).backward()
print(rate.grad)
