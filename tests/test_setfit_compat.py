"""Import-swap compatibility with setfit 1.2 (issue 19): the names, argument forms, return types and exceptions a
setfit user's code relies on. Expected values marked "setfit 1.2" were produced by setfit 1.2.0 itself on the same
inputs. setfit's own test suite runs against setfit_lite with ``benchmarks/setfit_suite.sh``."""

from __future__ import annotations

import logging
import warnings

import numpy as np
import pytest

from setfit_lite import TrainingArguments

# ------------------------------------------------------------------------------------------------ sampler


def _pairs(dataset) -> list[tuple[str, str, float]]:
    return [(p["sentence_1"], p["sentence_2"], p["label"]) for p in dataset]


def test_contrastive_dataset_yields_setfits_pairs_in_setfits_order() -> None:
    from setfit_lite.sampler import ContrastiveDataset

    unique = ContrastiveDataset(["a", "b", "c", "d"], [0, 0, 1, 1], False, sampling_strategy="unique")
    assert _pairs(unique) == [  # setfit 1.2
        ("c", "d", 1.0), ("b", "c", 0.0), ("a", "b", 1.0), ("a", "c", 0.0), ("a", "a", 1.0), ("a", "d", 0.0),
        ("c", "c", 1.0), ("b", "d", 0.0), ("d", "d", 1.0), ("b", "b", 1.0)]
    assert (unique.len_pos_pairs, unique.len_neg_pairs, len(unique)) == (6, 4, 10)

    multi = ContrastiveDataset(["a", "b", "c"], [[1, 0], [1, 1], [0, 1]], True, sampling_strategy="undersampling")
    assert (multi.len_pos_pairs, multi.len_neg_pairs) == (1, 1)
    assert _pairs(multi) == [("a", "a", 1.0), ("a", "c", 0.0)]  # setfit 1.2: a shared label makes a positive

    # num_iterations: that many pairs of each kind per sentence; a second pass continues each list (setfit 1.2)
    cycling = ContrastiveDataset(["a", "b", "c", "d"], [0, 0, 1, 1], False, num_iterations=1)
    assert _pairs(cycling) == [("c", "d", 1.0), ("b", "c", 0.0), ("a", "b", 1.0), ("a", "c", 0.0),
                               ("a", "a", 1.0), ("a", "d", 0.0), ("c", "c", 1.0), ("b", "d", 0.0)]
    assert _pairs(cycling) == [("d", "d", 1.0), ("b", "c", 0.0), ("b", "b", 1.0), ("a", "c", 0.0),
                               ("c", "d", 1.0), ("a", "d", 0.0), ("a", "b", 1.0), ("b", "d", 0.0)]


def test_contrastive_dataset_keeps_indices_not_pair_dicts() -> None:
    from torch.utils.data import IterableDataset

    from setfit_lite.sampler import ContrastiveDataset

    n = 400
    data = ContrastiveDataset([f"s{i}" for i in range(n)], [i % 4 for i in range(n)], False, max_pairs=1000)
    assert isinstance(data, IterableDataset)
    assert (len(data.pos_pairs), len(data.neg_pairs)) == (500, 500)  # max_pairs // 2 of each
    assert data.pos_pairs.first.dtype == np.int32  # 8 bytes a pair, the dicts are made when read
    first = data.pos_pairs[0]
    assert first["label"] == 1.0 and int(first["sentence_1"][1:]) % 4 == int(first["sentence_2"][1:]) % 4


def test_contrastive_dataset_errors() -> None:
    from setfit_lite.sampler import ContrastiveDataset

    with pytest.raises(ValueError, match="Invalid sampling strategy"):
        ContrastiveDataset(["a", "b"], [0, 1], False, sampling_strategy="random")
    one_class = ContrastiveDataset(["a", "b"], [0, 0], False)
    with pytest.raises(ValueError, match="no negative pairs to draw 3 from"):  # setfit: an IndexError
        list(one_class)


# ------------------------------------------------------------------------------------------------ names


def test_setfits_module_names_exist() -> None:
    import setfit_lite
    from setfit_lite.search import BestRun as SearchBestRun
    from setfit_lite.utils import BestRun

    assert BestRun is SearchBestRun
    assert BestRun("3", 0.5, {"seed": 1}).hyperparameters == {"seed": 1}
    assert setfit_lite.SetFitHead.__name__ in ("SetFitHead", "TorchHead")


