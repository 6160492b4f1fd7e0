"""Models exported by torch.onnx.export, run through `cuvil-bench infer` and checked against
PyTorch (the framework that wrote them) at opsets 13 and 17: fp32 max relative error <= 1e-4.
Widths are small so the suite stays fast; one torchvision network runs at full size."""
import math

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision
from torchvision.models.resnet import BasicBlock, ResNet
from torchvision.models.vision_transformer import VisionTransformer

from conftest import FP32_BOUND, randomise

OPSETS = [13, 17]


@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("fold", [True, False], ids=["bn-folded", "bn-kept"])
def test_resnet_with_batchnorm(compare, opset, fold):
    # torchvision's ResNet class, one BasicBlock per stage. Without constant folding the exporter
    # keeps BatchNormalization nodes (cuvil's fold-batchnorm pass folds them instead).
    m = randomise(ResNet(BasicBlock, [1, 1, 1, 1], num_classes=10))
    x = torch.randn(2, 3, 48, 40)
    assert compare(m, x, opset, do_constant_folding=fold) <= FP32_BOUND


@pytest.mark.parametrize("opset", OPSETS)
def test_mobilenet_v2_inverted_residuals(compare, opset):
    # Depthwise 3x3 convolutions, ReLU6 as Clip (min/max inputs from opset 11), residual adds.
    m = randomise(torchvision.models.mobilenet_v2(width_mult=0.25, num_classes=10))
    assert compare(m, torch.randn(1, 3, 64, 64), opset) <= FP32_BOUND


@pytest.mark.parametrize("opset", OPSETS)
def test_mobilenet_v3_hardswish_and_squeeze_excite(compare, opset):
    # HardSwish (a HardSigmoid * x before opset 14), squeeze-excitation gates, 5x5 depthwise.
    m = randomise(torchvision.models.mobilenet_v3_small(num_classes=10))
    assert compare(m, torch.randn(1, 3, 64, 64), opset) <= FP32_BOUND


@pytest.mark.parametrize("opset", OPSETS)
def test_squeezenet_channel_concat_and_ceil_mode_pools(compare, opset):
    # Fire modules concatenate channels; MaxPool(ceil_mode=True); Dropout in eval.
    m = randomise(torchvision.models.squeezenet1_1(num_classes=10))
    assert compare(m, torch.randn(1, 3, 67, 67), opset) <= FP32_BOUND


@pytest.mark.parametrize("opset", OPSETS)
def test_resnext_grouped_bottlenecks(compare, opset):
    # torchvision's ResNet class with 8 groups of 2 (layer1), 4, 8 and 16 (layer4) channels: the
    # narrow groups run the depthwise kernel's grouped tiles, 16 the direct kernel.
    from torchvision.models.resnet import Bottleneck
    m = randomise(ResNet(Bottleneck, [1, 1, 1, 1], groups=8, width_per_group=2, num_classes=10))
    assert compare(m, torch.randn(2, 3, 48, 40), opset) <= FP32_BOUND


@pytest.mark.parametrize("opset", OPSETS)
def test_regnet_group_width_8_with_squeeze_excite(compare, opset):
    # torchvision's RegNet class (RegNetY-style: group width 8, squeeze-excitation gates).
    from torchvision.models.regnet import BlockParams, RegNet
    params = BlockParams.from_init_params(depth=4, w_0=16, w_a=8.0, w_m=2.0, group_width=8,
                                          se_ratio=0.25)
    m = randomise(RegNet(params, num_classes=10))
    assert compare(m, torch.randn(1, 3, 64, 56), opset) <= FP32_BOUND


@pytest.mark.parametrize("opset", OPSETS)
def test_densenet_concat(compare, opset):
    # Dense blocks: every layer concatenates its input; transitions average-pool.
    m = randomise(torchvision.models.DenseNet(growth_rate=8, block_config=(2, 2), num_init_features=16,
                                              bn_size=2, num_classes=10))
    assert compare(m, torch.randn(1, 3, 40, 40), opset) <= FP32_BOUND


