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


def test_best_run_is_setfits_named_tuple_with_the_study_beside() -> None:
    """setfit's `BestRun` is a named tuple (run_id, objective, hyperparameters, backend): code that checks
    `isinstance(best, tuple)`, unpacks, indexes or calls `_replace` works the same here."""
    import optuna

    from setfit_lite.utils import BestRun

    study = optuna.create_study(direction="maximize")
    best = BestRun("3", 0.5, {"seed": 1}, study)
    assert isinstance(best, tuple) and BestRun._fields == ("run_id", "objective", "hyperparameters", "backend")
    run_id, objective, hyperparameters, backend = best
    assert (run_id, objective, hyperparameters, backend, best[1]) == ("3", 0.5, {"seed": 1}, study, 0.5)
    assert best._replace(objective=0.7).objective == 0.7 and best._asdict()["backend"] is study
    assert best.study is study and BestRun("1", 0.1, {}, backend=object()).study is None
    assert BestRun("1", 0.1, {}) == ("1", 0.1, {}, None)


def test_logging_module_sets_the_library_level_and_propagation(caplog: pytest.LogCaptureFixture) -> None:
    from setfit_lite import logging as sl_logging

    library = logging.getLogger("setfit_lite")
    saved = (library.level, library.propagate, list(library.handlers), sl_logging.is_progress_bar_enabled())
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
        assert not sl_logging.is_progress_bar_enabled() and sl_logging.tqdm_disable(True) is True
        sl_logging.enable_progress_bar()
        assert sl_logging.is_progress_bar_enabled()
        with pytest.raises(ValueError, match="is not a handler"):
            sl_logging.remove_handler(logging.NullHandler())
    finally:
        library.setLevel(saved[0])
        library.propagate = saved[1]
        library.handlers[:] = saved[2]
        (sl_logging.enable_progress_bar if saved[3] else sl_logging.disable_progress_bar)()


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


def test_training_arguments_report_to_is_a_list() -> None:
    with warnings.catch_warnings():  # report_to runs transformers' integrations (tests/test_reporting.py)
        warnings.simplefilter("error")
        assert TrainingArguments().report_to == ["none"] == TrainingArguments(report_to="none").report_to
        assert TrainingArguments(report_to="all").report_to == ["all"]
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


# ------------------------------------------------------------------------------------------------ Trainer

FAST = {"num_epochs": (1, 2), "max_steps": 2, "body_learning_rate": 1e-2, "show_progress_bar": False,
        "backend": "cpu"}


@pytest.fixture()
def model(tiny_body_path: str):
    from setfit_lite import SetFitModel

    return SetFitModel.from_pretrained(tiny_body_path)


def test_trainer_errors_are_setfits(model, toy_data: dict) -> None:
    import re

    from datasets import Dataset, DatasetDict

    from setfit_lite import Trainer

    with pytest.raises(ValueError, match="`args` must be a `TrainingArguments` instance imported from `setfit`"):
        Trainer(model, Dataset.from_dict(toy_data))
    with pytest.raises(RuntimeError, match=r"^`Trainer` requires either a `model` or `model_init` argument.$"):
        Trainer()
    with pytest.raises(RuntimeError, match="requires either a `model` or `model_init` argument, but not both"):
        Trainer(model=model, model_init=lambda: model)
    with pytest.raises(ValueError, match=re.escape(
            "SetFit expected the dataset to have the columns ['label', 'text'], but only the columns "
            "['extra', 'label'] were found. Either make sure these columns are present, or specify which columns "
            "to use with column_mapping in Trainer.")):
        Trainer(model, train_dataset={"label": [0, 1], "extra": ["a", "b"]})
    with pytest.raises(ValueError, match=re.escape("The column mapping expected the columns ['label_new', "
                                                   "'text_new'] in the dataset, but the dataset had the columns "
                                                   "['extra', 'text'].")):
        Trainer(model, train_dataset=Dataset.from_dict({"text": ["a"], "extra": ["b"]}),
                column_mapping={"text_new": "text", "label_new": "label"})
    with pytest.raises(ValueError, match=re.escape("missing from the column mapping: ['label']")):
        Trainer(model, train_dataset={"sentence": ["a"], "y": [0]}, column_mapping={"sentence": "text"})
    split = Dataset.from_dict(toy_data)
    with pytest.raises(ValueError, match=re.escape("DatasetDict with the split ['train']. Did you mean to select "
                                                   "the training split with dataset['train']?")):
        Trainer(model, train_dataset=DatasetDict({"train": split}))
    with pytest.raises(ValueError, match=re.escape("DatasetDict with the splits ['test', 'train']. Did you mean")):
        Trainer(model, eval_dataset=DatasetDict({"train": split, "test": split}))
    with pytest.raises(ValueError, match="^Training requires a `train_dataset` given to the `Trainer` init"):
        Trainer(model).train()
    with pytest.raises(ValueError, match="^No evaluation dataset provided to `Trainer.evaluate`"):
        Trainer(model).evaluate()


