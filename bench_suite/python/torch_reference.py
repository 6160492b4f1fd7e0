"""PyTorch reference modules of the built-in suites, as a PyTorch user would run them, loaded
with cuvil's own weights by name (the builders name every tensor as these modules do):

  resnet50   torchvision.models.resnet50 (v1.5), input "image" [N, 3, H, W]
  llama3-8b  a compact Llama-3 decoder (Meta's reference layout: layers.N.attention.wq, ...,
             RMSNorm, rotate-half RoPE, grouped-query causal attention over an optional KV
             cache, SwiGLU), inputs "hidden" [B, S, D] or "tokens" [B, S], then per layer
             "layerN.past_k" / "layerN.past_v" [B, KVH, P, HD] when the rung has a past
  sdxl       the SDXL base UNet in diffusers' UNet2DConditionModel layout (down_blocks.N.resnets.M,
             attentions.M.transformer_blocks.K.attn1.to_q, ...), inputs "latent", "timestep_features",
             "text_context", "text_embeds", "time_ids_features" (the sinusoidal projections are
             inputs, as in cuvil's graph)

build(suite, weights_dir, rung, scaled_down) returns the module; its forward takes the cuvil
graph's inputs in the graph's order. scaled_down: the suite's toy-size topology (what
`cuvil-bench verify` checks without --full-size); the dimensions below mirror the C++ builders
(bench_suite/models/*.h), and a mismatch shows as a shape error naming the weight.
"""
import contextlib
import math
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

# The published Llama-3-8B dimensions, as bench_suite/models/llama3_8b.h.
LLAMA3 = dict(dim=4096, heads=32, kv_heads=8, ffn=14336, vocab=128256, eps=1e-5, theta=500000.0)
LLAMA3_TINY = dict(LLAMA3, dim=64, heads=4, kv_heads=2, ffn=160, vocab=97)  # llama3_tiny()
LLAMA3_TINY_LAYERS = 2

# bench_suite/models/sdxl_unet.h: SdxlOptions{} and sdxl_tiny().
SDXL = dict(channels=(320, 640, 1280), depth=(0, 2, 10), mid_depth=10, head_dim=64,
            layers_per_block=2, groups=32, time_embed_dim=1280, add_in=2816, context_dim=2048)
SDXL_TINY = dict(channels=(32, 64, 128), depth=(0, 1, 2), mid_depth=1, head_dim=16,
                 layers_per_block=2, groups=8, time_embed_dim=128, add_in=64 + 6 * 8,
                 context_dim=32)
SDXL_RESNET_EPS, SDXL_TRANSFORMER_GROUP_NORM_EPS, SDXL_LAYER_NORM_EPS = 1e-5, 1e-6, 1e-5


def _load(module, weights_dir):
    """Every parameter and buffer of `module` from weights_dir/<name>.npy; all must be there.
    Copied in one at a time from memory-mapped files, so loading holds no second copy of the
    weights (the SDXL UNet's are 10 GB)."""
    missing = []
    with torch.no_grad():
        for name, t in list(module.named_parameters()) + list(module.named_buffers()):
            if name.endswith("num_batches_tracked"):
                continue
            path = os.path.join(weights_dir, name + ".npy")
            if not os.path.exists(path):
                missing.append(name)
                continue
            a = np.load(path, mmap_mode="r")
            if tuple(a.shape) != tuple(t.shape):
                raise ValueError(f"weight {name}: cuvil's has shape {a.shape}, the reference module's {tuple(t.shape)}")
            t.copy_(torch.from_numpy(np.ascontiguousarray(a)))
            del a
    if missing:
        raise ValueError(f"cuvil's graph has no weight for {len(missing)} reference parameter(s): "
                         f"{', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''}")
    return module.eval()


@contextlib.contextmanager
def _no_random_init():
    """Modules built without drawing their initial weights, which _load then overwrites every one
    of (it fails on a missing one): 2.6 billion draws took the SDXL UNet's build ~70 s."""
    saved = {name: getattr(nn.init, name) for name in ("kaiming_uniform_", "uniform_", "normal_")}
    try:
        for name in saved:
            setattr(nn.init, name, lambda tensor, *args, **kwargs: tensor)
        yield
    finally:
        for name, f in saved.items():
            setattr(nn.init, name, f)


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


# The SDXL UNet, named as diffusers names it (so cuvil's weights load by name).