def test_logging_module_sets_the_library_level_and_propagation(caplog: pytest.LogCaptureFixture) -> None:
    from setfit_lite import logging as sl_logging
    from setfit_lite import verbosity

    library = logging.getLogger("setfit_lite")
    saved = (library.level, library.propagate, list(library.handlers), verbosity.get_verbosity())
    try:
        sl_logging.set_verbosity_info()
        assert sl_logging.get_verbosity() == sl_logging.INFO == logging.INFO
        assert not library.propagate  # setfit's setup: its own stderr handler, no propagation
        sl_logging.enable_propagation()
        with caplog.at_level(logging.INFO):
            sl_logging.get_logger("setfit_lite.trainer").info("hello from the trainer")
        assert ("setfit_lite.trainer", logging.INFO, "hello from the trainer") in caplog.record_tuples
        sl_logging.set_verbosity_error()
        assert sl_logging.get_verbosity() == logging.ERROR
        sl_logging.disable_progress_bar()
        assert not sl_logging.is_progress_bar_enabled() and verbosity.get_verbosity() == "quiet"
        sl_logging.enable_progress_bar()
        assert sl_logging.is_progress_bar_enabled()
        with pytest.raises(ValueError, match="is not a handler"):
            sl_logging.remove_handler(logging.NullHandler())
    finally:
        library.setLevel(saved[0])
        library.propagate = saved[1]
        library.handlers[:] = saved[2]
        verbosity.set_verbosity(saved[3])


# ------------------------------------------------------------------------------------------------ data


def test_fewshot_splits_as_setfit() -> None:
    import pandas as pd
    from datasets import Dataset

    from setfit_lite.data import (
        SAMPLE_SIZES,
        SEEDS,
        create_fewshot_splits,
        create_fewshot_splits_multilabel,
        create_samples,
    )

    assert (SAMPLE_SIZES, SEEDS) == ([2, 4, 8, 16, 32, 64], list(range(10)))
    df = pd.DataFrame({"text": [f"t{i}" for i in range(12)], "label": ["x"] * 8 + ["y"] * 4})
    sample = create_samples(df, sample_size=3, seed=0)  # string labels work (setfit's df.query does not)
    assert sample["label"].tolist() == ["x"] * 3 + ["y"] * 3
    assert sample["text"].tolist()[:3] == df[df["label"] == "x"].sample(3, random_state=0)["text"].tolist()
    splits = create_fewshot_splits(Dataset.from_pandas(df), [2, 8])
    assert list(splits)[:2] == ["train-2-0", "train-2-1"] and len(splits) == 20
    assert [len(split) for split in splits.values()][::10] == [4, 12]  # 2 per label; then all 8 x and 4 y
    multi = Dataset.from_dict({"text": list("abcdef"), "one": [1, 0, 1, 0, 1, 0], "two": [0, 1, 1, 0, 0, 1]})
    assert len(create_fewshot_splits_multilabel(multi, [2])) == 10
    with pytest.raises(ValueError, match="must supply a `dataset_name`"):
        create_fewshot_splits(Dataset.from_pandas(df), [2], add_data_augmentation=True)


def test_templated_dataset_as_setfit() -> None:
    from datasets import Dataset

    from setfit_lite.data import add_templated_examples, get_templated_dataset

    empty = get_templated_dataset(Dataset.from_dict({}), candidate_labels=["a", "b"], sample_size=1)
    assert empty[:] == {"text": ["This sentence is a", "This sentence is b"], "label": [0, 1]}
    with pytest.raises(ValueError, match="Must supply exactly one of `reference_dataset` or `candidate_labels`"):
        get_templated_dataset(reference_dataset=Dataset.from_dict({"label": [0]}), candidate_labels=["a"])
    with pytest.raises(ValueError, match=r"missing from the input dataset: \['label'\]"):
        get_templated_dataset(Dataset.from_dict({"text": []}), candidate_labels=["a"])
    with pytest.warns(DeprecationWarning, match="use `get_templated_dataset`"):
        old = add_templated_examples(None, ["a", "b"], "It is {}", sample_size=1)
    assert old[:] == {"text": ["It is a", "It is b"], "label": [0, 1]}


