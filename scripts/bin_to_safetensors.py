#!/usr/bin/env python3
"""Converts a model directory's pytorch_model.bin (PyTorch's zip checkpoint, as facebook/opt-1.3b ships its
weights), or the shards its pytorch_model.bin.index.json names (the larger OPT models'), into one model.safetensors
beside it, which meazo-go reads. Only Python 3 and NumPy are needed, no PyTorch:
the checkpoint's pickle is read with an unpickler that builds nothing but the state dict's tensors (any other
object in it is refused), so the file cannot run code.

    python3 scripts/bin_to_safetensors.py models/opt-1.3b

The tensors keep their dtype (OPT's are float16; meazo-go widens them to float32 exactly). Names are written as
transformers' save_pretrained writes them for the ForCausalLM class: an OPT checkpoint saved from the base model
("decoder.…") gets the "model." prefix, and a tied lm_head.weight (the embeddings again) is left out. Nothing is
written over: an existing model.safetensors is an error. A file that is not a PyTorch zip checkpoint of a state
dict (the pre-1.6 format, a truncated download, a pickled model, a tensor whose view reaches past its storage), a
shard the index names that is missing or holds other tensors, a folder without config.json or without a checkpoint,
are refused with a message naming the file and what is wrong, and nothing is written.
"""
import json
import os
import pickle
import sys
import zipfile

import numpy as np

DTYPES = {  # torch storage class -> (numpy dtype, safetensors dtype)
    "HalfStorage": (np.float16, "F16"), "FloatStorage": (np.float32, "F32"), "DoubleStorage": (np.float64, "F64"),
    "BFloat16Storage": (np.uint16, "BF16"), "LongStorage": (np.int64, "I64"), "IntStorage": (np.int32, "I32"),
}


class Storage:
    def __init__(self, name):
        self.name = name


class Tensor:
    def __init__(self, storage, offset, size, stride):
        self.storage, self.offset, self.size, self.stride = storage, offset, tuple(size), tuple(stride)


def rebuild_tensor(storage, offset, size, stride, *rest):
    return Tensor(storage, offset, size, stride)


class OrderedStateDict(dict):
    """The OrderedDict a module's state_dict() returns. torch.save(model.state_dict()) pickles its _metadata
    attribute (each submodule's version) too, which a plain dict cannot take; it names no tensor and is dropped."""

    def __setstate__(self, state):
        pass


class StateDictUnpickler(pickle.Unpickler):
    """Builds the state dict from its pickle: OrderedDicts, tensors, storages; refuses any other global."""

    def __init__(self, f, zf, prefix):
        super().__init__(f)
        self.zf, self.prefix = zf, prefix

    def find_class(self, module, name):
        if (module, name) == ("collections", "OrderedDict"):
            return OrderedStateDict
        if (module, name) == ("torch._utils", "_rebuild_tensor_v2"):
            return rebuild_tensor
        if module == "torch" and name in DTYPES:
            return Storage(name)
        raise pickle.UnpicklingError(f"{module}.{name} is not part of a state dict: refusing to load it")

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage" and isinstance(pid[1], Storage)):
            raise pickle.UnpicklingError(f"unexpected persistent id {pid!r}")
        _, storage, key, _location, numel = pid
        dtype = DTYPES[storage.name][0]
        data = self.zf.read(f"{self.prefix}/data/{key}")
        if not isinstance(numel, int) or len(data) != numel * np.dtype(dtype).itemsize:
            raise pickle.UnpicklingError(f"storage {key!r}: {len(data)} bytes, not {numel!r} {storage.name} values")
        return (np.frombuffer(data, dtype=dtype), storage.name)


class BadCheckpoint(Exception):
    """The file is not a PyTorch zip checkpoint of a state dict; the message says why."""


def load(path):
    """The state dict in the checkpoint at path, by name: (contiguous array, safetensors dtype)."""
    try:
        with zipfile.ZipFile(path) as zf:
            pkls = [n for n in zf.namelist() if n.endswith("/data.pkl")]
            if len(pkls) != 1:
                raise BadCheckpoint("not a PyTorch zip checkpoint (no single data.pkl)")
            prefix = pkls[0][: -len("/data.pkl")]
            with zf.open(pkls[0]) as f:
                sd = StateDictUnpickler(f, zf, prefix).load()
    except zipfile.BadZipFile as e:
        raise BadCheckpoint(f"not a complete zip file ({e}): a truncated download, or PyTorch's pre-1.6 format "
                            "(load it with torch.load and save it again with torch.save)") from e
    except (pickle.UnpicklingError, EOFError, KeyError, ValueError, TypeError, AttributeError) as e:
        raise BadCheckpoint(f"its data.pkl is not a state dict: {e}") from e
    if not isinstance(sd, dict):
        raise BadCheckpoint(f"it holds a {type(sd).__name__}, not a state dict")
    return {name: tensor_data(name, t) for name, t in sd.items()}


