#!/usr/bin/env python3
"""Writes the pytorch_model.bin checkpoints that scripts/bin_to_safetensors.py is tested on (model/bin_test.go),
each in its own folder of OUT with the model's config.json, made by PyTorch's own torch.save from the model in
MODEL_DIR (a model.safetensors):

    f32      the state dict as save_pretrained names it, float32: converts to MODEL_DIR's tensors exactly
    meta     the f32 state dict as torch.save(model.state_dict()) writes it: an OrderedDict carrying PyTorch's
             _metadata (each submodule's version); converts as f32 does
    sharded  the f32 state dict in two shards (pytorch_model-0000N-of-00002.bin) and the pytorch_model.bin.index.json
             that save_pretrained writes with them: converts as f32 does
    shardgone  the same index, its second shard missing (an interrupted download)
    f16      float16, saved from the base model ("decoder.…") with a tied lm_head.weight, and two views (a
             transposed and a sliced tensor); expected.safetensors holds what the conversion must give
    legacy   PyTorch's pre-1.6 (non-zip) format
    trunc    the f32 file cut in half (an interrupted download)
    module   a pickled nn.Module, not a state dict
    list     a list of tensors
    nonsd    a dict with an entry that is not a tensor

    PYTHONPATH=../shared/pylib /usr/bin/python3 scripts/make_bin_checkpoints.py MODEL_DIR OUT
"""
import json
import os
import shutil
import sys
from collections import OrderedDict

import torch113_compat  # noqa: F401  (before transformers: see ../shared/pylib/SOURCES.md)
import torch
from safetensors.torch import load_file, save_file


def folder(out, name, model_dir):
    d = os.path.join(out, name)
    os.makedirs(d)
    shutil.copy(os.path.join(model_dir, "config.json"), d)
    return os.path.join(d, "pytorch_model.bin")


def write_shards(sd, d, keep_second):
    """sd in two shards in d and the index naming them, as save_pretrained(safe_serialization=False) shards."""
    names = sorted(sd)
    parts = {"pytorch_model-00001-of-00002.bin": names[: len(names) // 2],
             "pytorch_model-00002-of-00002.bin": names[len(names) // 2:]}
    for i, (shard, part) in enumerate(parts.items()):
        if i == 0 or keep_second:
            torch.save({n: sd[n] for n in part}, os.path.join(d, shard))
    weight_map = {n: shard for shard, part in parts.items() for n in part}
    with open(os.path.join(d, "pytorch_model.bin.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": sum(t.numel() * 4 for t in sd.values())}, "weight_map": weight_map}, f)


def main():
    model_dir, out = sys.argv[1], sys.argv[2]
    sd = load_file(os.path.join(model_dir, "model.safetensors"))
    torch.save(sd, folder(out, "f32", model_dir))
    meta = OrderedDict(sd)  # what nn.Module.state_dict() returns: the tensors and, as an attribute, the versions
    meta._metadata = OrderedDict([("", {"version": 1}), ("model", {"version": 1}), ("model.decoder", {"version": 1})])
    torch.save(meta, folder(out, "meta", model_dir))
    for name in ("sharded", "shardgone"):
        write_shards(sd, os.path.dirname(folder(out, name, model_dir)), keep_second=name == "sharded")

    half = {k.removeprefix("model."): v.half() for k, v in sd.items()}
    half["lm_head.weight"] = half["decoder.embed_tokens.weight"]
    x = torch.arange(12, dtype=torch.float16).reshape(3, 4)
    half["decoder.view_t"], half["decoder.view_slice"] = x.t(), x[1:, 2:]
    torch.save(half, folder(out, "f16", model_dir))
    expected = {"model." + k: v.contiguous() for k, v in half.items() if k != "lm_head.weight"}
    save_file(expected, os.path.join(out, "f16", "expected.safetensors"))

    torch.save(sd, folder(out, "legacy", model_dir), _use_new_zipfile_serialization=False)
    with open(os.path.join(out, "f32", "pytorch_model.bin"), "rb") as f:
        raw = f.read()
    with open(folder(out, "trunc", model_dir), "wb") as f:
        f.write(raw[: len(raw) // 2])
    torch.save(torch.nn.Linear(2, 2), folder(out, "module", model_dir))
    torch.save([torch.zeros(2)], folder(out, "list", model_dir))
    torch.save({"step": 1, "w": torch.zeros(2)}, folder(out, "nonsd", model_dir))


if __name__ == "__main__":
    main()