def test_trainer_column_mapping_helpers_apply_the_rule_training_uses(model) -> None:
    """setfit's helpers; the renaming is the one ``to_labeled_data`` applies in training: other columns keep their
    names (``--group-by x``, metric inputs), except one whose name a target takes, kept as ``feat_<name>``."""
    from datasets import Dataset

    from setfit_lite import Trainer
    from setfit_lite.data import to_labeled_data

    rows = {"text_new": ["a", "b"], "label_new": [[0, 1], [1, 0]], "x": [1, 2], "text": ["raw a", "raw b"]}
    dataset = Dataset.from_dict(rows)
    trainer = Trainer(model, column_mapping={"text_new": "text", "label_new": "label"})
    trainer._validate_column_mapping(dataset)
    mapped = trainer._apply_column_mapping(dataset, trainer.column_mapping)
    assert isinstance(mapped, Dataset) and mapped.column_names == ["text", "label", "x", "feat_text"]
    assert mapped[0] == {"text": "a", "label": [0, 1], "x": 1, "feat_text": "raw a"}
    as_dict = trainer._apply_column_mapping(rows, trainer.column_mapping)
    assert as_dict == mapped.to_dict()
    labeled = to_labeled_data(dataset, column_mapping=trainer.column_mapping)
    assert {"text": labeled.texts, **labeled.columns} == {k: v for k, v in as_dict.items() if k != "label"}


def test_train_keyword_arguments_warn_as_setfit_and_apply_to_the_call(model, toy_data: dict) -> None:
    from setfit_lite import Trainer

    trainer = Trainer(model, args=TrainingArguments(**FAST), train_dataset=toy_data)
    with pytest.warns(DeprecationWarning, match=r"`Trainer.train` does not accept keyword arguments anymore\. .*"
                                                r"setfit_lite applies num_epochs to this call"):
        trainer.train(num_epochs=(1, 3))
    assert model.training_info["training_args"]["num_epochs"] == [1, 3]
    assert trainer.args.num_epochs == (1, 2)  # only that call
    with pytest.raises(TypeError, match="learning_rate"), pytest.warns(DeprecationWarning):
        trainer.train(learning_rate=1e-3)


def test_freeze_and_callbacks_as_setfit(tiny_body_path: str) -> None:
    from transformers import TrainerCallback

    from setfit_lite import SetFitModel, Trainer

    model = SetFitModel.from_pretrained(tiny_body_path)
    trainer = Trainer(model)
    with pytest.warns(DeprecationWarning, match="Trainer.freeze` is deprecated .* use `SetFitModel.freeze`"):
        trainer.freeze()
    assert not any(p.requires_grad for p in model.model_body.parameters())
    model.unfreeze("body")
    assert all(p.requires_grad for p in model.model_body.parameters())
    with pytest.warns(DeprecationWarning, match="`keep_body_frozen` is deprecated"):
        model.unfreeze(keep_body_frozen=True)
    with pytest.raises(ValueError, match="component must be 'body', 'head' or None"):
        model.freeze("neck")

    class Recorder(TrainerCallback):
        pass

    callback = Recorder()
    trainer.add_callback(callback)
    trainer.add_callback(Recorder)  # a class is instantiated, as in transformers
    assert trainer.callbacks[0] is callback and type(trainer.callbacks[1]) is Recorder
    assert trainer.pop_callback(callback) is callback and trainer.pop_callback(callback) is None
    trainer.remove_callback(Recorder)
    assert trainer.callbacks == []


