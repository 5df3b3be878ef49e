"""Zero-shot templated datasets, the distillation loss and DistillationTrainer on tiny models."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from datasets import ClassLabel, Dataset, Features, Value

from setfit_lite import DistillationTrainer, SetFitModel, Trainer, TrainingArguments, get_templated_dataset
from setfit_lite.distillation import shrink_body
from setfit_lite.losses import EmbeddingDistillationLoss, SimilarityDistillationLoss

FAST = {"num_epochs": (3, 4), "body_learning_rate": 1e-2, "show_progress_bar": False, "backend": "cpu"}


# ---- get_templated_dataset -----------------------------------------------------------------------


def test_templated_examples_from_label_names() -> None:
    ds = get_templated_dataset(candidate_labels=["sad", "happy"], template="I feel {}.", sample_size=3)
    assert ds["text"] == ["I feel sad."] * 3 + ["I feel happy."] * 3
    assert ds["label"] == [0, 0, 0, 1, 1, 1]
    multi = get_templated_dataset(candidate_labels=["a", "b", "c"], multi_label=True, sample_size=1)
    assert multi["label"] == [[1, 0, 0], [0, 1, 0], [0, 0, 1]]
    assert multi["text"][1] == "This sentence is b"


def test_templated_examples_mix_with_real_ones() -> None:
    real = {"text": ["what a day", "so bad"], "label": [1, 0]}
    ds = get_templated_dataset(real, candidate_labels=["negative", "positive"], sample_size=1)
    assert ds["text"] == ["what a day", "so bad", "This sentence is negative", "This sentence is positive"]
    assert ds["label"] == [1, 0, 0, 1]
    named = get_templated_dataset({"text": ["so bad"], "label": ["negative"]},
                                  candidate_labels=["negative", "positive"])
    assert named["label"] == [0, 0, 0, 1, 1]


def test_label_names_from_a_reference_dataset() -> None:
    features = Features({"text": Value("string"), "label": ClassLabel(names=["anger", "joy"])})
    ref = Dataset.from_dict({"text": ["x", "y"], "label": [0, 1]}, features=features)
    assert get_templated_dataset(reference_dataset=ref, sample_size=1)["text"] == [
        "This sentence is anger", "This sentence is joy"]
    ref2 = Dataset.from_dict({"text": ["x", "y", "z"], "label": [1, 0, 1], "label_text": ["joy", "anger", "joy"]})
    assert get_templated_dataset(reference_dataset=ref2, sample_size=1)["label"] == [0, 1]


@pytest.mark.parametrize("kwargs, error, match", [
    ({}, ValueError, "candidate_labels"),
    ({"candidate_labels": "abc"}, TypeError, "list of non-empty strings"),
    ({"candidate_labels": ["a", "a"]}, ValueError, "unique"),
    ({"candidate_labels": []}, ValueError, "non-empty"),
    ({"candidate_labels": ["a", "b"], "template": "no slot"}, ValueError, "template"),
    ({"candidate_labels": ["a", "b"], "sample_size": 0}, ValueError, "sample_size"),
    ({"candidate_labels": ["a", "b"], "dataset": {"text": ["t"], "label": [5]}}, ValueError, "ids 0..1"),
    ({"candidate_labels": ["a", "b"], "dataset": {"text": ["t"], "label": ["c"]}}, ValueError, "not in the known"),
    ({"candidate_labels": ["a", "b"], "dataset": {"text": ["t"], "label": [0]}, "multi_label": True},
     ValueError, "multi_label"),
    ({"reference_dataset": {"text": ["t"], "label": [0]}}, ValueError, "label names"),
])
def test_templated_dataset_errors(kwargs: dict, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        get_templated_dataset(**kwargs)


def test_zero_shot_classifier_from_label_names(tiny_body_path: str) -> None:
    train = get_templated_dataset(candidate_labels=["bad", "good"], template="the movie was {}", sample_size=4)
    model = SetFitModel.from_pretrained(tiny_body_path, labels=["bad", "good"])
    Trainer(model=model, args=TrainingArguments(**FAST, seed=1), train_dataset=train).train()
    assert model.predict(["the movie was good", "the movie was bad"]) == ["good", "bad"]


# ---- distillation --------------------------------------------------------------------------------


def test_distillation_loss_is_zero_only_when_similarities_match() -> None:
    teacher = torch.randn(6, 8)
    loss = SimilarityDistillationLoss(teacher)
    rows = torch.tensor([4, 1, 3])
    assert float(loss(teacher[rows] * 3.0, rows)) == pytest.approx(0.0, abs=1e-6)  # cosine ignores scale
    assert float(loss(torch.randn(3, 8), rows)) > 1e-3
    with pytest.raises(ValueError, match="row indices"):
        loss(teacher[rows], None)


def test_embedding_distillation_loss_is_zero_only_at_the_teachers_embeddings() -> None:
    teacher = torch.randn(6, 8)
    loss = EmbeddingDistillationLoss(teacher)
    rows = torch.tensor([4, 1, 3])
    assert float(loss(teacher[rows], rows)) == pytest.approx(0.0, abs=1e-6)
    assert float(loss(teacher[rows] * 3.0, rows)) == pytest.approx(float(4 * teacher[rows].pow(2).sum(-1).mean()))
    assert float(SimilarityDistillationLoss(teacher)(teacher[rows] * 3.0, rows)) < 1e-6  # where similarities match
    with pytest.raises(ValueError, match="row indices"):
        loss(teacher[rows], None)


@pytest.fixture(scope="module")
def teacher(tiny_body_path: str) -> SetFitModel:
    from conftest import make_sentences

    texts, labels = make_sentences(12, seed=0)
    model = SetFitModel.from_pretrained(tiny_body_path)
    Trainer(model=model, args=TrainingArguments(**FAST, seed=7), train_dataset={"text": texts, "label": labels}).train()
    return model


def test_student_learns_the_teacher(teacher: SetFitModel, tiny_body_path: str, tmp_path) -> None:
    from conftest import make_sentences

    unlabelled, _ = make_sentences(20, seed=5)
    eval_texts, eval_labels = make_sentences(10, seed=1)
    student = SetFitModel.from_pretrained(tiny_body_path)
    before = student.encode(eval_texts)
    trainer = DistillationTrainer(teacher_model=teacher, student_model=student,
                                  args=TrainingArguments(**FAST, seed=3, logging_steps=4),
                                  train_dataset={"text": unlabelled})
    trainer.train()
    assert student.labels == teacher.labels and student.model_head is not None
    assert not np.allclose(before, student.encode(eval_texts))
    agreement = np.mean(np.array(student.predict(eval_texts)) == np.array(teacher.predict(eval_texts)))
    accuracy = np.mean(np.array(student.predict(eval_texts)) == np.array(eval_labels))
    assert agreement >= 0.8 and accuracy >= 0.75, (agreement, accuracy)
    losses = [e["embedding_loss"] for e in trainer.state.log_history if "embedding_loss" in e]
    assert len(losses) >= 2 and losses[-1] < losses[0]
    assert trainer.evaluate({"text": eval_texts, "label": eval_labels})["accuracy"] == accuracy
    student.save_pretrained(tmp_path / "student")
    card = (tmp_path / "student" / "README.md").read_text(encoding="utf-8")
    assert "Distilled from the teacher" in card and "setfit_lite version" in card


def test_distillation_errors(teacher: SetFitModel, tiny_body_path: str) -> None:
    student = SetFitModel.from_pretrained(tiny_body_path)
    untrained = DistillationTrainer(teacher_model=SetFitModel.from_pretrained(tiny_body_path), student_model=student,
                                    train_dataset={"text": ["a text", "another"]})
    with pytest.raises(ValueError, match="no fitted head"):  # at train(), before the student changes
        untrained.train()
    assert student.model_head is None
    with pytest.raises(TypeError, match="teacher_model"):
        DistillationTrainer(teacher_model="teacher", student_model=student)
    with pytest.raises(ValueError, match="train_dataset"):
        DistillationTrainer(teacher_model=teacher, student_model=student).train()
    from conftest import make_sentences

    texts, _ = make_sentences(12, seed=5)
    refused = DistillationTrainer(teacher_model=teacher, student_model=student, train_dataset={"text": texts},
                                  args=TrainingArguments(**FAST, backend_options={"no_such_option": 1}))
    with pytest.raises(TypeError, match="no_such_option"):  # the backend refuses it before training
        refused.train()
    assert student.labels is None and student.model_head is None  # the student as it was


def test_labels_and_output_folder_are_checked_before_the_teacher_encodes(teacher: SetFitModel, tiny_body_path: str,
                                                                        tmp_path, monkeypatch) -> None:
    def encode(*args: object, **kwargs: object) -> None:
        raise AssertionError("the teacher encoded before the checks")

    monkeypatch.setattr(teacher, "encode", encode)
    texts = {"text": ["a text", "another one"]}
    other = SetFitModel.from_pretrained(tiny_body_path, labels=["pos", "neg"])
    with pytest.raises(ValueError, match="the student's labels \\['pos', 'neg'\\] lack the teacher's"):
        DistillationTrainer(teacher_model=teacher, student_model=other, train_dataset=texts).train()
    student = SetFitModel.from_pretrained(tiny_body_path)
    unknown = {"text": ["x", "y"], "label": ["neither", "nor"]}
    with pytest.raises(ValueError, match="neither"):
        DistillationTrainer(teacher_model=teacher, student_model=student, train_dataset=texts,
                            eval_dataset=unknown).train()
    teacher_folder = tmp_path / "teacher"
    teacher.save_pretrained(teacher_folder)
    saved = SetFitModel.from_pretrained(teacher_folder)
    monkeypatch.setattr(saved, "encode", encode)
    args = TrainingArguments(**FAST, output_dir=str(teacher_folder / "out"), save_strategy="steps", save_steps=1)
    with pytest.raises(ValueError, match="teacher|inside|read"):
        DistillationTrainer(teacher_model=saved, student_model=student, args=args, train_dataset=texts).train()
    assert student.model_head is None


def test_the_teacher_may_be_trained_after_the_distillation_trainer_is_built(tiny_body_path: str) -> None:
    """setfit's order: both trainers built first, the teacher trained, then the student distilled."""
    from conftest import make_sentences

    texts, labels = make_sentences(12, seed=0)
    teacher = SetFitModel.from_pretrained(tiny_body_path)
    student = SetFitModel.from_pretrained(tiny_body_path)
    teacher_trainer = Trainer(model=teacher, args=TrainingArguments(**FAST, seed=7),
                              train_dataset={"text": texts, "label": labels})
    distiller = DistillationTrainer(teacher_model=teacher, student_model=student,
                                    args=TrainingArguments(**FAST, seed=3), train_dataset={"text": texts})
    teacher_trainer.train()
    distiller.train()
    assert student.labels == teacher.labels and student.model_head is not None


