"""Conv autoencoder (ConvTranspose2d, bilinear Upsample, reflect padding) and a Conv1d stack trained with Adam."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
enc = nn.Sequential(nn.Conv2d(1, 4, 3, stride=2, padding=1), nn.LeakyReLU(0.2),
                    nn.Conv2d(4, 8, 3, stride=2, padding=1), nn.Tanh())
dec = nn.Sequential(nn.ConvTranspose2d(8, 4, 4, stride=2, padding=1), nn.ReLU(),
                    nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False),
                    nn.Conv2d(4, 1, 3, padding=1, padding_mode="reflect"), nn.Sigmoid())
seq = nn.Sequential(nn.Conv1d(2, 6, 5, padding="same", dilation=2), nn.GELU(), nn.AvgPool1d(2),
                    nn.Conv1d(6, 3, 3, groups=3), nn.AdaptiveMaxPool1d(4), nn.Flatten())
x = torch.rand(3, 1, 16, 16)
s = torch.randn(3, 2, 20)
params = list(enc.parameters()) + list(dec.parameters()) + list(seq.parameters())
opt = torch.optim.Adam(params, lr=1e-2)
for step in range(4):
    opt.zero_grad()
    rec = dec(enc(x))
    loss = F.mse_loss(rec, x) + seq(s).pow(2).mean() + F.pixel_shuffle(enc(x), 2).abs().mean() * 0.1
    loss.backward()
    opt.step()
    print(step, f"{loss.item():.5f}")
print(rec.shape, seq(s).shape)
print(dec)
print(F.interpolate(x[:1, :, :3, :3], size=(4, 5), mode="nearest")[0, 0])
print(F.unfold(x[:1], 4, stride=4).shape)
