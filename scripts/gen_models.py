#!/usr/bin/python3
"""Exports the end-to-end test models with PyTorch and saves PyTorch's outputs as goldens.

Usage: gen_models.py OUTDIR
       gen_models.py --zoo OUTDIR

For each model M of MODELS (torchvision networks, a transformer encoder, and the shape-coincidence
cases of docs/testing.md), writes
  OUTDIR/M.onnx         the model (random but deterministic weights, eval mode)
  OUTDIR/M.input.npy    the input (float32)
  OUTDIR/M.output.npy   PyTorch's output for that input (float32)

With --zoo, exports the model zoo of tests/models/zoo_models.py (one small model per architecture
family) instead; a zoo model may have several inputs (float32 or int64), so it writes
  OUTDIR/M.onnx         the model
  OUTDIR/M.in.NAME.npy  the value of each input NAME
  OUTDIR/M.out.npy      PyTorch's output (float32)

Deterministic: every model is built and fed from its own fixed seed, on one thread. Skips all
work when OUTDIR/.stamp names the same generator and torch versions and every file exists.

Test-data generation only: nothing in the product runs Python.
"""

import hashlib
import os
import sys
import time

import numpy as np
import torch
import torchvision

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "models"))
import zoo_models  # noqa: E402  (the zoo's model definitions)

GENERATOR_VERSION = "gen_models v3"  # v3: bert_encoder, vit_encoder, gpt_block
ZOO_GENERATOR_VERSION = "gen_models zoo v1"


# Random but sane BatchNorm statistics (one definition, shared with the zoo).
reinit_batchnorm = zoo_models.reinit_batchnorm


def make_resnet18():
    torch.manual_seed(1801)
    model = torchvision.models.resnet18(weights=None)
    reinit_batchnorm(model, torch.Generator().manual_seed(1802))
    return model, (1, 3, 224, 224), 13


def make_mobilenet_v2():
    torch.manual_seed(2201)
    model = torchvision.models.mobilenet_v2(weights=None)
    reinit_batchnorm(model, torch.Generator().manual_seed(2202))
    return model, (1, 3, 224, 224), 13


def make_transformer_encoder():
    torch.manual_seed(6401)
    model = torch.nn.TransformerEncoderLayer(
        d_model=64, nhead=4, dim_feedforward=128, activation="gelu", batch_first=True
    )
    return model, (1, 16, 64), 14


class BertEncoder(torch.nn.Module):
    """BERT-style: token embeddings of int64 ids (Gather), learned positions, LayerNorm, two
    post-norm GELU encoder layers."""

    def __init__(self, vocab: int = 101, width: int = 64, context: int = 16):
        super().__init__()
        self.tokens = torch.nn.Embedding(vocab, width)
        self.positions = torch.nn.Parameter(torch.randn(1, context, width) * 0.5)
        self.ln = torch.nn.LayerNorm(width)
        layer = torch.nn.TransformerEncoderLayer(width, 4, 2 * width, activation="gelu", batch_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)

    def forward(self, ids):
        return self.encoder(self.ln(self.tokens(ids) + self.positions))


def make_bert_encoder():
    torch.manual_seed(6501)
    ids = torch.randint(0, 101, (1, 16), generator=torch.Generator().manual_seed(6502))
    return BertEncoder(), ids, 14


class VitEncoder(torch.nn.Module):
    """ViT-style: a patch-embedding convolution, a class token and learned positions, a pre-norm
    GELU encoder layer, a final LayerNorm and a per-token classifier."""

    def __init__(self, width: int = 64, patch: int = 8, image: int = 32, classes: int = 10):
        super().__init__()
        self.patches = torch.nn.Conv2d(3, width, patch, stride=patch)
        self.cls = torch.nn.Parameter(torch.randn(1, 1, width) * 0.5)
        self.positions = torch.nn.Parameter(torch.randn(1, (image // patch) ** 2 + 1, width) * 0.5)
        layer = torch.nn.TransformerEncoderLayer(width, 4, 2 * width, activation="gelu", batch_first=True,
                                                 norm_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)
        self.ln = torch.nn.LayerNorm(width)
        self.head = torch.nn.Linear(width, classes)

    def forward(self, x):
        tokens = self.patches(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), tokens], dim=1) + self.positions
        return self.head(self.ln(self.encoder(x)))


def make_vit_encoder():
    torch.manual_seed(6601)
    return VitEncoder(), (1, 3, 32, 32), 14


class GptBlock(torch.nn.Module):
    """GPT-style: one pre-norm block with causal self-attention (an additive -inf mask) and a
    tanh-GELU MLP, then the final LayerNorm."""

    def __init__(self, width: int = 64, context: int = 16):
        super().__init__()
        self.ln1, self.ln2, self.ln = (torch.nn.LayerNorm(width) for _ in range(3))
        self.attn = torch.nn.MultiheadAttention(width, 4, batch_first=True)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(width, 4 * width), torch.nn.GELU(approximate="tanh"),
                                       torch.nn.Linear(4 * width, width))
        self.register_buffer("mask", torch.triu(torch.full((context, context), float("-inf")), diagonal=1))

    def forward(self, x):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=self.mask, need_weights=False)[0]
        return self.ln(x + self.mlp(self.ln2(x)))


