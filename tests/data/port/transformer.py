"""A transformer encoder classifier over token ids (PyTorch's own encoder layer)."""

import torch.nn as nn


class TextClassifier(nn.Module):
    def __init__(self, vocab=50, d_model=16, nhead=4, layers=1, classes=3):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        layer = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward=32, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=layers)
        self.head = nn.Linear(d_model, classes)

    def forward(self, tokens):
        h = self.encoder(self.embed(tokens))
        return self.head(h.mean(dim=1))