def test_setfit_dataset_batches_the_tokenizer_inputs(tiny_body_path: str) -> None:
    import torch
    from sentence_transformers import SentenceTransformer

    from setfit_lite.data import SetFitDataset

    tokenizer = SentenceTransformer(tiny_body_path, device="cpu").tokenizer
    dataset = SetFitDataset(["good film", "bad"], [1, 0], tokenizer, max_length=8)
    features, labels = dataset.collate_fn([dataset[0], dataset[1]])
    assert set(features) == set(tokenizer.model_input_names)
    assert features["input_ids"].shape == (2, 8) and features["input_ids"].dtype == torch.int32
    assert labels.tolist() == [1, 0] and labels.dtype == torch.int64
    multi = SetFitDataset(["a", "b"], [[1, 0], [0, 1]], tokenizer)
    assert multi.collate_fn([multi[0], multi[1]])[1].dtype == torch.float32
    with pytest.raises(ValueError, match="2 texts but 1 labels"):
        SetFitDataset(["a", "b"], [1], tokenizer)


# ------------------------------------------------------------------------------------------------ losses


def test_supcon_loss_matches_the_formula_and_skips_anchors_without_positives() -> None:
    import torch
    import torch.nn.functional as F

    from setfit_lite.losses import SupConLoss, build_loss

    torch.manual_seed(0)
    embeddings, labels = torch.randn(5, 8), torch.tensor([0, 0, 1, 1, 2])  # the last anchor has no positive
    loss = SupConLoss(model=None, temperature=0.1)(embeddings, labels)
    z = F.normalize(embeddings, dim=-1)
    expected = []
    for i in range(4):
        others = [j for j in range(5) if j != i]
        denominator = torch.logsumexp(torch.stack([z[i] @ z[j] / 0.1 for j in others]), 0)
        positives = [j for j in others if labels[j] == labels[i]]
        expected.append(torch.stack([z[i] @ z[j] / 0.1 - denominator for j in positives]).mean())
    assert torch.isfinite(loss)  # setfit's formula gives NaN here (0 positives for the last anchor)
    assert torch.allclose(loss, -(0.1 / 0.07) * torch.stack(expected).mean(), atol=1e-5)
    assert isinstance(build_loss(SupConLoss), SupConLoss) and isinstance(build_loss("SupConLoss"), SupConLoss)
    with pytest.raises(ValueError, match="Unknown mode"):
        SupConLoss(contrast_mode="some")


def test_supcon_loss_trains(tiny_body_path: str, toy_data: dict) -> None:
    from setfit_lite import SetFitModel, Trainer
    from setfit_lite.losses import SupConLoss

    args = TrainingArguments(loss=SupConLoss, max_steps=2, show_progress_bar=False, backend="cpu")
    assert args.loss_name == "SupConLoss"
    model = SetFitModel.from_pretrained(tiny_body_path)
    Trainer(model=model, args=args, train_dataset=toy_data).train()
    assert model.training_info["training_args"]["loss"] == "SupConLoss"


# ------------------------------------------------------------------------------------------------ TrainingArguments


def test_training_arguments_store_body_head_tuples() -> None:
    args = TrainingArguments(batch_size=12, num_epochs=3, body_learning_rate=1e-2)
    assert (args.batch_size, args.num_epochs, args.body_learning_rate) == ((12, 12), (3, 3), (1e-2, 1e-2))
    assert (args.embedding_batch_size, args.classifier_num_epochs, args.body_classifier_learning_rate) == (12, 3, 1e-2)
    args = TrainingArguments(batch_size=(12, 4), num_epochs=[2, 5], body_learning_rate=(1e-2, 1e-3))
    assert (args.classifier_batch_size, args.embedding_num_epochs, args.body_embedding_learning_rate) == (4, 2, 1e-2)
    # the default rate is the objective's, stored as a pair too, and stays the objective's default on update()
    assert TrainingArguments().body_learning_rate == (1e-4, 1e-5)
    assert TrainingArguments().update({"objective": "pairs"}).body_learning_rate == (2e-5, 1e-5)
    assert TrainingArguments(body_learning_rate=3e-5).update({"objective": "pairs"}).body_learning_rate == (3e-5,) * 2


