"""The head phase reaches the callbacks: the torch head's epochs as events (stoppable by a callback, early stopping
on the eval metric with the best epoch restored) and the scikit-learn head's fit as one log."""

from __future__ import annotations

import re
import warnings

import pytest
import torch

from setfit_lite import SetFitModel, Trainer, TrainingArguments
from setfit_lite.training.callbacks import TrainerCallback

# body_learning_rate 0 for the embedding phase skips it: the head phase alone, on the body as loaded
HEAD_ONLY = {"body_learning_rate": (0.0, 1e-5), "show_progress_bar": False, "backend": "cpu", "seed": 3}


class Recorder(TrainerCallback):
    """Records (event, phase, epoch, step) of every epoch event, and the logs and metrics of the head phase."""

    def __init__(self, stop_after: int | None = None) -> None:
        self.events, self.logs, self.metrics, self.stop_after = [], [], [], stop_after

    def _record(self, name, state):
        self.events.append((name, getattr(state, "phase", None), state.epoch, state.global_step))

    def on_epoch_begin(self, args, state, control, **kw):
        self._record("begin", state)

    def on_epoch_end(self, args, state, control, **kw):
        self._record("end", state)
        if getattr(state, "phase", None) == "head" and self.stop_after is not None and state.epoch >= self.stop_after:
            control.should_training_stop = True

    def on_log(self, args, state, control, logs=None, **kw):
        if getattr(state, "phase", None) == "head":
            self.logs.append(dict(logs))

    def on_evaluate(self, args, state, control, metrics=None, **kw):
        if getattr(state, "phase", None) == "head":
            self.metrics.append(dict(metrics))


def train(body: str, data: dict, eval_data: dict | None = None, callbacks=(), metric="accuracy",
          differentiable: bool = True, **kwargs) -> Trainer:
    model = SetFitModel.from_pretrained(body, use_differentiable_head=differentiable)
    args = TrainingArguments(**{**HEAD_ONLY, **kwargs})
    trainer = Trainer(model=model, args=args, train_dataset=data, eval_dataset=eval_data,
                      callbacks=list(callbacks), metric=metric)
    trainer.train()
    return trainer


def head_weights(trainer: Trainer) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in trainer.model.model_head.state_dict().items()}