def test_callable_metric_receives_setfits_inputs(tiny_body_path: str, toy_data: dict) -> None:
    import torch

    from setfit_lite import SetFitModel, Trainer

    seen = []

    def half(y_pred, y_test):
        seen.append((y_pred, y_test))
        return 0.5

    numbers = {"text": toy_data["text"], "label": [3 if y == "positive" else 7 for y in toy_data["label"]]}
    trainer = Trainer(SetFitModel.from_pretrained(tiny_body_path), args=TrainingArguments(**FAST),
                      train_dataset=numbers, eval_dataset=numbers, metric=half)
    trainer.train()
    result = trainer.evaluate()
    assert result == {"metric": 0.5}  # a single number under setfit's key, nothing beside it
    y_pred, y_test = seen[-1]
    assert isinstance(y_pred, torch.Tensor) and y_pred.device.type == "cpu" and set(y_pred.tolist()) <= {3, 7}
    assert y_test == numbers["label"]  # the label values, as a list
    named = Trainer(SetFitModel.from_pretrained(tiny_body_path), args=TrainingArguments(**FAST),
                    train_dataset=toy_data, eval_dataset=toy_data, metric=half)
    named.train()
    named.evaluate()
    y_pred, y_test = seen[-1]  # string labels: class ids on both sides, as setfit's LabelEncoder gives them
    assert isinstance(y_pred, torch.Tensor) and y_test.tolist() == named.model.label_ids(toy_data["label"]).tolist()


# ------------------------------------------------------------------------------------------------ SetFitModel


def test_model_predict_return_types_are_setfits(tmp_path, tiny_body_path: str, toy_data: dict) -> None:
    import json

    import torch

    from setfit_lite import SetFitModel, Trainer
    from setfit_lite.modeling import MODEL_HEAD_NAME

    texts = ["great wonderful superb film", "awful dull terrible movie"]
    named = SetFitModel.from_pretrained(tiny_body_path)
    Trainer(named, args=TrainingArguments(**FAST), train_dataset=toy_data).train()
    assert named.label2id == {"negative": 0, "positive": 1} and named.id2label == {0: "negative", 1: "positive"}
    assert isinstance(named.predict(texts), list) and named.predict(texts[0]) in ("negative", "positive")
    ids = named.predict(texts, use_labels=False)
    assert isinstance(ids, torch.Tensor) and ids.tolist() == [named.label2id[y] for y in named.predict(texts)]
    proba = named.predict_proba(texts)
    assert isinstance(proba, torch.Tensor) and proba.shape == (2, 2)
    assert isinstance(named.predict_proba(texts, as_numpy=True), np.ndarray)
    assert named.predict_proba(texts[0]).shape == (2,)

    numbers = SetFitModel.from_pretrained(tiny_body_path)
    data = {"text": toy_data["text"], "label": [1 if y == "positive" else 0 for y in toy_data["label"]]}
    Trainer(numbers, args=TrainingArguments(**FAST), train_dataset=data).train()
    single = numbers.predict(texts[0])
    assert isinstance(single, torch.Tensor) and single.dim() == 0  # setfit: one text gives one value
    assert isinstance(numbers.predict(texts, as_numpy=True), np.ndarray) and numbers(texts).shape == (2,)

    # setfit's model_head is the estimator: its attributes are read through our head
    head = numbers.model_head
    assert head.coef_.shape == (1, numbers.embedding_dim) and head.classes_.tolist() == [0, 1]
    assert head.get_params()["max_iter"] == 1000
    with pytest.raises(AttributeError, match="have no attribute 'bogus_'"):
        getattr(head, "bogus_")  # noqa: B009
    numbers.save_pretrained(tmp_path / "model")
    assert (tmp_path / "model" / MODEL_HEAD_NAME).is_file()
    setfit_config = json.loads((tmp_path / "model" / "config_setfit.json").read_text())
    assert setfit_config == {"normalize_embeddings": False, "labels": [0, 1]}  # setfit's file, setfit's keys


