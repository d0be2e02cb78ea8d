"""shardpack: stream sharded image datasets into training loops.

The reader runs in this process: C++ threads read, shuffle and transform the
samples into a ring of batch slots, and each batch arrives as numpy arrays or
torch tensors that view its slot. docs/python.md is the guide.
"""
from shardpack._shardpack import (DataLossError, Error, Reader, _BatchRef, __version__,
                                  contact_sheet)

# The classes are defined by the compiled module; they are used from here.
for _type in (DataLossError, Error, Reader, _BatchRef):
    _type.__module__ = "shardpack"
del _type

__all__ = ["DataLossError", "Error", "Reader", "contact_sheet", "__version__"]
