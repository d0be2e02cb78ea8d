"""shardpack.DataLoader: a shardpack.Reader where code expects a torch DataLoader.

The loader wraps one Reader(output="torch"). What it adds is the bookkeeping
that loops written for torch.utils.data.DataLoader (and the frameworks that
drive them) take for granted:

- iter(loader) starts an epoch and a new iter() the next one, as a DataLoader
  with shuffle=True draws a new order: the loader keeps the epoch number.
  iter() only moves on once a batch of the current epoch was delivered, so
  frameworks that call iter() more than once before the first batch
  (Lightning does) still start at epoch 0, and a resumed epoch is not skipped.
- state_dict() / load_state_dict() follow torchdata's StatefulDataLoader: the
  state is the position after the last batch yielded; after load_state_dict
  the next iter() yields the rest of that epoch, then epochs go on as if
  uninterrupted. The Reader does the work (also the elastic resume on another
  number of ranks); a state saved after an epoch's last batch resumes at the
  next epoch, never with an empty one. state_dict(last_batch_done=False) is
  the position before the last batch yielded, for a framework whose step on
  that batch did not finish (shardpack.lightning.ExactResume): the loader
  keeps the reader's state from before each batch it yields.
- labels (and, with indices=True, nothing else) follow the images to their
  device: with device="cuda" the Reader's labels are on the CPU, the loader
  copies them through a pinned buffer torch owns, without blocking. A batch of
  fields (a dict) is passed on whole, its tensors following the images the
  same way (texts and parsed JSON stay as they are).

Nothing here imports torch at import time: `import shardpack` stays free of it.
"""
import os

from shardpack._shardpack import Reader

__all__ = ["DataLoader"]