def tensor_data(name, t):
    """The values of state-dict entry name as a contiguous array, checked to lie inside its storage."""
    if not isinstance(name, str) or not isinstance(t, Tensor):
        raise BadCheckpoint(f"entry {name!r} is not a tensor")
    (arr, kind) = t.storage
    ints = all(isinstance(v, int) and v >= 0 for v in (t.offset, *t.size, *t.stride))
    if not ints or len(t.size) != len(t.stride):
        raise BadCheckpoint(f"tensor {name!r}: offset {t.offset!r}, size {t.size!r}, stride {t.stride!r} are not a view")
    if 0 in t.size:
        return np.zeros(t.size, dtype=arr.dtype), DTYPES[kind][1]
    last = t.offset + sum((n - 1) * s for n, s in zip(t.size, t.stride))
    if last >= len(arr):
        raise BadCheckpoint(f"tensor {name!r} reaches element {last} of a storage of {len(arr)}")
    view = np.lib.stride_tricks.as_strided(arr[t.offset:], shape=t.size, strides=[s * arr.itemsize for s in t.stride])
    return np.ascontiguousarray(view), DTYPES[kind][1]


def hf_names(tensors, config):
    """save_pretrained's names for the ForCausalLM class."""
    out = {}
    base = config.get("model_type") == "opt" and any(n.startswith("decoder.") for n in tensors)
    tied = config.get("tie_word_embeddings", True)
    for name, t in tensors.items():
        if name == "lm_head.weight" and tied:
            continue
        out[("model." + name) if base and name.startswith("decoder.") else name] = t
    return out


def save(path, tensors):
    header, offset = {}, 0
    for name in sorted(tensors):
        arr, dtype = tensors[name]
        header[name] = {"dtype": dtype, "shape": list(arr.shape), "data_offsets": [offset, offset + arr.nbytes]}
        offset += arr.nbytes
    header["__metadata__"] = {"format": "pt"}
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    tmp = path + ".tmp"
    with open(tmp, "xb") as f:  # never over a file it did not make
        try:
            f.write(len(h).to_bytes(8, "little") + h)
            for name in sorted(tensors):
                f.write(tensors[name][0].astype(tensors[name][0].dtype.newbyteorder("<"), copy=False).tobytes())
            f.flush()
            os.fsync(f.fileno())
        except BaseException:
            os.remove(tmp)
            raise
    os.rename(tmp, path)


def read_config(d):
    """MODEL_DIR's config.json, which says whether the head is tied and the model is OPT."""
    path = os.path.join(d, "config.json")
    try:
        with open(path) as f:
            return json.load(f)
    except OSError as e:
        raise SystemExit(f"{path}: {e.strerror}: MODEL_DIR is the model's directory (config.json and "
                         "pytorch_model.bin); nothing written")
    except ValueError as e:
        raise SystemExit(f"{path}: not JSON ({e}); nothing written")


def sources(d):
    """The checkpoint files in d: pytorch_model.bin, or the shards pytorch_model.bin.index.json names (the larger
    OPT models ship so), with that index's weight_map (tensor name -> shard file; None for one file)."""
    single, index = os.path.join(d, "pytorch_model.bin"), os.path.join(d, "pytorch_model.bin.index.json")
    if os.path.exists(single):
        return [single], None
    if not os.path.exists(index):
        raise SystemExit(f"{d}: no pytorch_model.bin, nor pytorch_model.bin.index.json and its shards: nothing to convert")
    try:
        with open(index) as f:
            weight_map = json.load(f)["weight_map"]
        ok = isinstance(weight_map, dict) and weight_map and all(
            isinstance(k, str) and isinstance(v, str) and v == os.path.basename(v) and v not in ("", ".", "..")
            for k, v in weight_map.items())
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise SystemExit(f"{index}: not a checkpoint index ({e!r}); nothing written")
    if not ok:
        raise SystemExit(f"{index}: its weight_map is not a map of tensor names to shard files of the folder; nothing written")
    shards = sorted(set(weight_map.values()))
    for shard in shards:
        if not os.path.isfile(os.path.join(d, shard)):
            raise SystemExit(f"{index}: names {shard}, which is not in {d} (an interrupted download?); nothing written")
    return [os.path.join(d, shard) for shard in shards], weight_map


def load_all(srcs, weight_map):
    """The state dict of every file in srcs together, each shard holding the tensors weight_map gives it."""
    tensors = {}
    for src in srcs:
        try:
            part = load(src)
        except BadCheckpoint as e:
            raise SystemExit(f"{src}: {e}; nothing written")
        for name in part:
            if name in tensors:
                raise SystemExit(f"{src}: tensor {name!r} is in another shard too; nothing written")
            if weight_map is not None and weight_map.get(name) != os.path.basename(src):
                raise SystemExit(f"{src}: tensor {name!r} is not this shard's in pytorch_model.bin.index.json; nothing written")
        tensors.update(part)
    missing = sorted(set(weight_map or ()) - set(tensors))
    if missing:
        raise SystemExit(f"pytorch_model.bin.index.json names {len(missing)} tensor(s) no shard holds ({missing[0]!r}, …); "
                         "nothing written")
    return tensors


def main():
    if len(sys.argv) != 2:
        raise SystemExit("usage: bin_to_safetensors.py MODEL_DIR")
    d = sys.argv[1]
    out = os.path.join(d, "model.safetensors")
    if os.path.exists(out):
        raise SystemExit(f"{out} exists: nothing written")
    config = read_config(d)
    tensors = hf_names(load_all(*sources(d)), config)
    save(out, tensors)
    print(f"wrote {out}: {len(tensors)} tensors, {sum(a.nbytes for a, _ in tensors.values()) / 1e9:.2f} GB")


if __name__ == "__main__":
    main()
