"""Writes zo/testdata/schedules.json: the learning rate HF transformers' Trainer uses at each optimizer step under
its constant, linear and cosine schedules with and without warmup, recorded from the real objects (a torch
optimizer and transformers.get_scheduler's LambdaLR, stepped as the Trainer steps them: the rate of step t is read
before optimizer.step(), then scheduler.step()). zo's schedule test reproduces every rate: bit for bit for constant
and linear, within an ulp for cosine (Go's math.Cos and the C library's cos may round differently).

  PYTHONPATH=../shared/pylib /usr/bin/python3 scripts/make_schedule_fixture.py
"""
import json
import os

import torch113_compat  # noqa: F401  (before transformers: see ../shared/pylib/SOURCES.md)
import torch

# torch 1.13 names the schedulers' base class _LRScheduler; transformers' trainer_pt_utils (imported with
# transformers.optimization) imports it as LRScheduler, the name torch 2.0 gave it, for LayerWiseDummyScheduler,
# which this script does not use. The schedules themselves are torch's LambdaLR over transformers' lambdas.
if not hasattr(torch.optim.lr_scheduler, "LRScheduler"):
    torch.optim.lr_scheduler.LRScheduler = torch.optim.lr_scheduler._LRScheduler
import transformers  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "zo", "testdata", "schedules.json")

LR = 2e-4  # the config's default optimizer.lr
CASES = [  # (HF's lr_scheduler_type, warmup steps, training steps)
    ("constant", 0, 10),
    ("constant_with_warmup", 4, 10),
    ("linear", 0, 10),
    ("linear", 3, 10),
    ("linear", 10, 10),
    ("linear", 0, 1),
    ("cosine", 0, 12),
    ("cosine", 5, 17),
    ("cosine", 1, 200),
]


def rates(kind, warmup, steps):
    """The rate of every step 0..steps+1 (two past the end: the schedule's value there is part of its definition)."""
    p = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([p], lr=LR)
    sched = transformers.get_scheduler(kind, opt, num_warmup_steps=warmup, num_training_steps=steps)
    out = []
    for _ in range(steps + 2):
        out.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    return out


def main():
    cases = []
    for kind, warmup, steps in CASES:
        cases.append({"hf_type": kind, "warmup": warmup, "steps": steps, "rates": rates(kind, warmup, steps)})
    doc = {
        "made_by": "scripts/make_schedule_fixture.py",
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "lr": LR,
        "cases": cases,
    }
    with open(OUT, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
