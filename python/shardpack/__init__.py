"""shardpack: stream sharded image datasets into training loops.

The reader runs in this process: C++ threads read, shuffle and transform the
samples into a ring of batch slots, and each batch arrives as numpy arrays or
torch tensors that view its slot. docs/python.md is the guide.

shardpack.DataLoader (python/shardpack/_dataloader.py) is loaded on first use:
`import shardpack` imports neither torch nor numpy.
"""
from shardpack._shardpack import (DataLossError, Dataset, Error, Reader, Writer, _BatchRef,
                                  __version__, contact_sheet)

# The classes are defined by the compiled module; they are used from here.
for _type in (DataLossError, Dataset, Error, Reader, Writer, _BatchRef):
    _type.__module__ = "shardpack"
del _type

__all__ = ["DataLoader", "DataLossError", "Dataset", "Error", "Reader", "Writer", "contact_sheet",
           "__version__"]


def __getattr__(name):
    if name == "DataLoader":
        from shardpack._dataloader import DataLoader
        DataLoader.__module__ = "shardpack"
        globals()["DataLoader"] = DataLoader
        return DataLoader
    raise AttributeError(f"module 'shardpack' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | {"DataLoader"})