def make_gpt_block():
    torch.manual_seed(6701)
    return GptBlock(), (1, 16, 64), 14


def make_densenet121():
    # At 128x128 the stem's output is 64 channels at 64x64 (C = H = W): the NCHW and NHWC shapes
    # coincide, which a rewrite deciding from shapes instead of permutations gets wrong.
    torch.manual_seed(1211)
    model = torchvision.models.densenet121(weights=None)
    reinit_batchnorm(model, torch.Generator().manual_seed(1212))
    return model, (1, 3, 128, 128), 13


def make_conv1x1(in_channels: int, seed: int):
    # A single 1x1 convolution whose output is 1x8x8x8: C = H = W at its output.
    def factory():
        torch.manual_seed(seed)
        return torch.nn.Conv2d(in_channels, 8, 1), (1, in_channels, 8, 8), 13

    return factory


MODELS = {
    "resnet18": make_resnet18,
    "mobilenet_v2": make_mobilenet_v2,
    "transformer_encoder": make_transformer_encoder,
    "bert_encoder": make_bert_encoder,
    "vit_encoder": make_vit_encoder,
    "gpt_block": make_gpt_block,
    "densenet121_128": make_densenet121,
    "conv1x1_8to8_8x8": make_conv1x1(8, 881),
    "conv1x1_16to8_8x8": make_conv1x1(16, 1681),
}


def outputs_of(out_dir: str, name: str):
    return [os.path.join(out_dir, name + suffix) for suffix in (".onnx", ".input.npy", ".output.npy")]


def stamp_text() -> str:
    return f"{GENERATOR_VERSION} torch {torch.__version__} torchvision {torchvision.__version__}\n"


def export_model(out_dir: str, name: str, factory) -> None:
    model, input_shape, opset = factory()
    model.eval()
    generator = torch.Generator().manual_seed(hash_name(name))
    # A factory gives an input shape (standard normal values) or the example itself (token ids).
    if isinstance(input_shape, torch.Tensor):
        example = input_shape
    else:
        example = torch.randn(*input_shape, generator=generator, dtype=torch.float32)

    # With gradients enabled and parameters requiring them, PyTorch takes the same (non-fused)
    # path that the exporter traces, so the golden matches the exported graph's semantics.
    with torch.enable_grad():
        golden = model(example).detach()

    onnx_path, input_path, output_path = outputs_of(out_dir, name)
    tmp_path = onnx_path + ".tmp"
    torch.onnx.export(
        model,
        (example,),
        tmp_path,
        opset_version=opset,
        input_names=["input"],
        output_names=["output"],
        do_constant_folding=True,
    )
    np.save(input_path, example.numpy() if example.dtype == torch.int64 else example.numpy().astype(np.float32))
    np.save(output_path, golden.numpy().astype(np.float32))
    os.replace(tmp_path, onnx_path)
    print(
        f"gen_models: {name}: {os.path.getsize(onnx_path) / 1e6:.2f} MB, input {list(example.shape)}, "
        f"output {list(golden.shape)}, max|output| {float(golden.abs().max()):.4g}"
    )


def zoo_outputs_of(out_dir: str, name: str, input_names) -> list:
    files = [os.path.join(out_dir, name + ".onnx"), os.path.join(out_dir, name + ".out.npy")]
    return files + [os.path.join(out_dir, f"{name}.in.{input}.npy") for input in input_names]


