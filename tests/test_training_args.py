"""TrainingArguments: setfit names, tuple semantics, clear errors."""

from __future__ import annotations

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


@pytest.mark.parametrize("kwargs, match", [
    ({"sampling_strategy": "random"}, "sampling_strategy"),
    ({"batch_size": 0}, "batch_size"),
    ({"loss": "Nope"}, "loss"),
    ({"eval_strategy": "sometimes"}, "eval_strategy"),
    ({"load_best_model_at_end": True}, "load_best_model_at_end"),
    ({"warmup_proportion": 2.0}, "warmup_proportion"),
])
def test_bad_values(kwargs, match):
    with pytest.raises(ValueError, match=match):
        TrainingArguments(**kwargs)


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
    assert args.steps_per_epoch_floor(50, 400, 16) == 128
    assert TrainingArguments(min_steps_per_epoch=3).steps_per_epoch_floor(6) == 3
    for bad in (0, -1, True, 1.5, "8"):
        with pytest.raises(ValueError, match="min_steps_per_epoch"):
            TrainingArguments(min_steps_per_epoch=bad)


def test_word_embeddings_frozen_by_default_only_for_large_vocabularies() -> None:
    import torch

    from setfit_lite.trainer import LARGE_VOCABULARY, _freeze_word_embeddings

    def body(rows: int) -> torch.nn.Module:
        module = torch.nn.Module()
        module.word_embeddings = torch.nn.Embedding(rows, 2)
        module.dense = torch.nn.Linear(2, 2)
        return module

    small, large = body(1000), body(LARGE_VOCABULARY + 1)
    for module, expected in ((small, True), (large, False)):
        _freeze_word_embeddings(module, None)
        assert module.word_embeddings.weight.requires_grad is expected
        assert module.dense.weight.requires_grad
    _freeze_word_embeddings(small, True)
    assert not small.word_embeddings.weight.requires_grad
    _freeze_word_embeddings(large, False)  # what train() does after the body phase
    assert large.word_embeddings.weight.requires_grad


def test_body_learning_rate_default_depends_on_objective() -> None:
    assert TrainingArguments().body_embedding_learning_rate == 1e-4
    assert TrainingArguments(objective="pairs").body_embedding_learning_rate == 2e-5
    assert TrainingArguments().body_classifier_learning_rate == 1e-5
    assert TrainingArguments(body_learning_rate=3e-5).body_embedding_learning_rate == 3e-5
