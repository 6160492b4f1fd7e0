"""Exports a torchvision classifier for `cuvil-bench run --model ... --baseline torch`:
NAME.onnx (torch.onnx.export) and NAME.pt (torch.save of the same nn.Module, for PyTorch eager
and TorchScript), with deterministic weights: no weights can be downloaded here, so every
parameter is drawn from a fixed seed (zero-initialised heads, as ViT's, get random values too).

usage: export_torchvision.py NAME OUT_DIR [--opset 17] [--image 224] [--batch 1] [--dynamic-batch]
"""
import argparse
import os
import warnings

warnings.filterwarnings("ignore")
import torch  # noqa: E402
import torchvision  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("name")
    p.add_argument("out_dir")
    p.add_argument("--opset", type=int, default=17)
    p.add_argument("--image", type=int, default=224)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--dynamic-batch", action="store_true")
    a = p.parse_args()
    if not hasattr(torchvision.models, a.name):
        raise SystemExit(f"torchvision.models has no '{a.name}'")
    torch.manual_seed(0)
    m = getattr(torchvision.models, a.name)()
    with torch.no_grad():
        for q in m.parameters():
            if q.abs().sum() == 0:
                q.normal_(0, 0.02)
    m.eval()
    os.makedirs(a.out_dir, exist_ok=True)
    x = torch.randn(a.batch, 3, a.image, a.image)
    onnx_path = os.path.join(a.out_dir, a.name + ".onnx")
    dynamic = {"input": {0: "batch"}, "logits": {0: "batch"}} if a.dynamic_batch else None
    torch.onnx.export(m, x, onnx_path, opset_version=a.opset, input_names=["input"],
                      output_names=["logits"], dynamic_axes=dynamic)
    torch.save(m, os.path.join(a.out_dir, a.name + ".pt"))
    print(onnx_path)


if __name__ == "__main__":
    main()
