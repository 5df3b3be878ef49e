"""TrainingArguments: setfit names, tuple semantics, clear errors."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from setfit_lite import TrainingArguments


def test_setfit_defaults_and_tuples():
    args = TrainingArguments()
    assert (args.embedding_batch_size, args.classifier_batch_size) == (16, 2)
    assert (args.embedding_num_epochs, args.classifier_num_epochs) == (1, 16)
    assert args.body_embedding_learning_rate == 1e-4 and args.head_learning_rate == 1e-2  # sentence batches
    args = TrainingArguments(batch_size=8, num_epochs=(2, 3), body_learning_rate=1e-4)
    assert (args.embedding_batch_size, args.classifier_batch_size) == (8, 8)
    assert (args.embedding_num_epochs, args.classifier_num_epochs) == (2, 3)


def test_unknown_argument_is_named():
    with pytest.raises(TypeError, match="num_epoch"):
        TrainingArguments(num_epoch=3)


NAN, INF = float("nan"), float("inf")

# (arguments, expected exception, field named in the message); the message must also show the value's repr
BAD_ARGUMENTS = [
    ({"output_dir": 3}, TypeError, "output_dir"),
    ({"output_dir": ""}, ValueError, "output_dir"),
    ({"batch_size": 0}, ValueError, "batch_size"),
    ({"batch_size": (16, 0)}, ValueError, "batch_size"),
    ({"batch_size": (8,)}, ValueError, "batch_size"),
    ({"batch_size": (8, 2, 1)}, ValueError, "batch_size"),
    ({"batch_size": 8.0}, TypeError, "batch_size"),
    ({"batch_size": "16"}, TypeError, "batch_size"),
    ({"batch_size": True}, TypeError, "batch_size"),
    ({"num_epochs": 0}, ValueError, "num_epochs"),
    ({"num_epochs": (1, -2)}, ValueError, "num_epochs"),
    ({"num_epochs": 1.5}, TypeError, "num_epochs"),
    ({"max_steps": -5}, ValueError, "max_steps"),
    ({"max_steps": 0}, ValueError, "max_steps"),
    ({"max_steps": 2.5}, TypeError, "max_steps"),
    ({"max_steps": None}, TypeError, "max_steps"),
    ({"sampling_strategy": "random"}, ValueError, "sampling_strategy"),
    ({"sampling_strategy": 1}, TypeError, "sampling_strategy"),
    ({"num_iterations": 0}, ValueError, "num_iterations"),
    ({"num_iterations": 2.0}, TypeError, "num_iterations"),
    ({"body_learning_rate": NAN}, ValueError, "body_learning_rate"),
    ({"body_learning_rate": INF}, ValueError, "body_learning_rate"),
    ({"body_learning_rate": -1e-5}, ValueError, "body_learning_rate"),
    ({"body_learning_rate": (1e-4, NAN)}, ValueError, "body_learning_rate"),
    ({"body_learning_rate": "1e-4"}, TypeError, "body_learning_rate"),
    ({"body_learning_rate": True}, TypeError, "body_learning_rate"),
    ({"head_learning_rate": INF}, ValueError, "head_learning_rate"),
    ({"head_learning_rate": NAN}, ValueError, "head_learning_rate"),
    ({"head_learning_rate": 0}, ValueError, "head_learning_rate"),
    ({"head_learning_rate": None}, TypeError, "head_learning_rate"),
    ({"loss": "Nope"}, ValueError, "loss"),
    ({"loss": 3}, TypeError, "loss"),
    ({"distance_metric": "cosine"}, TypeError, "distance_metric"),
    ({"margin": -0.1}, ValueError, "margin"),
    ({"margin": INF}, ValueError, "margin"),
    ({"end_to_end": 1}, TypeError, "end_to_end"),
    ({"use_amp": "fp16"}, TypeError, "use_amp"),
    ({"report_to": 3}, TypeError, "report_to"),
    ({"report_to": ["none", None]}, TypeError, "report_to"),
    ({"run_name": 3}, TypeError, "run_name"),
    ({"logging_dir": ""}, ValueError, "logging_dir"),
    ({"logging_first_step": "yes"}, TypeError, "logging_first_step"),
    ({"eval_delay": -1}, ValueError, "eval_delay"),
    ({"end_to_end": "yes"}, TypeError, "end_to_end"),
    ({"warmup_proportion": 2.0}, ValueError, "warmup_proportion"),
    ({"warmup_proportion": -0.1}, ValueError, "warmup_proportion"),
    ({"warmup_proportion": NAN}, ValueError, "warmup_proportion"),
    ({"l2_weight": -0.01}, ValueError, "l2_weight"),
    ({"l2_weight": "0.01"}, TypeError, "l2_weight"),
    ({"max_length": 1}, ValueError, "max_length"),
    ({"max_length": 128.0}, TypeError, "max_length"),
    ({"samples_per_label": 0}, ValueError, "samples_per_label"),
    ({"show_progress_bar": "no"}, TypeError, "show_progress_bar"),
    ({"show_progress_bar": None}, TypeError, "show_progress_bar"),
    ({"seed": "abc"}, TypeError, "seed"),
    ({"seed": True}, TypeError, "seed"),
    ({"seed": 1.0}, TypeError, "seed"),
    ({"seed": None}, TypeError, "seed"),
    ({"seed": -1}, ValueError, "seed"),
    ({"seed": 2**32}, ValueError, "seed"),  # numpy's legacy seeding takes no more
    ({"logging_strategy": "sometimes"}, ValueError, "logging_strategy"),
    ({"logging_steps": 0}, ValueError, "logging_steps"),
    ({"logging_steps": -1}, ValueError, "logging_steps"),
    ({"logging_steps": 0.5}, TypeError, "logging_steps"),
    ({"eval_strategy": "sometimes"}, ValueError, "eval_strategy"),
    ({"eval_strategy": None}, TypeError, "eval_strategy"),
    ({"eval_steps": 0}, ValueError, "eval_steps"),
    ({"eval_max_steps": 0}, ValueError, "eval_max_steps"),
    ({"eval_max_steps": -2}, ValueError, "eval_max_steps"),
    ({"save_strategy": "best"}, ValueError, "save_strategy"),
    ({"save_steps": 0, "save_strategy": "steps"}, ValueError, "save_steps"),
    ({"save_steps": 0}, ValueError, "save_steps"),
    ({"save_steps": -10}, ValueError, "save_steps"),
    ({"save_total_limit": 0}, ValueError, "save_total_limit"),
    ({"load_best_model_at_end": "true"}, TypeError, "load_best_model_at_end"),
    ({"load_best_model_at_end": True}, ValueError, "load_best_model_at_end"),
    ({"metric_for_best_model": ""}, ValueError, "metric_for_best_model"),
    ({"metric_for_best_model": 1}, TypeError, "metric_for_best_model"),
    ({"greater_is_better": "yes"}, TypeError, "greater_is_better"),
    ({"objective": "triplets"}, ValueError, "objective"),
    ({"sentence_batch_size": 1}, ValueError, "sentence_batch_size"),
    ({"sentence_batch_size": 16.0}, TypeError, "sentence_batch_size"),
    ({"min_steps_per_epoch": 0}, ValueError, "min_steps_per_epoch"),
    ({"min_steps_per_epoch": -1}, ValueError, "min_steps_per_epoch"),
    ({"min_steps_per_epoch": True}, TypeError, "min_steps_per_epoch"),
    ({"min_steps_per_epoch": 1.5}, TypeError, "min_steps_per_epoch"),
    ({"min_steps_per_epoch": "8"}, TypeError, "min_steps_per_epoch"),
    ({"early_stopping_patience": -3}, ValueError, "early_stopping_patience"),
    ({"early_stopping_patience": 0}, ValueError, "early_stopping_patience"),
    ({"max_grad_norm": -1.0}, ValueError, "max_grad_norm"),
    ({"max_grad_norm": NAN}, ValueError, "max_grad_norm"),
    ({"backend": "tpu"}, ValueError, "backend"),
    ({"backend": None}, TypeError, "backend"),
    ({"backend_options": "num_threads=2"}, TypeError, "backend_options"),
    ({"backend_options": {"num threads": 2}}, ValueError, "backend_options"),
    ({"precision": "fp8"}, ValueError, "precision"),
    ({"precision": "FP16"}, ValueError, "precision"),
    ({"compile": "yes"}, TypeError, "compile"),
    ({"prompt": 3}, TypeError, "prompt"),
    ({"freeze_word_embeddings": 0}, TypeError, "freeze_word_embeddings"),
    ({"label_anchors": "on"}, ValueError, "label_anchors"),
    ({"anchor_template": "about {name}"}, ValueError, "anchor_template"),
    ({"anchor_template": 3}, TypeError, "anchor_template"),
    ({"anchor_weight": -1}, ValueError, "anchor_weight"),
    ({"anchors_per_batch": 0}, ValueError, "anchors_per_batch"),
    ({"anchor_loss": "triplet"}, ValueError, "anchor_loss"),
    ({"anchor_temperature": 0}, ValueError, "anchor_temperature"),
    ({"label_prior_temperature": 0.0}, ValueError, "label_prior_temperature"),
    ({"zero_shot": "skip"}, ValueError, "zero_shot"),
    ({"calibration": "platt"}, ValueError, "calibration"),
    ({"calibration": None}, TypeError, "calibration"),
    ({"calibration_folds": 1}, ValueError, "calibration_folds"),
    ({"calibration_folds": 2.5}, TypeError, "calibration_folds"),
    ({"head_class_weight": "always"}, ValueError, "head_class_weight"),
    ({"head_class_weight": {0: 2.0}}, TypeError, "head_class_weight"),
    ({"self_training_rounds": -1}, ValueError, "self_training_rounds"),
    ({"self_training_rounds": 1.0}, TypeError, "self_training_rounds"),
    ({"pseudo_label_threshold": 1.5}, ValueError, "pseudo_label_threshold"),
    ({"pseudo_labels_per_class": 0}, ValueError, "pseudo_labels_per_class"),
    ({"self_training_body": 1}, TypeError, "self_training_body"),
    ({"self_training": "sometimes"}, ValueError, "self_training"),
    ({"self_training_folds": 1}, ValueError, "self_training_folds"),
    ({"self_training_margin": -2.0}, ValueError, "self_training_margin"),
    ({"pseudo_label_method": "hast"}, ValueError, "pseudo_label_method"),
    ({"pseudo_label_neighbors": 0}, ValueError, "pseudo_label_neighbors"),
]


@pytest.mark.parametrize(("kwargs", "error", "name"), BAD_ARGUMENTS, ids=lambda v: repr(v)[:40])
def test_bad_argument_is_refused_naming_field_value_and_allowed(kwargs: dict, error: type, name: str) -> None:
    value = kwargs[name] if name in kwargs else next(iter(kwargs.values()))
    pattern = rf"TrainingArguments: {name} must be .+, got {re.escape(repr(value))}$"
    if kwargs == {"load_best_model_at_end": True}:  # a cross-field rule
        pattern = "load_best_model_at_end=True needs eval_strategy 'steps' or 'epoch', got 'no'"
    if kwargs == {"logging_steps": 0}:  # 0 is allowed with logging_strategy="no", as in setfit
        pattern = r"TrainingArguments: logging_steps must be a positive integer with logging_strategy 'steps', got 0$"
    with pytest.raises(error, match=pattern):
        TrainingArguments(**kwargs)
    with pytest.raises(error, match=pattern):  # update() (and so apply_hyperparameters) checks the same way
        TrainingArguments().update(kwargs)


def test_every_field_has_a_rule_and_the_table_covers_it() -> None:
    from setfit_lite.config.training_rules import TRAINING_RULES

    names = {f.name for f in dataclasses.fields(TrainingArguments) if f.init}
    assert set(TRAINING_RULES) == names
    assert {name for _, _, name in BAD_ARGUMENTS} == names


GOOD_ARGUMENTS = [
    ({"max_steps": -1}, "max_steps", -1),
    ({"max_steps": 1}, "max_steps", 1),
    ({"max_steps": np.int64(12)}, "max_steps", 12),
    ({"eval_max_steps": -1}, "eval_max_steps", -1),
    ({"batch_size": np.int32(8)}, "embedding_batch_size", 8),
    ({"batch_size": [8, np.int64(4)]}, "classifier_batch_size", 4),
    ({"num_epochs": (np.int64(2), 3)}, "num_epochs", (2, 3)),
    ({"body_learning_rate": 0}, "body_embedding_learning_rate", 0.0),
    ({"body_learning_rate": (np.float32(0.5), 0)}, "body_learning_rate", (0.5, 0.0)),
    ({"head_learning_rate": np.float64(1e-3)}, "head_learning_rate", 1e-3),
    ({"seed": np.int64(7)}, "seed", 7),
    ({"seed": 0}, "seed", 0),
    ({"seed": 2**32 - 1}, "seed", 2**32 - 1),
    ({"warmup_proportion": 0}, "warmup_proportion", 0.0),
    ({"warmup_proportion": 1}, "warmup_proportion", 1.0),
    ({"margin": 0}, "margin", 0.0),
    ({"l2_weight": None}, "l2_weight", None),
    ({"max_grad_norm": None}, "max_grad_norm", None),
    ({"max_grad_norm": 0}, "max_grad_norm", 0.0),
    ({"save_total_limit": None}, "save_total_limit", None),
    ({"save_strategy": "steps", "save_steps": 1}, "save_steps", 1),
    ({"early_stopping_patience": 1}, "early_stopping_patience", 1),
    ({"sentence_batch_size": 2}, "sentence_batch_size", 2),
    ({"max_length": 2}, "max_length", 2),
    ({"show_progress_bar": np.bool_(False)}, "show_progress_bar", False),
    ({"greater_is_better": None}, "greater_is_better", None),
    ({"backend": " CPU "}, "backend", "cpu"),
    ({"backend_options": {"num_threads": 1}}, "backend_options", {"num_threads": 1}),
    ({"precision": "bf16"}, "precision", "bf16"),
    ({"prompt": ""}, "prompt", ""),
    ({"output_dir": Path("ckpt")}, "output_dir", Path("ckpt")),
]


@pytest.mark.parametrize(("kwargs", "attribute", "expected"), GOOD_ARGUMENTS, ids=lambda v: repr(v)[:40])
def test_edge_values_are_accepted_and_normalised(kwargs: dict, attribute: str, expected: Any) -> None:
    value = getattr(TrainingArguments(**kwargs), attribute)
    assert value == expected and type(value) is type(expected)


def test_transformers_interval_strategy_enums_are_accepted() -> None:
    from transformers.trainer_utils import IntervalStrategy

    args = TrainingArguments(eval_strategy=IntervalStrategy.STEPS, save_strategy=IntervalStrategy.EPOCH,
                             logging_strategy=IntervalStrategy.NO)
    assert (args.eval_strategy, args.save_strategy, args.logging_strategy) == ("steps", "epoch", "no")
    assert type(args.eval_strategy) is str and args.eval_steps == args.logging_steps


def test_backend_and_precision_names_are_the_trainers_names() -> None:
    from trainers import names
    from trainers.cpu import CpuBackend

    for name in names.NAMES:
        assert TrainingArguments(backend=f" {name.upper()}").backend == name
    for precision in names.PRECISION_NAMES:
        assert TrainingArguments(precision=precision).precision == precision
    with pytest.raises(ValueError, match=r"backend must be one of 'auto', 'cpu', 'cuda', 'hpu', 'ipu' \(any case\) "
                                         r"or a trainers.Backend, got 'tpu'"):
        TrainingArguments(backend="tpu")
    with pytest.raises(TypeError, match="backend must be one of .* or a trainers.Backend, got <object"):
        TrainingArguments(backend=object())
    backend = CpuBackend(precision="fp32")
    assert TrainingArguments(backend=backend).backend is backend


def test_backend_options_reach_the_backend(tiny_body_path: str, toy_data: dict) -> None:
    import torch

    from setfit_lite import SetFitModel, Trainer
    from trainers.cpu import CpuBackend

    with pytest.raises(ValueError, match="backend_options cannot be combined with a trainers.Backend instance"):
        TrainingArguments(backend=CpuBackend(), backend_options={"num_threads": 1})
    threads = torch.get_num_threads()
    try:
        args = TrainingArguments(max_steps=2, num_epochs=(1, 1), show_progress_bar=False, backend="cpu",
                                 precision="fp32", backend_options={"num_threads": 1})
        model = SetFitModel.from_pretrained(tiny_body_path)
        Trainer(model=model, args=args, train_dataset=toy_data).train()
        assert model.training_info["backend"].startswith("cpu: fp32, 1 threads")
        assert model.training_info["training_args"]["backend_options"] == {"num_threads": 1}
    finally:
        torch.set_num_threads(threads)
    bad = TrainingArguments(max_steps=2, show_progress_bar=False, backend="cpu", backend_options={"gaudi_config": {}})
    with pytest.raises(TypeError, match=r"the 'cpu' backend has no option\(s\) 'gaudi_config'; its options: "):
        Trainer(model=SetFitModel.from_pretrained(tiny_body_path), args=bad, train_dataset=toy_data).train()


def test_training_arguments_and_their_rules_import_neither_torch_nor_numpy() -> None:
    code = ("import sys; from setfit_lite import training_args as t; t.TrainingArguments(backend='cpu'); "
            "import setfit_lite.config.params, setfit_lite.config.rules, setfit_lite.config.loss_names, "
            "setfit_lite.config.sampling_policy; "
            "print('torch' in sys.modules, 'numpy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False False"


def test_num_iterations_selects_pairs_and_loss_class_accepted():
    from sentence_transformers.losses import BatchHardTripletLoss

    with pytest.warns(UserWarning, match="num_iterations"):
        args = TrainingArguments(num_iterations=5)
    assert args.objective == "pairs"
    assert TrainingArguments(loss=BatchHardTripletLoss).loss_name == "BatchHardTripletLoss"


def test_update_and_to_dict_round_trip():
    args = TrainingArguments(seed=3)
    new = args.update({"body_learning_rate": 1e-4})
    assert new.body_embedding_learning_rate == 1e-4 and new.seed == 3
    assert TrainingArguments(**args.to_dict()).to_dict() == args.to_dict()
    with pytest.raises(TypeError, match="bogus"):
        args.update({"bogus": 1})


def test_steps_per_epoch_floor_grows_with_class_pairs() -> None:
    args = TrainingArguments()
    assert [args.steps_per_epoch_floor(k) for k in (1, 2, 3, 4, 6, 50)] == [4, 4, 9, 16, 32, 32]
    # ... and with the pairs of the data: 1.75 * N(N-1) / (b(b-1)), capped at 128
    assert args.steps_per_epoch_floor(2, 16, 16) == 4  # SST-2, 8 per class
    assert args.steps_per_epoch_floor(6, 48, 16) == 32  # Emotion, 8 per class
    assert args.steps_per_epoch_floor(6, 96, 16) == 67  # Emotion, 16 per class
    assert args.steps_per_epoch_floor(6, 384, 16) == 384  # Emotion, 64 per class: the cap
    assert args.steps_per_epoch_floor(50, 400, 16) == 384
    assert TrainingArguments(min_steps_per_epoch=3).steps_per_epoch_floor(6) == 3


def test_word_embeddings_frozen_by_default_only_for_large_vocabularies() -> None:
    import torch

    from setfit_lite.training.optim import LARGE_VOCABULARY, freeze_word_embeddings

    class Encoder(torch.nn.Module):  # GPT-2's name for the matrix: found by get_input_embeddings(), not by name
        def __init__(self, rows: int) -> None:
            super().__init__()
            self.wte, self.dense = torch.nn.Embedding(rows, 2), torch.nn.Linear(2, 2)

        def get_input_embeddings(self) -> torch.nn.Module:
            return self.wte

    def body(rows: int) -> torch.nn.Module:
        module = torch.nn.Module()
        module.encoder = Encoder(rows)
        return module

    small, large = body(1000), body(LARGE_VOCABULARY + 1)
    for module, expected in ((small, True), (large, False)):
        freeze_word_embeddings(module, None)
        assert module.encoder.wte.weight.requires_grad is expected
        assert module.encoder.dense.weight.requires_grad
    freeze_word_embeddings(small, True)
    assert not small.encoder.wte.weight.requires_grad
    freeze_word_embeddings(large, False)  # what train() does after the body phase
    assert large.encoder.wte.weight.requires_grad
    freeze_word_embeddings(torch.nn.Linear(2, 2), True)  # a body without input embeddings: nothing to freeze


def test_body_learning_rate_default_depends_on_objective() -> None:
    assert TrainingArguments().body_embedding_learning_rate == 1e-4
    assert TrainingArguments(objective="pairs").body_embedding_learning_rate == 2e-5
    assert TrainingArguments().body_classifier_learning_rate == 1e-5
    assert TrainingArguments(body_learning_rate=3e-5).body_embedding_learning_rate == 3e-5


@pytest.mark.parametrize("kwargs", [{"body_learning_rate": 0},
                                    {"body_learning_rate": (0, 0), "end_to_end": True},
                                    {"body_learning_rate": 1e-2}])
def test_body_learning_rate_zero_freezes_the_body(tiny_body_path: str, toy_data: dict, kwargs: dict) -> None:
    import torch

    from setfit_lite import SetFitModel, Trainer

    model = SetFitModel.from_pretrained(tiny_body_path, use_differentiable_head=kwargs.get("end_to_end", False))
    before = {k: v.clone() for k, v in model.model_body.state_dict().items()}
    args = TrainingArguments(num_epochs=(1, 2), max_steps=4, show_progress_bar=False, backend="cpu", **kwargs)
    Trainer(model=model, args=args, train_dataset=toy_data).train()
    after = model.model_body.state_dict()
    frozen = all(torch.equal(before[k], after[k]) for k in before)
    assert frozen is (args.body_embedding_learning_rate == 0), kwargs  # a positive rate does change the body
    assert set(model.predict(toy_data["text"][:4])) <= {"positive", "negative"}  # the head was trained


@pytest.mark.parametrize(("value", "expected"), [(1, True), (np.int64(2), True), (np.uint8(0), True), (True, False),
                                                 (np.bool_(False), False), (1.0, False), ("1", False)])
def test_is_integer_takes_numpy_integers_but_no_bool(value: Any, expected: bool) -> None:
    from setfit_lite.training_args import is_integer

    assert is_integer(value) is expected


def test_output_dir_may_come_first_positionally_as_in_setfit(tmp_path: Path) -> None:
    args = TrainingArguments(str(tmp_path), max_steps=2)  # setfit's tests: TrainingArguments(str(tmp_path), ...)
    assert args.output_dir == str(tmp_path) and args.max_steps == 2
    with pytest.raises(TypeError, match="at most one positional argument"):
        TrainingArguments(str(tmp_path), 16)
    with pytest.raises(TypeError, match="not together with output_dir="):
        TrainingArguments(str(tmp_path), output_dir="other")