def test_multi_output_predict_proba_has_setfits_shape(tiny_body_path: str, toy_data: dict) -> None:
    from setfit_lite import SetFitModel, Trainer

    model = SetFitModel.from_pretrained(tiny_body_path, multi_target_strategy="multi-output")
    hot = [[1, 0] if y == "positive" else [0, 1] for y in toy_data["label"]]
    Trainer(model, args=TrainingArguments(**FAST), train_dataset={"text": toy_data["text"], "label": hot}).train()
    proba = model.predict_proba(toy_data["text"][:3], as_numpy=True)
    assert proba.shape == (3, 2, 2) and np.allclose(proba.sum(-1), 1.0)  # [P(0), P(1)] per label, as setfit
    np.testing.assert_allclose(proba[..., 1], model.class_proba(toy_data["text"][:3]), rtol=1e-6)
    assert model.predict_proba(toy_data["text"][0]).shape == (2, 2)
    assert model.predict(toy_data["text"][:3]).shape == (3, 2)  # multi-hot, a tensor


def test_predict_proba_shape_follows_the_fitted_head(tiny_body_path: str, toy_data: dict) -> None:
    """setfit stacks `[P(0), P(1)]` per label only for a head whose estimator answers per label: a torch head with
    `multi_target_strategy="multi-output"` gives `(n, L)`, and a `MultiOutputClassifier` given as the head gives
    `(n, L, 2)` whatever the model's setting says."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.multioutput import MultiOutputClassifier

    from setfit_lite import SetFitModel, Trainer

    hot = [[1, 0] if y == "positive" else [0, 1] for y in toy_data["label"]]
    train = {"text": toy_data["text"], "label": hot}
    torch_head = SetFitModel.from_pretrained(tiny_body_path, multi_target_strategy="multi-output",
                                             use_differentiable_head=True, head_params={"out_features": 2})
    Trainer(torch_head, args=TrainingArguments(**FAST), train_dataset=train).train()
    assert torch_head.predict_proba(toy_data["text"][:3], as_numpy=True).shape == (3, 2)
    given = SetFitModel.from_pretrained(tiny_body_path)
    given.model_head = MultiOutputClassifier(LogisticRegression())  # setfit's way to give a head
    Trainer(given, args=TrainingArguments(**FAST), train_dataset=train).train()
    assert given.multi_target_strategy is None
    assert given.predict_proba(toy_data["text"][:3], as_numpy=True).shape == (3, 2, 2)


def test_setfits_deprecated_trainers_run_with_its_keywords(tiny_body_path: str, toy_data: dict) -> None:
    """`SetFitTrainer` and `DistillationSetFitTrainer` (setfit 0.x's keywords) warn as setfit does and train: one
    learning rate for body and head, setfit's pair sampling."""
    from setfit_lite import DistillationSetFitTrainer, SetFitModel, SetFitTrainer

    teacher = SetFitModel.from_pretrained(tiny_body_path)
    with pytest.warns(DeprecationWarning, match="`SetFitTrainer` has been deprecated.*use `Trainer`"):
        trainer = SetFitTrainer(model=teacher, train_dataset=toy_data, num_iterations=1, learning_rate=1e-3,
                                batch_size=8, seed=3)
    assert trainer.args.body_learning_rate[0] == trainer.args.head_learning_rate == 1e-3
    assert trainer.args.num_iterations == 1 and trainer.args.objective == "pairs"
    trainer.args = trainer.args.update({"show_progress_bar": False})
    trainer.train()
    assert teacher.predict(toy_data["text"][:2]) is not None
    student = SetFitModel.from_pretrained(tiny_body_path)
    with pytest.warns(DeprecationWarning, match="`DistillationSetFitTrainer` has been deprecated"):
        distiller = DistillationSetFitTrainer(teacher_model=teacher, student_model=student,
                                              train_dataset={"text": toy_data["text"]}, num_iterations=1,
                                              batch_size=8)
    distiller.args = distiller.args.update({"show_progress_bar": False})
    distiller.train()
    assert student.labels == teacher.labels


def test_setfits_top_level_names_and_push_to_hub() -> None:
    import setfit_lite
    from setfit_lite import AspectExtractor, SetFitModel
    from setfit_lite.absa import AspectExtractor as absa_extractor

    assert AspectExtractor is absa_extractor and "AspectExtractor" in setfit_lite.__all__
    with pytest.raises(RuntimeError, match="save_pretrained"):
        SetFitModel.push_to_hub(object.__new__(SetFitModel), "me/model")


# ------------------------------------------------------------------------------------------------ templated data


def test_templated_dataset_builds_on_the_input_dataset_as_setfit() -> None:
    from datasets import ClassLabel, Dataset, Features, Value

    from setfit_lite import get_templated_dataset

    names = ["sad", "happy"]
    extra = get_templated_dataset(Dataset.from_dict({"text": ["x"], "label": [1], "id": [7]}),
                                  candidate_labels=names, sample_size=1)
    assert extra.column_names == ["text", "label", "id"]  # setfit 1.2
    assert extra.to_list() == [{"text": "x", "label": 1, "id": 7}, {"text": "This sentence is sad", "label": 0,
                               "id": None}, {"text": "This sentence is happy", "label": 1, "id": None}]
    features = Features({"text": Value("string"), "label": ClassLabel(names=names)})
    typed = get_templated_dataset(Dataset.from_dict({"text": ["x"], "label": [1]}, features=features),
                                  candidate_labels=names, sample_size=1)
    assert typed.features == features and typed["label"] == [1, 0, 1]  # setfit 1.2: the ClassLabel is kept
    swapped = get_templated_dataset(Dataset.from_dict({"label": [0], "text": ["x"]}), candidate_labels=names,
                                    sample_size=1)
    assert swapped.column_names == ["label", "text"]  # setfit 1.2
    assert swapped["text"] == ["x", "This sentence is sad", "This sentence is happy"]
    floats = get_templated_dataset(Dataset.from_dict({"text": ["x"], "label": [1.0]}), candidate_labels=names,
                                   sample_size=1)
    assert floats.features["label"] == Value("float64") and floats["label"] == [1.0, 0.0, 1.0]  # setfit 1.2
    empty_features = Features({"label": ClassLabel(names=names), "text": Value("string"), "id": Value("int32")})
    empty = get_templated_dataset(Dataset.from_dict({"text": [], "label": [], "id": []}, features=empty_features),
                                  candidate_labels=names, sample_size=1)
    assert empty.features == empty_features and empty["id"] == [None, None]  # setfit 1.2
    untyped = get_templated_dataset(Dataset.from_dict({"text": [], "label": [], "id": []}), candidate_labels=names,
                                    sample_size=1)
    assert untyped.features["label"] == Value("int64") and untyped["label"] == [0, 1]  # setfit 1.2
    table = get_templated_dataset({"label": ["happy"], "text": ["x"], "id": [3]}, candidate_labels=names,
                                  sample_size=1)  # names become ids, in their column's place
    assert table.column_names == ["label", "text", "id"] and table["label"] == [1, 0, 1]
    assert table["id"] == [3, None, None]
    short = Dataset.from_dict({"text": ["x"], "label": [0]},
                              features=Features({"text": Value("string"), "label": ClassLabel(names=["sad"])}))
    with pytest.raises(ValueError, match=r"ClassLabel of 1 names .* 2 candidate_labels"):
        get_templated_dataset(short, candidate_labels=names, sample_size=1)


@pytest.mark.parametrize("template, texts", [
    ("It is {0}.", ["It is sad.", "It is happy."]),  # setfit 1.2
    ("It is {!s}.", ["It is sad.", "It is happy."]),  # setfit 1.2
    ("It is {0!r:>8}, {{really}}", ["It is    'sad', {really}", "It is  'happy', {really}"]),
    ("{:.2}", ["sa", "ha"]),
])
def test_templated_dataset_takes_one_positional_field_with_any_spec(template: str, texts: list[str]) -> None:
    from setfit_lite import get_templated_dataset

    assert get_templated_dataset(candidate_labels=["sad", "happy"], template=template, sample_size=1)["text"] == texts


@pytest.mark.parametrize("template, match", [
    ("no field", r"\(0 fields\)"),
    ("{{}}", r"\(0 fields\)"),
    ("{} and {}", r"\(2 fields\)"),
    ("{0} {0}", r"\(2 fields\)"),
    ("It is {label}", r"\{label\} is named"),
    ("{0[0]}", r"\{0\[0\]\} is named or indexed"),
    ("{:{}}", "nested field"),
    ("{", "exactly one replacement field"),
    ("{:d}", "cannot format the label name 'sad'"),
    ("{!x}", "cannot format the label name 'sad'"),
])
def test_templated_dataset_refuses_other_templates(template: str, match: str) -> None:
    from setfit_lite import get_templated_dataset

    with pytest.raises(ValueError, match=match) as caught:
        get_templated_dataset(candidate_labels=["sad", "happy"], template=template, sample_size=1)
    assert repr(template) in str(caught.value)
