# compare.py OUT NAME...: our logits (OUT/NAME.safetensors, written by
# meazo-inspect forward) against the reference ones HF wrote (NAME/ref.safetensors,
# or, for OPT's left-padded batch, HF's float32 forward: its float64 one gives NaN
# in every position of a left-padded row — the -inf mask's NaN at the pads reaches
# the other positions through zero attention weights; compared at the positions
# the attention mask keeps).
import sys
import torch113_compat  # noqa: F401
import torch
from safetensors.torch import load_file
out = sys.argv[1]
for n in sys.argv[2:]:
    try:
        a = load_file(f"{out}/{n}.safetensors")["logits"].double()
    except Exception:
        print(f"{n}: no output (refused: see run.log)")
        continue
    b = load_file(f"{n}/ref.safetensors")["logits"].double()
    if torch.isnan(b).any():
        from transformers import OPTForCausalLM
        import json
        inp = json.load(open(f"{n}/in.json"))
        m = OPTForCausalLM.from_pretrained(n).eval()
        with torch.no_grad():
            b = m(input_ids=torch.tensor(inp["input_ids"]), attention_mask=torch.tensor(inp["attention_mask"])).logits.double()
        n += " (HF float32)"
        keep = torch.tensor(inp["attention_mask"]).bool()  # a pad position's logits mean nothing on either side
        a, b = a[keep], b[keep]
    print(f"{n}: max |ours - HF| {(a - b).abs().max().item():.3g}, max |HF| {b.abs().max().item():.3g}")
