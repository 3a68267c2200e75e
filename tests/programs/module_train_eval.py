"""model.train()/model.eval() flags on a Sequential with Flatten, Linear, ReLU and Dropout; children and modules."""
import torch
import torch.nn as nn

model = nn.Sequential(
    nn.Flatten(),
    nn.Linear(4, 5),
    nn.ReLU(),
    nn.Dropout(p=0.25),
    nn.Linear(5, 2),
)
print(model)
print("training:", model.training, [m.training for m in model])
model.eval()
print("after eval():", model.training, [m.training for m in model])
model.train()
print("after train():", model.training, model[3].training)
model.train(False)
print("train(False):", model.training)

for name, module in model.named_children():
    print(name, type(module).__name__)
print(len(list(model.modules())))
print([tuple(p.shape) for p in model.parameters()])
print({k: tuple(v.shape) for k, v in model.state_dict().items()})
print(model[1])
print(model[3])
print(model[-1].in_features, model[-1].out_features)

with torch.no_grad():
    for p in model.parameters():
        p.fill_(0.1)
images = torch.arange(8, dtype=torch.float32).reshape(2, 2, 2) / 8
print(model(images))
