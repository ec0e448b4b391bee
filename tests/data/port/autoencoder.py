"""A dense autoencoder trained to reconstruct its input."""

import torch.nn as nn


class AutoEncoder(nn.Module):
    def __init__(self, dim=24, code=6):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(dim, 12), nn.Tanh(), nn.Linear(12, code))
        self.decoder = nn.Sequential(nn.Linear(code, 12), nn.Tanh(), nn.Linear(12, dim), nn.Sigmoid())

    def forward(self, x):
        z = self.encoder(x)
        return self.decoder(z)
