"""shardpack.lightning: Lightning checkpoints that resume a shardpack.DataLoader exactly.

    from shardpack.lightning import ExactResume
    trainer = L.Trainer(callbacks=[OnExceptionCheckpoint("ckpt"), ExactResume()], ...)

Lightning counts a training batch done once its step has run (the fit loop's
batch progress: `processed`), and on a resume it runs again the step of a batch
it had fetched but not processed. A DataLoader's state_dict() is the position
after the batch it yielded last, which is right for every checkpoint written
between steps (ModelCheckpoint, an epoch's end, validation) and one batch ahead
for a checkpoint written while a step runs: OnExceptionCheckpoint after Ctrl-C,
trainer.save_checkpoint inside training_step. ExactResume's on_save_checkpoint
replaces, in such a checkpoint, each shardpack.DataLoader's state by the
position before its last batch (DataLoader.state_dict(last_batch_done=False)),
so the resumed fit trains on the batches an uninterrupted one would have.

This module imports lightning; `import shardpack` does not import it.
"""
from lightning.fabric.utilities.types import _Stateful
from lightning.pytorch.callbacks import Callback

from shardpack._dataloader import DataLoader

__all__ = ["ExactResume"]


class ExactResume(Callback):
    """A callback: a checkpoint written while a training step runs holds each
    shardpack.DataLoader's position before the batch of that step. Checkpoints
    written between steps are left as they are. No state of its own."""

    def on_save_checkpoint(self, trainer, pl_module, checkpoint):
        fit_loop = trainer.fit_loop
        states = checkpoint.get("loops", {}).get("fit_loop", {}).get(
            "state_dict", {}).get("combined_loader")
        combined = fit_loop._combined_loader
        if not states or combined is None or not _step_unfinished(fit_loop):
            return
        # Lightning saves the states of the loaders of combined.flattened that are
        # _Stateful, in that order (CombinedLoader._state_dicts).
        stateful = [loader for loader in combined.flattened if isinstance(loader, _Stateful)]
        if len(stateful) != len(states):
            raise RuntimeError(f"shardpack.lightning.ExactResume: the checkpoint holds "
                               f"{len(states)} loader states for {len(stateful)} stateful "
                               f"train loaders")
        for i, loader in enumerate(stateful):
            if isinstance(loader, DataLoader):
                states[i] = loader.state_dict(last_batch_done=False)


def _step_unfinished(fit_loop):
    """Whether the batch the train loaders yielded last has not been processed: Lightning
    fetched it (its data fetcher counts it; the loader has len(), so nothing is fetched
    ahead) and its training step has not returned, so a resume runs that step again."""
    processed = fit_loop.epoch_loop.batch_progress.current.processed
    fetcher = fit_loop._data_fetcher
    fetched = fetcher.fetched if fetcher is not None else \
        fit_loop.epoch_loop.batch_progress.current.ready
    return fetched > processed