class TextEncoder(nn.Module):
    """Token embedding, a two-layer transformer encoder (multi-head attention, GELU MLP,
    LayerNorm) and a classification head: what BERT-style exports are made of."""

    def __init__(self, vocab=61, dim=32, heads=4, layers=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.pos = nn.Parameter(torch.randn(1, 16, dim) * 0.1)
        layer = nn.TransformerEncoderLayer(dim, heads, 64, dropout=0.1, activation="gelu",
                                           batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, 5)

    def forward(self, ids):
        x = self.embed(ids) + self.pos[:, : ids.shape[1]]
        return self.head(self.norm(self.encoder(x)))


@pytest.mark.parametrize("opset", OPSETS)
def test_transformer_encoder(compare, opset):
    torch.manual_seed(0)
    m = TextEncoder().eval()
    ids = torch.randint(0, 61, (2, 7))
    assert compare(m, ids, opset, input_names=("ids",)) <= FP32_BOUND


@pytest.mark.parametrize("opset", OPSETS)
def test_vision_transformer(compare, opset):
    # torchvision's ViT class at a small size: patch conv, class token (Expand/Concat), position
    # embedding, nn.MultiheadAttention, the class token picked by Gather.
    m = randomise(VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2,
                                    hidden_dim=32, mlp_dim=64, num_classes=10))
    assert compare(m, torch.randn(1, 3, 32, 32), opset) <= FP32_BOUND


