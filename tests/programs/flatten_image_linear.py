"""nn.Flatten in front of nn.Linear on a batch of tiny 'images'; view, reshape, flatten and unsqueeze spellings."""
import torch
import torch.nn as nn

images = torch.arange(2 * 1 * 3 * 3, dtype=torch.float32).reshape(2, 1, 3, 3) / 10
print(images.shape)
flat = nn.Flatten()
print(flat)
f = flat(images)
print(f.shape)
print(torch.equal(f, images.view(2, -1)), torch.equal(f, images.reshape(2, 9)), torch.equal(f, images.flatten(1)))
print(nn.Flatten(0, -1)(images).shape)
print(images.flatten().shape, images.squeeze(1).shape, images[0].unsqueeze(0).shape)

net = nn.Sequential(nn.Flatten(), nn.Linear(9, 2))
with torch.no_grad():
    net[1].weight.copy_(torch.linspace(-1, 1, 18).view(2, 9))
    net[1].bias.copy_(torch.tensor([0.1, -0.1]))
out = net(images)
print(out)
out.sum().backward()
print(net[1].weight.grad)
print(net[1].bias.grad)
