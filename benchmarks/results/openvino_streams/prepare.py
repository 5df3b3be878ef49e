"""The folders the streams check timed: per task, the model trained as ``benchmarks.inference`` trains it (seed 0,
default arguments), its fp32 graph, and a 3-layer student distilled as ``benchmarks.inference --student 3`` does
(2,000 training-split texts), exported fp32::

    PYTHONPATH=. python benchmarks/results/openvino_streams/prepare.py MODELS sst2:8 emotion:16

writes ``MODELS/sst2_8/fp32``, ``MODELS/sst2_8/student3_fp32``, and the same for emotion_16.
"""

import random
import sys
from pathlib import Path

from benchmarks.compare_setfit import load_task
from benchmarks.inference import distil_student, read_split
from setfit_lite import SetFitModel, Trainer, TrainingArguments

data = Path(__file__).resolve().parents[3].parent / "shared" / "data"
root = Path(sys.argv[1])
for spec in sys.argv[2:]:
    name = spec.split(":")[0]
    out = root / spec.replace(":", "_")
    task = load_task(data, spec, 0)
    model = SetFitModel.from_pretrained("sentence-transformers/all-MiniLM-L6-v2")
    Trainer(model=model, args=TrainingArguments(seed=0, show_progress_bar=False),
            train_dataset={"text": task["texts"], "label": task["labels"]}).train()
    model.export_onnx(out / "fp32")
    seen = set(task["texts"])
    pool = [t for t in read_split(data, name, "train") if t not in seen]
    random.Random(0).shuffle(pool)
    distil_student(model, 3, "first", task["texts"] + pool[:2000], out / "student3_int8", out / "student3_fp32")
    print(spec, "done", flush=True)
