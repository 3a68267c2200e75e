"""REINFORCE on a 3-armed bandit with a Categorical policy, and a Normal policy fit by maximising log_prob."""
import torch
import torch.nn as nn
from torch.distributions import Categorical, Normal

torch.manual_seed(0)

true_rewards = torch.tensor([0.2, 1.0, 0.5])
logits = nn.Parameter(torch.zeros(3))
optimizer = torch.optim.Adam([logits], lr=0.1)
baseline = 0.0
for episode in range(15):
    dist = Categorical(logits=logits)
    actions = dist.sample((8,))
    rewards = true_rewards[actions] + 0.1 * torch.randn(8)
    baseline = 0.9 * baseline + 0.1 * rewards.mean().item()
    loss = -(dist.log_prob(actions) * (rewards - baseline)).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if episode % 5 == 0:
        print(f"episode {episode} actions {actions.tolist()} loss {loss.item():.4f}")
        print(logits.grad)
print(dist)
print(dist.probs)
print(dist.entropy())
print(torch.softmax(logits, dim=0))

dist = Categorical(probs=torch.tensor([0.1, 0.6, 0.3]))
print(dist.sample(), dist.log_prob(torch.tensor([0, 1, 2])))
print(dist.logits)

target = 2.0 + 0.5 * torch.randn(64)
mu = torch.zeros(1, requires_grad=True)
log_sigma = torch.zeros(1, requires_grad=True)
opt = torch.optim.SGD([mu, log_sigma], lr=0.2)
for step in range(10):
    policy = Normal(mu, log_sigma.exp())
    nll = -policy.log_prob(target).mean()
    opt.zero_grad()
    nll.backward()
    opt.step()
    if step % 3 == 0:
        print(f"step {step} nll {nll.item():.4f} mu {mu.item():.4f} sigma {log_sigma.exp().item():.4f}")
print(nll)
print(mu.grad, log_sigma.grad)
policy = Normal(mu.detach(), log_sigma.exp().detach())
print(policy)
s = policy.sample((3,))
print(s, s.shape)
r = policy.rsample((2,))
print(r.requires_grad, policy.mean, policy.stddev)
print(policy.entropy(), policy.log_prob(torch.tensor([2.0])))

mu2 = torch.tensor([0.5], requires_grad=True)
z = Normal(mu2, torch.tensor([1.0])).rsample((4,))
(z ** 2).mean().backward()
print(z.grad_fn is not None, mu2.grad)
