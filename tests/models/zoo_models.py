"""The model zoo: one small model per architecture family users bring (issue 16).

Imported by scripts/gen_models.py (which exports each model and saves PyTorch's outputs as
goldens) and scripts/gen_npu_models.py (int8 on the npu). Each factory returns a Zoo entry:
the module in eval mode with random but fixed weights, its example inputs (float32 or int64), the
input names and the opset. torchvision's own constructors are used where they exist, shrunk to a
size CI can afford through their public arguments (fewer blocks, narrower widths, small inputs);
every op family the full model exercises is kept.

Test-data generation only: nothing in the product runs Python.
"""

import math
from dataclasses import dataclass
from typing import Callable, Dict, List, Tuple

import torch
import torchvision
from torch import nn


@dataclass
class Zoo:
    model: nn.Module
    inputs: Tuple[torch.Tensor, ...]
    input_names: List[str]
    opset: int


def reinit_batchnorm(model: nn.Module, generator: torch.Generator) -> None:
    """Random but sane BatchNorm statistics and affine parameters, for 1-D, 2-D and 3-D norms.

    Freshly constructed BatchNorms are identities (mean 0, var 1, weight 1, bias 0), which hides
    bugs in BatchNorm folding and lets activations of deep random networks shrink toward zero.
    """
    for module in model.modules():
        if isinstance(module, nn.modules.batchnorm._BatchNorm):
            n = module.num_features
            with torch.no_grad():
                module.running_mean.copy_(torch.randn(n, generator=generator) * 0.1)
                module.running_var.copy_(torch.rand(n, generator=generator) + 0.5)
                module.weight.copy_(torch.rand(n, generator=generator) + 0.5)
                module.bias.copy_(torch.randn(n, generator=generator) * 0.1)


def image(seed: int, channels: int, height: int, width: int) -> Tuple[torch.Tensor]:
    return (torch.randn(1, channels, height, width, generator=torch.Generator().manual_seed(seed)),)


def finish(model: nn.Module, inputs, names, opset: int, bn_seed: int = 0) -> Zoo:
    if bn_seed:
        reinit_batchnorm(model, torch.Generator().manual_seed(bn_seed))
    return Zoo(model.eval(), tuple(inputs), list(names), opset)


class OutputOf(nn.Module):
    """Returns one entry of a model's dict output (torchvision's segmentation models return dicts)."""

    def __init__(self, model: nn.Module, key: str):
        super().__init__()
        self.model, self.key = model, key

    def forward(self, x):
        return self.model(x)[self.key]


# --- families that did not import when the zoo was written (issue 16's table) ---------------------


def make_swin():
    # Shifted windows: the attention mask is built by slice assignments (ScatterND), the shift by
    # torch.roll, the window partition by reshapes whose sizes come from Mod on shapes.
    torch.manual_seed(16001)
    model = torchvision.models.SwinTransformer(
        patch_size=[4, 4], embed_dim=32, depths=[2, 2], num_heads=[2, 4], window_size=[4, 4],
        stochastic_depth_prob=0.0, num_classes=10)
    return finish(model, image(16002, 3, 32, 32), ["input"], 14)