class ResnetBlock2D(nn.Module):
    def __init__(self, c, cin, cout):
        super().__init__()
        self.norm1 = nn.GroupNorm(c["groups"], cin, eps=SDXL_RESNET_EPS)
        self.conv1 = nn.Conv2d(cin, cout, 3, padding=1)
        self.time_emb_proj = nn.Linear(c["time_embed_dim"], cout)
        self.norm2 = nn.GroupNorm(c["groups"], cout, eps=SDXL_RESNET_EPS)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1)
        self.conv_shortcut = nn.Conv2d(cin, cout, 1) if cin != cout else None

    def forward(self, x, emb_act):
        h = self.conv1(F.silu(self.norm1(x)))
        h = h + self.time_emb_proj(emb_act)[:, :, None, None]
        h = self.conv2(F.silu(self.norm2(h)))
        return (x if self.conv_shortcut is None else self.conv_shortcut(x)) + h


class CrossAttention(nn.Module):
    def __init__(self, channels, kv_dim, head_dim):
        super().__init__()
        self.heads = channels // head_dim
        self.to_q = nn.Linear(channels, channels, bias=False)
        self.to_k = nn.Linear(kv_dim, channels, bias=False)
        self.to_v = nn.Linear(kv_dim, channels, bias=False)
        self.to_out = nn.ModuleList([nn.Linear(channels, channels), nn.Identity()])

    def forward(self, x, kv):
        b = x.shape[0]

        def heads(t):
            return t.view(b, t.shape[1], self.heads, -1).transpose(1, 2)

        q, k, v = heads(self.to_q(x)), heads(self.to_k(kv)), heads(self.to_v(kv))
        # Written out: Debian's PyTorch (1.13) has no F.scaled_dot_product_attention.
        a = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1) @ v
        return self.to_out[0](a.transpose(1, 2).reshape(b, x.shape[1], -1))


