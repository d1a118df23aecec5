#!/usr/bin/python3
"""Writes the seed corpora of the fuzz targets (tests/fuzz/corpus/<target>/, docs/testing.md).

Usage: gen_fuzz_seeds.py NODE_TEST_DIR [EMBER]
  NODE_TEST_DIR: the ONNX node test cases that scripts/gen_onnx_node_tests.py writes (OUT/node).
  EMBER: the built `ember` tool; with it, the bundle and isa_decoder seeds are written too.

npy: arrays of every dtype and .npy version NumPy writes. onnx_importer: the smallest model of each ONNX
node-test op family, plus the tests/cli models. config: the shipped NPU configs. assembler: the small
tests/npu programs. bundle: those programs assembled with `ember asm`; isa_decoder: the first 24
instructions of each bundle. Test-data generation only.
"""

import io
import os
import shutil
import struct
import subprocess
import sys

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
CORPUS = os.path.join(ROOT, "tests", "fuzz", "corpus")


def write(target, name, data):
    os.makedirs(os.path.join(CORPUS, target), exist_ok=True)
    with open(os.path.join(CORPUS, target, name), "wb") as f:
        f.write(data)


def npy_seeds():
    arrays = {
        "f32_2x3": np.arange(6, dtype=np.float32).reshape(2, 3) * 0.5 - 1,
        "f64_3": np.array([1.5, -2.25, 1e-3]),
        "f16_4": np.array([1, -2, 65504, np.inf], dtype=np.float16),
        "i64_3": np.array([1, -2, 3000000000], dtype=np.int64),
        "i32_scalar": np.array(7, dtype=np.int32),
        "i8_2x2": np.array([[-128, 127], [0, 1]], dtype=np.int8),
        "u8_rank6": np.arange(64, dtype=np.uint8).reshape(1, 2, 2, 2, 2, 4),
        "bool_5": np.array([True, False, True, True, False]),
        "f32_empty": np.zeros((0, 3), dtype=np.float32),
    }
    for name, a in arrays.items():
        b = io.BytesIO()
        np.save(b, a)
        write("npy", name + ".npy", b.getvalue())
    for version in ((2, 0), (3, 0)):
        b = io.BytesIO()
        np.lib.format.write_array(b, arrays["f32_2x3"], version=version)
        write("npy", "f32_2x3_v%d.npy" % version[0], b.getvalue())


def onnx_seeds(node_dir):
    best = {}
    for case in sorted(os.listdir(node_dir)):
        path = os.path.join(node_dir, case, "model.onnx")
        if not os.path.isfile(path):
            continue
        family = case[len("test_"):].split("_")[0]
        size = os.path.getsize(path)
        if size <= 2048 and (family not in best or size < best[family][0]):
            best[family] = (size, path)
    for family, (_, path) in sorted(best.items()):
        with open(path, "rb") as f:
            write("onnx_importer", family + ".onnx", f.read())
    cli = os.path.join(ROOT, "tests", "cli", "data")
    for name in sorted(os.listdir(cli)):
        if name.endswith(".onnx"):
            shutil.copy(os.path.join(cli, name), os.path.join(CORPUS, "onnx_importer", "cli_" + name))
    shutil.copy(os.path.join(ROOT, "examples", "models", "tiny_cnn.onnx"), os.path.join(CORPUS, "onnx_importer"))


def text_seeds():
    configs = os.path.join(ROOT, "simulator", "configs")
    os.makedirs(os.path.join(CORPUS, "config"), exist_ok=True)
    for name in sorted(os.listdir(configs)):
        shutil.copy(os.path.join(configs, name), os.path.join(CORPUS, "config", name))
    os.makedirs(os.path.join(CORPUS, "assembler"), exist_ok=True)
    for name in ("conv_im2col.s", "gemm_64x48x32.s", "pool.s", "vector.s"):
        shutil.copy(os.path.join(ROOT, "tests", "npu", name), os.path.join(CORPUS, "assembler", name))


def binary_seeds(ember):
    for name in sorted(os.listdir(os.path.join(CORPUS, "assembler"))):
        stem = os.path.splitext(name)[0]
        bundle = os.path.join(CORPUS, "bundle", stem + ".bundle")
        os.makedirs(os.path.dirname(bundle), exist_ok=True)
        subprocess.run([ember, "asm", os.path.join(CORPUS, "assembler", name), "-o", bundle], check=True)
        with open(bundle, "rb") as f:
            data = f.read()
        count = struct.unpack_from("<I", data, 32)[0]  # header: instruction count (docs/npu/bundle.md)
        program = data[64:64 + 32 * min(count, 24)]
        write("isa_decoder", stem + ".bin", program)


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    npy_seeds()
    onnx_seeds(sys.argv[1])
    text_seeds()
    if len(sys.argv) == 3:
        binary_seeds(sys.argv[2])