def test_dynamic_batch_binds_from_the_arrays(compare):
    # Exported with a dynamic batch axis: the Shape -> Gather -> Concat -> Reshape chains fold
    # once `infer` binds the batch from the input array.
    m = randomise(ResNet(BasicBlock, [1, 1, 1, 1], num_classes=10))
    x = torch.randn(3, 3, 32, 32)
    err = compare(m, x, 17, dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
    assert err <= FP32_BOUND


def test_resnet18_full_size(compare):
    m = randomise(torchvision.models.resnet18())
    assert compare(m, torch.randn(1, 3, 224, 224), 17) <= FP32_BOUND


@pytest.mark.parametrize("opset", OPSETS)
def test_swin_shifted_windows(compare, opset):
    # torchvision's Swin class at a small size: channels-last blocks beside conv and linear
    # results (the layout pass must combine them as the graph arranged them), the shifted-window
    # mask built by slice assignment (ScatterND, Mod on constants), F.pad, torch.roll, strided
    # slices in patch merging, attention dropout exported in training mode with p = 0.
    from torchvision.models.swin_transformer import SwinTransformer
    m = randomise(SwinTransformer(patch_size=[4, 4], embed_dim=16, depths=[2, 2], num_heads=[2, 2],
                                  window_size=[3, 3], num_classes=10))
    assert compare(m, torch.randn(1, 3, 40, 40), opset) <= FP32_BOUND


def test_maxvit_einsum_attention(compare):
    # torchvision's MaxViT at a small size: block and grid attention written as Einsum.
    from torchvision.models.maxvit import MaxVit
    m = randomise(MaxVit(input_size=(32, 32), stem_channels=8, partition_size=2,
                         block_channels=[16, 32], block_layers=[1, 1], head_dim=8,
                         stochastic_depth_prob=0.0, num_classes=10))
    assert compare(m, torch.randn(1, 3, 32, 32), 17) <= FP32_BOUND


class BertStyle(nn.Module):
    """BERT's shape: token, position and segment embeddings, an int64 attention mask turned into
    an additive bias (1 - mask.float()) * -10000, attention written out op by op, a pooler."""

    def __init__(self, vocab=50, dim=32, heads=4):
        super().__init__()
        self.tok, self.pos, self.typ = nn.Embedding(vocab, dim), nn.Embedding(16, dim), nn.Embedding(2, dim)
        self.ln0, self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv, self.o = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.f1, self.f2, self.pool = nn.Linear(dim, 64), nn.Linear(64, dim), nn.Linear(dim, dim)
        self.heads = heads

    def forward(self, ids, mask, types):
        b, t = ids.shape
        x = self.ln0(self.tok(ids) + self.pos(torch.arange(t).unsqueeze(0)) + self.typ(types))
        bias = (1.0 - mask[:, None, None, :].float()) * -10000.0
        q, k, v = (z.view(b, t, self.heads, -1).transpose(1, 2) for z in self.qkv(x).chunk(3, -1))
        a = torch.softmax(q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5 + bias, -1) @ v
        x = self.ln1(x + self.o(a.transpose(1, 2).reshape(b, t, -1)))
        x = self.ln2(x + self.f2(nn.functional.gelu(self.f1(x))))
        return torch.tanh(self.pool(x[:, 0]))


@pytest.mark.parametrize("opset", OPSETS)
def test_bert_style_encoder_with_an_integer_attention_mask(compare, opset):
    torch.manual_seed(0)
    m = BertStyle().eval()
    ids = torch.randint(0, 50, (2, 7))
    mask = torch.tensor([[1] * 7, [1] * 4 + [0] * 3])
    assert compare(m, (ids, mask, torch.zeros(2, 7, dtype=torch.long)), opset,
                   input_names=("ids", "mask", "types")) <= FP32_BOUND


def test_causal_mask_from_triu(compare):
    # A GPT-style block whose causal mask is ones(t, t).triu(1) (Trilu, opset 14+).
    class Causal(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb, self.attn = nn.Embedding(50, 32), nn.MultiheadAttention(32, 4, batch_first=True)
            self.head = nn.Linear(32, 50, bias=False)

        def forward(self, ids):
            t = ids.shape[1]
            x = self.emb(ids)
            causal = torch.ones(t, t, dtype=torch.bool).triu(1)
            return self.head(x + self.attn(x, x, x, attn_mask=causal, need_weights=False)[0])

    torch.manual_seed(0)
    assert compare(Causal().eval(), torch.randint(0, 50, (2, 7)), 17, input_names=("ids",)) <= FP32_BOUND


@pytest.mark.parametrize("opset", OPSETS)
def test_transformer_encoder_with_a_key_padding_mask_from_the_attention_mask(compare, opset):
    # nn.TransformerEncoder with src_key_padding_mask=(mask == 0): Equal, Cast to bool and Where
    # run on the run-time mask. Position 0 (never padded) is the output: PyTorch's fused eval path
    # leaves padded positions out, its exported decomposed path computes them.
    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(50, 32)
            layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True)
            self.enc, self.head = nn.TransformerEncoder(layer, 2), nn.Linear(32, 3)

        def forward(self, ids, mask):
            return self.head(self.enc(self.emb(ids), src_key_padding_mask=mask == 0)[:, 0])

    torch.manual_seed(0)
    ids = torch.randint(0, 50, (3, 9))
    mask = torch.tensor([[1] * 9, [1] * 5 + [0] * 4, [1] * 2 + [0] * 7])
    assert compare(Encoder().eval(), (ids, mask), opset, input_names=("ids", "mask")) <= FP32_BOUND


def test_roberta_position_ids_from_the_input_ids(compare):
    # RoBERTa's create_position_ids_from_input_ids: ids.ne(pad), cumsum, * mask, + pad, on the
    # run-time ids; the padding mask for attention from the same comparison.
    class Roberta(nn.Module):
        def __init__(self, pad=1):
            super().__init__()
            self.pad = pad
            self.tok = nn.Embedding(50, 32, padding_idx=pad)
            self.pos = nn.Embedding(20, 32, padding_idx=pad)
            layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True,
                                               activation="gelu")
            self.enc, self.head = nn.TransformerEncoder(layer, 1), nn.Linear(32, 3)

        def forward(self, ids):
            m = ids.ne(self.pad).int()
            pos = (torch.cumsum(m, dim=1).type_as(m) * m).long() + self.pad
            h = self.enc(self.tok(ids) + self.pos(pos), src_key_padding_mask=ids == self.pad)
            return self.head(h[:, 0])

    torch.manual_seed(0)
    ids = torch.randint(2, 50, (3, 9))
    ids[1, 6:] = 1
    ids[2, 3:] = 1
    assert compare(Roberta().eval(), ids, 17, input_names=("ids",)) <= FP32_BOUND


def test_sentence_embedding_normalised_by_f_normalize(compare):
    # Mean pooling over the tokens, then F.normalize (ReduceL2, Clip, Expand, Div).
    class Embedder(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(50, 32)
            layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True)
            self.enc = nn.TransformerEncoder(layer, 1)

        def forward(self, ids):
            return nn.functional.normalize(self.enc(self.emb(ids)).mean(1), dim=-1)

    torch.manual_seed(0)
    assert compare(Embedder().eval(), torch.randint(0, 50, (3, 6)), 17, input_names=("ids",)) <= FP32_BOUND


class Interpolate(nn.Module):
    def __init__(self, **kwargs):
        super().__init__()
        self.kwargs = kwargs

    def forward(self, x):
        return nn.functional.interpolate(x, mode="bilinear", **self.kwargs)


