#!/usr/bin/python3
"""Report of bench/npu_transformer_bench.sh: one row per model and NPU config.

  npu_transformer_bench.py OUT_DIR MODELS_DIR
"""
import importlib.util
import json
import os
import sys

MATRIX_OPS = {"QuantizedMatMul", "QuantizedConv"}
ROW_NORM_OPS = {"QuantizedSoftmax", "QuantizedLayerNorm"}


def network_macs(model_path):
    here = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location("resnet_bench", os.path.join(here, "npu_resnet50_bench.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.network_macs(model_path)


def main():
    out, models = sys.argv[1], sys.argv[2]
    rows = []
    print("| model | config | cycles | MAC utilisation (simulator) | useful-MAC utilisation | "
          "cycles outside matrix layers | vector unit busy | Softmax + LayerNorm layers | fallback nodes | "
          "end-to-end, host measured (us) | end-to-end, host modelled (us) | NPU-only latency (us) |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for model in ("transformer_encoder", "bert_encoder"):
        macs = network_macs(os.path.join(models, model + ".onnx"))
        for config in ("npu-16x16-v3", "npu-64x64-v3"):
            with open(os.path.join(out, f"{model}.{config}.measured.json")) as f:
                measured = json.load(f)
            with open(os.path.join(out, f"{model}.{config}.modelled.json")) as f:
                modelled = json.load(f)
            with open(os.path.join(out, f"{model}.{config}.stats.json")) as f:
                stats = json.load(f)
            layer_cycles = sum(layer["cycles"] for layer in measured["layers"])
            row_norm = sum(layer["cycles"] for layer in measured["layers"] if layer["op"] in ROW_NORM_OPS)
            other = sum(layer["cycles"] for layer in measured["layers"] if layer["op"] not in MATRIX_OPS)
            row = {
                "model": model, "config": config, "cycles": measured["cycles"],
                "mac_utilization": measured["mac_utilization"],
                "useful_mac_utilization": macs / (measured["cycles"] * measured["peak_macs_per_cycle"]),
                "non_matrix_cycle_share": other / layer_cycles if layer_cycles else 0.0,
                "vector_unit_busy_share": stats["units"]["vector_unit"]["busy_cycles"] / stats["cycles"],
                "row_norm_cycle_share": row_norm / layer_cycles if layer_cycles else 0.0,
                "fallback_nodes": len(measured["fallback_nodes"]),
                "end_to_end_measured_us": measured["end_to_end_latency_us"],
                "end_to_end_modelled_us": modelled["end_to_end_latency_us"],
                "npu_latency_us": measured["latency_us"],
            }
            rows.append(row)
            print(f"| {model} | {config} | {row['cycles']:,} | {100 * row['mac_utilization']:.1f} % | "
                  f"{100 * row['useful_mac_utilization']:.1f} % | {100 * row['non_matrix_cycle_share']:.1f} % | "
                  f"{100 * row['vector_unit_busy_share']:.1f} % | {100 * row['row_norm_cycle_share']:.1f} % | "
                  f"{row['fallback_nodes']} | {row['end_to_end_measured_us']:.1f} | "
                  f"{row['end_to_end_modelled_us']:.1f} | {row['npu_latency_us']:.1f} |")
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(rows, f, indent=2)


if __name__ == "__main__":
    main()