class BlockAttention(nn.Module):
    """MaxViT-style multi-head self-attention inside non-overlapping P x P blocks (block mode) or
    across a P x P grid of strided pixels (grid mode), with torch.einsum for both products."""

    def __init__(self, channels: int, heads: int, partition: int, grid: bool):
        super().__init__()
        self.heads, self.partition, self.grid = heads, partition, grid
        self.norm = nn.LayerNorm(channels)
        self.qkv = nn.Linear(channels, 3 * channels)
        self.proj = nn.Linear(channels, channels)

    def forward(self, x):  # x: [B, H, W, C]
        b, h, w, c = x.shape
        p = self.partition
        if self.grid:  # pixels p apart form one group
            t = x.reshape(b, p, h // p, p, w // p, c).permute(0, 2, 4, 1, 3, 5)
        else:  # p x p neighbourhoods form one group
            t = x.reshape(b, h // p, p, w // p, p, c).permute(0, 1, 3, 2, 4, 5)
        groups = t.shape[1] * t.shape[2]
        t = t.reshape(b * groups, p * p, c)
        q, k, v = self.qkv(self.norm(t)).reshape(b * groups, p * p, 3, self.heads, c // self.heads).unbind(2)
        scores = torch.einsum("bihd,bjhd->bhij", q, k) / math.sqrt(c // self.heads)
        out = torch.einsum("bhij,bjhd->bihd", scores.softmax(-1), v).reshape(b * groups, p * p, c)
        out = self.proj(out).reshape(b, h // p, w // p, p, p, c)
        if self.grid:
            out = out.permute(0, 3, 1, 4, 2, 5)
        else:
            out = out.permute(0, 1, 3, 2, 4, 5)
        return x + out.reshape(b, h, w, c)


class MaxVitBlock(nn.Module):
    """MBConv (expand, depthwise, squeeze-excite, project), then block and grid attention, each
    followed by an MLP; channels-last inside the attention as MaxViT does."""

    def __init__(self, channels: int, heads: int, partition: int):
        super().__init__()
        hidden = 4 * channels
        self.mbconv = nn.Sequential(
            nn.BatchNorm2d(channels), nn.Conv2d(channels, hidden, 1), nn.BatchNorm2d(hidden), nn.GELU(),
            nn.Conv2d(hidden, hidden, 3, padding=1, groups=hidden), nn.BatchNorm2d(hidden), nn.GELU(),
            torchvision.ops.SqueezeExcitation(hidden, channels // 4, activation=nn.SiLU),
            nn.Conv2d(hidden, channels, 1))
        self.block = BlockAttention(channels, heads, partition, grid=False)
        self.grid = BlockAttention(channels, heads, partition, grid=True)
        self.mlp_block = nn.Sequential(nn.LayerNorm(channels), nn.Linear(channels, 2 * channels), nn.GELU(),
                                       nn.Linear(2 * channels, channels))
        self.mlp_grid = nn.Sequential(nn.LayerNorm(channels), nn.Linear(channels, 2 * channels), nn.GELU(),
                                      nn.Linear(2 * channels, channels))

    def forward(self, x):  # [B, C, H, W]
        x = x + self.mbconv(x)
        t = x.permute(0, 2, 3, 1)
        t = self.block(t)
        t = t + self.mlp_block(t)
        t = self.grid(t)
        t = t + self.mlp_grid(t)
        return t.permute(0, 3, 1, 2)


class MaxVitSmall(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32), nn.GELU())
        self.blocks = nn.Sequential(MaxVitBlock(32, 4, 4), MaxVitBlock(32, 4, 4))
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.LayerNorm(32), nn.Linear(32, 10))

    def forward(self, x):
        return self.head(self.blocks(self.stem(x)))


def make_maxvit():
    torch.manual_seed(16101)
    return finish(MaxVitSmall(), image(16102, 3, 32, 32), ["input"], 14, bn_seed=16103)


class CausalSelfAttention(nn.Module):
    def __init__(self, width: int, heads: int):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).reshape(b, t, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-2, -1) / math.sqrt(c // self.heads)
        # The causal mask from torch.triu on a tensor built in forward: exported as Trilu (opset 14).
        future = torch.triu(torch.ones_like(scores), diagonal=1)
        scores = scores.masked_fill(future.bool(), float("-inf"))
        out = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, t, c)
        return self.proj(out)


class GptBlock(nn.Module):
    def __init__(self, width: int, heads: int):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.attn = CausalSelfAttention(width, heads)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(approximate="tanh"), nn.Linear(4 * width, width))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GptSmall(nn.Module):
    """GPT-2-style decoder-only transformer: token and position embeddings, pre-norm causal blocks,
    a tied language-model head."""

    def __init__(self, vocab: int = 97, width: int = 64, heads: int = 4, layers: int = 2, context: int = 16):
        super().__init__()
        self.tokens = nn.Embedding(vocab, width)
        self.positions = nn.Embedding(context, width)
        self.blocks = nn.Sequential(*[GptBlock(width, heads) for _ in range(layers)])
        self.ln = nn.LayerNorm(width)

    def forward(self, ids):
        positions = torch.arange(ids.shape[1], device=ids.device)
        x = self.blocks(self.tokens(ids) + self.positions(positions))
        return self.ln(x) @ self.tokens.weight.t()


def make_gpt():
    torch.manual_seed(16201)
    ids = torch.randint(0, 97, (1, 16), generator=torch.Generator().manual_seed(16202))
    return finish(GptSmall(), (ids,), ["input_ids"], 14)


class Recurrent(nn.Module):
    """A bidirectional 2-layer LSTM feeding a bidirectional 2-layer GRU (batch first). With
    `packed`, the sequences are packed by their lengths, which exports as sequence_lens."""

    def __init__(self, packed: bool):
        super().__init__()
        self.packed = packed
        self.lstm = nn.LSTM(12, 16, num_layers=2, bidirectional=True, batch_first=True)
        self.gru = nn.GRU(32, 16, num_layers=2, bidirectional=True, batch_first=True)
        self.head = nn.Linear(32, 5)

    def run(self, rnn, x, lengths):
        if not self.packed:
            return rnn(x)[0]
        packed = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        y, _ = nn.utils.rnn.pad_packed_sequence(rnn(packed)[0], batch_first=True, total_length=x.shape[1])
        return y

    def forward(self, x, lengths=None):
        return self.head(self.run(self.gru, self.run(self.lstm, x, lengths), lengths))


def make_lstm_gru():
    torch.manual_seed(16301)
    x = torch.randn(2, 10, 12, generator=torch.Generator().manual_seed(16302))
    return finish(Recurrent(packed=False), (x,), ["input"], 14)


def make_lstm_gru_lengths():
    # Same layers with a second, shorter sequence: exported with sequence_lens.
    torch.manual_seed(16311)
    x = torch.randn(2, 10, 12, generator=torch.Generator().manual_seed(16312))
    lengths = torch.tensor([10, 6], dtype=torch.int64)
    return finish(Recurrent(packed=True), (x, lengths), ["input", "lengths"], 14)


class R3dSmall(nn.Module):
    """torchvision's R3D-18 topology (3x7x7 stem, Conv3d basic blocks, AdaptiveAvgPool3d) with one
    block per stage, plus a BatchNorm3d on the input and a MaxPool3d after the stem: the exporter
    folds every BatchNorm that follows a Conv into the Conv, so these keep 3-D BatchNormalization
    and MaxPool in the graph."""

    def __init__(self):
        super().__init__()
        from torchvision.models.video.resnet import BasicBlock, BasicStem, Conv3DSimple, VideoResNet
        self.norm = nn.BatchNorm3d(3)
        self.net = VideoResNet(BasicBlock, [Conv3DSimple] * 4, [1, 1, 1, 1], BasicStem, num_classes=10)
        self.net.stem.append(nn.MaxPool3d(kernel_size=(1, 3, 3), stride=(1, 2, 2), padding=(0, 1, 1)))

    def forward(self, video):
        return self.net(self.norm(video))


def make_r3d():
    torch.manual_seed(16401)
    video = torch.randn(1, 3, 8, 32, 32, generator=torch.Generator().manual_seed(16402))
    return finish(R3dSmall(), (video,), ["input"], 14, bn_seed=16403)


class UNetSmall(nn.Module):
    """Two-level UNet: double 3x3 convs with BatchNorm, max-pool down, ConvTranspose2d up, skip
    concatenation, 16 output classes. With a 1x3x16x16 input the first level and the output are 16
    channels at 16x16 (C = H = W), so NCHW and NHWC shapes coincide there: a rewrite that takes the
    output's layout Transpose for a no-op because its shapes are equal gives wrong numbers."""

    @staticmethod
    def double(cin, cout):
        return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(),
                             nn.Conv2d(cout, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU())

    def __init__(self):
        super().__init__()
        self.down1, self.down2, self.bottom = self.double(3, 16), self.double(16, 32), self.double(32, 64)
        self.up2, self.dec2 = nn.ConvTranspose2d(64, 32, 2, stride=2), self.double(64, 32)
        self.up1, self.dec1 = nn.ConvTranspose2d(32, 16, 2, stride=2), self.double(32, 16)
        self.out = nn.Conv2d(16, 16, 1)

    def forward(self, x):
        d1 = self.down1(x)
        d2 = self.down2(nn.functional.max_pool2d(d1, 2))
        b = self.bottom(nn.functional.max_pool2d(d2, 2))
        u2 = self.dec2(torch.cat([self.up2(b), d2], dim=1))
        u1 = self.dec1(torch.cat([self.up1(u2), d1], dim=1))
        return self.out(u1)


def make_unet():
    torch.manual_seed(16501)
    return finish(UNetSmall(), image(16502, 3, 16, 16), ["input"], 13, bn_seed=16503)


# --- families that already worked ------------------------------------------------------------------


def make_vit():
    torch.manual_seed(16601)
    model = torchvision.models.VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=4,
                                                 hidden_dim=64, mlp_dim=128, num_classes=10)
    with torch.no_grad():  # torchvision zero-initialises the classifier: the output would be all 0
        model.heads.head.weight.normal_(0, 0.1)
        model.heads.head.bias.normal_(0, 0.1)
    return finish(model, image(16602, 3, 32, 32), ["input"], 14)


def make_convnext():
    from torchvision.models.convnext import CNBlockConfig
    torch.manual_seed(16701)
    setting = [CNBlockConfig(32, 64, 1), CNBlockConfig(64, 128, 1), CNBlockConfig(128, None, 1)]
    model = torchvision.models.ConvNeXt(setting, layer_scale=0.5, num_classes=10)
    return finish(model, image(16702, 3, 32, 32), ["input"], 13)


def make_efficientnet_v2():
    from torchvision.models.efficientnet import FusedMBConvConfig, MBConvConfig
    torch.manual_seed(16801)
    setting = [FusedMBConvConfig(1, 3, 1, 16, 16, 1), FusedMBConvConfig(4, 3, 2, 16, 32, 1),
               MBConvConfig(4, 3, 2, 32, 48, 1), MBConvConfig(6, 3, 1, 48, 64, 2)]
    model = torchvision.models.EfficientNet(setting, dropout=0.2, stochastic_depth_prob=0.0, num_classes=10,
                                            last_channel=128)
    return finish(model, image(16802, 3, 32, 32), ["input"], 13, bn_seed=16803)


def make_regnet_y():
    from torchvision.models.regnet import BlockParams
    torch.manual_seed(16901)
    params = BlockParams.from_init_params(depth=4, w_0=24, w_a=27.89, w_m=2.09, group_width=8, se_ratio=0.25)
    model = torchvision.models.RegNet(params, num_classes=10, stem_width=16)
    return finish(model, image(16902, 3, 32, 32), ["input"], 13, bn_seed=16903)


def make_resnext():
    from torchvision.models.resnet import Bottleneck
    torch.manual_seed(17001)
    model = torchvision.models.ResNet(Bottleneck, [1, 1, 1, 1], num_classes=10, groups=8, width_per_group=4)
    return finish(model, image(17002, 3, 32, 32), ["input"], 13, bn_seed=17003)


def make_mobilenet_v3():
    torch.manual_seed(17101)
    model = torchvision.models.mobilenet_v3_small(weights=None, num_classes=10)
    return finish(model, image(17102, 3, 64, 64), ["input"], 13, bn_seed=17103)


def make_lraspp():
    torch.manual_seed(17201)
    model = torchvision.models.segmentation.lraspp_mobilenet_v3_large(weights=None, weights_backbone=None,
                                                                      num_classes=4)
    return finish(OutputOf(model, "out"), image(17202, 3, 64, 64), ["input"], 13, bn_seed=17203)


def make_deeplabv3():
    torch.manual_seed(17301)
    model = torchvision.models.segmentation.deeplabv3_mobilenet_v3_large(
        weights=None, weights_backbone=None, num_classes=4, aux_loss=False)
    return finish(OutputOf(model, "out"), image(17302, 3, 64, 64), ["input"], 13, bn_seed=17303)


def make_fcn():
    # fcn_resnet50's structure (a dilated Bottleneck ResNet, output stride 8, FCNHead, bilinear
    # upsampling) with one block per stage and narrower bottlenecks.
    from torchvision.models._utils import IntermediateLayerGetter
    from torchvision.models.resnet import Bottleneck
    from torchvision.models.segmentation.fcn import FCN, FCNHead
    torch.manual_seed(17401)
    backbone = torchvision.models.ResNet(Bottleneck, [1, 1, 1, 1], width_per_group=16,
                                         replace_stride_with_dilation=[False, True, True])
    backbone = IntermediateLayerGetter(backbone, return_layers={"layer4": "out"})
    model = FCN(backbone, FCNHead(2048, 4))
    return finish(OutputOf(model, "out"), image(17402, 3, 32, 32), ["input"], 13, bn_seed=17403)


class AudioConv(nn.Module):
    """1-D conv stack over a waveform (M5-style): strided stem, BatchNorm1d, max-pooling, global
    average, linear classifier."""

    def __init__(self):
        super().__init__()
        layers, cin = [nn.Conv1d(1, 16, 40, stride=8), nn.BatchNorm1d(16), nn.ReLU(), nn.MaxPool1d(4)], 16
        for cout in (16, 32, 32):
            layers += [nn.Conv1d(cin, cout, 3, padding=1), nn.BatchNorm1d(cout), nn.ReLU(), nn.MaxPool1d(2)]
            cin = cout
        self.features = nn.Sequential(*layers)
        self.head = nn.Linear(32, 8)

    def forward(self, x):
        return self.head(self.features(x).mean(dim=-1))


def make_audio_conv1d():
    torch.manual_seed(17501)
    wave = torch.randn(1, 1, 2000, generator=torch.Generator().manual_seed(17502))
    return finish(AudioConv(), (wave,), ["input"], 13, bn_seed=17503)


class BertSmall(nn.Module):
    """BERT-style encoder: word, position and token-type embeddings of int64 ids, LayerNorm, a
    padding mask from the int64 attention mask, post-norm encoder layers, a tanh pooler."""

    def __init__(self, vocab: int = 101, width: int = 64, heads: int = 4, layers: int = 2, context: int = 16):
        super().__init__()
        self.words = nn.Embedding(vocab, width)
        self.positions = nn.Embedding(context, width)
        self.token_types = nn.Embedding(2, width)
        self.ln = nn.LayerNorm(width)
        layer = nn.TransformerEncoderLayer(width, heads, 2 * width, activation="gelu", batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.pooler = nn.Linear(width, width)

    def forward(self, input_ids, attention_mask):
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)
        x = self.words(input_ids) + self.positions(positions) + self.token_types(torch.zeros_like(input_ids))
        x = self.encoder(self.ln(x), src_key_padding_mask=attention_mask == 0)
        return torch.tanh(self.pooler(x[:, 0]))


def make_bert():
    torch.manual_seed(17601)
    ids = torch.randint(1, 101, (1, 16), generator=torch.Generator().manual_seed(17602))
    mask = torch.ones(1, 16, dtype=torch.int64)
    mask[:, 12:] = 0  # four padding tokens
    return finish(BertSmall(), (ids, mask), ["input_ids", "attention_mask"], 14)


class Mha(nn.Module):
    """nn.MultiheadAttention with a query sequence attending to a different key/value sequence."""

    def __init__(self):
        super().__init__()
        self.attention = nn.MultiheadAttention(64, 8, batch_first=True)

    def forward(self, query, memory):
        out, _ = self.attention(query, memory, memory, need_weights=False)
        return out


def make_mha():
    torch.manual_seed(17701)
    generator = torch.Generator().manual_seed(17702)
    query, memory = torch.randn(1, 8, 64, generator=generator), torch.randn(1, 12, 64, generator=generator)
    return finish(Mha(), (query, memory), ["query", "memory"], 14)


ZOO: Dict[str, Callable[[], Zoo]] = {
    "swin": make_swin,
    "maxvit": make_maxvit,
    "gpt": make_gpt,
    "lstm_gru": make_lstm_gru,
    "lstm_gru_lengths": make_lstm_gru_lengths,
    "r3d": make_r3d,
    "unet": make_unet,
    "vit": make_vit,
    "convnext": make_convnext,
    "efficientnet_v2": make_efficientnet_v2,
    "regnet_y": make_regnet_y,
    "resnext": make_resnext,
    "mobilenet_v3": make_mobilenet_v3,
    "lraspp": make_lraspp,
    "deeplabv3": make_deeplabv3,
    "fcn": make_fcn,
    "audio_conv1d": make_audio_conv1d,
    "bert": make_bert,
    "mha": make_mha,
}
