"""A linear classifier trained with a hinge loss and a quantile (pinball) regression head, checked along the way."""
import torch

n = 40
x = torch.linspace(-2.0, 2.0, n).unsqueeze(1)
features = torch.cat([x, torch.sin(3 * x), torch.ones(n, 1)], dim=1)
labels = torch.where(x.squeeze(1) + 0.3 * torch.sin(5 * x.squeeze(1)) > 0, 1.0, -1.0)
target = 1.5 * x.squeeze(1) + 0.5 * torch.cos(4 * x.squeeze(1))

w = torch.zeros(3, requires_grad=True)
head = torch.zeros(3, 2, requires_grad=True)  # columns: 10% and 90% quantiles
taus = torch.tensor([0.1, 0.9])
opt = torch.optim.SGD([w, head], lr=0.1)

for step in range(30):
    opt.zero_grad()
    margin = labels * torch.inner(features, w)
    hinge = torch.clamp_min(1 - margin, 0.0).mean()
    residual = target.unsqueeze(1) - torch.tensordot(features, head, dims=1)
    pinball = torch.fmax(taus * residual, (taus - 1) * residual).mean()
    loss = hinge + pinball
    loss.backward()
    if step % 10 == 0:
        print(f"step {step:2d} hinge {hinge.item():.4f} pinball {pinball.item():.4f}")
    opt.step()

print("w:", w)
print("head:", head)

with torch.no_grad():
    scores = torch.inner(features, w)
    pred = torch.heaviside(scores, torch.tensor(0.5))
    print("accuracy:", (pred == (labels > 0).float()).float().mean())
    print("per class:", torch.bincount((labels > 0).long(), weights=pred))
    bands = torch.tensordot(features, head, dims=1)
    inside = torch.all(torch.stack([bands[:, 0] <= target, target <= bands[:, 1]]), dim=0)
    print("inside band:", inside.sum().item(), "of", n)
    print("score quantiles:", torch.quantile(scores, torch.tensor([0.1, 0.5, 0.9])))
    print("corr(scores, x):", torch.corrcoef(torch.stack([scores, x.squeeze(1)]))[0, 1])
    print("best so far:", torch.cummax(scores[::8], dim=0).indices)

# the hinge gradient by hand, compared with autograd
w2 = w.detach().clone().requires_grad_(True)
m = labels * torch.inner(features, w2)
torch.clamp_min(1 - m, 0.0).mean().backward()
active = (1 - m.detach() > 0).float()
manual = -(active * labels).unsqueeze(1).mul(features).mean(0)
torch.testing.assert_close(w2.grad, manual)
print("hinge grad checked:", w2.grad)
try:
    torch.testing.assert_close(w2.grad, manual + torch.tensor([0.0, 1e-3, 0.0]))
except AssertionError as err:
    print(err)