def test_student_learns_the_teachers_embeddings(teacher: SetFitModel, tmp_path) -> None:
    """``target="embeddings"``: a student of the teacher's width (a shrunk copy) moves its embeddings towards the
    teacher's (mean squared distance on unseen texts falls) and predicts as the teacher does."""
    from conftest import make_sentences

    unlabelled, _ = make_sentences(20, seed=5)
    eval_texts, _ = make_sentences(10, seed=1)
    student = shrink_body(teacher, 1, keep="first")
    target = teacher.encode(eval_texts)
    before = float(np.mean(np.sum((student.encode(eval_texts) - target) ** 2, axis=1)))
    args = TrainingArguments(**{**FAST, "num_epochs": (10, 4), "body_learning_rate": 1e-3}, seed=3)
    trainer = DistillationTrainer(teacher_model=teacher, student_model=student, target="embeddings", args=args,
                                  train_dataset={"text": unlabelled})
    trainer.train()
    after = float(np.mean(np.sum((student.encode(eval_texts) - target) ** 2, axis=1)))
    assert after < 0.5 * before, (before, after)
    agreement = np.mean(np.array(student.predict(eval_texts)) == np.array(teacher.predict(eval_texts)))
    assert agreement >= 0.8, agreement


def test_embedding_target_needs_the_teachers_width(teacher: SetFitModel, tmp_path) -> None:
    from conftest import build_tiny_body

    wide = SetFitModel.from_pretrained(str(build_tiny_body(tmp_path, hidden_size=48)))
    with pytest.raises(ValueError, match="target must be one of"):
        DistillationTrainer(teacher_model=teacher, student_model=wide, target="logits")
    trainer = DistillationTrainer(teacher_model=teacher, student_model=wide, target="embeddings",
                                  train_dataset={"text": ["a good film", "a bad film"]})
    encoded = []
    teacher_encode = teacher.encode
    teacher.encode = lambda *a, **k: encoded.append(1) or teacher_encode(*a, **k)  # type: ignore[method-assign]
    try:
        with pytest.raises(ValueError, match=r"teacher's size \(32\), got 48"):
            trainer.train()
    finally:
        del teacher.encode
    assert not encoded and wide.model_head is None  # refused before any work