class GEGLU(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.proj = nn.Linear(channels, 2 * 4 * channels)

    def forward(self, x):
        value, gate = self.proj(x).chunk(2, dim=-1)
        return value * F.gelu(gate)


class FeedForwardGEGLU(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.net = nn.ModuleList([GEGLU(channels), nn.Identity(), nn.Linear(4 * channels, channels)])

    def forward(self, x):
        return self.net[2](self.net[0](x))


class BasicTransformerBlock(nn.Module):
    def __init__(self, c, channels):
        super().__init__()
        self.norm1 = nn.LayerNorm(channels, eps=SDXL_LAYER_NORM_EPS)
        self.attn1 = CrossAttention(channels, channels, c["head_dim"])
        self.norm2 = nn.LayerNorm(channels, eps=SDXL_LAYER_NORM_EPS)
        self.attn2 = CrossAttention(channels, c["context_dim"], c["head_dim"])
        self.norm3 = nn.LayerNorm(channels, eps=SDXL_LAYER_NORM_EPS)
        self.ff = FeedForwardGEGLU(channels)

    def forward(self, h, context):
        n = self.norm1(h)
        h = h + self.attn1(n, n)
        h = h + self.attn2(self.norm2(h), context)
        return h + self.ff(self.norm3(h))


class Transformer2DModel(nn.Module):
    """use_linear_projection=True, as SDXL."""

    def __init__(self, c, channels, depth):
        super().__init__()
        self.norm = nn.GroupNorm(c["groups"], channels, eps=SDXL_TRANSFORMER_GROUP_NORM_EPS)
        self.proj_in = nn.Linear(channels, channels)
        self.transformer_blocks = nn.ModuleList(BasicTransformerBlock(c, channels) for _ in range(depth))
        self.proj_out = nn.Linear(channels, channels)

    def forward(self, x, context):
        b, ch, height, width = x.shape
        h = self.norm(x).permute(0, 2, 3, 1).reshape(b, height * width, ch)
        h = self.proj_in(h)
        for block in self.transformer_blocks:
            h = block(h, context)
        h = self.proj_out(h).reshape(b, height, width, ch).permute(0, 3, 1, 2)
        return h + x


class TimestepEmbedding(nn.Module):
    def __init__(self, cin, dim):
        super().__init__()
        self.linear_1 = nn.Linear(cin, dim)
        self.linear_2 = nn.Linear(dim, dim)

    def forward(self, x):
        return self.linear_2(F.silu(self.linear_1(x)))


class Conv(nn.Module):
    """A holder named `conv` (diffusers' Downsample2D / Upsample2D)."""

    def __init__(self, channels, stride):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, stride=stride, padding=1)


class UNetBlock(nn.Module):
    """A down, mid or up block: resnets, optional attentions, optional resampler."""

    def __init__(self):
        super().__init__()
        self.resnets = nn.ModuleList()
        self.attentions = nn.ModuleList()


class SdxlUNet(nn.Module):
    def __init__(self, c):
        super().__init__()
        ch, depth, n = c["channels"], c["depth"], len(c["channels"])
        self.time_embedding = TimestepEmbedding(ch[0], c["time_embed_dim"])
        self.add_embedding = TimestepEmbedding(c["add_in"], c["time_embed_dim"])
        self.conv_in = nn.Conv2d(4, ch[0], 3, padding=1)
        self.down_blocks = nn.ModuleList()
        skips, h = [ch[0]], ch[0]
        for i in range(n):
            block = UNetBlock()
            for _ in range(c["layers_per_block"]):
                block.resnets.append(ResnetBlock2D(c, h, ch[i]))
                h = ch[i]
                if depth[i]:
                    block.attentions.append(Transformer2DModel(c, h, depth[i]))
                skips.append(h)
            if i + 1 < n:
                block.downsamplers = nn.ModuleList([Conv(h, 2)])
                skips.append(h)
            self.down_blocks.append(block)
        self.mid_block = UNetBlock()
        self.mid_block.resnets.extend([ResnetBlock2D(c, h, h), ResnetBlock2D(c, h, h)])
        if c["mid_depth"]:
            self.mid_block.attentions.append(Transformer2DModel(c, h, c["mid_depth"]))
        self.up_blocks = nn.ModuleList()
        for i in range(n):
            level = n - 1 - i
            block = UNetBlock()
            for _ in range(c["layers_per_block"] + 1):
                block.resnets.append(ResnetBlock2D(c, h + skips.pop(), ch[level]))
                h = ch[level]
                if depth[level]:
                    block.attentions.append(Transformer2DModel(c, h, depth[level]))
            if i + 1 < n:
                block.upsamplers = nn.ModuleList([Conv(h, 1)])
            self.up_blocks.append(block)
        self.conv_norm_out = nn.GroupNorm(c["groups"], h, eps=SDXL_RESNET_EPS)
        self.conv_out = nn.Conv2d(h, 4, 3, padding=1)

    @staticmethod
    def _stage(block, j, h, emb_act, context):
        h = block.resnets[j](h, emb_act)
        return block.attentions[j](h, context) if len(block.attentions) else h

    def forward(self, latent, timestep_features, text_context, text_embeds, time_ids_features):
        emb = self.time_embedding(timestep_features) + self.add_embedding(
            torch.cat([text_embeds, time_ids_features], dim=1))
        emb_act = F.silu(emb)
        h = self.conv_in(latent)
        skips = [h]
        for block in self.down_blocks:
            for j in range(len(block.resnets)):
                h = self._stage(block, j, h, emb_act, text_context)
                skips.append(h)
            if hasattr(block, "downsamplers"):
                h = block.downsamplers[0].conv(h)
                skips.append(h)
        mid = self.mid_block
        h = mid.resnets[0](h, emb_act)
        if len(mid.attentions):
            h = mid.attentions[0](h, text_context)
        h = mid.resnets[1](h, emb_act)
        for block in self.up_blocks:
            for j in range(len(block.resnets)):
                h = self._stage(block, j, torch.cat([h, skips.pop()], dim=1), emb_act, text_context)
            if hasattr(block, "upsamplers"):
                h = block.upsamplers[0].conv(F.interpolate(h, scale_factor=2.0, mode="nearest"))
        return self.conv_out(F.silu(self.conv_norm_out(h)))


def build(suite, weights_dir, rung, scaled_down=False):
    with _no_random_init():
        module = _make(suite, rung, scaled_down)
    return _load(module, weights_dir)


def _make(suite, rung, scaled_down):
    if suite == "resnet50":
        if scaled_down:
            raise ValueError("resnet50's reference is torchvision's ResNet-50, whose widths are fixed: "
                             "compare it at the real dimensions (--full-size)")
        import torchvision

        return torchvision.models.resnet50()
    if suite == "llama3-8b":
        # As the builder: a rung without "layers" runs all 32; the toy size always has 2.
        layers = LLAMA3_TINY_LAYERS if scaled_down else int(rung.get("layers", 32))
        return Llama(LLAMA3_TINY if scaled_down else LLAMA3, layers, bool(rung.get("head", 0)),
                     int(rung.get("past", 0)))
    if suite == "sdxl":
        return SdxlUNet(SDXL_TINY if scaled_down else SDXL)
    raise ValueError(f"no PyTorch reference module for suite '{suite}' "
                     "(reference modules: resnet50, llama3-8b, sdxl)")
