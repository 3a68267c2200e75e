"""Gamma maximum-likelihood fit, a Beta variational posterior (reparameterised ELBO), seeded Poisson/Dirichlet draws."""
import torch
import torch.nn.functional as F
from torch.distributions import Bernoulli, Beta, Dirichlet, Gamma, Poisson, StudentT, kl_divergence

torch.manual_seed(0)

# --- data: waiting times from a Gamma(2.5, 1.5)
true = Gamma(torch.tensor(2.5), torch.tensor(1.5))
times = true.sample((200,))
print(f"data mean {times.mean().item():.4f} var {times.var().item():.4f}")
print(f"true mean {true.mean.item():.4f} var {true.variance.item():.4f}")

# --- maximum likelihood on log-parameters
log_conc = torch.zeros((), requires_grad=True)
log_rate = torch.zeros((), requires_grad=True)
opt = torch.optim.Adam([log_conc, log_rate], lr=0.1)
for step in range(30):
    model = Gamma(log_conc.exp(), log_rate.exp())
    nll = -model.log_prob(times).mean()
    opt.zero_grad()
    nll.backward()
    opt.step()
    if step % 10 == 0:
        print(f"step {step:2d} nll {nll.item():.4f} concentration {log_conc.exp().item():.4f} "
              f"rate {log_rate.exp().item():.4f}")
print(f"fitted entropy {Gamma(log_conc.exp(), log_rate.exp()).entropy().item():.4f}")

# --- variational Beta posterior for a coin's bias (in float64)
flips = Bernoulli(torch.tensor(0.7, dtype=torch.float64)).sample((30,))
print("heads", int(flips.sum().item()), "of", flips.numel())
prior = Beta(torch.tensor(2.0, dtype=torch.float64), torch.tensor(2.0, dtype=torch.float64))
raw = torch.zeros(2, dtype=torch.float64, requires_grad=True)
opt = torch.optim.Adam([raw], lr=0.05)
for step in range(21):
    q = Beta(F.softplus(raw[0]) + 0.1, F.softplus(raw[1]) + 0.1)
    p = q.rsample((8,))
    loglik = Bernoulli(probs=p.unsqueeze(-1)).log_prob(flips).sum(-1).mean()
    elbo = loglik - kl_divergence(q, prior)
    opt.zero_grad()
    (-elbo).backward()
    opt.step()
    if step % 10 == 0:
        print(f"step {step:2d} elbo {elbo.item():.4f} q mean {q.mean.item():.4f} "
              f"grad {raw.grad[0]:.4f} {raw.grad[1]:.4f}")
q = Beta(F.softplus(raw[0]) + 0.1, F.softplus(raw[1]) + 0.1)
print("posterior", q, f"mean {q.mean.item():.4f}", f"exact {((2 + flips.sum()) / (4 + 30)).item():.4f}")

# --- a few more seeded draws
counts = Poisson(torch.tensor([0.5, 4.0, 12.0])).sample((3,))
print(counts)
print(Dirichlet(torch.tensor([1.0, 2.0, 3.0])).sample((2,)))
t = StudentT(torch.tensor([3.0, 10.0]))
print(t.sample((2,)), t.batch_shape, t.event_shape)
print(Gamma(torch.tensor([1.0, 2.0]), 3.0).log_prob(torch.tensor([0.5, 1.5])))