class DataLoader:
    """DataLoader(path, **reader_keywords): batches of a shardpack dataset, an epoch per iter().

    `path` is shardpack.Reader's: a dataset, or a mixture's list of sources
    ({"path": ..., "weight" | "repeat" | "choose": ...}, with the keywords
    epoch_samples and label_space; docs/python.md, Mixtures).
    `reader_keywords` are shardpack.Reader's (docs/python.md): batch_size,
    seed, rank, world_size, transform, dtype, layout, mean, std, device, ...;
    output is "torch" (the only choice). Items are (images, labels), or
    (images, labels, indices) with indices=True; labels are on the images'
    device, indices on the CPU. A dataset of fields gives the Reader's dicts
    (docs/python.md, "Fields"), their tensors on the images' device.

    Like torch.utils.data.DataLoader: iter() (an epoch, a new one each time),
    len() (batches per epoch on this rank), batch_size, set_epoch(e); like
    torchdata's StatefulDataLoader: state_dict(), load_state_dict(state).
    The loader is not thread-safe; an iterator replaced by a later iter()
    raises RuntimeError.
    """

    def __init__(self, path, **reader_keywords):
        output = reader_keywords.pop("output", "torch")
        if output != "torch":
            raise ValueError(f"shardpack.DataLoader gives torch tensors: output={output!r} "
                             f"is not allowed (use shardpack.Reader for numpy arrays)")
        self._path = os.fspath(path) if isinstance(path, os.PathLike) else path
        self.reader = Reader(path, output="torch", **reader_keywords)
        self._epoch = self.reader.state_dict()["epoch"]
        self._delivered = False  # a batch of self._epoch was yielded since it was positioned
        self._generation = 0     # of the newest iterator
        self._finished = False   # the newest iterator reached the end of its epoch
        self._before = None      # the reader's state before the batch last yielded, if any

    # ---- what a torch DataLoader has --------------------------------------

    @property
    def batch_size(self):
        return self.reader.batch_size

    @property
    def sampler(self):
        """An object whose set_epoch(e) is this loader's: the DistributedSampler idiom
        `loader.sampler.set_epoch(e)` works, and Lightning tells the loader its epoch so."""
        return _EpochSampler(self)

    batch_sampler = None  # as a DataLoader given a sampler; Lightning looks for both

    @property
    def epoch(self):
        """The epoch that the current (or the next) iteration runs."""
        return self._epoch

    def __len__(self):
        """Batches of the epoch being run on this rank: len(reader); for an epoch resumed
        elastically, those the earlier job delivered in it plus the rest this one delivers,
        so that a framework counting batches from the checkpoint ends the epoch in step."""
        earlier = self.reader.state_dict()["earlier"]
        if not earlier:
            return len(self.reader)
        return sum(segment["batches"] for segment in earlier) + self.reader.batches_in_epoch

    def __iter__(self):
        if self._delivered or self._at_end_of_epoch():
            self._start_epoch(self._epoch + 1)
        self._generation += 1
        self._finished = False
        return _EpochIterator(self, self._generation)

    def set_epoch(self, epoch):
        """The next iter() runs epoch `epoch` from its first batch. Nothing changes when the
        loader is already there, or holds a loaded state of that epoch that no batch has
        been taken from yet (so a framework's set_epoch after load_state_dict keeps it)."""
        if epoch == self._epoch and not self._delivered:
            return
        self._start_epoch(epoch)

    # ---- StatefulDataLoader ----------------------------------------------

    def state_dict(self, last_batch_done=True):
        """The position after the last batch yielded: {"reader": Reader.state_dict()}.
        Plain ints, strings and lists (torch.save and json take it); the same on every rank.

        last_batch_done=False: the position before the last batch yielded, so that a
        loader given this state yields that batch again first; for a checkpoint written
        while the step on that batch runs (shardpack.lightning.ExactResume decides from
        Lightning's counts). The same as state_dict() when no batch was yielded since the
        loader was last positioned (a new epoch, set_epoch, load_state_dict)."""
        if not last_batch_done and self._before is not None:
            return {"reader": self._before}
        return {"reader": self.reader.state_dict()}

    def load_state_dict(self, state_dict):
        """The next iter() resumes after the last batch that state_dict's loader yielded:
        the rest of its epoch, exactly (same world size and batch size) or elastically
        (docs/python.md, Elastic resume). {} (torchdata's "no state") changes nothing.
        Every batch of this loader must be freed first (zero-copy views, as for the Reader)."""
        if state_dict == {}:
            return
        if not isinstance(state_dict, dict) or "reader" not in state_dict:
            raise ValueError(f"shardpack.DataLoader.load_state_dict: the state must be a dict "
                             f"with 'reader' (what state_dict() returns), not "
                             f"{_shown(state_dict)}")
        self.reader.load_state_dict(state_dict["reader"])
        self._epoch = self.reader.state_dict()["epoch"]
        self._delivered = False
        self._before = None
        self._generation += 1  # an iterator from before the load is stale
        self._finished = False

    # ---- internals ---------------------------------------------------------

    def _at_end_of_epoch(self):
        state = self.reader.state_dict()
        return (state["epoch"] == self._epoch and
                state["batch"] == self.reader.batches_in_epoch)

    def _start_epoch(self, epoch):
        # A reader at the end of its epoch goes on to the next one by
        # reporting the end (no restore, so batches still held are fine);
        # set_epoch is then a no-op when that is the epoch wanted.
        if self._at_end_of_epoch():
            for _ in self.reader:
                raise AssertionError("a reader at the end of its epoch gave a batch")
        self.reader.set_epoch(epoch)
        self._epoch = epoch
        self._delivered = False
        self._before = None

    def _next(self, generation):
        if generation != self._generation:
            raise RuntimeError("shardpack.DataLoader: this iterator was replaced by a later "
                               "iter(loader) or load_state_dict(); use the newest iterator")
        if self._finished:
            raise StopIteration
        # The position before this batch; state_dict(last_batch_done=False) gives it
        # once the batch is handed out. One small dict a batch, nothing per record.
        before = self.reader.state_dict()
        try:
            batch = next(self.reader)
        except StopIteration:
            self._finished = True
            raise
        self._before = before
        self._delivered = True
        if isinstance(batch, dict):
            return self._fields_to_device(batch)
        images, labels = batch[0], batch[1]
        if images.device != labels.device:
            labels = self._to_device(labels, images.device)
        return (images, labels) + tuple(batch[2:])

    def _fields_to_device(self, batch):
        # A batch of fields: with device="cuda" the transformed images are on the
        # GPU, every other tensor follows them there (texts and parsed JSON stay,
        # and the indices, as in a tuple item).
        device = next((v.device for v in batch.values()
                       if hasattr(v, "device") and v.device.type != "cpu"), None)
        if device is None:
            return batch

        def follow(value):
            if hasattr(value, "device"):
                return value if value.device == device else self._to_device(value, device)
            if isinstance(value, tuple):
                return tuple(follow(v) for v in value)
            if isinstance(value, dict):
                return {k: follow(v) for k, v in value.items()}
            if isinstance(value, list) and value and all(v is None or hasattr(v, "device")
                                                         for v in value):
                return [None if v is None else follow(v) for v in value]
            return value

        return {name: value if name == "__index__" else follow(value)
                for name, value in batch.items()}

    def _to_device(self, labels, device):
        # The Reader's labels view its ring slot, which the reader refills once
        # they are freed: an asynchronous copy straight from there could read
        # the next batch's labels. torch's own pinned memory is kept until the
        # copy is done (its host allocator records the stream), so the labels
        # go through that, and the copy does not block this thread.
        import torch
        staging = torch.empty(labels.shape, dtype=labels.dtype, pin_memory=True)
        staging.copy_(labels)
        return staging.to(device, non_blocking=True)

    def __repr__(self):
        return (f"shardpack.DataLoader({self._path!r}, batch_size={self.batch_size}, "
                f"epoch={self._epoch}, batches={len(self)})")


class _EpochIterator:
    """One epoch of a DataLoader: what iter(loader) returns."""
    __slots__ = ("_loader", "_generation")

    def __init__(self, loader, generation):
        self._loader = loader
        self._generation = generation

    def __iter__(self):
        return self

    def __next__(self):
        return self._loader._next(self._generation)

    def __len__(self):
        return len(self._loader)


class _EpochSampler:
    """What DataLoader.sampler returns: set_epoch, as on a DistributedSampler. The reader
    does the sampling; this only forwards the epoch."""
    __slots__ = ("_loader",)

    def __init__(self, loader):
        self._loader = loader

    def set_epoch(self, epoch):
        self._loader.set_epoch(epoch)

    def __repr__(self):
        return f"<set_epoch of {self._loader!r}>"


def _shown(value):
    text = repr(value)
    return text if len(text) <= 64 else f"{text[:64]}... ({len(text)} characters)"