def same_weights(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def scripted(scores: list[float]):
    """A callable metric that returns ``scores`` in turn (the head's evaluation after each epoch)."""
    it = iter(scores)
    return lambda y_pred, y_true: next(it)


@pytest.mark.parametrize("epochs, batch_size", [(3, 4), (4, 8)])
def test_torch_head_epochs_reach_callbacks_in_order(tiny_body_path, toy_data, epochs, batch_size):
    rec = Recorder()
    trainer = train(tiny_body_path, toy_data, callbacks=[rec], num_epochs=(1, epochs), batch_size=(16, batch_size))
    steps = -(-len(toy_data["text"]) // batch_size)  # batches per head epoch
    head = [e for e in rec.events if e[1] == "head"]
    expected = []
    for epoch in range(epochs):
        expected += [("begin", "head", epoch, epoch * steps), ("end", "head", epoch + 1, (epoch + 1) * steps)]
    assert head == expected
    assert [sorted(log) for log in rec.logs] == [["head_loss"]] * epochs
    assert trainer.state.max_steps == epochs * steps
    assert [e["step"] for e in trainer.state.log_history if "head_loss" in e] == [(i + 1) * steps
                                                                                   for i in range(epochs)]


@pytest.mark.parametrize("stop_after, epochs", [(1, 4), (2, 5), (3, 3)])
def test_callback_stops_the_head_after_an_epoch(tiny_body_path, toy_data, stop_after, epochs):
    rec = Recorder(stop_after=stop_after)
    stopped = train(tiny_body_path, toy_data, callbacks=[rec], num_epochs=(1, epochs))
    direct = train(tiny_body_path, toy_data, num_epochs=(1, stop_after))
    assert [e[2] for e in rec.events if e[:2] == ("end", "head")] == list(range(1, stop_after + 1))
    assert same_weights(head_weights(stopped), head_weights(direct))
    assert not stopped.control.should_training_stop  # reset for the next train()


@pytest.mark.parametrize("scores, patience, load_best, trained, kept", [
    ([0.5, 0.7, 0.6, 0.65, 0.9, 0.9], 2, True, 4, 2),   # two epochs without improving: stop, restore epoch 2
    ([0.5, 0.7, 0.6, 0.65, 0.9, 0.9], 2, False, 4, 4),  # ... the last epoch's weights without load_best
    ([0.5, 0.7, 0.6, 0.8, 0.9, 0.95], 2, True, 6, 6),   # improving again in time: every epoch
    ([0.9, 0.1, 0.2, 0.3, 0.4, 0.5], 3, True, 4, 1),    # the first epoch is the best
    ([0.5, 0.7, 0.6, 0.65, 0.9, 0.9], None, True, 6, 5),  # no patience: every epoch, the best restored
])
def test_head_early_stopping_restores_the_best_epoch(tiny_body_path, toy_data, toy_eval, scores, patience,
                                                     load_best, trained, kept):
    rec = Recorder()
    stopped = train(tiny_body_path, toy_data, toy_eval, callbacks=[rec], metric=scripted(scores),
                    num_epochs=(1, 6), eval_strategy="epoch", early_stopping_patience=patience,
                    load_best_model_at_end=load_best)
    direct = train(tiny_body_path, toy_data, num_epochs=(1, kept))
    assert [m["eval_metric"] for m in rec.metrics] == scores[:trained]
    assert len([e for e in rec.events if e[:2] == ("end", "head")]) == trained
    assert same_weights(head_weights(stopped), head_weights(direct))


def test_head_early_stopping_on_patience_alone_and_not_without_eval_set(tiny_body_path, toy_data, toy_eval):
    scores = [0.5, 0.4, 0.3, 0.9, 0.9]
    rec = Recorder()  # early_stopping_patience with an eval set evaluates the head even with eval_strategy "no"
    stopped = train(tiny_body_path, toy_data, toy_eval, callbacks=[rec], metric=scripted(scores),
                    num_epochs=(1, 5), early_stopping_patience=2)
    assert [m["eval_metric"] for m in rec.metrics] == scores[:3]
    assert same_weights(head_weights(stopped), head_weights(train(tiny_body_path, toy_data, num_epochs=(1, 3))))
    rec = Recorder()  # no eval set: every epoch, no error (a warning says the patience stops nothing)
    with pytest.warns(UserWarning, match="early_stopping_patience=1 stops nothing: no eval_dataset"):
        full = train(tiny_body_path, toy_data, callbacks=[rec], num_epochs=(1, 5), early_stopping_patience=1)
    assert rec.metrics == [] and len([e for e in rec.events if e[:2] == ("end", "head")]) == 5
    assert same_weights(head_weights(full), head_weights(train(tiny_body_path, toy_data, num_epochs=(1, 5))))


@pytest.mark.parametrize("max_iter, converged", [(1000, True), (1, False)])
def test_logistic_regression_head_logs_its_fit(tiny_body_path, toy_data, max_iter, converged):
    rec = Recorder()
    model = SetFitModel.from_pretrained(tiny_body_path, head_params={"max_iter": max_iter})
    trainer = Trainer(model=model, args=TrainingArguments(**HEAD_ONLY), train_dataset=toy_data, callbacks=[rec])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scikit-learn's ConvergenceWarning with max_iter=1
        trainer.train()
    n_iter = int(model.model_head.estimator.n_iter_.max())
    assert rec.logs == [{"head_n_iter": n_iter, "head_converged": converged}]
    assert (n_iter < max_iter) is converged
    assert [e for e in rec.events if e[1] == "head"] == []  # no epochs to report
    assert trainer.state.log_history[-1] == {"head_n_iter": n_iter, "head_converged": converged, "step": 0}


@pytest.mark.parametrize("scores, patience, trained, kept", [
    ([0.5, 0.7, 0.6, 0.65], 2, 4, 2),
    ([0.9, 0.1, 0.2, 0.3], 1, 2, 1),
])
def test_end_to_end_head_phase_reports_stops_early_and_restores(tiny_body_path, toy_data, toy_eval, monkeypatch,
                                                                scores, patience, trained, kept):
    from setfit_lite.training.interim_eval import HeadEvaluator

    snapshots = []  # body and head weights at each evaluation of the end-to-end phase
    predict = HeadEvaluator.predict

    def recording(self, session, tokens):
        snapshots.append({k: v.clone() for k, v in session.model.model_body.state_dict().items()}
                         | {f"head.{k}": v.clone() for k, v in self.head.state_dict().items()})
        return predict(self, session, tokens)

    monkeypatch.setattr(HeadEvaluator, "predict", recording)
    rec = Recorder()
    trainer = train(tiny_body_path, toy_data, toy_eval, callbacks=[rec], metric=scripted(scores), end_to_end=True,
                    num_epochs=(1, 4), batch_size=(16, 8), eval_strategy="epoch", early_stopping_patience=patience,
                    load_best_model_at_end=True)
    assert [e[2] for e in rec.events if e[:2] == ("end", "head")] == list(range(1, trained + 1))
    assert [m["eval_metric"] for m in rec.metrics] == scores[:trained]
    final = {k: v for k, v in trainer.model.model_body.state_dict().items()} \
        | {f"head.{k}": v for k, v in trainer.model.model_head.state_dict().items()}
    assert same_weights(final, snapshots[kept - 1])
    assert not same_weights(snapshots[kept - 1], snapshots[-1])  # restored: not the last epoch's weights



@pytest.mark.parametrize("differentiable, settings, with_eval, words", [
    (True, {"body_learning_rate": (1e-2, 1e-5)}, True,
     "early_stopping_patience=2 applies to the torch head's epochs only: the body is not evaluated with "
     "eval_strategy='no'; set eval_strategy='epoch' or 'steps'"),
    (False, {"body_learning_rate": (1e-2, 1e-5)}, True,
     "early_stopping_patience=2 stops nothing: the body is not evaluated with eval_strategy='no'"),
    (True, {"body_learning_rate": (1e-2, 1e-5), "end_to_end": True}, True,
     "early_stopping_patience=2 stops nothing: the body is not evaluated with eval_strategy='no'"),
    (True, {}, False, "early_stopping_patience=2 stops nothing: no eval_dataset"),
])
def test_patience_that_will_not_act_says_so_at_train(tiny_body_path, toy_data, toy_eval, differentiable, settings,
                                                     with_eval, words):
    """early_stopping_patience where nothing, or only the torch head's epochs (the documented head-only
    behaviour, kept), is evaluated: a UserWarning saying what it will not act on (it said nothing)."""
    with pytest.warns(UserWarning, match=re.escape(words)):
        train(tiny_body_path, toy_data, toy_eval if with_eval else None, differentiable=differentiable,
              num_epochs=(1, 2), early_stopping_patience=2, **settings)


@pytest.mark.parametrize("differentiable, settings", [
    (True, {}),  # the body is not trained (HEAD_ONLY): the patience acts on all that trains, the head's epochs
    (False, {"body_learning_rate": (1e-2, 1e-5), "eval_strategy": "epoch"}),
])
def test_patience_that_acts_on_what_trains_is_silent(tiny_body_path, toy_data, toy_eval, differentiable, settings):
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="early_stopping_patience")
        train(tiny_body_path, toy_data, toy_eval, differentiable=differentiable, num_epochs=(1, 2),
              early_stopping_patience=2, **settings)
