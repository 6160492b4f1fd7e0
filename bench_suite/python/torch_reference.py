"""PyTorch reference modules of the built-in suites, as a PyTorch user would run them, loaded
with cuvil's own weights by name (the builders name every tensor as these modules do):

  resnet50   torchvision.models.resnet50 (v1.5), input "image" [N, 3, H, W]
  llama3-8b  a compact Llama-3 decoder (Meta's reference layout: layers.N.attention.wq, ...,
             RMSNorm, rotate-half RoPE, grouped-query causal attention over an optional KV
             cache, SwiGLU), inputs "hidden" [B, S, D] or "tokens" [B, S], then per layer
             "layerN.past_k" / "layerN.past_v" [B, KVH, P, HD] when the rung has a past

build(suite, weights_dir, rung) returns the module; its forward takes the cuvil graph's inputs
in the graph's order. The SDXL UNet has no reference module yet.
"""
import math
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

# The published Llama-3-8B dimensions, as bench_suite/models/llama3_8b.h.
LLAMA3 = dict(dim=4096, heads=32, kv_heads=8, ffn=14336, vocab=128256, eps=1e-5, theta=500000.0)


def _load(module, weights_dir):
    """Every parameter and buffer of `module` from weights_dir/<name>.npy; all must be there."""
    state = {}
    missing = []
    for name, t in list(module.named_parameters()) + list(module.named_buffers()):
        if name.endswith("num_batches_tracked"):
            continue
        path = os.path.join(weights_dir, name + ".npy")
        if not os.path.exists(path):
            missing.append(name)
            continue
        a = np.load(path)
        if tuple(a.shape) != tuple(t.shape):
            raise ValueError(f"weight {name}: cuvil's has shape {a.shape}, the reference module's {tuple(t.shape)}")
        state[name] = torch.from_numpy(a)
    if missing:
        raise ValueError(f"cuvil's graph has no weight for {len(missing)} reference parameter(s): "
                         f"{', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''}")
    module.load_state_dict(state, strict=False)
    return module.eval()


class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rope(x, theta, offset):
    """Rotate-half rotary embedding of x [B, H, S, D] at positions offset .. offset + S - 1."""
    d = x.shape[-1]
    half = d // 2
    freq = theta ** (-torch.arange(0, half, dtype=torch.float64) * 2.0 / d)
    pos = torch.arange(offset, offset + x.shape[-2], dtype=torch.float64)
    angle = pos[:, None] * freq[None, :]
    cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)
    x0, x1 = x[..., :half], x[..., half:]
    return torch.cat([x0 * cos - x1 * sin, x1 * cos + x0 * sin], dim=-1)


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.heads, self.kv_heads = c["heads"], c["kv_heads"]
        self.head_dim = c["dim"] // c["heads"]
        self.theta = c["theta"]
        self.wq = nn.Linear(c["dim"], c["dim"], bias=False)
        self.wk = nn.Linear(c["dim"], self.kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(c["dim"], self.kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(c["dim"], c["dim"], bias=False)

    def forward(self, x, past_k=None, past_v=None):
        b, s, _ = x.shape
        q = self.wq(x).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k = self.wk(x).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.wv(x).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        past = 0 if past_k is None else past_k.shape[2]
        q, k = rope(q, self.theta, past), rope(k, self.theta, past)
        if past_k is not None:
            k, v = torch.cat([past_k, k], dim=2), torch.cat([past_v, v], dim=2)
        rep = self.heads // self.kv_heads
        k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)
        # Causal, queries aligned to the end of the keys (decode with a cache).
        t = k.shape[2]
        mask = torch.ones(s, t, dtype=torch.bool).tril(diagonal=t - s)
        scores = scores.masked_fill(~mask, float("-inf"))
        out = torch.softmax(scores, dim=-1) @ v
        return self.wo(out.transpose(1, 2).reshape(b, s, -1))


class FeedForward(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.w1 = nn.Linear(c["dim"], c["ffn"], bias=False)
        self.w2 = nn.Linear(c["ffn"], c["dim"], bias=False)
        self.w3 = nn.Linear(c["dim"], c["ffn"], bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attention = Attention(c)
        self.feed_forward = FeedForward(c)
        self.attention_norm = RMSNorm(c["dim"], c["eps"])
        self.ffn_norm = RMSNorm(c["dim"], c["eps"])

    def forward(self, x, past_k=None, past_v=None):
        h = x + self.attention(self.attention_norm(x), past_k, past_v)
        return h + self.feed_forward(self.ffn_norm(h))


class Llama(nn.Module):
    def __init__(self, c, layers, head, past):
        super().__init__()
        self.past = past
        self.head = head
        if head:
            self.tok_embeddings = nn.Embedding(c["vocab"], c["dim"])
        self.layers = nn.ModuleList(Block(c) for _ in range(layers))
        if head:
            self.norm = RMSNorm(c["dim"], c["eps"])
            self.output = nn.Linear(c["dim"], c["vocab"], bias=False)

    def forward(self, x, *caches):
        h = self.tok_embeddings(x.long()) if self.head else x
        for i, layer in enumerate(self.layers):
            if self.past:
                h = layer(h, caches[2 * i], caches[2 * i + 1])
            else:
                h = layer(h)
        return self.output(self.norm(h)) if self.head else h


def build(suite, weights_dir, rung):
    if suite == "resnet50":
        import torchvision

        return _load(torchvision.models.resnet50(), weights_dir)
    if suite == "llama3-8b":
        # As the builder: a rung without "layers" runs all 32.
        m = Llama(LLAMA3, int(rung.get("layers", 32)), bool(rung.get("head", 0)), int(rung.get("past", 0)))
        return _load(m, weights_dir)
    raise ValueError(f"no PyTorch reference module for suite '{suite}' "
                     "(reference modules: resnet50, llama3-8b)")
