#!/usr/bin/env python3
"""HFGlobalPowerLimitOptimizer inside a real Hugging Face Trainer, dry run (issue 9).

Trains a small BERT built from a config (random weights, no download) on a
learnable synthetic task made here: a sequence is positive when a marker
token occurs in it. The callback profiles power limits through the Trainer's
own step and epoch hooks and pins one; a ZeusMonitor window measures the
whole training. Checks that profiling finished with a limit pinned and that
the model learnt the task; writes hf.json to --out. Requires ZEUS_DRY_RUN=1
(no limit is ever set).
"""

import argparse
import json
import os
import sys
import tempfile

import torch
import transformers
from transformers import (BertConfig, BertForSequenceClassification, Trainer, TrainerCallback,
                          TrainingArguments)

from zeus.monitor import ZeusMonitor
from zeus.optimizer.power_limit import HFGlobalPowerLimitOptimizer

VOCAB, LENGTH, MARKER = 1000, 64, 7


class MarkerDataset(torch.utils.data.Dataset):
    """Random token sequences; label 1 when MARKER occurs (about half)."""

    def __init__(self, size, seed):
        g = torch.Generator().manual_seed(seed)
        self.ids = torch.randint(MARKER + 1, VOCAB, (size, LENGTH), generator=g)
        self.labels = torch.randint(0, 2, (size,), generator=g)
        where = torch.randint(0, LENGTH, (size,), generator=g)
        rows = self.labels.nonzero().flatten()
        self.ids[rows, where[rows]] = MARKER

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.labels[i]}


class Recorder(TrainerCallback):
    """Reads the power-limit optimizer's outcome before it closes at train end
    (listed before it, so called first)."""

    def __init__(self, plo_callback):
        self.plo = plo_callback.optimizer
        self.result = {}

    def on_train_end(self, args, state, control, **kwargs):
        profile = self.plo.profile()
        self.result = {"phase": self.plo.phase, "optimal_power_limit_w": self.plo.optimal_power_limit,
                       "profiled_limits": len(profile.get("measurements", [])),
                       "profile": profile, "steps": state.global_step}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--train-size", type=int, default=64000)
    parser.add_argument("--pl-step", type=int, default=100)
    args = parser.parse_args()
    if os.environ.get("ZEUS_DRY_RUN") != "1":
        sys.exit("python_hf_check.py: run with ZEUS_DRY_RUN=1")
    torch.manual_seed(0)
    config = BertConfig(vocab_size=VOCAB, hidden_size=256, num_hidden_layers=4,
                        num_attention_heads=4, intermediate_size=1024,
                        max_position_embeddings=LENGTH, num_labels=2)
    model = BertForSequenceClassification(config)
    monitor = ZeusMonitor(gpu_indices=[torch.cuda.current_device()])
    plo = HFGlobalPowerLimitOptimizer(monitor, warmup_steps=5, profile_steps=20,
                                      pl_step=args.pl_step)
    recorder = Recorder(plo)
    with tempfile.TemporaryDirectory() as scratch:
        training = TrainingArguments(output_dir=scratch, per_device_train_batch_size=64,
                                     per_device_eval_batch_size=256, num_train_epochs=args.epochs,
                                     learning_rate=3e-4, bf16=True, report_to=[],
                                     save_strategy="no", logging_strategy="no",
                                     disable_tqdm=True, seed=0)
        trainer = Trainer(model=model, args=training,
                          train_dataset=MarkerDataset(args.train_size, seed=1),
                          eval_dataset=MarkerDataset(4096, seed=2),
                          callbacks=[recorder, plo])
        monitor.begin_window("train")
        trainer.train()
        measured = monitor.end_window("train")
        predictions = trainer.predict(MarkerDataset(4096, seed=2))
    accuracy = float((predictions.predictions.argmax(-1) == predictions.label_ids).mean())
    result = dict(recorder.result, transformers=transformers.__version__,
                  torch=torch.__version__, accuracy=accuracy, train_time_s=measured.time,
                  train_energy_j=measured.total_energy)
    profile = result.pop("profile")
    with open(os.path.join(args.out, "hf.json"), "w") as f:
        json.dump(dict(result, profile=profile), f, indent=1)
    print(json.dumps(result))
    ok = result["phase"] == "done" and result["optimal_power_limit_w"] and accuracy > 0.9
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
