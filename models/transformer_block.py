"""Example model: a pre-norm transformer encoder block (input 1x16x64: 16 tokens of 64)."""

import math

import torch
from torch import nn


class TransformerBlock(nn.Module):
    """x + MHA(LayerNorm(x)), then + MLP(LayerNorm(.)) with a GELU MLP (4x wide).

    Attention is written out (q/k/v projections, scaled dot products, softmax, output
    projection) the way small-model code does, rather than ``nn.MultiheadAttention``.
    """

    example_shapes = ((1, 16, 64),)

    def __init__(self, dim: int = 64, heads: int = 4, mlp_ratio: int = 4, seed: int = 0):
        super().__init__()
        state = torch.random.get_rng_state()
        torch.manual_seed(seed)
        self.heads, self.head_dim = heads, dim // heads
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.fc1, self.fc2 = nn.Linear(dim, mlp_ratio * dim), nn.Linear(mlp_ratio * dim, dim)
        self.gelu = nn.GELU()
        with torch.no_grad():
            for norm in (self.norm1, self.norm2):
                norm.weight.uniform_(0.5, 1.5)
                norm.bias.uniform_(-0.2, 0.2)
        torch.random.set_rng_state(state)
        self.eval()

    def attention(self, x: torch.Tensor) -> torch.Tensor:
        batch, tokens, dim = x.shape
        qkv = self.qkv(x).reshape(batch, tokens, 3, self.heads, self.head_dim)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)  # each [batch, heads, tokens, head_dim]
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.head_dim))
        out = torch.softmax(scores, dim=-1) @ v
        return self.proj(out.transpose(1, 2).reshape(batch, tokens, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attention(self.norm1(x))
        return x + self.fc2(self.gelu(self.fc1(self.norm2(x))))