def test_training_arguments_interval_rules_as_setfit() -> None:
    from transformers import IntervalStrategy

    args = TrainingArguments(eval_steps=5)
    assert args.eval_strategy == IntervalStrategy.STEPS and args.eval_steps == 5
    assert TrainingArguments(eval_strategy="steps", logging_steps=7).eval_steps == 7
    with pytest.raises(ValueError, match="eval_strategy 'steps' needs eval_steps or a positive logging_steps"):
        TrainingArguments(eval_strategy="steps", logging_steps=0, logging_strategy="no")
    assert TrainingArguments(logging_steps=0, logging_strategy="no").logging_steps == 0
    with pytest.raises(ValueError, match="requires the save and eval strategy to match"):
        TrainingArguments(load_best_model_at_end=True, eval_strategy="steps", save_strategy="epoch")
    with pytest.raises(ValueError, match="save_steps to be a round multiple of eval_steps, got save_steps=50"):
        TrainingArguments(load_best_model_at_end=True, eval_strategy="steps", save_strategy="steps", eval_steps=100,
                          save_steps=50)
    TrainingArguments(load_best_model_at_end=True, eval_strategy="steps", save_strategy="steps", eval_steps=50,
                      save_steps=100)
    TrainingArguments(load_best_model_at_end=True, eval_strategy="epoch")  # ours: no checkpoints, best in memory


def test_training_arguments_report_to_is_a_list_and_says_it_does_nothing() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert TrainingArguments().report_to == ["none"] == TrainingArguments(report_to="none").report_to
    with pytest.warns(UserWarning, match=r"report_to=\['wandb'\]: setfit_lite runs no reporting integration"):
        assert TrainingArguments(report_to="wandb").report_to == ["wandb"]
    args = TrainingArguments(run_name="r", logging_dir="logs", logging_first_step=False, eval_delay=2, use_amp=True)
    assert (args.run_name, args.logging_dir, args.logging_first_step, args.eval_delay, args.use_amp) == (
        "r", "logs", False, 2.0, True)
    assert args.to_dict()["report_to"] == ["none"]


# ------------------------------------------------------------------------------------------------ SetFitHead


def test_setfit_head_takes_setfits_arguments(tmp_path) -> None:
    import torch

    from setfit_lite import SetFitHead
    from setfit_lite.heads import TorchHead, build_head, load_head

    assert SetFitHead is TorchHead
    head = SetFitHead(in_features=4, out_features=3, multitarget=True, temperature=0.5, bias=False)
    assert (head.out_features, head.multitarget, head.num_classes, head.linear.bias) == (3, True, 3, None)
    assert isinstance(head.get_loss_fn(), torch.nn.BCEWithLogitsLoss) and head.device == torch.device("cpu")
    assert isinstance(SetFitHead(4).get_loss_fn(), torch.nn.CrossEntropyLoss) and SetFitHead(4).out_features == 2
    x = torch.randn(2, 4)
    out = head({"sentence_embedding": x})  # setfit's dict in, dict out
    assert torch.allclose(out["logits"], head.linear(x) / 0.5) and torch.allclose(out["probs"], out["logits"].sigmoid())
    head.fitted = True
    head.save(tmp_path)
    loaded = load_head(tmp_path)
    assert (loaded.temperature, loaded.bias) == (0.5, False) and torch.allclose(loaded(x), head(x))
    with pytest.raises(ValueError, match="num_classes=2 and out_features=3 disagree"):
        SetFitHead(4, 2, out_features=3)
    # head_params with setfit's names: checked against the data where the data decides
    assert build_head(None, num_classes=2, in_features=4, use_differentiable_head=True, out_features=1).num_classes == 2
    with pytest.raises(ValueError, match="head_params out_features=5 but the training data has 3 classes"):
        build_head(None, num_classes=3, in_features=4, use_differentiable_head=True, out_features=5)
    with pytest.raises(ValueError, match="head_params multitarget=True but the training data is single-label"):
        build_head(None, num_classes=3, in_features=4, use_differentiable_head=True, multitarget=True)