@pytest.mark.parametrize("kwargs", [dict(scale_factor=2.0, align_corners=False),
                                    dict(size=(11, 3), align_corners=False),
                                    dict(size=(13, 1), align_corners=True),
                                    dict(scale_factor=(0.5, 1.5), align_corners=True)],
                         ids=["x2", "size", "size-corners", "down-up-corners"])
def test_bilinear_interpolate(compare, kwargs):
    assert compare(Interpolate(**kwargs).eval(), torch.randn(2, 3, 7, 5), 17) <= FP32_BOUND


class DilatedBackbone(nn.Module):
    # Stride 4, then dilated 3x3s where a classifier would stride (DeepLab's output stride).
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
            nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
            nn.Conv2d(16, 16, 3, padding=2, dilation=2), nn.BatchNorm2d(16), nn.ReLU(),
            nn.Conv2d(16, 16, 3, padding=4, dilation=4, groups=16), nn.ReLU())

    def forward(self, x):
        return {"out": self.body(x)}


class SegmentationLogits(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)["out"]


@pytest.mark.parametrize("opset", OPSETS)
def test_deeplabv3_atrous_pyramid_and_bilinear_upsampling(compare, opset):
    # torchvision's DeepLabV3 head on a dilated backbone: ASPP's parallel 3x3 convolutions at
    # rates 12, 24 and 36 (padding past the 10x8 feature map), its image-pooling branch
    # upsampled bilinearly, and the logits upsampled bilinearly to the 37x29 input.
    from torchvision.models.segmentation.deeplabv3 import DeepLabHead, DeepLabV3
    m = SegmentationLogits(randomise(DeepLabV3(DilatedBackbone(), DeepLabHead(16, 5)))).eval()
    assert compare(m, torch.randn(2, 3, 37, 29), opset) <= FP32_BOUND


def conv_bn_relu(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU())


class UNet(nn.Module):
    """Two levels of a U-Net: max-pooled encoder, ConvTranspose2d(k=2, s=2) up-convolutions,
    skip connections concatenated on channels."""

    def __init__(self):
        super().__init__()
        self.enc1, self.enc2, self.mid = conv_bn_relu(3, 8), conv_bn_relu(8, 16), conv_bn_relu(16, 32)
        self.up2, self.dec2 = nn.ConvTranspose2d(32, 16, 2, stride=2), conv_bn_relu(32, 16)
        self.up1, self.dec1 = nn.ConvTranspose2d(16, 8, 2, stride=2), conv_bn_relu(16, 8)
        self.head = nn.Conv2d(8, 2, 1)

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(nn.functional.max_pool2d(e1, 2))
        m = self.mid(nn.functional.max_pool2d(e2, 2))
        d2 = self.dec2(torch.cat([self.up2(m), e2], 1))
        return self.head(self.dec1(torch.cat([self.up1(d2), e1], 1)))


@pytest.mark.parametrize("opset", OPSETS)
def test_unet_up_convolutions_and_skip_concats(compare, opset):
    assert compare(randomise(UNet()), torch.randn(2, 3, 20, 28), opset) <= FP32_BOUND


