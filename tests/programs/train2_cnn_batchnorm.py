"""A small Conv2d/BatchNorm2d/MaxPool2d/Dropout classifier on random 8x8 images; train and eval mode compared."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

images = torch.randn(8, 1, 8, 8)
targets = torch.tensor([0, 1, 2, 0, 1, 2, 0, 1])


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, kernel_size=3, padding=1)
        self.bn1 = nn.BatchNorm2d(4)
        self.pool = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(4, 6, kernel_size=3)
        self.dropout = nn.Dropout(0.25)
        self.fc = nn.Linear(6 * 2 * 2, 3)

    def forward(self, x):
        x = self.pool(F.relu(self.bn1(self.conv1(x))))
        x = F.relu(self.conv2(x))
        x = torch.flatten(x, 1)
        return self.fc(self.dropout(x))


model = SmallCNN()
print(model)
print(model.bn1.running_mean, model.bn1.running_var, model.bn1.num_batches_tracked)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

for step in range(8):
    optimizer.zero_grad()
    out = model(images)
    loss = F.cross_entropy(out, targets)
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4f}")

print(out[:2])
print(model.conv1.weight.grad[0, 0])
print(model.bn1.weight.grad, model.bn1.bias.grad)
print(model.bn1.running_mean)
print(model.bn1.running_var)
print(model.bn1.num_batches_tracked)

model.train()
a = model(images[:2])
b = model(images[:2])
print("train mode, two calls equal:", torch.equal(a, b))
model.eval()
with torch.no_grad():
    c = model(images[:2])
    d = model(images[:2])
print("eval mode, two calls equal:", torch.equal(c, d))
print(c)
print(model.training, model.bn1.training, model.dropout.training)
print(model.bn1.num_batches_tracked)

feats = model.pool(model.bn1(model.conv1(images[:1])))
print(feats.shape, feats.grad_fn)
pooled, idx = F.max_pool2d(images[:1], 2, return_indices=True)
print(pooled.shape, idx[0, 0, 0])
