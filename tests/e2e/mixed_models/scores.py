"""Attention scores with int16 activations (a16w8): the query-key product is an int16 x int16
MATMUL, which Ethos-U55/U65 cannot run (Vela 5.2 takes int8 MATMUL inputs only)."""

from torch import nn


class Scores(nn.Module):
    def __init__(self):
        super().__init__()
        self.q = nn.Linear(16, 16)
        self.k = nn.Linear(16, 16)
        self.out = nn.Linear(8, 8)

    def forward(self, x):
        return self.out(self.q(x) @ self.k(x).transpose(-1, -2))