@pytest.mark.parametrize("opset", OPSETS)
def test_dcgan_generator_from_a_latent_vector(compare, opset):
    # ConvTranspose2d(k=4): stride 1 from a 1x1 latent, then stride 2 with padding 1 (a 2x2
    # convolution per phase), BatchNorm between (kept: it follows the pixel shuffle), Tanh.
    m = randomise(nn.Sequential(
        nn.ConvTranspose2d(16, 32, 4, 1, 0, bias=False), nn.BatchNorm2d(32), nn.ReLU(),
        nn.ConvTranspose2d(32, 16, 4, 2, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
        nn.ConvTranspose2d(16, 3, 4, 2, 1), nn.Tanh()))
    assert compare(m, torch.randn(3, 16, 1, 1), opset) <= FP32_BOUND


@pytest.mark.parametrize("opset", OPSETS)
def test_decoder_with_output_padding_groups_and_dilation(compare, opset):
    m = randomise(nn.Sequential(
        nn.ConvTranspose2d(8, 8, 3, stride=2, padding=1, output_padding=1, groups=2), nn.ELU(),
        nn.ConvTranspose2d(8, 4, 3, stride=(1, 2), padding=(2, 0), dilation=2), nn.SELU(),
        nn.ConvTranspose2d(4, 4, 5, stride=3, padding=2, output_padding=(2, 1), groups=4)))
    assert compare(m, torch.randn(1, 8, 7, 5), opset) <= FP32_BOUND


@pytest.mark.parametrize("opset", OPSETS)
def test_super_resolution_pixel_shuffle(compare, opset):
    # ESPCN: convolutions at low resolution, PixelShuffle(3) (DepthToSpace, CRD) to the output.
    m = randomise(nn.Sequential(nn.Conv2d(1, 16, 5, padding=2), nn.Tanh(), nn.Conv2d(16, 9, 3, padding=1),
                                nn.PixelShuffle(3), nn.Sigmoid()))
    assert compare(m, torch.randn(2, 1, 11, 13), opset) <= FP32_BOUND


@pytest.mark.parametrize("opset", OPSETS)
def test_vocoder_upsampler_transposed_1d(compare, opset):
    # A HiFi-GAN-style upsampler: ConvTranspose1d(k=16, s=8, p=4) and (k=4, s=2, p=1) between
    # LeakyReLU and dilated 1-D convolutions.
    m = randomise(nn.Sequential(
        nn.Conv1d(10, 16, 7, padding=3), nn.LeakyReLU(0.1),
        nn.ConvTranspose1d(16, 8, 16, stride=8, padding=4), nn.LeakyReLU(0.1),
        nn.Conv1d(8, 8, 3, padding=3, dilation=3), nn.LeakyReLU(0.1),
        nn.ConvTranspose1d(8, 4, 4, stride=2, padding=1), nn.Conv1d(4, 1, 7, padding=3), nn.Tanh()))
    assert compare(m, torch.randn(2, 10, 13), opset) <= FP32_BOUND


@pytest.mark.parametrize("opset", OPSETS)
def test_activations_pytorch_exports_as_their_own_operators(compare, opset):
    # PReLU (a slope per channel), ELU, CELU, SELU, Softplus, Mish (Softplus -> Tanh -> Mul),
    # GELU's tanh approximation (decomposed by the exporter), Softsign, Hardtanh.
    m = randomise(nn.Sequential(
        nn.Conv2d(3, 6, 3), nn.PReLU(6), nn.Conv2d(6, 6, 1), nn.ELU(0.7), nn.Conv2d(6, 6, 1),
        nn.CELU(0.5), nn.Conv2d(6, 6, 1), nn.SELU(), nn.Conv2d(6, 6, 1), nn.Softplus(),
        nn.Conv2d(6, 6, 1), nn.Mish(), nn.Conv2d(6, 6, 1), nn.GELU(approximate="tanh"),
        nn.Conv2d(6, 6, 1), nn.Softsign(), nn.Conv2d(6, 6, 1), nn.Hardtanh(-0.5, 0.8)))
    assert compare(m, torch.randn(2, 3, 9, 8) * 3, opset) <= FP32_BOUND


class Resample(nn.Module):
    def __init__(self, **kwargs):
        super().__init__()
        self.kwargs = kwargs

    def forward(self, x):
        return nn.functional.interpolate(x, **self.kwargs) * 2


@pytest.mark.parametrize("kwargs", [dict(size=(7, 5), mode="nearest"), dict(scale_factor=1.5, mode="nearest"),
                                    dict(scale_factor=(3, 2), mode="nearest"),
                                    dict(scale_factor=0.5, mode="nearest")])
def test_nearest_interpolate_to_any_size(compare, kwargs):
    assert compare(Resample(**kwargs), torch.randn(2, 3, 6, 5), 17) <= FP32_BOUND


@pytest.mark.parametrize("kwargs", [dict(scale_factor=2, mode="trilinear", align_corners=False),
                                    dict(size=(5, 7, 3), mode="trilinear", align_corners=True),
                                    dict(scale_factor=(1, 2, 2), mode="trilinear"),
                                    dict(scale_factor=2, mode="nearest"),
                                    dict(size=(4, 6, 9), mode="nearest")])
@pytest.mark.parametrize("opset", [13, 17])
def test_volumetric_interpolate(compare, kwargs, opset):
    # 3-D U-Nets and video decoders upsample [N, C, D, H, W]: each resized axis in turn
    assert compare(Resample(**kwargs), torch.randn(1, 2, 3, 4, 5), opset) <= FP32_BOUND


@pytest.mark.parametrize("kwargs", [dict(scale_factor=2, mode="linear"),
                                    dict(size=11, mode="linear", align_corners=True),
                                    dict(scale_factor=0.5, mode="linear"),
                                    dict(scale_factor=3, mode="nearest"), dict(size=10, mode="nearest")])
def test_one_dimensional_interpolate(compare, kwargs):
    # audio and sequence models resample [N, C, L]
    assert compare(Resample(**kwargs), torch.randn(2, 3, 7), 17) <= FP32_BOUND


@pytest.mark.parametrize("kwargs", [dict(scale_factor=2, mode="bicubic"),
                                    dict(size=(11, 7), mode="bicubic", align_corners=True),
                                    dict(scale_factor=0.75, mode="bicubic")])
def test_bicubic_interpolate(compare, kwargs):
    assert compare(Resample(**kwargs), torch.randn(2, 3, 6, 5), 17) <= FP32_BOUND


class ClipTextPooling(nn.Module):
    """CLIP's text encoder: a causal transformer whose output is read at each sequence's
    end-of-text token, the largest id, found by argmax at run time."""

    def __init__(self, vocab=50, dim=32, context=8):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.layer = nn.TransformerEncoderLayer(dim, 4, 64, batch_first=True, norm_first=True)
        self.proj = nn.Linear(dim, 16, bias=False)
        # CLIP's build_attention_mask: a causal mask made once, a buffer of the module.
        self.register_buffer("mask", torch.full((context, context), float("-inf")).triu(1))

    def forward(self, ids):
        n = ids.shape[1]
        x = self.layer(self.embed(ids), src_mask=self.mask[:n, :n])
        return self.proj(x[torch.arange(x.shape[0]), ids.argmax(dim=-1)])


@pytest.mark.parametrize("opset", OPSETS)
def test_clip_text_encoder_pools_at_the_argmax_token(compare, opset):
    torch.manual_seed(0)
    ids = torch.tensor([[3, 8, 49, 0, 0, 0], [5, 6, 7, 9, 49, 0], [49, 1, 1, 1, 1, 1]])
    assert compare(ClipTextPooling().eval(), ids, opset, input_names=("ids",)) <= FP32_BOUND


class LabelsAndScores(nn.Module):
    """A classifier that returns its decisions: per-pixel labels, the best score per image and
    the top-3 classes (values and indices)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 10, 3, padding=1)

    def forward(self, x):
        logits = self.conv(x)
        best, _ = logits.flatten(2).max(dim=2)
        top_v, top_i = torch.topk(best, 3)
        return logits.argmax(1).float(), best, top_v, top_i.float(), logits.argmin(1).float()


@pytest.mark.parametrize("opset", OPSETS)
def test_argmax_labels_max_and_topk_outputs(compare, opset):
    torch.manual_seed(0)
    names = ("labels", "best", "top_v", "top_i", "lowest")
    err = compare(LabelsAndScores().eval(), torch.randn(2, 3, 7, 9), opset, output_names=names)
    assert err == 0.0  # positions are exact; values pass through max unchanged


class BucketedIds(nn.Module):
    """Integer arithmetic on run-time ids and float-to-integer casts feeding embeddings: hashed
    buckets (ids // 7, ids % 5) and a quantised scalar feature ((x * 15).long())."""

    def __init__(self):
        super().__init__()
        self.coarse = nn.Embedding(20, 4)
        self.fine = nn.Embedding(5, 4)
        self.level = nn.Embedding(16, 4)

    def forward(self, ids, x):
        level = (x.clamp(0, 1) * 15).long()
        return self.coarse(ids // 7) + self.fine(ids % 5) + self.level(level)


@pytest.mark.parametrize("opset", OPSETS)
def test_integer_buckets_and_float_to_integer_casts_feed_embeddings(compare, opset):
    torch.manual_seed(0)
    m = BucketedIds().eval()
    example = (torch.randint(0, 140, (2, 9)), torch.rand(2, 9) * 1.2 - 0.1)
    assert compare(m, example, opset, input_names=("ids", "x")) <= FP32_BOUND


class SliceAssignment(nn.Module):
    """In-place writes into activations, traced as ScatterND: a constant and a computed row."""

    def forward(self, x):
        y = x * 2
        y[:, 0] = 0
        y[:, -1] = x[:, 1] + 1
        return y


@pytest.mark.parametrize("opset", OPSETS)
def test_slice_assignment_into_activations(compare, opset):
    assert compare(SliceAssignment(), torch.randn(3, 5, 4), opset) <= FP32_BOUND


class ScatterAndFmod(nn.Module):
    """x.scatter with a constant index (one-hot style writes, scatter_add) and torch.fmod."""

    def forward(self, x):
        idx = torch.tensor([[0, 3], [2, 2], [4, 1]])
        y = x.scatter(1, idx, x[:, :2] * 10)
        z = torch.zeros(3, 5).scatter_add(1, idx, x[:, 2:4])
        return y + z + torch.fmod(x * 3, 0.7)


@pytest.mark.parametrize("opset", [16, 17])
def test_scatter_with_a_constant_index_and_fmod(compare, opset):
    torch.manual_seed(0)
    assert compare(ScatterAndFmod(), torch.randn(3, 5), opset) <= FP32_BOUND


class GraphConv(nn.Module):
    """A message-passing layer over a run-time edge list: each edge's message from its source,
    summed at its target (scatter_add, repeated targets), then a linear update."""

    def __init__(self):
        super().__init__()
        self.update = nn.Linear(6, 6)
        self.message = nn.Linear(6, 6)

    def forward(self, x, edges):
        messages = self.message(x[edges[0]])
        at = edges[1].unsqueeze(-1).expand(-1, x.shape[1])
        return torch.relu(self.update(x) + torch.zeros_like(x).scatter_add(0, at, messages))


@pytest.mark.parametrize("opset", [16, 17])  # before 16 PyTorch exports scatter_add without add
def test_graph_convolution_sums_messages_over_a_run_time_edge_list(compare, opset):
    torch.manual_seed(0)
    edges = torch.tensor([[0, 1, 2, 3, 4, 4, 0, 2, 1, 3, 0], [1, 2, 3, 4, 0, 1, 1, 1, 1, 0, 4]])
    err = compare(GraphConv().eval(), (torch.randn(5, 6), edges), opset, input_names=("x", "edges"))
    assert err <= FP32_BOUND


class CacheWrite(nn.Module):
    """A static KV cache written at run-time positions: index_put (ScatterND) and index_copy
    (ScatterElements)."""

    def forward(self, cache, k, pos):
        put = cache.clone()
        put[:, :, pos] = k
        return put * 1.0, cache.index_copy(2, pos, k * 2)


@pytest.mark.parametrize("opset", OPSETS)
def test_kv_cache_written_at_run_time_positions(compare, opset):
    torch.manual_seed(0)
    example = (torch.randn(1, 2, 9, 4), torch.randn(1, 2, 3, 4), torch.tensor([7, 1, 2]))
    err = compare(CacheWrite(), example, opset, input_names=("cache", "k", "pos"),
                  output_names=("put", "copied"))
    assert err == 0.0  # only moves values


class TopKFilterAndOneHot(nn.Module):
    """Sampling's top-k filter (scatter at TopK's run-time indices) and labels one-hot encoded by
    scatter_ into zeros."""

    def forward(self, logits, labels):
        v, i = logits.topk(3, dim=-1)
        kept = torch.full_like(logits, -1e4).scatter(-1, i, v)
        one_hot = torch.zeros(labels.shape[0], 9).scatter_(1, labels.unsqueeze(1), 1.0)
        return kept, one_hot


@pytest.mark.parametrize("opset", OPSETS)
def test_top_k_filter_and_one_hot_by_scatter_at_run_time_indices(compare, opset):
    torch.manual_seed(0)
    example = (torch.randn(4, 9), torch.tensor([1, 8, 0, 8]))
    err = compare(TopKFilterAndOneHot(), example, opset, input_names=("logits", "labels"),
                  output_names=("kept", "one_hot"))
    assert err == 0.0


class PosSine(nn.Module):
    """DETR's sine position embedding: cumulative sums of the (all-valid) mask, strided
    slices interleaving sin and cos."""

    def forward(self, x, mask):
        not_mask = ~mask
        y_embed = not_mask.cumsum(1, dtype=torch.float32)
        x_embed = not_mask.cumsum(2, dtype=torch.float32)
        eps = 1e-6
        y_embed = y_embed / (y_embed[:, -1:, :] + eps) * 2 * math.pi
        x_embed = x_embed / (x_embed[:, :, -1:] + eps) * 2 * math.pi
        dim_t = torch.arange(16, dtype=torch.float32)
        dim_t = 10000 ** (2 * (dim_t // 2) / 16)
        pos_x = x_embed[:, :, :, None] / dim_t
        pos_y = y_embed[:, :, :, None] / dim_t
        pos_x = torch.stack((pos_x[:, :, :, 0::2].sin(), pos_x[:, :, :, 1::2].cos()), dim=4).flatten(3)
        pos_y = torch.stack((pos_y[:, :, :, 0::2].sin(), pos_y[:, :, :, 1::2].cos()), dim=4).flatten(3)
        return torch.cat((pos_y, pos_x), dim=3).permute(0, 3, 1, 2)

class MiniDETR(nn.Module):
    """DETR in small: a ResNet-18 trunk, a projection, sine position embeddings, nn.Transformer
    over the feature map with learned object queries, class and box heads."""

    def __init__(s):
        super().__init__()
        r = torchvision.models.resnet18()
        s.backbone = nn.Sequential(*list(r.children())[:-2])
        s.proj = nn.Conv2d(512, 32, 1)
        s.pos = PosSine()
        s.tr = nn.Transformer(32, 4, 2, 2, 64, dropout=0.0)
        s.query = nn.Embedding(10, 32)
        s.cls = nn.Linear(32, 5); s.box = nn.Linear(32, 4)
    def forward(s, img):
        f = s.proj(s.backbone(img))
        B, C, H, W = f.shape
        mask = torch.zeros(B, H, W, dtype=torch.bool)
        pos = s.pos(f, mask).flatten(2).permute(2, 0, 1)
        src = f.flatten(2).permute(2, 0, 1)
        q = s.query.weight.unsqueeze(1).repeat(1, B, 1)
        hs = s.tr(src + pos, q)
        return s.cls(hs), s.box(hs).sigmoid()

class GPT2Block(nn.Module):
    """A GPT-2 block as Hugging Face writes it: Conv1D projections (addmm), a causal mask
    buffer applied with torch.where and finfo.min, the tanh GELU with torch.pow(h, 3.0)."""

    def __init__(s, d=32, h=4, n=16):
        super().__init__()
        s.ln1 = nn.LayerNorm(d); s.ln2 = nn.LayerNorm(d)
        s.c_attn = nn.Parameter(torch.randn(d, 3 * d) * 0.1); s.b_attn = nn.Parameter(torch.zeros(3 * d))
        s.c_proj = nn.Linear(d, d); s.fc = nn.Linear(d, 4 * d); s.proj = nn.Linear(4 * d, d)
        s.register_buffer("bias", torch.tril(torch.ones(n, n, dtype=torch.bool)).view(1, 1, n, n))
        s.h = h
    def forward(s, x):
        B, T, D = x.shape
        qkv = torch.addmm(s.b_attn, s.ln1(x).view(-1, D), s.c_attn).view(B, T, 3 * D)
        q, k, v = qkv.split(D, dim=2)
        sh = lambda t: t.view(B, T, s.h, D // s.h).permute(0, 2, 1, 3)
        q, k, v = sh(q), sh(k), sh(v)
        w = q @ k.transpose(-1, -2) / math.sqrt(D // s.h)
        causal = s.bias[:, :, :T, :T]
        w = torch.where(causal, w, torch.tensor(torch.finfo(w.dtype).min))
        a = (w.softmax(-1) @ v).permute(0, 2, 1, 3).reshape(B, T, D)
        x = x + s.c_proj(a)
        h = s.fc(s.ln2(x))
        h = 0.5 * h * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (h + 0.044715 * torch.pow(h, 3.0))))
        return x + s.proj(h)


@pytest.mark.parametrize("opset", OPSETS)
def test_detr_style_detector_without_postprocessing(compare, opset):
    torch.manual_seed(0)
    m = randomise(MiniDETR())
    assert compare(m, torch.randn(2, 3, 64, 96), opset, output_names=("logits", "boxes")) <= FP32_BOUND


@pytest.mark.parametrize("opset", OPSETS)
def test_gpt2_style_block(compare, opset):
    torch.manual_seed(0)
    assert compare(GPT2Block().eval(), torch.randn(2, 9, 32), opset) <= FP32_BOUND