def test_a_trial_with_model_init_keeps_the_teachers_labels(teacher: SetFitModel, tiny_body_path: str) -> None:
    """train(trial=...) with model_init builds a fresh student: it gets the teacher's labels in the teacher's
    order (they came back sorted from the texts' predicted labels)."""
    from conftest import make_sentences

    unlabelled, _ = make_sentences(12, seed=5)
    ordered = SetFitModel.from_pretrained(tiny_body_path, labels=list(reversed(teacher.labels)))
    Trainer(model=ordered, args=TrainingArguments(num_epochs=1, max_steps=2, show_progress_bar=False),
            train_dataset={"text": unlabelled, "label": teacher.predict(unlabelled)}).train()
    trainer = DistillationTrainer(teacher_model=ordered, model_init=lambda: SetFitModel.from_pretrained(tiny_body_path),
                                  args=TrainingArguments(num_epochs=1, max_steps=2, show_progress_bar=False),
                                  train_dataset={"text": unlabelled})
    trainer.train(trial={"body_learning_rate": 1e-2})
    assert trainer.model.labels == ordered.labels != sorted(ordered.labels)


def test_calibration_is_refused_before_the_teacher_encodes(teacher: SetFitModel, tiny_body_path: str,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    student = SetFitModel.from_pretrained(tiny_body_path)
    trainer = DistillationTrainer(teacher_model=teacher, student_model=student,
                                  args=TrainingArguments(**FAST, calibration="temperature"),
                                  train_dataset={"text": ["a good film", "a dull film"]})
    monkeypatch.setattr(teacher, "encode", lambda *a, **k: pytest.fail("the teacher encoded before the check"))
    with pytest.raises(ValueError, match="DistillationTrainer does not calibrate"):
        trainer.train()


def test_shrinking_a_body_with_layer_types_keeps_its_config_consistent(tmp_path) -> None:
    transformers = pytest.importorskip("transformers")
    from sentence_transformers import SentenceTransformer, models

    if not hasattr(transformers, "ModernBertConfig"):
        pytest.skip("this transformers has no ModernBERT")
    config = transformers.ModernBertConfig(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=4,
                                           num_attention_heads=2, max_position_embeddings=64,
                                           global_attn_every_n_layers=2, pad_token_id=1, eos_token_id=0,
                                           bos_token_id=0, cls_token_id=0, sep_token_id=0)
    folder = tmp_path / "modernbert"
    transformers.ModernBertModel(config).save_pretrained(folder / "hf")
    from tokenizers import Tokenizer, pre_tokenizers
    from tokenizers import models as token_models

    tokenizer = Tokenizer(token_models.WordLevel({"[UNK]": 0, "[PAD]": 1, "a": 2, "film": 3}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    transformers.PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="[UNK]", pad_token="[PAD]"
                                         ).save_pretrained(folder / "hf")
    word = models.Transformer(str(folder / "hf"))
    body = SentenceTransformer(modules=[word, models.Pooling(word.get_word_embedding_dimension())], device="cpu")
    kinds = list(body[0].auto_model.config.layer_types)
    student = shrink_body(SetFitModel(body), 2, keep="first")
    assert student.model_body[0].auto_model.config.layer_types == kinds[:2]
    student.model_body.save(str(tmp_path / "student"))  # refused a config of 2 layers and 4 layer types
    assert SentenceTransformer(str(tmp_path / "student"), device="cpu")[0].auto_model.config.num_hidden_layers == 2