def export_zoo_model(out_dir: str, name: str, zoo: "zoo_models.Zoo") -> float:
    """Exports one zoo model and its golden; returns the seconds it took."""
    start = time.monotonic()
    with torch.enable_grad():  # the exporter's (non-fused) path, as in export_model
        golden = zoo.model(*zoo.inputs).detach()
    onnx_path = os.path.join(out_dir, name + ".onnx")
    tmp_path = onnx_path + ".tmp"
    torch.onnx.export(zoo.model, zoo.inputs, tmp_path, opset_version=zoo.opset, input_names=zoo.input_names,
                      output_names=["output"], do_constant_folding=True)
    for input_name, value in zip(zoo.input_names, zoo.inputs):
        np.save(os.path.join(out_dir, f"{name}.in.{input_name}.npy"), value.numpy())
    np.save(os.path.join(out_dir, name + ".out.npy"), golden.numpy().astype(np.float32))
    os.replace(tmp_path, onnx_path)
    seconds = time.monotonic() - start
    print(f"gen_models: zoo {name}: {os.path.getsize(onnx_path) / 1e6:.2f} MB, inputs "
          f"{[list(v.shape) for v in zoo.inputs]}, output {list(golden.shape)}, "
          f"max|output| {float(golden.abs().max()):.4g}, {seconds:.2f} s")
    return seconds


def zoo_stamp_text() -> str:
    """Names the versions and the definitions' content, so any edit of the zoo regenerates it."""
    digest = hashlib.sha256()
    for path in (os.path.abspath(__file__), zoo_models.__file__):
        with open(path, "rb") as f:
            digest.update(f.read())
    return (f"{ZOO_GENERATOR_VERSION} torch {torch.__version__} torchvision {torchvision.__version__} "
            f"sources {digest.hexdigest()[:16]}\n")


def export_zoo(out_dir: str) -> int:
    stamp_path = os.path.join(out_dir, ".stamp")
    stamp = zoo_stamp_text()
    if is_up_to_date(out_dir, stamp, [os.path.join(out_dir, name + ".onnx") for name in zoo_models.ZOO]):
        return 0
    start = begin_export(out_dir)
    for name, factory in zoo_models.ZOO.items():
        export_zoo_model(out_dir, name, factory())
    with open(stamp_path, "w") as f:
        f.write(stamp)
    print(f"gen_models: wrote the {len(zoo_models.ZOO)} zoo models to {out_dir} in {time.monotonic() - start:.1f} s")
    return 0


def is_up_to_date(out_dir: str, stamp: str, files) -> bool:
    """Whether OUTDIR/.stamp holds `stamp` and every file exists; then touches the stamp so
    that it is newer than this script and the build considers the data done."""
    stamp_path = os.path.join(out_dir, ".stamp")
    if not os.path.exists(stamp_path) or not all(os.path.exists(p) for p in files):
        return False
    with open(stamp_path) as f:
        if f.read() != stamp:
            return False
    os.utime(stamp_path)
    print(f"gen_models: {out_dir} is up to date")
    return True


def begin_export(out_dir: str) -> float:
    """Prepares OUTDIR for a fresh export (no stamp until it completes) and makes PyTorch
    deterministic; returns the start time."""
    os.makedirs(out_dir, exist_ok=True)
    stamp_path = os.path.join(out_dir, ".stamp")
    if os.path.exists(stamp_path):
        os.remove(stamp_path)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    return time.monotonic()


def hash_name(name: str) -> int:
    """A stable seed from a name (Python's hash() is randomised per process)."""
    seed = 0
    for ch in name.encode():
        seed = (seed * 131 + ch) % (2**31 - 1)
    return seed


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "--zoo":
        return export_zoo(os.path.abspath(sys.argv[2]))
    if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(sys.argv) == 2 else 2
    out_dir = os.path.abspath(sys.argv[1])
    stamp_path = os.path.join(out_dir, ".stamp")
    if is_up_to_date(out_dir, stamp_text(), [p for name in MODELS for p in outputs_of(out_dir, name)]):
        return 0
    start = begin_export(out_dir)
    for name, factory in MODELS.items():
        export_model(out_dir, name, factory)
    with open(stamp_path, "w") as f:
        f.write(stamp_text())
    print(f"gen_models: wrote {len(MODELS)} models to {out_dir} in {time.monotonic() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
