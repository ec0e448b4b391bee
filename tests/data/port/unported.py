"""A model using operations burn (or the program language) lacks, and a data-dependent branch."""

import torch
import torch.nn as nn


class Unported(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)
        self.rnn = nn.GRU(8, 8, batch_first=True)

    def forward(self, x):
        h = torch.cumsum(self.proj(x), dim=1)
        h, _ = self.rnn(h)
        return torch.special.erfinv(torch.tanh(h)).sum(dim=1)


class Branchy(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        h = self.fc(x)
        if h.sum() > 0:
            h = h * 2
        return h
